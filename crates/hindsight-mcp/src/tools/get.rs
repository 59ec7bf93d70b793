//! `memory_get`: one memory, by id.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render;
use crate::tool_error::ToolError;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetArgs {
    /// The memory's id (26 characters, as memory_search, memory_write or memory_review returned
    /// it).
    pub id: String,
}

impl GetArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let request = pb::GetRequest {
            id: self.id.trim().to_string(),
            consistency: None,
        };
        let response = backend.get(caller.key(), request).await?;
        Ok(match &response.memory {
            Some(m) => render::memory(m),
            // The node answers not-found itself; an empty answer is not worth an error of its own.
            None => json!({}),
        })
    }
}
