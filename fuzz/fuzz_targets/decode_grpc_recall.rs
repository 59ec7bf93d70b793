//! A gRPC Recall body as the server receives it: protobuf decoding, the conversion to the domain
//! request, then the node's validation. Any input must end in a value or an error that becomes
//! INVALID_ARGUMENT, never a panic in the request path.

#![no_main]

use hindsight_client::pb;
use hindsight_core::{Limits, RecallRequest};
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = pb::RecallRequest::decode(data) {
        if let Ok(mut request) = RecallRequest::try_from(request) {
            let _ = request.validate(&Limits::default());
        }
    }
});
