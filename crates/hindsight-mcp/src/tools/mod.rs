//! The ten tools' arguments, as agents send them, and how each tool's answer reads.

pub mod banks;
pub mod feedback;
pub mod forget;
pub mod get;
pub mod reflect;
pub mod resolve;
pub mod review;
pub mod search;
pub mod trace;
pub mod write;
