//! A tenant's artifacts (`/v1/artifacts`): files uploaded for plans' `upload` steps, kept
//! sealed and capped, described and fetched by their tenant only (another tenant's id is a
//! 404 `artifact_not_found`, exactly like a missing one).

use abr_core::principal::Right;
use abr_protocol::{ArtifactInfo, ArtifactList, ArtifactUpload, codes};
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::api_error::{ApiError, ApiPath};
use crate::openapi::{Documented, FileBody};
use crate::state::AppState;
use crate::tenant::Caller;
use abr_core::context::TaskContext;

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    let refused = &[
        codes::ARTIFACT_TOO_LARGE,
        codes::ARTIFACT_TYPE_REFUSED,
        codes::ARTIFACT_QUOTA,
    ];
    ApiRouter::new()
        .api_route(
            "/v1/artifacts",
            post_with(upload::<C>, |o| {
                o.id("uploadArtifact")
                    .summary(
                        "Keep a file for a plan's `upload` step: 201 with its id, sniffed type, \
                         size and SHA-256",
                    )
                    .description(
                        "The body is the file's bytes (any `Content-Type`: the type is sniffed \
                         from the bytes); `name` is the file name the page's input receives. \
                         Sealed at rest, kept `ABR_RETENTION_DAYS`.",
                    )
                    .needs(Right::Propose)
                    .response::<201, Json<ArtifactInfo>>()
                    .errors(refused)
            })
            .get_with(list::<C>, |o| {
                o.id("listArtifacts")
                    .summary("The tenant's artifacts, newest first, and their total size")
                    .needs(Right::Read)
            }),
        )
        .api_route(
            "/v1/artifacts/{id}",
            get_with(describe::<C>, |o| {
                o.id("getArtifact")
                    .summary("An artifact's description (never its bytes)")
                    .needs(Right::Read)
                    .errors(&[codes::ARTIFACT_NOT_FOUND])
            })
            .delete_with(remove::<C>, |o| {
                o.id("deleteArtifact")
                    .summary("Forget an artifact (a task not run yet that names it then fails)")
                    .needs(Right::Propose)
                    .response::<204, ()>()
                    .errors(&[codes::ARTIFACT_NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/artifacts/{id}/content",
            get_with(content::<C>, |o| {
                o.id("getArtifactContent")
                    .summary("An artifact's bytes, as an attachment of its sniffed type")
                    .needs(Right::Read)
                    .response::<200, FileBody>()
                    .errors(&[codes::ARTIFACT_NOT_FOUND])
            }),
        )
}

/// `POST /v1/artifacts?name=`: keeps the body as an artifact of the caller's tenant.
async fn upload<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    query: Result<Query<ArtifactUpload>, QueryRejection>,
    body: Bytes,
) -> Result<(StatusCode, Json<ArtifactInfo>), ApiError> {
    let actor = caller.actor(None)?;
    let Ok(Query(query)) = query else {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "the query is `name`: the file name the page's input receives",
        ));
    };
    let info = state
        .runner
        .engine
        .put_artifact(&actor, &query.name, body.to_vec())
        .await?;
    Ok((StatusCode::CREATED, Json(info)))
}

/// `GET /v1/artifacts`: the tenant's artifacts.
async fn list<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
) -> Result<Json<ArtifactList>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(state.runner.engine.artifacts(&actor).await?))
}

/// `GET /v1/artifacts/{id}`: one artifact's description.
async fn describe<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ArtifactInfo>, ApiError> {
    let actor = caller.actor(None)?;
    Ok(Json(state.runner.engine.artifact(&actor, &id).await?))
}

/// `DELETE /v1/artifacts/{id}`: 204.
async fn remove<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let actor = caller.actor(None)?;
    state.runner.engine.delete_artifact(&actor, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/artifacts/{id}/content`: the bytes as an attachment of their sniffed type,
/// never cached, never sniffed, never run as a document.
async fn content<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let actor = caller.actor(None)?;
    let (info, bytes) = state.runner.engine.artifact_content(&actor, &id).await?;
    let media = HeaderValue::from_str(&info.media_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    let disposition = HeaderValue::from_str(&attachment(&info.name))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"));
    Ok((
        [
            (header::CONTENT_TYPE, media),
            (header::CONTENT_DISPOSITION, disposition),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("no-store, private"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("default-src 'none'; sandbox"),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// `Content-Disposition` for a file named `name`: an ASCII fallback (anything but letters,
/// digits, `.`, `-`, `_` and spaces becomes `_`) and the exact name, percent-encoded
/// (RFC 6266's `filename*`).
fn attachment(name: &str) -> String {
    let plain: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ' ') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // RFC 5987's attr-char: letters, digits and `!#$&+-.^_`|~` stay, the rest is escaped.
    const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'!')
        .remove(b'#')
        .remove(b'$')
        .remove(b'&')
        .remove(b'+')
        .remove(b'-')
        .remove(b'.')
        .remove(b'^')
        .remove(b'_')
        .remove(b'`')
        .remove(b'|')
        .remove(b'~');
    let exact = percent_encoding::utf8_percent_encode(name, ESCAPED);
    format!("attachment; filename=\"{plain}\"; filename*=UTF-8''{exact}")
}

#[cfg(test)]
mod tests {
    use super::attachment;

    #[test]
    fn a_file_name_cannot_break_out_of_its_header() {
        assert_eq!(
            attachment("a\"; x=1.pdf"),
            "attachment; filename=\"a__ x_1.pdf\"; filename*=UTF-8''a%22%3B%20x%3D1.pdf"
        );
        assert_eq!(
            attachment("résumé.pdf"),
            "attachment; filename=\"r_sum_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf"
        );
    }
}
