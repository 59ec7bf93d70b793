//! Language-aware text processing for Hindsight, for English and Chinese alike: search terms,
//! entities, time expressions, change and negation cues, value slots, language detection and
//! token counting. Pure functions over strings: no I/O, every dictionary is compiled in.
//!
//! - [`Analyzer`]: BM25 terms (jieba search-mode segmentation for Chinese, Snowball stemming and
//!   stop words for English, identifiers kept whole).
//! - [`extract_entities`], [`query_entities`], [`entity_candidates`]: entity-graph keys that
//!   link across languages ("Project Falcon" and "Falcon项目" both give `falcon`).
//! - [`parse_time_window`], [`strip_time_expr`]: relative and absolute time expressions
//!   resolved against a query's `as_of`.
//! - [`has_negation`], [`has_change_cue`], [`has_hedge`], [`has_override_cue`]: lexical cues for
//!   the rules judge and the guard.
//! - [`extract_slot`]: the (subject, attribute, value) a statement fills, for conflict detection.
//! - [`asks_about_present`]: a question about the present moment or the next few hours.
//! - [`in_user_voice`]: a question about "the user" as the user would have asked it.
//! - [`detect_lang`], [`count_tokens`].
//!
//! ```
//! use chrono::{TimeZone, Utc};
//!
//! let as_of = Utc.with_ymd_and_hms(2026, 3, 18, 10, 0, 0).unwrap();
//! let window = hindsight_text::parse_time_window("What did we decide last week?", as_of).unwrap();
//! assert_eq!(window.expr, "last week");
//! assert_eq!(hindsight_text::extract_entities("Falcon项目下周上线"), vec!["falcon"]);
//! let slot = hindsight_text::extract_slot("我最近改喝拿铁了。").unwrap();
//! assert_eq!((slot.attribute.as_str(), slot.value.as_str()), ("coffee", "latte"));
//! ```
//!
//! Everything is `Send + Sync`; the heavy tables are built once on first use, or up front with
//! [`warm_up`].

#![warn(missing_docs)]

mod analyzer;
mod cues;
mod entities;
pub mod grammar;
mod lang;
mod lexicon;
mod present;
mod script;
mod slot;
mod stopwords;
mod time_expr;
mod tokens;
mod voice;

pub use analyzer::Analyzer;
pub use cues::{
    find_cues, has_change_cue, has_hedge, has_negation, has_override_cue, Cue, CueKind,
};
pub use entities::{entity_candidates, extract_entities, query_entities};
pub use lang::{detect_lang, Lang};
pub use present::asks_about_present;
pub use slot::{extract_slot, Slot, USER_SUBJECT};
pub use stopwords::{is_chinese_stop_word, is_english_stop_word};
pub use time_expr::{
    find_time_windows, find_time_windows_tz, parse_time_window, parse_time_window_tz,
    strip_time_expr, TimeWindow,
};
pub use tokens::{count_tokens, truncate_to_tokens, warm_up_tokenizer};
pub use voice::{in_user_voice, naming_as_user, SelfIntroduction};

/// Builds the segmenter, the tokenizer and the pattern tables now (a few hundred milliseconds),
/// so that the first request does not pay for them.
pub fn warm_up() {
    let _ = Analyzer::shared();
    warm_up_tokenizer();
    let _ = strip_time_expr("yesterday");
    let _ = extract_slot("I live in Berlin.");
}
