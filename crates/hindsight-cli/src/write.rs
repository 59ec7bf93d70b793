use std::io::Read;

use anyhow::Context;
use hindsight_core::{Disposition, Kind, Provenance, WriteRequest};

use crate::cli::WriteArgs;
use crate::json;
use crate::moment::point;
use crate::output::emit;

pub async fn run(args: WriteArgs) -> anyhow::Result<()> {
    let content = if args.content == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the content from standard input")?;
        text
    } else {
        args.content
    };
    let request = WriteRequest {
        bank: args.bank.parse()?,
        content,
        kind: args
            .kind
            .as_deref()
            .map(str::parse)
            .transpose()?
            .unwrap_or(Kind::Semantic),
        subtype: args.subtype.as_deref().map(str::parse).transpose()?,
        provenance: Provenance {
            source: args.source.parse()?,
            tool: args.tool,
            agent_id: args.agent_id,
            session_id: args.session_id,
            task_id: args.task_id,
            tool_call_id: args.tool_call_id,
        },
        occurred_at: args.occurred_at.as_deref().map(point).transpose()?,
        ttl_secs: args.ttl,
        confidence: args.confidence,
        importance: args.importance,
        critical: args.critical,
        tags: args.tags,
        metadata: args.metadata.into_iter().collect(),
    };
    let client = args.client.connect().await?;
    let outcome = client.write(request).await?;
    if args.client.id_only() {
        match &outcome.disposition {
            Disposition::RejectedLowImportance { scores } => {
                anyhow::bail!("not kept: {scores} is below the threshold")
            }
            _ => println!("{}", outcome.id),
        }
        return Ok(());
    }
    emit(
        args.client.json(),
        || json::write(&outcome),
        || match &outcome.disposition {
            Disposition::Created => format!("{}  created\n", outcome.id),
            Disposition::MergedInto { similarity, .. } => {
                format!(
                    "{}  merged: a duplicate of this memory (similarity {similarity:.2})\n",
                    outcome.id
                )
            }
            Disposition::Quarantined { reason } => {
                format!("{}  quarantined: {reason}\n", outcome.id)
            }
            Disposition::RejectedLowImportance { scores } => {
                format!("not kept: {scores} is below the threshold\n")
            }
        },
    );
    Ok(())
}
