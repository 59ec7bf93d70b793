//! Authentication and rights (docs/DESIGN.md, "Guard"): API keys of the form
//! `hs_<id>_<secret>`, shown once when created and stored as the SHA-256 of the secret, bound to a
//! principal with grants per bank pattern. The bootstrap admin key comes from the environment, never from the store.

use hindsight_core::auth::{ApiKey, Grant, Principal, Right};
use hindsight_core::command::{Command, CommandOutcome};
use hindsight_store::StateReader;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use hindsight_core::{BankName, Timestamp, ValidationError};
use parking_lot::Mutex;
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::error::NodeError;

use crate::bank::Banks;
pub use crate::config::AuthSection;

const KEY_PREFIX: &str = "hs_";
/// The principal of every request on a node that runs without authentication.
pub const OPEN_PRINCIPAL: &str = "anonymous";
/// The principal of the bootstrap admin key.
pub const ADMIN_PRINCIPAL: &str = "admin";

/// Failed attempts one key id may make in a window before it is locked for the rest of it.
const MAX_FAILURES_PER_WINDOW: u32 = 10;
const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Key ids tracked at once; past this the oldest windows are dropped, so a flood of made-up ids
/// cannot grow the table without bound.
const MAX_TRACKED_KEY_IDS: usize = 10_000;

/// What every failed check answers: which part was wrong would tell a prober which key ids
/// exist. The node's log keeps the reason.
const INVALID_KEY: &str = "invalid API key";

/// Checks keys against the store and the bootstrap admin key.
pub struct Authenticator {
    enabled: bool,
    /// SHA-256 of the whole admin key.
    admin: Option<[u8; 32]>,
    failures: FailedAttempts,
}

/// Failed attempts per key id, in fixed windows. Known and unknown ids are counted alike, so
/// the lock itself tells nothing about which ids exist.
#[derive(Default)]
struct FailedAttempts {
    by_key_id: Mutex<HashMap<String, (Instant, u32)>>,
}

impl FailedAttempts {
    /// How long `key_id` stays locked, if it is.
    fn locked_for(&self, key_id: &str, now: Instant) -> Option<Duration> {
        let table = self.by_key_id.lock();
        let (start, failures) = table.get(key_id)?;
        let left = FAILURE_WINDOW
            .checked_sub(now.duration_since(*start))
            .filter(|left| !left.is_zero())?;
        (*failures >= MAX_FAILURES_PER_WINDOW).then_some(left)
    }

    fn note_failure(&self, key_id: &str, now: Instant) {
        let mut table = self.by_key_id.lock();
        if table.len() >= MAX_TRACKED_KEY_IDS && !table.contains_key(key_id) {
            table.retain(|_, (start, _)| now.duration_since(*start) < FAILURE_WINDOW);
            if table.len() >= MAX_TRACKED_KEY_IDS {
                table.clear();
            }
        }
        let entry = table.entry(key_id.to_string()).or_insert((now, 0));
        if now.duration_since(entry.0) >= FAILURE_WINDOW {
            *entry = (now, 0);
        }
        entry.1 += 1;
    }
}

impl Authenticator {
    pub fn new(section: &AuthSection) -> Result<Self, NodeError> {
        if !section.enabled {
            return Ok(Authenticator {
                enabled: false,
                admin: None,
                failures: FailedAttempts::default(),
            });
        }
        let key = std::env::var(&section.admin_key_env).map_err(|_| {
            NodeError::Config(format!(
                "auth.enabled needs the bootstrap admin key in ${}",
                section.admin_key_env
            ))
        })?;
        let (_, secret) = split_key(&key)
            .map_err(|e| NodeError::Config(format!("${}: {e}", section.admin_key_env)))?;
        if secret.len() < 16 {
            return Err(NodeError::Config(format!(
                "${}: the secret part must be at least 16 characters",
                section.admin_key_env
            )));
        }
        Ok(Authenticator {
            enabled: true,
            admin: Some(sha256(key.as_bytes())),
            failures: FailedAttempts::default(),
        })
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Who sent `token` (the request's API key, if any).
    pub(crate) fn authenticate(
        &self,
        keys: &StateReader,
        token: Option<&str>,
    ) -> Result<Principal, NodeError> {
        if !self.enabled {
            return Ok(Principal::superuser(OPEN_PRINCIPAL));
        }
        let token = token
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                NodeError::Unauthenticated(
                    "this node requires an API key: send it as `authorization: Bearer <key>`"
                        .into(),
                )
            })?;
        if self
            .admin
            .is_some_and(|admin| constant_time_eq(&admin, &sha256(token.as_bytes())))
        {
            return Ok(Principal::superuser(ADMIN_PRINCIPAL));
        }
        let (id, secret) =
            split_key(token).map_err(|e| NodeError::Unauthenticated(e.to_string()))?;
        let now = Instant::now();
        if let Some(left) = self.failures.locked_for(id, now) {
            return Err(NodeError::exhausted_for(
                format!(
                    "too many failed attempts with API key {id}: try again in {} s",
                    left.as_secs().max(1)
                ),
                left,
            ));
        }
        let refuse = |why: String| {
            self.failures.note_failure(id, now);
            metrics::counter!("hindsight_auth_failures_total").increment(1);
            tracing::warn!(key_id = %id, reason = %why, "refused an API key");
            NodeError::Unauthenticated(INVALID_KEY.into())
        };
        let Some(key) = keys.api_key(id).map_err(NodeError::internal)? else {
            return Err(refuse("no such key".into()));
        };
        let given = sha256(secret.as_bytes());
        let stored = hex::decode(&key.secret_sha256).unwrap_or_default();
        if !constant_time_eq(&given, &stored) {
            return Err(refuse("wrong secret".into()));
        }
        if let Some(at) = key.revoked_at {
            return Err(refuse(format!("revoked at {at}")));
        }
        Ok(Principal {
            name: key.principal,
            key_id: Some(key.id),
            grants: key.grants,
        })
    }
}

/// Refuses unless `principal` holds `right` on `bank`.
pub fn require(principal: &Principal, right: Right, bank: &BankName) -> Result<(), NodeError> {
    if principal.may(right, bank) {
        Ok(())
    } else {
        Err(NodeError::PermissionDenied(format!(
            "{} may not {} bank {bank}",
            principal.name,
            match right {
                Right::Read => "read",
                Right::Write => "write to",
                Right::Admin => "administer",
            }
        )))
    }
}

/// Refuses unless `principal` is an administrator of every bank (key management).
pub fn require_global_admin(principal: &Principal) -> Result<(), NodeError> {
    if principal.may_everywhere(Right::Admin) {
        Ok(())
    } else {
        Err(NodeError::PermissionDenied(format!(
            "{} may not manage API keys (it needs admin on **)",
            principal.name
        )))
    }
}

/// A new key: the whole key (shown once) and its stored record.
#[derive(Clone, Debug, PartialEq)]
pub struct IssuedKey {
    pub key: String,
    pub record: ApiKey,
}

pub(crate) async fn create_key(
    banks: &Banks,
    principal: &str,
    grants: Vec<Grant>,
) -> Result<IssuedKey, NodeError> {
    let principal = principal.trim();
    if principal.is_empty() || principal.len() > 128 {
        return Err(ValidationError::Invalid("principal must be 1 to 128 bytes".into()).into());
    }
    if grants.is_empty() {
        return Err(ValidationError::Invalid(
            "a key needs at least one grant (PATTERN=RIGHT)".into(),
        )
        .into());
    }
    let mut bytes = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut bytes);
    let id = hex::encode(&bytes[..6]);
    let secret = hex::encode(&bytes[6..]);
    let record = ApiKey {
        id: id.clone(),
        principal: principal.to_string(),
        secret_sha256: hex::encode(sha256(secret.as_bytes())),
        grants,
        created_at: Timestamp::now(),
        revoked_at: None,
    };
    let (_, outcome) = banks
        .propose_metadata(Command::CreateApiKey {
            key: record.clone(),
        })
        .await?;
    match outcome {
        CommandOutcome::ApiKeyCreated => Ok(IssuedKey {
            key: format!("{KEY_PREFIX}{id}_{secret}"),
            record,
        }),
        CommandOutcome::Rejected { reason, not_found } => {
            Err(NodeError::refused(reason, not_found))
        }
        other => Err(NodeError::internal(format!(
            "unexpected outcome of a key creation: {other:?}"
        ))),
    }
}

pub(crate) async fn revoke_key(banks: &Banks, id: &str) -> Result<ApiKey, NodeError> {
    let (_, outcome) = banks
        .propose_metadata(Command::RevokeApiKey {
            id: id.trim().to_string(),
            at: Timestamp::now(),
        })
        .await?;
    match outcome {
        CommandOutcome::ApiKeyRevoked => banks
            .metadata_reader()
            .api_key(id.trim())
            .map_err(NodeError::internal)?
            .ok_or_else(|| NodeError::internal("revoked key vanished")),
        CommandOutcome::Rejected { reason, not_found } => {
            Err(NodeError::refused(reason, not_found))
        }
        other => Err(NodeError::internal(format!(
            "unexpected outcome of a key revocation: {other:?}"
        ))),
    }
}

fn split_key(key: &str) -> Result<(&str, &str), ValidationError> {
    key.trim()
        .strip_prefix(KEY_PREFIX)
        .and_then(|rest| rest.split_once('_'))
        .filter(|(id, secret)| !id.is_empty() && !secret.is_empty())
        .ok_or_else(|| ValidationError::Invalid("an API key looks like hs_<id>_<secret>".into()))
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_id_and_secret() {
        assert_eq!(split_key("hs_ab12_s3cret").unwrap(), ("ab12", "s3cret"));
        assert_eq!(split_key(" hs_ab12_s3_cret ").unwrap(), ("ab12", "s3_cret"));
        assert!(split_key("ab12_s3cret").is_err());
        assert!(split_key("hs_ab12").is_err());
        assert!(split_key("hs__x").is_err());
        assert!(constant_time_eq(b"abc", b"abc") && !constant_time_eq(b"abc", b"abd"));
    }

    #[test]
    fn a_key_id_with_too_many_failures_is_locked_for_the_rest_of_its_window() {
        let failures = FailedAttempts::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES_PER_WINDOW - 1 {
            failures.note_failure("abc", start);
        }
        assert_eq!(failures.locked_for("abc", start), None);
        failures.note_failure("abc", start);
        let later = start + Duration::from_secs(20);
        assert_eq!(
            failures.locked_for("abc", later),
            Some(FAILURE_WINDOW - Duration::from_secs(20))
        );
        assert_eq!(failures.locked_for("other", later), None);
        assert_eq!(failures.locked_for("abc", start + FAILURE_WINDOW), None);
        failures.note_failure("abc", start + FAILURE_WINDOW);
        assert_eq!(failures.locked_for("abc", start + FAILURE_WINDOW), None);
    }
}
