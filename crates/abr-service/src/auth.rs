//! Bearer authentication of the API: every request but health and the live view carries a
//! token that names a principal, and the request goes on with that [`Principal`] in its
//! extensions ([`Caller`](crate::tenant::Caller) reads it). A token is the bootstrap
//! operator's (`ABR_API_TOKEN`, [`TokenSet`]) or an API key's
//! ([`Keys::authenticate`](abr_engine::Keys::authenticate)); a request the runner's relay
//! link hands over in-process acts as the hub's operator (the hub authenticated it).

use std::sync::Arc;

use abr_core::context::TaskContext;
use abr_core::principal::{BOOTSTRAP_KEY_ID, Principal};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api_error::ApiError;
use crate::relay::Relayed;
use crate::state::AppState;
use crate::tenant::RELAY_KEY_ID;
use crate::tokens::bearer;

/// Refuses a request without exactly one `Authorization: Bearer <token>` header naming a
/// principal (a bootstrap token, or a key neither revoked nor expired), unless the runner's
/// relay link hands it over in-process (see [`Relayed`]: no request from the network
/// carries that mark).
pub(crate) async fn require_bearer<C: TaskContext>(
    State(state): State<AppState<C>>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = if request.extensions().get::<Relayed>().is_some() {
        Arc::new(Principal::operator(RELAY_KEY_ID, "relayed by the hub"))
    } else {
        match principal(&state, request.headers()).await {
            Ok(Some(principal)) => principal,
            Ok(None) => return ApiError::unauthorized().into_response(),
            Err(e) => return e.into_response(),
        }
    };
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// The principal of the request's bearer token, if it names one.
async fn principal<C: TaskContext>(
    state: &AppState<C>,
    headers: &axum::http::HeaderMap,
) -> Result<Option<Arc<Principal>>, ApiError> {
    let Some(token) = bearer(headers) else {
        return Ok(state
            .tokens
            .open()
            .then(|| Arc::new(Principal::operator("insecure-dev", "insecure-dev"))));
    };
    if state.tokens.accepts(token) {
        return Ok(Some(Arc::new(Principal::operator(
            BOOTSTRAP_KEY_ID,
            "ABR_API_TOKEN",
        ))));
    }
    Ok(state.runner.engine.keys().authenticate(token).await?)
}
