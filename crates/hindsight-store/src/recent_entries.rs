use std::collections::VecDeque;

use crate::type_config::TypeConfig;

type Entry = openraft::Entry<TypeConfig>;

/// The newest log entries as appended, so that the reads which follow an append (the leader's
/// replication to each follower, and every node's apply) copy them instead of decoding them
/// from sled again: decoding a batch of writes, with its vectors, costs several times a copy.
///
/// Holds a contiguous run of indexes ending at the last appended entry, at most `max_entries`
/// of them and about `max_bytes` of their encoded size. An append that does not continue the
/// run (after a truncation, or a gap) starts it over; truncations and purges drop what they
/// remove from the log. A read is answered only when the run covers all of it, so the log in
/// sled stays the one record and this only ever holds copies of what it holds.
#[derive(Debug)]
pub(crate) struct RecentEntries {
    entries: VecDeque<(Entry, usize)>,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl RecentEntries {
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Self {
        RecentEntries {
            entries: VecDeque::new(),
            bytes: 0,
            max_entries,
            max_bytes,
        }
    }

    fn first_index(&self) -> Option<u64> {
        self.entries.front().map(|(e, _)| e.log_id.index)
    }

    fn last_index(&self) -> Option<u64> {
        self.entries.back().map(|(e, _)| e.log_id.index)
    }

    /// Keeps `entry`, whose encoding took `size` bytes, as the newest entry of the log.
    pub(crate) fn appended(&mut self, entry: Entry, size: usize) {
        let index = entry.log_id.index;
        match self.last_index() {
            Some(last) if index <= last => self.truncated(index),
            Some(last) if index != last + 1 => self.clear(),
            _ => {}
        }
        self.bytes += size;
        self.entries.push_back((entry, size));
        while self.entries.len() > self.max_entries
            || (self.bytes > self.max_bytes && self.entries.len() > 1)
        {
            self.pop_front();
        }
    }

    /// The log lost every entry at or after `index`.
    pub(crate) fn truncated(&mut self, index: u64) {
        while self.last_index().is_some_and(|last| last >= index) {
            if let Some((_, size)) = self.entries.pop_back() {
                self.bytes -= size;
            }
        }
    }

    /// The log lost every entry at or before `index`.
    pub(crate) fn purged(&mut self, index: u64) {
        while self.first_index().is_some_and(|first| first <= index) {
            self.pop_front();
        }
    }

    /// Copies of the entries `start..end` (`end` exclusive), if every one of them is held.
    pub(crate) fn get(&self, start: u64, end: u64) -> Option<Vec<Entry>> {
        let first = self.first_index()?;
        let last = self.last_index()?;
        if start < first || end > last + 1 {
            return None;
        }
        if start >= end {
            return Some(Vec::new());
        }
        let from = (start - first) as usize;
        let to = (end - first) as usize;
        Some(
            self.entries
                .range(from..to)
                .map(|(e, _)| e.clone())
                .collect(),
        )
    }

    fn pop_front(&mut self) {
        if let Some((_, size)) = self.entries.pop_front() {
            self.bytes -= size;
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload, LogId};

    use super::*;

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Blank,
        }
    }

    /// Entries of term 1 at `indexes`, each of 10 bytes, appended in order.
    fn holding(mut recent: RecentEntries, indexes: std::ops::RangeInclusive<u64>) -> RecentEntries {
        for i in indexes {
            recent.appended(entry(1, i), 10);
        }
        recent
    }

    fn ids(entries: Option<Vec<Entry>>) -> Option<Vec<(u64, u64)>> {
        entries.map(|es| {
            es.iter()
                .map(|e| (e.log_id.leader_id.term, e.log_id.index))
                .collect()
        })
    }

    #[test]
    fn answers_only_ranges_it_holds_whole() {
        assert_eq!(ids(RecentEntries::new(100, 1 << 20).get(0, 1)), None);
        let recent = holding(RecentEntries::new(100, 1 << 20), 5..=9);
        assert_eq!(ids(recent.get(6, 8)), Some(vec![(1, 6), (1, 7)]));
        assert_eq!(ids(recent.get(5, 10)).map(|v| v.len()), Some(5));
        assert_eq!(ids(recent.get(4, 8)), None, "4 is not held");
        assert_eq!(ids(recent.get(8, 11)), None, "10 is not held");
        assert_eq!(ids(recent.get(7, 7)), Some(vec![]));
    }

    #[test]
    fn keeps_the_newest_within_its_bounds() {
        let recent = holding(RecentEntries::new(4, 1 << 20), 1..=10);
        assert_eq!(ids(recent.get(7, 11)).map(|v| v.len()), Some(4));
        assert_eq!(ids(recent.get(6, 11)), None);

        let mut recent = holding(RecentEntries::new(100, 35), 1..=10);
        assert_eq!(ids(recent.get(8, 11)).map(|v| v.len()), Some(3));
        assert_eq!(ids(recent.get(7, 11)), None);

        // An entry larger than the byte bound is still kept, alone.
        recent.appended(entry(1, 11), 100);
        assert_eq!(ids(recent.get(11, 12)), Some(vec![(1, 11)]));
        assert_eq!(ids(recent.get(10, 12)), None);
    }

    #[test]
    fn a_rewritten_suffix_replaces_the_old_one() {
        let mut recent = holding(RecentEntries::new(100, 1 << 20), 1..=6);
        // A follower whose log conflicts with the new leader's from index 4 on.
        recent.truncated(4);
        assert_eq!(ids(recent.get(4, 5)), None);
        recent.appended(entry(2, 4), 10);
        recent.appended(entry(2, 5), 10);
        assert_eq!(ids(recent.get(3, 6)), Some(vec![(1, 3), (2, 4), (2, 5)]));
        // The same, when the new entries arrive without a truncation first.
        recent.appended(entry(3, 5), 10);
        assert_eq!(ids(recent.get(4, 6)), Some(vec![(2, 4), (3, 5)]));
        assert_eq!(ids(recent.get(6, 7)), None);
    }

    #[test]
    fn a_gap_or_a_purge_drops_what_no_longer_joins_the_log() {
        let mut recent = holding(RecentEntries::new(100, 1 << 20), 1..=6);
        recent.purged(3);
        assert_eq!(ids(recent.get(3, 5)), None);
        assert_eq!(ids(recent.get(4, 7)).map(|v| v.len()), Some(3));
        // A snapshot install moves the log past a gap.
        recent.appended(entry(1, 20), 10);
        assert_eq!(ids(recent.get(6, 7)), None);
        assert_eq!(ids(recent.get(20, 21)), Some(vec![(1, 20)]));
        recent.purged(25);
        assert_eq!(ids(recent.get(20, 21)), None);
    }
}
