//! Artifacts on real Chromium: a tenant uploads a file (`POST /v1/artifacts`); a plan's
//! `upload` step sets it on the demo site's file input, whose script sends it to the site,
//! and the site received exactly those bytes under that name. The bytes are sealed at rest
//! (no plaintext in the data directory); another tenant cannot describe, fetch, delete or
//! plan with it (404 `artifact_not_found`); a plan cannot name a path on the runner's disk;
//! a file over the size cap, of a refused type, or past the tenant's quota is refused with
//! its typed code and not kept.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use abr_client::protocol::{TaskRequest, TaskState};
use abr_client::{AgentRunnerClient, ClientError, TaskOptions};
use common::*;
use serde_json::{Value, json};

const TENANT: &str = WORKSPACE;
const OTHER: &str = "acme-other";
const SESSION_KEY: &str = "5c1c8f2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8e9";

/// A PNG (its signature, then a canary the bytes carry): what the page's input gets.
fn png(canary: &str) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.extend_from_slice(canary.as_bytes());
    bytes
}

fn refused(result: Result<impl std::fmt::Debug, ClientError>, status: u16, code: &str) {
    let e = result.expect_err("refused");
    assert_eq!((e.status(), e.code()), (Some(status), Some(code)), "{e}");
}

/// The composer plan: open it, set the media input to `artifact`, wait for the site to
/// say the file is ready.
fn attach(site_base: &str, artifact: &str) -> Value {
    json!({
        "plan": {
            "targetUrl": format!("{site_base}/compose"),
            "steps": [
                {"type": "upload", "selector": "#media", "artifact": artifact, "description": "Attach the picture"},
                {"type": "wait", "selector": ".media-ok", "timeoutMs": 10000, "description": "Wait until the site has it"}
            ],
            "verification": {"method": "dom_check", "selector": ".media-ok"},
            "risk": "low"
        },
        "platform": "demo"
    })
}

async fn create(
    client: &AgentRunnerClient,
    tenant: &str,
    body: Value,
) -> Result<abr_client::protocol::TaskRecord, ClientError> {
    let request: TaskRequest = serde_json::from_value(body).unwrap();
    client
        .create_task(&request, &TaskOptions::tenant(tenant))
        .await
        .map(|(record, _)| record)
}

/// Every byte under `dir`, file by file.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}

/// No file under `dir` (there is at least one) holds `canary` in clear.
fn sealed_at_rest(dir: &std::path::Path, canary: &str) {
    let at_rest = files_under(dir);
    assert!(!at_rest.is_empty(), "the store keeps files there");
    for (path, stored) in &at_rest {
        assert!(
            !stored.windows(canary.len()).any(|w| w == canary.as_bytes()),
            "the bytes are readable in {}",
            path.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uploaded_artifact_reaches_the_sites_file_input_sealed_and_the_tenants_own() {
    let data = tempfile::tempdir().unwrap();
    let stack = stack_with(
        |c| {
            c.store.data_dir = Some(data.path().to_owned());
            c.store.session_key = Some(SESSION_KEY.to_owned().into());
            c.tasks.approval = abr_core::approval::ApprovalRule::Off;
            c.tasks.artifacts.max_bytes = 4096;
            c.tasks.artifacts.quota.max_count = 2;
            c.pacing = None;
        },
        |b| b,
    )
    .await;
    let client = &stack.client;
    let base = stack.site.base_url();
    let canary = format!("artifact-canary-{}", random_suffix());
    let bytes = png(&canary);

    // Kept: its type sniffed from the bytes (the name says text), its digest.
    let info = client
        .upload_artifact(TENANT, "holiday photo.txt", bytes.clone())
        .await
        .unwrap();
    assert!(info.id.starts_with("art_"), "{info:?}");
    assert_eq!(info.name, "holiday photo.txt");
    assert_eq!(info.media_type, "image/png");
    assert_eq!(info.size, bytes.len() as u64);
    assert_eq!(info.sha256, abr_core::artifact::sha256_hex(&bytes));
    assert_eq!(client.artifact(TENANT, &info.id).await.unwrap(), info);
    assert_eq!(
        client.artifact_content(TENANT, &info.id).await.unwrap(),
        bytes
    );

    // Refused, and not kept: over the size cap, a page (runs scripts), past the quota.
    refused(
        client
            .upload_artifact(TENANT, "big.png", png(&"x".repeat(5000)))
            .await,
        413,
        "artifact_too_large",
    );
    refused(
        client
            .upload_artifact(
                TENANT,
                "cv.pdf",
                b"<!doctype html><script>1</script>".to_vec(),
            )
            .await,
        415,
        "artifact_type_refused",
    );
    refused(
        client
            .upload_artifact(TENANT, "../../etc/passwd", b"plain".to_vec())
            .await,
        422,
        "invalid_request",
    );
    let second = client
        .upload_artifact(TENANT, "notes.txt", b"plain notes".to_vec())
        .await
        .unwrap();
    assert_eq!(second.media_type, "text/plain");
    refused(
        client
            .upload_artifact(TENANT, "third.txt", b"one too many".to_vec())
            .await,
        409,
        "artifact_quota",
    );
    let listed = client.artifacts(TENANT).await.unwrap();
    assert_eq!(
        listed.artifacts.iter().map(|a| &a.id).collect::<Vec<_>>(),
        [&second.id, &info.id],
        "newest first, the refused ones not kept"
    );
    assert_eq!(listed.total_bytes, info.size + second.size);

    // Another tenant: not found, whatever it tries.
    refused(
        client.artifact(OTHER, &info.id).await,
        404,
        "artifact_not_found",
    );
    refused(
        client.artifact_content(OTHER, &info.id).await,
        404,
        "artifact_not_found",
    );
    refused(
        client.delete_artifact(OTHER, &info.id).await,
        404,
        "artifact_not_found",
    );
    assert!(client.artifacts(OTHER).await.unwrap().artifacts.is_empty());
    let session = signed_in_session(&stack.site, "alice").await;
    let mut theirs = attach(&base, &info.id);
    theirs["session"] = serde_json::to_value(&session).unwrap();
    refused(
        create(client, OTHER, theirs).await,
        404,
        "artifact_not_found",
    );
    // A plan names an artifact, never a file of the runner's disk.
    let mut path = attach(&base, "/etc/passwd");
    path["session"] = serde_json::to_value(&session).unwrap();
    refused(create(client, TENANT, path).await, 422, "invalid_plan");

    // The plan sets it on the composer's input; the page's script sends it to the site.
    let mut body = attach(&base, &info.id);
    body["session"] = serde_json::to_value(&session).unwrap();
    let task = create(client, TENANT, body).await.unwrap();
    let ended = task_ended(client, TENANT, &task.task_id).await;
    assert_eq!(ended.state, TaskState::Succeeded, "{ended:#?}");
    assert_eq!(ended.step_results[0].action, "upload");
    assert!(ended.step_results[0].ok);
    let received: Vec<Value> = reqwest::get(format!("{base}/api/uploads"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["name"], "holiday photo.txt");
    assert_eq!(received[0]["size"], bytes.len());
    assert_eq!(received[0]["sha256"], info.sha256.as_str());
    assert_eq!(received[0]["owner"], "alice");
    let timeline = client
        .timeline_markdown(TENANT, &task.task_id)
        .await
        .unwrap();
    assert!(timeline.contains("upload"), "{timeline}");
    assert!(!timeline.contains(&canary), "{timeline}");

    // Sealed at rest: the data directory never holds the bytes in clear.
    sealed_at_rest(data.path(), &canary);

    // Deleted: gone for its tenant; a task naming it is refused.
    client.delete_artifact(TENANT, &info.id).await.unwrap();
    refused(
        client.artifact(TENANT, &info.id).await,
        404,
        "artifact_not_found",
    );
    let mut again = attach(&base, &info.id);
    again["session"] = serde_json::to_value(&session).unwrap();
    refused(
        create(client, TENANT, again).await,
        404,
        "artifact_not_found",
    );
}

/// The invoices plan: three downloads (kept, too large, a program), then a page.
fn downloads(site_base: &str, tag: &str, keep: bool) -> Value {
    json!({
        "plan": {
            "targetUrl": format!("{site_base}/invoices?tag={tag}"),
            "steps": [
                {"type": "click", "selector": "#invoice", "description": "Download the invoice"},
                {"type": "click", "selector": "#archive", "description": "Download the archive"},
                {"type": "click", "selector": "#stream", "description": "Download the stream"},
                {"type": "click", "selector": "#program", "description": "Download the tool"},
                {"type": "click", "selector": "#page", "description": "Open the notes"},
                {"type": "wait", "text": "Notes", "timeoutMs": 10000, "description": "Wait for the notes"}
            ],
            "verification": {"method": "dom_check", "text": "Notes"},
            "risk": "low",
            "readOnly": true,
            "downloads": keep
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plans_downloads_are_kept_sealed_capped_and_recorded_and_refused_without_it() {
    let data = tempfile::tempdir().unwrap();
    let stack = stack_with(
        |c| {
            c.store.data_dir = Some(data.path().to_owned());
            c.store.session_key = Some(SESSION_KEY.to_owned().into());
            c.tasks.approval = abr_core::approval::ApprovalRule::Off;
            c.tasks.artifacts.max_bytes = 16 * 1024;
            c.pacing = None;
        },
        |b| b,
    )
    .await;
    let client = &stack.client;
    let base = stack.site.base_url();
    // Letters, digits and `-` only: what the site puts in the files' bytes.
    let tag: String = format!("dl-canary-{}", random_suffix())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();

    // Without `downloads`: the same clicks keep nothing, the run goes on.
    let task = create(client, TENANT, downloads(&base, &tag, false))
        .await
        .unwrap();
    let ended = task_ended(client, TENANT, &task.task_id).await;
    assert_eq!(ended.state, TaskState::Succeeded, "{ended:#?}");
    assert!(ended.downloads.is_empty(), "{:?}", ended.downloads);
    assert!(client.artifacts(TENANT).await.unwrap().artifacts.is_empty());

    // With it, in a read-only run (a download sends nothing): kept, or refused with why.
    let task = create(client, TENANT, downloads(&base, &tag, true))
        .await
        .unwrap();
    let ended = task_ended(client, TENANT, &task.task_id).await;
    assert_eq!(ended.state, TaskState::Succeeded, "{ended:#?}");
    let by_name = |name: &str| {
        ended
            .downloads
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no download {name}: {:?}", ended.downloads))
    };
    assert_eq!(ended.downloads.len(), 4, "{ended:#?}");
    let invoice = by_name("INV-1.pdf");
    let kept = invoice.artifact.as_ref().expect("the invoice is kept");
    assert_eq!(kept.media_type, "application/pdf");
    assert_eq!(kept.origin, abr_client::protocol::ArtifactOrigin::Download);
    assert_eq!(kept.run_id.as_deref(), Some(task.task_id.as_str()));
    assert_eq!(invoice.step, Some(0));
    let bytes = client.artifact_content(TENANT, &kept.id).await.unwrap();
    assert!(bytes.starts_with(b"%PDF-1.4"));
    assert!(
        bytes.windows(tag.len()).any(|w| w == tag.as_bytes()),
        "the bytes the site sent"
    );
    assert_eq!(kept.sha256, abr_core::artifact::sha256_hex(&bytes));
    let archive = by_name("archive.bin");
    assert!(archive.artifact.is_none());
    assert_eq!(
        archive.error.as_ref().map(|e| e.code.as_str()),
        Some("artifact_too_large")
    );
    assert_eq!(archive.size, 64 * 1024);
    // Of undeclared length: read as a stream and stopped at the cap (16 KiB), never the
    // whole MiB.
    let stream = by_name("stream.bin");
    assert!(stream.artifact.is_none());
    assert_eq!(
        stream.error.as_ref().map(|e| e.code.as_str()),
        Some("artifact_too_large")
    );
    assert!(
        stream.size > 16 * 1024 && stream.size <= 16 * 1024 + 1,
        "read {} bytes of a 1 MiB stream",
        stream.size
    );
    let program = by_name("tool.pdf");
    assert!(program.artifact.is_none());
    assert_eq!(
        program.error.as_ref().map(|e| e.code.as_str()),
        Some("artifact_type_refused")
    );
    let listed = client.artifacts(TENANT).await.unwrap();
    assert_eq!(
        listed.artifacts,
        vec![kept.clone()],
        "only the invoice is kept"
    );

    // The tenant's only; sealed at rest; in the timeline with its artifact, never its bytes.
    refused(
        client.artifact(OTHER, &kept.id).await,
        404,
        "artifact_not_found",
    );
    refused(
        client.artifact_content(OTHER, &kept.id).await,
        404,
        "artifact_not_found",
    );
    sealed_at_rest(data.path(), &tag);
    let timeline = client
        .timeline_markdown(TENANT, &task.task_id)
        .await
        .unwrap();
    assert!(
        timeline.contains(&format!("kept as {}", kept.id).replace('_', "\\_")),
        "{timeline}"
    );
    assert!(timeline.contains("artifact\\_type\\_refused"), "{timeline}");
    assert!(!timeline.contains(&tag), "{timeline}");
}

/// A browse session on the composer for `tenant`, read-only or not.
async fn composer(
    stack: &Stack,
    tenant: &str,
    read_only: bool,
) -> abr_client::protocol::BrowseOpened {
    let session = signed_in_session(&stack.site, "alice").await;
    let request: abr_client::protocol::BrowseRequest = serde_json::from_value(json!({
        "url": format!("{}/compose", stack.site.base_url()),
        "platform": "demo",
        "session": session,
        "readOnly": read_only,
    }))
    .unwrap();
    let opened = stack.client.browse_open(tenant, &request).await.unwrap();
    assert_eq!(
        opened.first.outcome,
        abr_client::protocol::ActOutcome::Done,
        "{:?}",
        opened.first
    );
    opened
}

/// The reference of the element named `name` in the session's first snapshot.
fn named(opened: &abr_client::protocol::BrowseOpened, name: &str) -> String {
    opened
        .first
        .snapshot
        .elements
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no {name:?} in {:#?}", opened.first.snapshot.elements))
        .reference
        .clone()
}

async fn uploads(base: &str) -> Vec<Value> {
    reqwest::get(format!("{base}/api/uploads"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browse_session_attaches_an_artifact_and_neither_another_tenant_nor_read_only_can() {
    use abr_client::protocol::{ActOutcome, BrowseAction};
    let stack = stack_with(
        |c| {
            c.tasks.approval = abr_core::approval::ApprovalRule::Off;
            c.pacing = None;
        },
        |b| b,
    )
    .await;
    let client = &stack.client;
    let base = stack.site.base_url();
    let bytes = png(&format!("browse-canary-{}", random_suffix()));
    let info = client
        .upload_artifact(TENANT, "picture.png", bytes.clone())
        .await
        .unwrap();
    let upload = |reference: String| BrowseAction::Upload {
        reference,
        artifact: info.id.clone(),
    };

    // Another tenant's session names it: not found, nothing reaches the page.
    let theirs = composer(&stack, OTHER, false).await;
    refused(
        client
            .browse_act(OTHER, &theirs.browse_id, &upload(named(&theirs, "Media")))
            .await,
        404,
        "artifact_not_found",
    );
    // A read-only session: the upload is refused below the page.
    let reading = composer(&stack, TENANT, true).await;
    let answer = client
        .browse_act(
            TENANT,
            &reading.browse_id,
            &upload(named(&reading, "Media")),
        )
        .await
        .unwrap();
    assert_eq!(answer.outcome, ActOutcome::Refused, "{answer:?}");
    assert!(uploads(&base).await.is_empty(), "nothing was sent");

    // The tenant's own session: the site's input gets exactly the artifact.
    let ours = composer(&stack, TENANT, false).await;
    let answer = client
        .browse_act(TENANT, &ours.browse_id, &upload(named(&ours, "Media")))
        .await
        .unwrap();
    assert_eq!(answer.outcome, ActOutcome::Done, "{answer:?}");
    let mut received = Vec::new();
    for _ in 0..100 {
        received = uploads(&base).await;
        if !received.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["name"], "picture.png");
    assert_eq!(received[0]["size"], bytes.len());
    assert_eq!(received[0]["sha256"], info.sha256.as_str());
    let timeline = client
        .timeline_markdown(TENANT, &ours.browse_id)
        .await
        .unwrap();
    // Markdown escapes the id's underscore.
    let attached = format!("upload, attach {}", info.id.replace('_', "\\_"));
    assert!(timeline.contains(&attached), "{timeline}");
    for id in [&theirs.browse_id, &reading.browse_id, &ours.browse_id] {
        let tenant = if id == &theirs.browse_id {
            OTHER
        } else {
            TENANT
        };
        client.browse_close(tenant, id).await.unwrap();
    }
}
