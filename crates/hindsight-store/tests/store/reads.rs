//! A bank's memories read back from the store: whole, in id order, and a page at a time, however
//! they are interleaved with other banks' in the tree.

use std::sync::Arc;

use hindsight_core::{BankName, Command, MemoryId, WriteItem};

use crate::support::{self, memory, Recorder};

const BANK_A: &str = "acme/reader-a";
const BANK_B: &str = "acme/reader-b";

/// Enough memories that a bank is read on several threads.
const PER_BANK: u128 = 3000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_bank_reads_back_whole_in_id_order_and_by_page() {
    let dir = tempfile::tempdir().unwrap();
    let store = support::open(dir.path(), Arc::new(Recorder::default())).await;
    store.propose(support::create_bank(BANK_A)).await.unwrap();
    store.propose(support::create_bank(BANK_B)).await.unwrap();

    // Ids alternate between the banks, so neither bank's records are contiguous.
    let ids: Vec<u128> = (1..=2 * PER_BANK).collect();
    for batch in ids.chunks(200) {
        let items = batch
            .iter()
            .map(|&id| {
                let bank = if id % 2 == 0 { BANK_A } else { BANK_B };
                WriteItem::Create {
                    memory: Box::new(memory(id, bank, &format!("memory {id} of {bank}"))),
                }
            })
            .collect();
        store.propose(Command::Write { items }).await.unwrap();
    }

    let reader = store.reader();
    for (name, parity) in [(BANK_A, 0), (BANK_B, 1)] {
        let bank: BankName = name.parse().unwrap();
        let expected: Vec<MemoryId> = ids
            .iter()
            .filter(|&&id| id % 2 == parity)
            .map(|&id| MemoryId(id))
            .collect();

        let whole = reader.bank_memories(&bank).unwrap();
        let got: Vec<MemoryId> = whole.iter().map(|m| m.id).collect();
        assert_eq!(got, expected, "{name}: every memory once, in id order");
        for m in &whole {
            assert_eq!(m.bank, bank);
            assert_eq!(m.content, format!("memory {} of {name}", m.id.0));
        }

        let mut paged = vec![];
        let mut after = None;
        loop {
            let page = reader.bank_memories_after(&bank, after, 2500).unwrap();
            let Some(last) = page.last() else { break };
            after = Some(last.id);
            paged.extend(page.into_iter().map(|m| m.id));
        }
        assert_eq!(
            paged, expected,
            "{name}: pages cover the bank once, in order"
        );

        let tail = reader
            .bank_memories_after(&bank, Some(expected[99]), usize::MAX)
            .unwrap();
        assert_eq!(tail.len(), expected.len() - 100);
        assert_eq!(tail[0].id, expected[100], "strictly after the given id");
    }
}
