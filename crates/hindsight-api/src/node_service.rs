use hindsight_node::Node;
use tonic::{Request, Response, Status};

use crate::pb;
use crate::pb::node_service_server::NodeService;
use crate::server_status::ServerStatus;

/// `hindsight.v1.NodeService` over a node.
#[derive(Clone)]
pub struct NodeApi {
    node: Node,
}

impl NodeApi {
    pub fn new(node: Node) -> Self {
        NodeApi { node }
    }
}

#[tonic::async_trait]
impl NodeService for NodeApi {
    async fn status(
        &self,
        _request: Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusResponse>, Status> {
        let status = ServerStatus {
            node: self.node.status(),
            ready: self.node.is_ready(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        };
        Ok(Response::new((&status).into()))
    }
}
