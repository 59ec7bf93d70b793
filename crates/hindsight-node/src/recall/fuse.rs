//! Fuse: each arm's hits rated as evidence that they answer the query, and joined into one
//! candidate per memory.

use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::recall::{ArmHit, Explain, RecallHit, RecallResponse};
use hindsight_core::scoring::{combine_evidence, freshness, lifecycle_score};
use hindsight_core::{Memory, MemoryId, Status};
use hindsight_index::dot;

use super::gather::{
    ArmResult, LexicalHits, VectorHits, ARM_ENTITY, ARM_KEYWORD, ARM_PRESENT, ARM_SEMANTIC,
    ARM_TASK, ARM_TEMPORAL,
};
use super::hops::{best_seeds, bridged, ARM_BRIDGE, ARM_CHANGE};
use super::query::QueryVectors;
use super::score::flags;
use super::search::Plan;
use crate::bank::BankView;
use crate::metrics;

/// Naming the same entity as the query makes a memory about the right thing, not yet the answer:
/// the entity arm's evidence counts this much of a match that singles the memory out.
const ENTITY_EVIDENCE: f32 = 0.6;

/// An explicit time expression is a strong statement of intent: a memory inside the window is
/// evidence of this much before its similarity to the rest of the query adds to it.
const IN_WINDOW_EVIDENCE: f32 = 0.6;

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

impl Plan {
    /// Every arm's evidence fused into relevance, the floor, lifecycle scoring, collapse and budget.
    pub(super) fn fuse(
        &self,
        views: &[Arc<BankView>],
        vectors: &QueryVectors,
        by_vector: Vec<VectorHits>,
        lexical: Vec<LexicalHits>,
    ) -> RecallResponse {
        let top_k = self.request.top_k as usize;
        let mut candidates: HashMap<MemoryId, Candidate> = HashMap::new();

        let configs = &self.configs;
        let found = by_vector.into_iter().zip(lexical);
        for (bank, ((view, config), (by_vector, lexical))) in
            views.iter().zip(configs).zip(found).enumerate()
        {
            let rules = self.visibility(config);
            view.with_records(|records| {
                let mut arms: Vec<(&'static str, f32, Vec<ArmResult>)> = vec![(
                    ARM_SEMANTIC,
                    1.0,
                    by_vector
                        .semantic
                        .into_iter()
                        .map(|(id, sim)| (id, sim, semantic_quality(sim)))
                        .collect(),
                )];
                if let Some(hits) = lexical.keyword {
                    let best_possible = keyword_best_possible(view.index.bm25(), &self.terms);
                    let stored = view.index.vectors().stored();
                    // Shared words whose meaning the embedding does not share are mostly stem
                    // collisions ("productive" and "product") or filler: such a hit keeps half
                    // of its keyword quality.
                    let meaning = |id: u128| -> f32 {
                        match (records.get(&MemoryId(id)), stored.get(id)) {
                            (Some(memory), Some(v)) => {
                                0.5 + 0.5 * semantic_quality(dot(v, vectors.for_memory(memory)))
                            }
                            _ => 1.0,
                        }
                    };
                    let ranked = hits
                        .into_iter()
                        .map(|(id, score)| {
                            (id, score, (score / best_possible).min(1.0) * meaning(id))
                        })
                        .collect();
                    drop(stored);
                    arms.push((ARM_KEYWORD, 1.0, ranked));
                }
                if let Some(hits) = lexical.entity {
                    let best = view
                        .index
                        .entities()
                        .best_possible(&self.singling_out[bank])
                        .max(f32::EPSILON);
                    arms.push((
                        ARM_ENTITY,
                        ENTITY_EVIDENCE,
                        hits.into_iter()
                            .map(|(id, score)| (id, score, (score / best).min(1.0)))
                            .collect(),
                    ));
                }
                if let Some(hits) = by_vector.temporal {
                    // Being in a window that holds much of the bank ("between January and
                    // February" over a chat of those months) says little about a memory.
                    let share = self.window.map_or(1.0, |(start, end)| {
                        view.index.time().share_within(start.millis(), end.millis())
                    });
                    arms.push((ARM_TEMPORAL, 1.0, in_window_evidence(hits, share)));
                }
                if let Some(hits) = by_vector.present {
                    // What is alive now is evidence like being in the query's time window, and
                    // says as little when most of the bank is alive.
                    let share = hits.len() as f32 / view.index.time().len().max(1) as f32;
                    arms.push((ARM_PRESENT, 1.0, in_window_evidence(hits, share)));
                }
                if let Some(hits) = lexical.task {
                    arms.push((ARM_TASK, 1.0, hits));
                }
                let credit = |candidates: &mut HashMap<MemoryId, Candidate>,
                              arm: &'static str,
                              weight: f32,
                              ranked: Vec<ArmResult>| {
                    let weight = weight * self.profile.arm_weight(arm);
                    // A record and the rewordings merged into it share one share per arm.
                    let mut credited = std::collections::HashSet::new();
                    for (rank, (id, score, quality)) in ranked.into_iter().enumerate() {
                        let Some((memory, status)) = self.stand_in(records, MemoryId(id), rules)
                        else {
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
                        candidate.evidence.push(weight * quality);
                        candidate.in_window |= arm == ARM_TEMPORAL || arm == ARM_PRESENT;
                        candidate.arms.push(ArmHit {
                            arm: arm.to_string(),
                            rank: rank as u32 + 1,
                            score,
                        });
                    }
                };
                for (arm, weight, ranked) in arms {
                    credit(&mut candidates, arm, weight, ranked);
                }
                // An optional arm: not while a bulk load leaves the bank without its graph,
                // when each of its searches would scan every vector.
                if self.shadow_alike
                    && !self.request.include_history
                    && view.index.vectors().searches_quickly()
                {
                    let changes = metrics::recall_arm(ARM_CHANGE, || {
                        self.changes_of_found(view, records, rules, &candidates, bank)
                    });
                    credit(&mut candidates, ARM_CHANGE, 1.0, changes);
                }
                if self.arms.entity {
                    let seeds = best_seeds(&candidates, bank);
                    let bridged =
                        metrics::recall_arm(ARM_BRIDGE, || bridged(view, &seeds, &self.entities));
                    credit(&mut candidates, ARM_BRIDGE, 1.0, bridged);
                }
            });
        }

        let mut scored: Vec<(f32, Explain, Candidate)> = candidates
            .into_values()
            .filter_map(|c| {
                let weights = &configs[c.bank].weights;
                let relevance = combine_evidence(c.evidence.iter().copied());
                if relevance < self.min_relevance {
                    return None;
                }
                let fresh = freshness(
                    self.as_of.days_since(c.memory.occurred_at),
                    weights.freshness_days_for(c.memory.kind),
                );
                let confidence = self.confidence_of(&c.memory);
                let (factor, adjustments) = self.adjustments(&c.memory)?;
                let score = lifecycle_score(weights, relevance, confidence, fresh) * factor;
                let explain = Explain {
                    arms: c.arms.clone(),
                    relevance,
                    confidence,
                    freshness: fresh,
                    score,
                    status: c.status.name().to_string(),
                    flags: flags(&c, relevance),
                    collapsed: vec![],
                    adjustments,
                };
                Some((score, explain, c))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.memory.id.cmp(&b.2.memory.id)));
        if !self.request.include_history {
            scored = self.without_rule_relaxing(views, scored);
        }
        if self.shadow_alike && !self.request.include_history {
            scored = self.without_shadowed(views, scored);
        }

        let mut hits: Vec<RecallHit> = vec![];
        let mut kept_vectors: Vec<Vec<f32>> = vec![];
        let mut tokens_used = 0u32;
        for (score, explain, candidate) in scored {
            if hits.len() >= top_k {
                break;
            }
            let collapse_at = configs[candidate.bank].collapse_threshold;
            let vector = views[candidate.bank]
                .index
                .vectors()
                .get(candidate.memory.id.0);
            if let Some(vector) = &vector {
                let twin = kept_vectors
                    .iter()
                    .position(|kept| dot(kept, vector) >= collapse_at);
                if let Some(position) = twin {
                    hits[position]
                        .explain
                        .collapsed
                        .push(candidate.memory.id.to_string());
                    continue;
                }
            }
            let tokens = views[candidate.bank].token_count(&candidate.memory);
            if self
                .request
                .max_tokens
                .is_some_and(|budget| tokens_used + tokens > budget)
            {
                break;
            }
            tokens_used += tokens;
            // Kept in step with `hits`: a twin's position is the hit it folds into.
            kept_vectors.push(vector.unwrap_or_default());
            hits.push(RecallHit {
                memory: (*candidate.memory).clone(),
                status: candidate.status,
                score,
                explain,
            });
        }
        RecallResponse {
            hits,
            time_window: self.window,
            tokens_used,
            took_micros: 0,
            recall_id: None,
        }
    }
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
