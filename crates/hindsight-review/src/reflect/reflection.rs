//! A candidate memory drawn from a trace, with its tags.

use hindsight_core::{Kind, Subtype, WriteOutcome};
use serde::{Deserialize, Serialize};

use super::clip::clip_bytes;

/// Bytes of one tag (the write path's limit).
pub(super) const MAX_TAG_BYTES: usize = 64;

/// A candidate memory drawn from a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reflection {
    /// Always [`Kind::Semantic`] for what reflection finds: facts, procedures and lessons are
    /// what is known, not events.
    pub kind: Kind,
    /// `preference` (also for constraints), `fact`, `procedure` or `lesson`.
    pub subtype: Option<Subtype>,
    pub content: String,
    /// Filterable labels: the subtype, `constraint`, `tool:<name>`, `outcome:<outcome>`.
    pub tags: Vec<String>,
    /// Which part of the trace it came from, for whoever reviews the memory later.
    pub why: String,
}

impl Reflection {
    /// A semantic memory of `subtype`.
    pub fn semantic(subtype: Subtype, content: impl Into<String>, why: impl Into<String>) -> Self {
        Reflection {
            kind: Kind::Semantic,
            subtype: Some(subtype),
            content: content.into(),
            tags: vec![subtype.as_str().to_string()],
            why: why.into(),
        }
    }

    pub(super) fn tagged(mut self, tag: impl Into<String>) -> Self {
        let tag = clip_bytes(&tag.into(), MAX_TAG_BYTES);
        if !tag.trim().is_empty() && !self.tags.contains(&tag) {
            self.tags.push(tag);
        }
        self
    }
}

/// What one `reflect` call kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReflectReport {
    pub reflector: String,
    /// Each reflection with what became of it (absent on a dry run).
    pub memories: Vec<(Reflection, Option<WriteOutcome>)>,
    pub tokens_used: u64,
}
