//! Logging: `RUST_LOG` filters, but no setting can make the runner log a secret through a
//! third-party crate that dumps what it carries.
//!
//! - `tungstenite` (the live view's sockets) logs every WebSocket frame's payload at trace:
//!   what a person types into the live view, their password included. Held at info.
//! - `rmcp` (the MCP server) logs whole MCP messages at debug: tool arguments, sessions and
//!   typed values included. Held at info.
//! - `playwright_rs` logs navigation URLs (which may carry tokens) at info and the driver's
//!   protocol (cookie values) at debug. Held at warn; its `server` target (the driver's own
//!   output) is off.
//!
//! The caps are a filter of their own, applied after `RUST_LOG`, so a more specific
//! directive (`RUST_LOG=tungstenite::protocol=trace`) cannot lift them.

use std::sync::atomic::{AtomicBool, Ordering};

use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::writer::MakeWriterExt as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::traces::Traces;

/// Whether an event may be written at all, whatever `RUST_LOG` says.
pub fn allowed(meta: &Metadata<'_>) -> bool {
    let target = meta.target();
    let under = |prefix: &str| {
        target == prefix
            || target
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with("::"))
    };
    if under("tungstenite") || under("tokio_tungstenite") || under("rmcp") {
        // rmcp logs whole MCP messages (tool arguments: sessions, inputs) at debug.
        *meta.level() <= Level::INFO
    } else if under("playwright_rs::server") {
        false
    } else if under("playwright_rs") {
        *meta.level() <= Level::WARN
    } else {
        true
    }
}

/// A subscriber writing plain text (no colours) to `writer`, filtered by `spec` (`RUST_LOG`
/// syntax) and then by [`allowed`].
pub fn subscriber<W>(spec: &str, writer: W) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    subscriber_with_traces(spec, writer, None)
}

/// [`subscriber`], and ABR's spans exported by `traces` when given (filtered by their own
/// rule, not by `spec`: `RUST_LOG=warn` quiets the logs, not the traces).
pub fn subscriber_with_traces<W>(
    spec: &str,
    writer: W,
    traces: Option<&Traces>,
) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_new(spec).unwrap_or_else(|_| EnvFilter::new("info"));
    let caps = tracing_subscriber::filter::filter_fn(allowed);
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_ansi(false)
                .with_filter(filter)
                .with_filter(caps),
        )
        .with(traces.map(Traces::layer))
}

/// Logs to stderr filtered by `filter` (`RUST_LOG`, from [`crate::config::log_filter`]), or
/// by `default` when it is not set.
pub fn init(filter: Option<&str>, default: &str) {
    init_with_traces(filter, default, None);
}

/// Whether this process's log lines reach stderr (a foreground runner's `l` key hides
/// them).
static TERMINAL_LOG: AtomicBool = AtomicBool::new(true);

/// Hides the log lines on stderr if shown, shows them if hidden; whether they are shown
/// now.
pub(crate) fn toggle_terminal_log() -> bool {
    !TERMINAL_LOG.fetch_xor(true, Ordering::Relaxed)
}

/// [`init`], exporting this process's spans through `traces` (kept until the command ends,
/// then flushed).
pub fn init_with_traces(filter: Option<&str>, default: &str, traces: Option<Traces>) {
    let stderr =
        std::io::stderr.with_filter(|_: &Metadata<'_>| TERMINAL_LOG.load(Ordering::Relaxed));
    let installed =
        subscriber_with_traces(filter.unwrap_or(default), stderr, traces.as_ref()).try_init();
    if let (Ok(()), Some(traces)) = (installed, traces) {
        crate::traces::keep(traces);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buffer {
        type Writer = Self;
        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    #[test]
    fn no_log_setting_lifts_the_caps() {
        let buffer = Buffer::default();
        let spec = "trace,tungstenite::protocol=trace,playwright_rs::protocol=trace,rmcp=trace";
        tracing::subscriber::with_default(subscriber(spec, buffer.clone()), || {
            tracing::trace!(target: "tungstenite::protocol", "payload SECRET-typed");
            tracing::debug!(target: "playwright_rs::protocol", "cookie SECRET-cookie");
            tracing::info!(target: "playwright_rs::protocol", "goto SECRET-url");
            tracing::warn!(target: "playwright_rs::server", "driver SECRET-driver");
            tracing::debug!(target: "rmcp::service", "tool call SECRET-arguments");
            tracing::trace!(target: "abr::http", "ours at trace");
            tracing::info!(target: "tungstenite::protocol", "closing");
            tracing::warn!(target: "playwright_rs", "a driver warning");
        });
        let text = String::from_utf8_lossy(
            &buffer
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_owned();
        assert!(!text.contains("SECRET"), "{text}");
        for kept in ["ours at trace", "closing", "a driver warning"] {
            assert!(text.contains(kept), "{kept} missing: {text}");
        }
    }
}
