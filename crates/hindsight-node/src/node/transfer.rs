//! Export and import of a bank (the line format is in `routing::transfer`).

use hindsight_core::history::{FieldChange, HistoryEntry, HistoryKind};
use hindsight_core::memory::StatusChange;
use hindsight_core::{
    BankName, Command, CommandOutcome, Memory, MemoryId, Status, Timestamp, ValidationError,
};

use super::{outcome_error, Node};
use crate::bank::integrity::Integrity;
use crate::error::NodeError;
use crate::routing::transfer::{
    ExportLine, ExportPage, ImportOptions, ImportReport, LineKind, FORMAT,
};

const MAX_PAGE: usize = 5_000;

impl Node {
    /// The page of `bank`'s export after `after` (from the start when `None`). The first page
    /// opens with the bank line; the last one ends with the conflict queue.
    pub async fn export_bank(
        &self,
        bank: &BankName,
        after: Option<MemoryId>,
        limit: usize,
    ) -> Result<ExportPage, NodeError> {
        let home = self.banks().home_of_bank(bank)?;
        let reader = home.reader();
        let config = reader
            .bank(bank)
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::NotFound(format!("bank {bank} does not exist")))?;
        let limit = limit.clamp(1, MAX_PAGE);
        let mut lines = vec![];
        if after.is_none() {
            lines.push(encode(&ExportLine {
                format: Some(FORMAT),
                config: Some(config),
                ..ExportLine::new(LineKind::Bank)
            })?);
        }
        let memories = reader
            .bank_memories_after(bank, after, limit)
            .map_err(NodeError::internal)?;
        let next = (memories.len() == limit).then(|| memories[limit - 1].id);
        for memory in memories {
            let history = reader.history(memory.id).map_err(NodeError::internal)?;
            lines.push(encode(&ExportLine {
                memory: Some(Box::new(memory)),
                history,
                ..ExportLine::new(LineKind::Memory)
            })?);
        }
        if next.is_none() {
            for conflict in reader.conflicts(bank).map_err(NodeError::internal)? {
                lines.push(encode(&ExportLine {
                    conflict: Some(conflict),
                    ..ExportLine::new(LineKind::Conflict)
                })?);
            }
        }
        Ok(ExportPage { lines, next })
    }

    /// Stores exported lines. A call whose lines start with the bank line creates the bank (which
    /// must not exist); later calls add to it. The lines go into `bank` whatever bank they came
    /// from.
    ///
    /// An import is an untrusted write path: every record's signature must verify with this
    /// node's keys (unless `options.resign`), every record is screened by the guard as a write
    /// is (an attack is held in quarantine whatever status its line claims), and histories,
    /// links and conflicts may only name records of this import or of `bank` (checked when the
    /// command applies). Verified records are then signed again for `bank`, which the
    /// signature covers.
    pub async fn import_bank(
        &self,
        lines: &[String],
        bank: &BankName,
        options: ImportOptions,
    ) -> Result<ImportReport, NodeError> {
        let mut config = None;
        let mut memories = vec![];
        let mut history = vec![];
        let mut conflicts = vec![];
        for (i, line) in lines.iter().enumerate() {
            let parsed: ExportLine =
                serde_json::from_str(line).map_err(|e| invalid(format!("line {}: {e}", i + 1)))?;
            let missing = |what: &str| invalid(format!("line {}: no {what}", i + 1));
            match parsed.kind {
                LineKind::Bank => {
                    let format = parsed.format.ok_or_else(|| missing("format"))?;
                    if format != FORMAT {
                        return Err(invalid(format!(
                            "line {}: export format {format}, this node reads {FORMAT}",
                            i + 1
                        )));
                    }
                    if i != 0 || config.is_some() {
                        return Err(invalid(format!(
                            "line {}: the bank line must come first, once",
                            i + 1
                        )));
                    }
                    config = Some(parsed.config.ok_or_else(|| missing("config"))?);
                }
                LineKind::Memory => {
                    memories.push(*parsed.memory.ok_or_else(|| missing("memory"))?);
                    history.extend(parsed.history);
                }
                LineKind::Conflict => {
                    conflicts.push(parsed.conflict.ok_or_else(|| missing("conflict"))?)
                }
            }
        }
        if lines.is_empty() {
            return Err(invalid("nothing to import"));
        }
        // A memory is found by the partition its id names; ids are kept on import, so each must
        // name the partition of the bank it goes into.
        if let Some(p) = self.partition_of_bank(bank) {
            if let Some(memory) = memories
                .iter()
                .find(|m| self.partition_of_memory(m.id) != Some(p))
            {
                return Err(invalid(format!(
                    "memory {} has an id that does not name partition {p}, where bank {bank} lives; with partitions, a bank imports only an export of a bank of the same partition",
                    memory.id
                )));
            }
        }
        if let Some(config) = &mut config {
            config.name = bank.clone();
        }
        let now = Timestamp::now();
        for memory in &mut memories {
            self.vouch_for_import(memory, options)?;
            if let Some(entry) = self.screen_import(memory, now) {
                history.push(entry);
            }
            memory.bank = bank.clone();
            self.inner.writing.sign(memory);
        }
        for conflict in &mut conflicts {
            conflict.bank = bank.clone();
        }
        let (log_index, outcome) = self
            .banks()
            .propose_for_bank(
                bank,
                Command::ImportBank {
                    bank: bank.clone(),
                    config,
                    memories,
                    history,
                    conflicts,
                },
            )
            .await?;
        match outcome {
            CommandOutcome::Imported {
                memories,
                conflicts,
            } => {
                let view = self.banks().bank_view(bank).await?;
                self.banks().wait_indexed(view, log_index).await?;
                Ok(ImportReport {
                    memories,
                    conflicts,
                })
            }
            other => Err(outcome_error(other)),
        }
    }
}

impl Node {
    /// Refuses a record whose signature this node cannot verify, unless the admin asked to sign
    /// such records anew.
    fn vouch_for_import(&self, memory: &Memory, options: ImportOptions) -> Result<(), NodeError> {
        let why = match self.inner.writing.signature_of(memory) {
            Integrity::Verified { .. } | Integrity::Off => return Ok(()),
            Integrity::Unsigned => "it is unsigned".to_string(),
            Integrity::Failed(why) => format!("its signature does not verify ({why})"),
        };
        if options.resign {
            tracing::warn!(id = %memory.id, %why, "imported record signed anew at an admin's request");
            return Ok(());
        }
        Err(NodeError::FailedPrecondition(format!(
            "memory {}: {why}, so this node cannot tell it was not changed since it was exported (or it comes from a node with another record key); nothing was imported. An admin who trusts the file imports it with resign",
            memory.id
        )))
    }

    /// Screens an imported record as a write is screened. An attack is held in quarantine
    /// (its `critical` mark dropped: an attack is no safety rule); the history entry returned
    /// says so.
    fn screen_import(&self, memory: &mut Memory, now: Timestamp) -> Option<HistoryEntry> {
        let screener = self.inner.writing.screener()?;
        let reason = screener
            .screen(&memory.content, &memory.provenance)
            .quarantine_reason()?;
        if matches!(memory.status, Status::Quarantined { .. }) {
            return None;
        }
        let status = Status::Quarantined {
            reason: format!("screened on import: {reason}"),
        };
        let changes = vec![FieldChange::new("status", &memory.status, &status)];
        memory.status = status.clone();
        memory.critical = false;
        memory.status_log.push(StatusChange {
            effective_at: now,
            status,
            confidence: Some(memory.confidence),
        });
        memory.version += 1;
        memory.updated_at = now;
        Some(HistoryEntry {
            memory: memory.id,
            version: memory.version,
            kind: HistoryKind::StatusChanged,
            effective_at: now,
            recorded_at: now,
            log_index: 0,
            actor: "import".into(),
            reason: format!("quarantined on import: {reason}"),
            changes,
        })
    }
}

fn encode(line: &ExportLine) -> Result<String, NodeError> {
    serde_json::to_string(line).map_err(NodeError::internal)
}

fn invalid(message: impl Into<String>) -> NodeError {
    NodeError::Invalid(ValidationError::Invalid(message.into()))
}
