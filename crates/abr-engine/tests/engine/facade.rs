//! The engine as an embedder uses it, on the core's fakes: no browser, no HTTP, no
//! abr-service. A task goes from create through approval to its end by the engine alone
//! (a slot, the run, the completion sink), and a post goes through the one ledger: a replay
//! of the same idempotency key answers the original and posts nothing.

use crate::{agent, approver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abr_core::DynSessionProvider;
use abr_core::clock::Clock as _;
use abr_core::store::InMemoryStore;
use abr_core::testing::{FakeContext, FakeProvider, ManualClock, ScriptedStrategy};
use abr_engine::{Engine, EngineBuilder, EngineConfig, PostReply, TaskCompletion, TaskEnd};
use abr_protocol::{
    AgentSessionState, ApproveRequest, Cookie, PlatformPolicy, PostContent, PostRequest,
    SecretValue, StepPlan, TaskRequest, TaskState,
};
use serde_json::json;
use std::collections::BTreeMap;

const T: &str = "tenant-embed";

/// The ends the engine reported, in order.
#[derive(Debug, Default)]
struct Ends(Mutex<Vec<TaskEnd>>);

impl TaskCompletion for Ends {
    fn completed(&self, end: TaskEnd) {
        self.0.lock().unwrap().push(end);
    }
}

impl Ends {
    /// Waits (at most 10 s) for the first end.
    async fn first(&self) -> TaskEnd {
        for _ in 0..1000 {
            if let Some(end) = self.0.lock().unwrap().first().cloned() {
                return end;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the engine never reported the task's end");
    }
}

struct Embedder {
    provider: Arc<FakeProvider>,
    strategy: Arc<ScriptedStrategy>,
    ends: Arc<Ends>,
    engine: Engine<FakeContext>,
}

fn embedder() -> Embedder {
    let provider = Arc::new(FakeProvider::new());
    let strategy = Arc::new(ScriptedStrategy::new("fake", &PlatformPolicy::default()));
    let ends = Arc::new(Ends::default());
    let jobs: DynSessionProvider<FakeContext> = provider.clone();
    let engine = EngineBuilder::new(
        EngineConfig::default(),
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .strategy(strategy.clone())
    .unwrap()
    .body_hash_key(SecretValue::new("embedder-secret"))
    .completion(ends.clone())
    .build()
    .unwrap();
    Embedder {
        provider,
        strategy,
        ends,
        engine,
    }
}

fn task() -> TaskRequest {
    let plan: StepPlan = serde_json::from_value(json!({
        "targetUrl": "https://tool.example/admin/users",
        "steps": [
            {"type": "type", "selector": "#email", "value": "{{email}}", "description": "Enter the email", "stage": "filling_form"},
            {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit the form", "stage": "submitting"}
        ],
        "verification": {"method": "dom_check", "text": "Saved"},
        "risk": "medium"
    }))
    .unwrap();
    TaskRequest {
        profile: None,
        plan,
        inputs: BTreeMap::from([("email".to_owned(), SecretValue::new("a@example.com"))]),
        secret_inputs: Vec::new(),
        session: None,
        session_id: None,
        scope: None,
        platform: None,
        tenant_id: None,
        proposal_id: None,
        dry_run: false,
        handoff: None,
    }
}

fn post(text: &str) -> PostRequest {
    PostRequest {
        platform: "fake".into(),
        session: AgentSessionState {
            cookies: vec![Cookie::new("sid", "v", ".example.com")],
            ..AgentSessionState::default()
        },
        session_id: None,
        content: PostContent::text(text),
        workspace_id: None,
        account_id: None,
        scope: None,
    }
}

#[tokio::test]
async fn an_approved_task_runs_to_its_end_by_the_engine_alone() {
    let e = embedder();
    e.provider
        .page()
        .text_after("role=button[name=Submit]", "Saved");

    let created = e
        .engine
        .create_task(&agent(T), task(), Some("task-1"))
        .await
        .unwrap();
    assert!(!created.replayed);
    assert_eq!(created.record.state, TaskState::PendingApproval);
    // The same key and body: the same task, nothing new.
    let again = e
        .engine
        .create_task(&agent(T), task(), Some("task-1"))
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.record.task_id, created.record.task_id);
    // Another body under the key is refused.
    let mut other = task();
    other.dry_run = true;
    let reused = e
        .engine
        .create_task(&agent(T), other, Some("task-1"))
        .await
        .unwrap_err();
    assert_eq!(reused.code(), "idempotency_key_reused");
    // Nothing runs before a person approves.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(e.provider.acquired(), 0);
    assert!(e.ends.0.lock().unwrap().is_empty());

    let id = created.record.task_id.clone();
    let approved = e
        .engine
        .approve_task(
            &approver(T),
            &id,
            &ApproveRequest {
                approved_by: Some("alice".into()),
                plan_hash: created.record.plan_hash.clone(),
            },
        )
        .await
        .unwrap();
    assert_eq!(approved.state, TaskState::Queued);

    // The engine runs it and tells its end.
    let end = e.ends.first().await;
    assert_eq!(end.record.task_id, id);
    assert_eq!(end.record.state, TaskState::Succeeded, "{:?}", end.record);
    assert_eq!(e.provider.acquired(), 1);
    let stored = e.engine.task(&agent(T), &id).await.unwrap();
    assert_eq!(stored, end.record, "the record says what the sink was told");
    assert_eq!(e.engine.load().jobs_queued, 0);
    // Approving again does not run it again.
    let twice = e
        .engine
        .approve_task(
            &approver(T),
            &id,
            &ApproveRequest {
                approved_by: Some("alice".into()),
                plan_hash: created.record.plan_hash.clone(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(twice.code(), "task_not_pending");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(e.provider.acquired(), 1);
    assert_eq!(e.ends.0.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_post_goes_through_the_ledger_once_per_key() {
    let e = embedder();
    let first = e
        .engine
        .post(&agent(T), Some("post-1"), post("hello"))
        .await
        .unwrap();
    assert!(!first.replayed);
    let PostReply::Result(result) = &first.reply else {
        panic!("a record, not a result: {:?}", first.reply);
    };
    assert!(result.ok, "{result:?}");
    let post_id = result.post_id.clone().unwrap();

    let replay = e
        .engine
        .post(&agent(T), Some("post-1"), post("hello"))
        .await
        .unwrap();
    assert!(replay.replayed);
    let PostReply::Result(replayed) = &replay.reply else {
        panic!("a record, not a result: {:?}", replay.reply);
    };
    assert_eq!(replayed.post_id.as_deref(), Some(post_id.as_str()));
    assert!(replayed.ok);
    assert!(
        replayed.refreshed_session.is_none(),
        "a replay carries no credential"
    );
    assert_eq!(e.strategy.submits(), 1, "posted once");

    let reused = e
        .engine
        .post(&agent(T), Some("post-1"), post("another body"))
        .await
        .unwrap_err();
    assert_eq!(reused.code(), "idempotency_key_reused");
    assert_eq!(e.strategy.submits(), 1);
    assert_eq!(
        e.engine
            .post_record(&agent(T), &post_id)
            .await
            .unwrap()
            .state,
        abr_protocol::PostState::Succeeded
    );
    // Another tenant's id is unknown.
    assert_eq!(
        e.engine
            .post_record(&agent("someone-else"), &post_id)
            .await
            .unwrap_err()
            .code(),
        "post_not_found"
    );
}

#[tokio::test]
async fn the_engine_checks_who_acts_whoever_calls_it() {
    let e = embedder();
    // An approver proposes nothing and posts nothing; an agent approves nothing.
    let refused = e
        .engine
        .create_task(&approver(T), task(), None)
        .await
        .unwrap_err();
    assert_eq!(
        (refused.code(), refused.error_code().status),
        ("forbidden", 403)
    );
    let refused = e
        .engine
        .post(&approver(T), None, post("hello"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "forbidden");
    let created = e.engine.create_task(&agent(T), task(), None).await.unwrap();
    let approval = ApproveRequest {
        approved_by: None,
        plan_hash: created.record.plan_hash.clone(),
    };
    let refused = e
        .engine
        .approve_task(&agent(T), &created.record.task_id, &approval)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "forbidden");
    // A person's pause is not the agent's to resolve, nor another tenant's task.
    let refused = e
        .engine
        .take_over(&agent(T), &created.record.task_id)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "forbidden");
    let unknown = e
        .engine
        .approve_task(
            &approver("another-tenant"),
            &created.record.task_id,
            &approval,
        )
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), "task_not_found");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(e.provider.acquired(), 0, "nothing ran");
    assert_eq!(e.strategy.submits(), 0, "nothing was posted");
}

/// The attack: a session kept for a read-only platform, replayed by a task that leaves out
/// `platform` and brings its own scope, to run it writable. The platform's policy travels
/// with the session: the run is read-only and its committing click never reaches the page.
#[tokio::test]
async fn a_stored_sessions_platform_policy_travels_with_it_to_tasks_and_posts() {
    let provider = Arc::new(FakeProvider::new());
    let observer = PlatformPolicy {
        read_only: Some(true),
        session: Some(abr_protocol::SessionScopeSpec {
            cookie_domains: vec!["tool.example".into()],
            origins: vec![],
        }),
        ..PlatformPolicy::default()
    };
    let ends = Arc::new(Ends::default());
    let fake = Arc::new(ScriptedStrategy::new("fake", &PlatformPolicy::default()));
    let jobs: DynSessionProvider<FakeContext> = provider.clone();
    let engine = EngineBuilder::new(
        EngineConfig::default(),
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .strategy(Arc::new(ScriptedStrategy::new("observer", &observer)))
    .unwrap()
    .strategy(fake.clone())
    .unwrap()
    .completion(ends.clone())
    .build()
    .unwrap();
    engine
        .store_session(
            &agent(T),
            "s1",
            &abr_protocol::StoreSessionRequest {
                session: AgentSessionState {
                    cookies: vec![Cookie::new("sid", "v", "tool.example")],
                    ..AgentSessionState::default()
                },
                platform: Some("observer".into()),
                scope: None,
            },
        )
        .await
        .unwrap();
    let mut request = task();
    request.session_id = Some("s1".into());
    request.scope = Some(abr_protocol::SessionScopeSpec {
        cookie_domains: vec!["tool.example".into()],
        origins: vec![],
    });
    let created = engine.create_task(&agent(T), request, None).await.unwrap();
    let approval = ApproveRequest {
        approved_by: None,
        plan_hash: created.record.plan_hash.clone(),
    };
    engine
        .approve_task(&approver(T), &created.record.task_id, &approval)
        .await
        .unwrap();
    let end = ends.first().await;
    assert_eq!(
        provider.page().clicks_on("role=button[name=Submit]"),
        0,
        "the committing click reached the page: {:?}",
        end.record
    );
    assert!(end.record.read_only, "{:?}", end.record);
    assert!(!end.record.blocked.is_empty(), "{:?}", end.record);

    // Nor does a post on a permissive platform with that session commit anything.
    let mut attack = post("through another platform");
    attack.session = AgentSessionState::default();
    attack.session_id = Some("s1".into());
    let refused = engine.post(&agent(T), None, attack).await.unwrap_err();
    assert_eq!(refused.code(), "blocked_action", "{refused}");
    assert_eq!(fake.submits(), 0, "nothing was posted");
}

/// An engine with a read-only platform `observer` (scope `tool.example`), a platform that
/// forbids unattended runs `attended`, and a permissive one `fake`, on one fake provider.
fn laundering_engine() -> (Engine<FakeContext>, Arc<ScriptedStrategy>) {
    let provider = Arc::new(FakeProvider::new());
    let scope = abr_protocol::SessionScopeSpec {
        cookie_domains: vec!["tool.example".into()],
        origins: vec![],
    };
    let observer = PlatformPolicy {
        read_only: Some(true),
        session: Some(scope.clone()),
        ..PlatformPolicy::default()
    };
    let attended = PlatformPolicy {
        allow_unattended: Some(false),
        session: Some(scope),
        ..PlatformPolicy::default()
    };
    let fake = Arc::new(ScriptedStrategy::new("fake", &PlatformPolicy::default()));
    let jobs: DynSessionProvider<FakeContext> = provider;
    let engine = EngineBuilder::new(
        EngineConfig::default(),
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .strategy(Arc::new(ScriptedStrategy::new("observer", &observer)))
    .unwrap()
    .strategy(Arc::new(ScriptedStrategy::new("attended", &attended)))
    .unwrap()
    .strategy(fake.clone())
    .unwrap()
    .build()
    .unwrap();
    (engine, fake)
}

fn keep(session: AgentSessionState, platform: Option<&str>) -> abr_protocol::StoreSessionRequest {
    abr_protocol::StoreSessionRequest {
        session,
        platform: platform.map(str::to_owned),
        scope: platform.is_none().then(|| abr_protocol::SessionScopeSpec {
            cookie_domains: vec!["tool.example".into()],
            origins: vec![],
        }),
    }
}

/// The attack: an agent's key reads a read-only platform's stored session out
/// (`GET /v1/sessions/{id}`) and keeps the cookies again with a scope only, under a new id
/// or over the bound id, then posts with it on a permissive platform. The session's
/// platform must survive every way back in: the agent cannot read the cookies out (only an
/// operator exports them), a restore over the bound id stays bound, and a session read out
/// by an operator carries its platform into any id it is kept under.
#[tokio::test]
async fn a_read_only_platforms_session_cannot_be_laundered_writable() {
    let (engine, fake) = laundering_engine();
    let cookies = AgentSessionState {
        cookies: vec![Cookie::new("sid", "v", "tool.example")],
        ..AgentSessionState::default()
    };
    for platform in ["observer", "attended"] {
        let agent = agent(T);
        engine
            .store_session(&agent, "bound", &keep(cookies.clone(), Some(platform)))
            .await
            .unwrap();
        // The agent reads the cookies out: refused, they are the platform's.
        let read = engine.restore_session(&agent, "bound").await;
        assert_eq!(
            read.as_ref().map(|_| ()).map_err(|e| e.code()),
            Err("forbidden"),
            "{platform}: an agent read a bound session's cookies out"
        );
        // An operator may: the session it reads out names its platform.
        let exported = engine
            .restore_session(&abr_core::principal::Actor::operator(T).unwrap(), "bound")
            .await
            .unwrap()
            .session;
        assert_eq!(
            exported
                .metadata
                .as_ref()
                .and_then(|m| m.platform.as_deref()),
            Some(platform)
        );
        // Kept again with a scope only, over the bound id and under a new one.
        for id in ["bound", "fresh"] {
            engine
                .store_session(&agent, id, &keep(exported.clone(), None))
                .await
                .unwrap();
            // Another platform named instead: refused, the session is the platform's.
            let renamed = engine
                .store_session(&agent, id, &keep(exported.clone(), Some("fake")))
                .await
                .unwrap_err();
            assert_eq!(
                (renamed.code(), renamed.error_code().status),
                ("session_bound", 409),
                "{platform} {id}: {renamed}"
            );
            let mut attack = post(&format!("laundered through {id}"));
            attack.session = AgentSessionState::default();
            attack.session_id = Some(id.into());
            let refused = engine.post(&agent, None, attack).await;
            assert!(
                refused.is_err(),
                "{platform} {id}: the laundered session posted: {refused:?}"
            );
            assert_eq!(fake.submits(), 0, "{platform} {id}: something was posted");
        }
        // Even the agent's own cookies, kept over the bound id, stay bound.
        engine
            .store_session(&agent, "bound", &keep(cookies.clone(), None))
            .await
            .unwrap();
        assert!(
            engine.restore_session(&agent, "bound").await.is_err(),
            "{platform}: a restore over the bound id dropped its platform"
        );
        // Nor does a capture of the permissive platform, stored over the bound id, unbind
        // it: the capture answers its session, not kept.
        let capture = engine
            .capture_start(
                &agent,
                serde_json::from_value(json!({
                    "workspaceId": T, "accountId": "ada", "platform": "fake"
                }))
                .unwrap(),
            )
            .await
            .unwrap();
        fake.edit(|script| script.precheck = abr_core::testing::Script::Return(Some(true)));
        let finished = engine
            .capture_finish(
                &agent,
                &abr_protocol::CaptureRef {
                    capture_id: capture.capture_id,
                    workspace_id: T.into(),
                    account_id: "ada".into(),
                },
                Some("bound".into()),
            )
            .await
            .unwrap();
        fake.edit(|script| script.precheck = abr_core::testing::Script::Return(None));
        assert_eq!(
            finished.stored_as, None,
            "{platform}: kept over the bound id"
        );
        assert!(
            engine.restore_session(&agent, "bound").await.is_err(),
            "{platform}: a capture over the bound id dropped its platform"
        );
        for id in ["bound", "fresh"] {
            engine.delete_session(&agent, id).await.unwrap();
        }
    }
}

#[tokio::test]
async fn a_probe_and_a_capture_are_their_tenants_and_hold_one_of_its_sessions() {
    let provider = Arc::new(FakeProvider::new());
    let strategy = Arc::new(ScriptedStrategy::new("fake", &PlatformPolicy::default()));
    let jobs: DynSessionProvider<FakeContext> = provider.clone();
    let engine = EngineBuilder::new(
        EngineConfig {
            tenant_limits: abr_core::limits::TenantLimits {
                concurrent_sessions: 1,
                ..abr_core::limits::TenantLimits::default()
            },
            ..EngineConfig::default()
        },
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .strategy(strategy)
    .unwrap()
    .build()
    .unwrap();
    let probe = |workspace: Option<&str>| {
        serde_json::from_value::<abr_protocol::ProbeRequest>(json!({
            "platform": "fake",
            "session": {"cookies": [], "origins": []},
            "workspaceId": workspace,
        }))
        .unwrap()
    };
    let a = agent("tenant-a");
    let refused = engine.probe(&a, probe(Some("tenant-b"))).await.unwrap_err();
    assert_eq!(refused.code(), "tenant_forbidden");
    // Tenant A holds its one session (a browse session): its probe waits its turn.
    let browse: abr_protocol::BrowseRequest =
        serde_json::from_value(json!({"url": "https://fake.example/"})).unwrap();
    let opened = engine.browse_open(&a, browse).await.unwrap();
    let limited = engine.probe(&a, probe(None)).await.unwrap_err();
    assert_eq!(limited.code(), "tenant_concurrency_limit", "{limited:?}");
    // Another tenant's probe is not held back by A's.
    engine.probe(&agent("tenant-b"), probe(None)).await.unwrap();
    engine.browse_close(&a, &opened.browse_id).await.unwrap();
    engine.probe(&a, probe(None)).await.unwrap();
    // ... and gives its session back: a browse session opens again.
    let browse: abr_protocol::BrowseRequest =
        serde_json::from_value(json!({"url": "https://fake.example/"})).unwrap();
    let again = engine.browse_open(&a, browse).await.unwrap();
    engine.browse_close(&a, &again.browse_id).await.unwrap();

    // An open capture holds the tenant's session too, until it is cancelled.
    let a_user = agent("tenant-a");
    let started = engine
        .capture_start(
            &a_user,
            serde_json::from_value(json!({
                "workspaceId": "tenant-a", "accountId": "ada", "platform": "fake"
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let limited = engine.probe(&a, probe(None)).await.unwrap_err();
    assert_eq!(limited.code(), "tenant_concurrency_limit", "{limited:?}");
    engine
        .capture_cancel(
            &a_user,
            &abr_protocol::CaptureRef {
                capture_id: started.capture_id,
                workspace_id: "tenant-a".into(),
                account_id: "ada".into(),
            },
        )
        .await
        .unwrap();
    // Given back in the background, at once.
    let mut probed = engine.probe(&a, probe(None)).await;
    for _ in 0..100 {
        if probed.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        probed = engine.probe(&a, probe(None)).await;
    }
    probed.unwrap();
}

/// Evidence expires `retention` after the run ended, on the engine's clock: the record keeps
/// its outcome and its steps, loses the extracted data and screenshots, and says when.
#[tokio::test]
async fn an_expired_task_keeps_its_outcome_without_evidence() {
    let provider = Arc::new(FakeProvider::new());
    let page = provider.page();
    page.set_text("42 users");
    page.extract_result("#total", json!("42 users"));
    let ends = Arc::new(Ends::default());
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let jobs: DynSessionProvider<FakeContext> = provider.clone();
    let engine = EngineBuilder::new(
        EngineConfig {
            approval: abr_core::approval::ApprovalRule::Off,
            retention: Some(Duration::from_secs(30 * 24 * 3600)),
            ..EngineConfig::default()
        },
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .completion(ends.clone())
    .clock(clock.clone())
    .build()
    .unwrap();
    let mut request = task();
    request.plan = serde_json::from_value(json!({
        "targetUrl": "https://tool.example/admin/users",
        "steps": [
            {"type": "extract", "name": "total", "kind": "text", "selector": "#total", "description": "Read the total"},
            {"type": "screenshot", "description": "Capture the page"}
        ],
        "verification": {"method": "dom_check", "text": "users"},
        "risk": "low"
    }))
    .unwrap();
    let created = engine.create_task(&agent(T), request, None).await.unwrap();
    let id = created.record.task_id;
    let end = ends.first().await;
    assert_eq!(end.record.state, TaskState::Succeeded, "{:?}", end.record);
    assert_eq!(end.record.extracted.get("total"), Some(&json!("42 users")));
    assert_eq!(end.record.screenshots.len(), 1);
    let shot = end.record.screenshots[0].clone();
    assert!(
        engine
            .task_screenshot(&agent(T), &id, &shot)
            .await
            .unwrap()
            .is_some()
    );

    // The run's events are in the log, from its start.
    let mut from_start = engine.subscribe_events(&agent(T), Some(0)).await.unwrap();
    let mut logged = 0;
    loop {
        let event = next_event(&mut from_start).await;
        logged += 1;
        if event.event == "run_ended" {
            break;
        }
    }
    // Within retention nothing goes.
    clock.advance(Duration::from_secs(29 * 24 * 3600));
    assert_eq!(engine.expire_evidence().await.unwrap().records, 0);
    assert_eq!(
        engine.task(&agent(T), &id).await.unwrap().extracted.len(),
        1
    );
    // After it, the evidence goes and the outcome stays.
    clock.advance(Duration::from_secs(2 * 24 * 3600));
    assert_eq!(engine.expire_evidence().await.unwrap().records, 1);
    let kept = engine.task(&agent(T), &id).await.unwrap();
    assert_eq!(kept.state, TaskState::Succeeded);
    assert_eq!(kept.step_results.len(), 2);
    assert!(kept.extracted.is_empty(), "{:?}", kept.extracted);
    assert!(kept.screenshots.is_empty());
    assert_eq!(kept.evidence_expired_at, Some(clock.now()));
    // Its events are gone from the log too: a stream resumed from the start is told so.
    let mut from_start = engine.subscribe_events(&agent(T), Some(0)).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(5), from_start.next()).await {
        Ok(abr_engine::Received::Missed(n)) => assert_eq!(n, logged),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        engine.task_screenshot(&agent(T), &id, &shot).await.unwrap(),
        None,
        "an expired screenshot is still served"
    );
}

/// The next event of `events`, within 5 s.
async fn next_event(events: &mut abr_engine::TenantEvents) -> abr_protocol::RunEvent {
    match tokio::time::timeout(Duration::from_secs(5), events.next()).await {
        Ok(abr_engine::Received::Event(e)) => (*e).clone(),
        other => panic!("no event: {other:?}"),
    }
}

/// A tenant's stream tells what waits for a person, each step and the end, and nothing of
/// another tenant's runs.
#[tokio::test]
async fn a_tenants_events_tell_the_approval_each_step_and_the_end() {
    let e = embedder();
    e.provider
        .page()
        .text_after("role=button[name=Submit]", "Saved");
    let mut mine = e.engine.subscribe_events(&agent(T), None).await.unwrap();
    let mut theirs = e
        .engine
        .subscribe_events(&agent("tenant-other"), None)
        .await
        .unwrap();
    let created = e.engine.create_task(&agent(T), task(), None).await.unwrap();
    let id = created.record.task_id.clone();
    let first = next_event(&mut mine).await;
    assert_eq!(
        (
            first.event.as_str(),
            first.run_id.as_str(),
            first.tenant_id.as_str()
        ),
        ("approval_required", id.as_str(), T)
    );
    e.engine
        .approve_task(
            &approver(T),
            &id,
            &ApproveRequest {
                approved_by: None,
                plan_hash: created.record.plan_hash.clone(),
            },
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    loop {
        let event = next_event(&mut mine).await;
        assert_eq!(event.run_id, id);
        seen.push((
            event.event.clone(),
            event.step,
            event.steps,
            event.stage.clone(),
            event.state.clone(),
        ));
        if event.event == "run_ended" {
            break;
        }
    }
    assert_eq!(
        seen,
        [
            (
                "step_progress".to_owned(),
                Some(0),
                Some(2),
                Some("filling_form".to_owned()),
                None
            ),
            (
                "step_progress".to_owned(),
                Some(1),
                Some(2),
                Some("submitting".to_owned()),
                None
            ),
            (
                "run_ended".to_owned(),
                None,
                None,
                None,
                Some("succeeded".to_owned())
            ),
        ]
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(200), theirs.next())
            .await
            .is_err(),
        "another tenant saw this tenant's events"
    );
}

/// Posts join the tenant's event stream: each ends with `run_ended` (`kind: post`, its
/// state), and an uncertain one names the read-only re-check to make, as an uncertain
/// task does; a task's steps say how long the run has been going.
#[tokio::test]
async fn posts_end_on_the_stream_and_an_uncertain_end_names_its_check() {
    let e = embedder();
    let mut mine = e.engine.subscribe_events(&agent(T), None).await.unwrap();
    let done = e.engine.post(&agent(T), None, post("hello")).await.unwrap();
    let PostReply::Result(done) = &done.reply else {
        panic!("{:?}", done.reply);
    };
    let ended = next_event(&mut mine).await;
    assert_eq!(
        (
            ended.event.as_str(),
            ended.run_id.as_str(),
            ended.kind.as_deref(),
            ended.state.as_deref(),
            ended.check.as_deref()
        ),
        (
            "run_ended",
            done.post_id.as_deref().unwrap(),
            Some("post"),
            Some("succeeded"),
            None
        )
    );
    e.strategy.edit(|script| {
        script.verify = abr_core::testing::Script::Return(abr_core::VerifyOutcome::Unconfirmed {
            detail: "no toast".into(),
        });
    });
    let unsure = e.engine.post(&agent(T), None, post("again")).await.unwrap();
    let PostReply::Result(unsure) = &unsure.reply else {
        panic!("{:?}", unsure.reply);
    };
    let id = unsure.post_id.clone().unwrap();
    let ended = next_event(&mut mine).await;
    assert_eq!(
        (ended.state.as_deref(), ended.check.clone()),
        (Some("uncertain"), Some(format!("/v1/posts/{id}/recheck")))
    );
    // A task's steps carry the time since the run started.
    let created = e.engine.create_task(&agent(T), task(), None).await.unwrap();
    let _ = next_event(&mut mine).await; // approval_required
    e.engine
        .approve_task(
            &approver(T),
            &created.record.task_id,
            &ApproveRequest {
                approved_by: None,
                plan_hash: created.record.plan_hash.clone(),
            },
        )
        .await
        .unwrap();
    let step = next_event(&mut mine).await;
    assert_eq!(step.event, "step_progress");
    assert!(step.elapsed_ms.is_some(), "{step:?}");
}

/// A step that never finishes (a hung browser) makes its run stalled after the stall time,
/// reported once.
#[tokio::test]
async fn a_run_without_progress_is_reported_stalled_once() {
    let provider = Arc::new(FakeProvider::new());
    provider.page().fault_on(
        "role=button[name=Submit]",
        abr_core::testing::FakeFault::Hang,
    );
    let jobs: DynSessionProvider<FakeContext> = provider.clone();
    let engine = EngineBuilder::new(
        EngineConfig {
            approval: abr_core::approval::ApprovalRule::Off,
            stall_after: Duration::from_millis(300),
            ..EngineConfig::default()
        },
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .build()
    .unwrap();
    let mut events = engine.subscribe_events(&agent(T), None).await.unwrap();
    let created = engine.create_task(&agent(T), task(), None).await.unwrap();
    let step = next_event(&mut events).await;
    assert_eq!((step.event.as_str(), step.step), ("step_progress", Some(0)));
    let stalled = next_event(&mut events).await;
    assert_eq!(stalled.event, "run_stalled");
    assert_eq!(stalled.run_id, created.record.task_id);
    // Once per stall: nothing more while it stays stuck.
    assert!(
        tokio::time::timeout(Duration::from_secs(1), events.next())
            .await
            .is_err(),
        "a stall was reported twice"
    );
}

/// A decision the engine makes is audited by the engine: an embedder without abr-service
/// gets the same audit trail (issue 35: the HTTP handlers used to write these events).
#[tokio::test]
async fn the_tenants_settings_are_audited_where_they_are_decided() {
    let sink = Arc::new(abr_core::MemoryAuditSink::new());
    let provider = Arc::new(FakeProvider::new());
    let jobs: DynSessionProvider<FakeContext> = provider;
    let engine = EngineBuilder::new(
        EngineConfig::default(),
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .audit(sink.clone())
    .build()
    .unwrap();
    let actor = approver(T);
    let entry = abr_protocol::SiteEntry {
        domain: "docs.example.com".into(),
        decision: abr_protocol::SiteDecision::Allow,
        decided_by: "alice".into(),
        decided_at: time::OffsetDateTime::UNIX_EPOCH,
    };
    engine.decide_site(&actor, entry).await.unwrap();
    assert!(
        engine
            .remove_site(&actor, "docs.example.com")
            .await
            .unwrap()
    );
    assert!(
        !engine
            .remove_site(&actor, "docs.example.com")
            .await
            .unwrap()
    );
    engine
        .set_screenshots_enabled(&actor, false, "bob")
        .await
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..500 {
        seen = sink
            .events()
            .iter()
            .map(|e| (e.action, e.actor.clone(), e.domain.clone()))
            .collect::<Vec<_>>();
        if seen.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Delivered beside the calls: in any order.
    seen.sort_by_key(|(action, _, _)| format!("{action:?}"));
    assert_eq!(
        seen,
        [
            (
                abr_core::AuditAction::ScreenshotsChanged,
                Some("bob".to_owned()),
                None
            ),
            (
                abr_core::AuditAction::SiteDecided,
                Some("alice".to_owned()),
                Some("docs.example.com".to_owned())
            ),
            (
                abr_core::AuditAction::SiteRemoved,
                None,
                Some("docs.example.com".to_owned())
            ),
        ],
        "each decision audited once (a removal of nothing is not one)"
    );
    assert!(
        sink.events()
            .iter()
            .all(|e| e.workspace_id.as_deref() == Some(T))
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn a_stored_sessions_platform_keeps_screenshots_off_for_its_posts() {
    let provider = Arc::new(FakeProvider::new());
    let scope = abr_protocol::SessionScopeSpec {
        cookie_domains: vec!["example.com".into()],
        origins: vec![],
    };
    let quiet = PlatformPolicy {
        screenshots: Some(false),
        session: Some(scope.clone()),
        ..PlatformPolicy::default()
    };
    let open = PlatformPolicy {
        session: Some(scope),
        ..PlatformPolicy::default()
    };
    let jobs: DynSessionProvider<FakeContext> = provider.clone();
    let engine = EngineBuilder::new(
        EngineConfig::default(),
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .strategy(Arc::new(ScriptedStrategy::new("quiet", &quiet)))
    .unwrap()
    .strategy(Arc::new(ScriptedStrategy::new("fake", &open)))
    .unwrap()
    .build()
    .unwrap();
    engine
        .store_session(
            &agent(T),
            "s1",
            &abr_protocol::StoreSessionRequest {
                session: post("unused").session,
                platform: Some("quiet".into()),
                scope: None,
            },
        )
        .await
        .unwrap();
    let post_id_of = |posted: abr_engine::Posted| {
        let PostReply::Result(result) = posted.reply else {
            panic!("a post of this process answers its result: {posted:?}");
        };
        assert!(result.ok, "{result:?}");
        result.post_id.unwrap()
    };

    // A post on `fake` with its own session takes screenshots, as `fake` allows.
    let inline = engine.post(&agent(T), None, post("inline")).await.unwrap();
    let id = post_id_of(inline);
    let (setting, _) = engine.run_frames(&agent(T), &id).await.unwrap();
    assert_eq!(setting.screenshots, abr_protocol::ScreenshotsMode::On);

    // The session kept for `quiet` keeps them off, whatever platform the post names.
    let mut through = post("through fake");
    through.session = AgentSessionState::default();
    through.session_id = Some("s1".into());
    let stored = engine.post(&agent(T), None, through).await.unwrap();
    let id = post_id_of(stored);
    let (setting, frames) = engine.run_frames(&agent(T), &id).await.unwrap();
    assert_eq!(
        setting.screenshots,
        abr_protocol::ScreenshotsMode::Off,
        "{setting:?}"
    );
    assert!(frames.is_empty(), "{frames:?}");
}

/// The attack: an actor of one tenant names another in its request, so that the post, the
/// task or the browse session (their audit events, the platform's labels) would read as
/// the other tenant's. The door refuses the request before anything runs or is recorded.
#[tokio::test]
async fn a_request_naming_another_tenant_than_the_actors_is_refused_at_the_door() {
    let e = embedder();
    let mut foreign = post("in the victim's name");
    foreign.workspace_id = Some("victim".into());
    let refused = e.engine.post(&agent(T), None, foreign).await.unwrap_err();
    assert_eq!(refused.code(), "tenant_forbidden", "{refused}");

    let mut foreign = task();
    foreign.tenant_id = Some("victim".into());
    let refused = e
        .engine
        .create_task(&agent(T), foreign, None)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "tenant_forbidden", "{refused}");

    let browse = abr_protocol::BrowseRequest {
        profile: None,
        url: "https://app.example.com/".into(),
        platform: None,
        session_id: None,
        session: None,
        scope: None,
        read_only: true,
        dry_run: false,
        tenant_id: Some("victim".into()),
        idle_seconds: None,
        handoff: None,
    };
    let refused = e.engine.browse_open(&agent(T), browse).await.unwrap_err();
    assert_eq!(refused.code(), "tenant_forbidden", "{refused}");

    // Naming its own tenant is naming nothing new.
    let mut own = post("in its own name");
    own.workspace_id = Some(T.into());
    e.engine.post(&agent(T), None, own).await.unwrap();
    assert_eq!(e.strategy.submits(), 1, "only its own post ran");
    assert_eq!(e.provider.acquired(), 1, "nothing else held a browser");
    let listed = e
        .engine
        .list_tasks(&agent(T), &abr_protocol::ListParams::default())
        .await
        .unwrap();
    assert!(listed.items.is_empty(), "{listed:?}");
}

/// The builder's randomness is the one a post's pacing draws from, and the builder's clock
/// the one it sleeps on.
#[tokio::test]
async fn pacing_draws_from_the_builders_randomness_and_sleeps_on_its_clock() {
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::UNIX_EPOCH));
    let provider = Arc::new(FakeProvider::new());
    let jobs: DynSessionProvider<FakeContext> = provider.clone();
    let config = EngineConfig {
        pacing: Some(abr_core::Pacing {
            min: Duration::from_millis(500),
            max: Duration::from_millis(1_500),
        }),
        ..EngineConfig::default()
    };
    let engine = EngineBuilder::new(
        config,
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .strategy(Arc::new(ScriptedStrategy::new(
        "fake",
        &PlatformPolicy::default(),
    )))
    .unwrap()
    .clock(clock.clone())
    .random(Arc::new(abr_core::testing::FixedRandom(1_234)))
    .build()
    .unwrap();
    let posted = engine.post(&agent(T), None, post("paced")).await.unwrap();
    let PostReply::Result(result) = posted.reply else {
        panic!("a post of this process answers its result: {posted:?}");
    };
    // 500 + 1234 % 1001 = 733
    assert_eq!(clock.sleeps(), vec![Duration::from_millis(733)]);
    assert_eq!(result.timing.pacing_ms, 733);
}

/// An engine on a single-session backend (Steel's: [`abr_core::SerializedProvider`]) over
/// `fake`, with `config`, and its scripted platform `fake`.
fn single_session_engine(
    fake: Arc<FakeProvider>,
    config: EngineConfig,
) -> (Engine<FakeContext>, Arc<ScriptedStrategy>) {
    let serialized = abr_core::SerializedProvider::new(fake, Duration::from_secs(60));
    let provider: DynSessionProvider<FakeContext> = Arc::new(serialized);
    let strategy = Arc::new(ScriptedStrategy::new("fake", &PlatformPolicy::default()));
    let engine = EngineBuilder::new(
        config,
        Arc::clone(&provider),
        provider,
        Arc::new(InMemoryStore::new()),
    )
    .strategy(strategy.clone())
    .unwrap()
    .build()
    .unwrap();
    (engine, strategy)
}

/// A capture start of tenant `T` (account `ada`) on the platform `fake`.
fn capture_start_request() -> abr_protocol::CaptureStartRequest {
    serde_json::from_value(json!({"workspaceId": T, "accountId": "ada", "platform": "fake"}))
        .unwrap()
}

/// A single-session backend held by a capture, and every job slot taken: a second capture
/// is refused at once with `provider_busy` and its `Retry-After`, not after queueing for a
/// slot it could never use (a person at a live view waits for nothing).
#[tokio::test(start_paused = true)]
async fn a_capture_the_provider_refuses_is_refused_before_it_queues_for_a_job_slot() {
    let (engine, _) = single_session_engine(
        Arc::new(FakeProvider::new()),
        EngineConfig {
            max_concurrent_jobs: 1,
            max_queued_jobs: 4,
            ..EngineConfig::default()
        },
    );
    let a = agent(T);
    let start = capture_start_request;
    let first = engine.capture_start(&a, start()).await.unwrap();
    let slot = engine.hold_job_slot().await.unwrap();

    let started = tokio::time::Instant::now();
    let refused = engine.capture_start(&a, start()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::ZERO, "refused without waiting");
    assert_eq!(refused.code(), "provider_busy", "{refused:?}");
    assert!(refused.is_retryable());
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(15)));

    drop(slot);
    engine
        .capture_cancel(
            &a,
            &abr_protocol::CaptureRef {
                capture_id: first.capture_id,
                workspace_id: T.into(),
                account_id: "ada".into(),
            },
        )
        .await
        .unwrap();
}

/// A gate answering `open`, counting the sweeps that asked it.
struct CountingGate {
    open: bool,
    asked: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl abr_engine::SweepGate for CountingGate {
    async fn may_sweep(&self, name: &str, _every: Duration) -> bool {
        self.asked.lock().unwrap().push(name.to_owned());
        self.open
    }
}

/// The evidence sweep asks the engine's sweep gate before each run (a fleet runs it on one
/// replica): while the gate says no, nothing expires; once it says yes, the sweep runs.
#[tokio::test(start_paused = true)]
async fn the_retention_sweep_runs_only_where_the_gate_lets_it() {
    for open in [false, true] {
        let provider = Arc::new(FakeProvider::new());
        provider.page().set_text("42 users");
        let ends = Arc::new(Ends::default());
        let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
        let gate = Arc::new(CountingGate {
            open,
            asked: Mutex::new(Vec::new()),
        });
        let jobs: DynSessionProvider<FakeContext> = provider.clone();
        let engine = EngineBuilder::new(
            EngineConfig {
                approval: abr_core::approval::ApprovalRule::Off,
                retention: Some(Duration::from_secs(24 * 3600)),
                ..EngineConfig::default()
            },
            Arc::clone(&jobs),
            jobs,
            Arc::new(InMemoryStore::new()),
        )
        .completion(ends.clone())
        .clock(clock.clone())
        .sweep_gate(gate.clone())
        .build()
        .unwrap();
        let created = engine.create_task(&agent(T), task(), None).await.unwrap();
        let end = ends.first().await;
        assert!(end.record.state.is_final(), "{:?}", end.record);
        clock.advance(Duration::from_secs(2 * 24 * 3600));
        // Two hourly ticks of the sweep (paused time moves on by itself).
        tokio::time::sleep(Duration::from_secs(2 * 3600 + 60)).await;
        let asked = gate.asked.lock().unwrap().clone();
        assert!(asked.len() >= 2, "{asked:?}");
        assert!(asked.iter().all(|n| n == "sweep:retention"), "{asked:?}");
        let record = engine
            .task(&agent(T), &created.record.task_id)
            .await
            .unwrap();
        assert_eq!(
            record.evidence_expired_at.is_some(),
            open,
            "gate {open}: {record:?}"
        );
    }
}

/// A post while a capture holds a single-session backend is refused at once with
/// `provider_busy` and the capture's `Retry-After`, like a second capture: the HTTP layer
/// answers it with the header (seen on a real Steel server without one).
#[tokio::test(start_paused = true)]
async fn a_post_behind_a_capture_is_busy_with_its_retry_after() {
    let (engine, strategy) =
        single_session_engine(Arc::new(FakeProvider::new()), EngineConfig::default());
    let a = agent(T);
    let capture = engine
        .capture_start(&a, capture_start_request())
        .await
        .unwrap();
    let refused = engine.post(&a, Some("k"), post("hello")).await.unwrap_err();
    assert_eq!(refused.code(), "provider_busy", "{refused:?}");
    assert!(refused.is_retryable());
    assert_eq!(
        refused.retry_after(),
        Some(Duration::from_secs(15)),
        "{refused:?}"
    );
    assert_eq!(strategy.submits(), 0);
    // Nothing was recorded: once the capture is gone, the same key posts (no replay).
    engine
        .capture_cancel(
            &a,
            &abr_protocol::CaptureRef {
                capture_id: capture.capture_id,
                workspace_id: T.into(),
                account_id: "ada".into(),
            },
        )
        .await
        .unwrap();
    let posted = engine.post(&a, Some("k"), post("hello")).await.unwrap();
    assert!(!posted.replayed);
    assert_eq!(strategy.submits(), 1);
}

/// A capture whose browser was lost gives a single-session backend back at once: the
/// capture answers `browser_lost` (finish: `capture_browser_lost`), and a post runs without
/// anyone cancelling the capture first (it kept Steel's gate shut until a cancel).
#[tokio::test]
async fn a_lost_captures_browser_is_released_at_once() {
    let fake = Arc::new(FakeProvider::new());
    let (engine, _) = single_session_engine(Arc::clone(&fake), EngineConfig::default());
    let a = agent(T);
    let capture = engine
        .capture_start(&a, capture_start_request())
        .await
        .unwrap();
    let bound = abr_protocol::CaptureRef {
        capture_id: capture.capture_id.clone(),
        workspace_id: T.into(),
        account_id: "ada".into(),
    };
    // Its browser goes away (closed, crashed, replaced).
    fake.context(1)
        .unwrap()
        .lost
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let status = engine.capture_status(&a, &bound).await.unwrap();
    assert_eq!(status.state, abr_protocol::CaptureState::BrowserLost);
    assert_eq!(fake.open_leases(), 0, "released without a cancel");
    // The backend takes the next job at once.
    let posted = engine.post(&a, None, post("hello")).await.unwrap();
    let PostReply::Result(result) = &posted.reply else {
        panic!("{:?}", posted.reply);
    };
    assert!(result.ok, "{result:?}");
    // The capture still says what became of it, and is cancelled when asked.
    let finish = engine.capture_finish(&a, &bound, None).await.unwrap_err();
    assert_eq!(finish.code(), "capture_browser_lost", "{finish:?}");
    let cancelled = engine.capture_cancel(&a, &bound).await.unwrap();
    assert!(cancelled.cancelled);
}
