//! Wire types of the Agent Browser Runtime (ABR).
//!
//! Everything an orchestrator exchanges with the runner, in any language: camelCase JSON,
//! documented field by field. This crate has no behaviour beyond serde and no dependency on
//! a browser, an HTTP stack or `abr-core`.
//!
//! - [`AgentSessionState`]: Playwright's `storageState` plus ABR metadata; unknown fields
//!   survive a round trip.
//! - [`PostRequest`] / [`AgentPostResult`]: the three-outcome post result.
//! - capture ([`CaptureStartRequest`], [`CaptureRef`], ...), probe, platforms, health and the
//!   single [`ErrorEnvelope`];
//! - every error code the runner answers with ([`codes`]);
//! - the live view's socket messages ([`LiveViewInput`], [`LiveViewEvent`]);
//! - the outbound relay's token and frames ([`relay`]);
//! - a platform declared as data ([`PlatformFile`], TOML or JSON).
//!
//! Secrets (cookie and localStorage values) are [`SecretValue`]s: they serialize, but never
//! print.

mod artifact;
mod browse;
mod capture;
pub mod codes;
mod error;
mod event;
mod guard;
mod list;
mod live;
pub mod platform_file;
mod policy;
mod post;
mod preview;
mod principal;
mod profiles;
pub mod relay;
pub mod schema;
mod secret;
mod session;
mod snapshot;
mod task;
mod timeline;
pub mod webhook;

pub use artifact::{ArtifactInfo, ArtifactList, ArtifactOrigin, ArtifactUpload, DownloadRecord};
pub use browse::{
    ActOutcome, ActResponse, ActionApproval, ActionApprovalState, ActionDecision, BrowseAction,
    BrowseClosed, BrowseOpened, BrowsePause, BrowseRequest, GuardNotice, InputRequest,
    ScrollDirection, SuppliedInput,
};
pub use capture::{
    CaptureCancelResponse, CaptureFinishRequest, CaptureFinishResponse, CaptureRef,
    CaptureStartRequest, CaptureStartResponse, CaptureState, CaptureStatus, ProbeRequest,
    ProbeResponse,
};
pub use error::{DropReason, ErrorBody, ErrorEnvelope, Health, Readiness, ScopeReport};
pub use event::RunEvent;
pub use guard::{
    BlockedAction, BlockedBy, CommitClass, CookieFact, FrameInfo, FramePoint, FramesResponse,
    Pause, PauseReason, RunScreenshots, ScreenshotsMode, ScreenshotsSetting, SiteDecision,
    SiteDecisionRequest, SiteEntry, SitesResponse, TakeoverAnswer, TakeoverEvent, TakeoverStarted,
    TakeoverState,
};
pub use list::{ListParams, Page, PendingApprovals, TakeoverSummary};
pub use live::{LiveModifiers, LivePointerAction, LivePointerButton, LiveViewEvent, LiveViewInput};
pub use platform_file::PlatformFile;
pub use policy::{
    GraphqlOperation, GuardPolicySpec, NetworkPolicySpec, PlatformInfo, PlatformPolicy,
    PlatformsResponse, ReadEndpointSpec, RedactionSpec, SessionScopeSpec,
};
pub use post::{
    AgentPostResult, FailureStage, MediaAttachment, PostContent, PostOutcome, PostRecord,
    PostRequest, PostState, Timing, Verification, VerificationEvidence, VerificationMethod,
};
pub use preview::{ApprovalPreview, PreviewBox};
pub use principal::{
    CreatedKey, KeyInfo, KeyRequest, KeysResponse, PrincipalRef, Role, UnknownRole,
};
pub use profiles::{ProfileConsentRequest, ProfileEntry, ProfileSignIn, ProfilesResponse};
pub use secret::SecretValue;
pub use session::{
    AgentSessionState, Cookie, LocalStorageItem, OriginState, SESSION_FORMAT_VERSION, SameSite,
    SessionMetadata, StoreSessionRequest, StoredSession, StoredSessionInfo,
};
pub use snapshot::{
    DEFAULT_SNAPSHOT_ELEMENTS, DEFAULT_SNAPSHOT_TEXT, MAX_SNAPSHOT_ELEMENTS, MAX_SNAPSHOT_TEXT,
    Snapshot, SnapshotElement, SnapshotHeading, SnapshotPage, SnapshotQuery,
};
pub use task::{
    Approval, ApprovalLink, ApproveRequest, AssertNotPostedRequest, DomCheck, Extraction,
    HandoffOptions, InputShown, OwnerAssertion, PlanStep, RecheckAnswer, RecheckResult,
    RejectRequest, Risk, Selector, SelectorSpec, StepAction, StepPlan, StepResult, StepTarget,
    TaskAccount, TaskRecord, TaskRequest, TaskState, TaskVerification,
};
pub use time::OffsetDateTime;
pub use timeline::{RunKind, RunTimeline, TimelineEntry, TimelineEvent};
