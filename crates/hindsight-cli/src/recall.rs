use hindsight_core::recall::{Consistency, RecallFilters};
use hindsight_core::{RecallRequest, RecallResponse};

use crate::cli::{ReadConsistency, RecallArgs};
use crate::json;
use crate::moment::point;
use crate::output::{emit, score, CONTENT_COLUMNS};
use crate::table::{clip, Table};

/// Results when `--top-k` is not given.
const DEFAULT_TOP_K: u32 = 10;

pub async fn run(args: RecallArgs) -> anyhow::Result<()> {
    let mut request = RecallRequest::new(
        args.banks
            .iter()
            .map(|b| b.parse())
            .collect::<Result<_, _>>()?,
        args.query,
        args.top_k.unwrap_or(DEFAULT_TOP_K),
    );
    request.max_tokens = args.max_tokens;
    request.as_of = args.as_of.as_deref().map(point).transpose()?;
    request.include_history = args.include_history;
    request.include_archived = args.include_archived;
    request.filters = RecallFilters {
        kinds: args
            .kinds
            .iter()
            .map(|k| k.parse())
            .collect::<Result<_, _>>()?,
        tags: args.tags,
        min_confidence: args.min_confidence,
        ..RecallFilters::default()
    };
    if let Some(intent) = &args.intent {
        request.intent = intent.parse()?;
    }
    request.agent_role = args.role;
    if let Some(consistency) = args.consistency {
        request.consistency = match consistency {
            ReadConsistency::Linearizable => Consistency::Linearizable,
            ReadConsistency::Eventual => Consistency::Eventual,
        };
    }
    for pair in &args.context {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--context {pair:?} is not KEY=VALUE"))?;
        request
            .context
            .insert(key.trim().to_string(), value.trim().to_string());
    }
    let client = args.client.connect().await?;
    let response = client.recall(request).await?;
    if args.client.id_only() {
        match response.recall_id {
            Some(id) => println!("{id}"),
            None => anyhow::bail!("the server keeps no retrieval log, so this recall has no id"),
        }
        return Ok(());
    }
    emit(
        args.client.json(),
        || json::recall(&response),
        || text(&response),
    );
    Ok(())
}

fn text(response: &RecallResponse) -> String {
    if response.hits.is_empty() {
        return "no memories found\n".to_string();
    }
    let footer = response
        .recall_id
        .map(|id| {
            format!("recall id {id} (for feedback: hindsight feedback {id} MEMORY_ID helpful)\n")
        })
        .unwrap_or_default();
    let mut t = Table::with_header(["#", "SCORE", "STATUS", "KIND", "BANK", "ID", "CONTENT"]);
    for (i, hit) in response.hits.iter().enumerate() {
        let m = &hit.memory;
        let mut status = hit.status.name().to_string();
        if !hit.explain.flags.is_empty() {
            status = format!("{status} [{}]", hit.explain.flags.join(","));
        }
        t.row([
            (i + 1).to_string(),
            score(hit.score),
            status,
            m.kind.to_string(),
            m.bank.to_string(),
            m.id.to_string(),
            clip(&m.content, CONTENT_COLUMNS),
        ]);
    }
    t.render() + &footer
}
