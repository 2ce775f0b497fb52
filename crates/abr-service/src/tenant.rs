//! The tenant of a request: the `x-tenant-id` header, else a body field of the request's
//! own (`tenantId`, `workspaceId`), else `default`. Every caller holds the runner's bearer
//! token: the header is the orchestrator's word for its own authenticated user.

use abr_protocol::codes;
use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::api_error::ApiError;

/// The tenant when a request names none.
pub(crate) const DEFAULT_TENANT: &str = "default";

/// The tenant of a request: the `x-tenant-id` header, if any.
#[derive(Debug, Clone)]
pub(crate) struct TenantHeader(pub(crate) Option<String>);

impl TenantHeader {
    /// The tenant: the header, else `body` (the request's own field), else `default`. A
    /// header and a body field that disagree are refused.
    pub(crate) fn resolve(self, body: Option<&str>) -> Result<String, ApiError> {
        match (self.0, body) {
            (Some(h), Some(b)) if h != b => Err(ApiError::new(
                codes::INVALID_REQUEST,
                "x-tenant-id and the tenant in the body (tenantId or workspaceId) disagree",
            )),
            (Some(h), _) => Ok(h),
            (None, Some(b)) => Ok(b.to_owned()),
            (None, None) => Ok(DEFAULT_TENANT.to_owned()),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for TenantHeader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        one_header(&parts.headers, "x-tenant-id").map(Self)
    }
}

/// The value of a header that may appear at most once, as UTF-8.
pub(crate) fn one_header(headers: &HeaderMap, name: &str) -> Result<Option<String>, ApiError> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Ok(None),
        (Some(v), None) => v
            .to_str()
            .map(|v| Some(v.trim().to_owned()))
            .map_err(|_| ApiError::new(codes::INVALID_REQUEST, format!("{name} is not text"))),
        (Some(_), Some(_)) => Err(ApiError::new(
            codes::INVALID_REQUEST,
            format!("{name} is given more than once"),
        )),
    }
}
