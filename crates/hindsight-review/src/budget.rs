//! Token budgets for judging: a cycle may spend at most its bank's budget and what is left of
//! the node-wide allowance; pairs that do not fit wait for the next cycle (docs/DESIGN.md,
//! "Review").

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::pair::Pair;

/// Pairs per judge prompt: fewer wastes the prompt's fixed part, more makes answers less reliable.
pub const BATCH_SIZES: RangeInclusive<usize> = 5..=10;

/// The tokens one review cycle may spend.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenBudget {
    limit: usize,
    used: usize,
}

impl TokenBudget {
    /// A budget of the bank's per-cycle limit, capped by what the node has left for all banks.
    pub fn new(bank_limit: usize, node_remaining: usize) -> Self {
        TokenBudget {
            limit: bank_limit.min(node_remaining),
            used: 0,
        }
    }

    /// Spends `tokens` if they fit; otherwise spends nothing and says so.
    pub fn try_spend(&mut self, tokens: usize) -> bool {
        if tokens > self.remaining() {
            return false;
        }
        self.used += tokens;
        true
    }

    pub fn used(&self) -> usize {
        self.used
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn remaining(&self) -> usize {
        self.limit - self.used
    }
}

/// An estimate of what judging a batch costs: a fixed part per prompt (instructions, schema)
/// plus, per pair, both memories' text and a fixed part (time, source, confidence, the answer).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BatchCost {
    pub per_batch: usize,
    pub per_pair: usize,
}

impl Default for BatchCost {
    fn default() -> Self {
        BatchCost {
            per_batch: 400,
            per_pair: 80,
        }
    }
}

impl BatchCost {
    pub fn of(&self, pairs: &[Pair]) -> usize {
        self.per_batch
            + pairs
                .iter()
                .map(|p| self.per_pair + content_tokens(p))
                .sum::<usize>()
    }
}

/// Tokens of both memories' content, counted with the LLM tokenizer.
pub fn content_tokens(pair: &Pair) -> usize {
    hindsight_text::count_tokens(&pair.a.content) + hindsight_text::count_tokens(&pair.b.content)
}

/// Batches to judge this cycle and the pairs left for the next one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchPlan {
    pub batches: Vec<Vec<Pair>>,
    /// Pairs that did not fit, in their original order; judge them first next cycle.
    pub deferred: Vec<Pair>,
    /// Tokens spent from the budget for the batches.
    pub tokens: usize,
    /// What each batch reserved, in the order of `batches`.
    pub batch_costs: Vec<usize>,
}

/// Splits `pairs` into batches of `batch_size` (clamped to [`BATCH_SIZES`]) and spends the
/// budget on them in order, as long as they fit; a batch that would not fit fully is cut down to
/// the pairs that do. Pairs stay in order and the first one that does not fit ends the plan, so a
/// long pair is never starved by shorter ones behind it.
///
/// `cost` estimates the tokens of a batch and should grow with the batch.
pub fn plan_batches<F>(
    pairs: Vec<Pair>,
    batch_size: usize,
    budget: &mut TokenBudget,
    cost: F,
) -> BatchPlan
where
    F: Fn(&[Pair]) -> usize,
{
    let size = batch_size.clamp(*BATCH_SIZES.start(), *BATCH_SIZES.end());
    let mut plan = BatchPlan::default();
    let mut rest = pairs.as_slice();
    while !rest.is_empty() {
        let most = size.min(rest.len());
        let fitting = (1..=most).rev().find_map(|n| {
            let tokens = cost(&rest[..n]);
            (tokens <= budget.remaining()).then_some((n, tokens))
        });
        let Some((n, tokens)) = fitting else {
            break;
        };
        let spent = budget.try_spend(tokens);
        debug_assert!(spent, "a batch is planned only when it fits");
        plan.tokens += tokens;
        plan.batch_costs.push(tokens);
        plan.batches.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    plan.deferred = rest.to_vec();
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::memory;
    use std::sync::Arc;

    fn pairs(n: u128) -> Vec<Pair> {
        (0..n)
            .map(|i| {
                Pair::new(
                    Arc::new(memory(2 * i + 1, "I drink tea.")),
                    Arc::new(memory(2 * i + 2, "I drink coffee.")),
                    Some(0.9),
                )
            })
            .collect()
    }

    #[test]
    fn spending_never_exceeds_the_limit() {
        let mut budget = TokenBudget::new(100, 1_000);
        assert_eq!(budget.limit(), 100);
        assert!(budget.try_spend(60));
        assert!(!budget.try_spend(41));
        assert_eq!(budget.used(), 60);
        assert!(budget.try_spend(40));
        assert!(!budget.try_spend(1));
        assert_eq!(budget.remaining(), 0);
    }

    #[test]
    fn the_node_allowance_caps_the_bank_budget() {
        let budget = TokenBudget::new(5_000, 1_200);
        assert_eq!(budget.limit(), 1_200);
    }

    #[test]
    fn what_does_not_fit_is_deferred_in_order() {
        let all = pairs(23);
        let keys: Vec<_> = all.iter().map(Pair::key).collect();
        // 10 per pair plus 5 per batch: 16 pairs cost 160 + 2·5, the 17th would not fit.
        let mut budget = TokenBudget::new(175, usize::MAX);
        let plan = plan_batches(all, 8, &mut budget, |b| 5 + 10 * b.len());
        let judged: Vec<_> = plan.batches.iter().flatten().map(Pair::key).collect();
        let deferred: Vec<_> = plan.deferred.iter().map(Pair::key).collect();
        assert_eq!(
            plan.batches.iter().map(Vec::len).collect::<Vec<_>>(),
            [8, 8]
        );
        assert_eq!([judged, deferred].concat(), keys);
        assert_eq!(plan.tokens, budget.used());
        assert!(budget.used() <= budget.limit());
    }

    #[test]
    fn a_last_batch_is_cut_down_to_fit() {
        let mut budget = TokenBudget::new(100, usize::MAX);
        let plan = plan_batches(pairs(12), 10, &mut budget, |b| 5 + 10 * b.len());
        // 95 buys a batch of 9 (5 + 90); nothing fits in the 5 left.
        assert_eq!(plan.batches.len(), 1);
        assert_eq!(plan.batches[0].len(), 9);
        assert_eq!(plan.deferred.len(), 3);
        assert_eq!(budget.used(), 95);
    }

    #[test]
    fn batch_sizes_are_clamped() {
        let mut budget = TokenBudget::new(usize::MAX, usize::MAX);
        let plan = plan_batches(pairs(12), 1, &mut budget, |_| 0);
        assert_eq!(
            plan.batches.iter().map(Vec::len).collect::<Vec<_>>(),
            [5, 5, 2]
        );
        let plan = plan_batches(pairs(12), 50, &mut budget, |_| 0);
        assert_eq!(
            plan.batches.iter().map(Vec::len).collect::<Vec<_>>(),
            [10, 2]
        );
    }

    #[test]
    fn the_default_cost_counts_real_tokens() {
        let cost = BatchCost::default();
        let one = pairs(1);
        let expected = 400 + 80 + content_tokens(&one[0]);
        assert_eq!(cost.of(&one), expected);
        assert!(content_tokens(&one[0]) >= 6);
    }
}
