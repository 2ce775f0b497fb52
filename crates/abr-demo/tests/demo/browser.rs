//! The `demo` strategy end to end: real Chromium (local provider), the public [`Engine`]
//! (posts journaled, in its job slots), and the demo site's ground truth, in every fault
//! mode.
//!
//! One browser and one site for the whole file: the site's fault is global, so the
//! scenarios run one after another.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_core::principal::Actor;
use abr_core::store::InMemoryStore;
use abr_core::{
    AcquireMode, AcquireRequest, DynSessionProvider, SessionContext, SessionProvider,
    StrategyRegistry,
};
use abr_demo::{DemoSite, DemoStrategy, FaultMode, Post};
use abr_engine::{Engine, EngineBuilder, EngineConfig, PostReply};
use abr_protocol::{
    AgentPostResult, AgentSessionState, FailureStage, MediaAttachment, PostContent, PostOutcome,
    PostRequest, ProbeRequest, Role, VerificationMethod,
};
use abr_providers::{BrowserSession, LocalBrowserSessionProvider, LocalProviderConfig};
use playwright_rs::protocol::GotoOptions;

/// The row a scenario must end in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok(VerificationMethod),
    Failed(FailureStage),
    NeedsReauth(FailureStage),
}

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";

fn png(name: &str) -> MediaAttachment {
    MediaAttachment {
        file_name: name.into(),
        mime_type: "image/png".into(),
        data_base64: PNG.into(),
    }
}

/// Signs in through the site's own form in a fresh context and exports the session.
async fn sign_in(
    provider: &LocalBrowserSessionProvider,
    site: &DemoSite,
    user: &str,
) -> AgentSessionState {
    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "demo".into(),
            state: None,
            start_url: Some(format!("{}/login", site.base_url())),
        })
        .await
        .expect("acquire a browser for sign-in");
    let page = lease.context().page();
    page.locator("#username").fill(user, None).await.unwrap();
    page.locator("#password")
        .fill("demo-password", None)
        .await
        .unwrap();
    page.locator("button[type=submit]")
        .click(None)
        .await
        .unwrap();
    page.wait_for_url(
        "**/compose",
        GotoOptions::new().timeout(Duration::from_secs(15)),
    )
    .await
    .expect("signing in lands on the composer");
    let state = lease.context().export_state().await.unwrap();
    lease.release().await.unwrap();
    state
}

struct Run {
    result: AgentPostResult,
    new_posts: Vec<Post>,
    elapsed: Duration,
}

/// The tenant every post of the file is made for.
const TENANT: &str = "demo-tenant";

struct Harness {
    site: DemoSite,
    engine: Engine<BrowserSession>,
    actor: Actor,
}

impl Harness {
    async fn post(&self, session: &AgentSessionState, content: PostContent) -> Run {
        let before = self.site.posts().len();
        let started = Instant::now();
        // No idempotency key: every call is a post of its own, with a record of its own.
        let posted = self
            .engine
            .post(
                &self.actor,
                None,
                PostRequest {
                    session_id: None,
                    platform: "demo".into(),
                    session: session.clone(),
                    content,
                    workspace_id: Some(TENANT.into()),
                    account_id: None,
                    scope: None,
                },
            )
            .await
            .expect("the post job starts");
        assert!(!posted.replayed, "a post without a key is never a replay");
        let result = match posted.reply {
            PostReply::Result(result) => *result,
            PostReply::Record(record) => panic!("a post run here answers its result: {record:?}"),
        };
        Run {
            result,
            new_posts: self.site.posts().split_off(before),
            elapsed: started.elapsed(),
        }
    }
}

/// Checks `run` against the expected row and against the site's ground truth; returns the
/// problems found.
fn check(label: &str, run: &Run, text: &str, expect: Expect, media: usize) -> Vec<String> {
    let mut problems = Vec::new();
    let r = &run.result;
    let mut fail = |m: String| problems.push(format!("{label}: {m} (result: {r:?})"));
    let matching: Vec<&Post> = run.new_posts.iter().filter(|p| p.text == text).collect();
    let outcome = r.outcome();

    // Ground truth, whatever was expected: a stored post is ok or uncertain, never a
    // "safe to retry" failure; no stored post is never ok.
    if matching.is_empty() && outcome == PostOutcome::Confirmed {
        fail("confirmed, but the site stored no such post".into());
    }
    if !matching.is_empty() && !matches!(outcome, PostOutcome::Confirmed | PostOutcome::Uncertain) {
        fail(format!(
            "the site stored the post, yet the outcome is {outcome:?}"
        ));
    }
    if run.new_posts.len() > 1 {
        fail(format!(
            "{} posts were stored for one job",
            run.new_posts.len()
        ));
    }

    match expect {
        Expect::Ok(method) => {
            if !r.ok {
                fail("expected ok".into());
            }
            let Some(v) = &r.verification else {
                fail("ok without verification".into());
                return problems;
            };
            if v.method != method {
                fail(format!("verified by {:?}, expected {method:?}", v.method));
            }
            let Some(post) = matching.first() else {
                fail("expected a stored post".into());
                return problems;
            };
            if v.evidence.post_id.as_deref() != Some(post.id.as_str()) {
                fail(format!(
                    "evidence names post {:?}, stored {}",
                    v.evidence.post_id, post.id
                ));
            }
            let permalink = format!("/p/{}", post.id);
            if !v
                .evidence
                .permalink
                .as_deref()
                .is_some_and(|p| p.ends_with(&permalink))
            {
                fail(format!(
                    "permalink {:?} is not {permalink}",
                    v.evidence.permalink
                ));
            }
            if post.media_count != media {
                fail(format!(
                    "stored {} media, expected {media}",
                    post.media_count
                ));
            }
            if r.refreshed_session.is_none() {
                fail("an ok post returns the refreshed session".into());
            }
        }
        Expect::Failed(stage) => {
            if outcome != PostOutcome::Failed || r.failure_stage != Some(stage) {
                fail(format!("expected failed at {stage:?}"));
            }
            if !matching.is_empty() {
                fail("expected nothing stored".into());
            }
        }
        Expect::NeedsReauth(stage) => {
            if outcome != PostOutcome::NeedsReauth || r.failure_stage != Some(stage) {
                fail(format!("expected needsReauth at {stage:?}"));
            }
            if !matching.is_empty() {
                fail("expected nothing stored".into());
            }
        }
    }
    // Never the posted content in the result (evidence, errors).
    let mut visible = serde_json::to_value(r).unwrap();
    visible.as_object_mut().unwrap().remove("refreshedSession");
    if visible
        .to_string()
        .contains(text.lines().next().unwrap_or(text))
    {
        fail("the result echoes the posted text".into());
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_mode_ends_in_the_row_the_ground_truth_allows() {
    let site = DemoSite::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let provider = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 1,
        // The browser may reach exactly the demo site on loopback.
        egress: Some(abr_core::EgressPolicy::new().allow_addr(site.local_addr())),
        ..LocalProviderConfig::default()
    }));
    let strategy = DemoStrategy::new(&site.base_url()).unwrap();
    let mut registry = StrategyRegistry::new();
    registry.register(Arc::new(strategy)).unwrap();
    let dyn_provider: DynSessionProvider<BrowserSession> = provider.clone();
    let engine = EngineBuilder::new(
        EngineConfig {
            // The scenarios run one after another; no pacing (the demo strategy turns it
            // off anyway), and the default tenant limits admit the file's eleven posts.
            pacing: None,
            ..EngineConfig::default()
        },
        Arc::clone(&dyn_provider),
        dyn_provider,
        Arc::new(InMemoryStore::new()),
    )
    .strategies(registry)
    .build()
    .expect("the engine builds");
    let actor = abr_core::testing::actor(Role::Operator, TENANT);

    let t0 = Instant::now();
    let session = sign_in(&provider, &site, "alice").await;
    let sign_in_time = t0.elapsed();
    let cookie = session
        .cookies
        .iter()
        .find(|c| c.name == "demo_session")
        .expect("the session cookie was captured");
    assert!(cookie.http_only, "the session cookie is HttpOnly");
    assert_eq!(cookie.domain, "127.0.0.1", "host-only cookie");
    let token = cookie.value.expose().to_owned();
    assert!(
        session
            .origins
            .iter()
            .any(|o| o.local_storage.iter().any(|i| i.name == "demo_prefs")),
        "the composer stored demo_prefs"
    );

    let h = Harness {
        site,
        engine,
        actor,
    };
    let probe = h
        .engine
        .probe(
            &h.actor,
            ProbeRequest {
                platform: "demo".into(),
                session: session.clone(),
                workspace_id: None,
                account_id: None,
                scope: None,
            },
        )
        .await
        .unwrap();
    assert!(probe.authenticated && !probe.needs_reauth, "{probe:?}");

    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    // expire_session kills the session: it goes last.
    let scenarios: Vec<(FaultMode, PostContent, Expect, usize)> = vec![
        (
            FaultMode::None,
            PostContent {
                text: format!("none {stamp} <b>bold</b> & \"quotes\""),
                link: Some("https://example.com/a?b=1&c=2".into()),
                media: vec![],
            },
            Expect::Ok(VerificationMethod::Toast),
            0,
        ),
        (
            FaultMode::None,
            PostContent {
                text: format!("with media {stamp}"),
                link: None,
                media: vec![png("one.png"), png("two.png")],
            },
            Expect::Ok(VerificationMethod::Toast),
            2,
        ),
        (
            FaultMode::NoToast,
            PostContent::text(format!("no toast {stamp}")),
            Expect::Ok(VerificationMethod::Readback),
            0,
        ),
        (
            FaultMode::FailBeforeSave,
            PostContent::text(format!("fail before save {stamp}")),
            Expect::Failed(FailureStage::Verify),
            0,
        ),
        (
            FaultMode::FailAfterSave,
            PostContent::text(format!("fail after save {stamp}")),
            Expect::Ok(VerificationMethod::Readback),
            0,
        ),
        (
            FaultMode::SlowToast,
            PostContent::text(format!("slow toast {stamp}")),
            Expect::Ok(VerificationMethod::Toast),
            0,
        ),
        (
            FaultMode::MediaReject,
            PostContent {
                text: format!("media reject {stamp}"),
                link: None,
                media: vec![png("rejected.png")],
            },
            Expect::Failed(FailureStage::Media),
            0,
        ),
        // The same text as an earlier, stored post, and an error before saving: the older
        // post in /feed must not be mistaken for this one.
        (
            FaultMode::FailBeforeSave,
            PostContent::text(format!("no toast {stamp}")),
            Expect::Failed(FailureStage::Verify),
            0,
        ),
        (
            FaultMode::ExpireSession,
            PostContent::text(format!("expire session {stamp}")),
            Expect::NeedsReauth(FailureStage::Submit),
            0,
        ),
    ];

    let mut problems = Vec::new();
    let mut timings = Vec::new();
    for (i, (mode, content, expect, media)) in scenarios.into_iter().enumerate() {
        let label = format!("#{i} {mode}");
        let text = match &content.link {
            Some(link) => format!("{}\n{link}", content.text),
            None => content.text.clone(),
        };
        h.site.set_fault(mode);
        let run = h.post(&session, content).await;
        timings.push(format!("{label}: {:?}", run.elapsed));
        // Re-posting an existing text: the earlier post is not "new" for this job.
        problems.extend(check(&label, &run, &text, expect, media));
        if h.site.fault() != FaultMode::None {
            problems.push(format!("{label}: the fault was not consumed"));
        }
        let json = serde_json::to_string(&run.result).unwrap();
        let error = serde_json::to_string(&run.result.error).unwrap();
        if error.contains(&token) {
            problems.push(format!(
                "{label}: the error carries the session token: {json}"
            ));
        }
        if mode == FaultMode::FailBeforeSave && run.result.uncertain {
            problems.push(format!(
                "{label}: an error before saving is never uncertain"
            ));
        }
    }

    // After expire_session the stored session is dead: the precheck says so.
    let run = h
        .post(&session, PostContent::text(format!("after expiry {stamp}")))
        .await;
    problems.extend(check(
        "after expiry",
        &run,
        &format!("after expiry {stamp}"),
        Expect::NeedsReauth(FailureStage::Precheck),
        0,
    ));
    // A session that never signed in.
    let run = h
        .post(
            &AgentSessionState::default(),
            PostContent::text(format!("anonymous {stamp}")),
        )
        .await;
    problems.extend(check(
        "no session",
        &run,
        &format!("anonymous {stamp}"),
        Expect::NeedsReauth(FailureStage::Precheck),
        0,
    ));

    eprintln!("sign-in: {sign_in_time:?}\n{}", timings.join("\n"));
    h.engine.shutdown().await;
    provider.shutdown().await;
    h.site.shutdown().await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
