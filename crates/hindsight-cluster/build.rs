//! Compiles the node-to-node protos in pure Rust (protox), so building needs no system `protoc`.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    println!(
        "cargo:rerun-if-changed={}",
        root.join("hindsight/cluster").display()
    );
    let fds = protox::compile(["hindsight/cluster/v1/raft.proto"], [&root])?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
