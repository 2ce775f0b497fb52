//! One viewer's socket: frames from the capture's [`LiveSurface`] out, the viewer's input
//! in, until the viewer leaves or the capture ends. Nothing here knows how a browser is
//! driven: that is the provider's.

use std::time::Duration;

use abr_core::{LiveSurface, PageLocation};
use abr_engine::{LiveAttachment, LiveInputError};
use abr_protocol::LiveViewEvent;
use axum::extract::ws::{Message, WebSocket};
use futures::{SinkExt, StreamExt};

use super::wire;

/// How often the viewer is told where the page is (only when it changed).
const LOCATION_EVERY: Duration = Duration::from_millis(500);
/// Bound of one send to the viewer: a viewer that stops reading is not waited for.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// An event as a text message.
fn event(event: &LiveViewEvent) -> Message {
    Message::Text(serde_json::to_string(event).unwrap_or_default().into())
}

/// Why the socket was closed, as the viewer is told.
fn closed(reason: &str) -> Message {
    event(&LiveViewEvent::Closed {
        reason: reason.to_owned(),
    })
}

/// Serves one viewer until it leaves, the page closes, or the capture ends (within a few
/// milliseconds of [`LiveAttachment::ended`]).
pub(crate) async fn serve<C: LiveSurface>(socket: WebSocket, live: LiveAttachment<C>) {
    let (mut out, mut incoming) = socket.split();
    let mut feed = match live.watch().await {
        Ok(feed) => feed,
        Err(e) => {
            tracing::debug!(error = %e, "live view: the page cannot be shown");
            let _ = out.send(closed("page_closed")).await;
            return;
        }
    };
    let mut location_tick = tokio::time::interval(LOCATION_EVERY);
    location_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_location: Option<PageLocation> = None;
    // Once the viewer stops reading, frames stop, but the input it sent before leaving is
    // still delivered (a person who presses Enter and closes the tab has signed in).
    let mut viewer_reads = true;
    loop {
        tokio::select! {
            biased;
            () = live.ended() => {
                let _ = tokio::time::timeout(SEND_TIMEOUT, out.send(closed("capture_ended"))).await;
                break;
            }
            message = incoming.next() => {
                let Some(Ok(message)) = message else { break };
                let text = match message {
                    Message::Text(text) => text,
                    Message::Close(_) => break,
                    _ => continue,
                };
                let refusal = match wire::parse(&text) {
                    Ok(input) => match live.input(input).await {
                        Ok(()) => None,
                        Err(LiveInputError::Refused(why)) => Some(why.code()),
                        Err(e) => {
                            tracing::debug!(error = %e, "live view: an input failed");
                            None
                        }
                    },
                    Err(e) => Some(e.code()),
                };
                if let Some(reason) = refusal {
                    let m = event(&LiveViewEvent::Refused { reason: reason.to_owned() });
                    if viewer_reads && send(&mut out, m).await.is_err() {
                        viewer_reads = false;
                    }
                }
            }
            frame = feed.next_frame(), if viewer_reads => {
                let Some(frame) = frame else {
                    let _ = tokio::time::timeout(SEND_TIMEOUT, out.send(closed("page_closed"))).await;
                    break;
                };
                let meta = event(&LiveViewEvent::Frame { width: frame.width, height: frame.height });
                let sent = match send(&mut out, meta).await {
                    Ok(()) => send(&mut out, Message::Binary(frame.jpeg.into())).await,
                    Err(e) => Err(e),
                };
                if sent.is_err() {
                    viewer_reads = false;
                }
            }
            _ = location_tick.tick(), if viewer_reads => {
                let Ok(location) = live.location().await else { continue };
                if last_location.as_ref() != Some(&location) {
                    let m = event(&LiveViewEvent::Location {
                        url: location.url.clone(),
                        title: location.title.clone(),
                    });
                    if send(&mut out, m).await.is_err() {
                        viewer_reads = false;
                    }
                    last_location = Some(location);
                }
            }
        }
    }
    feed.close().await;
    let _ = tokio::time::timeout(SEND_TIMEOUT, out.close()).await;
}

async fn send(
    out: &mut futures::stream::SplitSink<WebSocket, Message>,
    message: Message,
) -> Result<(), ()> {
    match tokio::time::timeout(SEND_TIMEOUT, out.send(message)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}
