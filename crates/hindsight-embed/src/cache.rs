//! Memoising wrapper for any embedder.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use crate::{EmbedError, Embedder};

/// 128 bits of SHA-256 over (model id, role, text): collisions are negligible
/// and keys stay small however long the text is.
type Key = [u8; 16];

/// Counters describing how a [`CachedEmbedder`] has been used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Texts answered from the cache.
    pub hits: u64,
    /// Texts sent to the inner embedder.
    pub misses: u64,
    /// Vectors currently held.
    pub entries: usize,
}

/// Two generations approximate LRU with O(1) work and no per-entry links:
/// new and recently used entries live in `recent`; when it fills up it
/// becomes `older` and the previous `older` generation is dropped. An entry
/// found in `older` moves back to `recent`.
struct Generations {
    recent: HashMap<Key, Vec<f32>>,
    older: HashMap<Key, Vec<f32>>,
}

/// Wraps an embedder with a bounded in-memory cache keyed by model id and
/// text. Only texts not in the cache reach the inner embedder, once each per
/// call, and results come back in input order.
pub struct CachedEmbedder<E> {
    inner: E,
    generation_size: usize,
    state: Mutex<Generations>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<E: Embedder> CachedEmbedder<E> {
    /// Caches up to about `capacity` vectors; 0 disables caching.
    pub fn new(inner: E, capacity: usize) -> Self {
        CachedEmbedder {
            inner,
            generation_size: capacity.div_ceil(2),
            state: Mutex::new(Generations {
                recent: HashMap::new(),
                older: HashMap::new(),
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The wrapped embedder.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Hit and miss counts since creation, and the current size.
    pub fn stats(&self) -> CacheStats {
        let state = self.state.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: state.recent.len() + state.older.len(),
        }
    }

    /// Drops every cached vector.
    pub fn clear(&self) {
        let mut state = self.state.lock();
        state.recent.clear();
        state.older.clear();
    }

    fn key(&self, role: Role, text: &str) -> Key {
        let mut hasher = Sha256::new();
        let id = self.inner.model_id().as_bytes();
        hasher.update((id.len() as u64).to_le_bytes());
        hasher.update(id);
        if role == Role::Query {
            // Texts keep the keys they had before queries were told apart.
            hasher.update(b"\0query\0");
        }
        hasher.update(text.as_bytes());
        let digest = hasher.finalize();
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest[..16]);
        key
    }
}

impl Generations {
    fn get(&mut self, key: &Key, generation_size: usize) -> Option<Vec<f32>> {
        if let Some(v) = self.recent.get(key) {
            return Some(v.clone());
        }
        let v = self.older.remove(key)?;
        self.insert(*key, v.clone(), generation_size);
        Some(v)
    }

    fn insert(&mut self, key: Key, value: Vec<f32>, generation_size: usize) {
        if self.recent.len() >= generation_size && !self.recent.contains_key(&key) {
            self.older = std::mem::take(&mut self.recent);
        }
        self.recent.insert(key, value);
    }
}

impl<E: Embedder> Embedder for CachedEmbedder<E> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_as(Role::Text, texts)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_as(Role::Query, texts)
    }
}

/// Which side of a search a text is embedded for; a model may embed the two apart.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Text,
    Query,
}

impl<E: Embedder> CachedEmbedder<E> {
    fn embed_as(&self, role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let inner = |texts: &[&str]| match role {
            Role::Text => self.inner.embed(texts),
            Role::Query => self.inner.embed_queries(texts),
        };
        if self.generation_size == 0 {
            self.misses.fetch_add(texts.len() as u64, Ordering::Relaxed);
            return inner(texts);
        }
        let keys: Vec<Key> = texts.iter().map(|t| self.key(role, t)).collect();
        let mut results: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        // Distinct uncached texts, and for each the positions that want it.
        let mut missing: Vec<&str> = Vec::new();
        let mut wanted_by: Vec<Vec<usize>> = Vec::new();
        {
            let mut state = self.state.lock();
            let mut pending: HashMap<Key, usize> = HashMap::new();
            for (i, key) in keys.iter().enumerate() {
                if let Some(v) = state.get(key, self.generation_size) {
                    results[i] = Some(v);
                } else if let Some(&slot) = pending.get(key) {
                    wanted_by[slot].push(i);
                } else {
                    pending.insert(*key, missing.len());
                    missing.push(texts[i]);
                    wanted_by.push(vec![i]);
                }
            }
        }
        // A repeat within the call is served without the inner embedder too.
        let hits = texts.len() - missing.len();
        self.hits.fetch_add(hits as u64, Ordering::Relaxed);
        self.misses
            .fetch_add(missing.len() as u64, Ordering::Relaxed);

        if !missing.is_empty() {
            // The lock is not held here, so a slow inner embedder does not
            // block callers whose texts are cached.
            let fresh = inner(&missing)?;
            if fresh.len() != missing.len() {
                return Err(EmbedError::Shape {
                    expected: format!("{} texts", missing.len()),
                    got: format!("{} vectors", fresh.len()),
                });
            }
            let mut state = self.state.lock();
            for (vector, positions) in fresh.into_iter().zip(wanted_by) {
                state.insert(keys[positions[0]], vector.clone(), self.generation_size);
                for &i in &positions {
                    results[i] = Some(vector.clone());
                }
            }
        }
        Ok(results
            .into_iter()
            .map(|v| v.expect("every position is filled from the cache or the inner embedder"))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Records every text it is asked to embed.
    struct Counting {
        calls: Mutex<Vec<Vec<String>>>,
        texts_seen: AtomicUsize,
    }

    impl Counting {
        fn new() -> Self {
            Counting {
                calls: Mutex::new(Vec::new()),
                texts_seen: AtomicUsize::new(0),
            }
        }
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls
                .lock()
                .push(texts.iter().map(|t| t.to_string()).collect());
            self.texts_seen.fetch_add(texts.len(), Ordering::Relaxed);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
        fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.texts_seen.fetch_add(texts.len(), Ordering::Relaxed);
            Ok(texts.iter().map(|t| vec![t.len() as f32, -1.0]).collect())
        }
    }

    #[test]
    fn a_query_is_cached_apart_from_the_same_text_stored() {
        let cached = CachedEmbedder::new(Counting::new(), 100);
        assert_eq!(cached.embed(&["ab"]).unwrap(), vec![vec![2.0, 1.0]]);
        assert_eq!(
            cached.embed_queries(&["ab"]).unwrap(),
            vec![vec![2.0, -1.0]]
        );
        assert_eq!(
            cached.embed_queries(&["ab"]).unwrap(),
            vec![vec![2.0, -1.0]]
        );
        assert_eq!(cached.embed(&["ab"]).unwrap(), vec![vec![2.0, 1.0]]);
        assert_eq!(cached.inner().texts_seen.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn only_misses_reach_inner_in_order() {
        let cached = CachedEmbedder::new(Counting::new(), 100);
        let first = cached.embed(&["a", "bb", "a"]).unwrap();
        assert_eq!(first, vec![vec![1.0, 1.0], vec![2.0, 1.0], vec![1.0, 1.0]]);
        let second = cached.embed(&["ccc", "bb", "a", "dddd"]).unwrap();
        assert_eq!(
            second,
            vec![
                vec![3.0, 1.0],
                vec![2.0, 1.0],
                vec![1.0, 1.0],
                vec![4.0, 1.0]
            ]
        );
        let calls = cached.inner().calls.lock().clone();
        assert_eq!(calls, vec![vec!["a", "bb"], vec!["ccc", "dddd"]]);
        assert_eq!(
            cached.stats(),
            CacheStats {
                hits: 3,
                misses: 4,
                entries: 4
            }
        );

        // Everything cached: the inner embedder is not called at all.
        cached.embed(&["dddd", "a"]).unwrap();
        assert_eq!(cached.inner().calls.lock().len(), 2);
        assert!(cached.embed(&[]).unwrap().is_empty());
        assert_eq!(cached.inner().calls.lock().len(), 2);
    }

    #[test]
    fn stays_bounded_and_keeps_recently_used() {
        let cached = CachedEmbedder::new(Counting::new(), 10);
        let texts: Vec<String> = (0..100).map(|i| format!("text {i}")).collect();
        for t in &texts {
            cached.embed(&[t]).unwrap();
            // Touch "text 0" each time so it stays hot.
            cached.embed(&["text 0"]).unwrap();
        }
        let stats = cached.stats();
        assert!(stats.entries <= 10, "{stats:?}");
        let before = cached.inner().texts_seen.load(Ordering::Relaxed);
        cached.embed(&["text 0", "text 99"]).unwrap();
        assert_eq!(cached.inner().texts_seen.load(Ordering::Relaxed), before);
        cached.embed(&["text 1"]).unwrap();
        assert_eq!(
            cached.inner().texts_seen.load(Ordering::Relaxed),
            before + 1
        );
    }

    #[test]
    fn zero_capacity_passes_through() {
        let cached = CachedEmbedder::new(Counting::new(), 0);
        cached.embed(&["x"]).unwrap();
        cached.embed(&["x"]).unwrap();
        assert_eq!(cached.inner().texts_seen.load(Ordering::Relaxed), 2);
        assert_eq!(cached.stats().entries, 0);
    }

    #[test]
    fn errors_are_not_cached() {
        struct Failing;
        impl Embedder for Failing {
            fn model_id(&self) -> &str {
                "failing"
            }
            fn dim(&self) -> usize {
                1
            }
            fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
                Err(EmbedError::Config("down".into()))
            }
        }
        let cached = CachedEmbedder::new(Failing, 10);
        assert!(cached.embed(&["x"]).is_err());
        assert_eq!(cached.stats().entries, 0);
    }
}
