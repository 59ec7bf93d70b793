//! The importance gate: before an agent's automatic write or a reflection's candidate is kept
//! long-term, it is scored on how likely it is to be used again (0.3), how much it bears on a
//! decision (0.3), how long it stays true (0.2) and how much it adds to what the bank already
//! holds (0.2). Rules only, in English and Chinese; deterministic, so every replica and every
//! rerun agrees.

pub use hindsight_core::write::ImportanceScores;
use hindsight_core::{Kind, Subtype};
use serde::{Deserialize, Serialize};

const W_REUSE: f32 = 0.3;
const W_IMPACT: f32 = 0.3;
const W_STABILITY: f32 = 0.2;
const W_UNIQUENESS: f32 = 0.2;

/// Words that say a statement holds in general, so it will come up again.
const GENERAL: &[&str] = &[
    "always",
    "usually",
    "every",
    "whenever",
    "prefer",
    "prefers",
    "likes",
    "hates",
    "never",
    "each time",
    "by default",
    "总是",
    "每次",
    "通常",
    "一直",
    "喜欢",
    "讨厌",
    "默认",
];
/// Words that say a statement should change what is done.
const DECISIVE: &[&str] = &[
    "must", "never", "don't", "do not", "should", "avoid", "require", "requires", "because",
    "instead", "failed", "fails", "fix", "fixed", "error", "need", "needs", "only", "allergic",
    "deadline", "budget", "必须", "不要", "避免", "需要", "因为", "失败", "修复", "错误", "只",
    "过敏", "截止",
];
/// Words that say a statement will soon stop being true.
const TRANSIENT: &[&str] = &[
    "today",
    "right now",
    "currently",
    "this morning",
    "this afternoon",
    "tonight",
    "at the moment",
    "for now",
    "temporarily",
    "just now",
    "今天",
    "现在",
    "暂时",
    "目前",
    "刚才",
    "今晚",
];
/// Whole statements that carry nothing to remember.
const SMALL_TALK: &[&str] = &[
    "ok",
    "okay",
    "thanks",
    "thank you",
    "hello",
    "hi",
    "bye",
    "sure",
    "got it",
    "noted",
    "yes",
    "no",
    "the user said thanks",
    "the user said hello",
    "the user greeted the agent",
    "好的",
    "谢谢",
    "你好",
    "再见",
    "收到",
];

/// Which writes the gate scores, and the score they need to be kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImportanceConfig {
    /// Score the writes of agents (source `agent`) and reflections (source `reflection`).
    pub enabled: bool,
    /// Below this total a candidate is not kept.
    pub threshold: f32,
    /// Also score what users state themselves (off: a user's own words are always kept).
    pub gate_user_writes: bool,
}

impl Default for ImportanceConfig {
    fn default() -> Self {
        ImportanceConfig {
            enabled: true,
            threshold: 0.4,
            gate_user_writes: false,
        }
    }
}

/// What the gate looks at besides the text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate<'a> {
    pub content: &'a str,
    pub kind: Kind,
    pub subtype: Option<Subtype>,
    /// Whether the write sets a time to live.
    pub expires: bool,
    /// Similarity to the bank's closest existing memory, when it has any.
    pub nearest: Option<f32>,
}

pub fn score(candidate: &Candidate<'_>) -> ImportanceScores {
    let text = candidate.content.trim().to_lowercase();
    let bare = text.trim_end_matches(['.', '!', '。', '！']);
    let small_talk = SMALL_TALK.contains(&bare) || word_count(&text) < 2;
    let reuse = if small_talk {
        0.05
    } else {
        let base: f32 = match (candidate.kind, candidate.subtype) {
            (Kind::Working, _) => 0.1,
            (Kind::Episodic, _) => 0.35,
            (
                _,
                Some(Subtype::Preference | Subtype::Procedure | Subtype::Lesson | Subtype::Rule),
            ) => 0.9,
            _ => 0.6,
        };
        (base + if mentions(&text, GENERAL) { 0.2 } else { 0.0 }).min(1.0)
    };
    let impact = if small_talk {
        0.05
    } else {
        let base: f32 = if mentions(&text, DECISIVE) { 0.8 } else { 0.3 };
        let figures = text.chars().any(|c| c.is_ascii_digit());
        (base + if figures { 0.2 } else { 0.0 }).min(1.0)
    };
    let stability = if candidate.kind == Kind::Working {
        0.1
    } else if candidate.expires {
        0.3
    } else if mentions(&text, TRANSIENT) {
        0.2
    } else {
        0.8
    };
    let uniqueness = 1.0 - candidate.nearest.unwrap_or(0.0).clamp(0.0, 1.0);
    let total =
        W_REUSE * reuse + W_IMPACT * impact + W_STABILITY * stability + W_UNIQUENESS * uniqueness;
    ImportanceScores {
        reuse,
        impact,
        stability,
        uniqueness,
        total,
    }
}

fn mentions(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| {
        if w.is_ascii() {
            text.split(|c: char| !c.is_alphanumeric() && c != '\'')
                .collect::<Vec<_>>()
                .windows(w.split(' ').count())
                .any(|window| window.join(" ") == *w)
        } else {
            text.contains(w)
        }
    })
}

fn word_count(text: &str) -> usize {
    if !text.is_ascii() {
        // Chinese has no spaces: count characters, two to a word.
        return text
            .chars()
            .filter(|c| c.is_alphanumeric())
            .count()
            .div_ceil(2);
    }
    text.split_whitespace().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn semantic(content: &str, subtype: Option<Subtype>) -> Candidate<'_> {
        Candidate {
            content,
            kind: Kind::Semantic,
            subtype,
            expires: false,
            nearest: Some(0.3),
        }
    }

    #[test]
    fn lasting_decisive_statements_outscore_small_talk_and_passing_state() {
        let lesson = score(&semantic(
            "The export tool fails on files over 2 GB; split them first.",
            Some(Subtype::Lesson),
        ));
        let thanks = score(&Candidate {
            kind: Kind::Episodic,
            ..semantic("The user said thanks.", None)
        });
        let passing = score(&Candidate {
            kind: Kind::Episodic,
            ..semantic("The user is currently looking at the dashboard.", None)
        });
        assert!(lesson.total > 0.75, "{lesson}");
        assert!(thanks.total < 0.35, "{thanks}");
        assert!(
            passing.total < lesson.total && passing.total < 0.5,
            "{passing}"
        );
        let zh = score(&semantic(
            "用户总是喜欢靠窗的座位。",
            Some(Subtype::Preference),
        ));
        assert!(zh.reuse >= 0.9 && zh.total > 0.6, "{zh}");
    }

    #[test]
    fn a_near_copy_of_what_is_known_adds_little() {
        let fresh = score(&semantic("Deploys need two approvals.", None));
        let copy = score(&Candidate {
            nearest: Some(0.95),
            ..semantic("Deploys need two approvals.", None)
        });
        assert!(copy.uniqueness < 0.1 && copy.total < fresh.total);
    }
}
