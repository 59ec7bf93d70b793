//! Dumps and loads: `vectors.bin` (the slots and their vectors), the flat copy of the graph's
//! links and hnsw_rs's graph files, and what the bank manifest records of them.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;

use super::arena::Arena;
use super::graph::Graph;
use super::state::{PendingGraph, Slot, State};
use super::{VectorConfig, VectorIndex};
use crate::distance::CodeCosine;
use crate::flat::FlatGraph;
use crate::persist;
use crate::IndexError;

const VECTORS_MAGIC: &[u8; 4] = b"HIVX";
const VECTORS_VERSION: u32 = 1;
const VECTORS_FILE: &str = "vectors.bin";
/// The flat copy of the graph's links (`flat.rs`), saved beside hnsw_rs's own files so that a
/// loaded index searches its graph before hnsw_rs has read it back.
pub(super) const LINKS_FILE: &str = "links.bin";
const GRAPH_BASENAME: &str = "graph";

/// A graph saved with the vectors, as the bank manifest records it.
pub(crate) struct SavedGraph<'a> {
    pub(crate) basename: &'a str,
    pub(crate) points: usize,
    /// Slots the graph had linked; `None` for dumps from before the linker, which linked all.
    pub(crate) linked: Option<usize>,
}

/// What a dump wrote, recorded in the bank manifest.
#[derive(Clone, Debug)]
pub(crate) struct VectorDump {
    pub(crate) graph_basename: Option<String>,
    /// Nodes in the saved graph; not every slot has one (a slot replaced
    /// within the same batch is never linked).
    pub(crate) graph_points: usize,
    /// Slots the saved graph had linked; the linker goes on from there after a load.
    pub(crate) graph_linked: usize,
    /// Slots when the dump was taken: the saved graph stands for the index only while it has no
    /// more.
    pub(crate) slots: usize,
}

impl VectorDump {
    /// The saved graph, as a load reads it.
    #[cfg(test)]
    pub(crate) fn saved(&self) -> Option<SavedGraph<'_>> {
        self.graph_basename.as_deref().map(|basename| SavedGraph {
            basename,
            points: self.graph_points,
            linked: Some(self.graph_linked),
        })
    }
}

impl VectorIndex {
    /// Blocks until a graph being read back from the dump this index was
    /// loaded from is attached, or has failed to load. Saved before that, the
    /// graph would be missing from the dump and the next load would build it
    /// from scratch.
    pub(crate) fn wait_for_dumped_graph(&self) {
        while self.shared.state.read().pending.is_some() {
            // Starts the reading if no write has yet.
            self.maybe_rebuild();
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Writes `vectors.bin` and, when a graph exists, hnsw_rs's graph files
    /// into `dir`, without fsyncing them: the caller syncs the directory's
    /// files once writers may go on. Holds the read lock, so writers wait
    /// while searches continue.
    pub(crate) fn dump_into(&self, dir: &Path) -> Result<VectorDump, IndexError> {
        self.wait_for_dumped_graph();
        // No point is half linked while the graph is saved: the linker finishes its batch first.
        let _linker_paused = self.shared.link_lock.lock();
        let st = self.shared.state.read();
        write_vectors(&st, &dir.join(VECTORS_FILE))?;
        let (graph_basename, graph_points) = match &st.graph {
            Some(g) if g.hnsw.get_nb_point() > 0 => {
                if let Some(flat) = &st.flat {
                    persist::write_file_unsynced(&dir.join(LINKS_FILE), &flat.to_bytes())?;
                }
                (Some(dump_graph(g, dir)?), g.hnsw.get_nb_point())
            }
            _ => (None, 0),
        };
        Ok(VectorDump {
            graph_linked: if graph_basename.is_some() {
                st.linked
            } else {
                0
            },
            graph_basename,
            graph_points,
            slots: st.slots.len(),
        })
    }

    /// Lets go of hnsw_rs's graph when `dump`, written into `vector_dir`, holds it whole and the
    /// index has not changed since: searches go on through the flat copy of its links (and scan
    /// the slots linked after that copy, as they did), and the graph is read back from the dump at
    /// the next write or removal, as after a load. hnsw_rs
    /// keeps a copy of each point and its links, about 2.3 KiB per vector, which a bank that is
    /// only read does not need. Returns whether it let go.
    pub(crate) fn rest_graph(&self, vector_dir: &Path, dump: &VectorDump) -> bool {
        let Some(basename) = &dump.graph_basename else {
            return false;
        };
        // The status lock keeps the background from starting meanwhile; while it runs, the graph
        // is in use, and the next call tries again.
        let status = self.shared.status.lock();
        if status.scheduled {
            return false;
        }
        let mut st = self.shared.state.write();
        let whole = st.pending.is_none()
            && st.slots.len() == dump.slots
            && st.linked == st.slots.len()
            && dump.graph_linked == st.linked
            && st
                .graph
                .as_ref()
                .is_some_and(|g| g.hnsw.get_nb_point() == dump.graph_points);
        if !whole {
            return false;
        }
        st.pending = Some(Arc::new(PendingGraph {
            dir: vector_dir.to_path_buf(),
            basename: basename.clone(),
            points: dump.graph_points,
            linked: st.linked,
        }));
        st.graph = None;
        true
    }

    /// Whether every vector is linked into a graph that `dump` does not hold as it is now.
    pub(crate) fn graph_newer_than(&self, dump: Option<&VectorDump>) -> bool {
        let st = self.shared.state.read();
        let whole = st.graph.is_some() && st.linked == st.slots.len();
        whole
            && dump.is_none_or(|d| {
                d.graph_basename.is_none()
                    || d.slots != st.slots.len()
                    || d.graph_linked != st.linked
            })
    }

    /// Reads a dump written by [`Self::dump_into`]. hnsw_rs's graph is read
    /// back after the load returns (at the first write when the dump has the
    /// flat copy of its links, at once otherwise), in the background when the
    /// configuration says so: until then searches use the saved links, or
    /// scan exactly when the dump has none, and the linker goes on once it is
    /// back. hnsw_rs's reading of a 100,000-point graph takes seconds, which
    /// would otherwise keep the bank from answering. A graph that is missing,
    /// unreadable or inconsistent with the vectors is rebuilt from them.
    pub(crate) fn load_from(
        dir: &Path,
        cfg: VectorConfig,
        graph: Option<SavedGraph<'_>>,
    ) -> Result<VectorIndex, IndexError> {
        let index = Self::open_dump(dir, cfg, graph)?;
        let searchable_without_graph = {
            let st = index.shared.state.read();
            st.pending
                .as_ref()
                .is_some_and(|p| p.linked == st.slots.len())
                && st.flat.is_some()
        };
        // With its saved links the graph is searched as it is, and hnsw_rs's copy, needed only
        // to link new vectors, is read at the first write: a bank that is only read never
        // spends the time or the memory on it. Otherwise (also when the dump was taken before
        // the linker had reached every slot) the graph is read back, or built when
        // none was dumped or it does not load, in the background when rebuilds are: the bank
        // answers at once instead of keeping its node from serving for the seconds a read or
        // the minutes a build takes.
        if !searchable_without_graph {
            index.maybe_rebuild();
        }
        Ok(index)
    }

    /// The index a dump describes, with its graph still to be read back.
    pub(super) fn open_dump(
        dir: &Path,
        cfg: VectorConfig,
        graph: Option<SavedGraph<'_>>,
    ) -> Result<VectorIndex, IndexError> {
        let mut state = read_vectors(&dir.join(VECTORS_FILE), cfg.dim)?;
        if let Some(saved) = graph {
            let linked = saved.linked.unwrap_or(state.slots.len());
            if saved.points <= state.slots.len() && linked <= state.slots.len() {
                state.flat = read_links(&dir.join(LINKS_FILE), linked).map(Arc::new);
                state.pending = Some(Arc::new(PendingGraph {
                    dir: dir.to_path_buf(),
                    basename: saved.basename.to_owned(),
                    points: saved.points,
                    linked,
                }));
            }
        }
        if state.graph.is_none() && cfg.exact_threshold == 0 && state.slots.is_empty() {
            state.graph = Some(Arc::new(Graph::new(&cfg, 0)));
        }
        Ok(VectorIndex::from_state(cfg, state))
    }
}

/// The saved flat copy of the links, if it is there and describes a graph
/// over at most `slots` slots; otherwise searches wait for hnsw_rs's graph.
fn read_links(path: &Path, slots: usize) -> Option<FlatGraph> {
    let bytes = std::fs::read(path).ok()?;
    FlatGraph::from_bytes(&bytes, slots)
}

fn dump_graph(g: &Graph, dir: &Path) -> Result<String, IndexError> {
    let res = catch_unwind(AssertUnwindSafe(|| g.hnsw.file_dump(dir, GRAPH_BASENAME)));
    let basename = match res {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            return Err(IndexError::io(
                dir,
                std::io::Error::other(format!("hnsw dump failed: {e}")),
            ))
        }
        Err(p) => {
            return Err(IndexError::io(
                dir,
                std::io::Error::other(format!(
                    "hnsw dump panicked: {}",
                    persist::panic_message(p.as_ref())
                )),
            ))
        }
    };
    Ok(basename)
}

pub(super) fn load_graph(dir: &Path, basename: &str, points: usize, dim: usize) -> Option<Graph> {
    // `load_hnsw` ties the graph's lifetime to its loader (for mmapped data,
    // which is not used here). The loader is a few hundred bytes, so it is
    // leaked on purpose once per load to get a `'static` graph without unsafe code.
    let loader: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, basename)));
    // hnsw_rs asserts on malformed files; a damaged graph is rebuilt instead.
    let loaded = catch_unwind(AssertUnwindSafe(move || {
        // Moving the reference in (not reborrowing it) lets the graph keep `'static`.
        let owned = loader;
        owned.load_hnsw::<i8, CodeCosine>()
    }));
    let mut hnsw = match loaded {
        Ok(Ok(h)) => h,
        _ => return None,
    };
    let dim_ok = hnsw.get_point_indexation().get_data_dimension() == dim;
    if hnsw.get_nb_point() != points || !dim_ok {
        return None;
    }
    // Reloaded graphs turn candidate extension on; keep inserts as when built.
    hnsw.set_extend_candidates(false);
    Some(Graph { hnsw })
}

fn write_vectors(st: &State, path: &Path) -> Result<(), IndexError> {
    let io_err = |e| IndexError::io(path, e);
    let file = File::create(path).map_err(io_err)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let dim = u32::try_from(st.arena.dim).expect("dimension fits u32");
    let mut header = Vec::with_capacity(20);
    header.extend_from_slice(VECTORS_MAGIC);
    header.extend_from_slice(&VECTORS_VERSION.to_le_bytes());
    header.extend_from_slice(&dim.to_le_bytes());
    header.extend_from_slice(&(st.slots.len() as u64).to_le_bytes());
    w.write_all(&header).map_err(io_err)?;
    for s in &st.slots {
        w.write_all(&s.id.to_le_bytes()).map_err(io_err)?;
        w.write_all(&[u8::from(s.live)]).map_err(io_err)?;
    }
    // Written while the bank's writes wait (see `BankIndex::dump`): one buffer for every slot.
    let mut buf = Vec::with_capacity(st.arena.dim * 4);
    let mut widened = vec![0f32; st.arena.dim];
    for i in 0..st.slots.len() {
        buf.clear();
        crate::half::decode_into(st.arena.halves(i), &mut widened);
        for x in &widened {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        w.write_all(&buf).map_err(io_err)?;
    }
    w.into_inner().map_err(|e| io_err(e.into_error()))?;
    Ok(())
}

fn read_vectors(path: &Path, dim: usize) -> Result<State, IndexError> {
    let io_err = |e| IndexError::io(path, e);
    let file = File::open(path).map_err(io_err)?;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut header = [0u8; 20];
    r.read_exact(&mut header).map_err(io_err)?;
    if &header[0..4] != VECTORS_MAGIC {
        return Err(IndexError::Corrupt(format!(
            "{}: bad magic",
            path.display()
        )));
    }
    let version = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    if version != VECTORS_VERSION {
        return Err(IndexError::UnsupportedFormat {
            found: version,
            expected: VECTORS_VERSION,
        });
    }
    let file_dim = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes")) as usize;
    if file_dim != dim {
        return Err(IndexError::Corrupt(format!(
            "{}: dimension {file_dim}, manifest says {dim}",
            path.display()
        )));
    }
    let n = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes"));
    let expected_len = 20 + n.saturating_mul(17 + 4 * dim as u64);
    let actual_len = r.get_ref().metadata().map_err(io_err)?.len();
    if actual_len != expected_len {
        return Err(IndexError::Corrupt(format!(
            "{}: {actual_len} bytes, expected {expected_len}",
            path.display()
        )));
    }
    let n = n as usize;
    let mut slots = Vec::with_capacity(n);
    let mut rec = [0u8; 17];
    for _ in 0..n {
        r.read_exact(&mut rec).map_err(io_err)?;
        let id = u128::from_le_bytes(rec[0..16].try_into().expect("16 bytes"));
        slots.push(Slot {
            id,
            live: rec[16] != 0,
        });
    }
    let mut arena = Arena::new(dim);
    let mut buf = vec![0u8; dim * 4];
    let mut v = vec![0f32; dim];
    for _ in 0..n {
        r.read_exact(&mut buf).map_err(io_err)?;
        for (x, b) in v.iter_mut().zip(buf.chunks_exact(4)) {
            *x = f32::from_le_bytes(b.try_into().expect("4 bytes"));
        }
        arena.push(&v);
    }
    let mut by_id = HashMap::with_capacity(n);
    for (i, s) in slots.iter().enumerate() {
        if s.live && by_id.insert(s.id, i as u32).is_some() {
            return Err(IndexError::Corrupt(format!(
                "{}: id {:#x} live twice",
                path.display(),
                s.id
            )));
        }
    }
    Ok(State {
        slots,
        arena,
        by_id,
        graph: None,
        linked: 0,
        flat: None,
        pending: None,
    })
}
