//! [`ArtifactStore`]: the files a tenant keeps for its runs (uploads for a file input);
//! [`InMemoryArtifacts`].

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use abr_protocol::ArtifactInfo;
use async_trait::async_trait;
use time::OffsetDateTime;

use crate::artifact::ArtifactQuota;
use crate::error::CoreError;

/// What [`ArtifactStore::put_artifact`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactPut {
    /// Kept.
    Kept,
    /// Not kept: the tenant would hold more than its quota.
    OverQuota,
}

/// What a tenant holds: files and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArtifactUsage {
    /// Files.
    pub count: u64,
    /// Bytes, all files together.
    pub bytes: u64,
}

/// Where artifacts live.
///
/// # Contract
/// - An artifact is found only with its tenant: another tenant's id is `None` (and deleting
///   it is `false`), exactly like a missing one.
/// - [`put_artifact`](Self::put_artifact) keeps the artifact and its bytes only when the
///   tenant, with it, holds at most `quota` (files and bytes); the check and the write are
///   one step, so two concurrent puts cannot both pass the last slot. An id is kept once.
/// - A durable store seals the bytes at rest, bound to the tenant and the id (they are a
///   user's documents), and its put is durable when it returns.
/// - Listing is newest first.
/// - [`expire_artifacts`](Self::expire_artifacts) forgets, for every tenant, the artifacts
///   kept before `before`, and says how many.
#[async_trait]
pub trait ArtifactStore: Send + Sync + 'static {
    /// Keeps `info` and `bytes` for `tenant`, unless that would put it over `quota`.
    async fn put_artifact(
        &self,
        tenant: &str,
        info: &ArtifactInfo,
        bytes: Vec<u8>,
        quota: ArtifactQuota,
    ) -> Result<ArtifactPut, CoreError>;

    /// An artifact's description, if the tenant has it.
    async fn artifact_info(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<ArtifactInfo>, CoreError>;

    /// An artifact's description and bytes, if the tenant has it.
    async fn artifact(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<(ArtifactInfo, Vec<u8>)>, CoreError>;

    /// The tenant's artifacts, newest first.
    async fn artifacts(&self, tenant: &str) -> Result<Vec<ArtifactInfo>, CoreError>;

    /// Forgets one of the tenant's artifacts: `false` when it had none with this id.
    async fn delete_artifact(&self, tenant: &str, id: &str) -> Result<bool, CoreError>;

    /// Forgets every tenant's artifacts kept before `before`: how many.
    async fn expire_artifacts(&self, before: OffsetDateTime) -> Result<u64, CoreError>;
}

/// The usage `infos` add up to.
pub fn usage_of<'a>(infos: impl IntoIterator<Item = &'a ArtifactInfo>) -> ArtifactUsage {
    infos
        .into_iter()
        .fold(ArtifactUsage::default(), |usage, info| ArtifactUsage {
            count: usage.count + 1,
            bytes: usage.bytes.saturating_add(info.size),
        })
}

/// Whether a tenant holding `usage` may add a file of `size` bytes under `quota`.
pub fn fits(usage: ArtifactUsage, size: u64, quota: ArtifactQuota) -> bool {
    usage.count < quota.max_count && usage.bytes.saturating_add(size) <= quota.max_bytes
}

type Kept = HashMap<(String, String), (ArtifactInfo, Vec<u8>)>;

/// Process-local artifacts (tests, single-process embedders).
#[derive(Debug, Default)]
pub struct InMemoryArtifacts {
    kept: Mutex<Kept>,
}

impl InMemoryArtifacts {
    /// None kept yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl ArtifactStore for InMemoryArtifacts {
    async fn put_artifact(
        &self,
        tenant: &str,
        info: &ArtifactInfo,
        bytes: Vec<u8>,
        quota: ArtifactQuota,
    ) -> Result<ArtifactPut, CoreError> {
        let mut kept = self.lock();
        let key = (tenant.to_owned(), info.id.clone());
        if kept.contains_key(&key) {
            return Err(CoreError::InvalidInput(
                "an artifact with this id is kept already".to_owned(),
            ));
        }
        let usage = usage_of(
            kept.iter()
                .filter(|((t, _), _)| t == tenant)
                .map(|(_, (i, _))| i),
        );
        if !fits(usage, info.size, quota) {
            return Ok(ArtifactPut::OverQuota);
        }
        kept.insert(key, (info.clone(), bytes));
        Ok(ArtifactPut::Kept)
    }

    async fn artifact_info(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<ArtifactInfo>, CoreError> {
        Ok(self
            .lock()
            .get(&(tenant.to_owned(), id.to_owned()))
            .map(|(info, _)| info.clone()))
    }

    async fn artifact(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<(ArtifactInfo, Vec<u8>)>, CoreError> {
        Ok(self
            .lock()
            .get(&(tenant.to_owned(), id.to_owned()))
            .cloned())
    }

    async fn artifacts(&self, tenant: &str) -> Result<Vec<ArtifactInfo>, CoreError> {
        let mut infos: Vec<ArtifactInfo> = self
            .lock()
            .iter()
            .filter(|((t, _), _)| t == tenant)
            .map(|(_, (info, _))| info.clone())
            .collect();
        infos.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        Ok(infos)
    }

    async fn delete_artifact(&self, tenant: &str, id: &str) -> Result<bool, CoreError> {
        Ok(self
            .lock()
            .remove(&(tenant.to_owned(), id.to_owned()))
            .is_some())
    }

    async fn expire_artifacts(&self, before: OffsetDateTime) -> Result<u64, CoreError> {
        let mut kept = self.lock();
        let was = kept.len();
        kept.retain(|_, (info, _)| info.created_at >= before);
        Ok((was - kept.len()) as u64)
    }
}
