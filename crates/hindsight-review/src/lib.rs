//! The review ("hindsight") domain: which memories to compare, how a pair is judged, and what a
//! verdict does to the memories (docs/DESIGN.md, "Review"). Pure and deterministic: no I/O, no
//! clock, no model calls. The caller supplies memories and an index view, and gets back decisions
//! to turn into one replicated command and history entries.
//!
//! A cycle runs in five steps:
//!
//! 1. **Candidates** ([`select_pairs`]): the memories changed since the bank's review watermark
//!    are paired with neighbours that share their slot or embed close to them
//!    ([`Neighbourhood`], [`PairConfig`]). Working memory and memories already resolved are left
//!    out, and the stats compare the pairs selected with all n·(n−1)/2.
//! 2. **Budget** ([`plan_batches`], [`TokenBudget`]): a model-backed judge sees the pairs in
//!    batches as far as the bank's and the node's token budgets allow; the rest waits for the next
//!    cycle. The rules judge costs nothing and needs no plan.
//! 3. **Verdicts** ([`Judge`]): each pair is a [`Relation`]: duplicate, update (newer replaces
//!    older), inference refuted by a fact, source conflict, undecidable, or unrelated.
//!    [`RulesJudge`] decides offline from slots, time order, provenance and cues in English and
//!    Chinese; a model-backed judge implements the same trait.
//! 4. **Decisions** ([`resolve`]): the bank's [`Strategies`] turn verdicts into [`Decision`]s —
//!    supersede, falsify, dispute, hold for review, merge — such that no memory gets two
//!    conflicting decisions in one cycle and a critical memory never yields to an inference.
//! 5. **Upkeep**: [`decay`] lowers the confidence of memories unused since the last cycle and
//!    archives those that fall too low; [`distill`] proposes a rule when several episodes show
//!    the same pattern.
//!
//! Decisions carry absolute values (new status, confidence, `valid_to`) computed from the records
//! the proposer saw, and later decisions of a cycle build on earlier ones, so they are applied in
//! the order given. Pass [`decided_ids`] of the conflict decisions to [`decay`] so that a memory
//! changed by a verdict is not decayed in the same cycle.
//!
//! The English and Chinese word lists the rules judge reads beyond `hindsight_text`'s cues
//! (aversions, opposites, corrections, framing words) are kept together in `src/lexicon.rs`.
//!
//! ```
//! use std::sync::Arc;
//! use hindsight_core::Memory;
//! use hindsight_review::{
//!     resolve, select_pairs, Judge, Neighbourhood, PairConfig, RulesJudge, Strategies,
//! };
//!
//! struct NoIndex;
//! impl Neighbourhood for NoIndex {
//!     fn similar(&self, _: &Memory, _: f32, _: usize) -> Vec<(Arc<Memory>, f32)> { vec![] }
//!     fn same_slot(&self, _: &Memory, _: usize) -> Vec<Arc<Memory>> { vec![] }
//! }
//!
//! let changed: Vec<Arc<Memory>> = vec![];
//! let selection = select_pairs(&changed, 0, &NoIndex, &PairConfig::default());
//! let judgements = RulesJudge::default().judge(&selection.pairs);
//! let decisions = resolve(&selection.pairs, &judgements, &Strategies::default());
//! assert!(decisions.is_empty());
//! ```

mod budget;
mod decay;
mod decision;
mod distill;
pub mod importance;
mod judge;
mod lexicon;
mod neighbourhood;
mod pair;
pub mod reflect;
mod resolve;
mod rules;
mod statement;
#[cfg(test)]
mod testing;

pub use budget::{content_tokens, plan_batches, BatchCost, BatchPlan, TokenBudget, BATCH_SIZES};
pub use decay::{decay, decided_ids, DecayConfig, DECAY};
pub use decision::{Action, Decision, DistilledRule, MemoryUpdate};
pub use distill::{distill, reinforce, rule_confidence, DistillConfig, DISTILL};
pub use hindsight_core::strategy::{
    DuplicateStrategy, InferenceStrategy, SourceStrategy, Strategies, StrategyError,
    TemporalStrategy, UndecidableStrategy,
};
pub use judge::{unjudged, Judge, Judgement, Relation};
pub use neighbourhood::{is_inferred, Neighbourhood};
pub use pair::{is_reviewable, select_pairs, Pair, PairConfig, PairKey, PairSelection, PairStats};
pub use reflect::{
    Outcome, ReflectError, Reflection, Reflector, RulesReflector, TaskTrace, ToolCall,
    MAX_REFLECTIONS,
};
pub use resolve::resolve;
pub use rules::{RulesConfig, RulesJudge};
