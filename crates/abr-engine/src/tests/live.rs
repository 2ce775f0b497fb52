//! What a live token can do, tried as its holder would: at most N sockets, nothing once the
//! capture ended (finish, cancel, expiry: every attachment learns it at once), and no
//! navigation outside the platform's sites ever reaches the browser.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

use std::sync::Arc;
use std::time::Duration;

use crate::capture::{CaptureConfig, SessionCaptureManager};
use crate::error::EngineError;
use crate::live_access::{LiveInputError, LiveRefusal};
use abr_core::testing::{FakeContext, FakeProvider, ManualClock, ScriptedStrategy};
use abr_core::{
    DynSessionProvider, LiveFrame, LiveInput, LiveKey, Modifiers, StrategyRegistry, WebPostStrategy,
};
use abr_protocol::{
    CaptureRef, CaptureStartRequest, CaptureStartResponse, PlatformPolicy, SessionScopeSpec,
};
use time::OffsetDateTime;

const TTL: Duration = Duration::from_secs(600);
/// The bound the issue sets for closing a socket after its capture ended.
const CLOSE_WITHIN: Duration = Duration::from_secs(1);

struct Fixture {
    provider: Arc<FakeProvider>,
    clock: Arc<ManualClock>,
    manager: Arc<SessionCaptureManager<FakeContext>>,
}

fn fixture(max_live_sockets: usize) -> Fixture {
    let provider = Arc::new(FakeProvider::new());
    let policy = PlatformPolicy {
        session: Some(SessionScopeSpec {
            cookie_domains: vec!["fake.example".into()],
            origins: vec!["https://fake.example".into()],
        }),
        ..PlatformPolicy::default()
    };
    let strategy: Arc<dyn WebPostStrategy<FakeContext>> =
        Arc::new(ScriptedStrategy::new("demo", &policy));
    let mut registry = StrategyRegistry::new();
    registry.register(strategy).unwrap();
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let clock = Arc::new(ManualClock::new(
        OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
    ));
    let manager = SessionCaptureManager::new(
        dyn_provider,
        Arc::new(registry),
        CaptureConfig {
            ttl: TTL,
            max_live_sockets,
            live_view_base: "http://runner.test/live/".into(),
            ..CaptureConfig::default()
        },
    )
    .with_clock(clock.clone());
    Fixture {
        provider,
        clock,
        manager: Arc::new(manager),
    }
}

async fn start(f: &Fixture) -> (CaptureStartResponse, String) {
    let started = f
        .manager
        .start(CaptureStartRequest {
            workspace_id: "ws".into(),
            account_id: "acct".into(),
            platform: "demo".into(),
            scope: None,
        })
        .await
        .unwrap();
    let token = started.live_view_url.rsplit('/').next().unwrap().to_owned();
    (started, token)
}

fn bound(capture_id: &str) -> CaptureRef {
    CaptureRef {
        capture_id: capture_id.into(),
        workspace_id: "ws".into(),
        account_id: "acct".into(),
    }
}

#[tokio::test]
async fn a_live_token_holds_at_most_its_limit_of_sockets() {
    let f = fixture(2);
    let (_, token) = start(&f).await;
    let first = f.manager.attach_live(&token).unwrap();
    let second = f.manager.attach_live(&token).unwrap();
    let third = f.manager.attach_live(&token).unwrap_err();
    assert!(matches!(third, EngineError::LiveViewLimit(2)), "{third:?}");
    assert_eq!(third.code(), "live_view_limit");
    assert!(third.is_retryable());
    drop(first);
    let again = f.manager.attach_live(&token);
    assert!(again.is_ok(), "a closed socket frees its slot");
    drop((second, again));
}

#[tokio::test]
async fn a_token_that_is_not_a_live_token_attaches_to_nothing() {
    let f = fixture(2);
    let (started, _) = start(&f).await;
    for guess in [started.capture_id.as_str(), "", "x", "../../v1/capture"] {
        let e = f.manager.attach_live(guess).unwrap_err();
        assert!(matches!(e, EngineError::LiveViewNotFound), "{guess}: {e:?}");
        assert_eq!(e.code(), "live_view_not_found");
    }
}

/// Each way a capture ends, and a socket held open across it.
#[tokio::test]
async fn every_attachment_ends_with_its_capture() {
    for how in ["cancel", "finish", "close_all"] {
        let f = fixture(2);
        let (started, token) = start(&f).await;
        let live = f.manager.attach_live(&token).unwrap();
        assert!(live.is_open());
        let watcher = tokio::spawn(async move {
            live.ended().await;
            live
        });
        tokio::task::yield_now().await;
        assert!(
            !watcher.is_finished(),
            "{how}: ended before the capture did"
        );
        match how {
            "cancel" => {
                f.manager.cancel(&bound(&started.capture_id)).await.unwrap();
            }
            "finish" => {
                f.manager
                    .attach_live(&token)
                    .unwrap()
                    .input(LiveInput::Key {
                        key: LiveKey::Enter,
                        modifiers: Modifiers::NONE,
                    })
                    .await
                    .unwrap();
                f.manager.finish(&bound(&started.capture_id)).await.unwrap();
            }
            _ => {
                f.manager.close_all().await;
            }
        }
        let live = tokio::time::timeout(CLOSE_WITHIN, watcher)
            .await
            .unwrap_or_else(|_| panic!("{how}: a socket outlived its capture"))
            .unwrap();
        assert!(!live.is_open(), "{how}");
        let e = f.manager.attach_live(&token).unwrap_err();
        assert!(matches!(e, EngineError::LiveViewNotFound), "{how}: {e:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_attachment_ends_when_its_capture_expires_even_before_the_sweep() {
    let f = fixture(2);
    let (_, token) = start(&f).await;
    let live = f.manager.attach_live(&token).unwrap();
    assert!(
        tokio::time::timeout(TTL - Duration::from_secs(1), live.ended())
            .await
            .is_err(),
        "ended before the capture expired"
    );
    f.clock.advance(TTL - Duration::from_secs(1));
    assert!(live.is_open());
    tokio::time::timeout(Duration::from_secs(2), live.ended())
        .await
        .expect("the attachment outlived its capture's expiry");
}

#[tokio::test]
async fn navigation_outside_the_platforms_sites_never_reaches_the_browser() {
    let f = fixture(2);
    let (_, token) = start(&f).await;
    let live = f.manager.attach_live(&token).unwrap();
    let page = f.provider.context(1).unwrap();
    for (target, why) in [
        ("http://127.0.0.1:8787/v1/health", LiveRefusal::OutsideSites),
        (
            "http://169.254.169.254/latest/meta-data/",
            LiveRefusal::OutsideSites,
        ),
        (
            "http://localhost:3000/v1/sessions",
            LiveRefusal::OutsideSites,
        ),
        ("https://fake.example.evil.com/", LiveRefusal::OutsideSites),
        ("file:///etc/hostname", LiveRefusal::Scheme),
    ] {
        let url = url::Url::parse(target).unwrap();
        match live.input(LiveInput::Navigate { url }).await {
            Err(LiveInputError::Refused(got)) => assert_eq!(got, why, "{target}"),
            other => panic!("{target}: {other:?}"),
        }
    }
    assert!(
        page.live.inputs().is_empty(),
        "a refused input reached the page"
    );

    let allowed = url::Url::parse("https://www.fake.example/help").unwrap();
    live.input(LiveInput::Navigate { url: allowed })
        .await
        .unwrap();
    assert_eq!(page.live.inputs().len(), 1);
    assert_eq!(
        live.location().await.unwrap().url,
        "https://www.fake.example/help"
    );
}

#[tokio::test]
async fn frames_reach_every_feed_and_a_closed_page_ends_them() {
    let f = fixture(2);
    let (_, token) = start(&f).await;
    let live = f.manager.attach_live(&token).unwrap();
    let page = f.provider.context(1).unwrap();
    let mut feed = live.watch().await.unwrap();
    let frame = LiveFrame {
        jpeg: vec![0xff, 0xd8, 0xff],
        width: 1280,
        height: 800,
    };
    page.live.show(frame.clone());
    let got = tokio::time::timeout(CLOSE_WITHIN, feed.next_frame())
        .await
        .unwrap();
    assert_eq!(got, Some(frame));
    assert_eq!(page.live.feeds_open(), 1);
    page.live.close_page();
    let end = tokio::time::timeout(CLOSE_WITHIN, feed.next_frame())
        .await
        .unwrap();
    assert_eq!(end, None);
    feed.close().await;
    assert_eq!(page.live.feeds_open(), 0);
}

/// A capture whose browser is gone says so, and finishing it is a non-retryable error, not
/// the retryable "not signed in yet" that a client would poll forever.
#[tokio::test]
async fn a_capture_whose_browser_was_lost_reports_it() {
    use std::sync::atomic::Ordering;
    let f = fixture(2);
    let (started, _) = start(&f).await;
    let r = bound(&started.capture_id);
    assert_eq!(
        f.manager.status(&r).await.unwrap().state,
        abr_protocol::CaptureState::Open
    );
    let e = f.manager.finish(&r).await.unwrap_err();
    assert!(matches!(e, EngineError::NotAuthenticated), "{e:?}");
    f.provider
        .context(1)
        .unwrap()
        .lost
        .store(true, Ordering::SeqCst);
    assert_eq!(
        f.manager.status(&r).await.unwrap().state,
        abr_protocol::CaptureState::BrowserLost
    );
    let e = f.manager.finish(&r).await.unwrap_err();
    assert!(matches!(e, EngineError::CaptureBrowserLost), "{e:?}");
    assert_eq!(e.code(), "capture_browser_lost");
    assert!(!e.is_retryable());
    // It stays cancellable, which releases the browser.
    f.manager.cancel(&r).await.unwrap();
    assert_eq!(f.provider.released(), 1);
}

/// An input the browser fails to perform is a typed provider error, not a refusal, and the
/// attachment stays usable.
#[tokio::test]
async fn a_failed_input_is_a_provider_error_and_the_attachment_survives() {
    let f = fixture(2);
    let (_, token) = start(&f).await;
    let live = f.manager.attach_live(&token).unwrap();
    let page = f.provider.context(1).unwrap();
    page.live.fail_inputs(true);
    let typed = LiveInput::Text { text: "a".into() };
    match live.input(typed.clone()).await {
        Err(LiveInputError::Provider(e)) => assert!(e.is_retryable(), "{e}"),
        other => panic!("{other:?}"),
    }
    page.live.fail_inputs(false);
    live.input(typed).await.unwrap();
    assert_eq!(page.live.inputs().len(), 1);
}
