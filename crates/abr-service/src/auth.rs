//! Bearer authentication: SHA-256 digests of the accepted tokens, compared in constant
//! time; several tokens for rotation.

use crate::runner::RunnerContext;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::api_error::ApiError;
use crate::config::RunnerConfig;
use crate::state::AppState;

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

    fn accepts(&self, presented: &str) -> bool {
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

/// Refuses a request without exactly one `Authorization: Bearer <accepted token>` header.
pub(crate) async fn require_bearer<C: RunnerContext>(
    State(state): State<AppState<C>>,
    request: Request,
    next: Next,
) -> Response {
    let mut values = request.headers().get_all(header::AUTHORIZATION).iter();
    let presented = match (values.next(), values.next()) {
        (Some(value), None) => value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|t| !t.is_empty()),
        _ => None,
    };
    let allowed = match presented {
        Some(token) => state.tokens.accepts(token),
        None => state.tokens.open,
    };
    if allowed {
        next.run(request).await
    } else {
        ApiError::unauthorized().into_response()
    }
}
