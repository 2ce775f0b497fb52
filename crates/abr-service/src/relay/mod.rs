//! The outbound relay: runners on users' machines connect *out* to a hub (an ordinary
//! `abr serve`) over a WebSocket, so the machine exposes no inbound port; the hub forwards
//! every API call that names a runner (`x-abr-runner`) over that runner's live socket.
//!
//! - Hub side ([`Hub`]): `POST /v1/relay/tokens` mints a short-lived, single-use relay token
//!   scoped to one runner id, with the runner's own credential (the runner credential
//!   enrollment gave it) or, for a runner id nobody enrolled, an operator's key; `GET
//!   /v1/relay/{runnerId}/connect` accepts only such a token for that runner id. The first
//!   frame is the runner's hello. The hub keeps **one socket per runner id**: while one is
//!   live, a second connection for that id is refused right after the upgrade (a `refused`
//!   frame carrying the `409 runner_conflict` envelope, then a close) whatever host its
//!   hello names (the host is the runner's word about itself: shown, never trusted),
//!   unless it says `force` and was opened with the same credential as the live one: then
//!   the old socket is told (`replaced`) and closed. A relay token names the credential
//!   that minted it, which owns the connection: an enrolled runner id's tokens come from
//!   its runner credential only, and a socket ends when its credential is revoked (see
//!   [`abr_engine::Keys::enroll`] for who owns a runner id).
//! - Forwarding: method, path and query, a fixed list of headers (never the hub's
//!   `Authorization`) and the body go to the runner, which runs them **in-process on its own
//!   router** and answers status, headers and body; the hub returns the status, the body
//!   and the API's own response headers (a fixed list: never a runner's `Set-Cookie`). A
//!   socket that drops with requests in flight answers each once: `runner_disconnected`
//!   (retryable, nothing was done) before its commit point, `runner_outcome_unknown` (never
//!   retryable) after. The runner announces the commit point with a `progress` frame and
//!   waits for the hub's `commitAck` before it acts (`abr_engine::commit_watch`); without the
//!   acknowledgement it does not commit. That holds also when the hub no longer waits for
//!   the answer (its caller went away, or the hub's request deadline passed): a request
//!   nobody will hear the outcome of does not pass its commit point; its record on the
//!   runner says so. Answers are carried whole: a streamed answer (server-sent events) comes
//!   back when it ends, within the runner's request deadline.
//! - Runner side ([`link::run`]): mint, connect, hello, serve, heartbeat, reconnect with
//!   exponential backoff and full jitter, drain.
//!
//! - Live view: the hub rewrites the `liveViewUrl` of a forwarded answer to its own public
//!   URL and remembers (hashed, bounded, until it expires or the runner's socket goes)
//!   which runner socket the live token belongs to; `GET /live/{token}` is then forwarded
//!   over that socket, and `GET /live/{token}/ws` is carried as a stream (`streamOpen`,
//!   `streamData`, `streamClose`) once the hub checked the viewer's `Origin` against its
//!   own. The runner opens it on its router marked as relayed (a request extension only the
//!   link makes), which its Origin check accepts; a request from the network is checked as
//!   before. An unknown token is the hub's own (`404 live_view_not_found`), never
//!   forwarded. The page is served with the hub's own CSP and security headers, none of
//!   the runner's (see `live.rs`).
//!
//! Heartbeats: each side pings every `heartbeat` and counts any frame as a sign of life; a
//! peer silent for `dead_after` is dead.

mod forward;
mod frame;
mod hub;
pub mod link;
mod live;
mod live_tokens;
mod stream;
mod tokens;

use std::time::Duration;

pub(crate) use forward::{ForwardState, forward_to_runner};
pub use hub::Hub;
pub(crate) use hub::TOKENS_PATH;

/// The header that names the runner a hub call is for.
pub const RUNNER_HEADER: &str = "x-abr-runner";

/// The hub's relay settings.
#[derive(Debug, Clone)]
pub struct HubSettings {
    /// How long a relay token opens a connection (default 120 s).
    pub token_ttl: Duration,
    /// How often the hub pings a runner (default 10 s).
    pub heartbeat: Duration,
    /// A runner silent this long is dead (default 30 s).
    pub dead_after: Duration,
    /// The largest frame either way, body included (default 32 MiB).
    pub max_frame_bytes: usize,
    /// Unused tokens kept at most (default 1024; minting beyond is refused).
    pub max_tokens: usize,
    /// The oldest runner version the hub takes (`ABR_HUB_MIN_RUNNER_VERSION`; default: this
    /// hub's own major and minor version, `x.y.0`): an older runner is refused at its hello
    /// with `runner_too_old`, naming both versions.
    pub min_runner_version: semver::Version,
    /// How long a call naming a runner that is not connected waits for it to (re)connect
    /// before `runner_offline` (`ABR_HUB_RUNNER_WAIT_SECS`, default 15 s). The call is sent
    /// once, when it connects.
    pub offline_wait: Duration,
}

/// This build's version, as the hub's minimum by default (`x.y.0`).
pub fn own_minimum() -> semver::Version {
    let own = semver::Version::parse(env!("CARGO_PKG_VERSION"))
        .unwrap_or_else(|_| semver::Version::new(0, 0, 0));
    semver::Version::new(own.major, own.minor, 0)
}

impl Default for HubSettings {
    fn default() -> Self {
        Self {
            token_ttl: Duration::from_secs(120),
            heartbeat: Duration::from_secs(10),
            dead_after: Duration::from_secs(30),
            max_frame_bytes: 32 * 1024 * 1024,
            max_tokens: 1024,
            min_runner_version: own_minimum(),
            offline_wait: Duration::from_secs(15),
        }
    }
}

/// Why the relay failed, on the runner side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// The link's options are unusable (a hub URL that is not http(s), a bad runner id).
    #[error("invalid relay options: {0}")]
    InvalidOptions(String),
    /// The hub refused the API credential when minting a relay token.
    #[error("the hub refused the API token")]
    Unauthorized,
    /// A runner with this id is already connected to the hub (say `force` to replace it).
    #[error("refused by the hub: {0}")]
    Conflict(String),
    /// The hub takes no runner of this version (`runner_too_old`): upgrade the runner.
    #[error("the hub refused this runner's version: {0}")]
    TooOld(String),
    /// Another runner with this id took the connection over (`force`).
    #[error("another runner with this id took the connection over (`force`)")]
    Replaced,
    /// The hub could not be reached or the connection failed (retried by the link).
    #[error("the hub connection failed: {0}")]
    Hub(String),
    /// A frame that does not follow the relay protocol.
    #[error("relay protocol error: {0}")]
    Protocol(&'static str),
}

impl RelayError {
    /// Whether reconnecting cannot help (the link then stops and reports it).
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            Self::InvalidOptions(_)
                | Self::Unauthorized
                | Self::Conflict(_)
                | Self::TooOld(_)
                | Self::Replaced
        )
    }
}

/// The mark of a request the runner's link hands to its own router in-process: the hub
/// authenticated the caller, so the router's bearer check lets it through, acting as the
/// principal the hub named. Only this module can make one, and no request from the network
/// carries request extensions: a request arriving over a socket never gets this trust.
#[derive(Debug, Clone)]
pub(crate) struct Relayed {
    /// Who the hub says made it; `None`: the hub named nobody (it authenticated the
    /// operator's token, as hubs before principals did).
    pub(crate) principal: Option<std::sync::Arc<abr_core::principal::Principal>>,
    _private: (),
}

/// Whether `token` can be a live token: 1 to 256 of `A-Z a-z 0-9 - _`.
pub(crate) fn valid_live_token(token: &str) -> bool {
    (1..=256).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

pub(crate) use abr_core::principal::valid_runner_id;

/// Whether `host` is a usable machine name in a hello: 1 to 255 printable characters.
pub(crate) fn valid_host(host: &str) -> bool {
    (1..=255).contains(&host.len()) && !host.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_ids_are_bounded_and_plain() {
        for ok in ["a", "laptop-1", "A.b_c-9", &"x".repeat(64)] {
            assert!(valid_runner_id(ok), "{ok}");
        }
        for bad in [
            "",
            ".hidden",
            "a/b",
            "a b",
            "é",
            "a%2Fb",
            &"x".repeat(65),
            "..",
            "a\n",
        ] {
            assert!(!valid_runner_id(bad), "{bad:?}");
        }
        assert!(valid_host("Erin's MacBook"));
        assert!(!valid_host(""));
        assert!(!valid_host("a\u{7}b"));
    }
}
