//! A small bank runtime for the services' unit tests: one node's own Raft group on disk in a
//! temporary directory, the hashing embedder, the bank supervisor and its actors, and no peers,
//! partitions or servers. The services run against it exactly as they do in a node, without the
//! node: each test names what else it takes from the node in a host of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use hindsight_cluster::{GrpcLeaderLink, GrpcNetwork, Peers, PeersConfig};
use hindsight_embed::HashingEmbedder;
use hindsight_store::{RetrievalLog, RetrievalRetention, StoreConfig};
use ractor::Actor;

use super::erasure::RecallErasure;
use super::homes::Homes;
use super::listener::EffectRouter;
use super::{BankContext, BankRegistry, BankSupervisor, Banks};

/// Dimensions of the hashing embedder the runtime embeds with: small, so tests stay fast.
pub(crate) const TEST_DIMENSIONS: usize = 64;

/// The runtime and the directory it lives in, removed when the runtime is dropped.
pub(crate) struct SmallRuntime {
    pub banks: Banks,
    pub retrieval_log: Arc<RetrievalLog>,
    _dir: tempfile::TempDir,
}

impl SmallRuntime {
    /// Opens the store, waits until this node leads its group, and starts the bank supervisor.
    pub(crate) async fn start() -> SmallRuntime {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let retrieval_log = Arc::new(
            RetrievalLog::open(
                &dir.path().join("retrieval-log"),
                RetrievalRetention::default(),
            )
            .expect("the retrieval log opens"),
        );
        let registry = Arc::new(BankRegistry::default());
        let router = Arc::new(EffectRouter {
            registry: registry.clone(),
            supervisor: OnceLock::new(),
            erasure: RecallErasure::start(&retrieval_log),
        });
        let peers = Peers::new(PeersConfig::default());
        let store = Arc::new(
            hindsight_store::open_cluster(
                &dir.path().join("raft"),
                StoreConfig {
                    initialize_if_empty: true,
                    ..StoreConfig::default()
                },
                router.clone(),
                GrpcNetwork::new(peers.clone()),
                Arc::new(GrpcLeaderLink::new(peers)),
            )
            .await
            .expect("the store opens"),
        );
        let homes = Homes::new(store.clone(), None);
        let context = Arc::new(BankContext {
            homes: homes.clone(),
            embedder: Arc::new(HashingEmbedder::new(TEST_DIMENSIONS)),
            embedded_texts: Arc::new(AtomicU64::new(0)),
            registry,
            index_root: dir.path().join("index"),
            graph_rest_after: None,
        });
        let (supervisor, _) = Actor::spawn(
            None,
            BankSupervisor {
                context: context.clone(),
            },
            (),
        )
        .await
        .expect("the bank supervisor starts");
        let _ = router.supervisor.set(supervisor.clone());
        let banks = Banks::new(1, store, homes, context, supervisor);
        banks.readiness().store(true, Ordering::SeqCst);
        SmallRuntime {
            banks,
            retrieval_log,
            _dir: dir,
        }
    }
}

impl Drop for SmallRuntime {
    fn drop(&mut self) {
        self.banks.supervisor().stop(None);
    }
}
