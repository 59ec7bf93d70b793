//! Shared helpers for the guard's integration tests: one default screener, provenances and
//! encoders for building obfuscated attack texts.

use std::sync::OnceLock;

use hindsight_core::{Provenance, SourceKind};
use hindsight_guard::{GuardConfig, Screener, Screening};

pub fn screener() -> &'static Screener {
    static SCREENER: OnceLock<Screener> = OnceLock::new();
    SCREENER.get_or_init(|| Screener::new(&GuardConfig::default()).unwrap())
}

pub fn user() -> Provenance {
    Provenance::from_source(SourceKind::User)
}

pub fn web() -> Provenance {
    let mut provenance = Provenance::from_source(SourceKind::Tool);
    provenance.tool = Some("browser_fetch".into());
    provenance
}

pub fn screen_as_user(text: &str) -> Screening {
    screener().screen(text, &user())
}

/// Every text must be flagged, from the user and from the web alike.
pub fn assert_all_flagged(texts: &[String]) {
    let mut missed = vec![];
    for text in texts {
        for provenance in [user(), web()] {
            if !screener().screen(text, &provenance).is_flagged() {
                missed.push(format!("{text:?} from {:?}", provenance.source));
            }
        }
    }
    assert!(missed.is_empty(), "not flagged:\n{}", missed.join("\n"));
}

/// No text may be flagged, from the user or from the web.
pub fn assert_all_clean(texts: &[&str]) {
    let mut wrong = vec![];
    for text in texts {
        for provenance in [user(), web()] {
            let screening = screener().screen(text, &provenance);
            if screening.is_flagged() {
                wrong.push(format!(
                    "{text:?} from {:?}: {:?}",
                    provenance.source,
                    screening.quarantine_reason()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "false positives:\n{}", wrong.join("\n"));
}

pub fn owned(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The URL-safe alphabet without padding.
pub fn base64url(text: &str) -> String {
    base64(text)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

pub fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}
