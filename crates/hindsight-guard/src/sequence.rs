//! Consecutive writes of one source judged together. An attacker who knows that each write is
//! screened can split an instruction over two ("ignore all previous" + "instructions and …"):
//! each half passes alone. [`RecentWrites`] keeps, per bank, source and principal, the text of the
//! last write that passed, for a short window, so the next write is screened alone and also joined
//! with it. Pure: the caller passes the time in and owns the structure (one per node).

use std::collections::HashMap;

use hindsight_core::{MemoryId, Timestamp};

use crate::screener::Screener;
use crate::screening::Screening;

/// How much of a write's end is kept for joining. A split instruction straddles the boundary,
/// so the tail is what matters; keeping it bounded bounds the structure's memory.
const KEPT_TAIL_BYTES: usize = 1_024;

/// Who wrote: consecutive writes are judged together only when all of these agree.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WriteKey {
    pub bank: String,
    /// The kind of source and, for a tool, its name ("tool:web-fetch").
    pub source: String,
    /// The authenticated caller, when there is one.
    pub principal: Option<String>,
}

impl WriteKey {
    pub fn new(bank: impl Into<String>, source: impl Into<String>) -> WriteKey {
        WriteKey {
            bank: bank.into(),
            source: source.into(),
            principal: None,
        }
    }

    pub fn with_principal(mut self, principal: impl Into<String>) -> WriteKey {
        self.principal = Some(principal.into());
        self
    }
}

#[derive(Clone, Debug)]
struct Recent {
    tail: String,
    /// The write was held on its own: it is joined with the next by a space only.
    held: bool,
    at: Timestamp,
    memory: Option<MemoryId>,
    /// When it was last touched, for evicting the least recently written source.
    touched: u64,
}

/// The verdict on one write of a sequence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SequenceScreening {
    /// The write screened on its own.
    pub alone: Screening,
    /// Set when the write is harmless alone but an attack joined with the one before.
    pub split: Option<SplitWrite>,
}

/// An instruction split over two writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitWrite {
    /// The flags of the joined text; each says it was found in two writes joined.
    pub screening: Screening,
    /// The earlier half, for the caller to quarantine too.
    pub previous: Option<MemoryId>,
}

impl SequenceScreening {
    pub fn is_flagged(&self) -> bool {
        self.alone.is_flagged() || self.split.is_some()
    }

    /// The write's own reason if it has one, else the split's.
    pub fn quarantine_reason(&self) -> Option<String> {
        self.alone
            .quarantine_reason()
            .or_else(|| self.split.as_ref()?.screening.quarantine_reason())
    }
}

/// The last harmless write of each recent source, bounded in count and age.
#[derive(Clone, Debug)]
pub struct RecentWrites {
    window_ms: i64,
    capacity: usize,
    entries: HashMap<WriteKey, Recent>,
    clock: u64,
}

impl RecentWrites {
    /// Ten minutes: long enough for an agent's burst of writes, short enough that unrelated
    /// notes written hours apart are never read as one.
    pub const DEFAULT_WINDOW_MS: i64 = 10 * 60 * 1_000;
    /// Sources remembered at once; at most about 1 KiB each.
    pub const DEFAULT_CAPACITY: usize = 4_096;

    pub fn new(window_ms: i64, capacity: usize) -> RecentWrites {
        RecentWrites {
            window_ms,
            capacity: capacity.max(1),
            entries: HashMap::new(),
            clock: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Text bytes held, for memory accounting.
    pub fn bytes(&self) -> usize {
        self.entries.values().map(|r| r.tail.len()).sum()
    }

    /// Screens `content`, written by `key` at `now`, alone and joined with the previous write of
    /// `key` inside the window. A write flagged as the second half of a split is not kept as a
    /// first half: both halves are held already. A write flagged alone is: only a match that
    /// starts in it and ends in the next write counts, so the next write is held only when it
    /// completes an instruction the first began ("… must forget its earlier" / "instructions and
    /// …"), not for the first one's own words.
    pub fn screen(
        &mut self,
        screener: &Screener,
        key: &WriteKey,
        content: &str,
        untrusted: bool,
        memory: Option<MemoryId>,
        now: Timestamp,
    ) -> SequenceScreening {
        let alone = screener.screen_with_trust(content, untrusted);
        let previous = self
            .entries
            .remove(key)
            .filter(|recent| now.0 >= recent.at.0 && now.0 - recent.at.0 <= self.window_ms);
        if alone.is_flagged() {
            self.remember(key, content, memory, now, true);
            return SequenceScreening { alone, split: None };
        }
        if let Some(previous) = previous {
            let joined = if previous.held {
                screener.screen_joined_spaced(&previous.tail, content, untrusted)
            } else {
                screener.screen_joined(&previous.tail, content, untrusted)
            };
            if joined.is_flagged() {
                return SequenceScreening {
                    alone,
                    split: Some(SplitWrite {
                        screening: joined,
                        previous: previous.memory,
                    }),
                };
            }
        }
        self.remember(key, content, memory, now, false);
        SequenceScreening { alone, split: None }
    }

    fn remember(
        &mut self,
        key: &WriteKey,
        content: &str,
        memory: Option<MemoryId>,
        now: Timestamp,
        held: bool,
    ) {
        if self.entries.len() >= self.capacity {
            self.evict(now);
        }
        self.clock += 1;
        self.entries.insert(
            key.clone(),
            Recent {
                tail: tail(content, KEPT_TAIL_BYTES).to_string(),
                held,
                at: now,
                memory,
                touched: self.clock,
            },
        );
    }

    /// Drops what has left the window, and if that frees nothing, the least recently written.
    fn evict(&mut self, now: Timestamp) {
        let window_ms = self.window_ms;
        self.entries
            .retain(|_, recent| now.0 >= recent.at.0 && now.0 - recent.at.0 <= window_ms);
        while self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, recent)| recent.touched)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(key) => self.entries.remove(&key),
                None => break,
            };
        }
    }
}

impl Default for RecentWrites {
    fn default() -> Self {
        RecentWrites::new(Self::DEFAULT_WINDOW_MS, Self::DEFAULT_CAPACITY)
    }
}

/// The last `max_bytes` of `text` or fewer, cut at a character boundary.
fn tail(text: &str, max_bytes: usize) -> &str {
    let mut start = text.len().saturating_sub(max_bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_cut_on_character_boundaries() {
        assert_eq!(tail("abc", 10), "abc");
        assert_eq!(tail("abcdef", 2), "ef");
        assert_eq!(tail("转账转账", 4), "账");
    }
}
