//! Applying a [`Command`] to state. Pure: the store supplies reads and takes writes through
//! [`StateMut`], and every replica that applies the same log reaches the same state.
//!
//! [`apply`] dispatches a command to the rules of its family, one file each: `write` (writes and
//! merges), `lifecycle` (forgetting, expiry and recorded access), `quarantine`, `feedback`,
//! `review` (review cycles and conflict resolution) and `import`. The rules for banks, API keys
//! and the placement table are short enough to stay in the dispatcher. The helpers every family
//! records its changes with are here too.

mod feedback;
mod import;
mod lifecycle;
mod quarantine;
mod review;
#[cfg(test)]
mod tests;
mod write;

use std::sync::Arc;

use crate::auth::ApiKey;
use crate::bank::{BankConfig, BankName};
use crate::command::{Command, CommandOutcome};
use crate::history::{FieldChange, HistoryEntry, HistoryKind};
use crate::id::MemoryId;
use crate::memory::{Memory, Status, StatusChange};
use crate::placement::PlacementTable;
use crate::review::{Conflict, ConflictResolution, ReviewState};
use crate::time::Timestamp;

pub use lifecycle::RESTORED_CONFIDENCE;
use review::ReviewParts;

/// State access the apply rules need. Writes must be visible to later reads of the same apply.
pub trait StateMut {
    fn memory(&self, id: MemoryId) -> Option<Memory>;
    fn bank(&self, name: &BankName) -> Option<BankConfig>;
    fn bank_memory_ids(&self, bank: &BankName) -> Vec<MemoryId>;
    fn put_memory(&mut self, memory: &Memory);
    fn remove_memory(&mut self, memory: &Memory);
    fn append_history(&mut self, entry: &HistoryEntry);
    fn remove_history(&mut self, id: MemoryId);
    fn put_bank(&mut self, config: &BankConfig);
    fn remove_bank(&mut self, name: &BankName);
    fn review_state(&self, bank: &BankName) -> Option<ReviewState>;
    fn put_review_state(&mut self, bank: &BankName, state: &ReviewState);
    fn conflict(&self, bank: &BankName, id: u64) -> Option<Conflict>;
    fn put_conflict(&mut self, conflict: &Conflict);
    fn api_key(&self, id: &str) -> Option<ApiKey>;
    fn put_api_key(&mut self, key: &ApiKey);
    fn placement(&self) -> Option<PlacementTable>;
    fn put_placement(&mut self, table: &PlacementTable);
}

/// What an apply changed, so derived indexes on every replica can follow.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    MemoryUpserted(Box<Memory>),
    MemoryRemoved {
        bank: BankName,
        id: MemoryId,
    },
    BankChanged(BankName),
    BankRemoved(BankName),
    /// The vector a write's entry carried for a memory it created, and the model that made it.
    /// Comes right before that memory's `MemoryUpserted`.
    VectorCarried {
        bank: BankName,
        id: MemoryId,
        model: Arc<str>,
        vector: Vec<f32>,
    },
}

pub fn apply(
    state: &mut impl StateMut,
    command: &Command,
    log_index: u64,
    effects: &mut Vec<Effect>,
) -> CommandOutcome {
    let mut ctx = Ctx {
        state,
        log_index,
        effects,
    };
    ctx.apply(command)
}

struct Ctx<'a, S: StateMut> {
    state: &'a mut S,
    log_index: u64,
    effects: &'a mut Vec<Effect>,
}

impl<S: StateMut> Ctx<'_, S> {
    fn apply(&mut self, command: &Command) -> CommandOutcome {
        match command {
            Command::CreateBank { config } => {
                if self.state.bank(&config.name).is_some() {
                    return rejected(format!("bank {} already exists", config.name), false);
                }
                self.state.put_bank(config);
                self.effects.push(Effect::BankChanged(config.name.clone()));
                CommandOutcome::BankCreated
            }
            Command::ImportBank {
                bank,
                config,
                memories,
                history,
                conflicts,
            } => self.import(bank, config.as_ref(), memories, history, conflicts),
            Command::UpdateBank { config } => {
                if self.state.bank(&config.name).is_none() {
                    return rejected(format!("bank {} does not exist", config.name), true);
                }
                self.state.put_bank(config);
                self.effects.push(Effect::BankChanged(config.name.clone()));
                CommandOutcome::BankUpdated
            }
            Command::DeleteBank { name } => {
                if self.state.bank(name).is_none() {
                    return rejected(format!("bank {name} does not exist"), true);
                }
                let ids = self.state.bank_memory_ids(name);
                for id in &ids {
                    if let Some(memory) = self.state.memory(*id) {
                        self.remove(&memory);
                    }
                }
                self.state.remove_bank(name);
                self.effects.push(Effect::BankRemoved(name.clone()));
                CommandOutcome::BankDeleted {
                    memories_removed: ids.len(),
                }
            }
            Command::Write { items } => {
                CommandOutcome::Written(items.iter().map(|item| self.write(item, None)).collect())
            }
            Command::WriteEmbedded { items, vectors } => {
                let model: Arc<str> = Arc::from(vectors.model.as_str());
                CommandOutcome::Written(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| self.write(item, vectors.get(i).map(|v| (&model, v))))
                        .collect(),
                )
            }
            Command::Forget {
                id,
                hard,
                at,
                reason,
            } => self.forget(*id, *hard, *at, reason),
            Command::Expire {
                bank,
                ids,
                as_of,
                at,
            } => self.expire(bank, ids, *as_of, *at),
            Command::RecordAccess { hits } => {
                for hit in hits {
                    self.record_access(hit);
                }
                CommandOutcome::AccessRecorded
            }
            Command::Batch(commands) => {
                CommandOutcome::Batch(commands.iter().map(|c| self.apply(c)).collect())
            }
            Command::Review {
                bank,
                changes,
                conflicts,
                report,
                watermark,
                deferred,
                created,
                purged,
            } => self.review(
                bank,
                ReviewParts {
                    changes,
                    conflicts,
                    report,
                    watermark: *watermark,
                    deferred,
                    created,
                    purged,
                },
            ),
            Command::ReviewPart {
                bank,
                changes,
                purged,
                at,
            } => self.review_part(bank, changes, purged, *at),
            Command::ResolveConflict {
                bank,
                id,
                resolution,
                changes,
            } => self.resolve_conflict(bank, *id, resolution, changes, at_of(resolution)),
            Command::Feedback {
                id,
                recall,
                outcome,
                delta,
                at,
                principal,
            } => self.feedback(*id, *recall, *outcome, *delta, *at, principal),
            Command::CreateApiKey { key } => {
                if self.state.api_key(&key.id).is_some() {
                    return rejected(format!("API key {} already exists", key.id), false);
                }
                self.state.put_api_key(key);
                CommandOutcome::ApiKeyCreated
            }
            Command::RevokeApiKey { id, at } => {
                let Some(mut key) = self.state.api_key(id) else {
                    return rejected(format!("API key {id} does not exist"), true);
                };
                if key.revoked_at.is_none() {
                    key.revoked_at = Some(*at);
                    self.state.put_api_key(&key);
                }
                CommandOutcome::ApiKeyRevoked
            }
            Command::SetPlacement { table } => {
                if let Err(e) = table.validate() {
                    return rejected(format!("invalid placement table: {e}"), false);
                }
                let current = self.state.placement().map_or(0, |t| t.version);
                if table.version <= current {
                    return rejected(
                        format!(
                            "placement version {} is not newer than the current {current}",
                            table.version
                        ),
                        false,
                    );
                }
                self.state.put_placement(table);
                CommandOutcome::PlacementSet {
                    version: table.version,
                }
            }
            Command::QuarantineChecked { bank, checks, at } => {
                self.quarantine_checked(bank, checks, *at)
            }
            Command::ReleaseQuarantine {
                id,
                at,
                principal,
                reason,
            } => self.release_quarantine(*id, *at, principal, reason),
            Command::Quarantine { id, at, reason } => self.quarantine(*id, *at, reason),
        }
    }

    fn set_status(
        &mut self,
        mut memory: Memory,
        status: Status,
        effective_at: Timestamp,
        at: Timestamp,
        actor: &str,
        reason: &str,
    ) {
        let change = FieldChange::new("status", &memory.status, &status);
        let kind = match status {
            Status::Expired => HistoryKind::Expired,
            Status::Archived => HistoryKind::Archived,
            _ => HistoryKind::StatusChanged,
        };
        memory.status = status.clone();
        memory.status_log.push(StatusChange {
            effective_at,
            status,
            confidence: Some(memory.confidence),
        });
        memory.version += 1;
        memory.updated_at = at;
        memory.updated_index = self.log_index;
        self.state.put_memory(&memory);
        self.history(
            &memory,
            kind,
            effective_at,
            at,
            actor,
            reason.to_string(),
            vec![change],
        );
        self.effects.push(Effect::MemoryUpserted(Box::new(memory)));
    }

    fn remove(&mut self, memory: &Memory) {
        self.state.remove_memory(memory);
        self.state.remove_history(memory.id);
        self.effects.push(Effect::MemoryRemoved {
            bank: memory.bank.clone(),
            id: memory.id,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn history(
        &mut self,
        memory: &Memory,
        kind: HistoryKind,
        effective_at: Timestamp,
        recorded_at: Timestamp,
        actor: &str,
        reason: String,
        changes: Vec<FieldChange>,
    ) {
        self.state.append_history(&HistoryEntry {
            memory: memory.id,
            version: memory.version,
            kind,
            effective_at,
            recorded_at,
            log_index: self.log_index,
            actor: actor.to_string(),
            reason,
            changes,
        });
    }
}

fn at_of(resolution: &ConflictResolution) -> Timestamp {
    resolution.resolved_at
}

fn rejected(reason: String, not_found: bool) -> CommandOutcome {
    CommandOutcome::Rejected { reason, not_found }
}
