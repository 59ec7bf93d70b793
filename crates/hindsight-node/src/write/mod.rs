//! The write path: admission and quotas before a batch is proposed, screening for injected
//! instructions, and the writer that plans, proposes and waits until the batch is searchable.

pub(crate) mod admission;
pub mod guarding;
pub(crate) mod quota;
pub(crate) mod writer;
