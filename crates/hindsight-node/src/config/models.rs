//! `[review]`'s judge and `[reflect]`'s reflector: which kind runs, and the model behind it.

use hindsight_llm::{ChatConfig, JudgeConfig};
use serde::{Deserialize, Serialize};

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
    /// Review cycles also send newly quarantined memories, with the screen's reason, to the model,
    /// which confirms or releases each (out of the same budgets).
    pub check_quarantine: bool,
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
            check_quarantine: true,
        }
    }
}

/// Which reflector turns traces into memories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReflectorKind {
    #[default]
    Rules,
    Llm,
}
