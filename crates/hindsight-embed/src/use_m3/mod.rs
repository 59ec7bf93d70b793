//! Google's Universal Sentence Encoder multilingual v3 in pure Rust.

mod gemm;
mod gemm_i8;
mod model;
mod normalizer;
mod sp_model;
mod token_cache;
mod tokenizer;
mod trie;

pub use model::{UseM3Embedder, USE_M3_DIM, USE_M3_MODEL_ID};
pub use tokenizer::SentencePieceTokenizer;
