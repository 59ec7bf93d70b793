//! The node's Prometheus series (ARCHITECTURE §10): counters and latency histograms recorded where
//! writes, recalls, embeddings and review cycles finish, and gauges of the Raft group, the store,
//! the banks and their indexes refreshed by [`Node::refresh_metrics`] whenever `/metrics` is
//! scraped. docs/OPERATIONS.md lists every series; tests/ops/check-metric-names checks that the
//! Grafana dashboard and the alert rules use only names emitted here and in the API crate.

use std::path::Path;
use std::time::{Duration, Instant};

use hindsight_core::write::WriteOutcome;

use crate::node::Node;
use crate::types::ReviewReport;

/// Help texts of the node's series, shown by `/metrics` and Grafana. Call once, before scraping.
pub fn describe_metrics() {
    use metrics::describe_histogram as histogram;
    use metrics::{describe_counter as counter, describe_gauge as gauge};
    counter!(
        "hindsight_writes_total",
        "Writes by disposition: created, merged, quarantined, rejected_low_importance."
    );
    histogram!(
        "hindsight_recall_duration_seconds",
        "Server-side recall latency: read barrier, embedding, arms, fusion, scoring."
    );
    histogram!(
        "hindsight_recall_arm_duration_seconds",
        "Latency of one recall arm's search in one bank."
    );
    histogram!(
        "hindsight_embedding_duration_seconds",
        "Latency of one embedder call (cache included)."
    );
    counter!(
        "hindsight_embedding_texts_total",
        "Texts embedded (cache hits included)."
    );
    counter!(
        "hindsight_write_vectors_total",
        "Vectors of written memories a bank's indexes took, by source: carried (in the write's log \
         entry) or embedded (on this node, because the entry carried none for this node's model)."
    );
    counter!(
        "hindsight_index_rebuilds_total",
        "Bank indexes rebuilt from the store because their dump could not be loaded."
    );
    counter!(
        "hindsight_review_cycles_total",
        "Review cycles finished, by trigger: request, periodic, write hint."
    );
    counter!(
        "hindsight_review_failures_total",
        "Review cycles that failed, by trigger."
    );
    histogram!(
        "hindsight_review_cycle_duration_seconds",
        "Duration of one review cycle."
    );
    counter!(
        "hindsight_review_pairs_considered_total",
        "Candidate pairs review cycles considered."
    );
    counter!(
        "hindsight_review_pairs_judged_total",
        "Candidate pairs a judge decided."
    );
    counter!(
        "hindsight_review_pairs_deferred_total",
        "Candidate pairs left for a later cycle (budget exhausted or deferred by the judge)."
    );
    counter!(
        "hindsight_review_tokens_used_total",
        "Model tokens review cycles spent."
    );
    counter!(
        "hindsight_review_token_budget_total",
        "Model tokens review cycles were allowed."
    );
    gauge!(
        "hindsight_review_last_tokens_used",
        "Model tokens the bank's last review cycle spent."
    );
    gauge!(
        "hindsight_review_last_token_budget",
        "Model tokens the bank's last review cycle was allowed."
    );
    gauge!(
        "hindsight_review_backlog",
        "Changed memories the bank's last cycle left for the next."
    );
    counter!(
        "hindsight_review_budget_exhausted_total",
        "Review cycles that left pairs unjudged for a later cycle."
    );
    counter!(
        "hindsight_review_decisions_total",
        "Review decisions by action and the conflict type it settles."
    );
    counter!(
        "hindsight_review_conflicts_opened_total",
        "Conflict-queue entries review cycles opened."
    );
    counter!(
        "hindsight_memories_expired_total",
        "Memories whose time to live ran out."
    );
    counter!(
        "hindsight_memories_decayed_total",
        "Memories whose confidence decayed for disuse."
    );
    counter!(
        "hindsight_memories_archived_total",
        "Memories archived (decayed below the threshold or evicted by the quota)."
    );
    counter!(
        "hindsight_memories_purged_total",
        "Archived memories deleted for good after their retention."
    );
    gauge!(
        "hindsight_data_dir_available_bytes",
        "Free bytes on the data directory's file system."
    );
    gauge!(
        "hindsight_data_dir_capacity_bytes",
        "Size of the data directory's file system."
    );
    gauge!(
        "hindsight_process_resident_memory_bytes",
        "Resident memory of the node process."
    );
    gauge!("hindsight_node_ready", "1 while the node serves requests.");
    gauge!(
        "hindsight_build_info",
        "Always 1; the labels name the version and embedding model."
    );
    gauge!("hindsight_raft_node_id", "This node's Raft id.");
    gauge!("hindsight_raft_term", "Current Raft term.");
    gauge!(
        "hindsight_raft_leader_id",
        "The Raft leader's id; 0 when there is none."
    );
    gauge!(
        "hindsight_raft_has_leader",
        "1 when this node knows a Raft leader."
    );
    gauge!(
        "hindsight_raft_is_leader",
        "1 when this node leads the Raft group."
    );
    gauge!(
        "hindsight_raft_last_log_index",
        "Index of the last entry in this node's Raft log."
    );
    gauge!("hindsight_raft_commit_index", "Committed index: on the leader what a quorum holds, elsewhere the applied index (a lower bound).");
    gauge!(
        "hindsight_raft_applied_index",
        "Index of the last log entry applied to the state machine."
    );
    gauge!(
        "hindsight_raft_apply_lag_entries",
        "Log entries written but not applied yet."
    );
    gauge!(
        "hindsight_raft_snapshot_index",
        "Last log index the current snapshot covers."
    );
    gauge!(
        "hindsight_raft_purged_index",
        "Log entries up to here are purged."
    );
    counter!(
        "hindsight_raft_entries_proposed_total",
        "Raft log entries this node proposed."
    );
    counter!(
        "hindsight_raft_commands_proposed_total",
        "Commands in the entries this node proposed (group commit)."
    );
    gauge!("hindsight_raft_voters", "Voters in the Raft membership.");
    gauge!(
        "hindsight_raft_follower_matched_index",
        "On the leader: the last log index each follower holds (0 elsewhere)."
    );
    gauge!(
        "hindsight_raft_follower_lag_entries",
        "On the leader: entries each follower is behind (0 elsewhere)."
    );
    gauge!(
        "hindsight_raft_millis_since_quorum_ack",
        "On the leader: milliseconds since a quorum last acknowledged it."
    );
    gauge!(
        "hindsight_store_size_bytes",
        "Bytes the store (state machine and Raft log) occupies on disk."
    );
    gauge!("hindsight_banks", "Banks in the store.");
    gauge!(
        "hindsight_bank_memories",
        "Records in the bank, whatever their status."
    );
    gauge!(
        "hindsight_banks_loaded",
        "Banks whose indexes are loaded on this node."
    );
    gauge!(
        "hindsight_index_vectors",
        "Live vectors in the bank's vector index."
    );
    gauge!(
        "hindsight_index_tombstones",
        "Removed vectors still holding a slot until the next rebuild."
    );
    gauge!(
        "hindsight_index_graph_points",
        "Nodes of the bank's HNSW graph (0 below the exact-scan threshold)."
    );
    gauge!(
        "hindsight_index_rebuilding",
        "1 while the bank's vector graph is being rebuilt."
    );
    gauge!(
        "hindsight_index_keyword_docs",
        "Documents in the bank's keyword (BM25) index."
    );
    gauge!(
        "hindsight_index_keyword_terms",
        "Distinct terms in the bank's keyword index."
    );
    gauge!(
        "hindsight_index_entity_docs",
        "Memories in the bank's entity index."
    );
    gauge!(
        "hindsight_index_disk_bytes",
        "Bytes of the bank's index dump on disk."
    );
    gauge!(
        "hindsight_bank_quota_used_ratio",
        "Share of the bank's memory quota its live memories use."
    );
    counter!(
        "hindsight_bank_quota_warnings_total",
        "Review cycles that found the bank at 90 % of its quota or more."
    );
    counter!(
        "hindsight_feedback_total",
        "Feedback on recalled memories by outcome."
    );
    counter!(
        "hindsight_guard_quarantined_total",
        "Writes the guard quarantined, by category of the rule that matched."
    );
    counter!(
        "hindsight_integrity_failures_total",
        "Records withheld because their signature did not verify."
    );
    counter!(
        "hindsight_rate_limited_total",
        "Requests refused by the per-key rate limit."
    );
}

/// Counts each write by what became of it: created, merged, quarantined, rejected_low_importance.
pub(crate) fn writes(outcomes: &[WriteOutcome]) {
    for outcome in outcomes {
        metrics::counter!("hindsight_writes_total", "disposition" => outcome.disposition.name())
            .increment(1);
    }
}

/// Runs one recall arm's search and records how long it took.
pub(crate) fn recall_arm<R>(arm: &'static str, search: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let result = search();
    metrics::histogram!("hindsight_recall_arm_duration_seconds", "arm" => arm)
        .record(started.elapsed().as_secs_f64());
    result
}

/// A whole recall, server-side: read barrier, embedding, arms, fusion and scoring.
pub(crate) fn recall(took: Duration) {
    metrics::histogram!("hindsight_recall_duration_seconds").record(took.as_secs_f64());
}

/// One call of the embedder (cache included) for `texts` texts.
pub(crate) fn embedded(texts: usize, took: Duration) {
    metrics::histogram!("hindsight_embedding_duration_seconds").record(took.as_secs_f64());
    metrics::counter!("hindsight_embedding_texts_total").increment(texts as u64);
}

/// Vectors of written memories a bank's indexes took: `carried` in the write's log entry, or
/// `embedded` on this node.
pub(crate) fn write_vectors(carried: usize, embedded: usize) {
    if carried > 0 {
        metrics::counter!("hindsight_write_vectors_total", "source" => "carried")
            .increment(carried as u64);
    }
    if embedded > 0 {
        metrics::counter!("hindsight_write_vectors_total", "source" => "embedded")
            .increment(embedded as u64);
    }
}

/// A bank's indexes could not be loaded from their dump and are rebuilt from the store.
pub(crate) fn index_rebuilt() {
    metrics::counter!("hindsight_index_rebuilds_total").increment(1);
}

/// A review cycle that finished; `trigger` is what asked for it (request, periodic, write hint).
pub(crate) fn review_cycle(report: &ReviewReport, trigger: &'static str) {
    let cycle = &report.cycle;
    let bank = report.bank.clone();
    metrics::counter!("hindsight_review_cycles_total", "trigger" => trigger).increment(1);
    metrics::histogram!("hindsight_review_cycle_duration_seconds")
        .record(cycle.took_micros as f64 / 1e6);
    metrics::counter!("hindsight_review_pairs_considered_total").increment(cycle.pairs_considered);
    metrics::counter!("hindsight_review_pairs_judged_total").increment(cycle.pairs_judged);
    metrics::counter!("hindsight_review_pairs_deferred_total").increment(cycle.pairs_deferred);
    metrics::counter!("hindsight_review_tokens_used_total").increment(cycle.tokens_used);
    metrics::counter!("hindsight_review_token_budget_total").increment(cycle.token_budget);
    metrics::gauge!("hindsight_review_last_tokens_used", "bank" => bank.clone())
        .set(cycle.tokens_used as f64);
    metrics::gauge!("hindsight_review_last_token_budget", "bank" => bank.clone())
        .set(cycle.token_budget as f64);
    metrics::gauge!("hindsight_review_backlog", "bank" => bank.clone()).set(report.backlog as f64);
    if cycle.pairs_deferred > 0 {
        // Pairs wait for the next cycle: the token budget ran out (or the judge put them off).
        metrics::counter!("hindsight_review_budget_exhausted_total", "bank" => bank).increment(1);
    }
    for (decision, count) in &cycle.decisions {
        metrics::counter!(
            "hindsight_review_decisions_total",
            "decision" => decision.clone(),
            "conflict" => conflict_type(decision),
        )
        .increment(*count);
    }
    metrics::counter!("hindsight_review_conflicts_opened_total")
        .increment(report.conflicts_opened.len() as u64);
    metrics::counter!("hindsight_memories_expired_total").increment(report.expired.len() as u64);
    metrics::counter!("hindsight_memories_purged_total").increment(report.purged.len() as u64);
    let decided = |name: &str| cycle.decisions.get(name).copied().unwrap_or(0);
    metrics::counter!("hindsight_memories_decayed_total").increment(decided("decay"));
    metrics::counter!("hindsight_memories_archived_total").increment(decided("archive"));
}

/// A review cycle that failed.
pub(crate) fn review_failed(trigger: &'static str) {
    metrics::counter!("hindsight_review_failures_total", "trigger" => trigger).increment(1);
}

/// The conflict type (ARCHITECTURE §6) a review decision settles; "none" for lifecycle decisions.
fn conflict_type(decision: &str) -> &'static str {
    match decision {
        "supersede" => "temporal",
        "falsify" => "inference",
        "dispute" => "source",
        "pending_review" => "undecidable",
        "merge" => "duplicate",
        _ => "none",
    }
}

impl Node {
    /// Sets the gauges read from the node's state: Raft, store, banks, indexes, disk and process.
    /// Blocking (sled reads, directory sizes); cheap enough for every scrape.
    pub fn refresh_metrics(&self) {
        self.refresh_raft_metrics();
        self.refresh_bank_metrics();
        let data_dir = &self.config().node.data_dir;
        if let Ok(available) = fs2::available_space(data_dir) {
            metrics::gauge!("hindsight_data_dir_available_bytes").set(available as f64);
        }
        if let Ok(total) = fs2::total_space(data_dir) {
            metrics::gauge!("hindsight_data_dir_capacity_bytes").set(total as f64);
        }
        if let Some(rss) = resident_bytes() {
            metrics::gauge!("hindsight_process_resident_memory_bytes").set(rss as f64);
        }
        metrics::gauge!("hindsight_node_ready").set(if self.is_ready() { 1.0 } else { 0.0 });
        metrics::gauge!(
            "hindsight_build_info",
            "version" => env!("CARGO_PKG_VERSION"),
            "embedding_model" => self.context().embedder.model_id().to_string(),
        )
        .set(1.0);
    }

    fn refresh_raft_metrics(&self) {
        let store = self.store().metrics();
        let id = store.node_id;
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        metrics::gauge!("hindsight_raft_node_id").set(id as f64);
        metrics::gauge!("hindsight_raft_term").set(store.term as f64);
        metrics::gauge!("hindsight_raft_leader_id").set(store.leader.unwrap_or(0) as f64);
        metrics::gauge!("hindsight_raft_has_leader").set(flag(store.leader.is_some()));
        metrics::gauge!("hindsight_raft_is_leader").set(flag(store.is_leader));
        let last = store.last_log_index.unwrap_or(0);
        let applied = store.applied_index.unwrap_or(0);
        metrics::gauge!("hindsight_raft_last_log_index").set(last as f64);
        metrics::gauge!("hindsight_raft_applied_index").set(applied as f64);
        metrics::gauge!("hindsight_raft_apply_lag_entries")
            .set(last.saturating_sub(applied) as f64);
        metrics::gauge!("hindsight_raft_snapshot_index")
            .set(store.snapshot_index.unwrap_or(0) as f64);
        metrics::gauge!("hindsight_raft_purged_index").set(store.purged_index.unwrap_or(0) as f64);
        metrics::counter!("hindsight_raft_entries_proposed_total").absolute(store.entries_proposed);
        metrics::counter!("hindsight_raft_commands_proposed_total")
            .absolute(store.commands_proposed);
        metrics::gauge!("hindsight_store_size_bytes").set(store.size_on_disk_bytes as f64);

        // Replication progress is known on the leader only; elsewhere every follower's lag reads
        // 0, so that a former leader's last figures do not linger as an alert.
        let raft = self.store().raft().metrics().borrow().clone();
        let membership = raft.membership_config.membership();
        let replication = raft.replication.as_ref().filter(|_| store.is_leader);
        let matched = |node: u64| -> u64 {
            let from_replication = replication
                .and_then(|r| r.get(&node).copied().flatten())
                .map(|log_id| log_id.index);
            match from_replication {
                Some(index) => index,
                None if node == id => last,
                None => 0,
            }
        };
        let voters: Vec<u64> = membership.voter_ids().collect();
        metrics::gauge!("hindsight_raft_voters").set(voters.len() as f64);
        let commit = match replication {
            Some(_) => quorum_index(voters.iter().map(|&v| matched(v)).collect()),
            // A follower knows what it applied, which the commit index is at least.
            None => applied,
        };
        metrics::gauge!("hindsight_raft_commit_index").set(commit as f64);
        for (&node, _) in membership.nodes() {
            if node == id {
                continue;
            }
            let follower = node.to_string();
            let (index, lag) = match replication {
                Some(_) => (matched(node), last.saturating_sub(matched(node))),
                None => (0, 0),
            };
            metrics::gauge!("hindsight_raft_follower_matched_index", "follower" => follower.clone())
                .set(index as f64);
            metrics::gauge!("hindsight_raft_follower_lag_entries", "follower" => follower)
                .set(lag as f64);
        }
        if let Some(ms) = raft.millis_since_quorum_ack.filter(|_| store.is_leader) {
            metrics::gauge!("hindsight_raft_millis_since_quorum_ack").set(ms as f64);
        }
    }

    fn refresh_bank_metrics(&self) {
        let reader = self.reader();
        if let Ok(banks) = reader.banks() {
            metrics::gauge!("hindsight_banks").set(banks.len() as f64);
            for bank in banks {
                if let Ok(count) = reader.bank_memory_count(&bank.name) {
                    metrics::gauge!("hindsight_bank_memories", "bank" => bank.name.to_string())
                        .set(count as f64);
                }
            }
        }
        let context = self.context();
        let handles = context.registry.handles();
        metrics::gauge!("hindsight_banks_loaded").set(handles.len() as f64);
        for handle in handles {
            let view = &handle.view;
            let bank = view.name.to_string();
            let index = &view.index;
            let vectors = index.vectors().stats();
            let keyword = index.bm25().stats();
            let gauges: [(&'static str, f64); 8] = [
                ("hindsight_index_vectors", vectors.live as f64),
                ("hindsight_index_tombstones", vectors.tombstones as f64),
                (
                    "hindsight_index_graph_points",
                    vectors.graph_points.unwrap_or(0) as f64,
                ),
                (
                    "hindsight_index_rebuilding",
                    f64::from(u8::from(vectors.rebuilding)),
                ),
                ("hindsight_index_keyword_docs", keyword.docs as f64),
                (
                    "hindsight_index_keyword_terms",
                    keyword.distinct_terms as f64,
                ),
                ("hindsight_index_entity_docs", index.entities().len() as f64),
                (
                    "hindsight_index_disk_bytes",
                    dir_bytes(&context.index_dir(&view.name)) as f64,
                ),
            ];
            for (name, value) in gauges {
                metrics::gauge!(name, "bank" => bank.clone()).set(value);
            }
        }
    }
}

/// The highest log index a majority of `matched` (one entry per voter) holds.
fn quorum_index(mut matched: Vec<u64>) -> u64 {
    if matched.is_empty() {
        return 0;
    }
    matched.sort_unstable_by(|a, b| b.cmp(a));
    matched[matched.len() / 2]
}

/// Bytes of the files directly in `dir` and below; 0 when it cannot be read.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The process's resident set size, from /proc (Linux); `None` elsewhere.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorum_index_is_what_a_majority_holds() {
        assert_eq!(quorum_index(vec![]), 0);
        assert_eq!(quorum_index(vec![7]), 7);
        assert_eq!(quorum_index(vec![9, 4, 7]), 7);
        assert_eq!(quorum_index(vec![9, 4, 7, 1, 8]), 7);
    }

    #[test]
    fn decisions_map_to_conflict_types() {
        assert_eq!(conflict_type("supersede"), "temporal");
        assert_eq!(conflict_type("pending_review"), "undecidable");
        assert_eq!(conflict_type("decay"), "none");
    }
}
