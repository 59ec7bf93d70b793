//! Banks: their lifecycle, and per-bank guard and limit settings over gRPC and HTTP.
//!
//! Per-bank guard and limit settings through the real server: the corroboration switch and the
//! byte quota, set over gRPC and HTTP alike.

use std::net::SocketAddr;

use hindsight_api::pb;
use hindsight_core::{MemoryId, Provenance, RecallRequest, SourceKind, Status, WriteRequest};
use hindsight_node::BankPatch;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::Code;

use crate::support::{bank, code, http_get, stored, wire_code, write_request, Harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bank_lifecycle() {
    let h = Harness::start().await;
    let patch = BankPatch {
        description: Some("the sales team".into()),
        ..BankPatch::default()
    };
    let created = h
        .client
        .create_bank(bank("api/team"), patch.clone())
        .await
        .unwrap();
    assert_eq!(created.description, "the sales team");
    assert_eq!(
        code(h.client.create_bank(bank("api/team"), patch).await),
        Code::AlreadyExists
    );

    let info = h.client.get_bank(bank("api/team")).await.unwrap();
    assert_eq!(info.config.name, bank("api/team"));
    assert_eq!(info.memory_count, 0);
    let listed = h.client.list_banks().await.unwrap();
    assert!(listed.iter().any(|b| b.config.name == bank("api/team")));

    let updated = h
        .client
        .update_bank(
            bank("api/team"),
            BankPatch {
                min_confidence: Some(0.5),
                ..BankPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.min_confidence, 0.5);
    assert_eq!(
        updated.description, "the sales team",
        "unpatched fields stay"
    );
    assert_eq!(
        code(
            h.client
                .update_bank(
                    bank("api/team"),
                    BankPatch {
                        min_confidence: Some(1.5),
                        ..BankPatch::default()
                    },
                )
                .await
        ),
        Code::InvalidArgument
    );

    h.client
        .write(write_request("api/team", "The team meets on Tuesdays"))
        .await
        .unwrap();
    assert_eq!(h.client.delete_bank(bank("api/team")).await.unwrap(), 1);
    assert_eq!(
        code(h.client.get_bank(bank("api/team")).await),
        Code::NotFound
    );
    assert_eq!(
        code(h.client.get_bank(bank("api/nobody")).await),
        Code::NotFound
    );
    assert_eq!(
        code(h.client.delete_bank(bank("api/nobody")).await),
        Code::NotFound
    );
    assert_eq!(
        code(
            h.client
                .update_bank(bank("api/nobody"), BankPatch::default())
                .await
        ),
        Code::NotFound
    );

    let (code, message) = wire_code(
        h.banks()
            .create_bank(pb::CreateBankRequest {
                name: "Not A Bank".into(),
                settings: None,
            })
            .await,
    );
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("invalid bank name"), "{message}");
    h.stop().await;
}

/// One HTTP/1.1 request with an optional JSON body: the status, the headers (lower-case
/// names) and the body as JSON.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String, Value) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (
        status,
        head.to_ascii_lowercase(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn from_the_web(bank_name: &str, content: &str) -> WriteRequest {
    let mut request = write_request(bank_name, content);
    request.provenance = Provenance::from_source(SourceKind::Tool);
    request.provenance.tool = Some("web-fetch".into());
    request
}

async fn recalled(h: &Harness, bank_name: &str, query: &str) -> Vec<(MemoryId, Vec<String>)> {
    h.client
        .recall(RecallRequest::new(vec![bank(bank_name)], query, 5))
        .await
        .unwrap()
        .hits
        .into_iter()
        .map(|hit| (hit.memory.id, hit.explain.flags))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bank_that_requires_corroboration_recalls_a_web_claim_only_once_restated() {
    let h = Harness::start().await;
    let strict = "guard/strict";
    let created = h
        .client
        .create_bank(
            bank(strict),
            BankPatch {
                require_corroboration: Some(true),
                ..BankPatch::default()
            },
        )
        .await
        .unwrap();
    assert!(created.require_corroboration);
    let venue = "The conference venue opens its doors at 8 am.";
    let claim = h.client.write(from_the_web(strict, venue)).await.unwrap();
    let question = "When does the conference venue open?";
    assert!(
        recalled(&h, strict, question).await.is_empty(),
        "an uncorroborated web claim is not recalled in a strict bank"
    );
    let mut with_history = RecallRequest::new(vec![bank(strict)], question, 5);
    with_history.include_history = true;
    assert!(
        h.client.recall(with_history).await.unwrap().hits.is_empty(),
        "not even with history"
    );
    // Still stored: trace and the bank's listing show it.
    let trace = h.client.trace(claim.id).await.unwrap();
    assert_eq!(trace.memory.content, venue);
    assert_eq!(trace.memory.status, Status::Active);
    let listed = h
        .memory()
        .list_memories(pb::ListMemoriesRequest {
            bank: strict.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.memories.len(), 1);
    assert_eq!(listed.memories[0].id, claim.id.to_string());

    // Switched off over HTTP, the claim comes back flagged.
    let (status, _, answer) = http(
        h.http,
        "PATCH",
        "/v1/banks/guard%2Fstrict",
        Some(&json!({"patch": {"require_corroboration": false}}).to_string()),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["bank"]["require_corroboration"], false, "{answer}");
    let hits = recalled(&h, strict, question).await;
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(
        hits[0].1.contains(&"uncorroborated".to_string()),
        "{hits:?}"
    );

    // On again; the user restating the claim corroborates it.
    h.client
        .update_bank(
            bank(strict),
            BankPatch {
                require_corroboration: Some(true),
                ..BankPatch::default()
            },
        )
        .await
        .unwrap();
    assert!(recalled(&h, strict, question).await.is_empty());
    let restated = h.client.write(write_request(strict, venue)).await.unwrap();
    assert!(
        matches!(restated.disposition, hindsight_core::Disposition::MergedInto { target, .. } if target == claim.id),
        "{restated:?}"
    );
    let hits = recalled(&h, strict, question).await;
    assert_eq!(hits.first().map(|h| h.0), Some(claim.id), "{hits:?}");
    assert!(hits[0].1.contains(&"support:2".to_string()), "{hits:?}");

    // A bank without the switch keeps flagging.
    let open = "guard/open";
    let other = h.client.write(from_the_web(open, venue)).await.unwrap();
    let hits = recalled(&h, open, question).await;
    assert_eq!(hits.first().map(|h| h.0), Some(other.id));
    assert!(hits[0].1.contains(&"uncorroborated".to_string()));
    let info = h.client.get_bank(bank(strict)).await.unwrap();
    assert!(info.config.require_corroboration);
    h.stop().await;
}

/// `n` bytes of plain ASCII about `topic` and nothing else, so that no two topics merge.
fn sized(topic: &str, n: usize) -> String {
    let mut text = topic.to_string();
    while text.len() < n {
        text.push(' ');
        text.push_str(topic);
    }
    text.truncate(n - 1);
    // The node trims content, so it must not end in a space.
    text.push('.');
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_the_byte_quota_is_refused_whole_and_counted() {
    let h = Harness::start().await;
    let name = "quota/bytes";
    let created = h
        .client
        .create_bank(
            bank(name),
            BankPatch {
                max_bytes: Some(100),
                ..BankPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(created.max_bytes, 100);
    let first = h
        .client
        .write(write_request(name, &sized("the canteen", 60)))
        .await
        .unwrap();

    let refused = h
        .client
        .write(write_request(name, &sized("the printer", 50)))
        .await
        .expect_err("60 + 50 bytes pass a quota of 100");
    assert_eq!(refused.code(), Some(Code::ResourceExhausted), "{refused}");
    let message = refused.to_string();
    assert!(
        message.contains("byte quota") && message.contains("holds 60 of 100 bytes"),
        "{message}"
    );
    assert!(message.contains("needs 50 more"), "{message}");
    let batch = h
        .client
        .write_batch(vec![
            write_request(name, &sized("the garage", 20)),
            write_request(name, &sized("the library", 30)),
        ])
        .await
        .expect_err("the batch as a whole passes the quota");
    assert_eq!(batch.code(), Some(Code::ResourceExhausted));
    assert_eq!(stored(&h, name).await, 1, "a refused write stores nothing");

    // The same refusal over HTTP: 429 with the reason, and no Retry-After (waiting does not
    // make room).
    let body = json!({"content": sized("the lift", 45)}).to_string();
    let (status, head, answer) = http(
        h.http,
        "POST",
        "/v1/banks/quota%2Fbytes/memories",
        Some(&body),
    )
    .await;
    assert_eq!(status, 429, "{answer}");
    assert_eq!(answer["code"], "resource_exhausted");
    assert!(
        answer["message"].as_str().unwrap().contains("byte quota"),
        "{answer}"
    );
    assert!(!head.contains("retry-after"), "{head}");
    assert_eq!(stored(&h, name).await, 1);

    // What fits is taken, up to the last byte.
    h.client
        .write(write_request(name, &sized("the bike shed", 40)))
        .await
        .expect("60 + 40 is exactly the quota");
    // Forgetting makes room: an archived memory holds no quota.
    h.client
        .forget(first.id, false, "make room".into())
        .await
        .unwrap();
    h.client
        .write(write_request(name, &sized("the printer", 50)))
        .await
        .expect("the archived memory's bytes are free again");

    let (status, text) = http_get(h.http, "/metrics").await;
    assert_eq!(status, 200);
    let refusals = text
        .lines()
        .find(|l| {
            l.starts_with("hindsight_bank_quota_refused_total")
                && l.contains("bank=\"quota/bytes\"")
                && l.contains("quota=\"bytes\"")
        })
        .unwrap_or_else(|| panic!("refusals are counted:\n{text}"));
    assert!(refusals.ends_with(" 3"), "{refusals}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lowered_byte_quota_warns_and_review_archives_the_least_useful() {
    let h = Harness::start().await;
    let name = "quota/lowered";
    for (topic, confidence) in [
        ("the canteen", 0.9),
        ("the printer", 0.4),
        ("the lift", 0.6),
    ] {
        let mut request = write_request(name, &sized(topic, 40));
        request.confidence = Some(confidence);
        h.client.write(request).await.unwrap();
    }
    h.client
        .update_bank(
            bank(name),
            BankPatch {
                max_bytes: Some(90),
                ..BankPatch::default()
            },
        )
        .await
        .unwrap();
    let report = h.client.review(bank(name), None).await.unwrap();
    assert_eq!(report.updated.len(), 1, "{report:?}");
    let archived = h.client.trace(report.updated[0]).await.unwrap();
    assert_eq!(archived.memory.status, Status::Archived);
    assert!(
        archived.memory.content.contains("the printer"),
        "the weakest goes"
    );
    let why = &archived.history.last().unwrap().reason;
    assert!(
        why.contains("over its byte quota of 90"),
        "the history says why: {why}"
    );
    let (_, text) = http_get(h.http, "/metrics").await;
    let gauge = text
        .lines()
        .find(|l| {
            l.starts_with("hindsight_bank_byte_quota_used_ratio")
                && l.contains("bank=\"quota/lowered\"")
        })
        .unwrap_or_else(|| panic!("the byte quota's use is exported:\n{text}"));
    // 120 of 90 bytes when the cycle looked.
    let ratio: f64 = gauge.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((ratio - 120.0 / 90.0).abs() < 1e-6, "{gauge}");
    assert!(text.lines().any(
        |l| l.starts_with("hindsight_bank_byte_quota_warnings_total")
            && l.contains("bank=\"quota/lowered\"")
    ));
    h.stop().await;
}
