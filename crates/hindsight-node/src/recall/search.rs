//! Recall: four arms per bank, each hit's calibrated evidence fused into one relevance (see
//! `hindsight_core::scoring`), a relevance floor, lifecycle scoring, default exclusions, collapse
//! of near-identical results, top-k and token budget, and an explanation.
//!
//! A recall runs in stages, each in a module of its own: `gather` runs the arms that search each
//! bank for the query; `fuse` rates their hits as evidence and joins them into one candidate per
//! memory, running the arms of `hops` that start from what the others found; `score` weighs each
//! candidate's relevance with its confidence and freshness; `collapse` leaves out what another
//! candidate stands for and cuts the rest to top-k and the token budget. This module reads the
//! request into a [`Plan`] and runs the stages in that order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use hindsight_core::intent::IntentProfile;
use hindsight_core::recall::{RecallRequest, RecallResponse};
use hindsight_core::retrieval::RecallId;
use hindsight_core::{BankConfig, Memory, MemoryId, Status, Timestamp};
use hindsight_guard::Screener;

use super::gather::Gathered;
use super::query::{Query, QueryVectors};
use super::RecallHost;
use crate::bank::BankView;
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
    let query = Query::read(&request.query, request.as_of.unwrap_or(now), &views);
    let include_archived = request.include_archived;
    let logged_request = request.clone();
    let plan = Arc::new(Plan::new(node, request, &views, &query, now));
    // The keyword, entity and task arms need no query vector: they search while the query is
    // embedded, on the other core when one is free, instead of after it.
    let lexical = tokio::task::spawn_blocking({
        let (plan, views) = (plan.clone(), views.clone());
        move || plan.lexical_arms(&views)
    });
    let vectors = QueryVectors::embed(node, query).await?;

    let runtime = tokio::runtime::Handle::current();
    let mut response = tokio::task::spawn_blocking(move || {
        let by_vector = plan.vector_arms(&views, &vectors);
        // Waited for with no bank's records locked: the lexical arms read under the same locks.
        let lexical = runtime.block_on(lexical).map_err(NodeError::internal)?;
        let gathered = Gathered { by_vector, lexical };
        Ok::<_, NodeError>(plan.rank(&views, &vectors, gathered))
    })
    .await
    .map_err(NodeError::internal)??;
    // A record that fails its integrity check is withheld (counted and logged by the check).
    response
        .hits
        .retain(|hit| !node.writing().integrity(&hit.memory).failed());
    response.took_micros = started.elapsed().as_micros() as u64;
    metrics::recall(started.elapsed());
    node.recalling().note_access(&response.hits, now);
    if include_archived {
        let archived: Vec<MemoryId> = response
            .hits
            .iter()
            .filter(|h| h.memory.status == Status::Archived)
            .map(|h| h.memory.id)
            .collect();
        node.recalling()
            .restore(node.banks(), archived, now)
            .await?;
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

/// What a recall searches for and how, read once from the request and the node's settings.
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

impl Plan {
    fn new(
        node: &impl RecallHost,
        request: RecallRequest,
        views: &[Arc<BankView>],
        query: &Query,
        now: Timestamp,
    ) -> Plan {
        let screener = node.writing().shared_screener();
        let asks_leave = screener.as_ref().is_some_and(|s| {
            hindsight_text::grammar::is_question(&query.text) && s.grants_leave(&query.text)
        });
        let recall = &node.config().recall;
        Plan {
            profile: IntentProfile::new(request.intent),
            // One copy of each bank's settings per request, read by every arm and the fusion
            // alike.
            configs: views.iter().map(|v| v.config()).collect(),
            as_of: request.as_of.unwrap_or(now),
            request,
            now,
            window: query.window,
            present: query.present,
            asks_leave,
            terms: hindsight_text::Analyzer::shared().terms(&query.text),
            singling_out: query.singling_out(),
            entities: query.entities.clone(),
            min_relevance: recall.min_relevance,
            arms: recall.arms,
            shadow_alike: recall.shadow_alike,
            screener,
        }
    }

    /// The gathered arm results turned into the response, stage by stage.
    fn rank(
        &self,
        views: &[Arc<BankView>],
        vectors: &QueryVectors,
        gathered: Gathered,
    ) -> RecallResponse {
        let candidates = self.fuse(views, vectors, gathered);
        let scored = self.score(candidates);
        let kept = self.collapse(views, scored);
        self.cut(views, kept)
    }
}
