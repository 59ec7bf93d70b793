//! The node itself: its status, its API keys and its place in the Raft cluster.

use axum::extract::State;
use axum::routing::{delete, get, post};

use super::extract::{Caller, JsonBody, PathArgs};
use super::openapi::{DocumentedRouter, Operation};
use super::{answer, Answer, Services};

use crate::pb;
use crate::pb::node_service_server::NodeService;

/// The group these operations are listed under in the OpenAPI document.
const TAG: &str = "node";

pub(super) fn routes(routes: DocumentedRouter<Services>) -> DocumentedRouter<Services> {
    routes
        .route(
            "get",
            "/v1/status",
            Operation::new(TAG, "status", "The node's state.").answer::<pb::StatusResponse>(),
            get(status),
        )
        .route(
            "get",
            "/v1/keys",
            Operation::new(TAG, "listApiKeys", "Every API key (admin on every bank).")
                .answer::<pb::ListApiKeysResponse>(),
            get(list_keys),
        )
        .route(
            "post",
            "/v1/keys",
            Operation::new(
                TAG,
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
            Operation::new(TAG, "revokeApiKey", "Revoke an API key at once.")
                .answer::<pb::ApiKeyInfo>(),
            delete(revoke_key),
        )
        .route(
            "get",
            "/v1/cluster",
            Operation::new(
                TAG,
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
                TAG,
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
                TAG,
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
            Operation::new(TAG, "removeMember", "Remove a node from the cluster.")
                .answer::<pb::ClusterStatusResponse>(),
            delete(remove_member),
        )
}

async fn status(State(s): State<Services>, caller: Caller) -> Answer<pb::StatusResponse> {
    answer(s.node.status(caller.request(pb::StatusRequest {})).await)
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
