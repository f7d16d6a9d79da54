//! The records of schemas 3 to 7 whose layout schema 8 changed, frozen: a document head and
//! the offer rules, whose tool conditions gained `session_platforms` in schema 8.
//!
//! The steps that write these records for schemas 3 to 7 (`v2_to_v3`, `v4_to_v5`) encode
//! them with these types, and the step to 8 decodes them with them, so a file of any older
//! schema goes through every step with the layout each one expects.

use crate::fields::FIELD_COUNT;
use crate::offer::{self, ClashGroup};
use crate::skill;
use crate::store::records::{self, NotOffered};
use serde::{Deserialize, Serialize};

/// `skill::Conditions` of schemas 3 to 7.
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
    /// A condition Hermes cannot evaluate.
    pub never_with_tools: bool,
}

/// `records::DocHead` of schemas 3 to 7.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocHead {
    /// The id to load it by.
    pub id: String,
    /// The name Hermes lists.
    pub name: String,
    /// The folder name.
    pub dir_name: String,
    /// The folder path from its root.
    pub folder: String,
    /// The category path.
    pub category: String,
    /// Precedence in a clash.
    pub rank: u32,
    /// The manifest key.
    pub key: String,
    /// Its `platforms` list.
    pub platforms: Vec<String>,
    /// Its `environments` items.
    pub environments: Vec<String>,
    /// Whether it has an `environments` list.
    pub has_environments: bool,
    /// Its tool conditions.
    pub conditions: Conditions,
    /// Per field, its length in terms.
    pub lens: [u32; FIELD_COUNT],
    /// Why it is never offered.
    pub inactive: Option<NotOffered>,
}

/// `offer::DocRule` of schemas 3 to 7.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocRule {
    /// The document.
    pub doc: u32,
    /// Per field, its length in terms.
    pub lens: [u32; FIELD_COUNT],
    /// Its `environments` items.
    pub environments: Vec<String>,
    /// Its tool conditions.
    pub conditions: Conditions,
    /// Platforms whose `platform_disabled` names it.
    pub platform_disabled: Vec<String>,
    /// A plugin's skill.
    pub plugin: bool,
}

/// `offer::OfferRules` of schemas 3 to 7.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfferRules {
    /// The documents with a session condition.
    pub docs: Vec<DocRule>,
    /// The clash groups.
    pub clashes: Vec<ClashGroup>,
}

impl Conditions {
    /// Today's conditions: no `session_platforms`, which no schema before 8 read.
    pub fn upgrade(self) -> skill::Conditions {
        skill::Conditions {
            requires_toolsets: self.requires_toolsets,
            requires_tools: self.requires_tools,
            fallback_for_toolsets: self.fallback_for_toolsets,
            fallback_for_tools: self.fallback_for_tools,
            never_with_tools: self.never_with_tools,
            session_platforms: Vec::new(),
        }
    }

    /// The schema-7 form of conditions a step made with today's types (from records that
    /// never had `session_platforms`).
    pub fn of(c: skill::Conditions) -> Conditions {
        Conditions {
            requires_toolsets: c.requires_toolsets,
            requires_tools: c.requires_tools,
            fallback_for_toolsets: c.fallback_for_toolsets,
            fallback_for_tools: c.fallback_for_tools,
            never_with_tools: c.never_with_tools,
        }
    }
}

impl DocHead {
    /// Today's head.
    pub fn upgrade(self) -> records::DocHead {
        records::DocHead {
            id: self.id,
            name: self.name,
            dir_name: self.dir_name,
            folder: self.folder,
            category: self.category,
            rank: self.rank,
            key: self.key,
            platforms: self.platforms,
            environments: self.environments,
            has_environments: self.has_environments,
            conditions: self.conditions.upgrade(),
            lens: self.lens,
            inactive: self.inactive,
        }
    }

    /// The schema-7 form of a head a step made with today's type.
    pub fn of(h: records::DocHead) -> DocHead {
        DocHead {
            id: h.id,
            name: h.name,
            dir_name: h.dir_name,
            folder: h.folder,
            category: h.category,
            rank: h.rank,
            key: h.key,
            platforms: h.platforms,
            environments: h.environments,
            has_environments: h.has_environments,
            conditions: Conditions::of(h.conditions),
            lens: h.lens,
            inactive: h.inactive,
        }
    }
}

impl OfferRules {
    /// Today's offer rules.
    pub fn upgrade(self) -> offer::OfferRules {
        offer::OfferRules {
            docs: self
                .docs
                .into_iter()
                .map(|r| offer::DocRule {
                    doc: r.doc,
                    lens: r.lens,
                    environments: r.environments,
                    conditions: r.conditions.upgrade(),
                    platform_disabled: r.platform_disabled,
                    plugin: r.plugin,
                })
                .collect(),
            clashes: self.clashes,
        }
    }

    /// The schema-7 form of offer rules a step made with today's types.
    pub fn of(r: offer::OfferRules) -> OfferRules {
        OfferRules {
            docs: r
                .docs
                .into_iter()
                .map(|d| DocRule {
                    doc: d.doc,
                    lens: d.lens,
                    environments: d.environments,
                    conditions: Conditions::of(d.conditions),
                    platform_disabled: d.platform_disabled,
                    plugin: d.plugin,
                })
                .collect(),
            clashes: r.clashes,
        }
    }
}
