//! The tools in a separate process (the stdio server an MCP host launches), over gRPC to a node.

use std::error::Error as _;

use async_trait::async_trait;
use hindsight_api::pb;
use hindsight_api::pb::bank_service_client::BankServiceClient;
use hindsight_api::pb::memory_service_client::MemoryServiceClient;
use hindsight_api::{AuthedChannel, HindsightClient};
use tokio::sync::Mutex;
use tonic::Status;

use crate::backend::{authorized, Backend};

/// A backend over a node reached by gRPC. It connects on first use, and again after a failed
/// attempt, so an MCP host can start it before the node is up.
pub struct RemoteBackend {
    addr: String,
    client: Mutex<Option<HindsightClient>>,
}

impl RemoteBackend {
    /// `addr` is the node's gRPC address, `HOST:PORT`.
    pub fn new(addr: impl Into<String>) -> Self {
        RemoteBackend {
            addr: addr.into(),
            client: Mutex::new(None),
        }
    }

    /// Over a connection already made.
    pub fn over(client: HindsightClient) -> Self {
        RemoteBackend {
            addr: client.addr().to_string(),
            client: Mutex::new(Some(client)),
        }
    }

    async fn connected(&self) -> Result<HindsightClient, Status> {
        let mut client = self.client.lock().await;
        if let Some(client) = client.as_ref() {
            return Ok(client.clone());
        }
        let connected = HindsightClient::connect(&self.addr)
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        *client = Some(connected.clone());
        Ok(connected)
    }

    async fn memory(&self) -> Result<MemoryServiceClient<AuthedChannel>, Status> {
        Ok(self.connected().await?.memory_client())
    }

    async fn banks(&self) -> Result<BankServiceClient<AuthedChannel>, Status> {
        Ok(self.connected().await?.bank_client())
    }

    /// A call the transport failed (the node went away) reads as the node being unreachable,
    /// rather than as tonic's low-level wording.
    fn reached<T>(&self, result: Result<tonic::Response<T>, Status>) -> Result<T, Status> {
        match result {
            Ok(response) => Ok(response.into_inner()),
            Err(status)
                if status.code() == tonic::Code::Unavailable && status.source().is_some() =>
            {
                Err(Status::unavailable(format!(
                    "cannot reach the Hindsight server at {}: {} (is `hindsight serve` running?)",
                    self.addr,
                    status.message()
                )))
            }
            Err(status) => Err(status),
        }
    }
}

#[async_trait]
impl Backend for RemoteBackend {
    async fn write(
        &self,
        key: Option<&str>,
        request: pb::WriteRequest,
    ) -> Result<pb::WriteResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.write(request).await)
    }

    async fn recall(
        &self,
        key: Option<&str>,
        request: pb::RecallRequest,
    ) -> Result<pb::RecallResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.recall(request).await)
    }

    async fn get(
        &self,
        key: Option<&str>,
        request: pb::GetRequest,
    ) -> Result<pb::GetResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.get(request).await)
    }

    async fn trace(
        &self,
        key: Option<&str>,
        request: pb::TraceRequest,
    ) -> Result<pb::TraceResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.trace(request).await)
    }

    async fn forget(
        &self,
        key: Option<&str>,
        request: pb::ForgetRequest,
    ) -> Result<pb::ForgetResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.forget(request).await)
    }

    async fn review(
        &self,
        key: Option<&str>,
        request: pb::ReviewRequest,
    ) -> Result<pb::ReviewResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.review(request).await)
    }

    async fn list_conflicts(
        &self,
        key: Option<&str>,
        request: pb::ListConflictsRequest,
    ) -> Result<pb::ListConflictsResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.list_conflicts(request).await)
    }

    async fn resolve_conflict(
        &self,
        key: Option<&str>,
        request: pb::ResolveConflictRequest,
    ) -> Result<pb::ResolveConflictResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.resolve_conflict(request).await)
    }

    async fn reflect(
        &self,
        key: Option<&str>,
        request: pb::ReflectRequest,
    ) -> Result<pb::ReflectResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.reflect(request).await)
    }

    async fn feedback(
        &self,
        key: Option<&str>,
        request: pb::FeedbackRequest,
    ) -> Result<pb::FeedbackResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.memory().await?.feedback(request).await)
    }

    async fn list_banks(
        &self,
        key: Option<&str>,
        request: pb::ListBanksRequest,
    ) -> Result<pb::ListBanksResponse, Status> {
        let request = authorized(key, request)?;
        self.reached(self.banks().await?.list_banks(request).await)
    }
}
