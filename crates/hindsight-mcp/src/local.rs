//! The tools beside the node, in the same process: each call goes straight to the gRPC service
//! implementations, so authentication, validation and errors are exactly the gRPC API's.

use async_trait::async_trait;
use hindsight_api::pb;
use hindsight_api::pb::bank_service_server::BankService;
use hindsight_api::pb::memory_service_server::MemoryService;
use hindsight_api::{BankApi, MemoryApi};
use hindsight_node::Node;
use tonic::Status;

use crate::backend::{authorized, Backend};

/// A backend over a node running in this process.
#[derive(Clone)]
pub struct LocalBackend {
    memory: MemoryApi,
    banks: BankApi,
}

impl LocalBackend {
    pub fn new(node: Node) -> Self {
        LocalBackend {
            memory: MemoryApi::new(node.clone()),
            banks: BankApi::new(node),
        }
    }
}

#[async_trait]
impl Backend for LocalBackend {
    async fn write(
        &self,
        key: Option<&str>,
        request: pb::WriteRequest,
    ) -> Result<pb::WriteResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.write(request).await?.into_inner())
    }

    async fn recall(
        &self,
        key: Option<&str>,
        request: pb::RecallRequest,
    ) -> Result<pb::RecallResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.recall(request).await?.into_inner())
    }

    async fn get(
        &self,
        key: Option<&str>,
        request: pb::GetRequest,
    ) -> Result<pb::GetResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.get(request).await?.into_inner())
    }

    async fn trace(
        &self,
        key: Option<&str>,
        request: pb::TraceRequest,
    ) -> Result<pb::TraceResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.trace(request).await?.into_inner())
    }

    async fn forget(
        &self,
        key: Option<&str>,
        request: pb::ForgetRequest,
    ) -> Result<pb::ForgetResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.forget(request).await?.into_inner())
    }

    async fn review(
        &self,
        key: Option<&str>,
        request: pb::ReviewRequest,
    ) -> Result<pb::ReviewResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.review(request).await?.into_inner())
    }

    async fn list_conflicts(
        &self,
        key: Option<&str>,
        request: pb::ListConflictsRequest,
    ) -> Result<pb::ListConflictsResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.list_conflicts(request).await?.into_inner())
    }

    async fn resolve_conflict(
        &self,
        key: Option<&str>,
        request: pb::ResolveConflictRequest,
    ) -> Result<pb::ResolveConflictResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.resolve_conflict(request).await?.into_inner())
    }

    async fn reflect(
        &self,
        key: Option<&str>,
        request: pb::ReflectRequest,
    ) -> Result<pb::ReflectResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.reflect(request).await?.into_inner())
    }

    async fn feedback(
        &self,
        key: Option<&str>,
        request: pb::FeedbackRequest,
    ) -> Result<pb::FeedbackResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.memory.feedback(request).await?.into_inner())
    }

    async fn list_banks(
        &self,
        key: Option<&str>,
        request: pb::ListBanksRequest,
    ) -> Result<pb::ListBanksResponse, Status> {
        let request = authorized(key, request)?;
        Ok(self.banks.list_banks(request).await?.into_inner())
    }
}
