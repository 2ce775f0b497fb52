//! The accepted bearer tokens ([`TokenSet`]: SHA-256 digests, compared in constant time;
//! several for rotation) and the one parser of the `Authorization: Bearer` header
//! ([`bearer`]), which the API, the relay hub's connect and the local runner's control
//! endpoint all use.

use std::sync::Arc;

use abr_core::principal::{BOOTSTRAP_KEY_ID, Principal};
use abr_engine::Keys;
use axum::http::header;
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::api_error::ApiError;
use crate::config::RunnerConfig;

/// SHA-256 digests of the accepted bearer tokens, compared in constant time.
pub(crate) struct TokenSet {
    digests: Vec<[u8; 32]>,
    open: bool,
}

impl TokenSet {
    /// The tokens of `config`; open (every request accepted) only with `--insecure-dev` and
    /// no token.
    pub(crate) fn new(config: &RunnerConfig) -> Self {
        Self {
            digests: config
                .api_tokens
                .iter()
                .map(|t| Sha256::digest(t.expose_secret().as_bytes()).into())
                .collect(),
            open: config.insecure_dev && config.api_tokens.is_empty(),
        }
    }

    /// How many tokens are accepted.
    pub(crate) fn len(&self) -> usize {
        self.digests.len()
    }

    /// Whether no token is needed (`--insecure-dev` without one).
    pub(crate) fn open(&self) -> bool {
        self.open
    }

    /// Whether `presented` is one of the tokens (or none is needed).
    pub(crate) fn accepts(&self, presented: &str) -> bool {
        if self.open {
            return true;
        }
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        // Check every token (no early exit) so the time does not depend on which matched.
        self.digests
            .iter()
            .fold(subtle::Choice::from(0), |found, d| found | d.ct_eq(&digest))
            .into()
    }
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("tokens", &self.digests.len())
            .field("open", &self.open)
            .finish()
    }
}

/// The token of exactly one `Authorization: Bearer <token>` header (scheme in any case,
/// the token trimmed and not empty); `None` for none, two, another scheme or an empty
/// token. The one parser of the bearer header: the API, the relay hub's connect and the
/// local runner's control endpoint all read it here (`.ci/check-layering` finds a second).
pub(crate) fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|t| !t.is_empty()),
        _ => None,
    }
}

/// The principal of the request's bearer token, if it names one: the bootstrap operator
/// (`tokens`) or a key (`keys`). The one place a bearer token becomes a principal (the API
/// and the hub's forwarding layer alike).
pub(crate) async fn principal_of(
    tokens: &TokenSet,
    keys: &Keys,
    headers: &axum::http::HeaderMap,
) -> Result<Option<Arc<Principal>>, ApiError> {
    let Some(token) = bearer(headers) else {
        return Ok(tokens
            .open()
            .then(|| Arc::new(Principal::operator("insecure-dev", "insecure-dev"))));
    };
    if tokens.accepts(token) {
        return Ok(Some(Arc::new(Principal::operator(
            BOOTSTRAP_KEY_ID,
            "ABR_API_TOKEN",
        ))));
    }
    Ok(keys.authenticate(token).await?)
}

/// Refuses a runner's credential and an enrollment code (`403 forbidden`): they call no API
/// (on the hub or through it), whatever the route; a runner's credential only mints its
/// runner's relay tokens (`POST /v1/relay/tokens`, which checks its own right).
pub(crate) fn calls_the_api(principal: &Principal) -> Result<(), ApiError> {
    if principal.runner_id().is_some() {
        return Err(ApiError::new(
            abr_protocol::codes::FORBIDDEN,
            "a runner's credential only connects its runner: it calls no API",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue, header};

    use super::bearer;

    fn with(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            if let Ok(v) = HeaderValue::from_str(v) {
                headers.append(header::AUTHORIZATION, v);
            }
        }
        headers
    }

    #[test]
    fn one_bearer_header_with_a_token_or_nothing() {
        assert_eq!(bearer(&with(&["Bearer abc"])), Some("abc"));
        assert_eq!(bearer(&with(&["bearer  abc "])), Some("abc"));
        assert_eq!(bearer(&with(&["BEARER abc"])), Some("abc"));
        for refused in [
            &[][..],
            &["Bearer "][..],
            &["Bearer    "][..],
            &["Bearer"][..],
            &["Basic abc"][..],
            &["abc"][..],
            &["Bearer abc", "Bearer abc"][..],
        ] {
            assert_eq!(bearer(&with(refused)), None, "{refused:?}");
        }
    }

    /// Fuzz target (bolero; `cargo test fuzz_`): any `Authorization` value is a token or
    /// none, never a panic; a token read is trimmed and not empty, from a `Bearer` value; a
    /// token set accepts exactly its own tokens.
    #[test]
    fn fuzz_bearer_tokens() {
        use sha2::Digest as _;
        let set = super::TokenSet {
            digests: ["token-one-0123456789", "token-two-0123456789"]
                .iter()
                .map(|t| sha2::Sha256::digest(t.as_bytes()).into())
                .collect(),
            open: false,
        };
        bolero::check!()
            .with_type::<(Vec<u8>, String)>()
            .for_each(|(raw, presented)| {
                if let Ok(value) = HeaderValue::from_bytes(raw) {
                    let mut headers = HeaderMap::new();
                    headers.insert(header::AUTHORIZATION, value);
                    if let Some(token) = bearer(&headers) {
                        assert!(!token.is_empty() && token.trim() == token);
                        let text = String::from_utf8_lossy(raw).to_ascii_lowercase();
                        assert!(text.starts_with("bearer "), "{text}");
                    }
                }
                let known =
                    ["token-one-0123456789", "token-two-0123456789"].contains(&presented.as_str());
                assert_eq!(set.accepts(presented), known);
            });
    }
}
