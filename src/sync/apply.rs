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
use crate::offer;
use crate::postings::{self, Projection};
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

/// Where a plan is written: one profile's tables, in the sync's write transaction.
pub struct Target<'t> {
    /// The index.
    pub store: &'t Store,
    /// The profile's tables.
    pub tables: &'t ProfileTables,
    /// The sync's write transaction.
    pub txn: &'t WriteTransaction,
}

/// What a commit records beside the documents.
pub struct Context<'a> {
    /// The configuration the offers are decided for.
    pub config: &'a ConfigSnapshot,
    /// The OS the offers are decided for.
    pub os: &'a str,
    /// When the sync started.
    pub now_ns: i64,
    /// The reading rules the documents were made by (`sync::reading_rules`).
    pub reading_rules: u64,
}

/// Writes `plan` into the target. `stats` are the statistics committed now (the plan's
/// `current`), `observed` the observations the plan's new documents point into.
pub fn apply(
    to: &Target<'_>,
    mut plan: Plan,
    observed: Vec<Observed>,
    mut stats: CorpusStats,
    ctx: &Context<'_>,
) -> Result<Applied, StoreError> {
    write_manifest(to, &mut plan)?;
    let mut state = to
        .txn
        .open_table(to.tables.state())
        .map_err(|e| to.store.err(e))?;
    let seed_in_step = seed_in_step(to, &state, &stats)?;
    stats.next_doc = plan.next_doc;
    if plan.touches_documents() {
        write_documents(to, &mut state, plan, observed, ctx, &mut stats)?;
    } else {
        keep_names_in_step(to, &stats)?;
    }
    stats.generation += 1;
    if !seed_in_step {
        store::project_seed(to.store, to.txn, to.tables)?;
    }
    stats.synced_at_ns = ctx.now_ns;
    stats.os = ctx.os.to_owned();
    write_state(to, &mut state, &stats, ctx)?;
    let total = to
        .txn
        .open_table(to.tables.docs())
        .map_err(redb::Error::from)
        .and_then(|t| t.len().map_err(redb::Error::from))
        .map_err(|e| to.store.err(e))? as usize;
    Ok(Applied {
        generation: stats.generation,
        active: stats.docs as usize,
        inactive: total.saturating_sub(stats.docs as usize),
    })
}

/// The state table, open in the sync's transaction.
type StateTable<'t> = redb::Table<'t, &'static str, &'static [u8]>;

/// Removes the plan's gone documents and inserts its new ones, decides the offers again and
/// writes the postings: the part of a commit that documents coming or going make.
fn write_documents(
    to: &Target<'_>,
    state: &mut StateTable<'_>,
    plan: Plan,
    mut observed: Vec<Observed>,
    ctx: &Context<'_>,
    stats: &mut CorpusStats,
) -> Result<(), StoreError> {
    let mut docs = Documents {
        store: to.store,
        txn: to.txn,
        tables: to.tables,
        remove: FxHashMap::default(),
        add: FxHashMap::default(),
    };
    let new = take_new(&plan, &mut observed);
    // What is left of the observations (paths, stats) is read no more.
    drop(observed);
    let deciding = Deciding {
        config: ctx.config,
        os: ctx.os,
        config_changed: plan.config_changed,
        committed_rules: store::get_lenient(to.store, state, "offer_rules")?,
    };
    let rules = docs.apply(plan.gone, new, deciding, stats)?;
    state
        .insert("offer_rules", encode(&rules).as_slice())
        .map_err(|e| to.store.err(e))?;
    state
        .remove("platform_hidden")
        .map_err(|e| to.store.err(e))?;
    docs.flush_postings()
}

/// The rows a commit writes last: the statistics, the configuration and the reading rules.
fn write_state(
    to: &Target<'_>,
    state: &mut StateTable<'_>,
    stats: &CorpusStats,
    ctx: &Context<'_>,
) -> Result<(), StoreError> {
    let rows = [
        (SEED_GENERATION, encode(&stats.generation)),
        ("stats", encode(stats)),
        ("config", encode(ctx.config)),
        (RULES_VERSION_KEY, encode(&ctx.reading_rules)),
    ];
    for (key, value) in rows {
        state
            .insert(key, value.as_slice())
            .map_err(|e| to.store.err(e))?;
    }
    Ok(())
}

/// Writes and deletes the planned manifest entries, and gives them back: a full build's
/// entries (a path and a stat each) go before its documents do.
fn write_manifest(to: &Target<'_>, plan: &mut Plan) -> Result<(), StoreError> {
    let err = |e: redb::Error| to.store.err(e);
    let mut manifest = to
        .txn
        .open_table(to.tables.manifest())
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
    (plan.puts, plan.deletes) = (Vec::new(), Vec::new());
    Ok(())
}

/// Whether the seed projections are in step with the committed lists. Every sync of this
/// build keeps them so; only a commit by an older build (schema 6) leaves them behind, and
/// then they are written afresh.
fn seed_in_step(
    to: &Target<'_>,
    state: &redb::Table<&'static str, &'static [u8]>,
    stats: &CorpusStats,
) -> Result<bool, StoreError> {
    let stamp: Option<u64> = store::get_lenient(to.store, state, SEED_GENERATION)?;
    let empty = |table| -> Result<bool, StoreError> {
        let t = to.txn.open_table(table).map_err(|e| to.store.err(e))?;
        t.is_empty().map_err(|e| to.store.err(e))
    };
    Ok(stamp == Some(stats.generation)
        || (empty(to.tables.postings())? && empty(to.tables.seed())?))
}

/// The documents are unchanged: the names table stays in step if it was.
fn keep_names_in_step(to: &Target<'_>, stats: &CorpusStats) -> Result<(), StoreError> {
    let mut names = to
        .txn
        .open_table(to.tables.names())
        .map_err(|e| to.store.err(e))?;
    let stamp: Option<u64> = store::get_lenient(to.store, &names, NAMES_GENERATION)?;
    if stamp == Some(stats.generation) {
        names
            .insert(NAMES_GENERATION, encode(&(stats.generation + 1)).as_slice())
            .map_err(|e| to.store.err(e))?;
    }
    Ok(())
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
        if let Some((head, rest, forward)) = new_doc(&mut observed[i]) {
            heads.push((id, head));
            records.push((id, Some(rest)));
            forwards.push(forward);
        }
    }
    NewDocs {
        heads,
        records,
        forwards,
    }
}

/// One new document's head, other records and encoded forward index, moved out of its
/// observation (`None`: it was not read as changed).
fn new_doc(o: &mut Observed) -> Option<(DocHead, NewRecords, Vec<u8>)> {
    let Observation::Changed { parsed, .. } =
        std::mem::replace(&mut o.observation, Observation::Vanished)
    else {
        return None;
    };
    let super::observe::Parsed {
        skill,
        lens,
        forward,
        words,
    } = *parsed;
    let location = &o.candidate.location;
    let head = DocHead {
        id: skill.id,
        name: skill.name,
        dir_name: skill.dir_name,
        folder: location.folder(),
        category: skill.category.clone(),
        rank: crate::offer::rank_of(&location.origin),
        key: o.candidate.key(),
        platforms: skill.platforms.clone(),
        environments: skill.environments,
        has_environments: skill.has_environments,
        conditions: skill.conditions,
        lens,
        inactive: None,
    };
    let body = DocBody {
        category: skill.category,
        description: skill.description,
        origin: location.origin.clone(),
        platforms: skill.platforms,
        triggers: skill.triggers,
        tags: skill.tags,
        notes: skill.notes,
        flags: skill.flags,
    };
    Some((head, NewRecords { body, words }, forward))
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

/// The document tables a sync rewrites, open in its transaction.
struct DocTables<'t> {
    docs: redb::Table<'t, u32, &'static [u8]>,
    terms: redb::Table<'t, u32, &'static [u8]>,
    words: redb::Table<'t, u32, &'static [u8]>,
    names: redb::Table<'t, &'static str, &'static [u8]>,
}

/// What the documents' offers are decided against, and what was decided last.
struct Deciding<'a> {
    config: &'a ConfigSnapshot,
    os: &'a str,
    /// The configuration or the OS changed since the last commit.
    config_changed: bool,
    /// The offer rules committed, which stand for the documents not decided again.
    committed_rules: Option<OfferRules>,
}

/// How much of the profile a sync decides again.
struct Scope {
    /// The `names` table is in step with the committed generation.
    names_valid: bool,
    /// Only the documents carrying a changed document's name are decided again.
    incremental: bool,
    /// The names (frontmatter and folder) of the gone and new documents; empty when
    /// neither the names table nor the decisions are kept incrementally.
    changed_names: FxHashSet<String>,
}

impl Scope {
    /// The scope of a sync that removes `gone` and adds `new`.
    fn new(
        names_valid: bool,
        incremental: bool,
        gone: &[(u32, DocHead)],
        new: &[(u32, DocHead)],
    ) -> Scope {
        Scope {
            names_valid,
            incremental,
            changed_names: if names_valid || incremental {
                changed_names(gone, new)
            } else {
                FxHashSet::default()
            },
        }
    }

    /// Whether `head`'s decision is made by this sync (the others stand; in the
    /// incremental case they were read only to count a name's carriers).
    fn decides(&self, head: &DocHead) -> bool {
        !self.incremental || self.changed_names.contains(&head.name)
    }
}

/// The new documents' records other than their heads, in id order, with their forward
/// indexes (see [`NewDocs`]).
struct NewRest {
    records: Vec<(u32, Option<NewRecords>)>,
    forwards: Vec<Vec<u8>>,
}

/// One document's decision, as the sync writes it.
struct Decided {
    /// Why it is never offered (`None`: offered in some session).
    inactive: Option<NotOffered>,
    /// The id to load it by.
    id: String,
}

impl<'t> Documents<'t> {
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
    fn apply(
        &mut self,
        gone: Vec<u32>,
        new: NewDocs,
        deciding: Deciding<'_>,
        stats: &mut CorpusStats,
    ) -> Result<OfferRules, StoreError> {
        let mut t = self.open()?;
        let stamp: Option<u64> = store::get_lenient(self.store, &t.names, NAMES_GENERATION)?;
        let names_valid = stamp == Some(stats.generation);
        let incremental =
            names_valid && !deciding.config_changed && deciding.committed_rules.is_some();
        let (mut heads, gone_heads) = self.read_heads(&t.docs, &gone, incremental)?;
        let scope = Scope::new(names_valid, incremental, &gone_heads, &new.heads);
        let name_rows = self.keep_names(&mut t.names, &scope, &heads, &gone_heads, &new.heads)?;
        t.names
            .insert(NAMES_GENERATION, encode(&(stats.generation + 1)).as_slice())
            .map_err(|e| self.err(e))?;
        if incremental {
            self.read_carriers(&t.docs, &name_rows, &new.heads, &mut heads)?;
        }
        drop(name_rows);
        self.take_out(&mut t, &gone, &gone_heads, incremental, stats)?;

        // The writer takes each new document's records once, so it frees them as it goes.
        let NewDocs {
            heads: new_heads,
            records,
            forwards,
        } = new;
        join(&mut heads, new_heads);
        let decided = offer::decide(&heads, deciding.config, deciding.os);
        if !incremental {
            stats.docs = 0;
            stats.sum_lens = [0u64; FIELD_COUNT];
            stats.field_docs = [0u32; FIELD_COUNT];
        }
        let rest = NewRest { records, forwards };
        self.write_decisions(&mut t, &mut heads, rest, &decided, &scope, stats)?;
        if !incremental {
            return Ok(decided.rules);
        }
        let committed = deciding.committed_rules.unwrap_or_default();
        Ok(merge_rules(committed, decided.rules, &heads, &scope, &gone))
    }

    fn open(&self) -> Result<DocTables<'t>, StoreError> {
        let (txn, tables): (&'t WriteTransaction, &'t ProfileTables) = (self.txn, self.tables);
        let open = |def| txn.open_table(def).map_err(|e| self.err(e));
        Ok(DocTables {
            docs: open(tables.docs())?,
            terms: open(tables.terms())?,
            words: open(tables.words())?,
            names: txn.open_table(tables.names()).map_err(|e| self.err(e))?,
        })
    }

    /// The heads to decide (every document's, unless `incremental`: then none yet) and
    /// those of the `gone` documents.
    #[allow(clippy::type_complexity)]
    fn read_heads(
        &self,
        docs: &redb::Table<u32, &'static [u8]>,
        gone: &[u32],
        incremental: bool,
    ) -> Result<(BTreeMap<u32, DocHead>, Vec<(u32, DocHead)>), StoreError> {
        let mut heads: BTreeMap<u32, DocHead> = BTreeMap::new();
        let mut gone_heads: Vec<(u32, DocHead)> = Vec::with_capacity(gone.len());
        if incremental {
            for &d in gone {
                if let Some(v) = docs.get(d).map_err(|e| self.err(e))? {
                    gone_heads.push((d, decode_head(self.store, v.value())?));
                }
            }
            return Ok((heads, gone_heads));
        }
        for row in docs.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            heads.insert(k.value(), decode_head(self.store, v.value())?);
        }
        for &d in gone {
            if let Some(h) = heads.remove(&d) {
                gone_heads.push((d, h));
            }
        }
        Ok((heads, gone_heads))
    }

    /// Keeps the `names` table in step (incrementally when it is, else rebuilt from
    /// `heads` and the new ones); returns the rows it wrote, which name every carrier of a
    /// changed name.
    fn keep_names(
        &self,
        names: &mut redb::Table<&'static str, &'static [u8]>,
        scope: &Scope,
        heads: &BTreeMap<u32, DocHead>,
        gone_heads: &[(u32, DocHead)],
        new_heads: &[(u32, DocHead)],
    ) -> Result<BTreeMap<String, Vec<u32>>, StoreError> {
        let mut rows: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        if scope.names_valid {
            for n in &scope.changed_names {
                let key = name_key(n);
                let list: Vec<u32> = match names.get(key.as_str()).map_err(|e| self.err(e))? {
                    Some(v) => decode(self.store, v.value(), "name index")?,
                    None => Vec::new(),
                };
                rows.insert(key, list);
            }
            for (d, h) in gone_heads {
                for n in [&h.name, &h.dir_name] {
                    if let Some(list) = rows.get_mut(&name_key(n)) {
                        list.retain(|x| x != d);
                    }
                }
            }
            for (d, h) in new_heads {
                for n in [&h.name, &h.dir_name] {
                    let list = rows.entry(name_key(n)).or_default();
                    if let Err(at) = list.binary_search(d) {
                        list.insert(at, *d);
                    }
                }
            }
        } else {
            names.retain(|_, _| false).map_err(|e| self.err(e))?;
            for (d, h) in heads.iter().chain(new_heads.iter().map(|(d, h)| (d, h))) {
                for n in [&h.name, &h.dir_name] {
                    let list = rows.entry(name_key(n)).or_default();
                    if list.last() != Some(d) {
                        list.push(*d);
                    }
                }
            }
            for list in rows.values_mut() {
                list.sort_unstable();
                list.dedup();
            }
        }
        for (key, _) in rows.iter().filter(|(_, list)| list.is_empty()) {
            names.remove(key.as_str()).map_err(|e| self.err(e))?;
        }
        let encoded = rows
            .iter()
            .filter(|(_, list)| !list.is_empty())
            .map(|(key, list)| (key.as_str(), encode(list)));
        store::insert_sorted(names, encoded).map_err(|e| self.err(e))?;
        Ok(rows)
    }

    /// Reads into `heads` the head of every document that carries a changed name (in
    /// `name_rows`), other than the new ones.
    fn read_carriers(
        &self,
        docs: &redb::Table<u32, &'static [u8]>,
        name_rows: &BTreeMap<String, Vec<u32>>,
        new_heads: &[(u32, DocHead)],
        heads: &mut BTreeMap<u32, DocHead>,
    ) -> Result<(), StoreError> {
        let new_ids: FxHashSet<u32> = new_heads.iter().map(|(d, _)| *d).collect();
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
        Ok(())
    }

    /// Takes the gone documents out: their postings queued for removal (and, kept
    /// incrementally, their share of the statistics), their records deleted.
    fn take_out(
        &mut self,
        t: &mut DocTables<'_>,
        gone: &[u32],
        gone_heads: &[(u32, DocHead)],
        incremental: bool,
        stats: &mut CorpusStats,
    ) -> Result<(), StoreError> {
        for (d, head) in gone_heads {
            if head.inactive.is_none() {
                let terms = store::read_terms(self.store, &t.terms, *d, &head.lens)?;
                self.queue_remove(*d, &terms);
                if incremental {
                    stats.count(&head.lens, false);
                }
            }
        }
        for &d in gone {
            t.docs.remove(d).map_err(|e| self.err(e))?;
            t.terms.remove(d).map_err(|e| self.err(e))?;
            t.words.remove(d).map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Writes every decision this sync makes: the new documents' records, and the heads
    /// (and postings) of the others whose offer or id changed; keeps the statistics. The
    /// postings of the new documents that will be offered are built on a second thread
    /// while this one writes (a full build's two biggest serial steps).
    fn write_decisions(
        &mut self,
        t: &mut DocTables<'_>,
        heads: &mut BTreeMap<u32, DocHead>,
        rest: NewRest,
        decided: &offer::Decisions,
        scope: &Scope,
        stats: &mut CorpusStats,
    ) -> Result<(), StoreError> {
        let NewRest {
            mut records,
            forwards,
        } = rest;
        // A new document is always decided again, so its decision is final here.
        let offered: Vec<(u32, [u32; FIELD_COUNT], &[u8])> = records
            .iter()
            .zip(&forwards)
            .filter(|((id, _), _)| !decided.inactive.contains_key(id))
            .filter_map(|((id, _), f)| heads.get(id).map(|h| (*id, h.lens, f.as_slice())))
            .collect();
        // A failed write returns out of the scope, which still waits for the builder.
        let built = std::thread::scope(|threads| -> Result<_, StoreError> {
            let builder = threads.spawn(|| postings_of(&offered));
            for (id, head) in heads.iter_mut() {
                if !scope.decides(head) {
                    continue;
                }
                let now = Decided {
                    inactive: decided.inactive.get(id).cloned(),
                    id: decided
                        .ids
                        .get(id)
                        .cloned()
                        .unwrap_or_else(|| head.id.clone()),
                };
                let added = records.binary_search_by_key(id, |(d, _)| *d).ok();
                let was_active = added.is_none() && head.inactive.is_none();
                match (scope.incremental, was_active, now.inactive.is_none()) {
                    (false, _, true) | (true, false, true) => stats.count(&head.lens, true),
                    (true, true, false) => stats.count(&head.lens, false),
                    _ => {}
                }
                match added {
                    Some(at) => {
                        if let Some(doc) = records[at].1.take() {
                            self.write_new(t, *id, head, now, doc, &forwards[at])?;
                        }
                    }
                    None => self.rewrite(t, *id, head, now)?,
                }
            }
            Ok(builder
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        })?;
        let built =
            built.map_err(|(id, e)| self.store.bad_record(format!("document {id}: {e}")))?;
        self.queue_built(built);
        Ok(())
    }

    /// Writes a new document's records with its decision.
    fn write_new(
        &self,
        t: &mut DocTables<'_>,
        id: u32,
        head: &mut DocHead,
        now: Decided,
        doc: NewRecords,
        forward: &[u8],
    ) -> Result<(), StoreError> {
        head.inactive = now.inactive;
        head.id = now.id;
        t.docs
            .insert(id, encode(&(&*head, &doc.body)).as_slice())
            .map_err(|e| self.err(e))?;
        t.terms.insert(id, forward).map_err(|e| self.err(e))?;
        t.words
            .insert(id, doc.words.as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Rewrites a kept document's head when its decision changed, and queues its postings
    /// in or out when its offer flipped.
    fn rewrite(
        &mut self,
        t: &mut DocTables<'_>,
        id: u32,
        head: &mut DocHead,
        now: Decided,
    ) -> Result<(), StoreError> {
        if head.inactive == now.inactive && head.id == now.id {
            return Ok(());
        }
        if head.inactive.is_none() != now.inactive.is_none() {
            let terms = store::read_terms(self.store, &t.terms, id, &head.lens)?;
            if now.inactive.is_none() {
                for (term, stats) in &terms {
                    self.queue_add(id, term, stats);
                }
            } else {
                self.queue_remove(id, &terms);
            }
        }
        head.inactive = now.inactive;
        head.id = now.id;
        let bytes = t
            .docs
            .get(id)
            .map_err(|e| self.err(e))?
            .map(|v| v.value().to_vec());
        if let Some(bytes) = bytes {
            let (_, rest) = postcard::take_from_bytes::<DocHead>(&bytes)
                .map_err(|e| self.store.bad_record(format!("document {id}: {e}")))?;
            let body: DocBody = decode(self.store, rest, "document body")?;
            t.docs
                .insert(id, encode(&(&*head, &body)).as_slice())
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Queues the postings the builder thread made.
    fn queue_built(&mut self, mut built: FxHashMap<String, postings::Builder>) {
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
            return self.flush_first_build(&mut table, &mut seed);
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
                    let list = self.merged(&term, existing, new)?;
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

    /// A first build's postings: every list is new, none to read back or merge.
    fn flush_first_build(
        &mut self,
        table: &mut redb::Table<&'static str, &'static [u8]>,
        seed: &mut redb::Table<&'static str, &'static [u8]>,
    ) -> Result<(), StoreError> {
        let mut lists: Vec<(String, postings::Builder)> = self.add.drain().collect();
        lists.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let projections = lists.iter().filter_map(|(term, list)| {
            Projection::of_builder(Field::Seed, list).map(|p| (term.as_str(), p))
        });
        store::insert_sorted(seed, projections).map_err(|e| self.err(e))?;
        let rows = lists
            .iter_mut()
            .map(|(term, list)| (term.as_str(), std::mem::take(list).finish()));
        store::insert_sorted(table, rows).map_err(|e| self.err(e))
    }

    /// `term`'s stored list (`existing`, encoded) without the documents queued for
    /// removal and with the queued `new` postings, in document order.
    fn merged(
        &self,
        term: &str,
        existing: Option<Vec<u8>>,
        new: Option<postings::Builder>,
    ) -> Result<Vec<postings::Posting>, StoreError> {
        let mut list = match existing {
            Some(bytes) => postings::decode(&bytes)
                .map_err(|e| self.store.bad_record(format!("postings of {term:?}: {e}")))?,
            None => Vec::new(),
        };
        if let Some(gone) = self.remove.get(term) {
            list.retain(|p| !gone.contains(&p.doc));
        }
        if let Some(new) = new {
            list.extend(new.postings());
            list.sort_unstable_by_key(|p| p.doc);
            list.dedup_by_key(|p| p.doc);
        }
        Ok(list)
    }
}

/// The new heads join the others, moved rather than copied (a full build holds every
/// document here).
fn join(heads: &mut BTreeMap<u32, DocHead>, new: Vec<(u32, DocHead)>) {
    if heads.is_empty() {
        // Built at once, the map's nodes are full; filled by inserts in key order, they
        // would be about half empty (a full build's 90k heads).
        *heads = new.into_iter().collect();
    } else {
        heads.extend(new);
    }
}

/// The names (frontmatter and folder) of the gone and new documents.
fn changed_names(gone: &[(u32, DocHead)], new: &[(u32, DocHead)]) -> FxHashSet<String> {
    let mut names = FxHashSet::default();
    for (_, h) in gone.iter().chain(new) {
        names.insert(h.name.clone());
        names.insert(h.dir_name.clone());
    }
    names
}

/// The offer rules after an incremental decision: the committed rules of every document
/// not decided again (nor gone), then the new rules of those that were.
fn merge_rules(
    committed: OfferRules,
    decided: OfferRules,
    heads: &BTreeMap<u32, DocHead>,
    scope: &Scope,
    gone: &[u32],
) -> OfferRules {
    let decided_docs: FxHashSet<u32> = heads
        .iter()
        .filter(|(_, h)| scope.decides(h))
        .map(|(d, _)| *d)
        .collect();
    let gone: FxHashSet<u32> = gone.iter().copied().collect();
    let redo = |d: u32| decided_docs.contains(&d) || gone.contains(&d);
    let mut rules = OfferRules {
        docs: committed
            .docs
            .into_iter()
            .filter(|r| !redo(r.doc))
            .chain(
                decided
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
                    .clashes
                    .into_iter()
                    .filter(|g| g.iter().all(|m| decided_docs.contains(&m.doc))),
            )
            .collect(),
    };
    rules.docs.sort_by_key(|r| r.doc);
    rules
}
