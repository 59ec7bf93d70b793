//! The arms that start from what the other arms found: the change arm (a user's newer statement
//! that replaces one found) and the bridge (the second hop through the entities of the best).

use std::collections::HashMap;

use hindsight_core::shadow;
use hindsight_core::{Memory, MemoryId, Status};
use hindsight_index::dot;

use super::fuse::{Candidate, Candidates};
use super::gather::ArmResult;
use super::search::{Plan, Records};
use super::visibility::Visibility;
use crate::bank::changes::{announces_change, is_user_statement};
use crate::bank::BankView;

/// Memories that name what the best candidates name: the second hop of a question such as "is
/// the person who owns X around?", whose answer never mentions X.
pub(super) const ARM_BRIDGE: &str = "bridge";

/// Best candidates per bank whose entities are followed.
const BRIDGE_SEEDS: usize = 2;

/// A candidate this relevant, at least, is a seed: a weak match leads nowhere useful.
const BRIDGE_MIN_RELEVANCE: f32 = 0.3;

/// A memory reached through an entity the seed alone shares with it gets this share of the
/// seed's relevance: below the seed, above what merely resembles the query.
const BRIDGE_EVIDENCE: f32 = 0.7;

/// A memory this close to the seed says the same again (a rewording, an update) and is left to
/// deduplication and shadowing: the second hop is for what the seed does not say.
const BRIDGE_MAX_LIKENESS: f32 = 0.6;

/// Entities named by more than this share of a bank's memories (the user's own name, the team)
/// link everything to everything and are not followed...
const BRIDGE_MAX_SHARE: f32 = 0.02;

/// ...unless they are named this rarely.
const BRIDGE_MIN_FANOUT: usize = 4;

/// The user's statements whose changes the change arm looks for: the most relevant, if relevant
/// enough for shadowing to act on them.
const CHANGE_SEEDS: usize = 2;

/// A change is evidence for the question this share of the statement it replaces: enough for
/// shadowing to act ([`hindsight_core::shadow::CHANGE_MIN_RELEVANCE`]), never more than the
/// statement itself.
const CHANGE_EVIDENCE: f32 = 0.8;

/// Arm of the changes found through what they replace.
pub(super) const ARM_CHANGE: &str = "change";

impl Plan {
    /// The user's earlier statement closest to `candidate`'s in its bank: what a statement
    /// announcing a change replaces, when recall may still return it, and when it is close
    /// enough or clearly the closest (see [`shadow::CHANGE_MIN_SIMILARITY`]).
    pub(super) fn nearest_older_statement(
        &self,
        view: &BankView,
        candidate: &Candidate,
    ) -> Option<MemoryId> {
        if !view.index.vectors().searches_quickly() {
            return None;
        }
        let rules = self.visibility(&self.configs[candidate.bank]);
        view.with_records(|records| self.replaced_by(view, records, rules, &candidate.memory))
    }

    /// [`Self::nearest_older_statement`] with the bank's records at hand. The change's vector is
    /// read only when what it replaces is not known yet.
    fn replaced_by(
        &self,
        view: &BankView,
        records: &Records,
        rules: Visibility,
        newer: &Memory,
    ) -> Option<MemoryId> {
        let older = |id: u128| {
            records.get(&MemoryId(id)).is_some_and(|m| {
                m.id != newer.id
                    && is_user_statement(m)
                    && m.occurred_at < newer.occurred_at
                    && m.status != Status::Deleted
            })
        };
        // Whatever its status: when the review has already superseded what the change
        // replaced, nothing is left for the recall to hide.
        let replaced = view.replaced_by_change(newer, || {
            let vectors = view.index.vectors();
            let vector = vectors.get(newer.id.0)?;
            let nearest = vectors.search(&vector, 2, &older).ok()?;
            let &(id, closest) = nearest.first()?;
            let runner_up = nearest.get(1).map_or(0.0, |hit| hit.1);
            // Far from everything the user said before, a change may be about something new:
            // the nearest statement is what it replaces only if nothing says they are about
            // different things (two values of different kinds).
            let same_kind = || match (
                &newer.slot,
                records.get(&MemoryId(id)).and_then(|m| m.slot.as_ref()),
            ) {
                (Some(new), Some(old)) => new.attribute == old.attribute,
                _ => true,
            };
            let decisive = closest >= shadow::CHANGE_SHADOW_SIMILARITY
                || (closest >= shadow::CHANGE_MIN_SIMILARITY
                    && closest - runner_up >= shadow::CHANGE_MARGIN
                    && same_kind());
            decisive.then_some(MemoryId(id))
        })?;
        let replaced = records.get(&replaced)?;
        self.status_if_visible(replaced, rules)
            .is_some()
            .then_some(replaced.id)
    }

    /// The change arm: the user's newer statements that announce a change of a statement of
    /// theirs the other arms found, and that it replaces ([`Self::replaced_by`]). Worded like
    /// the new value ("cycling in now"), a change is often too far from a question worded
    /// like the old one ("which bus do I take to the depot?") for any arm to find it; shadowing
    /// then lets it stand for what it replaced.
    pub(super) fn changes_of_found(
        &self,
        view: &BankView,
        records: &Records,
        rules: Visibility,
        candidates: &Candidates,
        bank: usize,
    ) -> Vec<ArmResult> {
        // A change of a change is left to the general rule (see `hindsight_core::shadow`).
        let mut found: Vec<(&Candidate, f32)> = candidates
            .values()
            .filter(|c| {
                c.bank == bank && is_user_statement(&c.memory) && !announces_change(&c.memory)
            })
            .map(|c| (c, c.direct_relevance()))
            .filter(|(_, relevance)| *relevance >= hindsight_core::shadow::CHANGE_MIN_RELEVANCE)
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.memory.id.cmp(&b.0.memory.id)));
        found.truncate(CHANGE_SEEDS);
        let vectors = view.index.vectors();
        let mut changes: HashMap<u128, f32> = HashMap::new();
        for (older, relevance) in found {
            let Some(vector) = vectors.get(older.memory.id.0) else {
                continue;
            };
            for id in view.changes_after(older.memory.occurred_at) {
                let Some(change) = records.get(&id) else {
                    continue;
                };
                if self.status_if_visible(change, rules).is_none() {
                    continue;
                }
                let similarity = vectors.similarity(id.0, &vector).ok().flatten();
                if similarity.is_none_or(|s| s < shadow::CHANGE_MIN_SIMILARITY) {
                    continue;
                }
                let id = id.0;
                if self.replaced_by(view, records, rules, change) == Some(older.memory.id) {
                    keep_best(&mut changes, id, relevance * CHANGE_EVIDENCE);
                }
            }
        }
        ranked_by_evidence(changes)
    }
}

/// The candidates of `bank` whose entities the bridge follows: the most relevant, if relevant
/// enough, with their relevance so far.
pub(super) fn best_seeds(candidates: &Candidates, bank: usize) -> Vec<(MemoryId, f32)> {
    let mut seeds: Vec<(MemoryId, f32)> = candidates
        .values()
        .filter(|c| c.bank == bank)
        .map(|c| (c.memory.id, c.direct_relevance()))
        .filter(|(_, relevance)| *relevance >= BRIDGE_MIN_RELEVANCE)
        .collect();
    seeds.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    seeds.truncate(BRIDGE_SEEDS);
    seeds
}

/// The bridge arm: memories that name an entity a seed names and the query does not, each
/// with evidence `BRIDGE_EVIDENCE × the seed's relevance × the entity's rarity` (its best
/// seed's). An entity named by many memories is not followed.
pub(super) fn bridged(
    view: &BankView,
    seeds: &[(MemoryId, f32)],
    query_entities: &[String],
) -> Vec<ArmResult> {
    let index = view.index.entities();
    let memories = index.len();
    if seeds.is_empty() || memories < 2 {
        return vec![];
    }
    let fanout = ((memories as f32 * BRIDGE_MAX_SHARE) as usize).max(BRIDGE_MIN_FANOUT);
    let rarity =
        |named: usize| (1.0 + memories as f32 / named as f32).ln() / (1.0 + memories as f32).ln();
    let mut evidence: HashMap<u128, f32> = HashMap::new();
    let vectors = view.index.vectors();
    for &(seed, relevance) in seeds {
        let seed_vector = vectors.get(seed.0);
        for entity in followed_names(&index.entities_of(seed.0)) {
            if query_entities.contains(&entity) {
                continue;
            }
            let named = index.memories_of(&entity);
            // A link to one other memory says more than a link to several. (A part of the
            // seed's name may not list the seed itself.)
            let others = named.iter().filter(|id| **id != seed.0).count();
            if others == 0 || named.len() > fanout {
                continue;
            }
            let strength =
                BRIDGE_EVIDENCE * relevance * rarity(named.len()) / (others as f32).sqrt();
            for id in named.into_iter().filter(|id| *id != seed.0) {
                if seed_vector
                    .as_deref()
                    .zip(vectors.get(id).as_deref())
                    .is_some_and(|(a, b)| dot(a, b) >= BRIDGE_MAX_LIKENESS)
                {
                    continue;
                }
                keep_best(&mut evidence, id, strength);
            }
        }
    }
    ranked_by_evidence(evidence)
}

/// Keeps the strongest of the evidence an arm found for `id` by several routes.
fn keep_best(evidence: &mut HashMap<u128, f32>, id: u128, found: f32) {
    let best = evidence.entry(id).or_insert(0.0);
    *best = best.max(found);
}

/// An arm's hits whose score is their evidence, strongest first (ties by id).
fn ranked_by_evidence(evidence: HashMap<u128, f32>) -> Vec<ArmResult> {
    let mut ranked: Vec<ArmResult> = evidence
        .into_iter()
        .map(|(id, strength)| (id, strength, strength))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

/// A memory's entity keys, and each word of a name of several ("danielle" of "danielle okoye"):
/// a person introduced by full name is named by one part of it later.
fn followed_names(entities: &[String]) -> Vec<String> {
    let mut names = entities.to_vec();
    for entity in entities {
        let words: Vec<&str> = entity.split(' ').collect();
        let a_name = words.len() > 1 && words.iter().all(|w| w.chars().all(char::is_alphabetic));
        if !a_name {
            continue;
        }
        for part in words.into_iter().filter(|p| p.chars().count() >= 3) {
            if part != entity && !names.iter().any(|n| n == part) {
                names.push(part.to_string());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::testing::{candidate, found, memory};

    #[test]
    fn an_arm_found_by_several_routes_keeps_its_strongest_evidence_and_ranks_ties_by_id() {
        let mut evidence = HashMap::new();
        for (id, found) in [(7, 0.2), (3, 0.5), (7, 0.6), (5, 0.5), (7, 0.4)] {
            keep_best(&mut evidence, id, found);
        }
        assert_eq!(
            ranked_by_evidence(evidence),
            vec![(7, 0.6, 0.6), (3, 0.5, 0.5), (5, 0.5, 0.5)]
        );
    }

    #[test]
    fn the_bridge_starts_from_the_two_best_direct_matches_of_the_bank() {
        let mut other_bank = candidate(1, 0.9);
        other_bank.bank = 1;
        let mut too_weak = candidate(4, 0.29);
        too_weak.bank = 2;
        // Relevant only through a bridge: not a seed of another bridge.
        let bridged_only = found(memory(2), &[(ARM_BRIDGE, 0.9)]);
        let candidates: Candidates = [
            other_bank,
            bridged_only,
            candidate(3, 0.5),
            too_weak,
            candidate(5, 0.8),
            found(memory(6), &[("semantic", 0.4), (ARM_BRIDGE, 0.9)]),
            candidate(7, 0.5),
        ]
        .into_iter()
        .map(|c| (c.memory.id, c))
        .collect();
        let seeds = best_seeds(&candidates, 0);
        assert_eq!(seeds, vec![(MemoryId(5), 0.8), (MemoryId(3), 0.5)]);
        assert_eq!(best_seeds(&candidates, 1), vec![(MemoryId(1), 0.9)]);
        assert!(best_seeds(&candidates, 2).is_empty());
    }

    #[test]
    fn a_person_introduced_by_full_name_is_followed_by_each_part_of_it() {
        let names = |entities: &[&str]| {
            followed_names(&entities.iter().map(|e| e.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            names(&["danielle okoye", "okoye"]),
            ["danielle okoye", "okoye", "danielle"]
        );
        // Short parts and names with digits or marks are not split.
        assert_eq!(names(&["jo li"]), ["jo li"]);
        assert_eq!(names(&["build 42"]), ["build 42"]);
        assert_eq!(names(&["masala-yard"]), ["masala-yard"]);
    }
}
