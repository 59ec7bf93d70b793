//! Collapse: the scored candidates less what another one found stands for (a rule's relaxation
//! by a lesser voice, a statement a newer one replaces), then the cut: near-identical hits folded
//! into the best of them, top-k and the token budget.

use std::sync::Arc;

use hindsight_core::recall::{RecallHit, RecallResponse};
use hindsight_core::shadow::{shadowed, Found};
use hindsight_core::MemoryId;
use hindsight_index::dot;

use super::fuse::Candidate;
use super::gather::{ARM_KEYWORD, ARM_SEMANTIC};
use super::score::{by_score, ScoredHit};
use super::search::Plan;
use crate::bank::changes::announces_change;
use crate::bank::BankView;
use crate::write::guarding;

/// At least this many of the best candidates are compared for statements that answer alike.
const SHADOW_CONSIDERED: usize = 30;

impl Plan {
    /// The scored candidates less those another one stands for; all of them when the request
    /// asks for history.
    pub(super) fn collapse(
        &self,
        views: &[Arc<BankView>],
        mut scored: Vec<ScoredHit>,
    ) -> Vec<ScoredHit> {
        if !self.request.include_history {
            scored = self.without_rule_relaxing(views, scored);
        }
        if self.shadow_alike && !self.request.include_history {
            scored = self.without_shadowed(views, scored);
        }
        scored
    }

    /// How many of the best of `scored` candidates are compared with each other.
    fn considered(&self, scored: usize) -> usize {
        scored.min((self.request.top_k as usize * 3).max(SHADOW_CONSIDERED))
    }

    /// The best-scored candidates less the texts of a lesser voice that grant leave against a
    /// standing rule of the principal found with them, as the write path holds such a text
    /// against the rules of its own bank (`guarding::hold_if_relaxing_a_rule`). Here the rule
    /// may live in another bank the query reads (a team's), or have been stated after the text.
    fn without_rule_relaxing(
        &self,
        views: &[Arc<BankView>],
        scored: Vec<ScoredHit>,
    ) -> Vec<ScoredHit> {
        let Some(screener) = self.screener.as_deref() else {
            return scored;
        };
        let considered = self.considered(scored.len());
        let head: Vec<&Candidate> = scored[..considered].iter().map(|s| &s.candidate).collect();
        // Read once per candidate: whether the principal speaks in it for themselves.
        let principal: Vec<bool> = head
            .iter()
            .map(|c| screener.speaks_for_principal(&c.memory.provenance, &c.memory.content))
            .collect();
        let challengers: Vec<usize> = (0..considered)
            .filter(|&i| !principal[i] && !guarding::reports_its_own_turn(&head[i].memory))
            .collect();
        if challengers.is_empty() {
            return scored;
        }
        let vector_of = |i: usize| {
            let c = head[i];
            views[c.bank].index.vectors().get(c.memory.id.0)
        };
        let rules: Vec<(usize, Vec<f32>)> = (0..considered)
            .filter(|&i| principal[i])
            .filter_map(|i| Some((i, vector_of(i)?)))
            .collect();
        let relaxing: Vec<usize> = challengers
            .into_iter()
            .filter(|&i| {
                let Some(vector) = vector_of(i) else {
                    return false;
                };
                let close = rules
                    .iter()
                    .map(|(j, rule_vector)| (head[*j].memory.as_ref(), dot(&vector, rule_vector)));
                guarding::relaxed_rule(screener, &head[i].memory, close).is_some()
            })
            .collect();
        scored
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !relaxing.contains(i))
            .map(|(_, entry)| entry)
            .collect()
    }

    /// The best-scored candidates less the statements a newer one from the same source (or the
    /// user's, for an agent's guess) stands for: both answered the query and resemble each other
    /// (see `hindsight_core::shadow`). The one that stands lists the other as collapsed.
    fn without_shadowed(&self, views: &[Arc<BankView>], scored: Vec<ScoredHit>) -> Vec<ScoredHit> {
        let considered = self.considered(scored.len());
        let by = self.shadowed_among(views, &scored[..considered]);
        stand_for_shadowed(scored, &by)
    }

    /// For each of `head`, the position of the one of them that stands for it, if any.
    fn shadowed_among(&self, views: &[Arc<BankView>], head: &[ScoredHit]) -> Vec<Option<usize>> {
        let head: Vec<&Candidate> = head.iter().map(|s| &s.candidate).collect();
        let vectors: Vec<Option<Vec<f32>>> = head
            .iter()
            .map(|c| views[c.bank].index.vectors().get(c.memory.id.0))
            .collect();
        let found: Vec<Found> = head
            .iter()
            .zip(&vectors)
            .map(|(c, vector)| {
                let announcing = announces_change(&c.memory);
                // A statement without a vector has nothing to be compared with.
                let replaces = (announcing && vector.is_some())
                    .then(|| self.nearest_older_statement(&views[c.bank], c))
                    .flatten();
                self.found(c, replaces, announcing)
            })
            .collect();
        shadowed(&found, |i, j| {
            Some(dot(vectors[i].as_deref()?, vectors[j].as_deref()?))
        })
    }

    /// `candidate` as the rules of shadowing see it.
    fn found<'c>(
        &self,
        candidate: &'c Candidate,
        replaces: Option<MemoryId>,
        announces_change: bool,
    ) -> Found<'c> {
        let c = candidate;
        Found {
            memory: &c.memory,
            // A bridge links a memory to a good answer; it does not make the memory an answer
            // alike to the others.
            relevance: c.direct_relevance(),
            bank: c.bank,
            wording: c
                .arms
                .iter()
                .zip(&c.evidence)
                .find(|(arm, _)| arm.arm == ARM_KEYWORD)
                .map_or(0.0, |(_, &e)| e),
            similarity_to_query: c
                .arms
                .iter()
                .find(|arm| arm.arm == ARM_SEMANTIC)
                .map_or(0.0, |arm| arm.score),
            replaces,
            announces_change,
            hedged: c.memory.provenance.source.is_inference()
                && hindsight_text::has_hedge(&c.memory.content).is_some(),
            rule_asked_about: self.asks_leave
                && self
                    .screener
                    .as_ref()
                    .is_some_and(|s| s.states_rule(&c.memory.content)),
        }
    }

    /// The response: the best hits up to top-k and the token budget.
    pub(super) fn cut(&self, views: &[Arc<BankView>], scored: Vec<ScoredHit>) -> RecallResponse {
        let (hits, tokens_used) = self.within_budget(
            scored,
            |c| views[c.bank].index.vectors().get(c.memory.id.0),
            |c| views[c.bank].token_count(&c.memory),
        );
        RecallResponse {
            hits,
            time_window: self.window,
            tokens_used,
            took_micros: 0,
            recall_id: None,
        }
    }

    /// The best of `scored` in order, until top-k or the token budget is reached, and the tokens
    /// they take. A hit whose vector is as close as its bank's collapse threshold to one kept
    /// before is folded into that one, listed as collapsed, and takes no room.
    fn within_budget(
        &self,
        scored: Vec<ScoredHit>,
        vector_of: impl Fn(&Candidate) -> Option<Vec<f32>>,
        tokens_of: impl Fn(&Candidate) -> u32,
    ) -> (Vec<RecallHit>, u32) {
        let top_k = self.request.top_k as usize;
        let mut hits: Vec<RecallHit> = vec![];
        let mut kept_vectors: Vec<Vec<f32>> = vec![];
        let mut tokens_used = 0u32;
        for ScoredHit {
            score,
            explain,
            candidate,
        } in scored
        {
            if hits.len() >= top_k {
                break;
            }
            let collapse_at = self.configs[candidate.bank].collapse_threshold;
            let vector = vector_of(&candidate);
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
            let tokens = tokens_of(&candidate);
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
        (hits, tokens_used)
    }
}

/// `scored` less each entry another stands for (`by[i]`: the position of the one that stands for
/// entry `i`, as [`shadowed`] tells), reordered. The statement that stands takes the place of the
/// best it stands for, as a superseded record's hit stands in for the record that replaced it: a
/// question worded like the old value or the guess finds the current answer where it would have
/// found those.
fn stand_for_shadowed(mut scored: Vec<ScoredHit>, by: &[Option<usize>]) -> Vec<ScoredHit> {
    for (loser, winner) in by.iter().enumerate() {
        if let Some(winner) = *winner {
            let id = scored[loser].candidate.memory.id.to_string();
            let score = scored[loser].score;
            let standing = &mut scored[winner];
            standing.explain.collapsed.push(id);
            if score > standing.score {
                standing.score = score;
                standing.explain.score = score;
            }
        }
    }
    let mut kept: Vec<ScoredHit> = scored
        .into_iter()
        .enumerate()
        .filter(|(i, _)| by.get(*i).is_none_or(|b| b.is_none()))
        .map(|(_, entry)| entry)
        .collect();
    by_score(&mut kept);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::testing::{candidate, ids, plan, scored};

    #[test]
    fn a_shadowed_statement_is_not_returned_and_lends_its_better_score_to_the_one_that_stands() {
        let plan = plan(10);
        let hits = scored(
            &plan,
            vec![candidate(1, 0.9), candidate(2, 0.7), candidate(3, 0.5)],
        );
        let best = hits[0].score;
        // 3, the newer statement, stands for 1.
        let kept = stand_for_shadowed(hits, &[Some(2), None, None]);
        assert_eq!(ids(&kept), vec![3, 2]);
        assert_eq!(kept[0].score, best);
        assert_eq!(kept[0].explain.score, best);
        assert_eq!(kept[0].explain.collapsed, [MemoryId(1).to_string()]);
        assert!(kept[1].explain.collapsed.is_empty());
        // One that stands for a weaker statement keeps its own score.
        let hits = scored(&plan, vec![candidate(1, 0.9), candidate(2, 0.7)]);
        let own = hits[0].score;
        let kept = stand_for_shadowed(hits, &[None, Some(0)]);
        assert_eq!(ids(&kept), vec![1]);
        assert_eq!(kept[0].score, own);
        // Past the entries compared, nothing is shadowed.
        let hits = scored(&plan, vec![candidate(1, 0.9), candidate(2, 0.7)]);
        assert_eq!(ids(&stand_for_shadowed(hits, &[None])), vec![1, 2]);
    }

    #[test]
    fn near_identical_hits_fold_into_the_best_of_them_and_take_no_room() {
        let mut cut = plan(2);
        let vector_of = |c: &Candidate| match c.memory.id.0 {
            1 | 2 => Some(vec![1.0, 0.0]),
            3 => Some(vec![0.96, 0.28]),
            5 => None,
            _ => Some(vec![0.0, 1.0]),
        };
        let tokens_of = |_: &Candidate| 10;
        let all = || {
            scored(
                &plan(10),
                (1..=5)
                    .map(|id| candidate(id, 1.0 - id as f32 / 10.0))
                    .collect(),
            )
        };
        // 2 repeats 1; 3 is close to it but under the bank's collapse threshold (0.97).
        let (hits, tokens) = cut.within_budget(all(), vector_of, tokens_of);
        let kept: Vec<u128> = hits.iter().map(|h| h.memory.id.0).collect();
        assert_eq!(kept, vec![1, 3]);
        assert_eq!(hits[0].explain.collapsed, [MemoryId(2).to_string()]);
        assert_eq!(tokens, 20);
        // The token budget stops at the first hit that would not fit.
        cut.request.top_k = 10;
        cut.request.max_tokens = Some(25);
        let (hits, tokens) = cut.within_budget(all(), vector_of, tokens_of);
        assert_eq!(hits.len(), 2);
        assert_eq!(tokens, 20);
        // A hit without a vector is never folded.
        cut.request.max_tokens = None;
        let (hits, _) = cut.within_budget(all(), vector_of, tokens_of);
        let kept: Vec<u128> = hits.iter().map(|h| h.memory.id.0).collect();
        assert_eq!(kept, vec![1, 3, 4, 5]);
    }
}
