use hindsight_core::NodeStatus;

/// A node's status as a client sees it: the node's own report plus what only the server knows.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerStatus {
    pub node: NodeStatus,
    /// True once the node serves requests.
    pub ready: bool,
    /// The server's release.
    pub version: String,
}
