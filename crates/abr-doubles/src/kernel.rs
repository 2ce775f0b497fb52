//! Double of Kernel's browsers API (`api.onkernel.com`), after its API reference and SDK.
//!
//! Surface (all REST routes require `Authorization: Bearer <api_key>`):
//! * `POST /browsers`, `GET /browsers`, `GET /browsers/{id_or_name}`,
//!   `DELETE /browsers/{id_or_name}` (204). Each browser gets its own Chromium process.
//! * `POST /profiles`, `GET /profiles`, `GET /profiles/{id_or_name}`,
//!   `DELETE /profiles/{id_or_name}`; browsers created with `profile {id|name, save_changes}`
//!   get the stored cookies + localStorage injected, and snapshot them back on delete/expiry.
//! * WS `GET /browser/cdp?jwt=<token>` (no bearer; the jwt authenticates) proxied to that
//!   browser's Chromium; `GET /browser/live/{token}` live-view stand-in page (headful only).
//! * Control endpoints under `/__mock/…` (not recorded, no auth): `POST fail-next-create
//!   {status}`, `POST expire {id}`, `POST drop-sockets`, `POST max-live {max_live}`,
//!   `GET calls`, `GET state`.
//!
//! Not implemented: PATCH, pools, replays, computer/process/fs APIs, real inactivity timers
//! (use [`KernelDouble::expire_session`] instead).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse as _, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use crate::DoubleError;
use crate::browser::ManagedBrowser;
use crate::cdp::CdpClient;
use crate::chromium::ChromiumOptions;
use crate::proxy::{self, CloseMode, SocketRegistry};
use crate::record::{Recorder, record_middleware};
use crate::server::{Server, html_response, json_response};
use crate::storage;
use crate::util::{alnum_id, hex_token, html_escape, lock, rfc3339};

/// Smallest accepted `timeout_seconds`.
pub const MIN_TIMEOUT_SECONDS: u64 = 10;
/// Largest accepted `timeout_seconds` (72 h).
pub const MAX_TIMEOUT_SECONDS: u64 = 259_200;
/// `timeout_seconds` when the body has none.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 60;

/// How a [`KernelDouble`] behaves.
#[derive(Debug, Clone)]
pub struct KernelOptions {
    /// The only accepted bearer token.
    pub api_key: String,
    /// Maximum simultaneously live browsers; more → 429 `rate_limited` (`None` = unlimited).
    pub max_live: Option<usize>,
    /// `Retry-After` seconds on 429 answers.
    pub retry_after_secs: u64,
    /// Port to bind on 127.0.0.1 (0 = ephemeral).
    pub port: u16,
    /// How to launch each browser's Chromium.
    pub chromium: ChromiumOptions,
}

impl Default for KernelOptions {
    fn default() -> Self {
        Self {
            api_key: "sk_test_abr_doubles".to_owned(),
            max_live: None,
            retry_after_secs: 2,
            port: 0,
            chromium: ChromiumOptions::default(),
        }
    }
}

impl KernelOptions {
    /// Defaults with the given API key.
    pub fn with_api_key(api_key: &str) -> Self {
        Self {
            api_key: api_key.to_owned(),
            ..Self::default()
        }
    }
}

/// Cookies and localStorage stored in a profile (what `save_changes` captured).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileState {
    /// CDP cookies (`Storage.getCookies` shape).
    pub cookies: Vec<Value>,
    /// `{origin: {key: value}}`.
    pub local_storage: Map<String, Value>,
}

#[derive(Debug, Clone)]
struct Profile {
    id: String,
    name: Option<String>,
    created_at: OffsetDateTime,
    updated_at: Option<OffsetDateTime>,
    last_used_at: Option<OffsetDateTime>,
    state: ProfileState,
}

impl Profile {
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".to_owned(), json!(self.id));
        m.insert("name".to_owned(), json!(self.name));
        m.insert("created_at".to_owned(), json!(rfc3339(self.created_at)));
        if let Some(t) = self.updated_at {
            m.insert("updated_at".to_owned(), json!(rfc3339(t)));
        }
        if let Some(t) = self.last_used_at {
            m.insert("last_used_at".to_owned(), json!(rfc3339(t)));
        }
        Value::Object(m)
    }
}

#[derive(Debug)]
struct Browser {
    session_id: String,
    jwt: String,
    live_token: String,
    created_at: OffsetDateTime,
    deleted_at: Option<OffsetDateTime>,
    headless: bool,
    stealth: bool,
    timeout_seconds: u64,
    viewport: Value,
    name: Option<String>,
    tags: Option<Value>,
    start_url: Option<String>,
    kiosk_mode: Option<bool>,
    proxy_id: Option<String>,
    /// `(profile id, save_changes)`.
    profile: Option<(String, bool)>,
    runtime: Option<ManagedBrowser>,
}

impl Browser {
    fn is_live(&self) -> bool {
        self.deleted_at.is_none()
    }
}

#[derive(Debug, Default)]
struct Data {
    browsers: Vec<Browser>,
    profiles: Vec<Profile>,
    faults: VecDeque<u16>,
    max_live: Option<usize>,
    created: u64,
    deleted: u64,
    expired: u64,
}

impl Data {
    fn live_count(&self) -> usize {
        self.browsers.iter().filter(|b| b.is_live()).count()
    }

    fn find_live(&self, id_or_name: &str) -> Option<usize> {
        self.browsers.iter().position(|b| {
            b.is_live() && (b.session_id == id_or_name || b.name.as_deref() == Some(id_or_name))
        })
    }

    fn find_any(&self, id_or_name: &str) -> Option<usize> {
        self.find_live(id_or_name).or_else(|| {
            self.browsers
                .iter()
                .rposition(|b| b.session_id == id_or_name || b.name.as_deref() == Some(id_or_name))
        })
    }

    fn find_profile(&self, id_or_name: &str) -> Option<usize> {
        self.profiles
            .iter()
            .position(|p| p.id == id_or_name || p.name.as_deref() == Some(id_or_name))
    }
}

#[derive(Debug)]
struct Shared {
    opts: KernelOptions,
    port: u16,
    recorder: Recorder,
    sockets: SocketRegistry,
    /// Serializes creates and deletes (so `max_live` is exact).
    op: tokio::sync::Mutex<()>,
    data: Mutex<Data>,
}

/// A running Kernel double. Dropping it (or [`KernelDouble::shutdown`]) stops the server,
/// closes proxied sockets and kills every Chromium.
#[derive(Debug)]
pub struct KernelDouble {
    shared: Arc<Shared>,
    server: Server,
}

impl KernelDouble {
    /// Binds `127.0.0.1:<opts.port>` and starts serving (no browser is launched until a create).
    pub async fn start(opts: KernelOptions) -> Result<Self, DoubleError> {
        let listener = Server::bind(opts.port).await?;
        let port = listener
            .local_addr()
            .map_err(|source| DoubleError::Bind {
                port: opts.port,
                source,
            })?
            .port();
        let recorder = Recorder::default();
        let shared = Arc::new(Shared {
            port,
            recorder: recorder.clone(),
            sockets: SocketRegistry::new(),
            op: tokio::sync::Mutex::new(()),
            data: Mutex::new(Data {
                max_live: opts.max_live,
                ..Data::default()
            }),
            opts,
        });
        let router = router(Arc::clone(&shared), recorder);
        let server = Server::spawn(listener, router)?;
        Ok(Self { shared, server })
    }

    /// `http://127.0.0.1:<port>`: what `KERNEL_BASE_URL` should be set to.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.port())
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The accepted API key.
    pub fn api_key(&self) -> &str {
        &self.shared.opts.api_key
    }

    /// Makes the next `POST /browsers` fail with `status` and `{code, message}`; a 429 also
    /// carries `Retry-After` (queued: call twice to fail two creates).
    pub fn fail_next_create(&self, status: u16) {
        lock(&self.shared.data).faults.push_back(status);
    }

    /// Changes the concurrency limit at run time.
    pub fn set_max_live(&self, max_live: Option<usize>) {
        lock(&self.shared.data).max_live = max_live;
    }

    /// Ends browser `id_or_name` as the inactivity timeout would (profile saved if requested,
    /// sockets closed, Chromium killed, live view gone). Returns whether it was live.
    pub async fn expire_session(&self, id_or_name: &str) -> bool {
        self.shared.end(id_or_name, true).await
    }

    /// Drops every proxied CDP socket (no closing handshake) without deleting any browser;
    /// returns how many were open.
    pub fn drop_sockets(&self) -> usize {
        self.shared.sockets.close_all(&CloseMode::Abrupt)
    }

    /// Every request seen so far (except `/__mock/…`), in arrival order.
    pub fn calls(&self) -> Vec<crate::RecordedCall> {
        self.shared.recorder.snapshot()
    }

    /// Number of live (not deleted/expired) browsers.
    pub fn live_sessions(&self) -> usize {
        lock(&self.shared.data).live_count()
    }

    /// Successful `POST /browsers` count.
    pub fn created(&self) -> u64 {
        lock(&self.shared.data).created
    }

    /// Successful `DELETE /browsers/{id}` count.
    pub fn released(&self) -> u64 {
        lock(&self.shared.data).deleted
    }

    /// Browsers ended through [`KernelDouble::expire_session`].
    pub fn expired(&self) -> u64 {
        lock(&self.shared.data).expired
    }

    /// Ids of browsers still live.
    pub fn unreleased(&self) -> Vec<String> {
        lock(&self.shared.data)
            .browsers
            .iter()
            .filter(|b| b.is_live())
            .map(|b| b.session_id.clone())
            .collect()
    }

    /// `Ok` when every created browser was deleted or expired; otherwise the live ids.
    pub fn assert_all_released(&self) -> Result<(), Vec<String>> {
        let live = self.unreleased();
        if live.is_empty() { Ok(()) } else { Err(live) }
    }

    /// Process id of browser `id`'s Chromium while it is live.
    pub fn chromium_pid(&self, id: &str) -> Option<u32> {
        let d = lock(&self.shared.data);
        let i = d.find_live(id)?;
        d.browsers[i].runtime.as_ref().map(|r| r.chromium.pid())
    }

    /// Number of proxied sockets currently open (all browsers).
    pub fn open_sockets(&self) -> usize {
        self.shared.sockets.open_count()
    }

    /// Number of proxied sockets currently open to browser `id`.
    pub fn open_sockets_for(&self, id: &str) -> usize {
        self.shared.sockets.open_count_for(id)
    }

    /// The stored state of a profile, by id or name.
    pub fn profile_state(&self, id_or_name: &str) -> Option<ProfileState> {
        let d = lock(&self.shared.data);
        d.find_profile(id_or_name)
            .map(|i| d.profiles[i].state.clone())
    }

    /// Stops the server, closes every proxied socket and kills every Chromium.
    pub async fn shutdown(mut self) {
        // Close proxied sockets first so the graceful server stop has nothing to wait for.
        self.shared
            .sockets
            .close_all(&CloseMode::going_away("server shutdown"));
        self.server.join().await;
        let runtimes = self.shared.take_runtimes();
        for r in runtimes {
            r.terminate().await;
        }
    }
}

impl Drop for KernelDouble {
    fn drop(&mut self) {
        self.server.stop();
        self.shared
            .sockets
            .close_all(&CloseMode::going_away("server shutdown"));
        drop(self.shared.take_runtimes());
    }
}

impl Shared {
    fn take_runtimes(&self) -> Vec<ManagedBrowser> {
        lock(&self.data)
            .browsers
            .iter_mut()
            .filter_map(|b| b.runtime.take())
            .collect()
    }

    fn browser_json(&self, b: &Browser, profiles: &[Profile]) -> Value {
        let port = self.port;
        let mut m = Map::new();
        m.insert("session_id".to_owned(), json!(b.session_id));
        m.insert(
            "cdp_ws_url".to_owned(),
            json!(format!("ws://127.0.0.1:{port}/browser/cdp?jwt={}", b.jwt)),
        );
        m.insert(
            "webdriver_ws_url".to_owned(),
            json!(format!(
                "ws://127.0.0.1:{port}/browser/webdriver?jwt={}",
                b.jwt
            )),
        );
        m.insert("created_at".to_owned(), json!(rfc3339(b.created_at)));
        m.insert("headless".to_owned(), json!(b.headless));
        m.insert("stealth".to_owned(), json!(b.stealth));
        m.insert("timeout_seconds".to_owned(), json!(b.timeout_seconds));
        if !b.headless {
            m.insert(
                "browser_live_view_url".to_owned(),
                json!(format!(
                    "http://127.0.0.1:{port}/browser/live/{}",
                    b.live_token
                )),
            );
        }
        m.insert("viewport".to_owned(), b.viewport.clone());
        if let Some(v) = b.kiosk_mode {
            m.insert("kiosk_mode".to_owned(), json!(v));
        }
        if let Some(v) = &b.name {
            m.insert("name".to_owned(), json!(v));
        }
        if let Some(v) = &b.tags {
            m.insert("tags".to_owned(), v.clone());
        }
        if let Some(v) = &b.start_url {
            m.insert("start_url".to_owned(), json!(v));
        }
        if let Some(v) = &b.proxy_id {
            m.insert("proxy_id".to_owned(), json!(v));
        }
        if let Some((pid, _)) = &b.profile
            && let Some(p) = profiles.iter().find(|p| &p.id == pid)
        {
            m.insert("profile".to_owned(), p.to_json());
        }
        if let Some(t) = b.deleted_at {
            m.insert("deleted_at".to_owned(), json!(rfc3339(t)));
        }
        Value::Object(m)
    }

    /// Deletes (or expires) a live browser: snapshot profile, close sockets, kill Chromium.
    async fn end(&self, id_or_name: &str, expired: bool) -> bool {
        let _op = self.op.lock().await;
        let (session_id, cdp, save_to) = {
            let d = lock(&self.data);
            let Some(i) = d.find_live(id_or_name) else {
                return false;
            };
            let b = &d.browsers[i];
            let save_to = b
                .profile
                .as_ref()
                .filter(|(_, save)| *save)
                .map(|(id, _)| id.clone());
            (
                b.session_id.clone(),
                b.runtime.as_ref().map(|r| r.cdp.clone()),
                save_to,
            )
        };
        if let (Some(profile_id), Some(cdp)) = (save_to, cdp) {
            match snapshot(&cdp).await {
                Ok(state) => {
                    let mut d = lock(&self.data);
                    if let Some(i) = d.find_profile(&profile_id) {
                        d.profiles[i].state = state;
                        d.profiles[i].updated_at = Some(OffsetDateTime::now_utc());
                    }
                }
                Err(e) => tracing::warn!(error = %e, "kernel double: profile snapshot failed"),
            }
        }
        let runtime = {
            let mut d = lock(&self.data);
            let Some(i) = d.find_live(&session_id) else {
                return false;
            };
            d.browsers[i].deleted_at = Some(OffsetDateTime::now_utc());
            if expired {
                d.expired += 1;
            } else {
                d.deleted += 1;
            }
            d.browsers[i].runtime.take()
        };
        self.sockets.close_tag(
            &session_id,
            &CloseMode::going_away(if expired {
                "browser timed out"
            } else {
                "browser deleted"
            }),
        );
        if let Some(r) = runtime {
            r.terminate().await;
        }
        true
    }

    fn state_json(&self) -> Value {
        let d = lock(&self.data);
        json!({
            "live_sessions": d.live_count(),
            "created": d.created,
            "released": d.deleted,
            "expired": d.expired,
            "max_live": d.max_live,
            "open_sockets": self.sockets.open_count(),
            "unreleased": d.browsers.iter().filter(|b| b.is_live()).map(|b| b.session_id.clone()).collect::<Vec<_>>(),
        })
    }
}

async fn snapshot(cdp: &CdpClient) -> Result<ProfileState, crate::CdpError> {
    Ok(ProfileState {
        cookies: storage::get_cookies(cdp).await?,
        local_storage: storage::read_local_storage(cdp).await?,
    })
}

fn error_code(status: u16) -> &'static str {
    match status {
        400 => "bad_request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        409 => "conflict",
        422 => "invalid_input",
        429 => "rate_limited",
        500 => "internal_error",
        502 => "bad_gateway",
        503 => "service_unavailable",
        _ => "error",
    }
}

fn kernel_error(status: u16, message: &str) -> Response {
    json_response(
        status,
        &json!({ "code": error_code(status), "message": message }),
    )
}

fn rate_limited(retry_after: u64, message: &str, limit: Option<usize>) -> Response {
    let mut resp = kernel_error(429, message);
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
        h.insert(header::RETRY_AFTER, v);
    }
    if let Some(limit) = limit {
        if let Ok(v) = HeaderValue::from_str(&limit.to_string()) {
            h.insert("x-ratelimit-limit", v);
        }
        h.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
    }
    resp
}

fn paged(items: Vec<Value>, offset: usize, limit: usize) -> Response {
    let total = items.len();
    let page: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
    let next = offset.saturating_add(page.len());
    let mut resp = json_response(200, &Value::Array(page));
    let h = resp.headers_mut();
    h.insert(
        "x-has-more",
        HeaderValue::from_static(if next < total { "true" } else { "false" }),
    );
    if let Ok(v) = HeaderValue::from_str(&next.to_string()) {
        h.insert("x-next-offset", v);
    }
    resp
}

/// Parsed `BrowserCreateParams` (the fields the double uses).
#[derive(Debug)]
struct CreateReq {
    headless: bool,
    stealth: bool,
    timeout_seconds: u64,
    viewport: Value,
    window: Option<(u32, u32)>,
    name: Option<String>,
    tags: Option<Value>,
    start_url: Option<String>,
    kiosk_mode: Option<bool>,
    proxy_id: Option<String>,
    /// `(id or name, save_changes)`.
    profile: Option<(String, bool)>,
}

fn parse_create(body: &[u8]) -> Result<CreateReq, String> {
    let obj = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(o)) => o,
            Ok(_) => return Err("request body must be a JSON object".to_owned()),
            Err(e) => return Err(format!("invalid JSON body: {e}")),
        }
    };
    let opt_bool = |k: &str| -> Result<Option<bool>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(format!("{k} must be a boolean")),
        }
    };
    let opt_str = |k: &str| -> Result<Option<String>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{k} must be a string")),
        }
    };
    let timeout_seconds = match obj.get("timeout_seconds") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_SECONDS,
        Some(v) => match v.as_u64() {
            Some(t) if (MIN_TIMEOUT_SECONDS..=MAX_TIMEOUT_SECONDS).contains(&t) => t,
            _ => {
                return Err(format!(
                    "timeout_seconds must be an integer between {MIN_TIMEOUT_SECONDS} and {MAX_TIMEOUT_SECONDS}, got {v}"
                ));
            }
        },
    };
    let (viewport, window) = match obj.get("viewport") {
        None | Some(Value::Null) => (json!({ "width": 1920, "height": 1080 }), None),
        Some(Value::Object(vp)) => {
            let dim = |k: &str| {
                vp.get(k)
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("viewport.{k} must be a positive integer"))
            };
            let (w, h) = (dim("width")?, dim("height")?);
            (Value::Object(vp.clone()), Some((w, h)))
        }
        Some(_) => return Err("viewport must be an object".to_owned()),
    };
    let tags = match obj.get("tags") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => return Err("tags must be an object".to_owned()),
    };
    let profile = match obj.get("profile") {
        None | Some(Value::Null) => None,
        Some(Value::Object(p)) => {
            let key = p
                .get("id")
                .or_else(|| p.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| "profile requires id or name".to_owned())?;
            let save = p
                .get("save_changes")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Some((key.to_owned(), save))
        }
        Some(_) => return Err("profile must be an object".to_owned()),
    };
    Ok(CreateReq {
        headless: opt_bool("headless")?.unwrap_or(false),
        stealth: opt_bool("stealth")?.unwrap_or(false),
        timeout_seconds,
        viewport,
        window,
        name: opt_str("name")?,
        tags,
        start_url: opt_str("start_url")?,
        kiosk_mode: opt_bool("kiosk_mode")?,
        proxy_id: opt_str("proxy_id")?,
        profile,
    })
}

fn router(shared: Arc<Shared>, recorder: Recorder) -> Router {
    Router::new()
        .route("/browsers", post(create).get(list))
        .route("/browsers/{id}", get(retrieve).delete(delete))
        .route("/profiles", post(create_profile).get(list_profiles))
        .route(
            "/profiles/{id}",
            get(retrieve_profile).delete(delete_profile),
        )
        .route("/browser/cdp", get(cdp_upgrade))
        .route("/browser/live/{token}", get(live_view))
        .route("/__mock/fail-next-create", post(mock_fail_next_create))
        .route("/__mock/expire", post(mock_expire))
        .route("/__mock/drop-sockets", post(mock_drop_sockets))
        .route("/__mock/max-live", post(mock_max_live))
        .route("/__mock/calls", get(mock_calls))
        .route("/__mock/state", get(mock_state))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&shared),
            auth_middleware,
        ))
        .with_state(shared)
        .layer(middleware::from_fn_with_state(recorder, record_middleware))
}

type St = State<Arc<Shared>>;

/// Bearer auth on every route except the jwt/token-authenticated `/browser/…` endpoints and the
/// control plane.
async fn auth_middleware(State(s): St, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if path.starts_with("/browser/") || path.starts_with("/__mock") {
        return next.run(req).await;
    }
    if !bearer_ok(req.headers(), &s.opts.api_key) {
        return kernel_error(401, "invalid or missing API key");
    }
    next.run(req).await
}

fn bearer_ok(headers: &HeaderMap, key: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|token| token.trim() == key)
}

async fn create(State(s): St, body: Bytes) -> Response {
    let _op = s.op.lock().await;
    let (fault, max_live, live) = {
        let mut d = lock(&s.data);
        (d.faults.pop_front(), d.max_live, d.live_count())
    };
    if let Some(status) = fault {
        let msg = "injected failure (abr-doubles fail_next_create)";
        return if status == 429 {
            rate_limited(s.opts.retry_after_secs, msg, None)
        } else {
            kernel_error(status, msg)
        };
    }
    let req = match parse_create(&body) {
        Ok(r) => r,
        Err(m) => return kernel_error(400, &m),
    };
    let profile_state = {
        let mut d = lock(&s.data);
        if let Some(name) = &req.name
            && d.find_live(name).is_some()
        {
            return kernel_error(409, &format!("a browser named {name:?} is already active"));
        }
        match &req.profile {
            None => None,
            Some((key, save)) => match d.find_profile(key) {
                None => return kernel_error(404, &format!("profile {key:?} not found")),
                Some(i) => {
                    d.profiles[i].last_used_at = Some(OffsetDateTime::now_utc());
                    Some((d.profiles[i].id.clone(), *save, d.profiles[i].state.clone()))
                }
            },
        }
    };
    if let Some(limit) = max_live
        && live >= limit
    {
        return rate_limited(
            s.opts.retry_after_secs,
            &format!("concurrent browser limit reached ({limit})"),
            Some(limit),
        );
    }
    let mut chromium_opts = s.opts.chromium.clone();
    if req.window.is_some() {
        chromium_opts.window_size = req.window;
    }
    let runtime = match ManagedBrowser::launch(&chromium_opts).await {
        Ok(r) => r,
        Err(e) => return kernel_error(500, &format!("failed to start browser: {e}")),
    };
    if let Some((_, _, state)) = &profile_state {
        let applied = async {
            storage::set_cookies(&runtime.cdp, &state.cookies).await?;
            storage::install_storage_script(&runtime.cdp, &state.local_storage, &Map::new()).await
        }
        .await;
        if let Err(e) = applied {
            runtime.terminate().await;
            return kernel_error(500, &format!("failed to load profile: {e}"));
        }
    }
    if let Some(url) = req.start_url.clone() {
        // Fire-and-forget navigation of the first tab, as the real service does.
        let cdp = runtime.cdp.clone();
        tokio::spawn(async move {
            if let Ok(Some((target, _))) = cdp.page_targets().await.map(|t| t.into_iter().next())
                && let Ok(sid) = cdp.attach(&target).await
            {
                let _ = cdp
                    .call_in(Some(&sid), "Page.navigate", json!({ "url": url }))
                    .await;
                cdp.detach(&sid).await;
            }
        });
    }
    let browser = Browser {
        session_id: alnum_id(24),
        jwt: hex_token::<24>(),
        live_token: hex_token::<16>(),
        created_at: OffsetDateTime::now_utc(),
        deleted_at: None,
        headless: req.headless,
        stealth: req.stealth,
        timeout_seconds: req.timeout_seconds,
        viewport: req.viewport,
        name: req.name,
        tags: req.tags,
        start_url: req.start_url,
        kiosk_mode: req.kiosk_mode,
        proxy_id: req.proxy_id,
        profile: profile_state.map(|(id, save, _)| (id, save)),
        runtime: Some(runtime),
    };
    let mut d = lock(&s.data);
    let body = s.browser_json(&browser, &d.profiles);
    d.browsers.push(browser);
    d.created += 1;
    json_response(200, &body)
}

#[derive(Debug, Deserialize, Default)]
struct RetrieveQuery {
    include_deleted: Option<bool>,
}

async fn retrieve(
    State(s): St,
    Path(id): Path<String>,
    Query(q): Query<RetrieveQuery>,
) -> Response {
    let d = lock(&s.data);
    let found = if q.include_deleted.unwrap_or(false) {
        d.find_any(&id)
    } else {
        d.find_live(&id)
    };
    match found {
        Some(i) => json_response(200, &s.browser_json(&d.browsers[i], &d.profiles)),
        None => kernel_error(404, &format!("browser session {id:?} not found")),
    }
}

fn paging(q: &HashMap<String, String>) -> Result<(usize, usize), String> {
    let num = |k: &str, default: usize| -> Result<usize, String> {
        match q.get(k) {
            None => Ok(default),
            Some(v) => v
                .parse::<usize>()
                .map_err(|_| format!("{k} must be a non-negative integer")),
        }
    };
    Ok((num("offset", 0)?, num("limit", 20)?.clamp(1, 100)))
}

async fn list(State(s): St, Query(q): Query<HashMap<String, String>>) -> Response {
    let (offset, limit) = match paging(&q) {
        Ok(p) => p,
        Err(m) => return kernel_error(400, &m),
    };
    let status = q.get("status").map_or("active", String::as_str);
    let keep: fn(&Browser) -> bool = match status {
        "active" => |b| b.is_live(),
        "deleted" => |b| !b.is_live(),
        "all" => |_| true,
        _ => return kernel_error(400, "status must be one of active, deleted, all"),
    };
    let d = lock(&s.data);
    let items = d
        .browsers
        .iter()
        .filter(|b| keep(b))
        .map(|b| s.browser_json(b, &d.profiles))
        .collect();
    paged(items, offset, limit)
}

async fn delete(State(s): St, Path(id): Path<String>) -> Response {
    if s.end(&id, false).await {
        StatusCode::NO_CONTENT.into_response()
    } else {
        kernel_error(404, &format!("browser session {id:?} not found"))
    }
}

async fn create_profile(State(s): St, body: Bytes) -> Response {
    let name = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(o)) => match o.get("name") {
                None | Some(Value::Null) => None,
                Some(Value::String(n)) => Some(n.clone()),
                Some(_) => return kernel_error(400, "name must be a string"),
            },
            _ => return kernel_error(400, "request body must be a JSON object"),
        }
    };
    let mut d = lock(&s.data);
    if let Some(n) = &name
        && d.find_profile(n).is_some()
    {
        return kernel_error(409, &format!("profile named {n:?} already exists"));
    }
    let profile = Profile {
        id: alnum_id(24),
        name,
        created_at: OffsetDateTime::now_utc(),
        updated_at: None,
        last_used_at: None,
        state: ProfileState::default(),
    };
    let body = profile.to_json();
    d.profiles.push(profile);
    json_response(200, &body)
}

async fn list_profiles(State(s): St, Query(q): Query<HashMap<String, String>>) -> Response {
    let (offset, limit) = match paging(&q) {
        Ok(p) => p,
        Err(m) => return kernel_error(400, &m),
    };
    let items = lock(&s.data)
        .profiles
        .iter()
        .map(Profile::to_json)
        .collect();
    paged(items, offset, limit)
}

async fn retrieve_profile(State(s): St, Path(id): Path<String>) -> Response {
    let d = lock(&s.data);
    match d.find_profile(&id) {
        Some(i) => json_response(200, &d.profiles[i].to_json()),
        None => kernel_error(404, &format!("profile {id:?} not found")),
    }
}

async fn delete_profile(State(s): St, Path(id): Path<String>) -> Response {
    let mut d = lock(&s.data);
    match d.find_profile(&id) {
        Some(i) => {
            d.profiles.remove(i);
            StatusCode::NO_CONTENT.into_response()
        }
        None => kernel_error(404, &format!("profile {id:?} not found")),
    }
}

async fn cdp_upgrade(
    State(s): St,
    Query(q): Query<HashMap<String, String>>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let Some(jwt) = q.get("jwt").filter(|j| !j.is_empty()) else {
        return kernel_error(401, "missing jwt");
    };
    let target = {
        let d = lock(&s.data);
        match d.browsers.iter().find(|b| &b.jwt == jwt) {
            None => return kernel_error(401, "invalid jwt"),
            Some(b) if !b.is_live() => {
                return kernel_error(404, "browser session has been deleted");
            }
            Some(b) => (
                b.session_id.clone(),
                b.runtime.as_ref().map(|r| r.chromium.browser_ws_url()),
            ),
        }
    };
    let Ok(ws) = ws else {
        return kernel_error(400, "expected a WebSocket upgrade");
    };
    let (session_id, Some(upstream_url)) = target else {
        return kernel_error(502, "browser is not running");
    };
    let upstream =
        match proxy::connect_upstream(&upstream_url, crate::cdp::DEFAULT_CDP_TIMEOUT).await {
            Ok(u) => u,
            Err(e) => return kernel_error(502, &e.to_string()),
        };
    let ticket = s.sockets.register(&session_id);
    ws.on_upgrade(move |socket| async move {
        proxy::pipe(socket, upstream, ticket).await;
    })
}

#[derive(Debug, Deserialize, Default)]
struct LiveQuery {
    #[serde(rename = "readOnly")]
    read_only: Option<bool>,
}

async fn live_view(
    State(s): St,
    Path(token): Path<String>,
    Query(q): Query<LiveQuery>,
) -> Response {
    let id = {
        let d = lock(&s.data);
        d.browsers
            .iter()
            .find(|b| b.is_live() && !b.headless && b.live_token == token)
            .map(|b| b.session_id.clone())
    };
    let Some(id) = id else {
        return kernel_error(404, "live view not found");
    };
    let id = html_escape(&id);
    let read_only = q.read_only.unwrap_or(false);
    html_response(
        200,
        format!(
            r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Kernel live view (abr-doubles)</title></head>
<body data-session-id="{id}" data-read-only="{read_only}">
<main id="live-view" data-session-id="{id}">Live view of browser {id}</main>
</body>
</html>
"#
        ),
    )
}

async fn not_found(method: Method, uri: Uri) -> Response {
    kernel_error(404, &format!("no route for {method} {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    kernel_error(
        405,
        &format!("method {method} not allowed on {}", uri.path()),
    )
}

#[derive(Debug, Deserialize, Default)]
struct FailBody {
    status: Option<u16>,
}

async fn mock_fail_next_create(State(s): St, body: Bytes) -> Response {
    let status = serde_json::from_slice::<FailBody>(&body)
        .unwrap_or_default()
        .status
        .unwrap_or(429);
    lock(&s.data).faults.push_back(status);
    json_response(200, &json!({ "queued": status }))
}

#[derive(Debug, Deserialize, Default)]
struct ExpireBody {
    id: Option<String>,
}

async fn mock_expire(State(s): St, body: Bytes) -> Response {
    let Some(id) = serde_json::from_slice::<ExpireBody>(&body)
        .unwrap_or_default()
        .id
    else {
        return kernel_error(400, "body must be {\"id\": \"<session_id>\"}");
    };
    let expired = s.end(&id, true).await;
    json_response(200, &json!({ "expired": expired }))
}

async fn mock_drop_sockets(State(s): St) -> Response {
    let n = s.sockets.close_all(&CloseMode::Abrupt);
    json_response(200, &json!({ "dropped": n }))
}

#[derive(Debug, Deserialize, Default)]
struct MaxLiveBody {
    max_live: Option<usize>,
}

async fn mock_max_live(State(s): St, body: Bytes) -> Response {
    let max = serde_json::from_slice::<MaxLiveBody>(&body)
        .unwrap_or_default()
        .max_live;
    lock(&s.data).max_live = max;
    json_response(200, &json!({ "max_live": max }))
}

async fn mock_calls(State(s): St) -> Response {
    json_response(200, &json!(s.recorder.snapshot()))
}

async fn mock_state(State(s): St) -> Response {
    json_response(200, &s.state_json())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_bounds() {
        assert_eq!(
            parse_create(b"").map(|r| r.timeout_seconds).ok(),
            Some(DEFAULT_TIMEOUT_SECONDS)
        );
        assert!(parse_create(br#"{"timeout_seconds":9}"#).is_err());
        assert!(parse_create(br#"{"timeout_seconds":259201}"#).is_err());
        assert!(parse_create(br#"{"timeout_seconds":10}"#).is_ok());
        assert!(parse_create(br#"{"timeout_seconds":259200}"#).is_ok());
        assert!(parse_create(br#"{"timeout_seconds":"60"}"#).is_err());
    }

    #[test]
    fn bearer() {
        let mut h = HeaderMap::new();
        assert!(!bearer_ok(&h, "k"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer k"));
        assert!(bearer_ok(&h, "k"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        assert!(!bearer_ok(&h, "k"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("k"));
        assert!(!bearer_ok(&h, "k"));
    }
}
