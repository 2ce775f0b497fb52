//! [`LiveViewChannel`]: the live view's socket, as a viewer page opens it, for programs that
//! play the user (tests, demos, an app's own viewer).

use std::time::Duration;

use abr_protocol::{ErrorEnvelope, LiveModifiers, LiveViewEvent, LiveViewInput};
use futures::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use url::Url;

use crate::error::{ClientError, Operation, TransportKind};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// What the runner sent on a live view's socket.
#[derive(Clone, PartialEq, Eq)]
pub enum LiveMessage {
    /// An event ([`LiveViewEvent::Frame`]'s picture arrives as the next [`LiveMessage::Picture`]).
    Event(LiveViewEvent),
    /// A frame's picture (JPEG).
    Picture(Vec<u8>),
}

impl std::fmt::Debug for LiveMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Event(event) => f.debug_tuple("Event").field(event).finish(),
            Self::Picture(jpeg) => f
                .debug_struct("Picture")
                .field("bytes", &jpeg.len())
                .finish(),
        }
    }
}

/// A live view's socket (`<liveViewUrl>/ws`), opened with the `Origin` of the live view's
/// own page, as a browser showing it would.
pub struct LiveViewChannel {
    socket: Socket,
}

impl std::fmt::Debug for LiveViewChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveViewChannel").finish_non_exhaustive()
    }
}

fn transport(kind: TransportKind, message: impl Into<String>) -> ClientError {
    ClientError::Transport {
        operation: Operation::LiveView,
        kind,
        message: message.into(),
    }
}

impl LiveViewChannel {
    /// Opens the socket of the live view at `live_view_url` (as handed out by capture
    /// start), within `timeout`.
    ///
    /// # Errors
    /// [`ClientError::Api`] when the runner refused (`live_view_not_found`,
    /// `live_view_limit`, `origin_not_allowed`), [`ClientError::Transport`] when it could not
    /// be reached, [`ClientError::InvalidArgument`] for a URL that is not a live-view URL.
    pub async fn connect(live_view_url: &str, timeout: Duration) -> Result<Self, ClientError> {
        let page = Url::parse(live_view_url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| ClientError::InvalidArgument {
                message: "the live-view URL must be an http(s) URL".into(),
            })?;
        let origin = page.origin().ascii_serialization();
        let mut socket_url = page.clone();
        let scheme = if page.scheme() == "https" {
            "wss"
        } else {
            "ws"
        };
        let _ = socket_url.set_scheme(scheme);
        socket_url.set_path(&format!("{}/ws", page.path().trim_end_matches('/')));
        let mut request = socket_url.as_str().into_client_request().map_err(|_| {
            ClientError::InvalidArgument {
                message: "the live-view URL cannot be opened as a socket".into(),
            }
        })?;
        let origin = HeaderValue::from_str(&origin).map_err(|_| ClientError::InvalidArgument {
            message: "the live-view URL has no usable origin".into(),
        })?;
        request.headers_mut().insert("origin", origin);
        let connect = tokio_tungstenite::connect_async(request);
        match tokio::time::timeout(timeout, connect).await {
            Err(_) => Err(transport(
                TransportKind::Timeout,
                "opening the live view timed out",
            )),
            Ok(Ok((socket, _))) => Ok(Self { socket }),
            Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
                let status = response.status().as_u16();
                let envelope = response
                    .body()
                    .as_deref()
                    .and_then(|b| serde_json::from_slice::<ErrorEnvelope>(b).ok());
                Err(match envelope {
                    Some(e) => ClientError::Api {
                        status,
                        code: e.error.code,
                        message: e.error.message,
                        retryable: e.error.retryable,
                        retry_after: None,
                    },
                    None => ClientError::Api {
                        status,
                        code: format!("http_{status}"),
                        message: "the runner refused the live view's socket".into(),
                        retryable: false,
                        retry_after: None,
                    },
                })
            }
            Ok(Err(e)) => Err(transport(TransportKind::Connect, e.to_string())),
        }
    }

    /// The next message, or `None` once the socket closed.
    ///
    /// # Errors
    /// [`ClientError::Transport`] when the socket failed, [`ClientError::Decode`] for a
    /// message that is not of the protocol.
    pub async fn next(&mut self) -> Result<Option<LiveMessage>, ClientError> {
        while let Some(message) = self.socket.next().await {
            match message.map_err(|e| transport(TransportKind::Other, e.to_string()))? {
                Message::Text(text) => {
                    let event = serde_json::from_str(&text).map_err(|e| ClientError::Decode {
                        operation: Operation::LiveView,
                        status: 101,
                        message: e.to_string(),
                    })?;
                    return Ok(Some(LiveMessage::Event(event)));
                }
                Message::Binary(jpeg) => return Ok(Some(LiveMessage::Picture(jpeg.to_vec()))),
                Message::Close(_) => return Ok(None),
                _ => {}
            }
        }
        Ok(None)
    }

    /// Waits (at most `timeout`) for the first picture: the browser is on screen.
    ///
    /// # Errors
    /// [`ClientError::Transport`] of kind `Timeout` when none came, or the socket's.
    pub async fn wait_for_picture(&mut self, timeout: Duration) -> Result<(), ClientError> {
        let first = async {
            loop {
                match self.next().await? {
                    Some(LiveMessage::Picture(_)) => return Ok(()),
                    Some(LiveMessage::Event(LiveViewEvent::Closed { reason })) => {
                        return Err(transport(
                            TransportKind::Other,
                            format!("the live view closed: {reason}"),
                        ));
                    }
                    Some(_) => {}
                    None => {
                        return Err(transport(TransportKind::Other, "the live view closed"));
                    }
                }
            }
        };
        tokio::time::timeout(timeout, first)
            .await
            .map_err(|_| transport(TransportKind::Timeout, "the live view showed no picture"))?
    }

    /// Sends one input.
    ///
    /// # Errors
    /// [`ClientError::Transport`] when the socket is closed.
    pub async fn send(&mut self, input: &LiveViewInput) -> Result<(), ClientError> {
        let text = serde_json::to_string(input).map_err(|e| ClientError::InvalidArgument {
            message: e.to_string(),
        })?;
        self.socket
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| transport(TransportKind::Other, e.to_string()))
    }

    /// Types `text` (as a person's keyboard or input method would insert it).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub async fn type_text(&mut self, text: &str) -> Result<(), ClientError> {
        self.send(&LiveViewInput::Text { text: text.into() }).await
    }

    /// Presses an editing key (`Enter`, `Tab`, `Backspace`, ...).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub async fn press(&mut self, key: &str) -> Result<(), ClientError> {
        self.send(&LiveViewInput::Key {
            key: key.into(),
            modifiers: LiveModifiers::default(),
        })
        .await
    }

    /// Closes the socket.
    pub async fn close(mut self) {
        let _ = self.socket.close(None).await;
    }
}
