//! Replay frames: taken by the runner at fixed points, redacted, bounded, stored with the
//! run, and refused for a run recorded with screenshots off.

use std::sync::Arc;
use std::time::Duration;

use abr_protocol::{FrameInfo, FramePoint, RunScreenshots, ScreenshotsMode};
use async_trait::async_trait;

use crate::clock::Clock;
use crate::error::CoreError;
use crate::guard::probe::{PageProbe, RedactedFrame};
use crate::guard::redaction::PageRedaction;

/// Most frames one run keeps.
pub const MAX_FRAMES_PER_RUN: u32 = 60;
/// Largest frame kept, in bytes (a viewport JPEG is usually 30 to 150 KB).
pub const MAX_FRAME_BYTES: usize = 512 * 1024;

/// A frame to store: its metadata and its JPEG.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredFrame {
    /// Metadata (never page text or values).
    pub info: FrameInfo,
    /// The JPEG.
    pub jpeg: Vec<u8>,
}

impl std::fmt::Debug for StoredFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredFrame")
            .field("info", &self.info)
            .field("bytes", &self.jpeg.len())
            .finish()
    }
}

/// Why a frame was not stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameRefused {
    /// The run recorded screenshots off: no frame, at any layer.
    #[error("screenshots were off for this run")]
    ScreenshotsOff,
    /// The run already has its maximum of frames.
    #[error("the run already has its {0} frames")]
    TooMany(u32),
    /// The frame is over the size cap.
    #[error("the frame is over {0} bytes")]
    TooLarge(usize),
    /// The run was never registered (no screenshots setting recorded).
    #[error("the run has no recorded screenshots setting")]
    UnknownRun,
    /// The frame says it is the same as one that is not an earlier frame of its run
    /// ([`FrameInfo::same_as`]).
    #[error("a frame can only be the same as an earlier frame of its run, not {0}")]
    NotEarlier(u32),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] CoreError),
}

/// Durable replay frames and the screenshots switch.
///
/// # Contract
/// - `begin_run` records the setting a run starts with, once: a second call for the same
///   run keeps the first value (switching mid-run changes nothing for a run going).
/// - `put_frame` refuses ([`FrameRefused`]) a frame for a run recorded off, for an unknown
///   run, beyond [`MAX_FRAMES_PER_RUN`] (the 61st is not stored) or over
///   [`MAX_FRAME_BYTES`], or one whose [`FrameInfo::same_as`] is not an earlier frame of
///   its run; the store enforces this itself, whatever the caller checked.
/// - Reads are per tenant: another tenant's run or frame is `None`, exactly like a missing
///   one.
/// - The tenant switch is per tenant; platforms can be switched off too.
#[async_trait]
pub trait FrameStore: Send + Sync + 'static {
    /// Records the screenshots setting of a run as it starts.
    async fn begin_run(
        &self,
        tenant: &str,
        run_id: &str,
        setting: &RunScreenshots,
    ) -> Result<RunScreenshots, CoreError>;
    /// The setting a run recorded.
    async fn run_setting(
        &self,
        tenant: &str,
        run_id: &str,
    ) -> Result<Option<RunScreenshots>, CoreError>;
    /// Stores a frame; its `seq` is assigned by the store (1-based) and returned.
    async fn put_frame(
        &self,
        tenant: &str,
        run_id: &str,
        frame: StoredFrame,
    ) -> Result<u32, FrameRefused>;
    /// The frames of a run, metadata only, in order.
    async fn frames(&self, tenant: &str, run_id: &str) -> Result<Vec<FrameInfo>, CoreError>;
    /// One frame.
    async fn frame(
        &self,
        tenant: &str,
        run_id: &str,
        seq: u32,
    ) -> Result<Option<StoredFrame>, CoreError>;
    /// Whether the tenant's runs take frames (default: yes).
    async fn screenshots_enabled(&self, tenant: &str) -> Result<bool, CoreError>;
    /// Switches the tenant's frames on or off.
    async fn set_screenshots_enabled(&self, tenant: &str, enabled: bool) -> Result<(), CoreError>;
}

/// What a run's platform says about its frames: whether it takes them, and what it adds to
/// their redaction.
#[derive(Debug, Clone)]
pub struct PlatformFrames {
    /// Whether runs on the platform take frames (the tenant's switch can still turn them off).
    pub enabled: bool,
    /// What the platform adds to the built-in redaction.
    pub redaction: Arc<PageRedaction>,
}

impl PlatformFrames {
    /// Frames on, redacted by the built-in rule alone (a run on no platform).
    pub fn on() -> Self {
        Self {
            enabled: true,
            redaction: Arc::default(),
        }
    }

    /// These frames, off when `enabled` is false.
    #[must_use]
    pub fn and(mut self, enabled: bool) -> Self {
        self.enabled &= enabled;
        self
    }
}

/// What a run decides when it starts: frames on, or off and why.
pub fn run_screenshots(tenant_enabled: bool, platform_enabled: bool) -> RunScreenshots {
    if !tenant_enabled {
        RunScreenshots {
            screenshots: ScreenshotsMode::Off,
            reason: Some("tenant_setting".into()),
        }
    } else if !platform_enabled {
        RunScreenshots {
            screenshots: ScreenshotsMode::Off,
            reason: Some("platform_setting".into()),
        }
    } else {
        RunScreenshots {
            screenshots: ScreenshotsMode::On,
            reason: None,
        }
    }
}

/// The URL as metadata keeps it: scheme, host, port and path; no query, fragment or
/// credentials.
pub fn frame_url(raw: &str) -> (String, String) {
    match url::Url::parse(raw) {
        Ok(mut url) => {
            url.set_query(None);
            url.set_fragment(None);
            let _ = url.set_username("");
            let _ = url.set_password(None);
            let domain = url.host_str().unwrap_or_default().to_owned();
            (url.to_string(), domain)
        }
        Err(_) => (String::new(), String::new()),
    }
}

/// Takes a run's frames: off means it never asks the browser for one; on, it asks at most
/// [`MAX_FRAMES_PER_RUN`] times and stores what the browser confirmed redacted.
#[derive(Clone)]
pub struct FrameRecorder {
    store: Arc<dyn FrameStore>,
    clock: Arc<dyn Clock>,
    tenant: String,
    run_id: String,
    on: bool,
    redaction: Arc<PageRedaction>,
    timeout: Duration,
    taken: Arc<std::sync::atomic::AtomicU32>,
    /// The last frame taken, while the page's watch can tell whether it still shows the page.
    last: Arc<std::sync::Mutex<Option<Kept>>>,
}

/// A frame kept for [`FrameRecorder::capture_final`].
struct Kept {
    seq: u32,
    url: String,
    domain: String,
    jpeg: Vec<u8>,
    mark: String,
}

impl std::fmt::Debug for FrameRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameRecorder")
            .field("run_id", &self.run_id)
            .field("on", &self.on)
            .finish_non_exhaustive()
    }
}

impl FrameRecorder {
    /// Starts the recorder of a run: records its setting (the tenant's switch and the
    /// platform's, read once now) and answers it.
    ///
    /// # Errors
    /// The store's.
    pub async fn begin(
        store: Arc<dyn FrameStore>,
        clock: Arc<dyn Clock>,
        tenant: &str,
        run_id: &str,
        platform: &PlatformFrames,
    ) -> Result<(Self, RunScreenshots), CoreError> {
        let tenant_enabled = store.screenshots_enabled(tenant).await?;
        let wanted = run_screenshots(tenant_enabled, platform.enabled);
        let setting = store.begin_run(tenant, run_id, &wanted).await?;
        let recorder = Self {
            store,
            clock,
            tenant: tenant.to_owned(),
            run_id: run_id.to_owned(),
            on: setting.screenshots == ScreenshotsMode::On,
            redaction: Arc::clone(&platform.redaction),
            timeout: Duration::from_secs(10),
            // Run ids are new when a run starts (a retry is another run); the store still
            // counts for itself.
            taken: Arc::new(std::sync::atomic::AtomicU32::new(0)),
            last: Arc::default(),
        };
        Ok((recorder, setting))
    }

    /// Whether this run takes frames.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Takes and stores one frame at `point` after an action of kind `action`. Best
    /// effort: a frame that cannot be redacted, is refused or fails is simply not kept (the
    /// run's outcome never depends on its evidence). Answers the stored sequence number.
    pub async fn capture<P: PageProbe + ?Sized>(
        &self,
        page: &P,
        point: FramePoint,
        action: &str,
    ) -> Option<u32> {
        self.take(page, point, action, false).await
    }

    /// [`capture`](Self::capture) for the frame that ends a run, when nothing acted on the
    /// page since the last frame was taken: if the page provably still looks as it did then
    /// ([`PageProbe::unchanged_since`]), that frame's image is stored again as this one
    /// ([`FrameInfo::same_as`]): one read of the page instead of a capture (a capture waits
    /// for the compositor's next frame, about 30 ms). Otherwise a frame is taken.
    pub async fn capture_final<P: PageProbe + ?Sized>(
        &self,
        page: &P,
        point: FramePoint,
        action: &str,
    ) -> Option<u32> {
        self.take(page, point, action, true).await
    }

    fn last(&self) -> std::sync::MutexGuard<'_, Option<Kept>> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn take<P: PageProbe + ?Sized>(
        &self,
        page: &P,
        point: FramePoint,
        action: &str,
        may_keep_last: bool,
    ) -> Option<u32> {
        use std::sync::atomic::Ordering;
        if !self.on || self.taken.load(Ordering::SeqCst) >= MAX_FRAMES_PER_RUN {
            return None;
        }
        let last = if may_keep_last {
            self.last().take()
        } else {
            None
        };
        let kept = match last {
            Some(last) if page.unchanged_since(&last.mark, self.timeout).await => Some(last),
            _ => None,
        };
        *self.last() = None;
        // The image, where it shows, the frame it repeats, and the watch's mark of it.
        let (jpeg, url, domain, same_as, mark) = match kept {
            Some(last) => (
                last.jpeg,
                last.url,
                last.domain,
                Some(last.seq),
                Some(last.mark),
            ),
            None => {
                let frame: RedactedFrame = match page
                    .redacted_frame(MAX_FRAME_BYTES, &self.redaction, self.timeout)
                    .await
                {
                    Ok(frame) => frame,
                    Err(e) => {
                        tracing::debug!(run_id = %self.run_id, ?point, error = %e, "no frame");
                        return None;
                    }
                };
                let (url, domain) = frame_url(&frame.url);
                (frame.jpeg, url, domain, None, frame.mark)
            }
        };
        let info = FrameInfo {
            seq: 0,
            point,
            url: url.clone(),
            domain: domain.clone(),
            action: action.to_owned(),
            bytes: jpeg.len(),
            taken_at: self.clock.now(),
            same_as,
        };
        let again = mark.map(|mark| (mark, jpeg.clone()));
        let seq = match self
            .store
            .put_frame(&self.tenant, &self.run_id, StoredFrame { info, jpeg })
            .await
        {
            Ok(seq) => {
                self.taken.fetch_add(1, Ordering::SeqCst);
                tracing::debug!(run_id = %self.run_id, seq, ?point, "screenshot.captured");
                seq
            }
            Err(e) => {
                tracing::debug!(run_id = %self.run_id, ?point, error = %e, "frame refused");
                return None;
            }
        };
        if let Some((mark, jpeg)) = again {
            *self.last() = Some(Kept {
                // A frame kept again points at the one that was captured.
                seq: same_as.unwrap_or(seq),
                url,
                domain,
                jpeg,
                mark,
            });
        }
        Some(seq)
    }
}

/// A run's frames, for code generic over a context it does not itself require to be a
/// [`PageProbe`] (the poster): implemented by [`FrameRecorder`] for every probe.
#[async_trait]
pub trait RunFrames<C>: Send + Sync + 'static {
    /// Takes and stores one frame of `context` (best effort, as [`FrameRecorder::capture`]).
    async fn capture(&self, context: &C, point: FramePoint, action: &str);
}

#[async_trait]
impl<C: PageProbe> RunFrames<C> for FrameRecorder {
    async fn capture(&self, context: &C, point: FramePoint, action: &str) {
        FrameRecorder::capture(self, context, point, action).await;
    }
}

/// Starts the frames of runs: the runner's frame store and clock.
#[async_trait]
pub trait RunFramesSource<C>: Send + Sync + 'static {
    /// The recorder of run `run_id` of `tenant` (`None` when the store fails: the run goes
    /// on without evidence).
    async fn begin(
        &self,
        tenant: &str,
        run_id: &str,
        platform: &PlatformFrames,
    ) -> Option<Arc<dyn RunFrames<C>>>;
}

/// [`RunFramesSource`] on a [`FrameStore`].
#[derive(Clone)]
pub struct FrameSource {
    store: Arc<dyn FrameStore>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for FrameSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameSource").finish_non_exhaustive()
    }
}

impl FrameSource {
    /// Frames kept in `store`, timed by `clock`.
    pub fn new(store: Arc<dyn FrameStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }
}

#[async_trait]
impl<C: PageProbe> RunFramesSource<C> for FrameSource {
    async fn begin(
        &self,
        tenant: &str,
        run_id: &str,
        platform: &PlatformFrames,
    ) -> Option<Arc<dyn RunFrames<C>>> {
        match FrameRecorder::begin(
            Arc::clone(&self.store),
            Arc::clone(&self.clock),
            tenant,
            run_id,
            platform,
        )
        .await
        {
            Ok((recorder, _)) => Some(Arc::new(recorder)),
            Err(e) => {
                tracing::warn!(run_id, error = %e, "no replay frames for this run");
                None
            }
        }
    }
}
