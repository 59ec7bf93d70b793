//! Every sled tree name and key the store writes. Trees are named per Raft group so that many groups
//! can later share one database; keys inside a group's state tree carry no group id.
//!
//! Integers in keys are big-endian so that sled's byte order is numeric order.

use hindsight_core::{BankName, MemoryId};

/// The log tree of a group: entries under `e<index>`. Databases written before the bookkeeping
/// had a tree of its own also hold it here, under `m/…`, until the log is next opened.
pub(crate) fn log_tree(group: u64) -> String {
    format!("g{group:016x}/log")
}

/// The log's bookkeeping of a group (vote, committed index, purge mark), apart from the entries:
/// sled rewrites a changed leaf whole, and the bookkeeping keys, rewritten on every commit, would
/// share the last leaf with the newest entries, the largest values in the log.
pub(crate) fn log_meta_tree(group: u64) -> String {
    format!("g{group:016x}/log-meta")
}

pub(crate) const LOG_META_PREFIX: &[u8] = b"m/";

pub(crate) const LOG_ENTRY_PREFIX: u8 = b'e';
pub(crate) const LOG_VOTE: &[u8] = b"m/vote";
pub(crate) const LOG_COMMITTED: &[u8] = b"m/committed";
pub(crate) const LOG_LAST_PURGED: &[u8] = b"m/last_purged";

pub(crate) fn log_entry(index: u64) -> [u8; 9] {
    let mut key = [LOG_ENTRY_PREFIX; 9];
    key[1..].copy_from_slice(&index.to_be_bytes());
    key
}

/// Key of one piece of a log entry: the entry's key followed by the piece's number. Pieces sort
/// after their entry's key and before the next entry's, and an entry an older layout stored whole
/// under its key alone reads back among them.
pub(crate) fn log_entry_piece(index: u64, piece: u32) -> [u8; 13] {
    let mut key = [0; 13];
    key[..9].copy_from_slice(&log_entry(index));
    key[9..].copy_from_slice(&piece.to_be_bytes());
    key
}

/// The last key any entry at or before `index` can have.
pub(crate) fn log_entry_end(index: u64) -> [u8; 13] {
    log_entry_piece(index, u32::MAX)
}

/// The index of the entry a log key (whole or piece) belongs to.
pub(crate) fn log_index_of(key: &[u8]) -> Option<u64> {
    match key {
        [LOG_ENTRY_PREFIX, index @ ..] if index.len() == 8 || index.len() == 12 => {
            Some(u64::from_be_bytes(index[..8].try_into().ok()?))
        }
        _ => None,
    }
}

/// Key in the state database's default tree naming the live state generation of a group. Installing
/// a snapshot loads a new generation beside the live one and then flips this single key.
pub(crate) fn active_generation(group: u64) -> Vec<u8> {
    format!("g{group:016x}/active").into_bytes()
}

pub(crate) fn state_tree_prefix(group: u64) -> String {
    format!("g{group:016x}/state/")
}

pub(crate) fn state_tree(group: u64, generation: u64) -> String {
    format!("{}{generation:016x}", state_tree_prefix(group))
}

pub(crate) fn state_tree_generation(group: u64, name: &[u8]) -> Option<u64> {
    let rest = name.strip_prefix(state_tree_prefix(group).as_bytes())?;
    u64::from_str_radix(std::str::from_utf8(rest).ok()?, 16).ok()
}

/// Where an older layout kept the current snapshot of a group (`meta` and `data`), inside the
/// state database; it moves to a file of its own on open (`snapshot_store`).
pub(crate) fn snapshot_tree(group: u64) -> String {
    format!("g{group:016x}/snapshot")
}

pub(crate) const SNAPSHOT_META: &[u8] = b"meta";
pub(crate) const SNAPSHOT_DATA: &[u8] = b"data";

// State tree keys.
pub(crate) const MEMORY_PREFIX: &[u8] = b"m/";
pub(crate) const BANK_INDEX_PREFIX: &[u8] = b"x/";
pub(crate) const HISTORY_PREFIX: &[u8] = b"h/";
pub(crate) const BANK_PREFIX: &[u8] = b"b/";
pub(crate) const BANK_COUNT_PREFIX: &[u8] = b"n/";
pub(crate) const REVIEW_PREFIX: &[u8] = b"r/";
pub(crate) const CONFLICT_PREFIX: &[u8] = b"c/";
pub(crate) const API_KEY_PREFIX: &[u8] = b"k/";
pub(crate) const LAST_APPLIED: &[u8] = b"meta/last_applied";
pub(crate) const MEMBERSHIP: &[u8] = b"meta/membership";

fn join(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

pub(crate) fn memory(id: MemoryId) -> Vec<u8> {
    join(&[MEMORY_PREFIX, &id.to_bytes()])
}

/// All index keys of a bank. The NUL ends the name so that bank `a` does not match bank `a.b`;
/// bank names cannot contain NUL.
pub(crate) fn bank_index_prefix(bank: &BankName) -> Vec<u8> {
    join(&[BANK_INDEX_PREFIX, bank.as_str().as_bytes(), &[0]])
}

pub(crate) fn bank_index(bank: &BankName, id: MemoryId) -> Vec<u8> {
    join(&[&bank_index_prefix(bank), &id.to_bytes()])
}

/// The memory id at the end of a bank index key.
pub(crate) fn bank_index_id(key: &[u8]) -> Option<MemoryId> {
    let tail = key.len().checked_sub(16).map(|start| &key[start..])?;
    Some(MemoryId::from_bytes(tail.try_into().ok()?))
}

pub(crate) fn history_prefix(id: MemoryId) -> Vec<u8> {
    join(&[HISTORY_PREFIX, &id.to_bytes()])
}

pub(crate) fn history(id: MemoryId, version: u64) -> Vec<u8> {
    join(&[&history_prefix(id), &version.to_be_bytes()])
}

pub(crate) fn bank(name: &BankName) -> Vec<u8> {
    join(&[BANK_PREFIX, name.as_str().as_bytes()])
}

pub(crate) fn bank_count(name: &BankName) -> Vec<u8> {
    join(&[BANK_COUNT_PREFIX, name.as_str().as_bytes()])
}

pub(crate) fn review_state(name: &BankName) -> Vec<u8> {
    join(&[REVIEW_PREFIX, name.as_str().as_bytes()])
}

/// The placement table, in the metadata group's state.
pub(crate) const PLACEMENT: &[u8] = b"p";

pub(crate) fn api_key(id: &str) -> Vec<u8> {
    join(&[API_KEY_PREFIX, id.as_bytes()])
}

/// All conflict keys of a bank; the NUL keeps bank `a` apart from bank `a.b`.
pub(crate) fn conflict_prefix(bank: &BankName) -> Vec<u8> {
    join(&[CONFLICT_PREFIX, bank.as_str().as_bytes(), &[0]])
}

pub(crate) fn conflict(bank: &BankName, id: u64) -> Vec<u8> {
    join(&[&conflict_prefix(bank), &id.to_be_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keys_sort_numerically_and_apart_from_bookkeeping() {
        assert!(log_entry(255) < log_entry(256));
        assert!(log_entry(u64::MAX).as_slice() < LOG_VOTE);
        assert!(log_entry(0)[0] == LOG_ENTRY_PREFIX);
        assert!(log_entry_end(u64::MAX).as_slice() < LOG_VOTE);
    }

    #[test]
    fn pieces_sort_between_their_entry_and_the_next() {
        assert!(log_entry(7).as_slice() < log_entry_piece(7, 0).as_slice());
        assert!(log_entry_piece(7, 255) < log_entry_piece(7, 256));
        assert!(log_entry_end(7).as_slice() < log_entry(8).as_slice());
        assert_eq!(log_index_of(&log_entry(7)), Some(7));
        assert_eq!(log_index_of(&log_entry_piece(7, 3)), Some(7));
        assert_eq!(log_index_of(LOG_VOTE), None);
        assert_eq!(log_index_of(&log_entry(7)[..5]), None);
    }

    #[test]
    fn history_keys_sort_by_version() {
        let id = MemoryId(7);
        assert!(history(id, 9) < history(id, 10));
        assert!(history(id, u64::MAX).starts_with(&history_prefix(id)));
    }

    #[test]
    fn a_bank_prefix_does_not_match_a_longer_bank() {
        let a: BankName = "acme".parse().unwrap();
        let ab: BankName = "acme.b".parse().unwrap();
        assert!(!bank_index(&ab, MemoryId(1)).starts_with(&bank_index_prefix(&a)));
        assert_eq!(
            bank_index_id(&bank_index(&a, MemoryId(42))),
            Some(MemoryId(42))
        );
    }

    #[test]
    fn state_tree_names_carry_group_and_generation() {
        let name = state_tree(3, 17);
        assert_eq!(state_tree_generation(3, name.as_bytes()), Some(17));
        assert_eq!(state_tree_generation(4, name.as_bytes()), None);
        assert_eq!(state_tree_generation(3, snapshot_tree(3).as_bytes()), None);
    }
}
