//! [`Artifacts`]: the files a tenant keeps for its runs. An upload is checked
//! ([`abr_core::artifact::describe`]: its name, size and sniffed type) and kept sealed under
//! the tenant's quota; a plan's `upload` step names one, checked when the task is created
//! and read when it runs (never a file of the runner's disk).

use std::sync::Arc;

use abr_core::artifact::{ArtifactRules, ID_PREFIX, describe};
use abr_core::clock::Clock;
use abr_core::guard::{CaughtDownload, DownloadLimits, DownloadRefused};
use abr_core::plan::FilledStep;
use abr_core::step_runner::{BrowserAction, UploadFile};
use abr_core::store::{ArtifactPut, ArtifactStore};
use abr_protocol::{
    ArtifactInfo, ArtifactList, ArtifactOrigin, DownloadRecord, StepAction, StepPlan, codes,
};

use crate::error::EngineError;
use crate::ledger::record_id;

/// A tenant's artifacts, under the runner's rules.
#[derive(Clone)]
pub(crate) struct Artifacts {
    store: Arc<dyn ArtifactStore>,
    rules: ArtifactRules,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Artifacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Artifacts")
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl Artifacts {
    pub(crate) fn new(
        store: Arc<dyn ArtifactStore>,
        rules: ArtifactRules,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            rules,
            clock,
        }
    }

    /// Keeps `bytes` named `name` for `tenant`.
    ///
    /// # Errors
    /// [`EngineError::ArtifactRefused`] (name, empty, size, type),
    /// [`EngineError::ArtifactQuota`], a store failure.
    pub(crate) async fn put(
        &self,
        tenant: &str,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<ArtifactInfo, EngineError> {
        let now = self.clock.now();
        self.keep(tenant, name, bytes, ArtifactOrigin::Upload, None, now)
            .await
    }

    /// Describes `bytes` under the rules ([`describe`]) and stores them under the tenant's
    /// quota: the one way an artifact is kept, uploaded or downloaded.
    async fn keep(
        &self,
        tenant: &str,
        name: &str,
        bytes: Vec<u8>,
        origin: ArtifactOrigin,
        run_id: Option<&str>,
        now: time::OffsetDateTime,
    ) -> Result<ArtifactInfo, EngineError> {
        let mut info = describe(
            record_id(ID_PREFIX)?,
            name,
            &bytes,
            origin,
            &self.rules,
            now,
        )?;
        info.run_id = run_id.map(str::to_owned);
        match self
            .store
            .put_artifact(tenant, &info, bytes, self.rules.quota)
            .await?
        {
            ArtifactPut::Kept => Ok(info),
            ArtifactPut::OverQuota => Err(EngineError::ArtifactQuota {
                max_count: self.rules.quota.max_count,
                max_bytes: self.rules.quota.max_bytes,
            }),
        }
    }

    /// What a run's page may download.
    pub(crate) fn download_limits(&self) -> DownloadLimits {
        DownloadLimits {
            max_bytes: self.rules.max_bytes,
            max_count: self.rules.run_max_count,
        }
    }

    /// Keeps a file a run's page downloaded as an artifact of `tenant` (its type sniffed
    /// and checked, within the quota), or says why not: the record's entry either way.
    pub(crate) async fn keep_download(
        &self,
        tenant: &str,
        run_id: &str,
        step: Option<usize>,
        caught: CaughtDownload,
    ) -> DownloadRecord {
        let mut record = DownloadRecord {
            at: self.clock.now(),
            step,
            name: caught.name.clone(),
            size: caught.size,
            artifact: None,
            error: None,
        };
        let bytes = match caught.bytes {
            Ok(bytes) => bytes,
            Err(DownloadRefused::TooLarge) => {
                record.error = Some(codes::ARTIFACT_TOO_LARGE.body(format!(
                    "the download is over the cap of {} bytes: not kept",
                    self.rules.max_bytes
                )));
                return record;
            }
            Err(DownloadRefused::Unread) => {
                record.error = Some(abr_protocol::ErrorBody::new(
                    abr_core::codes::STEP_REJECTED,
                    "the download's bytes could not be read from the browser: not kept",
                ));
                return record;
            }
            Err(DownloadRefused::TooMany) => {
                record.error = Some(codes::ARTIFACT_QUOTA.body(format!(
                    "the run downloaded more than {} files: not kept",
                    self.rules.run_max_count
                )));
                return record;
            }
        };
        let kept = self
            .keep(
                tenant,
                &caught.name,
                bytes,
                ArtifactOrigin::Download,
                Some(run_id),
                record.at,
            )
            .await;
        match kept {
            Ok(info) => record.artifact = Some(info),
            Err(e) => record.error = Some(e.to_body()),
        }
        record
    }

    /// One of the tenant's artifacts' description.
    ///
    /// # Errors
    /// [`EngineError::ArtifactNotFound`] (also another tenant's id), a store failure.
    pub(crate) async fn info(&self, tenant: &str, id: &str) -> Result<ArtifactInfo, EngineError> {
        self.store
            .artifact_info(tenant, id)
            .await?
            .ok_or_else(|| EngineError::ArtifactNotFound(id.to_owned()))
    }

    /// One of the tenant's artifacts, with its bytes.
    ///
    /// # Errors
    /// As [`Self::info`].
    pub(crate) async fn content(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<(ArtifactInfo, Vec<u8>), EngineError> {
        self.store
            .artifact(tenant, id)
            .await?
            .ok_or_else(|| EngineError::ArtifactNotFound(id.to_owned()))
    }

    /// The tenant's artifacts, newest first, and their total size.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) async fn list(&self, tenant: &str) -> Result<ArtifactList, EngineError> {
        let artifacts = self.store.artifacts(tenant).await?;
        let total_bytes = abr_core::store::usage_of(&artifacts).bytes;
        Ok(ArtifactList {
            artifacts,
            total_bytes,
        })
    }

    /// Forgets one of the tenant's artifacts.
    ///
    /// # Errors
    /// As [`Self::info`].
    pub(crate) async fn delete(&self, tenant: &str, id: &str) -> Result<(), EngineError> {
        if self.store.delete_artifact(tenant, id).await? {
            Ok(())
        } else {
            Err(EngineError::ArtifactNotFound(id.to_owned()))
        }
    }

    /// Checks that every artifact `plan`'s `upload` steps name is the tenant's.
    ///
    /// # Errors
    /// [`EngineError::ArtifactNotFound`] naming the first that is not; a store failure.
    pub(crate) async fn check_plan(
        &self,
        tenant: &str,
        plan: &StepPlan,
    ) -> Result<(), EngineError> {
        for step in &plan.steps {
            if let StepAction::Upload { artifact, .. } = &step.action {
                self.info(tenant, artifact).await?;
            }
        }
        Ok(())
    }

    /// Sets the files of `steps`' uploads from the tenant's artifacts they name.
    ///
    /// # Errors
    /// [`EngineError::ArtifactNotFound`] for one deleted or expired since the task was
    /// created; a store failure.
    pub(crate) async fn fill(
        &self,
        tenant: &str,
        steps: &mut [FilledStep],
    ) -> Result<(), EngineError> {
        for step in steps {
            let (Some(id), BrowserAction::Upload { files, .. }) =
                (&step.artifact, &mut step.action)
            else {
                continue;
            };
            *files = self.files(tenant, id).await?;
        }
        Ok(())
    }

    /// The files an upload of the tenant's artifact `id` sets: that one.
    ///
    /// # Errors
    /// As [`Self::content`].
    pub(crate) async fn files(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Vec<UploadFile>, EngineError> {
        let (info, bytes) = self.content(tenant, id).await?;
        Ok(vec![UploadFile {
            name: info.name,
            mime_type: info.media_type,
            bytes,
        }])
    }
}

/// A plan's uploads with no artifact store to read them from: the first artifact named is
/// not found.
pub(crate) fn none_kept(plan: &StepPlan) -> Result<(), EngineError> {
    match plan.steps.iter().find_map(|step| match &step.action {
        StepAction::Upload { artifact, .. } => Some(artifact),
        _ => None,
    }) {
        Some(artifact) => Err(EngineError::ArtifactNotFound(artifact.clone())),
        None => Ok(()),
    }
}
