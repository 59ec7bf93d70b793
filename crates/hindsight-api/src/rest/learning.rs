//! What recall learns from: feedback on recalled memories and the retrieval log it refers to.

use axum::extract::State;
use axum::routing::{get, post};

use super::extract::{Caller, JsonBody, PathArgs, QueryArgs};
use super::openapi::{DocumentedRouter, Operation};
use super::{answer, Answer, Services};

use crate::pb;
use crate::pb::memory_service_server::MemoryService;

/// The group these operations are listed under in the OpenAPI document.
const TAG: &str = "learning";

pub(super) fn routes(routes: DocumentedRouter<Services>) -> DocumentedRouter<Services> {
    routes
        .route(
            "post",
            "/v1/feedback",
            Operation::new(
                TAG,
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
            Operation::new(TAG, "listRecalls", "Recalls in this node's retrieval log.")
                .query::<pb::ListRecallsRequest>()
                .answer::<pb::ListRecallsResponse>(),
            get(list_recalls),
        )
        .route(
            "get",
            "/v1/recalls/{recall_id}",
            Operation::new(TAG, "getRecall", "One recall from the retrieval log.")
                .answer::<pb::LoggedRecall>(),
            get(get_recall),
        )
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
