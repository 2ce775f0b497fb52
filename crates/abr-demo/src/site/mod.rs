//! The demo site: a small social site with a real sign-in (HttpOnly session cookie), a
//! composer with immediate media upload, a feed, permalinks, a small admin area (a users
//! table and an "Add user" form), a ground-truth API and one-shot fault injection.
//!
//! # HTTP contract
//! - `GET /login`: form `#username`, `#password`, submit button; `POST /login`
//!   (urlencoded). Any non-empty username with password [`DEMO_PASSWORD`] signs in: it sets
//!   the host-only `demo_session` cookie (random 256-bit token; `HttpOnly; SameSite=Lax;
//!   Path=/`, no `Domain`) and redirects (303) to `/compose`, whose script stores the
//!   localStorage key `demo_prefs`. A wrong password answers 401 with the form and `.error`.
//! - `GET /compose`: signed in, the composer (`#post-text`, `#media` (multiple),
//!   `#media-status`, hidden `#media-ids`, `#submit`); otherwise 303 to `/login`. Choosing
//!   files uploads them at once to `POST /api/upload` (multipart; `{"ids": [...]}`, or 4xx
//!   `{"error": ...}`); `#media-status` gets class `media-ok`, or `media-error` with the
//!   message.
//! - `POST /compose` (urlencoded or multipart: `text`, `media_ids` comma-separated): saves
//!   the post and answers a page whose `.toast-success` links to `/p/{id}`.
//! - `GET /p/{id}`: the post (author, text, media count). `GET /feed`: the signed-in
//!   user's posts, newest first, each `<li class="post" data-id="{id}">` holding
//!   `<p class="post-text">`. `GET /logout`: ends the session.
//! - `GET /admin/users`: signed in, the users table (`<table id="users">`, header row
//!   Email, Role; each row `<td class="email">`, `<td class="role">`), an `#add-user-btn`
//!   button that shows the hidden form `#add-user` (`#email-input`, `#role-dropdown` with
//!   `viewer`/`editor`/`admin` labelled Viewer/Editor/Admin, a "Submit" button); otherwise
//!   303 to `/login`. After a user was added, the next load of the page (once) shows
//!   `.success-message` "User created successfully".
//! - `POST /admin/users` (urlencoded `email`, `role`): signed in, adds the user and answers
//!   303 to `/admin/users`; an invalid email, an unknown role or an email already listed
//!   (case-insensitive) is a 400 page with `.error-banner` and the form filled in, nothing
//!   stored. Not signed in: 303 to `/login`, nothing stored.
//! - `GET /invoices?tag=`: download links (an invoice PDF as an attachment, a 64 KiB archive,
//!   a 1 MiB stream of undeclared length, an ELF program named `tool.pdf`, a page);
//!   `GET /invoices/{file}` serves them.
//! - `GET /api/uploads`: every file `POST /api/upload` received `{id, owner, name, size,
//!   sha256}` (ground truth).
//! - `GET /api/posts`: every post `{id, author, text, mediaCount, createdAt}` (ground truth).
//! - `GET /api/users`: every user `{email, role, createdBy, createdAt}` (ground truth).
//! - `GET /__faults` / `POST /__faults` `{"mode": M}`: the one-shot fault of the next post
//!   attempt (see [`FaultMode`]); an unknown mode is a 400 JSON error.
//!
//! Every route sits behind the **write ledger** ([`LedgerEntry`], `GET /api/ledger`): each
//! request with a method other than `GET`, `HEAD` or `OPTIONS` that reaches the site is
//! recorded (method and path, never the body), and so is every WebSocket upgrade and message
//! on `/attack/ws`. The social site's own posts are in it too. See the `ledger` module.
//!
//! Pages for ABR's guard rails, outside the social site (no session):
//! - `GET /guard`: the guard corpus, controls marked with the commit guard's expected
//!   verdict ([`GUARD_CORPUS`]), and its ledgers `GET /api/guard/writes` (committing
//!   controls activated, `POST`) and `GET /api/guard/seen` (harmless controls clicked,
//!   recorded with a `GET`), `POST /api/guard/reset`. See the `guard` module.
//! - `GET /attack/{name}`: ordinary pages whose actions write ([`ATTACK_PAGES`],
//!   [`ATTACK_BUTTONS`]), each write a real non-safe request to `/attack/submit`,
//!   `/attack/api/{what}`, `/attack/graphql` or the WebSocket `/attack/ws`, so the ledger
//!   sees it; and `GET /attack/custom/{name}`, pages a test registers with
//!   [`DemoSite::set_page`]. See the `attack` module.
//! - `GET /harmless`: the harmless corpus ([`HARMLESS_CORPUS`]), common controls that only
//!   read, each recording with a `GET` that it was reached (`GET /api/harmless/seen`). See
//!   the `harmless` module.
//! - `GET /pause/{challenge,login,paywall,blocked,write,stuck,needs-input,elsewhere,landing}`:
//!   one page per pause reason, each cleared by a person with clicks and typing, and
//!   `GET /api/pause/state` ([`PauseState`]), `POST /api/pause/clear/{reason}`,
//!   `POST /api/pause/reset`. See the `pause` module.

mod attack;
mod guard;
mod harmless;
mod html;
mod ledger;
mod pause;

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router, middleware};
use cookie::{Cookie, SameSite};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

pub use attack::{ATTACK_BUTTONS, ATTACK_PAGES, InvalidPageName};
pub use guard::{GUARD_CORPUS, GuardControl, MAX_LEDGER};
pub use harmless::{HARMLESS_CORPUS, HarmlessAction, HarmlessControl};
pub use ledger::{LedgerEntry, MAX_WRITE_LEDGER};
pub use pause::PauseState;

/// The password that signs any username in.
pub const DEMO_PASSWORD: &str = "demo-password";
/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "demo_session";
/// Largest accepted request body (uploads included).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Longest accepted post text, in characters.
pub const MAX_TEXT_CHARS: usize = 5000;
/// Most media files per upload and per post.
pub const MAX_MEDIA: usize = 10;
/// Longest accepted username, in characters.
pub const MAX_USERNAME_CHARS: usize = 64;
/// Longest accepted email address of the admin form, in characters.
pub const MAX_EMAIL_CHARS: usize = 254;
/// The roles the admin form offers, as submitted (`<option value>`).
pub const USER_ROLES: [&str; 3] = ["viewer", "editor", "admin"];
/// What the admin page shows once after a user was added.
pub const USER_CREATED_MESSAGE: &str = "User created successfully";

/// Behaviour of the next post attempt (or the next "Add user" submit). One-shot: consumed by
/// that attempt, then back to [`FaultMode::None`]. `media_reject` is consumed by the next
/// upload (or, for a post without media, by the next submit of the composer; the admin form
/// leaves it pending); every other mode by the next `POST /compose` or `POST /admin/users`
/// of a signed-in user. On the admin form, "toast" means the `.success-message` and "saved"
/// means the user is added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultMode {
    /// Normal behaviour: saved, toast shown.
    #[default]
    None,
    /// Saved; a plain page without the toast.
    NoToast,
    /// Nothing saved; an error page with `.error-banner`.
    FailBeforeSave,
    /// Saved; then an error page with `.error-banner` and no toast.
    FailAfterSave,
    /// Saved; the toast appears 3 s after the page loads.
    SlowToast,
    /// Rejected at submit: nothing saved, the session is invalidated, 303 to `/login`.
    ExpireSession,
    /// The media upload is refused with 422; nothing saved.
    MediaReject,
}

impl FaultMode {
    /// Every mode.
    pub const ALL: [Self; 7] = [
        Self::None,
        Self::NoToast,
        Self::FailBeforeSave,
        Self::FailAfterSave,
        Self::SlowToast,
        Self::ExpireSession,
        Self::MediaReject,
    ];

    /// The wire name, e.g. `no_toast`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::NoToast => "no_toast",
            Self::FailBeforeSave => "fail_before_save",
            Self::FailAfterSave => "fail_after_save",
            Self::SlowToast => "slow_toast",
            Self::ExpireSession => "expire_session",
            Self::MediaReject => "media_reject",
        }
    }
}

impl fmt::Display for FaultMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown fault mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown fault mode {0:?}; expected one of none, no_toast, fail_before_save, fail_after_save, slow_toast, expire_session, media_reject"
)]
pub struct UnknownFaultMode(pub String);

impl FromStr for FaultMode {
    type Err = UnknownFaultMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownFaultMode(s.to_owned()))
    }
}

/// A stored post, as `GET /api/posts` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Post {
    /// Random hex id; the permalink is `/p/{id}`.
    pub id: String,
    /// Username of the author.
    pub author: String,
    /// Text as submitted, line breaks normalised to `\n`.
    pub text: String,
    /// Number of attached media files.
    pub media_count: usize,
    /// Creation time, RFC 3339.
    pub created_at: String,
}

/// A user added through the admin form, as `GET /api/users` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// The email address, as submitted (trimmed).
    pub email: String,
    /// One of [`USER_ROLES`].
    pub role: String,
    /// Username of the signed-in user who added it.
    pub created_by: String,
    /// Creation time, RFC 3339.
    pub created_at: String,
}

/// What the admin page shows on its next load for a session (once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AdminFlash {
    /// The success message, in the markup.
    Created,
    /// The success message, 3 s after the page loads (`slow_toast`).
    CreatedSlowly,
}

#[derive(Debug)]
struct Upload {
    owner: String,
    /// The file's name, size and SHA-256 (lowercase hex), as received.
    file: UploadedFile,
}

/// A file the site received (`GET /api/uploads`: ground truth of what reached it).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UploadedFile {
    /// The upload's id.
    pub id: String,
    /// Who uploaded it.
    pub owner: String,
    /// The file name the browser sent.
    pub name: String,
    /// Its size in bytes.
    pub size: usize,
    /// The SHA-256 of its bytes (lowercase hex).
    pub sha256: String,
}

#[derive(Debug, Default)]
struct SiteState {
    /// Session token → username.
    sessions: HashMap<String, String>,
    posts: Vec<Post>,
    uploads: HashMap<String, Upload>,
    users: Vec<User>,
    /// Session token → what the admin page shows on its next load.
    flash: HashMap<String, AdminFlash>,
    fault: FaultMode,
    /// The guard corpus's ledgers.
    guard: guard::GuardLedger,
    /// The pause pages' flags and records.
    pause: PauseState,
    /// Every write that reached the site.
    ledger: ledger::WriteLedger,
    /// Ids of the harmless corpus's controls that were reached, in order.
    harmless: Vec<String>,
    /// Pages registered with [`DemoSite::set_page`], by name.
    pages: HashMap<String, String>,
    /// How long a sign-in's cookie lasts ([`DemoSite::keep_sign_ins`]); `None`: until the
    /// browser closes.
    keep_sign_ins: Option<time::Duration>,
}

type Shared = Arc<Mutex<SiteState>>;

fn lock(state: &Shared) -> MutexGuard<'_, SiteState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running demo site.
#[derive(Debug)]
pub struct DemoSite {
    addr: SocketAddr,
    state: Shared,
    stop: Option<oneshot::Sender<()>>,
    /// Set to `true` when the site stops: open WebSockets close on it.
    closing: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl DemoSite {
    /// Binds `bind` (port 0 picks a free port) and serves the site on the current tokio
    /// runtime until [`DemoSite::shutdown`] or drop.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn start(bind: SocketAddr) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let state = Shared::default();
        let (closing, closed) = watch::channel(false);
        let app = router(Arc::clone(&state), closed);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!(error = %e, "the demo site stopped with an error");
            }
        });
        Ok(Self {
            addr,
            state,
            stop: Some(stop),
            closing,
            task: Some(task),
        })
    }

    /// The bound address (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port`, without a trailing slash. An unspecified bind address
    /// (`0.0.0.0`, `::`) is reached through loopback.
    pub fn base_url(&self) -> String {
        let ip = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        format!("http://{}", SocketAddr::new(ip, self.addr.port()))
    }

    /// Every stored post, oldest first: the ground truth.
    pub fn posts(&self) -> Vec<Post> {
        lock(&self.state).posts.clone()
    }

    /// Every user added through the admin form, oldest first: the ground truth.
    pub fn users(&self) -> Vec<User> {
        lock(&self.state).users.clone()
    }

    /// The pending fault mode.
    pub fn fault(&self) -> FaultMode {
        lock(&self.state).fault
    }

    /// Sets the behaviour of the next post attempt (one-shot).
    pub fn set_fault(&self, mode: FaultMode) {
        lock(&self.state).fault = mode;
    }

    /// Sign-ins from now on set a cookie that lasts `lasts` (`Max-Age`), as a site that keeps
    /// you signed in does: it outlives the browser, in a profile kept on disk. `None` (the
    /// default): a session cookie, gone when the browser closes.
    pub fn keep_sign_ins(&self, lasts: Option<time::Duration>) {
        lock(&self.state).keep_sign_ins = lasts;
    }

    /// Ids of the guard corpus's committing controls that were activated, in order.
    pub fn guard_writes(&self) -> Vec<String> {
        lock(&self.state).guard.writes.clone()
    }

    /// Ids of the guard corpus's harmless controls that were clicked, in order (each recorded
    /// with a `GET`, so never in the write ledger).
    pub fn guard_seen(&self) -> Vec<String> {
        lock(&self.state).guard.seen.clone()
    }

    /// Clears both guard ledgers.
    pub fn reset_guard(&self) {
        lock(&self.state).guard = guard::GuardLedger::default();
    }

    /// The pause pages' state: what was cleared and recorded.
    pub fn pause_state(&self) -> PauseState {
        lock(&self.state).pause.clone()
    }

    /// Puts every pause page back to its blocked state.
    pub fn reset_pause(&self) {
        lock(&self.state).pause = PauseState::default();
    }

    /// Every write that reached the site, in arrival order (at most [`MAX_WRITE_LEDGER`]).
    pub fn ledger(&self) -> Vec<LedgerEntry> {
        lock(&self.state).ledger.entries()
    }

    /// Writes that arrived while the ledger was full, and were not kept.
    pub fn ledger_dropped(&self) -> u64 {
        lock(&self.state).ledger.dropped()
    }

    /// Empties the write ledger (and its dropped count).
    pub fn reset_ledger(&self) {
        lock(&self.state).ledger.clear();
    }

    /// Ids of the harmless corpus's controls that were reached, in order (each recorded with
    /// a `GET`).
    pub fn harmless_seen(&self) -> Vec<String> {
        lock(&self.state).harmless.clone()
    }

    /// Clears the harmless corpus's record.
    pub fn reset_harmless(&self) {
        lock(&self.state).harmless.clear();
    }

    /// Serves `html` at `GET /attack/custom/{name}` (replacing a page of that name), on the
    /// same origin as the write ledger. There is no HTTP endpoint that does this.
    ///
    /// # Errors
    /// When `name` is not 1 to 64 of `a-z`, `0-9`, `-`, `_`.
    pub fn set_page(&self, name: &str, html: impl Into<String>) -> Result<(), InvalidPageName> {
        if !attack::is_page_name(name) {
            return Err(InvalidPageName(name.to_owned()));
        }
        lock(&self.state).pages.insert(name.to_owned(), html.into());
        Ok(())
    }

    /// Stops accepting, lets open requests finish (at most 2 s), then stops. Open WebSockets
    /// are closed.
    pub async fn shutdown(mut self) {
        self.closing.send_replace(true);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(2), &mut task)
                .await
                .is_err()
        {
            // Idle keep-alive connections (a browser) may hold graceful shutdown open.
            task.abort();
        }
    }
}

impl Drop for DemoSite {
    fn drop(&mut self) {
        self.closing.send_replace(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The site's routes over `state`, every one behind the write ledger. `closed` turns `true`
/// when the site stops.
fn router(state: Shared, closed: watch::Receiver<bool>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/login", get(login_form).post(login))
        .route("/logout", get(logout))
        .route("/compose", get(compose_form).post(compose_submit))
        .route("/api/upload", post(upload))
        .route("/api/posts", get(api_posts))
        .route("/api/uploads", get(api_uploads))
        .route("/invoices", get(invoices))
        .route("/invoices/{file}", get(invoice_file))
        .route("/admin/users", get(admin_users).post(admin_add_user))
        .route("/api/users", get(api_users))
        .route("/p/{id}", get(permalink))
        .route("/feed", get(feed))
        .route("/slow", get(slow))
        .route("/__faults", get(get_fault).post(set_fault))
        .merge(guard::routes())
        .merge(pause::routes())
        .merge(ledger::routes())
        .merge(attack::routes())
        .merge(harmless::routes())
        .fallback(not_found)
        .layer(axum::Extension(attack::Closing(closed)))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            ledger::record_writes,
        ))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

// ---------------------------------------------------------------------------------------
// Helpers

fn page(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        Html(body),
    )
        .into_response()
}

fn json_error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}

/// `value` as JSON, `no-store`.
fn no_store_json(value: serde_json::Value) -> Response {
    (
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        Json(value),
    )
        .into_response()
}

/// `204 No Content`, `no-store`: the answer to a recording `GET`.
fn no_store_no_content() -> Response {
    (
        StatusCode::NO_CONTENT,
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
    )
        .into_response()
}

/// The last value of `name` in a query string or an urlencoded body.
fn form_value(encoded: &[u8], name: &str) -> Option<String> {
    url::form_urlencoded::parse(encoded)
        .filter(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .last()
}

/// 1 to 64 ASCII letters, digits, `-` or `_`: the ids the ledgers keep.
fn is_plain_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `n` random bytes as lowercase hex; `None` if the OS has no randomness to give.
fn random_hex(n: usize) -> Option<String> {
    let mut bytes = vec![0_u8; n];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `demo_session` value among the request's `Cookie` headers.
fn session_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == SESSION_COOKIE)
        .map(|c| c.value().to_owned())
}

/// The session cookie as the site sets it: host-only (no `Domain`), `Path=/`, `HttpOnly`,
/// `SameSite=Lax`.
fn session_cookie(value: String) -> cookie::CookieBuilder<'static> {
    Cookie::build((SESSION_COOKIE, value))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
}

/// `cookie` as a `Set-Cookie` header value.
fn set_cookie(cookie: cookie::CookieBuilder<'_>) -> Option<HeaderValue> {
    HeaderValue::from_str(&cookie.build().to_string()).ok()
}

/// The signed-in session: `(token, username)`.
fn session(state: &Shared, headers: &HeaderMap) -> Option<(String, String)> {
    let token = session_token(headers)?;
    let user = lock(state).sessions.get(&token).cloned()?;
    Some((token, user))
}

/// To the sign-in page, removing the session cookie (empty, `Max-Age=0`, expired).
fn to_login_clearing_cookie() -> Response {
    let mut response = Redirect::to("/login").into_response();
    if let Some(removal) = set_cookie(session_cookie(String::new()).removal()) {
        response.headers_mut().insert(header::SET_COOKIE, removal);
    }
    response
}

fn normalize_newlines(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

fn is_post_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

// ---------------------------------------------------------------------------------------
// Pages

async fn index(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let user = session(&state, &headers).map(|(_, u)| u);
    page(StatusCode::OK, html::index(user.as_deref()))
}

async fn not_found(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let user = session(&state, &headers).map(|(_, u)| u);
    page(StatusCode::NOT_FOUND, html::not_found(user.as_deref()))
}

async fn login_form() -> Response {
    page(StatusCode::OK, html::login(None, ""))
}

#[derive(Debug, Deserialize)]
struct LoginForm {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

async fn login(State(state): State<Shared>, Form(form): Form<LoginForm>) -> Response {
    let username = form.username.trim();
    if username.is_empty() || username.chars().count() > MAX_USERNAME_CHARS {
        return page(
            StatusCode::UNAUTHORIZED,
            html::login(Some("Enter a username of 1 to 64 characters."), ""),
        );
    }
    if form.password != DEMO_PASSWORD {
        return page(
            StatusCode::UNAUTHORIZED,
            html::login(Some("Wrong username or password."), username),
        );
    }
    let Some(token) = random_hex(32) else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            html::error_banner(None, "Could not start a session. Try again."),
        );
    };
    let keep = {
        let mut state = lock(&state);
        state.sessions.insert(token.clone(), username.to_owned());
        state.keep_sign_ins
    };
    let cookie = match keep {
        Some(lasts) => session_cookie(token).max_age(lasts),
        None => session_cookie(token),
    };
    match set_cookie(cookie) {
        Some(cookie) => ([(header::SET_COOKIE, cookie)], Redirect::to("/compose")).into_response(),
        None => page(
            StatusCode::INTERNAL_SERVER_ERROR,
            html::error_banner(None, "Could not start a session. Try again."),
        ),
    }
}

async fn logout(State(state): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(token) = session_token(&headers) {
        lock(&state).sessions.remove(&token);
    }
    to_login_clearing_cookie()
}

async fn compose_form(State(state): State<Shared>, headers: HeaderMap) -> Response {
    match session(&state, &headers) {
        Some((_, user)) => page(StatusCode::OK, html::compose(&user)),
        None => Redirect::to("/login").into_response(),
    }
}

#[derive(Debug, Default, Deserialize)]
struct ComposeForm {
    #[serde(default)]
    text: String,
    #[serde(default)]
    media_ids: String,
}

async fn read_compose_form(request: Request) -> Result<ComposeForm, Response> {
    let multipart = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    if !multipart {
        return Form::<ComposeForm>::from_request(request, &())
            .await
            .map(|Form(form)| form)
            .map_err(IntoResponse::into_response);
    }
    let mut parts = Multipart::from_request(request, &())
        .await
        .map_err(IntoResponse::into_response)?;
    let mut form = ComposeForm::default();
    loop {
        let field = match parts.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return Err((e.status(), e.body_text()).into_response()),
        };
        let name = field.name().unwrap_or_default().to_owned();
        let value = field
            .text()
            .await
            .map_err(|e| (e.status(), e.body_text()).into_response())?;
        match name.as_str() {
            "text" => form.text = value,
            "media_ids" => form.media_ids = value,
            _ => {}
        }
    }
    Ok(form)
}

async fn compose_submit(State(state): State<Shared>, request: Request) -> Response {
    let Some((token, user)) = session(&state, request.headers()) else {
        return Redirect::to("/login").into_response();
    };
    let form = match read_compose_form(request).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    let fault = std::mem::take(&mut lock(&state).fault);
    match fault {
        FaultMode::ExpireSession => {
            lock(&state).sessions.remove(&token);
            return to_login_clearing_cookie();
        }
        FaultMode::FailBeforeSave => {
            return page(
                StatusCode::INTERNAL_SERVER_ERROR,
                html::error_banner(
                    Some(&user),
                    "Something went wrong. Your post was not published.",
                ),
            );
        }
        _ => {}
    }

    let text = normalize_newlines(&form.text);
    let media_ids: Vec<&str> = form
        .media_ids
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .collect();
    let refuse = |message: &str| {
        page(
            StatusCode::BAD_REQUEST,
            html::error_banner(Some(&user), message),
        )
    };
    if text.chars().count() > MAX_TEXT_CHARS {
        return refuse("Your post is too long (5000 characters at most).");
    }
    if text.trim().is_empty() && media_ids.is_empty() {
        return refuse("Write something or attach media.");
    }
    if media_ids.len() > MAX_MEDIA {
        return refuse("Too many media files (10 at most).");
    }
    let Some(id) = random_hex(8) else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            html::error_banner(
                Some(&user),
                "Something went wrong. Your post was not published.",
            ),
        );
    };
    let post = {
        let mut s = lock(&state);
        let all_owned = media_ids
            .iter()
            .all(|m| s.uploads.get(*m).is_some_and(|u| u.owner == user));
        if !all_owned {
            drop(s);
            return refuse("Some media could not be attached. Upload it again.");
        }
        for m in &media_ids {
            s.uploads.remove(*m);
        }
        let post = Post {
            id,
            author: user.clone(),
            text,
            media_count: media_ids.len(),
            created_at: now_rfc3339(),
        };
        s.posts.push(post.clone());
        post
    };
    match fault {
        FaultMode::NoToast => page(StatusCode::OK, html::plain(&user)),
        FaultMode::FailAfterSave => page(
            StatusCode::INTERNAL_SERVER_ERROR,
            html::error_banner(Some(&user), "Something went wrong. Please try again later."),
        ),
        FaultMode::SlowToast => page(StatusCode::OK, html::posted_slowly(&user, &post)),
        _ => page(StatusCode::OK, html::posted(&user, &post)),
    }
}

async fn upload(State(state): State<Shared>, headers: HeaderMap, request: Request) -> Response {
    let Some((_, user)) = session(&state, &headers) else {
        return json_error(StatusCode::UNAUTHORIZED, "Sign in to upload media.");
    };
    {
        let mut s = lock(&state);
        if s.fault == FaultMode::MediaReject {
            s.fault = FaultMode::None;
            return json_error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "This media was rejected by the site.",
            );
        }
    }
    let mut parts = match Multipart::from_request(request, &()).await {
        Ok(parts) => parts,
        Err(e) => return json_error(e.status(), e.body_text()),
    };
    let mut files: Vec<(String, usize, String)> = Vec::new();
    loop {
        let field = match parts.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return json_error(e.status(), e.body_text()),
        };
        let Some(name) = field.file_name().map(str::to_owned) else {
            continue;
        };
        let bytes = match field.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return json_error(e.status(), e.body_text()),
        };
        if bytes.is_empty() {
            return json_error(StatusCode::UNPROCESSABLE_ENTITY, "A file is empty.");
        }
        files.push((name, bytes.len(), abr_core::artifact::sha256_hex(&bytes)));
        if files.len() > MAX_MEDIA {
            return json_error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Too many files (10 at most).",
            );
        }
    }
    if files.is_empty() {
        return json_error(StatusCode::BAD_REQUEST, "No file in the upload.");
    }
    let mut ids = Vec::with_capacity(files.len());
    for _ in &files {
        match random_hex(8) {
            Some(id) => ids.push(id),
            None => return json_error(StatusCode::INTERNAL_SERVER_ERROR, "Try again."),
        }
    }
    let mut s = lock(&state);
    for (id, (name, size, sha256)) in ids.iter().zip(files) {
        s.uploads.insert(
            id.clone(),
            Upload {
                owner: user.clone(),
                file: UploadedFile {
                    id: id.clone(),
                    owner: user.clone(),
                    name,
                    size,
                    sha256,
                },
            },
        );
    }
    drop(s);
    Json(serde_json::json!({ "ids": ids })).into_response()
}

/// `GET /invoices?tag=`: links to download an invoice (`#invoice`, a PDF sent as an
/// attachment), an archive (`#archive`, 64 KiB of `application/octet-stream`, its length
/// declared), a stream (`#stream`, 1 MiB in 16 KiB chunks, no length declared), a program (`#program`, an ELF binary named `tool.pdf`) and a page
/// (`#page`). The tag goes into the files' bytes (a test's canary).
async fn invoices(Query(query): Query<TagQuery>) -> Response {
    let tag = tag_of(&query);
    page(
        StatusCode::OK,
        format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Invoices</title></head>\
             <body><h1>Invoices</h1>\
             <p><a id=\"invoice\" href=\"/invoices/INV-1.pdf?tag={tag}\">Download invoice</a></p>\
             <p><a id=\"archive\" href=\"/invoices/archive.bin?tag={tag}\">Download archive</a></p>\
             <p><a id=\"stream\" href=\"/invoices/stream.bin?tag={tag}\">Download stream</a></p>\
             <p><a id=\"program\" href=\"/invoices/tool.pdf?tag={tag}\">Download tool</a></p>\
             <p><a id=\"page\" href=\"/invoices/notes.html\">Notes</a></p></body></html>"
        ),
    )
}

#[derive(Debug, Default, Deserialize)]
struct TagQuery {
    #[serde(default)]
    tag: String,
}

/// The tag, kept to letters, digits and `-`.
fn tag_of(query: &TagQuery) -> String {
    query
        .tag
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(64)
        .collect()
}

/// `GET /invoices/{file}`: the files `/invoices` links to.
/// The stream's 16 KiB chunks: 1 MiB.
const STREAM_CHUNKS: usize = 64;

async fn invoice_file(Path(file): Path<String>, Query(query): Query<TagQuery>) -> Response {
    let tag = tag_of(&query);
    let attachment = |name: &str| format!("attachment; filename=\"{name}\"");
    match file.as_str() {
        "INV-1.pdf" => (
            [
                (header::CONTENT_TYPE, "application/pdf".to_owned()),
                (header::CONTENT_DISPOSITION, attachment("INV-1.pdf")),
            ],
            format!("%PDF-1.4\n% invoice {tag}\n1 0 obj\n<<>>\nendobj\n%%EOF\n"),
        )
            .into_response(),
        "archive.bin" => (
            [(header::CONTENT_TYPE, "application/octet-stream".to_owned())],
            vec![b'a'; 64 * 1024],
        )
            .into_response(),
        "stream.bin" => {
            let chunks = (0..STREAM_CHUNKS).map(|_| {
                Ok::<_, std::convert::Infallible>(axum::body::Bytes::from_static(&[b's'; 16 * 1024]))
            });
            (
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
                    (header::CONTENT_DISPOSITION, attachment("stream.bin")),
                ],
                axum::body::Body::from_stream(futures::stream::iter(chunks)),
            )
                .into_response()
        }
        "tool.pdf" => {
            let mut elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0".to_vec();
            elf.resize(64, 0);
            elf.extend_from_slice(tag.as_bytes());
            (
                [
                    (header::CONTENT_TYPE, "application/pdf".to_owned()),
                    (header::CONTENT_DISPOSITION, attachment("tool.pdf")),
                ],
                elf,
            )
                .into_response()
        }
        "notes.html" => page(
            StatusCode::OK,
            "<!doctype html><html><head><title>Notes</title></head><body><h1>Notes</h1></body></html>"
                .to_owned(),
        ),
        _ => page(StatusCode::NOT_FOUND, html::not_found(None)),
    }
}

async fn api_uploads(State(state): State<Shared>) -> Response {
    let files: Vec<UploadedFile> = lock(&state)
        .uploads
        .values()
        .map(|u| u.file.clone())
        .collect();
    Json(files).into_response()
}

async fn api_posts(State(state): State<Shared>) -> Response {
    Json(lock(&state).posts.clone()).into_response()
}

async fn permalink(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let user = session(&state, &headers).map(|(_, u)| u);
    let post = is_post_id(&id)
        .then(|| lock(&state).posts.iter().find(|p| p.id == id).cloned())
        .flatten();
    match post {
        Some(post) => page(StatusCode::OK, html::permalink(user.as_deref(), &post)),
        None => page(StatusCode::NOT_FOUND, html::not_found(user.as_deref())),
    }
}

/// What `/slow` says once it is ready.
pub const SLOW_READY: &str = "Ready now";

/// `/slow?ms=N&email=E`: a page that says [`SLOW_READY`] N milliseconds (at most a minute;
/// default 3 s) after it loaded; with `email`, the admin form adding that user appears then
/// too.
#[derive(Debug, Deserialize)]
struct SlowQuery {
    ms: Option<u64>,
    email: Option<String>,
}

async fn slow(axum::extract::Query(query): axum::extract::Query<SlowQuery>) -> Response {
    let ms = query.ms.unwrap_or(3_000).min(60_000);
    page(StatusCode::OK, html::slow(ms, query.email.as_deref()))
}

async fn feed(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let Some((_, user)) = session(&state, &headers) else {
        return Redirect::to("/login").into_response();
    };
    let mine: Vec<Post> = lock(&state)
        .posts
        .iter()
        .filter(|p| p.author == user)
        .cloned()
        .collect();
    page(StatusCode::OK, html::feed(&user, mine.iter().rev()))
}

async fn admin_users(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let Some((token, user)) = session(&state, &headers) else {
        return Redirect::to("/login").into_response();
    };
    let (users, flash) = {
        let mut s = lock(&state);
        (s.users.clone(), s.flash.remove(&token))
    };
    let notice = match flash {
        Some(AdminFlash::Created) => Some(html::AdminNotice::Created),
        Some(AdminFlash::CreatedSlowly) => Some(html::AdminNotice::CreatedSlowly),
        None => None,
    };
    page(
        StatusCode::OK,
        html::admin_users(&user, &users, notice, None),
    )
}

#[derive(Debug, Default, Deserialize)]
struct AddUserForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    role: String,
}

/// Why `email` is not accepted, if it is not: one `@` between a non-empty local part and a
/// dotted domain, no spaces or control characters, at most [`MAX_EMAIL_CHARS`].
fn email_problem(email: &str) -> Option<&'static str> {
    if email.is_empty() {
        return Some("Enter an email address.");
    }
    if email.chars().count() > MAX_EMAIL_CHARS {
        return Some("That email address is too long.");
    }
    let valid = email.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && !domain.contains('@')
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains("..")
    }) && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    (!valid).then_some("Enter a valid email address.")
}

async fn admin_add_user(
    State(state): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<AddUserForm>,
) -> Response {
    let Some((token, user)) = session(&state, &headers) else {
        return Redirect::to("/login").into_response();
    };
    // `media_reject` belongs to the composer: it stays pending.
    let fault = {
        let mut s = lock(&state);
        if s.fault == FaultMode::MediaReject {
            FaultMode::None
        } else {
            std::mem::take(&mut s.fault)
        }
    };
    let email = form.email.trim();
    let refuse = |status: StatusCode, message: &str| {
        let users = lock(&state).users.clone();
        page(
            status,
            html::admin_users(
                &user,
                &users,
                Some(html::AdminNotice::Error(message)),
                Some((email, form.role.as_str())),
            ),
        )
    };
    match fault {
        FaultMode::ExpireSession => {
            lock(&state).sessions.remove(&token);
            return to_login_clearing_cookie();
        }
        FaultMode::FailBeforeSave => {
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong. The user was not created.",
            );
        }
        _ => {}
    }
    if let Some(problem) = email_problem(email) {
        return refuse(StatusCode::BAD_REQUEST, problem);
    }
    if !USER_ROLES.contains(&form.role.as_str()) {
        return refuse(StatusCode::BAD_REQUEST, "Choose a role.");
    }
    {
        let mut s = lock(&state);
        if s.users.iter().any(|u| u.email.eq_ignore_ascii_case(email)) {
            drop(s);
            return refuse(
                StatusCode::BAD_REQUEST,
                "A user with this email address already exists.",
            );
        }
        s.users.push(User {
            email: email.to_owned(),
            role: form.role.clone(),
            created_by: user.clone(),
            created_at: now_rfc3339(),
        });
        match fault {
            FaultMode::NoToast | FaultMode::FailAfterSave => {
                s.flash.remove(&token);
            }
            FaultMode::SlowToast => {
                s.flash.insert(token, AdminFlash::CreatedSlowly);
            }
            _ => {
                s.flash.insert(token, AdminFlash::Created);
            }
        }
    }
    if fault == FaultMode::FailAfterSave {
        return refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong. Please try again later.",
        );
    }
    Redirect::to("/admin/users").into_response()
}

async fn api_users(State(state): State<Shared>) -> Response {
    Json(lock(&state).users.clone()).into_response()
}

#[derive(Debug, Deserialize)]
struct FaultRequest {
    mode: String,
}

async fn get_fault(State(state): State<Shared>) -> Response {
    Json(serde_json::json!({ "mode": lock(&state).fault })).into_response()
}

async fn set_fault(State(state): State<Shared>, body: Bytes) -> Response {
    let request: FaultRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(_) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                "expected a JSON body {\"mode\": \"...\"}",
            );
        }
    };
    match request.mode.parse::<FaultMode>() {
        Ok(mode) => {
            lock(&state).fault = mode;
            Json(serde_json::json!({ "mode": mode })).into_response()
        }
        Err(e) => json_error(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_modes_round_trip_through_their_wire_names() {
        for mode in FaultMode::ALL {
            assert_eq!(mode.as_str().parse::<FaultMode>(), Ok(mode));
            assert_eq!(
                serde_json::to_value(mode).ok(),
                Some(serde_json::json!(mode.as_str()))
            );
        }
        assert!("No_Toast".parse::<FaultMode>().is_err());
        assert!("".parse::<FaultMode>().is_err());
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; demo_session=tok; b=2"),
        );
        assert_eq!(session_token(&headers).as_deref(), Some("tok"));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("xdemo_session=tok"),
        );
        assert_eq!(session_token(&headers), None);
    }

    #[test]
    fn the_session_cookie_is_host_only_http_only_lax_and_removable() {
        let set = set_cookie(session_cookie("tok".to_owned())).unwrap();
        let cookie = Cookie::parse(set.to_str().unwrap()).unwrap();
        assert_eq!((cookie.name(), cookie.value()), (SESSION_COOKIE, "tok"));
        assert_eq!(cookie.http_only(), Some(true));
        assert_eq!(cookie.same_site(), Some(SameSite::Lax));
        assert_eq!(cookie.path(), Some("/"));
        assert_eq!(cookie.domain(), None);

        let response = to_login_clearing_cookie();
        let removal = response.headers().get(header::SET_COOKIE).unwrap();
        let removal = Cookie::parse(removal.to_str().unwrap()).unwrap();
        assert_eq!((removal.name(), removal.value()), (SESSION_COOKIE, ""));
        assert_eq!(removal.max_age(), Some(cookie::time::Duration::ZERO));
        assert_eq!(removal.path(), Some("/"));
        // A removal matches the cookie it removes only with the same path and no domain.
        assert_eq!(removal.domain(), None);
    }

    #[test]
    fn line_breaks_are_normalised_like_a_form_submission() {
        assert_eq!(normalize_newlines("a\r\nb\rc\nd"), "a\nb\nc\nd");
    }

    #[test]
    fn emails_need_one_at_and_a_dotted_domain() {
        for good in [
            "a@b.co",
            "first.last+tag@mail.example.org",
            "x@localhost.test",
        ] {
            assert_eq!(email_problem(good), None, "{good}");
        }
        for bad in [
            "", "plain", "@b.co", "a@", "a@b", "a@@b.co", "a@b@c.co", "a@.b.co", "a@b.co.",
            "a@b..co", "a b@c.co", "a@b.co\n",
        ] {
            assert!(email_problem(bad).is_some(), "{bad:?}");
        }
        let long = format!("{}@b.co", "a".repeat(MAX_EMAIL_CHARS));
        assert!(email_problem(&long).is_some());
    }

    #[test]
    fn post_ids_are_short_hex_only() {
        assert!(is_post_id("00ff"));
        assert!(!is_post_id(""));
        assert!(!is_post_id("../etc"));
        assert!(!is_post_id(&"a".repeat(65)));
    }

    #[test]
    fn tokens_are_256_bit_hex_and_distinct() {
        let a = random_hex(32);
        let b = random_hex(32);
        assert_eq!(a.as_ref().map(String::len), Some(64));
        assert_ne!(a, b);
    }
}
