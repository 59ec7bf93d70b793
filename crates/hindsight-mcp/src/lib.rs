//! The Model Context Protocol edge of Hindsight: memory tools an agent calls by itself, over stdio
//! (a process an MCP host launches, talking gRPC to a node) or streamable HTTP (mounted at `/mcp`
//! on a node's HTTP port).

mod backend;
mod caller;
mod error;
mod http;
mod local;
mod remote;
mod render;
mod server;
mod stdio;
mod tool_error;
mod tools;

pub use backend::Backend;
pub use caller::{Defaults, BANK_HEADER};
pub use error::McpError;
pub use http::{http_router, HttpOptions, MCP_PATH};
pub use local::LocalBackend;
pub use remote::RemoteBackend;
pub use server::MemoryServer;
pub use stdio::serve_stdio;
