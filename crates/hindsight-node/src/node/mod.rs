//! The node as other crates see it: a façade over the bank runtime and the services that each own
//! their part (writing, recalling, reviewing, routing, access). Each file of this folder holds the
//! façade's methods of one concern; the work itself is done in the service folders.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use hindsight_core::auth::{ApiKey, Grant, Principal};
use hindsight_core::command::CommandOutcome;
use hindsight_core::recall::{RecallRequest, RecallResponse};
use hindsight_core::retrieval::{FeedbackOutcome, RecallId, RetrievalQuery};
use hindsight_core::write::{WriteOutcome, WriteRequest};
use hindsight_core::{MemoryId, RetrievalRecord};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::access::{Access, IssuedKey};
use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::recall::learning::{self, FeedbackReport};
use crate::recall::recalling::Recalling;
use crate::recall::search;
use crate::review::reviewing::Reviewing;
use crate::routing::routes::Routes;
use crate::write::writer;
use crate::write::writing::Writing;
use reviewers::Reviewers;

mod bank_catalog;
mod gauges;
mod hosts;
mod lifecycle;
mod membership;
mod records;
mod review;
mod reviewers;
mod routes;
mod start;
mod transfer;

/// A running node. Cheap to clone; every clone talks to the same node.
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
}

struct Inner {
    config: NodeConfig,
    banks: Banks,
    routes: Routes,
    writing: Writing,
    recalling: Recalling,
    reviewing: Reviewing,
    /// One reviewer actor per bank this node leads the group of.
    reviewers: Reviewers,
    /// API keys and rate limits.
    access: Access,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Node {
    /// The bank runtime: where banks live, their views, and proposing to their groups.
    pub(crate) fn banks(&self) -> &Banks {
        &self.inner.banks
    }

    pub fn config(&self) -> &NodeConfig {
        &self.inner.config
    }

    /// Texts this node asked its embedder to embed since it started (cache hits included): the
    /// writes it took, recall queries, review's vectors, and replicated writes whose log entry
    /// carried no vector this node could use.
    pub fn embedded_texts(&self) -> u64 {
        self.inner
            .banks
            .context()
            .embedded_texts
            .load(Ordering::Relaxed)
    }

    pub async fn write(&self, request: WriteRequest) -> Result<WriteOutcome, NodeError> {
        let mut outcomes = writer::write_batch(self, vec![request]).await?;
        outcomes
            .pop()
            .ok_or_else(|| NodeError::internal("write produced no outcome"))
    }

    /// All or nothing on validation: one bad item refuses the batch and nothing is stored.
    pub async fn write_batch(
        &self,
        requests: Vec<WriteRequest>,
    ) -> Result<Vec<WriteOutcome>, NodeError> {
        writer::write_batch(self, requests).await
    }

    pub async fn recall(&self, request: RecallRequest) -> Result<RecallResponse, NodeError> {
        search::recall(self, crate::access::OPEN_PRINCIPAL, request, None).await
    }

    /// [`Node::recall`] on behalf of an authenticated principal, whom the retrieval log names.
    pub async fn recall_as(
        &self,
        principal: &str,
        request: RecallRequest,
    ) -> Result<RecallResponse, NodeError> {
        search::recall(self, principal, request, None).await
    }

    /// [`Node::recall_as`] for one part of a recall over banks of several partitions: the part is
    /// logged under `recall`, the id the whole recall's caller got, so that feedback on any of its
    /// results finds it on the node that served that result.
    pub async fn recall_part_as(
        &self,
        principal: &str,
        request: RecallRequest,
        recall: RecallId,
    ) -> Result<RecallResponse, NodeError> {
        search::recall(self, principal, request, Some(recall)).await
    }

    /// Feedback on a memory that recall `recall` returned (see [`FeedbackReport`]).
    pub async fn feedback(
        &self,
        recall: RecallId,
        memory: MemoryId,
        outcome: FeedbackOutcome,
    ) -> Result<FeedbackReport, NodeError> {
        self.feedback_as(crate::access::OPEN_PRINCIPAL, recall, memory, outcome)
            .await
    }

    /// [`Node::feedback`] on behalf of an authenticated principal.
    pub async fn feedback_as(
        &self,
        principal: &str,
        recall: RecallId,
        memory: MemoryId,
        outcome: FeedbackOutcome,
    ) -> Result<FeedbackReport, NodeError> {
        learning::feedback(self, principal, recall, memory, outcome).await
    }

    /// Who sent `token` (every right when authentication is off), once its key's rate limit
    /// admits one more request.
    pub fn authenticate(&self, token: Option<&str>) -> Result<Principal, NodeError> {
        self.inner
            .access
            .authenticate(self.banks().metadata_reader(), token)
    }

    /// Charges an API key's rate limit for the memories of a batch beyond the one request
    /// [`Node::authenticate`] took, so that batching is no way round a tenant's limit. Callers
    /// without a key (a node without auth, the bootstrap admin) share one bucket that guards
    /// the node, not a tenant, and keep paying per request.
    pub fn charge_batch(&self, principal: &Principal, memories: usize) -> Result<(), NodeError> {
        self.inner.access.charge_batch(principal, memories)
    }

    /// A new API key for `principal`; the whole key is in the answer only.
    pub async fn create_api_key(
        &self,
        principal: &str,
        grants: Vec<Grant>,
    ) -> Result<IssuedKey, NodeError> {
        crate::access::create_key(self.banks(), principal, grants).await
    }

    pub async fn revoke_api_key(&self, id: &str) -> Result<ApiKey, NodeError> {
        crate::access::revoke_key(self.banks(), id).await
    }

    pub fn api_keys(&self) -> Result<Vec<ApiKey>, NodeError> {
        self.banks()
            .metadata_reader()
            .api_keys()
            .map_err(NodeError::internal)
    }

    /// Logged recalls matching `query`, newest first.
    pub fn recalls(&self, query: &RetrievalQuery) -> Result<Vec<RetrievalRecord>, NodeError> {
        learning::list(self, query)
    }

    pub fn recall_record(&self, recall: RecallId) -> Result<RetrievalRecord, NodeError> {
        learning::get(self, recall)
    }
}

pub(crate) fn outcome_error(outcome: CommandOutcome) -> NodeError {
    match outcome {
        CommandOutcome::Rejected {
            reason,
            not_found: true,
        } => NodeError::NotFound(reason),
        CommandOutcome::Rejected { reason, .. } => NodeError::FailedPrecondition(reason),
        other => NodeError::internal(format!("unexpected outcome: {other:?}")),
    }
}
