//! [`RunNetwork`]: a run's gate below the page. The network rule ([`classify`]) with what
//! the run adds: in a read-only or dry run every write is refused (and recorded for the
//! answer: method and host, never the body); in a read-write run the first write to the
//! run's own sites is announced to the commit watch and durably marked before it leaves the
//! browser, so that nothing the page sends can be reported "failed, safe to retry".

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use abr_core::error::CoreError;
use abr_core::guard::{
    NetworkRules, OutgoingRequest, OwnSites, RequestGate, RequestKind, classify, host_of,
};
use abr_protocol::{BlockedAction, BlockedBy, CommitClass};
use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::commit_watch::CommitWatch;

/// Durably marks the run committing (the store's mark), before a write leaves.
pub(crate) type MarkCommitting =
    Arc<dyn Fn() -> BoxFuture<'static, Result<(), CoreError>> + Send + Sync>;

/// Bound on announcing and marking a write (the request waits meanwhile).
const MARK_TIMEOUT: Duration = Duration::from_secs(15);

/// Most refused requests kept between two reads of the gate.
const MAX_BLOCKED: usize = 32;

/// What the network did since the gate was last read.
#[derive(Debug, Default)]
pub(crate) struct NetActivity {
    /// Requests refused (a read-only or dry run), at most [`MAX_BLOCKED`].
    pub(crate) blocked: Vec<BlockedAction>,
    /// A write to the run's own sites left the browser.
    pub(crate) wrote: bool,
    /// A write could not be announced or marked: it never left, and why.
    pub(crate) unannounced: Option<String>,
}

#[derive(Debug, Default)]
struct Pending {
    blocked: Vec<BlockedAction>,
    unannounced: Option<String>,
}

/// The gate of one run (see the module docs).
pub(crate) struct RunNetwork {
    rules: NetworkRules,
    own: RwLock<OwnSites>,
    refuse: Option<BlockedBy>,
    mark: MarkCommitting,
    watch: Mutex<Option<CommitWatch>>,
    /// Serializes the first write's announcement and mark.
    marking: tokio::sync::Mutex<()>,
    /// The mark is durable (set here, or by the run loop before a committing step): later
    /// writes go at once.
    marked: AtomicBool,
    /// Writes to the run's own sites that left, and how many were already read.
    writes: AtomicU64,
    writes_read: AtomicU64,
    /// After the run ended nothing more may leave.
    closed: AtomicBool,
    /// A person holds the browser (an active takeover): they act as themselves.
    person: AtomicBool,
    /// A browse session under the approval rule: its writes wait for an approver.
    gated: AtomicBool,
    /// Writes are refused now (`awaiting_approval`): no approved action is running.
    held: AtomicBool,
    pending: Mutex<Pending>,
}

impl std::fmt::Debug for RunNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunNetwork")
            .field("refuse", &self.refuse)
            .field("marked", &self.marked.load(Ordering::SeqCst))
            .field("writes", &self.writes.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl RunNetwork {
    /// The gate of a run acting on `own` under the platform's `rules`: refusing every write
    /// when `refuse` is set, else marking the run with `mark` before its first write.
    pub(crate) fn new(
        rules: NetworkRules,
        own: OwnSites,
        refuse: Option<BlockedBy>,
        mark: MarkCommitting,
    ) -> Arc<Self> {
        Arc::new(Self {
            rules,
            own: RwLock::new(own),
            refuse,
            mark,
            watch: Mutex::new(None),
            marking: tokio::sync::Mutex::new(()),
            marked: AtomicBool::new(false),
            writes: AtomicU64::new(0),
            writes_read: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            person: AtomicBool::new(false),
            gated: AtomicBool::new(false),
            held: AtomicBool::new(false),
            pending: Mutex::new(Pending::default()),
        })
    }

    /// The watch the first write is announced to (a relayed request's), or none.
    pub(crate) fn set_watch(&self, watch: Option<CommitWatch>) {
        *self.watch.lock().unwrap_or_else(PoisonError::into_inner) = watch;
    }

    /// Adds the site of `url` to the run's own sites (a browse session going somewhere).
    pub(crate) fn add_site(&self, url: &str) {
        self.own
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .add_url(url);
    }

    /// Whether a write to the run's own sites left the browser (after the durable mark).
    pub(crate) fn committed(&self) -> bool {
        self.writes.load(Ordering::SeqCst) > 0
    }

    /// The run loop announced and marked the run itself (before a committing step): the
    /// first write goes at once.
    pub(crate) fn already_marked(&self) {
        self.marked.store(true, Ordering::SeqCst);
    }

    /// Whether a person holds the browser through an active takeover. Meanwhile nothing is
    /// refused (a person signs in or answers a challenge as themselves, through the live
    /// view), and a read-write run still counts their writes as committing.
    pub(crate) fn set_person(&self, holds: bool) {
        self.person.store(holds, Ordering::SeqCst);
    }

    /// Puts the run under the approval rule (a read-write browse session when approval is
    /// required): from now on every write is refused (`awaiting_approval`) except while an
    /// approved action runs ([`Self::hold`]).
    pub(crate) fn require_approval(&self) {
        self.gated.store(true, Ordering::SeqCst);
        self.held.store(true, Ordering::SeqCst);
    }

    /// Whether the run is under the approval rule.
    pub(crate) fn approval_required(&self) -> bool {
        self.gated.load(Ordering::SeqCst)
    }

    /// Under the approval rule: `false` lets writes leave (an approved action runs), `true`
    /// refuses them again. Nothing for a run not under the rule.
    pub(crate) fn hold(&self, held: bool) {
        if self.gated.load(Ordering::SeqCst) {
            self.held.store(held, Ordering::SeqCst);
        }
    }

    /// The run ended: from now on nothing but reads leaves (a late timer's post would
    /// otherwise leave after the outcome was decided).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// What happened since the last call. A first write being announced and marked is
    /// waited for (at most [`MARK_TIMEOUT`]): it reached the gate during what is being read,
    /// so whether it left is part of the answer.
    pub(crate) async fn take(&self) -> NetActivity {
        drop(self.marking.lock().await);
        let pending = std::mem::take(&mut *self.lock_pending());
        let writes = self.writes.load(Ordering::SeqCst);
        let read = self.writes_read.swap(writes, Ordering::SeqCst);
        NetActivity {
            blocked: pending.blocked,
            wrote: writes > read,
            unannounced: pending.unannounced,
        }
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn block(&self, class: CommitClass, method: Option<&str>, host: String, by: BlockedBy) {
        tracing::info!(
            class = ?class,
            method,
            "network: refused a request of a run that may not commit"
        );
        let mut pending = self.lock_pending();
        if pending.blocked.len() < MAX_BLOCKED {
            pending.blocked.push(BlockedAction {
                step: None,
                blocked_by: by,
                class,
                verb: None,
                method: method.map(|m| m.trim().to_ascii_uppercase()),
                host: Some(host),
            });
        }
    }

    /// Announces and marks the first write; later ones go at once. `false`: it must not
    /// leave.
    async fn commit(&self) -> bool {
        if !self.marked.load(Ordering::SeqCst) {
            let _serial = self.marking.lock().await;
            if !self.marked.load(Ordering::SeqCst) {
                let watch = self
                    .watch
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                let mark = Arc::clone(&self.mark);
                let announce_and_mark = async move {
                    if let Some(watch) = watch {
                        watch.announce().await?;
                    }
                    mark().await
                };
                let done = match tokio::time::timeout(MARK_TIMEOUT, announce_and_mark).await {
                    Ok(done) => done,
                    Err(_) => Err(CoreError::Store(
                        "marking the run committing took too long".into(),
                    )),
                };
                if let Err(e) = done {
                    tracing::warn!(error = %e, "network: a write could not be announced or marked; it was not sent");
                    self.lock_pending().unannounced = Some(e.to_string());
                    return false;
                }
                self.marked.store(true, Ordering::SeqCst);
            }
        }
        self.writes.fetch_add(1, Ordering::SeqCst);
        true
    }
}

#[async_trait]
impl RequestGate for RunNetwork {
    async fn admit(&self, request: &OutgoingRequest<'_>) -> bool {
        let kind = {
            let own = self.own.read().unwrap_or_else(PoisonError::into_inner);
            classify(&self.rules, &own, request)
        };
        if kind == RequestKind::Read {
            return true;
        }
        let person = self.person.load(Ordering::SeqCst);
        if let Some(by) = self.refuse {
            if person {
                tracing::info!("network: a person's write during a takeover of a read-only run");
                return true;
            }
            self.block(
                CommitClass::NetworkWrite,
                Some(request.method),
                request.host(),
                by,
            );
            return false;
        }
        if self.held.load(Ordering::SeqCst) && !person {
            self.block(
                CommitClass::NetworkWrite,
                Some(request.method),
                request.host(),
                BlockedBy::AwaitingApproval,
            );
            return false;
        }
        if self.closed.load(Ordering::SeqCst) {
            tracing::info!("network: refused a write after the run ended");
            return false;
        }
        match kind {
            RequestKind::Commits => self.commit().await,
            RequestKind::Background | RequestKind::Read => true,
        }
    }

    fn refuses_writes(&self) -> bool {
        (self.refuse.is_some() || self.held.load(Ordering::SeqCst))
            && !self.person.load(Ordering::SeqCst)
    }

    fn websockets_guarded(&self) -> bool {
        (self.refuse.is_some() || self.gated.load(Ordering::SeqCst))
            && !self.rules.allows_websockets()
    }

    fn admit_websocket(&self, url: &str) -> bool {
        let by = match self.refuse {
            Some(by) => by,
            None if self.held.load(Ordering::SeqCst) => BlockedBy::AwaitingApproval,
            None => return true,
        };
        if self.person.load(Ordering::SeqCst) || self.rules.allows_websockets() {
            return true;
        }
        self.block(CommitClass::WebSocket, None, host_of(url), by);
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn post(url: &str) -> OutgoingRequest<'_> {
        OutgoingRequest {
            method: "POST",
            url,
            resource_type: "fetch",
            content_type: None,
            body: None,
        }
    }

    fn gate(refuse: Option<BlockedBy>) -> (Arc<RunNetwork>, Arc<AtomicUsize>) {
        let marks = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&marks);
        let mark: MarkCommitting = Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        });
        let mut own = OwnSites::default();
        own.add_url("https://shop.example/cart");
        (
            RunNetwork::new(NetworkRules::default(), own, refuse, mark),
            marks,
        )
    }

    #[tokio::test]
    async fn a_read_only_gate_refuses_every_write_and_says_which() {
        let (gate, marks) = gate(Some(BlockedBy::ReadOnly));
        let get = OutgoingRequest {
            method: "GET",
            ..post("https://shop.example/x")
        };
        assert!(gate.admit(&get).await, "reads go");
        assert!(!gate.admit(&post("https://api.shop.example/like")).await);
        assert!(!gate.admit(&post("https://tracker.other.net/t")).await);
        assert!(gate.websockets_guarded());
        assert!(!gate.admit_websocket("wss://chat.shop.example/socket"));
        let seen = gate.take().await;
        let blocked: Vec<_> = seen
            .blocked
            .iter()
            .map(|b| (b.class, b.method.clone(), b.host.clone()))
            .collect();
        assert_eq!(
            blocked,
            [
                (
                    CommitClass::NetworkWrite,
                    Some("POST".into()),
                    Some("api.shop.example".into())
                ),
                (
                    CommitClass::NetworkWrite,
                    Some("POST".into()),
                    Some("tracker.other.net".into())
                ),
                (
                    CommitClass::WebSocket,
                    None,
                    Some("chat.shop.example".into())
                ),
            ]
        );
        assert!(!seen.wrote && !gate.committed());
        assert_eq!(marks.load(Ordering::SeqCst), 0);
        assert!(gate.take().await.blocked.is_empty(), "read once");
        // A person holding the browser in a takeover acts as themselves.
        gate.set_person(true);
        assert!(gate.admit(&post("https://shop.example/login")).await);
        assert!(gate.admit_websocket("wss://chat.shop.example/socket"));
        gate.set_person(false);
        assert!(!gate.admit(&post("https://shop.example/login")).await);
    }

    #[tokio::test]
    async fn a_read_write_gate_marks_once_before_the_first_own_write_and_counts_them() {
        let (gate, marks) = gate(None);
        assert!(gate.admit(&post("https://tracker.other.net/t")).await);
        assert!(
            !gate.take().await.wrote,
            "a third party's write is background"
        );
        assert_eq!(marks.load(Ordering::SeqCst), 0);
        assert!(gate.admit(&post("https://shop.example/api/like")).await);
        assert!(gate.admit(&post("https://api.shop.example/api/like")).await);
        assert_eq!(
            marks.load(Ordering::SeqCst),
            1,
            "marked once, before the first"
        );
        assert!(gate.take().await.wrote && gate.committed());
        assert!(!gate.take().await.wrote, "nothing new since");
        assert!(!gate.websockets_guarded());
        // Once the run ended, nothing more leaves.
        gate.close();
        assert!(!gate.admit(&post("https://shop.example/api/late")).await);
        // A mark that fails holds the write back, and says why.
        let failing: MarkCommitting =
            Arc::new(|| Box::pin(async { Err(CoreError::Store("disk full".into())) }));
        let mut own = OwnSites::default();
        own.add_host("shop.example");
        let gate = RunNetwork::new(NetworkRules::default(), own, None, failing);
        assert!(!gate.admit(&post("https://shop.example/api/like")).await);
        let seen = gate.take().await;
        assert!(!seen.wrote && seen.unannounced.is_some());
        assert!(!gate.committed());
    }

    #[tokio::test]
    async fn a_write_still_being_marked_is_part_of_what_is_read_meanwhile() {
        // The store is slow to mark the run: the write reached the gate, so reading the gate
        // waits for the mark and reports the write, instead of leaving it to the next step.
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
        let mark: MarkCommitting = Arc::new(move || {
            let released = Arc::clone(&released);
            Box::pin(async move {
                if let Some(released) = released.lock().await.take() {
                    let _ = released.await;
                }
                Ok(())
            })
        });
        let mut own = OwnSites::default();
        own.add_host("shop.example");
        let gate = RunNetwork::new(NetworkRules::default(), own, None, mark);
        let sender = Arc::clone(&gate);
        let write =
            tokio::spawn(async move { sender.admit(&post("https://shop.example/api/like")).await });
        // The write is at the gate, its mark under way.
        let marking = async {
            while gate.marking.try_lock().is_ok() {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), marking)
            .await
            .expect("the write reached the gate and its mark started");
        let reader = Arc::clone(&gate);
        let read = tokio::spawn(async move { reader.take().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!read.is_finished(), "the read waits for the mark");
        let _ = release.send(());
        assert!(read.await.unwrap().wrote, "the write is in this read");
        assert!(write.await.unwrap(), "and it left");
    }
}
