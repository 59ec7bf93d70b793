//! Distillation without an LLM: when several episodes show the same pattern, propose one
//! semantic rule derived from them (docs/DESIGN.md, "Review"). The rule's text is the most
//! central episode's content, so the proposal is deterministic and never says more than the
//! episodes do.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use hindsight_core::{Kind, Memory, MemoryId, Slot};
use serde::{Deserialize, Serialize};

use crate::decision::{Action, Decision, DistilledRule, MemoryUpdate};
use crate::neighbourhood::Neighbourhood;
use crate::pair::is_reviewable;

/// Distillation parameters, per bank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DistillConfig {
    /// Fewest episodes that make a pattern.
    pub min_support: usize,
    /// Similarity every two episodes of a pattern must have when no slot ties them together.
    pub similarity: f32,
    /// Most similar neighbours asked for per episode.
    pub neighbours_per_episode: usize,
}

impl Default for DistillConfig {
    fn default() -> Self {
        DistillConfig {
            min_support: 3,
            similarity: 0.85,
            neighbours_per_episode: 20,
        }
    }
}

/// The name distillation decisions carry as their judge.
pub const DISTILL: &str = "distill";

/// Confidence of a rule backed by `support` episodes: more support, more confidence, but a
/// rule distilled without anyone stating it never reaches the confidence of a user's fact.
pub fn rule_confidence(support: usize) -> f32 {
    (0.5 + 0.1 * support as f32).min(0.95)
}

/// Rules proposed from `episodes`. Pass the episodes not yet behind a rule: each pattern found
/// here becomes a new [`Action::Distill`] decision, and only episodes in `episodes` are grouped.
///
/// Episodes stating the same value for one slot form a pattern; so do episodes that are all
/// pairwise similar. An episode joins at most one pattern.
pub fn distill(
    episodes: &[Arc<Memory>],
    neighbourhood: &dyn Neighbourhood,
    config: &DistillConfig,
) -> Vec<Decision> {
    let eligible: BTreeMap<MemoryId, &Arc<Memory>> = episodes
        .iter()
        .filter(|m| m.kind == Kind::Episodic && is_reviewable(m))
        .map(|m| (m.id, m))
        .collect();
    let similarity = Similarities::gather(&eligible, neighbourhood, config);
    let mut used: BTreeSet<MemoryId> = BTreeSet::new();
    let mut decisions = Vec::new();

    let mut by_slot: BTreeMap<(&str, &str, &str), Vec<MemoryId>> = BTreeMap::new();
    for m in eligible.values() {
        if let Some(slot) = &m.slot {
            let key = (
                slot.subject.as_str(),
                slot.attribute.as_str(),
                slot.value.as_str(),
            );
            by_slot.entry(key).or_default().push(m.id);
        }
    }
    for ((subject, attribute, value), members) in by_slot {
        if members.len() < config.min_support {
            continue;
        }
        let slot = Slot {
            subject: subject.to_string(),
            attribute: attribute.to_string(),
            value: value.to_string(),
        };
        let reason = format!(
            "{} episodes state {subject}/{attribute} = \"{value}\"",
            members.len()
        );
        used.extend(members.iter().copied());
        decisions.push(rule(&members, &eligible, &similarity, Some(slot), reason));
    }

    for members in similarity.cliques(&used, config.min_support) {
        let reason = format!(
            "{} episodes are pairwise at least {:.2} similar",
            members.len(),
            config.similarity
        );
        used.extend(members.iter().copied());
        let slot = shared_slot(&members, &eligible);
        decisions.push(rule(&members, &eligible, &similarity, slot, reason));
    }
    decisions
}

/// Episodes that show the pattern of a rule already distilled: each joins the rule it matches
/// best (same slot value, or similar to the rule or one of its episodes), and every rule that
/// gains episodes gets one [`Action::Reinforce`] decision. Returns the decisions and the
/// episodes they took, which must not seed new rules.
pub fn reinforce(
    rules: &[Arc<Memory>],
    episodes: &[Arc<Memory>],
    neighbourhood: &dyn Neighbourhood,
    config: &DistillConfig,
) -> (Vec<Decision>, BTreeSet<MemoryId>) {
    let rules: Vec<&Arc<Memory>> = rules
        .iter()
        .filter(|r| !r.support.derived_from.is_empty() && is_reviewable(r))
        .collect();
    let mut joined: BTreeMap<MemoryId, Vec<MemoryId>> = BTreeMap::new();
    if rules.is_empty() {
        return (vec![], BTreeSet::new());
    }
    // Looked up once per episode, so indexed rather than searched; on a tie the rule listed first
    // wins, as a search of the list would find it.
    let mut behind: BTreeSet<MemoryId> = BTreeSet::new();
    let mut by_member: BTreeMap<MemoryId, MemoryId> = BTreeMap::new();
    let mut by_slot_value: HashMap<&Slot, MemoryId> = HashMap::new();
    for r in &rules {
        behind.extend(r.support.derived_from.iter().copied());
        for id in std::iter::once(&r.id).chain(&r.support.derived_from) {
            by_member.entry(*id).or_insert(r.id);
        }
        if let Some(slot) = &r.slot {
            by_slot_value.entry(slot).or_insert(r.id);
        }
    }
    for episode in episodes
        .iter()
        .filter(|m| m.kind == Kind::Episodic && is_reviewable(m))
    {
        if behind.contains(&episode.id) {
            continue;
        }
        let by_slot = episode
            .slot
            .as_ref()
            .and_then(|slot| by_slot_value.get(slot).copied());
        let by_similarity = || {
            neighbourhood
                .similar(episode, config.similarity, config.neighbours_per_episode)
                .into_iter()
                .filter(|(_, s)| *s >= config.similarity)
                .find_map(|(other, _)| by_member.get(&other.id).copied())
        };
        if let Some(rule) = by_slot.or_else(by_similarity) {
            joined.entry(rule).or_default().push(episode.id);
        }
    }
    let mut taken = BTreeSet::new();
    let mut decisions = vec![];
    for (rule_id, mut new) in joined {
        let rule = rules
            .iter()
            .find(|r| r.id == rule_id)
            .expect("joined rules come from the list");
        new.sort();
        taken.extend(new.iter().copied());
        let support = rule.support.derived_from.len() + new.len();
        let confidence = rule_confidence(support).max(rule.confidence);
        let mut update = MemoryUpdate::of(rule_id);
        if confidence > rule.confidence {
            update = update.confidence(confidence);
        }
        decisions.push(Decision {
            action: Action::Reinforce {
                rule: update,
                episodes: new.clone(),
            },
            judge: DISTILL.to_string(),
            reason: format!(
                "{} more episode(s) show the rule's pattern; support {} → {support}",
                new.len(),
                rule.support.derived_from.len()
            ),
        });
    }
    (decisions, taken)
}

fn rule(
    members: &[MemoryId],
    eligible: &BTreeMap<MemoryId, &Arc<Memory>>,
    similarity: &Similarities,
    slot: Option<Slot>,
    reason: String,
) -> Decision {
    let central = similarity.most_central(members);
    let mut derived_from = members.to_vec();
    derived_from.sort();
    Decision {
        action: Action::Distill(DistilledRule {
            content: eligible[&central].content.clone(),
            confidence: rule_confidence(members.len()),
            derived_from,
            slot,
        }),
        judge: DISTILL.to_string(),
        reason,
    }
}

fn shared_slot(members: &[MemoryId], eligible: &BTreeMap<MemoryId, &Arc<Memory>>) -> Option<Slot> {
    let first = eligible[members.first()?].slot.clone()?;
    members
        .iter()
        .all(|id| eligible[id].slot.as_ref() == Some(&first))
        .then_some(first)
}

/// Similarities between eligible episodes, as the neighbourhood reported them from either side.
struct Similarities {
    edges: BTreeMap<(MemoryId, MemoryId), f32>,
    /// Each episode's neighbours, most similar first: cliques are grown from every episode, and a
    /// walk of all edges per episode would make that quadratic in the episodes of a cycle.
    adjacent: BTreeMap<MemoryId, Vec<(MemoryId, f32)>>,
}

impl Similarities {
    fn gather(
        eligible: &BTreeMap<MemoryId, &Arc<Memory>>,
        neighbourhood: &dyn Neighbourhood,
        config: &DistillConfig,
    ) -> Self {
        let mut edges = BTreeMap::new();
        for m in eligible.values() {
            for (other, s) in
                neighbourhood.similar(m, config.similarity, config.neighbours_per_episode)
            {
                if other.id != m.id && eligible.contains_key(&other.id) && s >= config.similarity {
                    let key = (m.id.min(other.id), m.id.max(other.id));
                    let entry = edges.entry(key).or_insert(s);
                    *entry = entry.max(s);
                }
            }
        }
        let mut adjacent: BTreeMap<MemoryId, Vec<(MemoryId, f32)>> = BTreeMap::new();
        for (&(a, b), &s) in &edges {
            adjacent.entry(a).or_default().push((b, s));
            adjacent.entry(b).or_default().push((a, s));
        }
        for list in adjacent.values_mut() {
            list.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        }
        Similarities { edges, adjacent }
    }

    fn get(&self, a: MemoryId, b: MemoryId) -> Option<f32> {
        self.edges.get(&(a.min(b), a.max(b))).copied()
    }

    fn neighbours(&self, id: MemoryId) -> &[(MemoryId, f32)] {
        self.adjacent.get(&id).map_or(&[], Vec::as_slice)
    }

    /// The member most similar to the others (sum of reported similarities); the oldest id on a
    /// tie, so the choice is stable.
    fn most_central(&self, members: &[MemoryId]) -> MemoryId {
        let score = |id: MemoryId| -> f32 {
            members
                .iter()
                .filter(|o| **o != id)
                .filter_map(|o| self.get(id, *o))
                .sum()
        };
        let mut best = members[0];
        let mut best_score = score(best);
        for &id in &members[1..] {
            let s = score(id);
            if s > best_score || (s == best_score && id < best) {
                best = id;
                best_score = s;
            }
        }
        best
    }

    /// Groups of at least `min` unused episodes that are all pairwise similar, grown greedily from
    /// the best-connected episode.
    fn cliques(&self, used: &BTreeSet<MemoryId>, min: usize) -> Vec<Vec<MemoryId>> {
        let mut taken = used.clone();
        let mut seeds: Vec<MemoryId> = self
            .edges
            .keys()
            .flat_map(|&(a, b)| [a, b])
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        seeds.sort_by_key(|id| (std::cmp::Reverse(self.neighbours(*id).len()), *id));
        let mut out = Vec::new();
        for seed in seeds {
            if taken.contains(&seed) {
                continue;
            }
            let mut clique = vec![seed];
            for &(candidate, _) in self.neighbours(seed) {
                if !taken.contains(&candidate)
                    && clique.iter().all(|m| self.get(*m, candidate).is_some())
                {
                    clique.push(candidate);
                }
            }
            if clique.len() >= min {
                clique.sort();
                taken.extend(clique.iter().copied());
                out.push(clique);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{memory, MemoryExt, Table};

    fn episode(id: u128, content: &str) -> Memory {
        memory(id, content).with_kind(Kind::Episodic)
    }

    fn rules(decisions: &[Decision]) -> Vec<&DistilledRule> {
        decisions
            .iter()
            .map(|d| match &d.action {
                Action::Distill(rule) => rule,
                other => panic!("expected distill, got {other:?}"),
            })
            .collect()
    }

    #[test]
    fn three_episodes_with_one_slot_value_make_a_rule() {
        let table = Table::new(&[
            episode(1, "Ordered an oat latte for the user.").with_slot("user", "coffee", "latte"),
            episode(2, "The user asked for a latte again.").with_slot("user", "coffee", "latte"),
            episode(3, "Got the user a latte before the meeting.")
                .with_slot("user", "coffee", "latte"),
            episode(4, "The user tried an americano once.").with_slot(
                "user",
                "coffee",
                "americano",
            ),
        ])
        .similar(1, 2, 0.9)
        .similar(2, 3, 0.9);
        let decisions = distill(&table.all(), &table, &DistillConfig::default());
        let rules = rules(&decisions);
        assert_eq!(rules.len(), 1);
        assert_eq!(
            rules[0].derived_from,
            vec![MemoryId(1), MemoryId(2), MemoryId(3)]
        );
        assert_eq!(rules[0].content, "The user asked for a latte again.");
        assert!((rules[0].confidence - 0.8).abs() < 1e-6);
        assert_eq!(rules[0].slot.as_ref().unwrap().value, "latte");
    }

    #[test]
    fn similar_episodes_must_all_be_alike() {
        let table = Table::new(&[
            episode(
                1,
                "Deploy failed: the staging token had expired; renewed it.",
            ),
            episode(
                2,
                "Staging deploy broke on an expired token, renewing fixed it.",
            ),
            episode(
                3,
                "Expired staging token blocked the deploy again; renewed.",
            ),
            episode(4, "Deployed the docs site."),
        ])
        .similar(1, 2, 0.9)
        .similar(1, 3, 0.88)
        .similar(2, 3, 0.86)
        .similar(3, 4, 0.86);
        let decisions = distill(&table.all(), &table, &DistillConfig::default());
        let rules = rules(&decisions);
        assert_eq!(rules.len(), 1);
        assert_eq!(
            rules[0].derived_from,
            vec![MemoryId(1), MemoryId(2), MemoryId(3)]
        );
        assert_eq!(rules[0].content, table.get(1).content);
    }

    #[test]
    fn two_episodes_or_semantic_memories_are_not_a_pattern() {
        let table = Table::new(&[
            episode(1, "Ordered a latte."),
            episode(2, "Ordered a latte again."),
            memory(3, "The user drinks lattes."),
        ])
        .similar(1, 2, 0.95)
        .similar(1, 3, 0.95)
        .similar(2, 3, 0.95);
        assert!(distill(&table.all(), &table, &DistillConfig::default()).is_empty());
    }

    #[test]
    fn a_new_episode_of_a_known_pattern_reinforces_the_rule_instead_of_copying_it() {
        let mut rule = memory(10, "The user asked for a latte again.");
        rule.support.derived_from = vec![MemoryId(1), MemoryId(2), MemoryId(3)];
        rule.confidence = rule_confidence(3);
        let table = Table::new(&[
            episode(1, "Ordered an oat latte for the user."),
            episode(2, "The user asked for a latte again."),
            episode(3, "Got the user a latte before the meeting."),
            episode(4, "Fetched a latte for the user after lunch."),
            episode(5, "Booked a dentist appointment."),
            rule,
        ])
        .similar(4, 2, 0.9)
        .similar(5, 1, 0.3);
        let rules = vec![table.get(10)];
        let (decisions, taken) = reinforce(&rules, &table.all(), &table, &DistillConfig::default());
        assert_eq!(taken.into_iter().collect::<Vec<_>>(), vec![MemoryId(4)]);
        assert_eq!(decisions.len(), 1);
        match &decisions[0].action {
            Action::Reinforce { rule, episodes } => {
                assert_eq!(rule.id, MemoryId(10));
                assert_eq!(episodes, &vec![MemoryId(4)]);
                assert!((rule.confidence.unwrap() - rule_confidence(4)).abs() < 1e-6);
            }
            other => panic!("expected reinforce, got {other:?}"),
        }
    }

    #[test]
    fn confidence_grows_with_support_and_stays_below_a_stated_fact() {
        assert!((rule_confidence(3) - 0.8).abs() < 1e-6);
        assert!(rule_confidence(4) > rule_confidence(3));
        assert_eq!(rule_confidence(20), 0.95);
    }
}
