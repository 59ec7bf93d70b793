//! `hindsight bench`: write throughput (concurrent batched writers, group-committed) and server-side
//! recall latency on one bank, against an embedded node.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use hindsight_core::{BankName, Provenance, RecallRequest, SourceKind, WriteRequest};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::eval::percentile;
use crate::progress::Progress;
use crate::target::Target;

/// Arguments of `hindsight bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Memories to write into the bank.
    #[arg(long, default_value_t = 100_000)]
    pub memories: usize,
    /// Recalls to time after the writes.
    #[arg(long, default_value_t = 2_000)]
    pub queries: usize,
    /// Seconds between the last write and the first timed recall. A bank links its writes into
    /// its vector graph in the background, so a recall right after a bulk load still scans what
    /// is not linked yet; the default measures a minute later. 0 times recall at once.
    #[arg(long, default_value_t = 60)]
    pub settle: u64,
    /// Memories per write request.
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Concurrent writers (their requests are group-committed into shared log entries).
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    #[arg(long, default_value = "bench/load")]
    pub bank: String,
    /// Data directory of the embedded node (default: a fresh temporary one).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Node configuration for the embedded node.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Then time a review cycle over this many new memories on top of the bank (after a first
    /// cycle has covered everything written before them); 0 skips the review benchmark.
    #[arg(long, default_value_t = 0)]
    pub review_changed: usize,
    /// Timed review cycles, each over `review_changed` new memories: the first after a restart
    /// reads every memory it meets afresh, later ones find most readings kept.
    #[arg(long, default_value_t = 1)]
    pub review_rounds: usize,
    /// Spread the memories over this many banks (`BANK/N`), one write request per bank, as a
    /// fleet of agents would; then time recalls to banks that left memory (see
    /// `index.memory_budget_mb` and `index.unload_idle_secs`). 1: the one-bank benchmark.
    #[arg(long, default_value_t = 1)]
    pub banks: usize,
}

const SUBJECTS: &[&str] = &[
    "the user",
    "Alice",
    "Bob",
    "the billing team",
    "Project Falcon",
    "the support agent",
    "Wang Fang",
    "the CFO",
    "our vendor",
    "the mobile app",
    "the data pipeline",
    "the CI job",
    "用户",
    "张伟",
    "财务部",
    "运维团队",
];
const VERBS: &[&str] = &[
    "prefers",
    "reported",
    "asked about",
    "scheduled",
    "cancelled",
    "approved",
    "rejected",
    "needs",
    "fixed",
    "reviewed",
    "escalated",
    "forgot",
    "喜欢",
    "提到了",
    "安排了",
];
const OBJECTS: &[&str] = &[
    "a refund",
    "the quarterly report",
    "green tea",
    "a flight to Tokyo",
    "the invoice",
    "a password reset",
    "the Kubernetes upgrade",
    "weekly standups",
    "dark mode",
    "the API key",
    "a hotel in Berlin",
    "the churn analysis",
    "dumplings",
    "the design doc",
    "火车票",
    "预算削减",
    "季度复盘",
    "新的报销流程",
];
const WHEN: &[&str] = &[
    "on Monday",
    "last week",
    "before the launch",
    "after lunch",
    "every Friday",
    "in March",
    "during the outage",
    "上周",
    "明天上午",
];

/// Spelled-out case tags keep generated sentences distinct without digits, which the review
/// would read as conflicting numbers.
const TAGS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
];

pub(crate) fn sentence(rng: &mut StdRng, n: usize) -> String {
    let tag = |i: usize| TAGS[i % TAGS.len()];
    format!(
        "{} {} {} {} (case {}-{}-{}-{})",
        SUBJECTS[rng.gen_range(0..SUBJECTS.len())],
        VERBS[rng.gen_range(0..VERBS.len())],
        OBJECTS[rng.gen_range(0..OBJECTS.len())],
        WHEN[rng.gen_range(0..WHEN.len())],
        tag(n),
        tag(n / TAGS.len()),
        tag(n / (TAGS.len() * TAGS.len())),
        tag(rng.gen_range(0..TAGS.len() * TAGS.len())),
    )
}

pub async fn run(args: BenchArgs) -> Result<()> {
    if args.banks > 1 {
        return crate::fleet_bench::run(args).await;
    }
    let bank: BankName = args.bank.parse()?;
    let tmp = tempfile::tempdir()?;
    let data_dir = args.data_dir.clone().unwrap_or_else(|| tmp.path().into());
    let opening = Instant::now();
    let target = Arc::new(Target::embedded(args.config.as_deref(), &data_dir).await?);
    let open_secs = opening.elapsed().as_secs_f64();
    eprintln!(
        "bench: {} memories in batches of {} from {} writers, then {} recalls, against {}",
        args.memories,
        args.batch,
        args.concurrency,
        args.queries,
        target.describe()
    );

    let mut rng = StdRng::seed_from_u64(args.seed);
    let contents: Vec<String> = (0..args.memories).map(|n| sentence(&mut rng, n)).collect();
    let batches: Vec<Vec<String>> = contents
        .chunks(args.batch.max(1))
        .map(|c| c.to_vec())
        .collect();
    // Measured once the sentences exist, so that the growth is the node's own.
    let rss_before = hindsight_node::resident_bytes();
    let queue = Arc::new(parking_lot::Mutex::new(batches));
    let progress = Arc::new(Progress::new("write", args.memories as u64));
    let started = Instant::now();
    let mut writers = vec![];
    for _ in 0..args.concurrency.max(1) {
        let (queue, target, bank, progress) = (
            queue.clone(),
            target.clone(),
            bank.clone(),
            progress.clone(),
        );
        writers.push(tokio::spawn(async move {
            loop {
                let Some(batch) = queue.lock().pop() else {
                    return Ok::<(), anyhow::Error>(());
                };
                let n = batch.len() as u64;
                let requests = batch
                    .into_iter()
                    .map(|c| {
                        WriteRequest::new(
                            bank.clone(),
                            c,
                            Provenance::from_source(SourceKind::User),
                        )
                    })
                    .collect();
                target.write_batch(requests).await?;
                progress.add(n);
            }
        }));
    }
    for writer in writers {
        writer.await.context("writer task failed")??;
    }
    progress.finish();
    let write_secs = started.elapsed().as_secs_f64();
    let rss_after_writes = hindsight_node::resident_bytes();
    let graph_at_end_of_writes = graph_reach(&target, &bank);
    if args.settle > 0 {
        eprintln!("bench: waiting {} s before timing recalls", args.settle);
        tokio::time::sleep(std::time::Duration::from_secs(args.settle)).await;
    }
    let graph_at_recalls = graph_reach(&target, &bank);

    let mut server_us = vec![];
    let mut wall_ms = vec![];
    let progress = Progress::new("recall", args.queries as u64);
    let mut wall_ms_first = None;
    for n in 0..args.queries {
        let query = sentence(&mut rng, n);
        let request = RecallRequest::new(vec![bank.clone()], query, 10);
        let asked = Instant::now();
        let response = match target.as_ref() {
            Target::Embedded(node) => node.recall(request).await?,
            Target::Remote(client, _) => client.recall(request).await?,
        };
        let took_ms = asked.elapsed().as_secs_f64() * 1000.0;
        wall_ms_first.get_or_insert(took_ms);
        wall_ms.push(took_ms);
        server_us.push(response.took_micros as f64 / 1000.0);
        progress.inc();
    }
    progress.finish();
    let rss_after_recalls = hindsight_node::resident_bytes();
    let breakdown_after_recalls = hindsight_node::memory_breakdown();
    server_us.sort_by(f64::total_cmp);
    wall_ms.sort_by(f64::total_cmp);
    let status = match target.as_ref() {
        Target::Embedded(node) => Some(node.status()),
        Target::Remote(..) => None,
    };
    // The bank's records, this run's writes and any a stored bank held before.
    let bank_records = match target.as_ref() {
        Target::Embedded(node) => node.get_bank(bank.clone()).await?.memory_count,
        Target::Remote(..) => args.memories as u64,
    };
    let heap_parts = match target.as_ref() {
        Target::Embedded(node) => node.bank_heap_bytes(&bank),
        Target::Remote(..) => None,
    };
    println!("node opened in {open_secs:.2} s (store, log replay; banks load on first use)");
    if let (Some(first), 0) = (wall_ms_first, args.memories) {
        println!("first recall after opening (loads the bank and its indexes): {first:.1} ms");
    }
    if let (Some(before), Some(after)) = (rss_before, rss_after_writes) {
        let grown = after.saturating_sub(before);
        println!(
            "resident memory: {:.1} MiB before the writes, {:.1} MiB after{}",
            before as f64 / 1048576.0,
            after as f64 / 1048576.0,
            if args.memories > 0 {
                format!(
                    ": {:.2} KiB per memory written",
                    grown as f64 / 1024.0 / args.memories as f64
                )
            } else {
                String::new()
            }
        );
    }
    if let (Some(before), Some(after)) = (rss_before, rss_after_recalls) {
        println!(
            "resident memory after the recalls: {:.1} MiB, {:.2} KiB per memory of the bank ({} memories) above the node before the writes",
            after as f64 / 1048576.0,
            after.saturating_sub(before) as f64 / 1024.0 / bank_records.max(1) as f64,
            bank_records
        );
    }
    if let Some(parts) = breakdown_after_recalls {
        // What the index's own count leaves out: everything else the process allocated (the
        // store's caches, the embedder, the write path's buffers) and what the allocator holds.
        print_resident_breakdown("after the recalls", &parts);
    }
    if let Some(parts) = heap_parts {
        let total: u64 = parts.iter().map(|(_, bytes)| bytes).sum();
        let per_memory = |bytes: u64| bytes as f64 / 1024.0 / bank_records.max(1) as f64;
        let shown: Vec<String> = parts
            .iter()
            .map(|(part, bytes)| format!("{part} {:.2}", per_memory(*bytes)))
            .collect();
        println!(
            "heap per memory of the bank, KiB: {:.2} = {} (allocator overhead not included)",
            per_memory(total),
            shown.join(", ")
        );
    }
    println!(
        "writes: {} in {:.1} s = {:.0} writes/s (batch {}, {} writers)",
        args.memories,
        write_secs,
        args.memories as f64 / write_secs,
        args.batch,
        args.concurrency
    );
    if let Some(status) = status {
        println!(
            "raft log entries: {} for {} memories (group commit); store on disk {:.1} MiB",
            status.last_log_index,
            args.memories,
            status.store_bytes_on_disk as f64 / 1048576.0
        );
    }
    for (when, reach) in [
        ("when the writes ended", graph_at_end_of_writes),
        (
            &*format!("{} s later, as the recalls began", args.settle),
            graph_at_recalls,
        ),
    ] {
        if let Some(reach) = reach {
            println!("vector graph {when}: {reach}");
        }
    }
    println!(
        "recall (server-side, ms) at {} memories: p50 {:.2}  p95 {:.2}  p99 {:.2}  max {:.2}",
        bank_records,
        percentile(&server_us, 0.50),
        percentile(&server_us, 0.95),
        percentile(&server_us, 0.99),
        server_us.last().copied().unwrap_or(0.0)
    );
    println!(
        "recall (in-process wall, ms): p50 {:.2}  p95 {:.2}  p99 {:.2}",
        percentile(&wall_ms, 0.50),
        percentile(&wall_ms, 0.95),
        percentile(&wall_ms, 0.99)
    );
    if args.review_changed > 0 {
        let Target::Embedded(node) = target.as_ref() else {
            anyhow::bail!("the review benchmark needs the embedded node");
        };
        review_bench(node, &bank, &args, &mut rng).await?;
    }
    target.shutdown().await;
    Ok(())
}

/// How much of the bank's vectors its graph reaches, for the embedded node.
fn graph_reach(target: &Target, bank: &BankName) -> Option<String> {
    let Target::Embedded(node) = target else {
        return None;
    };
    let stats = node.bank_vector_stats(bank)?;
    Some(format!(
        "{} of {} vectors linked, {} scanned one by one by each search",
        stats.graph_points.unwrap_or(0),
        stats.live,
        stats.unsearched
    ))
}

/// Cycles over everything written so far (the baseline every later cycle starts from; a cycle
/// takes at most `review.max_changed_per_cycle`, so a large bank needs several), then
/// `review_changed` new memories, then the cycle that is timed: it must look only at what changed.
async fn review_bench(
    node: &hindsight_node::Node,
    bank: &BankName,
    args: &BenchArgs,
    rng: &mut StdRng,
) -> Result<()> {
    let started = Instant::now();
    let (mut cycles, mut changed, mut judged) = (0u64, 0u64, 0u64);
    let mut decisions: std::collections::BTreeMap<String, u64> = Default::default();
    loop {
        let report = node.review(bank.clone(), None).await?;
        cycles += 1;
        changed += report.cycle.changed;
        judged += report.cycle.pairs_judged;
        for (action, n) in &report.cycle.decisions {
            *decisions.entry(action.clone()).or_default() += n;
        }
        if report.backlog == 0 {
            break;
        }
    }
    println!(
        "review baseline: {changed} changed memories in {cycles} cycles, {:.1} s, {judged} pairs judged, decisions {decisions:?}",
        started.elapsed().as_secs_f64(),
    );
    for round in 0..args.review_rounds.max(1) {
        let first = args.memories + round * args.review_changed;
        timed_review_cycle(node, bank, args, rng, first).await?;
    }
    Ok(())
}

/// Writes `review_changed` new memories and times the cycle over them.
async fn timed_review_cycle(
    node: &hindsight_node::Node,
    bank: &BankName,
    args: &BenchArgs,
    rng: &mut StdRng,
    first: usize,
) -> Result<()> {
    let contents: Vec<String> = (0..args.review_changed)
        .map(|n| sentence(rng, first + n))
        .collect();
    for chunk in contents.chunks(args.batch.max(1)) {
        let requests = chunk
            .iter()
            .map(|c| {
                WriteRequest::new(
                    bank.clone(),
                    c.clone(),
                    Provenance::from_source(SourceKind::User),
                )
            })
            .collect();
        node.write_batch(requests).await?;
    }
    let started = Instant::now();
    let report = node.review(bank.clone(), None).await?;
    let took = started.elapsed().as_secs_f64();
    let c = &report.cycle;
    println!(
        "review cycle: {} changed of {} memories in {:.3} s (planning {:.3} s); pairs considered {} of {} possible ({:.2e}), judged {} by {}; decisions {:?}",
        c.changed,
        report.considered,
        took,
        c.took_micros as f64 / 1e6,
        c.pairs_considered,
        c.all_pairs,
        c.pairs_considered as f64 / c.all_pairs.max(1) as f64,
        c.pairs_judged,
        c.judge,
        c.decisions
    );
    let steps: Vec<String> = report
        .phases
        .iter()
        .map(|(step, micros)| format!("{step} {:.3}", *micros as f64 / 1e6))
        .collect();
    println!("review cycle steps (s): {}", steps.join(", "));
    Ok(())
}

/// Resident memory by kind, and the allocator's live and free bytes where it counts them.
pub(crate) fn print_resident_breakdown(when: &str, parts: &hindsight_node::MemoryBreakdown) {
    let mib = |bytes: u64| bytes as f64 / 1048576.0;
    let heap = parts.heap.map_or(String::new(), |heap| {
        format!(
            "; heap {:.1} MiB in use, {:.1} MiB free in the allocator",
            mib(heap.in_use_bytes),
            mib(heap.free_bytes)
        )
    });
    println!(
        "resident memory {when}: {:.1} MiB anonymous, {:.1} MiB file-backed{heap}",
        mib(parts.anonymous_bytes),
        mib(parts.file_bytes),
    );
}
