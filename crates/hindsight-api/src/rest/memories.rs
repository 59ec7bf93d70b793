//! Writing memories into a bank and reading, recalling and forgetting them.

use axum::extract::State;
use axum::routing::{delete, get, post};
use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::{Caller, JsonBody, PathArgs, QueryArgs};
use super::openapi::{DocumentedRouter, Operation};
use super::{answer, from_path, Answer, HttpError, Services};

use crate::pb;
use crate::pb::memory_service_server::MemoryService;

/// The group these operations are listed under in the OpenAPI document.
const TAG: &str = "memories";

pub(super) fn routes(routes: DocumentedRouter<Services>) -> DocumentedRouter<Services> {
    routes
        .route(
            "post",
            "/v1/banks/{bank}/memories",
            Operation::new(TAG, "write", "Write one memory into the bank.")
                .body::<pb::WriteRequest>()
                .answer::<pb::WriteResponse>(),
            post(write),
        )
        .route(
            "get",
            "/v1/banks/{bank}/memories",
            Operation::new(
                TAG,
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
                TAG,
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
            Operation::new(TAG, "recallBank", "Recall from the bank.")
                .body::<pb::RecallRequest>()
                .answer::<pb::RecallResponse>(),
            post(recall_bank),
        )
        .route(
            "post",
            "/v1/recall",
            Operation::new(
                TAG,
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
            Operation::new(TAG, "get", "One memory by id.")
                .query::<GetQuery>()
                .answer::<pb::GetResponse>(),
            get(get_memory),
        )
        .route(
            "delete",
            "/v1/memories/{id}",
            Operation::new(
                TAG,
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
                TAG,
                "trace",
                "A memory with its history, related records and signature check.",
            )
            .answer::<pb::TraceResponse>(),
            get(trace),
        )
        .route(
            "post",
            "/v1/memories/{id}/forget",
            Operation::new(TAG, "forgetWithBody", "Forget a memory (as DELETE, with a body).")
                .body::<pb::ForgetRequest>()
                .answer::<pb::ForgetResponse>(),
            post(forget),
        )
        .route(
            "post",
            "/v1/memories/{id}/release",
            Operation::new(
                TAG,
                "releaseQuarantine",
                "Release a quarantined memory (admin on its bank; the reason goes in its history).",
            )
            .body::<pb::ReleaseQuarantineRequest>()
            .answer::<pb::ReleaseQuarantineResponse>(),
            post(release_quarantine),
        )
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

/// `DELETE /v1/memories/{id}` options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct ForgetQuery {
    /// Delete instead of archive, cascading to everything derived from the record.
    hard: bool,
    /// Kept in the record's history.
    reason: Option<String>,
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
