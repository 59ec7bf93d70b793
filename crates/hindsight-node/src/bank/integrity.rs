//! Record integrity (docs/DESIGN.md, "Guard"): every memory is signed with HMAC-SHA256 when it is
//! written (`hindsight_guard::RecordSigner`, over the statement and its provenance) and checked
//! whenever it is read. A record whose signature does not match is withheld from get and recall,
//! counted (`hindsight_integrity_failures_total`) and reported by trace.

use std::path::Path;

use hindsight_core::Memory;
use hindsight_guard::{IntegrityError, RecordSigner};
use rand::RngCore;

use crate::config::ClusterSection;
use crate::error::NodeError;

pub use crate::config::IntegritySection;

const KEY_FILE: &str = "record-key";
const MIN_KEY_CHARS: usize = 32;

/// The signer for a node, or none when integrity is off.
///
/// Every member of a cluster must sign with the same key, since a record signed where it was
/// written is checked on every replica: the key comes from `key_env`, else is derived from
/// `cluster.secret`; only a node that is not set up to join a cluster falls back to a key file
/// of its own.
pub fn signer(
    section: &IntegritySection,
    data_dir: &Path,
    cluster: &ClusterSection,
) -> Result<Option<RecordSigner>, NodeError> {
    if !section.enabled {
        tracing::warn!("record signatures are off (integrity.enabled = false): tampered records will be served");
        return Ok(None);
    }
    let secret = match std::env::var(&section.key_env) {
        Ok(key) => key,
        Err(_) if !cluster.secret.is_empty() => derived_key(&cluster.secret),
        Err(_) if !cluster.seeds().is_empty() || !cluster.bootstrap => {
            return Err(NodeError::Config(format!(
                "every node of a cluster signs records with one shared key: set $HINDSIGHT_CLUSTER_SECRET (cluster.secret) on every node, which the key is derived from, or the same key of at least {MIN_KEY_CHARS} characters in ${} on every node",
                section.key_env
            )))
        }
        Err(_) => key_file(data_dir, &section.key_env)?,
    };
    if secret.trim().len() < MIN_KEY_CHARS {
        return Err(NodeError::Config(format!(
            "the record signing key in ${} must be at least {MIN_KEY_CHARS} characters",
            section.key_env
        )));
    }
    let config = |e: IntegrityError| NodeError::Config(format!("[integrity]: {e}"));
    let mut signer =
        RecordSigner::new(section.key_id.clone(), secret.trim().as_bytes()).map_err(config)?;
    for retired in &section.retired_keys {
        let (id, var) = retired.split_once('=').ok_or_else(|| {
            NodeError::Config(format!(
                "integrity.retired_keys: {retired:?} is not ID=VARIABLE"
            ))
        })?;
        let key = std::env::var(var.trim()).map_err(|_| {
            NodeError::Config(format!(
                "integrity.retired_keys: ${} is not set",
                var.trim()
            ))
        })?;
        signer
            .add_key(id.trim(), key.trim().as_bytes())
            .map_err(config)?;
    }
    Ok(Some(signer))
}

/// A signing key of its own from the cluster's shared secret, so that knowing a signature key
/// does not reveal the secret peers authenticate with.
fn derived_key(cluster_secret: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(b"hindsight record signing key\0");
    hash.update(cluster_secret.as_bytes());
    hex::encode(hash.finalize())
}

/// The node's own key file, made with a random key on first start (readable by the owner only).
/// It sits beside the records it protects, so whoever can rewrite them can re-sign them too:
/// fine on a laptop, and said at start everywhere else.
fn key_file(data_dir: &Path, key_env: &str) -> Result<String, NodeError> {
    let path = data_dir.join(KEY_FILE);
    tracing::warn!(
        path = %path.display(),
        "the record signing key is kept inside the data directory it protects: for a node others use, set $HINDSIGHT_CLUSTER_SECRET (cluster.secret), which the key is then derived from, or ${key_env}, from a secret store"
    );
    if let Ok(key) = std::fs::read_to_string(&path) {
        return Ok(key);
    }
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    let key = hex::encode(bytes);
    std::fs::write(&path, &key)
        .map_err(|e| NodeError::Config(format!("cannot write {}: {e}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    }
    tracing::info!(path = %path.display(), "made a record signing key");
    Ok(key)
}

/// What a read found about a record's signature.
#[derive(Clone, Debug, PartialEq)]
pub enum Integrity {
    Verified {
        key_id: String,
    },
    /// Written before signatures were on, or by a node without them.
    Unsigned,
    Failed(String),
    Off,
}

impl Integrity {
    /// The check of a stored record being read: a failure is counted and logged as withheld.
    pub fn check(signer: Option<&RecordSigner>, memory: &Memory) -> Integrity {
        let integrity = Integrity::of(signer, memory);
        if let Integrity::Failed(why) = &integrity {
            metrics::counter!("hindsight_integrity_failures_total").increment(1);
            tracing::error!(id = %memory.id, bank = %memory.bank, error = %why, "record failed its integrity check; withheld");
        }
        integrity
    }

    /// What `memory`'s signature says, with no side effect: for records not stored here yet
    /// (an import's), whose failure is the caller's to report.
    pub fn of(signer: Option<&RecordSigner>, memory: &Memory) -> Integrity {
        let Some(signer) = signer else {
            return Integrity::Off;
        };
        match (&memory.signature, signer.verify_attached(memory)) {
            (None, _) => Integrity::Unsigned,
            (Some(s), Ok(())) => Integrity::Verified {
                key_id: s.key_id.clone(),
            },
            (Some(_), Err(e)) => Integrity::Failed(e.to_string()),
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self, Integrity::Failed(_))
    }

    /// As trace shows it.
    pub fn describe(&self) -> String {
        match self {
            Integrity::Verified { key_id } => format!("verified (key {key_id})"),
            Integrity::Unsigned => "unsigned".into(),
            Integrity::Failed(why) => {
                format!("FAILED: {why}; the record is withheld from get and recall")
            }
            Integrity::Off => "not checked (integrity.enabled = false)".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_joining_node_without_a_shared_key_is_told_to_set_the_cluster_secret() {
        let dir = tempfile::tempdir().unwrap();
        let section = IntegritySection {
            key_env: "HINDSIGHT_TEST_UNSET_RECORD_KEY".into(),
            ..IntegritySection::default()
        };
        let cluster = ClusterSection {
            join: "10.0.0.1:7400".into(),
            ..ClusterSection::default()
        };
        let Err(refused) = signer(&section, dir.path(), &cluster) else {
            panic!("a joining node needs a shared key");
        };
        let refused = refused.to_string();
        let secret_at = refused.find("HINDSIGHT_CLUSTER_SECRET").expect(&refused);
        let key_at = refused
            .find("HINDSIGHT_TEST_UNSET_RECORD_KEY")
            .expect(&refused);
        assert!(secret_at < key_at, "{refused}");
        let cluster = ClusterSection {
            secret: "s".repeat(32),
            ..cluster
        };
        assert!(signer(&section, dir.path(), &cluster).unwrap().is_some());
    }
}
