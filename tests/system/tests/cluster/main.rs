//! Nodes of one cluster in this process, each with its own store on disk and its own gRPC and
//! HTTP servers on loopback: every node-to-node message crosses a real gRPC connection.
//! `tests/chaos/run` does the same with separate processes, kill -9 and partitions.

mod harness;

mod embedding;
mod failover;
mod groups;
mod membership;
mod partitions;
mod replication;
mod review;
mod security;
