//! A statement of the user's retold about the user, in the third person.

use hindsight_text::grammar::{
    capitalize, first_person_zh, has_han, lowercase_first, request_object, strip_fillers_zh,
    strip_request_lead, swap_person_en, trim_end_punct, words,
};

pub(super) fn third_person(sentence: &str) -> String {
    if has_han(sentence) {
        third_person_zh(sentence)
    } else {
        third_person_en(sentence)
    }
}

/// The user's sentence about the user: a request retold ("Please don't use emojis" → "The user
/// asked not to use emojis."), a first-person statement in the third person ("I always use
/// tabs" → "The user always uses tabs."), or else quoted.
fn third_person_en(sentence: &str) -> String {
    let (rest, lasting) = strip_request_lead(sentence);
    if let Some((retold, object)) = request_object(rest) {
        let object = swap_person_en(object, true);
        let tail = if lasting { " from now on" } else { "" };
        return finish_en(&format!(
            "The user asked {retold} {}{tail}",
            trim_end_punct(&object)
        ));
    }
    let words = words(sentence);
    let speaks_as_user = words
        .iter()
        .any(|w| matches!(w.as_str(), "i" | "i'm" | "i've" | "i'd" | "i'll"))
        || words.first().is_some_and(|w| w == "my");
    if speaks_as_user {
        return finish_en(&capitalize(&swap_person_en(sentence, false)));
    }
    if lasting && !rest.is_empty() {
        let object = swap_person_en(rest, true);
        return finish_en(&format!(
            "The user asked to {} from now on",
            trim_end_punct(&lowercase_first(&object))
        ));
    }
    format!("The user said: \"{}\"", sentence.trim())
}

fn finish_en(text: &str) -> String {
    format!("{}.", trim_end_punct(text))
}

/// 我 → 用户 ("我喜欢简洁的回答" → "用户喜欢简洁的回答。"); a request without 我 is retold as the
/// user's ("不要用表情" → "用户要求不要用表情。"); what "we" do is quoted.
fn third_person_zh(sentence: &str) -> String {
    let body = strip_fillers_zh(sentence);
    if !first_person_zh(body) && body.contains("我们") {
        return format!("用户说：“{}。”", trim_end_punct(body));
    }
    let text = if first_person_zh(body) {
        let chars: Vec<char> = body.chars().collect();
        let mut out = String::with_capacity(body.len() + 8);
        for (i, &c) in chars.iter().enumerate() {
            if c == '我' && chars.get(i + 1) != Some(&'们') {
                out.push_str("用户");
            } else {
                out.push(c);
            }
        }
        out
    } else {
        format!("用户要求{body}")
    };
    format!("{}。", trim_end_punct(&text))
}
