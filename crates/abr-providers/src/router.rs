//! [`RequestRouter`]: the one Playwright route of a browser context, for everything that
//! judges a request before it leaves: the egress URL gate (contexts no proxy can be set
//! on), the tenant's site filter (documents), and the run's network gate (every request
//! whose method is not safe, see [`RequestGate`]); and the redirect gate under it.
//!
//! Playwright routes every request of the context (every page, frame and popup, and the
//! requests of dedicated workers) through this process once a route is set; it cannot route
//! by method or resource type, so the route is installed only when something needs it, and
//! a safe request with nothing to check goes on at once. Playwright routes only the first
//! request of a redirect chain; a redirect never turns a safe method into another (a 307 or
//! 308 keeps the method of a request that was already judged), but it may lead elsewhere:
//! the redirect gate ([`install_hop_gate`]) judges the next hops, through a CDP `Fetch`
//! session of the whole remote browser (every request: the URL gate and, for documents, the
//! site filter) or of the page once a site filter is set (its documents). Requests of
//! service workers are not routed: every context blocks service workers.
//!
//! WebSockets are routed separately (Playwright's WebSocket routing, set for an egress URL
//! gate and for a network gate that guards them): a refused socket is closed before it
//! connects. That routing replaces `WebSocket` in documents only; below it, a gate that
//! guards sockets has every socket of the context refused by the browser's network, from
//! any document or worker (`sockets`), and a document request of a page not covered yet
//! (a popup's first) waits until it is.
//!
//! Documents being left send writes Playwright does not route either (a `pagehide` beacon):
//! the browser's own net catches those (`unload`).
//!
//! Shared workers are another source of requests Playwright does not route: job browsers
//! this crate launches have none (`--disable-blink-features=SharedWorker`), and a guarded
//! context of any other browser removes the constructor before each document's own scripts
//! run.

use std::sync::{Arc, PoisonError, RwLock, Weak};

use abr_core::guard::{OutgoingRequest, RequestGate, SiteFilter, is_safe_method};
use abr_core::{EgressPolicy, ProviderError};
use playwright_rs::Error as PwError;
use playwright_rs::protocol::{
    BrowserContext, FulfillOptions, Page, Route, WebSocketRoute, WebSocketRouteCloseOptions,
};
use playwright_rs::server::channel_owner::ChannelOwner as _;

use crate::egress::UrlGate;
use crate::error::from_playwright;
use crate::sockets::{SocketGuard, WORKER_MARK, WORKER_PREFIX, socket_script};
use crate::unload::{self, Gated, Registration};

/// The route pattern: every URL.
const PATTERN: &str = "**";

/// Chromium's error for a request a client refused: `net::ERR_BLOCKED_BY_CLIENT`.
const BLOCKED: &str = "blockedbyclient";

/// The close code a refused WebSocket gets (policy violation).
const WS_REFUSED: u16 = 1008;

/// The Chromium switch a job browser launched by this crate gets: no `SharedWorker`.
pub(crate) const NO_SHARED_WORKERS: &str = "--disable-blink-features=SharedWorker";

/// What every document of a guarded context runs first, where the browser could not be
/// launched without shared workers (an attached or remote one): their requests are not
/// routed, so the page may not make one.
const NO_SHARED_WORKER_SCRIPT: &str = "delete globalThis.SharedWorker;";

/// Whether a browser launched with `args` has no `SharedWorker`: the last
/// `--disable-blink-features` names it and no `--enable-blink-features` does (Chromium takes
/// the last value of a repeated switch).
pub(crate) fn launched_without_shared_workers(args: &[String]) -> bool {
    let names = |switch: &str| {
        args.iter()
            .filter_map(|arg| arg.strip_prefix(switch)?.strip_prefix('='))
            .next_back()
            .is_some_and(|list| list.split(',').any(|f| f.trim() == "SharedWorker"))
    };
    let enabled = args
        .iter()
        .filter_map(|arg| arg.strip_prefix("--enable-blink-features="))
        .any(|list| list.split(',').any(|f| f.trim() == "SharedWorker"));
    names("--disable-blink-features") && !enabled
}

/// What judges a context's requests (see the module docs). Shared by every clone of a
/// session.
#[derive(Debug, Default)]
pub(crate) struct RequestRouter {
    egress: Option<Arc<UrlGate>>,
    sites: RwLock<Option<Arc<dyn SiteFilter>>>,
    network: RwLock<Option<Arc<dyn RequestGate>>>,
    installed: tokio::sync::Mutex<Installed>,
    /// Set once the init script that takes `SharedWorker` away is on the context, or from
    /// the start for a browser launched without it ([`Self::without_shared_workers`]).
    no_shared_workers: tokio::sync::OnceCell<()>,
    /// The context's place in its browser's net (`unload`), while a network gate is set.
    unload: std::sync::Mutex<Option<Registration>>,
    /// The redirect gate's CDP session ([`install_hop_gate`]): a remote browser's, or the
    /// page's once a site filter is set; kept while the context's lease lives.
    redirects: std::sync::Mutex<Option<playwright_rs::protocol::CDPSession>>,
    /// The sockets of the context: watched for the network gate, refused below the page
    /// while it guards them (`sockets`).
    sockets: Sockets,
}

/// The context's sockets (see [`RequestRouter::watch_sockets`]).
#[derive(Debug, Default)]
struct Sockets {
    /// Refused below the page (the gate guards them): every page is covered.
    guarded: std::sync::atomic::AtomicBool,
    /// The pages and their frames and workers holding the rule.
    guard: SocketGuard,
    /// The context, once its pages are watched (its new pages are from then on).
    context: std::sync::Mutex<Option<BrowserContext>>,
    /// The pages whose sockets are told to the gate, by guid.
    watched: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The pages known to be covered, by guid.
    covered: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The init script that takes the page's other socket paths away is on the context.
    scripted: tokio::sync::OnceCell<()>,
}

impl Drop for RequestRouter {
    fn drop(&mut self) {
        let registration = self
            .unload
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let (Some(registration), Ok(runtime)) =
            (registration, tokio::runtime::Handle::try_current())
        {
            runtime.spawn(registration.release());
        }
    }
}

#[derive(Debug, Default)]
struct Installed {
    requests: bool,
    websockets: bool,
}

impl RequestRouter {
    /// A router with the egress URL gate in front of everything.
    pub(crate) fn with_egress(gate: Arc<UrlGate>) -> Self {
        Self {
            egress: Some(gate),
            sites: RwLock::default(),
            network: RwLock::default(),
            installed: tokio::sync::Mutex::default(),
            no_shared_workers: tokio::sync::OnceCell::new(),
            unload: std::sync::Mutex::default(),
            redirects: std::sync::Mutex::default(),
            sockets: Sockets::default(),
        }
    }

    /// A router for a context of a browser launched without `SharedWorker` (see
    /// [`launched_without_shared_workers`]): no init script needs to take it away.
    pub(crate) fn without_shared_workers() -> Self {
        let router = Self::default();
        let _ = router.no_shared_workers.set(());
        router
    }

    /// Adds a browser-level redirect gate to a remote browser's URL gate (see
    /// [`install_hop_gate`]): the whole browser is the session's, so every redirect hop of
    /// every page, frame and worker is judged (and a document's by the site filter too).
    pub(crate) async fn gate_redirects(
        self: &Arc<Self>,
        browser: &playwright_rs::protocol::Browser,
    ) -> Result<(), ProviderError> {
        if self.egress.is_none() {
            return Ok(());
        }
        let fail = |e| from_playwright("installing the redirect gate", e);
        let cdp = browser.new_browser_cdp_session().await.map_err(fail)?;
        install_hop_gate(&cdp, Arc::downgrade(self), HopScope::Browser)
            .await
            .map_err(fail)?;
        *self
            .redirects
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(cdp);
        Ok(())
    }

    /// Why a redirect's next hop is refused, if it is: the egress URL gate, for a document
    /// the site filter, and for a method that is not safe the network gate (a 307 keeps the
    /// POST: a write to another site sent on to the run's own is a write to the run's own).
    async fn refuses_hop(&self, hop: &OutgoingRequest<'_>) -> Option<&'static str> {
        if let Some(gate) = &self.egress
            && let Err(denied) = gate.check(hop.url).await
        {
            return Some(denied.code());
        }
        let filter = self.sites();
        if hop.resource_type == "Document" && filter.is_some_and(|f| !may_open(f.as_ref(), hop.url))
        {
            return Some("site_filter");
        }
        match self.network() {
            Some(gate) if !is_safe_method(hop.method) && !gate.admit(hop).await => {
                Some("network_gate")
            }
            _ => None,
        }
    }

    fn sites(&self) -> Option<Arc<dyn SiteFilter>> {
        self.sites
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn network(&self) -> Option<Arc<dyn RequestGate>> {
        self.network
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Routes the context's requests through this router, once; with an egress URL gate,
    /// its WebSockets too (a socket to a refused address is closed before it connects).
    pub(crate) async fn install(self: &Arc<Self>, context: &BrowserContext) -> Result<(), PwError> {
        let mut installed = self.installed.lock().await;
        if installed.requests {
            return Ok(());
        }
        let router = Arc::downgrade(self);
        context
            .route(PATTERN, move |route| handle(router.clone(), route))
            .await?;
        installed.requests = true;
        if self.egress.is_some() {
            self.route_websockets(&mut installed, context).await?;
        }
        Ok(())
    }

    /// Routes the context's WebSockets through this router, once.
    async fn route_websockets(
        self: &Arc<Self>,
        installed: &mut Installed,
        context: &BrowserContext,
    ) -> Result<(), PwError> {
        if !installed.websockets {
            let router = Arc::downgrade(self);
            context
                .route_web_socket(PATTERN, move |socket| {
                    handle_websocket(router.clone(), socket)
                })
                .await?;
            installed.websockets = true;
        }
        Ok(())
    }

    /// Sets the site filter (a new one replaces the last), routes the context, and gates
    /// the redirects of `page`'s documents (unless the whole browser's are gated): a
    /// document redirected to a site the filter refuses never reaches it.
    pub(crate) async fn set_sites(
        self: &Arc<Self>,
        context: &BrowserContext,
        page: &Page,
        filter: Arc<dyn SiteFilter>,
    ) -> Result<(), PwError> {
        *self.sites.write().unwrap_or_else(PoisonError::into_inner) = Some(filter);
        self.install(context).await?;
        let gated = self
            .redirects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if !gated {
            let cdp = context.new_cdp_session(page).await?;
            install_hop_gate(&cdp, Arc::downgrade(self), HopScope::Documents).await?;
            *self
                .redirects
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(cdp);
        }
        Ok(())
    }

    /// Sets the network gate (a new one replaces the last), routes the context, joins the
    /// browser's net for the requests Playwright does not route (`unload`), and tells the
    /// gate of every socket the context opens; when the gate guards sockets, routes the
    /// documents' WebSockets and has every other socket refused below the page
    /// (`sockets`), `page` (the lease's) covered before this returns.
    pub(crate) async fn set_network(
        self: &Arc<Self>,
        context: &BrowserContext,
        page: &Page,
        gate: Arc<dyn RequestGate>,
    ) -> Result<(), PwError> {
        let websockets = gate.websockets_guarded();
        *self.network.write().unwrap_or_else(PoisonError::into_inner) = Some(gate);
        self.sockets
            .guarded
            .store(websockets, std::sync::atomic::Ordering::SeqCst);
        // The route, the init scripts, the net and the socket rule are independent calls:
        // sent at once (the page loads nothing before this returns), they cost the slowest,
        // not the sum.
        let (routed, scripted, joined, watched) = tokio::join!(
            self.install(context),
            self.no_shared_workers(context),
            self.join_net(context),
            self.watch_sockets(context, page, websockets)
        );
        routed?;
        scripted?;
        joined?;
        watched?;
        if websockets {
            let mut installed = self.installed.lock().await;
            self.route_websockets(&mut installed, context).await?;
        }
        Ok(())
    }

    /// Tells the gate of every socket the context's pages open (the pages there are and
    /// every new one), and when `guarded` covers every page (`sockets`) after the init
    /// script that takes the documents' other socket paths away.
    async fn watch_sockets(
        self: &Arc<Self>,
        context: &BrowserContext,
        page: &Page,
        guarded: bool,
    ) -> Result<(), PwError> {
        let first = self
            .sockets
            .context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(context.clone())
            .is_none();
        if first {
            let router = Arc::downgrade(self);
            context
                .on_page(move |page| {
                    let router = router.clone();
                    async move {
                        if let Some(router) = router.upgrade() {
                            router.watch_page(&page).await?;
                        }
                        Ok(())
                    }
                })
                .await?;
        }
        if guarded {
            self.sockets
                .scripted
                .get_or_try_init(|| async {
                    context.add_init_script(&socket_script()).await?;
                    Ok::<(), PwError>(())
                })
                .await?;
        }
        let mut pages = context.pages();
        if !pages.iter().any(|p| p.guid() == page.guid()) {
            pages.push(page.clone());
        }
        for page in pages {
            self.watch_page(&page).await?;
        }
        Ok(())
    }

    /// Tells the gate of `page`'s sockets (once), and covers it while sockets are guarded.
    async fn watch_page(self: &Arc<Self>, page: &Page) -> Result<(), PwError> {
        let new = self
            .sockets
            .watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(page.guid().to_owned());
        if new {
            let router = Arc::downgrade(self);
            page.on_websocket(move |socket| {
                let router = router.clone();
                async move {
                    let gate = router.upgrade().and_then(|r| r.network());
                    if let Some(gate) = gate {
                        gate.socket_opened(socket.url()).await;
                    }
                    Ok(())
                }
            })
            .await?;
        }
        self.cover(Some(page)).await
    }

    /// Covers every page of the context (`sockets`) while the gate guards sockets, `page`
    /// among them; nothing otherwise.
    async fn cover(&self, page: Option<&Page>) -> Result<(), PwError> {
        if !self.guards_sockets() {
            return Ok(());
        }
        let context = self
            .sockets
            .context
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(context) = context else {
            return Ok(());
        };
        self.sockets.guard.cover(&context).await?;
        let mut covered = self
            .sockets
            .covered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        covered.extend(context.pages().iter().map(|p| p.guid().to_owned()));
        if let Some(page) = page {
            covered.insert(page.guid().to_owned());
        }
        Ok(())
    }

    fn guards_sockets(&self) -> bool {
        self.sockets
            .guarded
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether a document request in `frame` must wait for its page to be covered: the
    /// main frame of a page not known to be covered while sockets are guarded (a popup's
    /// first document, whose page the driver reports only later).
    fn must_cover(&self, frame: Option<&playwright_rs::protocol::Frame>) -> bool {
        if !self.guards_sockets() {
            return false;
        }
        let Some(frame) = frame else {
            return false;
        };
        if frame.parent_frame().is_some() {
            return false;
        }
        frame.page().is_none_or(|page| {
            !self
                .sockets
                .covered
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(page.guid())
        })
    }

    /// Takes `SharedWorker` away from the context's documents (an init script), once.
    async fn no_shared_workers(&self, context: &BrowserContext) -> Result<(), PwError> {
        self.no_shared_workers
            .get_or_try_init(|| async {
                context.add_init_script(NO_SHARED_WORKER_SCRIPT).await?;
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// Joins the browser's net for the requests Playwright does not route (`unload`), once.
    async fn join_net(self: &Arc<Self>, context: &BrowserContext) -> Result<(), PwError> {
        let registered = self
            .unload
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if registered {
            return Ok(());
        }
        let Some(browser) = context.browser() else {
            return Err(PwError::InvalidArgument(
                "the context has no browser to guard the requests of documents being left"
                    .to_owned(),
            ));
        };
        let gated: Arc<dyn Gated> = Arc::clone(self) as Arc<dyn Gated>;
        let registration = unload::register(&browser, context, &gated)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "the browser's net for documents being left");
                PwError::InvalidArgument(e)
            })?;
        let previous = self
            .unload
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(registration);
        if let Some(previous) = previous {
            previous.release().await;
        }
        Ok(())
    }

    /// Leaves the browser's net (`unload`) now: a lease's release calls it before the
    /// context goes, so a refusing run's place cannot outlive it (a dropped router leaves
    /// too, but later, from a spawned task).
    pub(crate) async fn leave_net(&self) {
        let registration = self
            .unload
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(registration) = registration {
            registration.release().await;
        }
    }

    /// Takes everything off a context that outlives the lease (a shared default context):
    /// its route, and the judges a WebSocket route may still consult.
    pub(crate) async fn remove(&self, context: &BrowserContext) -> Result<(), PwError> {
        *self.sites.write().unwrap_or_else(PoisonError::into_inner) = None;
        *self.network.write().unwrap_or_else(PoisonError::into_inner) = None;
        self.sockets
            .guarded
            .store(false, std::sync::atomic::Ordering::SeqCst);
        self.sockets.guard.uncover().await;
        self.sockets
            .covered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.leave_net().await;
        let mut installed = self.installed.lock().await;
        installed.requests = false;
        context.unroute(PATTERN).await
    }
}

async fn handle(router: Weak<RequestRouter>, route: Route) -> Result<(), PwError> {
    // A router that is gone belongs to a lease that ended: nothing to judge.
    let Some(router) = router.upgrade() else {
        return route.continue_(None).await;
    };
    let request = route.request();
    let url = request.url().to_owned();
    if let Some(gate) = &router.egress
        && let Err(denied) = gate.check(&url).await
    {
        let port = url::Url::parse(&url)
            .ok()
            .and_then(|u| u.port_or_known_default());
        tracing::info!(
            reason = denied.code(),
            port,
            "egress: refused a browser request (URL gate)"
        );
        return route.abort(Some(BLOCKED)).await;
    }
    let document = request.resource_type() == "document";
    if document && router.must_cover(request.frame().as_ref()) {
        // A page's first document (a popup's) loads only once its sockets are refused.
        let page = request.frame().and_then(|f| f.page());
        if let Err(e) = router.cover(page.as_ref()).await {
            tracing::warn!(error = %e, "sockets: a new page could not be covered; its document is refused");
            return route.abort(Some(BLOCKED)).await;
        }
    }
    if router.guards_sockets()
        && let Some(script) = worker_script(&url)
    {
        return start_worker(route, script).await;
    }
    if document
        && let Some(filter) = router.sites()
        && !may_open(filter.as_ref(), &url)
    {
        tracing::info!("site filter: refused a document request");
        return route.abort(Some(BLOCKED)).await;
    }
    let method = request.method().to_owned();
    if !is_safe_method(&method)
        && let Some(gate) = router.network()
    {
        let headers = request.headers();
        let content_type = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .map(|(_, value)| value.clone());
        let body = request.post_data_buffer();
        let outgoing = OutgoingRequest {
            method: &method,
            url: &url,
            resource_type: request.resource_type(),
            content_type: content_type.as_deref(),
            body: body.as_deref(),
        };
        if !gate.admit(&outgoing).await {
            // A refused document leaves the page where it was (204: no navigation);
            // anything else fails as a request the browser blocked.
            return if document {
                route
                    .fulfill(FulfillOptions::builder().status(204).build())
                    .await
            } else {
                route.abort(Some(BLOCKED)).await
            };
        }
    }
    route.continue_(None).await
}

/// The script of a worker a guarded document starts from the network: its URL as the
/// page wrote it, without the marker the document's `Worker` adds ([`WORKER_MARK`]); none
/// for any other request.
fn worker_script(url: &str) -> Option<String> {
    let mut parsed = url::Url::parse(url).ok()?;
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if !pairs.iter().any(|(k, _)| k == WORKER_MARK) {
        return None;
    }
    let rest: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| k != WORKER_MARK).collect();
    if rest.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(rest);
    }
    Some(parsed.into())
}

/// Serves a worker's main script (`script`, fetched from the network) with
/// [`WORKER_PREFIX`] in front: a worker of a guarded context starts no worker and has no
/// socket constructor (its own sockets are refused below the page; a worker's worker's
/// would be keyed to a worker whose rule may come late, see `sockets`). A script that
/// cannot be fetched, or that redirects (its next hop would not be judged), fails the worker.
async fn start_worker(route: Route, script: String) -> Result<(), PwError> {
    let options = playwright_rs::protocol::FetchOptions::builder()
        .url(script)
        .max_redirects(0)
        .build();
    let fetched = match route.fetch(options).await {
        Ok(fetched) if !(300..400).contains(&fetched.status()) => fetched,
        Ok(_) => {
            tracing::info!("sockets: a worker's script redirects; the worker is refused");
            return route.abort(Some(BLOCKED)).await;
        }
        Err(e) => {
            tracing::info!(error = %e, "sockets: a worker's script could not be fetched");
            return route.abort(Some(BLOCKED)).await;
        }
    };
    let mut body = WORKER_PREFIX.as_bytes().to_vec();
    body.extend_from_slice(fetched.body());
    let headers = fetched
        .headers()
        .iter()
        .filter(|(name, _)| {
            !["content-length", "content-encoding", "transfer-encoding"]
                .iter()
                .any(|h| name.eq_ignore_ascii_case(h))
        })
        .cloned()
        .collect();
    route
        .fulfill(
            FulfillOptions::builder()
                .status(fetched.status())
                .headers(headers)
                .body(body)
                .build(),
        )
        .await
}

async fn handle_websocket(
    router: Weak<RequestRouter>,
    socket: WebSocketRoute,
) -> Result<(), PwError> {
    let Some(router) = router.upgrade() else {
        return socket.connect_to_server().await;
    };
    if let Some(gate) = &router.egress
        && let Err(denied) = gate.check(socket.url()).await
    {
        tracing::info!(
            reason = denied.code(),
            "egress: refused a WebSocket (URL gate)"
        );
        return socket
            .close(
                WebSocketRouteCloseOptions::default()
                    .code(WS_REFUSED)
                    .reason("refused: the runner's egress policy"),
            )
            .await;
    }
    let refused = router
        .network()
        .is_some_and(|gate| gate.websockets_guarded() && !gate.admit_websocket(socket.url()));
    if refused {
        tracing::info!("network: refused a WebSocket of a run that may not commit");
        socket
            .close(
                WebSocketRouteCloseOptions::default()
                    .code(WS_REFUSED)
                    .reason("refused: the run is read-only"),
            )
            .await
    } else {
        socket.connect_to_server().await
    }
}

impl Gated for RequestRouter {
    fn network_gate(&self) -> Option<Arc<dyn RequestGate>> {
        self.network()
    }

    fn refuses_writes(&self) -> bool {
        self.network().is_some_and(|gate| gate.refuses_writes())
    }

    fn refuses_document(&self, url: &str) -> bool {
        self.sites()
            .is_some_and(|filter| !may_open(filter.as_ref(), url))
    }
}

/// The egress URL gate of a context no proxy can be set on (see `egress.rs`: weaker than
/// the proxy), installed as the first judge of the context's one route
/// ([`RequestRouter`]). Refused requests are aborted (`net::ERR_BLOCKED_BY_CLIENT`).
pub(crate) async fn install_url_gate(
    context: &BrowserContext,
    policy: &EgressPolicy,
) -> Result<Arc<RequestRouter>, ProviderError> {
    let router = Arc::new(RequestRouter::with_egress(UrlGate::new(policy)));
    router
        .install(context)
        .await
        .map_err(|e| from_playwright("installing the egress URL gate", e))?;
    Ok(router)
}

/// Where a redirect gate pauses requests: every request of a browser the session has to
/// itself, or the documents of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HopScope {
    /// A browser-level session: every page, frame and worker, every resource type.
    Browser,
    /// A page's session: its documents (navigations and their redirects) only.
    Documents,
}

/// A redirect gate: Playwright routes only the first request of a redirect chain, so a CDP
/// session pauses requests at their request stage (`Fetch`, which reports a redirect's next
/// hop as a request of its own, with `redirectedRequestId`). A next hop the router's egress
/// URL gate refuses, a document hop its site filter refuses, or a hop with a method that is
/// not safe its network gate refuses, fails (`BlockedByClient`) before it leaves; everything
/// else goes on at once (a first request is the route's to judge).
async fn install_hop_gate(
    cdp: &playwright_rs::protocol::CDPSession,
    router: Weak<RequestRouter>,
    scope: HopScope,
) -> Result<(), PwError> {
    let answering = cdp.clone();
    cdp.on("Fetch.requestPaused", move |event: serde_json::Value| {
        let (cdp, router) = (answering.clone(), router.clone());
        async move {
            let Some(id) = event["requestId"].as_str().map(str::to_owned) else {
                return Ok(());
            };
            let refused = match (event.get("redirectedRequestId"), router.upgrade()) {
                (Some(_), Some(router)) => {
                    let request = &event["request"];
                    let content_type = request["headers"].as_object().and_then(|headers| {
                        headers
                            .iter()
                            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
                            .and_then(|(_, value)| value.as_str())
                    });
                    let hop = OutgoingRequest {
                        method: request["method"].as_str().unwrap_or("GET"),
                        url: request["url"].as_str().unwrap_or_default(),
                        resource_type: event["resourceType"].as_str().unwrap_or("Other"),
                        content_type,
                        body: request["postData"].as_str().map(str::as_bytes),
                    };
                    router.refuses_hop(&hop).await
                }
                _ => None,
            };
            let answer = match refused {
                Some(why) => {
                    tracing::info!(reason = why, "refused a redirect's next hop");
                    let failed =
                        serde_json::json!({"requestId": id, "errorReason": "BlockedByClient"});
                    cdp.send("Fetch.failRequest", Some(failed)).await
                }
                None => {
                    let go_on = serde_json::json!({ "requestId": id });
                    cdp.send("Fetch.continueRequest", Some(go_on)).await
                }
            };
            // A request that went away meanwhile (its page closed) cannot be answered.
            if let Err(e) = answer {
                tracing::debug!(error = %e, "the redirect gate could not answer a request");
            }
            Ok(())
        }
    });
    let pattern = match scope {
        HopScope::Browser => serde_json::json!({"urlPattern": "*", "requestStage": "Request"}),
        HopScope::Documents => serde_json::json!(
            {"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}
        ),
    };
    cdp.send(
        "Fetch.enable",
        Some(serde_json::json!({ "patterns": [pattern] })),
    )
    .await
    .map(|_| ())
}

/// Whether `filter` lets a document from `url` load. A URL without a host cannot be
/// checked: refused.
pub(crate) fn may_open(filter: &dyn SiteFilter, url: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(name)) => {
            filter.may_open(&name.trim_end_matches('.').to_ascii_lowercase())
        }
        Some(url::Host::Ipv4(addr)) => filter.may_open(&addr.to_string()),
        Some(url::Host::Ipv6(addr)) => filter.may_open(&addr.to_string()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Refuse(&'static str);

    impl SiteFilter for Refuse {
        fn may_open(&self, host: &str) -> bool {
            host != self.0
        }
    }

    #[test]
    fn documents_are_checked_by_their_host_and_hostless_ones_refused() {
        let filter = Refuse("evil.example");
        assert!(!may_open(&filter, "https://EVIL.example./x?y"));
        assert!(may_open(&filter, "https://good.example/"));
        assert!(may_open(&filter, "http://127.0.0.1:8080/"));
        assert!(!may_open(&Refuse("::1"), "http://[::1]:8080/"));
        assert!(!may_open(&filter, "data:text/html,hi"));
        assert!(!may_open(&filter, "not a url"));
    }
}
