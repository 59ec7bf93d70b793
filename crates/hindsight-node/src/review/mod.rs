//! Review: the per-bank reviewer actors and the cycle they run (judging pairs of memories,
//! maintenance, quarantine), the conflict queue a review leaves for people, and reflection on
//! task traces.

pub mod conflicts;
pub(crate) mod cycle;
pub mod judging;
pub(crate) mod maintenance;
pub(crate) mod quarantine_review;
pub mod reflecting;
pub(crate) mod reviewer;
pub(crate) mod token_window;
