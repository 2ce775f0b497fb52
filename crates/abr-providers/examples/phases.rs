//! Where the time of acquire + goto + release goes on the local provider.
//! `cargo run --release -p abr-providers --features conformance --example phases`
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "diagnostic")]
use abr_core::{AcquireMode, AcquireRequest, SessionProvider};
use abr_protocol::{AgentSessionState, Cookie, LocalStorageItem, OriginState};
use abr_providers::conformance::TestSite;
use abr_providers::{LocalBrowserSessionProvider, LocalProviderConfig};
use playwright_rs::protocol::GotoOptions;
use std::time::Instant;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let site = TestSite::start().await.unwrap();
    let mut cookies = Vec::new();
    for i in 0..25 {
        cookies.push(Cookie::new(format!("a{i}"), "v", "127.0.0.1"));
        cookies.push(Cookie::new(format!("b{i}"), "v", "localhost"));
    }
    let items = |p: &str| {
        (0..10)
            .map(|i| LocalStorageItem::new(format!("{p}{i}"), "v"))
            .collect()
    };
    let state = AgentSessionState {
        cookies,
        origins: vec![
            OriginState::new(site.origin_a(), items("a")),
            OriginState::new(site.origin_b(), items("b")),
        ],
        ..Default::default()
    };
    let extra_args: Vec<String> = std::env::var("ABR_EXTRA_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let prewarm = std::env::var("ABR_PREWARM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    // ABR_EGRESS=off measures without the egress proxy.
    let egress = (std::env::var("ABR_EGRESS").as_deref() != Ok("off")).then(|| site.egress());
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        extra_args,
        prewarm,
        egress,
        ..LocalProviderConfig::default()
    });
    let url = format!("{}/page", site.origin_a());
    let mut rows = Vec::new();
    for i in 0..25 {
        let t0 = Instant::now();
        let lease = provider
            .acquire(AcquireRequest {
                profile: None,
                mode: AcquireMode::Unattended,
                platform: "p".into(),
                state: Some(state.clone()),
                start_url: None,
            })
            .await
            .unwrap();
        let t1 = Instant::now();
        lease
            .context()
            .page()
            .goto(&url, GotoOptions::new())
            .await
            .unwrap();
        let t2 = Instant::now();
        lease.release().await.unwrap();
        let t3 = Instant::now();
        if i >= 5 {
            rows.push([
                (t1 - t0).as_secs_f64() * 1e3,
                (t2 - t1).as_secs_f64() * 1e3,
                (t3 - t2).as_secs_f64() * 1e3,
            ]);
        }
    }
    for k in 0..3 {
        let mut v: Vec<f64> = rows.iter().map(|r| r[k]).collect();
        v.sort_by(f64::total_cmp);
        println!(
            "{} median {:.1} ms",
            ["acquire", "goto", "release"][k],
            v[v.len() / 2]
        );
    }
    provider.shutdown().await;
}
