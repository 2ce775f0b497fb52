//! The pause pages: one page per reason ABR hands a run to a person, each with a blocker a
//! person clears with clicks and typing only (through the live view), after which the page
//! shows `#content` "Cleared" and none of its detection markers.
//!
//! # HTTP contract
//! Every page is `no-store`; `#content` exists only once the page is cleared (except on
//! `/pause/write` and `/pause/landing`, which have nothing to clear).
//! - `GET /pause/challenge`: `.g-recaptcha` holding `#human` "I am human" and the text
//!   "Verify you are human". Clicking `#human` posts `/api/pause/clear/challenge`, then
//!   reloads.
//! - `GET /pause/login`: `#password` (type password) and `#signin`; `POST /pause/login`
//!   (urlencoded `password`): non-empty signs in (303 back), empty is a 401 with `.error`.
//!   Signed in, the page has `#content` and no password field.
//! - `GET /pause/paywall`: "Subscribe to continue reading" and `#subscribed` "I have
//!   subscribed", which posts `/api/pause/clear/paywall` and reloads.
//! - `GET /pause/blocked`: 403 "Access Denied" with `#unblock` "Continue", which posts
//!   `/api/pause/clear/blocked` and reloads; cleared, 200.
//! - `GET /pause/write`: `#content` "Job details" and a form `#apply-form` (`#applicant-name`,
//!   file input `#resume`, submit `#apply` "Apply"); `POST /pause/write` counts an
//!   application (the body is ignored). Nothing to clear.
//! - `GET /pause/stuck`: `#go` "Next step" (outside any form) under the full-page overlay
//!   `#overlay`, whose `#dismiss` "Close" removes it and posts `/api/pause/clear/stuck` (a
//!   reload keeps it gone). Clicking `#go` posts `/api/pause/go` and shows `#content`.
//! - `GET /pause/needs-input`: form `#code-form` with the required, empty `#code` and the
//!   submit `#send` "Continue"; `POST /pause/needs-input` (urlencoded `code`): non-empty
//!   records the code's length (never the code) and answers `#content`; empty is a 400.
//!   `GET /api/pause/submissions`: `{"count": n}`.
//! - `GET /pause/elsewhere`: `#away` "Next page", an absolute link to `/pause/landing` on
//!   the host `localhost` and the port of the request's `Host` (another site for ABR than
//!   `127.0.0.1`). `GET /pause/landing`: `#content` "Landing".
//! - `GET /api/pause/state`: [`PauseState`]. `POST /api/pause/clear/{reason}` (`challenge`,
//!   `login`, `paywall`, `blocked`, `stuck`, `needs-input`): sets the flag, answers the
//!   state; another reason is a 404. `POST /api/pause/reset`: everything back to new.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Json};
use serde::{Deserialize, Serialize};

use super::html::{document, esc};
use super::{Shared, json_error, lock, page};

/// What the pause pages remember, as `GET /api/pause/state` answers it. A reason's flag is
/// `true` once a person cleared it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseState {
    /// `/pause/challenge`: `#human` was clicked.
    pub challenge: bool,
    /// `/pause/login`: signed in with a non-empty password.
    pub login: bool,
    /// `/pause/paywall`: `#subscribed` was clicked.
    pub paywall: bool,
    /// `/pause/blocked`: `#unblock` was clicked.
    pub blocked: bool,
    /// `/pause/stuck`: the overlay was dismissed.
    pub stuck: bool,
    /// `/pause/needs-input`: a code was submitted.
    pub needs_input: bool,
    /// Clicks on `/pause/stuck`'s `#go`.
    pub go_clicks: u32,
    /// The length, in characters, of each code submitted on `/pause/needs-input`.
    pub submissions: Vec<usize>,
    /// Applications submitted on `/pause/write`.
    pub applications: u32,
}

/// The pause routes.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/pause/challenge", get(challenge))
        .route("/pause/login", get(login).post(login_submit))
        .route("/pause/paywall", get(paywall))
        .route("/pause/blocked", get(blocked))
        .route("/pause/write", get(write).post(write_submit))
        .route("/pause/stuck", get(stuck))
        .route(
            "/pause/needs-input",
            get(needs_input).post(needs_input_submit),
        )
        .route("/pause/elsewhere", get(elsewhere))
        .route("/pause/landing", get(landing))
        .route("/api/pause/state", get(state))
        .route("/api/pause/clear/{reason}", post(clear))
        .route("/api/pause/go", post(go))
        .route("/api/pause/submissions", get(submissions))
        .route("/api/pause/reset", post(reset))
}

const PAUSE_STYLE: &str = "#overlay{position:fixed;inset:0;z-index:1000;background:rgba(0,0,0,.55);\
display:flex;align-items:center;justify-content:center}#overlay .box{background:#fff;padding:1rem 1.5rem;border-radius:6px}\
.widget{display:inline-block;border:1px solid #ccc;border-radius:4px;padding:.75rem 1rem;background:#f9f9f9}";

/// A pause page: `body` is markup.
fn pause_page(status: StatusCode, title: &str, body: &str) -> Response {
    page(
        status,
        document(title, PAUSE_STYLE, &format!("<main>{body}</main>")),
    )
}

const CLEARED: &str = "<div id=\"content\">Cleared</div>";

/// A script that makes the button `id` clear `reason`, then reloads.
fn clears_on_click(id: &str, reason: &str) -> String {
    format!(
        "<script>document.getElementById('{id}').addEventListener('click', async () => {{\
           try {{ await fetch('/api/pause/clear/{reason}', {{ method: 'POST' }}); }} finally {{ location.reload(); }}\
         }});</script>"
    )
}

async fn challenge(State(state): State<Shared>) -> Response {
    if lock(&state).pause.challenge {
        return pause_page(
            StatusCode::OK,
            "Article",
            &format!("<h1>Article</h1>{CLEARED}"),
        );
    }
    pause_page(
        StatusCode::OK,
        "One more step",
        &format!(
            "<h1>One more step</h1><p>Verify you are human to see this page.</p>\
             <div class=\"g-recaptcha widget\" data-sitekey=\"abr-demo\">\
             <button type=\"button\" id=\"human\" role=\"checkbox\" aria-checked=\"false\">I am human</button></div>{}",
            clears_on_click("human", "challenge")
        ),
    )
}

fn login_page(status: StatusCode, error: Option<&str>) -> Response {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(e)))
        .unwrap_or_default();
    pause_page(
        status,
        "Sign in",
        &format!(
            "<h1>Sign in</h1><p>Sign in to see this page.</p>{error}\
             <form id=\"pause-login\" method=\"post\" action=\"/pause/login\">\
             <p><label>Password <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\"></label></p>\
             <p><button id=\"signin\" type=\"submit\">Sign in</button></p></form>"
        ),
    )
}

async fn login(State(state): State<Shared>) -> Response {
    if lock(&state).pause.login {
        return pause_page(
            StatusCode::OK,
            "Members area",
            &format!("<h1>Members area</h1>{CLEARED}"),
        );
    }
    login_page(StatusCode::OK, None)
}

#[derive(Debug, Default, Deserialize)]
struct PasswordForm {
    #[serde(default)]
    password: String,
}

async fn login_submit(State(state): State<Shared>, Form(form): Form<PasswordForm>) -> Response {
    if form.password.is_empty() {
        return login_page(StatusCode::UNAUTHORIZED, Some("Enter your password."));
    }
    lock(&state).pause.login = true;
    Redirect::to("/pause/login").into_response()
}

async fn paywall(State(state): State<Shared>) -> Response {
    const LEDE: &str = "<h1>Article</h1><p class=\"lede\">The first paragraph of a long read about oak tables.</p>";
    if lock(&state).pause.paywall {
        return pause_page(StatusCode::OK, "Article", &format!("{LEDE}{CLEARED}"));
    }
    pause_page(
        StatusCode::OK,
        "Article",
        &format!(
            "{LEDE}<div class=\"paywall\"><p>Subscribe to continue reading.</p>\
             <button type=\"button\" id=\"subscribed\">I have subscribed</button></div>{}",
            clears_on_click("subscribed", "paywall")
        ),
    )
}

async fn blocked(State(state): State<Shared>) -> Response {
    if lock(&state).pause.blocked {
        return pause_page(
            StatusCode::OK,
            "Article",
            &format!("<h1>Article</h1>{CLEARED}"),
        );
    }
    pause_page(
        StatusCode::FORBIDDEN,
        "Access Denied",
        &format!(
            "<h1>Access Denied</h1><p>This page cannot be shown right now.</p>\
             <p><button type=\"button\" id=\"unblock\">Continue</button></p>{}",
            clears_on_click("unblock", "blocked")
        ),
    )
}

async fn write() -> Response {
    pause_page(
        StatusCode::OK,
        "Job details",
        "<div id=\"content\"><h1>Job details</h1><p>Rust engineer, remote, full time. \
         You will build a browser runtime for agents.</p></div>\
         <form id=\"apply-form\" method=\"post\" action=\"/pause/write\" enctype=\"multipart/form-data\">\
         <p><label>Name <input id=\"applicant-name\" name=\"name\" autocomplete=\"name\"></label></p>\
         <p><label>CV <input id=\"resume\" name=\"resume\" type=\"file\"></label></p>\
         <p><button id=\"apply\" type=\"submit\">Apply</button></p></form>",
    )
}

async fn write_submit(State(state): State<Shared>) -> Response {
    {
        let mut s = lock(&state);
        s.pause.applications = s.pause.applications.saturating_add(1);
    }
    pause_page(
        StatusCode::OK,
        "Job details",
        "<h1>Job details</h1><p class=\"toast-success\" role=\"status\">Application received.</p>",
    )
}

async fn stuck(State(state): State<Shared>) -> Response {
    let (dismissed, went) = {
        let s = lock(&state);
        (s.pause.stuck, s.pause.go_clicks > 0)
    };
    let overlay = if dismissed {
        ""
    } else {
        "<div id=\"overlay\" role=\"dialog\" aria-modal=\"true\" aria-label=\"Newsletter\"><div class=\"box\">\
         <p>Our weekly digest: the best tables, every Monday.</p>\
         <button type=\"button\" id=\"dismiss\">Close</button></div></div>"
    };
    let content = if went { CLEARED } else { "" };
    pause_page(
        StatusCode::OK,
        "Wizard",
        &format!(
            "<h1>Wizard</h1><p>Step 1 of 2.</p><p><button type=\"button\" id=\"go\">Next step</button></p>\
             <div id=\"result\">{content}</div>{overlay}\
             <script>(() => {{\
               const dismiss = document.getElementById('dismiss');\
               if (dismiss) dismiss.addEventListener('click', () => {{\
                 document.getElementById('overlay').remove();\
                 fetch('/api/pause/clear/stuck', {{ method: 'POST', keepalive: true }}).catch(() => {{}});\
               }});\
               document.getElementById('go').addEventListener('click', () => {{\
                 fetch('/api/pause/go', {{ method: 'POST', keepalive: true }}).catch(() => {{}});\
                 if (!document.getElementById('content')) {{\
                   const c = document.createElement('div'); c.id = 'content'; c.textContent = 'Cleared';\
                   document.getElementById('result').append(c);\
                 }}\
               }});\
             }})();</script>"
        ),
    )
}

fn code_page(status: StatusCode, error: Option<&str>) -> Response {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(e)))
        .unwrap_or_default();
    pause_page(
        status,
        "Almost there",
        &format!(
            "<h1>Almost there</h1><p>Enter the reference from your letter.</p>{error}\
             <form id=\"code-form\" method=\"post\" action=\"/pause/needs-input\">\
             <p><label>Reference <input id=\"code\" name=\"code\" required autocomplete=\"off\"></label></p>\
             <p><button id=\"send\" type=\"submit\">Continue</button></p></form>"
        ),
    )
}

fn code_accepted() -> Response {
    pause_page(
        StatusCode::OK,
        "Thank you",
        &format!("<h1>Thank you</h1>{CLEARED}"),
    )
}

async fn needs_input(State(state): State<Shared>) -> Response {
    if lock(&state).pause.needs_input {
        return code_accepted();
    }
    code_page(StatusCode::OK, None)
}

#[derive(Debug, Default, Deserialize)]
struct CodeForm {
    #[serde(default)]
    code: String,
}

async fn needs_input_submit(State(state): State<Shared>, Form(form): Form<CodeForm>) -> Response {
    let code = form.code.trim();
    if code.is_empty() {
        return code_page(StatusCode::BAD_REQUEST, Some("Enter the reference."));
    }
    {
        let mut s = lock(&state);
        s.pause.needs_input = true;
        s.pause.submissions.push(code.chars().count());
    }
    code_accepted()
}

/// The port of the request's `Host` header, if it names one.
fn host_port(headers: &HeaderMap) -> Option<u16> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let (_, port) = host.rsplit_once(':')?;
    port.parse().ok()
}

async fn elsewhere(headers: HeaderMap) -> Response {
    let href = match host_port(&headers) {
        Some(port) => format!("http://localhost:{port}/pause/landing"),
        None => "http://localhost/pause/landing".to_owned(),
    };
    pause_page(
        StatusCode::OK,
        "Elsewhere",
        &format!(
            "<h1>Elsewhere</h1><p><a id=\"away\" href=\"{}\">Next page</a></p>",
            esc(&href)
        ),
    )
}

async fn landing() -> Response {
    pause_page(
        StatusCode::OK,
        "Landing",
        "<h1>Welcome</h1><div id=\"content\">Landing</div>",
    )
}

async fn state(State(state): State<Shared>) -> Response {
    Json(lock(&state).pause.clone()).into_response()
}

async fn clear(State(state): State<Shared>, Path(reason): Path<String>) -> Response {
    let mut s = lock(&state);
    let flag = match reason.as_str() {
        "challenge" => &mut s.pause.challenge,
        "login" => &mut s.pause.login,
        "paywall" => &mut s.pause.paywall,
        "blocked" => &mut s.pause.blocked,
        "stuck" => &mut s.pause.stuck,
        "needs-input" => &mut s.pause.needs_input,
        _ => {
            drop(s);
            return json_error(StatusCode::NOT_FOUND, "unknown pause reason");
        }
    };
    *flag = true;
    Json(s.pause.clone()).into_response()
}

async fn go(State(state): State<Shared>) -> Response {
    let mut s = lock(&state);
    s.pause.go_clicks = s.pause.go_clicks.saturating_add(1);
    Json(serde_json::json!({ "goClicks": s.pause.go_clicks })).into_response()
}

async fn submissions(State(state): State<Shared>) -> Response {
    Json(serde_json::json!({ "count": lock(&state).pause.submissions.len() })).into_response()
}

async fn reset(State(state): State<Shared>) -> Response {
    lock(&state).pause = PauseState::default();
    StatusCode::NO_CONTENT.into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_port_comes_from_the_host_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(host_port(&headers), None);
        for (host, port) in [
            ("127.0.0.1:8788", Some(8788)),
            ("[::1]:9000", Some(9000)),
            ("[::1]", None),
            ("example.test", None),
            ("127.0.0.1:x", None),
        ] {
            headers.insert(header::HOST, HeaderValue::from_static(host));
            assert_eq!(host_port(&headers), port, "{host}");
        }
    }
}
