//! The approval page (`/approve/{token}`): a person who holds no key opens the one-time link
//! an approver minted (`POST /v1/tasks/{id}/approval-link`), reads the task (its steps in
//! words, the values they are filled with, a secret as its length only, whose session it
//! runs with and under which platform, why, its risk, the site it opens, the hash that
//! binds all of it, and the redacted preview of the page when one was taken) and approves
//! or rejects it once. No script runs on
//! the page (a strict CSP allows none), every text of the task is HTML-escaped, the page is
//! never cached, never framed and sends no referrer (the link is a credential). A form posted
//! from another site is refused.

use abr_core::context::TaskContext;
use abr_protocol::{InputShown, Risk, TaskAccount, TaskState, codes};
use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::api_error::{ApiError, ApiPath};
use crate::state::AppState;

/// The routes (outside the bearer check: the token in the path is the credential).
pub(crate) fn routes<C: TaskContext>() -> ApiRouter<AppState<C>> {
    use crate::openapi::{Documented, Page};
    let link = &[codes::APPROVAL_LINK_NOT_FOUND];
    ApiRouter::new().api_route(
        "/approve/{token}",
        get_with(page::<C>, |o| {
            o.id("approvalPage")
                .summary("The approval page of a one-time link: what would run, for a person")
                .description("The token in the path is the credential (no key).")
                .response::<200, Page>()
                .errors(link)
        })
        .post_with(decide::<C>, |o| {
            o.id("approvalPageDecide")
                .summary("The page's form: approve or reject, once, from the page's own origin")
                .response::<200, Page>()
                .errors(link)
                .errors(&[
                    codes::ORIGIN_NOT_ALLOWED,
                    codes::TASK_NOT_PENDING,
                    codes::ACTION_NOT_PENDING,
                    codes::PLAN_HASH_MISMATCH,
                ])
        }),
    )
}

/// The form the page posts.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Decision {
    /// `approve` or `reject`.
    decision: String,
    /// What the person says of themself (optional).
    #[serde(default)]
    name: Option<String>,
}

async fn page<C: TaskContext>(
    State(state): State<AppState<C>>,
    ApiPath(token): ApiPath<String>,
) -> Result<Response, ApiError> {
    let linked = state.runner.engine.task_by_link(&token).await?;
    if linked.browse {
        return action_page(&linked);
    }
    let record = &linked.record;
    let steps: String = record
        .steps
        .iter()
        .map(|s| format!("<li>{}</li>", escape(s)))
        .collect();
    let pending = record.state == TaskState::PendingApproval;
    let form = if pending {
        r#"<form method="post"><label>Your name <input name="name" maxlength="200"></label>
<button name="decision" value="approve" id="approve">Approve and run</button>
<button name="decision" value="reject" id="reject">Reject</button></form>"#
    } else {
        r#"<p id="decided">This task is no longer waiting for approval.</p>"#
    };
    let why = match &record.reasoning {
        Some(reasoning) if !reasoning.trim().is_empty() => escape(reasoning.trim()),
        _ => "<em>the plan gives no reason</em>".to_owned(),
    };
    let body = format!(
        r#"<h1>Approve a browser task?</h1>
<p>Asked of <strong>{approver}</strong>; your decision is recorded as theirs, with your name.</p>
<dl><dt>Opens</dt><dd id="target">{target}</dd><dt>Risk</dt><dd id="risk">{risk}</dd>
<dt>Why</dt><dd id="reasoning">{why}</dd>
<dt>Runs as</dt><dd id="account">{account}</dd>
<dt>Task</dt><dd id="task">{task_id}</dd><dt>State</dt><dd id="state">{state}</dd></dl>
<h2>What it will do</h2><ol id="steps">{steps}</ol>
<h2>The values it fills in</h2>{values}
{preview}
<p>Plan hash <code id="hash">{hash}</code>: approving approves these steps with these values,
on this session, under this platform, and nothing else.</p>{form}"#,
        approver = escape(&linked.approver),
        target = escape(&linked.target_url),
        risk = risk(record.risk),
        account = account(record.account.as_ref()),
        values = values(&record.inputs),
        hash = escape(&record.plan_hash),
        preview = if record.preview.is_some() || record.preview_note.is_some() {
            preview(
                record.preview.as_ref(),
                linked.preview.as_deref(),
                record.preview_note.as_deref(),
            )
        } else {
            String::new()
        },
        task_id = escape(&record.task_id),
        state = escape(state_name(record.state)),
    );
    respond(StatusCode::OK, &body)
}

/// The page of a browse session's committing action.
fn action_page(linked: &abr_engine::LinkedTask) -> Result<Response, ApiError> {
    let Some(action) = &linked.action else {
        let body = format!(
            r#"<h1>Approve an agent's action?</h1>
<p id="decided">Session <span id="task">{}</span> no longer waits for this action (decided, replaced by another, or closed).</p>"#,
            escape(&linked.record.task_id)
        );
        return respond(StatusCode::OK, &body);
    };
    let element = match (&action.role, &action.name) {
        (Some(role), Some(name)) if !name.is_empty() => {
            format!("{} \u{201c}{}\u{201d}", escape(role), escape(name))
        }
        (Some(role), _) => escape(role),
        _ => "the page".to_owned(),
    };
    let body = format!(
        r#"<h1>Approve an agent's action?</h1>
<p>An agent browsing in session <span id="task">{task}</span> wants to commit something. Asked of <strong>{approver}</strong>; your decision is recorded as theirs, with your name.</p>
<dl><dt>Action</dt><dd id="action">{what}</dd><dt>Element</dt><dd id="element">{element}</dd>
<dt>Page</dt><dd id="page">{page}</dd></dl>
{preview}
<p>Approving lets this one action run once; rejecting closes the session with nothing of it sent.</p>
<form method="post"><label>Your name <input name="name" maxlength="200"></label>
<button name="decision" value="approve" id="approve">Approve this action</button>
<button name="decision" value="reject" id="reject">Reject</button></form>"#,
        task = escape(&linked.record.task_id),
        approver = escape(&linked.approver),
        what = escape(&action.action),
        page = escape(&action.page),
        preview = preview(
            action.preview.as_ref(),
            linked.preview.as_deref(),
            action.preview_note.as_deref()
        ),
    );
    respond(StatusCode::OK, &body)
}

/// The preview of what would be acted on: the redacted frame inline (a `data:` image, the
/// one kind of image the page's CSP allows) with the element outlined in an SVG laid over
/// it (presentation attributes only: no style attribute, no script); or why there is none.
fn preview(
    shown: Option<&abr_protocol::ApprovalPreview>,
    jpeg: Option<&[u8]>,
    note: Option<&str>,
) -> String {
    use base64::Engine as _;
    let (Some(shown), Some(jpeg)) = (shown, jpeg) else {
        let why = note.unwrap_or("no preview was kept");
        return format!(
            r#"<p id="preview-note"><em>No preview: {}</em></p>"#,
            escape(why)
        );
    };
    let data = base64::engine::general_purpose::STANDARD.encode(jpeg);
    let outline = shown.outline.map_or_else(String::new, |b| {
        format!(
            r#"<rect id="outline" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="red" stroke-width="4"/>"#,
            b.x.saturating_sub(3),
            b.y.saturating_sub(3),
            b.width.saturating_add(6),
            b.height.saturating_add(6)
        )
    });
    let stopped = note.map_or_else(String::new, |n| {
        format!(r#"<p id="preview-note"><em>{}</em></p>"#, escape(n))
    });
    format!(
        r#"<h2>What it acts on</h2>{stopped}
<div class="shot"><img id="preview" src="data:image/jpeg;base64,{data}" width="{w}" height="{h}" alt="The page, redacted, with the element outlined"><svg viewBox="0 0 {w} {h}" preserveAspectRatio="none" aria-hidden="true">{outline}</svg></div>
<p><small>Fields are blurred and sensitive text masked in this picture.</small></p>"#,
        w = shown.width,
        h = shown.height,
    )
}

async fn decide<C: TaskContext>(
    State(state): State<AppState<C>>,
    ApiPath(token): ApiPath<String>,
    headers: HeaderMap,
    form: Result<Form<Decision>, axum::extract::rejection::FormRejection>,
) -> Result<Response, ApiError> {
    same_origin(&state.runner.config.public_base(), &headers)?;
    let Ok(Form(decision)) = form else {
        return Err(ApiError::new(
            codes::INVALID_REQUEST,
            "the form is decision=approve|reject and an optional name",
        ));
    };
    let approve = match decision.decision.as_str() {
        "approve" => true,
        "reject" => false,
        _ => {
            return Err(ApiError::new(
                codes::INVALID_REQUEST,
                "decision is approve or reject",
            ));
        }
    };
    let name = decision.name.filter(|n| !n.trim().is_empty());
    let record = state
        .runner
        .engine
        .decide_by_link(&token, approve, name)
        .await?;
    let said = match (record.browse, approve) {
        (false, true) => "Approved: the task runs now.",
        (false, false) => "Rejected: nothing runs.",
        (true, true) => "Approved: the agent's next attempt at this action runs, once.",
        (true, false) => "Rejected: the session is closed and nothing of the action was sent.",
    };
    let body = format!(
        r#"<h1 id="done">{said}</h1><p>Task <span id="task">{}</span> is <span id="state">{}</span>. This link is used up.</p>"#,
        escape(&record.task_id),
        escape(state_name(record.state)),
    );
    respond(StatusCode::OK, &body)
}

/// Refuses a form sent from another site: a browser says where a form came from in
/// `Sec-Fetch-Site`, and names its origin unless the page's no-referrer policy makes it
/// `null` (as it does on this page's own form).
fn same_origin(own: &str, headers: &HeaderMap) -> Result<(), ApiError> {
    let refused = || {
        ApiError::new(
            codes::ORIGIN_NOT_ALLOWED,
            "an approval is sent from the runner's own page",
        )
    };
    let text = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    if let Some(site) = text("sec-fetch-site")
        && site != "same-origin"
    {
        return Err(refused());
    }
    match text(header::ORIGIN.as_str()) {
        None | Some("null") => Ok(()),
        Some(origin) if origin == own => Ok(()),
        Some(_) => Err(refused()),
    }
}

fn respond(status: StatusCode, body: &str) -> Result<Response, ApiError> {
    let nonce = crate::live::nonce()?;
    let html = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Approve · ABR</title>
<style nonce="{nonce}">body{{font:16px system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}}dt{{font-weight:600}}button{{margin:1rem .5rem 0 0;padding:.5rem 1rem}}.shot{{position:relative;display:inline-block;max-width:100%}}.shot img{{display:block;max-width:100%;height:auto}}.shot svg{{position:absolute;left:0;top:0;width:100%;height:100%}}</style></head><body>{body}</body></html>"#
    );
    let csp = format!(
        "default-src 'none'; style-src 'nonce-{nonce}'; img-src data:; form-action 'self'; \
         base-uri 'none'; frame-ancestors 'none'"
    );
    let mut response = (status, Html(html)).into_response();
    crate::live::page::secure(response.headers_mut(), &csp);
    Ok(response)
}

/// Whose session the task runs with and under which platform, in words (escaped).
fn account(account: Option<&TaskAccount>) -> String {
    let Some(account) = account else {
        return "no session (signed out), no platform".to_owned();
    };
    let mut parts = Vec::new();
    if let Some(id) = &account.session_id {
        parts.push(format!(
            "the stored session <strong>{}</strong>",
            escape(id)
        ));
    }
    if let Some(sites) = &account.sent_session_sites {
        parts.push(format!(
            "a session sent with the task, signed in to {}",
            if sites.is_empty() {
                "no site".to_owned()
            } else {
                escape(&sites.join(", "))
            }
        ));
    }
    if account.session_id.is_none() && account.sent_session_sites.is_none() {
        parts.push("no session (signed out)".to_owned());
    }
    if let Some(platform) = &account.session_platform {
        parts.push(format!(
            "bound to the platform <strong>{}</strong>",
            escape(platform)
        ));
    }
    if let Some(platform) = &account.platform {
        parts.push(format!(
            "under the platform <strong>{}</strong>",
            escape(platform)
        ));
    }
    parts.join(", ")
}

/// The values the steps are filled with, a secret as its length only (escaped).
fn values(inputs: &[InputShown]) -> String {
    if inputs.is_empty() {
        return r#"<p id="values">None: the steps use no input.</p>"#.to_owned();
    }
    let rows: String = inputs
        .iter()
        .map(|input| {
            let value = match (&input.value, input.secret) {
                (Some(value), false) => format!("<code>{}</code>", escape(value)),
                _ => format!(
                    "<em>a secret of {} character{}, not shown</em>",
                    input.length,
                    if input.length == 1 { "" } else { "s" }
                ),
            };
            format!("<dt>{}</dt><dd>{value}</dd>", escape(&input.name))
        })
        .collect();
    format!(r#"<dl id="values">{rows}</dl>"#)
}

fn risk(risk: Risk) -> &'static str {
    match risk {
        Risk::Low => "low",
        Risk::Medium => "medium",
        Risk::High => "high",
    }
}

fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::PendingApproval => "waiting for approval",
        TaskState::Queued => "approved, about to run",
        TaskState::Running => "running",
        TaskState::Succeeded => "succeeded",
        TaskState::Failed => "failed",
        TaskState::Uncertain => "uncertain",
        TaskState::NeedsReauth => "needs the user to sign in again",
        TaskState::Rejected => "rejected",
        TaskState::Paused => "paused for a person",
        TaskState::Closed => "closed",
    }
}

/// `text` safe inside HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn every_text_of_a_task_is_escaped() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }
}
