//! What an operator watches: HTTP and gRPC health probes, gRPC reflection, and per-bank metrics.

use hindsight_node::BankPatch;

use crate::support::{bank, http_get, write_request, Harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_health_and_reflection() {
    let h = Harness::start().await;

    let (status, body) = http_get(h.http, "/ready").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "ready");
    let (status, _) = http_get(h.http, "/health").await;
    assert_eq!(status, 200);
    let (status, _) = http_get(h.http, "/nothing-here").await;
    assert_eq!(status, 404);

    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", h.grpc))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    for service in [
        "",
        "hindsight.v1.MemoryService",
        "hindsight.v1.BankService",
        "hindsight.v1.NodeService",
    ] {
        let answer = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            answer.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "service {service:?}"
        );
    }

    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    let mut reflection = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = reflection
        .server_reflection_info(futures::stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().expect("one answer");
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("unexpected reflection answer {answer:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for expected in [
        "hindsight.v1.MemoryService",
        "hindsight.v1.BankService",
        "hindsight.v1.NodeService",
        "grpc.health.v1.Health",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    h.stop().await;
}

/// A deleted bank's series leave /metrics, the gauges set only when a review cycle ends
/// included; another bank's all stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_banks_series_leave_the_metrics_and_the_other_banks_stay() {
    let h = Harness::start().await;
    let (kept, deleted) = ("metrics/kept", "metrics/deleted");
    for name in [kept, deleted] {
        let patch = BankPatch {
            max_memories: Some(10),
            ..BankPatch::default()
        };
        h.node.create_bank(bank(name), patch).await.unwrap();
        for content in ["The printer is on floor two", "The canteen opens at noon"] {
            h.client.write(write_request(name, content)).await.unwrap();
        }
        h.client.review(bank(name), None).await.unwrap();
    }
    // Read at scrape time, set when a write or a review cycle ends.
    let families = [
        "hindsight_bank_memories",
        "hindsight_index_vectors",
        "hindsight_index_keyword_docs",
        "hindsight_review_backlog",
        "hindsight_review_last_tokens_used",
        "hindsight_bank_quota_used_ratio",
    ];
    let series = |text: &str, family: &str, name: &str| -> Vec<String> {
        let label = format!("bank=\"{name}\"");
        text.lines()
            .filter(|l| l.starts_with(&format!("{family}{{")) && l.contains(&label))
            .map(str::to_string)
            .collect()
    };

    let (status, before) = http_get(h.http, "/metrics").await;
    assert_eq!(status, 200);
    for name in [kept, deleted] {
        for family in families {
            assert_eq!(
                series(&before, family, name).len(),
                1,
                "{family} of {name}:\n{before}"
            );
        }
    }
    assert_eq!(
        series(&before, "hindsight_bank_memories", kept),
        [format!("hindsight_bank_memories{{bank=\"{kept}\"}} 2")]
    );

    assert_eq!(h.client.delete_bank(bank(deleted)).await.unwrap(), 2);
    let (status, after) = http_get(h.http, "/metrics").await;
    assert_eq!(status, 200);
    let left: Vec<&str> = after
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(&format!("bank=\"{deleted}\"")))
        .collect();
    assert!(left.is_empty(), "the deleted bank's series stay: {left:?}");
    for family in families {
        assert_eq!(
            series(&after, family, kept),
            series(&before, family, kept),
            "{family} of {kept}:\n{after}"
        );
        // One family each, however many banks: one HELP and TYPE.
        assert_eq!(
            after.matches(&format!("# TYPE {family} ")).count(),
            1,
            "{after}"
        );
    }
    h.stop().await;
}
