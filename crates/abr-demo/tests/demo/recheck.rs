//! The `demo` strategy's read-only re-check, end to end: real Chromium (local provider) and
//! the demo site. A post made through the strategy (by the public `Engine`) is found again by
//! the strategy's `recheck` in a fresh browser context with the same session; a text never
//! posted is not found; a signed-out context cannot look. No re-check adds a post.
//!
//! The browser and the site are closed whatever the scenario did (a failed assertion
//! included): the scenario runs in its own task, and the teardown waits for it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;

use abr_core::store::InMemoryStore;
use abr_core::{
    AcquireMode, AcquireRequest, DynSessionProvider, EgressPolicy, RecheckOutcome, SessionProvider,
    StrategyRegistry, WebPostStrategy,
};
use abr_demo::{DemoSite, DemoStrategy};
use abr_engine::{EngineBuilder, EngineConfig, PostReply};
use abr_protocol::{
    AgentSessionState, Cookie, PostContent, PostOutcome, PostRequest, Role, VerificationMethod,
};
use abr_providers::{BrowserSession, LocalBrowserSessionProvider, LocalProviderConfig};

/// Signs in over plain HTTP and returns the session the site's cookie makes.
async fn signed_in(site: &DemoSite, user: &str) -> AgentSessionState {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http
        .post(format!("{}/login", site.base_url()))
        .form(&[("username", user), ("password", "demo-password")])
        .send()
        .await
        .unwrap();
    let set_cookie = response.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap();
    let parsed = cookie::Cookie::parse(set_cookie).unwrap();
    let mut cookie = Cookie::new(parsed.name(), parsed.value(), "127.0.0.1");
    cookie.http_only = parsed.http_only().unwrap_or(false);
    AgentSessionState {
        cookies: vec![cookie],
        ..AgentSessionState::default()
    }
}

/// `recheck` of `content` in a fresh browser context holding `session` (nothing opened
/// before it: the strategy starts on a blank page). The lease is released either way.
async fn recheck_fresh(
    provider: &LocalBrowserSessionProvider,
    strategy: &DemoStrategy,
    session: &AgentSessionState,
    content: &PostContent,
) -> RecheckOutcome {
    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "demo".into(),
            state: Some(session.clone()),
            start_url: None,
        })
        .await
        .expect("a fresh browser context for the re-check");
    let outcome = strategy.recheck(lease.context(), content).await;
    lease.release().await.unwrap();
    outcome.expect("the re-check runs")
}

async fn scenario(
    site: Arc<DemoSite>,
    provider: Arc<LocalBrowserSessionProvider>,
    strategy: DemoStrategy,
) {
    let mut registry = StrategyRegistry::new();
    registry.register(Arc::new(strategy.clone())).unwrap();
    let dyn_provider: DynSessionProvider<BrowserSession> = provider.clone();
    let engine = EngineBuilder::new(
        EngineConfig::default(),
        Arc::clone(&dyn_provider),
        dyn_provider,
        Arc::new(InMemoryStore::new()),
    )
    .strategies(registry)
    .build()
    .expect("the engine builds");
    let tenant = "recheck-tenant";
    let actor = abr_core::testing::actor(Role::Operator, tenant);
    let session = signed_in(&site, "rachel").await;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();

    // Posted once, through the strategy.
    let content = PostContent {
        text: format!("rechecked {stamp} <b>bold</b> & \"quotes\""),
        link: Some("https://example.com/a?b=1&c=2".into()),
        media: vec![],
    };
    let composed = format!("{}\nhttps://example.com/a?b=1&c=2", content.text);
    let posted = engine
        .post(
            &actor,
            None,
            PostRequest {
                platform: "demo".into(),
                session: session.clone(),
                content: content.clone(),
                workspace_id: Some(tenant.into()),
                account_id: None,
                scope: None,
                session_id: None,
            },
        )
        .await
        .expect("the post job starts");
    // The engine is done: what follows runs the strategy's re-check directly.
    engine.shutdown().await;
    let result = match posted.reply {
        PostReply::Result(result) => result,
        PostReply::Record(record) => panic!("a post run here answers its result: {record:?}"),
    };
    assert_eq!(result.outcome(), PostOutcome::Confirmed, "{result:?}");
    let stored: Vec<_> = site
        .posts()
        .into_iter()
        .filter(|p| p.text == composed)
        .collect();
    assert_eq!(stored.len(), 1, "the site stored the post once");
    let id = stored[0].id.clone();
    let posts_before = site.posts().len();

    // Found again in a fresh context with the same session.
    match recheck_fresh(&provider, &strategy, &session, &content).await {
        RecheckOutcome::Confirmed(v) => {
            assert_eq!(v.method, VerificationMethod::Recheck);
            assert_eq!(v.evidence.post_id.as_deref(), Some(id.as_str()));
            assert_eq!(
                v.evidence.permalink.as_deref(),
                Some(format!("{}/p/{id}", site.base_url()).as_str())
            );
            let shown = format!("{v:?}");
            assert!(!shown.contains(&format!("rechecked {stamp}")), "{shown}");
        }
        other => panic!("expected confirmed, got {other:?}"),
    }

    // A text never posted: not found. The posted text without its link is not the post.
    let never = PostContent::text(format!("never posted {stamp}"));
    let outcome = recheck_fresh(&provider, &strategy, &session, &never).await;
    assert!(
        matches!(outcome, RecheckOutcome::NotFound { .. }),
        "{outcome:?}"
    );
    let without_link = PostContent::text(content.text.clone());
    let outcome = recheck_fresh(&provider, &strategy, &session, &without_link).await;
    assert!(
        matches!(outcome, RecheckOutcome::NotFound { .. }),
        "{outcome:?}"
    );

    // No session: the feed sends the browser to sign in, so the re-check cannot look.
    let outcome = recheck_fresh(
        &provider,
        &strategy,
        &AgentSessionState::default(),
        &content,
    )
    .await;
    match &outcome {
        RecheckOutcome::Unavailable { detail } => {
            assert!(detail.contains("signed out"), "{detail}");
        }
        other => panic!("expected unavailable, got {other:?}"),
    }

    // Read-only: no re-check added a post.
    assert_eq!(site.posts().len(), posts_before, "a re-check posted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recheck_finds_a_post_again_in_a_fresh_context_and_not_one_never_posted() {
    let site = Arc::new(
        DemoSite::start("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap(),
    );
    let provider = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        // The browser may reach exactly the demo site on loopback.
        egress: Some(EgressPolicy::new().allow_addr(site.local_addr())),
        ..LocalProviderConfig::default()
    }));
    let strategy = DemoStrategy::new(&site.base_url()).unwrap();

    let run = tokio::spawn(scenario(Arc::clone(&site), Arc::clone(&provider), strategy)).await;

    // Every browser started is closed, and the site stopped, before any verdict.
    let leaked = provider.open_contexts().await;
    provider.shutdown().await;
    let site = Arc::try_unwrap(site).expect("the scenario let go of the site");
    site.shutdown().await;
    if let Err(e) = run {
        std::panic::resume_unwind(e.into_panic());
    }
    assert_eq!(leaked, 0, "browser contexts left open");
}
