//! Load shedding on the write path: a node holds at most `rate_limit.max_pending_writes` memories
//! between admitting a write and answering it. Everything a write costs (screening, embedding,
//! the duplicate search, its share of a log entry) happens on the node that takes it, so past the
//! limit more queued work would only make every caller wait longer: the node refuses at once with
//! RESOURCE_EXHAUSTED and stores nothing, and the caller retries after a backoff or elsewhere.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::NodeError;

/// Memories this node is writing now, against its limit.
pub struct WriteAdmission {
    limit: usize,
    pending: Arc<AtomicUsize>,
}

/// An admitted write's memories, counted as pending until it is dropped (answered or failed).
pub struct AdmittedWrite {
    pending: Arc<AtomicUsize>,
    memories: usize,
}

impl Drop for AdmittedWrite {
    fn drop(&mut self) {
        let left = self.pending.fetch_sub(self.memories, Ordering::AcqRel) - self.memories;
        metrics::gauge!("hindsight_writes_pending").set(left as f64);
    }
}

impl WriteAdmission {
    /// `limit` 0 admits everything (and still counts what is pending).
    pub fn new(limit: usize) -> Self {
        WriteAdmission {
            limit,
            pending: Arc::default(),
        }
    }

    #[cfg(test)]
    fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Admits a write of `memories`, or refuses it whole when it would take the node past its
    /// limit. A write alone on an idle node is always admitted: the configuration keeps the limit
    /// at or above the largest batch.
    pub fn admit(&self, memories: usize) -> Result<AdmittedWrite, NodeError> {
        let admitted = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |pending| {
                let fits = self.limit == 0 || pending == 0 || pending + memories <= self.limit;
                fits.then_some(pending + memories)
            });
        match admitted {
            Ok(before) => {
                metrics::gauge!("hindsight_writes_pending").set((before + memories) as f64);
                Ok(AdmittedWrite {
                    pending: self.pending.clone(),
                    memories,
                })
            }
            Err(pending) => {
                metrics::counter!("hindsight_writes_shed_total").increment(memories as u64);
                Err(NodeError::exhausted(format!(
                    "this node is busy: it is writing {pending} memories and takes at most {} at \
                     once, so this write of {memories} was refused and nothing of it was stored; \
                     retry after a short backoff, or send it to another node",
                    self.limit
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_past_the_limit_are_refused_until_pending_ones_are_answered() {
        let admission = WriteAdmission::new(100);
        let first = admission.admit(60).unwrap();
        let second = admission.admit(40).unwrap();
        assert_eq!(admission.pending(), 100);
        let refused = admission.admit(1).err().unwrap();
        assert!(matches!(
            refused,
            NodeError::ResourceExhausted {
                retry_after: None,
                ..
            }
        ));
        let said = refused.to_string();
        assert!(
            said.contains("writing 100 memories") && said.contains("at most 100"),
            "{said}"
        );
        assert_eq!(admission.pending(), 100, "a refusal holds nothing");
        drop(first);
        assert_eq!(admission.pending(), 40);
        let third = admission.admit(60).unwrap();
        assert!(admission.admit(1).is_err());
        drop((second, third));
        assert_eq!(admission.pending(), 0);
    }

    #[test]
    fn a_write_alone_is_admitted_and_a_zero_limit_admits_everything() {
        let admission = WriteAdmission::new(10);
        let big = admission.admit(50).unwrap();
        assert!(admission.admit(1).is_err());
        drop(big);
        let off = WriteAdmission::new(0);
        let held: Vec<_> = (0..100).map(|_| off.admit(1_000).unwrap()).collect();
        assert_eq!(off.pending(), 100_000);
        drop(held);
        assert_eq!(off.pending(), 0);
    }
}
