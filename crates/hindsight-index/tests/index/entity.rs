use hindsight_index::{EntityConfig, EntityIndex};

use crate::common::ids;

fn all(_: u128) -> bool {
    true
}

/// alice—acme in 1, alice—bob in 2, bob—paris in 3, paris in 4, carol in 5.
fn sample() -> EntityIndex {
    let idx = EntityIndex::new();
    idx.upsert(1, &["alice", "acme"]);
    idx.upsert(2, &["alice", "bob"]);
    idx.upsert(3, &["bob", "paris"]);
    idx.upsert(4, &["paris"]);
    idx.upsert(5, &["carol"]);
    idx
}

#[test]
fn one_hop_returns_memories_mentioning_the_entities() {
    let idx = sample();
    let mut got = ids(&idx.search(&["alice"], 1, 10, &all));
    got.sort();
    assert_eq!(got, vec![1, 2]);
    // Matching two query entities beats matching one.
    let hits = idx.search(&["alice", "bob"], 1, 10, &all);
    assert_eq!(hits[0].0, 2);
    assert_eq!(hits.len(), 3);
    assert!(idx.search(&["nobody"], 2, 10, &all).is_empty());
}

#[test]
fn rarer_entities_weigh_more() {
    let idx = EntityIndex::new();
    for i in 10..30u128 {
        idx.upsert(i, &["user"]);
    }
    idx.upsert(1, &["user", "x"]);
    idx.upsert(2, &["kyoto", "y"]);
    let hits = idx.search(&["user", "kyoto"], 1, 3, &all);
    assert_eq!(hits[0].0, 2);
}

#[test]
fn two_hops_reach_co_mentioned_entities_with_lower_scores() {
    let idx = sample();
    let one = idx.search(&["alice"], 1, 10, &all);
    let two = idx.search(&["alice"], 2, 10, &all);
    assert!(!ids(&one).contains(&3));
    // alice → (memory 2) → bob → memory 3; paris is a further hop away.
    let got = ids(&two);
    assert!(got.contains(&3));
    assert!(!got.contains(&4) && !got.contains(&5));
    let score = |id| two.iter().find(|h| h.0 == id).unwrap().1;
    assert!(score(3) < score(1).min(score(2)));
    // Hop-2 results respect the filter too.
    assert!(!ids(&idx.search(&["alice"], 2, 10, &|id| id != 3)).contains(&3));
}

#[test]
fn very_common_entities_are_not_expanded() {
    let cfg = EntityConfig {
        max_fanout: 10,
        ..EntityConfig::default()
    };
    let idx = EntityIndex::with_config(cfg);
    idx.upsert(1, &["alice", "user"]);
    idx.upsert(2, &["alice", "bob"]);
    idx.upsert(3, &["bob"]);
    for i in 100..200u128 {
        idx.upsert(i, &["user"]);
    }
    let got = ids(&idx.search(&["alice"], 2, 500, &all));
    assert!(got.contains(&3), "rare bridge followed");
    assert!(!got.contains(&150), "hub entity not followed");
    assert_eq!(got.len(), 3);
}

#[test]
fn upsert_replaces_and_remove_forgets() {
    let idx = sample();
    idx.upsert(1, &["dave"]);
    assert_eq!(ids(&idx.search(&["alice"], 1, 10, &all)), vec![2]);
    assert!(idx.remove(2));
    assert!(idx.search(&["alice"], 2, 10, &all).is_empty());
    assert_eq!(idx.entities_of(1), vec!["dave"]);
    assert!(idx.entities_of(2).is_empty());
    assert_eq!(idx.len(), 4);
}
