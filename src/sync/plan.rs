//! Plan: the pure decision of what a sync changes.
//!
//! [`plan`] maps the committed state, the observations, the configuration and the OS to
//! the changes (manifest entries to write and delete, documents to remove and to add with
//! their ids, whether offers must be decided again; [`crate::offer::decide`] decides them).
//! It touches neither the store nor the disk, so it is tested without either.
//!
//! A sync plans twice at most: once against its base before taking any lock (an empty plan
//! means nothing to write), and once more inside the write transaction when another sync
//! committed in between. Observations are always relative to the base (a file whose stat
//! matched the base was not read), so [`decide`] takes the base entry, the entry committed
//! now and the observation, and is the one place that weighs them.

use super::observe::{Observation, Observed, Parsed};
use crate::scan::{FileStat, Problem};
use crate::store::records::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::PathBuf;

/// `verified_at_ns` of an entry whose stat must not be trusted: the next sync hashes the
/// file again. Set when two syncs disagreed about a file and neither view is clearly newer.
pub const UNTRUSTED: i64 = 0;

/// What the last commit says about a profile, read in one transaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Committed {
    /// SKILL.md path → what was learnt of it.
    pub manifest: FxHashMap<String, ManifestEntry>,
    /// The corpus statistics (next document id, generation, OS).
    pub stats: CorpusStats,
    /// The configuration applied, `None` before the first commit.
    pub config: Option<ConfigSnapshot>,
}

impl Committed {
    /// (offered, indexed but not offered) documents: every document is owned by exactly
    /// one `Indexed` manifest entry (invariant 1 of docs/store.md), so no table needs
    /// reading.
    pub fn offered_counts(&self) -> (usize, usize) {
        let indexed = self
            .manifest
            .values()
            .filter(|e| matches!(e.state, EntryState::Indexed(_)))
            .count();
        let active = self.stats.docs as usize;
        (active, indexed.saturating_sub(active))
    }
}

/// What one manifest key comes to.
#[derive(Debug)]
pub enum Action<'o> {
    /// Leave the committed entry (or its absence) as it is.
    Keep,
    /// Rewrite the entry without touching its document: a new stat, a settled racy file,
    /// or a stat that must no longer be trusted.
    Touch(ManifestEntry),
    /// Index these bytes as a new document, replacing the committed one if any.
    Index {
        /// The stat the bytes were read under.
        stat: FileStat,
        /// Their hash.
        hash: [u8; 32],
        /// The skill.
        parsed: &'o Parsed,
    },
    /// Record the file as skipped, removing the committed document if any.
    Skip(ManifestEntry),
    /// Forget the entry and its document: the file is gone.
    Forget,
}

/// Whether two entries record the same look at a file (the same stat and bytes), whatever
/// document id or verification time each carries.
fn same_view(a: Option<&ManifestEntry>, b: Option<&ManifestEntry>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.stat == b.stat && a.hash == b.hash,
        (None, None) => true,
        _ => false,
    }
}

/// The keys whose committed entry another sync changed after `base` was read: only for
/// these does [`decide`] need the file's stat as it is now.
pub fn conflicts(base: &Committed, current: &Committed) -> Vec<String> {
    let mut keys: Vec<String> = current
        .manifest
        .iter()
        .filter(|(k, c)| !same_view(base.manifest.get(*k), Some(c)))
        .map(|(k, _)| k.clone())
        .chain(
            base.manifest
                .keys()
                .filter(|k| !current.manifest.contains_key(*k))
                .cloned(),
        )
        .collect();
    keys.sort_unstable();
    keys
}

/// Weighs what is committed for one key against what this sync observed of it.
///
/// `base` is the entry the observation was made against, `current` the one committed now,
/// `seen` the file's stat and observation (`None`: not on disk). When another sync recorded
/// a different look at the file after our base, `fresh` is the file's stat taken inside
/// the write transaction (`None`: gone now), and it decides whose look is the file as it is:
/// ours when the file still has the stat we read it under, theirs when it has theirs. When
/// it has neither (changed again since), theirs is kept but marked [`UNTRUSTED`], so the next
/// sync reads the file again; every path converges to the disk.
pub fn decide<'o>(
    base: Option<&ManifestEntry>,
    current: Option<&ManifestEntry>,
    seen: Option<(&FileStat, &'o Observation)>,
    fresh: Option<Option<&FileStat>>,
    now_ns: i64,
) -> Action<'o> {
    let has_bytes = matches!(
        seen,
        Some((
            _,
            Observation::Changed { .. } | Observation::Rejected { .. }
        ))
    );
    if !same_view(base, current) {
        let fresh = fresh.flatten();
        let Some(now) = fresh else {
            return match current {
                Some(_) => Action::Forget,
                None => Action::Keep,
            };
        };
        let ours_is_now = seen.is_some_and(|(stat, _)| stat == now) && has_bytes;
        match current {
            Some(cur) => {
                let our_hash = seen
                    .and_then(|(_, o)| o.hash())
                    .or_else(|| base.map(|b| b.hash));
                if our_hash == Some(cur.hash) || (&cur.stat == now && !ours_is_now) {
                    return Action::Keep;
                }
                if !ours_is_now {
                    return if cur.verified_at_ns == UNTRUSTED {
                        Action::Keep
                    } else {
                        Action::Touch(ManifestEntry {
                            verified_at_ns: UNTRUSTED,
                            ..cur.clone()
                        })
                    };
                }
            }
            // Another sync forgot it; it is back (or was never gone). Without bytes read
            // under today's stat the next sync, which has no entry to trust, reads it.
            None if !ours_is_now => return Action::Keep,
            None => {}
        }
    }
    let Some((stat, observation)) = seen else {
        return match current {
            Some(_) => Action::Forget,
            None => Action::Keep,
        };
    };
    let entry = |hash: [u8; 32], state: EntryState| ManifestEntry {
        stat: *stat,
        hash,
        verified_at_ns: now_ns,
        state,
    };
    match (observation, current) {
        (Observation::Changed { hash, parsed }, _) => Action::Index {
            stat: *stat,
            hash: *hash,
            parsed,
        },
        (Observation::Rejected { hash, reason }, _) => {
            Action::Skip(entry(*hash, EntryState::Skipped(reason.clone())))
        }
        (Observation::SameBytes { hash }, Some(cur)) if needs_restat(cur, stat, now_ns) => {
            Action::Touch(entry(*hash, cur.state.clone()))
        }
        (Observation::Vanished, Some(_)) => Action::Forget,
        _ => Action::Keep,
    }
}

/// Whether a file whose bytes are unchanged still needs its manifest entry rewritten: its
/// stat changed, or it was racily clean and has now settled, so later syncs can trust the
/// stat again.
fn needs_restat(entry: &ManifestEntry, stat: &FileStat, now_ns: i64) -> bool {
    let fresh = ManifestEntry {
        stat: *stat,
        verified_at_ns: now_ns,
        ..entry.clone()
    };
    entry.stat != *stat || (!entry.stat_is_trustworthy() && fresh.stat_is_trustworthy())
}

/// What a sync tells the user about the files, decided with the plan.
#[derive(Debug, Default, PartialEq)]
pub struct Tally {
    /// Skills indexed for the first time.
    pub added: usize,
    /// Skills whose SKILL.md changed.
    pub updated: usize,
    /// Skills gone (or no longer indexable).
    pub removed: usize,
    /// Skills left as they were.
    pub unchanged: usize,
    /// Files that are not indexed, with the reason.
    pub skipped: Vec<Problem>,
    /// Skills indexed through a fallback, or flagged.
    pub warnings: Vec<Problem>,
}

/// The changes one sync makes to one profile.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Manifest entries to write.
    pub puts: Vec<(String, ManifestEntry)>,
    /// Manifest entries to delete.
    pub deletes: Vec<String>,
    /// Documents to remove.
    pub gone: Vec<u32>,
    /// Documents to add: (new id, index of the observation holding the skill), in id order
    /// (ids are handed out as documents are added).
    pub new: Vec<(u32, usize)>,
    /// The next unused document id after the new ones.
    pub next_doc: u32,
    /// Whether the configuration or the OS differ from the committed ones, so every
    /// document's offer must be decided again.
    pub config_changed: bool,
    /// What to report.
    pub tally: Tally,
}

impl Plan {
    /// Whether the sync has nothing to write.
    pub fn is_empty(&self) -> bool {
        self.puts.is_empty()
            && self.deletes.is_empty()
            && self.gone.is_empty()
            && self.new.is_empty()
            && !self.config_changed
    }

    /// Whether documents come or go, or their offers must be decided again.
    pub fn touches_documents(&self) -> bool {
        !self.gone.is_empty() || !self.new.is_empty() || self.config_changed
    }
}

/// Plans a sync: `base` is the commit the observations were made against, `current` the
/// one to change (the same unless another sync committed in between), `fresh` the stat
/// now (`None`: gone) of every key of [`conflicts`] between the two.
pub fn plan(
    base: &Committed,
    current: &Committed,
    observed: &[Observed],
    fresh: &FxHashMap<String, Option<FileStat>>,
    config: &ConfigSnapshot,
    os: &str,
    now_ns: i64,
) -> Plan {
    let mut plan = Plan {
        next_doc: current.stats.next_doc,
        config_changed: current.config.as_ref() != Some(config) || current.stats.os != os,
        ..Default::default()
    };
    let mut on_disk: FxHashSet<String> = FxHashSet::default();
    for (i, o) in observed.iter().enumerate() {
        let key = o.candidate.key();
        let seen = match &o.observation {
            Observation::Vanished => {
                plan.tally.skipped.push(Problem {
                    path: o.candidate.path.clone(),
                    reason: "deleted while the sync ran".into(),
                });
                None
            }
            obs => Some((&o.candidate.stat, obs)),
        };
        let cur = current.manifest.get(&key);
        let now = fresh.get(&key).map(Option::as_ref);
        let action = decide(base.manifest.get(&key), cur, seen, now, now_ns);
        if seen.is_some() {
            plan.report_present(&o.candidate.path, cur, &action);
        }
        plan.add(key.clone(), cur, action, i, now_ns);
        on_disk.insert(key);
    }
    let mut gone: Vec<(&String, &ManifestEntry)> = current
        .manifest
        .iter()
        .filter(|(k, _)| !on_disk.contains(*k))
        .collect();
    gone.sort_by(|a, b| a.0.cmp(b.0));
    for (key, cur) in gone {
        let now = fresh.get(key).map(Option::as_ref);
        let action = decide(base.manifest.get(key), Some(cur), None, now, now_ns);
        plan.add(key.clone(), Some(cur), action, usize::MAX, now_ns);
    }
    plan.tally.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    plan.tally.warnings.sort_by(|a, b| a.path.cmp(&b.path));
    plan
}

impl Plan {
    fn report_present(&mut self, path: &std::path::Path, cur: Option<&ManifestEntry>, a: &Action) {
        let state = match a {
            Action::Keep => cur.map(|c| &c.state),
            Action::Touch(e) => Some(&e.state),
            _ => None,
        };
        match state {
            Some(EntryState::Skipped(reason)) => self.tally.skipped.push(Problem {
                path: path.to_owned(),
                reason: reason.clone(),
            }),
            Some(EntryState::Indexed(_)) => self.tally.unchanged += 1,
            None => {}
        }
    }

    fn add(
        &mut self,
        key: String,
        cur: Option<&ManifestEntry>,
        action: Action,
        i: usize,
        now_ns: i64,
    ) {
        let cur_doc = cur.and_then(|c| match c.state {
            EntryState::Indexed(d) => Some(d),
            EntryState::Skipped(_) => None,
        });
        match action {
            Action::Keep => {}
            Action::Touch(entry) => self.puts.push((key, entry)),
            Action::Index { stat, hash, parsed } => {
                match cur_doc {
                    Some(d) => {
                        self.gone.push(d);
                        self.tally.updated += 1;
                    }
                    None => self.tally.added += 1,
                }
                for note in parsed.skill.notes.iter().chain(&parsed.skill.flags) {
                    self.tally.warnings.push(Problem {
                        path: PathBuf::from(&key),
                        reason: note.clone(),
                    });
                }
                let id = self.next_doc;
                self.next_doc += 1;
                self.new.push((id, i));
                let entry = ManifestEntry {
                    stat,
                    hash,
                    verified_at_ns: now_ns,
                    state: EntryState::Indexed(id),
                };
                self.puts.push((key, entry));
            }
            Action::Skip(entry) => {
                if let Some(d) = cur_doc {
                    self.gone.push(d);
                    self.tally.removed += 1;
                }
                if let EntryState::Skipped(reason) = &entry.state {
                    self.tally.skipped.push(Problem {
                        path: PathBuf::from(&key),
                        reason: reason.clone(),
                    });
                }
                self.puts.push((key, entry));
            }
            Action::Forget => {
                if let Some(d) = cur_doc {
                    self.gone.push(d);
                    self.tally.removed += 1;
                }
                self.deletes.push(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::Candidate;
    use crate::skill::{Location, Origin};
    use std::collections::BTreeMap;

    const SEC: i64 = 1_000_000_000;

    fn stat(t: i64) -> FileStat {
        FileStat {
            mtime_ns: t * SEC,
            ctime_ns: t * SEC,
            size: 10,
            ino: 1,
        }
    }

    fn entry(t: i64, hash: u8, state: EntryState) -> ManifestEntry {
        ManifestEntry {
            stat: stat(t),
            hash: [hash; 32],
            verified_at_ns: (t + 10) * SEC,
            state,
        }
    }

    fn parsed(name: &str) -> Parsed {
        let location = Location {
            origin: Origin::Local,
            rel: vec!["c".into(), name.into(), "SKILL.md".into()],
        };
        let skill = crate::skill::parse_text(
            &format!("---\nname: {name}\ndescription: about {name}\n---\nbody\n"),
            &location,
        );
        Parsed::new(skill)
    }

    fn changed(hash: u8) -> Observation {
        Observation::Changed {
            hash: [hash; 32],
            parsed: Box::new(parsed("x")),
        }
    }

    #[test]
    fn without_a_concurrent_commit_the_observation_decides() {
        let e = entry(1, 7, EntryState::Indexed(0));
        let now = 100 * SEC;
        let s = stat(1);
        assert!(matches!(
            decide(
                Some(&e),
                Some(&e),
                Some((&s, &Observation::StatUnchanged)),
                None,
                now
            ),
            Action::Keep
        ));
        assert!(matches!(
            decide(Some(&e), Some(&e), None, None, now),
            Action::Forget
        ));
        assert!(matches!(decide(None, None, None, None, now), Action::Keep));
        let c = changed(8);
        assert!(matches!(
            decide(Some(&e), Some(&e), Some((&stat(2), &c)), None, now),
            Action::Index { .. }
        ));
        let same = Observation::SameBytes { hash: [7; 32] };
        match decide(Some(&e), Some(&e), Some((&stat(3), &same)), None, now) {
            Action::Touch(t) => assert_eq!((t.stat, t.state), (stat(3), EntryState::Indexed(0))),
            other => panic!("{other:?}"),
        }
        let bad = Observation::Rejected {
            hash: [9; 32],
            reason: "binary".into(),
        };
        assert!(matches!(
            decide(Some(&e), Some(&e), Some((&stat(2), &bad)), None, now),
            Action::Skip(_)
        ));
    }

    #[test]
    fn after_a_concurrent_commit_the_file_as_it_is_now_decides() {
        let now = 100 * SEC;
        let base = entry(1, 1, EntryState::Indexed(0));
        let theirs = entry(2, 2, EntryState::Indexed(5));
        let ours = changed(3);
        // The file still has the stat we read it under: ours.
        assert!(matches!(
            decide(
                Some(&base),
                Some(&theirs),
                Some((&stat(3), &ours)),
                Some(Some(&stat(3))),
                now
            ),
            Action::Index { .. }
        ));
        // It has theirs: theirs.
        assert!(matches!(
            decide(
                Some(&base),
                Some(&theirs),
                Some((&stat(3), &ours)),
                Some(Some(&stat(2))),
                now
            ),
            Action::Keep
        ));
        // Neither: theirs, untrusted, so the next sync reads it again.
        match decide(
            Some(&base),
            Some(&theirs),
            Some((&stat(3), &ours)),
            Some(Some(&stat(4))),
            now,
        ) {
            Action::Touch(t) => {
                assert_eq!(t.verified_at_ns, UNTRUSTED);
                assert_eq!(t.state, theirs.state);
            }
            other => panic!("{other:?}"),
        }
        // Gone now: whatever they recorded is forgotten.
        assert!(matches!(
            decide(
                Some(&base),
                Some(&theirs),
                Some((&stat(3), &ours)),
                Some(None),
                now
            ),
            Action::Forget
        ));
        // We saw it unchanged; they indexed new bytes: keep theirs.
        assert!(matches!(
            decide(
                Some(&base),
                Some(&theirs),
                Some((&stat(1), &Observation::StatUnchanged)),
                Some(Some(&stat(2))),
                now
            ),
            Action::Keep
        ));
        // They removed it, it is gone: nothing to bring back.
        assert!(matches!(
            decide(
                Some(&base),
                None,
                Some((&stat(1), &Observation::StatUnchanged)),
                Some(None),
                now
            ),
            Action::Keep
        ));
        // They added it with the bytes we read too: theirs stands, no second document.
        let same = changed(2);
        assert!(matches!(
            decide(
                None,
                Some(&theirs),
                Some((&stat(2), &same)),
                Some(Some(&stat(2))),
                now
            ),
            Action::Keep
        ));
        // A rebuild gave the same look a new id: not a conflict, the usual rules apply.
        let rebuilt = entry(1, 1, EntryState::Indexed(9));
        assert!(matches!(
            decide(
                Some(&base),
                Some(&rebuilt),
                Some((&stat(1), &Observation::StatUnchanged)),
                None,
                now
            ),
            Action::Keep
        ));
    }

    /// A model of syncs over a model disk: files are (stat, content) and every sync
    /// observes them as `observe` does, plans, and applies the plan to the model store.
    struct Model {
        disk: BTreeMap<String, (FileStat, u8)>,
        clock: i64,
        rng: u64,
    }

    impl Model {
        fn rand(&mut self, n: u64) -> u64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            self.rng % n
        }

        fn mutate(&mut self) {
            self.clock += 1;
            let key = format!("/h/skills/c/s{}/SKILL.md", self.rand(6));
            match self.rand(3) {
                0 => {
                    self.disk.remove(&key);
                }
                _ => {
                    let content = self.rand(4) as u8;
                    let s = FileStat {
                        ino: self.clock as u64,
                        ..stat(self.clock)
                    };
                    self.disk.insert(key, (s, content));
                }
            }
        }

        fn observe(&self, base: &Committed) -> Vec<Observed> {
            self.disk
                .iter()
                .map(|(key, (s, content))| {
                    let name = key.split('/').nth(4).unwrap_or("x").to_owned();
                    let candidate = Candidate {
                        path: key.into(),
                        location: Location {
                            origin: Origin::Local,
                            rel: vec!["c".into(), name.clone(), "SKILL.md".into()],
                        },
                        stat: *s,
                        link_bounds: None,
                    };
                    let hash = [*content; 32];
                    let observation = match base.manifest.get(key) {
                        Some(p) if p.stat == *s && p.stat_is_trustworthy() => {
                            Observation::StatUnchanged
                        }
                        Some(p) if p.hash == hash => Observation::SameBytes { hash },
                        _ => Observation::Changed {
                            hash,
                            parsed: Box::new(parsed(&name)),
                        },
                    };
                    Observed {
                        candidate,
                        observation,
                    }
                })
                .collect()
        }

        fn fresh(
            &self,
            base: &Committed,
            current: &Committed,
        ) -> FxHashMap<String, Option<FileStat>> {
            conflicts(base, current)
                .into_iter()
                .map(|k| {
                    let s = self.disk.get(&k).map(|(s, _)| *s);
                    (k, s)
                })
                .collect()
        }

        fn now(&self) -> i64 {
            (self.clock + 5) * SEC
        }
    }

    fn apply(mut c: Committed, plan: &Plan) -> Committed {
        let live: FxHashSet<u32> = c
            .manifest
            .values()
            .filter_map(|e| match e.state {
                EntryState::Indexed(d) => Some(d),
                EntryState::Skipped(_) => None,
            })
            .collect();
        for d in &plan.gone {
            assert!(
                live.contains(d),
                "removing document {d}, which is not committed"
            );
        }
        for (id, _) in &plan.new {
            assert!(*id >= c.stats.next_doc, "new id {id} reuses an old one");
        }
        for (k, e) in &plan.puts {
            c.manifest.insert(k.clone(), e.clone());
        }
        for k in &plan.deletes {
            c.manifest.remove(k);
        }
        c.stats.next_doc = plan.next_doc;
        c.stats.generation += 1;
        c.config = Some(ConfigSnapshot::default());
        c.stats.os = "linux".into();
        let mut ids = FxHashSet::default();
        for e in c.manifest.values() {
            if let EntryState::Indexed(d) = e.state {
                assert!(ids.insert(d), "document {d} owned by two manifest entries");
            }
        }
        c
    }

    /// A sync with no other sync in between: observe against the commit, plan against it.
    fn plan_alone(m: &Model, c: &Committed) -> Plan {
        let observed = m.observe(c);
        let none = FxHashMap::default();
        plan(
            c,
            c,
            &observed,
            &none,
            &ConfigSnapshot::default(),
            "linux",
            m.now(),
        )
    }

    fn sync(m: &Model, c: Committed) -> Committed {
        let p = plan_alone(m, &c);
        apply(c, &p)
    }

    fn converged(m: &Model, c: &Committed) -> bool {
        let p = plan_alone(m, c);
        let mut keys: Vec<&String> = c.manifest.keys().collect();
        keys.sort();
        p.is_empty()
            && keys == m.disk.keys().collect::<Vec<_>>()
            && c.manifest.iter().all(|(k, e)| e.hash == [m.disk[k].1; 32])
    }

    #[test]
    fn two_syncs_in_any_order_never_duplicate_and_the_next_syncs_converge() {
        for seed in 1..400u64 {
            let mut m = Model {
                disk: BTreeMap::new(),
                clock: 0,
                rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            };
            for _ in 0..4 {
                m.mutate();
            }
            let mut committed = sync(&m, Committed::default());
            for _ in 0..6 {
                // A observes, the disk changes, B observes and commits, the disk may change
                // again, then A plans against B's commit with the file stats of that moment.
                let base_a = committed.clone();
                let observed_a = m.observe(&base_a);
                for _ in 0..m.rand(3) {
                    m.mutate();
                }
                let after_b = sync(&m, base_a.clone());
                let later = m.rand(2);
                for _ in 0..later {
                    m.mutate();
                }
                let fresh = m.fresh(&base_a, &after_b);
                let p = plan(
                    &base_a,
                    &after_b,
                    &observed_a,
                    &fresh,
                    &ConfigSnapshot::default(),
                    "linux",
                    m.now(),
                );
                committed = apply(after_b.clone(), &p);
                if later == 0 {
                    // Nothing changed after B looked: wherever B recorded news, A, which
                    // looked earlier, must leave B's look (every edit visible after B).
                    for k in conflicts(&base_a, &after_b) {
                        let view = |c: &Committed| c.manifest.get(&k).map(|e| (e.stat, e.hash));
                        assert_eq!(
                            view(&committed),
                            view(&after_b),
                            "seed {seed}: A's older look of {k} won"
                        );
                    }
                }
                m.clock += 3;
                let mut c = committed.clone();
                let mut rounds = 0;
                while !converged(&m, &c) {
                    rounds += 1;
                    if rounds > 2 {
                        let p = plan_alone(&m, &c);
                        panic!("seed {seed}: not converged after two syncs\ndisk {:?}\nmanifest {:?}\nplan {:?}", m.disk, c.manifest, p);
                    }
                    m.clock += 3;
                    c = sync(&m, c);
                }
            }
        }
    }
}
