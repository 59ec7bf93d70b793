//! The node's Prometheus series (docs/OPERATIONS.md, "Metrics"): counters and latency histograms recorded where
//! writes, recalls, embeddings and review cycles finish, and gauges of the Raft group, the store,
//! the banks and their indexes refreshed by `Node::refresh_metrics` whenever `/metrics` is
//! scraped. docs/OPERATIONS.md lists every series; tests/ops/check-metric-names checks that the
//! Grafana dashboard and the alert rules use only names emitted here and in the API crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use hindsight_core::write::WriteOutcome;

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
        "hindsight_write_stage_duration_seconds",
        "Server-side time of one write request (a batch counts once) in each stage: prepare \
         (embedding, extraction, screening, duplicate check), commit (group commit, replication \
         to a majority with its log flushes, apply here) and searchable (until this node's \
         indexes hold it)."
    );
    histogram!(
        "hindsight_store_flush_duration_seconds",
        "One flush of a sled database to disk: Raft log appends, votes and commits, state before \
         a snapshot. The disk's latency as the store of record sees it."
    );
    histogram!(
        "hindsight_store_apply_duration_seconds",
        "One log entry applied to the state machine: its commands against the state, the sled \
         batch that stores the result, and the hand-off of its effects to the banks. Entries \
         apply one after another, so a long one holds up every write behind it."
    );
    histogram!(
        "hindsight_store_batch_wait_seconds",
        "Time a sled batch (a log append, an entry's apply) waited for flushes in progress, which \
         sled's process-wide lock makes batches wait for."
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
        "hindsight_link_messages_total",
        "Messages over the actor link between nodes, by kind (review_hint) and direction \
         (sent, received)."
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
        "hindsight_placement_version",
        "Version of the partition placement table in force; 0 when there is none."
    );
    gauge!(
        "hindsight_partition_replicas",
        "Partition replicas this node hosts."
    );
    gauge!(
        "hindsight_partitions_led",
        "Partitions this node's replica leads."
    );
    gauge!(
        "hindsight_partitions_without_leader",
        "Partitions hosted here whose replica knows no leader."
    );
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
        "On the leader: milliseconds since a quorum last acknowledged it (0 elsewhere)."
    );
    gauge!(
        "hindsight_store_size_bytes",
        "Bytes the store (state machine and Raft log) occupies on disk."
    );
    gauge!("hindsight_banks", "Banks in the store.");
    gauge!(
        "hindsight_banks_loaded",
        "Banks whose indexes are loaded on this node."
    );
    gauge!(
        "hindsight_banks_loaded_heap_bytes",
        "Heap bytes the loaded banks' records and indexes hold, as the memory budget counts them."
    );
    counter!(
        "hindsight_bank_loads_total",
        "Bank actors started: a bank's indexes loaded from their dump and the store."
    );
    histogram!(
        "hindsight_bank_load_duration_seconds",
        "Time to load a bank that was not in memory (dump, records, any missing embeddings)."
    );
    counter!(
        "hindsight_bank_unloads_total",
        "Banks unloaded from memory (indexes dumped first), by reason: idle or memory (over the \
         budget, least recently used first)."
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
    gauge!(
        "hindsight_writes_pending",
        "Memories this node is writing now: admitted and not yet answered."
    );
    counter!(
        "hindsight_writes_shed_total",
        "Memories refused because the node was writing its max_pending_writes already."
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

/// One stage of a write request; see the series' help text for what each stage covers.
pub(crate) fn write_stage(stage: &'static str, took: Duration) {
    metrics::histogram!("hindsight_write_stage_duration_seconds", "stage" => stage)
        .record(took.as_secs_f64());
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

/// A bank's actor finished loading its view.
pub(crate) fn bank_loaded(took: std::time::Duration) {
    metrics::counter!("hindsight_bank_loads_total").increment(1);
    metrics::histogram!("hindsight_bank_load_duration_seconds").record(took.as_secs_f64());
}

/// A loaded bank left memory; `reason` is idle or memory.
pub(crate) fn bank_unloaded(reason: &'static str) {
    metrics::counter!("hindsight_bank_unloads_total", "reason" => reason).increment(1);
}

/// Heap bytes of the loaded banks, as the residency budget last counted them.
pub(crate) fn banks_loaded_heap(bytes: u64) {
    metrics::gauge!("hindsight_banks_loaded_heap_bytes").set(bytes as f64);
}

/// A bank's indexes could not be loaded from their dump and are rebuilt from the store.
pub(crate) fn index_rebuilt() {
    metrics::counter!("hindsight_index_rebuilds_total").increment(1);
}

/// A review cycle that finished; `trigger` is what asked for it (request, periodic, write hint).
pub(crate) fn review_cycle(report: &ReviewReport, trigger: &'static str) {
    let cycle = &report.cycle;
    let bank = report.bank.as_str();
    metrics::counter!("hindsight_review_cycles_total", "trigger" => trigger).increment(1);
    metrics::histogram!("hindsight_review_cycle_duration_seconds")
        .record(cycle.took_micros as f64 / 1e6);
    metrics::counter!("hindsight_review_pairs_considered_total").increment(cycle.pairs_considered);
    metrics::counter!("hindsight_review_pairs_judged_total").increment(cycle.pairs_judged);
    metrics::counter!("hindsight_review_pairs_deferred_total").increment(cycle.pairs_deferred);
    metrics::counter!("hindsight_review_tokens_used_total").increment(cycle.tokens_used);
    metrics::counter!("hindsight_review_token_budget_total").increment(cycle.token_budget);
    bank_gauge(
        "hindsight_review_last_tokens_used",
        bank,
        cycle.tokens_used as f64,
    );
    bank_gauge(
        "hindsight_review_last_token_budget",
        bank,
        cycle.token_budget as f64,
    );
    bank_gauge("hindsight_review_backlog", bank, report.backlog as f64);
    if cycle.pairs_deferred > 0 {
        // Pairs wait for the next cycle: the token budget ran out (or the judge put them off).
        bank_counter("hindsight_review_budget_exhausted_total", bank, &[], 1);
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

/// The conflict type (docs/DESIGN.md, "Review") a review decision settles; "none" for lifecycle decisions.
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

/// Whether a family of per-bank series is a gauge or a counter.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Gauge,
    Counter,
}

/// Every series labelled with a bank: its name, type and help text.
const BANK_FAMILIES: &[(&str, Kind, &str)] = &[
    (
        "hindsight_bank_memories",
        Kind::Gauge,
        "Records in the bank, whatever their status.",
    ),
    (
        "hindsight_index_vectors",
        Kind::Gauge,
        "Live vectors in the bank's vector index.",
    ),
    (
        "hindsight_index_tombstones",
        Kind::Gauge,
        "Removed vectors still holding a slot until the next rebuild.",
    ),
    (
        "hindsight_index_graph_points",
        Kind::Gauge,
        "Nodes of the bank's HNSW graph (0 below the exact-scan threshold).",
    ),
    (
        "hindsight_index_unsearched",
        Kind::Gauge,
        "Vectors a search of the bank scans one by one: not yet linked into its graph (or copied for searching), or all of them while it has none.",
    ),
    (
        "hindsight_index_rebuilding",
        Kind::Gauge,
        "1 while the bank's vector graph is being rebuilt.",
    ),
    (
        "hindsight_index_keyword_docs",
        Kind::Gauge,
        "Documents in the bank's keyword (BM25) index.",
    ),
    (
        "hindsight_index_keyword_terms",
        Kind::Gauge,
        "Distinct terms in the bank's keyword index.",
    ),
    (
        "hindsight_index_entity_docs",
        Kind::Gauge,
        "Memories in the bank's entity index.",
    ),
    (
        "hindsight_index_disk_bytes",
        Kind::Gauge,
        "Bytes of the bank's index dump on disk.",
    ),
    (
        "hindsight_bank_heap_bytes",
        Kind::Gauge,
        "Heap bytes the bank holds on this node, by part: records, vectors, codes, links, graph, keyword, entity, time.",
    ),
    (
        "hindsight_bank_quota_used_ratio",
        Kind::Gauge,
        "Share of the bank's memory quota its live memories use.",
    ),
    (
        "hindsight_bank_quota_warnings_total",
        Kind::Counter,
        "Review cycles that found the bank at 90 % of its quota or more.",
    ),
    (
        "hindsight_bank_byte_quota_used_ratio",
        Kind::Gauge,
        "Share of the bank's byte quota its memories hold.",
    ),
    (
        "hindsight_bank_byte_quota_warnings_total",
        Kind::Counter,
        "Review cycles that found the bank at 90 % of its byte quota or more.",
    ),
    (
        "hindsight_bank_quota_refused_total",
        Kind::Counter,
        "Writes refused because they would take the bank over a quota, by quota.",
    ),
    (
        "hindsight_review_last_tokens_used",
        Kind::Gauge,
        "Model tokens the bank's last review cycle spent.",
    ),
    (
        "hindsight_review_last_token_budget",
        Kind::Gauge,
        "Model tokens the bank's last review cycle was allowed.",
    ),
    (
        "hindsight_review_backlog",
        Kind::Gauge,
        "Changed memories the bank's last cycle left for the next.",
    ),
    (
        "hindsight_review_budget_exhausted_total",
        Kind::Counter,
        "Review cycles that left pairs unjudged for a later cycle.",
    ),
];

/// The series labelled with a bank, kept here instead of in the process's Prometheus recorder
/// and appended to its output by [`render_bank_metrics`].
///
/// Why not the recorder: a deleted bank's series must leave /metrics, and the recorder
/// (metrics-exporter-prometheus) cannot forget one series. Its registry is private; the only
/// removal it offers is an idle timeout per metric kind, which drops every gauge not set for a
/// while. The review gauges (`hindsight_review_backlog`, the last cycle's tokens, the quota
/// ratios) are set only when a bank's review cycle ends, which for a quiet bank, or with
/// periodic reviews off, may be hours or never again: a timeout long enough to keep them would
/// keep a deleted bank's series as long, and one short enough to drop those promptly would drop
/// live banks' figures too. Here a bank's series go exactly when the bank does, and a live
/// bank's stay however long ago they were set.
struct BankSeries {
    /// Family name → the series' labels as written (`bank="…"` first) → its bank and value.
    families: BTreeMap<&'static str, BTreeMap<String, (String, f64)>>,
    /// The banks each node's last scrape found, by data directory: a bank among them that a
    /// later scrape does not find was deleted, on whichever node the deletion was proposed.
    /// Kept per node because tests run several nodes, of separate clusters, in one process: one
    /// node's scrape must not take another's banks for deleted ones.
    seen: BTreeMap<PathBuf, BTreeSet<String>>,
}

static BANK_SERIES: Mutex<BankSeries> = Mutex::new(BankSeries {
    families: BTreeMap::new(),
    seen: BTreeMap::new(),
});

/// The labels of a per-bank series as the exposition format writes them.
fn bank_labels(bank: &str, extra: &[(&'static str, &str)]) -> String {
    let mut labels = String::new();
    for (i, (name, value)) in [("bank", bank)].iter().chain(extra).enumerate() {
        if i > 0 {
            labels.push(',');
        }
        let _ = write!(labels, "{name}=\"");
        for c in value.chars() {
            match c {
                '\\' => labels.push_str("\\\\"),
                '"' => labels.push_str("\\\""),
                '\n' => labels.push_str("\\n"),
                c => labels.push(c),
            }
        }
        labels.push('"');
    }
    labels
}

fn family(name: &'static str) -> Option<Kind> {
    let found = BANK_FAMILIES.iter().find(|(n, ..)| *n == name);
    debug_assert!(found.is_some(), "{name} is not in BANK_FAMILIES");
    found.map(|&(_, kind, _)| kind)
}

/// Sets the per-bank gauge `name` of `bank`.
pub(crate) fn bank_gauge(name: &'static str, bank: &str, value: f64) {
    labelled_bank_gauge(name, bank, &[], value);
}

/// Sets the per-bank gauge `name` of `bank`, with `extra` labels after the bank.
pub(crate) fn labelled_bank_gauge(
    name: &'static str,
    bank: &str,
    extra: &[(&'static str, &str)],
    value: f64,
) {
    if family(name) != Some(Kind::Gauge) {
        return;
    }
    let labels = bank_labels(bank, extra);
    BANK_SERIES
        .lock()
        .families
        .entry(name)
        .or_default()
        .insert(labels, (bank.to_string(), value));
}

/// Adds `by` to the per-bank counter `name` of `bank`, with `extra` labels after the bank.
pub(crate) fn bank_counter(
    name: &'static str,
    bank: &str,
    extra: &[(&'static str, &str)],
    by: u64,
) {
    if family(name) != Some(Kind::Counter) {
        return;
    }
    let labels = bank_labels(bank, extra);
    let mut series = BANK_SERIES.lock();
    let entry = series
        .families
        .entry(name)
        .or_default()
        .entry(labels)
        .or_insert_with(|| (bank.to_string(), 0.0));
    entry.1 += by as f64;
}

/// Drops the series of the banks `node`'s previous scrape found and this one (`live`) did not.
pub(crate) fn forget_deleted_banks(node: &Path, live: BTreeSet<String>) {
    let mut series = BANK_SERIES.lock();
    let before = series.seen.insert(node.to_path_buf(), live.clone());
    let deleted: BTreeSet<String> = before
        .unwrap_or_default()
        .difference(&live)
        .cloned()
        .collect();
    if deleted.is_empty() {
        return;
    }
    for by_labels in series.families.values_mut() {
        by_labels.retain(|_, (bank, _)| !deleted.contains(bank));
    }
    series.families.retain(|_, by_labels| !by_labels.is_empty());
}

/// Appends the series labelled with a bank to `out`, a Prometheus text exposition (the process
/// recorder's rendering): the banks' figures, without a deleted bank's.
pub fn render_bank_metrics(out: &mut String) {
    let series = BANK_SERIES.lock();
    for &(name, kind, help) in BANK_FAMILIES {
        let Some(by_labels) = series.families.get(name).filter(|s| !s.is_empty()) else {
            continue;
        };
        let kind = match kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, (_, value)) in by_labels {
            let _ = match *value {
                v if v.is_nan() => writeln!(out, "{name}{{{labels}}} NaN"),
                v if v.is_infinite() => {
                    writeln!(
                        out,
                        "{name}{{{labels}}} {}Inf",
                        if v > 0.0 { "+" } else { "-" }
                    )
                }
                v => writeln!(out, "{name}{{{labels}}} {v}"),
            };
        }
        out.push('\n');
    }
}

/// The highest log index a majority of `matched` (one entry per voter) holds.
pub(crate) fn quorum_index(mut matched: Vec<u64>) -> u64 {
    if matched.is_empty() {
        return 0;
    }
    matched.sort_unstable_by(|a, b| b.cmp(a));
    matched[matched.len() / 2]
}

/// Bytes of the files directly in `dir` and below; 0 when it cannot be read.
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
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
pub fn resident_bytes() -> Option<u64> {
    status_bytes(
        &std::fs::read_to_string("/proc/self/status").ok()?,
        "VmRSS:",
    )
}

/// A size field of /proc/self/status (written in kB), in bytes.
fn status_bytes(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Where the process's resident memory is, as the allocator and the kernel see it: what tells a
/// leak (live heap growing) from fragmentation (heap free but not handed back) when resident
/// memory outgrows the loaded banks.
#[derive(Clone, Copy, Debug)]
pub struct MemoryBreakdown {
    /// Resident pages backed by files (the embedding model's weights when mapped).
    pub file_bytes: u64,
    /// Resident anonymous pages: the heap and the threads' stacks.
    pub anonymous_bytes: u64,
    /// The allocator's own counts, where it gives them.
    pub heap: Option<crate::allocator::HeapCounts>,
}

pub fn memory_breakdown() -> Option<MemoryBreakdown> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    Some(MemoryBreakdown {
        file_bytes: status_bytes(&status, "RssFile:")?,
        anonymous_bytes: status_bytes(&status, "RssAnon:")?,
        heap: crate::allocator::heap_counts(),
    })
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
    fn a_banks_series_render_until_a_scrape_misses_the_bank() {
        let node = Path::new("/telemetry-test/node");
        bank_gauge("hindsight_review_backlog", "t/a\"b", 3.0);
        bank_counter(
            "hindsight_bank_quota_refused_total",
            "t/c",
            &[("quota", "bytes")],
            2,
        );
        bank_gauge("hindsight_review_backlog", "t/c", f64::INFINITY);
        let banks = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        forget_deleted_banks(node, banks(&["t/a\"b", "t/c"]));
        let mut out = String::new();
        render_bank_metrics(&mut out);
        assert!(
            out.contains("# TYPE hindsight_review_backlog gauge\n"),
            "{out}"
        );
        assert!(
            out.contains("hindsight_review_backlog{bank=\"t/a\\\"b\"} 3\n"),
            "{out}"
        );
        assert!(
            out.contains("hindsight_review_backlog{bank=\"t/c\"} +Inf\n"),
            "{out}"
        );
        assert!(
            out.contains("hindsight_bank_quota_refused_total{bank=\"t/c\",quota=\"bytes\"} 2\n")
        );

        forget_deleted_banks(node, banks(&["t/a\"b"]));
        let mut out = String::new();
        render_bank_metrics(&mut out);
        assert!(!out.contains("\"t/c\""), "{out}");
        assert!(
            out.contains("hindsight_review_backlog{bank=\"t/a\\\"b\"} 3\n"),
            "{out}"
        );
        // Another node's scrape forgets only the banks it saw go.
        forget_deleted_banks(Path::new("/telemetry-test/other"), banks(&[]));
        let mut again = String::new();
        render_bank_metrics(&mut again);
        assert!(again.contains("{bank=\"t/a\\\"b\"}"), "{again}");
    }

    #[test]
    fn decisions_map_to_conflict_types() {
        assert_eq!(conflict_type("supersede"), "temporal");
        assert_eq!(conflict_type("pending_review"), "undecidable");
        assert_eq!(conflict_type("decay"), "none");
    }
}
