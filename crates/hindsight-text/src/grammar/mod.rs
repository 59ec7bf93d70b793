//! English and Chinese grammar for retelling what a user said about themselves.

mod en;
mod zh;

pub use en::{
    capitalize, first_person_en, lasting_adverb, lowercase_first, request_object,
    strip_request_lead, strip_word, swap_person_en, third_person_verb, words, ADVERBS, FILLERS,
    FROM_NOW_ON, NOT_REQUESTS, PREFER_VERBS, REQUESTS,
};
pub use zh::{
    first_person_zh, from_now_on_zh, strip_fillers_zh, CONSTRAINTS_ZH, FILLERS_ZH, PREFER_VERBS_ZH,
};

/// Chinese questions asked by setting a word against its negation ("行不行", "能不能"), which
/// need no question mark.
const A_NOT_A_ZH: [&str; 8] = [
    "行不行",
    "可不可以",
    "能不能",
    "可以不",
    "要不要",
    "是不是",
    "好不好",
    "成不成",
];

/// English words that open a yes-no question when they lead a sentence ("Can I pay it now").
const QUESTION_OPENERS_EN: [&str; 11] = [
    "can", "could", "may", "should", "shall", "is", "are", "am", "do", "does", "would",
];

/// Whether `text` asks something: a sentence closed by a question mark, 吗 or 呢, a Chinese
/// A-not-A question, or an English sentence opened by an auxiliary ("Can I go ahead").
///
/// ```
/// use hindsight_text::grammar::is_question;
/// assert!(is_question("Can I go ahead and book it"));
/// assert!(is_question("我直接发给他行不行"));
/// assert!(is_question("能直接退给他吗？"));
/// assert!(!is_question("Refunds over 200 need a supervisor."));
/// assert!(!is_question("不能一个人放款"));
/// ```
pub fn is_question(text: &str) -> bool {
    let parts = sentences(text);
    parts.iter().any(|s| {
        s.question
            || words(&s.text)
                .first()
                .is_some_and(|w| QUESTION_OPENERS_EN.contains(&w.as_str()))
    }) || A_NOT_A_ZH.iter().any(|w| text.contains(w))
}

/// A sentence or clause of [`sentences`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sentence {
    /// Trimmed, without its closing mark or an opening bullet.
    pub text: String,
    /// Asked rather than said (a question mark, or a closing 吗 or 呢): a question states nothing.
    pub question: bool,
}

/// Sentences and semicolon-separated clauses. A period ends one only before a space or the
/// end and not after an abbreviation, so "v2.3", "app.yaml" and "e.g. tables" stay whole.
pub fn sentences(text: &str) -> Vec<Sentence> {
    let text = text.replace('’', "'");
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let ends = match c {
            '。' | '！' | '？' | '；' | '!' | '?' | ';' | '\n' => true,
            '.' => {
                chars.peek().is_none_or(|next| next.is_whitespace())
                    && !ends_in_abbreviation(&current)
            }
            _ => false,
        };
        if !ends {
            current.push(c);
            continue;
        }
        push_sentence(&mut out, &current, matches!(c, '?' | '？'));
        current.clear();
    }
    push_sentence(&mut out, &current, false);
    out
}

fn push_sentence(out: &mut Vec<Sentence>, raw: &str, question_mark: bool) {
    let text = raw
        .trim()
        .trim_start_matches(['-', '*', '•', '·', '>'])
        .trim();
    if text.chars().count() < 2 {
        return;
    }
    let question = question_mark || text.ends_with('吗') || text.ends_with('呢');
    out.push(Sentence {
        text: text.to_string(),
        question,
    });
}

/// Whether the word before a period is a Latin abbreviation, which the period belongs to.
fn ends_in_abbreviation(before: &str) -> bool {
    let last = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    [
        "e.g", "i.e", "etc", "vs", "eg", "ie", "approx", "incl", "cf",
    ]
    .contains(&last.as_str())
}

/// Whether any Han character (CJK Unified Ideographs or Extension A) occurs: enough to read a
/// sentence by the Chinese rules, since English names inside Chinese are common.
pub fn has_han(text: &str) -> bool {
    text.chars()
        .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c))
}

/// Without closing punctuation, English or Chinese, and trailing whitespace, so that a clause
/// can be quoted or closed anew. A question mark is kept: it changes what the clause says.
pub fn trim_end_punct(text: &str) -> &str {
    text.trim_end_matches(|c: char| ".!;,:。！；，".contains(c) || c.is_whitespace())
}
