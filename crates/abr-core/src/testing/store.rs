//! The store conformance suite: every store contract's promises, as checks any
//! implementation runs (the in-memory stores of the core, `abr-store`'s SQLite, and the next
//! shared store), like the providers' conformance suite.
//!
//! A store is handed in through a [`StoreHarness`]: it opens a fresh store, reopens it as
//! the next process would find it (a durable store; a store in memory keeps nothing across
//! processes and says so), and shows what it keeps at rest (its files), so that the suite
//! can look for secrets there. Each check is a plain `async fn` that panics with what broke.
//!
//! - [`task_records`], [`post_records`]: the one [`RecordStore`] contract, for tasks and for
//!   posts: a record is found only with its tenant; insert claims an idempotency key
//!   atomically (of racing inserts with one key, exactly one stores); update is a
//!   compare-and-swap (of racing updates from one version, exactly one wins); the mark is
//!   set outside it and is sticky; the unfinished records are every tenant's; a list pages
//!   through one tenant's records, newest first; all of it survives a reopen.
//! - [`keys_apart`]: tasks' and posts' idempotency keys are namespaces of their own.
//! - [`counters`]: increments below a bound are atomic under concurrency; per tenant; never
//!   below zero; sessions cleared alone.
//! - [`screenshots`], [`sessions`], [`frames`], [`sites`]: per tenant, as their contracts
//!   say; frames refused beyond the run's bounds by the store itself.
//! - [`keys`]: a key id is stored once; a key is found by its token's digest; revocation
//!   is set once and survives a reopen; keys are listed oldest first.
//! - [`evidence`]: evidence older than the cutoff is forgotten, outcomes stay.
//! - [`links`]: an approval link is found while open, taken once, forgotten once expired.
//! - [`events`]: per-tenant sequences without gap or repeat under concurrent appends; a
//!   reader sees them in order; a delivery goes to one claimer, is fenced by its attempt,
//!   is retried when due and when its claim lapsed; pruning keeps pending deliveries.
//! - [`artifacts`]: per tenant; the quota is checked with the write (of racing puts for the
//!   last slots, only as many as fit are kept); newest first; deleted once; kept across a
//!   reopen; expired with the evidence.
//! - [`sealed`]: inputs, cookies, post content, screenshots and artifacts are not readable
//!   at rest.

#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a conformance check fails by panicking with what broke"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use abr_protocol::{
    AgentPostResult, AgentSessionState, ArtifactInfo, ArtifactOrigin, Cookie, DomCheck, FrameInfo,
    FramePoint, PostContent, PostRecord, PostRequest, PostState, Risk, RunScreenshots,
    ScreenshotsMode, SecretValue, SiteDecision, SiteEntry, StepPlan, TaskRecord, TaskRequest,
    TaskState, TaskVerification,
};
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::artifact::ArtifactQuota;
use crate::guard::frames::{
    FrameRefused, FrameStore, MAX_FRAME_BYTES, MAX_FRAMES_PER_RUN, StoredFrame,
};
use crate::guard::sites::SiteStore;
use crate::store::artifacts::{ArtifactPut, ArtifactStore};
use crate::store::counters::{Counter, CounterStore};
use crate::store::events::{EventLog, Settle};
use crate::store::keys::{KeyStore, StoredKey};
use crate::store::links::{LinkStore, StoredLink};
use crate::store::posts::StoredPost;
use crate::store::records::{
    IdempotencyKey, Inserted, LedgerHeader, LedgerRecord, ListQuery, MAX_PAGE, RecordStore,
};
use crate::store::retention::{EvidenceStore, Expired};
use crate::store::screenshots::ScreenshotStore;
use crate::store::sessions::{SessionKey, SessionStore};
use crate::store::tasks::StoredTask;

/// A store under test.
#[async_trait]
pub trait StoreHarness<S: ?Sized>: Send {
    /// A new, empty store.
    async fn open(&mut self) -> Arc<S>;

    /// The store the next process finds, after this one was killed: a durable store lets
    /// go of `store` and opens again what was written; a store that keeps nothing across
    /// processes answers `None` (the checks after a restart are then skipped, and say so).
    async fn reopen(&mut self, store: Arc<S>) -> Option<Arc<S>>;

    /// Every byte the store keeps at rest (its files); `None` when it keeps nothing at rest.
    fn at_rest(&self) -> Option<Vec<u8>>;
}

/// A secret input of the sample task: never readable at rest.
pub const INPUT_CANARY: &str = "canary-conformance-input-6a1f";
/// A cookie value of the sample records and sessions: never readable at rest.
pub const COOKIE_CANARY: &str = "canary-conformance-cookie-90bd";
/// The content of the sample post: never readable at rest.
pub const CONTENT_CANARY: &str = "canary-conformance-content-3e57";
/// The pixels of the sample screenshot and frame: never readable at rest.
pub const PIXEL_CANARY: &str = "canary-conformance-pixels-c4d2";
/// The bytes of the sample artifact: never readable at rest.
pub const ARTIFACT_CANARY: &str = "canary-conformance-artifact-71e0";

/// A sample artifact `id` of `size` bytes, kept `minutes` after a fixed instant.
pub fn sample_artifact(id: &str, size: u64, minutes: i64) -> ArtifactInfo {
    ArtifactInfo {
        id: id.to_owned(),
        name: format!("{id}.txt"),
        media_type: "text/plain".to_owned(),
        size,
        sha256: "0".repeat(64),
        origin: ArtifactOrigin::Upload,
        run_id: None,
        created_at: OffsetDateTime::UNIX_EPOCH
            + time::Duration::nanoseconds(123_456_789)
            + time::Duration::minutes(minutes),
    }
}

fn session_state() -> AgentSessionState {
    AgentSessionState {
        cookies: vec![Cookie::new("sid", COOKIE_CANARY, "example.com")],
        ..AgentSessionState::default()
    }
}

/// A task of `tenant` with id `id` in `state`; its request holds an input
/// ([`INPUT_CANARY`]) and a session ([`COOKIE_CANARY`]): credentials.
pub fn sample_task(tenant: &str, id: &str, state: TaskState) -> StoredTask {
    StoredTask {
        ledger: LedgerHeader {
            tenant_id: tenant.into(),
            ..LedgerHeader::default()
        },
        request: TaskRequest {
            profile: None,
            plan: StepPlan {
                target_url: "https://example.com/".into(),
                steps: vec![],
                verification: TaskVerification::DomCheck {
                    check: DomCheck::default(),
                },
                risk: Risk::Low,
                reasoning: None,
                confidence: None,
                read_only: false,
                downloads: false,
            },
            inputs: BTreeMap::from([("password".to_owned(), SecretValue::new(INPUT_CANARY))]),
            secret_inputs: Vec::new(),
            session: Some(session_state()),
            session_id: None,
            scope: None,
            platform: None,
            tenant_id: Some(tenant.into()),
            proposal_id: None,
            dry_run: false,
            handoff: None,
        },
        record: TaskRecord {
            task_id: id.into(),
            state,
            plan_hash: "h".into(),
            steps: vec![],
            inputs: vec![],
            account: None,
            reasoning: None,
            risk: Risk::Low,
            approval_rule: "all".into(),
            approval: None,
            proposed_by: Some(abr_protocol::PrincipalRef {
                key_id: "key_sample".into(),
                name: "the sample agent".into(),
                role: abr_protocol::Role::Agent,
            }),
            proposal_id: None,
            step_results: vec![],
            extracted: BTreeMap::new(),
            screenshots: vec![],
            downloads: vec![],
            failed_step: None,
            error: None,
            created_at: OffsetDateTime::UNIX_EPOCH,
            started_at: None,
            finished_at: None,
            retry_of: None,
            assertion: None,
            read_only: false,
            dry_run: false,
            blocked: Vec::new(),
            pause: None,
            takeover_events: vec![],
            replay: None,
            session_check: None,
            browse: false,
            evidence_expired_at: None,
            preview: None,
            preview_note: None,
        },
    }
}

/// A post of `tenant` with id `id` in `state` (a final one with a result); its request
/// holds content ([`CONTENT_CANARY`]) and a session ([`COOKIE_CANARY`]).
pub fn sample_post(tenant: &str, id: &str, state: PostState) -> StoredPost {
    let finished = state != PostState::Running;
    StoredPost {
        ledger: LedgerHeader {
            tenant_id: tenant.into(),
            ..LedgerHeader::default()
        },
        record: PostRecord {
            post_id: id.into(),
            platform: "conformance".into(),
            state,
            result: finished.then(|| AgentPostResult {
                ok: true,
                verification: None,
                uncertain: false,
                needs_reauth: false,
                failure_stage: None,
                error: None,
                refreshed_session: None,
                timing: abr_protocol::Timing::default(),
                post_id: Some(id.into()),
            }),
            created_at: OffsetDateTime::UNIX_EPOCH,
            finished_at: None,
            retry_of: None,
            assertion: None,
            recheck: None,
        },
        request: Some(PostRequest {
            platform: "conformance".into(),
            session: session_state(),
            session_id: None,
            content: PostContent::text(CONTENT_CANARY),
            workspace_id: None,
            account_id: None,
            scope: None,
        }),
    }
}

fn key(key: &str, body: &str) -> IdempotencyKey {
    IdempotencyKey {
        key: key.into(),
        body_hash: body.into(),
    }
}

/// The [`RecordStore`] contract for task records.
pub async fn task_records<S>(harness: &mut impl StoreHarness<S>)
where
    S: RecordStore<StoredTask> + ?Sized,
{
    records(harness, |tenant, id, unfinished| {
        let state = if unfinished {
            TaskState::Running
        } else {
            TaskState::Succeeded
        };
        sample_task(tenant, id, state)
    })
    .await;
    state_counts(harness).await;
}

/// [`RecordStore::count_in_state`]: every tenant's tasks in a state, and the oldest one's
/// creation compared as an instant (a record written with another offset, or with more
/// fractional digits, is no older for its text).
async fn state_counts<S>(harness: &mut impl StoreHarness<S>)
where
    S: RecordStore<StoredTask> + ?Sized,
{
    let store = harness.open().await;
    let empty = store.count_in_state("pending_approval").await.unwrap();
    assert_eq!((empty.count, empty.oldest), (0, None), "nothing waits yet");
    let t0 = time::macros::datetime!(2026-12-06 10:00:00 UTC);
    let waiting = |tenant: &str, id: &str, created: OffsetDateTime| {
        let mut task = sample_task(tenant, id, TaskState::PendingApproval);
        task.record.created_at = created;
        task
    };
    // The oldest is t2's, written with an offset: 09:30 UTC, 10:30 on its clock.
    let oldest = time::macros::datetime!(2026-12-06 10:30:00 +01:00);
    for task in [
        waiting("t1", "w-1", t0),
        waiting("t1", "w-2", t0 + time::Duration::minutes(5)),
        waiting("t2", "w-3", oldest),
        sample_task("t1", "done", TaskState::Succeeded),
    ] {
        store.insert(&task, None).await.unwrap();
    }
    let counted = store.count_in_state("pending_approval").await.unwrap();
    assert_eq!(counted.count, 3, "every tenant's tasks waiting");
    assert_eq!(counted.oldest, Some(oldest), "the oldest, as an instant");
    assert_eq!(store.count_in_state("succeeded").await.unwrap().count, 1);
}

/// The [`RecordStore`] contract for post records.
pub async fn post_records<S>(harness: &mut impl StoreHarness<S>)
where
    S: RecordStore<StoredPost> + ?Sized,
{
    records(harness, |tenant, id, unfinished| {
        let state = if unfinished {
            PostState::Running
        } else {
            PostState::Succeeded
        };
        sample_post(tenant, id, state)
    })
    .await;
}

/// Lists: a tenant's records only, newest first, page by page to the end; filtered by
/// state; a record stored while a caller pages is on none of the pages after; a cursor no
/// list gave is refused.
async fn lists<R, S>(harness: &mut impl StoreHarness<S>, sample: fn(&str, &str, bool) -> R)
where
    R: LedgerRecord + std::fmt::Debug,
    S: RecordStore<R> + ?Sized,
{
    let kind = R::KIND;
    let store = harness.open().await;
    for i in 0..5 {
        store
            .insert(&sample("t1", &format!("l-{i}"), i % 2 == 0), None)
            .await
            .unwrap();
        if i < 2 {
            store
                .insert(&sample("t2", &format!("other-{i}"), true), None)
                .await
                .unwrap();
        }
    }
    let page = |cursor: Option<String>, state: Option<String>| ListQuery {
        state,
        cursor,
        limit: 2,
    };
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let listed = store.list("t1", &page(cursor, None)).await.unwrap();
        assert!(listed.items.len() <= 2, "{kind}: a page beyond its limit");
        seen.extend(listed.items.iter().map(|r| r.id().to_owned()));
        pages += 1;
        if pages == 1 {
            // Stored while the caller pages: not on a later page.
            store
                .insert(&sample("t1", "l-late", true), None)
                .await
                .unwrap();
        }
        match listed.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
        assert!(pages < 10, "{kind}: the list never ends");
    }
    assert_eq!(
        seen,
        ["l-4", "l-3", "l-2", "l-1", "l-0"],
        "{kind}: a tenant's records, newest first, each once, never another tenant's"
    );
    assert_eq!(pages, 3);
    let first = store.list("t1", &page(None, None)).await.unwrap();
    assert_eq!(
        first.items[0].id(),
        "l-late",
        "{kind}: the newest comes first"
    );
    let unfinished = sample("t1", "x", true).state_name();
    let listed = store
        .list(
            "t1",
            &ListQuery {
                state: Some(unfinished.clone()),
                cursor: None,
                limit: MAX_PAGE,
            },
        )
        .await
        .unwrap();
    let ids: Vec<_> = listed.items.iter().map(|r| r.id().to_owned()).collect();
    assert_eq!(
        ids,
        ["l-late", "l-4", "l-2", "l-0"],
        "{kind}: by state {unfinished}"
    );
    assert_eq!(listed.next, None);
    let other = store.list("t2", &page(None, None)).await.unwrap();
    assert!(other.items.iter().all(|r| r.header().tenant_id == "t2"));
    assert_eq!(other.items.len(), 2);
    let refused = store
        .list("t1", &page(Some("not-a-cursor".into()), None))
        .await;
    assert!(
        matches!(refused, Err(crate::error::CoreError::InvalidInput(_))),
        "{kind}: a made-up cursor was taken"
    );
    cursors_say_nothing_of_other_tenants(harness, sample).await;
}

/// A cursor is the tenant's alone: the cursors t1 pages through its records with are the
/// same whether t2 stored nothing or many records meanwhile (the attack: cursors that are
/// positions shared by every tenant, where t1, knowing how many records it has, reads how
/// many the others have), and another tenant's cursor is refused like a made-up one.
async fn cursors_say_nothing_of_other_tenants<R, S>(
    harness: &mut impl StoreHarness<S>,
    sample: fn(&str, &str, bool) -> R,
) where
    R: LedgerRecord + std::fmt::Debug,
    S: RecordStore<R> + ?Sized,
{
    let kind = R::KIND;
    let one = |cursor: Option<String>| ListQuery {
        state: None,
        cursor,
        limit: 1,
    };
    // One world where t2 is idle, one where it stores 7 records among t1's.
    let mut worlds = Vec::new();
    for others in [0usize, 7] {
        let store = harness.open().await;
        let t1 = |i: usize| sample("t1", &format!("c-{i}"), true);
        store.insert(&t1(0), None).await.unwrap();
        for i in 0..others {
            store
                .insert(&sample("t2", &format!("c-other-{i}"), true), None)
                .await
                .unwrap();
        }
        store.insert(&t1(1), None).await.unwrap();
        store.insert(&t1(2), None).await.unwrap();
        let mut cursors = Vec::new();
        let mut cursor = None;
        loop {
            let listed = store.list("t1", &one(cursor)).await.unwrap();
            match listed.next {
                Some(next) => {
                    cursors.push(next.clone());
                    cursor = Some(next);
                }
                None => break,
            }
            assert!(cursors.len() < 10, "{kind}: the list never ends");
        }
        assert_eq!(cursors.len(), 2, "{kind}: t1's three records, one a page");
        let foreign = match store.list("t2", &one(None)).await.unwrap().next {
            Some(theirs) => Some(store.list("t1", &one(Some(theirs))).await),
            None => None,
        };
        worlds.push((cursors, foreign));
    }
    // The attacker's count: its largest cursor read as a number, less its own 3 records.
    let counted = |cursors: &[String]| {
        cursors
            .iter()
            .filter_map(|c| c.parse::<i64>().ok())
            .max()
            .map_or(0, |n| n - 3)
    };
    assert_eq!(
        worlds[0].0,
        worlds[1].0,
        "{kind}: t1's cursors changed with what another tenant stored (read as positions, \
         they count {} records beside t1's)",
        counted(&worlds[1].0)
    );
    for (_, foreign) in worlds {
        assert!(
            foreign
                .is_none_or(|used| matches!(used, Err(crate::error::CoreError::InvalidInput(_)))),
            "{kind}: another tenant's cursor was taken"
        );
    }
}

async fn records<R, S>(harness: &mut impl StoreHarness<S>, sample: fn(&str, &str, bool) -> R)
where
    R: LedgerRecord + std::fmt::Debug,
    S: RecordStore<R> + ?Sized,
{
    lists(harness, sample).await;
    let kind = R::KIND;
    let store = harness.open().await;

    // Found only with its tenant.
    let a = sample("t1", "rec-a", true);
    assert_eq!(store.insert(&a, None).await.unwrap(), Inserted::New);
    let got = store.get("t1", "rec-a").await.unwrap();
    assert!(got.is_some(), "{kind}: a stored record is found");
    assert!(
        store.get("t2", "rec-a").await.unwrap().is_none(),
        "{kind}: another tenant's record is found as if it were one's own"
    );
    assert!(store.get("t1", "nope").await.unwrap().is_none());

    // Of racing inserts with one key, exactly one stores; the others name it.
    let racers = 8;
    let mut joins = Vec::new();
    for i in 0..racers {
        let store = Arc::clone(&store);
        let record = sample("t1", &format!("race-{i}"), true);
        joins.push(tokio::spawn(async move {
            let inserted = store
                .insert(&record, Some(&key("k-race", &format!("body-{i}"))))
                .await
                .unwrap();
            (i, inserted)
        }));
    }
    let mut winners = Vec::new();
    let mut named = BTreeSet::new();
    for join in joins {
        match join.await.unwrap() {
            (i, Inserted::New) => winners.push(i),
            (_, Inserted::Existing { id, body_hash }) => {
                named.insert((id, body_hash));
            }
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "{kind}: {} racing inserts with one idempotency key stored {}",
        racers,
        winners.len()
    );
    let winner = winners[0];
    assert!(
        named
            .iter()
            .all(|(id, body)| id == &format!("race-{winner}") && body == &format!("body-{winner}")),
        "{kind}: a taken key names another record or body than the one stored: {named:?}"
    );
    for i in (0..racers).filter(|i| *i != winner) {
        assert!(
            store
                .get("t1", &format!("race-{i}"))
                .await
                .unwrap()
                .is_none(),
            "{kind}: a record whose key was taken was stored anyway"
        );
    }
    assert_eq!(
        store.find_idempotency("t1", "k-race").await.unwrap(),
        Some((format!("race-{winner}"), format!("body-{winner}")))
    );
    // Keys are per tenant.
    assert_eq!(
        store
            .insert(&sample("t2", "race-t2", true), Some(&key("k-race", "x")))
            .await
            .unwrap(),
        Inserted::New,
        "{kind}: one tenant's key blocks another's"
    );

    // Update is a compare-and-swap on the version.
    let mut current = store.get("t1", "rec-a").await.unwrap().unwrap();
    let version = current.header().version;
    assert!(store.update(&current).await.unwrap());
    let stored = store.get("t1", "rec-a").await.unwrap().unwrap();
    assert_eq!(
        stored.header().version,
        version + 1,
        "{kind}: an update stores version + 1"
    );
    assert!(
        !store.update(&current).await.unwrap(),
        "{kind}: an update from a stale version was accepted"
    );
    current.header_mut().version = stored.header().version;
    // Of racing updates from one version, exactly one wins.
    let mut joins = Vec::new();
    for _ in 0..racers {
        let (store, record) = (Arc::clone(&store), current.clone());
        joins.push(tokio::spawn(
            async move { store.update(&record).await.unwrap() },
        ));
    }
    let mut won = 0;
    for join in joins {
        won += usize::from(join.await.unwrap());
    }
    assert_eq!(
        won, 1,
        "{kind}: {racers} updates from one version: {won} won (approval, retries and \
         assertions would happen {won} times)"
    );

    // The mark: outside the compare-and-swap, and sticky.
    let before = store.get("t1", "rec-a").await.unwrap().unwrap();
    assert!(!before.header().marked);
    store.mark("t1", "rec-a").await.unwrap();
    let marked = store.get("t1", "rec-a").await.unwrap().unwrap();
    assert!(marked.header().marked, "{kind}: the mark was not kept");
    assert_eq!(
        marked.header().version,
        before.header().version,
        "{kind}: the mark moved the version"
    );
    // An update from a copy read before the mark does not clear it.
    assert!(store.update(&before).await.unwrap());
    let after = store.get("t1", "rec-a").await.unwrap().unwrap();
    assert!(after.header().marked, "{kind}: an update cleared the mark");
    // Another tenant's mark and an unknown id change nothing.
    store.mark("t2", "rec-a").await.unwrap();
    store.mark("t1", "nope").await.unwrap();
    assert!(store.get("t1", "nope").await.unwrap().is_none());

    // The unfinished records are every tenant's, and only those.
    store
        .insert(&sample("t1", "done", false), None)
        .await
        .unwrap();
    store
        .insert(&sample("t3", "open-t3", true), None)
        .await
        .unwrap();
    let unfinished: BTreeSet<(String, String)> = store
        .unfinished()
        .await
        .unwrap()
        .iter()
        .map(|r| (r.header().tenant_id.clone(), r.id().to_owned()))
        .collect();
    assert!(unfinished.contains(&("t1".to_owned(), "rec-a".to_owned())));
    assert!(unfinished.contains(&("t3".to_owned(), "open-t3".to_owned())));
    assert!(
        !unfinished.contains(&("t1".to_owned(), "done".to_owned())),
        "{kind}: a finished record is listed as unfinished"
    );

    // After a restart: records, the mark, the keys and the unfinished list are there.
    let Some(store) = harness.reopen(store).await else {
        eprintln!("{kind} records: the store keeps nothing across processes: no restart check");
        return;
    };
    let again = store.get("t1", "rec-a").await.unwrap().unwrap();
    assert!(
        again.header().marked,
        "{kind}: the mark did not survive a restart"
    );
    assert_eq!(again.header().version, after.header().version);
    assert_eq!(
        store.find_idempotency("t1", "k-race").await.unwrap(),
        Some((format!("race-{winner}"), format!("body-{winner}"))),
        "{kind}: an idempotency key did not survive a restart"
    );
    let unfinished_again: BTreeSet<(String, String)> = store
        .unfinished()
        .await
        .unwrap()
        .iter()
        .map(|r| (r.header().tenant_id.clone(), r.id().to_owned()))
        .collect();
    assert_eq!(
        unfinished_again, unfinished,
        "{kind}: the unfinished records changed across a restart"
    );
}

/// Tasks' and posts' idempotency keys are namespaces of their own, in a store that keeps
/// both.
pub async fn keys_apart<S>(harness: &mut impl StoreHarness<S>)
where
    S: RecordStore<StoredTask> + RecordStore<StoredPost> + ?Sized,
{
    let store = harness.open().await;
    let k = key("shared-key", "body");
    let task = sample_task("t1", "task-1", TaskState::Running);
    let post = sample_post("t1", "post-1", PostState::Running);
    assert_eq!(
        RecordStore::<StoredTask>::insert(&*store, &task, Some(&k))
            .await
            .unwrap(),
        Inserted::New
    );
    assert_eq!(
        RecordStore::<StoredPost>::insert(&*store, &post, Some(&k))
            .await
            .unwrap(),
        Inserted::New,
        "a task's key blocked a post's"
    );
}

/// The [`CounterStore`] contract.
pub async fn counters<S>(harness: &mut impl StoreHarness<S>)
where
    S: CounterStore + ?Sized,
{
    let store = harness.open().await;
    let day = Counter::Executions {
        day: time::macros::date!(2026 - 06 - 09),
    };
    // Below the bound only.
    for _ in 0..3 {
        assert!(store.increment("t1", &day, 3).await.unwrap());
    }
    assert!(
        !store.increment("t1", &day, 3).await.unwrap(),
        "a counter went past its bound"
    );
    assert_eq!(store.count("t1", &day).await.unwrap(), 3);
    assert_eq!(
        store.count("t2", &day).await.unwrap(),
        0,
        "counters leak across tenants"
    );
    // Racing for the last units: exactly the bound is handed out.
    let mut joins = Vec::new();
    for _ in 0..16 {
        let store = Arc::clone(&store);
        joins.push(tokio::spawn(async move {
            store.increment("t1", &Counter::Sessions, 5).await.unwrap()
        }));
    }
    let mut granted = 0;
    for join in joins {
        granted += usize::from(join.await.unwrap());
    }
    assert_eq!(granted, 5, "16 racing increments below 5 granted {granted}");
    // Never below zero.
    let retries = Counter::Retries {
        task_id: "task-1".into(),
    };
    store.decrement("t1", &retries).await.unwrap();
    assert_eq!(store.count("t1", &retries).await.unwrap(), 0);
    assert!(store.increment("t1", &retries, 1).await.unwrap());
    store.decrement("t1", &retries).await.unwrap();
    store.decrement("t1", &retries).await.unwrap();
    assert_eq!(store.count("t1", &retries).await.unwrap(), 0);
    assert!(store.increment("t1", &retries, 1).await.unwrap());
    // Sessions are cleared alone, for every tenant.
    assert!(store.increment("t2", &Counter::Sessions, 5).await.unwrap());
    store.clear_sessions().await.unwrap();
    assert_eq!(store.count("t1", &Counter::Sessions).await.unwrap(), 0);
    assert_eq!(store.count("t2", &Counter::Sessions).await.unwrap(), 0);
    assert_eq!(
        store.count("t1", &day).await.unwrap(),
        3,
        "clearing the sessions cleared another counter"
    );
    let Some(store) = harness.reopen(store).await else {
        eprintln!("counters: the store keeps nothing across processes: no restart check");
        return;
    };
    assert_eq!(store.count("t1", &day).await.unwrap(), 3);
    assert_eq!(store.count("t1", &retries).await.unwrap(), 1);
}

/// The [`ScreenshotStore`] contract.
pub async fn screenshots<S>(harness: &mut impl StoreHarness<S>)
where
    S: ScreenshotStore + ?Sized,
{
    let store = harness.open().await;
    let image = PIXEL_CANARY.as_bytes().to_vec();
    store
        .put_screenshot("t1", "task-1", "end", image.clone())
        .await
        .unwrap();
    assert_eq!(
        store.screenshot("t1", "task-1", "end").await.unwrap(),
        Some(image.clone())
    );
    assert_eq!(
        store.screenshot("t2", "task-1", "end").await.unwrap(),
        None,
        "another tenant's screenshot is readable"
    );
    assert_eq!(
        store.screenshot("t1", "task-1", "other").await.unwrap(),
        None
    );
    store
        .put_screenshot("t1", "task-1", "end", b"replaced".to_vec())
        .await
        .unwrap();
    assert_eq!(
        store.screenshot("t1", "task-1", "end").await.unwrap(),
        Some(b"replaced".to_vec())
    );
    let Some(store) = harness.reopen(store).await else {
        eprintln!("screenshots: the store keeps nothing across processes: no restart check");
        return;
    };
    assert_eq!(
        store.screenshot("t1", "task-1", "end").await.unwrap(),
        Some(b"replaced".to_vec())
    );
}

/// A sample key `id` created `minutes` after a fixed instant.
pub fn sample_key(id: &str, minutes: i64) -> StoredKey {
    StoredKey {
        id: id.to_owned(),
        name: format!("holder of {id}"),
        role: abr_protocol::Role::Agent,
        tenant: Some("t1".to_owned()),
        read_only: minutes % 2 == 1,
        created_at: OffsetDateTime::UNIX_EPOCH + time::Duration::minutes(minutes),
        expires_at: Some(OffsetDateTime::UNIX_EPOCH + time::Duration::days(365)),
        revoked_at: None,
        digest: [u8::try_from(minutes.rem_euclid(256)).unwrap_or(0); 32],
    }
}

/// The [`KeyStore`] contract.
pub async fn keys<S>(harness: &mut impl StoreHarness<S>)
where
    S: KeyStore + ?Sized,
{
    let store = harness.open().await;
    let (first, second) = (sample_key("key_b", 1), sample_key("key_a", 2));
    store.insert_key(&second).await.unwrap();
    store.insert_key(&first).await.unwrap();
    let mut clash = sample_key("key_a", 9);
    clash.role = abr_protocol::Role::Operator;
    let taken = store.insert_key(&clash).await;
    assert!(
        matches!(&taken, Err(crate::error::CoreError::Store(e))
            if e.kind() == crate::error::store::StoreFailureKind::Conflict && e.is_retryable()),
        "a second key under one id is a conflict: {taken:?}"
    );
    assert_eq!(store.key("key_a").await.unwrap(), Some(second.clone()));
    assert_eq!(store.key("key_c").await.unwrap(), None);
    // A token is found by its digest, and only by it.
    assert_eq!(
        store.key_by_digest(&second.digest).await.unwrap(),
        Some(second.clone())
    );
    assert_eq!(store.key_by_digest(&[7; 32]).await.unwrap(), None);
    // One live credential per runner id.
    let runner = |id: &str| StoredKey {
        name: "erins-laptop".into(),
        role: abr_protocol::Role::Runner,
        read_only: false,
        ..sample_key(id, 5)
    };
    store.insert_key(&runner("key_r1")).await.unwrap();
    assert!(
        store.insert_key(&runner("key_r2")).await.is_err(),
        "two live credentials for one runner id"
    );
    let at = OffsetDateTime::UNIX_EPOCH + time::Duration::days(1);
    assert!(store.revoke_key("key_r1", at).await.unwrap());
    store.insert_key(&runner("key_r2")).await.unwrap();
    let listed: Vec<String> = store
        .keys()
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.id)
        .collect();
    assert_eq!(
        listed,
        ["key_b", "key_a", "key_r1", "key_r2"],
        "keys are listed oldest first (by creation, then id)"
    );
    let at = OffsetDateTime::UNIX_EPOCH + time::Duration::days(2);
    assert!(store.revoke_key("key_a", at).await.unwrap());
    assert!(
        !store
            .revoke_key("key_a", at + time::Duration::days(1))
            .await
            .unwrap(),
        "a key was revoked twice"
    );
    assert!(!store.revoke_key("key_c", at).await.unwrap());
    // Who linked a runner id last: one link per id, the later one replaces it.
    assert_eq!(store.runner_link("erins-laptop").await.unwrap(), None);
    let linked_at = OffsetDateTime::UNIX_EPOCH + time::Duration::days(3);
    store
        .link_runner("erins-laptop", "key_b", linked_at)
        .await
        .unwrap();
    store
        .link_runner(
            "erins-laptop",
            "key_a",
            linked_at + time::Duration::hours(1),
        )
        .await
        .unwrap();
    store
        .link_runner("other", "key_b", linked_at)
        .await
        .unwrap();
    let link = crate::store::keys::RunnerLink {
        runner_id: "erins-laptop".into(),
        key_id: "key_a".into(),
        linked_at: linked_at + time::Duration::hours(1),
    };
    assert_eq!(
        store.runner_link("erins-laptop").await.unwrap(),
        Some(link.clone())
    );
    let Some(store) = harness.reopen(store).await else {
        eprintln!("keys: the store keeps nothing across processes: no restart check");
        return;
    };
    let revoked = store.key("key_a").await.unwrap().unwrap();
    assert_eq!(revoked.revoked_at, Some(at), "revocation did not survive");
    assert_eq!(store.key("key_b").await.unwrap(), Some(first));
    assert_eq!(
        store.runner_link("erins-laptop").await.unwrap(),
        Some(link),
        "a runner's link did not survive"
    );
}

/// The [`SessionStore`] contract.
pub async fn sessions<S>(harness: &mut impl StoreHarness<S>)
where
    S: SessionStore + ?Sized,
{
    let store = harness.open().await;
    let mine = SessionKey::new("w1", "a1", "demo");
    store.save(&mine, session_state()).await.unwrap();
    assert_eq!(store.load(&mine).await.unwrap(), Some(session_state()));
    for other in [
        SessionKey::new("w2", "a1", "demo"),
        SessionKey::new("w1", "a2", "demo"),
        SessionKey::new("w1", "a1", "other"),
        SessionKey::stored("w1", "a1"),
    ] {
        assert_eq!(
            store.load(&other).await.unwrap(),
            None,
            "a session is found under another key: {other:?}"
        );
    }
    // Replaced, then deleted once.
    let replaced = AgentSessionState::default();
    store.save(&mine, replaced.clone()).await.unwrap();
    assert_eq!(store.load(&mine).await.unwrap(), Some(replaced));
    let stored = SessionKey::stored("w1", "s1");
    store.save(&stored, session_state()).await.unwrap();
    assert!(store.delete(&mine).await.unwrap());
    assert!(!store.delete(&mine).await.unwrap());
    assert_eq!(store.load(&mine).await.unwrap(), None);
    // Accounts: one workspace's and platform's, in order, paged by the last one given.
    for id in ["s3", "s2"] {
        store
            .save(&SessionKey::stored("w1", id), session_state())
            .await
            .unwrap();
    }
    store
        .save(&SessionKey::stored("w2", "s0"), session_state())
        .await
        .unwrap();
    let platform = crate::store::sessions::STORED_SESSION_PLATFORM;
    assert_eq!(
        store.accounts("w1", platform, None, 2).await.unwrap(),
        ["s1", "s2"],
        "a workspace's accounts, in order, never another's"
    );
    assert_eq!(
        store.accounts("w1", platform, Some("s2"), 2).await.unwrap(),
        ["s3"]
    );
    assert!(
        store
            .accounts("w1", "demo", None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let Some(store) = harness.reopen(store).await else {
        eprintln!("sessions: the store keeps nothing across processes: no restart check");
        return;
    };
    assert_eq!(store.load(&stored).await.unwrap(), Some(session_state()));
    assert_eq!(store.load(&mine).await.unwrap(), None);
}

fn frame(tag: u8, bytes: usize) -> StoredFrame {
    let mut jpeg = vec![0xFF, 0xD8, tag];
    jpeg.extend_from_slice(PIXEL_CANARY.as_bytes());
    jpeg.resize(bytes.max(jpeg.len()), tag);
    StoredFrame {
        info: FrameInfo {
            seq: 0,
            point: FramePoint::Click,
            url: "https://example.com/inbox".into(),
            domain: "example.com".into(),
            action: "click".into(),
            bytes: 0,
            taken_at: OffsetDateTime::UNIX_EPOCH,
            same_as: None,
        },
        jpeg,
    }
}

fn screenshots_on() -> RunScreenshots {
    RunScreenshots {
        screenshots: ScreenshotsMode::On,
        reason: None,
    }
}

/// The [`FrameStore`] contract: the bounds are the store's own.
pub async fn frames<S>(harness: &mut impl StoreHarness<S>)
where
    S: FrameStore + ?Sized,
{
    let store = harness.open().await;
    let off = RunScreenshots {
        screenshots: ScreenshotsMode::Off,
        reason: Some("tenant_setting".into()),
    };
    // The setting is recorded once.
    assert_eq!(
        store
            .begin_run("t1", "run-on", &screenshots_on())
            .await
            .unwrap(),
        screenshots_on()
    );
    assert_eq!(
        store.begin_run("t1", "run-on", &off).await.unwrap(),
        screenshots_on(),
        "a run's screenshots setting changed mid-run"
    );
    store.begin_run("t1", "run-off", &off).await.unwrap();
    // A frame the same as an earlier one says which; never a later one, itself or none.
    store
        .begin_run("t1", "run-same", &screenshots_on())
        .await
        .unwrap();
    let same_as = |of: u32| {
        let mut f = frame(7, 64);
        f.info.same_as = Some(of);
        f
    };
    for bad in [0, 1, 2] {
        assert!(
            matches!(
                store.put_frame("t1", "run-same", same_as(bad)).await,
                Err(FrameRefused::NotEarlier(n)) if n == bad
            ),
            "the first frame was stored as the same as frame {bad}"
        );
    }
    assert_eq!(
        store
            .put_frame("t1", "run-same", frame(7, 64))
            .await
            .unwrap(),
        1
    );
    assert!(matches!(
        store.put_frame("t1", "run-same", same_as(2)).await,
        Err(FrameRefused::NotEarlier(2))
    ));
    assert_eq!(
        store.put_frame("t1", "run-same", same_as(1)).await.unwrap(),
        2
    );
    let kept = store.frames("t1", "run-same").await.unwrap();
    assert_eq!(
        kept.iter().map(|f| f.same_as).collect::<Vec<_>>(),
        [None, Some(1)]
    );
    assert_eq!(
        store
            .frame("t1", "run-same", 2)
            .await
            .unwrap()
            .unwrap()
            .jpeg,
        frame(7, 64).jpeg
    );
    // Refusals: off, unknown run, too large, too many.
    assert!(matches!(
        store.put_frame("t1", "run-off", frame(1, 64)).await,
        Err(FrameRefused::ScreenshotsOff)
    ));
    assert!(matches!(
        store.put_frame("t1", "run-unknown", frame(1, 64)).await,
        Err(FrameRefused::UnknownRun)
    ));
    assert!(matches!(
        store
            .put_frame("t1", "run-on", frame(1, MAX_FRAME_BYTES + 1))
            .await,
        Err(FrameRefused::TooLarge(_))
    ));
    for i in 1..=MAX_FRAMES_PER_RUN {
        let seq = store
            .put_frame(
                "t1",
                "run-on",
                frame(u8::try_from(i % 250).unwrap_or(0), 64),
            )
            .await
            .unwrap();
        assert_eq!(seq, i, "frames are numbered from 1, in order");
    }
    assert!(
        matches!(
            store.put_frame("t1", "run-on", frame(0, 64)).await,
            Err(FrameRefused::TooMany(_))
        ),
        "a frame beyond the run's bound was stored"
    );
    assert_eq!(
        store.frames("t1", "run-on").await.unwrap().len(),
        usize::try_from(MAX_FRAMES_PER_RUN).unwrap_or(usize::MAX)
    );
    // Reads are per tenant.
    assert!(store.frames("t2", "run-on").await.unwrap().is_empty());
    assert!(store.frame("t2", "run-on", 1).await.unwrap().is_none());
    assert!(store.run_setting("t2", "run-on").await.unwrap().is_none());
    let first = store.frame("t1", "run-on", 1).await.unwrap().unwrap();
    assert_eq!(first.jpeg, frame(1, 64).jpeg);
    // The switch is per tenant, on by default.
    assert!(store.screenshots_enabled("t1").await.unwrap());
    store.set_screenshots_enabled("t1", false).await.unwrap();
    assert!(!store.screenshots_enabled("t1").await.unwrap());
    assert!(store.screenshots_enabled("t2").await.unwrap());
    let Some(store) = harness.reopen(store).await else {
        eprintln!("frames: the store keeps nothing across processes: no restart check");
        return;
    };
    assert!(!store.screenshots_enabled("t1").await.unwrap());
    assert_eq!(store.run_setting("t1", "run-off").await.unwrap(), Some(off));
    assert!(store.frame("t1", "run-on", 1).await.unwrap().is_some());
    assert_eq!(
        store.frames("t1", "run-same").await.unwrap()[1].same_as,
        Some(1),
        "which frame a frame is the same as was lost on reopening"
    );
}

/// The [`EvidenceStore`] contract: frames of old runs, and the extracted data and
/// screenshots of tasks that ended before the cutoff, are forgotten; outcomes stay; records
/// that have not ended are never touched; a second sweep removes nothing.
pub async fn evidence<S>(harness: &mut impl StoreHarness<S>)
where
    S: EvidenceStore
        + RecordStore<StoredTask>
        + ScreenshotStore
        + FrameStore
        + ArtifactStore
        + ?Sized,
{
    let day = time::Duration::days(1);
    // Fractional seconds of any length, as the records are written.
    let base = OffsetDateTime::UNIX_EPOCH + time::Duration::nanoseconds(123_456_789);
    let (old, cutoff, recent) = (base + day, base + 30 * day, base + 40 * day);
    let now = base + 60 * day;
    let store = harness.open().await;
    let ended = |id: &str, finished: OffsetDateTime| {
        let mut task = sample_task("t1", id, TaskState::Succeeded);
        task.record.finished_at = Some(finished);
        task.record.extracted = BTreeMap::from([("total".to_owned(), "42".into())]);
        task.record.screenshots = vec!["end".into()];
        task.record.step_results = vec![abr_protocol::StepResult {
            index: 0,
            action: "extract".into(),
            ok: true,
            committing: false,
            ms: 5,
            error: None,
            at: None,
            target: Some(abr_protocol::StepTarget {
                role: Some("table".into()),
                name: "Users".into(),
            }),
            url: Some("https://example.com/users".into()),
            typed_chars: None,
        }];
        task
    };
    let mut running = sample_task("t2", "task-running", TaskState::Running);
    running.record.created_at = OffsetDateTime::UNIX_EPOCH;
    running.record.extracted = BTreeMap::from([("partial".to_owned(), "1".into())]);
    for task in [ended("task-old", old), ended("task-new", recent), running] {
        store.insert(&task, None).await.unwrap();
        store
            .put_screenshot(&task.ledger.tenant_id, task.id(), "end", b"png".to_vec())
            .await
            .unwrap();
    }
    let at = |taken: OffsetDateTime| {
        let mut f = frame(1, 64);
        f.info.taken_at = taken;
        f
    };
    for run in ["run-old", "run-new"] {
        store.begin_run("t1", run, &screenshots_on()).await.unwrap();
        store.put_frame("t1", run, at(old)).await.unwrap();
        store.put_frame("t1", run, at(old)).await.unwrap();
    }
    // A run whose last frame is recent keeps all of its frames (numbers never reused).
    store.put_frame("t1", "run-new", at(recent)).await.unwrap();

    let quota = ArtifactQuota {
        max_count: 10,
        max_bytes: 1000,
    };
    for (id, at) in [("art_old", old), ("art_new", recent)] {
        let mut info = sample_artifact(id, 3, 0);
        info.created_at = at;
        let put = store.put_artifact("t1", &info, b"abc".to_vec(), quota);
        assert_eq!(put.await.unwrap(), ArtifactPut::Kept);
    }

    let expired = store.expire_evidence(cutoff, now).await.unwrap();
    assert_eq!(
        expired,
        Expired {
            records: 1,
            frames: 2,
            artifacts: 1,
        },
        "what the sweep removed"
    );
    let gone = store.get("t1", "task-old").await.unwrap().unwrap();
    assert_eq!(gone.record.state, TaskState::Succeeded, "the outcome stays");
    assert_eq!(gone.record.step_results.len(), 1, "the steps stay");
    let step = &gone.record.step_results[0];
    assert_eq!(
        (step.index, step.action.as_str(), step.ok, step.ms),
        (0, "extract", true, 5),
        "a step's own facts stay"
    );
    assert_eq!(
        (&step.target, &step.url),
        (&None, &None),
        "the page's facts (the element's name, the page) outlived retention"
    );
    assert!(
        gone.record.extracted.is_empty(),
        "extracted data outlived retention"
    );
    assert!(gone.record.screenshots.is_empty());
    assert_eq!(gone.record.evidence_expired_at, Some(now));
    assert_eq!(
        gone.ledger.version, 1,
        "an expiry is an update: the version moves on"
    );
    assert_eq!(
        store.screenshot("t1", "task-old", "end").await.unwrap(),
        None
    );
    assert!(store.frames("t1", "run-old").await.unwrap().is_empty());
    assert_eq!(store.frames("t1", "run-new").await.unwrap().len(), 3);
    let kept = store.get("t1", "task-new").await.unwrap().unwrap();
    assert_eq!(
        kept.record.extracted.len(),
        1,
        "a recent task lost its evidence"
    );
    assert_eq!(kept.record.evidence_expired_at, None);
    assert!(
        kept.record.step_results[0].target.is_some() && kept.record.step_results[0].url.is_some(),
        "a recent task lost its steps' page facts"
    );
    assert!(
        store
            .screenshot("t1", "task-new", "end")
            .await
            .unwrap()
            .is_some()
    );
    let unended = store.get("t2", "task-running").await.unwrap().unwrap();
    assert_eq!(
        unended.record.extracted.len(),
        1,
        "a run that has not ended was swept"
    );
    assert!(
        store
            .screenshot("t2", "task-running", "end")
            .await
            .unwrap()
            .is_some()
    );

    assert_eq!(
        store.expire_evidence(cutoff, now).await.unwrap(),
        Expired::default(),
        "a second sweep removed something"
    );
    let Some(store) = harness.reopen(store).await else {
        eprintln!("evidence: the store keeps nothing across processes: no restart check");
        return;
    };
    let gone = store.get("t1", "task-old").await.unwrap().unwrap();
    assert_eq!(gone.record.evidence_expired_at, Some(now));
    assert!(gone.record.extracted.is_empty());
}

fn site(domain: &str, decision: SiteDecision) -> SiteEntry {
    SiteEntry {
        domain: domain.into(),
        decision,
        decided_by: "owner@example.com".into(),
        decided_at: OffsetDateTime::UNIX_EPOCH,
    }
}

/// An approval link of tenant `t` whose token's digest is `[d; 32]`, minted by an approver
/// (links 2 and up decide a browse session's action).
fn sample_link(d: u8, expires_at: OffsetDateTime) -> StoredLink {
    StoredLink {
        digest: [d; 32],
        tenant: "t".into(),
        task_id: format!("task-{d}"),
        action: (d >= 2).then(|| format!("approval-{d}")),
        minted_by: crate::principal::Principal::new(
            "key_approver",
            "Alice Approver",
            abr_protocol::Role::Approver,
            crate::principal::Tenants::One("t".into()),
            false,
        )
        .unwrap(),
        expires_at,
    }
}

/// The [`LinkStore`] contract: a link is found by its digest while open, taken once (of
/// racing takes, one), forgotten once expired, bounded, and kept across a reopen.
pub async fn links<S>(harness: &mut impl StoreHarness<S>)
where
    S: LinkStore + ?Sized,
{
    let store = harness.open().await;
    let t0 = time::macros::datetime!(2026-12-06 10:00:00 UTC);
    let hour = time::Duration::HOUR;
    assert!(
        store
            .put_link(&sample_link(1, t0 + hour), t0, 2)
            .await
            .unwrap()
    );
    assert!(
        store
            .put_link(&sample_link(2, t0 + hour), t0, 2)
            .await
            .unwrap()
    );
    assert_eq!(
        store.link(&[1; 32], t0).await.unwrap(),
        Some(sample_link(1, t0 + hour)),
        "a link reads back whole"
    );
    assert_eq!(
        store.link(&[2; 32], t0).await.unwrap(),
        Some(sample_link(2, t0 + hour))
    );
    assert_eq!(store.link(&[9; 32], t0).await.unwrap(), None);
    assert!(
        !store
            .put_link(&sample_link(3, t0 + hour), t0, 2)
            .await
            .unwrap(),
        "no more than max_open open"
    );
    assert_eq!(store.link(&[3; 32], t0).await.unwrap(), None);
    // Expired: not found, and forgotten by the next put, which makes room.
    let later = t0 + 2 * hour;
    assert_eq!(store.link(&[1; 32], later).await.unwrap(), None);
    assert!(
        store
            .put_link(&sample_link(3, later + hour), later, 2)
            .await
            .unwrap()
    );
    assert_eq!(
        store.take_link(&[1; 32], later).await.unwrap(),
        None,
        "an expired link is never taken"
    );
    // Taken once, whoever races for it.
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.take_link(&[3; 32], later).await.unwrap() })
        })
        .collect();
    let mut taken = 0;
    for racer in racers {
        if let Some(link) = racer.await.unwrap() {
            assert_eq!(link, sample_link(3, later + hour));
            taken += 1;
        }
    }
    assert_eq!(taken, 1, "a link is taken once");
    assert_eq!(store.link(&[3; 32], later).await.unwrap(), None);
    // Kept across a reopen.
    assert!(
        store
            .put_link(&sample_link(4, later + hour), later, 10)
            .await
            .unwrap()
    );
    match harness.reopen(store).await {
        Some(store) => assert_eq!(
            store.take_link(&[4; 32], later).await.unwrap(),
            Some(sample_link(4, later + hour))
        ),
        None => eprintln!("links: this store keeps nothing across processes"),
    }
}

/// An event `name` of run `run` of tenant `tenant` at `at`.
fn sample_event(name: &str, tenant: &str, run: &str, at: OffsetDateTime) -> abr_protocol::RunEvent {
    abr_protocol::RunEvent {
        step: Some(3),
        ok: Some(true),
        ..abr_protocol::RunEvent::new(name, tenant, run, at)
    }
}

/// The [`EventLog`] contract: per-tenant sequences without gap or repeat however many
/// append at once, read in order and per tenant; deliveries claimed once, fenced by their
/// attempt, retried when due or when a claim lapsed, kept across a reopen.
pub async fn events<S>(harness: &mut impl StoreHarness<S>)
where
    S: EventLog + ?Sized,
{
    let store = harness.open().await;
    let t0 = time::macros::datetime!(2026-12-06 10:00:00 UTC);
    assert_eq!(store.last_event("t").await.unwrap(), 0);
    assert!(store.events_after("t", 0, 10).await.unwrap().is_empty());
    let first = sample_event("step_progress", "t", "run-1", t0);
    assert_eq!(store.append_event(&first, false).await.unwrap(), 1);
    assert_eq!(
        store
            .append_event(&sample_event("run_ended", "u", "run-9", t0), false)
            .await
            .unwrap(),
        1,
        "each tenant has its own sequence"
    );
    let read = store.events_after("t", 0, 10).await.unwrap();
    assert_eq!(read.len(), 1, "another tenant's events are never read");
    assert_eq!(
        (read[0].seq, &read[0].event),
        (1, &first),
        "an event reads back whole"
    );

    // Appends racing (from several connections on a shared store), while a reader follows:
    // the reader never sees a sequence before a smaller one.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..25 {
                    let event = sample_event("step_progress", "t", &format!("run-{w}-{i}"), t0);
                    seqs.push(store.append_event(&event, false).await.unwrap());
                }
                seqs
            })
        })
        .collect();
    let reader = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let mut seen = vec![1u64];
            while seen.len() < 101 {
                let last = *seen.last().unwrap();
                for e in store.events_after("t", last, 7).await.unwrap() {
                    assert_eq!(e.seq, *seen.last().unwrap() + 1, "a gap was read: {seen:?}");
                    seen.push(e.seq);
                }
                tokio::task::yield_now().await;
            }
            seen
        })
    };
    let mut all: Vec<u64> = Vec::new();
    for w in writers {
        all.extend(w.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (2..=101).collect::<Vec<_>>(), "no gap, no repeat");
    assert_eq!(reader.await.unwrap(), (1..=101).collect::<Vec<_>>());
    assert_eq!(store.last_event("t").await.unwrap(), 101);
    assert_eq!(store.events_after("t", 99, 10).await.unwrap().len(), 2);

    // Deliveries: due at once, claimed by one of racing claimers.
    let lease = std::time::Duration::from_secs(30);
    let a = store
        .append_event(&sample_event("run_ended", "t", "run-a", t0), true)
        .await
        .unwrap();
    let b = store
        .append_event(&sample_event("run_ended", "u", "run-b", t0), true)
        .await
        .unwrap();
    let claimers: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.claim_deliveries(t0, lease, 10).await.unwrap() })
        })
        .collect();
    let mut claimed = Vec::new();
    for c in claimers {
        claimed.extend(c.await.unwrap());
    }
    claimed.sort_by_key(|d| d.tenant.clone());
    assert_eq!(
        claimed
            .iter()
            .map(|d| (d.tenant.as_str(), d.seq, d.attempt, d.event.run_id.as_str()))
            .collect::<Vec<_>>(),
        vec![("t", a, 1, "run-a"), ("u", b, 1, "run-b")],
        "each delivery is claimed once"
    );
    assert!(
        store
            .claim_deliveries(t0, lease, 10)
            .await
            .unwrap()
            .is_empty(),
        "a claim holds for its lease"
    );
    // The claim of `t` fails and is retried in a minute; `u`'s claimer dies.
    let minute = time::Duration::MINUTE;
    assert!(
        store
            .settle_delivery("t", a, 1, Settle::RetryAt(t0 + minute))
            .await
            .unwrap()
    );
    assert!(
        store
            .claim_deliveries(t0 + time::Duration::SECOND, lease, 10)
            .await
            .unwrap()
            .is_empty(),
        "a retry waits until it is due"
    );
    let again = store
        .claim_deliveries(t0 + minute, lease, 10)
        .await
        .unwrap();
    let again: Vec<_> = again
        .iter()
        .map(|d| (d.tenant.as_str(), d.attempt))
        .collect();
    assert!(
        again.contains(&("t", 2)),
        "the retry is claimed when due: {again:?}"
    );
    assert!(
        again.contains(&("u", 2)),
        "a lapsed claim is claimed again: {again:?}"
    );
    assert!(
        !store
            .settle_delivery("u", b, 1, Settle::Delivered)
            .await
            .unwrap(),
        "the claimer whose lease lapsed cannot settle"
    );
    assert!(
        store
            .settle_delivery("u", b, 2, Settle::Delivered)
            .await
            .unwrap()
    );
    assert!(
        !store
            .settle_delivery("u", b, 2, Settle::Delivered)
            .await
            .unwrap(),
        "settled once"
    );
    // Pruning forgets old events, never one still to be delivered.
    let pruned = store.prune_events(t0 + minute).await.unwrap();
    assert_eq!(pruned, 101 + 1 + 1, "every old event but the pending one");
    let left = store.events_after("t", 0, 200).await.unwrap();
    assert_eq!(left.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![a]);
    assert_eq!(
        store
            .append_event(&sample_event("run_ended", "t", "run-c", t0 + minute), false)
            .await
            .unwrap(),
        a + 1,
        "sequences are never reused"
    );
    match harness.reopen(store).await {
        Some(store) => {
            assert_eq!(store.last_event("t").await.unwrap(), a + 1);
            let claims = store
                .claim_deliveries(t0 + 2 * minute, lease, 10)
                .await
                .unwrap();
            assert_eq!(
                claims
                    .iter()
                    .map(|d| (d.seq, d.attempt))
                    .collect::<Vec<_>>(),
                vec![(a, 3)],
                "a pending delivery survives the replica that claimed it"
            );
            assert!(
                store
                    .settle_delivery("t", a, 3, Settle::GiveUp)
                    .await
                    .unwrap()
            );
            assert!(
                store
                    .claim_deliveries(t0 + time::Duration::DAY, lease, 10)
                    .await
                    .unwrap()
                    .is_empty()
            );
        }
        None => eprintln!("events: this store keeps nothing across processes"),
    }
}

/// The [`SiteStore`] contract.
pub async fn sites<S>(harness: &mut impl StoreHarness<S>)
where
    S: SiteStore + ?Sized,
{
    let store = harness.open().await;
    store
        .decide("t1", site("zeta.example", SiteDecision::Deny))
        .await
        .unwrap();
    store
        .decide("t1", site("alpha.example", SiteDecision::Allow))
        .await
        .unwrap();
    store
        .decide("t2", site("other.example", SiteDecision::Deny))
        .await
        .unwrap();
    let domains: Vec<String> = store
        .sites("t1")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.domain)
        .collect();
    assert_eq!(
        domains,
        ["alpha.example", "zeta.example"],
        "sorted, the tenant's only"
    );
    // A decision replaces the domain's earlier one.
    store
        .decide("t1", site("zeta.example", SiteDecision::Allow))
        .await
        .unwrap();
    let zeta = store.sites("t1").await.unwrap();
    assert_eq!(zeta.len(), 2);
    assert!(zeta.iter().all(|e| e.decision == SiteDecision::Allow));
    assert!(store.remove("t1", "alpha.example").await.unwrap());
    assert!(!store.remove("t1", "alpha.example").await.unwrap());
    assert!(
        !store.remove("t1", "other.example").await.unwrap(),
        "a tenant removed another's decision"
    );
    let Some(store) = harness.reopen(store).await else {
        eprintln!("sites: the store keeps nothing across processes: no restart check");
        return;
    };
    assert_eq!(store.sites("t1").await.unwrap().len(), 1);
    assert_eq!(store.sites("t2").await.unwrap().len(), 1);
}

/// What holds credentials or shows pages is not readable at rest: a task's inputs and
/// session, a post's content and session, a stored session, a screenshot, a frame.
pub async fn sealed<S>(harness: &mut impl StoreHarness<S>)
where
    S: RecordStore<StoredTask>
        + RecordStore<StoredPost>
        + SessionStore
        + ScreenshotStore
        + FrameStore
        + ArtifactStore
        + ?Sized,
{
    let store = harness.open().await;
    RecordStore::<StoredTask>::insert(
        &*store,
        &sample_task("t1", "task-1", TaskState::Running),
        None,
    )
    .await
    .unwrap();
    RecordStore::<StoredPost>::insert(
        &*store,
        &sample_post("t1", "post-1", PostState::Running),
        None,
    )
    .await
    .unwrap();
    store
        .save(&SessionKey::stored("t1", "s1"), session_state())
        .await
        .unwrap();
    store
        .put_screenshot("t1", "task-1", "end", PIXEL_CANARY.as_bytes().to_vec())
        .await
        .unwrap();
    store
        .begin_run("t1", "task-1", &screenshots_on())
        .await
        .unwrap();
    store.put_frame("t1", "task-1", frame(7, 64)).await.unwrap();
    let quota = ArtifactQuota {
        max_count: 1,
        max_bytes: 1000,
    };
    let canary = ARTIFACT_CANARY.as_bytes().to_vec();
    let info = sample_artifact("art_sealed", canary.len() as u64, 0);
    let put = store.put_artifact("t1", &info, canary, quota);
    assert_eq!(put.await.unwrap(), ArtifactPut::Kept);
    let Some(bytes) = harness.at_rest() else {
        eprintln!("sealed: the store keeps nothing at rest: nothing to look at");
        return;
    };
    for canary in [
        INPUT_CANARY,
        COOKIE_CANARY,
        CONTENT_CANARY,
        PIXEL_CANARY,
        ARTIFACT_CANARY,
    ] {
        assert!(
            !bytes.windows(canary.len()).any(|w| w == canary.as_bytes()),
            "{canary} is readable at rest"
        );
    }
    drop(store);
}

/// The [`ArtifactStore`] contract: see the module's summary.
pub async fn artifacts<S>(harness: &mut impl StoreHarness<S>)
where
    S: ArtifactStore + ?Sized,
{
    let store = harness.open().await;
    let quota = ArtifactQuota {
        max_count: 4,
        max_bytes: 100,
    };
    let first = sample_artifact("art_first", 10, 1);
    let bytes = ARTIFACT_CANARY.as_bytes()[..10].to_vec();
    let put = store.put_artifact("t1", &first, bytes.clone(), quota);
    assert_eq!(put.await.unwrap(), ArtifactPut::Kept);
    assert_eq!(
        store.artifact("t1", "art_first").await.unwrap(),
        Some((first.clone(), bytes.clone()))
    );
    assert_eq!(
        store.artifact_info("t1", "art_first").await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.artifact("t2", "art_first").await.unwrap(),
        None,
        "another tenant's artifact is readable"
    );
    assert_eq!(store.artifact_info("t2", "art_first").await.unwrap(), None);
    assert!(
        !store.delete_artifact("t2", "art_first").await.unwrap(),
        "another tenant deleted an artifact"
    );
    assert!(
        store
            .put_artifact("t1", &first, bytes.clone(), quota)
            .await
            .is_err(),
        "an id was kept twice"
    );

    // Over the bytes: refused, whatever the count.
    let big = sample_artifact("art_big", 91, 2);
    let put = store.put_artifact("t1", &big, vec![0; 91], quota);
    assert_eq!(put.await.unwrap(), ArtifactPut::OverQuota);

    // Eight racing puts for the three slots left: exactly three are kept.
    let mut joins = Vec::new();
    for i in 0..8 {
        let store = Arc::clone(&store);
        joins.push(tokio::spawn(async move {
            let info = sample_artifact(&format!("art_race{i}"), 5, 10 + i);
            store
                .put_artifact("t1", &info, vec![b'x'; 5], quota)
                .await
                .unwrap()
        }));
    }
    let mut results = Vec::new();
    for join in joins {
        results.push(join.await.unwrap());
    }
    let kept = results.iter().filter(|r| **r == ArtifactPut::Kept).count();
    assert_eq!(kept, 3, "racing puts passed the quota: {results:?}");
    // Another tenant's quota is its own.
    let theirs = sample_artifact("art_theirs", 10, 3);
    let put = store.put_artifact("t2", &theirs, vec![1; 10], quota);
    assert_eq!(put.await.unwrap(), ArtifactPut::Kept);

    let listed = store.artifacts("t1").await.unwrap();
    assert_eq!(listed.len(), 4);
    assert!(
        listed
            .windows(2)
            .all(|w| w[0].created_at >= w[1].created_at),
        "not newest first"
    );
    assert_eq!(listed.last(), Some(&first));
    assert!(store.delete_artifact("t1", "art_first").await.unwrap());
    assert!(!store.delete_artifact("t1", "art_first").await.unwrap());
    assert_eq!(store.artifact("t1", "art_first").await.unwrap(), None);

    // Expiry: everything kept before the cutoff, every tenant.
    let cutoff = sample_artifact("x", 0, 12).created_at;
    let expired = store.expire_artifacts(cutoff).await.unwrap();
    assert_eq!(expired, 1 + kept_before(&results, 2), "expired");
    assert_eq!(store.artifact_info("t2", "art_theirs").await.unwrap(), None);
    assert_eq!(store.expire_artifacts(cutoff).await.unwrap(), 0, "twice");
    let left = store.artifacts("t1").await.unwrap();
    assert_eq!(left.len() as u64, 3 - kept_before(&results, 2));

    let Some(store) = harness.reopen(store).await else {
        eprintln!("artifacts: the store keeps nothing across processes: no restart check");
        return;
    };
    assert_eq!(store.artifacts("t1").await.unwrap(), left);
    let (info, bytes) = store.artifact("t1", &left[0].id).await.unwrap().unwrap();
    assert_eq!((info, bytes), (left[0].clone(), vec![b'x'; 5]));
}

/// How many of the first `n` racing puts were kept (they were kept before minute `10 + n`).
fn kept_before(results: &[ArtifactPut], n: usize) -> u64 {
    results
        .iter()
        .take(n)
        .filter(|r| **r == ArtifactPut::Kept)
        .count() as u64
}
