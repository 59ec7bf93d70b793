//! Token counting with a real BPE vocabulary.
//!
//! Budgets are stated in the tokens an LLM will see, so counting uses OpenAI's `cl100k_base`
//! encoding. Its ranks are compiled into `tiktoken-rs`, so nothing is read or fetched at run time.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

fn bpe() -> &'static CoreBPE {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| {
        tiktoken_rs::cl100k_base().expect("the cl100k_base ranks are embedded in tiktoken-rs")
    })
}

/// Loads the tokenizer now rather than on the first count (it takes tens of milliseconds), e.g.
/// at service start-up.
pub fn warm_up_tokenizer() {
    let _ = bpe();
}

/// Number of `cl100k_base` tokens in `text`. Special-token markers such as `<|endoftext|>` are
/// counted as ordinary text, since memory content is data, never control.
pub fn count_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    bpe().encode_ordinary(text).len()
}

/// The longest prefix of `text`, cut at a character boundary, that fits in `max_tokens`.
pub fn truncate_to_tokens(text: &str, max_tokens: usize) -> &str {
    if max_tokens == 0 {
        return "";
    }
    let tokens = bpe().encode_ordinary(text);
    if tokens.len() <= max_tokens {
        return text;
    }
    // Token boundaries can fall inside a multi-byte character; decode the kept prefix bytewise
    // and back off to the last whole character.
    let bytes: usize = bpe()
        ._decode_native_and_split(tokens[..max_tokens].to_vec())
        .map(|b| b.len())
        .sum();
    let mut end = bytes.min(text.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_english() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("hello world"), 2);
        assert_eq!(count_tokens("The user prefers tea."), 5);
    }

    #[test]
    fn counts_chinese_and_special_markers() {
        let zh = count_tokens("用户喜欢喝茶。");
        assert!((4..=12).contains(&zh), "{zh}");
        // Treated as text, so it costs several tokens rather than one special token.
        assert!(count_tokens("<|endoftext|>") > 1);
    }

    #[test]
    fn longer_text_costs_more() {
        let short = count_tokens("I live in Berlin.");
        let long = count_tokens("I live in Berlin. My favourite editor is Vim and I drink tea.");
        assert!(long > short);
    }

    #[test]
    fn truncates_on_char_boundaries() {
        let text = "我住在北京，喜欢喝茶，也喜欢跑步。";
        for max in 0..12 {
            let cut = truncate_to_tokens(text, max);
            assert!(text.starts_with(cut));
            assert!(count_tokens(cut) <= max, "{max}: {cut}");
        }
        assert_eq!(truncate_to_tokens("hello world", 5), "hello world");
        assert_eq!(truncate_to_tokens("hello world", 1), "hello");
    }
}
