//! A process-wide order between sled's flushes and its batches and transactions.
//!
//! sled 0.34 keeps one concurrency control for every database in the process. Once any database
//! applies a batch or a transaction, every operation of every database takes a shared lock that
//! batches take exclusively; a flush holds it shared while it waits for its IO buffers to reach
//! the disk, and the threads that would write those buffers queue behind a batch that waits for
//! the flush: a deadlock across databases (seen with several Raft groups in one process; see
//! DESIGN.md, "sled's process-wide lock"). Here flushes go through one gate shared among them, and
//! batches and transactions through the same gate alone, so a batch never waits for a flush
//! inside sled.

use std::time::Instant;

use parking_lot::RwLock;

static GATE: RwLock<()> = RwLock::new(());

/// Runs `apply` (a batch or a transaction) with the gate to itself.
pub(crate) fn exclusively<T>(apply: impl FnOnce() -> T) -> T {
    let asked = Instant::now();
    let _alone = GATE.write();
    metrics::histogram!("hindsight_store_batch_wait_seconds").record(asked.elapsed().as_secs_f64());
    apply()
}

/// Flushes `db` to disk on a blocking thread, through the gate.
pub(crate) async fn flush(db: &sled::Tree) -> sled::Result<usize> {
    let db = db.clone();
    tokio::task::spawn_blocking(move || flush_now(&db))
        .await
        .unwrap_or_else(|e| {
            Err(sled::Error::ReportableBug(format!(
                "the flush's thread failed: {e}"
            )))
        })
}

/// [`flush`] on the calling thread.
pub(crate) fn flush_now(db: &sled::Tree) -> sled::Result<usize> {
    let _shared = GATE.read();
    let started = Instant::now();
    let flushed = db.flush();
    metrics::histogram!("hindsight_store_flush_duration_seconds")
        .record(started.elapsed().as_secs_f64());
    flushed
}
