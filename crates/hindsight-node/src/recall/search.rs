//! Recall: four arms per bank, each hit's calibrated evidence fused into one relevance (see
//! `hindsight_core::scoring`), a relevance floor, lifecycle scoring, default exclusions, collapse
//! of near-identical results, top-k and token budget, and an explanation.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use hindsight_core::intent::{self, IntentProfile};
use hindsight_core::recall::{ArmHit, Explain, RecallHit, RecallRequest, RecallResponse};
use hindsight_core::retrieval::RecallId;
use hindsight_core::scoring::{combine_evidence, freshness, lifecycle_score, WEAK_RELEVANCE};
use hindsight_core::shadow::{self, shadowed, Found};
use hindsight_core::{BankConfig, Memory, MemoryId, SourceKind, Status, Timestamp};

use super::RecallHost;
use crate::bank::changes::{announces_change, is_user_statement};
use crate::bank::embedding;
use crate::bank::BankView;
use crate::error::NodeError;
use crate::metrics;
use crate::write::guarding;
use hindsight_guard::Screener;
use hindsight_index::dot;

const ARM_SEMANTIC: &str = "semantic";
const ARM_KEYWORD: &str = "keyword";
const ARM_ENTITY: &str = "entity";
const ARM_TEMPORAL: &str = "temporal";
/// Procedures, lessons and rules matched by tags and task type (intent `how_to` only).
const ARM_TASK: &str = "task";
/// Short-lived state that holds at the query's `as_of` (a meeting until four, a build still
/// running), for a question about the present moment.
const ARM_PRESENT: &str = "present";
/// How far back the present arm looks for state that is still alive; state older than this has
/// outlived any lifetime the present arm is for.
const PRESENT_LOOKBACK_MS: [i64; 2] = [7 * 24 * 3_600_000, 24 * 3_600_000];
/// Memories that name what the best candidates name: the second hop of a question such as "is
/// the person who owns X around?", whose answer never mentions X.
const ARM_BRIDGE: &str = "bridge";

/// Best candidates per bank whose entities are followed.
const BRIDGE_SEEDS: usize = 2;
/// A candidate this relevant, at least, is a seed: a weak match leads nowhere useful.
const BRIDGE_MIN_RELEVANCE: f32 = 0.3;
/// A memory reached through an entity the seed alone shares with it gets this share of the
/// seed's relevance: below the seed, above what merely resembles the query.
const BRIDGE_EVIDENCE: f32 = 0.7;
/// A memory this close to the seed says the same again (a rewording, an update) and is left to
/// deduplication and shadowing: the second hop is for what the seed does not say.
const BRIDGE_MAX_LIKENESS: f32 = 0.6;
/// Entities named by more than this share of a bank's memories (the user's own name, the team)
/// link everything to everything and are not followed...
const BRIDGE_MAX_SHARE: f32 = 0.02;
/// ...unless they are named this rarely.
const BRIDGE_MIN_FANOUT: usize = 4;

/// A bank's records by id, as its view publishes them.
type Records = HashMap<MemoryId, Arc<Memory>>;

/// One arm's hit: memory id, the arm's own score, and its quality in 0..1 (see [`semantic_quality`]).
type ArmResult = (u128, f32, f32);

/// The user's statements whose changes the change arm looks for: the most relevant, if relevant
/// enough for shadowing to act on them.
const CHANGE_SEEDS: usize = 2;
/// A change is evidence for the question this share of the statement it replaces: enough for
/// shadowing to act ([`hindsight_core::shadow::CHANGE_MIN_RELEVANCE`]), never more than the
/// statement itself.
const CHANGE_EVIDENCE: f32 = 0.8;
/// Arm of the changes found through what they replace.
const ARM_CHANGE: &str = "change";

/// At least this many of the best candidates are compared for statements that answer alike.
const SHADOW_CONSIDERED: usize = 30;

/// Naming the same entity as the query makes a memory about the right thing, not yet the answer:
/// the entity arm's evidence counts this much of a match that singles the memory out.
const ENTITY_EVIDENCE: f32 = 0.6;

/// An explicit time expression is a strong statement of intent: a memory inside the window is
/// evidence of this much before its similarity to the rest of the query adds to it.
const IN_WINDOW_EVIDENCE: f32 = 0.6;
/// A time window holding at most this many memories has each of them scored against the query;
/// a wider one is searched through the vector index. At about a microsecond a memory, scoring
/// costs about what a graph search of a large bank does at this size.
const TEMPORAL_SCORED_MAX: usize = 2048;

pub async fn recall(
    node: &impl RecallHost,
    principal: &str,
    mut request: RecallRequest,
    part_of: Option<RecallId>,
) -> Result<RecallResponse, NodeError> {
    let started = Instant::now();
    request.validate(&node.config().limits)?;
    let views = Arc::new(
        node.banks()
            .read_barrier(&request.banks, request.consistency)
            .await?,
    );

    let now = Timestamp::now();
    let as_of = request.as_of.unwrap_or(now);
    let window = hindsight_text::parse_time_window(&request.query, as_of.to_datetime()).map(|w| {
        (
            Timestamp::from_datetime(w.start),
            Timestamp::from_datetime(w.end),
        )
    });
    let text_query = match window {
        Some(_) => {
            let stripped = hindsight_text::strip_time_expr(&request.query);
            if stripped.trim().is_empty() {
                request.query.clone()
            } else {
                stripped
            }
        }
        None => request.query.clone(),
    };
    let present = hindsight_text::asks_about_present(&request.query);
    let entities = hindsight_text::query_entities(&text_query);
    let principals: Vec<Vec<String>> = views
        .iter()
        .map(|view| principals_named(view, &entities))
        .collect();
    let include_archived = request.include_archived;
    let logged_request = request.clone();
    let screener = node.shared_screener();
    let asks_leave = screener.as_ref().is_some_and(|s| {
        hindsight_text::grammar::is_question(&text_query) && s.grants_leave(&text_query)
    });
    let plan = Arc::new(Plan {
        profile: IntentProfile::new(request.intent),
        // One copy of each bank's settings per request, read by every arm and the fusion alike.
        configs: views.iter().map(|v| v.config()).collect(),
        request,
        as_of,
        now,
        window,
        present,
        asks_leave,
        terms: hindsight_text::Analyzer::shared().terms(&text_query),
        singling_out: principals
            .iter()
            .map(|named| {
                entities
                    .iter()
                    .filter(|e| !named.contains(e))
                    .cloned()
                    .collect()
            })
            .collect(),
        entities,
        min_relevance: node.config().recall.min_relevance,
        arms: node.config().recall.arms,
        shadow_alike: node.config().recall.shadow_alike,
        screener,
    });
    // The keyword, entity and task arms need no query vector: they search while the query is
    // embedded, on the other core when one is free, instead of after it.
    let lexical = tokio::task::spawn_blocking({
        let (plan, views) = (plan.clone(), views.clone());
        move || plan.lexical_arms(&views)
    });

    // The person a bank serves, asked about by name, is asked about as "the user": what they
    // said themselves is in the first person. Only the comparison with their own words changes.
    let named: Vec<String> = principals.into_iter().flatten().collect();
    let asked =
        hindsight_text::naming_as_user(&text_query, &named).unwrap_or_else(|| text_query.clone());
    let user_voice = hindsight_text::in_user_voice(&asked);
    let mut texts = vec![text_query];
    texts.extend(user_voice);
    let mut vectors = embedding::embed(&node.banks().context().embedder, texts)
        .await?
        .into_iter();
    let vectors = QueryVectors {
        query: vectors
            .next()
            .ok_or_else(|| NodeError::internal("embedder returned no vector"))?,
        user_voice: vectors.next(),
    };

    let runtime = tokio::runtime::Handle::current();
    let mut response = tokio::task::spawn_blocking(move || {
        let by_vector = plan.vector_arms(&views, &vectors);
        // Waited for with no bank's records locked: the lexical arms read under the same locks.
        let lexical = runtime.block_on(lexical).map_err(NodeError::internal)?;
        Ok::<_, NodeError>(plan.fuse(&views, &vectors, by_vector, lexical))
    })
    .await
    .map_err(NodeError::internal)??;
    // A record that fails its integrity check is withheld (counted and logged by the check).
    response
        .hits
        .retain(|hit| !node.integrity(&hit.memory).failed());
    response.took_micros = started.elapsed().as_micros() as u64;
    metrics::recall(started.elapsed());
    node.note_access(&response.hits, now);
    if include_archived {
        let archived: Vec<MemoryId> = response
            .hits
            .iter()
            .filter(|h| h.memory.status == Status::Archived)
            .map(|h| h.memory.id)
            .collect();
        node.restore(archived, now).await?;
    }
    crate::recall::learning::log_recall(
        node,
        principal,
        logged_request,
        &mut response,
        now,
        part_of,
    );
    Ok(response)
}

struct Plan {
    request: RecallRequest,
    /// The settings of each bank of the request, in the order of its views.
    configs: Vec<BankConfig>,
    profile: IntentProfile,
    as_of: Timestamp,
    now: Timestamp,
    window: Option<(Timestamp, Timestamp)>,
    /// The query asks about the present moment ([`hindsight_text::asks_about_present`]).
    present: bool,
    /// The query asks leave to do something ("can I pay it right away?", "这份合同能直接签吗"):
    /// a question with words of permission. The principal's rules it finds all answer it.
    asks_leave: bool,
    terms: Vec<String>,
    entities: Vec<String>,
    /// For each bank of the request, the query's entities the entity arm searches: all but the
    /// person the bank serves, whom every memory of it is about.
    singling_out: Vec<Vec<String>>,
    /// Candidates less relevant than this are left out, whatever their confidence.
    min_relevance: f32,
    /// The arms this node runs.
    arms: crate::config::RecallArms,
    /// Whether a user's newer statement stands for an older one answering alike.
    shadow_alike: bool,
    /// The guard's screener, when the guard is on: a found text of a lesser voice that grants
    /// leave against a found rule of the principal is left out.
    screener: Option<Arc<Screener>>,
}

/// The query's embeddings.
struct QueryVectors {
    query: Vec<f32>,
    /// The query as the user would have asked it (see [`hindsight_text::in_user_voice`]), compared
    /// with memories in the user's own words instead of `query`.
    user_voice: Option<Vec<f32>>,
}

impl QueryVectors {
    /// The query vector to compare `memory` with: the user's own words answer the question asked
    /// in the user's voice.
    fn for_memory(&self, memory: &Memory) -> &[f32] {
        match &self.user_voice {
            Some(voice) if memory.provenance.source == SourceKind::User => voice,
            _ => &self.query,
        }
    }
}

/// What one bank's keyword, entity and task arms found; `None` for an arm the query does not use.
struct LexicalHits {
    keyword: Option<Vec<(u128, f32)>>,
    entity: Option<Vec<(u128, f32)>>,
    task: Option<Vec<ArmResult>>,
}

/// What one bank's semantic, temporal and present arms found.
struct VectorHits {
    semantic: Vec<(u128, f32)>,
    temporal: Option<Vec<ArmResult>>,
    present: Option<Vec<ArmResult>>,
}

/// A bank's settings that decide whether recall may return a record.
#[derive(Clone, Copy)]
struct Visibility {
    min_confidence: f32,
    require_corroboration: bool,
}

struct Candidate {
    /// Position of the candidate's bank in the request's views.
    bank: usize,
    memory: Arc<Memory>,
    status: Status,
    arms: Vec<ArmHit>,
    /// Each arm's evidence that the memory answers the query, in 0..1.
    evidence: Vec<f32>,
    in_window: bool,
}

impl Candidate {
    /// Relevance from the arms that match the query itself, without the bridge's.
    fn direct_relevance(&self) -> f32 {
        combine_evidence(
            self.arms
                .iter()
                .zip(&self.evidence)
                .filter(|(hit, _)| hit.arm != ARM_BRIDGE)
                .map(|(_, &e)| e),
        )
    }
}

impl Plan {
    /// How many hits each arm brings to the fusion.
    fn depth(&self) -> usize {
        (self.request.top_k as usize * 4).max(40)
    }

    fn visibility(&self, config: &BankConfig) -> Visibility {
        Visibility {
            min_confidence: self.request.filters.min_confidence.unwrap_or(
                if self.request.include_history {
                    0.0
                } else {
                    config.min_confidence
                },
            ),
            require_corroboration: config.require_corroboration,
        }
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
    fn lexical_arms(&self, views: &[Arc<BankView>]) -> Vec<LexicalHits> {
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
    fn vector_arms(&self, views: &[Arc<BankView>], vectors: &QueryVectors) -> Vec<VectorHits> {
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
                let v = stored.get(id)?;
                Some((id, dot(v, vectors.for_memory(memory)), 1.0))
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

    /// Every arm's evidence fused into relevance, the floor, lifecycle scoring, collapse and budget.
    fn fuse(
        &self,
        views: &[Arc<BankView>],
        vectors: &QueryVectors,
        by_vector: Vec<VectorHits>,
        lexical: Vec<LexicalHits>,
    ) -> RecallResponse {
        let top_k = self.request.top_k as usize;
        let mut candidates: HashMap<MemoryId, Candidate> = HashMap::new();

        let configs = &self.configs;
        let found = by_vector.into_iter().zip(lexical);
        for (bank, ((view, config), (by_vector, lexical))) in
            views.iter().zip(configs).zip(found).enumerate()
        {
            let rules = self.visibility(config);
            view.with_records(|records| {
                let mut arms: Vec<(&'static str, f32, Vec<ArmResult>)> = vec![(
                    ARM_SEMANTIC,
                    1.0,
                    by_vector
                        .semantic
                        .into_iter()
                        .map(|(id, sim)| (id, sim, semantic_quality(sim)))
                        .collect(),
                )];
                if let Some(hits) = lexical.keyword {
                    let best_possible = keyword_best_possible(view.index.bm25(), &self.terms);
                    let stored = view.index.vectors().stored();
                    // Shared words whose meaning the embedding does not share are mostly stem
                    // collisions ("productive" and "product") or filler: such a hit keeps half
                    // of its keyword quality.
                    let meaning = |id: u128| -> f32 {
                        match (records.get(&MemoryId(id)), stored.get(id)) {
                            (Some(memory), Some(v)) => {
                                0.5 + 0.5 * semantic_quality(dot(v, vectors.for_memory(memory)))
                            }
                            _ => 1.0,
                        }
                    };
                    let ranked = hits
                        .into_iter()
                        .map(|(id, score)| {
                            (id, score, (score / best_possible).min(1.0) * meaning(id))
                        })
                        .collect();
                    drop(stored);
                    arms.push((ARM_KEYWORD, 1.0, ranked));
                }
                if let Some(hits) = lexical.entity {
                    let best = view
                        .index
                        .entities()
                        .best_possible(&self.singling_out[bank])
                        .max(f32::EPSILON);
                    arms.push((
                        ARM_ENTITY,
                        ENTITY_EVIDENCE,
                        hits.into_iter()
                            .map(|(id, score)| (id, score, (score / best).min(1.0)))
                            .collect(),
                    ));
                }
                if let Some(hits) = by_vector.temporal {
                    // Being in a window that holds much of the bank ("between January and
                    // February" over a chat of those months) says little about a memory.
                    let share = self.window.map_or(1.0, |(start, end)| {
                        view.index.time().share_within(start.millis(), end.millis())
                    });
                    arms.push((ARM_TEMPORAL, 1.0, in_window_evidence(hits, share)));
                }
                if let Some(hits) = by_vector.present {
                    // What is alive now is evidence like being in the query's time window, and
                    // says as little when most of the bank is alive.
                    let share = hits.len() as f32 / view.index.time().len().max(1) as f32;
                    arms.push((ARM_PRESENT, 1.0, in_window_evidence(hits, share)));
                }
                if let Some(hits) = lexical.task {
                    arms.push((ARM_TASK, 1.0, hits));
                }
                let credit = |candidates: &mut HashMap<MemoryId, Candidate>,
                              arm: &'static str,
                              weight: f32,
                              ranked: Vec<ArmResult>| {
                    let weight = weight * self.profile.arm_weight(arm);
                    // A record and the rewordings merged into it share one share per arm.
                    let mut credited = std::collections::HashSet::new();
                    for (rank, (id, score, quality)) in ranked.into_iter().enumerate() {
                        let Some((memory, status)) = self.stand_in(records, MemoryId(id), rules)
                        else {
                            continue;
                        };
                        if !credited.insert(memory.id) {
                            continue;
                        }
                        let candidate = candidates.entry(memory.id).or_insert_with(|| Candidate {
                            bank,
                            memory: memory.clone(),
                            status,
                            arms: vec![],
                            evidence: vec![],
                            in_window: false,
                        });
                        candidate.evidence.push(weight * quality);
                        candidate.in_window |= arm == ARM_TEMPORAL || arm == ARM_PRESENT;
                        candidate.arms.push(ArmHit {
                            arm: arm.to_string(),
                            rank: rank as u32 + 1,
                            score,
                        });
                    }
                };
                for (arm, weight, ranked) in arms {
                    credit(&mut candidates, arm, weight, ranked);
                }
                // An optional arm: not while a bulk load leaves the bank without its graph,
                // when each of its searches would scan every vector.
                if self.shadow_alike
                    && !self.request.include_history
                    && view.index.vectors().searches_quickly()
                {
                    let changes = metrics::recall_arm(ARM_CHANGE, || {
                        self.changes_of_found(view, records, rules, &candidates, bank)
                    });
                    credit(&mut candidates, ARM_CHANGE, 1.0, changes);
                }
                if self.arms.entity {
                    let seeds = best_seeds(&candidates, bank);
                    let bridged =
                        metrics::recall_arm(ARM_BRIDGE, || bridged(view, &seeds, &self.entities));
                    credit(&mut candidates, ARM_BRIDGE, 1.0, bridged);
                }
            });
        }

        let mut scored: Vec<(f32, Explain, Candidate)> = candidates
            .into_values()
            .filter_map(|c| {
                let weights = &configs[c.bank].weights;
                let relevance = combine_evidence(c.evidence.iter().copied());
                if relevance < self.min_relevance {
                    return None;
                }
                let fresh = freshness(
                    self.as_of.days_since(c.memory.occurred_at),
                    weights.freshness_days_for(c.memory.kind),
                );
                let confidence = self.confidence_of(&c.memory);
                let (factor, adjustments) = self.adjustments(&c.memory)?;
                let score = lifecycle_score(weights, relevance, confidence, fresh) * factor;
                let explain = Explain {
                    arms: c.arms.clone(),
                    relevance,
                    confidence,
                    freshness: fresh,
                    score,
                    status: c.status.name().to_string(),
                    flags: flags(&c, relevance),
                    collapsed: vec![],
                    adjustments,
                };
                Some((score, explain, c))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.memory.id.cmp(&b.2.memory.id)));
        if !self.request.include_history {
            scored = self.without_rule_relaxing(views, scored);
        }
        if self.shadow_alike && !self.request.include_history {
            scored = self.without_shadowed(views, scored);
        }

        let mut hits: Vec<RecallHit> = vec![];
        let mut kept_vectors: Vec<Vec<f32>> = vec![];
        let mut tokens_used = 0u32;
        for (score, explain, candidate) in scored {
            if hits.len() >= top_k {
                break;
            }
            let collapse_at = configs[candidate.bank].collapse_threshold;
            let vector = views[candidate.bank]
                .index
                .vectors()
                .get(candidate.memory.id.0);
            if let Some(vector) = &vector {
                let twin = kept_vectors
                    .iter()
                    .position(|kept| dot(kept, vector) >= collapse_at);
                if let Some(position) = twin {
                    hits[position]
                        .explain
                        .collapsed
                        .push(candidate.memory.id.to_string());
                    continue;
                }
            }
            let tokens = views[candidate.bank].token_count(&candidate.memory);
            if self
                .request
                .max_tokens
                .is_some_and(|budget| tokens_used + tokens > budget)
            {
                break;
            }
            tokens_used += tokens;
            // Kept in step with `hits`: a twin's position is the hit it folds into.
            kept_vectors.push(vector.unwrap_or_default());
            hits.push(RecallHit {
                memory: (*candidate.memory).clone(),
                status: candidate.status,
                score,
                explain,
            });
        }
        RecallResponse {
            hits,
            time_window: self.window,
            tokens_used,
            took_micros: 0,
            recall_id: None,
        }
    }

    /// The best-scored candidates less the texts of a lesser voice that grant leave against a
    /// standing rule of the principal found with them, as the write path holds such a text
    /// against the rules of its own bank (`guarding::hold_if_relaxing_a_rule`). Here the rule
    /// may live in another bank the query reads (a team's), or have been stated after the text.
    fn without_rule_relaxing(
        &self,
        views: &[Arc<BankView>],
        scored: Vec<(f32, Explain, Candidate)>,
    ) -> Vec<(f32, Explain, Candidate)> {
        let Some(screener) = self.screener.as_deref() else {
            return scored;
        };
        let considered = scored
            .len()
            .min((self.request.top_k as usize * 3).max(SHADOW_CONSIDERED));
        let head = &scored[..considered];
        // Read once per candidate: whether the principal speaks in it for themselves.
        let principal: Vec<bool> = head
            .iter()
            .map(|(_, _, c)| screener.speaks_for_principal(&c.memory.provenance, &c.memory.content))
            .collect();
        let challengers: Vec<usize> = (0..considered)
            .filter(|&i| !principal[i] && !guarding::reports_its_own_turn(&head[i].2.memory))
            .collect();
        if challengers.is_empty() {
            return scored;
        }
        let vector_of = |i: usize| {
            let c = &head[i].2;
            views[c.bank].index.vectors().get(c.memory.id.0)
        };
        let rules: Vec<(usize, Vec<f32>)> = (0..considered)
            .filter(|&i| principal[i])
            .filter_map(|i| Some((i, vector_of(i)?)))
            .collect();
        let relaxing: Vec<usize> = challengers
            .into_iter()
            .filter(|&i| {
                let Some(vector) = vector_of(i) else {
                    return false;
                };
                let close = rules.iter().map(|(j, rule_vector)| {
                    (head[*j].2.memory.as_ref(), dot(&vector, rule_vector))
                });
                guarding::relaxed_rule(screener, &head[i].2.memory, close).is_some()
            })
            .collect();
        scored
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !relaxing.contains(i))
            .map(|(_, entry)| entry)
            .collect()
    }

    /// The best-scored candidates less the statements a newer one from the same source (or the
    /// user's, for an agent's guess) stands for: both answered the query and resemble each other
    /// (see `hindsight_core::shadow`). The one that stands lists the other as collapsed.
    fn without_shadowed(
        &self,
        views: &[Arc<BankView>],
        mut scored: Vec<(f32, Explain, Candidate)>,
    ) -> Vec<(f32, Explain, Candidate)> {
        let considered = scored
            .len()
            .min((self.request.top_k as usize * 3).max(SHADOW_CONSIDERED));
        let head = &scored[..considered];
        let vectors: Vec<Option<Vec<f32>>> = head
            .iter()
            .map(|(_, _, c)| views[c.bank].index.vectors().get(c.memory.id.0))
            .collect();
        let announcing: Vec<bool> = head
            .iter()
            .map(|(_, _, c)| announces_change(&c.memory))
            .collect();
        let replaces: Vec<Option<MemoryId>> = head
            .iter()
            .zip(&vectors)
            .zip(&announcing)
            .map(|(((_, _, c), vector), &announcing)| {
                if !announcing {
                    return None;
                }
                // A statement without a vector has nothing to be compared with.
                vector.as_ref()?;
                self.nearest_older_statement(&views[c.bank], c)
            })
            .collect();
        let found: Vec<Found> = head
            .iter()
            .zip(replaces)
            .zip(announcing)
            .map(|(((_, _, c), replaces), announces_change)| Found {
                memory: &c.memory,
                // A bridge links a memory to a good answer; it does not make the memory an
                // answer alike to the others.
                relevance: c.direct_relevance(),
                bank: c.bank,
                wording: c
                    .arms
                    .iter()
                    .zip(&c.evidence)
                    .find(|(arm, _)| arm.arm == ARM_KEYWORD)
                    .map_or(0.0, |(_, &e)| e),
                similarity_to_query: c
                    .arms
                    .iter()
                    .find(|arm| arm.arm == ARM_SEMANTIC)
                    .map_or(0.0, |arm| arm.score),
                replaces,
                announces_change,
                hedged: c.memory.provenance.source.is_inference()
                    && hindsight_text::has_hedge(&c.memory.content).is_some(),
                rule_asked_about: self.asks_leave
                    && self
                        .screener
                        .as_ref()
                        .is_some_and(|s| s.states_rule(&c.memory.content)),
            })
            .collect();
        let by = shadowed(&found, |i, j| {
            Some(dot(vectors[i].as_deref()?, vectors[j].as_deref()?))
        });
        // The statement that stands takes the place of the best it stands for, as a superseded
        // record's hit stands in for the record that replaced it: a question worded like the old
        // value or the guess finds the current answer where it would have found those.
        for (loser, winner) in by.iter().enumerate() {
            if let Some(winner) = *winner {
                let id = scored[loser].2.memory.id.to_string();
                let score = scored[loser].0;
                let standing = &mut scored[winner];
                standing.1.collapsed.push(id);
                if score > standing.0 {
                    standing.0 = score;
                    standing.1.score = score;
                }
            }
        }
        let mut kept: Vec<(f32, Explain, Candidate)> = scored
            .into_iter()
            .enumerate()
            .filter(|(i, _)| by.get(*i).is_none_or(|b| b.is_none()))
            .map(|(_, entry)| entry)
            .collect();
        kept.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.memory.id.cmp(&b.2.memory.id)));
        kept
    }

    /// The user's earlier statement closest to `candidate`'s in its bank: what a statement
    /// announcing a change replaces, when recall may still return it, and when it is close
    /// enough or clearly the closest (see [`shadow::CHANGE_MIN_SIMILARITY`]).
    fn nearest_older_statement(&self, view: &BankView, candidate: &Candidate) -> Option<MemoryId> {
        if !view.index.vectors().searches_quickly() {
            return None;
        }
        let rules = self.visibility(&self.configs[candidate.bank]);
        view.with_records(|records| self.replaced_by(view, records, rules, &candidate.memory))
    }

    /// [`Self::nearest_older_statement`] with the bank's records at hand. The change's vector is
    /// read only when what it replaces is not known yet.
    fn replaced_by(
        &self,
        view: &BankView,
        records: &Records,
        rules: Visibility,
        newer: &Memory,
    ) -> Option<MemoryId> {
        let older = |id: u128| {
            records.get(&MemoryId(id)).is_some_and(|m| {
                m.id != newer.id
                    && is_user_statement(m)
                    && m.occurred_at < newer.occurred_at
                    && m.status != Status::Deleted
            })
        };
        // Whatever its status: when the review has already superseded what the change
        // replaced, nothing is left for the recall to hide.
        let replaced = view.replaced_by_change(newer, || {
            let vectors = view.index.vectors();
            let vector = vectors.get(newer.id.0)?;
            let nearest = vectors.search(&vector, 2, &older).ok()?;
            let &(id, closest) = nearest.first()?;
            let runner_up = nearest.get(1).map_or(0.0, |hit| hit.1);
            // Far from everything the user said before, a change may be about something new:
            // the nearest statement is what it replaces only if nothing says they are about
            // different things (two values of different kinds).
            let same_kind = || match (
                &newer.slot,
                records.get(&MemoryId(id)).and_then(|m| m.slot.as_ref()),
            ) {
                (Some(new), Some(old)) => new.attribute == old.attribute,
                _ => true,
            };
            let decisive = closest >= shadow::CHANGE_SHADOW_SIMILARITY
                || (closest >= shadow::CHANGE_MIN_SIMILARITY
                    && closest - runner_up >= shadow::CHANGE_MARGIN
                    && same_kind());
            decisive.then_some(MemoryId(id))
        })?;
        let replaced = records.get(&replaced)?;
        self.status_if_visible(replaced, rules)
            .is_some()
            .then_some(replaced.id)
    }

    /// The change arm: the user's newer statements that announce a change of a statement of
    /// theirs the other arms found, and that it replaces ([`Self::replaced_by`]). Worded like
    /// the new value ("cycling in now"), a change is often too far from a question worded
    /// like the old one ("which bus do I take to the depot?") for any arm to find it; shadowing
    /// then lets it stand for what it replaced.
    fn changes_of_found(
        &self,
        view: &BankView,
        records: &Records,
        rules: Visibility,
        candidates: &HashMap<MemoryId, Candidate>,
        bank: usize,
    ) -> Vec<ArmResult> {
        // A change of a change is left to the general rule (see `hindsight_core::shadow`).
        let mut found: Vec<(&Candidate, f32)> = candidates
            .values()
            .filter(|c| {
                c.bank == bank && is_user_statement(&c.memory) && !announces_change(&c.memory)
            })
            .map(|c| (c, c.direct_relevance()))
            .filter(|(_, relevance)| *relevance >= hindsight_core::shadow::CHANGE_MIN_RELEVANCE)
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.memory.id.cmp(&b.0.memory.id)));
        found.truncate(CHANGE_SEEDS);
        let vectors = view.index.vectors();
        let mut changes: HashMap<u128, f32> = HashMap::new();
        for (older, relevance) in found {
            let Some(vector) = vectors.get(older.memory.id.0) else {
                continue;
            };
            for id in view.changes_after(older.memory.occurred_at) {
                let Some(change) = records.get(&id) else {
                    continue;
                };
                if self.status_if_visible(change, rules).is_none() {
                    continue;
                }
                let similarity = vectors.similarity(id.0, &vector).ok().flatten();
                if similarity.is_none_or(|s| s < shadow::CHANGE_MIN_SIMILARITY) {
                    continue;
                }
                let id = id.0;
                if self.replaced_by(view, records, rules, change) == Some(older.memory.id) {
                    keep_best(&mut changes, id, relevance * CHANGE_EVIDENCE);
                }
            }
        }
        ranked_by_evidence(changes)
    }

    /// The factor intent, role and context give `memory`, and why; `None` leaves it out (its
    /// metadata names another case than the context's).
    fn adjustments(&self, memory: &Memory) -> Option<(f32, Vec<String>)> {
        let (context, mut reasons) = intent::context_factor(&self.request.context, memory)?;
        let (kind, kind_reason) = self.profile.kind_factor(memory);
        let (role, role_reason) = intent::role_factor(self.request.agent_role.as_deref(), memory);
        reasons.extend(kind_reason);
        reasons.extend(role_reason);
        Some((context * kind * role, reasons))
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

    /// The memory's confidence at the request's point in time.
    fn confidence_of(&self, memory: &Memory) -> f32 {
        self.request
            .as_of
            .map_or(memory.confidence, |t| memory.confidence_as_of(t))
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
                Some((id, dot(stored.get(id)?, query.for_memory(memory))))
            })
            .collect();
        drop(stored);
        rescored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        rescored.truncate(depth);
        rescored
    }

    /// The record a hit stands for: the hit itself when recall may return it, else the live
    /// record that superseded it (a merged rewording, or a newer statement of the same fact),
    /// followed for a few hops. A question phrased like an old statement is answered by what
    /// replaced it, never by the old statement.
    fn stand_in<'r>(
        &self,
        records: &'r Records,
        id: MemoryId,
        rules: Visibility,
    ) -> Option<(&'r Arc<Memory>, Status)> {
        let mut current = records.get(&id)?;
        for _ in 0..4 {
            if let Some(status) = self.status_if_visible(current, rules) {
                return Some((current, status));
            }
            let status = match self.request.as_of {
                Some(t) => current.status_as_of(t)?,
                None => current.status.clone(),
            };
            let Status::Superseded { by } = status else {
                return None;
            };
            current = records.get(&by)?;
        }
        None
    }

    /// The status recall reports for `memory`, or `None` when the memory is left out.
    fn status_if_visible(&self, memory: &Memory, rules: Visibility) -> Option<Status> {
        let status = match self.request.as_of {
            Some(t) => memory.status_as_of(t)?,
            None if memory.is_expired_at(self.now) => Status::Expired,
            None => memory.status.clone(),
        };
        if status == Status::Deleted {
            return None;
        }
        let archived_asked = status == Status::Archived && self.request.include_archived;
        if status.hidden_by_default() && !self.request.include_history && !archived_asked {
            return None;
        }
        if self.confidence_of(memory) < rules.min_confidence && !archived_asked {
            return None;
        }
        // Not even with history: a bank that requires corroboration never lets recall put an
        // unconfirmed low-trust claim in front of an agent. Trace and the listing still show it.
        if rules.require_corroboration && crate::write::guarding::is_uncorroborated(memory) {
            return None;
        }
        let filters = &self.request.filters;
        if !filters.kinds.is_empty() && !filters.kinds.contains(&memory.kind) {
            return None;
        }
        if !filters.tags.iter().all(|t| memory.tags.contains(t)) {
            return None;
        }
        if filters
            .occurred_from
            .is_some_and(|from| memory.occurred_at < from)
            || filters
                .occurred_to
                .is_some_and(|to| memory.occurred_at >= to)
        {
            return None;
        }
        Some(status)
    }
}

/// The candidates of `bank` whose entities the bridge follows: the most relevant, if relevant
/// enough, with their relevance so far.
fn best_seeds(candidates: &HashMap<MemoryId, Candidate>, bank: usize) -> Vec<(MemoryId, f32)> {
    let mut seeds: Vec<(MemoryId, f32)> = candidates
        .values()
        .filter(|c| c.bank == bank)
        .map(|c| (c.memory.id, c.direct_relevance()))
        .filter(|(_, relevance)| *relevance >= BRIDGE_MIN_RELEVANCE)
        .collect();
    seeds.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    seeds.truncate(BRIDGE_SEEDS);
    seeds
}

/// The bridge arm: memories that name an entity a seed names and the query does not, each
/// with evidence `BRIDGE_EVIDENCE × the seed's relevance × the entity's rarity` (its best
/// seed's). An entity named by many memories is not followed.
fn bridged(
    view: &BankView,
    seeds: &[(MemoryId, f32)],
    query_entities: &[String],
) -> Vec<ArmResult> {
    let index = view.index.entities();
    let memories = index.len();
    if seeds.is_empty() || memories < 2 {
        return vec![];
    }
    let fanout = ((memories as f32 * BRIDGE_MAX_SHARE) as usize).max(BRIDGE_MIN_FANOUT);
    let rarity =
        |named: usize| (1.0 + memories as f32 / named as f32).ln() / (1.0 + memories as f32).ln();
    let mut evidence: HashMap<u128, f32> = HashMap::new();
    let vectors = view.index.vectors();
    for &(seed, relevance) in seeds {
        let seed_vector = vectors.get(seed.0);
        for entity in followed_names(&index.entities_of(seed.0)) {
            if query_entities.contains(&entity) {
                continue;
            }
            let named = index.memories_of(&entity);
            // A link to one other memory says more than a link to several. (A part of the
            // seed's name may not list the seed itself.)
            let others = named.iter().filter(|id| **id != seed.0).count();
            if others == 0 || named.len() > fanout {
                continue;
            }
            let strength =
                BRIDGE_EVIDENCE * relevance * rarity(named.len()) / (others as f32).sqrt();
            for id in named.into_iter().filter(|id| *id != seed.0) {
                if seed_vector
                    .as_deref()
                    .zip(vectors.get(id).as_deref())
                    .is_some_and(|(a, b)| dot(a, b) >= BRIDGE_MAX_LIKENESS)
                {
                    continue;
                }
                keep_best(&mut evidence, id, strength);
            }
        }
    }
    ranked_by_evidence(evidence)
}

/// Keeps the strongest of the evidence an arm found for `id` by several routes.
/// Evidence of hits inside a time window (or alive at the query's moment) that holds `share` of
/// the bank: [`IN_WINDOW_EVIDENCE`] for being there, less the more of the bank is, plus the rest
/// by similarity to the query.
fn in_window_evidence(hits: Vec<ArmResult>, share: f32) -> Vec<ArmResult> {
    let base = IN_WINDOW_EVIDENCE * (1.0 - share).clamp(0.0, 1.0);
    hits.into_iter()
        .map(|(id, similarity, _)| {
            (
                id,
                similarity,
                base + (1.0 - base) * semantic_quality(similarity),
            )
        })
        .collect()
}

fn keep_best(evidence: &mut HashMap<u128, f32>, id: u128, found: f32) {
    let best = evidence.entry(id).or_insert(0.0);
    *best = best.max(found);
}

/// An arm's hits whose score is their evidence, strongest first (ties by id).
fn ranked_by_evidence(evidence: HashMap<u128, f32>) -> Vec<ArmResult> {
    let mut ranked: Vec<ArmResult> = evidence
        .into_iter()
        .map(|(id, strength)| (id, strength, strength))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

/// A memory's entity keys, and each word of a name of several ("danielle" of "danielle okoye"):
/// a person introduced by full name is named by one part of it later.
fn followed_names(entities: &[String]) -> Vec<String> {
    let mut names = entities.to_vec();
    for entity in entities {
        let words: Vec<&str> = entity.split(' ').collect();
        let a_name = words.len() > 1 && words.iter().all(|w| w.chars().all(char::is_alphabetic));
        if !a_name {
            continue;
        }
        for part in words.into_iter().filter(|p| p.chars().count() >= 3) {
            if part != entity && !names.iter().any(|n| n == part) {
                names.push(part.to_string());
            }
        }
    }
    names
}

/// How strongly a hit supports relevance, in 0..1. Plain RRF counts rank only, so a bank where every
/// memory shares one weak word ("user", "用户") would let keyword noise outrank the one memory that
/// means the same thing as the query; weighting each hit's RRF share by its quality prevents that.
///
/// Cosine similarity of unrelated sentences sits around 0.1–0.3 with the default model and of
/// paraphrases around 0.5–0.8: map 0.15 → 0 and 0.65 → 1.
fn semantic_quality(similarity: f32) -> f32 {
    ((similarity - 0.15) / 0.5).clamp(0.02, 1.0)
}

/// A BM25 score a document matching every query term once at average length would get: the sum of the
/// terms' idf, counting a term no memory contains at the highest idf. A hit's score over it says how
/// much of the query it covers.
fn keyword_best_possible(bm25: &hindsight_index::Bm25Index, terms: &[String]) -> f32 {
    let n = bm25.len() as f32;
    let mut distinct: Vec<&String> = terms.iter().collect();
    distinct.sort();
    distinct.dedup();
    let total: f32 = distinct
        .into_iter()
        .map(|t| {
            let df = bm25.doc_freq(t) as f32;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .sum();
    total.max(f32::EPSILON)
}

fn flags(candidate: &Candidate, relevance: f32) -> Vec<String> {
    let mut flags = vec![];
    if relevance < WEAK_RELEVANCE {
        flags.push("weak_match".to_string());
    }
    if candidate
        .memory
        .metadata
        .contains_key(crate::write::guarding::SENSITIVE)
    {
        flags.push("requires_confirmation".to_string());
    }
    match candidate.status {
        Status::Disputed => flags.push("disputed".to_string()),
        Status::PendingReview => flags.push("pending_review".to_string()),
        _ => {}
    }
    if candidate.in_window {
        flags.push("in_time_window".to_string());
    }
    if candidate.memory.support.count > 1 {
        flags.push(format!("support:{}", candidate.memory.support.count));
    } else if crate::write::guarding::is_uncorroborated(&candidate.memory) {
        flags.push("uncorroborated".to_string());
    }
    flags
}

/// A bank whose memories name someone this often serves that person, when the agent's own notes
/// name them too ("Drafted a note for Lucy's client") and tools' records are not most of what
/// names them (a host, a product, a currency): what that person said is in the first person.
const PRINCIPAL_SHARE: f32 = 0.1;
/// ...when at least this many memories name them.
const PRINCIPAL_MIN_MEMORIES: usize = 3;
/// Memories naming an entity looked at, at most, to tell whether it is the principal.
const PRINCIPAL_SAMPLE: usize = 256;

/// The query's entities that name the person `view`'s bank serves: the name they introduced
/// themselves by, or one named as [`PRINCIPAL_SHARE`] says. Asked about by name, that person
/// answers in the first person.
fn principals_named(view: &BankView, entities: &[String]) -> Vec<String> {
    let total = view.index.time().len();
    if total == 0 || entities.is_empty() {
        return vec![];
    }
    let needed = PRINCIPAL_MIN_MEMORIES.max((PRINCIPAL_SHARE * total as f32).ceil() as usize);
    view.with_records(|records| {
        entities
            .iter()
            .filter(|entity| {
                // A sample is enough to tell, and keeps a common entity of a large bank cheap.
                let (count, naming) = view
                    .index
                    .entities()
                    .some_memories_of(entity, PRINCIPAL_SAMPLE);
                let naming: Vec<&Memory> = naming
                    .iter()
                    .filter_map(|id| records.get(&MemoryId(*id)).map(|m| m.as_ref()))
                    .collect();
                // The user introduced themselves by that name ("I'm Lucy", "我是财务林晓").
                let introduction = hindsight_text::SelfIntroduction::new(entity);
                if naming.iter().any(|m| {
                    m.provenance.source == SourceKind::User && introduction.in_text(&m.content)
                }) {
                    return true;
                }
                if count < needed {
                    return false;
                }
                let (mut agent, mut tool, mut labelled, mut seen) =
                    (0usize, 0usize, 0usize, 0usize);
                for memory in naming {
                    seen += 1;
                    if memory.provenance.source == SourceKind::Agent
                        && speaks_as(&memory.content, entity)
                    {
                        labelled += 1;
                    }
                    match memory.provenance.source {
                        SourceKind::Agent => agent += 1,
                        SourceKind::Tool => tool += 1,
                        _ => {}
                    }
                }
                // The label of the agent's own turns in a chat ("Assistant: …") names the agent.
                agent > 0 && 2 * tool < seen && 2 * labelled < seen
            })
            .cloned()
            .collect()
    })
}

/// Whether `content` is a turn of a transcript that `name` (an entity key) speaks: "Maya: …".
fn speaks_as(content: &str, name: &str) -> bool {
    match content.find([':', '：']) {
        Some(at) if at <= name.len() + 8 => content[..at].trim().to_lowercase() == name,
        _ => false,
    }
}
