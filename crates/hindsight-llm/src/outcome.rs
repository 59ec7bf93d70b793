use serde::{Deserialize, Serialize};

use crate::{Deferred, JudgeItem, TokenUsage, Verdict};

/// What a judge call produced. Every item of the batch is in exactly one of `verdicts` and
/// `deferred`, each list in the batch's order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeOutcome {
    pub verdicts: Vec<Verdict>,
    pub deferred: Vec<Deferred>,
    /// Tokens spent, including on answers that failed validation. Cached verdicts cost none.
    pub usage: TokenUsage,
    /// Chat completions asked for, counting re-asks after invalid answers but not the client's
    /// own retries of failed HTTP exchanges.
    pub requests: u32,
    /// Verdicts served from the pair cache.
    pub cache_hits: u32,
}

impl JudgeOutcome {
    pub fn verdict(&self, id: &str) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.id == id)
    }

    pub fn deferred(&self, id: &str) -> Option<&Deferred> {
        self.deferred.iter().find(|d| d.id == id)
    }

    /// True when every item got a verdict.
    pub fn is_complete(&self) -> bool {
        self.deferred.is_empty()
    }

    /// Puts both lists in the order of `items`.
    pub(crate) fn sort_like(&mut self, items: &[JudgeItem]) {
        let position = |id: &str| items.iter().position(|i| i.id == id);
        self.verdicts.sort_by_key(|v| position(&v.id));
        self.deferred.sort_by_key(|d| position(&d.id));
    }
}
