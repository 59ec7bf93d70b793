//! Test fixtures: memories built in one line and a neighbourhood answered from a table of
//! hand-set similarities (this crate has no embedder).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hindsight_core::{
    Kind, Memory, MemoryId, Provenance, Slot, SourceKind, Status, Subtype, Timestamp,
};

// Through the crate root, so that the integration tests can include this file as it is.
use crate::Neighbourhood;

pub const DAY: i64 = 86_400_000;

/// A user-stated, active semantic fact recorded on day `id`.
pub fn memory(id: u128, content: &str) -> Memory {
    let mut memory = Memory::new(
        MemoryId(id),
        "test/bank".parse().expect("valid bank name"),
        content,
        Provenance::from_source(SourceKind::User),
        Timestamp(1_700_000_000_000 + id as i64 * DAY),
    );
    memory.subtype = Some(Subtype::Fact);
    memory
}

/// Like [`memory`], with the slot filled from the text the way a write fills it.
pub fn stated(id: u128, content: &str) -> Memory {
    let mut m = memory(id, content);
    m.slot = hindsight_text::extract_slot(content).map(|s| Slot {
        subject: s.subject,
        attribute: s.attribute,
        value: s.value,
    });
    m
}

pub trait MemoryExt: Sized {
    fn with_slot(self, subject: &str, attribute: &str, value: &str) -> Self;
    fn with_status(self, status: Status) -> Self;
    fn with_kind(self, kind: Kind) -> Self;
    fn with_source(self, source: SourceKind) -> Self;
    fn with_tool(self, tool: &str) -> Self;
    fn with_confidence(self, confidence: f32) -> Self;
    fn critical(self) -> Self;
    /// Event time and record time, in days after the fixture epoch.
    fn at(self, occurred_day: i64, recorded_day: i64) -> Self;
}

impl MemoryExt for Memory {
    fn with_slot(mut self, subject: &str, attribute: &str, value: &str) -> Self {
        self.slot = Some(Slot {
            subject: subject.into(),
            attribute: attribute.into(),
            value: value.into(),
        });
        self
    }

    fn with_status(mut self, status: Status) -> Self {
        self.status = status;
        self
    }

    fn with_kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }

    fn with_source(mut self, source: SourceKind) -> Self {
        self.provenance.source = source;
        self.confidence = source.initial_confidence();
        self
    }

    fn with_tool(self, tool: &str) -> Self {
        let mut m = self.with_source(SourceKind::Tool);
        m.provenance.tool = Some(tool.into());
        m
    }

    fn with_confidence(mut self, confidence: f32) -> Self {
        self.confidence = confidence;
        self
    }

    fn critical(mut self) -> Self {
        self.critical = true;
        self
    }

    fn at(mut self, occurred_day: i64, recorded_day: i64) -> Self {
        self.occurred_at = Timestamp(1_700_000_000_000 + occurred_day * DAY);
        self.recorded_at = Timestamp(1_700_000_000_000 + recorded_day * DAY);
        self.valid_from = self.occurred_at;
        self
    }
}

/// A bank's memories with symmetric, hand-set similarities and a slot index.
#[derive(Default)]
pub struct Table {
    memories: BTreeMap<MemoryId, Arc<Memory>>,
    similarity: HashMap<(MemoryId, MemoryId), f32>,
}

impl Table {
    pub fn new(memories: &[Memory]) -> Self {
        Table {
            memories: memories
                .iter()
                .map(|m| (m.id, Arc::new(m.clone())))
                .collect(),
            similarity: HashMap::new(),
        }
    }

    pub fn similar(mut self, a: u128, b: u128, similarity: f32) -> Self {
        self.similarity
            .insert((MemoryId(a), MemoryId(b)), similarity);
        self.similarity
            .insert((MemoryId(b), MemoryId(a)), similarity);
        self
    }

    pub fn get(&self, id: u128) -> Arc<Memory> {
        self.memories[&MemoryId(id)].clone()
    }

    pub fn all(&self) -> Vec<Arc<Memory>> {
        self.memories.values().cloned().collect()
    }
}

impl Neighbourhood for Table {
    fn similar(
        &self,
        memory: &Memory,
        min_similarity: f32,
        limit: usize,
    ) -> Vec<(Arc<Memory>, f32)> {
        let mut out: Vec<(Arc<Memory>, f32)> = self
            .memories
            .values()
            .filter_map(|m| {
                let s = *self.similarity.get(&(memory.id, m.id))?;
                (s >= min_similarity).then(|| (m.clone(), s))
            })
            .collect();
        out.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.id.cmp(&y.0.id)));
        out.truncate(limit);
        out
    }

    fn same_slot(&self, memory: &Memory, limit: usize) -> Vec<Arc<Memory>> {
        let Some(slot) = &memory.slot else {
            return Vec::new();
        };
        let mut out: Vec<Arc<Memory>> = self
            .memories
            .values()
            .filter(|m| {
                m.slot
                    .as_ref()
                    .is_some_and(|s| s.subject == slot.subject && s.attribute == slot.attribute)
            })
            .cloned()
            .collect();
        out.sort_by(|a, b| b.occurred_at.cmp(&a.occurred_at).then(a.id.cmp(&b.id)));
        out.truncate(limit);
        out
    }
}
