//! [`BrowserNet`]: the browser-level net under the context route, for the requests Playwright
//! lets go without routing them.
//!
//! A document that is being left (a navigation, a link, a closed popup) may still send: a
//! `navigator.sendBeacon` or a `fetch(…, {keepalive: true})` on `pagehide` or
//! `visibilitychange` outlives its document, so the browser sends it itself. Chromium pauses
//! such a request for interception like any other, but without a network id, and Playwright
//! continues every paused request without one at once, without a route handler ever seeing
//! it (measured: a read-only run's `pagehide` beacon reached the site). So while a guarded
//! context lives in a browser, the browser's own CDP session intercepts the resource types
//! that can carry such a write (ping, XHR, fetch, other, CSP reports) and judges the requests
//! Playwright does not route: those without a network id and with a method that is not safe.
//! It also judges every redirect's next hop whose method is not safe, documents' too
//! (Playwright routes a chain's first request only, and a 307 or 308 keeps the method: a
//! write to another site that sends it on to the run's own is a write to the run's own),
//! and every document's next hop against its context's site filter (a popup's redirect to
//! a denied site, which no page-level gate sees).
//! Everything else goes on at once (Playwright's route judges it).
//!
//! A request is the run's whose frame is one of its context's: the frame's target (a page,
//! an out-of-process frame); else, for a frame inside a page's process, the browser's only
//! guarded context, or with several the one with a page whose frame tree still holds it.
//! Which Chromium context a guarded one is (three CDP calls, about 8 ms) is asked beside the
//! run, not before it: a context joins at once, and a judgement that needs it before the
//! answer came waits for it. A
//! frame no guarded context claims is refused while any guarded context of the browser
//! refuses writes (a read-only run may not be the one to lose it), else let go (a
//! read-write run does not count it). Interception stops a moment ([`LINGER`]) after the
//! browser's last guarded context went, unless another joined meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};
use std::time::Duration;

use abr_core::guard::{OutgoingRequest, RequestGate, is_safe_method};
use playwright_rs::protocol::{Browser, BrowserContext, CDPSession, Page};
use playwright_rs::server::channel_owner::ChannelOwner as _;
use serde::Deserialize;
use serde_json::{Value, json};

/// What the net asks of a guarded context's route (its `RequestRouter`): the network gate
/// the context's writes are held to, if it has one now.
pub(crate) trait Gated: Send + Sync {
    /// The context's network gate.
    fn network_gate(&self) -> Option<Arc<dyn RequestGate>>;
    /// Whether that gate refuses every write (a read-only or dry run).
    fn refuses_writes(&self) -> bool;
    /// Whether the context's site filter refuses a document from `url` (a redirect's next
    /// hop in any of its pages, a popup's too).
    fn refuses_document(&self, url: &str) -> bool;
}

/// Bound on one CDP call of the net.
const CALL: Duration = Duration::from_secs(5);

/// How long a net with no guarded context left stays up for the next one. Meanwhile the
/// requests of the intercepted types from other contexts are paused and let go at once
/// (about 2 ms each): no judgement applies to them.
const LINGER: Duration = Duration::from_secs(2);

/// The resource types a write can leave a document with after it is gone, and the
/// documents (whose redirect hops Playwright does not route).
const PATTERNS: [&str; 6] = [
    "Ping",
    "XHR",
    "Fetch",
    "Other",
    "CSPViolationReport",
    "Document",
];

/// Every browser's net, by the browser's Playwright id.
static NETS: LazyLock<tokio::sync::Mutex<HashMap<String, Arc<BrowserNet>>>> =
    LazyLock::new(Default::default);

/// One guarded context of a browser.
#[derive(Clone)]
struct Guarded {
    router: Weak<dyn Gated>,
    context: BrowserContext,
    /// Its Chromium id (`None` when the browser would not say), asked once.
    id: Arc<tokio::sync::OnceCell<String>>,
}

impl Guarded {
    /// The context's Chromium id: asked now unless it was already (or is being) asked; a
    /// browser that did not answer is asked again the next time (an unknown id would leave
    /// the context's writes unclaimed).
    async fn id(&self) -> Option<&str> {
        self.id
            .get_or_try_init(|| async { chromium_id(&self.context).await.ok_or(()) })
            .await
            .ok()
            .map(String::as_str)
    }
}

/// The browser-level net of one browser (see the module docs).
pub(crate) struct BrowserNet {
    browser: String,
    cdp: CDPSession,
    /// The guarded contexts, by registration.
    contexts: std::sync::Mutex<HashMap<u64, Guarded>>,
}

impl std::fmt::Debug for BrowserNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserNet").finish_non_exhaustive()
    }
}

/// A guarded context's place in its browser's net, given back with
/// [`Registration::release`].
#[derive(Debug)]
pub(crate) struct Registration {
    net: Arc<BrowserNet>,
    key: u64,
}

/// The next registration's key.
static NEXT_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Registration {
    /// Takes the context out of the net at once (nothing it sends is judged by its router
    /// from here on); after the last one the net stays up for [`LINGER`], beside the
    /// caller, for the next guarded context to join (a runner's tasks come back to back:
    /// opening the browser's CDP session and enabling interception again cost about 6 ms
    /// a task), then stops unless one did.
    pub(crate) async fn release(self) {
        let last = {
            let mut contexts = self.net.lock();
            contexts.remove(&self.key);
            contexts.is_empty()
        };
        if last {
            tokio::spawn(async move {
                tokio::time::sleep(LINGER).await;
                stop_if_unused(self.net).await;
            });
        }
    }
}

/// Stops `net`'s interception and forgets it, unless a context joined it again or a new net
/// replaced it.
async fn stop_if_unused(net: Arc<BrowserNet>) {
    let mut nets = NETS.lock().await;
    let current = nets
        .get(&net.browser)
        .is_some_and(|known| Arc::ptr_eq(known, &net));
    if net.lock().is_empty() && current {
        nets.remove(&net.browser);
        let _ = call(&net.cdp, "Fetch.disable", json!({})).await;
        let _ = tokio::time::timeout(CALL, net.cdp.detach()).await;
    }
}

/// One CDP command, bounded; its answer without Playwright's `{"result": …}` wrapper.
async fn call(cdp: &CDPSession, method: &str, params: Value) -> Option<Value> {
    match tokio::time::timeout(CALL, cdp.send(method, Some(params))).await {
        Ok(Ok(Value::Object(mut answer))) if answer.len() == 1 && answer.contains_key("result") => {
            answer.remove("result")
        }
        Ok(Ok(answer)) => Some(answer),
        _ => None,
    }
}

/// The id Chromium gives `context`, asked through its first page that answers.
pub(crate) async fn chromium_id(context: &BrowserContext) -> Option<String> {
    for page in context.pages() {
        if let Some(id) = id_through(context, &page).await {
            return Some(id);
        }
    }
    None
}

/// The id Chromium gives `page`'s browser context.
async fn id_through(context: &BrowserContext, page: &Page) -> Option<String> {
    let cdp = tokio::time::timeout(CALL, context.new_cdp_session(page))
        .await
        .ok()?
        .ok()?;
    let info = call(&cdp, "Target.getTargetInfo", json!({})).await;
    let _ = tokio::time::timeout(CALL, cdp.detach()).await;
    info?
        .pointer("/targetInfo/browserContextId")?
        .as_str()
        .map(str::to_owned)
}

/// Joins `context` to its browser's net, judged by `router`. The
/// context's Chromium id is asked in the background (see the module docs).
///
/// # Errors
/// A description when the browser has no CDP session or refuses interception.
pub(crate) async fn register(
    browser: &Browser,
    context: &BrowserContext,
    router: &Arc<dyn Gated>,
) -> Result<Registration, String> {
    let mut nets = NETS.lock().await;
    let net = match nets.get(browser.guid()) {
        Some(net) => Arc::clone(net),
        None => {
            let cdp = tokio::time::timeout(CALL, browser.new_browser_cdp_session())
                .await
                .map_err(|_| "opening the browser's CDP session timed out".to_owned())?
                .map_err(|e| format!("opening the browser's CDP session: {e}"))?;
            let net = Arc::new(BrowserNet {
                browser: browser.guid().to_owned(),
                cdp,
                contexts: std::sync::Mutex::default(),
            });
            let weak = Arc::downgrade(&net);
            net.cdp.on("Fetch.requestPaused", move |params: Value| {
                let net = weak.clone();
                async move {
                    if let Some(net) = net.upgrade() {
                        net.paused(params).await;
                    }
                    Ok(())
                }
            });
            let patterns: Vec<Value> = PATTERNS
                .iter()
                .map(|t| json!({"urlPattern": "*", "resourceType": t, "requestStage": "Request"}))
                .collect();
            call(&net.cdp, "Fetch.enable", json!({ "patterns": patterns }))
                .await
                .ok_or("the browser refused request interception")?;
            nets.insert(net.browser.clone(), Arc::clone(&net));
            net
        }
    };
    let guarded = Guarded {
        router: Arc::downgrade(router) as Weak<dyn Gated>,
        context: context.clone(),
        id: Arc::default(),
    };
    let key = NEXT_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    net.lock().insert(key, guarded.clone());
    drop(nets);
    // Asked beside the run; a judgement that needs it first waits for this same answer.
    tokio::spawn(async move {
        guarded.id().await;
    });
    Ok(Registration { net, key })
}

/// `Fetch.requestPaused`, the parts the net reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Paused {
    request_id: String,
    request: PausedRequest,
    frame_id: Option<String>,
    resource_type: Option<String>,
    network_id: Option<String>,
    /// Set on a redirect's next hop: the request it follows.
    redirected_request_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PausedRequest {
    url: String,
    method: String,
    #[serde(default)]
    headers: HashMap<String, Value>,
    post_data: Option<String>,
}

/// What the net found a request to belong to.
enum Owner {
    /// A guarded context's router.
    Run(Arc<dyn Gated>),
    /// No guarded context claims it.
    Nobody,
}

impl BrowserNet {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Guarded>> {
        self.contexts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn paused(&self, params: Value) {
        let Ok(paused) = serde_json::from_value::<Paused>(params) else {
            return;
        };
        // Playwright routes a request's first hop only; a redirect's next hop with a method
        // that is not safe (a 307 or 308 keeps the POST) is judged here, by where it goes: a
        // write to another site that the other site sends on to the run's own is the run's.
        let routed = paused.network_id.is_some() && paused.redirected_request_id.is_none();
        let go = if paused.redirected_request_id.is_some()
            && paused.resource_type.as_deref() == Some("Document")
            && self.refuses_document(&paused).await
        {
            tracing::info!("site filter: refused a redirect's next hop of a document");
            false
        } else if routed || is_safe_method(&paused.request.method) {
            true
        } else {
            self.judge(&paused).await
        };
        let (method, params) = if go {
            (
                "Fetch.continueRequest",
                json!({ "requestId": paused.request_id }),
            )
        } else {
            (
                "Fetch.failRequest",
                json!({ "requestId": paused.request_id, "errorReason": "BlockedByClient" }),
            )
        };
        let _ = call(&self.cdp, method, params).await;
    }

    /// Whether the site filter of the context a document's redirect hop belongs to refuses
    /// it (a page's own documents are also gated on its page; a popup's only here).
    async fn refuses_document(&self, paused: &Paused) -> bool {
        match self.owner(paused.frame_id.as_deref()).await {
            Owner::Run(router) => router.refuses_document(&paused.request.url),
            Owner::Nobody => false,
        }
    }

    /// Whether a write Playwright would not route may leave.
    async fn judge(&self, paused: &Paused) -> bool {
        let router = match self.owner(paused.frame_id.as_deref()).await {
            Owner::Run(router) => router,
            Owner::Nobody => {
                let refusing = self.routers().iter().any(|r| r.refuses_writes());
                if refusing {
                    tracing::info!(
                        "network: refused a write of a document being left, that no run claims"
                    );
                }
                return !refusing;
            }
        };
        let Some(gate) = router.network_gate() else {
            return true;
        };
        let content_type = paused
            .request
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .and_then(|(_, value)| value.as_str());
        let request = OutgoingRequest {
            method: &paused.request.method,
            url: &paused.request.url,
            resource_type: paused.resource_type.as_deref().unwrap_or("other"),
            content_type,
            body: paused.request.post_data.as_deref().map(str::as_bytes),
        };
        gate.admit(&request).await
    }

    fn routers(&self) -> Vec<Arc<dyn Gated>> {
        self.lock()
            .values()
            .filter_map(|g| g.router.upgrade())
            .collect()
    }

    /// The guarded context the frame `frame_id` is in: its target's context, else the one
    /// with a page whose frame tree holds it.
    async fn owner(&self, frame_id: Option<&str>) -> Owner {
        let Some(frame_id) = frame_id else {
            return Owner::Nobody;
        };
        let info = call(
            &self.cdp,
            "Target.getTargetInfo",
            json!({ "targetId": frame_id }),
        )
        .await;
        if let Some(context_id) = info
            .as_ref()
            .and_then(|i| i.pointer("/targetInfo/browserContextId"))
            .and_then(Value::as_str)
        {
            let guarded: Vec<Guarded> = self.lock().values().cloned().collect();
            for g in guarded {
                if g.id().await == Some(context_id) {
                    return g.router.upgrade().map_or(Owner::Nobody, Owner::Run);
                }
            }
            return Owner::Nobody;
        }
        // A frame in a page's process. With one guarded context in the browser, it is that
        // one's (a browser per job, a remote session, an attached browser); with several,
        // look for it in each one's pages.
        let contexts: Vec<(BrowserContext, Weak<dyn Gated>)> = self
            .lock()
            .values()
            .map(|g| (g.context.clone(), g.router.clone()))
            .collect();
        if let [(_, only)] = contexts.as_slice() {
            return only.upgrade().map_or(Owner::Nobody, Owner::Run);
        }
        for (context, router) in contexts {
            for page in context.pages() {
                if holds_frame(&context, &page, frame_id).await
                    && let Some(router) = router.upgrade()
                {
                    return Owner::Run(router);
                }
            }
        }
        Owner::Nobody
    }
}

/// Whether `page`'s frame tree holds the frame `frame_id`.
async fn holds_frame(context: &BrowserContext, page: &Page, frame_id: &str) -> bool {
    let Ok(Ok(cdp)) = tokio::time::timeout(CALL, context.new_cdp_session(page)).await else {
        return false;
    };
    let tree = call(&cdp, "Page.getFrameTree", json!({})).await;
    let _ = tokio::time::timeout(CALL, cdp.detach()).await;
    tree.and_then(|t| t.get("frameTree").cloned())
        .is_some_and(|t| tree_holds(&t, frame_id))
}

fn tree_holds(tree: &Value, frame_id: &str) -> bool {
    tree.pointer("/frame/id").and_then(Value::as_str) == Some(frame_id)
        || tree
            .get("childFrames")
            .and_then(Value::as_array)
            .is_some_and(|children| children.iter().any(|c| tree_holds(c, frame_id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_found_anywhere_in_its_tree() {
        let tree = json!({
            "frame": {"id": "main"},
            "childFrames": [
                {"frame": {"id": "a"}},
                {"frame": {"id": "b"}, "childFrames": [{"frame": {"id": "deep"}}]}
            ]
        });
        for id in ["main", "a", "b", "deep"] {
            assert!(tree_holds(&tree, id), "{id}");
        }
        assert!(!tree_holds(&tree, "other"));
        assert!(!tree_holds(&json!({}), "main"));
    }
}
