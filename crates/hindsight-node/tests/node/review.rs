//! Review: replacements found for replaced statements, and backlogs reviewed in bounded cycles.

use hindsight_core::time::MILLIS_PER_DAY;
use hindsight_core::{RecallRequest, Status, Timestamp};
use hindsight_node::Node;

use crate::harness::{bank, config, ts, write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_worded_like_a_replaced_statement_finds_its_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let mut old = write("a/update", "My usual coffee is a flat white.");
    old.occurred_at = Some(ts("2026-03-01T09:00:00Z"));
    let old = node.write(old).await.unwrap().id;
    let mut new = write(
        "a/update",
        "Actually, I switched my coffee to an oat latte.",
    );
    new.occurred_at = Some(ts("2026-03-05T09:00:00Z"));
    let new = node.write(new).await.unwrap().id;
    let report = node
        .review(bank("a/update"), Some(ts("2026-03-06T00:00:00Z")))
        .await
        .unwrap();
    assert!(report.updated.contains(&old), "{report:?}");

    let mut request =
        RecallRequest::new(vec![bank("a/update")], "my usual coffee is a flat white", 5);
    request.as_of = Some(ts("2026-03-07T00:00:00Z"));
    let hits = node.recall(request.clone()).await.unwrap().hits;
    let ids: Vec<_> = hits.iter().map(|h| h.memory.id).collect();
    assert_eq!(
        ids,
        vec![new],
        "the replacement stands in for the replaced statement"
    );
    let semantic = hits[0]
        .explain
        .arms
        .iter()
        .find(|a| a.arm == "semantic")
        .expect("a semantic hit");
    assert!(
        semantic.score > 0.9,
        "it carries the replaced statement's match: {semantic:?}"
    );
    // Before the change, the old statement answers for itself.
    request.as_of = Some(ts("2026-03-03T00:00:00Z"));
    let hits = node.recall(request).await.unwrap().hits;
    assert_eq!(
        hits.iter().map(|h| h.memory.id).collect::<Vec<_>>(),
        vec![old]
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_backlog_is_reviewed_in_bounded_cycles_that_still_find_its_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path());
    config.review.max_changed_per_cycle = 2;
    let node = Node::start(config).await.unwrap();
    let mut old = write("a/backlog", "My usual coffee is a flat white.");
    old.occurred_at = Some(ts("2026-03-01T09:00:00Z"));
    let old = node.write(old).await.unwrap().id;
    for (n, filler) in [
        "The quarterly report goes out on Fridays.",
        "Deploys need a green build first.",
        "The team lunch is on Thursday.",
    ]
    .into_iter()
    .enumerate()
    {
        let mut request = write("a/backlog", filler);
        request.occurred_at = Some(ts(&format!("2026-03-0{}T09:00:00Z", n + 2)));
        node.write(request).await.unwrap();
    }
    let mut new = write(
        "a/backlog",
        "Actually, I switched my coffee to an oat latte.",
    );
    new.occurred_at = Some(ts("2026-03-08T09:00:00Z"));
    node.write(new).await.unwrap();

    let first = node.review(bank("a/backlog"), None).await.unwrap();
    assert!(first.cycle.changed <= 2, "{:?}", first.cycle);
    assert_eq!(first.backlog, 3, "five changes, two taken: {first:?}");
    let mut cycles = 1;
    loop {
        let report = node.review(bank("a/backlog"), None).await.unwrap();
        cycles += 1;
        assert!(report.cycle.changed <= 2, "{:?}", report.cycle);
        if report.backlog == 0 {
            break;
        }
        assert!(cycles < 10, "the backlog must shrink: {report:?}");
    }
    let old = node.get(old).await.unwrap();
    assert!(
        matches!(old.status, Status::Superseded { .. }),
        "the replacement, reviewed cycles after the original, still supersedes it: {old:?}"
    );
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_left_unused_decays_once_a_day_however_often_the_bank_is_reviewed() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let request = write("a/decay", "The staging database lives in the Oslo region.");
    let id = node.write(request).await.unwrap().id;
    let stored = node.get(id).await.unwrap().confidence;
    // Disuse counts from when the service stored the memory, so the cycles run from now on.
    let (day, hour) = (MILLIS_PER_DAY, MILLIS_PER_DAY / 24);
    let start = (Timestamp::now().0.div_euclid(day) + 1) * day + hour;
    // Reviewed every two hours for two days: two day boundaries, so two steps of decay.
    let mut as_of = Timestamp(start);
    while as_of.0 <= start + 48 * hour {
        node.review(bank("a/decay"), Some(as_of)).await.unwrap();
        as_of.0 += 2 * hour;
    }
    let decayed = node.get(id).await.unwrap().confidence;
    let per_day = hindsight_review::DecayConfig::default().per_cycle;
    assert!(
        (stored - decayed - 2.0 * per_day).abs() < 1e-4,
        "confidence {stored} → {decayed}, expected two days of {per_day}"
    );
    node.shutdown().await;
}
