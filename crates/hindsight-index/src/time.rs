//! Memories ordered by when they happened.

use std::collections::{BTreeSet, HashMap};

use parking_lot::RwLock;

use crate::heap::{btree_bytes, hash_map_bytes};
use crate::persist;
use crate::topk::sort_hits;
use crate::IndexError;

/// `(occurred_at_ms, id)` index. Windows are half-open: `start <= t < end`.
#[derive(Default)]
pub struct TimeIndex {
    inner: RwLock<State>,
}

#[derive(Default)]
struct State {
    order: BTreeSet<(i64, u128)>,
    at: HashMap<u128, i64>,
}

impl State {
    fn window(&self, start: i64, end: i64) -> std::collections::btree_set::Range<'_, (i64, u128)> {
        // `(end, 0)` is the smallest key at `end`, so excluding it excludes `end`.
        self.order.range((start, 0)..(end, 0))
    }
}

impl TimeIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the time of `id`, replacing an earlier one.
    pub fn upsert(&self, id: u128, occurred_at_ms: i64) {
        let mut st = self.inner.write();
        if let Some(old) = st.at.insert(id, occurred_at_ms) {
            st.order.remove(&(old, id));
        }
        st.order.insert((occurred_at_ms, id));
    }

    /// Removes `id`; returns whether it was indexed.
    pub fn remove(&self, id: u128) -> bool {
        let mut st = self.inner.write();
        match st.at.remove(&id) {
            Some(t) => {
                st.order.remove(&(t, id));
                true
            }
            None => false,
        }
    }

    /// The time of `id`.
    pub fn get(&self, id: u128) -> Option<i64> {
        self.inner.read().at.get(&id).copied()
    }

    /// Whether `id` is indexed.
    pub fn contains(&self, id: u128) -> bool {
        self.inner.read().at.contains_key(&id)
    }

    /// Heap bytes of the ordered times and the map from id to time.
    pub fn heap_bytes(&self) -> u64 {
        let st = self.inner.read();
        btree_bytes::<(i64, u128)>(st.order.len()) + hash_map_bytes(&st.at)
    }

    /// Number of indexed memories.
    pub fn len(&self) -> usize {
        self.inner.read().at.len()
    }

    /// Whether no memory is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All ids with `start <= t < end`, oldest first.
    pub fn range(&self, start_ms: i64, end_ms: i64) -> Vec<u128> {
        if start_ms >= end_ms {
            return Vec::new();
        }
        self.inner
            .read()
            .window(start_ms, end_ms)
            .map(|&(_, id)| id)
            .collect()
    }

    /// The ids with `start <= t < end`, oldest first, when there are at most `max` of them;
    /// `None` for a wider window, without collecting it.
    pub fn range_at_most(&self, start_ms: i64, end_ms: i64, max: usize) -> Option<Vec<u128>> {
        if start_ms >= end_ms {
            return Some(Vec::new());
        }
        let st = self.inner.read();
        let ids: Vec<u128> = st
            .window(start_ms, end_ms)
            .take(max.saturating_add(1))
            .map(|&(_, id)| id)
            .collect();
        (ids.len() <= max).then_some(ids)
    }

    /// The share of the indexed memories with `start <= t < end`. Counting stops just past half
    /// of them: a window holding more says little about a memory either way, and a wide window
    /// of a large bank is not walked to the end.
    pub fn share_within(&self, start_ms: i64, end_ms: i64) -> f32 {
        if start_ms >= end_ms {
            return 0.0;
        }
        let st = self.inner.read();
        let total = st.order.len();
        if total == 0 {
            return 0.0;
        }
        let counted = st.window(start_ms, end_ms).take(total / 2 + 1).count();
        counted.min(total / 2 + 1) as f32 / total as f32
    }

    /// Whether `id` happened in `start <= t < end`.
    pub fn within(&self, id: u128, start_ms: i64, end_ms: i64) -> bool {
        self.get(id).is_some_and(|t| start_ms <= t && t < end_ms)
    }

    /// The `k` memories in the window closest to its centre, passing `filter`.
    ///
    /// A time expression ("last week", "上周") names a period, and its middle
    /// is its most typical point; recency is rewarded separately by the
    /// lifecycle score, so it is not counted twice here. Score is
    /// `1 - |t - centre| / half_width`, in `[0, 1]`; use [`Self::latest`] for
    /// most-recent-first.
    pub fn search(
        &self,
        start_ms: i64,
        end_ms: i64,
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        if start_ms >= end_ms || k == 0 {
            return Vec::new();
        }
        let half = ((i128::from(end_ms) - i128::from(start_ms)) as f64 / 2.0).max(1.0);
        let centre =
            (i128::from(start_ms) + (i128::from(end_ms) - i128::from(start_ms)) / 2) as i64;
        let st = self.inner.read();
        let mut before = st.window(start_ms, centre).rev().peekable();
        let mut after = st.window(centre, end_ms).peekable();
        let dist = |t: i64| (i128::from(t) - i128::from(centre)).unsigned_abs();
        let mut out: Vec<(u128, f32)> = Vec::new();
        let mut last_taken: Option<u128> = None;
        // Walk outwards from the centre; after k hits keep going only while
        // distances tie, so the cut is decided by id rather than by walk order.
        loop {
            let next = match (before.peek(), after.peek()) {
                (None, None) => break,
                (Some(_), None) => before.next(),
                (None, Some(_)) => after.next(),
                (Some(b), Some(a)) => {
                    if dist(b.0) < dist(a.0) {
                        before.next()
                    } else {
                        after.next()
                    }
                }
            };
            let &(t, id) = next.expect("peeked");
            let d = dist(t);
            if out.len() >= k && last_taken.is_some_and(|ld| d > ld) {
                break;
            }
            if filter(id) {
                out.push((id, (1.0 - d as f64 / half).max(0.0) as f32));
                last_taken = Some(d);
            }
        }
        sort_hits(&mut out);
        out.truncate(k);
        out
    }

    /// The `k` most recent memories in the window passing `filter`, newest
    /// first; score is the position in the window, `(t - start) / (end - start)`.
    pub fn latest(
        &self,
        start_ms: i64,
        end_ms: i64,
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        if start_ms >= end_ms || k == 0 {
            return Vec::new();
        }
        let width = (i128::from(end_ms) - i128::from(start_ms)) as f64;
        let st = self.inner.read();
        st.window(start_ms, end_ms)
            .rev()
            .filter(|&&(_, id)| filter(id))
            .take(k)
            .map(|&(t, id)| {
                (
                    id,
                    ((i128::from(t) - i128::from(start_ms)) as f64 / width) as f32,
                )
            })
            .collect()
    }

    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>, IndexError> {
        let st = self.inner.read();
        let entries: Vec<(u128, i64)> = st.order.iter().map(|&(t, id)| (id, t)).collect();
        persist::encode(&entries)
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self, IndexError> {
        let entries: Vec<(u128, i64)> = persist::decode(bytes, "time index")?;
        let mut st = State::default();
        for (id, t) in entries {
            if st.at.insert(id, t).is_some() {
                return Err(IndexError::Corrupt(format!("time entry {id:#x} twice")));
            }
            st.order.insert((t, id));
        }
        Ok(TimeIndex {
            inner: RwLock::new(st),
        })
    }
}

impl std::fmt::Debug for TimeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeIndex")
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reports_its_share_of_the_index_up_to_just_over_half() {
        let idx = TimeIndex::new();
        assert_eq!(idx.share_within(0, 100), 0.0);
        for i in 0..10 {
            idx.upsert(i, i as i64 * 10);
        }
        assert_eq!(idx.share_within(0, 20), 0.2);
        assert_eq!(idx.share_within(50, 50), 0.0);
        assert_eq!(idx.share_within(0, 100), 0.6);
        assert_eq!(idx.share_within(-1000, 1000), 0.6);
    }

    #[test]
    fn extreme_bounds_do_not_overflow() {
        let idx = TimeIndex::new();
        idx.upsert(1, i64::MIN);
        idx.upsert(2, 0);
        idx.upsert(3, i64::MAX - 1);
        assert_eq!(idx.range(i64::MIN, i64::MAX), vec![1, 2, 3]);
        let hits = idx.search(i64::MIN, i64::MAX, 3, &|_| true);
        assert_eq!(hits[0].0, 2);
        assert_eq!(hits.len(), 3);
    }

    #[test]
    fn a_window_is_collected_only_when_it_is_narrow_enough() {
        let idx = TimeIndex::new();
        for id in 0..10u128 {
            idx.upsert(id, id as i64 * 10);
        }
        assert_eq!(idx.range_at_most(20, 50, 3), Some(vec![2, 3, 4]));
        assert_eq!(idx.range_at_most(20, 51, 3), None, "four in the window");
        assert_eq!(idx.range_at_most(50, 20, 0), Some(vec![]));
        assert!(idx.within(2, 20, 50) && !idx.within(5, 20, 50) && !idx.within(99, 0, 1000));
    }

    #[test]
    fn round_trip() {
        let idx = TimeIndex::new();
        idx.upsert(7, 5);
        idx.upsert(8, -5);
        let back = TimeIndex::from_bytes(&idx.to_bytes().unwrap()).unwrap();
        assert_eq!(back.range(-10, 10), vec![8, 7]);
        assert_eq!(back.get(7), Some(5));
    }
}
