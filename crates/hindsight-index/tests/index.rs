//! Integration tests, one module per index.

#[path = "index/bank.rs"]
mod bank;
#[path = "index/bm25.rs"]
mod bm25;
#[path = "index/common.rs"]
mod common;
#[path = "index/entity.rs"]
mod entity;
#[path = "index/memory.rs"]
mod memory;
#[path = "index/time.rs"]
mod time;
#[path = "index/vector.rs"]
mod vector;
