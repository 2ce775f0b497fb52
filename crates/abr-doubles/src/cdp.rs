//! A minimal Chrome DevTools Protocol client over a WebSocket.
//!
//! Enough for the doubles (and for tests): send a command with an id, await the matching
//! response with a bounded timeout, optionally inside a flattened target session
//! (`sessionId`), and observe events through a broadcast channel.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::SplitSink;
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::util::lock;

/// Default bound on connecting and on each command round trip.
pub const DEFAULT_CDP_TIMEOUT: Duration = Duration::from_secs(10);

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;
type Reply = oneshot::Sender<Result<Value, CdpError>>;
type PendingMap = HashMap<u64, (String, Reply)>;

/// Errors from [`CdpClient`].
#[derive(Debug, Clone, thiserror::Error)]
pub enum CdpError {
    /// The WebSocket handshake failed or timed out.
    #[error("could not connect to {url}: {reason}")]
    Connect {
        /// URL we tried.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// No response within the client's timeout.
    #[error("CDP command {method} timed out after {after:?}")]
    Timeout {
        /// Command name.
        method: String,
        /// Bound that elapsed.
        after: Duration,
    },
    /// The socket closed before the response arrived.
    #[error("CDP socket closed")]
    Closed,
    /// The browser answered with a protocol error.
    #[error("CDP error {code} for {method}: {message}")]
    Protocol {
        /// Command name.
        method: String,
        /// CDP error code.
        code: i64,
        /// CDP error message.
        message: String,
    },
}

/// A cheap-to-clone handle on one CDP WebSocket connection.
#[derive(Clone)]
pub struct CdpClient {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    sink: tokio::sync::Mutex<SplitSink<Ws, Message>>,
    pending: Arc<Mutex<Option<PendingMap>>>,
    next_id: AtomicU64,
    events: broadcast::Sender<Value>,
    closed: watch::Receiver<bool>,
    timeout: Duration,
    reader: JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl fmt::Debug for CdpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CdpClient")
            .field("url", &self.inner.url)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl CdpClient {
    /// Connects with [`DEFAULT_CDP_TIMEOUT`] for the handshake and for every command.
    pub async fn connect(url: &str) -> Result<Self, CdpError> {
        Self::connect_with_timeout(url, DEFAULT_CDP_TIMEOUT).await
    }

    /// Connects; `timeout` bounds the handshake and every later command round trip.
    ///
    /// No `Origin` header is sent (Chromium rejects unexpected origins); `Host` is taken from
    /// the URL (`127.0.0.1:<port>`), which passes Chromium's DNS-rebinding check.
    pub async fn connect_with_timeout(url: &str, timeout: Duration) -> Result<Self, CdpError> {
        let connect_err = |reason: String| CdpError::Connect {
            url: url.to_owned(),
            reason,
        };
        let (ws, _resp) = tokio::time::timeout(timeout, tokio_tungstenite::connect_async(url))
            .await
            .map_err(|_| connect_err(format!("timed out after {timeout:?}")))?
            .map_err(|e| connect_err(e.to_string()))?;
        let (sink, mut stream) = ws.split();
        let pending: Arc<Mutex<Option<PendingMap>>> = Arc::new(Mutex::new(Some(HashMap::new())));
        let (events, _) = broadcast::channel(1024);
        let (closed_tx, closed) = watch::channel(false);
        let reader_pending = Arc::clone(&pending);
        let reader_events = events.clone();
        let reader = tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                let text = match msg {
                    Ok(Message::Text(t)) => t.as_str().to_owned(),
                    Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => continue,
                };
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                match value.get("id").and_then(Value::as_u64) {
                    Some(id) => {
                        let entry = lock(&reader_pending)
                            .as_mut()
                            .and_then(|map| map.remove(&id));
                        if let Some((method, reply)) = entry {
                            let _ = reply.send(to_result(&method, value));
                        }
                    }
                    None => {
                        let _ = reader_events.send(value);
                    }
                }
            }
            // Dropping the senders wakes every waiter with `Closed`.
            lock(&reader_pending).take();
            let _ = closed_tx.send(true);
        });
        Ok(Self {
            inner: Arc::new(Inner {
                url: url.to_owned(),
                sink: tokio::sync::Mutex::new(sink),
                pending,
                next_id: AtomicU64::new(1),
                events,
                closed,
                timeout,
                reader,
            }),
        })
    }

    /// The URL this client connected to.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Sends a browser-level command and awaits its result.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CdpError> {
        self.call_in(None, method, params).await
    }

    /// Sends a command, inside the flattened target session `session_id` if given.
    pub async fn call_in(
        &self,
        session_id: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match lock(&self.inner.pending).as_mut() {
            Some(map) => {
                map.insert(id, (method.to_owned(), tx));
            }
            None => return Err(CdpError::Closed),
        }
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session_id {
            msg["sessionId"] = Value::String(s.to_owned());
        }
        let timeout = self.inner.timeout;
        let timed_out = || CdpError::Timeout {
            method: method.to_owned(),
            after: timeout,
        };
        let send = async {
            let mut sink = self.inner.sink.lock().await;
            sink.send(Message::text(msg.to_string())).await
        };
        let sent = tokio::time::timeout(timeout, send).await;
        let outcome = match sent {
            Err(_) => Err(timed_out()),
            Ok(Err(_)) => Err(CdpError::Closed),
            Ok(Ok(())) => match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(CdpError::Closed),
                Err(_) => Err(timed_out()),
            },
        };
        if outcome.is_err()
            && let Some(map) = lock(&self.inner.pending).as_mut()
        {
            map.remove(&id);
        }
        outcome
    }

    /// Subscribes to CDP events (messages without an `id`) received from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Value> {
        self.inner.events.subscribe()
    }

    /// Whether the socket has closed.
    pub fn is_closed(&self) -> bool {
        *self.inner.closed.borrow()
    }

    /// Resolves once the socket has closed (by either side).
    pub async fn closed(&self) {
        let mut rx = self.inner.closed.clone();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Sends a close frame (best effort, bounded).
    pub async fn close(&self) {
        let fut = async {
            let mut sink = self.inner.sink.lock().await;
            let _ = sink.send(Message::Close(None)).await;
        };
        let _ = tokio::time::timeout(self.inner.timeout, fut).await;
    }

    /// `Target.getTargets`, filtered to `type == "page"`: `(targetId, url)` pairs.
    pub async fn page_targets(&self) -> Result<Vec<(String, String)>, CdpError> {
        let res = self.call("Target.getTargets", json!({})).await?;
        Ok(res
            .get("targetInfos")
            .and_then(Value::as_array)
            .map(|infos| {
                infos
                    .iter()
                    .filter(|t| t.get("type").and_then(Value::as_str) == Some("page"))
                    .filter_map(|t| {
                        let id = t.get("targetId")?.as_str()?.to_owned();
                        let url = t.get("url").and_then(Value::as_str).unwrap_or("");
                        Some((id, url.to_owned()))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// `Target.attachToTarget` with `flatten: true`; returns the CDP `sessionId`.
    pub async fn attach(&self, target_id: &str) -> Result<String, CdpError> {
        let res = self
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await?;
        res.get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| CdpError::Protocol {
                method: "Target.attachToTarget".to_owned(),
                code: 0,
                message: "response without sessionId".to_owned(),
            })
    }

    /// `Target.detachFromTarget` for a flattened session (errors ignored).
    pub async fn detach(&self, session_id: &str) {
        let _ = self
            .call(
                "Target.detachFromTarget",
                json!({ "sessionId": session_id }),
            )
            .await;
    }

    /// `Runtime.evaluate` with `returnByValue` and `awaitPromise` inside a page session;
    /// returns the value, or a protocol error carrying the exception text.
    pub async fn evaluate(&self, session_id: &str, expression: &str) -> Result<Value, CdpError> {
        let res = self
            .call_in(
                Some(session_id),
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await?;
        if let Some(ex) = res.get("exceptionDetails") {
            return Err(CdpError::Protocol {
                method: "Runtime.evaluate".to_owned(),
                code: 0,
                message: ex.to_string(),
            });
        }
        Ok(res
            .get("result")
            .and_then(|r| r.get("value"))
            .cloned()
            .unwrap_or(Value::Null))
    }
}

fn to_result(method: &str, value: Value) -> Result<Value, CdpError> {
    if let Some(err) = value.get("error") {
        return Err(CdpError::Protocol {
            method: method.to_owned(),
            code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        });
    }
    Ok(value.get("result").cloned().unwrap_or(Value::Null))
}
