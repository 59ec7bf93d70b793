//! The Hindsight domain model: memories, banks, the commands that change them and the pure rules that
//! apply those commands. Nothing here does I/O; the store supplies state through [`apply::StateMut`].

pub mod api_types;
pub mod apply;
pub mod bank;
mod bank_codec;
pub mod command;
pub mod error;
pub mod history;
pub mod id;
pub mod intent;
pub mod limits;
#[macro_use]
pub mod memory;
pub mod auth;
pub mod placement;
pub mod recall;
pub mod retrieval;
pub mod review;
pub mod scoring;
pub mod shadow;
pub mod strategy;
pub mod time;
pub mod write;

pub use api_types::{BankInfo, BankPatch, FeedbackReport, NodeStatus, ReviewReport, Trace};
pub use bank::{BankConfig, BankName, ScoringWeights};
pub use command::{Command, CommandOutcome, ItemVectors, WriteItem};
pub use error::ValidationError;
pub use history::{HistoryEntry, HistoryKind};
pub use id::MemoryId;
pub use limits::Limits;
pub use memory::{Kind, Memory, Provenance, Slot, SourceKind, Status, Subtype, Support};
pub use recall::{Consistency, RecallIntent, RecallRequest, RecallResponse};
pub use retrieval::{FeedbackOutcome, RecallId, RetrievalRecord};
pub use review::{ChangeReason, Conflict, CycleReport, MemoryChange, ReviewState};
pub use time::Timestamp;
pub use write::{Disposition, WriteOutcome, WriteRequest};
