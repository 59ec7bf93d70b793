//! Heap bytes held by a bank's indexes, by part, for the resident-memory figures an operator
//! sizes a node by.
//!
//! Counted from the collections' capacities, not from an allocator: what each part asked the
//! allocator for, without the allocator's own overhead per block (8 to 16 bytes with glibc).
//! hnsw_rs's graph is estimated from its layout (one block per point, per layer list and per
//! link), because its lists are private to it.

use std::collections::HashMap;
use std::mem::size_of;

/// Heap bytes of one bank's indexes, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexMemory {
    /// The float vectors, their slots and the id → slot map.
    pub vectors: u64,
    /// The eight-bit codes kept beside the vectors for exact scans.
    pub codes: u64,
    /// The flat copy of the graph's links that searches walk.
    pub links: u64,
    /// hnsw_rs's graph, needed to link new vectors: its own copy of each vector and its
    /// neighbour lists. Zero for a bank whose graph was loaded from a dump and not yet written to.
    pub graph: u64,
    /// The keyword (BM25) index: terms, postings and each memory's terms.
    pub keyword: u64,
    /// The entity index.
    pub entity: u64,
    /// The time index.
    pub time: u64,
}

impl IndexMemory {
    /// The parts with their names, in a fixed order (metric labels, reports).
    pub fn parts(&self) -> [(&'static str, u64); 7] {
        [
            ("vectors", self.vectors),
            ("codes", self.codes),
            ("links", self.links),
            ("graph", self.graph),
            ("keyword", self.keyword),
            ("entity", self.entity),
            ("time", self.time),
        ]
    }

    /// All parts together.
    pub fn total(&self) -> u64 {
        self.parts().iter().map(|(_, bytes)| bytes).sum()
    }
}

/// Bytes of a vector's buffer.
pub fn vec_bytes<T>(v: &Vec<T>) -> u64 {
    (v.capacity() * size_of::<T>()) as u64
}

/// Bytes of a vector of vectors: the outer buffer and every inner one.
pub fn nested_vec_bytes<T>(v: &Vec<Vec<T>>) -> u64 {
    vec_bytes(v) + v.iter().map(vec_bytes).sum::<u64>()
}

/// Bytes of a string's buffer.
pub fn string_bytes(s: &String) -> u64 {
    s.capacity() as u64
}

/// Bytes of an inverted list: names interned both as a map's keys and by id, one posting list
/// per name.
pub fn inverted_bytes<P>(
    ids: &HashMap<String, u32>,
    names: &Vec<String>,
    postings: &Vec<Vec<P>>,
) -> u64 {
    // Each name is held twice: as the map's key and in `names`.
    2 * names.iter().map(string_bytes).sum::<u64>()
        + hash_map_bytes(ids)
        + vec_bytes(names)
        + nested_vec_bytes(postings)
}

/// Bytes of a hash map's table: hashbrown keeps a power of two of buckets, at most 7/8 full, each
/// with one control byte, plus one group of control bytes. Keys' and values' own heap is not
/// included.
pub fn hash_map_bytes<K, V>(map: &HashMap<K, V>) -> u64 {
    let capacity = map.capacity();
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    (buckets * (size_of::<(K, V)>() + 1) + 16) as u64
}

/// Bytes of a B-tree set of `len` elements of `T`. Its leaves hold up to 11 elements after a
/// 16-byte header, and a tree filled in key order (as a load is, and as a bank's writes mostly
/// are) splits each full leaf into two of about 6; interior nodes add a few per cent.
pub fn btree_bytes<T>(len: usize) -> u64 {
    (len * (16 + 11 * size_of::<T>()) / 6) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_map_counts_its_buckets_and_control_bytes() {
        let empty: HashMap<u128, u32> = HashMap::new();
        assert_eq!(hash_map_bytes(&empty), 0);
        let mut map: HashMap<u128, u32> = HashMap::new();
        for i in 0..1000u128 {
            map.insert(i, i as u32);
        }
        // 1,000 entries need 1,024 buckets at most 7/8 full: 2,048 buckets of 32 + 1 bytes.
        assert_eq!(map.capacity(), 1792);
        assert_eq!(hash_map_bytes(&map), 2048 * 33 + 16);
    }
}
