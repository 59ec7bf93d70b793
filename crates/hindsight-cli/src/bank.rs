//! `hindsight bank …`: bank administration.

use hindsight_core::strategy::Strategies;
use hindsight_core::{BankConfig, BankName, ScoringWeights};
use hindsight_node::BankPatch;
use serde_json::{json, Value};

use crate::cli::{
    BankCommand, BankEditArgs, BankExportArgs, BankImportArgs, BankNameArgs, BankSettings,
    StatusArgs,
};
use crate::json;
use crate::output::{emit, score};
use crate::progress::Progress;
use crate::table::{clip, Table};

/// Columns of a bank's description shown in `bank list`.
const DESCRIPTION_COLUMNS: usize = 50;

pub async fn run(command: BankCommand) -> anyhow::Result<()> {
    match command {
        BankCommand::Create(args) => create(args).await,
        BankCommand::Get(args) => get(args).await,
        BankCommand::List(args) => list(args).await,
        BankCommand::Update(args) => update(args).await,
        BankCommand::Delete(args) => delete(args).await,
        BankCommand::Export(args) => export(args).await,
        BankCommand::Import(args) => import(args).await,
    }
}

async fn create(args: BankEditArgs) -> anyhow::Result<()> {
    let name: BankName = args.name.parse()?;
    let client = args.client.connect().await?;
    let settings = &args.settings;
    let patch = patch(settings, None, None)?;
    let partial_weights = patch.weights.is_none() && settings.any_weight();
    let mut bank = client.create_bank(name.clone(), patch).await?;
    if partial_weights {
        // Weights travel as a set; the ones not given keep the defaults the node just applied.
        let patch = BankPatch {
            weights: Some(settings.weights_over(&bank.weights)),
            ..BankPatch::default()
        };
        bank = client.update_bank(name, patch).await?;
    }
    print_bank(args.client.json(), &bank);
    Ok(())
}

async fn update(args: BankEditArgs) -> anyhow::Result<()> {
    let name: BankName = args.name.parse()?;
    let client = args.client.connect().await?;
    let current = if args.settings.any_weight() || !args.settings.strategies.is_empty() {
        Some(client.get_bank(name.clone()).await?.config)
    } else {
        None
    };
    let patch = patch(
        &args.settings,
        current.as_ref().map(|c| &c.weights),
        current.as_ref().and_then(|c| c.strategies.as_ref()),
    )?;
    let bank = client.update_bank(name, patch).await?;
    print_bank(args.client.json(), &bank);
    Ok(())
}

async fn get(args: BankNameArgs) -> anyhow::Result<()> {
    let name: BankName = args.name.parse()?;
    let client = args.client.connect().await?;
    let info = client.get_bank(name).await?;
    emit(
        args.client.json(),
        || json::bank_info(&info),
        || bank_text(&info.config, Some(info.memory_count)),
    );
    Ok(())
}

async fn list(args: StatusArgs) -> anyhow::Result<()> {
    let client = args.client.connect().await?;
    let banks = client.list_banks().await?;
    emit(
        args.client.json(),
        || json!({ "banks": banks.iter().map(json::bank_info).collect::<Vec<Value>>() }),
        || {
            if banks.is_empty() {
                return "no banks\n".to_string();
            }
            let mut t =
                Table::with_header(["NAME", "MEMORIES", "MIN_CONF", "DEDUP", "DESCRIPTION"]);
            for info in &banks {
                let bank = &info.config;
                t.row([
                    bank.name.to_string(),
                    info.memory_count.to_string(),
                    score(bank.min_confidence),
                    score(bank.dedup_threshold),
                    clip(&bank.description, DESCRIPTION_COLUMNS),
                ]);
            }
            t.render()
        },
    );
    Ok(())
}

async fn delete(args: BankNameArgs) -> anyhow::Result<()> {
    let name: BankName = args.name.parse()?;
    let client = args.client.connect().await?;
    let removed = client.delete_bank(name.clone()).await?;
    emit(
        args.client.json(),
        || json!({ "name": name.as_str(), "memories_removed": removed }),
        || format!("deleted {name} ({removed} memories)\n"),
    );
    Ok(())
}

/// Lines per import call: each is one Raft entry, well under the message limit for typical records.
const IMPORT_BATCH_LINES: usize = 500;
/// Bytes per import call, so that large records still fit the 16 MiB message limit.
const IMPORT_BATCH_BYTES: usize = 8 * 1024 * 1024;

async fn export(args: BankExportArgs) -> anyhow::Result<()> {
    use std::io::Write;
    let name: BankName = args.name.parse()?;
    let client = args.client.connect().await?;
    let total = client.get_bank(name.clone()).await?.memory_count;
    let mut out: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let progress = Progress::new("export", total);
    let (mut lines, mut memories, mut after) = (0u64, 0u64, None);
    loop {
        let (page, next) = client.export_bank_page(&name, after, None).await?;
        for line in &page {
            writeln!(out, "{line}")?;
            if line.starts_with("{\"type\":\"memory\"") {
                memories += 1;
                progress.inc();
            }
        }
        lines += page.len() as u64;
        match next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    out.flush()?;
    progress.finish();
    if let Some(path) = &args.out {
        emit(
            args.client.json(),
            || json!({"name": name.as_str(), "memories": memories, "lines": lines, "file": path}),
            || {
                format!(
                    "exported {name}: {memories} memories, {lines} lines to {}\n",
                    path.display()
                )
            },
        );
    }
    Ok(())
}

async fn import(args: BankImportArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", args.file.display()))?;
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let name: BankName = match &args.bank {
        Some(bank) => bank.parse()?,
        None => exported_name(lines.first().map(String::as_str))?,
    };
    let client = args.client.connect().await?;
    let progress = Progress::new("import", lines.len() as u64);
    let (mut memories, mut conflicts) = (0, 0);
    let mut batch: Vec<String> = vec![];
    let mut batch_bytes = 0;
    for line in lines {
        if !batch.is_empty()
            && (batch.len() >= IMPORT_BATCH_LINES || batch_bytes + line.len() > IMPORT_BATCH_BYTES)
        {
            let sent = batch.len() as u64;
            let (m, c) = client
                .import_bank_lines(&name, std::mem::take(&mut batch), args.resign)
                .await?;
            (memories, conflicts) = (memories + m, conflicts + c);
            progress.add(sent);
            batch_bytes = 0;
        }
        batch_bytes += line.len();
        batch.push(line);
    }
    if !batch.is_empty() {
        let sent = batch.len() as u64;
        let (m, c) = client.import_bank_lines(&name, batch, args.resign).await?;
        (memories, conflicts) = (memories + m, conflicts + c);
        progress.add(sent);
    }
    progress.finish();
    emit(
        args.client.json(),
        || json!({"name": name.as_str(), "memories": memories, "conflicts": conflicts}),
        || format!("imported {name}: {memories} memories, {conflicts} conflicts\n"),
    );
    Ok(())
}

/// The bank name in an export's first line.
fn exported_name(first: Option<&str>) -> anyhow::Result<BankName> {
    let first: Value = serde_json::from_str(first.unwrap_or_default())
        .map_err(|e| anyhow::anyhow!("not a bank export (first line: {e})"))?;
    let name = first["config"]["name"]
        .as_str()
        .filter(|_| first["type"] == "bank")
        .ok_or_else(|| anyhow::anyhow!("not a bank export: the first line is not the bank line"))?;
    Ok(name.parse()?)
}

/// The patch the flags ask for. `base` completes a partial set of weights; without it, weights are
/// sent only when all five are given. Strategies given as flags apply over `strategies` (the
/// defaults when the bank has none of its own).
fn patch(
    s: &BankSettings,
    base: Option<&ScoringWeights>,
    strategies: Option<&Strategies>,
) -> anyhow::Result<BankPatch> {
    let weights = match base {
        Some(base) => Some(s.weights_over(base)),
        None if s.all_weights() => Some(s.weights_over(&ScoringWeights::default())),
        None => None,
    };
    Ok(BankPatch {
        description: s.description.clone(),
        min_confidence: s.min_confidence,
        dedup_threshold: s.dedup_threshold,
        working_ttl_secs: s.working_ttl,
        collapse_threshold: s.collapse_threshold,
        weights,
        max_memories: s.max_memories,
        max_bytes: s.max_bytes,
        require_corroboration: s.require_corroboration,
        strategies: if s.strategies.is_empty() {
            None
        } else {
            Some(strategies_over(
                strategies.cloned().unwrap_or_default(),
                &s.strategies,
            )?)
        },
    })
}

/// `base` with each `key=value` in place of its own value; unknown keys and values are refused
/// with the key named.
fn strategies_over(base: Strategies, given: &[(String, String)]) -> anyhow::Result<Strategies> {
    let Value::Object(mut fields) = serde_json::to_value(&base)? else {
        unreachable!("strategies serialise as an object")
    };
    for (key, value) in given {
        let Some(current) = fields.get(key) else {
            let known: Vec<&String> = fields.keys().collect();
            anyhow::bail!("unknown strategy {key:?}; known: {known:?}");
        };
        let parsed = match current {
            Value::Number(_) => value
                .parse::<f64>()
                .map(Value::from)
                .map_err(|_| anyhow::anyhow!("strategy {key} needs a number, got {value:?}"))?,
            _ => Value::String(value.clone()),
        };
        fields.insert(key.clone(), parsed);
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| anyhow::anyhow!("invalid strategy: {e}"))
}

impl BankSettings {
    fn weight_flags(&self) -> [Option<f32>; 5] {
        [
            self.weight_relevance,
            self.weight_confidence,
            self.weight_freshness,
            self.freshness_days,
            self.fact_freshness_days,
        ]
    }

    fn any_weight(&self) -> bool {
        self.weight_flags().iter().any(Option::is_some)
    }

    fn all_weights(&self) -> bool {
        self.weight_flags().iter().all(Option::is_some)
    }

    /// `base` with the weights given as flags in place of its own.
    fn weights_over(&self, base: &ScoringWeights) -> ScoringWeights {
        ScoringWeights {
            relevance: self.weight_relevance.unwrap_or(base.relevance),
            confidence: self.weight_confidence.unwrap_or(base.confidence),
            freshness: self.weight_freshness.unwrap_or(base.freshness),
            freshness_days: self.freshness_days.unwrap_or(base.freshness_days),
            fact_freshness_days: self.fact_freshness_days.unwrap_or(base.fact_freshness_days),
        }
    }
}

fn print_bank(json: bool, bank: &BankConfig) {
    emit(json, || json::bank(bank), || bank_text(bank, None));
}

fn bank_text(bank: &BankConfig, memory_count: Option<u64>) -> String {
    let w = &bank.weights;
    let mut t = Table::fields();
    t.row(["name", bank.name.as_str()])
        .row(["description", &bank.description])
        .row(["created_at", &bank.created_at.to_string()])
        .row(["updated_at", &bank.updated_at.to_string()])
        .row(["min_confidence", &score(bank.min_confidence)])
        .row(["dedup_threshold", &score(bank.dedup_threshold)])
        .row(["collapse_threshold", &score(bank.collapse_threshold)])
        .row(["working_ttl", &format!("{} s", bank.working_ttl_secs)])
        .row([
            "max_memories",
            &match bank.max_memories {
                0 => "no quota".to_string(),
                n => n.to_string(),
            },
        ])
        .row([
            "max_bytes",
            &match bank.max_bytes {
                0 => "no quota".to_string(),
                n => format!("{n} bytes"),
            },
        ])
        .row([
            "require_corroboration",
            if bank.require_corroboration {
                "yes: uncorroborated low-trust memories are not recalled"
            } else {
                "no: they are recalled, flagged uncorroborated"
            },
        ])
        .row([
            "strategies",
            &bank.strategies.as_ref().map_or_else(
                || "node defaults".to_string(),
                |s| serde_json::to_string(s).unwrap_or_default(),
            ),
        ])
        .row([
            "weights",
            &format!(
                "relevance {} · confidence {} · freshness {} (over {} days, facts {} days)",
                w.relevance, w.confidence, w.freshness, w.freshness_days, w.fact_freshness_days
            ),
        ]);
    if let Some(count) = memory_count {
        t.row(["memories", &count.to_string()]);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn quota_and_corroboration_flags_reach_the_patch() {
        let cli = Cli::try_parse_from([
            "hindsight",
            "bank",
            "update",
            "acme/agent-7",
            "--max-bytes",
            "1048576",
            "--require-corroboration",
            "true",
        ])
        .unwrap();
        let Command::Bank(BankCommand::Update(args)) = cli.command else {
            panic!("not a bank update")
        };
        let patch = patch(&args.settings, None, None).unwrap();
        assert_eq!(patch.max_bytes, Some(1_048_576));
        assert_eq!(patch.require_corroboration, Some(true));
        assert_eq!(patch.max_memories, None);

        let mut bank = BankConfig::new("acme/agent-7".parse().unwrap(), Default::default());
        bank.max_bytes = 2048;
        bank.require_corroboration = true;
        let text = bank_text(&bank, None);
        assert!(text.contains("2048 bytes"), "{text}");
        assert!(text.contains("not recalled"), "{text}");
        assert_eq!(json::bank(&bank)["max_bytes"], 2048);
    }
}
