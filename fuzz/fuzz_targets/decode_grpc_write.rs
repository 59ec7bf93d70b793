//! A gRPC Write or WriteBatch body as the server receives it: protobuf decoding, the conversion to
//! the domain request, then the node's validation. Any input must end in a value or an error that
//! becomes INVALID_ARGUMENT, never a panic in the request path.

#![no_main]

use hindsight_client::pb;
use hindsight_core::{Limits, WriteRequest};
use libfuzzer_sys::fuzz_target;
use prost::Message;

fn check(item: pb::WriteRequest, limits: &Limits) {
    if let Ok(mut request) = WriteRequest::try_from(item) {
        let _ = request.validate(limits);
    }
}

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    if let Ok(request) = pb::WriteRequest::decode(data) {
        check(request, &limits);
    }
    if let Ok(batch) = pb::WriteBatchRequest::decode(data) {
        for item in batch.items {
            check(item, &limits);
        }
    }
});
