//! Writes and recall: acknowledgement, new banks, merged restatements, filters, time windows.

use hindsight_core::{
    Disposition, Kind, Provenance, RecallRequest, SourceKind, Timestamp, WriteRequest,
};
use hindsight_node::{BankPatch, Node};

use crate::harness::{bank, config, recall_ids, write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_not_worth_keeping_in_an_existing_bank_is_answered_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    node.write(write("a/gate", "The user prefers invoices as PDF"))
        .await
        .unwrap();
    let mut chatter = write("a/gate", "The user said thanks.");
    chatter.provenance = Provenance::from_source(SourceKind::Reflection);
    chatter.kind = Kind::Episodic;
    // Nothing is stored, so there is nothing for the bank's indexes to wait for.
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(3), node.write(chatter))
        .await
        .expect("answered without waiting for the indexes")
        .unwrap();
    assert!(
        matches!(
            outcome.disposition,
            Disposition::RejectedLowImportance { .. }
        ),
        "{outcome:?}"
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_is_searchable_as_soon_as_it_is_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    for i in 0..20 {
        let outcome = node
            .write(write(
                "acme/agent-1",
                &format!("note number {i} about kiwis"),
            ))
            .await
            .unwrap();
        assert_eq!(outcome.disposition, Disposition::Created);
        let found = recall_ids(&node, &["acme/agent-1"], &format!("note number {i}"), None).await;
        assert!(
            found.contains(&format!("note number {i} about kiwis")),
            "{found:?}"
        );
    }
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_writes_to_a_new_bank_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let node = std::sync::Arc::new(Node::start(config(dir.path())).await.unwrap());
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let node = node.clone();
            tokio::spawn(async move {
                node.write(write("fresh/bank", &format!("writer {i} was here")))
                    .await
            })
        })
        .collect();
    for writer in writers {
        let outcome = writer
            .await
            .unwrap()
            .expect("every first write is acknowledged");
        assert_eq!(outcome.disposition, Disposition::Created);
    }
    let found = recall_ids(&node, &["fresh/bank"], "writer was here", None).await;
    assert_eq!(found.len(), 8, "{found:?}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identical_restatement_merges_and_a_changed_value_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let first = node
        .write(write("a/b", "The user drinks green tea every morning"))
        .await
        .unwrap();
    let again = node
        .write(write("a/b", "The user drinks green tea every morning"))
        .await
        .unwrap();
    let Disposition::MergedInto { target, .. } = again.disposition else {
        panic!("expected a merge, got {:?}", again.disposition)
    };
    assert_eq!(target, first.id);
    // The answer names the memory that holds the write, so a `get` of it finds it.
    assert_eq!(again.id, first.id);
    let merged = node.get(again.id).await.unwrap();
    assert_eq!(merged.support.count, 2);
    assert_eq!(merged.support.merged.len(), 1);
    let negated = node
        .write(write(
            "a/b",
            "The user no longer drinks green tea every morning",
        ))
        .await
        .unwrap();
    assert_eq!(negated.disposition, Disposition::Created);
    let trace = node.trace(first.id).await.unwrap();
    assert_eq!(trace.history.len(), 2, "created, then merged");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_reads_several_banks_and_honours_filters() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    node.write(write(
        "acme/agent-1",
        "private note about the refund policy",
    ))
    .await
    .unwrap();
    node.write(write("acme/team", "team rule about the refund policy"))
        .await
        .unwrap();
    let mut episodic = write("acme/team", "we discussed the refund policy on a call");
    episodic.kind = Kind::Episodic;
    node.write(episodic).await.unwrap();
    let both = recall_ids(&node, &["acme/agent-1", "acme/team"], "refund policy", None).await;
    assert_eq!(both.len(), 3, "{both:?}");
    let mut only_semantic = RecallRequest::new(vec![bank("acme/team")], "refund policy", 10);
    only_semantic.filters.kinds = vec![Kind::Semantic];
    let hits = node.recall(only_semantic).await.unwrap().hits;
    assert_eq!(hits.len(), 1);
    assert!(hits[0].explain.arms.iter().any(|a| a.arm == "semantic"));
    node.shutdown().await;
}
/// A window holding more memories than recall scores one by one is searched through the
/// vector index instead; it must find the same kind of hit: the window's memory closest to
/// the question, and nothing from outside the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wide_time_window_finds_its_closest_memory_and_nothing_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let name = "a/wide-window";
    let patch = BankPatch {
        dedup_threshold: Some(0.999),
        ..BankPatch::default()
    };
    node.create_bank(bank(name), patch).await.unwrap();
    const DAY_MS: i64 = 86_400_000;
    let now = Timestamp::now().millis();
    // Seven days ago is always in the previous calendar week; thirty never is.
    let last_week = Timestamp(now - 7 * DAY_MS);
    let last_month = Timestamp(now - 30 * DAY_MS);
    let at = |content: String, when: Timestamp| {
        let mut request = write(name, &content);
        request.occurred_at = Some(when);
        request
    };
    let fillers: Vec<WriteRequest> = (0..2_600)
        .map(|i| {
            at(
                format!("Meter {i} in hall {} read {} units", i % 17, i * 7),
                last_week,
            )
        })
        .collect();
    for chunk in fillers.chunks(650) {
        for outcome in node.write_batch(chunk.to_vec()).await.unwrap() {
            assert_eq!(outcome.disposition, Disposition::Created);
        }
    }
    let inside = "Repotted the lemon tree on the balcony";
    let outside = "Repotted the lemon tree on the balcony terrace";
    node.write(at(inside.into(), last_week)).await.unwrap();
    node.write(at(outside.into(), last_month)).await.unwrap();

    let request = RecallRequest::new(
        vec![bank(name)],
        "When did I repot the lemon tree on the balcony last week?",
        10,
    );
    let rank = |hit: &hindsight_core::recall::RecallHit, arm: &str| {
        hit.explain
            .arms
            .iter()
            .find(|a| a.arm == arm)
            .map(|a| a.rank)
    };
    let hits = node.recall(request).await.unwrap().hits;
    let temporal_rank = |content: &str| {
        hits.iter()
            .find(|h| h.memory.content == content)
            .and_then(|h| rank(h, "temporal"))
    };
    assert_eq!(temporal_rank(inside), Some(1), "{hits:#?}");
    assert_eq!(temporal_rank(outside), None, "outside the window");
    for hit in &hits {
        if temporal_rank(&hit.memory.content).is_some() {
            assert_eq!(hit.memory.occurred_at, last_week, "{}", hit.memory.content);
        }
    }

    // A question whose closest memories all lie in the window: the window's closest are
    // the semantic arm's, rank for rank.
    let request = RecallRequest::new(
        vec![bank(name)],
        "Which meter in hall 3 read 21 units last week?",
        10,
    );
    let hits = node.recall(request).await.unwrap().hits;
    assert!(hits.iter().any(|h| rank(h, "temporal").is_some()));
    for hit in &hits {
        assert_eq!(hit.memory.occurred_at, last_week, "{}", hit.memory.content);
        assert_eq!(
            rank(hit, "temporal"),
            rank(hit, "semantic"),
            "{}",
            hit.memory.content
        );
    }
    node.shutdown().await;
}
