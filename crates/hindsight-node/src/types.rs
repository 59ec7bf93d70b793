//! Request and response types of the service layer beyond those the domain model defines. They live
//! in the domain crate, so that a client can speak them without linking the node.

pub use hindsight_core::api_types::{BankInfo, BankPatch, NodeStatus, ReviewReport, Trace};
