//! The command-line grammar. Acceptance scripts depend on these spellings.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::bench::BenchArgs;
use crate::eval::EvalArgs;
use crate::mcp::McpArgs;

#[derive(Debug, Parser)]
#[command(
    name = "hindsight",
    version,
    about = "Hindsight: layered memory for LLM agents, with review after the fact"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a node: the store, the indexes and the gRPC and HTTP servers.
    Serve(ServeArgs),
    /// Print a shell completion script: `hindsight completion bash > /etc/bash_completion.d/hindsight`.
    Completion(CompletionArgs),
    /// Store one memory.
    Write(WriteArgs),
    /// Find memories for a query.
    Recall(RecallArgs),
    /// Show one memory.
    Get(IdArgs),
    /// Show a memory with its history and the records it links to.
    Trace(IdArgs),
    /// Archive a memory, or with --hard delete it and everything derived from it.
    Forget(ForgetArgs),
    /// Release a quarantined memory (admin on its bank): it becomes active, and the reason and
    /// who gave it go in its history.
    Release(ReleaseArgs),
    /// Run the hindsight review of a bank now.
    Review(ReviewArgs),
    /// Turn a finished task's trace into memories (at most five; none when nothing is worth keeping).
    Reflect(ReflectArgs),
    /// List or settle the contradictions the review left for a person.
    #[command(subcommand)]
    Conflicts(ConflictsCommand),
    /// Create, show, list, change and delete banks.
    #[command(subcommand)]
    Bank(BankCommand),
    /// Show the node's state.
    Status(StatusArgs),
    /// Show the Raft cluster: members, leader, term, indexes and each follower's lag; with
    /// partitions, also where the placement table puts each one and what this node's replica sees.
    Cluster(StatusArgs),
    /// Make a node started with cluster.bootstrap = false the first member of a new cluster.
    Init(StatusArgs),
    /// Have a node (--server) join the cluster that SEED belongs to: learner, then voter.
    Join(JoinArgs),
    /// Remove a node from its cluster (by default the one --server points at).
    Leave(LeaveArgs),
    /// With cluster.partitions set: list the partitions, or move a replica to another node.
    #[command(subcommand)]
    Partition(PartitionCommand),
    /// Say what became of a memory a recall returned: used, helpful, wrong or harmful.
    Feedback(FeedbackArgs),
    /// The retrieval log: what was recalled, by whom, what came back and why.
    #[command(subcommand)]
    Log(LogCommand),
    /// Create, list and revoke API keys (needs an admin key).
    #[command(subcommand)]
    Key(KeyCommand),
    /// Replay a lifecycle benchmark and score the results.
    Eval(EvalArgs),
    /// Measure write and recall throughput and latency.
    Bench(BenchArgs),
    /// Serve the memory tools to an MCP host over stdin/stdout, against a running node.
    Mcp(McpArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TOML configuration file; HINDSIGHT_<SECTION>_<KEY> variables override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where the node keeps its data (default: ./data).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Address of the gRPC server (default: 127.0.0.1:7400).
    #[arg(long, value_name = "HOST:PORT")]
    pub grpc_addr: Option<SocketAddr>,
    /// Address of the HTTP server with /health and /ready (default: 127.0.0.1:7401).
    #[arg(long, value_name = "HOST:PORT")]
    pub http_addr: Option<SocketAddr>,
    /// This node's id in its cluster (default: 1); stable for the life of its data directory.
    #[arg(long, value_name = "ID")]
    pub node_id: Option<u64>,
    /// The gRPC address peers reach this node at (default: --grpc-addr).
    #[arg(long, value_name = "HOST:PORT")]
    pub advertise: Option<String>,
    /// Join the cluster these members (comma-separated HOST:PORT) belong to, instead of starting
    /// a cluster of one on a fresh data directory.
    #[arg(long, value_name = "HOST:PORT,...")]
    pub join: Option<String>,
}

/// How a client command reaches the server and prints its answer.
#[derive(Debug, Args)]
pub struct ClientOpts {
    /// gRPC address of the server.
    #[arg(
        long,
        env = "HINDSIGHT_SERVER",
        default_value = "127.0.0.1:7400",
        value_name = "HOST:PORT"
    )]
    pub server: String,
    /// The API key to send, when the server requires one (`hs_<id>_<secret>`).
    #[arg(
        long,
        env = "HINDSIGHT_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub api_key: Option<String>,
    /// PEM file of the CA that signed the server's certificate: connect over TLS.
    #[arg(long, env = "HINDSIGHT_TLS_CA", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// This client's certificate (PEM), for a server that requires mutual TLS.
    #[arg(
        long,
        env = "HINDSIGHT_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The key of --tls-cert (PEM).
    #[arg(
        long,
        env = "HINDSIGHT_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Print JSON instead of a table (the same as --output json).
    #[arg(long = "json")]
    pub json_flag: bool,
    /// How to print the answer.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output: Option<OutputFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Columns for a person.
    Table,
    /// One JSON document, for scripts.
    Json,
    /// Only the id the command produced, for a shell variable: a write's memory, a recall's
    /// entry in the retrieval log. Other commands print their table.
    Id,
}

impl ClientOpts {
    /// Whether to print JSON: `--json`, or `--output json` (an explicit `--output table` wins).
    pub fn json(&self) -> bool {
        match self.output {
            Some(format) => format == OutputFormat::Json,
            None => self.json_flag,
        }
    }

    /// Whether to print only the id the command produced (`--output id`).
    pub fn id_only(&self) -> bool {
        self.output == Some(OutputFormat::Id)
    }

    /// A connection to the server that sends the API key, if one was given.
    pub async fn connect(&self) -> anyhow::Result<hindsight_api::HindsightClient> {
        let client = hindsight_api::HindsightClient::connect_with(
            &self.server,
            hindsight_api::DEFAULT_CONNECT_TIMEOUT,
            self.tls()?,
        )
        .await?;
        Ok(client.with_api_key(self.api_key.as_deref())?)
    }

    /// The TLS settings the flags ask for; `None` for plaintext.
    pub fn tls(&self) -> anyhow::Result<Option<hindsight_api::ClientTls>> {
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))
        };
        let Some(ca) = &self.tls_ca else {
            if self.tls_cert.is_some() {
                anyhow::bail!(
                    "--tls-cert needs --tls-ca (the CA that signed the server's certificate)"
                );
            }
            return Ok(None);
        };
        let identity = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some((read(cert)?, read(key)?)),
            _ => None,
        };
        Ok(Some(hindsight_api::ClientTls {
            ca_pem: read(ca)?,
            identity,
            domain: None,
        }))
    }
}

#[derive(Debug, Args)]
pub struct WriteArgs {
    /// The bank to write to, e.g. acme/agent-7.
    #[arg(long)]
    pub bank: String,
    /// The memory's text; `-` reads it from standard input.
    #[arg(long)]
    pub content: String,
    /// working, episodic or semantic (default: semantic).
    #[arg(long)]
    pub kind: Option<String>,
    /// For semantic memories: fact, preference, procedure, lesson or rule.
    #[arg(long)]
    pub subtype: Option<String>,
    /// Who stated it: user, tool, agent, reflection or import.
    #[arg(long, default_value = "user")]
    pub source: String,
    /// The tool that returned it (with --source tool).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The agent that wrote it.
    #[arg(long)]
    pub agent_id: Option<String>,
    /// The conversation or session it came from.
    #[arg(long)]
    pub session_id: Option<String>,
    /// The task it belongs to.
    #[arg(long)]
    pub task_id: Option<String>,
    /// The tool call that returned it.
    #[arg(long)]
    pub tool_call_id: Option<String>,
    /// When it happened: RFC 3339, or back from now like `2d ago`, `3h`, `yesterday` (default: now).
    #[arg(long, value_name = "TIME")]
    pub occurred_at: Option<String>,
    /// Expire this many seconds after it happened.
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<u64>,
    /// A tag; repeat for several.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Metadata entry; repeat for several.
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = key_value)]
    pub metadata: Vec<(String, String)>,
    /// 0..1 (default: set by the server).
    #[arg(long)]
    pub importance: Option<f32>,
    /// 0..1 (default: by source).
    #[arg(long)]
    pub confidence: Option<f32>,
    /// Exempt from decay.
    #[arg(long)]
    pub critical: bool,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct RecallArgs {
    /// A bank to search; repeat to search several.
    #[arg(long = "bank", value_name = "BANK", required = true)]
    pub banks: Vec<String>,
    /// What to look for, in any language.
    #[arg(long)]
    pub query: String,
    /// How many results (default: 10).
    #[arg(long)]
    pub top_k: Option<u32>,
    /// Recall the bank as it was at this time: RFC 3339, or back from now like `1d ago`, `90s`
    /// (default: now).
    #[arg(long, value_name = "TIME")]
    pub as_of: Option<String>,
    /// Stop once the results' contents reach this many tokens.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Also return superseded, falsified, expired and archived memories.
    #[arg(long)]
    pub include_history: bool,
    /// Also return archived memories, whatever their confidence; those returned are restored.
    #[arg(long)]
    pub include_archived: bool,
    /// Only this kind; repeat for several.
    #[arg(long = "kind", value_name = "KIND")]
    pub kinds: Vec<String>,
    /// Only memories with this tag; repeat to require several.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Override the banks' minimum confidence.
    #[arg(long)]
    pub min_confidence: Option<f32>,
    /// What the memories are for: facts, how_to, past_cases, preferences or any.
    #[arg(long)]
    pub intent: Option<String>,
    /// Who is asking, e.g. "support agent"; memories written for that role count more.
    #[arg(long)]
    pub role: Option<String>,
    /// The case at hand as KEY=VALUE (user_id=42, task_type=refund); repeat for several.
    #[arg(long = "context", value_name = "KEY=VALUE")]
    pub context: Vec<String>,
    /// `linearizable` (the default: sees every acknowledged write) or `eventual` (this node's
    /// replica as it is, without asking the leader).
    #[arg(long, value_enum)]
    pub consistency: Option<ReadConsistency>,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// A new key for a principal; the key is printed once and stored only as a hash.
    Create(KeyCreateArgs),
    /// Every key with its principal, grants and state (never the secrets).
    List(KeyListArgs),
    /// The key stops working at once.
    Revoke(KeyRevokeArgs),
}

#[derive(Debug, Args)]
pub struct KeyCreateArgs {
    /// Who the key speaks for, e.g. support-bot.
    #[arg(long)]
    pub principal: String,
    /// PATTERN=RIGHT, e.g. acme/team-*=write (read, write or admin); repeat for several.
    #[arg(long = "grant", value_name = "PATTERN=RIGHT", required = true)]
    pub grants: Vec<String>,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct KeyListArgs {
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct KeyRevokeArgs {
    /// The key's id (the part after hs_ and before the next _).
    pub id: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct FeedbackArgs {
    /// The recall id a recall printed.
    pub recall_id: String,
    /// The memory id among that recall's results.
    pub memory_id: String,
    /// used, helpful, wrong or harmful.
    pub outcome: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Logged recalls, newest first.
    List(LogListArgs),
    /// One recall with its results, their explanations and the feedback given.
    Show(LogShowArgs),
    /// Logged recalls as JSON lines, one per recall, for offline analysis.
    Export(LogExportArgs),
}

#[derive(Debug, Args)]
pub struct LogFilterArgs {
    /// Only recalls over this bank.
    #[arg(long)]
    pub bank: Option<String>,
    /// Only recalls whose query contains this text.
    #[arg(long)]
    pub query: Option<String>,
    /// Only recalls made at or after this time: RFC 3339, or `yesterday`, `today`, `24h`, `7d`.
    #[arg(long)]
    pub since: Option<String>,
    /// Only recalls made before this time (same forms as --since).
    #[arg(long)]
    pub until: Option<String>,
    /// At most this many recalls (default: 50; up to 1000).
    #[arg(long)]
    pub limit: Option<u32>,
}

#[derive(Debug, Args)]
pub struct LogListArgs {
    #[command(flatten)]
    pub filter: LogFilterArgs,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct LogShowArgs {
    pub recall_id: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct LogExportArgs {
    #[command(flatten)]
    pub filter: LogFilterArgs,
    /// Write here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    /// The memory id (a ULID).
    pub id: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The memory id (a ULID).
    pub id: String,
    /// Delete instead of archive, with everything derived from it.
    #[arg(long)]
    pub hard: bool,
    /// Kept in the record's history.
    #[arg(long)]
    pub reason: Option<String>,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The memory id (a ULID).
    pub id: String,
    /// Why the memory is safe after all; kept in its history.
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// The bank to review.
    #[arg(long)]
    pub bank: String,
    /// Review as of this time: RFC 3339, or back from now like `1d ago` (default: now).
    #[arg(long, value_name = "TIME")]
    pub as_of: Option<String>,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct ReflectArgs {
    /// The bank the memories go to.
    #[arg(long)]
    pub bank: String,
    /// The trace as JSON: {"goal", "steps", "tool_calls": [{"tool", "arguments", "result",
    /// "error"}], "outcome": "succeeded|failed|partial", "feedback", "lang"}; "-" reads stdin.
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// Recorded in each memory's provenance.
    #[arg(long)]
    pub task_id: Option<String>,
    /// Show what would be kept without writing anything.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Subcommand)]
pub enum ConflictsCommand {
    /// Show the bank's open conflicts (with --all, resolved ones too).
    List(ConflictListArgs),
    /// Settle a conflict: keep_a, keep_b, keep_both or discard_both.
    Resolve(ConflictResolveArgs),
}

#[derive(Debug, Args)]
pub struct ConflictListArgs {
    #[arg(long)]
    pub bank: String,
    /// Include resolved conflicts.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct ConflictResolveArgs {
    #[arg(long)]
    pub bank: String,
    /// The conflict's id, as `conflicts list` shows it.
    pub id: u64,
    /// keep_a, keep_b, keep_both or discard_both.
    #[arg(long)]
    pub outcome: String,
    /// Kept in both memories' history.
    #[arg(long, default_value = "")]
    pub note: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Subcommand)]
pub enum BankCommand {
    /// Create a bank; settings not given take the node's defaults.
    Create(BankEditArgs),
    /// Show a bank's settings and size.
    Get(BankNameArgs),
    /// List every bank.
    List(StatusArgs),
    /// Change a bank's settings; settings not given stay as they are.
    Update(BankEditArgs),
    /// Delete a bank and every memory in it.
    Delete(BankNameArgs),
    /// Write a bank to a JSON lines file: its settings, every memory with its history, and its
    /// conflict queue.
    Export(BankExportArgs),
    /// Load a file from `bank export` into a new bank (the exported one's name unless --bank).
    Import(BankImportArgs),
}

#[derive(Debug, Args)]
pub struct BankExportArgs {
    /// The bank name, e.g. acme/agent-7.
    pub name: String,
    /// The file to write; standard output when not given.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct BankImportArgs {
    /// A file written by `hindsight bank export`.
    pub file: PathBuf,
    /// Import under this name instead of the exported bank's. Memory ids are kept, so this moves
    /// a bank (to another node, or after deleting the original); it does not copy one.
    #[arg(long)]
    pub bank: Option<String>,
    /// Sign records whose signatures this node cannot verify (changed since the export, or
    /// exported by a node with another record key) instead of refusing the import.
    #[arg(long)]
    pub resign: bool,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct BankNameArgs {
    /// The bank name, e.g. acme/agent-7.
    pub name: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct BankEditArgs {
    /// The bank name, e.g. acme/agent-7.
    pub name: String,
    #[command(flatten)]
    pub settings: BankSettings,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct BankSettings {
    /// What the bank is for.
    #[arg(long)]
    pub description: Option<String>,
    /// Recall hides memories below this confidence.
    #[arg(long)]
    pub min_confidence: Option<f32>,
    /// Similarity at or above which a write merges into an existing memory.
    #[arg(long)]
    pub dedup_threshold: Option<f32>,
    /// Default lifetime of working memories.
    #[arg(long, value_name = "SECONDS")]
    pub working_ttl: Option<u64>,
    /// Recall collapses results at least this similar.
    #[arg(long)]
    pub collapse_threshold: Option<f32>,
    /// Weight of relevance in the recall score.
    #[arg(long)]
    pub weight_relevance: Option<f32>,
    /// Weight of confidence in the recall score.
    #[arg(long)]
    pub weight_confidence: Option<f32>,
    /// Weight of freshness in the recall score.
    #[arg(long)]
    pub weight_freshness: Option<f32>,
    /// Freshness of events (episodic, working) is exp(-age_days / freshness_days).
    #[arg(long)]
    pub freshness_days: Option<f32>,
    /// Freshness of semantic memory is exp(-age_days / fact_freshness_days).
    #[arg(long)]
    pub fact_freshness_days: Option<f32>,
    /// Live memories the bank may hold before review archives the least useful; 0: no quota.
    #[arg(long, value_name = "N")]
    pub max_memories: Option<u64>,
    /// Content bytes (UTF-8) the bank may hold in live and quarantined memories; a write past it
    /// is refused. 0: no quota.
    #[arg(long, value_name = "BYTES")]
    pub max_bytes: Option<u64>,
    /// Recall leaves out memories from low-trust sources that nothing corroborates (true), or
    /// returns them flagged uncorroborated (false).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub require_corroboration: Option<bool>,
    /// A conflict strategy of this bank, e.g. temporal=pending_review or dispute_factor=0.6
    /// (names as in [review.strategies]); repeat for several. The others keep the bank's values.
    #[arg(long = "strategy", value_name = "KEY=VALUE", value_parser = key_value)]
    pub strategies: Vec<(String, String)>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// HOST:PORT (gRPC) of any member of the cluster to join.
    #[arg(value_name = "SEED")]
    pub seed: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Args)]
pub struct LeaveArgs {
    /// The node to remove; default: the node --server points at.
    #[arg(long, value_name = "ID")]
    pub node_id: Option<u64>,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Debug, Subcommand)]
pub enum PartitionCommand {
    /// Every partition: the nodes the placement table puts it on and, for those the node
    /// --server points at holds, the leader, members and whether a move is under way.
    List(StatusArgs),
    /// Move one replica of a partition from a node to another; the partition's leader copies it
    /// to the new node before it drops the old replica. The move stands until the cluster's
    /// nodes change.
    Move(PartitionMoveArgs),
}

#[derive(Debug, Args)]
pub struct PartitionMoveArgs {
    /// The partition, as `hindsight partition list` numbers it.
    #[arg(value_name = "PARTITION")]
    pub partition: u32,
    /// The node that gives up its replica.
    #[arg(long, value_name = "ID")]
    pub from: u64,
    /// The node that receives one (a voting member that does not hold the partition).
    #[arg(long, value_name = "ID")]
    pub to: u64,
    #[command(flatten)]
    pub client: ClientOpts,
}

fn key_value(s: &str) -> Result<(String, String), String> {
    let (key, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not KEY=VALUE"))?;
    Ok((key.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_grammar_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn acceptance_spellings_parse() {
        let cli = Cli::try_parse_from([
            "hindsight",
            "recall",
            "--bank",
            "a/b",
            "--bank",
            "c",
            "--query",
            "q",
            "--top-k",
            "3",
            "--as-of",
            "2026-01-01T00:00:00Z",
            "--max-tokens",
            "100",
            "--include-history",
            "--kind",
            "semantic",
            "--json",
        ])
        .unwrap();
        let Command::Recall(args) = cli.command else {
            panic!("not a recall")
        };
        assert_eq!(args.banks, ["a/b", "c"]);
        assert!(args.client.json());
        let output = |flags: &[&str]| {
            let mut argv = vec!["hindsight", "status"];
            argv.extend_from_slice(flags);
            let Command::Status(args) = Cli::try_parse_from(argv).unwrap().command else {
                panic!("not status")
            };
            args.client.json()
        };
        assert!(output(&["--output", "json"]));
        assert!(!output(&["--output", "table"]));
        assert!(!output(&["--json", "--output", "table"]));
        assert!(!output(&[]));
        assert!(Cli::try_parse_from(["hindsight", "status", "--output", "xml"]).is_err());
        assert!(Cli::try_parse_from(["hindsight", "completion", "bash"]).is_ok());

        assert!(Cli::try_parse_from([
            "hindsight",
            "eval",
            "data/set",
            "--out",
            "r.jsonl",
            "--server",
            "127.0.0.1:7400",
            "--min-success",
            "dedup=0.8",
            "--min-success",
            "poisoning=1",
        ])
        .is_ok());
        assert!(Cli::try_parse_from([
            "hindsight",
            "bench",
            "--memories",
            "10",
            "--queries",
            "5",
            "--batch",
            "2",
            "--bank",
            "b/x",
            "--data-dir",
            "/tmp/x",
        ])
        .is_ok());
    }
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadConsistency {
    Linearizable,
    Eventual,
}
