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

#[test]
fn proximity_follows_the_direction_asked() {
    let h = Home::new();
    corpus(&h);
    let on = Ingredients::default();
    assert_eq!(
        top(&h, "convert this PDF to Markdown", on)[0],
        "convert-pdf-to-md"
    );
    assert_eq!(
        top(&h, "convert this Markdown to PDF", on)[0],
        "markdown-to-pdf"
    );
    // Without it both directions rank the same skills by the same bag of words.
    let off = on.without("proximity").unwrap();
    assert_eq!(
        top(&h, "convert this PDF to Markdown", off)[0],
        top(&h, "convert this Markdown to PDF", off)[0]
    );
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
