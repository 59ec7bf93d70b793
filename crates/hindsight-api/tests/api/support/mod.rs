//! The shared harness: a real node behind the real servers on loopback and its client (from
//! `hindsight-testkit`, which the MCP tests use too), and the helpers the API's topics use to
//! build requests and read answers.

use hindsight_api::{pb, ClientError};
use hindsight_core::{MemoryId, Provenance, SourceKind, Timestamp, WriteRequest};
use tonic::Code;

pub(crate) use hindsight_testkit::{bank, http_get, http_post_json, http_send, stored, Harness};

#[path = "../../../../hindsight-node/tests/support/http_request.rs"]
pub(crate) mod http_request;

pub(crate) fn write_request(bank_name: &str, content: &str) -> WriteRequest {
    let mut request = WriteRequest::new(
        bank(bank_name),
        content,
        Provenance::from_source(SourceKind::User),
    );
    request.occurred_at = Some(Timestamp::parse_rfc3339("2026-03-02T09:00:00Z").unwrap());
    request
}

pub(crate) fn wire_write(bank_name: &str, content: &str) -> pb::WriteRequest {
    pb::WriteRequest {
        bank: bank_name.to_string(),
        content: content.to_string(),
        provenance: Some(pb::Provenance {
            source: "user".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) fn wire_recall(banks: &[&str], query: &str) -> pb::RecallRequest {
    pb::RecallRequest {
        banks: banks.iter().map(|b| b.to_string()).collect(),
        query: query.to_string(),
        ..Default::default()
    }
}

pub(crate) fn code<T: std::fmt::Debug>(result: Result<T, ClientError>) -> Code {
    result
        .expect_err("the call should fail")
        .code()
        .expect("the server answered")
}

pub(crate) fn wire_code<T: std::fmt::Debug>(result: Result<T, tonic::Status>) -> (Code, String) {
    let status = result.expect_err("the call should fail");
    (status.code(), status.message().to_string())
}

pub(crate) fn unknown_id() -> MemoryId {
    MemoryId::new(1_700_000_000_000, 42)
}
