//! The review service against a small bank runtime (`bank::testing`), with a host that stands in
//! for the node: what a review cycle does to a bank, without servers, a cluster or a model.

use std::future::Future;

use hindsight_core::write::{WriteOutcome, WriteRequest};
use hindsight_core::{BankName, Memory, MemoryId, Provenance, SourceKind, Status, Timestamp};

use super::cycle::review;
use super::reviewing::Reviewing;
use super::ReviewHost;
use crate::bank::Banks;
use crate::config::NodeConfig;
use crate::error::NodeError;
use crate::write::testing::TestWriter;
use crate::write::writer::write_batch;
use crate::write::writing::Writing;

struct Host {
    writer: TestWriter,
    reviewing: Reviewing,
}

impl Host {
    async fn start() -> Host {
        let config = NodeConfig::default();
        Host {
            reviewing: Reviewing::new(&config).unwrap(),
            writer: TestWriter::start(config).await,
        }
    }

    fn stored(&self, id: MemoryId) -> Memory {
        self.writer.stored(id).expect("the record is stored")
    }
}

impl ReviewHost for Host {
    fn banks(&self) -> &Banks {
        &self.writer.runtime.banks
    }

    fn config(&self) -> &NodeConfig {
        &self.writer.config
    }

    fn reviewing(&self) -> &Reviewing {
        &self.reviewing
    }

    fn writing(&self) -> &Writing {
        &self.writer.writing
    }

    fn write_batch(
        &self,
        requests: Vec<WriteRequest>,
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, NodeError>> + Send {
        write_batch(&self.writer, requests)
    }
}

fn bank() -> BankName {
    "crew/notes".parse().unwrap()
}

fn from_user(content: &str) -> WriteRequest {
    WriteRequest::new(bank(), content, Provenance::from_source(SourceKind::User))
}

#[tokio::test]
async fn a_memory_past_its_time_to_live_expires_and_the_others_stay() {
    let host = Host::start().await;
    let mut short_lived = from_user("the parcel locker code is 4471 for today");
    short_lived.ttl_secs = Some(60);
    let lasting = from_user("the landlord prefers email to phone calls");
    let ids: Vec<MemoryId> = write_batch(&host.writer, vec![short_lived, lasting])
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.id)
        .collect();
    let an_hour_later = Timestamp(Timestamp::now().0 + 3_600_000);
    let report = review(&host, bank(), Some(an_hour_later)).await.unwrap();
    assert_eq!(report.expired, vec![ids[0]]);
    assert!(matches!(host.stored(ids[0]).status, Status::Expired));
    assert!(matches!(host.stored(ids[1]).status, Status::Active));
}

#[tokio::test]
async fn a_cycle_looks_at_what_changed_since_the_last_one() {
    let host = Host::start().await;
    write_batch(
        &host.writer,
        vec![
            from_user("the recycling goes out on Tuesday nights"),
            from_user("the plumber's name is Ana"),
        ],
    )
    .await
    .unwrap();
    let first = review(&host, bank(), None).await.unwrap();
    assert_eq!(first.cycle.changed, 2, "{first:?}");
    let idle = review(&host, bank(), None).await.unwrap();
    assert_eq!(idle.considered, 2);
    assert_eq!(
        (idle.cycle.changed, idle.cycle.pairs_considered),
        (0, 0),
        "nothing changed, so nothing is compared again: {idle:?}"
    );
}

#[tokio::test]
async fn a_review_of_a_bank_that_does_not_exist_says_so() {
    let host = Host::start().await;
    let refused = review(&host, bank(), None).await;
    assert!(
        matches!(refused, Err(NodeError::NotFound(_))),
        "{refused:?}"
    );
}
