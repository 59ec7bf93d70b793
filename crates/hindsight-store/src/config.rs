use std::sync::Arc;
use std::time::Duration;

use openraft::{Config, SnapshotPolicy};

use crate::error::StoreError;

/// Settings of one node's store. The defaults suit a single node on local disk.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreConfig {
    pub node_id: u64,
    /// The address peers reach this node at; recorded in the cluster membership on first start.
    pub advertise_addr: String,
    /// The Raft group this store serves. One group today; sharding gives each partition its own.
    pub group_id: u64,
    /// sled page cache per database (the log and the state each get one).
    pub cache_capacity_bytes: u64,
    /// Build a snapshot once this many entries were applied since the last one.
    pub snapshot_every_entries: u64,
    /// Entries kept in the log behind a snapshot, so a lagging follower can catch up from the log
    /// instead of a full snapshot transfer.
    pub max_in_snapshot_log_to_keep: u64,
    pub heartbeat_interval: Duration,
    pub election_timeout_min: Duration,
    pub election_timeout_max: Duration,
    /// Commands per group-commit entry.
    pub max_batch_commands: usize,
    /// Encoded command bytes per group-commit entry; the batch closes once it reaches this.
    pub max_batch_bytes: usize,
    /// Group-commit entries proposed but not yet applied. More overlaps one entry's fsync with the
    /// next one's proposal; fewer makes bigger batches.
    pub max_in_flight_entries: usize,
    /// How long `open` waits for the node to lead (single node) before giving up.
    pub startup_timeout: Duration,
    /// How long `trigger_snapshot` waits for the snapshot to be built.
    pub snapshot_timeout: Duration,
    /// On a directory with no log, make this node a one-member cluster. Off for a node that is
    /// to join an existing cluster: initialising it would give it a history of its own.
    pub initialize_if_empty: bool,
    /// How long a proposal or a linearizable read waits for a leader to be known (and for a
    /// follower's state to catch up with the leader's read index) before giving up.
    pub leader_wait: Duration,
    /// Open a log whose membership no longer counts this node (its group removed it while it was
    /// down) as a non-member that waits to be added back or closed, instead of refusing to start.
    /// For partition replicas, which the placement moves between nodes; a node's main store
    /// keeps the refusal, which catches a data directory started with another node's id.
    pub open_when_removed: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            node_id: 1,
            advertise_addr: "127.0.0.1:7400".into(),
            group_id: 0,
            cache_capacity_bytes: 64 * 1024 * 1024,
            snapshot_every_entries: 5_000,
            max_in_snapshot_log_to_keep: 1_000,
            heartbeat_interval: Duration::from_millis(100),
            election_timeout_min: Duration::from_millis(500),
            election_timeout_max: Duration::from_millis(1_000),
            max_batch_commands: 512,
            max_batch_bytes: 4 * 1024 * 1024,
            max_in_flight_entries: 1,
            startup_timeout: Duration::from_secs(10),
            snapshot_timeout: Duration::from_secs(60),
            initialize_if_empty: true,
            leader_wait: Duration::from_secs(10),
            open_when_removed: false,
        }
    }
}

impl StoreConfig {
    pub(crate) fn raft_config(&self) -> Result<Arc<Config>, StoreError> {
        if self.max_batch_commands == 0 || self.max_batch_bytes == 0 {
            return Err(StoreError::Config(
                "max_batch_commands and max_batch_bytes must be at least 1".into(),
            ));
        }
        if self.max_in_flight_entries == 0 {
            return Err(StoreError::Config(
                "max_in_flight_entries must be at least 1".into(),
            ));
        }
        if self.snapshot_every_entries == 0 {
            return Err(StoreError::Config(
                "snapshot_every_entries must be at least 1".into(),
            ));
        }
        let millis = |d: Duration| d.as_millis().min(u64::MAX as u128) as u64;
        let config = Config {
            cluster_name: format!("hindsight-g{}", self.group_id),
            heartbeat_interval: millis(self.heartbeat_interval),
            election_timeout_min: millis(self.election_timeout_min),
            election_timeout_max: millis(self.election_timeout_max),
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_every_entries),
            max_in_snapshot_log_to_keep: self.max_in_snapshot_log_to_keep,
            // The 3 MiB default chunk overflows gRPC's 4 MiB decode limit once framed, and the 200 ms
            // default install timeout is too short for a real snapshot.
            snapshot_max_chunk_size: 1024 * 1024,
            install_snapshot_timeout: 10_000,
            // An entry may carry a group-commit batch of up to `max_batch_bytes`; fewer entries per
            // AppendEntries keep one message well inside the transport's size limit.
            max_payload_entries: 16,
            ..Config::default()
        };
        let config = config
            .validate()
            .map_err(|e| StoreError::Config(e.to_string()))?;
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_map_to_raft() {
        let raft = StoreConfig::default().raft_config().unwrap();
        assert_eq!(raft.snapshot_policy, SnapshotPolicy::LogsSinceLast(5_000));
        assert_eq!(raft.heartbeat_interval, 100);
    }

    #[test]
    fn inverted_election_timeouts_are_refused() {
        let config = StoreConfig {
            election_timeout_min: Duration::from_millis(900),
            election_timeout_max: Duration::from_millis(300),
            ..StoreConfig::default()
        };
        let err = config.raft_config().unwrap_err();
        assert!(matches!(err, StoreError::Config(_)), "{err}");
    }
}
