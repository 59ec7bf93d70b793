//! `hindsight bench --banks N`: many small banks on one node, as a fleet of agents uses it. The
//! memories are written one request per bank; the node keeps the banks it can within its memory
//! budget and unloads the rest. Then recalls go to banks that are no longer in memory, each
//! timed from the request to the answer: what an agent waiting on a cold bank sees.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hindsight_core::{BankName, Provenance, RecallRequest, SourceKind, WriteRequest};
use hindsight_node::Node;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::bench::{print_resident_breakdown, sentence, BenchArgs};
use crate::eval::percentile;
use crate::progress::Progress;
use crate::target::Target;

/// How long the node is given, after the writes, to bring its loaded banks within budget: a few
/// of its residency checks (every 0.5 s; banks used in the last 5 s stay).
const SETTLE_LIMIT: Duration = Duration::from_secs(15);

pub async fn run(args: BenchArgs) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let data_dir = args.data_dir.clone().unwrap_or_else(|| tmp.path().into());
    let target = Target::embedded(args.config.as_deref(), &data_dir).await?;
    let Target::Embedded(node) = &target else {
        anyhow::bail!("the fleet benchmark needs the embedded node");
    };
    let names: Vec<BankName> = (0..args.banks)
        .map(|i| format!("{}/{i}", args.bank).parse())
        .collect::<Result<_, _>>()?;
    let per_bank = (args.memories / args.banks).max(1);
    let budget = node.memory_budget_bytes();
    eprintln!(
        "bench: {} banks of {per_bank} memories from {} writers, then {} recalls to unloaded banks; \
         loaded banks' budget {:.0} MiB",
        args.banks,
        args.concurrency,
        args.queries,
        budget as f64 / 1048576.0
    );
    let rss_before = hindsight_node::resident_bytes();
    let sampler = ResidentSampler::start();

    let names = Arc::new(names);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let progress = Arc::new(Progress::new("write", (args.banks * per_bank) as u64));
    let started = Instant::now();
    let mut writers = vec![];
    for writer in 0..args.concurrency.max(1) {
        let (node, names, next, progress) =
            (node.clone(), names.clone(), next.clone(), progress.clone());
        let seed = args.seed + writer as u64;
        writers.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed);
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(bank) = names.get(i) else {
                    return Ok::<(), anyhow::Error>(());
                };
                let requests = (0..per_bank)
                    .map(|j| {
                        WriteRequest::new(
                            bank.clone(),
                            sentence(&mut rng, i * per_bank + j),
                            Provenance::from_source(SourceKind::User),
                        )
                    })
                    .collect();
                node.write_batch(requests).await?;
                progress.add(per_bank as u64);
            }
        }));
    }
    for writer in writers {
        writer.await.context("writer task failed")??;
    }
    progress.finish();
    let write_secs = started.elapsed().as_secs_f64();

    let settling = Instant::now();
    while loaded_heap(node, &names) > budget && settling.elapsed() < SETTLE_LIMIT {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let settle_secs = settling.elapsed().as_secs_f64();
    let rss_settled = hindsight_node::resident_bytes();
    let loaded_after_writes = node.status().banks_loaded;
    let heap_after_writes = loaded_heap(node, &names);

    let mut rng = StdRng::seed_from_u64(args.seed ^ 0x5eed);
    let (mut cold_ms, mut warm_ms) = (vec![], vec![]);
    let progress = Progress::new("recall", args.queries as u64);
    let mut tries = 0;
    while cold_ms.len() < args.queries && tries < args.queries * 20 {
        tries += 1;
        let i = rng.gen_range(0..names.len());
        let bank = &names[i];
        let cold = node.bank_heap_bytes(bank).is_none();
        let memory = i * per_bank + rng.gen_range(0..per_bank);
        let query = sentence(&mut rng, memory);
        let asked = Instant::now();
        let answer = node
            .recall(RecallRequest::new(vec![bank.clone()], query, 10))
            .await?;
        let took = asked.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(!answer.hits.is_empty(), "bank {bank} answered nothing");
        if cold {
            cold_ms.push(took);
            progress.inc();
        } else {
            warm_ms.push(took);
        }
    }
    progress.finish();
    let rss_after = hindsight_node::resident_bytes();
    let samples = sampler.stop().await;
    cold_ms.sort_by(f64::total_cmp);
    warm_ms.sort_by(f64::total_cmp);

    let mib = |bytes: u64| bytes as f64 / 1048576.0;
    let memories = args.banks * per_bank;
    println!(
        "writes: {memories} memories into {} banks in {write_secs:.1} s = {:.0} writes/s, {:.0} banks/s ({} writers, one request per bank)",
        args.banks,
        memories as f64 / write_secs,
        args.banks as f64 / write_secs,
        args.concurrency
    );
    println!(
        "loaded banks {settle_secs:.1} s after the writes: {loaded_after_writes} of {} holding {:.1} MiB of heap (budget {:.0} MiB)",
        args.banks,
        mib(heap_after_writes),
        mib(budget)
    );
    if let (Some(before), Some(settled), Some(after)) = (rss_before, rss_settled, rss_after) {
        println!(
            "resident memory: {:.1} MiB before the writes, {:.1} MiB once within budget, {:.1} MiB after the recalls",
            mib(before),
            mib(settled),
            mib(after)
        );
    }
    if let Some(line) = samples.summary(budget) {
        println!("{line}");
    }
    if let Some(parts) = hindsight_node::memory_breakdown() {
        print_resident_breakdown("after the recalls", &parts);
    }
    println!(
        "store on disk {:.1} MiB ({:.2} KiB per memory)",
        mib(node.status().store_bytes_on_disk),
        node.status().store_bytes_on_disk as f64 / 1024.0 / memories as f64
    );
    let line = |what: &str, ms: &[f64]| {
        println!(
            "{what} ({} recalls, wall ms, in-process): p50 {:.2}  p95 {:.2}  p99 {:.2}  max {:.2}",
            ms.len(),
            percentile(ms, 0.50),
            percentile(ms, 0.95),
            percentile(ms, 0.99),
            ms.last().copied().unwrap_or(0.0)
        )
    };
    line(
        "recall of an unloaded bank (loads it from its dump)",
        &cold_ms,
    );
    if !warm_ms.is_empty() {
        line("recall of a loaded bank", &warm_ms);
    }
    target.shutdown().await;
    Ok(())
}

/// Heap the loaded banks among `names` hold, by the count the budget goes by.
fn loaded_heap(node: &Node, names: &[BankName]) -> u64 {
    names
        .iter()
        .filter_map(|bank| node.bank_heap_bytes(bank))
        .flatten()
        .map(|(_, bytes)| bytes)
        .sum()
}

/// How often resident memory is sampled while the benchmark runs: the budget is to hold at every
/// moment, not only at the points the summary lines name.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Samples the process's resident memory every [`SAMPLE_EVERY`] from the first write to the last
/// recall.
struct ResidentSampler {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<ResidentSamples>,
}

impl ResidentSampler {
    fn start() -> Self {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut samples = ResidentSamples::default();
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        samples.bytes.extend(hindsight_node::resident_bytes());
                        // So far, on stderr, for a run that does not reach its summary.
                        if samples.bytes.len() % 60 == 0 {
                            let max = samples.bytes.iter().max().copied().unwrap_or(0);
                            eprintln!(
                                "bench: resident memory after {} s: max {:.1} MiB so far",
                                samples.bytes.len() as u64 * SAMPLE_EVERY.as_secs(),
                                max as f64 / 1048576.0
                            );
                        }
                    }
                    _ = &mut stopped => return samples,
                }
            }
        });
        ResidentSampler { stop, task }
    }

    async fn stop(self) -> ResidentSamples {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

#[derive(Default)]
struct ResidentSamples {
    bytes: Vec<u64>,
}

impl ResidentSamples {
    /// One line: how many samples, their median, 99th percentile and maximum, and how many were
    /// above `budget` and by how much at most.
    fn summary(mut self, budget: u64) -> Option<String> {
        if self.bytes.is_empty() {
            return None;
        }
        self.bytes.sort_unstable();
        let mib = |bytes: u64| bytes as f64 / 1048576.0;
        let at = |q: f64| self.bytes[((self.bytes.len() - 1) as f64 * q).round() as usize];
        let max = *self.bytes.last()?;
        let over = self.bytes.iter().filter(|&&b| b > budget).count();
        let over_by = if over > 0 {
            format!(
                ", at most {:.1} % over",
                (max as f64 / budget as f64 - 1.0) * 100.0
            )
        } else {
            String::new()
        };
        Some(format!(
            "resident memory sampled every {} s from the first write to the last recall: {} samples, median {:.1} MiB, p99 {:.1} MiB, max {:.1} MiB; {over} above the budget of {:.0} MiB{over_by}",
            SAMPLE_EVERY.as_secs(),
            self.bytes.len(),
            mib(at(0.5)),
            mib(at(0.99)),
            mib(max),
            mib(budget),
        ))
    }
}
