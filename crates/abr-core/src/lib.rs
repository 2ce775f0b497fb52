//! The pure core of the Agent Browser Runtime (ABR): contracts and orchestration.
//!
//! Architecture invariant: this crate performs no HTTP, reads no environment variables and
//! links no browser library. It orchestrates through four contracts:
//!
//! - [`SessionProvider`]: turns a stored session into an isolated browser context
//!   ([`Lease`]) and takes it away again. The context type is an associated type, so
//!   strategies get the full browser API of the real providers while the core is tested
//!   with in-memory fakes (the `testing` module, behind the feature of that name).
//! - [`WebPostStrategy`]: acts on one platform and proves the outcome.
//! - [`SessionStore`]: keeps sessions between jobs ([`InMemorySessionStore`]).
//! - [`AuditSink`]: receives redacted events, best effort ([`Auditor`]).
//! - [`LiveSurface`]: what a person's live view needs from a context (frames out, input in).
//!
//! On top of them: [`SessionScope`] (what state may enter or leave), [`AgentPoster`] (the
//! three-outcome posting pipeline), [`PostJournal`] (every post recorded, at most once per
//! idempotency key), [`SessionCaptureManager`] (interactive capture with a
//! live view, [`LiveAttachment`]), [`SerializedProvider`] (one session at a time) and
//! [`EgressPolicy`] (where a driven browser may connect).

mod audit;
mod budget;
mod capture;
mod clock;
pub mod commit_watch;
pub mod declared;
pub mod egress;
mod error;
pub mod guard;
mod handoff;
mod live;
mod live_access;
mod post_journal;
mod poster;
mod provider;
mod records;
pub mod scope;
mod scope_io;
mod serialized;
mod step;
mod store;
mod stored_sessions;
mod strategy;
pub mod task;
mod tenant;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use audit::{
    AuditAction, AuditError, AuditEvent, AuditOutcome, AuditSink, Auditor, MemoryAuditSink,
};
pub use budget::{BudgetError, DeadlineBudget};
pub use capture::{CaptureConfig, LiveTarget, SessionCaptureManager};
pub use clock::{Clock, OsRandom, RandomSource, SystemClock, new_token};
pub use egress::{AllowedPrivate, EgressDenied, EgressPolicy};
pub use error::{
    CoreError, ErrorKind, ProviderError, ProviderErrorKind, StrategyError, StrategyErrorKind,
};
pub use handoff::{ActiveTakeover, Handoffs, PendingHandoff, TakeoverSink};
pub use live::{
    LiveFeed, LiveFrame, LiveInput, LiveKey, LiveSurface, MAX_LIVE_TEXT, Modifiers, PageLocation,
    PointerAction, PointerButton,
};
pub use live_access::{LiveAttachment, LiveInputError, LiveRefusal, LiveSites};
pub use post_journal::{
    InMemoryPostStore, PostJournal, PostReply, PostStore, Posted, StoredPost, post_request_hash,
};
pub use poster::{AgentPoster, Pacing, PosterConfig, StepTimeouts};
pub use provider::{
    AcquireMode, AcquireRequest, DynSessionProvider, Lease, ProviderCapabilities, ProviderViewer,
    ReleaseFn, SessionContext, SessionProvider,
};
pub use scope::{ScopeError, SessionScope};
pub use serialized::SerializedProvider;
pub use store::{InMemorySessionStore, STORED_SESSION_PLATFORM, SessionKey, SessionStore};
pub use stored_sessions::StoredSessions;
pub use strategy::{
    PlatformPacing, PolicyError, PostProgress, ReceiptNote, RecheckOutcome, StrategyPolicy,
    StrategyRegistry, SubmitGate, SubmitReceipt, VerifyOutcome, WebPostStrategy,
};
pub use tenant::{check as check_tenant_id, person as check_person};
