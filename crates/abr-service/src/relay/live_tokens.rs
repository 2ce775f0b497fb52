//! The hub's table of the live tokens it handed out for runners ([`LiveTokens`]: which
//! runner socket each belongs to, kept hashed, bounded, until it expires or the socket
//! goes), and the rewrite of a forwarded answer's `liveViewUrl` to the hub ([`rewrite`]).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::valid_live_token;

/// Live tokens remembered at most (the oldest to expire makes room).
const MAX_LIVE_TOKENS: usize = 4096;
/// How long a live token is remembered when its answer says no `expiresAt`.
const DEFAULT_TTL: Duration = Duration::from_secs(60 * 60);
/// The longest a live token is remembered, whatever its answer says.
const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);
struct Entry {
    runner_id: String,
    serial: u64,
    expires: Instant,
}

/// The live tokens the hub handed out for runners, by SHA-256 digest (a token is a
/// credential: never kept in the clear, never logged).
pub(crate) struct LiveTokens {
    entries: Mutex<HashMap<[u8; 32], Entry>>,
}

impl std::fmt::Debug for LiveTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveTokens").finish_non_exhaustive()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl LiveTokens {
    pub(crate) fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<[u8; 32], Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers that `token` is served by socket `serial` of `runner_id`, for `ttl`.
    pub(crate) fn remember(&self, token: &str, runner_id: &str, serial: u64, ttl: Duration) {
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|_, e| e.expires > now);
        if entries.len() >= MAX_LIVE_TOKENS {
            let soonest = entries
                .iter()
                .min_by_key(|(_, e)| e.expires)
                .map(|(k, _)| *k);
            if let Some(key) = soonest {
                entries.remove(&key);
            }
        }
        entries.insert(
            digest(token),
            Entry {
                runner_id: runner_id.to_owned(),
                serial,
                expires: now + ttl.min(MAX_TTL),
            },
        );
    }

    /// The runner id and socket serving `token`, while it has not expired.
    pub(crate) fn find(&self, token: &str) -> Option<(String, u64)> {
        let key = digest(token);
        let mut entries = self.lock();
        let entry = entries.get(&key)?;
        if entry.expires <= Instant::now() {
            entries.remove(&key);
            return None;
        }
        Some((entry.runner_id.clone(), entry.serial))
    }

    /// Forgets every token of socket `serial` (it is gone).
    pub(crate) fn forget_socket(&self, serial: u64) {
        self.lock().retain(|_, e| e.serial != serial);
    }

    /// How many tokens are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// A forwarded answer's body with its top-level `liveViewUrl` (`…/live/{token}`) moved to
/// `public_base`, the token, and how long to remember it (until the answer's `expiresAt`).
/// `None` when the body carries no live-view URL.
pub(crate) fn rewrite(body: &Bytes, public_base: &str) -> Option<(Bytes, String, Duration)> {
    let mut value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object_mut()?;
    let url = url::Url::parse(object.get("liveViewUrl")?.as_str()?).ok()?;
    let mut segments = url.path_segments()?;
    let (Some("live"), Some(token), None) = (segments.next(), segments.next(), segments.next())
    else {
        return None;
    };
    if !valid_live_token(token) {
        return None;
    }
    let token = token.to_owned();
    let ttl = object
        .get("expiresAt")
        .and_then(serde_json::Value::as_str)
        .and_then(|at| {
            time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()
        })
        .map_or(DEFAULT_TTL, |at| {
            Duration::try_from(at - time::OffsetDateTime::now_utc()).unwrap_or(Duration::ZERO)
        });
    object.insert(
        "liveViewUrl".into(),
        serde_json::Value::String(format!("{public_base}/live/{token}")),
    );
    let body = serde_json::to_vec(&value).ok()?;
    Some((Bytes::from(body), token, ttl))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_view_url_moves_to_the_hub_and_keeps_everything_else() {
        let body = Bytes::from_static(
            br#"{"captureId":"c1","liveViewUrl":"http://127.0.0.1:9/live/tok-EN_1","expiresAt":"2999-01-01T00:00:00Z"}"#,
        );
        let (body, token, ttl) = rewrite(&body, "https://hub.example").unwrap();
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["liveViewUrl"], "https://hub.example/live/tok-EN_1");
        assert_eq!(value["captureId"], "c1");
        assert_eq!(token, "tok-EN_1");
        assert!(ttl > Duration::ZERO);
        for other in [
            &br#"{"captureId":"c1"}"#[..],
            br#"{"liveViewUrl":"http://x/elsewhere/tok"}"#,
            br#"{"liveViewUrl":"http://x/live/a/b"}"#,
            br#"{"liveViewUrl":"http://x/live/a%2Fb"}"#,
            br#"{"liveViewUrl":7}"#,
            b"not json",
        ] {
            assert!(rewrite(&Bytes::from_static(other), "https://hub").is_none());
        }
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_are_kept_hashed_until_they_expire_or_their_socket_goes() {
        let tokens = LiveTokens::new();
        tokens.remember("secret-live-token", "r1", 7, Duration::from_secs(60));
        tokens.remember("other", "r1", 8, Duration::from_secs(60));
        assert_eq!(tokens.find("secret-live-token"), Some(("r1".into(), 7)));
        assert_eq!(tokens.find("secret-live-toke"), None);
        assert!(!format!("{tokens:?}").contains("secret-live-token"));
        tokens.forget_socket(7);
        assert_eq!(tokens.find("secret-live-token"), None);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(tokens.find("other"), None);
        for i in 0..(MAX_LIVE_TOKENS + 10) {
            tokens.remember(&format!("t{i}"), "r", 1, Duration::from_secs(60));
        }
        assert_eq!(tokens.len(), MAX_LIVE_TOKENS);
    }
}
