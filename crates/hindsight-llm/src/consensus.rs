//! Majority vote over several samples of the same judgement.

use std::collections::BTreeMap;

use crate::{Relation, Side, Verdict};

/// Combines the verdicts that `samples` independent answers gave for pair `id`.
///
/// A pair answered validly by no more than half of the samples is `Err` (deferred): a
/// majority of a minority is no consensus. Otherwise the relation needs more than half of the
/// votes cast; a tie or a split without a majority gives `undecidable`, and so does agreement
/// on `update`/`inference_refuted` with a tie on which memory wins.
pub(crate) fn combine(id: &str, votes: &[Verdict], samples: u32) -> Result<Verdict, String> {
    let cast = votes.len() as u32;
    if cast * 2 <= samples {
        return Err(format!(
            "only {cast} of {samples} samples gave a valid verdict, too few for a majority"
        ));
    }
    let mut by_relation: BTreeMap<Relation, Vec<&Verdict>> = BTreeMap::new();
    for vote in votes {
        by_relation.entry(vote.relation).or_default().push(vote);
    }
    let undecidable = |votes: u32, reason: String| Verdict {
        id: id.to_string(),
        relation: Relation::Undecidable,
        newer_or_fact: None,
        reason,
        cached: false,
        votes,
        samples,
    };
    let tally = by_relation
        .iter()
        .map(|(relation, v)| format!("{} {relation}", v.len()))
        .collect::<Vec<_>>()
        .join(", ");
    let (&winner, backers) = by_relation
        .iter()
        .max_by_key(|(_, v)| v.len())
        .expect("at least one vote was cast");
    let top = backers.len() as u32;
    if top * 2 <= cast {
        let abstaining = by_relation
            .get(&Relation::Undecidable)
            .map_or(0, |v| v.len() as u32);
        return Ok(undecidable(
            abstaining,
            format!("the samples disagree ({tally})"),
        ));
    }
    let newer_or_fact = if winner.needs_side() {
        let for_a = backers
            .iter()
            .filter(|v| v.newer_or_fact == Some(Side::A))
            .count();
        let for_b = backers.len() - for_a;
        match for_a.cmp(&for_b) {
            std::cmp::Ordering::Greater => Some(Side::A),
            std::cmp::Ordering::Less => Some(Side::B),
            std::cmp::Ordering::Equal => {
                return Ok(undecidable(
                    0,
                    format!(
                        "{top} of {samples} samples say {winner} but split {for_a}:{for_b} \
                         on which memory wins"
                    ),
                ))
            }
        }
    } else {
        None
    };
    let example = backers
        .iter()
        .find(|v| v.newer_or_fact == newer_or_fact)
        .unwrap_or(&backers[0]);
    Ok(Verdict {
        id: id.to_string(),
        relation: winner,
        newer_or_fact,
        reason: format!("{top} of {samples} samples agree: {}", example.reason),
        cached: false,
        votes: top,
        samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(relation: Relation, side: Option<Side>) -> Verdict {
        Verdict {
            id: "p".into(),
            relation,
            newer_or_fact: side,
            reason: format!("{relation}"),
            cached: false,
            votes: 1,
            samples: 1,
        }
    }

    #[test]
    fn majority_wins() {
        let v = combine(
            "p",
            &[
                vote(Relation::Update, Some(Side::B)),
                vote(Relation::Duplicate, None),
                vote(Relation::Update, Some(Side::B)),
            ],
            3,
        )
        .unwrap();
        assert_eq!(
            (v.relation, v.newer_or_fact, v.votes, v.samples),
            (Relation::Update, Some(Side::B), 2, 3)
        );
        assert_eq!(v.reason, "2 of 3 samples agree: update");
    }

    #[test]
    fn ties_and_splits_are_undecidable() {
        let tie = combine(
            "p",
            &[
                vote(Relation::Update, Some(Side::A)),
                vote(Relation::Duplicate, None),
                vote(Relation::Unrelated, None),
            ],
            3,
        )
        .unwrap();
        assert_eq!(tie.relation, Relation::Undecidable);
        assert_eq!(
            tie.reason,
            "the samples disagree (1 duplicate, 1 update, 1 unrelated)"
        );
        let side_split = combine(
            "p",
            &[
                vote(Relation::Update, Some(Side::A)),
                vote(Relation::Update, Some(Side::B)),
                vote(Relation::Unrelated, None),
            ],
            3,
        )
        .unwrap();
        assert_eq!(side_split.relation, Relation::Undecidable);
        assert!(side_split.reason.contains("split 1:1"));
        let no_majority = combine(
            "p",
            &[
                vote(Relation::Update, Some(Side::A)),
                vote(Relation::Update, Some(Side::A)),
                vote(Relation::Unrelated, None),
                vote(Relation::Duplicate, None),
            ],
            5,
        )
        .unwrap();
        assert_eq!(no_majority.relation, Relation::Undecidable);
    }

    #[test]
    fn too_few_answers_defer() {
        let one = [vote(Relation::Duplicate, None)];
        assert!(combine("p", &one, 3).unwrap_err().contains("only 1 of 3"));
        assert_eq!(combine("p", &one, 1).unwrap().relation, Relation::Duplicate);
    }
}
