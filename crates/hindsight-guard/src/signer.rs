use std::collections::BTreeMap;
use std::fmt;

use hindsight_core::memory::Signature;
use hindsight_core::Memory;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::canonical::canonical_bytes;
use crate::error::IntegrityError;

type HmacSha256 = Hmac<Sha256>;

/// Signs records with the active key and verifies them with any key in the ring, so keys can be
/// rotated without re-signing the whole store at once: add the new key, make it active, re-sign at
/// leisure, then retire the old one.
#[derive(Clone)]
pub struct RecordSigner {
    keys: BTreeMap<String, Vec<u8>>,
    active: String,
}

impl RecordSigner {
    /// A ring holding one key, which is active.
    pub fn new(
        key_id: impl Into<String>,
        secret: impl Into<Vec<u8>>,
    ) -> Result<Self, IntegrityError> {
        let key_id = key_id.into();
        let mut signer = RecordSigner {
            keys: BTreeMap::new(),
            active: key_id.clone(),
        };
        signer.add_key(key_id, secret)?;
        Ok(signer)
    }

    /// Adds (or replaces) a verification key without making it active.
    pub fn add_key(
        &mut self,
        key_id: impl Into<String>,
        secret: impl Into<Vec<u8>>,
    ) -> Result<(), IntegrityError> {
        let key_id = key_id.into();
        let secret = secret.into();
        if key_id.is_empty() {
            return Err(IntegrityError::EmptyKeyId);
        }
        if secret.is_empty() {
            return Err(IntegrityError::EmptySecret { key_id });
        }
        self.keys.insert(key_id, secret);
        Ok(())
    }

    /// Makes a key already in the ring the one new signatures use.
    pub fn activate(&mut self, key_id: &str) -> Result<(), IntegrityError> {
        if !self.keys.contains_key(key_id) {
            return Err(IntegrityError::UnknownKey {
                key_id: key_id.to_string(),
            });
        }
        self.active = key_id.to_string();
        Ok(())
    }

    /// Removes a key; records signed with it stop verifying. The active key cannot be removed.
    pub fn retire(&mut self, key_id: &str) -> Result<(), IntegrityError> {
        if key_id == self.active {
            return Err(IntegrityError::ActiveKey {
                key_id: key_id.to_string(),
            });
        }
        self.keys
            .remove(key_id)
            .map(|_| ())
            .ok_or_else(|| IntegrityError::UnknownKey {
                key_id: key_id.to_string(),
            })
    }

    pub fn active_key_id(&self) -> &str {
        &self.active
    }

    pub fn key_ids(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// HMAC-SHA256 of [`canonical_bytes`] under the active key, hex-encoded.
    pub fn sign(&self, memory: &Memory) -> Signature {
        let mut mac = self
            .mac(&self.active)
            .expect("the active key is always in the ring");
        mac.update(&canonical_bytes(memory));
        Signature {
            key_id: self.active.clone(),
            mac: hex::encode(mac.finalize().into_bytes()),
        }
    }

    /// Checks `signature` against the record as it is now, with the key the signature names.
    pub fn verify(&self, memory: &Memory, signature: &Signature) -> Result<(), IntegrityError> {
        let key_id = || signature.key_id.clone();
        let mut mac = self
            .mac(&signature.key_id)
            .ok_or_else(|| IntegrityError::UnknownKey { key_id: key_id() })?;
        let expected = hex::decode(signature.mac.trim())
            .map_err(|_| IntegrityError::MalformedMac { key_id: key_id() })?;
        mac.update(&canonical_bytes(memory));
        // `verify_slice` compares in constant time.
        mac.verify_slice(&expected)
            .map_err(|_| IntegrityError::Mismatch { key_id: key_id() })
    }

    /// Verifies the signature stored on the record itself.
    pub fn verify_attached(&self, memory: &Memory) -> Result<(), IntegrityError> {
        let signature = memory.signature.as_ref().ok_or(IntegrityError::Unsigned)?;
        self.verify(memory, signature)
    }

    /// Names the active key without revealing it: its id and a MAC of a fixed text under it.
    /// Nodes that must verify each other's records compare these before they join.
    pub fn fingerprint(&self) -> String {
        let mut mac = self
            .mac(&self.active)
            .expect("the active key is always in the ring");
        mac.update(b"hindsight record key fingerprint");
        let digest = mac.finalize().into_bytes();
        format!("{}:{}", self.active, hex::encode(&digest[..8]))
    }

    fn mac(&self, key_id: &str) -> Option<HmacSha256> {
        let secret = self.keys.get(key_id)?;
        Some(HmacSha256::new_from_slice(secret).expect("HMAC accepts keys of any length"))
    }
}

// Secrets must not leak into logs through `{:?}`.
impl fmt::Debug for RecordSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordSigner")
            .field("keys", &self.keys.keys().collect::<Vec<_>>())
            .field("active", &self.active)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::tests::sample;

    #[test]
    fn fingerprints_tell_keys_apart_without_showing_them() {
        let secret = "a shared record key of some length";
        let one = RecordSigner::new("k1", secret).unwrap();
        let same = RecordSigner::new("k1", secret).unwrap();
        let other_secret = RecordSigner::new("k1", "another record key of some length").unwrap();
        let other_id = RecordSigner::new("k2", secret).unwrap();
        assert_eq!(one.fingerprint(), same.fingerprint());
        assert_ne!(one.fingerprint(), other_secret.fingerprint());
        assert_ne!(one.fingerprint(), other_id.fingerprint());
        assert!(!one.fingerprint().contains(secret));
    }
    use hindsight_core::SourceKind;

    fn signer() -> RecordSigner {
        RecordSigner::new("k2026a", b"first secret, 32 bytes or so....".to_vec()).unwrap()
    }

    #[test]
    fn a_signed_record_verifies() {
        let signer = signer();
        let mut memory = sample();
        let signature = signer.sign(&memory);
        assert_eq!(signature.key_id, "k2026a");
        assert_eq!(signature.mac.len(), 64);
        assert_eq!(signer.verify(&memory, &signature), Ok(()));
        memory.signature = Some(signature);
        assert_eq!(signer.verify_attached(&memory), Ok(()));
    }

    #[test]
    fn signing_is_deterministic() {
        let signer = signer();
        assert_eq!(signer.sign(&sample()), signer.sign(&sample()));
    }

    #[test]
    fn tampering_with_a_covered_field_fails() {
        let signer = signer();
        let original = sample();
        let signature = signer.sign(&original);
        let tampered: Vec<Memory> = vec![
            Memory {
                content: "The quarterly report is due on the 25th.".into(),
                ..original.clone()
            },
            Memory {
                critical: true,
                ..original.clone()
            },
            {
                let mut m = original.clone();
                m.provenance.source = SourceKind::Reflection;
                m
            },
        ];
        for m in tampered {
            assert_eq!(
                signer.verify(&m, &signature),
                Err(IntegrityError::Mismatch {
                    key_id: "k2026a".into()
                }),
                "{m:?}"
            );
        }
    }

    #[test]
    fn a_forged_or_garbled_mac_fails() {
        let signer = signer();
        let memory = sample();
        let mut signature = signer.sign(&memory);
        signature.mac.replace_range(
            0..2,
            if &signature.mac[0..2] == "00" {
                "11"
            } else {
                "00"
            },
        );
        assert!(matches!(
            signer.verify(&memory, &signature),
            Err(IntegrityError::Mismatch { .. })
        ));
        signature.mac = "not hex".into();
        assert!(matches!(
            signer.verify(&memory, &signature),
            Err(IntegrityError::MalformedMac { .. })
        ));
        signature.mac.clear();
        assert!(matches!(
            signer.verify(&memory, &signature),
            Err(IntegrityError::Mismatch { .. })
        ));
    }

    #[test]
    fn records_signed_before_a_rotation_still_verify() {
        let mut signer = signer();
        let memory = sample();
        let old = signer.sign(&memory);
        signer.add_key("k2026b", b"second secret".to_vec()).unwrap();
        signer.activate("k2026b").unwrap();
        let new = signer.sign(&memory);
        assert_eq!(new.key_id, "k2026b");
        assert_ne!(new.mac, old.mac);
        assert_eq!(signer.verify(&memory, &old), Ok(()));
        assert_eq!(signer.verify(&memory, &new), Ok(()));

        signer.retire("k2026a").unwrap();
        assert_eq!(
            signer.verify(&memory, &old),
            Err(IntegrityError::UnknownKey {
                key_id: "k2026a".into()
            })
        );
        assert_eq!(
            signer.retire("k2026b"),
            Err(IntegrityError::ActiveKey {
                key_id: "k2026b".into()
            })
        );
    }

    #[test]
    fn an_unknown_key_or_a_missing_signature_is_reported_as_such() {
        let signer = signer();
        let mut memory = sample();
        let signature = Signature {
            key_id: "someone-else".into(),
            mac: "00".repeat(32),
        };
        assert_eq!(
            signer.verify(&memory, &signature),
            Err(IntegrityError::UnknownKey {
                key_id: "someone-else".into()
            })
        );
        assert_eq!(
            signer.verify_attached(&memory),
            Err(IntegrityError::Unsigned)
        );
        memory.signature = Some(signature);
        assert!(matches!(
            signer.verify_attached(&memory),
            Err(IntegrityError::UnknownKey { .. })
        ));
    }

    #[test]
    fn same_record_under_another_key_is_a_mismatch_not_a_pass() {
        let a = signer();
        let b = RecordSigner::new("k2026a", b"a different secret".to_vec()).unwrap();
        let memory = sample();
        assert!(matches!(
            b.verify(&memory, &a.sign(&memory)),
            Err(IntegrityError::Mismatch { .. })
        ));
    }

    #[test]
    fn bad_keys_are_rejected_and_secrets_stay_out_of_debug() {
        assert_eq!(
            RecordSigner::new("k", Vec::new()).unwrap_err(),
            IntegrityError::EmptySecret { key_id: "k".into() }
        );
        assert_eq!(
            RecordSigner::new("", b"s".to_vec()).unwrap_err(),
            IntegrityError::EmptyKeyId
        );
        let mut signer = signer();
        assert!(matches!(
            signer.activate("nope"),
            Err(IntegrityError::UnknownKey { .. })
        ));
        let debug = format!("{signer:?}");
        assert!(debug.contains("k2026a"));
        assert!(!debug.contains("first secret"));
    }
}
