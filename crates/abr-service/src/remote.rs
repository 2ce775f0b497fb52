//! Building the remote providers (Steel, Kernel) from the runner configuration. The runner
//! builds each **once** and shares it between jobs and captures
//! (`runner::configured_providers`): self-hosted Steel holds one session, and only one
//! gate in front of it keeps a job from replacing an open capture's session.

use std::sync::Arc;
use std::time::Duration;

use abr_core::{DeadlineBudget, DynSessionProvider};
use abr_providers::{
    BrowserSession, KernelProviderConfig, KernelSessionProvider, SteelFlavor, SteelProviderConfig,
    SteelSessionProvider,
};
use secrecy::ExposeSecret;

use crate::config::RunnerConfig;

/// Steel: Steel Cloud when an API key is set, else self-hosted (serialized: it holds one
/// session at a time; a job waits for jobs ahead of it up to the budget's provider queue,
/// shorter than the acquire step so that `provider_busy` reaches the caller, and is refused
/// at once with `provider_busy` while a capture holds the session; a capture is refused at
/// once while anything holds it).
pub(crate) fn steel(
    config: &RunnerConfig,
    budget: &DeadlineBudget,
) -> DynSessionProvider<BrowserSession> {
    let base = config
        .providers
        .steel_url
        .as_ref()
        .map(|u| u.as_str().trim_end_matches('/').to_owned());
    match &config.providers.steel_api_key {
        Some(key) => {
            let mut steel = SteelProviderConfig::cloud(key.expose_secret().to_owned());
            if let Some(base) = base {
                steel.base_url = base;
            }
            steel.egress = Some(config.egress.clone());
            debug_assert_eq!(steel.flavor, SteelFlavor::Cloud);
            Arc::new(SteelSessionProvider::new(steel))
        }
        None => {
            let mut steel =
                SteelProviderConfig::oss(base.unwrap_or_else(|| "http://127.0.0.1:3000".into()));
            steel.egress = Some(config.egress.clone());
            Arc::new(SteelSessionProvider::oss_serialized(
                steel,
                budget.provider_queue,
            ))
        }
    }
}

/// Kernel (a browser per lease).
pub(crate) fn kernel(config: &RunnerConfig) -> DynSessionProvider<BrowserSession> {
    let key = config
        .providers
        .kernel_api_key
        .as_ref()
        .map(|k| k.expose_secret().to_owned())
        .unwrap_or_default();
    let mut kernel = KernelProviderConfig::new(key);
    if let Some(url) = &config.providers.kernel_url {
        kernel.base_url = url.as_str().trim_end_matches('/').to_owned();
    }
    kernel.rest_timeout = kernel.rest_timeout.min(Duration::from_secs(60));
    kernel.egress = Some(config.egress.clone());
    Arc::new(KernelSessionProvider::new(kernel))
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        reason = "test code"
    )]

    use std::net::SocketAddr;
    use std::time::Instant;

    use abr_demo::{DemoSite, DemoStrategy};
    use abr_doubles::{CdpClient, SteelDouble, SteelOptions};
    use abr_protocol::{
        AgentPostResult, AgentSessionState, CaptureRef, CaptureStartRequest, Cookie, PostContent,
        PostOutcome, PostRequest,
    };

    use super::*;
    use crate::config::{ProviderChoice, ProviderSettings};
    use crate::runner::{Runner, RunnerBuilder};

    const WORKSPACE: &str = "ws-steel";
    const ACCOUNT: &str = "acct-steel";
    /// The operator the racers act as, for `WORKSPACE`.
    fn actor() -> abr_core::principal::Actor {
        abr_core::testing::actor(abr_protocol::Role::Operator, WORKSPACE)
    }

    /// An immediate refusal answers within this.
    const AT_ONCE: Duration = Duration::from_secs(2);

    /// A runner with self-hosted Steel (the double) for jobs **and** captures, posting to the
    /// demo site.
    fn runner(double: &SteelDouble, site: &DemoSite) -> Runner {
        let mut config = RunnerConfig {
            providers: ProviderSettings {
                job_provider: ProviderChoice::Steel,
                capture_provider: ProviderChoice::Steel,
                steel_url: Some(url::Url::parse(&double.base_url()).unwrap()),
                ..ProviderSettings::default()
            },
            ..RunnerConfig::default()
        };
        config.egress = config.egress.allow_addr(site.local_addr());
        let demo = DemoStrategy::new(&site.base_url()).unwrap();
        RunnerBuilder::new(config)
            .strategy(Arc::new(demo))
            .unwrap()
            .build()
            .unwrap()
    }

    /// Signs `username` in on the demo site over plain HTTP: the `demo_session` token.
    async fn demo_login(site: &DemoSite, username: &str) -> String {
        let response = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .post(format!("{}/login", site.base_url()))
            .form(&[
                ("username", username),
                ("password", abr_demo::site::DEMO_PASSWORD),
            ])
            .send()
            .await
            .unwrap();
        response
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find_map(|v| v.strip_prefix("demo_session="))
            .and_then(|v| v.split(';').next())
            .filter(|v| !v.is_empty())
            .expect("a demo_session cookie")
            .to_owned()
    }

    fn capture_request() -> CaptureStartRequest {
        CaptureStartRequest {
            workspace_id: WORKSPACE.into(),
            account_id: ACCOUNT.into(),
            platform: "demo".into(),
            scope: None,
        }
    }

    fn capture_ref(capture_id: &str) -> CaptureRef {
        CaptureRef {
            capture_id: capture_id.into(),
            workspace_id: WORKSPACE.into(),
            account_id: ACCOUNT.into(),
        }
    }

    /// What happened to one racer.
    #[derive(Debug)]
    enum Raced {
        /// A post, its text and result.
        Post(String, Box<AgentPostResult>),
        /// A post refused at once with `provider_busy` and a `Retry-After`, nothing recorded.
        PostRefused(String),
        /// A capture that ran: who signed in, and the session token it exported.
        Captured(String, String),
        /// A capture refused at once with `provider_busy`.
        CaptureRefused,
    }

    /// A post of `text` at `offset`.
    async fn post_at(
        runner: Arc<Runner>,
        session: AgentSessionState,
        text: String,
        offset: u64,
    ) -> Raced {
        tokio::time::sleep(Duration::from_millis(offset)).await;
        let request = PostRequest {
            session_id: None,
            platform: "demo".into(),
            session,
            content: PostContent::text(text.clone()),
            workspace_id: Some(WORKSPACE.into()),
            account_id: Some(ACCOUNT.into()),
            scope: None,
        };
        let started = Instant::now();
        let posted = match runner.engine.post(&actor(), None, request).await {
            Ok(posted) => posted,
            Err(e) => {
                assert_eq!(e.code(), "provider_busy", "{e}");
                assert!(e.is_retryable() && e.retry_after().is_some(), "{e:?}");
                assert!(
                    started.elapsed() < AT_ONCE,
                    "a post was refused only after {:?}",
                    started.elapsed()
                );
                return Raced::PostRefused(text);
            }
        };
        let abr_engine::PostReply::Result(result) = posted.reply else {
            panic!("a post of this process answers its result: {posted:?}");
        };
        if result
            .error
            .as_ref()
            .is_some_and(|e| e.code == "provider_busy")
        {
            assert!(
                started.elapsed() < AT_ONCE,
                "a post was refused only after {:?}",
                started.elapsed()
            );
        }
        Raced::Post(text, result)
    }

    /// A capture at `offset`: after a while the person signs in on the capture's page (the
    /// form filled and submitted in Steel's browser, as typing into a viewer would), then it
    /// finishes.
    async fn capture_at(
        runner: Arc<Runner>,
        site: Arc<DemoSite>,
        cdp_url: String,
        username: String,
        offset: u64,
        signing_in: u64,
    ) -> Raced {
        tokio::time::sleep(Duration::from_millis(offset)).await;
        let started = Instant::now();
        let capture = match runner
            .engine
            .capture_start(&actor(), capture_request())
            .await
        {
            Ok(capture) => capture,
            Err(e) => {
                assert_eq!(e.code(), "provider_busy", "{e}");
                assert!(e.is_retryable(), "{e}");
                assert!(
                    started.elapsed() < AT_ONCE,
                    "a capture was refused only after {:?}",
                    started.elapsed()
                );
                return Raced::CaptureRefused;
            }
        };
        tokio::time::sleep(Duration::from_millis(signing_in)).await;
        sign_in(&cdp_url, &site.base_url(), &username).await;
        let finished = runner
            .engine
            .capture_finish(&actor(), &capture_ref(&capture.capture_id), None)
            .await
            .unwrap_or_else(|e| panic!("the capture of {username} was destroyed: {e}"));
        let token = finished
            .session
            .cookies
            .iter()
            .find(|c| c.name == "demo_session")
            .map(|c| c.value.expose().to_owned())
            .unwrap_or_default();
        Raced::Captured(username, token)
    }

    /// Fills and submits the sign-in form on the browser's sign-in page, then waits until
    /// the site has signed the browser in (it lands on `/compose`).
    async fn sign_in(cdp_url: &str, base: &str, username: &str) {
        let cdp = CdpClient::connect(cdp_url).await.unwrap();
        let login = format!("{base}/login");
        let targets = cdp.page_targets().await.unwrap();
        let (page, _) = targets
            .iter()
            .find(|(_, url)| url.starts_with(&login))
            .unwrap_or_else(|| panic!("no sign-in page among {targets:?}"));
        let session = cdp.attach(page).await.unwrap();
        let fill = format!(
            "document.querySelector('#username').value = {username:?}; \
             document.querySelector('#password').value = {:?}; \
             document.querySelector('#login').submit(); true",
            abr_demo::site::DEMO_PASSWORD
        );
        cdp.evaluate(&session, &fill).await.unwrap();
        cdp.detach(&session).await;
        let compose = format!("{base}/compose");
        let started = Instant::now();
        while !cdp
            .page_targets()
            .await
            .unwrap()
            .iter()
            .any(|(id, url)| id == page && url.starts_with(&compose))
        {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "never signed in"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cdp.close().await;
    }

    /// Whether the demo site knows `token` as a signed-in session.
    async fn signed_in(site: &DemoSite, token: &str) -> bool {
        let compose = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(format!("{}/compose", site.base_url()))
            .header(reqwest::header::COOKIE, format!("demo_session={token}"))
            .send()
            .await
            .unwrap();
        compose.status() == 200
    }

    /// Offsets for the race: xorshift64 from a printed seed (pin it to replay a failure).
    struct Offsets(u64);

    impl Offsets {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Steel used for jobs and captures, both racing on one server: posts and captures
    /// started at random offsets. No post destroys a capture, no capture kills a post, a
    /// capture beyond the one session is refused at once, and every post's outcome is what
    /// the demo site really holds.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn steel_for_jobs_and_captures_racing_on_one_server() {
        let double = SteelDouble::start(SteelOptions::default()).await.unwrap();
        let site = Arc::new(
            DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
                .await
                .unwrap(),
        );
        let runner = Arc::new(runner(&double, &site));
        let poster_token = demo_login(&site, "poster").await;
        let mut cookie = Cookie::new("demo_session", poster_token, "127.0.0.1");
        cookie.http_only = true;
        let session = AgentSessionState {
            cookies: vec![cookie],
            ..AgentSessionState::default()
        };
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(11, |d| d.as_nanos() as u64)
            | 1;
        eprintln!("race seed {seed}");
        let mut rng = Offsets(seed);

        let mut racers = Vec::new();
        let capture = |name: &str, offset: u64, signing_in: u64| {
            tokio::spawn(capture_at(
                Arc::clone(&runner),
                Arc::clone(&site),
                double.ws_url(),
                name.to_owned(),
                offset,
                signing_in,
            ))
        };
        // A capture holds the session while a person signs in; a second capture and posts
        // arrive meanwhile.
        racers.push(capture("alice", 0, 2_500));
        racers.push(capture("bob", 400 + rng.below(800), 0));
        for i in 0..2 {
            let text = format!("during the capture {i} ({seed})");
            let offset = 300 + rng.below(1_500);
            racers.push(tokio::spawn(post_at(
                Arc::clone(&runner),
                session.clone(),
                text,
                offset,
            )));
        }
        // Then posts and a third capture at random offsets.
        for i in 0..3 {
            let text = format!("later {i} ({seed})");
            let offset = 4_500 + rng.below(4_000);
            racers.push(tokio::spawn(post_at(
                Arc::clone(&runner),
                session.clone(),
                text,
                offset,
            )));
        }
        racers.push(capture("carol", 4_500 + rng.below(4_000), 1_000));

        let raced: Vec<Raced> = futures::future::join_all(racers)
            .await
            .into_iter()
            .map(|r| r.expect("a racer panicked"))
            .collect();
        let summary: Vec<String> = raced
            .iter()
            .map(|r| match r {
                Raced::Post(text, result) => format!(
                    "post {text:?}: {:?} {}",
                    result.outcome(),
                    result.error.as_ref().map_or("", |e| e.code.as_str())
                ),
                Raced::Captured(..) => "capture: ran".to_owned(),
                Raced::CaptureRefused => "capture: refused".to_owned(),
                Raced::PostRefused(text) => format!("post {text:?}: refused"),
            })
            .collect();
        eprintln!("race outcomes {summary:#?}");

        let stored = site.posts();
        let mut confirmed = 0;
        for r in &raced {
            match r {
                Raced::Post(text, result) => {
                    let on_site = stored.iter().filter(|p| &p.text == text).count();
                    match result.outcome() {
                        PostOutcome::Confirmed => {
                            assert_eq!(on_site, 1, "{text:?} confirmed: {result:?}");
                            confirmed += 1;
                        }
                        PostOutcome::Failed => {
                            assert_eq!(on_site, 0, "{text:?} failed but was posted: {result:?}");
                            let error = result.error.as_ref().unwrap();
                            assert_eq!(error.code, "provider_busy", "{text:?}: {result:?}");
                            assert!(error.retryable, "{text:?}");
                        }
                        other => panic!("{text:?}: {other:?} is not what happened: {result:?}"),
                    }
                }
                Raced::Captured(who, token) => {
                    assert!(
                        signed_in(&site, token).await,
                        "the capture of {who} exported no signed-in session"
                    );
                }
                Raced::PostRefused(text) => {
                    let on_site = stored.iter().filter(|p| &p.text == text).count();
                    assert_eq!(on_site, 0, "{text:?} was refused but posted");
                }
                Raced::CaptureRefused => {}
            }
        }
        assert!(
            matches!(&raced[0], Raced::Captured(..)),
            "the first capture ran: {:?}",
            raced[0]
        );
        assert!(
            matches!(raced[1], Raced::CaptureRefused),
            "a second capture is refused at once while the first is open: {:?}",
            raced[1]
        );
        for r in &raced[2..4] {
            assert!(
                matches!(r, Raced::PostRefused(_))
                    || matches!(r, Raced::Post(_, result) if result.outcome() == PostOutcome::Failed),
                "a post is refused while a capture is open: {r:?}"
            );
        }
        assert_eq!(
            stored.len(),
            confirmed,
            "nothing was posted that was not confirmed"
        );
        assert!(
            double.replaced().is_empty(),
            "a create replaced a live session: {:?}",
            double.replaced()
        );
        assert_eq!(
            double.overlapping_lifecycle_calls(),
            0,
            "creates and releases raced"
        );
        runner.shutdown().await;
        assert_eq!(double.assert_all_released(), Ok(()));
        assert_eq!(double.open_sockets(), 0);
        assert_eq!(double.created(), double.released());
        drop(runner);
        double.shutdown().await;
    }
}
