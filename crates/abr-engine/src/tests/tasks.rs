//! The task engine on fakes: plan validation (each error names its step), approval (exact
//! hash, a named approver, once), the approval rules, the outcome mapping of every step
//! failure, timeout and panic before and after a committing step, the verification paths,
//! idempotency, re-checks, assertion spending, per-tenant limits, restart recovery, audit
//! without values, and a property: no sequence of operations runs an unapproved plan or an
//! approved plan twice.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use super::{agent, approver, checked};
use abr_core::principal::Right;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::stored_sessions::StoredSessions;
use crate::task::runner::{TaskConfig, TaskEnd, TaskRunner};
use abr_core::Clock as _;
use abr_core::approval::ApprovalRule;
use abr_core::codes as task_codes;
use abr_core::digest::{approval_hash, plan_hash};
use abr_core::error::{PlanLocation, PlanProblem, UrlProblem};
use abr_core::guard::{CommitRules, is_committing};
use abr_core::limits::TenantLimits;
use abr_core::plan::{PlanLimits, describe_steps, shown_inputs, validate};
use abr_core::step_runner::{BrowserAction, StepFailureKind};
use abr_core::store::{
    Counter, CounterStore, IdempotencyKey, InMemorySessionStore, InMemoryStore, Inserted,
    RecordStore, ScreenshotStore, StoredTask, TaskStore,
};
use abr_core::testing::{FakeContext, FakeFault, FakePage, FakeProvider, ManualClock, action_key};
use abr_core::{AuditAction, Auditor, CoreError, DynSessionProvider, ErrorKind, MemoryAuditSink};
use abr_protocol::{
    AgentSessionState, ApproveRequest, AssertNotPostedRequest, CommitClass, Cookie, RecheckAnswer,
    RejectRequest, SecretValue, SessionScopeSpec, StepPlan, TaskRecord, TaskRequest, TaskState,
    codes,
};
use async_trait::async_trait;
use proptest::prelude::*;
use serde_json::{Value, json};
use time::macros::datetime;

const T: &str = "tenant-a";
const CANARY: &str = "canary-typed-secret@example.com";

// ---- fixtures -------------------------------------------------------------------------------

/// A store that records every successful update (state, step results, committing mark) and
/// yields before each operation, so that concurrent calls interleave.
#[derive(Debug, Default)]
struct Observed {
    inner: InMemoryStore,
    updates: Mutex<Vec<(TaskState, usize, bool)>>,
}

impl Observed {
    fn updates(&self) -> Vec<(TaskState, usize, bool)> {
        self.updates.lock().unwrap().clone()
    }

    fn all(&self) -> Vec<StoredTask> {
        self.inner.all_tasks()
    }

    fn tasks(&self) -> &dyn RecordStore<StoredTask> {
        &self.inner
    }
}

#[async_trait]
impl RecordStore<StoredTask> for Observed {
    async fn insert(
        &self,
        task: &StoredTask,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        tokio::task::yield_now().await;
        self.inner.insert(task, idempotency).await
    }
    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        tokio::task::yield_now().await;
        self.tasks().find_idempotency(tenant, key).await
    }
    async fn get(&self, tenant: &str, task_id: &str) -> Result<Option<StoredTask>, CoreError> {
        tokio::task::yield_now().await;
        self.tasks().get(tenant, task_id).await
    }
    async fn update(&self, task: &StoredTask) -> Result<bool, CoreError> {
        tokio::task::yield_now().await;
        let saved = self.inner.update(task).await?;
        if saved {
            self.updates.lock().unwrap().push((
                task.record.state,
                task.record.step_results.len(),
                task.ledger.marked,
            ));
        }
        Ok(saved)
    }
    async fn mark(&self, tenant: &str, task_id: &str) -> Result<bool, CoreError> {
        tokio::task::yield_now().await;
        self.tasks().mark(tenant, task_id).await
    }
    async fn unfinished(&self) -> Result<Vec<StoredTask>, CoreError> {
        self.tasks().unfinished().await
    }
    async fn list(
        &self,
        tenant: &str,
        query: &abr_core::store::ListQuery,
    ) -> Result<abr_core::store::Listed<StoredTask>, CoreError> {
        self.tasks().list(tenant, query).await
    }

    async fn count_in_state(&self, state: &str) -> Result<abr_core::store::StateCount, CoreError> {
        self.tasks().count_in_state(state).await
    }
}

#[async_trait]
impl CounterStore for Observed {
    async fn increment(
        &self,
        tenant: &str,
        counter: &Counter,
        max: u32,
    ) -> Result<bool, CoreError> {
        tokio::task::yield_now().await;
        self.inner.increment(tenant, counter, max).await
    }
    async fn decrement(&self, tenant: &str, counter: &Counter) -> Result<(), CoreError> {
        self.inner.decrement(tenant, counter).await
    }
    async fn count(&self, tenant: &str, counter: &Counter) -> Result<u32, CoreError> {
        self.inner.count(tenant, counter).await
    }
    async fn clear_sessions(&self) -> Result<(), CoreError> {
        self.inner.clear_sessions().await
    }
}

#[async_trait]
impl ScreenshotStore for Observed {
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        png: Vec<u8>,
    ) -> Result<(), CoreError> {
        self.inner.put_screenshot(tenant, task_id, name, png).await
    }
    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        self.inner.screenshot(tenant, task_id, name).await
    }
}

struct H {
    provider: Arc<FakeProvider>,
    page: Arc<FakePage>,
    store: Arc<Observed>,
    runner: TaskRunner<FakeContext>,
    audit: Arc<MemoryAuditSink>,
    clock: Arc<ManualClock>,
}

fn h() -> H {
    h_with(TaskConfig::default())
}

fn h_with(config: TaskConfig) -> H {
    let provider = Arc::new(FakeProvider::new());
    let page = provider.page();
    let store = Arc::new(Observed::default());
    let audit = Arc::new(MemoryAuditSink::new());
    let clock = Arc::new(ManualClock::new(datetime!(2026-06-09 12:00 UTC)));
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let dyn_store: Arc<dyn TaskStore> = store.clone();
    let runner = TaskRunner::new(dyn_provider, dyn_store)
        .with_config(config)
        .with_clock(clock.clone())
        .with_audit(Auditor::new(audit.clone(), Duration::from_secs(1)));
    H {
        provider,
        page,
        store,
        runner,
        audit,
        clock,
    }
}

fn plan(value: Value) -> StepPlan {
    serde_json::from_value(value).unwrap()
}

/// Fill a form and submit it, check, read the table, screenshot. Step 2 (the click) is the
/// first committing step.
fn form_plan() -> StepPlan {
    plan(json!({
        "targetUrl": "https://tool.example/admin/users",
        "steps": [
            {"type": "type", "selector": "#email", "value": "{{email}}", "description": "Enter the email"},
            {"type": "wait", "selector": "#form", "description": "Wait for the form"},
            {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit the form"},
            {"type": "wait", "text": "Saved", "timeoutMs": 3000, "description": "Wait for the confirmation"},
            {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users"},
            {"type": "screenshot", "description": "Capture the result"}
        ],
        "verification": {"method": "dom_check", "text": "Saved"},
        "risk": "medium",
        "reasoning": "no API",
        "confidence": 0.8
    }))
}

const SUBMIT: &str = "role=button[name=Submit]";

fn request(plan: StepPlan) -> TaskRequest {
    TaskRequest {
        profile: None,
        plan,
        inputs: BTreeMap::from([("email".to_owned(), SecretValue::new(CANARY))]),
        secret_inputs: Vec::new(),
        session: None,
        session_id: None,
        scope: None,
        platform: None,
        tenant_id: None,
        proposal_id: Some("prop-1".into()),
        dry_run: false,
        handoff: None,
    }
}

fn approval(record: &TaskRecord) -> ApproveRequest {
    ApproveRequest {
        approved_by: Some("alice".into()),
        plan_hash: record.plan_hash.clone(),
    }
}

impl H {
    async fn create(&self, plan: StepPlan) -> TaskRecord {
        self.runner
            .create(&checked(&agent(T), Right::Propose), request(plan), None)
            .await
            .unwrap()
            .record
    }

    async fn approved(&self, plan: StepPlan) -> TaskRecord {
        let record = self.create(plan).await;
        self.runner
            .approve(
                &checked(&approver(T), Right::Approve),
                &record.task_id,
                &approval(&record),
            )
            .await
            .unwrap()
    }

    async fn run(&self, plan: StepPlan) -> TaskEnd {
        let record = self.approved(plan).await;
        self.runner.run(T, &record.task_id).await.unwrap()
    }

    async fn sessions_held(&self) -> u32 {
        self.store.count(T, &Counter::Sessions).await.unwrap()
    }
}

async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

fn error_code(record: &TaskRecord) -> &str {
    record.error.as_ref().map_or("", |e| e.code.as_str())
}

// ---- plan validation ------------------------------------------------------------------------

fn base() -> Value {
    json!({
        "targetUrl": "https://tool.example/",
        "steps": [
            {"type": "navigate", "description": "Open the tool"},
            {"type": "click", "selector": "#a", "description": "Click a"},
            {"type": "type", "selector": "#b", "value": "{{email}}", "description": "Type b"}
        ],
        "verification": {"method": "dom_check", "selector": "#ok"}
    })
}

fn inputs() -> BTreeMap<String, SecretValue> {
    BTreeMap::from([("email".to_owned(), SecretValue::new(CANARY))])
}

#[test]
fn each_invalid_plan_is_refused_naming_where() {
    let step = |i: usize, patch: Value| {
        let mut v = base();
        v["steps"][i] = patch;
        v
    };
    let cases: Vec<(Value, PlanLocation, PlanProblem)> = vec![
        (
            step(
                1,
                json!({"type": "click", "selector": "  ", "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::EmptySelector,
        ),
        (
            step(
                1,
                json!({"type": "click", "selector": {"css": "#a", "text": "A"}, "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::SelectorForms(2),
        ),
        (
            step(
                1,
                json!({"type": "click", "selector": {}, "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::SelectorForms(0),
        ),
        (
            step(
                1,
                json!({"type": "click", "selector": {"text": "A", "name": "n"}, "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::NameWithoutRole,
        ),
        (
            step(
                0,
                json!({"type": "navigate", "url": "javascript:alert(1)", "description": "x"}),
            ),
            PlanLocation::Step(0),
            PlanProblem::NavigateUrl(UrlProblem::NotHttp),
        ),
        (
            step(
                0,
                json!({"type": "navigate", "url": "https://u:p@tool.example/", "description": "x"}),
            ),
            PlanLocation::Step(0),
            PlanProblem::NavigateUrl(UrlProblem::Credentials),
        ),
        (
            step(
                2,
                json!({"type": "type", "selector": "#b", "value": "v", "description": "  "}),
            ),
            PlanLocation::Step(2),
            PlanProblem::EmptyDescription,
        ),
        (
            step(
                1,
                json!({"type": "click", "selector": "#a", "timeoutMs": 600_000, "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::TimeoutAboveBudget {
                ms: 600_000,
                max_ms: 90_000,
            },
        ),
        (
            step(
                1,
                json!({"type": "click", "selector": "#a", "timeout_ms": 0, "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::ZeroTimeout,
        ),
        (
            step(
                1,
                json!({"type": "wait", "selector": "#a", "text": "t", "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::WaitConditions(2),
        ),
        (
            step(1, json!({"type": "wait", "description": "x"})),
            PlanLocation::Step(1),
            PlanProblem::WaitConditions(0),
        ),
        (
            step(
                2,
                json!({"type": "type", "selector": "#b", "value": "{{nope}}", "description": "x"}),
            ),
            PlanLocation::Step(2),
            PlanProblem::UnknownInput("nope".into()),
        ),
        (
            step(
                2,
                json!({"type": "type", "selector": "#b", "value": "{{ bad name }}", "description": "x"}),
            ),
            PlanLocation::Step(2),
            PlanProblem::MalformedPlaceholder("the value"),
        ),
        (
            step(
                2,
                json!({"type": "select", "selector": "#b", "value": "{{email", "description": "x"}),
            ),
            PlanLocation::Step(2),
            PlanProblem::MalformedPlaceholder("the value"),
        ),
        (
            step(
                0,
                json!({"type": "navigate", "url": "/q?x={{missing}}", "description": "x"}),
            ),
            PlanLocation::Step(0),
            PlanProblem::UnknownInput("missing".into()),
        ),
        (
            step(
                1,
                json!({"type": "extract", "name": " ", "kind": "text", "selector": "#a", "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::Empty("the extract name"),
        ),
        (
            step(
                1,
                json!({"type": "screenshot", "name": "../etc", "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::ScreenshotName,
        ),
        (
            step(
                1,
                json!({"type": "screenshot", "name": "verification", "description": "x"}),
            ),
            PlanLocation::Step(1),
            PlanProblem::DuplicateScreenshotName,
        ),
        (
            step(1, json!({"type": "assert", "description": "x"})),
            PlanLocation::Step(1),
            PlanProblem::EmptyCheck,
        ),
        (
            {
                let mut v = base();
                v["steps"][1] = json!({"type": "extract", "name": "{{email}}", "kind": "text", "selector": "#a", "description": "x"});
                v["steps"][2] = json!({"type": "extract", "name": CANARY, "kind": "text", "selector": "#b", "description": "y"});
                v
            },
            PlanLocation::Step(2),
            PlanProblem::DuplicateExtractName,
        ),
        (
            {
                let mut v = base();
                v["targetUrl"] = json!("ftp://tool.example/");
                v
            },
            PlanLocation::Plan,
            PlanProblem::TargetUrl(UrlProblem::NotHttp),
        ),
        (
            {
                let mut v = base();
                v["steps"] = json!([]);
                v
            },
            PlanLocation::Plan,
            PlanProblem::NoSteps,
        ),
        (
            {
                let mut v = base();
                v["steps"] =
                    Value::Array(vec![json!({"type": "screenshot", "description": "x"}); 51]);
                v
            },
            PlanLocation::Step(50),
            PlanProblem::TooManySteps { max: 50 },
        ),
        (
            {
                let mut v = base();
                v["verification"] = json!({"method": "api_callback", "url": "file:///etc/passwd"});
                v
            },
            PlanLocation::Verification,
            PlanProblem::CallbackUrl(UrlProblem::NotHttp),
        ),
        (
            {
                let mut v = base();
                v["verification"] = json!({"method": "dom_check"});
                v
            },
            PlanLocation::Verification,
            PlanProblem::EmptyCheck,
        ),
    ];
    let limits = PlanLimits::default();
    for (value, location, problem) in cases {
        let plan = plan(value);
        let e = validate(&plan, &inputs(), &limits).unwrap_err();
        assert_eq!((e.location, &e.problem), (location, &problem), "{e}");
        let message = e.to_string();
        if let PlanLocation::Step(i) = location {
            assert!(message.starts_with(&format!("steps[{i}]: ")), "{message}");
            assert_eq!(e.step(), Some(i));
        }
        assert!(!message.contains(CANARY), "{message}");
        assert!(!message.contains("u:p@"), "{message}");
        let core = CoreError::from(e);
        assert_eq!(core.error_code(), codes::INVALID_PLAN);
        assert_eq!(
            (core.error_code().status, core.kind()),
            (422, ErrorKind::InvalidInput)
        );
    }
    // Unknown step types never get this far.
    let mut v = base();
    v["steps"][1] = json!({"type": "eval", "script": "x", "description": "x"});
    assert!(serde_json::from_value::<StepPlan>(v).is_err());
}

#[tokio::test]
async fn an_invalid_plan_is_a_422_and_nothing_is_stored() {
    let h = h();
    let mut v = base();
    v["steps"][1] = json!({"type": "click", "selector": "", "description": "x"});
    let e = h
        .runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(plan(v)),
            Some("key-1"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), codes::INVALID_PLAN);
    assert!(e.to_string().contains("steps[1]"), "{e}");
    assert!(h.store.all().is_empty());
    // The key was not claimed: a corrected request with it goes through.
    h.runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(plan(base())),
            Some("key-1"),
        )
        .await
        .unwrap();
}

#[test]
fn the_plan_hash_covers_the_plan_not_its_spelling_or_inputs() {
    let a = plan(base());
    // The same plan with keys in another order and the snake_case spelling.
    let b = plan(json!({
        "verification": {"selector": "#ok", "method": "dom_check"},
        "steps": [
            {"description": "Open the tool", "type": "navigate"},
            {"selector": "#a", "type": "click", "description": "Click a"},
            {"value": "{{email}}", "description": "Type b", "selector": "#b", "type": "type"}
        ],
        "targetUrl": "https://tool.example/"
    }));
    assert_eq!(plan_hash(&a), plan_hash(&b));
    assert_eq!(plan_hash(&a).len(), 64);
    assert!(plan_hash(&a).chars().all(|c| c.is_ascii_hexdigit()));
    let mut c = a.clone();
    c.steps[1].description = "Click b".into();
    assert_ne!(plan_hash(&a), plan_hash(&c));
    let mut d = a.clone();
    d.risk = abr_protocol::Risk::High;
    assert_ne!(plan_hash(&a), plan_hash(&d));
    // The inputs are not part of it.
    let v1 = validate(&a, &inputs(), &PlanLimits::default()).unwrap();
    let other = BTreeMap::from([("email".to_owned(), SecretValue::new("other"))]);
    let v2 = validate(&a, &other, &PlanLimits::default()).unwrap();
    assert_eq!(v1.hash(), v2.hash());
}

#[test]
fn the_approver_reads_the_steps_in_words_without_inputs() {
    let steps = describe_steps(&form_plan());
    assert_eq!(
        steps[0],
        r##"1. Type: Enter the email (css "#email", value "{{email}}")"##
    );
    assert_eq!(steps[2], r#"3. Click: Submit the form (button "Submit")"#);
    assert_eq!(
        steps[3],
        r#"4. Wait: Wait for the confirmation (for the text "Saved")"#
    );
    assert_eq!(
        steps[4],
        r##"5. Extract: Read the users (the table css "#users" as "users")"##
    );
    assert_eq!(
        steps[5],
        r#"6. Screenshot: Capture the result (named "step-5")"#
    );
    assert!(steps.iter().all(|s| !s.contains(CANARY)));
}

#[test]
fn placeholders_are_filled_from_inputs_and_encoded_in_urls() {
    let plan = plan(json!({
        "targetUrl": "https://tool.example/app/",
        "steps": [
            {"type": "navigate", "url": "search?q={{q}}", "description": "Search"},
            {"type": "type", "selector": "#pw", "value": "pw: {{ password }}", "submit": true, "description": "Sign in"},
            {"type": "extract", "name": "result-{{q}}", "kind": "text", "selector": "#r", "description": "Read"}
        ],
        "verification": {"method": "api_callback", "url": "https://orchestrator.example/cb?token=t"}
    }));
    let inputs = BTreeMap::from([
        ("q".to_owned(), SecretValue::new("a b&c=d/../@evil.com#x")),
        ("password".to_owned(), SecretValue::new("hunter2-canary")),
    ]);
    let valid = validate(&plan, &inputs, &PlanLimits::default()).unwrap();
    assert!(valid.has_committing_step(), "type with submit");
    let filled = valid.fill(&inputs).unwrap();
    match &filled[0].action {
        BrowserAction::Navigate { url } => {
            assert_eq!(
                url.as_str(),
                "https://tool.example/app/search?q=a%20b%26c%3Dd%2F..%2F%40evil.com%23x"
            );
            assert_eq!(url.host_str(), Some("tool.example"));
        }
        other => panic!("{other:?}"),
    }
    match &filled[1].action {
        BrowserAction::Type { value, submit, .. } => {
            assert_eq!(value.expose(), "pw: hunter2-canary");
            assert!(submit);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        filled[2].name.as_deref(),
        Some("result-a b&c=d/../@evil.com#x")
    );
    assert!(!format!("{:?}", filled[1]).contains("hunter2"));
}

#[test]
fn committing_is_decided_by_the_action_only() {
    let sel = abr_protocol::Selector::Css("#x".into());
    let yes = [
        BrowserAction::Click {
            selector: sel.clone(),
        },
        BrowserAction::Type {
            selector: sel.clone(),
            value: SecretValue::new("v"),
            submit: true,
        },
        BrowserAction::Select {
            selector: sel.clone(),
            value: SecretValue::new("v"),
        },
    ];
    let no = [
        BrowserAction::Navigate {
            url: url::Url::parse("https://x.example/delete?id=1").unwrap(),
        },
        BrowserAction::Type {
            selector: sel.clone(),
            value: SecretValue::new("v"),
            submit: false,
        },
        BrowserAction::Wait {
            selector: Some(sel),
            url: None,
            text: None,
        },
        BrowserAction::Screenshot,
        BrowserAction::Assert {
            check: abr_protocol::DomCheck::default(),
        },
    ];
    assert!(
        yes.iter()
            .all(|a| is_committing(a, None, &CommitRules::LENIENT))
    );
    assert!(
        !no.iter()
            .any(|a| is_committing(a, None, &CommitRules::LENIENT))
    );
}

// ---- approval -------------------------------------------------------------------------------

/// The attack (issue 34, finding 6): the approver read `{{email}}`, approved, and the
/// attacker's address was added as an admin; two tasks with the same steps and other values
/// or another session shared a hash, so the approval of the honest one approved the
/// attacker's. The record shows the values the steps are filled with (a secret as its name
/// and length only), the session's account and platform, and the plan's reasoning; its hash
/// binds all of them, and a run whose stored request no longer matches it runs nothing.
#[tokio::test]
async fn the_approver_sees_and_binds_the_values_the_session_and_the_reasoning() {
    let provider = Arc::new(FakeProvider::new());
    let store = Arc::new(InMemoryStore::new());
    let sessions = StoredSessions::new(
        Arc::new(InMemorySessionStore::new()),
        Arc::new(abr_core::SystemClock),
    );
    for account in ["ada-admin", "mallory"] {
        let state = AgentSessionState {
            cookies: vec![Cookie::new("sid", account, ".tool.example")],
            ..AgentSessionState::default()
        };
        sessions
            .put_scoped(T, account, state, &|_| None)
            .await
            .unwrap();
    }
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let dyn_store: Arc<dyn TaskStore> = store.clone();
    let runner = TaskRunner::new(dyn_provider, dyn_store)
        .with_sessions(sessions)
        .with_body_hash_key(SecretValue::new("runner-secret"));
    let task = |email: &str, session: &str, secret: &[&str]| -> TaskRequest {
        serde_json::from_value(json!({
            "plan": serde_json::to_value(form_plan()).unwrap(),
            "inputs": {"email": email, "password": "hunter2-secret"},
            "secretInputs": secret,
            "sessionId": session,
            "scope": {"cookieDomains": ["tool.example"], "origins": []}
        }))
        .unwrap()
    };
    let create = |request: TaskRequest| {
        let runner = &runner;
        async move {
            runner
                .create(&checked(&agent(T), Right::Propose), request, None)
                .await
        }
    };
    let honest = create(task("ada@example.com", "ada-admin", &[]))
        .await
        .unwrap()
        .record;
    let attack = create(task("mallory@evil.example", "ada-admin", &[]))
        .await
        .unwrap()
        .record;
    assert_ne!(
        honest.plan_hash, attack.plan_hash,
        "the same steps filled with other values share a hash"
    );
    // What the approver of the attacker's task reads.
    let shown = serde_json::to_value(&attack).unwrap();
    assert_eq!(
        shown["inputs"],
        json!([
            {"name": "email", "value": "mallory@evil.example", "length": 20},
            {"name": "password", "secret": true, "length": 14}
        ]),
        "{shown}"
    );
    assert!(
        !shown.to_string().contains("hunter2"),
        "a secret is shown: {shown}"
    );
    assert_eq!(shown["account"], json!({"sessionId": "ada-admin"}));
    assert_eq!(shown["reasoning"], "no API");
    // The honest task's approval does not approve the attacker's.
    let e = runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &attack.task_id,
            &ApproveRequest {
                approved_by: None,
                plan_hash: honest.plan_hash.clone(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("plan_hash_mismatch", 409)
    );
    // Nor does another account's session share the hash.
    let other = create(task("ada@example.com", "mallory", &[]))
        .await
        .unwrap()
        .record;
    assert_ne!(
        honest.plan_hash, other.plan_hash,
        "another session, one hash"
    );
    assert_eq!(
        other.account.unwrap().session_id.as_deref(),
        Some("mallory")
    );
    // A value the planner says is a secret is masked too; a name it does not give is refused.
    let masked = create(task("ada@example.com", "ada-admin", &["email"]))
        .await
        .unwrap()
        .record;
    assert!(masked.inputs.iter().all(|i| i.secret && i.value.is_none()));
    assert_ne!(
        masked.plan_hash, honest.plan_hash,
        "what was masked is bound"
    );
    let e = create(task("ada@example.com", "ada-admin", &["emial"]))
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("invalid_plan", 422));

    // The approved task's stored request changed before it ran: nothing runs.
    let approved = runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &honest.task_id,
            &ApproveRequest {
                approved_by: None,
                plan_hash: honest.plan_hash.clone(),
            },
        )
        .await
        .unwrap();
    let mut stored: StoredTask = RecordStore::get(store.as_ref(), T, &approved.task_id)
        .await
        .unwrap()
        .unwrap();
    stored
        .request
        .inputs
        .insert("email".to_owned(), SecretValue::new("mallory@evil.example"));
    assert!(
        RecordStore::<StoredTask>::update(store.as_ref(), &stored)
            .await
            .unwrap()
    );
    let end = runner.run(T, &approved.task_id).await.unwrap();
    assert_eq!(end.record.state, TaskState::Failed);
    assert_eq!(error_code(&end.record), "plan_not_approved");
    assert_eq!(provider.acquired(), 0, "a browser started");
}

#[tokio::test]
async fn approval_needs_the_exact_hash_and_an_approver_other_than_the_proposer_once() {
    let h = h();
    let created = h
        .runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(form_plan()),
            None,
        )
        .await
        .unwrap();
    assert!(!created.should_run());
    let record = created.record;
    assert_eq!(record.state, TaskState::PendingApproval);
    assert_eq!(record.approval_rule, "all");
    assert_eq!(record.steps.len(), 6);
    let id = record.task_id.clone();

    let mut wrong = approval(&record);
    wrong.plan_hash = plan_hash(&plan(base()));
    let e = h
        .runner
        .approve(&checked(&approver(T), Right::Approve), &id, &wrong)
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("plan_hash_mismatch", 409)
    );
    // An agent never approves, the proposer's own key included: the door refuses it.
    let e = crate::caller::Caller::checked(&agent(T), Right::Approve).unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("forbidden", 403));
    let mut long = approval(&record);
    long.approved_by = Some("x".repeat(300));
    let e = h
        .runner
        .approve(&checked(&approver(T), Right::Approve), &id, &long)
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("invalid_request", 422));
    assert_eq!(
        h.runner.get(T, &id).await.unwrap().state,
        TaskState::PendingApproval
    );
    assert_eq!(h.sessions_held().await, 0, "refused approvals hold nothing");

    let approved = h
        .runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &id,
            &approval(&record),
        )
        .await
        .unwrap();
    assert_eq!(approved.state, TaskState::Queued);
    let approval_of = approved.approval.as_ref().unwrap();
    assert_eq!(
        approval_of.approved_by, "alice",
        "the approving key's holder"
    );
    assert_eq!(
        approval_of.approver.as_ref().unwrap().key_id,
        "key_approver"
    );
    assert_eq!(approval_of.stated_by.as_deref(), Some("alice"));
    assert_eq!(
        approved.proposed_by.as_ref().unwrap().key_id,
        "key_agent",
        "the record names who proposed it"
    );
    let e = h
        .runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &id,
            &approval(&record),
        )
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("task_not_pending", 409));
    let reject = RejectRequest {
        rejected_by: Some("bob".into()),
        reason: None,
    };
    let e = h
        .runner
        .reject(&checked(&approver(T), Right::Approve), &id, &reject)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "task_not_pending");
    assert!(
        h.page.actions().is_empty(),
        "approving runs nothing by itself"
    );
}

#[tokio::test]
async fn the_key_that_proposed_a_task_never_approves_it_even_an_operators() {
    let h = h();
    let operator = abr_core::principal::Actor::operator(T).unwrap();
    let record = h
        .runner
        .create(
            &checked(&operator, Right::Propose),
            request(form_plan()),
            None,
        )
        .await
        .unwrap()
        .record;
    let e = h
        .runner
        .approve(
            &checked(&operator, Right::Approve),
            &record.task_id,
            &approval(&record),
        )
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("self_approval", 403));
    assert_eq!(
        h.runner.get(T, &record.task_id).await.unwrap().state,
        TaskState::PendingApproval
    );
    // Another principal approves it.
    let approved = h
        .runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &record.task_id,
            &approval(&record),
        )
        .await
        .unwrap();
    assert_eq!(approved.state, TaskState::Queued);
}

#[tokio::test]
async fn a_rejected_task_never_runs() {
    let h = h();
    let record = h.create(form_plan()).await;
    let id = &record.task_id;
    let e = h.runner.run(T, id).await.unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("task_not_queued", 409));
    let e = h
        .runner
        .reject(
            &checked(&approver(T), Right::Approve),
            id,
            &RejectRequest {
                rejected_by: Some("x".repeat(300)),
                reason: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "invalid_request");
    let rejected = h
        .runner
        .reject(
            &checked(&approver(T), Right::Approve),
            id,
            &RejectRequest {
                rejected_by: Some("bob".into()),
                reason: Some("wrong account".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(rejected.state, TaskState::Rejected);
    assert_eq!(error_code(&rejected), task_codes::REJECTED);
    assert!(rejected.finished_at.is_some());
    let e = h
        .runner
        .approve(
            &checked(&approver(T), Right::Approve),
            id,
            &approval(&record),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "task_not_pending");
    assert_eq!(
        h.runner.run(T, id).await.unwrap_err().code(),
        "task_not_queued"
    );
    assert!(h.page.actions().is_empty());
    assert_eq!(h.provider.acquired(), 0);
}

#[tokio::test]
async fn another_tenants_task_is_not_found() {
    let h = h();
    let record = h.create(form_plan()).await;
    let id = &record.task_id;
    let e = h.runner.get("tenant-b", id).await.unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("task_not_found", 404));
    let e = h
        .runner
        .approve(
            &checked(&approver("tenant-b"), Right::Approve),
            id,
            &approval(&record),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "task_not_found");
    assert_eq!(
        h.runner.run("tenant-b", id).await.unwrap_err().code(),
        "task_not_found"
    );
    assert_eq!(
        h.runner.get(T, "task_nope").await.unwrap_err().code(),
        "task_not_found"
    );
}

#[tokio::test]
async fn the_approval_rule_is_applied_and_recorded() {
    let read_only = plan(json!({
        "targetUrl": "https://tool.example/",
        "steps": [{"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read"}],
        "verification": {"method": "dom_check", "selector": "#users"}
    }));
    let mut risky = read_only.clone();
    risky.risk = abr_protocol::Risk::Medium;
    let mut committing = plan(base());
    committing.risk = abr_protocol::Risk::Low;

    let cases = [
        (ApprovalRule::All, &read_only, false),
        (ApprovalRule::CommittingOrRisky, &read_only, true),
        (ApprovalRule::CommittingOrRisky, &risky, false),
        (ApprovalRule::CommittingOrRisky, &committing, false),
        (ApprovalRule::Off, &committing, true),
    ];
    for (rule, plan, auto) in cases {
        let h = h_with(TaskConfig {
            approval: rule,
            ..TaskConfig::default()
        });
        let created = h
            .runner
            .create(
                &checked(&agent(T), Right::Propose),
                request(plan.clone()),
                None,
            )
            .await
            .unwrap();
        let record = &created.record;
        assert_eq!(record.approval_rule, rule.as_str());
        if auto {
            assert!(created.should_run(), "{rule}");
            assert_eq!(record.state, TaskState::Queued);
            let by = &record.approval.as_ref().unwrap().approved_by;
            assert_eq!(by, &format!("auto:{}", rule.as_str()));
            assert_eq!(h.sessions_held().await, 1, "admitted at once");
            let end = h.runner.run(T, &record.task_id).await.unwrap();
            assert_eq!(end.record.state, TaskState::Succeeded, "{rule}");
        } else {
            assert!(!created.should_run(), "{rule}");
            assert_eq!(record.state, TaskState::PendingApproval, "{rule}");
            assert!(record.approval.is_none());
            assert_eq!(h.sessions_held().await, 0);
        }
    }
    assert_eq!(
        "committing-or-risky".parse::<ApprovalRule>().unwrap(),
        ApprovalRule::CommittingOrRisky
    );
    assert!("sometimes".parse::<ApprovalRule>().is_err());
}

// ---- outcomes -------------------------------------------------------------------------------

#[tokio::test]
async fn a_proven_task_succeeds_with_its_results() {
    let h = h();
    h.page.set_facts(
        "#email",
        abr_core::guard::ElementFacts {
            tag: "input".into(),
            role: Some("textbox".into()),
            name: "Email".into(),
            ..abr_core::guard::ElementFacts::default()
        },
    );
    h.page.text_after(SUBMIT, "User Saved");
    h.page
        .extract_result("#users", json!([{"email": "a@x"}, {"email": "b@x"}]));
    let end = h.run(form_plan()).await;
    let record = &end.record;
    assert_eq!(record.state, TaskState::Succeeded, "{record:?}");
    assert!(record.error.is_none() && record.failed_step.is_none());
    assert_eq!(record.step_results.len(), 6);
    assert!(
        record
            .step_results
            .iter()
            .all(|r| r.ok && r.error.is_none())
    );
    let committing: Vec<bool> = record.step_results.iter().map(|r| r.committing).collect();
    assert_eq!(committing, [false, false, true, false, false, false]);
    // Each result names the element it acted on, as the page presents it (never the value
    // typed into it), and when it started, in order.
    let targets: Vec<Option<(Option<&str>, &str)>> = record
        .step_results
        .iter()
        .map(|r| {
            r.target
                .as_ref()
                .map(|t| (t.role.as_deref(), t.name.as_str()))
        })
        .collect();
    assert_eq!(
        targets,
        [
            Some((Some("textbox"), "Email")),
            None,
            // A `<button>`: its role is the one its tag implies.
            Some((Some("button"), SUBMIT)),
            None,
            None,
            None
        ]
    );
    let started: Vec<_> = record.step_results.iter().map(|r| r.at.unwrap()).collect();
    assert!(started.is_sorted(), "{started:?}");
    assert!(started[0] >= record.started_at.unwrap());
    assert_eq!(
        record.extracted["users"],
        json!([{"email": "a@x"}, {"email": "b@x"}])
    );
    assert_eq!(record.screenshots, ["step-5"]);
    // The screenshot is a redacted frame (every field blurred and confirmed), not the page
    // as a plain capture would show it.
    assert_eq!(
        h.store
            .screenshot(T, &record.task_id, "step-5")
            .await
            .unwrap(),
        Some(b"\xFF\xD8\xFF\xC0\x00\x11\x08\x02\xD0\x05\x00 fake jpeg 1".to_vec())
    );
    assert_eq!(h.page.frames_taken(), 1);
    assert!(record.started_at.is_some() && record.finished_at.is_some());
    assert!(end.callback_url.is_none());
    // The browser did exactly the plan: the target URL, then the steps, then the check.
    let actions = h.page.actions();
    let kinds: Vec<&str> = actions.iter().map(BrowserAction::kind).collect();
    assert_eq!(
        kinds,
        [
            "navigate", "type", "wait", "click", "wait", "extract", "assert"
        ]
    );
    match &actions[1] {
        BrowserAction::Type { value, .. } => assert_eq!(value.expose(), CANARY),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.provider.open_leases(), 0);
    assert_eq!(h.sessions_held().await, 0);
    // Saved as it happened: running, then each step, the committing mark before the click.
    let updates = h.store.updates();
    assert_eq!(updates[0], (TaskState::Queued, 0, false), "approved");
    assert_eq!(updates[1], (TaskState::Running, 0, false), "started");
    assert!(
        updates.contains(&(TaskState::Running, 2, true)),
        "{updates:?}"
    );
    let progress: Vec<usize> = updates[1..]
        .iter()
        .filter(|u| u.0 == TaskState::Running)
        .map(|u| u.1)
        .collect();
    assert_eq!(progress, [0, 1, 2, 2, 3, 4, 5, 6]);
    assert_eq!(updates.last().unwrap().0, TaskState::Succeeded);
}

#[tokio::test(start_paused = true)]
async fn step_failures_fail_before_a_committing_step_and_are_uncertain_from_it_on() {
    use FakeFault::{Fail, Hang, Panic};
    let not_found = Fail(StepFailureKind::NotFound);
    let cases = [
        (
            "#email",
            not_found.clone(),
            TaskState::Failed,
            0,
            task_codes::ELEMENT_NOT_FOUND,
        ),
        (
            "#form",
            Hang,
            TaskState::Failed,
            1,
            task_codes::STEP_TIMEOUT,
        ),
        (
            "#form",
            Panic,
            TaskState::Failed,
            1,
            task_codes::STEP_PANICKED,
        ),
        (
            "#form",
            Fail(StepFailureKind::Crashed),
            TaskState::Failed,
            1,
            task_codes::BROWSER_CRASHED,
        ),
        (
            SUBMIT,
            not_found.clone(),
            TaskState::Uncertain,
            2,
            task_codes::ELEMENT_NOT_FOUND,
        ),
        (
            SUBMIT,
            Hang,
            TaskState::Uncertain,
            2,
            task_codes::STEP_TIMEOUT,
        ),
        (
            SUBMIT,
            Panic,
            TaskState::Uncertain,
            2,
            task_codes::STEP_PANICKED,
        ),
        (
            "text:Saved",
            not_found,
            TaskState::Uncertain,
            3,
            task_codes::ELEMENT_NOT_FOUND,
        ),
        (
            "text:Saved",
            Hang,
            TaskState::Uncertain,
            3,
            task_codes::STEP_TIMEOUT,
        ),
        (
            "#users",
            Panic,
            TaskState::Uncertain,
            4,
            task_codes::STEP_PANICKED,
        ),
    ];
    for (key, fault, state, step, code) in cases {
        let h = h();
        h.page.text_after(SUBMIT, "Saved");
        h.page.fault_on(key, fault.clone());
        let record = h.run(form_plan()).await.record;
        let what = format!("{key} {fault:?}");
        assert_eq!(record.state, state, "{what}");
        assert_eq!(record.failed_step, Some(step), "{what}");
        let error = record.error.as_ref().unwrap();
        assert_eq!(error.code, code, "{what}");
        assert_eq!(error.retryable, state == TaskState::Failed, "{what}");
        assert_eq!(record.step_results.len(), step + 1, "{what}");
        let last = record.step_results.last().unwrap();
        assert!(
            !last.ok && last.error.as_ref().unwrap().code == code,
            "{what}"
        );
        assert_eq!(h.provider.open_leases(), 0, "{what}: the lease is released");
        assert_eq!(
            h.sessions_held().await,
            0,
            "{what}: the session is given back"
        );
        assert_eq!(
            h.page.count("assert"),
            0,
            "{what}: no verification after a failure"
        );
    }
}

#[tokio::test]
async fn a_signed_out_browser_needs_reauth_unless_something_committed() {
    // Signed out from the start: the target URL already shows the sign-in page.
    let h = h();
    h.page.sign_out(true);
    let record = h.run(form_plan()).await.record;
    assert_eq!(record.state, TaskState::NeedsReauth);
    assert_eq!(record.failed_step, None);
    assert_eq!(error_code(&record), task_codes::NEEDS_REAUTH);
    assert!(record.step_results.is_empty());

    let h = self::h();
    h.page
        .fault_on("#form", FakeFault::Fail(StepFailureKind::SignedOut));
    let record = h.run(form_plan()).await.record;
    assert_eq!(
        (record.state, record.failed_step),
        (TaskState::NeedsReauth, Some(1))
    );

    // After the click, a sign-in page proves nothing either way.
    let h = self::h();
    h.page.text_after(SUBMIT, "Saved");
    h.page
        .fault_on("text:Saved", FakeFault::Fail(StepFailureKind::SignedOut));
    let record = h.run(form_plan()).await.record;
    assert_eq!(
        (record.state, record.failed_step),
        (TaskState::Uncertain, Some(3))
    );
    assert!(!record.error.unwrap().retryable);
}

#[tokio::test]
async fn a_provider_failure_fails_the_task_before_anything_ran() {
    let h = h();
    h.provider
        .fail_next_acquire(abr_core::ProviderErrorKind::Unavailable);
    let record = h.run(form_plan()).await.record;
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(error_code(&record), "provider_unavailable");
    assert!(record.error.unwrap().retryable);
    assert!(h.page.actions().is_empty());
    assert_eq!(h.sessions_held().await, 0);
}

fn verified_plan(committing: bool, verification: Value) -> StepPlan {
    let step = if committing {
        json!({"type": "click", "selector": "#submit", "description": "Submit"})
    } else {
        json!({"type": "extract", "name": "status", "kind": "text", "selector": "#status", "description": "Read the status"})
    };
    plan(json!({
        "targetUrl": "https://tool.example/",
        "steps": [step],
        "verification": verification
    }))
}

#[tokio::test(start_paused = true)]
async fn every_verification_path_maps_to_one_outcome() {
    let dom = json!({"method": "dom_check", "text": "Saved"});
    let shot = json!({"method": "screenshot", "text": "User   created"});
    let callback = json!({"method": "api_callback", "url": "https://orchestrator.example/cb"});
    // (committing, verification, page text, fault on the verification, expected, code)
    let cases = [
        (true, &dom, "Saved", None, TaskState::Succeeded, ""),
        (false, &dom, "Saved", None, TaskState::Succeeded, ""),
        (
            true,
            &dom,
            "",
            None,
            TaskState::Uncertain,
            task_codes::VERIFICATION_FAILED,
        ),
        (
            false,
            &dom,
            "",
            None,
            TaskState::Failed,
            task_codes::VERIFICATION_FAILED,
        ),
        (
            true,
            &dom,
            "Saved",
            Some(("text:Saved", FakeFault::Hang)),
            TaskState::Uncertain,
            task_codes::STEP_TIMEOUT,
        ),
        (
            false,
            &dom,
            "Saved",
            Some(("text:Saved", FakeFault::Panic)),
            TaskState::Failed,
            task_codes::STEP_PANICKED,
        ),
        (
            true,
            &shot,
            "Done. User\ncreated!",
            None,
            TaskState::Succeeded,
            "",
        ),
        (
            true,
            &shot,
            "nothing",
            None,
            TaskState::Uncertain,
            task_codes::VERIFICATION_FAILED,
        ),
        (
            false,
            &shot,
            "nothing",
            None,
            TaskState::Failed,
            task_codes::VERIFICATION_FAILED,
        ),
        (
            true,
            &callback,
            "",
            None,
            TaskState::Uncertain,
            task_codes::VERIFIED_BY_CALLBACK,
        ),
        (false, &callback, "", None, TaskState::Succeeded, ""),
    ];
    for (committing, verification, text, fault, state, code) in cases {
        let h = h();
        h.page.set_text(text);
        let faulted = fault.is_some();
        if let Some((key, fault)) = fault {
            h.page.fault_on(key, fault);
        }
        let end = h.run(verified_plan(committing, verification.clone())).await;
        let what = format!("committing {committing}, {verification}, page {text:?}");
        assert_eq!(end.record.state, state, "{what}");
        assert_eq!(error_code(&end.record), code, "{what}");
        assert_eq!(
            end.record.failed_step, None,
            "{what}: the verification is no step"
        );
        if state == TaskState::Failed {
            assert!(end.record.error.as_ref().unwrap().retryable, "{what}");
        }
        let is_callback = verification["method"] == "api_callback";
        assert_eq!(end.callback_url.is_some(), is_callback, "{what}");
        if verification["method"] == "screenshot" && !faulted {
            assert_eq!(end.record.screenshots, ["verification"], "{what}");
        }
        assert_eq!(h.provider.open_leases(), 0, "{what}");
    }
}

#[tokio::test]
async fn screenshots_are_redacted_evidence_kept_only_when_screenshots_are_on() {
    // A frame that cannot be redacted is no screenshot, and no failure: the run goes on.
    let h = h();
    h.page.text_after(SUBMIT, "Saved");
    h.page.fail_frames(true);
    let record = h.run(form_plan()).await.record;
    assert_eq!(record.state, TaskState::Succeeded);
    assert!(record.screenshots.is_empty());
    let shot = &record.step_results[5];
    assert!(shot.ok);
    assert_eq!(
        shot.error.as_ref().map(|e| e.code.as_str()),
        Some(task_codes::SCREENSHOT_NOT_TAKEN)
    );
    assert_eq!(
        h.store
            .screenshot(T, &record.task_id, "step-5")
            .await
            .unwrap(),
        None
    );

    // Screenshots off for the platform: neither the step's nor the verification's image is
    // taken; the verification still proves by the page's text.
    let h = self::h();
    h.page.set_text("User created");
    let mut policy = abr_protocol::PlatformPolicy {
        screenshots: Some(false),
        ..abr_protocol::PlatformPolicy::default()
    };
    policy.allow_unattended = Some(true);
    let mut request = request(verified_plan(
        false,
        json!({"method": "screenshot", "text": "User created"}),
    ));
    request.plan.steps.push(
        serde_json::from_value(json!({"type": "screenshot", "description": "Evidence"})).unwrap(),
    );
    let record = run_on_platform(&h, "quiet", &policy, request).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert!(record.screenshots.is_empty(), "{:?}", record.screenshots);
    assert_eq!(h.page.frames_taken(), 0, "no image of the page at all");
    let last = record.step_results.last().unwrap();
    assert_eq!(
        last.error.as_ref().map(|e| e.code.as_str()),
        Some(task_codes::SCREENSHOT_NOT_TAKEN)
    );
}

/// `request` on platform `id` of `policy` (a runner of `h`'s browser and store with that one
/// platform): created, approved and run; its record.
async fn run_on_platform(
    h: &H,
    id: &'static str,
    policy: &abr_protocol::PlatformPolicy,
    mut request: TaskRequest,
) -> TaskRecord {
    let strategy = Arc::new(abr_core::testing::ScriptedStrategy::new(id, policy));
    let mut platforms = abr_core::StrategyRegistry::new();
    platforms.register(strategy).unwrap();
    let runner = TaskRunner::new(
        h.provider.clone() as DynSessionProvider<FakeContext>,
        h.store.clone() as Arc<dyn TaskStore>,
    )
    .with_platforms(Arc::new(platforms));
    request.platform = Some(id.into());
    let created = runner
        .create(&checked(&agent(T), Right::Propose), request, None)
        .await
        .unwrap()
        .record;
    runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &created.task_id,
            &approval(&created),
        )
        .await
        .unwrap();
    runner.run(T, &created.task_id).await.unwrap().record
}

#[tokio::test]
async fn a_plans_screenshots_are_redacted_with_its_platforms_additions() {
    let h = self::h();
    h.page.set_text("User created");
    let redaction = abr_protocol::RedactionSpec {
        patterns: vec![r"ACCT-\d{6}".into()],
        selectors: vec![],
    };
    let policy = abr_protocol::PlatformPolicy {
        allow_unattended: Some(true),
        redaction: Some(redaction.clone()),
        ..abr_protocol::PlatformPolicy::default()
    };
    let request = request(verified_plan(
        false,
        json!({"method": "screenshot", "text": "User created"}),
    ));
    let record = run_on_platform(&h, "masked", &policy, request).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(
        record.screenshots,
        [abr_core::plan::VERIFICATION_SCREENSHOT]
    );
    assert_eq!(
        h.page.frame_redaction().and_then(|r| r.to_spec()),
        Some(redaction),
        "the verification screenshot was taken with the platform's additions"
    );
}

#[tokio::test]
async fn extracted_data_is_capped_and_the_cut_is_marked() {
    let h = h_with(TaskConfig {
        extract_cap_bytes: 200,
        ..TaskConfig::default()
    });
    let rows: Vec<Value> = (0..50)
        .map(|i| json!({"row": i, "name": "someone"}))
        .collect();
    h.page.extract_result("#users", Value::Array(rows));
    h.page
        .extract_result("#status", json!("a long status text ".repeat(20)));
    let plan = plan(json!({
        "targetUrl": "https://tool.example/",
        "steps": [
            {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users"},
            {"type": "extract", "name": "status", "kind": "text", "selector": "#status", "description": "Read the status"}
        ],
        "verification": {"method": "dom_check", "selector": "#users"}
    }));
    let record = h.run(plan).await.record;
    assert_eq!(record.state, TaskState::Succeeded);
    let users = record.extracted["users"].as_array().unwrap();
    assert!(!users.is_empty() && users.len() < 50, "{}", users.len());
    assert_eq!(users[0], json!({"row": 0, "name": "someone"}));
    let status = record.extracted["status"].as_str().unwrap();
    assert!(status.len() < 100, "{status}");
    let total = serde_json::to_vec(&record.extracted).unwrap().len();
    assert!(total <= 200, "{total}");
    for result in &record.step_results {
        assert!(result.ok);
        assert_eq!(
            result.error.as_ref().unwrap().code,
            task_codes::EXTRACT_TRUNCATED
        );
    }
}

#[tokio::test]
async fn the_session_is_scoped_going_in_and_written_back() {
    let provider = Arc::new(FakeProvider::new());
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryStore::new());
    let sessions = StoredSessions::new(
        Arc::new(InMemorySessionStore::new()),
        Arc::new(abr_core::SystemClock),
    );
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let runner = TaskRunner::new(dyn_provider, store).with_sessions(sessions.clone());
    let state = AgentSessionState {
        cookies: vec![
            Cookie::new("sid", "in-scope", ".tool.example"),
            Cookie::new("tracker", "out-of-scope", ".evil.example"),
        ],
        ..AgentSessionState::default()
    };
    sessions
        .put_scoped(T, "s1", state.clone(), &|_| None)
        .await
        .unwrap();
    let scope = SessionScopeSpec {
        cookie_domains: vec!["tool.example".into()],
        origins: vec![],
    };

    // A session needs a scope.
    let mut unscoped = request(form_plan());
    unscoped.session = Some(state.clone());
    let e = runner
        .create(&checked(&agent(T), Right::Propose), unscoped, None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "invalid_request");
    // An unknown stored session is refused before anything is stored.
    let mut unknown = request(form_plan());
    unknown.session_id = Some("nope".into());
    unknown.scope = Some(scope.clone());
    let e = runner
        .create(&checked(&agent(T), Right::Propose), unknown, None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "session_not_found");

    let mut req = request(form_plan());
    req.session_id = Some("s1".into());
    req.scope = Some(scope);
    let record = runner
        .create(&checked(&agent(T), Right::Propose), req, None)
        .await
        .unwrap()
        .record;
    runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &record.task_id,
            &approval(&record),
        )
        .await
        .unwrap();
    provider.page().text_after(SUBMIT, "Saved");
    let end = runner.run(T, &record.task_id).await.unwrap();
    assert_eq!(end.record.state, TaskState::Succeeded);
    let injected = provider.injected()[0].clone().unwrap();
    let names: Vec<&str> = injected.cookies.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["sid"], "only the scope's cookies reach the browser");
    let back = sessions.load(T, "s1").await.unwrap();
    assert_eq!(back.cookies.len(), 1);
    assert_eq!(
        back.metadata.unwrap().platform.as_deref(),
        Some("task"),
        "written back scoped and stamped"
    );
}

// ---- idempotency ----------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_repeated_key_answers_the_original_task_also_while_it_runs() {
    let h = h_with(TaskConfig {
        approval: ApprovalRule::Off,
        ..TaskConfig::default()
    });
    h.page.text_after(SUBMIT, "Saved");
    h.page.fault_on("#form", FakeFault::Hang);
    let first = h
        .runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(form_plan()),
            Some("k1"),
        )
        .await
        .unwrap();
    assert!(first.should_run() && !first.replayed);
    let id = first.record.task_id.clone();
    let again = h
        .runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(form_plan()),
            Some("k1"),
        )
        .await
        .unwrap();
    assert!(again.replayed && !again.should_run());
    assert_eq!(again.record.task_id, id);
    assert_eq!(h.sessions_held().await, 1, "the replay admitted nothing");

    let runner = Arc::new(h.runner);
    let running = tokio::spawn({
        let runner = Arc::clone(&runner);
        let id = id.clone();
        async move { runner.run(T, &id).await.unwrap() }
    });
    while h.page.count("wait") == 0 {
        tokio::task::yield_now().await;
    }
    let during = runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(form_plan()),
            Some("k1"),
        )
        .await
        .unwrap();
    assert!(during.replayed);
    assert_eq!(during.record.state, TaskState::Running);
    assert_eq!(during.record.task_id, id);
    let end = running.await.unwrap();
    assert_eq!(end.record.state, TaskState::Failed);
    let after = runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(form_plan()),
            Some("k1"),
        )
        .await
        .unwrap();
    assert_eq!(after.record, end.record);
    assert_eq!(h.page.count("type"), 1, "the plan ran once");
    assert_eq!(h.store.all().len(), 1);

    // Another body under the key is a conflict; the key is per tenant.
    let mut other = request(form_plan());
    other
        .inputs
        .insert("email".into(), SecretValue::new("other@example.com"));
    let e = runner
        .create(
            &checked(&agent(T), Right::Propose),
            other.clone(),
            Some("k1"),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("idempotency_key_reused", 409)
    );
    let theirs = runner
        .create(
            &checked(&agent("tenant-b"), Right::Propose),
            other,
            Some("k1"),
        )
        .await
        .unwrap();
    assert!(!theirs.replayed);
    assert_ne!(theirs.record.task_id, id);
}

#[tokio::test]
async fn a_replay_answers_even_at_the_daily_limit() {
    let h = h_with(TaskConfig {
        approval: ApprovalRule::Off,
        limits: TenantLimits {
            daily_executions: 1,
            ..TenantLimits::default()
        },
        ..TaskConfig::default()
    });
    let first = h
        .runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(form_plan()),
            Some("k"),
        )
        .await
        .unwrap();
    let e = h
        .runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(form_plan()),
            Some("other"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "tenant_daily_limit");
    let again = h
        .runner
        .create(
            &checked(&agent(T), Right::Propose),
            request(form_plan()),
            Some("k"),
        )
        .await
        .unwrap();
    assert_eq!(again.record.task_id, first.record.task_id);
}

// ---- uncertain tasks: re-check, assertion, retry ----------------------------------------------

/// A task that ended uncertain: the click ran, the page never showed "Saved".
async fn uncertain(h: &H, verification: Value) -> TaskRecord {
    let end = h.run(verified_plan(true, verification)).await;
    assert_eq!(end.record.state, TaskState::Uncertain);
    end.record
}

#[tokio::test]
async fn a_recheck_runs_only_the_verification_and_changes_nothing() {
    let h = h();
    let record = uncertain(&h, json!({"method": "dom_check", "text": "Saved"})).await;
    let id = &record.task_id;
    let clicks = h.page.clicks_on("#submit");
    let before = h.page.actions().len();

    let answer = h.runner.recheck(T, id).await.unwrap();
    assert_eq!(answer.answer, RecheckAnswer::NotFound);
    h.page.set_text("Saved");
    let answer = h.runner.recheck(T, id).await.unwrap();
    assert_eq!(
        (answer.answer, answer.error),
        (RecheckAnswer::Confirmed, None)
    );
    h.page.sign_out(true);
    let answer = h.runner.recheck(T, id).await.unwrap();
    assert_eq!(answer.answer, RecheckAnswer::Unavailable);
    assert_eq!(answer.error.unwrap().code, task_codes::NEEDS_REAUTH);

    let since: Vec<&str> = h.page.actions()[before..]
        .iter()
        .map(BrowserAction::kind)
        .collect();
    assert_eq!(
        since,
        ["navigate", "assert", "navigate", "assert", "navigate"]
    );
    assert_eq!(
        h.page.clicks_on("#submit"),
        clicks,
        "nothing committing ran"
    );
    assert_eq!(h.runner.get(T, id).await.unwrap(), record, "read-only");
    assert_eq!(h.sessions_held().await, 0);
    assert_eq!(h.provider.open_leases(), 0);

    // Only uncertain tasks; api_callback cannot be re-checked by the runner.
    let h = self::h();
    let pending = h.create(form_plan()).await;
    let e = h.runner.recheck(T, &pending.task_id).await.unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("not_uncertain", 409));
    let record = uncertain(
        &h,
        json!({"method": "api_callback", "url": "https://orchestrator.example/cb"}),
    )
    .await;
    let acquired = h.provider.acquired();
    let answer = h.runner.recheck(T, &record.task_id).await.unwrap();
    assert_eq!(answer.answer, RecheckAnswer::Ambiguous);
    assert_eq!(h.provider.acquired(), acquired, "no browser for that");
}

#[tokio::test]
async fn an_assertion_allows_exactly_one_new_attempt() {
    let h = h();
    let record = uncertain(&h, json!({"method": "dom_check", "text": "Saved"})).await;
    let id = record.task_id.clone();
    let e = h
        .runner
        .retry(&checked(&agent(T), Right::Post), &id)
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("task_not_retryable", 409)
    );

    let assertion = |by: &str| AssertNotPostedRequest {
        asserted_by: by.into(),
        note: Some("checked the admin panel: no such user".into()),
    };
    let e = h
        .runner
        .assert_not_posted(T, &id, &assertion(" "))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "invalid_request");
    let asserted = h
        .runner
        .assert_not_posted(T, &id, &assertion("owner"))
        .await
        .unwrap();
    assert_eq!(
        asserted.state,
        TaskState::Uncertain,
        "an assertion is no proof"
    );
    let recorded = asserted.assertion.clone().unwrap();
    assert_eq!(
        (recorded.asserted_by.as_str(), recorded.spent_by),
        ("owner", None)
    );
    let e = h
        .runner
        .assert_not_posted(T, &id, &assertion("owner"))
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("already_asserted", 409));

    let attempt = h
        .runner
        .retry(&checked(&agent(T), Right::Post), &id)
        .await
        .unwrap();
    let new = attempt.record;
    assert_eq!(
        new.state,
        TaskState::PendingApproval,
        "a new attempt is approved again"
    );
    assert_eq!(new.retry_of.as_deref(), Some(id.as_str()));
    assert_eq!(new.plan_hash, record.plan_hash);
    let original = h.runner.get(T, &id).await.unwrap();
    assert_eq!(
        original.assertion.unwrap().spent_by.as_deref(),
        Some(new.task_id.as_str())
    );
    assert_eq!(original.state, TaskState::Uncertain);
    let e = h
        .runner
        .retry(&checked(&agent(T), Right::Post), &id)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "task_not_retryable", "spent");

    // The new attempt runs once, after its own approval.
    h.page.set_text("Saved");
    h.runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &new.task_id,
            &approval(&new),
        )
        .await
        .unwrap();
    let end = h.runner.run(T, &new.task_id).await.unwrap();
    assert_eq!(end.record.state, TaskState::Succeeded);
    assert_eq!(
        h.page.clicks_on("#submit"),
        2,
        "the original and the one new attempt"
    );
    // Assertions are for uncertain tasks only.
    let e = h
        .runner
        .assert_not_posted(T, &new.task_id, &assertion("owner"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "not_uncertain");
}

// ---- per-tenant limits ----------------------------------------------------------------------

#[tokio::test]
async fn the_daily_limit_is_a_429_until_the_next_utc_day() {
    let h = h_with(TaskConfig {
        limits: TenantLimits {
            daily_executions: 2,
            ..TenantLimits::default()
        },
        ..TaskConfig::default()
    });
    h.clock.advance(Duration::from_secs(11 * 3600)); // 23:00 UTC
    for _ in 0..2 {
        h.run(form_plan()).await;
    }
    let third = h.create(form_plan()).await;
    let e = h
        .runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &third.task_id,
            &approval(&third),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("tenant_daily_limit", 429)
    );
    assert!(e.is_retryable());
    assert_eq!(e.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!(
        h.runner.get(T, &third.task_id).await.unwrap().state,
        TaskState::PendingApproval,
        "approve again later"
    );
    assert_eq!(
        h.sessions_held().await,
        0,
        "the refused approval holds no session"
    );
    // Another tenant has its own day.
    let theirs = h
        .runner
        .create(
            &checked(&agent("tenant-b"), Right::Propose),
            request(form_plan()),
            None,
        )
        .await
        .unwrap()
        .record;
    h.runner
        .approve(
            &checked(&approver("tenant-b"), Right::Approve),
            &theirs.task_id,
            &approval(&theirs),
        )
        .await
        .unwrap();
    // The next UTC day.
    h.clock.advance(Duration::from_secs(3600));
    h.runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &third.task_id,
            &approval(&third),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_concurrency_limit_counts_held_sessions() {
    let h = h_with(TaskConfig {
        limits: TenantLimits {
            concurrent_sessions: 1,
            ..TenantLimits::default()
        },
        ..TaskConfig::default()
    });
    let a = h.approved(form_plan()).await;
    let b = h.create(form_plan()).await;
    let e = h
        .runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &b.task_id,
            &approval(&b),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("tenant_concurrency_limit", 429)
    );
    assert!(e.retry_after().is_some());
    let day = abr_core::limits::utc_day(h.clock.now());
    assert_eq!(
        h.store
            .count(T, &Counter::Executions { day })
            .await
            .unwrap(),
        1,
        "a refused approval counts no execution"
    );
    h.runner.run(T, &a.task_id).await.unwrap();
    h.runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &b.task_id,
            &approval(&b),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn retries_of_one_failed_execution_are_limited() {
    let h = h_with(TaskConfig {
        limits: TenantLimits {
            retries: 2,
            ..TenantLimits::default()
        },
        ..TaskConfig::default()
    });
    h.page.remove("#form");
    let mut record = h.run(form_plan()).await.record;
    let first = record.task_id.clone();
    assert_eq!(record.state, TaskState::Failed);
    for attempt in 1..=2 {
        let next = h
            .runner
            .retry(&checked(&agent(T), Right::Post), &record.task_id)
            .await
            .unwrap()
            .record;
        assert_eq!(next.retry_of.as_deref(), Some(first.as_str()));
        let e = h
            .runner
            .retry(&checked(&agent(T), Right::Post), &record.task_id)
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            "task_not_retryable",
            "attempt {attempt}: once per task"
        );
        h.runner
            .approve(
                &checked(&approver(T), Right::Approve),
                &next.task_id,
                &approval(&next),
            )
            .await
            .unwrap();
        record = h.runner.run(T, &next.task_id).await.unwrap().record;
        assert_eq!(record.state, TaskState::Failed);
    }
    let e = h
        .runner
        .retry(&checked(&agent(T), Right::Post), &record.task_id)
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("tenant_retry_limit", 429)
    );
    assert!(!e.is_retryable());
    assert_eq!(e.retry_after(), None);
    // Only failed tasks (or asserted uncertain ones) are retried.
    let pending = h.create(form_plan()).await;
    assert_eq!(
        h.runner
            .retry(&checked(&agent(T), Right::Post), &pending.task_id)
            .await
            .unwrap_err()
            .code(),
        "task_not_retryable"
    );
}

// ---- restart recovery -----------------------------------------------------------------------

#[tokio::test]
async fn recovery_ends_unfinished_tasks_honestly() {
    let h = h();
    let store = h.store.clone();
    // A task stopped after its click completed; one stopped before any committing step; one
    // stopped after marking a committing step started but before it reported; one queued;
    // one pending.
    let mut ids = Vec::new();
    for (results, marked) in [(3, false), (2, false), (2, true)] {
        let record = h.approved(form_plan()).await;
        let mut task = store.get(T, &record.task_id).await.unwrap().unwrap();
        task.record.state = TaskState::Running;
        task.record.started_at = Some(h.clock.now());
        task.ledger.marked = marked;
        for index in 0..results {
            task.record.step_results.push(abr_protocol::StepResult {
                index,
                action: "x".into(),
                ok: true,
                committing: index == 2,
                ms: 1,
                error: None,
                at: None,
                target: None,
                url: None,
                typed_chars: None,
            });
        }
        assert!(store.update(&task).await.unwrap());
        ids.push(record.task_id);
    }
    let queued = h.approved(form_plan()).await.task_id;
    let pending = h.create(form_plan()).await.task_id;
    assert_eq!(h.sessions_held().await, 4);

    // The restarted runner, on the same store.
    let provider: DynSessionProvider<FakeContext> = Arc::new(FakeProvider::new());
    let dyn_store: Arc<dyn TaskStore> = store.clone();
    let restarted = TaskRunner::new(provider, dyn_store);
    let ended = restarted.recover_unfinished().await.unwrap();
    assert_eq!(ended.len(), 4);
    let get = |id: &str| {
        let restarted = &restarted;
        let id = id.to_owned();
        async move { restarted.get(T, &id).await.unwrap() }
    };
    let clicked = get(&ids[0]).await;
    assert_eq!(
        (clicked.state, clicked.failed_step),
        (TaskState::Uncertain, Some(3))
    );
    assert_eq!(error_code(&clicked), task_codes::RUNNER_STOPPED);
    assert!(!clicked.error.unwrap().retryable);
    let early = get(&ids[1]).await;
    assert_eq!(
        (early.state, early.failed_step),
        (TaskState::Failed, Some(2))
    );
    assert!(early.error.unwrap().retryable);
    let marked = get(&ids[2]).await;
    assert_eq!(marked.state, TaskState::Uncertain, "started counts as ran");
    let never = get(&queued).await;
    assert_eq!((never.state, never.failed_step), (TaskState::Failed, None));
    assert!(never.finished_at.is_some());
    assert_eq!(get(&pending).await.state, TaskState::PendingApproval);
    assert_eq!(
        h.sessions_held().await,
        0,
        "no browser outlives the process"
    );
    // Recovered tasks do not run again; the failed ones may be retried.
    assert_eq!(
        restarted.run(T, &ids[0]).await.unwrap_err().code(),
        "task_not_queued"
    );
    restarted
        .retry(&checked(&agent(T), Right::Post), &ids[1])
        .await
        .unwrap();
    assert!(restarted.recover_unfinished().await.unwrap().is_empty());
}

// ---- the network below the page ------------------------------------------------------------

/// Open a page, press a harmless-looking "Show more" (a link: no committing form), then wait
/// for a text that never comes.
fn show_more_plan(read_only: bool) -> StepPlan {
    plan(json!({
        "targetUrl": "https://tool.example/feed",
        "steps": [
            {"type": "click", "selector": "#more", "description": "Show more"},
            {"type": "wait", "text": "Never shown", "timeoutMs": 200, "description": "Wait"}
        ],
        "verification": {"method": "dom_check", "text": "Done"},
        "risk": "low",
        "readOnly": read_only
    }))
}

fn harmless_link() -> abr_core::guard::ElementFacts {
    abr_core::guard::ElementFacts {
        tag: "a".into(),
        name: "Show more".into(),
        ..abr_core::guard::ElementFacts::default()
    }
}

#[tokio::test]
async fn a_write_the_page_sends_makes_the_task_uncertain_whatever_the_element_looked_like() {
    // The page's script posts to its own site when "Show more" is clicked.
    let h = h();
    h.page.set_facts("#more", harmless_link());
    h.page
        .request_on("#more", "POST", "https://api.tool.example/track");
    h.page.remove("text:Never shown");
    let end = h.run(show_more_plan(false)).await;
    let record = end.record;
    assert_eq!(
        h.page.sent(),
        [(
            "POST".to_owned(),
            "https://api.tool.example/track".to_owned()
        )]
    );
    assert_eq!(record.state, TaskState::Uncertain, "{:?}", record.error);
    assert!(
        !record.error.unwrap().retryable,
        "it may have happened: never retry"
    );
    assert!(
        record.step_results[0].committing,
        "the click's step sent the write"
    );
    let stored = h.store.get(T, &record.task_id).await.unwrap().unwrap();
    assert!(stored.ledger.marked, "marked before it left");

    // A third party's analytics post is not the task's: nothing it did may have committed.
    let h = self::h();
    h.page.set_facts("#more", harmless_link());
    h.page
        .request_on("#more", "POST", "https://analytics.other.net/collect");
    h.page.remove("text:Never shown");
    let record = h.run(show_more_plan(false)).await.record;
    assert_eq!(h.page.sent().len(), 1);
    assert_eq!(record.state, TaskState::Failed);
    assert!(record.error.unwrap().retryable);
    assert!(!record.step_results[0].committing);
}

#[tokio::test]
async fn a_write_that_reaches_the_gate_while_the_next_step_waits_is_the_clicks() {
    // The click's script posts a moment later: the post reaches the gate while the wait
    // that follows the click is running (and fails). A wait does not act: the write is the
    // click's, and the run may have acted.
    let h = h();
    h.page.set_facts("#more", harmless_link());
    h.page
        .request_on("#more", "POST", "https://api.tool.example/track");
    h.page.scripts_send_after(Duration::from_millis(60));
    h.page.fault_on("text:Never shown", FakeFault::Hang);
    let record = h.run(show_more_plan(false)).await.record;
    assert_eq!(h.page.sent().len(), 1, "the post left");
    assert_eq!(record.state, TaskState::Uncertain, "{:?}", record.error);
    assert!(!record.error.unwrap().retryable);
    let committing: Vec<bool> = record.step_results.iter().map(|r| r.committing).collect();
    assert_eq!(
        committing,
        [true, false],
        "the click sent it, the wait did not"
    );
}

#[tokio::test]
async fn a_read_only_task_sends_no_write_whatever_the_page_does() {
    let h = h();
    h.page.set_facts("#more", harmless_link());
    h.page.set_text("Done");
    for url in [
        "https://api.tool.example/track",
        "https://analytics.other.net/collect",
    ] {
        h.page.request_on("#more", "POST", url);
    }
    h.page
        .request_on("#more", "GET", "https://tool.example/more?page=2");
    let record = h.run(show_more_plan(true)).await.record;
    assert_eq!(
        h.page.sent(),
        [(
            "GET".to_owned(),
            "https://tool.example/more?page=2".to_owned()
        )],
        "only the read left the browser"
    );
    assert_eq!(h.page.refused_requests().len(), 2);
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(error_code(&record), task_codes::BLOCKED_ACTION);
    let blocked: Vec<_> = record
        .blocked
        .iter()
        .map(|b| (b.class, b.method.clone(), b.host.clone(), b.step))
        .collect();
    assert_eq!(
        blocked,
        [
            (
                CommitClass::NetworkWrite,
                Some("POST".into()),
                Some("api.tool.example".into()),
                Some(0)
            ),
            (
                CommitClass::NetworkWrite,
                Some("POST".into()),
                Some("analytics.other.net".into()),
                Some(0)
            ),
        ]
    );
    assert!(!record.step_results[0].ok);
    assert!(
        !h.store
            .get(T, &record.task_id)
            .await
            .unwrap()
            .unwrap()
            .ledger
            .marked
    );
}

#[tokio::test]
async fn a_runner_stopped_after_a_write_left_recovers_the_task_uncertain() {
    let h = h();
    h.page.set_facts("#more", harmless_link());
    h.page
        .request_on("#more", "POST", "https://tool.example/api/like");
    h.page.fault_on("text:Never shown", FakeFault::Hang);
    let record = h.approved(show_more_plan(false)).await;
    // The runner dies while the next step hangs, after the page's write left.
    let run = h.runner.run(T, &record.task_id);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), run)
            .await
            .is_err()
    );
    assert_eq!(h.page.sent().len(), 1);
    let provider: DynSessionProvider<FakeContext> = Arc::new(FakeProvider::new());
    let dyn_store: Arc<dyn TaskStore> = h.store.clone();
    let restarted = TaskRunner::new(provider, dyn_store);
    restarted.recover_unfinished().await.unwrap();
    let recovered = restarted.get(T, &record.task_id).await.unwrap();
    assert_eq!(recovered.state, TaskState::Uncertain);
    assert!(!recovered.error.unwrap().retryable);
}

#[tokio::test]
async fn a_write_that_cannot_be_announced_never_leaves() {
    struct Gone;
    #[async_trait]
    impl crate::commit_watch::CommitHook for Gone {
        async fn committing(&self) -> Result<(), crate::commit_watch::CommitRefused> {
            Err(crate::commit_watch::CommitRefused("the hub is gone".into()))
        }
    }
    let h = h();
    h.page.set_facts("#more", harmless_link());
    h.page
        .request_on("#more", "POST", "https://tool.example/api/like");
    let record = h.approved(show_more_plan(false)).await;
    let watch = crate::commit_watch::CommitWatch::new(Arc::new(Gone));
    let end = crate::commit_watch::scope(watch, h.runner.run(T, &record.task_id))
        .await
        .unwrap();
    assert!(h.page.sent().is_empty(), "the write was held, then refused");
    assert_eq!(end.record.state, TaskState::Failed);
    assert!(end.record.error.unwrap().retryable, "nothing was done");
    assert!(
        !h.store
            .get(T, &record.task_id)
            .await
            .unwrap()
            .unwrap()
            .ledger
            .marked
    );
}

// ---- audit ----------------------------------------------------------------------------------

#[tokio::test]
async fn audit_events_carry_steps_and_approver_but_never_values() {
    let h = h();
    h.page.text_after(SUBMIT, "Saved");
    h.page
        .extract_result("#users", json!([{"email": "row-canary@example.com"}]));
    let end = h.run(form_plan()).await;
    assert_eq!(end.record.state, TaskState::Succeeded);
    settle().await;
    let events = h.audit.events();
    let actions: Vec<AuditAction> = events.iter().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            AuditAction::TaskCreated,
            AuditAction::TaskApproved,
            AuditAction::TaskRun
        ]
    );
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains("canary"), "{all}");
    let run = &events[2];
    assert_eq!(run.task_id.as_deref(), Some(end.record.task_id.as_str()));
    assert_eq!(run.proposal_id.as_deref(), Some("prop-1"));
    assert_eq!(run.approved_by.as_deref(), Some("alice"));
    assert_eq!(run.workspace_id.as_deref(), Some(T));
    assert_eq!(run.executed_at, end.record.started_at);
    assert_eq!(run.screenshots.as_deref(), Some(&["step-5".to_owned()][..]));
    let steps = run.steps.as_ref().unwrap();
    assert_eq!(steps.len(), 6);
    assert_eq!(
        (steps[2].action.as_str(), steps[2].description.as_str()),
        ("click", "Submit the form")
    );
    let json = serde_json::to_value(run).unwrap();
    assert_eq!(json["outcome"], "ok");
    assert_eq!(json["steps"][0]["action"], "type");
}

// ---- the property -----------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Create { committing: bool },
    Approve { task: usize, right_hash: bool },
    Reject { task: usize },
    Run { task: usize },
    RunTwice { task: usize },
    Recheck { task: usize },
    Assert { task: usize },
    Retry { task: usize },
    FaultClick { task: usize },
    FaultVerify { task: usize },
    SignOut(bool),
    Recover,
}

fn op() -> impl Strategy<Value = Op> {
    let task = 0..8usize;
    prop_oneof![
        3 => any::<bool>().prop_map(|committing| Op::Create { committing }),
        3 => (task.clone(), any::<bool>()).prop_map(|(task, right_hash)| Op::Approve { task, right_hash }),
        1 => task.clone().prop_map(|task| Op::Reject { task }),
        3 => task.clone().prop_map(|task| Op::Run { task }),
        2 => task.clone().prop_map(|task| Op::RunTwice { task }),
        1 => task.clone().prop_map(|task| Op::Recheck { task }),
        2 => task.clone().prop_map(|task| Op::Assert { task }),
        2 => task.clone().prop_map(|task| Op::Retry { task }),
        1 => task.clone().prop_map(|task| Op::FaultClick { task }),
        1 => task.prop_map(|task| Op::FaultVerify { task }),
        1 => any::<bool>().prop_map(Op::SignOut),
        1 => Just(Op::Recover),
    ]
}

/// Chain `k`'s plan: committing (type, click, wait; verified by the text the click shows)
/// or read-only (extract; verified by the element).
fn chain_plan(k: usize, committing: bool) -> StepPlan {
    if committing {
        plan(json!({
            "targetUrl": format!("https://tool.example/{k}"),
            "steps": [
                {"type": "type", "selector": format!("#in-{k}"), "value": "v", "description": "Type"},
                {"type": "click", "selector": format!("#go-{k}"), "description": "Go"},
                {"type": "wait", "text": format!("done-{k}"), "description": "Wait"}
            ],
            "verification": {"method": "dom_check", "text": format!("done-{k}")}
        }))
    } else {
        plan(json!({
            "targetUrl": format!("https://tool.example/{k}"),
            "steps": [
                {"type": "extract", "name": "d", "kind": "text", "selector": format!("#data-{k}"), "description": "Read"}
            ],
            "verification": {"method": "dom_check", "selector": format!("#data-{k}")}
        }))
    }
}

fn pick(tasks: &[(String, usize)], i: usize) -> Option<(String, usize)> {
    (!tasks.is_empty()).then(|| tasks[i % tasks.len()].clone())
}

async fn check_sequence(rule: ApprovalRule, ops: Vec<Op>) {
    let h = h_with(TaskConfig {
        approval: rule,
        limits: TenantLimits {
            concurrent_sessions: 1000,
            daily_executions: 1000,
            retries: 5,
        },
        ..TaskConfig::default()
    });
    let runner = &h.runner;
    // (task id, chain), and each chain's kind.
    let mut tasks: Vec<(String, usize)> = Vec::new();
    let mut chains: Vec<bool> = Vec::new();
    let mut approved_by_call: HashSet<String> = HashSet::new();
    let mut runs: HashMap<String, usize> = HashMap::new();
    for op in ops {
        let pick = |i: usize| pick(&tasks, i);
        match op {
            Op::Create { committing } => {
                let k = chains.len();
                chains.push(committing);
                h.page.text_after(&format!("#go-{k}"), &format!("done-{k}"));
                if let Ok(created) = runner
                    .create(
                        &checked(&agent(T), Right::Propose),
                        request(chain_plan(k, committing)),
                        None,
                    )
                    .await
                {
                    tasks.push((created.record.task_id, k));
                }
            }
            Op::Approve { task, right_hash } => {
                let Some((id, _)) = pick(task) else { continue };
                let record = runner.get(T, &id).await.unwrap();
                let hash = if right_hash {
                    record.plan_hash.clone()
                } else {
                    "0".repeat(64)
                };
                let result = runner
                    .approve(
                        &checked(&approver(T), Right::Approve),
                        &id,
                        &ApproveRequest {
                            approved_by: Some("alice".into()),
                            plan_hash: hash,
                        },
                    )
                    .await;
                if result.is_ok() {
                    assert!(right_hash, "a wrong hash was approved");
                    assert!(approved_by_call.insert(id), "approved twice");
                }
            }
            Op::Reject { task } => {
                let Some((id, _)) = pick(task) else { continue };
                let _ = runner
                    .reject(
                        &checked(&approver(T), Right::Approve),
                        &id,
                        &RejectRequest {
                            rejected_by: Some("bob".into()),
                            reason: None,
                        },
                    )
                    .await;
            }
            Op::Run { task } => {
                let Some((id, _)) = pick(task) else { continue };
                if runner.run(T, &id).await.is_ok() {
                    *runs.entry(id).or_default() += 1;
                }
            }
            Op::RunTwice { task } => {
                let Some((id, _)) = pick(task) else { continue };
                let (a, b) = tokio::join!(runner.run(T, &id), runner.run(T, &id));
                let ok = usize::from(a.is_ok()) + usize::from(b.is_ok());
                *runs.entry(id).or_default() += ok;
            }
            Op::Recheck { task } => {
                let Some((id, _)) = pick(task) else { continue };
                let _ = runner.recheck(T, &id).await;
            }
            Op::Assert { task } => {
                let Some((id, _)) = pick(task) else { continue };
                let _ = runner
                    .assert_not_posted(
                        T,
                        &id,
                        &AssertNotPostedRequest {
                            asserted_by: "owner".into(),
                            note: None,
                        },
                    )
                    .await;
            }
            Op::Retry { task } => {
                let Some((id, k)) = pick(task) else { continue };
                if let Ok(created) = runner.retry(&checked(&agent(T), Right::Post), &id).await {
                    tasks.push((created.record.task_id, k));
                }
            }
            Op::FaultClick { task } => {
                let Some((_, k)) = pick(task) else { continue };
                h.page.fault_on(
                    &format!("#go-{k}"),
                    FakeFault::Fail(StepFailureKind::Crashed),
                );
            }
            Op::FaultVerify { task } => {
                let Some((_, k)) = pick(task) else { continue };
                h.page.fault_on(
                    &format!("text:done-{k}"),
                    FakeFault::Fail(StepFailureKind::NotFound),
                );
            }
            Op::SignOut(out) => h.page.sign_out(out),
            Op::Recover => {
                runner.recover_unfinished().await.unwrap();
            }
        }
    }

    let chain_of: HashMap<String, usize> = tasks.iter().cloned().collect();
    let stored = h.store.all();
    for task in &stored {
        let r = &task.record;
        assert!(
            r.step_results.windows(2).all(|w| w[0].index < w[1].index),
            "a step ran twice in {r:?}"
        );
        assert!(
            runs.get(&r.task_id).copied().unwrap_or(0) <= 1,
            "ran twice: {r:?}"
        );
        let ran = r.started_at.is_some() || !r.step_results.is_empty();
        if ran {
            let by = &r
                .approval
                .as_ref()
                .expect("ran without an approval")
                .approved_by;
            if by.starts_with("auto:") {
                assert_ne!(rule, ApprovalRule::All, "auto-approved under `all`");
            } else {
                assert!(approved_by_call.contains(&r.task_id), "approved by nobody");
            }
            // What ran is what the approval bound: the plan, its values, its session.
            let shown = shown_inputs(&task.request.inputs, &task.request.secret_inputs).unwrap();
            assert_eq!(
                r.plan_hash,
                approval_hash(&task.request, &shown, r.account.as_ref(), None)
            );
        }
        if r.state == TaskState::Rejected {
            assert!(!ran);
        }
    }
    // Every browser action of a step belongs to a recorded step of one run of an approved
    // task of its chain: nothing ran unrecorded, nothing ran twice.
    let actions = h.page.actions();
    for (k, committing) in chains.iter().enumerate() {
        let markers: Vec<(usize, String, &str)> = if *committing {
            vec![
                (0, format!("#in-{k}"), "type"),
                (1, format!("#go-{k}"), "click"),
            ]
        } else {
            vec![(0, format!("#data-{k}"), "extract")]
        };
        for (index, key, kind) in markers {
            let performed = actions
                .iter()
                .filter(|a| a.kind() == kind && action_key(a) == key)
                .count();
            let recorded: usize = stored
                .iter()
                .filter(|t| chain_of.get(&t.record.task_id) == Some(&k))
                .map(|t| {
                    t.record
                        .step_results
                        .iter()
                        .filter(|s| s.index == index)
                        .count()
                })
                .sum();
            assert_eq!(performed, recorded, "chain {k} step {index}");
        }
    }
    assert_eq!(h.provider.open_leases(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_sequence_of_operations_runs_an_unapproved_plan_or_an_approved_plan_twice(
        rule in prop_oneof![
            Just(ApprovalRule::All),
            Just(ApprovalRule::CommittingOrRisky),
            Just(ApprovalRule::Off),
        ],
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(check_sequence(rule, ops));
    }
}

// ---- approval previews ----------------------------------------------------------------------

#[tokio::test]
async fn a_waiting_plan_is_previewed_by_a_dry_run_up_to_its_first_commit() {
    let h = h_with(TaskConfig {
        plan_previews: abr_core::approval::PlanPreviews::All,
        ..TaskConfig::default()
    });
    h.page.set_facts(
        "#email",
        abr_core::guard::ElementFacts {
            tag: "input".into(),
            input_type: Some("email".into()),
            name: "Email".into(),
            ..abr_core::guard::ElementFacts::default()
        },
    );
    h.page.set_box(
        SUBMIT,
        abr_core::guard::ElementBox {
            x: 10.0,
            y: 20.0,
            width: 80.0,
            height: 30.0,
        },
    );
    let record = h.create(form_plan()).await;
    assert_eq!(record.state, TaskState::PendingApproval);
    let preview = record.preview.clone().unwrap_or_else(|| {
        panic!("a preview: {:?}", record.preview_note);
    });
    assert_eq!(
        preview.image,
        format!("/v1/tasks/{}/screenshots/approval-preview", record.task_id)
    );
    assert_eq!(
        preview.outline,
        Some(abr_protocol::PreviewBox {
            x: 10,
            y: 20,
            width: 80,
            height: 30
        }),
        "the submit, the first step that commits"
    );
    assert_eq!(record.preview_note, None);
    // The dry run typed the email (nothing committing) and stopped before the click.
    let actions = h.page.actions();
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, BrowserAction::Type { .. })),
        "{actions:?}"
    );
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, BrowserAction::Click { .. })),
        "the commit never ran: {actions:?}"
    );
    assert!(h.page.sent().is_empty(), "nothing left the browser");
    assert_eq!(
        h.provider.acquired(),
        h.provider.released(),
        "its browser released"
    );
    assert!(
        record.step_results.is_empty(),
        "the task itself ran nothing"
    );
    assert!(
        h.store
            .screenshot(T, &record.task_id, "approval-preview")
            .await
            .unwrap()
            .is_some(),
        "the image is kept as the task's screenshot"
    );

    // Approved, the task runs as any other: the submit now commits.
    let record = h
        .runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &record.task_id,
            &approval(&record),
        )
        .await
        .unwrap();
    h.page.text_after(SUBMIT, "Saved");
    let end = h.runner.run(T, &record.task_id).await.unwrap();
    assert_eq!(
        end.record.state,
        TaskState::Succeeded,
        "{:?}",
        end.record.error
    );
}

#[tokio::test]
async fn previews_are_off_by_default() {
    let h = h();
    let record = h.create(form_plan()).await;
    assert_eq!((record.preview, record.preview_note), (None, None));
    assert_eq!(h.provider.acquired(), 0, "no browser for a plan proposed");
}
