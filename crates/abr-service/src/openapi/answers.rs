//! Answers a handler builds by hand, described as what they are: a server-sent event
//! stream of JSON values, a page image, an HTML page for a person, a WebSocket handshake.

use std::marker::PhantomData;

use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response, SchemaObject, StatusCode};
use aide::operation::OperationOutput;
use axum::response::IntoResponse;
use axum::response::sse::Sse;
use schemars::JsonSchema;

/// An event stream answer (`text/event-stream`): each event's `data` is the JSON of `T`.
pub(crate) struct EventStream<S, T>(Sse<S>, PhantomData<fn() -> T>);

impl<S, T> EventStream<S, T> {
    /// The stream `sse`, described as carrying `T`s.
    pub(crate) fn new(sse: Sse<S>) -> Self {
        Self(sse, PhantomData)
    }
}

impl<S, T> IntoResponse for EventStream<S, T>
where
    Sse<S>: IntoResponse,
{
    fn into_response(self) -> axum::response::Response {
        self.0.into_response()
    }
}

impl<S, T: JsonSchema> OperationOutput for EventStream<S, T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, _: &mut Operation) -> Option<Response> {
        let data = ctx.schema.subschema_for::<T>();
        Some(answer(
            "A server-sent event stream: each event's `data` is one JSON value \
             (`contentSchema`); `id` (where given) resumes it with `Last-Event-ID`.",
            &[(
                "text/event-stream",
                schemars::json_schema!({
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": data,
                }),
            )],
        ))
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        Self::operation_response(ctx, operation)
            .map(|r| (Some(StatusCode::Code(200)), r))
            .into_iter()
            .collect()
    }
}

/// A page image answer (a replay frame, a screenshot): JPEG, or PNG for screenshots kept
/// before frames were redacted JPEGs.
#[derive(Debug)]
pub(crate) struct Image;

impl OperationOutput for Image {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<Response> {
        let image =
            |kind: &str| schemars::json_schema!({"type": "string", "contentMediaType": kind});
        Some(answer(
            "The image (never cached, never sniffed: `nosniff`, a `sandbox` CSP).",
            &[
                ("image/jpeg", image("image/jpeg")),
                ("image/png", image("image/png")),
            ],
        ))
    }
}

/// A file answer (an artifact's bytes): its sniffed type, as an attachment.
#[derive(Debug)]
pub(crate) struct FileBody;

impl OperationOutput for FileBody {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<Response> {
        Some(answer(
            "The file's bytes, as its sniffed type (`mediaType`: one of \
             `ABR_ARTIFACT_TYPES`), `Content-Disposition: attachment`, never cached, never \
             sniffed, a `sandbox` CSP.",
            &[(
                "*/*",
                schemars::json_schema!({"type": "string", "format": "binary"}),
            )],
        ))
    }
}

/// An HTML page answer (the live view, the approval page).
#[derive(Debug)]
pub(crate) struct Page;

impl OperationOutput for Page {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<Response> {
        Some(answer(
            "An HTML page for a person (strict CSP, no referrer, never framed).",
            &[("text/html", schemars::json_schema!({"type": "string"}))],
        ))
    }
}

/// An answer in JSON (`T`), or in markdown for a caller that asked for it with
/// `Accept: text/markdown` ([`wants_markdown`]).
#[derive(Debug)]
pub(crate) enum JsonOrMarkdown<T> {
    /// The JSON form.
    Json(T),
    /// The markdown form.
    Markdown(String),
}

impl<T: serde::Serialize> IntoResponse for JsonOrMarkdown<T> {
    fn into_response(self) -> axum::response::Response {
        use axum::http::{HeaderValue, header};
        match self {
            Self::Json(value) => axum::Json(value).into_response(),
            Self::Markdown(text) => (
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/markdown; charset=utf-8"),
                    ),
                    (
                        header::X_CONTENT_TYPE_OPTIONS,
                        HeaderValue::from_static("nosniff"),
                    ),
                ],
                text,
            )
                .into_response(),
        }
    }
}

impl<T: JsonSchema> OperationOutput for JsonOrMarkdown<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, _: &mut Operation) -> Option<Response> {
        let json = ctx.schema.subschema_for::<T>();
        Some(answer(
            "JSON by default; markdown (the same facts, a table for a person or a model) \
             with `Accept: text/markdown`.",
            &[
                ("application/json", json),
                ("text/markdown", schemars::json_schema!({"type": "string"})),
            ],
        ))
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        Self::operation_response(ctx, operation)
            .map(|r| (Some(StatusCode::Code(200)), r))
            .into_iter()
            .collect()
    }
}

/// Whether the `Accept` values ask for markdown: one of their media ranges is
/// `text/markdown` (any case) with a quality above zero.
pub(crate) fn wants_markdown(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case("text/markdown") && !refused
        })
}

/// The metrics exposition: the OpenMetrics text format Prometheus scrapes.
#[derive(Debug)]
pub(crate) struct MetricsText;

impl OperationOutput for MetricsText {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<Response> {
        Some(answer(
            "The runner's metrics in the OpenMetrics 1.0 text format (what Prometheus \
             scrapes): counters, histograms and gauges whose labels are never an id.",
            &[(
                "application/openmetrics-text",
                schemars::json_schema!({"type": "string"}),
            )],
        ))
    }
}

/// An answer described by `description`, with a body of each media type given.
fn answer(description: &str, media: &[(&str, schemars::Schema)]) -> Response {
    Response {
        description: description.to_owned(),
        content: media
            .iter()
            .map(|(kind, schema)| {
                let body = MediaType {
                    schema: Some(SchemaObject {
                        json_schema: schema.clone(),
                        example: None,
                        external_docs: None,
                    }),
                    ..Default::default()
                };
                ((*kind).to_owned(), body)
            })
            .collect(),
        ..Default::default()
    }
}

/// A WebSocket answer (`101 Switching Protocols`): the live view's screencast, a relay
/// runner's link.
#[derive(Debug)]
pub(crate) struct Socket;

impl OperationOutput for Socket {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<Response> {
        Some(Response {
            description: "The WebSocket handshake is accepted: the socket is open.".into(),
            ..Default::default()
        })
    }
}
