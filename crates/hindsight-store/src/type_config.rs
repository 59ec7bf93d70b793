use crate::response::CommandResponse;

openraft::declare_raft_types!(
    /// The openraft types of Hindsight's store of record: log entries carry core `Command`s and
    /// snapshots travel as files, read and written piece by piece. A command is shared, not copied, between the
    /// entry appended, the recent entries kept beside the log and the entries read back for
    /// replication and apply; it is encoded exactly as the command itself.
    pub TypeConfig:
        D = std::sync::Arc<hindsight_core::Command>,
        R = CommandResponse,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);
