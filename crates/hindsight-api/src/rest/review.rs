//! A bank's review: running it, the conflict queue it leaves, and reflection on finished tasks.

use axum::extract::State;
use axum::routing::{get, post};
use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::{Caller, JsonBody, PathArgs, QueryArgs};
use super::openapi::{DocumentedRouter, Operation};
use super::{answer, from_path, Answer, HttpError, Services};

use crate::pb;
use crate::pb::memory_service_server::MemoryService;

/// The group these operations are listed under in the OpenAPI document.
const TAG: &str = "review";

pub(super) fn routes(routes: DocumentedRouter<Services>) -> DocumentedRouter<Services> {
    routes
        .route(
            "post",
            "/v1/banks/{bank}/review",
            Operation::new(TAG, "review", "Run the bank's review now.")
                .body::<pb::ReviewRequest>()
                .answer::<pb::ReviewResponse>(),
            post(review),
        )
        .route(
            "get",
            "/v1/banks/{bank}/conflicts",
            Operation::new(TAG, "listConflicts", "The bank's conflict queue.")
                .query::<ConflictsQuery>()
                .answer::<pb::ListConflictsResponse>(),
            get(conflicts),
        )
        .route(
            "post",
            "/v1/banks/{bank}/conflicts/{id}/resolve",
            Operation::new(
                TAG,
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
                TAG,
                "reflect",
                "Turn a finished task's trace into the memories worth keeping.",
            )
            .body::<pb::ReflectRequest>()
            .answer::<pb::ReflectResponse>(),
            post(reflect),
        )
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

/// `GET /v1/banks/{bank}/conflicts` options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct ConflictsQuery {
    /// Also list the conflicts already resolved.
    include_resolved: bool,
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
