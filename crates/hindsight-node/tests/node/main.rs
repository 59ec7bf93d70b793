//! The node's service layer against a real store on disk, real actors and real indexes. The hashing
//! embedder keeps these fast; retrieval quality with the default model is checked by `hindsight eval`.

mod harness;

mod bad_input;
mod config_file;
mod faults;
mod guard;
mod integrity;
mod lifecycle;
mod maintenance;
mod ranking;
mod relevance;
mod residency;
mod review;
mod review_budget;
mod rule_relaxing;
mod supervision;
mod write_and_recall;
