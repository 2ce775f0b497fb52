//! The guard rails of a task on fakes: read-only and dry runs refuse committing actions
//! before they reach the page; pauses end the run without a handoff and wait for a person
//! with one (requested → active → resumed, or ended / expired); the live view only while a
//! takeover is active; site consent is asked once and stands; frames are taken, bounded,
//! and never with screenshots off.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use super::{agent, approver, checked};
use abr_core::principal::Right;
use std::sync::Arc;
use std::time::Duration;

use crate::error::EngineError;
use crate::task::runner::TaskRunner;
use abr_core::guard::{
    ElementFacts, FrameRefused, FrameStore, InMemoryFrameStore, InMemorySiteStore, PageSignals,
    SiteStore, StoredFrame,
};
use abr_core::store::{InMemoryStore, TaskStore};
use abr_core::testing::{FakeContext, FakePage, FakeProvider};
use abr_core::{CoreError, DynSessionProvider};
use abr_protocol::{
    AgentSessionState, ApproveRequest, BlockedBy, CommitClass, Cookie, FrameInfo, FramePoint,
    PauseReason, RunScreenshots, ScreenshotsMode, SiteDecision, SiteEntry, StepPlan, TakeoverState,
    TaskRecord, TaskRequest, TaskState,
};
use serde_json::{Value, json};

const T: &str = "tenant-a";

struct H {
    provider: Arc<FakeProvider>,
    page: Arc<FakePage>,
    runner: Arc<TaskRunner<FakeContext>>,
    frames: Arc<InMemoryFrameStore>,
    sites: Arc<InMemorySiteStore>,
}

fn h() -> H {
    let provider = Arc::new(FakeProvider::new());
    let page = provider.page();
    let frames = Arc::new(InMemoryFrameStore::default());
    let sites = Arc::new(InMemorySiteStore::default());
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryStore::default());
    let runner = TaskRunner::new(dyn_provider, store)
        .with_frames(frames.clone())
        .with_sites(sites.clone());
    H {
        provider,
        page,
        runner: Arc::new(runner),
        frames,
        sites,
    }
}

fn plan(value: Value) -> StepPlan {
    serde_json::from_value(value).unwrap()
}

fn request(plan: StepPlan) -> TaskRequest {
    serde_json::from_value(json!({ "plan": plan })).unwrap()
}

/// The frames a run of [`click_plan`] takes: the page, its two clicks, completion.
const CLICK_PLAN_FRAMES: [FramePoint; 4] = [
    FramePoint::Navigation,
    FramePoint::Click,
    FramePoint::Click,
    FramePoint::Completion,
];

fn click_plan(read_only: bool) -> StepPlan {
    plan(json!({
        "targetUrl": "https://shop.example/cart",
        "readOnly": read_only,
        "steps": [
            {"type": "type", "selector": "#q", "value": "shoes", "description": "Search", "timeoutMs": 200},
            {"type": "click", "selector": "#next", "description": "Next page", "timeoutMs": 200},
            {"type": "click", "selector": "#pay", "description": "Pay", "timeoutMs": 200}
        ],
        "verification": {"method": "dom_check", "text": "Paid"}
    }))
}

fn link(name: &str) -> ElementFacts {
    ElementFacts {
        tag: "a".into(),
        name: name.into(),
        ..ElementFacts::default()
    }
}

fn field(name: &str) -> ElementFacts {
    ElementFacts {
        tag: "input".into(),
        input_type: Some("search".into()),
        name: name.into(),
        ..ElementFacts::default()
    }
}

fn pay_button() -> ElementFacts {
    ElementFacts {
        tag: "button".into(),
        input_type: Some("button".into()),
        name: "Pay now".into(),
        ..ElementFacts::default()
    }
}

fn shop(h: &H) {
    h.page.set_facts("#q", field("Search"));
    h.page.set_facts("#next", link("Next page"));
    h.page.set_facts("#pay", pay_button());
    h.page.text_after("#pay", "Paid");
}

async fn run(h: &H, request: TaskRequest) -> TaskRecord {
    let created = h
        .runner
        .create(&checked(&agent(T), Right::Propose), request, None)
        .await
        .unwrap();
    let id = created.record.task_id.clone();
    if created.record.state == TaskState::PendingApproval {
        h.runner
            .approve(
                &checked(&approver(T), Right::Approve),
                &id,
                &ApproveRequest {
                    approved_by: Some("alice".into()),
                    plan_hash: created.record.plan_hash.clone(),
                },
            )
            .await
            .unwrap();
    }
    h.runner.run(T, &id).await.unwrap().record
}

// ---- the commit guard -----------------------------------------------------------------------

#[tokio::test]
async fn a_read_only_plan_is_refused_at_pay_before_the_click_reaches_the_page() {
    let h = h();
    shop(&h);
    let record = run(&h, request(click_plan(true))).await;
    assert_eq!(record.state, TaskState::Failed);
    assert!(record.read_only);
    let error = record.error.clone().unwrap();
    assert_eq!(error.code, "blocked_action");
    assert!(
        !error.retryable,
        "read-only is permanent: a retry meets the same refusal"
    );
    assert_eq!(record.failed_step, Some(2));
    assert_eq!(record.blocked.len(), 1);
    let blocked = record.blocked[0].clone();
    assert_eq!(blocked.step, Some(2));
    assert_eq!(blocked.blocked_by, BlockedBy::ReadOnly);
    assert_eq!(blocked.class, CommitClass::CommittingLabel);
    assert_eq!(blocked.verb.as_deref(), Some("pay"));
    assert_eq!(
        h.page.clicks_on("#pay"),
        0,
        "the refused click never reached the page"
    );
    assert_eq!(
        h.page.clicks_on("#next"),
        1,
        "the harmless link was clicked"
    );
    assert_eq!(h.page.count("type"), 1, "typing stays allowed");
    assert!(!record.step_results[2].committing);
}

#[tokio::test]
async fn a_dry_run_rehearses_up_to_the_commit_and_read_only_wins_over_it() {
    let h = h();
    shop(&h);
    let mut dry = request(click_plan(false));
    dry.dry_run = true;
    let record = run(&h, dry).await;
    assert!(record.dry_run);
    assert_eq!(record.error.unwrap().code, "blocked_action");
    assert_eq!(record.blocked[0].blocked_by, BlockedBy::DryRun);
    assert_eq!(h.page.clicks_on("#pay"), 0);

    let mut both = request(click_plan(true));
    both.dry_run = true;
    let record = run(&h, both).await;
    assert_eq!(record.blocked[0].blocked_by, BlockedBy::ReadOnly);

    let record = run(&h, request(click_plan(false))).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(h.page.clicks_on("#pay"), 1);
    assert!(record.step_results[2].committing);
    assert!(
        !record.step_results[1].committing,
        "a link named Next page does not commit"
    );
}

#[tokio::test]
async fn an_element_that_cannot_be_inspected_is_not_acted_on_and_the_step_fails_safely() {
    let h = h();
    shop(&h);
    h.page.remove("#pay");
    let mut p = click_plan(false);
    p.steps.truncate(3);
    let record = run(&h, request(p)).await;
    // Not found: the step failed before anything committing ran.
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.error.unwrap().code, "element_not_found");
    assert_eq!(h.page.clicks_on("#pay"), 0, "nothing was done to it");
}

// ---- pauses ---------------------------------------------------------------------------------

fn captcha(url: &str) -> PageSignals {
    PageSignals {
        url: url.into(),
        status: Some(200),
        text: "please verify you are human".into(),
        captcha: true,
        ..PageSignals::default()
    }
}

#[tokio::test]
async fn without_a_handoff_a_detected_challenge_ends_the_run_with_its_reason() {
    let h = h();
    shop(&h);
    h.page
        .set_signals(Some(captcha("https://shop.example/cart")));
    let record = run(&h, request(click_plan(false))).await;
    assert_eq!(record.state, TaskState::Failed);
    let error = record.error.unwrap();
    assert_eq!(error.code, "challenge");
    assert!(!error.retryable);
    assert_eq!(h.page.count("click"), 0, "nothing ran past the challenge");
}

async fn wait_for_state(h: &H, id: &str, state: TaskState) -> TaskRecord {
    for _ in 0..400 {
        let record = h.runner.get(T, id).await.unwrap();
        if record.state == state {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never reached {state:?}");
}

async fn start_paused(h: &H, wait_seconds: u64) -> (String, tokio::task::JoinHandle<TaskRecord>) {
    start_paused_with(h, click_plan(false), wait_seconds).await
}

/// Creates, approves and starts a run of `plan` that waits `wait_seconds` for a person.
async fn start_paused_with(
    h: &H,
    plan: StepPlan,
    wait_seconds: u64,
) -> (String, tokio::task::JoinHandle<TaskRecord>) {
    let mut req = request(plan);
    req.handoff = Some(abr_protocol::HandoffOptions { wait_seconds });
    let created = h
        .runner
        .create(&checked(&agent(T), Right::Propose), req, None)
        .await
        .unwrap();
    let id = created.record.task_id.clone();
    h.runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &id,
            &ApproveRequest {
                approved_by: Some("alice".into()),
                plan_hash: created.record.plan_hash.clone(),
            },
        )
        .await
        .unwrap();
    let runner = Arc::clone(&h.runner);
    let task_id = id.clone();
    let join = tokio::spawn(async move { runner.run(T, &task_id).await.unwrap().record });
    (id, join)
}

#[tokio::test]
async fn a_challenge_pauses_a_takeover_clears_it_and_the_run_resumes_where_it_stopped() {
    let h = h();
    shop(&h);
    h.page
        .set_signals(Some(captcha("https://shop.example/cart")));
    let (id, join) = start_paused(&h, 60).await;
    let paused = wait_for_state(&h, &id, TaskState::Paused).await;
    let pause = paused.pause.clone().unwrap();
    assert_eq!(pause.reason, PauseReason::Challenge);
    assert_eq!(pause.state, TakeoverState::Requested);
    assert_eq!(
        h.provider.open_leases(),
        1,
        "a paused run keeps its browser"
    );

    // The live view is refused until the takeover is active: no token exists yet, and a
    // guessed one attaches nothing.
    assert!(matches!(
        h.runner.handoffs().attach_live("guess"),
        Err(EngineError::LiveViewNotFound)
    ));
    // Another tenant cannot act on it.
    assert!(matches!(
        h.runner.take_over("tenant-b", &id, "person").await,
        Err(EngineError::Core(CoreError::TaskNotFound))
    ));
    let active = h.runner.take_over(T, &id, "ada").await.unwrap();
    let attachment = h.runner.handoffs().attach_live(&active.live_token).unwrap();
    assert!(attachment.is_open());
    // The person clears the challenge; another one resumes the run.
    h.page.set_signals(None);
    h.runner.resume(T, &id, "grace").await.unwrap();
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(h.page.clicks_on("#pay"), 1);
    let events: Vec<_> = record
        .takeover_events
        .iter()
        .map(|e| e.event.as_str())
        .collect();
    assert_eq!(
        events,
        ["takeover_required", "takeover_active", "takeover_resumed"]
    );
    assert!(record.takeover_events.iter().all(|e| e.run_id == id));
    // Each move names who made it; the run's own request names nobody.
    let by: Vec<_> = record
        .takeover_events
        .iter()
        .map(|e| e.by.as_deref())
        .collect();
    assert_eq!(by, [None, Some("ada"), Some("grace")]);
    // Events carry ids only.
    let json = serde_json::to_string(&record.takeover_events).unwrap();
    assert!(!json.contains("shop.example") && !json.contains(&active.live_token));
    // After the resume the live token is dead.
    tokio::time::timeout(Duration::from_secs(1), attachment.ended())
        .await
        .expect("the live socket is told to close when the takeover ends");
    assert!(h.runner.handoffs().attach_live(&active.live_token).is_err());
    assert!(matches!(
        h.runner.resume(T, &id, "person").await,
        Err(EngineError::NoTakeover)
    ));
}

/// Issue 34, finding 7: a read-only run paused on a page that claims a security check is
/// taken over, and the person does nothing: the page's own timer posts, and nothing leaves.
/// Right after the person clicks in the live view, the page's post is theirs and leaves; a
/// moment later the page's own posts are refused again, and so is every socket. On main
/// before the fix every post of the timer left while the takeover was active.
#[tokio::test]
async fn a_takeover_lets_through_the_persons_writes_only() {
    let h = h();
    shop(&h);
    h.page
        .set_signals(Some(captcha("https://shop.example/cart")));
    let (id, join) = start_paused_with(&h, click_plan(true), 60).await;
    wait_for_state(&h, &id, TaskState::Paused).await;
    let active = h.runner.take_over(T, &id, "person").await.unwrap();
    let attachment = h.runner.handoffs().attach_live(&active.live_token).unwrap();
    // The run has seen the takeover become active.
    for _ in 0..400 {
        let record = h.runner.get(T, &id).await.unwrap();
        if record
            .pause
            .is_some_and(|p| p.state == TakeoverState::Active)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The person looks (moves the pointer, scrolls): the page's timer posts, nothing leaves.
    let look = abr_core::live::LiveInput::Pointer {
        action: abr_core::live::PointerAction::Move,
        x: 10.0,
        y: 10.0,
        button: abr_core::live::PointerButton::None,
        click_count: 0,
        modifiers: abr_core::live::Modifiers::default(),
    };
    attachment.input(look).await.unwrap();
    for n in 0..5 {
        assert!(
            !h.page
                .page_sends("POST", &format!("https://shop.example/api/like?n={n}"))
                .await,
            "the page's own post {n} left during the takeover"
        );
    }
    // The person clicks: what the page sends right after is theirs.
    let click = abr_core::live::LiveInput::Pointer {
        action: abr_core::live::PointerAction::Down,
        x: 10.0,
        y: 10.0,
        button: abr_core::live::PointerButton::Left,
        click_count: 1,
        modifiers: abr_core::live::Modifiers::default(),
    };
    attachment.input(click).await.unwrap();
    assert!(
        h.page
            .page_sends("POST", "https://shop.example/verify")
            .await,
        "the post that follows the person's click leaves"
    );
    assert_eq!(
        h.page.sent(),
        [("POST".to_owned(), "https://shop.example/verify".to_owned())],
        "only the person's post left"
    );
    h.page.set_signals(None);
    h.runner.resume(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    let refused_posts = record
        .blocked
        .iter()
        .filter(|b| b.class == CommitClass::NetworkWrite)
        .count();
    assert!(
        refused_posts >= 5,
        "the page's own posts are on the record as refused: {:?}",
        record.blocked
    );
}

/// The checkpoint before a step reads its element with the page; a page that looks harmless
/// there and turns its control into a payment during a takeover is judged as it is after
/// the takeover: the read-only run refuses the click.
#[tokio::test]
async fn a_control_that_changes_during_a_takeover_is_judged_as_it_is_after_it() {
    let h = h();
    h.page.set_facts("#next", link("Next page"));
    h.page
        .set_signals(Some(captcha("https://shop.example/cart")));
    let read_only = plan(json!({
        "targetUrl": "https://shop.example/cart",
        "readOnly": true,
        "steps": [
            {"type": "click", "selector": "#next", "description": "Next page", "timeoutMs": 200}
        ],
        "verification": {"method": "dom_check", "text": "Paid"}
    }));
    let (id, join) = start_paused_with(&h, read_only, 60).await;
    let paused = wait_for_state(&h, &id, TaskState::Paused).await;
    assert_eq!(paused.pause.unwrap().reason, PauseReason::Challenge);
    let inspected = h.page.inspected();
    assert!(inspected >= 1, "the checkpoint read the next element");

    // During the takeover the page turns the harmless link into a payment.
    h.runner.take_over(T, &id, "person").await.unwrap();
    h.page.set_facts("#next", pay_button());
    h.page.set_signals(None);
    h.runner.resume(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    assert!(
        h.page.inspected() > inspected,
        "the element was read again after the takeover"
    );
    assert_eq!(h.page.clicks_on("#next"), 0, "the payment was clicked");
    assert_eq!(record.blocked.len(), 1, "{:?}", record.blocked);
    assert_eq!(record.blocked[0].step, Some(0));
}

#[tokio::test]
async fn an_expired_takeover_ends_the_run_without_acting() {
    let h = h();
    shop(&h);
    h.page
        .set_signals(Some(captcha("https://shop.example/cart")));
    let (id, join) = start_paused(&h, 1).await;
    let record = tokio::time::timeout(Duration::from_secs(5), join)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.error.unwrap().code, "takeover_expired");
    assert_eq!(record.pause.unwrap().state, TakeoverState::Expired);
    assert_eq!(h.page.count("click"), 0);
    assert_eq!(h.provider.open_leases(), 0, "the browser is released");
    assert!(matches!(
        h.runner.take_over(T, &id, "person").await,
        Err(EngineError::NoTakeover)
    ));
}

#[tokio::test]
async fn an_ended_takeover_stops_the_run_and_a_block_still_there_after_resume_ends_it() {
    let h = h();
    shop(&h);
    h.page
        .set_signals(Some(captcha("https://shop.example/cart")));
    let (id, join) = start_paused(&h, 60).await;
    wait_for_state(&h, &id, TaskState::Paused).await;
    h.runner.end_takeover(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    assert_eq!(record.error.unwrap().code, "takeover_ended");
    assert_eq!(h.page.count("click"), 0);

    let (id, join) = start_paused(&h, 60).await;
    wait_for_state(&h, &id, TaskState::Paused).await;
    // Resumed without clearing it: the run never goes past the challenge.
    h.runner.resume(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.error.unwrap().code, "challenge");
    assert_eq!(h.page.count("click"), 0);
}

#[tokio::test]
async fn a_control_that_keeps_failing_pauses_stuck_and_runs_again_after_the_resume() {
    let h = h();
    shop(&h);
    h.page.remove("#next");
    let (id, join) = start_paused(&h, 60).await;
    let paused = wait_for_state(&h, &id, TaskState::Paused).await;
    assert_eq!(paused.pause.unwrap().reason, PauseReason::Stuck);
    h.page.restore("#next");
    h.runner.resume(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(h.page.clicks_on("#next"), 1);
}

#[tokio::test]
async fn a_submit_with_an_empty_required_field_pauses_for_input() {
    let h = h();
    shop(&h);
    h.page.set_facts(
        "#pay",
        ElementFacts {
            tag: "button".into(),
            name: "Continue".into(),
            in_form: true,
            form_has_submit: true,
            form_missing_required: true,
            ..ElementFacts::default()
        },
    );
    let (id, join) = start_paused(&h, 60).await;
    let paused = wait_for_state(&h, &id, TaskState::Paused).await;
    assert_eq!(paused.pause.unwrap().reason, PauseReason::NeedsInput);
    assert_eq!(h.page.clicks_on("#pay"), 0);
    h.page.set_facts(
        "#pay",
        ElementFacts {
            tag: "button".into(),
            name: "Continue".into(),
            in_form: true,
            form_has_submit: true,
            ..ElementFacts::default()
        },
    );
    h.runner.resume(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(h.page.clicks_on("#pay"), 1);
}

#[tokio::test]
async fn a_session_without_a_live_cookie_pauses_login_required_and_records_names_only() {
    let h = h();
    shop(&h);
    let mut req = request(click_plan(false));
    let mut expired = Cookie::new("sid", "cookie-secret-value", "shop.example");
    expired.expires = 1_000.0;
    req.session = Some(AgentSessionState {
        cookies: vec![expired],
        ..AgentSessionState::default()
    });
    req.scope = Some(abr_protocol::SessionScopeSpec {
        cookie_domains: vec!["shop.example".into()],
        origins: vec![],
    });
    // The fake browser exports what it was given.
    let record = run(&h, req).await;
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.error.unwrap().code, "login_required");
    assert_eq!(h.page.clicks_on("#pay"), 0);
    let facts = record.session_check.unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].name, "sid");
    assert!(facts[0].expired);
    let json = serde_json::to_string(&facts).unwrap();
    assert!(!json.contains("cookie-secret-value"));
}

// ---- sites ----------------------------------------------------------------------------------

#[tokio::test]
async fn a_site_nobody_decided_on_asks_for_consent_once_and_the_decision_stands() {
    let h = h();
    shop(&h);
    // The page the plan opened redirected to another site.
    h.page.set_signals(Some(PageSignals {
        url: "https://pay.other.example/checkout".into(),
        status: Some(200),
        ..PageSignals::default()
    }));
    let (id, join) = start_paused(&h, 60).await;
    let paused = wait_for_state(&h, &id, TaskState::Paused).await;
    assert_eq!(paused.pause.unwrap().reason, PauseReason::ConsentRequired);
    h.sites
        .decide(
            T,
            SiteEntry {
                domain: "other.example".into(),
                decision: SiteDecision::Allow,
                decided_by: "alice".into(),
                decided_at: time::OffsetDateTime::UNIX_EPOCH,
            },
        )
        .await
        .unwrap();
    h.runner.resume(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);

    // Later runs do not ask again.
    let record = run(&h, request(click_plan(false))).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert!(record.pause.is_none());
}

#[tokio::test]
async fn a_denied_site_is_never_opened() {
    let h = h();
    shop(&h);
    h.sites
        .decide(
            T,
            SiteEntry {
                domain: "shop.example".into(),
                decision: SiteDecision::Deny,
                decided_by: "alice".into(),
                decided_at: time::OffsetDateTime::UNIX_EPOCH,
            },
        )
        .await
        .unwrap();
    let record = run(&h, request(click_plan(false))).await;
    assert_eq!(record.state, TaskState::Failed);
    let error = record.error.unwrap();
    assert_eq!(error.code, "site_denied");
    assert!(!error.retryable);
    assert_eq!(
        h.provider.acquired(),
        0,
        "no browser started for a denied site"
    );
    assert_eq!(h.page.count("navigate"), 0);
    // Another tenant's decision does not apply.
    let created = h
        .runner
        .create(
            &checked(&agent("tenant-b"), Right::Propose),
            request(click_plan(false)),
            None,
        )
        .await
        .unwrap();
    assert_eq!(created.record.state, TaskState::PendingApproval);
}

// ---- frames ---------------------------------------------------------------------------------

fn read_plan() -> StepPlan {
    plan(json!({
        "targetUrl": "https://shop.example/cart",
        "readOnly": true,
        "steps": [
            {"type": "extract", "name": "total", "kind": "text", "selector": "#total", "description": "Read the total"},
            {"type": "navigate", "url": "https://shop.example/orders", "description": "Orders"},
            {"type": "extract", "name": "orders", "kind": "text", "selector": "#total", "description": "Read the orders"}
        ],
        "verification": {"method": "dom_check", "text": "Shop"}
    }))
}

/// A page read's frame goes through the one redaction path; the last read's is the
/// completion frame (only reads follow it: the same page, captured once).
#[tokio::test]
async fn a_frame_follows_every_page_read_through_the_one_redaction_path() {
    let h = h();
    shop(&h);
    h.page.set_text("Shop");
    h.page.extract_result("#total", json!("12.00"));
    let record = run(&h, request(read_plan())).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(
        frame_points(&h, &record.task_id).await,
        [
            FramePoint::Navigation,
            FramePoint::Read,
            FramePoint::Navigation,
            FramePoint::Completion
        ]
    );
    let frames = h.frames.frames(T, &record.task_id).await.unwrap();
    let reads: Vec<_> = frames
        .iter()
        .filter(|f| f.point == FramePoint::Read)
        .map(|f| f.action.as_str())
        .collect();
    assert_eq!(reads, ["extract"], "{frames:?}");

    // A page that cannot be redacted gives no frame at all, after a read either.
    let h = self::h();
    shop(&h);
    h.page.set_text("Shop");
    h.page.extract_result("#total", json!("12.00"));
    h.page.fail_frames(true);
    let record = run(&h, request(read_plan())).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert!(
        h.frames
            .frames(T, &record.task_id)
            .await
            .unwrap()
            .is_empty()
    );
}

/// The completion frame of a page that has not changed since the run's last frame is that
/// frame's image kept again (`sameAs`): one read of the page instead of a capture. A page
/// that changed meanwhile, or a step that acted since, gets a capture of its own.
#[tokio::test]
async fn a_completion_frame_of_an_unchanged_page_is_the_last_frame_kept_again() {
    let unchanged = h();
    let changed = h();
    for h in [&unchanged, &changed] {
        shop(h);
        h.page.set_text("Shop");
        h.page.extract_result("#total", json!("12.00"));
        h.page.watch_frames(true);
    }
    // The last read's script changes the page as it is read.
    changed.page.changes_on("#total");
    let kept = run(&unchanged, request(read_plan())).await;
    let captured = run(&changed, request(read_plan())).await;
    for (h, record) in [(&unchanged, &kept), (&changed, &captured)] {
        assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
        assert_eq!(
            frame_points(h, &record.task_id).await,
            [
                FramePoint::Navigation,
                FramePoint::Read,
                FramePoint::Navigation,
                FramePoint::Completion
            ]
        );
    }
    let frames = unchanged.frames.frames(T, &kept.task_id).await.unwrap();
    assert_eq!(
        frames.iter().map(|f| f.same_as).collect::<Vec<_>>(),
        [None, None, None, Some(3)]
    );
    assert_eq!(
        unchanged.page.frames_taken(),
        3,
        "the page was captured again"
    );
    let image = |seq| unchanged.frames.frame(T, &kept.task_id, seq);
    let jpeg = |frame: Option<abr_core::guard::StoredFrame>| frame.unwrap().jpeg;
    assert_eq!(jpeg(image(4).await.unwrap()), jpeg(image(3).await.unwrap()));
    assert_ne!(jpeg(image(3).await.unwrap()), jpeg(image(2).await.unwrap()));
    assert_eq!(frames[3].url, frames[2].url);
    let frames = changed.frames.frames(T, &captured.task_id).await.unwrap();
    assert!(frames.iter().all(|f| f.same_as.is_none()), "{frames:?}");
    assert_eq!(changed.page.frames_taken(), 4);

    // A step that acts after the last frame: the page is not even asked.
    let h = self::h();
    shop(&h);
    h.page.set_text("Shop");
    h.page.watch_frames(true);
    let acts_last = plan(json!({
        "targetUrl": "https://shop.example/cart",
        "steps": [
            {"type": "navigate", "url": "https://shop.example/cart", "description": "Open the cart"},
            {"type": "type", "selector": "#note", "value": "gift", "description": "Add a note"}
        ],
        "verification": {"method": "dom_check", "text": "Shop"}
    }));
    let record = run(&h, request(acts_last)).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    let frames = h.frames.frames(T, &record.task_id).await.unwrap();
    assert_eq!(
        frames
            .iter()
            .map(|f| (f.point, f.same_as))
            .collect::<Vec<_>>(),
        [
            (FramePoint::Navigation, None),
            (FramePoint::Completion, None)
        ]
    );
    assert_eq!(h.page.still_checks(), 0, "a page a step acted on was asked");
}

/// The points of the frames run `run_id` of tenant `T` kept, in order.
async fn frame_points(h: &H, run_id: &str) -> Vec<FramePoint> {
    let frames = h.frames.frames(T, run_id).await.unwrap();
    frames.iter().map(|f| f.point).collect()
}

/// A plan whose first step opens its own target URL loads it once: that step opens it, with
/// its frame and the page read after it. Any other first step finds the target open.
#[tokio::test]
async fn a_first_step_that_opens_the_target_loads_it_once() {
    let h = h();
    shop(&h);
    let opens = plan(json!({
        "targetUrl": "https://shop.example/cart",
        "steps": [
            {"type": "navigate", "url": "https://shop.example/cart", "description": "Open the cart"},
            {"type": "click", "selector": "#next", "description": "Next page", "timeoutMs": 200}
        ],
        "verification": {"method": "dom_check", "text": "Shop"}
    }));
    h.page.set_text("Shop");
    let record = run(&h, request(opens)).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(h.page.count("navigate"), 1, "the target was loaded twice");
    assert_eq!(record.step_results[0].action, "navigate");
    assert_eq!(
        frame_points(&h, &record.task_id).await,
        [
            FramePoint::Navigation,
            FramePoint::Click,
            FramePoint::Completion
        ]
    );

    // Elsewhere first: the target is opened before the first step.
    let h = self::h();
    shop(&h);
    let elsewhere = plan(json!({
        "targetUrl": "https://shop.example/cart",
        "steps": [
            {"type": "navigate", "url": "https://shop.example/other", "description": "Open another page"}
        ],
        "verification": {"method": "dom_check", "text": "Shop"}
    }));
    h.page.set_text("Shop");
    let record = run(&h, request(elsewhere)).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(h.page.count("navigate"), 2);
}

#[tokio::test]
async fn frames_are_taken_at_fixed_points_and_never_with_screenshots_off() {
    let h = h();
    shop(&h);
    let record = run(&h, request(click_plan(false))).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(
        record.replay.clone().unwrap().screenshots,
        ScreenshotsMode::On
    );
    assert_eq!(frame_points(&h, &record.task_id).await, CLICK_PLAN_FRAMES);
    let frames = h.frames.frames(T, &record.task_id).await.unwrap();
    assert!(frames.iter().all(|f| f.url == "https://shop.example/cart"));
    assert!(
        h.frames
            .frames("tenant-b", &record.task_id)
            .await
            .unwrap()
            .is_empty()
    );

    let taken = h.page.frames_taken();
    h.frames.set_screenshots_enabled(T, false).await.unwrap();
    let record = run(&h, request(click_plan(false))).await;
    let replay = record.replay.unwrap();
    assert_eq!(replay.screenshots, ScreenshotsMode::Off);
    assert_eq!(replay.reason.as_deref(), Some("tenant_setting"));
    assert_eq!(
        h.page.frames_taken(),
        taken,
        "the browser was never asked for a frame"
    );
    assert!(
        h.frames
            .frames(T, &record.task_id)
            .await
            .unwrap()
            .is_empty()
    );
    // The store refuses one for that run on its own.
    let refused = h
        .frames
        .put_frame(T, &record.task_id, frame())
        .await
        .unwrap_err();
    assert!(matches!(refused, FrameRefused::ScreenshotsOff));
}

/// A frame takes about as long as a page read, so the runner takes it beside the reads
/// that follow its point. What may change the page waits for it: no action ever reaches a
/// page under a frame's blur, and the frames keep the order of their points.
#[tokio::test]
async fn frames_are_taken_beside_page_reads_and_never_under_an_action() {
    let h = h();
    shop(&h);
    h.page.frame_takes(&[Duration::from_millis(40)]);
    let record = run(&h, request(click_plan(false))).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(frame_points(&h, &record.task_id).await, CLICK_PLAN_FRAMES);
    let under_blur = h.page.under_blur();
    assert!(
        under_blur.iter().any(|seen| seen == "read"),
        "the checkpoints read the page while the frames were taken: {under_blur:?}"
    );
    assert!(
        under_blur
            .iter()
            .all(|seen| seen == "read" || seen == "assert"),
        "only reads reached the page under a frame's blur: {under_blur:?}"
    );
    assert!(!h.page.blurred(), "no blur is left on the page");
}

/// A checkpoint that pauses for a person waits for the frame still being taken (here
/// slower than the pause's own): the person never gets the page under its blur.
#[tokio::test]
async fn a_person_never_gets_the_page_under_a_frames_blur() {
    let h = h();
    shop(&h);
    h.page
        .frame_takes(&[Duration::from_millis(300), Duration::from_millis(5)]);
    h.page
        .set_signals(Some(captcha("https://shop.example/cart")));
    let (id, join) = start_paused(&h, 60).await;
    let paused = wait_for_state(&h, &id, TaskState::Paused).await;
    assert_eq!(paused.pause.unwrap().reason, PauseReason::Challenge);
    assert!(!h.page.blurred(), "the page is paused under a frame's blur");
    assert_eq!(
        frame_points(&h, &id).await,
        [FramePoint::Navigation, FramePoint::Pause]
    );
    h.runner.take_over(T, &id, "person").await.unwrap();
    h.page.set_signals(None);
    h.runner.resume(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert!(
        h.page
            .under_blur()
            .iter()
            .all(|seen| seen == "read" || seen == "assert"),
        "only reads reached the page under a frame's blur: {:?}",
        h.page.under_blur()
    );
}

fn frame() -> StoredFrame {
    StoredFrame {
        info: FrameInfo {
            seq: 0,
            point: FramePoint::Click,
            url: "https://shop.example/".into(),
            domain: "shop.example".into(),
            action: "click".into(),
            bytes: 0,
            taken_at: time::OffsetDateTime::UNIX_EPOCH,
            same_as: None,
        },
        jpeg: vec![0xFF, 0xD8, 1, 2, 3],
    }
}

#[tokio::test]
async fn the_sixty_first_frame_is_not_stored() {
    let store = InMemoryFrameStore::default();
    let on = RunScreenshots {
        screenshots: ScreenshotsMode::On,
        reason: None,
    };
    store.begin_run(T, "run", &on).await.unwrap();
    for seq in 1..=60 {
        assert_eq!(store.put_frame(T, "run", frame()).await.unwrap(), seq);
    }
    assert!(matches!(
        store.put_frame(T, "run", frame()).await,
        Err(FrameRefused::TooMany(60))
    ));
    assert_eq!(store.frames(T, "run").await.unwrap().len(), 60);
    let off = RunScreenshots {
        screenshots: ScreenshotsMode::Off,
        reason: Some("tenant_setting".into()),
    };
    // The first recorded setting stands.
    assert_eq!(store.begin_run(T, "run", &off).await.unwrap(), on);
    assert!(matches!(
        store.put_frame(T, "never-begun", frame()).await,
        Err(FrameRefused::UnknownRun)
    ));
}

// ---- posts ----------------------------------------------------------------------------------

mod posts {
    use super::*;
    use crate::poster::AgentPoster;
    use crate::posts::{PostJournal, PostReply};
    use abr_core::guard::FrameSource;
    use abr_core::store::InMemoryPostStore;
    use abr_core::testing::{Script, ScriptedStrategy, StrategyScript};
    use abr_core::{StrategyRegistry, SystemClock, VerifyOutcome};
    use abr_protocol::{PlatformPolicy, PostContent, PostRequest, SecretValue};

    const PLATFORM: &str = "social";

    fn journal(policy: PlatformPolicy, script: StrategyScript) -> (H2, PostJournal<FakeContext>) {
        let provider = Arc::new(FakeProvider::new());
        let strategy = Arc::new(ScriptedStrategy::new(PLATFORM, &policy).with_script(script));
        let mut registry = StrategyRegistry::new();
        registry.register(strategy.clone()).unwrap();
        let frames = Arc::new(InMemoryFrameStore::default());
        let poster = AgentPoster::new(provider.clone(), Arc::new(registry)).with_frames(Arc::new(
            FrameSource::new(frames.clone(), Arc::new(SystemClock)),
        ));
        let journal = PostJournal::new(
            Arc::new(poster),
            Arc::new(InMemoryPostStore::new()),
            SecretValue::new("body-hash-key"),
        );
        (
            H2 {
                provider,
                strategy,
                frames,
            },
            journal,
        )
    }

    struct H2 {
        provider: Arc<FakeProvider>,
        strategy: Arc<ScriptedStrategy>,
        frames: Arc<InMemoryFrameStore>,
    }

    fn request() -> PostRequest {
        PostRequest {
            platform: PLATFORM.into(),
            session: AgentSessionState::default(),
            session_id: None,
            content: PostContent::text("hello"),
            workspace_id: Some(T.into()),
            account_id: Some("acct".into()),
            scope: None,
        }
    }

    #[tokio::test]
    async fn a_read_only_platform_refuses_a_post_before_any_browser_starts() {
        let policy = PlatformPolicy {
            read_only: Some(true),
            ..PlatformPolicy::default()
        };
        let (h, journal) = journal(policy, StrategyScript::default());
        let refused = journal.post(T, Some("k1"), request()).await.unwrap_err();
        assert!(matches!(refused, EngineError::Blocked(_)), "{refused:?}");
        assert_eq!(refused.code(), "blocked_action");
        assert_eq!(h.provider.acquired(), 0);
        assert_eq!(h.strategy.submits(), 0);
    }

    #[tokio::test]
    async fn an_uncertain_post_has_frames_before_its_submit_and_after_its_verification() {
        let script = StrategyScript {
            verify: Script::Return(VerifyOutcome::Unconfirmed {
                detail: "no toast".into(),
            }),
            ..StrategyScript::default()
        };
        let (h, journal) = journal(PlatformPolicy::default(), script);
        let posted = journal.post(T, Some("k2"), request()).await.unwrap();
        let PostReply::Result(result) = posted.reply else {
            panic!("no result");
        };
        assert!(result.uncertain);
        let post_id = result.post_id.clone().unwrap();
        let points: Vec<_> = h
            .frames
            .frames(T, &post_id)
            .await
            .unwrap()
            .iter()
            .map(|f| f.point)
            .collect();
        assert_eq!(
            points,
            [FramePoint::BeforeSubmit, FramePoint::AfterVerification]
        );
        assert!(h.frames.frames("other", &post_id).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_platform_with_screenshots_off_takes_no_frame_of_a_post() {
        let policy = PlatformPolicy {
            screenshots: Some(false),
            ..PlatformPolicy::default()
        };
        let (h, journal) = journal(policy, StrategyScript::default());
        let posted = journal.post(T, Some("k3"), request()).await.unwrap();
        let PostReply::Result(result) = posted.reply else {
            panic!("no result");
        };
        assert!(result.ok);
        let post_id = result.post_id.unwrap();
        let setting = h.frames.run_setting(T, &post_id).await.unwrap().unwrap();
        assert_eq!(setting.screenshots, ScreenshotsMode::Off);
        assert_eq!(setting.reason.as_deref(), Some("platform_setting"));
        assert_eq!(h.frames.frame_count(), 0);
        assert_eq!(
            h.provider.page().frames_taken(),
            0,
            "the browser was never asked"
        );
    }

    #[tokio::test]
    async fn a_platforms_redaction_reaches_every_frame_of_its_posts() {
        let redaction = abr_protocol::RedactionSpec {
            patterns: vec![r"ACCT-\d{6}".into()],
            selectors: vec![".balance".into()],
        };
        let policy = PlatformPolicy {
            redaction: Some(redaction.clone()),
            ..PlatformPolicy::default()
        };
        let (h, journal) = journal(policy, StrategyScript::default());
        let posted = journal.post(T, Some("k4"), request()).await.unwrap();
        let PostReply::Result(result) = posted.reply else {
            panic!("no result");
        };
        assert!(result.ok);
        assert!(h.provider.page().frames_taken() > 0);
        assert_eq!(
            h.provider
                .page()
                .frame_redaction()
                .and_then(|r| r.to_spec()),
            Some(redaction),
            "the frames were asked for with the platform's additions"
        );
    }
}

#[tokio::test]
async fn a_read_only_run_goes_on_after_a_refusal_and_ends_blocked() {
    let h = h();
    shop(&h);
    let p = plan(json!({
        "targetUrl": "https://shop.example/cart",
        "readOnly": true,
        "steps": [
            {"type": "click", "selector": "#pay", "description": "Pay", "timeoutMs": 200},
            {"type": "click", "selector": "#next", "description": "Next page", "timeoutMs": 200},
            {"type": "extract", "name": "page", "kind": "text", "selector": "#total", "description": "Read"}
        ],
        "verification": {"method": "dom_check", "text": "Paid"}
    }));
    let record = run(&h, request(p)).await;
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.failed_step, Some(0));
    assert_eq!(record.error.unwrap().code, "blocked_action");
    assert_eq!(record.step_results.len(), 3, "every step was tried");
    assert!(!record.step_results[0].ok && record.step_results[1].ok);
    assert_eq!(h.page.clicks_on("#pay"), 0);
    assert_eq!(h.page.clicks_on("#next"), 1);
    assert!(record.extracted.contains_key("page"));
}

#[tokio::test]
async fn a_run_paused_when_the_runner_stopped_is_ended_at_the_next_start() {
    let h = h();
    shop(&h);
    h.page
        .set_signals(Some(captcha("https://shop.example/cart")));
    let (id, join) = start_paused(&h, 60).await;
    wait_for_state(&h, &id, TaskState::Paused).await;
    // The runner dies with the run paused (its future is dropped, as by a kill).
    join.abort();
    let _ = join.await;
    let ended = h.runner.recover_unfinished().await.unwrap();
    assert_eq!(ended.len(), 1);
    let record = h.runner.get(T, &id).await.unwrap();
    assert_eq!(
        record.state,
        TaskState::Failed,
        "nothing committing had run"
    );
    let error = record.error.unwrap();
    assert_eq!(error.code, "runner_stopped");
    assert!(error.retryable);
}

/// Issue 34, finding 10: a committing step paused `stuck` (its control not found); a person
/// takes over and presses it in the live view; the control is there after the resume. The
/// run does not press it again: it ends uncertain, `person_may_have_acted` (the owner's
/// assertion allows the one new attempt). A person who only looked leaves it to the run,
/// which runs it. On main the step ran again after the resume: sent twice.
#[tokio::test]
async fn a_committing_step_is_never_run_again_after_the_person_acted_in_its_pause() {
    let press = abr_core::live::LiveInput::Pointer {
        action: abr_core::live::PointerAction::Down,
        x: 40.0,
        y: 40.0,
        button: abr_core::live::PointerButton::Left,
        click_count: 1,
        modifiers: abr_core::live::Modifiers::default(),
    };
    for person_presses in [true, false] {
        let h = h();
        shop(&h);
        h.page.remove("#pay");
        let (id, join) = start_paused(&h, 60).await;
        let paused = wait_for_state(&h, &id, TaskState::Paused).await;
        assert_eq!(paused.pause.unwrap().reason, PauseReason::Stuck);
        let active = h.runner.take_over(T, &id, "person").await.unwrap();
        let attachment = h.runner.handoffs().attach_live(&active.live_token).unwrap();
        if person_presses {
            attachment.input(press.clone()).await.unwrap();
        }
        h.page.restore("#pay");
        h.runner.resume(T, &id, "person").await.unwrap();
        let record = join.await.unwrap();
        if person_presses {
            assert_eq!(record.state, TaskState::Uncertain, "{:?}", record.error);
            assert_eq!(record.error.unwrap().code, "person_may_have_acted");
            assert_eq!(
                h.page.clicks_on("#pay"),
                0,
                "the run pressed Pay after the person may have"
            );
        } else {
            assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
            assert_eq!(h.page.clicks_on("#pay"), 1);
        }
    }
}

/// A committing step whose control vanished before anything was sent is tried again like
/// any step (and would pause `stuck`); one that may have acted is never tried again.
#[tokio::test]
async fn a_committing_step_is_tried_again_only_when_nothing_was_sent() {
    let h = h();
    shop(&h);
    h.page.fault_on(
        "#pay",
        abr_core::testing::FakeFault::Fail(abr_core::step_runner::StepFailureKind::NotFound),
    );
    let (_, join) = start_paused(&h, 60).await;
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    // The first attempt found no control (nothing sent); the second paid.
    assert_eq!(h.page.clicks_on("#pay"), 2);

    let h = self::h();
    shop(&h);
    h.page.fault_on(
        "#pay",
        abr_core::testing::FakeFault::Fail(abr_core::step_runner::StepFailureKind::Rejected),
    );
    let (_, join) = start_paused(&h, 60).await;
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Uncertain, "{:?}", record.error);
    assert_eq!(
        h.page.clicks_on("#pay"),
        1,
        "a step that may have acted was tried again"
    );
}
