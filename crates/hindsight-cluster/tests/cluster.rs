//! Nodes of one cluster in this process, each with its own store on disk and its own gRPC and
//! HTTP servers on loopback: every node-to-node message crosses a real gRPC connection.
//! `tests/chaos/run` does the same with separate processes, kill -9 and partitions.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use hindsight_api::pb;
use hindsight_api::pb::memory_service_client::MemoryServiceClient;
use hindsight_cluster::pb::raft_transport_client::RaftTransportClient;
use hindsight_cluster::pb::{ClusterStatusRequest, LinkFrame, RaftMessage};
use hindsight_cluster::{
    GrpcLeaderLink, GrpcNetwork, Peers, PeersConfig, RaftGroups, RaftTransportService,
    TransportAuth, SECRET_HEADER,
};
use hindsight_core::placement::partition_of;
use hindsight_core::{
    BankConfig, BankName, Command, Consistency, MemoryId, Provenance, RecallRequest, SourceKind,
    Status, Timestamp, WriteRequest,
};
use hindsight_node::{BankPatch, EmbeddingProvider, Node, NodeConfig};
use hindsight_store::{NoopListener, StoreConfig, StoreHandle};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const SECRET: &str = "cluster-test-secret-0123456789abcdef";
const BANK: &str = "fleet";

struct Member {
    id: u64,
    node: Node,
    grpc: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
}

impl Member {
    /// Starts node `id` with its data under `root`; `join` names a member to join through.
    async fn start(
        root: &Path,
        id: u64,
        grpc: Option<SocketAddr>,
        join: Option<SocketAddr>,
    ) -> Member {
        Member::start_with(root, id, grpc, join, |_| {}).await
    }

    /// As [`Member::start`], with `configure` applied to the node's configuration last.
    async fn start_with(
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
    async fn stop(mut self) {
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

fn bank() -> BankName {
    BANK.parse().unwrap()
}

fn write(content: &str) -> WriteRequest {
    WriteRequest::new(bank(), content, Provenance::from_source(SourceKind::User))
}

/// No step of these tests may wait longer than this: a step that hangs fails the test, naming
/// the step, instead of holding up the whole test run.
const STEP_LIMIT: Duration = Duration::from_secs(90);
const TEST_LIMIT: Duration = Duration::from_secs(300);

async fn within<T>(what: &str, limit: Duration, step: impl std::future::Future<Output = T>) -> T {
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

async fn watchdog(
    test: &'static str,
    limit: Duration,
) -> tokio::sync::RwLockReadGuard<'static, ()> {
    let turn = TURNS.read().await;
    stop_after(test, limit);
    turn
}

/// [`watchdog`], with the turn taken alone.
async fn watchdog_alone(
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

async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn voters(member: &Member) -> BTreeSet<u64> {
    member.node.cluster_status().voters()
}

/// Three nodes: node 1 starts the cluster, 2 and 3 join through it.
async fn three(root: &Path) -> Vec<Member> {
    three_with(root, |_| {}).await
}

async fn three_with(root: &Path, configure: impl Fn(&mut NodeConfig)) -> Vec<Member> {
    three_each(root, |_, config| configure(config)).await
}

/// Like [`three_with`], with each node's configuration set by its id.
async fn three_each(root: &Path, configure: impl Fn(u64, &mut NodeConfig)) -> Vec<Member> {
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

async fn write_distinct(node: &Node, n: usize, tag: &str) -> Vec<MemoryId> {
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
fn take_leader(members: &mut Vec<Member>) -> Member {
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

async fn stop_all(members: Vec<Member>) {
    for m in members {
        m.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_acknowledged_by_one_node_is_read_on_every_other() {
    let _turn = watchdog(
        "a_write_acknowledged_by_one_node_is_read_on_every_other",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let members = three(root.path()).await;
    // Written through a follower: the command is forwarded to the leader, never bounced.
    let follower = members.iter().find(|m| !m.node.is_leader()).unwrap();
    let ids = write_distinct(&follower.node, 5, "forwarded").await;
    for reader in &members {
        for id in &ids {
            let memory = within(
                "a linearizable read",
                STEP_LIMIT,
                reader.node.get_with(*id, Consistency::Linearizable),
            )
            .await
            .unwrap_or_else(|e| panic!("node {} misses {id} right after its ack: {e}", reader.id));
            assert!(memory.content.starts_with("forwarded record"));
        }
    }
    // A bank created a moment ago is new to the other replicas; a linearizable recall there
    // still finds it, instead of answering that the bank does not exist.
    let leader = members.iter().find(|m| m.node.is_leader()).unwrap();
    for round in 0..20 {
        let fresh: BankName = format!("fresh-{round}").parse().unwrap();
        leader
            .node
            .create_bank(fresh.clone(), BankPatch::default())
            .await
            .unwrap();
        for reader in members.iter().filter(|m| m.id != leader.id) {
            let mut recall = RecallRequest::new(vec![fresh.clone()], "anything", 5);
            recall.consistency = Consistency::Linearizable;
            let response = within("a recall", STEP_LIMIT, reader.node.recall(recall))
                .await
                .unwrap_or_else(|e| panic!("recall of {fresh} on node {}: {e}", reader.id));
            assert!(response.hits.is_empty());
        }
    }
    // A review asked of a follower runs on the leader, which alone reviews the bank.
    let client = hindsight_api::HindsightClient::connect(&follower.grpc.to_string())
        .await
        .unwrap();
    let report = within("a review", STEP_LIMIT, client.review(bank(), None))
        .await
        .expect("review through a follower");
    assert!(
        report.considered >= 5,
        "the leader's reviewer saw the writes: {report:?}"
    );

    let status = members[0].node.cluster_status();
    let leader = status.leader_id.expect("a leader");
    let leader_view = members
        .iter()
        .find(|m| m.id == leader)
        .unwrap()
        .node
        .cluster_status();
    assert_eq!(leader_view.members.len(), 3);
    assert!(
        leader_view.committed_index.is_some(),
        "the leader knows the commit index"
    );
    stop_all(members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_stopping_elects_another_and_it_catches_up_after_restart() {
    let _turn = watchdog(
        "the_leader_stopping_elects_another_and_it_catches_up_after_restart",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three(root.path()).await;
    let before = write_distinct(&members[2].node, 10, "before").await;
    let old = take_leader(&mut members);
    let leader_id = old.id;
    let old_grpc = old.grpc;
    old.stop().await;

    let stopped_at = Instant::now();
    wait_until("a new leader", Duration::from_secs(15), || {
        members.iter().any(|m| m.node.is_leader())
    })
    .await;
    let elected_in = stopped_at.elapsed();
    assert!(
        elected_in < Duration::from_secs(10),
        "election took {elected_in:?}"
    );
    let during = write_distinct(&members[0].node, 10, "during").await;

    // The old leader comes back on its data and address, and catches up as a follower.
    let back = Member::start(root.path(), leader_id, Some(old_grpc), None).await;
    for id in before.iter().chain(&during) {
        let memory = within(
            "a linearizable read",
            STEP_LIMIT,
            back.node.get_with(*id, Consistency::Linearizable),
        )
        .await
        .unwrap_or_else(|e| panic!("the restarted node misses {id}: {e}"));
        assert_eq!(memory.id, *id);
    }
    members.push(back);
    stop_all(members).await;
}

/// Snapshots often and no log kept behind them: a member that misses a few writes can only
/// catch up from a snapshot.
fn snapshot_often(config: &mut NodeConfig) {
    config.store.snapshot_every_entries = 10;
    config.store.log_entries_kept_after_snapshot = 0;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_behind_the_purged_log_catches_up_from_a_streamed_snapshot() {
    let _turn = watchdog(
        "a_member_behind_the_purged_log_catches_up_from_a_streamed_snapshot",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three_with(root.path(), snapshot_often).await;
    let before = write_distinct(&members[0].node, 5, "before").await;
    let at = members
        .iter()
        .position(|m| !m.node.is_leader())
        .expect("a follower");
    let follower = members.remove(at);
    let (follower_id, follower_grpc) = (follower.id, follower.grpc);
    let follower_last = follower.node.cluster_status().last_log_index.unwrap_or(0);
    follower.stop().await;

    let during = write_distinct(&members[0].node, 40, "during").await;
    let leader = members
        .iter()
        .find(|m| m.node.is_leader())
        .expect("a leader");
    wait_until(
        "the leader to purge its log past the stopped member",
        Duration::from_secs(30),
        || leader.node.cluster_status().purged_index > Some(follower_last),
    )
    .await;
    let purged = leader.node.cluster_status().purged_index;

    let back = Member::start_with(
        root.path(),
        follower_id,
        Some(follower_grpc),
        None,
        snapshot_often,
    )
    .await;
    for id in before.iter().chain(&during) {
        let memory = within(
            "a linearizable read",
            STEP_LIMIT,
            back.node.get_with(*id, Consistency::Linearizable),
        )
        .await
        .unwrap_or_else(|e| panic!("the restarted member misses {id}: {e}"));
        assert_eq!(memory.id, *id);
    }
    let status = back.node.cluster_status();
    assert!(
        status.snapshot_index >= purged,
        "caught up without the snapshot: snapshot {:?}, leader purged {purged:?}",
        status.snapshot_index
    );
    // It serves writes' data locally too, and takes part in new writes.
    let after = write_distinct(&back.node, 3, "after").await;
    for id in &after {
        within("a local read", STEP_LIMIT, back.node.get(*id))
            .await
            .expect("written through the restarted member");
    }
    members.push(back);
    stop_all(members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_cut_off_from_its_majority_says_for_how_long_and_refuses_at_once() {
    let _turn = watchdog(
        "a_leader_cut_off_from_its_majority_says_for_how_long_and_refuses_at_once",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three(root.path()).await;
    let leader = take_leader(&mut members);
    for follower in &members {
        assert_eq!(
            follower.node.cluster_status().millis_since_quorum_ack,
            None,
            "only a leader counts its acknowledgements"
        );
    }
    let acked = leader
        .node
        .cluster_status()
        .millis_since_quorum_ack
        .expect("a leader with its followers knows when they last answered");
    assert!(acked < 1_000, "heartbeats answered {acked} ms ago");

    // With both followers gone the leader still calls itself leader (no one can elect
    // another), and the time since a majority last answered it grows past any election timeout.
    stop_all(members).await;
    wait_until(
        "the leader to go unacknowledged",
        Duration::from_secs(15),
        || {
            leader
                .node
                .cluster_status()
                .millis_since_quorum_ack
                .is_some_and(|ms| ms > 2_000)
        },
    )
    .await;
    assert_eq!(leader.node.cluster_status().state, "Leader");
    // It says so at once instead of waiting for a commit or a confirmation that cannot come,
    // so that a client goes on to another member.
    let started = Instant::now();
    let refused = within(
        "a write on a cut-off leader",
        STEP_LIMIT,
        leader.node.write(write("written while alone")),
    )
    .await
    .expect_err("no majority can commit it");
    assert!(
        refused.to_string().contains("no majority has answered it"),
        "{refused}"
    );
    let refused = within(
        "a linearizable read on a cut-off leader",
        STEP_LIMIT,
        leader.node.get_with(MemoryId(1), Consistency::Linearizable),
    )
    .await
    .expect_err("no majority can confirm the leadership");
    assert!(
        refused.to_string().contains("no majority has answered it"),
        "{refused}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered in {:?}",
        started.elapsed()
    );
    leader.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_marks_a_stopped_member_down_and_a_follower_does_not_guess() {
    let _turn = watchdog(
        "the_leader_marks_a_stopped_member_down_and_a_follower_does_not_guess",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three(root.path()).await;
    let leader = take_leader(&mut members);
    let member_on = |m: &Member, id: u64| {
        m.node
            .cluster_status()
            .members
            .into_iter()
            .find(|member| member.node_id == id)
            .expect("a member")
    };
    wait_until("every member up on the leader", STEP_LIMIT, || {
        let status = leader.node.cluster_status();
        status.members.iter().all(|m| m.reachable == Some(true))
    })
    .await;
    for follower in &members {
        let answered = member_on(&leader, follower.id)
            .millis_since_ack
            .expect("the leader calls every member");
        assert!(
            answered < 1_000,
            "node {} answered {answered} ms ago",
            follower.id
        );
        // A follower sends no heartbeats: it knows itself up, and nothing of the others.
        for m in follower.node.cluster_status().members {
            let expected = (m.node_id == follower.id).then_some(true);
            assert_eq!(
                m.reachable, expected,
                "node {} on {}",
                m.node_id, follower.id
            );
            assert_eq!(m.millis_since_ack, None);
        }
    }

    let gone = members.pop().expect("two followers");
    let gone_id = gone.id;
    gone.stop().await;
    let stopped_at = Instant::now();
    wait_until(
        "the leader to count the stopped node down",
        Duration::from_secs(10),
        || member_on(&leader, gone_id).reachable == Some(false),
    )
    .await;
    let noticed_in = stopped_at.elapsed();
    assert!(
        noticed_in < Duration::from_secs(5),
        "noticed after {noticed_in:?}"
    );
    let silent = member_on(&leader, gone_id)
        .millis_since_ack
        .expect("how long it has been silent");
    assert!(silent > 2_000, "down after {silent} ms of silence");
    assert_eq!(member_on(&leader, members[0].id).reachable, Some(true));

    // The admin API carries the same to `hindsight cluster`.
    let mut admin =
        pb::node_service_client::NodeServiceClient::connect(format!("http://{}", leader.grpc))
            .await
            .expect("the admin API answers");
    let status = admin
        .cluster_status(pb::ClusterStatusRequest {})
        .await
        .expect("cluster status")
        .into_inner();
    let gone_row = status
        .members
        .iter()
        .find(|m| m.node_id == gone_id)
        .expect("the stopped node is still a member");
    assert_eq!(gone_row.reachable, Some(false));
    assert!(
        gone_row.millis_since_ack.is_some_and(|ms| ms > 2_000),
        "{gone_row:?}"
    );
    let leader_row = status
        .members
        .iter()
        .find(|m| m.node_id == leader.id)
        .expect("the leader is a member");
    assert_eq!(leader_row.reachable, Some(true));

    members.push(leader);
    stop_all(members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fourth_node_joins_and_an_original_leaves_while_writes_continue() {
    let _turn = watchdog(
        "a_fourth_node_joins_and_an_original_leaves_while_writes_continue",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut members = three(root.path()).await;
    let writer_node = members[1].node.clone();
    let acked = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let (stop_writes, mut writes_stopped) = oneshot::channel::<()>();
    let writer = {
        let acked = acked.clone();
        tokio::spawn(async move {
            let mut i = 0usize;
            loop {
                if writes_stopped.try_recv().is_ok() {
                    return;
                }
                let content = format!(
                    "continuous record {i} about harbor {} and meadow {}",
                    i * 7,
                    i * 11
                );
                match within("a write", STEP_LIMIT, writer_node.write(write(&content))).await {
                    Ok(outcome) => acked.lock().push(outcome.id),
                    Err(e) => eprintln!("write {i} failed: {e}"),
                }
                i += 1;
            }
        })
    };

    // Writes under way before the membership changes, during them and after.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let fourth = Member::start(root.path(), 4, None, Some(members[0].grpc)).await;
    wait_until("node 4 to vote", Duration::from_secs(30), || {
        voters(&fourth).contains(&4)
    })
    .await;
    members.push(fourth);
    // Node 1 leaves; the request goes through node 3, which hands it to the leader.
    within(
        "removing node 1",
        STEP_LIMIT,
        members[2].node.remove_member(1),
    )
    .await
    .expect("node 1 removed");
    wait_until(
        "node 1 gone from the membership",
        Duration::from_secs(30),
        || !voters(&members[2]).contains(&1),
    )
    .await;
    // Writes go on for a while in the new configuration too.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _ = stop_writes.send(());
    within("the writer to stop", STEP_LIMIT, writer)
        .await
        .unwrap();
    let acked = acked.lock().clone();
    assert!(acked.len() > 5, "writes continued: {}", acked.len());

    let removed = members.remove(0);
    removed.stop().await;
    assert_eq!(voters(&members[0]).len(), 3);
    for member in &members {
        for id in &acked {
            within(
                "a linearizable read",
                STEP_LIMIT,
                member.node.get_with(*id, Consistency::Linearizable),
            )
            .await
            .unwrap_or_else(|e| panic!("node {} misses acknowledged {id}: {e}", member.id));
        }
    }
    stop_all(members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_contradiction_written_through_a_follower_gets_the_leader_to_review() {
    let _turn = watchdog(
        "a_contradiction_written_through_a_follower_gets_the_leader_to_review",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    // No periodic cycles: only the hint can start one.
    let members = three_with(root.path(), |config| {
        config.review.on_likely_conflict = true;
        config.review.hint_delay_ms = 50;
    })
    .await;
    // Every node's actor system links to the two others'.
    for member in &members {
        let mut others: Vec<u64> = members.iter().map(|m| m.id).collect();
        others.retain(|id| *id != member.id);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = member.node.link_status().await.expect("the link runs");
            if status.linked_nodes == others {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {} links only to {:?}",
                member.id,
                status.linked_nodes
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let followers: Vec<&Member> = members.iter().filter(|m| !m.node.is_leader()).collect();
    let old = within(
        "a write",
        STEP_LIMIT,
        followers[0]
            .node
            .write(write("My usual coffee is a flat white.")),
    )
    .await
    .expect("write acknowledged")
    .id;
    within(
        "a write",
        STEP_LIMIT,
        followers[1]
            .node
            .write(write("Actually, I switched my coffee to an oat latte.")),
    )
    .await
    .expect("write acknowledged");

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let memory = within(
            "a linearizable read",
            STEP_LIMIT,
            followers[0].node.get_with(old, Consistency::Linearizable),
        )
        .await
        .expect("the old memory is kept");
        if matches!(memory.status, Status::Superseded { .. }) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no review followed the contradicting write: {:?}",
            memory.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The hint reached the leader's review inbox over the actor link, not the RPC.
    let leader = members.iter().find(|m| m.node.is_leader()).unwrap();
    let received = leader.node.link_status().await.unwrap().hints_received;
    assert!(received >= 1, "the leader got no hint over the link");
    let mut sent = 0;
    for follower in &followers {
        sent += follower.node.link_status().await.unwrap().hints_sent;
    }
    assert!(sent >= 1, "no follower sent a hint over the link");
    stop_all(members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_that_signs_with_another_key_is_refused_at_join() {
    let _turn = watchdog(
        "a_node_that_signs_with_another_key_is_refused_at_join",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let first = Member::start(root.path(), 1, None, None).await;
    // Same secret, so node-to-node calls pass; another active key id, so its signatures would
    // not verify on the other replicas.
    let stranger = Member::start_with(root.path(), 2, None, None, |config| {
        config.cluster.bootstrap = false;
        config.integrity.key_id = "another-key".into();
    })
    .await;
    let refused = within(
        "a join",
        STEP_LIMIT,
        stranger.node.join_cluster(&first.grpc.to_string()),
    )
    .await
    .expect_err("a node with another record key is refused");
    assert!(
        refused
            .to_string()
            .contains("signs records with another key"),
        "{refused}"
    );
    assert_eq!(voters(&first), BTreeSet::from([1]));
    assert_eq!(first.node.cluster_status().members.len(), 1);
    stop_all(vec![stranger, first]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn node_to_node_calls_need_the_secret_and_the_right_node_id() {
    let _turn = watchdog(
        "node_to_node_calls_need_the_secret_and_the_right_node_id",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let member = Member::start(root.path(), 1, None, None).await;
    let mut client = RaftTransportClient::connect(format!("http://{}", member.grpc))
        .await
        .unwrap();

    let refused = client
        .status(ClusterStatusRequest { group_id: 0 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");

    let mut other_group = tonic::Request::new(RaftMessage {
        target_node: 1,
        group_id: 5,
        payload: vec![],
    });
    other_group
        .metadata_mut()
        .insert(SECRET_HEADER, SECRET.parse().unwrap());
    let refused = client.append_entries(other_group).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound, "{refused:?}");
    assert!(
        refused.message().contains("no replica of Raft group 5"),
        "{}",
        refused.message()
    );

    let mut wrong_node = tonic::Request::new(RaftMessage {
        target_node: 9,
        group_id: 0,
        payload: vec![],
    });
    wrong_node
        .metadata_mut()
        .insert(SECRET_HEADER, SECRET.parse().unwrap());
    let refused = client.append_entries(wrong_node).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert!(
        refused.message().contains("addressed to node 9"),
        "{}",
        refused.message()
    );

    let mut garbage = tonic::Request::new(RaftMessage {
        target_node: 1,
        group_id: 0,
        payload: vec![1, 2, 3],
    });
    garbage
        .metadata_mut()
        .insert(SECRET_HEADER, SECRET.parse().unwrap());
    let refused = client.vote(garbage).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);

    // The actor link rides the same port and is refused the same way.
    let link_to = |target: u64, secret: bool| {
        let mut request = tonic::Request::new(tokio_stream::iter(vec![LinkFrame {
            target_node: target,
            data: vec![],
        }]));
        if secret {
            request
                .metadata_mut()
                .insert(SECRET_HEADER, SECRET.parse().unwrap());
        }
        request
    };
    let refused = client.link(link_to(1, false)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let refused = client.link(link_to(9, true)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    assert!(
        refused.message().contains("this link is for node 9"),
        "{}",
        refused.message()
    );

    // The node still leads its cluster of one and takes writes.
    member
        .node
        .create_bank(bank(), BankPatch::default())
        .await
        .unwrap();
    member.node.write(write("still serving")).await.unwrap();
    member.stop().await;
}

/// A linearizable recall of `query` on `member`, which waits until the node's view of the bank
/// shows everything committed before it; returns the hits' contents with their semantic arm's
/// rank and score.
async fn recall_semantic(member: &Member, query: &str) -> Vec<(String, Option<(u32, f32)>)> {
    let mut request = RecallRequest::new(vec![bank()], query, 5);
    request.consistency = Consistency::Linearizable;
    let response = within("a recall", STEP_LIMIT, member.node.recall(request))
        .await
        .unwrap_or_else(|e| panic!("recall on node {}: {e}", member.id));
    response
        .hits
        .into_iter()
        .map(|hit| {
            let semantic = hit
                .explain
                .arms
                .iter()
                .find(|a| a.arm == "semantic")
                .map(|a| (a.rank, a.score));
            (hit.memory.content, semantic)
        })
        .collect()
}

/// What one recall of `query` costs `member` in embedded texts (its query), so that the counts
/// below can leave it out.
async fn recall_cost(member: &Member, query: &str) -> u64 {
    let before = member.node.embedded_texts();
    recall_semantic(member, query).await;
    member.node.embedded_texts() - before
}

const PROBE: &str = "probe record 2: the ivory ledger of port 7026";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_index_the_vectors_a_write_carries_and_never_embed_it_again() {
    let _turn = watchdog(
        "replicas_index_the_vectors_a_write_carries_and_never_embed_it_again",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let members = three(root.path()).await;
    let leader = members.iter().position(|m| m.node.is_leader()).unwrap();
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let (entry, other) = (followers[0], followers[1]);
    // Every node loads the bank (an index is kept only for a loaded bank) and learns what a
    // recall costs it.
    let mut costs = vec![];
    for member in &members {
        costs.push(recall_cost(member, PROBE).await);
    }
    let before: Vec<u64> = members.iter().map(|m| m.node.embedded_texts()).collect();

    // Through a follower (forwarded to the leader) and through the leader, single writes and a
    // batch.
    write_distinct(&members[entry].node, 5, "probe").await;
    write_distinct(&members[leader].node, 5, "direct").await;
    let batch = (0..4)
        .map(|i| {
            write(&format!(
                "batched note {i}: the {i}th crate ships from dock {i}"
            ))
        })
        .collect();
    within(
        "a batch",
        STEP_LIMIT,
        members[entry].node.write_batch(batch),
    )
    .await
    .expect("batch acknowledged");

    for (i, member) in members.iter().enumerate() {
        let hits = recall_semantic(member, PROBE).await;
        let (content, semantic) = &hits[0];
        assert_eq!(content, PROBE, "node {}: {hits:?}", member.id);
        let (rank, score) = semantic.expect("found by its vector");
        assert_eq!(rank, 1, "node {}: {hits:?}", member.id);
        assert!(score > 0.99, "node {}: the same vector, {score}", member.id);
        let embedded = member.node.embedded_texts() - before[i] - costs[i];
        let expected = match i {
            // The node that took a write embeds it once, before proposing.
            i if i == entry => 5 + 4,
            i if i == leader => 5,
            _ => 0,
        };
        assert_eq!(
            embedded,
            expected,
            "node {} ({}) embedded {embedded} texts",
            member.id,
            if i == leader { "leader" } else { "follower" }
        );
    }
    assert_eq!(
        members[other].node.embedded_texts() - before[other] - costs[other],
        0,
        "a replica that took no write embedded none"
    );
    stop_all(members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_with_another_embedding_model_embeds_replicated_writes_itself() {
    let _turn = watchdog(
        "a_replica_with_another_embedding_model_embeds_replicated_writes_itself",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    // Node 3's vectors live in another space (another model id, another dimension).
    let members = three_each(root.path(), |id, c| {
        if id == 3 {
            c.embedding.hashing_dim = 128
        }
    })
    .await;
    let mut costs = vec![];
    for member in &members {
        costs.push(recall_cost(member, PROBE).await);
    }
    let before: Vec<u64> = members.iter().map(|m| m.node.embedded_texts()).collect();
    // Written through node 3, with its model: nodes 1 and 2 cannot use its vectors.
    write_distinct(&members[2].node, 5, "probe").await;
    for (i, member) in members.iter().enumerate() {
        let hits = recall_semantic(member, PROBE).await;
        assert_eq!(hits[0].0, PROBE, "node {}: {hits:?}", member.id);
        let (rank, score) = hits[0].1.expect("found by its vector");
        assert_eq!(rank, 1, "node {}: {hits:?}", member.id);
        assert!(score > 0.99, "node {}: {score}", member.id);
        assert_eq!(
            member.node.embedded_texts() - before[i] - costs[i],
            5,
            "node {} embedded each write once",
            member.id
        );
    }
    stop_all(members).await;
}

/// A process hosting replicas of several Raft groups behind one gRPC server, as a node does once
/// banks are spread over partitions: each group has its own log and state on disk, and all of
/// them share the host's connections to its peers.
struct GroupHost {
    id: u64,
    addr: SocketAddr,
    root: PathBuf,
    peers: Peers,
    groups: RaftGroups,
    stores: BTreeMap<u64, StoreHandle>,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
}

impl GroupHost {
    async fn start(root: &Path, id: u64) -> GroupHost {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let groups = RaftGroups::new(id, TransportAuth::Secret(SECRET.into()));
        let (stop, stopped) = oneshot::channel::<()>();
        let service = groups.clone().into_server();
        let server = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(
                    tonic::transport::server::TcpIncoming::from(listener),
                    async {
                        let _ = stopped.await;
                    },
                )
                .await;
        });
        GroupHost {
            id,
            addr,
            root: root.join(format!("host-{id}")),
            peers: Peers::new(PeersConfig {
                secret: Some(SECRET.into()),
                ..PeersConfig::default()
            }),
            groups,
            stores: BTreeMap::new(),
            stop: Some(stop),
            server: Some(server),
        }
    }

    /// Opens this host's replica of `group`; `first` makes it the group's first member, any other
    /// replica starts empty and joins.
    async fn open(&mut self, group: u64, first: bool) -> RaftTransportService {
        let peers = self.peers.for_group(group);
        let config = StoreConfig {
            node_id: self.id,
            advertise_addr: self.addr.to_string(),
            group_id: group,
            initialize_if_empty: first,
            ..StoreConfig::default()
        };
        let store = within(
            &format!("host {}'s replica of group {group} to open", self.id),
            STEP_LIMIT,
            hindsight_store::open_cluster(
                &self.root.join(format!("group-{group}")),
                config,
                Arc::new(NoopListener),
                GrpcNetwork::new(peers.clone()),
                Arc::new(GrpcLeaderLink::new(peers.clone())),
            ),
        )
        .await
        .expect("the group's store opens");
        let service = RaftTransportService::new(
            store.raft().clone(),
            store.proposer().clone(),
            self.id,
            peers,
            TransportAuth::Secret(SECRET.into()),
        );
        self.groups.insert(service.clone());
        self.stores.insert(group, store);
        service
    }

    /// Opens an empty replica of `group` here and has the group add it, through the member at
    /// `through` (which forwards to the group's leader when it does not lead).
    async fn join(&mut self, group: u64, through: SocketAddr) {
        let joining = self.open(group, false).await;
        within(
            &format!("host {} to join group {group}", self.id),
            STEP_LIMIT,
            joining.join(&through.to_string(), &self.addr.to_string()),
        )
        .await
        .unwrap_or_else(|e| panic!("host {} joining group {group}: {e}", self.id));
    }

    /// Stops serving `group` and closes this host's replica of it.
    async fn close(&mut self, group: u64) {
        self.groups.remove(group);
        if let Some(store) = self.stores.remove(&group) {
            store.begin_shutdown();
            within(
                &format!("host {}'s replica of group {group} to close", self.id),
                STEP_LIMIT,
                store.shutdown(),
            )
            .await
            .expect("the group's store closes");
        }
    }

    fn banks(&self, group: u64) -> Vec<String> {
        let mut names: Vec<String> = self.stores[&group]
            .reader()
            .banks()
            .unwrap()
            .into_iter()
            .map(|b| b.name.to_string())
            .collect();
        names.sort();
        names
    }

    async fn stop(mut self) {
        for group in self.groups.group_ids() {
            self.close(group).await;
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

/// Creates bank `name` through `host`'s replica of `group`, which forwards to the group's leader
/// when it does not lead.
async fn create_bank_in(host: &GroupHost, group: u64, name: &str) {
    let config = BankConfig::new(name.parse().unwrap(), Timestamp::now());
    within(
        &format!("bank {name} to be created in group {group}"),
        STEP_LIMIT,
        host.stores[&group].propose(Command::CreateBank { config }),
    )
    .await
    .unwrap_or_else(|e| panic!("creating {name} in group {group}: {e}"));
}

async fn wait_for_banks(host: &GroupHost, group: u64, expected: &[&str]) {
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    wait_until(
        &format!(
            "host {}'s replica of group {group} to hold {expected:?}",
            host.id
        ),
        STEP_LIMIT,
        || host.banks(group) == expected,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn raft_groups_share_one_transport_and_a_group_moves_to_another_node() {
    let _turn = watchdog(
        "raft_groups_share_one_transport_and_a_group_moves_to_another_node",
        TEST_LIMIT,
    )
    .await;
    let root = tempfile::tempdir().unwrap();
    let mut hosts = vec![
        GroupHost::start(root.path(), 1).await,
        GroupHost::start(root.path(), 2).await,
        GroupHost::start(root.path(), 3).await,
    ];
    let addrs: Vec<SocketAddr> = hosts.iter().map(|h| h.addr).collect();

    // Group 1 on hosts 1 and 2, group 2 on hosts 2 and 3: host 2 carries both over one port.
    hosts[0].open(1, true).await;
    hosts[1].join(1, addrs[0]).await;
    hosts[2].open(2, true).await;
    hosts[1].join(2, addrs[2]).await;

    // Host 2 follows in both groups, so each proposal crosses to that group's leader, and each
    // group's state holds its own banks only.
    create_bank_in(&hosts[1], 1, "alpha").await;
    create_bank_in(&hosts[1], 2, "beta").await;
    wait_for_banks(&hosts[0], 1, &["alpha"]).await;
    wait_for_banks(&hosts[1], 1, &["alpha"]).await;
    wait_for_banks(&hosts[1], 2, &["beta"]).await;
    wait_for_banks(&hosts[2], 2, &["beta"]).await;

    // A host refuses the traffic of a group it holds no replica of, once the caller proved it is
    // a peer; an outsider learns nothing about which groups are hosted.
    let mut client = RaftTransportClient::connect(format!("http://{}", hosts[0].addr))
        .await
        .unwrap();
    let mut peer_asks = tonic::Request::new(ClusterStatusRequest { group_id: 2 });
    peer_asks
        .metadata_mut()
        .insert(SECRET_HEADER, SECRET.parse().unwrap());
    let refused = client.status(peer_asks).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("node 1 hosts no replica of Raft group 2"),
        "{}",
        refused.message()
    );
    let refused = client
        .status(ClusterStatusRequest { group_id: 2 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");

    // Move group 1 from host 1 to host 3 while it serves: the new replica joins (as a learner
    // that catches up, then a voter), the old one is removed, then closed.
    hosts[2].join(1, addrs[1]).await;
    wait_for_banks(&hosts[2], 1, &["alpha"]).await;
    let staying = hosts[1].groups.get(1).unwrap();
    within(
        "host 1 to leave group 1",
        STEP_LIMIT,
        staying.remove_member(1),
    )
    .await
    .unwrap();
    hosts[0].close(1).await;
    create_bank_in(&hosts[2], 1, "gamma").await;
    wait_for_banks(&hosts[1], 1, &["alpha", "gamma"]).await;
    wait_for_banks(&hosts[2], 1, &["alpha", "gamma"]).await;
    wait_until("group 1's voters to be hosts 2 and 3", STEP_LIMIT, || {
        staying.status().voters() == BTreeSet::from([2, 3])
    })
    .await;
    assert_eq!(hosts[0].groups.group_ids(), Vec::<u64>::new());
    assert_eq!(hosts[2].groups.group_ids(), vec![1, 2]);
    // The move left the other group alone.
    assert_eq!(hosts[2].banks(2), vec!["beta".to_string()]);
    assert_eq!(
        hosts[2].groups.get(2).unwrap().status().voters(),
        BTreeSet::from([2, 3])
    );

    for host in hosts {
        host.stop().await;
    }
}

const PARTITIONS: u32 = 6;

fn with_partitions(config: &mut NodeConfig) {
    config.cluster.partitions = PARTITIONS;
    config.cluster.replication = 3;
}

/// Whether every partition runs on exactly the replicas the placement table names, as the live
/// `members` see it, with the table covering exactly the nodes in `expected`.
fn placed(members: &[Member], expected: &BTreeSet<u64>) -> Result<(), String> {
    let table = members[0]
        .node
        .placement()
        .map_err(|e| e.to_string())?
        .ok_or("no placement table yet")?;
    for member in members {
        let theirs = member.node.placement().map_err(|e| e.to_string())?;
        if theirs.as_ref().map(|t| t.version) != Some(table.version) {
            return Err(format!("node {} has another table version", member.id));
        }
    }
    let covered: BTreeSet<u64> = (0..PARTITIONS)
        .flat_map(|p| table.replicas(p).to_vec())
        .collect();
    if &covered != expected {
        return Err(format!("the table places partitions on {covered:?}"));
    }
    for p in 0..PARTITIONS {
        let replicas: BTreeSet<u64> = table.replicas(p).iter().copied().collect();
        for member in members {
            let hosted = member.node.partitions().unwrap().hosted().contains(&p);
            if hosted != replicas.contains(&member.id) {
                return Err(format!(
                    "node {} hosting partition {p} is {hosted}, the table says {replicas:?}; its replica sees {:?}",
                    member.id,
                    member.node.partitions().unwrap().status(p)
                ));
            }
        }
        let leader_view = members
            .iter()
            .filter_map(|m| m.node.partitions().unwrap().status(p))
            .find(|s| s.leader_id == Some(s.node_id))
            .ok_or(format!("partition {p} has no leader among the live nodes"))?;
        if leader_view.voters() != replicas || leader_view.members.len() != replicas.len() {
            return Err(format!(
                "partition {p}'s members are {:?}, the table says {replicas:?}",
                leader_view.members
            ));
        }
    }
    Ok(())
}

async fn wait_placed(members: &[Member], expected: &[u64]) {
    let expected: BTreeSet<u64> = expected.iter().copied().collect();
    let deadline = Instant::now() + STEP_LIMIT;
    loop {
        match placed(members, &expected) {
            Ok(()) => return,
            Err(why) if Instant::now() > deadline => {
                panic!("partitions not placed on {expected:?} in time: {why}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// A bank name, starting with `tag`, that lives in partition `p`.
fn bank_in_partition(p: u32, tag: &str) -> String {
    (0..)
        .map(|i| format!("{tag}/{i}"))
        .find(|name| partition_of(name, PARTITIONS) == p)
        .expect("some name lands in every partition")
}

/// A write of `content` into `bank` as the public API takes it.
fn wire_write(bank: &str, content: &str) -> pb::WriteRequest {
    pb::WriteRequest {
        bank: bank.to_string(),
        content: content.to_string(),
        provenance: Some(pb::Provenance {
            source: "user".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Asserts that `result` is an `InvalidArgument` refusal whose reason mentions `reason`.
fn assert_refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, reason: &str) {
    let status = result.expect_err(reason);
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains(reason), "{}", status.message());
}

/// A gRPC client of `member`'s public API.
async fn public_client(member: &Member) -> MemoryServiceClient<tonic::transport::Channel> {
    MemoryServiceClient::connect(format!("http://{}", member.grpc))
        .await
        .expect("the public API answers")
}

/// Writes one memory into a bank of partition `p` through the public API of a live node that
/// holds no replica of `p` (so through the gateway) when there is one, and reads it back through
/// another node, all within `limit`: whether the partition's banks are writable and readable.
/// Returns the memory's id and content when they are.
async fn partition_takes_a_write(
    members: &[Member],
    p: u32,
    tag: &str,
    limit: Duration,
) -> Option<(String, String)> {
    let hosts = |m: &Member| m.node.partitions().unwrap().hosted().contains(&p);
    let entry = members.iter().find(|m| !hosts(m)).unwrap_or(&members[0]);
    let reader = members.iter().find(|m| m.id != entry.id).unwrap_or(entry);
    let bank = bank_in_partition(p, tag);
    let content = format!("partition {p} remembers {tag}");
    // A partition whose majority has just come back may still refuse a write or two while its
    // leader hears from the returning replicas, so a refused round trip is tried again until
    // `limit`.
    let round_trip = || async {
        let written = public_client(entry)
            .await
            .write(wire_write(&bank, &content))
            .await
            .map_err(|e| eprintln!("partition {p}: write through node {}: {e}", entry.id))
            .ok()?
            .into_inner();
        let read = public_client(reader)
            .await
            .get(pb::GetRequest {
                id: written.id.clone(),
                consistency: None,
            })
            .await
            .map_err(|e| eprintln!("partition {p}: read through node {}: {e}", reader.id))
            .ok()?
            .into_inner();
        Some((written.id, read.memory?.content))
    };
    let until_one_lands = async {
        loop {
            if let Some(landed) = round_trip().await {
                return landed;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    match tokio::time::timeout(limit, until_one_lands).await {
        Ok((id, read)) => {
            assert_eq!(
                read, content,
                "the memory read back through node {}",
                reader.id
            );
            Some((id, content))
        }
        Err(_) => None,
    }
}

/// Whether every memory in `written` reads back through every member's public API, and lives
/// only on the nodes that hold its partition.
async fn all_read_back(members: &[Member], written: &[(String, String)]) {
    for member in members {
        let mut client = public_client(member).await;
        for (id, content) in written {
            let read = within(
                &format!("memory {id} to read back through node {}", member.id),
                STEP_LIMIT,
                client.get(pb::GetRequest {
                    id: id.clone(),
                    consistency: None,
                }),
            )
            .await
            .unwrap_or_else(|e| panic!("memory {id} through node {}: {e}", member.id))
            .into_inner();
            assert_eq!(read.memory.map(|m| m.content).as_ref(), Some(content));
            let p = member
                .node
                .partition_of_memory(id.parse().unwrap())
                .unwrap();
            let local = member.node.get(id.parse().unwrap()).await;
            let hosted = member.node.partitions().unwrap().hosted().contains(&p);
            assert_eq!(
                local.is_ok(),
                hosted,
                "node {} holds memory {id} of partition {p} itself: {local:?}",
                member.id
            );
        }
    }
}

/// A recall over `banks` through `node`'s REST API, served over real HTTP on loopback; the JSON
/// answer, or the HTTP status line and body when it is not `200 OK`.
async fn rest_recall(
    node: &Node,
    banks: &[String],
    query: &str,
) -> Result<serde_json::Value, String> {
    use std::future::IntoFuture;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(
        axum::serve(listener, hindsight_api::rest::router(node.clone())).into_future(),
    );
    let body = serde_json::json!({ "banks": banks, "query": query, "top_k": 20 }).to_string();
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /v1/recall HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    server.abort();
    let (status, rest) = answer.split_once("\r\n").unwrap_or((&answer, ""));
    let json = rest.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    if !status.contains(" 200 ") {
        return Err(format!("{status}: {json}"));
    }
    serde_json::from_str(json).map_err(|e| format!("{e}: {json}"))
}

/// One recall over a bank of every partition, through each member's public API: whichever node
/// is asked, and whatever partitions it holds, the answer holds every bank's memory, under one
/// recall id; feedback on each result, given to the node that was asked, finds that recall.
async fn recall_across_partitions(members: &[Member], tag: &str) {
    let banks: Vec<String> = (0..PARTITIONS).map(|p| bank_in_partition(p, tag)).collect();
    for member in members {
        let mut client = public_client(member).await;
        let response = within(
            &format!("a recall over every partition through node {}", member.id),
            STEP_LIMIT,
            client.recall(pb::RecallRequest {
                banks: banks.clone(),
                query: format!("remembers {tag}"),
                top_k: Some(2 * PARTITIONS),
                ..Default::default()
            }),
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "recall over every partition through node {}: {e}",
                member.id
            )
        })
        .into_inner();
        let found: BTreeSet<String> = response
            .hits
            .iter()
            .filter_map(|h| h.memory.as_ref().map(|m| m.bank.clone()))
            .collect();
        assert_eq!(
            found,
            banks.iter().cloned().collect::<BTreeSet<_>>(),
            "node {} holds partitions {:?}",
            member.id,
            member.node.partitions().unwrap().hosted()
        );
        assert!(
            !response.recall_id.is_empty(),
            "one id for the whole recall"
        );
        // REST runs the same service code, so it hands parts over just the same.
        let rest = rest_recall(&member.node, &banks, &format!("remembers {tag}"))
            .await
            .unwrap_or_else(|e| panic!("REST recall through node {}: {e}", member.id));
        let found_over_rest: BTreeSet<String> = rest["hits"]
            .as_array()
            .unwrap_or_else(|| panic!("no hits in {rest}"))
            .iter()
            .filter_map(|h| h["memory"]["bank"].as_str().map(str::to_string))
            .collect();
        assert_eq!(
            found_over_rest, found,
            "over REST through node {}",
            member.id
        );
        if member.id != members[0].id {
            continue;
        }
        for hit in &response.hits {
            let memory = hit.memory.as_ref().unwrap();
            let report = within(
                "feedback on a result of a recall over every partition",
                STEP_LIMIT,
                client.feedback(pb::FeedbackRequest {
                    recall_id: response.recall_id.clone(),
                    memory_id: memory.id.clone(),
                    outcome: "used".into(),
                }),
            )
            .await
            .unwrap_or_else(|e| panic!("feedback on {} of {}: {e}", memory.id, memory.bank))
            .into_inner();
            assert!(report.applied);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn partitions_keep_a_majority_through_failures_and_move_as_nodes_join_and_leave() {
    let test = "partitions_keep_a_majority_through_failures_and_move_as_nodes_join_and_leave";
    let _turn = watchdog_alone(test, Duration::from_secs(480)).await;
    let root = tempfile::tempdir().unwrap();
    let first = Member::start_with(root.path(), 1, None, None, with_partitions).await;
    let seed = first.grpc;
    let mut members = vec![first];
    for id in 2..=5 {
        members.push(Member::start_with(root.path(), id, None, Some(seed), with_partitions).await);
    }
    wait_placed(&members, &[1, 2, 3, 4, 5]).await;
    let table = members[0].node.placement().unwrap().unwrap();
    let counts = || -> Vec<_> {
        members
            .iter()
            .map(|m| m.node.partitions().unwrap().counts())
            .collect()
    };
    // A follower learns who leads from the leader's first message, a moment after placement.
    wait_until("every replica to know its leader", STEP_LIMIT, || {
        counts().iter().all(|c| c.leaderless == 0)
    })
    .await;
    let counts = counts();
    assert_eq!(counts.iter().map(|c| c.hosted).sum::<usize>(), 18);
    assert_eq!(counts.iter().map(|c| c.led).sum::<usize>(), 6, "{counts:?}");
    assert!(counts.iter().all(|c| c.leaderless == 0), "{counts:?}");
    // Each node's cluster status shows the table and which replicas it holds.
    for member in &members {
        let client = hindsight_api::HindsightClient::connect(&member.grpc.to_string())
            .await
            .unwrap();
        let status = client.cluster_status().await.unwrap();
        assert_eq!(status.placement_version, Some(table.version));
        assert_eq!(status.partitions.len(), PARTITIONS as usize);
        for partition in &status.partitions {
            let p = partition.partition;
            assert_eq!(partition.replicas, table.replicas(p));
            assert_eq!(partition.hosted, table.hosts(member.id, p));
            if partition.hosted {
                assert!(partition.leader_id.is_some(), "{partition:?}");
                assert_eq!(
                    partition.voters,
                    table
                        .replicas(p)
                        .iter()
                        .copied()
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect::<Vec<_>>()
                );
            }
        }
    }
    for member in &members {
        let count = table.partitions_of(member.id).len();
        assert!(
            (3..=4).contains(&count),
            "18 replicas over 5 nodes: node {} has {count}",
            member.id
        );
    }
    let mut written = vec![];
    for p in 0..PARTITIONS {
        written.push(
            partition_takes_a_write(&members, p, "all-up", STEP_LIMIT)
                .await
                .unwrap_or_else(|| panic!("partition {p} takes writes with every node up")),
        );
    }
    all_read_back(&members, &written).await;
    recall_across_partitions(&members, "all-up").await;

    // One node down: every partition keeps two of its three replicas.
    let fifth = members.pop().unwrap();
    let fifth_grpc = fifth.grpc;
    fifth.stop().await;
    for p in 0..PARTITIONS {
        written.push(
            partition_takes_a_write(&members, p, "one-down", STEP_LIMIT)
                .await
                .unwrap_or_else(|| panic!("partition {p} takes writes with node 5 down")),
        );
    }
    all_read_back(&members, &written).await;

    // Two down: a partition with a replica on both has lost its majority, the others have not.
    let fourth = members.pop().unwrap();
    let fourth_grpc = fourth.grpc;
    fourth.stop().await;
    let lost: Vec<u32> = (0..PARTITIONS)
        .filter(|p| table.hosts(4, *p) && table.hosts(5, *p))
        .collect();
    for p in 0..PARTITIONS {
        // One that keeps its majority may first have to elect a leader (node 4 may have led
        // it); one that lost it must not take the write in 5 s, or ever.
        let limit = if lost.contains(&p) {
            Duration::from_secs(5)
        } else {
            STEP_LIMIT
        };
        let took = partition_takes_a_write(&members, p, "two-down", limit).await;
        if let Some(memory) = &took {
            written.push(memory.clone());
        }
        assert_eq!(
            took.is_some(),
            !lost.contains(&p),
            "partition {p} (replicas {:?}) with nodes 4 and 5 down",
            table.replicas(p)
        );
    }

    // The nodes return, and the partitions that had lost their majority take writes again.
    members
        .push(Member::start_with(root.path(), 4, Some(fourth_grpc), None, with_partitions).await);
    members.push(Member::start_with(root.path(), 5, Some(fifth_grpc), None, with_partitions).await);
    for p in 0..PARTITIONS {
        written.push(
            partition_takes_a_write(&members, p, "back", STEP_LIMIT)
                .await
                .unwrap_or_else(|| {
                    panic!("partition {p} takes writes once nodes 4 and 5 are back")
                }),
        );
    }
    all_read_back(&members, &written).await;

    // A sixth node joins: it gets its share of replicas, each moved while its partition serves.
    members.push(Member::start_with(root.path(), 6, None, Some(seed), with_partitions).await);
    wait_placed(&members, &[1, 2, 3, 4, 5, 6]).await;
    let grown = members[0].node.placement().unwrap().unwrap();
    assert!(grown.version > table.version);
    assert_eq!(grown.partitions_of(6).len(), 3, "18 replicas over 6 nodes");
    for p in grown.partitions_of(6) {
        written.push(
            partition_takes_a_write(&members, p, "grown", STEP_LIMIT)
                .await
                .unwrap_or_else(|| panic!("partition {p} takes writes after moving onto node 6")),
        );
    }
    all_read_back(&members, &written).await;

    // Node 1 leaves the cluster. It is drained first: by the time the removal answers, the
    // table places nothing on it and every partition runs on three voters without it.
    within(
        "removing node 1",
        STEP_LIMIT,
        members[1].node.remove_member(1),
    )
    .await
    .expect("node 1 removed");
    let table = members[1].node.placement().unwrap().expect("a table");
    for p in 0..PARTITIONS {
        assert!(
            !table.replicas(p).contains(&1),
            "node 1 was removed while the table still placed partition {p} on it"
        );
        let drained = members[1..].iter().any(|m| {
            m.node.partitions().unwrap().status(p).is_some_and(|s| {
                let voters = s.voters();
                voters.len() == 3 && !voters.contains(&1)
            })
        });
        assert!(
            drained,
            "node 1 was removed before partition {p} ran on three voters without it"
        );
    }
    let departed = members.remove(0);
    wait_placed(&members, &[2, 3, 4, 5, 6]).await;
    departed.stop().await;
    for p in 0..PARTITIONS {
        written.push(
            partition_takes_a_write(&members, p, "shrunk", STEP_LIMIT)
                .await
                .unwrap_or_else(|| panic!("partition {p} takes writes after node 1 left")),
        );
    }
    all_read_back(&members, &written).await;
    stop_all(members).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bank_lives_in_its_partition_and_requests_across_partitions_are_refused_whole() {
    let test = "a_bank_lives_in_its_partition_and_requests_across_partitions_are_refused_whole";
    let _turn = watchdog(test, TEST_LIMIT).await;
    let root = tempfile::tempdir().unwrap();
    let member = Member::start_with(root.path(), 1, None, None, with_partitions).await;
    wait_until("the node to open every partition", STEP_LIMIT, || {
        member.node.partitions().unwrap().hosted().len() == PARTITIONS as usize
    })
    .await;
    let (north, south) = (bank_in_partition(1, "north"), bank_in_partition(4, "south"));
    let mut memories = public_client(&member).await;
    let mut banks = hindsight_api::pb::bank_service_client::BankServiceClient::connect(format!(
        "http://{}",
        member.grpc
    ))
    .await
    .unwrap();

    // One batch is one log entry of one partition: banks of two are refused, and nothing lands.
    let refused = memories
        .write_batch(pb::WriteBatchRequest {
            items: vec![
                wire_write(&north, "the north bank's first memory"),
                wire_write(&south, "the south bank's first memory"),
            ],
        })
        .await;
    assert_refused(refused, "different partitions");
    let listed = banks
        .list_banks(pb::ListBanksRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(listed.banks.is_empty(), "nothing was stored: {listed:?}");

    // Each bank's memories carry its partition in their ids and live in its store alone.
    let mut ids = BTreeMap::new();
    for (bank, p) in [(&north, 1), (&south, 4)] {
        let written = memories
            .write(wire_write(
                bank,
                &format!("{bank} keeps the spare key under the mat"),
            ))
            .await
            .unwrap()
            .into_inner();
        let id: MemoryId = written.id.parse().unwrap();
        assert_eq!(member.node.partition_of_memory(id), Some(p));
        assert_eq!(
            member.node.partition_of_bank(&bank.parse().unwrap()),
            Some(p)
        );
        let read = memories
            .get(pb::GetRequest {
                id: written.id.clone(),
                consistency: None,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(read.memory.unwrap().bank, *bank);
        ids.insert(bank.clone(), written.id);
    }
    let listed: Vec<String> = banks
        .list_banks(pb::ListBanksRequest::default())
        .await
        .unwrap()
        .into_inner()
        .banks
        .into_iter()
        .filter_map(|b| b.bank.map(|b| b.name))
        .collect();
    let mut expected = vec![north.clone(), south.clone()];
    expected.sort();
    assert_eq!(listed, expected);

    // An export keeps its ids, which name the exported bank's partition: it imports into a bank
    // of the same partition and is refused, whole, by a bank of another.
    let export = banks
        .export_bank(pb::ExportBankRequest {
            name: north.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let elsewhere = bank_in_partition(2, "copy");
    let refused = banks
        .import_bank(pb::ImportBankRequest {
            name: elsewhere.clone(),
            lines: export.lines.clone(),
            resign: false,
        })
        .await;
    assert_refused(refused, "partition 2");
    let missing = banks
        .get_bank(pb::GetBankRequest {
            name: elsewhere.clone(),
        })
        .await
        .expect_err("the refused import created nothing");
    assert_eq!(missing.code(), tonic::Code::NotFound);
    member.stop().await;
}

/// A node gone for longer than `cluster.replace_after_secs` has its replicas re-placed on the
/// others, and an operator moves a replica with `MovePartition`; bad moves change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_silent_node_loses_its_replicas_and_an_operator_moves_one() {
    let test = "a_silent_node_loses_its_replicas_and_an_operator_moves_one";
    let _turn = watchdog_alone(test, Duration::from_secs(300)).await;
    let root = tempfile::tempdir().unwrap();
    let quick = |config: &mut NodeConfig| {
        with_partitions(config);
        config.cluster.replace_after_secs = 3;
    };
    let first = Member::start_with(root.path(), 1, None, None, quick).await;
    let seed = first.grpc;
    let mut members = vec![first];
    for id in 2..=5 {
        members.push(Member::start_with(root.path(), id, None, Some(seed), quick).await);
    }
    wait_placed(&members, &[1, 2, 3, 4, 5]).await;
    let mut written = vec![];
    for p in 0..PARTITIONS {
        written.push(
            partition_takes_a_write(&members, p, "placed", STEP_LIMIT)
                .await
                .unwrap_or_else(|| panic!("partition {p} takes writes with every node up")),
        );
    }

    // Node 5 stops; after replace_after_secs its replicas are copied to the other four.
    let fifth = members.pop().unwrap();
    let fifth_grpc = fifth.grpc;
    let held_by_fifth = members[0]
        .node
        .placement()
        .unwrap()
        .unwrap()
        .partitions_of(5);
    assert!(!held_by_fifth.is_empty());
    fifth.stop().await;
    wait_placed(&members, &[1, 2, 3, 4]).await;
    for p in 0..PARTITIONS {
        written.push(
            partition_takes_a_write(&members, p, "replaced", STEP_LIMIT)
                .await
                .unwrap_or_else(|| panic!("partition {p} takes writes on three live replicas")),
        );
    }
    all_read_back(&members, &written).await;

    // An operator moves one replica to a node that does not hold the partition.
    let client = hindsight_api::HindsightClient::connect(&members[1].grpc.to_string())
        .await
        .unwrap();
    let before = client.list_partitions().await.unwrap();
    let table = members[0].node.placement().unwrap().unwrap();
    assert_eq!(before.placement_version, Some(table.version));
    let (p, to) = (0..PARTITIONS)
        .find_map(|p| {
            let outside = (1..=4).find(|n| !table.hosts(*n, p))?;
            Some((p, outside))
        })
        .expect("with 18 replicas on 4 nodes some node lacks some partition");
    let from = *table
        .replicas(p)
        .iter()
        .find(|n| table.partitions_of(**n).len() > 1)
        .unwrap();
    let code = |e: hindsight_api::ClientError| match e {
        hindsight_api::ClientError::Status(status) => status.code(),
        other => panic!("{other}"),
    };
    let other_replica = *table.replicas(p).iter().find(|n| **n != from).unwrap();
    let refusals = [
        (p, from, from, tonic::Code::InvalidArgument),
        (PARTITIONS + 3, from, to, tonic::Code::NotFound),
        (p, from, 9, tonic::Code::NotFound),
        (p, from, other_replica, tonic::Code::FailedPrecondition),
        (p, to, other_replica, tonic::Code::FailedPrecondition),
    ];
    for (partition, from, to, expected) in refusals {
        let refused = client
            .move_partition(partition, from, to)
            .await
            .expect_err("a bad move is refused");
        assert_eq!(
            code(refused),
            expected,
            "move {partition} from {from} to {to}"
        );
    }
    assert_eq!(
        members[0].node.placement().unwrap().unwrap(),
        table,
        "refused moves changed nothing"
    );
    let moved = client.move_partition(p, from, to).await.unwrap();
    assert_eq!(moved.placement_version, Some(table.version + 1));
    let listed = &moved.partitions[p as usize];
    assert!(listed.replicas.contains(&to) && !listed.replicas.contains(&from));
    wait_placed(&members, &[1, 2, 3, 4]).await;
    let now = members[0].node.placement().unwrap().unwrap();
    assert!(
        now.hosts(to, p) && !now.hosts(from, p),
        "the move stands: {now:?}"
    );
    written.push(
        partition_takes_a_write(&members, p, "moved", STEP_LIMIT)
            .await
            .unwrap_or_else(|| panic!("partition {p} takes writes after the move")),
    );
    all_read_back(&members, &written).await;
    let settled = client.list_partitions().await.unwrap();
    assert!(
        settled.partitions.iter().all(|i| i.moving != Some(true)),
        "{settled:?}"
    );

    // Node 5 answers again and is placed on again.
    members.push(Member::start_with(root.path(), 5, Some(fifth_grpc), None, quick).await);
    wait_placed(&members, &[1, 2, 3, 4, 5]).await;
    all_read_back(&members, &written).await;
    stop_all(members).await;
}
