//! The SQLite post store keeps the PostStore contract across a reopen: tenants are
//! isolated, an idempotency key names one post (apart from tasks' keys), updates are
//! compare-and-swap, a post's content and session are encrypted at rest and dropped once
//! it can no longer be re-checked, and an engine over it posts at most once per key across
//! a "kill" (reopen).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::sync::Arc;

use abr_core::principal::Actor;
use abr_core::store::{IdempotencyKey, Inserted, RecordStore, StoredPost};
use abr_core::testing::store::{CONTENT_CANARY, COOKIE_CANARY, sample_post};
use abr_core::testing::{FakeContext, FakeProvider, ScriptedStrategy};
use abr_core::{DynSessionProvider, StrategyRegistry};
use abr_engine::{Engine, EngineBuilder, EngineConfig, PostReply};
use abr_protocol::{
    AgentSessionState, Cookie, PlatformPolicy, PostContent, PostRequest, PostState, Role,
    SecretValue, SessionScopeSpec,
};
use abr_store::{SealingKey, SqliteStore};

fn key() -> SealingKey {
    SealingKey::from_hex(&"6c".repeat(32)).unwrap()
}

/// The tenant the engine posts for.
const TENANT: &str = "t1";

fn request(text: &str) -> PostRequest {
    PostRequest {
        platform: "fake".into(),
        session: AgentSessionState {
            cookies: vec![Cookie::new("sid", COOKIE_CANARY, ".example.com")],
            ..AgentSessionState::default()
        },
        session_id: None,
        content: PostContent::text(text),
        workspace_id: Some(TENANT.into()),
        account_id: None,
        scope: None,
    }
}

/// A running post with content and a session (the conformance suite's sample).
fn post(tenant: &str, id: &str) -> StoredPost {
    sample_post(tenant, id, PostState::Running)
}

fn assert_not_on_disk(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for canary in [CONTENT_CANARY, COOKIE_CANARY] {
            assert!(
                !bytes.windows(canary.len()).any(|w| w == canary.as_bytes()),
                "{canary} on disk in the clear"
            );
        }
    }
}

#[tokio::test]
async fn the_post_store_contract_holds_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    let idem = IdempotencyKey {
        key: "k1".into(),
        body_hash: "b1".into(),
    };
    {
        let store = SqliteStore::open(&path, Some(key()), false).unwrap();
        let a = post("t1", "post-a");
        assert_eq!(
            RecordStore::<StoredPost>::insert(&store, &a, Some(&idem))
                .await
                .unwrap(),
            Inserted::New
        );
        let b = post("t1", "post-b");
        assert_eq!(
            RecordStore::<StoredPost>::insert(&store, &b, Some(&idem))
                .await
                .unwrap(),
            Inserted::Existing {
                id: "post-a".into(),
                body_hash: "b1".into()
            }
        );
        assert!(
            RecordStore::<StoredPost>::get(&store, "t1", "post-b")
                .await
                .unwrap()
                .is_none()
        );
        // Another tenant may use the same key, and cannot see t1's post.
        let c = post("t2", "post-c");
        assert_eq!(
            RecordStore::<StoredPost>::insert(&store, &c, Some(&idem))
                .await
                .unwrap(),
            Inserted::New
        );
        assert!(
            RecordStore::<StoredPost>::get(&store, "t2", "post-a")
                .await
                .unwrap()
                .is_none()
        );
        // Post keys are apart from task keys.
        assert!(
            RecordStore::<abr_core::store::StoredTask>::find_idempotency(&store, "t1", "k1")
                .await
                .unwrap()
                .is_none()
        );
        // Compare-and-swap.
        let mut started = RecordStore::<StoredPost>::get(&store, "t1", "post-a")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(started, a);
        started.ledger.marked = true;
        assert!(
            RecordStore::<StoredPost>::update(&store, &started)
                .await
                .unwrap()
        );
        assert!(
            !RecordStore::<StoredPost>::update(&store, &started)
                .await
                .unwrap(),
            "a stale version wins nothing"
        );
        assert_eq!(
            RecordStore::<StoredPost>::unfinished(&store)
                .await
                .unwrap()
                .len(),
            2
        );
        // "Killed" here: the store is dropped without any shutdown.
    }
    assert_not_on_disk(dir.path());
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    let mut a = RecordStore::<StoredPost>::get(&store, "t1", "post-a")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((a.ledger.version, a.ledger.marked), (1, true));
    assert_eq!(a.request.as_ref().unwrap().content.text, CONTENT_CANARY);
    assert_eq!(
        RecordStore::<StoredPost>::find_idempotency(&store, "t1", "k1")
            .await
            .unwrap(),
        Some(("post-a".into(), "b1".into()))
    );
    // Ended and no longer re-checkable: the request is dropped.
    a.record.state = PostState::Failed;
    a.request = None;
    assert!(RecordStore::<StoredPost>::update(&store, &a).await.unwrap());
    let a = RecordStore::<StoredPost>::get(&store, "t1", "post-a")
        .await
        .unwrap()
        .unwrap();
    assert!(a.request.is_none());
    assert_eq!(a.record.state, PostState::Failed);
    assert_eq!(
        RecordStore::<StoredPost>::unfinished(&store)
            .await
            .unwrap()
            .len(),
        1
    );
    // Another key does not open the request.
    drop(store);
    let wrong = SqliteStore::open(&path, Some(SealingKey::from_bytes([1; 32])), false).unwrap();
    assert!(
        RecordStore::<StoredPost>::get(&wrong, "t2", "post-c")
            .await
            .is_err()
    );
}

#[tokio::test]
async fn without_a_key_a_post_with_its_request_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("abr.db"), None, false).unwrap();
    let e = RecordStore::<StoredPost>::insert(&store, &post("t1", "p"), None)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("ABR_SESSION_KEY"), "{e}");
    assert!(
        RecordStore::<StoredPost>::get(&store, "t1", "p")
            .await
            .unwrap()
            .is_none()
    );
    // A record without a request needs no key.
    let mut bare = post("t1", "q");
    bare.request = None;
    RecordStore::<StoredPost>::insert(&store, &bare, None)
        .await
        .unwrap();
    // In --insecure-dev it is kept in plaintext.
    let dev = SqliteStore::open(&dir.path().join("dev.db"), None, true).unwrap();
    RecordStore::<StoredPost>::insert(&dev, &post("t1", "p"), None)
        .await
        .unwrap();
    let p = RecordStore::<StoredPost>::get(&dev, "t1", "p")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(p.request.unwrap().content.text, CONTENT_CANARY);
}

/// An engine over `store` (its body-hash key kept across the reopen, as the runner keeps
/// it), an operator acting for [`TENANT`], and the strategy it posts with.
fn engine(store: Arc<SqliteStore>) -> (Engine<FakeContext>, Actor, Arc<ScriptedStrategy>) {
    let policy = PlatformPolicy {
        session: Some(SessionScopeSpec {
            cookie_domains: vec!["example.com".into()],
            origins: vec![],
        }),
        ..PlatformPolicy::default()
    };
    let strategy = Arc::new(ScriptedStrategy::new("fake", &policy));
    let mut registry = StrategyRegistry::new();
    registry.register(strategy.clone()).unwrap();
    let provider: DynSessionProvider<FakeContext> = Arc::new(FakeProvider::new());
    let engine = EngineBuilder::new(
        EngineConfig::default(),
        Arc::clone(&provider),
        provider,
        store,
    )
    .strategies(registry)
    .body_hash_key(SecretValue::new("body-key"))
    .build()
    .unwrap();
    let actor = abr_core::testing::actor(Role::Operator, TENANT);
    (engine, actor, strategy)
}

#[tokio::test]
async fn a_journal_on_sqlite_posts_once_per_key_across_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    let first_id = {
        let store = Arc::new(SqliteStore::open(&path, Some(key()), false).unwrap());
        let (engine, actor, strategy) = engine(store);
        let posted = engine
            .post(&actor, Some("k"), request(CONTENT_CANARY))
            .await
            .unwrap();
        assert_eq!(strategy.submits(), 1);
        match posted.reply {
            PostReply::Result(r) => {
                assert!(r.ok);
                r.post_id.unwrap()
            }
            PostReply::Record(r) => panic!("{r:?}"),
        }
    };
    assert_not_on_disk(dir.path());
    let store = Arc::new(SqliteStore::open(&path, Some(key()), false).unwrap());
    let (engine, actor, strategy) = engine(store);
    assert_eq!(
        engine.recover().await.unwrap(),
        0,
        "nothing was left unfinished"
    );
    let again = engine
        .post(&actor, Some("k"), request(CONTENT_CANARY))
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(strategy.submits(), 0, "nothing ran after the reopen");
    match again.reply {
        PostReply::Result(r) => assert_eq!(r.post_id.as_deref(), Some(first_id.as_str())),
        PostReply::Record(r) => panic!("{r:?}"),
    }
    let record = engine.post_record(&actor, &first_id).await.unwrap();
    assert_eq!(record.state, PostState::Succeeded);
}
