//! [`ApiError`]: every refusal of the API as the one JSON envelope, its status and
//! retryability from [`abr_protocol::codes`]; [`ApiJson`] and [`ApiPath`]: a JSON body and
//! path parameters whose rejections are envelopes too; [`is_json`]: the one check of a JSON
//! content type.

use std::time::Duration;

use abr_core::{CoreError, ProviderErrorKind};
use abr_engine::EngineError;
use abr_protocol::codes::{self, ErrorCode};
use abr_protocol::{ErrorBody, ErrorEnvelope};
use axum::Json;
use axum::body::Bytes;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::PathRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::json_detail::{ReadError, read_slice};

/// An error answered as the JSON envelope with a status code.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
    retry_after: Option<Duration>,
}

impl ApiError {
    /// An error with `code` (its status and retryability from [`abr_protocol::codes`]) and
    /// `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::from_u16(code.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body: code.body(message),
            retry_after: None,
        }
    }

    /// The error's code.
    pub fn code(&self) -> &str {
        &self.body.code
    }

    /// With a `Retry-After`.
    #[must_use]
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    pub(crate) fn unauthorized() -> Self {
        Self::new(codes::UNAUTHORIZED, "a valid bearer token is required")
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        Self::from(EngineError::Core(e))
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        // One table: the code decides the status.
        let status = StatusCode::from_u16(e.error_code().status)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = match &e {
            EngineError::Core(CoreError::Provider(p)) if p.kind() == ProviderErrorKind::Busy => {
                Some(p.retry_after().unwrap_or(Duration::from_secs(2)))
            }
            EngineError::CaptureLimit(_) => Some(Duration::from_secs(10)),
            _ => e.retry_after(),
        };
        let mut body = e.to_body();
        // A panicked job's message says what may have happened (a post: it may have been
        // published); every other internal error's is the log's.
        // A misconfigured store's message names the setting to fix (its own words, no value).
        let told = matches!(e, EngineError::JobPanicked(_))
            || body.code == codes::STORE_MISCONFIGURED.code;
        if status == StatusCode::INTERNAL_SERVER_ERROR && !told {
            tracing::error!(code = body.code, "internal error: {e}");
            body.message = "internal error".into();
        }
        Self {
            status,
            body,
            retry_after,
        }
    }
}

/// The code of an error answer, set on the response by [`ApiError`]'s writer for the
/// metrics layer to count (the body is not read again).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnsweredCode(pub(crate) &'static str);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = codes::ALL
            .iter()
            .find(|c| c.code == self.body.code)
            .map(|c| c.code);
        let mut response = (self.status, Json(ErrorEnvelope { error: self.body })).into_response();
        if let Some(code) = code {
            // For the metrics layer: the code counted without reading the body again.
            response.extensions_mut().insert(AnsweredCode(code));
        }
        if let Some(after) = self.retry_after {
            let secs = after.as_secs().max(1);
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Whether `headers` say the body is JSON: the media type of `Content-Type` (before any
/// `;` parameter, trimmed) is `application/json`, in any case. The one check, for what a
/// client sends (an API body, `/mcp`'s message) and for an error answer that may stay as
/// it is (the router's, `/mcp`'s).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// A JSON body whose every rejection is a JSON envelope, and whose error messages never echo
/// input values (serde quotes them).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::new(
                codes::UNSUPPORTED_MEDIA_TYPE,
                "the body must be JSON (Content-Type: application/json)",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(codes::PAYLOAD_TOO_LARGE, "the request body is too large")
            } else {
                ApiError::new(codes::INVALID_BODY, "the request body could not be read")
            }
        })?;
        read_slice(&bytes).map(ApiJson).map_err(ApiError::from)
    }
}

impl From<ReadError> for ApiError {
    /// JSON of the wrong shape (a missing or unknown field, a wrong type) is a 422 naming the
    /// field and where it is; a body that is not JSON is a 400.
    fn from(e: ReadError) -> Self {
        if e.syntax {
            ApiError::new(
                codes::INVALID_JSON,
                format!("the body is not valid JSON: {e}"),
            )
        } else {
            ApiError::new(
                codes::INVALID_REQUEST,
                format!("the request does not match the API: {e}"),
            )
        }
    }
}

/// A JSON body is described as `T`'s schema, with the refusals of a body.
impl<T: schemars::JsonSchema> aide::operation::OperationInput for ApiJson<T> {
    fn operation_input(
        ctx: &mut aide::generate::GenContext,
        operation: &mut aide::openapi::Operation,
    ) {
        <Json<T> as aide::operation::OperationInput>::operation_input(ctx, operation);
        crate::openapi::add_errors(operation, crate::openapi::WITH_A_BODY);
    }
}

/// Path parameters whose every rejection (a segment that is not UTF-8, one that does not
/// parse) is the envelope: a 422 `invalid_request` that never repeats the segment.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(Self(value)),
            Err(rejection) => Err(path_rejection(&rejection)),
        }
    }
}

/// Path parameters are described from the route's path (named there); a bad one is refused.
impl<T> aide::operation::OperationInput for ApiPath<T> {
    fn operation_input(
        _: &mut aide::generate::GenContext,
        operation: &mut aide::openapi::Operation,
    ) {
        crate::openapi::add_errors(operation, &[codes::INVALID_REQUEST]);
    }
}

/// An error's answers are described per route (its codes), not by the type.
impl aide::operation::OperationOutput for ApiError {
    type Inner = Self;
}

/// The envelope of a path that could not be read.
pub(crate) fn path_rejection(rejection: &PathRejection) -> ApiError {
    match rejection {
        PathRejection::FailedToDeserializePathParams(e)
            if matches!(e.kind(), ErrorKind::InvalidUtf8InPathParam { .. }) =>
        {
            ApiError::new(codes::INVALID_REQUEST, "the path is not valid UTF-8 text")
        }
        _ => ApiError::new(
            codes::INVALID_REQUEST,
            "the path's parameters do not match the API",
        ),
    }
}
