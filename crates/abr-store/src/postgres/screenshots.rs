//! A task's screenshots ([`ScreenshotStore`]) on PostgreSQL, sealed like frames.

use abr_core::CoreError;
use abr_core::store::ScreenshotStore;
use async_trait::async_trait;

use crate::codec::screenshot_aad;
use crate::{PgStore, StoreError};

#[async_trait]
impl ScreenshotStore for PgStore {
    /// Sealed like frames, bound to its tenant, task and name; without a key only where
    /// plaintext is allowed.
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        png: Vec<u8>,
    ) -> Result<(), CoreError> {
        let aad = screenshot_aad(tenant, task_id, name);
        let (encrypted, sealed) = self.sealer.seal_payload(png, &aad, true)?;
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO screenshots (tenant_id, task_id, name, png, encrypted)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (tenant_id, task_id, name) DO UPDATE SET png = $4, encrypted = $5",
                &[&tenant, &task_id, &name, &sealed, &encrypted],
            )
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }

    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT png, encrypted FROM screenshots
                 WHERE tenant_id = $1 AND task_id = $2 AND name = $3",
                &[&tenant, &task_id, &name],
            )
            .await
            .map_err(StoreError::from)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let payload: Vec<u8> = row.try_get(0).map_err(StoreError::from)?;
        let encrypted: bool = row.try_get(1).map_err(StoreError::from)?;
        let aad = screenshot_aad(tenant, task_id, name);
        Ok(Some(
            self.sealer.open_payload(encrypted, payload, &aad, false)?,
        ))
    }
}
