use super::reviewers::ReviewerMsg;
use super::Node;
use crate::error::NodeError;
use crate::review::reflecting::ReflectReport;
use crate::review::{conflicts, reflecting};
use crate::types::ReviewReport;
use hindsight_cluster::ReviewHintSink;
use hindsight_core::review::{Conflict, ResolutionOutcome};
use hindsight_core::{BankName, MemoryId, Timestamp};
use hindsight_review::reflect::TaskTrace;
use ractor::rpc::CallResult;
use std::sync::Arc;

impl Node {
    pub async fn review(
        &self,
        bank: BankName,
        as_of: Option<Timestamp>,
    ) -> Result<ReviewReport, NodeError> {
        // Reviewers run where the bank's group is led, as the scheduled cycles do: two reviewers
        // of one bank could each judge the same pair.
        if let Some(leader) = self.inner.routes.bank_leader(self.banks(), &bank)? {
            return Err(NodeError::NotLeader {
                reason: format!("the review of bank {bank} runs where its group is led"),
                leader_id: leader.id,
                leader_address: leader.address,
            });
        }
        let reviewer = self.inner.reviewers.get(self, &bank).await?;
        match reviewer
            .call(|reply| ReviewerMsg::Run { as_of, reply }, None)
            .await
        {
            Ok(CallResult::Success(report)) => report,
            Ok(_) | Err(_) => Err(NodeError::Unavailable(format!(
                "the reviewer of {bank} stopped during the cycle; try again"
            ))),
        }
    }

    /// Turns a finished task's trace into at most five memories in `bank` (none when nothing is
    /// worth keeping); with `dry_run`, only says what it would keep.
    pub async fn reflect(
        &self,
        bank: BankName,
        trace: TaskTrace,
        task_id: Option<String>,
        dry_run: bool,
    ) -> Result<ReflectReport, NodeError> {
        reflecting::reflect(self, bank, trace, task_id, dry_run).await
    }

    /// The bank's queued conflicts; resolved ones too when asked.
    pub async fn conflicts(
        &self,
        bank: &BankName,
        include_resolved: bool,
    ) -> Result<Vec<Conflict>, NodeError> {
        conflicts::list(self, bank, include_resolved).await
    }

    /// Answers a queued conflict; returns it resolved and the memories that changed.
    pub async fn resolve_conflict(
        &self,
        bank: BankName,
        id: u64,
        outcome: ResolutionOutcome,
        note: String,
    ) -> Result<(Conflict, Vec<MemoryId>), NodeError> {
        conflicts::resolve(self, bank, id, outcome, note).await
    }

    /// Whether this node leads the Raft group, and so runs the scheduled and event reviews.
    pub fn is_leader(&self) -> bool {
        self.inner.banks.metadata_store().metrics().leader == Some(self.inner.config.node.id)
    }

    /// A write looked like it contradicts a memory of `bank`: its reviewer runs a cycle soon. The
    /// reviewers run on the leader, so a follower passes the hint on: over the actor link to the
    /// leader's review inbox, or, while the link holds no session to the leader, over the
    /// `ReviewHint` RPC.
    pub(crate) async fn hint_review(&self, bank: &BankName) {
        if self.leads_bank(bank) {
            self.hint_reviewer_here(bank).await;
            return;
        }
        let Ok(service) = self.bank_service(bank) else {
            return;
        };
        if let (Some(link), Some(address)) = (self.inner.routes.link(), service.leader_address()) {
            if link.send_review_hint(&address, bank) {
                return;
            }
        }
        if let Err(e) = service.hint_leader(bank).await {
            tracing::debug!(%bank, error = %e, "review hint not delivered to the leader");
        }
    }

    /// Whether this node leads the group `bank` lives in, and so runs its scheduled and event
    /// reviews.
    pub(crate) fn leads_bank(&self, bank: &BankName) -> bool {
        self.banks()
            .home_of_bank(bank)
            .is_ok_and(|home| home.store.metrics().leader == Some(self.inner.config.node.id))
    }

    /// Hints from other members reach this node's reviewers (the service takes them only while
    /// this node leads). The service belongs to the node, so it holds the node weakly: a strong
    /// reference would keep the node from ever being dropped.
    pub(super) fn listen_for_review_hints(&self) {
        let node = Arc::downgrade(&self.inner);
        let sink: ReviewHintSink = Arc::new(move |bank: BankName| {
            if let Some(inner) = node.upgrade() {
                let node = Node { inner };
                tokio::spawn(async move { node.hint_reviewer_here(&bank).await });
            }
        });
        self.cluster().on_review_hint(sink.clone());
        if let Some(partitions) = self.inner.routes.placed_partitions() {
            partitions.on_review_hint(sink);
        }
    }

    pub(super) async fn hint_reviewer_here(&self, bank: &BankName) {
        match self.inner.reviewers.get(self, bank).await {
            Ok(reviewer) => {
                let _ = reviewer.send_message(ReviewerMsg::Hint);
            }
            Err(e) => tracing::debug!(%bank, error = %e, "review hint dropped"),
        }
    }

    pub(crate) fn forget_reviewer(&self, bank: &BankName) {
        self.inner.reviewers.remove(bank);
    }
}
