//! Collapse: the scored candidates less what another one found stands for (a rule's relaxation
//! by a lesser voice, a statement a newer one replaces).

use std::sync::Arc;

use hindsight_core::recall::Explain;
use hindsight_core::shadow::{shadowed, Found};
use hindsight_core::MemoryId;
use hindsight_index::dot;

use super::fuse::Candidate;
use super::gather::{ARM_KEYWORD, ARM_SEMANTIC};
use super::search::Plan;
use crate::bank::changes::announces_change;
use crate::bank::BankView;
use crate::write::guarding;

/// At least this many of the best candidates are compared for statements that answer alike.
const SHADOW_CONSIDERED: usize = 30;

impl Plan {
    /// The best-scored candidates less the texts of a lesser voice that grant leave against a
    /// standing rule of the principal found with them, as the write path holds such a text
    /// against the rules of its own bank (`guarding::hold_if_relaxing_a_rule`). Here the rule
    /// may live in another bank the query reads (a team's), or have been stated after the text.
    pub(super) fn without_rule_relaxing(
        &self,
        views: &[Arc<BankView>],
        scored: Vec<(f32, Explain, Candidate)>,
    ) -> Vec<(f32, Explain, Candidate)> {
        let Some(screener) = self.screener.as_deref() else {
            return scored;
        };
        let considered = scored
            .len()
            .min((self.request.top_k as usize * 3).max(SHADOW_CONSIDERED));
        let head = &scored[..considered];
        // Read once per candidate: whether the principal speaks in it for themselves.
        let principal: Vec<bool> = head
            .iter()
            .map(|(_, _, c)| screener.speaks_for_principal(&c.memory.provenance, &c.memory.content))
            .collect();
        let challengers: Vec<usize> = (0..considered)
            .filter(|&i| !principal[i] && !guarding::reports_its_own_turn(&head[i].2.memory))
            .collect();
        if challengers.is_empty() {
            return scored;
        }
        let vector_of = |i: usize| {
            let c = &head[i].2;
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
                let close = rules.iter().map(|(j, rule_vector)| {
                    (head[*j].2.memory.as_ref(), dot(&vector, rule_vector))
                });
                guarding::relaxed_rule(screener, &head[i].2.memory, close).is_some()
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
    pub(super) fn without_shadowed(
        &self,
        views: &[Arc<BankView>],
        mut scored: Vec<(f32, Explain, Candidate)>,
    ) -> Vec<(f32, Explain, Candidate)> {
        let considered = scored
            .len()
            .min((self.request.top_k as usize * 3).max(SHADOW_CONSIDERED));
        let head = &scored[..considered];
        let vectors: Vec<Option<Vec<f32>>> = head
            .iter()
            .map(|(_, _, c)| views[c.bank].index.vectors().get(c.memory.id.0))
            .collect();
        let announcing: Vec<bool> = head
            .iter()
            .map(|(_, _, c)| announces_change(&c.memory))
            .collect();
        let replaces: Vec<Option<MemoryId>> = head
            .iter()
            .zip(&vectors)
            .zip(&announcing)
            .map(|(((_, _, c), vector), &announcing)| {
                if !announcing {
                    return None;
                }
                // A statement without a vector has nothing to be compared with.
                vector.as_ref()?;
                self.nearest_older_statement(&views[c.bank], c)
            })
            .collect();
        let found: Vec<Found> = head
            .iter()
            .zip(replaces)
            .zip(announcing)
            .map(|(((_, _, c), replaces), announces_change)| Found {
                memory: &c.memory,
                // A bridge links a memory to a good answer; it does not make the memory an
                // answer alike to the others.
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
            })
            .collect();
        let by = shadowed(&found, |i, j| {
            Some(dot(vectors[i].as_deref()?, vectors[j].as_deref()?))
        });
        // The statement that stands takes the place of the best it stands for, as a superseded
        // record's hit stands in for the record that replaced it: a question worded like the old
        // value or the guess finds the current answer where it would have found those.
        for (loser, winner) in by.iter().enumerate() {
            if let Some(winner) = *winner {
                let id = scored[loser].2.memory.id.to_string();
                let score = scored[loser].0;
                let standing = &mut scored[winner];
                standing.1.collapsed.push(id);
                if score > standing.0 {
                    standing.0 = score;
                    standing.1.score = score;
                }
            }
        }
        let mut kept: Vec<(f32, Explain, Candidate)> = scored
            .into_iter()
            .enumerate()
            .filter(|(i, _)| by.get(*i).is_none_or(|b| b.is_none()))
            .map(|(_, entry)| entry)
            .collect();
        kept.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.memory.id.cmp(&b.2.memory.id)));
        kept
    }
}
