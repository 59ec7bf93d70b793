//! Which judge a review cycle uses, and the model-backed one under its token budgets.
//!
//! The rules judge is free and decides every pair. The LLM judge sees the pairs in batches only
//! as far as the bank's per-cycle budget and the node's per-interval budget allow; each batch is
//! charged its prompt estimate plus the most the model may answer, before it is sent, so recorded
//! usage never passes a budget. What does not fit, and what the model could not answer, waits in
//! the bank's review state for the next cycle.

use std::time::{Duration, Instant};

use hindsight_core::MemoryId;
use hindsight_llm::{ChatClient, ChatConfig, JudgeConfig, JudgeItem, PairJudge, Side, Statement};
use hindsight_review::{plan_batches, Judge, Judgement, Pair, Relation, RulesJudge, TokenBudget};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::NodeError;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeKind {
    /// Offline and deterministic (the default).
    #[default]
    Rules,
    /// An OpenAI-compatible chat model, one sample per pair.
    Llm,
    /// The same model sampled several times; the majority decides.
    Consensus,
}

/// The model-backed judge's connection and budgets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmJudgeSection {
    pub chat: ChatConfig,
    pub judge: JudgeConfig,
    /// Pairs per prompt (5–10).
    pub batch_size: usize,
    /// Tokens one bank's cycle may spend.
    pub bank_budget_tokens: u64,
    /// Tokens the whole node may spend per `node_budget_interval_secs`.
    pub node_budget_tokens: u64,
    pub node_budget_interval_secs: u64,
}

impl Default for LlmJudgeSection {
    fn default() -> Self {
        LlmJudgeSection {
            chat: ChatConfig::default(),
            judge: JudgeConfig::default(),
            batch_size: 8,
            bank_budget_tokens: 20_000,
            node_budget_tokens: 200_000,
            node_budget_interval_secs: 3600,
        }
    }
}

/// The node's model-backed judge with its shared budget window.
pub struct LlmJudge {
    judge: PairJudge,
    kind: JudgeKind,
    settings: LlmJudgeSection,
    /// Start of the node's budget interval and the tokens spent in it.
    window: Mutex<(Instant, u64)>,
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
            window: Mutex::new((Instant::now(), 0)),
        })
    }

    fn name(&self) -> String {
        match self.kind {
            JudgeKind::Consensus => format!("consensus:{}", self.judge.client().model()),
            _ => format!("llm:{}", self.judge.client().model()),
        }
    }

    /// Tokens the node may still spend in the current interval.
    fn node_remaining(&self) -> u64 {
        let mut window = self.window.lock();
        let interval = Duration::from_secs(self.settings.node_budget_interval_secs.max(1));
        if window.0.elapsed() >= interval {
            *window = (Instant::now(), 0);
        }
        self.settings.node_budget_tokens.saturating_sub(window.1)
    }

    fn charge(&self, tokens: u64) {
        self.window.lock().1 += tokens;
    }

    /// Judges `pairs` as far as the budgets allow. Blocking: call it off the async runtime.
    pub fn judge_within_budget(&self, pairs: Vec<Pair>) -> Judged {
        let bank_limit = self.settings.bank_budget_tokens;
        let mut budget = TokenBudget::new(bank_limit as usize, self.node_remaining() as usize);
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
        for batch in &plan.batches {
            let items = items_of(batch);
            let outcome = match self.kind {
                JudgeKind::Consensus => self.judge.consensus(&items),
                _ => self.judge.judge(&items),
            };
            match outcome {
                Ok(outcome) => {
                    used += outcome.usage.total();
                    for verdict in &outcome.verdicts {
                        let Some(pair) = pair_of(batch, &verdict.id) else {
                            continue;
                        };
                        judgements.push(Judgement {
                            pair: pair.key(),
                            relation: relation_of(pair, verdict.relation, verdict.newer_or_fact),
                            reason: verdict.reason.clone(),
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
        self.charge(used);
        Judged {
            judgements,
            deferred,
            tokens_used: used,
            token_budget: bank_limit,
            judge: name,
        }
    }
}

/// The rules judge over every pair: no tokens, nothing deferred.
pub fn judge_with_rules(judge: &RulesJudge, pairs: &[Pair]) -> Judged {
    Judged {
        judgements: judge.judge(pairs),
        deferred: vec![],
        tokens_used: 0,
        token_budget: 0,
        judge: judge.name().to_string(),
    }
}

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
