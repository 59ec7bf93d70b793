//! The retrieval log: one record per recall, kept on the node that served it (not replicated: a
//! recall is a read, and sending every read through Raft would make it cost a write). Records are
//! JSON, so fields added later still read old entries; keys are recall ids, which sort by time.
//! Bounded by age and by count; sled flushes it in the background, so a crash may lose the last
//! moments of it — never a memory or a change to one.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use hindsight_core::retrieval::{LoggedHit, RecallId, RetrievalQuery};
use hindsight_core::time::MILLIS_PER_DAY;
use hindsight_core::{BankName, MemoryId, RetrievalRecord, Timestamp};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;

/// The log's own cache: it is read rarely and by id.
const CACHE_BYTES: u64 = 8 * 1024 * 1024;
/// Retention is enforced every this many records.
const PRUNE_EVERY: u64 = 256;

/// How long and how much of the log is kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalRetention {
    /// Keep recording recalls; off, recall returns no recall id and feedback is refused.
    pub enabled: bool,
    /// Records older than this many days are dropped.
    pub max_age_days: u64,
    /// At most this many records; the oldest go first.
    pub max_records: usize,
}

impl Default for RetrievalRetention {
    fn default() -> Self {
        RetrievalRetention {
            enabled: true,
            max_age_days: 30,
            max_records: 100_000,
        }
    }
}

pub struct RetrievalLog {
    db: sled::Db,
    retention: RetrievalRetention,
    recorded: AtomicU64,
    /// Feedback reads a record, adds an event and writes it back; one at a time.
    update: Mutex<()>,
}

impl RetrievalLog {
    pub fn open(dir: &Path, retention: RetrievalRetention) -> Result<Self, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(CACHE_BYTES)
            // sled's own background flushes would bypass the flush gate (crate::sled_gate).
            .flush_every_ms(None)
            .open()
            .map_err(|e| StoreError::storage(format!("opening {}", dir.display()), e))?;
        Ok(RetrievalLog {
            db,
            retention,
            recorded: AtomicU64::new(0),
            update: Mutex::new(()),
        })
    }

    pub fn enabled(&self) -> bool {
        self.retention.enabled
    }

    pub fn record(&self, record: &RetrievalRecord) -> Result<(), StoreError> {
        self.put(record)?;
        if self.recorded.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.prune(record.at)?;
        }
        Ok(())
    }

    /// Records `record`, or, when a record of the same id and principal is there already (another
    /// part of the same recall), merges it in ([`RetrievalRecord::absorb`]). Returns false, and
    /// stores nothing, when that id belongs to another principal's recall.
    pub fn record_part(&self, record: RetrievalRecord) -> Result<bool, StoreError> {
        let _one_at_a_time = self.update.lock();
        match self.get(record.id)? {
            None => self.record(&record)?,
            Some(existing) if existing.principal != record.principal => return Ok(false),
            Some(mut existing) => {
                existing.absorb(record);
                self.put(&existing)?;
            }
        }
        Ok(true)
    }

    pub fn get(&self, id: RecallId) -> Result<Option<RetrievalRecord>, StoreError> {
        self.db
            .get(id.to_bytes())
            .map_err(|e| StoreError::storage("reading the retrieval log", e))?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// Applies `change` to the record `id` and stores the result; `None` when there is no such
    /// record. `change` may refuse by returning an error, and then nothing is stored.
    pub fn update<E>(
        &self,
        id: RecallId,
        change: impl FnOnce(&mut RetrievalRecord) -> Result<(), E>,
    ) -> Result<Option<Result<RetrievalRecord, E>>, StoreError> {
        let _one_at_a_time = self.update.lock();
        let Some(mut record) = self.get(id)? else {
            return Ok(None);
        };
        if let Err(e) = change(&mut record) {
            return Ok(Some(Err(e)));
        }
        self.put(&record)?;
        Ok(Some(Ok(record)))
    }

    /// Records matching `query`, newest first, at most `query.limit`.
    pub fn list(&self, query: &RetrievalQuery) -> Result<Vec<RetrievalRecord>, StoreError> {
        let upper = query
            .until
            .map_or([0xff; 16], |t| RecallId::new(t.millis(), 0).to_bytes());
        let mut out = vec![];
        for entry in self.db.range(..upper).rev() {
            let (_, bytes) =
                entry.map_err(|e| StoreError::storage("reading the retrieval log", e))?;
            let record = decode(&bytes)?;
            if query.since.is_some_and(|t| record.at < t) {
                break;
            }
            if query.matches(&record) {
                out.push(record);
                if out.len() >= query.limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Drops records past the retention age, then the oldest past the count. Returns how many.
    pub fn prune(&self, now: Timestamp) -> Result<usize, StoreError> {
        let max_age = (self.retention.max_age_days as i64).saturating_mul(MILLIS_PER_DAY);
        let cutoff = RecallId::new(now.millis().saturating_sub(max_age), 0).to_bytes();
        let mut doomed: Vec<sled::IVec> = vec![];
        for entry in self.db.range(..cutoff) {
            let (key, _) =
                entry.map_err(|e| StoreError::storage("pruning the retrieval log", e))?;
            doomed.push(key);
        }
        let len = self.db.len();
        let over = len
            .saturating_sub(doomed.len())
            .saturating_sub(self.retention.max_records);
        if over > 0 {
            for entry in self.db.range(cutoff..).take(over) {
                let (key, _) =
                    entry.map_err(|e| StoreError::storage("pruning the retrieval log", e))?;
                doomed.push(key);
            }
        }
        let mut batch = sled::Batch::default();
        for key in &doomed {
            batch.remove(key);
        }
        crate::sled_gate::exclusively(|| self.db.apply_batch(batch))
            .map_err(|e| StoreError::storage("pruning the retrieval log", e))?;
        Ok(doomed.len())
    }

    /// Erases what the log keeps of `memories` (deleted for good): their content in every
    /// record that returned them becomes empty, the rest of the record (rank, score, feedback)
    /// stays for the audit trail. Returns how many records changed.
    pub fn erase_memories(&self, memories: &[MemoryId]) -> Result<usize, StoreError> {
        if memories.is_empty() {
            return Ok(0);
        }
        self.erase_hits(|hit| memories.contains(&hit.memory))
    }

    /// Erases the content of every logged hit from `bank` (a bank deleted with its records).
    pub fn erase_bank(&self, bank: &BankName) -> Result<usize, StoreError> {
        self.erase_hits(|hit| &hit.bank == bank)
    }

    /// A scan of the whole log: deletes are rare, and the log is bounded.
    fn erase_hits(&self, doomed: impl Fn(&LoggedHit) -> bool) -> Result<usize, StoreError> {
        let _one_at_a_time = self.update.lock();
        let mut changed = vec![];
        for entry in self.db.iter() {
            let (_, bytes) =
                entry.map_err(|e| StoreError::storage("erasing from the retrieval log", e))?;
            let mut record = decode(&bytes)?;
            let mut touched = false;
            for hit in &mut record.hits {
                if !hit.content.is_empty() && doomed(hit) {
                    hit.content.clear();
                    touched = true;
                }
            }
            if touched {
                changed.push(record);
            }
        }
        for record in &changed {
            self.put(record)?;
        }
        if !changed.is_empty() {
            // Erasure is a promise to the person the memory was about: on disk now, not at the
            // next background flush.
            self.flush()?;
        }
        Ok(changed.len())
    }

    pub fn len(&self) -> usize {
        self.db.len()
    }

    pub fn is_empty(&self) -> bool {
        self.db.is_empty()
    }

    /// Writes what is buffered to disk (at shutdown).
    pub fn flush(&self) -> Result<(), StoreError> {
        crate::sled_gate::flush_now(&self.db)
            .map(|_| ())
            .map_err(|e| StoreError::storage("flushing the retrieval log", e))
    }

    fn put(&self, record: &RetrievalRecord) -> Result<(), StoreError> {
        let bytes =
            serde_json::to_vec(record).map_err(|e| StoreError::codec("a retrieval record", e))?;
        self.db
            .insert(record.id.to_bytes(), bytes)
            .map_err(|e| StoreError::storage("writing the retrieval log", e))?;
        Ok(())
    }
}

fn decode(bytes: &[u8]) -> Result<RetrievalRecord, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::codec("a retrieval record", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::RecallRequest;

    fn record(millis: i64, query: &str, bank: &str) -> RetrievalRecord {
        RetrievalRecord {
            id: RecallId::new(millis, millis as u128),
            at: Timestamp(millis),
            principal: "anonymous".into(),
            request: RecallRequest::new(vec![bank.parse().unwrap()], query, 5),
            hits: vec![],
            latency_micros: 10,
            feedback: vec![],
        }
    }

    const DAY: i64 = MILLIS_PER_DAY;

    #[test]
    fn lists_newest_first_with_filters_and_prunes_by_age_and_count() {
        let dir = tempfile::tempdir().unwrap();
        let log = RetrievalLog::open(
            dir.path(),
            RetrievalRetention {
                enabled: true,
                max_age_days: 10,
                max_records: 3,
            },
        )
        .unwrap();
        let base = 1_800_000_000_000;
        for (n, (q, bank)) in [
            ("coffee order", "a/x"),
            ("tea", "a/y"),
            ("coffee beans", "a/x"),
            ("deploy", "a/x"),
            ("coffee again", "a/x"),
        ]
        .into_iter()
        .enumerate()
        {
            log.record(&record(base + n as i64 * DAY, q, bank)).unwrap();
        }
        let query = RetrievalQuery {
            bank: Some("a/x".parse().unwrap()),
            query_contains: Some("COFFEE".into()),
            limit: 10,
            ..Default::default()
        };
        let found: Vec<String> = log
            .list(&query)
            .unwrap()
            .into_iter()
            .map(|r| r.request.query)
            .collect();
        assert_eq!(found, ["coffee again", "coffee beans", "coffee order"]);
        let yesterday = RetrievalQuery {
            since: Some(Timestamp(base + DAY)),
            until: Some(Timestamp(base + 3 * DAY)),
            limit: 10,
            ..Default::default()
        };
        let found: Vec<String> = log
            .list(&yesterday)
            .unwrap()
            .into_iter()
            .map(|r| r.request.query)
            .collect();
        assert_eq!(found, ["coffee beans", "tea"]);

        // Day 12: the first two are past ten days; of the rest, three may stay.
        let pruned = log.prune(Timestamp(base + 12 * DAY)).unwrap();
        assert_eq!(pruned, 2);
        assert_eq!(log.len(), 3);
        log.record(&record(base + 13 * DAY, "late", "a/x")).unwrap();
        assert_eq!(log.prune(Timestamp(base + 13 * DAY)).unwrap(), 1);
        assert!(log
            .get(RecallId::new(base + 2 * DAY, (base + 2 * DAY) as u128))
            .unwrap()
            .is_none());
    }

    fn hit(memory: u128, bank: &str, score: f32) -> LoggedHit {
        LoggedHit {
            memory: MemoryId(memory),
            bank: bank.parse().unwrap(),
            rank: 1,
            score,
            content: format!("memory {memory}"),
            explain: Default::default(),
        }
    }

    #[test]
    fn erasing_a_memory_empties_its_content_in_every_record_and_leaves_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let log = RetrievalLog::open(dir.path(), RetrievalRetention::default()).unwrap();
        let mut first = record(1_800_000_000_000, "coffee", "a/x");
        first.hits = vec![hit(1, "a/x", 0.5), hit(2, "a/x", 0.2)];
        let mut second = record(1_800_000_000_100, "tea", "a/x");
        second.hits = vec![hit(1, "a/x", 0.4)];
        let mut third = record(1_800_000_000_200, "water", "a/x");
        third.hits = vec![hit(3, "a/x", 0.4)];
        for r in [&first, &second, &third] {
            log.record(r).unwrap();
        }
        assert_eq!(log.erase_memories(&[MemoryId(1)]).unwrap(), 2);
        let read = |r: &RetrievalRecord| log.get(r.id).unwrap().unwrap();
        let first = read(&first);
        assert_eq!(first.hit(MemoryId(1)).unwrap().content, "");
        assert_eq!(first.hit(MemoryId(1)).unwrap().rank, 1);
        assert_eq!(first.hit(MemoryId(2)).unwrap().content, "memory 2");
        assert_eq!(read(&second).hit(MemoryId(1)).unwrap().content, "");
        assert_eq!(read(&third).hit(MemoryId(3)).unwrap().content, "memory 3");
        assert_eq!(log.erase_memories(&[MemoryId(1)]).unwrap(), 0);
        assert_eq!(log.erase_bank(&"a/x".parse().unwrap()).unwrap(), 2);
        assert_eq!(read(&third).hit(MemoryId(3)).unwrap().content, "");
    }

    #[test]
    fn the_parts_of_one_recall_merge_into_one_record_of_their_principal() {
        let dir = tempfile::tempdir().unwrap();
        let log = RetrievalLog::open(dir.path(), RetrievalRetention::default()).unwrap();
        let mut first = record(1_800_000_000_000, "coffee", "a/x");
        first.hits = vec![hit(1, "a/x", 0.5), hit(2, "a/x", 0.2)];
        let mut second = record(1_800_000_000_000, "coffee", "b/y");
        second.hits = vec![hit(3, "b/y", 0.4)];
        second.latency_micros = 30;
        assert!(log.record_part(first.clone()).unwrap());
        assert!(log.record_part(second).unwrap());
        let merged = log.get(first.id).unwrap().unwrap();
        let ranked: Vec<(u128, u32)> = merged.hits.iter().map(|h| (h.memory.0, h.rank)).collect();
        assert_eq!(ranked, [(1, 1), (3, 2), (2, 3)]);
        assert_eq!(merged.request.banks.len(), 2);
        assert_eq!(merged.latency_micros, 30);

        // The same id from someone else is not theirs to add to.
        let mut intruder = record(1_800_000_000_000, "coffee", "c/z");
        intruder.principal = "someone else".into();
        intruder.hits = vec![hit(4, "c/z", 0.9)];
        assert!(!log.record_part(intruder).unwrap());
        assert_eq!(log.get(first.id).unwrap().unwrap(), merged);
    }

    #[test]
    fn an_update_that_refuses_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = RetrievalLog::open(dir.path(), RetrievalRetention::default()).unwrap();
        let r = record(1_800_000_000_000, "q", "a/x");
        log.record(&r).unwrap();
        let refused = log
            .update(r.id, |rec| {
                rec.principal = "changed".into();
                Err("no")
            })
            .unwrap();
        assert_eq!(refused, Some(Err("no")));
        assert_eq!(log.get(r.id).unwrap().unwrap().principal, "anonymous");
        assert!(log
            .update::<()>(RecallId::new(1, 1), |_| Ok(()))
            .unwrap()
            .is_none());
    }
}
