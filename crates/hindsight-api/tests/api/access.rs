//! Access control: API keys reach their own banks only, revocation, and per-key rate limits.

use std::time::Duration;

use hindsight_api::ClientError;
use hindsight_core::auth::Grant;
use hindsight_core::RecallRequest;
use tonic::Code;

use crate::support::{bank, code, write_request, Harness};

const ADMIN_KEY: &str = "hs_root_0123456789abcdef0123";

async fn secured() -> Harness {
    Harness::start_secured("HINDSIGHT_TEST_ADMIN_KEY_ACCESS", ADMIN_KEY, |_| {}).await
}

fn grants(list: &[&str]) -> Vec<Grant> {
    list.iter().map(|g| g.parse().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_reaches_its_own_banks_only_and_a_revoked_key_nothing() {
    let h = secured().await;
    let anonymous = &h.client;
    assert_eq!(
        code(
            anonymous
                .write(write_request("tenant-a/x", "hello there"))
                .await
        ),
        Code::Unauthenticated
    );
    assert_eq!(code(anonymous.status().await), Code::Unauthenticated);
    let wrong = h
        .client
        .with_api_key(Some("hs_root_not-the-secret"))
        .unwrap();
    assert_eq!(code(wrong.status().await), Code::Unauthenticated);

    let admin = h.client.with_api_key(Some(ADMIN_KEY)).unwrap();
    let (key_a, info_a) = admin
        .create_api_key("agent-a", &grants(&["tenant-a/**=write"]))
        .await
        .unwrap();
    let (key_b, _) = admin
        .create_api_key("agent-b", &grants(&["tenant-b/**=write"]))
        .await
        .unwrap();
    let (key_reader, _) = admin
        .create_api_key("auditor", &grants(&["tenant-a/**=read"]))
        .await
        .unwrap();
    assert!(key_a.starts_with("hs_") && !info_a.grants.is_empty());
    let listed = admin.api_keys().await.unwrap();
    assert_eq!(listed.len(), 3);
    assert!(
        listed.iter().all(|k| k.secret_sha256.is_empty()),
        "no hash leaves the server"
    );
    let a = h.client.with_api_key(Some(&key_a)).unwrap();
    let b = h.client.with_api_key(Some(&key_b)).unwrap();
    let reader = h.client.with_api_key(Some(&key_reader)).unwrap();

    let mine = a
        .write(write_request("tenant-a/x", "Tenant A ships on Mondays."))
        .await
        .unwrap()
        .id;
    let theirs = b
        .write(write_request(
            "tenant-b/y",
            "Tenant B's launch code is 4471.",
        ))
        .await
        .unwrap()
        .id;
    assert_eq!(
        code(
            a.write(write_request("tenant-b/y", "A writes into B."))
                .await
        ),
        Code::PermissionDenied
    );
    assert_eq!(
        code(
            a.write_batch(vec![
                write_request("tenant-a/x", "fine"),
                write_request("tenant-b/y", "not fine"),
            ])
            .await
        ),
        Code::PermissionDenied
    );
    let b_only = RecallRequest::new(vec![bank("tenant-b/y")], "launch code", 5);
    assert_eq!(code(a.recall(b_only).await), Code::PermissionDenied);
    let both = RecallRequest::new(vec![bank("tenant-a/x"), bank("tenant-b/y")], "launch", 5);
    assert_eq!(
        code(a.recall(both).await),
        Code::PermissionDenied,
        "every bank is checked"
    );
    // Someone else's memory does not exist, as far as A can tell.
    assert_eq!(code(a.get(theirs).await), Code::NotFound);
    assert_eq!(code(a.trace(theirs).await), Code::NotFound);
    assert_eq!(
        code(a.forget(theirs, true, String::new()).await),
        Code::NotFound
    );
    assert_eq!(
        code(a.review(bank("tenant-b/y"), None).await),
        Code::PermissionDenied
    );
    assert_eq!(
        code(a.conflicts(bank("tenant-b/y"), false).await),
        Code::PermissionDenied
    );
    assert_eq!(
        code(a.create_api_key("me", &grants(&["**=admin"])).await),
        Code::PermissionDenied
    );
    assert_eq!(
        b.get(theirs).await.unwrap().content,
        "Tenant B's launch code is 4471."
    );
    assert_eq!(
        admin
            .get_bank(bank("tenant-b/y"))
            .await
            .unwrap()
            .memory_count,
        1,
        "nothing of A's reached B"
    );
    let banks: Vec<String> = a
        .list_banks()
        .await
        .unwrap()
        .iter()
        .map(|b| b.config.name.to_string())
        .collect();
    assert_eq!(banks, vec!["tenant-a/x"]);

    // Read-only: recall yes, write no.
    let hits = reader
        .recall(RecallRequest::new(vec![bank("tenant-a/x")], "ships", 5))
        .await
        .unwrap();
    assert_eq!(hits.hits[0].memory.id, mine);
    assert_eq!(
        code(reader.write(write_request("tenant-a/x", "more")).await),
        Code::PermissionDenied
    );
    let logged = reader.recall_record(hits.recall_id.unwrap()).await.unwrap();
    assert_eq!(logged.principal, "auditor", "the log names who asked");

    admin.revoke_api_key(&info_a.id).await.unwrap();
    let refused = a
        .write(write_request("tenant-a/x", "after revocation"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(Code::Unauthenticated));
    // The same answer as for an unknown key or a wrong secret: which keys exist stays hidden.
    assert!(
        refused.to_string().contains("invalid API key") && !refused.to_string().contains("revoked"),
        "{refused}"
    );
    assert_eq!(
        admin
            .get_bank(bank("tenant-a/x"))
            .await
            .unwrap()
            .memory_count,
        1
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_over_one_keys_rate_is_refused_and_other_keys_are_served() {
    let h = Harness::start_secured("HINDSIGHT_TEST_ADMIN_KEY_RATE", ADMIN_KEY, |c| {
        c.rate_limit.per_key_per_sec = 2.0;
        c.rate_limit.burst = 5.0;
    })
    .await;
    let admin = h.client.with_api_key(Some(ADMIN_KEY)).unwrap();
    let (key_a, _) = admin
        .create_api_key("flooder", &grants(&["flood/**=write"]))
        .await
        .unwrap();
    let (key_b, _) = admin
        .create_api_key("neighbour", &grants(&["calm/**=write"]))
        .await
        .unwrap();
    let a = h.client.with_api_key(Some(&key_a)).unwrap();
    let b = h.client.with_api_key(Some(&key_b)).unwrap();
    let (mut admitted, mut refused) = (0, 0);
    for n in 0..30 {
        match a
            .write(write_request("flood/x", &format!("Flood item number {n}.")))
            .await
        {
            Ok(_) => admitted += 1,
            Err(e) => {
                assert_eq!(e.code(), Some(Code::ResourceExhausted), "{e}");
                assert!(e.to_string().contains("retry in"), "{e}");
                // The wait travels as a field, not only in the words.
                let ClientError::Status(status) = &e else {
                    panic!("a refusal is a status: {e}");
                };
                let wait_ms: u64 = status
                    .metadata()
                    .get(hindsight_api::status::RETRY_AFTER_MS_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("no retry-after metadata on {status:?}"));
                assert!((1..=1_000).contains(&wait_ms), "{wait_ms} ms");
                refused += 1;
            }
        }
    }
    assert!(
        refused >= 20 && admitted >= 5,
        "admitted {admitted}, refused {refused}"
    );
    b.write(write_request("calm/y", "The neighbour is served."))
        .await
        .expect("another key is not slowed by the flood");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        admin.get_bank(bank("flood/x")).await.unwrap().memory_count,
        admitted,
        "a refused write stored nothing"
    );
    h.stop().await;
}
