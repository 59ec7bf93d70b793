//! All derived indexes of one bank, with durable dumps.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use crate::bm25::Bm25Index;
use crate::entity::{EntityConfig, EntityIndex};
use crate::heap::IndexMemory;
use crate::persist;
use crate::time::TimeIndex;
use crate::vector::{SavedGraph, VectorConfig, VectorDump, VectorIndex};
use crate::IndexError;

/// Version of the dump layout written by [`BankIndex::dump`].
pub const DUMP_FORMAT: u32 = 1;

const CURRENT_FILE: &str = "CURRENT";
const MANIFEST_FILE: &str = "manifest.bin";
const VECTOR_DIR: &str = "vector";
const BM25_FILE: &str = "bm25.bin";
const ENTITY_FILE: &str = "entity.bin";
const TIME_FILE: &str = "time.bin";
const GEN_PREFIX: &str = "gen-";

/// Settings of every sub-index of a bank.
#[derive(Clone, Debug)]
pub struct BankIndexConfig {
    pub vector: VectorConfig,
    pub entity: EntityConfig,
}

impl BankIndexConfig {
    /// Defaults for embeddings of dimension `dim`.
    pub fn new(dim: usize) -> Self {
        BankIndexConfig {
            vector: VectorConfig::new(dim),
            entity: EntityConfig::default(),
        }
    }
}

/// Identity and position of a bank's indexes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// Embedding model the vectors came from.
    pub model_id: String,
    /// Vector dimension.
    pub dim: usize,
    /// Indexed memories.
    pub doc_count: u64,
    /// When this index was first created empty (unix ms); kept across dumps.
    pub built_at_ms: i64,
    /// Opaque to this crate: the store log index the content corresponds
    /// to, so a loader replays only newer changes.
    pub applied_index: u64,
}

/// One memory as the indexes see it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexDoc {
    pub id: u128,
    /// Embedding of length `dim`; empty when the memory has none, which
    /// keeps it out of the vector arm only.
    pub vector: Vec<f32>,
    /// Analysed terms for BM25.
    pub terms: Vec<String>,
    /// Normalised entity names.
    pub entities: Vec<String>,
    pub occurred_at_ms: i64,
}

/// The vector, BM25, entity and time indexes of one bank.
///
/// Every method takes `&self`, so an owner can share an `Arc<BankIndex>` with
/// concurrent searchers while it alone writes. The sub-indexes are updated
/// one after another, so a search racing a write may see it in some arms
/// only. Membership (`contains`, `len`) follows the time index, which every
/// document enters.
pub struct BankIndex {
    model_id: String,
    built_at_ms: i64,
    applied_index: AtomicU64,
    vectors: VectorIndex,
    bm25: Bm25Index,
    entities: EntityIndex,
    time: TimeIndex,
    /// Writes hold it shared; a dump holds it exclusively so that all four
    /// sub-indexes are saved at the same point.
    write_gate: RwLock<()>,
    /// Dumps share the directory's scratch space and cleanup.
    dump_lock: Mutex<()>,
    /// The vectors' part of the last dump and the directory it is in, from which a graph at rest
    /// is read back.
    last_dump: Mutex<Option<(PathBuf, VectorDump)>>,
}

#[derive(Serialize, Deserialize)]
struct Manifest {
    format: u32,
    meta: IndexMeta,
    graph_basename: Option<String>,
    graph_points: usize,
    /// Slots the saved graph had linked (absent in dumps from before the background linker,
    /// whose graphs linked every slot).
    #[serde(default)]
    graph_linked: Option<usize>,
    /// hnsw_rs writes its graph in native byte order.
    graph_little_endian: bool,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl BankIndex {
    /// Empty indexes for vectors of `model_id`.
    pub fn new(model_id: impl Into<String>, cfg: BankIndexConfig) -> Self {
        BankIndex {
            model_id: model_id.into(),
            built_at_ms: now_ms(),
            applied_index: AtomicU64::new(0),
            vectors: VectorIndex::new(cfg.vector),
            bm25: Bm25Index::new(),
            entities: EntityIndex::with_config(cfg.entity),
            time: TimeIndex::new(),
            write_gate: RwLock::new(()),
            dump_lock: Mutex::new(()),
            last_dump: Mutex::new(None),
        }
    }

    /// Identity and counters, as they would be dumped now.
    pub fn meta(&self) -> IndexMeta {
        IndexMeta {
            model_id: self.model_id.clone(),
            dim: self.vectors.dim(),
            doc_count: self.len() as u64,
            built_at_ms: self.built_at_ms,
            applied_index: self.applied_index(),
        }
    }

    /// Embedding model id.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.vectors.dim()
    }

    /// The store log index last recorded with [`Self::set_applied_index`].
    pub fn applied_index(&self) -> u64 {
        self.applied_index.load(Ordering::Acquire)
    }

    /// Records which store log index the content reflects; saved by dumps.
    pub fn set_applied_index(&self, index: u64) {
        self.applied_index.store(index, Ordering::Release);
    }

    /// Adds or replaces a memory in every index. Fails without changing
    /// anything if the vector is invalid.
    pub fn upsert(&self, doc: IndexDoc) -> Result<(), IndexError> {
        let _gate = self.write_gate.read();
        if doc.vector.is_empty() {
            self.vectors.remove(doc.id);
        } else {
            self.vectors.insert(doc.id, &doc.vector)?;
        }
        self.bm25.upsert(doc.id, &doc.terms);
        self.entities.upsert(doc.id, &doc.entities);
        self.time.upsert(doc.id, doc.occurred_at_ms);
        Ok(())
    }

    /// Adds or replaces many memories (later entries win for repeated ids).
    /// Fails without changing anything if any vector is invalid.
    pub fn upsert_batch(&self, docs: Vec<IndexDoc>) -> Result<(), IndexError> {
        // Only the last entry of an id decides its final state.
        let mut last: HashMap<u128, usize> = HashMap::with_capacity(docs.len());
        for (i, d) in docs.iter().enumerate() {
            last.insert(d.id, i);
        }
        let docs: Vec<IndexDoc> = docs
            .into_iter()
            .enumerate()
            .filter(|(i, d)| last[&d.id] == *i)
            .map(|(_, d)| d)
            .collect();
        let _gate = self.write_gate.read();
        let mut with_vector = Vec::with_capacity(docs.len());
        let mut without_vector = Vec::new();
        let mut rest = Vec::with_capacity(docs.len());
        for doc in docs {
            if doc.vector.is_empty() {
                without_vector.push(doc.id);
            } else {
                with_vector.push((doc.id, doc.vector));
            }
            rest.push((doc.id, doc.terms, doc.entities, doc.occurred_at_ms));
        }
        self.vectors.insert_batch(&with_vector)?;
        for id in without_vector {
            self.vectors.remove(id);
        }
        for (id, terms, entities, at) in rest {
            self.bm25.upsert(id, &terms);
            self.entities.upsert(id, &entities);
            self.time.upsert(id, at);
        }
        Ok(())
    }

    /// Removes a memory from every index; returns whether it was present.
    pub fn remove(&self, id: u128) -> bool {
        let _gate = self.write_gate.read();
        let present = self.time.remove(id);
        self.vectors.remove(id);
        self.bm25.remove(id);
        self.entities.remove(id);
        present
    }

    /// Whether the memory is indexed.
    pub fn contains(&self, id: u128) -> bool {
        self.time.contains(id)
    }

    /// Number of indexed memories.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    /// Whether no memory is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes of the four sub-indexes, by part.
    pub fn memory(&self) -> IndexMemory {
        IndexMemory {
            keyword: self.bm25.heap_bytes(),
            entity: self.entities.heap_bytes(),
            time: self.time.heap_bytes(),
            ..self.vectors.memory()
        }
    }

    /// The semantic arm.
    pub fn vectors(&self) -> &VectorIndex {
        &self.vectors
    }

    /// The keyword arm.
    pub fn bm25(&self) -> &Bm25Index {
        &self.bm25
    }

    /// The entity-graph arm.
    pub fn entities(&self) -> &EntityIndex {
        &self.entities
    }

    /// The temporal arm.
    pub fn time(&self) -> &TimeIndex {
        &self.time
    }

    /// Saves every index under `dir`, atomically: the dump is written to a
    /// fresh generation directory, fsynced, and only then published by
    /// replacing the `CURRENT` pointer file; older generations are deleted.
    /// Writes wait while the indexes are copied out to the page cache, not
    /// while the disk syncs them; searches do not wait.
    pub fn dump(&self, dir: &Path) -> Result<(), IndexError> {
        let _one_at_a_time = self.dump_lock.lock();
        fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        let generation = generation_name();
        let tmp = dir.join(format!("{generation}.tmp"));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(|e| IndexError::io(&tmp, e))?;
        }
        let vector_dir = tmp.join(VECTOR_DIR);
        fs::create_dir_all(&vector_dir).map_err(|e| IndexError::io(&vector_dir, e))?;
        let written = self.write_parts(&tmp, &vector_dir);
        let (manifest, vector) = match written {
            Ok(parts) => parts,
            Err(e) => {
                let _ = fs::remove_dir_all(&tmp);
                return Err(e);
            }
        };
        persist::write_file_unsynced(&tmp.join(MANIFEST_FILE), &persist::encode(&manifest)?)?;
        // The parts went to the page cache while writes to the index waited; the disk is waited
        // for here, with writes going on again: a large bank's vectors alone are hundreds of
        // megabytes to sync.
        persist::sync_files_in(&vector_dir)?;
        persist::sync_files_in(&tmp)?;
        let final_dir = dir.join(&generation);
        fs::rename(&tmp, &final_dir).map_err(|e| IndexError::io(&final_dir, e))?;
        persist::sync_dir(dir)?;
        let pointer_tmp = dir.join(format!("{CURRENT_FILE}.tmp"));
        persist::write_file(&pointer_tmp, generation.as_bytes())?;
        let pointer = dir.join(CURRENT_FILE);
        fs::rename(&pointer_tmp, &pointer).map_err(|e| IndexError::io(&pointer, e))?;
        persist::sync_dir(dir)?;
        remove_stale_generations(dir, &generation);
        *self.last_dump.lock() = Some((final_dir.join(VECTOR_DIR), vector));
        Ok(())
    }

    /// Lets go of hnsw_rs's graph when the last dump holds it whole and nothing changed since;
    /// see `VectorIndex::rest_graph`. For a bank that is read and no longer written.
    pub fn rest_graph(&self) -> bool {
        let last = self.last_dump.lock();
        match last.as_ref() {
            Some((dir, dump)) => self.vectors.rest_graph(dir, dump),
            None => false,
        }
    }

    /// Whether every vector is linked into a graph that the last dump does not hold as it is:
    /// a dump now would save the whole graph.
    pub fn graph_newer_than_dump(&self) -> bool {
        let last = self.last_dump.lock();
        self.vectors
            .graph_newer_than(last.as_ref().map(|(_, dump)| dump))
    }

    fn write_parts(
        &self,
        tmp: &Path,
        vector_dir: &Path,
    ) -> Result<(Manifest, VectorDump), IndexError> {
        // Waited for before the gate, so that writes go on while a graph is read back.
        self.vectors.wait_for_dumped_graph();
        let _gate = self.write_gate.write();
        let vector = self.vectors.dump_into(vector_dir)?;
        persist::write_file_unsynced(&tmp.join(BM25_FILE), &self.bm25.to_bytes()?)?;
        persist::write_file_unsynced(&tmp.join(ENTITY_FILE), &self.entities.to_bytes()?)?;
        persist::write_file_unsynced(&tmp.join(TIME_FILE), &self.time.to_bytes()?)?;
        let manifest = Manifest {
            format: DUMP_FORMAT,
            meta: self.meta(),
            graph_basename: vector.graph_basename.clone(),
            graph_points: vector.graph_points,
            graph_linked: Some(vector.graph_linked),
            graph_little_endian: cfg!(target_endian = "little"),
        };
        Ok((manifest, vector))
    }

    /// Loads the dump in `dir` with default settings; see [`Self::load_with_config`].
    pub fn load(
        dir: &Path,
        expected_model_id: &str,
        expected_dim: usize,
    ) -> Result<Self, IndexError> {
        Self::load_with_config(dir, expected_model_id, BankIndexConfig::new(expected_dim))
    }

    /// Loads the dump in `dir`. Returns [`IndexError::ModelMismatch`] (before
    /// reading any index data) if it was built for another model or
    /// dimension, in which case the caller should re-embed and rebuild.
    /// The HNSW graph is reloaded as saved; if it is missing or damaged it is
    /// rebuilt from the saved vectors.
    pub fn load_with_config(
        dir: &Path,
        expected_model_id: &str,
        cfg: BankIndexConfig,
    ) -> Result<Self, IndexError> {
        let (gen_dir, manifest) = read_manifest(dir)?;
        let meta = &manifest.meta;
        if meta.model_id != expected_model_id || meta.dim != cfg.vector.dim {
            return Err(IndexError::ModelMismatch {
                expected_model: expected_model_id.to_owned(),
                expected_dim: cfg.vector.dim,
                found_model: meta.model_id.clone(),
                found_dim: meta.dim,
            });
        }
        let graph = manifest
            .graph_basename
            .as_deref()
            .filter(|_| manifest.graph_little_endian == cfg!(target_endian = "little"))
            .map(|basename| SavedGraph {
                basename,
                points: manifest.graph_points,
                linked: manifest.graph_linked,
            });
        let vectors = VectorIndex::load_from(&gen_dir.join(VECTOR_DIR), cfg.vector, graph)?;
        let bm25 = Bm25Index::from_bytes(&persist::read_file(&gen_dir.join(BM25_FILE))?)?;
        let entities =
            EntityIndex::from_bytes(&persist::read_file(&gen_dir.join(ENTITY_FILE))?, cfg.entity)?;
        let time = TimeIndex::from_bytes(&persist::read_file(&gen_dir.join(TIME_FILE))?)?;
        if time.len() as u64 != meta.doc_count {
            return Err(IndexError::Corrupt(format!(
                "manifest counts {} memories, time index holds {}",
                meta.doc_count,
                time.len()
            )));
        }
        Ok(BankIndex {
            model_id: meta.model_id.clone(),
            built_at_ms: meta.built_at_ms,
            applied_index: AtomicU64::new(meta.applied_index),
            vectors,
            bm25,
            entities,
            time,
            write_gate: RwLock::new(()),
            dump_lock: Mutex::new(()),
            last_dump: Mutex::new(None),
        })
    }

    /// Reads only the metadata of the dump in `dir`.
    pub fn read_meta(dir: &Path) -> Result<IndexMeta, IndexError> {
        read_manifest(dir).map(|(_, m)| m.meta)
    }
}

impl std::fmt::Debug for BankIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BankIndex")
            .field("meta", &self.meta())
            .field("vectors", &self.vectors)
            .finish()
    }
}

fn read_manifest(dir: &Path) -> Result<(PathBuf, Manifest), IndexError> {
    let pointer = dir.join(CURRENT_FILE);
    let generation = match fs::read_to_string(&pointer) {
        Ok(s) => s.trim().to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(IndexError::NotFound(dir.to_path_buf()))
        }
        Err(e) => return Err(IndexError::io(pointer, e)),
    };
    let valid = generation.starts_with(GEN_PREFIX)
        && generation
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !valid {
        return Err(IndexError::Corrupt(format!(
            "{} names {generation:?}",
            pointer.display()
        )));
    }
    let gen_dir = dir.join(&generation);
    let manifest: Manifest = persist::decode(
        &persist::read_file(&gen_dir.join(MANIFEST_FILE))?,
        "manifest",
    )?;
    if manifest.format != DUMP_FORMAT {
        return Err(IndexError::UnsupportedFormat {
            found: manifest.format,
            expected: DUMP_FORMAT,
        });
    }
    Ok((gen_dir, manifest))
}

/// Unique, sortable directory name for one dump.
fn generation_name() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    format!(
        "{GEN_PREFIX}{:016x}-{:08x}-{:08x}",
        now_ms(),
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Best effort: a leftover directory only costs disk space.
fn remove_stale_generations(dir: &Path, keep: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(GEN_PREFIX) && name != keep {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}
