//! The bank's published view as the review's [`Neighbourhood`]: the index searches, slot groups
//! and user-voice vectors that candidate selection and distillation ask about.

use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::Arc;

use hindsight_core::{Memory, MemoryId};
use hindsight_index::dot;
use hindsight_review::{is_inferred, Neighbourhood};

use crate::bank::BankView;

/// The bank's published view as the review's [`Neighbourhood`].
pub(super) struct ViewNeighbourhood<'a> {
    view: &'a BankView,
    records: &'a HashMap<MemoryId, Arc<Memory>>,
    /// The reviewable claims of the slots the cycle's changed memories state, most recent first.
    /// Only those slots: a cycle asks for no others, and grouping the whole bank cost every cycle
    /// time in proportion to the bank rather than to the change.
    by_slot: SlotGroups,
    /// Neighbour searches by memory and size: candidate selection and distillation ask for the
    /// same memory's neighbours, and an index search is the dearest step of a cycle.
    searched: RefCell<Searches>,
    /// Inferences' vectors in the user's voice (see [`super::voices::user_voices`]).
    voices: HashMap<MemoryId, Vec<f32>>,
    /// The bank's reviewable inferences, usually few.
    inferences: Vec<Arc<Memory>>,
}

/// Up to this many inferences in a bank, a statement is compared with each of them directly;
/// beyond it, a filtered index search is cheaper.
pub(super) const DIRECT_SCAN_LIMIT: usize = 2_000;

impl<'a> ViewNeighbourhood<'a> {
    /// `changed` are the memories whose slots [`Neighbourhood::same_slot`] will be asked about.
    pub(super) fn new(
        view: &'a BankView,
        records: &'a HashMap<MemoryId, Arc<Memory>>,
        voices: HashMap<MemoryId, Vec<f32>>,
        changed: &[Arc<Memory>],
    ) -> Self {
        let mut by_slot = SlotGroups::default();
        for slot in changed.iter().filter_map(|m| m.slot.as_ref()) {
            by_slot
                .entry(slot.subject.clone())
                .or_default()
                .entry(slot.attribute.clone())
                .or_default();
        }
        if !by_slot.is_empty() {
            for memory in records
                .values()
                .filter(|m| hindsight_review::is_reviewable(m))
            {
                if let Some(group) = memory
                    .slot
                    .as_ref()
                    .and_then(|slot| by_slot.get_mut(&slot.subject)?.get_mut(&slot.attribute))
                {
                    group.push(memory.clone());
                }
            }
        }
        for group in by_slot.values_mut().flat_map(HashMap::values_mut) {
            group.sort_by(|a, b| b.occurred_at.cmp(&a.occurred_at).then(a.id.cmp(&b.id)));
        }
        let inferences = reviewable_inferences(records);
        ViewNeighbourhood {
            view,
            records,
            by_slot,
            searched: RefCell::default(),
            voices,
            inferences,
        }
    }
}

impl ViewNeighbourhood<'_> {
    /// Runs the neighbour searches of `memories` on every core before pair selection asks for them
    /// one by one: they are independent of each other, and together they are most of a cycle's
    /// planning time.
    pub(super) fn search_ahead(&self, memories: &[Arc<Memory>], limit: usize) {
        let todo: Vec<MemoryId> = {
            let searched = self.searched.borrow();
            memories
                .iter()
                .filter(|m| hindsight_review::is_reviewable(m))
                .map(|m| m.id)
                .filter(|id| !searched.contains_key(&(*id, limit)))
                .collect()
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(todo.len() / SEARCHES_PER_THREAD)
            .max(1);
        let (view, records) = (self.view, self.records);
        let search = |part: &[MemoryId]| -> Vec<(SearchKey, Vec<(u128, f32)>)> {
            part.iter()
                .filter_map(|id| Some(((*id, limit), search_similar(view, records, *id, limit)?)))
                .collect()
        };
        let found = if threads == 1 {
            search(&todo)
        } else {
            std::thread::scope(|scope| {
                let workers: Vec<_> = todo
                    .chunks(todo.len().div_ceil(threads))
                    .map(|part| scope.spawn(move || search(part)))
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| w.join().expect("a neighbour search panicked"))
                    .collect()
            })
        };
        self.searched.borrow_mut().extend(found);
    }
}

/// Fewer searches than this are not worth a thread of their own.
const SEARCHES_PER_THREAD: usize = 32;

impl Neighbourhood for ViewNeighbourhood<'_> {
    fn similar(
        &self,
        memory: &Memory,
        min_similarity: f32,
        limit: usize,
    ) -> Vec<(Arc<Memory>, f32)> {
        let mut searched = self.searched.borrow_mut();
        let found = match searched.entry((memory.id, limit)) {
            Entry::Occupied(found) => found.into_mut(),
            Entry::Vacant(slot) => {
                let Some(found) = search_similar(self.view, self.records, memory.id, limit) else {
                    return vec![];
                };
                slot.insert(found)
            }
        };
        found
            .iter()
            .copied()
            .filter(|(id, sim)| *id != memory.id.0 && *sim >= min_similarity)
            .filter_map(|(id, sim)| Some((self.records.get(&MemoryId(id))?.clone(), sim)))
            .take(limit)
            .collect()
    }

    fn similar_across(
        &self,
        memory: &Memory,
        min_similarity: f32,
        limit: usize,
    ) -> Vec<(Arc<Memory>, f32)> {
        let vectors = self.view.index.vectors();
        let Some(vector) = vectors.get(memory.id.0) else {
            return vec![];
        };
        let own_voice = self.voices.get(&memory.id);
        let mut found: HashMap<u128, f32> = HashMap::new();
        if is_inferred(memory) || self.inferences.len() > DIRECT_SCAN_LIMIT {
            // The other side is large: a filtered search passes most of the index.
            let other_side = !is_inferred(memory);
            let wanted = |id: u128| {
                id != memory.id.0
                    && self.records.get(&MemoryId(id)).is_some_and(|m| {
                        hindsight_review::is_reviewable(m) && is_inferred(m) == other_side
                    })
            };
            for query in std::iter::once(&vector).chain(own_voice) {
                for (id, sim) in vectors.search(query, limit, &wanted).unwrap_or_default() {
                    let entry = found.entry(id).or_insert(sim);
                    *entry = entry.max(sim);
                }
            }
        } else {
            // A statement against the bank's few inferences: compare with each directly.
            for other in &self.inferences {
                if let Some(v) = vectors.get(other.id.0) {
                    found.insert(other.id.0, dot(&vector, &v));
                }
            }
        }
        // A candidate with a voice of its own is compared in that voice too.
        let mut out: Vec<(Arc<Memory>, f32)> = found
            .into_iter()
            .filter_map(|(id, sim)| {
                let other = self.records.get(&MemoryId(id))?;
                let voiced = self
                    .voices
                    .get(&other.id)
                    .map_or(sim, |v| sim.max(dot(own_voice.unwrap_or(&vector), v)));
                Some((other.clone(), voiced))
            })
            .filter(|(_, sim)| *sim >= min_similarity)
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.id.cmp(&b.0.id)));
        out.truncate(limit);
        out
    }

    fn same_slot(&self, memory: &Memory, limit: usize) -> Vec<Arc<Memory>> {
        memory
            .slot
            .as_ref()
            .and_then(|slot| self.by_slot.get(&slot.subject)?.get(&slot.attribute))
            .map(|group| {
                group
                    .iter()
                    .filter(|m| m.id != memory.id)
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The index's nearest reviewable memories to `id` (itself among them), `None` when it has no
/// vector.
fn search_similar(
    view: &BankView,
    records: &HashMap<MemoryId, Arc<Memory>>,
    id: MemoryId,
    limit: usize,
) -> Option<Vec<(u128, f32)>> {
    let vectors = view.index.vectors();
    let vector = vectors.get(id.0)?;
    let reviewable = |id: u128| {
        records
            .get(&MemoryId(id))
            .is_some_and(|m| hindsight_review::is_reviewable(m))
    };
    Some(
        vectors
            .search_with_ef(&vector, limit + 1, REVIEW_SEARCH_EF, &reviewable)
            .unwrap_or_default(),
    )
}

/// The candidate list of a review's neighbour search, half a recall's: the review pairs a memory
/// only with neighbours at least `duplicate_similarity` (0.75) close, which a graph search finds
/// early, and this search is run once for every changed memory of a cycle.
const REVIEW_SEARCH_EF: usize = 64;

/// Index hits (id, similarity) by memory and number asked for.
type Searches = HashMap<SearchKey, Vec<(u128, f32)>>;

/// A memory and the number of neighbours asked for.
type SearchKey = (MemoryId, usize);

/// Memories by slot subject, then attribute.
type SlotGroups = HashMap<String, HashMap<String, Vec<Arc<Memory>>>>;

pub(super) fn reviewable_inferences(records: &HashMap<MemoryId, Arc<Memory>>) -> Vec<Arc<Memory>> {
    let mut out: Vec<Arc<Memory>> = records
        .values()
        .filter(|m| is_inferred(m) && hindsight_review::is_reviewable(m))
        .cloned()
        .collect();
    out.sort_by_key(|m| m.id);
    out
}
