//! Issue 16's acceptance tests, written as the attacks, on real Chromium through the runner's
//! HTTP API and its MCP endpoint, each checked against the demo site's write ledger (every
//! request with a method other than GET/HEAD/OPTIONS that reached the site, every WebSocket
//! upgrade and message, and the one committing GET):
//!
//! - every finding of the issue as the attack over REST: a read-only browse session performs
//!   each attack page's committing action (key chords on Pay, on the field and on the page;
//!   implicit submission; Enter in the chat box; the select, switch and checkbox that save;
//!   the 36 buttons; the shadow-DOM Continue; the `div role=button`; typing that submits;
//!   the "Show more" that posts; GraphQL without a platform; the background writes from a
//!   timer, a beacon (also the one sent as the page is left), a ping, a keep-alive fetch,
//!   workers, a service worker and a WebSocket; Enter in an iframe after Tab moved the focus
//!   into it) and the ledger stays empty. Every answer to a committing action is `refused`
//!   with the guard's reason (a rule's class, or `network_write` / `web_socket` naming the
//!   method and host), never `committing`; the few actions whose write the browser never
//!   even attempts (a space typed in a field, a click with no socket or service worker left
//!   to write through, leaving a page) may answer `done`, never `committing`. The label
//!   wrapping a hidden submit has no reference in a snapshot, so a read-only task clicks it
//!   by its selector. The neutral link to a committing GET reaches the ledger: the known
//!   limit of a rule on methods, asserted as such;
//! - a subset of those attacks through a read-only `/mcp` (sessions opened there are
//!   read-only without asking), and an MCP act on a session opened over REST without
//!   read-only: refused, whatever the action, while the same click over REST writes;
//! - a read-only task whose harmless-looking click posts: `failed`, `blocked_action`, the
//!   refused request named by method and host; a read-only task that leaves the beacon page:
//!   nothing reaches the ledger; read-write tasks whose page posts (a script's
//!   POST, implicit submission) are `uncertain`, never "failed, retryable", also when the
//!   runner is "killed" after the post left (it writes nothing more, while a second runner
//!   on the same SQLite file ends the run at its start);
//! - a platform's declared GraphQL-query exception: queries reach the site, a mutation, a
//!   batch with a mutation, a document mixing both and a persisted query without its text do
//!   not;
//! - the harmless corpus under read-only: at most 5% refused (the figure is printed), every
//!   control that was let through reached the page, the ledger empty;
//! - a property test over generated pages and actions: the ledger stays empty under
//!   read-only in every case, and a control run of generated pages read-write shows that they
//!   do write.
//!
//! Each test starts its own site and runner (playwright-rs binds its driver to the runtime
//! that started it, and every test has its own runtime) and stops them; the tests run one
//! after another (a lock), so that two browsers do not compete for the CPU. A test collects
//! what went wrong and asserts only once its browsers are stopped.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use abr_demo::DemoSite;
use abr_demo::site::{ATTACK_BUTTONS, HARMLESS_CORPUS, HarmlessAction, LedgerEntry};
use abr_engine::DeclaredStrategy;
use abr_engine::EngineStore;
use abr_protocol::{ActOutcome, ActResponse, BlockedAction, BlockedBy, CommitClass};
use abr_service::config::RunnerConfig;
use abr_service::runner::RunnerBuilder;
use abr_service::server::RunningServer;
use abr_store::{SealingKey as StoreKey, SqliteStore};
use common::*;
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::{Config as ProptestConfig, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Value, json};

use crate::common;

const TENANT: &str = "acme";
/// How long a test watches for a write after an action.
const SETTLE: Duration = Duration::from_millis(500);
/// The protocol version the MCP requests name.
const MCP_PROTOCOL: &str = "2025-06-18";

/// One test at a time (see the module docs).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The runner settings of these tests: plans need no approval (the tests are about the
/// rails), no pacing, and no daily limit in the way.
fn attack_config(c: &mut RunnerConfig) {
    c.tasks.approval = abr_core::approval::ApprovalRule::Off;
    c.pacing = None;
    c.tasks.limits.daily_executions = 100_000;
}

async fn attack_stack() -> Stack {
    stack_with(attack_config, |b| b).await
}

/// Stops the runner (and its browsers), then the site.
async fn stop(stack: Stack) {
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}

// ---- calls -------------------------------------------------------------------------------

/// An authenticated API call as the tenant: its status and JSON body (`null` if none).
async fn rest(
    stack: &Stack,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    rest_on(&stack.server.base_url(), method, path, body).await
}

async fn rest_on(
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = raw_http()
        .request(method, format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .header("x-tenant-id", TENANT);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A tool call on the runner's `/mcp` (stateless JSON): `(isError, structuredContent)`.
/// Panics on a protocol error (the tests send only valid calls).
async fn mcp_tool(stack: &Stack, tool: &str, arguments: Value) -> (bool, Value) {
    let message = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    });
    let response = raw_http()
        .post(format!("{}/mcp", stack.server.base_url()))
        .bearer_auth(TOKEN)
        .header("x-tenant-id", TENANT)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MCP_PROTOCOL)
        .json(&message)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert_eq!(status, 200, "{tool}: HTTP {status}: {body}");
    let result = body
        .get("result")
        .unwrap_or_else(|| panic!("{tool}: not a tool result: {body}"));
    (
        result["isError"].as_bool().unwrap_or(false),
        result["structuredContent"].clone(),
    )
}

/// How a browse session is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Rest,
    Mcp,
}

/// An open browse session and the latest snapshot it answered.
struct Browse<'a> {
    stack: &'a Stack,
    via: Via,
    id: String,
    snapshot: Value,
}

impl<'a> Browse<'a> {
    /// Opens a session on `url` (`readOnly` as given; over MCP, none is sent unless given):
    /// the session and the first answer.
    async fn open(
        stack: &'a Stack,
        via: Via,
        url: &str,
        read_only: Option<bool>,
        platform: Option<&str>,
    ) -> (Self, Value) {
        let mut body = json!({ "url": url });
        if let Some(read_only) = read_only {
            body["readOnly"] = json!(read_only);
        }
        if let Some(platform) = platform {
            body["platform"] = json!(platform);
        }
        let opened = match via {
            Via::Rest => {
                let (status, opened) =
                    rest(stack, reqwest::Method::POST, "/v1/browse", Some(body)).await;
                assert_eq!(status, 201, "open {url}: {opened}");
                opened
            }
            Via::Mcp => {
                let (is_error, opened) = mcp_tool(stack, "browse_open", body).await;
                assert!(!is_error, "open {url}: {opened}");
                opened
            }
        };
        let id = opened["browseId"].as_str().unwrap().to_owned();
        let session = Self {
            stack,
            via,
            id,
            snapshot: opened["snapshot"].clone(),
        };
        (session, opened)
    }

    /// One action; the answer (an API or tool error as `{"callError": ...}`).
    async fn act(&mut self, action: Value) -> Value {
        let answer = match self.via {
            Via::Rest => {
                let (status, answer) = rest(
                    self.stack,
                    reqwest::Method::POST,
                    &format!("/v1/browse/{}/act", self.id),
                    Some(action),
                )
                .await;
                if status == 200 {
                    answer
                } else {
                    json!({ "callError": answer, "status": status })
                }
            }
            Via::Mcp => {
                let mut arguments = action;
                arguments["browseId"] = json!(self.id);
                let (is_error, answer) = mcp_tool(self.stack, "browse_act", arguments).await;
                if is_error {
                    json!({ "callError": answer })
                } else {
                    answer
                }
            }
        };
        if answer["snapshot"].is_object() {
            self.snapshot = answer["snapshot"].clone();
        }
        answer
    }

    /// The `n`-th (0-based) element of the latest snapshot with this role and name.
    fn nth(&self, role: &str, name: &str, n: usize) -> Option<String> {
        self.elements()
            .into_iter()
            .filter(|(_, r, m)| r == role && m == name)
            .nth(n)
            .map(|(reference, _, _)| reference)
    }

    fn find(&self, role: &str, name: &str) -> Option<String> {
        self.nth(role, name, 0)
    }

    /// `(ref, role, name)` of every element of the latest snapshot.
    fn elements(&self) -> Vec<(String, String, String)> {
        self.snapshot["elements"]
            .as_array()
            .map(|elements| {
                elements
                    .iter()
                    .map(|e| {
                        let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
                        (s("ref"), s("role"), s("name"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The session's task record (over REST, whichever way it was opened).
    async fn record(&self) -> Value {
        let (status, record) = rest(
            self.stack,
            reqwest::Method::GET,
            &format!("/v1/tasks/{}", self.id),
            None,
        )
        .await;
        assert_eq!(status, 200, "{record}");
        record
    }

    async fn close(self) {
        match self.via {
            Via::Rest => {
                let (status, closed) = rest(
                    self.stack,
                    reqwest::Method::DELETE,
                    &format!("/v1/browse/{}", self.id),
                    None,
                )
                .await;
                assert_eq!(status, 200, "{closed}");
            }
            Via::Mcp => {
                let (is_error, closed) =
                    mcp_tool(self.stack, "browse_close", json!({ "browseId": self.id })).await;
                assert!(!is_error, "{closed}");
            }
        }
    }
}

/// An answer without its snapshot's text, for messages.
fn brief(answer: &Value) -> String {
    let mut answer = answer.clone();
    if let Some(snapshot) = answer.get_mut("snapshot") {
        let elements = snapshot["elements"].as_array().map_or(0, Vec::len);
        *snapshot = json!({"url": snapshot["url"], "elements": elements});
    }
    answer.to_string()
}

fn click(reference: &str) -> Value {
    json!({"action": "click", "ref": reference})
}

fn press(reference: Option<&str>, key: &str) -> Value {
    match reference {
        Some(reference) => json!({"action": "press", "ref": reference, "key": key}),
        None => json!({"action": "press", "key": key}),
    }
}

fn type_into(reference: &str, text: &str, submit: bool) -> Value {
    json!({"action": "type", "ref": reference, "text": text, "submit": submit})
}

fn navigate(url: &str) -> Value {
    json!({"action": "navigate", "url": url})
}

// ---- what an answer must be ------------------------------------------------------------------

/// The answer to an attack must be this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `refused`, `committing: false`, the guard's reason in `blocked`.
    Refused,
    /// Nothing committing happens on the page (a space typed in a field, a click whose
    /// write the browser never even attempts): `done` or `refused`, never `committing`.
    Quiet,
}

/// Checks an attack's answer: `Ok(the refusal)` if it was refused as it must be.
fn judge(answer: &Value, expect: Expect) -> Result<Option<BlockedAction>, String> {
    let parsed: ActResponse = serde_json::from_value(answer.clone())
        .map_err(|e| format!("not an act answer ({e}): {}", brief(answer)))?;
    if parsed.committing {
        return Err(format!("answered committing: true: {}", brief(answer)));
    }
    match (parsed.outcome, expect) {
        (ActOutcome::Refused, _) => {}
        (ActOutcome::Done, Expect::Quiet) => return Ok(None),
        (outcome, _) => {
            return Err(format!(
                "expected refused, the outcome is {outcome:?}: {}",
                brief(answer)
            ));
        }
    }
    let blocked = parsed
        .blocked
        .ok_or_else(|| format!("refused without `blocked`: {}", brief(answer)))?;
    check_blocked(&blocked).map_err(|e| format!("{e}: {}", brief(answer)))?;
    let error = parsed
        .error
        .ok_or_else(|| format!("refused without an error: {}", brief(answer)))?;
    if error.code != "blocked_action" || error.retryable {
        return Err(format!(
            "refused with {} (retryable {}), expected blocked_action, not retryable",
            error.code, error.retryable
        ));
    }
    Ok(Some(blocked))
}

/// A refusal must name the read-only rule, and a network refusal its method and host (the
/// site's, never a path).
fn check_blocked(blocked: &BlockedAction) -> Result<(), String> {
    if blocked.blocked_by != BlockedBy::ReadOnly {
        return Err(format!(
            "blocked by {:?}, not read_only",
            blocked.blocked_by
        ));
    }
    match blocked.class {
        CommitClass::NetworkWrite => {
            let method = blocked.method.as_deref().unwrap_or_default();
            if method.is_empty() || ["GET", "HEAD", "OPTIONS"].contains(&method) {
                return Err(format!("a network write with method {method:?}"));
            }
            if blocked.host.as_deref() != Some("127.0.0.1") {
                return Err(format!("a network write to host {:?}", blocked.host));
            }
        }
        CommitClass::WebSocket => {
            if blocked.host.as_deref() != Some("127.0.0.1") {
                return Err(format!("a WebSocket to host {:?}", blocked.host));
            }
        }
        _ => {
            if blocked.method.is_some() || blocked.host.is_some() {
                return Err(format!(
                    "a rule refusal naming a request: {:?} {:?}",
                    blocked.method, blocked.host
                ));
            }
        }
    }
    Ok(())
}

/// What a session's record says was refused: `(class, method, host)`.
fn refusals(record: &Value) -> Vec<(String, Option<String>, Option<String>)> {
    record["blocked"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|b| {
                    let s = |k: &str| b[k].as_str().map(str::to_owned);
                    (s("class").unwrap_or_default(), s("method"), s("host"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The attacks' bookkeeping: what went wrong, how many committing actions were tried, and
/// how each was refused.
#[derive(Default)]
struct Attacks {
    problems: Vec<String>,
    /// Committing actions tried (each answer judged, the ledger checked after it).
    actions: usize,
    /// Background pages loaded (their writes start without an action).
    loads: usize,
    /// How the refusals were told: class → count.
    classes: BTreeMap<String, usize>,
}

impl Attacks {
    /// Prints the committing corpus's figure.
    fn report(&self, via: &str, started: Instant) {
        let reached = self
            .problems
            .iter()
            .filter(|p| p.contains("REACHED THE LEDGER"))
            .count();
        eprintln!(
            "committing corpus ({via}): {} actions and {} background pages loaded, \
             {reached} reached the ledger; refused as {:?}; in {:?}",
            self.actions,
            self.loads,
            self.classes,
            started.elapsed()
        );
    }

    fn problem(&mut self, problem: String) {
        self.problems.push(problem);
    }

    /// After a settle, the ledger must be empty; a write found is a problem (and cleared).
    async fn ledger_empty(&mut self, site: &DemoSite, label: &str, answer: &Value) {
        tokio::time::sleep(SETTLE).await;
        let ledger = site.ledger();
        if !ledger.is_empty() {
            self.problem(format!(
                "{label}: REACHED THE LEDGER {ledger:?}; the answer was {}",
                brief(answer)
            ));
            site.reset_ledger();
        }
    }

    /// Performs one attack and judges it.
    async fn attack(
        &mut self,
        session: &mut Browse<'_>,
        label: &str,
        action: Value,
        expect: Expect,
    ) -> Value {
        self.actions += 1;
        let answer = session.act(action).await;
        match judge(&answer, expect) {
            Ok(Some(blocked)) => {
                let class = serde_json::to_value(blocked.class).unwrap();
                let class = class.as_str().unwrap_or_default().to_owned();
                eprintln!(
                    "  {label}: refused, {class}{}{}",
                    blocked.verb.map(|v| format!(" {v:?}")).unwrap_or_default(),
                    blocked.method.map(|m| format!(" {m}")).unwrap_or_default()
                );
                *self.classes.entry(class).or_default() += 1;
            }
            Ok(None) => eprintln!("  {label}: {}", answer["outcome"]),
            Err(e) => self.problem(format!("{label}: {e}")),
        }
        self.ledger_empty(&session.stack.site, label, &answer).await;
        answer
    }

    /// A step that sets an attack up (open a page again, type without Enter, move the
    /// focus): it must be done (or a pause reported), never committing, and write nothing.
    /// Typing into a form that posts is itself refused under read-only (`write_form_field`:
    /// a site may save a draft as it is typed); the attack goes on on the empty field.
    async fn prepare(&mut self, session: &mut Browse<'_>, label: &str, action: Value) -> bool {
        let answer = session.act(action).await;
        let outcome = answer["outcome"].as_str().unwrap_or_default();
        let typing_refused = outcome == "refused"
            && answer["blocked"]["class"] == "write_form_field"
            && answer["blocked"]["blockedBy"] == "read_only";
        if typing_refused {
            eprintln!("  {label} (setting up): typing refused, write_form_field");
        }
        let ok = (matches!(outcome, "done" | "paused") || typing_refused)
            && answer["committing"] == json!(false);
        if !ok {
            self.problem(format!("{label} (setting up): {}", brief(&answer)));
        }
        self.ledger_empty(&session.stack.site, label, &answer).await;
        ok
    }

    /// The reference of `role` `name` on the session's page, or a problem.
    fn reference(
        &mut self,
        session: &Browse<'_>,
        label: &str,
        role: &str,
        name: &str,
    ) -> Option<String> {
        let found = session.find(role, name);
        if found.is_none() {
            self.problem(format!(
                "{label}: no {role} {name:?} in the snapshot: {:?}",
                session.elements()
            ));
        }
        found
    }
}

/// The site's URL of `path`.
fn at(site: &DemoSite, path: &str) -> String {
    format!("{}{path}", site.base_url())
}

// ---- 1. every finding as the attack, over REST --------------------------------------------

/// Where a chord is pressed on `/attack/chord`.
#[derive(Debug, Clone, Copy)]
enum ChordAt {
    Pay,
    Field,
    /// On the page, with the focus where `autofocus` put it: on Pay.
    Page,
}

/// The chord attacks (and the expectation for each).
const CHORDS: &[(ChordAt, &str, Expect)] = &[
    (ChordAt::Pay, "Enter+Shift", Expect::Refused),
    (ChordAt::Pay, "Shift+Enter", Expect::Refused),
    (ChordAt::Pay, "Space+Shift", Expect::Refused),
    (ChordAt::Field, "Enter+Shift", Expect::Refused),
    (ChordAt::Field, "Shift+Enter", Expect::Refused),
    // A space in a text field is only a space (tests/attack_browser.rs: nothing is sent).
    (ChordAt::Field, "Space+Shift", Expect::Quiet),
    (ChordAt::Page, "Enter+Shift", Expect::Refused),
    (ChordAt::Page, "Shift+Enter", Expect::Refused),
    (ChordAt::Page, "Space+Shift", Expect::Refused),
];

/// Opens `page` read-only, over `via`.
async fn attack_page<'a>(
    stack: &'a Stack,
    via: Via,
    attacks: &mut Attacks,
    page: &str,
) -> Browse<'a> {
    let url = at(&stack.site, &format!("/attack/{page}"));
    let (session, opened) =
        Browse::open(stack, via, &url, (via == Via::Rest).then_some(true), None).await;
    if opened["readOnly"] != json!(true) {
        attacks.problem(format!(
            "{page}: the session is not read-only: {}",
            brief(&opened)
        ));
    }
    attacks
        .ledger_empty(&stack.site, &format!("{page}: loading"), &opened)
        .await;
    session
}

async fn chords(stack: &Stack, via: Via, attacks: &mut Attacks, which: &[(ChordAt, &str, Expect)]) {
    let mut s = attack_page(stack, via, attacks, "chord").await;
    let url = at(&stack.site, "/attack/chord");
    for (i, (place, key, expect)) in which.iter().enumerate() {
        let label = format!("chord {key} on {place:?}");
        if i > 0 && !attacks.prepare(&mut s, &label, navigate(&url)).await {
            continue;
        }
        let target = match place {
            ChordAt::Pay => attacks.reference(&s, &label, "button", "Pay"),
            ChordAt::Field => attacks.reference(&s, &label, "textbox", "Note for the seller"),
            ChordAt::Page => Some(String::new()),
        };
        let Some(target) = target else { continue };
        let on = (!target.is_empty()).then_some(target.as_str());
        attacks
            .attack(&mut s, &label, press(on, key), *expect)
            .await;
    }
    s.close().await;
}

async fn implicit(stack: &Stack, via: Via, attacks: &mut Attacks) {
    let mut s = attack_page(stack, via, attacks, "implicit").await;
    if let Some(q) = attacks.reference(&s, "implicit", "textbox", "New to-do") {
        attacks
            .attack(
                &mut s,
                "implicit: type with submit",
                type_into(&q, "milk", true),
                Expect::Refused,
            )
            .await;
        if attacks
            .prepare(&mut s, "implicit", type_into(&q, "eggs", false))
            .await
        {
            attacks
                .attack(
                    &mut s,
                    "implicit: Enter in the field",
                    press(Some(&q), "Enter"),
                    Expect::Refused,
                )
                .await;
        }
    }
    s.close().await;
}

async fn chat(stack: &Stack, attacks: &mut Attacks) {
    let mut s = attack_page(stack, Via::Rest, attacks, "chat").await;
    if let Some(chat) = attacks.reference(&s, "chat", "textbox", "Message") {
        if attacks
            .prepare(&mut s, "chat", type_into(&chat, "Hello", false))
            .await
        {
            attacks
                .attack(
                    &mut s,
                    "chat: Enter in the chat box",
                    press(Some(&chat), "Enter"),
                    Expect::Refused,
                )
                .await;
        }
        attacks
            .attack(
                &mut s,
                "chat: type with submit",
                type_into(&chat, "Hi", true),
                Expect::Refused,
            )
            .await;
    }
    s.close().await;
}

/// Opens `page` and performs `action` on the element `role` `name`.
async fn one_attack(
    stack: &Stack,
    attacks: &mut Attacks,
    page: &str,
    (role, name): (&str, &str),
    action: impl Fn(&str) -> Value,
) {
    let mut s = attack_page(stack, Via::Rest, attacks, page).await;
    if let Some(target) = attacks.reference(&s, page, role, name) {
        attacks
            .attack(
                &mut s,
                &format!("{page}: {role} {name:?}"),
                action(&target),
                Expect::Refused,
            )
            .await;
    }
    s.close().await;
}

/// The 36 buttons of `/attack/buttons` (or those of `only`), clicked in page order.
async fn buttons(stack: &Stack, via: Via, attacks: &mut Attacks, only: Option<&[&str]>) {
    let mut s = attack_page(stack, via, attacks, "buttons").await;
    let buttons: Vec<String> = s
        .elements()
        .into_iter()
        .filter(|(_, role, _)| role == "button")
        .map(|(reference, _, _)| reference)
        .collect();
    if buttons.len() != ATTACK_BUTTONS.len() {
        attacks.problem(format!(
            "buttons: {} buttons in the snapshot, expected {}: {:?}",
            buttons.len(),
            ATTACK_BUTTONS.len(),
            s.elements()
        ));
    }
    for (id, reference) in ATTACK_BUTTONS.iter().zip(&buttons) {
        if only.is_some_and(|only| !only.contains(id)) {
            continue;
        }
        attacks
            .attack(
                &mut s,
                &format!("button #{id}"),
                click(reference),
                Expect::Refused,
            )
            .await;
    }
    s.close().await;
}

/// `/attack/js-post`'s "Show more", whose click posts.
async fn js_post(stack: &Stack, via: Via, attacks: &mut Attacks) {
    let mut s = attack_page(stack, via, attacks, "js-post").await;
    if let Some(more) = attacks.reference(&s, "js-post", "button", "Show more") {
        let answer = attacks
            .attack(&mut s, "js-post: Show more", click(&more), Expect::Refused)
            .await;
        if answer["blocked"]["class"] != "network_write" || answer["blocked"]["method"] != "POST" {
            attacks.problem(format!(
                "js-post: the refusal should be the POST held below the page: {}",
                brief(&answer)
            ));
        }
    }
    s.close().await;
}

/// What a background page's `#go` "Show more" does under read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Go {
    /// Its click is let through (the name is harmless) and the POST it causes is refused
    /// below the page: the answer is `refused`, `network_write`, `POST`.
    Posts,
    /// Its click sends nothing the browser lets the page attempt (the service worker was
    /// never registered, the socket never opened): `done` or `refused`, never committing.
    Nothing,
}

/// A background page: loading it, its `#go` "Show more", and for the beacon leaving it.
/// `at_load`: the class of what the page tried as it loaded, which the session's record
/// must show refused at the first step (the open).
async fn background(
    stack: &Stack,
    via: Via,
    attacks: &mut Attacks,
    page: &str,
    go: Go,
    at_load: Option<&str>,
) {
    attacks.loads += 1;
    let mut s = attack_page(stack, via, attacks, page).await;
    if let Some(go_ref) = attacks.reference(&s, page, "button", "Show more") {
        let label = format!("{page}: #go Show more");
        let expect = match go {
            Go::Posts => Expect::Refused,
            Go::Nothing => Expect::Quiet,
        };
        let answer = attacks.attack(&mut s, &label, click(&go_ref), expect).await;
        let held_below =
            answer["blocked"]["class"] == "network_write" && answer["blocked"]["method"] == "POST";
        if go == Go::Posts && !held_below {
            attacks.problem(format!(
                "{label}: the click should reach the page and its POST be held below it: {}",
                brief(&answer)
            ));
        }
    }
    if page == "beacon" {
        // Leaving the page sends the pagehide beacon.
        let landing = at(&stack.site, "/attack/landing");
        attacks
            .attack(
                &mut s,
                "beacon: leaving the page (its pagehide beacon)",
                navigate(&landing),
                Expect::Quiet,
            )
            .await;
    }
    // One more action collects what the page sent since the last one.
    let answer = s.act(json!({"action": "scroll"})).await;
    attacks
        .ledger_empty(&stack.site, &format!("{page}: after"), &answer)
        .await;
    let record = s.record().await;
    let held = refusals(&record);
    if let Some(class) = at_load {
        let at_open = record["blocked"].as_array().is_some_and(|all| {
            all.iter()
                .any(|b| b["class"] == class && b["step"] == 0 && b["host"] == "127.0.0.1")
        });
        if !at_open {
            attacks.problem(format!(
                "{page}: the record should show the {class} to 127.0.0.1 that the page tried as \
                 it loaded refused at the open (step 0): {}",
                record["blocked"]
            ));
        }
    }
    for (class, method, host) in &held {
        if matches!(class.as_str(), "network_write" | "web_socket")
            && (host.as_deref() != Some("127.0.0.1")
                || (class == "network_write" && method.is_none()))
        {
            attacks.problem(format!(
                "{page}: a refusal without method or host: {held:?}"
            ));
        }
    }
    s.close().await;
}

/// `/attack/iframe`: the focus moved into the frame's form (Tab), then Enter on the page.
async fn iframe(stack: &Stack, via: Via, attacks: &mut Attacks) {
    let mut s = attack_page(stack, via, attacks, "iframe").await;
    if attacks
        .prepare(&mut s, "iframe: Tab into the frame", press(None, "Tab"))
        .await
    {
        attacks
            .attack(
                &mut s,
                "iframe: Enter on the page",
                press(None, "Enter"),
                Expect::Refused,
            )
            .await;
    }
    s.close().await;
}

/// The label wrapping a hidden submit: a snapshot offers nothing to act on, so a read-only
/// task clicks it by its selector.
async fn label_submit(stack: &Stack, attacks: &mut Attacks) {
    let mut s = attack_page(stack, Via::Rest, attacks, "label-submit").await;
    if !s.elements().is_empty() {
        attacks.problem(format!(
            "label-submit: the snapshot offers {:?}; attack it through the browse API",
            s.elements()
        ));
    }
    attacks
        .attack(
            &mut s,
            "label-submit: Enter on the page",
            press(None, "Enter"),
            Expect::Quiet,
        )
        .await;
    s.close().await;
    attacks.actions += 1;
    let record = read_only_task(
        stack,
        "/attack/label-submit",
        json!([{"type": "click", "selector": "#go", "timeoutMs": 3000, "description": "Continue"}]),
    )
    .await;
    attacks
        .ledger_empty(
            &stack.site,
            "label-submit: a read-only task's click",
            &record,
        )
        .await;
    if record["state"] != "failed" || record["error"]["code"] != "blocked_action" {
        attacks.problem(format!("label-submit: the read-only task ended {record}"));
    }
    let refused = refusals(&record);
    eprintln!("  label-submit: a read-only task's click on the label: refused {refused:?}");
    if refused.is_empty() {
        attacks.problem(format!("label-submit: nothing refused: {record}"));
    }
}

/// Runs a read-only task on `path` with `steps` (resuming a `write_affordance` pause, as a
/// person lets a read-only run read a page with a form) to its end: the record.
async fn read_only_task(stack: &Stack, path: &str, steps: Value) -> Value {
    let body = json!({
        "plan": {
            "targetUrl": at(&stack.site, path),
            "readOnly": true,
            "steps": steps,
            "verification": {"method": "dom_check", "selector": "body"}
        },
        "handoff": {"waitSeconds": 60}
    });
    let (status, created) = rest(stack, reqwest::Method::POST, "/v1/tasks", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (_, record) = rest(
            stack,
            reqwest::Method::GET,
            &format!("/v1/tasks/{id}?waitSecs=2"),
            None,
        )
        .await;
        let state = record["state"].as_str().unwrap_or_default();
        if state == "paused" {
            assert_eq!(record["pause"]["reason"], "write_affordance", "{record}");
            let (status, resumed) = rest(
                stack,
                reqwest::Method::POST,
                &format!("/v1/tasks/{id}/takeover/resume"),
                None,
            )
            .await;
            assert_eq!(status, 200, "{resumed}");
        } else if !matches!(state, "queued" | "running" | "pending_approval") {
            return record;
        }
        assert!(Instant::now() < deadline, "the task never ended: {record}");
    }
}

/// `/attack/link-get`: the neutral link to a committing GET. Read-only cannot tell a GET
/// that commits from one that reads: it reaches the ledger, the documented limit.
async fn link_get(stack: &Stack, attacks: &mut Attacks) {
    let mut s = attack_page(stack, Via::Rest, attacks, "link-get").await;
    if let Some(link) = attacks.reference(&s, "link-get", "link", "Email preferences") {
        let answer = s.act(click(&link)).await;
        tokio::time::sleep(SETTLE).await;
        let ledger = stack.site.ledger();
        let limit = [LedgerEntry::new("GET!", "/attack/api/unsubscribe")];
        if ledger != limit {
            attacks.problem(format!(
                "link-get: the known limit (a committing GET behind a neutral link) should reach \
                 the ledger as {limit:?} and nothing else; it holds {ledger:?} ({})",
                brief(&answer)
            ));
        }
        if answer["committing"] != json!(false) {
            attacks.problem(format!("link-get: {}", brief(&answer)));
        }
        stack.site.reset_ledger();
    }
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_finding_is_refused_over_rest_and_nothing_reaches_the_ledger() {
    let _serial = SERIAL.lock().await;
    let stack = attack_stack().await;
    let started = Instant::now();
    let mut attacks = Attacks::default();
    let a = &mut attacks;

    chords(&stack, Via::Rest, a, CHORDS).await;
    implicit(&stack, Via::Rest, a).await;
    chat(&stack, a).await;
    one_attack(
        &stack,
        a,
        "select-submit",
        ("combobox", "Plan"),
        |r| json!({"action": "select", "ref": r, "option": "Pro"}),
    )
    .await;
    one_attack(
        &stack,
        a,
        "switch",
        ("switch", "Email notifications"),
        click,
    )
    .await;
    one_attack(
        &stack,
        a,
        "checkbox",
        ("checkbox", "Renew automatically"),
        click,
    )
    .await;
    buttons(&stack, Via::Rest, a, None).await;
    one_attack(&stack, a, "shadow", ("button", "Continue"), click).await;
    label_submit(&stack, a).await;
    one_attack(&stack, a, "div-button", ("button", "Done"), click).await;
    one_attack(&stack, a, "div-button", ("button", "Done"), |r| {
        press(Some(r), "Enter")
    })
    .await;
    one_attack(
        &stack,
        a,
        "typing-submit",
        ("textbox", "Coupon code"),
        |r| type_into(r, "SAVE10", false),
    )
    .await;
    js_post(&stack, Via::Rest, a).await;
    // Without a platform declaring it a read, even the GraphQL query is a write.
    for name in ["Load feed", "Like", "Load and like"] {
        one_attack(&stack, a, "graphql", ("button", name), click).await;
    }
    background(
        &stack,
        Via::Rest,
        a,
        "timer",
        Go::Posts,
        Some("network_write"),
    )
    .await;
    background(&stack, Via::Rest, a, "beacon", Go::Posts, None).await;
    background(&stack, Via::Rest, a, "ping", Go::Posts, None).await;
    background(&stack, Via::Rest, a, "keepalive", Go::Posts, None).await;
    background(&stack, Via::Rest, a, "worker", Go::Posts, None).await;
    // Service workers are blocked in every context: the page never gets one to post from.
    background(&stack, Via::Rest, a, "sw", Go::Nothing, None).await;
    // The socket is refused as the page opens it; #go then has nothing to send on.
    background(&stack, Via::Rest, a, "ws", Go::Nothing, Some("web_socket")).await;
    iframe(&stack, Via::Rest, a).await;
    link_get(&stack, a).await;

    attacks.report("over REST", started);
    stop(stack).await;
    assert!(
        attacks.problems.is_empty(),
        "{}",
        attacks.problems.join("\n")
    );
}

// ---- 1b. sockets from where the page-level routing does not reach ------------------------

/// The socket entries of the ledger (upgrades and messages).
fn socket_entries(stack: &Stack) -> Vec<LedgerEntry> {
    stack
        .site
        .ledger()
        .into_iter()
        .filter(|e| e.method.starts_with("WS"))
        .collect()
}

/// Whether `record` shows a refused WebSocket to the site.
fn socket_refused(record: &Value) -> bool {
    record["blocked"].as_array().is_some_and(|all| {
        all.iter()
            .any(|b| b["class"] == "web_socket" && b["host"] == "127.0.0.1")
    })
}

/// `/attack/ws-worker` (a worker's socket and a `WebSocketStream` at load, another socket
/// on "Show more") in a read-only browse session opened `via`: nothing reaches the site's
/// socket, and the record says a socket was refused.
async fn worker_sockets(stack: &Stack, via: Via, attacks: &mut Attacks) {
    let url = at(&stack.site, "/attack/ws-worker");
    let (mut s, _) = Browse::open(stack, via, &url, Some(true), None).await;
    tokio::time::sleep(SETTLE).await;
    if let Some(go) = attacks.reference(&s, "ws-worker", "button", "Show more") {
        s.act(click(&go)).await;
    }
    tokio::time::sleep(SETTLE).await;
    let answer = s.act(json!({"action": "scroll"})).await;
    let leaked = socket_entries(stack);
    if !leaked.is_empty() {
        attacks.problem(format!(
            "ws-worker over {via:?}: sockets reached the site: {leaked:?} ({})",
            brief(&answer)
        ));
    }
    let record = s.record().await;
    if !socket_refused(&record) {
        attacks.problem(format!(
            "ws-worker over {via:?}: the record should name the refused socket: {}",
            record["blocked"]
        ));
    }
    s.close().await;
    stack.site.reset_ledger();
}

/// Issue 34, finding 1: a page opens a WebSocket from a dedicated worker and with
/// `WebSocketStream` (Playwright's WebSocket routing replaces `WebSocket` in documents
/// only). In every read-only entry point (a read-only browse session over REST, one over a
/// read-only `/mcp`, a read-only task, a dry-run task) no socket reaches the site and the
/// record names the refusal. On main before the fix the socket's `like 42` reached the
/// site in each of them and nothing was recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_from_a_worker_and_a_stream_reach_no_site_in_any_read_only_entry_point() {
    let _serial = SERIAL.lock().await;
    let stack = stack_with(
        |c| {
            attack_config(c);
            c.mcp.read_only = true;
        },
        |b| b,
    )
    .await;
    let mut attacks = Attacks::default();
    worker_sockets(&stack, Via::Rest, &mut attacks).await;
    worker_sockets(&stack, Via::Mcp, &mut attacks).await;
    let steps = json!([
        {"type": "click", "selector": "#go", "timeoutMs": 3000, "description": "Show more"},
        {"type": "wait", "text": "Part two", "timeoutMs": 3000, "description": "Read on"}
    ]);
    let record = read_only_task(&stack, "/attack/ws-worker", steps.clone()).await;
    let leaked = socket_entries(&stack);
    if !leaked.is_empty() || !socket_refused(&record) {
        attacks.problem(format!(
            "ws-worker, read-only task: sockets reached the site: {leaked:?}; refusals: {}",
            record["blocked"]
        ));
    }
    stack.site.reset_ledger();
    let body = json!({
        "plan": {
            "targetUrl": at(&stack.site, "/attack/ws-worker"),
            "steps": steps,
            "verification": {"method": "dom_check", "selector": "body"}
        },
        "dryRun": true
    });
    let record = run_task(&stack.server.base_url(), body).await;
    let leaked = socket_entries(&stack);
    if !leaked.is_empty() || !socket_refused(&record) {
        attacks.problem(format!(
            "ws-worker, dry run: sockets reached the site: {leaked:?}; record: {record}"
        ));
    }
    stop(stack).await;
    assert!(
        attacks.problems.is_empty(),
        "{}",
        attacks.problems.join("\n")
    );
}

// ---- 2. the same over MCP -----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_mcp_endpoint_refuses_the_attacks_and_acts_on_no_writable_session() {
    let _serial = SERIAL.lock().await;
    let stack = stack_with(
        |c| {
            attack_config(c);
            c.mcp.read_only = true;
        },
        |b| b,
    )
    .await;
    let started = Instant::now();
    let mut attacks = Attacks::default();
    let a = &mut attacks;

    // Sessions opened through MCP, without asking for read-only: forced read-only.
    let chord_subset = [CHORDS[0], CHORDS[4], CHORDS[7]];
    chords(&stack, Via::Mcp, a, &chord_subset).await;
    implicit(&stack, Via::Mcp, a).await;
    buttons(
        &stack,
        Via::Mcp,
        a,
        Some(&[
            "like",
            "follow",
            "merge",
            "like-ja",
            "icon-only",
            "css-label",
        ]),
    )
    .await;
    js_post(&stack, Via::Mcp, a).await;
    background(
        &stack,
        Via::Mcp,
        a,
        "timer",
        Go::Posts,
        Some("network_write"),
    )
    .await;
    background(&stack, Via::Mcp, a, "ws", Go::Nothing, Some("web_socket")).await;
    iframe(&stack, Via::Mcp, a).await;

    // A session opened over REST without readOnly, acted on through the read-only MCP
    // endpoint by its id: refused whatever the action, nothing reaches the page.
    let url = at(&stack.site, "/attack/js-post");
    let (writable, opened) = Browse::open(&stack, Via::Rest, &url, None, None).await;
    assert_eq!(opened["readOnly"], json!(false), "{}", brief(&opened));
    let more = writable.find("button", "Show more").expect("Show more");
    let mut through_mcp = Browse {
        stack: &stack,
        via: Via::Mcp,
        id: writable.id.clone(),
        snapshot: writable.snapshot.clone(),
    };
    for action in [
        click(&more),
        press(Some(&more), "Enter"),
        json!({"action": "scroll"}),
        navigate(&url),
    ] {
        attacks.actions += 1;
        let answer = through_mcp.act(action.clone()).await;
        let code = &answer["callError"]["error"]["code"];
        if code != "blocked_action" {
            attacks.problem(format!(
                "MCP act {action} on a writable REST session: expected an isError blocked_action, got {}",
                brief(&answer)
            ));
        }
        attacks
            .ledger_empty(&stack.site, "MCP act on a writable REST session", &answer)
            .await;
    }
    let (is_error, snapshot) = mcp_tool(
        &stack,
        "browse_snapshot",
        json!({ "browseId": writable.id }),
    )
    .await;
    if is_error || snapshot["url"] != json!(url) {
        attacks.problem(format!("MCP snapshot of the REST session: {snapshot}"));
    }
    let record = writable.record().await;
    if record["stepResults"].as_array().map_or(0, Vec::len) != 1 {
        attacks.problem(format!(
            "only the REST open acted on the page: {}",
            record["stepResults"]
        ));
    }
    // The control: the same click over REST, which may write, does.
    let mut writable = writable;
    let answer = writable.act(click(&more)).await;
    tokio::time::sleep(SETTLE).await;
    let ledger = stack.site.ledger();
    if ledger != [LedgerEntry::new("POST", "/attack/api/track")]
        || answer["committing"] != json!(true)
    {
        attacks.problem(format!(
            "control: the REST click on the writable session should post once and answer \
             committing: the ledger holds {ledger:?}, the answer {}",
            brief(&answer)
        ));
    }
    stack.site.reset_ledger();
    writable.close().await;

    attacks.report("over MCP, read-only", started);
    stop(stack).await;
    assert!(
        attacks.problems.is_empty(),
        "{}",
        attacks.problems.join("\n")
    );
}

// ---- 3. and 4. tasks ------------------------------------------------------------------------

/// Creates a task with `body` on the runner at `base` and waits for its end (at most 90 s):
/// the record.
async fn run_task(base: &str, body: Value) -> Value {
    let (status, created) = rest_on(base, reqwest::Method::POST, "/v1/tasks", Some(body)).await;
    assert_eq!(status, 201, "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    wait_task(base, &id, |r| {
        !matches!(
            r["state"].as_str().unwrap_or_default(),
            "queued" | "running" | "pending_approval"
        )
    })
    .await
}

/// Polls the task `id` until `done` holds (at most 90 s).
async fn wait_task(base: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (_, record) =
            rest_on(base, reqwest::Method::GET, &format!("/v1/tasks/{id}"), None).await;
        if done(&record) {
            return record;
        }
        assert!(
            Instant::now() < deadline,
            "the task never got there: {record}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A read-write plan on `path` with `steps`, proved by any page (its `body`).
fn plan(site: &DemoSite, path: &str, steps: Value) -> Value {
    json!({
        "plan": {
            "targetUrl": at(site, path),
            "steps": steps,
            "verification": {"method": "dom_check", "selector": "body"}
        }
    })
}

/// The "Show more" click that posts, then a wait for a text that never appears.
fn show_more_then_fail(wait_ms: u64) -> Value {
    json!([
        {"type": "click", "selector": "#more", "timeoutMs": 3000, "description": "Show more"},
        {"type": "wait", "text": "Version 3 is here", "timeoutMs": wait_ms, "description": "Wait for the next version"}
    ])
}

/// Whether `record` tells an orchestrator it may safely run the task again.
fn says_retry(record: &Value) -> bool {
    record["state"] == "failed" && record["error"]["retryable"] == json!(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_tell_the_truth_about_the_pages_own_posts() {
    let _serial = SERIAL.lock().await;
    let stack = attack_stack().await;
    let base = stack.server.base_url();
    let site = &stack.site;
    let mut problems = Vec::new();

    // 3. A read-only task whose harmless-looking "Show more" posts: refused below the page.
    let mut body = plan(
        site,
        "/attack/js-post",
        json!([{"type": "click", "selector": "#more", "timeoutMs": 3000, "description": "Show more"}]),
    );
    body["plan"]["readOnly"] = json!(true);
    let record = run_task(&base, body).await;
    tokio::time::sleep(SETTLE).await;
    let held = refusals(&record);
    if record["state"] != "failed"
        || record["error"]["code"] != "blocked_action"
        || record["error"]["retryable"] != json!(false)
        || !held.contains(&(
            "network_write".to_owned(),
            Some("POST".to_owned()),
            Some("127.0.0.1".to_owned()),
        ))
    {
        problems.push(format!(
            "read-only js-post: expected failed, blocked_action, not retryable, a network_write \
             POST to 127.0.0.1 in `blocked`: {record}"
        ));
    }
    if !site.ledger().is_empty() {
        problems.push(format!(
            "read-only js-post: REACHED THE LEDGER {:?}",
            site.ledger()
        ));
    }
    site.reset_ledger();

    // A read-only task that only reads and leaves the beacon page (its pagehide beacon).
    let mut body = plan(
        site,
        "/attack/beacon",
        json!([
            {"type": "extract", "name": "story", "kind": "text", "selector": "h1", "description": "Read the story"},
            {"type": "navigate", "url": at(site, "/attack/landing"), "description": "Open the landing page"}
        ]),
    );
    body["plan"]["readOnly"] = json!(true);
    let record = run_task(&base, body).await;
    tokio::time::sleep(SETTLE).await;
    if !site.ledger().is_empty() {
        problems.push(format!(
            "read-only task leaving /attack/beacon: REACHED THE LEDGER {:?}; the task ended {} \
             with blocked {}",
            site.ledger(),
            record["state"],
            record["blocked"]
        ));
    }
    site.reset_ledger();

    // 4. Read-write: the page's own post makes the run uncertain when it then fails.
    let record = run_task(
        &base,
        plan(site, "/attack/js-post", show_more_then_fail(1500)),
    )
    .await;
    let click_committing = record["stepResults"][0]["committing"] == json!(true);
    if record["state"] != "uncertain"
        || record["error"]["retryable"] != json!(false)
        || !click_committing
        || says_retry(&record)
    {
        problems.push(format!(
            "read-write js-post: expected uncertain, not retryable, the click committing: {record}"
        ));
    }
    if site.ledger() != [LedgerEntry::new("POST", "/attack/api/track")] {
        problems.push(format!(
            "read-write js-post: the page's POST should have reached the site once: {:?}",
            site.ledger()
        ));
    }
    site.reset_ledger();

    // Issue 34, finding 9: a socket to the run's own site carries anything (a `like 42`,
    // the click's message): a read-write run whose page opened one (in the document, or in
    // a worker) is uncertain when a later step fails, never "failed, retryable".
    for page in ["/attack/ws", "/attack/ws-worker"] {
        let steps = json!([
            {"type": "click", "selector": "#go", "timeoutMs": 3000, "description": "Show more"},
            {"type": "wait", "text": "Version 3 is here", "timeoutMs": 1500, "description": "Wait for the next version"}
        ]);
        let record = run_task(&base, plan(site, page, steps)).await;
        let reached = site.ledger().iter().any(|e| e.method == "WS");
        if !reached || says_retry(&record) || record["state"] != "uncertain" {
            problems.push(format!(
                "read-write {page}: a message reached the site's socket ({reached}), so the \
                 run is uncertain, never failed and retryable: {record}"
            ));
        }
        site.reset_ledger();
    }

    // The one-field POST form: Enter in it sends the POST (implicit submission); whatever
    // happens after, the run is never "failed, retryable".
    for (what, then) in [
        ("and the page proves nothing", json!([])),
        (
            "then a wait fails",
            json!([{"type": "wait", "text": "Never shown", "timeoutMs": 1500, "description": "Wait"}]),
        ),
    ] {
        let mut steps = vec![
            json!({"type": "type", "selector": "#q", "value": "milk", "submit": true,
            "timeoutMs": 3000, "description": "Add a to-do"}),
        ];
        steps.extend(then.as_array().unwrap().iter().cloned());
        let mut body = plan(site, "/attack/implicit", json!(steps));
        body["plan"]["verification"] = json!({"method": "dom_check", "text": "Nothing like this"});
        let record = run_task(&base, body).await;
        let sent = site
            .ledger()
            .contains(&LedgerEntry::new("POST", "/attack/submit").with_detail("implicit"));
        if !sent {
            problems.push(format!(
                "read-write implicit {what}: the POST should have reached the site: {:?}",
                site.ledger()
            ));
        }
        if says_retry(&record)
            || record["state"] != "uncertain"
            || record["stepResults"][0]["committing"] != json!(true)
        {
            problems.push(format!(
                "read-write implicit {what}: the form was posted, so the run is uncertain with \
                 the Enter committing, never failed and retryable: {record}"
            ));
        }
        site.reset_ledger();
    }

    stop(stack).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A runner on `site` whose records are in the SQLite file `db` (shared by "restarts").
async fn runner_on(site: &DemoSite, db: &std::path::Path) -> RunningServer {
    let mut config = config(site);
    attack_config(&mut config);
    let listener = tokio::net::TcpListener::bind(config.bind).await.unwrap();
    config.public_url =
        Some(url::Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap());
    let store: Arc<dyn EngineStore> =
        Arc::new(SqliteStore::open(db, Some(StoreKey::from_bytes([7; 32])), false).unwrap());
    let demo = abr_demo::DemoStrategy::new(&site.base_url()).unwrap();
    let runner = RunnerBuilder::new(config)
        .strategy(Arc::new(demo))
        .unwrap()
        .store(store)
        .build()
        .unwrap();
    RunningServer::start(Arc::new(runner), listener).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_killed_after_the_page_posted_ends_the_run_uncertain_at_its_next_start() {
    let _serial = SERIAL.lock().await;
    let site = DemoSite::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("abr.db");
    let first = runner_on(&site, &db).await;
    let base = first.base_url();
    // The page posts on the click; the run then waits (60 s: longer than a busy machine
    // takes to start the second runner) for a text that never comes.
    let (status, created) = rest_on(
        &base,
        reqwest::Method::POST,
        "/v1/tasks",
        Some(plan(&site, "/attack/js-post", show_more_then_fail(60_000))),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let posted = LedgerEntry::new("POST", "/attack/api/track");
    // Once the click's result is saved, the run is in its 60 s wait and writes nothing more
    // to the record until it ends: a record written after the new runner read it would
    // rightly win over the restart's ending. (The page's post may leave the browser during
    // the wait: the click is then marked committing only when the wait ends, but the
    // durable commit mark, which the restart reads, is written before the post leaves.)
    let running = wait_task(&base, &id, |r| {
        r["stepResults"].as_array().is_some_and(|s| !s.is_empty()) || r["finishedAt"].is_string()
    })
    .await;
    assert_eq!(running["state"], "running", "{running}");
    // The mark is durable before the post leaves the browser: the post arrives after it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !site.ledger().contains(&posted) {
        assert!(Instant::now() < deadline, "{:?}", site.ledger());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(SETTLE).await;

    // The runner is "killed": it writes nothing more. A new one starts on the same records
    // and ends what was left unfinished.
    let second = runner_on(&site, &db).await;
    let recovered = second.runner().recover().await.unwrap();
    let (_, after) = rest_on(
        &second.base_url(),
        reqwest::Method::GET,
        &format!("/v1/tasks/{id}"),
        None,
    )
    .await;
    // Only now stop the first one's browser (a kill would have), then look again.
    first.stop_now().await;
    tokio::time::sleep(SETTLE).await;
    let (_, later) = rest_on(
        &second.base_url(),
        reqwest::Method::GET,
        &format!("/v1/tasks/{id}"),
        None,
    )
    .await;
    second.shutdown().await;
    let ledger = site.ledger();
    site.shutdown().await;

    assert_eq!(recovered, 1, "one unfinished task");
    assert_eq!(ledger, [posted], "the page posted once");
    for record in [&after, &later] {
        assert_eq!(record["state"], "uncertain", "{record}");
        assert_eq!(record["error"]["retryable"], json!(false), "{record}");
        assert!(!says_retry(record), "{record}");
    }
}

// ---- 5. a platform's GraphQL-query exception ------------------------------------------------

/// A platform whose GraphQL endpoint's queries are reads, and whose buttons of the GraphQL
/// page are harmless (so that the network rule, not the commit rule, decides).
const GRAPHQL_PLATFORM: &str = r##"
id = "graphql-site"
startUrl = "{{base}}/attack/graphql"
pacing = "off"

[policy]
allowInteractiveCapture = false
allowUnattended = true
session = { cookieDomains = ["{{base.host}}"], origins = ["{{base.origin}}"] }
network = { reads = [{ url = "{{base}}/attack/graphql", graphql = "query" }] }
guard = { harmless = ["Load feed", "Like", "Load and like"] }

[signIn]
signedIn = { selector = "#query" }
[[signIn.steps]]
type = "navigate"
url = "{{base}}/attack/graphql"
description = "Open the feed"

[compose]
post = "{{text}}"
[[compose.steps]]
type = "navigate"
url = "{{base}}/attack/chat"
description = "Open the chat"
[[compose.steps]]
type = "type"
selector = "#chat"
value = "{{post}}"
description = "Write the message"

[[submit.steps]]
type = "click"
selector = "#mutation"
description = "Like"

[verify]
toast = { selector = "#status" }
"##;

/// The GraphQL requests of the custom page: `(button label, body, whether it is a read)`.
const GRAPHQL_REQUESTS: &[(&str, &str, bool)] = &[
    (
        "Show more",
        r#"{"query": "query Feed { feed { id } }"}"#,
        true,
    ),
    ("Details", r#"{"query": "{ feed { id } }"}"#, true),
    (
        "Next",
        r#"{"query": "mutation Like { like(id: 1) { ok } }"}"#,
        false,
    ),
    (
        "Open",
        r#"[{"query": "query A { feed { id } }"}, {"query": "mutation B { like(id: 1) { ok } }"}]"#,
        false,
    ),
    // The site reads one keyword; a read exception must parse the whole document.
    (
        "Filter",
        r#"{"query": "query A { feed { id } } mutation B { like(id: 1) { ok } }"}"#,
        false,
    ),
    (
        "Sort by date",
        r#"{"operationName": "Feed", "extensions": {"persistedQuery": {"version": 1, "sha256Hash": "abc"}}}"#,
        false,
    ),
];

fn graphql_page() -> String {
    let mut buttons = String::new();
    let mut handlers = String::new();
    for (i, (label, body, _)) in GRAPHQL_REQUESTS.iter().enumerate() {
        write!(
            buttons,
            "<button type=\"button\" id=\"q{i}\">{label}</button>"
        )
        .unwrap();
        write!(
            handlers,
            "document.getElementById('q{i}').addEventListener('click', () => fetch('/attack/graphql', \
             {{method: 'POST', headers: {{'content-type': 'application/json'}}, body: {body:?}}}).catch(() => {{}}));"
        )
        .unwrap();
    }
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>GraphQL</title></head>\
         <body><main><h1>Feed</h1>{buttons}<script>{handlers}</script></main></body></html>"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_graphql_query_is_a_read_and_a_mutation_is_not() {
    let _serial = SERIAL.lock().await;
    let base = RefCell::new(String::new());
    let stack = stack_with(
        |c| {
            attack_config(c);
            let site = c.demo_site_url.as_ref().unwrap().as_str();
            *base.borrow_mut() = site.trim_end_matches('/').to_owned();
        },
        |b| {
            let vars = BTreeMap::from([("base".to_owned(), base.borrow().clone())]);
            let platform = DeclaredStrategy::parse_toml(GRAPHQL_PLATFORM, &vars).unwrap();
            b.strategy(Arc::new(platform)).unwrap()
        },
    )
    .await;
    let site = &stack.site;
    let mut problems = Vec::new();

    // The site's own page: the query is let through, the mutation and the batch are not.
    let url = at(site, "/attack/graphql");
    let (mut s, opened) =
        Browse::open(&stack, Via::Rest, &url, Some(true), Some("graphql-site")).await;
    assert_eq!(opened["readOnly"], json!(true), "{}", brief(&opened));
    for (name, read) in [
        ("Load feed", true),
        ("Like", false),
        ("Load and like", false),
    ] {
        let Some(reference) = s.find("button", name) else {
            problems.push(format!("no button {name:?}: {:?}", s.elements()));
            continue;
        };
        let answer = s.act(click(&reference)).await;
        tokio::time::sleep(SETTLE).await;
        check_graphql(
            &mut problems,
            name,
            read,
            &answer,
            &site.ledger(),
            Some("query"),
        );
        site.reset_ledger();
    }
    s.close().await;

    // Harmless buttons of another page of the site posting to the same endpoint: only
    // documents that are queries through and through pass.
    site.set_page("graphql", graphql_page()).unwrap();
    let url = at(site, "/attack/custom/graphql");
    let (mut s, _) = Browse::open(&stack, Via::Rest, &url, Some(true), Some("graphql-site")).await;
    for (label, _, read) in GRAPHQL_REQUESTS {
        let Some(reference) = s.find("button", label) else {
            problems.push(format!("no button {label:?}: {:?}", s.elements()));
            continue;
        };
        let answer = s.act(click(&reference)).await;
        tokio::time::sleep(SETTLE).await;
        check_graphql(&mut problems, label, *read, &answer, &site.ledger(), None);
        site.reset_ledger();
    }
    s.close().await;

    stop(stack).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A read reaches the site as one POST (with `detail`, when given) and answers `done`; a
/// write never reaches it and is refused below the page.
fn check_graphql(
    problems: &mut Vec<String>,
    name: &str,
    read: bool,
    answer: &Value,
    ledger: &[LedgerEntry],
    detail: Option<&str>,
) {
    let entry = match detail {
        Some(detail) => LedgerEntry::new("POST", "/attack/graphql").with_detail(detail),
        None => LedgerEntry::new("POST", "/attack/graphql"),
    };
    let reached =
        ledger.len() == 1 && ledger[0].method == "POST" && ledger[0].path == "/attack/graphql";
    if read {
        if !(reached && (detail.is_none() || ledger[0] == entry))
            || answer["outcome"] != "done"
            || answer["committing"] != json!(false)
        {
            problems.push(format!(
                "{name}: a declared read should reach the site as {entry:?} and answer done: \
                 the ledger holds {ledger:?}, the answer {}",
                brief(answer)
            ));
        }
    } else {
        let judged = judge(answer, Expect::Refused);
        let below = answer["blocked"]["class"] == "network_write";
        if !ledger.is_empty() || judged.is_err() || !below {
            problems.push(format!(
                "{name}: a GraphQL write must be refused below the page and never reach the \
                 site: the ledger holds {ledger:?}, the answer {} ({judged:?})",
                brief(answer)
            ));
        }
    }
}

// ---- 6. the harmless corpus --------------------------------------------------------------

/// The accessible name of a corpus control, as its description quotes it.
fn corpus_name(id: &str, what: &str) -> String {
    match id {
        "search-q" => "Search products".to_owned(),
        "find-q" => "Find on this page".to_owned(),
        "close" => "Close".to_owned(),
        _ => what.split('"').nth(1).unwrap_or(what).to_owned(),
    }
}

/// The reference of corpus control `index` on the session's page: by its name, the n-th of
/// that name in page order.
fn corpus_reference(s: &Browse<'_>, index: usize) -> Option<String> {
    let control = &HARMLESS_CORPUS[index];
    let name = corpus_name(control.id, control.what);
    let before = HARMLESS_CORPUS[..index]
        .iter()
        .filter(|c| c.frame.is_none() && corpus_name(c.id, c.what) == name)
        .count();
    s.elements()
        .into_iter()
        .filter(|(_, _, n)| *n == name)
        .nth(before)
        .map(|(reference, _, _)| reference)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_harmless_corpus_is_refused_at_most_five_percent_under_read_only() {
    let _serial = SERIAL.lock().await;
    let stack = attack_stack().await;
    let site = &stack.site;
    let started = Instant::now();
    let url = at(site, "/harmless");
    let (mut s, _) = Browse::open(&stack, Via::Rest, &url, Some(true), None).await;
    site.reset_ledger();
    site.reset_harmless();
    let mut problems = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    for (index, control) in HARMLESS_CORPUS.iter().enumerate() {
        let id = control.id;
        let reload = s.act(navigate(&url)).await;
        if reload["outcome"] != "done" {
            problems.push(format!("{id}: reloading /harmless: {}", brief(&reload)));
            continue;
        }
        if let Some(first) = control.needs {
            let first_index = HARMLESS_CORPUS.iter().position(|c| c.id == first).unwrap();
            let opened = match corpus_reference(&s, first_index) {
                Some(reference) => s.act(click(&reference)).await,
                None => json!({"missing": first}),
            };
            if opened["outcome"] != "done" {
                problems.push(format!("{id} needs {first}: {}", brief(&opened)));
                continue;
            }
        }
        let action = match (control.frame, control.action) {
            // Inside its iframe: `autofocus` put the focus there; Enter on the page.
            (Some(_), HarmlessAction::PressPage) | (None, HarmlessAction::PressPage) => {
                press(None, "Enter")
            }
            (_, action) => {
                let Some(reference) = corpus_reference(&s, index) else {
                    problems.push(format!(
                        "{id}: no element named {:?} in the snapshot: {:?}",
                        corpus_name(id, control.what),
                        s.elements()
                    ));
                    continue;
                };
                match action {
                    HarmlessAction::Click => click(&reference),
                    HarmlessAction::Enter => type_into(&reference, "oak", true),
                    HarmlessAction::Select(option) => {
                        json!({"action": "select", "ref": reference, "option": option})
                    }
                    HarmlessAction::PressPage => unreachable!("handled above"),
                }
            }
        };
        let answer = s.act(action).await;
        match answer["outcome"].as_str().unwrap_or_default() {
            "refused" => {
                let blocked = &answer["blocked"];
                refused.push(format!(
                    "{id} ({}: refused as {}{}{})",
                    control.what,
                    blocked["class"].as_str().unwrap_or("?"),
                    blocked["verb"]
                        .as_str()
                        .map(|v| format!(" {v:?}"))
                        .unwrap_or_default(),
                    blocked["method"]
                        .as_str()
                        .map(|m| format!(" {m}"))
                        .unwrap_or_default(),
                ));
            }
            "done" | "paused" => {
                let reached = wait(
                    || site.harmless_seen().iter().any(|seen| seen == id),
                    Duration::from_secs(5),
                )
                .await;
                if !reached {
                    problems.push(format!(
                        "{id}: answered done but never reached the page: {}",
                        brief(&answer)
                    ));
                }
            }
            _ => problems.push(format!("{id}: {}", brief(&answer))),
        }
        if answer["committing"] != json!(false) {
            problems.push(format!("{id}: answered committing: {}", brief(&answer)));
        }
        let ledger = site.ledger();
        if !ledger.is_empty() {
            problems.push(format!("{id}: REACHED THE LEDGER {ledger:?}"));
            site.reset_ledger();
        }
    }
    tokio::time::sleep(SETTLE).await;
    if !site.ledger().is_empty() {
        problems.push(format!("the corpus REACHED THE LEDGER {:?}", site.ledger()));
    }
    s.close().await;
    let total = HARMLESS_CORPUS.len();
    let pct = refused.len() as f64 * 100.0 / total as f64;
    eprintln!(
        "harmless corpus: {} of {total} refused under read-only ({pct:.1}%): {refused:?} in {:?}",
        refused.len(),
        started.elapsed()
    );
    stop(stack).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        refused.len() * 20 <= total,
        "more than 5% of the harmless corpus refused: {} of {total}: {refused:#?}",
        refused.len()
    );
}

/// Polls `done` every 20 ms until it holds or `timeout` passed.
async fn wait(mut done: impl FnMut() -> bool, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---- 7. the property: generated pages and actions -------------------------------------------

/// Labels of generated controls: harmless, committing and neutral ones.
const LABELS: &[&str] = &[
    "Show more",
    "Next",
    "Search",
    "Filter",
    "Sort by date",
    "Open",
    "Close",
    "Cancel",
    "Details",
    "Load more",
    "Weiter",
    "Suivant",
    "Abbrechen",
    "Pay",
    "Post",
    "Send",
    "Delete",
    "Like",
    "Follow",
    "Subscribe",
    "Save",
    "Confirm",
    "Gefällt mir",
    "Submit",
    "Buy now",
    "Continue",
    "Done",
    "OK",
    "Go",
    "Blue",
    "Item 3",
    "→",
    "",
];

/// Keys and chords the generated actions press.
const KEYS: &[&str] = &[
    "Enter",
    "Shift+Enter",
    "Control+Enter",
    "Enter+Shift",
    "Space",
    "Space+Shift",
    "Tab",
    "Shift+Tab",
    "NumpadEnter",
    "Meta+Enter",
    "Alt+Enter",
    "Control+Shift+Enter",
    "a",
    "Escape",
];

/// How a generated handler writes (`W(id, how, element)` in the page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Fetch(&'static str),
    Xhr,
    Beacon,
    Keepalive,
    /// `form.requestSubmit()` of the element's POST form (a fetch POST outside one).
    Submit,
    /// `form.submit()`, which fires no submit event.
    PlainSubmit,
}

impl Write {
    fn how(self) -> String {
        match self {
            Self::Fetch(method) => format!("fetch-{method}"),
            Self::Xhr => "xhr".to_owned(),
            Self::Beacon => "beacon".to_owned(),
            Self::Keepalive => "keepalive".to_owned(),
            Self::Submit => "submit".to_owned(),
            Self::PlainSubmit => "plain-submit".to_owned(),
        }
    }
}

/// When a generated text field writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldEvent {
    EnterKey,
    AnyKey,
    Input,
    Change,
    Blur,
}

/// One part of a generated page.
#[derive(Debug, Clone)]
enum Part {
    /// A POST form: text fields and, maybe, a submit button with a label.
    PostForm {
        fields: usize,
        submit: Option<&'static str>,
    },
    /// A GET search form with a button: a navigation.
    GetForm { label: &'static str },
    /// A button whose click writes, in a POST form or not.
    Button {
        label: &'static str,
        write: Write,
        in_form: bool,
    },
    /// A `div role=button` whose click, Enter or Space writes.
    DivButton { label: &'static str, write: Write },
    /// A link to a plain page, maybe with a `ping`.
    Link { label: &'static str, ping: bool },
    /// A checkbox whose change writes.
    Checkbox {
        label: &'static str,
        write: Write,
        in_form: bool,
    },
    /// A `<select>` whose change writes.
    Select { write: Write, in_form: bool },
    /// A `role=switch` that saves on click.
    Switch { label: &'static str, write: Write },
    /// A text field that writes on a key, on input, on change or when it loses the focus.
    Field {
        on: FieldEvent,
        write: Write,
        in_form: bool,
    },
    /// A contenteditable box that sends on Enter.
    Editable { write: Write },
    /// A write from a timer after the load.
    Timer { ms: u16, write: Write },
    /// A write when the page is left (`pagehide`, `visibilitychange`, `beforeunload`).
    Leave { event: &'static str, write: Write },
}

/// A generated page: its parts, the part whose control has `autofocus`, and a focus move
/// by script (to a part's control, after some milliseconds).
#[derive(Debug, Clone)]
struct GenPage {
    parts: Vec<Part>,
    autofocus: Option<prop::sample::Index>,
    focus_move: Option<(prop::sample::Index, u16)>,
}

/// One generated action, its element chosen among the snapshot's when it is played.
#[derive(Debug, Clone)]
enum GenAct {
    Click(prop::sample::Index),
    Type(prop::sample::Index, bool),
    Press(Option<prop::sample::Index>, &'static str),
    Select(prop::sample::Index, prop::sample::Index),
}

/// How often a generated part writes as the page is left.
const LEAVE_WEIGHT: u32 = 2;

const PAGE_SCRIPT: &str = r"<script>
function W(id, how, el) {
  const url = '/attack/api/gen';
  const body = JSON.stringify({ id });
  const form = el && el.closest ? el.closest('form') : null;
  if (how === 'submit' && form) { form.requestSubmit(); return; }
  if (how === 'plain-submit' && form) { form.submit(); return; }
  if (how === 'beacon') { navigator.sendBeacon(url, body); return; }
  if (how === 'xhr') { const x = new XMLHttpRequest(); x.open('POST', url); x.send(body); return; }
  const method = how.startsWith('fetch-') ? how.slice(6) : 'POST';
  fetch(url, { method, body, keepalive: how === 'keepalive',
    headers: { 'content-type': 'application/json' } }).catch(() => {});
}
</script>";

impl GenPage {
    /// The id of each part's focusable control, where it has one.
    fn focusables(&self) -> Vec<String> {
        self.parts
            .iter()
            .enumerate()
            .filter_map(|(n, part)| match part {
                Part::PostForm {
                    fields: 0,
                    submit: None,
                } => None,
                Part::PostForm { fields: 0, .. } => Some(format!("g{n}-s")),
                Part::PostForm { .. } => Some(format!("g{n}-f0")),
                Part::GetForm { .. } => Some(format!("g{n}-q")),
                Part::Timer { .. } | Part::Leave { .. } => None,
                _ => Some(format!("g{n}")),
            })
            .collect()
    }

    fn markup(&self) -> String {
        let focusables = self.focusables();
        let pick = |i: &prop::sample::Index| {
            (!focusables.is_empty()).then(|| focusables[i.index(focusables.len())].clone())
        };
        let autofocus = self.autofocus.as_ref().and_then(pick);
        let af = |id: &str| {
            if autofocus.as_deref() == Some(id) {
                " autofocus"
            } else {
                ""
            }
        };
        let mut body = String::new();
        let mut script = String::new();
        for (n, part) in self.parts.iter().enumerate() {
            let id = format!("g{n}");
            let form = |inner: String, in_form: bool| {
                if in_form {
                    format!(
                        "<form method=\"post\" action=\"/attack/submit\"><input type=\"hidden\" \
                         name=\"form\" value=\"{id}\">{inner}</form>"
                    )
                } else {
                    format!("<div>{inner}</div>")
                }
            };
            let call = |write: Write| format!("W('{id}', '{}', this)", write.how());
            let html = match part {
                Part::PostForm { fields, submit } => {
                    let mut inner = String::new();
                    for f in 0..*fields {
                        write!(
                            inner,
                            "<label>Field {n}.{f} <input id=\"{id}-f{f}\" name=\"f{f}\"{}></label>",
                            af(&format!("{id}-f{f}"))
                        )
                        .unwrap();
                    }
                    if let Some(label) = submit {
                        write!(
                            inner,
                            "<button id=\"{id}-s\"{}>{label}</button>",
                            af(&format!("{id}-s"))
                        )
                        .unwrap();
                    }
                    form(inner, true)
                }
                Part::GetForm { label } => format!(
                    "<form method=\"get\" action=\"/harmless/results\" role=\"search\"><input \
                     type=\"search\" id=\"{id}-q\" name=\"q\" aria-label=\"Find {n}\"{}> <button>{label}</button></form>",
                    af(&format!("{id}-q"))
                ),
                Part::Button {
                    label,
                    write,
                    in_form,
                } => form(
                    format!(
                        "<button type=\"button\" id=\"{id}\" onclick=\"{}\"{}>{label}</button>",
                        call(*write),
                        af(&id)
                    ),
                    *in_form,
                ),
                Part::DivButton { label, write } => format!(
                    "<div role=\"button\" tabindex=\"0\" id=\"{id}\" onclick=\"{c}\" \
                     onkeydown=\"if (event.key === 'Enter' || event.key === ' ') {c}\"{}>{label}</div>",
                    af(&id),
                    c = call(*write)
                ),
                Part::Link { label, ping } => format!(
                    "<p><a id=\"{id}\" href=\"/attack/landing\"{}{}>{}</a></p>",
                    if *ping {
                        " ping=\"/attack/api/ping\""
                    } else {
                        ""
                    },
                    af(&id),
                    if label.is_empty() { "Read on" } else { label }
                ),
                Part::Checkbox {
                    label,
                    write,
                    in_form,
                } => form(
                    format!(
                        "<label><input type=\"checkbox\" id=\"{id}\" onchange=\"{}\"{}> {label} {n}</label>",
                        call(*write),
                        af(&id)
                    ),
                    *in_form,
                ),
                Part::Select { write, in_form } => form(
                    format!(
                        "<label>Choice {n} <select id=\"{id}\" name=\"s\" onchange=\"{}\"{}><option>One</option>\
                         <option>Two</option><option>Three</option></select></label>",
                        call(*write),
                        af(&id)
                    ),
                    *in_form,
                ),
                Part::Switch { label, write } => format!(
                    "<button type=\"button\" role=\"switch\" aria-checked=\"false\" id=\"{id}\" \
                     onclick=\"this.setAttribute('aria-checked', String(this.getAttribute('aria-checked') !== 'true')); {}\"{}>{label} {n}</button>",
                    call(*write),
                    af(&id)
                ),
                Part::Field { on, write, in_form } => {
                    let handler = match on {
                        FieldEvent::EnterKey => {
                            format!("onkeydown=\"if (event.key === 'Enter') {}\"", call(*write))
                        }
                        FieldEvent::AnyKey => format!("onkeydown=\"{}\"", call(*write)),
                        FieldEvent::Input => format!("oninput=\"{}\"", call(*write)),
                        FieldEvent::Change => format!("onchange=\"{}\"", call(*write)),
                        FieldEvent::Blur => format!("onblur=\"{}\"", call(*write)),
                    };
                    form(
                        format!(
                            "<label>Text {n} <input id=\"{id}\" name=\"t\" {handler}{}></label>",
                            af(&id)
                        ),
                        *in_form,
                    )
                }
                Part::Editable { write } => format!(
                    "<div id=\"{id}\" contenteditable=\"true\" role=\"textbox\" aria-label=\"Message {n}\" \
                     onkeydown=\"if (event.key === 'Enter' &amp;&amp; !event.shiftKey) {{ event.preventDefault(); {} }}\"{}></div>",
                    call(*write),
                    af(&id)
                ),
                Part::Timer { ms, write } => {
                    writeln!(
                        script,
                        "setTimeout(() => W('{id}-timer', '{}', null), {ms});",
                        write.how()
                    )
                    .unwrap();
                    String::new()
                }
                Part::Leave { event, write } => {
                    writeln!(
                        script,
                        "addEventListener('{event}', () => W('{id}-leave', '{}', null));",
                        write.how()
                    )
                    .unwrap();
                    String::new()
                }
            };
            body.push_str(&html);
        }
        if let Some((target, ms)) = &self.focus_move
            && let Some(target) = pick(target)
        {
            writeln!(
                script,
                "setTimeout(() => document.getElementById('{target}').focus(), {ms});"
            )
            .unwrap();
        }
        format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Generated</title>\
             {PAGE_SCRIPT}</head><body><main><h1>Generated</h1>{body}</main><script>{script}</script></body></html>"
        )
    }
}

fn write_strategy() -> impl Strategy<Value = Write> {
    prop_oneof![
        Just(Write::Fetch("POST")),
        Just(Write::Fetch("PUT")),
        Just(Write::Fetch("PATCH")),
        Just(Write::Fetch("DELETE")),
        Just(Write::Xhr),
        Just(Write::Beacon),
        Just(Write::Keepalive),
        Just(Write::Submit),
        Just(Write::PlainSubmit),
    ]
}

fn label_strategy() -> impl Strategy<Value = &'static str> {
    prop::sample::select(LABELS)
}

fn part_strategy() -> impl Strategy<Value = Part> {
    let field_event = prop_oneof![
        Just(FieldEvent::EnterKey),
        Just(FieldEvent::AnyKey),
        Just(FieldEvent::Input),
        Just(FieldEvent::Change),
        Just(FieldEvent::Blur),
    ];
    let leave = prop::sample::select(&["pagehide", "visibilitychange", "beforeunload"][..]);
    prop_oneof![
        1 => (0usize..3, prop::option::of(label_strategy()))
            .prop_map(|(fields, submit)| Part::PostForm { fields, submit }),
        1 => label_strategy().prop_map(|label| Part::GetForm { label }),
        4 => (label_strategy(), write_strategy(), any::<bool>())
            .prop_map(|(label, write, in_form)| Part::Button { label, write, in_form }),
        2 => (label_strategy(), write_strategy())
            .prop_map(|(label, write)| Part::DivButton { label, write }),
        2 => (label_strategy(), any::<bool>()).prop_map(|(label, ping)| Part::Link { label, ping }),
        2 => (label_strategy(), write_strategy(), any::<bool>())
            .prop_map(|(label, write, in_form)| Part::Checkbox { label, write, in_form }),
        2 => (write_strategy(), any::<bool>())
            .prop_map(|(write, in_form)| Part::Select { write, in_form }),
        2 => (label_strategy(), write_strategy())
            .prop_map(|(label, write)| Part::Switch { label, write }),
        3 => (field_event, write_strategy(), any::<bool>())
            .prop_map(|(on, write, in_form)| Part::Field { on, write, in_form }),
        2 => write_strategy().prop_map(|write| Part::Editable { write }),
        1 => (0u16..250, write_strategy()).prop_map(|(ms, write)| Part::Timer { ms, write }),
        LEAVE_WEIGHT => (leave, write_strategy()).prop_map(|(event, write)| Part::Leave { event, write }),
    ]
}

fn act_strategy() -> impl Strategy<Value = GenAct> {
    prop_oneof![
        3 => any::<prop::sample::Index>().prop_map(GenAct::Click),
        2 => (any::<prop::sample::Index>(), any::<bool>()).prop_map(|(i, submit)| GenAct::Type(i, submit)),
        3 => (prop::option::of(any::<prop::sample::Index>()), prop::sample::select(KEYS))
            .prop_map(|(i, key)| GenAct::Press(i, key)),
        1 => (any::<prop::sample::Index>(), any::<prop::sample::Index>())
            .prop_map(|(i, o)| GenAct::Select(i, o)),
    ]
}

fn case_strategy() -> impl Strategy<Value = (GenPage, Vec<GenAct>)> {
    let page = (
        prop::collection::vec(part_strategy(), 1..7),
        prop::option::of(any::<prop::sample::Index>()),
        prop::option::of((any::<prop::sample::Index>(), 0u16..300)),
    )
        .prop_map(|(parts, autofocus, focus_move)| GenPage {
            parts,
            autofocus,
            focus_move,
        });
    (page, prop::collection::vec(act_strategy(), 2..7))
}

/// The action `act` on the session's page now, or `None` when the page offers nothing it
/// applies to.
fn resolve(s: &Browse<'_>, act: &GenAct) -> Option<Value> {
    let elements: Vec<Value> = s.snapshot["elements"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let reference = |e: &Value| e["ref"].as_str().unwrap_or_default().to_owned();
    let of_role = |roles: &[&str]| -> Vec<Value> {
        elements
            .iter()
            .filter(|e| roles.contains(&e["role"].as_str().unwrap_or_default()))
            .cloned()
            .collect()
    };
    match act {
        GenAct::Click(i) => {
            (!elements.is_empty()).then(|| click(&reference(&elements[i.index(elements.len())])))
        }
        GenAct::Type(i, submit) => {
            let fields = of_role(&["textbox", "searchbox"]);
            (!fields.is_empty())
                .then(|| type_into(&reference(&fields[i.index(fields.len())]), "ok", *submit))
        }
        GenAct::Press(None, key) => Some(press(None, key)),
        GenAct::Press(Some(i), key) => (!elements.is_empty())
            .then(|| press(Some(&reference(&elements[i.index(elements.len())])), key)),
        GenAct::Select(i, o) => {
            let lists = of_role(&["combobox", "listbox"]);
            if lists.is_empty() {
                return None;
            }
            let list = &lists[i.index(lists.len())];
            let options: Vec<String> = list["options"]
                .as_array()
                .map(|o| {
                    o.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let option = if options.is_empty() {
                "Two".to_owned()
            } else {
                options[o.index(options.len())].clone()
            };
            Some(json!({"action": "select", "ref": reference(list), "option": option}))
        }
    }
}

/// What one generated case did.
#[derive(Debug, Default)]
struct CaseRun {
    /// What reached the site (also after the session closed).
    ledger: Vec<LedgerEntry>,
    /// Actions played.
    actions: usize,
    /// Answers `refused`.
    refused: usize,
    /// Requests the session's record says were refused below the page.
    held: usize,
    /// Answers that broke the read-only contract (committing, or not an answer).
    bad: Vec<String>,
}

static CASE: AtomicUsize = AtomicUsize::new(0);

/// Serves `page` and plays `acts` on it in a fresh browse session (read-only or not).
async fn run_case(stack: &Stack, page: &GenPage, acts: &[GenAct], read_only: bool) -> CaseRun {
    let site = &stack.site;
    let name = format!("gen-{}", CASE.fetch_add(1, Ordering::SeqCst));
    site.set_page(&name, page.markup()).unwrap();
    site.reset_ledger();
    let url = at(site, &format!("/attack/custom/{name}"));
    let (mut s, opened) = Browse::open(stack, Via::Rest, &url, Some(read_only), None).await;
    let mut run = CaseRun::default();
    let mut answers = vec![opened];
    for act in acts {
        let Some(action) = resolve(&s, act) else {
            continue;
        };
        run.actions += 1;
        let answer = s.act(action.clone()).await;
        if answer["outcome"] == "refused" {
            run.refused += 1;
        }
        // A reference the page dropped since the snapshot is a typed 409, not an answer.
        let stale =
            answer["status"] == 409 && answer["callError"]["error"]["code"] == "ref_not_found";
        if !stale && serde_json::from_value::<ActResponse>(answer.clone()).is_err() {
            run.bad
                .push(format!("{action}: not an answer: {}", brief(&answer)));
        }
        answers.push(answer);
    }
    // Timers fire within 250 ms of the load.
    tokio::time::sleep(Duration::from_millis(400)).await;
    // One more read collects what the page sent since the last action.
    s.act(json!({"action": "scroll"})).await;
    let record = s.record().await;
    run.held = refusals(&record)
        .iter()
        .filter(|(class, _, _)| class == "network_write" || class == "web_socket")
        .count();
    s.close().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    if read_only {
        for answer in &answers {
            if answer["committing"] == json!(true) {
                run.bad
                    .push(format!("answered committing: {}", brief(answer)));
            }
            if answer["outcome"] == "refused"
                && let Err(e) = judge(answer, Expect::Refused)
            {
                run.bad.push(e);
            }
        }
    }
    run.ledger = site.ledger();
    site.reset_ledger();
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_pages_and_actions_never_write_under_read_only() {
    let _serial = SERIAL.lock().await;
    let stack = attack_stack().await;
    let started = Instant::now();
    let handle = tokio::runtime::Handle::current();
    let config = ProptestConfig {
        cases: 32,
        failure_persistence: None,
        max_shrink_iters: 16,
        ..ProptestConfig::default()
    };

    // The control: generated cases (the first ones of the same seed) played read-write do
    // write, so the property below is not vacuous.
    let mut control = TestRunner::new_with_rng(
        config.clone(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = case_strategy();
    let (mut wrote, mut by_actions, mut writes) = (0, 0, 0);
    const CONTROL_CASES: usize = 8;
    for _ in 0..CONTROL_CASES {
        let (page, acts) = strategy.new_tree(&mut control).unwrap().current();
        let run = run_case(&stack, &page, &acts, false).await;
        writes += run.ledger.len();
        if !run.ledger.is_empty() {
            wrote += 1;
        }
        let from_actions = run.ledger.iter().any(|e| {
            !e.detail
                .as_deref()
                .is_some_and(|d| d.ends_with("-timer") || d.ends_with("-leave"))
        });
        if from_actions {
            by_actions += 1;
        }
    }
    eprintln!(
        "property control (read-write): {wrote} of {CONTROL_CASES} generated cases wrote \
         ({writes} writes; {by_actions} cases with a write caused by an action)"
    );

    // The property.
    let totals = std::sync::Mutex::new((0usize, 0usize, 0usize, 0usize));
    let mut runner = TestRunner::new_with_rng(
        config.clone(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let outcome = runner.run(&strategy, |(page, acts)| {
        let run =
            tokio::task::block_in_place(|| handle.block_on(run_case(&stack, &page, &acts, true)));
        {
            let mut t = totals.lock().unwrap();
            t.0 += 1;
            t.1 += run.actions;
            t.2 += run.refused;
            t.3 += run.held;
        }
        if !run.ledger.is_empty() || !run.bad.is_empty() {
            return Err(TestCaseError::fail(format!(
                "read-only, the ledger holds {:?}; answers: {:?}\npage: {}",
                run.ledger,
                run.bad,
                page.markup()
            )));
        }
        Ok(())
    });
    let (cases, actions, refused, held) = *totals.lock().unwrap();
    eprintln!(
        "property (read-only): {} cases, {cases} runs (with any shrinking), {actions} actions, \
         {refused} refused, {held} requests held below the page; outcome: {}; in {:?}",
        config.cases,
        if outcome.is_ok() {
            "the ledger stayed empty"
        } else {
            "FAILED"
        },
        started.elapsed()
    );
    stop(stack).await;
    assert!(
        wrote * 2 >= CONTROL_CASES && by_actions > 0,
        "the generator should make pages that write without the guard: {wrote} of \
         {CONTROL_CASES} wrote, {by_actions} by an action"
    );
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
