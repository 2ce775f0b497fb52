//! The mixed load: a few workers, each doing one operation at a time against the replicas
//! in turn (round robin), until the run's end, with `abr_client` as an orchestrator would:
//!
//! - **posts** on the `demo` platform with the captured session, each with an idempotency
//!   key and a text of its own; some are sent again under the same key, after the first
//!   answer (a retry) or at once to another replica (a race);
//! - **relayed posts** (unless `--no-relay`): the same, sent to a hub for the runner linked
//!   to it (`x-abr-runner`), repeats through the same hub;
//! - **tasks**: the admin page's "Add user" plan, proposed by the agent's key, approved by
//!   the approver's (another replica in a fleet), followed to their end;
//! - **browse sessions** on one replica: open the composer, snapshot, type a text (nothing
//!   committing: the text is never posted), close;
//! - **captures** on one replica: this program plays the person through the live view's
//!   socket (username, Tab, password, Enter), finishes the capture, and checks the session
//!   against the site; posts use the latest captured session.
//!
//! Every answer goes into the [`Journal`]; [`Load::settle`] then waits what is still open to
//! its end (records of posts, tasks still running or never approved, sessions not closed).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abr_client::{AgentRunnerClient, ClientError, LiveViewChannel, PostAnswer, PostOptions};
use abr_protocol::codes::{BROWSE_NOT_FOUND, CAPTURE_NOT_FOUND, NOT_AUTHENTICATED};
use abr_protocol::{
    ActOutcome, AgentSessionState, ApproveRequest, BrowseAction, BrowseRequest, CaptureRef,
    CaptureStartRequest, PostContent, PostRequest, RejectRequest, SecretValue, TaskRecord,
    TaskRequest, TaskState,
};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::json;
use tokio::time::Instant;

use crate::journal::{Answer, BrowseOp, CaptureOp, Journal, PostCall, PostOp, TaskOp};
use crate::replica::derive_seed;
use crate::stack::{Node, TENANT};

/// The demo site's password (any username signs in with it).
const PASSWORD: &str = abr_demo::site::DEMO_PASSWORD;
/// The demo site's session cookie.
const SESSION_COOKIE: &str = abr_demo::site::SESSION_COOKIE;
/// The admin page's message once a user was added.
const CREATED: &str = abr_demo::site::USER_CREATED_MESSAGE;
/// How long one long poll of a task waits.
const TASK_POLL: Duration = Duration::from_secs(20);
/// How long a task is followed at least during the load, even at its end (the rest is
/// [`Load::settle`]'s).
const TASK_GRACE: Duration = Duration::from_secs(5);
/// How long a capture's person waits for the live view's first picture.
const PICTURE_LIMIT: Duration = Duration::from_secs(30);
/// How long a capture is polled for its sign-in.
const SIGN_IN_LIMIT: Duration = Duration::from_secs(60);

/// The operations' shares of the load, in percent (relayed posts only with a relay: else
/// their share is the posts').
const MIX: [(Kind, u32); 5] = [
    (Kind::Post, 35),
    (Kind::Relayed, 10),
    (Kind::Task, 25),
    (Kind::Browse, 20),
    (Kind::Capture, 10),
];

/// An operation's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Post,
    Relayed,
    Task,
    Browse,
    Capture,
}

/// Where a post is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Replica `i`.
    Replica(usize),
    /// The relay runner, through the hub.
    Relay,
}

/// The load's shared state.
#[derive(Debug)]
pub(crate) struct Load {
    nodes: Vec<Node>,
    /// The relay runner, through the hub (unless `--no-relay`).
    relayed: Option<AgentRunnerClient>,
    /// The demo site's base URL.
    site: String,
    /// The run's id (in every text, key and username).
    run: String,
    journal: Arc<Journal>,
    /// The session posts and tasks use: the latest captured one.
    session: Mutex<AgentSessionState>,
    /// Operations numbered across workers.
    count: AtomicU64,
    /// The next replica's turn.
    turn: AtomicUsize,
    /// Set on Ctrl-C: workers stop after their current operation.
    stop: Arc<AtomicBool>,
    /// Plain HTTP to the site (no redirects followed).
    http: reqwest::Client,
    /// What the operations' times count from.
    origin: Instant,
}

impl Load {
    /// The load over `nodes`, the site at `site`.
    pub(crate) fn new(
        nodes: Vec<Node>,
        relayed: Option<AgentRunnerClient>,
        site: String,
        run: String,
        journal: Arc<Journal>,
        stop: Arc<AtomicBool>,
    ) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(20))
            .build()
            .map_err(|e| format!("an HTTP client: {e}"))?;
        Ok(Self {
            nodes,
            relayed,
            site,
            run,
            journal,
            session: Mutex::new(AgentSessionState::default()),
            count: AtomicU64::new(0),
            turn: AtomicUsize::new(0),
            stop,
            http,
            origin: Instant::now(),
        })
    }

    /// What the operations' times count from.
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// Seconds since [`Self::origin`].
    fn now(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn next(&self) -> u64 {
        self.count.fetch_add(1, Ordering::Relaxed)
    }

    /// The next replica in turn.
    fn pick(&self) -> usize {
        self.turn.fetch_add(1, Ordering::Relaxed) % self.nodes.len()
    }

    /// The replica after `i` (itself when alone).
    fn other(&self, i: usize) -> usize {
        (i + 1) % self.nodes.len()
    }

    fn session(&self) -> AgentSessionState {
        self.session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_session(&self, session: AgentSessionState) {
        *self.session.lock().unwrap_or_else(PoisonError::into_inner) = session;
    }

    /// The first session: captured through the first replica's live view (a few tries: the
    /// chaos layer may refuse one), else signed in over plain HTTP. Answers how it was got.
    pub(crate) async fn sign_in(&self) -> Result<&'static str, String> {
        for _ in 0..3 {
            if self.capture_on(0).await {
                return Ok("captured through the live view");
            }
        }
        let token = self
            .http_sign_in(&format!("soak-{}-http", self.run))
            .await?;
        self.set_session(demo_session(&token));
        Ok("signed in over HTTP (every capture failed)")
    }

    /// One post on every replica: each launches its browser before the run's baseline.
    pub(crate) async fn warm_up(&self) {
        for i in 0..self.nodes.len() {
            self.post_on(Target::Replica(i), Mode::Once).await;
        }
        if self.relayed.is_some() {
            self.post_on(Target::Relay, Mode::Once).await;
        }
    }

    /// Runs `workers` workers until `until` (or a stop), their mix drawn from `seed`.
    pub(crate) async fn run(self: &Arc<Self>, workers: u16, seed: u64, until: Instant) {
        let mut running = Vec::new();
        for w in 0..workers {
            let load = Arc::clone(self);
            let rng = StdRng::seed_from_u64(derive_seed(seed, 1000 + u64::from(w)));
            running.push(tokio::spawn(async move { load.worker(rng, until).await }));
        }
        for worker in running {
            let _ = worker.await;
        }
    }

    async fn worker(&self, mut rng: StdRng, until: Instant) {
        while Instant::now() < until && !self.stopped() {
            let mut roll = rng.random_range(0..100u32);
            let kind = MIX
                .iter()
                .find_map(|&(kind, share)| {
                    if roll < share {
                        Some(kind)
                    } else {
                        roll -= share;
                        None
                    }
                })
                .unwrap_or(Kind::Post);
            match kind {
                Kind::Post | Kind::Relayed => {
                    let mode = match rng.random_range(0..100u32) {
                        0..70 => Mode::Once,
                        70..85 => Mode::Retry,
                        _ => Mode::Race,
                    };
                    let target = match (kind, self.relayed.is_some()) {
                        (Kind::Relayed, true) => Target::Relay,
                        _ => Target::Replica(self.pick()),
                    };
                    self.post_on(target, mode).await;
                }
                Kind::Task => self.task(until).await,
                Kind::Browse => self.browse().await,
                Kind::Capture => {
                    self.capture_on(self.pick()).await;
                }
            }
        }
    }

    // ------------------------------------------------------------------------------ posts

    async fn post_on(&self, target: Target, mode: Mode) {
        let at = self.now();
        let n = self.next();
        let key = format!("soak-{}-post-{n}", self.run);
        let text = format!("soak {} post {n}", self.run);
        let request = PostRequest {
            session_id: None,
            platform: "demo".into(),
            session: self.session(),
            content: PostContent::text(text.clone()),
            workspace_id: Some(TENANT.into()),
            account_id: Some("acct-soak".into()),
            scope: None,
        };
        // A repeat goes to the next replica (the same hub for a relayed post).
        let next = match target {
            Target::Replica(i) => Target::Replica(self.other(i)),
            Target::Relay => Target::Relay,
        };
        let calls = match mode {
            Mode::Once => vec![self.call_post(target, &request, &key, false).await],
            Mode::Retry => {
                let first = self.call_post(target, &request, &key, false).await;
                let again = self.call_post(next, &request, &key, false).await;
                vec![first, again]
            }
            Mode::Race => {
                let (a, b) = tokio::join!(
                    self.call_post(target, &request, &key, true),
                    self.call_post(next, &request, &key, true)
                );
                vec![a, b]
            }
        };
        self.journal.with(|ops| {
            ops.posts.push(PostOp {
                at,
                key,
                text,
                request,
                relay: target == Target::Relay,
                calls,
                records: Default::default(),
            });
        });
    }

    /// The client a post to `target` is sent with, and its name.
    fn poster(&self, target: Target) -> (&AgentRunnerClient, String) {
        match (target, &self.relayed) {
            (Target::Relay, Some(relayed)) => (relayed, "relay".into()),
            (Target::Replica(i), _) => (&self.nodes[i].agent, self.nodes[i].name.clone()),
            (Target::Relay, None) => (&self.nodes[0].agent, self.nodes[0].name.clone()),
        }
    }

    async fn call_post(
        &self,
        target: Target,
        request: &PostRequest,
        key: &str,
        concurrent: bool,
    ) -> PostCall {
        let (client, replica) = self.poster(target);
        let answer = client
            .post_with(request, &PostOptions::idempotency_key(key))
            .await;
        let (answer, code, post_id, replayed) = match answer {
            Ok(PostAnswer::Done { result, replayed }) => (
                Answer::of_result(&result),
                result.error.as_ref().map(|e| e.code.clone()),
                result.post_id.clone(),
                replayed,
            ),
            Ok(PostAnswer::Running(record)) => (Answer::Running, None, Some(record.post_id), true),
            Err(e) => (Answer::of_error(&e), None, None, false),
        };
        PostCall {
            replica,
            answer,
            code,
            post_id,
            replayed,
            concurrent,
            resolution: false,
        }
    }

    // ------------------------------------------------------------------------------ tasks

    async fn task(&self, until: Instant) {
        let n = self.next();
        let email = format!("soak-{}-t{n}@example.com", self.run).to_lowercase();
        let replica = self.pick();
        let mut op = TaskOp {
            at: self.now(),
            replica: self.nodes[replica].name.clone(),
            email: email.clone(),
            task_id: None,
            create_error: None,
            approve_error: None,
            rejected_after: false,
            state: None,
            error_code: None,
        };
        let Ok(request) = self.add_user(&email) else {
            op.create_error = Some(Answer::Error {
                code: "bad_request_built".into(),
                retryable: false,
            });
            self.journal.with(|ops| ops.tasks.push(op));
            return;
        };
        let options = abr_client::TaskOptions::tenant(TENANT)
            .with_idempotency_key(format!("soak-{}-task-{n}", self.run));
        let created = self.nodes[replica]
            .agent
            .create_task(&request, &options)
            .await;
        match created {
            Err(e) => op.create_error = Some(Answer::of_error(&e)),
            Ok((record, _)) => {
                op.task_id = Some(record.task_id.clone());
                op.state = Some(record.state);
                let approval = ApproveRequest {
                    approved_by: Some("soak approver".into()),
                    plan_hash: record.plan_hash.clone(),
                };
                let approver = &self.nodes[self.other(replica)].approver;
                if let Err(e) = approver
                    .approve_task(TENANT, &record.task_id, &approval)
                    .await
                {
                    op.approve_error = Some(Answer::of_error(&e));
                }
                if let Some(record) = self.follow_task(&record.task_id, until).await {
                    op.state = Some(record.state);
                    op.error_code = record.error.map(|e| e.code);
                }
            }
        }
        self.journal.with(|ops| ops.tasks.push(op));
    }

    /// The admin page's "Add user" plan for `email`, with the current session.
    fn add_user(&self, email: &str) -> Result<TaskRequest, String> {
        let base = &self.site;
        serde_json::from_value(json!({
            "plan": {
                "targetUrl": format!("{base}/admin/users"),
                "steps": [
                    {"type": "navigate", "url": format!("{base}/admin/users"), "description": "Open the user admin page"},
                    {"type": "click", "selector": "#add-user-btn", "description": "Click 'Add user'"},
                    {"type": "type", "selector": "#email-input", "value": "{{email}}", "description": "Enter the user's email"},
                    {"type": "select", "selector": "#role-dropdown", "value": "viewer", "description": "Select the viewer role"},
                    {"type": "click", "selector": {"role": "button", "name": "Submit"}, "description": "Submit the form"},
                    {"type": "wait", "selector": ".success-message", "timeoutMs": 5000, "description": "Wait for the success message"},
                    {"type": "extract", "name": "users", "kind": "table", "selector": "#users", "description": "Read the users table"}
                ],
                "verification": {"method": "dom_check", "selector": ".success-message", "text": CREATED},
                "risk": "medium",
                "reasoning": "the soak's load: the admin tool has no API"
            },
            "inputs": {"email": email},
            "session": self.session(),
            "platform": "demo"
        }))
        .map_err(|e| format!("the task request: {e}"))
    }

    /// Follows task `id` with long polls (any replica) until it ended, or `until` (the
    /// load's end: then [`Self::settle`] follows it) but for a few seconds at least; a task
    /// still waiting for its approval is not followed (its approval was answered by now, and
    /// did not go through). Answers the last record read.
    async fn follow_task(&self, id: &str, until: Instant) -> Option<TaskRecord> {
        let deadline = until.max(Instant::now() + TASK_GRACE);
        let mut last = None;
        while Instant::now() < deadline {
            let agent = &self.nodes[self.pick()].agent;
            match agent.get_task(TENANT, id).await {
                Ok(record)
                    if record.state.is_final() || record.state == TaskState::PendingApproval =>
                {
                    return Some(record);
                }
                Ok(record) => last = Some(record),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
            let wait = TASK_POLL.min(deadline.saturating_duration_since(Instant::now()));
            match agent.wait_task(TENANT, id, wait).await {
                Ok(record) if record.state.is_final() => return Some(record),
                Ok(record) => last = Some(record),
                Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
        last
    }

    // ------------------------------------------------------------------------------ browse

    async fn browse(&self) {
        let n = self.next();
        let replica = self.pick();
        let mut op = BrowseOp {
            at: self.now(),
            replica,
            text: format!("soak {} browse {n}", self.run),
            browse_id: None,
            outcome: String::new(),
            closed: false,
            committing: false,
            state: None,
        };
        let agent = &self.nodes[replica].agent;
        op.outcome = match self.browse_steps(agent, &mut op).await {
            Ok(()) => "closed".into(),
            Err(step) => step,
        };
        if let (Some(id), false) = (&op.browse_id, op.closed)
            && agent.browse_close(TENANT, id).await.is_ok()
        {
            op.closed = true;
        }
        self.journal.with(|ops| ops.browses.push(op));
    }

    /// Open, snapshot, type, close: `Err` names the step that did not go as it should.
    async fn browse_steps(
        &self,
        agent: &AgentRunnerClient,
        op: &mut BrowseOp,
    ) -> Result<(), String> {
        let request: BrowseRequest = serde_json::from_value(json!({
            "url": format!("{}/compose", self.site),
            "platform": "demo",
            "session": self.session(),
        }))
        .map_err(|e| format!("request:{e}"))?;
        let opened = agent
            .browse_open(TENANT, &request)
            .await
            .map_err(|e| format!("open_{}", Answer::of_error(&e).label()))?;
        op.browse_id = Some(opened.browse_id.clone());
        let id = opened.browse_id;
        if opened.first.outcome != ActOutcome::Done {
            return Err(format!("open_{}", act_name(opened.first.outcome)));
        }
        let snapshot = agent
            .browse_snapshot(TENANT, &id)
            .await
            .map_err(|e| format!("snapshot_{}", Answer::of_error(&e).label()))?;
        let field = snapshot
            .elements
            .iter()
            .find(|e| e.role == "textbox")
            .ok_or_else(|| "snapshot_no_textbox".to_owned())?
            .reference
            .clone();
        let typed = agent
            .browse_act(
                TENANT,
                &id,
                &BrowseAction::Type {
                    reference: field,
                    text: SecretValue::new(op.text.clone()),
                    submit: false,
                },
            )
            .await
            .map_err(|e| format!("act_{}", Answer::of_error(&e).label()))?;
        op.committing = typed.committing;
        if typed.outcome != ActOutcome::Done {
            return Err(format!("act_{}", act_name(typed.outcome)));
        }
        agent
            .browse_close(TENANT, &id)
            .await
            .map_err(|e| format!("close_{}", Answer::of_error(&e).label()))?;
        op.closed = true;
        Ok(())
    }

    // ------------------------------------------------------------------------------ captures

    /// A capture on replica `replica`; answers whether it captured a good session (then the
    /// session posts use from now on).
    async fn capture_on(&self, replica: usize) -> bool {
        let n = self.next();
        let username = format!("soak-{}-u{n}", self.run);
        let mut op = CaptureOp {
            at: self.now(),
            replica,
            username: username.clone(),
            outcome: String::new(),
            session_ok: None,
            left_open: None,
        };
        let agent = &self.nodes[replica].agent;
        let account = format!("acct-capture-{n}");
        let started = agent
            .capture_start(&CaptureStartRequest {
                workspace_id: TENANT.into(),
                account_id: account.clone(),
                platform: "demo".into(),
                scope: None,
            })
            .await;
        let captured = match started {
            Err(e) => {
                op.outcome = format!("start_{}", Answer::of_error(&e).label());
                None
            }
            Ok(started) => {
                let binding = CaptureRef {
                    capture_id: started.capture_id.clone(),
                    workspace_id: TENANT.into(),
                    account_id: account,
                };
                let finished = match sign_in_through(&started.live_view_url, &username).await {
                    Err(e) => Err(format!("live_view: {e}")),
                    Ok(()) => finish(agent, &binding).await,
                };
                match finished {
                    Ok(session) => Some(session),
                    Err(outcome) => {
                        op.outcome = outcome;
                        match agent.capture_cancel(&binding).await {
                            Ok(_) => {}
                            Err(e) if e.is(CAPTURE_NOT_FOUND) => {}
                            Err(_) => op.left_open = Some(binding),
                        }
                        None
                    }
                }
            }
        };
        let mut good = false;
        if let Some(session) = captured {
            let checked = self.check_session(&session).await;
            good = checked.is_ok();
            op.outcome = if good {
                "captured"
            } else {
                "captured_bad_session"
            }
            .into();
            op.session_ok = Some(checked);
            if good {
                self.set_session(session);
            }
        }
        self.journal.with(|ops| ops.captures.push(op));
        good
    }

    /// A captured session holds the site's session cookie, nothing outside the site, and is
    /// signed in on it (its composer answers instead of sending to the sign-in).
    async fn check_session(&self, session: &AgentSessionState) -> Result<(), String> {
        let cookie = session
            .cookies
            .iter()
            .find(|c| c.name == SESSION_COOKIE)
            .ok_or_else(|| "no session cookie".to_owned())?;
        if let Some(foreign) = session.cookies.iter().find(|c| c.domain != "127.0.0.1") {
            return Err(format!("a cookie of {} kept", foreign.domain));
        }
        let status = self
            .http
            .get(format!("{}/compose", self.site))
            .header(
                reqwest::header::COOKIE,
                format!("{SESSION_COOKIE}={}", cookie.value.expose()),
            )
            .send()
            .await
            .map_err(|e| format!("the site: {}", e.without_url()))?
            .status();
        if status == reqwest::StatusCode::OK {
            Ok(())
        } else {
            Err(format!("the site's composer answered {status}"))
        }
    }

    /// Signs `username` in over plain HTTP: the session cookie's value.
    async fn http_sign_in(&self, username: &str) -> Result<String, String> {
        let response = self
            .http
            .post(format!("{}/login", self.site))
            .form(&[("username", username), ("password", PASSWORD)])
            .send()
            .await
            .map_err(|e| format!("signing in: {}", e.without_url()))?;
        response
            .headers()
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.split(';').next()?.split_once('='))
            .find(|(name, value)| *name == SESSION_COOKIE && !value.is_empty())
            .map(|(_, value)| value.to_owned())
            .ok_or_else(|| {
                format!(
                    "the sign-in answered {} without a session",
                    response.status()
                )
            })
    }

    // ------------------------------------------------------------------------------ settle

    /// After the load, within `limit`: learns what ambiguous posts left (their key sent
    /// again), rejects the tasks whose approval never went through, closes the browse
    /// sessions and cancels the captures left open, then reads, round after round, every
    /// post's and task's record until all ended (or `limit` passed: what is still open is
    /// reported as such), and the browse sessions' records.
    pub(crate) async fn settle(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut ops = self.journal.ops();
        for op in &mut ops.posts {
            let decided = op.calls.iter().any(|c| c.post_id.is_some());
            if !decided && op.calls.iter().any(|c| c.answer.is_ambiguous()) {
                let mut call = self
                    .call_post(post_target(op), &op.request, &op.key, false)
                    .await;
                call.resolution = true;
                op.calls.push(call);
            }
            for id in op.calls.iter().filter_map(|c| c.post_id.clone()) {
                op.records.entry(id).or_insert(Answer::Running);
            }
        }
        for op in &mut ops.tasks {
            if op.state == Some(TaskState::PendingApproval) {
                self.reject(op).await;
            }
        }
        for op in &mut ops.browses {
            let Some(id) = op.browse_id.clone() else {
                continue;
            };
            if !op.closed {
                match self.nodes[op.replica].agent.browse_close(TENANT, &id).await {
                    Ok(_) => op.closed = true,
                    Err(e) if e.is(BROWSE_NOT_FOUND) => {}
                    Err(_) => {}
                }
            }
        }
        for op in &mut ops.captures {
            if let Some(binding) = op.left_open.take() {
                let agent = &self.nodes[op.replica].agent;
                if agent.capture_cancel(&binding).await.is_err() {
                    op.left_open = Some(binding);
                }
            }
        }
        loop {
            let mut open = 0;
            for op in &mut ops.posts {
                let target = post_target(op);
                for (id, state) in op.records.iter_mut() {
                    if matches!(state, Answer::Running | Answer::Transport(_)) {
                        *state = self.post_state(target, id).await;
                        open += usize::from(*state == Answer::Running);
                    }
                }
            }
            for op in &mut ops.tasks {
                let Some(id) = op.task_id.clone() else {
                    continue;
                };
                if op.state.is_some_and(TaskState::is_final) {
                    continue;
                }
                if let Ok(record) = self.nodes[self.pick()].agent.get_task(TENANT, &id).await {
                    op.state = Some(record.state);
                    op.error_code = record.error.map(|e| e.code);
                }
                if op.state == Some(TaskState::PendingApproval) {
                    self.reject(op).await;
                }
                open += usize::from(!op.state.is_some_and(TaskState::is_final));
            }
            if open == 0 || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        for op in &mut ops.browses {
            if let Some(id) = &op.browse_id {
                let agent = &self.nodes[op.replica].agent;
                op.state = agent.get_task(TENANT, id).await.ok().map(|r| r.state);
            }
        }
        self.journal.with(|kept| *kept = ops);
    }

    /// Rejects a task whose approval never went through (nobody else will decide it).
    async fn reject(&self, op: &mut TaskOp) {
        let Some(id) = &op.task_id else {
            return;
        };
        let rejected = self.nodes[0]
            .approver
            .reject_task(
                TENANT,
                id,
                &RejectRequest {
                    rejected_by: Some("soak".into()),
                    reason: Some("its approval was not answered".into()),
                },
            )
            .await;
        if let Ok(record) = rejected {
            op.rejected_after = true;
            op.state = Some(record.state);
        }
    }

    /// Post `id`'s record now: from any replica, or, for a relayed post, from the relay
    /// runner through the hub.
    async fn post_state(&self, target: Target, id: &str) -> Answer {
        let reader = match target {
            Target::Relay => self.poster(Target::Relay).0,
            Target::Replica(_) => &self.nodes[self.pick()].agent,
        };
        match reader.get_post(TENANT, id).await {
            Ok(record) => Answer::of_state(record.state),
            Err(e) => Answer::Transport(e.to_string()),
        }
    }
}

/// Where a post's key is sent again, and its record read.
fn post_target(op: &PostOp) -> Target {
    if op.relay {
        Target::Relay
    } else {
        Target::Replica(0)
    }
}

/// How a post is sent.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Once.
    Once,
    /// Once, then again under the same key (to the next replica) once answered.
    Retry,
    /// Twice at once under the same key (to two replicas in a fleet).
    Race,
}

/// A session holding the site's session cookie, as a capture exports it.
fn demo_session(token: &str) -> AgentSessionState {
    let mut cookie = abr_protocol::Cookie::new(SESSION_COOKIE, token, "127.0.0.1");
    cookie.http_only = true;
    AgentSessionState {
        cookies: vec![cookie],
        ..AgentSessionState::default()
    }
}

/// Plays the person: the live view's socket, its first picture, then the username, Tab,
/// the password, Enter.
async fn sign_in_through(live_view_url: &str, username: &str) -> Result<(), ClientError> {
    let mut live = LiveViewChannel::connect(live_view_url, Duration::from_secs(10)).await?;
    live.wait_for_picture(PICTURE_LIMIT).await?;
    live.type_text(username).await?;
    live.press("Tab").await?;
    live.type_text(PASSWORD).await?;
    live.press("Enter").await?;
    // Let the runner take the inputs off the socket before it closes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    live.close().await;
    Ok(())
}

/// Polls the capture's finish until its browser is signed in: the session, or what went
/// wrong.
async fn finish(
    agent: &AgentRunnerClient,
    binding: &CaptureRef,
) -> Result<AgentSessionState, String> {
    let deadline = Instant::now() + SIGN_IN_LIMIT;
    loop {
        match agent.capture_finish(binding).await {
            Ok(done) => return Ok(done.session),
            Err(e) if e.is(NOT_AUTHENTICATED) => {}
            Err(e) => return Err(format!("finish_{}", Answer::of_error(&e).label())),
        }
        if Instant::now() > deadline {
            return Err("never_signed_in".into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn act_name(outcome: ActOutcome) -> &'static str {
    match outcome {
        ActOutcome::Done => "done",
        ActOutcome::Refused => "refused",
        ActOutcome::Paused => "paused",
        ActOutcome::Failed => "failed",
    }
}
