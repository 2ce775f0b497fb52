//! The hub's side: relay tokens, runner sockets, and forwarding a request over one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use abr_store::PlacementKind;

use abr_protocol::codes;
use abr_protocol::relay::{RelayFrame, RelayHello, RelayTokenRequest, RelayTokenResponse};
use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::live_tokens::{LiveTokens, rewrite};
use super::stream::{MAX_STREAM_MESSAGE, MAX_STREAMS, STREAM_QUEUE, StreamMessage, close_frame};
use super::tokens::{Grant, MintRefused, RelayTokens};
use super::{HubSettings, frame, valid_host, valid_runner_id};
use crate::api_error::{ApiError, ApiJson};

/// How a forwarded request ended when its socket did not answer it.
#[derive(Debug)]
enum Reply {
    Answered {
        status: u16,
        headers: Vec<(String, String)>,
        body: Bytes,
    },
    Dropped {
        committing: bool,
    },
}

struct Pending {
    reply: oneshot::Sender<Reply>,
    committing: bool,
}

/// One runner's live socket.
pub(crate) struct Conn {
    serial: u64,
    /// The host its hello named: shown, never trusted (it decides nothing).
    host: String,
    /// The tenant its credential serves (`None`: connected by an operator's token).
    tenant: Option<String>,
    /// The key id of the credential that opened it: only that credential replaces it
    /// (`force`).
    owner: String,
    /// What its hello said of it, and when it connected.
    version: String,
    launch: String,
    connected_at: time::OffsetDateTime,
    /// When it was last heard from (any frame).
    last_seen: Mutex<time::OffsetDateTime>,
    out: mpsc::Sender<Message>,
    pending: Mutex<HashMap<u64, Pending>>,
    /// The open streams: their viewer's side, by stream id.
    streams: Mutex<HashMap<u64, mpsc::Sender<StreamMessage>>>,
    draining: AtomicBool,
    replaced: watch::Sender<bool>,
    /// Its answer to the last remote update asked of it.
    update: Mutex<Option<String>>,
}

impl Conn {
    fn streams(&self) -> MutexGuard<'_, HashMap<u64, mpsc::Sender<StreamMessage>>> {
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn pending(&self) -> MutexGuard<'_, HashMap<u64, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers every request still in flight: the socket is gone.
    fn drop_pending(&self) {
        let pending: Vec<Pending> = self.pending().drain().map(|(_, p)| p).collect();
        for p in pending {
            let _ = p.reply.send(Reply::Dropped {
                committing: p.committing,
            });
        }
    }
}

struct Inner {
    /// Told whenever a runner connects (a call waiting for an offline runner wakes).
    connected: tokio::sync::Notify,
    settings: HubSettings,
    tokens: RelayTokens,
    /// The one live socket of each runner id.
    conns: Mutex<HashMap<String, Arc<Conn>>>,
    serials: AtomicU64,
    request_ids: AtomicU64,
    killed: watch::Sender<bool>,
    live: LiveTokens,
    /// In a fleet: where its runners' sockets are written down for the other replicas.
    places: OnceLock<crate::placement::Places>,
}

/// The hub's relay: the tokens it minted and the runners connected to it. Cheap to clone.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl Default for Hub {
    fn default() -> Self {
        Self::new(HubSettings::default())
    }
}

impl Hub {
    /// A hub with `settings` and no runner.
    pub fn new(settings: HubSettings) -> Self {
        let tokens = RelayTokens::new(settings.token_ttl, settings.max_tokens);
        Self {
            inner: Arc::new(Inner {
                connected: tokio::sync::Notify::new(),
                settings,
                tokens,
                conns: Mutex::new(HashMap::new()),
                serials: AtomicU64::new(1),
                request_ids: AtomicU64::new(1),
                killed: watch::channel(false).0,
                live: LiveTokens::new(),
                places: OnceLock::new(),
            }),
        }
    }

    /// Serves as a replica of a fleet: relay tokens are kept in the fleet's database (a
    /// runner may mint one through one replica and connect to another), and each runner's
    /// socket is written down, so that a call for it reaching another replica is forwarded
    /// here. Set once, before serving.
    pub(crate) fn join_fleet(&self, places: &crate::placement::Places) {
        self.inner.tokens.share(places.store());
        let _ = self.inner.places.set(places.clone());
    }

    fn conns(&self) -> MutexGuard<'_, HashMap<String, Arc<Conn>>> {
        self.inner
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The host named in the hello of `runner_id`'s live socket, if one is connected (what
    /// the runner says of itself: shown, never trusted).
    pub fn connected(&self, runner_id: &str) -> Option<String> {
        self.conns().get(runner_id).map(|c| c.host.clone())
    }

    /// The key id of the credential whose socket holds `runner_id` now, if one is connected.
    pub(crate) fn connected_by(&self, runner_id: &str) -> Option<String> {
        self.conns().get(runner_id).map(|c| c.owner.clone())
    }

    /// `reach(serves)` of `runner_id`'s live socket (`serves`: the tenant it serves, `None`
    /// for a runner an operator connected), once it is connected and `reach` answers
    /// something, waiting up to the hub's `offline_wait`; `None` after it. A runner the
    /// caller may not reach is waited for like an absent one: the answer and its time tell
    /// nothing about which runners are connected.
    pub(crate) async fn reach_within_wait<T>(
        &self,
        runner_id: &str,
        reach: impl Fn(Option<&str>) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + self.inner.settings.offline_wait;
        loop {
            let connected = self.inner.connected.notified();
            tokio::pin!(connected);
            // Registered before looking: a connection between the look and the wait wakes it.
            connected.as_mut().enable();
            let serves = self.conns().get(runner_id).map(|c| c.tenant.clone());
            if let Some(reached) = serves.and_then(|serves| reach(serves.as_deref())) {
                return Some(reached);
            }
            if tokio::time::timeout_at(deadline, connected).await.is_err() {
                return None;
            }
        }
    }

    /// The runners connected now, with the tenant each serves.
    pub(crate) fn runners(&self) -> Vec<(Option<String>, abr_protocol::relay::RunnerInfo)> {
        let silent_after = self.inner.settings.heartbeat * 2;
        let now = time::OffsetDateTime::now_utc();
        let mut runners: Vec<_> = self
            .conns()
            .iter()
            .map(|(id, conn)| {
                let last_seen = *conn
                    .last_seen
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                let health = if conn.draining.load(Ordering::SeqCst) {
                    abr_protocol::relay::RunnerHealth::Draining
                } else if now - last_seen > silent_after {
                    abr_protocol::relay::RunnerHealth::Silent
                } else {
                    abr_protocol::relay::RunnerHealth::Ok
                };
                (
                    conn.tenant.clone(),
                    abr_protocol::relay::RunnerInfo {
                        runner_id: id.clone(),
                        host: conn.host.clone(),
                        connected_at: conn.connected_at,
                        last_heartbeat_at: last_seen,
                        health,
                        version: conn.version.clone(),
                        launch: conn.launch.clone(),
                        update: conn
                            .update
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .clone(),
                    },
                )
            })
            .collect();
        runners.sort_by(|a, b| a.1.runner_id.cmp(&b.1.runner_id));
        runners
    }

    /// Asks `runner_id`'s live socket, if `reaches` lets the caller reach the tenant it
    /// serves, to restart on a newer installed release ([`RelayFrame::Update`]): the
    /// version it runs now, or `None` when no such runner is connected (or its socket is
    /// full or gone).
    pub(crate) async fn request_update(
        &self,
        runner_id: &str,
        reaches: impl Fn(Option<&str>) -> bool,
    ) -> Option<String> {
        let conn = self
            .conns()
            .get(runner_id)
            .filter(|c| reaches(c.tenant.as_deref()))
            .cloned()?;
        let frame = frame::encode(&RelayFrame::Update, &[]).ok()?;
        *conn.update.lock().unwrap_or_else(PoisonError::into_inner) =
            Some("asked: no answer yet".to_owned());
        conn.out.send(Message::Binary(frame)).await.ok()?;
        Some(conn.version.clone())
    }

    /// Whether `runner_id`'s live socket is draining (none connected: `false`).
    pub fn draining(&self, runner_id: &str) -> bool {
        self.conns()
            .get(runner_id)
            .is_some_and(|c| c.draining.load(Ordering::SeqCst))
    }

    /// Drops every runner socket at once, without a close frame, and refuses new ones (as
    /// when the hub's process dies; for tests and an abrupt stop).
    pub fn kill(&self) {
        self.inner.killed.send_replace(true);
        let all: Vec<Arc<Conn>> = self.conns().drain().map(|(_, conn)| conn).collect();
        for conn in all {
            conn.drop_pending();
            self.forget(&conn);
        }
    }

    fn is_killed(&self) -> bool {
        *self.inner.killed.borrow()
    }

    /// The routes: `POST /v1/relay/tokens` (to put behind the bearer check) and the connect
    /// endpoint (authenticated by its relay token), on the hub's API keys `keys` (who holds
    /// an enrolled runner id; what a revoked key opened ends).
    pub(crate) fn routes<S: Clone + Send + Sync + 'static>(
        &self,
        keys: abr_engine::Keys,
    ) -> (ApiRouter<S>, ApiRouter<S>) {
        use crate::openapi::{Documented, Socket};
        let state = RelayState {
            hub: self.clone(),
            keys,
        };
        let tokens = ApiRouter::new()
            .api_route(
                TOKENS_PATH,
                post_with(mint, |o| {
                    o.id("mintRelayToken")
                        .summary("A short-lived relay token for a runner to connect (its credential's own runner id)")
                        .keyed()
                        .needs(abr_core::principal::Right::Relay)
                        .errors(&[codes::RUNNER_CONFLICT])
                }),
            )
            .with_state(state.clone());
        let connect = ApiRouter::new()
            .api_route(
                "/v1/relay/{runner_id}/connect",
                get_with(connect, |o| {
                    o.id("connectRunner")
                        .summary("A relay runner's outbound link (a WebSocket; a relay token as its bearer)")
                        .response::<101, Socket>()
                        .errors(&[
                            codes::UNAUTHORIZED,
                            codes::INVALID_REQUEST,
                            codes::WEBSOCKET_REQUIRED,
                            codes::RUNNER_TOO_OLD,
                            codes::RUNNER_CONFLICT,
                        ])
                }),
            )
            .with_state(state);
        (tokens, connect)
    }

    /// Ends the streams of a socket that is gone and forgets its live tokens.
    fn forget(&self, conn: &Conn) {
        conn.streams().clear();
        self.inner.live.forget_socket(conn.serial);
    }

    /// Forwards one request to `runner_id`'s live socket and answers what the runner
    /// answered, or the relay's own envelope. A live-view URL in the answer is moved to
    /// `public_base` (the hub's), and its token remembered for this socket.
    pub(crate) async fn forward(
        &self,
        runner_id: &str,
        method: &str,
        path: &str,
        headers: Vec<(String, String)>,
        body: Bytes,
        public_base: &str,
    ) -> Response {
        let conn = match self.conns().get(runner_id) {
            Some(conn) if conn.draining.load(Ordering::SeqCst) => {
                return ApiError::new(
                    codes::RUNNER_DRAINING,
                    "the runner is shutting down and takes no new work; nothing was done",
                )
                .into_response();
            }
            Some(conn) => Arc::clone(conn),
            None => {
                return ApiError::new(
                    codes::RUNNER_OFFLINE,
                    "no runner with this id is connected to the hub; nothing was done",
                )
                .into_response();
            }
        };
        match self.exchange(&conn, method, path, headers, body).await {
            Ok((status, headers, body)) => {
                let body = match rewrite(&body, public_base) {
                    Some((rewritten, token, ttl)) if (200..300).contains(&status) => {
                        self.inner
                            .live
                            .remember(&token, runner_id, conn.serial, ttl);
                        rewritten
                    }
                    _ => body,
                };
                answered(status, &headers, body)
            }
            Err(response) => response,
        }
    }

    /// One request and its answer over `conn`: status, headers and body as the runner said
    /// them (the caller decides what of it reaches the hub's origin), or the relay's
    /// envelope.
    pub(crate) async fn exchange(
        &self,
        conn: &Arc<Conn>,
        method: &str,
        path: &str,
        headers: Vec<(String, String)>,
        body: Bytes,
    ) -> Result<(u16, Vec<(String, String)>, Bytes), Response> {
        let id = self.inner.request_ids.fetch_add(1, Ordering::SeqCst);
        let request = RelayFrame::Request {
            id,
            method: method.to_owned(),
            path: path.to_owned(),
            headers,
        };
        let message = match frame::encode(&request, &body) {
            Ok(bytes) => Message::Binary(bytes),
            Err(_) => {
                return Err(
                    ApiError::new(codes::INVALID_REQUEST, "the request cannot be relayed")
                        .into_response(),
                );
            }
        };
        let (reply, answer) = oneshot::channel();
        conn.pending().insert(
            id,
            Pending {
                reply,
                committing: false,
            },
        );
        // Leaves the table whatever happens to this request (its caller may go away).
        let _guard = PendingGuard {
            conn: Arc::clone(conn),
            id,
        };
        if conn.out.send(message).await.is_err() {
            return Err(disconnected(false));
        }
        match answer.await {
            Ok(Reply::Answered {
                status,
                headers,
                body,
            }) => Ok((status, headers, body)),
            Ok(Reply::Dropped { committing }) => Err(disconnected(committing)),
            // The socket went without answering: it had been told nothing was committing
            // only if the table said so, and the table is gone with it.
            Err(_) => Err(disconnected(true)),
        }
    }

    /// The live socket serving live token `token`, if the hub handed it out and the socket
    /// that answered it is still connected.
    pub(crate) fn live_conn(&self, token: &str) -> Option<Arc<Conn>> {
        let (runner_id, serial) = self.inner.live.find(token)?;
        self.conns()
            .get(&runner_id)
            .filter(|c| c.serial == serial)
            .cloned()
    }

    /// Opens a stream to the WebSocket at `path` on the runner behind `conn`.
    pub(crate) async fn open_stream(
        &self,
        conn: &Arc<Conn>,
        path: &str,
    ) -> Result<HubStream, ApiError> {
        let id = self.inner.request_ids.fetch_add(1, Ordering::SeqCst);
        let (to_viewer, from_runner) = mpsc::channel(STREAM_QUEUE);
        {
            let mut streams = conn.streams();
            if streams.len() >= MAX_STREAMS {
                return Err(ApiError::new(
                    codes::OVERLOADED,
                    "too many live views are open on this runner; close one and retry",
                ));
            }
            streams.insert(id, to_viewer);
        }
        // From here on, dropping the stream takes it out of the table and tells the runner.
        let stream = HubStream {
            id,
            conn: Arc::clone(conn),
            from_runner,
        };
        let open = frame::encode(
            &RelayFrame::StreamOpen {
                stream: id,
                path: path.to_owned(),
                headers: Vec::new(),
            },
            &[],
        )
        .map_err(|_| ApiError::new(codes::INVALID_REQUEST, "the socket cannot be relayed"))?;
        if conn.out.send(Message::Binary(open)).await.is_err() {
            return Err(ApiError::new(
                codes::RUNNER_DISCONNECTED,
                "the runner's connection dropped; retry",
            ));
        }
        Ok(stream)
    }
}

/// The hub's end of a stream: the runner's messages in, the viewer's out. Dropping it ends
/// the stream on both sides.
pub(crate) struct HubStream {
    id: u64,
    conn: Arc<Conn>,
    from_runner: mpsc::Receiver<StreamMessage>,
}

impl HubStream {
    /// The runner's next message; `None` once the runner ended the stream or its socket
    /// went.
    pub(crate) async fn recv(&mut self) -> Option<StreamMessage> {
        self.from_runner.recv().await
    }

    /// Sends the viewer's message to the runner: whether the socket took it.
    pub(crate) async fn send(&self, message: StreamMessage) -> bool {
        match super::stream::data_frame(self.id, &message) {
            Some(frame) => self.conn.out.send(Message::Binary(frame)).await.is_ok(),
            None => false,
        }
    }
}

impl Drop for HubStream {
    fn drop(&mut self) {
        self.conn.streams().remove(&self.id);
        // Told also when the runner ended it: a close of an ended stream is ignored.
        if let Some(close) = close_frame(self.id) {
            let out = self.conn.out.clone();
            if let Err(mpsc::error::TrySendError::Full(message)) =
                out.try_send(Message::Binary(close))
            {
                tokio::spawn(async move {
                    let _ = out.send(message).await;
                });
            }
        }
    }
}

struct PendingGuard {
    conn: Arc<Conn>,
    id: u64,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.conn.pending().remove(&self.id);
    }
}

fn disconnected(committing: bool) -> Response {
    if committing {
        ApiError::new(
            codes::RUNNER_OUTCOME_UNKNOWN,
            "the runner's connection dropped after the request passed its commit point: it may \
             have happened. Check the record on the runner (GET /v1/posts/{id}, or repeat with \
             the same Idempotency-Key) once it reconnects; do not retry blindly",
        )
        .into_response()
    } else {
        ApiError::new(
            codes::RUNNER_DISCONNECTED,
            "the runner's connection dropped before the request reached its commit point: \
             nothing was done, retry",
        )
        .into_response()
    }
}

/// The response headers of a forwarded API answer the hub copies: the ones the API itself
/// sets. Nothing else a runner says (a `Set-Cookie`, CORS, `Refresh`, `Clear-Site-Data`)
/// reaches the hub's origin; the length is the hub's own.
const ANSWER_HEADERS: [&str; 9] = [
    "content-type",
    "cache-control",
    "content-disposition",
    "content-security-policy",
    "x-content-type-options",
    "location",
    "retry-after",
    "www-authenticate",
    "idempotent-replayed",
];

/// Whether a runner's header `name: value` may be on a forwarded API answer.
fn copied(name: &HeaderName, value: &HeaderValue) -> bool {
    if name == header::LOCATION {
        // The API's `Location` is a path of its own (`/v1/tasks/{id}`), never elsewhere.
        let path = value.as_bytes();
        return path.starts_with(b"/") && !path.starts_with(b"//") && !path.contains(&b'\\');
    }
    ANSWER_HEADERS.contains(&name.as_str())
}

fn answered(status: u16, headers: &[(String, String)], body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    for (name, value) in headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) else {
            continue;
        };
        if copied(&name, &value) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// Where runners mint their relay tokens: the one API path a runner's credential calls.
pub(crate) const TOKENS_PATH: &str = "/v1/relay/tokens";

/// What the relay's routes need: the hub and its API keys.
#[derive(Clone, Debug)]
struct RelayState {
    hub: Hub,
    keys: abr_engine::Keys,
}

/// `POST /v1/relay/tokens`.
async fn mint(
    State(RelayState { hub, keys }): State<RelayState>,
    axum::Extension(principal): axum::Extension<Arc<abr_core::principal::Principal>>,
    ApiJson(request): ApiJson<RelayTokenRequest>,
) -> Result<Json<RelayTokenResponse>, ApiError> {
    // A runner's credential mints for its own runner id (serving its tenant); an operator
    // for a runner id no credential holds (serving its tenant, or only operators for an
    // operator of every tenant). Nobody else.
    principal.require(abr_core::principal::Right::Relay)?;
    if !valid_runner_id(&request.runner_id) {
        return Err(invalid_runner_id());
    }
    match principal.runner_id() {
        Some(own) if own == request.runner_id => {}
        Some(_) => {
            return Err(ApiError::new(
                codes::FORBIDDEN,
                "a runner's credential mints relay tokens for its own runner id only",
            ));
        }
        None => {
            if keys.runner_credential(&request.runner_id).await?.is_some() {
                return Err(ApiError::new(
                    codes::FORBIDDEN,
                    "this runner id is enrolled: only its own credential connects it (an \
                     operator re-enrolls it to replace it)",
                ));
            }
        }
    }
    let grant = Grant {
        tenant: principal.tenant().map(str::to_owned),
        owner: principal.key_id().to_owned(),
    };
    let (token, ttl) = hub
        .inner
        .tokens
        .mint(&request.runner_id, grant)
        .await
        .map_err(|e| match e {
            MintRefused::Full => ApiError::new(
                codes::OVERLOADED,
                "too many unused relay tokens; retry later",
            ),
            MintRefused::NoRandomness => ApiError::new(codes::INTERNAL, "internal error"),
            MintRefused::Store => ApiError::new(
                codes::STORE_FAILED,
                "the fleet's database did not keep the relay token; retry",
            ),
        })?;
    let expires_at = time::OffsetDateTime::now_utc()
        + time::Duration::try_from(ttl).unwrap_or(time::Duration::ZERO);
    Ok(Json(RelayTokenResponse {
        token: abr_protocol::SecretValue::new(token),
        connect_path: format!("/v1/relay/{}/connect", request.runner_id),
        runner_id: request.runner_id,
        expires_at,
    }))
}

fn invalid_runner_id() -> ApiError {
    ApiError::new(
        codes::INVALID_REQUEST,
        "runnerId must be 1 to 64 of A-Z a-z 0-9 . _ - (not starting with a dot)",
    )
}

/// `GET /v1/relay/{runnerId}/connect`: only a relay token minted for this runner id (no API
/// key or runner credential is one).
async fn connect(
    State(RelayState { hub, keys }): State<RelayState>,
    Path(runner_id): Path<String>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    if !valid_runner_id(&runner_id) {
        return invalid_runner_id().into_response();
    }
    let Ok(upgrade) = upgrade else {
        return ApiError::new(
            codes::WEBSOCKET_REQUIRED,
            "the relay endpoint takes a WebSocket handshake",
        )
        .into_response();
    };
    let grant = match crate::tokens::bearer(&headers) {
        Some(token) => hub.inner.tokens.redeem(token, &runner_id).await,
        None => None,
    };
    let Some(grant) = grant else {
        return ApiError::new(
            codes::UNAUTHORIZED,
            "a relay token minted for this runner id is required (POST /v1/relay/tokens)",
        )
        .into_response();
    };
    // Checked again as it is used: the minter's key may have been revoked since, and the
    // runner id enrolled (then only its credential connects it).
    let holds = match (
        keys.stands(&grant.owner).await,
        keys.runner_credential(&runner_id).await,
    ) {
        (Ok(stands), Ok(credential)) => stands && credential.is_none_or(|c| c == grant.owner),
        (Err(e), _) | (_, Err(e)) => return ApiError::from(e).into_response(),
    };
    if !holds {
        return ApiError::new(
            codes::FORBIDDEN,
            "this relay token's credential does not hold this runner id (revoked, or the id \
             is enrolled with another credential)",
        )
        .into_response();
    }
    let watch = keys.watch(&grant.owner);
    if hub.is_killed() {
        return ApiError::new(codes::OVERLOADED, "the hub is stopping").into_response();
    }
    let max = hub.inner.settings.max_frame_bytes;
    upgrade
        .max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| async move {
            hub.serve(socket, runner_id, grant, keys, watch).await;
        })
}

/// What ended a socket.
enum End {
    /// Dropped, dead, closed by the runner, or the hub killed.
    Gone,
    /// Replaced by a forced takeover: told, then closed.
    Replaced,
}

impl Hub {
    /// Serves one runner's socket, opened with `grant`, until it ends: dropped, closed,
    /// replaced, the hub killed, or the key that opened it revoked (`watch`).
    async fn serve(
        self,
        mut socket: WebSocket,
        runner_id: String,
        grant: Grant,
        keys: abr_engine::Keys,
        mut watch: abr_engine::KeyWatch,
    ) {
        let settings = self.inner.settings.clone();
        let waiting = tokio::time::timeout(settings.dead_after, first_hello(&mut socket));
        let Ok(Some(hello)) = waiting.await else {
            return;
        };
        if let Some(refusal) = too_old(&hello.version, &settings.min_runner_version) {
            tracing::warn!(target: "abr::relay", runner_id, version = hello.version, "runner too old: refused");
            send_frame(
                &mut socket,
                &RelayFrame::Refused {
                    status: codes::RUNNER_TOO_OLD.status,
                    error: refusal,
                },
            )
            .await;
            let _ = socket.send(Message::Close(None)).await;
            return;
        }
        if hello.runner_id != runner_id || !valid_host(&hello.host) {
            let refusal = codes::INVALID_REQUEST
                .body("the hello must name the connection's runner id and a host name");
            send_frame(
                &mut socket,
                &RelayFrame::Refused {
                    status: codes::INVALID_REQUEST.status,
                    error: refusal,
                },
            )
            .await;
            let _ = socket.send(Message::Close(None)).await;
            return;
        }
        let (out, mut outbound) = mpsc::channel::<Message>(64);
        let (replaced, mut replaced_rx) = watch::channel(false);
        let conn = Arc::new(Conn {
            serial: self.inner.serials.fetch_add(1, Ordering::SeqCst),
            host: hello.host.clone(),
            tenant: grant.tenant,
            owner: grant.owner,
            version: hello.version.clone(),
            launch: hello.launch.clone(),
            connected_at: time::OffsetDateTime::now_utc(),
            last_seen: Mutex::new(time::OffsetDateTime::now_utc()),
            out,
            pending: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            draining: AtomicBool::new(false),
            replaced,
            update: Mutex::new(None),
        });
        if let Err(refusal) = self.register(&runner_id, &hello, &conn) {
            send_frame(
                &mut socket,
                &RelayFrame::Refused {
                    status: codes::RUNNER_CONFLICT.status,
                    error: refusal,
                },
            )
            .await;
            let _ = socket.send(Message::Close(None)).await;
            return;
        }
        tracing::info!(
            target: "abr::relay",
            runner_id,
            launch = hello.launch,
            version = hello.version,
            "runner connected"
        );
        // A code made while the id was away does not take it over now that it is back, and
        // an id linked with a credential not its own (an operator's) stays theirs while it
        // is away: written before the runner is served, or it is not served.
        if let Err(e) = keys.runner_connected(&runner_id, &conn.owner).await {
            tracing::warn!(target: "abr::relay", runner_id, error = %e, "the runner's link could not be recorded: refused");
            let _ = self.unregister(&runner_id, &conn);
            let refusal = codes::STORE_FAILED
                .body("the hub could not record the runner's connection; connect again");
            send_frame(
                &mut socket,
                &RelayFrame::Refused {
                    status: codes::STORE_FAILED.status,
                    error: refusal,
                },
            )
            .await;
            let _ = socket.send(Message::Close(None)).await;
            return;
        }
        if let Some(places) = self.inner.places.get() {
            places
                .place(PlacementKind::Runner, &runner_id, conn.tenant.as_deref())
                .await;
        }
        send_frame(
            &mut socket,
            &RelayFrame::Welcome {
                version: env!("CARGO_PKG_VERSION").into(),
            },
        )
        .await;
        let mut killed = self.inner.killed.subscribe();
        let mut ticker = tokio::time::interval(settings.heartbeat);
        let mut last_seen = Instant::now();
        let end = loop {
            tokio::select! {
                received = socket.recv() => match received {
                    Some(Ok(message)) => {
                        last_seen = Instant::now();
                        *conn.last_seen.lock().unwrap_or_else(PoisonError::into_inner) =
                            time::OffsetDateTime::now_utc();
                        if let Message::Binary(bytes) = message {
                            if let Some(reply) = on_frame(&conn, &bytes)
                                && socket.send(reply).await.is_err()
                            {
                                break End::Gone;
                            }
                        } else if let Message::Close(_) = message {
                            break End::Gone;
                        }
                    }
                    _ => break End::Gone,
                },
                Some(message) = outbound.recv() => {
                    if socket.send(message).await.is_err() {
                        break End::Gone;
                    }
                }
                _ = ticker.tick() => {
                    if last_seen.elapsed() > settings.dead_after {
                        tracing::warn!(target: "abr::relay", runner_id, "runner silent: dropped");
                        break End::Gone;
                    }
                    if socket.send(Message::Ping(Bytes::new())).await.is_err() {
                        break End::Gone;
                    }
                }
                () = raised(&mut replaced_rx) => break End::Replaced,
                () = raised(&mut killed) => break End::Gone,
                () = watch.ended() => {
                    tracing::info!(target: "abr::relay", runner_id, "its credential was revoked: disconnected");
                    break End::Gone;
                }
            }
        };
        // Closed first: a request that picked this socket either finds it closed or is in
        // the table `drop_pending` answers.
        drop(outbound);
        if self.unregister(&runner_id, &conn)
            && let Some(places) = self.inner.places.get()
        {
            places.unplace(PlacementKind::Runner, &runner_id).await;
        }
        conn.drop_pending();
        self.forget(&conn);
        if matches!(end, End::Replaced) {
            send_frame(&mut socket, &RelayFrame::Replaced).await;
            let _ = socket.send(Message::Close(None)).await;
        }
        tracing::info!(target: "abr::relay", runner_id, "runner disconnected");
    }

    /// Makes `conn` the socket of `runner_id`. One socket per id: while one is live, another
    /// is a conflict whatever host its hello names (a name the runner gives itself proves
    /// nothing), unless it says `force` and was opened with the live one's credential, which
    /// replaces the live one (told, then closed). Another credential never replaces it.
    fn register(
        &self,
        runner_id: &str,
        hello: &RelayHello,
        conn: &Arc<Conn>,
    ) -> Result<(), abr_protocol::ErrorBody> {
        let mut conns = self.conns();
        if let Some(live) = conns.get(runner_id) {
            if !hello.force {
                return Err(codes::RUNNER_CONFLICT.body(
                    "a runner with this id is already connected to the hub; `force` replaces \
                     it",
                ));
            }
            if live.owner != conn.owner {
                return Err(codes::RUNNER_CONFLICT.body(
                    "a runner with this id is connected with another credential: `force` \
                     replaces a runner only for the credential that connected it",
                ));
            }
            live.replaced.send_replace(true);
        }
        conns.insert(runner_id.to_owned(), Arc::clone(conn));
        drop(conns);
        self.inner.connected.notify_waiters();
        Ok(())
    }

    /// Takes `conn` out, if it is still `runner_id`'s socket (a forced takeover put another
    /// in its place): whether it was.
    fn unregister(&self, runner_id: &str, conn: &Arc<Conn>) -> bool {
        let mut conns = self.conns();
        let its = conns
            .get(runner_id)
            .is_some_and(|c| c.serial == conn.serial);
        if its {
            conns.remove(runner_id);
        }
        its
    }
}

/// The refusal of a runner whose hello says `version`, below `minimum` (a version that is
/// not one is below every minimum).
fn too_old(version: &str, minimum: &semver::Version) -> Option<abr_protocol::ErrorBody> {
    let old = semver::Version::parse(version.trim()).map_or(true, |v| v < *minimum);
    old.then(|| {
        codes::RUNNER_TOO_OLD.body(format!(
            "this hub takes runners of version {minimum} or later; this runner is {version:?}: \
             upgrade it"
        ))
    })
}

/// Takes one frame from a runner; answers what to send back, if anything.
fn on_frame(conn: &Arc<Conn>, bytes: &Bytes) -> Option<Message> {
    let Ok((frame, body)) = frame::decode(bytes) else {
        tracing::debug!(target: "abr::relay", "a frame that is not a relay frame: ignored");
        return None;
    };
    match frame {
        RelayFrame::Response {
            id,
            status,
            headers,
        } => {
            if let Some(p) = conn.pending().remove(&id) {
                let _ = p.reply.send(Reply::Answered {
                    status,
                    headers,
                    body,
                });
            }
        }
        RelayFrame::Progress { id, committing } => {
            // Recorded before it is acknowledged: from the ack on, a drop is uncertain.
            let known = match conn.pending().get_mut(&id) {
                Some(p) => {
                    p.committing |= committing;
                    true
                }
                None => false,
            };
            if known {
                return frame::encode(&RelayFrame::CommitAck { id }, &[])
                    .ok()
                    .map(Message::Binary);
            }
        }
        RelayFrame::Draining => conn.draining.store(true, Ordering::SeqCst),
        RelayFrame::UpdateAnswer { accepted, message } => {
            let said: String = message.chars().take(300).collect();
            let note = if accepted {
                format!("accepted: {said}")
            } else {
                format!("refused: {said}")
            };
            tracing::info!(target: "abr::relay", %note, "a runner answered a remote update");
            *conn.update.lock().unwrap_or_else(PoisonError::into_inner) = Some(note);
        }
        RelayFrame::StreamData { stream, text } => {
            let mut streams = conn.streams();
            let delivered = body.len() <= MAX_STREAM_MESSAGE
                && streams.get(&stream).is_some_and(|viewer| {
                    viewer
                        .try_send(StreamMessage {
                            text,
                            payload: body,
                        })
                        .is_ok()
                });
            if !delivered {
                // Too large, or a viewer that cannot keep up: its socket is closed.
                streams.remove(&stream);
            }
        }
        RelayFrame::StreamClose { stream } => {
            conn.streams().remove(&stream);
        }
        _ => tracing::debug!(target: "abr::relay", "an unexpected frame: ignored"),
    }
    None
}

/// Resolves once `flag` is true (or its sender is gone).
async fn raised(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|raised| *raised).await;
}

async fn first_hello(socket: &mut WebSocket) -> Option<RelayHello> {
    loop {
        match socket.recv().await? {
            Ok(Message::Binary(bytes)) => {
                return match frame::decode(&bytes) {
                    Ok((RelayFrame::Hello(hello), _)) => Some(hello),
                    _ => None,
                };
            }
            Ok(Message::Ping(_) | Message::Pong(_)) => {}
            _ => return None,
        }
    }
}

async fn send_frame(socket: &mut WebSocket, frame: &RelayFrame) {
    if let Ok(bytes) = frame::encode(frame, &[]) {
        let _ = socket.send(Message::Binary(bytes)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarded_answer_keeps_only_the_apis_own_headers() {
        let headers: Vec<(String, String)> = [
            ("content-type", "application/json"),
            ("idempotent-replayed", "true"),
            ("retry-after", "3"),
            ("location", "/v1/tasks/t1"),
            ("location", "https://evil.example/"),
            ("location", "//evil.example/"),
            ("location", "/\\evil.example/"),
            ("set-cookie", "a=1"),
            ("Set-Cookie", "b=2"),
            ("access-control-allow-origin", "*"),
            ("refresh", "0; url=https://evil.example/"),
            ("transfer-encoding", "chunked"),
            ("content-length", "999"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        let response = answered(201, &headers, Bytes::from_static(b"{}"));
        let kept: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect();
        let kept: Vec<(&str, &str)> = kept.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(
            kept,
            [
                ("content-type", "application/json"),
                ("idempotent-replayed", "true"),
                ("retry-after", "3"),
                ("location", "/v1/tasks/t1"),
            ]
        );
    }
}
