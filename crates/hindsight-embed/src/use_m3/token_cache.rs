//! Memo of per-piece encoder values that do not depend on context.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// Bounded map from piece id to its context-free values (see
/// `UseM3Embedder`). Two generations approximate LRU: entries live in
/// `recent`; when it fills it becomes `older` and the previous `older` is
/// dropped; an entry found in `older` is moved back.
pub(crate) struct TokenCache {
    generation_size: usize,
    state: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    recent: HashMap<u32, Arc<[f32]>>,
    older: HashMap<u32, Arc<[f32]>>,
}

impl TokenCache {
    /// Holds up to about `capacity` entries; 0 disables it.
    pub fn new(capacity: usize) -> Self {
        TokenCache {
            generation_size: capacity.div_ceil(2),
            state: Mutex::new(Generations::default()),
        }
    }

    /// Looks up every id under one lock; `None` where absent.
    pub fn get_many(&self, ids: &[u32]) -> Vec<Option<Arc<[f32]>>> {
        if self.generation_size == 0 {
            return vec![None; ids.len()];
        }
        let mut state = self.state.lock();
        ids.iter()
            .map(|id| {
                if let Some(v) = state.recent.get(id) {
                    return Some(v.clone());
                }
                let v = state.older.remove(id)?;
                state.insert(*id, v.clone(), self.generation_size);
                Some(v)
            })
            .collect()
    }

    pub fn insert_many(&self, entries: impl IntoIterator<Item = (u32, Arc<[f32]>)>) {
        if self.generation_size == 0 {
            return;
        }
        let mut state = self.state.lock();
        for (id, v) in entries {
            state.insert(id, v, self.generation_size);
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        let state = self.state.lock();
        state.recent.len() + state.older.len()
    }
}

impl Generations {
    fn insert(&mut self, id: u32, v: Arc<[f32]>, generation_size: usize) {
        if self.recent.len() >= generation_size && !self.recent.contains_key(&id) {
            self.older = std::mem::take(&mut self.recent);
        }
        self.recent.insert(id, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(x: f32) -> Arc<[f32]> {
        Arc::from(vec![x])
    }

    #[test]
    fn bounded_and_keeps_used_entries() {
        let cache = TokenCache::new(4);
        cache.insert_many([(1, entry(1.0)), (2, entry(2.0))]);
        for id in 3..50 {
            cache.insert_many([(id, entry(id as f32))]);
            assert!(
                cache.get_many(&[1])[0].is_some(),
                "used entry evicted at {id}"
            );
            assert!(cache.len() <= 4);
        }
        assert!(cache.get_many(&[2])[0].is_none());
        assert_eq!(cache.get_many(&[49])[0].as_deref(), Some(&[49.0][..]));
    }

    #[test]
    fn zero_capacity_stores_nothing() {
        let cache = TokenCache::new(0);
        cache.insert_many([(1, entry(1.0))]);
        assert!(cache.get_many(&[1])[0].is_none());
        assert_eq!(cache.len(), 0);
    }
}
