//! Runner configuration: environment variables, optionally on top of a TOML file.
//!
//! This is the only place in ABR that reads configuration from the environment: every
//! command takes the process's environment once, with [`process_env`], and everything else
//! is parsed here from that map (so it is testable), into typed sections per owner:
//! [`ProviderSettings`] (the providers), [`McpSection`] (the MCP server), [`LocalSettings`]
//! (`abr up`/`status`/`logs`/`down`), [`log_filter`] (`RUST_LOG`), and the runner's own.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use abr_core::approval::ApprovalRule;
use abr_core::limits::TenantLimits;
use abr_core::{AllowedPrivate, DeadlineBudget, EgressPolicy, Pacing};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use url::Url;

/// A configuration problem, reported before anything starts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A setting has a value that cannot be used.
    #[error("{key}: {reason}")]
    Invalid {
        /// The environment variable (or TOML key).
        key: String,
        /// What is wrong, without the value if it is a secret.
        reason: String,
    },
    /// No API token and not `--insecure-dev`.
    #[error(
        "ABR_API_TOKEN is not set: the runner refuses to start without a bearer token \
         (set ABR_API_TOKEN, or pass --insecure-dev on a trusted machine)"
    )]
    NoToken,
    /// The TOML file could not be read or parsed.
    #[error("config file {path}: {reason}")]
    File {
        /// Path of the file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// The process's environment: the one place ABR's runner reads it. Each command calls it
/// once and hands the map to [`RunnerConfig::load`] and the other readers here. A variable
/// whose name or value is not Unicode is left out, as if unset.
pub fn process_env() -> HashMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// The log filter (`RUST_LOG`, in its syntax), when set; the command picks the default.
pub fn log_filter(env: &HashMap<String, String>) -> Option<&str> {
    env.get("RUST_LOG").map(String::as_str)
}

/// The tokens of `ABR_API_TOKEN` as listed (comma-separated for rotation, trimmed, empty
/// entries dropped), not yet checked: [`RunnerConfig::load`] checks them. `abr status`,
/// `logs` and `down` use the first to find the runner of a hub without loading the whole
/// configuration.
pub fn api_tokens(env: &HashMap<String, String>) -> Vec<SecretString> {
    env.get("ABR_API_TOKEN")
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| SecretString::from(t.to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn invalid(key: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

/// Which provider runs a kind of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderChoice {
    /// Chromium on this machine.
    Local,
    /// A browser attached by CDP URL (`ABR_CDP_URL`).
    Cdp,
    /// Steel (`ABR_STEEL_URL`, `ABR_STEEL_API_KEY`).
    Steel,
    /// Kernel (`ABR_KERNEL_URL`, `ABR_KERNEL_API_KEY`).
    Kernel,
}

impl std::str::FromStr for ProviderChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "local" => Ok(Self::Local),
            "cdp" => Ok(Self::Cdp),
            "steel" => Ok(Self::Steel),
            "kernel" => Ok(Self::Kernel),
            other => Err(format!(
                "unknown provider {other:?}: use local, cdp, steel or kernel"
            )),
        }
    }
}

/// Limits that keep the runner within its machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Jobs (post, probe, capture start) running at once.
    pub max_concurrent_jobs: usize,
    /// Jobs waiting for a slot; beyond it the runner answers 503 with Retry-After.
    pub max_queued_jobs: usize,
    /// Largest request body.
    pub body_limit_bytes: usize,
    /// Deadline of any request.
    pub request_timeout: Duration,
    /// How long a capture stays open.
    pub capture_ttl: Duration,
    /// Captures open at once.
    pub max_open_captures: usize,
    /// Browse sessions open at once, all tenants together (`ABR_MAX_OPEN_BROWSES`, 4).
    pub max_open_browses: usize,
    /// A connection that has not sent a whole request head within this is closed.
    pub header_read_timeout: Duration,
    /// HTTP connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_concurrent_jobs: 2,
            max_queued_jobs: 16,
            body_limit_bytes: 10 * 1024 * 1024,
            request_timeout: Duration::from_secs(240),
            capture_ttl: Duration::from_secs(15 * 60),
            max_open_captures: 4,
            max_open_browses: 4,
            header_read_timeout: Duration::from_secs(10),
            max_connections: 256,
        }
    }
}

/// How the live view may be used and embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSettings {
    /// Origins of apps that embed the live view in a frame or open its socket themselves
    /// (`ABR_LIVE_EMBED_ORIGINS`, comma-separated `scheme://host[:port]`). The runner's own
    /// public origin is always allowed.
    pub embed_origins: Vec<String>,
    /// Proxy the provider's own viewer instead of serving the runner's view, for providers
    /// that have one (`ABR_LIVE_PROXY_PROVIDER_VIEWER=true`; default off). Only the viewer's
    /// own paths are reachable through the proxy.
    pub proxy_provider_viewer: bool,
    /// Sockets one live token may hold open at once (`ABR_LIVE_MAX_SOCKETS`, default 2).
    pub max_sockets_per_token: usize,
}

impl Default for LiveSettings {
    fn default() -> Self {
        Self {
            embed_origins: Vec::new(),
            proxy_provider_viewer: false,
            max_sockets_per_token: 2,
        }
    }
}

/// Everything `abr serve` needs.
#[derive(Clone)]
pub struct RunnerConfig {
    /// Listen address (`ABR_BIND`, default 127.0.0.1:8787).
    pub bind: SocketAddr,
    /// Public base URL of the runner, for live-view URLs (`ABR_PUBLIC_URL`; default
    /// `http://<bind>`).
    pub public_url: Option<Url>,
    /// Accepted bearer tokens (`ABR_API_TOKEN`, comma-separated for rotation).
    pub api_tokens: Vec<SecretString>,
    /// Start without tokens (`--insecure-dev`): every request is accepted.
    pub insecure_dev: bool,
    /// Which providers run jobs and captures, and how to reach them.
    pub providers: ProviderSettings,
    /// Base URL of the demo site; the `demo` platform is registered when set
    /// (`ABR_DEMO_SITE_URL`; unset by default, so a production runner has no `demo`
    /// platform; `off` also leaves it unset). Needs the crate's `demo` feature.
    pub demo_site_url: Option<Url>,
    /// Limits.
    pub limits: Limits,
    /// Where the browsers the runner drives may connect: public addresses, plus the exact
    /// private `host:port` pairs of `ABR_EGRESS_ALLOW_PRIVATE` (comma-separated).
    pub egress: EgressPolicy,
    /// The live view.
    pub live: LiveSettings,
    /// The MCP server: read-only or not, and the tenant of `abr mcp`.
    pub mcp: McpSection,
    /// The randomized delay before a post acts, for platforms that take the runner's
    /// (`ABR_PACING_MS=min-max`, default `1000-3000`; `off`). A platform may opt out (the
    /// demo does) or set its own.
    pub pacing: Option<Pacing>,
    /// Tasks: approval rule and per-tenant limits.
    pub tasks: TaskSettings,
    /// Durable records: where, and the key that encrypts sessions at rest.
    pub store: StoreSettings,
    /// Platforms declared as data: every `*.toml` / `*.json` file of this directory
    /// (`ABR_PLATFORMS_DIR`; unset: none).
    pub platforms_dir: Option<PathBuf>,
    /// Values the platform files' `{{name}}` placeholders are filled with
    /// (`ABR_PLATFORM_VARS=name=value,...`, e.g. `base=https://app.example.com`).
    pub platform_vars: BTreeMap<String, String>,
    /// The runner on the user's own machine (`abr up`): hub, runner id, state directory.
    pub local: LocalSettings,
    /// A hub this runner links to may read its stored sessions (`GET /v1/sessions/{id}`
    /// relayed): `ABR_RELAY_SESSION_EXPORT=true` or `abr up --allow-session-export`.
    /// Default off: sessions stay on this machine, the hub's request is `403 forbidden`.
    pub relay_session_export: bool,
    /// This runner as a hub: the oldest runner version it takes
    /// (`ABR_HUB_MIN_RUNNER_VERSION`, default its own `x.y.0`) and how long a call naming a
    /// runner that is not connected waits for it (`ABR_HUB_RUNNER_WAIT_SECS`, default 15).
    pub hub: HubSection,
    /// This runner as a replica of a fleet on a shared database (`ABR_DATABASE_URL`).
    pub fleet: FleetSection,
    /// Where its traces go (`OTEL_EXPORTER_OTLP_ENDPOINT` and the other standard
    /// OpenTelemetry variables); `None`: traces off.
    pub traces: Option<crate::traces::TraceSettings>,
}

/// This runner as a replica of a fleet (see [`RunnerConfig::fleet`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetSection {
    /// Its node id, stable across restarts (`ABR_NODE_ID`; default `<hostname>:<port>`):
    /// a restart under the same id ends what the previous process left at once.
    pub node_id: Option<String>,
    /// How long its heartbeat holds (`ABR_NODE_LEASE_SECS`, 2 to 600; default 15): past
    /// it, another replica ends its unfinished records and frees its sessions. Every
    /// replica of a fleet must use the same.
    pub lease: Duration,
    /// How long a replica told to stop (SIGTERM) keeps answering `draining` on
    /// `/v1/ready` before it stops accepting connections, so that the balancer's health
    /// check takes it out first (`ABR_DRAIN_GRACE_SECS`, 0 to 300; default 5).
    pub drain_grace: Duration,
}

impl Default for FleetSection {
    fn default() -> Self {
        Self {
            node_id: None,
            lease: Duration::from_secs(15),
            drain_grace: Duration::from_secs(5),
        }
    }
}

/// This runner as a hub (see [`RunnerConfig::hub`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSection {
    /// The oldest runner version taken (`None`: this build's `x.y.0`).
    pub min_runner_version: Option<semver::Version>,
    /// How long a call naming a runner that is not connected waits for it.
    pub offline_wait: Duration,
}

impl Default for HubSection {
    fn default() -> Self {
        Self {
            min_runner_version: None,
            offline_wait: Duration::from_secs(15),
        }
    }
}

/// Which provider runs each kind of work, and how to reach the remote ones.
#[derive(Clone)]
pub struct ProviderSettings {
    /// Provider for unattended jobs (`ABR_JOB_PROVIDER`, default local).
    pub job_provider: ProviderChoice,
    /// Provider for interactive capture (`ABR_CAPTURE_PROVIDER`, default local).
    pub capture_provider: ProviderChoice,
    /// Local jobs on full Chromium instead of the headless shell (`ABR_LOCAL_JOB_BROWSER=chromium`).
    pub local_full_chromium_jobs: bool,
    /// A fresh local browser per job (`ABR_LOCAL_ISOLATION=browser-per-job`).
    pub local_browser_per_job: bool,
    /// The shared local browser is replaced after this many leases
    /// (`ABR_LOCAL_RECYCLE_AFTER_JOBS`, default 200; 0: never): Chromium's memory grows
    /// with use. The old one closes when its last lease ends.
    pub local_recycle_after: Option<usize>,
    /// The local capture browser without a window even when a display is available
    /// (`abr up --headless`; default: a window when there is a display).
    pub local_headless_capture: bool,
    /// Where a local runner keeps named browser profiles (`ABR_PROFILE_DIR`; `abr up`:
    /// `profiles` in its data directory): a task naming a `profile` runs in that profile's
    /// own on-disk browser state, once the tenant's owner consented. Unset: a profile is
    /// refused (`unsupported`). Refused with `ABR_DATABASE_URL`: a fleet's replicas share no
    /// disk.
    pub profile_dir: Option<std::path::PathBuf>,
    /// CDP endpoint (`ABR_CDP_URL`).
    pub cdp_url: Option<SecretString>,
    /// Steel REST base (`ABR_STEEL_URL`; default http://127.0.0.1:3000 for self-hosted Steel,
    /// Steel Cloud's API when `ABR_STEEL_API_KEY` is set).
    pub steel_url: Option<Url>,
    /// Steel API key (`ABR_STEEL_API_KEY`; Steel Cloud).
    pub steel_api_key: Option<SecretString>,
    /// Kernel REST base (`ABR_KERNEL_URL`, default Kernel's API).
    pub kernel_url: Option<Url>,
    /// Kernel API key (`ABR_KERNEL_API_KEY`).
    pub kernel_api_key: Option<SecretString>,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        Self {
            job_provider: ProviderChoice::Local,
            capture_provider: ProviderChoice::Local,
            local_full_chromium_jobs: false,
            local_browser_per_job: false,
            local_recycle_after: Some(abr_providers::DEFAULT_RECYCLE_AFTER),
            local_headless_capture: false,
            cdp_url: None,
            steel_url: None,
            steel_api_key: None,
            kernel_url: None,
            kernel_api_key: None,
            profile_dir: None,
        }
    }
}

impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |s: &Option<SecretString>| s.as_ref().map(|_| "<set>");
        f.debug_struct("ProviderSettings")
            .field("job_provider", &self.job_provider)
            .field("capture_provider", &self.capture_provider)
            .field("local_full_chromium_jobs", &self.local_full_chromium_jobs)
            .field("local_browser_per_job", &self.local_browser_per_job)
            .field("local_headless_capture", &self.local_headless_capture)
            .field("profile_dir", &self.profile_dir)
            .field("cdp_url", &set(&self.cdp_url))
            .field("steel_url", &self.steel_url.as_ref().map(Url::as_str))
            .field("steel_api_key", &set(&self.steel_api_key))
            .field("kernel_url", &self.kernel_url.as_ref().map(Url::as_str))
            .field("kernel_api_key", &set(&self.kernel_api_key))
            .finish()
    }
}

/// The environment variable that makes the MCP server read-only.
pub const MCP_READ_ONLY_VAR: &str = "ABR_MCP_READ_ONLY";
/// The environment variable naming the tenant of `abr mcp` (stdio).
pub const MCP_TENANT_VAR: &str = "ABR_MCP_TENANT";
/// The environment variable holding the API key `abr mcp` (stdio) acts as.
pub const MCP_KEY_VAR: &str = "ABR_MCP_KEY";

/// What the operator decides about the MCP server (never the model). The server's runtime
/// settings are built from it: [`crate::mcp::McpSettings::from_config`].
#[derive(Debug, Clone, Default)]
pub struct McpSection {
    /// The MCP server is read-only ([`MCP_READ_ONLY_VAR`]: `true`/`1`/`on` or
    /// `false`/`0`/`off`, any case; default off): no posting, no tasks, browse sessions
    /// forced read-only, whatever a model sends.
    pub read_only: bool,
    /// The tenant of `abr mcp` on stdio ([`MCP_TENANT_VAR`], checked like every tenant id).
    /// `None`: the runner's default tenant. Over HTTP the tenant is each caller's own.
    pub tenant: Option<String>,
    /// The API key `abr mcp` on stdio acts as ([`MCP_KEY_VAR`], from the environment only:
    /// its role and tenant are the tools'). `None`: the first `ABR_API_TOKEN` (an operator).
    pub key: Option<SecretString>,
}

impl McpSection {
    /// Reads [`MCP_READ_ONLY_VAR`], [`MCP_TENANT_VAR`] and [`MCP_KEY_VAR`] from `env`.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the variable whose value is refused (never the value).
    pub fn from_env(env: &HashMap<String, String>) -> Result<Self, ConfigError> {
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let read_only = match get(MCP_READ_ONLY_VAR) {
            None => false,
            Some(v) => {
                parse_switch(v).ok_or_else(|| invalid(MCP_READ_ONLY_VAR, "use true or false"))?
            }
        };
        let tenant = get(MCP_TENANT_VAR).map(str::to_owned);
        abr_core::check_tenant_id(MCP_TENANT_VAR, tenant.as_deref())
            .map_err(|_| invalid(MCP_TENANT_VAR, "not a valid tenant id"))?;
        let key = get(MCP_KEY_VAR).map(|k| SecretString::from(k.to_owned()));
        Ok(Self {
            read_only,
            tenant,
            key,
        })
    }
}

/// `true`/`1`/`on` or `false`/`0`/`off` (any case).
fn parse_switch(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "on" => Some(true),
        "false" | "0" | "off" => Some(false),
        _ => None,
    }
}

/// The runner on the user's own machine: what `abr up`, `status`, `logs` and `down` read
/// from the environment. The values are as given (trimmed; empty is unset): the commands
/// check the hub URL and the runner id, naming the flag or the variable.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct LocalSettings {
    /// The hub to link to (`ABR_HUB_URL`; `--hub` wins).
    pub hub_url: Option<String>,
    /// The runner id at the hub (`ABR_RUNNER_ID`; `--runner-id` wins).
    pub runner_id: Option<String>,
    /// The state directory: `ABR_STATE_DIR`, else `$XDG_STATE_HOME/abr`, else
    /// `$HOME/.local/state/abr`. `None` when all three are unset.
    pub state_dir: Option<PathBuf>,
    /// `ABR_DATA_DIR` is set in the environment (a config file's `data_dir` does not
    /// count): `abr up` keeps its records there rather than under the state directory.
    pub data_dir_given: bool,
}

impl LocalSettings {
    /// Reads `ABR_HUB_URL`, `ABR_RUNNER_ID`, `ABR_STATE_DIR` (or `XDG_STATE_HOME`, `HOME`)
    /// and whether `ABR_DATA_DIR` is set, from `env`. Nothing here is required: a command
    /// that needs a value reports its absence.
    pub fn from_env(env: &HashMap<String, String>) -> Self {
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let state_dir = if let Some(dir) = get("ABR_STATE_DIR") {
            Some(PathBuf::from(dir))
        } else if let Some(xdg) = get("XDG_STATE_HOME") {
            Some(Path::new(xdg).join("abr"))
        } else {
            get("HOME").map(|home| Path::new(home).join(".local/state/abr"))
        };
        Self {
            hub_url: get("ABR_HUB_URL").map(str::to_owned),
            runner_id: get("ABR_RUNNER_ID").map(str::to_owned),
            state_dir,
            data_dir_given: get("ABR_DATA_DIR").is_some(),
        }
    }
}

impl std::fmt::Debug for LocalSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The hub URL is not checked yet: it could carry credentials.
        f.debug_struct("LocalSettings")
            .field("hub_url", &self.hub_url.as_ref().map(|_| "<set>"))
            .field("runner_id", &self.runner_id)
            .field("state_dir", &self.state_dir)
            .field("data_dir_given", &self.data_dir_given)
            .finish()
    }
}

/// Tasks: who must approve, how much one tenant may use, how long evidence is kept, when a
/// run counts as stalled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSettings {
    /// Where every run event is posted (`ABR_EVENTS_WEBHOOK`): JSON with ids only,
    /// through the egress policy, no redirects. Also on every task record.
    pub events_webhook: Option<Url>,
    /// The secret every webhook delivery is signed with (`ABR_EVENTS_WEBHOOK_SECRET`, at
    /// least 32 bytes; required with a webhook): `abr-signature: t=…,v1=HMAC-SHA256`.
    pub events_webhook_secret: Option<abr_protocol::SecretValue>,
    /// Which tasks wait for a person's approval (`ABR_TASK_APPROVAL`: `all`, the default;
    /// `committing_or_risky`; `off`). The effective rule is recorded on every task.
    pub approval: ApprovalRule,
    /// Whose plans waiting for approval get a dry-run preview for the approver
    /// (`ABR_PLAN_PREVIEWS`: `off`, the default; `all`; or tenant ids, comma-separated).
    pub plan_previews: abr_core::approval::PlanPreviews,
    /// Per tenant: browser sessions at once (`ABR_TENANT_MAX_SESSIONS`, default 10),
    /// executions per UTC day (`ABR_TENANT_MAX_EXECUTIONS_PER_DAY`, default 100), retries
    /// of one failed execution (`ABR_TENANT_MAX_RETRIES`, default 5).
    pub limits: TenantLimits,
    /// How long a run's evidence (frames, screenshots, extracted data) is kept after it
    /// ended (`ABR_RETENTION_DAYS`, default 30; `0` keeps it forever).
    pub retention: Option<Duration>,
    /// A run without progress this long is reported `run_stalled` (`ABR_STALL_SECS`, default
    /// 300).
    pub stall_after: Duration,
    /// What a tenant may keep as artifacts: one file's size (`ABR_ARTIFACT_MAX_BYTES`,
    /// default 10 MiB; the body limit bounds it too), the sniffed types
    /// (`ABR_ARTIFACT_TYPES`, comma-separated), files and bytes per tenant
    /// (`ABR_ARTIFACT_TENANT_MAX_COUNT`, 100; `ABR_ARTIFACT_TENANT_MAX_BYTES`, 100 MiB).
    pub artifacts: abr_core::artifact::ArtifactRules,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            events_webhook: None,
            events_webhook_secret: None,
            approval: ApprovalRule::default(),
            plan_previews: abr_core::approval::PlanPreviews::Off,
            limits: TenantLimits::default(),
            retention: Some(abr_engine::DEFAULT_RETENTION),
            stall_after: abr_engine::DEFAULT_STALL,
            artifacts: abr_core::artifact::ArtifactRules::default(),
        }
    }
}

/// Where durable records live.
#[derive(Clone, Default)]
pub struct StoreSettings {
    /// The directory of the SQLite file `abr.db` (`ABR_DATA_DIR`; default the user's data
    /// directory, `$XDG_DATA_HOME/abr` or `~/.local/share/abr`). `None`: records are kept in
    /// memory only (embedders and tests that build a config by hand).
    pub data_dir: Option<PathBuf>,
    /// 32 bytes, hex (`ABR_SESSION_KEY`): encrypts stored sessions and task credentials
    /// (XChaCha20-Poly1305). Without it nothing holding credentials is stored, except in
    /// `--insecure-dev` (stored in plaintext, marked as such).
    pub session_key: Option<SecretString>,
    /// A PostgreSQL database a fleet of replicas shares (`ABR_DATABASE_URL=postgres://…`),
    /// instead of the SQLite file: a secret (it may hold a password).
    pub database_url: Option<SecretString>,
    /// At most this many connections to it per replica (`ABR_DATABASE_POOL_SIZE`, 1 to
    /// 1000; 0, or unset: 16).
    pub database_pool_size: usize,
}

impl std::fmt::Debug for StoreSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreSettings")
            .field("data_dir", &self.data_dir)
            .field("session_key", &self.session_key.as_ref().map(|_| "<set>"))
            .field("database_url", &self.database_url.as_ref().map(|_| "<set>"))
            .field("database_pool_size", &self.database_pool_size)
            .finish()
    }
}

impl std::fmt::Debug for RunnerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerConfig")
            .field("bind", &self.bind)
            .field("public_url", &self.public_url.as_ref().map(Url::as_str))
            .field("api_tokens", &self.api_tokens.len())
            .field("insecure_dev", &self.insecure_dev)
            .field("providers", &self.providers)
            .field(
                "demo_site_url",
                &self.demo_site_url.as_ref().map(Url::as_str),
            )
            .field("limits", &self.limits)
            .field(
                "egress_allow_private",
                &self
                    .egress
                    .allowed()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>(),
            )
            .field("live", &self.live)
            .field("tasks", &self.tasks)
            .field("store", &self.store)
            .field("mcp", &self.mcp)
            .field("platforms_dir", &self.platforms_dir)
            .field("local", &self.local)
            .field("traces", &self.traces)
            .field("fleet", &self.fleet)
            .finish_non_exhaustive()
    }
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8787)),
            public_url: None,
            api_tokens: Vec::new(),
            insecure_dev: false,
            providers: ProviderSettings::default(),
            demo_site_url: None,
            limits: Limits::default(),
            egress: EgressPolicy::new(),
            live: LiveSettings::default(),
            mcp: McpSection::default(),
            pacing: Some(DEFAULT_PACING),
            tasks: TaskSettings::default(),
            store: StoreSettings::default(),
            platforms_dir: None,
            platform_vars: BTreeMap::new(),
            local: LocalSettings::default(),
            relay_session_export: false,
            hub: HubSection::default(),
            fleet: FleetSection::default(),
            traces: None,
        }
    }
}

/// The data directory `abr serve` uses with `env` and no config file: `ABR_DATA_DIR`, else
/// `$XDG_DATA_HOME/abr`, else `$HOME/.local/share/abr` (for `abr keys`).
///
/// # Errors
/// [`ConfigError::Invalid`] naming `ABR_DATA_DIR` when none can be found.
pub fn data_dir(env: &HashMap<String, String>) -> Result<PathBuf, ConfigError> {
    match env
        .get("ABR_DATA_DIR")
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
    {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => default_data_dir(env),
    }
}

/// The user's data directory for ABR: `$XDG_DATA_HOME/abr`, else `$HOME/.local/share/abr`.
fn default_data_dir(env: &HashMap<String, String>) -> Result<PathBuf, ConfigError> {
    let get = |k: &str| env.get(k).map(String::as_str).filter(|v| !v.is_empty());
    if let Some(xdg) = get("XDG_DATA_HOME") {
        return Ok(Path::new(xdg).join("abr"));
    }
    match get("HOME") {
        Some(home) => Ok(Path::new(home).join(".local/share/abr")),
        None => Err(invalid(
            "ABR_DATA_DIR",
            "no data directory: set ABR_DATA_DIR (HOME and XDG_DATA_HOME are unset)",
        )),
    }
}

/// The pacing of platforms that take the runner's, unless `ABR_PACING_MS` says otherwise.
pub const DEFAULT_PACING: Pacing = Pacing {
    min: Duration::from_millis(1000),
    max: Duration::from_millis(3000),
};

/// Parses `min-max` milliseconds (or one value), or `off`.
fn parse_pacing(key: &str, value: &str) -> Result<Option<Pacing>, ConfigError> {
    if matches!(value, "off" | "0") {
        return Ok(None);
    }
    let ms = |v: &str| {
        v.trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| invalid(key, "use min-max in milliseconds (e.g. 1000-3000), or off"))
    };
    let (min, max) = match value.split_once('-') {
        Some((min, max)) => (ms(min)?, ms(max)?),
        None => (ms(value)?, ms(value)?),
    };
    if min > max {
        return Err(invalid(key, "the minimum is above the maximum"));
    }
    Ok(Some(Pacing { min, max }))
}

/// Parses one `scheme://host[:port]` origin (no path, query or credentials), normalised.
fn parse_origin(key: &str, value: &str) -> Result<String, ConfigError> {
    let url = Url::parse(value.trim()).map_err(|e| invalid(key, format!("not an origin: {e}")))?;
    let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    if !matches!(url.scheme(), "http" | "https")
        || url.host().is_none()
        || !bare
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(invalid(
            key,
            "each entry must be an origin like https://app.example.com",
        ));
    }
    Ok(url.origin().ascii_serialization())
}

fn parse_url(key: &str, value: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(value.trim()).map_err(|e| invalid(key, format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https" | "ws" | "wss") || url.host().is_none() {
        return Err(invalid(key, "must be an http(s) or ws(s) URL with a host"));
    }
    Ok(url)
}

/// The keys of the optional TOML file: the environment variable names without `ABR_`,
/// lowercased (`bind`, `job_provider`, `max_concurrent_jobs`, ...). Secrets (tokens, API
/// keys) are read from the environment only.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    bind: Option<String>,
    public_url: Option<String>,
    job_provider: Option<String>,
    capture_provider: Option<String>,
    local_job_browser: Option<String>,
    local_isolation: Option<String>,
    local_recycle_after_jobs: Option<usize>,
    steel_url: Option<String>,
    kernel_url: Option<String>,
    demo_site_url: Option<String>,
    max_concurrent_jobs: Option<usize>,
    max_queued_jobs: Option<usize>,
    body_limit_bytes: Option<usize>,
    request_timeout_secs: Option<u64>,
    capture_ttl_secs: Option<u64>,
    max_open_captures: Option<usize>,
    max_open_browses: Option<usize>,
    header_read_timeout_secs: Option<u64>,
    max_connections: Option<usize>,
    egress_allow_private: Option<String>,
    live_embed_origins: Option<String>,
    live_proxy_provider_viewer: Option<bool>,
    live_max_sockets: Option<usize>,
    pacing_ms: Option<String>,
    task_approval: Option<String>,
    tenant_max_sessions: Option<u32>,
    tenant_max_executions_per_day: Option<u32>,
    tenant_max_retries: Option<u32>,
    retention_days: Option<u64>,
    stall_secs: Option<u64>,
    artifact_max_bytes: Option<u64>,
    artifact_types: Option<String>,
    artifact_tenant_max_count: Option<u64>,
    artifact_tenant_max_bytes: Option<u64>,
    artifact_run_max_count: Option<u64>,
    data_dir: Option<String>,
    platforms_dir: Option<String>,
    platform_vars: Option<String>,
}

impl FileConfig {
    fn into_env(self) -> HashMap<String, String> {
        let mut env = HashMap::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                env.insert(format!("ABR_{}", k.to_ascii_uppercase()), v);
            }
        };
        put("bind", self.bind);
        put("public_url", self.public_url);
        put("job_provider", self.job_provider);
        put("capture_provider", self.capture_provider);
        put("local_job_browser", self.local_job_browser);
        put("local_isolation", self.local_isolation);
        put(
            "local_recycle_after_jobs",
            self.local_recycle_after_jobs.map(|v| v.to_string()),
        );
        put("steel_url", self.steel_url);
        put("kernel_url", self.kernel_url);
        put("demo_site_url", self.demo_site_url);
        put(
            "max_concurrent_jobs",
            self.max_concurrent_jobs.map(|v| v.to_string()),
        );
        put(
            "max_queued_jobs",
            self.max_queued_jobs.map(|v| v.to_string()),
        );
        put(
            "body_limit_bytes",
            self.body_limit_bytes.map(|v| v.to_string()),
        );
        put(
            "request_timeout_secs",
            self.request_timeout_secs.map(|v| v.to_string()),
        );
        put(
            "capture_ttl_secs",
            self.capture_ttl_secs.map(|v| v.to_string()),
        );
        put(
            "max_open_captures",
            self.max_open_captures.map(|v| v.to_string()),
        );
        put(
            "max_open_browses",
            self.max_open_browses.map(|v| v.to_string()),
        );
        put(
            "header_read_timeout_secs",
            self.header_read_timeout_secs.map(|v| v.to_string()),
        );
        put(
            "max_connections",
            self.max_connections.map(|v| v.to_string()),
        );
        put("egress_allow_private", self.egress_allow_private);
        put("live_embed_origins", self.live_embed_origins);
        put(
            "live_proxy_provider_viewer",
            self.live_proxy_provider_viewer.map(|v| v.to_string()),
        );
        put(
            "live_max_sockets",
            self.live_max_sockets.map(|v| v.to_string()),
        );
        put("pacing_ms", self.pacing_ms);
        put("task_approval", self.task_approval);
        let num = |v: Option<u32>| v.map(|v| v.to_string());
        put("tenant_max_sessions", num(self.tenant_max_sessions));
        put(
            "tenant_max_executions_per_day",
            num(self.tenant_max_executions_per_day),
        );
        put("tenant_max_retries", num(self.tenant_max_retries));
        put("retention_days", self.retention_days.map(|v| v.to_string()));
        put("stall_secs", self.stall_secs.map(|v| v.to_string()));
        put(
            "artifact_max_bytes",
            self.artifact_max_bytes.map(|v| v.to_string()),
        );
        put("artifact_types", self.artifact_types);
        put(
            "artifact_tenant_max_count",
            self.artifact_tenant_max_count.map(|v| v.to_string()),
        );
        put(
            "artifact_tenant_max_bytes",
            self.artifact_tenant_max_bytes.map(|v| v.to_string()),
        );
        put(
            "artifact_run_max_count",
            self.artifact_run_max_count.map(|v| v.to_string()),
        );
        put("data_dir", self.data_dir);
        put("platforms_dir", self.platforms_dir);
        put("platform_vars", self.platform_vars);
        env
    }
}

impl RunnerConfig {
    /// Reads the configuration: `file` (TOML) first, then `env` on top.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the setting when a value is unusable, or no token is set
    /// without `insecure_dev`.
    pub fn load(
        env: &HashMap<String, String>,
        file: Option<&Path>,
        insecure_dev: bool,
    ) -> Result<Self, ConfigError> {
        let mut merged = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
                let parsed: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::File {
                    path: path.display().to_string(),
                    reason: e.message().to_owned(),
                })?;
                parsed.into_env()
            }
            None => HashMap::new(),
        };
        merged.extend(
            env.iter()
                .filter(|(k, _)| k.starts_with("ABR_"))
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        let mut config = Self::from_env(&merged, insecure_dev)?;
        if config.store.data_dir.is_none() {
            config.store.data_dir = Some(default_data_dir(env)?);
        }
        config.local = LocalSettings::from_env(env);
        config.traces =
            crate::traces::TraceSettings::from_env(env).map_err(|e| ConfigError::Invalid {
                key: e.key,
                reason: e.reason,
            })?;
        Ok(config)
    }

    fn from_env(env: &HashMap<String, String>, insecure_dev: bool) -> Result<Self, ConfigError> {
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let number = |k: &str| -> Result<Option<u64>, ConfigError> {
            get(k)
                .map(|v| {
                    v.parse::<u64>()
                        .map_err(|_| invalid(k, "must be a whole number"))
                })
                .transpose()
        };
        let positive = |k: &str| -> Result<Option<usize>, ConfigError> {
            match number(k)? {
                Some(0) => Err(invalid(k, "must be at least 1")),
                Some(n) => usize::try_from(n)
                    .map(Some)
                    .map_err(|_| invalid(k, "too large")),
                None => Ok(None),
            }
        };
        let secret = |k: &str| get(k).map(|v| SecretString::from(v.to_owned()));

        let mut config = Self {
            insecure_dev,
            ..Self::default()
        };
        if let Some(bind) = get("ABR_BIND") {
            config.bind = bind
                .parse()
                .map_err(|_| invalid("ABR_BIND", "must be an address like 127.0.0.1:8787"))?;
        }
        config.public_url = get("ABR_PUBLIC_URL")
            .map(|v| parse_url("ABR_PUBLIC_URL", v))
            .transpose()?;
        config.api_tokens = api_tokens(env);
        for token in &config.api_tokens {
            let t = token.expose_secret();
            if t.len() < 16 || !t.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(invalid(
                    "ABR_API_TOKEN",
                    "each token must be at least 16 visible ASCII characters",
                ));
            }
        }
        if config.api_tokens.is_empty() && !insecure_dev {
            return Err(ConfigError::NoToken);
        }
        if insecure_dev && !config.bind.ip().is_loopback() {
            return Err(invalid(
                "ABR_BIND",
                "--insecure-dev accepts requests without a token: it only binds a loopback \
                 address (127.0.0.1 or ::1)",
            ));
        }
        let p = &mut config.providers;
        if let Some(v) = get("ABR_JOB_PROVIDER") {
            p.job_provider = v.parse().map_err(|e| invalid("ABR_JOB_PROVIDER", e))?;
        }
        if let Some(v) = get("ABR_CAPTURE_PROVIDER") {
            p.capture_provider = v.parse().map_err(|e| invalid("ABR_CAPTURE_PROVIDER", e))?;
        }
        p.local_full_chromium_jobs = match get("ABR_LOCAL_JOB_BROWSER") {
            None | Some("headless-shell") => false,
            Some("chromium") => true,
            Some(_) => {
                return Err(invalid(
                    "ABR_LOCAL_JOB_BROWSER",
                    "use headless-shell or chromium",
                ));
            }
        };
        p.local_browser_per_job = match get("ABR_LOCAL_ISOLATION") {
            None | Some("shared") => false,
            Some("browser-per-job") => true,
            Some(_) => {
                return Err(invalid(
                    "ABR_LOCAL_ISOLATION",
                    "use shared or browser-per-job",
                ));
            }
        };
        if let Some(n) = number("ABR_LOCAL_RECYCLE_AFTER_JOBS")? {
            p.local_recycle_after = match n {
                0 => None,
                n => Some(
                    usize::try_from(n)
                        .map_err(|_| invalid("ABR_LOCAL_RECYCLE_AFTER_JOBS", "too large"))?,
                ),
            };
        }
        p.cdp_url = secret("ABR_CDP_URL");
        p.profile_dir = get("ABR_PROFILE_DIR").map(std::path::PathBuf::from);
        if let Some(v) = get("ABR_STEEL_URL") {
            p.steel_url = Some(parse_url("ABR_STEEL_URL", v)?);
        }
        p.steel_api_key = secret("ABR_STEEL_API_KEY");
        if let Some(v) = get("ABR_KERNEL_URL") {
            p.kernel_url = Some(parse_url("ABR_KERNEL_URL", v)?);
        }
        p.kernel_api_key = secret("ABR_KERNEL_API_KEY");
        config.demo_site_url = match get("ABR_DEMO_SITE_URL") {
            None | Some("off") => None,
            Some(_) if !cfg!(feature = "demo") => {
                return Err(invalid(
                    "ABR_DEMO_SITE_URL",
                    "this abr was built without the `demo` feature",
                ));
            }
            Some(v) => Some(parse_url("ABR_DEMO_SITE_URL", v)?),
        };
        let p = &config.providers;
        for choice in [p.job_provider, p.capture_provider] {
            match choice {
                ProviderChoice::Cdp if p.cdp_url.is_none() => {
                    return Err(invalid("ABR_CDP_URL", "required when a provider is cdp"));
                }
                ProviderChoice::Kernel if p.kernel_api_key.is_none() => {
                    return Err(invalid(
                        "ABR_KERNEL_API_KEY",
                        "required when a provider is kernel",
                    ));
                }
                _ => {}
            }
        }
        let l = &mut config.limits;
        if let Some(n) = positive("ABR_MAX_CONCURRENT_JOBS")? {
            l.max_concurrent_jobs = n;
        }
        if let Some(n) = number("ABR_MAX_QUEUED_JOBS")? {
            l.max_queued_jobs =
                usize::try_from(n).map_err(|_| invalid("ABR_MAX_QUEUED_JOBS", "too large"))?;
        }
        if let Some(n) = positive("ABR_BODY_LIMIT_BYTES")? {
            l.body_limit_bytes = n;
        }
        if let Some(n) = positive("ABR_REQUEST_TIMEOUT_SECS")? {
            l.request_timeout = Duration::from_secs(n as u64);
        }
        if let Some(n) = positive("ABR_CAPTURE_TTL_SECS")? {
            l.capture_ttl = Duration::from_secs(n as u64);
        }
        if let Some(n) = positive("ABR_MAX_OPEN_CAPTURES")? {
            l.max_open_captures = n;
        }
        if let Some(n) = positive("ABR_MAX_OPEN_BROWSES")? {
            l.max_open_browses = n;
        }
        if let Some(n) = positive("ABR_HEADER_READ_TIMEOUT_SECS")? {
            l.header_read_timeout = Duration::from_secs(n as u64);
        }
        if let Some(n) = positive("ABR_MAX_CONNECTIONS")? {
            l.max_connections = n;
        }
        if let Some(list) = get("ABR_EGRESS_ALLOW_PRIVATE") {
            for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let pair: AllowedPrivate = entry
                    .parse()
                    .map_err(|e: String| invalid("ABR_EGRESS_ALLOW_PRIVATE", e))?;
                config.egress = config.egress.allow_private(pair);
            }
        }
        if let Some(list) = get("ABR_LIVE_EMBED_ORIGINS") {
            config.live.embed_origins = list
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(|e| parse_origin("ABR_LIVE_EMBED_ORIGINS", e))
                .collect::<Result<_, _>>()?;
        }
        config.live.proxy_provider_viewer = match get("ABR_LIVE_PROXY_PROVIDER_VIEWER") {
            None | Some("false" | "0" | "off") => false,
            Some("true" | "1" | "on") => true,
            Some(_) => {
                return Err(invalid(
                    "ABR_LIVE_PROXY_PROVIDER_VIEWER",
                    "use true or false",
                ));
            }
        };
        config.mcp = McpSection::from_env(env)?;
        config.relay_session_export = match get("ABR_RELAY_SESSION_EXPORT") {
            None => false,
            Some(v) => parse_switch(v)
                .ok_or_else(|| invalid("ABR_RELAY_SESSION_EXPORT", "use true or false"))?,
        };
        if let Some(v) = get("ABR_HUB_MIN_RUNNER_VERSION") {
            config.hub.min_runner_version = Some(semver::Version::parse(v).map_err(|_| {
                invalid("ABR_HUB_MIN_RUNNER_VERSION", "a version: MAJOR.MINOR.PATCH")
            })?);
        }
        if let Some(secs) = number("ABR_HUB_RUNNER_WAIT_SECS")? {
            if secs > 300 {
                return Err(invalid("ABR_HUB_RUNNER_WAIT_SECS", "0 to 300"));
            }
            config.hub.offline_wait = Duration::from_secs(secs);
        }
        if let Some(n) = positive("ABR_LIVE_MAX_SOCKETS")? {
            config.live.max_sockets_per_token = n;
        }
        if let Some(v) = get("ABR_PACING_MS") {
            config.pacing = parse_pacing("ABR_PACING_MS", v)?;
        }
        if let Some(v) = get("ABR_TASK_APPROVAL") {
            config.tasks.approval = v
                .parse()
                .map_err(|_| invalid("ABR_TASK_APPROVAL", "use all, committing_or_risky or off"))?;
        }
        if let Some(v) = get("ABR_PLAN_PREVIEWS") {
            config.tasks.plan_previews = v.parse().map_err(|_| {
                invalid(
                    "ABR_PLAN_PREVIEWS",
                    "use off, all, or tenant ids separated by commas",
                )
            })?;
        }
        let limit = |k: &str| -> Result<Option<u32>, ConfigError> {
            positive(k)?
                .map(|n| u32::try_from(n).map_err(|_| invalid(k, "too large")))
                .transpose()
        };
        let t = &mut config.tasks.limits;
        if let Some(n) = limit("ABR_TENANT_MAX_SESSIONS")? {
            t.concurrent_sessions = n;
        }
        if let Some(n) = limit("ABR_TENANT_MAX_EXECUTIONS_PER_DAY")? {
            t.daily_executions = n;
        }
        if let Some(n) = limit("ABR_TENANT_MAX_RETRIES")? {
            t.retries = n;
        }
        match number("ABR_RETENTION_DAYS")? {
            Some(0) => config.tasks.retention = None,
            Some(days) if days > 3650 => {
                return Err(invalid("ABR_RETENTION_DAYS", "0 (keep forever) to 3650"));
            }
            Some(days) => config.tasks.retention = Some(Duration::from_secs(days * 24 * 60 * 60)),
            None => {}
        }
        let a = &mut config.tasks.artifacts;
        for (name, slot) in [
            ("ABR_ARTIFACT_MAX_BYTES", &mut a.max_bytes),
            ("ABR_ARTIFACT_TENANT_MAX_COUNT", &mut a.quota.max_count),
            ("ABR_ARTIFACT_TENANT_MAX_BYTES", &mut a.quota.max_bytes),
        ] {
            match number(name)? {
                Some(0) => return Err(invalid(name, "at least 1")),
                Some(n) => *slot = n,
                None => {}
            }
        }
        match number("ABR_ARTIFACT_RUN_MAX_COUNT")? {
            Some(n @ 1..=1000) => {
                a.run_max_count = usize::try_from(n).unwrap_or(a.run_max_count);
            }
            Some(_) => return Err(invalid("ABR_ARTIFACT_RUN_MAX_COUNT", "1 to 1000")),
            None => {}
        }
        if let Some(types) = get("ABR_ARTIFACT_TYPES") {
            let types: Vec<String> = types
                .split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .filter(|t| !t.is_empty())
                .collect();
            let shaped = |t: &String| {
                t.split_once('/').is_some_and(|(kind, sub)| {
                    !kind.is_empty() && !sub.is_empty() && !sub.contains('/')
                }) && t.bytes().all(|c| c.is_ascii_graphic())
            };
            if types.is_empty() || !types.iter().all(shaped) {
                return Err(invalid(
                    "ABR_ARTIFACT_TYPES",
                    "a comma-separated list of media types (application/pdf,image/png)",
                ));
            }
            a.types = types;
        }
        if let Some(secs) = number("ABR_STALL_SECS")? {
            if !(5..=86_400).contains(&secs) {
                return Err(invalid("ABR_STALL_SECS", "5 to 86400"));
            }
            config.tasks.stall_after = Duration::from_secs(secs);
        }
        config.tasks.events_webhook = get("ABR_EVENTS_WEBHOOK")
            .map(|v| parse_url("ABR_EVENTS_WEBHOOK", v))
            .transpose()?;
        config.tasks.events_webhook_secret =
            get("ABR_EVENTS_WEBHOOK_SECRET").map(abr_protocol::SecretValue::new);
        match (
            &config.tasks.events_webhook,
            &config.tasks.events_webhook_secret,
        ) {
            (Some(_), None) => {
                return Err(invalid(
                    "ABR_EVENTS_WEBHOOK_SECRET",
                    "required with ABR_EVENTS_WEBHOOK: every delivery is signed with it \
                     (32 bytes or more)",
                ));
            }
            (_, Some(secret)) if secret.expose().len() < 32 => {
                return Err(invalid("ABR_EVENTS_WEBHOOK_SECRET", "32 bytes or more"));
            }
            _ => {}
        }
        config.store.data_dir = get("ABR_DATA_DIR").map(PathBuf::from);
        config.store.session_key = secret("ABR_SESSION_KEY");
        if let Some(key) = &config.store.session_key {
            let k = key.expose_secret();
            if k.len() != 64 || !k.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(
                    "ABR_SESSION_KEY",
                    "must be 64 hex characters (32 bytes; e.g. `openssl rand -hex 32`)",
                ));
            }
        }
        config.store.database_url = secret("ABR_DATABASE_URL");
        if let Some(url) = &config.store.database_url {
            let url = url.expose_secret();
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err(invalid(
                    "ABR_DATABASE_URL",
                    "a PostgreSQL URL: postgres://user:password@host:port/database",
                ));
            }
            if config.providers.profile_dir.is_some() {
                return Err(invalid(
                    "ABR_PROFILE_DIR",
                    "named profiles live on one machine's disk: a fleet on ABR_DATABASE_URL \
                     keeps none",
                ));
            }
        }
        config.store.database_pool_size = match get("ABR_DATABASE_POOL_SIZE") {
            None => abr_store::DEFAULT_POOL_SIZE,
            Some(n) => n
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| invalid("ABR_DATABASE_POOL_SIZE", "a number from 1 to 1000"))?,
        };
        config.fleet.node_id = get("ABR_NODE_ID").map(str::to_owned);
        if let Some(secs) = get("ABR_NODE_LEASE_SECS") {
            config.fleet.lease = secs
                .parse::<u64>()
                .ok()
                .filter(|s| (2..=600).contains(s))
                .map(Duration::from_secs)
                .ok_or_else(|| invalid("ABR_NODE_LEASE_SECS", "seconds, 2 to 600"))?;
        }
        if let Some(secs) = get("ABR_DRAIN_GRACE_SECS") {
            config.fleet.drain_grace = secs
                .parse::<u64>()
                .ok()
                .filter(|s| *s <= 300)
                .map(Duration::from_secs)
                .ok_or_else(|| invalid("ABR_DRAIN_GRACE_SECS", "seconds, 0 to 300"))?;
        }
        // A replica's address is where the others forward calls for what it holds: one
        // bound to every interface has none to give without `ABR_PUBLIC_URL` (0.0.0.0 would
        // send the others to themselves).
        if config.store.database_url.is_some()
            && config.public_url.is_none()
            && config.bind.ip().is_unspecified()
        {
            return Err(invalid(
                "ABR_PUBLIC_URL",
                "a replica of a fleet bound to every interface needs ABR_PUBLIC_URL: the \
                 address the other replicas (and people's live views) reach it at",
            ));
        }
        config.platforms_dir = get("ABR_PLATFORMS_DIR").map(PathBuf::from);
        if let Some(list) = get("ABR_PLATFORM_VARS") {
            for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let Some((name, value)) = entry.split_once('=') else {
                    return Err(invalid("ABR_PLATFORM_VARS", "use name=value,name=value"));
                };
                config
                    .platform_vars
                    .insert(name.trim().to_owned(), value.trim().to_owned());
            }
        }
        config.budget(Duration::ZERO)?;
        Ok(config)
    }

    /// The base of live-view URLs: `ABR_PUBLIC_URL`, or `http://<bind>`.
    pub fn public_base(&self) -> String {
        match &self.public_url {
            Some(url) => url.as_str().trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.bind),
        }
    }

    /// The deadlines of a request: every share of `ABR_REQUEST_TIMEOUT_SECS`, with pacing
    /// up to the longer of the runner's and `platform_pacing_max` (the longest a registered
    /// platform asks for).
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming `ABR_REQUEST_TIMEOUT_SECS` when they do not fit.
    pub fn budget(&self, platform_pacing_max: Duration) -> Result<DeadlineBudget, ConfigError> {
        let runner = self.pacing.map_or(Duration::ZERO, |p| p.max);
        DeadlineBudget::from_request_timeout(
            self.limits.request_timeout,
            runner.max(platform_pacing_max),
        )
        .map_err(|e| invalid("ABR_REQUEST_TIMEOUT_SECS", e.to_string()))
    }

    /// The engine's share of the configuration.
    pub fn engine(&self) -> abr_engine::EngineConfig {
        abr_engine::EngineConfig {
            request_timeout: self.limits.request_timeout,
            max_concurrent_jobs: self.limits.max_concurrent_jobs,
            max_queued_jobs: self.limits.max_queued_jobs,
            capture_ttl: self.limits.capture_ttl,
            max_open_captures: self.limits.max_open_captures,
            max_open_browses: self.limits.max_open_browses,
            max_live_sockets: self.live.max_sockets_per_token,
            live_view_base: format!("{}/live/", self.public_base()),
            pacing: self.pacing,
            approval: self.tasks.approval,
            plan_previews: self.tasks.plan_previews.clone(),
            tenant_limits: self.tasks.limits,
            retention: self.tasks.retention,
            stall_after: self.tasks.stall_after,
            egress: self.egress.clone(),
            artifacts: self.tasks.artifacts.clone(),
        }
    }

    /// The runner's public origin (`scheme://host[:port]`): what a browser showing the live
    /// view sends as `Origin`.
    pub fn public_origin(&self) -> String {
        match &self.public_url {
            Some(url) => url.origin().ascii_serialization(),
            None => format!("http://{}", self.bind),
        }
    }

    /// The origins allowed to open live-view sockets: the runner's own, and the embedding
    /// apps'.
    pub fn live_origins(&self) -> Vec<String> {
        let mut origins = vec![self.public_origin()];
        origins.extend(self.live.embed_origins.iter().cloned());
        origins
    }
}

/// An environment of `pairs`, for the tests of what reads one.
#[cfg(test)]
pub(crate) fn env_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pairs`, with a `HOME` (the default data directory is under it).
    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        [("HOME", "/home/abr-test")]
            .iter()
            .chain(pairs)
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// A replica of a fleet must say where the others reach it when its bind address does
    /// not (0.0.0.0 would make them forward to themselves).
    #[test]
    fn a_fleet_replica_bound_to_every_interface_needs_its_public_url() {
        let token = ("ABR_API_TOKEN", "fleet-token-0123456789");
        let fleet = [
            token,
            ("ABR_DATABASE_URL", "postgres://abr@db:5432/abr"),
            ("ABR_BIND", "0.0.0.0:8787"),
        ];
        match RunnerConfig::load(&env(&fleet), None, false) {
            Err(ConfigError::Invalid { key, .. }) => assert_eq!(key, "ABR_PUBLIC_URL"),
            other => panic!("{other:?}"),
        }
        let mut named = fleet.to_vec();
        named.push(("ABR_PUBLIC_URL", "http://abr-1.internal:8787"));
        let c = RunnerConfig::load(&env(&named), None, false).unwrap();
        assert_eq!(c.public_base(), "http://abr-1.internal:8787");
        // Alone, or on one address, nothing is needed.
        let alone = [token, ("ABR_BIND", "0.0.0.0:8787")];
        assert!(RunnerConfig::load(&env(&alone), None, false).is_ok());
        let loopback = [
            token,
            ("ABR_DATABASE_URL", "postgres://abr@db:5432/abr"),
            ("ABR_BIND", "127.0.0.1:8787"),
        ];
        assert!(RunnerConfig::load(&env(&loopback), None, false).is_ok());
    }

    /// Named profiles live on one machine's disk: a fleet refuses them, one runner reads
    /// where they are.
    #[test]
    fn a_profile_folder_is_read_and_refused_on_a_fleet() {
        let token = ("ABR_API_TOKEN", "fleet-token-0123456789");
        let one = [token, ("ABR_PROFILE_DIR", "/var/lib/abr/profiles")];
        let c = RunnerConfig::load(&env(&one), None, false).unwrap();
        assert_eq!(
            c.providers.profile_dir.as_deref(),
            Some(std::path::Path::new("/var/lib/abr/profiles"))
        );
        assert_eq!(
            RunnerConfig::load(&env(&[token]), None, false)
                .unwrap()
                .providers
                .profile_dir,
            None
        );
        let fleet = [
            token,
            ("ABR_PROFILE_DIR", "/var/lib/abr/profiles"),
            ("ABR_DATABASE_URL", "postgres://abr@db:5432/abr"),
        ];
        match RunnerConfig::load(&env(&fleet), None, false) {
            Err(ConfigError::Invalid { key, .. }) => assert_eq!(key, "ABR_PROFILE_DIR"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_data_directory_and_the_task_settings_are_read() {
        let c = RunnerConfig::load(&env(&[]), None, true).unwrap();
        assert_eq!(
            c.store.data_dir.as_deref(),
            Some(Path::new("/home/abr-test/.local/share/abr"))
        );
        assert!(c.store.session_key.is_none());
        assert_eq!(c.tasks.approval, ApprovalRule::All);
        assert_eq!(c.tasks.limits, TenantLimits::default());
        assert_eq!(c.tasks.retention, Some(Duration::from_secs(30 * 86_400)));
        assert_eq!(c.tasks.stall_after, Duration::from_secs(300));
        let c = RunnerConfig::load(
            &env(&[("ABR_RETENTION_DAYS", "7"), ("ABR_STALL_SECS", "60")]),
            None,
            true,
        )
        .unwrap();
        assert_eq!(c.tasks.retention, Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(c.engine().retention, c.tasks.retention);
        assert_eq!(c.engine().stall_after, Duration::from_secs(60));
        let c = RunnerConfig::load(&env(&[("ABR_RETENTION_DAYS", "0")]), None, true).unwrap();
        assert_eq!(c.tasks.retention, None, "0 keeps evidence forever");
        let c = RunnerConfig::load(
            &env(&[
                ("ABR_ARTIFACT_MAX_BYTES", "2048"),
                ("ABR_ARTIFACT_TYPES", " Application/PDF , image/png,"),
                ("ABR_ARTIFACT_TENANT_MAX_COUNT", "3"),
                ("ABR_ARTIFACT_TENANT_MAX_BYTES", "4096"),
            ]),
            None,
            true,
        )
        .unwrap();
        let artifacts = c.engine().artifacts;
        assert_eq!(artifacts.max_bytes, 2048);
        assert_eq!(artifacts.types, ["application/pdf", "image/png"]);
        assert_eq!(
            (artifacts.quota.max_count, artifacts.quota.max_bytes),
            (3, 4096)
        );
        let c = RunnerConfig::load(&env(&[("XDG_DATA_HOME", "/xdg")]), None, true).unwrap();
        assert_eq!(c.store.data_dir.as_deref(), Some(Path::new("/xdg/abr")));
        let key = "0f".repeat(32);
        let c = RunnerConfig::load(
            &env(&[
                ("ABR_DATA_DIR", "/var/lib/abr"),
                ("ABR_SESSION_KEY", &key),
                ("ABR_TASK_APPROVAL", "committing_or_risky"),
                ("ABR_TENANT_MAX_SESSIONS", "3"),
                ("ABR_TENANT_MAX_EXECUTIONS_PER_DAY", "7"),
                ("ABR_TENANT_MAX_RETRIES", "1"),
                ("ABR_PLATFORMS_DIR", "/etc/abr/platforms"),
                (
                    "ABR_PLATFORM_VARS",
                    "base=https://app.example.com, env = prod",
                ),
            ]),
            None,
            true,
        )
        .unwrap();
        assert_eq!(c.store.data_dir.as_deref(), Some(Path::new("/var/lib/abr")));
        assert!(c.store.session_key.is_some());
        assert!(!format!("{c:?}").contains(&key), "the key never prints");
        assert_eq!(c.tasks.approval, ApprovalRule::CommittingOrRisky);
        assert_eq!(
            c.tasks.limits,
            TenantLimits {
                concurrent_sessions: 3,
                daily_executions: 7,
                retries: 1
            }
        );
        assert_eq!(
            c.platforms_dir.as_deref(),
            Some(Path::new("/etc/abr/platforms"))
        );
        assert_eq!(c.platform_vars["base"], "https://app.example.com");
        assert_eq!(c.platform_vars["env"], "prod");
        for (k, v, why) in [
            ("ABR_SESSION_KEY", "abc", "64 hex"),
            ("ABR_SESSION_KEY", &"zz".repeat(32), "64 hex"),
            ("ABR_TASK_APPROVAL", "some", "committing_or_risky"),
            ("ABR_TENANT_MAX_SESSIONS", "0", "at least 1"),
            ("ABR_PLATFORM_VARS", "base", "name=value"),
            ("ABR_RETENTION_DAYS", "3651", "3650"),
            ("ABR_RETENTION_DAYS", "a month", "whole number"),
            ("ABR_STALL_SECS", "1", "5 to 86400"),
            ("ABR_ARTIFACT_MAX_BYTES", "0", "at least 1"),
            ("ABR_ARTIFACT_TENANT_MAX_COUNT", "0", "at least 1"),
            ("ABR_ARTIFACT_TYPES", "pdf", "media types"),
            ("ABR_ARTIFACT_RUN_MAX_COUNT", "0", "1 to 1000"),
            ("ABR_ARTIFACT_TYPES", "image/png/x", "media types"),
        ] {
            let err = RunnerConfig::load(&env(&[(k, v)]), None, true)
                .unwrap_err()
                .to_string();
            assert!(err.contains(k) && err.contains(why), "{k}={v}: {err}");
            assert!(
                v.len() < 8 || !err.contains(v),
                "the error echoes the value"
            );
        }
        // Without HOME, XDG_DATA_HOME or ABR_DATA_DIR there is nowhere durable to write.
        let bare: HashMap<String, String> = HashMap::new();
        let err = RunnerConfig::load(&bare, None, true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("ABR_DATA_DIR"), "{err}");
    }

    #[test]
    fn refuses_to_start_without_a_token_unless_insecure_dev() {
        assert!(matches!(
            RunnerConfig::load(&env(&[]), None, false),
            Err(ConfigError::NoToken)
        ));
        let c = RunnerConfig::load(&env(&[]), None, true).unwrap();
        assert!(c.api_tokens.is_empty() && c.insecure_dev);
    }

    #[test]
    fn reads_tokens_providers_and_limits() {
        let c = RunnerConfig::load(
            &env(&[
                ("ABR_API_TOKEN", "aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb"),
                ("ABR_BIND", "127.0.0.1:0"),
                ("ABR_JOB_PROVIDER", "local"),
                ("ABR_CAPTURE_PROVIDER", "Steel"),
                ("ABR_MAX_CONCURRENT_JOBS", "3"),
                ("ABR_PUBLIC_URL", "https://runner.example.com/"),
            ]),
            None,
            false,
        )
        .unwrap();
        assert_eq!(c.api_tokens.len(), 2);
        assert_eq!(c.providers.capture_provider, ProviderChoice::Steel);
        assert_eq!(c.limits.max_concurrent_jobs, 3);
        assert_eq!(c.public_base(), "https://runner.example.com");
        assert!(
            !format!("{c:?}").contains("aaaaaaaa"),
            "Debug must not show tokens"
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (k, v) in [
            ("ABR_BIND", "nowhere"),
            ("ABR_JOB_PROVIDER", "browserbase"),
            ("ABR_MAX_CONCURRENT_JOBS", "0"),
            ("ABR_API_TOKEN", "short"),
            ("ABR_PUBLIC_URL", "ftp://x"),
            ("ABR_EVENTS_WEBHOOK", "ftp://x"),
            ("ABR_EVENTS_WEBHOOK", "not a url"),
        ] {
            let mut e = env(&[("ABR_API_TOKEN", "aaaaaaaaaaaaaaaa")]);
            e.insert(k.into(), v.into());
            let err = RunnerConfig::load(&e, None, false).unwrap_err().to_string();
            assert!(err.starts_with(k), "{err}");
            assert!(!err.contains("short"), "a bad token is not echoed: {err}");
        }
    }

    #[test]
    fn egress_pairs_and_embed_origins_are_strict() {
        let c = RunnerConfig::load(
            &env(&[
                ("ABR_API_TOKEN", "aaaaaaaaaaaaaaaa"),
                (
                    "ABR_EGRESS_ALLOW_PRIVATE",
                    "127.0.0.1:8788, intranet.corp:443",
                ),
                ("ABR_LIVE_EMBED_ORIGINS", "https://App.Example.com"),
                ("ABR_PUBLIC_URL", "https://runner.example.com/base/"),
                ("ABR_LIVE_PROXY_PROVIDER_VIEWER", "true"),
            ]),
            None,
            false,
        )
        .unwrap();
        let allowed: Vec<String> = c.egress.allowed().map(ToString::to_string).collect();
        assert_eq!(allowed, ["127.0.0.1:8788", "intranet.corp:443"]);
        assert_eq!(
            c.live_origins(),
            ["https://runner.example.com", "https://app.example.com"]
        );
        assert!(c.live.proxy_provider_viewer);
        for (k, v) in [
            ("ABR_EGRESS_ALLOW_PRIVATE", "127.0.0.1"),
            ("ABR_EGRESS_ALLOW_PRIVATE", "*.corp:80"),
            ("ABR_LIVE_EMBED_ORIGINS", "https://app.example.com/path"),
            ("ABR_LIVE_EMBED_ORIGINS", "*"),
            ("ABR_LIVE_PROXY_PROVIDER_VIEWER", "maybe"),
        ] {
            let e = env(&[("ABR_API_TOKEN", "aaaaaaaaaaaaaaaa"), (k, v)]);
            let err = RunnerConfig::load(&e, None, false).unwrap_err().to_string();
            assert!(err.starts_with(k), "{err}");
        }
    }

    #[test]
    fn pacing_and_the_request_deadline_must_fit_together() {
        let base = [("ABR_API_TOKEN", "aaaaaaaaaaaaaaaa")];
        let load = |extra: &[(&str, &str)]| {
            let mut e = env(&base);
            e.extend(
                extra
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            );
            RunnerConfig::load(&e, None, false)
        };
        let c = load(&[]).unwrap();
        assert_eq!(c.pacing, Some(DEFAULT_PACING), "on by default");
        assert_eq!(load(&[("ABR_PACING_MS", "off")]).unwrap().pacing, None);
        let p = load(&[("ABR_PACING_MS", "200-900")])
            .unwrap()
            .pacing
            .unwrap();
        assert_eq!(
            (p.min, p.max),
            (Duration::from_millis(200), Duration::from_millis(900))
        );
        for (k, v) in [
            ("ABR_PACING_MS", "900-200"),
            ("ABR_PACING_MS", "soon"),
            ("ABR_REQUEST_TIMEOUT_SECS", "1"),
        ] {
            let err = load(&[(k, v)]).unwrap_err().to_string();
            assert!(err.starts_with(k), "{err}");
        }
        // Pacing of up to 70 s cannot fit in a 240 s request with its steps.
        let err = load(&[("ABR_PACING_MS", "5000-70000")])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("ABR_REQUEST_TIMEOUT_SECS"), "{err}");
        let budget = c.budget(Duration::ZERO).unwrap();
        assert!(budget.queue_wait + budget.post_span() <= c.limits.request_timeout);
    }

    #[test]
    fn insecure_dev_refuses_a_non_loopback_bind() {
        for bind in ["0.0.0.0:8787", "192.168.1.5:8787", "[::]:8787"] {
            let err = RunnerConfig::load(&env(&[("ABR_BIND", bind)]), None, true)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("ABR_BIND") && err.contains("loopback"),
                "{err}"
            );
        }
        for bind in ["127.0.0.1:0", "[::1]:8787"] {
            assert!(RunnerConfig::load(&env(&[("ABR_BIND", bind)]), None, true).is_ok());
        }
        // With a token, any address may be bound.
        let c = RunnerConfig::load(
            &env(&[
                ("ABR_BIND", "0.0.0.0:8787"),
                ("ABR_API_TOKEN", "aaaaaaaaaaaaaaaa"),
            ]),
            None,
            false,
        );
        assert!(c.is_ok());
    }

    /// `pairs` alone: the MCP section reads nothing else.
    use super::env_of as vars;

    #[test]
    fn read_only_is_off_unless_switched_on() {
        let unset = McpSection::from_env(&vars(&[])).unwrap();
        assert!(!unset.read_only && unset.tenant.is_none() && unset.key.is_none());
        for on in ["true", "1", "ON", " on "] {
            let section = McpSection::from_env(&vars(&[(MCP_READ_ONLY_VAR, on)])).unwrap();
            assert!(section.read_only, "{on:?}");
        }
        for off in ["false", "0", "off", ""] {
            let section = McpSection::from_env(&vars(&[(MCP_READ_ONLY_VAR, off)])).unwrap();
            assert!(!section.read_only, "{off:?}");
        }
        // Parsed once, by the whole configuration too.
        let c = RunnerConfig::load(&env(&[(MCP_READ_ONLY_VAR, "on")]), None, true).unwrap();
        assert!(c.mcp.read_only);
        assert!(!RunnerConfig::default().mcp.read_only);
    }

    #[test]
    fn a_bad_value_is_refused_naming_the_variable_not_the_value() {
        let err = McpSection::from_env(&vars(&[(MCP_READ_ONLY_VAR, "yes-please")])).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("ABR_MCP_READ_ONLY: "), "{text}");
        assert!(text.contains("use true or false"), "{text}");
        assert!(!text.contains("yes-please"), "{text}");
        let long = "t".repeat(10_000);
        let err = McpSection::from_env(&vars(&[(MCP_TENANT_VAR, &long)])).unwrap_err();
        assert!(err.to_string().starts_with("ABR_MCP_TENANT: "), "{err}");
        assert!(err.to_string().contains("not a valid tenant id"), "{err}");
        let err = RunnerConfig::load(&env(&[(MCP_READ_ONLY_VAR, "maybe")]), None, true)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "ABR_MCP_READ_ONLY: use true or false");
    }

    #[test]
    fn the_tenant_is_taken_as_given() {
        let section = McpSection::from_env(&vars(&[(MCP_TENANT_VAR, "acme")])).unwrap();
        assert_eq!(section.tenant.as_deref(), Some("acme"));
        let section = McpSection::from_env(&vars(&[(MCP_KEY_VAR, " abrk.key_1.s ")])).unwrap();
        assert_eq!(
            section.key.as_ref().map(ExposeSecret::expose_secret),
            Some("abrk.key_1.s")
        );
        assert!(
            !format!("{section:?}").contains("abrk"),
            "Debug shows no key"
        );
    }

    #[test]
    fn provider_keys_never_print() {
        let c = RunnerConfig::load(
            &env(&[
                ("ABR_API_TOKEN", "aaaaaaaaaaaaaaaa"),
                ("ABR_JOB_PROVIDER", "kernel"),
                ("ABR_KERNEL_API_KEY", "kernel-key-SECRET"),
                ("ABR_STEEL_API_KEY", "steel-key-SECRET"),
                (
                    "ABR_CDP_URL",
                    "ws://127.0.0.1:9222/devtools?token=cdp-SECRET",
                ),
            ]),
            None,
            false,
        )
        .unwrap();
        assert_eq!(c.providers.job_provider, ProviderChoice::Kernel);
        assert!(c.providers.kernel_api_key.is_some());
        let shown = format!("{c:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("kernel_api_key"), "{shown}");
    }

    #[test]
    fn the_local_settings_come_from_the_environment_only() {
        let l = LocalSettings::from_env(&vars(&[
            ("ABR_HUB_URL", " https://hub.example.com "),
            ("ABR_RUNNER_ID", "r1"),
            ("ABR_STATE_DIR", "/s"),
            ("ABR_DATA_DIR", "/d"),
        ]));
        assert_eq!(l.hub_url.as_deref(), Some("https://hub.example.com"));
        assert_eq!(l.runner_id.as_deref(), Some("r1"));
        assert_eq!(l.state_dir.as_deref(), Some(Path::new("/s")));
        assert!(l.data_dir_given);
        let l = LocalSettings::from_env(&vars(&[("ABR_DATA_DIR", " "), ("HOME", "/h")]));
        assert_eq!(
            l,
            LocalSettings {
                state_dir: Some(PathBuf::from("/h/.local/state/abr")),
                ..LocalSettings::default()
            }
        );
        assert_eq!(
            LocalSettings::from_env(&vars(&[])),
            LocalSettings::default()
        );
        let c = RunnerConfig::load(
            &env(&[("ABR_RUNNER_ID", "r2"), ("XDG_STATE_HOME", "/x")]),
            None,
            true,
        )
        .unwrap();
        assert_eq!(c.local.runner_id.as_deref(), Some("r2"));
        assert_eq!(c.local.state_dir.as_deref(), Some(Path::new("/x/abr")));
        // The tokens as listed, unchecked, for `abr status` and friends.
        let tokens = api_tokens(&vars(&[("ABR_API_TOKEN", " , first-token , second")]));
        let tokens: Vec<&str> = tokens.iter().map(|t| t.expose_secret()).collect();
        assert_eq!(tokens, ["first-token", "second"]);
        assert!(api_tokens(&vars(&[])).is_empty());
    }

    #[test]
    fn the_log_filter_is_rust_log_as_given() {
        assert_eq!(log_filter(&vars(&[])), None);
        assert_eq!(log_filter(&vars(&[("RUST_LOG", "debug")])), Some("debug"));
        assert_eq!(log_filter(&vars(&[("RUST_LOG", "")])), Some(""));
    }

    #[test]
    fn kernel_needs_its_key() {
        let e = env(&[
            ("ABR_API_TOKEN", "aaaaaaaaaaaaaaaa"),
            ("ABR_JOB_PROVIDER", "kernel"),
        ]);
        let err = RunnerConfig::load(&e, None, false).unwrap_err().to_string();
        assert!(err.contains("ABR_KERNEL_API_KEY"), "{err}");
    }

    #[test]
    fn the_file_is_read_and_the_environment_wins() {
        let dir = std::env::temp_dir().join(format!("abr-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("abr.toml");
        std::fs::write(&path, "bind = \"127.0.0.1:9000\"\nmax_queued_jobs = 3\n").unwrap();
        let c =
            RunnerConfig::load(&env(&[("ABR_MAX_QUEUED_JOBS", "5")]), Some(&path), true).unwrap();
        assert_eq!(c.bind.port(), 9000);
        assert_eq!(c.limits.max_queued_jobs, 5);
        std::fs::write(&path, "no_such_key = 1\n").unwrap();
        assert!(matches!(
            RunnerConfig::load(&env(&[]), Some(&path), true),
            Err(ConfigError::File { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
