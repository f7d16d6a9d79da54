//! Chit-chat in Chinese, Japanese and Korean: a pleasantry lexicon and a coverage rule.
//!
//! English pleasantries are single words, so the stop-word list drops them (`thanks`,
//! `hello`). A CJK pleasantry is a set phrase that the tokenizer cuts into bigrams, and
//! those bigrams graze skills that happen to contain them (`辛苦了` → `辛苦`, `苦了`). Two
//! remedies, each an ingredient of the default ranking:
//!
//! * **`cjk-pleasantries`**: before analysis, the query's CJK pleasantry phrases
//!   ([`PLEASANTRIES`]) are cut out of the text, as whole phrases, so that a real word
//!   sharing a bigram with one (`问题` in `没问题`) is left alone.
//! * **`cjk-coverage`**: a hit that matches no Latin-script query term must match at least
//!   two (of the query's) separate CJK units, overlapping bigrams of one word counting once
//!   ([`DEFAULT_CJK_COVERAGE`], chosen by cross-validation). Small talk (`周末过得怎么样？`)
//!   is not a set phrase, but its bigrams are everyday words, each of which only ever
//!   grazes a skill: a skill matching `怎么` and `么样` has matched one word. A hit found by a
//!   Latin term (`Stripeでサブスク…` → a Stripe skill) is exempt, since a technical name is
//!   what a cross-lingual request is found by.
//!
//! [`is_cjk_chit_chat`] is the plugin's skip-the-search gate for the same phrases.

use super::plan::Plan;
use super::{Ranking, SearchOptions, View};
use rustc_hash::FxHashMap;

/// What counts as a pleasantry: a set phrase whose only job is social, in one of these
/// classes, and nothing that names a task, a topic or an object.
///
/// * greetings and "are you there" (`你好`, `在吗`, `こんにちは`, `안녕하세요`);
/// * thanks and praise of the help (`谢谢`, `辛苦了`, `ありがとう`, `助かりました`,
///   `고마워요`);
/// * apologies (`不好意思`, `すみません`, `죄송합니다`);
/// * acknowledgement and agreement (`好的`, `明白了`, `没问题`, `なるほど`, `了解です`,
///   `알겠어`, `괜찮아`);
/// * farewells, good night and "good work today" (`晚安`, `明天见`, `お疲れ様でした`,
///   `また明日`, `수고하셨습니다`, `잘 자요`);
/// * encouragement and exclamations of delight (`加油`, `太棒了`, `すごい`);
/// * laughter (`哈哈`, `ㅋㅋ`);
/// * and, last, a few function words that English drops as stop words (`什么`, `怎么`,
///   `你的`, `这个`, `帮助`, `어떻게`).
///
/// Entries are matched as substrings of the NFKC, lowercased query, so each is at least two
/// characters long and not the start or end of a common technical word: `네` (yes) is left
/// out because of `네이버`, `그래` because of `그래프` (graph), `了解` (to learn about) because
/// Chinese uses it for real requests, `感谢` because of `感谢信` (a thank-you letter, a
/// real request). Longer forms come first, so that `ありがとうございます`
/// goes as a whole.
pub const PLEASANTRIES: &[&str] = &[
    // Chinese.
    "你好",
    "您好",
    "早上好",
    "早安",
    "中午好",
    "下午好",
    "晚上好",
    "在吗",
    "哈喽",
    "谢谢",
    "多谢",
    "辛苦了",
    "辛苦啦",
    "麻烦你了",
    "不好意思",
    "抱歉",
    "对不起",
    "没关系",
    "好的",
    "好吧",
    "明白了",
    "知道了",
    "没问题",
    "嗯嗯",
    "再见",
    "拜拜",
    "晚安",
    "明天见",
    "回头见",
    "下次见",
    "加油",
    "太棒了",
    "厉害",
    "哈哈",
    "呵呵",
    "嘻嘻",
    "笑死",
    // Japanese.
    "おはようございます",
    "おはよう",
    "こんにちは",
    "こんばんは",
    "はじめまして",
    "お元気ですか",
    "ありがとうございました",
    "ありがとうございます",
    "ありがとう",
    "どうも",
    "助かりました",
    "助かります",
    "すみません",
    "ごめんなさい",
    "申し訳ありません",
    "なるほど",
    "了解です",
    "了解しました",
    "承知しました",
    "わかりました",
    "分かりました",
    "よろしくお願いします",
    "よろしくお願いいたします",
    "よろしく",
    "お疲れ様でした",
    "お疲れ様です",
    "お疲れさまでした",
    "お疲れさまです",
    "おつかれさま",
    "また明日",
    "またね",
    "おやすみなさい",
    "おやすみ",
    "さようなら",
    "すごい",
    "素晴らしい",
    "完璧です",
    // Korean.
    "안녕하세요",
    "안녕하십니까",
    "안녕히",
    "안녕",
    "반가워요",
    "반갑습니다",
    "좋은 아침",
    "감사합니다",
    "감사해요",
    "고맙습니다",
    "고마워요",
    "고마워",
    "죄송합니다",
    "미안해요",
    "미안해",
    "알겠습니다",
    "알겠어요",
    "알겠어",
    "괜찮아요",
    "괜찮아",
    "오케이",
    "수고하셨습니다",
    "수고하세요",
    "수고했어",
    "잘 자요",
    "잘 자",
    "잘자",
    "내일 봬요",
    "또 봐요",
    "좋은 꿈",
    "ㅋㅋ",
    "ㅎㅎ",
    // Not pleasantries but the CJK counterparts of English stop words that chat is made
    // of: "what", "how", "your", "my", "this", "that", "help", "a bit" (English drops
    // these as stop words). Cut as whole words, like the pleasantries.
    "什么",
    "怎么样",
    "怎么",
    "你的",
    "我的",
    "这个",
    "那个",
    "帮助",
    "一下",
    "어떻게",
    "무엇",
];

/// How many of the query's CJK units (at most) a hit found by CJK terms alone must match
/// (see [`cover`]); 1 or less switches the rule off. `skillidx eval --folds 5` chooses it:
/// every fold chose 1 (off), since two units cost real Chinese and Korean requests whose
/// skill shares a single word with them (`做一个关于光合作用的知识漫画`).
pub const DEFAULT_CJK_COVERAGE: f64 = 1.0;

/// The values cross-validation chooses the coverage from.
pub const CJK_COVERAGE_GRID: [f64; 3] = [1.0, 2.0, 3.0];

/// `query` with its CJK pleasantry phrases replaced by spaces. The text is NFKC-normalised
/// first, as the analyzer would, so full-width and half-width forms match.
pub fn strip_pleasantries(query: &str) -> String {
    if query.is_ascii() {
        return query.to_owned();
    }
    let mut text = crate::tokenize::normalize(query);
    for p in normalized_pleasantries() {
        if text.contains(p.as_str()) {
            text = text.replace(p.as_str(), " ");
        }
    }
    text
}

/// [`PLEASANTRIES`] in NFKC, normalised once per process rather than once per query: NFKC
/// turns compatibility jamo (`ㅋ`) into conjoining ones.
fn normalized_pleasantries() -> &'static [String] {
    static NORMALIZED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NORMALIZED.get_or_init(|| {
        PLEASANTRIES
            .iter()
            .map(|p| crate::tokenize::normalize(p))
            .collect()
    })
}

/// Particles, pronouns and sentence endings that may surround a pleasantry without making
/// it a request (`谢谢你的帮助`, `ありがとう、助かりました`, `정말 고마워요`).
const FILLERS: &[&str] = &[
    "你",
    "我",
    "您",
    "的",
    "了",
    "啊",
    "呀",
    "哦",
    "吧",
    "呢",
    "嘛",
    "啦",
    "哈",
    "嗯",
    "噢",
    "很",
    "真",
    "太",
    "非常",
    "帮助",
    "帮忙",
    "今天",
    "也",
    "都",
    "ね",
    "よ",
    "な",
    "わ",
    "です",
    "ます",
    "でした",
    "ました",
    "本当に",
    "今日も",
    "今日",
    "どうぞ",
    "お",
    "요",
    "정말",
    "진짜",
    "너무",
    "오늘",
    "도",
    "큰",
    "도움이",
    "됐어요",
    "됐습니다",
    "많이",
    "이에요",
    "예요",
    "입니다",
    "ㅋ",
    "ㅎ",
];

/// Whether `message` is CJK chit-chat not worth a search: it contains a CJK pleasantry
/// ([`PLEASANTRIES`]), and once they are cut out nothing is left but fillers (particles,
/// pronouns, "really", "today", "your help"), punctuation, emoji and spaces. Conservative on
/// purpose: a pleasantry followed by a request (`谢谢！再帮我写个脚本`) is searched.
pub fn is_cjk_chit_chat(message: &str) -> bool {
    if message.is_ascii() {
        return false;
    }
    let stripped = strip_pleasantries(message);
    if stripped == crate::tokenize::normalize(message) {
        return false;
    }
    stripped
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .all(only_fillers)
}

/// Whether `word` is a run of [`FILLERS`] (greedy, longest filler first).
fn only_fillers(word: &str) -> bool {
    let mut rest = word;
    'outer: while !rest.is_empty() {
        let mut best = 0;
        for f in FILLERS {
            let f = crate::tokenize::normalize(f);
            if rest.starts_with(f.as_str()) && f.len() > best {
                best = f.len();
            }
        }
        if best == 0 {
            break 'outer;
        }
        rest = &rest[best..];
    }
    rest.is_empty()
}

/// The text the default ranking analyses for `query`: with its CJK pleasantries cut out
/// when that ingredient is on, else `query` itself.
pub(super) fn query_text<'q>(
    query: &'q str,
    ingredients: &super::Ingredients,
) -> std::borrow::Cow<'q, str> {
    if ingredients.stop_words && ingredients.cjk_pleasantries && !query.is_ascii() {
        std::borrow::Cow::Owned(strip_pleasantries(query))
    } else {
        std::borrow::Cow::Borrowed(query)
    }
}

/// Whether [`cover`] may drop hits of `plan`: the default ranking with its floor and the
/// coverage rule on, and CJK terms in the query.
pub(super) fn covers(plan: &Plan, opts: &SearchOptions) -> bool {
    opts.ranking == Ranking::Default
        && opts.floor
        && opts.ingredients.floor
        && opts.ingredients.cjk_coverage
        && opts.ingredients.weights.cjk_coverage.round() as usize > 1
        && plan.terms.iter().any(|t| t.cjk)
}

/// The coverage rule (see the module): drops from `scores` the hits matched by CJK query
/// terms alone that match fewer than `min(k, U)` of the query's CJK units, where `U` is how
/// many non-overlapping scored CJK terms the query has and `k` the `cjk-coverage` weight
/// (overlapping bigrams of one word, `怎么` and `么样`, count once). Only for the default
/// ranking with its floor on (what is injected), and only when the query has CJK terms.
pub(super) fn cover(
    query: &str,
    plan: &Plan,
    view: &View,
    opts: &SearchOptions,
    scores: Vec<(u32, f64)>,
) -> Result<Vec<(u32, f64)>, String> {
    if scores.is_empty() || !covers(plan, opts) {
        return Ok(scores);
    }
    let k = opts.ingredients.weights.cjk_coverage.round() as usize;
    // The analysed query, to place each scored CJK term.
    let seq = crate::tokenize::analyze(&query_text(query, &opts.ingredients));
    let position = |term: &str| seq.iter().position(|t| t == term);
    let all: Vec<usize> = plan
        .terms
        .iter()
        .filter(|t| t.cjk)
        .filter_map(|t| position(&t.term))
        .collect();
    let need = k.min(units(&seq, all));
    if need <= 1 {
        return Ok(scores);
    }
    // Per candidate: whether a Latin term matched it, and the query positions of the CJK
    // terms it contains.
    let mut seen: FxHashMap<u32, (bool, Vec<usize>)> = scores
        .iter()
        .map(|&(d, _)| (d, (false, Vec::new())))
        .collect();
    for t in &plan.terms {
        let at = if t.cjk { position(&t.term) } else { None };
        t.list.visit(view, |doc, _, _| {
            if let Some(e) = seen.get_mut(&doc) {
                match (t.cjk, at) {
                    (false, _) => e.0 = true,
                    (true, Some(p)) => e.1.push(p),
                    (true, None) => {}
                }
            }
        })?;
    }
    Ok(scores
        .into_iter()
        .filter(|(d, _)| {
            seen.remove(d)
                .is_some_and(|(latin, at)| latin || units(&seq, at) >= need)
        })
        .collect())
}

/// How many units the CJK terms at `positions` of the analysed query `seq` make: a term
/// that continues the previous one (the bigram after it in the same run, `怎么` → `么样`)
/// adds none.
fn units(seq: &[String], mut positions: Vec<usize>) -> usize {
    positions.sort_unstable();
    positions.dedup();
    let mut n = 0;
    let mut last: Option<usize> = None;
    for p in positions {
        let chained = last.is_some_and(|l| {
            l + 1 == p
                && seq[l].chars().next_back() == seq[p].chars().next()
                && seq[l].chars().count() == 2
        });
        if !chained {
            n += 1;
        }
        last = Some(p);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pleasantries_are_cut_as_whole_phrases() {
        assert_eq!(
            strip_pleasantries("谢谢，辛苦了").trim_matches([' ', ',']),
            ""
        );
        // `问题` survives where it is not part of `没问题`.
        assert!(strip_pleasantries("没问题，帮我解决这个问题").contains("问题"));
        assert!(!strip_pleasantries("没问题").contains("问题"));
        assert_eq!(
            strip_pleasantries("ありがとうございます、助かりました！")
                .trim_matches([' ', ',', '!', '、']),
            ""
        );
        // Full-width forms are normalised first.
        assert_eq!(strip_pleasantries("ＰＤＦ"), "PDF");
        // Latin text is left alone.
        assert_eq!(strip_pleasantries("Thanks!"), "Thanks!");
    }

    #[test]
    fn lexicon_entries_are_principled() {
        for p in PLEASANTRIES {
            assert!(
                p.chars().count() >= 2,
                "{p}: one character matches inside words"
            );
        }
        // Technical words that contain a short pleasantry-like syllable are not touched.
        for w in ["네이버 지도", "그래프 그려줘", "了解kubernetes架构"] {
            assert_eq!(strip_pleasantries(w), crate::tokenize::normalize(w));
        }
    }

    #[test]
    fn the_gate_skips_pleasantries_but_not_requests() {
        for m in [
            "谢谢你的帮助，辛苦了！",
            "你好！",
            "好的好的，明白了，没问题",
            "ありがとうございます、助かりました！",
            "お疲れ様でした、また明日！",
            "よろしくお願いします",
            "안녕하세요!",
            "고마워요, 정말 큰 도움이 됐어요",
            "수고하셨습니다! 내일 봬요",
            "ㅋㅋㅋ",
        ] {
            assert!(is_cjk_chit_chat(m), "{m:?}");
        }
        for m in [
            "thanks",
            "谢谢！再帮我写一个爬虫脚本",
            "帮我把这个PDF转成Markdown",
            "ありがとう、次は議事録を作成して",
            "고마워요. 이제 주식 차트 분석해줘",
            "周末过得怎么样？",
        ] {
            assert!(!is_cjk_chit_chat(m), "{m:?}");
        }
    }

    #[test]
    fn overlapping_bigrams_are_one_unit() {
        let seq = crate::tokenize::analyze("周末过得怎么样");
        // 周末 末过 过得 得怎 怎么 么样
        assert_eq!(units(&seq, vec![4, 5]), 1);
        assert_eq!(units(&seq, vec![0, 4, 5]), 2);
        assert_eq!(units(&seq, vec![0, 2, 4]), 3);
        // Two-character words side by side do not overlap.
        let ko = crate::tokenize::analyze("오늘 점심");
        assert_eq!(units(&ko, vec![0, 1]), 2);
        assert_eq!(units(&seq, vec![]), 0);
    }
}
