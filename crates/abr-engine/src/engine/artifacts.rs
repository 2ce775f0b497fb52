//! The engine's artifact calls: keep, describe, read, list and delete a tenant's files,
//! each for the actor's tenant only.

use abr_core::audit::{AuditAction, AuditEvent, AuditOutcome};
use abr_core::context::TaskContext;
use abr_core::principal::{Actor, Right};
use abr_protocol::{ArtifactInfo, ArtifactList};

use crate::engine::Engine;
use crate::error::EngineError;

impl<C: TaskContext> Engine<C> {
    /// Keeps `bytes` named `name` as an artifact of the actor's tenant, for a plan's
    /// `upload` step: its type sniffed, its size and the tenant's quota capped, sealed at
    /// rest. Audited with its id (never its name or bytes).
    ///
    /// # Errors
    /// [`abr_core::CoreError::Forbidden`] unless the actor may propose;
    /// [`EngineError::ArtifactRefused`]; [`EngineError::ArtifactQuota`]; a store failure.
    pub async fn put_artifact(
        &self,
        actor: &Actor,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<ArtifactInfo, EngineError> {
        actor.require(Right::Propose)?;
        let info = self.artifacts.put(actor.tenant(), name, bytes).await?;
        self.audit_artifact(actor, AuditAction::ArtifactKept, &info.id);
        Ok(info)
    }

    /// One of the actor's tenant's artifacts' description.
    ///
    /// # Errors
    /// [`abr_core::CoreError::Forbidden`] unless the actor may read;
    /// [`EngineError::ArtifactNotFound`] (also another tenant's id); a store failure.
    pub async fn artifact(&self, actor: &Actor, id: &str) -> Result<ArtifactInfo, EngineError> {
        actor.require(Right::Read)?;
        self.artifacts.info(actor.tenant(), id).await
    }

    /// One of the actor's tenant's artifacts with its bytes.
    ///
    /// # Errors
    /// As [`Self::artifact`].
    pub async fn artifact_content(
        &self,
        actor: &Actor,
        id: &str,
    ) -> Result<(ArtifactInfo, Vec<u8>), EngineError> {
        actor.require(Right::Read)?;
        self.artifacts.content(actor.tenant(), id).await
    }

    /// The actor's tenant's artifacts, newest first.
    ///
    /// # Errors
    /// [`abr_core::CoreError::Forbidden`] unless the actor may read; a store failure.
    pub async fn artifacts(&self, actor: &Actor) -> Result<ArtifactList, EngineError> {
        actor.require(Right::Read)?;
        self.artifacts.list(actor.tenant()).await
    }

    /// Forgets one of the actor's tenant's artifacts. A task created with it and not run
    /// yet ends `failed` (`artifact_not_found`, nothing done) when it runs.
    ///
    /// # Errors
    /// [`abr_core::CoreError::Forbidden`] unless the actor may propose;
    /// [`EngineError::ArtifactNotFound`]; a store failure.
    pub async fn delete_artifact(&self, actor: &Actor, id: &str) -> Result<(), EngineError> {
        actor.require(Right::Propose)?;
        self.artifacts.delete(actor.tenant(), id).await?;
        self.audit_artifact(actor, AuditAction::ArtifactDeleted, id);
        Ok(())
    }

    fn audit_artifact(&self, actor: &Actor, action: AuditAction, id: &str) {
        let mut event = AuditEvent::new(self.clock.now(), action, AuditOutcome::Ok, "");
        event.workspace_id = Some(actor.tenant().to_owned());
        let who = actor.principal();
        event.actor = Some(format!("{} ({})", who.key_id(), who.role()));
        event.artifact_id = Some(id.to_owned());
        self.audit.emit(event);
    }
}
