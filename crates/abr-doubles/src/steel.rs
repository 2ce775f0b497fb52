//! Double of the self-hosted Steel OSS server (`steel-dev/steel-browser`), after its source
//! and what the real server v0.5.2 did when tried on loopback.
//!
//! Surface:
//! * `GET /v1/health`
//! * `POST /v1/sessions` (single slot, strict like the real server: a create while a session is
//!   live silently replaces it, reusing the running browser with its cookies, tabs and
//!   connected CDP sockets; recorded in [`SteelDouble::replaced`]. A create or release that
//!   arrives while another is in flight, which crashed the real server, is counted in
//!   [`SteelDouble::overlapping_lifecycle_calls`])
//! * `GET /v1/sessions`, `GET /v1/sessions/{id}` (synthetic `released` record for other ids)
//! * `GET /v1/sessions/{id}/context` (cookies + localStorage of the current browser)
//! * `POST /v1/sessions/{id}/release`, `POST /v1/sessions/release` (kill + relaunch Chromium)
//! * `GET /v1/sessions/{id}/live-details`, `GET /v1/devtools/inspector.html` (302)
//! * `GET /v1/sessions/debug` (HTML viewer while live) whose script, like the real one, opens an
//!   **absolute** `ws://HOST:PORT/v1/sessions/cast` built from the server's own address (so
//!   `0.0.0.0` with [`SteelOptions::advertise_host_0000`]), and WS `/v1/sessions/cast`
//!   (steel-browser's debug-page protocol): tab discovery (`?tabInfo=true`, or no page): `tabList` on connect and
//!   on every change, `tabClosed`; page mode (`?pageId=` / `?pageIndex=`): the session's device
//!   metrics, a JPEG screencast of that tab from the real Chromium (`{pageId, url, title,
//!   favicon, data}`, every frame acknowledged), `mouseEvent` / `keyEvent` / `navigation`
//!   input, `targetClosed` when the tab dies
//! * The session recorder, as on the real server: each live session's pages run a script
//!   (installed at create, like the session's storage) that sends the page's events (its
//!   load, each click and input) to the server's own API port, `POST /v1/events` (the path
//!   is the double's; the destination, the API's host and port, is the real one's). A
//!   client whose egress refuses that address sees nothing arrive ([`SteelDouble::recorded_events`]);
//!   what matters is that the page's own requests are judged as they are on Steel.
//! * WebSocket upgrade on any other path: raw CDP proxy to the current Chromium.
//! * Control endpoints under `/__mock/…` (not recorded): `POST fail-next-create {status}`,
//!   `POST expire {id?}`, `POST drop-sockets`, `GET calls`, `GET state`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message as AxMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware;
use axum::response::{IntoResponse as _, Response};
use axum::routing::{any, get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;

use crate::DoubleError;
use crate::browser::ManagedBrowser;
use crate::chromium::ChromiumOptions;
use crate::proxy::{self, CloseMode, SocketRegistry};
use crate::record::{Recorder, record_middleware};
use crate::server::{Server, html_response, json_response};
use crate::storage;
use crate::util::{html_escape, is_uuid, iso_millis, lock, millis_since, uuid_v4};

/// How a [`SteelDouble`] behaves.
#[derive(Debug, Clone, Default)]
pub struct SteelOptions {
    /// Emit `0.0.0.0` instead of `127.0.0.1` in response URLs (the real server's default when
    /// `DOMAIN` is unset), to test the client's URL rewriting.
    pub advertise_host_0000: bool,
    /// In `/context`, also emit every localStorage entry under its bare hostname key (the real
    /// server's mixed origin/hostname keys).
    pub context_duplicate_host_keys: bool,
    /// Port to bind on 127.0.0.1 (0 = ephemeral).
    pub port: u16,
    /// How to launch Chromium.
    pub chromium: ChromiumOptions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Idle,
    Live,
    Released,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Live => "live",
            Self::Released => "released",
        }
    }
}

#[derive(Debug, Clone)]
struct Session {
    id: String,
    created_at: OffsetDateTime,
    status: Status,
    dimensions: Value,
    user_agent: String,
    proxy: String,
    is_selenium: bool,
    device_config: Value,
    final_duration: Option<u64>,
}

impl Session {
    fn new(id: String, status: Status, user_agent: String) -> Self {
        Self {
            id,
            created_at: OffsetDateTime::now_utc(),
            status,
            dimensions: json!({ "width": 1920, "height": 1080 }),
            user_agent,
            proxy: String::new(),
            is_selenium: false,
            device_config: json!({ "device": "desktop" }),
            final_duration: None,
        }
    }
}

#[derive(Debug)]
struct Data {
    active: Session,
    browser: Option<ManagedBrowser>,
    past: Vec<Session>,
    replaced: Vec<String>,
    faults: VecDeque<u16>,
    created: u64,
    released: u64,
    expired: u64,
    /// Creates and releases that arrived while another create or release was in flight.
    overlaps: u64,
}

#[derive(Debug)]
struct Shared {
    opts: SteelOptions,
    port: u16,
    recorder: Recorder,
    sockets: SocketRegistry,
    /// Serializes lifecycle operations (create, release, expire, context export).
    op: tokio::sync::Mutex<()>,
    /// Creates and releases in flight (received, not yet answered).
    lifecycle_in_flight: std::sync::atomic::AtomicUsize,
    data: Mutex<Data>,
}

/// A running Steel OSS double. Dropping it (or [`SteelDouble::shutdown`]) stops the server,
/// closes proxied sockets and kills Chromium.
#[derive(Debug)]
pub struct SteelDouble {
    shared: Arc<Shared>,
    server: Server,
}

impl SteelDouble {
    /// Binds `127.0.0.1:<opts.port>`, launches the idle session's Chromium and starts serving.
    pub async fn start(opts: SteelOptions) -> Result<Self, DoubleError> {
        let listener = Server::bind(opts.port).await?;
        let bound = listener.local_addr();
        let port = bound.map_err(|source| DoubleError::Bind {
            port: opts.port,
            source,
        })?;
        let port = port.port();
        let browser = ManagedBrowser::launch(&opts.chromium).await?;
        let idle = Session::new(uuid_v4(), Status::Idle, browser.user_agent.clone());
        let recorder = Recorder::default();
        let shared = Arc::new(Shared {
            opts,
            port,
            recorder: recorder.clone(),
            sockets: SocketRegistry::new(),
            op: tokio::sync::Mutex::new(()),
            lifecycle_in_flight: std::sync::atomic::AtomicUsize::new(0),
            data: Mutex::new(Data {
                active: idle,
                browser: Some(browser),
                past: Vec::new(),
                replaced: Vec::new(),
                faults: VecDeque::new(),
                created: 0,
                released: 0,
                expired: 0,
                overlaps: 0,
            }),
        });
        let router = router(Arc::clone(&shared), recorder);
        let server = Server::spawn(listener, router)?;
        Ok(Self { shared, server })
    }

    /// `http://127.0.0.1:<port>`: the base URL a Steel provider is configured with.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.port())
    }

    /// `ws://127.0.0.1:<port>/`: the (session-independent) CDP URL.
    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.server.port())
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// Makes the next `POST /v1/sessions` fail with `status` and
    /// `{"success":false,"message":…}` (queued: call twice to fail two creates).
    pub fn fail_next_create(&self, status: u16) {
        lock(&self.shared.data).faults.push_back(status);
    }

    /// Ends session `id` as if the server had ended it: marks it released, closes proxied
    /// sockets, kills Chromium and installs a fresh idle session. Returns whether `id` was the
    /// live session.
    pub async fn expire_session(&self, id: &str) -> bool {
        self.shared.expire(Some(id)).await
    }

    /// Drops every proxied CDP socket (no closing handshake) without ending the session;
    /// returns how many were open.
    pub fn drop_sockets(&self) -> usize {
        self.shared.sockets.close_all(&CloseMode::Abrupt)
    }

    /// Every request seen so far (except `/__mock/…`), in arrival order.
    pub fn calls(&self) -> Vec<crate::RecordedCall> {
        self.shared.recorder.snapshot()
    }

    /// 1 while a session is live, else 0.
    pub fn live_sessions(&self) -> usize {
        usize::from(lock(&self.shared.data).active.status == Status::Live)
    }

    /// Successful `POST /v1/sessions` count.
    pub fn created(&self) -> u64 {
        lock(&self.shared.data).created
    }

    /// Releases (of a live session) through the REST API.
    pub fn released(&self) -> u64 {
        lock(&self.shared.data).released
    }

    /// Sessions ended through [`SteelDouble::expire_session`].
    pub fn expired(&self) -> u64 {
        lock(&self.shared.data).expired
    }

    /// Creates and releases (`POST /v1/sessions`, `POST /v1/sessions[/{id}]/release`) that
    /// arrived while another create or release was still in flight. The real server crashed
    /// on such races (an unhandled `TargetCloseError`); a client that serializes its use of
    /// the server never causes one.
    pub fn overlapping_lifecycle_calls(&self) -> u64 {
        lock(&self.shared.data).overlaps
    }

    /// `ws://127.0.0.1:<port>/v1/sessions/cast`: the viewer's screencast socket (add
    /// `?pageId=<target>` or `?pageIndex=<n>` for a tab's frames, nothing or `?tabInfo=true`
    /// for the tab list).
    pub fn cast_url(&self) -> String {
        format!("ws://127.0.0.1:{}/v1/sessions/cast", self.server.port())
    }

    /// Ids of live sessions that a later create silently replaced (never released).
    pub fn replaced(&self) -> Vec<String> {
        lock(&self.shared.data).replaced.clone()
    }

    /// Ids of sessions still live (at most one).
    pub fn unreleased(&self) -> Vec<String> {
        let d = lock(&self.shared.data);
        if d.active.status == Status::Live {
            vec![d.active.id.clone()]
        } else {
            Vec::new()
        }
    }

    /// `Ok` when no session is live; otherwise the live ids.
    pub fn assert_all_released(&self) -> Result<(), Vec<String>> {
        let live = self.unreleased();
        if live.is_empty() { Ok(()) } else { Err(live) }
    }

    /// Id of the active (idle or live) session.
    pub fn active_session_id(&self) -> String {
        lock(&self.shared.data).active.id.clone()
    }

    /// Process id of the current Chromium, if one is running.
    pub fn chromium_pid(&self) -> Option<u32> {
        lock(&self.shared.data)
            .browser
            .as_ref()
            .map(|b| b.chromium.pid())
    }

    /// How many uploads of the session recorder (`POST /v1/events` from a live session's
    /// pages) arrived.
    pub fn recorded_events(&self) -> usize {
        self.calls()
            .iter()
            .filter(|c| c.method == "POST" && c.path == "/v1/events")
            .count()
    }

    /// Number of proxied sockets currently open.
    pub fn open_sockets(&self) -> usize {
        self.shared.sockets.open_count()
    }

    /// Stops the server, closes every proxied socket and kills Chromium.
    pub async fn shutdown(mut self) {
        // Close proxied sockets first so the graceful server stop has nothing to wait for.
        self.shared
            .sockets
            .close_all(&CloseMode::going_away("server shutdown"));
        self.server.join().await;
        let browser = lock(&self.shared.data).browser.take();
        if let Some(b) = browser {
            b.terminate().await;
        }
    }
}

impl Drop for SteelDouble {
    fn drop(&mut self) {
        self.server.stop();
        self.shared
            .sockets
            .close_all(&CloseMode::going_away("server shutdown"));
        let browser = lock(&self.shared.data).browser.take();
        drop(browser);
    }
}

impl Shared {
    fn urls(&self) -> Urls {
        let host = if self.opts.advertise_host_0000 {
            "0.0.0.0"
        } else {
            "127.0.0.1"
        };
        Urls {
            host: host.to_owned(),
            port: self.port,
        }
    }

    /// The current browser's CDP client, relaunching Chromium if it is gone. Call under `op`.
    async fn ensure_browser(&self) -> Result<crate::CdpClient, DoubleError> {
        {
            let mut d = lock(&self.data);
            if let Some(b) = d.browser.as_mut()
                && b.chromium.is_running()
                && !b.cdp.is_closed()
            {
                return Ok(b.cdp.clone());
            }
        }
        let stale = lock(&self.data).browser.take();
        if let Some(b) = stale {
            b.terminate().await;
        }
        let fresh = ManagedBrowser::launch(&self.opts.chromium).await?;
        let cdp = fresh.cdp.clone();
        lock(&self.data).browser = Some(fresh);
        Ok(cdp)
    }

    /// Ends the active session, resets Chromium and installs a fresh idle session. Call under
    /// `op`. Returns the ended session (status `released`, final duration).
    async fn end_and_reset(&self, reason: &str, expired: bool) -> Session {
        let (ended, old) = {
            let mut d = lock(&self.data);
            let was_live = d.active.status == Status::Live;
            let mut ended = d.active.clone();
            ended.final_duration = Some(millis_since(ended.created_at));
            ended.status = Status::Released;
            d.past.push(ended.clone());
            if was_live {
                if expired {
                    d.expired += 1;
                } else {
                    d.released += 1;
                }
            }
            (ended, d.browser.take())
        };
        self.sockets.close_all(&CloseMode::going_away(reason));
        if let Some(b) = old {
            b.terminate().await;
        }
        let fresh = match ManagedBrowser::launch(&self.opts.chromium).await {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::warn!(error = %e, "steel double: relaunching Chromium failed");
                None
            }
        };
        let mut d = lock(&self.data);
        let ua = fresh
            .as_ref()
            .map(|b| b.user_agent.clone())
            .unwrap_or_default();
        d.browser = fresh;
        d.active = Session::new(uuid_v4(), Status::Idle, ua);
        ended
    }

    async fn expire(&self, id: Option<&str>) -> bool {
        let _op = self.op.lock().await;
        {
            let d = lock(&self.data);
            let matches = id.is_none_or(|id| id == d.active.id);
            if !(matches && d.active.status == Status::Live) {
                return false;
            }
        }
        self.end_and_reset("session expired", true).await;
        true
    }

    fn state_json(&self) -> Value {
        let d = lock(&self.data);
        json!({
            "activeSessionId": d.active.id,
            "activeStatus": d.active.status.as_str(),
            "liveSessions": usize::from(d.active.status == Status::Live),
            "created": d.created,
            "released": d.released,
            "expired": d.expired,
            "replaced": d.replaced,
            "overlappingLifecycleCalls": d.overlaps,
            "openSockets": self.sockets.open_count(),
            "chromiumPid": d.browser.as_ref().map(|b| b.chromium.pid()),
        })
    }
}

#[derive(Debug)]
struct Urls {
    host: String,
    port: u16,
}

fn details(s: &Session, urls: &Urls) -> Map<String, Value> {
    let base = format!("{}:{}", urls.host, urls.port);
    let (ws, debug, viewer) = if s.is_selenium {
        (String::new(), String::new(), String::new())
    } else {
        (
            format!("ws://{base}/"),
            format!("http://{base}/v1/sessions/debug"),
            format!("http://{base}/"),
        )
    };
    let duration = s
        .final_duration
        .unwrap_or_else(|| millis_since(s.created_at));
    let v = json!({
        "id": s.id,
        "createdAt": iso_millis(s.created_at),
        "status": s.status.as_str(),
        "duration": duration,
        "eventCount": 0,
        "dimensions": s.dimensions,
        "timeout": 0,
        "creditsUsed": 0,
        "websocketUrl": ws,
        "debugUrl": debug,
        "debuggerUrl": format!("http://{base}/v1/devtools/inspector.html"),
        "sessionViewerUrl": viewer,
        "userAgent": s.user_agent,
        "proxy": s.proxy,
        "proxyTxBytes": 0,
        "proxyRxBytes": 0,
        "solveCaptcha": false,
        "isSelenium": s.is_selenium,
        "deviceConfig": s.device_config,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn steel_failure(status: u16, message: &str) -> Response {
    let mut resp = json_response(status, &json!({ "success": false, "message": message }));
    if status == 429 {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
    }
    resp
}

fn fst_validation(message: &str) -> Response {
    json_response(
        400,
        &json!({
            "statusCode": 400,
            "code": "FST_ERR_VALIDATION",
            "error": "Bad Request",
            "message": message,
        }),
    )
}

fn fastify_404(method: &Method, uri: &Uri) -> Response {
    let url = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |pq| pq.as_str().to_owned());
    json_response(
        404,
        &json!({
            "message": format!("Route {method}:{url} not found"),
            "error": "Not Found",
            "statusCode": 404,
        }),
    )
}

/// The parsed, validated subset of `CreateSession` the double uses.
#[derive(Debug, Default)]
struct CreateReq {
    session_id: Option<String>,
    proxy_url: Option<String>,
    user_agent: Option<String>,
    is_selenium: bool,
    dimensions: Option<Value>,
    device_config: Option<Value>,
    cookies: Vec<Value>,
    local_storage: Map<String, Value>,
    session_storage: Map<String, Value>,
}

fn parse_create(body: &[u8]) -> Result<CreateReq, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(CreateReq::default());
    }
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("body must be valid JSON ({e})"))?;
    let Value::Object(obj) = v else {
        return Err("body must be object".to_owned());
    };
    let opt_string = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("body/{key} must be string")),
        }
    };
    let session_id = opt_string("sessionId")?;
    if let Some(id) = &session_id
        && !is_uuid(id)
    {
        return Err("body/sessionId must match format \"uuid\"".to_owned());
    }
    let is_selenium = match obj.get("isSelenium") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("body/isSelenium must be boolean".to_owned()),
    };
    let dimensions = match obj.get("dimensions") {
        None | Some(Value::Null) => None,
        Some(Value::Object(d)) => {
            for k in ["width", "height"] {
                match d.get(k) {
                    None => {
                        return Err(format!("body/dimensions must have required property '{k}'"));
                    }
                    Some(v) if v.as_u64().is_some() => {}
                    Some(_) => return Err(format!("body/dimensions/{k} must be integer")),
                }
            }
            Some(json!({ "width": d["width"], "height": d["height"] }))
        }
        Some(_) => return Err("body/dimensions must be object".to_owned()),
    };
    let device_config = match obj.get("deviceConfig") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => return Err("body/deviceConfig must be object".to_owned()),
    };
    let mut req = CreateReq {
        session_id,
        proxy_url: opt_string("proxyUrl")?,
        user_agent: opt_string("userAgent")?,
        is_selenium,
        dimensions,
        device_config,
        ..CreateReq::default()
    };
    match obj.get("sessionContext") {
        None | Some(Value::Null) => {}
        Some(Value::Object(ctx)) => {
            match ctx.get("cookies") {
                None | Some(Value::Null) => {}
                Some(Value::Array(c)) => {
                    if c.iter().any(|c| !c.is_object()) {
                        return Err(
                            "body/sessionContext/cookies must be array of objects".to_owned()
                        );
                    }
                    req.cookies = c.clone();
                }
                Some(_) => return Err("body/sessionContext/cookies must be array".to_owned()),
            }
            for (key, slot) in [
                ("localStorage", &mut req.local_storage),
                ("sessionStorage", &mut req.session_storage),
            ] {
                match ctx.get(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(m)) => *slot = m.clone(),
                    Some(_) => return Err(format!("body/sessionContext/{key} must be object")),
                }
            }
        }
        Some(_) => return Err("body/sessionContext must be object".to_owned()),
    }
    Ok(req)
}

fn router(shared: Arc<Shared>, recorder: Recorder) -> Router {
    Router::new()
        .route("/v1/health", get(health))
        .route("/v1/sessions", post(create).get(list))
        .route("/v1/sessions/release", post(release))
        .route("/v1/sessions/debug", get(debug_page))
        .route("/v1/sessions/cast", get(cast))
        .route("/v1/sessions/{id}", get(get_session))
        .route("/v1/sessions/{id}/context", get(context))
        .route("/v1/sessions/{id}/release", post(release_by_id))
        .route("/v1/sessions/{id}/live-details", get(live_details))
        .route("/v1/devtools/inspector.html", get(inspector))
        .route("/v1/events", post(recorder_upload))
        .route("/__mock/{op}", any(control))
        .fallback(fallback)
        .method_not_allowed_fallback(not_found_any)
        .with_state(shared)
        .layer(middleware::from_fn_with_state(recorder, record_middleware))
}

type St = State<Arc<Shared>>;

async fn health(State(s): St) -> Response {
    let up = lock(&s.data)
        .browser
        .as_mut()
        .is_some_and(|b| b.chromium.is_running());
    if up {
        json_response(200, &json!({ "status": "ok" }))
    } else {
        json_response(503, &json!({ "status": "service_unavailable" }))
    }
}

/// One create or release in flight; counts an overlap when another one already is.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(s: &'a Shared) -> Self {
        let before = s
            .lifecycle_in_flight
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if before > 0 {
            tracing::warn!(
                "steel double: a create or release raced another (the real server may crash)"
            );
            lock(&s.data).overlaps += 1;
        }
        Self(s)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0
            .lifecycle_in_flight
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

async fn create(State(s): St, body: Bytes) -> Response {
    let _in_flight = InFlight::enter(&s);
    let _op = s.op.lock().await;
    let fault = lock(&s.data).faults.pop_front();
    if let Some(status) = fault {
        return steel_failure(
            status,
            "Failed to start session: injected failure (abr-doubles)",
        );
    }
    let req = match parse_create(&body) {
        Ok(r) => r,
        Err(m) => return fst_validation(&m),
    };
    let cdp = match s.ensure_browser().await {
        Ok(c) => c,
        Err(e) => return steel_failure(500, &format!("Failed to start session: {e}")),
    };
    if let Err(e) = storage::set_cookies(&cdp, &req.cookies).await {
        return steel_failure(
            500,
            &format!("Failed to start session: sessionContext cookies: {e}"),
        );
    }
    if let Err(e) =
        storage::install_storage_script(&cdp, &req.local_storage, &req.session_storage).await
    {
        return steel_failure(
            500,
            &format!("Failed to start session: sessionContext storage: {e}"),
        );
    }
    if let Err(e) = storage::add_first_page_script(&cdp, &recorder_script(s.port)).await {
        return steel_failure(500, &format!("Failed to start session: recorder: {e}"));
    }
    let urls = s.urls();
    let mut d = lock(&s.data);
    if d.active.status == Status::Live {
        let old = d.active.id.clone();
        tracing::debug!(old = %old, "steel double: create replaced the live session");
        d.replaced.push(old);
    }
    let browser_ua = d
        .browser
        .as_ref()
        .map(|b| b.user_agent.clone())
        .unwrap_or_default();
    let mut session = Session::new(
        req.session_id.unwrap_or_else(uuid_v4),
        Status::Live,
        req.user_agent.unwrap_or(browser_ua),
    );
    if let Some(dims) = req.dimensions {
        session.dimensions = dims;
    }
    if let Some(dc) = req.device_config {
        session.device_config = dc;
    }
    session.proxy = req.proxy_url.unwrap_or_default();
    session.is_selenium = req.is_selenium;
    d.active = session;
    d.created += 1;
    json_response(200, &Value::Object(details(&d.active, &urls)))
}

/// The session recorder's script: the page's load, clicks and inputs, each sent to the API
/// port as it happens (a simple cross-origin request: no preflight, no answer read).
fn recorder_script(port: u16) -> String {
    format!(
        r#"(() => {{
  if (window.__steelDoubleRecorder || !/^https?:$/.test(location.protocol)) return;
  window.__steelDoubleRecorder = true;
  const send = (type) => {{
    try {{
      fetch("http://127.0.0.1:{port}/v1/events", {{
        method: "POST", mode: "no-cors", headers: {{"content-type": "text/plain"}},
        body: JSON.stringify({{type, at: Date.now()}})
      }}).catch(() => {{}});
    }} catch (_) {{}}
  }};
  send("load");
  addEventListener("click", () => send("click"), true);
  addEventListener("input", () => send("input"), true);
}})();"#
    )
}

/// An upload of the session recorder: taken, not kept (counted in the calls).
async fn recorder_upload() -> Response {
    json_response(200, &json!({ "ok": true }))
}

async fn list(State(s): St) -> Response {
    let urls = s.urls();
    let d = lock(&s.data);
    let mut sessions = vec![Value::Object(details(&d.active, &urls))];
    sessions.extend(
        d.past
            .iter()
            .rev()
            .map(|p| Value::Object(details(p, &urls))),
    );
    json_response(200, &json!({ "sessions": sessions }))
}

async fn get_session(State(s): St, Path(id): Path<String>) -> Response {
    let urls = s.urls();
    let d = lock(&s.data);
    let session = if d.active.id == id {
        d.active.clone()
    } else {
        let mut synthetic = Session::new(id, Status::Released, String::new());
        synthetic.final_duration = Some(0);
        synthetic
    };
    json_response(200, &Value::Object(details(&session, &urls)))
}

async fn release(State(s): St) -> Response {
    do_release(&s).await
}

async fn release_by_id(State(s): St, Path(_id): Path<String>) -> Response {
    // The real server ignores the id and releases whatever session is current.
    do_release(&s).await
}

async fn do_release(s: &Shared) -> Response {
    let _in_flight = InFlight::enter(s);
    let _op = s.op.lock().await;
    let ended = s.end_and_reset("session released", false).await;
    let mut body = Map::new();
    body.insert("success".to_owned(), Value::Bool(true));
    body.extend(details(&ended, &s.urls()));
    json_response(200, &Value::Object(body))
}

async fn context(State(s): St, Path(_id): Path<String>) -> Response {
    let _op = s.op.lock().await;
    let cdp = lock(&s.data).browser.as_ref().map(|b| b.cdp.clone());
    let Some(cdp) = cdp else {
        return steel_failure(500, "browser is not running");
    };
    let cookies = match storage::get_cookies(&cdp).await {
        Ok(c) => c,
        Err(e) => return steel_failure(500, &format!("failed to read cookies: {e}")),
    };
    let cookies: Vec<Value> = cookies
        .into_iter()
        .map(|mut c| {
            if let Some(o) = c.as_object_mut() {
                o.remove("sameSite");
            }
            c
        })
        .collect();
    let mut local = match storage::read_local_storage(&cdp).await {
        Ok(l) => l,
        Err(e) => return steel_failure(500, &format!("failed to read localStorage: {e}")),
    };
    if s.opts.context_duplicate_host_keys {
        let extra: Vec<(String, Value)> = local
            .iter()
            .filter_map(|(origin, items)| {
                let host = origin.split("://").nth(1)?.split(':').next()?;
                Some((host.to_owned(), items.clone()))
            })
            .collect();
        for (host, items) in extra {
            local.entry(host).or_insert(items);
        }
    }
    json_response(
        200,
        &json!({
            "cookies": cookies,
            "localStorage": local,
            "sessionStorage": {},
            "indexedDB": {},
        }),
    )
}

async fn page_infos(cdp: &crate::CdpClient) -> Vec<Value> {
    let Ok(res) = cdp.call("Target.getTargets", json!({})).await else {
        return Vec::new();
    };
    res.get("targetInfos")
        .and_then(Value::as_array)
        .map(|infos| {
            infos
                .iter()
                .filter(|t| t.get("type").and_then(Value::as_str) == Some("page"))
                .map(|t| {
                    json!({
                        "id": t.get("targetId").cloned().unwrap_or(Value::Null),
                        "url": t.get("url").cloned().unwrap_or(Value::Null),
                        "title": t.get("title").cloned().unwrap_or(Value::Null),
                        "favicon": Value::Null,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn live_details(State(s): St, Path(_id): Path<String>) -> Response {
    let (cdp, ua, product, status, dims) = {
        let d = lock(&s.data);
        (
            d.browser.as_ref().map(|b| b.cdp.clone()),
            d.browser
                .as_ref()
                .map(|b| b.user_agent.clone())
                .unwrap_or_default(),
            d.browser
                .as_ref()
                .map(|b| b.product.clone())
                .unwrap_or_default(),
            d.active.status,
            d.active.dimensions.clone(),
        )
    };
    let pages = match &cdp {
        Some(c) => page_infos(c).await,
        None => Vec::new(),
    };
    let urls = s.urls();
    let base = format!("{}:{}", urls.host, urls.port);
    json_response(
        200,
        &json!({
            "pages": pages,
            "browserState": {
                "status": status.as_str(),
                "userAgent": ua,
                "browserVersion": product,
                "initialDimensions": dims,
                "pageCount": pages.len(),
            },
            "websocketUrl": format!("ws://{base}/"),
            "sessionViewerUrl": format!("http://{base}/v1/sessions/debug"),
            "sessionViewerFullscreenUrl": format!("http://{base}/v1/sessions/debug?showControls=false"),
        }),
    )
}

#[derive(Debug, Deserialize)]
struct InspectorQuery {
    #[serde(rename = "pageId")]
    page_id: Option<String>,
}

async fn inspector(State(s): St, Query(q): Query<InspectorQuery>) -> Response {
    let port = lock(&s.data).browser.as_ref().map(|b| b.chromium.port());
    let Some(port) = port else {
        return steel_failure(500, "browser is not running");
    };
    let host = s.urls().host;
    let page = q.page_id.unwrap_or_default();
    let location = format!(
        "http://{host}:{port}/devtools/devtools_app.html?ws={host}:{port}/devtools/page/{page}"
    );
    let mut resp = StatusCode::FOUND.into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

async fn debug_page(State(s): St) -> Response {
    let (id, live) = {
        let d = lock(&s.data);
        (d.active.id.clone(), d.active.status == Status::Live)
    };
    if !live {
        return json_response(
            404,
            &json!({ "statusCode": 404, "error": "Not Found", "message": "No live session" }),
        );
    }
    let id = html_escape(&id);
    // Like steel-browser's `live-session-streamer.ejs`: the socket address is absolute, built
    // from the server's own HOST:PORT, never from the page's location.
    let urls = s.urls();
    let cast = html_escape(&format!(
        "ws://{}:{}/v1/sessions/cast",
        urls.host, urls.port
    ));
    html_response(
        200,
        format!(
            r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Steel session viewer (abr-doubles)</title></head>
<body data-session-id="{id}">
<main id="session-viewer" data-session-id="{id}">Session {id}</main>
<img id="screen" alt="">
<script>
  const baseWsUrl = "{cast}";
  let page = null;
  const tabs = new WebSocket(baseWsUrl + "?tabInfo=true");
  tabs.onmessage = (event) => {{
    const message = JSON.parse(event.data);
    if (message.type !== "tabList" || !message.firstTabId || page) return;
    page = new WebSocket(baseWsUrl + "?pageId=" + encodeURIComponent(message.firstTabId));
    page.onmessage = (frame) => {{
      const payload = JSON.parse(frame.data);
      if (payload.data) document.getElementById("screen").src = "data:image/jpeg;base64," + payload.data;
    }};
  }};
</script>
</body>
</html>
"#
        ),
    )
}

/// Query of the cast socket.
#[derive(Debug, Default, Deserialize)]
struct CastQuery {
    #[serde(rename = "pageId")]
    page_id: Option<String>,
    #[serde(rename = "pageIndex")]
    page_index: Option<usize>,
    #[serde(rename = "tabInfo")]
    tab_info: Option<String>,
}

/// How often tab discovery looks for opened and closed tabs.
const TAB_POLL: std::time::Duration = std::time::Duration::from_millis(300);

async fn cast(State(s): St, Query(q): Query<CastQuery>, ws: WebSocketUpgrade) -> Response {
    let (cdp, upstream, tag, dimensions) = {
        let d = lock(&s.data);
        (
            d.browser.as_ref().map(|b| b.cdp.clone()),
            d.browser.as_ref().map(|b| b.chromium.browser_ws_url()),
            d.active.id.clone(),
            d.active.dimensions.clone(),
        )
    };
    let ticket = s.sockets.register(&tag);
    let discovery =
        q.tab_info.as_deref() == Some("true") || (q.page_id.is_none() && q.page_index.is_none());
    ws.on_upgrade(move |socket: WebSocket| async move {
        if discovery {
            tab_discovery(socket, cdp, ticket).await;
        } else if let Some(upstream) = upstream {
            screencast(socket, &upstream, &q, &dimensions, ticket).await;
        }
    })
}

async fn send_json(socket: &mut WebSocket, message: &Value) -> bool {
    socket
        .send(AxMessage::Text(message.to_string().into()))
        .await
        .is_ok()
}

/// What a cast socket's viewer did.
enum FromViewer {
    /// Sent a text message.
    Text(String),
    /// Left, or the session ended (the socket was closed as the registry said).
    Gone,
    /// Anything else (pings, binary frames).
    Other,
}

/// The next thing a cast socket's viewer does, or the session ending first.
async fn from_viewer(socket: &mut WebSocket, ticket: &mut proxy::SocketTicket) -> FromViewer {
    tokio::select! {
        mode = ticket.killed() => {
            if let CloseMode::Graceful { code, reason } = mode {
                let frame = axum::extract::ws::CloseFrame { code, reason: reason.into() };
                let _ = socket.send(AxMessage::Close(Some(frame))).await;
            }
            FromViewer::Gone
        }
        m = socket.recv() => match m {
            Some(Ok(AxMessage::Text(text))) => FromViewer::Text(text.as_str().to_owned()),
            Some(Ok(AxMessage::Close(_)) | Err(_)) | None => FromViewer::Gone,
            Some(Ok(_)) => FromViewer::Other,
        },
    }
}

/// Tab discovery: `tabList` now and whenever tabs open or close (with `tabClosed` for each
/// closed one), until the client leaves or the session ends.
async fn tab_discovery(
    mut socket: WebSocket,
    cdp: Option<crate::CdpClient>,
    mut ticket: proxy::SocketTicket,
) {
    let list = |tabs: &[Value]| {
        let first = tabs
            .first()
            .and_then(|t| t.get("id").cloned())
            .unwrap_or(Value::Null);
        json!({ "type": "tabList", "tabs": tabs, "firstTabId": first })
    };
    let ids = |tabs: &[Value]| -> Vec<Value> {
        tabs.iter().filter_map(|t| t.get("id").cloned()).collect()
    };
    let tabs_now = || async {
        match &cdp {
            Some(c) => page_infos(c).await,
            None => Vec::new(),
        }
    };
    let mut shown = tabs_now().await;
    if !send_json(&mut socket, &list(&shown)).await {
        return;
    }
    let mut poll = tokio::time::interval(TAB_POLL);
    loop {
        tokio::select! {
            heard = from_viewer(&mut socket, &mut ticket) => match heard {
                FromViewer::Gone => break,
                FromViewer::Text(_) | FromViewer::Other => {}
            },
            _ = poll.tick() => {
                let now = tabs_now().await;
                let (before, after) = (ids(&shown), ids(&now));
                if before == after {
                    continue;
                }
                for gone in before.iter().filter(|id| !after.contains(id)) {
                    if !send_json(&mut socket, &json!({ "type": "tabClosed", "pageId": gone })).await {
                        return;
                    }
                }
                if !send_json(&mut socket, &list(&now)).await {
                    return;
                }
                shown = now;
            }
        }
    }
}

/// Page mode: the tab's frames from a screencast on its own CDP connection, input back to the
/// tab, `targetClosed` when it dies. An unknown tab closes the socket at once (as the real
/// server does).
async fn screencast(
    mut socket: WebSocket,
    upstream: &str,
    query: &CastQuery,
    dimensions: &Value,
    mut ticket: proxy::SocketTicket,
) {
    let Ok(cdp) = crate::CdpClient::connect(upstream).await else {
        let _ = socket.send(AxMessage::Close(None)).await;
        return;
    };
    let targets = cdp.page_targets().await.unwrap_or_default();
    let target = match (&query.page_id, query.page_index) {
        (Some(id), _) => targets.iter().find(|(t, _)| t == id),
        (None, Some(index)) => targets.get(index),
        (None, None) => None,
    }
    .map(|(id, _)| id.clone());
    let started = match target {
        Some(target) => start_screencast(&cdp, &target, dimensions)
            .await
            .map(|session| (target, session)),
        None => None,
    };
    let Some((target, session)) = started else {
        let _ = socket.send(AxMessage::Close(None)).await;
        cdp.close().await;
        return;
    };
    let mut events = cdp.subscribe();
    loop {
        tokio::select! {
            heard = from_viewer(&mut socket, &mut ticket) => match heard {
                FromViewer::Text(text) => cast_input(&cdp, &session, &text).await,
                FromViewer::Gone => break,
                FromViewer::Other => {}
            },
            event = events.recv() => {
                let Ok(event) = event else {
                    if cdp.is_closed() { break } else { continue }
                };
                match cast_event(&cdp, &target, &session, &event).await {
                    CastEvent::Frame(frame) => {
                        if !send_json(&mut socket, &frame).await {
                            break;
                        }
                    }
                    CastEvent::TargetClosed => {
                        let _ = send_json(&mut socket, &json!({ "type": "targetClosed", "pageId": target })).await;
                        let _ = socket.send(AxMessage::Close(None)).await;
                        break;
                    }
                    CastEvent::Other => {}
                }
            }
        }
    }
    let _ = cdp
        .call_in(Some(&session), "Page.stopScreencast", json!({}))
        .await;
    cdp.close().await;
}

/// Attaches to `target`, applies the session's dimensions and starts a JPEG screencast (as
/// steel-browser does); returns the CDP session id.
async fn start_screencast(
    cdp: &crate::CdpClient,
    target: &str,
    dimensions: &Value,
) -> Option<String> {
    let size = |k: &str| dimensions.get(k).and_then(Value::as_u64);
    let (width, height) = (
        size("width").unwrap_or(1920),
        size("height").unwrap_or(1080),
    );
    cdp.call("Target.setDiscoverTargets", json!({ "discover": true }))
        .await
        .ok()?;
    let session = cdp.attach(target).await.ok()?;
    let metrics = json!({
        "width": width, "height": height, "screenWidth": width, "screenHeight": height,
        "deviceScaleFactor": 1, "mobile": false,
    });
    cdp.call_in(
        Some(&session),
        "Emulation.setDeviceMetricsOverride",
        metrics,
    )
    .await
    .ok()?;
    // The tab shown is the one in front: a tab left in the background (another opened and
    // closed meanwhile) paints no frame until something repaints it.
    let _ = cdp
        .call_in(Some(&session), "Page.bringToFront", json!({}))
        .await;
    let start = json!({ "format": "jpeg", "quality": 75, "maxWidth": width, "maxHeight": height });
    cdp.call_in(Some(&session), "Page.startScreencast", start)
        .await
        .ok()?;
    Some(session)
}

enum CastEvent {
    /// A frame message for the client.
    Frame(Value),
    /// The tab is gone.
    TargetClosed,
    /// Nothing for the client.
    Other,
}

async fn cast_event(
    cdp: &crate::CdpClient,
    target: &str,
    session: &str,
    event: &Value,
) -> CastEvent {
    let method = event
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = event.get("params").cloned().unwrap_or(Value::Null);
    let param = |k: &str| params.get(k).and_then(Value::as_str).unwrap_or_default();
    let in_session = event.get("sessionId").and_then(Value::as_str) == Some(session);
    match method {
        "Page.screencastFrame" if in_session => {
            let ack =
                json!({ "sessionId": params.get("sessionId").cloned().unwrap_or(Value::Null) });
            let _ = cdp
                .call_in(Some(session), "Page.screencastFrameAck", ack)
                .await;
            let info = cdp
                .call("Target.getTargetInfo", json!({ "targetId": target }))
                .await
                .unwrap_or(Value::Null);
            let info = |k: &str| info["targetInfo"].get(k).cloned().unwrap_or(Value::Null);
            CastEvent::Frame(json!({
                "pageId": target,
                "url": info("url"),
                "title": info("title"),
                "favicon": Value::Null,
                "data": param("data"),
            }))
        }
        "Target.targetDestroyed" if param("targetId") == target => CastEvent::TargetClosed,
        "Target.detachedFromTarget" if param("sessionId") == session => CastEvent::TargetClosed,
        _ => CastEvent::Other,
    }
}

/// A viewer's `mouseEvent`, `keyEvent` or `navigation` message, applied to the tab.
async fn cast_input(cdp: &crate::CdpClient, session: &str, text: &str) {
    let Ok(message) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let event = message.get("event").cloned().unwrap_or(Value::Null);
    let field = |k: &str| event.get(k).cloned().unwrap_or(Value::Null);
    let (method, params) = match message.get("type").and_then(Value::as_str) {
        Some("mouseEvent") => {
            let none = event.get("button").and_then(Value::as_str) == Some("none");
            (
                "Input.dispatchMouseEvent",
                json!({
                    "type": field("type"), "x": field("x"), "y": field("y"),
                    "button": field("button"), "buttons": u8::from(!none),
                    "clickCount": event.get("clickCount").cloned().unwrap_or(json!(1)),
                    "modifiers": event.get("modifiers").cloned().unwrap_or(json!(0)),
                    "deltaX": field("deltaX"), "deltaY": field("deltaY"),
                }),
            )
        }
        Some("keyEvent") => (
            "Input.dispatchKeyEvent",
            json!({
                "type": field("type"), "text": field("text"), "code": field("code"),
                "key": field("key"), "windowsVirtualKeyCode": field("keyCode"),
                "nativeVirtualKeyCode": field("keyCode"),
                "modifiers": event.get("modifiers").cloned().unwrap_or(json!(0)),
            }),
        ),
        Some("navigation") => match (
            event.get("url").and_then(Value::as_str),
            event.get("action").and_then(Value::as_str),
        ) {
            (Some(url), _) => ("Page.navigate", json!({ "url": url })),
            (None, Some("refresh")) => ("Page.reload", json!({})),
            (None, Some("back")) => (
                "Runtime.evaluate",
                json!({ "expression": "history.back()" }),
            ),
            (None, Some("forward")) => (
                "Runtime.evaluate",
                json!({ "expression": "history.forward()" }),
            ),
            _ => return,
        },
        _ => return,
    };
    let params = match params {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    };
    if let Err(e) = cdp.call_in(Some(session), method, params).await {
        tracing::debug!(error = %e, "steel double: a viewer input failed");
    }
}

async fn fallback(
    State(s): St,
    method: Method,
    uri: Uri,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let path = uri.path();
    let reserved = path.starts_with("/__mock")
        || matches!(
            path,
            "/v1/sessions/logs" | "/v1/sessions/pageId" | "/v1/sessions/recording"
        );
    match ws {
        Ok(ws) if !reserved => proxy_upgrade(&s, ws).await,
        _ => fastify_404(&method, &uri),
    }
}

async fn not_found_any(method: Method, uri: Uri) -> Response {
    fastify_404(&method, &uri)
}

async fn proxy_upgrade(s: &Shared, ws: WebSocketUpgrade) -> Response {
    let (upstream_url, tag) = {
        let d = lock(&s.data);
        (
            d.browser.as_ref().map(|b| b.chromium.browser_ws_url()),
            d.active.id.clone(),
        )
    };
    let Some(upstream_url) = upstream_url else {
        return steel_failure(502, "browser is not running");
    };
    let upstream =
        match proxy::connect_upstream(&upstream_url, crate::cdp::DEFAULT_CDP_TIMEOUT).await {
            Ok(u) => u,
            Err(e) => return steel_failure(502, &e.to_string()),
        };
    let ticket = s.sockets.register(&tag);
    ws.on_upgrade(move |socket| async move {
        proxy::pipe(socket, upstream, ticket).await;
    })
}

/// The control plane, `/__mock/{op}` (never recorded, never a Steel path): `POST
/// fail-next-create {status}`, `POST expire {id?}`, `POST drop-sockets`, `GET calls`, `GET
/// state`; anything else is a Fastify-shaped 404.
async fn control(
    State(s): St,
    Path(op): Path<String>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    let field = |k: &str| {
        serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get(k).cloned())
    };
    match (method.as_str(), op.as_str()) {
        ("POST", "fail-next-create") => {
            let status = field("status")
                .and_then(|v| v.as_u64())
                .and_then(|v| u16::try_from(v).ok())
                .unwrap_or(500);
            lock(&s.data).faults.push_back(status);
            json_response(200, &json!({ "queued": status }))
        }
        ("POST", "expire") => {
            let id = field("id").and_then(|v| v.as_str().map(str::to_owned));
            let expired = s.expire(id.as_deref()).await;
            json_response(200, &json!({ "expired": expired }))
        }
        ("POST", "drop-sockets") => {
            let dropped = s.sockets.close_all(&CloseMode::Abrupt);
            json_response(200, &json!({ "dropped": dropped }))
        }
        ("GET", "calls") => json_response(200, &json!(s.recorder.snapshot())),
        ("GET", "state") => json_response(200, &s.state_json()),
        _ => fastify_404(&method, &uri),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_validation() {
        assert!(parse_create(b"").is_ok());
        assert!(parse_create(b"{\"timeout\": 5, \"unknown\": true}").is_ok());
        let e = parse_create(b"{\"sessionId\":\"nope\"}")
            .err()
            .unwrap_or_default();
        assert_eq!(e, "body/sessionId must match format \"uuid\"");
        assert!(parse_create(b"[1]").is_err());
        assert!(parse_create(b"{\"dimensions\":{\"width\":1}}").is_err());
        let ok = parse_create(
            br#"{"sessionId":"123e4567-e89b-42d3-a456-426614174000",
                "sessionContext":{"cookies":[{"name":"a","value":"b","url":"http://x/"}],
                "localStorage":{"http://x":{"k":"v"}}}}"#,
        );
        let ok = ok.unwrap_or_default();
        assert_eq!(ok.cookies.len(), 1);
        assert_eq!(ok.local_storage.len(), 1);
    }

    #[test]
    fn details_urls() {
        let s = Session::new("abc".to_owned(), Status::Live, "UA".to_owned());
        let d = details(
            &s,
            &Urls {
                host: "0.0.0.0".to_owned(),
                port: 3000,
            },
        );
        assert_eq!(d["websocketUrl"], "ws://0.0.0.0:3000/");
        assert_eq!(d["debugUrl"], "http://0.0.0.0:3000/v1/sessions/debug");
        assert_eq!(d["status"], "live");
        assert_eq!(d["timeout"], 0);
    }
}
