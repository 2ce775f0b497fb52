//! [`Handoffs`]: paused runs and their takeovers.
//!
//! A run that stops for a person keeps its browser and registers a takeover in state
//! `requested`. The orchestrator makes it `active` (which mints the live token: the live
//! view is served only while active), then `resumed` (the run continues where it stopped)
//! or `ended` (the run stops without acting); a takeover nobody resumes in time is
//! `expired`. The run waits in [`PendingHandoff::next`], which reports each transition so
//! the run records it as an event with ids only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use abr_core::clock::{Clock, new_token};
use abr_core::error::CoreError;
use abr_protocol::{PauseReason, TakeoverState};
use time::OffsetDateTime;
use tokio::sync::{Semaphore, watch};

use crate::capture::LiveTarget;
use crate::error::EngineError;
use crate::live_access::{LiveAttachment, LiveSites, PersonInput};

/// Most viewer sockets one takeover's live token may hold at once.
const LIVE_SOCKETS: usize = 2;

/// One paused run's takeover.
struct Handoff<C> {
    takeover_id: String,
    tenant: String,
    run_id: String,
    reason: PauseReason,
    expires_at: OffsetDateTime,
    state: watch::Sender<TakeoverState>,
    /// Every transition, in order (the watch keeps only the last one), with who made it
    /// (a key holder's name; none for an expiry).
    history: Mutex<Vec<(TakeoverState, Option<String>)>>,
    live_token: Mutex<Option<String>>,
    surface: Arc<C>,
    sites: LiveSites,
    /// What the run hears of the person's input (its network gate's window).
    on_input: Option<PersonInput>,
    live_slots: Arc<Semaphore>,
    /// `true` once the takeover is no longer active: live sockets close.
    live_ended: watch::Sender<bool>,
}

impl<C> Handoff<C> {
    /// Moves to `next` if `allowed` from the current state; answers the state it is in.
    fn transition(
        &self,
        allowed: &[TakeoverState],
        next: TakeoverState,
        by: Option<&str>,
    ) -> Result<TakeoverState, TakeoverState> {
        let mut moved = Err(*self.state.borrow());
        self.state.send_if_modified(|state| {
            if allowed.contains(state) {
                *state = next;
                moved = Ok(next);
                self.history
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((next, by.map(str::to_owned)));
                true
            } else {
                false
            }
        });
        if next != TakeoverState::Active && moved.is_ok() {
            self.live_ended.send_replace(true);
        }
        moved
    }
}

#[derive(Default)]
struct Registry<C> {
    by_id: HashMap<String, Arc<Handoff<C>>>,
    by_run: HashMap<(String, String), String>,
    by_live_token: HashMap<String, String>,
}

/// The takeovers of paused runs, by run and by live token.
pub(crate) struct Handoffs<C> {
    inner: Mutex<Registry<C>>,
    clock: Arc<dyn Clock>,
}

impl<C> std::fmt::Debug for Handoffs<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoffs")
            .field("open", &self.lock().by_id.len())
            .finish_non_exhaustive()
    }
}

/// What `activate` answers: the live token to give the person taking over.
#[derive(Clone, PartialEq, Eq)]
pub struct ActiveTakeover {
    /// The takeover.
    pub takeover_id: String,
    /// The live view's token (a secret: it drives the paused browser).
    pub live_token: String,
    /// When the takeover expires unless resumed.
    pub expires_at: OffsetDateTime,
}

impl std::fmt::Debug for ActiveTakeover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveTakeover")
            .field("takeover_id", &self.takeover_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl<C> Handoffs<C> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Registry<C>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn token() -> Result<String, EngineError> {
    Ok(new_token().map_err(|_| CoreError::Internal("the OS random source failed"))?)
}

impl<C: Send + Sync + 'static> Handoffs<C> {
    /// An empty registry.
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Mutex::new(Registry {
                by_id: HashMap::new(),
                by_run: HashMap::new(),
                by_live_token: HashMap::new(),
            }),
            clock,
        }
    }

    /// Registers a paused run's takeover (`requested`). Dropping the answer (the run ended,
    /// the runner stopped) removes it and closes its live sockets. `on_input` is told of
    /// every click, key and text the person sends through the live view.
    ///
    /// # Errors
    /// [`CoreError::Internal`] when no id can be minted.
    #[allow(
        clippy::too_many_arguments,
        reason = "the takeover's parts, each from the paused run"
    )]
    pub(crate) fn request(
        self: &Arc<Self>,
        tenant: &str,
        run_id: &str,
        reason: PauseReason,
        surface: Arc<C>,
        sites: LiveSites,
        wait: Duration,
        on_input: Option<PersonInput>,
    ) -> Result<PendingHandoff<C>, EngineError> {
        let now = self.clock.now();
        let handoff = Arc::new(Handoff {
            takeover_id: format!("tko_{}", token()?),
            tenant: tenant.to_owned(),
            run_id: run_id.to_owned(),
            reason,
            expires_at: now + wait,
            state: watch::Sender::new(TakeoverState::Requested),
            history: Mutex::new(Vec::new()),
            live_token: Mutex::new(None),
            surface,
            sites,
            on_input,
            live_slots: Arc::new(Semaphore::new(LIVE_SOCKETS)),
            live_ended: watch::Sender::new(false),
        });
        {
            let mut registry = self.lock();
            let key = (tenant.to_owned(), run_id.to_owned());
            if let Some(old) = registry.by_run.insert(key, handoff.takeover_id.clone())
                && let Some(old) = registry.by_id.remove(&old)
            {
                old.live_ended.send_replace(true);
            }
            registry
                .by_id
                .insert(handoff.takeover_id.clone(), Arc::clone(&handoff));
        }
        Ok(PendingHandoff {
            handoffs: Arc::clone(self),
            handoff,
            seen: TakeoverState::Requested,
            reported: 0,
            moved_by: None,
        })
    }

    /// The takeovers of `tenant` that are not over (`requested` or `active`), soonest to
    /// expire first.
    pub(crate) fn of_tenant(&self, tenant: &str) -> Vec<abr_protocol::TakeoverSummary> {
        let mut out: Vec<_> = self
            .lock()
            .by_id
            .values()
            .filter(|h| h.tenant == tenant)
            .filter_map(|h| {
                let state = *h.state.borrow();
                matches!(state, TakeoverState::Requested | TakeoverState::Active).then(|| {
                    abr_protocol::TakeoverSummary {
                        takeover_id: h.takeover_id.clone(),
                        run_id: h.run_id.clone(),
                        reason: h.reason,
                        state,
                        expires_at: h.expires_at,
                    }
                })
            })
            .collect();
        out.sort_by_key(|t| t.expires_at);
        out
    }

    fn find(&self, tenant: &str, run_id: &str) -> Result<Arc<Handoff<C>>, EngineError> {
        let registry = self.lock();
        registry
            .by_run
            .get(&(tenant.to_owned(), run_id.to_owned()))
            .and_then(|id| registry.by_id.get(id))
            .cloned()
            .ok_or(EngineError::NoTakeover)
    }

    /// `requested → active` by the person `by`: mints the live token (the same one if
    /// already active).
    ///
    /// # Errors
    /// [`EngineError::NoTakeover`] when the run is not paused, [`EngineError::TakeoverState`]
    /// when its takeover is over.
    pub(crate) fn activate(
        &self,
        tenant: &str,
        run_id: &str,
        by: &str,
    ) -> Result<ActiveTakeover, EngineError> {
        let handoff = self.find(tenant, run_id)?;
        if self.clock.now() >= handoff.expires_at {
            return Err(EngineError::TakeoverState(TakeoverState::Expired));
        }
        handoff
            .transition(
                &[TakeoverState::Requested, TakeoverState::Active],
                TakeoverState::Active,
                Some(by),
            )
            .map_err(EngineError::TakeoverState)?;
        let token = {
            let mut slot = handoff
                .live_token
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match slot.as_ref() {
                Some(token) => token.clone(),
                None => slot.insert(token()?).clone(),
            }
        };
        self.lock()
            .by_live_token
            .insert(token.clone(), handoff.takeover_id.clone());
        Ok(ActiveTakeover {
            takeover_id: handoff.takeover_id.clone(),
            live_token: token,
            expires_at: handoff.expires_at,
        })
    }

    /// `requested | active → resumed` by the person `by`: the run continues where it
    /// stopped.
    ///
    /// # Errors
    /// As [`Handoffs::activate`].
    pub(crate) fn resume(
        &self,
        tenant: &str,
        run_id: &str,
        by: &str,
    ) -> Result<String, EngineError> {
        let handoff = self.find(tenant, run_id)?;
        handoff
            .transition(
                &[TakeoverState::Requested, TakeoverState::Active],
                TakeoverState::Resumed,
                Some(by),
            )
            .map_err(EngineError::TakeoverState)?;
        Ok(handoff.takeover_id.clone())
    }

    /// `requested | active → ended` by the person `by`: the run stops without acting.
    ///
    /// # Errors
    /// As [`Handoffs::activate`].
    pub(crate) fn end(&self, tenant: &str, run_id: &str, by: &str) -> Result<String, EngineError> {
        let handoff = self.find(tenant, run_id)?;
        handoff
            .transition(
                &[TakeoverState::Requested, TakeoverState::Active],
                TakeoverState::Ended,
                Some(by),
            )
            .map_err(EngineError::TakeoverState)?;
        Ok(handoff.takeover_id.clone())
    }

    fn by_live_token(&self, token: &str) -> Option<Arc<Handoff<C>>> {
        let registry = self.lock();
        let id = registry.by_live_token.get(token)?;
        registry.by_id.get(id).cloned()
    }

    fn live(&self, token: &str) -> Option<Arc<Handoff<C>>> {
        self.by_live_token(token).filter(|h| {
            *h.state.borrow() == TakeoverState::Active && self.clock.now() < h.expires_at
        })
    }

    /// What an active takeover's live token shows (`None` unless the takeover is active).
    pub(crate) fn live_target(&self, token: &str) -> Option<LiveTarget> {
        let handoff = self.live(token)?;
        Some(LiveTarget {
            platform: format!("takeover:{}", handoff.reason.as_str()),
            provider_viewer: None,
            expires_at: handoff.expires_at,
        })
    }

    /// Attaches a viewer socket to the paused browser, only while the takeover is active;
    /// the socket's [`LiveAttachment::ended`] fires when it is resumed, ended or expires.
    ///
    /// # Errors
    /// [`EngineError::LiveViewNotFound`] (no active takeover has this token) or
    /// [`EngineError::LiveViewLimit`].
    pub(crate) fn attach_live(&self, token: &str) -> Result<LiveAttachment<C>, EngineError> {
        let handoff = self.live(token).ok_or(EngineError::LiveViewNotFound)?;
        let slot = Arc::clone(&handoff.live_slots)
            .try_acquire_owned()
            .map_err(|_| EngineError::LiveViewLimit(LIVE_SOCKETS))?;
        Ok(LiveAttachment {
            on_input: handoff.on_input.clone(),
            platform: format!("takeover:{}", handoff.reason.as_str()),
            surface: Arc::clone(&handoff.surface),
            viewer: None,
            sites: handoff.sites.clone(),
            expires_at: handoff.expires_at,
            ended: handoff.live_ended.subscribe(),
            clock: Arc::clone(&self.clock),
            _slot: slot,
        })
    }

    fn forget(&self, handoff: &Handoff<C>) {
        handoff.live_ended.send_replace(true);
        let mut registry = self.lock();
        if registry
            .by_run
            .get(&(handoff.tenant.clone(), handoff.run_id.clone()))
            .is_some_and(|id| *id == handoff.takeover_id)
        {
            registry
                .by_run
                .remove(&(handoff.tenant.clone(), handoff.run_id.clone()));
        }
        registry.by_id.remove(&handoff.takeover_id);
        registry
            .by_live_token
            .retain(|_, id| *id != handoff.takeover_id);
    }
}

/// A run's side of its takeover: wait for the person.
pub(crate) struct PendingHandoff<C: Send + Sync + 'static> {
    handoffs: Arc<Handoffs<C>>,
    handoff: Arc<Handoff<C>>,
    seen: TakeoverState,
    /// Transitions of the history already answered by `next`.
    reported: usize,
    /// Who made the transition answered last (none for an expiry).
    moved_by: Option<String>,
}

impl<C: Send + Sync + 'static> std::fmt::Debug for PendingHandoff<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingHandoff")
            .field("takeover_id", &self.handoff.takeover_id)
            .field("state", &self.seen)
            .finish_non_exhaustive()
    }
}

impl<C: Send + Sync + 'static> PendingHandoff<C> {
    /// The takeover's id.
    pub(crate) fn takeover_id(&self) -> &str {
        &self.handoff.takeover_id
    }

    /// When it expires unless resumed.
    pub(crate) fn expires_at(&self) -> OffsetDateTime {
        self.handoff.expires_at
    }

    /// The next transition of the history not answered yet, answered now.
    fn take_unreported(&mut self) -> Option<TakeoverState> {
        let (state, by) = self
            .handoff
            .history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(self.reported)
            .cloned()?;
        self.reported += 1;
        self.seen = state;
        self.moved_by = by;
        Some(state)
    }

    /// Who made the transition answered last: a key holder's name (none for an expiry).
    pub(crate) fn moved_by(&self) -> Option<&str> {
        self.moved_by.as_deref()
    }

    /// Expires the takeover, unless a transition won the race (then it is answered first).
    fn expire(&self) {
        let _ = self.handoff.transition(
            &[TakeoverState::Requested, TakeoverState::Active],
            TakeoverState::Expired,
            None,
        );
    }

    /// The next transition not answered yet, without waiting (`None`: nothing new, or the
    /// takeover is over and was answered). A takeover past its expiry expires now. For a
    /// run that is not waiting in a loop (a browse session between its brain's calls).
    pub(crate) fn poll(&mut self) -> Option<TakeoverState> {
        if self.seen.is_final() {
            return None;
        }
        if self.handoffs.clock.now() >= self.handoff.expires_at {
            self.expire();
        }
        self.take_unreported()
    }

    /// Waits for the next transition and answers the new state: `active` (keep waiting),
    /// or a final one (`resumed`, `ended`, `expired`: the wait is over).
    pub(crate) async fn next(&mut self) -> TakeoverState {
        loop {
            if self.seen.is_final() {
                return self.seen;
            }
            if let Some(state) = self.take_unreported() {
                return state;
            }
            let mut rx = self.handoff.state.subscribe();
            let known = self.reported;
            let history = &self.handoff.history;
            let left = self.handoff.expires_at - self.handoffs.clock.now();
            let left = Duration::try_from(left).unwrap_or(Duration::ZERO);
            tokio::select! {
                _ = rx.wait_for(|_| {
                    history
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .len()
                        > known
                }) => {}
                () = tokio::time::sleep(left) => self.expire(),
            }
        }
    }
}

impl<C: Send + Sync + 'static> Drop for PendingHandoff<C> {
    fn drop(&mut self) {
        self.handoffs.forget(&self.handoff);
    }
}
