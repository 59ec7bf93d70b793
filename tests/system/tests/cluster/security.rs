//! What a node demands of another: the same record key at join, the cluster secret and the
//! right node id on every node-to-node call.

use std::collections::BTreeSet;

use hindsight_cluster::pb::raft_transport_client::RaftTransportClient;
use hindsight_cluster::pb::{ClusterStatusRequest, LinkFrame, RaftMessage};
use hindsight_cluster::SECRET_HEADER;
use hindsight_node::BankPatch;

use crate::harness::{
    bank, stop_all, voters, watchdog, within, write, Member, SECRET, STEP_LIMIT, TEST_LIMIT,
};

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
