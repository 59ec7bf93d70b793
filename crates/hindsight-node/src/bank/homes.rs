//! Where a bank lives: the Raft group whose store holds its records and takes its commands.
//!
//! Without partitions (`cluster.partitions = 0`) every bank lives in the metadata group, which
//! every node replicates. With partitions, a bank lives in the partition its name hashes to
//! ([`partition_of`]), and only the nodes the placement table names hold it; a memory's id names
//! its partition too ([`id_in_partition`]), so a request that names a memory alone finds it. What
//! is not a bank's stays in the metadata group: API keys, the placement table, cluster membership.

use std::sync::Arc;

use hindsight_core::placement::{id_in_partition, partition_of, partition_of_memory, PartitionId};
use hindsight_core::{BankName, MemoryId, Timestamp};
use hindsight_store::{StateReader, StoreHandle};

use crate::bank::partitions::Partitions;
use crate::error::NodeError;

/// One bank's (or memory's) group, as this node holds it.
#[derive(Clone)]
pub(crate) struct Home {
    pub store: Arc<StoreHandle>,
    /// `None`: the metadata group.
    pub partition: Option<PartitionId>,
}

impl Home {
    pub fn reader(&self) -> &StateReader {
        self.store.reader()
    }
}

/// Makes the ids of one bank's new memories: ids that name the bank's partition, when there are
/// partitions, so that a memory is found from its id alone.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewIds {
    partition: Option<PartitionId>,
}

impl NewIds {
    pub fn next(&self, now: Timestamp) -> MemoryId {
        let id = MemoryId::new(now.millis(), rand::random());
        match self.partition {
            Some(p) => id_in_partition(id, p),
            None => id,
        }
    }
}

/// Resolves banks and memories to the stores that hold them on this node.
#[derive(Clone)]
pub(crate) struct Homes {
    metadata: Arc<StoreHandle>,
    partitions: Option<Arc<Partitions>>,
}

impl Homes {
    pub fn new(metadata: Arc<StoreHandle>, partitions: Option<Arc<Partitions>>) -> Homes {
        Homes {
            metadata,
            partitions,
        }
    }

    /// The partitions banks live in; `None` without (or in a cluster that formed with one group).
    fn partitions(&self) -> Option<&Arc<Partitions>> {
        self.partitions.as_ref().filter(|p| p.active())
    }

    /// The partition `bank` lives in; `None` without partitions.
    pub fn partition_of_bank(&self, bank: &BankName) -> Option<PartitionId> {
        self.partitions()
            .map(|partitions| partition_of(bank.as_str(), partitions.count()))
    }

    /// Ids for new memories of `bank`.
    pub fn new_ids(&self, bank: &BankName) -> NewIds {
        NewIds {
            partition: self.partition_of_bank(bank),
        }
    }

    /// The partition memory `id` lives in; `None` without partitions.
    pub fn partition_of_memory(&self, id: MemoryId) -> Option<PartitionId> {
        self.partitions().map(|_| partition_of_memory(id))
    }

    /// Where `bank` lives, if this node holds a replica of it.
    pub fn of_bank(&self, bank: &BankName) -> Result<Home, NodeError> {
        match self.partition_of_bank(bank) {
            None => Ok(self.metadata_home()),
            Some(p) => self
                .of_partition(p)
                .ok_or_else(|| self.not_here(p, &format!("bank {bank}"))),
        }
    }

    /// Where memory `id` lives, if this node holds a replica of it.
    pub fn of_memory(&self, id: MemoryId) -> Result<Home, NodeError> {
        match self.partition_of_memory(id) {
            None => Ok(self.metadata_home()),
            Some(p) if p >= self.partition_count() => {
                Err(NodeError::NotFound(format!("memory {id} not found")))
            }
            Some(p) => self
                .of_partition(p)
                .ok_or_else(|| self.not_here(p, &format!("memory {id}"))),
        }
    }

    /// Every group holding banks that this node has a replica of: the metadata group without
    /// partitions, the partitions hosted here with them.
    pub fn hosted(&self) -> Vec<Home> {
        match self.partitions() {
            None => vec![self.metadata_home()],
            Some(partitions) => partitions
                .hosted()
                .into_iter()
                .filter_map(|p| self.of_partition(p))
                .collect(),
        }
    }

    pub fn metadata_home(&self) -> Home {
        Home {
            store: self.metadata.clone(),
            partition: None,
        }
    }

    fn of_partition(&self, p: PartitionId) -> Option<Home> {
        let store = self.partitions()?.store(p)?;
        Some(Home {
            store,
            partition: Some(p),
        })
    }

    fn partition_count(&self) -> u32 {
        self.partitions().map_or(0, |p| p.count())
    }

    fn not_here(&self, p: PartitionId, what: &str) -> NodeError {
        NodeError::Unavailable(format!(
            "{what} lives in partition {p}, which this node holds no replica of; send the request to a node that does (`hindsight cluster` shows where each partition lives)"
        ))
    }
}
