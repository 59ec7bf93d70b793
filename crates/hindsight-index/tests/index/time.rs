use hindsight_index::TimeIndex;

use crate::common::ids;

fn all(_: u128) -> bool {
    true
}

const DAY: i64 = 86_400_000;

fn sample() -> TimeIndex {
    let idx = TimeIndex::new();
    for d in 0..10i64 {
        idx.upsert(d as u128, d * DAY);
    }
    idx
}

#[test]
fn range_is_half_open_and_ordered() {
    let idx = sample();
    assert_eq!(idx.range(2 * DAY, 5 * DAY), vec![2, 3, 4]);
    assert_eq!(idx.range(2 * DAY + 1, 5 * DAY + 1), vec![3, 4, 5]);
    assert!(idx.range(5 * DAY, 5 * DAY).is_empty());
    assert!(idx.range(5 * DAY, 2 * DAY).is_empty());
    assert_eq!(idx.range(i64::MIN, i64::MAX).len(), 10);
}

#[test]
fn search_ranks_by_distance_to_the_window_centre() {
    let idx = sample();
    // Window [2d, 7d): centre 4.5d; 4 and 5 tie and are ordered by id.
    let hits = idx.search(2 * DAY, 7 * DAY, 10, &all);
    assert_eq!(ids(&hits), vec![4, 5, 3, 6, 2]);
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.1)));
    assert!(hits[0].1 > hits[2].1);
    assert_eq!(ids(&idx.search(2 * DAY, 7 * DAY, 1, &all)), vec![4]);
    assert_eq!(
        ids(&idx.search(2 * DAY, 7 * DAY, 2, &|id| id != 4)),
        vec![5, 3]
    );
    assert!(idx.search(20 * DAY, 30 * DAY, 5, &all).is_empty());
}

#[test]
fn latest_returns_newest_first() {
    let idx = sample();
    assert_eq!(ids(&idx.latest(0, 10 * DAY, 3, &all)), vec![9, 8, 7]);
    assert_eq!(
        ids(&idx.latest(0, 5 * DAY, 2, &|id| id.is_multiple_of(2))),
        vec![4, 2]
    );
}

#[test]
fn upsert_moves_and_remove_forgets() {
    let idx = sample();
    idx.upsert(3, 100 * DAY);
    assert_eq!(idx.range(2 * DAY, 5 * DAY), vec![2, 4]);
    assert_eq!(idx.get(3), Some(100 * DAY));
    assert!(idx.remove(3));
    assert!(!idx.remove(3));
    assert_eq!(idx.len(), 9);
    assert!(idx.range(0, i64::MAX).iter().all(|&id| id != 3));
}
