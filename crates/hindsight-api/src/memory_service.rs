use hindsight_client::convert;
use hindsight_client::convert::opt_time;
use hindsight_client::convert::retrieval::recall_id;
use hindsight_core::retrieval::RetrievalQuery;
use hindsight_core::{
    BankName, Consistency, FeedbackOutcome, Memory, MemoryId, RecallRequest, WriteRequest,
};
use hindsight_node::{Node, NodeError};
use tonic::{Request, Response, Status};

use hindsight_core::auth::{Principal, Right};

use crate::access::{principal, require, require_on_memory};
use crate::gateway::{
    bank_partition, channel_to, forward_to_owners, is_forwarded, memory_partition,
};
use crate::pb;
use crate::pb::memory_service_client::MemoryServiceClient;
use crate::pb::memory_service_server::MemoryService;
use crate::recall_across;
use crate::status::{from_node, invalid, parse};

/// Reason recorded in a record's history when a forget request gives none.
const DEFAULT_FORGET_REASON: &str = "forgotten on request";

/// `hindsight.v1.MemoryService` over a node.
#[derive(Clone)]
pub struct MemoryApi {
    node: Node,
}

impl MemoryApi {
    pub fn new(node: Node) -> Self {
        MemoryApi { node }
    }

    /// Memory `id` as stored, once `caller` is known to hold `right` on its bank: rights come
    /// before anything else about the record (its signature check included), and a caller who
    /// may not read the bank is told the memory does not exist.
    async fn stored_for(
        &self,
        caller: &Principal,
        right: Right,
        id: MemoryId,
    ) -> Result<Memory, Status> {
        let memory = self
            .node
            .get_unverified(id, Consistency::Eventual)
            .await
            .map_err(from_node)?;
        require_on_memory(caller, right, &memory.bank, &id.to_string())?;
        Ok(memory)
    }
}

#[tonic::async_trait]
impl MemoryService for MemoryApi {
    async fn write(
        &self,
        request: Request<pb::WriteRequest>,
    ) -> Result<Response<pb::WriteResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().bank),
            Changes,
            MemoryServiceClient::write
        );
        let caller = principal(&self.node, &request)?;
        let request: WriteRequest = parse(request.into_inner())?;
        require(&caller, Right::Write, &request.bank)?;
        let outcome = self.node.write(request).await.map_err(from_node)?;
        Ok(Response::new((&outcome).into()))
    }

    async fn write_batch(
        &self,
        request: Request<pb::WriteBatchRequest>,
    ) -> Result<Response<pb::WriteBatchResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            request
                .get_ref()
                .items
                .first()
                .and_then(|item| bank_partition(&self.node, &item.bank)),
            Changes,
            MemoryServiceClient::write_batch
        );
        let caller = principal(&self.node, &request)?;
        let requests = request
            .into_inner()
            .items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                WriteRequest::try_from(item)
                    .map_err(|e| Status::invalid_argument(format!("item {i}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for item in &requests {
            require(&caller, Right::Write, &item.bank)?;
        }
        self.node
            .charge_batch(&caller, requests.len())
            .map_err(from_node)?;
        let outcomes = self.node.write_batch(requests).await.map_err(from_node)?;
        Ok(Response::new(pb::WriteBatchResponse {
            outcomes: outcomes.iter().map(pb::WriteResponse::from).collect(),
        }))
    }

    async fn recall(
        &self,
        request: Request<pb::RecallRequest>,
    ) -> Result<Response<pb::RecallResponse>, Status> {
        if !is_forwarded(&request) {
            if let Some(groups) = recall_across::partitions_of(&self.node, &request.get_ref().banks)
            {
                // Checked here once, so that a refusal is one clear answer, not one per part.
                let caller = principal(&self.node, &request)?;
                let parsed: RecallRequest = parse(request.get_ref().clone())?;
                for bank in &parsed.banks {
                    require(&caller, Right::Read, bank)?;
                }
                return recall_across::recall(&self.node, &caller.name, request, groups, &parsed)
                    .await;
            }
        }
        forward_to_owners!(
            self,
            request,
            request
                .get_ref()
                .banks
                .first()
                .and_then(|bank| bank_partition(&self.node, bank)),
            Reads,
            MemoryServiceClient::recall
        );
        let caller = principal(&self.node, &request)?;
        let part_of = recall_across::part_of(&request)?;
        let request: RecallRequest = parse(request.into_inner())?;
        // Every bank of a recall over several is checked: one without the right refuses it all.
        for bank in &request.banks {
            require(&caller, Right::Read, bank)?;
        }
        let response = match part_of {
            Some(recall) => {
                self.node
                    .recall_part_as(&caller.name, request, recall)
                    .await
            }
            None => self.node.recall_as(&caller.name, request).await,
        }
        .map_err(from_node)?;
        Ok(Response::new((&response).into()))
    }

    async fn get(
        &self,
        request: Request<pb::GetRequest>,
    ) -> Result<Response<pb::GetResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            memory_partition(&self.node, &request.get_ref().id),
            Reads,
            MemoryServiceClient::get
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let id: MemoryId = request.id.parse().map_err(invalid)?;
        let consistency = convert::consistency(request.consistency.as_deref()).map_err(invalid)?;
        let memory = self
            .node
            .get_unverified(id, consistency)
            .await
            .map_err(from_node)?;
        // Rights first: a caller without them is told the record does not exist, whatever state
        // it is in.
        require_on_memory(&caller, Right::Read, &memory.bank, &id.to_string())?;
        self.node.verify(&memory).map_err(from_node)?;
        Ok(Response::new(pb::GetResponse {
            memory: Some((&memory).into()),
        }))
    }

    async fn trace(
        &self,
        request: Request<pb::TraceRequest>,
    ) -> Result<Response<pb::TraceResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            memory_partition(&self.node, &request.get_ref().id),
            Reads,
            MemoryServiceClient::trace
        );
        let caller = principal(&self.node, &request)?;
        let id: MemoryId = request.into_inner().id.parse().map_err(invalid)?;
        let trace = self.node.trace(id).await.map_err(from_node)?;
        require_on_memory(&caller, Right::Read, &trace.memory.bank, &id.to_string())?;
        Ok(Response::new((&trace).into()))
    }

    async fn forget(
        &self,
        request: Request<pb::ForgetRequest>,
    ) -> Result<Response<pb::ForgetResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            memory_partition(&self.node, &request.get_ref().id),
            Changes,
            MemoryServiceClient::forget
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let id: MemoryId = request.id.parse().map_err(invalid)?;
        self.stored_for(&caller, Right::Write, id).await?;
        let reason = request
            .reason
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_FORGET_REASON.to_string());
        let changed = self
            .node
            .forget(id, request.hard, reason)
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::ForgetResponse {
            changed: changed.iter().map(ToString::to_string).collect(),
        }))
    }

    async fn release_quarantine(
        &self,
        request: Request<pb::ReleaseQuarantineRequest>,
    ) -> Result<Response<pb::ReleaseQuarantineResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            memory_partition(&self.node, &request.get_ref().id),
            Changes,
            MemoryServiceClient::release_quarantine
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let id: MemoryId = request.id.parse().map_err(invalid)?;
        self.stored_for(&caller, Right::Admin, id).await?;
        let released = self
            .node
            .release_quarantine(id, &caller.name, &request.reason)
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::ReleaseQuarantineResponse {
            memory: Some((&released).into()),
        }))
    }

    async fn review(
        &self,
        request: Request<pb::ReviewRequest>,
    ) -> Result<Response<pb::ReviewResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().bank),
            Changes,
            MemoryServiceClient::review
        );
        let caller = principal(&self.node, &request)?;
        let bank: BankName = request.get_ref().bank.parse().map_err(invalid)?;
        require(&caller, Right::Write, &bank)?;
        let as_of = opt_time(request.get_ref().as_of.as_deref()).map_err(invalid)?;
        let report = match self.node.review(bank, as_of).await {
            // Reviewers run where the bank's group is led. A follower hands the request over,
            // credentials and all; the leader checks them again.
            Err(NodeError::NotLeader {
                leader_id,
                leader_address,
                ..
            }) => {
                let channel = channel_to(&self.node, &leader_address)?;
                let mut forwarded = tonic::Request::new(request.get_ref().clone());
                if let Some(key) = request.metadata().get("authorization") {
                    forwarded
                        .metadata_mut()
                        .insert("authorization", key.clone());
                }
                return MemoryServiceClient::new(channel)
                    .review(forwarded)
                    .await
                    .map_err(|status| {
                        Status::new(
                            status.code(),
                            format!(
                                "review on the leader (node {leader_id}): {}",
                                status.message()
                            ),
                        )
                    });
            }
            answer => answer.map_err(from_node)?,
        };
        Ok(Response::new((&report).into()))
    }

    async fn reflect(
        &self,
        request: Request<pb::ReflectRequest>,
    ) -> Result<Response<pb::ReflectResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().bank),
            Changes,
            MemoryServiceClient::reflect
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let bank: BankName = request.bank.parse().map_err(invalid)?;
        require(&caller, Right::Write, &bank)?;
        let trace = convert::reflect::trace_of(&request).map_err(invalid)?;
        let report = self
            .node
            .reflect(bank, trace, request.task_id, request.dry_run)
            .await
            .map_err(from_node)?;
        Ok(Response::new((&report).into()))
    }

    async fn list_memories(
        &self,
        request: Request<pb::ListMemoriesRequest>,
    ) -> Result<Response<pb::ListMemoriesResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().bank),
            Reads,
            MemoryServiceClient::list_memories
        );
        const STATUSES: &[&str] = &[
            "active",
            "superseded",
            "falsified",
            "disputed",
            "pending_review",
            "quarantined",
            "archived",
            "expired",
        ];
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let bank: BankName = request.bank.parse().map_err(invalid)?;
        require(&caller, Right::Read, &bank)?;
        if let Some(unknown) = request
            .statuses
            .iter()
            .find(|s| !STATUSES.contains(&s.as_str()))
        {
            return Err(Status::invalid_argument(format!(
                "unknown status {unknown:?}; expected one of {}",
                STATUSES.join(", ")
            )));
        }
        let after = request
            .after
            .map(|id| id.parse::<MemoryId>())
            .transpose()
            .map_err(invalid)?;
        let limit = match request.limit {
            None => 100,
            Some(limit @ 1..=1000) => limit as usize,
            Some(limit) => {
                return Err(Status::invalid_argument(format!(
                    "limit {limit} is outside 1..=1000"
                )))
            }
        };
        // Injected instructions are for whoever administers the bank, not for its agents.
        let sees_quarantine = caller.may(Right::Admin, &bank);
        let statuses = request.statuses;
        let (memories, next) = self
            .node
            .list_memories(&bank, after, limit, |m| {
                let name = m.status.name();
                (statuses.is_empty() || statuses.iter().any(|s| s == name))
                    && (sees_quarantine || name != "quarantined")
                    && name != "deleted"
            })
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::ListMemoriesResponse {
            memories: memories.iter().map(pb::Memory::from).collect(),
            next: next.map(|id| id.to_string()),
        }))
    }

    async fn list_conflicts(
        &self,
        request: Request<pb::ListConflictsRequest>,
    ) -> Result<Response<pb::ListConflictsResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().bank),
            Reads,
            MemoryServiceClient::list_conflicts
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let bank: BankName = request.bank.parse().map_err(invalid)?;
        require(&caller, Right::Read, &bank)?;
        let conflicts = self
            .node
            .conflicts(&bank, request.include_resolved)
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::ListConflictsResponse {
            conflicts: conflicts.iter().map(pb::Conflict::from).collect(),
        }))
    }

    async fn resolve_conflict(
        &self,
        request: Request<pb::ResolveConflictRequest>,
    ) -> Result<Response<pb::ResolveConflictResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().bank),
            Changes,
            MemoryServiceClient::resolve_conflict
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let bank: BankName = request.bank.parse().map_err(invalid)?;
        require(&caller, Right::Write, &bank)?;
        let outcome =
            hindsight_node::conflicts::parse_outcome(&request.outcome).map_err(from_node)?;
        let (conflict, changed) = self
            .node
            .resolve_conflict(bank, request.id, outcome, request.note)
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::ResolveConflictResponse {
            conflict: Some(pb::Conflict::from(&conflict)),
            changed: changed.iter().map(|id| id.to_string()).collect(),
        }))
    }

    async fn feedback(
        &self,
        request: Request<pb::FeedbackRequest>,
    ) -> Result<Response<pb::FeedbackResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            memory_partition(&self.node, &request.get_ref().memory_id),
            Changes,
            MemoryServiceClient::feedback
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let recall = recall_id(&request.recall_id).map_err(invalid)?;
        let memory: MemoryId = request.memory_id.parse().map_err(invalid)?;
        let outcome: FeedbackOutcome = request.outcome.parse().map_err(invalid)?;
        let stored = self.stored_for(&caller, Right::Write, memory).await?;
        self.node.verify(&stored).map_err(from_node)?;
        let report = self
            .node
            .feedback_as(&caller.name, recall, memory, outcome)
            .await
            .map_err(from_node)?;
        Ok(Response::new((&report).into()))
    }

    async fn list_recalls(
        &self,
        request: Request<pb::ListRecallsRequest>,
    ) -> Result<Response<pb::ListRecallsResponse>, Status> {
        let caller = principal(&self.node, &request)?;
        let query: RetrievalQuery = parse(request.into_inner())?;
        match &query.bank {
            Some(bank) => require(&caller, Right::Read, bank)?,
            None if caller.may_everywhere(Right::Read) => {}
            None => {
                return Err(Status::permission_denied(format!(
                    "{} may list the recalls of the banks it reads only: name one with `bank`",
                    caller.name
                )))
            }
        }
        let mut recalls = self.node.recalls(&query).map_err(from_node)?;
        // A recall over several banks is shown only to whoever may read all of them.
        recalls.retain(|r| r.request.banks.iter().all(|b| caller.may(Right::Read, b)));
        Ok(Response::new(pb::ListRecallsResponse {
            recalls: recalls.iter().map(pb::LoggedRecall::from).collect(),
        }))
    }

    async fn get_recall(
        &self,
        request: Request<pb::GetRecallRequest>,
    ) -> Result<Response<pb::LoggedRecall>, Status> {
        let caller = principal(&self.node, &request)?;
        let recall = recall_id(&request.into_inner().recall_id).map_err(invalid)?;
        let record = self.node.recall_record(recall).map_err(from_node)?;
        // A caller who may not read every bank of the recall is answered as if there were none:
        // a refusal would confirm that the id exists.
        if !record
            .request
            .banks
            .iter()
            .all(|b| caller.may(Right::Read, b))
        {
            return Err(Status::not_found(format!(
                "recall {recall} is not in this node's retrieval log"
            )));
        }
        Ok(Response::new((&record).into()))
    }
}
