//! The default judge: offline, deterministic, and explainable. It compares slots, time order and
//! provenance, and reads negation, change, hedge and opposite-word cues in English and Chinese.
//!
//! For each pair, newer first by event time:
//!
//! 1. Nothing shared (slot, topic word, close embedding), or an event against a fact: unrelated.
//! 2. Look for a contradiction: a different value for the same slot; one denying what the other
//!    affirms (negations, and aversions such as "allergic to" that deny without a negator);
//!    opposite words on a shared topic ("early morning" / "late at night"); different numbers on
//!    a shared topic; or a change cue in the newer that brings something the older did not say.
//! 3. No contradiction: a duplicate when the two are close and one says nothing the other does
//!    not (or both state the same slot value), else unrelated.
//! 4. A contradiction between a user statement and an agent's inference refutes the inference,
//!    whichever came first, unless the user reports a change over time since the inference (then
//!    it is an update: the inference held until then). Between two different tools it is a
//!    source conflict; the same tool reporting again is an update. Otherwise a changed slot value
//!    or a change cue in the newer makes an update; anything else is undecidable.
//!
//! It errs towards "undecidable" and "unrelated" rather than guessing: merging two different
//! facts or superseding a true one loses information, a missed duplicate only costs a result.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use hindsight_core::{Memory, MemoryId, SourceKind};
use serde::{Deserialize, Serialize};

use crate::judge::{Judge, Judgement, Relation};
use crate::pair::Pair;
use crate::statement::{
    comparable_languages, opposite_words, same_term, shared_terms, topic_overlap, Statement,
};

/// Thresholds of the rules judge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RulesConfig {
    /// Similarity at or above which two memories in the same language may be rewordings.
    pub duplicate_similarity: f32,
    /// Share of the shorter statement's topic words the other must share to be a rewording. All
    /// of them by default: templated notes ("We discussed gym schedules while working on the
    /// launch" / "… a broken printer …") embed close and share most words, yet say different things.
    pub min_duplicate_overlap: f32,
    /// The same share when both state the same value for one slot, which already says they
    /// agree on the point ("My usual coffee is a flat white" / "I always order a flat white").
    pub min_duplicate_overlap_same_value: f32,
    /// Share of the shorter statement's topic words the other must share for a change cue in the
    /// newer ("switched to", "改成") to count as changing what the older said.
    pub min_change_overlap: f32,
    /// Across languages words cannot be compared, so only similarity and slots can say two
    /// statements are about the same thing; this is the similarity that counts as saying so.
    pub cross_language_similarity: f32,
    /// Weakest change cue that announces an update ("switched to" 1.0, "actually" 0.7; a bare
    /// "now" 0.3 does not).
    pub min_change_weight: f32,
    /// Sources whose statements refute an agent's inference. The user by default; add `tool` to
    /// let tool results refute inferences too.
    pub fact_sources: Vec<SourceKind>,
}

impl Default for RulesConfig {
    fn default() -> Self {
        RulesConfig {
            duplicate_similarity: 0.75,
            min_duplicate_overlap: 1.0,
            min_duplicate_overlap_same_value: 0.5,
            min_change_overlap: 0.5,
            cross_language_similarity: 0.85,
            min_change_weight: 0.5,
            fact_sources: vec![SourceKind::User],
        }
    }
}

/// The rules judge.
#[derive(Clone, Debug, Default)]
pub struct RulesJudge {
    config: RulesConfig,
}

/// Why two statements cannot both hold.
#[derive(Clone, Debug, PartialEq)]
enum Contradiction {
    /// Same (subject, attribute), different values.
    SlotValue {
        key: String,
        newer: String,
        older: String,
    },
    /// One denies what the other affirms.
    Denial { term: String },
    /// One says the opposite of the other ("morning" / "night").
    Opposites { newer: String, older: String },
    /// Both state numbers about the same thing, and they differ.
    Numbers { newer: String, older: String },
    /// The newer announces a change and says something the older does not.
    Change { cue: String },
}

impl fmt::Display for Contradiction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contradiction::SlotValue { key, newer, older } => {
                write!(
                    f,
                    "{key} is \"{newer}\" in the newer and \"{older}\" in the older"
                )
            }
            Contradiction::Denial { term } => {
                write!(f, "one denies \"{term}\", the other states it")
            }
            Contradiction::Opposites { newer, older } => {
                write!(
                    f,
                    "\"{newer}\" in the newer opposes \"{older}\" in the older"
                )
            }
            Contradiction::Numbers { newer, older } => {
                write!(
                    f,
                    "the numbers differ ({newer} in the newer, {older} in the older)"
                )
            }
            Contradiction::Change { cue } => {
                write!(
                    f,
                    "the newer announces a change (\"{cue}\") on the same topic"
                )
            }
        }
    }
}

/// The two memories of a pair, newer first, read once.
struct Reading<'a> {
    newer: &'a Memory,
    older: &'a Memory,
    new: &'a Statement,
    old: &'a Statement,
    similarity: Option<f32>,
    same_slot: bool,
}

impl RulesJudge {
    pub const NAME: &'static str = "rules";

    pub fn new(config: RulesConfig) -> Self {
        RulesJudge { config }
    }

    pub fn config(&self) -> &RulesConfig {
        &self.config
    }

    /// The verdict on one pair.
    pub fn judge_pair(&self, pair: &Pair) -> Judgement {
        let a = Statement::read(&pair.a.content);
        let b = Statement::read(&pair.b.content);
        self.judge_read(pair, &a, &b)
    }

    fn judge_read(&self, pair: &Pair, a: &Statement, b: &Statement) -> Judgement {
        let (newer, older) = pair.by_time();
        let (new, old) = if newer.id == pair.a.id {
            (a, b)
        } else {
            (b, a)
        };
        let reading = Reading {
            newer,
            older,
            new,
            old,
            similarity: pair.similarity,
            same_slot: pair.same_slot,
        };
        let (relation, reason) = self.relate(&reading);
        Judgement {
            pair: pair.key(),
            relation,
            reason,
            judge: Self::NAME.to_string(),
        }
    }

    fn relate(&self, r: &Reading) -> (Relation, String) {
        if !self.related(r) {
            return (
                Relation::Unrelated,
                "no shared slot, topic or close similarity".to_string(),
            );
        }
        if r.newer.kind != r.older.kind {
            // An event does not restate or overturn what is known: ordering a latte once is
            // neither the user's coffee preference nor a change of it.
            return (
                Relation::Unrelated,
                format!(
                    "a {} and a {} memory do not compete",
                    r.newer.kind, r.older.kind
                ),
            );
        }
        let Some(contradiction) = self.contradiction(r) else {
            return match self.duplicate(r) {
                Ok(why) => (Relation::Duplicate, why),
                Err(why) => (Relation::Unrelated, why),
            };
        };
        if let Some((fact, inference)) = self.fact_and_inference(r) {
            // "I switched to lattes" after the agent guessed flat whites: the guess held until
            // then, so it is superseded rather than proven wrong.
            let min = self.config.min_change_weight;
            if fact.id == r.newer.id {
                if let Some(cue) = r.new.change_over_time(min) {
                    let relation = Relation::Update {
                        newer: fact.id,
                        older: inference.id,
                    };
                    let reason = format!(
                        "a statement from the {} reports a change (\"{cue}\") since an inference from the {}: {contradiction}",
                        fact.provenance.source, inference.provenance.source
                    );
                    return (relation, reason);
                }
            }
            let read = if inference.id == r.newer.id {
                r.new
            } else {
                r.old
            };
            let hedge = read
                .hedge
                .as_ref()
                .map(|h| format!(", hedged \"{h}\""))
                .unwrap_or_default();
            let reason = format!(
                "a statement from the {} contradicts an inference from the {}{hedge}: {contradiction}",
                fact.provenance.source, inference.provenance.source
            );
            let relation = Relation::InferenceRefuted {
                fact: fact.id,
                inference: inference.id,
            };
            return (relation, reason);
        }
        let update = Relation::Update {
            newer: r.newer.id,
            older: r.older.id,
        };
        if r.newer.provenance.source == SourceKind::Tool
            && r.older.provenance.source == SourceKind::Tool
        {
            return match (&r.newer.provenance.tool, &r.older.provenance.tool) {
                (Some(a), Some(b)) if a == b => (
                    update,
                    format!("a newer reading from the same tool ({a}): {contradiction}"),
                ),
                (a, b) => (
                    Relation::SourceConflict,
                    format!(
                        "tools {} and {} disagree: {contradiction}",
                        a.as_deref().unwrap_or("(unnamed)"),
                        b.as_deref().unwrap_or("(unnamed)")
                    ),
                ),
            };
        }
        let cue = r.new.change_cue(self.config.min_change_weight);
        match (&contradiction, cue) {
            (Contradiction::SlotValue { .. } | Contradiction::Change { .. }, _) => {
                (update, format!("the value changed: {contradiction}"))
            }
            (_, Some(cue)) => (
                update,
                format!("the newer announces a change (\"{cue}\"): {contradiction}"),
            ),
            (_, None) => (
                Relation::Undecidable,
                format!(
                    "{contradiction}; same trust ({} / {}) and no sign of a change",
                    r.newer.provenance.source, r.older.provenance.source
                ),
            ),
        }
    }

    /// Whether the two could be about the same thing at all.
    fn related(&self, r: &Reading) -> bool {
        let close = r.similarity.is_some_and(|s| {
            s >= self
                .config
                .duplicate_similarity
                .min(self.config.cross_language_similarity)
        });
        let shared_topic = comparable_languages(r.new.lang, r.old.lang)
            && !shared_terms(
                r.new.topic.iter().map(String::as_str),
                r.old.topic.iter().map(String::as_str),
            )
            .is_empty();
        r.same_slot || close || shared_topic
    }

    fn contradiction(&self, r: &Reading) -> Option<Contradiction> {
        if let (Some(new), Some(old)) = (&r.newer.slot, &r.older.slot) {
            if new.subject == old.subject && new.attribute == old.attribute {
                if new.value != old.value {
                    return Some(Contradiction::SlotValue {
                        key: format!("{}/{}", new.subject, new.attribute),
                        newer: new.value.clone(),
                        older: old.value.clone(),
                    });
                }
                // Both state the same value: whatever else differs, they agree on the point.
                return None;
            }
        }
        if comparable_languages(r.new.lang, r.old.lang) {
            self.contradiction_in_words(r)
        } else {
            self.contradiction_across_languages(r)
        }
    }

    fn contradiction_in_words(&self, r: &Reading) -> Option<Contradiction> {
        let shared_topic = shared_terms(
            r.new.topic.iter().map(String::as_str),
            r.old.topic.iter().map(String::as_str),
        );
        if let Some(term) = denied_by_one(r.new, r.old).or_else(|| denied_by_one(r.old, r.new)) {
            return Some(Contradiction::Denial { term });
        }
        if !shared_topic.is_empty() {
            if let Some((newer, older)) = opposite_words(r.new, r.old) {
                return Some(Contradiction::Opposites { newer, older });
            }
            if let Some(c) = numbers_differ(r) {
                return Some(c);
            }
        }
        // A change cue is a strong claim about the older statement, so it needs more than one
        // word in common ("last sprint" and "last month" say nothing about each other), or a
        // close embedding when the words differ.
        let overlap = topic_overlap(&r.new.topic, &r.old.topic).unwrap_or(0.0);
        let close = r
            .similarity
            .is_some_and(|s| s >= self.config.cross_language_similarity);
        if overlap >= self.config.min_change_overlap || close {
            return self.announced_change(r);
        }
        None
    }

    /// The newer announces a change and says something the older does not: a restatement that
    /// only adds "actually" or "from now on" changes nothing.
    fn announced_change(&self, r: &Reading) -> Option<Contradiction> {
        let cue = r.new.change_cue(self.config.min_change_weight)?;
        let brings_something_new = r
            .new
            .topic
            .iter()
            .any(|t| !r.old.topic.iter().any(|o| same_term(t, o)));
        brings_something_new.then(|| Contradiction::Change {
            cue: cue.to_string(),
        })
    }

    /// Across languages only polarity, numbers and change cues can be compared, and only when the
    /// embeddings say the two are about the same thing.
    fn contradiction_across_languages(&self, r: &Reading) -> Option<Contradiction> {
        let close = r
            .similarity
            .is_some_and(|s| s >= self.config.cross_language_similarity);
        if !close {
            return None;
        }
        if r.new.is_negative() != r.old.is_negative() {
            let denier = if r.new.is_negative() { &r.new } else { &r.old };
            let term = denier
                .denied_topic()
                .into_iter()
                .next()
                .unwrap_or("the point")
                .to_string();
            return Some(Contradiction::Denial { term });
        }
        if let Some(c) = numbers_differ(r) {
            return Some(c);
        }
        r.new
            .change_cue(self.config.min_change_weight)
            .map(|cue| Contradiction::Change {
                cue: cue.to_string(),
            })
    }

    /// `Ok(reason)` when the two are rewordings of one fact, else `Err(why not)`.
    fn duplicate(&self, r: &Reading) -> Result<String, String> {
        if r.new.numbers != r.old.numbers {
            return Err("related, but they state different numbers".into());
        }
        // Agreeing on a slot's value settles polarity: in "我现在不喝之前那个了，改成拿铁" the
        // negation is about the old coffee, not the latte both state.
        let same_value = r.same_slot && r.newer.slot == r.older.slot;
        if !same_value && r.new.is_negative() != r.old.is_negative() {
            return Err("related, but one denies something the other does not".into());
        }
        let similarity = r.similarity.unwrap_or(0.0);
        let evidence = match (same_value, r.similarity) {
            (true, None) => "the same slot value".to_string(),
            (true, Some(s)) => format!("the same slot value, similarity {s:.2}"),
            (false, _) => format!("similarity {similarity:.2}"),
        };
        if !comparable_languages(r.new.lang, r.old.lang) {
            return if similarity >= self.config.cross_language_similarity || same_value {
                Ok(format!(
                    "the same statement in {} and {} ({evidence})",
                    r.new.lang.as_str(),
                    r.old.lang.as_str()
                ))
            } else {
                Err("different languages and not close enough to be one statement".into())
            };
        }
        let overlap = topic_overlap(&r.new.topic, &r.old.topic).unwrap_or(0.0);
        let min_overlap = if same_value {
            self.config.min_duplicate_overlap_same_value
        } else {
            self.config.min_duplicate_overlap
        };
        if overlap < min_overlap {
            return Err(format!(
                "related, but about different things (topic overlap {overlap:.2})"
            ));
        }
        if similarity >= self.config.duplicate_similarity || same_value {
            Ok(format!(
                "a rewording of the same fact ({evidence}, topic overlap {overlap:.2})"
            ))
        } else {
            Err(format!(
                "shared topic but not close enough to be one statement (similarity {similarity:.2})"
            ))
        }
    }

    /// `(fact, inference)` when one is an agent's inference and the other comes from a source
    /// that outranks it.
    fn fact_and_inference<'a>(&self, r: &Reading<'a>) -> Option<(&'a Memory, &'a Memory)> {
        let is_inference = |m: &Memory| m.provenance.source.is_inference();
        let is_fact = |m: &Memory| self.config.fact_sources.contains(&m.provenance.source);
        if is_inference(r.newer) && is_fact(r.older) {
            Some((r.older, r.newer))
        } else if is_inference(r.older) && is_fact(r.newer) {
            Some((r.newer, r.older))
        } else {
            None
        }
    }
}

impl Judge for RulesJudge {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn judge(&self, pairs: &[Pair]) -> Vec<Judgement> {
        // A memory changed in this cycle meets many neighbours; read its text once.
        let mut read: HashMap<MemoryId, Arc<Statement>> = HashMap::new();
        pairs
            .iter()
            .map(|p| {
                for m in [&p.a, &p.b] {
                    read.entry(m.id).or_insert_with(|| reading(&m.content));
                }
                self.judge_read(p, &read[&p.a.id], &read[&p.b.id])
            })
            .collect()
    }
}

/// Readings kept at most, in two generations of half this each.
const MAX_KEPT_READINGS: usize = 65_536;

/// Readings by text, in two generations: a reading used again moves to the current one, and when
/// the current one fills, the older is dropped. So the readings a bank's cycles keep meeting (the
/// recent claims of busy slots, the neighbours of what changes) stay, where clearing everything
/// at the cap threw them away with the rest.
#[derive(Default)]
struct Readings {
    current: HashMap<Arc<str>, Arc<Statement>>,
    previous: HashMap<Arc<str>, Arc<Statement>>,
}

impl Readings {
    fn get(&mut self, content: &str) -> Option<Arc<Statement>> {
        if let Some(kept) = self.current.get(content) {
            return Some(kept.clone());
        }
        let (text, kept) = self.previous.remove_entry(content)?;
        self.insert(text, kept.clone());
        Some(kept)
    }

    fn insert(&mut self, content: Arc<str>, read: Arc<Statement>) {
        if self.current.len() >= MAX_KEPT_READINGS / 2 {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(content, read);
    }
}

/// The reading of `content`, kept across calls: a reading depends on the text alone, and each
/// cycle judges its new memories against unchanged neighbours that earlier cycles already read.
fn reading(content: &str) -> Arc<Statement> {
    static READINGS: OnceLock<Mutex<Readings>> = OnceLock::new();
    let readings = READINGS.get_or_init(Mutex::default);
    let kept = readings
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(content);
    if let Some(kept) = kept {
        return kept;
    }
    let read = Arc::new(Statement::read(content));
    readings
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(Arc::from(content), read.clone());
    read
}

/// A topic word `denier` denies and `other` affirms (and does not deny itself).
fn denied_by_one(denier: &Statement, other: &Statement) -> Option<String> {
    let affirmed = other.affirmed_topic();
    let denied_by_other = other.denied_topic();
    denier
        .denied_topic()
        .into_iter()
        .find(|t| {
            affirmed.iter().any(|a| same_term(t, a))
                && !denied_by_other.iter().any(|d| same_term(t, d))
        })
        .map(str::to_string)
}

fn numbers_differ(r: &Reading) -> Option<Contradiction> {
    if r.new.numbers.is_empty() || r.old.numbers.is_empty() || r.new.numbers == r.old.numbers {
        return None;
    }
    let join =
        |s: &std::collections::BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
    Some(Contradiction::Numbers {
        newer: join(&r.new.numbers),
        older: join(&r.old.numbers),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{memory, stated, MemoryExt};
    use std::sync::Arc;

    /// The verdict on `older` (day 1) and `newer` (day 2) at `similarity`.
    fn verdict(older: Memory, newer: Memory, similarity: Option<f32>) -> Judgement {
        let older = older.at(1, 1);
        let newer = newer.at(2, 2);
        RulesJudge::default().judge_pair(&Pair::new(Arc::new(older), Arc::new(newer), similarity))
    }

    fn update(newer: u128, older: u128) -> Relation {
        Relation::Update {
            newer: MemoryId(newer),
            older: MemoryId(older),
        }
    }

    #[test]
    fn a_changed_slot_value_is_an_update_towards_the_newer() {
        let j = verdict(
            stated(1, "Please reach me by SMS for anything urgent."),
            stated(2, "Switch my notifications to Slack please."),
            None,
        );
        assert_eq!(j.relation, update(2, 1), "{}", j.reason);
        assert!(j.reason.contains("slack"), "{}", j.reason);

        // The lower id can be the newer one: time decides, not ids.
        let j = verdict(
            stated(2, "我平时喝咖啡都点馥芮白。"),
            stated(1, "我现在不喝之前那个了，改成拿铁。"),
            Some(0.7),
        );
        assert_eq!(j.relation, update(1, 2), "{}", j.reason);
        assert_eq!(j.judge, "rules");
    }

    #[test]
    fn a_change_cue_on_the_same_topic_is_an_update_without_slots() {
        let j = verdict(
            memory(1, "Weekly reports go out as a spreadsheet."),
            memory(2, "Going forward, weekly reports should be a slide deck."),
            Some(0.86),
        );
        assert_eq!(j.relation, update(2, 1), "{}", j.reason);
    }

    #[test]
    fn a_restatement_with_a_change_word_is_still_a_duplicate() {
        let j = verdict(
            memory(1, "I'm allergic to peanuts."),
            memory(2, "Actually, remember that I'm allergic to peanuts."),
            Some(0.9),
        );
        assert_eq!(j.relation, Relation::Duplicate, "{}", j.reason);
    }

    #[test]
    fn a_hedged_inference_denied_by_the_user_is_refuted_whatever_the_order() {
        let inference = stated(1, "The user seems to prefer working late at night.")
            .with_source(SourceKind::Agent);
        let fact = stated(
            2,
            "I do my focused work in the early morning, never at night.",
        );
        let expected = Relation::InferenceRefuted {
            fact: MemoryId(2),
            inference: MemoryId(1),
        };
        let j = verdict(inference.clone(), fact.clone(), Some(0.82));
        assert_eq!(j.relation, expected, "{}", j.reason);
        assert!(j.reason.contains("seems"), "{}", j.reason);
        // The user said it first; the agent guessed wrong later.
        let j = verdict(fact, inference, Some(0.82));
        assert_eq!(j.relation, expected, "{}", j.reason);
    }

    #[test]
    fn chinese_inferences_are_refuted_by_denials_too() {
        let j = verdict(
            stated(1, "用户的主力系统大概是 Windows。").with_source(SourceKind::Agent),
            stated(2, "我的笔记本装的是 Ubuntu，好几年没用 Windows 了。"),
            Some(0.8),
        );
        assert_eq!(
            j.relation,
            Relation::InferenceRefuted {
                fact: MemoryId(2),
                inference: MemoryId(1)
            },
            "{}",
            j.reason
        );
        let j = verdict(
            memory(1, "用户应该是夜猫子，喜欢深夜工作。").with_source(SourceKind::Reflection),
            memory(2, "我习惯早上工作，晚上从不工作。"),
            Some(0.8),
        );
        assert!(
            matches!(j.relation, Relation::InferenceRefuted { .. }),
            "{}",
            j.reason
        );
    }

    #[test]
    fn a_users_later_change_supersedes_an_inference_that_held_until_then() {
        let inference =
            stated(1, "The user probably likes flat whites.").with_source(SourceKind::Agent);
        let change = stated(2, "These days I've switched to a latte instead.");
        let j = verdict(inference, change, Some(0.8));
        assert_eq!(j.relation, update(2, 1), "{}", j.reason);
        // A correction says the inference was never right.
        let j = verdict(
            stated(1, "The user is probably vegetarian.").with_source(SourceKind::Agent),
            stated(2, "Actually, I'm not vegetarian."),
            Some(0.85),
        );
        assert!(
            matches!(j.relation, Relation::InferenceRefuted { .. }),
            "{}",
            j.reason
        );
    }

    #[test]
    fn an_inference_the_user_agrees_with_is_not_refuted() {
        let j = verdict(
            stated(1, "The user is probably vegetarian.").with_source(SourceKind::Agent),
            stated(2, "I'm vegetarian."),
            Some(0.88),
        );
        assert!(!j.relation.is_conflict(), "{:?}: {}", j.relation, j.reason);
    }

    #[test]
    fn different_tools_disagreeing_is_a_source_conflict() {
        let j = verdict(
            stated(
                1,
                "Inventory service reports 40 units of part Tyrell in stock.",
            )
            .with_tool("inventory"),
            stated(2, "Warehouse scanner shows part Tyrell is out of stock.")
                .with_tool("warehouse-scanner"),
            Some(0.83),
        );
        assert_eq!(j.relation, Relation::SourceConflict, "{}", j.reason);
        assert!(j.reason.contains("inventory"), "{}", j.reason);
    }

    #[test]
    fn the_same_tool_reporting_again_is_an_update() {
        let j = verdict(
            memory(
                1,
                "Inventory service reports 40 units of part Tyrell in stock.",
            )
            .with_tool("inventory"),
            memory(
                2,
                "Inventory service reports 12 units of part Tyrell in stock.",
            )
            .with_tool("inventory"),
            Some(0.97),
        );
        assert_eq!(j.relation, update(2, 1), "{}", j.reason);
    }

    #[test]
    fn a_bare_denial_between_equals_is_undecidable() {
        let j = verdict(
            memory(1, "The staging cluster runs on spot instances."),
            memory(2, "The staging cluster does not run on spot instances."),
            Some(0.93),
        );
        assert_eq!(j.relation, Relation::Undecidable, "{}", j.reason);
    }

    #[test]
    fn rewordings_are_duplicates_in_both_languages() {
        let english = [
            "I'm allergic to peanuts.",
            "Note that I have a peanut allergy.",
            "Just a reminder, peanuts give me an allergic reaction.",
            "Please remember: no peanuts, I'm allergic.",
            "I can't eat peanuts because of my allergy.",
        ];
        let chinese = [
            "我对花生过敏。",
            "提醒一下，我吃花生会过敏。",
            "记一下，我有花生过敏。",
            "请记住：我不能吃花生，会过敏。",
            "因为过敏，我不能吃花生。",
        ];
        for set in [english, chinese] {
            for (i, a) in set.iter().enumerate() {
                for b in &set[i + 1..] {
                    let j = verdict(stated(1, a), stated(2, b), Some(0.84));
                    assert_eq!(j.relation, Relation::Duplicate, "{a} / {b}: {}", j.reason);
                }
            }
        }
        let j = verdict(
            stated(1, "I'm allergic to peanuts."),
            stated(2, "我对花生过敏。"),
            Some(0.9),
        );
        assert_eq!(j.relation, Relation::Duplicate, "{}", j.reason);
    }

    #[test]
    fn templated_notes_about_different_things_are_not_rewordings() {
        let j = verdict(
            memory(
                1,
                "We discussed gym schedules while working on the product launch.",
            ),
            memory(
                2,
                "We discussed a broken printer while working on the product launch.",
            ),
            Some(0.86),
        );
        assert_eq!(j.relation, Relation::Unrelated, "{}", j.reason);
        let j = verdict(
            memory(1, "用户聊入职培训时顺便提到了发票编号。"),
            memory(2, "用户聊入职培训时顺便提到了面试。"),
            Some(0.86),
        );
        assert_eq!(j.relation, Relation::Unrelated, "{}", j.reason);
    }

    #[test]
    fn a_change_elsewhere_does_not_update_an_unrelated_note() {
        let j = verdict(
            memory(1, "Aisha prefers two-week sprints with a demo on Fridays."),
            memory(2, "We migrated the backend to Flask last sprint."),
            Some(0.5),
        );
        assert_eq!(j.relation, Relation::Unrelated, "{}", j.reason);
    }

    #[test]
    fn a_denial_is_not_a_rewording() {
        let j = verdict(
            memory(1, "I'm allergic to peanuts."),
            memory(2, "I'm not allergic to peanuts."),
            Some(0.95),
        );
        assert!(j.relation.is_conflict(), "{:?}: {}", j.relation, j.reason);
    }

    #[test]
    fn an_event_does_not_overturn_a_preference() {
        let j = verdict(
            stated(1, "I always order a flat white."),
            stated(2, "Ordered an oat latte for the user this morning.")
                .with_kind(hindsight_core::Kind::Episodic),
            Some(0.86),
        );
        assert_eq!(j.relation, Relation::Unrelated, "{}", j.reason);
    }

    #[test]
    fn similar_sentences_about_different_things_are_unrelated() {
        let j = verdict(
            memory(1, "I'm allergic to peanuts."),
            memory(2, "I'm allergic to shellfish."),
            Some(0.88),
        );
        assert_eq!(j.relation, Relation::Unrelated, "{}", j.reason);
        let j = verdict(
            stated(1, "I live in Berlin."),
            stated(2, "Project Vega's deadline is May 3."),
            Some(0.2),
        );
        assert_eq!(j.relation, Relation::Unrelated, "{}", j.reason);
    }
}
