//! Guard rails: what a run may commit, where it may go, when it stops for a person, and
//! the evidence it keeps.
//!
//! - [`commit_class`]: the one rule that decides whether an action commits, from the action
//!   and the [`ElementFacts`] of its element ([`committing_verb`] for labels).
//! - [`RunGuard`]: read-only (from definitions only) and dry runs, refusing through that
//!   rule with a typed [`BlockedAction`](abr_protocol::BlockedAction).
//! - [`detect_pause`]: the handoff a page calls for, from its [`PageSignals`].
//! - [`SitePolicy`] / [`SiteStore`]: a tenant's allow and deny lists and durable consent.
//! - [`ProfileStore`] / [`check_sign_in`]: named browser profiles, the owner's consent to
//!   each, and the sign-in check before a committing press.
//! - [`FrameRecorder`] / [`FrameStore`]: redacted replay frames, bounded, and refused for a
//!   run recorded with screenshots off.
//! - [`classify`] / [`RequestGate`]: the network rule below the page: in a read-only or dry
//!   run no write leaves the browser; in every run a write to the run's own sites commits.
//! - [`PageProbe`]: what the browser provides for all of it, without acting on the page.

pub(crate) mod commit;
pub(crate) mod downloads;
pub(crate) mod element;
pub(crate) mod frames;
pub(crate) mod memory;
pub(crate) mod network;
pub(crate) mod pause;
pub(crate) mod probe;
pub(crate) mod profiles;
pub(crate) mod redaction;
pub(crate) mod run_guard;
pub(crate) mod sites;
pub(crate) mod verbs;

pub use commit::{
    CommitRules, Committing, activation_key, commit_class, is_committing, types_into_write_form,
};
pub use downloads::{CaughtDownload, DownloadLimits, DownloadRefused, download_name, is_download};
pub use element::ElementFacts;
pub use frames::{
    FrameRecorder, FrameRefused, FrameSource, FrameStore, MAX_FRAME_BYTES, MAX_FRAMES_PER_RUN,
    PlatformFrames, RunFrames, RunFramesSource, StoredFrame, frame_url, run_screenshots,
};
pub use memory::{InMemoryFrameStore, InMemoryProfileStore, InMemorySiteStore};
pub use network::{
    Endpoint, MAX_ENDPOINTS, MAX_GRAPHQL_BODY, NetworkRuleError, NetworkRules, OutgoingRequest,
    OwnSites, RequestGate, RequestKind, classify, graphql_queries_only, host_of, is_safe_method,
};
pub use pause::{PauseRules, detect_pause};
pub use probe::{
    ElementBox, FormFacts, FrameError, PageProbe, PageSignals, REDACTED, Reach, RedactedFrame,
    SiteFilter, SnapshotRequest, jpeg_size,
};
pub use profiles::{
    MAX_PROFILE_NAME, ProfileDecision, ProfileStore, SignedOut, check_sign_in, profile_folder,
    profile_name, put_sign_in, refreshed_sign_in, sign_in_site, signed_in_cookies,
};
pub use redaction::{MAX_REDACTION_RULE_LEN, MAX_REDACTION_RULES, PageRedaction, RedactionError};
pub use run_guard::{ReadOnlySource, RunGuard};
pub use sites::{SitePolicy, SiteStore, SiteVerdict, site_name};
pub use verbs::{committing_verb, harmless_name};
