//! Who a request acts as: [`Caller`], the principal its bearer token named (the auth layer
//! put it in the request's extensions) and the tenant the request names (`x-tenant-id`, or
//! a body field of the request's own: `tenantId`, `workspaceId`). A key bound to one tenant
//! acts for it whatever the request names, and a request naming another is refused
//! (`403 tenant_forbidden`); an operator's key acts for the tenant named, else `default`.

use std::sync::Arc;

use abr_core::principal::{Actor, Principal};
use abr_protocol::codes;
use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::api_error::ApiError;

/// The key id of the principal a request the runner's relay link hands over acts as (the
/// hub authenticated it; see `auth.rs`).
pub(crate) const RELAY_KEY_ID: &str = "relay-hub";

/// Who a request acts as.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    principal: Arc<Principal>,
    header: Option<String>,
    relayed: bool,
}

impl Caller {
    /// The actor: the principal acting for the tenant the request names (the header, else
    /// `body`, the request's own field). A header and a body field that disagree are
    /// refused, before anything else.
    pub(crate) fn actor(&self, body: Option<&str>) -> Result<Actor, ApiError> {
        let named = match (self.header.as_deref(), body) {
            (Some(h), Some(b)) if h != b => {
                return Err(ApiError::new(
                    codes::INVALID_REQUEST,
                    "x-tenant-id and the tenant in the body (tenantId or workspaceId) disagree",
                ));
            }
            (Some(h), _) => Some(h),
            (None, b) => b,
        };
        let actor = self.principal.act_for(named)?;
        crate::traces::propagate::record_tenant(actor.tenant());
        Ok(actor)
    }

    /// The principal.
    pub(crate) fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Whether the request came from the hub over this runner's relay link.
    pub(crate) fn relayed(&self) -> bool {
        self.relayed
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        // Only the auth layer puts it there: a route outside it has no caller.
        let principal = parts
            .extensions
            .get::<Arc<Principal>>()
            .cloned()
            .ok_or_else(ApiError::unauthorized)?;
        let header = one_header(&parts.headers, "x-tenant-id")?;
        abr_core::check_tenant_id("x-tenant-id", header.as_deref())?;
        let relayed = parts.extensions.get::<crate::relay::Relayed>().is_some();
        Ok(Self {
            principal,
            header,
            relayed,
        })
    }
}

impl aide::operation::OperationInput for Caller {
    fn operation_input(
        _: &mut aide::generate::GenContext,
        operation: &mut aide::openapi::Operation,
    ) {
        crate::openapi::keyed(operation);
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
