//! `hindsight feedback` and `hindsight log`: learning from use.

use std::io::Write as _;

use anyhow::Context;
use hindsight_core::retrieval::{RecallId, RetrievalQuery};
use hindsight_core::{FeedbackOutcome, MemoryId, RetrievalRecord, Timestamp};

use crate::cli::{FeedbackArgs, LogCommand, LogFilterArgs};
use crate::json;
use crate::moment::moment;
use crate::output::{emit, score, CONTENT_COLUMNS};
use crate::table::{clip, Table};

/// Recalls listed when `--limit` is not given.
const DEFAULT_LIMIT: u32 = 50;
/// Recalls one export asks the server for.
const EXPORT_LIMIT: u32 = 1_000;

pub async fn feedback(args: FeedbackArgs) -> anyhow::Result<()> {
    let recall: RecallId = args.recall_id.parse()?;
    let memory: MemoryId = args.memory_id.parse()?;
    let outcome: FeedbackOutcome = args.outcome.parse()?;
    let client = args.client.connect().await?;
    let report = client.feedback(recall, memory, outcome).await?;
    emit(
        args.client.json(),
        || json::feedback(&report),
        || {
            if report.applied {
                format!(
                    "{outcome}: {memory} confidence {:.2} → {:.2}, status {}\n",
                    report.confidence_before,
                    report.confidence_after,
                    report.memory.status.name()
                )
            } else {
                format!("{outcome} feedback on {memory} for recall {recall} was already recorded; nothing changed\n")
            }
        },
    );
    Ok(())
}

pub async fn log(command: LogCommand) -> anyhow::Result<()> {
    match command {
        LogCommand::List(args) => {
            let query = query(&args.filter, DEFAULT_LIMIT, Timestamp::now())?;
            let client = args.client.connect().await?;
            let recalls = client.recalls(&query).await?;
            emit(
                args.client.json(),
                || json::retrievals(&recalls),
                || list_text(&recalls, &args.filter),
            );
        }
        LogCommand::Show(args) => {
            let recall: RecallId = args.recall_id.parse()?;
            let client = args.client.connect().await?;
            let record = client.recall_record(recall).await?;
            emit(
                args.client.json(),
                || json::retrieval(&record),
                || show_text(&record),
            );
        }
        LogCommand::Export(args) => {
            let query = query(&args.filter, EXPORT_LIMIT, Timestamp::now())?;
            let client = args.client.connect().await?;
            let recalls = client.recalls(&query).await?;
            let mut out: Box<dyn std::io::Write> = match &args.out {
                Some(path) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(path)
                        .with_context(|| format!("cannot create {}", path.display()))?,
                )),
                None => Box::new(std::io::stdout().lock()),
            };
            for record in &recalls {
                writeln!(out, "{}", serde_json::to_string(&json::retrieval(record))?)?;
            }
            out.flush()?;
            if let Some(path) = &args.out {
                eprintln!("{} recalls written to {}", recalls.len(), path.display());
            }
        }
    }
    Ok(())
}

fn query(
    filter: &LogFilterArgs,
    default_limit: u32,
    now: Timestamp,
) -> anyhow::Result<RetrievalQuery> {
    let (mut since, mut until) = (None, None);
    if let Some(text) = &filter.since {
        // At or after the moment's start, whatever it names: `--since yesterday` takes in today.
        since = Some(moment(text, now)?.0);
    }
    if let Some(text) = &filter.until {
        until = Some(moment(text, now)?.0);
    }
    Ok(RetrievalQuery {
        bank: filter.bank.as_deref().map(str::parse).transpose()?,
        query_contains: filter.query.clone(),
        since,
        until,
        limit: filter.limit.unwrap_or(default_limit) as usize,
    })
}

fn list_text(recalls: &[RetrievalRecord], filter: &LogFilterArgs) -> String {
    if recalls.is_empty() {
        let given: Vec<String> = [
            ("--bank", &filter.bank),
            ("--query", &filter.query),
            ("--since", &filter.since),
            ("--until", &filter.until),
        ]
        .into_iter()
        .filter_map(|(flag, value)| value.as_ref().map(|v| format!("{flag} {v}")))
        .collect();
        // An empty answer to a filtered question must not read as an empty log.
        return match given.is_empty() {
            true => "no recalls logged\n".to_string(),
            false => format!("no recalls match these filters ({})\n", given.join(", ")),
        };
    }
    let mut t = Table::with_header([
        "RECALL", "AT", "BANKS", "QUERY", "RESULTS", "MS", "FEEDBACK",
    ]);
    for r in recalls {
        t.row([
            r.id.to_string(),
            r.at.to_rfc3339(),
            r.request
                .banks
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            clip(&r.request.query, 40),
            r.hits.len().to_string(),
            format!("{:.1}", r.latency_micros as f64 / 1000.0),
            r.feedback.len().to_string(),
        ]);
    }
    t.render()
}

fn show_text(r: &RetrievalRecord) -> String {
    let q = &r.request;
    let mut out = format!(
        "recall {} at {} by {}\nbanks {}\nquery {:?}\nintent {}{}{}, top_k {}, {:.1} ms\n\n",
        r.id,
        r.at.to_rfc3339(),
        r.principal,
        q.banks
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        q.query,
        q.intent,
        q.agent_role
            .as_ref()
            .map(|role| format!(", role {role}"))
            .unwrap_or_default(),
        if q.context.is_empty() {
            String::new()
        } else {
            format!(
                ", context {}",
                q.context
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        },
        q.top_k,
        r.latency_micros as f64 / 1000.0
    );
    let mut t = Table::with_header(["#", "SCORE", "ID", "WHY", "CONTENT"]);
    for h in &r.hits {
        let e = &h.explain;
        let mut why: Vec<String> = e
            .arms
            .iter()
            .map(|a| format!("{}#{}", a.arm, a.rank))
            .collect();
        why.push(format!(
            "rel {:.2} conf {:.2} fresh {:.2}",
            e.relevance, e.confidence, e.freshness
        ));
        why.extend(e.adjustments.iter().cloned());
        why.extend(e.flags.iter().cloned());
        t.row([
            h.rank.to_string(),
            score(h.score),
            h.memory.to_string(),
            why.join("; "),
            clip(&h.content, CONTENT_COLUMNS),
        ]);
    }
    out.push_str(&t.render());
    if !r.feedback.is_empty() {
        out.push_str("\nfeedback:\n");
        for f in &r.feedback {
            out.push_str(&format!(
                "  {} {} on {}: confidence {:.2} → {:.2} ({})\n",
                f.at.to_rfc3339(),
                f.outcome,
                f.memory,
                f.confidence_before,
                f.confidence_after,
                f.principal
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(since: Option<&str>) -> LogFilterArgs {
        LogFilterArgs {
            bank: None,
            query: None,
            since: since.map(str::to_string),
            until: None,
            limit: None,
        }
    }

    #[test]
    fn since_means_at_or_after_and_never_closes_the_range() {
        let now = Timestamp::parse_rfc3339("2026-11-29T15:30:00Z").unwrap();
        let query = query(&filter(Some("yesterday")), 50, now).unwrap();
        assert_eq!(
            query.since,
            Some(Timestamp::parse_rfc3339("2026-11-28T00:00:00Z").unwrap())
        );
        assert_eq!(query.until, None);
    }

    #[test]
    fn an_empty_filtered_list_says_the_filters_excluded_everything() {
        assert_eq!(list_text(&[], &filter(None)), "no recalls logged\n");
        assert_eq!(
            list_text(&[], &filter(Some("yesterday"))),
            "no recalls match these filters (--since yesterday)\n"
        );
    }
}
