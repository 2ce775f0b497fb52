//! The runner's side of the relay: [`run`] keeps one outbound connection to the hub and
//! serves the requests it forwards on the runner's own router, in-process.
//!
//! It mints a relay token with its credential (the runner credential enrollment gave it,
//! or an operator's key for a runner id nobody enrolled), used for nothing else, then
//! connects, says hello, serves forwarded requests concurrently, pings every `heartbeat`
//! and drops a hub silent for `dead_after`, and reconnects with exponential backoff and
//! full jitter (a fresh token each time) when the hub goes away or restarts. A request in
//! flight when the connection drops goes on to its end on the runner (its record answers
//! a repeat later), unless it had not passed its commit point: then it does not commit
//! (see `abr_engine::commit_watch`), since the hub answered "nothing was done".

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use abr_core::{OsRandom, RandomSource};
use abr_engine::commit_watch;
use abr_engine::commit_watch::{CommitHook, CommitRefused, CommitWatch};
use abr_protocol::relay::{RelayFrame, RelayHello, RelayTokenRequest, RelayTokenResponse};
use abr_protocol::{ErrorEnvelope, codes};
use async_trait::async_trait;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode};
use futures::{SinkExt, StreamExt};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tower::ServiceExt as _;
use url::Url;

use super::stream::{RunnerStreams, StreamMessage};
use super::{RelayError, Relayed, frame, valid_host, valid_runner_id};

/// How the runner's link is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Keep serving.
    Running,
    /// Take no new requests (they are answered `runner_draining`), let those in flight
    /// finish, then close.
    Drain,
    /// Close at once.
    Now,
}

impl Shutdown {
    /// Moves to `wanted` if that is further along (running → drain → now): whether it
    /// moved. A drain never undoes an immediate stop.
    pub fn advance(&mut self, wanted: Self) -> bool {
        let rank = |s: Self| match s {
            Self::Running => 0,
            Self::Drain => 1,
            Self::Now => 2,
        };
        if rank(wanted) > rank(*self) {
            *self = wanted;
            true
        } else {
            false
        }
    }
}

/// Where and as whom the runner connects.
pub struct LinkOptions {
    /// The hub's base URL (`https://hub.example`, or `http://` on loopback).
    pub hub: Url,
    /// What mints the relay tokens: the runner's own credential (`abr hub enroll`, then
    /// `abr up --enroll`), or an operator's token of the hub. Used for nothing else.
    pub credential: SecretString,
    /// The runner id (1 to 64 of `A-Z a-z 0-9 . _ -`).
    pub runner_id: String,
    /// This machine's name.
    pub host: String,
    /// Replace the runner connected to the hub with this id, from whatever host.
    pub force: bool,
    /// How the runner was launched (`foreground`, `background`).
    pub launch: String,
    /// How often to ping the hub (default 10 s).
    pub heartbeat: Duration,
    /// A hub silent this long is dead (default 30 s).
    pub dead_after: Duration,
    /// The first reconnect delay's bound (default 500 ms), doubled per attempt.
    pub backoff_base: Duration,
    /// The largest reconnect delay (default 30 s).
    pub backoff_cap: Duration,
    /// The largest frame either way, body included (default 32 MiB).
    pub max_frame_bytes: usize,
    /// What the runner does when the hub asks it to update ([`RelayFrame::Update`]):
    /// whether it accepted, and what it says (none: it refuses, it cannot update itself).
    pub updates: Option<Arc<dyn UpdateHandler>>,
}

/// How a runner answers the hub's remote update.
pub trait UpdateHandler: Send + Sync + 'static {
    /// Looks at the installed release and, when it is newer, starts restarting on it
    /// (after the running work): whether it did, and what it says of it.
    fn update(&self) -> (bool, String);
}

impl LinkOptions {
    /// Options with the default timings, not forcing, launched `foreground`.
    pub fn new(hub: Url, credential: SecretString, runner_id: String, host: String) -> Self {
        Self {
            hub,
            credential,
            runner_id,
            host,
            force: false,
            launch: "foreground".into(),
            heartbeat: Duration::from_secs(10),
            dead_after: Duration::from_secs(30),
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(30),
            max_frame_bytes: 32 * 1024 * 1024,
            updates: None,
        }
    }
}

impl std::fmt::Debug for LinkOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkOptions")
            .field("hub", &self.hub.origin().ascii_serialization())
            .field("runner_id", &self.runner_id)
            .field("host", &self.host)
            .field("force", &self.force)
            .field("launch", &self.launch)
            .finish_non_exhaustive()
    }
}

/// Connects the runner whose router is `app` to the hub and serves it until `shutdown`
/// says otherwise, reconnecting as long as it takes.
///
/// # Errors
/// Only what reconnecting cannot fix ([`RelayError::is_permanent`]): unusable options, an
/// API token the hub refuses, a runner with this id already connected to the hub (without
/// `force`), or a forced takeover by another runner. Requests in flight finish first.
pub async fn run(
    app: Router,
    options: LinkOptions,
    mut shutdown: watch::Receiver<Shutdown>,
) -> Result<(), RelayError> {
    if !valid_runner_id(&options.runner_id) {
        return Err(RelayError::InvalidOptions(
            "the runner id must be 1 to 64 of A-Z a-z 0-9 . _ -".into(),
        ));
    }
    if !valid_host(&options.host) {
        return Err(RelayError::InvalidOptions(
            "the host name is empty or too long".into(),
        ));
    }
    if !matches!(options.hub.scheme(), "http" | "https") {
        return Err(RelayError::InvalidOptions(
            "the hub URL must be http(s)".into(),
        ));
    }
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(options.dead_after.max(Duration::from_secs(5)))
        .build()
        .map_err(|e| RelayError::InvalidOptions(e.to_string()))?;
    let mut tasks = JoinSet::new();
    let mut attempt: u32 = 0;
    loop {
        let mode = *shutdown.borrow();
        if mode != Shutdown::Running {
            return finish(tasks, mode).await;
        }
        match session(&app, &options, &http, &mut shutdown, &mut tasks).await {
            Ok(Ended::Stopped(mode)) => return finish(tasks, mode).await,
            Ok(Ended::Lost { welcomed }) => {
                if welcomed {
                    attempt = 0;
                }
                tracing::warn!(target: "abr::relay", "the hub connection was lost: reconnecting");
            }
            Err(e) if e.is_permanent() => {
                finish(tasks, Shutdown::Drain).await?;
                return Err(e);
            }
            Err(e) => tracing::warn!(target: "abr::relay", error = %e, "reconnecting"),
        }
        let delay = backoff(&options, attempt);
        attempt = attempt.saturating_add(1);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Full jitter: uniformly in `[0, min(cap, base · 2^attempt)]`.
fn backoff(options: &LinkOptions, attempt: u32) -> Duration {
    let ceiling = options
        .backoff_base
        .saturating_mul(2u32.saturating_pow(attempt.min(20)))
        .min(options.backoff_cap);
    let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(OsRandom.next_u64() % millis.saturating_add(1))
}

/// Lets the requests in flight finish (`Drain`) or drops them (`Now`).
async fn finish(mut tasks: JoinSet<()>, mode: Shutdown) -> Result<(), RelayError> {
    if mode == Shutdown::Now {
        tasks.abort_all();
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// How a connection ended without a permanent error.
enum Ended {
    Stopped(Shutdown),
    Lost { welcomed: bool },
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Acknowledgements of commit announcements, by request id.
type Acks = Arc<Mutex<HashMap<u64, oneshot::Sender<()>>>>;

fn lock_acks(acks: &Acks) -> MutexGuard<'_, HashMap<u64, oneshot::Sender<()>>> {
    acks.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn mint(
    options: &LinkOptions,
    http: &reqwest::Client,
) -> Result<RelayTokenResponse, RelayError> {
    let url = options
        .hub
        .join("/v1/relay/tokens")
        .map_err(|e| RelayError::InvalidOptions(e.to_string()))?;
    let response = http
        .post(url)
        .bearer_auth(options.credential.expose_secret())
        .json(&RelayTokenRequest {
            runner_id: options.runner_id.clone(),
        })
        .send()
        .await
        .map_err(|e| RelayError::Hub(format!("minting a relay token: {}", e.without_url())))?;
    match response.status() {
        StatusCode::OK => response
            .json()
            .await
            .map_err(|_| RelayError::Hub("the hub's relay token is unreadable".into())),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(RelayError::Unauthorized),
        StatusCode::UNPROCESSABLE_ENTITY => Err(RelayError::InvalidOptions(
            "the hub refused the runner id".into(),
        )),
        status => Err(RelayError::Hub(format!(
            "minting a relay token: HTTP {status}"
        ))),
    }
}

async fn connect(options: &LinkOptions, token: &RelayTokenResponse) -> Result<Socket, RelayError> {
    let mut url = options
        .hub
        .join(&token.connect_path)
        .map_err(|e| RelayError::InvalidOptions(e.to_string()))?;
    let scheme = if url.scheme() == "https" { "wss" } else { "ws" };
    url.set_scheme(scheme)
        .map_err(|()| RelayError::InvalidOptions("the hub URL".into()))?;
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| RelayError::InvalidOptions(e.to_string()))?;
    let bearer = HeaderValue::from_str(&format!("Bearer {}", token.token.expose()))
        .map_err(|_| RelayError::Protocol("an unusable relay token"))?;
    request.headers_mut().insert("authorization", bearer);
    let config = WebSocketConfig::default()
        .max_message_size(Some(options.max_frame_bytes))
        .max_frame_size(Some(options.max_frame_bytes));
    let connecting = tokio_tungstenite::connect_async_with_config(request, Some(config), false);
    match tokio::time::timeout(options.dead_after, connecting).await {
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => Err(RelayError::Hub(
            format!("the hub refused the connection: HTTP {}", response.status()),
        )),
        Ok(Err(e)) => Err(RelayError::Hub(format!("connecting: {e}"))),
        Err(_) => Err(RelayError::Hub("connecting timed out".into())),
    }
}

fn binary(frame: &RelayFrame, body: &[u8]) -> Option<Message> {
    frame::encode(frame, body).ok().map(Message::Binary)
}

/// One connection: mint, connect, hello, serve until it ends.
async fn session(
    app: &Router,
    options: &LinkOptions,
    http: &reqwest::Client,
    shutdown: &mut watch::Receiver<Shutdown>,
    tasks: &mut JoinSet<()>,
) -> Result<Ended, RelayError> {
    let token = mint(options, http).await?;
    let mut socket = connect(options, &token).await?;
    let hello = RelayFrame::Hello(RelayHello {
        runner_id: options.runner_id.clone(),
        host: options.host.clone(),
        force: options.force,
        version: env!("CARGO_PKG_VERSION").into(),
        launch: options.launch.clone(),
    });
    let hello = binary(&hello, &[]).ok_or(RelayError::Protocol("unencodable hello"))?;
    socket
        .send(hello)
        .await
        .map_err(|e| RelayError::Hub(format!("sending the hello: {e}")))?;
    match tokio::time::timeout(options.dead_after, welcome(&mut socket)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(RelayError::Hub("the hub did not answer the hello".into())),
    }
    tracing::info!(target: "abr::relay", runner_id = options.runner_id, "connected to the hub");
    let (out, mut outbound) = mpsc::channel::<Message>(64);
    let acks: Acks = Arc::default();
    // Dropped with the connection: every live view carried on it is closed.
    let mut streams = RunnerStreams::default();
    let mut ticker = tokio::time::interval(options.heartbeat);
    let mut last_seen = Instant::now();
    let mut draining = *shutdown.borrow() == Shutdown::Drain;
    let lost = Ended::Lost { welcomed: true };
    loop {
        if draining && tasks.is_empty() {
            // The last answers are queued: they go out before the close.
            while let Ok(message) = outbound.try_recv() {
                if socket.send(message).await.is_err() {
                    break;
                }
            }
            let _ = socket.close(None).await;
            return Ok(Ended::Stopped(Shutdown::Drain));
        }
        tokio::select! {
            received = socket.next() => match received {
                Some(Ok(Message::Binary(bytes))) => {
                    last_seen = Instant::now();
                    match frame::decode(&bytes) {
                        Ok((RelayFrame::Request { id, method, path, headers }, body)) => {
                            if draining {
                                if let Some(reply) = draining_reply(id)
                                    && socket.send(reply).await.is_err()
                                {
                                    return Ok(lost);
                                }
                            } else {
                                let watch = CommitWatch::new(Arc::new(LinkWatch {
                                    id,
                                    out: out.clone(),
                                    acks: Arc::clone(&acks),
                                    wait: options.dead_after,
                                }));
                                let call = Call { id, method, path, headers, body };
                                tasks.spawn(serve(app.clone(), call, watch, out.clone(), options.max_frame_bytes));
                            }
                        }
                        Ok((RelayFrame::CommitAck { id }, _)) => {
                            if let Some(ack) = lock_acks(&acks).remove(&id) {
                                let _ = ack.send(());
                            }
                        }
                        Ok((RelayFrame::StreamOpen { stream, path, .. }, _)) => {
                            let refused = if draining {
                                super::stream::close_frame(stream).map(Message::Binary)
                            } else {
                                streams.open(app, stream, path, &out)
                            };
                            if let Some(refused) = refused
                                && socket.send(refused).await.is_err()
                            {
                                return Ok(lost);
                            }
                        }
                        Ok((RelayFrame::StreamData { stream, text }, payload)) => {
                            streams.deliver(stream, StreamMessage { text, payload });
                        }
                        Ok((RelayFrame::StreamClose { stream }, _)) => streams.close(stream),
                        Ok((RelayFrame::Replaced, _)) => return Err(RelayError::Replaced),
                        Ok((RelayFrame::Update, _)) => {
                            let (accepted, message) = match &options.updates {
                                Some(handler) => {
                                    let handler = Arc::clone(handler);
                                    tokio::task::spawn_blocking(move || handler.update())
                                        .await
                                        .unwrap_or_else(|_| (false, "the update check failed".into()))
                                }
                                None => (false, "this runner does not update itself".into()),
                            };
                            tracing::info!(target: "abr::relay", accepted, %message, "the hub asked for an update");
                            if let Some(answer) = binary(&RelayFrame::UpdateAnswer { accepted, message }, &[])
                                && socket.send(answer).await.is_err()
                            {
                                return Ok(lost);
                            }
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!(target: "abr::relay", error = %e, "ignored"),
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Ok(lost),
                Some(Ok(_)) => last_seen = Instant::now(),
            },
            Some(message) = outbound.recv() => {
                if socket.send(message).await.is_err() {
                    return Ok(lost);
                }
            }
            _ = ticker.tick() => {
                if last_seen.elapsed() > options.dead_after {
                    tracing::warn!(target: "abr::relay", "the hub is silent: reconnecting");
                    return Ok(lost);
                }
                if socket.send(Message::Ping(Bytes::new())).await.is_err() {
                    return Ok(lost);
                }
            }
            changed = shutdown.changed() => {
                let mode = if changed.is_err() { Shutdown::Drain } else { *shutdown.borrow() };
                match mode {
                    Shutdown::Running => {}
                    Shutdown::Drain => {
                        if !draining {
                            draining = true;
                            if let Some(frame) = binary(&RelayFrame::Draining, &[])
                                && socket.send(frame).await.is_err()
                            {
                                return Ok(Ended::Stopped(Shutdown::Drain));
                            }
                        }
                    }
                    Shutdown::Now => {
                        let _ = socket.close(None).await;
                        return Ok(Ended::Stopped(Shutdown::Now));
                    }
                }
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            () = streams.ended() => {}
        }
    }
}

/// Waits for the hub's welcome (or its refusal).
async fn welcome(socket: &mut Socket) -> Result<(), RelayError> {
    loop {
        match socket.next().await {
            Some(Ok(Message::Binary(bytes))) => {
                return match frame::decode(&bytes)? {
                    (RelayFrame::Welcome { .. }, _) => Ok(()),
                    (RelayFrame::Refused { status, error }, _)
                        if status == codes::RUNNER_CONFLICT.status =>
                    {
                        Err(RelayError::Conflict(error.message))
                    }
                    (RelayFrame::Refused { error, .. }, _)
                        if error.code == codes::RUNNER_TOO_OLD.code =>
                    {
                        Err(RelayError::TooOld(error.message))
                    }
                    (RelayFrame::Refused { error, .. }, _) => {
                        Err(RelayError::InvalidOptions(error.message))
                    }
                    _ => Err(RelayError::Protocol(
                        "the hub's first frame is not a welcome",
                    )),
                };
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            _ => return Err(RelayError::Hub("the hub closed before its welcome".into())),
        }
    }
}

fn envelope(id: u64, status: u16, body: &ErrorEnvelope) -> Option<Message> {
    let bytes = serde_json::to_vec(body).ok()?;
    binary(
        &RelayFrame::Response {
            id,
            status,
            headers: vec![("content-type".into(), "application/json".into())],
        },
        &bytes,
    )
}

fn draining_reply(id: u64) -> Option<Message> {
    let code = codes::RUNNER_DRAINING;
    envelope(
        id,
        code.status,
        &ErrorEnvelope {
            error: code.body("the runner is shutting down and takes no new work; nothing was done"),
        },
    )
}

/// A forwarded request as it came.
struct Call {
    id: u64,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Bytes,
}

fn request(call: Call) -> Option<Request<Body>> {
    let method = Method::from_bytes(call.method.as_bytes()).ok()?;
    if !call.path.starts_with('/') {
        return None;
    }
    let mut builder = Request::builder().method(method).uri(call.path);
    let mut principal = None;
    for (name, value) in call.headers {
        if name.eq_ignore_ascii_case(abr_protocol::relay::PRINCIPAL_HEADER) {
            // The hub's word on who called (a malformed one fails the request closed).
            principal = Some(relayed_principal(&value)?);
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
        let value = HeaderValue::from_str(&value).ok()?;
        builder = builder.header(name, value);
    }
    let mut request = builder.body(Body::from(call.body)).ok()?;
    request.extensions_mut().insert(Relayed {
        principal,
        _private: (),
    });
    Some(request)
}

/// The principal a hub names in [`PRINCIPAL_HEADER`](abr_protocol::relay::PRINCIPAL_HEADER).
fn relayed_principal(value: &str) -> Option<Arc<abr_core::principal::Principal>> {
    let named: abr_protocol::relay::RelayedPrincipal = serde_json::from_str(value).ok()?;
    let tenants = named
        .tenant_id
        .map_or(abr_core::principal::Tenants::All, |t| {
            abr_core::principal::Tenants::One(t)
        });
    abr_core::principal::Principal::new(
        named.key_id,
        &named.name,
        named.role,
        tenants,
        named.read_only,
    )
    .ok()
    .map(Arc::new)
}

/// Runs one forwarded request on the runner's router and sends its answer.
async fn serve(
    app: Router,
    call: Call,
    watch: CommitWatch,
    out: mpsc::Sender<Message>,
    max_frame: usize,
) {
    let id = call.id;
    let Some(request) = request(call) else {
        let code = codes::INVALID_REQUEST;
        if let Some(reply) = envelope(
            id,
            code.status,
            &ErrorEnvelope {
                error: code.body("the relayed request is malformed"),
            },
        ) {
            let _ = out.send(reply).await;
        }
        return;
    };
    let response = match commit_watch::scope(watch, app.oneshot(request)).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let (parts, body) = response.into_parts();
    let reply = match axum::body::to_bytes(body, max_frame.saturating_sub(frame::MAX_HEAD)).await {
        Ok(bytes) => {
            let headers = parts
                .headers
                .iter()
                .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect();
            binary(
                &RelayFrame::Response {
                    id,
                    status: parts.status.as_u16(),
                    headers,
                },
                &bytes,
            )
        }
        Err(_) => {
            let code = codes::RELAY_FRAME_TOO_LARGE;
            envelope(
                id,
                code.status,
                &ErrorEnvelope {
                    error: code.body("the runner's answer is over the relay's frame limit"),
                },
            )
        }
    };
    if let Some(reply) = reply {
        // The connection may be gone: the runner's records answer a repeat later.
        let _ = out.send(reply).await;
    }
}

/// Announces a forwarded request's commit point to the hub and waits for its ack.
struct LinkWatch {
    id: u64,
    out: mpsc::Sender<Message>,
    acks: Acks,
    wait: Duration,
}

#[async_trait]
impl CommitHook for LinkWatch {
    async fn committing(&self) -> Result<(), CommitRefused> {
        let (ack, acked) = oneshot::channel();
        lock_acks(&self.acks).insert(self.id, ack);
        let progress = binary(
            &RelayFrame::Progress {
                id: self.id,
                committing: true,
            },
            &[],
        )
        .ok_or_else(|| CommitRefused("unencodable progress".into()))?;
        let refused = || CommitRefused("the hub connection is gone".into());
        if self.out.send(progress).await.is_err() {
            lock_acks(&self.acks).remove(&self.id);
            return Err(refused());
        }
        match tokio::time::timeout(self.wait, acked).await {
            Ok(Ok(())) => Ok(()),
            _ => {
                lock_acks(&self.acks).remove(&self.id);
                Err(refused())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded_by_the_doubling_ceiling_and_the_cap() {
        let options = LinkOptions::new(
            Url::parse("http://127.0.0.1:1").unwrap(),
            SecretString::from("t".to_owned()),
            "r".into(),
            "h".into(),
        );
        for _ in 0..200 {
            assert!(backoff(&options, 0) <= Duration::from_millis(500));
            assert!(backoff(&options, 3) <= Duration::from_secs(4));
            assert!(backoff(&options, 40) <= Duration::from_secs(30));
        }
        // Full jitter: not always the ceiling.
        let distinct: std::collections::BTreeSet<_> =
            (0..50).map(|_| backoff(&options, 10)).collect();
        assert!(distinct.len() > 1);
    }

    #[test]
    fn the_debug_of_options_shows_no_credential() {
        let mut options = LinkOptions::new(
            Url::parse("https://user:pw@hub.example/x?k=secret-q").unwrap(),
            SecretString::from("api-secret-token".to_owned()),
            "r".into(),
            "h".into(),
        );
        options.force = true;
        let shown = format!("{options:?}");
        for secret in ["api-secret-token", "pw", "secret-q"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
