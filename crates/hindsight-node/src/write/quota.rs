//! Per-bank byte quotas on the write path (docs/DESIGN.md, "Guard"). A bank's `max_bytes` bounds the
//! content it holds in live and quarantined memories ([`Memory::quota_bytes`]); a write that would
//! pass it is refused before it is proposed, so nothing of it is stored.
//!
//! The check reads the bank's published view (a running total, not a walk over the bank) plus the
//! bytes of writes this node has admitted but not yet indexed, which it holds in a reservation
//! until the write is visible. Two nodes taking writes for one bank at once can each admit a
//! write the other's would have refused; the review's capacity step archives the least useful
//! memories of a bank left over its quota.
//!
//! [`Memory::quota_bytes`]: hindsight_core::Memory::quota_bytes

use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::BankName;
use parking_lot::Mutex;

use crate::error::NodeError;

/// Bytes admitted per bank and not yet in the bank's view.
#[derive(Default)]
pub struct Reservations {
    pending: Mutex<HashMap<BankName, u64>>,
}

/// One bank's side of a write, for the check.
pub struct Demand<'a> {
    pub bank: &'a BankName,
    /// The bank's quota; 0: none.
    pub max_bytes: u64,
    /// What the bank's view holds now.
    pub held: u64,
    /// What the write adds.
    pub adds: u64,
}

/// Admitted bytes, released when dropped: by then the write is in the view (or failed).
pub struct Reservation {
    ledger: Arc<Reservations>,
    taken: Vec<(BankName, u64)>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut pending = self.ledger.pending.lock();
        for (bank, bytes) in self.taken.drain(..) {
            if let Some(left) = pending.get_mut(&bank) {
                *left = left.saturating_sub(bytes);
                if *left == 0 {
                    pending.remove(&bank);
                }
            }
        }
    }
}

impl Reservations {
    /// Admits a write whose banks all stay within their quotas, or refuses it whole, naming the
    /// first bank it would take over and counting the refusal.
    pub fn admit(self: &Arc<Self>, demands: &[Demand<'_>]) -> Result<Reservation, NodeError> {
        let mut pending = self.pending.lock();
        for d in demands.iter().filter(|d| d.max_bytes > 0 && d.adds > 0) {
            let in_flight = pending.get(d.bank).copied().unwrap_or(0);
            let held = d.held + in_flight;
            if held.saturating_add(d.adds) > d.max_bytes {
                crate::metrics::bank_counter(
                    "hindsight_bank_quota_refused_total",
                    d.bank.as_str(),
                    &[("quota", "bytes")],
                    1,
                );
                tracing::info!(bank = %d.bank, held, adds = d.adds, max_bytes = d.max_bytes, "write refused: byte quota");
                return Err(NodeError::exhausted(refusal(d, held)));
            }
        }
        let mut taken = vec![];
        for d in demands.iter().filter(|d| d.max_bytes > 0 && d.adds > 0) {
            *pending.entry(d.bank.clone()).or_default() += d.adds;
            taken.push((d.bank.clone(), d.adds));
        }
        Ok(Reservation {
            ledger: self.clone(),
            taken,
        })
    }
}

fn refusal(d: &Demand<'_>, held: u64) -> String {
    let room = d.max_bytes.saturating_sub(held);
    format!(
        "bank {} is at its byte quota: it holds {held} of {} bytes of memory content and this \
         write needs {} more (room for {room}); nothing was stored. Forget or archive memories in \
         the bank, or raise its max_bytes",
        d.bank, d.max_bytes, d.adds
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(bank: &BankName, held: u64, adds: u64) -> Demand<'_> {
        Demand {
            bank,
            max_bytes: 100,
            held,
            adds,
        }
    }

    #[test]
    fn writes_in_flight_count_until_they_are_released() {
        let ledger = Arc::new(Reservations::default());
        let bank: BankName = "q/bytes".parse().unwrap();
        let first = ledger.admit(&[demand(&bank, 40, 50)]).unwrap();
        let refused = ledger.admit(&[demand(&bank, 40, 20)]).err().unwrap();
        let message = refused.to_string();
        assert!(matches!(
            refused,
            NodeError::ResourceExhausted {
                retry_after: None,
                ..
            }
        ));
        assert!(message.contains("holds 90 of 100 bytes"), "{message}");
        assert!(message.contains("needs 20 more"), "{message}");
        assert!(!message.contains("retry in"), "not a rate limit: {message}");
        drop(first);
        // Once the first write is in the view its bytes are part of `held` instead.
        ledger.admit(&[demand(&bank, 90, 10)]).unwrap();
        assert!(ledger.admit(&[demand(&bank, 90, 11)]).is_err());
    }

    #[test]
    fn a_write_over_one_banks_quota_takes_nothing_from_the_others() {
        let ledger = Arc::new(Reservations::default());
        let (a, b): (BankName, BankName) = ("q/a".parse().unwrap(), "q/b".parse().unwrap());
        assert!(ledger
            .admit(&[demand(&a, 0, 10), demand(&b, 95, 10)])
            .is_err());
        assert!(ledger.pending.lock().is_empty());
        let unlimited = Demand {
            max_bytes: 0,
            ..demand(&b, 1_000, 1_000)
        };
        let _held = ledger.admit(&[unlimited]).unwrap();
        assert!(ledger.pending.lock().is_empty(), "no quota, nothing held");
    }
}
