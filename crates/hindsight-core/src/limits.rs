use serde::{Deserialize, Serialize};

/// Size limits on requests. Anything over a limit is refused with `INVALID_ARGUMENT`, never truncated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Bytes of UTF-8 in one memory's content.
    pub max_content_bytes: usize,
    /// Memories in one batch write.
    pub max_batch: usize,
    pub max_tags: usize,
    pub max_tag_bytes: usize,
    pub max_metadata_entries: usize,
    pub max_metadata_key_bytes: usize,
    pub max_metadata_value_bytes: usize,
    /// Bytes of each provenance field (tool, agent_id, session_id, …).
    pub max_provenance_bytes: usize,
    pub max_query_bytes: usize,
    pub max_top_k: u32,
    pub max_banks_per_recall: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_content_bytes: 16 * 1024,
            max_batch: 1000,
            max_tags: 32,
            max_tag_bytes: 64,
            max_metadata_entries: 32,
            max_metadata_key_bytes: 64,
            max_metadata_value_bytes: 1024,
            max_provenance_bytes: 256,
            max_query_bytes: 4096,
            max_top_k: 200,
            max_banks_per_recall: 32,
        }
    }
}
