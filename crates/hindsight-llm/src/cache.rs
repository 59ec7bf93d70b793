//! The per-pair verdict cache.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

use crate::{JudgeItem, Relation, Side, Statement, Verdict};

/// Identity of a pair for caching: the model and both memories' content, source and time, in
/// an order that does not depend on which memory is `a`. Confidence is left out on purpose:
/// it drifts every cycle (decay) and would make the cache useless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PairKey([u8; 32]);

impl PairKey {
    /// The key, and whether the item's `a`/`b` are the reverse of the stored orientation.
    pub(crate) fn of(model: &str, item: &JudgeItem) -> (PairKey, bool) {
        let swapped = fields(&item.b) < fields(&item.a);
        let (first, second) = if swapped {
            (&item.b, &item.a)
        } else {
            (&item.a, &item.b)
        };
        let mut hasher = Sha256::new();
        // Length prefixes keep ("ab","c") and ("a","bc") apart.
        for part in [model]
            .into_iter()
            .chain(fields(first))
            .chain(fields(second))
        {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        (PairKey(hasher.finalize().into()), swapped)
    }
}

fn fields(s: &Statement) -> [&str; 3] {
    [&s.content, &s.source, &s.occurred_at]
}

/// A verdict stored in the key's orientation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CachedVerdict {
    pub relation: Relation,
    pub newer_or_fact: Option<Side>,
    pub reason: String,
    pub votes: u32,
    pub samples: u32,
}

impl CachedVerdict {
    pub(crate) fn from_verdict(verdict: &Verdict, swapped: bool) -> Self {
        CachedVerdict {
            relation: verdict.relation,
            newer_or_fact: orient(verdict.newer_or_fact, swapped),
            reason: verdict.reason.clone(),
            votes: verdict.votes,
            samples: verdict.samples,
        }
    }

    pub(crate) fn to_verdict(&self, id: &str, swapped: bool) -> Verdict {
        Verdict {
            id: id.to_string(),
            relation: self.relation,
            newer_or_fact: orient(self.newer_or_fact, swapped),
            reason: self.reason.clone(),
            cached: true,
            votes: self.votes,
            samples: self.samples,
        }
    }
}

fn orient(side: Option<Side>, swapped: bool) -> Option<Side> {
    if swapped {
        side.map(Side::flipped)
    } else {
        side
    }
}

/// Least-recently-used map from pair to verdict.
pub(crate) struct VerdictCache {
    capacity: usize,
    entries: HashMap<PairKey, (CachedVerdict, u64)>,
    /// Last-use tick → key; the first entry is the one to evict.
    by_use: BTreeMap<u64, PairKey>,
    tick: u64,
}

impl VerdictCache {
    /// A capacity of 0 disables caching.
    pub(crate) fn new(capacity: usize) -> Self {
        VerdictCache {
            capacity,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
            tick: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.by_use.clear();
    }

    /// Whether `key` is cached, without counting as a use.
    pub(crate) fn contains(&self, key: &PairKey) -> bool {
        self.entries.contains_key(key)
    }

    pub(crate) fn get(&mut self, key: &PairKey) -> Option<CachedVerdict> {
        let tick = self.next_tick();
        let (value, used) = self.entries.get_mut(key)?;
        self.by_use.remove(used);
        *used = tick;
        self.by_use.insert(tick, *key);
        Some(value.clone())
    }

    pub(crate) fn insert(&mut self, key: PairKey, value: CachedVerdict) {
        if self.capacity == 0 {
            return;
        }
        let tick = self.next_tick();
        if let Some((_, old_tick)) = self.entries.insert(key, (value, tick)) {
            self.by_use.remove(&old_tick);
        }
        self.by_use.insert(tick, key);
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(a: &str, b: &str) -> JudgeItem {
        JudgeItem::new(
            "x",
            Statement::new(a, "user", "2024-01-01T00:00:00Z", 0.9),
            Statement::new(b, "tool", "2024-02-01T00:00:00Z", 0.5),
        )
    }

    fn cached(relation: Relation) -> CachedVerdict {
        CachedVerdict {
            relation,
            newer_or_fact: None,
            reason: String::new(),
            votes: 1,
            samples: 1,
        }
    }

    #[test]
    fn key_ignores_order_and_confidence_but_not_model_or_time() {
        let one = item("tea", "coffee");
        let (key, swapped) = PairKey::of("m", &one);
        let (reversed, reversed_swapped) = PairKey::of("m", &one.swapped());
        assert_eq!(key, reversed);
        assert_ne!(swapped, reversed_swapped);
        let mut other_confidence = one.clone();
        other_confidence.a.confidence = 0.1;
        assert_eq!(PairKey::of("m", &other_confidence).0, key);
        assert_ne!(PairKey::of("other-model", &one).0, key);
        let mut later = one.clone();
        later.b.occurred_at = "2024-03-01T00:00:00Z".into();
        assert_ne!(PairKey::of("m", &later).0, key);
        assert_ne!(PairKey::of("m", &item("te", "acoffee")).0, key);
    }

    #[test]
    fn sides_survive_a_swap() {
        let verdict = Verdict {
            id: "x".into(),
            relation: Relation::Update,
            newer_or_fact: Some(Side::B),
            reason: "later".into(),
            cached: false,
            votes: 1,
            samples: 1,
        };
        let stored = CachedVerdict::from_verdict(&verdict, true);
        assert_eq!(stored.newer_or_fact, Some(Side::A));
        assert_eq!(stored.to_verdict("y", true).newer_or_fact, Some(Side::B));
        assert_eq!(stored.to_verdict("y", false).newer_or_fact, Some(Side::A));
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let keys: Vec<PairKey> = (0..3)
            .map(|i| PairKey::of("m", &item(&i.to_string(), "b")).0)
            .collect();
        let mut cache = VerdictCache::new(2);
        cache.insert(keys[0], cached(Relation::Duplicate));
        cache.insert(keys[1], cached(Relation::Update));
        assert!(
            cache.get(&keys[0]).is_some(),
            "touching 0 makes 1 the oldest"
        );
        cache.insert(keys[2], cached(Relation::Unrelated));
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&keys[1]).is_none());
        assert!(cache.get(&keys[0]).is_some());
        assert_eq!(cache.get(&keys[2]).unwrap().relation, Relation::Unrelated);
        cache.insert(keys[2], cached(Relation::Duplicate));
        assert_eq!(cache.len(), 2, "replacing does not grow");

        let mut off = VerdictCache::new(0);
        off.insert(keys[0], cached(Relation::Duplicate));
        assert_eq!(off.len(), 0);
    }
}
