//! [`Downloads`]: a page's downloads kept instead of refused. A CDP `Fetch` session of the
//! page pauses its documents at their response; one that is a download
//! ([`abr_core::guard::is_download`]: `attachment`, or a type no page shows) is read from
//! the network into memory (refused unread past the size cap by its declared length, or
//! dropped once read past it; refused unread past the count) and then failed
//! (`Aborted`) before the browser has anything to write: the context denies downloads
//! anyway, and the page stays where it was. Everything else goes on at once.
//!
//! Only the page's documents (navigations, and links with `download`) pass here: a
//! download a script makes from a `blob:` URL, or one in another page (a popup), is not
//! caught and stays refused by the browser.

use std::sync::{Arc, Mutex, PoisonError};

use abr_core::guard::{CaughtDownload, DownloadLimits, DownloadRefused};
use base64::Engine as _;
use playwright_rs::protocol::{BrowserContext, CDPSession, Page};
use serde_json::{Value, json};

use crate::live_state::detach_in_background;

/// What a page downloaded, and the session that catches it.
#[derive(Default)]
pub(crate) struct Downloads {
    caught: Mutex<Caught>,
    cdp: Mutex<Option<CDPSession>>,
}

#[derive(Default)]
struct Caught {
    /// Not taken yet.
    pending: Vec<CaughtDownload>,
    /// Seen so far (kept or refused), for the count.
    seen: usize,
}

impl Drop for Downloads {
    fn drop(&mut self) {
        if let Some(cdp) = self
            .cdp
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            detach_in_background(cdp);
        }
    }
}

impl Downloads {
    /// Catches `page`'s downloads within `limits` from now on (again: the new limits).
    pub(crate) async fn install(
        self: &Arc<Self>,
        context: &BrowserContext,
        page: &Page,
        limits: DownloadLimits,
    ) -> Result<(), playwright_rs::Error> {
        let cdp = context.new_cdp_session(page).await?;
        let answering = cdp.clone();
        let this = Arc::downgrade(self);
        cdp.on("Fetch.requestPaused", move |event: Value| {
            let (cdp, this) = (answering.clone(), this.clone());
            async move {
                if let Some(this) = this.upgrade() {
                    this.answer(&cdp, &event, limits).await;
                }
                Ok(())
            }
        });
        let pattern =
            json!({"urlPattern": "*", "resourceType": "Document", "requestStage": "Response"});
        cdp.send("Fetch.enable", Some(json!({ "patterns": [pattern] })))
            .await?;
        let old = self
            .cdp
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(cdp);
        if let Some(old) = old {
            detach_in_background(old);
        }
        Ok(())
    }

    /// The downloads caught since the last call.
    pub(crate) fn take(&self) -> Vec<CaughtDownload> {
        std::mem::take(&mut self.lock().pending)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Caught> {
        self.caught.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A paused document: kept and failed when it is a download, else let go on.
    async fn answer(&self, cdp: &CDPSession, event: &Value, limits: DownloadLimits) {
        let Some(id) = event["requestId"].as_str() else {
            return;
        };
        let status = event["responseStatusCode"].as_u64().unwrap_or(0);
        let header = |name: &str| {
            event["responseHeaders"].as_array().and_then(|headers| {
                headers
                    .iter()
                    .find(|h| {
                        h["name"]
                            .as_str()
                            .is_some_and(|n| n.eq_ignore_ascii_case(name))
                    })
                    .and_then(|h| h["value"].as_str())
            })
        };
        let disposition = header("content-disposition");
        let download = (200..300).contains(&status)
            && abr_core::guard::is_download(disposition, header("content-type"));
        if !download {
            let go_on = json!({ "requestId": id });
            if let Err(e) = cdp.send("Fetch.continueRequest", Some(go_on)).await {
                tracing::debug!(error = %e, "the download catcher could not let a page go on");
            }
            return;
        }
        let url = event["request"]["url"].as_str().unwrap_or_default();
        let name = abr_core::guard::download_name(disposition, url);
        let declared = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
        let refused = {
            let mut caught = self.lock();
            caught.seen += 1;
            if caught.seen > limits.max_count {
                Some(DownloadRefused::TooMany)
            } else if declared.is_some_and(|n| n > limits.max_bytes) {
                Some(DownloadRefused::TooLarge)
            } else {
                None
            }
        };
        let caught = match refused {
            Some(why) => CaughtDownload {
                name,
                size: declared.unwrap_or(0),
                bytes: Err(why),
            },
            None => match read_capped(cdp, id, limits.max_bytes).await {
                Ok(bytes) => CaughtDownload {
                    name,
                    size: bytes.len() as u64,
                    bytes: Ok(bytes),
                },
                Err((why, read)) => CaughtDownload {
                    name,
                    size: declared.unwrap_or(read),
                    bytes: Err(why),
                },
            },
        };
        self.lock().pending.push(caught);
        Self::abort(cdp, id).await;
    }

    /// Fails the paused download: the browser never writes it.
    async fn abort(cdp: &CDPSession, id: &str) {
        let failed = json!({"requestId": id, "errorReason": "Aborted"});
        if let Err(e) = cdp.send("Fetch.failRequest", Some(failed)).await {
            tracing::debug!(error = %e, "the download catcher could not abort a download");
        }
    }
}

/// The most one `IO.read` of a download's stream asks for.
const CHUNK: u64 = 64 * 1024;

/// How long one download's body may take to arrive.
const READ_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

/// A paused download's body, read as a stream (`Fetch.takeResponseBodyAsStream`, then
/// `IO.read`) and never more than `max` bytes of it: a body of undeclared length that
/// grows past the cap is refused there, as much as was read counted, the rest never read.
/// `Err`: why, and how many bytes were read.
async fn read_capped(
    cdp: &CDPSession,
    id: &str,
    max: u64,
) -> Result<Vec<u8>, (DownloadRefused, u64)> {
    let taken = cdp
        .send(
            "Fetch.takeResponseBodyAsStream",
            Some(json!({ "requestId": id })),
        )
        .await
        .map(crate::live_state::unwrap_result);
    let Some(handle) = taken
        .ok()
        .and_then(|t| t["stream"].as_str().map(str::to_owned))
    else {
        // The page went away before its body could be read: nothing to keep.
        return Err((DownloadRefused::Unread, 0));
    };
    let mut bytes = Vec::new();
    let reading = async {
        loop {
            let ask = max
                .saturating_add(1)
                .saturating_sub(bytes.len() as u64)
                .min(CHUNK);
            let chunk = cdp
                .send("IO.read", Some(json!({ "handle": handle, "size": ask })))
                .await
                .map(crate::live_state::unwrap_result);
            let Some(part) = chunk.as_ref().ok().and_then(chunk_bytes) else {
                return Err(DownloadRefused::Unread);
            };
            bytes.extend_from_slice(&part);
            if bytes.len() as u64 > max {
                return Err(DownloadRefused::TooLarge);
            }
            if chunk
                .as_ref()
                .is_ok_and(|c| c["eof"].as_bool().unwrap_or(false))
            {
                return Ok(());
            }
        }
    };
    // A server that holds the body open does not hold the run: what it sent by then is
    // not kept.
    let read = tokio::time::timeout(READ_DEADLINE, reading)
        .await
        .unwrap_or(Err(DownloadRefused::Unread));
    if let Err(e) = cdp
        .send("IO.close", Some(json!({ "handle": handle })))
        .await
    {
        tracing::debug!(error = %e, "the download catcher could not close a body's stream");
    }
    match read {
        Ok(()) => Ok(bytes),
        Err(why) => Err((why, bytes.len() as u64)),
    }
}

/// The bytes of an `IO.read` answer.
fn chunk_bytes(answer: &Value) -> Option<Vec<u8>> {
    let data = answer["data"].as_str()?;
    if answer["base64Encoded"].as_bool().unwrap_or(false) {
        base64::engine::general_purpose::STANDARD.decode(data).ok()
    } else {
        Some(data.as_bytes().to_vec())
    }
}
