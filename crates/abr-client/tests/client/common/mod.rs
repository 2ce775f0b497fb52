//! The fake runner of the client's tests: axum on 127.0.0.1:0, answering with a responder and
//! recording every request (method, raw path and query, headers, body).
//!
//! Each test module adds its own `ThisRunner` trait with `start` (the runner answering with that
//! module's answers) and `client` (a client with that module's token).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abr_client::AgentRunnerClient;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

/// One request as the fake runner saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    /// Raw path and query, as sent (percent-encoding kept).
    pub(crate) path: String,
    /// Every header, in the order sent.
    #[allow(
        dead_code,
        reason = "read through `header`, which not every test file uses"
    )]
    pub(crate) headers: Vec<(String, String)>,
    #[allow(dead_code, reason = "not every test file reads the named headers")]
    pub(crate) authorization: Option<String>,
    #[allow(dead_code, reason = "not every test file reads the named headers")]
    pub(crate) content_type: Option<String>,
    #[allow(dead_code, reason = "not every test file reads the named headers")]
    pub(crate) user_agent: Option<String>,
    #[allow(dead_code, reason = "not every test file reads the named headers")]
    pub(crate) cookie: Option<String>,
    pub(crate) body: Vec<u8>,
}

impl Seen {
    /// The first value of the header `name` (lower case).
    #[allow(dead_code, reason = "not every test file reads headers by name")]
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// What the fake runner answers.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
    /// How long to wait before answering.
    pub(crate) delay: Option<Duration>,
}

impl Reply {
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self::raw(status, "application/json", body.to_string())
    }

    pub(crate) fn raw(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type", content_type.to_owned())],
            body: body.into(),
            delay: None,
        }
    }

    /// No body and no header.
    #[allow(dead_code, reason = "not every test file answers without a body")]
    pub(crate) fn empty(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: None,
        }
    }

    /// The runner's error envelope.
    #[allow(dead_code, reason = "not every test file answers with an envelope")]
    pub(crate) fn envelope(status: u16, code: &str, message: &str, retryable: bool) -> Self {
        Self::json(
            status,
            json!({"error": {"code": code, "message": message, "retryable": retryable}}),
        )
    }

    /// An envelope with the message "refused" that is not retryable.
    #[allow(dead_code, reason = "not every test file answers with this envelope")]
    pub(crate) fn error(status: u16, code: &str) -> Self {
        Self::envelope(status, code, "refused", false)
    }

    #[allow(dead_code, reason = "not every test file adds headers")]
    pub(crate) fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    #[allow(dead_code, reason = "not every test file delays answers")]
    pub(crate) fn delayed(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }
}

type Responder = Box<dyn Fn(&Seen) -> Reply + Send + Sync>;

struct Shared {
    seen: Mutex<Vec<Seen>>,
    responder: Responder,
}

pub(crate) struct FakeRunner {
    pub(crate) addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeRunner {
    /// A runner answering every request with `responder`.
    pub(crate) async fn with(responder: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        let shared = Arc::new(Shared {
            seen: Mutex::new(Vec::new()),
            responder: Box::new(responder),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { addr, shared }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A client of this runner with `token`.
    pub(crate) fn client_with(&self, token: &str) -> AgentRunnerClient {
        AgentRunnerClient::new(self.url("/"), token).unwrap()
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// The only request seen so far.
    pub(crate) fn single(&self) -> Seen {
        let seen = self.seen();
        assert_eq!(seen.len(), 1, "expected exactly one request, got {seen:#?}");
        seen.into_iter().next().unwrap()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let seen = Seen {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        user_agent: header("user-agent"),
        cookie: header("cookie"),
        body: axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap()
            .to_vec(),
    };
    let reply = (shared.responder)(&seen);
    shared.seen.lock().unwrap().push(seen);
    if let Some(delay) = reply.delay {
        tokio::time::sleep(delay).await;
    }
    let mut response = Response::builder().status(StatusCode::from_u16(reply.status).unwrap());
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response.body(Body::from(reply.body)).unwrap()
}
