//! A task's screenshots ([`ScreenshotStore`]) on SQLite, sealed like frames.

use abr_core::CoreError;
use abr_core::store::ScreenshotStore;
use async_trait::async_trait;
use rusqlite::OptionalExtension as _;

use crate::SqliteStore;
use crate::codec::screenshot_aad;

#[async_trait]
impl ScreenshotStore for SqliteStore {
    /// Sealed like frames, bound to its tenant, task and name; without a key only where
    /// plaintext is allowed.
    async fn put_screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
        png: Vec<u8>,
    ) -> Result<(), CoreError> {
        let (t, id, n) = (tenant.to_owned(), task_id.to_owned(), name.to_owned());
        let (encrypted, sealed) =
            self.sealer
                .seal_payload(png, &screenshot_aad(&t, &id, &n), true)?;
        self.with(move |conn| {
            conn.execute(
                "INSERT INTO screenshots (tenant_id, task_id, name, png, encrypted)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (tenant_id, task_id, name) DO UPDATE SET png = ?4, encrypted = ?5",
                (&t, &id, &n, &sealed, encrypted),
            )?;
            Ok(())
        })
        .await?;
        Ok(())
    }

    async fn screenshot(
        &self,
        tenant: &str,
        task_id: &str,
        name: &str,
    ) -> Result<Option<Vec<u8>>, CoreError> {
        let (t, id, n) = (tenant.to_owned(), task_id.to_owned(), name.to_owned());
        let row: Option<(Vec<u8>, bool)> = self
            .with(move |conn| {
                Ok(conn
                    .query_row(
                        "SELECT png, encrypted FROM screenshots
                         WHERE tenant_id = ?1 AND task_id = ?2 AND name = ?3",
                        (&t, &id, &n),
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?)
            })
            .await?;
        let Some((payload, encrypted)) = row else {
            return Ok(None);
        };
        // A plaintext row is one written before screenshots were sealed: read as it is.
        let aad = screenshot_aad(tenant, task_id, name);
        Ok(Some(
            self.sealer.open_payload(encrypted, payload, &aad, true)?,
        ))
    }
}
