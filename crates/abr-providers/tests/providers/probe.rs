//! The page probe ([`PageProbe`] for [`BrowserSession`]) on real Chromium, against a small
//! local site reached through the egress guard (allowed by its exact address, on both of its
//! names, `127.0.0.1` and `localhost`): element facts fed to the commit rule, page signals,
//! redacted frames (a typed canary must not be readable in them), and the site filter,
//! alone and behind the egress URL gate of a remote provider.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use abr_core::guard::{
    CommitRules, ElementFacts, FrameError, MAX_FRAME_BYTES, PageProbe, PageRedaction, Reach,
    RedactedFrame, SiteFilter, commit_class,
};
use abr_core::step_runner::{BrowserAction, StepFailureKind, StepRunner, UploadFile};
use abr_core::{AcquireMode, AcquireRequest, AllowedPrivate, EgressPolicy, Lease, SessionProvider};
use abr_doubles::{SteelDouble, SteelOptions};
use abr_protocol::{CommitClass, SecretValue, Selector};
use abr_providers::{
    BrowserSession, LocalBrowserSessionProvider, LocalProviderConfig, SteelProviderConfig,
    SteelSessionProvider,
};
use axum::Router;
use axum::extract::{Path, Request};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use playwright_rs::protocol::{GotoOptions, Scale, ScreenshotOptions, ScreenshotType};
use serde_json::Value;
use zune_jpeg::JpegDecoder;
use zune_jpeg::zune_core::bytestream::ZCursor;
use zune_jpeg::zune_core::colorspace::ColorSpace;
use zune_jpeg::zune_core::options::DecoderOptions;

/// A call's deadline when it is expected to succeed.
pub(crate) const STEP: Duration = Duration::from_secs(10);

/// A value typed into the corpus's labelled field: it must never appear in the facts.
const TYPED: &str = "hunter2-typed-VALUE";

/// The canary of the redacted-frame test.
const CANARY: &str = "CANARY-7319-XYZ";

const CORPUS: &str = r#"<!doctype html><title>corpus</title>
<form id="profile" action="/saved" method="post">
  <label>Secret code <input id="labelled" name="code"></label>
  <button id="submit" type="submit">Save</button>
  <button id="no-type">Continue</button>
  <button id="type-button" type="button">Preview</button>
</form>
<a id="buy" href="/buy">Buy <b>now</b></a>
<a id="next" href="/next">Next page</a>
<label>CV <input id="file" type="file" name="cv"></label>
<form id="pay" action="/pay" method="POST">
  <input id="cc" autocomplete="cc-number" name="ccnum" required>
  <input id="cvc" name="x1" data-field="card-cvc">
  <select id="exp" autocomplete="cc-exp-month"><option>01</option><option>02</option></select>
  <input id="pay-submit" type="submit" value="Pay 20 EUR">
</form>
<form id="search" role="search" action="/search">
  <input id="q" type="search" name="q" aria-label="Search the site">
  <input type="image" alt="Go" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
</form>
<div id="send" role="button" tabindex="0">Send <span>message</span></div>
<span id="labelled-by">Delete my account</span>
<button id="by" aria-labelledby="labelled-by"><img alt="trash"></button>
<button id="outside">Open menu</button>
<textarea id="notes" aria-label="Notes"></textarea>
<input id="token" type="hidden" name="csrf" value="tok-SECRET-123">
<a id="with-token" href="/more"><input type="hidden" value="tok-SECRET-123">Read on</a>
<style>.css-like::before { content: "Li" "ke"; } .css-attr::after { content: attr(data-label); }</style>
<button id="css-like" class="css-like" type="button"></button>
<button id="css-attr" class="css-attr" type="button" data-label="Follow"></button>
<button id="star" type="button"><span id="star-icon">&#9733;</span> Star</button>
<form id="one" method="post" action="/one"><input id="only" name="q"><input type="checkbox" name="c"></form>
<form id="labelled-submit" method="post" action="/go"><label id="go-label">Go <input type="submit" value="Continue" hidden></label>
  <x-continue id="host"></x-continue></form>
<div id="chat" contenteditable="true" aria-label="Message"></div>
<button id="accordion" aria-expanded="false" type="button">Shipping</button>
<input id="loose" aria-label="Quick note">
<div role="search"><input id="site-search" aria-label="Find"></div>
<script>
customElements.define('x-continue', class extends HTMLElement {
  connectedCallback() {
    const root = this.attachShadow({ mode: 'open' });
    root.innerHTML = '<button id="inner">Next step</button>';
  }
});
</script>
"#;

const LOGIN: &str = r#"<!doctype html><title>Sign in</title>
<form action="/session"><label>Email <input name="email" type="email"></label>
<label>Password <input name="password" type="password"></label>
<input type="password" name="hidden-one" style="display:none">
<button>Sign in</button></form>"#;

const CAPTCHA: &str = r#"<!doctype html><title>Check</title>
<p>One more step</p><div class="g-recaptcha" data-sitekey="x" style="width:300px;height:80px"></div>"#;

const INVISIBLE_CAPTCHA: &str = r#"<!doctype html><title>News</title>
<p>Latest posts</p><div class="g-recaptcha" data-size="invisible" data-sitekey="x"></div>"#;

const UPLOAD: &str = r#"<!doctype html><title>Apply</title>
<form action="/apply"><label class="picker">Attach your CV <input type="file" name="cv" style="opacity:0;position:absolute;width:1px;height:1px"></label>
<input type="file" name="never" disabled>
<input type="file" name="hidden" style="display:none">
<input name="name" aria-label="Full name"><input type="email" name="email" aria-label="Email">
<input type="search" name="q" aria-label="Search"><input type="hidden" name="t" value="x">
<textarea name="letter" aria-label="Cover letter"></textarea>
<button type="submit">Apply now</button></form>
<form style="display:none"><button>Hidden form</button></form>"#;

const OTP: &str = r#"<!doctype html><title>Verify</title>
<p>We sent you a code</p><input name="code" autocomplete="one-time-code" inputmode="numeric">"#;

const CHECKOUT: &str = r#"<!doctype html><title>Checkout</title>
<form><input name="cardnumber" aria-label="Card number"><input autocomplete="cc-exp" aria-label="Expiry">
<input name="cvc" aria-label="CVC" style="display:none"><input name="city" aria-label="City">
<button>Place order</button></form>"#;

/// A 500 px wide field in a 32 px font at a known place; no focus ring, no caret blink.
const CANARY_PAGE: &str = r#"<!doctype html><title>canary</title>
<style>
  html, body { margin: 0; background: #fff; }
  #canary { position: absolute; left: 40px; top: 60px; width: 500px; height: 56px;
    font: 32px/1 monospace; padding: 4px 8px; border: 2px solid #888; background: #fff;
    color: #000; outline: none; box-sizing: border-box; }
  p { position: absolute; left: 40px; top: 200px; font: 20px sans-serif; }
</style>
<input id="canary" name="secret" aria-label="Secret">
<p>Words outside any field stay readable.</p>"#;

/// A field the blur cannot hold on: an inline `!important` beats any style sheet.
const UNCONFIRMED: &str = r#"<!doctype html><title>stubborn</title>
<input id="plain"><input id="stubborn" style="filter: none !important">"#;

/// Fields in the document, an open shadow root and a same-origin frame, a contenteditable
/// region, a hidden input (never rendered, not counted), and a cross-origin frame (blurred
/// whole).
const NESTED: &str = r#"<!doctype html><title>nested</title>
<input id="top"><input type="hidden" name="t" value="x">
<div id="host"></div>
<div id="editor" contenteditable="true">Draft</div>
<iframe id="same" srcdoc="<input id=inner><textarea></textarea>"></iframe>
<iframe id="other" src="OTHER/plain"></iframe>
<script>
  const root = document.getElementById('host').attachShadow({ mode: 'open' });
  root.innerHTML = '<select><option>a</option></select>';
</script>"#;

/// Adds a field in a new shadow root (which no sheet covers) the moment the blur is
/// confirmed, before the capture: it sees the blur go onto its opaque frame (a sandboxed
/// one, which no script can reach into) and reacts in a microtask.
const LATE_FIELD: &str = r#"<!doctype html><title>late</title><input id="first">
<div id="host"></div><iframe id="opaque" sandbox srcdoc="<p>boxed</p>"></iframe>
<script>
  const frame = document.getElementById('opaque');
  new MutationObserver(() => {
    const host = document.getElementById('host');
    if (frame.style.filter && !host.shadowRoot) {
      host.attachShadow({ mode: 'open' }).innerHTML = '<input id="late">';
    }
  }).observe(frame, { attributes: true });
</script>"#;

/// Links, a frame and an image on the other name of the site.
const LINKS: &str = r#"<!doctype html><title>links</title>
<a id="away" href="OTHER/landing">Elsewhere</a>
<a id="here" href="/landing">Here</a>
<img id="pic" src="OTHER/pixel.gif">"#;

const FRAMED: &str = r#"<!doctype html><title>framed</title><iframe src="OTHER/landing"></iframe>"#;

/// A page of 40 images (not cacheable), to time the route's cost per request.
fn gallery() -> String {
    let mut html = String::from("<!doctype html><title>gallery</title>");
    for i in 0..40 {
        html.push_str(&format!("<img src=\"/pixel.gif?{i}\">"));
    }
    html
}

const GIF: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0xff, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

/// Requests the site received, by `host path`.
type Seen = Arc<Mutex<BTreeMap<String, usize>>>;

/// The local site, on `127.0.0.1:P`; `localhost:P` is the same server under another host
/// name (another site for the filter).
pub(crate) struct Site {
    addr: SocketAddr,
    seen: Seen,
    task: tokio::task::JoinHandle<()>,
}

impl Site {
    pub(crate) async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let other = format!("http://localhost:{}", addr.port());
        let page = move |html: &'static str| {
            let html = html.replace("OTHER", &other);
            move || async move { Html(html) }
        };
        let seen: Seen = Arc::default();
        let counted = Arc::clone(&seen);
        let app = Router::new()
            .route("/corpus", get(|| async { Html(CORPUS) }))
            .route("/impostor", get(|| async { Html(IMPOSTOR) }))
            .route("/twins", get(|| async { Html(TWINS) }))
            .route("/snapshot", get(|| async { Html(SNAPSHOT_PAGE) }))
            .route("/large", get(|| async { Html(large_page()) }))
            .route("/unpainted", get(|| async { Html(UNPAINTED_PAGE) }))
            .route("/emoji", get(|| async { Html(EMOJI_PAGE) }))
            .route("/login", get(|| async { Html(LOGIN) }))
            .route("/captcha", get(|| async { Html(CAPTCHA) }))
            .route(
                "/invisible-captcha",
                get(|| async { Html(INVISIBLE_CAPTCHA) }),
            )
            .route("/upload", get(|| async { Html(UPLOAD) }))
            .route("/otp", get(|| async { Html(OTP) }))
            .route("/checkout", get(|| async { Html(CHECKOUT) }))
            .route("/canary", get(|| async { Html(CANARY_PAGE) }))
            .route(
                "/sensitive",
                get(|| async { Html(crate::masks::SENSITIVE_PAGE) }),
            )
            .route("/unconfirmed", get(|| async { Html(UNCONFIRMED) }))
            .route("/nested", get(page(NESTED)))
            .route("/late", get(|| async { Html(LATE_FIELD) }))
            .route("/links", get(page(LINKS)))
            .route("/framed", get(page(FRAMED)))
            .route("/gallery", get(|| async { Html(gallery()) }))
            .route(
                "/cacheable",
                get(|| async { Html("<!doctype html><img src=\"/cached.gif\">") }),
            )
            .route(
                "/cached.gif",
                get(|| async {
                    (
                        [
                            (header::CONTENT_TYPE, "image/gif"),
                            (header::CACHE_CONTROL, "max-age=3600"),
                        ],
                        GIF,
                    )
                }),
            )
            .route(
                "/redirect",
                get(move || async move {
                    Redirect::temporary(&format!("http://localhost:{}/landing", addr.port()))
                }),
            )
            .route(
                "/landing",
                get(|| async { Html("<!doctype html><title>landing</title><p>Landed</p>") }),
            )
            .route(
                "/plain",
                get(|| async { Html("<!doctype html><p>A plain page</p>") }),
            )
            .route(
                "/pixel.gif",
                get(|| async {
                    (
                        [
                            (header::CONTENT_TYPE, "image/gif"),
                            (header::CACHE_CONTROL, "no-store"),
                        ],
                        GIF,
                    )
                }),
            )
            .route(
                "/status/{code}",
                get(|Path(code): Path<u16>| async move {
                    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
                    (
                        status,
                        Html(format!("<title>oops</title><p>status {code}</p>")),
                    )
                        .into_response()
                }),
            )
            .layer(axum::middleware::from_fn(
                move |request: Request, next: axum::middleware::Next| {
                    let counted = Arc::clone(&counted);
                    async move {
                        let host = request
                            .headers()
                            .get(header::HOST)
                            .and_then(|h| h.to_str().ok())
                            .unwrap_or_default()
                            .split(':')
                            .next()
                            .unwrap_or_default()
                            .to_owned();
                        let key = format!("{host} {}", request.uri().path());
                        *counted.lock().unwrap().entry(key).or_default() += 1;
                        next.run(request).await
                    }
                },
            ));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, seen, task }
    }

    pub(crate) fn url(&self, path: &str) -> url::Url {
        url::Url::parse(&format!("http://{}{path}", self.addr)).unwrap()
    }

    fn other(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.addr.port())
    }

    /// Requests for `path` on `host` so far.
    fn seen(&self, host: &str, path: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .get(&format!("{host} {path}"))
            .copied()
            .unwrap_or_default()
    }

    /// The site on both of its names, nothing else on loopback.
    fn egress(&self) -> EgressPolicy {
        EgressPolicy::new()
            .allow_addr(self.addr)
            .allow_private(AllowedPrivate {
                host: "localhost".to_owned(),
                port: self.addr.port(),
            })
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A guarded local provider that may reach exactly the site, and one leased session.
pub(crate) async fn open(site: &Site) -> (LocalBrowserSessionProvider, Lease<BrowserSession>) {
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        egress: Some(site.egress()),
        ..LocalProviderConfig::default()
    });
    let lease = lease_of(&provider, "local").await;
    (provider, lease)
}

/// A fresh unattended lease of `provider` (named in a failure), within a minute.
async fn lease_of<P>(provider: &P, name: &str) -> Lease<BrowserSession>
where
    P: SessionProvider<Context = BrowserSession> + ?Sized,
{
    tokio::time::timeout(
        Duration::from_secs(60),
        provider.acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "probe".into(),
            state: None,
            start_url: None,
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("{name}: acquire hung"))
    .unwrap_or_else(|e| panic!("{name}: acquire: {e}"))
}

pub(crate) async fn close(provider: LocalBrowserSessionProvider, lease: Lease<BrowserSession>) {
    let _ = tokio::time::timeout(Duration::from_secs(30), lease.release()).await;
    provider.shutdown().await;
}

fn css(s: &str) -> Selector {
    Selector::Css(s.to_owned())
}

pub(crate) async fn go(session: &BrowserSession, url: &str) {
    session
        .page()
        .goto(url, GotoOptions::new().timeout(STEP))
        .await
        .unwrap_or_else(|e| panic!("goto {url}: {e}"));
}

/// The facts of the element an action on `selector` acts on (its first visible match).
async fn facts(session: &BrowserSession, selector: &str) -> ElementFacts {
    facts_of(session, selector, Reach::FirstVisible).await
}

async fn facts_of(session: &BrowserSession, selector: &str, reach: Reach) -> ElementFacts {
    session
        .inspect(&css(selector), reach, STEP)
        .await
        .unwrap_or_else(|e| panic!("inspect {selector}: {:?} {}", e.kind, e.message))
}

fn click(selector: &str) -> BrowserAction {
    BrowserAction::Click {
        selector: css(selector),
    }
}

fn type_into(selector: &str, value: &str, submit: bool) -> BrowserAction {
    BrowserAction::Type {
        selector: css(selector),
        value: SecretValue::new(value),
        submit,
    }
}

fn class_of(action: &BrowserAction, facts: &ElementFacts) -> Option<CommitClass> {
    commit_class(action, Some(facts), &CommitRules::LENIENT).map(|c| c.class)
}

/// As a read-only run judges it.
fn strict_class_of(action: &BrowserAction, facts: &ElementFacts) -> Option<CommitClass> {
    commit_class(action, Some(facts), &CommitRules::STRICT).map(|c| c.class)
}

fn press(selector: &str, key: &str) -> BrowserAction {
    BrowserAction::Press {
        selector: Some(css(selector)),
        key: key.into(),
    }
}

pub(crate) async fn eval(session: &BrowserSession, js: &str) -> Value {
    session
        .page()
        .evaluate::<(), Value>(js, None)
        .await
        .unwrap_or_else(|e| panic!("evaluate {js}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn element_facts_drive_the_commit_rule() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/corpus").as_str()).await;
    s.run(&type_into("#labelled", TYPED, false), STEP)
        .await
        .unwrap();
    let focused_before = eval(
        s,
        "() => document.activeElement && document.activeElement.id",
    )
    .await;
    let scroll_before = eval(s, "() => [scrollX, scrollY]").await;

    let submit = facts(s, "#submit").await;
    assert_eq!(submit.tag, "button");
    assert_eq!(submit.input_type.as_deref(), Some("submit"));
    assert_eq!(submit.name, "Save");
    assert!(submit.in_form && submit.form_has_submit && !submit.form_missing_required);
    assert_eq!(
        class_of(&click("#submit"), &submit),
        Some(CommitClass::SubmitControl)
    );

    let no_type = facts(s, "#no-type").await;
    assert_eq!(no_type.input_type, None, "no type attribute: None");
    assert_eq!(
        class_of(&click("#no-type"), &no_type),
        Some(CommitClass::SubmitControl)
    );

    let type_button = facts(s, "#type-button").await;
    assert_eq!(type_button.input_type.as_deref(), Some("button"));
    assert_eq!(
        class_of(&click("#type-button"), &type_button),
        Some(CommitClass::ButtonInForm)
    );

    let buy = facts(s, "#buy").await;
    assert_eq!((buy.tag.as_str(), buy.name.as_str()), ("a", "Buy now"));
    assert!(!buy.in_form);
    let verdict = commit_class(&click("#buy"), Some(&buy), &CommitRules::STRICT).unwrap();
    assert_eq!(
        (verdict.class, verdict.verb),
        (CommitClass::CommittingLabel, Some("buy"))
    );

    let next = facts(s, "#next").await;
    assert_eq!(next.name, "Next page");
    assert_eq!(class_of(&click("#next"), &next), None);

    let file = facts(s, "#file").await;
    assert!(file.is_file_input());
    assert_eq!(file.name, "CV");
    assert_eq!(
        class_of(&click("#file"), &file),
        Some(CommitClass::FileInput)
    );
    let upload = BrowserAction::Upload {
        selector: css("#file"),
        files: vec![UploadFile {
            name: "cv.txt".into(),
            mime_type: "text/plain".into(),
            bytes: b"cv".to_vec(),
        }],
    };
    assert_eq!(class_of(&upload, &file), Some(CommitClass::Upload));

    let cc = facts(s, "#cc").await;
    assert_eq!(cc.autocomplete.as_deref(), Some("cc-number"));
    assert!(
        cc.form_missing_required,
        "the card number is required and empty"
    );
    assert_eq!(
        class_of(&type_into("#cc", "4111", false), &cc),
        Some(CommitClass::CardField)
    );
    let cvc = facts(s, "#cvc").await;
    assert!(cvc.field_hints.contains(&"card-cvc".to_owned()), "{cvc:?}");
    assert_eq!(
        class_of(&type_into("#cvc", "123", false), &cvc),
        Some(CommitClass::CardField)
    );
    let exp = facts(s, "#exp").await;
    let select = BrowserAction::Select {
        selector: css("#exp"),
        value: SecretValue::new("02"),
    };
    assert_eq!(class_of(&select, &exp), Some(CommitClass::CardField));
    let pay = facts(s, "#pay-submit").await;
    assert_eq!(pay.name, "Pay 20 EUR");
    assert_eq!(
        class_of(&click("#pay-submit"), &pay),
        Some(CommitClass::SubmitControl)
    );

    let q = facts(s, "#q").await;
    assert_eq!(q.input_type.as_deref(), Some("search"));
    assert_eq!(q.name, "Search the site");
    assert!(q.in_form && q.form_has_submit, "an image input submits");
    assert!(q.search, "type=search in a role=search form");
    assert_eq!(q.form_method.as_deref(), Some("get"), "no method: GET");
    assert_eq!(class_of(&type_into("#q", "shoes", false), &q), None);
    // A GET form's submission is a navigation: neither its Enter nor its button commits.
    assert_eq!(strict_class_of(&type_into("#q", "shoes", true), &q), None);
    assert_eq!(submit.form_method.as_deref(), Some("post"));
    assert_eq!(
        facts(s, "#pay-submit").await.form_method.as_deref(),
        Some("post")
    );
    let go_button = facts(s, "input[type=image]").await;
    assert_eq!(go_button.name, "Go");
    assert!(go_button.is_submit_control());

    let send = facts(s, "#send").await;
    assert_eq!(send.role.as_deref(), Some("button"));
    assert_eq!(send.name, "Send message");
    assert_eq!(
        class_of(&click("#send"), &send),
        Some(CommitClass::CommittingLabel)
    );

    let by = facts(s, "#by").await;
    assert_eq!(by.name, "Delete my account", "aria-labelledby first");
    assert_eq!(
        class_of(&click("#by"), &by),
        Some(CommitClass::CommittingLabel)
    );

    let outside = facts(s, "#outside").await;
    assert!(!outside.in_form);
    assert_eq!(class_of(&click("#outside"), &outside), None);
    assert_eq!(
        strict_class_of(&click("#outside"), &outside),
        None,
        "Open menu"
    );

    // Names drawn by CSS count, as the accessibility tree shows them.
    let like = facts(s, "#css-like").await;
    assert_eq!(like.name, "Like");
    assert_eq!(
        strict_class_of(&click("#css-like"), &like),
        Some(CommitClass::UnrecognisedButton)
    );
    assert_eq!(class_of(&click("#css-like"), &like), None);
    assert_eq!(facts(s, "#css-attr").await.name, "Follow");
    // A click inside a button is the button's.
    let star = facts(s, "#star-icon").await;
    assert_eq!(
        (star.tag.as_str(), star.name.as_str()),
        ("button", "★ Star")
    );
    // Implicit submission: one text field, no submit control.
    let only = facts(s, "#only").await;
    assert_eq!(
        (only.form_blocking_fields, only.form_has_submit),
        (1, false)
    );
    assert_eq!(
        class_of(&press("#only", "Enter"), &only),
        Some(CommitClass::EnterSubmitsForm)
    );
    // A label is its control's; a shadow button sits in its host's form.
    let label = facts(s, "#go-label").await;
    assert_eq!(
        (label.tag.as_str(), label.input_type.as_deref()),
        ("input", Some("submit"))
    );
    assert!(label.in_form);
    assert_eq!(
        class_of(&click("#go-label"), &label),
        Some(CommitClass::SubmitControl)
    );
    let inner = facts(s, "#inner").await;
    assert_eq!((inner.tag.as_str(), inner.in_form), ("button", true));
    assert_eq!(inner.form_method.as_deref(), Some("post"));
    assert_eq!(
        class_of(&click("#inner"), &inner),
        Some(CommitClass::SubmitControl)
    );
    // Editors, disclosures, search landmarks.
    let chat = facts(s, "#chat").await;
    assert!(chat.editable && !chat.in_form);
    assert_eq!(
        strict_class_of(&press("#chat", "Enter"), &chat),
        Some(CommitClass::EnterInEditor)
    );
    let accordion = facts(s, "#accordion").await;
    assert!(accordion.disclosure);
    assert_eq!(strict_class_of(&click("#accordion"), &accordion), None);
    let loose = facts(s, "#loose").await;
    assert_eq!(
        strict_class_of(&press("#loose", "Shift+Enter"), &loose),
        Some(CommitClass::EnterInEditor)
    );
    let site_search = facts(s, "#site-search").await;
    assert!(site_search.search);
    assert_eq!(
        strict_class_of(&press("#site-search", "Enter"), &site_search),
        None
    );

    let notes = facts(s, "#notes").await;
    assert_eq!(
        (notes.tag.as_str(), notes.name.as_str()),
        ("textarea", "Notes")
    );

    // The labelled field: its label, never its value (which is really in the field).
    let labelled = facts(s, "#labelled").await;
    assert_eq!(labelled.name, "Secret code");
    assert_eq!(
        labelled.field_hints,
        vec!["code".to_owned(), "labelled".to_owned()]
    );
    assert_eq!(
        eval(s, "() => document.getElementById('labelled').value").await,
        Value::from(TYPED)
    );
    // Nor the value of a hidden input (a token), alone or inside a link.
    let token = facts_of(s, "#token", Reach::First).await;
    assert_eq!(
        (token.input_type.as_deref(), token.name.as_str()),
        (Some("hidden"), "")
    );
    assert_eq!(facts(s, "#with-token").await.name, "Read on");
    let mut everything = String::new();
    for selector in [
        "#labelled",
        "#submit",
        "#no-type",
        "#profile",
        "#token",
        "#with-token",
    ] {
        everything.push_str(&format!("{:?}", facts_of(s, selector, Reach::First).await));
    }
    assert!(
        !everything.to_lowercase().contains(&TYPED.to_lowercase()),
        "a typed value leaked into the facts"
    );
    assert!(
        !everything.to_lowercase().contains("secret-123"),
        "a hidden value leaked into the facts"
    );

    // Reading acted on nothing.
    assert_eq!(
        eval(
            s,
            "() => document.activeElement && document.activeElement.id"
        )
        .await,
        focused_before
    );
    assert_eq!(eval(s, "() => [scrollX, scrollY]").await, scroll_before);

    // A missing element is NotFound, within its deadline.
    let started = Instant::now();
    let missing = s
        .inspect(
            &css("#nowhere"),
            Reach::FirstVisible,
            Duration::from_millis(800),
        )
        .await
        .unwrap_err();
    assert_eq!(missing.kind, StepFailureKind::NotFound);
    assert!(started.elapsed() < Duration::from_secs(3));

    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_read_what_the_pause_detector_needs() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();

    go(s, site.url("/login").as_str()).await;
    let login = s.signals(STEP).await.unwrap();
    assert_eq!(login.url, site.url("/login").as_str());
    assert_eq!(login.status, Some(200));
    assert!(login.text.starts_with("sign in "), "{:?}", &login.text);
    assert_eq!(login.password_fields, 1, "the hidden one does not count");
    assert_eq!(login.forms.len(), 1);
    assert!(login.forms[0].has_password);
    assert_eq!(login.forms[0].submit_names, vec!["Sign in".to_owned()]);
    assert_eq!(login.forms[0].fields, 1, "the email field");
    assert!(!login.captcha && !login.one_time_code);

    go(s, site.url("/captcha").as_str()).await;
    let captcha = s.signals(STEP).await.unwrap();
    assert!(captcha.captcha);
    assert_eq!(captcha.password_fields, 0);
    go(s, site.url("/invisible-captcha").as_str()).await;
    assert!(
        !s.signals(STEP).await.unwrap().captcha,
        "an invisible reCAPTCHA asks nothing of a person"
    );

    go(s, site.url("/status/403").as_str()).await;
    let forbidden = s.signals(STEP).await.unwrap();
    assert_eq!(forbidden.status, Some(403));
    assert!(forbidden.text.contains("status 403"));

    go(s, site.url("/upload").as_str()).await;
    let upload = s.signals(STEP).await.unwrap();
    assert_eq!(
        upload.file_inputs, 2,
        "visually hidden inputs count, disabled ones do not"
    );
    assert_eq!(upload.forms.len(), 1, "the hidden form is not visible");
    assert_eq!(upload.forms[0].submit_names, vec!["Apply now".to_owned()]);
    assert_eq!(
        upload.forms[0].fields, 3,
        "text, email and textarea; not search or hidden"
    );

    go(s, site.url("/otp").as_str()).await;
    let otp = s.signals(STEP).await.unwrap();
    assert!(otp.one_time_code);
    assert!(otp.text.contains("we sent you a code"));

    go(s, site.url("/checkout").as_str()).await;
    let checkout = s.signals(STEP).await.unwrap();
    assert_eq!(
        checkout.card_fields, 2,
        "number and expiry; the CVC is not visible, the city is no card field"
    );
    assert_eq!(
        checkout.forms[0].submit_names,
        vec!["Place order".to_owned()]
    );

    close(provider, lease).await;
}

/// The checkpoint's read with the next step's element: the same signals and the same facts
/// as the two reads it replaces, and no wait for an element that is not there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_ahead_answer_as_signals_and_inspect_do_and_never_wait() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/login").as_str()).await;

    let signals = s.signals(STEP).await.unwrap();
    let facts = facts(s, "form button").await;
    let (ahead_signals, ahead_facts) = s
        .signals_ahead(&css("form button"), Reach::FirstVisible, STEP)
        .await
        .unwrap();
    assert!(ahead_signals == signals, "the same signals as signals()");
    assert_eq!(ahead_facts, Some(facts), "the same facts as inspect()");
    assert_eq!(signals.forms[0].submit_names, vec!["Sign in".to_owned()]);

    let started = Instant::now();
    let (missing_signals, missing_facts) = s
        .signals_ahead(&css("#never"), Reach::FirstVisible, STEP)
        .await
        .unwrap();
    assert!(missing_signals == signals, "the signals alone");
    assert_eq!(missing_facts, None, "nothing is there: no facts");
    assert!(
        started.elapsed() < STEP / 4,
        "waited for the element: {:?}",
        started.elapsed()
    );
    close(provider, lease).await;
}

/// A page that looks for the probe its document holds and tries to put a lying one in its
/// place (facts of a harmless element for every element, fields confirmed blurred).
const IMPOSTOR: &str = r#"<!doctype html><title>impostor</title>
<form action="/saved" method="post"><input id="pw" type="password" name="pw">
<button id="go" type="submit">Sign in</button></form>
<script>
  const harmless = () => ({ tag: 'div', inputType: null, role: null, name: 'harmless',
    inForm: false, formHasSubmit: false, formMissingRequired: false, formMethod: null,
    formBlockingFields: 0, editable: false, search: false, disclosure: false,
    autocomplete: null, fieldHints: [] });
  const fake = Object.freeze({ inspect: harmless, focused: () => ({ kind: 'none' }),
    redactApply: () => ({ fields: 0, unconfirmed: 0, url: location.href }),
    redactFinish: () => ({ fields: 0, unconfirmed: 0, url: location.href }) });
  window.__names = Object.getOwnPropertyNames(window).filter((n) => n.startsWith('__abr_probe_'));
  window.__replaced = 0;
  for (const n of window.__names) {
    try { Object.defineProperty(window, n, { value: fake }); } catch (e) {}
    try { window[n] = fake; } catch (e) {}
    try { delete window[n]; } catch (e) {}
    if (window[n] === fake || !(n in window)) window.__replaced++;
  }
</script>"#;

/// The probe is in every document of a local context before the page's own scripts run
/// (reads then send only the call, not its 33 kB source), and a page that finds it cannot
/// replace, change or delete it: the facts stay the element's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_cannot_replace_the_probe_its_document_holds() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/impostor").as_str()).await;
    assert_eq!(
        eval(s, "() => window.__names.length").await,
        1,
        "the probe was there before the page's script"
    );
    assert_eq!(eval(s, "() => window.__replaced").await, 0, "replaced");
    let field = facts(s, "#pw").await;
    assert_eq!(field.tag, "input");
    assert_eq!(field.input_type.as_deref(), Some("password"));
    assert!(field.in_form && field.form_has_submit, "{field:?}");
    let button = facts(s, "#go").await;
    assert_eq!(button.name, "Sign in");
    assert!(button.form_has_submit, "{button:?}");
    assert_eq!(
        class_of(&click("#go"), &button),
        Some(CommitClass::SubmitControl),
        "the commit rule sees the real submit button"
    );
    let (frame, _) = frame(s).await;
    assert_eq!(
        frame.blurred, 1,
        "the real redaction blurred the password field"
    );
    close(provider, lease).await;
}

/// Two elements match `.go`: a hidden harmless link first, a visible "Delete account"
/// submit button second. A click acts on the visible one.
const TWINS: &str = r##"<!doctype html><title>twins</title>
<a class="go" href="#more" hidden>Show more</a>
<form action="/delete" method="post"><button class="go" type="submit">Delete account</button></form>
<script>
  window.__clicked = [];
  document.addEventListener('click', (e) => {
    window.__clicked.push(e.target.textContent);
    e.preventDefault();
  }, true);
</script>"##;

/// A page cannot have the guard judge one element and the action hit another: the facts
/// read before a click are those of the element the click acts on (the first visible
/// match), not of a hidden harmless element placed first under the same selector.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_element_judged_is_the_element_acted_on_not_a_hidden_twin() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/twins").as_str()).await;
    let action = click(".go");
    let reach = Reach::of(&action);
    let judged = s.inspect(&css(".go"), reach, STEP).await.unwrap();
    assert_eq!(judged.name, "Delete account", "{judged:?}");
    assert_eq!(
        class_of(&action, &judged),
        Some(CommitClass::SubmitControl),
        "the commit rule sees the button the click hits"
    );
    let (_, ahead) = s.signals_ahead(&css(".go"), reach, STEP).await.unwrap();
    assert_eq!(ahead.map(|f| f.name), Some("Delete account".to_owned()));
    s.run(&action, STEP).await.unwrap();
    assert_eq!(
        eval(s, "() => window.__clicked").await,
        serde_json::json!(["Delete account"]),
        "the click hit the element that was judged"
    );
    // A read (an extract, an upload's file input) still looks at the first match.
    let first = s.inspect(&css(".go"), Reach::First, STEP).await.unwrap();
    assert_eq!(first.name, "Show more");
    close(provider, lease).await;
}

/// A decoded frame: grey levels, row-major.
struct Grey {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

fn decode(jpeg: &[u8]) -> Grey {
    let options = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::Luma);
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(jpeg), options);
    let pixels = decoder.decode().expect("a JPEG");
    let (width, height) = decoder.dimensions().unwrap();
    assert_eq!(pixels.len(), width * height, "one grey byte per pixel");
    Grey {
        width,
        height,
        pixels,
    }
}

/// A box in frame pixels.
#[derive(Debug, Clone, Copy)]
struct Box {
    x: usize,
    y: usize,
    width: usize,
    height: usize,
}

/// Mean absolute difference of two frames' grey levels inside `area`.
fn mean_abs_diff(a: &Grey, b: &Grey, area: Box) -> f64 {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let mut total = 0u64;
    for y in area.y..area.y + area.height {
        for x in area.x..area.x + area.width {
            let i = y * a.width + x;
            total += u64::from(a.pixels[i].abs_diff(b.pixels[i]));
        }
    }
    total as f64 / (area.width * area.height) as f64
}

/// How much of the detail (grey-level changes from pixel to pixel) in `area` of `a`
/// differs from `b`'s: the mean absolute difference of their horizontal gradients. Text
/// is edges; a blur of it has almost none.
fn detail_diff(a: &Grey, b: &Grey, area: Box) -> f64 {
    let mut total = 0u64;
    for y in area.y..area.y + area.height {
        for x in area.x..area.x + area.width - 1 {
            let i = y * a.width + x;
            let ga = i32::from(a.pixels[i + 1]) - i32::from(a.pixels[i]);
            let gb = i32::from(b.pixels[i + 1]) - i32::from(b.pixels[i]);
            total += u64::from((ga - gb).unsigned_abs());
        }
    }
    total as f64 / ((area.width - 1) * area.height) as f64
}

async fn unredacted(session: &BrowserSession) -> Grey {
    let options = ScreenshotOptions::builder()
        .screenshot_type(ScreenshotType::Jpeg)
        .quality(70)
        .scale(Scale::Css)
        .build();
    decode(&session.page().screenshot(options).await.unwrap())
}

async fn frame(session: &BrowserSession) -> (RedactedFrame, Duration) {
    let started = Instant::now();
    let frame = session
        .redacted_frame(MAX_FRAME_BYTES, &PageRedaction::default(), STEP)
        .await
        .unwrap_or_else(|e| panic!("redacted frame: {e}"));
    (frame, started.elapsed())
}

/// The computed filter and text fill of `#id`, and how many sheets the document adopted.
async fn styles(session: &BrowserSession, id: &str) -> Value {
    eval(
        session,
        &format!(
            "() => {{ const s = getComputedStyle(document.getElementById('{id}')); \
             return [s.filter, s.webkitTextFillColor, document.adoptedStyleSheets.length]; }}"
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_canary_cannot_be_read_in_a_redacted_frame() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/canary").as_str()).await;
    let before = styles(s, "canary").await;
    assert_eq!(before[0], "none");

    let rect = eval(
        s,
        "() => { const r = document.getElementById('canary').getBoundingClientRect(); \
         return [r.x, r.y, r.width, r.height, devicePixelRatio, innerWidth, innerHeight]; }",
    )
    .await;
    let num = |i: usize| rect[i].as_f64().unwrap();
    // Frames are at CSS scale: a frame pixel is a CSS pixel whatever the device ratio.
    let (vw, vh) = (num(5) as usize, num(6) as usize);
    // Inside the border.
    let area = Box {
        x: num(0) as usize + 4,
        y: num(1) as usize + 4,
        width: num(2) as usize - 8,
        height: num(3) as usize - 8,
    };

    let plain_empty = unredacted(s).await;
    let (empty, empty_took) = frame(s).await;
    assert_eq!(empty.blurred, 1);
    assert_eq!(empty.url, site.url("/canary").as_str());
    assert_eq!(styles(s, "canary").await, before, "the blur came off");

    s.run(&type_into("#canary", CANARY, false), STEP)
        .await
        .unwrap();
    let (canary, canary_took) = frame(s).await;
    assert_eq!(
        styles(s, "canary").await,
        before,
        "the blur came off again (and the sheet with it)"
    );
    let plain_canary = unredacted(s).await;
    assert_eq!(
        eval(s, "() => document.getElementById('canary').value").await,
        Value::from(CANARY),
        "the canary is in the field"
    );

    let (empty_px, canary_px) = (decode(&empty.jpeg), decode(&canary.jpeg));
    assert_eq!(
        (empty_px.width, empty_px.height),
        (vw, vh),
        "the viewport only, at CSS scale"
    );
    let redacted = mean_abs_diff(&empty_px, &canary_px, area);
    let redacted_detail = detail_diff(&empty_px, &canary_px, area);
    let control = mean_abs_diff(&plain_empty, &plain_canary, area);
    let control_detail = detail_diff(&plain_empty, &plain_canary, area);
    eprintln!(
        "canary: redacted diff {redacted:.2} (detail {redacted_detail:.2}), unredacted \
         {control:.2} (detail {control_detail:.2}); frames {} and {} bytes, taken in {:?} \
         and {:?}",
        empty.jpeg.len(),
        canary.jpeg.len(),
        empty_took,
        canary_took
    );
    assert!(
        control > 10.0 && control_detail > 5.0,
        "the comparison can fail: the canary shows without the blur ({control:.2}, \
         {control_detail:.2})"
    );
    assert!(
        redacted < 1.5 && redacted_detail < 1.5,
        "the canary shows through the blur: {redacted:.2} (detail {redacted_detail:.2})"
    );
    // Text outside any field is untouched: the frame differs from the page there only by
    // the JPEG's noise.
    let outside = Box {
        x: 40,
        y: 204,
        width: 300,
        height: 20,
    };
    assert!(mean_abs_diff(&canary_px, &plain_canary, outside) < 3.0);
    assert!(empty.jpeg.len() <= MAX_FRAME_BYTES);

    close(provider, lease).await;
}

/// The frame is the viewport where the page is scrolled to, as a plain screenshot shows it,
/// and stays that when the page's script lies about its size (the frame is captured in a
/// region the page's answer names, so a lie must not make it another or a huge one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_is_the_viewport_as_scrolled_whatever_the_page_says_its_size_is() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/canary").as_str()).await;
    // A tall page of numbered lines, scrolled to the middle.
    eval(
        s,
        "() => { const box = document.createElement('div'); \
         box.style.cssText = 'position:absolute;left:40px;top:300px;font:24px monospace'; \
         for (let i = 0; i < 200; i++) { const line = document.createElement('div'); \
         line.textContent = 'line ' + i + ' '.repeat(i % 7) + '#'.repeat(i % 13); \
         box.append(line); } document.body.append(box); window.scrollTo(0, 1500); \
         return scrollY; }",
    )
    .await;
    let size = eval(s, "() => [innerWidth, innerHeight, scrollY]").await;
    let (vw, vh) = (
        size[0].as_u64().unwrap() as usize,
        size[1].as_u64().unwrap() as usize,
    );
    assert_eq!(size[2], 1500, "the page scrolled");
    let whole = Box {
        x: 0,
        y: 0,
        width: vw,
        height: vh,
    };
    let plain = unredacted(s).await;
    let (scrolled, _) = frame(s).await;
    let scrolled_px = decode(&scrolled.jpeg);
    assert_eq!((scrolled_px.width, scrolled_px.height), (vw, vh));
    let same = mean_abs_diff(&scrolled_px, &plain, whole);

    // The comparison can fail: the top of the page is another picture.
    eval(s, "() => window.scrollTo(0, 0)").await;
    let top = unredacted(s).await;
    let other = mean_abs_diff(&scrolled_px, &top, whole);
    eprintln!("scrolled frame vs its screenshot {same:.2}, vs the top of the page {other:.2}");
    assert!(other > 5.0, "the top differs from the middle: {other:.2}");
    assert!(
        same < 3.0,
        "the frame is not the scrolled viewport: {same:.2}"
    );

    // A page that lies about its size and zoom.
    eval(
        s,
        "() => { window.scrollTo(0, 1500); \
         Object.defineProperty(window, 'innerWidth', { get: () => 1e9 }); \
         Object.defineProperty(window, 'innerHeight', { get: () => -5 }); \
         Object.defineProperty(window, 'devicePixelRatio', { get: () => 1e-9 }); }",
    )
    .await;
    let (lied, _) = frame(s).await;
    let lied_px = decode(&lied.jpeg);
    assert_eq!(
        (lied_px.width, lied_px.height),
        (vw, vh),
        "the viewport, not what the page claims"
    );
    let after = mean_abs_diff(&lied_px, &plain, whole);
    assert!(after < 3.0, "the frame is not the viewport: {after:.2}");

    close(provider, lease).await;
}

/// A frame carries the watch's mark of its page, and `unchanged_since` answers yes only while
/// the page provably still looks the same: every kind of change answers no, and so does a
/// page holding what changes unseen (a running animation, a canvas, a custom element).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_is_unchanged_since_a_frame_only_while_nothing_changed() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/canary").as_str()).await;
    eval(s, "() => { document.body.style.height = '5000px'; }").await;
    let mark = |frame: RedactedFrame| frame.mark.expect("a frame carries its page's mark");
    let first = mark(frame(s).await.0);
    assert!(
        s.unchanged_since(&first, STEP).await,
        "a quiet page changed"
    );
    assert!(
        s.unchanged_since(&first, STEP).await,
        "asking changed the page"
    );
    assert_eq!(
        mark(frame(s).await.0),
        first,
        "a frame's own blur counted as a change"
    );
    assert!(!s.unchanged_since("made-up:0:x", STEP).await);

    // Each change, then a fresh frame is unchanged again.
    let changes: [(&str, &str); 5] = [
        (
            "a node added",
            "() => { document.body.append(document.createElement('p')); }",
        ),
        (
            "an attribute",
            "() => { document.body.dataset.step = '2'; }",
        ),
        ("a text", "() => { document.title = document.title + '!'; }"),
        ("a scroll", "() => { window.scrollTo(0, 120); }"),
        (
            "a same-document navigation",
            "() => { history.pushState(null, '', '#moved'); }",
        ),
    ];
    for (what, js) in changes {
        let before = mark(frame(s).await.0);
        assert!(s.unchanged_since(&before, STEP).await, "{what}: before");
        eval(s, js).await;
        assert!(!s.unchanged_since(&before, STEP).await, "{what}: unseen");
    }
    // Input, as a step (or a person in the live view) gives it.
    let before = mark(frame(s).await.0);
    s.run(&type_into("#canary", "x", false), STEP)
        .await
        .unwrap();
    assert!(!s.unchanged_since(&before, STEP).await, "typing: unseen");

    // What changes without the DOM changing: never unchanged.
    let unwatchable: [(&str, &str); 3] = [
        (
            "a running animation",
            "() => { const st = document.createElement('style'); \
             st.textContent = '@keyframes spin { to { transform: rotate(1turn); } } \
             #spin { animation: spin 30s linear infinite; width: 10px; height: 10px; }'; \
             document.head.append(st); const d = document.createElement('div'); \
             d.id = 'spin'; document.body.prepend(d); }",
        ),
        (
            "a canvas",
            "() => { document.getElementById('spin').remove(); \
             document.body.append(document.createElement('canvas')); }",
        ),
        (
            "a custom element",
            "() => { document.querySelector('canvas').remove(); \
             document.body.append(document.createElement('x-widget')); }",
        ),
    ];
    for (what, js) in unwatchable {
        eval(s, js).await;
        // Let its start (an event) pass before the frame.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let before = mark(frame(s).await.0);
        assert!(!s.unchanged_since(&before, STEP).await, "{what}");
    }
    eval(s, "() => { document.querySelector('x-widget').remove(); }").await;
    let before = mark(frame(s).await.0);
    assert!(s.unchanged_since(&before, STEP).await, "quiet again");

    // Another document: its probe never saw the mark.
    go(s, site.url("/plain").as_str()).await;
    assert!(!s.unchanged_since(&before, STEP).await, "another document");
    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_that_cannot_be_redacted_are_not_taken() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();

    // A field whose blur does not hold: no frame, and the blur is off the other field.
    go(s, site.url("/unconfirmed").as_str()).await;
    let error = s
        .redacted_frame(MAX_FRAME_BYTES, &PageRedaction::default(), STEP)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        FrameError::BlurUnconfirmed {
            fields: 2,
            unconfirmed: 1
        }
    );
    assert_eq!(styles(s, "plain").await[0], "none");
    assert_eq!(styles(s, "plain").await[2], 0);

    // Over the cap at every quality: no frame, and the blur is off.
    go(s, site.url("/canary").as_str()).await;
    assert_eq!(
        s.redacted_frame(500, &PageRedaction::default(), STEP)
            .await
            .unwrap_err(),
        FrameError::TooLarge { cap: 500 }
    );
    assert_eq!(styles(s, "canary").await[0], "none");
    assert_eq!(styles(s, "canary").await[2], 0);

    // Fields in a shadow root, a same-origin frame, an editable region, and a cross-origin
    // frame (blurred whole) are all counted and confirmed; a hidden input is not a field.
    go(s, site.url("/nested").as_str()).await;
    let (nested, _) = frame(s).await;
    assert_eq!(
        nested.blurred, 6,
        "top input, shadow select, editor, frame input and textarea, the other frame"
    );
    let restored = eval(
        s,
        "() => [document.getElementById('other').getAttribute('style'), \
         getComputedStyle(document.getElementById('other')).filter, \
         getComputedStyle(document.getElementById('host').shadowRoot.querySelector('select')).filter, \
         document.getElementById('same').contentDocument.adoptedStyleSheets.length, \
         '__abrRedaction' in window]",
    )
    .await;
    assert_eq!(
        restored,
        serde_json::json!([null, "none", "none", 0, false])
    );

    // A field that appears between the confirmation and the capture, where no sheet
    // reaches: the check after the capture throws the frame away.
    go(s, site.url("/late").as_str()).await;
    let error = s
        .redacted_frame(MAX_FRAME_BYTES, &PageRedaction::default(), STEP)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        FrameError::BlurUnconfirmed {
            fields: 3,
            unconfirmed: 1
        },
        "first, the opaque frame, and the late field"
    );
    assert_eq!(
        eval(
            s,
            "() => [document.getElementById('host').shadowRoot.querySelectorAll('input').length, \
             document.getElementById('opaque').getAttribute('style'), \
             getComputedStyle(document.getElementById('first')).filter]"
        )
        .await,
        serde_json::json!([1, null, "none"])
    );
    // Once it is there, the next frame covers it.
    let (late, _) = frame(s).await;
    assert_eq!(late.blurred, 3);

    close(provider, lease).await;
}

/// Refuses one host.
#[derive(Debug)]
struct Refuse(&'static str, AtomicUsize);

impl Refuse {
    fn new(host: &'static str) -> Arc<Self> {
        Arc::new(Self(host, AtomicUsize::new(0)))
    }
}

impl SiteFilter for Refuse {
    fn may_open(&self, host: &str) -> bool {
        self.1.fetch_add(1, Ordering::SeqCst);
        host != self.0
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_site_filter_refuses_documents_of_refused_hosts() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();

    // Control: without a filter the link leads to the other host.
    go(s, site.url("/links").as_str()).await;
    s.run(&click("#away"), STEP).await.unwrap();
    s.run(
        &BrowserAction::Wait {
            selector: None,
            url: Some("/landing".into()),
            text: None,
        },
        STEP,
    )
    .await
    .unwrap();
    assert_eq!(site.seen("localhost", "/landing"), 1);

    let filter = Refuse::new("localhost");
    s.filter_sites(filter.clone()).await.unwrap();
    go(s, site.url("/links").as_str()).await;
    assert!(
        site.seen("localhost", "/pixel.gif") >= 2,
        "other requests to the host go on"
    );
    // A click on the link: the navigation is refused before it is sent.
    s.run(&click("#away"), STEP).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Navigating there directly fails too.
    let direct = s
        .run(
            &BrowserAction::Navigate {
                url: url::Url::parse(&site.other("/landing")).unwrap(),
            },
            STEP,
        )
        .await
        .unwrap_err();
    assert_eq!(direct.kind, StepFailureKind::Navigation);
    assert!(
        direct.message.contains("ERR_BLOCKED_BY_CLIENT"),
        "{direct:?}"
    );
    // So does a new window, opened from a page loaded right after the refusal: the failed
    // step waited for Chromium's error page to settle, so this navigation is not interrupted.
    go(s, site.url("/links").as_str()).await;
    eval(
        s,
        &format!("() => {{ window.open('{}'); }}", site.other("/landing")),
    )
    .await;
    // So does a frame.
    go(s, site.url("/framed").as_str()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        site.seen("localhost", "/landing"),
        1,
        "the refused host never got the request"
    );
    // The allowed host still loads.
    s.run(
        &BrowserAction::Navigate {
            url: site.url("/landing"),
        },
        STEP,
    )
    .await
    .unwrap();
    assert_eq!(site.seen("127.0.0.1", "/landing"), 1);

    // A redirect of an allowed page to the refused host: Playwright routes only a chain's
    // first request, so the document's next hop is the redirect gate's, and it never leaves.
    redirect_is_refused(s, &site, 1).await;

    close(provider, lease).await;
}

/// A network gate that lets everything go (a read-write run's, as far as the site filter is
/// concerned).
mod lets_go {
    #[derive(Debug)]
    pub(super) struct LetsGo;

    #[async_trait::async_trait]
    impl abr_core::guard::RequestGate for LetsGo {
        async fn admit(&self, _request: &abr_core::guard::OutgoingRequest<'_>) -> bool {
            true
        }

        fn refuses_writes(&self) -> bool {
            false
        }

        fn websockets_guarded(&self) -> bool {
            false
        }

        fn admit_websocket(&self, _url: &str) -> bool {
            true
        }

        async fn socket_opened(&self, _url: &str) {}
    }
}

/// Issue 34 (LOW): a popup a page opens on an allowed page that redirects to a refused host
/// never reaches it (the page-level redirect gate sees only the session's own page; the
/// browser's net judges every page's document hops). On main the popup landed there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_popups_redirect_to_a_refused_host_never_reaches_it() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    s.guard_network(Arc::new(lets_go::LetsGo)).await.unwrap();
    s.filter_sites(Refuse::new("localhost")).await.unwrap();
    go(s, site.url("/links").as_str()).await;
    eval(
        s,
        &format!("() => {{ window.open('{}'); }}", site.url("/redirect")),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        site.seen("localhost", "/landing"),
        0,
        "a popup's redirect reached the refused host"
    );
    close(provider, lease).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_site_filter_keeps_the_egress_proxy_and_costs_little() {
    let site = Site::start().await;
    let (victim_addr, reached, victim_task) = victim().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    let gallery = site.url("/gallery");

    let load = async |rounds: u32| {
        let started = Instant::now();
        for _ in 0..rounds {
            go(s, gallery.as_str()).await;
        }
        started.elapsed() / rounds
    };
    let cacheable = site.url("/cacheable");
    load(2).await;
    let bare = load(10).await;
    go(s, cacheable.as_str()).await;
    go(s, cacheable.as_str()).await;
    let cached_bare = site.seen("127.0.0.1", "/cached.gif");
    s.filter_sites(Refuse::new("nowhere.example"))
        .await
        .unwrap();
    load(2).await;
    let routed = load(10).await;
    go(s, cacheable.as_str()).await;
    go(s, cacheable.as_str()).await;
    eprintln!(
        "filter: a cacheable image loaded twice reached the site {cached_bare} time(s) without \
         the route, {} more with it",
        site.seen("127.0.0.1", "/cached.gif") - cached_bare
    );
    eprintln!(
        "filter: a page of 41 requests loads in {bare:?} without the route, {routed:?} with it \
         ({:?} per request)",
        routed.saturating_sub(bare) / 41
    );
    assert_eq!(site.seen("127.0.0.1", "/pixel.gif"), 24 * 40);

    // The filter allows it; the egress proxy still refuses it.
    let refused = s
        .run(
            &BrowserAction::Navigate {
                url: url::Url::parse(&format!("http://{victim_addr}/")).unwrap(),
            },
            STEP,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.kind, StepFailureKind::Navigation);
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the proxy let it through"
    );

    close(provider, lease).await;
    victim_task.abort();
}

/// A loopback service the egress policy does not allow: counts the connections it gets.
async fn victim() -> (SocketAddr, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let reached = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&reached);
    let task = tokio::spawn(async move {
        while let Ok((_socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    (addr, reached, task)
}

/// On a remote session the egress URL gate routes every request too: the filter refuses
/// first, and leaves what it allows to the gate (which still refuses what egress refuses).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_site_filter_defers_to_the_egress_url_gate() {
    let site = Site::start().await;
    let (victim_addr, reached, victim_task) = victim().await;
    let double = SteelDouble::start(SteelOptions::default())
        .await
        .expect("start the Steel double");
    let provider = SteelSessionProvider::new(SteelProviderConfig {
        rest_timeout: Duration::from_secs(20),
        connect_timeout: Duration::from_secs(10),
        navigation_timeout: Duration::from_secs(10),
        egress: Some(site.egress()),
        ..SteelProviderConfig::oss(double.base_url())
    });
    let lease = lease_of(&provider, "steel").await;
    let s = lease.context();
    let filter = Refuse::new("localhost");
    s.filter_sites(filter.clone()).await.unwrap();

    // Allowed by both: it loads (the filter let the gate continue it).
    s.run(
        &BrowserAction::Navigate {
            url: site.url("/links"),
        },
        STEP,
    )
    .await
    .unwrap();
    assert!(filter.1.load(Ordering::SeqCst) >= 1, "the filter was asked");
    assert!(
        site.seen("localhost", "/pixel.gif") >= 1,
        "a subresource of the refused host goes on"
    );
    // Refused by the filter.
    let refused = s
        .run(
            &BrowserAction::Navigate {
                url: url::Url::parse(&site.other("/landing")).unwrap(),
            },
            STEP,
        )
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("ERR_BLOCKED_BY_CLIENT"),
        "{refused:?}"
    );
    assert_eq!(site.seen("localhost", "/landing"), 0);
    // Allowed by the filter, refused by the gate.
    let gated = s
        .run(
            &BrowserAction::Navigate {
                url: url::Url::parse(&format!("http://{victim_addr}/")).unwrap(),
            },
            STEP,
        )
        .await
        .unwrap_err();
    assert_eq!(gated.kind, StepFailureKind::Navigation);
    assert_eq!(reached.load(Ordering::SeqCst), 0, "the gate was skipped");

    let _ = tokio::time::timeout(Duration::from_secs(30), lease.release()).await;
    drop(provider);
    double.shutdown().await;
    victim_task.abort();
}

/// A page for a brain: buttons, a link, fields (one already filled, one typed into by the
/// test), a list box, a checkbox, hidden and invisible controls, a button in a shadow root,
/// and a script that copies a reference onto another element when asked.
const SNAPSHOT_PAGE: &str = r#"<!doctype html><html><head><title>Snapshot page</title></head><body>
<h1>Compose</h1><p>Say something nice.</p>
<a id="home" href="/links">Home</a>
<form action="/nowhere" method="post">
  <label for="c">Comment</label><input id="c" name="comment" value="prefilled-secret-4410">
  <textarea id="t" aria-label="Body"></textarea>
  <select id="s" aria-label="Audience"><option value="">Choose</option><option>Friends</option><option>Everyone</option></select>
  <label><input id="x" type="checkbox" checked> Notify me</label>
  <input type="hidden" name="csrf" value="hidden-token-991">
  <button id="post" type="submit">Post</button>
</form>
<button id="gone" style="display:none">Invisible</button>
<div id="host"></div>
<button id="other" onclick="document.title='other clicked'">Other</button>
<script>
  document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<button id="deep">Deep</button>';
  window.copyRef = (attr) => {
    const post = document.getElementById('post');
    document.getElementById('other').setAttribute(attr, post.getAttribute(attr));
  };
</script>
</body></html>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_lists_what_a_brain_can_act_on_by_stable_reference_and_never_a_value() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/snapshot").as_str()).await;
    s.run(&type_into("#t", TYPED, false), STEP).await.unwrap();
    let request = abr_core::guard::SnapshotRequest::new("data-abr-k3y".into());
    let first = s.snapshot(&request, STEP).await.unwrap();
    assert_eq!(first.title, "Snapshot page");
    assert!(first.text.contains("Say something nice."), "{}", first.text);
    let json = serde_json::to_string(&first).unwrap();
    for secret in [TYPED, "prefilled-secret-4410", "hidden-token-991"] {
        assert!(!json.contains(secret), "{secret} leaked: {json}");
    }
    let by_name = |snap: &abr_protocol::Snapshot, name: &str| {
        snap.elements
            .iter()
            .find(|e| e.name == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name:?} in {:?}", snap.elements))
    };
    let names: Vec<&str> = first.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Home",
            "Comment",
            "Body",
            "Audience",
            "Notify me",
            "Post",
            "Other",
            "Deep"
        ],
        "visible actionable elements in document order, shadow roots last"
    );
    let comment = by_name(&first, "Comment");
    assert_eq!(
        (comment.role.as_str(), comment.value.as_deref()),
        ("textbox", Some("[redacted]"))
    );
    assert_eq!(
        by_name(&first, "Body").value.as_deref(),
        Some("[redacted]"),
        "typed: redacted"
    );
    let audience = by_name(&first, "Audience");
    assert_eq!(audience.role, "combobox");
    assert_eq!(audience.options, ["Choose", "Friends", "Everyone"]);
    assert_eq!(audience.value, None, "nothing chosen yet");
    assert_eq!(by_name(&first, "Notify me").checked, Some(true));
    assert_eq!(
        by_name(&first, "Home").href,
        None,
        "no targets unless asked"
    );
    let with_hrefs = abr_core::guard::SnapshotRequest {
        hrefs: true,
        ..request.clone()
    };
    let targets = s.snapshot(&with_hrefs, STEP).await.unwrap();
    assert_eq!(
        by_name(&targets, "Home").href.as_deref(),
        Some("/links"),
        "relative on the page's origin"
    );
    assert!(
        !first.text.contains("Comment") && !first.text.contains("Post"),
        "what the elements say is not repeated in the text: {:?}",
        first.text
    );
    assert_eq!(
        first.headings,
        [abr_protocol::SnapshotHeading {
            level: 1,
            text: "Compose".into(),
            at: 1
        }]
    );
    assert_eq!(by_name(&first, "Comment").landmark.as_deref(), Some("form"));
    assert_eq!(by_name(&first, "Home").landmark, None);
    let post = by_name(&first, "Post");
    assert_eq!(post.role, "button");

    // References are stable; one the page copies onto another element is replaced there.
    eval(s, "() => window.copyRef('data-abr-k3y')").await;
    let second = s.snapshot(&request, STEP).await.unwrap();
    assert_eq!(by_name(&second, "Post").reference, post.reference);
    assert_eq!(
        by_name(&second, "Home").reference,
        by_name(&first, "Home").reference
    );
    let other = by_name(&second, "Other").reference;
    assert_ne!(other, post.reference, "the copied reference does not move");
    assert_ne!(
        other,
        by_name(&first, "Other").reference,
        "the tampered element got a new one"
    );
    let refs: std::collections::HashSet<&str> = second
        .elements
        .iter()
        .map(|e| e.reference.as_str())
        .collect();
    assert_eq!(refs.len(), second.elements.len(), "references are unique");

    // A reference's selector finds its element, in a shadow root too, and the facts the
    // commit rule reads are that element's.
    let facts = s
        .inspect(
            &request.selector(&post.reference),
            Reach::FirstVisible,
            STEP,
        )
        .await
        .unwrap();
    assert!(facts.is_submit_control(), "{facts:?}");
    let deep = by_name(&second, "Deep").reference;
    s.run(
        &BrowserAction::Click {
            selector: request.selector(&other),
        },
        STEP,
    )
    .await
    .unwrap();
    assert_eq!(eval(s, "() => document.title").await, "other clicked");
    let facts = s
        .inspect(&request.selector(&deep), Reach::FirstVisible, STEP)
        .await
        .unwrap();
    assert_eq!(facts.name, "Deep");

    // Keys, scrolling and going back.
    s.run(
        &BrowserAction::Press {
            selector: Some(request.selector(&comment.reference)),
            key: "End".into(),
        },
        STEP,
    )
    .await
    .unwrap();
    s.run(&BrowserAction::Scroll { down: true }, STEP)
        .await
        .unwrap();
    s.run(
        &BrowserAction::Click {
            selector: request.selector(&by_name(&second, "Home").reference),
        },
        STEP,
    )
    .await
    .unwrap();
    s.run(
        &BrowserAction::Wait {
            selector: None,
            url: Some("/links".into()),
            text: None,
        },
        STEP,
    )
    .await
    .unwrap();
    s.run(&BrowserAction::Back, STEP).await.unwrap();
    let back = s.snapshot(&request, STEP).await.unwrap();
    assert!(back.url.ends_with("/snapshot"), "{}", back.url);

    close(provider, lease).await;
}

/// A documentation-like page: a navigation of links (same page, same site, another site),
/// a main part with sections under headings, 40 buttons, a footer text repeated three times
/// and a heading after the last element.
fn large_page() -> String {
    let mut sections = String::new();
    for section in 0..4 {
        sections.push_str(&format!(
            "<h2>Section {section}</h2><p>Prose of section {section}.</p>"
        ));
        for button in 0..10 {
            sections.push_str(&format!("<button>Action {section}.{button}</button>"));
        }
        sections.push_str("<p>Shared note.</p>");
    }
    format!(
        r##"<!doctype html><html><head><title>Large</title></head><body>
<nav><a href="#top">Top</a> <a href="/docs/guide.html?x=1">Guide</a> <a href="http://elsewhere.test/a">Away</a></nav>
<main><h1>Reference</h1>{sections}</main>
<footer><h3>The end</h3></footer>
</body></html>"##
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_page_is_paged_every_element_reachable_under_its_headings_and_landmarks() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/large").as_str()).await;
    let request = abr_core::guard::SnapshotRequest {
        max_elements: 15,
        hrefs: true,
        ..abr_core::guard::SnapshotRequest::new("data-abr-p4g".into())
    };
    let mut listed = Vec::new();
    let mut headings = Vec::new();
    let mut from = 1;
    let mut pages = 0;
    loop {
        let snap = s
            .snapshot(
                &abr_core::guard::SnapshotRequest {
                    from,
                    ..request.clone()
                },
                STEP,
            )
            .await
            .unwrap();
        let page = snap.page.clone().expect("a page says what it lists");
        assert_eq!((page.from, page.total), (from, 43));
        assert_eq!(page.count, snap.elements.len());
        assert!(page.count <= 15);
        assert_eq!(snap.truncated, page.next.is_some());
        for heading in &snap.headings {
            assert!(
                heading.at >= from && (heading.at < from + page.count || page.next.is_none()),
                "a heading is shown on the page of the element after it: {heading:?}"
            );
        }
        headings.extend(snap.headings.clone());
        listed.extend(snap.elements.clone());
        pages += 1;
        match page.next {
            Some(next) => from = next,
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let names: Vec<&str> = listed.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.len(), 43, "every element on some page: {names:?}");
    assert_eq!(&names[..4], ["Top", "Guide", "Away", "Action 0.0"]);
    assert_eq!(names[42], "Action 3.9");
    let refs: std::collections::HashSet<&str> =
        listed.iter().map(|e| e.reference.as_str()).collect();
    assert_eq!(refs.len(), 43, "references are unique across pages");
    let hrefs: Vec<Option<&str>> = listed[..3].iter().map(|e| e.href.as_deref()).collect();
    assert_eq!(
        hrefs,
        [
            Some("#top"),
            Some("/docs/guide.html?x=1"),
            Some("http://elsewhere.test/a")
        ]
    );
    assert_eq!(listed[0].landmark.as_deref(), Some("navigation"));
    assert_eq!(listed[3].landmark.as_deref(), Some("main"));
    let placed: Vec<(u8, &str, usize)> = headings
        .iter()
        .map(|h| (h.level, h.text.as_str(), h.at))
        .collect();
    assert_eq!(
        placed,
        [
            (1, "Reference", 4),
            (2, "Section 0", 4),
            (2, "Section 1", 14),
            (2, "Section 2", 24),
            (2, "Section 3", 34),
            (3, "The end", 44),
        ],
        "each heading before the element it precedes; the last one after every element"
    );
    // Read again from the start: the references stay.
    let again = s.snapshot(&request, STEP).await.unwrap();
    assert_eq!(again.elements[3].reference, listed[3].reference);
    // The text is what no element or heading says, each block once.
    let text = &again.text;
    assert!(text.contains("Prose of section 2."), "{text}");
    assert_eq!(text.matches("Shared note.").count(), 1, "{text}");
    assert!(
        !text.contains("Action 1.1") && !text.contains("Section 1\n"),
        "{text}"
    );
    assert_eq!(again.page.unwrap().text_total, text.chars().count());
    let cut = s
        .snapshot(
            &abr_core::guard::SnapshotRequest {
                max_text: 10,
                ..request.clone()
            },
            STEP,
        )
        .await
        .unwrap();
    assert_eq!(cut.text.chars().count(), 10);
    assert!(cut.truncated);
    assert!(cut.page.unwrap().text_total > 10);

    close(provider, lease).await;
}

/// A closed `<details>` holding links, and an icon button whose only text is an image drawn
/// by CSS (as rustdoc's header buttons).
const UNPAINTED_PAGE: &str = r#"<!doctype html><html><head><title>Unpainted</title>
<style>.icon::before { content: url("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'%3E%3C/svg%3E"); }
.alt::before { content: url("data:image/png;base64,AAAA") / "Copy"; }</style></head><body>
<details><summary>Implementations</summary><a href="/a">Hidden one</a><a href="/b">Hidden two</a></details>
<button class="icon" title="Settings"></button><button class="alt"></button>
</body></html>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_lists_only_what_is_painted_and_never_names_an_element_by_an_image() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/unpainted").as_str()).await;
    let request = abr_core::guard::SnapshotRequest::new("data-abr-u9p".into());
    let snap = s.snapshot(&request, STEP).await.unwrap();
    let names: Vec<&str> = snap.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["Implementations", "Settings", "Copy"],
        "the closed details' links are not painted; an image is no name"
    );
    assert_eq!(snap.page.unwrap().total, 3);
    close(provider, lease).await;
}

/// Text beyond the basic plane: each emoji is one character and two UTF-16 units.
const EMOJI_PAGE: &str = "<!doctype html><html><head><title>Emoji</title></head><body>\
<p>Shipped \u{1F680} on time \u{1F389}\u{1F389}, thanks \u{1F44B}</p></body></html>";

/// A page whose text holds emoji, read whole: the snapshot neither says it was cut nor asks
/// for more with `maxText` (the brain would ask again for text that is not there); cut, it
/// counts the characters it keeps and the page's total in one unit, the budget's.
#[tokio::test]
async fn a_snapshot_of_text_with_emoji_says_it_was_cut_only_when_it_was() {
    let site = Site::start().await;
    let (provider, lease) = open(&site).await;
    let s = lease.context();
    go(s, site.url("/emoji").as_str()).await;
    let request = abr_core::guard::SnapshotRequest::new("data-abr-e4j".into());
    let whole = s.snapshot(&request, STEP).await.unwrap();
    let text = "Shipped \u{1F680} on time \u{1F389}\u{1F389}, thanks \u{1F44B}";
    assert_eq!(whole.text, text);
    assert!(!whole.truncated, "nothing was cut: {whole:?}");
    assert_eq!(
        whole.page.as_ref().unwrap().text_total,
        text.chars().count()
    );
    assert!(
        !whole.to_text().contains("maxText"),
        "nothing more to ask for: {}",
        whole.to_text()
    );
    let budget = text.chars().count() - 3;
    let cut = s
        .snapshot(
            &abr_core::guard::SnapshotRequest {
                max_text: budget,
                ..request.clone()
            },
            STEP,
        )
        .await
        .unwrap();
    assert_eq!(cut.text.chars().count(), budget, "{:?}", cut.text);
    assert!(text.starts_with(&cut.text));
    assert!(cut.truncated);
    assert_eq!(cut.page.unwrap().text_total, text.chars().count());
    close(provider, lease).await;
}

/// On every other provider (an attached browser, the Steel and Kernel doubles) a redirect
/// of an allowed page to a host the site filter refuses never reaches it either: the page's
/// document gate (CDP) or the whole-browser redirect gate (Steel, Kernel).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_every_provider_a_redirect_to_a_refused_host_never_reaches_it() {
    let site = Site::start().await;
    let chromium = abr_doubles::LocalChromium::launch(&abr_doubles::ChromiumOptions::default())
        .await
        .unwrap();
    let steel = abr_doubles::SteelDouble::start(abr_doubles::SteelOptions::default())
        .await
        .unwrap();
    let kernel = abr_doubles::KernelDouble::start(abr_doubles::KernelOptions::default())
        .await
        .unwrap();
    let cdp = Arc::new(abr_providers::CdpSessionProvider::new(
        abr_providers::CdpProviderConfig {
            egress: Some(site.egress()),
            ..abr_providers::CdpProviderConfig::new(chromium.http_url())
        },
    ));
    let providers: Vec<(&str, abr_core::DynSessionProvider<BrowserSession>)> = vec![
        ("cdp", cdp.clone()),
        (
            "steel",
            Arc::new(abr_providers::SteelSessionProvider::oss_serialized(
                abr_providers::SteelProviderConfig {
                    egress: Some(site.egress()),
                    ..abr_providers::SteelProviderConfig::oss(steel.base_url())
                },
                STEP,
            )),
        ),
        (
            "kernel",
            Arc::new(abr_providers::KernelSessionProvider::new(
                abr_providers::KernelProviderConfig {
                    base_url: kernel.base_url(),
                    rest_timeout: Duration::from_secs(60),
                    connect_timeout: Duration::from_secs(10),
                    navigation_timeout: Duration::from_secs(10),
                    egress: Some(site.egress()),
                    ..abr_providers::KernelProviderConfig::new(kernel.api_key())
                },
            )),
        ),
    ];
    for (name, provider) in providers {
        let lease = lease_of(provider.as_ref(), name).await;
        let s = lease.context();
        s.filter_sites(Refuse::new("localhost")).await.unwrap();
        redirect_is_refused(s, &site, 0).await;
        let _ = tokio::time::timeout(Duration::from_secs(30), lease.release()).await;
    }
    cdp.shutdown().await;
}

/// Navigates `s` to the site's redirect to the refused host `localhost`: the navigation
/// fails, and the host has seen its landing page `seen` times still.
async fn redirect_is_refused(s: &BrowserSession, site: &Site, seen: usize) {
    let redirected = s
        .run(
            &BrowserAction::Navigate {
                url: site.url("/redirect"),
            },
            STEP,
        )
        .await;
    assert!(redirected.is_err(), "the redirect was followed");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        site.seen("localhost", "/landing"),
        seen,
        "a redirect reached the refused host"
    );
}
