//! In-memory [`FrameStore`], [`SiteStore`] and [`ProfileStore`]: for tests and embedding
//! without a database.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use abr_protocol::{
    FrameInfo, ProfileEntry, ProfileSignIn, RunScreenshots, ScreenshotsMode, SiteEntry,
};
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::CoreError;
use crate::guard::frames::{
    FrameRefused, FrameStore, MAX_FRAME_BYTES, MAX_FRAMES_PER_RUN, StoredFrame,
};
use crate::guard::profiles::{ProfileDecision, ProfileStore, put_sign_in};
use crate::guard::sites::SiteStore;

type RunKey = (String, String);

#[derive(Default)]
struct Frames {
    runs: HashMap<RunKey, RunScreenshots>,
    frames: HashMap<RunKey, Vec<StoredFrame>>,
    off: HashSet<String>,
}

/// Frames and the screenshots switch, in memory.
#[derive(Default)]
pub struct InMemoryFrameStore {
    inner: Mutex<Frames>,
}

impl std::fmt::Debug for InMemoryFrameStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryFrameStore").finish_non_exhaustive()
    }
}

impl InMemoryFrameStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Frames> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every frame stored, of every tenant and run (for tests that prove none exists).
    pub fn frame_count(&self) -> usize {
        self.lock().frames.values().map(Vec::len).sum()
    }

    /// Forgets the frames of every run whose last frame was taken before `before`; answers
    /// how many.
    pub(crate) fn forget_before(&self, before: time::OffsetDateTime) -> u64 {
        let mut forgotten = 0;
        self.lock().frames.retain(|_, frames| {
            let old = frames.iter().all(|f| f.info.taken_at < before);
            if old {
                forgotten += frames.len() as u64;
            }
            !old
        });
        forgotten
    }
}

fn key(tenant: &str, run_id: &str) -> RunKey {
    (tenant.to_owned(), run_id.to_owned())
}

#[async_trait]
impl FrameStore for InMemoryFrameStore {
    async fn begin_run(
        &self,
        tenant: &str,
        run_id: &str,
        setting: &RunScreenshots,
    ) -> Result<RunScreenshots, CoreError> {
        Ok(self
            .lock()
            .runs
            .entry(key(tenant, run_id))
            .or_insert_with(|| setting.clone())
            .clone())
    }

    async fn run_setting(
        &self,
        tenant: &str,
        run_id: &str,
    ) -> Result<Option<RunScreenshots>, CoreError> {
        Ok(self.lock().runs.get(&key(tenant, run_id)).cloned())
    }

    async fn put_frame(
        &self,
        tenant: &str,
        run_id: &str,
        mut frame: StoredFrame,
    ) -> Result<u32, FrameRefused> {
        let mut inner = self.lock();
        let k = key(tenant, run_id);
        match inner.runs.get(&k) {
            None => return Err(FrameRefused::UnknownRun),
            Some(s) if s.screenshots == ScreenshotsMode::Off => {
                return Err(FrameRefused::ScreenshotsOff);
            }
            Some(_) => {}
        }
        if frame.jpeg.len() > MAX_FRAME_BYTES {
            return Err(FrameRefused::TooLarge(MAX_FRAME_BYTES));
        }
        let frames = inner.frames.entry(k).or_default();
        let seq = u32::try_from(frames.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        if seq > MAX_FRAMES_PER_RUN {
            return Err(FrameRefused::TooMany(MAX_FRAMES_PER_RUN));
        }
        if let Some(same) = frame.info.same_as
            && !(1..seq).contains(&same)
        {
            return Err(FrameRefused::NotEarlier(same));
        }
        frame.info.seq = seq;
        frame.info.bytes = frame.jpeg.len();
        frames.push(frame);
        Ok(seq)
    }

    async fn frames(&self, tenant: &str, run_id: &str) -> Result<Vec<FrameInfo>, CoreError> {
        Ok(self
            .lock()
            .frames
            .get(&key(tenant, run_id))
            .map(|f| f.iter().map(|f| f.info.clone()).collect())
            .unwrap_or_default())
    }

    async fn frame(
        &self,
        tenant: &str,
        run_id: &str,
        seq: u32,
    ) -> Result<Option<StoredFrame>, CoreError> {
        Ok(self
            .lock()
            .frames
            .get(&key(tenant, run_id))
            .and_then(|f| f.iter().find(|f| f.info.seq == seq).cloned()))
    }

    async fn screenshots_enabled(&self, tenant: &str) -> Result<bool, CoreError> {
        Ok(!self.lock().off.contains(tenant))
    }

    async fn set_screenshots_enabled(&self, tenant: &str, enabled: bool) -> Result<(), CoreError> {
        let mut inner = self.lock();
        if enabled {
            inner.off.remove(tenant);
        } else {
            inner.off.insert(tenant.to_owned());
        }
        Ok(())
    }
}

/// Site decisions, in memory.
#[derive(Default)]
pub struct InMemorySiteStore {
    inner: Mutex<HashMap<String, BTreeMap<String, SiteEntry>>>,
}

impl std::fmt::Debug for InMemorySiteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemorySiteStore").finish_non_exhaustive()
    }
}

impl InMemorySiteStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeMap<String, SiteEntry>>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl SiteStore for InMemorySiteStore {
    async fn sites(&self, tenant: &str) -> Result<Vec<SiteEntry>, CoreError> {
        Ok(self
            .lock()
            .get(tenant)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn decide(&self, tenant: &str, entry: SiteEntry) -> Result<(), CoreError> {
        self.lock()
            .entry(tenant.to_owned())
            .or_default()
            .insert(entry.domain.clone(), entry);
        Ok(())
    }

    async fn remove(&self, tenant: &str, domain: &str) -> Result<bool, CoreError> {
        Ok(self
            .lock()
            .get_mut(tenant)
            .is_some_and(|m| m.remove(domain).is_some()))
    }
}

/// A tenant's named profiles, in memory.
#[derive(Default)]
pub struct InMemoryProfileStore {
    inner: Mutex<HashMap<String, BTreeMap<String, ProfileEntry>>>,
}

impl std::fmt::Debug for InMemoryProfileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryProfileStore")
            .finish_non_exhaustive()
    }
}

impl InMemoryProfileStore {
    fn with<T>(&self, tenant: &str, f: impl FnOnce(&mut BTreeMap<String, ProfileEntry>) -> T) -> T {
        let mut all = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(all.entry(tenant.to_owned()).or_default())
    }
}

#[async_trait]
impl ProfileStore for InMemoryProfileStore {
    async fn profiles(&self, tenant: &str) -> Result<Vec<ProfileEntry>, CoreError> {
        Ok(self.with(tenant, |m| m.values().cloned().collect()))
    }

    async fn profile(&self, tenant: &str, name: &str) -> Result<Option<ProfileEntry>, CoreError> {
        Ok(self.with(tenant, |m| m.get(name).cloned()))
    }

    async fn ask(&self, tenant: &str, name: &str, at: OffsetDateTime) -> Result<bool, CoreError> {
        Ok(self.with(tenant, |m| {
            let entry = m
                .entry(name.to_owned())
                .or_insert_with(|| ProfileEntry::new(name));
            let first = entry.asked_at.is_none() && entry.decision.is_none();
            if first {
                entry.asked_at = Some(at);
            }
            first
        }))
    }

    async fn decide(
        &self,
        tenant: &str,
        name: &str,
        decision: ProfileDecision,
    ) -> Result<(), CoreError> {
        self.with(tenant, |m| {
            decision.apply(
                m.entry(name.to_owned())
                    .or_insert_with(|| ProfileEntry::new(name)),
            );
        });
        Ok(())
    }

    async fn record_sign_in(
        &self,
        tenant: &str,
        name: &str,
        sign_in: ProfileSignIn,
    ) -> Result<(), CoreError> {
        self.with(tenant, |m| {
            put_sign_in(
                m.entry(name.to_owned())
                    .or_insert_with(|| ProfileEntry::new(name)),
                sign_in,
            );
        });
        Ok(())
    }
}
