//! Commands on one record: get, trace, forget.

use hindsight_core::MemoryId;
use serde_json::json;

use crate::cli::{ForgetArgs, IdArgs, ReleaseArgs};
use crate::json;
use crate::output::{emit, memory_text, CONTENT_COLUMNS};
use crate::table::{clip, Table};

pub async fn get(args: IdArgs) -> anyhow::Result<()> {
    let id: MemoryId = args.id.parse()?;
    let client = args.client.connect().await?;
    let memory = client.get(id).await?;
    emit(
        args.client.json(),
        || json::memory(&memory),
        || memory_text(&memory),
    );
    Ok(())
}

pub async fn trace(args: IdArgs) -> anyhow::Result<()> {
    let id: MemoryId = args.id.parse()?;
    let client = args.client.connect().await?;
    let trace = client.trace(id).await?;
    emit(
        args.client.json(),
        || json::trace(&trace),
        || {
            let mut history =
                Table::with_header(["VERSION", "KIND", "EFFECTIVE", "ACTOR", "REASON", "CHANGES"]);
            for h in &trace.history {
                let changes: Vec<String> = h
                    .changes
                    .iter()
                    .map(|c| format!("{}: {} -> {}", c.field, c.old, c.new))
                    .collect();
                history.row([
                    h.version.to_string(),
                    h.kind.as_str().to_string(),
                    h.effective_at.to_string(),
                    h.actor.clone(),
                    h.reason.clone(),
                    changes.join("; "),
                ]);
            }
            let mut out = memory_text(&trace.memory);
            out.push_str("\nhistory\n");
            out.push_str(&history.render());
            if !trace.related.is_empty() {
                let mut related = Table::with_header(["RELATED", "STATUS", "CONTENT"]);
                for m in &trace.related {
                    related.row([
                        m.id.to_string(),
                        m.status.to_string(),
                        clip(&m.content, CONTENT_COLUMNS),
                    ]);
                }
                out.push('\n');
                out.push_str(&related.render());
            }
            out
        },
    );
    Ok(())
}

pub async fn release(args: ReleaseArgs) -> anyhow::Result<()> {
    let id: MemoryId = args.id.parse()?;
    let client = args.client.connect().await?;
    let memory = client.release_quarantine(id, &args.reason).await?;
    emit(
        args.client.json(),
        || json!({ "id": memory.id.to_string(), "status": memory.status.name() }),
        || format!("{}  released ({})\n", memory.id, memory.status.name()),
    );
    Ok(())
}

pub async fn forget(args: ForgetArgs) -> anyhow::Result<()> {
    let id: MemoryId = args.id.parse()?;
    let client = args.client.connect().await?;
    let changed = client
        .forget(id, args.hard, args.reason.unwrap_or_default())
        .await?;
    let action = if args.hard { "deleted" } else { "archived" };
    emit(
        args.client.json(),
        || {
            let changed: Vec<String> = changed.iter().map(ToString::to_string).collect();
            json!({ "changed": changed, "hard": args.hard })
        },
        || {
            changed
                .iter()
                .map(|id| format!("{id}  {action}\n"))
                .collect()
        },
    );
    Ok(())
}
