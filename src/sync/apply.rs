//! Apply: write a [`Plan`] into the profile's tables, inside the sync's write transaction.
//!
//! Manifest entries are written and deleted as planned. When documents come or go, the
//! offers of the documents sharing a name with them are decided again (every document's,
//! when the configuration or OS changed or the `names` table is not in step; see
//! `docs/store.md`, "The name index"), and only the postings lists of the terms of
//! documents whose offer changed are rewritten, each read and written once. The statistics, the configuration snapshot and the per-platform
//! hidden lists are written last, with the generation one higher.

use super::observe::{Observation, Observed};
use super::plan::Plan;
use crate::fields::{Field, FieldStats, FIELD_COUNT};
use crate::forward;
use crate::offer::{self, PLUGIN_RANK};
use crate::postings::{self, Projection};
use crate::skill::Origin;
use crate::store::records::*;
use crate::store::{self, decode, decode_head, encode, ProfileTables, Store, StoreError};
use redb::{ReadableTable, ReadableTableMetadata, WriteTransaction};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// What a commit will leave behind, for the report.
#[derive(Debug, Default)]
pub struct Applied {
    /// The profile's generation after the commit.
    pub generation: u64,
    /// Documents offered.
    pub active: usize,
    /// Documents indexed but not offered.
    pub inactive: usize,
}

/// Writes `plan` into `txn`. `stats` are the statistics committed now (the plan's
/// `current`), `observed` the observations the plan's new documents point into.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    store: &Store,
    tables: &ProfileTables,
    txn: &WriteTransaction,
    mut plan: Plan,
    mut observed: Vec<Observed>,
    config: &ConfigSnapshot,
    os: &str,
    mut stats: CorpusStats,
    now_ns: i64,
    reading_rules: u64,
) -> Result<Applied, StoreError> {
    let err = |e: redb::Error| store.err(e);
    {
        let mut manifest = txn
            .open_table(tables.manifest())
            .map_err(|e| err(e.into()))?;
        plan.puts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let rows = plan
            .puts
            .iter()
            .map(|(key, entry)| (key.as_str(), encode(entry)));
        store::insert_sorted(&mut manifest, rows).map_err(err)?;
        for key in &plan.deletes {
            manifest.remove(key.as_str()).map_err(|e| err(e.into()))?;
        }
    }
    // Written: a full build's entries (a path and a stat each) are given back before its
    // documents are.
    (plan.puts, plan.deletes) = (Vec::new(), Vec::new());
    let mut state = txn.open_table(tables.state()).map_err(|e| err(e.into()))?;
    // The seed projections are kept in step by every sync of this build; only a commit by
    // an older build (schema 6) leaves them behind, and then they are written afresh.
    let seed_stamp: Option<u64> = store::get_lenient(store, &state, SEED_GENERATION)?;
    let empty = |table| -> Result<bool, StoreError> {
        let t = txn.open_table(table).map_err(|e| err(e.into()))?;
        t.is_empty().map_err(|e| err(e.into()))
    };
    let seed_in_step = seed_stamp == Some(stats.generation)
        || (empty(tables.postings())? && empty(tables.seed())?);
    stats.next_doc = plan.next_doc;
    if plan.touches_documents() {
        let mut docs = Documents {
            store,
            txn,
            tables,
            remove: FxHashMap::default(),
            add: FxHashMap::default(),
        };
        let new = take_new(&plan, &mut observed);
        // What is left of the observations (paths, stats) is read no more.
        drop(observed);
        let committed_rules: Option<OfferRules> = store::get_lenient(store, &state, "offer_rules")?;
        let config_changed = plan.config_changed;
        let rules = docs.apply(
            plan.gone,
            new,
            config,
            os,
            &mut stats,
            config_changed,
            committed_rules,
        )?;
        state
            .insert("offer_rules", encode(&rules).as_slice())
            .map_err(|e| err(e.into()))?;
        state.remove("platform_hidden").map_err(|e| err(e.into()))?;
        docs.flush_postings()?;
    } else {
        // The documents are unchanged: the names table stays in step if it was.
        let mut names = txn.open_table(tables.names()).map_err(|e| err(e.into()))?;
        let stamp: Option<u64> = store::get_lenient(store, &names, NAMES_GENERATION)?;
        if stamp == Some(stats.generation) {
            names
                .insert(NAMES_GENERATION, encode(&(stats.generation + 1)).as_slice())
                .map_err(|e| err(e.into()))?;
        }
    }
    stats.generation += 1;
    if !seed_in_step {
        store::project_seed(store, txn, tables)?;
    }
    state
        .insert(SEED_GENERATION, encode(&stats.generation).as_slice())
        .map_err(|e| err(e.into()))?;
    stats.synced_at_ns = now_ns;
    stats.os = os.to_owned();
    state
        .insert("stats", encode(&stats).as_slice())
        .map_err(|e| err(e.into()))?;
    state
        .insert("config", encode(config).as_slice())
        .map_err(|e| err(e.into()))?;
    state
        .insert(RULES_VERSION_KEY, encode(&reading_rules).as_slice())
        .map_err(|e| err(e.into()))?;
    let total = txn
        .open_table(tables.docs())
        .map_err(|e| err(e.into()))?
        .len()
        .map_err(|e| err(e.into()))? as usize;
    Ok(Applied {
        generation: stats.generation,
        active: stats.docs as usize,
        inactive: total.saturating_sub(stats.docs as usize),
    })
}

/// What the apply phase writes for a new document besides its head and forward index.
struct NewRecords {
    body: DocBody,
    /// Its name and description in word order, encoded (the `words` table).
    words: Vec<u8>,
}

/// The postings of `docs` (id, field lengths, encoded forward index), in id order, per
/// term.
fn postings_of(
    docs: &[(u32, [u32; FIELD_COUNT], &[u8])],
) -> Result<FxHashMap<String, postings::Builder>, (u32, forward::CodecError)> {
    let mut lists: FxHashMap<String, postings::Builder> = FxHashMap::default();
    for &(id, lens, bytes) in docs {
        forward::visit(bytes, &lens, |term, stats| {
            push_posting(&mut lists, id, term, stats)
        })
        .map_err(|e| (id, e))?;
    }
    Ok(lists)
}

/// Appends `doc`'s entry to `term`'s list in `lists`; the term's text is copied only for a
/// term not seen before.
fn push_posting(
    lists: &mut FxHashMap<String, postings::Builder>,
    doc: u32,
    term: &str,
    stats: &FieldStats,
) {
    match lists.get_mut(term) {
        Some(list) => list.push(doc, stats),
        None => {
            let mut list = postings::Builder::default();
            list.push(doc, stats);
            lists.insert(term.to_owned(), list);
        }
    }
}

/// The documents the plan adds, moved out of their observations.
struct NewDocs {
    heads: Vec<(u32, DocHead)>,
    /// Their other records, in id order (the plan's), each to be taken once.
    records: Vec<(u32, Option<NewRecords>)>,
    /// Their forward indexes, encoded, in the same order as `records`: read by the writer
    /// and, at the same time, by the thread that builds their postings.
    forwards: Vec<Vec<u8>>,
}

/// Moves the parsed skills the plan adds out of their observations.
fn take_new(plan: &Plan, observed: &mut [Observed]) -> NewDocs {
    let mut heads = Vec::with_capacity(plan.new.len());
    let mut records = Vec::with_capacity(plan.new.len());
    let mut forwards = Vec::with_capacity(plan.new.len());
    debug_assert!(plan.new.windows(2).all(|w| w[0].0 < w[1].0));
    for &(id, i) in &plan.new {
        let o = &mut observed[i];
        let Observation::Changed { parsed, .. } =
            std::mem::replace(&mut o.observation, Observation::Vanished)
        else {
            continue;
        };
        let key = o.candidate.key();
        let rank = match &o.candidate.location.origin {
            Origin::Local => 0,
            Origin::External(i) => 1 + i,
            Origin::Plugin(_) => PLUGIN_RANK,
        };
        let folder = o.candidate.location.folder();
        let super::observe::Parsed {
            skill,
            lens,
            forward,
            words,
        } = *parsed;
        heads.push((
            id,
            DocHead {
                id: skill.id,
                name: skill.name,
                dir_name: skill.dir_name,
                folder,
                category: skill.category.clone(),
                rank,
                key,
                platforms: skill.platforms.clone(),
                environments: skill.environments,
                has_environments: skill.has_environments,
                conditions: skill.conditions,
                lens,
                inactive: None,
            },
        ));
        forwards.push(forward);
        records.push((
            id,
            Some(NewRecords {
                body: DocBody {
                    category: skill.category,
                    description: skill.description,
                    origin: o.candidate.location.origin.clone(),
                    platforms: skill.platforms,
                    triggers: skill.triggers,
                    tags: skill.tags,
                    notes: skill.notes,
                    flags: skill.flags,
                },
                words,
            }),
        ));
    }
    NewDocs {
        heads,
        records,
        forwards,
    }
}

/// The document tables and the postings changes queued while they are updated.
struct Documents<'t> {
    store: &'t Store,
    txn: &'t WriteTransaction,
    tables: &'t ProfileTables,
    /// Postings to take out, per term.
    remove: FxHashMap<String, FxHashSet<u32>>,
    /// Postings to put in, per term, held encoded (a full build queues millions).
    add: FxHashMap<String, postings::Builder>,
}

impl Documents<'_> {
    fn err(&self, e: impl Into<redb::Error>) -> StoreError {
        self.store.err(e.into())
    }

    /// Removes `gone`, inserts `new`, decides offers and ids again and queues the postings
    /// changes; returns the offer rules left for the session.
    ///
    /// When the configuration and OS are unchanged and the `names` table is in step with
    /// the committed generation, only the documents that share a frontmatter name with a
    /// changed one (or carry a changed one's name as their folder name) are decided again:
    /// a document's id depends only on the documents carrying its name, and its offer only
    /// on itself and the clash group of its name, so every other decision stands. Otherwise
    /// every document head is read and decided ([`offer::decide`]) and the table rebuilt.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        gone: Vec<u32>,
        new: NewDocs,
        config: &ConfigSnapshot,
        os: &str,
        stats: &mut CorpusStats,
        config_changed: bool,
        committed_rules: Option<OfferRules>,
    ) -> Result<OfferRules, StoreError> {
        let mut docs = self
            .txn
            .open_table(self.tables.docs())
            .map_err(|e| self.err(e))?;
        let mut terms = self
            .txn
            .open_table(self.tables.terms())
            .map_err(|e| self.err(e))?;
        let mut words = self
            .txn
            .open_table(self.tables.words())
            .map_err(|e| self.err(e))?;
        let mut names = self
            .txn
            .open_table(self.tables.names())
            .map_err(|e| self.err(e))?;
        let stamp: Option<u64> = store::get_lenient(self.store, &names, NAMES_GENERATION)?;
        let names_valid = stamp == Some(stats.generation);
        let incremental = names_valid && !config_changed && committed_rules.is_some();

        // The heads to decide: every document's, or those sharing a name with a change.
        let mut heads: BTreeMap<u32, DocHead> = BTreeMap::new();
        let mut gone_heads: Vec<(u32, DocHead)> = Vec::with_capacity(gone.len());
        if incremental {
            for &d in &gone {
                if let Some(v) = docs.get(d).map_err(|e| self.err(e))? {
                    gone_heads.push((d, decode_head(self.store, v.value())?));
                }
            }
        } else {
            for row in docs.iter().map_err(|e| self.err(e))? {
                let (k, v) = row.map_err(|e| self.err(e))?;
                heads.insert(k.value(), decode_head(self.store, v.value())?);
            }
            for &d in &gone {
                if let Some(h) = heads.remove(&d) {
                    gone_heads.push((d, h));
                }
            }
        }
        // The names of the changed documents: only documents carrying one of them can see
        // their id or offer change. Read only where the names table is kept incrementally or
        // documents are decided again in part; a full build needs none of them.
        let mut changed_names: FxHashSet<String> = FxHashSet::default();
        if names_valid || incremental {
            for h in gone_heads
                .iter()
                .map(|(_, h)| h)
                .chain(new.heads.iter().map(|(_, h)| h))
            {
                changed_names.insert(h.name.clone());
                changed_names.insert(h.dir_name.clone());
            }
        }

        // Keep the names table in step: incrementally when it is, else rebuilt.
        let mut name_rows: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        if names_valid {
            for n in &changed_names {
                let key = name_key(n);
                let list: Vec<u32> = match names.get(key.as_str()).map_err(|e| self.err(e))? {
                    Some(v) => decode(self.store, v.value(), "name index")?,
                    None => Vec::new(),
                };
                name_rows.insert(key, list);
            }
            for (d, h) in &gone_heads {
                for n in [&h.name, &h.dir_name] {
                    if let Some(list) = name_rows.get_mut(&name_key(n)) {
                        list.retain(|x| x != d);
                    }
                }
            }
            for (d, h) in &new.heads {
                for n in [&h.name, &h.dir_name] {
                    let list = name_rows.entry(name_key(n)).or_default();
                    if let Err(at) = list.binary_search(d) {
                        list.insert(at, *d);
                    }
                }
            }
        } else {
            names.retain(|_, _| false).map_err(|e| self.err(e))?;
            for (d, h) in heads.iter().chain(new.heads.iter().map(|(d, h)| (d, h))) {
                for n in [&h.name, &h.dir_name] {
                    let list = name_rows.entry(name_key(n)).or_default();
                    if list.last() != Some(d) {
                        list.push(*d);
                    }
                }
            }
            for list in name_rows.values_mut() {
                list.sort_unstable();
                list.dedup();
            }
        }
        for (key, _) in name_rows.iter().filter(|(_, list)| list.is_empty()) {
            names.remove(key.as_str()).map_err(|e| self.err(e))?;
        }
        let rows = name_rows
            .iter()
            .filter(|(_, list)| !list.is_empty())
            .map(|(key, list)| (key.as_str(), encode(list)));
        store::insert_sorted(&mut names, rows).map_err(|e| self.err(e))?;
        names
            .insert(NAMES_GENERATION, encode(&(stats.generation + 1)).as_slice())
            .map_err(|e| self.err(e))?;

        if incremental {
            let new_ids: FxHashSet<u32> = new.heads.iter().map(|(d, _)| *d).collect();
            let mut wanted: Vec<u32> = name_rows
                .values()
                .flatten()
                .copied()
                .filter(|d| !new_ids.contains(d))
                .collect();
            wanted.sort_unstable();
            wanted.dedup();
            for d in wanted {
                if let Some(v) = docs.get(d).map_err(|e| self.err(e))? {
                    heads.insert(d, decode_head(self.store, v.value())?);
                }
            }
        }
        drop(name_rows);

        // Take the gone documents out.
        for (d, head) in &gone_heads {
            if head.inactive.is_none() {
                let t = store::read_terms(self.store, &terms, *d, &head.lens)?;
                self.queue_remove(*d, &t);
                if incremental {
                    stats.docs -= 1;
                    for (sum, len) in stats.sum_lens.iter_mut().zip(head.lens) {
                        *sum -= u64::from(len);
                    }
                }
            }
        }
        for &d in &gone {
            docs.remove(d).map_err(|e| self.err(e))?;
            terms.remove(d).map_err(|e| self.err(e))?;
            words.remove(d).map_err(|e| self.err(e))?;
        }
        // The new heads join the others, moved rather than copied (a full build holds
        // every document here); the walk below takes each new document's records once, so
        // it frees them as it goes.
        let NewDocs {
            heads: new_heads,
            records: mut new_records,
            forwards,
        } = new;
        if heads.is_empty() {
            // Built at once, the map's nodes are full; filled by inserts in key order, they
            // would be about half empty (a full build's 90k heads).
            heads = new_heads.into_iter().collect();
        } else {
            heads.extend(new_heads);
        }

        let decided = offer::decide(&heads, config, os);
        // In the incremental case, the decisions that stand: those of documents whose
        // name is a changed one (the others were read only to count carriers).
        let counts = |h: &DocHead| !incremental || changed_names.contains(&h.name);
        if !incremental {
            stats.docs = 0;
            stats.sum_lens = [0u64; FIELD_COUNT];
        }
        // The new documents that will be offered: their postings are built on a second
        // thread while this one writes the records (a full build's two biggest serial
        // steps). A new document is always decided again, so its decision is final here.
        let offered: Vec<(u32, [u32; FIELD_COUNT], &[u8])> = new_records
            .iter()
            .zip(&forwards)
            .filter(|((id, _), _)| !decided.inactive.contains_key(id))
            .filter_map(|((id, _), f)| heads.get(id).map(|h| (*id, h.lens, f.as_slice())))
            .collect();
        // A failed write returns out of the scope, which still waits for the builder.
        let built = std::thread::scope(|scope| -> Result<_, StoreError> {
            let builder = scope.spawn(|| postings_of(&offered));
            for (id, head) in heads.iter_mut() {
                if !counts(head) {
                    continue;
                }
                let now = decided.inactive.get(id).cloned();
                let new_id = decided
                    .ids
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| head.id.clone());
                // The statistics: recounted in full, or adjusted for each flip.
                let added = new_records.binary_search_by_key(id, |(d, _)| *d).ok();
                let was_active = added.is_none() && head.inactive.is_none();
                let delta = match (incremental, was_active, now.is_none()) {
                    (false, _, true) | (true, false, true) => Some(true),
                    (true, true, false) => Some(false),
                    _ => None,
                };
                if let Some(add) = delta {
                    if add {
                        stats.docs += 1;
                    } else {
                        stats.docs -= 1;
                    }
                    for (sum, len) in stats.sum_lens.iter_mut().zip(head.lens) {
                        if add {
                            *sum += u64::from(len);
                        } else {
                            *sum -= u64::from(len);
                        }
                    }
                }
                if let Some(at) = added {
                    let Some(doc) = new_records[at].1.take() else {
                        continue;
                    };
                    head.inactive = now;
                    head.id = new_id;
                    docs.insert(*id, encode(&(&*head, &doc.body)).as_slice())
                        .map_err(|e| self.err(e))?;
                    terms
                        .insert(*id, forwards[at].as_slice())
                        .map_err(|e| self.err(e))?;
                    words
                        .insert(*id, doc.words.as_slice())
                        .map_err(|e| self.err(e))?;
                    continue;
                }
                if head.inactive == now && head.id == new_id {
                    continue;
                }
                if head.inactive.is_none() != now.is_none() {
                    let t = store::read_terms(self.store, &terms, *id, &head.lens)?;
                    if now.is_none() {
                        for (term, stats) in &t {
                            self.queue_add(*id, term, stats);
                        }
                    } else {
                        self.queue_remove(*id, &t);
                    }
                }
                head.inactive = now;
                head.id = new_id;
                let bytes = docs
                    .get(*id)
                    .map_err(|e| self.err(e))?
                    .map(|v| v.value().to_vec());
                if let Some(bytes) = bytes {
                    let (_, rest) = postcard::take_from_bytes::<DocHead>(&bytes)
                        .map_err(|e| self.store.bad_record(format!("document {id}: {e}")))?;
                    let body: DocBody = decode(self.store, rest, "document body")?;
                    docs.insert(*id, encode(&(&*head, &body)).as_slice())
                        .map_err(|e| self.err(e))?;
                }
            }
            Ok(builder
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        })?;
        let mut built =
            built.map_err(|(id, e)| self.store.bad_record(format!("document {id}: {e}")))?;
        // The larger map takes the smaller's lists (a full build's are all the thread's), so
        // no map is rebuilt entry by entry beside the one it copies.
        if built.len() > self.add.len() {
            std::mem::swap(&mut built, &mut self.add);
        }
        for (term, list) in built {
            match self.add.get_mut(term.as_str()) {
                Some(queued) => queued.extend(list),
                None => {
                    self.add.insert(term, list);
                }
            }
        }
        if !incremental {
            return Ok(decided.rules);
        }
        // Merge: the committed rules of every document not decided again, then the new
        // decisions of those that were.
        let committed = committed_rules.unwrap_or_default();
        let decided_docs: FxHashSet<u32> = heads
            .iter()
            .filter(|(_, h)| counts(h))
            .map(|(d, _)| *d)
            .collect();
        let gone_set: FxHashSet<u32> = gone.iter().copied().collect();
        let redo = |d: u32| decided_docs.contains(&d) || gone_set.contains(&d);
        let mut rules = OfferRules {
            docs: committed
                .docs
                .into_iter()
                .filter(|r| !redo(r.doc))
                .chain(
                    decided
                        .rules
                        .docs
                        .into_iter()
                        .filter(|r| decided_docs.contains(&r.doc)),
                )
                .collect(),
            clashes: committed
                .clashes
                .into_iter()
                .filter(|g| !g.iter().any(|m| redo(m.doc)))
                .chain(
                    decided
                        .rules
                        .clashes
                        .into_iter()
                        .filter(|g| g.iter().all(|m| decided_docs.contains(&m.doc))),
                )
                .collect(),
        };
        rules.docs.sort_by_key(|r| r.doc);
        Ok(rules)
    }

    fn queue_remove(&mut self, doc: u32, terms: &[TermEntry]) {
        for (t, _) in terms {
            match self.remove.get_mut(t.as_str()) {
                Some(docs) => {
                    docs.insert(doc);
                }
                None => {
                    self.remove.insert(t.clone(), FxHashSet::from_iter([doc]));
                }
            }
        }
    }

    fn queue_add(&mut self, doc: u32, term: &str, stats: &FieldStats) {
        push_posting(&mut self.add, doc, term, stats);
    }

    /// Writes the queued postings changes, and with every list written, its seed
    /// projection (the `seed` table).
    fn flush_postings(&mut self) -> Result<(), StoreError> {
        let mut table = self
            .txn
            .open_table(self.tables.postings())
            .map_err(|e| self.err(e))?;
        let mut seed = self
            .txn
            .open_table(self.tables.seed())
            .map_err(|e| self.err(e))?;
        if self.remove.is_empty() && table.is_empty().map_err(|e| self.err(e))? {
            // A first build: every list is new, none to read back or merge.
            let mut lists: Vec<(String, postings::Builder)> = self.add.drain().collect();
            lists.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let projections = lists.iter().filter_map(|(term, list)| {
                Projection::of_builder(Field::Seed, list).map(|p| (term.as_str(), p))
            });
            store::insert_sorted(&mut seed, projections).map_err(|e| self.err(e))?;
            let rows = lists
                .iter_mut()
                .map(|(term, list)| (term.as_str(), std::mem::take(list).finish()));
            return store::insert_sorted(&mut table, rows).map_err(|e| self.err(e));
        }
        let mut touched: Vec<String> = self.remove.keys().chain(self.add.keys()).cloned().collect();
        touched.sort_unstable();
        touched.dedup();
        for term in touched {
            let new = self.add.remove(&term);
            let existing = table
                .get(term.as_str())
                .map_err(|e| self.err(e))?
                .map(|v| v.value().to_vec());
            let (projection, bytes) = match (existing, new) {
                // A new term: the queued list is the list.
                (None, Some(new)) => (Projection::of_builder(Field::Seed, &new), new.finish()),
                (existing, new) => {
                    let mut list = match existing {
                        Some(bytes) => postings::decode(&bytes).map_err(|e| {
                            self.store.bad_record(format!("postings of {term:?}: {e}"))
                        })?,
                        None => Vec::new(),
                    };
                    if let Some(gone) = self.remove.get(&term) {
                        list.retain(|p| !gone.contains(&p.doc));
                    }
                    if let Some(new) = new {
                        list.extend(new.postings());
                        list.sort_unstable_by_key(|p| p.doc);
                        list.dedup_by_key(|p| p.doc);
                    }
                    if list.is_empty() {
                        table.remove(term.as_str()).map_err(|e| self.err(e))?;
                        seed.remove(term.as_str()).map_err(|e| self.err(e))?;
                        continue;
                    }
                    (
                        Projection::of_postings(Field::Seed, &list),
                        postings::encode(&list),
                    )
                }
            };
            table
                .insert(term.as_str(), bytes.as_slice())
                .map_err(|e| self.err(e))?;
            match projection {
                Some(p) => seed.insert(term.as_str(), p.as_slice()),
                None => seed.remove(term.as_str()),
            }
            .map_err(|e| self.err(e))?;
        }
        self.remove.clear();
        Ok(())
    }
}
