//! Bearer authentication of the API: every request but health and the live view carries a
//! token that names a principal, and the request goes on with that [`Principal`] in its
//! extensions ([`Caller`](crate::tenant::Caller) reads it). A token is the bootstrap
//! operator's (`ABR_API_TOKEN`, [`TokenSet`]) or an API key's
//! ([`Keys::authenticate`](abr_engine::Keys::authenticate)); a request the runner's relay
//! link hands over in-process acts as the principal the hub authenticated (its role and
//! tenant), or as the hub's operator when the hub named none. A runner's credential and an
//! enrollment code call no API: the credential mints its runner's relay tokens, and that is
//! all ([`calls_the_api`](crate::tokens::calls_the_api)).

use std::sync::Arc;

use abr_core::context::TaskContext;
use abr_core::principal::Principal;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api_error::ApiError;
use crate::relay::{Relayed, TOKENS_PATH};
use crate::state::AppState;
use crate::tenant::RELAY_KEY_ID;
use crate::tokens::{calls_the_api, principal_of};

/// Refuses a request without exactly one `Authorization: Bearer <token>` header naming a
/// principal (a bootstrap token, or a key neither revoked nor expired), unless the runner's
/// relay link hands it over in-process (see [`Relayed`]: no request from the network
/// carries that mark).
pub(crate) async fn require_bearer<C: TaskContext>(
    State(state): State<AppState<C>>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = if let Some(relayed) = request.extensions().get::<Relayed>() {
        relayed
            .principal
            .clone()
            .unwrap_or_else(|| Arc::new(Principal::operator(RELAY_KEY_ID, "relayed by the hub")))
    } else {
        let keys = state.runner.engine.keys();
        match principal_of(&state.tokens, keys, request.headers()).await {
            Ok(Some(principal)) => principal,
            Ok(None) => return ApiError::unauthorized().into_response(),
            Err(e) => return e.into_response(),
        }
    };
    if request.uri().path() != TOKENS_PATH
        && let Err(refused) = calls_the_api(&principal)
    {
        return refused.into_response();
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}
