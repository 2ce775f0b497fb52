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
