//! The post records ([`RecordStore`] of [`StoredPost`]) on SQLite. A post's request holds its content and a session (or a session
//! id): it is encrypted like stored sessions, bound to its row, and dropped (NULL) once the
//! post can no longer be re-checked.

use abr_core::CoreError;
use abr_core::store::{IdempotencyKey, Inserted, ListQuery, Listed, RecordStore, StoredPost};
use abr_protocol::{PostRecord, PostRequest, PostState};
use async_trait::async_trait;

use crate::records::{Fields, Read, Table, name_of};
use crate::{SqliteStore, StoreError};

/// Posts and their idempotency keys (a namespace apart from tasks'). A post's request
/// always holds a session (or names one), so it is kept in plaintext only where plaintext
/// is allowed.
static POSTS: Table = Table {
    table: "posts",
    id_column: "post_id",
    mark_column: "submit_started",
    idempotency_table: "post_idempotency",
    aad_tag: b"post",
    trusts_plaintext: false,
};

fn state_name(state: PostState) -> Result<String, StoreError> {
    name_of(&state, "a post state")
}

fn fields(post: &StoredPost) -> Result<Fields, StoreError> {
    let request = post
        .request
        .as_ref()
        .map(|request| {
            serde_json::to_vec(request).map_err(|_| StoreError::Record("a post request".into()))
        })
        .transpose()?;
    Ok(Fields {
        ledger: post.ledger.clone(),
        id: post.id().to_owned(),
        state: state_name(post.record.state)?,
        record: serde_json::to_string(&post.record)
            .map_err(|_| StoreError::Record("a post record".into()))?,
        request,
        holds_secrets: true,
        ends: post.record.state.is_final(),
    })
}

fn decode(read: Read) -> Result<StoredPost, StoreError> {
    let request = read
        .request
        .map(|json| {
            serde_json::from_slice::<PostRequest>(&json)
                .map_err(|_| StoreError::Record("a post request".into()))
        })
        .transpose()?;
    let record: PostRecord = serde_json::from_str(&read.record)
        .map_err(|_| StoreError::Record("a post record".into()))?;
    Ok(StoredPost {
        ledger: read.ledger,
        record,
        request,
    })
}

#[async_trait]
impl RecordStore<StoredPost> for SqliteStore {
    async fn insert(
        &self,
        post: &StoredPost,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Inserted, CoreError> {
        Ok(POSTS.insert(self, fields(post)?, idempotency).await?)
    }

    async fn find_idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<(String, String)>, CoreError> {
        Ok(POSTS.find_idempotency(self, tenant, key).await?)
    }

    async fn get(&self, tenant: &str, post_id: &str) -> Result<Option<StoredPost>, CoreError> {
        Ok(POSTS
            .get(self, tenant, post_id)
            .await?
            .map(decode)
            .transpose()?)
    }

    async fn update(&self, post: &StoredPost) -> Result<bool, CoreError> {
        Ok(POSTS.update(self, fields(post)?).await?)
    }

    async fn mark(&self, tenant: &str, post_id: &str) -> Result<(), CoreError> {
        Ok(POSTS.mark(self, tenant, post_id).await?)
    }

    async fn unfinished(&self) -> Result<Vec<StoredPost>, CoreError> {
        let states = vec![state_name(PostState::Running)?];
        Ok(POSTS.in_states(self, states, decode).await?)
    }

    async fn list(&self, tenant: &str, query: &ListQuery) -> Result<Listed<StoredPost>, CoreError> {
        POSTS.list(self, tenant, query, decode).await
    }
}
