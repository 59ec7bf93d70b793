//! The shared harness: the test node's configuration and helpers to name banks, write, recall.

use std::path::Path;

use hindsight_core::{BankName, Provenance, RecallRequest, SourceKind, Timestamp, WriteRequest};
use hindsight_node::{EmbeddingProvider, Node, NodeConfig};

#[path = "../support/http_request.rs"]
pub(crate) mod http_request;

pub(crate) fn config(dir: &Path) -> NodeConfig {
    let mut config = NodeConfig::default();
    config.node.data_dir = dir.to_path_buf();
    config.embedding.provider = EmbeddingProvider::Hashing;
    config.review.interval_secs = 0;
    config.review.on_likely_conflict = false;
    // These tests write many alike statements of the user's (templated, or several facts about
    // one thing) and count what comes back; shadowing has its own tests in `relevance`.
    config.recall.shadow_alike = false;
    config
}

pub(crate) fn bank(name: &str) -> BankName {
    name.parse().unwrap()
}

pub(crate) fn ts(s: &str) -> Timestamp {
    Timestamp::parse_rfc3339(s).unwrap()
}

pub(crate) fn write(bank_name: &str, content: &str) -> WriteRequest {
    WriteRequest::new(
        bank(bank_name),
        content,
        Provenance::from_source(SourceKind::User),
    )
}

pub(crate) async fn recall_ids(
    node: &Node,
    banks: &[&str],
    query: &str,
    as_of: Option<Timestamp>,
) -> Vec<String> {
    let mut request = RecallRequest::new(banks.iter().map(|b| bank(b)).collect(), query, 10);
    request.as_of = as_of;
    node.recall(request)
        .await
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.memory.content)
        .collect()
}
