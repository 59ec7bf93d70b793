//! The node as each service sees it: the services name what they take from the node in a trait of
//! their own, so that they depend on the bank runtime below them and never on the node above.

use std::future::Future;

use hindsight_core::write::{WriteOutcome, WriteRequest};
use hindsight_core::{BankName, Memory, MemoryId};

use super::Node;
use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::recall::recalling::Recalling;
use crate::recall::RecallHost;
use crate::review::reviewing::Reviewing;
use crate::review::ReviewHost;
use crate::write::writing::Writing;
use crate::write::WriteHost;

impl WriteHost for Node {
    fn banks(&self) -> &Banks {
        Node::banks(self)
    }

    fn config(&self) -> &NodeConfig {
        Node::config(self)
    }

    fn writing(&self) -> &Writing {
        &self.inner.writing
    }

    fn hint_review_soon(&self, bank: BankName) {
        let node = self.clone();
        tokio::spawn(async move { node.hint_review(&bank).await });
    }
}

impl RecallHost for Node {
    fn banks(&self) -> &Banks {
        Node::banks(self)
    }

    fn config(&self) -> &NodeConfig {
        Node::config(self)
    }

    fn recalling(&self) -> &Recalling {
        &self.inner.recalling
    }

    fn writing(&self) -> &Writing {
        &self.inner.writing
    }

    fn get(&self, id: MemoryId) -> impl Future<Output = Result<Memory, NodeError>> + Send {
        Node::get(self, id)
    }

    fn hint_review(&self, bank: &BankName) -> impl Future<Output = ()> + Send {
        Node::hint_review(self, bank)
    }
}

impl ReviewHost for Node {
    fn banks(&self) -> &Banks {
        Node::banks(self)
    }

    fn config(&self) -> &NodeConfig {
        Node::config(self)
    }

    fn reviewing(&self) -> &Reviewing {
        &self.inner.reviewing
    }

    fn writing(&self) -> &Writing {
        &self.inner.writing
    }

    fn write_batch(
        &self,
        requests: Vec<WriteRequest>,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, NodeError>> + Send {
        Node::write_batch(self, requests)
    }
}
