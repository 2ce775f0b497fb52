//! PostJournal: "never twice" for posts. A repeated idempotency key answers the original
//! (also while it runs), an uncertain post is never posted again unless its owner asserts
//! it was not (once), re-checks change only what they document, a restart ends running
//! posts honestly, stored sessions are loaded and written back.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]
use std::sync::Arc;
use std::time::Duration;

use crate::error::EngineError;
use crate::poster::AgentPoster;
use crate::posts::{PostJournal, PostReply, Posted};
use crate::stored_sessions::StoredSessions;
use abr_core::store::{InMemoryPostStore, LedgerHeader, RecordStore, StoredPost};
use abr_core::testing::{FakeContext, FakeProvider, Script, ScriptedStrategy, StrategyScript};
use abr_core::{
    AuditAction, AuditOutcome, Auditor, CoreError, InMemorySessionStore, MemoryAuditSink,
    RecheckOutcome, SessionKey, SessionStore, StrategyError, StrategyRegistry, VerifyOutcome,
};
use abr_protocol::{
    AgentPostResult, AgentSessionState, AssertNotPostedRequest, Cookie, FailureStage,
    PlatformPolicy, PostContent, PostOutcome, PostRecord, PostRequest, PostState, RecheckAnswer,
    SecretValue, SessionScopeSpec, Verification, VerificationEvidence, VerificationMethod,
};

const PLATFORM: &str = "fake";
const T: &str = "tenant-a";

fn policy() -> PlatformPolicy {
    PlatformPolicy {
        session: Some(SessionScopeSpec {
            cookie_domains: vec!["example.com".into()],
            origins: vec![],
        }),
        ..PlatformPolicy::default()
    }
}

fn session() -> AgentSessionState {
    AgentSessionState {
        cookies: vec![Cookie::new("sid", "canary-cookie-value", ".example.com")],
        ..AgentSessionState::default()
    }
}

fn request(text: &str) -> PostRequest {
    PostRequest {
        platform: PLATFORM.into(),
        session: session(),
        session_id: None,
        content: PostContent::text(text),
        workspace_id: Some("ws-1".into()),
        account_id: Some("acct-1".into()),
        scope: None,
    }
}

fn stored_request(session_id: &str) -> PostRequest {
    PostRequest {
        session: AgentSessionState::default(),
        session_id: Some(session_id.into()),
        ..request("via a stored session")
    }
}

struct H {
    provider: Arc<FakeProvider>,
    strategy: Arc<ScriptedStrategy>,
    store: Arc<InMemoryPostStore>,
    sessions: Arc<InMemorySessionStore>,
    audit: Arc<MemoryAuditSink>,
    journal: Arc<PostJournal<FakeContext>>,
}

fn h(script: StrategyScript) -> H {
    let provider = Arc::new(FakeProvider::new());
    let strategy = Arc::new(ScriptedStrategy::new(PLATFORM, &policy()).with_script(script));
    let mut registry = StrategyRegistry::new();
    registry.register(strategy.clone()).unwrap();
    let poster = Arc::new(AgentPoster::new(provider.clone(), Arc::new(registry)));
    let store = Arc::new(InMemoryPostStore::new());
    let sessions = Arc::new(InMemorySessionStore::new());
    let audit = Arc::new(MemoryAuditSink::new());
    let journal = PostJournal::new(
        poster,
        store.clone(),
        SecretValue::new("runner-secret-for-body-hashes"),
    )
    .with_sessions(StoredSessions::new(
        sessions.clone(),
        Arc::new(abr_core::SystemClock),
    ))
    .with_audit(Auditor::new(audit.clone(), Duration::from_secs(1)));
    H {
        provider,
        strategy,
        store,
        sessions,
        audit,
        journal: Arc::new(journal),
    }
}

fn uncertain_script() -> StrategyScript {
    StrategyScript {
        verify: Script::Return(VerifyOutcome::Unconfirmed {
            detail: "no toast".into(),
        }),
        ..StrategyScript::default()
    }
}

fn result(posted: &Posted) -> &AgentPostResult {
    match &posted.reply {
        PostReply::Result(r) => r,
        PostReply::Record(r) => panic!("a record, not a result: {r:?}"),
    }
}

fn post_id(posted: &Posted) -> String {
    result(posted)
        .post_id
        .clone()
        .expect("the result names its post")
}

async fn post(h: &H, key: Option<&str>, req: PostRequest) -> Result<Posted, EngineError> {
    h.journal.post(T, key, req).await
}

#[tokio::test]
async fn a_repeated_key_answers_the_original_and_posts_once() {
    let h = h(StrategyScript::default());
    let first = post(&h, Some("k1"), request("hello")).await.unwrap();
    assert!(!first.replayed);
    let r1 = result(&first);
    assert!(r1.ok, "{r1:?}");
    assert!(r1.refreshed_session.is_some(), "the call that ran gets it");
    let id = post_id(&first);

    let again = post(&h, Some("k1"), request("hello")).await.unwrap();
    assert!(again.replayed);
    let r2 = result(&again);
    assert_eq!(r2.post_id.as_deref(), Some(id.as_str()));
    assert!(r2.ok);
    assert_eq!(r2.verification, r1.verification);
    assert!(
        r2.refreshed_session.is_none(),
        "a replay carries no credential"
    );
    assert_eq!(h.strategy.submits(), 1, "posted once");
    assert_eq!(h.provider.acquired(), 1);

    // The record: succeeded, with the result, without the session or the content.
    let record = h.journal.get(T, &id).await.unwrap();
    assert_eq!(record.state, PostState::Succeeded);
    assert!(record.finished_at.is_some());
    assert!(record.result.as_ref().unwrap().refreshed_session.is_none());
    let json = serde_json::to_string(&record).unwrap();
    assert!(
        !json.contains("canary-cookie-value") && !json.contains("hello"),
        "{json}"
    );
    // A succeeded post keeps no request (content, session).
    assert!(h.store.all().iter().all(|p| p.request.is_none()));
    // Without a key, every call posts.
    post(&h, None, request("hello")).await.unwrap();
    assert_eq!(h.strategy.submits(), 2);
    tokio::time::sleep(Duration::from_millis(50)).await; // audit delivery is spawned
    assert!(
        h.audit
            .events()
            .iter()
            .any(|e| e.action == AuditAction::PostReplayed && e.post_id.as_deref() == Some(&id))
    );
}

#[tokio::test]
async fn a_replayed_uncertain_post_is_audited_as_uncertain_not_ok() {
    let h = h(uncertain_script());
    let first = post(&h, Some("k-u"), request("hello")).await.unwrap();
    assert_eq!(result(&first).outcome(), PostOutcome::Uncertain);
    let id = post_id(&first);
    let again = post(&h, Some("k-u"), request("hello")).await.unwrap();
    assert!(again.replayed);
    assert_eq!(h.strategy.submits(), 1, "posted once");
    tokio::time::sleep(Duration::from_millis(50)).await; // audit delivery is spawned
    let replays: Vec<_> = h
        .audit
        .events()
        .into_iter()
        .filter(|e| e.action == AuditAction::PostReplayed && e.post_id.as_deref() == Some(&id))
        .map(|e| e.outcome)
        .collect();
    assert_eq!(
        replays,
        [AuditOutcome::Uncertain],
        "the replay says what it replayed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_repeated_key_while_the_first_runs_waits_for_it_and_posts_once() {
    let h = h(StrategyScript::default());
    let permits = h.strategy.hold_posts();
    let journal = h.journal.clone();
    let first = tokio::spawn(async move { journal.post(T, Some("k"), request("x")).await });
    // The first is recorded `running` before its browser acts.
    let mut waited = 0;
    while h.store.all().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
        waited += 1;
        assert!(waited < 400, "the first post was never recorded");
    }
    assert_eq!(h.store.all()[0].record.state, PostState::Running);
    let journals = (0..3)
        .map(|_| {
            let journal = h.journal.clone();
            tokio::spawn(async move { journal.post(T, Some("k"), request("x")).await })
        })
        .collect::<Vec<_>>();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(h.strategy.submits(), 0, "still held");
    permits.add_permits(10);
    let first = first.await.unwrap().unwrap();
    assert!(!first.replayed);
    let id = post_id(&first);
    for j in journals {
        let again = j.await.unwrap().unwrap();
        assert!(again.replayed);
        assert_eq!(post_id(&again), id);
        assert!(result(&again).ok);
    }
    assert_eq!(h.strategy.submits(), 1, "posted once");
    assert_eq!(h.store.all().len(), 1);
}

#[tokio::test]
async fn a_reused_key_with_another_body_is_a_conflict() {
    let h = h(StrategyScript::default());
    post(&h, Some("k"), request("one")).await.unwrap();
    let e = post(&h, Some("k"), request("two")).await.unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("idempotency_key_reused", 409)
    );
    assert_eq!(h.strategy.submits(), 1);
    // Keys are per tenant: another tenant's same key is a new post.
    let other = h
        .journal
        .post("tenant-b", Some("k"), request("two"))
        .await
        .unwrap();
    assert!(!other.replayed);
    assert_eq!(h.strategy.submits(), 2);
}

#[tokio::test]
async fn the_body_hash_is_keyed_and_covers_the_session() {
    let key = SecretValue::new("k1");
    let a = abr_core::digest::post_request_hash(&request("x"), &key);
    assert_eq!(a, abr_core::digest::post_request_hash(&request("x"), &key));
    assert_ne!(
        a,
        abr_core::digest::post_request_hash(&request("x"), &SecretValue::new("k2"))
    );
    let mut other_session = request("x");
    other_session.session.cookies[0] = Cookie::new("sid", "another", ".example.com");
    assert_ne!(a, abr_core::digest::post_request_hash(&other_session, &key));
    assert!(!a.contains("canary"));
}

#[tokio::test]
async fn another_tenants_post_is_not_found() {
    let h = h(StrategyScript::default());
    let id = post_id(&post(&h, Some("k"), request("x")).await.unwrap());
    let e = h.journal.get("tenant-b", &id).await.unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("post_not_found", 404));
    for e in [
        h.journal.recheck("tenant-b", &id).await.unwrap_err(),
        h.journal
            .assert_not_posted(
                "tenant-b",
                &id,
                &AssertNotPostedRequest {
                    asserted_by: "owner".into(),
                    note: None,
                },
            )
            .await
            .unwrap_err(),
    ] {
        assert_eq!(e.code(), "post_not_found");
    }
    assert_eq!(h.journal.get(T, &id).await.unwrap().post_id, id);
}

#[tokio::test]
async fn session_and_session_id_at_most_one() {
    let h = h(StrategyScript::default());
    let mut both = request("x");
    both.session_id = Some("s1".into());
    let e = post(&h, Some("k"), both).await.unwrap_err();
    assert_eq!(e.code(), "invalid_request");
    assert!(h.store.all().is_empty());
    // Neither: the post runs signed out, and is recorded like any.
    let mut neither = request("x");
    neither.session = AgentSessionState::default();
    post(&h, Some("k2"), neither).await.unwrap();
    assert_eq!(h.store.all().len(), 1);
    // The poster alone refuses `sessionId` (only the journal resolves it).
    let poster_only = AgentPoster::new(
        Arc::new(FakeProvider::new()),
        Arc::new(StrategyRegistry::new()),
    );
    let e = poster_only.post(stored_request("s1")).await.unwrap_err();
    assert_eq!(e.code(), "invalid_request");
}

#[tokio::test]
async fn a_stored_session_is_loaded_and_the_refreshed_one_written_back() {
    let h = h(StrategyScript {
        set_cookie_on_post: Some(Cookie::new("fresh", "rotated-value", ".example.com")),
        ..StrategyScript::default()
    });
    let key = SessionKey::stored(T, "s1");
    h.sessions.save(&key, session()).await.unwrap();
    let posted = post(&h, Some("k"), stored_request("s1")).await.unwrap();
    let r = result(&posted);
    assert!(r.ok, "{r:?}");
    assert!(
        r.refreshed_session.is_none(),
        "the runner keeps a stored session"
    );
    let injected = h.provider.injected();
    assert_eq!(injected[0].as_ref().unwrap().cookies[0].name, "sid");
    let kept = h.sessions.load(&key).await.unwrap().unwrap();
    let names: Vec<_> = kept.cookies.iter().map(|c| c.name.as_str()).collect();
    assert!(
        names.contains(&"fresh") && names.contains(&"sid"),
        "{names:?}"
    );
    // The journal keeps the id, never the stored session's values.
    let json = serde_json::to_string(&h.journal.get(T, &post_id(&posted)).await.unwrap()).unwrap();
    assert!(!json.contains("canary-cookie-value"));

    // Another tenant's id, or an unknown one: 404, nothing stored, nothing ran.
    let e = h
        .journal
        .post("tenant-b", Some("k2"), stored_request("s1"))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.error_code().status),
        ("session_not_found", 404)
    );
    let e = post(&h, Some("k3"), stored_request("missing"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "session_not_found");
    assert_eq!(h.store.all().len(), 1);
    assert_eq!(h.provider.acquired(), 1);
}

async fn uncertain(h: &H, key: &str) -> String {
    let posted = post(h, Some(key), request("maybe")).await.unwrap();
    let r = result(&posted);
    assert!(r.uncertain, "{r:?}");
    let id = post_id(&posted);
    let record = h.journal.get(T, &id).await.unwrap();
    assert_eq!(record.state, PostState::Uncertain);
    id
}

#[tokio::test]
async fn an_uncertain_post_is_never_posted_again_by_a_repeat() {
    let h = h(uncertain_script());
    let id = uncertain(&h, "k").await;
    h.strategy.edit(|s| *s = StrategyScript::default());
    for _ in 0..3 {
        let again = post(&h, Some("k"), request("maybe")).await.unwrap();
        assert!(again.replayed);
        assert!(result(&again).uncertain);
        assert_eq!(post_id(&again), id);
    }
    assert_eq!(h.strategy.submits(), 1);
    // The content is kept for a re-check while uncertain.
    assert!(h.store.all()[0].request.is_some());
}

#[tokio::test]
async fn recheck_answers_and_changes_only_what_it_documents() {
    let h = h(uncertain_script());
    let id = uncertain(&h, "k").await;
    let acquired = h.provider.acquired();

    // Default: unavailable; the post stays uncertain.
    let r = h.journal.recheck(T, &id).await.unwrap();
    assert_eq!(r.answer, RecheckAnswer::Unavailable);
    let record = h.journal.get(T, &id).await.unwrap();
    assert_eq!(record.state, PostState::Uncertain);
    assert_eq!(
        record.recheck.as_ref().unwrap().answer,
        RecheckAnswer::Unavailable
    );

    // Not found: still uncertain (not proof), recorded.
    h.strategy
        .set_recheck(Script::Return(RecheckOutcome::NotFound {
            detail: "not in the feed".into(),
        }));
    let r = h.journal.recheck(T, &id).await.unwrap();
    assert_eq!(r.answer, RecheckAnswer::NotFound);
    assert_eq!(r.error.as_ref().unwrap().code, "verification_failed");
    let record = h.journal.get(T, &id).await.unwrap();
    assert_eq!(record.state, PostState::Uncertain);
    assert!(record.result.as_ref().unwrap().uncertain);
    assert_eq!(
        record.recheck.as_ref().unwrap().answer,
        RecheckAnswer::NotFound
    );

    // A failing re-check is unavailable, nothing else changes.
    h.strategy.set_recheck(Script::Fail(StrategyError::failed(
        "feed_down",
        "the feed is down",
    )));
    let r = h.journal.recheck(T, &id).await.unwrap();
    assert_eq!(r.answer, RecheckAnswer::Unavailable);
    assert_eq!(
        h.journal.get(T, &id).await.unwrap().state,
        PostState::Uncertain
    );

    // Confirmed: succeeded, proven by a re-check.
    h.strategy
        .set_recheck(Script::Return(RecheckOutcome::Confirmed(Verification {
            method: VerificationMethod::Readback,
            evidence: VerificationEvidence {
                post_id: Some("p-9".into()),
                ..VerificationEvidence::default()
            },
        })));
    let r = h.journal.recheck(T, &id).await.unwrap();
    assert_eq!(r.answer, RecheckAnswer::Confirmed);
    let record = h.journal.get(T, &id).await.unwrap();
    assert_eq!(record.state, PostState::Succeeded);
    let result = record.result.as_ref().unwrap();
    assert!(result.ok && !result.uncertain && result.error.is_none());
    let v = result.verification.as_ref().unwrap();
    assert_eq!(v.method, VerificationMethod::Recheck);
    assert_eq!(v.evidence.post_id.as_deref(), Some("p-9"));
    assert!(
        h.store.all()[0].request.is_none(),
        "nothing left to re-check"
    );
    // Re-checks were read-only: nothing was submitted again; each had its own browser.
    assert_eq!(h.strategy.submits(), 1);
    assert_eq!(h.strategy.rechecked(), ["maybe"; 4]);
    assert_eq!(h.provider.acquired(), acquired + 4);
    assert_eq!(h.provider.open_leases(), 0);

    // No longer uncertain.
    let e = h.journal.recheck(T, &id).await.unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("not_uncertain", 409));
}

#[tokio::test]
async fn an_assertion_allows_exactly_one_new_attempt() {
    let h = h(uncertain_script());
    let id = uncertain(&h, "k").await;
    let assert = AssertNotPostedRequest {
        asserted_by: "owner@example.com".into(),
        note: Some("checked the account".into()),
    };
    let e = h
        .journal
        .assert_not_posted(
            T,
            &id,
            &AssertNotPostedRequest {
                asserted_by: "  ".into(),
                note: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "invalid_request");
    let record = h.journal.assert_not_posted(T, &id, &assert).await.unwrap();
    assert_eq!(
        record.state,
        PostState::Uncertain,
        "an assertion is not proof"
    );
    let a = record.assertion.as_ref().unwrap();
    assert_eq!(a.asserted_by, "owner@example.com");
    assert!(a.spent_by.is_none());
    let e = h
        .journal
        .assert_not_posted(T, &id, &assert)
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.error_code().status), ("already_asserted", 409));

    // The next post with the key runs again, once; it succeeds this time.
    h.strategy.edit(|s| *s = StrategyScript::default());
    let second = post(&h, Some("k"), request("maybe")).await.unwrap();
    assert!(!second.replayed);
    assert!(result(&second).ok);
    let second_id = post_id(&second);
    assert_ne!(second_id, id);
    assert_eq!(h.strategy.submits(), 2);
    let record = h.journal.get(T, &second_id).await.unwrap();
    assert_eq!(record.retry_of.as_deref(), Some(id.as_str()));
    let original = h.journal.get(T, &id).await.unwrap();
    assert_eq!(
        original.assertion.as_ref().unwrap().spent_by.as_deref(),
        Some(second_id.as_str())
    );

    // Further repeats answer the new attempt; nothing runs.
    let third = post(&h, Some("k"), request("maybe")).await.unwrap();
    assert!(third.replayed);
    assert_eq!(post_id(&third), second_id);
    assert_eq!(h.strategy.submits(), 2);
    // The original cannot be asserted again; the succeeded attempt is not uncertain.
    let e = h
        .journal
        .assert_not_posted(T, &id, &assert)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "already_asserted");
    let e = h
        .journal
        .assert_not_posted(T, &second_id, &assert)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "not_uncertain");
    tokio::time::sleep(Duration::from_millis(50)).await; // audit delivery is spawned
    assert!(
        h.audit
            .events()
            .iter()
            .any(|e| e.action == AuditAction::PostAsserted
                && e.actor.as_deref() == Some("owner@example.com"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_repeats_after_an_assertion_spend_it_once() {
    let h = h(uncertain_script());
    let id = uncertain(&h, "k").await;
    h.journal
        .assert_not_posted(
            T,
            &id,
            &AssertNotPostedRequest {
                asserted_by: "owner".into(),
                note: None,
            },
        )
        .await
        .unwrap();
    h.strategy.edit(|s| *s = StrategyScript::default());
    let tasks = (0..5)
        .map(|_| {
            let journal = h.journal.clone();
            tokio::spawn(async move { journal.post(T, Some("k"), request("maybe")).await })
        })
        .collect::<Vec<_>>();
    let mut ran = 0;
    for t in tasks {
        let posted = t.await.unwrap().unwrap();
        ran += usize::from(!posted.replayed);
    }
    assert_eq!(ran, 1);
    assert_eq!(
        h.strategy.submits(),
        2,
        "the original and exactly one new attempt"
    );
    assert_eq!(h.store.all().len(), 2);
}

fn running(id: &str, submit_started: bool) -> StoredPost {
    StoredPost {
        ledger: LedgerHeader {
            tenant_id: T.into(),
            marked: submit_started,
            ..LedgerHeader::default()
        },
        record: PostRecord {
            post_id: id.into(),
            platform: PLATFORM.into(),
            state: PostState::Running,
            result: None,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            finished_at: None,
            retry_of: None,
            assertion: None,
            recheck: None,
        },
        request: Some(request("interrupted")),
    }
}

#[tokio::test]
async fn recovery_ends_running_posts_by_whether_the_submit_had_started() {
    let h = h(StrategyScript::default());
    h.store
        .insert(&running("post_before", false), None)
        .await
        .unwrap();
    h.store
        .insert(&running("post_after", true), None)
        .await
        .unwrap();
    // A repeat of a key naming a running post with no job here answers its record.
    let mut keyed = running("post_keyed", false);
    keyed.request = Some(request("keyed"));
    let hash = abr_core::digest::post_request_hash(
        &request("keyed"),
        &SecretValue::new("runner-secret-for-body-hashes"),
    );
    h.store
        .insert(
            &keyed,
            Some(&abr_core::store::IdempotencyKey {
                key: "kk".into(),
                body_hash: hash,
            }),
        )
        .await
        .unwrap();
    let replay = post(&h, Some("kk"), request("keyed")).await.unwrap();
    assert!(replay.replayed);
    match &replay.reply {
        PostReply::Record(r) => assert_eq!(r.state, PostState::Running),
        PostReply::Result(r) => panic!("{r:?}"),
    }
    assert_eq!(h.strategy.submits(), 0);

    let ended = h.journal.recover_unfinished().await.unwrap();
    assert_eq!(ended.len(), 3);
    let before = h.journal.get(T, "post_before").await.unwrap();
    assert_eq!(before.state, PostState::Failed);
    let r = before.result.as_ref().unwrap();
    assert!(r.is_safe_to_retry());
    assert_eq!(r.error.as_ref().unwrap().code, "runner_stopped");
    let after = h.journal.get(T, "post_after").await.unwrap();
    assert_eq!(after.state, PostState::Uncertain);
    let r = after.result.as_ref().unwrap();
    assert!(r.uncertain && !r.is_safe_to_retry());
    assert_eq!(r.failure_stage, Some(FailureStage::Submit));
    // The uncertain one keeps its request for a re-check; the failed one does not.
    let all = h.store.all();
    let kept = |id: &str| all.iter().find(|p| p.id() == id).unwrap().request.is_some();
    assert!(kept("post_after") && !kept("post_before"));
    assert!(h.store.unfinished().await.unwrap().is_empty());
    assert!(h.journal.recover_unfinished().await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(50)).await; // audit delivery is spawned
    assert!(
        h.audit
            .events()
            .iter()
            .any(|e| e.action == AuditAction::PostRecovered)
    );
}

#[tokio::test]
async fn the_submit_is_recorded_before_it_starts() {
    // A post that fails after entering submit: uncertain, and the flag was saved.
    let h = h(StrategyScript {
        post: Script::Fail(StrategyError::failed("lost", "connection lost")),
        ..StrategyScript::default()
    });
    let posted = post(&h, Some("a"), request("x")).await.unwrap();
    assert!(result(&posted).uncertain);
    assert!(h.store.all()[0].ledger.marked);

    // One that fails at compose: failed, the flag never set.
    let h2 = self::h(StrategyScript {
        post_stages: vec![FailureStage::Compose],
        post: Script::Fail(StrategyError::failed("lost", "connection lost")),
        ..StrategyScript::default()
    });
    let posted = post(&h2, Some("a"), request("x")).await.unwrap();
    assert!(result(&posted).is_safe_to_retry());
    let stored = &h2.store.all()[0];
    assert!(!stored.ledger.marked);
    assert_eq!(stored.record.state, PostState::Failed);
    assert!(stored.request.is_none());
}

/// A store that does not record a submit: its updates and marks fail (`disk full`), or,
/// with `taken_over`, its updates pass and its mark answers that the record is no longer
/// this runner's (another runner of a fleet ended it, as PostgreSQL's store answers).
struct NoUpdates(InMemoryPostStore, bool);

#[async_trait::async_trait]
impl RecordStore<StoredPost> for NoUpdates {
    async fn insert(
        &self,
        post: &StoredPost,
        idempotency: Option<&abr_core::store::IdempotencyKey>,
    ) -> Result<abr_core::store::Inserted, CoreError> {
        self.0.insert(post, idempotency).await
    }
    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        self.0.find_idempotency(tenant, key).await
    }
    async fn get(&self, tenant: &str, post_id: &str) -> Result<Option<StoredPost>, CoreError> {
        self.0.get(tenant, post_id).await
    }
    async fn update(&self, post: &StoredPost) -> Result<bool, CoreError> {
        if self.1 {
            return self.0.update(post).await;
        }
        Err(CoreError::Store(
            abr_core::error::StoreFailure::unavailable("disk full"),
        ))
    }
    async fn mark(&self, _tenant: &str, _post_id: &str) -> Result<bool, CoreError> {
        if self.1 {
            return Ok(false);
        }
        Err(CoreError::Store(
            abr_core::error::StoreFailure::unavailable("disk full"),
        ))
    }
    async fn unfinished(&self) -> Result<Vec<StoredPost>, CoreError> {
        self.0.unfinished().await
    }
    async fn list(
        &self,
        tenant: &str,
        query: &abr_core::store::ListQuery,
    ) -> Result<abr_core::store::Listed<StoredPost>, CoreError> {
        self.0.list(tenant, query).await
    }

    async fn count_in_state(&self, state: &str) -> Result<abr_core::store::StateCount, CoreError> {
        self.0.count_in_state(state).await
    }
}

#[tokio::test]
async fn a_submit_that_cannot_be_recorded_does_not_happen() {
    // A store that fails, and a post another runner took over (its mark refused): neither
    // submits.
    for taken_over in [false, true] {
        let provider = Arc::new(FakeProvider::new());
        let strategy = Arc::new(ScriptedStrategy::new(PLATFORM, &policy()));
        let mut registry = StrategyRegistry::new();
        registry.register(strategy.clone()).unwrap();
        let poster = Arc::new(AgentPoster::new(provider, Arc::new(registry)));
        let journal = PostJournal::new(
            poster,
            Arc::new(NoUpdates(InMemoryPostStore::new(), taken_over)),
            SecretValue::new("s"),
        );
        let posted = journal.post(T, Some("k"), request("x")).await.unwrap();
        let r = result(&posted);
        assert!(r.is_safe_to_retry(), "taken over: {taken_over}: {r:?}");
        assert_eq!(r.failure_stage, Some(FailureStage::Submit));
        assert_eq!(strategy.submits(), 0, "taken over: {taken_over}");
        assert!(strategy.posted().is_empty());
    }
}
