//! How a recall's intent, the caller's role and the case's context change the ranking. Pure: the
//! recall path asks for arm weights and a factor per candidate, and shows the reasons in the
//! explanation.

use std::collections::BTreeMap;

use crate::memory::{Kind, Memory, Subtype};
use crate::recall::RecallIntent;

/// The metadata key a memory names its intended reader's role with.
pub const ROLE_KEY: &str = "agent_role";
/// The metadata key a procedure or lesson names the kind of task it is about with.
pub const TASK_TYPE_KEY: &str = "task_type";

/// How one memory kind counts for an intent.
const FAVOURED: f32 = 1.6;
const NEUTRAL: f32 = 1.0;
const DISFAVOURED: f32 = 0.6;
/// A memory written for the caller's role, or for another role.
const SAME_ROLE: f32 = 1.2;
const OTHER_ROLE: f32 = 0.85;
/// A memory whose metadata agrees with a context key.
const CONTEXT_MATCH: f32 = 1.3;

/// The arm weights and kind preferences of one intent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntentProfile {
    pub intent: RecallIntent,
}

/// What the kind of a memory is, as intents see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Fact,
    Preference,
    KnowHow,
    Episode,
    Working,
}

impl Class {
    fn of(memory: &Memory) -> Class {
        match (memory.kind, memory.subtype) {
            (Kind::Working, _) => Class::Working,
            (Kind::Episodic, _) => Class::Episode,
            (_, Some(Subtype::Preference)) => Class::Preference,
            (_, Some(Subtype::Procedure | Subtype::Lesson | Subtype::Rule)) => Class::KnowHow,
            _ => Class::Fact,
        }
    }
}

impl IntentProfile {
    pub fn new(intent: RecallIntent) -> Self {
        IntentProfile { intent }
    }

    /// How much an arm's ranking counts (1 for every arm without an intent). The temporal arm's
    /// own weight for an explicit time expression comes on top.
    pub fn arm_weight(&self, arm: &str) -> f32 {
        match (self.intent, arm) {
            (RecallIntent::Facts | RecallIntent::Preferences, "keyword") => 1.2,
            (RecallIntent::PastCases, "temporal") => 1.5,
            (RecallIntent::PastCases, "entity") => 1.2,
            _ => 1.0,
        }
    }

    /// Whether the recall runs the task arm: procedures, lessons and rules matched by task type
    /// and tags rather than by embedding similarity alone.
    pub fn wants_task_arm(&self) -> bool {
        self.intent == RecallIntent::HowTo
    }

    /// The factor `memory`'s kind gets under this intent, with the reason when it is not 1.
    pub fn kind_factor(&self, memory: &Memory) -> (f32, Option<String>) {
        let class = Class::of(memory);
        let factor = match (self.intent, class) {
            (RecallIntent::Any, _) => NEUTRAL,
            (_, Class::Working) => NEUTRAL,
            (RecallIntent::Facts, Class::Fact | Class::Preference) => FAVOURED,
            (RecallIntent::Facts, _) => DISFAVOURED,
            (RecallIntent::Preferences, Class::Preference) => FAVOURED,
            (RecallIntent::Preferences, Class::Fact) => NEUTRAL,
            (RecallIntent::Preferences, _) => DISFAVOURED,
            (RecallIntent::HowTo, Class::KnowHow) => FAVOURED,
            (RecallIntent::HowTo, Class::Episode) => NEUTRAL,
            (RecallIntent::HowTo, _) => DISFAVOURED,
            (RecallIntent::PastCases, Class::Episode) => FAVOURED,
            (RecallIntent::PastCases, _) => DISFAVOURED,
        };
        if factor == NEUTRAL {
            return (factor, None);
        }
        let kind = memory.subtype.map_or(memory.kind.as_str(), |s| s.as_str());
        (
            factor,
            Some(format!("intent {}: {kind} ×{factor:.2}", self.intent)),
        )
    }
}

/// The factor the caller's role gives `memory`, with the reason when it is not 1.
pub fn role_factor(role: Option<&str>, memory: &Memory) -> (f32, Option<String>) {
    let (Some(role), Some(theirs)) = (role, memory.metadata.get(ROLE_KEY)) else {
        return (NEUTRAL, None);
    };
    if theirs.trim().eq_ignore_ascii_case(role) {
        (
            SAME_ROLE,
            Some(format!("role {role}: written for it ×{SAME_ROLE:.2}")),
        )
    } else {
        (
            OTHER_ROLE,
            Some(format!(
                "role {role}: written for {theirs} ×{OTHER_ROLE:.2}"
            )),
        )
    }
}

/// How the case's context bears on `memory`: `None` when a key the memory also carries has
/// another value (it is about another user, order or task, and is left out); otherwise the
/// factor for the keys that agree, and their reasons.
pub fn context_factor(
    context: &BTreeMap<String, String>,
    memory: &Memory,
) -> Option<(f32, Vec<String>)> {
    let mut factor = NEUTRAL;
    let mut reasons = vec![];
    for (key, wanted) in context {
        let Some(value) = memory.metadata.get(key) else {
            continue;
        };
        if !value.trim().eq_ignore_ascii_case(wanted.trim()) {
            return None;
        }
        factor *= CONTEXT_MATCH;
        reasons.push(format!("context {key}={wanted} ×{CONTEXT_MATCH:.2}"));
    }
    Some((factor, reasons))
}

/// How well a procedure, lesson or rule matches a task by its tags and task type (not its
/// wording): the share of the query's terms among them, plus a whole point when the context names
/// the same task type. `query_terms` and `tag_terms` are analysed terms (stemmed, lower case).
pub fn task_match(
    query_terms: &[String],
    tag_terms: &[String],
    context_task_type: Option<&str>,
    memory: &Memory,
) -> f32 {
    let mut score = 0.0;
    if !query_terms.is_empty() {
        let shared = query_terms.iter().filter(|t| tag_terms.contains(t)).count();
        score += shared as f32 / query_terms.len() as f32;
    }
    if let (Some(wanted), Some(theirs)) = (context_task_type, memory.metadata.get(TASK_TYPE_KEY)) {
        if wanted.trim().eq_ignore_ascii_case(theirs.trim()) {
            score += 1.0;
        }
    }
    score
}

/// Whether `memory` is know-how the task arm looks at.
pub fn is_know_how(memory: &Memory) -> bool {
    Class::of(memory) == Class::KnowHow
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Provenance, SourceKind};
    use crate::time::Timestamp;

    fn memory(kind: Kind, subtype: Option<Subtype>) -> Memory {
        let mut m = Memory::new(
            crate::id::MemoryId(1),
            "a/b".parse().unwrap(),
            "x",
            Provenance::from_source(SourceKind::User),
            Timestamp::parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
        );
        m.kind = kind;
        m.subtype = subtype;
        m
    }

    #[test]
    fn intents_favour_their_kinds_and_any_changes_nothing() {
        let lesson = memory(Kind::Semantic, Some(Subtype::Lesson));
        let fact = memory(Kind::Semantic, Some(Subtype::Fact));
        let episode = memory(Kind::Episodic, None);
        let how_to = IntentProfile::new(RecallIntent::HowTo);
        assert!(how_to.kind_factor(&lesson).0 > how_to.kind_factor(&fact).0);
        let facts = IntentProfile::new(RecallIntent::Facts);
        assert!(facts.kind_factor(&fact).0 > facts.kind_factor(&lesson).0);
        let past = IntentProfile::new(RecallIntent::PastCases);
        assert!(past.kind_factor(&episode).0 > past.kind_factor(&fact).0);
        let any = IntentProfile::new(RecallIntent::Any);
        for m in [&lesson, &fact, &episode] {
            assert_eq!(any.kind_factor(m), (1.0, None));
        }
        assert!(how_to.kind_factor(&lesson).1.unwrap().contains("lesson"));
    }

    #[test]
    fn context_keys_boost_matches_and_leave_out_other_cases() {
        let mut m = memory(Kind::Semantic, Some(Subtype::Fact));
        m.metadata.insert("user_id".into(), "42".into());
        let ctx = |v: &str| BTreeMap::from([("user_id".to_string(), v.to_string())]);
        let (factor, reasons) = context_factor(&ctx("42"), &m).unwrap();
        assert!(factor > 1.0 && reasons[0].contains("user_id=42"));
        assert!(context_factor(&ctx("7"), &m).is_none());
        let other = BTreeMap::from([("order_id".to_string(), "9".to_string())]);
        assert_eq!(context_factor(&other, &m), Some((1.0, vec![])));
    }

    #[test]
    fn roles_and_task_types_count() {
        let mut m = memory(Kind::Semantic, Some(Subtype::Procedure));
        m.metadata.insert(ROLE_KEY.into(), "support agent".into());
        m.metadata.insert(TASK_TYPE_KEY.into(), "refund".into());
        assert!(role_factor(Some("Support Agent"), &m).0 > 1.0);
        assert!(role_factor(Some("coding assistant"), &m).0 < 1.0);
        assert_eq!(role_factor(None, &m), (1.0, None));
        let terms = |s: &[&str]| s.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let score = task_match(&terms(&["refund", "order"]), &terms(&["refund"]), None, &m);
        assert!((score - 0.5).abs() < 1e-6);
        assert!(task_match(&[], &[], Some("refund"), &m) >= 1.0);
    }
}
