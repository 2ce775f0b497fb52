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

use serde::{Deserialize, Serialize};

use crate::{ErrorBody, SecretValue};

/// `POST /v1/relay/tokens`: a token for one runner id to open one relay connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelayTokenRequest {
    /// The runner id the token is scoped to (1 to 64 of `A-Z a-z 0-9 . _ -`).
    pub runner_id: String,
}

/// The answer of `POST /v1/relay/tokens`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayTokenResponse {
    /// The relay token: `Authorization: Bearer <token>` on the connect request. Single use.
    pub token: SecretValue,
    /// The runner id it is scoped to.
    pub runner_id: String,
    /// When it stops opening connections (a connection it opened lives on its heartbeats).
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: time::OffsetDateTime,
    /// Where to connect with it: `/v1/relay/{runnerId}/connect` (a WebSocket).
    pub connect_path: String,
}

/// The runner's first frame on a relay connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
