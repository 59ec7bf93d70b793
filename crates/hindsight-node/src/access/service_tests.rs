//! The access service against a small bank runtime (`bank::testing`): keys are created and
//! revoked through the metadata group, then checked and rate-limited as requests arrive.

use hindsight_core::auth::{Grant, Right};
use hindsight_core::BankName;

use super::rate::RateLimiter;
use super::{create_key, revoke_key, Access, Authenticator};
use crate::bank::testing::SmallRuntime;
use crate::config::{AuthSection, RateLimitSection};
use crate::error::NodeError;

/// An authenticator with auth on; each test names its own variable, so tests may run at once.
fn authenticator(admin_key_env: &str) -> Authenticator {
    std::env::set_var(admin_key_env, "hs_admin_0123456789abcdefghij");
    Authenticator::new(&AuthSection {
        enabled: true,
        admin_key_env: admin_key_env.into(),
        ..AuthSection::default()
    })
    .unwrap()
}

fn limits(per_key_per_sec: f64, burst: f64) -> RateLimiter {
    RateLimiter::new(RateLimitSection {
        per_key_per_sec,
        burst,
        ..RateLimitSection::default()
    })
}

fn team_bank() -> BankName {
    "team/notes".parse().unwrap()
}

#[tokio::test]
async fn a_created_key_carries_its_grants_until_it_is_revoked() {
    let runtime = SmallRuntime::start().await;
    let access = Access::new(
        authenticator("HINDSIGHT_TEST_ADMIN_KEY_GRANTS"),
        limits(1000.0, 1000.0),
    );
    let issued = create_key(
        &runtime.banks,
        "support-agent",
        vec!["team/*=read".parse::<Grant>().unwrap()],
    )
    .await
    .unwrap();
    let reader = runtime.banks.metadata_reader();
    let principal = access.authenticate(reader, Some(&issued.key)).unwrap();
    assert_eq!(principal.name, "support-agent");
    assert!(principal.may(Right::Read, &team_bank()));
    assert!(!principal.may(Right::Write, &team_bank()));

    revoke_key(&runtime.banks, &issued.record.id).await.unwrap();
    let refused = access.authenticate(reader, Some(&issued.key));
    assert!(
        matches!(refused, Err(NodeError::Unauthenticated(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_request_without_a_key_is_refused_when_auth_is_on() {
    let runtime = SmallRuntime::start().await;
    let access = Access::new(
        authenticator("HINDSIGHT_TEST_ADMIN_KEY_NONE"),
        limits(1000.0, 1000.0),
    );
    let refused = access.authenticate(runtime.banks.metadata_reader(), None);
    assert!(
        matches!(refused, Err(NodeError::Unauthenticated(_))),
        "{refused:?}"
    );
    let forged = access.authenticate(
        runtime.banks.metadata_reader(),
        Some("hs_nosuchkey_0123456789abcdefghij"),
    );
    assert!(
        matches!(forged, Err(NodeError::Unauthenticated(_))),
        "{forged:?}"
    );
}

#[tokio::test]
async fn a_key_past_its_rate_is_told_when_to_come_back() {
    let runtime = SmallRuntime::start().await;
    let access = Access::new(
        authenticator("HINDSIGHT_TEST_ADMIN_KEY_RATE"),
        limits(1.0, 2.0),
    );
    let issued = create_key(&runtime.banks, "chatty", vec!["**=read".parse().unwrap()])
        .await
        .unwrap();
    let reader = runtime.banks.metadata_reader();
    access.authenticate(reader, Some(&issued.key)).unwrap();
    access.authenticate(reader, Some(&issued.key)).unwrap();
    match access.authenticate(reader, Some(&issued.key)) {
        Err(NodeError::ResourceExhausted {
            retry_after: Some(wait),
            ..
        }) => assert!(wait.as_millis() > 0 && wait.as_secs() <= 1, "{wait:?}"),
        other => panic!("the third request in a second must wait, got {other:?}"),
    }
}

#[tokio::test]
async fn a_batch_pays_for_each_memory_it_carries() {
    let runtime = SmallRuntime::start().await;
    let access = Access::new(
        authenticator("HINDSIGHT_TEST_ADMIN_KEY_BATCH"),
        limits(0.001, 5.0),
    );
    let issued = create_key(
        &runtime.banks,
        "bulk-writer",
        vec!["**=write".parse().unwrap()],
    )
    .await
    .unwrap();
    let reader = runtime.banks.metadata_reader();
    let principal = access.authenticate(reader, Some(&issued.key)).unwrap();
    // The request paid for one memory; four more fill the burst of five.
    access.charge_batch(&principal, 5).unwrap();
    let refused = access.authenticate(reader, Some(&issued.key));
    assert!(
        matches!(refused, Err(NodeError::ResourceExhausted { .. })),
        "{refused:?}"
    );
}
