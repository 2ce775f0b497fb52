//! The egress guard on real Chromium, written as the attacks it prevents.
//!
//! A "victim" service on 127.0.0.1 counts every connection it receives (the runner's own API,
//! any service on loopback); an allowed page server (allowed by exact address) hosts the
//! attack pages. Each attack runs through a guarded provider, and again through the same
//! provider with the guard off (`egress: None`) as the control: the control reaching the
//! victim shows that the attack is real and that a zero in the guarded run is not vacuous.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use abr_core::{AcquireMode, AcquireRequest, EgressPolicy, Lease, SessionProvider};
use abr_doubles::chromium::{ChromiumOptions, LocalChromium};
use abr_providers::{
    BrowserSession, CdpProviderConfig, CdpSessionProvider, EgressProxy, Isolation,
    KernelProviderConfig, KernelSessionProvider, LocalBrowserSessionProvider, LocalProviderConfig,
    SteelProviderConfig, SteelSessionProvider,
};
use axum::Router;
use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use playwright_rs::protocol::GotoOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const STEP: Duration = Duration::from_secs(60);
const VICTIM_BODY: &str = "victim-secret-4711";

/// A service on 127.0.0.1 that must stay out of reach: counts every TCP connection (a
/// request, a WebSocket handshake, a preconnect) and answers plain HTTP with a secret.
struct Victim {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Victim {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&hits);
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let _ = socket.read(&mut buf).await;
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\naccess-control-allow-origin: *\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{VICTIM_BODY}",
                        VICTIM_BODY.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self { addr, hits, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.addr.port())
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for Victim {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(serde::Deserialize)]
struct To {
    to: String,
}

/// The allowed page server: a page, an open redirect, a download.
struct Site {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

const SITE_PAGE: &str = "<!doctype html><title>allowed</title><p id=ok>allowed page</p>";

impl Site {
    async fn start() -> Self {
        let app = Router::new()
            .route("/page", get(|| async { Html(SITE_PAGE) }))
            .route(
                "/redirect",
                get(|Query(q): Query<To>| async move {
                    (StatusCode::FOUND, [(header::LOCATION, q.to)]).into_response()
                }),
            )
            .route(
                "/download",
                get(|| async {
                    (
                        [
                            (header::CONTENT_TYPE, "application/octet-stream"),
                            (
                                header::CONTENT_DISPOSITION,
                                "attachment; filename=\"egress-payload.bin\"",
                            ),
                        ],
                        vec![0x42u8; 4096],
                    )
                        .into_response()
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Public addresses plus exactly this server.
    fn egress(&self) -> EgressPolicy {
        EgressPolicy::new().allow_addr(self.addr)
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn local(egress: Option<EgressPolicy>) -> LocalBrowserSessionProvider {
    LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress,
        ..LocalProviderConfig::default()
    })
}

fn request(mode: AcquireMode) -> AcquireRequest {
    AcquireRequest {
        profile: None,
        mode,
        platform: "egress".into(),
        state: None,
        start_url: None,
    }
}

async fn acquire<P: SessionProvider<Context = BrowserSession>>(
    provider: &P,
    mode: AcquireMode,
) -> Lease<BrowserSession> {
    tokio::time::timeout(STEP, provider.acquire(request(mode)))
        .await
        .expect("acquire hung")
        .unwrap_or_else(|e| panic!("acquire failed: {e}"))
}

async fn release(lease: Lease<BrowserSession>) {
    tokio::time::timeout(STEP, lease.release())
        .await
        .expect("release hung")
        .expect("release");
}

/// What a navigation ended in.
#[derive(Debug)]
struct Visit {
    status: Option<u16>,
    error: Option<String>,
    body: String,
}

impl Visit {
    /// The page shows what the victim served.
    fn reached_victim(&self) -> bool {
        self.body.contains(VICTIM_BODY)
    }

    /// The proxy's refusal page, or a navigation error (a refused tunnel, an aborted
    /// request), and nothing of the victim.
    fn was_refused(&self) -> bool {
        !self.reached_victim()
            && (self.error.is_some()
                || (self.status == Some(403)
                    && self.body.contains("blocked by the runner's egress policy")))
    }
}

async fn visit(session: &BrowserSession, url: &str) -> Visit {
    let page = session.page();
    let goto = || async {
        tokio::time::timeout(
            STEP,
            page.goto(url, GotoOptions::new().timeout(Duration::from_secs(15))),
        )
        .await
        .expect("goto hung")
    };
    let mut result = goto().await;
    // The error page of an earlier refused navigation can commit late and interrupt this
    // one: go again once it has.
    if let Err(e) = &result
        && e.to_string().contains("interrupted by another navigation")
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
        result = goto().await;
    }
    let (status, error) = match result {
        Ok(response) => (response.map(|r| r.status()), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let body = tokio::time::timeout(STEP, page.content())
        .await
        .expect("content hung")
        .unwrap_or_default();
    Visit {
        status,
        error,
        body,
    }
}

/// Lets stray requests (a late subresource, a retry) arrive before counting.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// The guarded provider's proxy, once an acquire started it.
async fn proxy_of(provider: &LocalBrowserSessionProvider) -> Arc<EgressProxy> {
    provider
        .egress_proxy()
        .await
        .expect("the guarded provider runs an egress proxy")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unattended_job_cannot_reach_loopback_services_or_metadata() {
    let (victim, site) = (Victim::start().await, Site::start().await);
    let guarded = local(Some(site.egress()));
    let lease = acquire(&guarded, AcquireMode::Unattended).await;

    // Control: the allowed server works through the guard.
    let allowed = visit(lease.context(), &site.url("/page")).await;
    assert_eq!(allowed.status, Some(200), "{allowed:?}");
    assert!(allowed.body.contains("allowed page"), "{allowed:?}");

    // The attack: the runner's API on loopback, plain and as https (a CONNECT tunnel).
    let plain = visit(lease.context(), &victim.url("/v1/health?token=t")).await;
    assert!(plain.was_refused(), "{plain:?}");
    assert!(
        !plain.body.contains("v1/health") && !plain.body.contains("token"),
        "the refusal page echoes the URL: {}",
        plain.body
    );
    let tls = visit(
        lease.context(),
        &format!("https://127.0.0.1:{}/", victim.addr.port()),
    )
    .await;
    assert!(tls.was_refused(), "{tls:?}");
    // The cloud metadata endpoint (nothing listens there; the proxy refuses without trying).
    let metadata = visit(
        lease.context(),
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    )
    .await;
    assert!(
        metadata.status == Some(403) && metadata.was_refused(),
        "{metadata:?}"
    );
    settle().await;
    assert_eq!(victim.hits(), 0, "the victim was reached through the guard");
    let proxy = proxy_of(&guarded).await;
    assert!(proxy.refused() >= 3, "{proxy:?}");
    assert!(proxy.allowed() >= 1, "{proxy:?}");
    release(lease).await;
    guarded.shutdown().await;
    assert!(!proxy.is_running(), "shutdown closes the egress proxy");

    // Control: without the guard the same navigation reaches the victim.
    let open = local(None);
    let lease = acquire(&open, AcquireMode::Unattended).await;
    let reached = visit(lease.context(), &victim.url("/v1/health")).await;
    assert!(reached.reached_victim(), "{reached:?}");
    assert!(victim.hits() >= 1);
    assert!(open.egress_proxy().await.is_none());
    release(lease).await;
    open.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interactive_session_cannot_reach_loopback_services() {
    let (victim, site) = (Victim::start().await, Site::start().await);
    let guarded = local(Some(site.egress()));
    let lease = acquire(&guarded, AcquireMode::Interactive).await;
    let allowed = visit(lease.context(), &site.url("/page")).await;
    assert_eq!(allowed.status, Some(200), "{allowed:?}");
    let attack = visit(lease.context(), &victim.url("/")).await;
    assert!(attack.was_refused(), "{attack:?}");
    settle().await;
    assert_eq!(victim.hits(), 0, "the capture browser reached the victim");
    release(lease).await;
    guarded.shutdown().await;

    let open = local(None);
    let lease = acquire(&open, AcquireMode::Interactive).await;
    assert!(
        visit(lease.context(), &victim.url("/"))
            .await
            .reached_victim()
    );
    assert!(victim.hits() >= 1);
    release(lease).await;
    open.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_from_an_allowed_site_does_not_reach_loopback() {
    let (victim, site) = (Victim::start().await, Site::start().await);
    let bounce = |to: &str| site.url(&format!("/redirect?to={to}"));
    // A browser per job: the guard covers that isolation mode too.
    let guarded = LocalBrowserSessionProvider::new(LocalProviderConfig {
        isolation: Isolation::BrowserPerJob,
        egress: Some(site.egress()),
        ..LocalProviderConfig::default()
    });
    let lease = acquire(&guarded, AcquireMode::Unattended).await;
    let followed = visit(lease.context(), &bounce(&site.url("/page"))).await;
    assert!(followed.body.contains("allowed page"), "{followed:?}");
    for target in [
        victim.url("/admin"),
        format!("http://localhost:{}/admin", victim.addr.port()),
    ] {
        let attack = visit(lease.context(), &bounce(&target)).await;
        assert!(attack.was_refused(), "{target}: {attack:?}");
    }
    settle().await;
    assert_eq!(victim.hits(), 0, "a redirect reached the victim");
    release(lease).await;
    guarded.shutdown().await;

    let open = local(None);
    let lease = acquire(&open, AcquireMode::Unattended).await;
    let reached = visit(lease.context(), &bounce(&victim.url("/admin"))).await;
    assert!(reached.reached_victim(), "{reached:?}");
    assert!(victim.hits() >= 1);
    release(lease).await;
    open.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_name_localhost_does_not_reach_loopback() {
    let (victim, site) = (Victim::start().await, Site::start().await);
    let port = victim.addr.port();
    let guarded = local(Some(site.egress()));
    let lease = acquire(&guarded, AcquireMode::Unattended).await;
    for url in [
        format!("http://localhost:{port}/"),
        format!("http://sub.localhost:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://2130706433:{port}/"),
    ] {
        let attack = visit(lease.context(), &url).await;
        assert!(attack.was_refused(), "{url}: {attack:?}");
    }
    settle().await;
    assert_eq!(victim.hits(), 0, "a loopback name reached the victim");
    release(lease).await;
    guarded.shutdown().await;

    let open = local(None);
    let lease = acquire(&open, AcquireMode::Unattended).await;
    let reached = visit(lease.context(), &format!("http://localhost:{port}/")).await;
    assert!(reached.reached_victim(), "{reached:?}");
    release(lease).await;
    open.shutdown().await;
}

/// Run in the allowed page: an image, a fetch and a WebSocket aimed at the victim; what
/// each ended in.
const SUBRESOURCES: &str = r#"async (victim) => {
  const img = await new Promise((resolve) => {
    const i = new Image();
    i.onload = () => resolve('load');
    i.onerror = () => resolve('error');
    i.src = victim + '/pixel.png';
  });
  // The victim allows any origin to read it (as a careless internal API would).
  const fetched = await fetch(victim + '/api/secret')
    .then((r) => r.text())
    .then((text) => (text.includes('victim-secret') ? 'read' : 'other'), () => 'error');
  const ws = await new Promise((resolve) => {
    const socket = new WebSocket(victim.replace('http:', 'ws:') + '/ws');
    socket.onopen = () => resolve('open');
    socket.onerror = () => resolve('error');
    setTimeout(() => resolve('timeout'), 5000);
  });
  return [img, fetched, ws];
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subresources_of_an_allowed_page_reach_nothing_on_loopback() {
    let (victim, site) = (Victim::start().await, Site::start().await);
    let guarded = local(Some(site.egress()));
    let lease = acquire(&guarded, AcquireMode::Unattended).await;
    let allowed = visit(lease.context(), &site.url("/page")).await;
    assert_eq!(allowed.status, Some(200), "{allowed:?}");
    let outcomes: Vec<String> = lease
        .context()
        .page()
        .evaluate(SUBRESOURCES, Some(&victim.url("")))
        .await
        .unwrap();
    assert_eq!(outcomes, ["error", "error", "error"], "img, fetch, ws");
    settle().await;
    assert_eq!(victim.hits(), 0, "a subresource reached the victim");
    assert!(proxy_of(&guarded).await.refused() >= 3);
    release(lease).await;
    guarded.shutdown().await;

    // Control: each of the three reaches the victim without the guard.
    let open = local(None);
    let lease = acquire(&open, AcquireMode::Unattended).await;
    visit(lease.context(), &site.url("/page")).await;
    let outcomes: Vec<String> = lease
        .context()
        .page()
        .evaluate(SUBRESOURCES, Some(&victim.url("")))
        .await
        .unwrap();
    settle().await;
    assert_eq!(
        outcomes[1], "read",
        "the fetch read the secret: {outcomes:?}"
    );
    assert!(
        victim.hits() >= 3,
        "img, fetch and ws each reach an unguarded victim: {} hits, {outcomes:?}",
        victim.hits()
    );
    release(lease).await;
    open.shutdown().await;
}

/// Every file under Playwright's artifacts directories (where accepted downloads land) and
/// the user's Downloads folder.
fn download_files() -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.insert(path);
            }
        }
    }
    let mut out = BTreeSet::new();
    if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with("playwright-artifacts-")
            {
                walk(&entry.path(), &mut out);
            }
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        walk(&Path::new(&home).join("Downloads"), &mut out);
    }
    out
}

/// How a download ended: Playwright's failure, and its file if it has one.
type DownloadEnd = (Option<String>, Option<PathBuf>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_from_an_allowed_site_is_refused() {
    let site = Site::start().await;
    let guarded = local(Some(site.egress()));
    let lease = acquire(&guarded, AcquireMode::Unattended).await;
    let context = lease.context().context().clone();
    // Chromium announces a denied download too (Playwright's `download` event), then
    // cancels it: record how each one ended.
    let downloads: Arc<std::sync::Mutex<Vec<DownloadEnd>>> = Arc::default();
    let seen = Arc::clone(&downloads);
    context
        .on_download(move |download| {
            let seen = Arc::clone(&seen);
            async move {
                let failure = download.failure().await.ok().flatten();
                let path = download.path().await.ok().flatten();
                seen.lock().unwrap().push((failure, path));
                Ok(())
            }
        })
        .await
        .unwrap();
    let before = download_files();
    let attempt = visit(lease.context(), &site.url("/download")).await;
    // Also as a link click, the way a page would start it.
    visit(lease.context(), &site.url("/page")).await;
    let _ = lease
        .context()
        .page()
        .evaluate::<String, ()>(
            "(url) => { const a = document.createElement('a'); a.href = url; a.download = 'x.bin'; document.body.append(a); a.click(); }",
            Some(&site.url("/download")),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        attempt.error.is_some() && !attempt.body.contains("BBBB"),
        "{attempt:?}"
    );
    // Both attempts were seen, and both refused by the context (Playwright's reason for a
    // context created with `acceptDownloads: deny`), without a file.
    let downloads = downloads.lock().unwrap().clone();
    assert_eq!(downloads.len(), 2, "{downloads:?}");
    assert!(
        downloads.iter().all(|(failure, path)| {
            failure
                .as_deref()
                .is_some_and(|f| f.contains("acceptDownloads"))
                && path.is_none()
        }),
        "a download was not refused: {downloads:?}"
    );
    let new: Vec<_> = download_files().difference(&before).cloned().collect();
    assert!(new.is_empty(), "files appeared: {new:?}");

    // Control: a context that accepts downloads (Playwright's default), in the same browser,
    // gets the event and a file where the check above looks.
    let browser = context.browser().expect("the context's browser");
    let accepting = browser.new_context().await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Arc::new(std::sync::Mutex::new(Some(tx)));
    accepting
        .on_download(move |download| {
            let tx = Arc::clone(&tx);
            async move {
                let path = download.path().await;
                if let Some(tx) = tx.lock().unwrap().take() {
                    let _ = tx.send(path.ok().flatten());
                }
                Ok(())
            }
        })
        .await
        .unwrap();
    let page = accepting.new_page().await.unwrap();
    let _ = page.goto(&site.url("/download"), None).await;
    let path = tokio::time::timeout(Duration::from_secs(20), rx)
        .await
        .expect("no download event in the accepting context")
        .unwrap()
        .expect("the accepted download has a file");
    assert!(
        download_files().contains(&path),
        "{path:?} is not where the check looks"
    );
    accepting.close().await.unwrap();
    release(lease).await;
    guarded.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cdp_attached_browser_cannot_reach_loopback_services() {
    let (victim, site) = (Victim::start().await, Site::start().await);
    let chromium = LocalChromium::launch(&ChromiumOptions::default())
        .await
        .unwrap();
    let guarded = CdpSessionProvider::new(CdpProviderConfig {
        egress: Some(site.egress()),
        ..CdpProviderConfig::new(chromium.http_url())
    });
    let lease = acquire(&guarded, AcquireMode::Unattended).await;
    let allowed = visit(lease.context(), &site.url("/page")).await;
    assert_eq!(allowed.status, Some(200), "{allowed:?}");
    for target in [
        victim.url("/"),
        site.url(&format!("/redirect?to={}", victim.url("/"))),
        format!("http://localhost:{}/", victim.addr.port()),
    ] {
        let attack = visit(lease.context(), &target).await;
        assert!(attack.was_refused(), "{target}: {attack:?}");
    }
    settle().await;
    assert_eq!(victim.hits(), 0, "the attached browser reached the victim");
    let proxy = guarded.egress_proxy().await.expect("a proxy");
    assert!(proxy.refused() >= 3, "{proxy:?}");
    release(lease).await;
    guarded.shutdown().await;

    let open = CdpSessionProvider::new(CdpProviderConfig {
        egress: None,
        ..CdpProviderConfig::new(chromium.http_url())
    });
    let lease = acquire(&open, AcquireMode::Unattended).await;
    assert!(
        visit(lease.context(), &victim.url("/"))
            .await
            .reached_victim()
    );
    assert!(victim.hits() >= 1);
    release(lease).await;
    open.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_default_context_is_held_by_the_url_gate() {
    let (victim, site) = (Victim::start().await, Site::start().await);
    let double = abr_doubles::SteelDouble::start(abr_doubles::SteelOptions::default())
        .await
        .unwrap();
    let steel = |egress| {
        SteelSessionProvider::oss_serialized(
            SteelProviderConfig {
                egress,
                ..SteelProviderConfig::oss(double.base_url())
            },
            STEP,
        )
    };
    let guarded = steel(Some(site.egress()));
    let lease = acquire(&guarded, AcquireMode::Unattended).await;
    let allowed = visit(lease.context(), &site.url("/page")).await;
    assert_eq!(allowed.status, Some(200), "{allowed:?}");
    // By address, by name, by a 302 from the allowed site, and by a WebSocket.
    remote_attacks_reach_nothing(lease.context(), &site, &victim, true).await;
    release(lease).await;

    let open = steel(None);
    let lease = acquire(&open, AcquireMode::Unattended).await;
    assert!(
        visit(lease.context(), &victim.url("/"))
            .await
            .reached_victim()
    );
    assert!(victim.hits() >= 1);
    release(lease).await;
}

/// A Kernel browser (the double: a real Chromium per session) is held like Steel's: by
/// address, through a redirect of an allowed site, and for a page's WebSocket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_browser_reaches_no_loopback_service_by_redirect_or_websocket() {
    let (victim, site) = (Victim::start().await, Site::start().await);
    let double = abr_doubles::KernelDouble::start(abr_doubles::KernelOptions::default())
        .await
        .unwrap();
    let kernel = KernelSessionProvider::new(KernelProviderConfig {
        base_url: double.base_url(),
        rest_timeout: Duration::from_secs(60),
        connect_timeout: Duration::from_secs(10),
        navigation_timeout: Duration::from_secs(10),
        egress: Some(site.egress()),
        ..KernelProviderConfig::new(double.api_key())
    });
    let lease = acquire(&kernel, AcquireMode::Unattended).await;
    remote_attacks_reach_nothing(lease.context(), &site, &victim, false).await;
    release(lease).await;
}

/// A gated remote browser reaches the victim neither by its address (and, with `by_name`,
/// by `localhost`), nor through a 302 of the allowed site, nor by a page's WebSocket.
async fn remote_attacks_reach_nothing(
    s: &BrowserSession,
    site: &Site,
    victim: &Victim,
    by_name: bool,
) {
    let mut targets = vec![
        victim.url("/"),
        site.url(&format!("/redirect?to={}", victim.url("/"))),
    ];
    if by_name {
        targets.push(format!("http://localhost:{}/", victim.addr.port()));
    }
    for target in targets {
        let attack = visit(s, &target).await;
        assert!(
            attack
                .error
                .as_deref()
                .is_some_and(|e| e.contains("ERR_BLOCKED_BY_CLIENT")),
            "{target}: {attack:?}"
        );
    }
    visit(s, &site.url("/page")).await;
    let _: bool = s
        .page()
        .evaluate(
            WEBSOCKET,
            Some(&format!("ws://127.0.0.1:{}/", victim.addr.port())),
        )
        .await
        .unwrap();
    settle().await;
    assert_eq!(
        victim.hits(),
        0,
        "the gated remote browser reached the victim"
    );
}

/// Run in the allowed page: a WebSocket to `url`, waited for until it opens, fails or 3 s.
const WEBSOCKET: &str = r#"async (url) => {
  await new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.onopen = ws.onclose = ws.onerror = () => resolve();
    setTimeout(resolve, 3000);
  });
  return true;
}"#;

/// Run in the allowed page: ICE gathering against a STUN server at `stun` (UDP), waited for.
const WEBRTC: &str = r#"async (stun) => {
  const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:' + stun }] });
  pc.createDataChannel('x');
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((resolve) => {
    if (pc.iceGatheringState === 'complete') return resolve();
    pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && resolve();
    setTimeout(resolve, 4000);
  });
  pc.close();
  return true;
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webrtc_does_not_send_udp_around_the_proxy() {
    let site = Site::start().await;
    let udp = Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let stun = udp.local_addr().unwrap();
    let packets = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&packets);
    let reader = Arc::clone(&udp);
    let task = tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        while reader.recv_from(&mut buf).await.is_ok() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let guarded = local(Some(site.egress()));
    let lease = acquire(&guarded, AcquireMode::Unattended).await;
    visit(lease.context(), &site.url("/page")).await;
    let _: bool = lease
        .context()
        .page()
        .evaluate(WEBRTC, Some(&stun.to_string()))
        .await
        .unwrap();
    settle().await;
    assert_eq!(packets.load(Ordering::SeqCst), 0, "WebRTC sent UDP");
    release(lease).await;
    guarded.shutdown().await;

    // Control: a Chromium without ABR's WebRTC policy flag (the doubles' own launch flags)
    // sends its STUN requests straight to the UDP port.
    let chromium = LocalChromium::launch(&ChromiumOptions::default())
        .await
        .unwrap();
    let open = CdpSessionProvider::new(CdpProviderConfig {
        egress: None,
        ..CdpProviderConfig::new(chromium.http_url())
    });
    let lease = acquire(&open, AcquireMode::Unattended).await;
    visit(lease.context(), &site.url("/page")).await;
    let _: bool = lease
        .context()
        .page()
        .evaluate(WEBRTC, Some(&stun.to_string()))
        .await
        .unwrap();
    settle().await;
    assert!(
        packets.load(Ordering::SeqCst) >= 1,
        "the control sent no STUN request: the check above proves nothing"
    );
    release(lease).await;
    open.shutdown().await;
    task.abort();
}
