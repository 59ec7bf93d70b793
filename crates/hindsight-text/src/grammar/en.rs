//! English: request openings, lasting rules, and the first person retold in the third.

use super::trim_end_punct;

/// Words that may stand between "I" and its verb.
#[rustfmt::skip]
pub const ADVERBS: &[&str] = &[
    "always", "never", "usually", "often", "sometimes", "really", "also", "only", "just",
    "mostly", "generally", "still", "normally", "typically", "rarely", "seldom", "definitely",
    "strongly", "actually", "much", "truly", "personally", "absolutely", "certainly", "ever",
    "even", "honestly", "totally",
];

/// Verbs after "I" that state a preference.
#[rustfmt::skip]
pub const PREFER_VERBS: &[&str] = &[
    "prefer", "like", "love", "enjoy", "dislike", "hate", "loathe", "favour", "favor",
];

/// Words that open a sentence without saying anything: left out before looking for a request.
#[rustfmt::skip]
pub const FILLERS: &[&str] = &[
    "please", "pls", "also", "and", "so", "ok", "okay", "oh", "btw", "but", "then", "thanks",
    "thank you", "kindly", "just", "remember", "note",
];

/// Openings that ask the agent for something lasting, with how the request is retold.
#[rustfmt::skip]
pub const REQUESTS: &[(&str, &str)] = &[
    ("don't", "not to"), ("do not", "not to"), ("dont", "not to"), ("never", "never to"),
    ("always", "to always"), ("avoid", "to avoid"), ("make sure", "to make sure"),
    ("stop", "to stop"),
];

/// Openings that look like requests but ask for nothing lasting.
#[rustfmt::skip]
pub const NOT_REQUESTS: &[&str] = &[
    "don't worry", "do not worry", "never mind", "don't mention it", "don't bother",
];

/// Phrases that make a request lasting.
pub const FROM_NOW_ON: &[&str] = &["from now on", "going forward", "in the future", "in future"];

/// Lower-cased words; an apostrophe stays inside a word, so "don't" and "i'm" are one each.
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// "always"/"never" that make a standing rule: opening the sentence ("Never push to main"), or
/// after a speaker, a modal or "please" ("I always …", "you should never …", "please always
/// …"). Elsewhere they describe something ("the cache never expires").
pub fn lasting_adverb(words: &[String]) -> bool {
    #[rustfmt::skip]
    const BEFORE: &[&str] = &[
        "i", "you", "we", "please", "should", "must", "will", "shall", "to", "i'll", "we'll",
        "you'll", "let's", "and",
    ];
    let opening = words
        .iter()
        .position(|w| !FILLERS.contains(&w.as_str()))
        .unwrap_or(0);
    words.iter().enumerate().any(|(k, w)| {
        (w == "always" || w == "never")
            && (k == opening || k > 0 && BEFORE.contains(&words[k - 1].as_str()))
    })
}

/// A request opening (see [`REQUESTS`]) with how it is retold and what it asks for.
pub fn request_object(request: &str) -> Option<(&'static str, &str)> {
    REQUESTS.iter().find_map(|(open, retold)| {
        let object = strip_word(request, open)?.trim();
        (!trim_end_punct(object).is_empty()).then_some((*retold, object))
    })
}

/// Whether the speaker names themselves: "I", its contractions, "my", "me" or "mine".
pub fn first_person_en(words: &[String]) -> bool {
    words.iter().any(|w| {
        matches!(
            w.as_str(),
            "i" | "i'm" | "i've" | "i'd" | "i'll" | "my" | "me" | "mine"
        )
    })
}

/// The sentence without opening fillers ("please", "also, "), and whether a "from now on"
/// opened it.
pub fn strip_request_lead(sentence: &str) -> (&str, bool) {
    let mut rest = sentence.trim();
    let mut lasting = false;
    loop {
        let before = rest;
        rest = rest.trim_start_matches(|c: char| c == ',' || c == ':' || c.is_whitespace());
        if let Some(after) = FROM_NOW_ON.iter().find_map(|p| strip_word(rest, p)) {
            rest = after;
            lasting = true;
        }
        if let Some(after) = FILLERS.iter().find_map(|f| strip_word(rest, f)) {
            rest = after;
        }
        if rest == before {
            return (rest, lasting);
        }
    }
}

/// `text` after an opening `phrase` (ASCII, matched case-insensitively as whole words).
pub fn strip_word<'a>(text: &'a str, phrase: &str) -> Option<&'a str> {
    let head = text.get(..phrase.len())?;
    let rest = &text[phrase.len()..];
    let whole = rest
        .chars()
        .next()
        .is_none_or(|c| !(c.is_alphanumeric() || c == '\''));
    (head.eq_ignore_ascii_case(phrase) && whole).then_some(rest)
}

/// First-person words turned to the third person; the verb after "I" agrees. `mentioned` says
/// whether "the user" was already named, so that later mentions can be "their"/"them".
pub fn swap_person_en(text: &str, mut mentioned: bool) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut verb_next = false;
    for (token, is_word) in tokens(text) {
        if !is_word {
            if !token.chars().all(char::is_whitespace) {
                verb_next = false;
            }
            out.push_str(token);
            continue;
        }
        let lower = token.to_lowercase();
        if verb_next {
            if ADVERBS.contains(&lower.as_str()) {
                out.push_str(token);
                continue;
            }
            verb_next = false;
            match third_person_verb(&lower) {
                Some(verb) => out.push_str(&verb),
                None => out.push_str(token),
            }
            continue;
        }
        let user = |mentioned: bool, named: &'static str, pronoun: &'static str| {
            if mentioned {
                pronoun
            } else {
                named
            }
        };
        let replacement = match lower.as_str() {
            "i" => {
                verb_next = true;
                "the user"
            }
            "i'm" => "the user is",
            "i've" => "the user has",
            "i'd" => "the user would",
            "i'll" => "the user will",
            "me" => user(mentioned, "the user", "them"),
            "my" => user(mentioned, "the user's", "their"),
            "mine" => user(mentioned, "the user's", "theirs"),
            "myself" => "themselves",
            _ => {
                out.push_str(token);
                continue;
            }
        };
        mentioned = true;
        out.push_str(replacement);
    }
    out
}

/// Runs of word characters (letters, digits, apostrophes) and of everything else.
fn tokens(text: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_word = None;
    for (i, c) in text.char_indices() {
        let word = c.is_alphanumeric() || c == '\'';
        match in_word {
            Some(w) if w == word => {}
            Some(w) => {
                out.push((&text[start..i], w));
                start = i;
                in_word = Some(word);
            }
            None => in_word = Some(word),
        }
    }
    if let Some(w) = in_word {
        out.push((&text[start..], w));
    }
    out
}

/// The third-person singular of the verb that followed "I", or `None` when the word does not
/// look like a verb and is left alone.
pub fn third_person_verb(verb: &str) -> Option<String> {
    #[rustfmt::skip]
    const UNCHANGED: &[&str] = &[
        "can", "could", "will", "would", "shall", "should", "may", "might", "must", "can't",
        "cannot", "couldn't", "won't", "wouldn't", "shouldn't", "mustn't", "didn't", "did",
        "was", "wasn't", "had", "hadn't", "said", "told", "went", "got", "made", "thought",
        "found", "knew", "saw", "gave", "took", "came", "left", "felt", "kept", "meant", "sent",
        "spent", "wrote", "bought", "brought", "ran", "began", "chose", "forgot", "lost", "paid",
        "put", "set", "let", "hit", "cut", "quit", "read", "heard", "understood", "became",
    ];
    #[rustfmt::skip]
    const NOT_VERBS: &[&str] = &[
        "and", "or", "but", "too", "the", "a", "an", "to", "for", "of", "in", "on", "at", "with",
        "as", "if", "so", "myself", "who", "that", "which", "not", "no",
    ];
    let same = Some(verb.to_string());
    let swapped = match verb {
        "am" | "are" | "be" => "is",
        "were" => "was",
        "have" => "has",
        "do" => "does",
        "go" => "goes",
        "don't" | "dont" => "doesn't",
        "haven't" => "hasn't",
        "aren't" | "ain't" => "isn't",
        "weren't" => "wasn't",
        _ => {
            if UNCHANGED.contains(&verb) {
                return same;
            }
            if NOT_VERBS.contains(&verb) || !verb.chars().all(|c| c.is_ascii_lowercase()) {
                return None;
            }
            if verb.len() > 3 && verb.ends_with("ed") && !verb.ends_with("eed") {
                return same;
            }
            let bytes = verb.as_bytes();
            let last = bytes[bytes.len() - 1];
            let before_last = bytes.len().checked_sub(2).map(|i| bytes[i]);
            if ["s", "sh", "ch", "x", "z", "o"]
                .iter()
                .any(|e| verb.ends_with(e))
            {
                return Some(format!("{verb}es"));
            }
            if last == b'y' && before_last.is_some_and(|b| !b"aeiou".contains(&b)) {
                return Some(format!("{}ies", &verb[..verb.len() - 1]));
            }
            return Some(format!("{verb}s"));
        }
    };
    Some(swapped.to_string())
}

/// The first letter in upper case, for a retold sentence that now opens with "the user".
pub fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Lower-cases the first letter unless the word is an acronym or a name in capitals ("API").
pub fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), second)
            if first.is_uppercase() && !second.is_some_and(char::is_uppercase) =>
        {
            let mut chars = text.chars();
            chars.next();
            first.to_lowercase().chain(chars).collect()
        }
        _ => text.to_string(),
    }
}
