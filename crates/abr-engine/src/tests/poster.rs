//! AgentPoster: every path maps to exactly one outcome row, the lease is always released,
//! scope applies going in and coming out, audit never delays or fails a post.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]
use std::sync::Arc;
use std::time::Duration;

use crate::error::EngineError;
use crate::poster::{AgentPoster, PosterConfig};
use abr_core::testing::{
    FakeContext, FakeProvider, FixedRandom, ManualClock, Script, ScriptedStrategy, StrategyScript,
};
use abr_core::{
    AuditAction, AuditError, AuditEvent, AuditOutcome, AuditSink, Auditor, CoreError,
    MemoryAuditSink, Pacing, ProviderErrorKind, ReceiptNote, StrategyError, StrategyRegistry,
    SubmitReceipt, VerifyOutcome,
};
use abr_protocol::{
    AgentPostResult, AgentSessionState, Cookie, FailureStage, LocalStorageItem, OriginState,
    PlatformPolicy, PostContent, PostOutcome, PostRequest, ProbeRequest, SessionScopeSpec,
};
use async_trait::async_trait;
use time::OffsetDateTime;

const PLATFORM: &str = "fake";

fn scoped_policy() -> PlatformPolicy {
    PlatformPolicy {
        session: Some(SessionScopeSpec {
            cookie_domains: vec!["example.com".into()],
            origins: vec!["https://app.example.com".into()],
        }),
        ..PlatformPolicy::default()
    }
}

fn session() -> AgentSessionState {
    AgentSessionState {
        cookies: vec![
            Cookie::new("sid", "canary-cookie-value", ".example.com"),
            Cookie::new("tracker", "other-value", ".evil.com"),
        ],
        origins: vec![
            OriginState::new(
                "https://app.example.com",
                vec![LocalStorageItem::new("prefs", "canary-ls-value")],
            ),
            OriginState::new("https://evil.com", vec![LocalStorageItem::new("x", "y")]),
        ],
        ..AgentSessionState::default()
    }
}

fn request() -> PostRequest {
    PostRequest {
        platform: PLATFORM.into(),
        session: session(),
        content: PostContent::text("canary posted text"),
        workspace_id: Some("ws-1".into()),
        account_id: Some("acct-1".into()),
        scope: None,
        session_id: None,
    }
}

struct Harness {
    provider: Arc<FakeProvider>,
    strategy: Arc<ScriptedStrategy>,
    poster: AgentPoster<FakeContext>,
    audit: Arc<MemoryAuditSink>,
}

fn harness(policy: PlatformPolicy, script: StrategyScript) -> Harness {
    harness_with(FakeProvider::new(), policy, script)
}

fn harness_with(provider: FakeProvider, policy: PlatformPolicy, script: StrategyScript) -> Harness {
    let provider = Arc::new(provider);
    let strategy = Arc::new(ScriptedStrategy::new(PLATFORM, &policy).with_script(script));
    let mut registry = StrategyRegistry::new();
    registry.register(strategy.clone()).unwrap();
    let audit = Arc::new(MemoryAuditSink::new());
    let poster = AgentPoster::new(provider.clone(), Arc::new(registry))
        .with_audit(Auditor::new(audit.clone(), Duration::from_secs(1)));
    Harness {
        provider,
        strategy,
        poster,
        audit,
    }
}

/// Exactly one outcome row holds, and `ok` only with verification.
fn assert_one_row(r: &AgentPostResult) {
    let rows = [
        r.ok,
        r.uncertain,
        r.needs_reauth,
        !r.ok && !r.uncertain && !r.needs_reauth && r.failure_stage.is_some(),
    ];
    assert_eq!(
        rows.iter().filter(|x| **x).count(),
        1,
        "not exactly one row: {r:?}"
    );
    assert_eq!(r.ok, r.verification.is_some(), "ok iff verification: {r:?}");
    assert_eq!(
        r.ok,
        r.failure_stage.is_none() && r.error.is_none(),
        "{r:?}"
    );
}

async fn run(script: StrategyScript) -> (AgentPostResult, Harness) {
    let h = harness(scoped_policy(), script);
    let r = h.poster.post(request()).await.unwrap();
    assert_one_row(&r);
    assert_eq!(h.provider.open_leases(), 0, "lease not released: {r:?}");
    assert_eq!(h.provider.released(), h.provider.acquired());
    (r, h)
}

fn failing_post(stages: &[FailureStage], error: StrategyError) -> StrategyScript {
    StrategyScript {
        post_stages: stages.to_vec(),
        post: Script::Fail(error),
        ..StrategyScript::default()
    }
}

const UP_TO_SUBMIT: [FailureStage; 3] = [
    FailureStage::Compose,
    FailureStage::Media,
    FailureStage::Submit,
];

#[tokio::test]
async fn confirmed_post_is_ok_with_verification_and_scoped_refreshed_session() {
    let script = StrategyScript {
        set_cookie_on_post: Some(Cookie::new("leak", "v", "ads.evil.com")),
        ..StrategyScript::default()
    };
    let (r, h) = run(script).await;
    assert_eq!(r.outcome(), PostOutcome::Confirmed);
    let v = r.verification.as_ref().unwrap();
    assert_eq!(
        v.evidence.permalink.as_deref(),
        Some("https://fake.example/p/1")
    );
    let refreshed = r.refreshed_session.as_ref().unwrap();
    let names: Vec<_> = refreshed.cookies.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["sid"],
        "refreshed session must be scoped on the way out"
    );
    assert_eq!(refreshed.origins.len(), 1);
    assert_eq!(
        refreshed.metadata.as_ref().unwrap().platform.as_deref(),
        Some(PLATFORM)
    );
    assert_eq!(h.provider.acquired(), 1);
}

#[tokio::test]
async fn the_provider_only_sees_the_scoped_state() {
    let (_, h) = run(StrategyScript::default()).await;
    let injected = h.provider.injected();
    let state = injected[0].as_ref().unwrap();
    assert_eq!(state.cookies.len(), 1);
    assert_eq!(state.cookies[0].domain, ".example.com");
    assert_eq!(state.origins.len(), 1);
    assert_eq!(state.origins[0].origin, "https://app.example.com");
}

#[tokio::test]
async fn not_signed_in_is_needs_reauth_at_precheck() {
    let script = StrategyScript {
        precheck: Script::Return(Some(false)),
        ..Default::default()
    };
    let (r, h) = run(script).await;
    assert_eq!(r.outcome(), PostOutcome::NeedsReauth);
    assert_eq!(r.failure_stage, Some(FailureStage::Precheck));
    assert!(
        r.refreshed_session.is_none(),
        "an invalid session is not returned as refreshed"
    );
    assert!(
        h.strategy.posted().is_empty(),
        "post must not run without a valid session"
    );
}

#[tokio::test]
async fn precheck_rejection_error_is_needs_reauth() {
    let script = StrategyScript {
        precheck: Script::Fail(StrategyError::needs_reauth("login wall")),
        ..Default::default()
    };
    let (r, _) = run(script).await;
    assert_eq!(r.outcome(), PostOutcome::NeedsReauth);
}

#[tokio::test]
async fn precheck_failure_is_a_retryable_precheck_failure() {
    let script = StrategyScript {
        precheck: Script::Fail(StrategyError::failed("nav_failed", "could not load")),
        ..Default::default()
    };
    let (r, _) = run(script).await;
    assert_eq!(r.outcome(), PostOutcome::Failed);
    assert_eq!(r.failure_stage, Some(FailureStage::Precheck));
    let e = r.error.as_ref().unwrap();
    assert_eq!(e.code, "nav_failed");
    assert!(e.retryable);
    assert!(r.is_safe_to_retry());
}

#[tokio::test(start_paused = true)]
async fn precheck_timeout_and_panic_fail_before_submit() {
    for (step, code) in [
        (Script::Hang, "timeout"),
        (Script::Panic, "strategy_panicked"),
    ] {
        let (r, _) = run(StrategyScript {
            precheck: step,
            ..Default::default()
        })
        .await;
        assert_eq!(r.outcome(), PostOutcome::Failed);
        assert_eq!(r.failure_stage, Some(FailureStage::Precheck));
        assert_eq!(r.error.as_ref().unwrap().code, code);
    }
}

#[tokio::test]
async fn failures_before_submit_carry_their_stage_and_are_safe_to_retry() {
    let cases = [
        (&[FailureStage::Compose][..], FailureStage::Compose),
        (
            &[FailureStage::Compose, FailureStage::Media][..],
            FailureStage::Media,
        ),
    ];
    for (stages, expected) in cases {
        let (r, _) = run(failing_post(stages, StrategyError::failed("x", "y"))).await;
        assert_eq!(r.outcome(), PostOutcome::Failed);
        assert_eq!(r.failure_stage, Some(expected));
        assert!(r.error.as_ref().unwrap().retryable);
    }
}

#[tokio::test]
async fn a_failure_after_submit_is_uncertain_and_never_retryable() {
    let (r, _) = run(failing_post(
        &UP_TO_SUBMIT,
        StrategyError::failed("net", "reset"),
    ))
    .await;
    assert_eq!(r.outcome(), PostOutcome::Uncertain);
    assert_eq!(r.failure_stage, Some(FailureStage::Submit));
    assert!(!r.error.as_ref().unwrap().retryable);
    assert!(!r.is_safe_to_retry());
}

#[tokio::test]
async fn a_submit_failure_with_evidence_nothing_was_posted_is_a_plain_failure() {
    let e = StrategyError::not_posted("error_page", "site said nothing saved");
    let (r, _) = run(failing_post(&UP_TO_SUBMIT, e)).await;
    assert_eq!(r.outcome(), PostOutcome::Failed);
    assert_eq!(r.failure_stage, Some(FailureStage::Submit));
    assert!(!r.uncertain);
}

#[tokio::test]
async fn a_session_rejected_at_submit_is_needs_reauth() {
    let e = StrategyError::needs_reauth("session expired");
    let (r, _) = run(failing_post(&UP_TO_SUBMIT, e)).await;
    assert_eq!(r.outcome(), PostOutcome::NeedsReauth);
    assert_eq!(r.failure_stage, Some(FailureStage::Submit));
}

#[tokio::test(start_paused = true)]
async fn a_post_that_hangs_or_panics_is_uncertain_only_once_submit_began() {
    for step in [Script::Hang, Script::Panic] {
        let before = StrategyScript {
            post_stages: vec![FailureStage::Compose],
            post: step.clone(),
            ..Default::default()
        };
        let (r, _) = run(before).await;
        assert_eq!(r.outcome(), PostOutcome::Failed, "{r:?}");
        assert_eq!(r.failure_stage, Some(FailureStage::Compose));

        let after = StrategyScript {
            post: step,
            ..Default::default()
        };
        let (r, _) = run(after).await;
        assert_eq!(r.outcome(), PostOutcome::Uncertain, "{r:?}");
        assert_eq!(r.failure_stage, Some(FailureStage::Submit));
    }
}

#[tokio::test(start_paused = true)]
async fn verification_outcomes_map_to_their_rows() {
    let cases = [
        (
            Script::Return(VerifyOutcome::Unconfirmed {
                detail: "no toast".into(),
            }),
            PostOutcome::Uncertain,
        ),
        (
            Script::Return(VerifyOutcome::NotPosted {
                detail: "absent".into(),
            }),
            PostOutcome::Failed,
        ),
        (
            Script::Fail(StrategyError::failed("x", "y")),
            PostOutcome::Uncertain,
        ),
        (
            Script::Fail(StrategyError::needs_reauth("logged out")),
            PostOutcome::Uncertain,
        ),
        (
            Script::Fail(StrategyError::not_posted("x", "absent")),
            PostOutcome::Failed,
        ),
        (Script::Hang, PostOutcome::Uncertain),
        (Script::Panic, PostOutcome::Uncertain),
    ];
    for (verify, expected) in cases {
        let (r, _) = run(StrategyScript {
            verify,
            ..Default::default()
        })
        .await;
        assert_eq!(r.outcome(), expected, "{r:?}");
        assert_eq!(r.failure_stage, Some(FailureStage::Verify));
        // The state is still returned: the browser may hold a refreshed cookie.
        assert!(r.refreshed_session.is_some());
    }
}

#[tokio::test]
async fn a_receipt_is_handed_to_verify() {
    // A strategy that confirms only with what `post` observed.
    let script = StrategyScript {
        post: Script::Return(SubmitReceipt {
            observed: None,
            note: Some(ReceiptNote::new("id-7".to_owned())),
        }),
        ..Default::default()
    };
    let (r, h) = run(script).await;
    assert!(r.ok);
    assert_eq!(
        h.strategy.verified_notes(),
        [Some("id-7".to_owned())],
        "verify got post's own value"
    );
}

#[tokio::test]
async fn a_failing_acquire_is_a_retryable_precheck_failure_with_nothing_leased() {
    let provider = FakeProvider::new();
    provider.fail_next_acquire(ProviderErrorKind::Unavailable);
    let h = harness_with(provider, scoped_policy(), StrategyScript::default());
    let r = h.poster.post(request()).await.unwrap();
    assert_one_row(&r);
    assert_eq!(r.failure_stage, Some(FailureStage::Precheck));
    let e = r.error.unwrap();
    assert_eq!(e.code, "provider_unavailable");
    assert!(e.retryable);
    assert_eq!(h.provider.acquired(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_acquire_times_out() {
    let provider = FakeProvider::new();
    provider.hang_acquires(true);
    let h = harness_with(provider, scoped_policy(), StrategyScript::default());
    let r = h.poster.post(request()).await.unwrap();
    assert_eq!(r.failure_stage, Some(FailureStage::Precheck));
    assert_eq!(r.error.unwrap().code, "timeout");
}

#[tokio::test]
async fn a_failing_export_keeps_the_outcome_and_drops_the_refreshed_session() {
    let provider = FakeProvider::new();
    provider.fail_exports(true);
    let h = harness_with(provider, scoped_policy(), StrategyScript::default());
    let r = h.poster.post(request()).await.unwrap();
    assert_one_row(&r);
    assert!(
        r.ok,
        "the post was confirmed; a failed export must not change that"
    );
    assert!(r.refreshed_session.is_none());
    assert_eq!(h.provider.open_leases(), 0);
    assert_eq!(h.strategy.posted(), ["canary posted text"]);
}

#[tokio::test]
async fn unattended_execution_is_denied_by_policy_before_any_browser_starts() {
    let policy = PlatformPolicy {
        allow_unattended: Some(false),
        ..scoped_policy()
    };
    let h = harness(policy, StrategyScript::default());
    let err = h.poster.post(request()).await.unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::ExecutionDenied { .. })),
        "{err}"
    );
    assert_eq!(h.provider.acquired(), 0);
    let events = wait_for_events(&h.audit, 1).await;
    assert_eq!(events[0].action, AuditAction::ExecutionDenied);
    assert_eq!(events[0].outcome, AuditOutcome::Denied);
}

#[tokio::test]
async fn interactive_only_policy_still_denies_unattended_probe() {
    let policy = PlatformPolicy {
        allow_unattended: Some(false),
        ..scoped_policy()
    };
    let h = harness(policy, StrategyScript::default());
    let err = h
        .poster
        .probe(ProbeRequest {
            platform: PLATFORM.into(),
            session: session(),
            workspace_id: None,
            account_id: None,
            scope: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        EngineError::Core(CoreError::ExecutionDenied { .. })
    ));
}

#[tokio::test]
async fn unknown_platform_is_a_typed_error() {
    let h = harness(scoped_policy(), StrategyScript::default());
    let mut req = request();
    req.platform = "nope".into();
    let err = h.poster.post(req).await.unwrap_err();
    assert!(matches!(err, EngineError::Core(CoreError::UnknownPlatform(ref p)) if p == "nope"));
    assert_eq!(err.code(), "unknown_platform");
}

#[tokio::test]
async fn pacing_sleeps_a_delay_drawn_from_the_injected_rng() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::UNIX_EPOCH));
    let h = harness(scoped_policy(), StrategyScript::default());
    let poster = h
        .poster
        .with_clock(clock.clone())
        .with_random(Arc::new(FixedRandom(1_234)))
        .with_config(PosterConfig {
            pacing: Some(Pacing {
                min: Duration::from_millis(500),
                max: Duration::from_millis(1_500),
            }),
            ..PosterConfig::default()
        });
    let r = poster.post(request()).await.unwrap();
    // 500 + 1234 % 1001 = 733
    assert_eq!(clock.sleeps(), vec![Duration::from_millis(733)]);
    assert_eq!(r.timing.pacing_ms, 733);
    assert!(r.ok);
}

#[tokio::test]
async fn without_pacing_nothing_sleeps() {
    let clock = Arc::new(ManualClock::new(OffsetDateTime::UNIX_EPOCH));
    let h = harness(scoped_policy(), StrategyScript::default());
    let poster = h.poster.with_clock(clock.clone());
    poster.post(request()).await.unwrap();
    assert!(clock.sleeps().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_post_still_releases_its_lease() {
    let h = harness(
        scoped_policy(),
        StrategyScript {
            precheck: Script::Hang,
            ..Default::default()
        },
    );
    let poster = Arc::new(h.poster);
    let task = {
        let poster = poster.clone();
        tokio::spawn(async move { poster.post(request()).await })
    };
    for _ in 0..100 {
        if h.provider.acquired() == 1 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(h.provider.acquired(), 1);
    assert_eq!(h.provider.open_leases(), 1);
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    for _ in 0..100 {
        if h.provider.open_leases() == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(
        h.provider.open_leases(),
        0,
        "cancelled job leaked its browser"
    );
    assert_eq!(h.provider.released_ids(), vec![1]);
}

struct FailingSink;

#[async_trait]
impl AuditSink for FailingSink {
    async fn record(&self, _event: &AuditEvent) -> Result<(), AuditError> {
        Err(AuditError("disk full".into()))
    }
}

struct HangingSink;

#[async_trait]
impl AuditSink for HangingSink {
    async fn record(&self, _event: &AuditEvent) -> Result<(), AuditError> {
        futures::future::pending().await
    }
}

struct PanickingSink;

#[async_trait]
impl AuditSink for PanickingSink {
    async fn record(&self, _event: &AuditEvent) -> Result<(), AuditError> {
        panic!("sink bug")
    }
}

#[tokio::test]
async fn a_failing_hanging_or_panicking_sink_never_fails_or_delays_a_post() {
    let sinks: [Arc<dyn AuditSink>; 3] = [
        Arc::new(FailingSink),
        Arc::new(HangingSink),
        Arc::new(PanickingSink),
    ];
    for sink in sinks {
        let h = harness(scoped_policy(), StrategyScript::default());
        // A one-hour deadline: if emit awaited the sink, this post would never return.
        let poster = h
            .poster
            .with_audit(Auditor::new(sink, Duration::from_secs(3_600)));
        let r = poster.post(request()).await.unwrap();
        assert!(r.ok);
    }
}

async fn wait_for_events(sink: &MemoryAuditSink, n: usize) -> Vec<AuditEvent> {
    for _ in 0..1_000 {
        let events = sink.events();
        if events.len() >= n {
            return events;
        }
        tokio::task::yield_now().await;
    }
    sink.events()
}

#[tokio::test]
async fn audit_events_carry_counts_and_never_secrets_or_content() {
    let h = harness(scoped_policy(), StrategyScript::default());
    h.poster.post(request()).await.unwrap();
    let events = wait_for_events(&h.audit, 1).await;
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!((e.action, e.outcome), (AuditAction::Post, AuditOutcome::Ok));
    assert_eq!(
        (e.cookie_count, e.origin_count, e.dropped_count),
        (Some(1), Some(1), Some(2))
    );
    assert_eq!(e.workspace_id.as_deref(), Some("ws-1"));
    let json = serde_json::to_string(&events).unwrap();
    for canary in [
        "canary-cookie-value",
        "canary-ls-value",
        "canary posted text",
        "fake.example/p",
    ] {
        assert!(!json.contains(canary), "audit leaked {canary}: {json}");
    }
}

#[tokio::test]
async fn failed_post_audit_has_stage_and_code() {
    let (_, h) = run(failing_post(
        &UP_TO_SUBMIT,
        StrategyError::failed("net", "reset"),
    ))
    .await;
    let events = wait_for_events(&h.audit, 1).await;
    assert_eq!(events[0].outcome, AuditOutcome::Uncertain);
    assert_eq!(events[0].failure_stage, Some(FailureStage::Submit));
    assert_eq!(events[0].error_code.as_deref(), Some("net"));
}

#[tokio::test]
async fn probe_reports_authentication_and_returns_the_scoped_session() {
    let h = harness(scoped_policy(), StrategyScript::default());
    let req = ProbeRequest {
        platform: PLATFORM.into(),
        session: session(),
        workspace_id: None,
        account_id: None,
        scope: None,
    };
    let ok = h.poster.probe(req.clone()).await.unwrap();
    assert!(ok.authenticated && !ok.needs_reauth);
    assert_eq!(ok.refreshed_session.unwrap().cookies.len(), 1);

    h.provider.sign_in_on_acquire(false);
    let no = h.poster.probe(req.clone()).await.unwrap();
    assert!(!no.authenticated && no.needs_reauth && no.refreshed_session.is_none());

    h.strategy.edit(|s| s.precheck = Script::Panic);
    let err = h.poster.probe(req).await.unwrap_err();
    assert!(matches!(
        err,
        EngineError::Core(CoreError::StrategyPanicked(_))
    ));
    assert_eq!(h.provider.open_leases(), 0);
    assert_eq!(h.provider.released(), 3);
}

#[tokio::test]
async fn a_request_scope_only_narrows_the_platform_scope() {
    let h = harness(scoped_policy(), StrategyScript::default());
    let mut req = request();
    req.session
        .cookies
        .push(Cookie::new("app", "a", "app.example.com"));
    req.scope = Some(SessionScopeSpec {
        // Wider than the platform's (evil.com) and narrower (app.example.com): the result is
        // the intersection.
        cookie_domains: vec!["app.example.com".into(), "evil.com".into()],
        origins: vec![],
    });
    let r = h.poster.post(req).await.unwrap();
    assert!(r.ok);
    let injected = h.provider.injected()[0].clone().unwrap();
    let names: Vec<_> = injected.cookies.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["app"], "only cookies inside both scopes");
    assert!(injected.origins.is_empty());
    let refreshed = r.refreshed_session.unwrap();
    assert!(
        refreshed
            .cookies
            .iter()
            .all(|c| c.domain == "app.example.com")
    );
}

#[tokio::test]
async fn an_over_broad_request_scope_is_an_invalid_scope_error() {
    let h = harness(scoped_policy(), StrategyScript::default());
    let mut req = request();
    req.scope = Some(SessionScopeSpec {
        cookie_domains: vec!["com".into()],
        origins: vec![],
    });
    let err = h.poster.post(req).await.unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::InvalidScope(_))),
        "{err}"
    );
    assert_eq!(err.code(), "invalid_scope");
    assert_eq!(h.provider.acquired(), 0);
}
