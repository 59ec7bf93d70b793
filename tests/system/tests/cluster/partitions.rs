//! Banks spread over partitions: placement through failures, joins and leaves, the gateway,
//! requests across partitions and moves of replicas.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use hindsight_api::pb;
use hindsight_api::pb::memory_service_client::MemoryServiceClient;
use hindsight_core::placement::partition_of;
use hindsight_core::MemoryId;
use hindsight_node::{Node, NodeConfig};
use tokio::net::TcpListener;

use crate::harness::{
    stop_all, wait_until, watchdog, watchdog_alone, within, Member, STEP_LIMIT, TEST_LIMIT,
};

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
