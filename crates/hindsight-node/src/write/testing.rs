//! A stand-in for the node on the write path, for the services' unit tests: the small bank
//! runtime (`bank::testing`), a configuration and the write service's state. The recall and
//! review services' tests build their hosts on it, since what they read is written through it.

use hindsight_core::{BankName, Memory, MemoryId};
use hindsight_guard::RecordSigner;

use super::writing::Writing;
use super::WriteHost;
use crate::bank::testing::SmallRuntime;
use crate::bank::Banks;
use crate::config::NodeConfig;

pub(crate) struct TestWriter {
    pub runtime: SmallRuntime,
    pub config: NodeConfig,
    pub writing: Writing,
}

impl TestWriter {
    /// A writer whose records are signed, as a node's are by default.
    pub(crate) async fn start(config: NodeConfig) -> TestWriter {
        let signer = RecordSigner::new("k1", "a signing key long enough for the tests").unwrap();
        TestWriter {
            runtime: SmallRuntime::start().await,
            writing: Writing::new(&config, Some(signer)).unwrap(),
            config,
        }
    }

    /// The record as the store holds it.
    pub(crate) fn stored(&self, id: MemoryId) -> Option<Memory> {
        self.runtime.banks.metadata_reader().memory(id).unwrap()
    }
}

impl WriteHost for TestWriter {
    fn banks(&self) -> &Banks {
        &self.runtime.banks
    }

    fn config(&self) -> &NodeConfig {
        &self.config
    }

    fn writing(&self) -> &Writing {
        &self.writing
    }

    fn hint_review_soon(&self, _bank: BankName) {}
}
