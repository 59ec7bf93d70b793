//! Where `eval` and `bench` send their operations: a node embedded in this process, or a running
//! server over gRPC.

use std::path::Path;

use anyhow::{Context, Result};
use hindsight_core::{BankName, MemoryId, RecallRequest, Timestamp, WriteRequest};
use hindsight_node::{Node, NodeConfig};

pub enum Target {
    Embedded(Node),
    Remote(Box<hindsight_api::HindsightClient>, String),
}

impl Target {
    /// A fresh node in `data_dir`, configured from `config` and `HINDSIGHT_*` variables, with its
    /// background review off so that only the replayed reviews run.
    pub async fn embedded(config: Option<&Path>, data_dir: &Path) -> Result<Target> {
        let mut config = NodeConfig::load(config, std::env::vars())?;
        config.node.data_dir = data_dir.to_path_buf();
        config.review.interval_secs = 0;
        config.review.on_likely_conflict = false;
        config.index.dump_interval_secs = 0;
        let node = Node::start(config)
            .await
            .context("embedded node did not start")?;
        // With cluster.partitions set, the node places and opens its partitions within a few
        // seconds of starting; requests before that would find them closed.
        if let Some(partitions) = node.partitions() {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let opened = || {
                let hosted = partitions.hosted();
                hosted.len() == partitions.count() as usize
                    && hosted
                        .iter()
                        .all(|p| partitions.status(*p).is_some_and(|s| s.leader_id.is_some()))
            };
            while !opened() {
                if std::time::Instant::now() > deadline {
                    anyhow::bail!("the embedded node did not open its partitions within 60 s");
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
        Ok(Target::Embedded(node))
    }

    pub async fn remote(server: &str) -> Result<Target> {
        let client = hindsight_api::HindsightClient::connect(server)
            .await?
            .with_api_key(std::env::var("HINDSIGHT_API_KEY").ok().as_deref())?;
        Ok(Target::Remote(Box::new(client), server.to_string()))
    }

    pub fn describe(&self) -> String {
        match self {
            Target::Embedded(node) => {
                format!("an embedded node ({})", node.status().embedding_model)
            }
            Target::Remote(_, server) => format!("the server at {server}"),
        }
    }

    /// The memory each write landed in: its own, or the one it was merged into.
    pub async fn write_batch(&self, requests: Vec<WriteRequest>) -> Result<Vec<MemoryId>> {
        Ok(match self {
            Target::Embedded(node) => node
                .write_batch(requests)
                .await?
                .into_iter()
                .map(|o| o.id)
                .collect(),
            Target::Remote(client, _) => client
                .write_batch(requests)
                .await?
                .into_iter()
                .map(|o| o.id)
                .collect(),
        })
    }

    /// Each result as the ids it stands for: itself, merged duplicates, sources.
    /// The ids each hit stands for, best first, with the hit's relevance.
    pub async fn recall(&self, request: RecallRequest) -> Result<Vec<(Vec<MemoryId>, f32)>> {
        let response = match self {
            Target::Embedded(node) => node.recall(request).await?,
            Target::Remote(client, _) => client.recall(request).await?,
        };
        Ok(response
            .hits
            .iter()
            .map(|h| (h.memory.represented_ids(), h.explain.relevance))
            .collect())
    }

    pub async fn review(&self, bank: BankName, as_of: Timestamp) -> Result<()> {
        match self {
            Target::Embedded(node) => {
                node.review(bank, Some(as_of)).await?;
            }
            Target::Remote(client, _) => {
                client.review(bank, Some(as_of)).await?;
            }
        }
        Ok(())
    }

    pub async fn shutdown(&self) {
        if let Target::Embedded(node) = self {
            node.shutdown().await;
        }
    }
}
