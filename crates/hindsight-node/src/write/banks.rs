//! The banks a batch writes to, as the write sees them before it plans: where the batch is
//! logged, each bank's config and view (or the creation of a bank that does not exist yet), and
//! each request's closest memories in its bank.

use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::command::Command;
use hindsight_core::write::WriteRequest;
use hindsight_core::{BankConfig, BankName, Kind, MemoryId, Timestamp, ValidationError};

use super::duplicates::Hit;
use super::WriteHost;
use crate::bank::homes::Home;
use crate::bank::BankView;
use crate::error::NodeError;

/// One bank of a batch.
pub(crate) struct BatchBank {
    pub config: BankConfig,
    /// `None` for a bank the batch's log entry creates.
    pub view: Option<Arc<BankView>>,
}

pub(crate) type BatchBanks = HashMap<BankName, BatchBank>;

/// The one group every bank of the batch lives in: a batch is one log entry, and an entry belongs
/// to one group, so a batch over banks of different partitions is refused whole.
pub(crate) fn one_home(
    node: &impl WriteHost,
    requests: &[WriteRequest],
) -> Result<Home, NodeError> {
    let first = &requests[0].bank;
    let home = node.banks().home_of_bank(first)?;
    if let Some(other) = requests
        .iter()
        .map(|r| &r.bank)
        .find(|bank| node.banks().partition_of_bank(bank) != home.partition)
    {
        return Err(ValidationError::Invalid(format!(
            "banks {first} and {other} live in different partitions, and one batch is written to one partition; send a batch per partition (or per bank)"
        ))
        .into());
    }
    Ok(home)
}

/// The batch's banks, with the commands that create those that do not exist yet (when
/// `auto_create_banks` allows), in the order the requests name them.
pub(crate) async fn load(
    node: &impl WriteHost,
    home: &Home,
    requests: &[WriteRequest],
    now: Timestamp,
) -> Result<(BatchBanks, Vec<Command>), NodeError> {
    let mut creations = vec![];
    let mut banks = BatchBanks::new();
    for request in requests {
        if banks.contains_key(&request.bank) {
            continue;
        }
        let entry = match home
            .reader()
            .bank(&request.bank)
            .map_err(NodeError::internal)?
        {
            Some(config) => {
                let view = node.banks().bank_view(&request.bank).await?;
                BatchBank {
                    config,
                    view: Some(view),
                }
            }
            None if node.config().node.auto_create_banks => {
                let config = node
                    .config()
                    .bank_defaults
                    .bank_config(request.bank.clone(), now);
                creations.push(Command::CreateBank {
                    config: config.clone(),
                });
                BatchBank { config, view: None }
            }
            None => {
                return Err(NodeError::NotFound(format!(
                    "bank {} does not exist; create it first (auto_create_banks is off)",
                    request.bank
                )))
            }
        };
        banks.insert(request.bank.clone(), entry);
    }
    Ok((banks, creations))
}

/// Each request's closest memories of its kind in its bank's vector index, with their records as
/// the search saw them. The requests of one bank and kind are searched together, so that a batch
/// shares one pass over a bank that is still scanned exactly.
pub(crate) fn indexed_neighbours(
    banks: &BatchBanks,
    requests: &[WriteRequest],
    vectors: &[Vec<f32>],
) -> Vec<Vec<Hit>> {
    let mut found = vec![Vec::new(); requests.len()];
    let mut groups: HashMap<(&BankName, Kind), Vec<usize>> = HashMap::new();
    for (i, request) in requests.iter().enumerate() {
        groups
            .entry((&request.bank, request.kind))
            .or_default()
            .push(i);
    }
    for ((bank, kind), items) in groups {
        let Some(view) = banks[bank].view.as_deref() else {
            continue;
        };
        let queries: Vec<&[f32]> = items.iter().map(|&i| vectors[i].as_slice()).collect();
        let results = view.with_records(|records| {
            let filter = |id: u128| {
                records
                    .get(&MemoryId(id))
                    .is_some_and(|m| m.kind == kind && !m.status.hidden_by_default())
            };
            let vectors = view.index.vectors();
            let results = vectors
                .search_batch(&queries, 3, vectors.ef_search(), &filter)
                .unwrap_or_default();
            let hit = |(id, similarity): (u128, f32)| Hit {
                id: MemoryId(id),
                similarity,
                record: records.get(&MemoryId(id)).cloned(),
            };
            results
                .into_iter()
                .map(|hits| hits.into_iter().map(hit).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        });
        for (i, hits) in items.into_iter().zip(results) {
            found[i] = hits;
        }
    }
    found
}
