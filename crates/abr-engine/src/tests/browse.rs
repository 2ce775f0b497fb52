//! Browse sessions on fakes: a brain opens a session, reads snapshots, acts on references;
//! every action goes through the rails (read-only and dry run refuse committing actions
//! before they reach the page), handoffs are reported once per page, references are checked
//! before anything reaches the browser, idle sessions close, and a closed session gives its
//! browser and its tenant's slot back and leaves a record that never holds what was typed.
//! Under the approval rule a committing action waits for an approver (not the key that
//! opened the session), runs once approved, and a rejection closes the session with nothing
//! of it sent; a write the page sends on an action the rule did not foresee is held below
//! the page the same way.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use super::{agent, approver, checked};
use abr_core::principal::Right;
use std::sync::Arc;
use std::time::Duration;

use crate::error::EngineError;
use crate::task::browses::BrowseConfig;
use crate::task::runner::{TaskConfig, TaskRunner};
use abr_core::approval::ApprovalRule;
use abr_core::guard::{ElementFacts, FrameStore, PageSignals};
use abr_core::limits::TenantLimits;
use abr_core::store::{InMemoryStore, TaskStore};
use abr_core::testing::{FakeContext, FakePage, FakeProvider};
use abr_core::{CoreError, DynSessionProvider};
use abr_protocol::{
    ActOutcome, ActionApprovalState, ActionDecision, BlockedBy, BrowseAction, BrowseRequest,
    CommitClass, PauseReason, SecretValue, SnapshotQuery, TaskState,
};
use serde_json::json;

const T: &str = "tenant-a";
const TYPED: &str = "canary-7f3e-shoes";

struct H {
    provider: Arc<FakeProvider>,
    page: Arc<FakePage>,
    runner: TaskRunner<FakeContext>,
    frames: Arc<abr_core::guard::InMemoryFrameStore>,
}

fn h_with(config: TaskConfig) -> H {
    let provider = Arc::new(FakeProvider::new());
    let page = provider.page();
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryStore::default());
    let frames = Arc::new(abr_core::guard::InMemoryFrameStore::default());
    let runner = TaskRunner::new(dyn_provider, store)
        .with_frames(frames.clone())
        .with_config(config)
        .with_browse_config(BrowseConfig {
            act_timeout: Duration::from_millis(300),
            ..BrowseConfig::default()
        });
    // e1 = #next (a link), e2 = #pay (a button labelled Pay now), e3 = #q (a search field).
    page.set_facts(
        "#next",
        ElementFacts {
            tag: "a".into(),
            name: "Next page".into(),
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
    page.set_facts(
        "#q",
        ElementFacts {
            tag: "input".into(),
            input_type: Some("search".into()),
            name: "Search".into(),
            ..ElementFacts::default()
        },
    );
    page.set_text("Shop");
    H {
        provider,
        page,
        runner,
        frames,
    }
}

/// Approval off: a trusted setup, where a read-write session commits at once.
fn h() -> H {
    h_with(TaskConfig {
        approval: ApprovalRule::Off,
        ..TaskConfig::default()
    })
}

/// The runner's default: every committing action waits for an approver.
fn h_approving() -> H {
    h_with(TaskConfig::default())
}

fn decision(id: &str) -> ActionDecision {
    ActionDecision {
        approval_id: id.to_owned(),
        stated_by: None,
    }
}

fn open(read_only: bool, dry_run: bool) -> BrowseRequest {
    serde_json::from_value(json!({
        "url": "https://shop.example/cart",
        "readOnly": read_only,
        "dryRun": dry_run,
    }))
    .unwrap()
}

fn click(r: &str) -> BrowseAction {
    BrowseAction::Click {
        reference: r.into(),
    }
}

fn type_into(r: &str) -> BrowseAction {
    BrowseAction::Type {
        reference: r.into(),
        text: SecretValue::new(TYPED),
        submit: false,
    }
}

#[tokio::test]
async fn a_brain_reads_acts_and_closes_and_the_record_says_what_it_did() {
    let h = h();
    h.page.text_after("#pay", "Paid");
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    assert_eq!(opened.first.outcome, ActOutcome::Done);
    let refs: Vec<(&str, &str)> = opened
        .first
        .snapshot
        .elements
        .iter()
        .map(|e| (e.reference.as_str(), e.name.as_str()))
        .collect();
    assert_eq!(
        refs,
        [("e1", "Next page"), ("e2", "Pay now"), ("e3", "Search")]
    );
    let id = opened.browse_id.clone();
    assert!(id.starts_with("browse_"), "{id}");

    let typed = h.runner.browse_act(T, &id, type_into("e3")).await.unwrap();
    assert_eq!(typed.outcome, ActOutcome::Done);
    assert!(!typed.committing, "typing in a search box commits nothing");
    let paid = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    assert_eq!(paid.outcome, ActOutcome::Done);
    assert!(paid.committing, "Pay now commits");
    assert_eq!(paid.snapshot.text, "Paid", "the click reached the page");

    let record = h.runner.get(T, &id).await.unwrap();
    assert!(record.browse);
    assert_eq!(record.state, TaskState::Running);
    assert_eq!(record.step_results.len(), 3, "navigate, type, click");
    assert_eq!(h.provider.open_leases(), 1);

    let closed = h.runner.browse_close(T, &id).await.unwrap();
    assert_eq!((closed.actions, closed.committing_actions), (3, 1));
    assert_eq!(h.provider.open_leases(), 0, "the browser is released");
    let record = h.runner.get(T, &id).await.unwrap();
    assert_eq!(record.state, TaskState::Closed);
    assert!(record.approval.is_none(), "nothing was approved");
    assert_eq!(
        record.steps,
        [
            "open https://shop.example/cart",
            "type into e3 (input \"Search\")",
            "click e2 (button \"Pay now\")",
        ]
    );
    // Each action's result names its element (never what was typed into it).
    let targets: Vec<Option<&str>> = record
        .step_results
        .iter()
        .map(|r| r.target.as_ref().map(|t| t.name.as_str()))
        .collect();
    assert_eq!(targets, [None, Some("Search"), Some("Pay now")]);
    assert!(record.step_results.iter().all(|r| r.at.is_some()));
    let stored = serde_json::to_string(&record).unwrap();
    assert!(!stored.contains(TYPED), "what was typed is never recorded");
    // Closed is closed.
    let again = h.runner.browse_act(T, &id, click("e1")).await.unwrap_err();
    assert!(matches!(again, EngineError::BrowseNotFound), "{again:?}");
}

fn wait(
    reference: Option<&str>,
    text: Option<&str>,
    url: Option<&str>,
    ms: Option<u64>,
) -> BrowseAction {
    BrowseAction::Wait {
        reference: reference.map(str::to_owned),
        text: text.map(str::to_owned),
        url: url.map(str::to_owned),
        ms,
    }
}

/// A brain waits for what it expects instead of polling snapshots: an element, a text, a
/// URL, or time; exactly one, bounded by the action deadline; one not met is a failure.
#[tokio::test]
async fn a_brain_waits_for_an_element_a_text_a_url_or_time_bounded() {
    let h = h();
    h.page.text_after("#pay", "Paid");
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    let id = opened.browse_id.clone();
    let paid = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    assert_eq!(paid.outcome, ActOutcome::Done);
    for met in [
        wait(Some("e1"), None, None, None),
        wait(None, Some("Paid"), None, None),
        wait(None, None, Some("shop.example/cart"), None),
        wait(None, None, None, Some(20)),
    ] {
        let answer = h.runner.browse_act(T, &id, met.clone()).await.unwrap();
        assert_eq!(answer.outcome, ActOutcome::Done, "{met:?}: {answer:?}");
        assert!(!answer.committing, "a wait commits nothing");
    }
    let unmet = h
        .runner
        .browse_act(T, &id, wait(None, Some("Refunded"), None, None))
        .await
        .unwrap();
    assert_eq!(unmet.outcome, ActOutcome::Failed, "{unmet:?}");
    // Exactly one thing to wait for, and no longer than an action may take.
    for refused in [
        wait(None, None, None, None),
        wait(Some("e1"), Some("Paid"), None, None),
        wait(None, None, None, Some(0)),
        wait(None, None, None, Some(3_600_000)),
    ] {
        let e = h
            .runner
            .browse_act(T, &id, refused.clone())
            .await
            .unwrap_err();
        assert_eq!(e.code(), "invalid_request", "{refused:?}: {e:?}");
    }
    let record = h.runner.get(T, &id).await.unwrap();
    assert!(
        record.steps.iter().any(|s| s == "wait 20 ms"),
        "{:?}",
        record.steps
    );
}

#[tokio::test]
async fn a_read_only_session_cannot_click_pay_and_a_dry_run_rehearses() {
    for (read_only, dry_run, by) in [
        (true, false, BlockedBy::ReadOnly),
        (false, true, BlockedBy::DryRun),
        (true, true, BlockedBy::ReadOnly),
    ] {
        let h = h();
        h.page.text_after("#pay", "Paid");
        let opened = h
            .runner
            .browse_open(&checked(&agent(T), Right::Browse), open(read_only, dry_run))
            .await
            .unwrap();
        assert_eq!((opened.read_only, opened.dry_run), (read_only, dry_run));
        let id = opened.browse_id;
        // Reading and typing in a search box are not committing: allowed.
        let typed = h.runner.browse_act(T, &id, type_into("e3")).await.unwrap();
        assert_eq!(typed.outcome, ActOutcome::Done);
        let refused = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
        assert_eq!(refused.outcome, ActOutcome::Refused, "{refused:?}");
        assert!(!refused.committing);
        let blocked = refused.blocked.unwrap();
        assert_eq!(blocked.blocked_by, by);
        assert_eq!(blocked.class, CommitClass::CommittingLabel);
        assert_eq!(blocked.verb.as_deref(), Some("pay"));
        assert_eq!(
            refused.error.unwrap().code,
            "blocked_action",
            "the refusal is typed"
        );
        assert_eq!(h.page.text(), "Shop", "the click never reached the page");
        // Enter on the button is a click on it: refused too.
        let pressed = h
            .runner
            .browse_act(
                T,
                &id,
                BrowseAction::Press {
                    reference: Some("e2".into()),
                    key: "Enter".into(),
                },
            )
            .await
            .unwrap();
        assert_eq!(pressed.outcome, ActOutcome::Refused, "{pressed:?}");
        // The link is not committing: it goes.
        let next = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
        assert_eq!(next.outcome, ActOutcome::Done);
        let record = h.runner.get(T, &id).await.unwrap();
        assert_eq!(record.blocked.len(), 2);
        assert!(!record.step_results.iter().any(|r| r.committing));
        h.runner.browse_close(T, &id).await.unwrap();
    }
}

#[tokio::test]
async fn references_are_checked_before_anything_reaches_the_browser() {
    let h = h();
    let id = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap()
        .browse_id;
    let before = h.runner.get(T, &id).await.unwrap().step_results.len();
    // A selector smuggled in as a reference.
    for bad in ["e1\"], #pay, [x=\"", "#pay", "e", "e12345678", ""] {
        let e = h.runner.browse_act(T, &id, click(bad)).await.unwrap_err();
        assert!(
            matches!(e, EngineError::Core(CoreError::InvalidInput(_))),
            "{bad:?}: {e:?}"
        );
    }
    // A reference no snapshot gave.
    let e = h.runner.browse_act(T, &id, click("e99")).await.unwrap_err();
    assert!(matches!(e, EngineError::RefNotFound(_)), "{e:?}");
    // Not an http(s) URL.
    for url in ["file:///etc/passwd", "javascript:alert(1)", "not a url"] {
        let e = h
            .runner
            .browse_act(T, &id, BrowseAction::Navigate { url: url.into() })
            .await
            .unwrap_err();
        assert!(
            matches!(e, EngineError::Core(CoreError::InvalidInput(_))),
            "{url}: {e:?}"
        );
    }
    let e = h
        .runner
        .browse_act(
            T,
            &id,
            BrowseAction::Press {
                reference: None,
                key: "x".repeat(41),
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(e, EngineError::Core(CoreError::InvalidInput(_))),
        "{e:?}"
    );
    assert_eq!(
        h.runner.get(T, &id).await.unwrap().step_results.len(),
        before,
        "nothing was acted on"
    );
    // Another tenant does not see the session at all.
    for e in [
        h.runner
            .browse_act("tenant-b", &id, click("e1"))
            .await
            .unwrap_err(),
        h.runner
            .browse_snapshot("tenant-b", &id, SnapshotQuery::default())
            .await
            .unwrap_err(),
        h.runner.browse_close("tenant-b", &id).await.unwrap_err(),
    ] {
        assert!(matches!(e, EngineError::BrowseNotFound), "{e:?}");
    }
    h.runner.browse_close(T, &id).await.unwrap();
}

#[tokio::test]
async fn a_handoff_is_reported_once_per_page_and_the_session_stays_open() {
    let h = h();
    let id = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap()
        .browse_id;
    h.page.set_signals(Some(PageSignals {
        url: "https://shop.example/verify".into(),
        status: Some(200),
        captcha: true,
        text: "verify you are human".into(),
        ..PageSignals::default()
    }));
    let first = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(first.outcome, ActOutcome::Paused, "{first:?}");
    assert_eq!(first.pause.unwrap().reason, PauseReason::Challenge);
    let second = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(
        second.outcome,
        ActOutcome::Done,
        "the brain was told; the session goes on"
    );
    h.runner.browse_close(T, &id).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn idle_sessions_close_and_give_their_browser_and_slot_back() {
    let config = TaskConfig {
        limits: TenantLimits {
            concurrent_sessions: 1,
            ..TenantLimits::default()
        },
        ..TaskConfig::default()
    };
    let h = h_with(config);
    let mut request = open(false, false);
    request.idle_seconds = Some(5);
    let id = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), request.clone())
        .await
        .unwrap()
        .browse_id;
    // The tenant's one session is taken.
    let e = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), request.clone())
        .await
        .unwrap_err();
    assert!(matches!(e, EngineError::TenantLimit { .. }), "{e:?}");
    tokio::time::advance(Duration::from_secs(3)).await;
    assert_eq!(h.runner.browse_sweep().await, 0, "not idle long enough");
    h.runner
        .browse_snapshot(T, &id, SnapshotQuery::default())
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(4)).await;
    assert_eq!(h.runner.browse_sweep().await, 0, "a call resets the clock");
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(h.runner.browse_sweep().await, 1);
    assert_eq!(h.provider.open_leases(), 0);
    let e = h
        .runner
        .browse_snapshot(T, &id, SnapshotQuery::default())
        .await
        .unwrap_err();
    assert!(matches!(e, EngineError::BrowseNotFound), "{e:?}");
    let record = h.runner.get(T, &id).await.unwrap();
    assert_eq!(record.state, TaskState::Closed);
    assert_eq!(record.error.unwrap().code, "browse_idle");
    // The slot came back.
    let again = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), request)
        .await
        .unwrap();
    h.runner.browse_close(T, &again.browse_id).await.unwrap();
    // Bad idle times are refused.
    for idle in [0, 3601] {
        let mut bad = open(false, false);
        bad.idle_seconds = Some(idle);
        let e = h
            .runner
            .browse_open(&checked(&agent(T), Right::Browse), bad)
            .await
            .unwrap_err();
        assert!(
            matches!(e, EngineError::Core(CoreError::InvalidInput(_))),
            "{idle}: {e:?}"
        );
    }
}

#[tokio::test]
async fn concurrent_opens_never_pass_the_runners_cap() {
    // One slot; the first open holds it while its browser starts (it never does here).
    let provider = Arc::new(FakeProvider::new());
    provider.hang_acquires(true);
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryStore::default());
    let runner = Arc::new(
        TaskRunner::new(dyn_provider, store).with_browse_config(BrowseConfig {
            max_open: 1,
            ..BrowseConfig::default()
        }),
    );
    let opens: Vec<_> = (0..4)
        .map(|_| {
            let runner = Arc::clone(&runner);
            tokio::spawn(async move {
                runner
                    .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
                    .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut busy = 0;
    for open in &opens {
        if open.is_finished() {
            busy += 1;
        }
    }
    assert_eq!(busy, 3, "three of four opens are refused at once");
    for open in opens {
        if open.is_finished() {
            let e = open.await.unwrap().unwrap_err();
            assert_eq!(e.code(), "provider_busy", "{e}");
        } else {
            open.abort();
        }
    }
    // The held slot is given back when its open is abandoned: the next open gets it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    provider.hang_acquires(false);
    let opened = runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    runner.browse_close(T, &opened.browse_id).await.unwrap();
}

// Paused time: the page's timer (60 ms) and the settle window (150 ms) fire in their order
// whatever the machine's load (under real time a loaded CI once missed the 90 ms margin).
#[tokio::test(start_paused = true)]
async fn what_a_page_posts_is_refused_under_read_only_and_committing_otherwise() {
    // "Next page" is a link (harmless), but the page's script posts when it is clicked:
    // at once, or a moment after (behind a timer), which is still the click's. A writable
    // session's answer says so (a brain told otherwise may click again), whatever else the
    // answer did or did not wait for.
    for (read_only, posts_after) in [(true, None), (false, None), (false, Some(60))] {
        let h = h();
        h.page
            .request_on("#next", "POST", "https://shop.example/api/like");
        if let Some(ms) = posts_after {
            h.page.scripts_send_after(Duration::from_millis(ms));
        }
        let opened = h
            .runner
            .browse_open(&checked(&agent(T), Right::Browse), open(read_only, false))
            .await
            .unwrap();
        let next = opened.first.snapshot.elements[0].reference.clone();
        let acted = h
            .runner
            .browse_act(T, &opened.browse_id, click(&next))
            .await
            .unwrap();
        let record = h.runner.get(T, &opened.browse_id).await.unwrap();
        if read_only {
            assert_eq!(acted.outcome, ActOutcome::Refused);
            assert!(!acted.committing);
            let blocked = acted.blocked.unwrap();
            assert_eq!(blocked.class, CommitClass::NetworkWrite);
            assert_eq!(blocked.blocked_by, BlockedBy::ReadOnly);
            assert_eq!(
                (blocked.method.as_deref(), blocked.host.as_deref()),
                (Some("POST"), Some("shop.example"))
            );
            assert!(h.page.sent().is_empty(), "nothing left the browser");
            assert!(!record.step_results[1].committing);
        } else {
            assert_eq!(acted.outcome, ActOutcome::Done, "{acted:?}");
            assert!(
                acted.committing,
                "the page's write makes the action committing (posted after {posts_after:?} ms)"
            );
            assert_eq!(h.page.sent().len(), 1);
            assert!(record.step_results[1].committing);
        }
        let closed = h.runner.browse_close(T, &opened.browse_id).await.unwrap();
        assert_eq!(closed.committing_actions, usize::from(!read_only));
    }
}

#[tokio::test]
async fn a_committing_action_waits_for_an_approver_and_runs_once_when_approved() {
    let h = h_approving();
    h.page.text_after("#pay", "Paid");
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    let id = opened.browse_id.clone();
    // Reading and typing in a search box commit nothing: they run.
    let typed = h.runner.browse_act(T, &id, type_into("e3")).await.unwrap();
    assert_eq!(typed.outcome, ActOutcome::Done);

    let asked = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    assert_eq!(asked.outcome, ActOutcome::Paused);
    assert_eq!(asked.pause.unwrap().reason, PauseReason::ApprovalRequired);
    assert!(!asked.committing);
    assert_eq!(
        asked.snapshot.text, "Shop",
        "the click never reached the page"
    );
    let approval = asked.approval.unwrap();
    assert_eq!(approval.state, ActionApprovalState::Pending);
    assert_eq!(
        (approval.role.as_deref(), approval.name.as_deref()),
        (Some("button"), Some("Pay now"))
    );
    assert_eq!(approval.page, "https://shop.example/cart");
    assert!(approval.message.contains("approve"), "{}", approval.message);
    // Asking again is the same approval, and still nothing reaches the page.
    let again = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    assert_eq!(again.approval.unwrap().approval_id, approval.approval_id);
    assert_eq!(again.snapshot.text, "Shop");
    assert_eq!(
        h.runner.browse_approval(T, &id).await.unwrap().approval_id,
        approval.approval_id
    );

    // The brain's own key cannot approve (no right), nor can an approver name another id.
    let own = crate::caller::Caller::checked(&agent(T), Right::Approve).unwrap_err();
    assert!(matches!(own, CoreError::Forbidden(_)), "{own:?}");
    let stale = h
        .runner
        .browse_decide(
            &checked(&approver(T), Right::Approve),
            &id,
            &decision("appr_other"),
            true,
        )
        .await
        .unwrap_err();
    assert!(matches!(stale, EngineError::ActionNotPending), "{stale:?}");
    // Another tenant's approver does not find the session.
    let other = h
        .runner
        .browse_decide(
            &checked(&approver("tenant-b"), Right::Approve),
            &id,
            &decision(&approval.approval_id),
            true,
        )
        .await
        .unwrap_err();
    assert!(matches!(other, EngineError::BrowseNotFound), "{other:?}");

    let approved = h
        .runner
        .browse_decide(
            &checked(&approver(T), Right::Approve),
            &id,
            &decision(&approval.approval_id),
            true,
        )
        .await
        .unwrap();
    assert_eq!(approved.state, ActionApprovalState::Approved);
    assert_eq!(approved.decided_by.unwrap().name, "alice");
    // Approving "Pay now" does not let another action through.
    let next = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(next.outcome, ActOutcome::Done, "a link commits nothing");
    let paid = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    assert_eq!(paid.outcome, ActOutcome::Done, "{paid:?}");
    assert!(paid.committing);
    assert_eq!(
        paid.snapshot.text, "Paid",
        "the approved click reached the page"
    );
    // Once: the next committing action asks again.
    let third = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    assert_eq!(third.outcome, ActOutcome::Paused);
    assert_ne!(third.approval.unwrap().approval_id, approval.approval_id);

    let record = h.runner.get(T, &id).await.unwrap();
    assert_eq!(record.approval.unwrap().approved_by, "alice");
    assert!(
        record
            .steps
            .iter()
            .any(|s| s == "click e2 (button \"Pay now\") (approved by alice)"),
        "{:?}",
        record.steps
    );
    h.runner.browse_close(T, &id).await.unwrap();
}

/// Issue 34, finding 7: while an approved action runs, the page's own background write (a
/// DELETE its timer sends, already refused while writes were held) stays refused; the
/// action's own post leaves; and the approved action answers done, never
/// `approval_required` again. On main before the fix the DELETE left with the approved
/// click and the click was asked about again.
#[tokio::test]
async fn an_approved_actions_window_admits_only_what_the_action_sends() {
    let h = h_approving();
    h.page.text_after("#pay", "Paid");
    // The approved click posts, and the page's timer fires again meanwhile.
    h.page
        .request_on("#pay", "DELETE", "https://shop.example/api/item/7");
    h.page
        .request_on("#pay", "POST", "https://shop.example/api/pay");
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    let id = opened.browse_id.clone();
    // The page's timer deletes while nobody acts: held.
    assert!(
        !h.page
            .page_sends("DELETE", "https://shop.example/api/item/7")
            .await
    );
    let asked = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    let approval = asked.approval.expect("the click waits for an approver");
    h.runner
        .browse_decide(
            &checked(&approver(T), Right::Approve),
            &id,
            &decision(&approval.approval_id),
            true,
        )
        .await
        .unwrap();
    let paid = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    assert_eq!(paid.outcome, ActOutcome::Done, "{paid:?}");
    assert!(paid.approval.is_none() && paid.pause.is_none(), "{paid:?}");
    assert!(paid.committing);
    assert_eq!(
        h.page.sent(),
        [("POST".to_owned(), "https://shop.example/api/pay".to_owned())],
        "only the action's own post left"
    );
    let blocked = paid.blocked.expect("the page's own write is named");
    assert_eq!(blocked.method.as_deref(), Some("DELETE"));
    h.runner.browse_close(T, &id).await.unwrap();
}

#[tokio::test]
async fn a_rejected_action_closes_the_session_with_nothing_of_it_committed() {
    let h = h_approving();
    h.page.text_after("#pay", "Paid");
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    let id = opened.browse_id.clone();
    let asked = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    let approval = asked.approval.unwrap();
    let rejected = h
        .runner
        .browse_decide(
            &checked(&approver(T), Right::Approve),
            &id,
            &decision(&approval.approval_id),
            false,
        )
        .await
        .unwrap();
    assert_eq!(rejected.state, ActionApprovalState::Rejected);
    let gone = h.runner.browse_act(T, &id, click("e2")).await.unwrap_err();
    assert!(matches!(gone, EngineError::BrowseNotFound), "{gone:?}");
    assert_eq!(h.provider.open_leases(), 0, "the browser is released");
    let record = h.runner.get(T, &id).await.unwrap();
    assert_eq!(record.state, TaskState::Closed);
    assert_eq!(record.error.unwrap().code, "rejected");
    assert!(record.step_results.iter().all(|r| !r.committing));
    assert!(h.page.sent().is_empty(), "nothing left the browser");
}

#[tokio::test]
async fn a_write_the_rule_did_not_foresee_is_held_below_the_page_until_approved() {
    // "Next page" is a link (the rule lets it run), but the page's script posts on it.
    let h = h_approving();
    h.page
        .request_on("#next", "POST", "https://shop.example/api/like");
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    let id = opened.browse_id.clone();
    let held = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(held.outcome, ActOutcome::Paused, "{held:?}");
    assert_eq!(held.pause.unwrap().reason, PauseReason::ApprovalRequired);
    let blocked = held.blocked.unwrap();
    assert_eq!(blocked.blocked_by, BlockedBy::AwaitingApproval);
    assert_eq!(blocked.method.as_deref(), Some("POST"));
    assert!(h.page.sent().is_empty(), "the write never left the browser");
    let approval = held.approval.unwrap();
    assert_eq!(approval.name.as_deref(), Some("Next page"));

    h.runner
        .browse_decide(
            &checked(&approver(T), Right::Approve),
            &id,
            &decision(&approval.approval_id),
            true,
        )
        .await
        .unwrap();
    let sent = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(sent.outcome, ActOutcome::Done, "{sent:?}");
    assert!(sent.committing);
    assert_eq!(
        h.page.sent().len(),
        1,
        "the approved action's write left, once"
    );
    let closed = h.runner.browse_close(T, &id).await.unwrap();
    assert_eq!(closed.committing_actions, 1);
}

#[tokio::test]
async fn read_only_and_dry_run_sessions_never_ask_they_refuse() {
    let h = h_approving();
    for (read_only, dry_run) in [(true, false), (false, true)] {
        let opened = h
            .runner
            .browse_open(&checked(&agent(T), Right::Browse), open(read_only, dry_run))
            .await
            .unwrap();
        let acted = h
            .runner
            .browse_act(T, &opened.browse_id, click("e2"))
            .await
            .unwrap();
        assert_eq!(acted.outcome, ActOutcome::Refused);
        assert!(acted.approval.is_none());
        h.runner.browse_close(T, &opened.browse_id).await.unwrap();
    }
}

#[tokio::test]
async fn the_key_that_opened_a_session_never_approves_its_actions_even_an_operators() {
    let h = h_approving();
    let operator = abr_core::principal::Actor::operator(T).unwrap();
    let opened = h
        .runner
        .browse_open(&checked(&operator, Right::Browse), open(false, false))
        .await
        .unwrap();
    let id = opened.browse_id.clone();
    let asked = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    let approval = asked.approval.unwrap();
    let own = h
        .runner
        .browse_decide(
            &checked(&operator, Right::Approve),
            &id,
            &decision(&approval.approval_id),
            true,
        )
        .await
        .unwrap_err();
    assert!(matches!(own, EngineError::SelfApproval), "{own:?}");
    assert!(h.page.sent().is_empty());
    assert_eq!(
        h.runner.browse_approval(T, &id).await.unwrap().state,
        ActionApprovalState::Pending,
        "still waiting"
    );
    h.runner.browse_close(T, &id).await.unwrap();
}

#[tokio::test]
async fn a_snapshot_the_brain_reads_leaves_a_frame() {
    let h = h();
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    let id = opened.browse_id.clone();
    // A frame takes about as long as a page read: the brain has its answer without waiting
    // for it, and the next action waits for it (never a click under its blur).
    h.page.frame_takes(&[Duration::from_millis(60)]);
    h.runner
        .browse_snapshot(T, &id, SnapshotQuery::default())
        .await
        .unwrap();
    // The frame's own task runs when this one yields (a current-thread runtime).
    tokio::task::yield_now().await;
    assert!(
        h.page.blurred(),
        "the snapshot answered while its frame was taken"
    );
    let clicked = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(clicked.outcome, ActOutcome::Done);
    h.runner.browse_close(T, &id).await.unwrap();
    assert!(!h.page.blurred());
    let under_blur = h.page.under_blur();
    assert!(
        under_blur.iter().all(|seen| seen == "read"),
        "only reads reached the page under a frame's blur: {under_blur:?}"
    );
    let frames = h.frames.frames(T, &id).await.unwrap();
    let points: Vec<_> = frames
        .iter()
        .map(|f| (f.point, f.action.as_str()))
        .collect();
    assert_eq!(
        points,
        [
            (abr_protocol::FramePoint::Navigation, "navigate"),
            (abr_protocol::FramePoint::Read, "snapshot"),
            (abr_protocol::FramePoint::Click, "click"),
            (abr_protocol::FramePoint::Completion, "completion"),
        ],
        "{frames:?}"
    );
}

/// A browse session that only read since its last frame ends with that frame kept again
/// as its completion frame. One whose last move was an action (its frame is started as the
/// action answers, before anything was read beside it) ends with a capture of its own, and
/// its page is not even asked.
#[tokio::test]
async fn a_session_that_only_read_since_its_last_frame_ends_with_it_kept_again() {
    use abr_protocol::FramePoint::{Click, Completion, Navigation, Read};
    let h = h();
    h.page.watch_frames(true);
    let read_only = opened_and_read(&h).await;
    h.runner.browse_close(T, &read_only).await.unwrap();
    assert_eq!(
        kept(&h, &read_only).await,
        [(Navigation, None), (Read, None), (Completion, Some(2))]
    );

    let asked = h.page.still_checks();
    let acted = opened_and_read(&h).await;
    let clicked = h.runner.browse_act(T, &acted, click("e1")).await.unwrap();
    assert_eq!(clicked.outcome, ActOutcome::Done);
    h.runner.browse_close(T, &acted).await.unwrap();
    assert_eq!(
        kept(&h, &acted).await,
        [
            (Navigation, None),
            (Read, None),
            (Click, None),
            (Completion, None)
        ]
    );
    assert_eq!(
        h.page.still_checks(),
        asked,
        "a page the brain acted on was asked"
    );
}

/// The frames session `id` kept: each one's point, and the frame it repeats.
async fn kept(h: &H, id: &str) -> Vec<(abr_protocol::FramePoint, Option<u32>)> {
    let frames = h.frames.frames(T, id).await.unwrap();
    frames.iter().map(|f| (f.point, f.same_as)).collect()
}

/// A session opened by an agent whose page the brain read once: its id.
async fn opened_and_read(h: &H) -> String {
    let id = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap()
        .browse_id;
    h.runner
        .browse_snapshot(T, &id, SnapshotQuery::default())
        .await
        .unwrap();
    id
}

/// The page turns into a captcha.
fn captcha(h: &H) {
    h.page.set_signals(Some(PageSignals {
        url: "https://shop.example/verify".into(),
        status: Some(200),
        captcha: true,
        text: "verify you are human".into(),
        ..PageSignals::default()
    }));
}

fn open_with_handoff(wait: u64) -> BrowseRequest {
    serde_json::from_value(json!({
        "url": "https://shop.example/cart",
        "handoff": {"waitSeconds": wait},
    }))
    .unwrap()
}

async fn takeover_events(h: &H, id: &str) -> Vec<String> {
    let record = h.runner.get(T, id).await.unwrap();
    record
        .takeover_events
        .iter()
        .map(|e| e.event.clone())
        .collect()
}

/// With `handoff`, a page that calls for a person pauses the session like a task: its
/// actions wait (nothing reaches the page) until a person takes over and resumes it, and
/// every transition is on the record.
#[tokio::test]
async fn a_paused_session_is_taken_over_and_resumed_and_the_brain_goes_on() {
    let h = h();
    let id = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open_with_handoff(60))
        .await
        .unwrap()
        .browse_id;
    captcha(&h);
    // The click's frame is slower than the pause's own: the person still never gets the
    // page under its blur.
    h.page
        .frame_takes(&[Duration::from_millis(200), Duration::from_millis(5)]);
    let paused = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(paused.outcome, ActOutcome::Paused, "{paused:?}");
    assert!(!h.page.blurred(), "the session paused under a frame's blur");
    let pause = paused.pause.unwrap();
    assert_eq!(pause.reason, PauseReason::Challenge);
    let takeover = pause.takeover_id.clone().expect("a takeover to resolve");
    assert!(pause.expires_at.is_some());
    let record = h.runner.get(T, &id).await.unwrap();
    assert_eq!(record.state, TaskState::Paused);
    assert_eq!(record.pause.as_ref().unwrap().takeover_id, takeover);
    // While a person is asked for, the brain's actions wait: nothing reaches the page.
    h.page.set_signals(None);
    let acted = h.page.actions().len();
    let waiting = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(waiting.outcome, ActOutcome::Paused);
    assert_eq!(waiting.pause.unwrap().takeover_id, Some(takeover.clone()));
    assert_eq!(
        h.page.actions().len(),
        acted,
        "an action ran during the pause"
    );
    // A person takes over (the live view's token) and resumes.
    let active = h.runner.take_over(T, &id, "person").await.unwrap();
    assert_eq!(active.takeover_id, takeover);
    assert_eq!(h.runner.resume(T, &id, "person").await.unwrap(), takeover);
    assert_eq!(
        takeover_events(&h, &id).await,
        ["takeover_required", "takeover_active", "takeover_resumed"]
    );
    assert_eq!(
        h.runner.get(T, &id).await.unwrap().state,
        TaskState::Running
    );
    let goes_on = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(goes_on.outcome, ActOutcome::Done, "{goes_on:?}");
    h.runner.browse_close(T, &id).await.unwrap();
}

/// A takeover a person ends, or nobody resumes in time, closes the session with nothing
/// more done.
#[tokio::test]
async fn an_ended_or_expired_takeover_closes_the_session() {
    for end in [true, false] {
        let h = h();
        let id = h
            .runner
            .browse_open(&checked(&agent(T), Right::Browse), open_with_handoff(1))
            .await
            .unwrap()
            .browse_id;
        captcha(&h);
        let paused = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
        assert_eq!(paused.outcome, ActOutcome::Paused);
        if end {
            h.runner.end_takeover(T, &id, "person").await.unwrap();
        } else {
            tokio::time::sleep(Duration::from_millis(1100)).await;
            h.runner.browse_sweep().await;
        }
        let record = h.runner.get(T, &id).await.unwrap();
        assert_eq!(record.state, TaskState::Closed, "{record:?}");
        let code = if end {
            "takeover_ended"
        } else {
            "takeover_expired"
        };
        assert_eq!(record.error.unwrap().code, code);
        assert!(matches!(
            h.runner.browse_act(T, &id, click("e1")).await,
            Err(EngineError::BrowseNotFound)
        ));
        assert_eq!(h.provider.released(), 1, "the browser is given back");
    }
}

/// The brain asks for a value it must not invent; a person hands it over: typed into the
/// field, on the page, and nowhere else (not the record, not the answers, not the log).
#[tokio::test]
async fn a_value_a_person_supplies_reaches_the_page_and_nothing_else() {
    const SECRET: &str = "canary-supplied-code-4411";
    let logs = super::capture_logs();
    let h = h();
    let id = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap()
        .browse_id;
    let request: abr_protocol::InputRequest =
        serde_json::from_value(json!({"ref": "e3", "prompt": "The code from your phone"})).unwrap();
    let pause = h
        .runner
        .browse_request_input(T, &id, &request)
        .await
        .unwrap();
    assert_eq!(pause.reason, PauseReason::NeedsInput);
    assert!(pause.message.contains("The code from your phone"));
    let record = h.runner.get(T, &id).await.unwrap();
    assert_eq!(
        record.pause.as_ref().unwrap().input_ref.as_deref(),
        Some("e3")
    );
    // A second request while one waits is refused.
    assert!(matches!(
        h.runner.browse_request_input(T, &id, &request).await,
        Err(EngineError::TakeoverPending)
    ));
    // The brain waits.
    let waiting = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(waiting.outcome, ActOutcome::Paused);
    // The person hands the value over.
    let supplied: abr_protocol::SuppliedInput =
        serde_json::from_value(json!({"value": SECRET})).unwrap();
    let takeover = h
        .runner
        .supply_input(T, &id, supplied, "person")
        .await
        .unwrap();
    assert_eq!(Some(takeover), pause.takeover_id);
    let typed: Vec<String> = h
        .page
        .actions()
        .iter()
        .filter_map(|a| match a {
            abr_core::step_runner::BrowserAction::Type { value, .. } => {
                Some(value.expose().to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(typed, [SECRET], "the value reached the field");
    // The brain goes on; nowhere is the value.
    let goes_on = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(goes_on.outcome, ActOutcome::Done, "{goes_on:?}");
    assert!(!serde_json::to_string(&goes_on).unwrap().contains(SECRET));
    let record = h.runner.get(T, &id).await.unwrap();
    assert!(!serde_json::to_string(&record).unwrap().contains(SECRET));
    assert_eq!(
        takeover_events(&h, &id).await,
        ["takeover_required", "takeover_resumed"]
    );
    h.runner.browse_close(T, &id).await.unwrap();
    assert!(!logs.contents().contains(SECRET), "the value reached a log");
    // Nothing waits any more: another value is refused.
    let again: abr_protocol::SuppliedInput = serde_json::from_value(json!({"value": "x"})).unwrap();
    assert!(
        h.runner
            .supply_input(T, &id, again, "person")
            .await
            .is_err()
    );
}

/// A control that fails twice in a row pauses `stuck`, like a plan's step; with `handoff`
/// a person takes that step over.
#[tokio::test]
async fn a_control_failing_twice_pauses_stuck() {
    let h = h();
    let id = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open_with_handoff(60))
        .await
        .unwrap()
        .browse_id;
    h.page.fault_on(
        "#next",
        abr_core::testing::FakeFault::Fail(abr_core::step_runner::StepFailureKind::NotFound),
    );
    // The fault reaches the element's reference with the next snapshot.
    h.runner
        .browse_snapshot(T, &id, SnapshotQuery::default())
        .await
        .unwrap();
    let first = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(first.outcome, ActOutcome::Failed, "{first:?}");
    let second = h.runner.browse_act(T, &id, click("e1")).await.unwrap();
    assert_eq!(second.outcome, ActOutcome::Paused, "{second:?}");
    let pause = second.pause.unwrap();
    assert_eq!(pause.reason, PauseReason::Stuck);
    assert!(pause.takeover_id.is_some());
    h.runner.browse_close(T, &id).await.unwrap();
}

#[tokio::test]
async fn an_approver_sees_a_redacted_preview_with_the_element_outlined() {
    let h = h_approving();
    h.page.set_box(
        "#pay",
        abr_core::guard::ElementBox {
            x: 40.4,
            y: 300.6,
            width: 120.2,
            height: 32.0,
        },
    );
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    let id = opened.browse_id.clone();
    let frames_before = h.page.frames_taken();
    let asked = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    let approval = asked.approval.unwrap();
    let preview = approval.preview.clone().expect("a preview");
    assert_eq!(preview.image, format!("/v1/browse/{id}/approval/preview"));
    assert_eq!((preview.width, preview.height), (1280, 720));
    assert_eq!(
        preview.outline,
        Some(abr_protocol::PreviewBox {
            x: 40,
            y: 300,
            width: 121,
            height: 32
        }),
        "the element's box, rounded outwards"
    );
    assert_eq!(approval.preview_note, None);
    assert!(
        h.page.frames_taken() > frames_before,
        "the preview is a redacted frame of the page"
    );
    let (shown, image) = h.runner.browse_approval_shown(T, &id).await.unwrap();
    assert_eq!(shown.preview, Some(preview));
    assert!(image.unwrap().starts_with(b"\xFF\xD8"), "its JPEG is kept");
    // Asked again for the same action: the same preview, not another frame.
    let taken = h.page.frames_taken();
    let again = h.runner.browse_act(T, &id, click("e2")).await.unwrap();
    assert_eq!(again.approval.unwrap().preview, shown.preview);
    // Another tenant does not find it.
    assert!(
        h.runner
            .browse_approval_shown("tenant-b", &id)
            .await
            .is_err()
    );
    // Decided, the image goes with the decision.
    h.runner
        .browse_decide(
            &checked(&approver(T), Right::Approve),
            &id,
            &decision(&approval.approval_id),
            true,
        )
        .await
        .unwrap();
    assert!(matches!(
        h.runner.browse_approval_shown(T, &id).await,
        Err(EngineError::ActionNotPending)
    ));
    assert!(h.page.frames_taken() >= taken);
}

#[tokio::test]
async fn with_screenshots_off_an_approval_says_why_it_has_no_preview() {
    let h = h_approving();
    h.frames.set_screenshots_enabled(T, false).await.unwrap();
    let opened = h
        .runner
        .browse_open(&checked(&agent(T), Right::Browse), open(false, false))
        .await
        .unwrap();
    let frames = h.page.frames_taken();
    let asked = h
        .runner
        .browse_act(T, &opened.browse_id, click("e2"))
        .await
        .unwrap();
    let approval = asked.approval.unwrap();
    assert_eq!(approval.preview, None);
    assert!(
        approval
            .preview_note
            .as_deref()
            .is_some_and(|n| n.contains("screenshots are off")),
        "{approval:?}"
    );
    assert_eq!(h.page.frames_taken(), frames, "no image of the page at all");
    let (_, image) = h
        .runner
        .browse_approval_shown(T, &opened.browse_id)
        .await
        .unwrap();
    assert!(image.is_none());
}
