//! Bad input to every gRPC call is refused with the reason, and nothing of it is stored.

use hindsight_api::pb;
use tonic::Code;

use crate::support::{
    code, stored, unknown_id, wire_code, wire_recall, wire_write, write_request, Harness,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_and_stores_nothing() {
    let h = Harness::start().await;
    let mut memory = h.memory();
    let limit = h.node.config().limits.max_content_bytes;

    let refused_writes = [
        ("empty content", wire_write("api/bad", "  \n ")),
        (
            "content over the limit",
            wire_write("api/bad", &"x".repeat(limit + 1)),
        ),
        (
            "unknown kind",
            pb::WriteRequest {
                kind: Some("fact".into()),
                ..wire_write("api/bad", "a fact")
            },
        ),
        (
            "unknown source",
            pb::WriteRequest {
                provenance: Some(pb::Provenance {
                    source: "rumour".into(),
                    ..Default::default()
                }),
                ..wire_write("api/bad", "heard somewhere")
            },
        ),
        (
            "malformed occurred_at",
            pb::WriteRequest {
                occurred_at: Some("yesterday".into()),
                ..wire_write("api/bad", "something happened")
            },
        ),
        (
            "ttl of zero",
            pb::WriteRequest {
                ttl_seconds: Some(0),
                ..wire_write("api/bad", "short-lived")
            },
        ),
        (
            "confidence out of range",
            pb::WriteRequest {
                confidence: Some(1.5),
                ..wire_write("api/bad", "very sure")
            },
        ),
    ];
    for (what, request) in refused_writes {
        let (code, message) = wire_code(memory.write(request).await);
        assert_eq!(code, Code::InvalidArgument, "{what}: {message}");
        assert!(!message.is_empty(), "{what}: the reason is given");
    }
    let (_, message) = wire_code(memory.write(wire_write("api/bad", "")).await);
    assert!(message.contains("content must not be empty"), "{message}");
    let (_, message) = wire_code(
        memory
            .write(pb::WriteRequest {
                occurred_at: Some("yesterday".into()),
                ..wire_write("api/bad", "x")
            })
            .await,
    );
    assert!(message.contains("invalid timestamp"), "{message}");
    for name in ["", "Bad Bank", "/x", "a//b", "a/b/c/d/e"] {
        let (code, message) = wire_code(memory.write(wire_write(name, "fine content")).await);
        assert_eq!(code, Code::InvalidArgument, "bank {name:?}: {message}");
    }
    assert_eq!(stored(&h, "api/bad").await, 0, "nothing refused was stored");

    h.client
        .write(write_request("api/bad", "One good memory about coffee"))
        .await
        .unwrap();
    let refused_recalls = [
        (
            "top_k 0",
            pb::RecallRequest {
                top_k: Some(0),
                ..wire_recall(&["api/bad"], "coffee")
            },
        ),
        (
            "huge top_k",
            pb::RecallRequest {
                top_k: Some(1_000_000),
                ..wire_recall(&["api/bad"], "coffee")
            },
        ),
        (
            "malformed as_of",
            pb::RecallRequest {
                as_of: Some("2026-13-01T00:00:00Z".into()),
                ..wire_recall(&["api/bad"], "coffee")
            },
        ),
        ("no banks", wire_recall(&[], "coffee")),
        ("invalid bank", wire_recall(&["Bad Bank"], "coffee")),
        ("empty query", wire_recall(&["api/bad"], "  ")),
        (
            "unknown kind filter",
            pb::RecallRequest {
                filters: Some(pb::RecallFilters {
                    kinds: vec!["fact".into()],
                    ..Default::default()
                }),
                ..wire_recall(&["api/bad"], "coffee")
            },
        ),
        (
            "unknown consistency",
            pb::RecallRequest {
                consistency: Some("sometimes".into()),
                ..wire_recall(&["api/bad"], "coffee")
            },
        ),
    ];
    for (what, request) in refused_recalls {
        let (code, message) = wire_code(memory.recall(request).await);
        assert_eq!(code, Code::InvalidArgument, "{what}: {message}");
    }
    let unset_top_k = memory
        .recall(wire_recall(&["api/bad"], "coffee"))
        .await
        .expect("top_k has a default");
    assert_eq!(unset_top_k.into_inner().hits.len(), 1);

    for id in ["not-an-id", "", "01ARZ3NDEKTSV4RRFFQ69G5FA"] {
        let (code, message) = wire_code(
            memory
                .get(pb::GetRequest {
                    id: id.into(),
                    consistency: None,
                })
                .await,
        );
        assert_eq!(code, Code::InvalidArgument, "id {id:?}: {message}");
        let (code, _) = wire_code(memory.trace(pb::TraceRequest { id: id.into() }).await);
        assert_eq!(code, Code::InvalidArgument);
        let (code, _) = wire_code(
            memory
                .forget(pb::ForgetRequest {
                    id: id.into(),
                    hard: true,
                    reason: None,
                })
                .await,
        );
        assert_eq!(code, Code::InvalidArgument);
    }
    assert_eq!(code(h.client.get(unknown_id()).await), Code::NotFound);
    assert_eq!(code(h.client.trace(unknown_id()).await), Code::NotFound);
    assert_eq!(
        code(h.client.forget(unknown_id(), false, String::new()).await),
        Code::NotFound
    );

    let (code, message) = wire_code(
        memory
            .review(pb::ReviewRequest {
                bank: "api/bad".into(),
                as_of: Some("next tuesday".into()),
            })
            .await,
    );
    assert_eq!(code, Code::InvalidArgument, "{message}");
    assert_eq!(
        stored(&h, "api/bad").await,
        1,
        "only the good write is stored"
    );
    h.stop().await;
}
