//! Chinese: preference verbs, constraint words, 以后 as "from now on", request openings and 我.

/// Verbs after 我 that state a preference.
#[rustfmt::skip]
pub const PREFER_VERBS_ZH: &[&str] = &[
    "喜欢", "偏好", "偏爱", "讨厌", "习惯", "倾向", "更愿意", "宁愿", "爱用", "爱喝", "爱吃",
];

/// Words that make a sentence a lasting request.
#[rustfmt::skip]
pub const CONSTRAINTS_ZH: &[&str] = &[
    "不要", "今后", "往后", "总是", "永远", "始终", "一律", "从不", "绝不", "不许", "不准", "请勿",
    "禁止", "每次都", "别再", "请别", "你别", "千万别", "可别",
];

/// What before 以后 makes it a point in time ("3天以后", "下班以后") rather than "from now on".
const BEFORE_LATER_ZH: &str =
    "0123456789零一二三四五六七八九十百两几半天日周月年时点分秒钟号班课会饭完后";

/// 以后 meaning "from now on": not after a number, a time unit or an event ("3天以后", "开完会以后").
/// Looser than the change cue's reading of 以后 in this crate, which needs a clause start, a
/// pronoun or a connective before it: a request such as "报表以后都用 PDF" counts here.
pub fn from_now_on_zh(sentence: &str) -> bool {
    sentence.match_indices("以后").any(|(at, _)| {
        sentence[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !BEFORE_LATER_ZH.contains(c))
    })
}

/// Openings that only frame a request ("请", "另外，").
#[rustfmt::skip]
pub const FILLERS_ZH: &[&str] = &[
    "请记住", "请记得", "记住", "记得", "请", "麻烦", "另外", "还有", "并且", "而且", "对了", "谢谢",
    "你",
];

/// Whether 我 occurs meaning the speaker alone (not 我们).
pub fn first_person_zh(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    chars
        .iter()
        .enumerate()
        .any(|(i, &c)| c == '我' && chars.get(i + 1) != Some(&'们'))
}

/// The sentence without the openings that only frame a request ([`FILLERS_ZH`]) and the
/// punctuation after them.
pub fn strip_fillers_zh(sentence: &str) -> &str {
    let mut rest = sentence.trim();
    loop {
        let before = rest;
        rest = rest.trim_start_matches(|c: char| "，,、：:".contains(c) || c.is_whitespace());
        if let Some(filler) = FILLERS_ZH.iter().find(|f| rest.starts_with(*f)) {
            rest = &rest[filler.len()..];
        }
        if rest == before {
            return rest;
        }
    }
}
