//! The application of the Agent Browser Runtime (ABR), on `abr-core`'s contracts: posts
//! recorded "never twice", approved step plans run through the guard rails, browse sessions
//! for an external brain, interactive capture with a live view, and the handoffs a person
//! resolves.
//!
//! Architecture invariant: like the core, this crate performs no HTTP, reads no environment
//! variables and links no browser library; providers, stores and sinks are handed in.
//! `abr-service` puts it behind HTTP; an embedder uses it directly.
//!
//! # The API boundary
//!
//! This crate has one door, [`Engine`], built by [`EngineBuilder`] from an
//! [`EngineConfig`], the providers and an [`EngineStore`]. Every call that acts for somebody
//! takes the caller's [`Actor`](abr_core::principal::Actor) and checks its rights and tenant
//! there, before anything else: the parts behind the door (the poster, the post journal, the
//! task runner, captures, handoffs, stored sessions, the tenants' admission, the evidence
//! sweep) are private to the crate, so no caller can reach one without passing that check.
//! The rest of what is exported is what crosses the door:
//!
//! - the sinks an embedder hands in: [`EventSink`] (the webhook), [`TaskCompletion`] (the
//!   callback), [`TracingAuditSink`] (the default audit sink), and [`commit_watch`] (the hook
//!   a relay sets around relayed work, told before anything commits);
//! - the answers: [`Posted`] and [`PostReply`], [`Created`], [`TaskEnd`], [`LinkedTask`],
//!   [`MintedLink`], [`ActiveTakeover`], [`TenantEvents`] and [`Received`], [`LiveTarget`],
//!   [`LiveAttachment`] and its refusals, [`EngineLoad`] and [`JobSlotHold`];
//! - [`Keys`], the key service: a door of its own (every call that changes a key takes the
//!   [`Principal`](abr_core::principal::Principal) acting, and authentication answers one),
//!   reached through [`Engine::keys`] or built alone over a key store (`abr keys` does), with
//!   its answers [`MintedEnrollment`], [`EnrolledRunner`], [`RunnerPresence`], [`KeyWatch`];
//! - platforms declared as data: [`DeclaredStrategy`], [`load_platform_files`] and their
//!   errors and formats;
//! - settings: [`PosterConfig`], [`DEFAULT_RETENTION`], [`DEFAULT_STALL`];
//! - [`EngineError`], what a call refuses: the core's errors as they were raised
//!   ([`EngineError::Core`]) and the engine's own (records and their states, captures and
//!   live views, takeovers, browse sessions, admission), each with its kind, wire code and
//!   retryability.

mod admission;
mod approval_links;
mod artifacts;
mod caller;
mod capture;
pub mod commit_watch;
mod declared;
mod engine;
mod error;
mod events;
mod handoff;
mod jobs;
mod keys;
mod ledger;
mod live_access;
mod observed_store;
mod poster;
mod posts;
mod retention;
mod step;
mod stored_sessions;
mod task;
#[cfg(test)]
mod tests;
mod timeline;

pub use approval_links::MintedLink;
pub use capture::LiveTarget;
pub use declared::{
    DeclaredError, DeclaredStrategy, DeclaredTimeouts, PlatformFormat, load_platform_files,
};
pub use engine::{
    ApprovalBacklog, DEFAULT_RETENTION, Engine, EngineBuilder, EngineConfig, EngineLoad,
    EngineStore, JobSlotHold, LinkedTask, TaskCompletion, TracingAuditSink,
};
pub use error::EngineError;
pub use events::{DEFAULT_EVENT_POLL, DEFAULT_STALL, EventSink, Received, TenantEvents};
pub use handoff::ActiveTakeover;
pub use keys::{EnrolledRunner, KeyWatch, Keys, MintedEnrollment, RunnerPresence};
pub use live_access::{LiveAttachment, LiveInputError, LiveRefusal};
pub use observed_store::{ObservedStore, StoreObserver};
pub use poster::PosterConfig;
pub use posts::{PostReply, Posted};
pub use retention::SweepGate;
pub use task::{Created, TaskEnd};

/// The target of the spans a trace is made of (a request's, a run's and their phases'):
/// an embedder's `tracing` layer exports them by this target. Their fields are ids, kinds,
/// indexes and outcomes: never a secret, a typed value, a URL or a selector.
pub const TRACE_TARGET: &str = "abr::trace";
