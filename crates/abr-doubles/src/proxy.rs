//! WebSocket proxy between an accepted client socket (axum) and Chromium's CDP endpoint.
//!
//! Frames are piped both ways (text and binary; close frames propagated). Every proxied socket
//! is registered in a [`SocketRegistry`] under a tag (the session id), so a double can
//! force-close the sockets of one session (release/delete/expiry) or all of them (the
//! "drop sockets" fault).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::{CloseFrame as AxCloseFrame, Message as AxMessage, WebSocket};
use futures::{SinkExt as _, StreamExt as _};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message as TMessage;
use tokio_tungstenite::tungstenite::protocol::CloseFrame as TCloseFrame;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::util::lock;

/// The upstream (Chromium-side) socket type.
pub type UpstreamSocket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Bound on the few sends done while tearing a pipe down.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// Errors connecting upstream.
#[derive(Debug, thiserror::Error)]
#[error("could not connect to upstream {url}: {reason}")]
pub struct ProxyError {
    /// The upstream URL.
    pub url: String,
    /// What went wrong.
    pub reason: String,
}

/// Connects to Chromium's browser WebSocket without an `Origin` header; the `Host` header comes
/// from the URL (`127.0.0.1:<port>`), which Chromium accepts.
pub async fn connect_upstream(url: &str, timeout: Duration) -> Result<UpstreamSocket, ProxyError> {
    let err = |reason: String| ProxyError {
        url: url.to_owned(),
        reason,
    };
    let (ws, _resp) = tokio::time::timeout(timeout, tokio_tungstenite::connect_async(url))
        .await
        .map_err(|_| err(format!("timed out after {timeout:?}")))?
        .map_err(|e| err(e.to_string()))?;
    Ok(ws)
}

/// How a force-closed socket ends, as seen by the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseMode {
    /// Send a close frame with this code and reason, then drop the connection.
    Graceful {
        /// WebSocket close code (e.g. 1001 "going away").
        code: u16,
        /// Close reason.
        reason: String,
    },
    /// Drop the TCP connection without a closing handshake (a network fault).
    Abrupt,
}

impl CloseMode {
    /// `1001` with the given reason.
    pub fn going_away(reason: &str) -> Self {
        Self::Graceful {
            code: 1001,
            reason: reason.to_owned(),
        }
    }
}

/// Why a pipe ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipeEnd {
    /// The client sent a close frame or went away.
    ClientClosed,
    /// Chromium closed the socket or went away.
    UpstreamClosed,
    /// The double force-closed it.
    Killed(CloseMode),
}

struct Entry {
    tag: String,
    tx: watch::Sender<Option<CloseMode>>,
}

#[derive(Default)]
struct RegistryInner {
    next: u64,
    total: u64,
    entries: HashMap<u64, Entry>,
}

/// Registry of open proxied sockets, each tagged with the session it belongs to.
#[derive(Clone, Default)]
pub struct SocketRegistry {
    inner: Arc<Mutex<RegistryInner>>,
}

impl fmt::Debug for SocketRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SocketRegistry")
            .field("open", &self.open_count())
            .finish()
    }
}

impl SocketRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a socket under `tag`; the returned ticket unregisters it when dropped.
    pub fn register(&self, tag: &str) -> SocketTicket {
        let (tx, rx) = watch::channel(None);
        let mut inner = lock(&self.inner);
        inner.next += 1;
        inner.total += 1;
        let id = inner.next;
        inner.entries.insert(
            id,
            Entry {
                tag: tag.to_owned(),
                tx,
            },
        );
        SocketTicket {
            id,
            registry: self.clone(),
            rx,
        }
    }

    /// Force-closes every socket tagged `tag`; returns how many.
    pub fn close_tag(&self, tag: &str, mode: &CloseMode) -> usize {
        self.close_where(|e| e.tag == tag, mode)
    }

    /// Force-closes every registered socket; returns how many.
    pub fn close_all(&self, mode: &CloseMode) -> usize {
        self.close_where(|_| true, mode)
    }

    fn close_where(&self, pred: impl Fn(&Entry) -> bool, mode: &CloseMode) -> usize {
        let mut inner = lock(&self.inner);
        let ids: Vec<u64> = inner
            .entries
            .iter()
            .filter(|(_, e)| pred(e))
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            if let Some(e) = inner.entries.remove(id) {
                let _ = e.tx.send(Some(mode.clone()));
            }
        }
        ids.len()
    }

    /// Number of sockets currently open (not yet closed or force-closed).
    pub fn open_count(&self) -> usize {
        lock(&self.inner).entries.len()
    }

    /// Number of open sockets tagged `tag`.
    pub fn open_count_for(&self, tag: &str) -> usize {
        lock(&self.inner)
            .entries
            .values()
            .filter(|e| e.tag == tag)
            .count()
    }
}

/// Membership of one socket in a [`SocketRegistry`]; carries the force-close signal.
pub struct SocketTicket {
    id: u64,
    registry: SocketRegistry,
    rx: watch::Receiver<Option<CloseMode>>,
}

impl fmt::Debug for SocketTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SocketTicket")
            .field("id", &self.id)
            .finish()
    }
}

impl SocketTicket {
    /// Resolves when the double force-closes this socket.
    pub async fn killed(&mut self) -> CloseMode {
        loop {
            if let Some(mode) = self.rx.borrow_and_update().clone() {
                return mode;
            }
            if self.rx.changed().await.is_err() {
                // Sender gone: a close was sent right before removal, or never will be.
                if let Some(mode) = self.rx.borrow().clone() {
                    return mode;
                }
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Drop for SocketTicket {
    fn drop(&mut self) {
        lock(&self.registry.inner).entries.remove(&self.id);
    }
}

/// Pipes frames between `client` and `upstream` until either side closes or `ticket` is
/// force-closed. Pings and pongs are answered locally on each side, not forwarded.
pub async fn pipe(
    client: WebSocket,
    upstream: UpstreamSocket,
    mut ticket: SocketTicket,
) -> PipeEnd {
    let (mut c_tx, mut c_rx) = client.split();
    let (mut u_tx, mut u_rx) = upstream.split();
    let end = loop {
        tokio::select! {
            mode = ticket.killed() => {
                if let CloseMode::Graceful { code, reason } = &mode {
                    let frame = AxCloseFrame { code: *code, reason: reason.as_str().into() };
                    let _ = tokio::time::timeout(
                        TEARDOWN_TIMEOUT,
                        c_tx.send(AxMessage::Close(Some(frame))),
                    )
                    .await;
                }
                let _ = tokio::time::timeout(TEARDOWN_TIMEOUT, u_tx.send(TMessage::Close(None))).await;
                break PipeEnd::Killed(mode);
            }
            msg = c_rx.next() => {
                let forward = match msg {
                    Some(Ok(AxMessage::Text(t))) => TMessage::text(t.as_str()),
                    Some(Ok(AxMessage::Binary(b))) => TMessage::Binary(b),
                    Some(Ok(AxMessage::Ping(_) | AxMessage::Pong(_))) => continue,
                    Some(Ok(AxMessage::Close(frame))) => {
                        let frame = frame.map(|f| TCloseFrame {
                            code: f.code.into(),
                            reason: f.reason.as_str().into(),
                        });
                        let _ = tokio::time::timeout(TEARDOWN_TIMEOUT, u_tx.send(TMessage::Close(frame))).await;
                        break PipeEnd::ClientClosed;
                    }
                    Some(Err(_)) | None => {
                        let _ = tokio::time::timeout(TEARDOWN_TIMEOUT, u_tx.send(TMessage::Close(None))).await;
                        break PipeEnd::ClientClosed;
                    }
                };
                if u_tx.send(forward).await.is_err() {
                    break PipeEnd::UpstreamClosed;
                }
            }
            msg = u_rx.next() => {
                let forward = match msg {
                    Some(Ok(TMessage::Text(t))) => AxMessage::Text(t.as_str().into()),
                    Some(Ok(TMessage::Binary(b))) => AxMessage::Binary(b),
                    Some(Ok(TMessage::Ping(_) | TMessage::Pong(_) | TMessage::Frame(_))) => continue,
                    Some(Ok(TMessage::Close(frame))) => {
                        let frame = frame.map(|f| AxCloseFrame {
                            code: f.code.into(),
                            reason: f.reason.as_str().into(),
                        });
                        let _ = tokio::time::timeout(TEARDOWN_TIMEOUT, c_tx.send(AxMessage::Close(frame))).await;
                        break PipeEnd::UpstreamClosed;
                    }
                    // Chromium went away without a handshake: mirror that (drop the client).
                    Some(Err(_)) | None => break PipeEnd::UpstreamClosed,
                };
                if c_tx.send(forward).await.is_err() {
                    break PipeEnd::ClientClosed;
                }
            }
        }
    };
    drop(ticket);
    tracing::debug!(?end, "proxied socket ended");
    end
}
