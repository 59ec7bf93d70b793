use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use hindsight_core::apply::Effect;
use hindsight_core::{BankName, Memory, MemoryId};
use hindsight_index::{BankIndex, BankIndexConfig, IndexDoc};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::bank::context::BankContext;
use crate::bank::embedding;
use crate::bank::registry::BankHandle;
use crate::bank::view::BankView;

#[derive(ractor_cluster::RactorMessage)]
pub enum BankMsg {
    /// Effects of one applied log entry on this bank.
    Applied {
        log_index: u64,
        effects: Vec<Effect>,
    },
    /// Writes the indexes to disk if they changed since the last dump.
    Dump(Option<RpcReplyPort<()>>),
    /// Test hook: fail as a bug would, to exercise supervision.
    #[cfg(feature = "test-hooks")]
    InjectPanic,
}

pub struct BankActor {
    pub context: Arc<BankContext>,
}

pub struct BankState {
    view: Arc<BankView>,
    dirty: bool,
    /// The index's count of graphs built when it was last dumped.
    graphs_dumped: u64,
    /// When the bank last applied a write (or loaded): its vector graph rests after
    /// `BankContext::graph_rest_after` without one.
    last_write: Instant,
}

impl Actor for BankActor {
    type Msg = BankMsg;
    type State = BankState;
    type Arguments = BankName;

    async fn pre_start(
        &self,
        myself: ActorRef<BankMsg>,
        bank: BankName,
    ) -> Result<BankState, ActorProcessingErr> {
        let view = load_view(&self.context, &bank, &myself).await?;
        Ok(BankState {
            view,
            dirty: false,
            // The dump it was loaded from holds none of the graphs the index builds from now on,
            // including one built while loading.
            graphs_dumped: 0,
            last_write: Instant::now(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<BankMsg>,
        message: BankMsg,
        state: &mut BankState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            BankMsg::Applied { log_index, effects } => {
                apply_effects(&self.context, &state.view, effects).await?;
                state.view.mark_indexed(log_index);
                state.dirty = true;
                state.last_write = Instant::now();
            }
            BankMsg::Dump(reply) => {
                // A graph built since the last dump is worth keeping even with no write since:
                // without it the next start builds it again.
                let index = &state.view.index;
                let graphs = index.vectors().graphs_built();
                // A graph the linker finished after the last dump is saved whole too: a graph
                // rests only when a dump holds it as it is.
                if state.dirty || graphs != state.graphs_dumped || index.graph_newer_than_dump() {
                    dump(&self.context, &state.view).await;
                    state.dirty = false;
                    state.graphs_dumped = graphs;
                } else if self
                    .context
                    .graph_rest_after
                    .is_some_and(|after| state.last_write.elapsed() >= after)
                    && index.rest_graph()
                {
                    tracing::info!(
                        bank = %state.view.name,
                        "vector graph at rest: searched through its dumped links, read back at the next write"
                    );
                }
                if let Some(reply) = reply {
                    let _ = reply.send(());
                }
            }
            #[cfg(feature = "test-hooks")]
            BankMsg::InjectPanic => panic!("injected failure in bank actor {}", state.view.name),
        }
        Ok(())
    }
}

async fn apply_effects(
    context: &BankContext,
    view: &BankView,
    effects: Vec<Effect>,
) -> Result<(), ActorProcessingErr> {
    let mut needs_vector: Vec<Memory> = vec![];
    // Vectors the entry carried for the memories it created, made by this node's model.
    let mut carried: HashMap<MemoryId, Vec<f32>> = HashMap::new();
    let mut took_carried = 0;
    for effect in effects {
        match effect {
            Effect::VectorCarried {
                id, model, vector, ..
            } => {
                if usable(context, &model, &vector) {
                    carried.insert(id, vector);
                }
            }
            Effect::MemoryUpserted(memory) => {
                if view.index.contains(memory.id.0) {
                    view.put(*memory, None);
                } else {
                    match carried.remove(&memory.id) {
                        Some(vector) => {
                            let doc = index_doc(&memory, vector);
                            view.put(*memory, Some(doc));
                            took_carried += 1;
                        }
                        None => needs_vector.push(*memory),
                    }
                }
            }
            Effect::MemoryRemoved { id, .. } => view.remove(id),
            Effect::BankChanged(_) => {
                if let Some(config) = context.reader_of(&view.name)?.bank(&view.name)? {
                    view.set_config(config);
                }
            }
            Effect::BankRemoved(_) => {}
        }
    }
    crate::metrics::write_vectors(took_carried, needs_vector.len());
    if !needs_vector.is_empty() {
        let texts = needs_vector.iter().map(|m| m.content.clone()).collect();
        let vectors = embedding::embed(&context.embedder, texts).await?;
        for (memory, vector) in needs_vector.into_iter().zip(vectors) {
            let doc = index_doc(&memory, vector);
            view.put(memory, Some(doc));
        }
    }
    Ok(())
}

/// Whether a vector a log entry carried can go into this node's index as it is: made by the same
/// model (the same id, so the same space) and of this index's dimension. Anything else is embedded
/// again here.
fn usable(context: &BankContext, model: &str, vector: &[f32]) -> bool {
    model == context.embedder.model_id() && vector.len() == context.embedder.dim()
}

/// Builds the bank's view from its last index dump (when the embedding model still matches) and the
/// store of record, embedding only what the dump lacks.
async fn load_view(
    context: &Arc<BankContext>,
    bank: &BankName,
    myself: &ActorRef<BankMsg>,
) -> Result<Arc<BankView>, ActorProcessingErr> {
    let started = Instant::now();
    let reader = context.reader_of(bank)?;
    let config = reader
        .bank(bank)?
        .ok_or_else(|| format!("bank {bank} does not exist"))?;
    let model = context.embedder.model_id().to_string();
    // A remote embedder learns its dimension from its first answer; a node that restarts and
    // loads a bank before it has embedded anything asks for it here, since the index cannot be
    // opened or built without it.
    let dim = match context.embedder.dim() {
        0 => embedding::embed(&context.embedder, vec!["dimension probe".to_string()])
            .await?
            .first()
            .map_or(0, Vec::len),
        known => known,
    };
    if dim == 0 {
        return Err(format!("the embedder gave no dimension for bank {bank}").into());
    }
    let dir = context.index_dir(bank);
    let index = if dir.exists() {
        let dir = dir.clone();
        let expected = model.clone();
        match tokio::task::spawn_blocking(move || BankIndex::load(&dir, &expected, dim)).await? {
            Ok(index) => index,
            Err(e) => {
                tracing::info!(%bank, reason = %e, "rebuilding bank indexes from the store");
                crate::metrics::index_rebuilt();
                BankIndex::new(&model, BankIndexConfig::new(dim))
            }
        }
    } else {
        BankIndex::new(&model, BankIndexConfig::new(dim))
    };
    // Register before reading the store: effects applied from here on queue in this actor's mailbox,
    // and replaying one the load already saw is harmless.
    let applied = reader.last_applied_index();
    let view = Arc::new(BankView::new(config, index, applied));
    let handle = BankHandle::loading(myself.clone(), view.clone());
    context.registry.insert(bank.clone(), handle.clone());
    let memories = {
        let reader = reader.clone();
        let bank = bank.clone();
        tokio::task::spawn_blocking(move || reader.bank_memories(&bank)).await??
    };
    let live: HashSet<u128> = memories.iter().map(|m| m.id.0).collect();
    for stale in view.index.time().range(i64::MIN, i64::MAX) {
        if !live.contains(&stale) {
            view.index.remove(stale);
        }
    }
    let mut missing = vec![];
    for memory in memories {
        if view.index.contains(memory.id.0) {
            view.put(memory, None);
        } else {
            missing.push(memory);
        }
    }
    let embedded = missing.len();
    for chunk in missing.chunks(256) {
        let texts = chunk.iter().map(|m| m.content.clone()).collect();
        let vectors = embedding::embed(&context.embedder, texts).await?;
        for (memory, vector) in chunk.iter().zip(vectors) {
            view.put(memory.clone(), Some(index_doc(memory, vector)));
        }
    }
    handle.mark_ready();
    crate::metrics::bank_loaded(started.elapsed());
    tracing::info!(
        %bank,
        memories = view.len(),
        embedded,
        took_ms = started.elapsed().as_millis() as u64,
        "bank loaded"
    );
    if embedded > 0 {
        dump(context, &view).await;
    }
    Ok(view)
}

async fn dump(context: &BankContext, view: &Arc<BankView>) {
    let dir = context.index_dir(&view.name);
    let view = view.clone();
    let result = tokio::task::spawn_blocking(move || view.index.dump(&dir)).await;
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "index dump failed; the next start rebuilds"),
        Err(e) => tracing::warn!(error = %e, "index dump task failed"),
    }
}

pub fn index_doc(memory: &Memory, vector: Vec<f32>) -> IndexDoc {
    IndexDoc {
        id: memory.id.0,
        vector,
        terms: hindsight_text::Analyzer::shared().terms(&memory.content),
        entities: memory.entities.clone(),
        occurred_at_ms: memory.occurred_at.millis(),
    }
}
