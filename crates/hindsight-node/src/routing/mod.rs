//! Between nodes: joining the cluster, the actor link that carries review hints, and moving banks
//! in and out as export pages.

pub(crate) mod cluster;
pub mod link;
pub(crate) mod routes;
pub mod transfer;
