//! What the recall service owns beside the banks: the retrieval log, the lock that keeps feedback
//! one request at a time, and the access statistics recalls leave, recorded in batches.

use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::command::{AccessHit, Command};
use hindsight_core::recall::RecallHit;
use hindsight_core::{MemoryId, Timestamp};
use hindsight_store::RetrievalLog;
use parking_lot::Mutex;

use crate::bank::homes::Home;
use crate::bank::Banks;
use crate::error::NodeError;

pub(crate) struct Recalling {
    /// Taken out at shutdown, so that sled's lock on its directory goes with the last user.
    retrieval_log: Mutex<Option<Arc<RetrievalLog>>>,
    /// Feedback is checked against the log and recorded in it one request at a time.
    feedback_serial: tokio::sync::Mutex<()>,
    /// Accesses not yet recorded, by memory: a hint for decay, so a crash may lose a few seconds.
    access: Mutex<HashMap<MemoryId, AccessHit>>,
}

impl Recalling {
    pub(crate) fn new(retrieval_log: Arc<RetrievalLog>) -> Self {
        Recalling {
            retrieval_log: Mutex::new(Some(retrieval_log)),
            feedback_serial: tokio::sync::Mutex::new(()),
            access: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn retrieval_log(&self) -> Result<Arc<RetrievalLog>, NodeError> {
        self.retrieval_log
            .lock()
            .clone()
            .ok_or_else(|| NodeError::Unavailable("the node is shutting down".into()))
    }

    pub(crate) async fn feedback_lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.feedback_serial.lock().await
    }

    /// Counts the hits as accesses; [`Recalling::flush_access`] records them.
    pub(crate) fn note_access(&self, hits: &[RecallHit], at: Timestamp) {
        if hits.is_empty() {
            return;
        }
        let mut access = self.access.lock();
        for hit in hits {
            let entry = access.entry(hit.memory.id).or_insert(AccessHit {
                id: hit.memory.id,
                count: 0,
                at,
                restore: false,
            });
            entry.count += 1;
            entry.at = entry.at.max(at);
        }
    }

    /// Brings archived memories a recall returned on purpose back to the live set, before the
    /// recall answers, so the caller's next recall sees them without asking.
    pub(crate) async fn restore(
        &self,
        banks: &Banks,
        ids: Vec<MemoryId>,
        at: Timestamp,
    ) -> Result<(), NodeError> {
        if ids.is_empty() {
            return Ok(());
        }
        let homed = ids
            .into_iter()
            .map(|id| {
                let hit = AccessHit {
                    id,
                    count: 1,
                    at,
                    restore: true,
                };
                Ok((banks.home_of_memory(id)?, hit))
            })
            .collect::<Result<Vec<_>, NodeError>>()?;
        for (home, hits) in by_home(homed) {
            banks
                .propose_to(&home, Command::RecordAccess { hits })
                .await?;
        }
        Ok(())
    }

    /// Records the accesses counted since the last flush, each in the group its memory lives in.
    pub(crate) async fn flush_access(&self, banks: &Banks) {
        let hits: Vec<AccessHit> = self.access.lock().drain().map(|(_, h)| h).collect();
        if hits.is_empty() {
            return;
        }
        // Hits on memories whose partition moved away meanwhile are dropped: they are a hint.
        let homed = hits
            .into_iter()
            .filter_map(|hit| Some((banks.home_of_memory(hit.id).ok()?, hit)));
        for (home, hits) in by_home(homed) {
            for hits in in_entries(hits) {
                if let Err(e) = home.store.propose(Command::RecordAccess { hits }).await {
                    tracing::debug!(error = %e, "access statistics not recorded");
                }
            }
        }
    }

    /// Flushes the retrieval log and lets it go, so that its directory is free once the node is.
    pub(crate) fn close(&self) {
        if let Some(log) = self.retrieval_log.lock().take() {
            if let Err(e) = log.flush() {
                tracing::warn!(error = %e, "retrieval log flush");
            }
        }
    }
}

/// Access hits one log entry records at most. Every replica applies an entry whole before
/// anything after it, and a linearizable recall waits for the entries before its read point: the
/// hits of five seconds of 100 recalls a second (1,700 memories on one node of the cluster bench)
/// took 30 to 40 ms to apply, and every recall in that window waited for them. Each hit rewrites
/// its memory's record, about 20 µs, so an entry of this many applies in a few milliseconds.
const ACCESS_HITS_PER_ENTRY: usize = 128;

/// `hits` in the log entries that record them, in order.
fn in_entries(hits: Vec<AccessHit>) -> Vec<Vec<AccessHit>> {
    let mut entries = Vec::with_capacity(hits.len().div_ceil(ACCESS_HITS_PER_ENTRY));
    let mut hits = hits.into_iter().peekable();
    while hits.peek().is_some() {
        entries.push(hits.by_ref().take(ACCESS_HITS_PER_ENTRY).collect());
    }
    entries
}

/// Access hits grouped by the group their memories live in.
fn by_home(homed: impl IntoIterator<Item = (Home, AccessHit)>) -> Vec<(Home, Vec<AccessHit>)> {
    let mut groups: Vec<(Home, Vec<AccessHit>)> = vec![];
    for (home, hit) in homed {
        match groups
            .iter_mut()
            .find(|(h, _)| h.partition == home.partition)
        {
            Some((_, group)) => group.push(hit),
            None => groups.push((home, vec![hit])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use hindsight_core::recall::Explain;
    use hindsight_core::{Memory, Provenance, SourceKind, Status};
    use hindsight_store::RetrievalRetention;

    use super::*;

    fn hit(id: u128) -> RecallHit {
        let memory = Memory::new(
            MemoryId(id),
            "team/notes".parse().unwrap(),
            "the standup moved to ten",
            Provenance::from_source(SourceKind::User),
            Timestamp(1_000),
        );
        RecallHit {
            memory,
            status: Status::Active,
            score: 0.5,
            explain: Explain::default(),
        }
    }

    fn recalling(dir: &tempfile::TempDir) -> Recalling {
        let log = RetrievalLog::open(dir.path(), RetrievalRetention::default()).unwrap();
        Recalling::new(Arc::new(log))
    }

    #[test]
    fn accesses_add_up_per_memory_and_keep_the_latest_time() {
        let dir = tempfile::tempdir().unwrap();
        let recalling = recalling(&dir);
        recalling.note_access(&[hit(1), hit(2)], Timestamp(5_000));
        recalling.note_access(&[hit(1)], Timestamp(9_000));
        recalling.note_access(&[hit(1)], Timestamp(7_000));
        let access = recalling.access.lock();
        let one = &access[&MemoryId(1)];
        assert_eq!(
            (one.count, one.at, one.restore),
            (3, Timestamp(9_000), false)
        );
        let two = &access[&MemoryId(2)];
        assert_eq!((two.count, two.at), (1, Timestamp(5_000)));
    }

    #[test]
    fn many_accesses_are_recorded_in_entries_of_bounded_size_and_none_is_lost() {
        let hits: Vec<AccessHit> = (0..300u128)
            .map(|id| AccessHit {
                id: MemoryId(id),
                count: 1,
                at: Timestamp(1),
                restore: false,
            })
            .collect();
        let entries = in_entries(hits.clone());
        assert_eq!(
            entries.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![ACCESS_HITS_PER_ENTRY, ACCESS_HITS_PER_ENTRY, 44]
        );
        assert_eq!(entries.concat(), hits);
        assert!(in_entries(vec![]).is_empty());
    }

    #[test]
    fn an_empty_recall_counts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let recalling = recalling(&dir);
        recalling.note_access(&[], Timestamp(5_000));
        assert!(recalling.access.lock().is_empty());
    }

    #[test]
    fn a_closed_log_is_unavailable_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let recalling = recalling(&dir);
        assert!(recalling.retrieval_log().is_ok());
        recalling.close();
        assert!(matches!(
            recalling.retrieval_log(),
            Err(NodeError::Unavailable(_))
        ));
    }
}
