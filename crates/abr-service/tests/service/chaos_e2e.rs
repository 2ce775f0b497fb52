//! The chaos layer under a real runner (real Chromium, the demo site as ground truth,
//! through the HTTP API): a browser that freezes in the middle of a post (its connection
//! open, nothing answering: the half-open socket peers hang on) ends that post typed and
//! true to the site within its request deadline, and the runner goes on: the next post
//! ends typed too (on a browser that freezes again, or failing at once while the frozen one
//! is being ended), and so does one on a browser that crashes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abr_core::chaos::{ChaosConfig, ChaosProvider, Fault};
use abr_core::provider::DynSessionProvider;
use abr_protocol::PostOutcome;
use abr_providers::BrowserSession;
use abr_service::runner::ProviderLayer;

use crate::common::*;

/// The posts' request deadline (`ABR_REQUEST_TIMEOUT_SECS`; 240 s by default): each step's
/// deadline is a share of it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

fn short(config: &mut abr_service::config::RunnerConfig) {
    config.limits.request_timeout = REQUEST_TIMEOUT;
}

type Chaos = Arc<ChaosProvider<DynSessionProvider<BrowserSession>>>;

/// Every provider of the runner wrapped in a chaos layer with `config`, kept in `made`.
fn layer(config: ChaosConfig, made: Arc<Mutex<Vec<Chaos>>>) -> ProviderLayer {
    Arc::new(move |inner| {
        let chaos = Arc::new(ChaosProvider::new(inner, config.clone()));
        made.lock().unwrap().push(Arc::clone(&chaos));
        chaos as DynSessionProvider<BrowserSession>
    })
}

fn injected(made: &Mutex<Vec<Chaos>>, fault: Fault) -> u64 {
    made.lock()
        .unwrap()
        .iter()
        .map(|c| c.injected().get(&fault).copied().unwrap_or(0))
        .sum()
}

/// Posts `text` and checks the answer against the site: it comes within `bound`, a
/// confirmed post is on the site exactly once, a failed one not at all, an uncertain one
/// at most once.
async fn post_honestly(stack: &Stack, text: &str, bound: Duration) -> PostOutcome {
    let session = signed_in_session(&stack.site, "alice").await;
    let started = Instant::now();
    let result = tokio::time::timeout(
        bound,
        stack.client.post(&post_request("demo", session, text)),
    )
    .await
    .unwrap_or_else(|_| panic!("the post of {text:?} hung past {bound:?}"))
    .unwrap();
    let on_site = stack.site.posts().iter().filter(|p| p.text == text).count();
    let outcome = result.outcome();
    match outcome {
        PostOutcome::Confirmed => assert_eq!(on_site, 1, "{result:?}"),
        PostOutcome::Failed | PostOutcome::NeedsReauth => {
            assert_eq!(on_site, 0, "{result:?}");
            assert!(result.error.is_some(), "a failure says why: {result:?}");
        }
        PostOutcome::Uncertain => assert!(on_site <= 1, "{result:?}"),
    }
    eprintln!(
        "{text}: {outcome:?} in {:?}: {:?} {:?}",
        started.elapsed(),
        result.failure_stage,
        result.error
    );
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_frozen_or_crashed_mid_post_ends_the_post_typed_and_the_runner_goes_on() {
    let made = Arc::new(Mutex::new(Vec::new()));
    // Every lease's browser freezes within its first 300 ms: inside the post's run.
    let frozen = ChaosConfig {
        freeze: 1.0,
        lease_fault_within: Duration::from_millis(300),
        ..ChaosConfig::calm(40)
    };
    let stack = stack_with(short, |b| {
        b.provider_layer(layer(frozen, Arc::clone(&made)))
    })
    .await;
    // The request's deadline, from which every step's is derived, and a margin.
    let bound = REQUEST_TIMEOUT + Duration::from_secs(10);
    for text in ["frozen one", "frozen two"] {
        let outcome = post_honestly(&stack, text, bound).await;
        assert_ne!(
            outcome,
            PostOutcome::Confirmed,
            "a frozen browser proves nothing"
        );
    }
    // The second may not get as far as its own freeze: its acquire can meet the first's
    // browser while that one is being ended (then it fails typed, retryable, at once).
    assert!(injected(&made, Fault::Freeze) >= 1);

    let made = Arc::new(Mutex::new(Vec::new()));
    let crashed = ChaosConfig {
        crash: 1.0,
        lease_fault_within: Duration::from_millis(300),
        ..ChaosConfig::calm(41)
    };
    let stack = stack_with(short, |b| {
        b.provider_layer(layer(crashed, Arc::clone(&made)))
    })
    .await;
    let outcome = post_honestly(&stack, "crashed", bound).await;
    assert_ne!(outcome, PostOutcome::Confirmed);
    assert!(injected(&made, Fault::Crash) >= 1);

    // Calm again: the same kind of runner posts and proves it.
    let made = Arc::new(Mutex::new(Vec::new()));
    let stack = stack_with(short, |b| {
        b.provider_layer(layer(ChaosConfig::calm(42), Arc::clone(&made)))
    })
    .await;
    assert_eq!(
        post_honestly(&stack, "calm", bound).await,
        PostOutcome::Confirmed
    );
}
