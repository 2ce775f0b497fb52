//! The outbound relay between a hub (`abr serve`) and runners on users' machines: the token
//! a runner mints to connect, and the frames on its WebSocket.
//!
//! Every frame is one binary WebSocket message: a 4-byte big-endian length, that many bytes
//! of a [`RelayFrame`] as JSON, then the body bytes of a request or response (nothing for
//! the other frames), or the payload of a stream message.
//!
//! Streams carry a WebSocket (the live view's) over the relay: the hub opens one with
//! [`RelayFrame::StreamOpen`], each side sends its messages as [`RelayFrame::StreamData`]
//! (the payload is the frame's body) and either side ends it with
//! [`RelayFrame::StreamClose`]. Every stream of a connection ends with the connection.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ErrorBody, SecretValue};

/// `POST /v1/relay/tokens`: a token for one runner id to open one relay connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelayTokenRequest {
    /// The runner id the token is scoped to (1 to 64 of `A-Z a-z 0-9 . _ -`).
    pub runner_id: String,
}

/// The answer of `POST /v1/relay/tokens`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelayTokenResponse {
    /// The relay token: `Authorization: Bearer <token>` on the connect request. Single use.
    pub token: SecretValue,
    /// The runner id it is scoped to.
    pub runner_id: String,
    /// When it stops opening connections (a connection it opened lives on its heartbeats).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub expires_at: time::OffsetDateTime,
    /// Where to connect with it: `/v1/relay/{runnerId}/connect` (a WebSocket).
    pub connect_path: String,
}

/// The header in which a hub tells a runner who made a forwarded request (JSON of a
/// [`RelayedPrincipal`]). Only the hub sets it: a caller's own is never forwarded.
pub const PRINCIPAL_HEADER: &str = "x-abr-principal";

/// Who made a forwarded request, as the hub authenticated them: the runner acts as this
/// principal, with its role and tenant (an operator is pinned to the runner's tenant).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelayedPrincipal {
    /// The key's id.
    pub key_id: String,
    /// Its holder's name.
    pub name: String,
    /// Its role.
    pub role: crate::Role,
    /// The one tenant it acts for (`None`: every tenant, an operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// It never commits.
    #[serde(default)]
    pub read_only: bool,
}

/// `POST /v1/relay/enrollments` (an operator, or an approver of the tenant): a short-lived,
/// single-use code with which one runner id enrolls at the hub for the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnrollmentRequest {
    /// The runner id the code enrolls (1 to 64 of `A-Z a-z 0-9 . _ -`).
    pub runner_id: String,
    /// The tenant (an operator's; a tenant's key enrolls for its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
}

/// The answer of `POST /v1/relay/enrollments`: the code, shown once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Enrollment {
    /// The runner id it enrolls.
    pub runner_id: String,
    /// The tenant the runner will serve.
    pub tenant_id: String,
    /// The code: `abr up --hub URL --runner-id ID --enroll CODE` on the runner's machine.
    pub code: SecretValue,
    /// When it stops working (it also stops once used).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub expires_at: time::OffsetDateTime,
}

/// `POST /v1/relay/enroll` (no bearer: the code is the credential): a runner trades its
/// enrollment code for its runner credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnrollRequest {
    /// The runner id the code was made for.
    pub runner_id: String,
    /// The enrollment code.
    pub code: SecretValue,
}

/// The answer of `POST /v1/relay/enroll`: the runner's credential, shown once (the runner
/// keeps it in its state directory, `0600`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunnerCredential {
    /// The runner id it connects as.
    pub runner_id: String,
    /// The tenant it serves: only that tenant's keys reach it through the hub.
    pub tenant_id: String,
    /// The credential: the bearer of `POST /v1/relay/tokens` for this runner id only.
    pub token: SecretValue,
}

/// `GET /v1/runners`: the runners connected to the hub that the caller's tenant reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunnersResponse {
    /// By runner id.
    pub runners: Vec<RunnerInfo>,
}

/// One connected runner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunnerInfo {
    /// Its runner id.
    pub runner_id: String,
    /// The machine's name its hello gave (its own word: shown, never trusted).
    pub host: String,
    /// When its socket connected.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub connected_at: time::OffsetDateTime,
    /// When the hub last heard from it (a heartbeat, an answer).
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub last_heartbeat_at: time::OffsetDateTime,
    /// `ok`, `draining` (it takes no new work), `silent` (nothing heard for two heartbeats).
    pub health: RunnerHealth,
    /// The version its hello gave.
    pub version: String,
    /// How it was launched (`terminal`, `background`, ...).
    pub launch: String,
    /// Its answer to the last remote update asked of it on this connection
    /// (`POST /v1/runners/{runnerId}/update`), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
}

/// The answer of `POST /v1/runners/{runnerId}/update`: the runner was asked; what it
/// answered shows in its `update` at `GET /v1/runners` (it restarts on a newer installed
/// release with the same flags, once its running work finished; it refuses an older one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateRequested {
    /// The runner asked.
    pub runner_id: String,
    /// The version it runs now.
    pub version: String,
}

/// A connected runner's health, as the hub sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunnerHealth {
    /// Heard from within two heartbeats, taking work.
    Ok,
    /// Shutting down: it takes no new work.
    Draining,
    /// Nothing heard for two heartbeats (dropped after `dead_after`).
    Silent,
}

/// The runner's first frame on a relay connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelayHello {
    /// The runner id (the one the token was minted for).
    pub runner_id: String,
    /// The machine's name, for display (it decides nothing: a second connection for a
    /// runner id that is connected is refused unless it says `force`).
    pub host: String,
    /// Replace the connected runner with this id.
    #[serde(default)]
    pub force: bool,
    /// The runner's version.
    pub version: String,
    /// How the runner was launched (`foreground`, `background`, ...).
    pub launch: String,
}

/// One header of a relayed request or response.
pub type RelayHeader = (String, String);

/// A frame on a relay connection (`type` names it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum RelayFrame {
    /// Runner → hub, first: who connects.
    Hello(RelayHello),
    /// Hub → runner: the hello was accepted; requests may come.
    Welcome {
        /// The hub's version.
        version: String,
    },
    /// Hub → runner: the connection is refused (a `409` when the same runner id and host
    /// is already connected without `force`); the hub closes it next.
    Refused {
        /// The HTTP status the refusal stands for.
        status: u16,
        /// The error envelope's body.
        error: ErrorBody,
    },
    /// Hub → runner: another connection for the same runner id took this one over
    /// (`force`); the hub closes it next. Do not reconnect.
    Replaced,
    /// Hub → runner: run this API request (the body follows the frame).
    Request {
        /// Unique on the connection.
        id: u64,
        /// HTTP method.
        method: String,
        /// Path and query.
        path: String,
        /// The forwarded headers (never the hub's credentials).
        headers: Vec<RelayHeader>,
    },
    /// Runner → hub: the answer to request `id` (the body follows the frame).
    Response {
        /// The request's id.
        id: u64,
        /// HTTP status.
        status: u16,
        /// Response headers.
        headers: Vec<RelayHeader>,
    },
    /// Runner → hub: request `id` is about to pass its commit point (a post's submit, a
    /// committing step). The runner waits for [`RelayFrame::CommitAck`] before it acts.
    Progress {
        /// The request's id.
        id: u64,
        /// Whether it is committing.
        committing: bool,
    },
    /// Hub → runner: the hub recorded that request `id` is committing.
    CommitAck {
        /// The request's id.
        id: u64,
    },
    /// Runner → hub: the runner is draining; route no new requests to it.
    Draining,
    /// Hub → runner: restart on the release installed where this runner's binary is, with
    /// the same flags, if it is newer (never an older one); the runner answers with
    /// [`RelayFrame::UpdateAnswer`].
    Update,
    /// Runner → hub: what became of [`RelayFrame::Update`].
    UpdateAnswer {
        /// It drains and restarts on the newer release.
        accepted: bool,
        /// What it found and does, in words (`restarting on 0.2.0 (from 0.1.0)`, `refused:
        /// the installed 0.0.9 is older than 0.1.0`).
        message: String,
    },
    /// Hub → runner: open a WebSocket on the runner's own router at `path` (the live view's
    /// socket) and carry its messages as [`RelayFrame::StreamData`].
    StreamOpen {
        /// Unique on the connection.
        stream: u64,
        /// Path of the WebSocket (`/live/{token}/ws`).
        path: String,
        /// The forwarded headers (never a credential of the hub).
        headers: Vec<RelayHeader>,
    },
    /// Either way: one message of stream `stream`; its payload is the frame's body.
    StreamData {
        /// The stream.
        stream: u64,
        /// A text message (UTF-8 payload) rather than a binary one.
        text: bool,
    },
    /// Either way: stream `stream` is over (or was refused); nothing more comes on it.
    StreamClose {
        /// The stream.
        stream: u64,
    },
}
