use serde::{Deserialize, Serialize};

/// Settings for [`PairJudge`](crate::PairJudge) beyond the chat connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JudgeConfig {
    /// Pairs whose verdicts are kept (least recently used go first); 0 turns the cache off.
    /// Default: 10 000.
    pub cache_capacity: usize,
    /// Samples per [`consensus`](crate::PairJudge::consensus) judgement. Must be odd so a
    /// two-way split cannot tie. Default: 3.
    pub consensus_samples: u32,
    /// Temperature of consensus samples: at 0 every sample would be the same answer and the
    /// vote would add cost but no information. Default: 0.7.
    pub consensus_temperature: f32,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            cache_capacity: 10_000,
            consensus_samples: 3,
            consensus_temperature: 0.7,
        }
    }
}
