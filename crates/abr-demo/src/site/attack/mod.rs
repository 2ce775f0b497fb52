//! The attack pages: ordinary pages (not hostile ones) whose actions write, each write a real
//! non-safe request that the site's write ledger records, so that a test of ABR's read-only
//! promise ("the ledger stays empty") is never vacuous. Every page is `no-store`; ids are
//! stable. A form's hidden `form` field names its page, and the form's ledger entry (`POST
//! /attack/submit`) carries it as `detail`; a script's JSON body `{"id": ...}` does the same
//! for `POST /attack/api/{what}`.
//!
//! # HTTP contract: the pages ([`ATTACK_PAGES`])
//! - `GET /attack/chord`: a POST form (`form=chord`) with the text field `#field` and the
//!   submit button `#pay` "Pay", which has `autofocus`. Any key chord that presses Enter on
//!   `#pay` or `#field`, or Space on `#pay` (`Enter+Shift`, `Shift+Enter`, `Space+Shift`),
//!   submits it; `Space+Shift` in `#field` only types a space.
//! - `GET /attack/implicit`: a POST form (`form=implicit`) with exactly one text field `#q`
//!   "New to-do" and no submit button: Enter in `#q` submits it (implicit submission).
//! - `GET /attack/chat`: the contenteditable chat box `#chat` (`role=textbox`), outside any
//!   form; Enter (without Shift) sends `POST /attack/api/message` (`id: chat`) and appends
//!   the text to `#log`.
//! - `GET /attack/select-submit`: `<select id=plan onchange="this.form.submit()">` (Free,
//!   Pro, Team) in a POST form (`form=select-submit`): choosing another plan submits.
//! - `GET /attack/switch`: `<button role=switch id=notify aria-checked>` "Email
//!   notifications"; a click flips it and saves at once: `POST /attack/api/settings`
//!   (`id: notify`), then `#status` says "Saved".
//! - `GET /attack/checkbox`: the checkbox `#auto` "Renew automatically" in a POST form
//!   (`form=checkbox`) whose `change` calls `form.requestSubmit()`.
//! - `GET /attack/buttons`: the buttons of [`ATTACK_BUTTONS`] in `#actions`, outside any
//!   form, each `type=button`; a click sends `POST /attack/api/action` with `id` = the
//!   button's id (the ledger's `detail`), then sets `data-done` on it. Among them: Like,
//!   Follow, Vote, Merge, Authorize…, "Like" in 12 languages, `#icon-only` (an inline SVG,
//!   `aria-hidden`: no name at all) and `#css-label` (empty; its label "Like" is drawn by
//!   `::before { content: "Like" }`).
//! - `GET /attack/shadow`: a POST form (`form=shadow`) holding the custom element
//!   `<step-actions id=step>`, whose open shadow root has `<button type=button id=continue>`
//!   "Continue"; its click calls `this.closest('form').requestSubmit()` on the host's form.
//! - `GET /attack/label-submit`: a POST form (`form=label-submit`) with `<label id=go>`
//!   "Continue" wrapping a `hidden` `<input type=submit>`: clicking the label submits.
//! - `GET /attack/div-button`: `<div role=button id=save tabindex=0>` "Done": a click (or
//!   Enter or Space on it) sends `POST /attack/api/save` (`id: save`).
//! - `GET /attack/typing-submit`: a POST form (`form=typing-submit`) whose only field `#code`
//!   "Coupon code" calls `form.requestSubmit()` on its first `input` event.
//! - `GET /attack/js-post`: the button `#more` "Show more"; a click sends
//!   `fetch('/attack/api/track', {method: 'POST'})` (no body, no detail), then shows `#extra`.
//! - `GET /attack/graphql`: `#query` "Load feed" sends `{"query": "query Feed { feed { id }
//!   }"}` to `POST /attack/graphql`, `#mutation` "Like" sends `mutation Like { like(id: 1) {
//!   ok } }`, `#batch` "Load and like" sends both in an array; `#status` shows the answer.
//! - `GET /attack/link-get`: the neutral link `#unsubscribe` "Email preferences" to
//!   `GET /attack/api/unsubscribe`, a GET that commits (see below).
//!
//! # HTTP contract: background writes
//! Each of these pages has a harmless-looking `#go` "Show more" (which also shows `#extra`)
//! and `#status`; the write is one a page makes on its own, not in answer to a form.
//! - `GET /attack/timer`: `POST /attack/api/timer` from a `setTimeout`, 150 ms after load
//!   (`id: load`) and 50 ms after a click on `#go` (`id: click`).
//! - `GET /attack/beacon`: `navigator.sendBeacon('/attack/api/beacon', ...)` on a click on
//!   `#go` (`id: click`) and on `pagehide` (`id: pagehide`; leave the page to send it).
//! - `GET /attack/ping`: the link `#pinged` "Read the full story" to `/attack/landing` with
//!   `ping="/attack/api/ping"` (the browser POSTs `PING` there when it is followed); `#go`
//!   follows it by script (`pinged.click()`).
//! - `GET /attack/keepalive`: a click on `#go` sends `fetch('/attack/api/keepalive',
//!   {method: 'POST', keepalive: true})` (`id: click`).
//! - `GET /attack/worker`: starts the dedicated worker `/attack/worker.js` and the
//!   SharedWorker `/attack/shared-worker.js`; a click on `#go` messages both, and each sends
//!   `POST /attack/api/worker` resp. `POST /attack/api/shared-worker` (`id: message`).
//!   `#status` shows what each answered (`worker: sent 200`, `shared: sent 200`).
//! - `GET /attack/sw`: registers the service worker `/attack/sw.js` (scope `/attack/`). The
//!   worker sends `POST /attack/api/sw` on `install` and `activate` (`id: install`,
//!   `id: activate`) and when the page messages it (a click on `#go`, `id: message`).
//!   `#sw-status` says what registration did: `registering`, `active`, `blocked`
//!   (`register()` answered nothing, as it does under Playwright's
//!   `serviceWorkers: 'block'`), `unavailable` or `failed: <error name>`.
//! - `GET /attack/ws`: opens `new WebSocket('ws://' + location.host + '/attack/ws')` on load
//!   and sends `open` once open; a click on `#go` sends `click`. `#ws-status` says `open`,
//!   `closed` or `error`, or what the server answered (`server: received`).
//! - `GET /attack/ws-worker`: the socket from where Playwright's WebSocket routing does not
//!   reach: on load a dedicated worker (from a `blob:` URL) opens
//!   `ws://<host>/attack/ws` and sends `like 42`, and the page opens a `WebSocketStream` to
//!   it and writes `like 42`; a click on `#go` has the worker open another and send `click`.
//!   `#ws-status` says what the worker saw (`worker: open`, `worker: error`).
//! - `GET /attack/iframe`: two same-origin iframes. `#frame` holds `/attack/frame-form`, a
//!   POST form (`form=iframe`) whose submit button `#frame-more` is named "Show more":
//!   focus it inside the frame and press Enter on the page to submit. `#frame-harmless`
//!   holds `/attack/frame-harmless`, whose `#frame-show` "Show more" is harmless: its click
//!   records `attack-frame-show` with `GET /api/harmless/seen` and shows `#extra`.
//! - `GET /attack/landing`: a plain page, `#content` "Landing" (where `#pinged` leads).
//!
//! # HTTP contract: the endpoints the pages write to
//! - `POST /attack/submit` (any body): answers the page `#submitted` "Submitted"; its ledger
//!   entry's `detail` is the urlencoded body's `form` field when that is a plain id.
//! - `POST /attack/api/{what}` (`what` a plain id, else 404): answers
//!   `{"ok": true, "what": what}`; `detail` is `id` from a JSON body `{"id": ...}`, else from
//!   the query, when that is a plain id.
//! - `POST /attack/graphql` (JSON): `detail` is `query`, `mutation` or `subscription` for
//!   one operation (by the first keyword of its `query` document: a bare `{` is a query) and
//!   `batch` for an array of them; answers `{"data": ...}` (an array of those for a batch).
//!   A body that is not such JSON is a 400, with no detail. The check reads one keyword: a
//!   real read exception must parse the whole document.
//! - `GET /attack/ws` with a WebSocket handshake: the socket (messages of 64 KiB at most),
//!   recorded as `WS-OPEN`, and each text or binary message as `WS` (the text as `detail`
//!   when it is a plain id); every message is answered `received`. Closed when the site
//!   stops. Without a handshake, the same path is the page that opens it.
//! - `GET /attack/api/unsubscribe`: **a GET that commits**: records itself as `GET!` and
//!   answers "You are unsubscribed". A rule on methods cannot stop a site that commits on
//!   GET; this is the known limit, documented by being the one GET in the ledger.
//! - `GET /attack/worker.js`, `/attack/shared-worker.js`, `/attack/sw.js`: the workers'
//!   scripts (`text/javascript`; `sw.js` also `Service-Worker-Allowed: /attack/`).
//! - `GET /attack/custom/{name}`: the page registered under `name` with
//!   [`DemoSite::set_page`](super::DemoSite::set_page) (`no-store`); an unknown name is a
//!   404, a name that is not 1 to 64 of `[a-z0-9_-]` a 400.
//! - Any other `GET /attack/{name}`: 404. (A plain id is 1 to 64 ASCII letters, digits, `-`,
//!   `_`.)

mod pages;

use axum::Router;
use axum::body::{Bytes, to_bytes};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Request, State};
use axum::http::{Extensions, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::ledger::{annotate, record};
use super::{MAX_BODY_BYTES, Shared, form_value, is_plain_id, json_error, lock, page};

pub use pages::ATTACK_BUTTONS;

/// Every attack page, `GET /attack/{name}`: each one's action writes (see the module docs).
pub const ATTACK_PAGES: &[&str] = &[
    "chord",
    "implicit",
    "chat",
    "select-submit",
    "switch",
    "checkbox",
    "buttons",
    "shadow",
    "label-submit",
    "div-button",
    "typing-submit",
    "js-post",
    "graphql",
    "link-get",
    "timer",
    "beacon",
    "ping",
    "keepalive",
    "worker",
    "sw",
    "ws",
    "ws-worker",
    "iframe",
];

/// Largest WebSocket message `/attack/ws` takes.
const MAX_WS_MESSAGE: usize = 64 * 1024;

/// A page name that [`DemoSite::set_page`](super::DemoSite::set_page) refused: it is not 1 to
/// 64 of `a-z`, `0-9`, `-`, `_`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid page name {0:?}: use 1 to 64 of a-z, 0-9, - and _")]
pub struct InvalidPageName(pub String);

/// Turns `true` when the site stops (a request extension): open WebSockets close on it.
#[derive(Debug, Clone)]
pub(super) struct Closing(pub(super) watch::Receiver<bool>);

/// Whether `name` may name a registered page: 1 to 64 of `[a-z0-9_-]`.
pub(super) fn is_page_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The attack routes.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/attack/{name}", get(attack_page))
        .route("/attack/custom/{name}", get(custom_page))
        .route("/attack/submit", post(submit))
        .route("/attack/api/{what}", post(api_write))
        .route("/attack/api/unsubscribe", get(unsubscribe))
        .route("/attack/graphql", get(graphql_page).post(graphql))
        .route("/attack/ws", get(socket))
        .route("/attack/worker.js", get(|| script(pages::WORKER_JS, None)))
        .route(
            "/attack/shared-worker.js",
            get(|| script(pages::SHARED_WORKER_JS, None)),
        )
        .route(
            "/attack/sw.js",
            get(|| script(pages::SERVICE_WORKER_JS, Some("/attack/"))),
        )
}

async fn attack_page(Path(name): Path<String>) -> Response {
    match pages::page(&name) {
        Some(html) => page(StatusCode::OK, html),
        None => json_error(StatusCode::NOT_FOUND, "no such attack page"),
    }
}

async fn graphql_page() -> Response {
    attack_page(Path("graphql".to_owned())).await
}

async fn custom_page(State(state): State<Shared>, Path(name): Path<String>) -> Response {
    if !is_page_name(&name) {
        return json_error(
            StatusCode::BAD_REQUEST,
            "a page name is 1 to 64 of a-z, 0-9, - and _",
        );
    }
    let html = lock(&state).pages.get(&name).cloned();
    match html {
        Some(html) => page(StatusCode::OK, html),
        None => json_error(StatusCode::NOT_FOUND, "no page registered under this name"),
    }
}

/// A worker's script: `text/javascript`, `no-store`, and `Service-Worker-Allowed` if given.
async fn script(body: &'static str, allowed: Option<&'static str>) -> Response {
    let mut response = (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response();
    if let Some(scope) = allowed {
        response.headers_mut().insert(
            header::HeaderName::from_static("service-worker-allowed"),
            HeaderValue::from_static(scope),
        );
    }
    response
}

/// The request's extensions (its ledger entry) and its body, or a 4xx JSON error.
async fn read(request: Request) -> Result<(Extensions, Bytes), Response> {
    let (parts, body) = request.into_parts();
    match to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => Ok((parts.extensions, bytes)),
        Err(_) => Err(json_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body could not be read (10 MiB at most)",
        )),
    }
}

/// `POST /attack/submit`: a form post from an attack page.
async fn submit(State(state): State<Shared>, request: Request) -> Response {
    let (extensions, body) = match read(request).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if let Some(form) = form_value(&body, "form").filter(|f| is_plain_id(f)) {
        annotate(&state, &extensions, &form);
    }
    page(StatusCode::OK, pages::submitted())
}

/// `id` from a JSON body `{"id": ...}`, else from the query: the detail of a script's write.
fn write_id(body: &[u8], query: Option<&str>) -> Option<String> {
    let from_body = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned));
    from_body
        .or_else(|| query.and_then(|q| form_value(q.as_bytes(), "id")))
        .filter(|id| is_plain_id(id))
}

/// `POST /attack/api/{what}`: a script's write (fetch, beacon, ping, worker).
async fn api_write(
    State(state): State<Shared>,
    Path(what): Path<String>,
    request: Request,
) -> Response {
    if !is_plain_id(&what) {
        return json_error(StatusCode::NOT_FOUND, "no such endpoint");
    }
    let query = request.uri().query().map(str::to_owned);
    let (extensions, body) = match read(request).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if let Some(id) = write_id(&body, query.as_deref()) {
        annotate(&state, &extensions, &id);
    }
    super::no_store_json(json!({ "ok": true, "what": what }))
}

/// `GET /attack/api/unsubscribe`: the committing GET.
async fn unsubscribe(State(state): State<Shared>) -> Response {
    record(&state, "GET!", "/attack/api/unsubscribe", None);
    page(StatusCode::OK, pages::unsubscribed())
}

/// The type of one GraphQL operation `{"query": "..."}`, by the first keyword of its
/// document (after white space, commas and `#` comments): `mutation`, `subscription`, or
/// `query` (also for a bare selection set `{ ... }`).
fn operation_type(operation: &Value) -> Option<&'static str> {
    let document = operation.get("query")?.as_str()?;
    let mut rest = document;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',' || c == '\u{feff}');
        match rest.strip_prefix('#') {
            Some(comment) => rest = comment.split_once('\n').map_or("", |(_, after)| after),
            None => break,
        }
    }
    if rest.starts_with('{') {
        return Some("query");
    }
    let keyword: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    match keyword.as_str() {
        "query" => Some("query"),
        "mutation" => Some("mutation"),
        "subscription" => Some("subscription"),
        _ => None,
    }
}

/// What `/attack/graphql` answers one operation of `kind`.
fn graphql_answer(kind: &str) -> Value {
    match kind {
        "mutation" => json!({ "data": { "like": { "ok": true } } }),
        "query" => json!({ "data": { "feed": [{ "id": 1 }, { "id": 2 }] } }),
        _ => json!({ "data": null }),
    }
}

/// The ledger detail and the answer for a GraphQL body, or `None` if it is not one.
fn graphql_reply(body: &[u8]) -> Option<(&'static str, Value)> {
    match serde_json::from_slice::<Value>(body).ok()? {
        Value::Array(operations) if !operations.is_empty() => {
            let answers = operations
                .iter()
                .map(|op| operation_type(op).map(graphql_answer))
                .collect::<Option<Vec<Value>>>()?;
            Some(("batch", Value::Array(answers)))
        }
        operation @ Value::Object(_) => {
            let kind = operation_type(&operation)?;
            Some((kind, graphql_answer(kind)))
        }
        _ => None,
    }
}

/// `POST /attack/graphql`.
async fn graphql(State(state): State<Shared>, request: Request) -> Response {
    let (extensions, body) = match read(request).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    match graphql_reply(&body) {
        Some((detail, answer)) => {
            annotate(&state, &extensions, detail);
            super::no_store_json(answer)
        }
        None => json_error(
            StatusCode::BAD_REQUEST,
            "expected a GraphQL request {\"query\": \"...\"} or an array of them",
        ),
    }
}

/// `GET /attack/ws`: with a WebSocket handshake, the socket (the upgrade recorded as
/// `WS-OPEN`, each message as `WS`); without one, the page that opens it.
async fn socket(
    State(state): State<Shared>,
    axum::Extension(Closing(closing)): axum::Extension<Closing>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let Ok(upgrade) = upgrade else {
        return attack_page(Path("ws".to_owned())).await;
    };
    record(&state, "WS-OPEN", "/attack/ws", None);
    upgrade
        .max_message_size(MAX_WS_MESSAGE)
        .on_upgrade(move |ws| messages(state, ws, closing))
}

/// Records every message on `ws` until it closes or the site stops.
async fn messages(state: Shared, mut ws: WebSocket, mut closing: watch::Receiver<bool>) {
    loop {
        let message = tokio::select! {
            message = ws.recv() => message,
            _ = closing.wait_for(|closed| *closed) => break,
        };
        let detail = match message {
            Some(Ok(Message::Text(text))) => Some(text.as_str().to_owned()),
            Some(Ok(Message::Binary(_))) => None,
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(Message::Close(_)) | Err(_)) | None => break,
        };
        let detail = detail.filter(|d| is_plain_id(d));
        record(&state, "WS", "/attack/ws", detail.as_deref());
        if ws.send(Message::Text("received".into())).await.is_err() {
            break;
        }
    }
    let _ = ws.send(Message::Close(None)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_names_are_short_lowercase_ids() {
        for good in ["a", "case-1", "gen_0042", &"z".repeat(64)] {
            assert!(is_page_name(good), "{good}");
        }
        for bad in ["", "A", "a b", "a/b", "..", "é", &"z".repeat(65)] {
            assert!(!is_page_name(bad), "{bad}");
        }
    }

    #[test]
    fn every_attack_page_is_served() {
        for name in ATTACK_PAGES {
            assert!(pages::page(name).is_some(), "{name}");
        }
        for helper in ["landing", "frame-form", "frame-harmless"] {
            assert!(pages::page(helper).is_some(), "{helper}");
        }
        assert!(pages::page("nope").is_none());
    }

    #[test]
    fn graphql_operations_are_told_apart_by_their_first_keyword() {
        let op = |q: &str| json!({ "query": q });
        assert_eq!(
            operation_type(&op("query Feed { feed { id } }")),
            Some("query")
        );
        assert_eq!(operation_type(&op("  { feed { id } }")), Some("query"));
        assert_eq!(
            operation_type(&op("# a comment\n mutation Like { like(id: 1) { ok } }")),
            Some("mutation")
        );
        assert_eq!(
            operation_type(&op("subscription S { x }")),
            Some("subscription")
        );
        assert_eq!(operation_type(&op("queryX { a }")), None);
        assert_eq!(operation_type(&op("fragment F on T { a }")), None);
        assert_eq!(operation_type(&json!({ "query": 1 })), None);

        let batch = br#"[{"query": "query A { a }"}, {"query": "mutation B { b }"}]"#;
        let (detail, answer) = graphql_reply(batch).unwrap_or(("none", Value::Null));
        assert_eq!(detail, "batch");
        assert_eq!(answer.as_array().map(Vec::len), Some(2));
        assert_eq!(graphql_reply(b"[]"), None);
        assert_eq!(graphql_reply(b"not json"), None);
        assert_eq!(graphql_reply(br#"[{"query": "nope"}]"#), None);
    }

    #[test]
    fn a_write_names_itself_by_its_body_or_its_query() {
        assert_eq!(
            write_id(br#"{"id": "like"}"#, None).as_deref(),
            Some("like")
        );
        assert_eq!(write_id(b"PING", Some("id=link")).as_deref(), Some("link"));
        assert_eq!(write_id(br#"{"id": "<b>"}"#, None), None);
        assert_eq!(write_id(b"", None), None);
    }
}
