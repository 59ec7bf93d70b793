//! The write path: validate, embed, find duplicates, propose one log entry, wait until searchable.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use hindsight_core::command::{Command, CommandOutcome, ItemVectors, WriteItem, WriteResult};
use hindsight_core::memory::{AccessStats, StatusChange};
use hindsight_core::write::{Disposition, ImportanceScores, WriteOutcome, WriteRequest};
use hindsight_core::{
    BankConfig, BankName, Kind, Memory, MemoryId, Slot, SourceKind, Status, Support, Timestamp,
    ValidationError,
};
use hindsight_index::dot;
use hindsight_review::importance;

use super::WriteHost;
use crate::bank::embedding;
use crate::bank::homes::Home;
use crate::bank::BankView;
use crate::error::NodeError;
use crate::metrics;
use crate::write::guarding;
use crate::write::quota::{Demand, Reservation};

struct Planned {
    memory: Memory,
    vector: Vec<f32>,
    /// The record this write lands in: itself, or the memory it merges into.
    lands_in: MemoryId,
}

pub async fn write_batch(
    node: &impl WriteHost,
    mut requests: Vec<WriteRequest>,
) -> Result<Vec<WriteOutcome>, NodeError> {
    let limits = &node.config().limits;
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
    let home = one_home(node, &requests)?;
    // Counted until this function returns: answered, refused further on, or failed.
    let _admitted = node.write_admission().admit(requests.len())?;

    let now = Timestamp::now();
    let started = Instant::now();
    let mut commands = vec![];
    let mut banks: HashMap<BankName, (BankConfig, Option<Arc<BankView>>)> = HashMap::new();
    for request in &requests {
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
                (config, Some(view))
            }
            None if node.config().node.auto_create_banks => {
                let config = node
                    .config()
                    .bank_defaults
                    .bank_config(request.bank.clone(), now);
                commands.push(Command::CreateBank {
                    config: config.clone(),
                });
                (config, None)
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

    let texts = requests.iter().map(|r| r.content.clone()).collect();
    let vectors = embedding::embed(&node.banks().context().embedder, texts).await?;

    let mut planned: Vec<Planned> = Vec::with_capacity(requests.len());
    let mut items = Vec::with_capacity(requests.len());
    // The vector of each item, in item order.
    let mut carried: Vec<Vec<f32>> = Vec::with_capacity(requests.len());
    let mut similarities = HashMap::new();
    let mut hinted: Vec<BankName> = vec![];
    let conflict_similarity = node.config().review.pairs.pair_similarity;
    let mut quarantined: HashMap<MemoryId, String> = HashMap::new();
    let mut rejected: HashMap<MemoryId, ImportanceScores> = HashMap::new();
    // Every request's id in request order; the log entry carries only those kept.
    let mut order: Vec<MemoryId> = vec![];
    let indexed = indexed_neighbours(&banks, &requests, &vectors);
    for ((request, vector), found) in requests.into_iter().zip(vectors).zip(indexed) {
        let (config, view) = &banks[&request.bank];
        let confidence_given = request.confidence.is_some();
        let id = node.banks().new_ids(&request.bank).next(now);
        let mut memory = build_memory(request, config, id, now);
        if let Some(screener) = node.screener() {
            let recent = node.recent_writes();
            if let Some(held) =
                guarding::guard_memory(screener, recent, &mut memory, confidence_given)
            {
                tracing::warn!(bank = %memory.bank, id = %memory.id, reason = %held.reason, "write quarantined");
                if let Some(first_half) = held.first_half {
                    // In the same log entry, before the write: the two halves are held together.
                    commands.push(Command::Quarantine {
                        id: first_half,
                        at: now,
                        reason: format!(
                            "first half of an instruction split over two writes (the second: memory {}): {}",
                            memory.id, held.reason
                        ),
                    });
                }
                quarantined.insert(memory.id, held.reason);
            } else if guarding::may_challenge_rules(screener, &memory) {
                let rules = principal_statements_near(view.as_deref(), &planned, &memory, &vector);
                let close = rules
                    .iter()
                    .map(|(rule, similarity)| (rule.as_ref(), *similarity));
                if let Some(held) = guarding::hold_if_relaxing_a_rule(screener, &mut memory, close)
                {
                    tracing::warn!(bank = %memory.bank, id = %memory.id, reason = %held.reason, "write quarantined");
                    quarantined.insert(memory.id, held.reason);
                }
            }
        }
        node.sign(&mut memory);
        let held = quarantined.contains_key(&memory.id);
        let near = neighbours(
            view.as_deref(),
            found,
            &planned,
            &memory,
            &vector,
            config,
            conflict_similarity,
        );
        if near.likely_conflict && !held && !hinted.contains(&memory.bank) {
            hinted.push(memory.bank.clone());
        }
        // A held write stands alone: merged into a live memory it would lend it support.
        let duplicate = if held { None } else { near.duplicate };
        if !held && duplicate.is_none() {
            if let Some(scores) = importance_shortfall(node, &memory, near.nearest) {
                tracing::info!(bank = %memory.bank, %scores, "write not kept");
                rejected.insert(memory.id, scores);
                order.push(memory.id);
                continue;
            }
        }
        order.push(memory.id);
        let lands_in = match duplicate {
            Some((target, similarity)) => {
                similarities.insert(memory.id, similarity);
                items.push(WriteItem::Merge {
                    target,
                    similarity,
                    memory: Box::new(memory.clone()),
                });
                target
            }
            None => {
                items.push(WriteItem::Create {
                    memory: Box::new(memory.clone()),
                });
                memory.id
            }
        };
        carried.push(vector.clone());
        planned.push(Planned {
            memory,
            vector,
            lands_in,
        });
    }
    if items.is_empty() {
        // Every item fell short of the importance gate: nothing to log, create or index, so the
        // answer must not wait for an index update that no entry will bring.
        let outcomes: Vec<WriteOutcome> = order
            .into_iter()
            .filter_map(|id| {
                rejected.remove(&id).map(|scores| WriteOutcome {
                    id,
                    disposition: Disposition::RejectedLowImportance { scores },
                })
            })
            .collect();
        metrics::writes(&outcomes);
        return Ok(outcomes);
    }
    // Held until the write is in the banks' views (or failed), so that concurrent writes see it.
    let _reservation = admit_bytes(node, &banks, &items)?;
    // The entry carries every item's vector (a merge's too, for when its target is gone by the
    // time it applies), so that no replica embeds the write again.
    commands.push(Command::WriteEmbedded {
        items,
        vectors: ItemVectors {
            model: node.banks().context().embedder.model_id().to_string(),
            vectors: carried,
        },
    });
    let command = if commands.len() == 1 {
        commands.pop().expect("one command")
    } else {
        Command::Batch(commands)
    };

    let creates_bank = banks.values().any(|(_, view)| view.is_none());
    let prepared = Instant::now();
    metrics::write_stage("prepare", prepared - started);
    let (log_index, outcome) = node.banks().propose_to(&home, command).await?;
    if creates_bank {
        // The bank's actor starts from this replica's copy, which must hold the new bank.
        node.banks().wait_applied(&home, log_index).await?;
    }
    let mut results = written_results(outcome)?.into_iter();
    let mut outcomes = Vec::with_capacity(order.len());
    for id in order {
        if let Some(scores) = rejected.remove(&id) {
            outcomes.push(WriteOutcome {
                id,
                disposition: Disposition::RejectedLowImportance { scores },
            });
            continue;
        }
        let Some(result) = results.next() else {
            return Err(NodeError::internal(
                "the write's log entry had fewer results than items",
            ));
        };
        outcomes.push(match result {
            WriteResult::Created { id } => WriteOutcome {
                id,
                disposition: match quarantined.remove(&id) {
                    Some(reason) => Disposition::Quarantined { reason },
                    None => Disposition::Created,
                },
            },
            // The caller gets the memory that now holds the write: the write's own id names no
            // record (it is kept in the target's `support.merged`), so a `get` of it would fail.
            WriteResult::MergedInto { id, target } => WriteOutcome {
                id: target,
                disposition: Disposition::MergedInto {
                    target,
                    similarity: similarities.get(&id).copied().unwrap_or(1.0),
                },
            },
            WriteResult::Rejected { reason, .. } => {
                return Err(NodeError::FailedPrecondition(reason));
            }
        });
    }
    let committed = Instant::now();
    metrics::write_stage("commit", committed - prepared);
    for bank in banks.keys() {
        let view = node.banks().bank_view(bank).await?;
        node.banks().wait_indexed(view, log_index).await?;
    }
    metrics::write_stage("searchable", committed.elapsed());
    if node.config().review.on_likely_conflict {
        for bank in hinted {
            node.hint_review_soon(bank);
        }
    }
    metrics::writes(&outcomes);
    Ok(outcomes)
}

/// The one group every bank of the batch lives in: a batch is one log entry, and an entry belongs
/// to one group, so a batch over banks of different partitions is refused whole.
fn one_home(node: &impl WriteHost, requests: &[WriteRequest]) -> Result<Home, NodeError> {
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

/// Checks the write against its banks' byte quotas. Only records the write creates count: a
/// merge adds support to a memory, not content.
fn admit_bytes(
    node: &impl WriteHost,
    banks: &HashMap<BankName, (BankConfig, Option<Arc<BankView>>)>,
    items: &[WriteItem],
) -> Result<Reservation, NodeError> {
    let mut adds: BTreeMap<&BankName, u64> = BTreeMap::new();
    for item in items {
        if let WriteItem::Create { memory } = item {
            *adds.entry(&memory.bank).or_default() += memory.quota_bytes();
        }
    }
    let demands: Vec<Demand<'_>> = adds
        .into_iter()
        .map(|(bank, adds)| {
            let (config, view) = &banks[bank];
            Demand {
                bank,
                max_bytes: config.max_bytes,
                held: view.as_ref().map_or(0, |v| v.held_bytes()),
                adds,
            }
        })
        .collect();
    node.reservations().admit(&demands)
}

fn written_results(outcome: CommandOutcome) -> Result<Vec<WriteResult>, NodeError> {
    match outcome {
        CommandOutcome::Written(results) => Ok(results),
        // Bank creations first, the write last. A concurrent first write may have created the
        // bank already; that creation's refusal is harmless and the write itself still landed.
        CommandOutcome::Batch(mut outcomes) => match outcomes.pop() {
            Some(CommandOutcome::Written(results)) => Ok(results),
            Some(CommandOutcome::Rejected { reason, .. }) => {
                Err(NodeError::FailedPrecondition(reason))
            }
            other => Err(NodeError::internal(format!(
                "unexpected outcome of a write: {other:?}"
            ))),
        },
        CommandOutcome::Rejected { reason, .. } => Err(NodeError::FailedPrecondition(reason)),
        other => Err(NodeError::internal(format!(
            "unexpected outcome of a write: {other:?}"
        ))),
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
    node: &impl WriteHost,
    memory: &Memory,
    nearest: Option<f32>,
) -> Option<ImportanceScores> {
    let gate = &node.config().importance;
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

/// What a new write found among its bank's memories.
struct Neighbours {
    /// The memory it duplicates, if any: the most similar active memory of the same kind at or
    /// above the bank's threshold that states the same thing (not a changed value or a negation).
    duplicate: Option<(MemoryId, f32)>,
    /// Whether it looks like it contradicts one: it announces a change, or a close neighbour
    /// (at least `conflict_similarity`) says something else, or one states another value for
    /// the same slot. Only a hint for the reviewer; the review decides.
    likely_conflict: bool,
    /// Similarity to the closest memory of the same kind, for the importance gate.
    nearest: Option<f32>,
}

/// Each request's closest memories of its kind in its bank's vector index. The requests of one
/// bank and kind are searched together, so that a batch shares one pass over a bank that is
/// still scanned exactly.
fn indexed_neighbours(
    banks: &HashMap<BankName, (BankConfig, Option<Arc<BankView>>)>,
    requests: &[WriteRequest],
    vectors: &[Vec<f32>],
) -> Vec<Vec<(u128, f32)>> {
    let mut found = vec![Vec::new(); requests.len()];
    let mut groups: HashMap<(&BankName, Kind), Vec<usize>> = HashMap::new();
    for (i, request) in requests.iter().enumerate() {
        groups
            .entry((&request.bank, request.kind))
            .or_default()
            .push(i);
    }
    for ((bank, kind), items) in groups {
        let Some(view) = banks[bank].1.as_deref() else {
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
            vectors
                .search_batch(&queries, 3, vectors.ef_search(), &filter)
                .unwrap_or_default()
        });
        for (i, hits) in items.into_iter().zip(results) {
            found[i] = hits;
        }
    }
    found
}

fn neighbours(
    view: Option<&BankView>,
    found: Vec<(u128, f32)>,
    earlier: &[Planned],
    memory: &Memory,
    vector: &[f32],
    config: &BankConfig,
    conflict_similarity: f32,
) -> Neighbours {
    let threshold = config.dedup_threshold;
    let mut best: Option<(MemoryId, f32)> = None;
    let mut nearest: Option<f32> = None;
    let mut near =
        |similarity: f32| nearest = Some(nearest.map_or(similarity, |n| n.max(similarity)));
    let statement = Statement::of(memory);
    let mut likely_conflict = statement.announces_change;
    for p in earlier {
        if p.memory.bank != memory.bank {
            continue;
        }
        let similarity = dot(&p.vector, vector);
        near(similarity);
        if similarity >= threshold
            && best.is_none_or(|(_, s)| similarity > s)
            && statement.restated_by(&p.memory)
        {
            best = Some((p.lands_in, similarity));
        }
    }
    if let Some(view) = view {
        for (id, similarity) in found {
            near(similarity);
            let Some(existing) = view.record(MemoryId(id)) else {
                continue;
            };
            let conflicts_unless_restated =
                similarity >= conflict_similarity || same_slot_other_value(&existing, memory);
            if !conflicts_unless_restated && similarity < threshold {
                // Neither a likely conflict nor a duplicate, whatever it states.
                continue;
            }
            let restates = statement.restated_by(&existing);
            if !restates && conflicts_unless_restated {
                likely_conflict = true;
            }
            if similarity < threshold || best.is_some_and(|(_, s)| s >= similarity) {
                continue;
            }
            if restates {
                best = Some((MemoryId(id), similarity));
                break;
            }
        }
    }
    Neighbours {
        duplicate: best,
        likely_conflict: likely_conflict && best.is_none(),
        nearest,
    }
}

/// How many of the user's statements closest to a write are compared with it for a rule it
/// would relax.
const RULES_COMPARED: usize = 8;

/// The user's statements in `memory`'s bank closest to it, closest first, with their similarity:
/// from the bank's index and from the writes planned before it in the same batch.
fn principal_statements_near(
    view: Option<&BankView>,
    earlier: &[Planned],
    memory: &Memory,
    vector: &[f32],
) -> Vec<(Arc<Memory>, f32)> {
    let by_user =
        |m: &Memory| m.provenance.source == SourceKind::User && !m.status.hidden_by_default();
    let mut close: Vec<(Arc<Memory>, f32)> = earlier
        .iter()
        .filter(|p| p.memory.bank == memory.bank && by_user(&p.memory))
        .map(|p| (Arc::new(p.memory.clone()), dot(&p.vector, vector)))
        .collect();
    if let Some(view) = view {
        let found = view.with_records(|records| {
            let filter = |id: u128| records.get(&MemoryId(id)).is_some_and(|m| by_user(m));
            let vectors = view.index.vectors();
            vectors
                .search_batch(&[vector], RULES_COMPARED, vectors.ef_search(), &filter)
                .unwrap_or_default()
        });
        for (id, similarity) in found.into_iter().flatten() {
            if let Some(rule) = view.record(MemoryId(id)) {
                close.push((rule, similarity));
            }
        }
    }
    close.sort_by(|a, b| b.1.total_cmp(&a.1));
    close.truncate(RULES_COMPARED);
    close
}

fn same_slot_other_value(existing: &Memory, new: &Memory) -> bool {
    matches!((&existing.slot, &new.slot),
        (Some(a), Some(b)) if a.subject == b.subject && a.attribute == b.attribute && a.value != b.value)
}

/// What a new write states, read at most once for all the memories it is compared with.
struct Statement<'a> {
    memory: &'a Memory,
    announces_change: bool,
    negated: OnceCell<bool>,
    numbers: OnceCell<Vec<String>>,
}

impl<'a> Statement<'a> {
    fn of(memory: &'a Memory) -> Self {
        Statement {
            memory,
            announces_change: hindsight_text::has_change_cue(&memory.content).is_some(),
            negated: OnceCell::new(),
            numbers: OnceCell::new(),
        }
    }

    /// Embeddings put "I like tea" and "I no longer like tea" close together; these cheap
    /// checks keep a changed value or a negation from being merged away as a duplicate. The
    /// negations, the costliest to read, are compared last.
    fn restated_by(&self, existing: &Memory) -> bool {
        let new = self.memory;
        if existing.kind != new.kind || self.announces_change {
            return false;
        }
        if same_slot_other_value(existing, new) {
            return false;
        }
        let stated = self.numbers.get_or_init(|| numbers(&new.content));
        if numbers(&existing.content) != *stated {
            return false;
        }
        let negated = *self
            .negated
            .get_or_init(|| hindsight_text::has_negation(&new.content).is_some());
        hindsight_text::has_negation(&existing.content).is_some() == negated
    }
}

fn numbers(text: &str) -> Vec<String> {
    let mut found: Vec<String> = text
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|s| s.trim_matches('.'))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    found.sort();
    found.dedup();
    found
}
