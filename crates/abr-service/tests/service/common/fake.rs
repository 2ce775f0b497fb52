//! A runner on the core's fakes (no browser), called in-process with
//! `tower::ServiceExt::oneshot`, or served on loopback for socket tests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use abr_core::testing::{FakeContext, FakeProvider, ScriptedStrategy};
use abr_core::{DynSessionProvider, WebPostStrategy};
use abr_engine::EngineStore;
use abr_protocol::{PlatformPolicy, SessionScopeSpec};
use abr_service::config::RunnerConfig;
use abr_service::runner::{Runner, RunnerBuilder};
use abr_service::server::RunningServer;
use abr_store::SqliteStore;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use secrecy::SecretString;
use tower::ServiceExt as _;

/// The bearer tokens the fake runner accepts (two: rotation).
pub const FAKE_TOKEN: &str = "fake-token-0123456789abcdef";
pub const FAKE_TOKEN_NEXT: &str = "fake-token-next-0123456789ab";
/// The fake runner's public origin.
pub const FAKE_ORIGIN: &str = "http://runner.test";
/// The fake platform.
pub const FAKE_PLATFORM: &str = "fake";

pub struct FakeStack {
    pub provider: Arc<FakeProvider>,
    pub strategy: Arc<ScriptedStrategy>,
    pub runner: Arc<Runner<FakeContext>>,
    pub app: axum::Router,
    /// The runner's store (in memory), for tests that set up or read records beneath it.
    pub store: Arc<dyn EngineStore>,
}

/// The fake platform's policy: cookies of fake.example, localStorage of its app origin.
pub fn fake_policy() -> PlatformPolicy {
    PlatformPolicy {
        session: Some(SessionScopeSpec {
            cookie_domains: vec!["fake.example".into()],
            origins: vec!["https://fake.example".into()],
        }),
        ..PlatformPolicy::default()
    }
}

pub fn fake_config() -> RunnerConfig {
    RunnerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        public_url: Some(url::Url::parse(FAKE_ORIGIN).unwrap()),
        api_tokens: vec![
            SecretString::from(FAKE_TOKEN.to_owned()),
            SecretString::from(FAKE_TOKEN_NEXT.to_owned()),
        ],
        // The scripted platform takes the runner's pacing: none, so tests run at once.
        pacing: None,
        ..RunnerConfig::default()
    }
}

/// A runner on `provider` (jobs and captures) with the scripted `fake` platform.
pub fn fake_stack_with(
    provider: FakeProvider,
    configure: impl FnOnce(&mut RunnerConfig),
) -> FakeStack {
    let sqlite = Arc::new(SqliteStore::in_memory(None).unwrap());
    let profiles: Arc<dyn abr_core::guard::ProfileStore> = sqlite.clone();
    fake_stack_built(sqlite, Some(profiles), provider, configure)
}

/// [`fake_stack_with`] on `store`.
pub fn fake_stack_on(
    store: Arc<dyn EngineStore>,
    provider: FakeProvider,
    configure: impl FnOnce(&mut RunnerConfig),
) -> FakeStack {
    fake_stack_built(store, None, provider, configure)
}

/// The fake runner on `store`, keeping named profiles in `profiles` (on with
/// `ABR_PROFILE_DIR` only).
fn fake_stack_built(
    store: Arc<dyn EngineStore>,
    profiles: Option<Arc<dyn abr_core::guard::ProfileStore>>,
    provider: FakeProvider,
    configure: impl FnOnce(&mut RunnerConfig),
) -> FakeStack {
    let mut config = fake_config();
    configure(&mut config);
    let provider = Arc::new(provider);
    let strategy = Arc::new(ScriptedStrategy::new(FAKE_PLATFORM, &fake_policy()));
    let as_dyn: DynSessionProvider<FakeContext> = provider.clone();
    let strategy_dyn: Arc<dyn WebPostStrategy<FakeContext>> = strategy.clone();
    let mut builder = RunnerBuilder::with_providers(config, as_dyn.clone(), as_dyn)
        .store(store.clone())
        .strategy(strategy_dyn)
        .unwrap();
    if let Some(profiles) = profiles {
        builder = builder.profiles(profiles);
    }
    let runner = builder.build().unwrap();
    let runner = Arc::new(runner);
    let app = abr_service::http::app(Arc::clone(&runner));
    FakeStack {
        provider,
        strategy,
        runner,
        app,
        store,
    }
}

pub fn fake_stack() -> FakeStack {
    fake_stack_with(FakeProvider::new(), |_| {})
}

/// An answer read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    /// The answer as an error envelope: `(status, code, retryable)`, its shape checked.
    pub fn error(&self) -> (u16, String, bool) {
        let content_type = self
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert!(
            content_type.starts_with("application/json"),
            "HTTP {}: not JSON ({content_type:?}): {}",
            self.status,
            self.body
        );
        let value: serde_json::Value = serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not an envelope ({e}): {}", self.body));
        let error = value["error"].as_object().expect("`error` is an object");
        let mut keys: Vec<_> = error.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["code", "message", "retryable"], "{}", self.body);
        assert_eq!(value.as_object().map(|o| o.len()), Some(1), "{}", self.body);
        (
            self.status.as_u16(),
            error["code"].as_str().unwrap().to_owned(),
            error["retryable"].as_bool().unwrap(),
        )
    }

    /// The error envelope's message.
    pub fn message(&self) -> String {
        let value: serde_json::Value = serde_json::from_str(&self.body).unwrap();
        value["error"]["message"].as_str().unwrap().to_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A request builder with the bearer token.
pub fn authed(method: Method, path: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {FAKE_TOKEN}"))
}

/// A request builder with another bearer token (a key's).
pub fn authed_with(token: &str, method: Method, path: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
}

/// `method path` as `token`, with extra headers and a JSON body.
pub async fn request_as(
    app: &axum::Router,
    token: &str,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&serde_json::Value>,
) -> Reply {
    let mut builder = authed_with(token, method, path);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let body = match body {
        Some(b) => {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
            Body::from(b.to_string())
        }
        None => Body::empty(),
    };
    call(app, builder.body(body).unwrap()).await
}

/// A new key of `role` (`agent`, `approver`, `operator`) for `tenant` (none: every tenant,
/// an operator's), named `name`, created with the bootstrap token; answers its token.
pub async fn new_key(app: &axum::Router, name: &str, role: &str, tenant: Option<&str>) -> String {
    let mut body = serde_json::json!({"name": name, "role": role});
    if let Some(t) = tenant {
        body["tenantId"] = t.into();
    }
    let reply = post_json(app, "/v1/keys", &body).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.json()["token"].as_str().unwrap().to_owned()
}

/// Sends `request` through the router in-process.
pub async fn call(app: &axum::Router, request: Request<Body>) -> Reply {
    let response = tokio::time::timeout(Duration::from_secs(30), app.clone().oneshot(request))
        .await
        .expect("the handler hung")
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024)
        .await
        .unwrap();
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// `POST path` with a JSON body and the token.
pub async fn post_json(app: &axum::Router, path: &str, body: &serde_json::Value) -> Reply {
    call(
        app,
        authed(Method::POST, path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
    )
    .await
}

/// `GET path` with the token.
pub async fn get_authed(app: &axum::Router, path: &str) -> Reply {
    call(app, authed(Method::GET, path).body(Body::empty()).unwrap()).await
}

/// `GET path` without credentials.
pub async fn get(app: &axum::Router, path: &str) -> Reply {
    call(
        app,
        Request::builder().uri(path).body(Body::empty()).unwrap(),
    )
    .await
}

/// A capture start body for the fake platform.
pub fn fake_start(workspace: &str, account: &str) -> serde_json::Value {
    serde_json::json!({ "workspaceId": workspace, "accountId": account, "platform": FAKE_PLATFORM })
}

/// Starts a capture; `(captureId, live token)`.
pub async fn fake_capture(app: &axum::Router) -> (String, String) {
    let reply = post_json(app, "/v1/capture/start", &fake_start("ws", "acct")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let v = reply.json();
    let url = v["liveViewUrl"].as_str().unwrap();
    assert!(url.starts_with(&format!("{FAKE_ORIGIN}/live/")), "{url}");
    (
        v["captureId"].as_str().unwrap().to_owned(),
        url.rsplit('/').next().unwrap().to_owned(),
    )
}

/// A fake runner served on loopback (for sockets); its public origin is its own address.
pub async fn serve_fake(
    provider: FakeProvider,
    configure: impl FnOnce(&mut RunnerConfig),
) -> (
    RunningServer<FakeContext>,
    Arc<FakeProvider>,
    Arc<ScriptedStrategy>,
) {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let stack = fake_stack_with(provider, |c| {
        c.public_url = Some(url::Url::parse(&format!("http://{addr}")).unwrap());
        configure(c);
    });
    let server = RunningServer::start(stack.runner, listener).unwrap();
    (server, stack.provider, stack.strategy)
}
