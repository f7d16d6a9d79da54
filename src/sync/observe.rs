//! Observe: what each SKILL.md found by the scan holds now, with no lock held.
//!
//! Against the manifest of the base (the last commit, read before any lock), a file whose
//! stat is unchanged and trustworthy is not opened; any other file is read (never more than
//! [`MAX_FILE_BYTES`], never a FIFO), hashed with blake3, and parsed and analysed only when
//! the hash differs from the base's. Files are observed in parallel (rayon).

use crate::analyze::{analyze, Analyzed};
use crate::failpoint;
use crate::scan::Candidate;
use crate::skill::{self, Skill};
use crate::store::records::ManifestEntry;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Files larger than this are skipped: no real SKILL.md comes near it.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A parsed, tokenized skill.
#[derive(Debug)]
pub struct Parsed {
    /// The skill as Hermes reads it.
    pub skill: Skill,
    /// Its terms per field.
    pub analyzed: Analyzed,
}

/// What the observe phase learnt about one file, relative to the base's manifest entry.
#[derive(Debug)]
pub enum Observation {
    /// Its stat equals the base entry's, which is trustworthy: the bytes are assumed to be
    /// the base's.
    StatUnchanged,
    /// Read and hashed: the bytes equal the base entry's.
    SameBytes {
        /// blake3 of the bytes.
        hash: [u8; 32],
    },
    /// New or changed bytes, parsed.
    Changed {
        /// blake3 of the bytes.
        hash: [u8; 32],
        /// The skill.
        parsed: Box<Parsed>,
    },
    /// New or changed bytes that cannot be a skill (or could not be read).
    Rejected {
        /// blake3 of the bytes (zero when they could not be read).
        hash: [u8; 32],
        /// Why.
        reason: String,
    },
    /// The file disappeared between the walk and the read.
    Vanished,
}

impl Observation {
    /// The hash of the bytes read, when they were read.
    pub fn hash(&self) -> Option<[u8; 32]> {
        match self {
            Observation::SameBytes { hash }
            | Observation::Changed { hash, .. }
            | Observation::Rejected { hash, .. } => Some(*hash),
            Observation::StatUnchanged | Observation::Vanished => None,
        }
    }
}

/// One file found by the scan and what was observed of it.
#[derive(Debug)]
pub struct Observed {
    /// Where it was found, with the stat taken by the walk (before any read).
    pub candidate: Candidate,
    /// What it holds.
    pub observation: Observation,
}

/// Observes every candidate against the base manifest, in parallel. `progress` is called
/// with (files examined, files to examine).
pub fn observe(
    candidates: Vec<Candidate>,
    base: &FxHashMap<String, ManifestEntry>,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Vec<Observed> {
    let total = candidates.len();
    let done = AtomicUsize::new(0);
    candidates
        .into_par_iter()
        .map(|candidate| {
            let prior = base.get(&candidate.key());
            let observation = match prior {
                Some(p) if p.stat == candidate.stat && p.stat_is_trustworthy() => {
                    Observation::StatUnchanged
                }
                _ => read_and_parse(&candidate, prior),
            };
            if let Some(report) = progress {
                report(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            }
            Observed {
                candidate,
                observation,
            }
        })
        .collect()
}

fn read_and_parse(candidate: &Candidate, prior: Option<&ManifestEntry>) -> Observation {
    let bytes = match read_limited(&candidate.path) {
        Ok(b) => b,
        Err(ReadFailure::Vanished) => return Observation::Vanished,
        Err(ReadFailure::Other(reason)) => {
            return Observation::Rejected {
                hash: [0; 32],
                reason,
            };
        }
    };
    let hash = *blake3::hash(&bytes).as_bytes();
    if prior.is_some_and(|p| p.hash == hash) {
        return Observation::SameBytes { hash };
    }
    // A bug of ours on one file must not cost the user the rest of the sync: the file is
    // reported, as a bug, and every other skill is indexed.
    let parsed = std::panic::catch_unwind(|| {
        failpoint::point(failpoint::names::PARSE).map_err(|e| e.to_string())?;
        skill::parse(&bytes, &candidate.location)
            .map(|skill| {
                let analyzed = analyze(&skill);
                Parsed { skill, analyzed }
            })
            .map_err(|rejection| rejection.to_string())
    });
    match parsed {
        Ok(Ok(parsed)) => Observation::Changed {
            hash,
            parsed: Box::new(parsed),
        },
        Ok(Err(reason)) => Observation::Rejected { hash, reason },
        Err(panic) => Observation::Rejected {
            hash,
            reason: format!(
                "internal error in skillidx while parsing this file ({}); please report it",
                crate::store::panic_message(&*panic)
            ),
        },
    }
}

enum ReadFailure {
    Vanished,
    Other(String),
}

fn read_limited(path: &std::path::Path) -> Result<Vec<u8>, ReadFailure> {
    let fail = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ReadFailure::Vanished,
        _ => ReadFailure::Other(format!("cannot read: {e}")),
    };
    // Check the type before opening: opening a FIFO for reading would block.
    let meta = std::fs::metadata(path).map_err(fail)?;
    if !meta.is_file() {
        return Err(ReadFailure::Other("not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ReadFailure::Other(format!(
            "file is {} bytes, over the {} byte limit",
            meta.len(),
            MAX_FILE_BYTES
        )));
    }
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadFailure::Other(format!(
            "file grew past the {MAX_FILE_BYTES} byte limit while read"
        )));
    }
    Ok(bytes)
}
