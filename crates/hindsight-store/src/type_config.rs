use std::io::Cursor;

use crate::response::CommandResponse;

openraft::declare_raft_types!(
    /// The openraft types of Hindsight's store of record: log entries carry core `Command`s and
    /// snapshots travel as one in-memory buffer.
    pub TypeConfig:
        D = hindsight_core::Command,
        R = CommandResponse,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);
