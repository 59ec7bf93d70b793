//! The vocabulary of one chat exchange: what is asked and what comes back.

use serde::{Deserialize, Serialize};

use crate::TokenUsage;

/// Who wrote a message in the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a chat conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::System,
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A chat completion to ask for.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    /// Overrides the configured temperature; consensus samples need some spread to be worth
    /// taking.
    pub temperature: Option<f32>,
    /// Ask for `response_format: {"type": "json_object"}`. Servers that refuse it are asked
    /// again without it, and the client stops sending it to them.
    pub json_object: bool,
}

impl ChatRequest {
    /// A request for a JSON object at the configured temperature.
    pub fn json(messages: Vec<ChatMessage>) -> Self {
        ChatRequest {
            messages,
            temperature: None,
            json_object: true,
        }
    }
}

/// The model's answer to a [`ChatRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChatCompletion {
    /// Text of the first choice.
    pub content: String,
    /// Why generation stopped, as the server said (`stop`, `length`, ...).
    pub finish_reason: Option<String>,
    /// Tokens this request cost.
    pub usage: TokenUsage,
    /// Whether the request carried `response_format` (false once the server has refused it).
    pub json_mode: bool,
}

impl ChatCompletion {
    /// True when the answer was cut off by the output token limit, which usually leaves
    /// unfinished JSON behind.
    pub fn hit_token_limit(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}
