//! The node as each service sees it: the services name what they take from the node in a trait of
//! their own, so that they depend on the bank runtime below them and never on the node above.

use std::future::Future;
use std::sync::Arc;

use hindsight_core::recall::RecallHit;
use hindsight_core::write::{WriteOutcome, WriteRequest};
use hindsight_core::{BankName, Memory, MemoryId, Timestamp};
use hindsight_guard::Screener;
use hindsight_store::RetrievalLog;

use super::Node;
use crate::bank::integrity::Integrity;
use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::recall::RecallHost;
use crate::review::judging::LlmJudge;
use crate::review::reflecting::NodeReflector;
use crate::review::ReviewHost;
use crate::write::writing::Writing;
use crate::write::WriteHost;

impl WriteHost for Node {
    fn banks(&self) -> &Banks {
        Node::banks(self)
    }

    fn config(&self) -> &NodeConfig {
        Node::config(self)
    }

    fn writing(&self) -> &Writing {
        &self.inner.writing
    }

    fn hint_review_soon(&self, bank: BankName) {
        let node = self.clone();
        tokio::spawn(async move { node.hint_review(&bank).await });
    }
}

impl RecallHost for Node {
    fn banks(&self) -> &Banks {
        Node::banks(self)
    }

    fn config(&self) -> &NodeConfig {
        Node::config(self)
    }

    fn shared_screener(&self) -> Option<Arc<Screener>> {
        self.inner.writing.shared_screener()
    }

    fn integrity(&self, memory: &Memory) -> Integrity {
        self.inner.writing.integrity(memory)
    }

    fn note_access(&self, hits: &[RecallHit], at: Timestamp) {
        self.inner.recalling.note_access(hits, at)
    }

    fn restore(
        &self,
        ids: Vec<MemoryId>,
        at: Timestamp,
    ) -> impl Future<Output = Result<(), NodeError>> + Send {
        self.inner.recalling.restore(self.banks(), ids, at)
    }

    fn retrieval_log(&self) -> Result<Arc<RetrievalLog>, NodeError> {
        self.inner.recalling.retrieval_log()
    }

    fn feedback_lock(&self) -> impl Future<Output = tokio::sync::MutexGuard<'_, ()>> + Send {
        self.inner.recalling.feedback_lock()
    }

    fn get(&self, id: MemoryId) -> impl Future<Output = Result<Memory, NodeError>> + Send {
        Node::get(self, id)
    }

    fn hint_review(&self, bank: &BankName) -> impl Future<Output = ()> + Send {
        Node::hint_review(self, bank)
    }
}

impl ReviewHost for Node {
    fn banks(&self) -> &Banks {
        Node::banks(self)
    }

    fn config(&self) -> &NodeConfig {
        Node::config(self)
    }

    fn llm_judge(&self) -> Option<Arc<LlmJudge>> {
        self.inner.reviewing.llm_judge()
    }

    fn reflector(&self) -> Arc<NodeReflector> {
        self.inner.reviewing.reflector()
    }

    fn sign(&self, memory: &mut Memory) {
        self.inner.writing.sign(memory)
    }

    fn write_batch(
        &self,
        requests: Vec<WriteRequest>,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, NodeError>> + Send {
        Node::write_batch(self, requests)
    }
}
