//! Several Raft groups behind one gRPC server, and a group moving to another host.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hindsight_cluster::pb::raft_transport_client::RaftTransportClient;
use hindsight_cluster::pb::ClusterStatusRequest;
use hindsight_cluster::{
    GrpcLeaderLink, GrpcNetwork, Peers, PeersConfig, RaftGroups, RaftTransportService,
    TransportAuth, SECRET_HEADER,
};
use hindsight_core::{BankConfig, Command, Timestamp};
use hindsight_store::{NoopListener, StoreConfig, StoreHandle};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::harness::{wait_until, watchdog, within, SECRET, STEP_LIMIT, TEST_LIMIT};

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
