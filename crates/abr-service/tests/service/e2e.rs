//! End to end on real Chromium, through the HTTP API and abr-client: capture through the
//! live view (a second browser plays the user), finish, post in every demo fault mode with
//! each outcome checked against the site's ground truth, probe, scoped refreshed sessions.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use abr_demo::FaultMode;
use abr_protocol::{
    FailureStage, PostContent, PostOutcome, PostRequest, ProbeRequest, VerificationMethod,
};
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_through_the_live_view_then_post_in_every_fault_mode() {
    let stack = stack().await;
    let client = &stack.client;
    let health = client.health().await.unwrap();
    assert_eq!(health.status, "ok");
    let platforms = client.platforms().await.unwrap();
    assert!(platforms.platforms.iter().any(|p| p.id == "demo"));

    let capture = client.capture_start(&start_request()).await.unwrap();
    assert!(capture.live_view_url.starts_with(&stack.server.base_url()));
    assert!(
        !capture.live_view_url.contains(&capture.capture_id),
        "the live URL must not carry the capture id"
    );
    let status = client
        .capture_status(&bound(&capture.capture_id))
        .await
        .unwrap();
    assert_eq!(status.platform, "demo");

    let user = sign_in_as_a_user(&capture.live_view_url, "alice").await;
    let finished = finish_when_signed_in(client, &capture.capture_id).await;
    user.close().await;
    let session = finished.session;
    let sid = session
        .cookies
        .iter()
        .find(|c| c.name == "demo_session")
        .expect("signed-in cookie");
    assert_eq!(sid.domain, "127.0.0.1", "host-only stays host-only");
    assert!(sid.http_only);
    assert!(
        session
            .origins
            .iter()
            .any(|o| o.local_storage.iter().any(|i| i.name == "demo_prefs"))
    );
    assert!(
        session.cookies.iter().all(|c| c.domain == "127.0.0.1"),
        "scoped to the site"
    );
    assert_eq!(
        session.metadata.as_ref().unwrap().platform.as_deref(),
        Some("demo")
    );
    // The capture is gone: its id and live view no longer resolve.
    assert_eq!(
        client
            .capture_status(&bound(&capture.capture_id))
            .await
            .unwrap_err()
            .status(),
        Some(404)
    );
    let live = reqwest::get(&capture.live_view_url).await.unwrap();
    assert_eq!(live.status(), 404);

    let probe = client
        .probe(&ProbeRequest {
            platform: "demo".into(),
            session: session.clone(),
            workspace_id: None,
            account_id: None,
            scope: None,
        })
        .await
        .unwrap();
    assert!(probe.authenticated && !probe.needs_reauth);

    let cases = [
        (FaultMode::None, PostOutcome::Confirmed, None),
        (FaultMode::NoToast, PostOutcome::Confirmed, None),
        (FaultMode::FailBeforeSave, PostOutcome::Failed, None),
        (FaultMode::FailAfterSave, PostOutcome::Confirmed, None),
        (FaultMode::SlowToast, PostOutcome::Confirmed, None),
        (
            FaultMode::MediaReject,
            PostOutcome::Failed,
            Some(FailureStage::Media),
        ),
        (FaultMode::ExpireSession, PostOutcome::NeedsReauth, None),
    ];
    let mut current = session;
    for (i, (mode, expected, stage)) in cases.into_iter().enumerate() {
        stack.site.set_fault(mode);
        let text = format!("e2e post {i} in {mode:?}");
        let mut content = PostContent::text(text.clone());
        content.media = vec![abr_protocol::MediaAttachment {
            file_name: "pixel.png".into(),
            mime_type: "image/png".into(),
            data_base64: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==".into(),
        }];
        let result = client
            .post(&PostRequest {
                session_id: None,
                platform: "demo".into(),
                session: current.clone(),
                content,
                workspace_id: Some(WORKSPACE.into()),
                account_id: Some(ACCOUNT.into()),
                scope: None,
            })
            .await
            .unwrap();
        let exists = stack.site.posts().iter().any(|p| p.text == text);
        // The truth, whatever the mode: an existing post is ok or uncertain; a missing one is
        // never ok.
        if exists {
            assert!(
                matches!(
                    result.outcome(),
                    PostOutcome::Confirmed | PostOutcome::Uncertain
                ),
                "{mode:?}: {result:?}"
            );
        } else {
            assert_ne!(
                result.outcome(),
                PostOutcome::Confirmed,
                "{mode:?}: {result:?}"
            );
        }
        assert_eq!(result.outcome(), expected, "{mode:?}: {result:?}");
        if let Some(stage) = stage {
            assert_eq!(result.failure_stage, Some(stage), "{mode:?}");
        }
        if result.ok {
            let v = result.verification.as_ref().unwrap();
            let expected_method = if matches!(mode, FaultMode::NoToast | FaultMode::FailAfterSave) {
                VerificationMethod::Readback
            } else {
                VerificationMethod::Toast
            };
            assert_eq!(v.method, expected_method, "{mode:?}");
            assert!(
                v.evidence
                    .permalink
                    .as_deref()
                    .is_some_and(|p| p.contains("/p/")),
                "{mode:?}: {v:?}"
            );
        }
        if let Some(refreshed) = result.refreshed_session {
            assert!(
                refreshed.cookies.iter().all(|c| c.domain == "127.0.0.1"),
                "refreshed session is scoped"
            );
            current = refreshed;
        }
    }
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}
