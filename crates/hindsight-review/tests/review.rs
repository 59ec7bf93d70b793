//! A bank's review cycle end to end, in English and Chinese: candidate pairs from a hand-made
//! neighbourhood, the rules judge, the default strategies, decay and the token budget.

use std::collections::BTreeSet;
use std::sync::Arc;

use hindsight_core::{Memory, MemoryId, SourceKind, Status};
use hindsight_review::{
    decay, decided_ids, plan_batches, resolve, select_pairs, Action, BatchCost, DecayConfig,
    Decision, Judge, Judgement, Neighbourhood, Pair, PairConfig, PairKey, Relation, RulesJudge,
    Strategies, TokenBudget,
};

// The crate's own fixtures; they name the neighbourhood trait through the crate root, which the
// import above provides here.
#[allow(dead_code)]
#[path = "../src/testing.rs"]
mod testing;

use testing::{stated, MemoryExt, Table, DAY};

/// One cycle over the memories `changed`, judged by the rules.
fn cycle(table: &Table, changed: &[u128]) -> (Vec<Pair>, Vec<Judgement>, Vec<Decision>) {
    let changed: Vec<Arc<Memory>> = changed.iter().map(|id| table.get(*id)).collect();
    let bank_size = table.all().len();
    let selection = select_pairs(&changed, bank_size, table, &PairConfig::default());
    let judgements = RulesJudge::default().judge(&selection.pairs);
    let decisions = resolve(&selection.pairs, &judgements, &Strategies::default());
    (selection.pairs, judgements, decisions)
}

fn relation(judgements: &[Judgement], a: u128, b: u128) -> &Relation {
    let key = PairKey::new(MemoryId(a), MemoryId(b));
    &judgements
        .iter()
        .find(|j| j.pair == key)
        .unwrap_or_else(|| panic!("no verdict on {a} and {b}"))
        .relation
}

fn touching(decisions: &[Decision], id: u128) -> Vec<&Decision> {
    decisions
        .iter()
        .filter(|d| d.memories().contains(&MemoryId(id)))
        .collect()
}

/// No decision acts on a memory that an earlier decision of the cycle superseded, falsified,
/// merged away or archived.
fn assert_no_conflicting_decisions(decisions: &[Decision]) {
    let mut retired = BTreeSet::new();
    for d in decisions {
        for id in d.memories() {
            assert!(
                !retired.contains(&id),
                "{id} acted on after retiring: {d:?}"
            );
        }
        if let Some(id) = d.retires() {
            retired.insert(id);
        }
    }
}

fn assert_superseded(decisions: &[Decision], older: u128, newer: u128) {
    let found = decisions.iter().any(|d| match &d.action {
        Action::Supersede { newer: n, older: o } => {
            n.id == MemoryId(newer)
                && o.id == MemoryId(older)
                && o.status == Some(Status::Superseded { by: n.id })
                && o.confidence.is_some_and(|c| c < 0.1)
                && o.valid_to.is_some()
        }
        _ => false,
    });
    assert!(found, "{older} not superseded by {newer}: {decisions:#?}");
}

#[test]
fn a_changed_preference_supersedes_the_old_one() {
    let table = Table::new(&[
        stated(1, "Please reach me by SMS for anything urgent.").at(1, 1),
        stated(2, "Switch my notifications to Slack please.").at(10, 10),
        stated(3, "我平时喝咖啡都点馥芮白。").at(1, 1),
        stated(4, "我现在不喝之前那个了，改成拿铁。").at(10, 10),
    ]);
    // Only the new statements changed; the slot index finds the old ones.
    let (_, judgements, decisions) = cycle(&table, &[2, 4]);
    assert!(matches!(
        relation(&judgements, 1, 2),
        Relation::Update { newer, older } if *newer == MemoryId(2) && *older == MemoryId(1)
    ));
    assert_superseded(&decisions, 1, 2);
    assert_superseded(&decisions, 3, 4);
    assert_eq!(decisions.len(), 2);
}

#[test]
fn the_direction_of_an_update_follows_event_time_not_write_order() {
    // The newer statement was imported first, with its original event time.
    let table = Table::new(&[
        stated(1, "I moved to Munich.").at(20, 1),
        stated(2, "I live in Berlin.").at(5, 2),
    ]);
    let (_, _, decisions) = cycle(&table, &[2]);
    assert_superseded(&decisions, 2, 1);
}

#[test]
fn a_hedged_inference_contradicted_by_the_user_is_falsified() {
    let table = Table::new(&[
        stated(
            1,
            "The user is probably vegetarian; they only ordered salads so far.",
        )
        .with_source(SourceKind::Agent)
        .at(5, 5),
        stated(
            2,
            "I'm not vegetarian at all, I eat chicken almost every day.",
        )
        .at(3, 3),
        stated(3, "用户似乎喜欢深夜工作。")
            .with_source(SourceKind::Agent)
            .at(1, 1),
        stated(4, "我习惯早上工作，晚上从不工作。").at(9, 9),
    ])
    .similar(1, 2, 0.83)
    .similar(3, 4, 0.81);
    let (_, judgements, decisions) = cycle(&table, &[1, 4]);
    for (inference, fact) in [(1, 2), (3, 4)] {
        assert_eq!(
            relation(&judgements, inference, fact),
            &Relation::InferenceRefuted {
                fact: MemoryId(fact),
                inference: MemoryId(inference)
            }
        );
        let decided = touching(&decisions, inference);
        assert_eq!(decided.len(), 1);
        let Action::Falsify {
            fact: f,
            inference: i,
        } = &decided[0].action
        else {
            panic!("expected falsify: {decided:?}");
        };
        assert_eq!(*f, MemoryId(fact));
        assert_eq!(i.status, Some(Status::Falsified));
        assert_eq!(i.confidence, Some(0.0));
        // The user's statement itself is left as it is.
        assert!(decided[0].updates().iter().all(|u| u.id != MemoryId(fact)));
    }
}

#[test]
fn two_tools_that_disagree_are_both_kept_and_disputed() {
    let table = Table::new(&[
        stated(
            1,
            "Inventory service reports 40 units of part Tyrell in stock.",
        )
        .with_tool("inventory"),
        stated(2, "Warehouse scanner shows part Tyrell is out of stock.")
            .with_tool("warehouse-scanner"),
        stated(3, "CRM 记录：客户Wayne是金牌支持等级。").with_tool("crm"),
        stated(4, "计费系统：客户Wayne购买的是银牌支持等级。").with_tool("billing"),
    ]);
    let (_, judgements, decisions) = cycle(&table, &[2, 4]);
    assert_eq!(relation(&judgements, 1, 2), &Relation::SourceConflict);
    assert_eq!(relation(&judgements, 3, 4), &Relation::SourceConflict);
    assert_eq!(decisions.len(), 2);
    for d in &decisions {
        let Action::Dispute { a, b } = &d.action else {
            panic!("expected a dispute: {d:?}");
        };
        for u in [a, b] {
            assert_eq!(u.status, Some(Status::Disputed));
            assert!((u.confidence.unwrap() - 0.8 * 0.7).abs() < 1e-6);
        }
        assert_eq!(d.retires(), None, "both are kept");
    }
}

#[test]
fn rewordings_merge_into_one_memory_that_counts_them() {
    let english = [
        "I'm allergic to peanuts.",
        "Note that I have a peanut allergy.",
        "Just a reminder, peanuts give me an allergic reaction.",
        "Please remember: no peanuts, I'm allergic.",
        "I can't eat peanuts because of my allergy.",
    ];
    let chinese = [
        "我对花生过敏。",
        "提醒一下，我吃花生会过敏。",
        "记一下，我有花生过敏。",
        "请记住：我不能吃花生，会过敏。",
        "因为过敏，我不能吃花生。",
    ];
    for (offset, set) in [(0u128, english), (10, chinese)] {
        let memories: Vec<Memory> = set
            .iter()
            .enumerate()
            .map(|(i, text)| stated(offset + i as u128 + 1, text).at(i as i64, i as i64))
            .collect();
        let mut table = Table::new(&memories);
        for i in 1..=5u128 {
            for j in i + 1..=5 {
                table = table.similar(offset + i, offset + j, 0.80 + 0.01 * (i + j) as f32);
            }
        }
        let ids: Vec<u128> = (1..=5).map(|i| offset + i).collect();
        let (_, _, decisions) = cycle(&table, &ids);
        assert_no_conflicting_decisions(&decisions);
        assert_eq!(decisions.len(), 4, "{decisions:#?}");
        let survivor = MemoryId(offset + 1);
        let mut merged_away = BTreeSet::new();
        let mut last_count = 0;
        for d in &decisions {
            let Action::Merge {
                into,
                from,
                support_count,
                ..
            } = &d.action
            else {
                panic!("expected merges only: {d:?}");
            };
            assert_eq!(into.id, survivor, "the oldest statement survives");
            merged_away.insert(*from);
            last_count = *support_count;
        }
        assert_eq!(merged_away.len(), 4);
        assert_eq!(last_count, 5);
    }
}

#[test]
fn unrelated_and_merely_similar_memories_are_left_alone() {
    let table = Table::new(&[
        stated(1, "I'm allergic to peanuts."),
        stated(2, "I'm allergic to shellfish."),
        stated(3, "Project Vega's deadline is May 3."),
        stated(4, "我住在北京。"),
        stated(5, "我喜欢喝茶。"),
    ])
    .similar(1, 2, 0.86)
    .similar(1, 3, 0.1)
    .similar(4, 5, 0.5);
    let (pairs, judgements, decisions) = cycle(&table, &[1, 2, 3, 4, 5]);
    // Only the similar allergy pair is a candidate at all, and it states two different facts.
    assert_eq!(pairs.len(), 1);
    assert_eq!(relation(&judgements, 1, 2), &Relation::Unrelated);
    assert!(decisions.is_empty(), "{decisions:#?}");
}

/// A judge that answers from a script, standing in for a model-backed one.
struct ScriptedJudge(Vec<(u128, u128, Relation)>);

impl Judge for ScriptedJudge {
    fn name(&self) -> &str {
        "scripted"
    }

    fn judge(&self, pairs: &[Pair]) -> Vec<Judgement> {
        pairs
            .iter()
            .filter_map(|p| {
                let (_, _, relation) = self
                    .0
                    .iter()
                    .find(|(a, b, _)| PairKey::new(MemoryId(*a), MemoryId(*b)) == p.key())?;
                Some(Judgement {
                    pair: p.key(),
                    relation: relation.clone(),
                    reason: "scripted".into(),
                    judge: self.name().into(),
                })
            })
            .collect()
    }
}

#[test]
fn a_critical_memory_is_never_superseded_by_an_inference() {
    let policy = "Company policy: transfers above 1,000 EUR need a second confirmation.";
    let guess =
        "Going forward the user probably no longer needs a second confirmation for transfers.";
    let table = Table::new(&[
        stated(1, policy)
            .with_source(SourceKind::Import)
            .critical()
            .at(1, 1),
        stated(2, guess).with_source(SourceKind::Agent).at(30, 30),
        stated(3, "我所有的转账都必须二次确认。")
            .critical()
            .at(1, 1),
        stated(4, "用户以后应该不需要二次确认转账了。")
            .with_source(SourceKind::Agent)
            .at(30, 30),
    ])
    .similar(1, 2, 0.87)
    .similar(3, 4, 0.87);
    let pairs = select_pairs(
        &[table.get(2), table.get(4)],
        4,
        &table,
        &PairConfig::default(),
    )
    .pairs;

    let by_rules = RulesJudge::default().judge(&pairs);
    // A judge that gets it wrong and calls the inference the fact.
    let mistaken = ScriptedJudge(vec![
        (
            1,
            2,
            Relation::Update {
                newer: MemoryId(2),
                older: MemoryId(1),
            },
        ),
        (
            3,
            4,
            Relation::InferenceRefuted {
                fact: MemoryId(4),
                inference: MemoryId(3),
            },
        ),
    ])
    .judge(&pairs);
    for judgements in [by_rules, mistaken] {
        let decisions = resolve(&pairs, &judgements, &Strategies::default());
        // The inferences do not go unanswered: each is falsified or held for review.
        for inference in [2, 4] {
            let answered = touching(&decisions, inference).iter().any(|d| {
                d.updates().iter().any(|u| {
                    u.id == MemoryId(inference)
                        && matches!(u.status, Some(Status::Falsified | Status::PendingReview))
                })
            });
            assert!(answered, "{inference}: {judgements:#?} {decisions:#?}");
        }
        for critical in [1, 3] {
            for d in touching(&decisions, critical) {
                assert_ne!(d.retires(), Some(MemoryId(critical)), "{d:#?}");
                assert!(
                    d.updates().iter().all(|u| u.id != MemoryId(critical)),
                    "a critical memory was changed on an inference: {d:#?}"
                );
            }
        }
    }
}

#[test]
fn one_cycle_over_a_mixed_bank_never_gives_conflicting_decisions() {
    let table = mixed_bank();
    let all: Vec<u128> = table.all().iter().map(|m| m.id.0).collect();
    let (pairs, judgements, decisions) = cycle(&table, &all);
    assert_no_conflicting_decisions(&decisions);
    // Every memory is retired at most once.
    let retired: Vec<MemoryId> = decisions.iter().filter_map(Decision::retires).collect();
    let unique: BTreeSet<MemoryId> = retired.iter().copied().collect();
    assert_eq!(retired.len(), unique.len());

    // What is left of the coffee story is one memory: the latest preference, which absorbed its
    // Chinese restatement and superseded the older values, themselves merged first.
    let outcome: Vec<(u128, &str)> = decisions
        .iter()
        .filter_map(|d| Some((d.retires()?.0, d.action.name())))
        .collect();
    let expected = [
        (10, "falsify"),
        (4, "merge"),
        (5, "merge"),
        (8, "merge"),
        (9, "merge"),
        (1, "supersede"),
        (2, "supersede"),
    ];
    assert_eq!(outcome, expected, "{decisions:#?}");
    assert_superseded(&decisions, 1, 3);
    assert_superseded(&decisions, 2, 3);
    let disputed: Vec<&Decision> = decisions
        .iter()
        .filter(|d| matches!(d.action, Action::Dispute { .. }))
        .collect();
    assert_eq!(disputed.len(), 1);
    assert_eq!(disputed[0].memories(), vec![MemoryId(6), MemoryId(7)]);
    for untouched in [3, 11, 12, 99] {
        assert!(
            decisions
                .iter()
                .all(|d| d.retires() != Some(MemoryId(untouched))),
            "{untouched}"
        );
    }

    // The same bank offered in another order, with verdicts in another order, decides the same.
    let mut reversed = all.clone();
    reversed.reverse();
    let (_, _, again) = cycle(&table, &reversed);
    assert_eq!(again, decisions);
    let mut shuffled = judgements.clone();
    shuffled.reverse();
    assert_eq!(
        resolve(&pairs, &shuffled, &Strategies::default()),
        decisions
    );

    // Decisions travel in a replicated command: they must survive serialisation unchanged.
    let json = serde_json::to_string(&decisions).unwrap();
    let back: Vec<Decision> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, decisions);

    // Decay leaves alone what the conflict decisions already changed.
    let decided = decided_ids(&decisions);
    let last_cycle = table.get(99).recorded_at.0 + DAY;
    let decayed = decay(
        &table.all(),
        hindsight_core::Timestamp(last_cycle),
        &decided,
        &DecayConfig::default(),
    );
    assert!(!decayed.is_empty());
    for d in &decayed {
        assert!(d.memories().iter().all(|id| !decided.contains(id)), "{d:?}");
    }
    let mut everything = decisions.clone();
    everything.extend(decayed);
    assert_no_conflicting_decisions(&everything);
}

/// Coffee preferences that changed twice, rewordings of one of them, an inference, disagreeing
/// tools and an unrelated fact, in both languages.
fn mixed_bank() -> Table {
    Table::new(&[
        stated(1, "I always order a flat white.").at(1, 1),
        stated(2, "I switched to americanos.").at(5, 5),
        stated(3, "These days I've switched to a latte instead.").at(9, 9),
        stated(4, "My usual coffee is a flat white.").at(2, 2),
        stated(5, "The user probably likes flat whites.")
            .with_source(SourceKind::Agent)
            .at(3, 3),
        stated(
            6,
            "Inventory service reports 40 units of part Tyrell in stock.",
        )
        .with_tool("inventory")
        .at(4, 4),
        stated(7, "Warehouse scanner shows part Tyrell is out of stock.")
            .with_tool("warehouse-scanner")
            .at(4, 4),
        stated(8, "我平时喝咖啡都点馥芮白。").at(1, 1),
        stated(9, "我现在不喝之前那个了，改成拿铁。").at(9, 9),
        stated(10, "用户似乎是素食者。")
            .with_source(SourceKind::Agent)
            .at(2, 2),
        stated(11, "我不是素食者，我每天都吃鸡肉。").at(6, 6),
        stated(12, "Project Vega's deadline is May 3.").at(2, 2),
        stated(99, "Standup moved to 9:30.").at(8, 8),
    ])
    .similar(1, 4, 0.9)
    .similar(1, 5, 0.86)
    .similar(4, 5, 0.85)
    .similar(2, 3, 0.87)
    .similar(6, 7, 0.83)
    .similar(10, 11, 0.82)
    .similar(12, 99, 0.3)
}

#[test]
fn the_token_budget_is_never_exceeded_and_leftovers_wait_for_the_next_cycle() {
    let table = mixed_bank();
    let all: Vec<Arc<Memory>> = table.all();
    let pairs = select_pairs(&all, all.len(), &table, &PairConfig::default()).pairs;
    assert!(pairs.len() >= 8, "{}", pairs.len());
    let cost = BatchCost {
        per_batch: 100,
        per_pair: 20,
    };
    let judge = RulesJudge::default();
    let limit = 400;
    let mut waiting = pairs.clone();
    let mut judged: Vec<PairKey> = Vec::new();
    let mut cycles = 0;
    while !waiting.is_empty() {
        cycles += 1;
        assert!(cycles < 20, "the budget never let the rest through");
        // The node has more left than the bank may spend in one cycle.
        let mut budget = TokenBudget::new(limit, 10_000);
        let plan = plan_batches(waiting, 5, &mut budget, |b| cost.of(b));
        assert!(budget.used() <= budget.limit());
        assert!(plan.tokens <= limit);
        assert!(!plan.batches.is_empty(), "nothing fit in an empty budget");
        for batch in &plan.batches {
            judged.extend(judge.judge(batch).iter().map(|j| j.pair));
        }
        waiting = plan.deferred;
    }
    assert!(cycles > 1, "the budget should have split the work");
    let expected: Vec<PairKey> = pairs.iter().map(Pair::key).collect();
    assert_eq!(judged, expected, "every pair judged once, in order");
}

#[test]
fn an_exhausted_node_allowance_defers_everything() {
    let table = mixed_bank();
    let all = table.all();
    let pairs = select_pairs(&all, all.len(), &table, &PairConfig::default()).pairs;
    let mut budget = TokenBudget::new(5_000, 50);
    let plan = plan_batches(pairs.clone(), 8, &mut budget, |b| {
        BatchCost::default().of(b)
    });
    assert!(plan.batches.is_empty());
    assert_eq!(plan.deferred, pairs);
    assert_eq!(budget.used(), 0);
}

#[test]
fn the_rules_judge_is_free_and_judges_in_one_pass() {
    let table = mixed_bank();
    let all = table.all();
    let selection = select_pairs(&all, all.len(), &table, &PairConfig::default());
    let judgements = RulesJudge::default().judge(&selection.pairs);
    assert_eq!(judgements.len(), selection.pairs.len());
    assert!(hindsight_review::unjudged(&selection.pairs, &judgements).is_empty());
    assert!(judgements
        .iter()
        .all(|j| j.judge == "rules" && !j.reason.is_empty()));
    // The cheap signals compare far fewer pairs than all of them.
    assert!(selection.stats.ratio() < 0.25, "{:?}", selection.stats);
}
