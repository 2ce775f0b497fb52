//! Post benchmark, side by side in one run:
//!
//! `cargo bench -p abr-service --bench post`
//!
//! The same post on the demo platform (sign-in check, composer, feed read, fill, submit,
//! toast, export of the refreshed session) three ways:
//! 1. through the HTTP runner with abr-client (what an orchestrator pays),
//! 2. through the embedded `Engine` (what a Rust app pays: the same job slots, journal and
//!    tenant admission as the runner, without HTTP),
//! 3. by a Node playwright-core script doing the same steps (`bench/node-post.mjs`).
//!
//! The ratio of 1 to 2 is the service's overhead. All three use Debian's headless shell.
//! `ABR_BENCH_QUICK=1` for a short run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark binary"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use abr_client::AgentRunnerClient;
use abr_core::StrategyRegistry;
use abr_core::limits::TenantLimits;
use abr_core::principal::{Principal, Tenants};
use abr_core::store::InMemoryStore;
use abr_demo::{DemoSite, DemoStrategy};
use abr_engine::{EngineBuilder, EngineConfig, PostReply, Posted};
use abr_protocol::{
    AgentSessionState, Cookie, LocalStorageItem, OriginState, PostContent, PostRequest, Role,
};
use abr_providers::{ChromiumBinary, LocalBrowserSessionProvider, LocalProviderConfig, base_args};
use abr_service::config::RunnerConfig;
use abr_service::runner::RunnerBuilder;
use abr_service::server::RunningServer;
use secrecy::SecretString;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Signs in with the site's form and returns the session a capture would have produced.
async fn signed_in(site: &DemoSite) -> AgentSessionState {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http
        .post(format!("{}/login", site.base_url()))
        .form(&[("username", "bench"), ("password", "demo-password")])
        .send()
        .await
        .unwrap();
    let set_cookie = response
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap();
    let value = set_cookie
        .split(';')
        .next()
        .unwrap()
        .split_once('=')
        .unwrap()
        .1
        .to_owned();
    let mut cookie = Cookie::new("demo_session", value, "127.0.0.1");
    cookie.http_only = true;
    AgentSessionState {
        cookies: vec![cookie],
        origins: vec![OriginState::new(
            site.base_url(),
            vec![LocalStorageItem::new("demo_prefs", r#"{"theme":"light"}"#)],
        )],
        ..AgentSessionState::default()
    }
}

/// The tenant of the embedded engine's posts.
const TENANT: &str = "bench";

fn request(
    session: &AgentSessionState,
    i: usize,
    how: &str,
    workspace_id: Option<&str>,
) -> PostRequest {
    PostRequest {
        session_id: None,
        platform: "demo".into(),
        session: session.clone(),
        content: PostContent::text(format!("{how} bench post {i}")),
        workspace_id: workspace_id.map(str::to_owned),
        account_id: None,
        scope: None,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = if std::env::var_os("ABR_BENCH_QUICK").is_some() {
        5
    } else {
        20
    };
    let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let session = signed_in(&site).await;

    // 2. Embedded Engine.
    let provider = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        egress: Some(abr_core::EgressPolicy::new().allow_addr(site.local_addr())),
        ..LocalProviderConfig::default()
    }));
    let mut registry = StrategyRegistry::new();
    registry
        .register(Arc::new(DemoStrategy::new(&site.base_url()).unwrap()))
        .unwrap();
    let engine = EngineBuilder::new(
        EngineConfig {
            max_concurrent_jobs: 4,
            max_queued_jobs: 64,
            tenant_limits: TenantLimits {
                daily_executions: 100_000,
                ..TenantLimits::default()
            },
            ..EngineConfig::default()
        },
        provider.clone(),
        provider.clone(),
        Arc::new(InMemoryStore::new()),
    )
    .strategies(registry)
    .build()
    .unwrap();
    let actor = Arc::new(
        Principal::new("key_bench", "bench", Role::Operator, Tenants::All, false).unwrap(),
    )
    .act_for(Some(TENANT))
    .unwrap();
    let mut embedded = Vec::new();
    for i in 0..n + 2 {
        let t0 = Instant::now();
        let posted = engine
            .post(&actor, None, request(&session, i, "embedded", Some(TENANT)))
            .await
            .unwrap();
        let Posted {
            reply: PostReply::Result(r),
            ..
        } = posted
        else {
            panic!("embedded post {i}: no result: {posted:?}");
        };
        assert!(r.ok, "embedded post {i}: {r:?}");
        if i >= 2 {
            embedded.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
    }
    engine.shutdown().await;
    drop(engine);
    provider.shutdown().await;

    // 1. Through the HTTP runner.
    let token = "bench-token-0123456789abcdef";
    let mut config = RunnerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        api_tokens: vec![SecretString::from(token.to_owned())],
        ..RunnerConfig::default()
    };
    config.demo_site_url = None;
    config.egress = config.egress.allow_addr(site.local_addr());
    let runner = RunnerBuilder::new(config)
        .strategy(Arc::new(DemoStrategy::new(&site.base_url()).unwrap()))
        .unwrap()
        .build()
        .unwrap();
    let server = RunningServer::bind(Arc::new(runner), SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let client = AgentRunnerClient::new(server.base_url(), token.to_owned()).unwrap();
    let mut http = Vec::new();
    for i in 0..n + 2 {
        let t0 = Instant::now();
        let r = client
            .post(&request(&session, i, "http", None))
            .await
            .unwrap();
        assert!(r.ok, "http post {i}: {r:?}");
        if i >= 2 {
            http.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
    }
    server.shutdown().await;

    // 3. Node playwright-core, same steps.
    let config = serde_json::json!({
        "base": site.base_url(),
        "iterations": n,
        "executablePath": ChromiumBinary::HeadlessShell.path(),
        "args": base_args(),
        "storageState": serde_json::to_value(&session).unwrap(),
    });
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/node-post.mjs");
    let out = tokio::process::Command::new("node")
        .arg(script)
        .arg(config.to_string())
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let node: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let node: Vec<f64> = node["samplesMs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();

    let (h, e, j) = (median(http), median(embedded), median(node));
    println!("# ABR post benchmark ({n} posts each, demo platform, headless shell)\n");
    println!("| path | median ms per post | ratio |");
    println!("|---|---|---|");
    println!("| Node playwright-core script, same steps | {j:.1} | 1.00 |");
    println!("| ABR embedded Engine | {e:.1} | {:.2} |", e / j);
    println!("| ABR HTTP runner + abr-client | {h:.1} | {:.2} |", h / j);
    println!(
        "\nService overhead (HTTP / embedded): {:.2}x, {:+.1} ms per post",
        h / e,
        h - e
    );
    site.shutdown().await;
}
