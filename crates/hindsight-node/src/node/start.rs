use super::reviewers::{periodic_review_due, ReviewerMsg, Reviewers};
use super::{Inner, Node};
use crate::access::rate::RateLimiter;
use crate::access::{Access, Authenticator};
use crate::bank::embedding;
use crate::bank::erasure::RecallErasure;
use crate::bank::homes::Homes;
use crate::bank::listener::EffectRouter;
use crate::bank::partitions::{Partitions, PartitionsSetup};
use crate::bank::residency::{self, ResidencyLimits};
use crate::bank::{BankContext, BankRegistry, BankSupervisor, Banks, SupervisorMsg};
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::recall::recalling::Recalling;
use crate::review::reviewing::Reviewing;
use crate::routing::routes::Routes;
use crate::write::writing::Writing;
use hindsight_cluster::{GrpcLeaderLink, GrpcNetwork, RaftGroups, RaftTransportService};
use hindsight_core::{BankName, Timestamp};
use hindsight_store::{RetrievalLog, StoreConfig};
use parking_lot::Mutex;
use ractor::Actor;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How often the access statistics recalls leave are recorded. Every second rather than every
/// few: each replica applies what a flush records before the recalls that come after it, and
/// five seconds of a busy node's hits at once held those recalls up for tens of milliseconds.
const ACCESS_FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How often the retrieval log is flushed, in access flushes.
const ACCESS_FLUSHES_PER_RETRIEVAL_LOG_FLUSH: u64 = 5;
/// How often a node with partitions checks them against the placement table.
const PLACEMENT_CHECK_EVERY: Duration = Duration::from_secs(1);
/// A bank asked for within this long is not unloaded to make room for others.
const KEEP_RECENT_BANKS: Duration = Duration::from_secs(5);

impl Node {
    /// Opens (or creates) the node's store under `config.node.data_dir`, loads the embedder and
    /// starts the actors. Returns once the node serves.
    pub async fn start(config: NodeConfig) -> Result<Node, NodeError> {
        config.validate()?;
        let data_dir = config.node.data_dir.clone();
        std::fs::create_dir_all(&data_dir).map_err(|e| {
            NodeError::Config(format!(
                "cannot create data dir {}: {e}",
                data_dir.display()
            ))
        })?;
        tracing::info!(data_dir = %data_dir.display(), "starting node {}", config.node.id);
        let reviewing = Reviewing::new(&config)?;
        let signer = crate::bank::integrity::signer(&config.integrity, &data_dir, &config.cluster)?;
        let writing = Writing::new(&config, signer)?;
        let embedder = {
            let config = config.clone();
            tokio::task::spawn_blocking(move || embedding::build(&config))
                .await
                .map_err(NodeError::internal)??
        };

        let authenticator = Authenticator::new(&config.auth)?;
        let config_rate_limit = config.rate_limit.clone();
        if authenticator.enabled() {
            tracing::info!("authentication is on: every request needs an API key");
        } else {
            let loopback = config
                .node
                .grpc_addr
                .parse::<std::net::SocketAddr>()
                .is_ok_and(|a| a.ip().is_loopback());
            tracing::warn!(
                "AUTHENTICATION IS OFF (auth.enabled = false): every caller can read, write and delete every bank{}",
                if loopback { "" } else { ", and this node listens beyond loopback" }
            );
        }
        let retrieval_log = Arc::new(
            RetrievalLog::open(
                &data_dir.join("retrieval-log"),
                config.retrieval_log.clone(),
            )
            .map_err(|e| NodeError::Unavailable(format!("retrieval log did not open: {e}")))?,
        );
        let registry = Arc::new(BankRegistry::default());
        let router = Arc::new(EffectRouter {
            registry: registry.clone(),
            supervisor: OnceLock::new(),
            erasure: RecallErasure::start(&retrieval_log),
        });
        let store_config = StoreConfig {
            node_id: config.node.id,
            advertise_addr: config.advertise_addr(),
            cache_capacity_bytes: config.store.cache_capacity_mb * 1024 * 1024,
            snapshot_every_entries: config.store.snapshot_every_entries,
            max_in_snapshot_log_to_keep: config.store.log_entries_kept_after_snapshot,
            max_in_flight_entries: config.store.max_in_flight_entries,
            initialize_if_empty: config.cluster.bootstrap && config.cluster.seeds().is_empty(),
            ..StoreConfig::default()
        };
        let (peers, transport_auth) = crate::routing::cluster::peers(&config)?;
        let partition_store_config = StoreConfig {
            initialize_if_empty: false,
            ..store_config.clone()
        };
        let store = Arc::new(
            hindsight_store::open_cluster(
                &data_dir.join("raft"),
                store_config,
                router.clone(),
                GrpcNetwork::new(peers.clone()),
                Arc::new(GrpcLeaderLink::new(peers.clone())),
            )
            .await
            .map_err(|e| NodeError::Unavailable(format!("store did not start: {e}")))?,
        );
        let raft_groups = RaftGroups::new(config.node.id, transport_auth.clone());
        let cluster = RaftTransportService::new(
            store.raft().clone(),
            store.proposer().clone(),
            config.node.id,
            peers.clone(),
            transport_auth.clone(),
        );
        raft_groups.insert(cluster.clone());
        if let Some(fingerprint) = writing.key_fingerprint() {
            cluster.set_key_check(fingerprint);
        }
        // A placed table decides, whatever this node's configuration says: every node must hash
        // banks onto the same partitions.
        let placed = store.reader().placement().map_err(NodeError::internal)?;
        let partitioned = config.cluster.partitions > 0 || placed.is_some();
        let partitions = partitioned.then(|| {
            let single_group = crate::bank::partitions::formed_with_one_group(
                store.reader(),
                placed.as_ref(),
                config.cluster.partitions,
            );
            Arc::new(Partitions::new(PartitionsSetup {
                partitions: placed
                    .as_ref()
                    .map_or(config.cluster.partitions, |t| t.partition_count()),
                single_group,
                replication: config.cluster.replication,
                root: data_dir.join("partitions"),
                store_config: partition_store_config,
                peers,
                auth: transport_auth,
                groups: raft_groups.clone(),
                key_check: cluster.key_check().to_string(),
                router: router.clone(),
                replace_after_secs: config.cluster.replace_after_secs,
            }))
        });
        let homes = Homes::new(store.clone(), partitions.clone());

        let (embedder, embedded_texts) = embedding::Counting::new(embedder);
        let context = Arc::new(BankContext {
            homes: homes.clone(),
            embedder: Arc::new(embedder),
            embedded_texts,
            registry,
            index_root: data_dir.join("index"),
            graph_rest_after: match config.index.graph_rest_after_secs {
                0 => None,
                secs => Some(Duration::from_secs(secs)),
            },
        });
        let (supervisor, _) = Actor::spawn(
            None,
            BankSupervisor {
                context: context.clone(),
            },
            (),
        )
        .await
        .map_err(|e| NodeError::internal(format!("cannot start the bank supervisor: {e}")))?;
        let _ = router.supervisor.set(supervisor.clone());

        let node = Node {
            inner: Arc::new(Inner {
                banks: Banks::new(config.node.id, store, homes, context, supervisor),
                config,
                routes: Routes::new(cluster, raft_groups, partitions),
                writing,
                recalling: Recalling::new(retrieval_log),
                reviewing,
                reviewers: Reviewers::default(),
                access: Access::new(authenticator, RateLimiter::new(config_rate_limit)),
                tasks: Mutex::new(vec![]),
            }),
        };
        node.listen_for_review_hints();
        node.start_link().await;
        node.spawn_background_tasks();
        crate::routing::cluster::spawn_join(node.cluster(), node.config());
        node.inner.banks.readiness().store(true, Ordering::SeqCst);
        tracing::info!("node {} serving", node.inner.config.node.id);
        Ok(node)
    }

    /// Unloads banks left idle, and the least recently used past the memory budget (see
    /// [`crate::bank::residency`]); a bank's reviewer leaves with it.
    fn keep_loaded_banks_within_limits(&self) -> tokio::task::JoinHandle<()> {
        let index = &self.inner.config.index;
        let limits = ResidencyLimits {
            idle_after_millis: index.unload_idle_secs.saturating_mul(1000),
            budget_bytes: index.memory_budget_bytes(),
            keep_recent_millis: KEEP_RECENT_BANKS.as_millis() as u64,
        };
        let registry = self.inner.banks.context().registry.clone();
        let supervisor = self.inner.banks.supervisor().clone();
        // Held weakly: the task must not keep a shut-down node alive.
        let node = Arc::downgrade(&self.inner);
        tokio::spawn(residency::keep_within(
            registry,
            supervisor,
            limits,
            move |bank| {
                if let Some(inner) = node.upgrade() {
                    inner.reviewers.remove(bank);
                }
            },
        ))
    }

    fn spawn_background_tasks(&self) {
        let mut tasks = self.inner.tasks.lock();
        if let Some(partitions) = self.inner.routes.placed_partitions().cloned() {
            let node = self.clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(PLACEMENT_CHECK_EVERY);
                loop {
                    tick.tick().await;
                    partitions
                        .reconcile(
                            node.inner.banks.metadata_store(),
                            node.inner.routes.cluster(),
                        )
                        .await;
                }
            }));
        }
        let node = self.clone();
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(ACCESS_FLUSH_EVERY);
            for flushes in 1u64.. {
                tick.tick().await;
                node.inner.recalling.flush_access(node.banks()).await;
                if flushes % ACCESS_FLUSHES_PER_RETRIEVAL_LOG_FLUSH != 0 {
                    continue;
                }
                // The retrieval log's store does not flush in the background (see
                // crates/hindsight-store/src/sled_gate.rs): a crash loses at most this interval.
                if let Ok(log) = node.inner.recalling.retrieval_log() {
                    let flushed = tokio::task::spawn_blocking(move || log.flush()).await;
                    if let Ok(Err(e)) = flushed {
                        tracing::warn!(error = %e, "retrieval log flush");
                    }
                }
            }
        }));
        let interval = self.inner.config.review.interval_secs;
        if interval > 0 {
            let node = self.clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(interval));
                tick.tick().await;
                let unchanged_every =
                    Duration::from_secs(node.inner.config.review.unchanged_every_secs);
                // Changes applied before this node started are not in the registry's
                // last-effect table, so the first round rings every bank once.
                let mut first_round = true;
                loop {
                    tick.tick().await;
                    // The schedule only rings the reviewers of the banks that are due; the cycles
                    // run in the reviewers, one bank's after another's as the actors get to them.
                    let banks: Vec<BankName> = node
                        .banks()
                        .hosted_homes()
                        .iter()
                        .flat_map(|home| {
                            let reader = home.reader().clone();
                            let registry = node.inner.banks.context().registry.clone();
                            let node = node.clone();
                            reader
                                .banks()
                                .unwrap_or_default()
                                .into_iter()
                                .map(|bank| bank.name)
                                .filter(move |bank| node.leads_bank(bank))
                                .filter(move |bank| {
                                    first_round
                                        || periodic_review_due(
                                            &reader,
                                            bank,
                                            registry.last_effect(bank),
                                            Timestamp::now(),
                                            unchanged_every,
                                        )
                                })
                        })
                        .collect();
                    first_round = false;
                    for bank in banks {
                        match node.inner.reviewers.get(&node, &bank).await {
                            Ok(reviewer) => {
                                let _ = reviewer.send_message(ReviewerMsg::Tick);
                            }
                            Err(e) => {
                                tracing::warn!(%bank, error = %e, "no reviewer")
                            }
                        }
                    }
                }
            }));
        }
        tasks.push(self.keep_loaded_banks_within_limits());
        let dump_every = self.inner.config.index.dump_interval_secs;
        if dump_every > 0 {
            let supervisor = self.inner.banks.supervisor().clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(dump_every));
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let _ = supervisor
                        .call(SupervisorMsg::DumpAll, Some(Duration::from_secs(600)))
                        .await;
                }
            }));
        }
    }
}
