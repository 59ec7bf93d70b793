//! The write path: validate, embed, plan (duplicates, guard, importance), propose one log entry,
//! tell each request what became of it, wait until the batch is searchable.

use std::time::Instant;

use hindsight_core::write::{WriteOutcome, WriteRequest};
use hindsight_core::Timestamp;

use super::plan::{self, Plan, Settings};
use super::{banks, intake::NodeIntake, outcomes, propose, WriteHost};
use crate::bank::embedding;
use crate::error::NodeError;
use crate::metrics;

pub async fn write_batch(
    node: &impl WriteHost,
    mut requests: Vec<WriteRequest>,
) -> Result<Vec<WriteOutcome>, NodeError> {
    let config = node.config();
    plan::validate(&config.limits, &mut requests)?;
    let home = banks::one_home(node, &requests)?;
    // Counted until this function returns: answered, refused further on, or failed.
    let _admitted = node.writing().admission().admit(requests.len())?;

    let now = Timestamp::now();
    let started = Instant::now();
    let (banks, creations) = banks::load(node, &home, &requests, now).await?;
    let embedder = &node.banks().context().embedder;
    let texts = requests.iter().map(|r| r.content.clone()).collect();
    let vectors = embedding::embed(embedder, texts).await?;
    let found = banks::indexed_neighbours(&banks, &requests, &vectors);
    let settings = Settings {
        conflict_similarity: config.review.pairs.pair_similarity,
        importance: &config.importance,
    };
    let plan = plan::plan(
        requests,
        vectors,
        found,
        &banks,
        &settings,
        &NodeIntake(node),
        now,
    );
    let logs_anything = plan.logs_anything();
    let Plan {
        mut items,
        also_held,
        likely_conflicts,
    } = plan;
    if !logs_anything {
        // Every item fell short of the importance gate: nothing to log, create or index, so the
        // answer must not wait for an index update that no entry will bring.
        outcomes::settle(&mut items, vec![])?;
        let outcomes = outcomes::in_request_order(items);
        metrics::writes(&outcomes);
        return Ok(outcomes);
    }
    // Held until the write is in the banks' views (or failed), so that concurrent writes see it.
    let _reservation = propose::admit_bytes(node.writing().reservations(), &banks, &items)?;
    let model = embedder.model_id().to_string();
    let command = propose::command(creations, also_held, &items, model, now);

    let prepared = Instant::now();
    metrics::write_stage("prepare", prepared - started);
    let (log_index, outcome) = propose::propose(node, &home, &banks, command).await?;
    outcomes::settle(&mut items, outcomes::written_results(outcome)?)?;
    let outcomes = outcomes::in_request_order(items);
    let committed = Instant::now();
    metrics::write_stage("commit", committed - prepared);
    propose::await_searchable(node, &banks, log_index).await?;
    metrics::write_stage("searchable", committed.elapsed());
    if config.review.on_likely_conflict {
        for bank in likely_conflicts {
            node.hint_review_soon(bank);
        }
    }
    metrics::writes(&outcomes);
    Ok(outcomes)
}
