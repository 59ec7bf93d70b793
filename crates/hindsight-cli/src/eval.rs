//! `hindsight eval`: replays a lifecycle benchmark (shared/eval/FORMAT.md) against an embedded node in
//! a temporary directory, or a running server, and scores it. Scorer-only fields (`category`, gold
//! lists, `attack`) never reach the service.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use hindsight_core::{
    BankName, Kind, MemoryId, Provenance, RecallRequest, SourceKind, Timestamp, WriteRequest,
};
use serde::Deserialize;

use crate::target::Target;

/// Arguments of `hindsight eval`.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Folder holding manifest.json and timeline.jsonl.
    pub dataset: PathBuf,
    /// Where to write one result line per query.
    #[arg(long, default_value = "eval-results.jsonl")]
    pub out: PathBuf,
    /// Replay against this running server (gRPC HOST:PORT) instead of an embedded node.
    #[arg(long)]
    pub server: Option<String>,
    /// Node configuration for the embedded node (its data dir is always a fresh temporary one).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Fail (exit 1) when a category's success falls below X, e.g. `--min-success single_hop=0.9`;
    /// `overall=X` sets a floor for all queries together.
    #[arg(long = "min-success", value_parser = parse_min_success)]
    pub min_success: Vec<(String, f64)>,
}

fn parse_min_success(raw: &str) -> Result<(String, f64), String> {
    let (category, value) = raw
        .split_once('=')
        .ok_or_else(|| format!("expected CATEGORY=X, got {raw:?}"))?;
    let value: f64 = value
        .parse()
        .map_err(|_| format!("{value:?} is not a number"))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(format!("{value} is not within 0..1"));
    }
    Ok((category.to_string(), value))
}

#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Op {
    Write(WriteOp),
    Review { namespace: String, at: String },
    Query(QueryOp),
}

#[derive(Debug, Deserialize)]
struct WriteOp {
    #[serde(rename = "ref")]
    reference: String,
    namespace: String,
    at: String,
    content: String,
    kind: String,
    source: String,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    ttl_seconds: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct QueryOp {
    #[serde(rename = "ref")]
    reference: String,
    namespace: String,
    #[serde(default)]
    namespaces: Option<Vec<String>>,
    at: String,
    query: String,
    k: u32,
    category: String,
    #[serde(default)]
    gold_all: Vec<String>,
    #[serde(default)]
    gold_any: Vec<String>,
    #[serde(default)]
    forbidden: Vec<String>,
    #[serde(default)]
    max_from_group: Option<Group>,
}

#[derive(Debug, Deserialize)]
struct Group {
    refs: Vec<String>,
    max: usize,
}

/// Consecutive writes go in one batch (the service group-commits them anyway); a batch is flushed
/// before any review or query so they see every earlier write.
const WRITE_BATCH: usize = 128;

pub async fn run(args: EvalArgs) -> Result<()> {
    let timeline = read_timeline(&args.dataset)?;
    let started = Instant::now();
    let (target, _tmp) = match &args.server {
        Some(server) => (Target::remote(server).await?, None),
        None => {
            let tmp = tempfile::tempdir().context("cannot create a temporary data dir")?;
            let target = Target::embedded(args.config.as_deref(), tmp.path()).await?;
            (target, Some(tmp))
        }
    };
    let writes = timeline
        .iter()
        .filter(|o| matches!(o, Op::Write(_)))
        .count();
    let queries = timeline
        .iter()
        .filter(|o| matches!(o, Op::Query(_)))
        .count();
    eprintln!(
        "replaying {} ({writes} writes, {queries} queries) against {}",
        args.dataset.display(),
        target.describe()
    );
    let progress = crate::progress::Progress::new("eval", timeline.len() as u64);

    // A memory stands for every write it holds: its own and the duplicates merged into it.
    let mut refs_by_id: HashMap<MemoryId, Vec<String>> = HashMap::new();
    let mut pending: Vec<(String, WriteRequest)> = vec![];
    let mut results = vec![];
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&args.out)
            .with_context(|| format!("cannot write {}", args.out.display()))?,
    );
    for op in timeline {
        match op {
            Op::Write(w) => {
                pending.push((w.reference.clone(), write_request(&w)?));
                if pending.len() >= WRITE_BATCH {
                    flush(&target, &mut pending, &mut refs_by_id).await?;
                }
            }
            Op::Review { namespace, at } => {
                flush(&target, &mut pending, &mut refs_by_id).await?;
                target
                    .review(bank(&namespace)?, Timestamp::parse_rfc3339(&at)?)
                    .await?;
            }
            Op::Query(q) => {
                flush(&target, &mut pending, &mut refs_by_id).await?;
                let banks = match &q.namespaces {
                    Some(list) if !list.is_empty() => {
                        list.iter().map(|n| bank(n)).collect::<Result<Vec<_>>>()?
                    }
                    _ => vec![bank(&q.namespace)?],
                };
                let mut request = RecallRequest::new(banks, q.query.clone(), q.k);
                request.as_of = Some(Timestamp::parse_rfc3339(&q.at)?);
                let asked = Instant::now();
                let ranked_ids = target.recall(request).await?;
                let latency_ms = asked.elapsed().as_secs_f64() * 1000.0;
                let relevance: Vec<f32> = ranked_ids.iter().map(|(_, r)| *r).collect();
                let ranked: Vec<Vec<String>> = ranked_ids
                    .iter()
                    .map(|(ids, _)| {
                        ids.iter()
                            .filter_map(|id| refs_by_id.get(id))
                            .flatten()
                            .cloned()
                            .collect()
                    })
                    .collect();
                serde_json::to_writer(
                    &mut out,
                    &serde_json::json!({
                        "query": q.reference,
                        "ranked": ranked,
                        "relevance": relevance,
                        "latency_ms": latency_ms,
                    }),
                )?;
                out.write_all(b"\n")?;
                let success = judge(&q, &ranked);
                results.push((q.category.clone(), success, latency_ms));
            }
        }
        progress.inc();
    }
    flush(&target, &mut pending, &mut refs_by_id).await?;
    out.flush()?;
    progress.finish();
    target.shutdown().await;

    let report = Report::new(&results);
    report.print(started.elapsed().as_secs_f64(), &args.out);
    let mut failed = vec![];
    let overall = report
        .by_category
        .values()
        .fold((0, 0), |(n, ok), (total, success)| {
            (n + total, ok + success)
        });
    for (category, min) in &args.min_success {
        let counts = if category == "overall" && !report.by_category.contains_key(category) {
            Some(&overall).filter(|(n, _)| *n > 0)
        } else {
            report.by_category.get(category)
        };
        match counts {
            Some(&(n, ok)) if (ok as f64 / n as f64) + 1e-9 >= *min => {}
            Some(&(n, ok)) => {
                failed.push(format!("{category} {:.3} < {min}", ok as f64 / n as f64))
            }
            None => failed.push(format!("{category}: no queries in this dataset")),
        }
    }
    if !failed.is_empty() {
        bail!("quality gate failed: {}", failed.join(", "));
    }
    Ok(())
}

fn read_timeline(dir: &Path) -> Result<Vec<Op>> {
    let manifest = dir.join("manifest.json");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&manifest)
            .with_context(|| format!("cannot read {}", manifest.display()))?,
    )
    .with_context(|| format!("{} is not JSON", manifest.display()))?;
    if manifest.get("format").and_then(|f| f.as_u64()) != Some(1) {
        bail!(
            "unsupported benchmark format in {} (expected 1)",
            dir.display()
        );
    }
    let path = dir.join("timeline.jsonl");
    let file =
        std::fs::File::open(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut ops = vec![];
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        ops.push(
            serde_json::from_str(&line)
                .with_context(|| format!("{}:{}: not a valid operation", path.display(), n + 1))?,
        );
    }
    Ok(ops)
}

fn bank(namespace: &str) -> Result<BankName> {
    Ok(namespace.parse()?)
}

fn write_request(w: &WriteOp) -> Result<WriteRequest> {
    let source: SourceKind = w.source.parse()?;
    let mut provenance = Provenance::from_source(source);
    provenance.tool = w.tool.clone();
    let mut request = WriteRequest::new(bank(&w.namespace)?, w.content.clone(), provenance);
    request.kind = w.kind.parse::<Kind>()?;
    request.occurred_at = Some(Timestamp::parse_rfc3339(&w.at)?);
    request.ttl_secs = w.ttl_seconds;
    Ok(request)
}

async fn flush(
    target: &Target,
    pending: &mut Vec<(String, WriteRequest)>,
    refs_by_id: &mut HashMap<MemoryId, Vec<String>>,
) -> Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    let batch: Vec<(String, WriteRequest)> = std::mem::take(pending);
    let (refs, requests): (Vec<String>, Vec<WriteRequest>) = batch.into_iter().unzip();
    let ids = target.write_batch(requests).await?;
    for (reference, id) in refs.into_iter().zip(ids) {
        refs_by_id.entry(id).or_default().push(reference);
    }
    Ok(())
}

fn judge(q: &QueryOp, ranked: &[Vec<String>]) -> bool {
    let top: Vec<&Vec<String>> = ranked.iter().take(q.k as usize).collect();
    let present = |r: &String| top.iter().any(|item| item.contains(r));
    if !q.gold_all.iter().all(present) {
        return false;
    }
    if !q.gold_any.is_empty() && !q.gold_any.iter().any(present) {
        return false;
    }
    if q.forbidden.iter().any(present) {
        return false;
    }
    if let Some(group) = &q.max_from_group {
        let hits = top
            .iter()
            .filter(|item| item.iter().any(|r| group.refs.contains(r)))
            .count();
        if hits > group.max {
            return false;
        }
    }
    true
}

struct Report {
    by_category: BTreeMap<String, (usize, usize)>,
    latencies: Vec<f64>,
}

impl Report {
    fn new(results: &[(String, bool, f64)]) -> Self {
        let mut by_category: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let mut latencies = vec![];
        for (category, success, latency) in results {
            let entry = by_category.entry(category.clone()).or_default();
            entry.0 += 1;
            entry.1 += usize::from(*success);
            latencies.push(*latency);
        }
        latencies.sort_by(f64::total_cmp);
        Report {
            by_category,
            latencies,
        }
    }

    fn print(&self, seconds: f64, out: &Path) {
        println!(
            "{:<20} {:>8} {:>8} {:>8}",
            "category", "queries", "success", "rate"
        );
        let (mut n, mut ok, mut macro_sum) = (0, 0, 0.0);
        for (category, (total, success)) in &self.by_category {
            let rate = *success as f64 / *total as f64;
            println!("{category:<20} {total:>8} {success:>8} {rate:>8.3}");
            n += total;
            ok += success;
            macro_sum += rate;
        }
        let overall = if n == 0 { 0.0 } else { ok as f64 / n as f64 };
        let macro_avg = if self.by_category.is_empty() {
            0.0
        } else {
            macro_sum / self.by_category.len() as f64
        };
        println!("{:<20} {n:>8} {ok:>8} {overall:>8.3}", "overall");
        println!("{:<20} {:>8} {:>8} {macro_avg:>8.3}", "macro", "", "");
        println!(
            "recall latency ms: p50 {:.2}  p95 {:.2}  p99 {:.2}  max {:.2}  ({} queries, run took {seconds:.1} s; results in {})",
            percentile(&self.latencies, 0.50),
            percentile(&self.latencies, 0.95),
            percentile(&self.latencies, 0.99),
            self.latencies.last().copied().unwrap_or(0.0),
            self.latencies.len(),
            out.display(),
        );
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(gold_all: &[&str], forbidden: &[&str], group: Option<(&[&str], usize)>) -> QueryOp {
        QueryOp {
            reference: "q1".into(),
            namespace: "a/b".into(),
            namespaces: None,
            at: "2026-01-01T00:00:00Z".into(),
            query: "q".into(),
            k: 2,
            category: "c".into(),
            gold_all: gold_all.iter().map(|s| s.to_string()).collect(),
            gold_any: vec![],
            forbidden: forbidden.iter().map(|s| s.to_string()).collect(),
            max_from_group: group.map(|(refs, max)| Group {
                refs: refs.iter().map(|s| s.to_string()).collect(),
                max,
            }),
        }
    }

    fn ranked(items: &[&[&str]]) -> Vec<Vec<String>> {
        items
            .iter()
            .map(|i| i.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn judging_follows_the_format() {
        let r = ranked(&[&["w1", "w9"], &["w2"], &["w3"]]);
        assert!(judge(&query(&["w1", "w2"], &[], None), &r));
        assert!(
            !judge(&query(&["w3"], &[], None), &r),
            "w3 is outside k = 2"
        );
        assert!(judge(&query(&["w9"], &[], None), &r), "merged refs count");
        assert!(!judge(&query(&[], &["w2"], None), &r));
        assert!(judge(&query(&[], &["w3"], None), &r));
        assert!(!judge(&query(&[], &[], Some((&["w1", "w2"], 1))), &r));
        assert!(judge(&query(&[], &[], Some((&["w1", "w9"], 1))), &r));
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), 50.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
