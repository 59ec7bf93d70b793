//! Compiles the protos under `proto/` in pure Rust (protox), so building needs no system `protoc`.

use std::path::PathBuf;

use prost::Message;

const PROTOS: &[&str] = &[
    "hindsight/v1/memory.proto",
    "hindsight/v1/memory_service.proto",
    "hindsight/v1/bank_service.proto",
    "hindsight/v1/node_service.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    println!("cargo:rerun-if-changed={}", root.display());

    let fds = protox::compile(PROTOS, [&root])?;
    // Reflection serves this set; prost-build only writes one when it runs protoc itself.
    std::fs::write(
        out_dir.join("hindsight_descriptor.bin"),
        fds.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .btree_map(".")
        // The HTTP/JSON edge speaks these same messages, and its OpenAPI document describes them.
        .type_attribute(
            ".hindsight.v1",
            "#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)] \
             #[serde(default, deny_unknown_fields)]",
        )
        .compile_fds(fds)?;
    Ok(())
}
