//! The wrapper around hnsw_rs's graph: building it, inserting into it and estimating its memory.

use hnsw_rs::hnsw::{Hnsw, Neighbour};

use super::VectorConfig;
use crate::distance::{graph_code, CodeCosine};
use crate::flat::FlatGraph;

/// Batches at least this large are inserted with hnsw_rs's rayon-parallel insert.
const PARALLEL_MIN: usize = 32;

/// Layers of the graph; hnsw_rs only dumps graphs with its maximum of 16.
const MAX_LAYER: usize = 16;

/// hnsw_rs's graph over the vectors' eight-bit codes ([`CodeCosine`]): it is built and kept for
/// linking, while searches go through its flat copy and score with the float vectors.
pub(super) struct Graph {
    pub(super) hnsw: Hnsw<'static, i8, CodeCosine>,
}

/// What hnsw_rs allocates per point besides its copy of the vector's code: the point (behind an
/// `Arc`), its lock around one list header per possible layer, and its entry in the layer table.
const GRAPH_BYTES_PER_POINT: usize =
    16 + std::mem::size_of::<hnsw_rs::hnsw::Point<'static, i8>>() + 48 + MAX_LAYER * 24 + 8;
/// Per link: the `Arc` it points to (the neighbour and its distance) and its slot in a neighbour
/// list, twice over: a list grows by doubling until it passes its cap (`2 M` links on layer 0,
/// `M` above) and drops its worst link, so a full list's buffer has about twice the slots it uses.
const GRAPH_BYTES_PER_LINK: usize = 32 + 2 * 8;

impl Graph {
    /// Heap bytes of hnsw_rs's graph, estimated from its points and, through the flat copy of its
    /// links, from how many links a point has on average.
    pub(super) fn heap_bytes(&self, flat: Option<&FlatGraph>, dim: usize) -> u64 {
        let points = self.hnsw.get_nb_point();
        let links = match flat {
            Some(flat) if flat.covered() > 0 => flat.links() * points / flat.covered(),
            _ => points * self.hnsw.get_max_nb_connection() as usize,
        };
        (points * (GRAPH_BYTES_PER_POINT + dim) + links * GRAPH_BYTES_PER_LINK) as u64
    }

    pub(super) fn new(cfg: &VectorConfig, capacity: usize) -> Self {
        let m = cfg.max_nb_connection.clamp(4, 64);
        Graph {
            hnsw: Hnsw::new(
                m,
                capacity.max(1024),
                MAX_LAYER,
                cfg.ef_construction.max(m),
                CodeCosine,
            ),
        }
    }

    pub(super) fn insert_many(&self, items: &[(&[f32], usize)]) {
        let codes: Vec<(Vec<i8>, usize)> = items
            .iter()
            .map(|&(v, slot)| (graph_code(v), slot))
            .collect();
        let items: Vec<(&[i8], usize)> = codes
            .iter()
            .map(|(c, slot)| (c.as_slice(), *slot))
            .collect();
        if items.len() >= PARALLEL_MIN {
            self.hnsw.parallel_insert_slice(&items);
        } else {
            for &item in &items {
                self.hnsw.insert_slice(item);
            }
        }
    }

    /// The `ef` nearest nodes to `q` by their codes' distance.
    pub(super) fn search(&self, q: &[f32], ef: usize) -> Vec<Neighbour> {
        self.hnsw.search(&graph_code(q), ef, ef)
    }
}
