//! The review step (docs/DESIGN.md, "Review") for one bank: expiry of memories whose time to live passed,
//! then a cycle over what changed since the bank's watermark — candidate pairs from the bank's
//! indexes, verdicts from the configured judge, decisions from the bank's strategies, decay. The
//! whole cycle is one Raft command, so replicas agree and every record's history says why it changed.

use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::review::{
    ChangeReason, Conflict, CycleReport, DerivedMemory, MemoryChange, ReviewState,
};
use hindsight_core::{BankName, Consistency, Memory, MemoryId, Timestamp};
use hindsight_review::{
    decay, decided_ids, resolve, select_pairs, Action, Decision, MemoryUpdate, Neighbourhood, Pair,
    PairKey, RulesJudge,
};

use super::ReviewHost;
use crate::bank::homes::NewIds;
use crate::bank::BankView;
use crate::config::ReviewSection;
use crate::error::NodeError;
use crate::review::judging::{judge_with_rules, LlmJudge};
use crate::review::maintenance;
use crate::types::ReviewReport;
use hindsight_index::dot;
use hindsight_review::is_inferred;

/// Decay counts days of disuse, not cycles: a bank reviewed every five minutes must not lose
/// 0.02 of confidence every five minutes.
const DECAY_PERIOD_DAYS: f64 = 1.0;

pub async fn review(
    node: &impl ReviewHost,
    bank: BankName,
    as_of: Option<Timestamp>,
) -> Result<ReviewReport, NodeError> {
    let started = Instant::now();
    let mut phases = Phases::new();
    let now = Timestamp::now();
    let as_of = as_of.unwrap_or(now);
    let view = node
        .banks()
        .read_barrier(std::slice::from_ref(&bank), Consistency::Linearizable)
        .await?
        .remove(0);
    phases.mark("read barrier");
    let expired = expire(node, &bank, &view, as_of, now).await?;
    // Expiry may have replaced the view's records; read the current one.
    let view = node.banks().bank_view(&bank).await?;
    phases.mark("expiry");

    let state = node
        .banks()
        .home_of_bank(&bank)?
        .reader()
        .review_state(&bank)
        .map_err(NodeError::internal)?
        .unwrap_or_default();
    let mut settings = node.config().review.clone();
    let bank_config = view.config();
    if let Some(strategies) = bank_config.strategies.clone() {
        settings.strategies = strategies;
    }
    let max_memories = bank_config.max_memories;
    let voices = user_voices(node, &view, state.watermark, &settings).await?;
    phases.mark("user voices");
    let cycle_view = view.clone();
    let llm = node.llm_judge();
    let ids = node.banks().new_ids(&bank);
    let plan = tokio::task::spawn_blocking(move || {
        plan_cycle(
            &cycle_view,
            &state,
            &settings,
            llm.as_deref(),
            CycleLimits {
                max_memories,
                voices,
                ids,
            },
            as_of,
            now,
        )
    })
    .await
    .map_err(NodeError::internal)?;
    let considered = plan.considered;
    let backlog = plan.backlog;
    let mut plan = plan;
    phases.extend(std::mem::take(&mut plan.phases));
    for derived in &mut plan.created {
        node.sign(&mut derived.memory);
    }
    let mut report = plan.report;
    report.expired = expired.len() as u64;
    report.took_micros = started.elapsed().as_micros() as u64;
    phases.restart();
    let (log_index, outcome) = node
        .banks()
        .propose_for_bank(
            &bank,
            Command::Review {
                bank: bank.clone(),
                changes: plan.changes,
                conflicts: plan.conflicts,
                report: report.clone(),
                watermark: plan.watermark,
                deferred: plan.deferred,
                created: plan.created,
                purged: plan.purged,
            },
        )
        .await?;
    let (updated, conflicts, cycle, created, purged) = match outcome {
        CommandOutcome::Reviewed {
            changed,
            conflicts,
            cycle,
            created,
            purged,
        } => (changed, conflicts, cycle, created, purged),
        CommandOutcome::Rejected { reason, not_found } => {
            return Err(NodeError::refused(reason, not_found))
        }
        other => {
            return Err(NodeError::internal(format!(
                "unexpected outcome of a review: {other:?}"
            )))
        }
    };
    phases.mark("propose");
    // Only changed memories reach the bank's actor; a cycle that changed nothing has nothing to
    // wait for.
    if !updated.is_empty() || !created.is_empty() || !purged.is_empty() {
        node.banks().wait_indexed(view, log_index).await?;
    }
    phases.mark("apply and index");
    report.cycle = cycle;
    crate::review::quarantine_review::check(node, &bank, report.tokens_used).await?;
    phases.mark("quarantine check");
    report.took_micros = started.elapsed().as_micros() as u64;
    if !updated.is_empty() || !expired.is_empty() || !created.is_empty() || !purged.is_empty() {
        tracing::info!(
            %bank, %as_of, cycle, expired = expired.len(), updated = updated.len(),
            created = created.len(), purged = purged.len(),
            conflicts = conflicts.len(), pairs = report.pairs_judged, "review cycle"
        );
    }
    Ok(ReviewReport {
        bank: bank.to_string(),
        as_of,
        considered,
        expired,
        updated,
        conflicts_opened: conflicts,
        created,
        purged,
        backlog,
        cycle: report,
        phases: phases.done(),
    })
}

/// Wall-clock time of a cycle's steps, each from the end of the one before.
struct Phases {
    steps: Vec<(String, u64)>,
    since: Instant,
}

impl Phases {
    fn new() -> Self {
        Phases {
            steps: vec![],
            since: Instant::now(),
        }
    }

    fn mark(&mut self, step: &str) {
        let now = Instant::now();
        self.steps
            .push((step.to_string(), (now - self.since).as_micros() as u64));
        self.since = now;
    }

    /// Steps timed elsewhere (the plan, on a blocking thread) were added; the next step starts now.
    fn extend(&mut self, steps: Vec<(String, u64)>) {
        self.steps.extend(steps);
        self.since = Instant::now();
    }

    fn restart(&mut self) {
        self.since = Instant::now();
    }

    fn done(self) -> Vec<(String, u64)> {
        self.steps
    }
}

async fn expire(
    node: &impl ReviewHost,
    bank: &BankName,
    view: &Arc<BankView>,
    as_of: Timestamp,
    now: Timestamp,
) -> Result<Vec<MemoryId>, NodeError> {
    let mut due: Vec<MemoryId> = view.with_records(|records| {
        records
            .values()
            .filter(|m| m.is_expired_at(as_of) && !m.status.hidden_by_default())
            .map(|m| m.id)
            .collect()
    });
    if due.is_empty() {
        return Ok(vec![]);
    }
    due.sort();
    let (log_index, outcome) = node
        .banks()
        .propose_for_bank(
            bank,
            Command::Expire {
                bank: bank.clone(),
                ids: due,
                as_of,
                at: now,
            },
        )
        .await?;
    let CommandOutcome::Expired { ids } = outcome else {
        return Err(NodeError::internal(format!(
            "unexpected outcome of expiry: {outcome:?}"
        )));
    };
    node.banks().wait_indexed(view.clone(), log_index).await?;
    Ok(ids)
}

/// What one cycle will propose.
struct CyclePlan {
    changes: Vec<MemoryChange>,
    conflicts: Vec<Conflict>,
    report: CycleReport,
    watermark: u64,
    deferred: Vec<(MemoryId, MemoryId)>,
    created: Vec<DerivedMemory>,
    purged: Vec<MemoryId>,
    considered: usize,
    backlog: u64,
    phases: Vec<(String, u64)>,
}

/// What a cycle needs besides the view and the settings.
struct CycleLimits {
    max_memories: u64,
    voices: HashMap<MemoryId, Vec<f32>>,
    /// Ids for the rules the cycle distils.
    ids: NewIds,
}

/// An agent writes about "the user", the user about "I": the same claim lands further apart in
/// embedding space than its content warrants. Inferences that may meet a statement in this
/// cycle get a second vector, embedded in the user's voice ("I seem to work late"), which the
/// review's neighbourhood compares with statements instead of the third-person one.
async fn user_voices(
    node: &impl ReviewHost,
    view: &BankView,
    watermark: u64,
    settings: &ReviewSection,
) -> Result<HashMap<MemoryId, Vec<f32>>, NodeError> {
    let loose = settings.pairs.inference_similarity / 2.0;
    let limit = settings.pairs.neighbours_per_memory;
    let texts: Vec<(MemoryId, String)> = view.with_records(|records| {
        let inferences = reviewable_inferences(records);
        if inferences.is_empty() {
            return vec![];
        }
        let vectors = view.index.vectors();
        let inference_vectors: Vec<(&Arc<Memory>, Vec<f32>)> =
            if inferences.len() <= DIRECT_SCAN_LIMIT {
                inferences
                    .iter()
                    .filter_map(|m| Some((m, vectors.get(m.id.0)?)))
                    .collect()
            } else {
                vec![]
            };
        let is_inference = |id: u128| {
            records
                .get(&MemoryId(id))
                .is_some_and(|m| is_inferred(m) && hindsight_review::is_reviewable(m))
        };
        let mut wanted: BTreeMap<MemoryId, String> = BTreeMap::new();
        let mut voice = |m: &Memory| {
            if let Some(text) = hindsight_text::in_user_voice(&m.content) {
                wanted.insert(m.id, text);
            }
        };
        for m in records.values().filter(|m| m.updated_index > watermark) {
            if !hindsight_review::is_reviewable(m) {
                continue;
            }
            if is_inferred(m) {
                voice(m);
                continue;
            }
            let Some(vector) = vectors.get(m.id.0) else {
                continue;
            };
            if inference_vectors.is_empty() {
                for (id, similarity) in vectors
                    .search(&vector, limit, &is_inference)
                    .unwrap_or_default()
                {
                    if similarity >= loose {
                        if let Some(other) = records.get(&MemoryId(id)) {
                            voice(other);
                        }
                    }
                }
            } else {
                for (other, v) in &inference_vectors {
                    if dot(&vector, v) >= loose {
                        voice(other);
                    }
                }
            }
        }
        wanted.into_iter().collect()
    });
    if texts.is_empty() {
        return Ok(HashMap::new());
    }
    let (ids, texts): (Vec<MemoryId>, Vec<String>) = texts.into_iter().unzip();
    let vectors = crate::bank::embedding::embed(&node.banks().context().embedder, texts).await?;
    Ok(ids.into_iter().zip(vectors).collect())
}

fn reviewable_inferences(records: &HashMap<MemoryId, Arc<Memory>>) -> Vec<Arc<Memory>> {
    let mut out: Vec<Arc<Memory>> = records
        .values()
        .filter(|m| is_inferred(m) && hindsight_review::is_reviewable(m))
        .cloned()
        .collect();
    out.sort_by_key(|m| m.id);
    out
}

fn plan_cycle(
    view: &BankView,
    state: &ReviewState,
    settings: &ReviewSection,
    llm: Option<&LlmJudge>,
    limits: CycleLimits,
    as_of: Timestamp,
    now: Timestamp,
) -> CyclePlan {
    let mut phases = Phases::new();
    let CycleLimits {
        max_memories,
        voices,
        ids,
    } = limits;
    // Everything through this index is in the records read below; later changes wait for the
    // next cycle (or are seen twice, which is harmless).
    let indexed_through = view.indexed_through();
    let records: HashMap<MemoryId, Arc<Memory>> = view.with_records(|r| r.clone());
    let changed: Vec<Arc<Memory>> = records
        .values()
        .filter(|m| m.updated_index > state.watermark)
        .cloned()
        .collect();
    let (mut changed, watermark, backlog) =
        oldest_changes(changed, settings.max_changed_per_cycle, indexed_through);
    changed.sort_by_key(|m| m.id);
    phases.mark("gather changed");
    let hood = ViewNeighbourhood::new(view, &records, voices, &changed);
    phases.mark("group slots");
    hood.search_ahead(&changed, settings.pairs.neighbours_per_memory);
    phases.mark("neighbour search");
    let selection = select_pairs(&changed, records.len(), &hood, &settings.pairs);
    phases.mark("select pairs");
    let mut pairs = selection.pairs;
    let mut keys: HashSet<PairKey> = pairs.iter().map(Pair::key).collect();
    for (a, b) in &state.deferred {
        if let (Some(a), Some(b)) = (records.get(a), records.get(b)) {
            if keys.insert(PairKey::new(a.id, b.id)) {
                pairs.push(Pair::new(a.clone(), b.clone(), None));
            }
        }
    }
    let pairs_considered = pairs.len();
    let judged = match llm {
        Some(llm) => llm.judge_within_budget(pairs.clone()),
        None => judge_with_rules(&RulesJudge::new(settings.rules.clone()), &pairs),
    };
    let judgements = judged.judgements;
    phases.mark("judge");
    let mut decisions = resolve(&pairs, &judgements, &settings.strategies);
    phases.mark("resolve");

    let last_decay = state.last.as_ref().map(|r| r.as_of);
    let decay_due = last_decay.is_none_or(|t| as_of.days_since(t) >= DECAY_PERIOD_DAYS);
    if decay_due && settings.decay.per_cycle > 0.0 {
        if let Some(since) = last_decay {
            let all: Vec<Arc<Memory>> = records.values().cloned().collect();
            let decided = decided_ids(&decisions);
            decisions.extend(decay(&all, since, &decided, &settings.decay));
        }
    }
    phases.mark("decay");
    let (distilled, created) =
        maintenance::distillation(&changed, &records, &hood, &settings.distill, ids, now);
    decisions.extend(distilled);
    phases.mark("distill");
    let quota = maintenance::Quota {
        memories: max_memories,
        bytes: view.config().max_bytes,
    };
    decisions.extend(maintenance::capacity(
        &view.name,
        &records,
        quota,
        &decided_ids(&decisions),
    ));
    let purged = maintenance::purge_due(&records, as_of, settings.archive_retention_days);
    phases.mark("quota and purge");

    let (changes, conflicts) = to_changes(&decisions, &records, now);
    let mut by_action: BTreeMap<String, u64> = BTreeMap::new();
    for decision in &decisions {
        *by_action
            .entry(decision.action.name().to_string())
            .or_default() += 1;
    }
    let report = CycleReport {
        cycle: 0,
        as_of,
        started_at: now,
        took_micros: 0,
        changed: changed.len() as u64,
        pairs_considered: pairs_considered as u64,
        all_pairs: selection.stats.all_pairs,
        pairs_judged: judgements.len() as u64,
        pairs_deferred: judged.deferred.len() as u64,
        tokens_used: judged.tokens_used,
        token_budget: judged.token_budget,
        judge: judged.judge,
        decisions: by_action,
        expired: 0,
    };
    CyclePlan {
        changes,
        conflicts,
        report,
        watermark,
        deferred: judged.deferred,
        created,
        purged,
        considered: records.len(),
        backlog,
        phases: {
            phases.mark("changes");
            phases.done()
        },
    }
}

/// At most `max` of the changed memories, oldest changes first, and the watermark the cycle
/// reaches with them. A log entry's changes are taken whole (the watermark is a log index), so a
/// cycle may exceed `max` by the rest of one entry.
fn oldest_changes(
    mut changed: Vec<Arc<Memory>>,
    max: usize,
    indexed_through: u64,
) -> (Vec<Arc<Memory>>, u64, u64) {
    if changed.len() <= max.max(1) {
        return (changed, indexed_through, 0);
    }
    changed.sort_by_key(|m| (m.updated_index, m.id));
    let last_index = changed[max.max(1) - 1].updated_index;
    let end = changed.partition_point(|m| m.updated_index <= last_index);
    let backlog = (changed.len() - end) as u64;
    changed.truncate(end);
    (changed, last_index, backlog)
}

/// The decisions as replicated changes: one [`MemoryChange`] per memory that changes, and a
/// conflict-queue entry per undecidable pair.
fn to_changes(
    decisions: &[Decision],
    records: &HashMap<MemoryId, Arc<Memory>>,
    now: Timestamp,
) -> (Vec<MemoryChange>, Vec<Conflict>) {
    let occurred = |id: MemoryId| records.get(&id).map_or(now, |m| m.occurred_at);
    let mut changes = vec![];
    let mut conflicts = vec![];
    for decision in decisions {
        let change = |update: &MemoryUpdate,
                      reason: ChangeReason,
                      related: Option<MemoryId>,
                      effective_at: Timestamp| MemoryChange {
            id: update.id,
            reason,
            status: update.status.clone(),
            confidence: update.confidence,
            valid_to: update.valid_to,
            absorbed: None,
            derived: vec![],
            related,
            effective_at,
            judge: decision.judge.clone(),
            explanation: decision.reason.clone(),
        };
        match &decision.action {
            Action::Supersede { newer, older } => {
                let at = occurred(newer.id);
                changes.push(change(older, ChangeReason::Superseded, Some(newer.id), at));
                if newer.changes_anything() {
                    changes.push(change(newer, ChangeReason::Confirmed, Some(older.id), at));
                }
            }
            Action::Falsify { fact, inference } => {
                let at = occurred(*fact);
                changes.push(change(inference, ChangeReason::Falsified, Some(*fact), at));
            }
            Action::Dispute { a, b } => {
                let at = occurred(a.id).max(occurred(b.id));
                changes.push(change(a, ChangeReason::Disputed, Some(b.id), at));
                changes.push(change(b, ChangeReason::Disputed, Some(a.id), at));
            }
            Action::PendingReview { a, b, .. } => {
                let at = occurred(a.id).max(occurred(b.id));
                for (update, other) in [(a, b.id), (b, a.id)] {
                    if update.changes_anything() {
                        changes.push(change(update, ChangeReason::PendingReview, Some(other), at));
                    }
                }
                conflicts.push(Conflict {
                    id: 0,
                    bank: records
                        .get(&a.id)
                        .map(|m| m.bank.clone())
                        .expect("a pair's memories come from the bank"),
                    a: a.id,
                    b: b.id,
                    judge: decision.judge.clone(),
                    explanation: decision.reason.clone(),
                    opened_at: now,
                    resolution: None,
                });
            }
            Action::Merge { into, from, .. } => {
                let at = occurred(into.id).max(occurred(*from));
                let mut away = change(
                    &MemoryUpdate::of(*from)
                        .status(hindsight_core::Status::Superseded { by: into.id }),
                    ChangeReason::MergedAway,
                    Some(into.id),
                    at,
                );
                away.explanation = format!("restates {}: {}", into.id, decision.reason);
                changes.push(away);
                let mut absorbed = change(into, ChangeReason::Absorbed, Some(*from), at);
                absorbed.absorbed = Some(*from);
                changes.push(absorbed);
            }
            Action::Decay(update) => changes.push(change(update, ChangeReason::Decayed, None, now)),
            Action::Archive(update) => {
                changes.push(change(update, ChangeReason::Archived, None, now))
            }
            Action::Reinforce { rule, episodes } => {
                let at = episodes.iter().map(|id| occurred(*id)).max().unwrap_or(now);
                let mut reinforced = change(rule, ChangeReason::Reinforced, None, at);
                reinforced.derived = episodes.clone();
                changes.push(reinforced);
            }
            // Distilled rules are new records; the cycle carries them whole.
            Action::Distill(_) => {}
        }
    }
    (changes, conflicts)
}

/// The bank's published view as the review's [`Neighbourhood`].
struct ViewNeighbourhood<'a> {
    view: &'a BankView,
    records: &'a HashMap<MemoryId, Arc<Memory>>,
    /// The reviewable claims of the slots the cycle's changed memories state, most recent first.
    /// Only those slots: a cycle asks for no others, and grouping the whole bank cost every cycle
    /// time in proportion to the bank rather than to the change.
    by_slot: SlotGroups,
    /// Neighbour searches by memory and size: candidate selection and distillation ask for the
    /// same memory's neighbours, and an index search is the dearest step of a cycle.
    searched: RefCell<Searches>,
    /// Inferences' vectors in the user's voice (see [`user_voices`]).
    voices: HashMap<MemoryId, Vec<f32>>,
    /// The bank's reviewable inferences, usually few.
    inferences: Vec<Arc<Memory>>,
}

/// Up to this many inferences in a bank, a statement is compared with each of them directly;
/// beyond it, a filtered index search is cheaper.
const DIRECT_SCAN_LIMIT: usize = 2_000;

impl<'a> ViewNeighbourhood<'a> {
    /// `changed` are the memories whose slots [`Neighbourhood::same_slot`] will be asked about.
    fn new(
        view: &'a BankView,
        records: &'a HashMap<MemoryId, Arc<Memory>>,
        voices: HashMap<MemoryId, Vec<f32>>,
        changed: &[Arc<Memory>],
    ) -> Self {
        let mut by_slot = SlotGroups::default();
        for slot in changed.iter().filter_map(|m| m.slot.as_ref()) {
            by_slot
                .entry(slot.subject.clone())
                .or_default()
                .entry(slot.attribute.clone())
                .or_default();
        }
        if !by_slot.is_empty() {
            for memory in records
                .values()
                .filter(|m| hindsight_review::is_reviewable(m))
            {
                if let Some(group) = memory
                    .slot
                    .as_ref()
                    .and_then(|slot| by_slot.get_mut(&slot.subject)?.get_mut(&slot.attribute))
                {
                    group.push(memory.clone());
                }
            }
        }
        for group in by_slot.values_mut().flat_map(HashMap::values_mut) {
            group.sort_by(|a, b| b.occurred_at.cmp(&a.occurred_at).then(a.id.cmp(&b.id)));
        }
        let inferences = reviewable_inferences(records);
        ViewNeighbourhood {
            view,
            records,
            by_slot,
            searched: RefCell::default(),
            voices,
            inferences,
        }
    }
}

impl ViewNeighbourhood<'_> {
    /// Runs the neighbour searches of `memories` on every core before pair selection asks for them
    /// one by one: they are independent of each other, and together they are most of a cycle's
    /// planning time.
    fn search_ahead(&self, memories: &[Arc<Memory>], limit: usize) {
        let todo: Vec<MemoryId> = {
            let searched = self.searched.borrow();
            memories
                .iter()
                .filter(|m| hindsight_review::is_reviewable(m))
                .map(|m| m.id)
                .filter(|id| !searched.contains_key(&(*id, limit)))
                .collect()
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(todo.len() / SEARCHES_PER_THREAD)
            .max(1);
        let (view, records) = (self.view, self.records);
        let search = |part: &[MemoryId]| -> Vec<(SearchKey, Vec<(u128, f32)>)> {
            part.iter()
                .filter_map(|id| Some(((*id, limit), search_similar(view, records, *id, limit)?)))
                .collect()
        };
        let found = if threads == 1 {
            search(&todo)
        } else {
            std::thread::scope(|scope| {
                let workers: Vec<_> = todo
                    .chunks(todo.len().div_ceil(threads))
                    .map(|part| scope.spawn(move || search(part)))
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| w.join().expect("a neighbour search panicked"))
                    .collect()
            })
        };
        self.searched.borrow_mut().extend(found);
    }
}

/// Fewer searches than this are not worth a thread of their own.
const SEARCHES_PER_THREAD: usize = 32;

impl Neighbourhood for ViewNeighbourhood<'_> {
    fn similar(
        &self,
        memory: &Memory,
        min_similarity: f32,
        limit: usize,
    ) -> Vec<(Arc<Memory>, f32)> {
        let mut searched = self.searched.borrow_mut();
        let found = match searched.entry((memory.id, limit)) {
            Entry::Occupied(found) => found.into_mut(),
            Entry::Vacant(slot) => {
                let Some(found) = search_similar(self.view, self.records, memory.id, limit) else {
                    return vec![];
                };
                slot.insert(found)
            }
        };
        found
            .iter()
            .copied()
            .filter(|(id, sim)| *id != memory.id.0 && *sim >= min_similarity)
            .filter_map(|(id, sim)| Some((self.records.get(&MemoryId(id))?.clone(), sim)))
            .take(limit)
            .collect()
    }

    fn similar_across(
        &self,
        memory: &Memory,
        min_similarity: f32,
        limit: usize,
    ) -> Vec<(Arc<Memory>, f32)> {
        let vectors = self.view.index.vectors();
        let Some(vector) = vectors.get(memory.id.0) else {
            return vec![];
        };
        let own_voice = self.voices.get(&memory.id);
        let mut found: HashMap<u128, f32> = HashMap::new();
        if is_inferred(memory) || self.inferences.len() > DIRECT_SCAN_LIMIT {
            // The other side is large: a filtered search passes most of the index.
            let other_side = !is_inferred(memory);
            let wanted = |id: u128| {
                id != memory.id.0
                    && self.records.get(&MemoryId(id)).is_some_and(|m| {
                        hindsight_review::is_reviewable(m) && is_inferred(m) == other_side
                    })
            };
            for query in std::iter::once(&vector).chain(own_voice) {
                for (id, sim) in vectors.search(query, limit, &wanted).unwrap_or_default() {
                    let entry = found.entry(id).or_insert(sim);
                    *entry = entry.max(sim);
                }
            }
        } else {
            // A statement against the bank's few inferences: compare with each directly.
            for other in &self.inferences {
                if let Some(v) = vectors.get(other.id.0) {
                    found.insert(other.id.0, dot(&vector, &v));
                }
            }
        }
        // A candidate with a voice of its own is compared in that voice too.
        let mut out: Vec<(Arc<Memory>, f32)> = found
            .into_iter()
            .filter_map(|(id, sim)| {
                let other = self.records.get(&MemoryId(id))?;
                let voiced = self
                    .voices
                    .get(&other.id)
                    .map_or(sim, |v| sim.max(dot(own_voice.unwrap_or(&vector), v)));
                Some((other.clone(), voiced))
            })
            .filter(|(_, sim)| *sim >= min_similarity)
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.id.cmp(&b.0.id)));
        out.truncate(limit);
        out
    }

    fn same_slot(&self, memory: &Memory, limit: usize) -> Vec<Arc<Memory>> {
        memory
            .slot
            .as_ref()
            .and_then(|slot| self.by_slot.get(&slot.subject)?.get(&slot.attribute))
            .map(|group| {
                group
                    .iter()
                    .filter(|m| m.id != memory.id)
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The index's nearest reviewable memories to `id` (itself among them), `None` when it has no
/// vector.
fn search_similar(
    view: &BankView,
    records: &HashMap<MemoryId, Arc<Memory>>,
    id: MemoryId,
    limit: usize,
) -> Option<Vec<(u128, f32)>> {
    let vectors = view.index.vectors();
    let vector = vectors.get(id.0)?;
    let reviewable = |id: u128| {
        records
            .get(&MemoryId(id))
            .is_some_and(|m| hindsight_review::is_reviewable(m))
    };
    Some(
        vectors
            .search_with_ef(&vector, limit + 1, REVIEW_SEARCH_EF, &reviewable)
            .unwrap_or_default(),
    )
}

/// The candidate list of a review's neighbour search, half a recall's: the review pairs a memory
/// only with neighbours at least `duplicate_similarity` (0.75) close, which a graph search finds
/// early, and this search is run once for every changed memory of a cycle.
const REVIEW_SEARCH_EF: usize = 64;

/// Index hits (id, similarity) by memory and number asked for.
type Searches = HashMap<SearchKey, Vec<(u128, f32)>>;

/// A memory and the number of neighbours asked for.
type SearchKey = (MemoryId, usize);

/// Memories by slot subject, then attribute.
type SlotGroups = HashMap<String, HashMap<String, Vec<Arc<Memory>>>>;
