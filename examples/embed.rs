//! Embeds the engine in a Rust application: one `Engine` over local Chromium and the SQLite
//! store, a post recorded once per idempotency key, and a task that runs once a person
//! other than its proposer approved it. The code between the `docs:embed` markers is what
//! `docs/embedding.md` shows (a test keeps the two the same), so the documented snippet is
//! compiled on every CI run (`cargo clippy --all-targets`).
//!
//! Run: `ABR_SESSION_KEY=$(openssl rand -hex 32) cargo run -p abr-service --example embed`
//! (after `driver/setup`). It starts the demo site on loopback, posts to it and runs a task
//! on its admin page, and exits non-zero when an answer is not the one the site's ground
//! truth says.

use std::collections::BTreeMap;
use std::error::Error;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use abr_core::principal::{Actor, Principal, Tenants};
use abr_core::{AcquireMode, AcquireRequest, DynSessionProvider, SessionContext, SessionProvider};
use abr_demo::{DemoSite, DemoStrategy, site::DEMO_PASSWORD};
use abr_engine::{EngineBuilder, EngineConfig, PostReply};
use abr_protocol::{
    AgentSessionState, ApproveRequest, PostContent, PostOutcome, PostRequest, Role, StepPlan,
    TaskRequest, TaskState,
};
use abr_providers::{BrowserSession, LocalBrowserSessionProvider, LocalProviderConfig};
use abr_store::{SealingKey, SqliteStore};
use serde_json::json;

type BoxError = Box<dyn Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let key = std::env::var("ABR_SESSION_KEY")
        .map_err(|_| "set ABR_SESSION_KEY to 64 hex characters (openssl rand -hex 32)")?;
    let site = DemoSite::start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    // The records live in a temporary directory here; an application keeps its own.
    let data = tempfile::tempdir()?;
    let outcome = run(&site, &data.path().join("abr.db"), &key).await;
    site.shutdown().await;
    outcome
}

async fn run(site: &DemoSite, path: &Path, key: &str) -> Result<(), BoxError> {
    println!("demo site     {}", site.base_url());
    let agent = actor("key_bot", "posting bot", Role::Agent, "acme")?;
    let approver = actor("key_ada", "Ada", Role::Approver, "acme")?;
    // The demo site is on loopback: the browser may reach that one address, nothing else
    // that is not public. No warm pool: this program runs a few jobs and exits.
    let config = LocalProviderConfig {
        prewarm: 0,
        egress: Some(abr_core::EgressPolicy::new().allow_addr(site.local_addr())),
        ..LocalProviderConfig::default()
    };
    let strategy = Arc::new(DemoStrategy::new(&site.base_url())?);
    let session = sign_in(&config, &strategy).await?;
    let (request, task_request) = (post_request(session), task_request(&site.base_url())?);

    // docs:embed:begin
    let provider = Arc::new(LocalBrowserSessionProvider::new(config));
    let sealing = SealingKey::from_hex(key)?; // sessions and credentials sealed at rest
    let store = Arc::new(SqliteStore::open(path, Some(sealing), false)?);
    let jobs: DynSessionProvider<BrowserSession> = provider.clone();
    let engine = EngineBuilder::new(EngineConfig::default(), Arc::clone(&jobs), jobs, store)
        .strategy(strategy)? // impl WebPostStrategy<BrowserSession>
        .build()?;
    engine.recover().await?; // end what a killed process left, honestly

    // Every call takes an `Actor`: a principal (its role) acting for one tenant.
    let posted = engine.post(&agent, Some("post-1"), request.clone()).await?; // once per key
    let again = engine.post(&agent, Some("post-1"), request).await?; // the same answer
    let created = engine.create_task(&agent, task_request, None).await?; // waits for approval
    let approval = ApproveRequest {
        plan_hash: created.record.plan_hash.clone(), // what the approver was shown
        approved_by: None,
    };
    let id = &created.record.task_id;
    engine.approve_task(&approver, id, &approval).await?; // a job slot, the run, its end
    // docs:embed:end

    let result = match posted.reply {
        PostReply::Result(result) => result,
        PostReply::Record(_) => return Err("the post ran in this process: a result".into()),
    };
    println!(
        "post          {:?} ({:?})",
        result.outcome(),
        result.post_id
    );
    if result.outcome() != PostOutcome::Confirmed || !again.replayed {
        return Err("the post is confirmed once, and its repeat replays it".into());
    }
    let on_site = site
        .posts()
        .iter()
        .filter(|p| p.author == "embedder")
        .count();
    if on_site != 1 {
        return Err(format!("the site holds {on_site} posts by the embedder, not 1").into());
    }

    let mut record = engine.task(&agent, id).await?;
    for _ in 0..600 {
        if record.state.is_final() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        record = engine.task(&agent, id).await?;
    }
    println!(
        "task          {:?}, approved by {:?}",
        record.state,
        record.approval.map(|a| a.approved_by)
    );
    let added = site.users().iter().any(|u| u.email == "ada@example.com");
    engine.shutdown().await;
    provider.shutdown().await;
    if record.state != TaskState::Succeeded || !added {
        return Err("the approved task succeeds and the site holds the user it added".into());
    }
    println!("all answers agree with the site's ground truth");
    Ok(())
}

/// Signs in through the site's /login form in a fresh browser context and exports the state
/// (Playwright's `storageState`), as a capture does once a person signed in.
async fn sign_in(
    config: &LocalProviderConfig,
    strategy: &DemoStrategy,
) -> Result<AgentSessionState, BoxError> {
    use abr_core::WebPostStrategy as _;
    let provider = LocalBrowserSessionProvider::new(config.clone());
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
        page.locator("#username").fill("embedder", None).await?;
        page.locator("#password").fill(DEMO_PASSWORD, None).await?;
        page.locator("#sign-in").click(None).await?;
        page.wait_for_url("**/compose", None).await?;
        Ok::<_, BoxError>(lease.context().export_state().await?)
    }
    .await;
    lease.release().await?;
    provider.shutdown().await;
    signed_in
}

fn post_request(session: AgentSessionState) -> PostRequest {
    PostRequest {
        platform: "demo".into(),
        session,
        session_id: None,
        content: PostContent::text("Hello from an embedded engine"),
        workspace_id: None,
        account_id: None,
        scope: None,
    }
}

/// The demo's admin page: sign in, add a user, read the users table (the plan of
/// `docs/tasks.md`).
fn task_request(base: &str) -> Result<TaskRequest, BoxError> {
    let plan: StepPlan = serde_json::from_value(json!({
        "targetUrl": format!("{base}/login"),
        "steps": [
            {"type": "type", "selector": "#username", "value": "{{user}}", "description": "Enter the username"},
            {"type": "type", "selector": "#password", "value": "{{password}}", "description": "Enter the password"},
            {"type": "click", "selector": {"role": "button", "name": "Sign in"}, "description": "Sign in"},
            {"type": "navigate", "url": format!("{base}/admin/users"), "description": "Open the users page"},
            {"type": "click", "selector": {"text": "Add user"}, "description": "Open the add-user form"},
            {"type": "type", "selector": "#email-input", "value": "{{email}}", "description": "Enter the email"},
            {"type": "select", "selector": "#role-dropdown", "value": "editor", "description": "Choose the Editor role"},
            {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Add the user"},
            {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users table"}
        ],
        "verification": {"method": "dom_check", "text": "User created successfully"},
        "risk": "medium",
        "reasoning": "The admin tool has no API for adding users."
    }))?;
    let inputs = [
        ("user", "ops"),
        ("password", DEMO_PASSWORD),
        ("email", "ada@example.com"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), abr_protocol::SecretValue::new(value)))
    .collect::<BTreeMap<_, _>>();
    Ok(TaskRequest {
        profile: None,
        plan,
        inputs,
        secret_inputs: Vec::new(),
        session: None,
        session_id: None,
        scope: None,
        platform: None,
        tenant_id: None,
        proposal_id: None,
        dry_run: false,
        handoff: None,
    })
}

// docs:embed:begin
/// A principal of `role`, bound to `tenant`, acting for it: how an application names who
/// calls (`abr-service` builds the same from a bearer token).
fn actor(key_id: &str, name: &str, role: Role, tenant: &str) -> Result<Actor, BoxError> {
    let principal = Principal::new(key_id, name, role, Tenants::One(tenant.to_owned()), false)?;
    Ok(Arc::new(principal).act_for(None)?)
}
// docs:embed:end
