//! The demo platform declared as data (`crates/abr-demo/platforms/demo.toml`) tells the same
//! truth as the compiled `demo` strategy, on real Chromium, through the HTTP API: both are
//! registered in one runner, every demo fault mode is posted (with an image) through each,
//! and for every mode both give the same outcome, failure stage and verification method,
//! true to the site's ground truth. The declared platform also passes a probe and a capture
//! through the live view (its sign-in check only looks at the page a person signs in on).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use abr_client::AgentRunnerClient;
use abr_demo::{DemoSite, DemoStrategy, FaultMode};
use abr_engine::DeclaredStrategy;
use abr_protocol::{
    AgentPostResult, CaptureStartRequest, FailureStage, MediaAttachment, PostContent, PostOutcome,
    PostRequest, VerificationMethod,
};
use abr_service::runner::RunnerBuilder;
use abr_service::server::RunningServer;
use common::*;

use crate::common;

const DEMO_TOML: &str = include_str!("../../../abr-demo/platforms/demo.toml");
const COMPILED: &str = "demo";
const DECLARED: &str = "demo-declared";
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// What a post came to: outcome, failure stage, verification method.
type Summary = (
    PostOutcome,
    Option<FailureStage>,
    Option<VerificationMethod>,
);

fn summary(r: &AgentPostResult) -> Summary {
    (
        r.outcome(),
        r.failure_stage,
        r.verification.as_ref().map(|v| v.method),
    )
}

fn show(s: &Summary) -> String {
    let (outcome, stage, method) = s;
    let mut out = format!("{outcome:?}").to_lowercase();
    if let Some(stage) = stage {
        out.push_str(&format!(" at {stage:?}").to_lowercase());
    }
    if let Some(method) = method {
        out.push_str(&format!(" by {method:?}").to_lowercase());
    }
    out
}

/// One post of `text` with the e2e test's image to `platform`, with a fresh session.
async fn post(
    client: &AgentRunnerClient,
    site: &DemoSite,
    platform: &str,
    mode: FaultMode,
    text: &str,
) -> AgentPostResult {
    let session = signed_in_session(site, &format!("user-{platform}")).await;
    let mut content = PostContent::text(text);
    content.media = vec![MediaAttachment {
        file_name: "pixel.png".into(),
        mime_type: "image/png".into(),
        data_base64: PIXEL.into(),
    }];
    site.set_fault(mode);
    client
        .post(&PostRequest {
            session_id: None,
            platform: platform.into(),
            session,
            content,
            workspace_id: Some(WORKSPACE.into()),
            account_id: Some(ACCOUNT.into()),
            scope: None,
        })
        .await
        .unwrap_or_else(|e| panic!("{platform} in {mode}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_declared_demo_platform_tells_the_same_truth_as_the_compiled_one() {
    let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let mut config = config(&site);
    let listener = tokio::net::TcpListener::bind(config.bind).await.unwrap();
    config.public_url =
        Some(url::Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap());
    let base = site.base_url();
    let vars = BTreeMap::from([("base".to_owned(), base.clone())]);
    let declared = DeclaredStrategy::parse_toml(DEMO_TOML, &vars).unwrap();
    let compiled = DemoStrategy::new(&site.base_url()).unwrap();
    let runner = RunnerBuilder::new(config)
        .strategy(Arc::new(compiled))
        .unwrap()
        .strategy(Arc::new(declared))
        .unwrap()
        .build()
        .unwrap();
    let server = RunningServer::start(Arc::new(runner), listener).unwrap();
    let client = AgentRunnerClient::new(server.base_url(), TOKEN.to_owned()).unwrap();

    // Everything runs before anything is asserted, so the browsers are closed whatever the
    // verdict.
    let platforms = client.platforms().await.unwrap();
    let mut rows = Vec::new();
    for (i, mode) in FaultMode::ALL.into_iter().enumerate() {
        let mut row = Vec::new();
        for platform in [COMPILED, DECLARED] {
            let text = format!("{platform} post {i} in {mode}");
            let result = post(&client, &site, platform, mode, &text).await;
            let exists = site.posts().iter().any(|p| p.text == text);
            row.push((result, exists, text));
        }
        rows.push((mode, row));
    }
    let probe_in = client
        .probe(&probe_request(
            DECLARED,
            signed_in_session(&site, "prober").await,
        ))
        .await
        .unwrap();
    let probe_out = client
        .probe(&probe_request(DECLARED, demo_session("not-a-session")))
        .await
        .unwrap();
    let capture = client
        .capture_start(&CaptureStartRequest {
            workspace_id: WORKSPACE.into(),
            account_id: ACCOUNT.into(),
            platform: DECLARED.into(),
            scope: None,
        })
        .await
        .unwrap();
    // The user's browser shows the sign-in page: not signed in yet (and not disturbed).
    let too_early = client
        .capture_finish(&bound(&capture.capture_id))
        .await
        .unwrap_err();
    let user = sign_in_as_a_user(&capture.live_view_url, "carol").await;
    let finished = finish_when_signed_in(&client, &capture.capture_id).await;
    user.close().await;
    let posted_with_capture = client
        .post(&post_request(
            DECLARED,
            finished.session.clone(),
            "after capture",
        ))
        .await
        .unwrap();
    server.shutdown().await;
    let truth = site.posts();
    site.shutdown().await;

    println!("| fault mode | compiled `demo` | declared `demo-declared` | ground truth |");
    println!("|---|---|---|---|");
    for (mode, row) in &rows {
        let [(compiled, c_exists, _), (declared, d_exists, _)] = row.as_slice() else {
            panic!("two posts per mode");
        };
        let truth = match (c_exists, d_exists) {
            (true, true) => "both saved",
            (false, false) => "neither saved",
            _ => "differs",
        };
        println!(
            "| `{mode}` | {} | {} | {truth} |",
            show(&summary(compiled)),
            show(&summary(declared))
        );
    }

    assert!(platforms.platforms.iter().any(|p| p.id == COMPILED));
    let listed = platforms
        .platforms
        .iter()
        .find(|p| p.id == DECLARED)
        .expect("the declared platform is listed");
    assert_eq!(listed.start_url, format!("{base}/login"));
    for (mode, row) in &rows {
        for (result, exists, text) in row {
            // True to the ground truth: a saved post is confirmed or uncertain, a missing one
            // is never confirmed.
            if *exists {
                assert!(
                    matches!(
                        result.outcome(),
                        PostOutcome::Confirmed | PostOutcome::Uncertain
                    ),
                    "{mode}: {result:?}"
                );
            } else {
                assert_ne!(
                    result.outcome(),
                    PostOutcome::Confirmed,
                    "{mode}: {result:?}"
                );
            }
            // Confirmed with evidence; the saved post carries the image.
            if result.ok {
                let v = result.verification.as_ref().unwrap();
                assert!(
                    v.evidence.detail.is_some() || v.evidence.permalink.is_some(),
                    "{mode}: {v:?}"
                );
                let saved = truth.iter().find(|p| p.text == *text).unwrap();
                assert_eq!(saved.media_count, 1, "{mode}");
            }
            if let Some(permalink) = result
                .verification
                .as_ref()
                .and_then(|v| v.evidence.permalink.as_deref())
            {
                let saved = truth.iter().find(|p| p.text == *text).unwrap();
                assert!(permalink.ends_with(&format!("/p/{}", saved.id)), "{mode}");
            }
        }
        let (compiled, declared) = (&row[0].0, &row[1].0);
        assert_eq!(
            summary(compiled),
            summary(declared),
            "{mode}: compiled {compiled:?}, declared {declared:?}"
        );
        assert_eq!(
            row[0].1, row[1].1,
            "{mode}: the site saved one but not the other"
        );
    }
    // The matrix is the demo's: each mode gives the outcome the e2e test expects.
    let expect = |mode: FaultMode| -> (PostOutcome, Option<FailureStage>) {
        match mode {
            FaultMode::None
            | FaultMode::NoToast
            | FaultMode::FailAfterSave
            | FaultMode::SlowToast => (PostOutcome::Confirmed, None),
            FaultMode::FailBeforeSave => (PostOutcome::Failed, Some(FailureStage::Verify)),
            FaultMode::MediaReject => (PostOutcome::Failed, Some(FailureStage::Media)),
            FaultMode::ExpireSession => (PostOutcome::NeedsReauth, Some(FailureStage::Submit)),
        }
    };
    for (mode, row) in &rows {
        let (outcome, stage, _) = summary(&row[1].0);
        assert_eq!((outcome, stage), expect(*mode), "{mode}");
    }

    assert!(
        probe_in.authenticated && !probe_in.needs_reauth,
        "{probe_in:?}"
    );
    assert!(
        !probe_out.authenticated && probe_out.needs_reauth,
        "{probe_out:?}"
    );
    assert_eq!(too_early.code(), Some("not_authenticated"), "{too_early}");
    assert!(
        finished
            .session
            .cookies
            .iter()
            .any(|c| c.name == "demo_session"),
        "the capture exported the signed-in cookie"
    );
    assert!(
        finished
            .session
            .cookies
            .iter()
            .all(|c| c.domain == "127.0.0.1"),
        "scoped to the site"
    );
    assert_eq!(
        posted_with_capture.outcome(),
        PostOutcome::Confirmed,
        "{posted_with_capture:?}"
    );
    assert!(
        truth
            .iter()
            .any(|p| p.text == "after capture" && p.author == "carol")
    );
}
