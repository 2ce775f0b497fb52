//! Interactive capture and probe messages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{AgentSessionState, ScopeReport, SessionScopeSpec};

/// `POST /v1/capture/start`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureStartRequest {
    /// Tenant (workspace) the capture is bound to.
    pub workspace_id: String,
    /// Account within the workspace the capture is bound to.
    pub account_id: String,
    /// Platform (strategy id) to sign in to.
    pub platform: String,
    /// An extra scope applied to the exported session after the platform's own: it can only
    /// narrow, never widen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<SessionScopeSpec>,
}

/// Answer to [`CaptureStartRequest`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureStartResponse {
    /// Management credential: finishes, cancels and reads the capture. Keep it server-side.
    pub capture_id: String,
    /// URL of the live view to embed for the user. It carries a different token that can
    /// only show the browser.
    pub live_view_url: String,
    /// When the capture expires and its browser is released.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub expires_at: OffsetDateTime,
}

impl std::fmt::Debug for CaptureStartResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureStartResponse")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// `POST /v1/capture/finish` and `POST /v1/capture/cancel`: the capture and its binding.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureRef {
    /// The capture id returned by start.
    pub capture_id: String,
    /// Must equal the start request's workspace id.
    pub workspace_id: String,
    /// Must equal the start request's account id.
    pub account_id: String,
}

impl std::fmt::Debug for CaptureRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureRef")
            .field("workspace_id", &self.workspace_id)
            .field("account_id", &self.account_id)
            .finish_non_exhaustive()
    }
}

/// `POST /v1/capture/finish`: the capture, and optionally a session id to keep the
/// captured session under on the runner (`/v1/sessions/{id}`), for the capture's tenant
/// (its `workspaceId`).
///
/// Read through a flat shape with `deny_unknown_fields` (serde cannot refuse unknown fields
/// through the `flatten`ed [`CaptureRef`]).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", from = "CaptureFinishWire")]
pub struct CaptureFinishRequest {
    /// The capture and its binding.
    #[serde(flatten)]
    pub capture: CaptureRef,
    /// Keep the session on the runner under this id as well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_as: Option<String>,
}

/// [`CaptureFinishRequest`] as written: flat, strict.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CaptureFinishWire {
    /// The capture id returned by start.
    capture_id: String,
    /// Must equal the start request's workspace id.
    workspace_id: String,
    /// Must equal the start request's account id.
    account_id: String,
    /// Keep the session on the runner under this id as well.
    #[serde(default)]
    store_as: Option<String>,
}

impl From<CaptureFinishWire> for CaptureFinishRequest {
    fn from(w: CaptureFinishWire) -> Self {
        Self {
            capture: CaptureRef {
                capture_id: w.capture_id,
                workspace_id: w.workspace_id,
                account_id: w.account_id,
            },
            store_as: w.store_as,
        }
    }
}

impl std::fmt::Debug for CaptureFinishRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureFinishRequest")
            .field("capture", &self.capture)
            .field("store_as", &self.store_as)
            .finish()
    }
}

/// Answer to a successful finish: the scoped session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureFinishResponse {
    /// The signed-in session, filtered to the platform's scope.
    pub session: AgentSessionState,
    /// What the scope filter dropped, by reason.
    pub scope_report: ScopeReport,
    /// Where the runner keeps it, when the request said `storeAs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_as: Option<String>,
}

/// Answer to a successful cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureCancelResponse {
    /// Always true: the capture is gone and its browser released.
    pub cancelled: bool,
}

/// Lifecycle state of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CaptureState {
    /// Waiting for the user to sign in.
    Open,
    /// The capture's browser is gone (closed, crashed, or its remote session was replaced
    /// or ended): it can never finish. Cancel it and start a new one.
    BrowserLost,
}

/// `POST /v1/capture/status` (or `GET /v1/capture/{captureId}?workspaceId=…&accountId=…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaptureStatus {
    /// Platform being captured.
    pub platform: String,
    /// Lifecycle state.
    pub state: CaptureState,
    /// When the capture expires.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub expires_at: OffsetDateTime,
}

/// `POST /v1/probe`: is this session still signed in?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProbeRequest {
    /// Platform (strategy id).
    pub platform: String,
    /// Session to check.
    pub session: AgentSessionState,
    /// The tenant (the key's; filled in when absent, another is `403 tenant_forbidden`):
    /// the probe holds one of its concurrent sessions while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    /// Tenant ids, recorded in audit events only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// An extra scope for this probe only, applied after the platform's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<SessionScopeSpec>,
}

/// Answer to [`ProbeRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResponse {
    /// The session is signed in.
    pub authenticated: bool,
    /// The session must be captured again (`!authenticated`).
    pub needs_reauth: bool,
    /// The session as the browser left it, scoped, when authenticated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refreshed_session: Option<AgentSessionState>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_requests_refuse_unknown_fields_also_through_the_flat_finish() {
        let finish: CaptureFinishRequest = serde_json::from_value(serde_json::json!({
            "captureId": "c", "workspaceId": "w", "accountId": "a", "storeAs": "s"
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(finish.capture.capture_id, "c");
        assert_eq!(finish.store_as.as_deref(), Some("s"));
        let back = serde_json::to_value(&finish).unwrap_or_default();
        assert_eq!(back["captureId"], "c");
        assert_eq!(back["storeAs"], "s");
        let refused = [
            serde_json::json!({"captureId": "c", "workspaceId": "w", "accountId": "a", "keep": 1}),
            serde_json::json!({"workspaceId": "w", "accountId": "a", "platform": "p", "readOnly": true}),
            serde_json::json!({"platform": "p", "session": {}, "deep": true}),
        ];
        let errors = [
            serde_json::from_value::<CaptureFinishRequest>(refused[0].clone()).err(),
            serde_json::from_value::<CaptureStartRequest>(refused[1].clone()).err(),
            serde_json::from_value::<ProbeRequest>(refused[2].clone()).err(),
        ];
        for (error, field) in errors.iter().zip(["keep", "readOnly", "deep"]) {
            let message = error.as_ref().map(ToString::to_string).unwrap_or_default();
            assert!(
                message.contains(&format!("unknown field `{field}`")),
                "{field}: {message}"
            );
        }
        let e = serde_json::from_value::<CaptureRef>(serde_json::json!({
            "captureId": "c", "workspaceId": "w", "accountId": "a", "storeAs": "s"
        }))
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `storeAs`"), "{e}");
    }
}
