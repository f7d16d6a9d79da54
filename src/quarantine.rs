//! Hermes' quarantine of project skills, read from Hermes' own verdicts.
//!
//! A project's skills come straight from a checkout, so Hermes 0.21 scans every project
//! skill folder with its skills_guard scanner before it lists it, and drops a skill whose
//! verdict is `dangerous`; a skill whose scan fails is dropped too (fail closed). Hermes
//! keeps each verdict in a cache under the profile home, keyed by a digest of the folder's
//! content (`tools/skills_guard.scan_skill_cached`, `agent/skill_utils.
//! is_quarantined_project_skill`).
//!
//! skillidx does not scan: a second scanner would drift from Hermes' (its patterns change
//! with every release, which is why the cache records the scanner's version). It reads the
//! verdict Hermes recorded for the folder's current content, and treats a folder without
//! one as Hermes treats a failed scan: not offered. The plugin asks Hermes to scan the
//! session's project before it syncs, so inside Hermes every verdict is there.

use crate::scan::{Problem, Scan};
use crate::skill::Origin;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The `source` Hermes scans project skills as (`_PROJECT_SCAN_SOURCE`).
pub const SOURCE: &str = "project-local";

/// The scanner version whose verdicts Hermes 0.21 accepts (`SCANNER_VERSION`).
pub const SCANNER_VERSION: &str = "skills-guard-v4";

/// Where a profile keeps its project scan verdicts (`_project_scan_cache_dir`).
pub fn cache_dir(home: &Path) -> PathBuf {
    home.join("cache").join("project_skill_scans")
}

/// Drops from `scan` every project skill Hermes would not list (as `iter_project_skill_files`
/// never yields it: it shadows nothing, and counts for no clash), each reported with its
/// reason. `home` is the profile's home, which holds the verdicts.
pub fn screen(scan: &mut Scan, home: &Path) {
    let cache = cache_dir(home);
    scan.found.retain(|c| {
        if !matches!(c.location.origin, Origin::Project(_)) {
            return true;
        }
        let dir = c.path.parent().unwrap_or(&c.path);
        match problem(&c.path, &verdict(dir, &cache)) {
            Some(p) => {
                scan.problems.push(p);
                false
            }
            None => true,
        }
    });
}

/// What Hermes decided about one project skill folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `safe` or `caution` (any verdict but `dangerous`): offered.
    Allowed,
    /// `dangerous`: quarantined, with Hermes' summary.
    Dangerous(String),
    /// A record for the folder's current content that Hermes cannot read back into a scan
    /// result (a required key missing, a finding of another shape, not UTF-8): reading it
    /// raises, and Hermes quarantines the skill until its content changes.
    Unreadable,
    /// No verdict for the folder's current content: not offered until Hermes scans it.
    Unscanned,
}

/// The keys of a recorded finding: `scan_skill_cached` rebuilds each as `Finding(**item)`,
/// which takes exactly these.
const FINDING_KEYS: [&str; 7] = [
    "pattern_id",
    "severity",
    "category",
    "file",
    "line",
    "match",
    "description",
];

/// The verdict recorded in `cache` for the skill folder `dir` as it is now.
pub fn verdict(dir: &Path, cache: &Path) -> Verdict {
    let Ok(digest) = content_digest(dir) else {
        return Verdict::Unscanned;
    };
    let file = cache.join(format!("{digest}-{}.json", source_identity()));
    let Ok(bytes) = std::fs::read(&file) else {
        return Verdict::Unscanned;
    };
    // Hermes decodes as UTF-8 (BOM allowed) and lets a decoding error raise.
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Verdict::Unreadable;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text.trim_start_matches('\u{feff}'))
    else {
        return Verdict::Unscanned;
    };
    let field = |k: &str| v.get(k).and_then(serde_json::Value::as_str);
    let current = field("bundle_hash") == Some(format!("sha256:{digest}").as_str())
        && field("scanner_version") == Some(SCANNER_VERSION)
        && field("source") == Some(SOURCE)
        && field("source_url") == Some("");
    if !current {
        return Verdict::Unscanned;
    }
    if !readable_by_hermes(&v) {
        return Verdict::Unreadable;
    }
    match field("verdict") {
        Some("dangerous") => Verdict::Dangerous(field("summary").unwrap_or("").to_owned()),
        _ => Verdict::Allowed,
    }
}

/// Whether `scan_skill_cached` can rebuild its scan result from the current record `v`: it
/// reads `trust_level`, `verdict` and `scanned_at` as required keys (any value) and each
/// item of `findings` (when present) as a `Finding`'s keyword arguments.
fn readable_by_hermes(v: &serde_json::Value) -> bool {
    let required = ["trust_level", "verdict", "scanned_at"]
        .iter()
        .all(|k| v.get(k).is_some());
    let findings = match v.get("findings") {
        None => true,
        Some(serde_json::Value::Array(items)) => items.iter().all(|item| {
            item.as_object().is_some_and(|o| {
                o.len() == FINDING_KEYS.len() && FINDING_KEYS.iter().all(|k| o.contains_key(*k))
            })
        }),
        // Iterating a string or a mapping yields no keyword arguments: it raises. An empty
        // one yields nothing to build.
        Some(serde_json::Value::String(s)) => s.is_empty(),
        Some(serde_json::Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    };
    required && findings
}

/// Why a project skill at `skill_md` is not offered, for `verdict`; `None` when it is.
pub fn problem(skill_md: &Path, verdict: &Verdict) -> Option<Problem> {
    let reason = match verdict {
        Verdict::Allowed => return None,
        Verdict::Dangerous(summary) => {
            format!(
                "quarantined: Hermes' skills_guard found this project skill dangerous ({summary})"
            )
        }
        Verdict::Unreadable => "quarantined: Hermes cannot read back its recorded skills_guard \
                                verdict for this project skill (a key missing or of another \
                                shape), and quarantines it until its content changes"
            .to_owned(),
        Verdict::Unscanned => "not offered yet: Hermes' skills_guard has no verdict for this \
                               project skill's current content (a Hermes session in the project \
                               scans it; the skillidx plugin asks for the scan)"
            .to_owned(),
    };
    Some(Problem {
        path: skill_md.to_path_buf(),
        reason,
    })
}

/// The first 16 hex digits of SHA-256 over `source` and an empty source URL.
fn source_identity() -> String {
    let mut h = Sha256::new();
    h.update(SOURCE.as_bytes());
    h.update([0u8]);
    hex(&h.finalize())[..16].to_owned()
}

/// SHA-256 over every file of the folder, in the order of their relative paths as strings:
/// each `path/from/dir`, a NUL, then the file's bytes. Folder links are not walked into;
/// file links are read, as Python's `rglob` and `is_file` do.
fn content_digest(dir: &Path) -> std::io::Result<String> {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1) {
        let entry = entry.map_err(std::io::Error::other)?;
        if !std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(dir)
            .map_err(std::io::Error::other)?;
        let rel: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        files.push((rel.join("/"), entry.into_path()));
    }
    files.sort();
    let mut h = Sha256::new();
    for (rel, path) in files {
        h.update(rel.as_bytes());
        h.update([0u8]);
        h.update(std::fs::read(path)?);
    }
    Ok(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest and cache file name Hermes computes, written out by hand in the test from
    /// its documented recipe (`_content_digest`): a change to either side breaks this.
    #[test]
    fn verdicts_are_found_under_hermes_cache_names() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("skill");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(dir.join("SKILL.md"), "---\nname: s\n---\n").unwrap();
        std::fs::write(dir.join("scripts/run.sh"), "echo hi\n").unwrap();
        let mut h = Sha256::new();
        h.update(b"SKILL.md\0---\nname: s\n---\n");
        h.update(b"scripts/run.sh\0echo hi\n");
        let digest = hex(&h.finalize());
        assert_eq!(content_digest(&dir).unwrap(), digest);
        let cache = t.path().join("cache");
        assert_eq!(verdict(&dir, &cache), Verdict::Unscanned);
        std::fs::create_dir_all(&cache).unwrap();
        let write = |verdict: &str, version: &str| {
            let json = serde_json::json!({
                "bundle_hash": format!("sha256:{digest}"), "scanner_version": version,
                "source": SOURCE, "source_url": "", "verdict": verdict, "summary": "why",
                "trust_level": "community", "scanned_at": "2026-12-07T00:00:00+00:00",
                "findings": [],
            });
            let name = format!("{digest}-{}.json", source_identity());
            std::fs::write(cache.join(name), json.to_string()).unwrap();
        };
        write("caution", SCANNER_VERSION);
        assert_eq!(verdict(&dir, &cache), Verdict::Allowed);
        write("dangerous", SCANNER_VERSION);
        assert_eq!(verdict(&dir, &cache), Verdict::Dangerous("why".into()));
        write("safe", "skills-guard-v3");
        assert_eq!(verdict(&dir, &cache), Verdict::Unscanned);
        write("safe", SCANNER_VERSION);
        std::fs::write(dir.join("scripts/run.sh"), "curl evil\n").unwrap();
        assert_eq!(verdict(&dir, &cache), Verdict::Unscanned, "content changed");
    }

    /// A current record Hermes cannot rebuild into a scan result makes `scan_skill_cached`
    /// raise, and `is_quarantined_project_skill` quarantine the skill (0.21.3's
    /// `tools/skills_guard.py`, `agent/skill_utils.py`).
    #[test]
    fn a_record_hermes_cannot_read_back_quarantines() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("skill");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), "---\nname: s\n---\n").unwrap();
        let cache = t.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let name = format!(
            "{}-{}.json",
            content_digest(&dir).unwrap(),
            source_identity()
        );
        let record = |edit: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
            let mut m = serde_json::json!({
                "bundle_hash": format!("sha256:{}", content_digest(&dir).unwrap()),
                "scanner_version": SCANNER_VERSION, "source": SOURCE, "source_url": "",
                "verdict": "safe", "trust_level": "community",
                "scanned_at": "2026-12-07T00:00:00+00:00",
                "findings": [{"pattern_id": "p", "severity": "low", "category": "c",
                              "file": "SKILL.md", "line": 1, "match": "m", "description": "d"}],
            });
            edit(m.as_object_mut().unwrap());
            std::fs::write(cache.join(&name), m.to_string()).unwrap();
            verdict(&dir, &cache)
        };
        assert_eq!(record(&|_| {}), Verdict::Allowed);
        assert_eq!(record(&|m| drop(m.remove("findings"))), Verdict::Allowed);
        assert_eq!(
            record(&|m| drop(m.insert("verdict".into(), 1.into()))),
            Verdict::Allowed
        );
        for key in ["trust_level", "scanned_at", "verdict"] {
            assert_eq!(
                record(&|m| drop(m.remove(key))),
                Verdict::Unreadable,
                "{key}"
            );
        }
        let other_finding = serde_json::json!([{"pattern_id": "p"}]);
        assert_eq!(
            record(&|m| drop(m.insert("findings".into(), other_finding.clone()))),
            Verdict::Unreadable
        );
        assert_eq!(
            record(&|m| drop(m.insert("findings".into(), "x".into()))),
            Verdict::Unreadable
        );
        // Not current: Hermes scans again, skillidx waits for that scan.
        assert_eq!(
            record(&|m| drop(m.insert("source_url".into(), "u".into()))),
            Verdict::Unscanned
        );
        std::fs::write(cache.join(&name), b"{\"verdict\": \"safe\xff\"}").unwrap();
        assert_eq!(verdict(&dir, &cache), Verdict::Unreadable);
    }
}
