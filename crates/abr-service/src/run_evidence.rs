//! Replay frames (`/v1/runs/{runId}/frames`), a run's action timeline
//! (`/v1/runs/{runId}/timeline`) and the tenant's screenshots switch
//! (`/v1/settings/screenshots`). Frames are served here and nowhere else: not in a task
//! record, an event, a callback or a log line.
//!
//! A run and its frames are visible to their tenant only (its key's, or the one `x-tenant-id` names for an
//! operator): another tenant's run id is a 404 `frame_not_found`, exactly like a missing one.

use abr_core::principal::Right;
use abr_protocol::{FramesResponse, RunTimeline, ScreenshotsSetting, codes};
use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::api_error::{ApiError, ApiJson};
use crate::openapi::{Documented, Image, JsonOrMarkdown, wants_markdown};
use crate::state::AppState;
use crate::tenant::{Caller, one_header};
use abr_core::context::TaskContext;

/// Who an unattributed change of a setting is audited as.
const UNKNOWN_ACTOR: &str = "unknown";

/// The routes (behind the bearer check).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    ApiRouter::new()
        .api_route(
            "/v1/runs/{run_id}/frames",
            get_with(frames::<C>, |o| {
                o.id("listFrames")
                    .summary(
                        "A run's replay frames: the setting it ran with and each frame's metadata",
                    )
                    .needs(Right::Read)
                    .errors(&[codes::NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/runs/{run_id}/frames/{seq}",
            get_with(frame::<C>, |o| {
                o.id("getFrame")
                    .summary("One replay frame (a redacted JPEG)")
                    .needs(Right::Read)
                    .response::<200, Image>()
                    .errors(&[codes::NOT_FOUND, codes::FRAME_NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/runs/{run_id}/timeline",
            get_with(timeline::<C>, |o| {
                o.id("getRunTimeline")
                    .summary(
                        "A run's action timeline (a task's, a browse session's or a post's): \
                         each step with its element, page and decisions; JSON, or markdown \
                         with `Accept: text/markdown`",
                    )
                    .needs(Right::Read)
                    .errors(&[codes::NOT_FOUND, codes::RUN_NOT_FOUND])
            }),
        )
        .api_route(
            "/v1/settings/screenshots",
            get_with(screenshots::<C>, |o| {
                o.id("getScreenshotsSetting")
                    .summary("Whether the tenant's runs take replay frames")
                    .needs(Right::Read)
            })
            .put_with(set_screenshots::<C>, |o| {
                o.id("setScreenshotsSetting")
                    .summary("Switch the tenant's replay frames on or off for runs from now on")
                    .needs(Right::TenantSettings)
                    .header("x-actor", "The person making the change, for the audit.")
            }),
        )
}

/// `GET /v1/runs/{runId}/frames`: the setting the run recorded and its frames' metadata.
async fn frames<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> Result<Json<FramesResponse>, ApiError> {
    let actor = caller.actor(None)?;
    let Path(run_id) = path.map_err(|_| bad_path())?;
    let (screenshots, frames) = state.runner.engine.run_frames(&actor, &run_id).await?;
    Ok(Json(FramesResponse {
        run_id,
        screenshots,
        frames,
    }))
}

/// `GET /v1/runs/{runId}/timeline`: what the run did, in order; markdown for a caller
/// that asks for it.
async fn timeline<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<JsonOrMarkdown<RunTimeline>, ApiError> {
    let actor = caller.actor(None)?;
    let Path(run_id) = path.map_err(|_| bad_path())?;
    let timeline = state.runner.engine.run_timeline(&actor, &run_id).await?;
    Ok(if wants_markdown(&headers) {
        JsonOrMarkdown::Markdown(timeline.to_markdown())
    } else {
        JsonOrMarkdown::Json(timeline)
    })
}

/// `GET /v1/runs/{runId}/frames/{seq}`: one frame's JPEG, never cached, never sniffed,
/// never run as a document.
async fn frame<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let actor = caller.actor(None)?;
    let Path((run_id, seq)) = path.map_err(|_| bad_path())?;
    let seq = frame_number(&seq)?;
    let frame = state.runner.engine.frame(&actor, &run_id, seq).await?;
    Ok(image(frame.jpeg))
}

/// A page image (a replay frame, a task's screenshot) as an answer: its type from its first
/// bytes (JPEG, or PNG for screenshots kept before they were redacted frames), never cached,
/// never sniffed, never run as a document.
pub(crate) fn image(bytes: Vec<u8>) -> Response {
    let media = if bytes.starts_with(b"\x89PNG") {
        "image/png"
    } else {
        "image/jpeg"
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(media)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("no-store, private"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("inline"),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("default-src 'none'; sandbox"),
            ),
        ],
        bytes,
    )
        .into_response()
}

/// A frame's sequence number: a positive whole number in decimal digits.
fn frame_number(raw: &str) -> Result<u32, ApiError> {
    raw.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| raw.parse::<u32>().ok())
        .flatten()
        .filter(|seq| *seq > 0)
        .ok_or_else(|| {
            ApiError::new(
                codes::INVALID_REQUEST,
                "seq: a frame number is a positive whole number",
            )
        })
}

fn bad_path() -> ApiError {
    ApiError::new(codes::INVALID_REQUEST, "the path is not valid UTF-8 text")
}

/// `GET /v1/settings/screenshots`: whether the tenant's runs take replay frames.
async fn screenshots<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
) -> Result<Json<ScreenshotsSetting>, ApiError> {
    let actor = caller.actor(None)?;
    let enabled = state.runner.engine.screenshots_enabled(&actor).await?;
    Ok(Json(ScreenshotsSetting { enabled }))
}

/// `PUT /v1/settings/screenshots`: switches the tenant's frames on or off for the runs that
/// start from now on (a run going keeps the setting it started with). Audited with the
/// person named by `x-actor` (`unknown` without).
async fn set_screenshots<C: TaskContext>(
    State(state): State<AppState<C>>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(setting): ApiJson<ScreenshotsSetting>,
) -> Result<Json<ScreenshotsSetting>, ApiError> {
    let actor = caller.actor(None)?;
    let person = person(&headers)?;
    state
        .runner
        .engine
        .set_screenshots_enabled(&actor, setting.enabled, &person)
        .await?;
    Ok(Json(setting))
}

/// The person a change is audited as: `x-actor` (checked like an approver's name), else
/// `unknown`.
fn person(headers: &HeaderMap) -> Result<String, ApiError> {
    match one_header(headers, "x-actor")? {
        Some(name) => Ok(abr_core::check_person("x-actor", &name)?),
        None => Ok(UNKNOWN_ACTOR.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_numbers_are_positive_decimal_integers() {
        assert_eq!(frame_number("1").ok(), Some(1));
        assert_eq!(frame_number("60").ok(), Some(60));
        assert_eq!(frame_number("007").ok(), Some(7));
        for bad in ["", "0", "-1", "+1", "1.5", "abc", " 1", "4294967296", "1e3"] {
            let e = frame_number(bad).err().map(|e| e.code().to_owned());
            assert_eq!(e.as_deref(), Some("invalid_request"), "{bad:?}");
        }
    }

    #[test]
    fn names_of_people_are_trimmed_bounded_and_printable() {
        assert_eq!(
            abr_core::check_person("decidedBy", "  alice ")
                .ok()
                .as_deref(),
            Some("alice")
        );
        for bad in [String::new(), "   ".into(), "a\nb".into(), "x".repeat(257)] {
            assert!(
                abr_core::check_person("decidedBy", &bad).is_err(),
                "{bad:?}"
            );
        }
    }
}
