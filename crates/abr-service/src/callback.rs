//! `api_callback` verification: the runner posts a task's final record to the
//! orchestrator's URL, which proves the outcome on its side.
//!
//! The URL is the plan's, so it is treated like any destination a plan names: it must pass
//! the egress policy (no loopback, private or metadata address unless allowed by
//! `ABR_EGRESS_ALLOW_PRIVATE`), the connection goes to the very address that was checked
//! (no second DNS answer), and redirects are not followed.

use std::time::Duration;

use abr_core::EgressPolicy;
use abr_engine::TaskCompletion;
use abr_engine::TaskEnd;
use abr_protocol::TaskRecord;
use url::Url;

/// How long the orchestrator has to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a callback was not delivered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallbackError {
    /// The egress policy refused the destination.
    #[error("the callback URL is refused: {0}")]
    Refused(String),
    /// It could not be sent, or was not accepted.
    #[error("the callback failed: {0}")]
    Failed(String),
}

/// Posts `record` as JSON to `url`, once.
pub(crate) async fn post_record(
    egress: &EgressPolicy,
    url: &Url,
    record: &TaskRecord,
) -> Result<(), CallbackError> {
    post_json(egress, url, record).await
}

/// Posts `body` as JSON to `url`, once, through the egress policy, without redirects.
pub(crate) async fn post_json<T: serde::Serialize + ?Sized>(
    egress: &EgressPolicy,
    url: &Url,
    body: &T,
) -> Result<(), CallbackError> {
    let bytes = serde_json::to_vec(body).map_err(|e| CallbackError::Failed(e.to_string()))?;
    post_bytes(egress, url, bytes, &[]).await
}

/// Posts the JSON `body` to `url` with `headers`, once, through the egress policy, without
/// redirects.
pub(crate) async fn post_bytes(
    egress: &EgressPolicy,
    url: &Url,
    body: Vec<u8>,
    headers: &[(&str, String)],
) -> Result<(), CallbackError> {
    egress
        .check_url(url)
        .map_err(|e| CallbackError::Refused(e.to_string()))?;
    let host = url
        .host_str()
        .ok_or_else(|| CallbackError::Refused("no host".into()))?
        .to_owned();
    let port = url
        .port_or_known_default()
        .ok_or_else(|| CallbackError::Refused("no port".into()))?;
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let addrs: Vec<_> = tokio::net::lookup_host((bare.as_str(), port))
        .await
        .map_err(|e| CallbackError::Failed(format!("resolving the host: {e}")))?
        .collect();
    let addr = egress
        .check_resolved(&bare, &addrs)
        .map_err(|e| CallbackError::Refused(e.to_string()))?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(TIMEOUT)
        .resolve(&bare, addr)
        .build()
        .map_err(|e| CallbackError::Failed(e.to_string()))?;
    let mut request = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request
        .send()
        .await
        .map_err(|e| CallbackError::Failed(e.without_url().to_string()))?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(CallbackError::Failed(format!(
            "the orchestrator answered {}",
            response.status()
        )))
    }
}

/// The runner's [`TaskCompletion`] sink: posts an ended task's record to the plan's
/// `api_callback` URL, once, in the background, through the egress policy. A failure is
/// logged (without the URL); the record already says how the task ended.
#[derive(Debug)]
pub(crate) struct CallbackSink {
    egress: EgressPolicy,
}

impl CallbackSink {
    /// Deliveries through `egress`.
    pub(crate) fn new(egress: EgressPolicy) -> Self {
        Self { egress }
    }
}

impl TaskCompletion for CallbackSink {
    fn completed(&self, end: TaskEnd) {
        let Some(url) = end.callback_url else {
            return;
        };
        let egress = self.egress.clone();
        tokio::spawn(async move {
            if let Err(e) = post_record(&egress, &url, &end.record).await {
                tracing::warn!(task_id = %end.record.task_id, error = %e, "the task's callback failed");
            }
        });
    }
}
