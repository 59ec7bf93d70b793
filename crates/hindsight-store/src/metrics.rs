/// A summary of the store's Raft and group-commit state, for status pages and metrics export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreMetrics {
    pub node_id: u64,
    pub group_id: u64,
    pub term: u64,
    pub leader: Option<u64>,
    pub is_leader: bool,
    pub last_log_index: Option<u64>,
    pub applied_index: Option<u64>,
    /// Last log index covered by the current snapshot.
    pub snapshot_index: Option<u64>,
    /// Entries up to here are gone from the log.
    pub purged_index: Option<u64>,
    /// Log entries the proposer wrote, each carrying one or more commands.
    pub entries_proposed: u64,
    pub commands_proposed: u64,
    pub size_on_disk_bytes: u64,
}

impl StoreMetrics {
    /// Commands per proposed entry: 1.0 without group commit.
    pub fn batching_factor(&self) -> f64 {
        if self.entries_proposed == 0 {
            return 0.0;
        }
        self.commands_proposed as f64 / self.entries_proposed as f64
    }
}
