//! The MCP tools: their names, descriptions and argument schemas, and each call turned into
//! the one HTTP request of the runner's API that does it ([`Forward`]).
//!
//! Arguments are checked here only as far as the tool's schema goes (types, required and
//! unknown fields, id syntax); everything else (auth, tenant, scope, the guard, limits) is
//! the API's, so MCP answers exactly what the HTTP API answers.

use std::sync::Arc;

use axum::http::Method;
use rmcp::ErrorData;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json_detail::read_value;

/// `browse_open`.
pub(crate) const BROWSE_OPEN: &str = "browse_open";
/// `browse_snapshot`.
pub(crate) const BROWSE_SNAPSHOT: &str = "browse_snapshot";
/// `browse_act`.
pub(crate) const BROWSE_ACT: &str = "browse_act";
/// `browse_close`.
pub(crate) const BROWSE_CLOSE: &str = "browse_close";
/// `browse_request_input`.
pub(crate) const BROWSE_REQUEST_INPUT: &str = "browse_request_input";
/// `post`.
pub(crate) const POST: &str = "post";
/// `task_create`.
pub(crate) const TASK_CREATE: &str = "task_create";
/// `task_status`.
pub(crate) const TASK_STATUS: &str = "task_status";
/// `run_timeline`.
pub(crate) const RUN_TIMELINE: &str = "run_timeline";
/// `set_browser_screenshots`.
pub(crate) const SET_BROWSER_SCREENSHOTS: &str = "set_browser_screenshots";
/// `set_profile_consent`.
pub(crate) const SET_PROFILE_CONSENT: &str = "set_profile_consent";

/// The tools a read-only server does not offer: they publish, run plans or change a
/// tenant's settings.
const NOT_READ_ONLY: [&str; 4] = [
    POST,
    TASK_CREATE,
    SET_BROWSER_SCREENSHOTS,
    SET_PROFILE_CONSENT,
];

/// The ids the runner hands out (browse and task ids): URL-safe tokens. Anything else
/// cannot name a session or task, and would change the path it is put in.
const ID_PATTERN: &str = "^[A-Za-z0-9_-]{1,128}$";

/// Whether `id` matches [`ID_PATTERN`].
fn is_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Arguments of `browse_open`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct BrowseOpenArgs {
    /// The page to open: an http(s) URL.
    url: String,
    /// A platform registered on the runner (its site policy, scope and read-only setting
    /// apply), e.g. `demo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    platform: Option<String>,
    /// A session stored on the runner (its id), to browse signed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    /// Rehearse: every action up to a committing one (post, send, buy, delete...) runs;
    /// that one is refused and reported instead of done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dry_run: Option<bool>,
    /// Never perform a committing action: each is refused with the guard's reason. A
    /// read-only MCP server sets this whatever is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    read_only: Option<bool>,
}

/// Arguments of `browse_snapshot` and `browse_close`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct BrowseIdArgs {
    /// The browse session, as `browse_open` answered it (`browseId`).
    #[schemars(pattern(ID_PATTERN))]
    browse_id: String,
}

/// Arguments of `browse_snapshot`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct BrowseSnapshotArgs {
    /// The browse session, as `browse_open` answered it (`browseId`).
    #[schemars(pattern(ID_PATTERN))]
    browse_id: String,
    /// List elements from this position (a previous answer's "more with from=N"); default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    from: Option<usize>,
    /// Elements to list, 1 to 2000; default 300.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2000))]
    limit: Option<usize>,
    /// Characters of the page's text, 0 to 50000; default 3000 on the first page, none on
    /// later pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 50000))]
    max_text: Option<usize>,
    /// Give links' targets (relative on the page's site); default no.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hrefs: Option<bool>,
}

impl BrowseSnapshotArgs {
    /// The API's query string (`?from=…`), empty when nothing is asked.
    fn query(&self) -> String {
        let mut parts = Vec::new();
        if let Some(from) = self.from {
            parts.push(format!("from={from}"));
        }
        if let Some(limit) = self.limit {
            parts.push(format!("limit={limit}"));
        }
        if let Some(max_text) = self.max_text {
            parts.push(format!("maxText={max_text}"));
        }
        if let Some(hrefs) = self.hrefs {
            parts.push(format!("hrefs={hrefs}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// What `browse_act` does.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    /// Click the element `ref`.
    Click,
    /// Type `text` into the field `ref` (then press Enter with `submit: true`).
    Type,
    /// Choose `option` (its label) in the list `ref`.
    Select,
    /// Set the file input `ref` to the tenant's artifact `artifact` (its id, `art_…`: a
    /// file the orchestrator uploaded with `POST /v1/artifacts`). Committing.
    Upload,
    /// Press `key` (e.g. `Enter`, `Tab`, `Escape`), on `ref` when given.
    Press,
    /// Scroll the page one screen in `direction`.
    Scroll,
    /// Go to `url`.
    Navigate,
    /// Go back one page.
    Back,
    /// Wait (instead of polling snapshots) for exactly one of: the element `ref` to be
    /// visible, `text` to show, the URL to contain `url`, or `ms` milliseconds to pass; bounded by
    /// the session's action deadline.
    Wait,
}

/// A scroll direction.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Direction {
    /// Towards the end of the page.
    Down,
    /// Towards the top.
    Up,
}

/// Arguments of `browse_act`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct BrowseActArgs {
    /// The browse session, as `browse_open` answered it (`browseId`).
    #[schemars(pattern(ID_PATTERN))]
    #[serde(skip_serializing)]
    browse_id: String,
    /// The action.
    action: Action,
    /// The element to act on: its `ref` in the latest snapshot (e.g. `e12`). Required for
    /// click, type, select and upload.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    element: Option<String>,
    /// type: the text to type; wait: a text to show on the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    /// type: press Enter after typing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    submit: Option<bool>,
    /// select: the label of the option to choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    option: Option<String>,
    /// upload: the artifact's id (`art_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    artifact: Option<String>,
    /// press: the key, e.g. `Enter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// scroll: `down` (default) or `up`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    direction: Option<Direction>,
    /// navigate: the http(s) URL to go to; wait: a part of the URL to be reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// wait: milliseconds to let pass (at most the session's action deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 60000))]
    ms: Option<u64>,
}

/// Arguments of `browse_request_input`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct BrowseRequestInputArgs {
    /// The browse session, as `browse_open` answered it (`browseId`).
    #[schemars(pattern(ID_PATTERN))]
    #[serde(skip_serializing)]
    browse_id: String,
    /// The field the value goes into: its `ref` in the latest snapshot.
    #[serde(rename = "ref")]
    element: String,
    /// What to ask the person, in words (e.g. "the 6-digit code sent to your phone").
    prompt: String,
    /// How long to wait for the person, in seconds (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wait_seconds: Option<u64>,
}

/// Arguments of `task_status`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct TaskStatusArgs {
    /// The task, as `task_create` answered it (`taskId`).
    #[schemars(pattern(ID_PATTERN))]
    task_id: String,
    /// Wait up to this many seconds (at most 60) for the task to leave its current state
    /// before answering.
    #[serde(default)]
    wait_secs: Option<u32>,
}

/// Arguments of `run_timeline`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RunTimelineArgs {
    /// The run: a task's `taskId`, a browse session's `browseId` or a post's `postId`.
    #[schemars(pattern(ID_PATTERN))]
    run_id: String,
}

/// Arguments of `set_browser_screenshots`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SetScreenshotsArgs {
    /// Whether the tenant's runs take replay frames from now on.
    enabled: bool,
}

/// Arguments of `set_profile_consent`: the profile, and the body of
/// `PUT /v1/profiles/{name}/consent`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SetProfileConsentArgs {
    /// The profile's name (1 to 64 lower-case letters, digits, `-` or `_`).
    #[schemars(pattern("^[a-z0-9][a-z0-9_-]{0,63}$"))]
    profile: String,
    /// `allow` or `deny`.
    decision: abr_protocol::SiteDecision,
    /// Who decided (audited, with the key).
    decided_by: String,
}

/// What to publish (the schema of `post`'s `content`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "a schema only: `post` is checked as abr_protocol::PostRequest"
)]
struct PostContentSchema {
    /// The text of the post.
    text: String,
    /// A link to attach.
    link: Option<String>,
    /// Media attachments, in order: `{fileName, mimeType, dataBase64}`.
    media: Option<Vec<JsonObject>>,
}

/// The schema of `post`'s arguments: the body of `POST /v1/post` (every field it takes, and
/// no other: `additionalProperties: false`, as the API refuses unknown fields).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "a schema only: `post` is checked as abr_protocol::PostRequest"
)]
struct PostSchema {
    /// The platform to post on (a strategy registered on the runner, e.g. `demo`).
    platform: String,
    /// A session stored on the runner to post with (its id). Give this or `session`.
    session_id: Option<String>,
    /// A Playwright storageState to post with, scoped by the platform's policy first.
    session: Option<JsonObject>,
    /// What to post.
    content: PostContentSchema,
    /// The account's workspace (must be the caller's tenant when given).
    workspace_id: Option<String>,
    /// The account, recorded in audit events.
    account_id: Option<String>,
    /// A narrower session scope for this post: `{cookieDomains, origins}`.
    scope: Option<JsonObject>,
    /// A key naming this post: the same key again answers the first post's outcome instead
    /// of posting twice. Use one per intended post, and reuse it when retrying.
    idempotency_key: Option<String>,
}

/// The schema of `task_create`'s arguments: the body of `POST /v1/tasks` (every field it
/// takes, and no other).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "a schema only: checked as abr_protocol::TaskRequest"
)]
struct TaskSchema {
    /// The plan: `{targetUrl, steps: [{type, selector, value?, description}...],
    /// verification, risk}`, as for `POST /v1/tasks` (see `docs/tasks.md`).
    plan: JsonObject,
    /// Values of the plan's `{{name}}` placeholders (shown to the approver).
    inputs: Option<std::collections::BTreeMap<String, String>>,
    /// The inputs that are secrets (passwords, codes): the approver sees their length only.
    secret_inputs: Option<Vec<String>>,
    /// A session stored on the runner to run with (its id).
    session_id: Option<String>,
    /// A Playwright storageState to run with, scoped first.
    session: Option<JsonObject>,
    /// The session's scope: `{cookieDomains, origins}`.
    scope: Option<JsonObject>,
    /// A platform whose policy and scope apply.
    platform: Option<String>,
    /// The tenant: must be the caller's own when given.
    tenant_id: Option<String>,
    /// The orchestrator's id for the plan it proposed.
    proposal_id: Option<String>,
    /// Rehearse: run up to the first committing step, refuse it and stop.
    dry_run: Option<bool>,
    /// Wait for a person when a handoff (captcha, sign-in...) is detected:
    /// `{waitSeconds}`.
    handoff: Option<JsonObject>,
    /// A key naming this task: the same key again answers the first task.
    idempotency_key: Option<String>,
}

/// One tool call as the API request that performs it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Forward {
    /// The method.
    pub(crate) method: Method,
    /// Path and query, ids checked against [`ID_PATTERN`].
    pub(crate) path: String,
    /// The JSON body, if any.
    pub(crate) body: Option<Value>,
    /// The `Idempotency-Key` header, if any.
    pub(crate) idempotency_key: Option<String>,
    /// A read-only server's `browse_act`: the browse session, which must be read-only
    /// itself (its record says so) before the action is sent.
    pub(crate) read_only_session: Option<String>,
}

impl Forward {
    pub(crate) fn new(method: Method, path: String, body: Option<Value>) -> Self {
        Self {
            method,
            path,
            body,
            idempotency_key: None,
            read_only_session: None,
        }
    }
}

/// The tool `name`'s description.
fn description(name: &str) -> &'static str {
    match name {
        BROWSE_OPEN => {
            "Open a guarded browser session on a web page and answer its first snapshot: the \
             page's title and url, its interactive elements one per line (`e12 link Pricing`: \
             the ref to act on, the role, the name) under the headings (`## ...`) and \
             landmarks (`[main]`) they sit in, and the page's other text. A large page says \
             `more with from=N`: browse_snapshot with that `from` lists the rest. Form values \
             are never shown. Keep the answered browseId \
             for browse_act, browse_snapshot and browse_close; close it when done (idle \
             sessions expire)."
        }
        BROWSE_SNAPSHOT => {
            "Read the current page of a browse session again, in the same form as \
             browse_open's. `from` pages through a large page's elements (every element \
             keeps its ref on every page), `limit` sets how many are listed, `maxText` how \
             much of the page's text, `hrefs` adds links' targets. Refs of an older page \
             (before a navigation) may no longer be valid."
        }
        BROWSE_ACT => {
            "Perform one action in a browse session: click, type, select, upload (a file \
             input set to an `artifact` the orchestrator uploaded), press, scroll, \
             navigate, back, or wait (for an element `ref`, a `text`, a `url` part, or \
             `ms` to pass: instead of polling snapshots), on an element `ref` of the latest \
             snapshot. Answers the \
             outcome and the new snapshot. outcome `refused` means the guard blocked a \
             committing action (read-only or dry run: see `blocked`); `paused` means the page \
             needs a person (captcha, sign-in...); with pause reason `approval_required` the \
             action commits and waits for a person to approve it (see `approval`: nothing \
             was sent; tell the user, wait, then send the same action again: it runs once \
             approved; a rejection closes the session); `failed` means the step did not \
             work on the page. Do not retry a refused action."
        }
        BROWSE_CLOSE => "Close a browse session and its browser.",
        BROWSE_REQUEST_INPUT => {
            "Ask the user for a value you must not invent or guess (a one-time code, an \
             answer only they know) for the field `ref` of a browse session. The session \
             pauses (needs_input) until a person supplies it; it is typed into the field for \
             you and you never see it. Meanwhile browse_act answers `paused`: wait, then read \
             a snapshot and go on. Never sign in or fill credentials yourself."
        }
        POST => {
            "Publish a post on a platform with a stored session, and answer the proven \
             outcome: confirmed, uncertain (it may have been published: never retry it \
             automatically) or failed (with whether a retry is safe). Give an \
             idempotencyKey so a retry cannot post twice."
        }
        TASK_CREATE => {
            "Create a browser task from a step plan. It waits for a person's approval unless \
             the runner's approval rule lets it run; follow it with task_status."
        }
        TASK_STATUS => {
            "Read a task's record: its state (pending_approval, queued, running, paused, \
             succeeded, failed, uncertain...), its steps' results and its outcome. waitSecs \
             waits for a change first."
        }
        RUN_TIMELINE => {
            "Read what a run did, step by step, as a markdown table: a task's, a browse \
             session's or a post's. Each step's time, action, the element's role and name, \
             the page, whether it was done or refused (and by which rule), pauses and their \
             takeovers, approvals, frames and the outcome. Typed values appear as their \
             length only. Use it to explain a run to the user or to decide the next step."
        }
        SET_BROWSER_SCREENSHOTS => {
            "Switch the replay screenshots of the tenant's runs on or off (runs that start \
             from now on; a run going keeps its setting; an off run's record says \
             screenshots off, tenant_setting). An approver's or operator's key only; \
             audited with the key that changed it."
        }
        SET_PROFILE_CONSENT => {
            "Allow or decline the tenant's runs on a named browser profile of this runner \
             (a local browser profile that keeps its sign-ins). A run naming a profile \
             nobody decided on is refused with consent_required and the owner is asked \
             once; a declined profile is never opened (consent_refused). Decide only what \
             the profile's owner told you. An approver's or operator's key only; audited \
             with the key."
        }
        _ => "",
    }
}

/// The annotations of tool `name`: hints for a client, never relied on by the runner.
fn annotations(name: &str) -> ToolAnnotations {
    let read_only = matches!(name, BROWSE_SNAPSHOT | TASK_STATUS | RUN_TIMELINE);
    let mut hints = ToolAnnotations::new().read_only(read_only).open_world(true);
    if !read_only {
        hints = hints.destructive(matches!(name, POST | TASK_CREATE | BROWSE_ACT));
    }
    hints
}

/// The root schema of `T` with ABR's settings (JSON Schema 2020-12, standard formats only:
/// the OpenAPI description's), for `T`'s deserialized form (an argument) or serialized form
/// (a result), as MCP wants it: a root of type `object`, without the type's own title.
fn root_schema<T: JsonSchema>(serialized: bool) -> Result<Arc<JsonObject>, String> {
    let settings = abr_protocol::schema::settings();
    let settings = if serialized {
        settings.for_serialize()
    } else {
        settings
    };
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let Value::Object(mut object) = schema.to_value() else {
        return Err("a tool's schema is not an object".to_owned());
    };
    object.remove("title");
    if serialized {
        // Every answer and every refusal is a JSON object.
        object.insert("type".to_owned(), Value::from("object"));
    }
    match object.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(Arc::new(object)),
        _ => Err("a tool's schema must have the root type object".to_owned()),
    }
}

/// The input schema of tool `name`.
fn schema(name: &str) -> Result<Arc<JsonObject>, String> {
    fn input<T: JsonSchema>() -> Result<Arc<JsonObject>, String> {
        root_schema::<T>(false)
    }
    match name {
        BROWSE_OPEN => input::<BrowseOpenArgs>(),
        BROWSE_SNAPSHOT => input::<BrowseSnapshotArgs>(),
        BROWSE_CLOSE => input::<BrowseIdArgs>(),
        BROWSE_ACT => input::<BrowseActArgs>(),
        BROWSE_REQUEST_INPUT => input::<BrowseRequestInputArgs>(),
        POST => input::<PostSchema>(),
        TASK_CREATE => input::<TaskSchema>(),
        TASK_STATUS => input::<TaskStatusArgs>(),
        RUN_TIMELINE => input::<RunTimelineArgs>(),
        SET_BROWSER_SCREENSHOTS => input::<SetScreenshotsArgs>(),
        SET_PROFILE_CONSENT => input::<SetProfileConsentArgs>(),
        other => Err(format!("no tool {other}")),
    }
}

/// A tool's `structuredContent` when the call was refused: the API's error envelope with
/// the HTTP status it came with.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ToolRefusal {
    /// The HTTP status of the API's answer.
    pub(crate) status: u16,
    /// The API's error: its stable code, a message, whether a retry may pass.
    pub(crate) error: abr_protocol::ErrorBody,
}

/// A tool's `structuredContent`: its answer `T`, or the refusal (a schema only: the
/// content itself is the API's answer, forwarded).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
#[expect(
    dead_code,
    reason = "described, never built: the API's answer is forwarded"
)]
enum ToolAnswer<T> {
    /// What the API answered.
    Answer(T),
    /// What the API refused with.
    Refused(ToolRefusal),
}

/// `post`'s answer: the outcome once the job ran, or the record while it runs elsewhere.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
#[expect(
    dead_code,
    reason = "described, never built: the API's answer is forwarded"
)]
enum PostAnswer {
    /// The outcome (200).
    Ran(Box<abr_protocol::AgentPostResult>),
    /// The record of a post still running (202).
    Running(Box<abr_protocol::PostRecord>),
}

/// The output schema of tool `name`: what its `structuredContent` is, answered or refused.
fn output_schema(name: &str) -> Result<Arc<JsonObject>, String> {
    fn output<T: JsonSchema>() -> Result<Arc<JsonObject>, String> {
        root_schema::<ToolAnswer<T>>(true)
    }
    match name {
        BROWSE_OPEN => output::<abr_protocol::BrowseOpened>(),
        BROWSE_SNAPSHOT => output::<abr_protocol::Snapshot>(),
        BROWSE_CLOSE => output::<abr_protocol::BrowseClosed>(),
        BROWSE_ACT => output::<abr_protocol::ActResponse>(),
        BROWSE_REQUEST_INPUT => output::<abr_protocol::BrowsePause>(),
        POST => output::<PostAnswer>(),
        TASK_CREATE | TASK_STATUS => output::<abr_protocol::TaskRecord>(),
        RUN_TIMELINE => output::<abr_protocol::RunTimeline>(),
        SET_BROWSER_SCREENSHOTS => output::<abr_protocol::ScreenshotsSetting>(),
        SET_PROFILE_CONSENT => output::<abr_protocol::ProfileEntry>(),
        other => Err(format!("no tool {other}")),
    }
}

/// Every tool, in the order listed.
const ALL: [&str; 11] = [
    BROWSE_OPEN,
    BROWSE_SNAPSHOT,
    BROWSE_ACT,
    BROWSE_CLOSE,
    BROWSE_REQUEST_INPUT,
    POST,
    TASK_CREATE,
    TASK_STATUS,
    RUN_TIMELINE,
    SET_BROWSER_SCREENSHOTS,
    SET_PROFILE_CONSENT,
];

/// Whether a server with `read_only` offers tool `name`.
fn offered(name: &str, read_only: bool) -> bool {
    ALL.contains(&name) && !(read_only && NOT_READ_ONLY.contains(&name))
}

/// The tool `name` as listed, if a server with `read_only` offers it.
pub(crate) fn tool(name: &str, read_only: bool) -> Option<Tool> {
    if !offered(name, read_only) {
        return None;
    }
    let schema = match schema(name) {
        Ok(schema) => schema,
        Err(e) => {
            tracing::error!(tool = name, error = %e, "a tool's input schema is invalid");
            return None;
        }
    };
    let output = match output_schema(name) {
        Ok(schema) => schema,
        Err(e) => {
            tracing::error!(tool = name, error = %e, "a tool's output schema is invalid");
            return None;
        }
    };
    let name = ALL.into_iter().find(|t| *t == name)?;
    let mut tool = Tool::new(name, description(name), schema).with_annotations(annotations(name));
    tool.output_schema = Some(output);
    Some(tool)
}

/// The tools a server with `read_only` lists.
pub(crate) fn list(read_only: bool) -> Vec<Tool> {
    ALL.iter()
        .filter_map(|name| tool(name, read_only))
        .collect()
}

/// The API request that performs tool `name` with `arguments`.
///
/// # Errors
/// An MCP invalid-params error: an unknown tool (or one a read-only server does not offer),
/// or arguments that do not match its schema. The message never quotes an argument's value.
pub(crate) fn forward(
    name: &str,
    arguments: Option<JsonObject>,
    read_only: bool,
) -> Result<Forward, ErrorData> {
    if !offered(name, read_only) {
        let message = if read_only && NOT_READ_ONLY.contains(&name) {
            format!("this MCP server is read-only: {name} is not offered")
        } else {
            "no such tool".to_owned()
        };
        return Err(ErrorData::invalid_params(message, None));
    }
    let arguments = arguments.unwrap_or_default();
    match name {
        BROWSE_OPEN => {
            let mut args: BrowseOpenArgs = parse(name, arguments)?;
            if read_only {
                args.read_only = Some(true);
            }
            Ok(Forward::new(
                Method::POST,
                "/v1/browse".to_owned(),
                Some(to_body(&args)?),
            ))
        }
        BROWSE_SNAPSHOT => {
            let args: BrowseSnapshotArgs = parse(name, arguments)?;
            let id = id(name, "browseId", &args.browse_id)?;
            Ok(Forward::new(
                Method::GET,
                format!("/v1/browse/{id}/snapshot{}", args.query()),
                None,
            ))
        }
        BROWSE_REQUEST_INPUT => {
            let args: BrowseRequestInputArgs = parse(name, arguments)?;
            let id = id(name, "browseId", &args.browse_id)?;
            Ok(Forward::new(
                Method::POST,
                format!("/v1/browse/{id}/input-request"),
                Some(to_body(&args)?),
            ))
        }
        BROWSE_ACT => {
            let args: BrowseActArgs = parse(name, arguments)?;
            let id = id(name, "browseId", &args.browse_id)?;
            let mut call = Forward::new(
                Method::POST,
                format!("/v1/browse/{id}/act"),
                Some(to_body(&args)?),
            );
            if read_only {
                // Also a session opened writable over the API: read-only covers every
                // session this server acts on.
                call.read_only_session = Some(id.to_owned());
            }
            Ok(call)
        }
        BROWSE_CLOSE => {
            let args: BrowseIdArgs = parse(name, arguments)?;
            let id = id(name, "browseId", &args.browse_id)?;
            Ok(Forward::new(
                Method::DELETE,
                format!("/v1/browse/{id}"),
                None,
            ))
        }
        POST => body_tool::<abr_protocol::PostRequest>(name, "/v1/post", arguments),
        TASK_CREATE => body_tool::<abr_protocol::TaskRequest>(name, "/v1/tasks", arguments),
        TASK_STATUS => {
            let args: TaskStatusArgs = parse(name, arguments)?;
            let id = id(name, "taskId", &args.task_id)?;
            let path = match args.wait_secs {
                Some(secs) => format!("/v1/tasks/{id}?waitSecs={secs}"),
                None => format!("/v1/tasks/{id}"),
            };
            Ok(Forward::new(Method::GET, path, None))
        }
        RUN_TIMELINE => {
            let args: RunTimelineArgs = parse(name, arguments)?;
            let id = id(name, "runId", &args.run_id)?;
            Ok(Forward::new(
                Method::GET,
                format!("/v1/runs/{id}/timeline"),
                None,
            ))
        }
        SET_BROWSER_SCREENSHOTS => {
            let args: SetScreenshotsArgs = parse(name, arguments)?;
            Ok(Forward::new(
                Method::PUT,
                "/v1/settings/screenshots".to_owned(),
                Some(to_body(&args)?),
            ))
        }
        SET_PROFILE_CONSENT => {
            let args: SetProfileConsentArgs = parse(name, arguments)?;
            let profile = abr_core::guard::profile_name(&args.profile)
                .map_err(|e| ErrorData::invalid_params(format!("{name}: {e}"), None))?;
            let body = abr_protocol::ProfileConsentRequest {
                decision: args.decision,
                decided_by: args.decided_by.clone(),
            };
            Ok(Forward::new(
                Method::PUT,
                format!("/v1/profiles/{profile}/consent"),
                Some(to_body(&body)?),
            ))
        }
        _ => Err(ErrorData::invalid_params("no such tool", None)),
    }
}

/// A tool whose arguments are an API body of type `T` (checked as `T`, forwarded as
/// given), plus an optional `idempotencyKey` sent as the `Idempotency-Key` header.
fn body_tool<T: DeserializeOwned>(
    name: &str,
    path: &str,
    mut arguments: JsonObject,
) -> Result<Forward, ErrorData> {
    let idempotency_key = match arguments.remove("idempotencyKey") {
        None | Some(Value::Null) => None,
        Some(Value::String(key)) => Some(key),
        Some(_) => {
            return Err(ErrorData::invalid_params(
                format!("{name}: idempotencyKey must be a string"),
                None,
            ));
        }
    };
    parse::<T>(name, arguments.clone())?;
    Ok(Forward {
        method: Method::POST,
        path: path.to_owned(),
        body: Some(Value::Object(arguments)),
        idempotency_key,
        read_only_session: None,
    })
}

/// `arguments` as `T`, or an invalid-params error that quotes no value but names the field
/// and where it is (an unknown argument is refused by name, like an unknown API field).
fn parse<T: DeserializeOwned>(name: &str, arguments: JsonObject) -> Result<T, ErrorData> {
    read_value(Value::Object(arguments)).map_err(|e| {
        ErrorData::invalid_params(
            format!("{name}: the arguments do not match the tool's input schema: {e}"),
            None,
        )
    })
}

/// `value` if it is an id the runner could have handed out.
fn id<'a>(name: &str, field: &str, value: &'a str) -> Result<&'a str, ErrorData> {
    if is_id(value) {
        Ok(value)
    } else {
        Err(ErrorData::invalid_params(
            format!("{name}: {field} must match {ID_PATTERN}"),
            None,
        ))
    }
}

/// `args` as a JSON body.
fn to_body<T: Serialize>(args: &T) -> Result<Value, ErrorData> {
    serde_json::to_value(args)
        .map_err(|_| ErrorData::internal_error("the request could not be written", None))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: Value) -> Option<JsonObject> {
        match value {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    #[test]
    fn every_tool_has_a_valid_object_schema_and_a_description() {
        let tools = list(false);
        let names: Vec<_> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ALL);
        for tool in &tools {
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                tool.name
            );
            assert!(
                tool.description.as_deref().is_some_and(|d| d.len() > 20),
                "{}",
                tool.name
            );
        }
        let act = tool(BROWSE_ACT, false).unwrap();
        let schema = serde_json::to_string(&act.input_schema).unwrap();
        for action in [
            "click", "type", "select", "upload", "press", "scroll", "navigate", "back",
        ] {
            assert!(schema.contains(&format!("\"{action}\"")), "{schema}");
        }
        assert!(schema.contains(ID_PATTERN), "{schema}");
    }

    #[test]
    fn every_schema_refuses_additional_properties() {
        for tool in list(false) {
            assert_eq!(
                tool.input_schema.get("additionalProperties"),
                Some(&json!(false)),
                "{}",
                tool.name
            );
        }
    }

    #[test]
    fn a_read_only_servers_act_must_find_its_session_read_only() {
        let act = json!({"browseId": "b_1", "action": "click", "ref": "e1"});
        let f = forward(BROWSE_ACT, args(act.clone()), true).unwrap();
        assert_eq!(f.read_only_session.as_deref(), Some("b_1"));
        let f = forward(BROWSE_ACT, args(act), false).unwrap();
        assert_eq!(f.read_only_session, None);
    }

    #[test]
    fn read_only_lists_neither_post_nor_task_create_and_refuses_them() {
        let names: Vec<_> = list(true).into_iter().map(|t| t.name).collect();
        assert!(
            !names.iter().any(|n| n == POST || n == TASK_CREATE),
            "{names:?}"
        );
        assert!(names.iter().any(|n| n == BROWSE_OPEN), "{names:?}");
        let err = forward(POST, args(json!({"platform": "demo"})), true).unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("read-only"), "{}", err.message);
    }

    #[test]
    fn read_only_forces_read_only_browsing_whatever_the_model_asks() {
        for asked in [json!(false), json!(true), Value::Null] {
            let mut body = json!({"url": "https://example.com/"});
            if !asked.is_null() {
                body["readOnly"] = asked.clone();
            }
            let f = forward(BROWSE_OPEN, args(body), true).unwrap();
            assert_eq!(f.body.unwrap()["readOnly"], json!(true), "{asked}");
        }
        let f = forward(
            BROWSE_OPEN,
            args(json!({"url": "https://e.com/", "readOnly": false})),
            false,
        )
        .unwrap();
        assert_eq!(f.body.unwrap()["readOnly"], json!(false));
    }

    #[test]
    fn calls_become_their_api_requests() {
        let f = forward(
            BROWSE_ACT,
            args(json!({"browseId": "b_1", "action": "type", "ref": "e3", "text": "hi", "submit": true})),
            false,
        )
        .unwrap();
        assert_eq!(
            (f.method, f.path.as_str()),
            (Method::POST, "/v1/browse/b_1/act")
        );
        assert_eq!(
            f.body.unwrap(),
            json!({"action": "type", "ref": "e3", "text": "hi", "submit": true})
        );
        let f = forward(
            TASK_STATUS,
            args(json!({"taskId": "task_x", "waitSecs": 5})),
            false,
        )
        .unwrap();
        assert_eq!(
            (f.method, f.path.as_str()),
            (Method::GET, "/v1/tasks/task_x?waitSecs=5")
        );
        let f = forward(BROWSE_CLOSE, args(json!({"browseId": "b-2"})), false).unwrap();
        assert_eq!(
            (f.method, f.path.as_str()),
            (Method::DELETE, "/v1/browse/b-2")
        );
        let post = json!({
            "platform": "demo", "sessionId": "s1", "content": {"text": "hello"},
            "idempotencyKey": "k1"
        });
        let f = forward(POST, args(post), false).unwrap();
        assert_eq!(f.idempotency_key.as_deref(), Some("k1"));
        assert_eq!(
            f.body.unwrap(),
            json!({"platform": "demo", "sessionId": "s1", "content": {"text": "hello"}})
        );
    }

    #[test]
    fn an_id_cannot_reach_another_path() {
        for bad in ["../tasks/x", "a/b", "x?waitSecs=1", "", "b 1", "%2e%2e"] {
            let err = forward(BROWSE_SNAPSHOT, args(json!({"browseId": bad})), false).unwrap_err();
            assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad:?}");
            let err = forward(TASK_STATUS, args(json!({"taskId": bad})), false).unwrap_err();
            assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{bad:?}");
        }
    }

    #[test]
    fn bad_arguments_are_invalid_params_that_quote_no_value() {
        let cases = [
            (BROWSE_OPEN, json!({})),
            (
                BROWSE_OPEN,
                json!({"url": "https://e.com/", "sneaky": "secret-value"}),
            ),
            (
                BROWSE_ACT,
                json!({"browseId": "b1", "action": "secret-value"}),
            ),
            (BROWSE_ACT, json!({"browseId": "b1"})),
            (TASK_STATUS, json!({"taskId": 5})),
            (POST, json!({"platform": "demo", "content": "secret-value"})),
            (
                POST,
                json!({"platform": "demo", "content": {"text": "x"}, "idempotencyKey": 5}),
            ),
            (TASK_CREATE, json!({"plan": "secret-value"})),
        ];
        for (name, value) in cases {
            let err = forward(name, args(value.clone()), false).unwrap_err();
            assert_eq!(
                err.code,
                rmcp::model::ErrorCode::INVALID_PARAMS,
                "{name} {value}"
            );
            assert!(!err.message.contains("secret-value"), "{}", err.message);
        }
        let err = forward("shell_exec", None, false).unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }
}
