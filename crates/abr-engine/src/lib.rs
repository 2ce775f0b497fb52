//! The application of the Agent Browser Runtime (ABR), on `abr-core`'s contracts: posts
//! recorded "never twice", approved step plans run through the guard rails, browse sessions
//! for an external brain, interactive capture with a live view, and the handoffs a person
//! resolves.
//!
//! Architecture invariant: like the core, this crate performs no HTTP, reads no environment
//! variables and links no browser library; providers, stores and sinks are handed in.
//! `abr-service` puts it behind HTTP; an embedder uses it directly.
//!
//! - [`Engine`] ([`engine`]): the facade an embedder (and `abr-service`) uses, built by
//!   [`EngineBuilder`]; it owns every job's admission ([`JobSlots`], [`TenantAdmission`])
//!   and a task's whole lifecycle.
//! - [`AgentPoster`] ([`poster`]): the three-outcome posting pipeline; [`PostJournal`]
//!   ([`posts`]): every post recorded, at most once per idempotency key.
//! - [`TaskRunner`](task::TaskRunner) ([`task`]): step plans and browse sessions.
//! - [`SessionCaptureManager`] ([`capture`]): interactive capture with a live view
//!   ([`LiveAttachment`]); [`Handoffs`] ([`handoff`]): paused runs' takeovers.
//! - [`StoredSessions`] ([`stored_sessions`]): sessions a tenant keeps by id.
//! - [`Keys`] ([`keys`]): API keys, and the [`Principal`](abr_core::principal::Principal) a
//!   token authenticates.
//! - [`TenantAdmission`] ([`admission`]): the per-tenant limits, once for every execution.
//! - The evidence sweep (`retention`): frames, screenshots and extracted data expire
//!   [`EngineConfig::retention`] after a run ended; outcomes stay.
//! - [`Events`] ([`events`]): every run event to the tenant streams and the webhook's
//!   [`EventSink`], and the stall watch.
//! - [`commit_watch`]: the hook told before anything commits; [`declared`]: platforms
//!   declared as data.

pub mod admission;
pub mod approval_links;
pub mod capture;
pub mod commit_watch;
pub mod declared;
pub mod engine;
pub mod events;
pub mod handoff;
pub mod jobs;
pub mod keys;
pub(crate) mod ledger;
pub mod live_access;
pub mod poster;
pub mod posts;
pub(crate) mod retention;
pub(crate) mod step;
pub mod stored_sessions;
pub mod task;
#[cfg(test)]
mod tests;

pub use admission::TenantAdmission;
pub use capture::{CaptureConfig, LiveTarget, SessionCaptureManager};
pub use engine::{
    DEFAULT_RETENTION, Engine, EngineBuilder, EngineConfig, EngineStore, LinkedTask,
    TaskCompletion, TracingAuditSink,
};
pub use events::{DEFAULT_STALL, EventSink, Events, Received, TenantEvents};
pub use handoff::{ActiveTakeover, Handoffs, PendingHandoff};
pub use jobs::{JobSlot, JobSlots};
pub use keys::{
    ENROLLMENT_TTL, EnrolledRunner, KEY_RECHECK, KeyWatch, Keys, MintedEnrollment, RunnerPresence,
};
pub use live_access::{LiveAttachment, LiveInputError, LiveRefusal, LiveSites};
pub use poster::{AgentPoster, PosterConfig};
pub use posts::{PostJournal, PostReply, Posted};
pub use stored_sessions::StoredSessions;
