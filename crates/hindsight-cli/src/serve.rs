//! `hindsight serve`: one node with its gRPC and HTTP servers, until Ctrl-C or SIGTERM.

use std::io::IsTerminal;
use std::net::SocketAddr;

use hindsight_node::{Node, NodeConfig};
use tracing::{error, info, warn};
use tracing_subscriber::EnvFilter;

use crate::cli::ServeArgs;

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    init_logging();
    let mut config = NodeConfig::load(args.config.as_deref(), std::env::vars())?;
    if let Some(dir) = args.data_dir {
        config.node.data_dir = dir;
    }
    if let Some(id) = args.node_id {
        config.node.id = id;
    }
    if let Some(advertise) = args.advertise {
        config.cluster.advertise = advertise;
    }
    if let Some(join) = args.join {
        config.cluster.join = join;
    }
    if let Some(addr) = args.grpc_addr {
        config.node.grpc_addr = addr.to_string();
    }
    if let Some(addr) = args.http_addr {
        config.node.http_addr = addr.to_string();
    }
    config.validate()?;
    let grpc_addr: SocketAddr = config.node.grpc_addr.parse()?;
    let http_addr: SocketAddr = config.node.http_addr.parse()?;
    info!(
        config = %args.config.as_ref().map_or("built-in defaults".into(), |p| p.display().to_string()),
        data_dir = %config.node.data_dir.display(),
        node_id = config.node.id,
        grpc = %grpc_addr,
        http = %http_addr,
        embedding = ?config.embedding.provider,
        "configuration loaded"
    );

    // Certificates are read before anything starts, so a bad path fails fast.
    let tls = hindsight_api::ServerTls::from_section(&config.tls)?;
    let (grpc, http) = hindsight_api::bind_listeners(grpc_addr, http_addr).await?;
    // One listener for the whole run: a signal that arrives between two listeners (say, just
    // after the node started) would otherwise be taken by tokio's handler and heard by no one.
    let mut signal = std::pin::pin!(shutdown_signal());
    let node = tokio::select! {
        node = Node::start(config) => node?,
        signal = &mut signal => {
            info!(signal, "stopped before the node started");
            return Ok(());
        }
    };
    let mcp = hindsight_mcp::http_router(
        node.clone(),
        hindsight_mcp::HttpOptions::for_bind_addr(http_addr),
    );
    let options = hindsight_api::ServeOptions {
        extra_routes: mcp,
        tls,
    };
    // A store that failed (a full disk, say) takes no more writes: the node stops and exits with
    // an error, so that a supervisor restarts it once the cause is fixed, rather than stay up
    // refusing every write.
    let mut failure = None;
    let stop = async {
        tokio::select! {
            signal = signal => info!(signal, "shutting down"),
            reason = node.store_failed() => {
                error!(reason, "the store stopped on a fatal error; the node stops too");
                failure = Some(reason);
            }
        }
        tokio::spawn(async {
            if tokio::signal::ctrl_c().await.is_ok() {
                warn!("second interrupt: exiting without a clean shutdown");
                std::process::exit(130);
            }
        });
    };
    let served = hindsight_api::serve_with_options(node.clone(), grpc, http, options, stop).await;
    node.shutdown().await;
    info!("stopped");
    served?;
    match failure {
        Some(reason) => Err(anyhow::anyhow!(
            "the store stopped: {reason}; restart the node once the cause is fixed (acknowledged writes are in its log)"
        )),
        None => Ok(()),
    }
}

/// Without `HINDSIGHT_LOG`, Raft's step-by-step messages are left out: they drown what the node itself
/// reports. So are the MCP library's, which reports every request to `/mcp` at info.
const DEFAULT_LOG_FILTER: &str = "info,openraft=warn,rmcp=warn";

fn init_logging() {
    let filter = EnvFilter::try_from_env("HINDSIGHT_LOG")
        .unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    // Only one subscriber per process; a second `serve` in the same process keeps the first.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// Completes on Ctrl-C or SIGTERM, naming which.
async fn shutdown_signal() -> &'static str {
    let interrupt = async {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "interrupt",
            Err(e) => {
                warn!(error = %e, "cannot listen for Ctrl-C");
                std::future::pending().await
            }
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
                "terminate"
            }
            Err(e) => {
                warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending().await
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<&'static str>();
    tokio::select! {
        name = interrupt => name,
        name = terminate => name,
    }
}
