//! Why serving MCP stopped.

use thiserror::Error;

/// Why serving MCP failed (as opposed to one tool call).
#[derive(Debug, Error)]
pub enum McpError {
    #[error("MCP over stdio failed: {0}")]
    Stdio(String),
}
