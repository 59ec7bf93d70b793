//! Preferences, constraints and facts the user stated about themselves, in English and Chinese.

use hindsight_core::Subtype;
use hindsight_text::grammar::{
    first_person_en, first_person_zh, from_now_on_zh, has_han, lasting_adverb, request_object,
    sentences, strip_fillers_zh, strip_request_lead, strip_word, words, ADVERBS, CONSTRAINTS_ZH,
    FROM_NOW_ON, NOT_REQUESTS, PREFER_VERBS, PREFER_VERBS_ZH,
};
use hindsight_text::{extract_slot, USER_SUBJECT};

use super::clip::excerpt;
use super::retell::third_person;
use super::{Reflection, TaskTrace};

/// Longest sentence of feedback taken as one statement; longer runs without punctuation are
/// not a single preference.
const MAX_STATEMENT_CHARS: usize = 500;

/// What a sentence of the user's says about them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Statement {
    Preference,
    Constraint,
    Fact,
}

/// Preferences, constraints and facts in the feedback, then in the goal.
pub(super) fn stated(trace: &TaskTrace) -> Vec<Reflection> {
    let mut out = Vec::new();
    let sources = [
        ("user feedback", trace.feedback.as_deref()),
        ("task goal", Some(&trace.goal)),
    ];
    for (source, text) in sources {
        let Some(text) = text else { continue };
        for sentence in sentences(text) {
            if sentence.question || sentence.text.chars().count() > MAX_STATEMENT_CHARS {
                continue;
            }
            let Some(kind) = classify(&sentence.text) else {
                continue;
            };
            let content = third_person(&sentence.text);
            let why = format!("{source}: \"{}\"", excerpt(&sentence.text, 200));
            let reflection = match kind {
                Statement::Preference => Reflection::semantic(Subtype::Preference, content, why),
                Statement::Constraint => {
                    Reflection::semantic(Subtype::Preference, content, why).tagged("constraint")
                }
                Statement::Fact => Reflection::semantic(Subtype::Fact, content, why),
            };
            out.push(reflection);
        }
    }
    out
}

fn classify(sentence: &str) -> Option<Statement> {
    if has_han(sentence) {
        classify_zh(sentence)
    } else {
        classify_en(sentence)
    }
}

fn is_user_slot(sentence: &str) -> bool {
    extract_slot(sentence).is_some_and(|slot| slot.subject == USER_SUBJECT)
}

fn classify_en(sentence: &str) -> Option<Statement> {
    let words = words(sentence);
    let text = words.join(" ");
    let has = |phrase: &str| {
        let padded = format!(" {text} ");
        padded.contains(&format!(" {phrase} "))
    };
    for (i, word) in words.iter().enumerate() {
        let after = &words[i + 1..];
        let verb = after.iter().find(|w| !ADVERBS.contains(&w.as_str()));
        match word.as_str() {
            "i" => {
                if let Some(verb) = verb {
                    if PREFER_VERBS.contains(&verb.as_str()) {
                        return Some(Statement::Preference);
                    }
                }
                // "I don't like …", "I do not want …"
                let negated = match after {
                    [n, v, ..] if n == "don't" => Some(v),
                    [d, n, v, ..] if d == "do" && n == "not" => Some(v),
                    _ => None,
                };
                if negated.is_some_and(|v| ["like", "want", "enjoy", "need"].contains(&v.as_str()))
                {
                    return Some(Statement::Preference);
                }
            }
            "i'd" | "would"
                if after
                    .first()
                    .is_some_and(|w| w == "prefer" || w == "rather") =>
            {
                return Some(Statement::Preference);
            }
            "my" if after
                .first()
                .is_some_and(|w| w == "favourite" || w == "favorite" || w == "preference") =>
            {
                return Some(Statement::Preference);
            }
            _ => {}
        }
    }
    let (request, _) = strip_request_lead(sentence);
    if NOT_REQUESTS
        .iter()
        .any(|p| strip_word(request, p).is_some())
    {
        return None;
    }
    let lasting = lasting_adverb(&words)
        || FROM_NOW_ON.iter().any(|p| has(p))
        || ["you must", "must not", "mustn't", "must never", "make sure"]
            .iter()
            .any(|p| has(p));
    if lasting || request_object(request).is_some() {
        return Some(Statement::Constraint);
    }
    if first_person_en(&words) && is_user_slot(sentence) {
        return Some(Statement::Fact);
    }
    None
}

fn classify_zh(sentence: &str) -> Option<Statement> {
    let chars: Vec<char> = sentence.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c != '我' || chars.get(i + 1) == Some(&'们') {
            continue;
        }
        // 我喜欢, 我最喜欢, 我一直比较喜欢: the verb within a few characters of 我.
        let window: String = chars[i + 1..chars.len().min(i + 7)].iter().collect();
        if PREFER_VERBS_ZH.iter().any(|v| window.contains(v)) {
            return Some(Statement::Preference);
        }
    }
    let body = strip_fillers_zh(sentence);
    if CONSTRAINTS_ZH.iter().any(|w| sentence.contains(w))
        || from_now_on_zh(sentence)
        || body.starts_with('别')
    {
        return Some(Statement::Constraint);
    }
    if first_person_zh(sentence) && is_user_slot(sentence) {
        return Some(Statement::Fact);
    }
    None
}
