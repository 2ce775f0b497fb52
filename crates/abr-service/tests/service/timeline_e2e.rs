//! Run timelines (`GET /v1/runs/{runId}/timeline`) on real Chromium, with canaries: a task
//! that types an input into the demo site's admin form, chooses a role, submits and reads
//! the users table; the same plan as a dry run (a button refused by the guard); a browse
//! session that types into the form; a post. Each timeline, JSON and markdown, names every
//! step's action, element (role and name), page and decision, and the approval and its
//! approver; no typed value, cookie, key or extracted value appears in any of them. Another
//! tenant's run is a 404 `run_not_found`, like an unknown one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use abr_client::protocol::{
    ApproveRequest, BrowseAction, BrowseRequest, RunTimeline, TaskRecord, TaskRequest, TaskState,
    TimelineEvent,
};
use abr_client::{AgentRunnerClient, PostAnswer, PostOptions, TaskOptions};
use common::*;
use serde_json::{Value, json};

const TENANT: &str = WORKSPACE;
const SESSION_KEY: &str = "4b0b7f1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8";

/// The admin "Add user" plan, typing the email from the inputs.
fn add_user(site_base: &str, dry_run: bool) -> Value {
    json!({
        "plan": {
            "targetUrl": format!("{site_base}/admin/users"),
            "steps": [
                {"type": "navigate", "url": format!("{site_base}/admin/users?canary=query-canary"), "description": "Open the user admin page"},
                {"type": "click", "selector": "#add-user-btn", "description": "Click 'Add user'", "stage": "filling_form"},
                {"type": "type", "selector": "#email-input", "value": "{{email}}", "description": "Enter the user's email"},
                {"type": "select", "selector": "#role-dropdown", "value": "editor", "description": "Choose the role"},
                {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit the form", "stage": "submitting"},
                {"type": "wait", "selector": ".success-message", "timeoutMs": 5000, "description": "Wait for the success message"},
                {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users table"}
            ],
            "verification": {"method": "dom_check", "selector": ".success-message"},
            "risk": "medium"
        },
        "inputs": {"email": format!("typed-canary-{}@example.com", &random_suffix()[..8]).to_lowercase()},
        "dryRun": dry_run
    })
}

async fn ended(client: &AgentRunnerClient, id: &str) -> TaskRecord {
    task_ended(client, TENANT, id).await
}

/// The timeline of `run` in both forms, checked to carry none of `canaries`.
async fn timelines(
    client: &AgentRunnerClient,
    run: &str,
    canaries: &[String],
) -> (RunTimeline, String) {
    let timeline = client.timeline(TENANT, run).await.unwrap();
    let markdown = client.timeline_markdown(TENANT, run).await.unwrap();
    let json = serde_json::to_string(&timeline).unwrap();
    for canary in canaries {
        assert!(
            !json.contains(canary.as_str()),
            "{canary} in the JSON timeline: {json}"
        );
        assert!(
            !markdown.contains(canary.as_str()),
            "{canary} in the markdown timeline: {markdown}"
        );
    }
    (timeline, markdown)
}

/// The row of `markdown` for step `n` (1-based).
fn row(markdown: &str, n: usize) -> &str {
    let tag = format!(" | step {n}: ");
    markdown
        .lines()
        .find(|l| l.contains(&tag))
        .unwrap_or_else(|| panic!("no row for step {n}: {markdown}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timelines_name_every_step_and_decision_and_carry_no_value() {
    let stack = stack_with(
        |c| {
            c.store.session_key = Some(SESSION_KEY.to_owned().into());
            c.pacing = None;
        },
        |b| b,
    )
    .await;
    let client = &stack.client;
    let base = stack.site.base_url();
    let session = signed_in_session(&stack.site, "alice").await;
    let mut canaries = vec![TOKEN.to_owned(), "query-canary".to_owned()];
    canaries.extend(session.cookies.iter().map(|c| c.value.expose().to_owned()));

    // 1. A task, approved by a person, that types, chooses, submits and reads.
    let mut body = add_user(&base, false);
    let email = body["inputs"]["email"].as_str().unwrap().to_owned();
    canaries.push(email.clone());
    body["session"] = serde_json::to_value(&session).unwrap();
    body["platform"] = json!("demo");
    let request: TaskRequest = serde_json::from_value(body).unwrap();
    let (created, _) = client
        .create_task(&request, &TaskOptions::tenant(TENANT))
        .await
        .unwrap();
    let approver = client
        .create_key(&abr_protocol::KeyRequest {
            name: "alice@acme.example".into(),
            role: abr_protocol::Role::Approver,
            tenant_id: Some(TENANT.into()),
            read_only: false,
            expires_at: None,
        })
        .await
        .unwrap();
    canaries.push(approver.token.expose().to_owned());
    AgentRunnerClient::new(client.base_url(), approver.token.expose().to_owned())
        .unwrap()
        .approve_task(
            TENANT,
            &created.task_id,
            &ApproveRequest {
                approved_by: None,
                plan_hash: created.plan_hash.clone(),
            },
        )
        .await
        .unwrap();
    let record = ended(client, &created.task_id).await;
    assert_eq!(record.state, TaskState::Succeeded, "{record:#?}");
    // Every extracted value (the table's cells but the column's words) is a canary.
    for row in record.extracted["users"].as_array().unwrap() {
        let email = row["Email"].as_str().unwrap();
        canaries.push(email.to_owned());
    }
    let (timeline, markdown) = timelines(client, &created.task_id, &canaries).await;
    let events: Vec<TimelineEvent> = timeline.entries.iter().map(|e| e.event).collect();
    assert_eq!(
        events[..3],
        [
            TimelineEvent::Created,
            TimelineEvent::Approved,
            TimelineEvent::Started
        ],
        "{markdown}"
    );
    assert_eq!(events.last(), Some(&TimelineEvent::Ended), "{markdown}");
    let approved = &timeline.entries[1];
    assert_eq!(approved.by.as_deref(), Some("alice@acme.example"));
    let steps: Vec<_> = timeline
        .entries
        .iter()
        .filter(|e| e.event == TimelineEvent::Step)
        .collect();
    assert_eq!(steps.len(), 7, "{markdown}");
    // Each step names its element as assistive technology does, and its page (no query).
    let names: Vec<Option<(Option<&str>, &str)>> = steps
        .iter()
        .map(|s| {
            s.target
                .as_ref()
                .map(|t| (t.role.as_deref(), t.name.as_str()))
        })
        .collect();
    assert_eq!(
        names,
        [
            None,
            Some((Some("button"), "Add user")),
            Some((Some("textbox"), "Email")),
            Some((Some("combobox"), "Role")),
            Some((Some("button"), "Submit")),
            None,
            None
        ],
        "{markdown}"
    );
    let admin = format!("{base}/admin/users");
    assert_eq!(steps[2].url.as_deref(), Some(admin.as_str()), "{markdown}");
    assert_eq!(steps[2].typed_chars, Some(email.chars().count()));
    assert_eq!(steps[3].typed_chars, Some("editor".len()));
    assert_eq!(steps[4].committing, Some(true), "{markdown}");
    assert_eq!(steps[4].stage.as_deref(), Some("submitting"));
    assert!(steps.iter().all(|s| s.ok == Some(true)), "{markdown}");
    assert!(
        timeline
            .entries
            .iter()
            .any(|e| e.event == TimelineEvent::Frame && e.frame.is_some()),
        "the frames are referenced: {markdown}"
    );
    assert!(
        markdown.starts_with(&format!(
            "# Timeline of task `{}`: succeeded",
            created.task_id.replace('_', "\\_")
        )),
        "{markdown}"
    );
    let typed = row(&markdown, 3);
    assert!(
        typed.contains("textbox \"Email\"")
            && typed.contains(&format!("{} characters typed", email.chars().count())),
        "{typed}"
    );
    assert!(row(&markdown, 5).contains("committing"), "{markdown}");

    // 2. The same plan as a dry run: the guard refuses a button, and says so.
    let mut body = add_user(&base, true);
    // A dry run refuses the "Add user" button already (a button with no recognised
    // harmless meaning): nothing after it could pass.
    body["plan"]["steps"].as_array_mut().unwrap().truncate(2);
    canaries.push(body["inputs"]["email"].as_str().unwrap().to_owned());
    body["session"] = serde_json::to_value(&session).unwrap();
    body["platform"] = json!("demo");
    let request: TaskRequest = serde_json::from_value(body).unwrap();
    let (dry, _) = client
        .create_task(&request, &TaskOptions::tenant(TENANT))
        .await
        .unwrap();
    AgentRunnerClient::new(client.base_url(), approver.token.expose().to_owned())
        .unwrap()
        .approve_task(
            TENANT,
            &dry.task_id,
            &ApproveRequest {
                approved_by: None,
                plan_hash: dry.plan_hash.clone(),
            },
        )
        .await
        .unwrap();
    let record = ended(client, &dry.task_id).await;
    assert_eq!(record.state, TaskState::Failed, "{record:#?}");
    let (timeline, markdown) = timelines(client, &dry.task_id, &canaries).await;
    let refused: Vec<_> = timeline
        .entries
        .iter()
        .filter(|e| e.event == TimelineEvent::Refused)
        .collect();
    assert_eq!(refused.len(), 1, "{markdown}");
    assert_eq!(refused[0].step, Some(1), "{markdown}");
    let refusal = refused[0].refused.as_ref().unwrap();
    assert_eq!(abr_core::store::wire_name(&refusal.blocked_by), "dry_run");
    assert!(
        markdown
            .lines()
            .any(|l| l.contains("refused (step 2)") && l.contains("refused (dry\\_run")),
        "{markdown}"
    );

    // 3. A browse session that types into the form.
    let opened = client
        .browse_open(
            TENANT,
            &BrowseRequest {
                profile: None,
                url: format!("{base}/admin/users"),
                platform: Some("demo".into()),
                session_id: None,
                session: Some(session.clone()),
                scope: None,
                read_only: false,
                dry_run: false,
                tenant_id: None,
                idle_seconds: None,
                handoff: None,
            },
        )
        .await
        .unwrap();
    let find = |snapshot: &abr_protocol::Snapshot, name: &str| {
        snapshot
            .elements
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("no {name}: {snapshot:?}"))
            .reference
            .clone()
    };
    let add = find(&opened.first.snapshot, "Add user");
    let shown = client
        .browse_act(
            TENANT,
            &opened.browse_id,
            &BrowseAction::Click { reference: add },
        )
        .await
        .unwrap();
    let field = find(&shown.snapshot, "Email");
    let browse_canary = "browse-canary@example.com";
    canaries.push(browse_canary.to_owned());
    client
        .browse_act(
            TENANT,
            &opened.browse_id,
            &BrowseAction::Type {
                reference: field,
                text: browse_canary.into(),
                submit: false,
            },
        )
        .await
        .unwrap();
    client
        .browse_close(TENANT, &opened.browse_id)
        .await
        .unwrap();
    let (timeline, markdown) = timelines(client, &opened.browse_id, &canaries).await;
    assert_eq!(timeline.kind, abr_protocol::RunKind::Browse);
    let typed = timeline
        .entries
        .iter()
        .find(|e| e.action.as_deref() == Some("type"))
        .unwrap_or_else(|| panic!("{markdown}"));
    assert_eq!(typed.typed_chars, Some(browse_canary.len()));
    assert_eq!(
        typed.target.as_ref().map(|t| t.name.as_str()),
        Some("Email")
    );

    // 4. A post: its phases and its end; never what it posted.
    let text = format!("post-canary {}", random_suffix());
    canaries.push(text.clone());
    let answer = client
        .post_with(
            &post_request("demo", session.clone(), &text),
            &PostOptions::idempotency_key(random_suffix()).with_tenant(TENANT),
        )
        .await
        .unwrap();
    let PostAnswer::Done { result, .. } = answer else {
        panic!("the post did not end here: {answer:?}");
    };
    assert!(result.ok, "{result:?}");
    let post_id = result.post_id.clone().unwrap();
    let (timeline, markdown) = timelines(client, &post_id, &canaries).await;
    assert_eq!(timeline.kind, abr_protocol::RunKind::Post);
    let phases: Vec<&str> = timeline
        .entries
        .iter()
        .filter_map(|e| e.phase.as_deref())
        .collect();
    assert!(
        phases.contains(&"acquire") && phases.contains(&"post"),
        "{markdown}"
    );

    // 5. Another tenant's run is not found, like an unknown one; in both forms.
    for (tenant, run) in [
        ("other", created.task_id.as_str()),
        (TENANT, "task_unknown"),
    ] {
        let e = client.timeline(tenant, run).await.unwrap_err();
        assert_eq!(
            (e.status(), e.code()),
            (Some(404), Some("run_not_found")),
            "{e}"
        );
        let e = client.timeline_markdown(tenant, run).await.unwrap_err();
        assert_eq!(e.status(), Some(404), "{e}");
    }

    // The runs are over: the operator's gauges see the local browser still up and no
    // context leased (every one of these runs gave its context back).
    let metrics = raw_http()
        .get(format!(
            "{}/metrics",
            client.base_url().trim_end_matches('/')
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        r#"abr_browser_pool{kind="browsers"} 1"#,
        r#"abr_browser_pool{kind="contexts_in_use"} 0"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }

    stack.server.shutdown().await;
    stack.site.shutdown().await;
}
