//! A JSON request body as the HTTP edge reads it (serde_json over the same protobuf types, which
//! refuse unknown fields), then the conversion and validation the gRPC path shares. Every body is
//! tried as each of the three request types, since the edge picks the type from the route and a
//! client can send any bytes to any route.

#![no_main]

use hindsight_client::pb;
use hindsight_core::{Limits, RecallRequest, WriteRequest};
use libfuzzer_sys::fuzz_target;

fn check_write(item: pb::WriteRequest, limits: &Limits) {
    if let Ok(mut request) = WriteRequest::try_from(item) {
        let _ = request.validate(limits);
    }
}

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    if let Ok(request) = serde_json::from_slice::<pb::WriteRequest>(data) {
        check_write(request, &limits);
    }
    if let Ok(batch) = serde_json::from_slice::<pb::WriteBatchRequest>(data) {
        for item in batch.items {
            check_write(item, &limits);
        }
    }
    if let Ok(request) = serde_json::from_slice::<pb::RecallRequest>(data) {
        if let Ok(mut request) = RecallRequest::try_from(request) {
            let _ = request.validate(&limits);
        }
    }
});
