//! The records of schema 2 (and of schema 1, which had the same records), frozen.
//!
//! Migration steps decode files of these versions with these types and never with
//! `src/store/records.rs`, which follows the current schema. Do not change them: they
//! describe bytes already on users' disks.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Fields per posting and forward-index entry in schemas 1 and 2.
pub const FIELD_COUNT: usize = 6;
/// Per field, (term frequency, field length).
pub type FieldStats = [(u32, u32); FIELD_COUNT];
/// One term of a document's forward index (unchanged in schema 3, replaced in 4).
pub type TermEntry = (String, FieldStats);

/// A file's stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    /// Modification time, ns since the epoch.
    pub mtime_ns: i64,
    /// Status-change time, ns since the epoch.
    pub ctime_ns: i64,
    /// Size in bytes.
    pub size: u64,
    /// Inode number.
    pub ino: u64,
}

/// `manifest` value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// The stat when hashed.
    pub stat: FileStat,
    /// blake3 of the bytes.
    pub hash: [u8; 32],
    /// When the hashing sync started.
    pub verified_at_ns: i64,
    /// What came of it.
    pub state: EntryState,
}

/// The outcome of indexing one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryState {
    /// Indexed as this document.
    Indexed(u32),
    /// Skipped, for this reason.
    Skipped(String),
}

/// Where a skill was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    /// `<home>/skills`.
    Local,
    /// The n-th external dir.
    External(u32),
    /// A plugin's skills.
    Plugin(String),
}

/// Tool conditions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conditions {
    /// `requires_toolsets`.
    pub requires_toolsets: Vec<String>,
    /// `requires_tools`.
    pub requires_tools: Vec<String>,
    /// `fallback_for_toolsets`.
    pub fallback_for_toolsets: Vec<String>,
    /// `fallback_for_tools`.
    pub fallback_for_tools: Vec<String>,
}

/// The first part of a `docs` value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocHead {
    /// Skill id.
    pub id: String,
    /// Frontmatter name.
    pub name: String,
    /// Folder name.
    pub dir_name: String,
    /// Precedence rank.
    pub rank: u32,
    /// Manifest key.
    pub key: String,
    /// `platforms`.
    pub platforms: Vec<String>,
    /// Field lengths.
    pub lens: [u32; FIELD_COUNT],
    /// Why not offered, as prose.
    pub inactive: Option<String>,
}

/// The second part of a `docs` value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocBody {
    /// Category path.
    pub category: String,
    /// Description.
    pub description: String,
    /// Where it was found.
    pub origin: Origin,
    /// `platforms`.
    pub platforms: Vec<String>,
    /// Triggers.
    pub triggers: Vec<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Tool conditions.
    pub conditions: Conditions,
    /// Parser fallbacks and injection flags, as prose.
    pub notes: Vec<String>,
}

/// `state["stats"]`, unchanged up to schema 8 (schema 9 added `field_docs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusStats {
    /// Offered documents.
    pub docs: u32,
    /// Per field, the sum of offered lengths.
    pub sum_lens: [u64; FIELD_COUNT],
    /// Next document id.
    pub next_doc: u32,
    /// Commit counter.
    pub generation: u64,
    /// Start of the last committing sync.
    pub synced_at_ns: i64,
    /// OS decided for.
    pub os: String,
}

/// `state["config"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigSnapshot {
    /// `skills.disabled`.
    pub disabled: Vec<String>,
    /// `skills.platform_disabled`.
    pub platform_disabled: BTreeMap<String, Vec<String>>,
}
