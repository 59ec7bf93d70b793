//! Okapi BM25 over pre-analysed terms.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::heap::{hash_map_bytes, inverted_bytes, vec_bytes};
use crate::persist;
use crate::topk::TopK;
use crate::IndexError;

/// Term-frequency saturation.
pub const BM25_K1: f32 = 1.2;
/// Document-length normalisation.
pub const BM25_B: f32 = 0.75;

/// Corpus statistics of a [`Bm25Index`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bm25Stats {
    /// Indexed documents.
    pub docs: usize,
    /// Sum of document lengths (terms counted with repetition).
    pub total_terms: u64,
    /// Distinct terms occurring in at least one document.
    pub distinct_terms: usize,
}

/// Inverted index scoring documents with BM25 (`k1 = 1.2`, `b = 0.75`,
/// `idf = ln(1 + (N - df + 0.5) / (df + 0.5))`, which is never negative).
///
/// Terms are taken as given (already segmented, stemmed, lower-cased);
/// a document's length is the number of terms it was given.
#[derive(Default)]
pub struct Bm25Index {
    inner: RwLock<State>,
}

#[derive(Clone, Copy)]
struct Posting {
    doc: u32,
    tf: u32,
}

struct Doc {
    id: u128,
    /// (term id, frequency), each term once.
    terms: Vec<(u32, u32)>,
}

#[derive(Default)]
struct State {
    term_ids: HashMap<String, u32>,
    term_names: Vec<String>,
    postings: Vec<Vec<Posting>>,
    docs: Vec<Option<Doc>>,
    /// Kept apart from `docs` so scoring touches a dense array.
    doc_len: Vec<u32>,
    free: Vec<u32>,
    slot_of: HashMap<u128, u32>,
    total_len: u64,
}

#[derive(Serialize, Deserialize)]
struct Dump {
    terms: Vec<String>,
    docs: Vec<(u128, Vec<(u32, u32)>)>,
}

impl State {
    fn remove(&mut self, id: u128) -> bool {
        let Some(slot) = self.slot_of.remove(&id) else {
            return false;
        };
        let doc = self.docs[slot as usize]
            .take()
            .expect("slot_of points at a doc");
        for &(term, _) in &doc.terms {
            let list = &mut self.postings[term as usize];
            if let Some(pos) = list.iter().position(|p| p.doc == slot) {
                list.swap_remove(pos);
            }
        }
        self.total_len -= u64::from(self.doc_len[slot as usize]);
        self.doc_len[slot as usize] = 0;
        self.free.push(slot);
        true
    }

    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&t) = self.term_ids.get(term) {
            return t;
        }
        let t = u32::try_from(self.term_names.len()).expect("fewer than 4 billion terms");
        self.term_ids.insert(term.to_owned(), t);
        self.term_names.push(term.to_owned());
        self.postings.push(Vec::new());
        t
    }

    fn insert(&mut self, id: u128, tally: &[(&str, u32)], len: u32) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.docs.push(None);
                self.doc_len.push(0);
                u32::try_from(self.docs.len() - 1).expect("fewer than 4 billion documents")
            }
        };
        let mut terms = Vec::with_capacity(tally.len());
        for &(term, tf) in tally {
            let t = self.intern(term);
            self.postings[t as usize].push(Posting { doc: slot, tf });
            terms.push((t, tf));
        }
        self.docs[slot as usize] = Some(Doc { id, terms });
        self.doc_len[slot as usize] = len;
        self.total_len += u64::from(len);
        self.slot_of.insert(id, slot);
    }
}

/// Counts each distinct term, keeping first-seen order so slots fill deterministically.
fn tally<S: AsRef<str>>(terms: &[S]) -> Vec<(&str, u32)> {
    let mut pos: HashMap<&str, usize> = HashMap::with_capacity(terms.len());
    let mut out: Vec<(&str, u32)> = Vec::new();
    for t in terms {
        let t = t.as_ref();
        match pos.get(t) {
            Some(&i) => out[i].1 += 1,
            None => {
                pos.insert(t, out.len());
                out.push((t, 1));
            }
        }
    }
    out
}

/// Frequencies and lengths below these get their weights cached per query.
const CACHED_TF: u32 = 2;
const CACHED_LEN: u32 = 128;

/// Per-thread buffers reused across searches, so a search neither allocates
/// nor zeroes a score per document of the bank.
#[derive(Default)]
struct Scratch {
    /// All zero between searches.
    scores: Vec<f32>,
    touched: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The `k` best scores pushed into a [`TopK`]: the lowest of them is the score a
/// hit must reach for [`TopK::admits`], known without looking up the hit's id.
struct KthScore {
    k: usize,
    /// Scores are never negative, so their bit patterns order like the scores.
    heap: BinaryHeap<Reverse<u32>>,
}

impl KthScore {
    fn new(k: usize) -> Self {
        KthScore {
            k,
            heap: BinaryHeap::with_capacity(k.saturating_add(1).min(4096)),
        }
    }

    fn push(&mut self, score: f32) {
        self.heap.push(Reverse(score.to_bits()));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// Scores below this are not admitted; `-inf` until `k` hits are kept.
    fn threshold(&self) -> f32 {
        match self.heap.peek() {
            Some(r) if self.heap.len() == self.k => f32::from_bits(r.0),
            _ => f32::NEG_INFINITY,
        }
    }
}

impl State {
    /// Scores term at a time in query order with the same floating-point
    /// operations as the textbook formula, so scores are bit-identical to it.
    fn search<S: AsRef<str>>(
        &self,
        query_terms: &[S],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        let n = self.slot_of.len();
        if n == 0 || k == 0 {
            return Vec::new();
        }
        // Taken out rather than borrowed: a filter that searches again gets
        // fresh buffers, and a filter that panics drops these half-used ones
        // instead of leaving non-zero scores behind.
        let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let Scratch { scores, touched } = &mut scratch;
        if scores.len() < self.docs.len() {
            scores.resize(self.docs.len(), 0.0);
        }
        touched.clear();

        let avgdl = self.total_len as f32 / n as f32;
        let avgdl = avgdl.max(f32::MIN_POSITIVE);
        // Weight of a posting by (tf - 1, length) for short documents, NaN until
        // computed: most postings share a handful of (tf, length) pairs.
        let mut cache = vec![f32::NAN; (CACHED_TF * CACHED_LEN) as usize];
        for (term, _) in tally(query_terms) {
            let Some(&t) = self.term_ids.get(term) else {
                continue;
            };
            let list = &self.postings[t as usize];
            if list.is_empty() {
                continue;
            }
            let df = list.len() as f32;
            let idf = (1.0 + (n as f32 - df + 0.5) / (df + 0.5)).ln();
            let weight = |tf: u32, dl: u32| -> f32 {
                let dl = dl as f32;
                let tf = tf as f32;
                let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl);
                idf * tf * (BM25_K1 + 1.0) / (tf + norm)
            };
            cache.fill(f32::NAN);
            for p in list {
                let dl = self.doc_len[p.doc as usize];
                let s = if (1..=CACHED_TF).contains(&p.tf) && dl < CACHED_LEN {
                    let c = &mut cache[((p.tf - 1) * CACHED_LEN + dl) as usize];
                    if c.is_nan() {
                        *c = weight(p.tf, dl);
                    }
                    *c
                } else {
                    weight(p.tf, dl)
                };
                let cell = &mut scores[p.doc as usize];
                // Every contribution is positive, so zero means "not seen yet".
                if *cell == 0.0 {
                    touched.push(p.doc);
                }
                *cell += s;
            }
        }

        let mut top = TopK::new(k);
        let mut kth = KthScore::new(k);
        let mut threshold = f32::NEG_INFINITY;
        for &slot in touched.iter() {
            let score = scores[slot as usize];
            // `admits` would refuse it whatever its id: skip the id lookup.
            if score < threshold {
                continue;
            }
            let id = self.docs[slot as usize]
                .as_ref()
                .expect("posting of live doc")
                .id;
            if top.admits(id, score) && filter(id) {
                top.push(id, score);
                kth.push(score);
                threshold = kth.threshold();
            }
        }
        for &slot in touched.iter() {
            scores[slot as usize] = 0.0;
        }
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
        top.into_sorted()
    }
}

impl Bm25Index {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Indexes `terms` as the document `id`, replacing any earlier version.
    /// An empty term list removes the document: it could never match.
    pub fn upsert<S: AsRef<str>>(&self, id: u128, terms: &[S]) {
        let counted = tally(terms);
        let len = u32::try_from(terms.len()).unwrap_or(u32::MAX);
        let mut st = self.inner.write();
        st.remove(id);
        if !counted.is_empty() {
            st.insert(id, &counted, len);
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

    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.inner.read().slot_of.len()
    }

    /// Whether no document is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Documents containing `term`.
    pub fn doc_freq(&self, term: &str) -> usize {
        let st = self.inner.read();
        st.term_ids
            .get(term)
            .map_or(0, |&t| st.postings[t as usize].len())
    }

    /// Heap bytes of the terms, the postings and each document's terms.
    pub fn heap_bytes(&self) -> u64 {
        let st = self.inner.read();
        inverted_bytes(&st.term_ids, &st.term_names, &st.postings)
            + vec_bytes(&st.docs)
            + st.docs
                .iter()
                .flatten()
                .map(|doc| vec_bytes(&doc.terms))
                .sum::<u64>()
            + vec_bytes(&st.doc_len)
            + vec_bytes(&st.free)
            + hash_map_bytes(&st.slot_of)
    }

    /// Corpus statistics.
    pub fn stats(&self) -> Bm25Stats {
        let st = self.inner.read();
        Bm25Stats {
            docs: st.slot_of.len(),
            total_terms: st.total_len,
            distinct_terms: st.postings.iter().filter(|p| !p.is_empty()).count(),
        }
    }

    /// The `k` best documents for `query_terms` passing `filter`, best first.
    /// Each distinct query term counts once.
    pub fn search<S: AsRef<str>>(
        &self,
        query_terms: &[S],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        self.inner.read().search(query_terms, k, filter)
    }

    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>, IndexError> {
        let st = self.inner.read();
        // Renumber terms densely so terms of removed documents are not kept.
        let mut renum: HashMap<u32, u32> = HashMap::new();
        let mut terms = Vec::new();
        let mut docs = Vec::with_capacity(st.slot_of.len());
        for doc in st.docs.iter().flatten() {
            let list = doc
                .terms
                .iter()
                .map(|&(t, tf)| {
                    let nt = *renum.entry(t).or_insert_with(|| {
                        terms.push(st.term_names[t as usize].clone());
                        (terms.len() - 1) as u32
                    });
                    (nt, tf)
                })
                .collect();
            docs.push((doc.id, list));
        }
        persist::encode(&Dump { terms, docs })
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self, IndexError> {
        let dump: Dump = persist::decode(bytes, "bm25 index")?;
        let mut st = State::default();
        for (id, list) in &dump.docs {
            let mut tally = Vec::with_capacity(list.len());
            let mut len = 0u32;
            for &(t, tf) in list {
                let term = dump
                    .terms
                    .get(t as usize)
                    .ok_or_else(|| IndexError::Corrupt("bm25 term id out of range".into()))?;
                tally.push((term.as_str(), tf));
                len = len.saturating_add(tf);
            }
            if st.slot_of.contains_key(id) {
                return Err(IndexError::Corrupt(format!("bm25 document {id:#x} twice")));
            }
            st.insert(*id, &tally, len);
        }
        Ok(Bm25Index {
            inner: RwLock::new(st),
        })
    }
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index")
            .field("stats", &self.stats())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// The plain search: scores every posting into a fresh vector as long as the
    /// bank, then offers every touched document to the top k.
    fn reference_search<S: AsRef<str>>(
        st: &State,
        query_terms: &[S],
        k: usize,
        filter: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        let n = st.slot_of.len();
        if n == 0 || k == 0 {
            return Vec::new();
        }
        let avgdl = st.total_len as f32 / n as f32;
        let mut scores = vec![0f32; st.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (term, _) in tally(query_terms) {
            let Some(&t) = st.term_ids.get(term) else {
                continue;
            };
            let list = &st.postings[t as usize];
            if list.is_empty() {
                continue;
            }
            let df = list.len() as f32;
            let idf = (1.0 + (n as f32 - df + 0.5) / (df + 0.5)).ln();
            for p in list {
                let dl = st.doc_len[p.doc as usize] as f32;
                let tf = p.tf as f32;
                let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl.max(f32::MIN_POSITIVE));
                let s = idf * tf * (BM25_K1 + 1.0) / (tf + norm);
                let cell = &mut scores[p.doc as usize];
                if *cell == 0.0 {
                    touched.push(p.doc);
                }
                *cell += s;
            }
        }
        let mut top = TopK::new(k);
        for slot in touched {
            let score = scores[slot as usize];
            let id = st.docs[slot as usize]
                .as_ref()
                .expect("posting of live doc")
                .id;
            if top.admits(id, score) && filter(id) {
                top.push(id, score);
            }
        }
        top.into_sorted()
    }

    /// Ranks drawn with probability proportional to 1 / rank.
    struct Zipf(Vec<f64>);

    impl Zipf {
        fn new(n: usize) -> Self {
            let mut acc = 0.0;
            Zipf(
                (1..=n)
                    .map(|r| {
                        acc += 1.0 / r as f64;
                        acc
                    })
                    .collect(),
            )
        }

        fn word(&self, rng: &mut StdRng) -> String {
            let x = rng.gen::<f64>() * self.0.last().unwrap();
            format!("w{}", self.0.partition_point(|&c| c < x))
        }
    }

    #[test]
    fn search_equals_plain_scoring() {
        let mut rng = StdRng::seed_from_u64(3);
        let zipf = Zipf::new(3_000);
        let idx = Bm25Index::new();
        let doc = |rng: &mut StdRng| -> Vec<String> {
            // Mostly short documents, some long ones with repeated terms.
            let len = if rng.gen_bool(0.05) {
                rng.gen_range(40..300)
            } else {
                rng.gen_range(1..25)
            };
            (0..len).map(|_| zipf.word(rng)).collect()
        };
        for id in 0..4_000u128 {
            idx.upsert(id, &doc(&mut rng));
        }
        // Churn: replaced and removed documents leave reused slots and stale
        // per-term extremes behind.
        for _ in 0..800 {
            let id = rng.gen_range(0..4_400u128);
            if rng.gen_bool(0.3) {
                idx.remove(id);
            } else {
                idx.upsert(id, &doc(&mut rng));
            }
        }
        let st = idx.inner.read();
        let mut queries: Vec<Vec<String>> = (0..300)
            .map(|_| {
                let len = rng.gen_range(1..=8);
                (0..len).map(|_| zipf.word(&mut rng)).collect()
            })
            .collect();
        queries.push(vec!["w0".into(), "w0".into(), "absent".into()]);
        queries.push(vec!["absent".into()]);

        // Searches of another index on the same thread share its scratch buffers.
        let other = Bm25Index::new();
        other.upsert(1, &terms("w0 w1 w2"));

        let mut compared = 0;
        for q in &queries {
            assert_eq!(
                other.search(q, 5, &|_| true).len(),
                usize::from(q.iter().any(|w| ["w0", "w1", "w2"].contains(&w.as_str())))
            );
            let best: Vec<u128> = reference_search(&st, q, 10, &|_| true)
                .iter()
                .map(|h| h.0)
                .collect();
            let salt = rng.gen::<u64>() as u128;
            let filters: Vec<Box<dyn Fn(u128) -> bool>> = vec![
                Box::new(|_| true),
                Box::new(move |id| (id ^ salt).wrapping_mul(0x9e37_79b9).is_multiple_of(2)),
                Box::new(move |id| (id ^ salt).wrapping_mul(0x9e37_79b9).is_multiple_of(20)),
                Box::new(move |id| !best.contains(&id)),
                Box::new(|_| false),
            ];
            for filter in &filters {
                for k in [1, 3, 10, 40, 200, 10_000] {
                    let logged = |calls: &RefCell<Vec<u128>>, id: u128| {
                        calls.borrow_mut().push(id);
                        filter(id)
                    };
                    let (calls, want_calls) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
                    let got = st.search(q, k, &|id| logged(&calls, id));
                    let want = reference_search(&st, q, k, &|id| logged(&want_calls, id));
                    assert_eq!(
                        got.iter().map(|h| (h.0, h.1.to_bits())).collect::<Vec<_>>(),
                        want.iter()
                            .map(|h| (h.0, h.1.to_bits()))
                            .collect::<Vec<_>>(),
                        "query {q:?}, k {k}"
                    );
                    assert!(got.iter().all(|h| filter(h.0)));
                    // Same calls in the same order: the filter is only asked
                    // about hits that could enter the top k at that point.
                    assert_eq!(calls.into_inner(), want_calls.into_inner());
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, queries.len() * 5 * 6);
        drop(st);
        assert_eq!(
            idx.search(&queries[0], 10, &|_| true),
            reference_search(&idx.inner.read(), &queries[0], 10, &|_| true)
        );
    }

    fn terms(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn score_matches_formula_for_single_term() {
        let idx = Bm25Index::new();
        idx.upsert(1, &terms("a b c"));
        idx.upsert(2, &terms("a a d e f"));
        let hits = idx.search(&terms("d"), 10, &|_| true);
        let (n, df, dl, avgdl, tf) = (2.0f32, 1.0f32, 5.0f32, 4.0f32, 1.0f32);
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let want = idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 2);
        assert!((hits[0].1 - want).abs() < 1e-6);
    }

    #[test]
    fn round_trip_drops_unused_terms() {
        let idx = Bm25Index::new();
        idx.upsert(1, &terms("alpha beta"));
        idx.upsert(2, &terms("gamma"));
        idx.remove(2);
        let back = Bm25Index::from_bytes(&idx.to_bytes().unwrap()).unwrap();
        assert_eq!(back.stats(), idx.stats());
        assert_eq!(back.inner.read().term_names.len(), 2);
    }
}
