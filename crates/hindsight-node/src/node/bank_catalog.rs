use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::{BankConfig, BankName, Timestamp};

use super::{outcome_error, Node};
use crate::error::NodeError;
use crate::types::{BankInfo, BankPatch};

impl Node {
    pub async fn create_bank(
        &self,
        name: BankName,
        patch: BankPatch,
    ) -> Result<BankConfig, NodeError> {
        let home = self.banks().home_of_bank(&name)?;
        if home
            .reader()
            .bank(&name)
            .map_err(NodeError::internal)?
            .is_some()
        {
            return Err(NodeError::AlreadyExists(format!(
                "bank {name} already exists"
            )));
        }
        let config = apply_patch(
            self.inner
                .config
                .bank_defaults
                .bank_config(name, Timestamp::now()),
            patch,
        )?;
        let (_, outcome) = self
            .banks()
            .propose_to(
                &home,
                Command::CreateBank {
                    config: config.clone(),
                },
            )
            .await?;
        match outcome {
            CommandOutcome::BankCreated => Ok(config),
            CommandOutcome::Rejected { reason, .. } => Err(NodeError::AlreadyExists(reason)),
            other => Err(outcome_error(other)),
        }
    }

    pub async fn get_bank(&self, name: BankName) -> Result<BankInfo, NodeError> {
        let home = self.banks().home_of_bank(&name)?;
        let config = home
            .reader()
            .bank(&name)
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::NotFound(format!("bank {name} does not exist")))?;
        let memory_count = home
            .reader()
            .bank_memory_count(&name)
            .map_err(NodeError::internal)?;
        Ok(BankInfo {
            config,
            memory_count,
        })
    }

    pub async fn list_banks(&self) -> Result<Vec<BankInfo>, NodeError> {
        let mut banks = vec![];
        for home in self.banks().hosted_homes() {
            let reader = home.reader();
            for config in reader.banks().map_err(NodeError::internal)? {
                let memory_count = reader
                    .bank_memory_count(&config.name)
                    .map_err(NodeError::internal)?;
                banks.push(BankInfo {
                    config,
                    memory_count,
                });
            }
        }
        banks.sort_by(|a, b| a.config.name.cmp(&b.config.name));
        Ok(banks)
    }

    pub async fn update_bank(
        &self,
        name: BankName,
        patch: BankPatch,
    ) -> Result<BankConfig, NodeError> {
        let current = self.get_bank(name).await?.config;
        let mut config = apply_patch(current, patch)?;
        config.updated_at = Timestamp::now();
        let (log_index, outcome) = self
            .banks()
            .propose_for_bank(
                &config.name,
                Command::UpdateBank {
                    config: config.clone(),
                },
            )
            .await?;
        match outcome {
            CommandOutcome::BankUpdated => {
                if let Some(handle) = self.inner.banks.context().registry.get(&config.name) {
                    self.banks().wait_indexed(handle.view, log_index).await?;
                }
                Ok(config)
            }
            other => Err(outcome_error(other)),
        }
    }

    /// Deletes the bank and every memory in it. Returns how many memories were removed.
    pub async fn delete_bank(&self, name: BankName) -> Result<usize, NodeError> {
        let (_, outcome) = self
            .banks()
            .propose_for_bank(&name, Command::DeleteBank { name: name.clone() })
            .await?;
        match outcome {
            CommandOutcome::BankDeleted { memories_removed } => {
                self.inner.reviewers.remove(&name);
                let dir = self.inner.banks.context().index_dir(&name);
                if dir.exists() {
                    let _ = std::fs::remove_dir_all(dir);
                }
                Ok(memories_removed)
            }
            other => Err(outcome_error(other)),
        }
    }

    /// Heap bytes the loaded banks may hold together (`index.memory_budget_mb` or its default).
    pub fn memory_budget_bytes(&self) -> u64 {
        self.inner.config.index.memory_budget_bytes()
    }

    /// Heap bytes of `bank` on this node, by part (its records, then its indexes' parts); `None`
    /// when the bank is not loaded here.
    pub fn bank_heap_bytes(&self, bank: &BankName) -> Option<Vec<(&'static str, u64)>> {
        let handle = self.banks().context().registry.get(bank)?;
        Some(handle.view.heap_parts())
    }

    /// The loaded bank's vector index counters: how much of it its graph reaches.
    pub fn bank_vector_stats(&self, bank: &BankName) -> Option<hindsight_index::VectorStats> {
        let handle = self.banks().context().registry.get(bank)?;
        Some(handle.view.index.vectors().stats())
    }
}
fn apply_patch(mut config: BankConfig, patch: BankPatch) -> Result<BankConfig, NodeError> {
    if let Some(v) = patch.description {
        config.description = v;
    }
    if let Some(v) = patch.min_confidence {
        config.min_confidence = v;
    }
    if let Some(v) = patch.dedup_threshold {
        config.dedup_threshold = v;
    }
    if let Some(v) = patch.working_ttl_secs {
        config.working_ttl_secs = v;
    }
    if let Some(v) = patch.collapse_threshold {
        config.collapse_threshold = v;
    }
    if let Some(v) = patch.weights {
        config.weights = v;
    }
    if let Some(v) = patch.max_memories {
        config.max_memories = v;
    }
    if let Some(v) = patch.strategies {
        config.strategies = Some(v);
    }
    if let Some(v) = patch.require_corroboration {
        config.require_corroboration = v;
    }
    if let Some(v) = patch.max_bytes {
        config.max_bytes = v;
    }
    config.validate()?;
    Ok(config)
}
