//! Write-time screening with the default rules, over any text a client could send as content.
//! The screener runs on every write, before anything is stored, so a panic here would fail writes
//! and a verdict that changes between calls would let the same text through on a retry.

#![no_main]

use std::sync::OnceLock;

use hindsight_guard::{GuardConfig, Screener};
use libfuzzer_sys::fuzz_target;

fn screener() -> &'static Screener {
    static SCREENER: OnceLock<Screener> = OnceLock::new();
    SCREENER.get_or_init(|| Screener::new(&GuardConfig::default()).expect("default guard config"))
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let screener = screener();

    let trusted = screener.screen_with_trust(&text, false);
    assert_eq!(
        trusted,
        screener.screen_with_trust(&text, false),
        "screening is not deterministic"
    );
    assert_eq!(trusted.quarantine_reason().is_some(), trusted.is_flagged());

    // Untrusted content is checked by every rule a trusted one is, and then some: a flag raised
    // for trusted content must not disappear when the same text comes from an untrusted source.
    let untrusted = screener.screen_with_trust(&text, true);
    for flag in &trusted.flags {
        assert!(
            untrusted.flags.contains(flag),
            "flag {flag:?} raised for trusted content but not for untrusted"
        );
    }
    assert_eq!(untrusted.sensitive_topics, trusted.sensitive_topics);
    assert_eq!(screener.sensitive_topics(&text), trusted.sensitive_topics);

    if screener.is_safety_rule(&text) {
        assert!(!trusted.is_flagged(), "a flagged text counted as a safety rule");
    }

    // The split point may fall inside a multi-byte character: back off to a boundary as a caller
    // holding two separate strings would have.
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid -= 1;
    }
    let (rule, candidate) = text.split_at(mid);
    let _ = screener.weakens(rule, candidate);
});
