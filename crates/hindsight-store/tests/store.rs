//! Integration tests of the store of record, one module per topic.

#[path = "store/support.rs"]
mod support;

#[path = "store/corruption.rs"]
mod corruption;
#[path = "store/durability.rs"]
mod durability;
#[path = "store/group_commit.rs"]
mod group_commit;
#[path = "store/listener.rs"]
mod listener;
#[path = "store/membership.rs"]
mod membership;
#[path = "store/raft_suite.rs"]
mod raft_suite;
#[path = "store/reads.rs"]
mod reads;
#[path = "store/rejected.rs"]
mod rejected;
#[path = "store/shutdown.rs"]
mod shutdown;
#[path = "store/snapshots.rs"]
mod snapshots;
