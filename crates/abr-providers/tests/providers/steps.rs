//! The step runner ([`StepRunner`] for [`BrowserSession`]) on real Chromium, against a small
//! local site reached through the egress guard (allowed by its exact address): every action,
//! every selector form, every extraction shape, and each failure kind with its deadline.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use abr_core::step_runner::{BrowserAction, StepFailureKind, StepOutput, StepRunner, UploadFile};
use abr_core::{AcquireMode, AcquireRequest, EgressPolicy, Lease, SessionProvider};
use abr_protocol::{DomCheck, Extraction, SecretValue, Selector, SelectorSpec};
use abr_providers::{BrowserSession, LocalBrowserSessionProvider, LocalProviderConfig};
use axum::Router;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::json;

/// A step's deadline when it is expected to succeed.
const STEP: Duration = Duration::from_secs(10);
/// A step's deadline when it is expected to run out.
const SHORT: Duration = Duration::from_millis(1000);
/// How late past its deadline a step may return (the runner's margin plus scheduling).
const SLACK: Duration = Duration::from_millis(2500);

const FORM: &str = r#"<!doctype html><title>form</title>
<h1>Add a member</h1>
<form id="member" action="/saved" method="get">
  <p><label>Email <input id="email" name="email" value="old@example.com"></label></p>
  <p><label>Role <select id="role" name="role">
    <option value="viewer">Viewer</option>
    <option value="editor">Editor</option>
    <option value="admin">Administrator</option>
  </select></label></p>
  <button type="submit" style="display:none">Submit hidden</button>
  <button type="submit">Submit</button>
</form>
<form id="search" action="/search" method="get"><input id="q" name="q" aria-label="Search"></form>
<button id="count" onclick="this.dataset.n = String(Number(this.dataset.n || 0) + 1); document.getElementById('clicks').textContent = 'Clicked ' + this.dataset.n;">Count me</button>
<p id="clicks">Clicked 0</p>
<div id="plain">Not a field</div>
<button id="frozen" disabled>Frozen</button>
<input id="fixed" value="fixed" readonly>
<label class="picker">Attach <input id="files" type="file" multiple style="display:none"></label>
<p id="file-names"></p>
<script>document.getElementById('files').addEventListener('change', (e) => {
  document.getElementById('file-names').textContent = Array.from(e.target.files).map((f) => f.name + ':' + f.size).join(', ');
});</script>
<p id="hidden-note" style="display:none">Invisible words</p>
<div id="late"></div>
<script>setTimeout(() => { document.getElementById('late').innerHTML = '<p class="arrived">Arrived late</p>'; }, 400);</script>
"#;

const DATA: &str = r#"<!doctype html><title>data</title>
<table id="with-thead">
  <thead><tr><th>Email</th><th>Role</th><th></th></tr></thead>
  <tbody>
    <tr><td>ann@example.com</td><td>admin</td><td><a href="/e/1">edit</a></td></tr>
    <tr><td> bob@example.com </td><td>viewer</td><td><a href="/e/2">edit</a></td></tr>
  </tbody>
</table>
<table id="th-row">
  <tr><th>Name</th><th>Age</th></tr>
  <tr><td>Cy</td><td>40</td></tr>
</table>
<table id="no-header">
  <tr><td>a1</td><td>b1</td></tr>
  <tr><td>a2</td><td>b2</td></tr>
</table>
<div id="wrapper"><p>Inside:</p><table><tr><td>x</td></tr></table></div>
<ul id="people">
  <li class="person"><span class="name">Dee</span><span class="age">31</span></li>
  <li class="person"><span class="name">Eve</span></li>
</ul>
<a id="link" href="/profile/42" data-id="42">Profile of <b>Dee</b></a>
<p id="status" class="message">  Saved 3 items  </p>
"#;

#[derive(serde::Deserialize)]
struct Saved {
    email: String,
    role: String,
}

#[derive(serde::Deserialize)]
struct Search {
    q: String,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The local site: a form, a data page, a status page.
struct Site {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Site {
    async fn start() -> Self {
        let app = Router::new()
            .route("/form", get(|| async { Html(FORM) }))
            .route("/data", get(|| async { Html(DATA) }))
            .route(
                "/saved",
                get(|Query(q): Query<Saved>| async move {
                    Html(format!(
                        "<!doctype html><title>saved</title><p id=\"result\" class=\"success-message\">Saved {} as {}</p>",
                        escape(&q.email),
                        escape(&q.role)
                    ))
                }),
            )
            .route(
                "/search",
                get(|Query(q): Query<Search>| async move {
                    Html(format!(
                        "<!doctype html><title>search</title><p id=\"results\">Results for {}</p>",
                        escape(&q.q)
                    ))
                }),
            )
            .route(
                "/status/{code}",
                get(|Path(code): Path<u16>| async move {
                    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
                    (status, Html(format!("<p>status {code}</p>"))).into_response()
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, task }
    }

    fn url(&self, path: &str) -> url::Url {
        url::Url::parse(&format!("http://{}{path}", self.addr)).unwrap()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A service on loopback the browser may not reach (only the site is allowed): counts the
/// connections it gets.
struct Victim;

impl Victim {
    async fn start() -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let reached = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&reached);
        tokio::spawn(async move {
            while let Ok((_socket, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        (addr, reached)
    }
}

/// A guarded local provider that may reach exactly the site, and one leased session.
async fn open(site: &Site) -> (LocalBrowserSessionProvider, Lease<BrowserSession>) {
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        egress: Some(EgressPolicy::new().allow_addr(site.addr)),
        ..LocalProviderConfig::default()
    });
    let lease = tokio::time::timeout(
        Duration::from_secs(60),
        provider.acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "steps".into(),
            state: None,
            start_url: None,
        }),
    )
    .await
    .expect("acquire hung")
    .expect("acquire");
    (provider, lease)
}

async fn close(provider: LocalBrowserSessionProvider, lease: Lease<BrowserSession>) {
    let _ = tokio::time::timeout(Duration::from_secs(30), lease.release()).await;
    provider.shutdown().await;
}

fn css(s: &str) -> Selector {
    Selector::Css(s.to_owned())
}

fn text(s: &str) -> Selector {
    Selector::Explicit(SelectorSpec {
        text: Some(s.to_owned()),
        ..SelectorSpec::default()
    })
}

fn role(role: &str, name: Option<&str>) -> Selector {
    Selector::Explicit(SelectorSpec {
        role: Some(role.to_owned()),
        name: name.map(str::to_owned),
        ..SelectorSpec::default()
    })
}

fn explicit_css(s: &str) -> Selector {
    Selector::Explicit(SelectorSpec {
        css: Some(s.to_owned()),
        ..SelectorSpec::default()
    })
}

fn navigate(url: url::Url) -> BrowserAction {
    BrowserAction::Navigate { url }
}

fn wait_selector(selector: Selector) -> BrowserAction {
    BrowserAction::Wait {
        selector: Some(selector),
        url: None,
        text: None,
    }
}

fn extract(what: Extraction) -> BrowserAction {
    BrowserAction::Extract { what }
}

fn assert_check(selector: Option<Selector>, text: Option<&str>) -> BrowserAction {
    BrowserAction::Assert {
        check: DomCheck {
            selector,
            text: text.map(str::to_owned),
        },
    }
}

async fn ok(session: &BrowserSession, action: BrowserAction) -> StepOutput {
    match session.run(&action, STEP).await {
        Ok(output) => output,
        Err(e) => panic!("{} failed: {:?} {}", action.kind(), e.kind, e.message),
    }
}

async fn extracted(session: &BrowserSession, what: Extraction) -> serde_json::Value {
    match ok(session, extract(what)).await {
        StepOutput::Extracted(value) => value,
        other => panic!("not an extraction: {other:?}"),
    }
}

async fn checked(session: &BrowserSession, action: BrowserAction, timeout: Duration) -> bool {
    match session.run(&action, timeout).await {
        Ok(StepOutput::Checked(held)) => held,
        other => panic!("not a check: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_action_and_selector_form_drives_a_real_form() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();

    assert_eq!(ok(s, navigate(site.url("/form"))).await, StepOutput::Done);

    // Click by visible text (case-insensitive substring), twice.
    ok(
        s,
        BrowserAction::Click {
            selector: text("count ME"),
        },
    )
    .await;
    ok(
        s,
        BrowserAction::Click {
            selector: css("#count"),
        },
    )
    .await;
    assert_eq!(
        extracted(
            s,
            Extraction::Text {
                selector: css("#clicks")
            }
        )
        .await,
        json!("Clicked 2")
    );

    // Type replaces the field's value.
    ok(
        s,
        BrowserAction::Type {
            selector: explicit_css("#email"),
            value: SecretValue::new("new@example.com"),
            submit: false,
        },
    )
    .await;
    // Select by value, then by label (the option's value differs from its label).
    ok(
        s,
        BrowserAction::Select {
            selector: css("#role"),
            value: SecretValue::new("editor"),
        },
    )
    .await;
    ok(
        s,
        BrowserAction::Select {
            selector: role("combobox", Some("role")),
            value: SecretValue::new("Administrator"),
        },
    )
    .await;
    // The first *visible* "Submit" button, by role and case-insensitive name.
    ok(
        s,
        BrowserAction::Click {
            selector: role("button", Some("submit")),
        },
    )
    .await;
    ok(
        s,
        BrowserAction::Wait {
            selector: None,
            url: Some("/saved?".into()),
            text: None,
        },
    )
    .await;
    ok(
        s,
        BrowserAction::Wait {
            selector: Some(css(".success-message")),
            url: None,
            text: Some("saved NEW@example.com".into()),
        },
    )
    .await;
    assert_eq!(
        extracted(
            s,
            Extraction::Text {
                selector: css("#result")
            }
        )
        .await,
        json!("Saved new@example.com as admin")
    );

    // Type with submit presses Enter: the search form submits.
    ok(s, navigate(site.url("/form"))).await;
    ok(
        s,
        BrowserAction::Type {
            selector: role("textbox", Some("search")),
            value: SecretValue::new("rust browsers"),
            submit: true,
        },
    )
    .await;
    ok(
        s,
        BrowserAction::Wait {
            selector: None,
            url: None,
            text: Some("Results for rust browsers".into()),
        },
    )
    .await;
    assert!(s.page().url().contains("/search?q=rust+browsers"));

    // A wait for an element that appears later than the page.
    ok(s, navigate(site.url("/form"))).await;
    ok(s, wait_selector(css("p.arrived"))).await;

    // Files set on a hidden file input.
    ok(
        s,
        BrowserAction::Upload {
            selector: css("#files"),
            files: vec![
                UploadFile {
                    name: "a.png".into(),
                    mime_type: "image/png".into(),
                    bytes: vec![1, 2, 3],
                },
                UploadFile {
                    name: "b.txt".into(),
                    mime_type: "text/plain".into(),
                    bytes: b"hello".to_vec(),
                },
            ],
        },
    )
    .await;
    assert_eq!(
        extracted(
            s,
            Extraction::Text {
                selector: css("#file-names")
            }
        )
        .await,
        json!("a.png:3, b.txt:5")
    );

    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extraction_returns_text_attributes_tables_and_lists_as_json() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    ok(s, navigate(site.url("/data"))).await;

    assert_eq!(
        extracted(
            s,
            Extraction::Text {
                selector: css("#status")
            }
        )
        .await,
        json!("Saved 3 items")
    );
    assert_eq!(
        extracted(
            s,
            Extraction::Text {
                selector: text("profile of")
            }
        )
        .await,
        json!("Profile of Dee")
    );
    assert_eq!(
        extracted(
            s,
            Extraction::Attribute {
                selector: role("link", Some("profile")),
                attribute: "href".into(),
            }
        )
        .await,
        json!("/profile/42")
    );
    assert_eq!(
        extracted(
            s,
            Extraction::Attribute {
                selector: css("#link"),
                attribute: "data-missing".into(),
            }
        )
        .await,
        json!(null),
        "a missing attribute is null"
    );

    // A <thead>: rows keyed by the header cells; an unnamed header cell is columnN.
    assert_eq!(
        extracted(
            s,
            Extraction::Table {
                selector: css("#with-thead")
            }
        )
        .await,
        json!([
            {"Email": "ann@example.com", "Role": "admin", "column3": "edit"},
            {"Email": "bob@example.com", "Role": "viewer", "column3": "edit"},
        ])
    );
    // A first row of <th> only: the same.
    assert_eq!(
        extracted(
            s,
            Extraction::Table {
                selector: css("#th-row")
            }
        )
        .await,
        json!([{"Name": "Cy", "Age": "40"}])
    );
    // No header: arrays of cell texts.
    assert_eq!(
        extracted(
            s,
            Extraction::Table {
                selector: css("#no-header")
            }
        )
        .await,
        json!([["a1", "b1"], ["a2", "b2"]])
    );
    // A wrapper: the table inside it.
    assert_eq!(
        extracted(
            s,
            Extraction::Table {
                selector: css("#wrapper")
            }
        )
        .await,
        json!([["x"]])
    );
    // Not a table and none inside.
    let failure = s
        .run(
            &extract(Extraction::Table {
                selector: css("#status"),
            }),
            STEP,
        )
        .await
        .unwrap_err();
    assert_eq!(
        failure.kind,
        StepFailureKind::Rejected,
        "{}",
        failure.message
    );

    // A list: each item's fields by relative CSS; a missing field is null.
    let fields = BTreeMap::from([
        ("name".to_owned(), ".name".to_owned()),
        ("age".to_owned(), "span.age".to_owned()),
    ]);
    assert_eq!(
        extracted(
            s,
            Extraction::List {
                selector: css("#people li.person"),
                fields: fields.clone(),
            }
        )
        .await,
        json!([
            {"name": "Dee", "age": "31"},
            {"name": "Eve", "age": null},
        ])
    );
    let bad = BTreeMap::from([("name".to_owned(), "[[nope".to_owned())]);
    let failure = s
        .run(
            &extract(Extraction::List {
                selector: css("li.person"),
                fields: bad,
            }),
            STEP,
        )
        .await
        .unwrap_err();
    assert_eq!(failure.kind, StepFailureKind::Rejected);
    assert!(
        failure.message.contains("not valid CSS"),
        "{}",
        failure.message
    );

    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_assertions_and_page_text() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    ok(s, navigate(site.url("/form"))).await;

    let StepOutput::Screenshot(png) = ok(s, BrowserAction::Screenshot).await else {
        panic!("not a screenshot");
    };
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(png.len() > 1000);

    // True: a selector, a text, both (the text in the element), an element that appears
    // later (the check waits for it, as Playwright's assertions do).
    assert!(checked(s, assert_check(Some(css("#clicks")), None), STEP).await);
    assert!(checked(s, assert_check(None, Some("add a MEMBER")), STEP).await);
    assert!(
        checked(
            s,
            assert_check(Some(css("#clicks")), Some("clicked 0")),
            STEP
        )
        .await
    );
    assert!(checked(s, assert_check(Some(text("arrived")), None), STEP).await);

    // False, within about the deadline, never an error: a missing element, a text that is
    // not there, a text that is on the page but not in the element, a hidden element.
    for (selector, text) in [
        (Some(css("#missing")), None),
        (None, Some("nowhere on this page")),
        (Some(css("#clicks")), Some("Add a member")),
        (Some(css("#hidden-note")), None),
        (None, Some("Invisible words")),
    ] {
        let started = Instant::now();
        assert!(
            !checked(s, assert_check(selector, text), SHORT).await,
            "{text:?}"
        );
        let took = started.elapsed();
        assert!(took >= SHORT - Duration::from_millis(100), "{took:?}");
        assert!(took < SHORT + SLACK, "{took:?}");
    }

    // The visible text: shown words, not hidden ones.
    let page_text = s.page_text(STEP).await.unwrap();
    assert!(page_text.contains("Add a member"), "{page_text}");
    assert!(page_text.contains("Clicked 0"), "{page_text}");
    assert!(!page_text.contains("Invisible words"), "{page_text}");

    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_typed_bounded_and_free_of_typed_values() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();

    // Navigation: an HTTP error page, and a destination the egress guard refuses (another
    // port on loopback: only the site's exact address is allowed).
    let failure = s
        .run(&navigate(site.url("/status/404")), STEP)
        .await
        .unwrap_err();
    assert_eq!(failure.kind, StepFailureKind::Navigation);
    assert!(failure.message.contains("HTTP 404"), "{}", failure.message);
    let failure = s
        .run(&navigate(site.url("/status/503")), STEP)
        .await
        .unwrap_err();
    assert_eq!(failure.kind, StepFailureKind::Navigation);
    let (victim, reached) = Victim::start().await;
    let refused = url::Url::parse(&format!("http://{victim}/secret?token=s3cret")).unwrap();
    let failure = s.run(&navigate(refused), STEP).await.unwrap_err();
    assert_eq!(
        failure.kind,
        StepFailureKind::Navigation,
        "{}",
        failure.message
    );
    assert!(!failure.message.contains("s3cret"), "{}", failure.message);

    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the guard let it through"
    );

    ok(s, navigate(site.url("/form"))).await;

    // NotFound, within about the deadline: an element, a text, a URL that never come, for
    // every step that waits for an element.
    let never = css("#never");
    for action in [
        wait_selector(never.clone()),
        BrowserAction::Wait {
            selector: None,
            url: None,
            text: Some("never shown".into()),
        },
        BrowserAction::Wait {
            selector: None,
            url: Some("/never".into()),
            text: None,
        },
        BrowserAction::Click {
            selector: never.clone(),
        },
        BrowserAction::Type {
            selector: never.clone(),
            value: SecretValue::new("canary-4711"),
            submit: false,
        },
        BrowserAction::Select {
            selector: never.clone(),
            value: SecretValue::new("canary-4711"),
        },
        extract(Extraction::Text {
            selector: never.clone(),
        }),
        extract(Extraction::List {
            selector: never.clone(),
            fields: BTreeMap::new(),
        }),
        // A hidden element never becomes clickable.
        BrowserAction::Click {
            selector: css("#hidden-note"),
        },
    ] {
        let started = Instant::now();
        let failure = s.run(&action, SHORT).await.unwrap_err();
        let took = started.elapsed();
        assert_eq!(
            failure.kind,
            StepFailureKind::NotFound,
            "{}: {}",
            action.kind(),
            failure.message
        );
        assert!(took >= SHORT - Duration::from_millis(100), "{took:?}");
        assert!(took < SHORT + SLACK, "{}: {took:?}", action.kind());
    }

    // Rejected: the element is there but cannot take the action; nothing typed is repeated.
    for action in [
        BrowserAction::Type {
            selector: css("#plain"),
            value: SecretValue::new("canary-4711"),
            submit: false,
        },
        BrowserAction::Select {
            selector: css("#plain"),
            value: SecretValue::new("canary-4711"),
        },
        BrowserAction::Select {
            selector: css("#role"),
            value: SecretValue::new("canary-4711"),
        },
        BrowserAction::Click {
            selector: css("!!not a selector"),
        },
        // There, but never enabled or editable: not "not found".
        BrowserAction::Click {
            selector: css("#frozen"),
        },
        BrowserAction::Type {
            selector: css("#fixed"),
            value: SecretValue::new("canary-4711"),
            submit: false,
        },
    ] {
        let started = Instant::now();
        let failure = s.run(&action, SHORT).await.unwrap_err();
        assert_eq!(
            failure.kind,
            StepFailureKind::Rejected,
            "{}: {}",
            action.kind(),
            failure.message
        );
        assert!(!failure.message.contains("canary"), "{}", failure.message);
        assert!(
            !failure.message.contains("Not a field"),
            "{}",
            failure.message
        );
        assert!(started.elapsed() < SHORT + SLACK);
    }
    // Which of the two a select met is said: no such element, or no such option.
    let not_select = BrowserAction::Select {
        selector: css("#plain"),
        value: SecretValue::new("canary-4711"),
    };
    let failure = s.run(&not_select, SHORT).await.unwrap_err();
    assert_eq!(failure.message, "the element is not a <select>");
    let no_option = BrowserAction::Select {
        selector: css("#role"),
        value: SecretValue::new("canary-4711"),
    };
    let failure = s.run(&no_option, SHORT).await.unwrap_err();
    assert!(
        failure
            .message
            .starts_with("no option with this value or label"),
        "{}",
        failure.message
    );
    // A failed step left the page usable.
    ok(s, wait_selector(css("#email"))).await;

    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_page_is_a_crash_for_every_step() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    ok(s, navigate(site.url("/form"))).await;

    // Closed while a step waits: the step ends at once, as a crash.
    let started = Instant::now();
    let wait = wait_selector(css("#never"));
    let (waited, closed) = tokio::join!(s.run(&wait, STEP), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        s.page().close().await
    });
    closed.unwrap();
    assert_eq!(waited.unwrap_err().kind, StepFailureKind::Crashed);
    assert!(started.elapsed() < Duration::from_secs(3));

    // Every step on the closed page.

    for action in [
        navigate(site.url("/form")),
        BrowserAction::Click {
            selector: css("#count"),
        },
        extract(Extraction::Text {
            selector: css("#clicks"),
        }),
        BrowserAction::Screenshot,
        assert_check(Some(css("#clicks")), None),
    ] {
        let started = Instant::now();
        let failure = s.run(&action, STEP).await.unwrap_err();
        assert_eq!(failure.kind, StepFailureKind::Crashed, "{}", action.kind());
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    let failure = s.page_text(STEP).await.unwrap_err();
    assert_eq!(failure.kind, StepFailureKind::Crashed);

    close(provider, lease).await;
}
