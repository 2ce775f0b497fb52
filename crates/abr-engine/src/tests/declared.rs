//! Platforms declared as data, on the core's terms and without a browser: the shipped demo
//! file parses (TOML, and the same as JSON), invalid files are refused naming the field,
//! and the declared strategy maps every fault of a scripted demo site to the outcome the
//! compiled strategy gives, entering each stage before acting in it.
//!
//! The page is a small model of the demo site (`crates/abr-demo/src/site`) behind
//! [`StepRunner`]: the same pages, the same selectors, the same one-shot faults.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    reason = "test code"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::declared::{
    DeclaredError, DeclaredStrategy, DeclaredTimeouts, PlatformFormat, load_platform_files,
};
use crate::poster::AgentPoster;
use abr_core::step_runner::{BrowserAction, StepFailure, StepFailureKind, StepOutput, StepRunner};
use abr_core::{
    AcquireRequest, CoreError, Lease, PlatformPacing, PostProgress, ProviderCapabilities,
    ProviderError, RecheckOutcome, SessionContext, SessionProvider, StrategyRegistry,
    VerifyOutcome, WebPostStrategy,
};
use abr_protocol::{
    AgentPostResult, AgentSessionState, FailureStage, MediaAttachment, PlatformFile, PostContent,
    PostOutcome, PostRequest, Selector, VerificationMethod,
};
use async_trait::async_trait;
use serde_json::{Value, json};

const DEMO_TOML: &str = include_str!("../../../abr-demo/platforms/demo.toml");
const BASE: &str = "http://127.0.0.1:8788";
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn vars() -> BTreeMap<String, String> {
    BTreeMap::from([("base".to_owned(), BASE.to_owned())])
}

/// Short glances: the model answers at once, so a "no" only costs this.
fn fast() -> DeclaredTimeouts {
    DeclaredTimeouts {
        glance: Duration::from_millis(5),
        list: Duration::from_millis(5),
        settle: Duration::from_millis(50),
        ..DeclaredTimeouts::default()
    }
}

fn demo() -> DeclaredStrategy {
    DeclaredStrategy::parse_toml(DEMO_TOML, &vars())
        .unwrap()
        .with_timeouts(fast())
}

/// The demo file with `edit` applied to its JSON form.
fn demo_edited(edit: impl FnOnce(&mut Value)) -> Result<DeclaredStrategy, DeclaredError> {
    let file: PlatformFile = toml::from_str(DEMO_TOML).unwrap();
    let mut value = serde_json::to_value(&file).unwrap();
    edit(&mut value);
    DeclaredStrategy::parse_json(&value.to_string(), &vars()).map(|s| s.with_timeouts(fast()))
}

// ---------------------------------------------------------------------------------------
// The scripted demo site

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    NoToast,
    FailBeforeSave,
    FailAfterSave,
    SlowToast,
    ExpireSession,
    MediaReject,
}

const ALL_FAULTS: [Fault; 7] = [
    Fault::None,
    Fault::NoToast,
    Fault::FailBeforeSave,
    Fault::FailAfterSave,
    Fault::SlowToast,
    Fault::ExpireSession,
    Fault::MediaReject,
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Page {
    Blank,
    Login,
    Compose { media: Option<bool> },
    Posted(String),
    SlowPosted(String),
    Plain,
    ErrorBanner,
    Feed,
    Permalink(String),
}

#[derive(Debug)]
struct Site {
    signed_in: bool,
    /// (id, text), oldest first: the ground truth.
    posts: Vec<(String, String)>,
    fault: Fault,
    page: Page,
    typed: String,
    /// Every action: (what, the stage the post was in).
    log: Vec<(String, FailureStage)>,
    /// A failure for the next action whose key (`click #submit`, `navigate /feed`) starts
    /// with this.
    fail: Option<(String, StepFailure)>,
    /// How many more checks answer "not yet", as a page still rendering does within a
    /// glance.
    slow_checks: usize,
}

impl Site {
    fn new() -> Self {
        Self {
            signed_in: true,
            posts: Vec::new(),
            fault: Fault::None,
            page: Page::Blank,
            typed: String::new(),
            log: Vec::new(),
            fail: None,
            slow_checks: 0,
        }
    }

    fn url(&self) -> String {
        match &self.page {
            Page::Blank => "about:blank".into(),
            Page::Login => format!("{BASE}/login"),
            Page::Compose { .. }
            | Page::Posted(_)
            | Page::SlowPosted(_)
            | Page::Plain
            | Page::ErrorBanner => format!("{BASE}/compose"),
            Page::Feed => format!("{BASE}/feed"),
            Page::Permalink(id) => format!("{BASE}/p/{id}"),
        }
    }

    /// The CSS selectors (as the demo file writes them) that match something on the page.
    fn elements(&self) -> Vec<&'static str> {
        let back = "main a[href='/compose']";
        match &self.page {
            Page::Blank => vec![],
            Page::Login => vec!["#login"],
            Page::Compose { media } => {
                let mut e = vec!["#post-text", "#media", "#submit"];
                match media {
                    Some(true) => e.push("#media-status.media-ok"),
                    Some(false) => e.push("#media-status.media-error"),
                    None => {}
                }
                e
            }
            Page::Posted(_) => vec![".toast-success a", back],
            Page::SlowPosted(_) | Page::Plain => vec![back],
            Page::ErrorBanner => vec![".error-banner", back],
            Page::Feed if self.posts.is_empty() => vec![],
            Page::Feed => vec!["li.post"],
            Page::Permalink(_) => vec![".post-text"],
        }
    }

    fn has(&self, selector: &Selector) -> bool {
        let Selector::Css(css) = selector else {
            return false;
        };
        let elements = self.elements();
        css.split(',').any(|part| elements.contains(&part.trim()))
    }

    fn navigate(&mut self, path: &str) -> Result<StepOutput, StepFailure> {
        self.typed.clear();
        self.page = match path {
            "/compose" if self.signed_in => Page::Compose { media: None },
            "/feed" if self.signed_in => Page::Feed,
            "/compose" | "/feed" | "/login" => Page::Login,
            p => match p.strip_prefix("/p/") {
                Some(id) if self.posts.iter().any(|(i, _)| i == id) => Page::Permalink(id.into()),
                _ => {
                    return Err(StepFailure::new(
                        StepFailureKind::Navigation,
                        "the page answered HTTP 404",
                    ));
                }
            },
        };
        Ok(StepOutput::Done)
    }

    fn submit(&mut self) {
        let fault = std::mem::replace(&mut self.fault, Fault::None);
        match fault {
            Fault::ExpireSession => {
                self.signed_in = false;
                self.page = Page::Login;
                return;
            }
            Fault::FailBeforeSave => {
                self.page = Page::ErrorBanner;
                return;
            }
            _ => {}
        }
        let id = format!("{:04x}", self.posts.len() + 1);
        let text = self.typed.replace("\r\n", "\n");
        self.posts.push((id.clone(), text));
        self.page = match fault {
            Fault::NoToast => Page::Plain,
            Fault::FailAfterSave => Page::ErrorBanner,
            Fault::SlowToast => Page::SlowPosted(id),
            _ => Page::Posted(id),
        };
    }

    fn act(&mut self, action: &BrowserAction) -> Result<StepOutput, StepFailure> {
        let not_found = || StepFailure::new(StepFailureKind::NotFound, "no element matched");
        match action {
            BrowserAction::Navigate { url } => self.navigate(url.path()),
            BrowserAction::Click { selector } => {
                if matches!(self.page, Page::Compose { .. })
                    && *selector == Selector::Css("#submit".into())
                {
                    self.submit();
                    Ok(StepOutput::Done)
                } else if self.has(selector) {
                    Ok(StepOutput::Done)
                } else {
                    Err(not_found())
                }
            }
            BrowserAction::Type {
                selector, value, ..
            } => {
                if matches!(self.page, Page::Compose { .. })
                    && *selector == Selector::Css("#post-text".into())
                {
                    value.expose().clone_into(&mut self.typed);
                    Ok(StepOutput::Done)
                } else {
                    Err(not_found())
                }
            }
            BrowserAction::Upload { selector, .. } => {
                if !(matches!(self.page, Page::Compose { .. })
                    && *selector == Selector::Css("#media".into()))
                {
                    return Err(not_found());
                }
                let ok = self.fault != Fault::MediaReject;
                if !ok {
                    self.fault = Fault::None;
                }
                self.page = Page::Compose { media: Some(ok) };
                Ok(StepOutput::Done)
            }
            BrowserAction::Wait {
                selector: Some(selector),
                ..
            } => {
                // The slow toast shows up while it is waited for (3 s on the real site).
                if let Page::SlowPosted(id) = &self.page
                    && *selector == Selector::Css(".toast-success a".into())
                {
                    self.page = Page::Posted(id.clone());
                }
                if self.has(selector) {
                    Ok(StepOutput::Done)
                } else {
                    Err(not_found())
                }
            }
            BrowserAction::Wait { url: Some(url), .. } => {
                if self.url().contains(url.as_str()) {
                    Ok(StepOutput::Done)
                } else {
                    Err(not_found())
                }
            }
            BrowserAction::Assert { check } => Ok(StepOutput::Checked(
                check.selector.as_ref().is_some_and(|s| self.has(s)),
            )),
            BrowserAction::Extract { what } => self.extract(what),
            _ => Err(StepFailure::new(
                StepFailureKind::Rejected,
                "not on this site",
            )),
        }
    }

    fn extract(&self, what: &abr_protocol::Extraction) -> Result<StepOutput, StepFailure> {
        use abr_protocol::Extraction;
        let not_found = || StepFailure::new(StepFailureKind::NotFound, "no element matched");
        match (what, &self.page) {
            (Extraction::List { selector, fields }, Page::Feed) if self.has(selector) => {
                assert_eq!(fields.get("text").map(String::as_str), Some(".post-text"));
                let items: Vec<Value> = self
                    .posts
                    .iter()
                    .rev()
                    .map(|(_, text)| json!({ "text": text.trim() }))
                    .collect();
                Ok(StepOutput::Extracted(Value::Array(items)))
            }
            (Extraction::Attribute { attribute, .. }, Page::Posted(id)) if attribute == "href" => {
                Ok(StepOutput::Extracted(Value::String(format!("/p/{id}"))))
            }
            (Extraction::Text { .. }, Page::Permalink(id)) => {
                let text = self
                    .posts
                    .iter()
                    .find(|(i, _)| i == id)
                    .map(|(_, t)| t.clone())
                    .unwrap_or_default();
                Ok(StepOutput::Extracted(Value::String(text)))
            }
            _ => Err(not_found()),
        }
    }
}

fn key(action: &BrowserAction) -> String {
    let sel = |s: &Selector| match s {
        Selector::Css(css) => css.clone(),
        Selector::Explicit(_) => "explicit".into(),
    };
    match action {
        BrowserAction::Navigate { url } => format!("navigate {}", url.path()),
        BrowserAction::Click { selector } => format!("click {}", sel(selector)),
        BrowserAction::Type { selector, .. } => format!("type {}", sel(selector)),
        BrowserAction::Upload { selector, files } => {
            format!("upload {} ({} files)", sel(selector), files.len())
        }
        BrowserAction::Wait {
            selector: Some(s), ..
        } => format!("wait {}", sel(s)),
        BrowserAction::Wait { url: Some(u), .. } => format!("wait url {u}"),
        BrowserAction::Assert { check } => {
            format!(
                "assert {}",
                check.selector.as_ref().map(sel).unwrap_or_default()
            )
        }
        other => other.kind().to_owned(),
    }
}

/// A browser context on the scripted site.
#[derive(Debug)]
struct FakePage {
    site: Arc<Mutex<Site>>,
    progress: Mutex<Option<Arc<PostProgress>>>,
}

impl FakePage {
    fn new(site: &Arc<Mutex<Site>>) -> Self {
        Self {
            site: Arc::clone(site),
            progress: Mutex::new(None),
        }
    }

    fn site(&self) -> MutexGuard<'_, Site> {
        self.site.lock().unwrap()
    }
}

#[async_trait]
impl StepRunner for FakePage {
    async fn run(
        &self,
        action: &BrowserAction,
        _timeout: Duration,
    ) -> Result<StepOutput, StepFailure> {
        let stage = self
            .progress
            .lock()
            .unwrap()
            .as_ref()
            .map_or(FailureStage::Precheck, |p| p.current());
        let key = key(action);
        let mut site = self.site();
        site.log.push((key.clone(), stage));
        if let Some((prefix, failure)) = site.fail.take() {
            if key.starts_with(&prefix) {
                return Err(failure);
            }
            site.fail = Some((prefix, failure));
        }
        if matches!(action, BrowserAction::Assert { .. }) && site.slow_checks > 0 {
            site.slow_checks -= 1;
            return Ok(StepOutput::Checked(false));
        }
        site.act(action)
    }

    async fn page_text(&self, _timeout: Duration) -> Result<String, StepFailure> {
        Ok(String::new())
    }
}

#[async_trait]
impl SessionContext for FakePage {
    async fn export_state(&self) -> Result<AgentSessionState, ProviderError> {
        Ok(AgentSessionState::default())
    }
}

/// Hands out contexts on the site, each starting on a blank page.
#[derive(Debug)]
struct SiteProvider {
    site: Arc<Mutex<Site>>,
}

#[async_trait]
impl SessionProvider for SiteProvider {
    type Context = FakePage;

    fn name(&self) -> &str {
        "scripted-site"
    }

    fn capabilities(&self) -> ProviderCapabilities {
        ProviderCapabilities {
            interactive: false,
            profiles: false,
        }
    }

    async fn acquire(&self, request: AcquireRequest) -> Result<Lease<FakePage>, ProviderError> {
        assert!(request.start_url.is_none(), "jobs start on a blank page");
        self.site.lock().unwrap().page = Page::Blank;
        Ok(Lease::new(FakePage::new(&self.site), |_| {
            Box::pin(async { Ok(()) })
        }))
    }
}

fn poster(site: &Arc<Mutex<Site>>, strategy: DeclaredStrategy) -> AgentPoster<FakePage> {
    let mut registry = StrategyRegistry::new();
    registry.register(Arc::new(strategy)).unwrap();
    AgentPoster::new(
        Arc::new(SiteProvider {
            site: Arc::clone(site),
        }),
        Arc::new(registry),
    )
}

fn request(text: &str, media: bool) -> PostRequest {
    let mut content = PostContent::text(text);
    if media {
        content.media = vec![MediaAttachment {
            file_name: "pixel.png".into(),
            mime_type: "image/png".into(),
            data_base64: PIXEL.into(),
        }];
    }
    PostRequest {
        platform: "demo-declared".into(),
        session: AgentSessionState::default(),
        content,
        workspace_id: None,
        account_id: None,
        scope: None,
        session_id: None,
    }
}

fn summary(r: &AgentPostResult) -> (PostOutcome, Option<FailureStage>) {
    (r.outcome(), r.failure_stage)
}

// ---------------------------------------------------------------------------------------
// Parsing and validation

#[test]
fn the_shipped_demo_file_parses_with_its_base_filled_in() {
    let s = demo();
    assert_eq!(WebPostStrategy::<FakePage>::platform(&s), "demo-declared");
    assert_eq!(
        WebPostStrategy::<FakePage>::start_url(&s),
        "http://127.0.0.1:8788/login"
    );
    assert_eq!(WebPostStrategy::<FakePage>::pacing(&s), PlatformPacing::Off);
    let policy = WebPostStrategy::<FakePage>::policy(&s).to_spec();
    assert_eq!(policy.allow_interactive_capture, Some(true));
    assert_eq!(policy.allow_unattended, Some(true));
    let scope = policy.session.unwrap();
    assert_eq!(scope.cookie_domains, vec!["127.0.0.1".to_owned()]);
    assert_eq!(scope.origins, vec!["http://127.0.0.1:8788".to_owned()]);
    // A base with a trailing slash gives the same URLs.
    let slash = BTreeMap::from([("base".to_owned(), format!("{BASE}/"))]);
    let s = DeclaredStrategy::parse_toml(DEMO_TOML, &slash).unwrap();
    assert_eq!(
        WebPostStrategy::<FakePage>::start_url(&s),
        "http://127.0.0.1:8788/login"
    );
}

/// The `[policy.network]` and `[policy.guard]` of `docs/platforms.md`, in the demo file: templated,
/// validated, and a bad endpoint refused naming the field.
#[test]
fn a_platform_file_declares_its_network_and_guard() {
    let with = |extra: &str| {
        let text = DEMO_TOML.replacen("[policy]\n", &format!("[policy]\n{extra}"), 1);
        DeclaredStrategy::parse_toml(&text, &vars())
    };
    let declared = with(
        r#"network = { reads = [
  { url = "{{base}}/graphql", graphql = "query" },
  { url = "{{base}}/api/search", methods = ["POST"] },
], telemetry = ["{{base}}/api/metrics*"], websockets = false }
guard = { harmless = ["translate"], harmlessChoices = true }
"#,
    )
    .unwrap();
    let policy = WebPostStrategy::<FakePage>::policy(&declared);
    let spec = policy.to_spec().network.unwrap();
    assert_eq!(spec.reads[0].url, "http://127.0.0.1:8788/graphql");
    assert_eq!(spec.reads[1].methods, ["POST"]);
    assert_eq!(spec.telemetry, ["http://127.0.0.1:8788/api/metrics*"]);
    assert!(
        policy
            .network
            .is_telemetry("http://127.0.0.1:8788/api/metrics/v1?x=1")
    );
    let guard = policy.guard.clone().unwrap();
    assert_eq!(guard.harmless, ["translate"]);
    assert!(guard.harmless_choices);
    for (bad, field) in [
        (
            r#"network = { reads = [{ url = "{{base}}/q?x=1" }] }
"#,
            "policy.network",
        ),
        (
            r#"network = { reads = [{ url = "{{base}}/q", methods = ["GET"] }] }
"#,
            "policy.network",
        ),
    ] {
        let e = with(bad).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains(field), "{e}");
    }
}

#[test]
fn the_same_platform_reads_from_json() {
    let file: PlatformFile = toml::from_str(DEMO_TOML).unwrap();
    let text = serde_json::to_string_pretty(&file).unwrap();
    assert!(text.contains("\"signedOutUrl\""), "camelCase keys: {text}");
    let from_json = DeclaredStrategy::parse_json(&text, &vars()).unwrap();
    let from_toml = demo();
    assert_eq!(
        WebPostStrategy::<FakePage>::start_url(&from_json),
        WebPostStrategy::<FakePage>::start_url(&from_toml)
    );
    assert_eq!(
        WebPostStrategy::<FakePage>::policy(&from_json),
        WebPostStrategy::<FakePage>::policy(&from_toml)
    );
    let back: PlatformFile = serde_json::from_str(&text).unwrap();
    assert_eq!(back, file);
}

#[test]
fn invalid_files_are_refused_naming_the_field() {
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("id", Box::new(|v| v["id"] = json!("has space"))),
        (
            "startUrl",
            Box::new(|v| v["startUrl"] = json!("file:///etc/passwd")),
        ),
        (
            "startUrl",
            Box::new(|v| v["startUrl"] = json!("{{nowhere}}/login")),
        ),
        (
            "policy.session",
            Box::new(|v| v["policy"]["session"]["cookieDomains"] = json!(["com"])),
        ),
        (
            "pacing",
            Box::new(|v| v["pacing"] = json!({"minMs": 5, "maxMs": 1})),
        ),
        (
            "signIn.steps",
            Box::new(|v| v["signIn"]["steps"] = json!([])),
        ),
        (
            "signIn",
            Box::new(|v| {
                let s = v["signIn"].as_object_mut().unwrap();
                s.remove("signedIn");
                s.remove("signedOutUrl");
            }),
        ),
        (
            "signIn.steps[0].url",
            Box::new(|v| {
                v["signIn"]["steps"][0] = json!({"type": "navigate", "description": "Open"});
            }),
        ),
        (
            "signIn.steps[0].url",
            Box::new(|v| v["signIn"]["steps"][0]["url"] = json!("javascript:alert(1)")),
        ),
        (
            "compose.steps[0].url",
            Box::new(|v| v["compose"]["steps"][0]["url"] = json!("{{base}}/compose?q={{text}}")),
        ),
        (
            "compose.steps[1].value",
            Box::new(|v| v["compose"]["steps"][1]["value"] = json!("{{post")),
        ),
        (
            "compose.steps",
            Box::new(|v| v["compose"]["steps"][1]["value"] = json!("hello")),
        ),
        (
            "compose.steps",
            Box::new(|v| {
                let steps = v["compose"]["steps"].as_array_mut().unwrap();
                steps.remove(0);
            }),
        ),
        (
            "compose.steps[1].type",
            Box::new(|v| {
                v["compose"]["steps"][1] =
                    json!({"type": "screenshot", "description": "Take a picture"});
            }),
        ),
        (
            "compose.steps[1].description",
            Box::new(|v| v["compose"]["steps"][1]["description"] = json!(" ")),
        ),
        (
            "compose.steps[1].timeoutMs",
            Box::new(|v| v["compose"]["steps"][1]["timeoutMs"] = json!(10_000_000)),
        ),
        (
            "compose.post",
            Box::new(|v| v["compose"]["post"] = json!("{{post}}")),
        ),
        (
            "submit.steps",
            Box::new(|v| v["submit"]["steps"] = json!([])),
        ),
        (
            "submit.steps[1]",
            Box::new(|v| {
                v["submit"]["steps"][1] =
                    json!({"type": "wait", "url": "/x", "text": "y", "description": "Wait"});
            }),
        ),
        (
            "submit.steps[0].value",
            Box::new(|v| {
                v["submit"]["steps"][0] = json!({"type": "type", "selector": "#x",
                    "value": "{{text}}", "description": "Retype"});
            }),
        ),
        (
            "media.input",
            Box::new(|v| v["media"]["input"] = json!({"css": "#a", "text": "b"})),
        ),
        (
            "verify",
            Box::new(|v| {
                let s = v["verify"].as_object_mut().unwrap();
                s.remove("toast");
                s.remove("readback");
            }),
        ),
        (
            "verify.permalink",
            Box::new(|v| {
                v["verify"]["toast"]
                    .as_object_mut()
                    .unwrap()
                    .remove("permalinkAttribute");
                v["verify"]["permalink"] = json!({"text": ".post-text"});
            }),
        ),
        (
            "verify.readback.url",
            Box::new(|v| v["verify"]["readback"]["url"] = json!("/feed")),
        ),
    ];
    for (field, edit) in cases {
        let e = demo_edited(edit).expect_err(field);
        assert_eq!(e.field(), Some(field), "{e}");
        assert_eq!(e.code(), "invalid_request");
        assert!(e.to_string().starts_with(field), "{e}");
        let core = CoreError::from(e);
        assert_eq!(core.to_body().code, "invalid_request");
    }
}

#[test]
fn malformed_text_is_a_parse_error_with_its_place() {
    let e = DeclaredStrategy::parse_toml("id = \"x\"\nstartUrl = ", &vars()).unwrap_err();
    assert!(
        matches!(&e, DeclaredError::Parse { format: PlatformFormat::Toml, message } if message.contains("line 2")),
        "{e}"
    );
    let unknown = DEMO_TOML.replace("[verify]", "[verify]\ntoats = 1");
    let e = DeclaredStrategy::parse_toml(&unknown, &vars()).unwrap_err();
    assert!(e.to_string().contains("toats"), "{e}");
    let e = DeclaredStrategy::parse_json("{\"id\": 1}", &vars()).unwrap_err();
    assert!(
        matches!(
            e,
            DeclaredError::Parse {
                format: PlatformFormat::Json,
                ..
            }
        ),
        "{e}"
    );
    // Variables must be known, and the content's names are not variables.
    let e = DeclaredStrategy::parse_toml(DEMO_TOML, &BTreeMap::new()).unwrap_err();
    assert_eq!(e.field(), Some("startUrl"), "{e}");
    let mut reserved = vars();
    reserved.insert("text".into(), "x".into());
    assert!(DeclaredStrategy::parse_toml(DEMO_TOML, &reserved).is_err());
}

#[test]
fn a_directory_loads_its_platform_files_and_skips_the_rest() {
    let file: PlatformFile = toml::from_str(DEMO_TOML).unwrap();
    let mut other = serde_json::to_value(&file).unwrap();
    other["id"] = json!("demo-json");
    let other = other.to_string();
    let loaded = load_platform_files(
        [
            ("demo.toml", DEMO_TOML),
            ("README.md", "# not a platform"),
            ("other.json", other.as_str()),
        ],
        &vars(),
    )
    .unwrap();
    let ids: Vec<&str> = loaded
        .iter()
        .map(WebPostStrategy::<FakePage>::platform)
        .collect();
    assert_eq!(ids, ["demo-declared", "demo-json"]);

    let e =
        load_platform_files([("a.toml", DEMO_TOML), ("b.toml", DEMO_TOML)], &vars()).unwrap_err();
    assert!(
        matches!(&e, DeclaredError::DuplicateId { id, first, second } if id == "demo-declared" && first == "a.toml" && second == "b.toml"),
        "{e}"
    );
    let broken = DEMO_TOML.replace("{{base}}/feed", "{{nope}}/feed");
    let e = load_platform_files([("broken.toml", broken.as_str())], &vars()).unwrap_err();
    assert!(e.to_string().starts_with("broken.toml: "), "{e}");
    assert_eq!(e.field(), Some("verify.readback.url"));
}

// ---------------------------------------------------------------------------------------
// Behaviour on the scripted site

#[tokio::test]
async fn every_fault_mode_maps_to_the_compiled_strategys_outcome() {
    let expected = [
        (
            Fault::None,
            PostOutcome::Confirmed,
            None,
            Some(VerificationMethod::Toast),
        ),
        (
            Fault::NoToast,
            PostOutcome::Confirmed,
            None,
            Some(VerificationMethod::Readback),
        ),
        (
            Fault::FailBeforeSave,
            PostOutcome::Failed,
            Some(FailureStage::Verify),
            None,
        ),
        (
            Fault::FailAfterSave,
            PostOutcome::Confirmed,
            None,
            Some(VerificationMethod::Readback),
        ),
        (
            Fault::SlowToast,
            PostOutcome::Confirmed,
            None,
            Some(VerificationMethod::Toast),
        ),
        (
            Fault::ExpireSession,
            PostOutcome::NeedsReauth,
            Some(FailureStage::Submit),
            None,
        ),
        (
            Fault::MediaReject,
            PostOutcome::Failed,
            Some(FailureStage::Media),
            None,
        ),
    ];
    assert_eq!(expected.len(), ALL_FAULTS.len());
    for (i, (fault, outcome, stage, method)) in expected.into_iter().enumerate() {
        let site = Arc::new(Mutex::new(Site::new()));
        site.lock().unwrap().fault = fault;
        let text = format!("declared post {i} in {fault:?}");
        let result = poster(&site, demo())
            .post(request(&text, true))
            .await
            .unwrap();
        assert_eq!(summary(&result), (outcome, stage), "{fault:?}: {result:?}");
        assert_eq!(
            result.verification.as_ref().map(|v| v.method),
            method,
            "{fault:?}"
        );
        // True to the ground truth: a missing post is never confirmed, an existing one is
        // confirmed or uncertain.
        let exists = site.lock().unwrap().posts.iter().any(|(_, t)| *t == text);
        if exists {
            assert!(matches!(
                result.outcome(),
                PostOutcome::Confirmed | PostOutcome::Uncertain
            ));
        } else {
            assert_ne!(result.outcome(), PostOutcome::Confirmed, "{fault:?}");
        }
        if method == Some(VerificationMethod::Toast) {
            let v = result.verification.as_ref().unwrap();
            let id = &site.lock().unwrap().posts[0].0;
            assert_eq!(
                v.evidence.permalink.as_deref(),
                Some(format!("{BASE}/p/{id}").as_str())
            );
        }
        // Never the content in what comes back.
        let wire = serde_json::to_string(&result).unwrap();
        assert!(!wire.contains(&text), "{fault:?}: {wire}");
    }
}

#[tokio::test]
async fn stages_are_entered_before_acting_in_them() {
    let site = Arc::new(Mutex::new(Site::new()));
    let page = FakePage::new(&site);
    let strategy = demo();
    assert!(strategy.is_authenticated(&page).await.unwrap());
    site.lock().unwrap().log.clear();
    let progress = Arc::new(PostProgress::default());
    *page.progress.lock().unwrap() = Some(Arc::clone(&progress));
    let mut content = PostContent::text("stage order");
    content.link = Some(" https://x.test ".into());
    content.media = request("", true).content.media;
    let receipt = strategy.post(&page, &content, &progress).await.unwrap();
    let log = site.lock().unwrap().log.clone();
    let at = |what: &str| {
        log.iter()
            .find(|(k, _)| k == what)
            .unwrap_or_else(|| panic!("no {what} in {log:?}"))
            .1
    };
    // The read-back snapshot comes first, then the composer.
    assert_eq!(log[0], ("navigate /feed".into(), FailureStage::Compose));
    assert_eq!(at("navigate /compose"), FailureStage::Compose);
    assert_eq!(at("type #post-text"), FailureStage::Compose);
    assert_eq!(at("upload #media (1 files)"), FailureStage::Media);
    assert_eq!(at("click #submit"), FailureStage::Submit);
    // The text posted carries the link on its own line (as the compiled strategy writes it).
    assert_eq!(
        site.lock().unwrap().posts[0].1,
        "stage order\nhttps://x.test"
    );
    let outcome = strategy.verify(&page, &receipt).await.unwrap();
    assert!(
        matches!(outcome, VerifyOutcome::Confirmed(_)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn the_sign_in_check_only_navigates_a_blank_page() {
    let site = Arc::new(Mutex::new(Site::new()));
    let page = FakePage::new(&site);
    let strategy = demo();
    // Unattended, signed in: opens the composer.
    assert!(strategy.is_authenticated(&page).await.unwrap());
    assert!(
        site.lock()
            .unwrap()
            .log
            .iter()
            .any(|(k, _)| k == "navigate /compose")
    );
    // Unattended, signed out: the composer sends it to /login.
    {
        let mut s = site.lock().unwrap();
        s.signed_in = false;
        s.page = Page::Blank;
    }
    assert!(!strategy.is_authenticated(&page).await.unwrap());
    // A capture: the person is on the sign-in page. Nothing navigates it.
    {
        let mut s = site.lock().unwrap();
        s.page = Page::Login;
        s.log.clear();
    }
    assert!(!strategy.is_authenticated(&page).await.unwrap());
    // Signed in, the site showed the composer: done, still without navigating.
    {
        let mut s = site.lock().unwrap();
        s.signed_in = true;
        s.page = Page::Compose { media: None };
    }
    assert!(strategy.is_authenticated(&page).await.unwrap());
    let log = site.lock().unwrap().log.clone();
    assert!(
        log.iter().all(|(k, _)| !k.starts_with("navigate")),
        "{log:?}"
    );
    // A blank page whose composer shows neither check: an error, not "signed out".
    let inconclusive = demo_edited(|v| {
        v["signIn"]["steps"][0]["url"] = json!("{{base}}/feed");
    })
    .unwrap();
    site.lock().unwrap().page = Page::Blank;
    let e = inconclusive.is_authenticated(&page).await.unwrap_err();
    assert_eq!(e.code, "sign_in_inconclusive");
}

/// A loaded machine: the composer shows, but later than one glance. Still signed in, not
/// "inconclusive" (which failed a post in CI).
#[tokio::test]
async fn a_composer_slower_than_a_glance_is_still_signed_in() {
    let site = Arc::new(Mutex::new(Site::new()));
    site.lock().unwrap().slow_checks = 3;
    let page = FakePage::new(&site);
    assert!(demo().is_authenticated(&page).await.unwrap());
    // Signed out and slow: still signed out, not an error.
    let site = Arc::new(Mutex::new(Site::new()));
    {
        let mut s = site.lock().unwrap();
        s.signed_in = false;
        s.slow_checks = 3;
    }
    let page = FakePage::new(&site);
    assert!(!demo().is_authenticated(&page).await.unwrap());
}

#[tokio::test]
async fn step_failures_map_by_stage() {
    let crashed = StepFailure::new(StepFailureKind::Crashed, "the page is closed");
    let timed_out = StepFailure::new(StepFailureKind::NotFound, "no element within 10000 ms");
    let cases = [
        // Before submit: failed, safe to retry.
        (
            "navigate /feed",
            timed_out.clone(),
            (PostOutcome::Failed, Some(FailureStage::Compose)),
            "readback_unreadable",
            false,
        ),
        (
            "type #post-text",
            StepFailure::new(
                StepFailureKind::Rejected,
                "typing: the element is not a text field",
            ),
            (PostOutcome::Failed, Some(FailureStage::Compose)),
            "compose_failed",
            false,
        ),
        (
            "wait #media-status",
            timed_out.clone(),
            (PostOutcome::Failed, Some(FailureStage::Media)),
            "media_upload_timeout",
            false,
        ),
        // From the committing click on: uncertain.
        (
            "click #submit",
            crashed,
            (PostOutcome::Uncertain, Some(FailureStage::Submit)),
            "page_closed",
            false,
        ),
        (
            "wait main a",
            timed_out,
            (PostOutcome::Uncertain, Some(FailureStage::Submit)),
            "submit_failed",
            true,
        ),
    ];
    for (prefix, failure, expected, code, posted) in cases {
        let site = Arc::new(Mutex::new(Site::new()));
        site.lock().unwrap().fail = Some((prefix.to_owned(), failure));
        let text = format!("failing at {prefix}");
        let result = poster(&site, demo())
            .post(request(&text, true))
            .await
            .unwrap();
        assert_eq!(summary(&result), expected, "{prefix}: {result:?}");
        let error = result.error.as_ref().unwrap();
        assert_eq!(error.code, code, "{prefix}: {error:?}");
        assert!(!error.message.contains(&text), "{prefix}: {error:?}");
        let exists = site.lock().unwrap().posts.iter().any(|(_, t)| *t == text);
        assert_eq!(exists, posted, "{prefix}");
    }
}

#[tokio::test]
async fn read_back_counts_only_a_post_that_was_not_there_before() {
    // The same text already on the feed: a failed submit is still "not posted"…
    let site = Arc::new(Mutex::new(Site::new()));
    site.lock()
        .unwrap()
        .posts
        .push(("old".into(), "same text".into()));
    site.lock().unwrap().fault = Fault::FailBeforeSave;
    let result = poster(&site, demo())
        .post(request("same text", false))
        .await
        .unwrap();
    assert_eq!(
        summary(&result),
        (PostOutcome::Failed, Some(FailureStage::Verify)),
        "{result:?}"
    );
    // …and a post that went through without a toast is confirmed by the new copy.
    site.lock().unwrap().fault = Fault::NoToast;
    let result = poster(&site, demo())
        .post(request("same text", false))
        .await
        .unwrap();
    assert_eq!(result.outcome(), PostOutcome::Confirmed, "{result:?}");
    assert_eq!(site.lock().unwrap().posts.len(), 2);

    // A read-back that cannot be read after an error banner proves nothing either way.
    let site = Arc::new(Mutex::new(Site::new()));
    site.lock().unwrap().fault = Fault::FailBeforeSave;
    let page = FakePage::new(&site);
    let strategy = demo();
    let progress = PostProgress::default();
    let receipt = strategy
        .post(&page, &PostContent::text("unreadable"), &progress)
        .await
        .unwrap();
    site.lock().unwrap().fail = Some((
        "extract".into(),
        StepFailure::new(
            StepFailureKind::Rejected,
            "reading the list: the browser refused it",
        ),
    ));
    let outcome = strategy.verify(&page, &receipt).await.unwrap();
    assert!(
        matches!(outcome, VerifyOutcome::Unconfirmed { .. }),
        "{outcome:?}"
    );
    // Signed out after the submit: the read-back cannot see, so no verdict.
    let receipt = {
        site.lock().unwrap().fault = Fault::NoToast;
        strategy
            .post(&page, &PostContent::text("then signed out"), &progress)
            .await
            .unwrap()
    };
    site.lock().unwrap().signed_in = false;
    let outcome = strategy.verify(&page, &receipt).await.unwrap();
    assert!(
        matches!(outcome, VerifyOutcome::Unconfirmed { .. }),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn content_the_platform_cannot_take_is_refused_before_acting() {
    // No media step declared.
    let no_media = demo_edited(|v| {
        v.as_object_mut().unwrap().remove("media");
    })
    .unwrap();
    let site = Arc::new(Mutex::new(Site::new()));
    let result = poster(&site, no_media)
        .post(request("x", true))
        .await
        .unwrap();
    assert_eq!(result.outcome(), PostOutcome::Failed);
    assert_eq!(result.error.as_ref().unwrap().code, "media_unsupported");
    // Compose steps that never write the link.
    let no_link = demo_edited(|v| {
        v["compose"]["post"] = json!("{{text}}");
    })
    .unwrap();
    let site = Arc::new(Mutex::new(Site::new()));
    let mut req = request("x", false);
    req.content.link = Some("https://x.test".into());
    let result = poster(&site, no_link).post(req).await.unwrap();
    assert_eq!(result.error.as_ref().unwrap().code, "link_unsupported");
    // Attachments that are not base64.
    let site = Arc::new(Mutex::new(Site::new()));
    let mut req = request("x", true);
    req.content.media[0].data_base64 = "not base64!".into();
    let result = poster(&site, demo()).post(req).await.unwrap();
    assert_eq!(result.outcome(), PostOutcome::Failed);
    assert_eq!(result.error.as_ref().unwrap().code, "invalid_media");
    // In every case the page was never touched past the sign-in check.
    let log = site.lock().unwrap().log.clone();
    assert!(!log.iter().any(|(k, _)| k.starts_with("type")), "{log:?}");
    assert!(site.lock().unwrap().posts.is_empty());
}

#[tokio::test]
async fn a_declared_permalink_page_must_show_the_post() {
    let strategy = demo_edited(|v| {
        v["verify"]["permalink"] = json!({"text": ".post-text"});
    })
    .unwrap();
    let site = Arc::new(Mutex::new(Site::new()));
    let result = poster(&site, strategy.clone())
        .post(request("with a permalink", false))
        .await
        .unwrap();
    let v = result.verification.expect("confirmed");
    assert_eq!(v.method, VerificationMethod::Permalink);
    assert_eq!(
        v.evidence.permalink.as_deref(),
        Some("http://127.0.0.1:8788/p/0001")
    );

    // A toast whose permalink page shows another text: not proven by it, and the read-back
    // decides (here: the post is there).
    let page = FakePage::new(&site);
    let progress = PostProgress::default();
    let receipt = strategy
        .post(&page, &PostContent::text("second"), &progress)
        .await
        .unwrap();
    site.lock().unwrap().posts[1].1 = "edited by someone".into();
    site.lock()
        .unwrap()
        .posts
        .push(("0003".into(), "second".into()));
    let outcome = strategy.verify(&page, &receipt).await.unwrap();
    match outcome {
        VerifyOutcome::Confirmed(v) => assert_eq!(v.method, VerificationMethod::Readback),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Re-checking an uncertain post

/// Runs `recheck` of `content` on a fresh page (blank, as a new browser starts), and
/// returns its answer with every action it took. Fails the test if it acted: no click,
/// typing, choice, upload, and no post added.
async fn recheck_on_fresh_page(
    site: &Arc<Mutex<Site>>,
    strategy: &DeclaredStrategy,
    content: &PostContent,
) -> (RecheckOutcome, Vec<String>) {
    let posts_before = {
        let mut s = site.lock().unwrap();
        s.page = Page::Blank;
        s.log.clear();
        s.posts.clone()
    };
    let page = FakePage::new(site);
    let outcome = strategy.recheck(&page, content).await.unwrap();
    let s = site.lock().unwrap();
    let log: Vec<String> = s.log.iter().map(|(k, _)| k.clone()).collect();
    for acting in ["click", "type", "select", "upload"] {
        assert!(
            !log.iter().any(|k| k.starts_with(acting)),
            "a re-check acted ({acting}): {log:?}"
        );
    }
    assert_eq!(s.posts, posts_before, "a re-check changed the site");
    (outcome, log)
}

#[tokio::test]
async fn recheck_confirms_a_post_on_the_read_back_page_without_acting() {
    let site = Arc::new(Mutex::new(Site::new()));
    let strategy = demo();
    // Posted through the strategy (with a link: the post as composed is looked for).
    let mut req = request("rechecked post", false);
    req.content.link = Some(" https://x.test/a ".into());
    let result = poster(&site, strategy.clone())
        .post(req.clone())
        .await
        .unwrap();
    assert_eq!(result.outcome(), PostOutcome::Confirmed, "{result:?}");
    site.lock()
        .unwrap()
        .posts
        .push(("other".into(), "another post".into()));

    let (outcome, log) = recheck_on_fresh_page(&site, &strategy, &req.content).await;
    match &outcome {
        RecheckOutcome::Confirmed(v) => {
            assert_eq!(v.method, VerificationMethod::Recheck);
            assert!(v.evidence.detail.as_deref().unwrap().contains("/feed"));
        }
        other => panic!("expected confirmed, got {other:?}"),
    }
    // It only read the read-back page.
    assert_eq!(log[0], "navigate /feed", "{log:?}");
    assert!(
        log.iter()
            .all(|k| !k.starts_with("navigate") || k == "navigate /feed"),
        "{log:?}"
    );
    // Never the content in the answer.
    assert!(!format!("{outcome:?}").contains("rechecked post"));
}

#[tokio::test]
async fn recheck_of_a_post_not_on_the_read_back_page_is_not_found() {
    let site = Arc::new(Mutex::new(Site::new()));
    let strategy = demo();
    // An empty feed.
    let (outcome, _) =
        recheck_on_fresh_page(&site, &strategy, &PostContent::text("never posted")).await;
    assert!(
        matches!(outcome, RecheckOutcome::NotFound { .. }),
        "{outcome:?}"
    );
    // Posts with a longer text, or the text without the link: not this post.
    site.lock().unwrap().posts.extend([
        ("a".into(), "never posted, really".into()),
        ("b".into(), "never posted".into()),
    ]);
    let mut with_link = PostContent::text("never posted");
    with_link.link = Some("https://x.test".into());
    let (outcome, _) = recheck_on_fresh_page(&site, &strategy, &with_link).await;
    match &outcome {
        RecheckOutcome::NotFound { detail } => {
            assert!(!detail.contains("never posted"), "{detail}");
        }
        other => panic!("expected not found, got {other:?}"),
    }
}

#[tokio::test]
async fn recheck_of_a_text_posted_twice_is_ambiguous() {
    let site = Arc::new(Mutex::new(Site::new()));
    site.lock()
        .unwrap()
        .posts
        .extend([("a".into(), "twice".into()), ("b".into(), "twice".into())]);
    let (outcome, _) = recheck_on_fresh_page(&site, &demo(), &PostContent::text("twice")).await;
    assert!(
        matches!(outcome, RecheckOutcome::Ambiguous { .. }),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn recheck_signed_out_or_without_read_back_is_unavailable() {
    // Signed out: the read-back page sends the browser to /login.
    let site = Arc::new(Mutex::new(Site::new()));
    site.lock()
        .unwrap()
        .posts
        .push(("a".into(), "signed out".into()));
    site.lock().unwrap().signed_in = false;
    let (outcome, _) =
        recheck_on_fresh_page(&site, &demo(), &PostContent::text("signed out")).await;
    match &outcome {
        RecheckOutcome::Unavailable { detail } => {
            assert!(detail.contains("sign-in"), "{detail}");
        }
        other => panic!("expected unavailable, got {other:?}"),
    }

    // No read-back declared: nothing to look at, and nothing is done.
    let no_readback = demo_edited(|v| {
        v["verify"].as_object_mut().unwrap().remove("readback");
    })
    .unwrap();
    let site = Arc::new(Mutex::new(Site::new()));
    site.lock()
        .unwrap()
        .posts
        .push(("a".into(), "anything".into()));
    let (outcome, log) =
        recheck_on_fresh_page(&site, &no_readback, &PostContent::text("anything")).await;
    assert_eq!(
        outcome,
        RecheckOutcome::Unavailable {
            detail: "the platform declares no read-back".into()
        }
    );
    assert!(log.is_empty(), "{log:?}");

    // A link the compose steps never write: such a post cannot exist, so it is not looked for.
    let no_link = demo_edited(|v| {
        v["compose"]["post"] = json!("{{text}}");
    })
    .unwrap();
    let mut content = PostContent::text("anything");
    content.link = Some("https://x.test".into());
    let (outcome, log) = recheck_on_fresh_page(&site, &no_link, &content).await;
    assert!(
        matches!(outcome, RecheckOutcome::Unavailable { .. }),
        "{outcome:?}"
    );
    assert!(log.is_empty(), "{log:?}");
}

/// Fuzz target (bolero; `cargo test fuzz_`): any text, as TOML or JSON, is a platform or a
/// typed refusal naming the field, never a panic; the demo platform (the corpus) is read
/// the same way twice.
#[test]
fn fuzz_platform_files() {
    let vars = BTreeMap::from([("base".to_owned(), BASE.to_owned())]);
    bolero::check!().for_each(|bytes: &[u8]| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        for format in [PlatformFormat::Toml, PlatformFormat::Json] {
            match DeclaredStrategy::parse(text, format, &vars) {
                Ok(first) => {
                    let again = DeclaredStrategy::parse(text, format, &vars).unwrap();
                    assert_eq!(format!("{first:?}"), format!("{again:?}"));
                }
                Err(refused) => assert!(!refused.to_string().is_empty()),
            }
        }
    });
}
