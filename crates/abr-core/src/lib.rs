//! The pure core of the Agent Browser Runtime (ABR): its contracts and the policies that
//! decide, without acting.
//!
//! Architecture invariant: this crate performs no HTTP, reads no environment variables and
//! links no browser library; nothing in it imports upward (`.ci/check-imports`). The
//! application that runs on these contracts is `abr-engine`.
//!
//! Contracts:
//! - [`SessionProvider`] ([`provider`]): turns a stored session into an isolated browser
//!   context ([`Lease`]) and takes it away again. The context type is an associated type, so
//!   strategies get the full browser API of the real providers while the engine is tested
//!   with in-memory fakes (the `testing` module, behind the feature of that name).
//! - [`StepRunner`](step_runner::StepRunner) and [`PageProbe`](guard::PageProbe): the
//!   browser mechanics of a step, and what the guard rails read from a page;
//!   [`TaskContext`](context::TaskContext) is all of it together.
//! - [`LiveSurface`] ([`live`]): what a person's live view needs from a context.
//! - [`WebPostStrategy`] ([`strategy`]): acts on one platform and proves the outcome.
//! - [`store`]: where durable records live (sessions, tasks, posts, counters), with
//!   in-memory implementations; [`AuditSink`] ([`audit`]): redacted events, best effort.
//!
//! Policies: [`SessionScope`] ([`scope`], what state may enter or leave), [`EgressPolicy`]
//! ([`egress`], where a driven browser may connect), the guard rails ([`guard`]: the one
//! commit rule, the network rule, pause detection, site policy, frames), plan validation and
//! templating ([`plan`], on the one template engine, [`template`]), the approval rule ([`approval`]), per-tenant limits ([`limits`]),
//! every deadline of a request ([`budget`]), the bounds of ids ([`tenant`]), the digests
//! idempotency keys and approvals are bound to ([`digest`]), and [`SerializedProvider`]
//! (one session at a time).

pub mod approval;
pub mod artifact;
pub mod audit;
pub mod budget;
pub mod chaos;
pub mod clock;
pub mod codes;
pub mod context;
pub mod digest;
pub mod egress;
pub mod error;
pub mod guard;
pub mod limits;
pub mod live;
pub mod plan;
pub mod principal;
pub mod provider;
pub mod scope;
pub mod scope_io;
pub mod serialized;
pub mod step_runner;
pub mod store;
pub mod strategy;
pub mod template;
pub mod tenant;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use audit::{
    AuditAction, AuditError, AuditEvent, AuditOutcome, AuditSink, Auditor, MemoryAuditSink,
};
pub use budget::{BudgetError, DeadlineBudget, Pacing, StepTimeouts};
pub use clock::{Clock, OsRandom, RandomSource, SystemClock, new_token};
pub use egress::{AllowedPrivate, EgressDenied, EgressPolicy};
pub use error::{
    CoreError, ErrorKind, ProviderError, ProviderErrorKind, StrategyError, StrategyErrorKind,
};
pub use live::{
    LiveFeed, LiveFrame, LiveInput, LiveKey, LiveSurface, MAX_LIVE_TEXT, Modifiers, PageLocation,
    PointerAction, PointerButton,
};
pub use provider::{
    AcquireMode, AcquireRequest, DynSessionProvider, Lease, PoolStats, ProviderCapabilities,
    ProviderViewer, ReleaseFn, SessionContext, SessionProvider,
};
pub use scope::{ScopeError, SessionScope};
pub use serialized::SerializedProvider;
pub use store::{InMemorySessionStore, STORED_SESSION_PLATFORM, SessionKey, SessionStore};
pub use strategy::{
    PlatformPacing, PolicyError, PostProgress, ReceiptNote, RecheckOutcome, StrategyPolicy,
    StrategyRegistry, SubmitGate, SubmitReceipt, VerifyOutcome, WebPostStrategy,
};
pub use tenant::{check as check_tenant_id, person as check_person};
