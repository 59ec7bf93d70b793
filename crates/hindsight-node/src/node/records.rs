use super::{outcome_error, Node};
use crate::bank::integrity::Integrity;
use crate::error::NodeError;
use crate::types::Trace;
use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::{BankName, Consistency, Memory, MemoryId, Status, Timestamp};

impl Node {
    /// The record, unless it failed its integrity check (then withheld: see [`Node::trace`]).
    /// Reads this node's copy as it is; [`Node::get_with`] can first catch up with the leader.
    pub async fn get(&self, id: MemoryId) -> Result<Memory, NodeError> {
        self.get_with(id, Consistency::Eventual).await
    }

    /// [`Node::get`], linearizable when asked: on any node it then sees every write acknowledged
    /// before the call.
    pub async fn get_with(
        &self,
        id: MemoryId,
        consistency: Consistency,
    ) -> Result<Memory, NodeError> {
        let memory = self.get_unverified(id, consistency).await?;
        self.verify(&memory)?;
        Ok(memory)
    }

    /// The record as stored, before its integrity check: for callers that check the reader's
    /// rights on its bank first, so that someone without them learns nothing, not even that a
    /// record there failed its check. Pass it to [`Node::verify`] before showing its content.
    pub async fn get_unverified(
        &self,
        id: MemoryId,
        consistency: Consistency,
    ) -> Result<Memory, NodeError> {
        let home = self.banks().home_of_memory(id)?;
        if consistency == Consistency::Linearizable {
            home.store
                .ensure_linearizable()
                .await
                .map_err(|e| NodeError::Unavailable(e.to_string()))?;
        }
        home.reader()
            .memory(id)
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::NotFound(format!("memory {id} not found")))
    }

    /// Refuses a record that fails its integrity check.
    pub fn verify(&self, memory: &Memory) -> Result<(), NodeError> {
        match self.inner.writing.integrity(memory) {
            Integrity::Failed(why) => Err(NodeError::Corrupted(format!(
                "memory {} failed its integrity check ({why}) and is withheld; `trace` shows it",
                memory.id
            ))),
            _ => Ok(()),
        }
    }

    /// A page of `bank`'s records in id order after `after`: up to `limit` records examined,
    /// those `keep` accepts returned, records failing their signature check withheld. The id to
    /// continue from is `None` on the last page. No access is recorded: listing is not use.
    pub async fn list_memories(
        &self,
        bank: &BankName,
        after: Option<MemoryId>,
        limit: usize,
        keep: impl Fn(&Memory) -> bool,
    ) -> Result<(Vec<Memory>, Option<MemoryId>), NodeError> {
        let home = self.banks().home_of_bank(bank)?;
        let reader = home.reader();
        if reader.bank(bank).map_err(NodeError::internal)?.is_none() {
            return Err(NodeError::NotFound(format!("bank {bank} does not exist")));
        }
        let page = reader
            .bank_memories_after(bank, after, limit)
            .map_err(NodeError::internal)?;
        let next = (page.len() == limit).then(|| page[limit - 1].id);
        let memories = page
            .into_iter()
            .filter(|m| keep(m) && !matches!(self.inner.writing.integrity(m), Integrity::Failed(_)))
            .collect();
        Ok((memories, next))
    }

    pub async fn trace(&self, id: MemoryId) -> Result<Trace, NodeError> {
        let home = self.banks().home_of_memory(id)?;
        let reader = home.reader();
        let memory = reader
            .memory(id)
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::NotFound(format!("memory {id} not found")))?;
        let integrity = self.inner.writing.integrity(&memory).describe();
        let history = reader.history(id).map_err(NodeError::internal)?;
        let mut linked: Vec<MemoryId> = memory.support.derived_from.clone();
        if let Status::Superseded { by } = memory.status {
            linked.push(by);
        }
        let mut related = vec![];
        for other in linked {
            // Links only ever join records of one bank; one that leads elsewhere (an imported
            // record's crafted `derived_from`) is not followed, since the caller's rights were
            // checked on this bank alone.
            if let Some(m) = reader.memory(other).map_err(NodeError::internal)? {
                if m.bank == memory.bank {
                    related.push(m);
                }
            }
        }
        Ok(Trace {
            memory,
            history,
            related,
            integrity,
        })
    }

    /// Soft forget archives; hard forget deletes the record and everything derived from it.
    /// Returns the ids that changed.
    pub async fn forget(
        &self,
        id: MemoryId,
        hard: bool,
        reason: String,
    ) -> Result<Vec<MemoryId>, NodeError> {
        // A record that fails its integrity check can still be forgotten: removing it is what
        // an operator does with one.
        let memory = self.get_unverified(id, Consistency::Eventual).await?;
        let reason = if reason.trim().is_empty() {
            if hard {
                "hard delete requested"
            } else {
                "archived on request"
            }
            .to_string()
        } else {
            reason
        };
        let (log_index, outcome) = self
            .banks()
            .propose_for_bank(
                &memory.bank,
                Command::Forget {
                    id,
                    hard,
                    at: Timestamp::now(),
                    reason,
                },
            )
            .await?;
        let ids = match outcome {
            CommandOutcome::Forgotten { ids } => ids,
            other => return Err(outcome_error(other)),
        };
        let view = self.banks().bank_view(&memory.bank).await?;
        self.banks().wait_indexed(view, log_index).await?;
        Ok(ids)
    }

    /// Makes quarantined memory `id` active again at an admin's word (`principal`, `reason`).
    pub async fn release_quarantine(
        &self,
        id: MemoryId,
        principal: &str,
        reason: &str,
    ) -> Result<Memory, NodeError> {
        if reason.trim().is_empty() {
            return Err(NodeError::Invalid(
                hindsight_core::ValidationError::Invalid(
                    "a release from quarantine needs a reason: it is kept in the memory's history"
                        .into(),
                ),
            ));
        }
        let memory = self.get_unverified(id, Consistency::Eventual).await?;
        let (log_index, outcome) = self
            .banks()
            .propose_for_bank(
                &memory.bank,
                Command::ReleaseQuarantine {
                    id,
                    at: Timestamp::now(),
                    principal: principal.to_string(),
                    reason: reason.trim().to_string(),
                },
            )
            .await?;
        let released = match outcome {
            CommandOutcome::Released { memory } => *memory,
            other => return Err(outcome_error(other)),
        };
        let view = self.banks().bank_view(&memory.bank).await?;
        self.banks().wait_indexed(view, log_index).await?;
        tracing::warn!(%id, bank = %memory.bank, %principal, "memory released from quarantine");
        Ok(released)
    }
}
