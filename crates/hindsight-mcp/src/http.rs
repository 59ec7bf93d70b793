//! MCP over streamable HTTP, mounted on a node's HTTP server beside the probes.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use hindsight_node::Node;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::backend::Backend;
use crate::caller::Defaults;
use crate::local::LocalBackend;
use crate::server::MemoryServer;

/// Where the endpoint is mounted.
pub const MCP_PATH: &str = "/mcp";

/// How the endpoint checks who may reach it.
#[derive(Clone, Debug, Default)]
pub struct HttpOptions {
    /// Host names (or `host:port`) accepted in the `Host` header, against DNS rebinding: a web
    /// page in a browser on the same machine must not reach a loopback node through a name it
    /// controls. `None` accepts only loopback names; an empty list accepts any host, for a node
    /// deliberately served on the network (API keys then guard it).
    pub allowed_hosts: Option<Vec<String>>,
}

impl HttpOptions {
    /// What a node serving HTTP on `addr` accepts: loopback names on a loopback address; on a
    /// wildcard address, any name (clients reach it by names the node cannot know); on one
    /// address, that address and the loopback names.
    pub fn for_bind_addr(addr: SocketAddr) -> HttpOptions {
        let ip = addr.ip();
        let allowed_hosts = if ip.is_loopback() {
            None
        } else if ip.is_unspecified() {
            Some(Vec::new())
        } else {
            Some(
                [
                    ip.to_string(),
                    "localhost".into(),
                    "127.0.0.1".into(),
                    "::1".into(),
                ]
                .into(),
            )
        };
        HttpOptions { allowed_hosts }
    }
}

/// The `/mcp` route over `node`, to merge into the node's HTTP router. Each request is served on
/// its own, without a session: nothing is kept between calls, so any node behind a load balancer
/// can answer any request and nothing lingers at shutdown. Each request's `Authorization` and
/// `x-hindsight-bank` headers say whom it speaks for and which bank it defaults to.
pub fn http_router(node: Node, options: HttpOptions) -> Router {
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::new(node));
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    if let Some(hosts) = options.allowed_hosts {
        config = if hosts.is_empty() {
            config.disable_allowed_hosts()
        } else {
            config.with_allowed_hosts(hosts)
        };
    }
    let service = StreamableHttpService::new(
        move || Ok(MemoryServer::new(backend.clone(), Defaults::default())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new().nest_service(MCP_PATH, service)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_hosts_follow_the_bind_address() {
        let at = |a: &str| HttpOptions::for_bind_addr(a.parse().unwrap()).allowed_hosts;
        assert_eq!(at("127.0.0.1:7401"), None);
        assert_eq!(at("0.0.0.0:7401"), Some(vec![]));
        assert_eq!(at("10.0.0.5:7401").unwrap()[0], "10.0.0.5");
    }
}
