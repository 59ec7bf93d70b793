//! Trace text clipped to the lengths a reflection quotes.

pub(super) fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// At most `max` characters, with "…" when cut.
pub(super) fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
        None => text.to_string(),
    }
}

/// Whitespace runs (newlines included) as single spaces, clipped to `max` characters.
pub(super) fn one_line(text: &str, max: usize) -> String {
    excerpt(&text.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

/// At most `max` bytes, cut at a character boundary.
pub(super) fn clip_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_string()
}
