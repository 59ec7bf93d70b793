//! MCP over standard input and output, the way desktop hosts launch a server. Standard output
//! carries the protocol alone, so nothing else may print there.

use std::sync::Arc;

use rmcp::ServiceExt;

use crate::caller::Defaults;
use crate::error::McpError;
use crate::remote::RemoteBackend;
use crate::server::MemoryServer;

/// Serves the tools on stdin/stdout against the node at `server` (its gRPC `HOST:PORT`) until the
/// host closes the stream.
pub async fn serve_stdio(server: &str, defaults: Defaults) -> Result<(), McpError> {
    let backend = Arc::new(RemoteBackend::new(server));
    let running = MemoryServer::new(backend, defaults)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| McpError::Stdio(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| McpError::Stdio(e.to_string()))?;
    Ok(())
}
