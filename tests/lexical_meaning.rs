//! Issue 12's lexical ingredients on a small home: ordered proximity tells a conversion's
//! direction, and CJK pleasantries retrieve nothing.

mod common;
use common::*;
use skillidx::search::{Ingredients, SearchOptions};

fn corpus(h: &Home) {
    h.skill(
        "docs/markdown-to-pdf",
        "markdown-to-pdf",
        "Convert Markdown documents to PDF with styled themes",
    );
    h.skill(
        "docs/convert-pdf-to-md",
        "convert-pdf-to-md",
        "Converts PDF (.pdf) documents into Markdown so their contents can be analyzed",
    );
    h.skill(
        "dev/git",
        "git-helper",
        "Commit, rebase and resolve conflicts in git",
    );
    h.skill(
        "ops/kudos",
        "team-kudos",
        "チームへのお疲れ様メッセージとありがとうカードを作成する",
    );
    // `convert` is a common word, as in any real collection: the pair that tells the
    // direction is `pdf` → `markdown`.
    for what in ["images", "audio", "video", "units", "currencies", "fonts"] {
        h.skill(
            &format!("misc/convert-{what}"),
            &format!("convert-{what}"),
            &format!("Convert {what} between formats"),
        );
    }
    h.sync();
}

fn top(h: &Home, query: &str, ingredients: Ingredients) -> Vec<String> {
    h.search_with(
        query,
        &SearchOptions {
            ingredients,
            ..Default::default()
        },
    )
    .into_iter()
    .map(|(id, _)| id)
    .collect()
}

/// The score of `convert-pdf-to-md` less that of `markdown-to-pdf` for `query`.
fn lead(h: &Home, query: &str, ingredients: Ingredients) -> f64 {
    let hits = h.search_with(
        query,
        &SearchOptions {
            ingredients,
            ..Default::default()
        },
    );
    let score = |id: &str| hits.iter().find(|(i, _)| i == id).map_or(0.0, |h| h.1);
    score("convert-pdf-to-md") - score("markdown-to-pdf")
}

#[test]
fn proximity_follows_the_direction_asked() {
    let h = Home::new();
    corpus(&h);
    let on = Ingredients::default();
    let off = on.without("proximity").unwrap();
    // PDF → Markdown: the skill that goes that way gains on the other; Markdown → PDF: the
    // other way round.
    let to_md = "convert this PDF to Markdown";
    let to_pdf = "convert this Markdown to PDF";
    assert!(lead(&h, to_md, on) > lead(&h, to_md, off) + 1e-9);
    assert!(lead(&h, to_pdf, on) < lead(&h, to_pdf, off) - 1e-9);
    assert_eq!(top(&h, to_pdf, on)[0], "markdown-to-pdf");
    // Without a word of direction, two words side by side are a compound: no bonus.
    assert!((lead(&h, "pdf markdown", on) - lead(&h, "pdf markdown", off)).abs() < 1e-9);
    // The seed ranking is untouched.
    let seed = |q: &str, ingredients| {
        h.search_with(
            q,
            &SearchOptions {
                ingredients,
                ranking: skillidx::search::Ranking::Seed,
                ..Default::default()
            },
        )
    };
    assert_eq!(seed(to_md, on), seed(to_md, off));
}

#[test]
fn cjk_pleasantries_find_nothing() {
    let h = Home::new();
    corpus(&h);
    let on = Ingredients::default();
    assert!(top(&h, "お疲れ様でした、また明日！", on).is_empty());
    // The lexicon is what does it.
    let off = on.without("cjk-pleasantries").unwrap();
    assert_eq!(top(&h, "お疲れ様でした、また明日！", off), ["team-kudos"]);
    // A request that merely contains a pleasantry still finds its skill.
    assert_eq!(
        top(&h, "ありがとう！メッセージカードを作成して", on)[0],
        "team-kudos"
    );
}

#[test]
fn a_misspelling_is_corrected_and_a_real_word_is_not() {
    let h = Home::new();
    h.skill(
        "electronics/voltage-divider",
        "voltage-divider",
        "Compute the resistor values of a voltage divider",
    );
    h.skill(
        "ops/kubernetes",
        "kubernetes-deploy",
        "Write Kubernetes deployment manifests",
    );
    for filler in 0..30 {
        h.skill(
            &format!("misc/filler-{filler}"),
            &format!("filler-{filler}"),
            "Format tables and lists in plain text files",
        );
    }
    h.sync();
    let search = |q: &str| top(&h, q, Ingredients::default());
    // Two edits from `kubernetes`, and no English word: a typo.
    assert_eq!(search("kuberentes manifests")[0], "kubernetes-deploy");
    assert_eq!(search("kuberentes")[0], "kubernetes-deploy");
    // `volta` is one edit from `voltage`'s stem, but it is a word: the turn about a sonnet's
    // volta has nothing to do with voltage dividers.
    assert!(search("volta").is_empty(), "{:?}", search("volta"));
    assert_eq!(search("votlage")[0], "voltage-divider");
}
