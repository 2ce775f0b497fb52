//! The browse API end to end on real Chromium, through the HTTP API and abr-client, checked
//! against the demo site's ground truth (`/api/posts`): a brain's snapshot/act loop (an
//! agent's key) reaches the submit, which waits for an approver (`approval_required`, nothing
//! posted); approved by another key it posts once, rejected the session closes with nothing
//! posted; a read-only session refuses typing into the composer (a form that posts) and
//! its submit with the guard's reason, and nothing is posted; bad input is a typed 4xx; another tenant sees nothing; a closed
//! session is gone and its record says what it did, never what was typed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use abr_client::protocol::{
    ActOutcome, ActionApprovalState, ActionDecision, BlockedBy, BrowseAction, BrowseRequest,
    CommitClass, KeyRequest, PauseReason, Role, SecretValue, Snapshot, TaskState,
};
use abr_client::{AgentRunnerClient, ClientError};
use common::*;
use serde_json::{Value, json};

const TENANT: &str = "acme";

fn reference(snapshot: &Snapshot, role: &str, name: &str) -> String {
    snapshot
        .elements
        .iter()
        .find(|e| e.role == role && e.name == name)
        .unwrap_or_else(|| panic!("no {role} {name:?} in {:#?}", snapshot.elements))
        .reference
        .clone()
}

async fn posts_with(stack: &Stack, text: &str) -> usize {
    let posts: Vec<Value> = reqwest::get(format!("{}/api/posts", stack.site.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    posts.iter().filter(|p| p["text"] == text).count()
}

async fn open_composer(stack: &Stack, read_only: bool) -> BrowseRequest {
    let session = signed_in_session(&stack.site, "alice").await;
    serde_json::from_value(json!({
        "url": format!("{}/compose", stack.site.base_url()),
        "platform": "demo",
        "session": session,
        "readOnly": read_only,
    }))
    .unwrap()
}

/// A client holding a new key of `role` for [`TENANT`].
async fn keyed(stack: &Stack, role: Role) -> AgentRunnerClient {
    let created = stack
        .client
        .create_key(&KeyRequest {
            name: format!("{role} of {TENANT}"),
            role,
            tenant_id: Some(TENANT.to_owned()),
            read_only: false,
            expires_at: None,
        })
        .await
        .unwrap();
    AgentRunnerClient::new(stack.server.base_url(), created.token.expose().to_owned()).unwrap()
}

/// An agent's session on the composer with the text typed: the session and the Post
/// button's reference.
async fn typed_post(stack: &Stack, agent: &AgentRunnerClient, text: &str) -> (String, String) {
    let opened = agent
        .browse_open(TENANT, &open_composer(stack, false).await)
        .await
        .unwrap();
    assert_eq!(opened.first.outcome, ActOutcome::Done, "{:?}", opened.first);
    let page = &opened.first.snapshot;
    let field = reference(page, "textbox", "What's happening?");
    let submit = reference(page, "button", "Post");
    let typed = agent
        .browse_act(
            TENANT,
            &opened.browse_id,
            &BrowseAction::Type {
                reference: field,
                text: SecretValue::new(text.to_owned()),
                submit: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(typed.outcome, ActOutcome::Done, "typing commits nothing");
    (opened.browse_id, submit)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_submit_waits_for_an_approver_and_a_rejection_posts_nothing() {
    let stack = stack().await;
    let agent = keyed(&stack, Role::Agent).await;
    let approver = keyed(&stack, Role::Approver).await;

    // --- Approved by another key: posted once.
    let text = format!("approved browse post {}", random_suffix());
    let (id, submit) = typed_post(&stack, &agent, &text).await;
    let click = BrowseAction::Click { reference: submit };
    let asked = agent.browse_act(TENANT, &id, &click).await.unwrap();
    assert_eq!(asked.outcome, ActOutcome::Paused, "{asked:?}");
    assert_eq!(
        asked.pause.as_ref().unwrap().reason,
        PauseReason::ApprovalRequired
    );
    let approval = asked.approval.unwrap();
    assert_eq!(
        (approval.role.as_deref(), approval.name.as_deref()),
        (Some("button"), Some("Post"))
    );
    assert!(approval.page.ends_with("/compose"), "{}", approval.page);
    assert!(
        asked.snapshot.url.ends_with("/compose"),
        "still on the composer"
    );
    assert_eq!(
        posts_with(&stack, &text).await,
        0,
        "ground truth: nothing yet"
    );
    let decision = ActionDecision {
        approval_id: approval.approval_id.clone(),
        stated_by: Some("Ana at the desk".into()),
    };
    // The agent's own key cannot approve it.
    let own = agent
        .browse_decide(TENANT, &id, &decision, true)
        .await
        .unwrap_err();
    assert_eq!(api_error(&own).1, "forbidden");
    let seen = approver.browse_approval(TENANT, &id).await.unwrap();
    assert_eq!(seen.approval_id, approval.approval_id);
    let approved = approver
        .browse_decide(TENANT, &id, &decision, true)
        .await
        .unwrap();
    assert_eq!(approved.state, ActionApprovalState::Approved);
    let posted = agent.browse_act(TENANT, &id, &click).await.unwrap();
    assert_eq!(posted.outcome, ActOutcome::Done, "{posted:?}");
    assert!(posted.committing);
    assert_eq!(posts_with(&stack, &text).await, 1, "ground truth: one post");
    agent.browse_close(TENANT, &id).await.unwrap();
    let record = agent.get_task(TENANT, &id).await.unwrap();
    assert_eq!(
        record.approval.unwrap().approved_by,
        format!("approver of {TENANT}")
    );

    // --- Rejected: the session closes, nothing posted.
    let text = format!("rejected browse post {}", random_suffix());
    let (id, submit) = typed_post(&stack, &agent, &text).await;
    let click = BrowseAction::Click { reference: submit };
    let asked = agent.browse_act(TENANT, &id, &click).await.unwrap();
    let approval = asked.approval.unwrap();
    let rejected = approver
        .browse_decide(
            TENANT,
            &id,
            &ActionDecision {
                approval_id: approval.approval_id,
                stated_by: None,
            },
            false,
        )
        .await
        .unwrap();
    assert_eq!(rejected.state, ActionApprovalState::Rejected);
    let gone = agent.browse_act(TENANT, &id, &click).await.unwrap_err();
    assert_eq!(api_error(&gone).1, "browse_not_found");
    let record = agent.get_task(TENANT, &id).await.unwrap();
    assert_eq!(record.state, TaskState::Closed);
    assert_eq!(record.error.unwrap().code, "rejected");
    assert_eq!(
        posts_with(&stack, &text).await,
        0,
        "ground truth: nothing posted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_sees_the_page_redacted_with_the_post_button_outlined() {
    let stack = stack().await;
    let agent = keyed(&stack, Role::Agent).await;
    let created = stack
        .client
        .create_key(&KeyRequest {
            name: "preview approver".into(),
            role: Role::Approver,
            tenant_id: Some(TENANT.to_owned()),
            read_only: false,
            expires_at: None,
        })
        .await
        .unwrap();
    let token = created.token.expose().to_owned();
    let approver = AgentRunnerClient::new(stack.server.base_url(), token.clone()).unwrap();
    let text = format!(
        "previewed post ada.lovelace@example.com {}",
        random_suffix()
    );
    let (id, submit) = typed_post(&stack, &agent, &text).await;
    let asked = agent
        .browse_act(TENANT, &id, &BrowseAction::Click { reference: submit })
        .await
        .unwrap();
    let approval = asked.approval.unwrap();
    let preview = approval.preview.clone().unwrap_or_else(|| {
        panic!("a preview: {:?}", approval.preview_note);
    });
    assert_eq!(preview.image, format!("/v1/browse/{id}/approval/preview"));
    let outline = preview.outline.expect("the Post button's box");
    assert!(
        outline.width > 10
            && outline.height > 10
            && outline.x >= 0
            && outline.y >= 0
            && outline.x + i32::try_from(outline.width).unwrap()
                <= i32::try_from(preview.width).unwrap()
            && outline.y + i32::try_from(outline.height).unwrap()
                <= i32::try_from(preview.height).unwrap(),
        "the button, inside the image: {outline:?} in {}x{}",
        preview.width,
        preview.height
    );
    let jpeg = approver.browse_approval_preview(TENANT, &id).await.unwrap();
    assert_eq!(
        abr_core::guard::jpeg_size(&jpeg).map(|(w, h)| (u32::from(w), u32::from(h))),
        Some((preview.width, preview.height)),
        "the JPEG served is the preview described"
    );
    // Another tenant's approver does not find it.
    let other = stack
        .client
        .create_key(&KeyRequest {
            name: "another tenant's approver".into(),
            role: Role::Approver,
            tenant_id: Some("other".to_owned()),
            read_only: false,
            expires_at: None,
        })
        .await
        .unwrap();
    let other =
        AgentRunnerClient::new(stack.server.base_url(), other.token.expose().to_owned()).unwrap();
    let refused = other
        .browse_approval_preview("other", &id)
        .await
        .unwrap_err();
    assert_eq!(api_error(&refused).1, "browse_not_found");

    // The approval page of a one-time link shows it in a person's real browser, the
    // button outlined.
    let link = approver.browse_approval_link(TENANT, &id).await.unwrap();
    let url = link.url.expose();
    let (browser, lease) = person_opens(&stack.server.base_url(), url).await;
    let page = lease.context().page();
    let shown = page
        .evaluate::<(), Value>(
            "() => { const img = document.getElementById('preview'); \
             const box = document.getElementById('outline'); \
             return [img && img.complete && img.naturalWidth, img && img.naturalHeight, \
             box && Number(box.getAttribute('x')), box && Number(box.getAttribute('width'))]; }",
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        shown,
        json!([
            preview.width,
            preview.height,
            outline.x - 3,
            outline.width + 6
        ]),
        "the image decoded (the page's CSP lets it in) and the outline drawn"
    );
    lease.release().await.unwrap();
    browser.shutdown().await;
    agent.browse_close(TENANT, &id).await.unwrap();
    assert_eq!(
        posts_with(&stack, &text).await,
        0,
        "ground truth: nothing posted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brain_posts_through_snapshots_and_a_read_only_session_cannot() {
    // A trusted setup (approval off): the loop commits at once.
    let stack = stack_with(
        |config| config.tasks.approval = abr_core::approval::ApprovalRule::Off,
        |b| b,
    )
    .await;
    let client = &stack.client;

    // --- The loop posts.
    let text = format!("browse post {}", random_suffix());
    let opened = client
        .browse_open(TENANT, &open_composer(&stack, false).await)
        .await
        .unwrap();
    assert_eq!(opened.first.outcome, ActOutcome::Done, "{:?}", opened.first);
    assert!(!opened.read_only);
    let page = &opened.first.snapshot;
    assert!(page.url.ends_with("/compose"), "{}", page.url);
    // The text form a model reads, as `docs/browse.md` shows it.
    let form = page.to_text();
    let listing = form
        .split_once("/compose\n")
        .map(|(_, l)| l)
        .unwrap_or_default();
    assert!(
        listing.starts_with(
            "7 elements\n[navigation]\ne1 link Compose\ne2 link My posts\ne3 link Users\n\
             e4 link Sign out\n# New post\n[form]\ne5 textbox What's happening?\n\
             e6 file Media\ne7 button Post\ntext:\nSigned in as alice"
        ),
        "{form}"
    );
    let field = reference(page, "textbox", "What's happening?");
    let submit = reference(page, "button", "Post");
    let id = opened.browse_id.clone();
    let typed = client
        .browse_act(
            TENANT,
            &id,
            &BrowseAction::Type {
                reference: field.clone(),
                text: SecretValue::new(text.clone()),
                submit: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(typed.outcome, ActOutcome::Done);
    assert!(!typed.committing);
    let field_now = typed
        .snapshot
        .elements
        .iter()
        .find(|e| e.reference == field)
        .unwrap();
    assert_eq!(field_now.value.as_deref(), Some("[redacted]"));
    assert!(
        !serde_json::to_string(&typed.snapshot)
            .unwrap()
            .contains(&text),
        "the snapshot never carries a field's value"
    );
    let posted = client
        .browse_act(TENANT, &id, &BrowseAction::Click { reference: submit })
        .await
        .unwrap();
    assert_eq!(posted.outcome, ActOutcome::Done, "{posted:?}");
    assert!(posted.committing, "the submit is committing");
    assert!(
        posted.snapshot.text.contains("Your post is live"),
        "{}",
        posted.snapshot.text
    );
    assert_eq!(posts_with(&stack, &text).await, 1, "ground truth: one post");
    let closed = client.browse_close(TENANT, &id).await.unwrap();
    assert_eq!((closed.actions, closed.committing_actions), (3, 1));
    let record = client.get_task(TENANT, &id).await.unwrap();
    assert!(record.browse);
    assert_eq!(record.state, TaskState::Closed);
    assert!(
        !serde_json::to_string(&record).unwrap().contains(&text),
        "what was typed is not in the record"
    );
    let gone = client.browse_snapshot(TENANT, &id).await.unwrap_err();
    assert_eq!(api_error(&gone).1, "browse_not_found");

    // --- A read-only session on the composer (a form that posts, a file input): usable at
    // once, its first answer naming the form the guard holds (no pause: nothing a person
    // would do changes what the session may do); typing and the submit are refused before
    // they reach the page.
    let text = format!("read-only post {}", random_suffix());
    let opened = client
        .browse_open(TENANT, &open_composer(&stack, true).await)
        .await
        .unwrap();
    assert!(opened.read_only);
    assert_eq!(opened.first.outcome, ActOutcome::Done, "{:?}", opened.first);
    assert!(opened.first.pause.is_none(), "{:?}", opened.first);
    assert_eq!(
        opened
            .first
            .guarded
            .iter()
            .map(|g| g.reason)
            .collect::<Vec<_>>(),
        [PauseReason::WriteAffordance],
        "{:?}",
        opened.first
    );
    let id = opened.browse_id.clone();
    let page = &opened.first.snapshot;
    let field = reference(page, "textbox", "What's happening?");
    let submit = reference(page, "button", "Post");
    let typed = client
        .browse_act(
            TENANT,
            &id,
            &BrowseAction::Type {
                reference: field,
                text: SecretValue::new(text.clone()),
                submit: false,
            },
        )
        .await
        .unwrap();
    // The composer posts: typing into it is refused too (a site may save a draft as it is
    // typed), and nothing reached the field.
    assert_eq!(typed.outcome, ActOutcome::Refused, "{typed:?}");
    let blocked = typed.blocked.unwrap();
    assert_eq!(
        (blocked.blocked_by, blocked.class),
        (BlockedBy::ReadOnly, CommitClass::WriteFormField)
    );
    let field_now = typed
        .snapshot
        .elements
        .iter()
        .find(|e| e.role == "textbox")
        .unwrap();
    assert_eq!(field_now.value, None, "the field stayed empty");
    for action in [
        BrowseAction::Click {
            reference: submit.clone(),
        },
        BrowseAction::Press {
            reference: Some(submit.clone()),
            key: "Enter".into(),
        },
    ] {
        let refused = client.browse_act(TENANT, &id, &action).await.unwrap();
        assert_eq!(refused.outcome, ActOutcome::Refused, "{refused:?}");
        let blocked = refused.blocked.unwrap();
        assert_eq!(blocked.blocked_by, BlockedBy::ReadOnly);
        assert_eq!(blocked.class, CommitClass::SubmitControl);
        let error = refused.error.unwrap();
        assert_eq!(error.code, "blocked_action");
        assert!(error.message.contains("read-only"), "{}", error.message);
        assert!(refused.snapshot.url.ends_with("/compose"), "still there");
    }
    assert_eq!(
        posts_with(&stack, &text).await,
        0,
        "ground truth: nothing posted"
    );

    // --- Bad input is a typed 4xx, and another tenant sees nothing.
    let http = raw_http();
    let base = stack.server.base_url();
    let act = format!("{base}/v1/browse/{id}/act");
    for (body, status, code) in [
        (json!({"action": "click"}), 422, "invalid_request"),
        (
            json!({"action": "hover", "ref": "e1"}),
            422,
            "invalid_request",
        ),
        (
            json!({"action": "click", "ref": "e1\"], #submit, [x=\""}),
            422,
            "invalid_request",
        ),
        (
            json!({"action": "click", "ref": "e99999"}),
            409,
            "ref_not_found",
        ),
        (
            json!({"action": "navigate", "url": "file:///etc/passwd"}),
            422,
            "invalid_request",
        ),
    ] {
        let response = http
            .post(&act)
            .bearer_auth(TOKEN)
            .header("x-tenant-id", TENANT)
            .json(&body)
            .send()
            .await
            .unwrap();
        let error = raw_error(response).await;
        assert_eq!(
            (error.status, error.code.as_str()),
            (status, code),
            "{body}"
        );
    }
    let stranger = client.browse_snapshot("intruder", &id).await.unwrap_err();
    assert_eq!(api_error(&stranger).0, 404);
    let unauthenticated = http
        .post(&act)
        .json(&json!({"action": "back"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
    let e: ClientError = client.browse_close("intruder", &id).await.unwrap_err();
    assert_eq!(api_error(&e).1, "browse_not_found");
    client.browse_close(TENANT, &id).await.unwrap();

    stack.server.shutdown().await;
}
