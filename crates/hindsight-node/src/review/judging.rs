//! Which judge a review cycle uses, and the model-backed one under its token budgets.
//!
//! The rules judge is free and decides every pair. The LLM judge sees the pairs in batches only
//! as far as the bank's per-cycle budget and the node's per-interval budget allow (reserved from
//! the node's before the first call, so cycles of several banks at once share it); each batch is
//! charged its prompt estimate plus the most the model may answer, before it is sent, so recorded
//! usage never passes a budget. What does not fit, and what the model could not answer, waits in
//! the bank's review state for the next cycle.

use std::sync::Arc;
use std::time::Duration;

use hindsight_core::review::{QuarantineCheck, QuarantineRuling};
use hindsight_core::{Memory, MemoryId, Status};
use hindsight_llm::{
    check_quarantined, ChatClient, JudgeItem, PairJudge, QuarantineDecision, QuarantineItem, Side,
    Statement, MAX_BATCH_ITEMS,
};
use hindsight_review::{plan_batches, Judge, Judgement, Pair, Relation, RulesJudge, TokenBudget};

use crate::error::NodeError;

pub use crate::config::{JudgeKind, LlmJudgeSection};
use crate::review::token_window::TokenWindow;

/// The node's model-backed judge with its shared budget window.
pub struct LlmJudge {
    judge: PairJudge,
    kind: JudgeKind,
    settings: LlmJudgeSection,
    /// The node's tokens per interval, reserved by each cycle before it calls the model.
    window: TokenWindow,
}

/// What judging one cycle's pairs produced.
pub struct Judged {
    pub judgements: Vec<Judgement>,
    /// Pairs to judge next cycle.
    pub deferred: Vec<(MemoryId, MemoryId)>,
    pub tokens_used: u64,
    pub token_budget: u64,
    pub judge: String,
}

impl LlmJudge {
    pub fn new(kind: JudgeKind, settings: &LlmJudgeSection) -> Result<Self, NodeError> {
        let client = ChatClient::new(settings.chat.clone())
            .map_err(|e| NodeError::Config(format!("review.llm.chat: {e}")))?;
        let judge = PairJudge::new(client, settings.judge.clone())
            .map_err(|e| NodeError::Config(format!("review.llm.judge: {e}")))?;
        Ok(LlmJudge {
            judge,
            kind,
            settings: settings.clone(),
            window: TokenWindow::new(
                settings.node_budget_tokens,
                Duration::from_secs(settings.node_budget_interval_secs),
            ),
        })
    }

    fn name(&self) -> String {
        match self.kind {
            JudgeKind::Consensus => format!("consensus:{}", self.judge.client().model()),
            _ => format!("llm:{}", self.judge.client().model()),
        }
    }

    /// Judges `pairs` as far as the budgets allow. Blocking: call it off the async runtime.
    pub fn judge_within_budget(&self, pairs: Vec<Pair>) -> Judged {
        let bank_limit = self.settings.bank_budget_tokens;
        let reservation = self.window.reserve(bank_limit);
        let mut budget = TokenBudget::new(bank_limit as usize, reservation.granted() as usize);
        // A consensus judgement sends each prompt once per sample and gets as many answers.
        let samples = match self.kind {
            JudgeKind::Consensus => self.settings.judge.consensus_samples.max(1) as usize,
            _ => 1,
        };
        let reply_allowance = self.settings.chat.max_output_tokens as usize * samples;
        let prompt_samples = samples;
        let plan = plan_batches(pairs, self.settings.batch_size, &mut budget, |batch| {
            let items = items_of(batch);
            self.judge.estimate_prompt_tokens(&items) as usize * prompt_samples + reply_allowance
        });
        let mut deferred: Vec<(MemoryId, MemoryId)> =
            plan.deferred.iter().map(|p| (p.a.id, p.b.id)).collect();
        let mut judgements = vec![];
        let mut used = 0u64;
        let name = self.name();
        // Each batch may spend what the plan reserved for it plus whatever earlier batches left
        // unspent, but never what later batches reserved: re-asks after bad answers come out of
        // the same budget and can only defer pairs, never overdraw.
        let limit = budget.limit() as u64;
        let reserved: Vec<u64> = plan.batch_costs.iter().map(|c| *c as u64).collect();
        for (i, batch) in plan.batches.iter().enumerate() {
            let items = items_of(batch);
            let later: u64 = reserved[i + 1..].iter().sum();
            let allowance = limit.saturating_sub(used).saturating_sub(later);
            let outcome = match self.kind {
                JudgeKind::Consensus => self.judge.consensus_within(&items, allowance),
                _ => self.judge.judge_within(&items, allowance),
            };
            match outcome {
                Ok(outcome) => {
                    used += outcome.usage.total();
                    for verdict in &outcome.verdicts {
                        let Some(pair) = pair_of(batch, &verdict.id) else {
                            continue;
                        };
                        let (relation, overruled) =
                            checked_relation(pair, verdict.relation, verdict.newer_or_fact);
                        let mut reason = readable_reason(&verdict.reason, &relation);
                        if let Some(why) = overruled {
                            tracing::warn!(pair = %pair.key(), %why, "model verdict overruled");
                            reason = format!("{why}; left for a person (model said: {reason})");
                        }
                        judgements.push(Judgement {
                            pair: pair.key(),
                            relation,
                            reason,
                            judge: name.clone(),
                        });
                    }
                    for late in &outcome.deferred {
                        if let Some(pair) = pair_of(batch, &late.id) {
                            tracing::warn!(pair = %pair.key(), reason = %late.reason, "pair deferred by the judge");
                            deferred.push((pair.a.id, pair.b.id));
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "judge batch refused; its pairs wait for the next cycle");
                    deferred.extend(batch.iter().map(|p| (p.a.id, p.b.id)));
                }
            }
        }
        reservation.settle(used);
        Judged {
            judgements,
            deferred,
            tokens_used: used,
            token_budget: bank_limit,
            judge: name,
        }
    }
}

/// What the model said about a bank's quarantined memories.
#[derive(Debug, Default)]
pub struct QuarantineChecks {
    pub checks: Vec<QuarantineCheck>,
    /// Memories without a valid answer this time, and why; they are asked about again.
    pub deferred: Vec<(MemoryId, String)>,
    pub tokens_used: u64,
}

impl LlmJudge {
    /// Whether review cycles send quarantined memories to the model.
    pub fn checks_quarantine(&self) -> bool {
        self.settings.check_quarantine
    }

    /// Asks the model about quarantined `memories`, with what is left of the bank's cycle budget
    /// after `spent` and of the node's interval budget; what does not fit is deferred. One sample
    /// per memory whatever the judge kind. Blocking: call it off the async runtime.
    pub fn check_quarantined(&self, memories: &[Arc<Memory>], spent: u64) -> QuarantineChecks {
        let judge = format!("llm:{}", self.judge.client().model());
        let reservation = self
            .window
            .reserve(self.settings.bank_budget_tokens.saturating_sub(spent));
        let mut allowance = reservation.granted();
        let mut out = QuarantineChecks::default();
        let mut endpoint_down: Option<String> = None;
        for chunk in memories.chunks(self.settings.batch_size.clamp(1, MAX_BATCH_ITEMS)) {
            if let Some(reason) = &endpoint_down {
                out.deferred
                    .extend(chunk.iter().map(|m| (m.id, reason.clone())));
                continue;
            }
            let items: Vec<QuarantineItem> = chunk
                .iter()
                .enumerate()
                .map(|(i, m)| QuarantineItem {
                    id: format!("q{i}"),
                    content: m.content.clone(),
                    source: match &m.provenance.tool {
                        Some(tool) => format!("{}:{tool}", m.provenance.source),
                        None => m.provenance.source.to_string(),
                    },
                    screening: match &m.status {
                        Status::Quarantined { reason } => reason.clone(),
                        other => format!("(now {other})"),
                    },
                })
                .collect();
            let memory_of = |id: &str| {
                let index: usize = id.strip_prefix('q')?.parse().ok()?;
                chunk.get(index).map(|m| m.id)
            };
            match check_quarantined(self.judge.client(), &items, allowance) {
                Ok(outcome) => {
                    let used = outcome.usage.total();
                    out.tokens_used += used;
                    allowance = allowance.saturating_sub(used);
                    for verdict in outcome.verdicts {
                        if let Some(id) = memory_of(&verdict.id) {
                            out.checks.push(QuarantineCheck {
                                id,
                                ruling: match verdict.decision {
                                    QuarantineDecision::Confirm => QuarantineRuling::Confirm,
                                    QuarantineDecision::Release => QuarantineRuling::Release,
                                },
                                judge: judge.clone(),
                                reason: verdict.reason,
                            });
                        }
                    }
                    if outcome.endpoint_failed {
                        endpoint_down = outcome.deferred.first().map(|d| d.reason.clone());
                    }
                    for late in outcome.deferred {
                        if let Some(id) = memory_of(&late.id) {
                            out.deferred.push((id, late.reason));
                        }
                    }
                }
                Err(e) => out
                    .deferred
                    .extend(chunk.iter().map(|m| (m.id, e.to_string()))),
            }
        }
        reservation.settle(out.tokens_used);
        out
    }
}

/// The rules judge over every pair: no tokens, nothing deferred.
pub fn judge_with_rules(judge: &RulesJudge, pairs: &[Pair]) -> Judged {
    // Pairs are judged independently, so the work splits across cores; each part stays in order.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(pairs.len() / PAIRS_PER_THREAD)
        .max(1);
    let judgements = if threads == 1 {
        judge.judge(pairs)
    } else {
        std::thread::scope(|scope| {
            let workers: Vec<_> = pairs
                .chunks(pairs.len().div_ceil(threads))
                .map(|part| scope.spawn(move || judge.judge(part)))
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("the rules judge panicked"))
                .collect()
        })
    };
    Judged {
        judgements,
        deferred: vec![],
        tokens_used: 0,
        token_budget: 0,
        judge: judge.name().to_string(),
    }
}

/// Fewer pairs than this are judged on the calling thread.
const PAIRS_PER_THREAD: usize = 256;

fn items_of(batch: &[Pair]) -> Vec<JudgeItem> {
    batch
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let statement = |m: &hindsight_core::Memory| {
                Statement::new(
                    m.content.clone(),
                    m.provenance.source.to_string(),
                    m.occurred_at.to_rfc3339(),
                    m.confidence,
                )
            };
            JudgeItem::new(format!("p{i}"), statement(&p.a), statement(&p.b))
        })
        .collect()
}

fn pair_of<'a>(batch: &'a [Pair], id: &str) -> Option<&'a Pair> {
    let index: usize = id.strip_prefix('p')?.parse().ok()?;
    batch.get(index)
}

/// The model's verdict as a relation, checked against what the records say for sure: only an
/// agent's inference can be refuted, and only by another source; an update cannot name the
/// older statement as the current one. A verdict that breaks either becomes `undecidable`, for
/// a person: a small model's mistake must not falsify what the user said. Returns the relation
/// and, when the verdict was overruled, why.
fn checked_relation(
    pair: &Pair,
    relation: hindsight_llm::Relation,
    side: Option<Side>,
) -> (Relation, Option<String>) {
    let (chosen, other) = match side {
        Some(Side::B) => (&pair.b, &pair.a),
        _ => (&pair.a, &pair.b),
    };
    let inferred = |m: &hindsight_core::Memory| {
        matches!(
            m.provenance.source,
            hindsight_core::SourceKind::Agent | hindsight_core::SourceKind::Reflection
        )
    };
    let overruled = match relation {
        hindsight_llm::Relation::InferenceRefuted if !inferred(other) || inferred(chosen) => {
            Some(format!(
                "the model called a statement from the {} an inference refuted by the {}",
                other.provenance.source, chosen.provenance.source
            ))
        }
        hindsight_llm::Relation::Update if chosen.occurred_at < other.occurred_at => {
            Some("the model named the older statement as the current one".to_string())
        }
        _ => None,
    };
    match overruled {
        Some(why) => (Relation::Undecidable, Some(why)),
        None => (relation_of(pair, relation, side), None),
    }
}

/// A reason a person can read: the model's, unless it said nothing in words.
fn readable_reason(reason: &str, relation: &Relation) -> String {
    if reason.chars().any(char::is_alphabetic) {
        reason.to_string()
    } else {
        format!("the model judged {relation:?} without giving a reason")
    }
}

fn relation_of(pair: &Pair, relation: hindsight_llm::Relation, side: Option<Side>) -> Relation {
    let (chosen, other) = match side {
        Some(Side::B) => (pair.b.id, pair.a.id),
        _ => (pair.a.id, pair.b.id),
    };
    match relation {
        hindsight_llm::Relation::Duplicate => Relation::Duplicate,
        hindsight_llm::Relation::Update => Relation::Update {
            newer: chosen,
            older: other,
        },
        hindsight_llm::Relation::InferenceRefuted => Relation::InferenceRefuted {
            fact: chosen,
            inference: other,
        },
        hindsight_llm::Relation::SourceConflict => Relation::SourceConflict,
        hindsight_llm::Relation::Undecidable => Relation::Undecidable,
        hindsight_llm::Relation::Unrelated => Relation::Unrelated,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hindsight_core::{Memory, MemoryId, Provenance, SourceKind, Timestamp};

    use super::*;

    fn stated(id: u128, source: SourceKind, at: i64) -> Arc<Memory> {
        Arc::new(Memory::new(
            MemoryId(id),
            "t/bank".parse().unwrap(),
            format!("statement {id}"),
            Provenance::from_source(source),
            Timestamp(at),
        ))
    }

    #[test]
    fn a_model_verdict_against_the_provenance_or_the_clock_goes_to_a_person() {
        let user = stated(1, SourceKind::User, 2_000);
        let agent = stated(2, SourceKind::Agent, 1_000);
        let pair = Pair::new(user.clone(), agent.clone(), Some(0.8));
        // The user's statement refutes the agent's guess: kept.
        let (relation, overruled) = checked_relation(
            &pair,
            hindsight_llm::Relation::InferenceRefuted,
            Some(Side::A),
        );
        assert_eq!(
            relation,
            Relation::InferenceRefuted {
                fact: MemoryId(1),
                inference: MemoryId(2)
            }
        );
        assert!(overruled.is_none());
        // The guess "refuting" the user: overruled.
        let (relation, overruled) = checked_relation(
            &pair,
            hindsight_llm::Relation::InferenceRefuted,
            Some(Side::B),
        );
        assert_eq!(relation, Relation::Undecidable);
        assert!(overruled.unwrap().contains("inference"));
        // An update that names the older statement as current: overruled.
        let (relation, _) = checked_relation(&pair, hindsight_llm::Relation::Update, Some(Side::B));
        assert_eq!(relation, Relation::Undecidable);
        assert!(readable_reason("4.0", &relation).contains("without giving a reason"));
        assert_eq!(readable_reason("newer value", &relation), "newer value");
    }
}
