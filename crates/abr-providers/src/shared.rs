//! A browser many leases share ([`SharedBrowser`]): it counts the leases it handed out and
//! those alive, is retired once worn out (after a set number of leases: Chromium's memory
//! grows with use), and a retired browser is closed when its last lease ends, never under a
//! running job.
//!
//! Every close is bounded ([`close_or_kill`]): a browser that does not answer its close in
//! time (frozen, or its connection half-open) is ended by its process.
//!
//! A launched browser's temporary folder goes with the last handle on it ([`Launched`]):
//! after its close, or once its process was ended.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use playwright_rs::protocol::Browser;

use crate::process::{BrowserProcess, BrowserTemp};

/// A browser this provider launched, with its process and its temporary folder (its
/// `TMPDIR`), removed when the last clone is dropped. Whoever may still close or end the
/// browser holds a clone (its pool, its leases, a close in the background), so that the
/// folder goes once it closed or was ended.
#[derive(Clone)]
pub(crate) struct Launched {
    pub(crate) browser: Browser,
    pub(crate) process: BrowserProcess,
    pub(crate) temp: Arc<BrowserTemp>,
}

/// A launched browser shared by leases.
pub(crate) struct SharedBrowser {
    launched: Launched,
    /// Which launch of its pool it is: warm contexts made in an earlier one are not handed
    /// out from this one.
    generation: u64,
    usage: Arc<Mutex<Usage>>,
    /// How long its close may take before its process is ended.
    deadline: Duration,
}

#[derive(Debug, Default)]
struct Usage {
    handed: usize,
    in_use: usize,
    retired: bool,
    /// Ended by its process (it did not answer): Playwright may not have seen it go yet.
    ended: bool,
}

impl SharedBrowser {
    pub(crate) fn new(launched: Launched, generation: u64, deadline: Duration) -> Self {
        Self {
            launched,
            generation,
            usage: Arc::default(),
            deadline,
        }
    }

    pub(crate) fn launched(&self) -> &Launched {
        &self.launched
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether it can take another lease: connected, and not ended by its process.
    pub(crate) fn alive(&self) -> bool {
        self.launched.browser.is_connected() && !self.usage().ended
    }

    /// Whether it handed out `after` leases or more (`None`: never worn out).
    pub(crate) fn worn_out(&self, after: Option<usize>) -> bool {
        after.is_some_and(|after| self.usage().handed >= after)
    }

    /// A lease on it, alive until the returned guard is dropped.
    pub(crate) fn lease(&self) -> InUse {
        let mut usage = self.usage();
        usage.handed += 1;
        usage.in_use += 1;
        InUse {
            usage: Arc::clone(&self.usage),
            launched: self.launched.clone(),
            deadline: self.deadline,
        }
    }

    /// Takes it out of service: closed now if no lease is alive, else when the last ends.
    pub(crate) fn retire(&self) {
        let idle = {
            let mut usage = self.usage();
            usage.retired = true;
            usage.in_use == 0
        };
        if idle {
            close_in_background(self.launched.clone(), self.deadline);
        }
    }

    fn usage(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A lease's hold on a shared browser: dropping it ends the lease (the last lease of a
/// retired browser closes it).
pub(crate) struct InUse {
    usage: Arc<Mutex<Usage>>,
    launched: Launched,
    deadline: Duration,
}

impl InUse {
    /// Marks the browser as ended by its process: no acquire takes it again.
    pub(crate) fn mark_ended(&self) {
        self.end_mark().mark();
    }

    /// Whether the browser was retired (a lease ending then refills no warm pool).
    pub(crate) fn retired(&self) -> bool {
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retired
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let last_of_retired = {
            let mut usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
            usage.in_use = usage.in_use.saturating_sub(1);
            usage.retired && usage.in_use == 0
        };
        if last_of_retired {
            close_in_background(self.launched.clone(), self.deadline);
        }
    }
}

fn close_in_background(launched: Launched, deadline: Duration) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(async move {
                close_or_kill(&launched, deadline).await;
            });
        }
        // No runtime to close it politely: ended at once.
        Err(_) => {
            launched.process.kill();
        }
    }
}

/// Closes `launched` within `deadline`, else ends its process. `true`: it closed.
pub(crate) async fn close_or_kill(launched: &Launched, deadline: Duration) -> bool {
    match tokio::time::timeout(deadline, launched.browser.close()).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "closing a browser failed; ending its process");
            launched.process.kill();
            false
        }
        Err(_) => {
            tracing::warn!(
                deadline_ms = deadline.as_millis(),
                "a browser did not answer its close in time: its process was ended"
            );
            launched.process.kill();
            false
        }
    }
}

/// A handle that marks a shared browser as ended by its process, from a task of its own.
#[derive(Clone)]
pub(crate) struct EndMark(Arc<Mutex<Usage>>);

impl EndMark {
    pub(crate) fn mark(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).ended = true;
    }
}

impl InUse {
    /// A handle that marks this lease's browser as ended.
    pub(crate) fn end_mark(&self) -> EndMark {
        EndMark(Arc::clone(&self.usage))
    }
}

/// Runs a context's `setup` in a task of its own, within `deadline`, and hands its session
/// to the caller. The caller may give up first (its own deadline, a cancelled request): the
/// task goes on regardless, so that a browser that does not answer is still ended
/// (`on_timeout`, which says why) and a session finished for nobody is still closed
/// (`orphan`). Deadlines kept only by the caller would leave both to chance.
pub(crate) async fn detached_setup<S, T, O>(
    setup: S,
    deadline: Duration,
    on_timeout: T,
    orphan: O,
) -> Result<crate::BrowserSession, abr_core::ProviderError>
where
    S: Future<Output = Result<crate::BrowserSession, abr_core::ProviderError>> + Send + 'static,
    T: FnOnce() -> abr_core::ProviderError + Send + 'static,
    O: FnOnce(crate::BrowserSession) -> futures::future::BoxFuture<'static, ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let result = match tokio::time::timeout(deadline, setup).await {
            Ok(result) => result,
            Err(_) => Err(on_timeout()),
        };
        if let Err(Ok(session)) = tx.send(result) {
            orphan(session).await;
        }
    });
    rx.await.unwrap_or_else(|_| {
        Err(abr_core::ProviderError::new(
            abr_core::ProviderErrorKind::Crashed,
            "the browser context's setup ended without an answer",
        ))
    })
}

/// Runs a lease's `release` in a task of its own: dropped by an impatient caller, it still
/// closes (or ends) the browser.
pub(crate) async fn detached_release<R>(release: R) -> Result<(), abr_core::ProviderError>
where
    R: Future<Output = Result<(), abr_core::ProviderError>> + Send + 'static,
{
    tokio::spawn(release).await.unwrap_or_else(|_| {
        Err(abr_core::ProviderError::new(
            abr_core::ProviderErrorKind::Crashed,
            "the release ended without an answer",
        ))
    })
}
