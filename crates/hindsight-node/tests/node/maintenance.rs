//! Maintenance: episodes distilled into rules, archiving and retention, quotas, conflicts.

use hindsight_core::strategy::{Strategies, TemporalStrategy};
use hindsight_core::{Kind, MemoryId, RecallRequest, Status, Subtype, Timestamp, WriteRequest};
use hindsight_node::{BankPatch, Node, NodeError};

use crate::harness::{bank, config, recall_ids, ts, write};

fn episode(bank_name: &str, content: &str, at: &str) -> WriteRequest {
    let mut request = write(bank_name, content);
    request.kind = Kind::Episodic;
    request.occurred_at = Some(ts(at));
    request
}

async fn strict_dedup_bank(node: &Node, name: &str) {
    let patch = BankPatch {
        dedup_threshold: Some(0.999),
        ..BankPatch::default()
    };
    node.create_bank(bank(name), patch).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_episodes_become_one_rule_and_a_later_one_adds_to_its_support() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path());
    config.review.distill.similarity = 0.5;
    let node = Node::start(config).await.unwrap();
    strict_dedup_bank(&node, "a/ops").await;
    let text = "staging deploy failed because the staging token expired and renewing the token fixed the deploy";
    let mut sources = vec![];
    for (i, extra) in ["on monday", "again on tuesday", "once more on friday"]
        .iter()
        .enumerate()
    {
        let at = format!("2026-03-0{}T09:00:00Z", i + 2);
        let id = node
            .write(episode("a/ops", &format!("{text} {extra}"), &at))
            .await
            .unwrap()
            .id;
        sources.push(id);
    }
    node.write(episode(
        "a/ops",
        "bought oat milk and bread for the office kitchen",
        "2026-03-03T12:00:00Z",
    ))
    .await
    .unwrap();
    let report = node
        .review(bank("a/ops"), Some(ts("2026-03-06T00:00:00Z")))
        .await
        .unwrap();
    assert_eq!(report.created.len(), 1, "{report:?}");
    let rule = node.get(report.created[0]).await.unwrap();
    assert_eq!(rule.subtype, Some(Subtype::Rule));
    assert_eq!(rule.kind, Kind::Semantic);
    sources.sort();
    assert_eq!(rule.support.derived_from, sources);
    assert_eq!(rule.support.count, 3);
    let trace = node.trace(rule.id).await.unwrap();
    assert!(
        trace.history[0].reason.contains("derived from"),
        "{:?}",
        trace.history
    );

    let fourth = node
        .write(episode(
            "a/ops",
            &format!("{text} and on the next monday too"),
            "2026-03-09T09:00:00Z",
        ))
        .await
        .unwrap()
        .id;
    let report = node
        .review(bank("a/ops"), Some(ts("2026-03-10T00:00:00Z")))
        .await
        .unwrap();
    assert!(report.created.is_empty(), "no copy of the rule: {report:?}");
    let rule = node.get(rule.id).await.unwrap();
    assert_eq!(rule.support.count, 4);
    assert!(rule.support.derived_from.contains(&fourth));
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_memory_comes_back_when_asked_for_and_is_purged_after_its_retention() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let kept = node
        .write(write(
            "a/arch",
            "The spare office key is in the blue drawer.",
        ))
        .await
        .unwrap()
        .id;
    let gone = node
        .write(write(
            "a/arch",
            "The old wifi password was printed on the router.",
        ))
        .await
        .unwrap()
        .id;
    for id in [kept, gone] {
        node.forget(id, false, "no longer needed".into())
            .await
            .unwrap();
    }
    assert!(recall_ids(&node, &["a/arch"], "spare office key", None)
        .await
        .is_empty());

    let mut request = RecallRequest::new(vec![bank("a/arch")], "spare office key", 1);
    request.include_archived = true;
    let hits = node.recall(request).await.unwrap().hits;
    assert_eq!(hits[0].memory.id, kept);
    assert_eq!(node.get(kept).await.unwrap().status, Status::Active);
    assert_eq!(
        recall_ids(&node, &["a/arch"], "spare office key", None).await[0],
        "The spare office key is in the blue drawer."
    );

    let soon = Timestamp::now().plus_secs(89 * 86_400);
    let report = node.review(bank("a/arch"), Some(soon)).await.unwrap();
    assert!(report.purged.is_empty(), "{report:?}");
    let later = Timestamp::now().plus_secs(91 * 86_400);
    let report = node.review(bank("a/arch"), Some(later)).await.unwrap();
    assert_eq!(report.purged, vec![gone]);
    assert!(matches!(node.get(gone).await, Err(NodeError::NotFound(_))));
    assert_eq!(node.get(kept).await.unwrap().status, Status::Active);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_contradicts_a_memory_gets_it_reviewed_without_being_asked() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path());
    config.review.on_likely_conflict = true;
    config.review.hint_delay_ms = 50;
    let node = Node::start(config).await.unwrap();
    let old = node
        .write(write("a/hint", "My usual coffee is a flat white."))
        .await
        .unwrap()
        .id;
    let unrelated = node
        .write(write("a/hint", "The team standup moved to ten o'clock."))
        .await
        .unwrap()
        .id;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(node.get(old).await.unwrap().status, Status::Active);
    node.write(write(
        "a/hint",
        "Actually, I switched my coffee to an oat latte.",
    ))
    .await
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if matches!(
            node.get(old).await.unwrap().status,
            Status::Superseded { .. }
        ) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no review followed the contradicting write"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(node.get(unrelated).await.unwrap().status, Status::Active);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bank_over_its_quota_archives_its_weakest_memories() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let patch = BankPatch {
        max_memories: Some(3),
        ..BankPatch::default()
    };
    node.create_bank(bank("a/quota"), patch).await.unwrap();
    let facts = [
        ("The printer on floor two jams on thick paper.", 0.9),
        ("Lunch orders go in before eleven.", 0.4),
        ("The VPN certificate renews every March.", 0.8),
        ("Parking passes are kept at reception.", 0.5),
        ("Backups run nightly at two in the morning.", 0.95),
    ];
    let mut ids: Vec<(MemoryId, f32)> = vec![];
    for (content, confidence) in facts {
        let mut request = write("a/quota", content);
        request.confidence = Some(confidence);
        ids.push((node.write(request).await.unwrap().id, confidence));
    }
    let report = node.review(bank("a/quota"), None).await.unwrap();
    let mut archived = report.updated.clone();
    archived.sort();
    let mut weakest = vec![ids[1].0, ids[3].0];
    weakest.sort();
    assert_eq!(archived, weakest, "{report:?}");
    for (id, _) in &ids {
        let status = node.get(*id).await.unwrap().status;
        assert_eq!(status == Status::Archived, weakest.contains(id));
    }
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bank_can_send_changed_facts_to_the_conflict_queue_instead_of_superseding() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let strategies = Strategies {
        temporal: TemporalStrategy::PendingReview,
        ..Strategies::default()
    };
    let patch = BankPatch {
        strategies: Some(strategies),
        ..BankPatch::default()
    };
    node.create_bank(bank("a/careful"), patch).await.unwrap();
    for (bank_name, _) in [("a/careful", ()), ("a/default", ())] {
        let mut old = write(bank_name, "My usual coffee is a flat white.");
        old.occurred_at = Some(ts("2026-03-01T09:00:00Z"));
        node.write(old).await.unwrap();
        let mut new = write(bank_name, "Actually, I switched my coffee to an oat latte.");
        new.occurred_at = Some(ts("2026-03-05T09:00:00Z"));
        node.write(new).await.unwrap();
    }
    let at = Some(ts("2026-03-06T00:00:00Z"));
    let careful = node.review(bank("a/careful"), at).await.unwrap();
    let default = node.review(bank("a/default"), at).await.unwrap();
    assert_eq!(careful.conflicts_opened.len(), 1, "{careful:?}");
    assert!(!careful.cycle.decisions.contains_key("supersede"));
    assert!(default.conflicts_opened.is_empty(), "{default:?}");
    assert_eq!(default.cycle.decisions.get("supersede"), Some(&1));
    node.shutdown().await;
}
