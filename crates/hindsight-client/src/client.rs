use std::error::Error as _;
use std::time::Duration;

use hindsight_core::auth::{ApiKey, Grant};
use hindsight_core::retrieval::{RecallId, RetrievalQuery};
use hindsight_core::review::Conflict;
use hindsight_core::{
    BankConfig, BankInfo, BankName, BankPatch, FeedbackOutcome, FeedbackReport, Memory, MemoryId,
    RecallRequest, RecallResponse, RetrievalRecord, ReviewReport, Timestamp, Trace,
    ValidationError, WriteOutcome, WriteRequest,
};
use hindsight_review::reflect::{ReflectReport, TaskTrace};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::error::ClientError;
use crate::pb;
use crate::pb::bank_service_client::BankServiceClient;
use crate::pb::memory_service_client::MemoryServiceClient;
use crate::pb::node_service_client::NodeServiceClient;
use crate::server_status::ServerStatus;
use crate::status::AUTHORIZATION;
use crate::MAX_MESSAGE_BYTES;

/// What a client needs for TLS: the CA that signed the server's certificate, and for mutual TLS
/// its own certificate and key (PEM).
#[derive(Clone, Debug, Default)]
pub struct ClientTls {
    pub ca_pem: Vec<u8>,
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    /// The name the server's certificate must carry; the address's host when `None`.
    pub domain: Option<String>,
}

/// How long `connect` waits for the server to accept before giving up.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection to a Hindsight server. Its methods mirror `hindsight_node::Node`, in the domain
/// model's types, so code can drive a remote node like an embedded one. Cheap to clone; clones share
/// the connection.
#[derive(Clone, Debug)]
pub struct HindsightClient {
    addr: String,
    channel: Channel,
    memory: MemoryServiceClient<AuthedChannel>,
    banks: BankServiceClient<AuthedChannel>,
    node: NodeServiceClient<AuthedChannel>,
}

/// A channel whose every request carries the client's API key, if it has one.
pub type AuthedChannel = InterceptedService<Channel, ApiKeyHeader>;

/// Adds `authorization: Bearer <key>` to each request.
#[derive(Clone, Debug, Default)]
pub struct ApiKeyHeader(Option<MetadataValue<Ascii>>);

impl Interceptor for ApiKeyHeader {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert(AUTHORIZATION, value.clone());
        }
        Ok(request)
    }
}

impl HindsightClient {
    /// Connects to `addr`, given as `HOST:PORT` or `http://HOST:PORT`.
    pub async fn connect(addr: &str) -> Result<Self, ClientError> {
        Self::connect_with_timeout(addr, DEFAULT_CONNECT_TIMEOUT).await
    }

    pub async fn connect_with_timeout(addr: &str, timeout: Duration) -> Result<Self, ClientError> {
        Self::connect_with(addr, timeout, None).await
    }

    /// Connects over TLS when `tls` is given or `addr` starts with `https://` (which then needs
    /// `tls` for the CA that signed the server's certificate).
    pub async fn connect_with(
        addr: &str,
        timeout: Duration,
        tls: Option<ClientTls>,
    ) -> Result<Self, ClientError> {
        let trimmed = addr.trim();
        let secure = tls.is_some() || trimmed.starts_with("https://");
        let shown = trimmed
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .to_string();
        let invalid = |reason: String| ClientError::InvalidAddress {
            addr: addr.to_string(),
            reason,
        };
        let scheme = if secure { "https" } else { "http" };
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{shown}"))
            .map_err(|e| invalid(e.to_string()))?;
        if endpoint.uri().port().is_none() || endpoint.uri().path() != "/" {
            return Err(invalid("not a host and port".into()));
        }
        if secure {
            let tls = tls.ok_or_else(|| {
                invalid("https needs the CA certificate that signed the server's (--tls-ca)".into())
            })?;
            let host = endpoint.uri().host().unwrap_or_default().to_string();
            let mut config = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(&tls.ca_pem))
                .domain_name(tls.domain.unwrap_or(host));
            if let Some((cert, key)) = tls.identity {
                config = config.identity(Identity::from_pem(cert, key));
            }
            endpoint = endpoint
                .tls_config(config)
                .map_err(|e| invalid(format!("TLS: {e}")))?;
        }
        let channel = endpoint
            .connect_timeout(timeout)
            .connect()
            .await
            .map_err(|e| ClientError::Unreachable {
                addr: shown.clone(),
                reason: connect_failure(&e, timeout),
            })?;
        Ok(Self::over(shown, channel, ApiKeyHeader::default()))
    }

    fn over(addr: String, channel: Channel, key: ApiKeyHeader) -> Self {
        HindsightClient {
            addr,
            memory: MemoryServiceClient::with_interceptor(channel.clone(), key.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
            banks: BankServiceClient::with_interceptor(channel.clone(), key.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
            node: NodeServiceClient::with_interceptor(channel.clone(), key)
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
            channel,
        }
    }

    /// The same connection, sending `key` with every request (none: send no key).
    pub fn with_api_key(&self, key: Option<&str>) -> Result<Self, ClientError> {
        let header = match key.map(str::trim).filter(|k| !k.is_empty()) {
            Some(key) => ApiKeyHeader(Some(format!("Bearer {key}").parse().map_err(|_| {
                ValidationError::Invalid("the API key holds characters a header cannot".into())
            })?)),
            None => ApiKeyHeader(None),
        };
        Ok(Self::over(self.addr.clone(), self.channel.clone(), header))
    }

    /// A new API key for `principal` (needs admin on every bank); the key is shown only here.
    pub async fn create_api_key(
        &self,
        principal: &str,
        grants: &[Grant],
    ) -> Result<(String, ApiKey), ClientError> {
        let request = pb::CreateApiKeyRequest {
            principal: principal.to_string(),
            grants: grants.iter().map(ToString::to_string).collect(),
        };
        let response = self.answer(self.node.clone().create_api_key(request).await)?;
        Ok((response.key, read(missing(response.info, "info")?)?))
    }

    pub async fn revoke_api_key(&self, id: &str) -> Result<ApiKey, ClientError> {
        let request = pb::RevokeApiKeyRequest { id: id.to_string() };
        read(self.answer(self.node.clone().revoke_api_key(request).await)?)
    }

    pub async fn api_keys(&self) -> Result<Vec<ApiKey>, ClientError> {
        let response = self.answer(
            self.node
                .clone()
                .list_api_keys(pb::ListApiKeysRequest {})
                .await,
        )?;
        read_all(response.keys)
    }

    /// The server address, as `HOST:PORT`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The generated clients, for calls in the wire types.
    pub fn memory_client(&self) -> MemoryServiceClient<AuthedChannel> {
        self.memory.clone()
    }

    pub fn bank_client(&self) -> BankServiceClient<AuthedChannel> {
        self.banks.clone()
    }

    pub fn node_client(&self) -> NodeServiceClient<AuthedChannel> {
        self.node.clone()
    }

    pub async fn write(&self, request: WriteRequest) -> Result<WriteOutcome, ClientError> {
        let response = self
            .memory
            .clone()
            .write(pb::WriteRequest::from(&request))
            .await;
        read(self.answer(response)?)
    }

    /// All or nothing on validation, like the node's.
    pub async fn write_batch(
        &self,
        requests: Vec<WriteRequest>,
    ) -> Result<Vec<WriteOutcome>, ClientError> {
        let request = pb::WriteBatchRequest {
            items: requests.iter().map(pb::WriteRequest::from).collect(),
        };
        let response = self.memory.clone().write_batch(request).await;
        read_all(self.answer(response)?.outcomes)
    }

    pub async fn recall(&self, request: RecallRequest) -> Result<RecallResponse, ClientError> {
        let response = self
            .memory
            .clone()
            .recall(pb::RecallRequest::from(&request))
            .await;
        read(self.answer(response)?)
    }

    pub async fn get(&self, id: MemoryId) -> Result<Memory, ClientError> {
        let request = pb::GetRequest {
            id: id.to_string(),
            consistency: None,
        };
        let response = self.answer(self.memory.clone().get(request).await)?;
        read(missing(response.memory, "memory")?)
    }

    pub async fn trace(&self, id: MemoryId) -> Result<Trace, ClientError> {
        let request = pb::TraceRequest { id: id.to_string() };
        read(self.answer(self.memory.clone().trace(request).await)?)
    }

    /// Soft forget archives; hard forget deletes the record and everything derived from it.
    /// An empty reason leaves the server's default in the history. Returns the ids that changed.
    /// Releases quarantined memory `id` (admin on its bank); `reason` goes in its history.
    pub async fn release_quarantine(
        &self,
        id: MemoryId,
        reason: &str,
    ) -> Result<Memory, ClientError> {
        let request = pb::ReleaseQuarantineRequest {
            id: id.to_string(),
            reason: reason.to_string(),
        };
        let response = self.answer(self.memory.clone().release_quarantine(request).await)?;
        read(missing(response.memory, "memory")?)
    }

    pub async fn forget(
        &self,
        id: MemoryId,
        hard: bool,
        reason: String,
    ) -> Result<Vec<MemoryId>, ClientError> {
        let request = pb::ForgetRequest {
            id: id.to_string(),
            hard,
            reason: Some(reason).filter(|r| !r.is_empty()),
        };
        let response = self.answer(self.memory.clone().forget(request).await)?;
        response
            .changed
            .iter()
            .map(|id| id.parse().map_err(ClientError::Malformed))
            .collect()
    }

    /// Feedback on a memory that recall `recall` returned.
    pub async fn feedback(
        &self,
        recall: RecallId,
        memory: MemoryId,
        outcome: FeedbackOutcome,
    ) -> Result<FeedbackReport, ClientError> {
        let request = pb::FeedbackRequest {
            recall_id: recall.to_string(),
            memory_id: memory.to_string(),
            outcome: outcome.as_str().to_string(),
        };
        read(self.answer(self.memory.clone().feedback(request).await)?)
    }

    /// Logged recalls matching `query`, newest first.
    pub async fn recalls(
        &self,
        query: &RetrievalQuery,
    ) -> Result<Vec<RetrievalRecord>, ClientError> {
        let request = pb::ListRecallsRequest::from(query);
        let response = self.answer(self.memory.clone().list_recalls(request).await)?;
        read_all(response.recalls)
    }

    pub async fn recall_record(&self, recall: RecallId) -> Result<RetrievalRecord, ClientError> {
        let request = pb::GetRecallRequest {
            recall_id: recall.to_string(),
        };
        read(self.answer(self.memory.clone().get_recall(request).await)?)
    }

    pub async fn review(
        &self,
        bank: BankName,
        as_of: Option<Timestamp>,
    ) -> Result<ReviewReport, ClientError> {
        let request = pb::ReviewRequest {
            bank: bank.to_string(),
            as_of: as_of.map(Timestamp::to_rfc3339),
        };
        read(self.answer(self.memory.clone().review(request).await)?)
    }

    /// Turns a finished task's trace into memories in `bank` (or only says which, on a dry run).
    pub async fn reflect(
        &self,
        bank: BankName,
        trace: &TaskTrace,
        task_id: Option<String>,
        dry_run: bool,
    ) -> Result<ReflectReport, ClientError> {
        let request = crate::convert::reflect::request_of(bank.as_str(), trace, task_id, dry_run);
        read(self.answer(self.memory.clone().reflect(request).await)?)
    }

    pub async fn conflicts(
        &self,
        bank: BankName,
        include_resolved: bool,
    ) -> Result<Vec<Conflict>, ClientError> {
        let request = pb::ListConflictsRequest {
            bank: bank.to_string(),
            include_resolved,
        };
        let response = self.answer(self.memory.clone().list_conflicts(request).await)?;
        read_all(response.conflicts)
    }

    /// Settles a queued conflict (`keep_a`, `keep_b`, `keep_both`, `discard_both`); returns it
    /// resolved and the memories that changed.
    pub async fn resolve_conflict(
        &self,
        bank: BankName,
        id: u64,
        outcome: &str,
        note: &str,
    ) -> Result<(Conflict, Vec<MemoryId>), ClientError> {
        let request = pb::ResolveConflictRequest {
            bank: bank.to_string(),
            id,
            outcome: outcome.to_string(),
            note: note.to_string(),
        };
        let response = self.answer(self.memory.clone().resolve_conflict(request).await)?;
        let conflict = read(missing(response.conflict, "conflict")?)?;
        let changed = response
            .changed
            .iter()
            .map(|id| id.parse::<MemoryId>().map_err(ClientError::from))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((conflict, changed))
    }

    pub async fn create_bank(
        &self,
        name: BankName,
        patch: BankPatch,
    ) -> Result<BankConfig, ClientError> {
        let request = pb::CreateBankRequest {
            name: name.to_string(),
            settings: Some(pb::BankPatch::from(&patch)),
        };
        let response = self.answer(self.banks.clone().create_bank(request).await)?;
        read(missing(response.bank, "bank")?)
    }

    pub async fn get_bank(&self, name: BankName) -> Result<BankInfo, ClientError> {
        let request = pb::GetBankRequest {
            name: name.to_string(),
        };
        let response = self.answer(self.banks.clone().get_bank(request).await)?;
        read(missing(response.info, "info")?)
    }

    pub async fn list_banks(&self) -> Result<Vec<BankInfo>, ClientError> {
        let response = self.banks.clone().list_banks(pb::ListBanksRequest {}).await;
        read_all(self.answer(response)?.banks)
    }

    pub async fn update_bank(
        &self,
        name: BankName,
        patch: BankPatch,
    ) -> Result<BankConfig, ClientError> {
        let request = pb::UpdateBankRequest {
            name: name.to_string(),
            patch: Some(pb::BankPatch::from(&patch)),
        };
        let response = self.answer(self.banks.clone().update_bank(request).await)?;
        read(missing(response.bank, "bank")?)
    }

    /// Deletes the bank and every memory in it. Returns how many memories were removed.
    pub async fn delete_bank(&self, name: BankName) -> Result<usize, ClientError> {
        let request = pb::DeleteBankRequest {
            name: name.to_string(),
        };
        let response = self.answer(self.banks.clone().delete_bank(request).await)?;
        Ok(response.memories_removed as usize)
    }

    /// One page of a bank's export: its JSON lines and where the next page starts.
    pub async fn export_bank_page(
        &self,
        name: &BankName,
        after: Option<String>,
        limit: Option<u32>,
    ) -> Result<(Vec<String>, Option<String>), ClientError> {
        let request = pb::ExportBankRequest {
            name: name.to_string(),
            after,
            limit,
        };
        let response = self.answer(self.banks.clone().export_bank(request).await)?;
        Ok((response.lines, response.next))
    }

    /// Stores exported lines in `name`; returns the memories and conflicts stored.
    pub async fn import_bank_lines(
        &self,
        name: &BankName,
        lines: Vec<String>,
        resign: bool,
    ) -> Result<(u64, u64), ClientError> {
        let request = pb::ImportBankRequest {
            name: name.to_string(),
            lines,
            resign,
        };
        let response = self.answer(self.banks.clone().import_bank(request).await)?;
        Ok((response.memories, response.conflicts))
    }

    /// The Raft cluster as the server sees it.
    pub async fn cluster_status(&self) -> Result<pb::ClusterStatusResponse, ClientError> {
        let response = self
            .node
            .clone()
            .cluster_status(pb::ClusterStatusRequest {})
            .await;
        self.answer(response)
    }

    /// Makes the server, which belongs to no cluster, the first member of a new one.
    pub async fn init_cluster(&self) -> Result<pb::ClusterStatusResponse, ClientError> {
        let response = self
            .node
            .clone()
            .init_cluster(pb::InitClusterRequest {})
            .await;
        self.answer(response)
    }

    /// Has the server join the cluster `seed` belongs to.
    pub async fn join_cluster(&self, seed: &str) -> Result<pb::ClusterStatusResponse, ClientError> {
        let request = pb::JoinClusterRequest {
            seed: seed.to_string(),
        };
        let response = self.node.clone().join_cluster(request).await;
        self.answer(response)
    }

    /// Removes node `node_id` from the server's cluster.
    pub async fn remove_member(
        &self,
        node_id: u64,
    ) -> Result<pb::ClusterStatusResponse, ClientError> {
        let request = pb::RemoveMemberRequest { node_id };
        let response = self.node.clone().remove_member(request).await;
        self.answer(response)
    }

    /// The placement table, and the server's view of the partitions it holds.
    pub async fn list_partitions(&self) -> Result<pb::ListPartitionsResponse, ClientError> {
        let response = self
            .node
            .clone()
            .list_partitions(pb::ListPartitionsRequest {})
            .await;
        self.answer(response)
    }

    /// Moves partition `partition`'s replica on node `from` to node `to`.
    pub async fn move_partition(
        &self,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<pb::ListPartitionsResponse, ClientError> {
        let request = pb::MovePartitionRequest {
            partition,
            from_node: from,
            to_node: to,
        };
        let response = self.node.clone().move_partition(request).await;
        self.answer(response)
    }

    pub async fn status(&self) -> Result<ServerStatus, ClientError> {
        let response = self.node.clone().status(pb::StatusRequest {}).await;
        Ok(self.answer(response)?.into())
    }

    /// A call that failed in the transport (the server went away) is reported like a failed connect;
    /// everything else is the server's own answer.
    fn answer<T>(
        &self,
        result: Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T, ClientError> {
        match result {
            Ok(response) => Ok(response.into_inner()),
            Err(status)
                if status.code() == tonic::Code::Unavailable && status.source().is_some() =>
            {
                Err(ClientError::Unreachable {
                    addr: self.addr.clone(),
                    reason: io_reason(&status).unwrap_or_else(|| status.message().to_string()),
                })
            }
            Err(status) => Err(ClientError::Status(status)),
        }
    }
}

fn read<W, T: TryFrom<W, Error = ValidationError>>(wire: W) -> Result<T, ClientError> {
    Ok(T::try_from(wire)?)
}

fn read_all<W, T: TryFrom<W, Error = ValidationError>>(
    wire: Vec<W>,
) -> Result<Vec<T>, ClientError> {
    wire.into_iter().map(read).collect()
}

fn missing<T>(value: Option<T>, field: &str) -> Result<T, ClientError> {
    value.ok_or_else(|| ValidationError::Invalid(format!("{field} is missing")).into())
}

fn connect_failure(error: &tonic::transport::Error, timeout: Duration) -> String {
    if let Some(reason) = io_reason(error) {
        return reason;
    }
    let mut innermost: &dyn std::error::Error = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    let text = innermost.to_string();
    if text.contains("timed out") || text.contains("timeout") {
        format!("no answer within {} s", timeout.as_secs_f32())
    } else {
        text
    }
}

/// The operating system's reason, worded for people, from anywhere in an error's source chain.
fn io_reason(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            return Some(match io.kind() {
                ConnectionRefused => "connection refused".to_string(),
                ConnectionReset | ConnectionAborted | BrokenPipe => {
                    "the connection was closed".to_string()
                }
                TimedOut => "timed out".to_string(),
                AddrNotAvailable => "address not available".to_string(),
                _ => io.to_string(),
            });
        }
        current = e.source();
    }
    None
}
