//! The ledger's two record stores ([`RecordStore`] of [`StoredTask`] and of [`StoredPost`])
//! for a store type that has the record mechanics (`insert_record`, `get_record`, …: the
//! SQL of SQLite or of PostgreSQL): one definition, so the two stores cannot drift apart in
//! what a task or a post is.
//!
//! [`RecordStore`]: abr_core::store::RecordStore
//! [`StoredTask`]: abr_core::store::StoredTask
//! [`StoredPost`]: abr_core::store::StoredPost

/// Implements `RecordStore<StoredTask>` and `RecordStore<StoredPost>` for `$store`.
macro_rules! ledger_record_stores {
    ($store:ty) => {
        $crate::ledger::ledger_record_stores!(
            @one $store,
            abr_core::store::StoredTask,
            $crate::codec::TASKS,
            $crate::codec::task_fields,
            $crate::codec::decode_task,
            $crate::codec::unfinished_task_states()?
        );
        $crate::ledger::ledger_record_stores!(
            @one $store,
            abr_core::store::StoredPost,
            $crate::codec::POSTS,
            $crate::codec::post_fields,
            $crate::codec::decode_post,
            vec![$crate::codec::post_state(abr_protocol::PostState::Running)?]
        );
    };
    (@one $store:ty, $record:ty, $table:path, $fields:path, $decode:path, $unfinished:expr) => {
        #[async_trait::async_trait]
        impl abr_core::store::RecordStore<$record> for $store {
            async fn insert(
                &self,
                record: &$record,
                idempotency: Option<&abr_core::store::IdempotencyKey>,
            ) -> Result<abr_core::store::Inserted, abr_core::CoreError> {
                Ok(self
                    .insert_record(&$table, $fields(record)?, idempotency)
                    .await?)
            }

            async fn find_idempotency(
                &self,
                tenant: &str,
                key: &str,
            ) -> Result<Option<(String, String)>, abr_core::CoreError> {
                Ok(self.find_record_key(&$table, tenant, key).await?)
            }

            async fn get(
                &self,
                tenant: &str,
                id: &str,
            ) -> Result<Option<$record>, abr_core::CoreError> {
                Ok(self
                    .get_record(&$table, tenant, id)
                    .await?
                    .map($decode)
                    .transpose()?)
            }

            async fn update(&self, record: &$record) -> Result<bool, abr_core::CoreError> {
                Ok(self.update_record(&$table, $fields(record)?).await?)
            }

            async fn mark(&self, tenant: &str, id: &str) -> Result<bool, abr_core::CoreError> {
                Ok(self.mark_record(&$table, tenant, id).await?)
            }

            async fn unfinished(&self) -> Result<Vec<$record>, abr_core::CoreError> {
                Ok(self
                    .records_in_states(&$table, $unfinished, $decode)
                    .await?)
            }

            async fn list(
                &self,
                tenant: &str,
                query: &abr_core::store::ListQuery,
            ) -> Result<abr_core::store::Listed<$record>, abr_core::CoreError> {
                self.list_records(&$table, tenant, query, $decode).await
            }

            async fn count_in_state(
                &self,
                state: &str,
            ) -> Result<abr_core::store::StateCount, abr_core::CoreError> {
                Ok(self.count_records_in_state(&$table, state).await?)
            }
        }
    };
}

pub(crate) use ledger_record_stores;
