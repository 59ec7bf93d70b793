//! Writes carry their vectors to the replicas, which embed again only with another model.

use hindsight_core::{Consistency, RecallRequest};

use crate::harness::{
    bank, stop_all, three, three_each, watchdog, within, write, write_distinct, Member, STEP_LIMIT,
    TEST_LIMIT,
};

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
