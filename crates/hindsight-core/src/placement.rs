//! Where banks live in a cluster: banks hash onto a fixed number of partitions, each partition is
//! its own Raft group replicated on a few nodes, and a metadata group replicates the table that
//! says which nodes those are. Partitions move between nodes by "add replica, catch up, remove
//! old", so a move never leaves a partition without a quorum of caught-up replicas.
//!
//! Everything here is pure: the metadata group decides placements with these functions and
//! replicates the result, so every node that runs them on the same input must reach the same
//! answer. That is why every choice below breaks ties by node or partition id and never depends on
//! hash-map order, floating point or the order the caller listed nodes in.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A cluster member. Raft already names members by a `u64`; placement uses the same ids so a
/// replica set can become a Raft voter set without translation.
pub type NodeId = u64;

/// A partition index in `0..partitions`. Banks map to partitions, never straight to nodes, so
/// that moving data between nodes is a per-partition Raft membership change rather than a re-hash
/// of every bank.
pub type PartitionId = u32;

/// The Raft group that replicates the placement table itself. Kept apart from every partition so
/// that placement changes stay possible while any partition is unavailable.
pub const METADATA_GROUP: u64 = 0;

/// The Raft group of partition `p`. Group ids are offset by one so that group 0 can stay the
/// metadata group whatever the partition count.
pub fn group_of(p: PartitionId) -> u64 {
    u64::from(p) + 1
}

/// The partition a Raft group replicates, or `None` for the metadata group (and for ids beyond
/// any partition), so that a message for a group can be routed without knowing the table.
pub fn partition_of_group(g: u64) -> Option<PartitionId> {
    g.checked_sub(1).and_then(|p| PartitionId::try_from(p).ok())
}

/// The partition that holds `bank` (the bank's name as written, e.g.
/// [`BankName::as_str`](crate::BankName::as_str)) among `partitions` partitions.
///
/// The mapping is part of the on-disk contract: a bank's data lives in the partition this returns,
/// so it must not change between releases, compilers or CPUs. Hence a hash spelled out here
/// (FNV-1a, 64-bit, over the UTF-8 bytes) rather than `std`'s `Hasher`, which may change and is
/// randomly keyed. The hash is then mapped onto partitions with jump consistent hashing (Lamping
/// & Veach, 2014) rather than a modulo, so that growing from `n` to `n + 1` partitions moves only
/// about `1/(n + 1)` of the banks, all of them into the new partition.
///
/// `partitions == 0` is a caller error (debug builds panic); release builds treat it as 1 so that
/// routing never panics on a misconfigured table.
pub fn partition_of(bank: &str, partitions: u32) -> PartitionId {
    debug_assert!(partitions > 0, "partition_of needs at least one partition");
    jump_consistent_hash(fnv1a_64(bank.as_bytes()), partitions.max(1))
}

/// How many low bits of a memory id name its partition when a cluster has partitions.
const PARTITION_ID_BITS: u32 = 16;

/// `id` with its lowest bits replaced by partition `p`, so that any node can tell which partition
/// holds a memory from its id alone (get, trace, forget and feedback name a memory, not its bank).
/// The bits replaced are random ones; the creation time in the high bits, and so the id order, stay.
pub fn id_in_partition(id: crate::MemoryId, p: PartitionId) -> crate::MemoryId {
    let mask = (1u128 << PARTITION_ID_BITS) - 1;
    crate::MemoryId((id.0 & !mask) | (u128::from(p) & mask))
}

/// The partition named by a memory id that [`id_in_partition`] made.
pub fn partition_of_memory(id: crate::MemoryId) -> PartitionId {
    (id.0 & ((1u128 << PARTITION_ID_BITS) - 1)) as PartitionId
}

/// FNV-1a, 64-bit. Chosen because it is tiny, has a published specification and test vectors, and
/// so can be reproduced exactly by any client that wants to route a bank itself.
fn fnv1a_64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// Jump consistent hash. The published version computes `(b + 1) * (2^31 / ((key >> 33) + 1))`
/// in double precision; this computes the exact floor of the same quotient in integers
/// (`(b + 1) * 2^31` stays below `2^63` for any `u32` bucket count), so no rounding step can ever
/// differ between platforms. The two agree on the published test vectors.
fn jump_consistent_hash(mut key: u64, buckets: u32) -> u32 {
    let buckets = u64::from(buckets);
    let mut bucket: u64 = 0;
    let mut next: u64 = 0;
    while next < buckets {
        bucket = next;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        next = ((bucket + 1) << 31) / ((key >> 33) + 1);
    }
    // `bucket < buckets <= u32::MAX`, so the conversion cannot fail.
    u32::try_from(bucket).unwrap_or(u32::MAX)
}

/// Why a placement could not be built or is not sound. These are configuration or state errors
/// that an operator has to see, not conditions to retry.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlacementError {
    #[error("a placement needs at least one node")]
    NoNodes,
    #[error("a placement needs at least one partition")]
    ZeroPartitions,
    #[error("the replication factor must be at least 1")]
    ZeroReplication,
    #[error("partition {partition} lists node {node} more than once")]
    DuplicateReplica {
        partition: PartitionId,
        node: NodeId,
    },
    #[error("partition {partition} has {actual} replicas; expected {expected}")]
    ReplicaCount {
        partition: PartitionId,
        expected: usize,
        actual: usize,
    },
}

/// Which nodes replicate which partition. The metadata group replicates this table; every node
/// routes requests and starts or stops its partition replicas from the same copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementTable {
    /// Raised on every change so that nodes can tell a stale table from the current one and
    /// ignore placement decisions made against an older version.
    pub version: u64,
    /// Wanted replicas per partition (R). A cluster with fewer nodes than R gives every partition
    /// all of its nodes; the missing replicas are added as nodes join.
    pub replication: usize,
    /// `partitions[p]` is the replica set of partition `p`, in preference order: the first entry
    /// is the preferred leader, so leadership (and with it write load) can be spread across nodes
    /// independently of where the data sits.
    pub partitions: Vec<Vec<NodeId>>,
}

/// The membership change that takes one partition from its current replica set to its target.
///
/// Execute it in this order so the partition keeps a quorum of caught-up replicas throughout:
/// 1. add every node in `add` as a non-voting learner;
/// 2. wait until each learner has caught up with the leader's log (or installed a snapshot);
/// 3. change the voter set to the target replica set in one membership change (joint consensus),
///    which adds the learners as voters and drops the nodes in `remove`;
/// 4. only once that change is committed, stop the removed replicas and delete their data.
///
/// Removing first, or promoting a learner before it has caught up, would shrink the set of
/// replicas that hold the committed log and can lose the quorum on a single failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionMove {
    pub partition: PartitionId,
    /// Nodes that gain a replica, in the target's preference order.
    pub add: Vec<NodeId>,
    /// Nodes that lose their replica, in the current preference order.
    pub remove: Vec<NodeId>,
}

/// The caller's node list as a set: placement must not depend on the order nodes were listed in
/// or on a node being listed twice.
fn node_set(nodes: &[NodeId]) -> Result<Vec<NodeId>, PlacementError> {
    let mut nodes = nodes.to_vec();
    nodes.sort_unstable();
    nodes.dedup();
    if nodes.is_empty() {
        return Err(PlacementError::NoNodes);
    }
    Ok(nodes)
}

fn greatest_common_divisor(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The most- and the least-loaded member if they differ by two replicas or more, i.e. if moving
/// one replica between them brings the table closer to balance. Ties go to the lowest id.
fn imbalanced_pair(load: &BTreeMap<NodeId, usize>) -> Option<(NodeId, NodeId)> {
    let (&from, &most) = load
        .iter()
        .max_by_key(|&(&node, &count)| (count, std::cmp::Reverse(node)))?;
    let (&to, &least) = load.iter().min_by_key(|&(&node, &count)| (count, node))?;
    (most >= least + 2).then_some((from, to))
}

impl PlacementTable {
    /// The first placement of a cluster: every partition on `min(replication, nodes)` distinct
    /// nodes, with replica counts and preferred-leader counts each differing by at most one
    /// between nodes, so that neither storage nor write load piles up on one node.
    ///
    /// Replica `i` of partition `p` goes to node `(p·k + i + ⌊p / (n/g)⌋) mod n` (k replicas per
    /// partition, n nodes, g = gcd(k, n)). Laying the `k` replicas of consecutive partitions
    /// side by side around the ring of nodes balances replica counts and keeps each partition's
    /// replicas distinct; the shift by one every `n/g` partitions moves the leaders onto the nodes
    /// that the plain layout would never make leader when `k` and `n` share a factor.
    pub fn balanced(
        nodes: &[NodeId],
        partitions: u32,
        replication: usize,
    ) -> Result<PlacementTable, PlacementError> {
        let nodes = node_set(nodes)?;
        if partitions == 0 {
            return Err(PlacementError::ZeroPartitions);
        }
        if replication == 0 {
            return Err(PlacementError::ZeroReplication);
        }
        let n = nodes.len() as u64;
        let k = replication.min(nodes.len()) as u64;
        let cycle = n / greatest_common_divisor(k, n);
        let table = (0..u64::from(partitions))
            .map(|p| {
                (0..k)
                    .map(|i| nodes[((p * k + i + p / cycle) % n) as usize])
                    .collect()
            })
            .collect();
        Ok(PlacementTable {
            version: 1,
            replication,
            partitions: table,
        })
    }

    /// The replica set of `p`, preferred leader first; empty for a partition the table does not
    /// have, so that a request routed with a stale partition count finds no replica instead of
    /// panicking.
    pub fn replicas(&self, p: PartitionId) -> &[NodeId] {
        self.partitions
            .get(p as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The partitions `node` should run a replica of, in partition order; what a node reconciles
    /// its running Raft groups against.
    pub fn partitions_of(&self, node: NodeId) -> Vec<PartitionId> {
        (0..self.partition_count())
            .filter(|&p| self.hosts(node, p))
            .collect()
    }

    /// Whether `node` should hold a replica of `p`; a node refuses to serve a partition it does
    /// not host rather than answer from data that may be stale.
    pub fn hosts(&self, node: NodeId, p: PartitionId) -> bool {
        self.replicas(p).contains(&node)
    }

    /// How many partitions banks hash onto (the `partitions` argument of [`partition_of`]).
    pub fn partition_count(&self) -> u32 {
        u32::try_from(self.partitions.len()).unwrap_or(u32::MAX)
    }

    /// The target table after the member set changes to `nodes` (a node joined or left).
    ///
    /// Every move copies a partition's data over the network, so this keeps every replica that is
    /// still on a member and moves as few as it can while reaching the same bound as
    /// [`balanced`](Self::balanced) for replica counts: replicas on departed nodes go to the
    /// least-loaded members that do not already hold the partition, then single replicas move from
    /// the most- to the least-loaded member until no two members differ by more than one.
    /// Replicas that stay keep their order and new replicas join at the end, so the preferred
    /// leader changes only when its own replica goes. When choosing which replica moves, this
    /// prefers, in order: a replica placed by this same call (redirecting a copy that has not
    /// happened yet costs nothing), a partition that has not lost a replica yet (so each partition
    /// keeps a majority of its old replicas whenever the change allows it), and a replica that is
    /// not the preferred leader (to avoid a leader change during the move). Preferred leaders are
    /// not rebalanced here: that needs no data movement and can be done as a separate step.
    ///
    /// The version is raised only if something changed, so applying the same member set twice is
    /// a no-op.
    pub fn rebalanced(&self, nodes: &[NodeId]) -> Result<PlacementTable, PlacementError> {
        let nodes = node_set(nodes)?;
        if self.partitions.is_empty() {
            return Err(PlacementError::ZeroPartitions);
        }
        if self.replication == 0 {
            return Err(PlacementError::ZeroReplication);
        }
        let members: BTreeSet<NodeId> = nodes.iter().copied().collect();
        let k = self.replication.min(nodes.len());

        let mut touched = vec![false; self.partitions.len()];
        let mut table: Vec<Vec<NodeId>> = self
            .partitions
            .iter()
            .zip(touched.iter_mut())
            .map(|(replicas, touched)| {
                let mut kept: Vec<NodeId> = Vec::with_capacity(k);
                for &node in replicas {
                    if members.contains(&node) && !kept.contains(&node) && kept.len() < k {
                        kept.push(node);
                    }
                }
                *touched = kept.len() < replicas.len();
                kept
            })
            .collect();

        let mut load: BTreeMap<NodeId, usize> = nodes.iter().map(|&node| (node, 0)).collect();
        for replicas in &table {
            for node in replicas {
                *load.entry(*node).or_default() += 1;
            }
        }

        // Replace lost replicas. The fewest-replicas member outside the partition; ties go to
        // the lowest id so every node computes the same table.
        for replicas in &mut table {
            while replicas.len() < k {
                let Some((&node, _)) = load
                    .iter()
                    .filter(|(node, _)| !replicas.contains(node))
                    .min_by_key(|&(&node, &count)| (count, node))
                else {
                    break;
                };
                replicas.push(node);
                *load.entry(node).or_default() += 1;
            }
        }

        // Even out the counts one replica at a time. Each step lowers the sum of squared loads,
        // so this ends; and a member with at least two more replicas than another holds at least
        // two partitions the other does not, so a step is always possible. A replica placed by
        // this call moves first: redirecting a copy that has not happened yet costs nothing.
        while let Some((from, to)) = imbalanced_pair(&load) {
            let Some(p) = (0..table.len())
                .filter(|&p| table[p].contains(&from) && !table[p].contains(&to))
                .min_by_key(|&p| {
                    (
                        self.partitions[p].contains(&from),
                        touched[p],
                        table[p].first() == Some(&from),
                        p,
                    )
                })
            else {
                break;
            };
            table[p].retain(|&node| node != from);
            table[p].push(to);
            touched[p] = true;
            *load.entry(from).or_default() -= 1;
            *load.entry(to).or_default() += 1;
        }

        if table == self.partitions {
            return Ok(self.clone());
        }
        Ok(PlacementTable {
            version: self.version + 1,
            replication: self.replication,
            partitions: table,
        })
    }

    /// The membership changes that take this table to `target`, one per partition whose replica
    /// set differs, in partition order. Only set differences count: a reordering of the same
    /// replicas is a leadership preference, not a move, and needs no data copied. A partition
    /// present in only one of the tables is compared against an empty set.
    pub fn moves_to(&self, target: &PlacementTable) -> Vec<PartitionMove> {
        let count = self.partitions.len().max(target.partitions.len());
        (0..count)
            .filter_map(|index| {
                let partition = PartitionId::try_from(index).ok()?;
                let current = self.replicas(partition);
                let wanted = target.replicas(partition);
                let add: Vec<NodeId> = wanted
                    .iter()
                    .filter(|node| !current.contains(node))
                    .copied()
                    .collect();
                let remove: Vec<NodeId> = current
                    .iter()
                    .filter(|node| !wanted.contains(node))
                    .copied()
                    .collect();
                (!add.is_empty() || !remove.is_empty()).then_some(PartitionMove {
                    partition,
                    add,
                    remove,
                })
            })
            .collect()
    }

    /// Checks a table read from storage or received from another node before acting on it: every
    /// partition must have `min(replication, distinct nodes in the table)` distinct replicas. A
    /// table that fails this would give a partition too few voters to survive a failure, or a
    /// node two votes in one group.
    pub fn validate(&self) -> Result<(), PlacementError> {
        if self.replication == 0 {
            return Err(PlacementError::ZeroReplication);
        }
        if self.partitions.is_empty() {
            return Err(PlacementError::ZeroPartitions);
        }
        let distinct: BTreeSet<NodeId> = self.partitions.iter().flatten().copied().collect();
        if distinct.is_empty() {
            return Err(PlacementError::NoNodes);
        }
        let expected = self.replication.min(distinct.len());
        for (index, replicas) in self.partitions.iter().enumerate() {
            let partition = PartitionId::try_from(index).unwrap_or(PartitionId::MAX);
            let mut seen = BTreeSet::new();
            for &node in replicas {
                if !seen.insert(node) {
                    return Err(PlacementError::DuplicateReplica { partition, node });
                }
            }
            if replicas.len() != expected {
                return Err(PlacementError::ReplicaCount {
                    partition,
                    expected,
                    actual: replicas.len(),
                });
            }
        }
        Ok(())
    }
}

/// What the metadata group's leader decides about the table once a second: the target table for
/// the voters it sees, leaving out the ones gone for too long.
///
/// - With no table yet, the first one over every voter ([`PlacementTable::balanced`]).
/// - Otherwise the nodes to place on are the voters minus those `gone` (silent for longer than
///   `replace_after`, see [`gone_voters`]), unless that leaves fewer than the replicas a
///   partition needs: re-placing then could only shrink partitions, so the table stays as it
///   is. When that node set differs from the nodes the table places replicas on (a node joined,
///   left, went silent or came back), the target is [`PlacementTable::rebalanced`] over it;
///   otherwise the table stands as it is, including an operator's move
///   ([`PlacementTable::with_move`]).
///
/// The caller proposes the target when it differs from `current`.
pub fn target_placement(
    current: Option<&PlacementTable>,
    voters: &[NodeId],
    gone: &BTreeSet<NodeId>,
    partitions: u32,
    replication: usize,
) -> Result<PlacementTable, PlacementError> {
    let Some(table) = current else {
        return PlacementTable::balanced(voters, partitions, replication);
    };
    let voters = node_set(voters)?;
    let mut placeable: Vec<NodeId> = voters
        .iter()
        .filter(|node| !gone.contains(node))
        .copied()
        .collect();
    if placeable.len() < table.replication.min(voters.len()) {
        placeable = voters;
    }
    let placed: BTreeSet<NodeId> = table.partitions.iter().flatten().copied().collect();
    if placed == placeable.iter().copied().collect::<BTreeSet<_>>() {
        return Ok(table.clone());
    }
    table.rebalanced(&placeable)
}

/// The voters to leave out of the placement: those silent for longer than `replace_after`
/// (`None`: never). `silence` is how long each one has gone without answering the leader (a
/// voter not in it counts as answering), measured by this leader only, so a silence longer than
/// `led_for`, the time it has led, is cut to that: a node that has just become leader has not
/// been calling anyone, and counts from its first call.
pub fn gone_voters(
    silence: &BTreeMap<NodeId, std::time::Duration>,
    led_for: std::time::Duration,
    replace_after: Option<std::time::Duration>,
) -> BTreeSet<NodeId> {
    let Some(after) = replace_after else {
        return BTreeSet::new();
    };
    silence
        .iter()
        .filter(|(_, silent)| (**silent).min(led_for) > after)
        .map(|(node, _)| *node)
        .collect()
}

/// Why an operator's move of a replica was refused; nothing changes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MoveError {
    #[error("there is no partition {partition}: the cluster has partitions 0 to {last}")]
    UnknownPartition { partition: PartitionId, last: u32 },
    #[error("node {0} is not a voting member of the cluster")]
    UnknownNode(NodeId),
    #[error("--from and --to both name node {0}")]
    SameNode(NodeId),
    #[error("node {node} already holds a replica of partition {partition}")]
    AlreadyHosts {
        partition: PartitionId,
        node: NodeId,
    },
    #[error("node {node} holds no replica of partition {partition} (its replicas are on nodes {replicas:?})")]
    NotHosting {
        partition: PartitionId,
        node: NodeId,
        replicas: Vec<NodeId>,
    },
    #[error("node {0} would hold no partition, and the cluster places replicas on it again at once; to take a node out of the cluster, use `hindsight leave`")]
    WouldEmpty(NodeId),
}

impl PlacementTable {
    /// The table with partition `p`'s replica on `from` moved to `to` (an operator's choice, which
    /// stands until the cluster's nodes change): `to` joins at the end of the replica list, so the
    /// preferred leader changes only when it is the one moving. `members` are the voters.
    pub fn with_move(
        &self,
        p: PartitionId,
        from: NodeId,
        to: NodeId,
        members: &[NodeId],
    ) -> Result<PlacementTable, MoveError> {
        if p >= self.partition_count() {
            return Err(MoveError::UnknownPartition {
                partition: p,
                last: self.partition_count().saturating_sub(1),
            });
        }
        if from == to {
            return Err(MoveError::SameNode(from));
        }
        if !members.contains(&to) {
            return Err(MoveError::UnknownNode(to));
        }
        // A node that left may still hold replicas in the table: those may be moved off it.
        if !members.contains(&from) && self.partitions_of(from).is_empty() {
            return Err(MoveError::UnknownNode(from));
        }
        let replicas = self.replicas(p);
        if replicas.contains(&to) {
            return Err(MoveError::AlreadyHosts {
                partition: p,
                node: to,
            });
        }
        if !replicas.contains(&from) {
            return Err(MoveError::NotHosting {
                partition: p,
                node: from,
                replicas: replicas.to_vec(),
            });
        }
        if self.partitions_of(from).len() == 1 {
            return Err(MoveError::WouldEmpty(from));
        }
        let mut moved = self.clone();
        let list = &mut moved.partitions[p as usize];
        list.retain(|node| *node != from);
        list.push(to);
        moved.version = self.version + 1;
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica_counts(table: &PlacementTable, nodes: &[NodeId]) -> BTreeMap<NodeId, usize> {
        let mut counts: BTreeMap<NodeId, usize> = nodes.iter().map(|&n| (n, 0)).collect();
        for replicas in &table.partitions {
            for node in replicas {
                *counts.entry(*node).or_default() += 1;
            }
        }
        counts
    }

    fn leader_counts(table: &PlacementTable, nodes: &[NodeId]) -> BTreeMap<NodeId, usize> {
        let mut counts: BTreeMap<NodeId, usize> = nodes.iter().map(|&n| (n, 0)).collect();
        for replicas in &table.partitions {
            *counts.entry(replicas[0]).or_default() += 1;
        }
        counts
    }

    fn spread(counts: &BTreeMap<NodeId, usize>) -> usize {
        let max = counts.values().max().copied().unwrap_or(0);
        let min = counts.values().min().copied().unwrap_or(0);
        max - min
    }

    /// Every partition has `min(R, nodes)` distinct replicas, all on `nodes`, and replica counts
    /// per node differ by at most one.
    fn assert_balanced(table: &PlacementTable, nodes: &[NodeId]) {
        let k = table.replication.min(nodes.len());
        for (p, replicas) in table.partitions.iter().enumerate() {
            let distinct: BTreeSet<_> = replicas.iter().collect();
            assert_eq!(
                distinct.len(),
                replicas.len(),
                "partition {p}: {replicas:?}"
            );
            assert_eq!(replicas.len(), k, "partition {p}: {replicas:?}");
            assert!(
                replicas.iter().all(|n| nodes.contains(n)),
                "partition {p} on a non-member: {replicas:?}"
            );
        }
        let counts = replica_counts(table, nodes);
        assert_eq!(
            counts.len(),
            nodes.len(),
            "replicas on non-members: {counts:?}"
        );
        assert!(spread(&counts) <= 1, "replica counts {counts:?}");
        table.validate().unwrap();
    }

    /// Replicas that changed node between two tables (each one is a copy over the network).
    fn moved_replicas(from: &PlacementTable, to: &PlacementTable) -> usize {
        from.moves_to(to).iter().map(|m| m.add.len()).sum()
    }

    mod group_ids {
        use super::*;

        #[test]
        fn partitions_map_to_groups_after_the_metadata_group() {
            assert_eq!(group_of(0), 1);
            assert_eq!(group_of(41), 42);
            assert_eq!(group_of(u32::MAX), u64::from(u32::MAX) + 1);
            assert_eq!(partition_of_group(METADATA_GROUP), None);
            assert_eq!(partition_of_group(1), Some(0));
            assert_eq!(partition_of_group(u64::from(u32::MAX) + 2), None);
            for p in [0, 1, 7, 1000, u32::MAX] {
                assert_eq!(partition_of_group(group_of(p)), Some(p));
                assert_ne!(group_of(p), METADATA_GROUP);
            }
        }
    }

    mod partition_of_bank {
        use super::*;

        #[test]
        fn fnv1a_matches_the_published_test_vectors() {
            assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
            assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
            assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
        }

        #[test]
        fn jump_hash_matches_the_published_test_vectors() {
            assert_eq!(jump_consistent_hash(1, 1), 0);
            assert_eq!(jump_consistent_hash(42, 57), 43);
            assert_eq!(jump_consistent_hash(256, 1024), 520);
            assert_eq!(jump_consistent_hash(0xDEAD_10CC, 1), 0);
            assert_eq!(jump_consistent_hash(0xDEAD_10CC, 666), 361);
            assert_eq!(jump_consistent_hash(16_045_690_984_833_335_023, 255), 237);
        }

        #[test]
        fn jump_hash_agrees_with_the_floating_point_formulation() {
            fn reference(mut key: u64, buckets: i64) -> i64 {
                let (mut b, mut j) = (-1i64, 0i64);
                while j < buckets {
                    b = j;
                    key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
                    j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
                }
                b
            }
            for i in 0..2_000u64 {
                let key = fnv1a_64(format!("bank-{i}").as_bytes());
                for buckets in [1u32, 2, 3, 16, 17, 64, 1000, 65_536] {
                    assert_eq!(
                        i64::from(jump_consistent_hash(key, buckets)),
                        reference(key, i64::from(buckets)),
                        "key {key} buckets {buckets}"
                    );
                }
            }
        }

        #[test]
        fn pinned_values_never_change() {
            // These are part of the storage contract: a change here strands existing banks.
            // Cross-checked against an independent implementation of the published algorithms.
            assert_eq!(partition_of("acme/agent-7", 16), 4);
            assert_eq!(partition_of("acme/team-sales", 16), 11);
            assert_eq!(partition_of("tenant-0/agent-0", 16), 3);
            assert_eq!(partition_of("acme/agent-7", 256), 117);
            assert_eq!(partition_of("", 16), 13);
            assert_eq!(partition_of("acme/agent-7", 1), 0);
        }

        #[test]
        fn values_stay_below_the_partition_count() {
            for partitions in [1, 2, 3, 16, 17, 100] {
                for i in 0..1_000 {
                    let p = partition_of(&format!("tenant-{i}/agent"), partitions);
                    assert!(p < partitions, "{p} >= {partitions}");
                }
            }
        }

        #[test]
        fn zero_partitions_is_treated_as_one_in_release_builds() {
            if !cfg!(debug_assertions) {
                assert_eq!(partition_of("acme/agent-7", 0), 0);
            }
        }

        fn synthetic_banks() -> Vec<String> {
            (0..100)
                .flat_map(|i| (0..100).map(move |j| format!("tenant-{i}/agent-{j}")))
                .collect()
        }

        #[test]
        fn banks_spread_evenly_over_partitions() {
            let banks = synthetic_banks();
            let mut counts = [0usize; 16];
            for bank in &banks {
                counts[partition_of(bank, 16) as usize] += 1;
            }
            let mean = banks.len() as f64 / 16.0;
            for (p, &count) in counts.iter().enumerate() {
                let off = (count as f64 - mean).abs() / mean;
                assert!(off <= 0.25, "partition {p} holds {count}, mean {mean}");
            }
        }

        #[test]
        fn growing_the_partition_count_moves_few_banks_and_only_into_the_new_partition() {
            let banks = synthetic_banks();
            let mut moved = 0;
            for bank in &banks {
                let before = partition_of(bank, 16);
                let after = partition_of(bank, 17);
                if before != after {
                    assert_eq!(after, 16, "{bank} moved between old partitions");
                    moved += 1;
                }
            }
            let fraction = moved as f64 / banks.len() as f64;
            assert!(
                (0.03..=0.09).contains(&fraction),
                "{moved} of {} banks moved",
                banks.len()
            );
        }
    }

    mod balanced {
        use super::*;

        #[test]
        fn five_nodes_sixteen_partitions_three_replicas() {
            let nodes = [1, 2, 3, 4, 5];
            let table = PlacementTable::balanced(&nodes, 16, 3).unwrap();
            assert_eq!(table.version, 1);
            assert_eq!(table.replication, 3);
            assert_eq!(table.partition_count(), 16);
            assert_balanced(&table, &nodes);
            assert!(table.partitions.iter().all(|r| r.len() == 3));
            let leaders = leader_counts(&table, &nodes);
            assert!(spread(&leaders) <= 1, "leaders {leaders:?}");
        }

        #[test]
        fn input_order_and_duplicates_do_not_matter() {
            let sorted = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let shuffled = PlacementTable::balanced(&[4, 2, 5, 1, 3, 2, 4], 16, 3).unwrap();
            assert_eq!(sorted, shuffled);
        }

        #[test]
        fn fewer_nodes_than_replicas_puts_every_partition_on_every_node() {
            let table = PlacementTable::balanced(&[1, 2], 16, 3).unwrap();
            assert_eq!(table.replication, 3);
            for replicas in &table.partitions {
                let set: BTreeSet<_> = replicas.iter().copied().collect();
                assert_eq!(set, BTreeSet::from([1, 2]));
            }
            assert_balanced(&table, &[1, 2]);
            assert!(spread(&leader_counts(&table, &[1, 2])) <= 1);
        }

        #[test]
        fn replicas_and_leaders_are_balanced_for_many_shapes() {
            // Includes node counts that share a factor with the replica count (3 of 6, 2 of 4),
            // where a plain round-robin would give some nodes no leaders at all.
            for n in 1..=9u64 {
                let nodes: Vec<NodeId> = (1..=n).map(|i| i * 10).collect();
                for partitions in 1..=40 {
                    for replication in 1..=5 {
                        let table =
                            PlacementTable::balanced(&nodes, partitions, replication).unwrap();
                        assert_balanced(&table, &nodes);
                        let leaders = leader_counts(&table, &nodes);
                        assert!(
                            spread(&leaders) <= 1,
                            "n={n} P={partitions} R={replication}: leaders {leaders:?}"
                        );
                    }
                }
            }
        }
    }

    mod lookups {
        use super::*;

        #[test]
        fn replicas_hosts_and_partitions_of_agree() {
            let table = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            for node in 1..=5 {
                let hosted = table.partitions_of(node);
                for p in 0..16 {
                    assert_eq!(hosted.contains(&p), table.hosts(node, p));
                    assert_eq!(table.hosts(node, p), table.replicas(p).contains(&node));
                }
            }
            let total: usize = (1..=5).map(|n| table.partitions_of(n).len()).sum();
            assert_eq!(total, 48);
            assert!(table.partitions_of(99).is_empty());
        }

        #[test]
        fn unknown_partitions_have_no_replicas() {
            let table = PlacementTable::balanced(&[1, 2, 3], 4, 3).unwrap();
            assert!(table.replicas(4).is_empty());
            assert!(!table.hosts(1, 4));
        }

        #[test]
        fn table_round_trips_through_json() {
            let table = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let json = serde_json::to_string(&table).unwrap();
            assert_eq!(
                serde_json::from_str::<PlacementTable>(&json).unwrap(),
                table
            );
        }
    }

    mod rebalanced {
        use super::*;

        #[test]
        fn adding_a_node_moves_exactly_its_share() {
            let before = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let nodes = [1, 2, 3, 4, 5, 6];
            let after = before.rebalanced(&nodes).unwrap();
            assert_balanced(&after, &nodes);
            assert_eq!(after.version, before.version + 1);
            // 48 replicas over 6 nodes is 8 each; node 6 starts with none.
            assert_eq!(replica_counts(&after, &nodes)[&6], 8);
            assert_eq!(moved_replicas(&before, &after), 8);
            for m in before.moves_to(&after) {
                assert_eq!(m.add, vec![6]);
                assert_eq!(m.remove.len(), 1, "{m:?}");
            }
        }

        #[test]
        fn adding_a_node_keeps_a_majority_of_every_replica_set() {
            let before = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let after = before.rebalanced(&[1, 2, 3, 4, 5, 6]).unwrap();
            for p in 0..16 {
                let kept = before
                    .replicas(p)
                    .iter()
                    .filter(|n| after.hosts(**n, p))
                    .count();
                assert!(kept >= 2, "partition {p} kept {kept} of 3");
            }
        }

        #[test]
        fn surviving_replicas_keep_their_order_and_new_ones_come_last() {
            let before = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let after = before.rebalanced(&[1, 2, 3, 4, 5, 6]).unwrap();
            for p in 0..16 {
                let old = before.replicas(p);
                let new = after.replicas(p);
                let surviving: Vec<NodeId> =
                    old.iter().copied().filter(|n| new.contains(n)).collect();
                assert_eq!(
                    &new[..surviving.len()],
                    surviving.as_slice(),
                    "partition {p}"
                );
            }
        }

        #[test]
        fn moves_avoid_the_preferred_leader_when_they_can() {
            let before = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let after = before.rebalanced(&[1, 2, 3, 4, 5, 6]).unwrap();
            for p in 0..16 {
                assert_eq!(before.replicas(p)[0], after.replicas(p)[0], "partition {p}");
            }
        }

        #[test]
        fn removing_a_node_reassigns_only_its_replicas() {
            let before = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let nodes = [1, 2, 4, 5];
            let after = before.rebalanced(&nodes).unwrap();
            assert_balanced(&after, &nodes);
            assert_eq!(after.version, before.version + 1);
            assert!(after.partitions_of(3).is_empty());
            for p in 0..16 {
                for node in before.replicas(p).iter().filter(|&&n| n != 3) {
                    assert!(after.hosts(*node, p), "partition {p} lost node {node}");
                }
            }
            assert_eq!(
                moved_replicas(&before, &after),
                before.partitions_of(3).len()
            );
        }

        #[test]
        fn same_members_change_nothing() {
            let table = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let again = table.rebalanced(&[5, 4, 3, 2, 1]).unwrap();
            assert_eq!(again, table);
            assert_eq!(again.version, table.version);
            assert!(table.moves_to(&again).is_empty());
        }

        #[test]
        fn growing_past_the_replication_factor_fills_missing_replicas() {
            let small = PlacementTable::balanced(&[1, 2], 8, 3).unwrap();
            let nodes = [1, 2, 3];
            let grown = small.rebalanced(&nodes).unwrap();
            assert_balanced(&grown, &nodes);
            for m in small.moves_to(&grown) {
                assert_eq!(m.add, vec![3]);
                assert!(m.remove.is_empty());
            }
        }

        #[test]
        fn shrinking_below_the_replication_factor_keeps_every_partition_on_what_is_left() {
            let table = PlacementTable::balanced(&[1, 2, 3], 8, 3).unwrap();
            let shrunk = table.rebalanced(&[2]).unwrap();
            assert!(shrunk.partitions.iter().all(|r| r == &vec![2]));
            shrunk.validate().unwrap();
        }

        #[test]
        fn stays_balanced_through_a_series_of_joins_and_departures() {
            let mut nodes: Vec<NodeId> = vec![1, 2, 3];
            let mut table = PlacementTable::balanced(&nodes, 32, 3).unwrap();
            let steps: [(bool, NodeId); 8] = [
                (true, 4),
                (true, 5),
                (false, 2),
                (true, 6),
                (true, 7),
                (false, 1),
                (false, 5),
                (true, 8),
            ];
            for (join, node) in steps {
                if join {
                    nodes.push(node);
                } else {
                    nodes.retain(|&n| n != node);
                }
                let next = table.rebalanced(&nodes).unwrap();
                assert_balanced(&next, &nodes);
                assert_eq!(next.version, table.version + 1);
                assert_eq!(next, next.rebalanced(&nodes).unwrap());
                table = next;
            }
        }

        #[test]
        fn is_deterministic() {
            let table = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            assert_eq!(
                table.rebalanced(&[6, 1, 2, 3, 4, 5]).unwrap(),
                table.rebalanced(&[1, 2, 3, 4, 5, 6, 6]).unwrap()
            );
        }
    }

    mod moves {
        use super::*;

        #[test]
        fn lists_exactly_the_partitions_that_differ() {
            let from = PlacementTable {
                version: 1,
                replication: 3,
                partitions: vec![vec![1, 2, 3], vec![2, 3, 4], vec![3, 4, 1], vec![4, 1, 2]],
            };
            let to = PlacementTable {
                version: 2,
                replication: 3,
                partitions: vec![
                    vec![1, 2, 3], // unchanged
                    vec![2, 3, 5], // 4 -> 5
                    vec![4, 3, 1], // reordered only: not a move
                    vec![5, 6, 2], // 4, 1 -> 5, 6
                ],
            };
            assert_eq!(
                from.moves_to(&to),
                vec![
                    PartitionMove {
                        partition: 1,
                        add: vec![5],
                        remove: vec![4],
                    },
                    PartitionMove {
                        partition: 3,
                        add: vec![5, 6],
                        remove: vec![4, 1],
                    },
                ]
            );
            assert!(from.moves_to(&from).is_empty());
        }

        #[test]
        fn rebalanced_moves_account_for_every_difference() {
            let before = PlacementTable::balanced(&[1, 2, 3, 4, 5], 16, 3).unwrap();
            let after = before.rebalanced(&[1, 2, 4, 5, 6]).unwrap();
            let moves = before.moves_to(&after);
            for p in 0..16 {
                let old: BTreeSet<_> = before.replicas(p).iter().copied().collect();
                let new: BTreeSet<_> = after.replicas(p).iter().copied().collect();
                match moves.iter().find(|m| m.partition == p) {
                    None => assert_eq!(old, new, "partition {p}"),
                    Some(m) => {
                        let mut applied = old.clone();
                        applied.extend(&m.add);
                        for node in &m.remove {
                            applied.remove(node);
                        }
                        assert_eq!(applied, new, "partition {p}");
                    }
                }
            }
            assert!(moves.windows(2).all(|w| w[0].partition < w[1].partition));
        }
    }

    mod errors {
        use super::*;

        #[test]
        fn balanced_rejects_empty_input() {
            assert_eq!(
                PlacementTable::balanced(&[], 16, 3),
                Err(PlacementError::NoNodes)
            );
            assert_eq!(
                PlacementTable::balanced(&[1, 2, 3], 0, 3),
                Err(PlacementError::ZeroPartitions)
            );
            assert_eq!(
                PlacementTable::balanced(&[1, 2, 3], 16, 0),
                Err(PlacementError::ZeroReplication)
            );
        }

        #[test]
        fn rebalanced_rejects_an_empty_member_set() {
            let table = PlacementTable::balanced(&[1, 2, 3], 16, 3).unwrap();
            assert_eq!(table.rebalanced(&[]), Err(PlacementError::NoNodes));
        }

        #[test]
        fn validate_catches_duplicates_and_short_replica_sets() {
            let mut table = PlacementTable::balanced(&[1, 2, 3, 4], 4, 3).unwrap();
            table.validate().unwrap();

            let mut duplicated = table.clone();
            duplicated.partitions[2] = vec![1, 1, 2];
            assert_eq!(
                duplicated.validate(),
                Err(PlacementError::DuplicateReplica {
                    partition: 2,
                    node: 1
                })
            );

            table.partitions[1].pop();
            assert_eq!(
                table.validate(),
                Err(PlacementError::ReplicaCount {
                    partition: 1,
                    expected: 3,
                    actual: 2
                })
            );

            let empty = PlacementTable {
                version: 1,
                replication: 3,
                partitions: vec![],
            };
            assert_eq!(empty.validate(), Err(PlacementError::ZeroPartitions));
        }
    }
    mod replacement {
        use std::time::Duration;

        use super::*;

        fn secs(s: u64) -> Duration {
            Duration::from_secs(s)
        }

        #[test]
        fn a_voter_silent_longer_than_the_threshold_is_gone() {
            let silence = BTreeMap::from([(2, secs(301)), (3, secs(299)), (4, secs(10_000))]);
            assert_eq!(
                gone_voters(&silence, secs(100_000), Some(secs(300))),
                BTreeSet::from([2, 4])
            );
            assert!(gone_voters(&silence, secs(100_000), None).is_empty());
        }

        #[test]
        fn a_new_leader_counts_silence_from_when_it_began_to_lead() {
            // An answer heard an hour ago, before this node led, says nothing about now.
            let silence = BTreeMap::from([(2, secs(3_600))]);
            assert!(gone_voters(&silence, secs(200), Some(secs(300))).is_empty());
            assert_eq!(
                gone_voters(&silence, secs(301), Some(secs(300))),
                BTreeSet::from([2])
            );
        }

        #[test]
        fn the_first_table_places_on_every_voter() {
            let target = target_placement(None, &[1, 2, 3, 4], &BTreeSet::from([4]), 8, 3).unwrap();
            assert_eq!(
                target,
                PlacementTable::balanced(&[1, 2, 3, 4], 8, 3).unwrap()
            );
        }

        #[test]
        fn a_gone_node_loses_its_replicas_and_every_partition_keeps_three() {
            let voters = [1, 2, 3, 4];
            let table = PlacementTable::balanced(&voters, 8, 3).unwrap();
            let target =
                target_placement(Some(&table), &voters, &BTreeSet::from([4]), 8, 3).unwrap();
            assert_eq!(target.version, table.version + 1);
            assert!(target.partitions_of(4).is_empty(), "{target:?}");
            assert_balanced(&target, &[1, 2, 3]);
            for m in table.moves_to(&target) {
                assert_eq!(
                    m.remove,
                    vec![4],
                    "only the gone node's replicas move: {m:?}"
                );
                assert_eq!(m.add.len(), 1);
            }
            // The same decision a second later changes nothing.
            assert_eq!(
                target_placement(Some(&target), &voters, &BTreeSet::from([4]), 8, 3).unwrap(),
                target
            );
        }

        #[test]
        fn a_node_that_comes_back_is_placed_on_again() {
            let voters = [1, 2, 3, 4];
            let table = PlacementTable::balanced(&voters, 8, 3).unwrap();
            let without =
                target_placement(Some(&table), &voters, &BTreeSet::from([4]), 8, 3).unwrap();
            let back = target_placement(Some(&without), &voters, &BTreeSet::new(), 8, 3).unwrap();
            assert_eq!(back.version, without.version + 1);
            assert_balanced(&back, &voters);
            for m in without.moves_to(&back) {
                assert_eq!(m.add, vec![4], "replicas move back onto node 4 only: {m:?}");
            }
        }

        #[test]
        fn too_few_nodes_left_to_hold_every_replica_keep_the_table() {
            let voters = [1, 2, 3];
            let table = PlacementTable::balanced(&voters, 4, 3).unwrap();
            let target =
                target_placement(Some(&table), &voters, &BTreeSet::from([3]), 4, 3).unwrap();
            assert_eq!(
                target, table,
                "re-placing could only shrink partitions to 2 replicas"
            );
            let five = [1, 2, 3, 4, 5];
            let table = PlacementTable::balanced(&five, 6, 3).unwrap();
            let target =
                target_placement(Some(&table), &five, &BTreeSet::from([4, 5, 3]), 6, 3).unwrap();
            assert_eq!(target, table);
        }

        #[test]
        fn an_unchanged_node_set_keeps_an_operators_move() {
            let voters = [1, 2, 3, 4];
            let table = PlacementTable::balanced(&voters, 8, 3).unwrap();
            let p = 0;
            let from = table.replicas(p)[0];
            let to = *voters.iter().find(|n| !table.hosts(**n, p)).unwrap();
            let moved = table.with_move(p, from, to, &voters).unwrap();
            assert_eq!(
                target_placement(Some(&moved), &voters, &BTreeSet::new(), 8, 3).unwrap(),
                moved
            );
        }

        #[test]
        fn a_move_takes_one_replica_and_keeps_the_others_in_order() {
            let voters = [1, 2, 3, 4];
            let table = PlacementTable::balanced(&voters, 8, 3).unwrap();
            let p = 1;
            let replicas = table.replicas(p).to_vec();
            let to = *voters.iter().find(|n| !table.hosts(**n, p)).unwrap();
            let moved = table.with_move(p, replicas[0], to, &voters).unwrap();
            assert_eq!(moved.version, table.version + 1);
            assert_eq!(moved.replicas(p), &[replicas[1], replicas[2], to]);
            moved.validate().unwrap();
            for other in (0..8).filter(|q| *q != p) {
                assert_eq!(moved.replicas(other), table.replicas(other));
            }
        }

        #[test]
        fn a_bad_move_is_refused_and_says_why() {
            let voters = [1, 2, 3, 4];
            let table = PlacementTable::balanced(&voters, 8, 3).unwrap();
            let p = 2;
            let inside = table.replicas(p)[0];
            let outside = *voters.iter().find(|n| !table.hosts(**n, p)).unwrap();
            assert_eq!(
                table.with_move(8, inside, outside, &voters),
                Err(MoveError::UnknownPartition {
                    partition: 8,
                    last: 7
                })
            );
            assert_eq!(
                table.with_move(p, inside, 9, &voters),
                Err(MoveError::UnknownNode(9))
            );
            assert_eq!(
                table.with_move(p, 9, outside, &voters),
                Err(MoveError::UnknownNode(9))
            );
            assert_eq!(
                table.with_move(p, inside, inside, &voters),
                Err(MoveError::SameNode(inside))
            );
            assert_eq!(
                table.with_move(p, inside, table.replicas(p)[1], &voters),
                Err(MoveError::AlreadyHosts {
                    partition: p,
                    node: table.replicas(p)[1]
                })
            );
            // Source not hosting, and the move that would leave a node with nothing.
            let not_hosting = PlacementTable {
                version: 3,
                replication: 2,
                partitions: vec![vec![1, 2], vec![3, 4]],
            };
            assert_eq!(
                not_hosting.with_move(0, 3, 4, &voters),
                Err(MoveError::NotHosting {
                    partition: 0,
                    node: 3,
                    replicas: vec![1, 2]
                })
            );
            // Node 3's only replica would leave it with none.
            assert_eq!(
                not_hosting.with_move(1, 3, 1, &voters),
                Err(MoveError::WouldEmpty(3))
            );
        }
    }

    #[test]
    fn a_memory_id_names_its_partition_and_keeps_its_time() {
        let id = crate::MemoryId::new(1_800_000_000_000, u128::MAX);
        let tagged = id_in_partition(id, 37);
        assert_eq!(partition_of_memory(tagged), 37);
        assert_eq!(tagged.0 >> 80, id.0 >> 80, "the creation time is kept");
        let later = id_in_partition(crate::MemoryId::new(1_800_000_000_001, 0), 0);
        assert!(later > tagged, "ids still sort by creation time");
        assert_eq!(partition_of_memory(id_in_partition(tagged, 255)), 255);
    }
}
