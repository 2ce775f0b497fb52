//! Streams over the relay: a WebSocket (the live view's) carried on a runner's socket.
//!
//! The hub opens a stream with `streamOpen`; the runner opens the WebSocket against its own
//! router, in-process (the router served on an in-memory pipe, a WebSocket client on the
//! other end), marked as checked by the hub (`crate::live::origin_checked_by_hub`); both sides pump messages as `streamData` until either
//! sends `streamClose`. A socket carries at most [`MAX_STREAMS`] streams, each message at
//! most [`MAX_STREAM_MESSAGE`] bytes, and every stream ends with its socket.

use std::collections::HashMap;
use std::time::Duration;

use abr_protocol::relay::RelayFrame;
use axum::Router;
use axum::body::{Body, Bytes};
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tower::ServiceExt as _;

use super::{frame, valid_live_token};

/// Streams open at once on one runner socket.
pub(crate) const MAX_STREAMS: usize = 16;
/// The largest message of a stream (a frame of the live view is far smaller).
pub(crate) const MAX_STREAM_MESSAGE: usize = 8 * 1024 * 1024;
/// Messages queued for one stream before it is dropped as too slow.
pub(crate) const STREAM_QUEUE: usize = 64;
/// Bound of the in-process WebSocket handshake on the runner.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// One message of a stream.
#[derive(Debug)]
pub(crate) struct StreamMessage {
    /// A text message (its payload is UTF-8).
    pub(crate) text: bool,
    /// The payload.
    pub(crate) payload: Bytes,
}

/// The frame of one stream message.
pub(crate) fn data_frame(stream: u64, message: &StreamMessage) -> Option<Bytes> {
    frame::encode(
        &RelayFrame::StreamData {
            stream,
            text: message.text,
        },
        &message.payload,
    )
    .ok()
}

/// The frame that ends `stream`.
pub(crate) fn close_frame(stream: u64) -> Option<Bytes> {
    frame::encode(&RelayFrame::StreamClose { stream }, &[]).ok()
}

/// Whether `path` is a live view's socket: `/live/{token}/ws` and nothing else.
pub(crate) fn is_live_socket_path(path: &str) -> bool {
    path.strip_prefix("/live/")
        .and_then(|rest| rest.strip_suffix("/ws"))
        .is_some_and(valid_live_token)
}

/// The runner's streams on one connection: dropped with it (every stream task is aborted,
/// which closes its WebSocket on the runner's router).
#[derive(Default)]
pub(crate) struct RunnerStreams {
    senders: HashMap<u64, mpsc::Sender<StreamMessage>>,
    tasks: JoinSet<u64>,
}

impl RunnerStreams {
    /// Opens stream `id` at `path` on `app`; answers the frame to send back when it is
    /// refused (too many streams, a path that is not a live view's socket, a reused id).
    pub(crate) fn open(
        &mut self,
        app: &Router,
        id: u64,
        path: String,
        out: &mpsc::Sender<Message>,
    ) -> Option<Message> {
        if self.senders.len() >= MAX_STREAMS
            || self.senders.contains_key(&id)
            || !is_live_socket_path(&path)
        {
            return close_frame(id).map(Message::Binary);
        }
        let (to_stream, from_hub) = mpsc::channel(STREAM_QUEUE);
        self.senders.insert(id, to_stream);
        self.tasks
            .spawn(serve(app.clone(), id, path, from_hub, out.clone()));
        None
    }

    /// Hands a message of the hub to stream `id`; a stream that cannot keep up is ended.
    pub(crate) fn deliver(&mut self, id: u64, message: StreamMessage) {
        let Some(sender) = self.senders.get(&id) else {
            return;
        };
        if message.payload.len() > MAX_STREAM_MESSAGE || sender.try_send(message).is_err() {
            // Its task sees the channel closed, closes its socket and says so.
            self.senders.remove(&id);
        }
    }

    /// The hub ended stream `id`.
    pub(crate) fn close(&mut self, id: u64) {
        self.senders.remove(&id);
    }

    /// Waits for a stream task to end and forgets it (pending forever with none).
    pub(crate) async fn ended(&mut self) {
        match self.tasks.join_next().await {
            Some(Ok(id)) => {
                self.senders.remove(&id);
            }
            Some(Err(_)) => {}
            None => std::future::pending().await,
        }
    }
}

/// One stream on the runner: the WebSocket opened on the router, pumped both ways until
/// either side ends; then `streamClose` goes to the hub.
async fn serve(
    app: Router,
    id: u64,
    path: String,
    from_hub: mpsc::Receiver<StreamMessage>,
    out: mpsc::Sender<Message>,
) -> u64 {
    if let Err(why) = pipe(app, id, &path, from_hub, &out).await {
        tracing::debug!(target: "abr::relay", why, "a relayed stream ended");
    }
    if let Some(close) = close_frame(id) {
        let _ = out.send(Message::Binary(close)).await;
    }
    id
}

/// Aborts the in-process connection's task when the stream ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn pipe(
    app: Router,
    id: u64,
    path: &str,
    mut from_hub: mpsc::Receiver<StreamMessage>,
    out: &mpsc::Sender<Message>,
) -> Result<(), &'static str> {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let service = tower::service_fn(move |request: axum::http::Request<hyper::body::Incoming>| {
        let mut request = request.map(Body::new);
        // The hub checked the viewer's Origin; a request from the network never has this.
        crate::live::origin_checked_by_hub(&mut request);
        app.clone().oneshot(request)
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(server_io), TowerToHyperService::new(service))
        .with_upgrades();
    let _server = AbortOnDrop(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_STREAM_MESSAGE))
        .max_frame_size(Some(MAX_STREAM_MESSAGE));
    let url = format!("ws://relay.localhost{path}");
    let handshake = tokio_tungstenite::client_async_with_config(url, client_io, Some(config));
    let (mut socket, _) = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
        .await
        .map_err(|_| "the handshake timed out")?
        .map_err(|_| "the runner refused the socket")?;
    loop {
        tokio::select! {
            message = from_hub.recv() => {
                let Some(message) = message else {
                    let _ = socket.close(None).await;
                    return Ok(());
                };
                let message = if message.text {
                    let text = String::from_utf8(message.payload.to_vec())
                        .map_err(|_| "a text message that is not UTF-8")?;
                    Message::text(text)
                } else {
                    Message::Binary(message.payload)
                };
                socket.send(message).await.map_err(|_| "the runner's socket closed")?;
            }
            message = socket.next() => {
                let message = match message {
                    Some(Ok(Message::Text(text))) => StreamMessage {
                        text: true,
                        payload: Bytes::copy_from_slice(text.as_bytes()),
                    },
                    Some(Ok(Message::Binary(payload))) => StreamMessage { text: false, payload },
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                    Some(Ok(Message::Close(_))) | None => return Ok(()),
                    Some(Err(_)) => return Err("the runner's socket failed"),
                };
                let frame = data_frame(id, &message).ok_or("an unencodable message")?;
                out.send(Message::Binary(frame)).await.map_err(|_| "the hub connection is gone")?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_live_views_socket_is_opened() {
        assert!(is_live_socket_path("/live/abcDEF-_09/ws"));
        for bad in [
            "/live//ws",
            "/live/abc",
            "/live/abc/ws?x=1",
            "/live/a/b/ws",
            "/v1/capture/start",
            "/live/abc/view/ws",
            "/live/../v1/ws",
        ] {
            assert!(!is_live_socket_path(bad), "{bad}");
        }
    }
}
