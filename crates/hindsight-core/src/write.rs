use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bank::BankName;
use crate::error::ValidationError;
use crate::id::MemoryId;
use crate::limits::Limits;
use crate::memory::{Kind, Provenance, Subtype};
use crate::time::Timestamp;

/// A write as a client states it, before the service adds what it derives (id, entities, slot, times).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WriteRequest {
    pub bank: BankName,
    pub content: String,
    pub kind: Kind,
    pub subtype: Option<Subtype>,
    pub provenance: Provenance,
    pub occurred_at: Option<Timestamp>,
    /// Seconds after `occurred_at` at which the memory expires.
    pub ttl_secs: Option<u64>,
    pub confidence: Option<f32>,
    pub importance: Option<f32>,
    pub critical: bool,
    pub tags: Vec<String>,
    pub metadata: BTreeMap<String, String>,
}

impl WriteRequest {
    pub fn new(bank: BankName, content: impl Into<String>, provenance: Provenance) -> Self {
        WriteRequest {
            bank,
            content: content.into(),
            kind: Kind::Semantic,
            subtype: None,
            provenance,
            occurred_at: None,
            ttl_secs: None,
            confidence: None,
            importance: None,
            critical: false,
            tags: vec![],
            metadata: BTreeMap::new(),
        }
    }

    /// Checks every field against `limits`. Content is trimmed of surrounding whitespace first.
    pub fn validate(&mut self, limits: &Limits) -> Result<(), ValidationError> {
        let trimmed = self.content.trim();
        if trimmed.is_empty() {
            return Err(ValidationError::EmptyContent);
        }
        if trimmed.len() != self.content.len() {
            self.content = trimmed.to_string();
        }
        if self.content.len() > limits.max_content_bytes {
            return Err(ValidationError::ContentTooLong {
                len: self.content.len(),
                max: limits.max_content_bytes,
            });
        }
        for (field, value) in [
            ("confidence", self.confidence),
            ("importance", self.importance),
        ] {
            if let Some(v) = value {
                if !(0.0..=1.0).contains(&v) || v.is_nan() {
                    return Err(ValidationError::OutOfRange {
                        field,
                        value: v.to_string(),
                        min: "0".into(),
                        max: "1".into(),
                    });
                }
            }
        }
        if let Some(ttl) = self.ttl_secs.filter(|t| !(1..=MAX_TTL_SECS).contains(t)) {
            return Err(ValidationError::OutOfRange {
                field: "ttl_seconds",
                value: ttl.to_string(),
                min: "1".into(),
                max: format!("{MAX_TTL_SECS} (100 years; omit for no expiry)"),
            });
        }
        if let Some(c) = self.content.chars().find(|c| is_forbidden_control(*c)) {
            return Err(ValidationError::Invalid(format!(
                "content holds the control character U+{:04X}: only tab, line feed and carriage return are allowed",
                c as u32
            )));
        }
        if self.subtype.is_some() && self.kind != Kind::Semantic {
            return Err(ValidationError::Invalid(format!(
                "subtype is only meaningful for semantic memories, not {}",
                self.kind
            )));
        }
        check_count("tags", self.tags.len(), limits.max_tags)?;
        for tag in &self.tags {
            check_len("tags", tag, limits.max_tag_bytes)?;
            if tag.trim().is_empty() {
                return Err(ValidationError::Invalid("tags must not be empty".into()));
            }
        }
        check_count("metadata", self.metadata.len(), limits.max_metadata_entries)?;
        for (key, value) in &self.metadata {
            check_len("metadata key", key, limits.max_metadata_key_bytes)?;
            check_len("metadata value", value, limits.max_metadata_value_bytes)?;
        }
        let p = &self.provenance;
        for value in [
            &p.tool,
            &p.agent_id,
            &p.session_id,
            &p.task_id,
            &p.tool_call_id,
        ]
        .into_iter()
        .flatten()
        {
            check_len("provenance", value, limits.max_provenance_bytes)?;
        }
        Ok(())
    }
}

/// The longest time to live a write may ask for. Longer would mean "never", which is what
/// leaving it out says; a bound keeps every expiry within the range times are computed in.
pub const MAX_TTL_SECS: u64 = 100 * 365 * 24 * 3600;

/// Control characters no text a person or an agent writes needs, and that hide content from
/// whoever reads it (NUL ends strings in C tools and logs; escapes rewrite a terminal).
fn is_forbidden_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

pub(crate) fn check_count(
    field: &'static str,
    len: usize,
    max: usize,
) -> Result<(), ValidationError> {
    if len > max {
        return Err(ValidationError::TooMany { field, len, max });
    }
    Ok(())
}

pub(crate) fn check_len(
    field: &'static str,
    value: &str,
    max: usize,
) -> Result<(), ValidationError> {
    if value.len() > max {
        return Err(ValidationError::FieldTooLong {
            field,
            len: value.len(),
            max,
        });
    }
    Ok(())
}

/// What happened to one write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Disposition {
    Created,
    /// A near-duplicate already existed; the write was merged into it.
    MergedInto {
        target: MemoryId,
        similarity: f32,
    },
    Quarantined {
        reason: String,
    },
    /// Not kept: an agent's automatic write or a reflection's candidate that scored below the
    /// importance threshold. Nothing was stored.
    RejectedLowImportance {
        scores: ImportanceScores,
    },
}

impl Disposition {
    pub fn name(&self) -> &'static str {
        match self {
            Disposition::Created => "created",
            Disposition::MergedInto { .. } => "merged",
            Disposition::Quarantined { .. } => "quarantined",
            Disposition::RejectedLowImportance { .. } => "rejected_low_importance",
        }
    }
}

/// How worth keeping a candidate memory is: likely reuse, bearing on decisions, how long it stays
/// true and what it adds to the bank, each in 0..=1, and their weighted total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportanceScores {
    pub reuse: f32,
    pub impact: f32,
    pub stability: f32,
    pub uniqueness: f32,
    pub total: f32,
}

impl std::fmt::Display for ImportanceScores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "importance {:.2} (reuse {:.2}, impact {:.2}, stability {:.2}, uniqueness {:.2})",
            self.total, self.reuse, self.impact, self.stability, self.uniqueness
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WriteOutcome {
    pub id: MemoryId,
    pub disposition: Disposition,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::SourceKind;

    fn request(content: &str) -> WriteRequest {
        WriteRequest::new(
            "a/b".parse().unwrap(),
            content,
            Provenance::from_source(SourceKind::User),
        )
    }

    #[test]
    fn rejects_empty_and_oversized_content() {
        let limits = Limits::default();
        assert_eq!(
            request("   ").validate(&limits),
            Err(ValidationError::EmptyContent)
        );
        let big = "x".repeat(limits.max_content_bytes + 1);
        assert!(matches!(
            request(&big).validate(&limits),
            Err(ValidationError::ContentTooLong { .. })
        ));
        let mut ok = request("  fine  ");
        ok.validate(&limits).unwrap();
        assert_eq!(ok.content, "fine");
    }

    #[test]
    fn rejects_out_of_range_numbers_and_oversized_fields() {
        let limits = Limits::default();
        let mut r = request("x");
        r.confidence = Some(1.5);
        assert!(r.validate(&limits).is_err());
        let mut r = request("x");
        r.ttl_secs = Some(0);
        assert!(r.validate(&limits).is_err());
        let mut r = request("x");
        r.tags = (0..40).map(|i| i.to_string()).collect();
        assert!(matches!(
            r.validate(&limits),
            Err(ValidationError::TooMany { .. })
        ));
        let mut r = request("x");
        r.kind = Kind::Episodic;
        r.subtype = Some(Subtype::Fact);
        assert!(r.validate(&limits).is_err());
    }

    #[test]
    fn a_time_to_live_beyond_a_century_is_refused_rather_than_wrapped() {
        let limits = Limits::default();
        for ttl in [MAX_TTL_SECS + 1, 1 << 63, u64::MAX] {
            let mut r = request("x");
            r.ttl_secs = Some(ttl);
            let err = r.validate(&limits).unwrap_err().to_string();
            assert!(err.contains("ttl_seconds"), "{err}");
        }
        let mut r = request("x");
        r.ttl_secs = Some(MAX_TTL_SECS);
        r.validate(&limits).unwrap();
    }

    #[test]
    fn control_characters_other_than_line_breaks_and_tabs_are_refused() {
        let limits = Limits::default();
        for content in ["before\0after", "bell\u{7}", "esc\u{1b}[2J", "c1\u{85}x"] {
            let err = request(content).validate(&limits).unwrap_err().to_string();
            assert!(err.contains("control character"), "{content:?}: {err}");
        }
        request("line one\nline two\twith a tab\r\n")
            .validate(&limits)
            .unwrap();
    }
}
