//! The seven tools' arguments, as agents send them, and how each tool's answer reads.

pub mod forget;
pub mod reflect;
pub mod resolve;
pub mod review;
pub mod search;
pub mod trace;
pub mod write;
