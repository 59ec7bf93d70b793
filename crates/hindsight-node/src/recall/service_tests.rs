//! The recall service against a small bank runtime (`bank::testing`), with a host that stands in
//! for the node: what an agent's recall returns and leaves behind, without servers or a cluster.

use hindsight_core::recall::RecallRequest;
use hindsight_core::retrieval::FeedbackOutcome;
use hindsight_core::write::WriteRequest;
use hindsight_core::{BankName, Memory, MemoryId, Provenance, SourceKind};
use hindsight_guard::RecordSigner;

use super::learning;
use super::recalling::Recalling;
use super::search::recall;
use super::RecallHost;
use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::write::testing::TestWriter;
use crate::write::writer::write_batch;
use crate::write::writing::Writing;

struct Host {
    writer: TestWriter,
    recalling: Recalling,
}

impl Host {
    async fn start() -> Host {
        let writer = TestWriter::start(NodeConfig::default()).await;
        Host {
            recalling: Recalling::new(writer.runtime.retrieval_log.clone()),
            writer,
        }
    }

    async fn write(&self, contents: &[&str]) -> Vec<MemoryId> {
        let requests = contents
            .iter()
            .map(|c| WriteRequest::new(bank(), *c, Provenance::from_source(SourceKind::User)))
            .collect();
        write_batch(&self.writer, requests)
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.id)
            .collect()
    }
}

impl RecallHost for Host {
    fn banks(&self) -> &Banks {
        &self.writer.runtime.banks
    }

    fn config(&self) -> &NodeConfig {
        &self.writer.config
    }

    fn recalling(&self) -> &Recalling {
        &self.recalling
    }

    fn writing(&self) -> &Writing {
        &self.writer.writing
    }

    async fn get(&self, id: MemoryId) -> Result<Memory, NodeError> {
        self.writer
            .stored(id)
            .ok_or_else(|| NodeError::NotFound(format!("memory {id} not found")))
    }

    async fn hint_review(&self, _bank: &BankName) {}
}

fn bank() -> BankName {
    "crew/notes".parse().unwrap()
}

fn ask(query: &str) -> RecallRequest {
    RecallRequest::new(vec![bank()], query, 5)
}

#[tokio::test]
async fn the_memory_that_answers_the_query_comes_first() {
    let host = Host::start().await;
    let ids = host
        .write(&[
            "the dentist appointment is on Thursday at nine",
            "the garden hose is in the shed",
            "the team retro happens every other Friday",
        ])
        .await;
    let answer = recall(
        &host,
        "tester",
        ask("when is the dentist appointment"),
        None,
    )
    .await
    .unwrap();
    assert_eq!(answer.hits.first().map(|h| h.memory.id), Some(ids[0]));
}

#[tokio::test]
async fn a_recall_counts_the_access_of_what_it_returned() {
    let host = Host::start().await;
    let ids = host.write(&["the wifi password is on the fridge"]).await;
    let answer = recall(&host, "tester", ask("wifi password"), None)
        .await
        .unwrap();
    assert!(answer.hits.iter().any(|h| h.memory.id == ids[0]));
    host.recalling
        .flush_access(&host.writer.runtime.banks)
        .await;
    let stored = RecallHost::get(&host, ids[0]).await.unwrap();
    assert_eq!(stored.access.count, 1);
}

#[tokio::test]
async fn a_record_that_fails_its_signature_check_is_withheld() {
    let mut host = Host::start().await;
    let ids = host.write(&["the van's tyre pressure is 2.4 bar"]).await;
    // The same key id with another secret: every stored signature now fails its check.
    host.writer.writing = Writing::new(
        &host.writer.config,
        Some(RecordSigner::new("k1", "some other key that is just as long").unwrap()),
    )
    .unwrap();
    let answer = recall(&host, "tester", ask("tyre pressure of the van"), None)
        .await
        .unwrap();
    assert!(
        answer.hits.iter().all(|h| h.memory.id != ids[0]),
        "{:?}",
        answer.hits
    );
}

#[tokio::test]
async fn feedback_is_taken_on_what_the_recall_returned_and_refused_otherwise() {
    let host = Host::start().await;
    let ids = host
        .write(&[
            "the office closes early on Christmas Eve",
            "the coffee machine descales itself on Mondays",
        ])
        .await;
    let answer = recall(
        &host,
        "tester",
        ask("when does the office close early"),
        None,
    )
    .await
    .unwrap();
    let recall_id = answer.recall_id.expect("the recall is logged");
    let returned = answer.hits[0].memory.id;
    learning::feedback(
        &host,
        "tester",
        recall_id,
        returned,
        FeedbackOutcome::Helpful,
    )
    .await
    .unwrap();
    // A memory the recall did not return cannot be said to have helped it.
    let not_returned = ids
        .iter()
        .copied()
        .find(|id| answer.hits.iter().all(|h| h.memory.id != *id))
        .unwrap_or(MemoryId(u128::MAX));
    let refused = learning::feedback(
        &host,
        "tester",
        recall_id,
        not_returned,
        FeedbackOutcome::Helpful,
    )
    .await;
    assert!(refused.is_err(), "{refused:?}");
}

#[tokio::test]
async fn a_recall_of_a_bank_that_does_not_exist_says_so() {
    let host = Host::start().await;
    let refused = recall(&host, "tester", ask("anything at all"), None).await;
    assert!(
        matches!(refused, Err(NodeError::NotFound(_))),
        "{refused:?}"
    );
}
