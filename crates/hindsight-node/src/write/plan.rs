//! Planning a batch: each validated request becomes a memory with its fate (stored, merged into a
//! memory it restates, or not kept by the importance gate), decided from the batch's banks and
//! each request's neighbours alone. The node lends only what must stay its own ([`Intake`]): ids,
//! the guard's verdict with its window of recent writes, and signatures.

use hindsight_core::memory::{AccessStats, StatusChange};
use hindsight_core::write::{ImportanceScores, WriteOutcome, WriteRequest};
use hindsight_core::{
    BankConfig, BankName, Kind, Limits, Memory, MemoryId, Slot, Status, Support, Timestamp,
    ValidationError,
};
use hindsight_review::importance::{self, ImportanceConfig};

use super::banks::BatchBanks;
use super::duplicates::{neighbours, Hit};
use super::guarding::Held;
use crate::bank::BankView;
use crate::error::NodeError;

/// One request of the batch on its way through the write path.
pub(crate) struct Planned {
    /// The request's position in the batch.
    pub index: usize,
    pub memory: Memory,
    pub vector: Vec<f32>,
    pub fate: Fate,
    /// What the caller is told about this request, once the log entry's results are in.
    pub outcome: Option<WriteOutcome>,
}

/// What the planner decided for a request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fate {
    /// A record of its own; `held` names why the guard quarantines it.
    Create { held: Option<String> },
    /// Support for `target`, a memory of the bank or an earlier write of the batch it restates.
    Merge { target: MemoryId, similarity: f32 },
    /// Below the importance gate: not logged at all.
    NotKept { scores: ImportanceScores },
}

impl Planned {
    /// The record this write lands in: itself, or the memory it merges into; `None` when it is
    /// not kept.
    pub fn lands_in(&self) -> Option<MemoryId> {
        match &self.fate {
            Fate::Create { .. } => Some(self.memory.id),
            Fate::Merge { target, .. } => Some(*target),
            Fate::NotKept { .. } => None,
        }
    }
}

/// The planned batch.
pub(crate) struct Plan {
    /// Every request, in request order.
    pub items: Vec<Planned>,
    /// Earlier writes the guard holds along with this batch (the first halves of instructions
    /// split over two writes), with the reason, in request order.
    pub also_held: Vec<(MemoryId, String)>,
    /// Banks where a kept-or-not write looks like it contradicts a memory, each once.
    pub likely_conflicts: Vec<BankName>,
}

impl Plan {
    /// Whether anything of the batch goes into a log entry.
    pub fn logs_anything(&self) -> bool {
        self.items.iter().any(|p| p.lands_in().is_some())
    }
}

/// What planning takes from the node for each request, in request order.
pub(crate) trait Intake {
    fn new_id(&self, bank: &BankName, now: Timestamp) -> MemoryId;
    /// The guard's verdict when it holds `memory`. `view` and `earlier` (the batch's writes planned
    /// before it) hold the user's rules it may relax.
    fn guard(
        &self,
        memory: &mut Memory,
        confidence_given: bool,
        view: Option<&BankView>,
        earlier: &[Planned],
        vector: &[f32],
    ) -> Option<Held>;
    fn sign(&self, memory: &mut Memory);
}

/// The node's settings the planner reads.
pub(crate) struct Settings<'a> {
    /// Similarity at or above which a neighbour that says something else is a likely conflict.
    pub conflict_similarity: f32,
    pub importance: &'a ImportanceConfig,
}

/// Refuses an empty or oversized batch, and any invalid request; a batch's error names the item.
pub(crate) fn validate(limits: &Limits, requests: &mut [WriteRequest]) -> Result<(), NodeError> {
    if requests.is_empty() {
        return Err(ValidationError::Invalid("the batch holds no memories".into()).into());
    }
    if requests.len() > limits.max_batch {
        return Err(ValidationError::TooMany {
            field: "batch",
            len: requests.len(),
            max: limits.max_batch,
        }
        .into());
    }
    let single = requests.len() == 1;
    for (i, request) in requests.iter_mut().enumerate() {
        request.validate(limits).map_err(|e| {
            if single {
                NodeError::Invalid(e)
            } else {
                NodeError::Invalid(ValidationError::Invalid(format!("item {i}: {e}")))
            }
        })?;
    }
    Ok(())
}

/// `vectors` and `found` (each request's closest memories in its bank) are in request order.
pub(crate) fn plan(
    requests: Vec<WriteRequest>,
    vectors: Vec<Vec<f32>>,
    found: Vec<Vec<Hit>>,
    banks: &BatchBanks,
    settings: &Settings<'_>,
    intake: &impl Intake,
    now: Timestamp,
) -> Plan {
    let mut items: Vec<Planned> = Vec::with_capacity(requests.len());
    let mut also_held = vec![];
    let mut likely_conflicts: Vec<BankName> = vec![];
    let requests = requests.into_iter().zip(vectors).zip(found);
    for (index, ((request, vector), found)) in requests.enumerate() {
        let bank = &banks[&request.bank];
        let confidence_given = request.confidence.is_some();
        let id = intake.new_id(&request.bank, now);
        let mut memory = build_memory(request, &bank.config, id, now);
        let held = intake.guard(
            &mut memory,
            confidence_given,
            bank.view.as_deref(),
            &items,
            &vector,
        );
        if let Some(held) = &held {
            tracing::warn!(bank = %memory.bank, id = %memory.id, reason = %held.reason, "write quarantined");
            if let Some(first_half) = held.first_half {
                also_held.push((
                    first_half,
                    format!(
                        "first half of an instruction split over two writes (the second: memory {}): {}",
                        memory.id, held.reason
                    ),
                ));
            }
        }
        intake.sign(&mut memory);
        let near = neighbours(
            found,
            &items,
            &memory,
            &vector,
            &bank.config,
            settings.conflict_similarity,
        );
        if near.likely_conflict && held.is_none() && !likely_conflicts.contains(&memory.bank) {
            likely_conflicts.push(memory.bank.clone());
        }
        let fate = match (held, near.duplicate) {
            // A held write stands alone: merged into a live memory it would lend it support.
            (Some(held), _) => Fate::Create {
                held: Some(held.reason),
            },
            (None, Some((target, similarity))) => Fate::Merge { target, similarity },
            (None, None) => {
                match importance_shortfall(settings.importance, &memory, near.nearest) {
                    Some(scores) => {
                        tracing::info!(bank = %memory.bank, %scores, "write not kept");
                        Fate::NotKept { scores }
                    }
                    None => Fate::Create { held: None },
                }
            }
        };
        items.push(Planned {
            index,
            memory,
            vector,
            fate,
            outcome: None,
        });
    }
    Plan {
        items,
        also_held,
        likely_conflicts,
    }
}

pub(crate) fn build_memory(
    request: WriteRequest,
    config: &BankConfig,
    id: MemoryId,
    now: Timestamp,
) -> Memory {
    let occurred_at = request.occurred_at.unwrap_or(now);
    let ttl = request.ttl_secs.or(match request.kind {
        Kind::Working => Some(config.working_ttl_secs),
        _ => None,
    });
    let entities = hindsight_text::extract_entities(&request.content);
    let slot = hindsight_text::extract_slot(&request.content).map(|s| Slot {
        subject: s.subject,
        attribute: s.attribute,
        value: s.value,
    });
    let confidence = request
        .confidence
        .unwrap_or_else(|| request.provenance.source.initial_confidence());
    Memory {
        id,
        bank: request.bank,
        kind: request.kind,
        subtype: request.subtype,
        content: request.content,
        entities,
        slot,
        provenance: request.provenance,
        occurred_at,
        recorded_at: now,
        valid_from: occurred_at,
        valid_to: None,
        expires_at: ttl.map(|secs| occurred_at.plus_secs(secs)),
        confidence,
        importance: request.importance.unwrap_or(0.5),
        critical: request.critical,
        status: Status::Active,
        status_log: vec![StatusChange {
            effective_at: occurred_at,
            status: Status::Active,
            confidence: Some(confidence),
        }],
        support: Support {
            count: 1,
            ..Support::default()
        },
        access: AccessStats::default(),
        tags: request.tags,
        metadata: request.metadata,
        signature: None,
        version: 1,
        updated_at: now,
        updated_index: 0,
    }
}

/// The scores of a write the importance gate does not keep; `None` when it is kept or not
/// gated (a user's own words, unless `importance.gate_user_writes`).
fn importance_shortfall(
    gate: &ImportanceConfig,
    memory: &Memory,
    nearest: Option<f32>,
) -> Option<ImportanceScores> {
    let automatic = memory.provenance.source.is_inference();
    // Working memory is task state with a short life of its own: not a long-term candidate.
    if !gate.enabled
        || !(automatic || gate.gate_user_writes)
        || memory.critical
        || memory.kind == Kind::Working
    {
        return None;
    }
    let scores = importance::score(&importance::Candidate {
        content: &memory.content,
        kind: memory.kind,
        subtype: memory.subtype,
        expires: memory.expires_at.is_some(),
        nearest,
    });
    (scores.total < gate.threshold).then_some(scores)
}
