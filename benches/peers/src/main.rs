//! Benchmark-only peers of skillidx, driven by `benches/compare.py`.
//!
//! - **tantivy** indexes the same documents skillidx offers (every SKILL.md found by
//!   [`skillidx::scan`], parsed by [`skillidx::skill::parse`], limited to this OS, the first of
//!   each id in precedence order) with the same text, the seed document
//!   ([`skillidx::skill::Skill::seed_text`]: `name: description` + triggers + tags + CJK runs),
//!   and the same terms: skillidx's tokenizer is registered as tantivy's tokenizer, and a query
//!   is the OR of its distinct terms ([`skillidx::search::query_terms`]). tantivy's BM25 differs
//!   slightly from skillidx's: `k1` is fixed at 1.2 (skillidx: 1.5), and document lengths are
//!   stored as one-byte "fieldnorms" (exact up to 40 tokens, then coarser), so scores — and a
//!   few near-tie rankings — differ. IDF is the same Lucene formula.
//! - **skillidx in process**: the same latency loop around [`skillidx::Index::search`], so the
//!   engines are timed by the same code: `skillidx` is the default ranking (BM25F over the
//!   analysed fields), `skillidx-seed` the seed ranking, which scores the very text and terms
//!   tantivy indexes here.
//!
//! ```text
//! skillidx-peers tantivy-build HOME INDEX_DIR
//! skillidx-peers tantivy-build-fields HOME INDEX_DIR
//! skillidx-peers tantivy-search INDEX_DIR QUERY
//! skillidx-peers latency (skillidx DB | skillidx-seed DB | tantivy INDEX_DIR) QUERIES_JSON [ITERS]
//! skillidx-peers freshness HOME [ITERS]
//! ```
//!
//! `tantivy-build-fields` is the like-for-like build for size, time and memory: the same
//! documents under all six of skillidx's fields ([`skillidx::analyze::field_texts`]: name,
//! description, keywords, category, the body's first 3,000 characters, and the seed
//! document), the seed field with the plain tokenizer and the others with the default
//! analyzer, frequencies indexed, id and description stored — what skillidx's index holds
//! for its default ranking. `tantivy-build` indexes the seed document alone.
//!
//! Every command prints one JSON object on stdout (`tantivy-search` prints the hits).

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde_json::{json, Value};
use skillidx::config::HermesConfig;
use skillidx::freshness::Freshness;
use skillidx::scan;
use skillidx::search::{query_terms, Ranking, SearchOptions};
use skillidx::skill;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value as _, STORED,
};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use tantivy::{doc, Index, IndexReader, ReloadPolicy, Searcher, TantivyDocument, Term};

/// How many hits a query asks for, as the plugin does.
const K: usize = 6;
/// The name under which skillidx's tokenizer is registered with tantivy.
const TOKENIZER: &str = "skillidx";
/// The name under which skillidx's default analyzer is registered with tantivy.
const ANALYZER: &str = "skillidx-analyzed";

fn main() {
    if let Err(e) = run(std::env::args().skip(1).collect()) {
        eprintln!("skillidx-peers: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let arg = |i: usize, what: &str| -> Result<&str> {
        args.get(i)
            .map(String::as_str)
            .with_context(|| format!("missing {what}; see the module docs for usage"))
    };
    let iters = |i: usize, default: usize| -> Result<usize> {
        args.get(i)
            .map(|s| s.parse().context("ITERS must be a number"))
            .unwrap_or(Ok(default))
    };
    let out = match arg(0, "command")? {
        "tantivy-build" => {
            tantivy_build(Path::new(arg(1, "HOME")?), Path::new(arg(2, "INDEX_DIR")?))?
        }
        "tantivy-build-fields" => {
            tantivy_build_fields(Path::new(arg(1, "HOME")?), Path::new(arg(2, "INDEX_DIR")?))?
        }
        "tantivy-search" => {
            let engine = Tantivy::open(Path::new(arg(1, "INDEX_DIR")?))?;
            let hits = engine.search(arg(2, "QUERY")?)?;
            json!({ "hits": hits })
        }
        "latency" => {
            let queries = Queries::load(Path::new(arg(3, "QUERIES_JSON")?))?;
            latency(
                arg(1, "ENGINE")?,
                Path::new(arg(2, "DB or INDEX_DIR")?),
                &queries,
                iters(4, 2000)?,
            )?
        }
        "freshness" => freshness(Path::new(arg(1, "HOME")?), iters(2, 2000)?)?,
        other => bail!("unknown command {other:?}; see the module docs for usage"),
    };
    println!("{out}");
    Ok(())
}

/// skillidx's tokenizer (or, `analyzed`, its default analyzer) as a tantivy tokenizer: the
/// same terms, in order. Offsets are not kept (positions are not indexed; only frequencies
/// are).
#[derive(Clone, Default)]
struct SkillidxTokenizer {
    analyzed: bool,
}

/// The terms of one text.
struct Terms {
    tokens: Vec<Token>,
    at: usize,
}

impl Tokenizer for SkillidxTokenizer {
    type TokenStream<'a> = Terms;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Terms {
        let mut tokens = Vec::new();
        let mut emit = |t: &str| {
            tokens.push(Token {
                position: tokens.len(),
                text: t.to_owned(),
                ..Token::default()
            })
        };
        if self.analyzed {
            skillidx::tokenize::analyze_with(text, &mut emit);
        } else {
            skillidx::tokenize::tokenize_with(text, &mut emit);
        }
        Terms { tokens, at: 0 }
    }
}

impl TokenStream for Terms {
    fn advance(&mut self) -> bool {
        self.at += 1;
        self.at <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.at - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.at - 1]
    }
}

/// The tantivy schema: the seed document (indexed with frequencies, not stored) and what a
/// hit shows (stored).
struct Fields {
    seed: Field,
    id: Field,
    description: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER)
        .set_index_option(IndexRecordOption::WithFreqs);
    let seed = b.add_text_field(
        "seed",
        TextOptions::default().set_indexing_options(indexing),
    );
    let id = b.add_text_field("id", STORED);
    let description = b.add_text_field("description", STORED);
    (
        b.build(),
        Fields {
            seed,
            id,
            description,
        },
    )
}

/// The skills skillidx offers for `home`'s default profile.
fn offered_skills(home: &Path) -> Result<Vec<skill::Skill>> {
    let newest = skillidx::version::HermesVersion::NEWEST;
    let cfg = HermesConfig::load(home, newest).unwrap_or_default();
    // No folder cache, as in a first sync: every folder is listed, so the time the listings
    // are stamped with (for the next scan's cache) is never read.
    let candidates = scan::scan(
        &scan::skill_roots(home, &cfg, newest, &[]),
        &scan::DirCache::default(),
        0,
    )
    .found;
    let os = skill::current_os();
    let parsed: Vec<Option<skill::Skill>> = candidates
        .par_iter()
        .map(|c| {
            let bytes = std::fs::read(&c.path).ok()?;
            Some(skill::parse(&bytes, &c.location))
        })
        .collect();
    // Candidates come in precedence order (roots in order, paths sorted within each), so the
    // first of an id is the one offered.
    let mut seen = HashSet::new();
    Ok(parsed
        .into_iter()
        .flatten()
        .filter(|s| s.runs_on(os) && seen.insert(s.id.clone()))
        .collect())
}

/// The documents skillidx offers for `home`'s default profile: (id, description, seed text).
fn documents(home: &Path) -> Result<Vec<(String, String, String)>> {
    Ok(offered_skills(home)?
        .into_iter()
        .map(|s| {
            let text = s.seed_text();
            (s.id, s.description, text)
        })
        .collect())
}

/// Makes `dir` an empty folder.
fn empty_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn tantivy_build(home: &Path, dir: &Path) -> Result<Value> {
    let t0 = Instant::now();
    let docs = documents(home)?;
    let parsed = t0.elapsed();
    empty_dir(dir)?;
    let (schema, f) = schema();
    let index = Index::create_in_dir(dir, schema)?;
    index
        .tokenizers()
        .register(TOKENIZER, SkillidxTokenizer::default());
    let mut writer: tantivy::IndexWriter = index.writer(100_000_000)?;
    for (id, description, text) in &docs {
        writer.add_document(doc!(
            f.seed => text.as_str(),
            f.id => id.as_str(),
            f.description => description.as_str(),
        ))?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    let total = t0.elapsed();
    Ok(json!({
        "engine": "tantivy",
        "docs": docs.len(),
        "build_ms": ms(total),
        "parse_ms": ms(parsed),
        "index_ms": ms(total - parsed),
    }))
}

/// The like-for-like build: every document under skillidx's six fields.
fn tantivy_build_fields(home: &Path, dir: &Path) -> Result<Value> {
    let t0 = Instant::now();
    let skills = offered_skills(home)?;
    let parsed = t0.elapsed();
    empty_dir(dir)?;
    let mut b = Schema::builder();
    let indexed = |tokenizer: &str| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer)
                .set_index_option(IndexRecordOption::WithFreqs),
        )
    };
    let fields: Vec<(skillidx::fields::Field, Field)> = skillidx::fields::Field::ALL
        .iter()
        .map(|&f| {
            let tokenizer = if f == skillidx::fields::Field::Seed {
                TOKENIZER
            } else {
                ANALYZER
            };
            (f, b.add_text_field(f.as_str(), indexed(tokenizer)))
        })
        .collect();
    let id = b.add_text_field("id", STORED);
    let description = b.add_text_field("stored_description", STORED);
    let index = Index::create_in_dir(dir, b.build())?;
    index
        .tokenizers()
        .register(TOKENIZER, SkillidxTokenizer::default());
    index
        .tokenizers()
        .register(ANALYZER, SkillidxTokenizer { analyzed: true });
    let mut writer: tantivy::IndexWriter = index.writer(100_000_000)?;
    for s in &skills {
        let mut d = TantivyDocument::default();
        for ((_, text), (_, field)) in skillidx::analyze::field_texts(s).iter().zip(&fields) {
            d.add_text(*field, text);
        }
        d.add_text(id, &s.id);
        d.add_text(description, &s.description);
        writer.add_document(d)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    let total = t0.elapsed();
    Ok(json!({
        "engine": "tantivy-fields",
        "docs": skills.len(),
        "build_ms": ms(total),
        "parse_ms": ms(parsed),
        "index_ms": ms(total - parsed),
    }))
}

/// An open tantivy index.
struct Tantivy {
    _reader: IndexReader,
    searcher: Searcher,
    f: Fields,
}

impl Tantivy {
    fn open(dir: &Path) -> Result<Tantivy> {
        let index =
            Index::open_in_dir(dir).with_context(|| format!("opening {}", dir.display()))?;
        index
            .tokenizers()
            .register(TOKENIZER, SkillidxTokenizer::default());
        let schema = index.schema();
        let field = |name: &str| {
            schema
                .get_field(name)
                .with_context(|| format!("no field {name}"))
        };
        let f = Fields {
            seed: field("seed")?,
            id: field("id")?,
            description: field("description")?,
        };
        let reader: IndexReader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = reader.searcher();
        Ok(Tantivy {
            _reader: reader,
            searcher,
            f,
        })
    }

    /// The top [`K`] (id, description, score), reading the stored fields of each hit as
    /// skillidx reads its document records.
    fn search(&self, query: &str) -> Result<Vec<(String, String, f32)>> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = query_terms(query)
            .into_iter()
            .map(|t| {
                let q = TermQuery::new(
                    Term::from_field_text(self.f.seed, &t),
                    IndexRecordOption::WithFreqs,
                );
                (Occur::Should, Box::new(q) as Box<dyn Query>)
            })
            .collect();
        let top = self.searcher.search(
            &BooleanQuery::new(clauses),
            &TopDocs::with_limit(K).order_by_score(),
        )?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let d: TantivyDocument = self.searcher.doc(addr)?;
            let text = |f: Field| {
                d.get_first(f)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            hits.push((text(self.f.id), text(self.f.description), score));
        }
        Ok(hits)
    }
}

/// The queries every engine answers: short requests and one long agent turn.
struct Queries {
    short: Vec<String>,
    turn: String,
}

impl Queries {
    fn load(path: &Path) -> Result<Queries> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let short = v["short"]
            .as_array()
            .context("queries: no \"short\" list")?
            .iter()
            .filter_map(|q| q.as_str().map(str::to_owned))
            .collect::<Vec<_>>();
        let turn = v["turn"]
            .as_str()
            .context("queries: no \"turn\"")?
            .to_owned();
        if short.is_empty() {
            bail!("queries: \"short\" is empty");
        }
        Ok(Queries { short, turn })
    }
}

/// p50, p99, mean and count of `samples` (µs) as JSON.
fn summary(mut samples: Vec<f64>) -> Value {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    json!({
        "p50_us": at(0.50),
        "p99_us": at(0.99),
        "mean_us": samples.iter().sum::<f64>() / n as f64,
        "n": n,
    })
}

/// Times `search` on every query: `iters` short queries round-robin, then `iters / 4` long
/// turns (at least 50), after one warm-up pass.
fn time_queries(
    queries: &Queries,
    iters: usize,
    mut search: impl FnMut(&str) -> Result<usize>,
) -> Result<Value> {
    for q in &queries.short {
        search(q)?;
    }
    search(&queries.turn)?;
    let mut short = Vec::with_capacity(iters);
    for i in 0..iters {
        let t = Instant::now();
        std::hint::black_box(search(&queries.short[i % queries.short.len()])?);
        short.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let mut long = Vec::new();
    for _ in 0..(iters / 4).max(50) {
        let t = Instant::now();
        std::hint::black_box(search(&queries.turn)?);
        long.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(json!({ "short": summary(short), "turn": summary(long) }))
}

/// VmRSS and VmHWM of this process, KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let get = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (get("VmRSS:"), get("VmHWM:"))
}

fn latency(engine: &str, store: &Path, queries: &Queries, iters: usize) -> Result<Value> {
    let first = &queries.short[0];
    let t0 = Instant::now();
    let mut result = match engine {
        "skillidx" | "skillidx-seed" => {
            let index = skillidx::Index::open(store)?;
            let opts = SearchOptions {
                ranking: if engine == "skillidx" {
                    Ranking::Default
                } else {
                    Ranking::Seed
                },
                ..SearchOptions::default()
            };
            let n = index.search("default", first, &opts)?.len();
            let first_ms = ms(t0.elapsed());
            let mut v = time_queries(queries, iters, |q| {
                Ok(index.search("default", q, &opts)?.len())
            })?;
            v["first_answer_ms"] = json!(first_ms);
            v["first_hits"] = json!(n);
            v
        }
        "tantivy" => {
            let index = Tantivy::open(store)?;
            let n = index.search(first)?.len();
            let first_ms = ms(t0.elapsed());
            let mut v = time_queries(queries, iters, |q| Ok(index.search(q)?.len()))?;
            v["first_answer_ms"] = json!(first_ms);
            v["first_hits"] = json!(n);
            v
        }
        other => bail!("unknown engine {other:?} (skillidx, skillidx-seed or tantivy)"),
    };
    let (rss, hwm) = memory_kib();
    result["engine"] = json!(engine);
    result["rss_kib"] = json!(rss);
    result["peak_rss_kib"] = json!(hwm);
    Ok(result)
}

/// Times the per-turn freshness check on an unchanged home: what every turn pays.
fn freshness(home: &Path, iters: usize) -> Result<Value> {
    let mut f = Freshness::with_ttl(home, Duration::from_secs(3600));
    let t0 = Instant::now();
    f.is_stale();
    let first_ms = ms(t0.elapsed());
    f.mark_synced();
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        let stale = f.is_stale();
        samples.push(t.elapsed().as_secs_f64() * 1e6);
        if stale {
            bail!("the home changed while the freshness check was being timed");
        }
    }
    let mut v = summary(samples);
    v["first_ms"] = json!(first_ms);
    v["home"] = json!(PathBuf::from(home));
    Ok(v)
}
