use hindsight_core::CommandOutcome;
use serde::{Deserialize, Serialize};

/// What applying one log entry produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandResponse {
    /// `None` for entries that carry no command: the leader's blank entry and membership changes.
    pub outcome: Option<CommandOutcome>,
}
