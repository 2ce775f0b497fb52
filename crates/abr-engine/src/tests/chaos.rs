//! Tasks over the chaos layer on fakes: a provider that is busy, fails, times out or never
//! answers (a half-open socket) ends the run typed, retryable and with nothing done, within
//! the acquire deadline; a slow one only delays it; the same seed injects the same faults.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_core::DynSessionProvider;
use abr_core::chaos::{ChaosConfig, ChaosProvider, Fault};
use abr_core::principal::Right;
use abr_core::store::{InMemoryStore, TaskStore};
use abr_core::testing::{FakeContext, FakeProvider};
use abr_protocol::{ApproveRequest, TaskRecord, TaskState};
use serde_json::json;

use super::{agent, approver, checked};
use crate::task::runner::{TaskConfig, TaskRunner};

const T: &str = "tenant-a";
const ACQUIRE_DEADLINE: Duration = Duration::from_millis(300);

/// A fake browser whose page has a "Next page" link (harmless) leading to "Page 2".
fn next_page_site() -> FakeProvider {
    let fake = FakeProvider::new();
    fake.page().set_facts(
        "#next",
        abr_core::guard::ElementFacts {
            tag: "a".into(),
            name: "Next page".into(),
            ..abr_core::guard::ElementFacts::default()
        },
    );
    fake.page().text_after("#next", "Page 2");
    fake
}

fn runner(config: ChaosConfig) -> (Arc<ChaosProvider<FakeProvider>>, TaskRunner<FakeContext>) {
    let fake = next_page_site();
    let chaos = Arc::new(ChaosProvider::new(fake, config));
    let provider: DynSessionProvider<FakeContext> = chaos.clone();
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryStore::default());
    let runner = TaskRunner::new(provider, store).with_config(TaskConfig {
        acquire_timeout: ACQUIRE_DEADLINE,
        ..TaskConfig::default()
    });
    (chaos, runner)
}

async fn run(runner: &TaskRunner<FakeContext>) -> TaskRecord {
    let request = serde_json::from_value(json!({
        "plan": {
            "targetUrl": "https://shop.example/",
            "steps": [{"type": "click", "selector": "#next", "description": "Next page", "timeoutMs": 200}],
            "verification": {"method": "dom_check", "text": "Page 2"}
        }
    }))
    .unwrap();
    let created = runner
        .create(&checked(&agent(T), Right::Propose), request, None)
        .await
        .unwrap();
    let id = created.record.task_id.clone();
    runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &id,
            &ApproveRequest {
                approved_by: Some("alice".into()),
                plan_hash: created.record.plan_hash,
            },
        )
        .await
        .unwrap();
    runner.run(T, &id).await.unwrap().record
}

#[tokio::test]
async fn a_provider_that_fails_or_never_answers_ends_the_run_typed_with_nothing_done() {
    for (fault, config, code) in [
        (
            Fault::Busy,
            ChaosConfig {
                busy: 1.0,
                ..ChaosConfig::calm(1)
            },
            "provider_busy",
        ),
        (
            Fault::Unavailable,
            ChaosConfig {
                unavailable: 1.0,
                ..ChaosConfig::calm(1)
            },
            "provider_unavailable",
        ),
        (
            Fault::Timeout,
            ChaosConfig {
                timeout: 1.0,
                ..ChaosConfig::calm(1)
            },
            "provider_timeout",
        ),
        (
            Fault::Hang,
            ChaosConfig {
                hang: 1.0,
                ..ChaosConfig::calm(1)
            },
            // The engine's own acquire deadline ended it.
            "timeout",
        ),
    ] {
        let (chaos, runner) = runner(config);
        let started = Instant::now();
        let record = run(&runner).await;
        assert!(
            started.elapsed() < ACQUIRE_DEADLINE + Duration::from_secs(2),
            "{fault:?}: the run ended within its acquire deadline"
        );
        assert_eq!(record.state, TaskState::Failed, "{fault:?}: {record:?}");
        let error = record.error.unwrap();
        assert_eq!(error.code, code, "{fault:?}");
        assert!(
            error.retryable,
            "{fault:?}: nothing was done, so it may be retried"
        );
        assert!(record.step_results.is_empty(), "{fault:?}");
        assert_eq!(chaos.injected().get(&fault), Some(&1));
        assert_eq!(chaos.inner().acquired(), 0);
    }
    // Slow: the run waits and goes on.
    let (chaos, runner) = runner(ChaosConfig {
        slow_rate: 1.0,
        slow: Duration::from_millis(100),
        ..ChaosConfig::calm(1)
    });
    let record = run(&runner).await;
    assert_eq!(record.state, TaskState::Succeeded, "{record:?}");
    assert_eq!(chaos.injected().get(&Fault::Slow), Some(&1));
    assert_eq!(chaos.inner().open_leases(), 0);
}

#[tokio::test]
async fn a_seed_replays_the_same_faults_over_the_same_runs() {
    let config = ChaosConfig {
        busy: 0.3,
        unavailable: 0.2,
        ..ChaosConfig::calm(2026)
    };
    let mut outcomes = Vec::new();
    for _ in 0..2 {
        let (chaos, runner) = runner(config.clone());
        let mut states = Vec::new();
        for _ in 0..20 {
            let record = run(&runner).await;
            states.push((record.state, record.error.map(|e| e.code)));
        }
        assert_eq!(
            chaos.injected().values().sum::<u64>() as usize,
            states
                .iter()
                .filter(|(s, _)| *s == TaskState::Failed)
                .count()
        );
        assert_eq!(chaos.inner().open_leases(), 0, "every lease given back");
        outcomes.push(states);
    }
    assert_eq!(outcomes[0], outcomes[1]);
    assert!(outcomes[0].iter().any(|(s, _)| *s == TaskState::Succeeded));
    assert!(outcomes[0].iter().any(|(s, _)| *s == TaskState::Failed));
}

/// An observer that keeps nothing.
struct Unobserved;

impl crate::observed_store::StoreObserver for Unobserved {
    fn observe(&self, _op: &'static str, _took: Duration, _ok: bool) {}
}

/// Create, approve and run one task, each call allowed to fail (the store under faults):
/// its id, and its record as the run answered it (`None`: a call failed).
async fn run_allowing_failures(
    runner: &TaskRunner<FakeContext>,
) -> (Option<String>, Option<TaskRecord>) {
    let request = serde_json::from_value(json!({
        "plan": {
            "targetUrl": "https://shop.example/",
            "steps": [{"type": "click", "selector": "#next", "description": "Next page", "timeoutMs": 200}],
            "verification": {"method": "dom_check", "text": "Page 2"}
        }
    }))
    .unwrap();
    let Ok(created) = runner
        .create(&checked(&agent(T), Right::Propose), request, None)
        .await
    else {
        return (None, None);
    };
    let id = created.record.task_id.clone();
    let approved = runner
        .approve(
            &checked(&approver(T), Right::Approve),
            &id,
            &ApproveRequest {
                approved_by: Some("alice".into()),
                plan_hash: created.record.plan_hash,
            },
        )
        .await;
    if approved.is_err() {
        return (Some(id), None);
    }
    let record = runner.run(T, &id).await.ok().map(|r| r.record);
    (Some(id), record)
}

/// The store fails calls (before them: refused; after them: the answer lost, the call made)
/// and commits late, at seeded rates on every call: every call still answers typed, no
/// record claims a step the page did not see or denies one it saw, and after a restart's
/// recovery no task is left running.
#[tokio::test]
async fn store_faults_never_make_a_record_disagree_with_the_page() {
    use abr_core::chaos::{StoreChaos, StoreFault};
    use abr_core::store::{ListQuery, RecordStore, StoredTask};

    let fake = next_page_site();
    let page = fake.page();
    let provider: DynSessionProvider<FakeContext> = Arc::new(fake);
    let inner = Arc::new(InMemoryStore::default());
    let chaos = Arc::new(StoreChaos::new(
        2026,
        0.015,
        0.015,
        0.015,
        Duration::from_millis(5),
    ));
    let store = Arc::new(
        crate::observed_store::ObservedStore::new(inner.clone(), Arc::new(Unobserved))
            .with_faults(chaos.clone()),
    );
    let runner = TaskRunner::new(provider, store).with_config(TaskConfig {
        acquire_timeout: ACQUIRE_DEADLINE,
        ..TaskConfig::default()
    });

    let (mut answered, mut ids) = (0, Vec::new());
    for _ in 0..100 {
        let before = page.clicks_on("#next");
        let (id, record) = run_allowing_failures(&runner).await;
        let clicked = page.clicks_on("#next") - before;
        ids.extend(id);
        let Some(record) = record else { continue };
        answered += 1;
        match record.state {
            TaskState::Succeeded => assert_eq!(clicked, 1, "{record:?}"),
            TaskState::Failed if record.step_results.is_empty() => {
                assert_eq!(clicked, 0, "nothing done means nothing done: {record:?}");
            }
            _ => {}
        }
        assert!(clicked <= 1, "a run clicks once at most");
    }
    let injected = chaos.injected();
    for fault in [
        StoreFault::WriteFailure,
        StoreFault::LostAnswer,
        StoreFault::SlowCommit,
    ] {
        assert!(
            injected.get(&fault).copied().unwrap_or(0) > 0,
            "{fault:?}: {injected:?}"
        );
    }
    assert!(answered > 40, "most runs answered: {answered}");

    // A restart: what the faults left running is ended honestly (the store answers again).
    let restarted = TaskRunner::new(
        Arc::new(FakeProvider::new()) as DynSessionProvider<FakeContext>,
        inner.clone() as Arc<dyn TaskStore>,
    );
    restarted.recover_unfinished().await.unwrap();
    let listed = RecordStore::<StoredTask>::list(
        inner.as_ref(),
        T,
        &ListQuery {
            state: None,
            cursor: None,
            limit: 200,
        },
    )
    .await
    .unwrap();
    assert!(!listed.items.is_empty());
    for task in &listed.items {
        assert_ne!(task.record.state, TaskState::Running, "{:?}", task.record);
        if task.record.state == TaskState::Succeeded {
            assert!(!task.record.step_results.is_empty());
        }
    }
    // Every task a create answered is listed (none lost to an answer the store lost).
    for id in &ids {
        assert!(listed.items.iter().any(|t| &t.record.task_id == id), "{id}");
    }
    eprintln!(
        "store faults: {injected:?}; {answered} of 100 runs answered, {} tasks",
        listed.items.len()
    );
}

/// Refuses the first `refusals` record updates made after the page was clicked: the store
/// going down just as the run ends (a database restarting).
struct DownAfterTheClick {
    page: Arc<abr_core::testing::FakePage>,
    refusals: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl abr_core::chaos::StoreFaults for DownAfterTheClick {
    async fn before(&self, op: &'static str) -> Result<(), abr_core::CoreError> {
        use std::sync::atomic::Ordering;
        if op == "task.update"
            && self.page.clicks_on("#next") > 0
            && self
                .refusals
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return Err(abr_core::CoreError::Store(
                abr_core::error::StoreFailure::unavailable("the database is restarting"),
            ));
        }
        Ok(())
    }

    async fn after(&self, _op: &'static str, _ok: bool) -> Result<(), abr_core::CoreError> {
        Ok(())
    }
}

/// A store that is down for a moment as a run ends (a database restart) does not leave the
/// task `running` while its runner lives: its end is written once the store is back, and
/// the run answers it.
#[tokio::test]
async fn a_run_whose_end_meets_a_store_restarting_still_records_its_end() {
    use abr_core::store::RecordStore;

    let fake = next_page_site();
    let faults = Arc::new(DownAfterTheClick {
        page: fake.page(),
        refusals: std::sync::atomic::AtomicU32::new(3),
    });
    let inner = Arc::new(InMemoryStore::default());
    let store = Arc::new(
        crate::observed_store::ObservedStore::new(inner.clone(), Arc::new(Unobserved))
            .with_faults(faults.clone()),
    );
    let provider: DynSessionProvider<FakeContext> = Arc::new(fake);
    let runner = TaskRunner::new(provider, store).with_config(TaskConfig {
        acquire_timeout: ACQUIRE_DEADLINE,
        ..TaskConfig::default()
    });
    let (id, record) = run_allowing_failures(&runner).await;
    let id = id.expect("created");
    let record = record.expect("the run answered its end");
    assert_eq!(
        faults.refusals.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the store was down"
    );
    assert_ne!(record.state, TaskState::Running);
    let stored = RecordStore::<abr_core::store::StoredTask>::get(inner.as_ref(), T, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.record.state, record.state,
        "the end is the stored one"
    );
    assert!(stored.record.finished_at.is_some());
}
