//! The [`ProfileStore`] contract, on every implementation (in memory, SQLite in memory and
//! on disk); and on SQLite, that decisions and sign-ins survive a reopen and that nothing
//! but names and expiry is on disk.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use abr_core::guard::{InMemoryProfileStore, ProfileDecision, ProfileStore};
use abr_protocol::{CookieFact, ProfileSignIn, SiteDecision};
use abr_store::SqliteStore;
use time::OffsetDateTime;

fn at(seconds: i64) -> OffsetDateTime {
    OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(seconds)
}

fn decision(decision: SiteDecision, by: &str) -> ProfileDecision {
    ProfileDecision {
        decision,
        decided_by: by.into(),
        decided_by_key: Some(format!("key_{by}")),
        decided_at: at(50),
    }
}

fn sign_in(site: &str, cookie: &str, expires: f64) -> ProfileSignIn {
    ProfileSignIn {
        site: site.into(),
        cookies: vec![CookieFact {
            name: cookie.into(),
            domain: site.into(),
            expires: Some(expires),
            expired: false,
        }],
        recorded_at: at(60),
    }
}

/// Asked once; a decision replaces the last and keeps the sign-ins; a sign-in replaces its
/// site's and keeps the rest and the consent; per tenant; sorted by name.
async fn profile_contract(store: &dyn ProfileStore) {
    assert!(store.profiles("t1").await.unwrap().is_empty());
    assert_eq!(store.profile("t1", "jobs").await.unwrap(), None);
    assert!(
        store.ask("t1", "jobs", at(10)).await.unwrap(),
        "the first ask"
    );
    assert!(
        !store.ask("t1", "jobs", at(20)).await.unwrap(),
        "asked once"
    );
    let entry = store.profile("t1", "jobs").await.unwrap().unwrap();
    assert_eq!((entry.asked_at, entry.decision), (Some(at(10)), None));

    store
        .record_sign_in("t1", "jobs", sign_in("b.example", "sid", 100.0))
        .await
        .unwrap();
    store
        .record_sign_in("t1", "jobs", sign_in("a.example", "auth", 200.0))
        .await
        .unwrap();
    store
        .record_sign_in("t1", "jobs", sign_in("b.example", "sid2", 300.0))
        .await
        .unwrap();
    store
        .decide("t1", "jobs", decision(SiteDecision::Deny, "alice"))
        .await
        .unwrap();
    store
        .decide("t1", "jobs", decision(SiteDecision::Allow, "bob"))
        .await
        .unwrap();
    let entry = store.profile("t1", "jobs").await.unwrap().unwrap();
    assert_eq!(entry.decision, Some(SiteDecision::Allow));
    assert_eq!(entry.decided_by.as_deref(), Some("bob"));
    assert_eq!(entry.decided_by_key.as_deref(), Some("key_bob"));
    assert_eq!(entry.asked_at, Some(at(10)));
    let sites: Vec<_> = entry.sign_ins.iter().map(|s| s.site.as_str()).collect();
    assert_eq!(sites, ["a.example", "b.example"]);
    assert_eq!(entry.sign_in("b.example").unwrap().cookies[0].name, "sid2");
    // Decided: never asked again.
    assert!(!store.ask("t1", "jobs", at(30)).await.unwrap());

    // Decided before anyone asked: not asked either.
    store
        .decide("t1", "aaa", decision(SiteDecision::Deny, "alice"))
        .await
        .unwrap();
    assert!(!store.ask("t1", "aaa", at(30)).await.unwrap());
    let names: Vec<_> = store
        .profiles("t1")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.profile)
        .collect();
    assert_eq!(names, ["aaa", "jobs"]);

    // Another tenant's profile of the same name is its own.
    assert_eq!(store.profile("t2", "jobs").await.unwrap(), None);
    assert!(store.profiles("t2").await.unwrap().is_empty());
    assert!(store.ask("t2", "jobs", at(40)).await.unwrap());
    assert_eq!(
        store.profile("t1", "jobs").await.unwrap().unwrap().decision,
        Some(SiteDecision::Allow)
    );
}

#[tokio::test]
async fn every_profile_store_keeps_the_contract() {
    profile_contract(&InMemoryProfileStore::default()).await;
    profile_contract(&SqliteStore::in_memory(None).unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    let on_disk = SqliteStore::open(&dir.path().join("abr.db"), None, true).unwrap();
    profile_contract(&on_disk).await;
}

#[tokio::test]
async fn a_decision_and_a_sign_in_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    {
        let store = SqliteStore::open(&path, None, true).unwrap();
        store
            .decide("t1", "jobs", decision(SiteDecision::Deny, "alice"))
            .await
            .unwrap();
        store
            .record_sign_in("t1", "jobs", sign_in("a.example", "sid", 100.0))
            .await
            .unwrap();
    }
    let store = SqliteStore::open(&path, None, true).unwrap();
    let entry = store.profile("t1", "jobs").await.unwrap().unwrap();
    assert_eq!(entry.decision, Some(SiteDecision::Deny));
    assert_eq!(
        entry.sign_in("a.example").unwrap().cookies[0].expires,
        Some(100.0)
    );
}
