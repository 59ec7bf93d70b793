//! What the review service owns beside the banks: the model-backed judge, when one is set up,
//! and the reflector that turns finished tasks into memories.

use std::sync::Arc;

use super::judging::{JudgeKind, LlmJudge};
use super::reflecting::NodeReflector;
use crate::config::NodeConfig;
use crate::error::NodeError;

pub(crate) struct Reviewing {
    /// The model-backed review judge, when `review.judge` asks for one.
    llm_judge: Option<Arc<LlmJudge>>,
    reflector: Arc<NodeReflector>,
}

impl Reviewing {
    pub(crate) fn new(config: &NodeConfig) -> Result<Self, NodeError> {
        let llm_judge = match config.review.judge {
            JudgeKind::Rules => None,
            kind => Some(Arc::new(LlmJudge::new(kind, &config.review.llm)?)),
        };
        let reflector = Arc::new(NodeReflector::new(
            config.reflect.reflector,
            &config.review.llm,
        )?);
        Ok(Reviewing {
            llm_judge,
            reflector,
        })
    }

    pub(crate) fn llm_judge(&self) -> Option<Arc<LlmJudge>> {
        self.llm_judge.clone()
    }

    pub(crate) fn reflector(&self) -> Arc<NodeReflector> {
        self.reflector.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_judge_needs_no_model_client() {
        let reviewing = Reviewing::new(&NodeConfig::default()).unwrap();
        assert!(reviewing.llm_judge().is_none());
    }

    #[test]
    fn a_model_judge_is_built_when_asked_for() {
        let mut config = NodeConfig::default();
        config.review.judge = JudgeKind::Llm;
        // A local server takes no key.
        config.review.llm.chat.api_key_env = None;
        let reviewing = Reviewing::new(&config).unwrap();
        assert!(reviewing.llm_judge().is_some());
    }

    #[test]
    fn a_model_judge_without_a_model_name_is_a_configuration_error() {
        let mut config = NodeConfig::default();
        config.review.judge = JudgeKind::Llm;
        config.review.llm.chat.model = String::new();
        assert!(matches!(Reviewing::new(&config), Err(NodeError::Config(_))));
    }
}
