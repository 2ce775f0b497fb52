//! The provider conformance suite: one set of checks every [`SessionProvider`] of
//! [`BrowserSession`]s runs (local, CDP, Steel, Kernel), against real Chromium and a local
//! test site. Enabled by the `conformance` feature; third-party providers can run it too.
//!
//! Each check is a plain `async fn` that panics with a message when the provider breaks the
//! contract. What differs between providers is passed in explicitly ([`LeakProbe`], crash
//! recovery) rather than guessed.

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

/// A local site on `127.0.0.1:0`, reachable as two origins: `http://127.0.0.1:P` and
/// `http://localhost:P`.
#[derive(Debug)]
pub struct TestSite {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Deserialize)]
struct SetCookie {
    name: String,
    value: String,
}

impl TestSite {
    /// Starts the site.
    pub async fn start() -> std::io::Result<Self> {
        let app = Router::new()
            .route("/page", get(|| async { Html(PAGE) }))
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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, task })
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
    AcquireRequest {
        mode: AcquireMode::Unattended,
        platform: "conformance".into(),
        state: Some(state),
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

async fn release(lease: Lease<BrowserSession>) {
    bounded("release", lease.release()).await.expect("release");
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
    bounded("acquire", provider.acquire(unattended(state)))
        .await
        .unwrap_or_else(|e| panic!("acquire failed: {e}"))
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
