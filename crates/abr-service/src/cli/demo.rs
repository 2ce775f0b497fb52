//! `abr demo`: the whole round trip on this machine, as an orchestrator and a user would do
//! it: start the demo site and a runner, capture a session through the live view, post text
//! with an image, prove it, and show the ground truth and a screenshot.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use abr_client::{AgentRunnerClient, ClientError, LiveViewChannel};
use abr_core::{AcquireMode, AcquireRequest, SessionProvider};
use abr_demo::site::DemoSite;
use abr_protocol::{CaptureRef, CaptureStartRequest, MediaAttachment, PostContent, PostRequest};
use abr_providers::{LocalBrowserSessionProvider, LocalProviderConfig};
use secrecy::SecretString;

use crate::cli::CliError;
use crate::cli::start;
use crate::config::RunnerConfig;
use crate::server::RunningServer;

/// `abr demo` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Wait for a person to sign in through the live view (open the printed URL in a
    /// browser) instead of signing in automatically through the live view's input channel.
    #[arg(long)]
    interactive: bool,
    /// Where to write the screenshot of the published post.
    #[arg(long, value_name = "FILE", default_value = "abr-demo-post.png")]
    screenshot: PathBuf,
    /// Address of the runner (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    bind: SocketAddr,
}

fn run_error(what: &str) -> impl Fn(ClientError) -> CliError + '_ {
    move |e| CliError::Run(format!("{what}: {e}"))
}

/// A 1×1 PNG, the demo's "image".
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

impl DemoArgs {
    pub(crate) fn run(self) -> Result<(), CliError> {
        // Quiet unless RUST_LOG says otherwise: the demo's own lines are the output.
        let env = crate::config::process_env();
        crate::logging::init(crate::config::log_filter(&env), "warn,playwright_rs=error");
        start::runtime()?.block_on(self.demo())
    }

    async fn demo(self) -> Result<(), CliError> {
        let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(|e| CliError::Run(format!("cannot start the demo site: {e}")))?;
        println!("demo site     {}", site.base_url());
        let token =
            abr_core::new_token().map_err(|e| CliError::Run(format!("no randomness: {e}")))?;
        let mut config = RunnerConfig {
            bind: self.bind,
            api_tokens: vec![SecretString::from(token.clone())],
            ..RunnerConfig::default()
        };
        config.demo_site_url = Some(
            url::Url::parse(&site.base_url())
                .map_err(|e| CliError::Run(format!("demo site URL: {e}")))?,
        );
        // The demo site is on loopback: the one private address the browsers may reach.
        config.egress = config.egress.allow_addr(site.local_addr());
        let listener = tokio::net::TcpListener::bind(self.bind)
            .await
            .map_err(|e| CliError::Run(format!("cannot listen on {}: {e}", self.bind)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| CliError::Run(e.to_string()))?;
        config.public_url = Some(
            url::Url::parse(&format!("http://{addr}")).map_err(|e| CliError::Run(e.to_string()))?,
        );
        let runner = start::runner(config, None).await?;
        let server =
            RunningServer::start(runner, listener).map_err(|e| CliError::Run(e.to_string()))?;
        println!("runner        {}", server.base_url());
        let outcome = self.round_trip(&server, &site, &token).await;
        server.shutdown().await;
        site.shutdown().await;
        outcome
    }

    async fn round_trip(
        &self,
        server: &RunningServer,
        site: &DemoSite,
        token: &str,
    ) -> Result<(), CliError> {
        let client = AgentRunnerClient::new(server.base_url(), token.to_owned())
            .map_err(run_error("client"))?;
        let capture = client
            .capture_start(&CaptureStartRequest {
                workspace_id: "demo-workspace".into(),
                account_id: "demo-account".into(),
                platform: "demo".into(),
                scope: None,
            })
            .await
            .map_err(run_error("starting the capture"))?;
        println!("live view     {}", capture.live_view_url);
        let binding = CaptureRef {
            capture_id: capture.capture_id.clone(),
            workspace_id: "demo-workspace".into(),
            account_id: "demo-account".into(),
        };
        if self.interactive {
            println!(
                "\nOpen the live view in a browser and sign in (any username, password demo-password)."
            );
        } else {
            sign_in_through_live_view(&capture.live_view_url).await?;
            println!(
                "signed in     through the live view's input channel (keyboard: username, Tab, password, Enter)"
            );
        }
        let deadline = if self.interactive {
            Duration::from_secs(900)
        } else {
            Duration::from_secs(60)
        };
        let finished = wait_for_sign_in(&client, &binding, deadline, self.interactive).await?;
        let report = serde_json::to_string(&finished.scope_report).unwrap_or_default();
        println!(
            "captured      {} cookie(s), {} origin(s); scope report {report}",
            finished.session.cookies.len(),
            finished.session.origins.len()
        );

        let content = PostContent {
            text: format!(
                "Hello from ABR at {}",
                time::OffsetDateTime::now_utc().unix_timestamp()
            ),
            link: None,
            media: vec![MediaAttachment {
                file_name: "pixel.png".into(),
                mime_type: "image/png".into(),
                data_base64: PIXEL_PNG.into(),
            }],
        };
        let started = Instant::now();
        let result = client
            .post(&PostRequest {
                session_id: None,
                platform: "demo".into(),
                session: finished.session.clone(),
                content,
                workspace_id: Some("demo-workspace".into()),
                account_id: Some("demo-account".into()),
                scope: None,
            })
            .await
            .map_err(run_error("posting"))?;
        println!("\npost result   ({} ms)", started.elapsed().as_millis());
        let mut shown = result.clone();
        shown.refreshed_session = None;
        println!(
            "{}",
            serde_json::to_string_pretty(&shown).unwrap_or_default()
        );
        if let Some(refreshed) = &result.refreshed_session {
            println!(
                "refreshed     {} cookie(s), {} origin(s) (scoped)",
                refreshed.cookies.len(),
                refreshed.origins.len()
            );
        }
        let truth = reqwest::get(format!("{}/api/posts", site.base_url()))
            .await
            .map_err(|e| CliError::Run(format!("reading the ground truth: {}", e.without_url())))?
            .text()
            .await
            .map_err(|e| CliError::Run(format!("reading the ground truth: {e}")))?;
        println!("ground truth  GET /api/posts -> {truth}");

        let permalink = result
            .verification
            .as_ref()
            .and_then(|v| v.evidence.permalink.clone());
        match (permalink, &result.refreshed_session) {
            (Some(permalink), Some(session)) => {
                let url = if permalink.starts_with("http") {
                    permalink
                } else {
                    format!("{}{permalink}", site.base_url())
                };
                screenshot(&url, session, site.local_addr(), &self.screenshot).await?;
                println!("screenshot    {}", self.screenshot.display());
            }
            _ => println!("screenshot    none (the post was not confirmed)"),
        }
        if result.ok {
            Ok(())
        } else {
            Err(CliError::Run("the demo post was not confirmed".into()))
        }
    }
}

/// Plays the user: opens the live view's socket, waits for the first picture, types the
/// username, Tab, the password, Enter.
async fn sign_in_through_live_view(live_view_url: &str) -> Result<(), CliError> {
    let failed = |e: abr_client::ClientError| CliError::Run(format!("the live view: {e}"));
    let mut live = LiveViewChannel::connect(live_view_url, Duration::from_secs(10))
        .await
        .map_err(failed)?;
    live.wait_for_picture(Duration::from_secs(30))
        .await
        .map_err(failed)?;
    live.type_text("demo-user").await.map_err(failed)?;
    live.press("Tab").await.map_err(failed)?;
    live.type_text(abr_demo::site::DEMO_PASSWORD)
        .await
        .map_err(failed)?;
    live.press("Enter").await.map_err(failed)?;
    // Let the runner take the inputs off the socket before it closes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    live.close().await;
    Ok(())
}

/// Polls finish until the capture's browser is signed in (409 until then).
async fn wait_for_sign_in(
    client: &AgentRunnerClient,
    binding: &CaptureRef,
    deadline: Duration,
    spinner: bool,
) -> Result<abr_protocol::CaptureFinishResponse, CliError> {
    let started = Instant::now();
    let frames = ['|', '/', '-', '\\'];
    let show = spinner && std::io::stderr().is_terminal();
    let mut tick = 0usize;
    loop {
        match client.capture_finish(binding).await {
            Ok(done) => {
                if show {
                    eprint!("\r\x1b[K");
                }
                return Ok(done);
            }
            Err(e) if e.is(abr_protocol::codes::NOT_AUTHENTICATED) => {}
            Err(e) => return Err(CliError::Run(format!("finishing the capture: {e}"))),
        }
        if started.elapsed() > deadline {
            return Err(CliError::Run(format!(
                "nobody signed in within {} s",
                deadline.as_secs()
            )));
        }
        if show {
            eprint!(
                "\r{} waiting for sign-in ({} s)",
                frames[tick % frames.len()],
                started.elapsed().as_secs()
            );
            let _ = std::io::stderr().flush();
            tick += 1;
        }
        tokio::time::sleep(Duration::from_millis(if spinner { 1000 } else { 250 })).await;
    }
}

/// Opens the permalink with the refreshed session in a fresh local context and screenshots it.
/// The browser may reach the demo site at `site` (on loopback) and nothing else private.
async fn screenshot(
    url: &str,
    session: &abr_protocol::AgentSessionState,
    site: std::net::SocketAddr,
    path: &PathBuf,
) -> Result<(), CliError> {
    let provider = LocalBrowserSessionProvider::new(LocalProviderConfig {
        prewarm: 0,
        egress: Some(abr_core::EgressPolicy::new().allow_addr(site)),
        ..LocalProviderConfig::default()
    });
    let lease = provider
        .acquire(AcquireRequest {
            profile: None,
            mode: AcquireMode::Unattended,
            platform: "demo".into(),
            state: Some(session.clone()),
            start_url: Some(url.to_owned()),
        })
        .await
        .map_err(|e| CliError::Run(format!("opening the post: {e}")))?;
    // The demo site's pages are titled "… · ABR demo": anything else (an error page, the
    // egress guard's "Blocked") is not the post.
    let title = lease.context().page().title().await.unwrap_or_default();
    if !title.ends_with("ABR demo") {
        let _ = lease.release().await;
        provider.shutdown().await;
        return Err(CliError::Run(format!(
            "the permalink did not show the demo site's post page (title {title:?})"
        )));
    }
    let png = lease
        .context()
        .page()
        .screenshot(None)
        .await
        .map_err(|e| CliError::Run(format!("taking the screenshot: {e}")))?;
    let _ = lease.release().await;
    provider.shutdown().await;
    std::fs::write(path, png).map_err(|e| CliError::Run(format!("writing {}: {e}", path.display())))
}
