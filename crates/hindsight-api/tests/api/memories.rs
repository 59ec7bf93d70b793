//! Memories over gRPC: write, recall, get, trace and forget, and batches that are all or nothing.

use hindsight_api::pb;
use hindsight_core::{Kind, RecallRequest, SourceKind, Status, Timestamp};
use tonic::Code;

use crate::support::{bank, code, stored, wire_code, wire_write, write_request, Harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_recall_get_trace_and_forget() {
    let h = Harness::start().await;
    let tea = h
        .client
        .write(write_request(
            "api/life",
            "The user prefers green tea in the morning",
        ))
        .await
        .unwrap();
    let other = h
        .client
        .write(write_request(
            "api/life",
            "The deploy pipeline runs on Fridays after lunch",
        ))
        .await
        .unwrap();
    assert_ne!(tea.id, other.id);

    let mut recall = RecallRequest::new(vec![bank("api/life")], "what tea does the user like", 5);
    recall.as_of = Some(Timestamp::parse_rfc3339("2026-03-03T09:00:00Z").unwrap());
    let response = h.client.recall(recall.clone()).await.unwrap();
    assert_eq!(response.hits.first().map(|hit| hit.memory.id), Some(tea.id));
    assert!(
        !response.hits[0].explain.arms.is_empty(),
        "every hit is explained"
    );

    let memory = h.client.get(tea.id).await.unwrap();
    assert_eq!(memory.content, "The user prefers green tea in the morning");
    assert_eq!(memory.kind, Kind::Semantic);
    assert_eq!(memory.provenance.source, SourceKind::User);
    assert_eq!(memory.status, Status::Active);

    let trace = h.client.trace(tea.id).await.unwrap();
    assert_eq!(trace.memory.id, tea.id);
    assert!(!trace.history.is_empty(), "creation is in the history");

    let changed = h
        .client
        .forget(tea.id, false, "no longer true".into())
        .await
        .unwrap();
    assert!(changed.contains(&tea.id));
    assert_eq!(h.client.get(tea.id).await.unwrap().status, Status::Archived);
    // Archived from now on: a recall as of now leaves it out, while one as of before still sees it.
    let now = RecallRequest {
        as_of: None,
        ..recall.clone()
    };
    let after_soft = h.client.recall(now).await.unwrap();
    assert!(after_soft.hits.iter().all(|hit| hit.memory.id != tea.id));
    let before_forget = h.client.recall(recall.clone()).await.unwrap();
    assert_eq!(
        before_forget.hits.first().map(|hit| hit.memory.id),
        Some(tea.id)
    );

    let changed = h.client.forget(tea.id, true, String::new()).await.unwrap();
    assert!(changed.contains(&tea.id));
    assert_eq!(code(h.client.get(tea.id).await), Code::NotFound);
    assert_eq!(code(h.client.trace(tea.id).await), Code::NotFound);
    assert_eq!(h.client.get(other.id).await.unwrap().id, other.id);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_writes_are_all_or_nothing() {
    let h = Harness::start().await;
    let items = vec![
        write_request("api/batch", "first of the batch"),
        write_request("api/batch", "second of the batch, about something else"),
    ];
    let outcomes = h.client.write_batch(items).await.unwrap();
    assert_eq!(outcomes.len(), 2);
    assert_eq!(stored(&h, "api/batch").await, 2);

    let (code, message) = wire_code(
        h.memory()
            .write_batch(pb::WriteBatchRequest {
                items: vec![
                    wire_write("api/batch", "fine"),
                    wire_write("api/batch", "   "),
                ],
            })
            .await,
    );
    assert_eq!(code, Code::InvalidArgument, "{message}");
    assert_eq!(
        stored(&h, "api/batch").await,
        2,
        "a refused batch stores nothing"
    );
    h.stop().await;
}
