//! API keys from the holder's side: a key authenticates until it expires or is revoked,
//! a token with a forged secret or an unknown id names nobody (and costs the store the same
//! lookup), only an operator makes keys, what a key opened ends with it, and a runner id is
//! its credential's.

use std::sync::Arc;
use std::time::Duration;

use crate::keys::RunnerPresence::{Connected, Offline};
use crate::keys::{KEY_RECHECK, Keys};
use abr_core::audit::Auditor;
use abr_core::principal::Principal;
use abr_core::store::InMemoryStore;
use abr_core::testing::ManualClock;
use abr_protocol::{KeyRequest, Role};

fn request(expires_in: Option<time::Duration>, now: time::OffsetDateTime) -> KeyRequest {
    KeyRequest {
        name: "bot".into(),
        role: Role::Agent,
        tenant_id: Some("acme".into()),
        read_only: false,
        expires_at: expires_in.map(|d| now + d),
    }
}

#[tokio::test]
async fn a_key_is_someone_until_it_expires_or_is_revoked() {
    let start = time::OffsetDateTime::now_utc();
    let clock = Arc::new(ManualClock::new(start));
    let keys = Keys::new(
        Arc::new(InMemoryStore::new()),
        clock.clone(),
        Auditor::none(),
    );
    let operator = Principal::operator("bootstrap", "ops");
    let expiring = keys
        .create(&operator, &request(Some(time::Duration::hours(1)), start))
        .await
        .unwrap();
    let lasting = keys.create(&operator, &request(None, start)).await.unwrap();

    let who = keys
        .authenticate(expiring.token.expose())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (who.key_id(), who.role()),
        (expiring.key.key_id.as_str(), Role::Agent)
    );
    clock.advance(Duration::from_secs(3600));
    assert!(
        keys.authenticate(expiring.token.expose())
            .await
            .unwrap()
            .is_none(),
        "an expired key authenticated"
    );
    assert!(
        keys.authenticate(lasting.token.expose())
            .await
            .unwrap()
            .is_some()
    );

    keys.revoke(&operator, &lasting.key.key_id).await.unwrap();
    assert!(
        keys.authenticate(lasting.token.expose())
            .await
            .unwrap()
            .is_none()
    );

    // A real id with another secret, an unknown id, and no key shape at all are nobody.
    let (prefix, _) = expiring.token.expose().rsplit_once('.').unwrap();
    for token in [
        format!("{prefix}.forged"),
        "abrk.key_none.x".into(),
        "abc".into(),
    ] {
        assert!(
            keys.authenticate(&token).await.unwrap().is_none(),
            "{token}"
        );
    }
    // Only an operator makes, lists or revokes keys.
    let approver = Principal::new(
        "key_x",
        "ada",
        Role::Approver,
        abr_core::principal::Tenants::One("acme".into()),
        false,
    )
    .unwrap();
    let refused = keys
        .create(&approver, &request(None, start))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "forbidden");
    assert_eq!(keys.list(&approver).await.unwrap_err().code(), "forbidden");
}

#[tokio::test]
async fn an_enrollment_code_works_once_for_ten_minutes_and_runner_keys_come_only_from_one() {
    let start = time::OffsetDateTime::now_utc();
    let clock = Arc::new(ManualClock::new(start));
    let keys = Keys::new(
        Arc::new(InMemoryStore::new()),
        clock.clone(),
        Auditor::none(),
    );
    let operator = Arc::new(Principal::operator("bootstrap", "ops"));
    let acme = operator.act_for(Some("acme")).unwrap();
    // A key request cannot make a runner's credential or an enrollment code.
    for role in [Role::Runner, Role::Enrollment] {
        let mut asked = request(None, start);
        asked.role = role;
        let refused = keys.create(&operator, &asked).await.unwrap_err();
        assert_eq!(refused.code(), "invalid_request", "{role}");
    }
    let bad = keys.enroll(&acme, "../etc", Offline).await.unwrap_err();
    assert_eq!(bad.code(), "invalid_request");

    // Late: the code expired.
    let late = keys.enroll(&acme, "laptop", Offline).await.unwrap();
    clock.advance(crate::keys::ENROLLMENT_TTL + Duration::from_secs(1));
    assert!(
        keys.redeem_enrollment(late.code.expose(), "laptop", Offline)
            .await
            .unwrap()
            .is_none()
    );
    // In time: a runner credential of its runner id and tenant, and the code is spent.
    let code = keys.enroll(&acme, "laptop", Offline).await.unwrap();
    assert!(
        keys.authenticate(code.code.expose())
            .await
            .unwrap()
            .is_some_and(|p| p.role() == Role::Enrollment),
        "a code is an enrollment principal, with no right"
    );
    let enrolled = keys
        .redeem_enrollment(code.code.expose(), "laptop", Offline)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(enrolled.tenant, "acme");
    let runner = keys
        .authenticate(enrolled.token.expose())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (runner.role(), runner.runner_id(), runner.tenant()),
        (Role::Runner, Some("laptop"), Some("acme"))
    );
    assert!(
        runner.require(abr_core::principal::Right::Read).is_err(),
        "a runner's credential reads nothing"
    );
    assert!(
        keys.redeem_enrollment(code.code.expose(), "laptop", Offline)
            .await
            .unwrap()
            .is_none(),
        "once"
    );
    // Enrolled again: the older credential stops working.
    let again = keys.enroll(&acme, "laptop", Offline).await.unwrap();
    let newer = keys
        .redeem_enrollment(again.code.expose(), "laptop", Offline)
        .await
        .unwrap()
        .unwrap();
    assert!(
        keys.authenticate(enrolled.token.expose())
            .await
            .unwrap()
            .is_none(),
        "the older credential was revoked"
    );
    assert!(
        keys.authenticate(newer.token.expose())
            .await
            .unwrap()
            .is_some()
    );
}

/// A key store that records what each lookup of a presented token answered (the key's id,
/// or nothing): what the work after it depends on.
#[derive(Default)]
struct Recording {
    inner: abr_core::store::InMemoryKeys,
    answers: std::sync::Mutex<Vec<Option<String>>>,
}

impl Recording {
    fn took(&self) -> Vec<Option<String>> {
        std::mem::take(&mut *self.answers.lock().unwrap())
    }
}

#[async_trait::async_trait]
impl abr_core::store::KeyStore for Recording {
    async fn insert_key(
        &self,
        key: &abr_core::store::StoredKey,
    ) -> Result<(), abr_core::CoreError> {
        self.inner.insert_key(key).await
    }

    async fn key(
        &self,
        id: &str,
    ) -> Result<Option<abr_core::store::StoredKey>, abr_core::CoreError> {
        let found = self.inner.key(id).await?;
        self.answers
            .lock()
            .unwrap()
            .push(found.as_ref().map(|k| k.id.clone()));
        Ok(found)
    }

    async fn key_by_digest(
        &self,
        digest: &[u8; 32],
    ) -> Result<Option<abr_core::store::StoredKey>, abr_core::CoreError> {
        let found = self.inner.key_by_digest(digest).await?;
        self.answers
            .lock()
            .unwrap()
            .push(found.as_ref().map(|k| k.id.clone()));
        Ok(found)
    }

    async fn keys(&self) -> Result<Vec<abr_core::store::StoredKey>, abr_core::CoreError> {
        self.inner.keys().await
    }

    async fn revoke_key(
        &self,
        id: &str,
        at: time::OffsetDateTime,
    ) -> Result<bool, abr_core::CoreError> {
        self.inner.revoke_key(id, at).await
    }

    async fn link_runner(
        &self,
        runner_id: &str,
        key_id: &str,
        at: time::OffsetDateTime,
    ) -> Result<(), abr_core::CoreError> {
        self.inner.link_runner(runner_id, key_id, at).await
    }

    async fn runner_link(
        &self,
        runner_id: &str,
    ) -> Result<Option<abr_core::store::RunnerLink>, abr_core::CoreError> {
        self.inner.runner_link(runner_id).await
    }
}

/// The attack (issue 34, LOW): tell known key ids from unknown ones by how long a token with
/// a wrong secret takes to refuse. A known id with a wrong secret and an unknown id must
/// cost the store the same work: the same lookup, answering the same nothing (a store row
/// found and decoded for a known id was the measured difference).
#[tokio::test]
async fn a_wrong_secret_under_a_known_id_costs_what_an_unknown_id_costs() {
    let store = Arc::new(Recording::default());
    let keys = Keys::new(
        store.clone(),
        Arc::new(ManualClock::new(time::OffsetDateTime::now_utc())),
        Auditor::none(),
    );
    let operator = Principal::operator("bootstrap", "ops");
    let now = time::OffsetDateTime::now_utc();
    let created = keys.create(&operator, &request(None, now)).await.unwrap();
    let (prefix, _) = created.token.expose().rsplit_once('.').unwrap();
    let secret = "A".repeat(43);
    store.took();

    assert!(
        keys.authenticate(&format!("{prefix}.{secret}"))
            .await
            .unwrap()
            .is_none()
    );
    let known = store.took();
    assert!(
        keys.authenticate(&format!("abrk.key_0000000000000000000000000.{secret}"))
            .await
            .unwrap()
            .is_none()
    );
    let unknown = store.took();
    assert_eq!(known, unknown, "the store answered a known id otherwise");
    // The right token is found.
    assert!(
        keys.authenticate(created.token.expose())
            .await
            .unwrap()
            .is_some()
    );
}

/// What a key opened (an event stream, a runner's socket: a [`crate::KeyWatch`]) ends
/// when the key is revoked here (at once), by another process on the same store (`abr keys
/// revoke`, within [`KEY_RECHECK`]), or expires; never for a credential that is no key.
#[tokio::test(start_paused = true)]
async fn what_a_key_opened_ends_when_it_is_revoked_here_elsewhere_or_expires() {
    let start = time::OffsetDateTime::now_utc();
    let clock = Arc::new(ManualClock::new(start));
    let store = Arc::new(InMemoryStore::new());
    let keys = Keys::new(store.clone(), clock.clone(), Auditor::none());
    // `abr keys revoke` on the data directory: another process, the same store.
    let elsewhere = Keys::new(store, clock.clone(), Auditor::none());
    let operator = Principal::operator("bootstrap", "ops");
    let mut ids = Vec::new();
    for expires in [None, None, Some(time::Duration::hours(1))] {
        let created = keys
            .create(&operator, &request(expires, start))
            .await
            .unwrap();
        ids.push(created.key.key_id);
    }
    let [here, there, expiring] = [0, 1, 2].map(|i| keys.watch(&ids[i]));
    let (mut here, mut there, mut expiring) = (here, there, expiring);
    let mut bootstrap = keys.watch("bootstrap");
    let long = KEY_RECHECK * 5;
    assert!(
        tokio::time::timeout(long, here.ended()).await.is_err(),
        "a standing key ended"
    );

    keys.revoke(&operator, &ids[0]).await.unwrap();
    tokio::time::timeout(Duration::from_millis(1), here.ended())
        .await
        .expect("a revocation here ends it at once");
    elsewhere.revoke(&operator, &ids[1]).await.unwrap();
    tokio::time::timeout(KEY_RECHECK + Duration::from_millis(10), there.ended())
        .await
        .expect("a revocation elsewhere ends it within the recheck");
    clock.advance(Duration::from_secs(3600));
    tokio::time::timeout(KEY_RECHECK + Duration::from_millis(10), expiring.ended())
        .await
        .expect("an expiry ends it within the recheck");
    assert!(
        tokio::time::timeout(long, bootstrap.ended()).await.is_err(),
        "the bootstrap token is no key: nothing revokes it here"
    );
}

/// A runner id is its credential's (issue 34, findings 3 and 4, at the keys): connected by
/// its own credential, the tenant's approver does not enroll it again and an operator does
/// (that credential revoked at once, what it opened ended, recorded); connected by another
/// credential, nobody enrolls it; a code made while the id was away is spent when it
/// connects again, and no code enrolls it while it is connected.
#[tokio::test]
async fn a_live_runner_id_is_re_enrolled_by_an_operator_only_and_recorded() {
    let audit = Arc::new(abr_core::audit::MemoryAuditSink::new());
    let keys = Keys::new(
        Arc::new(InMemoryStore::new()),
        Arc::new(ManualClock::new(time::OffsetDateTime::now_utc())),
        Auditor::new(audit.clone(), Duration::from_secs(5)),
    );
    let acme = |role| {
        Arc::new(
            Principal::new(
                format!("key_{role}"),
                "someone",
                role,
                abr_core::principal::Tenants::One("acme".into()),
                false,
            )
            .unwrap(),
        )
        .act_for(None)
        .unwrap()
    };
    let (approver, operator) = (acme(Role::Approver), acme(Role::Operator));
    let code = keys.enroll(&approver, "laptop", Offline).await.unwrap();
    let runner = keys
        .redeem_enrollment(code.code.expose(), "laptop", Offline)
        .await
        .unwrap()
        .unwrap();
    let credential = keys.runner_credential("laptop").await.unwrap().unwrap();
    let live = Connected(&credential);

    let refused = keys.enroll(&approver, "laptop", live).await.unwrap_err();
    assert_eq!(refused.code(), "forbidden", "{refused}");
    let refused = keys
        .enroll(&operator, "desk", Connected("bootstrap"))
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        "forbidden",
        "another credential's runner: {refused}"
    );

    let away = keys.enroll(&approver, "laptop", Offline).await.unwrap();
    keys.runner_connected("laptop", &credential).await.unwrap();
    assert!(
        keys.redeem_enrollment(away.code.expose(), "laptop", Offline)
            .await
            .unwrap()
            .is_none(),
        "a code outlived the runner's return"
    );
    let late = keys.enroll(&approver, "laptop", Offline).await.unwrap();
    let refused = keys
        .redeem_enrollment(late.code.expose(), "laptop", live)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "forbidden", "{refused}");

    let mut socket = keys.watch(&credential);
    let replacing = keys.enroll(&operator, "laptop", live).await.unwrap();
    assert!(
        keys.authenticate(runner.token.expose())
            .await
            .unwrap()
            .is_none(),
        "the live runner's credential still works"
    );
    tokio::time::timeout(Duration::from_secs(1), socket.ended())
        .await
        .expect("what the credential opened did not end");
    let mut recorded = None;
    for _ in 0..100 {
        recorded = audit
            .events()
            .into_iter()
            .find(|e| e.action == abr_core::audit::AuditAction::RunnerReenrolled);
        if recorded.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let recorded = recorded.expect("the re-enrollment was not recorded");
    assert_eq!(recorded.account_id.as_deref(), Some("laptop"));
    assert_eq!(recorded.workspace_id.as_deref(), Some("acme"));
    assert!(recorded.actor.unwrap().contains("key_operator"));
    assert!(
        keys.redeem_enrollment(replacing.code.expose(), "laptop", Offline)
            .await
            .unwrap()
            .is_some()
    );
}

/// Fuzz target (bolero; `cargo test fuzz_`): any presented token is someone or nobody,
/// never a panic or an error; a key's token is its key, and the same token with any one
/// character changed, cut short or extended is nobody.
#[test]
fn fuzz_key_tokens() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let keys = Keys::new(
        Arc::new(InMemoryStore::new()),
        Arc::new(abr_core::clock::SystemClock),
        Auditor::none(),
    );
    let operator = Principal::operator("bootstrap", "ops");
    let now = time::OffsetDateTime::now_utc();
    let created = runtime
        .block_on(keys.create(&operator, &request(None, now)))
        .unwrap();
    let token = created.token.expose().to_owned();
    let who = |presented: &str| {
        runtime
            .block_on(keys.authenticate(presented))
            .unwrap()
            .map(|p| p.key_id().to_owned())
    };
    assert_eq!(who(&token).as_deref(), Some(created.key.key_id.as_str()));
    // The store and the clock are not touched by a failing check.
    let who = std::panic::AssertUnwindSafe(&who);
    bolero::check!()
        .with_type::<(String, u16, char, u8)>()
        .for_each(|(presented, at, with, how)| {
            assert_eq!((*who)(presented), None, "{presented:?}");
            let mut changed: Vec<char> = token.chars().collect();
            let at = usize::from(*at) % changed.len();
            match how % 3 {
                0 if changed[at] != *with => changed[at] = *with,
                0 => return,
                1 => changed.truncate(at),
                _ => changed.push(*with),
            }
            let changed: String = changed.into_iter().collect();
            assert_eq!((*who)(&changed), None, "{changed:?}");
        });
}
