//! What recall reads out of the query before the arms run: its time window, its entities, the
//! person a bank serves when the query names them, and its embeddings.

use std::sync::Arc;

use hindsight_core::{Memory, MemoryId, SourceKind, Timestamp};

use super::RecallHost;
use crate::bank::embedding;
use crate::bank::BankView;
use crate::error::NodeError;

/// What recall reads out of the query's text.
pub(super) struct Query {
    /// The query without its time expression, unless that is all it says.
    pub(super) text: String,
    pub(super) window: Option<(Timestamp, Timestamp)>,
    /// The query asks about the present moment ([`hindsight_text::asks_about_present`]).
    pub(super) present: bool,
    pub(super) entities: Vec<String>,
    /// For each bank of the request, the query's entities that name the person it serves.
    pub(super) principals: Vec<Vec<String>>,
}

impl Query {
    /// `query` as asked at `as_of` of the banks of `views`.
    pub(super) fn read(query: &str, as_of: Timestamp, views: &[Arc<BankView>]) -> Query {
        let window = hindsight_text::parse_time_window(query, as_of.to_datetime()).map(|w| {
            (
                Timestamp::from_datetime(w.start),
                Timestamp::from_datetime(w.end),
            )
        });
        let text = match window {
            Some(_) => {
                let stripped = hindsight_text::strip_time_expr(query);
                if stripped.trim().is_empty() {
                    query.to_string()
                } else {
                    stripped
                }
            }
            None => query.to_string(),
        };
        let entities = hindsight_text::query_entities(&text);
        let principals = views
            .iter()
            .map(|view| principals_named(view, &entities))
            .collect();
        Query {
            text,
            window,
            present: hindsight_text::asks_about_present(query),
            entities,
            principals,
        }
    }

    /// For each bank, the query's entities the entity arm searches: all but the person the bank
    /// serves, whom every memory of it is about.
    pub(super) fn singling_out(&self) -> Vec<Vec<String>> {
        self.principals
            .iter()
            .map(|named| {
                self.entities
                    .iter()
                    .filter(|e| !named.contains(e))
                    .cloned()
                    .collect()
            })
            .collect()
    }
}

/// The query's embeddings.
pub(super) struct QueryVectors {
    pub(super) query: Vec<f32>,
    /// The query as the user would have asked it (see [`hindsight_text::in_user_voice`]), compared
    /// with memories in the user's own words instead of `query`.
    pub(super) user_voice: Option<Vec<f32>>,
}

impl QueryVectors {
    /// The query's text embedded, and once more as the user would have asked it, if it reads
    /// differently then.
    pub(super) async fn embed(
        node: &impl RecallHost,
        query: Query,
    ) -> Result<QueryVectors, NodeError> {
        // The person a bank serves, asked about by name, is asked about as "the user": what they
        // said themselves is in the first person. Only the comparison with their own words
        // changes.
        let named: Vec<String> = query.principals.into_iter().flatten().collect();
        let asked = hindsight_text::naming_as_user(&query.text, &named)
            .unwrap_or_else(|| query.text.clone());
        let user_voice = hindsight_text::in_user_voice(&asked);
        let mut texts = vec![query.text];
        texts.extend(user_voice);
        let mut vectors = embedding::embed_queries(&node.banks().context().embedder, texts)
            .await?
            .into_iter();
        Ok(QueryVectors {
            query: vectors
                .next()
                .ok_or_else(|| NodeError::internal("embedder returned no vector"))?,
            user_voice: vectors.next(),
        })
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_turn_speaks_as_the_name_before_its_colon() {
        assert!(speaks_as("Maya: can you book the dentist?", "maya"));
        assert!(speaks_as("Lin Xiao：明天开会", "lin xiao"));
        assert!(!speaks_as(
            "Maya said the dentist moved: Tuesday now",
            "maya"
        ));
        assert!(!speaks_as("Note for Maya: dentist on Tuesday", "maya"));
        assert!(!speaks_as(
            "Maya's dentist appointment moved to Tuesday",
            "maya"
        ));
    }
}
