//! No library: the tests under `tests/` start whole clusters of real nodes, which no single
//! crate's tests should carry (cargo needs a target besides them).
