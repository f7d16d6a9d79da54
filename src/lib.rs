//! skillidx: a persistent, incremental BM25 index of Hermes Agent skills.
//!
//! Data flows one way: files ([`scan`]) → parsed skills ([`skill`]) → terms
//! ([`tokenize`], [`analyze`]) → the store ([`store`], written by [`sync`]) → queries
//! ([`search`]). [`compact`] rewrites the `<available_skills>` block of a prompt;
//! [`freshness`], [`refresh`] and [`hermes`] serve the Hermes plugin. See
//! `ARCHITECTURE.md` for the map and `docs/store.md` for the file format.

#![warn(missing_docs)]

pub mod agent;
pub mod analyze;
pub mod cli;
pub mod compact;
pub mod config;
pub mod eval;
pub mod failpoint;
pub mod fields;
pub mod forward;
pub mod freshness;
pub mod hermes;
pub mod home;
pub mod mcp;
pub mod offer;
pub mod postings;
pub mod project;
pub mod quarantine;
pub mod refresh;
pub mod replace;
pub mod rerank;
pub mod safety;
pub mod scan;
pub mod search;
pub mod select;
#[cfg(feature = "semantic")]
pub mod semantic;
pub mod skill;
pub mod store;
pub mod sync;
pub mod tokenize;
pub mod varint;
pub mod version;
pub mod watch;
pub mod yaml;

#[path = "../migrations/mod.rs"]
pub mod migrations;

#[cfg(feature = "python")]
mod python;

mod index;
pub use index::{Aside, Error, Index, ProfileStats, SkillEntry};
