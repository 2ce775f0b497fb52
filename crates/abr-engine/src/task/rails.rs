//! The guard rails of one run: what it may commit ([`RunGuard`]), where it may go
//! ([`SitePolicy`]), when it stops for a person ([`PauseRules`]), and its frames.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use abr_core::context::TaskContext;
use abr_core::guard::{
    ElementFacts, FrameRecorder, PageRedaction, PauseRules, Reach, RunGuard, SiteFilter,
    SitePolicy, SiteVerdict,
};
use abr_core::plan::FilledStep;
use abr_core::provider::Lease;
use abr_core::step_runner::BrowserAction;
use abr_protocol::{Cookie, CookieFact, FramePoint, PauseReason, Selector, SiteDecision};

use crate::task::network::RunNetwork;

/// A run's site policy, shared with the browser's navigation filter so a decision taken
/// during a pause applies at once.
#[derive(Debug, Default)]
pub(crate) struct SharedSites {
    policy: RwLock<SitePolicy>,
    /// Documents the browser's filter aborted.
    refused: AtomicUsize,
}

impl SharedSites {
    pub(crate) fn new(policy: SitePolicy) -> Arc<Self> {
        Arc::new(Self {
            policy: RwLock::new(policy),
            refused: AtomicUsize::new(0),
        })
    }

    pub(crate) fn verdict(&self, host: &str) -> SiteVerdict {
        self.policy
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .verdict(host)
    }

    /// Whether the tenant decided on any site (else the browser needs no filter: nothing
    /// is denied, and a new site pauses at the next checkpoint).
    pub(crate) fn has_entries(&self) -> bool {
        self.policy
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .has_entries()
    }

    /// How many documents the browser's filter aborted so far.
    pub(crate) fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }

    pub(crate) fn set_entries(&self, entries: impl IntoIterator<Item = (String, SiteDecision)>) {
        self.policy
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .set_entries(entries);
    }
}

impl SiteFilter for SharedSites {
    /// Denied sites never load; a site nobody decided on loads (the run then pauses for
    /// consent before it acts there).
    fn may_open(&self, host: &str) -> bool {
        let may = self.verdict(host) != SiteVerdict::Denied;
        if !may {
            self.refused.fetch_add(1, Ordering::SeqCst);
        }
        may
    }
}

/// Whether a committing action may run without a person's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommitApproval {
    /// The run's approval was decided before it started (a plan), or is not required.
    NotRequired,
    /// A browse session under the approval rule: a committing action pauses
    /// `approval_required` before it reaches the page.
    Required,
    /// An approver approved the action now running.
    Approved,
}

/// The named profile a run opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunProfile {
    /// Its name, as the tenant calls it.
    pub(crate) name: String,
    /// Its folder under the provider's profile folder.
    pub(crate) folder: String,
}

/// The rails of one run.
pub(crate) struct Rails {
    pub(crate) guard: RunGuard,
    /// The gate below the page: what may leave the browser, and the mark before the first
    /// write.
    pub(crate) network: Arc<RunNetwork>,
    pub(crate) rules: PauseRules,
    pub(crate) sites: Arc<SharedSites>,
    pub(crate) frames: Option<FrameRecorder>,
    /// The frame being taken in the background, if any ([`Rails::frame_behind`]).
    behind: Option<Behind>,
    /// The run takes screenshots (its frames, and a plan's screenshot steps), redacted by
    /// the built-in rule and this platform's additions: the tenant's switch and the
    /// platform's setting, as recorded when it started (`None`: off).
    pub(crate) evidence: Option<Arc<PageRedaction>>,
    /// How long a pause waits for a person; `None`: a handoff ends the run.
    pub(crate) handoff_wait: Option<Duration>,
    /// The run carries a session: check its cookies before the first committing action.
    pub(crate) has_session: bool,
    /// The run is on a named profile: check its recorded sign-in to the site before a
    /// committing action, once per site.
    pub(crate) profile: Option<RunProfile>,
    /// The sites the profile's sign-in was found good for in this run.
    pub(crate) profile_checked: HashSet<String>,
    /// Pauses a person already resumed on this page (reason, page without query).
    pub(crate) acknowledged: HashSet<(PauseReason, String)>,
    /// The page's URL at the last checkpoint.
    pub(crate) last_url: String,
    /// Documents the site filter had aborted at the last checkpoint.
    pub(crate) refused_seen: usize,
    /// Whether the action now running may commit without a person's word.
    pub(crate) approval: CommitApproval,
    /// The next step's element (its selector and the match its action acts on) and its
    /// facts as the last checkpoint read them with the page (no pause since), for that step
    /// to judge instead of reading them again.
    pub(crate) ahead: Option<(Selector, Reach, ElementFacts)>,
    /// The record's last step result of an action on the page ([`acts`]): a write the
    /// page sends while a later step only reads or waits, or between steps, is its.
    pub(crate) writes_owner: Option<usize>,
    /// A step acted on the page ([`acts`]) since the last frame was started: the
    /// completion frame cannot be that frame's image kept again ([`Rails::completion_frame`]).
    pub(crate) acted_since_frame: bool,
    /// The element the last step was about to act on (its role and accessible name), for
    /// its result: taken by the step's result.
    pub(crate) acted_on: Option<abr_protocol::StepTarget>,
}

impl std::fmt::Debug for Rails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rails")
            .field("guard", &self.guard)
            .field("network", &self.network)
            .field("rules", &self.rules)
            .field("frames", &self.frames.as_ref().map(FrameRecorder::is_on))
            .field("handoff_wait", &self.handoff_wait)
            .finish_non_exhaustive()
    }
}

impl Rails {
    /// The rails of a run with these properties.
    pub(crate) fn new(
        guard: RunGuard,
        network: Arc<RunNetwork>,
        has_session: bool,
        sites: SitePolicy,
        handoff_wait: Option<Duration>,
    ) -> Self {
        let read_only = guard.refuses() == Some(abr_protocol::BlockedBy::ReadOnly);
        Self {
            guard,
            network,
            rules: PauseRules {
                may_sign_in: !has_session && !read_only,
                read_only,
            },
            sites: SharedSites::new(sites),
            frames: None,
            behind: None,
            evidence: Some(Arc::default()),
            handoff_wait,
            has_session,
            profile: None,
            profile_checked: HashSet::new(),
            acknowledged: HashSet::new(),
            last_url: String::new(),
            refused_seen: 0,
            approval: CommitApproval::NotRequired,
            ahead: None,
            writes_owner: None,
            acted_since_frame: true,
            acted_on: None,
        }
    }
}

/// A frame taken in a task of its own; dropped (the run given up), it is stopped, and the
/// browser session takes its blur off.
struct Behind(tokio::task::JoinHandle<()>);

impl Drop for Behind {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Behind {
    async fn settle(mut self) {
        // A frame is best effort: a panic in it is not the run's.
        let _ = (&mut self.0).await;
    }
}

/// A run's frames, taken beside its page reads. A frame takes about as long as a page read
/// (a capture waits for the compositor's next frame), so a frame whose point is reached is
/// started in the background ([`Rails::frame_behind`]) and goes on while the run only reads
/// the page: the checkpoint after an action, an extract, an assert, a wait. Whatever may
/// change the page (an action, a pause for a person, a screenshot, the release) waits for
/// it first ([`Rails::settle_frames`]), so a frame still shows the page its step left and
/// nobody ever sees or touches the page under a frame's blur. Frames are taken one after
/// another, in the order their points were reached.
impl Rails {
    /// Starts the frame at `point` after `action` in the background, after the one still
    /// being taken (nothing when the run takes no frames).
    pub(crate) fn frame_behind<C: TaskContext>(
        &mut self,
        lease: &Lease<C>,
        point: FramePoint,
        action: &str,
    ) {
        self.start_frame(lease, point, action, false);
    }

    /// Starts the run's completion frame in the background, as [`Rails::frame_behind`].
    /// When no step acted on the page since the last frame was started, and the page
    /// provably still looks as it did in that frame ([`FrameRecorder::capture_final`]),
    /// that frame's image is kept again: one read instead of a capture.
    pub(crate) fn completion_frame<C: TaskContext>(&mut self, lease: &Lease<C>) {
        let may_keep_last = !self.acted_since_frame;
        self.start_frame(lease, FramePoint::Completion, "completion", may_keep_last);
    }

    fn start_frame<C: TaskContext>(
        &mut self,
        lease: &Lease<C>,
        point: FramePoint,
        action: &str,
        may_keep_last: bool,
    ) {
        let Some(recorder) = self.frames.clone() else {
            return;
        };
        self.acted_since_frame = false;
        let before = self.behind.take();
        let context = lease.context_handle();
        let action = action.to_owned();
        self.behind = Some(Behind(tokio::spawn(async move {
            if let Some(before) = before {
                before.settle().await;
            }
            if may_keep_last {
                recorder.capture_final(&*context, point, &action).await;
            } else {
                recorder.capture(&*context, point, &action).await;
            }
        })));
    }

    /// Takes the frame at `point` after `action` now, after the one still being taken.
    pub(crate) async fn frame_now<C: TaskContext>(
        &mut self,
        lease: &Lease<C>,
        point: FramePoint,
        action: &str,
    ) {
        self.settle_frames().await;
        if let Some(frames) = &self.frames {
            self.acted_since_frame = false;
            frames.capture(lease.context(), point, action).await;
        }
    }

    /// Waits for the frames still being taken.
    pub(crate) async fn settle_frames(&mut self) {
        if let Some(behind) = self.behind.take() {
            behind.settle().await;
        }
    }
}

/// The page a pause is acknowledged for: scheme, host, port and path.
pub(crate) fn page_key(url: &str) -> String {
    abr_core::guard::frame_url(url).0
}

/// A page as a step's result shows it ([`page_key`]); none before the first page was read.
pub(crate) fn shown_url(url: &str) -> Option<String> {
    Some(page_key(url)).filter(|shown| !shown.is_empty())
}

/// The host of a URL, lower-case (empty when it has none).
pub(crate) fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_default()
}

/// The element an action works on, if any.
pub(crate) fn target(action: &BrowserAction) -> Option<&Selector> {
    match action {
        BrowserAction::Click { selector }
        | BrowserAction::Type { selector, .. }
        | BrowserAction::Select { selector, .. }
        | BrowserAction::Upload { selector, .. } => Some(selector),
        BrowserAction::Press {
            selector: Some(selector),
            ..
        } => Some(selector),
        _ => None,
    }
}

/// Where the frame after `action` is taken, if one is: after a navigation, an accepted
/// click or Enter, a wait, a page read (an extract).
pub(crate) fn frame_point(action: &BrowserAction) -> Option<FramePoint> {
    match action {
        BrowserAction::Navigate { .. } | BrowserAction::Back => Some(FramePoint::Navigation),
        BrowserAction::Click { .. } | BrowserAction::Type { submit: true, .. } => {
            Some(FramePoint::Click)
        }
        BrowserAction::Press { key, .. } if is_activation(key) => Some(FramePoint::Click),
        BrowserAction::Wait { .. } => Some(FramePoint::Wait),
        BrowserAction::Extract { .. } => Some(FramePoint::Read),
        _ => None,
    }
}

/// Whether the frame at `point` is left to the run's completion frame: a read's or a wait's,
/// when only steps that read the page follow (`later`). The completion frame, taken right
/// after them, shows the same page; two captures of it would cost a frame's time (about
/// 30 ms) on the path for nothing a replay shows.
pub(crate) fn left_to_completion(point: FramePoint, later: &[FilledStep]) -> bool {
    matches!(point, FramePoint::Read | FramePoint::Wait)
        && later.iter().all(|step| reads_only(&step.action))
}

/// Whether `action` only reads the page (an extract, an assert, a wait), so that a frame
/// still being taken goes on beside it ([`Rails::frame_behind`]).
pub(crate) fn reads_only(action: &BrowserAction) -> bool {
    matches!(
        action,
        BrowserAction::Extract { .. } | BrowserAction::Assert { .. } | BrowserAction::Wait { .. }
    )
}

/// Whether `action` acts on the page, so that a write the page sends while it runs may be
/// its doing: anything but a read, a wait and a screenshot. A write seen during one of
/// those came from an earlier action or the page itself, and is put on the last step that
/// acted ([`Rails::writes_owner`]): a script's post reaches the gate a moment after the
/// click that started it, often while the next step waits.
pub(crate) fn acts(action: &BrowserAction) -> bool {
    !reads_only(action) && !matches!(action, BrowserAction::Screenshot)
}

/// Whether the page may have moved on after `action`, so that a checkpoint reads it again:
/// a navigation, a click, an Enter, a wait (often for what a click started). Typing,
/// choosing, uploading and reading do not (a page that changes on a keystroke is read at
/// the next of these).
pub(crate) fn may_change_page(action: &BrowserAction) -> bool {
    match action {
        BrowserAction::Press { key, .. } => is_activation(key),
        _ => matches!(
            action,
            BrowserAction::Navigate { .. }
                | BrowserAction::Back
                | BrowserAction::Click { .. }
                | BrowserAction::Type { submit: true, .. }
                | BrowserAction::Wait { .. }
        ),
    }
}

/// Whether pressing `key` may activate something (an Enter or a Space among its keys): the
/// page may move on.
fn is_activation(key: &str) -> bool {
    abr_core::guard::activation_key(key)
}

/// The session's cookies for `host`: names, domains and expiry, never values.
pub(crate) fn cookie_facts(cookies: &[Cookie], host: &str, now_unix: f64) -> Vec<CookieFact> {
    cookies
        .iter()
        .filter(|c| {
            let domain = c.domain.trim_start_matches('.').to_ascii_lowercase();
            host == domain || host.ends_with(&format!(".{domain}"))
        })
        .map(|c| cookie_fact(c, now_unix))
        .collect()
}

/// What is kept of a cookie: its name, domain and expiry (`None`: a session cookie), and
/// whether it had expired at `now_unix`; never its value.
pub(crate) fn cookie_fact(cookie: &Cookie, now_unix: f64) -> CookieFact {
    let expires = (cookie.expires > 0.0).then_some(cookie.expires);
    CookieFact {
        name: cookie.name.clone(),
        domain: cookie.domain.clone(),
        expires,
        expired: expires.is_some_and(|e| e <= now_unix),
    }
}

/// Whether the cookie facts show no live session: none for the site, or every one expired.
pub(crate) fn signed_out(facts: &[CookieFact]) -> bool {
    facts.iter().all(|f| f.expired)
}
