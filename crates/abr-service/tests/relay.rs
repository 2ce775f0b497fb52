//! The outbound relay on loopback: a hub (`http::app_with_relay` on a real listener, its own
//! runner on the core's fakes) and runners on the fakes connected with `relay::link::run`,
//! in-process. Browser-free; the demo-site checks are in `relay_e2e.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

mod common;

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
        let bind = addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hub_runner = fake_stack();
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
        let before = hub.hub.connected(runner_id).len();
        let linked = Self::start(Self::options(hub, runner_id, host));
        wait_for("the runner to connect", || {
            hub.hub.connected(runner_id).len() > before
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
        assert!(hub.hub.connected("laptop").is_empty());
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

#[tokio::test]
async fn the_same_runner_on_the_same_host_is_refused_unless_forced() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let first = Linked::connect(&hub, "laptop", "erins-mac").await;

        let mut second = Linked::start(Linked::options(&hub, "laptop", "erins-mac"));
        let refused = second.ended().await;
        assert!(
            matches!(refused, Err(RelayError::Conflict(_))),
            "{refused:?}"
        );
        assert_eq!(hub.hub.connected("laptop"), ["erins-mac"]);
        let (status, _) = hub_post(&hub, Some("laptop"), "still first", None).await;
        assert_eq!(status, 200);
        assert_eq!(first.stack.strategy.posted(), ["still first"]);

        // --force: the new one takes over, the old one is told and stops.
        let mut options = Linked::options(&hub, "laptop", "erins-mac");
        options.force = true;
        let forced = Linked::start(options);
        let mut first = first;
        let replaced = first.ended().await;
        assert!(
            matches!(replaced, Err(RelayError::Replaced)),
            "{replaced:?}"
        );
        wait_for("the forced runner", || {
            hub.hub.connected("laptop").len() == 1
        })
        .await;
        let (status, _) = hub_post(&hub, Some("laptop"), "to the new one", None).await;
        assert_eq!(status, 200);
        assert_eq!(forced.stack.strategy.posted(), ["to the new one"]);
        assert_eq!(first.stack.strategy.posted(), ["still first"]);
    })
    .await
    .expect("the test took too long");
}

#[tokio::test]
async fn runners_with_one_id_on_different_hosts_coexist_and_routing_follows_a_live_socket() {
    tokio::time::timeout(LIMIT, async {
        let hub = HubServer::start(settings(), None).await;
        let home = Linked::connect(&hub, "erin", "home-pc").await;
        let work = Linked::connect(&hub, "erin", "work-laptop").await;
        assert_eq!(hub.hub.connected("erin"), ["home-pc", "work-laptop"]);

        let (status, _) = hub_post(&hub, Some("erin"), "one", None).await;
        assert_eq!(status, 200);
        assert_eq!(
            work.stack.strategy.posted(),
            ["one"],
            "the newest live socket"
        );

        // The work laptop goes away: routing follows the socket that is left.
        work.task.abort();
        wait_for("the hub to drop the work laptop", || {
            hub.hub.connected("erin") == ["home-pc"]
        })
        .await;
        let (status, _) = hub_post(&hub, Some("erin"), "two", None).await;
        assert_eq!(status, 200);
        assert_eq!(home.stack.strategy.posted(), ["two"]);
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
            hub.hub.connected("laptop") == ["erins-mac"]
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
            hub.hub.connected("laptop").is_empty()
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
            "type": "hello", "runnerId": "mute", "host": "h", "version": "0", "launch": "test"
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
            hub.hub.connected("mute") == ["h"]
        })
        .await;
        // Never read again (so never a pong): dead after `dead_after`.
        wait_for("the hub to drop the silent runner", || {
            hub.hub.connected("mute").is_empty()
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
