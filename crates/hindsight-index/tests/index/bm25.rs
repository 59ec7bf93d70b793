use hindsight_index::{Bm25Index, Bm25Stats};

use crate::common::{ids, words};

fn all(_: u128) -> bool {
    true
}

#[test]
fn rare_term_outranks_common_term() {
    let idx = Bm25Index::new();
    // "coffee" is everywhere, "espresso" in one document; both documents have
    // the same length and one matching term each.
    for i in 0..20u128 {
        idx.upsert(100 + i, &words("coffee morning routine"));
    }
    idx.upsert(1, &words("coffee likes mornings"));
    idx.upsert(2, &words("espresso likes mornings"));
    let hits = idx.search(&words("coffee espresso"), 5, &all);
    assert_eq!(hits[0].0, 2);
    assert!(hits[0].1 > hits[1].1);
}

#[test]
fn more_matches_and_shorter_documents_rank_higher() {
    let idx = Bm25Index::new();
    idx.upsert(1, &words("rust async runtime"));
    idx.upsert(2, &words("rust"));
    idx.upsert(
        3,
        &words("rust is a language with many many many words in it"),
    );
    idx.upsert(4, &words("python"));
    let hits = idx.search(&words("rust async"), 10, &all);
    assert_eq!(ids(&hits), vec![1, 2, 3]);
    assert!(idx.search(&words("golang"), 10, &all).is_empty());
}

#[test]
fn filter_and_k_are_honoured() {
    let idx = Bm25Index::new();
    for i in 0..50u128 {
        idx.upsert(i, &words("shared term"));
    }
    let hits = idx.search(&words("term"), 5, &|id| id % 2 == 1);
    assert_eq!(hits.len(), 5);
    assert!(hits.iter().all(|h| h.0 % 2 == 1));
    // Equal scores fall back to id order.
    assert_eq!(ids(&hits), vec![1, 3, 5, 7, 9]);
}

#[test]
fn remove_takes_a_document_out() {
    let idx = Bm25Index::new();
    idx.upsert(1, &words("apple banana"));
    idx.upsert(2, &words("banana cherry"));
    assert!(idx.remove(1));
    assert!(!idx.remove(1));
    assert!(!idx.contains(1));
    assert!(idx.search(&words("apple"), 10, &all).is_empty());
    assert_eq!(ids(&idx.search(&words("banana"), 10, &all)), vec![2]);
    assert_eq!(idx.doc_freq("banana"), 1);
    assert_eq!(
        idx.stats(),
        Bm25Stats {
            docs: 1,
            total_terms: 2,
            distinct_terms: 2
        }
    );
}

#[test]
fn repeated_upserts_keep_statistics_exact() {
    let churned = Bm25Index::new();
    churned.upsert(1, &words("alpha beta beta gamma"));
    churned.upsert(2, &words("beta delta"));
    churned.upsert(1, &words("alpha alpha epsilon"));
    churned.upsert(1, &words("alpha alpha epsilon"));
    churned.upsert(3, &words("zeta"));
    churned.upsert(3, &Vec::<String>::new());
    churned.upsert(2, &words("beta delta delta"));

    let clean = Bm25Index::new();
    clean.upsert(1, &words("alpha alpha epsilon"));
    clean.upsert(2, &words("beta delta delta"));

    assert_eq!(churned.stats(), clean.stats());
    assert_eq!(churned.len(), 2);
    for q in ["alpha", "beta", "delta epsilon", "gamma", "zeta alpha"] {
        assert_eq!(
            churned.search(&words(q), 10, &all),
            clean.search(&words(q), 10, &all),
            "query {q:?}"
        );
    }
}
