//! The egress guard: where a browser the providers drive may connect.
//!
//! The decision is [`abr_core::EgressPolicy`]'s; this module enforces it.
//!
//! - [`EgressProxy`], for browsers on this machine (local provider, CDP attach): an HTTP
//!   proxy on `127.0.0.1:0` that every browser context is routed through (Playwright's
//!   per-context proxy). For each destination it checks the name, resolves it **once**
//!   (bounded), checks every address, and connects only to a checked address: no second
//!   lookup, so DNS cannot answer differently between the check and the connection. Chromium
//!   sends `https://`, `wss://` and `ws://` as `CONNECT` tunnels and plain `http://` as
//!   absolute-form requests; both are checked per destination, and every request on a
//!   kept-alive proxy connection is checked on its own. Redirects, subresources, fetches,
//!   WebSockets and service workers all go through it: the browser has no other way out.
//!   Chromium skips a configured proxy for loopback destinations unless the bypass list says
//!   `<-loopback>` ([`EgressProxy::proxy_settings`] always does).
//! - The URL gate ([`UrlGate`], installed by the router's `install_url_gate`), for browser contexts a proxy cannot be set on (a
//!   remote browser's default context, Steel and Kernel, and the CDP provider's fallback):
//!   Playwright routing checks each request's URL, resolving names **in the runner**. It is
//!   weaker than the proxy: the remote browser resolves names in its own network (a name can
//!   answer differently there), Playwright does not route a redirect's next hop or requests
//!   of service workers (a page's WebSockets are routed: Playwright's WebSocket routing, in
//!   every frame; a worker's are not), and it adds a round trip through the driver per
//!   request. For remote browsers it is a second line: their network is the provider's, not
//!   the runner's.
//!
//! Refusals are logged with the reason code and the port only (never a path or query; the
//! host at debug level).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use abr_core::{EgressDenied, EgressPolicy, ProviderError, ProviderErrorKind};
use http_body_util::{Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::{TokioIo, TokioTimer};
use playwright_rs::protocol::{Browser, ProxySettings};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};

use crate::error::from_playwright;

/// What the proxy answers with: a forwarded upstream body, or its own small one.
type ProxyBody = Either<Incoming, Full<Bytes>>;

/// The page a refused plain-HTTP request gets. It does not echo the URL.
const BLOCKED_PAGE: &str = "<!doctype html><html><head><meta charset=\"utf-8\">\
<title>Blocked</title></head><body><h1>Blocked</h1>\
<p>This address is blocked by the runner's egress policy.</p></body></html>";

/// The page a plain-HTTP request gets when the destination could not be reached.
const UNREACHABLE_PAGE: &str = "<!doctype html><html><head><meta charset=\"utf-8\">\
<title>Unreachable</title></head><body><h1>Unreachable</h1>\
<p>The runner's egress proxy could not reach this address.</p></body></html>";

/// At most this many resolved addresses are tried per destination.
const MAX_ADDRESSES: usize = 4;

/// Headers that belong to one hop and are never forwarded (RFC 9110 §7.6.1, plus the
/// proxy-specific ones browsers send).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Bounds of an [`EgressProxy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyLimits {
    /// Deadline for resolving a destination's name.
    pub resolve_timeout: Duration,
    /// Deadline for connecting to one destination address.
    pub connect_timeout: Duration,
    /// Deadline for a browser to send a whole request head to the proxy.
    pub head_timeout: Duration,
    /// Proxied connections (open tunnels included) at once; further browser connections wait
    /// to be accepted.
    pub max_connections: usize,
}

impl Default for ProxyLimits {
    fn default() -> Self {
        Self {
            resolve_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(10),
            head_timeout: Duration::from_secs(10),
            max_connections: 256,
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    allowed: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    policy: EgressPolicy,
    limits: ProxyLimits,
    counters: Counters,
    /// Becomes `true` when the proxy closes: upstream connections still streaming a response
    /// stop.
    closed: watch::Receiver<bool>,
}

/// Why a destination gets no connection.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// The policy refuses it.
    Denied(EgressDenied),
    /// It is allowed but could not be reached (the status to answer, a log reason).
    Failed(StatusCode, &'static str),
}

/// A `CONNECT` that was answered 200: the browser's side (once hyper hands it over) and the
/// checked upstream connection.
struct Tunnel {
    upgrade: hyper::upgrade::OnUpgrade,
    upstream: TcpStream,
}

/// An in-process HTTP egress proxy on `127.0.0.1:0` enforcing an [`EgressPolicy`] (see the
/// module docs). Closed by [`EgressProxy::close`] or on drop, with every connection it holds.
///
/// It listens on loopback only. Any local process could use it, but only to reach what the
/// policy allows, which such a process can reach directly anyway.
pub struct EgressProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    close: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressProxy")
            .field("addr", &self.addr)
            .field("allowed", &self.allowed())
            .field("refused", &self.refused())
            .field("failed", &self.failed())
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}

impl EgressProxy {
    /// Starts a proxy enforcing `policy` with the default [`ProxyLimits`], on the current
    /// tokio runtime.
    ///
    /// # Errors
    /// Binding the loopback listener failed.
    pub async fn start(policy: EgressPolicy) -> std::io::Result<Self> {
        Self::start_with(policy, ProxyLimits::default()).await
    }

    /// Starts a proxy enforcing `policy` within `limits`.
    ///
    /// # Errors
    /// Binding the loopback listener failed.
    pub async fn start_with(policy: EgressPolicy, limits: ProxyLimits) -> std::io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (close, closed) = watch::channel(false);
        let shared = Arc::new(Shared {
            policy,
            limits,
            counters: Counters::default(),
            closed,
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        tracing::debug!(port = addr.port(), "egress proxy started");
        Ok(Self {
            addr,
            shared,
            close,
            task,
        })
    }

    /// Where the proxy listens (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`.
    pub fn server_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The Playwright proxy setting that routes a browser context through this proxy, with
    /// the bypass list `<-loopback>`: Chromium otherwise sends loopback destinations
    /// (`localhost`, `127.0.0.0/8`, `[::1]`) around any proxy. (Playwright adds the same
    /// rule to per-context proxies itself unless `PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK`
    /// is set; saying it explicitly keeps it independent of the driver's environment.)
    pub fn proxy_settings(&self) -> ProxySettings {
        ProxySettings::new(self.server_url()).bypass("<-loopback>")
    }

    /// The policy it enforces.
    pub fn policy(&self) -> &EgressPolicy {
        &self.shared.policy
    }

    /// Connections (tunnels and forwarded requests) it made, because the policy allowed them.
    pub fn allowed(&self) -> u64 {
        self.shared.counters.allowed.load(Ordering::SeqCst)
    }

    /// Destinations the policy refused.
    pub fn refused(&self) -> u64 {
        self.shared.counters.refused.load(Ordering::SeqCst)
    }

    /// Allowed destinations that could not be resolved or reached.
    pub fn failed(&self) -> u64 {
        self.shared.counters.failed.load(Ordering::SeqCst)
    }

    /// Whether it still accepts connections (its runtime may have shut down).
    pub fn is_running(&self) -> bool {
        !self.task.is_finished() && !*self.close.borrow()
    }

    /// Stops accepting and drops every connection and tunnel it holds.
    pub fn close(&self) {
        let _ = self.close.send(true);
        self.task.abort();
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.close();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let permits = Arc::new(Semaphore::new(shared.limits.max_connections.max(1)));
    // Dropping this set (the task is aborted on close) aborts every connection.
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, say: back off instead of spinning.
                tracing::debug!(error = %e, "egress proxy: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            serve_connection(stream, shared).await;
            drop(permit);
        });
    }
}

/// Serves one browser connection: requests until it closes, or one `CONNECT` tunnel.
async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let tunnel: Arc<Mutex<Option<Tunnel>>> = Arc::default();
    let service = {
        let (shared, tunnel) = (Arc::clone(&shared), Arc::clone(&tunnel));
        service_fn(move |request| handle(request, Arc::clone(&shared), Arc::clone(&tunnel)))
    };
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(shared.limits.head_timeout)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "egress proxy: a browser connection ended with an error");
    }
    // The connection resolves once a CONNECT's 200 is written and the socket handed over.
    let pending = tunnel.lock().unwrap_or_else(PoisonError::into_inner).take();
    if let Some(Tunnel {
        upgrade,
        mut upstream,
    }) = pending
    {
        match upgrade.await {
            Ok(upgraded) => {
                let mut browser = TokioIo::new(upgraded);
                let _ = tokio::io::copy_bidirectional(&mut browser, &mut upstream).await;
            }
            Err(e) => tracing::debug!(error = %e, "egress proxy: a tunnel was not taken up"),
        }
    }
}

async fn handle(
    request: Request<Incoming>,
    shared: Arc<Shared>,
    tunnel: Arc<Mutex<Option<Tunnel>>>,
) -> Result<Response<ProxyBody>, Infallible> {
    Ok(if request.method() == Method::CONNECT {
        connect(request, &shared, &tunnel).await
    } else {
        forward(request, &shared).await
    })
}

/// `CONNECT host:port`: checked, connected, answered 200; the bytes flow once hyper hands
/// the socket over (see [`serve_connection`]).
async fn connect(
    mut request: Request<Incoming>,
    shared: &Shared,
    tunnel: &Mutex<Option<Tunnel>>,
) -> Response<ProxyBody> {
    let Some((host, port)) = request
        .uri()
        .authority()
        .and_then(|a| Some((a.host().to_owned(), a.port_u16()?)))
    else {
        return empty(StatusCode::BAD_REQUEST);
    };
    match shared.open(&host, port).await {
        Ok(upstream) => {
            let upgrade = hyper::upgrade::on(&mut request);
            *tunnel.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(Tunnel { upgrade, upstream });
            empty(StatusCode::OK)
        }
        Err(Refusal::Denied(_)) => empty(StatusCode::FORBIDDEN),
        Err(Refusal::Failed(status, _)) => empty(status),
    }
}

/// An absolute-form plain-HTTP request: checked, sent over a new connection to the checked
/// address, the response streamed back.
async fn forward(request: Request<Incoming>, shared: &Shared) -> Response<ProxyBody> {
    let uri = request.uri();
    // Origin-form (someone talking to the proxy as a server) and anything but http:// are
    // not proxy requests a browser makes; WebSockets come as CONNECT.
    let Some(authority) = uri.authority().filter(|_| uri.scheme_str() == Some("http")) else {
        return empty(StatusCode::BAD_REQUEST);
    };
    if request.headers().contains_key(header::UPGRADE) {
        return empty(StatusCode::BAD_REQUEST);
    }
    let (host, port) = (
        authority.host().to_owned(),
        authority.port_u16().unwrap_or(80),
    );
    let host_header = HeaderValue::from_str(authority.as_str()).ok();
    let upstream = match shared.open(&host, port).await {
        Ok(upstream) => upstream,
        Err(Refusal::Denied(_)) => return page(StatusCode::FORBIDDEN, BLOCKED_PAGE),
        Err(Refusal::Failed(status, _)) => return page(status, UNREACHABLE_PAGE),
    };
    let (mut parts, body) = request.into_parts();
    parts.uri = origin_form(&parts.uri);
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    if let Some(value) = host_header
        && !parts.headers.contains_key(header::HOST)
    {
        parts.headers.insert(header::HOST, value);
    }
    let Ok((mut sender, connection)) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await
    else {
        return page(StatusCode::BAD_GATEWAY, UNREACHABLE_PAGE);
    };
    // Drives the upstream connection until the response body is through (or the proxy
    // closes).
    let mut closed = shared.closed.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = connection => {}
            _ = closed.wait_for(|closed| *closed) => {}
        }
    });
    match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, Either::Left(body))
        }
        Err(e) => {
            tracing::debug!(error = %e, port, "egress proxy: the upstream request failed");
            page(StatusCode::BAD_GATEWAY, UNREACHABLE_PAGE)
        }
    }
}

impl Shared {
    /// A connection to `host:port` if the policy allows it: counted and logged either way.
    async fn open(&self, host: &str, port: u16) -> Result<TcpStream, Refusal> {
        let opened = async {
            let addrs = self.destinations(host, port).await?;
            self.connect_any(&addrs).await
        }
        .await;
        let counters = &self.counters;
        match &opened {
            Ok(_) => {
                counters.allowed.fetch_add(1, Ordering::SeqCst);
            }
            Err(Refusal::Denied(denied)) => {
                counters.refused.fetch_add(1, Ordering::SeqCst);
                tracing::info!(
                    reason = denied.code(),
                    port,
                    "egress: refused a browser connection"
                );
                tracing::debug!(host, reason = denied.code(), port, "egress: refused host");
            }
            Err(Refusal::Failed(_, reason)) => {
                counters.failed.fetch_add(1, Ordering::SeqCst);
                tracing::debug!(reason, port, "egress: an allowed destination failed");
            }
        }
        opened
    }

    /// The checked addresses of `host:port`: an IP literal as it is; a name checked, resolved
    /// once, and every address it resolved to checked ([`EgressPolicy::check_resolved`]
    /// refuses a name if any of its addresses is refused). The one the policy picked comes
    /// first.
    async fn destinations(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(Refusal::Denied(EgressDenied::NoHost));
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            let addr = SocketAddr::new(ip, port);
            self.policy
                .check_addr(host, addr)
                .map_err(Refusal::Denied)?;
            return Ok(vec![addr]);
        }
        self.policy
            .check_name(host, port)
            .map_err(Refusal::Denied)?;
        let resolved: Vec<SocketAddr> = match tokio::time::timeout(
            self.limits.resolve_timeout,
            tokio::net::lookup_host((host, port)),
        )
        .await
        {
            Ok(Ok(addrs)) => addrs.collect(),
            Ok(Err(_)) => return Err(Refusal::Failed(StatusCode::BAD_GATEWAY, "unresolved")),
            Err(_) => {
                return Err(Refusal::Failed(
                    StatusCode::GATEWAY_TIMEOUT,
                    "resolve_timeout",
                ));
            }
        };
        let first = self
            .policy
            .check_resolved(host, &resolved)
            .map_err(Refusal::Denied)?;
        let mut addrs = vec![first];
        for addr in resolved {
            if addrs.len() < MAX_ADDRESSES && !addrs.contains(&addr) {
                addrs.push(addr);
            }
        }
        Ok(addrs)
    }

    /// Connects to the first of `addrs` (all checked) that answers, each attempt bounded.
    async fn connect_any(&self, addrs: &[SocketAddr]) -> Result<TcpStream, Refusal> {
        let mut timed_out = false;
        for addr in addrs {
            match tokio::time::timeout(self.limits.connect_timeout, TcpStream::connect(addr)).await
            {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Ok(Err(_)) => {}
                Err(_) => timed_out = true,
            }
        }
        Err(if timed_out {
            Refusal::Failed(StatusCode::GATEWAY_TIMEOUT, "connect_timeout")
        } else {
            Refusal::Failed(StatusCode::BAD_GATEWAY, "unreachable")
        })
    }
}

fn empty(status: StatusCode) -> Response<ProxyBody> {
    let mut response = Response::new(Either::Right(Full::new(Bytes::new())));
    *response.status_mut() = status;
    response
}

fn page(status: StatusCode, html: &'static str) -> Response<ProxyBody> {
    let mut response = Response::new(Either::Right(Full::new(Bytes::from_static(
        html.as_bytes(),
    ))));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `http://host/path?q` → `/path?q`.
fn origin_form(uri: &Uri) -> Uri {
    uri.path_and_query()
        .and_then(|pq| pq.as_str().parse().ok())
        .unwrap_or_else(|| Uri::from_static("/"))
}

/// Removes hop-by-hop headers, and those the `Connection` header names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

/// The URL gate: how long a name's verdict is reused.
const GATE_TTL: Duration = Duration::from_secs(60);
/// The URL gate: verdicts kept at most (the cache is emptied beyond).
const GATE_CACHE: usize = 1024;

/// The URL gate's verdict on a `(name, port)`, and when it was reached.
type Verdicts = HashMap<(String, u16), (Result<(), EgressDenied>, Instant)>;

/// The URL gate's checks (see the module docs for what it cannot see).
pub(crate) struct UrlGate {
    policy: EgressPolicy,
    resolve_timeout: Duration,
    verdicts: Mutex<Verdicts>,
}

impl std::fmt::Debug for UrlGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlGate").finish_non_exhaustive()
    }
}

impl UrlGate {
    pub(crate) async fn check(&self, raw: &str) -> Result<(), EgressDenied> {
        let url = url::Url::parse(raw).map_err(|_| EgressDenied::NoHost)?;
        self.policy.check_url(&url)?;
        // IP literals and loopback names were checked by `check_url`.
        let Some(url::Host::Domain(name)) = url.host() else {
            return Ok(());
        };
        let port = url.port_or_known_default().ok_or(EgressDenied::NoHost)?;
        let key = (name.to_ascii_lowercase(), port);
        if let Some((verdict, at)) = self
            .verdicts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            && at.elapsed() < GATE_TTL
        {
            return *verdict;
        }
        let verdict =
            match tokio::time::timeout(self.resolve_timeout, tokio::net::lookup_host((name, port)))
                .await
            {
                Ok(Ok(addrs)) => {
                    let addrs: Vec<SocketAddr> = addrs.collect();
                    self.policy.check_resolved(name, &addrs).map(|_| ())
                }
                // Fail closed: what the runner cannot resolve, it cannot check.
                Ok(Err(_)) | Err(_) => Err(EgressDenied::Unresolved),
            };
        let mut verdicts = self.verdicts.lock().unwrap_or_else(PoisonError::into_inner);
        if verdicts.len() >= GATE_CACHE {
            verdicts.clear();
        }
        verdicts.insert(key, (verdict, Instant::now()));
        verdict
    }
}

impl UrlGate {
    /// The gate of `policy`, as a context no proxy can be set on gets it.
    pub(crate) fn new(policy: &EgressPolicy) -> Arc<Self> {
        Arc::new(Self {
            policy: policy.clone(),
            resolve_timeout: ProxyLimits::default().resolve_timeout,
            verdicts: Mutex::default(),
        })
    }
}

/// Denies downloads in `browser`'s default context (CDP `Browser.setDownloadBehavior`), for
/// contexts not created with `acceptDownloads: deny`.
pub(crate) async fn deny_default_downloads(browser: &Browser) -> Result<(), ProviderError> {
    let cdp = browser
        .new_browser_cdp_session()
        .await
        .map_err(|e| from_playwright("opening a browser CDP session", e))?;
    let sent = cdp
        .send(
            "Browser.setDownloadBehavior",
            Some(serde_json::json!({ "behavior": "deny" })),
        )
        .await;
    let _ = cdp.detach().await;
    sent.map(|_| ())
        .map_err(|e| from_playwright("denying downloads", e))
}

/// A proxy that is started on first use and can be closed (and is started again on the next
/// use): what the local and CDP providers hold.
#[derive(Debug, Default)]
pub(crate) struct LazyProxy {
    current: tokio::sync::Mutex<Option<Arc<EgressProxy>>>,
}

impl LazyProxy {
    /// The running proxy for `policy`, started if there is none (or its runtime died). The
    /// flag says whether it was (re)started now.
    pub(crate) async fn get(
        &self,
        policy: &EgressPolicy,
    ) -> Result<(Arc<EgressProxy>, bool), ProviderError> {
        let mut current = self.current.lock().await;
        if let Some(proxy) = current.as_ref().filter(|p| p.is_running()) {
            return Ok((Arc::clone(proxy), false));
        }
        let proxy = EgressProxy::start(policy.clone()).await.map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Unavailable,
                format!("starting the egress proxy failed: {e}"),
            )
        })?;
        let proxy = Arc::new(proxy);
        *current = Some(Arc::clone(&proxy));
        Ok((proxy, true))
    }

    /// The current proxy, if one was started and not closed.
    pub(crate) async fn current(&self) -> Option<Arc<EgressProxy>> {
        self.current.lock().await.clone()
    }

    /// Closes the proxy (contexts still routed through it lose their network).
    pub(crate) async fn close(&self) {
        if let Some(proxy) = self.current.lock().await.take() {
            proxy.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server on 127.0.0.1 that answers every connection with `body` and counts them.
    async fn upstream(body: &'static str) -> (SocketAddr, Arc<AtomicU64>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&hits);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        (addr, hits)
    }

    /// Sends `raw` to the proxy and reads one response (head, and the body its
    /// `content-length` announces).
    async fn exchange(proxy: SocketAddr, raw: &str) -> String {
        let mut socket = TcpStream::connect(proxy).await.unwrap();
        socket.write_all(raw.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let read = async {
            let mut buf = [0u8; 4096];
            loop {
                let text = String::from_utf8_lossy(&out).into_owned();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if body.len() >= length {
                        return;
                    }
                }
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn loopback_destinations_are_refused_without_a_connection() {
        let (victim, hits) = upstream("secret").await;
        let proxy = EgressProxy::start(EgressPolicy::new()).await.unwrap();
        let port = victim.port();
        let connect = exchange(
            proxy.addr(),
            &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n"),
        )
        .await;
        assert!(connect.starts_with("HTTP/1.1 403"), "{connect}");
        let get = exchange(
            proxy.addr(),
            &format!(
                "GET http://localhost:{port}/private/path?token=t HTTP/1.1\r\nhost: localhost:{port}\r\nconnection: close\r\n\r\n"
            ),
        )
        .await;
        assert!(get.starts_with("HTTP/1.1 403"), "{get}");
        assert!(
            get.contains("blocked by the runner's egress policy"),
            "{get}"
        );
        assert!(
            !get.contains("private/path") && !get.contains("token"),
            "{get}"
        );
        // The decimal spelling of 127.0.0.1 resolves to loopback: refused after resolving.
        let decimal = exchange(
            proxy.addr(),
            &format!("CONNECT 2130706433:{port} HTTP/1.1\r\n\r\n"),
        )
        .await;
        assert!(decimal.starts_with("HTTP/1.1 403"), "{decimal}");
        let metadata = exchange(
            proxy.addr(),
            "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nconnection: close\r\n\r\n",
        )
        .await;
        assert!(metadata.starts_with("HTTP/1.1 403"), "{metadata}");
        assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing reached the victim");
        assert_eq!((proxy.refused(), proxy.allowed()), (4, 0));
    }

    #[tokio::test]
    async fn allowed_destinations_are_tunnelled_and_forwarded() {
        let (site, hits) = upstream("hello").await;
        let proxy = EgressProxy::start(EgressPolicy::new().allow_addr(site))
            .await
            .unwrap();
        let get = exchange(
            proxy.addr(),
            &format!(
                "GET http://{site}/page HTTP/1.1\r\nhost: {site}\r\nproxy-connection: keep-alive\r\nconnection: close\r\n\r\n"
            ),
        )
        .await;
        assert!(get.starts_with("HTTP/1.1 200"), "{get}");
        assert!(get.ends_with("hello"), "{get}");

        let mut socket = TcpStream::connect(proxy.addr()).await.unwrap();
        socket
            .write_all(format!("CONNECT {site} HTTP/1.1\r\nhost: {site}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(socket.read_u8().await.unwrap());
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        socket
            .write_all(b"GET /through HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut out)).await;
        assert!(String::from_utf8_lossy(&out).ends_with("hello"));
        assert_eq!(hits.load(Ordering::SeqCst), 2);
        assert_eq!((proxy.allowed(), proxy.refused()), (2, 0));

        // Another port of the same host stays refused.
        let other = exchange(
            proxy.addr(),
            &format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", site.port() ^ 1),
        )
        .await;
        assert!(other.starts_with("HTTP/1.1 403"), "{other}");
    }

    #[tokio::test]
    async fn a_slow_request_head_is_cut_off_and_close_ends_everything() {
        let limits = ProxyLimits {
            head_timeout: Duration::from_millis(300),
            ..ProxyLimits::default()
        };
        let proxy = EgressProxy::start_with(EgressPolicy::new(), limits)
            .await
            .unwrap();
        let mut slow = TcpStream::connect(proxy.addr()).await.unwrap();
        slow.write_all(b"GET http://exa").await.unwrap();
        let mut out = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "the proxy kept a half-sent request head open");

        let mut idle = TcpStream::connect(proxy.addr()).await.unwrap();
        proxy.close();
        let read = tokio::time::timeout(Duration::from_secs(5), idle.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "close left a connection open");
        assert!(!proxy.is_running());
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(proxy.addr()).await.is_ok() {
            assert!(
                Instant::now() < deadline,
                "the proxy still accepts after close"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn the_url_gate_checks_literals_names_and_resolved_addresses() {
        let gate = UrlGate {
            policy: EgressPolicy::new().allow_addr("127.0.0.1:8788".parse().unwrap()),
            resolve_timeout: Duration::from_secs(5),
            verdicts: Mutex::default(),
        };
        for (url, expected) in [
            ("http://127.0.0.1:8787/", Err(EgressDenied::Loopback)),
            ("http://127.0.0.1:8788/ok", Ok(())),
            ("http://localhost:8788/", Err(EgressDenied::Loopback)),
            ("http://169.254.169.254/", Err(EgressDenied::LinkLocal)),
            ("file:///etc/passwd", Err(EgressDenied::Scheme)),
            // A name that resolves to loopback (through /etc/hosts or DNS) is refused too.
            ("http://localhost.:9/", Err(EgressDenied::Loopback)),
            ("http://nonexistent.invalid/", Err(EgressDenied::Unresolved)),
        ] {
            assert_eq!(gate.check(url).await, expected, "{url}");
        }
    }

    #[test]
    fn hop_by_hop_headers_are_not_forwarded() {
        let mut headers = HeaderMap::new();
        for (k, v) in [
            ("connection", "keep-alive, x-secret-hop"),
            ("proxy-connection", "keep-alive"),
            ("proxy-authorization", "Basic eA=="),
            ("x-secret-hop", "1"),
            ("cookie", "a=b"),
            ("host", "example.com"),
        ] {
            headers.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        strip_hop_by_hop(&mut headers);
        let left: Vec<_> = headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(left, ["cookie", "host"]);
        assert_eq!(
            origin_form(&"http://h:1/a/b?c=d".parse().unwrap()),
            "/a/b?c=d"
        );
        assert_eq!(origin_form(&"http://h:1".parse().unwrap()), "/");
    }
}
