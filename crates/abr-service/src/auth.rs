//! Bearer authentication of the API: every request but health and the live view carries an
//! accepted token ([`TokenSet`]), unless the runner's relay link hands it over in-process.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api_error::ApiError;
use crate::relay::Relayed;
use crate::tokens::TokenSet;

/// Refuses a request without exactly one `Authorization: Bearer <accepted token>` header,
/// unless the runner's relay link hands it over in-process (the hub authenticated it; see
/// [`Relayed`](crate::relay::Relayed): no request from the network carries that mark).
pub(crate) async fn require_bearer(
    State(tokens): State<Arc<TokenSet>>,
    request: Request,
    next: Next,
) -> Response {
    if request.extensions().get::<Relayed>().is_some() {
        return next.run(request).await;
    }
    if tokens.authorizes(request.headers()) {
        next.run(request).await
    } else {
        ApiError::unauthorized().into_response()
    }
}
