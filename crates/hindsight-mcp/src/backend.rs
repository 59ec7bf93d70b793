//! What the tools need from a Hindsight node, in the gRPC wire types, so that the same tools run
//! in-process beside the node or against a remote one.

use async_trait::async_trait;
use hindsight_api::pb;
use tonic::metadata::MetadataValue;
use tonic::Status;

/// The calls behind the MCP tools. Each takes the caller's API key, since one MCP endpoint serves
/// many callers and the node decides what each may do.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    async fn write(
        &self,
        key: Option<&str>,
        request: pb::WriteRequest,
    ) -> Result<pb::WriteResponse, Status>;

    async fn recall(
        &self,
        key: Option<&str>,
        request: pb::RecallRequest,
    ) -> Result<pb::RecallResponse, Status>;

    async fn get(
        &self,
        key: Option<&str>,
        request: pb::GetRequest,
    ) -> Result<pb::GetResponse, Status>;

    async fn trace(
        &self,
        key: Option<&str>,
        request: pb::TraceRequest,
    ) -> Result<pb::TraceResponse, Status>;

    async fn forget(
        &self,
        key: Option<&str>,
        request: pb::ForgetRequest,
    ) -> Result<pb::ForgetResponse, Status>;

    async fn review(
        &self,
        key: Option<&str>,
        request: pb::ReviewRequest,
    ) -> Result<pb::ReviewResponse, Status>;

    async fn list_conflicts(
        &self,
        key: Option<&str>,
        request: pb::ListConflictsRequest,
    ) -> Result<pb::ListConflictsResponse, Status>;

    async fn resolve_conflict(
        &self,
        key: Option<&str>,
        request: pb::ResolveConflictRequest,
    ) -> Result<pb::ResolveConflictResponse, Status>;

    async fn reflect(
        &self,
        key: Option<&str>,
        request: pb::ReflectRequest,
    ) -> Result<pb::ReflectResponse, Status>;

    async fn feedback(
        &self,
        key: Option<&str>,
        request: pb::FeedbackRequest,
    ) -> Result<pb::FeedbackResponse, Status>;

    /// The banks the key may read; the node leaves out the others.
    async fn list_banks(
        &self,
        key: Option<&str>,
        request: pb::ListBanksRequest,
    ) -> Result<pb::ListBanksResponse, Status>;
}

/// `message` as a gRPC request carrying `authorization: Bearer <key>`, the way the services
/// authenticate every call.
pub(crate) fn authorized<T>(key: Option<&str>, message: T) -> Result<tonic::Request<T>, Status> {
    let mut request = tonic::Request::new(message);
    if let Some(key) = key.map(str::trim).filter(|k| !k.is_empty()) {
        let value: MetadataValue<_> = format!("Bearer {key}")
            .parse()
            .map_err(|_| Status::unauthenticated("the API key holds characters a header cannot"))?;
        request.metadata_mut().insert("authorization", value);
    }
    Ok(request)
}
