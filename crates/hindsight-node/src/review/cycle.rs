//! The review step (docs/DESIGN.md, "Review") for one bank: expiry of memories whose time to live passed,
//! then a cycle over what changed since the bank's watermark — candidate pairs from the bank's
//! indexes, verdicts from the configured judge, decisions from the bank's strategies, decay. The
//! cycle's decisions are Raft commands, so replicas agree and every record's history says why it
//! changed: changes beyond the last [`CHANGES_PER_ENTRY`] go ahead in `ReviewPart` commands, and
//! one `Review` command closes the cycle with the rest, its conflicts, report and watermark.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use hindsight_core::command::{Command, CommandOutcome};
use hindsight_core::review::{Conflict, CycleReport, DerivedMemory, MemoryChange, ReviewState};
use hindsight_core::{BankName, Consistency, Memory, MemoryId, Timestamp};
use hindsight_review::{decay, decided_ids, resolve, select_pairs, RulesJudge};

use super::candidates::{changed_since, with_deferred};
use super::decisions::{count_by_action, decay_since, to_changes};
use super::expiry::expire;
use super::neighbourhood::ViewNeighbourhood;
use super::voices::user_voices;
use super::ReviewHost;
use crate::bank::homes::NewIds;
use crate::bank::BankView;
use crate::config::ReviewSection;
use crate::error::NodeError;
use crate::review::judging::{judge_with_rules, LlmJudge};
use crate::review::maintenance;
use crate::types::ReviewReport;

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
    let llm = node.reviewing().llm_judge();
    let ids = node.banks().new_ids(&bank);
    // Below the priority of the threads that serve requests: a cycle over a backlog of thousands
    // of changes plans for seconds of CPU, and recalls should not wait for it. A cycle that asks a
    // model waits on the network instead, which would hold up the pool's few threads: it stays on
    // a blocking thread of its own.
    let plan = tokio::task::spawn_blocking(move || {
        // Read here, at the serving threads' priority: the copy holds the records' read lock,
        // and a planner at the builds' low priority, descheduled while holding it on a busy
        // machine, held up the bank's writes waiting for that lock and the recalls queued behind
        // them.
        let bank = BankRead::now(&cycle_view);
        let plan = || {
            plan_cycle(
                bank,
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
        };
        if llm.is_none() {
            hindsight_index::run_in_background(plan)
        } else {
            plan()
        }
    })
    .await
    .map_err(NodeError::internal)?;
    let considered = plan.considered;
    let backlog = plan.backlog;
    let mut plan = plan;
    phases.extend(std::mem::take(&mut plan.phases));
    for derived in &mut plan.created {
        node.writing().sign(&mut derived.memory);
    }
    let mut report = plan.report;
    report.expired = expired.len() as u64;
    report.took_micros = started.elapsed().as_micros() as u64;
    phases.restart();
    let mut parted = PartsApplied::default();
    let parts = leading_parts(&mut plan.changes, &mut plan.purged);
    let entries = parts.len() + 1;
    for (changes, purged) in parts {
        let part = Command::ReviewPart {
            bank: bank.clone(),
            changes,
            purged,
            at: report.started_at,
        };
        match node.banks().propose_for_bank(&bank, part).await? {
            (_, CommandOutcome::ReviewPartApplied { changed, purged }) => {
                parted.changed.extend(changed);
                parted.purged.extend(purged);
            }
            (_, CommandOutcome::Rejected { reason, not_found }) => {
                return Err(NodeError::refused(reason, not_found))
            }
            (_, other) => {
                return Err(NodeError::internal(format!(
                    "unexpected outcome of a review part: {other:?}"
                )))
            }
        }
    }
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
        } => (
            [parted.changed, changed].concat(),
            conflicts,
            cycle,
            created,
            [parted.purged, purged].concat(),
        ),
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
            conflicts = conflicts.len(), pairs = report.pairs_judged,
            entries, "review cycle"
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

/// Most changes and purges one review entry carries. Entries apply one after another, each change
/// costs about as much as a write to apply (a record read and rewritten, its history written),
/// and the writes behind an entry wait for it. Under the cluster bench's open-loop writes, whose
/// memories contradict each other, cycles changed a median of 300 memories (at most 1,700): in
/// one entry each, applies took up to 250 ms and write acknowledgements p99 150 to 600 ms; in
/// parts of 128, write p99 83 ms; in parts of 32, applies stayed within 5 ms at p99 and writes
/// within 41 ms (docs/PERFORMANCE.md). More parts cost a cycle one Raft round trip each.
const CHANGES_PER_ENTRY: usize = 32;

/// What the parts of a cycle ahead of its closing entry changed.
#[derive(Default)]
struct PartsApplied {
    changed: Vec<MemoryId>,
    purged: Vec<MemoryId>,
}

/// Takes the changes and purges beyond what the closing entry carries, in parts of at most
/// [`CHANGES_PER_ENTRY`], in the cycle's order: changes first, then purges. What is left in
/// `changes` and `purged` fits the closing entry.
fn leading_parts(
    changes: &mut Vec<MemoryChange>,
    purged: &mut Vec<MemoryId>,
) -> Vec<(Vec<MemoryChange>, Vec<MemoryId>)> {
    let total = changes.len() + purged.len();
    if total <= CHANGES_PER_ENTRY {
        return vec![];
    }
    // The closing entry keeps the last part, whole or not; every full part before it goes ahead.
    let ahead = (total - 1) / CHANGES_PER_ENTRY;
    (0..ahead)
        .map(|_| {
            let part_changes: Vec<MemoryChange> = changes
                .drain(..CHANGES_PER_ENTRY.min(changes.len()))
                .collect();
            let room = CHANGES_PER_ENTRY - part_changes.len();
            let part_purged: Vec<MemoryId> = purged.drain(..room.min(purged.len())).collect();
            (part_changes, part_purged)
        })
        .collect()
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

/// A bank's view with its records as a cycle plans over them, and the log index they show
/// everything through.
struct BankRead<'a> {
    view: &'a BankView,
    records: HashMap<MemoryId, Arc<Memory>>,
    indexed_through: u64,
}

impl<'a> BankRead<'a> {
    fn now(view: &'a BankView) -> Self {
        // Everything through this index is in the records read below; later changes wait for the
        // next cycle (or are seen twice, which is harmless).
        let indexed_through = view.indexed_through();
        let records = view.with_records(|r| r.clone());
        BankRead {
            view,
            records,
            indexed_through,
        }
    }
}

fn plan_cycle(
    bank: BankRead<'_>,
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
    let BankRead {
        view,
        records,
        indexed_through,
    } = bank;
    let batch = changed_since(
        &records,
        state.watermark,
        settings.max_changed_per_cycle,
        indexed_through,
    );
    let (changed, watermark, backlog) = (batch.memories, batch.watermark, batch.backlog);
    phases.mark("gather changed");
    let hood = ViewNeighbourhood::new(view, &records, voices, &changed);
    phases.mark("group slots");
    hood.search_ahead(&changed, settings.pairs.neighbours_per_memory);
    phases.mark("neighbour search");
    let selection = select_pairs(&changed, records.len(), &hood, &settings.pairs);
    phases.mark("select pairs");
    let pairs = with_deferred(selection.pairs, &state.deferred, &records);
    let pairs_considered = pairs.len();
    let judged = match llm {
        Some(llm) => llm.judge_within_budget(pairs.clone()),
        None => judge_with_rules(&RulesJudge::new(settings.rules.clone()), &pairs),
    };
    let judgements = judged.judgements;
    phases.mark("judge");
    let mut decisions = resolve(&pairs, &judgements, &settings.strategies);
    phases.mark("resolve");

    let last_cycle = state.last.as_ref().map(|r| r.as_of);
    if let Some(since) = decay_since(last_cycle, as_of, settings.decay.per_cycle) {
        let all: Vec<Arc<Memory>> = records.values().cloned().collect();
        let decided = decided_ids(&decisions);
        decisions.extend(decay(&all, since, &decided, &settings.decay));
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
        decisions: count_by_action(&decisions),
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

#[cfg(test)]
mod tests {
    use hindsight_core::review::ChangeReason;

    use super::*;

    fn changes(ids: std::ops::Range<u128>) -> Vec<MemoryChange> {
        ids.map(|id| MemoryChange {
            id: MemoryId(id),
            reason: ChangeReason::Decayed,
            status: None,
            confidence: Some(0.5),
            valid_to: None,
            absorbed: None,
            derived: vec![],
            related: None,
            effective_at: Timestamp(1),
            judge: "rules".into(),
            explanation: String::new(),
        })
        .collect()
    }

    fn ids(range: std::ops::Range<u128>) -> Vec<MemoryId> {
        range.map(MemoryId).collect()
    }

    const C: usize = CHANGES_PER_ENTRY;

    fn sizes(parts: &[(Vec<MemoryChange>, Vec<MemoryId>)]) -> Vec<(usize, usize)> {
        parts.iter().map(|(c, p)| (c.len(), p.len())).collect()
    }

    #[test]
    fn a_cycle_that_fits_one_entry_proposes_no_part() {
        let (mut c, mut p) = (changes(0..C as u128 - 3), ids(1000..1003));
        assert!(leading_parts(&mut c, &mut p).is_empty());
        assert_eq!((c.len(), p.len()), (C - 3, 3));
    }

    #[test]
    fn a_large_cycle_goes_ahead_in_full_parts_in_order_and_the_closing_entry_keeps_the_rest() {
        let n = 2 * C as u128 + 10;
        let (mut c, mut p) = (changes(0..n), ids(1000..1005));
        let parts = leading_parts(&mut c, &mut p);
        assert_eq!(sizes(&parts), vec![(C, 0), (C, 0)]);
        assert_eq!(parts[1].0[0].id, MemoryId(C as u128));
        assert_eq!((c.len(), p.len()), (10, 5));
        assert_eq!(c[0].id, MemoryId(2 * C as u128));

        let (mut c, mut p) = (changes(0..C as u128 + 5), ids(1000..1000 + C as u128));
        let parts = leading_parts(&mut c, &mut p);
        assert_eq!(
            sizes(&parts),
            vec![(C, 0), (5, C - 5)],
            "purges fill a part after the changes"
        );
        assert_eq!(parts[1].1[0], MemoryId(1000));
        assert_eq!((c.len(), p.len()), (0, 5));

        let (mut c, mut p) = (changes(0..2 * C as u128), vec![]);
        let parts = leading_parts(&mut c, &mut p);
        assert_eq!(parts.len(), 1);
        assert_eq!(
            c.len(),
            C,
            "the closing entry carries a whole part, not nothing"
        );
    }
}
