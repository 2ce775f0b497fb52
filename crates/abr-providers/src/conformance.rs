//! The provider conformance suite: one set of checks every [`SessionProvider`] of
//! [`BrowserSession`]s runs (local, CDP, Steel, Kernel), against real Chromium and a local
//! test site. Enabled by the `conformance` feature; third-party providers can run it too.
//!
//! Each check is a plain `async fn` that panics with a message when the provider breaks the
//! contract. What differs between providers is passed in explicitly ([`LeakProbe`], crash
//! recovery) rather than guessed.
//!
//! Remote providers (a [`RemoteSessionProvider`](crate::RemoteSessionProvider) over any
//! [`RemoteBackend`](crate::RemoteBackend))
//! also run the remote-lifecycle checks against a double of their service
//! ([`RemoteService`]): a failure after create still ends the session, dropped and cancelled
//! leases are ended, and expiry mid-job is a typed retryable error and makes the session
//! [lost](SessionContext::is_lost).

#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test suite"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use abr_core::guard::{MAX_FRAME_BYTES, PageProbe, PageRedaction, jpeg_size};
use abr_core::{
    AcquireMode, AcquireRequest, AllowedPrivate, EgressPolicy, Lease, ProviderError,
    SessionContext, SessionProvider,
};
use abr_protocol::{AgentSessionState, Cookie, LocalStorageItem, OriginState};
use axum::Router;
use axum::extract::Query;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use playwright_rs::protocol::GotoOptions;
use serde::Deserialize;

use crate::BrowserSession;

/// The page every check loads. Its first script records `document.cookie` and localStorage
/// before any other script runs; a small form serves benchmark jobs.
pub const PAGE: &str = r#"<!doctype html><html><head><script>
(() => { const ls = {}; for (let i = 0; i < localStorage.length; i++) { const k = localStorage.key(i); ls[k] = localStorage.getItem(k); }
  window.__seen = { cookie: document.cookie, ls }; })();
</script><title>abr test page</title></head><body>
<input id="name"><button id="go" onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value">Go</button>
<p id="out"></p></body></html>"#;

/// The page of the network check: every way an ordinary page writes, each behind a function
/// of `window.writes` (returning what the page saw), and two GraphQL calls.
pub const WRITES_PAGE: &str = r#"<!doctype html><html><head><title>writes</title></head><body>
<form id="form" method="post" action="/api/form"><input name="q" value="x"><button id="submit">Submit</button></form>
<iframe id="frame" srcdoc='<form id="g" method="post" action="/api/frame-form"><button id="s">Go</button></form><script>addEventListener("pagehide", () => navigator.sendBeacon("/api/leave-frame", "x"));</script>'></iframe>
<iframe name="pingframe"></iframe>
<a id="pinged" href="/page" target="pingframe" ping="/api/ping">Pinged link</a>
<script>
const quiet = (p) => p.then((r) => r.status, () => 'refused');
const gql = (query) => quiet(fetch('/graphql', { method: 'POST',
  headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) }));
// Writes a document sends as it is left: the browser sends them after it is gone.
addEventListener('pagehide', () => navigator.sendBeacon('/api/leave-beacon', 'x'));
addEventListener('visibilitychange', () => {
  fetch('/api/leave-keepalive', { method: 'POST', body: 'x', keepalive: true }).catch(() => {});
});
window.writes = {
  fetch: () => quiet(fetch('/api/fetch', { method: 'POST', body: 'x' })),
  put: () => quiet(fetch('/api/put', { method: 'PUT', body: 'x' })),
  del: () => quiet(fetch('/api/delete', { method: 'DELETE' })),
  patch: () => quiet(fetch('/api/patch', { method: 'PATCH', body: 'x' })),
  xhr: () => new Promise((done) => { const x = new XMLHttpRequest(); x.open('POST', '/api/xhr');
    x.onload = () => done(x.status); x.onerror = () => done('refused'); x.send('x'); }),
  beacon: () => navigator.sendBeacon('/api/beacon', 'x'),
  keepalive: () => quiet(fetch('/api/keepalive', { method: 'POST', body: 'x', keepalive: true })),
  timer: () => { setTimeout(() => fetch('/api/timer', { method: 'POST' }).catch(() => {}), 50); return 'armed'; },
  worker: () => { const w = new Worker('/worker.js'); w.postMessage('go'); return 'started'; },
  sharedWorker: () => { if (typeof SharedWorker !== 'function') return 'unavailable';
    const w = new SharedWorker('/shared-worker.js'); w.port.postMessage('go'); return 'started'; },
  frame: () => { document.getElementById('frame').contentDocument.getElementById('s').click(); return 'clicked'; },
  ping: () => { document.getElementById('pinged').click(); return 'clicked'; },
  hop: () => quiet(fetch('http://localhost:' + location.port + '/api/hop307?to='
    + encodeURIComponent(location.origin + '/api/hop'), { method: 'POST', mode: 'no-cors', body: 'x' })),
  ws: () => new Promise((done) => { const s = new WebSocket('ws://' + location.host + '/ws');
    s.onopen = () => { s.send('hello'); done('open'); }; s.onerror = () => done('error');
    s.onclose = () => done('closed'); setTimeout(() => done('timeout'), 3000); }),
  query: () => gql('query Feed { feed { id } }'),
  mutation: () => gql('mutation Like { like(id: 1) { ok } }'),
  form: () => { document.getElementById('submit').click(); return 'clicked'; },
};
</script></body></html>"#;

/// What the socket pages share: a WebSocket and a `WebSocketStream` to the site's `/ws`
/// (named by `from`, sending one message once open), and a dedicated worker from a script.
const SOCKET_HELPERS: &str = r#"
const wsUrl = (from) => 'ws://' + location.host + '/ws?from=' + from;
const ws = (from) => "try { const s = new WebSocket('" + wsUrl(from) + "'); s.onopen = () => s.send('x'); } catch (e) {}";
const stream = (from) => "try { if (typeof WebSocketStream === 'function') new WebSocketStream('" + wsUrl(from)
  + "').opened.then(({ writable }) => writable.getWriter().write('x')).catch(() => {}); } catch (e) {}";
const blobOf = (src) => URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
const worker = (src) => { try { new Worker(blobOf(src)); } catch (e) {} };
"#;

/// The page of the socket check: `window.sockets()` opens a socket from every place a page
/// can: the document (`WebSocket`, `WebSocketStream`), dedicated workers (from a blob, from a
/// file, with `WebSocketStream`, a worker's worker), an `about:blank` frame the page scripts
/// (its document and its worker), and two popups (with and without an opener), which open
/// theirs as they load. Every socket says where it came from (`/ws?from=…`).
pub const SOCKETS_PAGE: &str = r#"<!doctype html><html><head><title>sockets</title></head><body>
<script src="/socket-helpers.js"></script><script>
window.sockets = () => {
  eval(ws('page')); eval(stream('page-stream'));
  worker(ws('worker')); worker(stream('worker-stream'));
  try { new Worker('/socket-worker.js?from=worker-file'); } catch (e) {}
  worker("try { new Worker(URL.createObjectURL(new Blob([" + JSON.stringify(ws('nested')) + "], { type: 'text/javascript' }))); } catch (e) {}");
  try { new Worker('/socket-nest.js'); } catch (e) {}
  const f = document.createElement('iframe'); document.body.appendChild(f);
  f.contentWindow.eval(ws('frame') + stream('frame-stream')
    + "try { new Worker(URL.createObjectURL(new Blob([" + JSON.stringify(ws('frame-worker')) + "], { type: 'text/javascript' }))); } catch (e) {}");
  window.open('/socket-popup?from=popup');
  window.open('/socket-popup?from=noopener', '_blank', 'noopener');
  return 'sent';
};
</script></body></html>"#;

/// A popup of [`SOCKETS_PAGE`]: its document's socket and stream and a worker's, at load.
const SOCKET_POPUP: &str = r#"<!doctype html><html><head><title>popup</title></head><body>
<script src="/socket-helpers.js"></script><script>
const from = new URLSearchParams(location.search).get('from');
eval(ws(from)); eval(stream(from + '-stream')); worker(ws(from + '-worker'));
</script></body></html>"#;

/// The worker file of [`SOCKETS_PAGE`]: a socket named by its own query.
const SOCKET_WORKER: &str = "const from = new URLSearchParams(location.search).get('from'); \
    const s = new WebSocket('ws://' + location.host + '/ws?from=' + from); s.onopen = () => s.send('x');";

/// A worker file of [`SOCKETS_PAGE`] that starts a worker of its own, which opens a socket.
const SOCKET_NEST: &str = "const u = 'ws://' + location.host + '/ws?from=nested-file'; \
    try { new Worker(URL.createObjectURL(new Blob([\"const s = new WebSocket('\" + u + \"'); \
    s.onopen = () => s.send('x');\"], { type: 'text/javascript' }))); } catch (e) {}";

/// Every socket [`SOCKETS_PAGE`] opens, by its `from`.
pub const SOCKET_SOURCES: [&str; 16] = [
    "page",
    "page-stream",
    "worker",
    "worker-stream",
    "worker-file",
    "nested",
    "nested-file",
    "frame",
    "frame-stream",
    "frame-worker",
    "popup",
    "popup-stream",
    "popup-worker",
    "noopener",
    "noopener-stream",
    "noopener-worker",
];

/// The dedicated worker of [`WRITES_PAGE`]: posts when told to.
const WRITES_WORKER: &str =
    "onmessage = () => { fetch('/api/worker', { method: 'POST', body: 'x' }).catch(() => {}); };";

/// The shared worker of [`WRITES_PAGE`]: posts when told to.
const WRITES_SHARED_WORKER: &str = "onconnect = (e) => { const port = e.ports[0]; \
    port.onmessage = () => { fetch('/api/shared-worker', { method: 'POST', body: 'x' }).catch(() => {}); }; };";

/// What reached the test site with a method other than GET, HEAD or OPTIONS (and every
/// WebSocket upgrade and message), as `METHOD /path`, in arrival order.
#[derive(Debug, Clone, Default)]
pub struct WriteLedger(Arc<std::sync::Mutex<Vec<String>>>);

impl WriteLedger {
    fn record(&self, entry: String) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(entry);
    }

    /// Everything recorded so far.
    pub fn entries(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Forgets everything.
    pub fn clear(&self) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}

/// A local site on `127.0.0.1:0`, reachable as two origins: `http://127.0.0.1:P` and
/// `http://localhost:P`.
#[derive(Debug)]
pub struct TestSite {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    ledger: WriteLedger,
}

/// Where `/api/hop307` sends a request on (`307`: the method and body kept).
#[derive(Deserialize)]
struct Hop {
    to: String,
}

/// Where a socket to `/ws` says it came from.
#[derive(Deserialize)]
struct SocketFrom {
    from: Option<String>,
}

#[derive(Deserialize)]
struct SetCookie {
    name: String,
    value: String,
}

impl TestSite {
    /// Starts the site.
    pub async fn start() -> std::io::Result<Self> {
        let ledger = WriteLedger::default();
        let sockets = ledger.clone();
        let app = Router::new()
            .route("/page", get(|| async { Html(PAGE) }))
            .route("/writes", get(|| async { Html(WRITES_PAGE) }))
            .route("/sockets", get(|| async { Html(SOCKETS_PAGE) }))
            .route("/socket-popup", get(|| async { Html(SOCKET_POPUP) }))
            .route(
                "/socket-helpers.js",
                get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], SOCKET_HELPERS) }),
            )
            .route(
                "/socket-nest.js",
                get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], SOCKET_NEST) }),
            )
            .route(
                "/socket-worker.js",
                get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], SOCKET_WORKER) }),
            )
            .route(
                "/worker.js",
                get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], WRITES_WORKER) }),
            )
            .route(
                "/shared-worker.js",
                get(|| async {
                    (
                        [(header::CONTENT_TYPE, "text/javascript")],
                        WRITES_SHARED_WORKER,
                    )
                }),
            )
            .route(
                "/api/hop307",
                axum::routing::any(|Query(hop): Query<Hop>| async move {
                    axum::response::Redirect::temporary(&hop.to)
                }),
            )
            .route(
                "/api/{*what}",
                axum::routing::any(|| async { axum::Json(serde_json::json!({ "ok": true })) }),
            )
            .route(
                "/graphql",
                axum::routing::post(|| async { axum::Json(serde_json::json!({ "data": {} })) }),
            )
            .route(
                "/ws",
                get(
                    move |Query(from): Query<SocketFrom>, ws: axum::extract::WebSocketUpgrade| {
                        let ledger = sockets.clone();
                        let named = from.from.map(|f| format!("?from={f}")).unwrap_or_default();
                        async move {
                            ledger.record(format!("WS-OPEN /ws{named}"));
                            ws.on_upgrade(move |mut socket| async move {
                                while let Some(Ok(message)) = socket.recv().await {
                                    if let axum::extract::ws::Message::Text(_)
                                    | axum::extract::ws::Message::Binary(_) = message
                                    {
                                        ledger.record(format!("WS /ws{named}"));
                                    }
                                }
                            })
                        }
                    },
                ),
            )
            .route(
                "/set",
                get(|Query(q): Query<SetCookie>| async move {
                    (
                        [(
                            header::SET_COOKIE,
                            format!("{}={}; Path=/", q.name, q.value),
                        )],
                        Html(PAGE),
                    )
                        .into_response()
                }),
            );
        let writes = ledger.clone();
        let app = app.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let ledger = writes.clone();
                async move {
                    let method = request.method().as_str().to_owned();
                    if !abr_core::guard::is_safe_method(&method) {
                        ledger.record(format!("{method} {}", request.uri().path()));
                    }
                    next.run(request).await
                }
            },
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, task, ledger })
    }

    /// The writes that reached the site.
    pub fn ledger(&self) -> &WriteLedger {
        &self.ledger
    }

    /// `http://127.0.0.1:P`.
    pub fn origin_a(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    /// `http://localhost:P`.
    pub fn origin_b(&self) -> String {
        format!("http://localhost:{}", self.addr.port())
    }

    /// Where the site listens (`127.0.0.1:P`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The egress policy that lets a provider's browser reach exactly this site: public
    /// addresses, plus `127.0.0.1:P` and `localhost:P` (its two origins), nothing else on
    /// loopback.
    pub fn egress(&self) -> EgressPolicy {
        EgressPolicy::new()
            .allow_addr(self.addr)
            .allow_private(AllowedPrivate {
                host: "localhost".to_owned(),
                port: self.addr.port(),
            })
    }
}

impl Drop for TestSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Counts what a provider holds open (contexts, pages, processes, remote sessions), so the
/// suite can check nothing leaks.
#[async_trait::async_trait]
pub trait LeakProbe: Send + Sync {
    /// Resources currently open.
    async fn open(&self) -> usize;
}

/// A state for the test site: host-only cookies on both hosts, localStorage on both origins.
pub fn state_for(site: &TestSite, tag: &str) -> AgentSessionState {
    AgentSessionState {
        cookies: vec![
            Cookie::new("sid", format!("a-{tag}"), "127.0.0.1"),
            Cookie::new("lh", format!("b-{tag}"), "localhost"),
        ],
        origins: vec![
            OriginState::new(
                site.origin_a(),
                vec![LocalStorageItem::new("k1", format!("v1-{tag}"))],
            ),
            OriginState::new(
                site.origin_b(),
                vec![LocalStorageItem::new("k2", format!("v2-{tag}"))],
            ),
        ],
        ..AgentSessionState::default()
    }
}

fn unattended(state: AgentSessionState) -> AcquireRequest {
    request(AcquireMode::Unattended, Some(state))
}

/// A request for `mode` with `state`, no start page.
pub fn request(mode: AcquireMode, state: Option<AgentSessionState>) -> AcquireRequest {
    AcquireRequest {
        profile: None,
        mode,
        platform: "conformance".into(),
        state,
        start_url: None,
    }
}

/// What the page's first script saw.
#[derive(Debug, Deserialize, PartialEq, Eq)]
pub struct Seen {
    /// `document.cookie`.
    pub cookie: String,
    /// localStorage.
    pub ls: BTreeMap<String, String>,
}

impl Seen {
    /// Cookies as a sorted map.
    pub fn cookies(&self) -> BTreeMap<String, String> {
        self.cookie
            .split("; ")
            .filter(|c| !c.is_empty())
            .filter_map(|c| c.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// Every browser call of the suite is bounded: a provider that hangs fails the check
/// instead of hanging the test run.
const STEP: Duration = Duration::from_secs(60);

async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(STEP, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {STEP:?}"))
}

/// Loads `url` in the session's page and returns what its first script saw.
pub async fn visit(session: &BrowserSession, url: &str) -> Seen {
    bounded(
        "goto",
        session
            .page()
            .goto(url, GotoOptions::new().timeout(Duration::from_secs(20))),
    )
    .await
    .unwrap_or_else(|e| panic!("goto {url}: {e}"));
    bounded(
        "evaluate",
        session
            .page()
            .evaluate::<(), Seen>("() => window.__seen", None),
    )
    .await
    .unwrap_or_else(|e| panic!("reading what {url} saw: {e}"))
}

/// Releases `lease`, which must succeed within the suite's step bound.
pub async fn release(lease: Lease<BrowserSession>) {
    bounded("release", lease.release()).await.expect("release");
}

/// Acquires `request` from `provider`, which must succeed within the suite's step bound.
pub async fn acquire_with<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    request: AcquireRequest,
) -> Lease<BrowserSession> {
    bounded("acquire", provider.acquire(request))
        .await
        .unwrap_or_else(|e| panic!("acquire failed: {e}"))
}

/// A port on 127.0.0.1 nothing listens on.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A server on 127.0.0.1 that accepts connections and never answers (a start page to get
/// stuck on), until the returned task is aborted.
pub async fn silent_server() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (addr, task)
}

/// Waits until `done`, failing the check after `deadline`.
pub async fn wait_until(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    let started = tokio::time::Instant::now();
    while !done() {
        assert!(
            started.elapsed() < deadline,
            "{what}: not within {deadline:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn map(pairs: &[(&str, String)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

async fn acquire<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    state: AgentSessionState,
) -> Lease<BrowserSession> {
    acquire_with(provider, unattended(state)).await
}

/// A network gate for the suite: the core's rule with the site's GraphQL queries declared
/// reads, refusing every other write when `refuse`; it records what it was asked and which
/// writes had already reached the site when it was asked (none may have: the gate holds a
/// request before it leaves).
#[derive(Debug)]
struct SuiteGate {
    rules: abr_core::guard::NetworkRules,
    own: abr_core::guard::OwnSites,
    refuse: bool,
    ledger: WriteLedger,
    asked: std::sync::Mutex<Vec<String>>,
    early: std::sync::Mutex<Vec<String>>,
    sockets: std::sync::Mutex<Vec<String>>,
    /// The sockets the gate was told of, by their `from` (or path).
    opened: std::sync::Mutex<Vec<String>>,
}

impl SuiteGate {
    fn new(site: &TestSite, refuse: bool) -> Arc<Self> {
        let spec = abr_protocol::NetworkPolicySpec {
            reads: vec![abr_protocol::ReadEndpointSpec {
                url: format!("{}/graphql", site.origin_a()),
                methods: vec![],
                graphql: Some(abr_protocol::GraphqlOperation::Query),
            }],
            ..abr_protocol::NetworkPolicySpec::default()
        };
        let mut own = abr_core::guard::OwnSites::default();
        own.add_url(&site.origin_a());
        Arc::new(Self {
            rules: abr_core::guard::NetworkRules::from_spec(&spec).expect("the suite's rules"),
            own,
            refuse,
            ledger: site.ledger().clone(),
            asked: std::sync::Mutex::default(),
            early: std::sync::Mutex::default(),
            sockets: std::sync::Mutex::default(),
            opened: std::sync::Mutex::default(),
        })
    }

    fn list(list: &std::sync::Mutex<Vec<String>>) -> Vec<String> {
        list.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// A socket's `from` (see [`SOCKETS_PAGE`]), else its path.
fn socket_name(url: &str) -> String {
    url::Url::parse(url).map_or_else(
        |_| url.to_owned(),
        |u| {
            u.query_pairs()
                .find(|(k, _)| k == "from")
                .map_or_else(|| u.path().to_owned(), |(_, v)| v.into_owned())
        },
    )
}

fn path_of(url: &str) -> String {
    url::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.path().to_owned())
}

#[async_trait::async_trait]
impl abr_core::guard::RequestGate for SuiteGate {
    async fn admit(&self, request: &abr_core::guard::OutgoingRequest<'_>) -> bool {
        let entry = format!(
            "{} {}",
            request.method.to_ascii_uppercase(),
            path_of(request.url)
        );
        // The same write asked about before may have arrived once per earlier ask, no more.
        let arrived = self
            .ledger
            .entries()
            .iter()
            .filter(|e| **e == entry)
            .count();
        let mut asked = self.asked.lock().unwrap();
        if arrived > asked.iter().filter(|e| **e == entry).count() {
            self.early.lock().unwrap().push(entry.clone());
        }
        asked.push(entry);
        drop(asked);
        let kind = abr_core::guard::classify(&self.rules, &self.own, request);
        kind == abr_core::guard::RequestKind::Read || !self.refuse
    }

    fn refuses_writes(&self) -> bool {
        self.refuse
    }

    fn websockets_guarded(&self) -> bool {
        self.refuse
    }

    fn admit_websocket(&self, url: &str) -> bool {
        self.sockets.lock().unwrap().push(path_of(url));
        !self.refuse
    }

    async fn socket_opened(&self, url: &str) {
        self.opened.lock().unwrap().push(socket_name(url));
    }
}

/// The ways [`WRITES_PAGE`] writes, in the order the check runs them (the form last: when
/// it is let through, its page is left).
const WRITES: [&str; 17] = [
    "fetch",
    "put",
    "del",
    "patch",
    "xhr",
    "beacon",
    "keepalive",
    "timer",
    "worker",
    "sharedWorker",
    "frame",
    "ping",
    "hop",
    "ws",
    "query",
    "mutation",
    "form",
];

/// Every HTTP write [`WRITES_PAGE`] makes, as the ledger writes it (a guarded context has
/// no shared worker: it never makes the last). The three before the last are sent as the
/// page is left.
const HTTP_WRITES: [&str; 18] = [
    "POST /api/fetch",
    "PUT /api/put",
    "DELETE /api/delete",
    "PATCH /api/patch",
    "POST /api/xhr",
    "POST /api/beacon",
    "POST /api/keepalive",
    "POST /api/timer",
    "POST /api/worker",
    "POST /api/frame-form",
    "POST /api/ping",
    "POST /api/hop307",
    "POST /graphql",
    "POST /api/form",
    "POST /api/leave-beacon",
    "POST /api/leave-keepalive",
    "POST /api/leave-frame",
    "POST /api/shared-worker",
];

/// Runs every write of [`WRITES_PAGE`] in `session` (already on it), and answers what the
/// page saw of each.
async fn run_writes(
    session: &BrowserSession,
    with_form: bool,
) -> BTreeMap<String, serde_json::Value> {
    let mut seen = BTreeMap::new();
    let count = if with_form {
        WRITES.len()
    } else {
        WRITES.len() - 1
    };
    for name in &WRITES[..count] {
        let js = format!("() => window.writes.{name}()");
        let answer = bounded(
            "a write",
            session.page().evaluate::<(), serde_json::Value>(&js, None),
        )
        .await
        .unwrap_or_else(|e| panic!("running the write {name}: {e}"));
        seen.insert((*name).to_owned(), answer);
    }
    seen
}

/// A network gate installed on a context holds every request whose method is not safe
/// before it leaves the browser, from every source an ordinary page has (form posts in the
/// page and in a frame, fetch, XHR, beacons, keepalive fetches, pings, timers, dedicated
/// and shared workers), and every WebSocket when it guards them: refused, none reaches the
/// site (the page stays where it was); let through, each reaches it only after the gate was
/// asked, also a redirect's next hop (a write to another site sent on to the site by a 307).
/// Reads go on unasked, except the declared GraphQL query, which passes.
pub async fn the_network_gate_holds_every_write<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
) {
    // Read-only: nothing but the declared read reaches the site.
    site.ledger().clear();
    let lease = acquire(provider, AgentSessionState::default()).await;
    let gate = SuiteGate::new(site, true);
    let installed: Arc<dyn abr_core::guard::RequestGate> = gate.clone();
    bounded(
        "installing the network gate",
        abr_core::guard::PageProbe::guard_network(lease.context(), installed),
    )
    .await
    .expect("the network gate installs");
    let page = format!("{}/writes", site.origin_a());
    visit_page(lease.context(), &page).await;
    let seen = run_writes(lease.context(), true).await;
    let asked_about = |writes: &[&str]| {
        let asked = SuiteGate::list(&gate.asked);
        writes.iter().all(|w| asked.iter().any(|a| a == w))
    };
    // The page's own writes as it is left are asked about; a subframe's (the last of them)
    // may be judged without the gate (see `unload`): refused while a gate refuses.
    let (in_page, on_leaving) = HTTP_WRITES[..HTTP_WRITES.len() - 2].split_at(14);
    wait_until(
        "the gate was asked about every write",
        Duration::from_secs(10),
        || asked_about(in_page),
    )
    .await;
    assert_eq!(
        lease.context().page().url(),
        page,
        "a refused form post leaves the page where it was"
    );
    // Leaving the page: its document's last writes.
    visit_page(lease.context(), &format!("{}/page", site.origin_a())).await;
    wait_until(
        "the gate was asked about the writes of the page left",
        Duration::from_secs(10),
        || asked_about(on_leaving),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        site.ledger().entries(),
        vec!["POST /graphql".to_owned()],
        "under a refusing gate only the declared GraphQL query reached the site; the page \
         saw {seen:?}; the gate was asked {:?}",
        SuiteGate::list(&gate.asked)
    );
    let asked = SuiteGate::list(&gate.asked);
    // Only the site's requests are judged: one the egress refuses (Steel's session recorder
    // posting to Steel's own API port) never reaches the gate, where it would read as a
    // write of the page's (a click's commit, a read-only action's refusal).
    let others: Vec<&String> = asked
        .iter()
        .filter(|a| !HTTP_WRITES.contains(&a.as_str()) && a.as_str() != "POST /api/hop")
        .collect();
    assert!(
        others.is_empty(),
        "the gate was asked about requests that are not the site's: {others:?}"
    );
    assert_eq!(
        seen["sharedWorker"],
        serde_json::json!("unavailable"),
        "a guarded context has no shared workers (their requests are not routed)"
    );
    for write in &HTTP_WRITES[..HTTP_WRITES.len() - 2] {
        assert!(
            asked.iter().any(|a| a == write),
            "the gate was never asked about {write}: {asked:?}"
        );
    }
    assert_eq!(SuiteGate::list(&gate.sockets), vec!["/ws".to_owned()]);
    assert_ne!(
        seen["ws"],
        serde_json::json!("open"),
        "a refused socket never opens"
    );
    assert_eq!(seen["fetch"], serde_json::json!("refused"));
    assert_eq!(
        seen["query"],
        serde_json::json!(200),
        "a declared read goes"
    );
    assert_eq!(seen["mutation"], serde_json::json!("refused"));
    release(lease).await;

    // Let through: every write arrives, each only after the gate was asked about it.
    site.ledger().clear();
    let lease = acquire(provider, AgentSessionState::default()).await;
    let gate = SuiteGate::new(site, false);
    let installed: Arc<dyn abr_core::guard::RequestGate> = gate.clone();
    bounded(
        "installing the network gate",
        abr_core::guard::PageProbe::guard_network(lease.context(), installed),
    )
    .await
    .expect("the network gate installs");
    visit_page(lease.context(), &page).await;
    let seen = run_writes(lease.context(), false).await;
    let form = bounded(
        "the form",
        lease
            .context()
            .page()
            .evaluate::<(), serde_json::Value>("() => window.writes.form()", None),
    )
    .await;
    assert!(form.is_ok(), "{form:?}");
    // The last two: the frame's leave beacon is the browser's to send or not (with the
    // parent's form navigation, Chromium attached over CDP often sends none: nothing was
    // paused at the browser's net, nothing asked, nothing refused); shared workers are off.
    let missing = || {
        let ledger = site.ledger().entries();
        HTTP_WRITES[..HTTP_WRITES.len() - 2]
            .iter()
            .filter(|w| !ledger.iter().any(|l| l == *w))
            .copied()
            .collect::<Vec<_>>()
    };
    let started = tokio::time::Instant::now();
    while !missing().is_empty() && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        missing(),
        Vec::<&str>::new(),
        "every write reached the site; the gate was asked {:?}",
        SuiteGate::list(&gate.asked)
    );
    assert!(
        SuiteGate::list(&gate.early).is_empty(),
        "writes reached the site before the gate was asked: {:?}",
        SuiteGate::list(&gate.early)
    );
    // A write to another site that answers 307 to the site: its next hop is asked about
    // too, before it arrives (it is a write to the site's own).
    assert!(
        site.ledger().entries().iter().any(|e| e == "POST /api/hop"),
        "the redirected write arrived: {:?}",
        site.ledger().entries()
    );
    assert!(
        SuiteGate::list(&gate.asked)
            .iter()
            .any(|a| a == "POST /api/hop"),
        "the gate was asked about the redirect's next hop: {:?}",
        SuiteGate::list(&gate.asked)
    );
    assert_eq!(
        seen["ws"],
        serde_json::json!("open"),
        "a gate that does not guard sockets"
    );
    assert_eq!(seen["sharedWorker"], serde_json::json!("unavailable"));
    release(lease).await;
    site.ledger().clear();
}

/// No WebSocket leaves a context whose network gate guards them, from any place a page can
/// open one ([`SOCKETS_PAGE`]: the document with `WebSocket` and `WebSocketStream`, dedicated
/// workers at any depth, a scripted frame and its worker, popups with and without an
/// opener): none reaches the site, and the popups' documents still load. Under a gate that
/// does not guard them every one of them connects, and the gate is told of each (but a
/// worker's worker's, which the driver reports only when it attached to the first worker in
/// time).
pub async fn no_socket_leaves_a_guarded_context<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
) {
    let page = format!("{}/sockets", site.origin_a());
    let sockets_opened = |entries: &[String]| {
        entries
            .iter()
            .filter(|e| e.starts_with("WS-OPEN"))
            .cloned()
            .collect::<Vec<_>>()
    };
    for refuse in [true, false] {
        site.ledger().clear();
        let lease = acquire(provider, AgentSessionState::default()).await;
        let gate = SuiteGate::new(site, refuse);
        let installed: Arc<dyn abr_core::guard::RequestGate> = gate.clone();
        bounded(
            "installing the network gate",
            abr_core::guard::PageProbe::guard_network(lease.context(), installed),
        )
        .await
        .expect("the network gate installs");
        visit_page(lease.context(), &page).await;
        let sent = bounded(
            "opening the sockets",
            lease
                .context()
                .page()
                .evaluate::<(), serde_json::Value>("() => window.sockets()", None),
        )
        .await;
        assert_eq!(sent.ok(), Some(serde_json::json!("sent")));
        if refuse {
            tokio::time::sleep(Duration::from_secs(2)).await;
            assert_eq!(
                sockets_opened(&site.ledger().entries()),
                Vec::<String>::new(),
                "no socket of a guarded context reaches the site"
            );
            // The refused sockets the page-level route never saw are told to the gate, so
            // the run can say what it refused.
            let told = SuiteGate::list(&gate.opened);
            for from in ["page-stream", "worker", "worker-stream", "worker-file"] {
                assert!(
                    told.iter().any(|t| t == from),
                    "the gate was told of the refused socket {from}: {told:?}"
                );
            }
            // The popups were let load (their first document waited for their rule).
            wait_until("both popups loaded", Duration::from_secs(10), || {
                lease
                    .context()
                    .context()
                    .pages()
                    .iter()
                    .filter(|p| p.url().contains("/socket-popup"))
                    .count()
                    == 2
            })
            .await;
        } else {
            let missing = || {
                let opened = sockets_opened(&site.ledger().entries());
                SOCKET_SOURCES
                    .iter()
                    .filter(|from| !opened.iter().any(|o| o.ends_with(&format!("?from={from}"))))
                    .copied()
                    .collect::<Vec<_>>()
            };
            let started = tokio::time::Instant::now();
            while !missing().is_empty() && started.elapsed() < Duration::from_secs(10) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(
                missing(),
                Vec::<&str>::new(),
                "a gate that does not guard sockets lets every one connect"
            );
            // A worker's worker is reported by the driver only when it attached to the
            // first worker in time: not promised (see `sockets`).
            let told = || {
                let opened = SuiteGate::list(&gate.opened);
                SOCKET_SOURCES
                    .iter()
                    .filter(|from| !from.starts_with("nested"))
                    .filter(|from| !opened.iter().any(|o| o == *from))
                    .copied()
                    .collect::<Vec<_>>()
            };
            let started = tokio::time::Instant::now();
            while !told().is_empty() && started.elapsed() < Duration::from_secs(5) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(
                told(),
                Vec::<&str>::new(),
                "the gate is told of every socket, from documents and workers alike"
            );
        }
        release(lease).await;
    }
    site.ledger().clear();
}

async fn visit_page(session: &BrowserSession, url: &str) {
    bounded(
        "goto",
        session
            .page()
            .goto(url, GotoOptions::new().timeout(Duration::from_secs(20))),
    )
    .await
    .unwrap_or_else(|e| panic!("goto {url}: {e}"));
}

/// A context acquired from a state holds exactly that state, visible to the page's first
/// script, on both origins, and nothing else.
pub async fn sees_exactly_the_injected_state<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
) {
    let lease = acquire(provider, state_for(site, "x")).await;
    let a = visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(
        a.cookies(),
        map(&[("sid", "a-x".into())]),
        "cookies on origin A"
    );
    assert_eq!(
        a.ls,
        map(&[("k1", "v1-x".into())]),
        "localStorage on origin A"
    );
    let b = visit(lease.context(), &format!("{}/page", site.origin_b())).await;
    assert_eq!(
        b.cookies(),
        map(&[("lh", "b-x".into())]),
        "cookies on origin B"
    );
    assert_eq!(
        b.ls,
        map(&[("k2", "v2-x".into())]),
        "localStorage on origin B"
    );
    release(lease).await;
}

/// A redacted frame of this provider's browser is a JPEG of the viewport (the page's
/// `innerWidth` × `innerHeight`, one pixel per CSS pixel) of the page loaded, with its one
/// field blurred, and the blur off again after; once the page changed, it is not unchanged
/// since the frame. Sensitive text on the page is masked (a built-in kind and a platform's
/// pattern), and the masks are off again after.
pub async fn frames_capture_the_viewport<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
) {
    let lease = acquire(provider, state_for(site, "f")).await;
    let session = lease.context();
    let url = format!("{}/page", site.origin_a());
    visit_page(session, &url).await;
    let frame = bounded(
        "a redacted frame",
        session.redacted_frame(
            MAX_FRAME_BYTES,
            &PageRedaction::default(),
            Duration::from_secs(20),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("a redacted frame: {e}"));
    assert_eq!(frame.masked, 0, "nothing sensitive on the page");
    assert_eq!(frame.url, url, "the frame's page");
    assert_eq!(frame.blurred, 1, "the page's one field");
    let page = bounded(
        "reading the viewport",
        session.page().evaluate::<(), serde_json::Value>(
            "() => [innerWidth, innerHeight, getComputedStyle(document.getElementById('name')).filter]",
            None,
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("reading the viewport: {e}"));
    let size = page[0].as_u64().zip(page[1].as_u64());
    assert_eq!(
        jpeg_size(&frame.jpeg).map(|(w, h)| (u64::from(w), u64::from(h))),
        size,
        "a JPEG of the viewport"
    );
    assert_eq!(page[2], "none", "the blur is off after the frame");
    // Whatever the provider can tell of a page since a frame, a page that changed is never
    // the frame's.
    if let Some(mark) = &frame.mark {
        bounded(
            "changing the page",
            session.page().evaluate::<(), serde_json::Value>(
                "() => { document.body.append(document.createElement('p')); }",
                None,
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("changing the page: {e}"));
        assert!(
            !bounded(
                "asking whether the page changed",
                session.unchanged_since(mark, Duration::from_secs(20)),
            )
            .await,
            "a changed page passed for the frame's"
        );
    }
    // Text the page shows is masked where it is sensitive: a built-in kind, and what the
    // platform adds; the masks come off after.
    bounded(
        "showing sensitive text",
        session.page().evaluate::<(), serde_json::Value>(
            "() => { const p = document.createElement('p'); \
             p.textContent = 'Write to ada@example.com about ACCT-123456'; \
             document.body.append(p); }",
            None,
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("showing sensitive text: {e}"));
    let platform = PageRedaction::from_spec(&abr_protocol::RedactionSpec {
        patterns: vec![r"ACCT-\d{6}".into()],
        selectors: Vec::new(),
    })
    .unwrap_or_else(|e| panic!("the platform's redaction: {e}"));
    let masked = bounded(
        "a frame with sensitive text",
        session.redacted_frame(MAX_FRAME_BYTES, &platform, Duration::from_secs(20)),
    )
    .await
    .unwrap_or_else(|e| panic!("a frame with sensitive text: {e}"));
    assert_eq!(
        masked.masked, 2,
        "the address and the platform's account number"
    );
    let highlights = bounded(
        "reading the highlights",
        session
            .page()
            .evaluate::<(), serde_json::Value>("() => CSS.highlights.size", None),
    )
    .await
    .unwrap_or_else(|e| panic!("reading the highlights: {e}"));
    assert_eq!(highlights, 0, "the masks are off after the frame");
    release(lease).await;
}

/// The exported state follows what the page changed: a server-set cookie, a changed
/// localStorage value (not overwritten by seeding on the next load).
pub async fn export_follows_page_changes<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
) {
    let lease = acquire(provider, state_for(site, "y")).await;
    let session = lease.context();
    visit(
        session,
        &format!("{}/set?name=fresh&value=f1", site.origin_a()),
    )
    .await;
    bounded(
        "evaluate",
        session
            .page()
            .evaluate::<(), ()>("() => localStorage.setItem('k1', 'changed')", None),
    )
    .await
    .expect("setItem");
    let again = visit(session, &format!("{}/page", site.origin_a())).await;
    assert_eq!(
        again.ls.get("k1").map(String::as_str),
        Some("changed"),
        "seeding clobbered a page change"
    );
    let state = session.export_state().await.expect("export");
    let cookie = |name: &str| {
        state
            .cookies
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.expose().to_owned())
    };
    assert_eq!(cookie("sid").as_deref(), Some("a-y"));
    assert_eq!(cookie("fresh").as_deref(), Some("f1"));
    // The cookies alone are exactly the export's.
    let cookies = session.cookies().await.expect("cookies");
    assert!(
        cookies == state.cookies,
        "cookies() differs from the export's cookies"
    );
    let items: BTreeMap<_, _> = state
        .origins
        .iter()
        .flat_map(|o| {
            o.local_storage.iter().map(move |i| {
                (
                    (o.origin.clone(), i.name.clone()),
                    i.value.expose().to_owned(),
                )
            })
        })
        .collect();
    assert_eq!(
        items
            .get(&(site.origin_a(), "k1".into()))
            .map(String::as_str),
        Some("changed")
    );
    assert_eq!(
        items
            .get(&(site.origin_b(), "k2".into()))
            .map(String::as_str),
        Some("v2-y")
    );
    assert_eq!(
        items.len(),
        2,
        "export carries exactly the page's localStorage: {items:?}"
    );
    release(lease).await;
}

/// A job sees nothing of an earlier job's state.
pub async fn no_state_from_an_earlier_job<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
) {
    let first = acquire(provider, state_for(site, "one")).await;
    visit(
        first.context(),
        &format!("{}/set?name=leak&value=l1", site.origin_a()),
    )
    .await;
    bounded(
        "evaluate",
        first
            .context()
            .page()
            .evaluate::<(), ()>("() => localStorage.setItem('leak', 'l2')", None),
    )
    .await
    .expect("setItem");
    release(first).await;

    let second = acquire(provider, state_for(site, "two")).await;
    let seen = visit(second.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(
        seen.cookies(),
        map(&[("sid", "a-two".into())]),
        "cookies leaked between jobs"
    );
    assert_eq!(
        seen.ls,
        map(&[("k1", "v1-two".into())]),
        "localStorage leaked between jobs"
    );
    release(second).await;
}

/// Named profiles. A provider without [`profiles`](abr_core::ProviderCapabilities::profiles)
/// refuses one, typed `Unsupported`, opening nothing. One with them keeps what a lease on a
/// profile left (a cookie that outlives the browser, localStorage) for the next lease on
/// the same profile, and for no other: another profile and an ordinary lease start empty.
/// `folder` is a fresh profile folder name of the caller's.
pub async fn profiles_keep_their_own_state<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
    folder: &str,
) {
    let on = |profile: &str| AcquireRequest {
        profile: Some(profile.to_owned()),
        ..request(AcquireMode::Unattended, None)
    };
    let request = on(folder);
    if !provider.capabilities().profiles {
        let Err(refused) = bounded("acquire", provider.acquire(request)).await else {
            panic!("a provider without profiles refuses one");
        };
        assert_eq!(refused.kind(), abr_core::ProviderErrorKind::Unsupported);
        return;
    }
    let page = format!("{}/page", site.origin_a());
    let first = acquire_with(provider, request.clone()).await;
    visit(first.context(), &page).await;
    bounded(
        "evaluate",
        first.context().page().evaluate::<(), ()>(
            "() => { document.cookie = 'kept=yes; max-age=3600; path=/'; \
             localStorage.setItem('kept', 'ls'); }",
            None,
        ),
    )
    .await
    .expect("setting the profile's state");
    release(first).await;

    let again = acquire_with(provider, request).await;
    let seen = visit(again.context(), &page).await;
    assert_eq!(
        seen.cookies(),
        map(&[("kept", "yes".into())]),
        "the profile's cookie"
    );
    assert_eq!(
        seen.ls,
        map(&[("kept", "ls".into())]),
        "the profile's localStorage"
    );
    release(again).await;

    let other_folder = format!("{folder}-other");
    let other = acquire_with(provider, on(&other_folder)).await;
    let seen = visit(other.context(), &page).await;
    assert!(
        seen.cookies().is_empty() && seen.ls.is_empty(),
        "another profile: {seen:?}"
    );
    release(other).await;
    let plain = acquire(provider, AgentSessionState::default()).await;
    let seen = visit(plain.context(), &page).await;
    assert!(
        seen.cookies().is_empty() && seen.ls.is_empty(),
        "an ordinary lease: {seen:?}"
    );
    release(plain).await;
}

/// `cycles` acquire/visit/release cycles leave nothing open.
pub async fn cycles_leak_nothing<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
    cycles: usize,
    probe: &dyn LeakProbe,
) {
    let before = bounded("the leak probe", probe.open()).await;
    for i in 0..cycles {
        let lease = acquire(provider, state_for(site, &i.to_string())).await;
        let seen = visit(lease.context(), &format!("{}/page", site.origin_a())).await;
        assert_eq!(
            seen.cookies().get("sid").map(String::as_str),
            Some(format!("a-{i}").as_str())
        );
        release(lease).await;
    }
    let after = bounded("the leak probe", probe.open()).await;
    assert_eq!(
        after,
        before,
        "{cycles} cycles leaked {} resources",
        after.saturating_sub(before)
    );
}

/// `n` concurrent acquires each get their own state and all complete.
pub async fn concurrent_acquires<P: SessionProvider<Context = BrowserSession>>(
    provider: Arc<P>,
    site: Arc<TestSite>,
    n: usize,
) {
    let jobs = (0..n).map(|i| {
        let provider = Arc::clone(&provider);
        let site = Arc::clone(&site);
        tokio::spawn(async move {
            let lease = acquire(provider.as_ref(), state_for(&site, &format!("c{i}"))).await;
            let seen = visit(lease.context(), &format!("{}/page", site.origin_a())).await;
            release(lease).await;
            (i, seen)
        })
    });
    for job in futures::future::join_all(jobs).await {
        let (i, seen) = job.expect("job panicked");
        assert_eq!(
            seen.cookies(),
            map(&[("sid", format!("a-c{i}"))]),
            "job {i} saw another job's cookie"
        );
        assert_eq!(
            seen.ls,
            map(&[("k1", format!("v1-c{i}"))]),
            "job {i} saw another job's storage"
        );
    }
}

/// Kills the browser mid-job (CDP `Browser.crash`): the job's next browser call fails with a
/// typed error instead of hanging, release returns, and the next acquire works.
pub async fn survives_a_browser_crash<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    site: &TestSite,
) {
    let lease = acquire(provider, state_for(site, "pre")).await;
    visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    let browser = lease
        .context()
        .context()
        .browser()
        .expect("context has a browser");
    let cdp = browser
        .new_browser_cdp_session()
        .await
        .expect("browser CDP session");
    // The browser dies before it can answer.
    let _ = tokio::time::timeout(Duration::from_secs(5), cdp.send("Browser.crash", None)).await;
    let after_crash = tokio::time::timeout(Duration::from_secs(30), lease.context().export_state())
        .await
        .expect("a call on a crashed browser hung");
    let error: ProviderError = after_crash.expect_err("export on a crashed browser succeeded");
    assert!(error.is_retryable(), "a crash should be retryable: {error}");
    tokio::time::timeout(Duration::from_secs(30), lease.release())
        .await
        .expect("release after a crash hung")
        .ok();
    let next = acquire(provider, state_for(site, "post")).await;
    let seen = visit(next.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(seen.cookies(), map(&[("sid", "a-post".into())]));
    release(next).await;
}

/// A provider whose endpoint is dead fails acquire with a typed error within `deadline`.
pub async fn dead_endpoint_is_a_typed_error<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    deadline: Duration,
) -> ProviderError {
    let result = tokio::time::timeout(
        deadline,
        provider.acquire(unattended(AgentSessionState::default())),
    )
    .await
    .unwrap_or_else(|_| panic!("acquire against a dead endpoint hung past {deadline:?}"));
    match result {
        Ok(_) => panic!("acquire against a dead endpoint succeeded"),
        Err(e) => e,
    }
}

/// What the remote-lifecycle checks see of a remote service (its test double).
#[async_trait::async_trait]
pub trait RemoteService: Send + Sync {
    /// Sessions created so far.
    fn created(&self) -> u64;
    /// Sessions the client ended so far (released, deleted).
    fn ended(&self) -> u64;
    /// Sessions the service ended by itself so far (expired).
    fn expired(&self) -> u64;
    /// Sessions live now.
    fn live(&self) -> usize;
    /// Proxied CDP sockets open now.
    fn open_sockets(&self) -> usize;
    /// Ends the most recent live session as the service would (expiry); whether one was live.
    async fn expire_latest(&self) -> bool;
}

/// A remote service leaks live sessions and open sockets.
#[async_trait::async_trait]
impl<T: RemoteService + ?Sized> LeakProbe for T {
    async fn open(&self) -> usize {
        self.live() + self.open_sockets()
    }
}

/// Every session the service created was ended, by the client or by the service, and none is
/// live.
pub fn assert_all_ended(service: &dyn RemoteService) {
    assert_eq!(service.live(), 0, "a remote session is still live");
    assert_eq!(service.open_sockets(), 0, "proxied CDP sockets left open");
    assert_eq!(
        service.created(),
        service.ended() + service.expired(),
        "created {} sessions, ended {}, expired {}",
        service.created(),
        service.ended(),
        service.expired()
    );
}

/// An acquire that fails after the service created its session (the start page is allowed
/// but unreachable) still ends that session, and the provider works afterwards. `make`
/// builds the provider with an egress policy.
pub async fn a_failure_after_create_still_ends_the_session<P, F>(
    make: F,
    service: &dyn RemoteService,
) where
    P: SessionProvider<Context = BrowserSession>,
    F: Fn(EgressPolicy) -> P,
{
    let closed = closed_port();
    let provider = make(EgressPolicy::new().allow_addr(([127, 0, 0, 1], closed).into()));
    let (created, ended) = (service.created(), service.ended());
    let mut req = request(AcquireMode::Unattended, None);
    req.start_url = Some(format!("http://127.0.0.1:{closed}/"));
    let Err(error) = bounded("acquire", provider.acquire(req)).await else {
        panic!("an acquire with an unreachable start page succeeded")
    };
    assert!(error.message().contains("start page"), "{error}");
    assert_eq!(
        (service.created(), service.ended()),
        (created + 1, ended + 1),
        "the session created for the failed acquire was ended"
    );
    assert_all_ended(service);
    // The provider moved on (a serialized one gave its permit back).
    release(acquire_with(&provider, request(AcquireMode::Unattended, None)).await).await;
    assert_all_ended(service);
}

/// A lease dropped without release, and an acquire cancelled after the service created its
/// session (stuck on a start page that never answers), are ended in the background.
pub async fn dropped_and_cancelled_leases_are_ended<P, F>(make: F, service: &dyn RemoteService)
where
    P: SessionProvider<Context = BrowserSession>,
    F: Fn(EgressPolicy) -> P,
{
    // A start page that never answers (allowed, so the browser does wait for it).
    let (hang_addr, holder) = silent_server().await;
    let provider = make(EgressPolicy::new().allow_addr(hang_addr));
    let ended = service.ended();
    drop(acquire_with(&provider, request(AcquireMode::Unattended, None)).await);
    wait_until("the dropped lease ended", STEP, || {
        service.ended() == ended + 1
    })
    .await;

    let created = service.created();
    let mut req = request(AcquireMode::Unattended, None);
    req.start_url = Some(format!("http://{hang_addr}/"));
    let cancelled = tokio::time::timeout(Duration::from_secs(3), provider.acquire(req)).await;
    assert!(
        cancelled.is_err(),
        "the acquire should still be waiting for the start page"
    );
    assert_eq!(service.created(), created + 1, "the session was created");
    wait_until("the cancelled acquire's session ended", STEP, || {
        service.live() == 0 && service.ended() == ended + 2
    })
    .await;
    holder.abort();
    assert_all_ended(service);
}

/// The service ends a session mid-job: the job's next browser call fails with a typed,
/// retryable error (no token in it), the session is [lost](SessionContext::is_lost), its
/// release completes, and the next acquire works. Returns the error for backend-specific
/// checks.
pub async fn expiry_mid_job_is_a_typed_retryable_error<
    P: SessionProvider<Context = BrowserSession>,
>(
    provider: &P,
    site: &TestSite,
    service: &dyn RemoteService,
) -> ProviderError {
    let lease = acquire(provider, state_for(site, "e")).await;
    visit(lease.context(), &format!("{}/page", site.origin_a())).await;
    assert!(
        !bounded("the lost check", lease.context().is_lost()).await,
        "a live session is not lost"
    );
    assert!(
        bounded("expiring", service.expire_latest()).await,
        "no session was live"
    );

    let error = bounded("a call on the expired session", async {
        // The disconnect may take a moment to be noticed: retry a few calls.
        loop {
            if let Err(e) = lease.context().export_state().await {
                return e;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(error.is_retryable(), "{error}");
    assert!(
        matches!(
            error.kind(),
            abr_core::ProviderErrorKind::Crashed | abr_core::ProviderErrorKind::Unavailable
        ),
        "{error}"
    );
    for token in ["jwt=", "apiKey="] {
        assert!(
            !error.message().contains(token),
            "a token in the error: {error}"
        );
    }
    assert!(
        bounded("the lost check", lease.context().is_lost()).await,
        "an expired session is lost"
    );

    release(lease).await;
    let next = acquire(provider, state_for(site, "n")).await;
    let seen = visit(next.context(), &format!("{}/page", site.origin_a())).await;
    assert_eq!(seen.cookies(), map(&[("sid", "a-n".into())]));
    release(next).await;
    assert_all_ended(service);
    error
}
