//! The node's model budget: tokens per interval, shared by every bank's review cycle.
//!
//! A cycle reserves what it may spend before it calls a model and settles what it spent after.
//! Reading the remainder and charging afterwards would let cycles running at once each see the
//! whole remainder, so N concurrent banks could spend N times the node's budget.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Tokens per interval, with reservations held by cycles in flight.
pub struct TokenWindow {
    limit: u64,
    interval: Duration,
    state: Mutex<WindowState>,
}

struct WindowState {
    started: Instant,
    /// Spent in this interval, counting every reservation not yet settled as spent in full.
    committed: u64,
    /// Reserved by cycles in flight.
    outstanding: u64,
}

/// Tokens a cycle may spend; give back what it did not spend with [`Reservation::settle`].
/// Dropped unsettled, the whole grant stays spent: a cycle that failed midway may have used it.
#[must_use = "settle the reservation with what was spent"]
pub struct Reservation<'a> {
    window: &'a TokenWindow,
    granted: u64,
    settled: bool,
}

impl TokenWindow {
    pub fn new(limit: u64, interval: Duration) -> Self {
        TokenWindow {
            limit,
            interval: interval.max(Duration::from_secs(1)),
            state: Mutex::new(WindowState {
                started: Instant::now(),
                committed: 0,
                outstanding: 0,
            }),
        }
    }

    /// Reserves up to `wanted` tokens of what is left in the current interval.
    pub fn reserve(&self, wanted: u64) -> Reservation<'_> {
        self.reserve_at(wanted, Instant::now())
    }

    fn reserve_at(&self, wanted: u64, now: Instant) -> Reservation<'_> {
        let mut state = self.state.lock();
        if now.duration_since(state.started) >= self.interval {
            // Cycles still in flight may spend their grants in the new interval: they count there.
            state.started = now;
            state.committed = state.outstanding;
        }
        let granted = wanted.min(self.limit.saturating_sub(state.committed));
        state.committed += granted;
        state.outstanding += granted;
        Reservation {
            window: self,
            granted,
            settled: false,
        }
    }

    /// Tokens counted against the current interval, reservations in flight included.
    #[cfg(test)]
    fn committed(&self) -> u64 {
        self.state.lock().committed
    }
}

impl Reservation<'_> {
    pub fn granted(&self) -> u64 {
        self.granted
    }

    /// Records that `spent` of the grant was used and returns the rest to the window.
    pub fn settle(mut self, spent: u64) {
        let unspent = self.granted.saturating_sub(spent);
        let mut state = self.window.state.lock();
        state.committed = state.committed.saturating_sub(unspent);
        state.outstanding = state.outstanding.saturating_sub(self.granted);
        self.settled = true;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let mut state = self.window.state.lock();
            state.outstanding = state.outstanding.saturating_sub(self.granted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_in_flight_never_add_up_past_the_limit() {
        let window = TokenWindow::new(1_000, Duration::from_secs(3600));
        let first = window.reserve(700);
        let second = window.reserve(700);
        let third = window.reserve(700);
        assert_eq!(
            (first.granted(), second.granted(), third.granted()),
            (700, 300, 0)
        );
        first.settle(200);
        // What the first did not spend is there for the next cycle.
        assert_eq!(window.reserve(1_000).granted(), 500);
    }

    #[test]
    fn an_unsettled_reservation_stays_spent() {
        let window = TokenWindow::new(1_000, Duration::from_secs(3600));
        drop(window.reserve(400));
        assert_eq!(window.committed(), 400);
        assert_eq!(window.reserve(1_000).granted(), 600);
    }

    #[test]
    fn a_new_interval_still_counts_the_grants_in_flight() {
        let window = TokenWindow::new(1_000, Duration::from_secs(60));
        let start = Instant::now();
        let in_flight = window.reserve_at(800, start);
        let later = start + Duration::from_secs(61);
        assert_eq!(window.reserve_at(1_000, later).granted(), 200);
        in_flight.settle(800);
        assert_eq!(window.committed(), 1_000);
    }
}
