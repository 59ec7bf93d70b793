//! What the write service owns beside the banks: the screener and its memory of recent writes,
//! the record signer, admission of pending writes, and the byte reservations of admitted batches.

use std::sync::Arc;

use hindsight_core::Memory;
use hindsight_guard::{RecentWrites, RecordSigner, Screener};
use parking_lot::Mutex;

use super::admission::WriteAdmission;
use super::quota::Reservations;
use crate::bank::integrity::Integrity;
use crate::config::NodeConfig;
use crate::error::NodeError;

pub(crate) struct Writing {
    /// Write-time screening, unless `guard.enabled` is off.
    screener: Option<Arc<Screener>>,
    /// The last harmless write of each recent bank and source, for the guard to judge an
    /// instruction split over two writes as a whole.
    recent_writes: Mutex<RecentWrites>,
    /// Signs records as they are written and checks them as they are read; none when
    /// `integrity.enabled` is off.
    signer: Option<RecordSigner>,
    admission: WriteAdmission,
    /// Bytes admitted under the banks' byte quotas that their views do not show yet.
    reservations: Arc<Reservations>,
}

impl Writing {
    pub(crate) fn new(
        config: &NodeConfig,
        signer: Option<RecordSigner>,
    ) -> Result<Self, NodeError> {
        let screener = if config.guard.enabled {
            let screener = Screener::new(&config.guard.rules)
                .map_err(|e| NodeError::Config(format!("[guard.rules]: {e}")))?;
            Some(Arc::new(screener))
        } else {
            tracing::warn!("write screening is off (guard.enabled = false): injected instructions will be stored and recalled like any memory");
            None
        };
        Ok(Writing {
            screener,
            recent_writes: Mutex::default(),
            signer,
            admission: WriteAdmission::new(config.rate_limit.max_pending_writes),
            reservations: Arc::default(),
        })
    }

    pub(crate) fn screener(&self) -> Option<&Screener> {
        self.screener.as_deref()
    }

    /// The screener, for work that outlives a borrow of the service (a recall's blocking part).
    pub(crate) fn shared_screener(&self) -> Option<Arc<Screener>> {
        self.screener.clone()
    }

    pub(crate) fn recent_writes(&self) -> &Mutex<RecentWrites> {
        &self.recent_writes
    }

    pub(crate) fn admission(&self) -> &WriteAdmission {
        &self.admission
    }

    pub(crate) fn reservations(&self) -> &Arc<Reservations> {
        &self.reservations
    }

    /// Signs a record about to be written (nothing when signatures are off).
    pub(crate) fn sign(&self, memory: &mut Memory) {
        if let Some(signer) = &self.signer {
            memory.signature = Some(signer.sign(memory));
        }
    }

    /// The signature check of a stored record, counted and logged when it fails.
    pub(crate) fn integrity(&self, memory: &Memory) -> Integrity {
        Integrity::check(self.signer.as_ref(), memory)
    }

    /// The signature check of a record not stored here (yet), without counting or logging it.
    pub(crate) fn signature_of(&self, memory: &Memory) -> Integrity {
        Integrity::of(self.signer.as_ref(), memory)
    }

    /// The fingerprint of the signing key, which every member of a cluster must share.
    pub(crate) fn key_fingerprint(&self) -> Option<String> {
        self.signer.as_ref().map(RecordSigner::fingerprint)
    }
}

#[cfg(test)]
mod tests {
    use hindsight_core::{MemoryId, Provenance, SourceKind, Timestamp};

    use super::*;

    fn memory(content: &str) -> Memory {
        Memory::new(
            MemoryId(7),
            "team/notes".parse().unwrap(),
            content,
            Provenance::from_source(SourceKind::User),
            Timestamp(1_000_000),
        )
    }

    fn signer() -> RecordSigner {
        RecordSigner::new("k1", "a record key long enough for the signer to take").unwrap()
    }

    #[test]
    fn a_signed_record_verifies_and_a_changed_one_fails() {
        let writing = Writing::new(&NodeConfig::default(), Some(signer())).unwrap();
        let mut record = memory("the build server restarts at noon");
        writing.sign(&mut record);
        assert!(matches!(
            writing.integrity(&record),
            Integrity::Verified { .. }
        ));
        record.content = "the build server never restarts".into();
        assert!(writing.signature_of(&record).failed());
        assert!(writing.integrity(&record).failed());
    }

    #[test]
    fn without_a_signer_records_stay_unsigned_and_are_not_refused() {
        let writing = Writing::new(&NodeConfig::default(), None).unwrap();
        let mut record = memory("lunch is at one");
        writing.sign(&mut record);
        assert!(record.signature.is_none());
        assert!(!writing.integrity(&record).failed());
        assert!(writing.key_fingerprint().is_none());
    }

    #[test]
    fn members_sharing_a_key_share_its_fingerprint() {
        let one = Writing::new(&NodeConfig::default(), Some(signer())).unwrap();
        let two = Writing::new(&NodeConfig::default(), Some(signer())).unwrap();
        let other = Writing::new(
            &NodeConfig::default(),
            Some(RecordSigner::new("k1", "another key that is just as long as the first").unwrap()),
        )
        .unwrap();
        assert_eq!(one.key_fingerprint(), two.key_fingerprint());
        assert_ne!(one.key_fingerprint(), other.key_fingerprint());
    }

    #[test]
    fn screening_follows_the_guard_setting() {
        let mut config = NodeConfig::default();
        assert!(Writing::new(&config, None).unwrap().screener().is_some());
        config.guard.enabled = false;
        let writing = Writing::new(&config, None).unwrap();
        assert!(writing.screener().is_none());
        assert!(writing.shared_screener().is_none());
    }
}
