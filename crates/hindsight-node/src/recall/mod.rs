//! Recall: the search that gathers, fuses and scores a bank's memories for a query, and the
//! learning loop that records what was recalled and takes feedback on it.

pub mod learning;
pub(crate) mod search;
