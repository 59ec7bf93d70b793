use tokio::sync::watch;

/// Tells `shutdown` when openraft has dropped the stores it owns. openraft joins its core task but
/// not the state machine worker, which keeps the sled databases (and their file locks) open for a
/// moment after `Raft::shutdown` returns; reopening the directory in that window would fail.
pub(crate) struct ReleaseWatch {
    tx: watch::Sender<()>,
}

/// Held by a store (and its clones) until dropped.
#[derive(Clone)]
pub(crate) struct ReleaseToken {
    _rx: watch::Receiver<()>,
}

impl ReleaseWatch {
    pub(crate) fn new() -> Self {
        ReleaseWatch {
            tx: watch::channel(()).0,
        }
    }

    pub(crate) fn token(&self) -> ReleaseToken {
        ReleaseToken {
            _rx: self.tx.subscribe(),
        }
    }

    /// Resolves once every token is dropped.
    pub(crate) async fn released(&self) {
        self.tx.closed().await
    }
}
