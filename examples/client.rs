//! Drives an ABR runner from an orchestrator with `abr-client`: list platforms, capture a
//! user's session through the live view, keep it, post, and act on every outcome the way
//! the outcome table says.
//!
//! Run: `cargo run -p abr-service --example client`
//!
//! By default it starts everything in this process: the demo site and a runner on loopback
//! with a random API token and the `demo` platform registered. With `ABR_URL` and
//! `ABR_API_TOKEN` set it talks to that runner instead, which must have the `demo` platform
//! (e.g. `abr-demo-site` plus `abr serve` with `ABR_DEMO_SITE_URL`).
//!
//! | outcome | what this orchestrator does |
//! |---|---|
//! | confirmed (`ok`) | mark done, persist `refreshedSession` |
//! | `uncertain` | flag for manual review; never retry |
//! | `needsReauth` | ask the user to sign in again |
//! | `failureStage` (failed, nothing posted) | safe to retry: retry once |
//!
//! Exits non-zero when an outcome is not the one the scenario expects, or disagrees with the
//! demo site's ground truth (`GET /api/posts`).

use std::collections::HashMap;
use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_client::protocol::{
    AgentPostResult, AgentSessionState, CaptureRef, CaptureStartRequest, FailureStage,
    MediaAttachment, PostContent, PostOutcome, PostRequest, codes,
};
use abr_client::{AgentRunnerClient, LiveViewChannel};
use abr_demo::{DemoSite, DemoStrategy};
use abr_service::config::RunnerConfig;
use abr_service::runner::RunnerBuilder;
use abr_service::server::RunningServer;
use secrecy::SecretString;

type BoxError = Box<dyn Error + Send + Sync>;

const PLATFORM: &str = "demo";
const WORKSPACE: &str = "acme-workspace";
const ACCOUNT: &str = "acme-account-42";

/// A 1×1 PNG.
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    init_logging();
    match (std::env::var("ABR_URL"), std::env::var("ABR_API_TOKEN")) {
        (Ok(url), Ok(token)) => {
            println!("runner          {url} (from ABR_URL)");
            let client = AgentRunnerClient::new(url, token)?;
            orchestrate(&client).await
        }
        _ => {
            let local = InProcess::start().await?;
            let outcome = orchestrate(&local.client).await;
            local.shutdown().await;
            outcome
        }
    }
}

/// The demo site and a runner in this process, on loopback.
struct InProcess {
    site: DemoSite,
    server: RunningServer,
    client: AgentRunnerClient,
}

impl InProcess {
    async fn start() -> Result<Self, BoxError> {
        let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        println!("demo site       {}", site.base_url());
        // A fresh 256-bit token: the runner refuses to start without one.
        let token = abr_core::new_token()?;
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let config = RunnerConfig {
            bind: addr,
            // Where the live-view URLs handed to users point.
            public_url: Some(url::Url::parse(&format!("http://{addr}"))?),
            api_tokens: vec![SecretString::from(token.clone())],
            demo_site_url: Some(url::Url::parse(&site.base_url())?),
            // The demo site runs on loopback, which the runner's browsers may not reach
            // unless allowed by exact address (ABR_EGRESS_ALLOW_PRIVATE).
            egress: abr_core::EgressPolicy::new().allow_addr(site.local_addr()),
            ..RunnerConfig::default()
        };
        let runner = RunnerBuilder::new(config)
            .strategy(Arc::new(DemoStrategy::new(&site.base_url())?))?
            .build()?;
        let server = RunningServer::start(Arc::new(runner), listener)?;
        println!("runner          {} (in-process)", server.base_url());
        let client = AgentRunnerClient::new(server.base_url(), token)?;
        Ok(Self {
            site,
            server,
            client,
        })
    }

    async fn shutdown(self) {
        self.server.shutdown().await;
        self.site.shutdown().await;
    }
}

/// The orchestrator's session store. Kept in memory here; a real application encrypts
/// sessions at rest (they are bearer credentials: cookie values, localStorage) and keys
/// them by tenant and account.
#[derive(Default)]
struct Vault {
    sessions: HashMap<(String, String), AgentSessionState>,
}

impl Vault {
    fn save(&mut self, session: AgentSessionState) {
        self.sessions
            .insert((WORKSPACE.into(), ACCOUNT.into()), session);
    }

    fn load(&self) -> Result<AgentSessionState, BoxError> {
        self.sessions
            .get(&(WORKSPACE.into(), ACCOUNT.into()))
            .cloned()
            .ok_or_else(|| "no stored session: the user must sign in".into())
    }

    fn forget(&mut self) {
        self.sessions.remove(&(WORKSPACE.into(), ACCOUNT.into()));
    }
}

async fn orchestrate(client: &AgentRunnerClient) -> Result<(), BoxError> {
    // 1. What can this runner post to?
    let health = client.health().await?;
    println!("health          {}", health.status);
    let platforms = client.platforms().await?;
    for p in &platforms.platforms {
        let scope = p.policy.session.as_ref().map(|s| &s.cookie_domains);
        println!(
            "platform        {} (start {}, cookie scope {scope:?})",
            p.id, p.start_url
        );
    }
    let demo = platforms
        .platforms
        .iter()
        .find(|p| p.id == PLATFORM)
        .ok_or("the runner has no `demo` platform")?;
    // Demo only: the site's base, for its ground truth and fault injection.
    let site = demo
        .start_url
        .strip_suffix("/login")
        .ok_or("unexpected demo start URL")?
        .to_owned();
    let site = DemoSiteApi::new(site);

    // 2. Capture: the user signs in once through the live view.
    let mut vault = Vault::default();
    vault.save(capture(client).await?);

    // 3. A post that goes through.
    let text = format!("Launch day at {}", unix_now());
    let content = PostContent::text(text.clone());
    let done = run_job(client, &mut vault, "job 1", content, 1).await?;
    site.check(&text, &done).await?;
    expect("job 1", &done, PostOutcome::Confirmed)?;

    // 4. A post whose media upload the site refuses once (demo fault injection): it fails at
    //    the media stage, before submit, so nothing was posted and it is safe to retry.
    site.inject_fault("media_reject").await?;
    let text = format!("Photo of the day at {}", unix_now());
    let mut content = PostContent::text(text.clone());
    content.media = vec![MediaAttachment {
        file_name: "pixel.png".into(),
        mime_type: "image/png".into(),
        data_base64: PIXEL_PNG.into(),
    }];
    let done = run_job(client, &mut vault, "job 2", content, 1).await?;
    // Exactly one post: the retry did not duplicate anything.
    site.check(&text, &done).await?;
    expect("job 2", &done, PostOutcome::Confirmed)?;

    // 5. The site ends the session at submit (demo fault injection): needs re-auth.
    site.inject_fault("expire_session").await?;
    let text = format!("Posted after the session expired at {}", unix_now());
    let done = run_job(
        client,
        &mut vault,
        "job 3",
        PostContent::text(text.clone()),
        1,
    )
    .await?;
    site.check(&text, &done).await?;
    expect("job 3", &done, PostOutcome::NeedsReauth)?;
    if vault.load().is_ok() {
        return Err("job 3: the revoked session is still stored".into());
    }

    println!("\nevery outcome was the expected one and agrees with the ground truth");
    Ok(())
}

/// Starts a capture, signs in through the live view as the user would, and polls finish
/// until the browser is signed in. Returns the scoped session.
async fn capture(client: &AgentRunnerClient) -> Result<AgentSessionState, BoxError> {
    let started = client
        .capture_start(&CaptureStartRequest {
            workspace_id: WORKSPACE.into(),
            account_id: ACCOUNT.into(),
            platform: PLATFORM.into(),
            scope: None,
        })
        .await?;
    // The capture id is a management credential: keep it server-side, never log it. The
    // live-view URL carries its own token (it shows the browser and takes the user's input):
    // hand it to that user's browser only, and keep it out of logs too.
    let expires = started
        .expires_at
        .format(&time::format_description::well_known::Rfc3339)?;
    println!("\ncapture         started for {WORKSPACE}/{ACCOUNT}, expires {expires}");
    println!(
        "live view       {}/<live token> (embedded in the user's browser)",
        started
            .live_view_url
            .rsplit_once('/')
            .map_or("", |(base, _)| base)
    );
    let binding = CaptureRef {
        capture_id: started.capture_id.clone(),
        workspace_id: WORKSPACE.into(),
        account_id: ACCOUNT.into(),
    };
    sign_in_through_live_view(&started.live_view_url).await?;
    println!("user            typed username, Tab, password, Enter in the live view");

    let deadline = Instant::now() + Duration::from_secs(60);
    let finished = loop {
        match client.capture_finish(&binding).await {
            Ok(finished) => break finished,
            // 409 not_authenticated: the user has not finished signing in yet.
            Err(e) if e.is(codes::NOT_AUTHENTICATED) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => {
                let _ = client.capture_cancel(&binding).await;
                return Err(format!("finishing the capture: {e}").into());
            }
        }
    };
    println!(
        "captured        {} cookie(s), {} origin(s); dropped by scope: {}",
        finished.session.cookies.len(),
        finished.session.origins.len(),
        serde_json::to_string(&finished.scope_report)?
    );
    println!("persisted       session of {WORKSPACE}/{ACCOUNT} (in memory; encrypt it at rest)");
    Ok(finished.session)
}

/// Plays the user on the live view's socket: waits for the first picture, then types the
/// username, Tab, the password and Enter.
async fn sign_in_through_live_view(live_view_url: &str) -> Result<(), BoxError> {
    let mut live = LiveViewChannel::connect(live_view_url, Duration::from_secs(10)).await?;
    live.wait_for_picture(Duration::from_secs(30)).await?;
    live.type_text("acme-social-manager").await?;
    live.press("Tab").await?;
    live.type_text(abr_demo::site::DEMO_PASSWORD).await?;
    live.press("Enter").await?;
    // Let the runner take the inputs off the socket before it closes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    live.close().await;
    Ok(())
}

/// How a job ended: its final outcome and, when confirmed, the proven post id.
struct JobEnd {
    outcome: PostOutcome,
    post_id: Option<String>,
}

impl JobEnd {
    fn of(outcome: PostOutcome) -> Self {
        Self {
            outcome,
            post_id: None,
        }
    }
}

/// Posts with the stored session and acts on the outcome; retries at most `retries` times,
/// and only when the result says it is safe.
async fn run_job(
    client: &AgentRunnerClient,
    vault: &mut Vault,
    job: &str,
    content: PostContent,
    retries: u32,
) -> Result<JobEnd, BoxError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let request = PostRequest {
            session_id: None,
            platform: PLATFORM.into(),
            session: vault.load()?,
            content: content.clone(),
            workspace_id: Some(WORKSPACE.into()),
            account_id: Some(ACCOUNT.into()),
            scope: None,
        };
        // The client never retries a post by itself. An `Err` here other than a retryable
        // one (429/503) means the post may have gone out: treat it as uncertain.
        let result = match client.post(&request).await {
            Ok(result) => result,
            Err(e) if e.is_retryable() && attempt <= retries => {
                println!("{job}           runner busy ({e}); trying again");
                tokio::time::sleep(e.retry_after().unwrap_or(Duration::from_secs(2))).await;
                continue;
            }
            Err(e) => {
                println!("{job}: UNCERTAIN, the call failed ({e}): flag for manual review");
                return Ok(JobEnd::of(PostOutcome::Uncertain));
            }
        };
        print_result(job, attempt, &result);
        match result.outcome() {
            PostOutcome::Confirmed => {
                let v = result.verification.as_ref();
                println!(
                    "{job}: DONE, proven by {}: {}",
                    v.map_or_else(|| "?".to_owned(), |v| format!("{:?}", v.method)),
                    v.and_then(|v| v.evidence.permalink.as_deref())
                        .unwrap_or("(no permalink)")
                );
                let post_id = v.and_then(|v| v.evidence.post_id.clone());
                if let Some(refreshed) = result.refreshed_session {
                    vault.save(refreshed);
                    println!("{job}: persisted the refreshed session");
                }
                return Ok(JobEnd {
                    outcome: PostOutcome::Confirmed,
                    post_id,
                });
            }
            PostOutcome::Uncertain => {
                // It may have been published. Retrying could post twice: a person decides.
                println!("{job}: UNCERTAIN: flagged for manual review, never retried");
                return Ok(JobEnd::of(PostOutcome::Uncertain));
            }
            PostOutcome::NeedsReauth => {
                // The stored session is dead: drop it and ask the user for a new capture.
                vault.forget();
                println!(
                    "{job}: NEEDS RE-AUTH: asked the user of {WORKSPACE}/{ACCOUNT} to sign in again"
                );
                return Ok(JobEnd::of(PostOutcome::NeedsReauth));
            }
            PostOutcome::Failed => {
                let stage = result.failure_stage;
                let why = if stage.is_some_and(FailureStage::is_before_submit) {
                    "before submit"
                } else {
                    "with evidence nothing was published"
                };
                println!(
                    "{job}: FAILED at {} ({why}): nothing posted, safe to retry",
                    stage.map_or_else(|| "?".to_owned(), |s| format!("{s:?}"))
                );
                if result.is_safe_to_retry() && attempt <= retries {
                    println!("{job}: retrying (attempt {})", attempt + 1);
                    continue;
                }
                return Ok(JobEnd::of(PostOutcome::Failed));
            }
        }
    }
}

fn print_result(job: &str, attempt: u32, result: &AgentPostResult) {
    // Never print the refreshed session: it holds cookie values.
    let mut shown = result.clone();
    shown.refreshed_session = None;
    println!(
        "\n{job} attempt {attempt}: {:?} in {} ms",
        result.outcome(),
        result.timing.total_ms
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&shown).unwrap_or_default()
    );
}

fn expect(job: &str, got: &JobEnd, want: PostOutcome) -> Result<(), BoxError> {
    if got.outcome == want {
        Ok(())
    } else {
        Err(format!("{job}: expected {want:?}, got {:?}", got.outcome).into())
    }
}

/// The demo site's test hooks, over HTTP so they work for a remote runner too. Not part of
/// any real orchestrator: real sites have neither fault injection nor a ground-truth API.
struct DemoSiteApi {
    base: String,
    http: reqwest::Client,
}

#[derive(serde::Deserialize)]
struct StoredPost {
    id: String,
    text: String,
}

impl DemoSiteApi {
    fn new(base: String) -> Self {
        Self {
            base,
            http: reqwest::Client::new(),
        }
    }

    /// Makes the site misbehave once, on the next post attempt.
    async fn inject_fault(&self, mode: &str) -> Result<(), BoxError> {
        self.http
            .post(format!("{}/__faults", self.base))
            .json(&serde_json::json!({ "mode": mode }))
            .send()
            .await?
            .error_for_status()?;
        println!("\n(demo)          the site will answer the next post with `{mode}`");
        Ok(())
    }

    /// Checks `GET /api/posts` against a job: a confirmed job's post exists exactly once,
    /// under the id ABR proved; any other outcome of these scenarios left no post.
    async fn check(&self, text: &str, job: &JobEnd) -> Result<(), BoxError> {
        let posts: Vec<StoredPost> = self
            .http
            .get(format!("{}/api/posts", self.base))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let ids: Vec<&str> = posts
            .iter()
            .filter(|p| p.text == text)
            .map(|p| p.id.as_str())
            .collect();
        println!(
            "ground truth    {} matching post(s) on the site {ids:?}",
            ids.len()
        );
        let agrees = match job.outcome {
            PostOutcome::Confirmed => ids.len() == 1 && job.post_id.as_deref() == Some(ids[0]),
            PostOutcome::Failed | PostOutcome::NeedsReauth => ids.is_empty(),
            // Uncertain may go either way; it is not expected in these scenarios anyway.
            PostOutcome::Uncertain => ids.len() <= 1,
        };
        if agrees {
            Ok(())
        } else {
            Err(format!(
                "ABR answered {:?} but the site holds {} matching post(s)",
                job.outcome,
                ids.len()
            )
            .into())
        }
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
