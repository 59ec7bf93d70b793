use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use crate::error::ClusterError;
use crate::pb::raft_transport_client::RaftTransportClient;
use crate::MAX_MESSAGE_BYTES;

/// The metadata key carrying the cluster's shared secret.
pub const SECRET_HEADER: &str = "x-hindsight-cluster-secret";
/// Set on a refusal that means "not the leader": the request was not acted on.
pub(crate) const NOT_LEADER_HEADER: &str = "x-hindsight-not-leader";

const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

/// TLS towards peers: the CA their certificates chain to and, for mutual TLS, this node's own.
#[derive(Clone, Debug)]
pub struct PeerTls {
    pub ca_pem: Vec<u8>,
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// How this node talks to its peers.
#[derive(Clone, Debug, Default)]
pub struct PeersConfig {
    pub group_id: u64,
    pub secret: Option<String>,
    pub tls: Option<PeerTls>,
    /// The local address connections leave from; `None` lets the OS choose.
    pub source_ip: Option<std::net::IpAddr>,
}

/// Connections to peers by address, made on first use and reused; a channel reconnects by itself
/// after the peer comes back.
#[derive(Clone)]
pub struct Peers {
    config: Arc<PeersConfig>,
    channels: Arc<Mutex<HashMap<String, Channel>>>,
    /// This group's Raft calls to each peer by node id, for the leader's view of who is up:
    /// openraft's metrics say how far a follower has replicated, not whether it still answers.
    contact: Arc<Mutex<HashMap<u64, Contact>>>,
}

#[derive(Clone, Copy, Debug)]
struct Contact {
    first_call: Instant,
    last_answer: Option<Instant>,
}

impl Peers {
    pub fn new(config: PeersConfig) -> Peers {
        Peers {
            config: Arc::new(config),
            channels: Arc::default(),
            contact: Arc::default(),
        }
    }

    pub fn group_id(&self) -> u64 {
        self.config.group_id
    }

    /// The same connections, for the traffic of Raft group `group_id`: a node hosting several
    /// groups keeps one channel per peer, whichever groups the messages belong to.
    pub fn for_group(&self, group_id: u64) -> Peers {
        Peers {
            config: Arc::new(PeersConfig {
                group_id,
                ..(*self.config).clone()
            }),
            channels: self.channels.clone(),
            // Each group has its own leader, which alone sends the calls counted here.
            contact: Arc::default(),
        }
    }

    /// Notes a Raft call of this group to `node` about to go out.
    pub(crate) fn calling(&self, node: u64) {
        self.contact.lock().entry(node).or_insert(Contact {
            first_call: Instant::now(),
            last_answer: None,
        });
    }

    /// Notes that `node` answered a Raft call of this group (whatever the answer said).
    pub(crate) fn answered(&self, node: u64) {
        let now = Instant::now();
        self.contact
            .lock()
            .entry(node)
            .and_modify(|c| c.last_answer = Some(now))
            .or_insert(Contact {
                first_call: now,
                last_answer: Some(now),
            });
    }

    /// How long `node` has gone without answering this group's Raft calls: since its last
    /// answer, or since the first call when none came; `None` when it was never called.
    pub(crate) fn silence(&self, node: u64) -> Option<Duration> {
        let contact = *self.contact.lock().get(&node)?;
        Some(contact.last_answer.unwrap_or(contact.first_call).elapsed())
    }

    /// The (lazily connected, shared) channel to the peer at `addr`, with this node's TLS setup.
    pub fn channel(&self, addr: &str) -> Result<Channel, ClusterError> {
        let mut channels = self.channels.lock();
        Ok(match channels.get(addr) {
            Some(channel) => channel.clone(),
            None => {
                let channel = self.connect(addr)?;
                channels.insert(addr.to_string(), channel.clone());
                channel
            }
        })
    }

    pub(crate) fn client(&self, addr: &str) -> Result<RaftTransportClient<Channel>, ClusterError> {
        let channel = self.channel(addr)?;
        Ok(RaftTransportClient::new(channel)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES))
    }

    fn connect(&self, addr: &str) -> Result<Channel, ClusterError> {
        if addr.is_empty() {
            return Err(ClusterError::Unavailable(
                "the peer has no address in the membership".into(),
            ));
        }
        let scheme = if self.config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))
            .map_err(|e| ClusterError::InvalidArgument(format!("peer address {addr:?}: {e}")))?
            .local_address(self.config.source_ip)
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(5));
        if let Some(tls) = &self.config.tls {
            let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let mut config = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(&tls.ca_pem))
                .domain_name(host);
            if let Some((cert, key)) = &tls.identity {
                config = config.identity(Identity::from_pem(cert, key));
            }
            endpoint = endpoint
                .tls_config(config)
                .map_err(|e| ClusterError::InvalidArgument(format!("peer TLS: {e}")))?;
        }
        Ok(endpoint.connect_lazy())
    }

    /// A request carrying the cluster secret, with a deadline when given.
    pub(crate) fn request<T>(&self, message: T, timeout: Option<Duration>) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(secret) = &self.config.secret {
            if let Ok(value) = MetadataValue::try_from(secret.as_str()) {
                request.metadata_mut().insert(SECRET_HEADER, value);
            }
        }
        if let Some(timeout) = timeout {
            request.set_timeout(timeout);
        }
        request
    }
}

/// Whether a failed call surely never reached the peer's handler: the connection could not be
/// made, or the peer refused it as not the leader. Only then is a proposal safe to retry.
pub(crate) fn not_taken(status: &tonic::Status) -> bool {
    if status.metadata().get(NOT_LEADER_HEADER).is_some() {
        return true;
    }
    status.code() == tonic::Code::Unavailable && is_connect_error(status)
}

/// Whether a failed call never left this node: the connection to the peer could not be made.
pub fn is_connect_error(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(error) = source {
        let text = error.to_string();
        if text.contains("tcp connect error") || text.contains("Connection refused") {
            return true;
        }
        source = error.source();
    }
    let message = status.message();
    message.contains("tcp connect error") || message.contains("Connection refused")
}
