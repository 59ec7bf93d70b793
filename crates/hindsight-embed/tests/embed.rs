//! Integration tests of the embedders, one module per topic. The reference data for them stays in
//! tests/data.

#[path = "embed/common.rs"]
mod common;

#[path = "embed/centring.rs"]
mod centring;
#[path = "embed/openai.rs"]
mod openai;
#[path = "embed/parity.rs"]
mod parity;
#[path = "embed/tokenizer.rs"]
mod tokenizer;
