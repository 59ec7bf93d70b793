use anyhow::Context;
use hindsight_review::reflect::TaskTrace;

use crate::cli::{ConflictsCommand, ReflectArgs, ReviewArgs};
use crate::json;
use crate::moment::point;
use crate::output::{emit, join};
use crate::table::Table;

pub async fn run(args: ReviewArgs) -> anyhow::Result<()> {
    let bank = args.bank.parse()?;
    let as_of = args.as_of.as_deref().map(point).transpose()?;
    let client = args.client.connect().await?;
    let report = client.review(bank, as_of).await?;
    emit(
        args.client.json(),
        || json::review(&report),
        || {
            let mut t = Table::fields();
            t.row(["bank", &report.bank])
                .row(["as_of", &report.as_of.to_string()])
                .row(["considered", &report.considered.to_string()])
                .row(["expired", &report.expired.len().to_string()]);
            if !report.expired.is_empty() {
                t.row(["expired_ids", &join(&report.expired)]);
            }
            let c = &report.cycle;
            let decisions = c
                .decisions
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            t.row(["cycle", &c.cycle.to_string()])
                .row(["changed", &c.changed.to_string()])
                .row([
                    "backlog",
                    &if report.backlog > 0 {
                        format!("{} (the next cycles follow at once)", report.backlog)
                    } else {
                        "0".to_string()
                    },
                ])
                .row([
                    "pairs",
                    &format!(
                        "{} considered of {} possible, {} judged by {}",
                        c.pairs_considered, c.all_pairs, c.pairs_judged, c.judge
                    ),
                ])
                .row([
                    "tokens",
                    &if c.token_budget > 0 {
                        format!("{} of {} budget", c.tokens_used, c.token_budget)
                    } else {
                        "0 (offline judge)".to_string()
                    },
                ])
                .row(["deferred", &c.pairs_deferred.to_string()])
                .row(["decisions", &decisions])
                .row(["updated", &report.updated.len().to_string()])
                .row(["rules_distilled", &report.created.len().to_string()])
                .row(["purged", &report.purged.len().to_string()])
                .row([
                    "conflicts_opened",
                    &report.conflicts_opened.len().to_string(),
                ])
                .row(["took", &format!("{} ms", c.took_micros / 1000)]);
            t.render()
        },
    );
    Ok(())
}

pub async fn reflect(args: ReflectArgs) -> anyhow::Result<()> {
    let bank = args.bank.parse()?;
    let text = if args.trace.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&args.trace)
            .with_context(|| format!("cannot read {}", args.trace.display()))?
    };
    let trace: TaskTrace = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a task trace", args.trace.display()))?;
    let client = args.client.connect().await?;
    let report = client
        .reflect(bank, &trace, args.task_id, args.dry_run)
        .await?;
    emit(
        args.client.json(),
        || json::reflect(&report),
        || {
            if report.memories.is_empty() {
                return format!("nothing worth keeping ({})\n", report.reflector);
            }
            let mut t = Table::with_header(["KIND", "SUBTYPE", "STORED", "ID", "CONTENT"]);
            for (m, written) in &report.memories {
                let (stored, id) = match written {
                    Some(w) => (w.disposition.name().to_string(), w.id.to_string()),
                    None => ("dry run".to_string(), String::new()),
                };
                t.row([
                    m.kind.as_str().to_string(),
                    m.subtype
                        .map(|s| s.as_str().to_string())
                        .unwrap_or_default(),
                    stored,
                    id,
                    m.content.clone(),
                ]);
            }
            format!(
                "{}reflector {}, {} tokens\n",
                t.render(),
                report.reflector,
                report.tokens_used
            )
        },
    );
    Ok(())
}

pub async fn conflicts(command: ConflictsCommand) -> anyhow::Result<()> {
    match command {
        ConflictsCommand::List(args) => {
            let client = args.client.connect().await?;
            let conflicts = client.conflicts(args.bank.parse()?, args.all).await?;
            emit(
                args.client.json(),
                || serde_json::json!({ "conflicts": conflicts.iter().map(json::conflict).collect::<Vec<_>>() }),
                || {
                    let mut t = Table::with_header(["id", "a", "b", "judge", "why", "outcome"]);
                    for c in &conflicts {
                        let outcome = c.resolution.as_ref().map_or("open", |r| {
                            hindsight_node::conflicts::outcome_name(r.outcome)
                        });
                        t.row([
                            c.id.to_string().as_str(),
                            &c.a.to_string(),
                            &c.b.to_string(),
                            &c.judge,
                            &c.explanation,
                            outcome,
                        ]);
                    }
                    t.render()
                },
            );
        }
        ConflictsCommand::Resolve(args) => {
            let client = args.client.connect().await?;
            let (conflict, changed) = client
                .resolve_conflict(args.bank.parse()?, args.id, &args.outcome, &args.note)
                .await?;
            emit(
                args.client.json(),
                || serde_json::json!({ "conflict": json::conflict(&conflict), "changed": changed.iter().map(|id| id.to_string()).collect::<Vec<_>>() }),
                || {
                    format!(
                        "conflict {} resolved: {} ({} memories changed)\n",
                        conflict.id,
                        args.outcome,
                        changed.len()
                    )
                },
            );
        }
    }
    Ok(())
}
