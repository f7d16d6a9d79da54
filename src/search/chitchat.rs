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
//! * **`cjk-coverage`**: a rule of the ranking step (`rank`): a hit that matches no
//!   Latin-script query term must match several separate CJK units of the query.
//!
//! [`is_cjk_chit_chat`] is the small-talk test for the same phrases (the semantic stage
//! reads it); `intent` reads every message, in all four languages, for what it asks.

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
/// * laughter (`哈哈`, `ㅋㅋ`).
///
/// [`CHAT_WORDS`] are cut with them.
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
];

/// Not pleasantries but the CJK counterparts of English stop words that chat is made of:
/// "what", "how", "your", "my", "this", "that", "help", "a bit" (English drops these as
/// stop words). Cut before analysis as whole words, like the pleasantries.
pub const CHAT_WORDS: &[&str] = &[
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

/// `query` with its CJK pleasantry phrases replaced by spaces. The text is NFKC-normalised
/// first, as the analyzer would, so full-width and half-width forms match.
pub fn strip_pleasantries(query: &str) -> String {
    if query.is_ascii() {
        return query.to_owned();
    }
    strip_normalized(crate::tokenize::normalize(query))
}

/// [`strip_pleasantries`] of a text already normalised.
fn strip_normalized(mut text: String) -> String {
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
            .chain(CHAT_WORDS)
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
    cut(message).1
}

/// Whether nothing is left of a text whose pleasantries were cut out but fillers,
/// punctuation, emoji and spaces.
fn only_fillers_left(stripped: &str) -> bool {
    stripped
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .all(only_fillers)
}

/// Whether `word` is a run of [`FILLERS`] (greedy, longest filler first).
pub(super) fn only_fillers(word: &str) -> bool {
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

/// `text` with its CJK pleasantries cut out (`None` for an ASCII text, which has none), and
/// whether it is CJK small talk ([`is_cjk_chit_chat`]): one normalisation and one cut for
/// both.
pub(super) fn cut(text: &str) -> (Option<String>, bool) {
    if text.is_ascii() {
        return (None, false);
    }
    let normalized = crate::tokenize::normalize(text);
    let stripped = strip_normalized(normalized.clone());
    let small_talk = stripped != normalized && only_fillers_left(&stripped);
    (Some(stripped), small_talk)
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
}
