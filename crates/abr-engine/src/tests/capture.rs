//! Integration tests of `SessionCaptureManager`: credentials, binding, sign-in, scope on
//! export, expiry, limits, policy, provider faults and audit redaction.

// The helpers below are test code too: a failed unwrap there is a failed test.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers")]

use std::sync::Arc;
use std::time::Duration;

use crate::capture::{CaptureConfig, SessionCaptureManager};
use crate::error::EngineError;
use abr_core::Clock as _;
use abr_core::testing::{FakeContext, FakeProvider, ManualClock, Script, ScriptedStrategy};
use abr_core::{
    AuditAction, AuditEvent, AuditOutcome, Auditor, CoreError, DynSessionProvider, ErrorKind,
    LiveInput, LiveKey, MemoryAuditSink, Modifiers, ProviderCapabilities, ProviderErrorKind,
    StrategyRegistry, WebPostStrategy,
};
use abr_protocol::{
    AgentSessionState, CaptureRef, CaptureStartRequest, CaptureStartResponse, Cookie, DropReason,
    LocalStorageItem, OriginState, PlatformPolicy, SessionScopeSpec,
};
use time::OffsetDateTime;

const PLATFORM: &str = "demo";
const WORKSPACE: &str = "ws-1";
const ACCOUNT: &str = "acct-1";
const LIVE_BASE: &str = "http://runner.test/live/";
const TTL: Duration = Duration::from_secs(600);

// Canaries: values that must never reach an audit event.
const IN_SCOPE_COOKIE: &str = "canary-cookie-in-scope-7f3a";
const EVIL_COOKIE: &str = "canary-cookie-evil-91bc";
const SUFFIX_COOKIE: &str = "canary-cookie-suffix-4d2e";
const APP_STORAGE: &str = "canary-localstorage-app-55e0";
const EVIL_STORAGE: &str = "canary-localstorage-evil-0c9d";

fn scoped_policy() -> PlatformPolicy {
    PlatformPolicy {
        session: Some(SessionScopeSpec {
            cookie_domains: vec!["example.com".into()],
            origins: vec!["https://app.example.com".into()],
        }),
        ..PlatformPolicy::default()
    }
}

fn config() -> CaptureConfig {
    CaptureConfig {
        ttl: TTL,
        live_view_base: LIVE_BASE.to_owned(),
        ..CaptureConfig::default()
    }
}

struct Fixture {
    provider: Arc<FakeProvider>,
    strategy: Arc<ScriptedStrategy>,
    audit: Arc<MemoryAuditSink>,
    clock: Arc<ManualClock>,
    manager: SessionCaptureManager<FakeContext>,
}

fn fixture_with(provider: FakeProvider, policy: &PlatformPolicy, config: CaptureConfig) -> Fixture {
    let provider = Arc::new(provider);
    let strategy = Arc::new(ScriptedStrategy::new(PLATFORM, policy));
    let mut registry = StrategyRegistry::new();
    let as_dyn: Arc<dyn WebPostStrategy<FakeContext>> = strategy.clone();
    registry.register(as_dyn).unwrap();
    let audit = Arc::new(MemoryAuditSink::new());
    let clock = Arc::new(ManualClock::new(
        OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
    ));
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let manager = SessionCaptureManager::new(dyn_provider, Arc::new(registry), config)
        .with_audit(Auditor::new(audit.clone(), Duration::from_secs(5)))
        .with_clock(clock.clone());
    Fixture {
        provider,
        strategy,
        audit,
        clock,
        manager,
    }
}

fn fixture() -> Fixture {
    fixture_with(FakeProvider::new(), &scoped_policy(), config())
}

fn start_request() -> CaptureStartRequest {
    CaptureStartRequest {
        workspace_id: WORKSPACE.into(),
        account_id: ACCOUNT.into(),
        platform: PLATFORM.into(),
        scope: None,
    }
}

fn bound(capture_id: &str) -> CaptureRef {
    CaptureRef {
        capture_id: capture_id.to_owned(),
        workspace_id: WORKSPACE.into(),
        account_id: ACCOUNT.into(),
    }
}

fn live_token(started: &CaptureStartResponse) -> String {
    started
        .live_view_url
        .strip_prefix(LIVE_BASE)
        .unwrap()
        .to_owned()
}

fn is_token(s: &str) -> bool {
    s.len() == 43
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The browser's state after the user signed in: in-scope and out-of-scope items.
fn signed_in_state() -> AgentSessionState {
    AgentSessionState {
        cookies: vec![
            Cookie::new("sid", IN_SCOPE_COOKIE, ".example.com"),
            Cookie::new("track", EVIL_COOKIE, "evil.com"),
            Cookie::new("super", SUFFIX_COOKIE, "com"),
        ],
        origins: vec![
            OriginState::new(
                "https://app.example.com",
                vec![LocalStorageItem::new("token", APP_STORAGE)],
            ),
            OriginState::new(
                "https://evil.com",
                vec![LocalStorageItem::new("x", EVIL_STORAGE)],
            ),
        ],
        ..AgentSessionState::default()
    }
}

/// Signs the user in through the live view, as the runner's viewer would (the fake site
/// signs in on Enter, into [`signed_in_state`]).
async fn sign_in(f: &Fixture, live_token: &str) {
    f.provider.sign_in_state(signed_in_state());
    let live = f.manager.attach_live(live_token).unwrap();
    live.input(LiveInput::Key {
        key: LiveKey::Enter,
        modifiers: Modifiers::NONE,
    })
    .await
    .unwrap();
}

/// Waits (a bounded number of scheduler turns) for the spawned audit delivery of `action`.
async fn wait_for_event(audit: &MemoryAuditSink, action: AuditAction) -> AuditEvent {
    for _ in 0..100 {
        if let Some(event) = audit.events().into_iter().find(|e| e.action == action) {
            return event;
        }
        tokio::task::yield_now().await;
    }
    panic!("no {action:?} audit event; got {:?}", audit.events());
}

#[tokio::test]
async fn start_issues_distinct_credentials_and_expiry() {
    let f = fixture();
    let now = f.clock.now();
    let a = f.manager.start(start_request()).await.unwrap();
    let b = f.manager.start(start_request()).await.unwrap();

    assert!(is_token(&a.capture_id), "capture id is 43 url-safe chars");
    assert!(a.live_view_url.starts_with(LIVE_BASE));
    let token_a = live_token(&a);
    assert!(is_token(&token_a), "live token is 43 url-safe chars");
    assert_ne!(
        token_a, a.capture_id,
        "the live token is a different credential"
    );
    assert_eq!(a.expires_at, now + TTL);

    assert_ne!(a.capture_id, b.capture_id);
    assert_ne!(token_a, live_token(&b));
    assert_eq!(f.manager.open_count(), 2);
    assert_eq!(f.provider.acquired(), 2);
    assert_eq!(f.provider.open_leases(), 2);

    let status = f.manager.status(&bound(&a.capture_id)).await.unwrap();
    assert_eq!(status.platform, PLATFORM);
    assert_eq!(status.expires_at, now + TTL);
    let target = f.manager.live_target(&token_a).unwrap();
    assert!(
        f.provider.context(1).unwrap().interactive,
        "capture acquires an interactive browser"
    );
    assert!(target.provider_viewer.is_none());
    assert_eq!(target.expires_at, now + TTL);

    let started = wait_for_event(&f.audit, AuditAction::CaptureStarted).await;
    assert_eq!(started.workspace_id.as_deref(), Some(WORKSPACE));
    assert_eq!(started.account_id.as_deref(), Some(ACCOUNT));
}

#[tokio::test]
async fn wrong_binding_is_refused_and_leaves_the_capture_open() {
    let f = fixture();
    let started = f.manager.start(start_request()).await.unwrap();
    let token = live_token(&started);
    sign_in(&f, &token).await;

    let wrong_workspace = CaptureRef {
        workspace_id: "ws-other".into(),
        ..bound(&started.capture_id)
    };
    let wrong_account = CaptureRef {
        account_id: "acct-other".into(),
        ..bound(&started.capture_id)
    };
    for r in [&wrong_workspace, &wrong_account] {
        let err = f.manager.finish(r).await.unwrap_err();
        assert!(matches!(err, EngineError::BindingMismatch), "{err:?}");
        assert_eq!(err.kind(), ErrorKind::Forbidden);
        let err = f.manager.cancel(r).await.unwrap_err();
        assert!(matches!(err, EngineError::BindingMismatch), "{err:?}");
    }
    assert_eq!(f.manager.open_count(), 1);
    assert_eq!(
        f.provider.released(),
        0,
        "a refused cancel must not release the browser"
    );
    assert!(f.manager.status(&bound(&started.capture_id)).await.is_ok());
    assert!(f.manager.live_target(&token).is_some());

    let done = f.manager.finish(&bound(&started.capture_id)).await.unwrap();
    assert_eq!(done.session.cookies.len(), 1);
    assert_eq!(f.provider.released(), 1);
}

#[tokio::test]
async fn finish_requires_sign_in_then_exports_only_the_scope() {
    let f = fixture();
    let started = f.manager.start(start_request()).await.unwrap();
    let token = live_token(&started);
    let r = bound(&started.capture_id);

    let err = f.manager.finish(&r).await.unwrap_err();
    assert!(matches!(err, EngineError::NotAuthenticated), "{err:?}");
    assert_eq!(
        f.manager.open_count(),
        1,
        "the user may still be signing in"
    );
    assert_eq!(f.provider.released(), 0);
    assert!(f.manager.status(&bound(&started.capture_id)).await.is_ok());

    sign_in(&f, &token).await;
    let done = f.manager.finish(&r).await.unwrap();

    let session = &done.session;
    assert_eq!(
        session.cookies,
        vec![Cookie::new("sid", IN_SCOPE_COOKIE, ".example.com")]
    );
    assert_eq!(session.origins.len(), 1);
    assert_eq!(session.origins[0].origin, "https://app.example.com");
    assert_eq!(
        session.origins[0].local_storage[0].value.expose(),
        APP_STORAGE
    );
    let metadata = session.metadata.as_ref().unwrap();
    assert_eq!(metadata.platform.as_deref(), Some(PLATFORM));
    assert_eq!(metadata.captured_at, Some(f.clock.now()));

    let report = &done.scope_report;
    assert_eq!((report.kept_cookies, report.kept_origins), (1, 1));
    assert_eq!(report.dropped_for(DropReason::CookieOutOfScope), 1);
    assert_eq!(report.dropped_for(DropReason::CookiePublicSuffix), 1);
    assert_eq!(report.dropped_for(DropReason::OriginOutOfScope), 1);
    assert_eq!(report.dropped_total(), 3);

    assert_eq!(f.provider.released(), 1);
    assert_eq!(f.provider.open_leases(), 0);
    assert_eq!(f.manager.open_count(), 0);

    let event = wait_for_event(&f.audit, AuditAction::CaptureFinished).await;
    assert_eq!(event.outcome, AuditOutcome::Ok);
    assert_eq!(
        (event.cookie_count, event.origin_count, event.dropped_count),
        (Some(1), Some(1), Some(3))
    );

    let again = f.manager.finish(&r).await.unwrap_err();
    assert!(matches!(again, EngineError::CaptureNotFound), "{again:?}");
    assert_eq!(f.provider.released(), 1, "released exactly once");
}

#[tokio::test]
async fn the_live_token_is_not_a_management_credential() {
    let f = fixture();
    let started = f.manager.start(start_request()).await.unwrap();
    let token = live_token(&started);
    sign_in(&f, &token).await;

    let by_token = bound(&token);
    assert!(matches!(
        f.manager.finish(&by_token).await,
        Err(EngineError::CaptureNotFound)
    ));
    assert!(matches!(
        f.manager.cancel(&by_token).await,
        Err(EngineError::CaptureNotFound)
    ));
    assert!(matches!(
        f.manager.status(&bound(&token)).await,
        Err(EngineError::CaptureNotFound)
    ));
    assert!(f.manager.live_target(&started.capture_id).is_none());
    assert_eq!(f.manager.open_count(), 1);
    assert_eq!(f.provider.released(), 0);

    f.manager.finish(&bound(&started.capture_id)).await.unwrap();
    assert!(
        f.manager.live_target(&token).is_none(),
        "finished: the live token is dead"
    );

    let other = f.manager.start(start_request()).await.unwrap();
    let other_token = live_token(&other);
    assert!(f.manager.live_target(&other_token).is_some());
    f.manager.cancel(&bound(&other.capture_id)).await.unwrap();
    assert!(
        f.manager.live_target(&other_token).is_none(),
        "cancelled: the live token is dead"
    );
}

#[tokio::test]
async fn cancel_releases_the_browser() {
    let f = fixture();
    let started = f.manager.start(start_request()).await.unwrap();
    let r = bound(&started.capture_id);

    let cancelled = f.manager.cancel(&r).await.unwrap();
    assert!(cancelled.cancelled);
    assert_eq!(f.provider.released(), 1);
    assert_eq!(f.provider.open_leases(), 0);
    assert_eq!(f.manager.open_count(), 0);

    assert!(matches!(
        f.manager.finish(&r).await,
        Err(EngineError::CaptureNotFound)
    ));
    assert!(matches!(
        f.manager.cancel(&r).await,
        Err(EngineError::CaptureNotFound)
    ));
    assert!(matches!(
        f.manager.status(&bound(&started.capture_id)).await,
        Err(EngineError::CaptureNotFound)
    ));
    assert_eq!(f.provider.released(), 1, "released exactly once");
    wait_for_event(&f.audit, AuditAction::CaptureCancelled).await;
}

#[tokio::test]
async fn a_capture_is_open_until_its_ttl() {
    let f = fixture();
    let started = f.manager.start(start_request()).await.unwrap();
    f.clock.advance(TTL - Duration::from_secs(1));
    assert_eq!(f.manager.sweep_expired().await, 0);
    assert!(f.manager.live_target(&live_token(&started)).is_some());
    assert!(f.manager.status(&bound(&started.capture_id)).await.is_ok());
    assert_eq!(f.provider.released(), 0);
}

#[tokio::test]
async fn an_expired_capture_is_gone_and_its_browser_released() {
    let f = fixture();
    let started = f.manager.start(start_request()).await.unwrap();
    let token = live_token(&started);
    sign_in(&f, &token).await;
    f.clock.advance(TTL + Duration::from_secs(1));

    assert!(f.manager.live_target(&token).is_none());
    assert!(matches!(
        f.manager.status(&bound(&started.capture_id)).await,
        Err(EngineError::CaptureNotFound)
    ));
    let err = f
        .manager
        .finish(&bound(&started.capture_id))
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::CaptureNotFound), "{err:?}");

    // `finish` swept implicitly.
    assert_eq!(f.provider.released(), 1);
    assert_eq!(f.provider.open_leases(), 0);
    assert_eq!(f.manager.open_count(), 0);
    assert_eq!(f.manager.sweep_expired().await, 0, "nothing left to sweep");
    assert_eq!(f.provider.released(), 1, "released exactly once");

    let event = wait_for_event(&f.audit, AuditAction::CaptureExpired).await;
    assert_eq!(event.workspace_id.as_deref(), Some(WORKSPACE));
    assert!(
        f.audit
            .events()
            .iter()
            .all(|e| e.action != AuditAction::CaptureFinished)
    );
}

#[tokio::test]
async fn sweep_expired_releases_expired_captures_and_frees_their_slots() {
    let f = fixture_with(
        FakeProvider::new(),
        &scoped_policy(),
        CaptureConfig {
            max_open: 1,
            ..config()
        },
    );
    let started = f.manager.start(start_request()).await.unwrap();
    f.clock.advance(TTL);

    assert_eq!(f.manager.sweep_expired().await, 1);
    assert_eq!(f.provider.released(), 1);
    assert_eq!(f.provider.open_leases(), 0);
    assert!(f.manager.live_target(&live_token(&started)).is_none());
    wait_for_event(&f.audit, AuditAction::CaptureExpired).await;

    f.manager.start(start_request()).await.unwrap();
    assert_eq!(f.manager.open_count(), 1);
}

#[tokio::test]
async fn open_captures_are_capped() {
    let f = fixture_with(
        FakeProvider::new(),
        &scoped_policy(),
        CaptureConfig {
            max_open: 2,
            ..config()
        },
    );
    let first = f.manager.start(start_request()).await.unwrap();
    f.manager.start(start_request()).await.unwrap();

    let err = f.manager.start(start_request()).await.unwrap_err();
    assert!(matches!(err, EngineError::CaptureLimit(2)), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::LimitExceeded);
    assert_eq!(
        f.provider.acquired(),
        2,
        "no browser is opened over the limit"
    );

    f.manager.cancel(&bound(&first.capture_id)).await.unwrap();
    f.manager.start(start_request()).await.unwrap();
    assert_eq!(f.manager.open_count(), 2);
}

#[tokio::test]
async fn a_policy_without_interactive_capture_is_denied_before_acquiring() {
    let policy = PlatformPolicy {
        allow_interactive_capture: Some(false),
        ..scoped_policy()
    };
    let f = fixture_with(FakeProvider::new(), &policy, config());

    let err = f.manager.start(start_request()).await.unwrap_err();
    assert!(
        matches!(&err, EngineError::Core(CoreError::ExecutionDenied { platform, .. }) if platform == PLATFORM),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Denied);
    assert_eq!(f.provider.acquired(), 0);
    assert_eq!(f.manager.open_count(), 0);

    let event = wait_for_event(&f.audit, AuditAction::ExecutionDenied).await;
    assert_eq!(event.outcome, AuditOutcome::Denied);
    assert_eq!(event.platform, PLATFORM);
}

#[tokio::test]
async fn a_provider_that_cannot_be_interactive_is_unsupported() {
    let provider = FakeProvider::new().with_capabilities(ProviderCapabilities {
        interactive: false,
        profiles: false,
    });
    let f = fixture_with(provider, &scoped_policy(), config());

    let err = f.manager.start(start_request()).await.unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::Unsupported { .. })),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert_eq!(f.provider.acquired(), 0);
}

#[tokio::test]
async fn a_remote_viewer_url_is_only_reachable_through_the_live_target() {
    const VIEWER: &str = "https://steel.test/v/secret-viewer";
    let f = fixture_with(
        FakeProvider::new().with_remote_live_view(VIEWER),
        &scoped_policy(),
        config(),
    );
    let started = f.manager.start(start_request()).await.unwrap();

    assert!(!started.live_view_url.contains("secret-viewer"));
    assert!(!started.live_view_url.contains("steel.test"));
    assert!(started.live_view_url.starts_with(LIVE_BASE));
    let target = f.manager.live_target(&live_token(&started)).unwrap();
    let viewer = target.provider_viewer.as_ref().unwrap();
    assert_eq!(viewer.url.expose(), VIEWER);
    assert_eq!(viewer.paths, ["/v/secret-viewer"]);
    assert!(!format!("{target:?}").contains("secret-viewer"));
}

#[tokio::test]
async fn a_panicking_sign_in_check_leaves_the_capture_open() {
    let f = fixture();
    let started = f.manager.start(start_request()).await.unwrap();
    let token = live_token(&started);
    sign_in(&f, &token).await;
    f.strategy.edit(|s| s.precheck = Script::Panic);

    let err = f
        .manager
        .finish(&bound(&started.capture_id))
        .await
        .unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::StrategyPanicked(_))),
        "{err:?}"
    );
    assert_eq!(f.manager.open_count(), 1);
    assert_eq!(f.provider.released(), 0);
    assert!(f.manager.live_target(&token).is_some());

    f.strategy.edit(|s| s.precheck = Script::Return(None));
    let done = f.manager.finish(&bound(&started.capture_id)).await.unwrap();
    assert_eq!(done.scope_report.kept_cookies, 1);
    assert_eq!(f.provider.released(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_sign_in_check_times_out_and_leaves_the_capture_open() {
    let f = fixture();
    let started = f.manager.start(start_request()).await.unwrap();
    sign_in(&f, &live_token(&started)).await;
    f.strategy.edit(|s| s.precheck = Script::Hang);

    let err = f
        .manager
        .finish(&bound(&started.capture_id))
        .await
        .unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::Timeout(_))),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert_eq!(f.manager.open_count(), 1);
    assert_eq!(f.provider.released(), 0);
    assert!(f.manager.status(&bound(&started.capture_id)).await.is_ok());

    // The timed-out check released the capture's lock: the next finish goes through.
    f.strategy.edit(|s| s.precheck = Script::Return(None));
    f.manager.finish(&bound(&started.capture_id)).await.unwrap();
    assert_eq!(f.provider.released(), 1);
}

#[tokio::test]
async fn a_failed_acquire_frees_the_slot() {
    let f = fixture_with(
        FakeProvider::new(),
        &scoped_policy(),
        CaptureConfig {
            max_open: 1,
            ..config()
        },
    );
    f.provider.fail_next_acquire(ProviderErrorKind::Unavailable);

    let err = f.manager.start(start_request()).await.unwrap_err();
    assert!(
        matches!(&err, EngineError::Core(CoreError::Provider(e)) if e.kind() == ProviderErrorKind::Unavailable),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert_eq!(f.manager.open_count(), 0);

    f.manager.start(start_request()).await.unwrap();
    assert_eq!(f.manager.open_count(), 1);
}

#[tokio::test]
async fn close_all_releases_every_open_capture() {
    let f = fixture();
    let mut started = Vec::new();
    for _ in 0..3 {
        started.push(f.manager.start(start_request()).await.unwrap());
    }

    assert_eq!(f.manager.close_all().await, 3);
    assert_eq!(f.provider.released(), 3);
    assert_eq!(f.provider.open_leases(), 0);
    assert_eq!(f.manager.open_count(), 0);
    for s in &started {
        assert!(f.manager.live_target(&live_token(s)).is_none());
        assert!(matches!(
            f.manager.finish(&bound(&s.capture_id)).await,
            Err(EngineError::CaptureNotFound)
        ));
    }
    assert_eq!(f.manager.close_all().await, 0);
    assert_eq!(f.provider.released(), 3);
}

#[tokio::test]
async fn empty_tenant_ids_are_invalid() {
    let f = fixture();
    let no_workspace = CaptureStartRequest {
        workspace_id: String::new(),
        ..start_request()
    };
    let err = f.manager.start(no_workspace).await.unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::InvalidInput(_))),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidInput);

    let no_account = CaptureStartRequest {
        account_id: String::new(),
        ..start_request()
    };
    let err = f.manager.start(no_account).await.unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::InvalidInput(_))),
        "{err:?}"
    );
    assert_eq!(f.provider.acquired(), 0);
}

#[tokio::test]
async fn an_unknown_platform_is_not_found() {
    let f = fixture();
    let request = CaptureStartRequest {
        platform: "nope".into(),
        ..start_request()
    };
    let err = f.manager.start(request).await.unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::UnknownPlatform(_))),
        "{err:?}"
    );
    assert_eq!(f.provider.acquired(), 0);
}

#[tokio::test]
async fn audit_events_never_carry_session_values() {
    let f = fixture();
    // A finished capture, a cancelled one and an expired one, all holding the canaries.
    let finished = f.manager.start(start_request()).await.unwrap();
    sign_in(&f, &live_token(&finished)).await;
    let done = f
        .manager
        .finish(&bound(&finished.capture_id))
        .await
        .unwrap();
    let exported = serde_json::to_string(&done.session).unwrap();
    assert!(
        exported.contains(IN_SCOPE_COOKIE),
        "the canary is really in the session"
    );

    let cancelled = f.manager.start(start_request()).await.unwrap();
    sign_in(&f, &live_token(&cancelled)).await;
    f.manager
        .cancel(&bound(&cancelled.capture_id))
        .await
        .unwrap();

    let expired = f.manager.start(start_request()).await.unwrap();
    sign_in(&f, &live_token(&expired)).await;
    f.clock.advance(TTL + Duration::from_secs(1));
    assert_eq!(f.manager.sweep_expired().await, 1);

    for action in [
        AuditAction::CaptureStarted,
        AuditAction::CaptureFinished,
        AuditAction::CaptureCancelled,
        AuditAction::CaptureExpired,
    ] {
        wait_for_event(&f.audit, action).await;
    }
    let events = f.audit.events();
    assert_eq!(events.len(), 6, "{events:?}");
    let canaries = [
        IN_SCOPE_COOKIE,
        EVIL_COOKIE,
        SUFFIX_COOKIE,
        APP_STORAGE,
        EVIL_STORAGE,
    ];
    for event in &events {
        let json = serde_json::to_string(event).unwrap();
        for canary in canaries {
            assert!(!json.contains(canary), "audit event leaks {canary}: {json}");
        }
        for credential in [&finished, &cancelled, &expired] {
            assert!(
                !json.contains(&credential.capture_id),
                "audit event leaks a capture id"
            );
            assert!(
                !json.contains(&live_token(credential)),
                "audit event leaks a live token"
            );
        }
    }
}

#[tokio::test]
async fn an_over_broad_request_scope_is_rejected_before_any_browser_starts() {
    let f = fixture();
    let request = CaptureStartRequest {
        scope: Some(abr_protocol::SessionScopeSpec {
            cookie_domains: vec!["co.uk".into()],
            origins: vec![],
        }),
        ..start_request()
    };
    let err = f.manager.start(request).await.unwrap_err();
    assert!(
        matches!(err, EngineError::Core(CoreError::InvalidScope(_))),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(f.provider.acquired(), 0);
}
