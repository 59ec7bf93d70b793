//! The user's statements that announce a change, kept per bank so that recall finds the changes
//! of a statement without searching the bank, and remembers what each change replaces.
//!
//! A change ("these days it's black coffee") is worded like its new value, so a question worded
//! like the old value rarely finds it by any arm. Recall looks, for a statement it found, at the
//! changes made after it; there are few of them in any bank, where the user's newer statements
//! may be most of it. What a change replaces (the user's earlier statement closest to it) takes
//! a vector search restricted to older statements, which on a large bank is the costly kind; it
//! is worked out once per change and kept until a write could move the answer.

use std::collections::{BTreeSet, HashMap};

use hindsight_core::{Kind, Memory, MemoryId, SourceKind, Timestamp};

/// Weakest change cue ("actually" 0.7, "switched to" 1.0) that makes a statement announce a
/// change to shadowing; the review's rules judge uses the same bar.
const CHANGE_CUE_WEIGHT: f32 = 0.5;

/// A semantic memory of the user's own: what shadowing lets a later one replace.
pub(crate) fn is_user_statement(memory: &Memory) -> bool {
    memory.provenance.source == SourceKind::User && memory.kind == Kind::Semantic
}

/// A statement of the user's that says something of theirs changed, by a cue that says so on its
/// own (a bare "now" does not).
pub(crate) fn announces_change(memory: &Memory) -> bool {
    is_user_statement(memory)
        && hindsight_text::has_change_cue(&memory.content)
            .is_some_and(|cue| cue.weight >= CHANGE_CUE_WEIGHT)
}

#[derive(Default)]
pub(crate) struct Changes {
    /// Every change announced in the bank, by when it happened.
    by_time: BTreeSet<(Timestamp, MemoryId)>,
    /// What a change replaces, once worked out, with when the change happened: the user's
    /// nearest earlier statement whatever its status (`None`: no earlier statement).
    replaced: HashMap<MemoryId, (Timestamp, Option<MemoryId>)>,
}

impl Changes {
    /// Takes a record's new version (`before`: the one it replaces, if any) into account.
    pub(crate) fn put(&mut self, before: Option<&Memory>, after: &Memory) {
        if let Some(before) = before {
            self.by_time.remove(&(before.occurred_at, before.id));
            self.forget_replaced_after(before);
        }
        if announces_change(after) {
            self.by_time.insert((after.occurred_at, after.id));
        }
        self.forget_replaced_after(after);
        self.replaced.remove(&after.id);
    }

    pub(crate) fn remove(&mut self, gone: &Memory) {
        self.by_time.remove(&(gone.occurred_at, gone.id));
        self.replaced.remove(&gone.id);
        self.forget_replaced_after(gone);
    }

    /// A statement of the user's may be the nearest earlier one of every change made after it.
    fn forget_replaced_after(&mut self, statement: &Memory) {
        if is_user_statement(statement) && !self.replaced.is_empty() {
            self.replaced
                .retain(|_, (at, _)| *at <= statement.occurred_at);
        }
    }

    /// The changes announced after `after`, oldest first.
    pub(crate) fn after(&self, after: Timestamp) -> Vec<MemoryId> {
        self.by_time
            .range((after, MemoryId(u128::MAX))..)
            .filter(|(at, _)| *at > after)
            .map(|&(_, id)| id)
            .collect()
    }

    /// What `change` replaces, if worked out since the last write that could move it.
    pub(crate) fn replaced(&self, change: MemoryId) -> Option<Option<MemoryId>> {
        self.replaced.get(&change).map(|&(_, replaced)| replaced)
    }

    pub(crate) fn remember_replaced(&mut self, change: &Memory, replaced: Option<MemoryId>) {
        if self.by_time.contains(&(change.occurred_at, change.id)) {
            self.replaced
                .insert(change.id, (change.occurred_at, replaced));
        }
    }

    pub(crate) fn heap_bytes(&self) -> u64 {
        let entry = std::mem::size_of::<(Timestamp, MemoryId)>() as u64;
        let cached = std::mem::size_of::<(MemoryId, (Timestamp, Option<MemoryId>))>() as u64;
        // A B-tree node holds up to 11 entries; count it half full.
        self.by_time.len() as u64 * entry * 2 + self.replaced.capacity() as u64 * (cached + 1)
    }
}

#[cfg(test)]
mod tests {
    use hindsight_core::Provenance;

    use super::*;

    fn said(id: u128, day: u32, content: &str, source: SourceKind) -> Memory {
        let at = Timestamp::parse_rfc3339(&format!("2026-05-{day:02}T08:00:00Z")).unwrap();
        Memory::new(
            MemoryId(id),
            "team/notes".parse().unwrap(),
            content,
            Provenance::from_source(source),
            at,
        )
    }

    #[test]
    fn only_the_users_announced_changes_are_kept_and_listed_after_a_time() {
        let mut changes = Changes::default();
        let plain = said(1, 1, "My office is on the third floor", SourceKind::User);
        let moved = said(
            2,
            5,
            "We moved, I no longer sit on the third floor",
            SourceKind::User,
        );
        let weak = said(3, 6, "I now sit by the window", SourceKind::User);
        let agents = said(
            4,
            7,
            "The user no longer stays after six",
            SourceKind::Agent,
        );
        let later = said(
            5,
            9,
            "Actually my desk is on the fifth floor",
            SourceKind::User,
        );
        for memory in [&plain, &moved, &weak, &agents, &later] {
            changes.put(None, memory);
        }
        assert_eq!(changes.after(plain.occurred_at), vec![moved.id, later.id]);
        assert_eq!(changes.after(moved.occurred_at), vec![later.id]);
        assert!(changes.after(later.occurred_at).is_empty());
        changes.remove(&moved);
        assert_eq!(changes.after(plain.occurred_at), vec![later.id]);
    }

    #[test]
    fn what_a_change_replaces_is_kept_until_an_earlier_statement_is_written_or_removed() {
        let mut changes = Changes::default();
        let first = said(1, 1, "I take the 7:40 train", SourceKind::User);
        let change = said(
            2,
            8,
            "These days I no longer take the train",
            SourceKind::User,
        );
        changes.put(None, &first);
        changes.put(None, &change);
        // Only a change's answer is kept.
        changes.remember_replaced(&first, Some(change.id));
        assert_eq!(changes.replaced(first.id), None);
        changes.remember_replaced(&change, Some(first.id));
        assert_eq!(changes.replaced(change.id), Some(Some(first.id)));
        // A later statement cannot be what the change replaced.
        changes.put(
            None,
            &said(3, 9, "I like a seat near the door", SourceKind::User),
        );
        assert_eq!(changes.replaced(change.id), Some(Some(first.id)));
        // A tool's record is never a statement of the user's.
        changes.put(None, &said(4, 3, "Train 7:40 delayed", SourceKind::Tool));
        assert_eq!(changes.replaced(change.id), Some(Some(first.id)));
        // An earlier statement of the user's may be the nearer one.
        changes.put(
            None,
            &said(5, 4, "I cycle to the 7:40 train", SourceKind::User),
        );
        assert_eq!(changes.replaced(change.id), None);
        changes.remember_replaced(&change, Some(first.id));
        changes.remove(&first);
        assert_eq!(
            changes.replaced(change.id),
            None,
            "what it replaced is gone"
        );
        // A new version of the change itself is worked out again.
        changes.remember_replaced(&change, None);
        let mut reworded = change.clone();
        reworded.version += 1;
        changes.put(Some(&change), &reworded);
        assert_eq!(changes.replaced(change.id), None);
    }
}
