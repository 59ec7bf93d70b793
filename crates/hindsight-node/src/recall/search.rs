//! Recall: four arms per bank, each hit's calibrated evidence fused into one relevance (see
//! `hindsight_core::scoring`), a relevance floor, lifecycle scoring, default exclusions, collapse
//! of near-identical results, top-k and token budget, and an explanation.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use hindsight_core::intent::IntentProfile;
use hindsight_core::recall::{RecallRequest, RecallResponse};
use hindsight_core::retrieval::RecallId;
use hindsight_core::{BankConfig, Memory, MemoryId, Status, Timestamp};
use hindsight_guard::Screener;

use super::query::{principals_named, QueryVectors};
use super::RecallHost;
use crate::bank::embedding;
use crate::error::NodeError;
use crate::metrics;

pub async fn recall(
    node: &impl RecallHost,
    principal: &str,
    mut request: RecallRequest,
    part_of: Option<RecallId>,
) -> Result<RecallResponse, NodeError> {
    let started = Instant::now();
    request.validate(&node.config().limits)?;
    let views = Arc::new(
        node.banks()
            .read_barrier(&request.banks, request.consistency)
            .await?,
    );

    let now = Timestamp::now();
    let as_of = request.as_of.unwrap_or(now);
    let window = hindsight_text::parse_time_window(&request.query, as_of.to_datetime()).map(|w| {
        (
            Timestamp::from_datetime(w.start),
            Timestamp::from_datetime(w.end),
        )
    });
    let text_query = match window {
        Some(_) => {
            let stripped = hindsight_text::strip_time_expr(&request.query);
            if stripped.trim().is_empty() {
                request.query.clone()
            } else {
                stripped
            }
        }
        None => request.query.clone(),
    };
    let present = hindsight_text::asks_about_present(&request.query);
    let entities = hindsight_text::query_entities(&text_query);
    let principals: Vec<Vec<String>> = views
        .iter()
        .map(|view| principals_named(view, &entities))
        .collect();
    let include_archived = request.include_archived;
    let logged_request = request.clone();
    let screener = node.shared_screener();
    let asks_leave = screener.as_ref().is_some_and(|s| {
        hindsight_text::grammar::is_question(&text_query) && s.grants_leave(&text_query)
    });
    let plan = Arc::new(Plan {
        profile: IntentProfile::new(request.intent),
        // One copy of each bank's settings per request, read by every arm and the fusion alike.
        configs: views.iter().map(|v| v.config()).collect(),
        request,
        as_of,
        now,
        window,
        present,
        asks_leave,
        terms: hindsight_text::Analyzer::shared().terms(&text_query),
        singling_out: principals
            .iter()
            .map(|named| {
                entities
                    .iter()
                    .filter(|e| !named.contains(e))
                    .cloned()
                    .collect()
            })
            .collect(),
        entities,
        min_relevance: node.config().recall.min_relevance,
        arms: node.config().recall.arms,
        shadow_alike: node.config().recall.shadow_alike,
        screener,
    });
    // The keyword, entity and task arms need no query vector: they search while the query is
    // embedded, on the other core when one is free, instead of after it.
    let lexical = tokio::task::spawn_blocking({
        let (plan, views) = (plan.clone(), views.clone());
        move || plan.lexical_arms(&views)
    });

    // The person a bank serves, asked about by name, is asked about as "the user": what they
    // said themselves is in the first person. Only the comparison with their own words changes.
    let named: Vec<String> = principals.into_iter().flatten().collect();
    let asked =
        hindsight_text::naming_as_user(&text_query, &named).unwrap_or_else(|| text_query.clone());
    let user_voice = hindsight_text::in_user_voice(&asked);
    let mut texts = vec![text_query];
    texts.extend(user_voice);
    let mut vectors = embedding::embed(&node.banks().context().embedder, texts)
        .await?
        .into_iter();
    let vectors = QueryVectors {
        query: vectors
            .next()
            .ok_or_else(|| NodeError::internal("embedder returned no vector"))?,
        user_voice: vectors.next(),
    };

    let runtime = tokio::runtime::Handle::current();
    let mut response = tokio::task::spawn_blocking(move || {
        let by_vector = plan.vector_arms(&views, &vectors);
        // Waited for with no bank's records locked: the lexical arms read under the same locks.
        let lexical = runtime.block_on(lexical).map_err(NodeError::internal)?;
        Ok::<_, NodeError>(plan.fuse(&views, &vectors, by_vector, lexical))
    })
    .await
    .map_err(NodeError::internal)??;
    // A record that fails its integrity check is withheld (counted and logged by the check).
    response
        .hits
        .retain(|hit| !node.integrity(&hit.memory).failed());
    response.took_micros = started.elapsed().as_micros() as u64;
    metrics::recall(started.elapsed());
    node.note_access(&response.hits, now);
    if include_archived {
        let archived: Vec<MemoryId> = response
            .hits
            .iter()
            .filter(|h| h.memory.status == Status::Archived)
            .map(|h| h.memory.id)
            .collect();
        node.restore(archived, now).await?;
    }
    crate::recall::learning::log_recall(
        node,
        principal,
        logged_request,
        &mut response,
        now,
        part_of,
    );
    Ok(response)
}

/// A bank's records by id, as its view publishes them.
pub(super) type Records = HashMap<MemoryId, Arc<Memory>>;

pub(super) struct Plan {
    pub(super) request: RecallRequest,
    /// The settings of each bank of the request, in the order of its views.
    pub(super) configs: Vec<BankConfig>,
    pub(super) profile: IntentProfile,
    pub(super) as_of: Timestamp,
    pub(super) now: Timestamp,
    pub(super) window: Option<(Timestamp, Timestamp)>,
    /// The query asks about the present moment ([`hindsight_text::asks_about_present`]).
    pub(super) present: bool,
    /// The query asks leave to do something ("can I pay it right away?", "这份合同能直接签吗"):
    /// a question with words of permission. The principal's rules it finds all answer it.
    pub(super) asks_leave: bool,
    pub(super) terms: Vec<String>,
    pub(super) entities: Vec<String>,
    /// For each bank of the request, the query's entities the entity arm searches: all but the
    /// person the bank serves, whom every memory of it is about.
    pub(super) singling_out: Vec<Vec<String>>,
    /// Candidates less relevant than this are left out, whatever their confidence.
    pub(super) min_relevance: f32,
    /// The arms this node runs.
    pub(super) arms: crate::config::RecallArms,
    /// Whether a user's newer statement stands for an older one answering alike.
    pub(super) shadow_alike: bool,
    /// The guard's screener, when the guard is on: a found text of a lesser voice that grants
    /// leave against a found rule of the principal is left out.
    pub(super) screener: Option<Arc<Screener>>,
}
