//! The HTTP/JSON API: each route reads a `hindsight.v1` message as JSON, calls the same service as
//! the gRPC method of the same name (so rights, limits and validation are shared), and answers the
//! reply as JSON. docs/HTTP-API.md has the overview; `/openapi.json` the document generated here.

mod error;
mod extract;
mod openapi;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, State};
use axum::routing::{delete, get, patch, post};
use axum::{Json, Router};
use hindsight_node::Node;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tonic::{Response, Status};

pub use error::{ErrorBody, HttpError};
use extract::{Caller, JsonBody, PathArgs, QueryArgs};
use openapi::{DocumentedRouter, Operation};

use crate::pb;
use crate::pb::bank_service_server::BankService;
use crate::pb::memory_service_server::MemoryService;
use crate::pb::node_service_server::NodeService;
use crate::{BankApi, MemoryApi, NodeApi, MAX_MESSAGE_BYTES};

/// The three services the routes call.
#[derive(Clone)]
struct Services {
    memory: MemoryApi,
    bank: BankApi,
    node: NodeApi,
}

type Answer<T> = Result<Json<T>, HttpError>;

fn answer<T>(reply: Result<Response<T>, Status>) -> Answer<T> {
    Ok(Json(reply?.into_inner()))
}

/// The `/v1` routes and `/openapi.json`.
pub fn router(node: Node) -> Router {
    let (routes, document) = documented_routes().finish(env!("CARGO_PKG_VERSION"));
    let document = Arc::new(document);
    let services = Services {
        memory: MemoryApi::new(node.clone()),
        bank: BankApi::new(node.clone()),
        node: NodeApi::new(node),
    };
    routes
        .layer(DefaultBodyLimit::max(MAX_MESSAGE_BYTES))
        .layer(axum::middleware::from_fn(count_request))
        .with_state(services)
        .route(
            "/openapi.json",
            get(move || {
                let document = document.clone();
                async move { Json((*document).clone()) }
            }),
        )
}

/// Request count and latency per route and status, for `/metrics`.
async fn count_request(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let method = request.method().to_string();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    let labels = [("method", method), ("route", route), ("status", status)];
    metrics::counter!("hindsight_http_requests_total", &labels).increment(1);
    metrics::histogram!("hindsight_http_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Answers for paths and methods no route serves, in the same JSON shape as every other error.
pub(crate) async fn no_route(method: axum::http::Method, uri: axum::http::Uri) -> HttpError {
    HttpError::new(
        axum::http::StatusCode::NOT_FOUND,
        "not_found",
        format!("no route for {method} {}", uri.path()),
    )
}

pub(crate) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> HttpError {
    HttpError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} does not take {method}", uri.path()),
    )
}

/// The OpenAPI document alone, as `/openapi.json` serves it.
pub fn openapi_document() -> Value {
    documented_routes().finish(env!("CARGO_PKG_VERSION")).1
}

fn documented_routes() -> DocumentedRouter<Services> {
    const MEMORIES: &str = "memories";
    const REVIEW: &str = "review";
    const LEARNING: &str = "learning";
    const BANKS: &str = "banks";
    const NODE: &str = "node";
    DocumentedRouter::new()
        .route(
            "post",
            "/v1/banks/{bank}/memories",
            Operation::new(MEMORIES, "write", "Write one memory into the bank.")
                .body::<pb::WriteRequest>()
                .answer::<pb::WriteResponse>(),
            post(write),
        )
        .route(
            "get",
            "/v1/banks/{bank}/memories",
            Operation::new(
                MEMORIES,
                "listMemories",
                "The bank's memories in id order, a page at a time, without recall's side effects.",
            )
            .query::<ListMemoriesQuery>()
            .answer::<pb::ListMemoriesResponse>(),
            get(list_memories),
        )
        .route(
            "post",
            "/v1/banks/{bank}/memories/batch",
            Operation::new(
                MEMORIES,
                "writeBatch",
                "Write several memories at once: all are stored or none.",
            )
            .body::<pb::WriteBatchRequest>()
            .answer::<pb::WriteBatchResponse>(),
            post(write_batch),
        )
        .route(
            "post",
            "/v1/banks/{bank}/recall",
            Operation::new(MEMORIES, "recallBank", "Recall from the bank.")
                .body::<pb::RecallRequest>()
                .answer::<pb::RecallResponse>(),
            post(recall_bank),
        )
        .route(
            "post",
            "/v1/recall",
            Operation::new(
                MEMORIES,
                "recall",
                "Recall from the banks the body names (each needs the read right).",
            )
            .body::<pb::RecallRequest>()
            .answer::<pb::RecallResponse>(),
            post(recall),
        )
        .route(
            "get",
            "/v1/memories/{id}",
            Operation::new(MEMORIES, "get", "One memory by id.")
                .query::<GetQuery>()
                .answer::<pb::GetResponse>(),
            get(get_memory),
        )
        .route(
            "delete",
            "/v1/memories/{id}",
            Operation::new(
                MEMORIES,
                "forget",
                "Forget a memory: archive it, or with hard=true delete it and what was derived from it.",
            )
            .query::<ForgetQuery>()
            .answer::<pb::ForgetResponse>(),
            delete(forget_by_delete),
        )
        .route(
            "get",
            "/v1/memories/{id}/trace",
            Operation::new(
                MEMORIES,
                "trace",
                "A memory with its history, related records and signature check.",
            )
            .answer::<pb::TraceResponse>(),
            get(trace),
        )
        .route(
            "post",
            "/v1/memories/{id}/forget",
            Operation::new(MEMORIES, "forgetWithBody", "Forget a memory (as DELETE, with a body).")
                .body::<pb::ForgetRequest>()
                .answer::<pb::ForgetResponse>(),
            post(forget),
        )
        .route(
            "post",
            "/v1/memories/{id}/release",
            Operation::new(
                MEMORIES,
                "releaseQuarantine",
                "Release a quarantined memory (admin on its bank; the reason goes in its history).",
            )
            .body::<pb::ReleaseQuarantineRequest>()
            .answer::<pb::ReleaseQuarantineResponse>(),
            post(release_quarantine),
        )
        .route(
            "post",
            "/v1/banks/{bank}/review",
            Operation::new(REVIEW, "review", "Run the bank's review now.")
                .body::<pb::ReviewRequest>()
                .answer::<pb::ReviewResponse>(),
            post(review),
        )
        .route(
            "get",
            "/v1/banks/{bank}/conflicts",
            Operation::new(REVIEW, "listConflicts", "The bank's conflict queue.")
                .query::<ConflictsQuery>()
                .answer::<pb::ListConflictsResponse>(),
            get(conflicts),
        )
        .route(
            "post",
            "/v1/banks/{bank}/conflicts/{id}/resolve",
            Operation::new(
                REVIEW,
                "resolveConflict",
                "Resolve a queued conflict: keep_a, keep_b, keep_both or discard_both.",
            )
            .integer_params(&["id"])
            .body::<pb::ResolveConflictRequest>()
            .answer::<pb::ResolveConflictResponse>(),
            post(resolve_conflict),
        )
        .route(
            "post",
            "/v1/banks/{bank}/reflect",
            Operation::new(
                REVIEW,
                "reflect",
                "Turn a finished task's trace into the memories worth keeping.",
            )
            .body::<pb::ReflectRequest>()
            .answer::<pb::ReflectResponse>(),
            post(reflect),
        )
        .route(
            "post",
            "/v1/feedback",
            Operation::new(
                LEARNING,
                "feedback",
                "Say how a recalled memory served: used, helpful, wrong or harmful.",
            )
            .body::<pb::FeedbackRequest>()
            .answer::<pb::FeedbackResponse>(),
            post(feedback),
        )
        .route(
            "get",
            "/v1/recalls",
            Operation::new(LEARNING, "listRecalls", "Recalls in this node's retrieval log.")
                .query::<pb::ListRecallsRequest>()
                .answer::<pb::ListRecallsResponse>(),
            get(list_recalls),
        )
        .route(
            "get",
            "/v1/recalls/{recall_id}",
            Operation::new(LEARNING, "getRecall", "One recall from the retrieval log.")
                .answer::<pb::LoggedRecall>(),
            get(get_recall),
        )
        .route(
            "get",
            "/v1/banks",
            Operation::new(BANKS, "listBanks", "The banks the caller may read.")
                .answer::<pb::ListBanksResponse>(),
            get(list_banks),
        )
        .route(
            "post",
            "/v1/banks",
            Operation::new(BANKS, "createBank", "Create a bank.")
                .body::<pb::CreateBankRequest>()
                .answer::<pb::CreateBankResponse>(),
            post(create_bank),
        )
        .route(
            "get",
            "/v1/banks/{bank}",
            Operation::new(BANKS, "getBank", "A bank's configuration and size.")
                .answer::<pb::GetBankResponse>(),
            get(get_bank),
        )
        .route(
            "patch",
            "/v1/banks/{bank}",
            Operation::new(BANKS, "updateBank", "Change a bank's configuration.")
                .body::<pb::UpdateBankRequest>()
                .answer::<pb::UpdateBankResponse>(),
            patch(update_bank),
        )
        .route(
            "delete",
            "/v1/banks/{bank}",
            Operation::new(BANKS, "deleteBank", "Delete a bank and every memory in it.")
                .answer::<pb::DeleteBankResponse>(),
            delete(delete_bank),
        )
        .route(
            "get",
            "/v1/banks/{bank}/export",
            Operation::new(
                BANKS,
                "exportBank",
                "One page of the bank's export as JSON lines (records with history, configuration, conflicts).",
            )
            .query::<ExportQuery>()
            .answer::<pb::ExportBankResponse>(),
            get(export_bank),
        )
        .route(
            "post",
            "/v1/banks/{bank}/import",
            Operation::new(
                BANKS,
                "importBank",
                "Store exported lines in the bank; lines opening with the bank line create it.",
            )
            .body::<pb::ImportBankRequest>()
            .answer::<pb::ImportBankResponse>(),
            post(import_bank),
        )
        .route(
            "get",
            "/v1/status",
            Operation::new(NODE, "status", "The node's state.").answer::<pb::StatusResponse>(),
            get(status),
        )
        .route(
            "get",
            "/v1/keys",
            Operation::new(NODE, "listApiKeys", "Every API key (admin on every bank).")
                .answer::<pb::ListApiKeysResponse>(),
            get(list_keys),
        )
        .route(
            "post",
            "/v1/keys",
            Operation::new(
                NODE,
                "createApiKey",
                "A new API key; the key is in this answer only.",
            )
            .body::<pb::CreateApiKeyRequest>()
            .answer::<pb::CreateApiKeyResponse>(),
            post(create_key),
        )
        .route(
            "delete",
            "/v1/keys/{id}",
            Operation::new(NODE, "revokeApiKey", "Revoke an API key at once.")
                .answer::<pb::ApiKeyInfo>(),
            delete(revoke_key),
        )
        .route(
            "get",
            "/v1/cluster",
            Operation::new(
                NODE,
                "clusterStatus",
                "The Raft cluster as this node sees it (admin on every bank).",
            )
            .answer::<pb::ClusterStatusResponse>(),
            get(cluster_status),
        )
        .route(
            "post",
            "/v1/cluster/init",
            Operation::new(
                NODE,
                "initCluster",
                "Make this node, which belongs to no cluster, the first member of a new one.",
            )
            .body::<pb::InitClusterRequest>()
            .answer::<pb::ClusterStatusResponse>(),
            post(init_cluster),
        )
        .route(
            "post",
            "/v1/cluster/join",
            Operation::new(
                NODE,
                "joinCluster",
                "Ask the cluster a seed member belongs to to add this node.",
            )
            .body::<pb::JoinClusterRequest>()
            .answer::<pb::ClusterStatusResponse>(),
            post(join_cluster),
        )
        .route(
            "delete",
            "/v1/cluster/members/{node_id}",
            Operation::new(NODE, "removeMember", "Remove a node from the cluster.")
                .answer::<pb::ClusterStatusResponse>(),
            delete(remove_member),
        )
}

/// Takes a field from the path; a body naming another value is refused rather than silently
/// overridden.
fn from_path(field: &str, path: &str, body: &mut String) -> Result<(), HttpError> {
    if body.is_empty() || body == path {
        *body = path.to_string();
        Ok(())
    } else {
        Err(HttpError::invalid(format!(
            "the body's {field} {body:?} differs from the path's {path:?}"
        )))
    }
}

/// `GET /v1/banks/{bank}/memories` options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct ListMemoriesQuery {
    /// Only memories with this status (active, superseded, quarantined …); every status when unset.
    status: Option<String>,
    /// The `next` of the previous page; unset for the first.
    after: Option<String>,
    /// Records examined per page (1..=1000, default 100).
    limit: Option<u32>,
}

async fn list_memories(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(bank): PathArgs<String>,
    QueryArgs(query): QueryArgs<ListMemoriesQuery>,
) -> Answer<pb::ListMemoriesResponse> {
    let request = pb::ListMemoriesRequest {
        bank,
        statuses: query.status.into_iter().collect(),
        after: query.after,
        limit: query.limit,
    };
    answer(s.memory.list_memories(caller.request(request)).await)
}

/// `DELETE /v1/memories/{id}` options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct ForgetQuery {
    /// Delete instead of archive, cascading to everything derived from the record.
    hard: bool,
    /// Kept in the record's history.
    reason: Option<String>,
}

/// `GET /v1/banks/{bank}/conflicts` options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct ConflictsQuery {
    /// Also list the conflicts already resolved.
    include_resolved: bool,
}

async fn write(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(bank): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::WriteRequest>,
) -> Answer<pb::WriteResponse> {
    from_path("bank", &bank, &mut body.bank)?;
    answer(s.memory.write(caller.request(body)).await)
}

async fn write_batch(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(bank): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::WriteBatchRequest>,
) -> Answer<pb::WriteBatchResponse> {
    for (i, item) in body.items.iter_mut().enumerate() {
        from_path("bank", &bank, &mut item.bank)
            .map_err(|e| HttpError::invalid(format!("item {i}: {}", e.message())))?;
    }
    answer(s.memory.write_batch(caller.request(body)).await)
}

async fn recall_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(bank): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::RecallRequest>,
) -> Answer<pb::RecallResponse> {
    match body.banks.as_slice() {
        [] => body.banks = vec![bank],
        [only] if *only == bank => {}
        _ => {
            return Err(HttpError::invalid(format!(
                "the body names banks {:?} but the path names {bank:?}; use /v1/recall for several banks",
                body.banks
            )))
        }
    }
    answer(s.memory.recall(caller.request(body)).await)
}

async fn recall(
    State(s): State<Services>,
    caller: Caller,
    JsonBody(body): JsonBody<pb::RecallRequest>,
) -> Answer<pb::RecallResponse> {
    answer(s.memory.recall(caller.request(body)).await)
}

/// `GET /v1/memories/{id}` options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct GetQuery {
    /// linearizable (the default) or eventual.
    consistency: Option<String>,
}

async fn get_memory(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(id): PathArgs<String>,
    QueryArgs(query): QueryArgs<GetQuery>,
) -> Answer<pb::GetResponse> {
    let request = pb::GetRequest {
        id,
        consistency: query.consistency,
    };
    answer(s.memory.get(caller.request(request)).await)
}

async fn trace(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(id): PathArgs<String>,
) -> Answer<pb::TraceResponse> {
    answer(
        s.memory
            .trace(caller.request(pb::TraceRequest { id }))
            .await,
    )
}

async fn forget(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(id): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::ForgetRequest>,
) -> Answer<pb::ForgetResponse> {
    from_path("id", &id, &mut body.id)?;
    answer(s.memory.forget(caller.request(body)).await)
}

async fn release_quarantine(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(id): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::ReleaseQuarantineRequest>,
) -> Answer<pb::ReleaseQuarantineResponse> {
    from_path("id", &id, &mut body.id)?;
    answer(s.memory.release_quarantine(caller.request(body)).await)
}

async fn forget_by_delete(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(id): PathArgs<String>,
    QueryArgs(query): QueryArgs<ForgetQuery>,
) -> Answer<pb::ForgetResponse> {
    let request = pb::ForgetRequest {
        id,
        hard: query.hard,
        reason: query.reason,
    };
    answer(s.memory.forget(caller.request(request)).await)
}

async fn review(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(bank): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::ReviewRequest>,
) -> Answer<pb::ReviewResponse> {
    from_path("bank", &bank, &mut body.bank)?;
    answer(s.memory.review(caller.request(body)).await)
}

async fn conflicts(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(bank): PathArgs<String>,
    QueryArgs(query): QueryArgs<ConflictsQuery>,
) -> Answer<pb::ListConflictsResponse> {
    let request = pb::ListConflictsRequest {
        bank,
        include_resolved: query.include_resolved,
    };
    answer(s.memory.list_conflicts(caller.request(request)).await)
}

async fn resolve_conflict(
    State(s): State<Services>,
    caller: Caller,
    PathArgs((bank, id)): PathArgs<(String, u64)>,
    JsonBody(mut body): JsonBody<pb::ResolveConflictRequest>,
) -> Answer<pb::ResolveConflictResponse> {
    from_path("bank", &bank, &mut body.bank)?;
    if body.id != 0 && body.id != id {
        return Err(HttpError::invalid(format!(
            "the body names conflict {} but the path names {id}",
            body.id
        )));
    }
    body.id = id;
    answer(s.memory.resolve_conflict(caller.request(body)).await)
}

async fn reflect(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(bank): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::ReflectRequest>,
) -> Answer<pb::ReflectResponse> {
    from_path("bank", &bank, &mut body.bank)?;
    answer(s.memory.reflect(caller.request(body)).await)
}

async fn feedback(
    State(s): State<Services>,
    caller: Caller,
    JsonBody(body): JsonBody<pb::FeedbackRequest>,
) -> Answer<pb::FeedbackResponse> {
    answer(s.memory.feedback(caller.request(body)).await)
}

async fn list_recalls(
    State(s): State<Services>,
    caller: Caller,
    QueryArgs(query): QueryArgs<pb::ListRecallsRequest>,
) -> Answer<pb::ListRecallsResponse> {
    answer(s.memory.list_recalls(caller.request(query)).await)
}

async fn get_recall(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(recall_id): PathArgs<String>,
) -> Answer<pb::LoggedRecall> {
    let request = pb::GetRecallRequest { recall_id };
    answer(s.memory.get_recall(caller.request(request)).await)
}

async fn list_banks(State(s): State<Services>, caller: Caller) -> Answer<pb::ListBanksResponse> {
    answer(
        s.bank
            .list_banks(caller.request(pb::ListBanksRequest {}))
            .await,
    )
}

async fn create_bank(
    State(s): State<Services>,
    caller: Caller,
    JsonBody(body): JsonBody<pb::CreateBankRequest>,
) -> Answer<pb::CreateBankResponse> {
    answer(s.bank.create_bank(caller.request(body)).await)
}

async fn get_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
) -> Answer<pb::GetBankResponse> {
    answer(
        s.bank
            .get_bank(caller.request(pb::GetBankRequest { name }))
            .await,
    )
}

async fn update_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::UpdateBankRequest>,
) -> Answer<pb::UpdateBankResponse> {
    from_path("name", &name, &mut body.name)?;
    answer(s.bank.update_bank(caller.request(body)).await)
}

async fn delete_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
) -> Answer<pb::DeleteBankResponse> {
    let request = pb::DeleteBankRequest { name };
    answer(s.bank.delete_bank(caller.request(request)).await)
}

/// `GET /v1/banks/{bank}/export` options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct ExportQuery {
    /// The `next` of the previous page; unset for the first.
    after: Option<String>,
    /// Records per page; unset means 500, at most 5000.
    limit: Option<u32>,
}

async fn export_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
    QueryArgs(query): QueryArgs<ExportQuery>,
) -> Answer<pb::ExportBankResponse> {
    let request = pb::ExportBankRequest {
        name,
        after: query.after,
        limit: query.limit,
    };
    answer(s.bank.export_bank(caller.request(request)).await)
}

async fn import_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::ImportBankRequest>,
) -> Answer<pb::ImportBankResponse> {
    from_path("name", &name, &mut body.name)?;
    answer(s.bank.import_bank(caller.request(body)).await)
}

async fn status(State(s): State<Services>, caller: Caller) -> Answer<pb::StatusResponse> {
    answer(s.node.status(caller.request(pb::StatusRequest {})).await)
}

async fn cluster_status(
    State(s): State<Services>,
    caller: Caller,
) -> Answer<pb::ClusterStatusResponse> {
    answer(
        s.node
            .cluster_status(caller.request(pb::ClusterStatusRequest {}))
            .await,
    )
}

async fn init_cluster(
    State(s): State<Services>,
    caller: Caller,
    JsonBody(body): JsonBody<pb::InitClusterRequest>,
) -> Answer<pb::ClusterStatusResponse> {
    answer(s.node.init_cluster(caller.request(body)).await)
}

async fn join_cluster(
    State(s): State<Services>,
    caller: Caller,
    JsonBody(body): JsonBody<pb::JoinClusterRequest>,
) -> Answer<pb::ClusterStatusResponse> {
    answer(s.node.join_cluster(caller.request(body)).await)
}

async fn remove_member(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(node_id): PathArgs<u64>,
) -> Answer<pb::ClusterStatusResponse> {
    let request = pb::RemoveMemberRequest { node_id };
    answer(s.node.remove_member(caller.request(request)).await)
}

async fn list_keys(State(s): State<Services>, caller: Caller) -> Answer<pb::ListApiKeysResponse> {
    let request = pb::ListApiKeysRequest {};
    answer(s.node.list_api_keys(caller.request(request)).await)
}

async fn create_key(
    State(s): State<Services>,
    caller: Caller,
    JsonBody(body): JsonBody<pb::CreateApiKeyRequest>,
) -> Answer<pb::CreateApiKeyResponse> {
    answer(s.node.create_api_key(caller.request(body)).await)
}

async fn revoke_key(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(id): PathArgs<String>,
) -> Answer<pb::ApiKeyInfo> {
    let request = pb::RevokeApiKeyRequest { id };
    answer(s.node.revoke_api_key(caller.request(request)).await)
}
