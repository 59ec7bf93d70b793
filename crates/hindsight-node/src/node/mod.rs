use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hindsight_cluster::{
    GrpcLeaderLink, GrpcNetwork, RaftGroups, RaftTransportService, ReviewHintSink,
};
use hindsight_core::auth::{ApiKey, Grant, Principal};
use hindsight_core::command::{AccessHit, Command, CommandOutcome};
use hindsight_core::placement::{PartitionId, PlacementTable};
use hindsight_core::recall::{RecallHit, RecallRequest, RecallResponse};
use hindsight_core::retrieval::{FeedbackOutcome, RecallId, RetrievalQuery};
use hindsight_core::review::{Conflict, ResolutionOutcome};
use hindsight_core::write::{WriteOutcome, WriteRequest};
use hindsight_core::RetrievalRecord;
use hindsight_core::{BankConfig, BankName, Consistency, Memory, MemoryId, Status, Timestamp};
use hindsight_guard::Screener;
use hindsight_store::{RetrievalLog, StoreConfig};
use parking_lot::Mutex;
use ractor::rpc::CallResult;
use ractor::Actor;
use tokio::task::JoinHandle;

use crate::access::rate::RateLimiter;
use crate::access::{Access, Authenticator, IssuedKey};
use crate::bank::embedding;
use crate::bank::erasure::RecallErasure;
use crate::bank::homes::{Home, Homes};
use crate::bank::integrity::Integrity;
use crate::bank::listener::EffectRouter;
use crate::bank::partitions::{Partitions, PartitionsSetup};
use crate::bank::residency::{self, ResidencyLimits};
use crate::bank::{BankContext, BankRegistry, BankSupervisor, Banks, SupervisorMsg};
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::recall::learning::FeedbackReport;
use crate::recall::{learning, search};
use crate::review::judging::{JudgeKind, LlmJudge};
use crate::review::reflecting::{NodeReflector, ReflectReport};
use crate::review::{conflicts, reflecting};
use crate::types::{BankInfo, BankPatch, NodeStatus, ReviewReport, Trace};
use crate::write::admission::WriteAdmission;
use crate::write::quota::Reservations;
use crate::write::writer;
use hindsight_guard::RecordSigner;
use hindsight_review::reflect::TaskTrace;
use reviewers::{periodic_review_due, ReviewerMsg, Reviewers};

const ACCESS_FLUSH_EVERY: Duration = Duration::from_secs(5);
/// How often a node with partitions checks them against the placement table.
const PLACEMENT_CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long a shutdown waits to record the last access statistics: a few seconds
/// of hints are not worth holding up a stop that has no quorum to commit them.
const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_secs(3);
/// A bank asked for within this long is not unloaded to make room for others.
const KEEP_RECENT_BANKS: Duration = Duration::from_secs(5);
/// How often a node checks whether a partition replica's store stopped on a fatal error.
const PARTITION_FAILURE_CHECK: Duration = Duration::from_millis(500);

mod gauges;
mod hosts;
mod membership;
mod reviewers;
mod transfer;

/// A running node. Cheap to clone; every clone talks to the same node.
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
}

struct Inner {
    config: NodeConfig,
    banks: Banks,
    /// Node-to-node service and membership operations of the metadata group.
    cluster: RaftTransportService,
    /// Every group this node hosts, behind its one node-to-node gRPC service.
    raft_groups: RaftGroups,
    /// The partition replicas placed here, when `cluster.partitions` is set.
    partitions: Option<Arc<Partitions>>,
    access: Mutex<HashMap<MemoryId, AccessHit>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The model-backed review judge, when `review.judge` asks for one.
    llm_judge: Option<Arc<LlmJudge>>,
    reviewers: Reviewers,
    /// Write-time screening, unless `guard.enabled` is off.
    screener: Option<Arc<Screener>>,
    /// The last harmless write of each recent bank and source, for the guard to judge an
    /// instruction split over two writes as a whole.
    recent_writes: parking_lot::Mutex<hindsight_guard::RecentWrites>,
    reflector: Arc<NodeReflector>,
    /// Taken out at shutdown, so that sled's lock on its directory goes with the last user.
    retrieval_log: Mutex<Option<Arc<RetrievalLog>>>,
    /// Feedback is checked against the log and recorded in it one request at a time.
    feedback_serial: tokio::sync::Mutex<()>,
    /// API keys and rate limits.
    access_control: Access,
    write_admission: WriteAdmission,
    signer: Option<RecordSigner>,
    /// Bytes admitted under the banks' byte quotas that their views do not show yet.
    reservations: Arc<Reservations>,
    /// Joins this node's actor system to its peers' (see link.rs); set once the node runs.
    link: std::sync::OnceLock<crate::routing::link::ActorLink>,
}

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
        let llm_judge = match config.review.judge {
            JudgeKind::Rules => None,
            kind => Some(Arc::new(LlmJudge::new(kind, &config.review.llm)?)),
        };
        let screener = if config.guard.enabled {
            let screener = Screener::new(&config.guard.rules)
                .map_err(|e| NodeError::Config(format!("[guard.rules]: {e}")))?;
            Some(Arc::new(screener))
        } else {
            tracing::warn!("write screening is off (guard.enabled = false): injected instructions will be stored and recalled like any memory");
            None
        };
        let reflector = Arc::new(NodeReflector::new(
            config.reflect.reflector,
            &config.review.llm,
        )?);
        let embedder = {
            let config = config.clone();
            tokio::task::spawn_blocking(move || embedding::build(&config))
                .await
                .map_err(NodeError::internal)??
        };

        let authenticator = Authenticator::new(&config.auth)?;
        let config_rate_limit = config.rate_limit.clone();
        let signer = crate::bank::integrity::signer(&config.integrity, &data_dir, &config.cluster)?;
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
        if let Some(signer) = &signer {
            cluster.set_key_check(signer.fingerprint());
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
                cluster,
                raft_groups,
                partitions,
                access: Mutex::new(HashMap::new()),
                tasks: Mutex::new(vec![]),
                llm_judge,
                reviewers: Reviewers::default(),
                screener,
                recent_writes: parking_lot::Mutex::default(),
                reflector,
                retrieval_log: Mutex::new(Some(retrieval_log)),
                feedback_serial: tokio::sync::Mutex::new(()),
                write_admission: WriteAdmission::new(config_rate_limit.max_pending_writes),
                access_control: Access::new(authenticator, RateLimiter::new(config_rate_limit)),
                signer,
                reservations: Arc::default(),
                link: std::sync::OnceLock::new(),
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

    pub fn config(&self) -> &NodeConfig {
        &self.inner.config
    }

    /// Texts this node asked its embedder to embed since it started (cache hits included): the
    /// writes it took, recall queries, review's vectors, and replicated writes whose log entry
    /// carried no vector this node could use.
    pub fn embedded_texts(&self) -> u64 {
        self.inner
            .banks
            .context()
            .embedded_texts
            .load(Ordering::Relaxed)
    }

    pub async fn write(&self, request: WriteRequest) -> Result<WriteOutcome, NodeError> {
        let mut outcomes = writer::write_batch(self, vec![request]).await?;
        outcomes
            .pop()
            .ok_or_else(|| NodeError::internal("write produced no outcome"))
    }

    /// All or nothing on validation: one bad item refuses the batch and nothing is stored.
    pub async fn write_batch(
        &self,
        requests: Vec<WriteRequest>,
    ) -> Result<Vec<WriteOutcome>, NodeError> {
        writer::write_batch(self, requests).await
    }

    pub async fn recall(&self, request: RecallRequest) -> Result<RecallResponse, NodeError> {
        search::recall(self, crate::access::OPEN_PRINCIPAL, request, None).await
    }

    /// [`Node::recall`] on behalf of an authenticated principal, whom the retrieval log names.
    pub async fn recall_as(
        &self,
        principal: &str,
        request: RecallRequest,
    ) -> Result<RecallResponse, NodeError> {
        search::recall(self, principal, request, None).await
    }

    /// [`Node::recall_as`] for one part of a recall over banks of several partitions: the part is
    /// logged under `recall`, the id the whole recall's caller got, so that feedback on any of its
    /// results finds it on the node that served that result.
    pub async fn recall_part_as(
        &self,
        principal: &str,
        request: RecallRequest,
        recall: RecallId,
    ) -> Result<RecallResponse, NodeError> {
        search::recall(self, principal, request, Some(recall)).await
    }

    /// Feedback on a memory that recall `recall` returned (see [`FeedbackReport`]).
    pub async fn feedback(
        &self,
        recall: RecallId,
        memory: MemoryId,
        outcome: FeedbackOutcome,
    ) -> Result<FeedbackReport, NodeError> {
        self.feedback_as(crate::access::OPEN_PRINCIPAL, recall, memory, outcome)
            .await
    }

    /// [`Node::feedback`] on behalf of an authenticated principal.
    pub async fn feedback_as(
        &self,
        principal: &str,
        recall: RecallId,
        memory: MemoryId,
        outcome: FeedbackOutcome,
    ) -> Result<FeedbackReport, NodeError> {
        learning::feedback(self, principal, recall, memory, outcome).await
    }

    /// Who sent `token` (every right when authentication is off), once its key's rate limit
    /// admits one more request.
    pub fn authenticate(&self, token: Option<&str>) -> Result<Principal, NodeError> {
        self.inner
            .access_control
            .authenticate(self.banks().metadata_reader(), token)
    }

    /// Charges an API key's rate limit for the memories of a batch beyond the one request
    /// [`Node::authenticate`] took, so that batching is no way round a tenant's limit. Callers
    /// without a key (a node without auth, the bootstrap admin) share one bucket that guards
    /// the node, not a tenant, and keep paying per request.
    pub fn charge_batch(&self, principal: &Principal, memories: usize) -> Result<(), NodeError> {
        self.inner.access_control.charge_batch(principal, memories)
    }

    /// A new API key for `principal`; the whole key is in the answer only.
    pub async fn create_api_key(
        &self,
        principal: &str,
        grants: Vec<Grant>,
    ) -> Result<IssuedKey, NodeError> {
        crate::access::create_key(self.banks(), principal, grants).await
    }

    pub async fn revoke_api_key(&self, id: &str) -> Result<ApiKey, NodeError> {
        crate::access::revoke_key(self.banks(), id).await
    }

    pub fn api_keys(&self) -> Result<Vec<ApiKey>, NodeError> {
        self.banks()
            .metadata_reader()
            .api_keys()
            .map_err(NodeError::internal)
    }

    /// Logged recalls matching `query`, newest first.
    pub fn recalls(&self, query: &RetrievalQuery) -> Result<Vec<RetrievalRecord>, NodeError> {
        learning::list(self, query)
    }

    pub fn recall_record(&self, recall: RecallId) -> Result<RetrievalRecord, NodeError> {
        learning::get(self, recall)
    }

    pub(crate) fn retrieval_log(&self) -> Result<Arc<RetrievalLog>, NodeError> {
        self.inner
            .retrieval_log
            .lock()
            .clone()
            .ok_or_else(|| NodeError::Unavailable("the node is shutting down".into()))
    }

    pub(crate) async fn feedback_lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.inner.feedback_serial.lock().await
    }

    /// The record, unless it failed its integrity check (then withheld: see [`Node::trace`]).
    /// Reads this node's copy as it is; [`Node::get_with`] can first catch up with the leader.
    pub async fn get(&self, id: MemoryId) -> Result<Memory, NodeError> {
        self.get_with(id, Consistency::Eventual).await
    }

    /// [`Node::get`], linearizable when asked: on any node it then sees every write acknowledged
    /// before the call.
    pub async fn get_with(
        &self,
        id: MemoryId,
        consistency: Consistency,
    ) -> Result<Memory, NodeError> {
        let memory = self.get_unverified(id, consistency).await?;
        self.verify(&memory)?;
        Ok(memory)
    }

    /// The record as stored, before its integrity check: for callers that check the reader's
    /// rights on its bank first, so that someone without them learns nothing, not even that a
    /// record there failed its check. Pass it to [`Node::verify`] before showing its content.
    pub async fn get_unverified(
        &self,
        id: MemoryId,
        consistency: Consistency,
    ) -> Result<Memory, NodeError> {
        let home = self.banks().home_of_memory(id)?;
        if consistency == Consistency::Linearizable {
            home.store
                .ensure_linearizable()
                .await
                .map_err(|e| NodeError::Unavailable(e.to_string()))?;
        }
        home.reader()
            .memory(id)
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::NotFound(format!("memory {id} not found")))
    }

    /// Refuses a record that fails its integrity check.
    pub fn verify(&self, memory: &Memory) -> Result<(), NodeError> {
        match self.integrity(memory) {
            Integrity::Failed(why) => Err(NodeError::Corrupted(format!(
                "memory {} failed its integrity check ({why}) and is withheld; `trace` shows it",
                memory.id
            ))),
            _ => Ok(()),
        }
    }

    /// A page of `bank`'s records in id order after `after`: up to `limit` records examined,
    /// those `keep` accepts returned, records failing their signature check withheld. The id to
    /// continue from is `None` on the last page. No access is recorded: listing is not use.
    pub async fn list_memories(
        &self,
        bank: &BankName,
        after: Option<MemoryId>,
        limit: usize,
        keep: impl Fn(&Memory) -> bool,
    ) -> Result<(Vec<Memory>, Option<MemoryId>), NodeError> {
        let home = self.banks().home_of_bank(bank)?;
        let reader = home.reader();
        if reader.bank(bank).map_err(NodeError::internal)?.is_none() {
            return Err(NodeError::NotFound(format!("bank {bank} does not exist")));
        }
        let page = reader
            .bank_memories_after(bank, after, limit)
            .map_err(NodeError::internal)?;
        let next = (page.len() == limit).then(|| page[limit - 1].id);
        let memories = page
            .into_iter()
            .filter(|m| keep(m) && !matches!(self.integrity(m), Integrity::Failed(_)))
            .collect();
        Ok((memories, next))
    }

    /// The signature check of a stored record.
    pub(crate) fn integrity(&self, memory: &Memory) -> Integrity {
        Integrity::check(self.inner.signer.as_ref(), memory)
    }

    /// The signature check of a record not stored here (yet), without counting or logging it.
    pub(crate) fn signature_of(&self, memory: &Memory) -> Integrity {
        Integrity::of(self.inner.signer.as_ref(), memory)
    }

    /// Signs a record about to be written (nothing when signatures are off).
    pub(crate) fn sign(&self, memory: &mut Memory) {
        if let Some(signer) = &self.inner.signer {
            memory.signature = Some(signer.sign(memory));
        }
    }

    pub async fn trace(&self, id: MemoryId) -> Result<Trace, NodeError> {
        let home = self.banks().home_of_memory(id)?;
        let reader = home.reader();
        let memory = reader
            .memory(id)
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::NotFound(format!("memory {id} not found")))?;
        let integrity = self.integrity(&memory).describe();
        let history = reader.history(id).map_err(NodeError::internal)?;
        let mut linked: Vec<MemoryId> = memory.support.derived_from.clone();
        if let Status::Superseded { by } = memory.status {
            linked.push(by);
        }
        let mut related = vec![];
        for other in linked {
            // Links only ever join records of one bank; one that leads elsewhere (an imported
            // record's crafted `derived_from`) is not followed, since the caller's rights were
            // checked on this bank alone.
            if let Some(m) = reader.memory(other).map_err(NodeError::internal)? {
                if m.bank == memory.bank {
                    related.push(m);
                }
            }
        }
        Ok(Trace {
            memory,
            history,
            related,
            integrity,
        })
    }

    /// Soft forget archives; hard forget deletes the record and everything derived from it.
    /// Returns the ids that changed.
    pub async fn forget(
        &self,
        id: MemoryId,
        hard: bool,
        reason: String,
    ) -> Result<Vec<MemoryId>, NodeError> {
        // A record that fails its integrity check can still be forgotten: removing it is what
        // an operator does with one.
        let memory = self.get_unverified(id, Consistency::Eventual).await?;
        let reason = if reason.trim().is_empty() {
            if hard {
                "hard delete requested"
            } else {
                "archived on request"
            }
            .to_string()
        } else {
            reason
        };
        let (log_index, outcome) = self
            .banks()
            .propose_for_bank(
                &memory.bank,
                Command::Forget {
                    id,
                    hard,
                    at: Timestamp::now(),
                    reason,
                },
            )
            .await?;
        let ids = match outcome {
            CommandOutcome::Forgotten { ids } => ids,
            other => return Err(outcome_error(other)),
        };
        let view = self.banks().bank_view(&memory.bank).await?;
        self.banks().wait_indexed(view, log_index).await?;
        Ok(ids)
    }

    /// Makes quarantined memory `id` active again at an admin's word (`principal`, `reason`).
    pub async fn release_quarantine(
        &self,
        id: MemoryId,
        principal: &str,
        reason: &str,
    ) -> Result<Memory, NodeError> {
        if reason.trim().is_empty() {
            return Err(NodeError::Invalid(
                hindsight_core::ValidationError::Invalid(
                    "a release from quarantine needs a reason: it is kept in the memory's history"
                        .into(),
                ),
            ));
        }
        let memory = self.get_unverified(id, Consistency::Eventual).await?;
        let (log_index, outcome) = self
            .banks()
            .propose_for_bank(
                &memory.bank,
                Command::ReleaseQuarantine {
                    id,
                    at: Timestamp::now(),
                    principal: principal.to_string(),
                    reason: reason.trim().to_string(),
                },
            )
            .await?;
        let released = match outcome {
            CommandOutcome::Released { memory } => *memory,
            other => return Err(outcome_error(other)),
        };
        let view = self.banks().bank_view(&memory.bank).await?;
        self.banks().wait_indexed(view, log_index).await?;
        tracing::warn!(%id, bank = %memory.bank, %principal, "memory released from quarantine");
        Ok(released)
    }

    pub async fn review(
        &self,
        bank: BankName,
        as_of: Option<Timestamp>,
    ) -> Result<ReviewReport, NodeError> {
        let reviewer = self.inner.reviewers.get(self, &bank).await?;
        match reviewer
            .call(|reply| ReviewerMsg::Run { as_of, reply }, None)
            .await
        {
            Ok(CallResult::Success(report)) => report,
            Ok(_) | Err(_) => Err(NodeError::Unavailable(format!(
                "the reviewer of {bank} stopped during the cycle; try again"
            ))),
        }
    }

    /// Turns a finished task's trace into at most five memories in `bank` (none when nothing is
    /// worth keeping); with `dry_run`, only says what it would keep.
    pub async fn reflect(
        &self,
        bank: BankName,
        trace: TaskTrace,
        task_id: Option<String>,
        dry_run: bool,
    ) -> Result<ReflectReport, NodeError> {
        reflecting::reflect(self, bank, trace, task_id, dry_run).await
    }

    /// Whether this node leads the Raft group, and so runs the scheduled and event reviews.
    pub fn is_leader(&self) -> bool {
        self.inner.banks.metadata_store().metrics().leader == Some(self.inner.config.node.id)
    }

    /// A write looked like it contradicts a memory of `bank`: its reviewer runs a cycle soon. The
    /// reviewers run on the leader, so a follower passes the hint on: over the actor link to the
    /// leader's review inbox, or, while the link holds no session to the leader, over the
    /// `ReviewHint` RPC.
    pub(crate) async fn hint_review(&self, bank: &BankName) {
        if self.leads_bank(bank) {
            self.hint_reviewer_here(bank).await;
            return;
        }
        let Ok(service) = self.bank_service(bank) else {
            return;
        };
        if let (Some(link), Some(address)) = (self.inner.link.get(), service.leader_address()) {
            if link.send_review_hint(&address, bank) {
                return;
            }
        }
        if let Err(e) = service.hint_leader(bank).await {
            tracing::debug!(%bank, error = %e, "review hint not delivered to the leader");
        }
    }

    /// Whether this node leads the group `bank` lives in, and so runs its scheduled and event
    /// reviews.
    pub(crate) fn leads_bank(&self, bank: &BankName) -> bool {
        self.banks()
            .home_of_bank(bank)
            .is_ok_and(|home| home.store.metrics().leader == Some(self.inner.config.node.id))
    }

    /// Hints from other members reach this node's reviewers (the service takes them only while
    /// this node leads). The service belongs to the node, so it holds the node weakly: a strong
    /// reference would keep the node from ever being dropped.
    fn listen_for_review_hints(&self) {
        let node = Arc::downgrade(&self.inner);
        let sink: ReviewHintSink = Arc::new(move |bank: BankName| {
            if let Some(inner) = node.upgrade() {
                let node = Node { inner };
                tokio::spawn(async move { node.hint_reviewer_here(&bank).await });
            }
        });
        self.inner.cluster.on_review_hint(sink.clone());
        if let Some(partitions) = &self.inner.partitions {
            partitions.on_review_hint(sink);
        }
    }

    /// Starts the actor link, takes the links peers open to this node, and dials the members it
    /// should hold a session with. A node whose link does not start still serves: its hints go
    /// over the `ReviewHint` RPC.
    async fn start_link(&self) {
        if matches!(
            self.inner.cluster.auth(),
            hindsight_cluster::TransportAuth::Refused(_)
        ) {
            return;
        }
        let node = Arc::downgrade(&self.inner);
        let handle: crate::routing::link::HintHandler = Arc::new(move |bank: BankName| {
            if let Some(inner) = node.upgrade() {
                let node = Node { inner };
                // Only the leader of the bank's group reviews it; a hint sent on a stale view of
                // who leads is dropped rather than passed on again.
                if node.leads_bank(&bank) {
                    tokio::spawn(async move { node.hint_reviewer_here(&bank).await });
                }
            }
        });
        let config = &self.inner.config;
        let link = match crate::routing::link::ActorLink::start(
            config.node.id,
            &config.cluster.secret,
            &config.advertise_addr(),
            handle,
        )
        .await
        {
            Ok(link) => link,
            Err(e) => {
                tracing::warn!(error = %e, "review hints go over the ReviewHint RPC only");
                return;
            }
        };
        if self.inner.link.set(link).is_err() {
            return;
        }
        let node = Arc::downgrade(&self.inner);
        self.inner.raft_groups.on_link(Arc::new(move |pipe, label| {
            if let Some(link) = node.upgrade().as_ref().and_then(|inner| inner.link.get()) {
                link.accept(pipe, label);
            }
        }));
        let node = self.clone();
        self.inner.tasks.lock().push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(crate::routing::link::DIAL_EVERY);
            loop {
                tick.tick().await;
                if let Some(link) = node.inner.link.get() {
                    link.dial_missing(node.cluster()).await;
                }
            }
        }));
    }

    /// The actor link's sessions and traffic; `None` when it is not running.
    pub async fn link_status(&self) -> Option<crate::routing::link::LinkStatus> {
        Some(self.inner.link.get()?.status().await)
    }

    async fn hint_reviewer_here(&self, bank: &BankName) {
        match self.inner.reviewers.get(self, bank).await {
            Ok(reviewer) => {
                let _ = reviewer.send_message(ReviewerMsg::Hint);
            }
            Err(e) => tracing::debug!(%bank, error = %e, "review hint dropped"),
        }
    }

    pub(crate) fn forget_reviewer(&self, bank: &BankName) {
        self.inner.reviewers.remove(bank);
    }

    /// The bank's queued conflicts; resolved ones too when asked.
    pub async fn conflicts(
        &self,
        bank: &BankName,
        include_resolved: bool,
    ) -> Result<Vec<Conflict>, NodeError> {
        conflicts::list(self, bank, include_resolved).await
    }

    /// Answers a queued conflict; returns it resolved and the memories that changed.
    pub async fn resolve_conflict(
        &self,
        bank: BankName,
        id: u64,
        outcome: ResolutionOutcome,
        note: String,
    ) -> Result<(Conflict, Vec<MemoryId>), NodeError> {
        conflicts::resolve(self, bank, id, outcome, note).await
    }

    pub async fn create_bank(
        &self,
        name: BankName,
        patch: BankPatch,
    ) -> Result<BankConfig, NodeError> {
        let home = self.banks().home_of_bank(&name)?;
        if home
            .reader()
            .bank(&name)
            .map_err(NodeError::internal)?
            .is_some()
        {
            return Err(NodeError::AlreadyExists(format!(
                "bank {name} already exists"
            )));
        }
        let config = apply_patch(
            self.inner
                .config
                .bank_defaults
                .bank_config(name, Timestamp::now()),
            patch,
        )?;
        let (_, outcome) = self
            .banks()
            .propose_to(
                &home,
                Command::CreateBank {
                    config: config.clone(),
                },
            )
            .await?;
        match outcome {
            CommandOutcome::BankCreated => Ok(config),
            CommandOutcome::Rejected { reason, .. } => Err(NodeError::AlreadyExists(reason)),
            other => Err(outcome_error(other)),
        }
    }

    pub async fn get_bank(&self, name: BankName) -> Result<BankInfo, NodeError> {
        let home = self.banks().home_of_bank(&name)?;
        let config = home
            .reader()
            .bank(&name)
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::NotFound(format!("bank {name} does not exist")))?;
        let memory_count = home
            .reader()
            .bank_memory_count(&name)
            .map_err(NodeError::internal)?;
        Ok(BankInfo {
            config,
            memory_count,
        })
    }

    pub async fn list_banks(&self) -> Result<Vec<BankInfo>, NodeError> {
        let mut banks = vec![];
        for home in self.banks().hosted_homes() {
            let reader = home.reader();
            for config in reader.banks().map_err(NodeError::internal)? {
                let memory_count = reader
                    .bank_memory_count(&config.name)
                    .map_err(NodeError::internal)?;
                banks.push(BankInfo {
                    config,
                    memory_count,
                });
            }
        }
        banks.sort_by(|a, b| a.config.name.cmp(&b.config.name));
        Ok(banks)
    }

    pub async fn update_bank(
        &self,
        name: BankName,
        patch: BankPatch,
    ) -> Result<BankConfig, NodeError> {
        let current = self.get_bank(name).await?.config;
        let mut config = apply_patch(current, patch)?;
        config.updated_at = Timestamp::now();
        let (log_index, outcome) = self
            .banks()
            .propose_for_bank(
                &config.name,
                Command::UpdateBank {
                    config: config.clone(),
                },
            )
            .await?;
        match outcome {
            CommandOutcome::BankUpdated => {
                if let Some(handle) = self.inner.banks.context().registry.get(&config.name) {
                    self.banks().wait_indexed(handle.view, log_index).await?;
                }
                Ok(config)
            }
            other => Err(outcome_error(other)),
        }
    }

    /// Deletes the bank and every memory in it. Returns how many memories were removed.
    pub async fn delete_bank(&self, name: BankName) -> Result<usize, NodeError> {
        let (_, outcome) = self
            .banks()
            .propose_for_bank(&name, Command::DeleteBank { name: name.clone() })
            .await?;
        match outcome {
            CommandOutcome::BankDeleted { memories_removed } => {
                self.inner.reviewers.remove(&name);
                let dir = self.inner.banks.context().index_dir(&name);
                if dir.exists() {
                    let _ = std::fs::remove_dir_all(dir);
                }
                Ok(memories_removed)
            }
            other => Err(outcome_error(other)),
        }
    }

    /// Heap bytes the loaded banks may hold together (`index.memory_budget_mb` or its default).
    pub fn memory_budget_bytes(&self) -> u64 {
        self.inner.config.index.memory_budget_bytes()
    }

    /// Heap bytes of `bank` on this node, by part (its records, then its indexes' parts); `None`
    /// when the bank is not loaded here.
    pub fn bank_heap_bytes(&self, bank: &BankName) -> Option<Vec<(&'static str, u64)>> {
        let handle = self.banks().context().registry.get(bank)?;
        Some(handle.view.heap_parts())
    }

    /// The loaded bank's vector index counters: how much of it its graph reaches.
    pub fn bank_vector_stats(&self, bank: &BankName) -> Option<hindsight_index::VectorStats> {
        let handle = self.banks().context().registry.get(bank)?;
        Some(handle.view.index.vectors().stats())
    }

    pub fn status(&self) -> NodeStatus {
        let metrics = self.inner.banks.metadata_store().metrics();
        NodeStatus {
            node_id: self.inner.config.node.id,
            leader_id: metrics.leader,
            term: metrics.term,
            last_log_index: metrics.last_log_index.unwrap_or(0),
            applied_index: metrics.applied_index.unwrap_or(0),
            banks_loaded: self.inner.banks.context().registry.len(),
            embedding_model: self.inner.banks.context().embedder.model_id().to_string(),
            store_bytes_on_disk: self.banks().metadata_reader().size_on_disk()
                + self
                    .banks()
                    .hosted_homes()
                    .iter()
                    .filter(|h| h.partition.is_some())
                    .map(|h| h.reader().size_on_disk())
                    .sum::<u64>(),
        }
    }

    /// True once the node serves requests: started, a member of a cluster (a node waiting to join
    /// has no data to serve yet), and its store still running.
    pub fn is_ready(&self) -> bool {
        self.inner.banks.readiness().load(Ordering::SeqCst)
            && self.is_member()
            && self.inner.banks.metadata_store().failure().is_none()
            && self.partition_failure().is_none()
    }

    /// Completes, with the reason, if a store stops on a fatal error such as a full disk: the
    /// metadata group's or a partition's. The node then takes no writes there; a restart, once
    /// the cause is fixed, recovers it from its log. A partition's store counts as much as the
    /// metadata one: left running, a node would go on answering for the partition from a store
    /// that can no longer read or write.
    pub async fn store_failed(&self) -> String {
        let metadata = self.inner.banks.metadata_store().failed();
        tokio::pin!(metadata);
        loop {
            tokio::select! {
                reason = &mut metadata => return reason,
                _ = tokio::time::sleep(PARTITION_FAILURE_CHECK) => {
                    if let Some(reason) = self.partition_failure() {
                        return reason;
                    }
                }
            }
        }
    }

    fn partition_failure(&self) -> Option<String> {
        self.inner.partitions.as_ref()?.failure()
    }

    /// The bank runtime: where banks live, their views, and proposing to their groups.
    pub(crate) fn banks(&self) -> &Banks {
        &self.inner.banks
    }

    /// Whether this node belongs to a cluster (as a voter or a learner).
    pub fn is_member(&self) -> bool {
        self.inner.banks.is_member()
    }

    /// The partition `bank` lives in; `None` without partitions.
    pub fn partition_of_bank(&self, bank: &BankName) -> Option<PartitionId> {
        self.inner.banks.partition_of_bank(bank)
    }

    /// The partition memory `id` lives in; `None` without partitions.
    pub fn partition_of_memory(&self, id: MemoryId) -> Option<PartitionId> {
        self.inner.banks.partition_of_memory(id)
    }

    /// The node-to-node service (served on the gRPC port) and membership operations.
    pub fn cluster(&self) -> &RaftTransportService {
        &self.inner.cluster
    }

    /// The node-to-node service of every Raft group hosted here, to mount on the gRPC port.
    pub fn raft_groups(&self) -> &RaftGroups {
        &self.inner.raft_groups
    }

    /// The partition replicas placed on this node; `None` unless `cluster.partitions` is set.
    pub fn partitions(&self) -> Option<&Partitions> {
        self.inner.partitions.as_deref().filter(|p| p.active())
    }

    /// Which nodes replicate each partition, as this node's replica of the metadata group holds
    /// it; `None` before the first placement (or without partitions).
    pub fn placement(&self) -> Result<Option<PlacementTable>, NodeError> {
        self.banks()
            .metadata_reader()
            .placement()
            .map_err(NodeError::internal)
    }

    /// An operator's move of partition `p`'s replica from node `from` to node `to`, proposed
    /// through the metadata group; the table now in force. See [`Partitions::move_replica`].
    pub async fn move_partition(
        &self,
        p: PartitionId,
        from: u64,
        to: u64,
    ) -> Result<PlacementTable, NodeError> {
        let partitions = self.partitions().ok_or_else(|| {
            NodeError::FailedPrecondition(
                "this cluster has no partitions (cluster.partitions = 0): every node holds every bank"
                    .into(),
            )
        })?;
        partitions
            .move_replica(
                self.inner.banks.metadata_store(),
                &self.inner.cluster,
                p,
                from,
                to,
            )
            .await
    }

    /// Makes requests that wait for this node's replica to catch up fail at once: the node is
    /// about to stop taking Raft traffic, so it would not catch up.
    pub fn begin_shutdown(&self) {
        self.inner.banks.metadata_store().begin_shutdown();
    }

    /// Flushes access statistics, dumps indexes and stops the actors and Raft.
    pub async fn shutdown(&self) {
        if !self.inner.banks.readiness().swap(false, Ordering::SeqCst) {
            return;
        }
        for task in self.inner.tasks.lock().drain(..) {
            task.abort();
        }
        // Access statistics are a hint: without a quorum they are dropped rather than holding
        // the shutdown up.
        let _ = tokio::time::timeout(SHUTDOWN_FLUSH_TIMEOUT, self.flush_access()).await;
        self.inner.reviewers.stop_all();
        if let Some(link) = self.inner.link.get() {
            link.stop();
        }
        if let Some(partitions) = &self.inner.partitions {
            partitions.close_all().await;
        }
        let _ = self
            .inner
            .banks
            .supervisor()
            .call(SupervisorMsg::DumpAll, Some(Duration::from_secs(60)))
            .await;
        self.inner.banks.supervisor().stop(None);
        if let Some(log) = self.inner.retrieval_log.lock().take() {
            if let Err(e) = log.flush() {
                tracing::warn!(error = %e, "retrieval log flush");
            }
        }
        if let Err(e) = self.inner.banks.metadata_store().shutdown().await {
            tracing::warn!(error = %e, "store shutdown");
        }
        tracing::info!("node {} stopped", self.inner.config.node.id);
    }

    /// Test hook: makes the bank's actor panic, as a bug would. Its supervisor restarts it.
    #[cfg(feature = "test-hooks")]
    pub async fn inject_bank_panic(&self, bank: &BankName) -> Result<(), NodeError> {
        let view = self.banks().bank_view(bank).await?;
        let handle = self
            .inner
            .banks
            .context()
            .registry
            .get(&view.name)
            .ok_or_else(|| NodeError::internal("bank stopped"))?;
        handle
            .actor
            .send_message(crate::bank::BankMsg::InjectPanic)
            .map_err(|e| NodeError::internal(e.to_string()))
    }

    // ---- used by the service modules ----

    /// The leader of the group `bank` lives in and a channel to it, when another node leads it.
    pub fn bank_leader_channel(
        &self,
        bank: &BankName,
    ) -> Result<Option<(u64, tonic::transport::Channel)>, NodeError> {
        self.bank_service(bank)?
            .leader_channel()
            .map_err(|e| NodeError::Unavailable(e.to_string()))
    }

    /// This node's node-to-node service of the group `bank` lives in.
    fn bank_service(&self, bank: &BankName) -> Result<RaftTransportService, NodeError> {
        match (self.partition_of_bank(bank), self.partitions()) {
            (Some(p), Some(partitions)) => partitions.service(p).ok_or_else(|| {
                NodeError::Unavailable(format!(
                    "bank {bank} lives in partition {p}, which this node holds no replica of"
                ))
            }),
            _ => Ok(self.inner.cluster.clone()),
        }
    }

    /// The nodes to hand a request about `partition` to when this node holds no replica of it,
    /// each with a channel, in the placement table's order (the preferred leader first). `None`
    /// when this node serves it: it holds a replica, or there are no partitions.
    pub fn owners_elsewhere(
        &self,
        partition: Option<PartitionId>,
    ) -> Result<Option<Vec<(u64, tonic::transport::Channel)>>, NodeError> {
        let (Some(p), Some(partitions)) = (partition, self.partitions()) else {
            return Ok(None);
        };
        if partitions.store(p).is_some() {
            return Ok(None);
        }
        let table = self.placement()?.ok_or_else(|| {
            NodeError::Unavailable(
                "the cluster has not placed its partitions yet; try again in a moment".into(),
            )
        })?;
        let members = self.inner.cluster.status().members;
        let mut owners = vec![];
        for id in table.replicas(p) {
            if let Some(member) = members.iter().find(|m| m.node_id == *id) {
                let channel = self
                    .inner
                    .cluster
                    .channel_to(&member.address)
                    .map_err(|e| NodeError::Unavailable(e.to_string()))?;
                owners.push((*id, channel));
            }
        }
        if owners.is_empty() {
            return Err(NodeError::Unavailable(format!(
                "no node of the cluster holds partition {p} now"
            )));
        }
        Ok(Some(owners))
    }

    pub(crate) fn reflector(&self) -> Arc<NodeReflector> {
        self.inner.reflector.clone()
    }

    pub(crate) fn screener(&self) -> Option<&Screener> {
        self.inner.screener.as_deref()
    }

    /// The screener, for work that outlives the borrow of the node (a recall's blocking part).
    pub(crate) fn shared_screener(&self) -> Option<Arc<Screener>> {
        self.inner.screener.clone()
    }

    pub(crate) fn recent_writes(&self) -> &parking_lot::Mutex<hindsight_guard::RecentWrites> {
        &self.inner.recent_writes
    }

    pub(crate) fn llm_judge(&self) -> Option<Arc<LlmJudge>> {
        self.inner.llm_judge.clone()
    }

    pub(crate) fn write_admission(&self) -> &WriteAdmission {
        &self.inner.write_admission
    }

    pub(crate) fn reservations(&self) -> &Arc<Reservations> {
        &self.inner.reservations
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

    pub(crate) fn note_access(&self, hits: &[RecallHit], at: Timestamp) {
        if hits.is_empty() {
            return;
        }
        let mut access = self.inner.access.lock();
        for hit in hits {
            let entry = access.entry(hit.memory.id).or_insert(AccessHit {
                id: hit.memory.id,
                count: 0,
                at,
                restore: false,
            });
            entry.count += 1;
            entry.at = entry.at.max(at);
        }
    }

    /// Brings archived memories a recall returned on purpose back to the live set, before the
    /// recall answers, so the caller's next recall sees them without asking.
    pub(crate) async fn restore(&self, ids: Vec<MemoryId>, at: Timestamp) -> Result<(), NodeError> {
        if ids.is_empty() {
            return Ok(());
        }
        let hits = ids
            .into_iter()
            .map(|id| AccessHit {
                id,
                count: 1,
                at,
                restore: true,
            })
            .collect();
        for (home, hits) in self.by_home(hits)? {
            self.banks()
                .propose_to(&home, Command::RecordAccess { hits })
                .await?;
        }
        Ok(())
    }

    /// Access hits grouped by the group their memories live in.
    fn by_home(&self, hits: Vec<AccessHit>) -> Result<Vec<(Home, Vec<AccessHit>)>, NodeError> {
        let mut groups: Vec<(Home, Vec<AccessHit>)> = vec![];
        for hit in hits {
            let home = self.banks().home_of_memory(hit.id)?;
            match groups
                .iter_mut()
                .find(|(h, _)| h.partition == home.partition)
            {
                Some((_, group)) => group.push(hit),
                None => groups.push((home, vec![hit])),
            }
        }
        Ok(groups)
    }

    async fn flush_access(&self) {
        let hits: Vec<AccessHit> = self.inner.access.lock().drain().map(|(_, h)| h).collect();
        if hits.is_empty() {
            return;
        }
        // Hits on memories whose partition moved away meanwhile are dropped: they are a hint.
        let hits = hits
            .into_iter()
            .filter(|hit| self.banks().home_of_memory(hit.id).is_ok())
            .collect();
        let Ok(groups) = self.by_home(hits) else {
            return;
        };
        for (home, hits) in groups {
            if let Err(e) = home.store.propose(Command::RecordAccess { hits }).await {
                tracing::debug!(error = %e, "access statistics not recorded");
            }
        }
    }

    fn spawn_background_tasks(&self) {
        let mut tasks = self.inner.tasks.lock();
        if let Some(partitions) = self.inner.partitions.clone() {
            let node = self.clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(PLACEMENT_CHECK_EVERY);
                loop {
                    tick.tick().await;
                    partitions
                        .reconcile(node.inner.banks.metadata_store(), &node.inner.cluster)
                        .await;
                }
            }));
        }
        let node = self.clone();
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(ACCESS_FLUSH_EVERY);
            loop {
                tick.tick().await;
                node.flush_access().await;
                // The retrieval log's store does not flush in the background (see
                // crates/hindsight-store/src/sled_gate.rs): a crash loses at most this interval.
                if let Ok(log) = node.retrieval_log() {
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

fn apply_patch(mut config: BankConfig, patch: BankPatch) -> Result<BankConfig, NodeError> {
    if let Some(v) = patch.description {
        config.description = v;
    }
    if let Some(v) = patch.min_confidence {
        config.min_confidence = v;
    }
    if let Some(v) = patch.dedup_threshold {
        config.dedup_threshold = v;
    }
    if let Some(v) = patch.working_ttl_secs {
        config.working_ttl_secs = v;
    }
    if let Some(v) = patch.collapse_threshold {
        config.collapse_threshold = v;
    }
    if let Some(v) = patch.weights {
        config.weights = v;
    }
    if let Some(v) = patch.max_memories {
        config.max_memories = v;
    }
    if let Some(v) = patch.strategies {
        config.strategies = Some(v);
    }
    if let Some(v) = patch.require_corroboration {
        config.require_corroboration = v;
    }
    if let Some(v) = patch.max_bytes {
        config.max_bytes = v;
    }
    config.validate()?;
    Ok(config)
}

pub(crate) fn outcome_error(outcome: CommandOutcome) -> NodeError {
    match outcome {
        CommandOutcome::Rejected {
            reason,
            not_found: true,
        } => NodeError::NotFound(reason),
        CommandOutcome::Rejected { reason, .. } => NodeError::FailedPrecondition(reason),
        other => NodeError::internal(format!("unexpected outcome: {other:?}")),
    }
}
