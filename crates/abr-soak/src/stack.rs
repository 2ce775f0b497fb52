//! What a run starts: the demo site (in this process: the ground truth), for a fleet a
//! throwaway PostgreSQL server with one database, and the replicas (this binary in its
//! replica mode, each a real `abr serve` with the chaos layer), each with its clients: the
//! operator's (`ABR_API_TOKEN`), and the tenant's agent's and approver's keys, minted over
//! the API by the operator. Unless `--no-relay`, also a hub (`abr serve` on its own SQLite file)
//! and a runner linked to it by the outbound relay (`abr up --hub ... --runner-id ...`, with
//! the chaos layer), called through the hub as an orchestrator calls a user's machine.
//!
//! Each replica gets what the runner's own end-to-end tests give theirs (the demo platform
//! on the site, its one private address allowed, a session key, no pacing, task approval by
//! an approver), a request deadline short enough that a hung call ends within the run
//! (`--request-timeout`), a daily execution limit the run cannot reach, and in a fleet the
//! database, its node id and a short lease.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use abr_client::AgentRunnerClient;
use abr_demo::DemoSite;
use abr_protocol::{KeyRequest, Role};
use abr_store::testing::PgServer;

use crate::args::RunArgs;
use crate::processes::{Replica, Spec};
use crate::replica::derive_seed;

/// The tenant every operation acts for.
pub(crate) const TENANT: &str = "soak";
/// The relay runner's id at the hub.
pub(crate) const RELAY_ID: &str = "soak-relay";
/// How long a replica may take to answer its health check (a relay runner: to connect).
const START_LIMIT: Duration = Duration::from_secs(90);

/// What a started process is to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// A replica the load calls (alone, or one of the fleet).
    Replica,
    /// The relay's hub.
    Hub,
    /// The runner linked to the hub.
    Relay,
}

/// One process as the load sees it: its address and its clients.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// `r0`, `r1`, ..., `hub`, `relay`.
    pub(crate) name: String,
    /// What it is.
    pub(crate) part: Part,
    /// `http://127.0.0.1:port`.
    pub(crate) base: String,
    /// Its process id.
    pub(crate) pid: u32,
    /// The bootstrap operator's client.
    pub(crate) operator: AgentRunnerClient,
    /// The tenant's agent (proposes, posts, browses, captures).
    pub(crate) agent: AgentRunnerClient,
    /// The tenant's approver.
    pub(crate) approver: AgentRunnerClient,
    /// Its operator token (for `GET /metrics`).
    pub(crate) token: String,
    /// Its `TMPDIR` (browser profiles would be left there).
    pub(crate) tmp: PathBuf,
    /// Where it writes the faults it injected.
    pub(crate) injected: PathBuf,
}

/// Everything a run started. Dropped, it stops all of it: the processes are killed
/// (everything they started too), then the database server, then the site.
pub(crate) struct Stack {
    /// The processes, in the order of [`Stack::nodes`] (dropped first).
    pub(crate) replicas: Vec<Replica>,
    /// Their clients: the replicas first, then the hub and the relay runner.
    pub(crate) nodes: Vec<Node>,
    /// The relay runner's client through the hub (`x-abr-runner`), unless `--no-relay`.
    pub(crate) relayed: Option<AgentRunnerClient>,
    /// The fleet's database server and its database's name.
    pub(crate) database: Option<(Arc<PgServer>, String)>,
    /// The ground truth.
    pub(crate) site: DemoSite,
    /// The run's directory (removed when dropped, unless kept).
    pub(crate) dir: tempfile::TempDir,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("nodes", &self.nodes)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// A fresh token (256 bits from the OS): an operator's token, a marker.
pub(crate) fn token() -> Result<String, String> {
    abr_core::new_token().map_err(|e| format!("no randomness: {e}"))
}

/// What one process is started with.
struct Launch {
    name: String,
    part: Part,
    /// The `abr` command line.
    abr: Vec<String>,
    /// Its `ABR_*` settings (and `TMPDIR`, `RUST_LOG`).
    envs: Vec<(String, String)>,
    /// Its API's address.
    base: String,
    /// Its operator token.
    token: String,
    /// Its chaos seed's stream.
    stream: u64,
}

impl Stack {
    /// Starts the site, the database server of a fleet and the replicas (and the relay's
    /// hub and runner), waits until every one answers, and mints the tenant's keys.
    pub(crate) async fn start(args: &RunArgs, run: &str) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("abr-soak-")
            .tempdir()
            .map_err(|e| format!("a temporary directory: {e}"))?;
        let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(|e| format!("the demo site: {e}"))?;
        let mut stack = Self {
            replicas: Vec::new(),
            nodes: Vec::new(),
            relayed: None,
            database: None,
            site,
            dir,
        };
        let database_url = if args.fleet > 1 {
            let server = tokio::task::spawn_blocking(PgServer::start)
                .await
                .map_err(|e| format!("starting PostgreSQL: {e}"))?
                .map_err(|e| format!("starting PostgreSQL: {e}"))?;
            let url = server.create_database().await?;
            let name = url.rsplit('/').next().unwrap_or_default().to_owned();
            stack.database = Some((Arc::new(server), name));
            Some(url)
        } else {
            None
        };
        let session_key = session_key()?;
        // The clients' own deadline: past the runners', so the runners' answers come first.
        let timeout = Duration::from_secs(args.request_timeout * 2);
        let mut launches = Vec::new();
        for i in 0..usize::from(args.fleet) {
            let name = format!("r{i}");
            let (bind, base) = address()?;
            let token = token()?;
            let root = stack.dir.path().join(&name);
            let mut envs = stack.runner_envs(args, &root, &session_key, &token);
            envs.extend(pairs(&[
                ("ABR_BIND", &bind),
                ("ABR_PUBLIC_URL", &base),
                ("ABR_DATA_DIR", &root.join("data").display().to_string()),
            ]));
            if let Some(url) = &database_url {
                envs.extend(pairs(&[
                    ("ABR_DATABASE_URL", url),
                    ("ABR_NODE_ID", &format!("soak-{name}")),
                    ("ABR_NODE_LEASE_SECS", &args.lease_secs.to_string()),
                    ("ABR_DRAIN_GRACE_SECS", "0"),
                ]));
            }
            launches.push(Launch {
                name,
                part: Part::Replica,
                abr: vec!["serve".into()],
                envs,
                base,
                token,
                stream: 100 + i as u64,
            });
        }
        for launch in launches {
            stack.launch(args, run, launch, timeout)?;
        }
        for i in 0..stack.nodes.len() {
            stack.wait_until_up(i).await?;
        }
        stack.mint_keys(timeout).await?;
        if args.relay() {
            stack.start_relay(args, run, &session_key, timeout).await?;
        }
        Ok(stack)
    }

    /// The settings every runner of the run shares (a replica, the relay runner).
    fn runner_envs(
        &self,
        args: &RunArgs,
        root: &Path,
        session_key: &str,
        token: &str,
    ) -> Vec<(String, String)> {
        pairs(&[
            ("ABR_API_TOKEN", token),
            ("TMPDIR", &root.join("tmp").display().to_string()),
            ("ABR_SESSION_KEY", session_key),
            (
                "ABR_EGRESS_ALLOW_PRIVATE",
                &self.site.local_addr().to_string(),
            ),
            ("ABR_DEMO_SITE_URL", &self.site.base_url()),
            ("ABR_PACING_MS", "off"),
            ("ABR_TASK_APPROVAL", "all"),
            (
                "ABR_REQUEST_TIMEOUT_SECS",
                &args.request_timeout.to_string(),
            ),
            ("ABR_TENANT_MAX_EXECUTIONS_PER_DAY", "1000000"),
            ("ABR_CAPTURE_TTL_SECS", "120"),
            (
                "ABR_LOCAL_RECYCLE_AFTER_JOBS",
                &args.recycle_after.to_string(),
            ),
            ("RUST_LOG", "info"),
        ])
    }

    /// Starts one process (this binary in its replica mode) and its node.
    fn launch(
        &mut self,
        args: &RunArgs,
        run: &str,
        launch: Launch,
        timeout: Duration,
    ) -> Result<(), String> {
        let root = self.dir.path().join(&launch.name);
        let (data, tmp) = (root.join("data"), root.join("tmp"));
        for d in [&data, &tmp, &root.join("state")] {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let injected = root.join("injected.json");
        let seed = derive_seed(args.seed(), launch.stream);
        let mut mode = vec![
            "replica".to_owned(),
            "--chaos-seed".into(),
            seed.to_string(),
            "--chaos-rates".into(),
            args.chaos.to_string(),
            "--injected-file".into(),
            injected.display().to_string(),
            "--".into(),
        ];
        mode.extend(launch.abr);
        let replica = Replica::spawn(Spec {
            name: launch.name.clone(),
            marker: format!("{run}-{}", launch.name),
            args: mode,
            envs: launch.envs,
            log: root.join("abr.log"),
        })?;
        let operator = client(&launch.base, &launch.token, timeout)?;
        self.nodes.push(Node {
            name: launch.name,
            part: launch.part,
            pid: replica.pid(),
            base: launch.base,
            agent: operator.clone(),
            approver: operator.clone(),
            operator,
            token: launch.token,
            tmp,
            injected,
        });
        self.replicas.push(replica);
        Ok(())
    }

    /// Waits until node `i` answers its health check.
    async fn wait_until_up(&mut self, i: usize) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if self.nodes[i].operator.health().await.is_ok() {
                return Ok(());
            }
            self.check_alive(i, started)?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// An error with the end of its log when process `i` exited or took too long.
    fn check_alive(&mut self, i: usize, started: Instant) -> Result<(), String> {
        let replica = &mut self.replicas[i];
        if replica.running() && started.elapsed() < START_LIMIT {
            return Ok(());
        }
        let log = std::fs::read_to_string(&replica.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        Err(format!(
            "{} did not come up; the end of its log:\n{tail}",
            replica.name
        ))
    }

    /// The tenant's agent's and approver's keys, minted on the first replica (a fleet's
    /// keys are the database's: every replica takes them), and everyone's clients.
    async fn mint_keys(&mut self, timeout: Duration) -> Result<(), String> {
        let Some(first) = self.nodes.first() else {
            return Err("no replica".into());
        };
        let mut tokens = Vec::new();
        for (role, name) in [
            (Role::Agent, "soak agent"),
            (Role::Approver, "soak approver"),
        ] {
            let created = first
                .operator
                .create_key(&KeyRequest {
                    name: name.into(),
                    role,
                    tenant_id: Some(TENANT.into()),
                    read_only: false,
                    expires_at: None,
                })
                .await
                .map_err(|e| format!("minting the {name}'s key: {e}"))?;
            tokens.push(created.token.expose().to_owned());
        }
        for node in &mut self.nodes {
            node.agent = client(&node.base, &tokens[0], timeout)?;
            node.approver = client(&node.base, &tokens[1], timeout)?;
        }
        Ok(())
    }

    /// The hub (`abr serve` alone on its SQLite file) and the runner linked to it (`abr up
    /// --hub`, the chaos layer on its providers), its API token the hub's operator token
    /// (the relay's first setup: a runner only operators reach); waits until a call through
    /// the hub reaches it.
    async fn start_relay(
        &mut self,
        args: &RunArgs,
        run: &str,
        session_key: &str,
        timeout: Duration,
    ) -> Result<(), String> {
        let hub_token = token()?;
        let (bind, hub) = address()?;
        let root = self.dir.path().join("hub");
        let envs = pairs(&[
            ("ABR_API_TOKEN", &hub_token),
            ("ABR_BIND", &bind),
            ("ABR_PUBLIC_URL", &hub),
            ("ABR_DATA_DIR", &root.join("data").display().to_string()),
            ("TMPDIR", &root.join("tmp").display().to_string()),
            ("ABR_SESSION_KEY", session_key),
            ("ABR_HUB_RUNNER_WAIT_SECS", "5"),
            ("RUST_LOG", "info"),
        ]);
        self.launch(
            args,
            run,
            Launch {
                name: "hub".into(),
                part: Part::Hub,
                abr: vec!["serve".into()],
                envs,
                base: hub.clone(),
                token: hub_token.clone(),
                stream: 200,
            },
            timeout,
        )?;
        let hub_index = self.nodes.len() - 1;
        self.wait_until_up(hub_index).await?;

        let (_, base) = address()?;
        let port = base.rsplit(':').next().unwrap_or_default().to_owned();
        let root = self.dir.path().join("relay");
        let mut envs = self.runner_envs(args, &root, session_key, &hub_token);
        envs.extend(pairs(&[
            ("ABR_STATE_DIR", &root.join("state").display().to_string()),
            ("ABR_DATA_DIR", &root.join("data").display().to_string()),
        ]));
        self.launch(
            args,
            run,
            Launch {
                name: "relay".into(),
                part: Part::Relay,
                abr: [
                    "up",
                    "--headless",
                    "--hub",
                    &hub,
                    "--runner-id",
                    RELAY_ID,
                    "--port",
                    &port,
                ]
                .map(str::to_owned)
                .to_vec(),
                envs,
                base,
                token: hub_token.clone(),
                stream: 201,
            },
            timeout,
        )?;
        let relay_index = self.nodes.len() - 1;
        let relayed = AgentRunnerClient::builder(format!("{hub}/"))
            .token(hub_token)
            .timeout(timeout)
            .runner(RELAY_ID)
            .build()
            .map_err(|e| format!("the relay's client: {e}"))?;
        let started = Instant::now();
        while relayed.platforms().await.is_err() {
            self.check_alive(relay_index, started)?;
            self.check_alive(hub_index, started)?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.relayed = Some(relayed);
        Ok(())
    }

    /// Stops what is left (the replicas were stopped; the database server, the site), and
    /// removes the run's directory unless `keep`: then answers where it is.
    pub(crate) async fn finish(self, keep: bool) -> Option<PathBuf> {
        let Self {
            replicas,
            nodes,
            relayed,
            database,
            site,
            dir,
        } = self;
        drop(replicas);
        drop((nodes, relayed));
        if let Some((server, _)) = database {
            // The last holder: its drop stops the server (blocking: `pg_ctl stop`).
            let _ = tokio::task::spawn_blocking(move || drop(server)).await;
        }
        site.shutdown().await;
        keep.then(|| dir.keep())
    }
}

/// A free loopback address: `127.0.0.1:port` and `http://127.0.0.1:port`.
fn address() -> Result<(String, String), String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let bind = format!("127.0.0.1:{port}");
    let base = format!("http://{bind}");
    Ok((bind, base))
}

fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A client of `base` with `token`.
fn client(base: &str, token: &str, timeout: Duration) -> Result<AgentRunnerClient, String> {
    AgentRunnerClient::builder(format!("{base}/"))
        .token(token.to_owned())
        .timeout(timeout)
        .build()
        .map_err(|e| format!("a client of {base}: {e}"))
}

/// 64 hex characters from the OS's randomness: the replicas' `ABR_SESSION_KEY` (one for a
/// fleet: every replica opens what another sealed).
fn session_key() -> Result<String, String> {
    let hex: String = token()?
        .bytes()
        .chain(token()?.bytes())
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(hex.chars().take(64).collect())
}
