//! [`SocketGuard`]: no WebSocket leaves a context whose network gate guards them, from any
//! document or worker; and every WebSocket a gated context opens is told to its gate.
//!
//! Playwright's WebSocket route replaces `WebSocket` in documents only: a dedicated worker's
//! socket and `WebSocketStream` go around it. Below the page, on Chromium 156 (measured):
//! `Fetch` never pauses a WebSocket handshake and `Network.setBlockedURLs` does not block
//! one, but `Network.emulateNetworkConditionsByRule` with `offline` for `ws://` and `wss://`
//! URLs makes the network service fail the handshake, for `WebSocket` and `WebSocketStream`
//! alike, while every HTTP request goes on. Chromium keys a socket's conditions to whoever
//! created it: a document's (in any frame of a page's process) to its page, an
//! out-of-process frame's to that frame, a dedicated worker's to the document or the
//! worker that started it. So the rule is set
//!
//! - on every page of the context, through one browser-level session attached to each page
//!   in the nested mode: the lease's page when the gate is installed, a popup before its
//!   first document loads (the context's route holds a main-frame document until every page
//!   of the context is covered: the driver reports a popup only after its first document
//!   came, so its own session cannot be asked for before);
//! - on every out-of-process frame and every dedicated worker, at any depth: each covered
//!   target auto-attaches to them (paused at their start where Chromium waits for it) and
//!   the rule is set on each before it is let run, then the same one level down.
//!
//! Where the rule cannot be relied on, the way to a socket is taken away before the page's
//! own scripts run, through an init script Playwright runs in every document (also an
//! `about:blank` one a script just made):
//! - a dedicated worker started by an in-process subframe is keyed to that subframe, which
//!   has no DevTools target: subframes have no `Worker`, and neither has a popup a script
//!   opened (it could be scripted before its page is covered);
//! - a worker's worker is keyed to the first worker, whose rule may come a moment after it
//!   started (the driver lets workers run as soon as it attached them): a worker has no
//!   `Worker`. Every worker of a covered page starts with [`WORKER_PREFIX`]: one from a
//!   `blob:` or `data:` URL from a copy that begins with it, one from the network from its
//!   script served by the context's route with it in front ([`WORKER_MARK`]);
//! - `WebTransport` (not a WebSocket, so not under the rule) exists nowhere.
//!
//! Every WebSocket a gated context's documents and workers open, refused or not, is told to
//! the gate (Playwright's `websocket` event, which reports workers' too), so a refusing gate
//! records it and a read-write run counts one to its own sites.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use playwright_rs::Error as PwError;
use playwright_rs::protocol::{BrowserContext, CDPSession};
use serde_json::{Value, json};

/// What a worker of a guarded context runs before its own code (see the module docs): no
/// worker of its own (its worker's sockets would be keyed to it, and its rule may come
/// late), no `WebTransport`. Its own sockets are left to the rule, which refuses them and
/// lets the driver report them.
pub(crate) const WORKER_PREFIX: &str =
    "delete self.Worker; delete self.SharedWorker; delete self.WebTransport;\n";

/// The query parameter a guarded document's `Worker` adds to a worker's URL from the
/// network, so that the context's route serves its script with [`WORKER_PREFIX`] in front
/// (and fetches it without the parameter).
pub(crate) const WORKER_MARK: &str = "__abr_worker";

/// What every document of a context whose sockets are guarded runs first (see the module
/// docs): no `WebTransport` anywhere; no `Worker` in a subframe or a script's popup;
/// elsewhere a `Worker` whose workers start with [`WORKER_PREFIX`]: from a
/// `blob:` or `data:` URL, a copy that begins with it (read at once, so a URL revoked right
/// after is still read); from the network, the URL marked with [`WORKER_MARK`].
pub(crate) fn socket_script() -> String {
    format!(
        r#"(() => {{
delete globalThis.WebTransport;
let opened = false; try {{ opened = window.opener !== null; }} catch (e) {{ opened = true; }}
if (window !== window.top || opened) {{ delete globalThis.Worker; return; }}
const Native = globalThis.Worker;
if (typeof Native !== 'function') return;
const prefix = {prefix};
const read = (href) => {{ const x = new XMLHttpRequest(); x.open('GET', href, false); x.send(); return x.responseText; }};
const Worker = function Worker(url, options) {{
  if (!new.target) throw new TypeError("Failed to construct 'Worker': Please use the 'new' operator.");
  let start = url;
  const href = new URL(String(url), document.baseURI);
  if (href.protocol === 'blob:' || href.protocol === 'data:') {{
    start = URL.createObjectURL(new Blob([prefix + read(href.href)], {{ type: 'text/javascript' }}));
  }} else {{
    href.searchParams.append({mark}, '1');
    start = href.href;
  }}
  return Reflect.construct(Native, [start, options], new.target);
}};
Worker.prototype = Native.prototype;
Object.defineProperty(Native.prototype, 'constructor', {{ value: Worker, writable: true, configurable: true }});
Object.defineProperty(globalThis, 'Worker', {{ value: Worker, writable: true, configurable: true }});
}})();"#,
        prefix = serde_json::Value::String(WORKER_PREFIX.to_owned()),
        mark = serde_json::Value::String(WORKER_MARK.to_owned()),
    )
}

/// The rule that fails every WebSocket handshake of the target it is set on.
fn offline_sockets() -> Value {
    let condition = |pattern: &str| {
        json!({
            "urlPattern": pattern,
            "latency": 0,
            "downloadThroughput": -1,
            "uploadThroughput": -1,
        })
    };
    json!({
        "offline": true,
        "matchedNetworkConditions": [condition("ws://*:*/*"), condition("wss://*:*/*")],
    })
}

/// Auto-attach to a target's frames and workers, each paused at its start, in the nested
/// (not flat) mode: Playwright's CDP session sends to its own target only, and nested
/// messages reach the children through it.
fn auto_attach() -> Value {
    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": false})
}

/// The pages of one context that are covered, through one browser-level CDP session that
/// is attached (in the nested mode) to each of them.
#[derive(Default)]
pub(crate) struct SocketGuard {
    covering: tokio::sync::Mutex<Option<Covering>>,
}

struct Covering {
    targets: Arc<Targets>,
    /// The context's Chromium id.
    context_id: String,
    /// The page targets covered, by target id, with the session attached to each.
    covered: HashMap<String, String>,
}

impl std::fmt::Debug for SocketGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketGuard").finish_non_exhaustive()
    }
}

impl SocketGuard {
    /// Sets the rule on every page of `context` not covered yet, and on every frame and
    /// worker they start from now on. Concurrent calls wait for each other.
    ///
    /// # Errors
    /// When the browser refuses the session or the rule: the page cannot be held (no run
    /// may rely on it).
    pub(crate) async fn cover(&self, context: &BrowserContext) -> Result<(), PwError> {
        let mut covering = self.covering.lock().await;
        if covering.is_none() {
            *covering = Some(Covering::start(context).await?);
        }
        let Some(covering) = covering.as_mut() else {
            return Ok(());
        };
        let listed = covering.targets.cdp.send("Target.getTargets", None).await?;
        let pages = listed
            .pointer("/targetInfos")
            .or_else(|| listed.pointer("/result/targetInfos"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for page in pages {
            let (Some(target), Some(context_id)) =
                (page["targetId"].as_str(), page["browserContextId"].as_str())
            else {
                continue;
            };
            if page["type"] != "page"
                || context_id != covering.context_id
                || covering.covered.contains_key(target)
            {
                continue;
            }
            let attached = covering
                .targets
                .cdp
                .send(
                    "Target.attachToTarget",
                    Some(json!({"targetId": target, "flatten": false})),
                )
                .await?;
            let Some(session) = attached
                .pointer("/sessionId")
                .or_else(|| attached.pointer("/result/sessionId"))
                .and_then(Value::as_str)
            else {
                return Err(PwError::ProtocolError(
                    "the browser attached to a page without a session".to_owned(),
                ));
            };
            let path = [session.to_owned()];
            covering
                .targets
                .ask(
                    &path,
                    "Network.emulateNetworkConditionsByRule",
                    offline_sockets(),
                )
                .await?;
            covering
                .targets
                .send(&path, "Target.setAutoAttach", auto_attach())
                .await;
            covering
                .covered
                .insert(target.to_owned(), session.to_owned());
        }
        Ok(())
    }

    /// Lets every covered page go (their rules end with their sessions).
    pub(crate) async fn uncover(&self) {
        let covering = self.covering.lock().await.take();
        if let Some(covering) = covering {
            let bounded = std::time::Duration::from_secs(5);
            for session in covering.covered.values() {
                let detach = covering.targets.cdp.send(
                    "Target.detachFromTarget",
                    Some(json!({ "sessionId": session })),
                );
                let _ = tokio::time::timeout(bounded, detach).await;
            }
            let _ = tokio::time::timeout(bounded, covering.targets.cdp.detach()).await;
        }
    }
}

impl Covering {
    /// The browser-level session for `context`'s pages.
    async fn start(context: &BrowserContext) -> Result<Self, PwError> {
        let Some(browser) = context.browser() else {
            return Err(PwError::InvalidArgument(
                "the context has no browser to refuse its sockets in".to_owned(),
            ));
        };
        let context_id = crate::unload::chromium_id(context).await.ok_or_else(|| {
            PwError::ProtocolError("the browser would not name the context".to_owned())
        })?;
        let cdp = browser.new_browser_cdp_session().await?;
        let targets = Arc::new(Targets {
            cdp: cdp.clone(),
            next_id: AtomicU64::new(1),
            answers: std::sync::Mutex::default(),
        });
        let weak = Arc::downgrade(&targets);
        cdp.on("Target.receivedMessageFromTarget", move |event: Value| {
            let targets = weak.clone();
            async move {
                if let Some(session) = event["sessionId"].as_str() {
                    let raw = event["message"].as_str().unwrap_or_default();
                    message(targets, vec![session.to_owned()], raw.to_owned()).await;
                }
                Ok(())
            }
        });
        Ok(Self {
            targets,
            context_id,
            covered: HashMap::new(),
        })
    }
}

/// The browser-level CDP session through which the covered pages, and their frames and
/// workers, are reached.
struct Targets {
    cdp: CDPSession,
    next_id: AtomicU64,
    /// Commands whose answer is awaited ([`Targets::ask`]), by id.
    answers: std::sync::Mutex<HashMap<u64, tokio::sync::oneshot::Sender<Value>>>,
}

/// Bound on a command whose answer is awaited.
const ASK: std::time::Duration = std::time::Duration::from_secs(10);

impl Targets {
    /// Sends `method` to the target at the end of `path` and waits for its answer: an error
    /// answer, or none in time, is an error.
    async fn ask(&self, path: &[String], method: &str, params: Value) -> Result<Value, PwError> {
        let id = self.id();
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, tx);
        let sent = self.send_as(id, path, method, params).await;
        let answer = if sent {
            tokio::time::timeout(ASK, rx)
                .await
                .ok()
                .and_then(Result::ok)
        } else {
            None
        };
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
        match answer {
            Some(answer) if answer.get("error").is_none() => Ok(answer),
            Some(answer) => Err(PwError::ProtocolError(format!(
                "{method}: {}",
                answer["error"]["message"].as_str().unwrap_or("refused")
            ))),
            _ => Err(PwError::ProtocolError(format!("{method}: no answer"))),
        }
    }

    /// An answer from a target: to an awaited command, if it is one.
    fn answered(&self, message: &Value) {
        let Some(id) = message["id"].as_u64() else {
            return;
        };
        let waiting = self
            .answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
        if let Some(waiting) = waiting {
            let _ = waiting.send(message.clone());
        }
    }

    /// Sends `method` to the target at the end of `path` (session ids from the page down),
    /// nested in `Target.sendMessageToTarget` once per level. The command's own answer is not
    /// waited for: commands to one target run in the order sent.
    async fn send(&self, path: &[String], method: &str, params: Value) {
        self.send_as(self.id(), path, method, params).await;
    }

    async fn send_as(&self, id: u64, path: &[String], method: &str, params: Value) -> bool {
        let Some((first, rest)) = path.split_first() else {
            return false;
        };
        let mut message = json!({"id": id, "method": method, "params": params});
        for session in rest.iter().rev() {
            message = json!({
                "id": self.id(),
                "method": "Target.sendMessageToTarget",
                "params": {"sessionId": session, "message": message.to_string()},
            });
        }
        let outer = json!({"sessionId": first, "message": message.to_string()});
        match self
            .cdp
            .send("Target.sendMessageToTarget", Some(outer))
            .await
        {
            Ok(_) => true,
            Err(e) => {
                // A target that went away meanwhile cannot be told anything.
                tracing::debug!(error = %e, method, "sockets: a target could not be told");
                false
            }
        }
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// A frame or worker attached at `path` (its parent's): the rule, a worker's constructors
/// taken away, the same one level down, then it runs.
async fn attached(targets: Weak<Targets>, path: Vec<String>, event: Value) {
    let Some(targets) = targets.upgrade() else {
        return;
    };
    let Some(session) = event["sessionId"].as_str() else {
        return;
    };
    let mut child = path;
    child.push(session.to_owned());
    targets
        .send(
            &child,
            "Network.emulateNetworkConditionsByRule",
            offline_sockets(),
        )
        .await;
    if event["targetInfo"]["type"] == "worker" {
        targets
            .send(
                &child,
                "Runtime.evaluate",
                json!({ "expression": format!("{WORKER_PREFIX}void 0") }),
            )
            .await;
    }
    targets
        .send(&child, "Target.setAutoAttach", auto_attach())
        .await;
    targets
        .send(&child, "Runtime.runIfWaitingForDebugger", json!({}))
        .await;
}

/// A message from the target at `path`: a child of it attached, or a message of a deeper
/// target passed up through it.
fn message(
    targets: Weak<Targets>,
    path: Vec<String>,
    raw: String,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(async move {
        let Ok(parsed) = serde_json::from_str::<Value>(&raw) else {
            return;
        };
        match parsed["method"].as_str() {
            None => {
                if let Some(targets) = targets.upgrade() {
                    targets.answered(&parsed);
                }
            }
            Some("Target.attachedToTarget") => {
                attached(targets, path, parsed["params"].clone()).await;
            }
            Some("Target.receivedMessageFromTarget") => {
                let params = &parsed["params"];
                if let (Some(session), Some(inner)) =
                    (params["sessionId"].as_str(), params["message"].as_str())
                {
                    let mut deeper = path;
                    deeper.push(session.to_owned());
                    message(targets, deeper, inner.to_owned()).await;
                }
            }
            _ => {}
        }
    })
}
