//! API keys from the holder's side: a key authenticates until it expires or is revoked,
//! a token with a forged secret or an unknown id names nobody, and only an operator makes
//! keys.

use std::sync::Arc;
use std::time::Duration;

use abr_core::audit::Auditor;
use abr_core::principal::Principal;
use abr_core::store::InMemoryStore;
use abr_core::testing::ManualClock;
use abr_engine::Keys;
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
    let bad = keys.enroll(&acme, "../etc").await.unwrap_err();
    assert_eq!(bad.code(), "invalid_request");

    // Late: the code expired.
    let late = keys.enroll(&acme, "laptop").await.unwrap();
    clock.advance(abr_engine::ENROLLMENT_TTL + Duration::from_secs(1));
    assert!(
        keys.redeem_enrollment(late.code.expose(), "laptop")
            .await
            .unwrap()
            .is_none()
    );
    // In time: a runner credential of its runner id and tenant, and the code is spent.
    let code = keys.enroll(&acme, "laptop").await.unwrap();
    assert!(
        keys.authenticate(code.code.expose())
            .await
            .unwrap()
            .is_some_and(|p| p.role() == Role::Enrollment),
        "a code is an enrollment principal, with no right"
    );
    let enrolled = keys
        .redeem_enrollment(code.code.expose(), "laptop")
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
        keys.redeem_enrollment(code.code.expose(), "laptop")
            .await
            .unwrap()
            .is_none(),
        "once"
    );
    // Enrolled again: the older credential stops working.
    let again = keys.enroll(&acme, "laptop").await.unwrap();
    let newer = keys
        .redeem_enrollment(again.code.expose(), "laptop")
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
