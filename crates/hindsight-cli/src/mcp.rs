//! `hindsight mcp`: the memory tools as an MCP server on stdin/stdout, for hosts that launch their
//! servers as processes. It talks gRPC to a running node; logs go to stderr, since stdout carries
//! the protocol.

use std::io::IsTerminal;

use hindsight_mcp::Defaults;
use tracing_subscriber::EnvFilter;

/// Arguments of `hindsight mcp`.
#[derive(clap::Args, Debug)]
pub struct McpArgs {
    /// gRPC address of the node the tools act on.
    #[arg(
        long,
        env = "HINDSIGHT_SERVER",
        default_value = "127.0.0.1:7400",
        value_name = "HOST:PORT"
    )]
    pub server: String,
    /// The bank tools use when a call names none, e.g. acme/agent-7.
    #[arg(long, env = "HINDSIGHT_MCP_BANK", value_name = "BANK")]
    pub bank: Option<String>,
    /// The API key every call sends, when the server requires one (`hs_<id>_<secret>`).
    #[arg(
        long,
        env = "HINDSIGHT_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub api_key: Option<String>,
}

/// Quiet by default: a host shows a server's stderr to the user, who wants failures, not chatter.
const DEFAULT_LOG_FILTER: &str = "warn,hindsight=info";

pub async fn run(args: McpArgs) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_env("HINDSIGHT_LOG")
        .unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
    tracing::info!(server = %args.server, bank = ?args.bank, "serving MCP over stdio");
    let defaults = Defaults {
        api_key: args.api_key.filter(|k| !k.trim().is_empty()),
        bank: args.bank.filter(|b| !b.trim().is_empty()),
    };
    hindsight_mcp::serve_stdio(&args.server, defaults).await?;
    Ok(())
}
