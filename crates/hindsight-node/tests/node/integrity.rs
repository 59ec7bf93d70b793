//! Integrity: a tampered stored record is withheld, counted and reported.

use std::path::Path;

use hindsight_node::{Node, NodeError};

use crate::harness::{config, recall_ids, write};

/// Rewrites every stored value holding `from` to hold `to` (same length) instead, as a disk
/// error or someone with access to the data directory might.
fn tamper(state_dir: &Path, from: &[u8], to: &[u8]) -> usize {
    // sled lets go of its lock when its last background job drops the file, which can be a
    // moment after the node that used it stopped.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let db = loop {
        match sled::open(state_dir) {
            Err(e)
                if e.to_string().contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            opened => break opened.unwrap(),
        }
    };
    let mut changed = 0;
    for name in db.tree_names() {
        let tree = db.open_tree(&name).unwrap();
        for entry in tree.iter() {
            let (key, value) = entry.unwrap();
            if let Some(at) = value.windows(from.len()).position(|w| w == from) {
                let mut bytes = value.to_vec();
                bytes[at..at + to.len()].copy_from_slice(to);
                tree.insert(key, bytes).unwrap();
                changed += 1;
            }
        }
    }
    db.flush().unwrap();
    drop(db);
    // The seal a clean stop left describes the files as they were: with it the store would
    // take the change for a disk fault and recover the record from the log. Without it (a
    // crash, or someone who removed it too) the store opens what it finds, and the record's
    // signature is what catches the change.
    let _ = std::fs::remove_file(state_dir.join("hindsight.seal"));
    changed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_record_is_withheld_counted_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let tampered = node
        .write(write("a/vault", "The vault code is 1234."))
        .await
        .unwrap()
        .id;
    let intact = node
        .write(write("a/vault", "The vault is in the basement."))
        .await
        .unwrap()
        .id;
    assert!(node
        .trace(tampered)
        .await
        .unwrap()
        .integrity
        .starts_with("verified"));
    node.shutdown().await;
    drop(node);

    let changed = tamper(
        &dir.path().join("raft/state"),
        b"vault code is 1234",
        b"vault code is 9999",
    );
    assert!(changed >= 1, "the record's bytes were found and changed");

    let node = Node::start(config(dir.path())).await.unwrap();
    let refused = node.get(tampered).await.unwrap_err();
    assert!(
        matches!(refused, NodeError::Corrupted(ref m) if m.contains("integrity")),
        "{refused:?}"
    );
    let found = recall_ids(&node, &["a/vault"], "vault code", None).await;
    assert_eq!(
        found,
        vec!["The vault is in the basement."],
        "withheld from recall"
    );
    let trace = node.trace(tampered).await.unwrap();
    assert!(trace.integrity.starts_with("FAILED"), "{}", trace.integrity);
    assert!(node
        .trace(intact)
        .await
        .unwrap()
        .integrity
        .starts_with("verified"));
    // Removing a tampered record is what an operator does with it; it must not be refused
    // for failing the very check that flagged it.
    let forgotten = node
        .forget(tampered, true, "tampered on disk".into())
        .await
        .unwrap();
    assert_eq!(forgotten, vec![tampered]);
    assert!(matches!(
        node.get(tampered).await,
        Err(NodeError::NotFound(_))
    ));
    node.shutdown().await;
}
