//! Artifacts in a task's run, on the core's fakes: an `upload` step gets the artifact's
//! bytes (read when the run starts: one deleted since ends it with nothing done); a plan
//! that keeps downloads lists each (kept, or refused past a cap or for its type), and one
//! that does not keeps none; a browser that cannot keep them ends the run before its
//! first step.

use std::collections::BTreeMap;
use std::sync::Arc;

use abr_core::DynSessionProvider;
use abr_core::artifact::ArtifactRules;
use abr_core::guard::CaughtDownload;
use abr_core::principal::Right;
use abr_core::step_runner::BrowserAction;
use abr_core::store::{ArtifactStore, InMemoryArtifacts, InMemoryStore, TaskStore};
use abr_core::testing::{FakeContext, FakeProvider, ManualClock};
use abr_protocol::{ApproveRequest, ArtifactOrigin, StepPlan, TaskRequest, TaskState};
use serde_json::json;
use time::macros::datetime;

use super::{agent, approver, checked};
use crate::artifacts::Artifacts;
use crate::task::runner::{TaskConfig, TaskRunner};

const T: &str = "acme";

struct H {
    provider: Arc<FakeProvider>,
    artifacts: Artifacts,
    kept: Arc<InMemoryArtifacts>,
    runner: TaskRunner<FakeContext>,
}

fn h(rules: ArtifactRules) -> H {
    let provider = Arc::new(FakeProvider::new());
    let clock = Arc::new(ManualClock::new(datetime!(2026-06-09 12:00 UTC)));
    let kept = Arc::new(InMemoryArtifacts::new());
    let artifacts = Artifacts::new(kept.clone() as Arc<dyn ArtifactStore>, rules, clock.clone());
    let dyn_provider: DynSessionProvider<FakeContext> = provider.clone();
    let store: Arc<dyn TaskStore> = Arc::new(InMemoryStore::new());
    let runner = TaskRunner::new(dyn_provider, store)
        .with_config(TaskConfig::default())
        .with_clock(clock)
        .with_artifacts(artifacts.clone());
    H {
        provider,
        artifacts,
        kept,
        runner,
    }
}

fn request(plan: serde_json::Value) -> TaskRequest {
    let plan: StepPlan = serde_json::from_value(plan).unwrap();
    TaskRequest {
        profile: None,
        plan,
        inputs: BTreeMap::new(),
        secret_inputs: Vec::new(),
        session: None,
        session_id: None,
        scope: None,
        platform: None,
        tenant_id: None,
        proposal_id: None,
        dry_run: false,
        handoff: None,
    }
}

impl H {
    async fn create(&self, plan: serde_json::Value) -> abr_protocol::TaskRecord {
        self.runner
            .create(&checked(&agent(T), Right::Propose), request(plan), None)
            .await
            .unwrap()
            .record
    }

    async fn approve(&self, created: &abr_protocol::TaskRecord) {
        let approve = ApproveRequest {
            approved_by: Some("alice".into()),
            plan_hash: created.plan_hash.clone(),
        };
        let approver = checked(&approver(T), Right::Approve);
        self.runner
            .approve(&approver, &created.task_id, &approve)
            .await
            .unwrap();
    }

    async fn run(&self, plan: serde_json::Value) -> abr_protocol::TaskRecord {
        let created = self.create(plan).await;
        self.approve(&created).await;
        self.runner.run(T, &created.task_id).await.unwrap().record
    }
}

fn upload_plan(artifact: &str) -> serde_json::Value {
    json!({
        "targetUrl": "https://tool.example/profile",
        "steps": [
            {"type": "upload", "selector": "#cv", "artifact": artifact, "description": "Attach the CV"},
            {"type": "click", "selector": "#save", "description": "Save"}
        ],
        "verification": {"method": "dom_check", "selector": "#save"}
    })
}

#[tokio::test]
async fn an_upload_step_sets_the_artifacts_bytes_and_a_deleted_one_ends_the_run_with_nothing_done()
{
    let h = h(ArtifactRules::default());
    let info = h
        .artifacts
        .put(T, "cv.pdf", b"%PDF-1.4 the cv".to_vec())
        .await
        .unwrap();
    let record = h.run(upload_plan(&info.id)).await;
    assert_eq!(record.state, TaskState::Succeeded, "{record:#?}");
    let uploaded = h
        .provider
        .page()
        .actions()
        .into_iter()
        .find_map(|a| match a {
            BrowserAction::Upload { files, .. } => Some(files),
            _ => None,
        });
    let files = uploaded.expect("an upload ran");
    assert_eq!(files.len(), 1);
    assert_eq!(
        (files[0].name.as_str(), files[0].mime_type.as_str()),
        ("cv.pdf", "application/pdf")
    );
    assert_eq!(files[0].bytes, b"%PDF-1.4 the cv");

    // Created with it, then it is deleted: the run starts no browser.
    let created = h.create(upload_plan(&info.id)).await;
    h.artifacts.delete(T, &info.id).await.unwrap();
    h.approve(&created).await;
    let acquired = h.provider.acquired();
    let ended = h.runner.run(T, &created.task_id).await.unwrap().record;
    assert_eq!(ended.state, TaskState::Failed);
    assert_eq!(
        ended.error.as_ref().map(|e| e.code.as_str()),
        Some("artifact_not_found")
    );
    assert!(ended.step_results.is_empty());
    assert_eq!(h.provider.acquired(), acquired, "no browser was started");
}

fn file(name: &str, bytes: &[u8]) -> CaughtDownload {
    CaughtDownload {
        name: name.to_owned(),
        size: bytes.len() as u64,
        bytes: Ok(bytes.to_vec()),
    }
}

fn download_plan(keep: bool) -> serde_json::Value {
    json!({
        "targetUrl": "https://billing.example/invoices",
        "steps": [
            {"type": "click", "selector": "#all", "description": "Download everything"}
        ],
        "verification": {"method": "dom_check", "selector": "#all"},
        "downloads": keep
    })
}

#[tokio::test]
async fn a_plans_downloads_are_kept_or_refused_each_with_why_and_none_without_it() {
    let rules = ArtifactRules {
        max_bytes: 64,
        run_max_count: 3,
        ..ArtifactRules::default()
    };
    let h = h(rules);
    h.provider.page().downloads_on(
        "#all",
        vec![
            file("invoice.pdf", b"%PDF-1.4 invoice"),
            file("big.pdf", &[b'%'; 65]),
            file("tool.pdf", b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0and more bytes to sniff it as a program"),
            file("fourth.pdf", b"%PDF-1.4 fourth"),
        ],
    );
    let none = h.run(download_plan(false)).await;
    assert_eq!(none.state, TaskState::Succeeded, "{none:#?}");
    assert!(none.downloads.is_empty());
    assert!(h.kept.artifacts(T).await.unwrap().is_empty());

    let record = h.run(download_plan(true)).await;
    assert_eq!(record.state, TaskState::Succeeded, "{record:#?}");
    let codes: Vec<(&str, Option<&str>)> = record
        .downloads
        .iter()
        .map(|d| (d.name.as_str(), d.error.as_ref().map(|e| e.code.as_str())))
        .collect();
    assert_eq!(
        codes,
        [
            ("invoice.pdf", None),
            ("big.pdf", Some("artifact_too_large")),
            ("tool.pdf", Some("artifact_type_refused")),
            ("fourth.pdf", Some("artifact_quota")),
        ]
    );
    let kept = record.downloads[0].artifact.clone().expect("kept");
    assert_eq!(kept.origin, ArtifactOrigin::Download);
    assert_eq!(kept.run_id.as_deref(), Some(record.task_id.as_str()));
    assert_eq!(kept.media_type, "application/pdf");
    assert_eq!(record.downloads[0].step, Some(0));
    let (_, bytes) = h.kept.artifact(T, &kept.id).await.unwrap().unwrap();
    assert_eq!(bytes, b"%PDF-1.4 invoice");
    assert_eq!(h.kept.artifacts(T).await.unwrap(), vec![kept]);
}

#[tokio::test]
async fn a_browser_that_cannot_keep_downloads_ends_the_run_before_its_first_step() {
    let h = h(ArtifactRules::default());
    h.provider.page().cannot_keep_downloads();
    let record = h.run(download_plan(true)).await;
    assert_eq!(record.state, TaskState::Failed, "{record:#?}");
    assert_eq!(
        record.error.as_ref().map(|e| e.code.as_str()),
        Some("provider_unsupported")
    );
    assert!(record.step_results.is_empty(), "no step ran");
    assert!(h.provider.page().actions().is_empty());
}
