//! [`RunNetwork`]: a run's gate below the page. The network rule ([`classify`]) with what
//! the run adds: in a read-only or dry run every write is refused (and recorded for the
//! answer: method and host, never the body); in a read-write run the first write to the
//! run's own sites is announced to the commit watch and durably marked before it leaves the
//! browser, so that nothing the page sends can be reported "failed, safe to retry".
//!
//! Two windows open a refusing gate, each as narrowly as the gate can tell:
//! - a person's takeover: for [`PERSON_WINDOW`] after each click, key, text or navigation
//!   the person sends through the live view, never on the page's own (a timer's post while
//!   the person only looks stays refused);
//! - an approved action, under the approval rule: while it runs, except a write the page
//!   already tried while writes were held and no action ran (its method, host and path),
//!   which is the page's own background, not the action's.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use abr_core::error::CoreError;
use abr_core::error::store::StoreFailure;
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

/// How long after a person's act in the live view (a click, a key, text, a navigation) the
/// page's writes are the person's.
pub(crate) const PERSON_WINDOW: Duration = Duration::from_secs(3);

/// Most write signatures remembered as the page's own background.
const MAX_BACKGROUND: usize = 256;

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
    /// A person holds the browser (an active takeover): they act as themselves, for
    /// [`PERSON_WINDOW`] after each of their acts.
    person: AtomicBool,
    /// When the person last acted, in milliseconds since `epoch` plus one (0: never).
    person_acted: AtomicU64,
    /// The person acted since [`Self::take_person_acted`] was last asked.
    person_acted_ever: AtomicBool,
    epoch: std::time::Instant,
    /// The writes (method, host, path) the page sent while writes were held and no action
    /// ran: its own.
    background: Mutex<std::collections::HashSet<String>>,
    /// An action of the brain runs: what the page sends meanwhile is the action's.
    acting: AtomicBool,
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
            person_acted: AtomicU64::new(0),
            person_acted_ever: AtomicBool::new(false),
            epoch: std::time::Instant::now(),
            background: Mutex::default(),
            acting: AtomicBool::new(false),
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

    /// Whether a person holds the browser through an active takeover. Meanwhile the writes
    /// that follow their acts are theirs (a person signs in or answers a challenge as
    /// themselves, through the live view): not refused, and a read-write run still counts
    /// them as committing.
    pub(crate) fn set_person(&self, holds: bool) {
        self.person.store(holds, Ordering::SeqCst);
    }

    /// What the live view tells of the person's acts ([`PERSON_WINDOW`]).
    pub(crate) fn person_input(self: &Arc<Self>) -> crate::live_access::PersonInput {
        let network = Arc::downgrade(self);
        Arc::new(move || {
            if let Some(network) = network.upgrade() {
                let now = u64::try_from(network.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
                network
                    .person_acted
                    .store(now.saturating_add(1), Ordering::SeqCst);
                network.person_acted_ever.store(true, Ordering::SeqCst);
            }
        })
    }

    /// Whether the person acted in the live view (a click, a key, text, a navigation) since
    /// this was last asked.
    pub(crate) fn take_person_acted(&self) -> bool {
        self.person_acted_ever.swap(false, Ordering::SeqCst)
    }

    /// Whether the page's writes are the person's now: a takeover is active and they acted
    /// less than [`PERSON_WINDOW`] ago.
    fn persons_moment(&self) -> bool {
        if !self.person.load(Ordering::SeqCst) {
            return false;
        }
        let acted = self.person_acted.load(Ordering::SeqCst);
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let window = u64::try_from(PERSON_WINDOW.as_millis()).unwrap_or(u64::MAX);
        acted > 0 && now.saturating_sub(acted - 1) <= window
    }

    /// Whether an action of the brain runs (from before it reaches the page until what it
    /// started was read): a write held meanwhile is the action's, not the page's own.
    pub(crate) fn acting(&self, acting: bool) {
        self.acting.store(acting, Ordering::SeqCst);
    }

    /// Remembers `request` as the page's own background write (sent while held).
    fn remember_background(&self, request: &OutgoingRequest<'_>) {
        let mut background = self
            .background
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if background.len() < MAX_BACKGROUND {
            background.insert(signature(request));
        }
    }

    /// Whether the page sent `request` (its method, host and path) while writes were held.
    fn is_background(&self, request: &OutgoingRequest<'_>) -> bool {
        self.background
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&signature(request))
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
        let blocked = BlockedAction {
            step: None,
            blocked_by: by,
            class,
            verb: None,
            method: method.map(|m| m.trim().to_ascii_uppercase()),
            host: Some(host),
        };
        let mut pending = self.lock_pending();
        // A socket refused by its route is also told as opened: said once.
        let told = class == CommitClass::WebSocket && pending.blocked.contains(&blocked);
        if pending.blocked.len() < MAX_BLOCKED && !told {
            pending.blocked.push(blocked);
        }
    }

    /// Why sockets are refused now, if they are: the run's refusal, or the approval rule.
    fn refuses_sockets(&self) -> Option<BlockedBy> {
        if !self.websockets_guarded() {
            return None;
        }
        Some(self.refuse.unwrap_or(BlockedBy::AwaitingApproval))
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
                    Err(_) => Err(CoreError::Store(StoreFailure::unavailable(
                        "marking the run committing took too long",
                    ))),
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
        let persons = self.persons_moment();
        if let Some(by) = self.refuse {
            if persons {
                tracing::info!(
                    "network: a write following the person's act during a takeover of a read-only run"
                );
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
        let held = self.held.load(Ordering::SeqCst);
        if held && !persons {
            if !self.acting.load(Ordering::SeqCst) {
                self.remember_background(request);
            }
            self.block(
                CommitClass::NetworkWrite,
                Some(request.method),
                request.host(),
                BlockedBy::AwaitingApproval,
            );
            return false;
        }
        if self.gated.load(Ordering::SeqCst) && !held && !persons && self.is_background(request) {
            // An approved action runs, but this is what the page sent before anyone acted.
            tracing::info!("network: the page's own background write during an approved action");
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
        (self.refuse.is_some() || self.held.load(Ordering::SeqCst)) && !self.persons_moment()
    }

    fn websockets_guarded(&self) -> bool {
        (self.refuse.is_some() || self.gated.load(Ordering::SeqCst))
            && !self.rules.allows_websockets()
    }

    /// A run that guards sockets refuses every one, for its whole life: below the page the
    /// provider cannot tell a socket an approved action or a person's input opened from one
    /// the page's own timer or worker opened, so none connects.
    fn admit_websocket(&self, url: &str) -> bool {
        match self.refuses_sockets() {
            Some(by) => {
                self.block(CommitClass::WebSocket, None, host_of(url), by);
                false
            }
            None => true,
        }
    }

    async fn socket_opened(&self, url: &str) {
        if let Some(by) = self.refuses_sockets() {
            // Refused below the page: recorded for the answer.
            self.block(CommitClass::WebSocket, None, host_of(url), by);
            return;
        }
        let own = self
            .own
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&host_of(url));
        if own && !self.closed.load(Ordering::SeqCst) {
            // A socket to the run's own sites may carry anything: it counts as a write that
            // left (the browser opens it as it tells; the mark follows at once).
            tracing::info!("network: a WebSocket to the run's own sites counts as committing");
            self.commit().await;
        }
    }
}

/// A write's signature: its method, host and path (never the query or the body).
fn signature(request: &OutgoingRequest<'_>) -> String {
    let path = url::Url::parse(request.url)
        .map(|u| u.path().to_owned())
        .unwrap_or_default();
    format!(
        "{} {}{path}",
        request.method.trim().to_ascii_uppercase(),
        request.host()
    )
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
        // A person holding the browser in a takeover acts as themselves, right after each of
        // their acts only; the page's own writes while they look stay refused, and no
        // socket connects.
        gate.set_person(true);
        assert!(
            !gate.admit(&post("https://shop.example/timer")).await,
            "nothing the person did"
        );
        assert!(gate.refuses_writes());
        (gate.person_input())();
        assert!(gate.admit(&post("https://shop.example/login")).await);
        assert!(!gate.refuses_writes());
        assert!(!gate.admit_websocket("wss://chat.shop.example/socket"));
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
        let failing: MarkCommitting = Arc::new(|| {
            Box::pin(async { Err(CoreError::Store(StoreFailure::unavailable("disk full"))) })
        });
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
