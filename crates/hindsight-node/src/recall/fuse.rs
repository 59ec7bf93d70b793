//! Fuse: each arm's hits rated as evidence that they answer the query, and joined into one
//! candidate per memory. The arms that start from what the others found (`hops`) run here, bank
//! by bank, once the others' hits are joined.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use hindsight_core::recall::ArmHit;
use hindsight_core::scoring::combine_evidence;
use hindsight_core::{Memory, MemoryId, Status};

use super::gather::{
    ArmResult, Gathered, LexicalHits, VectorHits, ARM_ENTITY, ARM_KEYWORD, ARM_PRESENT,
    ARM_SEMANTIC, ARM_TASK, ARM_TEMPORAL,
};
use super::hops::{best_seeds, bridged, ARM_BRIDGE, ARM_CHANGE};
use super::query::QueryVectors;
use super::search::{Plan, Records};
use crate::bank::BankView;
use crate::metrics;

/// Naming the same entity as the query makes a memory about the right thing, not yet the answer:
/// the entity arm's evidence counts this much of a match that singles the memory out.
const ENTITY_EVIDENCE: f32 = 0.6;

/// An explicit time expression is a strong statement of intent: a memory inside the window is
/// evidence of this much before its similarity to the rest of the query adds to it.
const IN_WINDOW_EVIDENCE: f32 = 0.6;

/// A memory some arm found, with what each arm said of it.
pub(super) struct Candidate {
    /// Position of the candidate's bank in the request's views.
    pub(super) bank: usize,
    pub(super) memory: Arc<Memory>,
    pub(super) status: Status,
    pub(super) arms: Vec<ArmHit>,
    /// Each arm's evidence that the memory answers the query, in 0..1.
    pub(super) evidence: Vec<f32>,
    pub(super) in_window: bool,
}

impl Candidate {
    /// Relevance from the arms that match the query itself, without the bridge's.
    pub(super) fn direct_relevance(&self) -> f32 {
        combine_evidence(
            self.arms
                .iter()
                .zip(&self.evidence)
                .filter(|(hit, _)| hit.arm != ARM_BRIDGE)
                .map(|(_, &e)| e),
        )
    }
}

/// The fused candidates of every bank, one per record that recall may return.
pub(super) type Candidates = HashMap<MemoryId, Candidate>;

/// One arm's hits rated as evidence, best first: each hit's quality in 0..1, and the weight the
/// arm's evidence counts with.
pub(super) struct RatedArm {
    pub(super) arm: &'static str,
    pub(super) weight: f32,
    pub(super) hits: Vec<ArmResult>,
}

impl RatedArm {
    /// An arm whose hits count as evidence by their quality alone.
    fn plain(arm: &'static str, hits: Vec<ArmResult>) -> RatedArm {
        RatedArm {
            arm,
            weight: 1.0,
            hits,
        }
    }
}

impl Plan {
    /// Every bank's arm results joined into one candidate per memory.
    pub(super) fn fuse(
        &self,
        views: &[Arc<BankView>],
        vectors: &QueryVectors,
        gathered: Gathered,
    ) -> Candidates {
        let mut candidates = Candidates::new();
        for (bank, (view, found)) in views.iter().zip(gathered.by_bank()).enumerate() {
            self.fuse_bank(&mut candidates, bank, view, vectors, found);
        }
        candidates
    }

    /// One bank's hits credited to its candidates, then the hops from them: the change arm
    /// starts from the candidates so far, and the bridge from the best of them, changes included.
    fn fuse_bank(
        &self,
        candidates: &mut Candidates,
        bank: usize,
        view: &BankView,
        vectors: &QueryVectors,
        found: (VectorHits, LexicalHits),
    ) {
        let rules = self.visibility(&self.configs[bank]);
        view.with_records(|records| {
            let credit_arm = |candidates: &mut Candidates, rated: RatedArm| {
                let weight = rated.weight * self.profile.arm_weight(rated.arm);
                credit(candidates, bank, RatedArm { weight, ..rated }, |id| {
                    self.stand_in(records, id, rules)
                });
            };
            for rated in self.rate(view, records, vectors, bank, found) {
                credit_arm(candidates, rated);
            }
            // An optional arm: not while a bulk load leaves the bank without its graph, when
            // each of its searches would scan every vector.
            if self.shadow_alike
                && !self.request.include_history
                && view.index.vectors().searches_quickly()
            {
                let changes = metrics::recall_arm(ARM_CHANGE, || {
                    self.changes_of_found(view, records, rules, candidates, bank)
                });
                credit_arm(candidates, RatedArm::plain(ARM_CHANGE, changes));
            }
            if self.arms.entity {
                let seeds = best_seeds(candidates, bank);
                let bridged =
                    metrics::recall_arm(ARM_BRIDGE, || bridged(view, &seeds, &self.entities));
                credit_arm(candidates, RatedArm::plain(ARM_BRIDGE, bridged));
            }
        });
    }

    /// One bank's arm results rated as evidence, in the order the arms are reported.
    fn rate(
        &self,
        view: &BankView,
        records: &Records,
        vectors: &QueryVectors,
        bank: usize,
        (by_vector, lexical): (VectorHits, LexicalHits),
    ) -> Vec<RatedArm> {
        let mut rated = vec![RatedArm::plain(
            ARM_SEMANTIC,
            semantic_evidence(by_vector.semantic),
        )];
        if let Some(hits) = lexical.keyword {
            rated.push(RatedArm::plain(
                ARM_KEYWORD,
                self.keyword_evidence(view, records, vectors, hits),
            ));
        }
        if let Some(hits) = lexical.entity {
            let best = view
                .index
                .entities()
                .best_possible(&self.singling_out[bank]);
            rated.push(RatedArm {
                arm: ARM_ENTITY,
                weight: ENTITY_EVIDENCE,
                hits: entity_evidence(hits, best),
            });
        }
        if let Some(hits) = by_vector.temporal {
            // Being in a window that holds much of the bank ("between January and February" over
            // a chat of those months) says little about a memory.
            let share = self.window.map_or(1.0, |(start, end)| {
                view.index.time().share_within(start.millis(), end.millis())
            });
            rated.push(RatedArm::plain(
                ARM_TEMPORAL,
                in_window_evidence(hits, share),
            ));
        }
        if let Some(hits) = by_vector.present {
            // What is alive now is evidence like being in the query's time window, and says as
            // little when most of the bank is alive.
            let share = hits.len() as f32 / view.index.time().len().max(1) as f32;
            rated.push(RatedArm::plain(
                ARM_PRESENT,
                in_window_evidence(hits, share),
            ));
        }
        if let Some(hits) = lexical.task {
            rated.push(RatedArm::plain(ARM_TASK, hits));
        }
        rated
    }

    /// The keyword arm's hits rated by the share of the query's words they cover, and by whether
    /// the embedding shares their meaning.
    fn keyword_evidence(
        &self,
        view: &BankView,
        records: &Records,
        vectors: &QueryVectors,
        hits: Vec<(u128, f32)>,
    ) -> Vec<ArmResult> {
        let best_possible = keyword_best_possible(view.index.bm25(), &self.terms);
        let stored = view.index.vectors().stored();
        let similarity = |id: u128| {
            let memory = records.get(&MemoryId(id))?;
            stored.dot(id, vectors.for_memory(memory))
        };
        keyword_evidence(hits, best_possible, similarity)
    }
}

/// Credits each of an arm's hits to the candidate of the record `stand_in` says stands for it
/// (none: the hit is left out), at the hit's rank in the arm. A record and the rewordings merged
/// into it share one credit per arm: the first, best ranked.
fn credit<'r>(
    candidates: &mut Candidates,
    bank: usize,
    rated: RatedArm,
    stand_in: impl Fn(MemoryId) -> Option<(&'r Arc<Memory>, Status)>,
) {
    let mut credited = HashSet::new();
    for (rank, (id, score, quality)) in rated.hits.into_iter().enumerate() {
        let Some((memory, status)) = stand_in(MemoryId(id)) else {
            continue;
        };
        if !credited.insert(memory.id) {
            continue;
        }
        let candidate = candidates.entry(memory.id).or_insert_with(|| Candidate {
            bank,
            memory: memory.clone(),
            status,
            arms: vec![],
            evidence: vec![],
            in_window: false,
        });
        candidate.evidence.push(rated.weight * quality);
        candidate.in_window |= rated.arm == ARM_TEMPORAL || rated.arm == ARM_PRESENT;
        candidate.arms.push(ArmHit {
            arm: rated.arm.to_string(),
            rank: rank as u32 + 1,
            score,
        });
    }
}

/// The semantic arm's hits, each as strong as its similarity says (see [`semantic_quality`]).
fn semantic_evidence(hits: Vec<(u128, f32)>) -> Vec<ArmResult> {
    hits.into_iter()
        .map(|(id, similarity)| (id, similarity, semantic_quality(similarity)))
        .collect()
}

/// Keyword hits rated by their BM25 score over `best_possible` (see [`keyword_best_possible`]).
/// Shared words whose meaning the embedding does not share are mostly stem collisions
/// ("productive" and "product") or filler: such a hit keeps half of its keyword quality.
/// `similarity` is a hit's similarity to the query, `None` when it has no vector to compare.
fn keyword_evidence(
    hits: Vec<(u128, f32)>,
    best_possible: f32,
    similarity: impl Fn(u128) -> Option<f32>,
) -> Vec<ArmResult> {
    let meaning = |id: u128| similarity(id).map_or(1.0, |s| 0.5 + 0.5 * semantic_quality(s));
    hits.into_iter()
        .map(|(id, score)| (id, score, (score / best_possible).min(1.0) * meaning(id)))
        .collect()
}

/// Entity hits rated by their score over the best a memory could get for the query's entities.
fn entity_evidence(hits: Vec<(u128, f32)>, best_possible: f32) -> Vec<ArmResult> {
    let best = best_possible.max(f32::EPSILON);
    hits.into_iter()
        .map(|(id, score)| (id, score, (score / best).min(1.0)))
        .collect()
}

/// Evidence of hits inside a time window (or alive at the query's moment) that holds `share` of
/// the bank: [`IN_WINDOW_EVIDENCE`] for being there, less the more of the bank is, plus the rest
/// by similarity to the query.
fn in_window_evidence(hits: Vec<ArmResult>, share: f32) -> Vec<ArmResult> {
    let base = IN_WINDOW_EVIDENCE * (1.0 - share).clamp(0.0, 1.0);
    hits.into_iter()
        .map(|(id, similarity, _)| {
            (
                id,
                similarity,
                base + (1.0 - base) * semantic_quality(similarity),
            )
        })
        .collect()
}

/// How strongly a hit supports relevance, in 0..1. Plain RRF counts rank only, so a bank where every
/// memory shares one weak word ("user", "用户") would let keyword noise outrank the one memory that
/// means the same thing as the query; weighting each hit's RRF share by its quality prevents that.
///
/// Cosine similarity of unrelated sentences sits around 0.1–0.3 with the default model and of
/// paraphrases around 0.5–0.8: map 0.15 → 0 and 0.65 → 1.
pub(super) fn semantic_quality(similarity: f32) -> f32 {
    ((similarity - 0.15) / 0.5).clamp(0.02, 1.0)
}

/// A BM25 score a document matching every query term once at average length would get: the sum of the
/// terms' idf, counting a term no memory contains at the highest idf. A hit's score over it says how
/// much of the query it covers.
fn keyword_best_possible(bm25: &hindsight_index::Bm25Index, terms: &[String]) -> f32 {
    let n = bm25.len() as f32;
    let mut distinct: Vec<&String> = terms.iter().collect();
    distinct.sort();
    distinct.dedup();
    let total: f32 = distinct
        .into_iter()
        .map(|t| {
            let df = bm25.doc_freq(t) as f32;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .sum();
    total.max(f32::EPSILON)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::testing::{ids, memory, plan, superseded};

    fn records(memories: Vec<Memory>) -> Records {
        memories.into_iter().map(|m| (m.id, Arc::new(m))).collect()
    }

    /// `arms` credited in order to the candidates of `records`, as the fusion of one bank does.
    fn fused(plan: &Plan, records: &Records, arms: Vec<RatedArm>) -> Candidates {
        let rules = plan.visibility(&plan.configs[0]);
        let mut candidates = Candidates::new();
        for rated in arms {
            credit(&mut candidates, 0, rated, |id| {
                plan.stand_in(records, id, rules)
            });
        }
        candidates
    }

    #[test]
    fn semantic_quality_counts_paraphrases_fully_and_unrelated_sentences_next_to_nothing() {
        assert!((semantic_quality(0.65) - 1.0).abs() < 1e-6);
        assert_eq!(semantic_quality(0.95), 1.0);
        assert!((semantic_quality(0.4) - 0.5).abs() < 1e-6);
        // Unrelated or opposite sentences keep a floor: never nothing, never less.
        assert_eq!(semantic_quality(0.15), 0.02);
        assert_eq!(semantic_quality(-0.5), 0.02);
        let along: Vec<f32> = (-10..=10)
            .map(|i| semantic_quality(i as f32 / 10.0))
            .collect();
        assert!(along.windows(2).all(|w| w[0] <= w[1]), "{along:?}");
    }

    #[test]
    fn being_in_a_narrow_time_window_is_evidence_before_any_likeness_to_the_query() {
        let hits = vec![(1, 0.0, 0.0), (2, 0.7, 0.0)];
        // Unlike the query, but in a window that holds little of the bank.
        let narrow = in_window_evidence(hits.clone(), 0.0);
        assert!(
            (narrow[0].2 - (0.6 + 0.4 * 0.02)).abs() < 1e-6,
            "{narrow:?}"
        );
        assert_eq!(narrow[1].2, 1.0);
        // A window that holds the whole bank says nothing: only the likeness counts.
        let whole = in_window_evidence(hits.clone(), 1.0);
        assert_eq!(whole[0].2, semantic_quality(0.0));
        let half = in_window_evidence(hits, 0.5);
        assert!(
            half[0].2 > whole[0].2 && half[0].2 < narrow[0].2,
            "{half:?}"
        );
        // The arm's own score is the similarity.
        assert_eq!((half[1].0, half[1].1), (2, 0.7));
    }

    #[test]
    fn a_keyword_hit_whose_meaning_the_query_does_not_share_keeps_half_its_evidence() {
        let similarity = |id: u128| match id {
            1 => Some(0.7),
            2 => Some(0.1),
            _ => None,
        };
        let rated = keyword_evidence(
            vec![(1, 4.0), (2, 4.0), (3, 2.0), (4, 8.0)],
            4.0,
            similarity,
        );
        let evidence: Vec<f32> = rated.iter().map(|hit| hit.2).collect();
        // Every word of the query, meant alike; the same words by a stem collision; half the
        // words, with no vector to compare; more than the query asks for is no more than all.
        assert_eq!(evidence[0], 1.0);
        assert!((evidence[1] - 0.51).abs() < 1e-6, "{evidence:?}");
        assert_eq!(evidence[2], 0.5);
        assert_eq!(evidence[3], 1.0);
        assert_eq!(rated[3].1, 8.0);
    }

    #[test]
    fn entity_evidence_is_the_share_of_the_best_possible_match() {
        let rated = entity_evidence(vec![(1, 2.0), (2, 1.0)], 2.0);
        assert_eq!((rated[0].2, rated[1].2), (1.0, 0.5));
        // With nothing to single out, a hit that scores nothing is no evidence (not 0/0).
        assert_eq!(entity_evidence(vec![(1, 0.0)], 0.0)[0].2, 0.0);
    }

    #[test]
    fn a_hit_on_a_superseded_record_is_credited_once_to_the_record_that_replaced_it() {
        let plan = plan(10);
        let records = records(vec![superseded(1, 2), memory(2)]);
        // The old wording is the arm's best hit, the new one its second; 3 is not recallable.
        let keyword = RatedArm {
            arm: ARM_KEYWORD,
            weight: 0.5,
            hits: vec![(1, 9.0, 0.8), (2, 3.0, 0.4), (3, 1.0, 1.0)],
        };
        let candidates = fused(&plan, &records, vec![keyword]);
        assert_eq!(candidates.keys().collect::<Vec<_>>(), vec![&MemoryId(2)]);
        let standing = &candidates[&MemoryId(2)];
        assert_eq!(standing.status, Status::Active);
        assert_eq!(standing.evidence, vec![0.4]);
        assert_eq!(standing.arms.len(), 1);
        assert_eq!((standing.arms[0].rank, standing.arms[0].score), (1, 9.0));
    }

    #[test]
    fn a_memory_found_by_two_arms_outranks_one_found_by_one_at_equal_strength() {
        let plan = plan(10);
        let records = records(vec![memory(1), memory(2)]);
        // 1 would win a tie; 2 is what the keyword arm found too.
        let semantic = RatedArm::plain(ARM_SEMANTIC, vec![(1, 0.4, 0.5), (2, 0.4, 0.5)]);
        let keyword = RatedArm::plain(ARM_KEYWORD, vec![(2, 3.0, 0.5)]);
        let hits = plan.score(fused(&plan, &records, vec![semantic, keyword]));
        assert_eq!(ids(&hits), vec![2, 1]);
        assert!((hits[0].explain.relevance - 0.75).abs() < 1e-6);
        assert!((hits[1].explain.relevance - 0.5).abs() < 1e-6);
        let arms: Vec<&str> = hits[0]
            .explain
            .arms
            .iter()
            .map(|a| a.arm.as_str())
            .collect();
        assert_eq!(arms, ["semantic", "keyword"]);
    }

    #[test]
    fn fusion_never_ranks_a_memory_below_what_its_best_arm_says() {
        let plan = plan(10);
        let records = records(vec![memory(1), memory(2), memory(3)]);
        // 1 and 2 found weakly by two arms each; 3 only by the keyword arm, strongly. 3 loses
        // a tie.
        let semantic = RatedArm::plain(ARM_SEMANTIC, vec![(1, 0.3, 0.3), (2, 0.3, 0.3)]);
        let entity = RatedArm {
            arm: ARM_ENTITY,
            weight: ENTITY_EVIDENCE,
            hits: vec![(2, 1.0, 1.0), (1, 1.0, 1.0)],
        };
        let keyword = RatedArm::plain(ARM_KEYWORD, vec![(3, 5.0, 0.9)]);
        let hits = plan.score(fused(&plan, &records, vec![semantic, entity, keyword]));
        assert_eq!(ids(&hits), vec![3, 1, 2]);
        for hit in &hits {
            let best = hit.candidate.evidence.iter().copied().fold(0.0, f32::max);
            assert!(hit.explain.relevance >= best, "{:?}", hit.explain);
        }
    }

    #[test]
    fn what_the_temporal_or_present_arm_found_is_flagged_in_the_time_window() {
        let plan = plan(10);
        let records = records(vec![memory(1), memory(2), memory(3)]);
        let arms = vec![
            RatedArm::plain(ARM_SEMANTIC, vec![(3, 0.5, 0.5), (1, 0.5, 0.5)]),
            RatedArm::plain(ARM_TEMPORAL, vec![(1, 0.5, 0.7)]),
            RatedArm::plain(ARM_PRESENT, vec![(2, 0.5, 0.7)]),
        ];
        let hits = plan.score(fused(&plan, &records, arms));
        let in_window: Vec<bool> = hits
            .iter()
            .map(|h| h.explain.flags.iter().any(|f| f == "in_time_window"))
            .collect();
        assert_eq!(ids(&hits), vec![1, 2, 3]);
        assert_eq!(in_window, vec![true, true, false]);
    }
}
