//! Token accounting for chat requests.

use std::ops::{Add, AddAssign};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

use crate::ChatMessage;

/// Tokens spent on chat requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// True when any part was counted locally because the server reported no `usage`.
    pub estimated: bool,
}

impl TokenUsage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    pub fn is_zero(&self) -> bool {
        self.total() == 0
    }
}

impl AddAssign for TokenUsage {
    fn add_assign(&mut self, other: TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.estimated |= other.estimated;
    }
}

impl Add for TokenUsage {
    type Output = TokenUsage;

    fn add(mut self, other: TokenUsage) -> TokenUsage {
        self += other;
        self
    }
}

fn bpe() -> &'static CoreBPE {
    static BPE: OnceLock<CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| {
        tiktoken_rs::cl100k_base().expect("the cl100k_base ranks are embedded in tiktoken-rs")
    })
}

/// `cl100k_base` tokens in `text`. Other model families tokenize differently, so for them
/// this is an estimate good to within a few tens of percent, which is what budgets need.
/// Special-token markers are counted as plain text: memory content is data, never control.
pub fn count_tokens(text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    bpe().encode_ordinary(text).len() as u64
}

/// Estimated prompt tokens of a conversation, using OpenAI's published framing overhead:
/// 3 tokens per message plus 3 that prime the reply.
pub fn count_prompt_tokens(messages: &[ChatMessage]) -> u64 {
    const PER_MESSAGE: u64 = 3;
    const REPLY_PRIMING: u64 = 3;
    messages
        .iter()
        .map(|m| PER_MESSAGE + count_tokens(m.role.as_str()) + count_tokens(&m.content))
        .sum::<u64>()
        + REPLY_PRIMING
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_tokens() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("hello world"), 2);
        let messages = [ChatMessage::system("hello world"), ChatMessage::user("hi")];
        // 2 x (3 + 1 role token) + 2 + 1 + 3
        assert_eq!(count_prompt_tokens(&messages), 14);
    }

    #[test]
    fn usage_adds_up() {
        let mut u = TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 2,
            estimated: false,
        };
        u += TokenUsage {
            prompt_tokens: 5,
            completion_tokens: 1,
            estimated: true,
        };
        assert_eq!(u.total(), 18);
        assert!(u.estimated);
    }
}
