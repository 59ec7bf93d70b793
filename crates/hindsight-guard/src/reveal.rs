//! Other readings of a text, screened beside it: what an encoding hides (base64, base64url, hex,
//! percent-encoding, HTML entities, leetspeak, control characters) and what markup keeps out of
//! sight (comments, hidden elements, alt text, link titles), and the passages a text quotes from
//! someone else (a forwarded e-mail, an imported message). Each reading says where it came from,
//! so that a reason can tell an admin why a harmless-looking text was held.

use std::sync::OnceLock;

use regex::Regex;

use crate::normalize::{is_hiding_control, normalise};

/// Readings produced from one text at most; a text nesting encodings deeper than this is odd
/// enough that what was decoded so far is screened and the rest is left.
const MAX_VIEWS: usize = 24;

/// How many times a decoded text is decoded again (base64 inside an HTML comment, hex of base64).
const MAX_DEPTH: usize = 3;

/// Shortest encoded blob worth decoding: 16 base64 characters are 12 bytes, about two words.
const MIN_BASE64_CHARS: usize = 16;
const MIN_HEX_CHARS: usize = 24;

/// Share of a decoded blob's characters that must be letters: random bytes that happen to be
/// valid UTF-8 (a hash, a session id) are mostly punctuation and symbols.
const MIN_LETTER_SHARE: f32 = 0.6;

/// Where a reading came from, for the reason a flag gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    ControlsAsSpaces,
    HtmlEntities,
    Percent,
    Leetspeak,
    Base64,
    Hex,
    HtmlComment,
    MarkdownComment,
    HiddenElement,
    AltText,
    LinkTitle,
    Quoted,
}

impl Source {
    pub fn describe(self) -> &'static str {
        match self {
            Source::ControlsAsSpaces => "text with control characters read as spaces",
            Source::HtmlEntities => "text with HTML entities decoded",
            Source::Percent => "percent-decoded text",
            Source::Leetspeak => "leetspeak read as letters",
            Source::Base64 => "base64-decoded text",
            Source::Hex => "hex-decoded text",
            Source::HtmlComment => "an HTML comment",
            Source::MarkdownComment => "a markdown comment",
            Source::HiddenElement => "a hidden HTML element",
            Source::AltText => "alt text",
            Source::LinkTitle => "a link title",
            Source::Quoted => "a quoted passage",
        }
    }

    /// Text the reader of a page never sees: screened as untrusted content whatever its source,
    /// since nobody put it there to be read by a person.
    pub fn is_hidden(self) -> bool {
        matches!(
            self,
            Source::HtmlComment
                | Source::MarkdownComment
                | Source::HiddenElement
                | Source::AltText
                | Source::LinkTitle
        )
    }

    /// Text screened with the rules for untrusted content: what nobody reads, and what a
    /// writer quotes from a third party. The principal may relay a message, but the message's
    /// orders to the agent are not the principal's own.
    pub fn is_untrusted(self) -> bool {
        self.is_hidden() || self == Source::Quoted
    }
}

/// One reading of a text, already normalised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct View {
    pub text: String,
    pub source: Source,
}

/// The other readings of `raw` (whose normalised form is `normalised`), without the text itself.
/// Empty for ordinary prose, which has nothing encoded or hidden.
pub(crate) fn views(raw: &str, normalised: &str) -> Vec<View> {
    let mut out: Vec<View> = vec![];
    if raw.chars().any(is_hiding_control) {
        // A NUL between words hides them from a pattern just as well as one inside a word; the
        // normalised text has them removed, this reading has them as spaces.
        let spaced: String = raw
            .chars()
            .map(|c| if is_hiding_control(c) { ' ' } else { c })
            .collect();
        push(
            &mut out,
            normalise(&spaced).into_owned(),
            Source::ControlsAsSpaces,
        );
    }
    let mut pending: Vec<(String, usize)> = vec![(normalised.to_string(), 0)];
    while let Some((text, depth)) = pending.pop() {
        if out.len() >= MAX_VIEWS {
            break;
        }
        let before = out.len();
        read_once(&text, &mut out);
        if depth + 1 < MAX_DEPTH {
            for view in &out[before..] {
                pending.push((view.text.clone(), depth + 1));
            }
        }
    }
    out.truncate(MAX_VIEWS);
    out
}

/// Adds the readings one step away from `text`.
fn read_once(text: &str, out: &mut Vec<View>) {
    if let Some(decoded) = decode_entities(text) {
        push(out, decoded, Source::HtmlEntities);
    }
    if let Some(decoded) = decode_percent(text) {
        push(out, decoded, Source::Percent);
    }
    if let Some(letters) = read_leetspeak(text) {
        push(out, letters, Source::Leetspeak);
    }
    for decoded in decode_base64_blobs(text) {
        push(out, decoded, Source::Base64);
    }
    for decoded in decode_hex_blobs(text) {
        push(out, decoded, Source::Hex);
    }
    for (hidden, source) in hidden_markup(text) {
        push(out, hidden, source);
    }
    for passage in quoted_passages(text) {
        push(out, passage, Source::Quoted);
    }
}

/// Shortest quoted passage read as someone else's words: shorter quotes are names and titles.
const MIN_QUOTED_CHARS: usize = 12;

/// The passages between paired double quotes or CJK corner brackets. Single quotes are left
/// alone: they are apostrophes too often to pair reliably.
fn quoted_passages(text: &str) -> Vec<String> {
    static QUOTED: OnceLock<Regex> = OnceLock::new();
    if !text.contains(['"', '“', '「', '『', '«']) {
        return vec![];
    }
    regex(
        &QUOTED,
        r#""([^"]+)"|“([^”]+)(?:”|$)|「([^」]+)」|『([^』]+)』|«([^»]+)»"#,
    )
    .captures_iter(text)
    .filter_map(|caps| {
        let body = (1..=5).find_map(|i| caps.get(i))?.as_str();
        (body.chars().count() >= MIN_QUOTED_CHARS).then(|| body.to_string())
    })
    .collect()
}

fn push(out: &mut Vec<View>, text: String, source: Source) {
    let text = normalise(&text).into_owned();
    if text.trim().is_empty() || out.iter().any(|v| v.text == text) {
        return;
    }
    out.push(View { text, source });
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("built-in pattern"))
}

fn decode_entities(text: &str) -> Option<String> {
    static ENTITY: OnceLock<Regex> = OnceLock::new();
    let entity = regex(
        &ENTITY,
        r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});",
    );
    if !entity.is_match(text) {
        return None;
    }
    let decoded = entity.replace_all(text, |caps: &regex::Captures<'_>| {
        let whole = &caps[0];
        let body = &whole[1..whole.len() - 1];
        let code = if let Some(hex) = body.strip_prefix("#x").or_else(|| body.strip_prefix("#X")) {
            u32::from_str_radix(hex, 16).ok()
        } else if let Some(decimal) = body.strip_prefix('#') {
            decimal.parse().ok()
        } else {
            named_entity(body).map(u32::from)
        };
        code.and_then(char::from_u32)
            .map_or_else(|| whole.to_string(), String::from)
    });
    (decoded != text).then(|| decoded.into_owned())
}

fn named_entity(name: &str) -> Option<u8> {
    Some(match name.to_ascii_lowercase().as_str() {
        "lt" => b'<',
        "gt" => b'>',
        "amp" => b'&',
        "quot" => b'"',
        "apos" => b'\'',
        "nbsp" | "ensp" | "emsp" | "thinsp" => b' ',
        "colon" => b':',
        "sol" => b'/',
        "excl" => b'!',
        "num" => b'#',
        "lpar" => b'(',
        "rpar" => b')',
        "period" => b'.',
        "comma" => b',',
        "commat" => b'@',
        "hyphen" | "dash" => b'-',
        _ => return None,
    })
}

fn decode_percent(text: &str) -> Option<String> {
    static ESCAPE: OnceLock<Regex> = OnceLock::new();
    if !regex(&ESCAPE, r"%[0-9a-fA-F]{2}").is_match(text) {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match (hex_digit(bytes[i + 1]), hex_digit(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push(high << 4 | low);
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            // A form-encoded space.
            b'+' => out.push(b' '),
            other => out.push(other),
        }
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Letters that digits and symbols stand for in leetspeak; `1` is decided by its neighbour
/// (see [`read_leet_word`]).
fn leet_letter(c: char) -> Option<char> {
    Some(match c {
        '0' => 'o',
        '1' => 'i',
        '3' => 'e',
        '4' => 'a',
        '5' => 's',
        '7' => 't',
        '@' => 'a',
        '$' => 's',
        _ => return None,
    })
}

/// One leet word in letters. `1` stands for `l` before `e`, `a`, `y`, another `l` or the end of
/// the word ("ru1es", "a11", "emai1") and for `i` elsewhere ("1gnore", "d1sable", "l0g1n").
fn read_leet_word(word: &str) -> String {
    let mapped: Vec<char> = word.chars().map(|c| leet_letter(c).unwrap_or(c)).collect();
    let original: Vec<char> = word.chars().collect();
    (0..mapped.len())
        .map(|i| {
            if original[i] != '1' {
                return mapped[i];
            }
            match original.get(i + 1) {
                None | Some('1') => 'l',
                Some(_) if matches!(mapped[i + 1].to_ascii_lowercase(), 'e' | 'a' | 'y' | 'l') => {
                    'l'
                }
                Some(_) => 'i',
            }
        })
        .collect()
}

/// The text with every word that mixes letters and leet digits spelled in letters, or `None`
/// when no word does. Numbers ("200"), ordinals and amounts with a unit ("1st", "5pm", "10k"),
/// codes without a leet digit ("2FA"), addresses and long tokens (hashes, encoded blobs) stay
/// as written.
fn read_leetspeak(text: &str) -> Option<String> {
    static WORD: OnceLock<Regex> = OnceLock::new();
    static NUMBER_WITH_UNIT: OnceLock<Regex> = OnceLock::new();
    let word = regex(&WORD, r"[A-Za-z0-9@$]+");
    let number_with_unit = regex(
        &NUMBER_WITH_UNIT,
        r"(?i)^[0-9]+(?:st|nd|rd|th|s|k|m|km|kg|g|h|min|pm|am|x|d|px|gb|mb|tb|eur|usd|gbp)$",
    );
    let mut changed = false;
    let out = word.replace_all(text, |caps: &regex::Captures<'_>| {
        let whole = caps.get(0).expect("whole match");
        let w = whole.as_str();
        let letters = w.chars().filter(char::is_ascii_alphabetic).count();
        let leet = w.chars().filter(|&c| leet_letter(c).is_some()).count();
        let ats = w.matches('@').count();
        let address = ats > 0 && leet == ats && !w.starts_with('@');
        // "%20by" is an escape and a word, read by the percent decoding.
        let escaped = text[..whole.start()].ends_with('%');
        if letters == 0
            || escaped
            || leet == 0
            || address
            || w.len() >= MIN_BASE64_CHARS
            || number_with_unit.is_match(w)
        {
            return w.to_string();
        }
        changed = true;
        read_leet_word(w)
    });
    changed.then(|| out.into_owned())
}

fn decode_base64_blobs(text: &str) -> Vec<String> {
    static BLOB: OnceLock<Regex> = OnceLock::new();
    // Runs of the base64 alphabets, possibly wrapped over lines as mail and PEM files do.
    let blob = regex(
        &BLOB,
        r"(?:[A-Za-z0-9+/_-]{16,}={0,2}[ \t]*\r?\n[ \t]*)*[A-Za-z0-9+/_-]{4,}={0,2}",
    );
    blob.find_iter(text)
        .filter_map(|m| {
            let compact: String = m.as_str().chars().filter(|c| !c.is_whitespace()).collect();
            let body = compact.trim_end_matches('=');
            // A long plain word is all lowercase; base64 of text mixes cases and digits.
            let mixed = body.chars().any(|c| c.is_ascii_uppercase())
                && body
                    .chars()
                    .any(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            if body.len() < MIN_BASE64_CHARS || !mixed {
                return None;
            }
            decode_base64(body).and_then(readable)
        })
        .collect()
}

fn base64_value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    } as u32)
}

/// Either alphabet, padding optional; a dangling sixth of a byte is dropped.
fn decode_base64(body: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for c in body.bytes() {
        buffer = buffer << 6 | base64_value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn decode_hex_blobs(text: &str) -> Vec<String> {
    static BLOB: OnceLock<Regex> = OnceLock::new();
    let blob = regex(&BLOB, &format!("[0-9A-Fa-f]{{{MIN_HEX_CHARS},}}"));
    blob.find_iter(text)
        .filter_map(|m| {
            let digits = m.as_str().as_bytes();
            let digits = &digits[..digits.len() & !1];
            let bytes = digits
                .chunks(2)
                .map(|pair| Some(hex_digit(pair[0])? << 4 | hex_digit(pair[1])?))
                .collect::<Option<Vec<u8>>>()?;
            readable(bytes)
        })
        .collect()
}

/// Decoded bytes as text when they read as words: valid UTF-8 (only a character cut off at the
/// end is forgiven), no control characters beyond line breaks and tabs, mostly letters.
fn readable(bytes: Vec<u8>) -> Option<String> {
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) if e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).ok()?
        }
        Err(_) => return None,
    };
    let visible: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    if visible.len() < 4
        || text
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return None;
    }
    let letters = visible.iter().filter(|c| c.is_alphabetic()).count();
    (letters as f32 >= visible.len() as f32 * MIN_LETTER_SHARE).then_some(text)
}

/// The text of comments, hidden elements, alt text and link titles in `text`.
fn hidden_markup(text: &str) -> Vec<(String, Source)> {
    static COMMENT: OnceLock<Regex> = OnceLock::new();
    static MARKDOWN_COMMENT: OnceLock<Regex> = OnceLock::new();
    static HIDDEN_OPEN: OnceLock<Regex> = OnceLock::new();
    static ATTRIBUTE: OnceLock<Regex> = OnceLock::new();
    static IMAGE_ALT: OnceLock<Regex> = OnceLock::new();
    static LINK_TITLE: OnceLock<Regex> = OnceLock::new();
    if !text.contains(['<', '[', '!']) {
        return vec![];
    }
    let mut out = vec![];
    // An unclosed comment hides the rest of the page.
    for caps in regex(&COMMENT, r"<!--([\s\S]*?)(?:-->|$)").captures_iter(text) {
        out.push((caps[1].to_string(), Source::HtmlComment));
    }
    // `[//]: # (…)` and `[comment]: <> (…)`: link definitions that render as nothing.
    for caps in regex(
        &MARKDOWN_COMMENT,
        r#"(?m)^[ \t]*\[[^\]\n]*\]:[ \t]*(?:#|<>)[ \t]*(?:\(([^\n]*)\)|"([^"\n]*)"|'([^'\n]*)')"#,
    )
    .captures_iter(text)
    {
        if let Some(body) = caps.get(1).or(caps.get(2)).or(caps.get(3)) {
            out.push((body.as_str().to_string(), Source::MarkdownComment));
        }
    }
    for caps in regex(
        &HIDDEN_OPEN,
        r#"(?i)<([a-z][a-z0-9]*)\b[^>]*?(?:\shidden\b|aria-hidden\s*=\s*["']?true|display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*[01](?:\.\d+)?(?:px|pt|em|rem)?\b|opacity\s*:\s*0(?:\.0+)?\b|color\s*:\s*(?:white|transparent|#fff(?:fff)?\b))[^>]*>"#,
    )
    .captures_iter(text)
    {
        let start = caps.get(0).expect("whole match").end();
        let close = format!("</{}", caps[1].to_ascii_lowercase());
        let rest = &text[start..];
        let end = rest.to_ascii_lowercase().find(&close).unwrap_or(rest.len());
        out.push((rest[..end].to_string(), Source::HiddenElement));
    }
    for caps in regex(
        &ATTRIBUTE,
        r#"(?i)\b(?:alt|title|aria-label|aria-description|data-[a-z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')"#,
    )
    .captures_iter(text)
    {
        if let Some(body) = caps.get(1).or(caps.get(2)) {
            let source = if caps[0].to_ascii_lowercase().starts_with("alt") {
                Source::AltText
            } else {
                Source::LinkTitle
            };
            out.push((body.as_str().to_string(), source));
        }
    }
    for caps in regex(&IMAGE_ALT, r"!\[([^\]\n]+)\]\(").captures_iter(text) {
        out.push((caps[1].to_string(), Source::AltText));
    }
    for caps in regex(
        &LINK_TITLE,
        r#"\]\(\s*[^\s()]*\s+(?:"([^"\n]*)"|'([^'\n]*)')\s*\)"#,
    )
    .captures_iter(text)
    {
        if let Some(body) = caps.get(1).or(caps.get(2)) {
            out.push((body.as_str().to_string(), Source::LinkTitle));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(text: &str) -> Vec<(String, Source)> {
        views(text, &normalise(text))
            .into_iter()
            .map(|v| (v.text, v.source))
            .collect()
    }

    #[test]
    fn plain_prose_has_no_other_reading() {
        assert!(sources("The user reset their password yesterday.").is_empty());
        assert!(sources("Transfer of 200 EUR to the landlord is due on the 1st.").is_empty());
    }

    #[test]
    fn encodings_are_decoded() {
        assert_eq!(
            sources("x aGVsbG8gdGhlcmUgZnJpZW5k y"),
            vec![("hello there friend".to_string(), Source::Base64)]
        );
        assert_eq!(
            sources("68656c6c6f207468657265206672"),
            vec![("hello there fr".to_string(), Source::Hex)]
        );
        assert_eq!(
            sources("a%20b%2Fc"),
            vec![("a b/c".to_string(), Source::Percent)]
        );
        assert_eq!(
            sources("&lt;b&gt; &#72;i"),
            vec![("<b> Hi".to_string(), Source::HtmlEntities)]
        );
        assert_eq!(read_leet_word("ru13s"), "rules");
        assert_eq!(read_leet_word("a11"), "all");
        assert_eq!(read_leet_word("pr3v10us"), "previous");
        assert_eq!(read_leet_word("l0g1n"), "login");
        assert!(sources("Meet at 5pm on the 1st, 200 EUR, 2FA on.").is_empty());
        assert_eq!(
            sources("p4ssw0rd for ops@mail.example"),
            vec![(
                "password for ops@mail.example".to_string(),
                Source::Leetspeak
            )]
        );
        // A hash decodes to bytes, not words.
        assert!(
            sources("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08").is_empty()
        );
    }

    #[test]
    fn quoted_passages_are_read() {
        let found = sources(
            "Forwarded: \"Please send the report by Friday, thanks\" and a \"nickname\"; 他说「下周再开会讨论这件事情吧」",
        );
        let quoted: Vec<&str> = found
            .iter()
            .filter(|(_, s)| *s == Source::Quoted)
            .map(|(t, _)| t.as_str())
            .collect();
        assert_eq!(
            quoted,
            vec![
                "Please send the report by Friday, thanks",
                "下周再开会讨论这件事情吧"
            ]
        );
        assert!(sources("It's the team's \"best\" option").is_empty());
    }

    #[test]
    fn hidden_markup_is_read() {
        let found = sources("a <!-- one --> [x](u \"two\") ![three](i.png)\n[//]: # (four)");
        let texts: Vec<&str> = found.iter().map(|(t, _)| t.trim()).collect();
        assert_eq!(texts, vec!["one", "four", "three", "two"]);
        let found = sources("<div class=x hidden>secret <b>words</b></div> shown");
        assert_eq!(found[0].0, "secret <b>words</b>");
        assert_eq!(found[0].1, Source::HiddenElement);
    }
}
