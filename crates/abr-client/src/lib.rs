//! Typed HTTP client for the ABR runner.
//!
//! [`AgentRunnerClient`] has one async method per endpoint of the runner's `/v1` API and
//! speaks the wire types of [`abr_protocol`] (re-exported as [`protocol`]). It depends on
//! `abr-protocol` only among ABR crates: no browser library, no HTTP server, not `abr-core`.
//! [`LiveViewChannel`] opens a live view's socket, for programs that play the user.
//! Browser tasks (an approved step plan, run and proven) have their own calls:
//! [`create_task`](AgentRunnerClient::create_task) with [`TaskOptions`], then
//! [`approve_task`](AgentRunnerClient::approve_task) and
//! [`wait_task`](AgentRunnerClient::wait_task); sessions kept on the runner are
//! [`store_session`](AgentRunnerClient::store_session) and friends.
//!
//! ```no_run
//! use abr_client::AgentRunnerClient;
//! use abr_client::protocol::{PostOutcome, PostRequest};
//!
//! async fn publish(request: &PostRequest) -> Result<(), abr_client::ClientError> {
//!     let client = AgentRunnerClient::builder("http://127.0.0.1:8080/")
//!         .token("runner-token")
//!         .timeout(std::time::Duration::from_secs(600))
//!         .build()?;
//!     let result = client.post(request).await?;
//!     match result.outcome() {
//!         PostOutcome::Confirmed => { /* persist result.refreshed_session */ }
//!         PostOutcome::Uncertain => { /* manual review: never retry */ }
//!         PostOutcome::NeedsReauth => { /* ask the user to sign in again */ }
//!         PostOutcome::Failed => { /* result.is_safe_to_retry(): may retry later */ }
//!     }
//!     Ok(())
//! }
//! ```
//!
//! # Retries
//!
//! The client **never retries** a request by itself, a post least of all. An orchestrator
//! retries a post only when [`AgentPostResult::is_safe_to_retry`](protocol::AgentPostResult::is_safe_to_retry)
//! is true, or when the call failed with a [`ClientError`] whose
//! [`is_retryable`](ClientError::is_retryable) is true. See [`AgentRunnerClient`].
//!
//! # Secrets
//!
//! The bearer token is a [`SecretString`], sent with reqwest's `bearer_auth` (a sensitive
//! header) and never printed. Redirects are not followed and no cookie is stored. Errors
//! carry no URL (a capture id in a path is a credential) and no response body beyond the
//! runner's error envelope.

mod artifacts;
mod browse;
mod client;
mod error;
mod guard;
mod keys;
mod lists;
mod live;
mod posts;
mod tasks;

pub use abr_protocol as protocol;
pub use client::{
    AgentRunnerClient, AgentRunnerClientBuilder, DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT,
};
pub use error::{ClientError, Operation, TransportKind};
pub use live::{LiveMessage, LiveViewChannel};
pub use posts::{PostAnswer, PostOptions};
pub use secrecy::SecretString;
pub use tasks::{MAX_TASK_WAIT, TaskOptions};
