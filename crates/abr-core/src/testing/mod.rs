//! In-memory fakes of the contracts, for testing the core (and embedders' orchestration)
//! without a browser. Enabled by the `testing` feature.
//!
//! [`FakeProvider`] hands out [`FakeContext`]s that hold a session state like a browser
//! would, records every acquire and release, and has fault knobs. [`ScriptedStrategy`]
//! plays each step from a script: return, fail, hang or panic. A [`FakePage`], shared by a
//! provider's contexts, plays the browser of step plans ([`StepRunner`]): elements present
//! or missing, the page's text, per-action faults, a signed-out switch, extraction results,
//! and a record of every action run.
//!
//! [`store`] is the store conformance suite: every store contract's promises, run against
//! the in-memory stores here and against every durable store (`abr-store`'s SQLite).

pub mod store;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use abr_protocol::{
    AgentSessionState, FailureStage, PlatformPolicy, PostContent, SecretValue, Selector,
    Verification,
};
use async_trait::async_trait;
use serde_json::Value;

use crate::error::{ProviderError, ProviderErrorKind, StrategyError};
use crate::live::{LiveFeed, LiveFrame, LiveInput, LiveSurface, PageLocation};
use crate::provider::{
    AcquireMode, AcquireRequest, Lease, ProviderCapabilities, ProviderViewer, SessionContext,
    SessionProvider,
};
use crate::step_runner::{BrowserAction, StepFailure, StepFailureKind, StepOutput, StepRunner};
use crate::strategy::{
    PostProgress, RecheckOutcome, StrategyPolicy, SubmitReceipt, VerifyOutcome, WebPostStrategy,
};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fake browser context: a session state, a signed-in flag, and a record of what was
/// posted.
#[derive(Debug, Default)]
pub struct FakeContext {
    /// Lease number (1, 2, ...).
    pub id: u64,
    /// Mode it was acquired in.
    pub interactive: bool,
    /// The "browser's" current state.
    pub state: Mutex<AgentSessionState>,
    /// Whether the "site" considers this context signed in.
    pub signed_in: AtomicBool,
    /// Whether `export_state` fails.
    pub fail_export: AtomicBool,
    /// Whether the "browser" is gone for good ([`SessionContext::is_lost`]).
    pub lost: AtomicBool,
    /// Its live surface: frames shown, inputs received.
    pub live: Arc<FakeLive>,
    /// The state it adopts when signed in through the live view, if set.
    pub sign_in_state: Arc<Mutex<Option<AgentSessionState>>>,
    /// The page step plans run on (shared by every context of one provider).
    pub page: Arc<FakePage>,
}

/// The live surface of a [`FakeContext`]: the test shows frames, the fake records every
/// input it receives and counts open feeds.
#[derive(Debug)]
pub struct FakeLive {
    frame: tokio::sync::watch::Sender<Screen>,
    inputs: Mutex<Vec<LiveInput>>,
    location: Mutex<PageLocation>,
    feeds_open: Arc<AtomicUsize>,
    feeds_started: AtomicUsize,
    fail_input: AtomicBool,
}

impl Default for FakeLive {
    fn default() -> Self {
        Self {
            frame: tokio::sync::watch::Sender::new(Screen::Blank),
            inputs: Mutex::default(),
            location: Mutex::new(PageLocation {
                url: "about:blank".into(),
                title: String::new(),
            }),
            feeds_open: Arc::default(),
            feeds_started: AtomicUsize::new(0),
            fail_input: AtomicBool::new(false),
        }
    }
}

impl FakeLive {
    /// Shows `frame` to every feed.
    pub fn show(&self, frame: LiveFrame) {
        self.frame.send_replace(Screen::Showing(frame));
    }

    /// The page is gone: every feed ends.
    pub fn close_page(&self) {
        self.frame.send_replace(Screen::Gone);
    }

    /// Every input received, in order.
    pub fn inputs(&self) -> Vec<LiveInput> {
        lock(&self.inputs).clone()
    }

    /// Feeds open now.
    pub fn feeds_open(&self) -> usize {
        self.feeds_open.load(Ordering::SeqCst)
    }

    /// Feeds started so far.
    pub fn feeds_started(&self) -> usize {
        self.feeds_started.load(Ordering::SeqCst)
    }

    /// Sets where the page is.
    pub fn set_location(&self, url: &str, title: &str) {
        *lock(&self.location) = PageLocation {
            url: url.into(),
            title: title.into(),
        };
    }

    /// Whether inputs fail (as on a crashed page).
    pub fn fail_inputs(&self, fail: bool) {
        self.fail_input.store(fail, Ordering::SeqCst);
    }
}

/// What a fake page shows.
#[derive(Debug, Clone)]
enum Screen {
    Blank,
    Showing(LiveFrame),
    Gone,
}

struct FakeFeed {
    frames: tokio::sync::watch::Receiver<Screen>,
    open: Arc<AtomicUsize>,
    counted: bool,
}

impl FakeFeed {
    fn uncount(&mut self) {
        if std::mem::take(&mut self.counted) {
            self.open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for FakeFeed {
    fn drop(&mut self) {
        self.uncount();
    }
}

#[async_trait]
impl LiveFeed for FakeFeed {
    async fn next_frame(&mut self) -> Option<LiveFrame> {
        loop {
            // An error: the context was dropped.
            if self.frames.changed().await.is_err() {
                return None;
            }
            match &*self.frames.borrow_and_update() {
                Screen::Blank => {}
                Screen::Showing(frame) => return Some(frame.clone()),
                Screen::Gone => return None,
            }
        }
    }

    async fn close(mut self: Box<Self>) {
        self.uncount();
    }
}

#[async_trait]
impl LiveSurface for FakeContext {
    async fn watch(&self) -> Result<Box<dyn LiveFeed>, ProviderError> {
        let live = &self.live;
        live.feeds_open.fetch_add(1, Ordering::SeqCst);
        live.feeds_started.fetch_add(1, Ordering::SeqCst);
        let mut frames = live.frame.subscribe();
        frames.mark_changed();
        Ok(Box::new(FakeFeed {
            frames,
            open: Arc::clone(&live.feeds_open),
            counted: true,
        }))
    }

    async fn input(&self, input: LiveInput) -> Result<(), ProviderError> {
        if self.live.fail_input.load(Ordering::SeqCst) {
            return Err(ProviderError::new(
                ProviderErrorKind::Crashed,
                "fake page is gone",
            ));
        }
        match &input {
            LiveInput::Navigate { url } => self.live.set_location(url.as_str(), ""),
            // The fake site signs in when the person presses Enter.
            LiveInput::Key {
                key: crate::live::LiveKey::Enter,
                ..
            } => {
                if let Some(state) = lock(&self.sign_in_state).clone() {
                    *lock(&self.state) = state;
                }
                self.signed_in.store(true, Ordering::SeqCst);
            }
            _ => {}
        }
        lock(&self.live.inputs).push(input);
        Ok(())
    }

    async fn location(&self) -> Result<PageLocation, ProviderError> {
        Ok(lock(&self.live.location).clone())
    }
}

impl FakeContext {
    /// The current state.
    pub fn state(&self) -> AgentSessionState {
        lock(&self.state).clone()
    }

    /// Replaces the state (a person signed in, or out, in this browser).
    pub fn set_state(&self, state: AgentSessionState) {
        *lock(&self.state) = state;
    }
}

#[async_trait]
impl SessionContext for FakeContext {
    async fn export_state(&self) -> Result<AgentSessionState, ProviderError> {
        if self.fail_export.load(Ordering::SeqCst) {
            return Err(ProviderError::new(
                ProviderErrorKind::Crashed,
                "fake export failure",
            ));
        }
        Ok(self.state())
    }

    async fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
}

/// The fake's browser is lost to a crash or a closed page (its `lost` flag: a capture sees
/// it, a run's export fails); it cannot freeze or stall.
impl crate::chaos::FaultTarget for FakeContext {
    fn inject(
        &self,
        fault: crate::chaos::Fault,
        _stall: std::time::Duration,
    ) -> futures::future::BoxFuture<'static, bool> {
        use crate::chaos::Fault;
        let hit = matches!(fault, Fault::Crash | Fault::ClosePage)
            && !self.lost.swap(true, Ordering::SeqCst);
        if hit {
            self.fail_export.store(true, Ordering::SeqCst);
        }
        Box::pin(std::future::ready(hit))
    }
}

/// A fake provider with a record of every lease and fault knobs.
#[derive(Debug)]
pub struct FakeProvider {
    capabilities: ProviderCapabilities,
    viewer: Option<ProviderViewer>,
    next_id: AtomicU64,
    acquired: AtomicUsize,
    open: Arc<Mutex<BTreeSet<u64>>>,
    released_ids: Arc<Mutex<Vec<u64>>>,
    injected: Mutex<Vec<Option<AgentSessionState>>>,
    fail_next: Mutex<Option<ProviderErrorKind>>,
    hang_acquire: AtomicBool,
    panic_acquire: AtomicBool,
    signed_in_on_acquire: AtomicBool,
    fail_exports: AtomicBool,
    max_open_seen: AtomicUsize,
    contexts: Mutex<Vec<Arc<FakeContext>>>,
    sign_in_state: Arc<Mutex<Option<AgentSessionState>>>,
    page: Arc<FakePage>,
    profiles: Arc<Mutex<std::collections::BTreeMap<String, AgentSessionState>>>,
    profiles_opened: Mutex<Vec<String>>,
}

impl Default for FakeProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeProvider {
    /// An interactive provider with isolated contexts and a runner-served live view;
    /// contexts acquired with a state start signed in.
    pub fn new() -> Self {
        Self {
            capabilities: ProviderCapabilities {
                interactive: true,
                profiles: false,
            },
            viewer: None,
            next_id: AtomicU64::new(1),
            acquired: AtomicUsize::new(0),
            open: Arc::default(),
            released_ids: Arc::default(),
            injected: Mutex::default(),
            fail_next: Mutex::default(),
            hang_acquire: AtomicBool::new(false),
            panic_acquire: AtomicBool::new(false),
            signed_in_on_acquire: AtomicBool::new(true),
            fail_exports: AtomicBool::new(false),
            max_open_seen: AtomicUsize::new(0),
            contexts: Mutex::default(),
            sign_in_state: Arc::default(),
            page: Arc::default(),
            profiles: Arc::default(),
            profiles_opened: Mutex::default(),
        }
    }

    /// Opens named profiles: a lease on a profile starts with the state the last lease on it
    /// left (kept when it is released), as a folder on disk would.
    #[must_use]
    pub fn with_profiles(mut self) -> Self {
        self.capabilities.profiles = true;
        self
    }

    /// The profile folders acquires opened, in order.
    pub fn profiles_opened(&self) -> Vec<String> {
        lock(&self.profiles_opened).clone()
    }

    /// Sets what profile folder `folder` holds (as if a person had used it).
    pub fn set_profile_state(&self, folder: &str, state: AgentSessionState) {
        lock(&self.profiles).insert(folder.to_owned(), state);
    }

    /// What profile folder `folder` holds.
    pub fn profile_state(&self, folder: &str) -> Option<AgentSessionState> {
        lock(&self.profiles).get(folder).cloned()
    }

    /// The page every context of this provider runs step plans on.
    pub fn page(&self) -> Arc<FakePage> {
        Arc::clone(&self.page)
    }

    /// The context of lease `id` (1, 2, ...), also after its release.
    pub fn context(&self, id: u64) -> Option<Arc<FakeContext>> {
        let index = usize::try_from(id.checked_sub(1)?).ok()?;
        lock(&self.contexts).get(index).cloned()
    }

    /// The state a context adopts when a person signs in through its live view (the fake
    /// site signs in on Enter). Default: the state it has.
    pub fn sign_in_state(&self, state: AgentSessionState) {
        *lock(&self.sign_in_state) = Some(state);
    }

    /// Gives leases a provider viewer at `url`, whose only own path is the URL's path.
    #[must_use]
    pub fn with_remote_live_view(self, url: impl Into<String>) -> Self {
        let url = url.into();
        let path = url::Url::parse(&url)
            .map(|u| u.path().to_owned())
            .unwrap_or_else(|_| "/".into());
        self.with_provider_viewer(ProviderViewer {
            url: SecretValue::new(url),
            paths: vec![path],
        })
    }

    /// Gives leases `viewer` as their provider's own viewer.
    #[must_use]
    pub fn with_provider_viewer(mut self, viewer: ProviderViewer) -> Self {
        self.viewer = Some(viewer);
        self
    }

    /// Overrides the capabilities.
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: ProviderCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The next acquire fails with `kind`.
    pub fn fail_next_acquire(&self, kind: ProviderErrorKind) {
        *lock(&self.fail_next) = Some(kind);
    }

    /// Acquires panic (a provider bug the core must contain).
    pub fn panic_acquires(&self, panic: bool) {
        self.panic_acquire.store(panic, Ordering::SeqCst);
    }

    /// Acquires hang forever (until their caller gives up).
    pub fn hang_acquires(&self, hang: bool) {
        self.hang_acquire.store(hang, Ordering::SeqCst);
    }

    /// Whether contexts acquired with a state start signed in (default true).
    pub fn sign_in_on_acquire(&self, signed_in: bool) {
        self.signed_in_on_acquire.store(signed_in, Ordering::SeqCst);
    }

    /// Whether contexts acquired from now on fail `export_state`.
    pub fn fail_exports(&self, fail: bool) {
        self.fail_exports.store(fail, Ordering::SeqCst);
    }

    /// Successful acquires so far.
    pub fn acquired(&self) -> usize {
        self.acquired.load(Ordering::SeqCst)
    }

    /// Releases so far.
    pub fn released(&self) -> usize {
        lock(&self.released_ids).len()
    }

    /// Lease ids in the order they were released (each must appear once).
    pub fn released_ids(&self) -> Vec<u64> {
        lock(&self.released_ids).clone()
    }

    /// Leases not yet released.
    pub fn open_leases(&self) -> usize {
        lock(&self.open).len()
    }

    /// The most leases that were open at the same time.
    pub fn max_open_seen(&self) -> usize {
        self.max_open_seen.load(Ordering::SeqCst)
    }

    /// The states handed to each acquire, in order.
    pub fn injected(&self) -> Vec<Option<AgentSessionState>> {
        lock(&self.injected).clone()
    }
}

#[async_trait]
impl SessionProvider for FakeProvider {
    type Context = FakeContext;

    fn name(&self) -> &str {
        "fake"
    }

    fn capabilities(&self) -> ProviderCapabilities {
        self.capabilities
    }

    async fn acquire(&self, request: AcquireRequest) -> Result<Lease<FakeContext>, ProviderError> {
        if self.panic_acquire.load(Ordering::SeqCst) {
            #[allow(clippy::panic, reason = "the fake exists to test panic containment")]
            {
                panic!("fake provider panic");
            }
        }
        if self.hang_acquire.load(Ordering::SeqCst) {
            futures::future::pending::<()>().await;
        }
        if let Some(kind) = lock(&self.fail_next).take() {
            return Err(ProviderError::new(kind, "fake acquire failure"));
        }
        let profile = request.profile.clone();
        let state = match &profile {
            Some(_) if !self.capabilities.profiles => {
                return Err(ProviderError::new(
                    ProviderErrorKind::Unsupported,
                    "the fake provider opens no named profiles",
                ));
            }
            Some(folder) => {
                lock(&self.profiles_opened).push(folder.clone());
                Some(
                    lock(&self.profiles)
                        .get(folder)
                        .cloned()
                        .unwrap_or_default(),
                )
            }
            None => request.state.clone(),
        };
        lock(&self.injected).push(request.state.clone());
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let interactive = request.mode == AcquireMode::Interactive;
        let context = FakeContext {
            id,
            interactive,
            signed_in: AtomicBool::new(
                !interactive && self.signed_in_on_acquire.load(Ordering::SeqCst),
            ),
            state: Mutex::new(state.unwrap_or_default()),
            fail_export: AtomicBool::new(self.fail_exports.load(Ordering::SeqCst)),
            lost: AtomicBool::new(false),
            live: Arc::default(),
            sign_in_state: Arc::clone(&self.sign_in_state),
            page: Arc::clone(&self.page),
        };
        self.acquired.fetch_add(1, Ordering::SeqCst);
        let open_now = {
            let mut open = lock(&self.open);
            open.insert(id);
            open.len()
        };
        self.max_open_seen.fetch_max(open_now, Ordering::SeqCst);
        let record = ReleaseRecord(Arc::clone(&self.open), Arc::clone(&self.released_ids));
        let profiles = Arc::clone(&self.profiles);
        let lease = Lease::new(context, move |ctx| {
            Box::pin(async move {
                if let Some(folder) = profile {
                    let kept = lock(&ctx.state).clone();
                    lock(&profiles).insert(folder, kept);
                }
                record.record(ctx.id);
                Ok(())
            })
        });
        lock(&self.contexts).push(lease.context_handle());
        Ok(match &self.viewer {
            Some(viewer) => lease.with_provider_viewer(viewer.clone()),
            None => lease,
        })
    }
}

#[derive(Debug)]
struct ReleaseRecord(Arc<Mutex<BTreeSet<u64>>>, Arc<Mutex<Vec<u64>>>);

impl ReleaseRecord {
    fn record(&self, id: u64) {
        lock(&self.0).remove(&id);
        lock(&self.1).push(id);
    }
}

/// What one scripted step does.
#[derive(Debug, Clone)]
pub enum Script<T> {
    /// Returns this value.
    Return(T),
    /// Fails with this error.
    Fail(StrategyError),
    /// Never finishes.
    Hang,
    /// Panics.
    Panic,
}

impl<T: Clone> Script<T> {
    async fn play(&self) -> Result<T, StrategyError> {
        match self {
            Self::Return(v) => Ok(v.clone()),
            Self::Fail(e) => Err(e.clone()),
            Self::Hang => futures::future::pending().await,
            #[allow(clippy::panic, reason = "the fake exists to test panic containment")]
            Self::Panic => panic!("scripted strategy panic"),
        }
    }
}

/// The script of a [`ScriptedStrategy`].
#[derive(Debug, Clone)]
pub struct StrategyScript {
    /// `is_authenticated`; `Return(None)` answers from the context's signed-in flag.
    pub precheck: Script<Option<bool>>,
    /// Stages `post` enters before it plays `post`.
    pub post_stages: Vec<FailureStage>,
    /// `post`. On `Return`, the text is recorded as posted ([`ScriptedStrategy::posted`]).
    pub post: Script<SubmitReceipt>,
    /// `verify`.
    pub verify: Script<VerifyOutcome>,
    /// Changes `post` makes to the context's state (a refreshed cookie, say).
    pub set_cookie_on_post: Option<abr_protocol::Cookie>,
}

impl Default for StrategyScript {
    /// The happy path: signed in per the context, compose → media → submit, confirmed by
    /// toast.
    fn default() -> Self {
        Self {
            precheck: Script::Return(None),
            post_stages: vec![
                FailureStage::Compose,
                FailureStage::Media,
                FailureStage::Submit,
            ],
            post: Script::Return(SubmitReceipt::default()),
            verify: Script::Return(VerifyOutcome::Confirmed(Verification {
                method: abr_protocol::VerificationMethod::Toast,
                evidence: abr_protocol::VerificationEvidence {
                    permalink: Some("https://fake.example/p/1".into()),
                    ..Default::default()
                },
            })),
            set_cookie_on_post: None,
        }
    }
}

/// A strategy that plays a [`StrategyScript`] on [`FakeContext`]s.
#[derive(Debug)]
pub struct ScriptedStrategy {
    platform: String,
    policy: StrategyPolicy,
    script: Mutex<StrategyScript>,
    posted: Mutex<Vec<String>>,
    verified_notes: Mutex<Vec<Option<String>>>,
    recheck: Mutex<Script<RecheckOutcome>>,
    rechecked: Mutex<Vec<String>>,
    submits: AtomicUsize,
    hold: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
}

impl ScriptedStrategy {
    /// A strategy for `platform` with `policy`, playing the default (happy) script.
    ///
    /// # Panics
    /// If the policy's scope is invalid (test set-up error).
    #[allow(clippy::expect_used, reason = "test fixture")]
    pub fn new(platform: &str, policy: &PlatformPolicy) -> Self {
        Self {
            platform: platform.to_owned(),
            policy: StrategyPolicy::from_spec(policy).expect("valid test policy"),
            script: Mutex::new(StrategyScript::default()),
            posted: Mutex::default(),
            verified_notes: Mutex::default(),
            recheck: Mutex::new(Script::Return(RecheckOutcome::Unavailable {
                detail: "scripted: no re-check".into(),
            })),
            rechecked: Mutex::default(),
            submits: AtomicUsize::new(0),
            hold: Mutex::default(),
        }
    }

    /// What `recheck` plays (by default: unavailable).
    pub fn set_recheck(&self, script: Script<RecheckOutcome>) {
        *lock(&self.recheck) = script;
    }

    /// Texts `recheck` was asked about, in order.
    pub fn rechecked(&self) -> Vec<String> {
        lock(&self.rechecked).clone()
    }

    /// How many times `post` passed its submit stage (the click).
    pub fn submits(&self) -> usize {
        self.submits.load(Ordering::SeqCst)
    }

    /// From now on, `post` waits for a permit of the returned semaphore (none at first)
    /// before it plays its script: a test holds posts in flight and lets them go.
    pub fn hold_posts(&self) -> Arc<tokio::sync::Semaphore> {
        let permits = Arc::new(tokio::sync::Semaphore::new(0));
        *lock(&self.hold) = Some(Arc::clone(&permits));
        permits
    }

    /// The note (a `String`, if one) of every receipt `verify` was handed, in order.
    pub fn verified_notes(&self) -> Vec<Option<String>> {
        lock(&self.verified_notes).clone()
    }

    /// Replaces the script.
    #[must_use]
    pub fn with_script(self, script: StrategyScript) -> Self {
        *lock(&self.script) = script;
        self
    }

    /// Edits the script in place.
    pub fn edit(&self, f: impl FnOnce(&mut StrategyScript)) {
        f(&mut lock(&self.script));
    }

    /// Texts whose `post` returned successfully, in order.
    pub fn posted(&self) -> Vec<String> {
        lock(&self.posted).clone()
    }

    fn script(&self) -> StrategyScript {
        lock(&self.script).clone()
    }
}

#[async_trait]
impl WebPostStrategy<FakeContext> for ScriptedStrategy {
    fn platform(&self) -> &str {
        &self.platform
    }

    fn policy(&self) -> &StrategyPolicy {
        &self.policy
    }

    fn start_url(&self) -> &str {
        "https://fake.example/login"
    }

    async fn is_authenticated(&self, context: &FakeContext) -> Result<bool, StrategyError> {
        let answer = self.script().precheck.play().await?;
        Ok(answer.unwrap_or_else(|| context.signed_in.load(Ordering::SeqCst)))
    }

    async fn post(
        &self,
        context: &FakeContext,
        content: &PostContent,
        progress: &PostProgress,
    ) -> Result<SubmitReceipt, StrategyError> {
        let script = self.script();
        let hold = lock(&self.hold).clone();
        if let Some(hold) = hold
            && let Ok(permit) = hold.acquire().await
        {
            permit.forget();
        }
        for stage in &script.post_stages {
            if *stage == FailureStage::Submit {
                progress.submit().await?;
                self.submits.fetch_add(1, Ordering::SeqCst);
            } else {
                progress.enter(*stage);
            }
        }
        let receipt = script.post.play().await?;
        lock(&self.posted).push(content.text.clone());
        if let Some(cookie) = script.set_cookie_on_post {
            let mut state = lock(&context.state);
            state
                .cookies
                .retain(|c| c.name != cookie.name || c.domain != cookie.domain);
            state.cookies.push(cookie);
        }
        Ok(receipt)
    }

    async fn verify(
        &self,
        _context: &FakeContext,
        receipt: &SubmitReceipt,
    ) -> Result<VerifyOutcome, StrategyError> {
        let note = receipt
            .note
            .as_ref()
            .and_then(|n| n.get::<String>())
            .cloned();
        lock(&self.verified_notes).push(note);
        self.script().verify.play().await
    }

    async fn recheck(
        &self,
        _context: &FakeContext,
        content: &PostContent,
    ) -> Result<RecheckOutcome, StrategyError> {
        lock(&self.rechecked).push(content.text.clone());
        let script = lock(&self.recheck).clone();
        script.play().await
    }
}

/// A clock that only moves when told to (or when something sleeps on it).
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<time::OffsetDateTime>,
    sleeps: Mutex<Vec<std::time::Duration>>,
}

impl ManualClock {
    /// A clock at `start`.
    pub fn new(start: time::OffsetDateTime) -> Self {
        Self {
            now: Mutex::new(start),
            sleeps: Mutex::default(),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: std::time::Duration) {
        *lock(&self.now) += by;
    }

    /// Every sleep requested so far.
    pub fn sleeps(&self) -> Vec<std::time::Duration> {
        lock(&self.sleeps).clone()
    }
}

#[async_trait]
impl crate::clock::Clock for ManualClock {
    fn now(&self) -> time::OffsetDateTime {
        *lock(&self.now)
    }

    async fn sleep(&self, duration: std::time::Duration) {
        lock(&self.sleeps).push(duration);
        self.advance(duration);
    }
}

/// A "random" source that always returns the same number.
#[derive(Debug, Clone, Copy)]
pub struct FixedRandom(pub u64);

impl crate::clock::RandomSource for FixedRandom {
    fn next_u64(&self) -> u64 {
        self.0
    }
}

/// What a [`FakePage`] does instead of an action, once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeFault {
    /// Fails with this kind.
    Fail(StepFailureKind),
    /// Never finishes.
    Hang,
    /// Panics.
    Panic,
}

/// The key a [`FakePage`] knows an element by: a CSS selector as written, `text=<text>`,
/// `role=<role>` or `role=<role>[name=<name>]`.
pub fn selector_key(selector: &Selector) -> String {
    match selector {
        Selector::Css(css) => css.clone(),
        Selector::Explicit(spec) => match (&spec.css, &spec.text, &spec.role, &spec.name) {
            (Some(css), ..) => css.clone(),
            (_, Some(text), ..) => format!("text={text}"),
            (_, _, Some(role), Some(name)) => format!("role={role}[name={name}]"),
            (_, _, Some(role), None) => format!("role={role}"),
            _ => String::new(),
        },
    }
}

/// The key a fault of a [`FakePage`] is attached to: the element's key for actions on an
/// element (the table's or list's for `extract`), the URL for `navigate`, `url:<part>` and
/// `text:<text>` for those waits and checks, `screenshot`.
pub fn action_key(action: &BrowserAction) -> String {
    match action {
        BrowserAction::Navigate { url } => url.as_str().to_owned(),
        BrowserAction::Click { selector }
        | BrowserAction::Type { selector, .. }
        | BrowserAction::Select { selector, .. }
        | BrowserAction::Upload { selector, .. } => selector_key(selector),
        BrowserAction::Wait {
            selector,
            url,
            text,
        } => match (selector, url, text) {
            (Some(selector), _, _) => selector_key(selector),
            (_, Some(url), _) => format!("url:{url}"),
            (_, _, Some(text)) => format!("text:{text}"),
            _ => String::new(),
        },
        BrowserAction::Extract { what } => selector_key(extraction_selector(what)),
        BrowserAction::Screenshot => "screenshot".to_owned(),
        BrowserAction::Assert { check } => match (&check.selector, &check.text) {
            (Some(selector), _) => selector_key(selector),
            (None, Some(text)) => format!("text:{text}"),
            (None, None) => String::new(),
        },
        BrowserAction::Press { selector, key } => match selector {
            Some(selector) => selector_key(selector),
            None => format!("key:{key}"),
        },
        BrowserAction::Scroll { .. } => "scroll".to_owned(),
        BrowserAction::Back => "back".to_owned(),
    }
}

fn extraction_selector(what: &abr_protocol::Extraction) -> &Selector {
    use abr_protocol::Extraction as E;
    match what {
        E::Text { selector }
        | E::Attribute { selector, .. }
        | E::Table { selector }
        | E::List { selector, .. } => selector,
    }
}

#[derive(Debug, Default)]
struct PageState {
    /// Downloads a click on an element starts ([`FakePage::downloads_on`]).
    downloads_on: BTreeMap<String, Vec<crate::guard::downloads::CaughtDownload>>,
    /// The limits the page's downloads are caught within, once caught.
    catching: Option<crate::guard::downloads::DownloadLimits>,
    /// Catching downloads is refused ([`FakePage::cannot_keep_downloads`]).
    no_catching: bool,
    /// Downloads caught, not taken yet; and how many were seen.
    caught: Vec<crate::guard::downloads::CaughtDownload>,
    caught_seen: usize,
    url: String,
    text: String,
    missing: BTreeSet<String>,
    text_after: BTreeMap<String, String>,
    extracts: BTreeMap<String, Value>,
    faults_at_call: BTreeMap<usize, FakeFault>,
    faults_on: BTreeMap<String, FakeFault>,
    signed_out: bool,
    actions: Vec<BrowserAction>,
    calls: usize,
    facts: BTreeMap<String, crate::guard::element::ElementFacts>,
    signals: Option<crate::guard::probe::PageSignals>,
    fail_frames: bool,
    frames_taken: usize,
    /// The platform redaction the last frame was asked for.
    frame_redaction: Option<crate::guard::redaction::PageRedaction>,
    /// Where elements are ([`FakePage::set_box`]).
    boxes: BTreeMap<String, crate::guard::probe::ElementBox>,
    /// Whether frames carry a mark ([`FakePage::watch_frames`]).
    watch_frames: bool,
    /// Changes to the page: every action that is not a read, and [`FakePage::change`].
    changes: u64,
    /// Elements whose every action (a read too) changes the page ([`FakePage::changes_on`]).
    changes_on: BTreeSet<String>,
    /// How often the page was asked whether it changed since a frame.
    still_checks: usize,
    /// How long after its action a script's request is sent ([`FakePage::scripts_send_after`]).
    scripts_send_after: Option<std::time::Duration>,
    /// How long the next frames hold their blur ([`FakePage::frame_takes`]).
    frame_takes: std::collections::VecDeque<std::time::Duration>,
    /// Frames holding their blur now.
    blurring: usize,
    /// What the page saw while a frame held its blur ([`FakePage::under_blur`]).
    under_blur: Vec<String>,
    inspected: usize,
    site_filter: Option<Arc<dyn crate::guard::probe::SiteFilter>>,
    gate: Option<Arc<dyn crate::guard::network::RequestGate>>,
    focused: Option<crate::guard::element::ElementFacts>,
    /// `action_key` → requests (method, URL) the page sends when that action runs.
    requests_on: BTreeMap<String, Vec<(String, String)>>,
    /// Requests (method, URL) that left the fake browser, in order.
    sent: Vec<(String, String)>,
    /// Requests the gate held back.
    refused: Vec<(String, String)>,
}

/// A scriptable page for step plans: every element is present unless [`FakePage::remove`]d,
/// the page shows a text ([`FakePage::set_text`], or [`FakePage::text_after`] a click or an
/// Enter), `extract` returns what [`FakePage::extract_result`] says (else a string), a
/// screenshot is a few fake PNG bytes, and faults play once, by call number or by target.
/// Every action run is recorded, also those that failed, hung or panicked.
#[derive(Debug, Default)]
pub struct FakePage {
    state: Mutex<PageState>,
}

impl FakePage {
    fn lock(&self) -> std::sync::MutexGuard<'_, PageState> {
        lock(&self.state)
    }

    /// The element `key` ([`selector_key`]) is absent: actions on it fail `NotFound`,
    /// checks of it answer false.
    pub fn remove(&self, key: &str) {
        self.lock().missing.insert(key.to_owned());
    }

    /// The element `key` is present again.
    pub fn restore(&self, key: &str) {
        self.lock().missing.remove(key);
    }

    /// A click on the element `key` downloads `files` (each with its bytes): caught
    /// within the limits once the run keeps downloads, else refused by the browser.
    pub fn downloads_on(&self, key: &str, files: Vec<crate::guard::downloads::CaughtDownload>) {
        self.lock().downloads_on.insert(key.to_owned(), files);
    }

    /// This browser cannot keep downloads (as a provider without the means).
    pub fn cannot_keep_downloads(&self) {
        self.lock().no_catching = true;
    }

    /// The page's visible text.
    pub fn set_text(&self, text: &str) {
        text.clone_into(&mut self.lock().text);
    }

    /// The page's visible text now.
    pub fn text(&self) -> String {
        self.lock().text.clone()
    }

    /// After a click on `key` (or Enter in it), the page shows `text`.
    pub fn text_after(&self, key: &str, text: &str) {
        self.lock()
            .text_after
            .insert(key.to_owned(), text.to_owned());
    }

    /// What an `extract` of the element `key` returns.
    pub fn extract_result(&self, key: &str, value: Value) {
        self.lock().extracts.insert(key.to_owned(), value);
    }

    /// The `n`th call to `run` (0-based, counting every context of the provider) plays
    /// `fault` instead.
    pub fn fault_at_call(&self, n: usize, fault: FakeFault) {
        self.lock().faults_at_call.insert(n, fault);
    }

    /// The next action on `key` ([`action_key`]) plays `fault` instead.
    pub fn fault_on(&self, key: &str, fault: FakeFault) {
        self.lock().faults_on.insert(key.to_owned(), fault);
    }

    /// Whether the site has signed the browser out: every action and `page_text` fail
    /// `SignedOut`.
    pub fn sign_out(&self, signed_out: bool) {
        self.lock().signed_out = signed_out;
    }

    /// Every action run so far, in order.
    pub fn actions(&self) -> Vec<BrowserAction> {
        self.lock().actions.clone()
    }

    /// How many actions of `kind` (`click`, ...) ran.
    pub fn count(&self, kind: &str) -> usize {
        self.lock()
            .actions
            .iter()
            .filter(|a| a.kind() == kind)
            .count()
    }

    /// How many clicks (and Enters) on `key` ran.
    pub fn clicks_on(&self, key: &str) -> usize {
        self.lock()
            .actions
            .iter()
            .filter(|a| match a {
                BrowserAction::Click { selector } => selector_key(selector) == key,
                BrowserAction::Type {
                    selector,
                    submit: true,
                    ..
                } => selector_key(selector) == key,
                _ => false,
            })
            .count()
    }

    /// The URL of the last `navigate`.
    pub fn url(&self) -> String {
        self.lock().url.clone()
    }

    /// What `inspect` answers for the element `key` (default: a submit button in a form
    /// named `key`, so that every click counts as committing, as before the guard knew
    /// elements).
    pub fn set_facts(&self, key: &str, facts: crate::guard::element::ElementFacts) {
        self.lock().facts.insert(key.to_owned(), facts);
    }

    /// Where the element `key` is in a frame (default: nowhere the fake can tell).
    pub fn set_box(&self, key: &str, at: crate::guard::probe::ElementBox) {
        self.lock().boxes.insert(key.to_owned(), at);
    }

    /// What `signals` answers (default: the URL and text, status 200, nothing else).
    pub fn set_signals(&self, signals: Option<crate::guard::probe::PageSignals>) {
        self.lock().signals = signals;
    }

    /// Whether redacted frames fail (the blur cannot be confirmed).
    pub fn fail_frames(&self, fail: bool) {
        self.lock().fail_frames = fail;
    }

    /// How many redacted frames the browser took.
    pub fn frames_taken(&self) -> usize {
        self.lock().frames_taken
    }

    /// The platform redaction the last frame was asked for (`None`: no frame yet).
    pub fn frame_redaction(&self) -> Option<crate::guard::redaction::PageRedaction> {
        self.lock().frame_redaction.clone()
    }

    /// Whether the page watches for changes: its frames carry a mark (the URL and a count of
    /// changes: every action but a read, a wait and a screenshot, and [`FakePage::change`]),
    /// and [`PageProbe::unchanged_since`](crate::guard::probe::PageProbe::unchanged_since)
    /// compares the page with it. Off by default: a provider that cannot tell.
    pub fn watch_frames(&self, watch: bool) {
        self.lock().watch_frames = watch;
    }

    /// The page changes by itself (a script's doing).
    pub fn change(&self) {
        self.lock().changes += 1;
    }

    /// Every action on the element `key` ([`action_key`]), a read too, finds the page
    /// changed (its script updates it meanwhile).
    pub fn changes_on(&self, key: &str) {
        self.lock().changes_on.insert(key.to_owned());
    }

    /// How often the page was asked whether it changed since a frame.
    pub fn still_checks(&self) -> usize {
        self.lock().still_checks
    }

    /// The next redacted frames hold their blur on the page for these times, one each, and
    /// every later one for the last (a capture waiting for the compositor), so that what
    /// the page sees meanwhile is recorded ([`FakePage::under_blur`]).
    pub fn frame_takes(&self, takes: &[std::time::Duration]) {
        self.lock().frame_takes = takes.iter().copied().collect();
    }

    /// What reached the page while a frame held its blur, in order: the kind of each action
    /// run (`click`, `assert`, ...) and `read` for each read of the page (its signals, an
    /// element's facts).
    pub fn under_blur(&self) -> Vec<String> {
        self.lock().under_blur.clone()
    }

    /// Whether a frame holds its blur on the page now.
    pub fn blurred(&self) -> bool {
        self.lock().blurring > 0
    }

    /// How many elements were inspected.
    pub fn inspected(&self) -> usize {
        self.lock().inspected
    }

    /// Whether a site filter was installed.
    pub fn has_site_filter(&self) -> bool {
        self.lock().site_filter.is_some()
    }

    /// Whether a network gate was installed.
    pub fn has_network_gate(&self) -> bool {
        self.lock().gate.is_some()
    }

    /// When the action `key` ([`action_key`]) runs, the page sends a request `method` to
    /// `url` (through the network gate, once the action is done, like a script it started);
    /// also under the element's snapshot reference.
    pub fn request_on(&self, key: &str, method: &str, url: &str) {
        self.lock()
            .requests_on
            .entry(key.to_owned())
            .or_default()
            .push((method.to_owned(), url.to_owned()));
    }

    /// The requests of [`FakePage::request_on`] are sent `after` the action returned (a
    /// handler's `fetch` that waits on a timer), not as it returns.
    pub fn scripts_send_after(&self, after: std::time::Duration) {
        self.lock().scripts_send_after = Some(after);
    }

    /// What `inspect_focused` answers (default: only the document has the focus).
    pub fn set_focused(&self, facts: Option<crate::guard::element::ElementFacts>) {
        self.lock().focused = facts;
    }

    /// Requests that left the fake browser (the gate let them through, or none was
    /// installed), as (method, URL).
    pub fn sent(&self) -> Vec<(String, String)> {
        self.lock().sent.clone()
    }

    /// Requests the network gate refused, as (method, URL).
    pub fn refused_requests(&self) -> Vec<(String, String)> {
        self.lock().refused.clone()
    }

    /// The page's own script sends a request `method` to `url` now (a timer's), through the
    /// network gate when one is installed: whether it left.
    pub async fn page_sends(&self, method: &str, url: &str) -> bool {
        let gate = self.lock().gate.clone();
        let admitted = match &gate {
            Some(gate) if !crate::guard::network::is_safe_method(method) => {
                let request = crate::guard::network::OutgoingRequest {
                    method,
                    url,
                    resource_type: "fetch",
                    content_type: None,
                    body: None,
                };
                gate.admit(&request).await
            }
            _ => true,
        };
        let mut page = self.lock();
        let sent = (method.to_owned(), url.to_owned());
        if admitted {
            page.sent.push(sent);
        } else {
            page.refused.push(sent);
        }
        admitted
    }

    /// Sends the requests `action` makes the page send through the gate, in order.
    async fn send_requests(&self, action: &BrowserAction) {
        let requests = self
            .lock()
            .requests_on
            .get(&action_key(action))
            .cloned()
            .unwrap_or_default();
        for (method, url) in requests {
            self.page_sends(&method, &url).await;
        }
    }

    /// Records `action` and plays it (or its fault) on the state; `Err(fault)` for a hang
    /// or a panic, played outside the lock.
    fn play(&self, action: &BrowserAction) -> Result<Result<StepOutput, StepFailure>, FakeFault> {
        let mut page = self.lock();
        let call = page.calls;
        page.calls += 1;
        page.actions.push(action.clone());
        let key = action_key(action);
        if page.changes_on.contains(&key)
            || !matches!(
                action,
                BrowserAction::Extract { .. }
                    | BrowserAction::Assert { .. }
                    | BrowserAction::Wait { .. }
                    | BrowserAction::Screenshot
            )
        {
            page.changes += 1;
        }
        if page.blurring > 0 {
            page.under_blur.push(action.kind().to_owned());
        }
        let fault = page
            .faults_at_call
            .remove(&call)
            .or_else(|| page.faults_on.remove(&key));
        match fault {
            Some(FakeFault::Fail(kind)) => {
                return Ok(Err(StepFailure::new(kind, "fake step failure")));
            }
            Some(other) => return Err(other),
            None => {}
        }
        if page.signed_out {
            return Ok(Err(StepFailure::new(
                StepFailureKind::SignedOut,
                "the fake site shows its sign-in page",
            )));
        }
        let present =
            |page: &PageState, selector: &Selector| !page.missing.contains(&selector_key(selector));
        let not_found = || {
            Ok(Err(StepFailure::new(
                StepFailureKind::NotFound,
                "the fake element is not on the page",
            )))
        };
        let output = match action {
            BrowserAction::Navigate { url } => {
                let host = url.host_str().unwrap_or_default();
                if page.site_filter.as_ref().is_some_and(|f| !f.may_open(host)) {
                    return Ok(Err(StepFailure::new(
                        StepFailureKind::Navigation,
                        "the site filter aborted the document",
                    )));
                }
                page.url = url.as_str().to_owned();
                StepOutput::Done
            }
            BrowserAction::Click { selector }
            | BrowserAction::Type {
                selector,
                submit: true,
                ..
            } => {
                if !present(&page, selector) {
                    return not_found();
                }
                if let Some(text) = page.text_after.get(&selector_key(selector)).cloned() {
                    page.text = text;
                }
                let files = page.downloads_on.get(&selector_key(selector)).cloned();
                if let (Some(files), Some(limits)) = (files, page.catching) {
                    for mut file in files {
                        page.caught_seen += 1;
                        if page.caught_seen > limits.max_count {
                            file.bytes = Err(crate::guard::downloads::DownloadRefused::TooMany);
                        } else if file.size > limits.max_bytes {
                            file.bytes = Err(crate::guard::downloads::DownloadRefused::TooLarge);
                        }
                        page.caught.push(file);
                    }
                }
                StepOutput::Done
            }
            BrowserAction::Type { selector, .. }
            | BrowserAction::Select { selector, .. }
            | BrowserAction::Upload { selector, .. } => {
                if !present(&page, selector) {
                    return not_found();
                }
                StepOutput::Done
            }
            BrowserAction::Wait {
                selector,
                url,
                text,
            } => {
                let ok = selector.as_ref().is_none_or(|s| present(&page, s))
                    && url.as_ref().is_none_or(|u| page.url.contains(u.as_str()))
                    && text.as_ref().is_none_or(|t| page.text.contains(t.as_str()));
                if !ok {
                    return not_found();
                }
                StepOutput::Done
            }
            BrowserAction::Extract { what } => {
                let selector = extraction_selector(what);
                if !present(&page, selector) {
                    return not_found();
                }
                let key = selector_key(selector);
                StepOutput::Extracted(
                    page.extracts
                        .get(&key)
                        .cloned()
                        .unwrap_or_else(|| Value::String(format!("text of {key}"))),
                )
            }
            BrowserAction::Press {
                selector: Some(selector),
                key,
            } => {
                if !present(&page, selector) {
                    return not_found();
                }
                if key == "Enter"
                    && let Some(text) = page.text_after.get(&selector_key(selector)).cloned()
                {
                    page.text = text;
                }
                StepOutput::Done
            }
            BrowserAction::Press { selector: None, .. }
            | BrowserAction::Scroll { .. }
            | BrowserAction::Back => StepOutput::Done,
            BrowserAction::Screenshot => StepOutput::Screenshot(b"\x89PNG fake".to_vec()),
            BrowserAction::Assert { check } => StepOutput::Checked(
                check.selector.as_ref().is_none_or(|s| present(&page, s))
                    && check
                        .text
                        .as_ref()
                        .is_none_or(|t| page.text.contains(t.as_str())),
            ),
        };
        Ok(Ok(output))
    }
}

/// A fake frame's blur on the page: off again when dropped (taken, or given up).
struct Blur<'a>(&'a FakePage);

impl<'a> Blur<'a> {
    fn on(page: &'a FakePage) -> Self {
        page.lock().blurring += 1;
        Self(page)
    }
}

impl Drop for Blur<'_> {
    fn drop(&mut self) {
        let mut page = self.0.lock();
        page.blurring = page.blurring.saturating_sub(1);
    }
}

/// The fake element's facts, counted as an inspection.
fn fake_facts(
    page: &mut PageState,
    selector: &Selector,
) -> Result<crate::guard::element::ElementFacts, StepFailure> {
    page.inspected += 1;
    if page.blurring > 0 {
        page.under_blur.push("read".into());
    }
    if page.signed_out {
        return Err(StepFailure::new(
            StepFailureKind::SignedOut,
            "the fake site shows its sign-in page",
        ));
    }
    let key = selector_key(selector);
    if page.missing.contains(&key) {
        return Err(StepFailure::new(
            StepFailureKind::NotFound,
            "the fake element is not on the page",
        ));
    }
    Ok(page
        .facts
        .get(&key)
        .cloned()
        .unwrap_or_else(|| crate::guard::element::ElementFacts {
            tag: "button".into(),
            input_type: Some("submit".into()),
            name: key,
            in_form: true,
            form_has_submit: true,
            ..crate::guard::element::ElementFacts::default()
        }))
}

#[async_trait]
impl crate::guard::probe::PageProbe for FakeContext {
    async fn catch_downloads(
        &self,
        limits: crate::guard::downloads::DownloadLimits,
    ) -> Result<(), StepFailure> {
        let mut page = self.page.lock();
        if page.no_catching {
            return Err(StepFailure::new(
                StepFailureKind::Rejected,
                "this browser cannot keep downloads: they stay refused",
            ));
        }
        page.catching = Some(limits);
        Ok(())
    }

    fn take_downloads(&self) -> Vec<crate::guard::downloads::CaughtDownload> {
        std::mem::take(&mut self.page.lock().caught)
    }

    async fn inspect(
        &self,
        selector: &Selector,
        _reach: crate::guard::probe::Reach,
        _timeout: std::time::Duration,
    ) -> Result<crate::guard::element::ElementFacts, StepFailure> {
        let mut page = self.page.lock();
        fake_facts(&mut page, selector)
    }

    /// The signals and, when the element is there, its facts (an inspection).
    async fn signals_ahead(
        &self,
        ahead: &Selector,
        _reach: crate::guard::probe::Reach,
        timeout: std::time::Duration,
    ) -> Result<
        (
            crate::guard::probe::PageSignals,
            Option<crate::guard::element::ElementFacts>,
        ),
        StepFailure,
    > {
        let signals = self.signals(timeout).await?;
        let mut page = self.page.lock();
        Ok((signals, fake_facts(&mut page, ahead).ok()))
    }

    async fn signals(
        &self,
        _timeout: std::time::Duration,
    ) -> Result<crate::guard::probe::PageSignals, StepFailure> {
        // A read is a round trip to the page: whatever else the runner has going (a frame
        // being taken) goes on meanwhile.
        tokio::task::yield_now().await;
        let mut page = self.page.lock();
        if page.blurring > 0 {
            page.under_blur.push("read".into());
        }
        Ok(page
            .signals
            .clone()
            .unwrap_or_else(|| crate::guard::probe::PageSignals {
                url: page.url.clone(),
                status: Some(200),
                text: page.text.to_lowercase(),
                ..crate::guard::probe::PageSignals::default()
            }))
    }

    async fn redacted_frame(
        &self,
        _max_bytes: usize,
        redaction: &crate::guard::redaction::PageRedaction,
        _timeout: std::time::Duration,
    ) -> Result<crate::guard::probe::RedactedFrame, crate::guard::probe::FrameError> {
        let takes = {
            let mut page = self.page.lock();
            if page.fail_frames {
                return Err(crate::guard::probe::FrameError::BlurUnconfirmed {
                    fields: 1,
                    unconfirmed: 1,
                });
            }
            if page.frame_takes.len() > 1 {
                page.frame_takes.pop_front()
            } else {
                page.frame_takes.front().copied()
            }
        };
        if let Some(takes) = takes {
            let blur = Blur::on(&self.page);
            tokio::time::sleep(takes).await;
            drop(blur);
        }
        let mut page = self.page.lock();
        page.frames_taken += 1;
        page.frame_redaction = Some(redaction.clone());
        Ok(crate::guard::probe::RedactedFrame {
            jpeg: [
                // A start of frame: 1280 × 720.
                b"\xFF\xD8\xFF\xC0\x00\x11\x08\x02\xD0\x05\x00 fake jpeg ".as_slice(),
                page.frames_taken.to_string().as_bytes(),
            ]
            .concat(),
            url: page.url.clone(),
            blurred: 0,
            masked: 0,
            mark: page
                .watch_frames
                .then(|| format!("{}#{}", page.url, page.changes)),
        })
    }

    async fn unchanged_since(&self, mark: &str, _timeout: std::time::Duration) -> bool {
        let mut page = self.page.lock();
        page.still_checks += 1;
        page.watch_frames && mark == format!("{}#{}", page.url, page.changes)
    }

    async fn filter_sites(
        &self,
        filter: Arc<dyn crate::guard::probe::SiteFilter>,
    ) -> Result<(), StepFailure> {
        self.page.lock().site_filter = Some(filter);
        Ok(())
    }

    async fn guard_network(
        &self,
        gate: Arc<dyn crate::guard::network::RequestGate>,
    ) -> Result<(), StepFailure> {
        self.page.lock().gate = Some(gate);
        Ok(())
    }

    async fn inspect_focused(
        &self,
        _timeout: std::time::Duration,
    ) -> Result<Option<crate::guard::element::ElementFacts>, StepFailure> {
        Ok(self.page.lock().focused.clone())
    }

    async fn element_box(
        &self,
        selector: &Selector,
        _reach: crate::guard::probe::Reach,
        _timeout: std::time::Duration,
    ) -> Option<crate::guard::probe::ElementBox> {
        self.page.lock().boxes.get(&selector_key(selector)).copied()
    }

    /// Lists the elements given facts ([`FakePage::set_facts`]) as `e1`, `e2`, ... in key
    /// order, with their facts (and [`FakePage::text_after`], their requests, their box and
    /// a fault set on them) also under their reference's selector, and the page's text.
    async fn snapshot(
        &self,
        request: &crate::guard::probe::SnapshotRequest,
        _timeout: std::time::Duration,
    ) -> Result<abr_protocol::Snapshot, StepFailure> {
        let mut page = self.page.lock();
        let prefix = format!("[{}=", request.attr);
        let listed: Vec<(String, crate::guard::element::ElementFacts)> = page
            .facts
            .iter()
            .filter(|(key, _)| !key.starts_with(&prefix))
            .map(|(key, facts)| (key.clone(), facts.clone()))
            .collect();
        let mut elements = Vec::new();
        for (i, (own, facts)) in listed.into_iter().enumerate() {
            let reference = format!("e{}", i + 1);
            let key = selector_key(&request.selector(&reference));
            if let Some(after) = page.text_after.get(&own).cloned() {
                page.text_after.insert(key.clone(), after);
            }
            if let Some(requests) = page.requests_on.get(&own).cloned() {
                page.requests_on.insert(key.clone(), requests);
            }
            if let Some(fault) = page.faults_on.get(&own).cloned() {
                page.faults_on.insert(key.clone(), fault);
            }
            if let Some(at) = page.boxes.get(&own).copied() {
                page.boxes.insert(key.clone(), at);
            }
            elements.push(abr_protocol::SnapshotElement {
                reference,
                role: facts.role.clone().unwrap_or_else(|| facts.tag.clone()),
                name: facts.name.clone(),
                ..abr_protocol::SnapshotElement::default()
            });
            page.facts.insert(key, facts);
        }
        // Paged as the browser's probe pages: every element has its reference, the
        // request's window is listed.
        let total = elements.len();
        let skip = request.from.saturating_sub(1);
        let elements: Vec<_> = elements
            .into_iter()
            .skip(skip)
            .take(request.max_elements)
            .collect();
        let next = (skip + elements.len() < total).then_some(skip + elements.len() + 1);
        Ok(abr_protocol::Snapshot {
            url: page.url.clone(),
            title: String::new(),
            page: Some(abr_protocol::SnapshotPage {
                from: request.from,
                count: elements.len(),
                total,
                next,
                text_total: page.text.chars().count(),
            }),
            elements,
            text: page.text.clone(),
            truncated: next.is_some(),
            headings: Vec::new(),
        })
    }
}

#[async_trait]
impl StepRunner for FakeContext {
    async fn run(
        &self,
        action: &BrowserAction,
        _timeout: std::time::Duration,
    ) -> Result<StepOutput, StepFailure> {
        match self.page.play(action) {
            Ok(result) => {
                if result.is_ok() {
                    let after = self.page.lock().scripts_send_after;
                    match after {
                        None => self.page.send_requests(action).await,
                        Some(after) => {
                            let page = Arc::clone(&self.page);
                            let action = action.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep(after).await;
                                page.send_requests(&action).await;
                            });
                        }
                    }
                }
                result
            }
            Err(FakeFault::Hang) => futures::future::pending().await,
            #[allow(clippy::panic, reason = "the fake exists to test panic containment")]
            Err(_) => panic!("fake page panic"),
        }
    }

    async fn page_text(&self, _timeout: std::time::Duration) -> Result<String, StepFailure> {
        let page = self.page.lock();
        if page.signed_out {
            return Err(StepFailure::new(
                StepFailureKind::SignedOut,
                "the fake site shows its sign-in page",
            ));
        }
        Ok(page.text.clone())
    }
}

/// An actor of `role` for `tenant`: an operator's key of every tenant acting for it, or an
/// agent's or approver's key bound to it (named after its role). For tests that call the
/// engine's door as a caller the service would have authenticated.
#[allow(
    clippy::expect_used,
    reason = "test fixture: the role and tenant are the test's"
)]
pub fn actor(role: abr_protocol::Role, tenant: &str) -> crate::principal::Actor {
    use crate::principal::{Principal, Tenants};
    let tenants = match role {
        abr_protocol::Role::Operator => Tenants::All,
        _ => Tenants::One(tenant.to_owned()),
    };
    let name = format!("{role:?}").to_ascii_lowercase();
    let principal = Principal::new(format!("key_{name}"), &name, role, tenants, false)
        .expect("a valid test principal");
    Arc::new(principal)
        .act_for(Some(tenant))
        .expect("the principal acts for its tenant")
}
