//! `memory_forget`: stop a memory from being used.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::tool_error::ToolError;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// The memory's id (26 characters, as memory_search or memory_write returned it).
    pub id: String,
    /// Why, e.g. "the user asked to forget it" or "wrong: the office moved"; kept in its history.
    #[serde(default)]
    pub reason: Option<String>,
    /// Delete it for good, with everything derived from it, instead of archiving it (archived
    /// memories are hidden from search but can still be traced). Only when the user asks for
    /// deletion.
    #[serde(default)]
    pub hard: Option<bool>,
}

impl ForgetArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let hard = self.hard.unwrap_or(false);
        let request = pb::ForgetRequest {
            id: self.id.trim().to_string(),
            hard,
            reason: self.reason.filter(|r| !r.trim().is_empty()),
        };
        let response = backend.forget(caller.key(), request).await?;
        Ok(json!({
            "forgotten": if hard { "deleted" } else { "archived" },
            "changed": response.changed,
        }))
    }
}
