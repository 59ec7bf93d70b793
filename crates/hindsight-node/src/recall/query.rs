//! What recall reads out of the query before the arms run: its embeddings, and the person a
//! bank serves when the query names them.

use hindsight_core::{Memory, MemoryId, SourceKind};

use crate::bank::BankView;

/// The query's embeddings.
pub(super) struct QueryVectors {
    pub(super) query: Vec<f32>,
    /// The query as the user would have asked it (see [`hindsight_text::in_user_voice`]), compared
    /// with memories in the user's own words instead of `query`.
    pub(super) user_voice: Option<Vec<f32>>,
}

impl QueryVectors {
    /// The query vector to compare `memory` with: the user's own words answer the question asked
    /// in the user's voice.
    pub(super) fn for_memory(&self, memory: &Memory) -> &[f32] {
        match &self.user_voice {
            Some(voice) if memory.provenance.source == SourceKind::User => voice,
            _ => &self.query,
        }
    }
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
pub(super) fn principals_named(view: &BankView, entities: &[String]) -> Vec<String> {
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
