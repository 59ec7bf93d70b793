//! Gather: the arms that search each bank for the query, by words, entities and tags (the
//! lexical arms, which need no embedding) and by the query's embedding (semantic, temporal,
//! present).

use std::sync::Arc;

use hindsight_core::intent;
use hindsight_core::{Memory, MemoryId};

use super::query::QueryVectors;
use super::search::{Plan, Records};
use crate::bank::BankView;
use crate::metrics;

pub(super) const ARM_SEMANTIC: &str = "semantic";
pub(super) const ARM_KEYWORD: &str = "keyword";
pub(super) const ARM_ENTITY: &str = "entity";
pub(super) const ARM_TEMPORAL: &str = "temporal";

/// Procedures, lessons and rules matched by tags and task type (intent `how_to` only).
pub(super) const ARM_TASK: &str = "task";

/// Short-lived state that holds at the query's `as_of` (a meeting until four, a build still
/// running), for a question about the present moment.
pub(super) const ARM_PRESENT: &str = "present";

/// How far back the present arm looks for state that is still alive; state older than this has
/// outlived any lifetime the present arm is for.
const PRESENT_LOOKBACK_MS: [i64; 2] = [7 * 24 * 3_600_000, 24 * 3_600_000];

/// One arm's hit: memory id, the arm's own score, and its quality in 0..1 (see
/// `fuse::semantic_quality`).
pub(super) type ArmResult = (u128, f32, f32);

/// A time window holding at most this many memories has each of them scored against the query;
/// a wider one is searched through the vector index. At about a microsecond a memory, scoring
/// costs about what a graph search of a large bank does at this size.
const TEMPORAL_SCORED_MAX: usize = 2048;

/// What one bank's keyword, entity and task arms found; `None` for an arm the query does not use.
pub(super) struct LexicalHits {
    pub(super) keyword: Option<Vec<(u128, f32)>>,
    pub(super) entity: Option<Vec<(u128, f32)>>,
    pub(super) task: Option<Vec<ArmResult>>,
}

/// What one bank's semantic, temporal and present arms found.
pub(super) struct VectorHits {
    pub(super) semantic: Vec<(u128, f32)>,
    pub(super) temporal: Option<Vec<ArmResult>>,
    pub(super) present: Option<Vec<ArmResult>>,
}

/// What the arms found in each bank of the request, in the order of its views: the lexical
/// arms' hits are gathered while the query is embedded, the vector arms' after.
pub(super) struct Gathered {
    pub(super) by_vector: Vec<VectorHits>,
    pub(super) lexical: Vec<LexicalHits>,
}

impl Gathered {
    /// Each bank's hits, in the order of the request's views.
    pub(super) fn by_bank(self) -> impl Iterator<Item = (VectorHits, LexicalHits)> {
        self.by_vector.into_iter().zip(self.lexical)
    }
}

impl Plan {
    /// How many hits each arm brings to the fusion.
    fn depth(&self) -> usize {
        (self.request.top_k as usize * 4).max(40)
    }

    /// `search` run on each bank under a read lock of its records, with the bank's visibility
    /// rules as a filter of memory ids.
    fn each_bank<T>(
        &self,
        views: &[Arc<BankView>],
        search: impl Fn(usize, &BankView, &Records, &dyn Fn(u128) -> bool) -> T,
    ) -> Vec<T> {
        views
            .iter()
            .zip(&self.configs)
            .enumerate()
            .map(|(bank, (view, config))| {
                let rules = self.visibility(config);
                view.with_records(|records| {
                    let visible = |id: u128| -> bool {
                        self.stand_in(records, MemoryId(id), rules).is_some()
                    };
                    search(bank, view, records, &visible)
                })
            })
            .collect()
    }

    /// The arms that search by words, entities and tags, bank by bank.
    pub(super) fn lexical_arms(&self, views: &[Arc<BankView>]) -> Vec<LexicalHits> {
        let depth = self.depth();
        self.each_bank(views, |bank, view, records, visible| LexicalHits {
            keyword: (self.arms.keyword && !self.terms.is_empty()).then(|| {
                metrics::recall_arm(ARM_KEYWORD, || {
                    view.index.bm25().search(&self.terms, depth, visible)
                })
            }),
            entity: (self.arms.entity && !self.singling_out[bank].is_empty()).then(|| {
                metrics::recall_arm(ARM_ENTITY, || {
                    view.index
                        .entities()
                        .search(&self.singling_out[bank], 2, depth, visible)
                })
            }),
            task: self
                .profile
                .wants_task_arm()
                .then(|| metrics::recall_arm(ARM_TASK, || self.task_hits(records, depth, visible))),
        })
    }

    /// The arms that search by the query's embedding, bank by bank.
    pub(super) fn vector_arms(
        &self,
        views: &[Arc<BankView>],
        vectors: &QueryVectors,
    ) -> Vec<VectorHits> {
        let depth = self.depth();
        self.each_bank(views, |_, view, records, visible| {
            let semantic = if self.arms.semantic {
                metrics::recall_arm(ARM_SEMANTIC, || {
                    self.semantic_hits(view, records, vectors, depth, visible)
                })
            } else {
                vec![]
            };
            let temporal = self
                .window
                .filter(|_| self.arms.temporal)
                .map(|(start, end)| {
                    metrics::recall_arm(ARM_TEMPORAL, || {
                        self.temporal_hits(
                            view,
                            records,
                            vectors,
                            &semantic,
                            (start.millis(), end.millis()),
                            visible,
                        )
                    })
                });
            let present = (self.present && self.arms.temporal).then(|| {
                metrics::recall_arm(ARM_PRESENT, || {
                    self.present_hits(view, records, vectors, visible)
                })
            });
            VectorHits {
                semantic,
                temporal,
                present,
            }
        })
    }

    /// The present arm: the bank's short-lived memories (those with an expiry) that are alive at
    /// `as_of`, closest to the query first. A question about the moment ("can she take a call
    /// now?") is answered by what holds now, which seldom shares its words ("in the audit
    /// meeting until four").
    fn present_hits(
        &self,
        view: &BankView,
        records: &Records,
        vectors: &QueryVectors,
        visible: &dyn Fn(u128) -> bool,
    ) -> Vec<ArmResult> {
        let as_of = self.as_of.millis();
        let time = view.index.time();
        let Some(ids) = PRESENT_LOOKBACK_MS.iter().find_map(|lookback| {
            time.range_at_most(as_of - lookback, as_of + 1, TEMPORAL_SCORED_MAX)
        }) else {
            return vec![];
        };
        let alive = |memory: &Memory| {
            memory
                .expires_at
                .is_some_and(|expires| expires > self.as_of && memory.occurred_at <= self.as_of)
        };
        self.closest_of(ids, view, records, vectors, &alive, visible, self.depth())
    }

    /// Those of `ids` that `keep` accepts, scored against the query, closest first, visible, at
    /// most `depth`. A stable sort, then the costly visibility check on the best first: the same
    /// hits as checking every one of them.
    #[allow(clippy::too_many_arguments)]
    fn closest_of(
        &self,
        ids: Vec<u128>,
        view: &BankView,
        records: &Records,
        vectors: &QueryVectors,
        keep: &dyn Fn(&Memory) -> bool,
        visible: &dyn Fn(u128) -> bool,
        depth: usize,
    ) -> Vec<ArmResult> {
        let stored = view.index.vectors().stored();
        let mut scored: Vec<ArmResult> = ids
            .into_iter()
            .filter_map(|id| {
                let memory = records.get(&MemoryId(id)).filter(|m| keep(m))?;
                Some((id, stored.dot(id, vectors.for_memory(memory))?, 1.0))
            })
            .collect();
        drop(stored);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored
            .into_iter()
            .filter(|hit| visible(hit.0))
            .take(depth)
            .collect()
    }

    /// The temporal arm: the memories of the query's time window, closest to the query first.
    fn temporal_hits(
        &self,
        view: &BankView,
        records: &Records,
        vectors: &QueryVectors,
        semantic: &[(u128, f32)],
        (start, end): (i64, i64),
        visible: &dyn Fn(u128) -> bool,
    ) -> Vec<ArmResult> {
        let depth = self.depth();
        let time = view.index.time();
        let Some(ids) = time.range_at_most(start, end, TEMPORAL_SCORED_MAX) else {
            // A wide window ("this week" over a bank written this week) holds most of the bank:
            // scoring each of its memories would be an exact scan of the bank on every such
            // recall. The vector index's plan picks the graph or a scan for the window's share
            // instead. When every semantic hit lies in the window, they are also the window's
            // closest memories: no second search.
            if semantic.iter().all(|hit| time.within(hit.0, start, end)) {
                return semantic
                    .iter()
                    .map(|&(id, similarity)| (id, similarity, 1.0))
                    .collect();
            }
            let in_window = |id: u128| time.within(id, start, end) && visible(id);
            return self
                .semantic_hits(view, records, vectors, depth, &in_window)
                .into_iter()
                .map(|(id, similarity)| (id, similarity, 1.0))
                .collect();
        };
        self.closest_of(ids, view, records, vectors, &|_| true, visible, depth)
    }

    /// The task arm: the bank's procedures, lessons and rules whose tags or task type share the
    /// query's terms (or whose task type the context names), best match first.
    fn task_hits(
        &self,
        records: &Records,
        depth: usize,
        visible: &dyn Fn(u128) -> bool,
    ) -> Vec<ArmResult> {
        let analyzer = hindsight_text::Analyzer::shared();
        let task_type = self
            .request
            .context
            .get(intent::TASK_TYPE_KEY)
            .map(String::as_str);
        let mut hits: Vec<ArmResult> = records
            .values()
            .filter(|m| intent::is_know_how(m) && visible(m.id.0))
            .filter_map(|m| {
                let mut labels = m.tags.join(" ");
                if let Some(t) = m.metadata.get(intent::TASK_TYPE_KEY) {
                    labels.push(' ');
                    labels.push_str(t);
                }
                let score = intent::task_match(&self.terms, &analyzer.terms(&labels), task_type, m);
                (score > 0.0).then_some((m.id.0, score, score.min(1.0)))
            })
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(depth);
        hits
    }

    /// The semantic arm: nearest memories by cosine, each compared with the phrasing of the query
    /// that matches its voice. With two phrasings both are searched and the union re-scored.
    fn semantic_hits(
        &self,
        view: &BankView,
        records: &Records,
        query: &QueryVectors,
        depth: usize,
        visible: &dyn Fn(u128) -> bool,
    ) -> Vec<(u128, f32)> {
        let vectors = view.index.vectors();
        let Some(voice) = &query.user_voice else {
            return vectors
                .search(&query.query, depth, visible)
                .unwrap_or_default();
        };
        // Both phrasings in one pass over a bank that is scanned exactly.
        let mut hits: Vec<(u128, f32)> = vectors
            .search_batch(&[&query.query, voice], depth, vectors.ef_search(), visible)
            .unwrap_or_default()
            .into_iter()
            .flatten()
            .collect();
        hits.sort_by_key(|h| h.0);
        hits.dedup_by_key(|h| h.0);
        let stored = vectors.stored();
        let mut rescored: Vec<(u128, f32)> = hits
            .into_iter()
            .filter_map(|(id, _)| {
                let memory = records.get(&MemoryId(id))?;
                Some((id, stored.dot(id, query.for_memory(memory))?))
            })
            .collect();
        drop(stored);
        rescored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        rescored.truncate(depth);
        rescored
    }
}
