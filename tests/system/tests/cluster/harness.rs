//! The shared harness: a member node with its own store on disk and its own gRPC and HTTP servers
//! on loopback, clusters of three, and the limits and turns every test runs under.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use hindsight_core::{BankName, MemoryId, Provenance, SourceKind, WriteRequest};
use hindsight_node::{BankPatch, EmbeddingProvider, Node, NodeConfig};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub(crate) const SECRET: &str = "cluster-test-secret-0123456789abcdef";
const BANK: &str = "fleet";

pub(crate) struct Member {
    pub(crate) id: u64,
    pub(crate) node: Node,
    pub(crate) grpc: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
}

impl Member {
    /// Starts node `id` with its data under `root`; `join` names a member to join through.
    pub(crate) async fn start(
        root: &Path,
        id: u64,
        grpc: Option<SocketAddr>,
        join: Option<SocketAddr>,
    ) -> Member {
        Member::start_with(root, id, grpc, join, |_| {}).await
    }

    /// As [`Member::start`], with `configure` applied to the node's configuration last.
    pub(crate) async fn start_with(
        root: &Path,
        id: u64,
        grpc: Option<SocketAddr>,
        join: Option<SocketAddr>,
        configure: impl FnOnce(&mut NodeConfig),
    ) -> Member {
        let grpc_listener =
            TcpListener::bind(grpc.unwrap_or_else(|| "127.0.0.1:0".parse().unwrap()))
                .await
                .unwrap();
        let http_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc = grpc_listener.local_addr().unwrap();
        let mut config = NodeConfig::default();
        config.node.id = id;
        config.node.data_dir = root.join(format!("node-{id}"));
        config.node.grpc_addr = grpc.to_string();
        config.node.http_addr = http_listener.local_addr().unwrap().to_string();
        config.embedding.provider = EmbeddingProvider::Hashing;
        config.review.interval_secs = 0;
        config.review.on_likely_conflict = false;
        config.cluster.secret = SECRET.into();
        if let Some(seed) = join {
            config.cluster.join = seed.to_string();
        }
        configure(&mut config);
        let node = within(
            &format!("node {id} to start"),
            STEP_LIMIT,
            Node::start(config),
        )
        .await
        .expect("node starts");
        let (stop, stopped) = oneshot::channel::<()>();
        let served = node.clone();
        let server = tokio::spawn(async move {
            let _ =
                hindsight_api::serve_with_listeners(served, grpc_listener, http_listener, async {
                    let _ = stopped.await;
                })
                .await;
        });
        Member {
            id,
            node,
            grpc,
            stop: Some(stop),
            server: Some(server),
        }
    }

    /// Stops the servers and the node, as a SIGTERM would.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = within(
                &format!("node {}'s servers to stop", self.id),
                STEP_LIMIT,
                server,
            )
            .await;
        }
        within(
            &format!("node {} to shut down", self.id),
            STEP_LIMIT,
            self.node.shutdown(),
        )
        .await;
    }
}

pub(crate) fn bank() -> BankName {
    BANK.parse().unwrap()
}

pub(crate) fn write(content: &str) -> WriteRequest {
    WriteRequest::new(bank(), content, Provenance::from_source(SourceKind::User))
}

/// No step of these tests may wait longer than this: a step that hangs fails the test, naming
/// the step, instead of holding up the whole test run.
pub(crate) const STEP_LIMIT: Duration = Duration::from_secs(90);
pub(crate) const TEST_LIMIT: Duration = Duration::from_secs(300);

pub(crate) async fn within<T>(
    what: &str,
    limit: Duration,
    step: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(limit, step)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
}

/// Tests take turns through this: most share it, the partition test (dozens of sled databases in
/// one process) takes it alone. sled 0.34 guards every database of a process with one lock once
/// any of them applies a batch, and two tests' nodes flushing many databases at once have
/// deadlocked on it (crates/hindsight-store/DESIGN.md, "sled's process-wide lock").
static TURNS: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Ends the whole test process if a test is still running after `limit`. A deadlock that blocks
/// the runtime's threads would also stop the timers behind [`within`], and a hung test would hold
/// up every later one. Returns the test's turn, shared with the other tests.
/// Logs to the test's output when `RUST_LOG` asks for it, to diagnose a failing run.
fn log_if_asked() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

pub(crate) async fn watchdog(
    test: &'static str,
    limit: Duration,
) -> tokio::sync::RwLockReadGuard<'static, ()> {
    let turn = TURNS.read().await;
    stop_after(test, limit);
    turn
}

/// [`watchdog`], with the turn taken alone.
pub(crate) async fn watchdog_alone(
    test: &'static str,
    limit: Duration,
) -> tokio::sync::RwLockWriteGuard<'static, ()> {
    let turn = TURNS.write().await;
    stop_after(test, limit);
    turn
}

fn stop_after(test: &'static str, limit: Duration) {
    log_if_asked();
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        // Straight to stderr: the test harness captures what `eprintln!` prints, and loses it
        // when the process exits.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "{test} still running after {limit:?}: stopping the test process"
        );
        std::process::exit(101);
    });
}

pub(crate) async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn voters(member: &Member) -> BTreeSet<u64> {
    member.node.cluster_status().voters()
}

/// Three nodes: node 1 starts the cluster, 2 and 3 join through it.
pub(crate) async fn three(root: &Path) -> Vec<Member> {
    three_with(root, |_| {}).await
}

pub(crate) async fn three_with(root: &Path, configure: impl Fn(&mut NodeConfig)) -> Vec<Member> {
    three_each(root, |_, config| configure(config)).await
}

/// Like [`three_with`], with each node's configuration set by its id.
pub(crate) async fn three_each(
    root: &Path,
    configure: impl Fn(u64, &mut NodeConfig),
) -> Vec<Member> {
    let first = Member::start_with(root, 1, None, None, |c| configure(1, c)).await;
    let seed = first.grpc;
    let mut members = vec![first];
    for id in [2, 3] {
        members.push(Member::start_with(root, id, None, Some(seed), |c| configure(id, c)).await);
    }
    wait_until("three voters", Duration::from_secs(30), || {
        voters(&members[0]).len() == 3
    })
    .await;
    within(
        "creating the bank",
        STEP_LIMIT,
        members[1].node.create_bank(bank(), BankPatch::default()),
    )
    .await
    .expect("a follower creates the bank through the leader");
    members
}

pub(crate) async fn write_distinct(node: &Node, n: usize, tag: &str) -> Vec<MemoryId> {
    let mut ids = vec![];
    for i in 0..n {
        let content = format!(
            "{tag} record {i}: the {} ledger of port {}",
            ["amber", "cobalt", "ivory", "jade"][i % 4],
            7000 + i * 13
        );
        let outcome = within("a write", STEP_LIMIT, node.write(write(&content)))
            .await
            .expect("write acknowledged");
        ids.push(outcome.id);
    }
    ids
}

/// The member that leads, taken out of `members`.
pub(crate) fn take_leader(members: &mut Vec<Member>) -> Member {
    let leader_id = members[0]
        .node
        .cluster_status()
        .leader_id
        .expect("a leader");
    let index = members
        .iter()
        .position(|m| m.id == leader_id)
        .expect("the leader is a member");
    members.remove(index)
}

pub(crate) async fn stop_all(members: Vec<Member>) {
    for m in members {
        m.stop().await;
    }
}
