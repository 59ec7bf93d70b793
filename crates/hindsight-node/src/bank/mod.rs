//! Per-bank actors. `BankSupervisor` starts one `BankActor` per bank on first use and restarts it when
//! it fails; each actor owns its bank's derived indexes and publishes them as a [`BankView`] that any
//! number of searches read at once.

mod actor;
pub(crate) mod changes;
mod context;
pub(crate) mod embedding;
pub(crate) mod erasure;
pub(crate) mod homes;
pub mod integrity;
pub(crate) mod listener;
pub(crate) mod partitions;
mod registry;
pub mod residency;
mod runtime;
mod supervisor;
#[cfg(test)]
pub(crate) mod testing;
mod view;

pub use actor::BankMsg;
pub use context::BankContext;
pub use registry::BankRegistry;
pub(crate) use runtime::Banks;
pub use supervisor::{BankSupervisor, SupervisorMsg};
pub use view::BankView;
