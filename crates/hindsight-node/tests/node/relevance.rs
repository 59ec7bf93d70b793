//! Relevance: floors on weak matches, newer statements for older ones, second hops, trust.

use std::path::Path;

use hindsight_core::{Provenance, RecallRequest, SourceKind};
use hindsight_node::Node;

use crate::harness::{bank, config, recall_ids, ts, write};

async fn seeded(dir: &Path, min_relevance: f32) -> Node {
    let mut config = config(dir);
    config.recall.min_relevance = min_relevance;
    config.recall.shadow_alike = true;
    let node = Node::start(config).await.unwrap();
    for content in [
        "The user's sister lives in Lisbon and they visit every summer",
        "The user pays the electricity bill on the first of the month",
        "Standup moved to ten o'clock on Tuesdays",
    ] {
        node.write(write("a/relevance", content)).await.unwrap();
    }
    let mut guess = write("a/relevance", "The user probably rides a road bike to work");
    guess.provenance = Provenance::from_source(SourceKind::Agent);
    node.write(guess).await.unwrap();
    node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrelated_query_gets_only_weak_matches_or_none_with_a_floor() {
    let dir = tempfile::tempdir().unwrap();
    let node = seeded(dir.path(), 0.0).await;
    let query = "quantum chromodynamics lattice gauge";
    let answer = node
        .recall(RecallRequest::new(vec![bank("a/relevance")], query, 10))
        .await
        .unwrap();
    for hit in &answer.hits {
        assert!(hit.explain.relevance < 0.15, "{hit:?}");
        assert!(
            hit.explain.flags.iter().any(|f| f == "weak_match"),
            "{hit:?}"
        );
        assert!(hit.score < 0.1, "an unrelated memory scored {}", hit.score);
    }
    node.shutdown().await;

    let dir = tempfile::tempdir().unwrap();
    let node = seeded(dir.path(), 0.03).await;
    let found = recall_ids(&node, &["a/relevance"], query, None).await;
    assert!(found.is_empty(), "{found:?}");
    // The floor leaves the right answer in place.
    let found = recall_ids(&node, &["a/relevance"], "road bike to work", None).await;
    assert_eq!(
        found.first().map(String::as_str),
        Some("The user probably rides a road bike to work")
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_statement_answering_alike_stands_for_the_older() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path());
    config.recall.shadow_alike = true;
    let node = Node::start(config).await.unwrap();
    let mut older = write("a/phone", "my work phone for pages is a Pixel 7");
    older.occurred_at = Some(ts("2026-02-01T09:00:00Z"));
    let older = node.write(older).await.unwrap().id;
    let mut newer = write("a/phone", "my work phone for pages is an iPhone 15");
    newer.occurred_at = Some(ts("2026-03-01T09:00:00Z"));
    let newer = node.write(newer).await.unwrap().id;
    let mut other = write("a/phone", "my personal email is on the work phone too");
    other.provenance = Provenance::from_source(SourceKind::Tool);
    node.write(other).await.unwrap();

    let ask = |include_history: bool| {
        let mut request =
            RecallRequest::new(vec![bank("a/phone")], "which work phone gets my pages", 10);
        request.include_history = include_history;
        request
    };
    let answer = node.recall(ask(false)).await.unwrap();
    let ids: Vec<_> = answer.hits.iter().map(|h| h.memory.id).collect();
    assert_eq!(ids.first(), Some(&newer), "{answer:?}");
    assert!(!ids.contains(&older), "{ids:?}");
    assert!(answer.hits[0]
        .explain
        .collapsed
        .contains(&older.to_string()));
    // Nothing was written: the older statement is still active and history shows both.
    let answer = node.recall(ask(true)).await.unwrap();
    let ids: Vec<_> = answer.hits.iter().map(|h| h.memory.id).collect();
    assert!(ids.contains(&older) && ids.contains(&newer), "{ids:?}");
    node.shutdown().await;
}

/// A statement that announces a change stands for the earlier statement it is closest to,
/// even when the question is worded like the earlier one; the review has not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_stands_for_the_statement_it_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path());
    config.recall.shadow_alike = true;
    let node = Node::start(config).await.unwrap();
    let mut older = write(
        "a/change",
        "our standup is in the blue room on the third floor",
    );
    older.occurred_at = Some(ts("2026-02-01T09:00:00Z"));
    let older = node.write(older).await.unwrap().id;
    let mut other = write("a/change", "my expense reports go to Hanna in finance");
    other.occurred_at = Some(ts("2026-02-02T09:00:00Z"));
    node.write(other).await.unwrap();
    let mut newer = write(
        "a/change",
        "actually, standup moved to the green room from now on",
    );
    newer.occurred_at = Some(ts("2026-03-01T09:00:00Z"));
    let newer = node.write(newer).await.unwrap().id;

    let ask = |include_history: bool| {
        let mut request = RecallRequest::new(
            vec![bank("a/change")],
            "is the standup still in the blue room on the third floor",
            5,
        );
        request.include_history = include_history;
        request
    };
    let answer = node.recall(ask(false)).await.unwrap();
    let ids: Vec<_> = answer.hits.iter().map(|h| h.memory.id).collect();
    assert_eq!(ids.first(), Some(&newer), "{answer:?}");
    assert!(!ids.contains(&older), "{ids:?}");
    let answer = node.recall(ask(true)).await.unwrap();
    let ids: Vec<_> = answer.hits.iter().map(|h| h.memory.id).collect();
    assert!(ids.contains(&older) && ids.contains(&newer), "{ids:?}");
    // Asked in the old statement's words only, which the change does not share: the change
    // is found through what it replaces, and stands for it.
    let answer = node
        .recall(RecallRequest::new(
            vec![bank("a/change")],
            "the blue room on the third floor?",
            5,
        ))
        .await
        .unwrap();
    let top = &answer.hits[0];
    assert_eq!(top.memory.id, newer, "{answer:?}");
    assert!(
        top.explain.arms.iter().any(|arm| arm.arm == "change"),
        "{top:?}"
    );
    assert!(answer.hits.iter().all(|h| h.memory.id != older));
    node.shutdown().await;
}

/// A question about "the person who runs X" is answered by two memories: who runs X, and
/// what is known of that person, which never mentions X.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_hop_through_a_named_person_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let lead = "The billing migration is run by Ottilie Varga from the payments group";
    let away = "Ottilie is at a conference in Porto until the twentieth, replies slowly";
    for content in [
        lead,
        away,
        "The billing dashboard shows invoices from the last ninety days",
        "Lunch on Fridays is usually at the noodle bar across the street",
        "The office wifi password rotates every quarter",
        "Quarterly planning happens in the big meeting room upstairs",
    ] {
        node.write(write("a/hops", content)).await.unwrap();
    }
    let answer = node
        .recall(RecallRequest::new(
            vec![bank("a/hops")],
            "Can whoever leads the billing migration look at my change this week?",
            3,
        ))
        .await
        .unwrap();
    let contents: Vec<&str> = answer
        .hits
        .iter()
        .map(|h| h.memory.content.as_str())
        .collect();
    assert_eq!(contents.first(), Some(&lead), "{answer:?}");
    let second = answer
        .hits
        .iter()
        .find(|h| h.memory.content == away)
        .unwrap_or_else(|| panic!("the second hop is missing: {contents:?}"));
    assert!(
        second.explain.arms.iter().any(|arm| arm.arm == "bridge"),
        "{second:?}"
    );
    assert!(second.score < answer.hits[0].score);
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_does_not_lift_an_unrelated_memory_over_a_relevant_one() {
    let dir = tempfile::tempdir().unwrap();
    let node = seeded(dir.path(), 0.0).await;
    // The agent's guess (confidence 0.6) answers; the user's statements (0.9) do not.
    let answer = node
        .recall(RecallRequest::new(
            vec![bank("a/relevance")],
            "does the user ride a bike to work",
            10,
        ))
        .await
        .unwrap();
    let top = &answer.hits[0];
    assert_eq!(
        top.memory.content,
        "The user probably rides a road bike to work"
    );
    assert!(
        !top.explain.flags.iter().any(|f| f == "weak_match"),
        "{top:?}"
    );
    for other in &answer.hits[1..] {
        assert!(other.score < top.score / 2.0, "{other:?} against {top:?}");
    }
    node.shutdown().await;
}
