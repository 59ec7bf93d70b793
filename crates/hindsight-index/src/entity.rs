//! Memories linked through the entities they mention.

use std::collections::{HashMap, HashSet};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::heap::{hash_map_bytes, inverted_bytes, vec_bytes};
use crate::persist;
use crate::topk::TopK;
use crate::IndexError;

/// Limits of the two-hop expansion in [`EntityIndex::search`].
#[derive(Clone, Debug)]
pub struct EntityConfig {
    /// Factor applied to scores of memories reached through a second hop.
    pub hop2_decay: f32,
    /// Best first-hop memories whose other entities are followed.
    pub max_seeds: usize,
    /// Co-mentioned entities followed in the second hop.
    pub max_bridges: usize,
    /// Entities mentioned by more memories than this are never followed...
    pub max_fanout: usize,
    /// ...nor are those mentioned by more than this fraction of all memories
    /// (but at least 4 memories are always allowed).
    pub max_fanout_ratio: f64,
}

impl Default for EntityConfig {
    fn default() -> Self {
        EntityConfig {
            hop2_decay: 0.5,
            max_seeds: 64,
            max_bridges: 64,
            max_fanout: 256,
            max_fanout_ratio: 0.05,
        }
    }
}

/// Bidirectional map between memories and the (already normalised) entity
/// names they mention, searched by entity overlap.
#[derive(Default)]
pub struct EntityIndex {
    cfg: EntityConfig,
    inner: RwLock<State>,
}

struct Mem {
    id: u128,
    entities: Vec<u32>,
}

#[derive(Default)]
struct State {
    entity_ids: HashMap<String, u32>,
    names: Vec<String>,
    /// Entity → memory slots.
    postings: Vec<Vec<u32>>,
    mems: Vec<Option<Mem>>,
    free: Vec<u32>,
    slot_of: HashMap<u128, u32>,
}

#[derive(Serialize, Deserialize)]
struct Dump {
    names: Vec<String>,
    mems: Vec<(u128, Vec<u32>)>,
}

impl State {
    fn remove(&mut self, id: u128) -> bool {
        let Some(slot) = self.slot_of.remove(&id) else {
            return false;
        };
        let mem = self.mems[slot as usize]
            .take()
            .expect("slot_of points at a memory");
        for &e in &mem.entities {
            let list = &mut self.postings[e as usize];
            if let Some(pos) = list.iter().position(|&m| m == slot) {
                list.swap_remove(pos);
            }
        }
        self.free.push(slot);
        true
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&e) = self.entity_ids.get(name) {
            return e;
        }
        let e = u32::try_from(self.names.len()).expect("fewer than 4 billion entities");
        self.entity_ids.insert(name.to_owned(), e);
        self.names.push(name.to_owned());
        self.postings.push(Vec::new());
        e
    }

    fn insert<S: AsRef<str>>(&mut self, id: u128, entities: &[S]) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.mems.push(None);
                u32::try_from(self.mems.len() - 1).expect("fewer than 4 billion memories")
            }
        };
        let mut ids: Vec<u32> = Vec::with_capacity(entities.len());
        for name in entities {
            let e = self.intern(name.as_ref());
            if !ids.contains(&e) {
                ids.push(e);
                self.postings[e as usize].push(slot);
            }
        }
        self.mems[slot as usize] = Some(Mem { id, entities: ids });
        self.slot_of.insert(id, slot);
    }

    /// The query's known entities, and the score of every memory naming one of them: the sum of
    /// those entities' weights.
    fn first_hop<S: AsRef<str>>(&self, query_entities: &[S]) -> (Vec<u32>, HashMap<u32, f32>) {
        let mut query: Vec<u32> = Vec::new();
        for name in query_entities {
            if let Some(&e) = self.entity_ids.get(name.as_ref()) {
                if !query.contains(&e) && !self.postings[e as usize].is_empty() {
                    query.push(e);
                }
            }
        }
        let mut hop1: HashMap<u32, f32> = HashMap::new();
        for &e in &query {
            let list = &self.postings[e as usize];
            let w = self.weight(list.len());
            for &m in list {
                *hop1.entry(m).or_insert(0.0) += w;
            }
        }
        (query, hop1)
    }

    fn mem_id(&self, slot: u32) -> u128 {
        self.mems[slot as usize]
            .as_ref()
            .expect("posting of live memory")
            .id
    }

    /// Rarer entities say more about a memory.
    fn weight(&self, df: usize) -> f32 {
        (1.0 + self.slot_of.len() as f32 / df.max(1) as f32).ln()
    }
}

impl EntityIndex {
    /// An empty index with default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty index with the given limits.
    pub fn with_config(cfg: EntityConfig) -> Self {
        EntityIndex {
            cfg,
            inner: RwLock::default(),
        }
    }

    /// Sets the entities of `id`, replacing earlier ones; duplicates are
    /// ignored and an empty list removes the memory.
    pub fn upsert<S: AsRef<str>>(&self, id: u128, entities: &[S]) {
        let mut st = self.inner.write();
        st.remove(id);
        if !entities.is_empty() {
            st.insert(id, entities);
        }
    }

    /// Removes `id`; returns whether it was indexed.
    pub fn remove(&self, id: u128) -> bool {
        self.inner.write().remove(id)
    }

    /// Whether `id` is indexed.
    pub fn contains(&self, id: u128) -> bool {
        self.inner.read().slot_of.contains_key(&id)
    }

    /// Heap bytes of the entity names, their postings and each memory's entities.
    pub fn heap_bytes(&self) -> u64 {
        let st = self.inner.read();
        inverted_bytes(&st.entity_ids, &st.names, &st.postings)
            + vec_bytes(&st.mems)
            + st.mems
                .iter()
                .flatten()
                .map(|mem| vec_bytes(&mem.entities))
                .sum::<u64>()
            + vec_bytes(&st.free)
            + hash_map_bytes(&st.slot_of)
    }

    /// Number of memories with at least one entity.
    pub fn len(&self) -> usize {
        self.inner.read().slot_of.len()
    }

    /// Whether no memory is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entities of `id`, in the order first given.
    pub fn entities_of(&self, id: u128) -> Vec<String> {
        let st = self.inner.read();
        st.slot_of
            .get(&id)
            .and_then(|&s| st.mems[s as usize].as_ref())
            .map(|m| {
                m.entities
                    .iter()
                    .map(|&e| st.names[e as usize].clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many memories mention `entity`, and at most `max` of them (unordered).
    pub fn some_memories_of(&self, entity: &str, max: usize) -> (usize, Vec<u128>) {
        let st = self.inner.read();
        st.entity_ids
            .get(entity)
            .map(|&e| {
                let postings = &st.postings[e as usize];
                let some = postings.iter().take(max).map(|&m| st.mem_id(m)).collect();
                (postings.len(), some)
            })
            .unwrap_or_default()
    }

    /// Memories mentioning `entity` (unordered).
    pub fn memories_of(&self, entity: &str) -> Vec<u128> {
        let st = self.inner.read();
        st.entity_ids
            .get(entity)
            .map(|&e| {
                st.postings[e as usize]
                    .iter()
                    .map(|&m| st.mem_id(m))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The hop-1 score of a memory that mentions every one of `query_entities` the index knows,
    /// were each mentioned by that memory alone: `Σ ln(1 + N)`. A hit's score over it says how
    /// much the query's entities single it out; an entity every memory mentions (a speaker's
    /// name in a chat) says little.
    pub fn best_possible<S: AsRef<str>>(&self, query_entities: &[S]) -> f32 {
        let st = self.inner.read();
        let (query, _) = st.first_hop(query_entities);
        query.len() as f32 * st.weight(1)
    }

    /// Memories related to `query_entities`, best first.
    ///
    /// Hop 1: memories mentioning a query entity, scored by the sum over
    /// matched entities of `ln(1 + N / df)`. Hop 2 (`hops >= 2`): entities
    /// co-mentioned in the best hop-1 memories, skipping entities too common
    /// to be informative (see [`EntityConfig`]), lead to further memories
    /// scored `hop2_decay × Σ bridge strength`, where a bridge's strength is
    /// its rarity weight scaled by its best hop-1 memory's relative score.
    /// `filter` applies to results and to hop-1 memories used as bridges.
    pub fn search<S: AsRef<str>>(
        &self,
        query_entities: &[S],
        hops: u8,
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        if k == 0 {
            return Vec::new();
        }
        let st = self.inner.read();
        let (query, hop1) = st.first_hop(query_entities);
        // The filter is costly and a common entity can name thousands of memories, all tied in
        // score when the query names one entity: hits are ranked as the top k ranks them (score,
        // then lower id) and the filter runs on the best first, only until both the top k and
        // the seeds are settled. Seeds break ties by id too; any fixed order would do.
        let mut ranked: Vec<(u128, u32, f32)> =
            hop1.iter().map(|(&m, &s)| (st.mem_id(m), m, s)).collect();
        let passed = best_passing(
            &mut ranked,
            k.max(self.cfg.max_seeds),
            |h| (h.0, h.2),
            filter,
        );
        let mut top = TopK::new(k);
        for &(id, _, s) in &passed {
            top.push(id, s);
        }
        if hops >= 2 && !passed.is_empty() {
            let seeds: Vec<(u32, f32)> = passed
                .iter()
                .take(self.cfg.max_seeds)
                .map(|&(_, m, s)| (m, s))
                .collect();
            for (id, s) in self.second_hop(&st, &query, &hop1, &seeds, k, filter) {
                top.push(id, s);
            }
        }
        top.into_sorted()
    }

    fn second_hop(
        &self,
        st: &State,
        query: &[u32],
        hop1: &HashMap<u32, f32>,
        seeds: &[(u32, f32)],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        let n = st.slot_of.len();
        let fanout = ((n as f64 * self.cfg.max_fanout_ratio) as usize)
            .max(4)
            .min(self.cfg.max_fanout);
        let best = seeds.first().map_or(1.0, |s| s.1).max(f32::MIN_POSITIVE);
        let query: HashSet<u32> = query.iter().copied().collect();
        // Each bridge with its strength and the best hop-1 score of a seed that leads to it.
        let mut bridges: HashMap<u32, (f32, f32)> = HashMap::new();
        for &(m, s) in seeds {
            let mem = st.mems[m as usize].as_ref().expect("seed is live");
            for &e in &mem.entities {
                let df = st.postings[e as usize].len();
                // df == 1: the seed itself is the only memory it leads to.
                if query.contains(&e) || df <= 1 || df > fanout {
                    continue;
                }
                let strength = st.weight(df) * s / best;
                let slot = bridges.entry(e).or_insert((0.0, 0.0));
                *slot = (slot.0.max(strength), slot.1.max(s));
            }
        }
        let mut bridges: Vec<(u32, (f32, f32))> = bridges.into_iter().collect();
        bridges.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
        bridges.truncate(self.cfg.max_bridges);
        let mut hop2: HashMap<u32, (f32, f32)> = HashMap::new();
        for &(e, (strength, seed)) in &bridges {
            for &m in &st.postings[e as usize] {
                if !hop1.contains_key(&m) {
                    let slot = hop2.entry(m).or_insert((0.0, 0.0));
                    *slot = (slot.0 + self.cfg.hop2_decay * strength, slot.1.max(seed));
                }
            }
        }
        // A memory reached through a bridge is related to the query through the seed that led
        // to it, and so at most `hop2_decay` as strongly as that seed: rare entities co-mentioned
        // beside a name that half of a chat's turns carry (a speaker's) would otherwise single
        // out memories the query never named, above the ones it did.
        let mut ranked: Vec<(u128, f32)> = hop2
            .into_iter()
            .map(|(m, (score, seed))| (st.mem_id(m), score.min(self.cfg.hop2_decay * seed)))
            .collect();
        // The top k can take no more than the first k that pass.
        best_passing(&mut ranked, k, |h| *h, filter)
    }

    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>, IndexError> {
        let st = self.inner.read();
        let mut renum: HashMap<u32, u32> = HashMap::new();
        let mut names = Vec::new();
        let mut mems = Vec::with_capacity(st.slot_of.len());
        for mem in st.mems.iter().flatten() {
            let list = mem
                .entities
                .iter()
                .map(|&e| {
                    *renum.entry(e).or_insert_with(|| {
                        names.push(st.names[e as usize].clone());
                        (names.len() - 1) as u32
                    })
                })
                .collect();
            mems.push((mem.id, list));
        }
        persist::encode(&Dump { names, mems })
    }

    pub(crate) fn from_bytes(bytes: &[u8], cfg: EntityConfig) -> Result<Self, IndexError> {
        let dump: Dump = persist::decode(bytes, "entity index")?;
        let mut st = State::default();
        for (id, list) in &dump.mems {
            let names = list
                .iter()
                .map(|&e| dump.names.get(e as usize).map(String::as_str))
                .collect::<Option<Vec<&str>>>()
                .ok_or_else(|| IndexError::Corrupt("entity id out of range".into()))?;
            if st.slot_of.contains_key(id) {
                return Err(IndexError::Corrupt(format!("entity memory {id:#x} twice")));
            }
            st.insert(*id, &names);
        }
        Ok(EntityIndex {
            cfg,
            inner: RwLock::new(st),
        })
    }
}

impl std::fmt::Debug for EntityIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.inner.read();
        f.debug_struct("EntityIndex")
            .field("memories", &st.slot_of.len())
            .field(
                "entities",
                &st.postings.iter().filter(|p| !p.is_empty()).count(),
            )
            .finish()
    }
}

/// The first `want` hits of `hits` that pass `filter`, in the order the top k ranks hits (higher
/// score, then lower id). The filter runs on the best hits first, and only as far as needed; hits
/// are ordered a slice at a time (a partial selection, then a sort), so a long list whose best
/// hits pass is never sorted whole.
fn best_passing<T: Copy>(
    hits: &mut [T],
    want: usize,
    key: impl Fn(&T) -> (u128, f32),
    filter: &dyn Fn(u128) -> bool,
) -> Vec<T> {
    let order = |a: &T, b: &T| {
        let ((ia, sa), (ib, sb)) = (key(a), key(b));
        sb.total_cmp(&sa).then_with(|| ia.cmp(&ib))
    };
    let mut passed = Vec::with_capacity(want.min(hits.len()));
    let mut start = 0;
    let mut chunk = want.max(16).saturating_mul(2);
    while start < hits.len() && passed.len() < want {
        let rest = &mut hits[start..];
        let end = chunk.min(rest.len());
        if end < rest.len() {
            rest.select_nth_unstable_by(end - 1, order);
        }
        rest[..end].sort_unstable_by(order);
        for hit in &rest[..end] {
            if passed.len() == want {
                break;
            }
            if filter(key(hit).0) {
                passed.push(*hit);
            }
        }
        start += end;
        chunk = chunk.saturating_mul(2);
    }
    passed
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// The search as it was before the filter ran lazily: every hop-1 and hop-2 hit filtered.
    fn search_filtering_everything(
        idx: &EntityIndex,
        query_entities: &[&str],
        hops: u8,
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        let st = idx.inner.read();
        let (query, hop1) = st.first_hop(query_entities);
        let mut passed: Vec<(u32, f32)> = hop1
            .iter()
            .filter(|(&m, _)| filter(st.mem_id(m)))
            .map(|(&m, &s)| (m, s))
            .collect();
        let mut top = TopK::new(k);
        for &(m, s) in &passed {
            top.push(st.mem_id(m), s);
        }
        if hops >= 2 && !passed.is_empty() {
            passed.sort_by(|a, b| {
                b.1.total_cmp(&a.1)
                    .then_with(|| st.mem_id(a.0).cmp(&st.mem_id(b.0)))
            });
            passed.truncate(idx.cfg.max_seeds);
            for (id, s) in idx.second_hop(&st, &query, &hop1, &passed, usize::MAX, filter) {
                top.push(id, s);
            }
        }
        top.into_sorted()
    }

    #[test]
    fn filtering_the_best_hits_first_finds_what_filtering_every_hit_finds() {
        let mut rng = StdRng::seed_from_u64(11);
        let names: Vec<String> = (0..400).map(|i| format!("entity-{i}")).collect();
        // Zipf-like: a few entities name a large share of the memories.
        let pick = |rng: &mut StdRng| {
            let u: f64 = rng.gen_range(0.0..1.0);
            ((names.len() as f64).powf(u) as usize - 1).min(names.len() - 1)
        };
        let idx = EntityIndex::with_config(EntityConfig {
            max_seeds: 16,
            ..EntityConfig::default()
        });
        // Ids out of slot order, so that ties broken by slot and by id differ.
        for _ in 0..3_000 {
            let count = rng.gen_range(1..5);
            let entities: Vec<&str> = (0..count).map(|_| names[pick(&mut rng)].as_str()).collect();
            idx.upsert(u128::from(rng.gen::<u32>()), &entities);
        }
        let filters: Vec<Box<dyn Fn(u128) -> bool>> = vec![
            Box::new(|_| true),
            Box::new(|id| id % 2 == 0),
            Box::new(|id| id % 19 == 0),
            Box::new(|id| id % 5 != 0),
            Box::new(|_| false),
        ];
        let mut compared = 0;
        for _ in 0..150 {
            let count = rng.gen_range(1..4);
            let query: Vec<&str> = (0..count).map(|_| names[pick(&mut rng)].as_str()).collect();
            for filter in &filters {
                for k in [1, 5, 10, 40] {
                    for hops in [1, 2] {
                        let lazy = idx.search(&query, hops, k, &**filter);
                        let every = search_filtering_everything(&idx, &query, hops, k, &**filter);
                        assert_eq!(lazy, every, "{query:?} k {k} hops {hops}");
                        assert!(lazy.iter().all(|&(id, _)| filter(id)));
                        compared += usize::from(!lazy.is_empty());
                    }
                }
            }
        }
        assert!(compared > 1_000, "only {compared} searches found anything");
    }

    #[test]
    fn a_memory_reached_through_a_bridge_never_outranks_the_seeds_that_lead_to_it() {
        // A chat: the speaker's name is on every other turn, so it singles out little; one turn
        // of theirs also names two rare places, and so do two turns of someone else's.
        let idx = EntityIndex::new();
        for i in 0..40u128 {
            idx.upsert(i, &["ana"]);
        }
        for i in 40..80u128 {
            idx.upsert(i, &["bruno"]);
        }
        idx.upsert(100, &["ana", "lake vaara", "tromsø"]);
        idx.upsert(101, &["bruno", "lake vaara", "tromsø"]);
        idx.upsert(102, &["lake vaara", "tromsø"]);
        let hits = idx.search(&["ana"], 2, 200, &|_| true);
        let score = |id: u128| hits.iter().find(|h| h.0 == id).map(|h| h.1);
        let seed = score(100).expect("the turn naming the speaker");
        for bridged in [101, 102] {
            let s = score(bridged).expect("reached through the rare places");
            assert!(
                s <= EntityConfig::default().hop2_decay * seed + 1e-6,
                "memory {bridged} at {s} against its seed's {seed}"
            );
        }
    }

    #[test]
    fn duplicate_entities_count_once() {
        let idx = EntityIndex::new();
        idx.upsert(1, &["a", "a", "b"]);
        assert_eq!(idx.entities_of(1), vec!["a", "b"]);
        assert_eq!(idx.memories_of("a"), vec![1]);
    }

    #[test]
    fn round_trip() {
        let idx = EntityIndex::new();
        idx.upsert(1, &["a", "b"]);
        idx.upsert(2, &["b", "c"]);
        idx.upsert(3, &["zzz"]);
        idx.remove(3);
        let back =
            EntityIndex::from_bytes(&idx.to_bytes().unwrap(), EntityConfig::default()).unwrap();
        assert_eq!(back.entities_of(2), vec!["b", "c"]);
        assert_eq!(back.len(), 2);
        assert!(back.memories_of("zzz").is_empty());
        assert_eq!(
            back.search(&["a"], 2, 10, &|_| true),
            idx.search(&["a"], 2, 10, &|_| true)
        );
    }
}
