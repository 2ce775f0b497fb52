//! The same failure has the same code whichever operation met it: a provider that panics or
//! hangs while acquiring is `provider_panicked` or `timeout` for a post (in its outcome), a
//! probe and a capture alike, and a strategy that panics in its sign-in check is
//! `strategy_panicked` for all three.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

use std::sync::Arc;
use std::time::Duration;

use crate::capture::{CaptureConfig, SessionCaptureManager};
use crate::poster::{AgentPoster, PosterConfig};
use abr_core::testing::{FakeContext, FakeProvider, Script, ScriptedStrategy};
use abr_core::{DynSessionProvider, StepTimeouts, StrategyRegistry, WebPostStrategy};
use abr_protocol::{
    AgentSessionState, CaptureRef, CaptureStartRequest, PlatformPolicy, PostContent, PostRequest,
    ProbeRequest, codes,
};

struct Both {
    provider: Arc<FakeProvider>,
    strategy: Arc<ScriptedStrategy>,
    poster: AgentPoster<FakeContext>,
    captures: SessionCaptureManager<FakeContext>,
}

fn both() -> Both {
    let provider = Arc::new(FakeProvider::new());
    let strategy = Arc::new(ScriptedStrategy::new("p", &PlatformPolicy::default()));
    let mut registry = StrategyRegistry::new();
    let as_dyn: Arc<dyn WebPostStrategy<FakeContext>> = strategy.clone();
    registry.register(as_dyn).unwrap();
    let registry = Arc::new(registry);
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let short = Duration::from_millis(200);
    let poster =
        AgentPoster::new(dyn_provider.clone(), Arc::clone(&registry)).with_config(PosterConfig {
            pacing: None,
            timeouts: StepTimeouts {
                acquire: short,
                precheck: short,
                post: short,
                verify: short,
                export: short,
                release: short,
            },
        });
    let captures = SessionCaptureManager::new(
        dyn_provider,
        registry,
        CaptureConfig {
            acquire_timeout: short,
            step_timeout: short,
            ..CaptureConfig::default()
        },
    );
    Both {
        provider,
        strategy,
        poster,
        captures,
    }
}

/// The code of a post's outcome, a probe's error and a capture's error (start, or finish
/// when `at_finish`).
async fn codes_of(b: &Both, at_finish: bool) -> [String; 3] {
    let post = b
        .poster
        .post(PostRequest {
            platform: "p".into(),
            session: AgentSessionState::default(),
            content: PostContent::text("hello"),
            workspace_id: Some("ws".into()),
            account_id: Some("acct".into()),
            scope: None,
            session_id: None,
        })
        .await
        .unwrap();
    let post_code = post.error.unwrap().code;
    let probe = b
        .poster
        .probe(ProbeRequest {
            platform: "p".into(),
            session: AgentSessionState::default(),
            workspace_id: None,
            account_id: None,
            scope: None,
        })
        .await
        .unwrap_err();
    let start = b
        .captures
        .start(CaptureStartRequest {
            workspace_id: "ws".into(),
            account_id: "acct".into(),
            platform: "p".into(),
            scope: None,
        })
        .await;
    let capture_code = if at_finish {
        let started = start.unwrap();
        b.captures
            .finish(&CaptureRef {
                capture_id: started.capture_id,
                workspace_id: "ws".into(),
                account_id: "acct".into(),
            })
            .await
            .unwrap_err()
            .code()
            .to_owned()
    } else {
        start.unwrap_err().code().to_owned()
    };
    [post_code, probe.code().to_owned(), capture_code]
}

#[tokio::test]
async fn a_provider_panic_while_acquiring_has_one_code_everywhere() {
    let b = both();
    b.provider.panic_acquires(true);
    let got = codes_of(&b, false).await;
    assert_eq!(
        got,
        [codes::PROVIDER_PANICKED.code; 3],
        "post, probe, capture"
    );
}

#[tokio::test]
async fn a_provider_that_hangs_while_acquiring_has_one_code_everywhere() {
    let b = both();
    b.provider.hang_acquires(true);
    let got = codes_of(&b, false).await;
    assert_eq!(got, [codes::TIMEOUT.code; 3], "post, probe, capture");
}

#[tokio::test]
async fn a_strategy_panic_in_the_sign_in_check_has_one_code_everywhere() {
    let b = both();
    b.strategy.edit(|s| s.precheck = Script::Panic);
    let got = codes_of(&b, true).await;
    assert_eq!(
        got,
        [codes::STRATEGY_PANICKED.code; 3],
        "post, probe, capture finish"
    );
}
