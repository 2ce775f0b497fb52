//! Embeds the runtime in a Rust application with a strategy of your own.
//!
//! It starts the demo site on loopback, defines `MyDemoStrategy` (a minimal but honest
//! [`WebPostStrategy`] for that site), signs in once to get a session, then registers the
//! strategy with an [`Engine`] (built by [`EngineBuilder`] over the local Chromium provider
//! and an in-memory store) and posts through it, as an operator acting for one tenant, and
//! checks every outcome against the site's ground truth. It exits non-zero when ABR's answer
//! disagrees with what the site actually stored.
//!
//! Run: `cargo run -p abr-service --example custom_strategy`
//!
//! # Writing a strategy for your own site
//!
//! A strategy is three async methods on the browser context a provider hands out
//! ([`BrowserSession`]: a Playwright `BrowserContext` plus its first `Page`). It runs behind
//! [`Engine`], the runtime's one door: `Engine::post` checks the caller's rights and tenant,
//! admits the job (a job slot, the tenant's limits), records the post (at most once per
//! idempotency key), and owns everything around your methods: scoping the session going in
//! and coming out, deadlines, panics, and mapping what you report to exactly one outcome row
//! (`ok` / `uncertain` / `needsReauth` / `failureStage`). Your part of the contract:
//!
//! 1. **Enter a stage before acting.** Call `progress.enter(FailureStage::Submit)` *before*
//!    the click that may publish, never after. If anything fails, times out or panics from
//!    then on, the engine reports `uncertain` (never retried) instead of a retryable failure.
//! 2. **Prove the outcome.** `VerifyOutcome::Confirmed` only with evidence (a success toast,
//!    a permalink, a read-back). Anything you could not prove is `Unconfirmed`; a simple
//!    strategy that is honest beats a clever one that guesses.
//! 3. **Never put content or secrets in errors.** Error messages and evidence end up in
//!    logs, audit events and the orchestrator's database: no post text, no cookie values,
//!    no tokens.

use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;

use abr_core::principal::{Actor, Principal, Tenants};
use abr_core::store::InMemoryStore;
use abr_core::{
    AcquireMode, AcquireRequest, DynSessionProvider, PostProgress, SessionContext, SessionProvider,
    StrategyError, StrategyPolicy, SubmitReceipt, VerifyOutcome, WebPostStrategy,
};
use abr_demo::{DemoSite, FaultMode, site::DEMO_PASSWORD};
use abr_engine::{Engine, EngineBuilder, EngineConfig, PostReply};
use abr_protocol::{
    AgentPostResult, AgentSessionState, FailureStage, PlatformPolicy, PostContent, PostOutcome,
    PostRequest, Role, SessionScopeSpec, Verification, VerificationEvidence, VerificationMethod,
};
use abr_providers::{BrowserSession, LocalBrowserSessionProvider, LocalProviderConfig};
use async_trait::async_trait;
use url::Url;

type BoxError = Box<dyn Error + Send + Sync>;

/// Default deadline of each page action of the strategy, in milliseconds. The engine also
/// bounds every step (`StepTimeouts`); these only make a stuck page fail fast.
const ACTION_TIMEOUT_MS: f64 = 10_000.0;

/// Marks the composer document just before the submit click; the page the site answers
/// with is a new document without the mark, which is how we know the submit landed.
const MARK_COMPOSER: &str = "() => { window.__myStrategySubmitted = true; }";
const NEW_DOCUMENT_LOADED: &str =
    "() => window.__myStrategySubmitted !== true && document.readyState === 'complete'";

/// A strategy for the demo site, written from its HTML contract only:
///
/// - `/compose` shows `#post-text` and `#submit` when signed in, else redirects to `/login`;
/// - after a successful submit the page shows `.toast-success a` linking to `/p/{id}`.
///
/// Deliberately simpler than `abr_demo::DemoStrategy` (no media, no read-back from the
/// feed): when there is no toast it cannot prove anything, so it says `Unconfirmed` and
/// the engine reports `uncertain`, never a false `ok`.
#[derive(Debug)]
struct MyDemoStrategy {
    base: Url,
    start_url: String,
    policy: StrategyPolicy,
}

impl MyDemoStrategy {
    /// A strategy for the site at `base_url` (`http://127.0.0.1:PORT`).
    fn new(base_url: &str) -> Result<Self, BoxError> {
        let base = Url::parse(base_url)?;
        let host = base
            .host_str()
            .ok_or("the site URL has no host")?
            .to_owned();
        let origin = base.origin().ascii_serialization();
        // The session scope: which cookies (by domain) and which localStorage (by exact
        // origin) may enter the browser and leave it again in `refreshedSession`. Everything
        // else a user's browser picked up (trackers, other sites) is dropped by the engine.
        // It is validated here, at registration: an over-broad scope (`com`) is refused.
        let policy = StrategyPolicy::from_spec(&PlatformPolicy {
            allow_interactive_capture: Some(true),
            allow_unattended: Some(true),
            session: Some(SessionScopeSpec {
                cookie_domains: vec![host],
                origins: vec![origin],
            }),
            ..PlatformPolicy::default()
        })?;
        let start_url = base.join("/login")?.to_string();
        Ok(Self {
            base,
            start_url,
            policy,
        })
    }

    fn url(&self, path: &str) -> Result<String, StrategyError> {
        self.base
            .join(path)
            .map(String::from)
            .map_err(|_| StrategyError::failed("bad_url", format!("cannot build the URL {path}")))
    }

    fn on_login_page(&self, page_url: &str) -> bool {
        Url::parse(page_url).is_ok_and(|u| u.origin() == self.base.origin() && u.path() == "/login")
    }
}

#[async_trait]
impl WebPostStrategy<BrowserSession> for MyDemoStrategy {
    fn platform(&self) -> &str {
        "my-demo"
    }

    fn policy(&self) -> &StrategyPolicy {
        &self.policy
    }

    fn start_url(&self) -> &str {
        &self.start_url
    }

    /// Only looks, never acts. It asks the site through the context's request API, which
    /// shares the context's cookie jar but not its page: during a capture the page is the
    /// one a person is signing in on, and navigating it would break their sign-in.
    async fn is_authenticated(&self, session: &BrowserSession) -> Result<bool, StrategyError> {
        let api = session
            .context()
            .request()
            .await
            .map_err(|e| StrategyError::failed("request_api_unavailable", e.to_string()))?;
        // Redirects are followed: a signed-out session ends on /login.
        let response = api
            .get(&self.url("/compose")?, None)
            .await
            .map_err(|e| StrategyError::failed("session_check_failed", e.to_string()))?;
        if self.on_login_page(response.url()) {
            return Ok(false);
        }
        if !response.ok() {
            return Err(StrategyError::failed(
                "session_check_failed",
                format!("/compose answered HTTP {}", response.status()),
            ));
        }
        let body = response
            .text()
            .await
            .map_err(|e| StrategyError::failed("session_check_failed", e.to_string()))?;
        if body.contains("id=\"post-text\"") {
            Ok(true)
        } else {
            // Neither signed in nor signed out: say so, do not guess.
            Err(StrategyError::failed(
                "composer_not_found",
                "/compose shows neither the composer nor the sign-in page",
            ))
        }
    }

    async fn post(
        &self,
        session: &BrowserSession,
        content: &PostContent,
        progress: &PostProgress,
    ) -> Result<SubmitReceipt, StrategyError> {
        let page = session.page();
        page.set_default_timeout(ACTION_TIMEOUT_MS).await;
        page.set_default_navigation_timeout(ACTION_TIMEOUT_MS).await;
        if !content.media.is_empty() {
            // Refusing before anything was typed: nothing can have been posted.
            return Err(StrategyError::not_posted(
                "media_unsupported",
                "this strategy posts text only",
            ));
        }

        // Stage 1: compose. A failure here is "failed before submit": safe to retry.
        progress.enter(FailureStage::Compose);
        page.goto(&self.url("/compose")?, None)
            .await
            .map_err(|e| StrategyError::failed("navigation_failed", format!("/compose: {e}")))?;
        if self.on_login_page(&page.url()) {
            return Err(StrategyError::needs_reauth(
                "the composer redirected to the sign-in page",
            ));
        }
        // Playwright's error could echo the argument: report the step, not the text.
        page.locator("#post-text")
            .fill(&content.text, None)
            .await
            .map_err(|_| StrategyError::failed("compose_failed", "could not fill #post-text"))?;
        page.evaluate::<(), ()>(MARK_COMPOSER, None)
            .await
            .map_err(|e| StrategyError::failed("submit_prepare_failed", e.to_string()))?;

        // Stage 2: submit. Entered *before* the click: from here on, a failure may mean the
        // post went out, and the engine will report it as uncertain rather than retryable.
        progress.enter(FailureStage::Submit);
        page.locator("#submit").click(None).await.map_err(|e| {
            StrategyError::failed("submit_failed", format!("clicking #submit: {e}"))
        })?;
        page.wait_for_function(NEW_DOCUMENT_LOADED, None)
            .await
            .map_err(|_| {
                StrategyError::failed("submit_no_response", "no page loaded after #submit")
            })?;
        if self.on_login_page(&page.url()) {
            return Err(StrategyError::needs_reauth(
                "the site signed the session out at submit",
            ));
        }
        // Whatever we can already see goes to `verify` in the receipt.
        let observed = toast(session, &self.base).await;
        Ok(SubmitReceipt {
            observed,
            note: None,
        })
    }

    async fn verify(
        &self,
        session: &BrowserSession,
        receipt: &SubmitReceipt,
    ) -> Result<VerifyOutcome, StrategyError> {
        if let Some(seen) = &receipt.observed {
            return Ok(VerifyOutcome::Confirmed(seen.clone()));
        }
        if let Some(seen) = toast(session, &self.base).await {
            return Ok(VerifyOutcome::Confirmed(seen));
        }
        // No proof either way. (DemoStrategy would now read the feed back; we don't, so we
        // must not claim anything: the engine reports `uncertain` and nobody retries.)
        Ok(VerifyOutcome::Unconfirmed {
            detail: "no .toast-success link after submit".into(),
        })
    }
}

/// The success toast's permalink, as evidence, if the page shows one now.
async fn toast(session: &BrowserSession, base: &Url) -> Option<Verification> {
    let link = session.page().locator(".toast-success a").first();
    if link.count().await.ok()? == 0 {
        return None;
    }
    let href = link.get_attribute("href").await.ok()??;
    let permalink = base.join(&href).ok()?;
    let post_id = permalink
        .path()
        .strip_prefix("/p/")
        .filter(|id| !id.is_empty())
        .map(str::to_owned);
    Some(Verification {
        method: VerificationMethod::Toast,
        evidence: VerificationEvidence {
            permalink: Some(permalink.into()),
            post_id,
            detail: Some("toast .toast-success".into()),
        },
    })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    init_logging();
    let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    // Local Chromium (Debian's headless shell for jobs), a fresh browser context per job.
    // No warm pool of spare contexts: this program runs a handful of jobs and exits.
    let provider = Arc::new(LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        // The demo site is on loopback: the browser may reach that one address, nothing
        // else that is not public.
        egress: Some(abr_core::EgressPolicy::new().allow_addr(site.local_addr())),
        ..LocalProviderConfig::default()
    }));
    let outcome = run(&site, &provider).await;
    provider.shutdown().await;
    site.shutdown().await;
    outcome
}

/// The tenant (workspace) the example posts for.
const WORKSPACE: &str = "example-workspace";

async fn run(site: &DemoSite, provider: &Arc<LocalBrowserSessionProvider>) -> Result<(), BoxError> {
    println!("demo site       {}", site.base_url());
    let strategy = Arc::new(MyDemoStrategy::new(&site.base_url())?);

    // 1. A signed-in session. In production a person signs in once through the live view of
    //    a capture (`Engine::capture_start`, or the runner's /v1/capture API) and the app
    //    stores the exported, scoped state. Here we sign in ourselves through the same form.
    let session = sign_in(provider, &strategy, "embedder").await?;
    println!(
        "signed in       {} cookie(s), {} origin(s) exported",
        session.cookies.len(),
        session.origins.len()
    );

    // 2. The engine: the provider (for jobs and for captures), a store for its records (the
    //    core's in-memory one here; `abr-store`'s SQLite store to keep them across restarts),
    //    and the registered strategy. Default settings: no pacing before a post, two jobs
    //    at once, the default tenant limits (`TenantLimits::default()`).
    let jobs: DynSessionProvider<BrowserSession> = Arc::clone(provider) as _;
    let engine = EngineBuilder::new(
        EngineConfig::default(),
        Arc::clone(&jobs),
        jobs,
        Arc::new(InMemoryStore::new()),
    )
    .strategy(Arc::clone(&strategy) as Arc<dyn WebPostStrategy<BrowserSession>>)?
    .build()?;
    // Every call acting for somebody takes an actor: here an operator key acting for one
    // tenant (an embedder's agent would be `Role::Agent` bound to its tenant).
    let operator = Principal::new(
        "key_example",
        "example",
        Role::Operator,
        Tenants::All,
        false,
    )?;
    let actor = Arc::new(operator).act_for(Some(WORKSPACE))?;

    let outcome = post_three(site, &engine, &actor, session).await;
    engine.shutdown().await;
    outcome
}

/// Posts three times through the engine, each checked against the site's ground truth.
async fn post_three(
    site: &DemoSite,
    engine: &Engine<BrowserSession>,
    actor: &Actor,
    session: AgentSessionState,
) -> Result<(), BoxError> {
    // 3. A normal post: the site shows the toast, so the strategy can prove it.
    let text = format!("Hello from MyDemoStrategy at {}", unix_now());
    let result = post(engine, actor, &session, &text).await?;
    show("post 1", &result);
    check_against_ground_truth(site, &text, &result)?;
    if result.outcome() != PostOutcome::Confirmed {
        return Err("post 1: expected a confirmed post".into());
    }
    let session = result
        .refreshed_session
        .clone()
        .ok_or("post 1: a confirmed post returns the refreshed session")?;

    // 4. The site saves the post but shows no toast (demo fault injection). This strategy has
    //    no read-back, so it cannot prove the post: the honest answer is `uncertain`.
    site.set_fault(FaultMode::NoToast);
    let text = format!("Posted without a toast at {}", unix_now());
    let result = post(engine, actor, &session, &text).await?;
    show("post 2 (no toast)", &result);
    check_against_ground_truth(site, &text, &result)?;
    if result.outcome() != PostOutcome::Uncertain {
        return Err("post 2: without a toast this strategy must answer uncertain".into());
    }

    // 5. A session that is not signed in (here: empty): `is_authenticated` says so before
    //    anything is typed, and the engine answers `needsReauth`.
    let text = format!("Posted while signed out at {}", unix_now());
    let result = post(engine, actor, &AgentSessionState::default(), &text).await?;
    show("post 3 (signed out)", &result);
    check_against_ground_truth(site, &text, &result)?;
    if result.outcome() != PostOutcome::NeedsReauth {
        return Err("post 3: a signed-out session must answer needsReauth".into());
    }
    println!("\nall outcomes agree with the ground truth");
    Ok(())
}

/// Signs in through the site's /login form in a fresh local context and exports the state
/// (Playwright's `storageState`), as a capture does once a person signed in.
async fn sign_in(
    provider: &LocalBrowserSessionProvider,
    strategy: &MyDemoStrategy,
    username: &str,
) -> Result<AgentSessionState, BoxError> {
    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: strategy.platform().to_owned(),
            state: None,
            start_url: Some(strategy.start_url().to_owned()),
        })
        .await?;
    let signed_in = async {
        let page = lease.context().page();
        page.locator("#username").fill(username, None).await?;
        page.locator("#password").fill(DEMO_PASSWORD, None).await?;
        page.locator("#sign-in").click(None).await?;
        page.wait_for_url("**/compose", None).await?;
        if !strategy.is_authenticated(lease.context()).await? {
            return Err::<_, BoxError>("the sign-in did not stick".into());
        }
        Ok(lease.context().export_state().await?)
    }
    .await;
    lease.release().await?;
    signed_in
}

/// Posts `text` once through the engine, for the actor's tenant. No idempotency key here:
/// an application retrying a request over an unreliable link gives one (the same key
/// answers the first post's result, and nothing runs twice).
async fn post(
    engine: &Engine<BrowserSession>,
    actor: &Actor,
    session: &AgentSessionState,
    text: &str,
) -> Result<AgentPostResult, BoxError> {
    let posted = engine
        .post(
            actor,
            None,
            PostRequest {
                session_id: None,
                platform: "my-demo".into(),
                session: session.clone(),
                content: PostContent::text(text),
                // The request's workspace is the actor's tenant.
                workspace_id: Some(WORKSPACE.into()),
                account_id: Some("example-account".into()),
                scope: None,
            },
        )
        .await?;
    match posted.reply {
        // A post run in this process answers its result (with the `postId` of its record).
        PostReply::Result(result) => Ok(*result),
        // Only for a key whose post is still running elsewhere.
        PostReply::Record(record) => {
            Err(format!("post {} is still running elsewhere", record.post_id).into())
        }
    }
}

/// Prints the result without the refreshed session (it holds cookie values).
fn show(label: &str, result: &AgentPostResult) {
    let mut shown = result.clone();
    let refreshed = shown.refreshed_session.take();
    println!("\n{label}: {:?}", result.outcome());
    println!(
        "{}",
        serde_json::to_string_pretty(&shown).unwrap_or_default()
    );
    if let Some(r) = refreshed {
        println!(
            "refreshed       {} cookie(s), {} origin(s), scoped to the policy",
            r.cookies.len(),
            r.origins.len()
        );
    }
}

/// The site's own record (`DemoSite::posts`, also served as `GET /api/posts`) against
/// ABR's answer: `ok` must mean the post exists under the proven id; a failure must mean it
/// does not; `uncertain` may go either way (that is why nobody retries it).
fn check_against_ground_truth(
    site: &DemoSite,
    text: &str,
    result: &AgentPostResult,
) -> Result<(), BoxError> {
    let stored: Vec<_> = site
        .posts()
        .into_iter()
        .filter(|p| p.text == text)
        .collect();
    let ids: Vec<&str> = stored.iter().map(|p| p.id.as_str()).collect();
    println!(
        "ground truth    {} post(s) with this text on the site {ids:?}",
        stored.len()
    );
    let agrees = match result.outcome() {
        PostOutcome::Confirmed => {
            let proven = result
                .verification
                .as_ref()
                .and_then(|v| v.evidence.post_id.as_deref());
            stored.len() == 1 && proven == Some(stored[0].id.as_str())
        }
        PostOutcome::Failed | PostOutcome::NeedsReauth => stored.is_empty(),
        PostOutcome::Uncertain => stored.len() <= 1,
    };
    if agrees {
        Ok(())
    } else {
        Err(format!(
            "ABR answered {:?} but the site stored {} matching post(s)",
            result.outcome(),
            stored.len()
        )
        .into())
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Warnings only, unless `RUST_LOG` says otherwise (the Playwright driver is chatty).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,playwright_rs=error,playwright_rs::server=off")
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
