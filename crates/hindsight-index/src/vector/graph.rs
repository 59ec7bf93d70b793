//! The wrapper around hnsw_rs's graph: building it, inserting into it and estimating its memory.

use hnsw_rs::hnsw::Hnsw;

use super::VectorConfig;
use crate::distance::UnitCosine;
use crate::flat::FlatGraph;

/// Batches at least this large are inserted with hnsw_rs's rayon-parallel insert.
const PARALLEL_MIN: usize = 32;

/// Layers of the graph; hnsw_rs only dumps graphs with its maximum of 16.
const MAX_LAYER: usize = 16;

pub(super) struct Graph {
    pub(super) hnsw: Hnsw<'static, f32, UnitCosine>,
}

/// What hnsw_rs allocates per point besides its copy of the vector: the point (behind an `Arc`),
/// its lock around one list header per possible layer, and its entry in the layer table.
const GRAPH_BYTES_PER_POINT: usize =
    16 + std::mem::size_of::<hnsw_rs::hnsw::Point<'static, f32>>() + 48 + MAX_LAYER * 24 + 8;
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
        (points * (GRAPH_BYTES_PER_POINT + dim * 4) + links * GRAPH_BYTES_PER_LINK) as u64
    }

    pub(super) fn new(cfg: &VectorConfig, capacity: usize) -> Self {
        let m = cfg.max_nb_connection.clamp(4, 64);
        Graph {
            hnsw: Hnsw::new(
                m,
                capacity.max(1024),
                MAX_LAYER,
                cfg.ef_construction.max(m),
                UnitCosine,
            ),
        }
    }

    pub(super) fn insert_many(&self, items: &[(&[f32], usize)]) {
        if items.len() >= PARALLEL_MIN {
            self.hnsw.parallel_insert_slice(&items.to_vec());
        } else {
            for &item in items {
                self.hnsw.insert_slice(item);
            }
        }
    }
}
