//! Observe: what each SKILL.md found by the scan holds now, with no lock held.
//!
//! Against the manifest of the base (the last commit, read before any lock), a file whose
//! stat is unchanged and trustworthy is not opened; any other file is read (never more than
//! [`MAX_FILE_BYTES`], never a FIFO), hashed with blake3, and parsed and analysed only when
//! the hash differs from the base's. Files are observed in parallel (rayon).

use crate::analyze::{analyze, indexed_description, word_order, Analyzed};
use crate::failpoint;
use crate::fields::FIELD_COUNT;
use crate::forward;
use crate::scan::Candidate;
use crate::skill::{self, Skill};
use crate::store::records::ManifestEntry;
use crate::version::HermesVersion;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How much of a SKILL.md is kept in memory: a larger file is read whole through the hash
/// and a UTF-8 check (as Hermes reads it whole), but only this much of it is parsed.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A parsed, tokenized skill.
#[derive(Debug)]
pub struct Parsed {
    /// The skill as Hermes reads it, less its body and when-to-use text: they are tokenized
    /// here and nothing after reads them, so a sync of many new skills does not hold them
    /// until apply.
    pub skill: Skill,
    /// Per field, its length in terms.
    pub lens: [u32; FIELD_COUNT],
    /// Its terms, as the stored forward index ([`crate::forward`]). Encoded here, on the
    /// parallel workers, so a sync of many new skills holds a few hundred bytes per skill
    /// until apply instead of every term's statistics, and apply writes the bytes as they are.
    pub forward: Vec<u8>,
    /// Its name and description in word order, as the `words` table stores them
    /// ([`crate::analyze::word_order`]), encoded here too.
    pub words: Vec<u8>,
}

impl Parsed {
    /// Tokenizes `skill`.
    pub fn new(mut skill: Skill) -> Parsed {
        let Analyzed { lens, terms } = analyze(&skill);
        let words = crate::store::encode(&word_order(&skill.name, indexed_description(&skill)));
        skill.body = String::new();
        skill.when_to_use = String::new();
        Parsed {
            skill,
            lens,
            forward: forward::encode(&terms),
            words,
        }
    }
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
    hermes: HermesVersion,
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
                _ => read_and_parse(&candidate, prior, hermes),
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

fn read_and_parse(
    candidate: &Candidate,
    prior: Option<&ManifestEntry>,
    hermes: HermesVersion,
) -> Observation {
    let (bytes, hash, whole) = match read_limited(candidate) {
        Ok(r) => r,
        Err(ReadFailure::Vanished) => return Observation::Vanished,
        Err(ReadFailure::NotAFile(reason)) => {
            return Observation::Rejected {
                hash: [0; 32],
                reason,
            };
        }
        Err(ReadFailure::Unreadable(reason)) => {
            // Hermes offers a SKILL.md it cannot read under its folder name.
            let hash = *blake3::hash(reason.as_bytes()).as_bytes();
            if prior.is_some_and(|p| p.hash == hash) {
                return Observation::SameBytes { hash };
            }
            let skill = skill::unreadable(&candidate.location, &reason, "");
            return Observation::Changed {
                hash,
                parsed: Box::new(Parsed::new(skill)),
            };
        }
    };
    if prior.is_some_and(|p| p.hash == hash) {
        return Observation::SameBytes { hash };
    }
    // A bug of ours on one file must not cost the user the rest of the sync: the file is
    // reported, as a bug, and every other skill is indexed.
    let parsed = crate::store::catch_quietly(|| {
        failpoint::point(failpoint::names::PARSE).map_err(|e| e.to_string())?;
        let mut skill = match whole {
            Whole::All => skill::parse(&bytes, &candidate.location),
            Whole::NotUtf8(at) => skill::unreadable(
                &candidate.location,
                &format!("not valid UTF-8 (first bad byte at offset {at})"),
                &String::from_utf8_lossy(&bytes),
            ),
            Whole::Head(size) => {
                // Only the head was kept: cut it at a character boundary and parse it as
                // the file (its frontmatter and the indexed start of the body are in it).
                let text = match std::str::from_utf8(&bytes) {
                    Ok(t) => t,
                    Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
                };
                let mut s = skill::parse_text(text, &candidate.location);
                s.notes.push(format!(
                    "file is {size} bytes; only its first {MAX_FILE_BYTES} were parsed"
                ));
                // Its frontmatter runs past what was read, and Hermes reads the file whole:
                // a condition it may name there is unknown here (fail closed).
                if skill::frontmatter_unclosed(text) && skill::mentions_conditions(text) {
                    s.conditions.never_with_tools = true;
                }
                s
            }
        };
        skill::as_listed_by(&mut skill, &candidate.location, hermes);
        Ok::<_, String>(Parsed::new(skill))
    });
    match parsed {
        Ok(Ok(parsed)) => Observation::Changed {
            hash,
            parsed: Box::new(parsed),
        },
        Ok(Err(reason)) => Observation::Rejected { hash, reason },
        Err((message, at)) => Observation::Rejected {
            hash,
            reason: format!(
                "internal error in skillidx while parsing this file ({message} at {at}); please report it"
            ),
        },
    }
}

/// Why [`open_checked`] gave no file.
enum Opened {
    Io(std::io::Error),
    Refused(String),
}

/// Opens the candidate's file, checking that it is the file the walk found
/// ([`crate::scan::LinkBounds::check_open`]); a path replaced in between (a rename) is
/// opened again, a few times.
fn open_checked(candidate: &Candidate) -> Result<std::fs::File, Opened> {
    use crate::scan::{LinkBounds, OpenMismatch};
    for _ in 0..3 {
        let file = std::fs::File::open(&candidate.path).map_err(Opened::Io)?;
        failpoint::point(failpoint::names::SYNC_READ_OPENED).map_err(Opened::Io)?;
        match LinkBounds::check_open(candidate.link_bounds.as_deref(), &candidate.path, &file) {
            Ok(()) => return Ok(file),
            Err(OpenMismatch::Refused(why)) => return Err(Opened::Refused(why)),
            Err(OpenMismatch::Changed) => continue,
        }
    }
    Err(Opened::Refused(
        "kept changing while it was being read: not read (the next sync reads it)".into(),
    ))
}

enum ReadFailure {
    Vanished,
    /// Not a regular file (a FIFO would block Hermes forever): skipped.
    NotAFile(String),
    /// A regular file that cannot be read: Hermes offers it under its folder name.
    Unreadable(String),
}

/// How much of the file the bytes returned are.
enum Whole {
    /// All of it.
    All,
    /// The first [`MAX_FILE_BYTES`] of a file of this size, all of it valid UTF-8.
    Head(u64),
    /// The first [`MAX_FILE_BYTES`] of a larger file that is not UTF-8 at this offset.
    NotUtf8(u64),
}

/// Reads a SKILL.md: the bytes (at most [`MAX_FILE_BYTES`]), the blake3 of the whole file,
/// and whether the bytes are all of it. A larger file is streamed through the hash and a
/// UTF-8 check, so it is read whole (as Hermes reads it) but never held whole. The file
/// opened must be the one the walk found ([`LinkBounds::check_open`]), so a SKILL.md
/// switched to a link to another file after the walk is not read.
///
/// [`LinkBounds::check_open`]: crate::scan::LinkBounds::check_open
fn read_limited(candidate: &Candidate) -> Result<(Vec<u8>, [u8; 32], Whole), ReadFailure> {
    let path = candidate.path.as_path();
    let fail = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ReadFailure::Vanished,
        _ => ReadFailure::Unreadable(format!("cannot read: {e}")),
    };
    // Check the type before opening: opening a FIFO for reading would block.
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink is a file Hermes cannot read; a vanished file is gone.
            return match std::fs::symlink_metadata(path) {
                Ok(_) => Err(ReadFailure::Unreadable(format!("cannot read: {e}"))),
                Err(_) => Err(ReadFailure::Vanished),
            };
        }
        Err(e) => return Err(fail(e)),
    };
    if !meta.is_file() {
        return Err(ReadFailure::NotAFile("not a regular file".into()));
    }
    let mut file = open_checked(candidate).map_err(|e| match e {
        Opened::Io(e) => fail(e),
        Opened::Refused(why) => ReadFailure::NotAFile(why),
    })?;
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_FILE_BYTES) as usize);
    (&mut file)
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(&bytes);
    // Short of the limit, `read_to_end` stopped at the end of the file: no second read
    // (and no buffer for it) is needed to know the file is whole, and a file that grows
    // after that end is not taken for one over the limit.
    if (bytes.len() as u64) < MAX_FILE_BYTES {
        return Ok((bytes, *hasher.finalize().as_bytes(), Whole::All));
    }
    let mut buf = vec![0u8; 1 << 16];
    let first = file.read(&mut buf).map_err(fail)?;
    if first == 0 {
        return Ok((bytes, *hasher.finalize().as_bytes(), Whole::All));
    }
    // Larger than the limit: stream the rest through the hash and a UTF-8 check.
    let (at, mut bad) = match std::str::from_utf8(&bytes) {
        Ok(_) => (bytes.len(), None),
        Err(e) if e.error_len().is_some() => (e.valid_up_to(), Some(e.valid_up_to() as u64)),
        Err(e) => (e.valid_up_to(), None),
    };
    // `pending` holds the bytes from file offset `at` not yet known to be valid.
    let mut pending: Vec<u8> = bytes[at..].to_vec();
    let mut at = at as u64;
    let mut size = bytes.len() as u64;
    let mut n = first;
    while n > 0 {
        hasher.update(&buf[..n]);
        size += n as u64;
        if bad.is_none() {
            pending.extend_from_slice(&buf[..n]);
            let valid = match std::str::from_utf8(&pending) {
                Ok(_) => pending.len(),
                Err(e) if e.error_len().is_some() => {
                    bad = Some(at + e.valid_up_to() as u64);
                    0
                }
                Err(e) => e.valid_up_to(),
            };
            pending.drain(..valid);
            at += valid as u64;
        }
        n = file.read(&mut buf).map_err(fail)?;
    }
    if bad.is_none() && !pending.is_empty() {
        bad = Some(at);
    }
    let whole = match bad {
        Some(at) => Whole::NotUtf8(at),
        None => Whole::Head(size),
    };
    Ok((bytes, *hasher.finalize().as_bytes(), whole))
}
