//! A plan's approval preview: the plan run as a dry run up to its first committing step,
//! and a redacted frame of the page there with that step's element outlined, for the
//! approver to see beside the steps in words.
//!
//! Nothing can be written: the run's guard is a dry run's (every committing action refused
//! before it acts) and the network gate below the page refuses every write, whatever the
//! page's scripts do. It records nothing of its own (no replay frames, no step results, no
//! session written back); its browser is released at once. Off by default
//! ([`PlanPreviews`](abr_core::approval::PlanPreviews)): it opens a browser for every plan
//! proposed.

use std::time::Duration;

use abr_core::context::TaskContext;
use abr_core::guard::{ElementBox, PageRedaction, Reach, jpeg_size};
use abr_core::plan::{PREVIEW_SCREENSHOT, ValidPlan};
use abr_core::provider::Lease;
use abr_core::scope_io::Scopes;
use abr_core::step_runner::BrowserAction;
use abr_core::store::StoredTask;
use abr_protocol::{ApprovalPreview, PreviewBox};

use crate::task::kit::RunPolicy;
use crate::task::outcome::unscoped_policy;
use crate::task::rails::{self, Rails};
use crate::task::runner::{NO_PLATFORM, TaskRunner};

/// Longest a `wait` step of a preview waits.
const MAX_WAIT: Duration = Duration::from_secs(2);

/// A preview taken: its JPEG and what the record says of it, and where the dry run
/// stopped short, if it did.
pub(crate) struct Previewed {
    pub(crate) jpeg: Vec<u8>,
    pub(crate) preview: ApprovalPreview,
    pub(crate) note: Option<String>,
}

impl<C: TaskContext> TaskRunner<C> {
    /// The preview of `task` (a new task waiting for approval): `Err` says why none was
    /// taken.
    pub(super) async fn preview_plan(
        &self,
        task: &StoredTask,
        valid: &ValidPlan,
    ) -> Result<Previewed, String> {
        let tenant = task.ledger.tenant_id.clone();
        if let Some(frames) = &self.frames {
            match frames.screenshots_enabled(&tenant).await {
                Ok(true) => {}
                Ok(false) => return Err("screenshots are off for this tenant".into()),
                Err(e) => return Err(format!("the tenant's screenshot setting: {e}")),
            }
        }
        let mut steps = valid
            .fill(&task.request.inputs)
            .map_err(|e| e.to_string())?;
        self.fill_uploads(&tenant, &task.request.plan, &mut steps)
            .await
            .map_err(|e| e.to_string())?;
        let RunPolicy {
            policy,
            extra,
            platform,
            state,
            profile,
        } = self
            .resolve_policy(&tenant, &task.request, NO_PLATFORM)
            .await
            .map_err(|e| e.to_string())?;
        // A dry run of a scratch copy, never stored.
        let mut scratch = task.clone();
        scratch.request.dry_run = true;
        let rails = self
            .unrecorded_rails(
                &mut scratch,
                valid.plan().read_only,
                valid.target_url().as_str(),
                &steps,
                policy.as_ref(),
                state.is_some(),
            )
            .await
            .map_err(|(_, failure)| failure.body.message)?;
        let Some(redaction) = rails.evidence.clone() else {
            return Err("screenshots are off for this platform".into());
        };
        let unscoped = unscoped_policy();
        let scopes = Scopes::new(policy.as_ref().unwrap_or(&unscoped), extra.as_ref());
        let lease = self
            .acquire(&platform, state, scopes, profile.as_ref())
            .await
            .map_err(|e| format!("no browser: {e}"))?;
        let taken = match self.arm(&rails, &lease).await {
            Ok(()) => {
                self.dry_run_to_commit(task, valid, &steps, &rails, &lease, &redaction)
                    .await
            }
            Err(failure) => Err(failure.body.message),
        };
        rails.network.close();
        self.release(lease).await;
        taken
    }

    /// Opens the target and runs the steps until the first one the dry run's guard refuses
    /// (it would commit): the frame is taken there, that step's element outlined. A step
    /// that fails stops the run short: the frame shows where, and the note says why.
    async fn dry_run_to_commit(
        &self,
        task: &StoredTask,
        valid: &ValidPlan,
        steps: &[abr_core::plan::FilledStep],
        rails: &Rails,
        lease: &Lease<C>,
        redaction: &PageRedaction,
    ) -> Result<Previewed, String> {
        let context = lease.context();
        let timeout = self.config.default_step_timeout;
        let target = BrowserAction::Navigate {
            url: valid.target_url().clone(),
        };
        let mut note = None;
        let mut outline = None;
        match self.step(context, &target, timeout).await {
            Ok(_) => {
                let mut reached = false;
                for (index, filled) in steps.iter().enumerate() {
                    let action = &filled.action;
                    let planned = valid.plan().steps.get(index);
                    let timeout = planned
                        .and_then(|p| p.timeout_ms)
                        .map_or(timeout, Duration::from_millis);
                    match self.dry_step(context, rails, action, timeout).await {
                        DryStep::Done => {}
                        DryStep::Commits(at) => {
                            outline = at;
                            reached = true;
                            break;
                        }
                        DryStep::Stopped(why) => {
                            note = Some(format!(
                                "the dry run stopped at step {} ({why}): the picture shows \
                                 the page there",
                                index + 1
                            ));
                            reached = true;
                            break;
                        }
                    }
                }
                if !reached {
                    note = Some("no step of the plan commits: the picture shows the page after its last step".into());
                }
            }
            Err(failure) => {
                note = Some(format!(
                    "the dry run could not open the plan's page ({}): the picture shows what \
                     the browser shows",
                    failure.body.message
                ));
            }
        }
        let image = format!(
            "/v1/tasks/{}/screenshots/{PREVIEW_SCREENSHOT}",
            task.record.task_id
        );
        let (jpeg, preview) = self.preview_of(context, redaction, outline, image).await?;
        Ok(Previewed {
            jpeg,
            preview,
            note,
        })
    }

    /// A preview of `context`'s page: a redacted frame (its JPEG), served at `image`, with
    /// `outline` (an element's box) in its pixels; `Err`: why none was kept. The one way a
    /// browse approval's and a plan's previews are taken.
    pub(super) async fn preview_of(
        &self,
        context: &C,
        redaction: &PageRedaction,
        outline: Option<ElementBox>,
        image: String,
    ) -> Result<(Vec<u8>, ApprovalPreview), String> {
        let frame = self
            .frame_of(context, redaction)
            .await
            .map_err(|why| format!("no preview was kept: {why}"))?;
        let (width, height) =
            jpeg_size(&frame.jpeg).ok_or("no preview was kept: the image has no size")?;
        let preview = ApprovalPreview {
            image,
            width: u32::from(width),
            height: u32::from(height),
            outline: outline.map(preview_box),
        };
        Ok((frame.jpeg, preview))
    }

    /// One step of the dry run: judged by the guard first (as a run's step is); a step
    /// the guard refuses is the one the preview is for; anything else runs.
    async fn dry_step(
        &self,
        context: &C,
        rails: &Rails,
        action: &BrowserAction,
        timeout: Duration,
    ) -> DryStep {
        match action {
            // Evidence and reads change nothing the approver needs to see.
            BrowserAction::Screenshot | BrowserAction::Extract { .. } => return DryStep::Done,
            BrowserAction::Wait { .. } => {
                return match self.step(context, action, timeout.min(MAX_WAIT)).await {
                    // A wait for something that comes only after the commit: go on.
                    Ok(_) | Err(_) => DryStep::Done,
                };
            }
            _ => {}
        }
        let reach = Reach::of(action);
        let facts = match rails::target(action) {
            Some(selector) => match self.inspect(context, selector, reach, timeout).await {
                Ok(facts) => Some(facts),
                Err(failure) => return DryStep::Stopped(failure.body.message),
            },
            None if matches!(action, BrowserAction::Press { .. }) => {
                self.inspect_focused(context, timeout).await
            }
            None => None,
        };
        if rails.guard.check(action, facts.as_ref()).is_err() {
            let at = match rails::target(action) {
                Some(selector) => context.element_box(selector, reach, timeout).await,
                None => None,
            };
            return DryStep::Commits(at);
        }
        match self.step(context, action, timeout).await {
            Ok(_) => DryStep::Done,
            Err(failure) => DryStep::Stopped(failure.body.message),
        }
    }
}

/// What one step of a preview's dry run came to.
enum DryStep {
    /// It ran (committing nothing).
    Done,
    /// It would commit: the preview is taken here, the element (if found) outlined.
    Commits(Option<ElementBox>),
    /// It failed: the preview is taken here.
    Stopped(String),
}

/// An element's box in a preview's pixels (rounded outwards; a box far outside any image is
/// clamped).
fn preview_box(at: ElementBox) -> PreviewBox {
    const FAR: f64 = 100_000.0;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "clamped to a small range first"
    )]
    let edge = |v: f64| v.clamp(-FAR, FAR).floor() as i32;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped to a small non-negative range first"
    )]
    let side = |v: f64| v.clamp(0.0, FAR).ceil() as u32;
    PreviewBox {
        x: edge(at.x),
        y: edge(at.y),
        width: side(at.width),
        height: side(at.height),
    }
}
