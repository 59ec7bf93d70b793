//! Byte trie over the vocabulary for common-prefix lookups during Viterbi.

const NO_VALUE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    first_edge: u32,
    edge_count: u32,
    value: u32,
}

/// Immutable byte trie; each node's outgoing edges are stored contiguously and
/// sorted by label so a step is one binary search over at most 256 bytes.
#[derive(Debug, Clone)]
pub(crate) struct PieceTrie {
    nodes: Vec<Node>,
    labels: Vec<u8>,
    targets: Vec<u32>,
    /// Direct table for the root, where the fan-out is largest.
    root_edges: Box<[u32; 256]>,
}

impl PieceTrie {
    /// Builds the trie from `(key, value)` pairs; duplicate keys keep the
    /// smallest value.
    pub fn build(mut entries: Vec<(&[u8], u32)>) -> Self {
        entries.sort_unstable();
        entries.dedup_by(|later, earlier| later.0 == earlier.0);
        let mut trie = PieceTrie {
            nodes: vec![Node {
                first_edge: 0,
                edge_count: 0,
                value: NO_VALUE,
            }],
            labels: Vec::new(),
            targets: Vec::new(),
            root_edges: Box::new([0; 256]),
        };
        trie.fill(0, &entries, 0);
        let root = trie.nodes[0];
        for e in root.first_edge..root.first_edge + root.edge_count {
            trie.root_edges[trie.labels[e as usize] as usize] = trie.targets[e as usize];
        }
        trie
    }

    /// Adds the subtree for `entries`, which all share their first `depth`
    /// bytes and are sorted.
    fn fill(&mut self, node: usize, mut entries: &[(&[u8], u32)], depth: usize) {
        if let Some((key, value)) = entries.first() {
            if key.len() == depth {
                self.nodes[node].value = *value;
                entries = &entries[1..];
            }
        }
        let first_edge = self.labels.len();
        let mut i = 0;
        while i < entries.len() {
            let label = entries[i].0[depth];
            self.labels.push(label);
            self.targets.push(0);
            while i < entries.len() && entries[i].0[depth] == label {
                i += 1;
            }
        }
        let edge_count = self.labels.len() - first_edge;
        self.nodes[node].first_edge = first_edge as u32;
        self.nodes[node].edge_count = edge_count as u32;

        let mut start = 0;
        for edge in first_edge..first_edge + edge_count {
            let label = self.labels[edge];
            let mut end = start;
            while end < entries.len() && entries[end].0[depth] == label {
                end += 1;
            }
            let child = self.nodes.len();
            self.nodes.push(Node {
                first_edge: 0,
                edge_count: 0,
                value: NO_VALUE,
            });
            self.targets[edge] = child as u32;
            self.fill(child, &entries[start..end], depth + 1);
            start = end;
        }
    }

    /// The root node, where every lookup starts.
    #[inline]
    pub fn root(&self) -> u32 {
        0
    }

    /// Follows the edge labelled `byte`, if any.
    #[inline]
    pub fn step(&self, node: u32, byte: u8) -> Option<u32> {
        if node == 0 {
            let target = self.root_edges[byte as usize];
            return (target != 0).then_some(target);
        }
        let n = self.nodes[node as usize];
        let start = n.first_edge as usize;
        let labels = &self.labels[start..start + n.edge_count as usize];
        labels
            .binary_search(&byte)
            .ok()
            .map(|i| self.targets[start + i])
    }

    /// The value stored for the key ending at `node`.
    #[inline]
    pub fn value(&self, node: u32) -> Option<u32> {
        let v = self.nodes[node as usize].value;
        (v != NO_VALUE).then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(trie: &PieceTrie, key: &[u8]) -> Option<u32> {
        let mut node = trie.root();
        for &b in key {
            node = trie.step(node, b)?;
        }
        trie.value(node)
    }

    #[test]
    fn finds_keys_and_prefixes() {
        let keys: Vec<(&[u8], u32)> = vec![
            (b"ab", 1),
            (b"a", 0),
            (b"abc", 2),
            (b"b", 3),
            ("你好".as_bytes(), 4),
            (b"ab", 9),
        ];
        let trie = PieceTrie::build(keys);
        assert_eq!(lookup(&trie, b"a"), Some(0));
        assert_eq!(lookup(&trie, b"ab"), Some(1));
        assert_eq!(lookup(&trie, b"abc"), Some(2));
        assert_eq!(lookup(&trie, b"b"), Some(3));
        assert_eq!(lookup(&trie, "你好".as_bytes()), Some(4));
        assert_eq!(lookup(&trie, "你".as_bytes()), None);
        assert_eq!(lookup(&trie, b"abcd"), None);
        assert_eq!(lookup(&trie, b"c"), None);
    }
}
