//! The outbound relay on loopback: a hub (`http::app_with_relay` on a real listener, its own
//! runner on the core's fakes) and runners on the fakes connected with `relay::link::run`,
//! in-process. Browser-free; the demo-site checks are in `relay_e2e.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use abr_core::testing::{FakeProvider, Script};
use abr_service::relay::link::{self, LinkOptions, Shutdown};
use abr_service::relay::{Hub, HubSettings, RelayError};
use common::fake::*;
use secrecy::SecretString;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Bound of each test.
const LIMIT: Duration = Duration::from_secs(60);

/// Short heartbeats: a dead peer is noticed within a second.
fn settings() -> HubSettings {
    HubSettings {
        heartbeat: Duration::from_millis(200),
        dead_after: Duration::from_millis(1_000),
        offline_wait: Duration::from_millis(300),
        ..HubSettings::default()
    }
}

struct HubServer {
    addr: SocketAddr,
    hub: Hub,
    hub_runner: FakeStack,
    task: JoinHandle<()>,
}

impl HubServer {
    async fn start(settings: HubSettings, addr: Option<SocketAddr>) -> Self {
        Self::start_on(settings, addr, |_| {}).await
    }

    /// A hub whose own configuration `configure` adjusts.
    async fn start_with(
        settings: HubSettings,
        configure: impl FnOnce(&mut abr_service::config::RunnerConfig),
    ) -> Self {
        Self::start_on(settings, None, configure).await
    }

    async fn start_on(
        settings: HubSettings,
        addr: Option<SocketAddr>,
        configure: impl FnOnce(&mut abr_service::config::RunnerConfig),
    ) -> Self {
        let bind = addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hub_runner = fake_stack_with(FakeProvider::new(), configure);
        let hub = Hub::new(settings);
        let app = abr_service::http::app_with_relay(Arc::clone(&hub_runner.runner), hub.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            hub,
            hub_runner,
            task,
        }
    }

    fn url(&self) -> url::Url {
        url::Url::parse(&format!("http://{}", self.addr)).unwrap()
    }

    /// As if the hub's process died: every socket dropped, nothing accepted.
    fn kill(&self) {
        self.hub.kill();
        self.task.abort();
    }

    /// [`kill`](Self::kill), and wait until its port is free.
    async fn stop(mut self) {
        self.kill();
        let _ = (&mut self.task).await;
    }
}

impl Drop for HubServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A runner on the fakes, linked to a hub.
struct Linked {
    stack: FakeStack,
    stop: watch::Sender<Shutdown>,
    task: JoinHandle<Result<(), RelayError>>,
}

impl Linked {
    fn options(hub: &HubServer, runner_id: &str, host: &str) -> LinkOptions {
        let mut options = LinkOptions::new(
            hub.url(),
            SecretString::from(FAKE_TOKEN.to_owned()),
            runner_id.into(),
            host.into(),
        );
        options.heartbeat = Duration::from_millis(200);
        options.dead_after = Duration::from_millis(1_000);
        options.backoff_base = Duration::from_millis(50);
        options.backoff_cap = Duration::from_millis(300);
        options
    }

    fn start(options: LinkOptions) -> Self {
        let stack = fake_stack_with(FakeProvider::new(), |c| c.limits.max_concurrent_jobs = 8);
        let (stop, stopped) = watch::channel(Shutdown::Running);
        let app = stack.app.clone();
        let task = tokio::spawn(link::run(app, options, stopped));
        Self { stack, stop, task }
    }

    async fn connect(hub: &HubServer, runner_id: &str, host: &str) -> Self {
        let linked = Self::start(Self::options(hub, runner_id, host));
        wait_for("the runner to connect", || {
            hub.hub.connected(runner_id).as_deref() == Some(host)
        })
        .await;
        linked
    }
}

impl Linked {
    /// What `link::run` returned.
    async fn ended(&mut self) -> Result<(), RelayError> {
        tokio::time::timeout(Duration::from_secs(20), &mut self.task)
            .await
            .expect("the link did not end")
            .expect("the link task failed")
    }
}

impl Drop for Linked {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn post_body(text: &str) -> serde_json::Value {
    serde_json::json!({ "platform": FAKE_PLATFORM, "content": { "text": text } })
}

/// `POST /v1/post` through the hub, for `runner` (if any).
async fn hub_post(
    hub: &HubServer,
    runner: Option<&str>,
    text: &str,
    key: Option<&str>,
) -> (u16, serde_json::Value) {
    let mut request = client()
        .post(format!("http://{}/v1/post", hub.addr))
        .bearer_auth(FAKE_TOKEN)
        .header("x-tenant-id", "tenant-1")
        .json(&post_body(text));
    if let Some(runner) = runner {
        request = request.header("x-abr-runner", runner);
    }
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

fn error_of(body: &serde_json::Value) -> (String, bool) {
    (
        body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        body["error"]["retryable"].as_bool().unwrap_or_default(),
    )
}

/// A relay token for `runner_id`, minted with the API token.
async fn mint(hub: &HubServer, runner_id: &str) -> String {
    let response = client()
        .post(format!("http://{}/v1/relay/tokens", hub.addr))
        .bearer_auth(FAKE_TOKEN)
        .json(&serde_json::json!({ "runnerId": runner_id }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["runnerId"], runner_id);
    assert_eq!(
        body["connectPath"],
        format!("/v1/relay/{runner_id}/connect")
    );
    assert!(body["expiresAt"].as_str().is_some());
    body["token"].as_str().unwrap().to_owned()
}

/// Opens the connect endpoint of `runner_id` with `bearer`: the HTTP status of a refused
/// handshake, or 101.
async fn try_connect(hub: &HubServer, runner_id: &str, bearer: &str) -> u16 {
    let mut request = format!("ws://{}/v1/relay/{runner_id}/connect", hub.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {bearer}").parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Ok((_socket, response)) => response.status().as_u16(),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn a_call_naming_a_runner_runs_on_that_runner_with_the_same_api() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;

        let (status, body) = hub_post(&hub, Some("laptop"), "relayed", Some("k-1")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["ok"], true, "{body}");
        assert_eq!(runner.stack.strategy.posted(), ["relayed"]);
        assert!(
            hub.hub_runner.strategy.posted().is_empty(),
            "ran on the hub"
        );

        // The record is the runner's: read through the hub, and absent on the hub.
        let id = body["postId"].as_str().unwrap();
        let record = client()
            .get(format!("http://{}/v1/posts/{id}", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .header("x-tenant-id", "tenant-1")
            .header("x-abr-runner", "laptop")
            .send()
            .await
            .unwrap();
        assert_eq!(record.status(), 200);
        let local = client()
            .get(format!("http://{}/v1/posts/{id}", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .header("x-tenant-id", "tenant-1")
            .send()
            .await
            .unwrap();
        assert_eq!(local.status(), 404);

        // The runner's error envelopes come back as they are.
        let bad = client()
            .post(format!("http://{}/v1/post", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .header("x-abr-runner", "laptop")
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 400);
        let bad: serde_json::Value = bad.json().await.unwrap();
        assert_eq!(error_of(&bad).0, "invalid_json");

        // Without the header, the hub runs it itself.
        let (status, _) = hub_post(&hub, None, "local", None).await;
        assert_eq!(status, 200);
        assert_eq!(hub.hub_runner.strategy.posted(), ["local"]);
        assert_eq!(runner.stack.strategy.posted(), ["relayed"]);
    })
    .await
    .expect("the test took too long");
}

#[tokio::test]
async fn many_requests_share_one_socket_concurrently() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        let hold = runner.stack.strategy.hold_posts();
        let calls: Vec<_> = (0..5)
            .map(|i| {
                let addr = hub.addr;
                tokio::spawn(async move {
                    client()
                        .post(format!("http://{addr}/v1/post"))
                        .bearer_auth(FAKE_TOKEN)
                        .header("x-abr-runner", "laptop")
                        .json(&post_body(&format!("post {i}")))
                        .send()
                        .await
                        .unwrap()
                        .json::<serde_json::Value>()
                        .await
                        .unwrap()
                })
            })
            .collect();
        // All five are on the runner at once, held before their submit.
        wait_for("five posts in flight", || {
            runner.stack.provider.acquired() == 5
        })
        .await;
        hold.add_permits(5);
        for call in calls {
            let body = call.await.unwrap();
            assert_eq!(body["ok"], true, "{body}");
        }
        let mut posted = runner.stack.strategy.posted();
        posted.sort();
        assert_eq!(posted, ["post 0", "post 1", "post 2", "post 3", "post 4"]);
    })
    .await
    .expect("the test took too long");
}

#[tokio::test]
async fn a_runner_nobody_connected_is_offline_and_retryable() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let (status, body) = hub_post(&hub, Some("nobody"), "x", None).await;
        assert_eq!(status, 503);
        assert_eq!(error_of(&body), ("runner_offline".to_owned(), true));
        let (status, body) = hub_post(&hub, Some("bad/id"), "x", None).await;
        assert_eq!(status, 422, "{body}");
        assert!(hub.hub_runner.strategy.posted().is_empty());
    })
    .await
    .expect("the test took too long");
}

/// The attack: a caller without the API token names a runner, hoping the hub forwards and
/// the runner (which trusts its hub) runs it.
#[tokio::test]
async fn a_call_without_the_api_token_is_refused_before_it_reaches_any_runner() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        for auth in [None, Some("Bearer wrong-token"), Some("Bearer ")] {
            let mut request = client()
                .post(format!("http://{}/v1/post", hub.addr))
                .header("x-abr-runner", "laptop")
                .json(&post_body("attacker"));
            if let Some(auth) = auth {
                request = request.header("authorization", auth);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401, "{auth:?}");
        }
        assert_eq!(runner.stack.provider.acquired(), 0);
        assert!(runner.stack.strategy.posted().is_empty());
    })
    .await
    .expect("the test took too long");
}

/// The attack: a request from the network to a runner's own router carrying whatever a
/// relayed request might carry gets no trust: only the link's in-process mark does.
#[tokio::test]
async fn a_runners_router_gives_no_relay_trust_to_the_network() {
    let stack = fake_stack();
    let reply = call(
        &stack.app,
        axum::http::Request::builder()
            .method("POST")
            .uri("/v1/post")
            .header("content-type", "application/json")
            .header("x-abr-runner", "laptop")
            .header("x-abr-relayed", "true")
            .header("x-forwarded-for", "127.0.0.1")
            .body(axum::body::Body::from(post_body("attacker").to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(reply.error().0, 401);
    assert_eq!(stack.provider.acquired(), 0);
}

/// The attack: a leaked relay URL plus the long-lived API token must not open a runner
/// connection (which would receive the tenants' requests).
#[tokio::test]
async fn the_long_lived_api_token_does_not_open_a_relay_connection() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        assert_eq!(try_connect(&hub, "laptop", FAKE_TOKEN).await, 401);
        assert_eq!(try_connect(&hub, "laptop", FAKE_TOKEN_NEXT).await, 401);
        assert!(hub.hub.connected("laptop").is_none());
        // A relay token does.
        let token = mint(&hub, "laptop").await;
        assert_eq!(try_connect(&hub, "laptop", &token).await, 101);
    })
    .await
    .expect("the test took too long");
}

#[tokio::test]
async fn a_relay_token_is_scoped_to_its_runner_single_use_and_short_lived() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(
            HubSettings {
                token_ttl: Duration::from_millis(300),
                ..settings()
            },
            None,
        )
        .await;
        // Minted for A, presented for B.
        let for_a = mint(&hub, "runner-a").await;
        assert_eq!(try_connect(&hub, "runner-b", &for_a).await, 401);
        // Used once, refused the second time.
        let once = mint(&hub, "runner-a").await;
        assert_eq!(try_connect(&hub, "runner-a", &once).await, 101);
        assert_eq!(try_connect(&hub, "runner-a", &once).await, 401);
        // Expired.
        let late = mint(&hub, "runner-a").await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(try_connect(&hub, "runner-a", &late).await, 401);
        // Minting needs the API token, and a valid runner id.
        let response = client()
            .post(format!("http://{}/v1/relay/tokens", hub.addr))
            .json(&serde_json::json!({ "runnerId": "runner-a" }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);
        for bad in ["", "a/b", "../x", &"x".repeat(65)] {
            let response = client()
                .post(format!("http://{}/v1/relay/tokens", hub.addr))
                .bearer_auth(FAKE_TOKEN)
                .json(&serde_json::json!({ "runnerId": bad }))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 422, "{bad:?}");
            let body: serde_json::Value = response.json().await.unwrap();
            assert_eq!(error_of(&body).0, "invalid_request");
        }
    })
    .await
    .expect("the test took too long");
}

/// One socket per runner id: a second runner with a connected id is refused whatever host
/// its hello names (its own, or another: the name proves nothing), the first keeps the id;
/// `force` takes it over (the old link is told and stops); once the id's socket is gone, the
/// id is free again, from any host.
#[tokio::test]
async fn one_socket_per_runner_id_a_second_is_refused_from_any_host_unless_forced() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let first = Linked::connect(&hub, "laptop", "erins-mac").await;

        for (i, host) in ["erins-mac", "another-machine"].into_iter().enumerate() {
            let mut second = Linked::start(Linked::options(&hub, "laptop", host));
            let refused = second.ended().await;
            assert!(
                matches!(&refused, Err(RelayError::Conflict(m)) if m.contains("already connected to the hub")),
                "{host}: {refused:?}"
            );
            assert_eq!(hub.hub.connected("laptop").as_deref(), Some("erins-mac"));
            let text = format!("still first {i}");
            let (status, _) = hub_post(&hub, Some("laptop"), &text, None).await;
            assert_eq!(status, 200);
            assert!(second.stack.strategy.posted().is_empty(), "{host}");
        }
        assert_eq!(
            first.stack.strategy.posted(),
            ["still first 0", "still first 1"]
        );

        // --force, from another machine: the new one takes over, the old one is told and
        // stops.
        let mut options = Linked::options(&hub, "laptop", "new-machine");
        options.force = true;
        let forced = Linked::start(options);
        let mut first = first;
        let replaced = first.ended().await;
        assert!(
            matches!(replaced, Err(RelayError::Replaced)),
            "{replaced:?}"
        );
        wait_for("the forced runner", || {
            hub.hub.connected("laptop").as_deref() == Some("new-machine")
        })
        .await;
        let (status, _) = hub_post(&hub, Some("laptop"), "to the new one", None).await;
        assert_eq!(status, 200);
        assert_eq!(forced.stack.strategy.posted(), ["to the new one"]);
        assert_eq!(first.stack.strategy.posted().len(), 2);

        // The forced runner goes away: the id is free, for a runner from any host.
        forced.task.abort();
        wait_for("the hub to drop the forced runner", || {
            hub.hub.connected("laptop").is_none()
        })
        .await;
        let next = Linked::connect(&hub, "laptop", "home-pc").await;
        let (status, _) = hub_post(&hub, Some("laptop"), "after it", None).await;
        assert_eq!(status, 200);
        assert_eq!(next.stack.strategy.posted(), ["after it"]);
    })
    .await
    .expect("the test took too long");
}

/// The runner's socket drops while its post waits before the submit: the hub answers once,
/// `runner_disconnected` (retryable), and the runner then does not submit (its commit
/// announcement has nobody to reach), so "nothing was done" is true.
#[tokio::test]
async fn a_runner_lost_before_the_commit_point_is_retryable_and_commits_nothing() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        let hold = runner.stack.strategy.hold_posts();
        let call = spawn_relayed_post(hub.addr, "laptop", "never");
        wait_for("the post to start on the runner", || {
            runner.stack.provider.acquired() == 1
        })
        .await;
        runner.task.abort();
        let response = call.await.unwrap();
        assert_eq!(response.status(), 502);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(error_of(&body), ("runner_disconnected".to_owned(), true));

        // The job on the runner goes on, reaches its submit, and stops there.
        hold.add_permits(1);
        wait_for("the runner's job to end", || {
            runner.stack.provider.released() == 1
        })
        .await;
        assert_eq!(runner.stack.strategy.submits(), 0);
        assert!(runner.stack.strategy.posted().is_empty());
    })
    .await
    .expect("the test took too long");
}

/// The runner's socket drops after its post announced the submit: the hub answers once,
/// `runner_outcome_unknown`, never retryable.
#[tokio::test]
async fn a_runner_lost_after_the_commit_point_is_uncertain_and_never_retryable() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        runner.stack.strategy.edit(|s| s.verify = Script::Hang);
        let call = spawn_relayed_post(hub.addr, "laptop", "maybe");
        wait_for("the submit", || runner.stack.strategy.submits() == 1).await;
        runner.task.abort();
        let response = call.await.unwrap();
        assert_eq!(response.status(), 502);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(
            error_of(&body),
            ("runner_outcome_unknown".to_owned(), false)
        );
        assert_eq!(runner.stack.strategy.posted(), ["maybe"]);
    })
    .await
    .expect("the test took too long");
}

/// A hub that restarts: the runner reconnects by itself (fresh token, backoff) and serves
/// again.
#[tokio::test]
async fn the_runner_reconnects_after_the_hub_restarts() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let addr = hub.addr;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        hub.stop().await;
        let hub = HubServer::start(settings(), Some(addr)).await;
        wait_for("the runner to reconnect", || {
            hub.hub.connected("laptop").as_deref() == Some("erins-mac")
        })
        .await;
        let (status, body) = hub_post(&hub, Some("laptop"), "after restart", None).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(runner.stack.strategy.posted(), ["after restart"]);
    })
    .await
    .expect("the test took too long");
}

/// `Drain`: new work is refused (the hub knows, and says so) while the post in flight
/// finishes; then the link closes and returns.
#[tokio::test]
async fn drain_refuses_new_work_and_finishes_the_work_in_flight() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        let hold = runner.stack.strategy.hold_posts();
        let call = spawn_relayed_post(hub.addr, "laptop", "drained");
        wait_for("the post to start", || {
            runner.stack.provider.acquired() == 1
        })
        .await;
        runner.stop.send_replace(Shutdown::Drain);
        wait_for("the hub to hear of the drain", || {
            hub.hub.draining("laptop")
        })
        .await;
        let (_, body) = hub_post(&hub, Some("laptop"), "too late", None).await;
        assert_eq!(error_of(&body), ("runner_draining".to_owned(), true));
        assert_eq!(
            runner.stack.provider.acquired(),
            1,
            "new work reached the runner"
        );
        hold.add_permits(1);
        let response = call.await.unwrap();
        assert_eq!(response.status(), 200, "{:?}", response.text().await);
        let mut runner = runner;
        runner.ended().await.unwrap();
        assert_eq!(runner.stack.strategy.posted(), ["drained"]);
        wait_for("the hub to drop the drained runner", || {
            hub.hub.connected("laptop").is_none()
        })
        .await;
    })
    .await
    .expect("the test took too long");
}

/// A runner that stops answering (no frames, no pongs) is dropped by the hub's heartbeat,
/// and a call for it is then `runner_offline`.
#[tokio::test]
async fn the_hub_drops_a_silent_runner() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let token = mint(&hub, "mute").await;
        let mut request = format!("ws://{}/v1/relay/mute/connect", hub.addr)
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        let hello = serde_json::to_vec(&serde_json::json!({
            "type": "hello", "runnerId": "mute", "host": "h", "version": env!("CARGO_PKG_VERSION"), "launch": "test"
        }))
        .unwrap();
        let mut frame = u32::try_from(hello.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(&hello);
        futures::SinkExt::send(
            &mut socket,
            tokio_tungstenite::tungstenite::Message::Binary(frame.into()),
        )
        .await
        .unwrap();
        wait_for("the hub to accept the runner", || {
            hub.hub.connected("mute").as_deref() == Some("h")
        })
        .await;
        // Never read again (so never a pong): dead after `dead_after`.
        wait_for("the hub to drop the silent runner", || {
            hub.hub.connected("mute").is_none()
        })
        .await;
        let (status, body) = hub_post(&hub, Some("mute"), "x", None).await;
        assert_eq!(status, 503);
        assert_eq!(error_of(&body).0, "runner_offline");
        drop(socket);
    })
    .await
    .expect("the test took too long");
}

/// `abr-client` with a runner: the same typed calls, run on that runner through the hub.
#[tokio::test]
async fn the_typed_client_calls_a_runner_through_the_hub() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        let for_runner = abr_client::AgentRunnerClient::builder(format!("http://{}", hub.addr))
            .token(FAKE_TOKEN)
            .runner("laptop")
            .build()
            .unwrap();
        let platforms = for_runner.platforms().await.unwrap();
        assert!(platforms.platforms.iter().any(|p| p.id == FAKE_PLATFORM));
        let request: abr_protocol::PostRequest =
            serde_json::from_value(post_body("typed")).unwrap();
        let result = for_runner.post(&request).await.unwrap();
        assert!(result.ok, "{result:?}");
        assert_eq!(runner.stack.strategy.posted(), ["typed"]);

        let offline = abr_client::AgentRunnerClient::builder(format!("http://{}", hub.addr))
            .token(FAKE_TOKEN)
            .runner("elsewhere")
            .build()
            .unwrap();
        let e = offline.post(&request).await.unwrap_err();
        assert!(e.is_retryable(), "{e}");
        assert_eq!(api_code(&e), Some("runner_offline".to_owned()));
    })
    .await
    .expect("the test took too long");
}

fn api_code(e: &abr_client::ClientError) -> Option<String> {
    match e {
        abr_client::ClientError::Api { code, .. } => Some(code.clone()),
        _ => None,
    }
}

/// A relay frame as the wire carries it: length, JSON head, no body.
fn raw_frame(head: &serde_json::Value) -> Vec<u8> {
    let head = serde_json::to_vec(head).unwrap();
    let mut frame = u32::try_from(head.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(&head);
    frame
}

/// A hub that welcomes the runner, then goes silent (it neither reads nor writes, so no
/// pong either): the runner's heartbeat notices and reconnects with a fresh token.
#[tokio::test]
async fn a_runner_whose_hub_goes_silent_reconnects_with_a_fresh_token() {
    use axum::extract::ws::{Message, WebSocketUpgrade};
    use std::sync::atomic::{AtomicUsize, Ordering};

    tokio::time::timeout(LIMIT, async {
        let minted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&minted);
        let silent = axum::Router::new()
            .route(
                "/v1/relay/tokens",
                axum::routing::post(move || {
                    let n = counter.fetch_add(1, Ordering::SeqCst);
                    async move {
                        axum::Json(serde_json::json!({
                            "token": format!("token-{n}"),
                            "runnerId": "laptop",
                            "expiresAt": "2030-01-01T00:00:00Z",
                            "connectPath": "/v1/relay/laptop/connect",
                        }))
                    }
                }),
            )
            .route(
                "/v1/relay/laptop/connect",
                axum::routing::get(|upgrade: WebSocketUpgrade| async move {
                    upgrade.on_upgrade(|mut socket| async move {
                        let _hello = socket.recv().await;
                        let welcome = raw_frame(&serde_json::json!({
                            "type": "welcome", "version": "silent"
                        }));
                        let _ = socket.send(Message::Binary(welcome.into())).await;
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    })
                }),
            );
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, silent).await;
        });
        let mut options = LinkOptions::new(
            url::Url::parse(&format!("http://{addr}")).unwrap(),
            SecretString::from(FAKE_TOKEN.to_owned()),
            "laptop".into(),
            "erins-mac".into(),
        );
        options.heartbeat = Duration::from_millis(100);
        options.dead_after = Duration::from_millis(500);
        options.backoff_base = Duration::from_millis(20);
        options.backoff_cap = Duration::from_millis(100);
        let linked = Linked::start(options);
        wait_for("a reconnect after the hub went silent", || {
            minted.load(Ordering::SeqCst) >= 3
        })
        .await;
        drop(linked);
        server.abort();
    })
    .await
    .expect("the test took too long");
}

/// A post through the hub naming `runner`, sent in the background (the test acts on the
/// runner while it is in flight).
fn spawn_relayed_post(
    addr: std::net::SocketAddr,
    runner: &'static str,
    text: &'static str,
) -> tokio::task::JoinHandle<reqwest::Response> {
    tokio::spawn(async move {
        client()
            .post(format!("http://{addr}/v1/post"))
            .bearer_auth(FAKE_TOKEN)
            .header("x-abr-runner", runner)
            .json(&post_body(text))
            .send()
            .await
            .unwrap()
    })
}

type WsClient =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens `runner_id`'s connect endpoint with a relay token and sends a hello naming `host`
/// (`force` as given): the socket, the hello sent.
async fn open_as_runner(hub: &HubServer, runner_id: &str, host: &str, force: bool) -> WsClient {
    open_as_runner_of(hub, runner_id, host, force, env!("CARGO_PKG_VERSION")).await
}

/// [`open_as_runner`] whose hello says `version`.
async fn open_as_runner_of(
    hub: &HubServer,
    runner_id: &str,
    host: &str,
    force: bool,
    version: &str,
) -> WsClient {
    let token = mint(hub, runner_id).await;
    let mut request = format!("ws://{}/v1/relay/{runner_id}/connect", hub.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (mut socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 101);
    let hello = raw_frame(&serde_json::json!({
        "type": "hello", "runnerId": runner_id, "host": host, "force": force,
        "version": version, "launch": "test"
    }));
    futures::SinkExt::send(
        &mut socket,
        tokio_tungstenite::tungstenite::Message::Binary(hello.into()),
    )
    .await
    .unwrap();
    socket
}

/// A frame read off the wire: its JSON head and its body.
fn parse_frame(bytes: &[u8]) -> (serde_json::Value, Vec<u8>) {
    let (len, rest) = bytes.split_at(4);
    let len = u32::from_be_bytes(len.try_into().unwrap()) as usize;
    let head = serde_json::from_slice(&rest[..len]).unwrap();
    (head, rest[len..].to_vec())
}

/// The next relay frame on `socket` (pings skipped); `None` once it closed.
async fn next_frame(socket: &mut WsClient) -> Option<(serde_json::Value, Vec<u8>)> {
    use futures::StreamExt as _;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("the hub said nothing");
        match message {
            Some(Ok(Message::Binary(bytes))) => return Some(parse_frame(&bytes)),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            Some(Ok(Message::Close(_)) | Err(_)) | None => return None,
            Some(Ok(other)) => panic!("not a relay frame: {other:?}"),
        }
    }
}

/// A relay frame with a body.
fn raw_frame_with(head: &serde_json::Value, body: &[u8]) -> Vec<u8> {
    let mut frame = raw_frame(head);
    frame.extend_from_slice(body);
    frame
}

/// The attack, from the attacker's side: with the hub's API token, mint a relay token for a
/// runner id that is connected and connect with a hello naming another host, without
/// `force`, hoping the hub sends that id's calls (a session and its cookie) to the attacker.
/// The hub refuses it (`409 runner_conflict`, whatever the host), the real runner keeps the
/// id and gets the next call, and the attacker's socket gets nothing.
#[tokio::test]
async fn an_attacker_with_the_api_token_cannot_take_a_connected_runner_id_from_another_host() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;

        let mut attacker = open_as_runner(&hub, "laptop", "attackers-box", false).await;
        let (answer, _) = next_frame(&mut attacker)
            .await
            .expect("the hub closed without answering the hello");
        assert_eq!(
            answer["type"], "refused",
            "the attacker was let in: {answer}"
        );
        assert_eq!(answer["status"], 409, "{answer}");
        assert_eq!(answer["error"]["code"], "runner_conflict", "{answer}");

        // The next call for "laptop" carries a session with its cookie value.
        let secret = "alice-cookie-value-7f3a9c";
        let store = abr_protocol::StoreSessionRequest {
            session: abr_protocol::AgentSessionState {
                cookies: vec![abr_protocol::Cookie::new("sid", secret, "fake.example")],
                ..abr_protocol::AgentSessionState::default()
            },
            platform: Some(FAKE_PLATFORM.into()),
            scope: None,
        };
        let response = client()
            .put(format!("http://{}/v1/sessions/alice", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .header("x-tenant-id", "tenant-1")
            .header("x-abr-runner", "laptop")
            .json(&store)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        assert_eq!(status, 200, "{body}");
        // It is kept on the real runner.
        let kept = call(
            &runner.stack.app,
            authed(axum::http::Method::GET, "/v1/sessions/alice")
                .header("x-tenant-id", "tenant-1")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(kept.status, 200, "{}", kept.body);
        assert!(kept.body.contains(secret), "not the stored session");

        // The attacker's socket was closed with nothing else on it: no request, no cookie.
        while let Some((frame, body)) = next_frame(&mut attacker).await {
            assert_ne!(frame["type"], "request", "the attacker got a call: {frame}");
            assert!(!String::from_utf8_lossy(&body).contains(secret));
            assert!(!frame.to_string().contains(secret));
        }
    })
    .await
    .expect("the test took too long");
}

/// What a runner the test plays answers: status, headers, body.
type Answer = (u16, Vec<(String, String)>, Vec<u8>);

/// A runner the test plays on the socket: says hello, then answers every forwarded request
/// with `answer(method, path, body)`, reading the socket all along (so its pongs go out).
struct PlayedRunner {
    task: JoinHandle<()>,
}

impl PlayedRunner {
    async fn connect(
        hub: &HubServer,
        runner_id: &str,
        answer: impl Fn(&str, &str, &[u8]) -> Answer + Send + 'static,
    ) -> Self {
        let mut socket = open_as_runner(hub, runner_id, "played", false).await;
        let (welcome, _) = next_frame(&mut socket).await.unwrap();
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        let task = tokio::spawn(async move {
            while let Some((frame, body)) = next_frame(&mut socket).await {
                if frame["type"] != "request" {
                    continue;
                }
                let (status, headers, reply) = answer(
                    frame["method"].as_str().unwrap(),
                    frame["path"].as_str().unwrap(),
                    &body,
                );
                let response = raw_frame_with(
                    &serde_json::json!({
                        "type": "response", "id": frame["id"], "status": status,
                        "headers": headers,
                    }),
                    &reply,
                );
                let sent = futures::SinkExt::send(
                    &mut socket,
                    tokio_tungstenite::tungstenite::Message::Binary(response.into()),
                )
                .await;
                if sent.is_err() {
                    break;
                }
            }
        });
        Self { task }
    }
}

impl Drop for PlayedRunner {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

/// The nonce a played runner's live page uses.
const PLAYED_NONCE: &str = "Pl4yed-n0nce_0123456789abcdefABCDEF";

/// The CSP the runner's own viewer page sends, with `frame_ancestors`.
fn viewer_shaped_csp(frame_ancestors: &str) -> String {
    format!(
        "default-src 'none'; script-src 'nonce-{PLAYED_NONCE}'; style-src \
         'nonce-{PLAYED_NONCE}'; img-src blob:; connect-src 'self'; base-uri 'none'; \
         form-action 'none'; frame-ancestors {frame_ancestors}"
    )
}

/// How the played runner answers the live page of each token (the capture's `accountId`).
fn live_page_answer(token: &str) -> Answer {
    let html = |csp: Option<String>| {
        let mut headers = pairs(&[
            ("content-type", "text/html; charset=utf-8"),
            ("set-cookie", "hub_session=attacker; Path=/; HttpOnly"),
            ("set-cookie", "other=1; Domain=127.0.0.1; Path=/"),
            ("clear-site-data", "\"cookies\", \"storage\""),
            ("access-control-allow-origin", "*"),
            ("access-control-allow-credentials", "true"),
            ("refresh", "0; url=https://evil.example/"),
            ("location", "https://evil.example/"),
            (
                "link",
                "<https://evil.example/x.js>; rel=preload; as=script",
            ),
            ("content-security-policy-report-only", "default-src *"),
            ("cache-control", "public, max-age=31536000"),
            ("referrer-policy", "unsafe-url"),
            ("x-content-type-options", "sniff-away"),
            ("service-worker-allowed", "/"),
            ("x-evil", "1"),
        ]);
        if let Some(csp) = csp {
            headers.push(("content-security-policy".into(), csp));
        }
        let body = format!(
            "<!doctype html><script nonce=\"{PLAYED_NONCE}\">document.title='played'</script>"
        );
        (200, headers, body.into_bytes())
    };
    match token {
        "tok-evil-csp" => html(Some(
            "default-src * 'unsafe-inline' 'unsafe-eval'; frame-ancestors *".into(),
        )),
        "tok-no-csp" => html(None),
        "tok-two-csps" => {
            let (status, mut headers, body) = html(Some(viewer_shaped_csp("'self'")));
            headers.push(("content-security-policy".into(), "default-src *".into()));
            (status, headers, body)
        }
        "tok-shaped-but-wider" => html(Some(format!(
            "{}; script-src *",
            viewer_shaped_csp("'self'")
        ))),
        "tok-wild-ancestors" => html(Some(viewer_shaped_csp("'self' *"))),
        "tok-shaped" => html(Some(viewer_shaped_csp(
            "'self' https://app.example https://evil.example",
        ))),
        "tok-script" => (
            200,
            pairs(&[
                ("content-type", "text/javascript"),
                ("set-cookie", "hub_session=attacker; Path=/"),
                ("service-worker-allowed", "/"),
            ]),
            b"self.addEventListener('fetch', () => {})".to_vec(),
        ),
        "tok-svg" => (
            200,
            pairs(&[("content-type", "image/svg+xml")]),
            b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>".to_vec(),
        ),
        "tok-redirect" => (
            302,
            pairs(&[
                ("content-type", "text/html"),
                ("location", "https://evil.example/"),
            ]),
            Vec::new(),
        ),
        _ => (
            404,
            pairs(&[
                ("content-type", "application/json"),
                ("set-cookie", "hub_session=attacker; Path=/"),
            ]),
            br#"{"error":{"code":"live_view_not_found","message":"gone","retryable":false}}"#
                .to_vec(),
        ),
    }
}

/// The played runner: a capture start answers a live-view URL whose token is the request's
/// `accountId`; the live page of a token is [`live_page_answer`]; anything else is a JSON
/// answer carrying a `Set-Cookie` and the API's own `idempotent-replayed`.
fn played_answer(method: &str, path: &str, body: &[u8]) -> Answer {
    if method == "POST" && path == "/v1/capture/start" {
        let request: serde_json::Value = serde_json::from_slice(body).unwrap();
        let token = request["accountId"].as_str().unwrap();
        let answer = serde_json::json!({
            "captureId": format!("cap-{token}"),
            "liveViewUrl": format!("http://runner.invalid/live/{token}"),
            "expiresAt": "2999-01-01T00:00:00Z",
        });
        return (
            200,
            pairs(&[("content-type", "application/json")]),
            answer.to_string().into_bytes(),
        );
    }
    if let Some(token) = path.strip_prefix("/live/") {
        return live_page_answer(token);
    }
    (
        200,
        pairs(&[
            ("content-type", "application/json"),
            ("idempotent-replayed", "true"),
            ("set-cookie", "hub_session=attacker; Path=/"),
            ("access-control-allow-origin", "*"),
        ]),
        br#"{"platforms":[]}"#.to_vec(),
    )
}

/// Headers a runner's answer must never put on the hub's origin.
const NEVER_COPIED: [&str; 11] = [
    "set-cookie",
    "clear-site-data",
    "access-control-allow-origin",
    "access-control-allow-credentials",
    "refresh",
    "location",
    "link",
    "content-security-policy-report-only",
    "service-worker-allowed",
    "x-evil",
    "x-frame-options",
];

/// The attack, from a runner's side (the test plays it on the socket): its answer to a
/// relayed live-view page carries `Set-Cookie`, an evil CSP or none, and other headers that
/// act on the hub's origin. The hub serves the page with its own CSP and security headers
/// only; a type it does not serve as a page is refused; and a forwarded API answer keeps
/// the API's own headers, never a `Set-Cookie`.
#[tokio::test]
async fn a_runners_live_page_is_served_with_the_hubs_headers_and_never_its_cookies() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start_with(settings(), |c| {
            c.live.embed_origins = vec!["https://app.example".into()];
        })
        .await;
        let _played = PlayedRunner::connect(&hub, "played", played_answer).await;
        wait_for("the played runner", || {
            hub.hub.connected("played").is_some()
        })
        .await;

        let live_page = |token: &'static str| {
            let addr = hub.addr;
            async move {
                let capture = client()
                    .post(format!("http://{addr}/v1/capture/start"))
                    .bearer_auth(FAKE_TOKEN)
                    .header("x-abr-runner", "played")
                    .json(&serde_json::json!({
                        "workspaceId": "ws", "accountId": token, "platform": FAKE_PLATFORM
                    }))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(capture.status(), 200);
                let capture: serde_json::Value = capture.json().await.unwrap();
                let url = capture["liveViewUrl"].as_str().unwrap().to_owned();
                assert_eq!(url, format!("http://runner.test/live/{token}"));
                // The viewer's browser asks the hub itself.
                client()
                    .get(format!("http://{addr}/live/{token}"))
                    .send()
                    .await
                    .unwrap()
            }
        };
        let assert_hubs_headers = |token: &str, headers: &reqwest::header::HeaderMap| {
            for name in NEVER_COPIED {
                assert!(
                    headers.get(name).is_none(),
                    "{token}: the runner's {name} was copied: {headers:?}"
                );
            }
            assert_eq!(headers["x-content-type-options"], "nosniff", "{token}");
            assert_eq!(headers["cache-control"], "no-store", "{token}");
            assert_eq!(headers["referrer-policy"], "no-referrer", "{token}");
            assert_eq!(
                headers.get_all("content-security-policy").iter().count(),
                1,
                "{token}: {headers:?}"
            );
            headers["content-security-policy"]
                .to_str()
                .unwrap()
                .to_owned()
        };

        // A page whose CSP is not the runner's viewer CSP (an evil one, none, two, a wider
        // one, framing by anyone): the hub's CSP runs no script at all.
        for token in [
            "tok-evil-csp",
            "tok-no-csp",
            "tok-two-csps",
            "tok-shaped-but-wider",
            "tok-wild-ancestors",
        ] {
            let page = live_page(token).await;
            assert_eq!(page.status(), 200, "{token}");
            let csp = assert_hubs_headers(token, page.headers());
            assert!(
                page.headers()["content-type"]
                    .to_str()
                    .unwrap()
                    .starts_with("text/html"),
                "{token}"
            );
            assert!(csp.starts_with("default-src 'none'"), "{token}: {csp}");
            for weak in ["script-src", "unsafe", "*", "nonce"] {
                assert!(!csp.contains(weak), "{token}: {weak} in {csp}");
            }
            assert!(csp.contains("frame-ancestors 'none'"), "{token}: {csp}");
        }

        // The runner's viewer CSP: its nonce is kept (its page's scripts run), framing is
        // the hub's ('self' and the embedding apps the hub allows too, not evil.example).
        let page = live_page("tok-shaped").await;
        assert_eq!(page.status(), 200);
        let csp = assert_hubs_headers("tok-shaped", page.headers());
        assert_eq!(csp, viewer_shaped_csp("'self' https://app.example"));
        assert!(
            page.text()
                .await
                .unwrap()
                .contains(&format!("nonce=\"{PLAYED_NONCE}\""))
        );

        // What the hub does not serve as a live page from a runner: a script (a service
        // worker on the hub's origin), an SVG, a redirect.
        for token in ["tok-script", "tok-svg", "tok-redirect"] {
            let page = live_page(token).await;
            assert_eq!(page.status(), 502, "{token}");
            assert_hubs_headers(token, page.headers());
            let body: serde_json::Value = page.json().await.unwrap();
            assert_eq!(error_of(&body).0, "live_view_unavailable", "{token}");
        }

        // An error envelope from the runner: served as JSON, with the hub's headers.
        let page = live_page("tok-ended").await;
        assert_eq!(page.status(), 404);
        assert_hubs_headers("tok-ended", page.headers());
        let body: serde_json::Value = page.json().await.unwrap();
        assert_eq!(error_of(&body).0, "live_view_not_found");

        // A forwarded API answer: the API's own headers, never the runner's cookie.
        let answer = client()
            .get(format!("http://{}/v1/platforms", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .header("x-abr-runner", "played")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let headers = answer.headers();
        assert!(headers.get("set-cookie").is_none(), "{headers:?}");
        assert!(headers.get("access-control-allow-origin").is_none());
        assert_eq!(headers["idempotent-replayed"], "true");
        assert_eq!(headers["content-type"], "application/json");
    })
    .await
    .expect("the test took too long");
}

/// The hub asks a linked runner for a session stored on it: refused (sessions stay on the
/// user's machine), unless that runner's operator allowed it.
#[tokio::test]
async fn the_hub_cannot_read_a_stored_session_out_of_a_runner_unless_allowed() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        let put = call(
            &runner.stack.app,
            authed(axum::http::Method::PUT, "/v1/sessions/s1")
                .header(axum::http::header::CONTENT_TYPE, "application/json")
                .body(axum::body::Body::from(
                    serde_json::json!({
                        "platform": FAKE_PLATFORM,
                        "session": {"cookies": [{"name": "sid", "value": "the-users-cookie",
                            "domain": "fake.example", "path": "/"}], "origins": []}
                    })
                    .to_string(),
                ))
                .unwrap(),
        )
        .await;
        assert_eq!(put.status, 200, "{}", put.body);
        let through_hub = client()
            .get(format!("http://{}/v1/sessions/s1", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .header("x-abr-runner", "laptop")
            .send()
            .await
            .unwrap();
        assert_eq!(through_hub.status().as_u16(), 403);
        let body = through_hub.text().await.unwrap();
        assert!(body.contains("forbidden"), "{body}");
        assert!(!body.contains("the-users-cookie"), "{body}");
        drop(runner);

        // A runner started with --allow-session-export gives it.
        let stack = fake_stack_with(FakeProvider::new(), |c| c.relay_session_export = true);
        let (stop, stopped) = watch::channel(Shutdown::Running);
        let task = tokio::spawn(link::run(
            stack.app.clone(),
            Linked::options(&hub, "desk", "erins-desk"),
            stopped,
        ));
        wait_for("the runner to connect", || {
            hub.hub.connected("desk").as_deref() == Some("erins-desk")
        })
        .await;
        let put = call(
            &stack.app,
            authed(axum::http::Method::PUT, "/v1/sessions/s1")
                .header(axum::http::header::CONTENT_TYPE, "application/json")
                .body(axum::body::Body::from(
                    serde_json::json!({
                        "platform": FAKE_PLATFORM,
                        "session": {"cookies": [{"name": "sid", "value": "v",
                            "domain": "fake.example", "path": "/"}], "origins": []}
                    })
                    .to_string(),
                ))
                .unwrap(),
        )
        .await;
        assert_eq!(put.status, 200, "{}", put.body);
        let allowed = client()
            .get(format!("http://{}/v1/sessions/s1", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .header("x-abr-runner", "desk")
            .send()
            .await
            .unwrap();
        assert_eq!(allowed.status().as_u16(), 200);
        drop(stop);
        task.abort();
    })
    .await
    .expect("the test took too long");
}

/// `POST` `body` to the hub's `path` with `bearer`, and optionally for `runner` and a
/// tenant: status and body.
async fn hub_call(
    hub: &HubServer,
    bearer: &str,
    path: &str,
    runner: Option<&str>,
    tenant: Option<&str>,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let mut request = client()
        .post(format!("http://{}{path}", hub.addr))
        .bearer_auth(bearer)
        .json(body);
    if let Some(runner) = runner {
        request = request.header("x-abr-runner", runner);
    }
    if let Some(tenant) = tenant {
        request = request.header("x-tenant-id", tenant);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// A key made on the hub by its operator.
async fn hub_key(hub: &HubServer, name: &str, role: &str, tenant: &str) -> String {
    let body = serde_json::json!({"name": name, "role": role, "tenantId": tenant});
    let (status, created) = hub_call(hub, FAKE_TOKEN, "/v1/keys", None, None, &body).await;
    assert_eq!(status, 201, "{created}");
    created["token"].as_str().unwrap().to_owned()
}

/// An enrollment code for `runner_id` made with `bearer`: its status and the code.
async fn enrollment(hub: &HubServer, bearer: &str, runner_id: &str) -> (u16, String) {
    let body = serde_json::json!({"runnerId": runner_id});
    let (status, answer) = hub_call(hub, bearer, "/v1/relay/enrollments", None, None, &body).await;
    assert!(status == 201 || status == 403, "{status}: {answer}");
    (
        status,
        answer["code"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Trades `code` for `runner_id`'s credential: its status and the credential.
async fn redeem(hub: &HubServer, runner_id: &str, code: &str) -> (u16, String) {
    let response = client()
        .post(format!("http://{}/v1/relay/enroll", hub.addr))
        .json(&serde_json::json!({"runnerId": runner_id, "code": code}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    assert!(
        status == 201 || status == 401 || status == 403,
        "{status}: {body}"
    );
    (
        status,
        body["token"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test]
async fn a_runner_enrolls_once_and_its_credential_connects_only_its_own_runner_id() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let agent_a = hub_key(&hub, "bot", "agent", "tenant-a").await;
        let approver_a = hub_key(&hub, "Ada", "approver", "tenant-a").await;
        let approver_b = hub_key(&hub, "Bo", "approver", "tenant-b").await;

        // An agent does not enroll runners; an approver of the tenant does.
        assert_eq!(enrollment(&hub, &agent_a, "a-laptop").await.0, 403);
        let (status, code_a) = enrollment(&hub, &approver_a, "a-laptop").await;
        assert_eq!(status, 201);
        let (_, code_b) = enrollment(&hub, &approver_b, "a-laptop").await;
        // A code works for its own runner id only, and the wrong attempt uses it up.
        assert_eq!(redeem(&hub, "b-desk", &code_b).await.0, 401);
        assert_eq!(redeem(&hub, "a-laptop", &code_b).await.0, 401, "used up");
        let (status, credential_a) = redeem(&hub, "a-laptop", &code_a).await;
        assert_eq!(status, 201);
        assert_eq!(redeem(&hub, "a-laptop", &code_a).await.0, 401, "once");
        // The runner id is tenant A's now: tenant B cannot enroll it.
        assert_eq!(enrollment(&hub, &approver_b, "a-laptop").await.0, 403);

        // The credential mints for its own runner id only; an agent's key for none.
        let mint = |id: &str| serde_json::json!({"runnerId": id});
        let path = "/v1/relay/tokens";
        let (status, _) = hub_call(&hub, &credential_a, path, None, None, &mint("b-desk")).await;
        assert_eq!(status, 403, "another runner's id");
        let (status, _) = hub_call(&hub, &agent_a, path, None, None, &mint("a-laptop")).await;
        assert_eq!(status, 403, "an agent's key connects no runner");
        let (status, _) = hub_call(&hub, &credential_a, path, None, None, &mint("a-laptop")).await;
        assert_eq!(status, 200);
        // It calls no API, on the hub or through it.
        let (status, _) =
            hub_call(&hub, &credential_a, "/v1/post", None, None, &post_body("x")).await;
        assert_eq!(status, 403);
        let (status, _) = hub_call(
            &hub,
            &credential_a,
            "/v1/post",
            Some("a-laptop"),
            None,
            &post_body("x"),
        )
        .await;
        assert_eq!(status, 403);

        // Connected with its credential; an attacker with another tenant's approver key
        // cannot take the runner id over, even forcing.
        let mut options = Linked::options(&hub, "a-laptop", "adas-laptop");
        options.credential = SecretString::from(credential_a.clone());
        let runner = Linked::start(options);
        wait_for("the runner to connect", || {
            hub.hub.connected("a-laptop").as_deref() == Some("adas-laptop")
        })
        .await;
        let mut attacker = Linked::options(&hub, "a-laptop", "mallorys-box");
        attacker.credential = SecretString::from(approver_b.clone());
        attacker.force = true;
        let mut attacker = Linked::start(attacker);
        let ended = attacker.ended().await;
        assert!(matches!(ended, Err(RelayError::Unauthorized)), "{ended:?}");
        assert_eq!(
            hub.hub.connected("a-laptop").as_deref(),
            Some("adas-laptop"),
            "still Ada's runner"
        );
        drop(runner);
    })
    .await
    .expect("the test took too long");
}

#[tokio::test]
async fn only_the_runners_tenant_reaches_it_and_as_itself_not_as_the_hub() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let agent_a = hub_key(&hub, "bot", "agent", "tenant-a").await;
        let approver_a = hub_key(&hub, "Ada", "approver", "tenant-a").await;
        let agent_b = hub_key(&hub, "other bot", "agent", "tenant-b").await;
        let (_, code) = enrollment(&hub, &approver_a, "a-laptop").await;
        let (_, credential) = redeem(&hub, "a-laptop", &code).await;
        let mut options = Linked::options(&hub, "a-laptop", "adas-laptop");
        options.credential = SecretString::from(credential);
        let runner = Linked::start(options);
        wait_for("the runner to connect", || {
            hub.hub.connected("a-laptop").is_some()
        })
        .await;

        // Another tenant's key is told the runner is not there; nothing ran.
        let (status, body) =
            hub_call(&hub, &agent_b, "/v1/post", Some("a-laptop"), None, &post_body("b's")).await;
        assert_eq!((status, error_of(&body).0.as_str()), (503, "runner_offline"), "{body}");
        assert!(runner.stack.strategy.posted().is_empty());
        // The tenant's own agent reaches it.
        let (status, body) =
            hub_call(&hub, &agent_a, "/v1/post", Some("a-laptop"), None, &post_body("a's")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(runner.stack.strategy.posted(), ["a's"]);
        // The hub's operator is pinned to the runner's tenant.
        let (status, body) = hub_call(
            &hub,
            FAKE_TOKEN,
            "/v1/post",
            Some("a-laptop"),
            Some("tenant-b"),
            &post_body("op's"),
        )
        .await;
        assert_eq!((status, error_of(&body).0.as_str()), (403, "tenant_forbidden"), "{body}");

        // On the runner the agent is an agent: it cannot approve its own plan through the
        // hub (relayed requests used to act as the hub's operator). The approver can.
        let plan = serde_json::json!({"plan": {
            "targetUrl": "https://fake.example/form",
            "steps": [{"type": "click", "selector": "role=button[name=Submit]", "description": "Submit"}],
            "verification": {"method": "dom_check", "selector": "h1"}
        }});
        let (status, task) = hub_call(&hub, &agent_a, "/v1/tasks", Some("a-laptop"), None, &plan).await;
        assert_eq!(status, 201, "{task}");
        assert_eq!(task["proposedBy"]["name"], "bot");
        let approve = format!("/v1/tasks/{}/approve", task["taskId"].as_str().unwrap());
        let hash = serde_json::json!({"planHash": task["planHash"]});
        let (status, body) = hub_call(&hub, &agent_a, &approve, Some("a-laptop"), None, &hash).await;
        assert_eq!((status, error_of(&body).0.as_str()), (403, "forbidden"), "{body}");
        let (status, body) = hub_call(&hub, &approver_a, &approve, Some("a-laptop"), None, &hash).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["approval"]["approvedBy"], "Ada");
        drop(runner);
    })
    .await
    .expect("the test took too long");
}

#[tokio::test]
async fn a_runner_below_the_hubs_minimum_version_is_refused_with_its_message() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        // An old runner's hello, on the wire.
        let mut socket = open_as_runner_of(&hub, "old-box", "attic", false, "0.0.9").await;
        let (head, _) = next_frame(&mut socket).await.unwrap();
        assert_eq!(head["type"], "refused", "{head}");
        assert_eq!(head["status"], 426);
        assert_eq!(head["error"]["code"], "runner_too_old");
        let said = head["error"]["message"].as_str().unwrap();
        assert!(said.contains("0.0.9") && said.contains("0.1.0"), "{said}");
        assert!(hub.hub.connected("old-box").is_none());
        hub.stop().await;

        // This build's runner at a hub that wants a later one stops, saying why.
        let hub = HubServer::start(
            HubSettings {
                min_runner_version: semver::Version::new(9, 0, 0),
                ..settings()
            },
            None,
        )
        .await;
        let mut runner = Linked::start(Linked::options(&hub, "laptop", "erins-mac"));
        let ended = runner.ended().await;
        match ended {
            Err(RelayError::TooOld(message)) => assert!(message.contains("9.0.0"), "{message}"),
            other => panic!("{other:?}"),
        }
    })
    .await
    .expect("the test took too long");
}

#[tokio::test]
async fn an_offline_runner_that_comes_back_within_the_wait_serves_the_request_once() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(
            HubSettings {
                offline_wait: Duration::from_secs(10),
                ..settings()
            },
            None,
        )
        .await;
        let url = format!("http://{}/v1/post", hub.addr);
        let call = tokio::spawn(async move {
            let response = client()
                .post(url)
                .bearer_auth(FAKE_TOKEN)
                .header("x-tenant-id", "tenant-1")
                .header("x-abr-runner", "late")
                .json(&post_body("waited for"))
                .send()
                .await
                .unwrap();
            response.status().as_u16()
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!call.is_finished(), "it waits for the runner");
        let runner = Linked::connect(&hub, "late", "erins-mac").await;
        assert_eq!(call.await.unwrap(), 200);
        assert_eq!(runner.stack.strategy.posted(), ["waited for"], "once");
        assert!(hub.hub_runner.strategy.posted().is_empty());
    })
    .await
    .expect("the test took too long");
}

#[tokio::test]
async fn the_hub_lists_the_runners_a_caller_reaches_with_their_health() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let agent_a = hub_key(&hub, "bot", "agent", "tenant-a").await;
        let approver_a = hub_key(&hub, "Ada", "approver", "tenant-a").await;
        let agent_b = hub_key(&hub, "other bot", "agent", "tenant-b").await;
        let (_, code) = enrollment(&hub, &approver_a, "a-laptop").await;
        let (_, credential) = redeem(&hub, "a-laptop", &code).await;
        let mut options = Linked::options(&hub, "a-laptop", "adas-laptop");
        options.credential = SecretString::from(credential);
        let _enrolled = Linked::start(options);
        let _operators = Linked::connect(&hub, "ops-box", "rack-1").await;
        wait_for("the runner to connect", || {
            hub.hub.connected("a-laptop").is_some()
        })
        .await;
        let list = |bearer: String, tenant: Option<&'static str>| {
            let addr = hub.addr;
            async move {
                let mut request = client()
                    .get(format!("http://{addr}/v1/runners"))
                    .bearer_auth(bearer);
                if let Some(t) = tenant {
                    request = request.header("x-tenant-id", t);
                }
                let response = request.send().await.unwrap();
                assert_eq!(response.status(), 200);
                let body: serde_json::Value = response.json().await.unwrap();
                body["runners"].as_array().unwrap().clone()
            }
        };
        let seen = list(agent_a, None).await;
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0]["runnerId"], "a-laptop");
        assert_eq!(seen[0]["host"], "adas-laptop");
        assert_eq!(seen[0]["health"], "ok");
        assert_eq!(seen[0]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(seen[0]["launch"], "foreground");
        assert!(seen[0]["connectedAt"].as_str().is_some());
        assert!(seen[0]["lastHeartbeatAt"].as_str().is_some());
        assert!(
            list(agent_b, None).await.is_empty(),
            "another tenant's runner"
        );
        let all: Vec<String> = list(FAKE_TOKEN.to_owned(), Some("tenant-a"))
            .await
            .iter()
            .map(|r| r["runnerId"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            all,
            ["a-laptop", "ops-box"],
            "an operator also sees operators' runners"
        );
        // The hub's metrics count them by health, never by id.
        let metrics = client()
            .get(format!("http://{}/metrics", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            metrics.contains("abr_relay_runners{health=\"ok\"} 2\n"),
            "{metrics}"
        );
        assert!(metrics.contains("abr_relay_runners{health=\"silent\"} 0\n"));
        assert!(!metrics.contains("a-laptop") && !metrics.contains("ops-box"));
    })
    .await
    .expect("the test took too long");
}

/// An enrolled runner `runner_id` of `tenant` linked to `hub` with its own credential, its
/// hello naming `host`; answers it once connected, with its approver's key.
async fn enrolled_runner(hub: &HubServer, tenant: &str, runner_id: &str, host: &str) -> Linked {
    let approver = hub_key(hub, "the tenant's approver", "approver", tenant).await;
    let (status, code) = enrollment(hub, &approver, runner_id).await;
    assert_eq!(status, 201);
    let (status, credential) = redeem(hub, runner_id, &code).await;
    assert_eq!(status, 201);
    let mut options = Linked::options(hub, runner_id, host);
    options.credential = SecretString::from(credential);
    let runner = Linked::start(options);
    wait_for("the runner to connect", || {
        hub.hub.connected(runner_id).as_deref() == Some(host)
    })
    .await;
    runner
}

/// The attack (issue 34, finding 2): an operator's key bound to tenant A mints a relay token
/// for tenant B's enrolled runner and for a runner the hub's operator linked, and connects
/// with `force` to take their sockets. B's runner id is its credential's: no token; the
/// operator's runner is the operator token's: `force` from another credential is a
/// conflict. Both keep their sockets.
#[tokio::test]
async fn a_tenant_bound_operator_takes_no_other_principals_runner() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let op_a = hub_key(&hub, "A's ops", "operator", "tenant-a").await;
        let _b = enrolled_runner(&hub, "tenant-b", "b-laptop", "bos-laptop").await;
        let _ops = Linked::connect(&hub, "ops-box", "rack-1").await;

        let mint = serde_json::json!({"runnerId": "b-laptop"});
        let (status, body) = hub_call(&hub, &op_a, "/v1/relay/tokens", None, None, &mint).await;
        assert_eq!(
            status, 403,
            "A's operator minted a token for B's runner: {body}"
        );
        let mut attacker = Linked::options(&hub, "b-laptop", "mallorys-box");
        attacker.credential = SecretString::from(op_a.clone());
        attacker.force = true;
        let ended = Linked::start(attacker).ended().await;
        assert!(matches!(ended, Err(RelayError::Unauthorized)), "{ended:?}");

        let mut attacker = Linked::options(&hub, "ops-box", "mallorys-box");
        attacker.credential = SecretString::from(op_a.clone());
        attacker.force = true;
        let ended = Linked::start(attacker).ended().await;
        assert!(matches!(ended, Err(RelayError::Conflict(_))), "{ended:?}");

        assert_eq!(hub.hub.connected("b-laptop").as_deref(), Some("bos-laptop"));
        assert_eq!(hub.hub.connected("ops-box").as_deref(), Some("rack-1"));
    })
    .await
    .expect("the test took too long");
}

/// The attack (issue 34, finding 3): another tenant's approver enrolls the id of a runner
/// the hub's operator linked with its token, redeems the code and connects with `force`,
/// to receive the operator's next `PUT /v1/sessions/…` with the user's cookies. Enrolling
/// a connected id is refused; a code made while the id was offline is spent by the
/// runner's next connection; the operator's session reaches the real runner.
#[tokio::test]
async fn another_tenants_approver_cannot_take_over_a_runner_an_operator_linked() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        let approver_b = hub_key(&hub, "Bo", "approver", "tenant-b").await;

        let (status, _) = enrollment(&hub, &approver_b, "laptop").await;
        assert_eq!(
            status, 403,
            "an approver enrolled the id an operator's runner holds"
        );

        // A code made while the operator's runner was away, redeemed once it is back.
        let (status, code) = enrollment(&hub, &approver_b, "desk").await;
        assert_eq!(status, 201);
        let _desk = Linked::connect(&hub, "desk", "erins-desk").await;
        let (status, _) = redeem(&hub, "desk", &code).await;
        assert_ne!(status, 201, "a code outlived the runner's return");
        assert_eq!(hub.hub.connected("desk").as_deref(), Some("erins-desk"));

        // The operator's next session goes to the real runner.
        let secret = "erins-cookie-value-3b9e";
        let store = serde_json::json!({"platform": FAKE_PLATFORM, "session": {"cookies": [
            {"name": "sid", "value": secret, "domain": "fake.example", "path": "/"}],
            "origins": []}});
        let response = client()
            .put(format!("http://{}/v1/sessions/erin", hub.addr))
            .bearer_auth(FAKE_TOKEN)
            .header("x-tenant-id", "tenant-1")
            .header("x-abr-runner", "laptop")
            .json(&store)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let kept = call(
            &runner.stack.app,
            authed(axum::http::Method::GET, "/v1/sessions/erin")
                .header("x-tenant-id", "tenant-1")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
        assert!(kept.body.contains(secret), "{}", kept.body);
        assert_eq!(hub.hub.connected("laptop").as_deref(), Some("erins-mac"));
    })
    .await
    .expect("the test took too long");
}

/// The attack (issue 34, finding 3, the runner away): an operator's runner is linked with
/// its token, then stops (a laptop closed for the night). Another tenant's approver, and
/// its own tenant's, enroll its id to be the runner the operator's next calls reach:
/// refused, the id stays the operator's while it is away; an operator enrolls it. On main
/// any approver's code enrolled the free id.
#[tokio::test]
async fn a_runner_an_operator_linked_stays_theirs_while_it_is_away() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        drop(runner);
        wait_for("the runner to be gone", || {
            hub.hub.connected("laptop").is_none()
        })
        .await;
        for tenant in ["tenant-b", "tenant-1"] {
            let approver = hub_key(&hub, "Bo", "approver", tenant).await;
            let (status, _) = enrollment(&hub, &approver, "laptop").await;
            assert_eq!(
                status, 403,
                "an approver of {tenant} enrolled the id an operator linked"
            );
        }
        let body = serde_json::json!({"runnerId": "laptop"});
        let (status, minted) = hub_call(
            &hub,
            FAKE_TOKEN,
            "/v1/relay/enrollments",
            None,
            Some("tenant-1"),
            &body,
        )
        .await;
        assert_eq!(
            status, 201,
            "the operator enrolls its own runner's id: {minted}"
        );
    })
    .await
    .expect("the test took too long");
}

/// The attack (issue 34, finding 4): the approver of the runner's own tenant re-enrolls its
/// live runner, to take its socket and receive the agent's next session upload. Refused:
/// an approver does not re-enroll a live runner. An operator can: the live runner's
/// credential is revoked and its socket closed at once, and the new code enrolls.
#[tokio::test]
async fn an_approver_cannot_re_enroll_its_tenants_live_runner_an_operator_can() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let mut runner = enrolled_runner(&hub, "tenant-a", "a-laptop", "adas-laptop").await;
        let approver_a = hub_key(&hub, "Ada", "approver", "tenant-a").await;

        let (status, _) = enrollment(&hub, &approver_a, "a-laptop").await;
        assert_eq!(status, 403, "an approver re-enrolled a live runner");
        assert_eq!(
            hub.hub.connected("a-laptop").as_deref(),
            Some("adas-laptop")
        );

        let body = serde_json::json!({"runnerId": "a-laptop"});
        let (status, minted) = hub_call(
            &hub,
            FAKE_TOKEN,
            "/v1/relay/enrollments",
            None,
            Some("tenant-a"),
            &body,
        )
        .await;
        assert_eq!(status, 201, "{minted}");
        let ended = runner.ended().await;
        assert!(matches!(ended, Err(RelayError::Unauthorized)), "{ended:?}");
        let code = minted["code"].as_str().unwrap();
        let (status, credential) = redeem(&hub, "a-laptop", code).await;
        assert_eq!(status, 201);
        let mut options = Linked::options(&hub, "a-laptop", "adas-new-laptop");
        options.credential = SecretString::from(credential);
        let _new = Linked::start(options);
        wait_for("the new runner to connect", || {
            hub.hub.connected("a-laptop").as_deref() == Some("adas-new-laptop")
        })
        .await;
    })
    .await
    .expect("the test took too long");
}

/// From the attacker's side (issue 34, LOW): another tenant's key names a runner id to
/// learn whether it is connected. A connected runner of another tenant and an absent id
/// answer alike: `runner_offline`, after the hub's whole wait.
#[tokio::test]
async fn another_tenants_runner_answers_like_an_absent_one() {
    tokio::time::timeout(LIMIT, async {
        let wait = Duration::from_millis(600);
        let hub = HubServer::start(
            HubSettings {
                offline_wait: wait,
                ..settings()
            },
            None,
        )
        .await;
        let _a = enrolled_runner(&hub, "tenant-a", "a-laptop", "adas-laptop").await;
        let agent_b = hub_key(&hub, "B's bot", "agent", "tenant-b").await;
        for runner in ["a-laptop", "nobody-here"] {
            let started = std::time::Instant::now();
            let (status, body) = hub_call(
                &hub,
                &agent_b,
                "/v1/post",
                Some(runner),
                None,
                &post_body("x"),
            )
            .await;
            let took = started.elapsed();
            assert_eq!(
                (status, error_of(&body).0.as_str()),
                (503, "runner_offline"),
                "{runner}: {body}"
            );
            assert!(
                took >= wait,
                "{runner} answered in {took:?}, before the wait"
            );
        }
    })
    .await
    .expect("the test took too long");
}

/// From the hub's side (issue 34): a capture finished through the hub on a runner that keeps
/// its sessions on its machine. Without `storeAs` it is refused before it finishes (the
/// person's sign-in is kept); with it, the session is kept on the runner and the answer
/// carries no cookie. The runner's user allows export with `--allow-session-export`.
#[tokio::test]
async fn a_relayed_capture_finish_returns_no_cookies_unless_export_is_allowed() {
    use abr_core::LiveSurface as _;
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let runner = Linked::connect(&hub, "laptop", "erins-mac").await;
        let secret = "the-users-cookie-5d1c";
        runner
            .stack
            .provider
            .sign_in_state(abr_protocol::AgentSessionState {
                cookies: vec![abr_protocol::Cookie::new("sid", secret, "fake.example")],
                ..abr_protocol::AgentSessionState::default()
            });
        runner
            .stack
            .strategy
            .edit(|script| script.precheck = Script::Return(Some(true)));
        let (status, capture) = hub_call(
            &hub,
            FAKE_TOKEN,
            "/v1/capture/start",
            Some("laptop"),
            None,
            &fake_start("ws", "acct"),
        )
        .await;
        assert_eq!(status, 200, "{capture}");
        let id = capture["captureId"].as_str().unwrap();
        // The person signs in in the runner's browser.
        runner
            .stack
            .provider
            .context(1)
            .unwrap()
            .input(abr_core::live::LiveInput::Key {
                key: abr_core::live::LiveKey::Enter,
                modifiers: abr_core::live::Modifiers::default(),
            })
            .await
            .unwrap();

        let finish = serde_json::json!({"captureId": id, "workspaceId": "ws", "accountId": "acct"});
        let path = "/v1/capture/finish";
        let (status, body) = hub_call(&hub, FAKE_TOKEN, path, Some("laptop"), None, &finish).await;
        assert_eq!(status, 403, "{body}");
        assert!(!body.to_string().contains(secret), "{body}");
        let mut keep = finish.clone();
        keep["storeAs"] = "erin".into();
        let (status, body) = hub_call(&hub, FAKE_TOKEN, path, Some("laptop"), None, &keep).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["storedAs"], "erin");
        assert!(
            !body.to_string().contains(secret),
            "the cookie left the runner: {body}"
        );
        let kept = call(
            &runner.stack.app,
            authed(axum::http::Method::GET, "/v1/sessions/erin")
                .header("x-tenant-id", "ws")
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
        assert!(
            kept.body.contains(secret),
            "kept on the runner: {}",
            kept.body
        );
    })
    .await
    .expect("the test took too long");
}
