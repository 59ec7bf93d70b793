use std::borrow::Cow;

/// Characters that render as nothing. Attackers put them inside words ("ig\u{200B}nore") so that a
/// pattern no longer matches, or use Unicode tag characters to smuggle a whole hidden sentence.
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// Control characters other than line breaks and tabs: no natural-language memory needs them, and
/// a NUL between the letters of a word ("i\0g\0n\0o\0r\0e") hides it from every pattern just as a
/// zero-width space does. Escape (terminal colours in tool output) is left alone.
pub(crate) fn is_hiding_control(c: char) -> bool {
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{1b}'))
        || matches!(c, '\u{80}'..='\u{9f}')
}

/// The text patterns are matched against: invisible and control characters removed and full-width Latin
/// letters, digits and `＠` folded to ASCII, so "ＳＹＳＴＥＭ" or "ig\u{200B}nore" read as written.
/// Full-width punctuation is kept: Chinese patterns rely on "：" and "。".
pub(crate) fn normalise(text: &str) -> Cow<'_, str> {
    let needs_work = text
        .chars()
        .any(|c| is_invisible(c) || is_hiding_control(c) || fold_full_width(c).is_some());
    if !needs_work {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .filter(|&c| !is_invisible(c) && !is_hiding_control(c))
            .map(|c| fold_full_width(c).unwrap_or(c))
            .collect(),
    )
}

fn fold_full_width(c: char) -> Option<char> {
    match c {
        '\u{FF10}'..='\u{FF19}' | '\u{FF20}'..='\u{FF3A}' | '\u{FF41}'..='\u{FF5A}' => {
            char::from_u32(c as u32 - 0xFEE0)
        }
        _ => None,
    }
}

/// A one-line, bounded excerpt for reasons and logs: whitespace collapsed, invisible characters
/// shown as escapes (an admin must see that they were there), double quotes softened so the
/// excerpt can sit inside quotes.
pub(crate) fn excerpt(matched: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut pending_space = false;
    for c in matched.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if count >= max_chars {
            out.push('…');
            return out;
        }
        if pending_space {
            out.push(' ');
            count += 1;
            pending_space = false;
        }
        if is_invisible(c) || is_hiding_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else if c == '"' {
            out.push('\'');
        } else {
            out.push(c);
        }
        count += 1;
    }
    // A trailing full stop or comma is an artefact of where a pattern ended, not evidence.
    let kept = out
        .trim_end_matches(['.', ',', ';', '。', '，', '；', '、'])
        .len();
    out.truncate(kept);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_strips_invisible_and_folds_full_width() {
        assert_eq!(normalise("dis\u{200B}regard"), "disregard");
        assert_eq!(normalise("ＳＹＳＴＥＭ：ｈｉ１"), "SYSTEM：hi1");
        assert_eq!(normalise("a＠b.example"), "a@b.example");
        assert_eq!(normalise("i\0g\u{7f}n\u{85}ore\ttab"), "ignore\ttab");
        assert!(matches!(normalise("plain text"), Cow::Borrowed(_)));
    }

    #[test]
    fn excerpt_is_one_line_bounded_and_shows_hidden_characters() {
        assert_eq!(excerpt("  send\n the   key ", 80), "send the key");
        assert_eq!(excerpt("abcdef", 3), "abc…");
        assert_eq!(excerpt("a\u{200B}b", 80), "a\\u{200b}b");
        assert_eq!(excerpt("say \"hi\"", 80), "say 'hi'");
        assert_eq!(excerpt("跳过短信验证。", 80), "跳过短信验证");
    }
}
