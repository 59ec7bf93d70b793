//! The real node behind the real tonic server on loopback, driven through the real client.

mod support;

mod access;
mod admission;
mod bad_input;
mod banks;
mod http_json;
mod learning;
mod memories;
mod observability;
mod review;
mod transport;
