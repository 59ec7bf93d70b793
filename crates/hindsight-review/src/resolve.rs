//! From verdicts to decisions: applies the bank's strategies so that no memory gets two
//! conflicting decisions in one cycle.
//!
//! Verdicts are processed in a fixed order. Refuted inferences come first: they are the most
//! certain. Duplicates follow, so that each fact is one memory before anything else happens to
//! it; a later verdict about a merged-away rewording applies to the memory it was merged into.
//! Updates come next, newest first, so the latest value supersedes every older one directly
//! rather than through a chain; then source conflicts and undecidable ones. A memory superseded,
//! falsified or merged away is out of the cycle, and later verdicts touching it are skipped.
//! Confidence changes compose in order, so decisions must be applied in the order given.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use hindsight_core::{Memory, MemoryId, SourceKind, Status, Timestamp};

use crate::decision::{Action, Decision, MemoryUpdate};
use crate::judge::{Judgement, Relation};
use crate::pair::{is_reviewable, Pair, PairKey};
use hindsight_core::strategy::{
    DuplicateStrategy, InferenceStrategy, SourceStrategy, Strategies, TemporalStrategy,
    UndecidableStrategy,
};

/// The decisions for one cycle's verdicts, in the order they must be applied.
///
/// Verdicts for pairs not in `pairs`, verdicts naming memories outside their pair, and any verdict
/// after the first for the same pair are ignored. `critical` memories are never superseded,
/// falsified, merged away or down-weighted on the word of an agent inference; such a verdict goes
/// to the conflict queue with only the inference flagged.
pub fn resolve(pairs: &[Pair], judgements: &[Judgement], strategies: &Strategies) -> Vec<Decision> {
    let by_key: BTreeMap<PairKey, &Pair> = pairs.iter().map(|p| (p.key(), p)).collect();
    let mut seen = BTreeSet::new();
    let mut verdicts: Vec<Verdict> = judgements
        .iter()
        .filter(|j| j.is_consistent())
        .filter(|j| seen.insert(j.pair))
        .filter(|j| j.relation != Relation::Unrelated)
        .filter_map(|j| {
            let pair = *by_key.get(&j.pair)?;
            (is_reviewable(&pair.a) && is_reviewable(&pair.b))
                .then_some(Verdict { judgement: j, pair })
        })
        .collect();
    verdicts.sort_by_key(|v| v.order());

    let mut cycle = Cycle {
        strategies,
        ledger: HashMap::new(),
        survivor_of: HashMap::new(),
        decided_pairs: BTreeSet::new(),
        decisions: Vec::new(),
    };
    let duplicates: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| v.judgement.relation == Relation::Duplicate)
        .collect();
    for v in verdicts
        .iter()
        .filter(|v| v.rank() < Verdict::DUPLICATE_RANK)
    {
        cycle.decide(v);
    }
    let conflicts: BTreeSet<PairKey> = verdicts
        .iter()
        .filter(|v| v.judgement.relation.is_conflict())
        .map(|v| v.pair.key())
        .collect();
    cycle.merge_duplicates(&duplicates, &conflicts);
    for v in verdicts
        .iter()
        .filter(|v| v.rank() > Verdict::DUPLICATE_RANK)
    {
        cycle.decide(v);
    }
    cycle.decisions
}

/// A verdict with the pair it is about.
struct Verdict<'a> {
    judgement: &'a Judgement,
    pair: &'a Pair,
}

type TimeOrder = (Timestamp, Timestamp, MemoryId);

fn time_order(m: &Memory) -> TimeOrder {
    (m.occurred_at, m.recorded_at, m.id)
}

impl Verdict<'_> {
    const DUPLICATE_RANK: u8 = 1;

    fn rank(&self) -> u8 {
        match &self.judgement.relation {
            Relation::InferenceRefuted { .. } => 0,
            Relation::Duplicate => Self::DUPLICATE_RANK,
            Relation::Update { .. } => 2,
            Relation::SourceConflict => 3,
            Relation::Undecidable => 4,
            Relation::Unrelated => 5,
        }
    }

    /// Processing order: rank of the relation, then (for updates) newest first, then pair.
    fn order(&self) -> (u8, std::cmp::Reverse<Option<TimeOrder>>, PairKey) {
        let newest = match &self.judgement.relation {
            Relation::Update { newer, .. } => self.pair.memory(*newer).map(|m| time_order(m)),
            _ => None,
        };
        (self.rank(), std::cmp::Reverse(newest), self.pair.key())
    }
}

/// A verdict as it applies now: memories merged away earlier in the cycle are replaced by the
/// memory they were merged into, which states the same fact.
struct Effective<'a> {
    judgement: &'a Judgement,
    relation: Relation,
    a: Arc<Memory>,
    b: Arc<Memory>,
    note: Option<String>,
}

impl Effective<'_> {
    fn key(&self) -> PairKey {
        PairKey::new(self.a.id, self.b.id)
    }

    fn memory(&self, id: MemoryId) -> Arc<Memory> {
        if self.a.id == id {
            self.a.clone()
        } else {
            debug_assert_eq!(self.b.id, id, "relations name memories of their pair");
            self.b.clone()
        }
    }
}

/// What the cycle has decided about one memory so far.
#[derive(Clone, Debug)]
struct State {
    confidence: f32,
    status: Status,
    retired: bool,
}

struct Cycle<'a> {
    strategies: &'a Strategies,
    ledger: HashMap<MemoryId, State>,
    /// Memories merged away this cycle, and the memory each went into.
    survivor_of: HashMap<MemoryId, Arc<Memory>>,
    /// Pairs (after redirection to survivors) already acted on.
    decided_pairs: BTreeSet<PairKey>,
    decisions: Vec<Decision>,
}

fn is_inference(m: &Memory) -> bool {
    m.provenance.source.is_inference()
}

/// Preference for the memory that survives a merge: critical first, then the more trusted
/// source, then the older record (the one readers have seen longest), then the lower id.
fn survivor_rank(m: &Memory) -> (bool, u8, std::cmp::Reverse<TimeOrder>) {
    let trust = match m.provenance.source {
        SourceKind::User => 4,
        SourceKind::Tool => 3,
        SourceKind::Import => 2,
        SourceKind::Reflection | SourceKind::Agent => 1,
    };
    (m.critical, trust, std::cmp::Reverse(time_order(m)))
}

impl Cycle<'_> {
    fn state(&mut self, m: &Memory) -> &mut State {
        self.ledger.entry(m.id).or_insert_with(|| State {
            confidence: m.confidence,
            status: m.status.clone(),
            retired: false,
        })
    }

    fn retired(&mut self, m: &Memory) -> bool {
        self.state(m).retired
    }

    /// Records a decision; `notes` (how the verdict was applied) come before the judge's reason.
    fn push<const N: usize>(
        &mut self,
        action: Action,
        judgement: &Judgement,
        notes: [Option<String>; N],
    ) {
        let mut reason = String::new();
        for note in notes.iter().flatten() {
            reason.push_str(note);
            reason.push_str("; ");
        }
        reason.push_str(&judgement.reason);
        self.decisions.push(Decision {
            action,
            judge: judgement.judge.clone(),
            reason,
        });
    }

    fn effective<'j>(&self, v: &Verdict<'j>) -> Option<Effective<'j>> {
        let survivor = |m: &Arc<Memory>| self.survivor_of.get(&m.id).unwrap_or(m).clone();
        let (a, b) = (survivor(&v.pair.a), survivor(&v.pair.b));
        if a.id == b.id {
            return None;
        }
        let id = |id: MemoryId| self.survivor_of.get(&id).map_or(id, |m| m.id);
        let relation = match &v.judgement.relation {
            Relation::Update { newer, older } => Relation::Update {
                newer: id(*newer),
                older: id(*older),
            },
            Relation::InferenceRefuted { fact, inference } => Relation::InferenceRefuted {
                fact: id(*fact),
                inference: id(*inference),
            },
            other => other.clone(),
        };
        let redirected: Vec<String> = [(&v.pair.a, &a), (&v.pair.b, &b)]
            .into_iter()
            .filter(|(before, after)| before.id != after.id)
            .map(|(before, after)| format!("{} stands for {}, merged into it", after.id, before.id))
            .collect();
        let note = (!redirected.is_empty()).then(|| redirected.join(", "));
        Some(Effective {
            judgement: v.judgement,
            relation,
            a,
            b,
            note,
        })
    }

    fn decide(&mut self, v: &Verdict) {
        let Some(e) = self.effective(v) else {
            return;
        };
        if self.retired(&e.a) || self.retired(&e.b) || !self.decided_pairs.insert(e.key()) {
            return;
        }
        let s = self.strategies;
        match &e.relation {
            Relation::InferenceRefuted { fact, inference } => {
                let (fact, inference) = (e.memory(*fact), e.memory(*inference));
                match s.inference {
                    InferenceStrategy::Falsify => self.falsify(&e, &fact, &inference),
                    InferenceStrategy::Supersede => self.supersede(&e, &fact, &inference),
                    InferenceStrategy::PendingReview => self.pending_review(&e),
                    InferenceStrategy::Ignore => {}
                }
            }
            Relation::Update { newer, older } => {
                let (newer, older) = (e.memory(*newer), e.memory(*older));
                match s.temporal {
                    TemporalStrategy::Supersede => self.supersede(&e, &newer, &older),
                    TemporalStrategy::PendingReview => self.pending_review(&e),
                    TemporalStrategy::Ignore => {}
                }
            }
            Relation::SourceConflict => match s.source {
                SourceStrategy::KeepBoth => self.dispute(&e),
                SourceStrategy::PendingReview => self.pending_review(&e),
                SourceStrategy::Ignore => {}
            },
            Relation::Undecidable => match s.undecidable {
                UndecidableStrategy::PendingReview => self.pending_review(&e),
                UndecidableStrategy::Ignore => {}
            },
            Relation::Duplicate | Relation::Unrelated => {}
        }
    }

    /// A critical memory stays as it is when the other side is only an inference: the inference
    /// alone is flagged for review.
    fn guard(&mut self, e: &Effective, winner: &Memory, loser: &Memory) -> bool {
        if !(loser.critical && is_inference(winner)) {
            return false;
        }
        let factor = self.strategies.pending_review_factor;
        let flagged = self.flag(winner, factor);
        if !flagged.changes_anything() {
            return true;
        }
        let action = Action::PendingReview {
            a: flagged,
            b: MemoryUpdate::of(loser.id),
            relation: e.relation.clone(),
        };
        let guard = format!(
            "{} is critical and {} is an inference, so only the inference is held for review",
            loser.id, winner.id
        );
        self.push(action, e.judgement, [Some(guard), e.note.clone()]);
        true
    }

    fn falsify(&mut self, e: &Effective, fact: &Memory, inference: &Memory) {
        if self.guard(e, fact, inference) {
            return;
        }
        let state = self.state(inference);
        state.retired = true;
        state.confidence = 0.0;
        state.status = Status::Falsified;
        let action = Action::Falsify {
            fact: fact.id,
            inference: MemoryUpdate::of(inference.id)
                .status(Status::Falsified)
                .confidence(0.0),
        };
        self.push(action, e.judgement, [e.note.clone()]);
    }

    fn supersede(&mut self, e: &Effective, winner: &Memory, loser: &Memory) {
        if self.guard(e, winner, loser) {
            return;
        }
        let s = self.strategies;
        let loser_confidence = self.state(loser).confidence;
        let winner_state = self.state(winner);
        let before = winner_state.confidence;
        winner_state.confidence = s.winner_confidence(before, loser_confidence);
        let mut newer = MemoryUpdate::of(winner.id);
        if winner_state.confidence != before {
            newer = newer.confidence(winner_state.confidence);
        }
        // The older value held until the newer one was stated, never before it began.
        let until = winner.occurred_at.max(loser.valid_from);
        let valid_to = loser.valid_to.map_or(until, |t| t.min(until));
        let status = Status::Superseded { by: winner.id };
        let loser_state = self.state(loser);
        loser_state.retired = true;
        loser_state.confidence = s.superseded_confidence(loser_confidence);
        loser_state.status = status.clone();
        let action = Action::Supersede {
            newer,
            older: MemoryUpdate::of(loser.id)
                .status(status)
                .confidence(loser_state.confidence)
                .valid_to(valid_to),
        };
        self.push(action, e.judgement, [e.note.clone()]);
    }

    fn dispute(&mut self, e: &Effective) {
        let factor = self.strategies.dispute_factor;
        let updates = [e.a.clone(), e.b.clone()].map(|m| {
            let state = self.state(&m);
            // Disputed is a state, not a count: a memory contested by a hundred others loses
            // confidence once, when it is first flagged, or its confidence would fall with
            // every restatement of the other side. A memory already held for review stays
            // held; disputed is the milder flag.
            if matches!(state.status, Status::Disputed | Status::PendingReview) {
                return MemoryUpdate::of(m.id);
            }
            state.confidence *= factor;
            state.status = Status::Disputed;
            MemoryUpdate::of(m.id)
                .confidence(state.confidence)
                .status(Status::Disputed)
        });
        let [a, b] = updates;
        if !a.changes_anything() && !b.changes_anything() {
            return;
        }
        self.push(Action::Dispute { a, b }, e.judgement, [e.note.clone()]);
    }

    fn pending_review(&mut self, e: &Effective) {
        let (a, b) = (e.a.clone(), e.b.clone());
        // Each side is protected from the other if it is critical and the other an inference.
        if (a.critical && is_inference(&b)) || (b.critical && is_inference(&a)) {
            let (winner, loser) = if a.critical { (&b, &a) } else { (&a, &b) };
            self.guard(e, winner, loser);
            return;
        }
        let factor = self.strategies.pending_review_factor;
        let a = self.flag(&a, factor);
        let b = self.flag(&b, factor);
        // Both already held for review, each with a conflict of its own: one more pair of them
        // would queue what those conflicts already ask, and a memory restated many times over
        // would queue a conflict with every restatement.
        if !a.changes_anything() && !b.changes_anything() {
            return;
        }
        let action = Action::PendingReview {
            a,
            b,
            relation: e.relation.clone(),
        };
        self.push(action, e.judgement, [e.note.clone()]);
    }

    /// Holds `m` for review; a memory already held is left as it is (see [`Cycle::dispute`]).
    fn flag(&mut self, m: &Memory, factor: f32) -> MemoryUpdate {
        let state = self.state(m);
        if state.status == Status::PendingReview {
            return MemoryUpdate::of(m.id);
        }
        state.confidence *= factor;
        state.status = Status::PendingReview;
        MemoryUpdate::of(m.id)
            .status(Status::PendingReview)
            .confidence(state.confidence)
    }

    /// Duplicates form groups (rewordings of rewordings are one fact); each group keeps one
    /// survivor and every other member merges straight into it, so no merge chains form. Two
    /// memories judged to conflict never end up in one group through a third.
    fn merge_duplicates(&mut self, verdicts: &[&Verdict], conflicts: &BTreeSet<PairKey>) {
        if self.strategies.duplicate == DuplicateStrategy::Ignore {
            return;
        }
        let live: Vec<&&Verdict> = verdicts
            .iter()
            .filter(|v| !self.retired(&v.pair.a) && !self.retired(&v.pair.b))
            .collect();
        let mut groups = Groups::default();
        let mut members: BTreeMap<MemoryId, Arc<Memory>> = BTreeMap::new();
        let mut link: BTreeMap<MemoryId, &Judgement> = BTreeMap::new();
        for v in &live {
            let (left, right) = (groups.members(v.pair.a.id), groups.members(v.pair.b.id));
            let would_conflict = left.iter().any(|x| {
                right
                    .iter()
                    .any(|y| conflicts.contains(&PairKey::new(*x, *y)))
            });
            if would_conflict {
                continue;
            }
            groups.join(v.pair.a.id, v.pair.b.id);
            for m in [&v.pair.a, &v.pair.b] {
                members.insert(m.id, m.clone());
                link.entry(m.id).or_insert(v.judgement);
            }
        }
        // Memories looked at but never joined form groups of one: nothing to merge.
        for group in groups.all().into_iter().filter(|g| g.len() > 1) {
            let survivor = group
                .iter()
                .map(|id| &members[id])
                .max_by_key(|m| survivor_rank(m))
                .expect("groups are never empty")
                .clone();
            let mut support = survivor.support.count.max(1);
            for id in group.iter().filter(|id| **id != survivor.id) {
                let from = members[id].clone();
                let from_confidence = self.state(&from).confidence;
                let into_state = self.state(&survivor);
                let mut into = MemoryUpdate::of(survivor.id);
                if from_confidence > into_state.confidence {
                    into_state.confidence = from_confidence;
                    into = into.confidence(from_confidence);
                }
                support += from.support.count.max(1);
                self.state(&from).retired = true;
                self.survivor_of.insert(from.id, survivor.clone());
                let mut merged = vec![from.id];
                merged.extend(from.support.merged.iter().copied());
                let action = Action::Merge {
                    into,
                    from: from.id,
                    merged,
                    support_count: support,
                };
                let judgement = link[id];
                let note = (!judgement.pair.contains(survivor.id))
                    .then(|| format!("a rewording of a rewording of {}", survivor.id));
                self.push(action, judgement, [note]);
            }
        }
    }
}

/// Disjoint groups of memory ids (union–find), listed in a stable order.
#[derive(Default)]
struct Groups {
    parent: BTreeMap<MemoryId, MemoryId>,
}

impl Groups {
    fn root(&mut self, id: MemoryId) -> MemoryId {
        let parent = *self.parent.entry(id).or_insert(id);
        if parent == id {
            return id;
        }
        let root = self.root(parent);
        self.parent.insert(id, root);
        root
    }

    fn join(&mut self, a: MemoryId, b: MemoryId) {
        let (ra, rb) = (self.root(a), self.root(b));
        // The lower id roots the group, so the result does not depend on the order of joins.
        match ra.cmp(&rb) {
            std::cmp::Ordering::Less => {
                self.parent.insert(rb, ra);
            }
            std::cmp::Ordering::Greater => {
                self.parent.insert(ra, rb);
            }
            std::cmp::Ordering::Equal => {}
        }
    }

    /// The group `id` is in (just `id` if it is in none yet).
    fn members(&mut self, id: MemoryId) -> Vec<MemoryId> {
        let root = self.root(id);
        let ids: Vec<MemoryId> = self.parent.keys().copied().collect();
        ids.into_iter().filter(|m| self.root(*m) == root).collect()
    }

    /// Every group, each sorted, ordered by its lowest id.
    fn all(&mut self) -> Vec<Vec<MemoryId>> {
        let ids: Vec<MemoryId> = self.parent.keys().copied().collect();
        let mut by_root: BTreeMap<MemoryId, Vec<MemoryId>> = BTreeMap::new();
        for id in ids {
            let root = self.root(id);
            by_root.entry(root).or_default().push(id);
        }
        by_root.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{memory, MemoryExt};

    fn pair(a: &Memory, b: &Memory) -> Pair {
        Pair::new(Arc::new(a.clone()), Arc::new(b.clone()), Some(0.9))
    }

    fn verdict(a: &Memory, b: &Memory, relation: Relation) -> Judgement {
        Judgement {
            pair: PairKey::new(a.id, b.id),
            relation,
            reason: format!("test verdict on {} and {}", a.id, b.id),
            judge: "test".into(),
        }
    }

    fn update(newer: &Memory, older: &Memory) -> Judgement {
        verdict(
            newer,
            older,
            Relation::Update {
                newer: newer.id,
                older: older.id,
            },
        )
    }

    /// No decision touches a memory an earlier decision took out of the cycle.
    fn assert_no_conflicting_decisions(decisions: &[Decision]) {
        let mut retired = BTreeSet::new();
        for d in decisions {
            for id in d.memories() {
                assert!(
                    !retired.contains(&id),
                    "{id} acted on after retiring: {d:?}"
                );
            }
            if let Some(id) = d.retires() {
                retired.insert(id);
            }
        }
    }

    #[test]
    fn an_update_supersedes_the_older_memory() {
        let older = memory(1, "I read weather in Celsius.").at(1, 1);
        let newer = memory(2, "Switch the temperature unit to Fahrenheit.")
            .at(5, 5)
            .with_confidence(0.6);
        let decisions = resolve(
            &[pair(&older, &newer)],
            &[update(&newer, &older)],
            &Strategies::default(),
        );
        assert_eq!(decisions.len(), 1);
        let Action::Supersede { newer: n, older: o } = &decisions[0].action else {
            panic!("expected a supersession: {decisions:?}");
        };
        assert_eq!(n.id, newer.id);
        // max(0.6, min(1, 0.9 · 1.2))
        assert_eq!(n.confidence, Some(1.0));
        assert_eq!(n.status, None);
        assert_eq!(o.status, Some(Status::Superseded { by: newer.id }));
        assert!(o.confidence.unwrap() < 0.1);
        assert_eq!(o.valid_to, Some(newer.occurred_at));
        assert_eq!(decisions[0].judge, "test");
        assert!(decisions[0].reason.contains("test verdict"));
    }

    #[test]
    fn the_latest_value_supersedes_every_older_one_directly() {
        let a = memory(1, "I drink flat whites.").at(1, 1);
        let b = memory(2, "I switched to americanos.").at(2, 2);
        let c = memory(3, "I switched to lattes.").at(3, 3);
        let pairs = [pair(&a, &b), pair(&a, &c), pair(&b, &c)];
        let judgements = [update(&b, &a), update(&c, &a), update(&c, &b)];
        let decisions = resolve(&pairs, &judgements, &Strategies::default());
        assert_no_conflicting_decisions(&decisions);
        let superseded: Vec<(MemoryId, Status)> = decisions
            .iter()
            .filter_map(|d| match &d.action {
                Action::Supersede { older, .. } => Some((older.id, older.status.clone()?)),
                _ => None,
            })
            .collect();
        assert_eq!(
            superseded,
            vec![
                (a.id, Status::Superseded { by: c.id }),
                (b.id, Status::Superseded { by: c.id })
            ]
        );
    }

    #[test]
    fn duplicates_merge_into_one_survivor_without_chains() {
        let a = memory(1, "I'm allergic to peanuts.").at(3, 3);
        let b = memory(2, "Note that I have a peanut allergy.").at(1, 1);
        let c = memory(3, "Peanuts give me an allergic reaction.").at(2, 2);
        let pairs = [pair(&a, &b), pair(&b, &c)];
        let judgements = [
            verdict(&a, &b, Relation::Duplicate),
            verdict(&b, &c, Relation::Duplicate),
        ];
        let decisions = resolve(&pairs, &judgements, &Strategies::default());
        assert_no_conflicting_decisions(&decisions);
        let merges: Vec<(MemoryId, MemoryId, u32)> = decisions
            .iter()
            .map(|d| match &d.action {
                Action::Merge {
                    into,
                    from,
                    support_count,
                    ..
                } => (into.id, *from, *support_count),
                other => panic!("expected merges only: {other:?}"),
            })
            .collect();
        // The oldest statement survives and counts every restatement.
        assert_eq!(merges, vec![(b.id, a.id, 2), (b.id, c.id, 3)]);
    }

    #[test]
    fn a_more_trusted_or_critical_memory_survives_a_merge() {
        let guess = memory(1, "The user is probably allergic to peanuts.")
            .with_source(SourceKind::Agent)
            .at(1, 1);
        let said = memory(2, "I'm allergic to peanuts.").at(2, 2);
        let decisions = resolve(
            &[pair(&guess, &said)],
            &[verdict(&guess, &said, Relation::Duplicate)],
            &Strategies::default(),
        );
        let Action::Merge { into, from, .. } = &decisions[0].action else {
            panic!("expected a merge: {decisions:?}");
        };
        assert_eq!((into.id, *from), (said.id, guess.id));
        // The user's own statement was already the more confident one.
        assert_eq!(into.confidence, None);
    }

    #[test]
    fn a_critical_memory_never_yields_to_an_inference() {
        let rule = memory(1, "Transfers above 1000 EUR need the user's confirmation.")
            .critical()
            .at(1, 1);
        let guess = memory(2, "The user probably no longer needs to confirm transfers.")
            .with_source(SourceKind::Agent)
            .at(2, 2);
        for relation in [
            Relation::Update {
                newer: guess.id,
                older: rule.id,
            },
            Relation::InferenceRefuted {
                fact: guess.id,
                inference: rule.id,
            },
            Relation::Undecidable,
        ] {
            let decisions = resolve(
                &[pair(&rule, &guess)],
                &[verdict(&rule, &guess, relation.clone())],
                &Strategies::default(),
            );
            assert_eq!(decisions.len(), 1, "{relation}");
            let Action::PendingReview { a, b, .. } = &decisions[0].action else {
                panic!("expected a review entry for {relation}: {decisions:?}");
            };
            let untouched = if a.id == rule.id { a } else { b };
            let flagged = if a.id == rule.id { b } else { a };
            assert!(!untouched.changes_anything(), "{relation}");
            assert_eq!(flagged.id, guess.id);
            assert_eq!(flagged.status, Some(Status::PendingReview));
            assert!(decisions[0].opens_conflict());
            assert_eq!(decisions[0].updates().len(), 1);
        }
    }

    #[test]
    fn a_user_may_still_change_a_critical_memory() {
        let rule = memory(1, "Send invoices on the 1st.").critical().at(1, 1);
        let change = memory(2, "From now on send invoices on the 15th.").at(2, 2);
        let decisions = resolve(
            &[pair(&rule, &change)],
            &[update(&change, &rule)],
            &Strategies::default(),
        );
        assert!(matches!(decisions[0].action, Action::Supersede { .. }));
    }

    #[test]
    fn source_conflicts_keep_both_down_weighted() {
        let a = memory(1, "CRM: Initech is on Gold.").with_tool("crm");
        let b = memory(2, "Billing: Initech pays for Silver.").with_tool("billing");
        let decisions = resolve(
            &[pair(&a, &b)],
            &[verdict(&a, &b, Relation::SourceConflict)],
            &Strategies::default(),
        );
        let Action::Dispute { a: ua, b: ub } = &decisions[0].action else {
            panic!("expected a dispute: {decisions:?}");
        };
        for u in [ua, ub] {
            assert_eq!(u.status, Some(Status::Disputed));
            assert!((u.confidence.unwrap() - 0.56).abs() < 1e-6);
        }
    }

    #[test]
    fn undecidable_conflicts_are_queued_with_both_down_weighted() {
        let a = memory(1, "The cluster runs on spot instances.");
        let b = memory(2, "The cluster does not run on spot instances.");
        let decisions = resolve(
            &[pair(&a, &b)],
            &[verdict(&a, &b, Relation::Undecidable)],
            &Strategies::default(),
        );
        assert!(decisions[0].opens_conflict());
        for u in decisions[0].updates() {
            assert_eq!(u.status, Some(Status::PendingReview));
            assert!((u.confidence.unwrap() - 0.72).abs() < 1e-6);
        }
        assert_eq!(decisions[0].updates().len(), 2);
    }

    #[test]
    fn a_memory_contested_by_many_is_disputed_once() {
        let held = memory(1, "Stock count: aisle 7 holds 40 pallets.").with_tool("stock");
        let others: Vec<Memory> = (2..=4)
            .map(|n| memory(n, "Scanner log: aisle 7 holds 25 pallets.").with_tool("scanner"))
            .collect();
        let pairs: Vec<_> = others.iter().map(|o| pair(&held, o)).collect();
        let verdicts: Vec<_> = others
            .iter()
            .map(|o| verdict(&held, o, Relation::SourceConflict))
            .collect();
        let decisions = resolve(&pairs, &verdicts, &Strategies::default());
        let confidences: Vec<f32> = decisions
            .iter()
            .flat_map(|d| d.updates())
            .filter(|u| u.id == held.id)
            .filter_map(|u| u.confidence)
            .collect();
        // Down-weighted when first disputed, not once more for each further contradiction.
        assert_eq!(confidences.len(), 1, "{decisions:?}");
        assert!((confidences[0] - 0.56).abs() < 1e-6);
        // Each of the others was flagged once.
        assert_eq!(decisions.len(), 3);
    }

    #[test]
    fn a_pair_already_held_for_review_queues_no_further_conflict() {
        let a = memory(1, "The ferry leaves from pier 2.");
        let b = memory(2, "The ferry does not leave from pier 2.");
        let c = memory(3, "Pier 2 has no ferry any more.");
        let d = memory(4, "Pier 2 is where the ferry goes from.");
        let pairs = [pair(&a, &b), pair(&c, &d), pair(&a, &c), pair(&b, &d)];
        let verdicts: Vec<_> = [(&a, &b), (&c, &d), (&a, &c), (&b, &d)]
            .into_iter()
            .map(|(x, y)| verdict(x, y, Relation::Undecidable))
            .collect();
        let decisions = resolve(&pairs, &verdicts, &Strategies::default());
        let opened: Vec<Vec<MemoryId>> = decisions
            .iter()
            .filter(|d| d.opens_conflict())
            .map(|d| d.updates().iter().map(|u| u.id).collect())
            .collect();
        // Four pairs over four memories: each memory is flagged once, and the pair judged last,
        // whose two sides were both held by then, queues nothing.
        assert_eq!(opened.len(), 3, "{opened:?}");
        let mut flagged: Vec<MemoryId> = opened.concat();
        flagged.sort();
        assert_eq!(flagged, vec![a.id, b.id, c.id, d.id]);
        let undecided = memory(5, "The ferry moved to pier 5.");
        let decisions = resolve(
            &[pair(&a, &undecided)],
            &[verdict(&a, &undecided, Relation::Undecidable)],
            &Strategies::default(),
        );
        // A memory held from an earlier cycle still meets a newcomer, which alone is flagged.
        let held = Memory {
            status: Status::PendingReview,
            ..a.clone()
        };
        let later = resolve(
            &[pair(&held, &undecided)],
            &[verdict(&held, &undecided, Relation::Undecidable)],
            &Strategies::default(),
        );
        assert_eq!(decisions[0].updates().len(), 2);
        assert!(later[0].opens_conflict());
        let changed: Vec<MemoryId> = later[0]
            .updates()
            .iter()
            .filter(|u| u.changes_anything())
            .map(|u| u.id)
            .collect();
        assert_eq!(changed, vec![undecided.id]);
    }

    #[test]
    fn verdicts_that_do_not_fit_their_pair_are_ignored() {
        let a = memory(1, "a");
        let b = memory(2, "b");
        let stranger = memory(3, "c");
        let judgements = [
            update(&stranger, &a),
            // Only the first verdict on a pair counts.
            verdict(&a, &b, Relation::Unrelated),
            verdict(&a, &b, Relation::Undecidable),
            // No such pair was offered.
            verdict(&b, &stranger, Relation::Undecidable),
        ];
        let mut inconsistent = judgements[0].clone();
        inconsistent.pair = PairKey::new(a.id, b.id);
        let decisions = resolve(
            &[pair(&a, &b)],
            &[
                inconsistent,
                judgements[1].clone(),
                judgements[2].clone(),
                judgements[3].clone(),
            ],
            &Strategies::default(),
        );
        assert!(decisions.is_empty(), "{decisions:?}");
    }

    #[test]
    fn strategies_change_what_verdicts_do() {
        let older = memory(1, "I read weather in Celsius.").at(1, 1);
        let newer = memory(2, "Switch to Fahrenheit.").at(2, 2);
        let review_updates = Strategies {
            temporal: TemporalStrategy::PendingReview,
            ..Strategies::default()
        };
        let decisions = resolve(
            &[pair(&older, &newer)],
            &[update(&newer, &older)],
            &review_updates,
        );
        assert!(decisions[0].opens_conflict());
        let ignore = Strategies {
            temporal: TemporalStrategy::Ignore,
            ..Strategies::default()
        };
        assert!(resolve(&[pair(&older, &newer)], &[update(&newer, &older)], &ignore).is_empty());
    }

    #[test]
    fn a_retired_memory_gets_no_further_decisions() {
        let flat_white = memory(1, "I drink flat whites.").at(1, 1);
        let rewording = memory(2, "My usual coffee is a flat white.").at(2, 2);
        let latte = memory(3, "I switched to lattes.").at(3, 3);
        let tool = memory(4, "Order history: flat white.")
            .with_tool("orders")
            .at(2, 2);
        let pairs = [
            pair(&flat_white, &rewording),
            pair(&flat_white, &latte),
            pair(&rewording, &latte),
            pair(&flat_white, &tool),
        ];
        let judgements = [
            verdict(&flat_white, &rewording, Relation::Duplicate),
            verdict(&flat_white, &tool, Relation::Undecidable),
            update(&latte, &flat_white),
            update(&latte, &rewording),
        ];
        let decisions = resolve(&pairs, &judgements, &Strategies::default());
        assert_no_conflicting_decisions(&decisions);
        let names: Vec<&str> = decisions.iter().map(|d| d.action.name()).collect();
        // The rewording merges first; the latte then supersedes the one memory left for the
        // flat white, and the verdict about the rewording adds nothing.
        assert_eq!(names, ["merge", "supersede"]);
        let Action::Supersede { older, .. } = &decisions[1].action else {
            unreachable!()
        };
        assert_eq!(older.id, flat_white.id);
    }

    #[test]
    fn a_verdict_about_a_merged_rewording_applies_to_its_survivor() {
        let said = memory(1, "I drink flat whites.").at(1, 1);
        let rewording = memory(2, "My usual coffee is a flat white.").at(2, 2);
        let latte = memory(3, "I switched to lattes.").at(3, 3);
        // The judge only compared the latte with the rewording.
        let pairs = [pair(&said, &rewording), pair(&rewording, &latte)];
        let judgements = [
            update(&latte, &rewording),
            verdict(&said, &rewording, Relation::Duplicate),
        ];
        let decisions = resolve(&pairs, &judgements, &Strategies::default());
        assert_no_conflicting_decisions(&decisions);
        let Action::Supersede { newer, older } = &decisions[1].action else {
            panic!("expected a supersession: {decisions:?}");
        };
        assert_eq!((newer.id, older.id), (latte.id, said.id));
        assert!(
            decisions[1].reason.contains("merged into"),
            "{}",
            decisions[1].reason
        );
    }

    #[test]
    fn memories_judged_to_conflict_are_not_merged_through_a_third() {
        let tea = memory(1, "I drink tea in the morning.").at(1, 1);
        let vague = memory(2, "I drink something hot in the morning.").at(2, 2);
        let coffee = memory(3, "I drink coffee in the morning.").at(3, 3);
        let pairs = [
            pair(&tea, &vague),
            pair(&vague, &coffee),
            pair(&tea, &coffee),
        ];
        let judgements = [
            verdict(&tea, &vague, Relation::Duplicate),
            verdict(&vague, &coffee, Relation::Duplicate),
            verdict(&tea, &coffee, Relation::Undecidable),
        ];
        let decisions = resolve(&pairs, &judgements, &Strategies::default());
        assert_no_conflicting_decisions(&decisions);
        let names: Vec<&str> = decisions.iter().map(|d| d.action.name()).collect();
        assert_eq!(names, ["merge", "pending_review"], "{decisions:#?}");
        assert_eq!(decisions[1].memories(), vec![tea.id, coffee.id]);
    }
}
