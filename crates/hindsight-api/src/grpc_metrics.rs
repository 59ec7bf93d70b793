//! Count and latency of every gRPC call per service, method and status code, for `/metrics`: a
//! tower layer around the gRPC routes. A call is timed until its last frame is sent, and its code
//! is read where gRPC puts it (the headers of an error answered at once, else the trailers).
//!
//! Only the node's own services (`hindsight.v1.*`) and the health check are measured: reflection
//! and health `Watch` are streams whose lifetime says nothing about latency. A method no service
//! has (UNIMPLEMENTED) is counted as `unknown`, so that callers cannot grow the label set.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::http::{HeaderMap, Request, Response};
use http_body::{Body, Frame, SizeHint};
use tower_layer::Layer;
use tower_service::Service;

/// Adds [`GrpcMetrics`] to a gRPC server (`Server::builder().layer(GrpcMetricsLayer)`).
#[derive(Clone, Copy, Debug, Default)]
pub struct GrpcMetricsLayer;

impl<S> Layer<S> for GrpcMetricsLayer {
    type Service = GrpcMetrics<S>;

    fn layer(&self, inner: S) -> GrpcMetrics<S> {
        GrpcMetrics { inner }
    }
}

/// The service [`GrpcMetricsLayer`] wraps the routes in.
#[derive(Clone, Debug)]
pub struct GrpcMetrics<S> {
    inner: S,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for GrpcMetrics<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
{
    type Response = Response<MeteredBody<ResBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let call = Call::of(request.uri().path());
        let started = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let (mut parts, body) = answer.await?.into_parts();
            blame_undecodable_requests_on_the_caller(&mut parts.headers);
            let mut pending = call.map(|call| Pending { call, started });
            if let Some(code) = grpc_status(&parts.headers) {
                // Trailers-only: the call is over before any body.
                if let Some(pending) = pending.take() {
                    pending.finish(code);
                }
            }
            Ok(Response::from_parts(
                parts,
                MeteredBody {
                    inner: body,
                    pending,
                },
            ))
        })
    }
}

/// Help texts of the request series: this layer's and the HTTP API's.
pub(crate) fn describe() {
    metrics::describe_counter!(
        "hindsight_grpc_requests_total",
        "gRPC calls by service, method and status code."
    );
    metrics::describe_histogram!(
        "hindsight_grpc_request_duration_seconds",
        "gRPC call latency until the last frame, by service, method and status code."
    );
    metrics::describe_counter!(
        "hindsight_http_requests_total",
        "HTTP/JSON API requests by method, route and status."
    );
    metrics::describe_histogram!(
        "hindsight_http_request_duration_seconds",
        "HTTP/JSON API request latency by method, route and status."
    );
}

/// The labels of a measured call.
#[derive(Debug)]
struct Call {
    service: String,
    method: String,
}

impl Call {
    /// The call a request path (`/package.Service/Method`) names, if it is one that is measured.
    fn of(path: &str) -> Option<Call> {
        let (service, method) = path.strip_prefix('/')?.split_once('/')?;
        let measured = service.starts_with("hindsight.v1.")
            || (service == "grpc.health.v1.Health" && method == "Check");
        measured.then(|| Call {
            service: service.to_string(),
            method: method.to_string(),
        })
    }
}

/// A call whose outcome is not recorded yet.
#[derive(Debug)]
struct Pending {
    call: Call,
    started: Instant,
}

impl Pending {
    fn finish(self, code: u16) {
        let Call {
            service,
            mut method,
        } = self.call;
        if code == UNIMPLEMENTED {
            method = "unknown".to_string();
        }
        let labels = [
            ("service", service),
            ("method", method),
            ("code", code_name(code).to_string()),
        ];
        metrics::counter!("hindsight_grpc_requests_total", &labels).increment(1);
        metrics::histogram!("hindsight_grpc_request_duration_seconds", &labels)
            .record(self.started.elapsed().as_secs_f64());
    }
}

/// A response body that records its call when the trailers go out (or when it is dropped early,
/// which means the client went away).
#[derive(Debug)]
pub struct MeteredBody<B> {
    inner: B,
    pending: Option<Pending>,
}

impl<B> Body for MeteredBody<B>
where
    B: Body + Unpin,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame.trailers_ref().and_then(grpc_status) {
                    if let Some(pending) = this.pending.take() {
                        pending.finish(code);
                    }
                }
            }
            Poll::Ready(Some(Err(_))) => {
                if let Some(pending) = this.pending.take() {
                    pending.finish(INTERNAL);
                }
            }
            // An end without a status in the trailers: gRPC says that is not OK.
            Poll::Ready(None) => {
                if let Some(pending) = this.pending.take() {
                    pending.finish(UNKNOWN);
                }
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for MeteredBody<B> {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            pending.finish(CANCELLED);
        }
    }
}

const CANCELLED: u16 = 1;
const UNKNOWN: u16 = 2;
const UNIMPLEMENTED: u16 = 12;
const INTERNAL: u16 = 13;

/// tonic answers a request body that is not the method's message (or is longer than the decode
/// limit) with INTERNAL or OUT_OF_RANGE, which tell a caller the server failed. It is the
/// request that is wrong: such an answer, always trailers-only, becomes INVALID_ARGUMENT with
/// tonic's message kept.
fn blame_undecodable_requests_on_the_caller(headers: &mut HeaderMap) {
    const INTERNAL: u16 = 13;
    const OUT_OF_RANGE: u16 = 11;
    let Some(code @ (INTERNAL | OUT_OF_RANGE)) = grpc_status(headers) else {
        return;
    };
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let undecodable = match code {
        INTERNAL => {
            message.starts_with("failed%20to%20decode") || message.starts_with("failed to decode")
        }
        _ => {
            message.contains("decoded%20message%20length%20too%20large")
                || message.contains("decoded message length too large")
        }
    };
    if undecodable {
        headers.insert("grpc-status", axum::http::HeaderValue::from_static("3"));
    }
}

fn grpc_status(headers: &HeaderMap) -> Option<u16> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

/// The canonical name of a gRPC status code, as other gRPC metrics spell it.
fn code_name(code: u16) -> &'static str {
    match code {
        0 => "OK",
        1 => "Canceled",
        2 => "Unknown",
        3 => "InvalidArgument",
        4 => "DeadlineExceeded",
        5 => "NotFound",
        6 => "AlreadyExists",
        7 => "PermissionDenied",
        8 => "ResourceExhausted",
        9 => "FailedPrecondition",
        10 => "Aborted",
        11 => "OutOfRange",
        12 => "Unimplemented",
        13 => "Internal",
        14 => "Unavailable",
        15 => "DataLoss",
        16 => "Unauthenticated",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_the_node_services_and_the_health_check_only() {
        let call = Call::of("/hindsight.v1.MemoryService/Recall").unwrap();
        assert_eq!(call.service, "hindsight.v1.MemoryService");
        assert_eq!(call.method, "Recall");
        assert!(Call::of("/grpc.health.v1.Health/Check").is_some());
        assert!(Call::of("/grpc.health.v1.Health/Watch").is_none());
        assert!(Call::of("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo").is_none());
        assert!(Call::of("/nonsense").is_none());
    }

    #[test]
    fn reads_the_status_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(grpc_status(&headers), None);
        headers.insert("grpc-status", "5".parse().unwrap());
        assert_eq!(grpc_status(&headers), Some(5));
        assert_eq!(code_name(5), "NotFound");
        assert_eq!(code_name(99), "Unknown");
    }
}
