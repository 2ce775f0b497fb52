//! Named profiles on fakes: the owner consents once per profile and tenant (a refusal stops
//! every run before a browser opens it); a committing press on a profile never signed in
//! to the site pauses `login_required` before anything is pressed; the person's sign-in is
//! recorded by cookie name and expiry only, and later runs reuse it until a recorded cookie
//! expires or is gone.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;
use std::time::Duration;

use abr_core::guard::{InMemoryProfileStore, ProfileDecision, ProfileStore, profile_folder};
use abr_core::principal::Right;
use abr_core::store::{InMemoryStore, TaskStore};
use abr_core::testing::{FakeContext, FakePage, FakeProvider};
use abr_core::{DynSessionProvider, guard::ElementFacts};
use abr_protocol::{
    AgentSessionState, ApproveRequest, Cookie, CookieFact, PauseReason, ProfileSignIn,
    SiteDecision, TaskRecord, TaskRequest, TaskState,
};
use serde_json::json;

use super::{agent, approver, checked};
use crate::error::EngineError;
use crate::task::runner::TaskRunner;

const T: &str = "tenant-a";

struct H {
    provider: Arc<FakeProvider>,
    page: Arc<FakePage>,
    profiles: Arc<InMemoryProfileStore>,
    runner: Arc<TaskRunner<FakeContext>>,
}

fn h() -> H {
    let provider = Arc::new(FakeProvider::new().with_profiles());
    let page = provider.page();
    page.set_facts(
        "#q",
        ElementFacts {
            tag: "input".into(),
            input_type: Some("search".into()),
            name: "Search".into(),
            ..ElementFacts::default()
        },
    );
    page.set_facts(
        "#pay",
        ElementFacts {
            tag: "button".into(),
            input_type: Some("button".into()),
            name: "Pay now".into(),
            ..ElementFacts::default()
        },
    );
    page.text_after("#pay", "Paid");
    let profiles = Arc::new(InMemoryProfileStore::default());
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryStore::default());
    let runner = TaskRunner::new(dyn_provider, store).with_profiles(profiles.clone());
    H {
        provider,
        page,
        profiles,
        runner: Arc::new(runner),
    }
}

fn request(profile: &str, handoff: Option<u64>) -> TaskRequest {
    let mut body = json!({
        "plan": {
            "targetUrl": "https://shop.example/cart",
            "steps": [
                {"type": "type", "selector": "#q", "value": "shoes", "description": "Search", "timeoutMs": 200},
                {"type": "click", "selector": "#pay", "description": "Pay", "timeoutMs": 200}
            ],
            "verification": {"method": "dom_check", "text": "Paid"}
        },
        "profile": profile
    });
    if let Some(wait) = handoff {
        body["handoff"] = json!({"waitSeconds": wait});
    }
    serde_json::from_value(body).unwrap()
}

async fn decide(h: &H, tenant: &str, profile: &str, decision: SiteDecision) {
    h.profiles
        .decide(
            tenant,
            profile,
            ProfileDecision {
                decision,
                decided_by: "owner".into(),
                decided_by_key: Some("key_owner".into()),
                decided_at: time::OffsetDateTime::now_utc(),
            },
        )
        .await
        .unwrap();
}

async fn create(h: &H, tenant: &str, request: TaskRequest) -> Result<String, EngineError> {
    let created = h
        .runner
        .create(&checked(&agent(tenant), Right::Propose), request, None)
        .await?;
    let id = created.record.task_id.clone();
    h.runner
        .approve(
            &checked(&approver(tenant), Right::Approve),
            &id,
            &ApproveRequest {
                approved_by: Some("alice".into()),
                plan_hash: created.record.plan_hash.clone(),
            },
        )
        .await
        .unwrap();
    Ok(id)
}

async fn run(h: &H, request: TaskRequest) -> TaskRecord {
    let id = create(h, T, request).await.unwrap();
    h.runner.run(T, &id).await.unwrap().record
}

fn signed_in(expires: f64) -> AgentSessionState {
    let mut sid = Cookie::new("sid", "session-secret-value", "shop.example");
    sid.expires = expires;
    AgentSessionState {
        cookies: vec![sid, Cookie::new("theme", "dark", "shop.example")],
        ..AgentSessionState::default()
    }
}

fn now() -> f64 {
    time::OffsetDateTime::now_utc().unix_timestamp() as f64
}

async fn wait_paused(h: &H, id: &str) -> TaskRecord {
    for _ in 0..400 {
        let record = h.runner.get(T, id).await.unwrap();
        if record.state == TaskState::Paused {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never paused");
}

#[tokio::test]
async fn a_profile_needs_its_owners_consent_once_per_tenant_and_a_refusal_stops_every_run() {
    let h = h();
    let asked = create(&h, T, request("jobs", None)).await.unwrap_err();
    assert_eq!(asked.to_body().code, "consent_required");
    let entry = h.profiles.profile(T, "jobs").await.unwrap().unwrap();
    let first_ask = entry.asked_at.expect("the owner was asked");
    assert_eq!(entry.decision, None);
    // Asked once: a second request waits for the same decision.
    let again = create(&h, T, request("jobs", None)).await.unwrap_err();
    assert_eq!(again.to_body().code, "consent_required");
    let entry = h.profiles.profile(T, "jobs").await.unwrap().unwrap();
    assert_eq!(entry.asked_at, Some(first_ask));

    decide(&h, T, "jobs", SiteDecision::Deny).await;
    let refused = create(&h, T, request("jobs", None)).await.unwrap_err();
    assert_eq!(refused.to_body().code, "consent_refused");
    assert_eq!(h.provider.acquired(), 0, "no browser opened the profile");

    // Allowed for this tenant; another tenant naming the same profile is asked itself.
    decide(&h, T, "jobs", SiteDecision::Allow).await;
    let id = create(&h, T, request("jobs", None)).await.unwrap();
    let other = create(&h, "tenant-b", request("jobs", None))
        .await
        .unwrap_err();
    assert_eq!(other.to_body().code, "consent_required");

    // Declined between the approval and the run: the run opens nothing.
    decide(&h, T, "jobs", SiteDecision::Deny).await;
    let record = h.runner.run(T, &id).await.unwrap().record;
    assert_eq!(record.state, TaskState::Failed);
    assert_eq!(record.error.unwrap().code, "consent_refused");
    assert_eq!(h.provider.acquired(), 0);
    assert_eq!(h.page.clicks_on("#pay"), 0);
}

#[tokio::test]
async fn a_profile_is_not_a_session_and_needs_a_runner_that_keeps_profiles() {
    let h = h();
    decide(&h, T, "jobs", SiteDecision::Allow).await;
    let mut both = request("jobs", None);
    both.session = Some(signed_in(now() + 3600.0));
    let refused = create(&h, T, both).await.unwrap_err();
    assert_eq!(refused.to_body().code, "invalid_request");
    let refused = create(&h, T, request("../etc", None)).await.unwrap_err();
    assert_eq!(refused.to_body().code, "invalid_request");

    let provider = Arc::new(FakeProvider::new());
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryStore::default());
    let without = TaskRunner::new(dyn_provider, store);
    let refused = without
        .create(
            &checked(&agent(T), Right::Propose),
            request("jobs", None),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.to_body().code, "unsupported");
}

#[tokio::test]
async fn a_press_waits_for_a_sign_in_which_is_recorded_by_name_and_reused_until_it_expires() {
    let h = h();
    decide(&h, T, "jobs", SiteDecision::Allow).await;
    let folder = profile_folder(T, "jobs").unwrap();

    // Never signed in, no handoff: the run stops before the press.
    let record = run(&h, request("jobs", None)).await;
    assert_eq!(record.state, TaskState::Failed);
    let error = record.error.unwrap();
    assert_eq!(error.code, "login_required");
    assert!(
        error.message.contains("never signed in"),
        "{}",
        error.message
    );
    assert_eq!(h.page.clicks_on("#pay"), 0);
    assert_eq!(h.provider.profiles_opened(), std::slice::from_ref(&folder));

    // With a handoff it pauses there; the person signs in; the press goes on.
    let id = create(&h, T, request("jobs", Some(60))).await.unwrap();
    let runner = Arc::clone(&h.runner);
    let task_id = id.clone();
    let join = tokio::spawn(async move { runner.run(T, &task_id).await.unwrap().record });
    let paused = wait_paused(&h, &id).await;
    assert_eq!(paused.pause.unwrap().reason, PauseReason::LoginRequired);
    assert_eq!(
        h.page.clicks_on("#pay"),
        0,
        "nothing pressed before the sign-in"
    );
    let context = h.provider.context(2).unwrap();
    context.set_state(signed_in(now() + 3600.0));
    h.runner.resume(T, &id, "person").await.unwrap();
    let record = join.await.unwrap();
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(h.page.clicks_on("#pay"), 1);
    let entry = h.profiles.profile(T, "jobs").await.unwrap().unwrap();
    let sign_in = entry
        .sign_in("shop.example")
        .expect("the sign-in was recorded");
    let names: Vec<_> = sign_in.cookies.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["sid", "theme"], "what the sign-in set");
    let kept = serde_json::to_string(&entry).unwrap();
    assert!(!kept.contains("session-secret-value") && !kept.contains("dark"));
    assert!(
        h.provider.profile_state(&folder).unwrap().cookies.len() == 2,
        "the profile keeps its sign-in"
    );

    // The next run reuses it: no pause.
    let record = run(&h, request("jobs", None)).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    assert_eq!(h.page.clicks_on("#pay"), 2);

    // The recorded cookie expired: the press waits again.
    h.profiles
        .record_sign_in(
            T,
            "jobs",
            ProfileSignIn {
                site: "shop.example".into(),
                cookies: vec![CookieFact {
                    name: "sid".into(),
                    domain: "shop.example".into(),
                    expires: Some(now() - 10.0),
                    expired: false,
                }],
                recorded_at: time::OffsetDateTime::now_utc(),
            },
        )
        .await
        .unwrap();
    let record = run(&h, request("jobs", None)).await;
    assert_eq!(record.state, TaskState::Failed);
    let error = record.error.unwrap();
    assert_eq!(error.code, "login_required");
    assert!(error.message.contains("`sid` expired"), "{}", error.message);
    assert_eq!(h.page.clicks_on("#pay"), 2);

    // The site dropped it from the profile: gone, the press waits.
    h.provider.set_profile_state(
        &folder,
        AgentSessionState {
            cookies: vec![Cookie::new("theme", "dark", "shop.example")],
            ..AgentSessionState::default()
        },
    );
    h.profiles
        .record_sign_in(
            T,
            "jobs",
            ProfileSignIn {
                site: "shop.example".into(),
                cookies: vec![CookieFact {
                    name: "sid".into(),
                    domain: "shop.example".into(),
                    expires: Some(now() + 3600.0),
                    expired: false,
                }],
                recorded_at: time::OffsetDateTime::now_utc(),
            },
        )
        .await
        .unwrap();
    let record = run(&h, request("jobs", None)).await;
    assert_eq!(record.error.unwrap().code, "login_required");
    assert_eq!(h.page.clicks_on("#pay"), 2);
}

#[tokio::test]
async fn a_browse_session_on_a_profile_asks_its_owner_and_checks_the_sign_in_before_it_commits() {
    let h = h();
    let runner = TaskRunner::new(
        h.provider.clone() as DynSessionProvider<FakeContext>,
        Arc::new(InMemoryStore::default()) as Arc<dyn TaskStore>,
    )
    .with_profiles(h.profiles.clone())
    .with_config(crate::task::runner::TaskConfig {
        approval: abr_core::approval::ApprovalRule::Off,
        ..crate::task::runner::TaskConfig::default()
    });
    let request: abr_protocol::BrowseRequest = serde_json::from_value(json!({
        "url": "https://shop.example/cart",
        "profile": "jobs"
    }))
    .unwrap();
    let browse = |request| {
        let runner = &runner;
        async move {
            runner
                .browse_open(&checked(&agent(T), Right::Browse), request)
                .await
        }
    };
    let asked = browse(request.clone()).await.unwrap_err();
    assert_eq!(asked.to_body().code, "consent_required");
    decide(&h, T, "jobs", SiteDecision::Deny).await;
    let refused = browse(request.clone()).await.unwrap_err();
    assert_eq!(refused.to_body().code, "consent_refused");
    assert_eq!(h.provider.acquired(), 0, "nothing opened the profile");

    decide(&h, T, "jobs", SiteDecision::Allow).await;
    let opened = browse(request).await.unwrap();
    let pay = opened
        .first
        .snapshot
        .elements
        .iter()
        .find(|e| e.name == "Pay now")
        .map(|e| e.reference.clone())
        .unwrap();
    let answer = runner
        .browse_act(
            T,
            &opened.browse_id,
            abr_protocol::BrowseAction::Click { reference: pay },
        )
        .await
        .unwrap();
    // Without a handoff the pause is reported and the brain decides; nothing was pressed.
    assert_eq!(
        answer.outcome,
        abr_protocol::ActOutcome::Paused,
        "{answer:?}"
    );
    let pause = answer.pause.unwrap();
    assert_eq!(pause.reason, PauseReason::LoginRequired);
    assert!(
        pause.message.contains("never signed in"),
        "{}",
        pause.message
    );
    assert_eq!(h.page.clicks_on("#pay"), 0, "nothing pressed");
    assert_eq!(
        h.provider.profiles_opened(),
        [profile_folder(T, "jobs").unwrap()]
    );
}

#[tokio::test]
async fn a_run_refreshes_the_recorded_expiry_from_the_profile() {
    let h = h();
    decide(&h, T, "jobs", SiteDecision::Allow).await;
    let folder = profile_folder(T, "jobs").unwrap();
    let later = now() + 7200.0;
    h.provider.set_profile_state(&folder, signed_in(later));
    h.profiles
        .record_sign_in(
            T,
            "jobs",
            ProfileSignIn {
                site: "shop.example".into(),
                cookies: vec![CookieFact {
                    name: "sid".into(),
                    domain: "shop.example".into(),
                    expires: Some(now() + 60.0),
                    expired: false,
                }],
                recorded_at: time::OffsetDateTime::UNIX_EPOCH,
            },
        )
        .await
        .unwrap();
    let record = run(&h, request("jobs", None)).await;
    assert_eq!(record.state, TaskState::Succeeded, "{:?}", record.error);
    let entry = h.profiles.profile(T, "jobs").await.unwrap().unwrap();
    let sign_in = entry.sign_in("shop.example").unwrap();
    assert_eq!(
        sign_in.cookies[0].expires,
        Some(later),
        "the site's extension kept"
    );
    assert!(sign_in.recorded_at > time::OffsetDateTime::UNIX_EPOCH);
}
