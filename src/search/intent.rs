//! "Needs a skill?": whether a message asks for something a skill could do.
//!
//! At hub scale nearly every topic has a skill, so a score floor no longer tells "thanks,
//! have a nice weekend!" (a weekend-trip skill matches `weekend`) from a request. The
//! verdict reads what the message *does*, with signals that hold across topics and in
//! English, Chinese, Japanese and Korean:
//!
//! * **asks**: a request (`can you`, `帮我`, `してください`, `해줘`), an imperative task verb,
//!   a how-to question, a problem report, a question about now or nearby (live data), a
//!   question about the user's own things, a technical token (a file name, an identifier,
//!   code, a pasted quote), or a bare keyword search;
//! * **chats**: social formulas (greetings, thanks, farewells, apologies, wishes, praise),
//!   laughter and interjections, talk about the assistant, a narrative or remark, a
//!   question of general knowledge (`who wrote…`, `秦始皇是哪一年…`).
//!
//! A message of formulas only is small talk; otherwise any sign that it asks wins; then any
//! sign that it chats makes it small talk; what is left (a plain search) is searched. The
//! word lists are in `intent_words` (classes of words, not messages).
//! `tests/eval/intent_dev.jsonl` and `intent_holdout.jsonl` measure the verdict.

use super::chitchat;
use super::intent_words::*;
use crate::tokenize::is_cjk;

/// What the verdict found, for `explain` and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// Whether the message asks for something a skill could do.
    pub needs_skill: bool,
    /// The signal that decided.
    pub why: &'static str,
}

const fn asks(why: &'static str) -> Verdict {
    Verdict {
        needs_skill: true,
        why,
    }
}

const fn chats(why: &'static str) -> Verdict {
    Verdict {
        needs_skill: false,
        why,
    }
}

/// The verdict on `message`.
pub fn verdict(message: &str) -> Verdict {
    let text = squeeze(&crate::tokenize::normalize(message).to_lowercase());
    let clauses = clauses(&text);
    let formula: Vec<bool> = clauses.iter().map(|c| is_formula_clause(c)).collect();
    let content: Vec<&str> = clauses
        .iter()
        .zip(&formula)
        .filter(|(_, f)| !**f)
        .map(|(c, _)| c.as_str())
        .collect();
    if content.is_empty() {
        return chats(if clauses.is_empty() {
            "empty"
        } else {
            "formulas"
        });
    }
    let social = formula.iter().any(|f| *f);
    if content
        .iter()
        .any(|c| c.chars().any(|c| is_cjk(c) || is_jamo(c)))
    {
        cjk(message, &text, social || has_cjk_formula(&text))
    } else {
        english(message, &text, &clauses, &content, social)
    }
}

/// `text` with runs of three or more of one letter cut to two (`hmmm`, `sooo`, `lolll`),
/// as chat stretches words.
fn squeeze(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = (None, 0);
    for c in text.chars() {
        run = if run.0 == Some(c) {
            (run.0, run.1 + 1)
        } else {
            (Some(c), 1)
        };
        if run.1 <= 2 || !c.is_alphabetic() {
            out.push(c);
        }
    }
    out
}

/// The clauses of the normalised `text`: split at sentence punctuation and at dashes set
/// apart by spaces.
fn clauses(text: &str) -> Vec<String> {
    let text = text
        .replace(" - ", ",")
        .replace(" – ", ",")
        .replace(" — ", ",");
    text.split(|c: char| ".,!?;:…\n~～，。！？、；：".contains(c))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The English words of `text` (letters, digits and apostrophes).
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect()
}

fn has(list: &[&str], word: &str) -> bool {
    list.contains(&word)
}

/// Whether a clause is social formulas and fillers only.
fn is_formula_clause(clause: &str) -> bool {
    if clause.chars().any(|c| is_cjk(c) || is_jamo(c)) {
        return is_cjk_formula_clause(clause);
    }
    let ws = words(clause);
    if ws.is_empty() {
        return false;
    }
    let mut i = 0;
    let mut any = false;
    while i < ws.len() {
        match formula_at(&ws, i) {
            Some(n) => {
                any = true;
                i += n;
            }
            None if has(EN_FILLERS, ws[i]) => i += 1,
            None => return false,
        }
    }
    any
}

/// The length in words of an English formula starting at `ws[i]`, if one does.
fn formula_at(ws: &[&str], i: usize) -> Option<usize> {
    for n in (1..=4).rev() {
        if i + n <= ws.len() && has(EN_FORMULAS, &ws[i..i + n].join(" ")) {
            return Some(n);
        }
    }
    EN_SLOTTED.iter().find_map(|(head, slot)| {
        let head: Vec<&str> = head.split(' ').collect();
        let fits = ws.len() > i + head.len() && ws[i..i + head.len()] == head[..];
        fits.then(|| head.len() + (*slot).min(ws.len() - i - head.len()))
    })
}

/// Korean compatibility jamo (`ㅋ`, `ㅇㅋ`), which chat is written with.
fn is_jamo(c: char) -> bool {
    ('\u{3130}'..='\u{318F}').contains(&c) || ('\u{1100}'..='\u{11FF}').contains(&c)
}

/// Every CJK social formula: the pleasantries the analyzer cuts and the others.
fn cjk_formulas() -> &'static [String] {
    static ALL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<String> = chitchat::PLEASANTRIES
            .iter()
            .chain(CJK_FORMULAS)
            .map(|p| crate::tokenize::normalize(p).to_lowercase())
            .collect();
        all.sort_by_key(|p| std::cmp::Reverse(p.len()));
        all
    })
}

fn has_cjk_formula(text: &str) -> bool {
    cjk_formulas().iter().any(|p| text.contains(p.as_str()))
}

/// `text` with its CJK formulas cut out.
fn without_cjk_formulas(text: &str) -> String {
    let mut rest = text.to_owned();
    for p in cjk_formulas() {
        if rest.contains(p.as_str()) {
            rest = rest.replace(p.as_str(), " ");
        }
    }
    rest
}

/// Whether a CJK clause is formulas with fillers around them.
fn is_cjk_formula_clause(clause: &str) -> bool {
    let rest = without_cjk_formulas(clause);
    rest != clause
        && rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .all(|w| chitchat::only_fillers(w) || has(EN_FILLERS, w))
}

// ------------------------------------------------------------------------------------------
// English.

fn english(
    original: &str,
    text: &str,
    clauses: &[String],
    content: &[&str],
    social: bool,
) -> Verdict {
    let social = social
        || clauses
            .iter()
            .any(|c| EN_FORMULA_HEADS.iter().any(|h| starts_with_words(c, h)));
    let all = words(text);
    if asks_in_english(&all) {
        return asks("request");
    }
    if technical(original) {
        return asks("technical");
    }
    let opens = |i: usize, c: &&str| {
        let ws = words(c);
        // A later clause opens an imperative only with some words (`zero regrets` is not one).
        imperative(&ws, social || (i > 0 && ws.len() < 3))
    };
    if content.iter().enumerate().any(|(i, c)| opens(i, c)) {
        return asks("imperative");
    }
    let content_words: Vec<&str> = content.iter().flat_map(|c| words(c)).collect();
    if content_words.is_empty() {
        return chats("no words");
    }
    if !social && content_words.iter().any(|w| has(EN_PROBLEMS, w)) {
        return asks("problem");
    }
    let questions = original.contains('?') && content.len() == 1;
    for c in content {
        let ws = words(c);
        let question = questions
            || ws.first().is_some_and(|w| {
                has(EN_QUESTION_WORDS, w)
                    || matches!(*w, "is" | "are" | "does" | "do" | "will" | "can" | "has")
            });
        if question && !ws.iter().any(|w| has(EN_YOU, w)) {
            if live(&ws) {
                return asks("live");
            }
            if ws.iter().any(|w| has(EN_OWN, w)) {
                return asks("own");
            }
        }
    }
    if social {
        return chats("social");
    }
    if content_words.iter().any(|w| has(INTERJECTIONS, w)) {
        return chats("interjection");
    }
    let keywords = content_words.len() <= 8
        && !content_words.iter().any(|w| has(EN_FUNCTION, w))
        && !original.contains('!')
        && !original.chars().any(is_emoji);
    if keywords {
        asks("keywords")
    } else {
        chats("no request")
    }
}

/// Whether `clause` starts with the words of `phrase`.
fn starts_with_words(clause: &str, phrase: &str) -> bool {
    clause
        .strip_prefix(phrase)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(|c: char| !c.is_alphanumeric()))
}

/// Whether the words hold a request or how-to form ([`EN_REQUESTS`], or `can you` with a
/// verb of doing).
fn asks_in_english(ws: &[&str]) -> bool {
    for (i, w) in ws.iter().enumerate() {
        if matches!(*w, "can" | "could" | "would" | "will" | "can't" | "cant")
            && ws
                .get(i + 1)
                .is_some_and(|y| matches!(*y, "you" | "u" | "ya"))
            && !ws.get(i + 2).is_some_and(|v| has(EN_NOT_ASKED, v))
        {
            return true;
        }
        if *w == "what"
            && ws.get(i + 1) == Some(&"does")
            && ws[i..].iter().take(12).any(|x| *x == "mean")
        {
            return true;
        }
    }
    EN_REQUESTS.iter().any(|p| sequence_at_any(ws, p))
}

/// Whether the slots of `pattern` (space-separated, alternatives split by `/`) occur in
/// `ws` as consecutive words.
fn sequence_at_any(ws: &[&str], pattern: &str) -> bool {
    let slots: Vec<Vec<&str>> = pattern.split(' ').map(|s| s.split('/').collect()).collect();
    (0..ws.len()).any(|i| {
        slots.len() <= ws.len() - i
            && slots
                .iter()
                .enumerate()
                .all(|(j, alts)| alts.contains(&ws[i + j]))
    })
}

/// Whether the words are about now (live data); a possessive counts (`last night's`).
fn live(ws: &[&str]) -> bool {
    let ws: Vec<&str> = ws
        .iter()
        .map(|w| w.strip_suffix("'s").unwrap_or(w))
        .collect();
    ws.iter().any(|w| has(EN_LIVE, w) || has(EN_LIVE_NOUNS, w))
        || EN_LIVE_PAIRS.iter().any(|p| sequence_at_any(&ws, p))
}

/// Whether a clause opens with an imperative: a task verb, or (unless the message is
/// social) a word that is none of the things a statement or question opens with.
fn imperative(ws: &[&str], social: bool) -> bool {
    let Some(mut k) = ws.iter().position(|w| !has(EN_LEADS, w)) else {
        return false;
    };
    // A negative imperative: `don't tell me it works until…`.
    if matches!(ws[k], "don't" | "dont") || ws[k..].starts_with(&["do", "not"]) {
        k += if ws[k] == "do" { 2 } else { 1 };
        return ws
            .get(k)
            .is_some_and(|w| !matches!(*w, "you" | "i" | "we" | "know" | "think" | "worry"));
    }
    let w = ws[k];
    if has(EN_TASK_VERBS, w) {
        return true;
    }
    if social
        || has(EN_NOT_IMPERATIVE, w)
        || has(EN_IRREGULAR_PAST, w)
        || has(EN_FORMULAS, w)
        || w.ends_with("ing")
        || w.ends_with("ed")
        || w.ends_with("ly")
        || w.contains('\'')
        || ws.iter().any(|x| has(INTERJECTIONS, x))
    {
        return false;
    }
    // A statement has a subject or a copula before any subordinate clause (`pineapple on
    // pizza is fine`); an imperative's come after one (`grab that clip so I can watch it`).
    let statement = ws[k + 1..]
        .iter()
        .take_while(|w| !has(EN_SUBORDINATORS, w))
        .any(|w| {
            matches!(
                *w,
                "i" | "he" | "she" | "we" | "they" | "is" | "are" | "was" | "were" | "am"
            )
        });
    let next = ws.get(k + 1).copied().unwrap_or("");
    let subject_follows = statement
        || matches!(
            next,
            "is" | "are"
                | "was"
                | "were"
                | "has"
                | "have"
                | "had"
                | "will"
                | "would"
                | "can"
                | "could"
                | "should"
                | "do"
                | "does"
                | "did"
                | "just"
                | "really"
                | "always"
                | "never"
                | "i"
                | "you"
                | "he"
                | "she"
                | "we"
                | "they"
        );
    !subject_follows && ws.len() - k >= 2
}

/// Whether the message holds something technical: a URL, a path, code, an identifier
/// (`camelCase`, `v2`, `M1`), an acronym that is not chat (`PDF`, not `LOL`), a file name,
/// or pasted material (several lines, a long quotation).
fn technical(original: &str) -> bool {
    let quote = long_quote(original, 25);
    quote || original.matches('\n').count() >= 2 || original.split_whitespace().any(technical_token)
}

fn technical_token(raw: &str) -> bool {
    let t = raw.trim_matches(|c: char| ".,!?;:()[]\"'“”‘’".contains(c));
    if t.is_empty() {
        return false;
    }
    if t.contains("://")
        || t.starts_with("www.")
        || t.contains([
            '{', '}', '<', '>', '=', '`', '$', '%', '#', '@', '\\', '/', '°',
        ])
        || file_name(t)
    {
        return true;
    }
    let b = t.as_bytes();
    let pairs = || b.windows(2);
    if pairs().any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase()) {
        return true;
    }
    let mixed = pairs().any(|p| {
        (p[0].is_ascii_alphabetic() && p[1].is_ascii_digit())
            || (p[0].is_ascii_digit() && p[1].is_ascii_alphabetic())
    });
    if mixed && !ordinal_or_unit(&t.to_ascii_lowercase()) {
        return true;
    }
    let caps = t.len() >= 2
        && b[0].is_ascii_uppercase()
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && b.iter().filter(|c| c.is_ascii_uppercase()).count() >= 2;
    caps && !has(SOCIAL_LATIN, &t.to_ascii_lowercase())
}

/// `name.ext` with an extension of 2 to 4 letters or digits.
fn file_name(t: &str) -> bool {
    t.rsplit_once('.').is_some_and(|(stem, ext)| {
        (2..=4).contains(&ext.len())
            && ext.bytes().all(|c| c.is_ascii_alphanumeric())
            && stem.chars().last().is_some_and(char::is_alphanumeric)
    })
}

/// `3rd`, `10am`, `5min`, `2h`: digits with a unit, not an identifier.
fn ordinal_or_unit(t: &str) -> bool {
    let unit = t.trim_start_matches(|c: char| c.is_ascii_digit());
    unit.len() < t.len()
        && matches!(
            unit,
            "st" | "nd" | "rd" | "th" | "s" | "am" | "pm" | "min" | "h" | "k"
        )
}

/// Whether `text` quotes at least `min` characters (pasted material). A single quote
/// counts only where it opens or closes a word (`'…'`), not as an apostrophe (`don't`).
fn long_quote(text: &str, min: usize) -> bool {
    const PAIRS: [(char, char); 6] = [
        ('"', '"'),
        ('\'', '\''),
        ('“', '”'),
        ('‘', '’'),
        ('「', '」'),
        ('『', '』'),
    ];
    let chars: Vec<char> = text.chars().collect();
    let word = |i: usize| chars.get(i).is_some_and(|c| c.is_alphanumeric());
    PAIRS.iter().any(|&(open, close)| {
        let mut start = None;
        for (i, &c) in chars.iter().enumerate() {
            let apostrophe = c == '\'' && word(i.wrapping_sub(1)) && word(i + 1);
            match start {
                Some(s) if c == close && !apostrophe => {
                    if i - s > min {
                        return true;
                    }
                    start = None;
                }
                None if c == open && !apostrophe && !(c == '\'' && word(i.wrapping_sub(1))) => {
                    start = Some(i);
                }
                _ => {}
            }
        }
        false
    })
}

fn is_emoji(c: char) -> bool {
    matches!(c as u32, 0x1F300..=0x1FAFF | 0x2600..=0x27BF)
}

// ------------------------------------------------------------------------------------------
// Chinese, Japanese, Korean.

fn cjk(original: &str, text: &str, social: bool) -> Verdict {
    if latin_name(original) || long_quote(original, 12) || cjk_material(original) {
        return asks("technical");
    }
    let laughs = LAUGHTER.iter().any(|l| original.contains(l)) || original.chars().any(is_emoji);
    let rest = without_cjk_formulas(text);
    if CJK_REQUESTS.iter().any(|c| found(&rest, c)) || clause_request(&rest) {
        return asks("request");
    }
    let laughter = LAUGHTER.iter().any(|l| original.contains(l));
    if !laughter && !social && CJK_PROBLEMS.iter().any(|p| rest.contains(p)) {
        return asks("problem");
    }
    let question = original.contains(['?', '？']) || CJK_QUESTION.iter().any(|q| rest.contains(q));
    let addressed = CJK_YOU.iter().any(|c| found(&rest, c));
    if question && !social && !laughs && !addressed {
        if CJK_LIVE
            .iter()
            .chain(CJK_LIVE_NOUNS)
            .any(|w| rest.contains(w))
        {
            return asks("live");
        }
        if CJK_WHEN.iter().any(|w| rest.contains(w)) && !past(&rest) {
            return asks("schedule");
        }
    }
    if social || laughs {
        return chats("social");
    }
    if question {
        return chats("question");
    }
    if cjk_keywords(original.trim()) {
        asks("keywords")
    } else {
        chats("no request")
    }
}

/// Whether `text` holds the cue.
fn found(text: &str, cue: &Cue) -> bool {
    text.match_indices(cue.phrase).any(|(at, p)| {
        let next = &text[at + p.len()..];
        let before = text[..at].chars().next_back();
        !cue.unless_next.iter().any(|n| next.starts_with(n))
            && !before.is_some_and(|b| cue.unless_after.contains(&b))
    })
}

/// Requests a clause shows by its shape: opening with 把 (`把这个PDF转成Word`), `用…做`,
/// or ending in a verb's て-form (`メッセージ考えて`).
fn clause_request(rest: &str) -> bool {
    clauses(rest).iter().any(|c| {
        (c.starts_with('把') && !c.starts_with("把握"))
            || c.find('用').is_some_and(|at| {
                let after: String = c[at..].chars().skip(1).take(13).collect();
                ["做", "写", "画", "生成"].iter().any(|v| after.contains(v))
            })
            || te_form(c)
    })
}

/// Whether a clause ends in a verb's て-form.
fn te_form(clause: &str) -> bool {
    if JA_TE_VERBS.iter().any(|v| clause.ends_with(v)) {
        return true;
    }
    let mut tail = clause.chars().rev();
    match (tail.next(), tail.next()) {
        (Some('て'), Some(stem)) => JA_TE_STEMS.contains(stem),
        (Some('で'), Some(stem)) => stem == 'ん' || stem == 'い',
        _ => false,
    }
}

/// Whether a question is about the past (`…是哪一年统一的`, `누가 만들었어`).
fn past(rest: &str) -> bool {
    let trimmed = rest.trim_end_matches(['?', '？', ' ']);
    CJK_PAST.iter().any(|p| rest.contains(p)) || trimmed.ends_with('た')
}

/// A Latin-script word in a CJK message (`PDF`, `rebase`, `A股`) that is not chat.
fn latin_name(original: &str) -> bool {
    let chars: Vec<char> = original.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || ".+#-".contains(chars[i])) {
            i += 1;
        }
        let word: String = chars[start..i]
            .iter()
            .collect::<String>()
            .to_ascii_lowercase();
        let single_before_han = i - start == 1
            && chars[start].is_ascii_uppercase()
            && chars
                .get(i)
                .is_some_and(|c| ('\u{3400}'..='\u{9fff}').contains(c));
        if (i - start >= 2 || single_before_han)
            && !has(SOCIAL_LATIN, &word)
            && !has(EN_FORMULAS, &word)
        {
            return true;
        }
    }
    false
}

/// Pasted material in a CJK message: a URL, code signs, or several lines.
fn cjk_material(original: &str) -> bool {
    original.contains("://")
        || original.contains([
            '{', '}', '=', '`', '$', '%', '#', '@', '\\', '/', '<', '>', '→',
        ])
        || original.matches('\n').count() >= 2
}

/// Whether a CJK message with no other sign is a keyword search: no sentence punctuation,
/// no sentence ending, no particles, no first person.
fn cjk_keywords(t: &str) -> bool {
    if t.contains(['!', '！', '。', '，', '、', '~', '～', '…']) {
        return false;
    }
    if t.chars().any(|c| ('\u{ac00}'..='\u{d7a3}').contains(&c)) {
        let ws: Vec<&str> = t.split_whitespace().collect();
        let own = ws.iter().any(|w| has(KO_SELF, w));
        let particles = ws[..ws.len().saturating_sub(1)]
            .iter()
            .filter(|w| {
                w.chars().count() >= 2 && w.chars().last().is_some_and(|c| KO_PARTICLES.contains(c))
            })
            .count();
        return !own
            && particles < 2
            && !t
                .chars()
                .last()
                .is_some_and(|c| KO_SENTENCE_ENDS.contains(c));
    }
    let compact: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    let zh_sentence = compact
        .chars()
        .filter(|c| ZH_SENTENCE_WORDS.contains(*c))
        .count()
        >= 1
        && compact.chars().count() > 8;
    !zh_sentence
        && !compact.chars().any(|c| JA_PARTICLES.contains(c))
        && !CJK_SENTENCE_ENDS.iter().any(|e| compact.ends_with(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn social_messages_chat() {
        for m in [
            "thanks a lot, have a nice weekend!",
            "谢谢，周末愉快！",
            "고마워, 오늘도 수고 많았어!",
            "happy Friday! have a great weekend",
            "no worries, take your time",
            "ありがとうございます、助かりました！",
        ] {
            assert!(!verdict(m).needs_skill, "{m:?}: {:?}", verdict(m));
        }
    }

    #[test]
    fn questions_of_general_knowledge_chat() {
        for m in [
            "what year did the Berlin wall fall?",
            "who wrote pride and prejudice",
            "《红楼梦》的作者是谁？",
            "한글은 누가 만들었어?",
        ] {
            assert!(!verdict(m).needs_skill, "{m:?}: {:?}", verdict(m));
        }
    }

    #[test]
    fn requests_ask_whatever_they_open_with() {
        for m in [
            "docker image slim",
            "convert this pdf to markdown",
            "thanks! now can you draft a reply to this email",
            "will it rain in Osaka tomorrow?",
            "my CI keeps failing after rebase",
            "plan my weekend trip to Kyoto",
            "谢谢！再帮我写一个爬虫脚本",
            "帮我把这个PDF转成Markdown",
            "给这篇公众号长文配几张插图",
            "今のドル円いくら？",
            "同僚の誕生日メッセージ考えて、ちょっと面白い感じで",
            "고마워요. 이제 주식 차트 분석해줘",
            "강남역 지하철 언제 와?",
            "git worktree 어떻게 써?",
        ] {
            assert!(verdict(m).needs_skill, "{m:?}: {:?}", verdict(m));
        }
    }
}
