//! The fields a skill is indexed under.
//!
//! Every field keeps its own term frequencies and length so that rankings can weigh them
//! apart. [`Field::Seed`] is the seed plugin's single document (`name: description`,
//! triggers, tags and the CJK runs of the body's start) kept as a field of its own, so the
//! seed's ranking is reproduced exactly, lengths included.

use serde::{Deserialize, Serialize};

/// A field of an indexed skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u8)]
pub enum Field {
    /// The skill's name.
    Name = 0,
    /// The description.
    Description = 1,
    /// Triggers and tags.
    Keywords = 2,
    /// The category path.
    Category = 3,
    /// The start of the Markdown body.
    Body = 4,
    /// The seed plugin's whole document.
    Seed = 5,
}

/// How many fields there are.
pub const FIELD_COUNT: usize = 6;

/// Per field: (term frequency, field length in terms).
pub type FieldStats = [(u32, u32); FIELD_COUNT];

/// The fields a term occurs in (a frequency above 0), as a bit mask: bit `f` for field `f`.
/// The postings and the forward index both store it.
pub fn mask(stats: &FieldStats) -> u32 {
    stats
        .iter()
        .enumerate()
        .filter(|(_, (tf, _))| *tf > 0)
        .fold(0, |m, (f, _)| m | 1 << f)
}

impl Field {
    /// Every field, in storage order.
    pub const ALL: [Field; FIELD_COUNT] = [
        Field::Name,
        Field::Description,
        Field::Keywords,
        Field::Category,
        Field::Body,
        Field::Seed,
    ];

    /// The field's name as shown by `explain`.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Description => "description",
            Field::Keywords => "keywords",
            Field::Category => "category",
            Field::Body => "body",
            Field::Seed => "seed",
        }
    }
}
