//! The values stored in the index's tables, encoded with postcard.
//!
//! Changing any of these types changes the file format: bump
//! [`SCHEMA_VERSION`](super::SCHEMA_VERSION) and add a step to `migrations/`.

use crate::fields::FIELD_COUNT;
use crate::scan::FileStat;
use crate::skill::{Conditions, Origin};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a sync learnt about one SKILL.md path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// The stat when it was hashed.
    pub stat: FileStat,
    /// blake3 of the bytes.
    pub hash: [u8; 32],
    /// When (ns since the epoch) the sync that hashed it started; a file modified within
    /// [`RACY_WINDOW_NS`] of that could change again without its stat changing, so it is
    /// hashed again by later syncs until it is older.
    pub verified_at_ns: i64,
    /// What came of it.
    pub state: EntryState,
}

pub use crate::scan::RACY_WINDOW_NS;

impl ManifestEntry {
    /// Whether an unchanged stat is enough to trust that the bytes did not change.
    pub fn stat_is_trustworthy(&self) -> bool {
        self.stat.mtime_ns < self.verified_at_ns - RACY_WINDOW_NS
    }
}

/// The outcome of indexing one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryState {
    /// Indexed as this document.
    Indexed(u32),
    /// Skipped, for this reason.
    Skipped(String),
}

/// The part of a document record that syncs read for every document: enough to decide
/// which skills are offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocHead {
    /// The id to load it by: its name, or its folder path (`category/folder`) when
    /// `skill_view` would find the name ambiguous; `<plugin>:<name>` for a plugin's skill.
    pub id: String,
    /// The name Hermes lists: `str(frontmatter.get("name", folder))`, untrimmed.
    pub name: String,
    /// The folder name.
    pub dir_name: String,
    /// The folder's path from its root (`category/folder`), which `skill_view` accepts.
    pub folder: String,
    /// The category path.
    pub category: String,
    /// Precedence in a clash: 0 local, then external dirs 1…n in config order, plugins
    /// `u32::MAX`.
    pub rank: u32,
    /// The manifest key (path) of its SKILL.md.
    pub key: String,
    /// Its `platforms` list (empty: every OS).
    pub platforms: Vec<String>,
    /// Its `environments` items as Hermes normalises them (`str(e).lower().strip()`).
    pub environments: Vec<String>,
    /// Whether it has an `environments` list at all (`[""]` hides, no list does not).
    pub has_environments: bool,
    /// Its tool conditions (`metadata.hermes`), decided where the query runs.
    pub conditions: Conditions,
    /// Per field, its length in terms.
    pub lens: [u32; FIELD_COUNT],
    /// `None` when the skill is offered, else why not.
    pub inactive: Option<NotOffered>,
}

/// Why an indexed skill is not offered in any session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum NotOffered {
    /// Its `platforms` exclude the OS the sync decided for.
    OtherOs {
        /// That OS.
        os: String,
    },
    /// Its name or folder name is in `skills.disabled`.
    Disabled,
    /// Its `environments` hold only empty items, which no environment matches.
    NoEnvironment,
    /// Another skill of the same name always wins the clash (no session changes that).
    Shadowed {
        /// The manifest key of the skill that is offered instead.
        by: String,
    },
}

impl std::fmt::Display for NotOffered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotOffered::OtherOs { os } => write!(f, "its platforms exclude {os}"),
            NotOffered::Disabled => f.write_str("disabled in config.yaml (skills.disabled)"),
            NotOffered::NoEnvironment => f.write_str(
                "its environments list holds only empty items, which Hermes never matches",
            ),
            NotOffered::Shadowed { by } => write!(f, "shadowed by {by}, which has the same name"),
        }
    }
}

/// What a hit shows of a document record (`(DocHead, DocBody)`), read in place: its
/// strings borrow the stored bytes, and the fields a hit does not show are passed over
/// without being kept. Reading a hit's whole record took 10 % of a short query at 2.8k
/// skills, most of it allocating and freeing the strings and lists nobody reads. The layout
/// is the owned types' own: `records::tests` holds the two together.
#[derive(Debug, PartialEq, Eq, Deserialize)]
pub struct HitFields<'a> {
    /// [`DocHead::id`].
    pub id: &'a str,
    /// [`DocHead::name`].
    pub name: &'a str,
    /// [`DocHead::key`].
    pub key: &'a str,
    /// [`DocBody::category`].
    pub category: &'a str,
    /// [`DocBody::description`].
    pub description: &'a str,
}

impl<'a> HitFields<'a> {
    /// Reads a document record's bytes.
    pub fn read(bytes: &'a [u8]) -> Result<HitFields<'a>, postcard::Error> {
        let (head, body) = postcard::take_from_bytes::<HeadFields<'a>>(bytes)?;
        // The body's first two fields; the rest is left unread.
        let ((category, description), _) = postcard::take_from_bytes::<(&str, &str)>(body)?;
        Ok(HitFields {
            id: head.id,
            name: head.name,
            key: head.key,
            category,
            description,
        })
    }
}

/// [`DocHead`]'s layout, keeping the strings a hit shows and passing over the rest.
#[derive(Deserialize)]
struct HeadFields<'a> {
    id: &'a str,
    name: &'a str,
    // A string passed over is read as bytes: same layout, no UTF-8 check.
    _dir_name: &'a [u8],
    _folder: &'a [u8],
    _category: &'a [u8],
    _rank: u32,
    key: &'a str,
    _platforms: SkipStrings,
    _environments: SkipStrings,
    _has_environments: bool,
    _conditions: ConditionsFields,
    _lens: [u32; FIELD_COUNT],
    _inactive: Option<NotOfferedFields<'a>>,
}

/// [`Conditions`]' layout.
#[derive(Deserialize)]
struct ConditionsFields {
    _requires_toolsets: SkipStrings,
    _requires_tools: SkipStrings,
    _fallback_for_toolsets: SkipStrings,
    _fallback_for_tools: SkipStrings,
    _never_with_tools: bool,
    _session_platforms: SkipStrings,
}

/// [`NotOffered`]'s layout.
#[derive(Deserialize)]
enum NotOfferedFields<'a> {
    OtherOs { _os: &'a [u8] },
    Disabled,
    NoEnvironment,
    Shadowed { _by: &'a [u8] },
}

/// A list of strings, walked (as bytes: no UTF-8 check) and not collected.
struct SkipStrings;

impl<'de> Deserialize<'de> for SkipStrings {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Walk;
        impl<'de> serde::de::Visitor<'de> for Walk {
            type Value = SkipStrings;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of strings")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<SkipStrings, A::Error> {
                while seq.next_element::<&'de [u8]>()?.is_some() {}
                Ok(SkipStrings)
            }
        }
        d.deserialize_seq(Walk)
    }
}

/// The rest of a document record: what a hit shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocBody {
    /// The category path.
    pub category: String,
    /// The description.
    pub description: String,
    /// Where it was found.
    pub origin: Origin,
    /// Its `platforms` list.
    pub platforms: Vec<String>,
    /// Its triggers.
    pub triggers: Vec<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// Parser fallbacks taken.
    pub notes: Vec<String>,
    /// Possible prompt injections found in the name or description (neutralised in what
    /// is injected).
    pub flags: Vec<String>,
}

/// The key of the `names` table's stamp: the profile generation the table was last kept in
/// step with. A sync trusts the table (and decides offers only for the documents sharing a
/// name with a changed one) only when the stamp equals the committed generation; otherwise
/// it rebuilds the table from every document head.
pub const NAMES_GENERATION: &str = "#generation";

/// The `state` key of the `seed` table's stamp (postcard `u64`): the profile generation the
/// table was last kept in step with. A query reads the seed projections only when the stamp
/// equals the generation of its snapshot, and the whole lists otherwise; a sync that finds it
/// behind writes the table again from the lists. A build of schema 6 can commit to a file
/// that another process has since migrated (it checked the schema when it opened the file),
/// and it keeps no projection.
pub const SEED_GENERATION: &str = "seed_generation";

/// `state` key: the [`crate::sync::RULES_VERSION`] the profile's documents were made by
/// (absent: a build before the key existed). A sync that finds another one rebuilds.
pub const RULES_VERSION_KEY: &str = "rules_version";

/// The `names` table's key for a frontmatter or folder name.
pub fn name_key(name: &str) -> String {
    format!("n:{name}")
}

/// One term of a document's forward index: what to take out of the postings when the
/// document changes or stops being offered.
pub type TermEntry = (String, crate::fields::FieldStats);

/// Per-profile corpus statistics over the offered documents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusStats {
    /// Offered documents.
    pub docs: u32,
    /// Per field, the sum of lengths over offered documents.
    pub sum_lens: [u64; FIELD_COUNT],
    /// Per field, how many offered documents have it (a length above 0). A field's average
    /// length is taken over these, as Lucene's BM25 takes it (`sumTotalTermFreq /
    /// docCount`): over every document, 90,000 hub skills without a body would make the
    /// average body a few terms long, and every real body hundreds of times "too long".
    pub field_docs: [u32; FIELD_COUNT],
    /// The next unused document id.
    pub next_doc: u32,
    /// Bumped by every commit that changes the profile.
    pub generation: u64,
    /// When the last committing sync started (ns since the epoch).
    pub synced_at_ns: i64,
    /// The OS the activity of documents was decided for.
    pub os: String,
}

impl CorpusStats {
    /// Counts an offered document with field lengths `lens` in (`add`) or out. Taking out
    /// stops at zero: statistics a damaged file undercounts must not wrap around.
    pub fn count(&mut self, lens: &[u32; FIELD_COUNT], add: bool) {
        if add {
            self.docs += 1;
        } else {
            self.docs = self.docs.saturating_sub(1);
        }
        for ((sum, with), &len) in self.sum_lens.iter_mut().zip(&mut self.field_docs).zip(lens) {
            if add {
                *sum += u64::from(len);
                *with += u32::from(len > 0);
            } else {
                *sum = sum.saturating_sub(u64::from(len));
                *with = with.saturating_sub(u32::from(len > 0));
            }
        }
    }

    /// Per field, the average length of the documents that have it (0 where none has);
    /// for the seed field, of every document, as the seed plugin averages its documents.
    pub fn avg_lens(&self) -> [f64; FIELD_COUNT] {
        let mut avg = [0.0; FIELD_COUNT];
        for (f, a) in avg.iter_mut().enumerate() {
            let over = if f == crate::fields::Field::Seed as usize {
                self.docs
            } else {
                self.field_docs[f]
            };
            if over > 0 {
                *a = self.sum_lens[f] as f64 / f64::from(over);
            }
        }
        avg
    }
}

/// The configuration a sync applied, kept to notice when it changes and to answer
/// per-platform queries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigSnapshot {
    /// `skills.disabled`.
    pub disabled: Vec<String>,
    /// `skills.platform_disabled`, names as written.
    pub platform_disabled: BTreeMap<String, Vec<String>>,
}

/// The entry of [`ConfigSnapshot::disabled`] that stands for a `config.yaml` that could not
/// be read: every skill is disabled. No skill name holds a NUL, so it names none; kept in
/// the list rather than beside it so that the stored record keeps its format.
pub const UNREADABLE_CONFIG: &str = "\u{0}config.yaml could not be read";

impl ConfigSnapshot {
    /// Whether every skill is disabled ([`UNREADABLE_CONFIG`]).
    pub fn all_disabled(&self) -> bool {
        self.disabled.iter().any(|d| d == UNREADABLE_CONFIG)
    }

    /// The parts of `config` that decide which skills are offered.
    pub fn of(config: &crate::config::HermesConfig) -> ConfigSnapshot {
        let unreadable = config.unreadable.then(|| UNREADABLE_CONFIG.to_owned());
        ConfigSnapshot {
            disabled: config.disabled.iter().cloned().chain(unreadable).collect(),
            platform_disabled: config
                .platform_disabled
                .iter()
                .map(|(k, v)| (k.clone(), v.iter().cloned().collect()))
                .collect(),
        }
    }
}

pub use crate::offer::OfferRules;

/// What the index knows of a profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileInfo {
    /// The profile's home directory.
    pub home: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_fields_read_what_the_owned_record_holds() {
        let strings = |prefix: &str, n: usize| -> Vec<String> {
            (0..n).map(|i| format!("{prefix}-{i}-ü")).collect()
        };
        let inactive = [
            None,
            Some(NotOffered::OtherOs { os: "macos".into() }),
            Some(NotOffered::Disabled),
            Some(NotOffered::NoEnvironment),
            Some(NotOffered::Shadowed {
                by: "skills/x/SKILL.md".into(),
            }),
        ];
        for (i, inactive) in inactive.into_iter().enumerate() {
            let head = DocHead {
                id: format!("id-{i}"),
                name: "pdf → markdown".into(),
                dir_name: "pdf".into(),
                folder: "docs/pdf".into(),
                category: "docs".into(),
                rank: 3 + i as u32,
                key: "/home/h/skills/docs/pdf/SKILL.md".into(),
                platforms: strings("p", i),
                environments: strings("e", i + 1),
                has_environments: i % 2 == 0,
                conditions: Conditions {
                    requires_toolsets: strings("rts", i),
                    requires_tools: strings("rt", 2),
                    fallback_for_toolsets: strings("fts", 1),
                    fallback_for_tools: strings("ft", i),
                    never_with_tools: i % 2 == 1,
                    session_platforms: strings("sp", i),
                },
                lens: [1, 20, 300, 4, 50_000, 6],
                inactive,
            };
            let body = DocBody {
                category: "docs/other".into(),
                description: "Converts PDF files; 変換".into(),
                origin: Origin::Plugin("plug".into()),
                platforms: strings("bp", 2),
                triggers: strings("t", 3),
                tags: strings("g", i),
                notes: strings("n", 1),
                flags: strings("f", i),
            };
            let bytes = postcard::to_allocvec(&(&head, &body)).unwrap();
            assert_eq!(
                HitFields::read(&bytes).unwrap(),
                HitFields {
                    id: &head.id,
                    name: &head.name,
                    key: &head.key,
                    category: &body.category,
                    description: &body.description,
                }
            );
            assert!(HitFields::read(&bytes[..bytes.len() / 2]).is_err());
        }
    }
}
