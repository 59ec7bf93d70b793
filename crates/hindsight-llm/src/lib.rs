//! OpenAI-compatible chat completions for Hindsight's review judges.
//!
//! The review step finds candidate pairs of memories cheaply (same slot, close embeddings) and
//! asks a judge how each pair relates. This crate is the LLM judge: it talks to any endpoint
//! that speaks OpenAI's `POST {base_url}/chat/completions` (OpenAI, DeepSeek, Qwen, vLLM,
//! Ollama, llama.cpp server) and never trusts what comes back.
//!
//! - [`ChatClient`] sends one request, asking for `response_format: {"type":"json_object"}`
//!   and dropping it for servers that refuse it. It retries timeouts, connection failures,
//!   HTTP 5xx and 429 (honouring `Retry-After` up to `max_backoff`) with exponential backoff,
//!   and fails at once on other 4xx. Errors are [`ChatError`].
//! - [`PairJudge`] turns a batch of 1 to [`MAX_BATCH_ITEMS`] [`JudgeItem`]s into one prompt
//!   that carries each memory's content, source, time and confidence, checks the answer
//!   strictly, re-asks for what failed, and returns a [`JudgeOutcome`] in which every item is
//!   either a [`Verdict`] or [`Deferred`] with a reason. Nothing is dropped.
//! - Verdicts are cached per pair (bounded LRU). The key is the model plus both memories'
//!   content, source and time, independent of which is `a`; a cached verdict costs no
//!   request and no tokens, and its side is flipped when the pair comes in the other way
//!   round. Confidence is not part of the key: it drifts every cycle through decay, and a
//!   key that moved with it would never hit. Only valid verdicts are cached, never deferrals.
//! - [`PairJudge::consensus`] takes an odd number of samples and a per-pair majority; a tie
//!   is `undecidable`.
//! - [`check_quarantined`] takes a second look at memories the write-time screen held back and
//!   answers per memory `confirm` or `release`, with the same strict checking and re-asking.
//! - [`TokenUsage`] comes from the server's `usage` when given, otherwise from a local
//!   `cl100k_base` count. [`PairJudge::estimate_prompt_tokens`] tells a caller what a batch
//!   will cost before it is sent, so per-cycle budgets can be kept.
//!
//! # The answer schema
//!
//! The model must answer with one JSON object:
//!
//! ```json
//! {"verdicts": [
//!   {"id": "p1", "relation": "update", "newer_or_fact": "b", "reason": "moved in June"}
//! ]}
//! ```
//!
//! - `verdicts`: array, with exactly one entry for each pair id asked about;
//! - `id`: string, one of the ids asked about (entries for other ids are ignored);
//! - `relation`: exactly one of `duplicate`, `update`, `inference_refuted`,
//!   `source_conflict`, `undecidable`, `unrelated`;
//! - `newer_or_fact`: `"a"`, `"b"` or `null`; required (non-null) for `update` (the current
//!   memory) and `inference_refuted` (the fact); ignored for the other relations;
//! - `reason`: string.
//!
//! A pair with no entry, more than one entry, or an entry breaking any rule has no valid
//! verdict; the other pairs of the same answer are still accepted. Text around the object
//! (a Markdown fence, a sentence) is tolerated because servers without JSON mode add it.
//!
//! # Example
//!
//! ```no_run
//! use hindsight_llm::{ChatClient, ChatConfig, JudgeConfig, JudgeItem, PairJudge, Statement};
//!
//! let client = ChatClient::new(ChatConfig {
//!     base_url: "http://127.0.0.1:8080/v1".into(),
//!     model: "qwen2.5-7b-instruct".into(),
//!     api_key_env: None,
//!     ..ChatConfig::default()
//! })?;
//! let judge = PairJudge::new(client, JudgeConfig::default())?;
//! let items = vec![JudgeItem::new(
//!     "p1",
//!     Statement::new("Lives in Berlin", "user", "2024-01-10T09:00:00Z", 0.9),
//!     Statement::new("Moved to Munich", "user", "2024-06-02T18:30:00Z", 0.9),
//! )];
//! if judge.estimate_prompt_tokens(&items) <= 4_000 {
//!     let outcome = judge.judge(&items)?;
//!     for verdict in &outcome.verdicts { /* apply the conflict strategy */ }
//!     for pair in &outcome.deferred { /* keep for the next cycle */ }
//!     println!("spent {} tokens", outcome.usage.total());
//! }
//! # Ok::<(), hindsight_llm::ChatError>(())
//! ```

mod answer;
mod backoff;
mod cache;
mod chat;
mod client;
mod config;
mod consensus;
mod error;
mod item;
mod judge;
mod judge_config;
mod outcome;
mod prompt;
mod quarantine;
mod reflect;
mod usage;
mod verdict;

pub use chat::{ChatCompletion, ChatMessage, ChatRequest, Role};
pub use client::ChatClient;
pub use config::ChatConfig;
pub use error::ChatError;
pub use item::{JudgeItem, Statement};
pub use judge::{PairJudge, MAX_BATCH_ITEMS, TOKENIZER_MARGIN};
pub use judge_config::JudgeConfig;
pub use outcome::JudgeOutcome;
pub use quarantine::{
    check_quarantined, QuarantineDecision, QuarantineItem, QuarantineOutcome, QuarantineVerdict,
};
pub use reflect::{LlmReflectConfig, LlmReflection, LlmReflector, MAX_MEMORY_CHARS};
pub use usage::{count_prompt_tokens, count_tokens, TokenUsage};
pub use verdict::{Deferred, Relation, Side, Verdict};
