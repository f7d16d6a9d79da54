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
    /// The next unused document id.
    pub next_doc: u32,
    /// Bumped by every commit that changes the profile.
    pub generation: u64,
    /// When the last committing sync started (ns since the epoch).
    pub synced_at_ns: i64,
    /// The OS the activity of documents was decided for.
    pub os: String,
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

impl ConfigSnapshot {
    /// The parts of `config` that decide which skills are offered.
    pub fn of(config: &crate::config::HermesConfig) -> ConfigSnapshot {
        ConfigSnapshot {
            disabled: config.disabled.iter().cloned().collect(),
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
