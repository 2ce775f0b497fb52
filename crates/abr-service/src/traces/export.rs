//! The exporter's HTTP client: reqwest's blocking client, called on the tracing SDK's own
//! export thread (the batch processor's), never on the runtime's. It is built there, on its
//! first export, because reqwest refuses to build or drop a blocking client inside an async
//! runtime.

use std::io::Read as _;
use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// The most of a collector's answer read (its body only says what it refused).
const MAX_ANSWER: u64 = 64 * 1024;

/// Posts the exporter's batches; see the module's docs.
pub(super) struct BlockingExport {
    timeout: Duration,
    client: OnceLock<Result<reqwest::blocking::Client, String>>,
}

impl std::fmt::Debug for BlockingExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingExport")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl BlockingExport {
    pub(super) fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::blocking::Client, HttpError> {
        self.client
            .get_or_init(|| {
                reqwest::blocking::Client::builder()
                    .timeout(self.timeout)
                    // A collector that redirects is misconfigured: the spans are not sent on.
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| HttpError::from(format!("the OTLP client cannot be built: {e}")))
    }
}

#[async_trait]
impl HttpClient for BlockingExport {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client()?;
        let (parts, body) = request.into_parts();
        let answer = client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body.to_vec())
            .send()?;
        let status = answer.status();
        let headers = answer.headers().clone();
        let mut read = Vec::new();
        answer.take(MAX_ANSWER).read_to_end(&mut read)?;
        let mut response = Response::builder().status(status).body(Bytes::from(read))?;
        *response.headers_mut() = headers;
        Ok(response)
    }
}
