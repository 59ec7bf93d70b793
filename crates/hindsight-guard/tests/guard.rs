//! Integration tests of the write-time screening, one module per kind of attack (and one for
//! the benign memories that must stay clean).

#[path = "guard/common.rs"]
mod common;

#[path = "guard/benign.rs"]
mod benign;
#[path = "guard/control_weakening.rs"]
mod control_weakening;
#[path = "guard/decoding.rs"]
mod decoding;
#[path = "guard/hidden_markup.rs"]
mod hidden_markup;
#[path = "guard/persona.rs"]
mod persona;
#[path = "guard/split_writes.rs"]
mod split_writes;
