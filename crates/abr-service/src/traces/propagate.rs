//! W3C Trace Context over the hops a call takes: a caller's `traceparent` makes the
//! request's span its child; the hub's relay frame and a replica's forwarding hop carry the
//! current span's, so that the runner or the owner continues the same trace. With traces
//! off no span has a context, and nothing is added.

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The headers of W3C Trace Context.
pub(crate) const HEADERS: [&str; 2] = ["traceparent", "tracestate"];

/// The trace a caller's headers continue, if they name a valid one.
fn parent_of(headers: &HeaderMap) -> Option<opentelemetry::Context> {
    if !headers.contains_key(HEADERS[0]) {
        return None;
    }
    let context = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    context.span().span_context().is_valid().then_some(context)
}

/// The current span's Trace Context as headers (none when traces are off or the span is
/// not sampled in).
pub(crate) fn current() -> HeaderMap {
    let mut headers = HeaderMap::new();
    let context = tracing::Span::current().context();
    if context.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(&mut headers));
    }
    headers
}

/// `headers` with the caller's Trace Context replaced by the current span's; with traces
/// off here, the caller's goes on as it came (the next hop may trace).
pub(crate) fn replace_with_current(headers: &mut HeaderMap) {
    let current = current();
    if current.is_empty() {
        return;
    }
    for name in HEADERS {
        headers.remove(name);
    }
    headers.extend(current);
}

/// The Trace Context a relayed call carries to its runner: the current span's, or with
/// traces off here the caller's as it came.
pub(crate) fn for_relay(incoming: &HeaderMap) -> Vec<(String, String)> {
    let mut headers = HeaderMap::new();
    for name in HEADERS {
        for value in incoming.get_all(name) {
            headers.append(name, value.clone());
        }
    }
    replace_with_current(&mut headers);
    headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

/// The span of one HTTP request (`request`, named `METHOD /route/{template}`), the child
/// of the caller's `traceparent` when it names one. Its status and the caller's tenant are
/// recorded on it as they are known; never a path with ids, a query or a header value.
pub(crate) async fn request_span(request: Request, next: Next) -> Response {
    let method = request.method().as_str().to_owned();
    let route = crate::metrics::route_of(&request);
    let span = tracing::info_span!(
        target: super::TARGET,
        "request",
        otel.name = format!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
        tenant = tracing::field::Empty,
    );
    if let Some(parent) = parent_of(request.headers()) {
        // Refused only when the span is not traced at all: nothing to continue then.
        let _ = span.set_parent(parent);
    }
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    response
}

/// Records the tenant the caller acts for on the current request's span.
pub(crate) fn record_tenant(tenant: &str) {
    tracing::Span::current().record("tenant", tenant);
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_valid_traceparent_is_continued_and_garbage_is_not() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        );
        let parent = parent_of(&headers).unwrap();
        assert_eq!(
            parent.span().span_context().trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        for bad in [
            "garbage",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            headers.insert("traceparent", HeaderValue::from_static(bad));
            assert!(parent_of(&headers).is_none(), "{bad}");
        }
        assert!(parent_of(&HeaderMap::new()).is_none());
    }

    #[test]
    fn with_traces_on_the_next_hop_continues_this_span_not_the_callers() {
        use opentelemetry::trace::TracerProvider as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        let caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let mut incoming = HeaderMap::new();
        incoming.insert("traceparent", HeaderValue::from_static(caller));
        incoming.insert("tracestate", HeaderValue::from_static("vendor=1"));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request");
            let _ = span.set_parent(parent_of(&incoming).unwrap());
            span.in_scope(|| {
                let mut hop = incoming.clone();
                replace_with_current(&mut hop);
                let sent = hop.get("traceparent").unwrap().to_str().unwrap();
                assert!(
                    sent.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
                    "{sent}"
                );
                assert!(
                    !sent.contains("b7ad6b7169203331"),
                    "this span's id, not the caller's"
                );
                assert_eq!(hop.get("tracestate").unwrap(), "vendor=1");
                let relayed = for_relay(&incoming);
                assert_eq!(relayed[0].0, "traceparent");
                assert_eq!(relayed[0].1, sent);
            });
        });
    }

    #[test]
    fn with_traces_off_nothing_is_injected_and_a_callers_context_goes_on() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        );
        headers.insert("tracestate", HeaderValue::from_static("k=v"));
        let before = headers.clone();
        assert!(current().is_empty());
        replace_with_current(&mut headers);
        assert_eq!(headers, before);
    }
}
