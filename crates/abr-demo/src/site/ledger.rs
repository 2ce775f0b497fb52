//! The write ledger: every write that reaches the site, in arrival order, so that a test can
//! prove "nothing was written" by more than the absence of a symptom.
//!
//! # HTTP contract
//! - A middleware over every route (the fallback included) records each request whose method
//!   is not `GET`, `HEAD` or `OPTIONS` as a [`LedgerEntry`] `{method, path, detail}` before the
//!   route answers: `path` is the request's path without the query; the body is never
//!   recorded. A route may add a short `detail` to its own entry (see the `attack` module:
//!   which form, which button, which GraphQL operation type).
//! - The WebSocket endpoint `GET /attack/ws` records its upgrade as method `WS-OPEN` and every
//!   text or binary message the browser sends on it as method `WS` (the text as `detail` when
//!   it is a plain id).
//! - `GET /attack/api/unsubscribe`, a GET that commits, records itself as method `GET!`: the
//!   one GET in the ledger, the known limit of a rule on methods.
//! - At most [`MAX_WRITE_LEDGER`] entries are kept; later ones are dropped and counted.
//! - `GET /api/ledger`: `{"entries": [{"method", "path", "detail"}], "dropped": n}`
//!   (`no-store`). There is no HTTP endpoint that clears it (a page could hide its own write):
//!   [`DemoSite::reset_ledger`](super::DemoSite::reset_ledger) does, from Rust.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router, routing::get};
use serde::{Deserialize, Serialize};

use super::{Shared, lock};

/// Most entries the write ledger keeps; later writes are dropped and counted.
pub const MAX_WRITE_LEDGER: usize = 1000;
/// Longest method and path kept in an entry, in bytes (longer ones are cut).
const MAX_FIELD_BYTES: usize = 2048;

/// One write that reached the site.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The HTTP method (`POST`, `PUT`, `DELETE`, `PATCH`, ...), or `WS-OPEN` / `WS` for a
    /// WebSocket upgrade / message, or `GET!` for the site's one committing GET.
    pub method: String,
    /// The request path, without the query.
    pub path: String,
    /// What the route says about it, when it says something: never a body.
    pub detail: Option<String>,
}

impl LedgerEntry {
    /// An entry without detail.
    pub fn new(method: &str, path: &str) -> Self {
        Self {
            method: method.to_owned(),
            path: path.to_owned(),
            detail: None,
        }
    }

    /// The same entry with `detail`.
    #[must_use]
    pub fn with_detail(mut self, detail: &str) -> Self {
        self.detail = Some(detail.to_owned());
        self
    }
}

/// The ledger as the site keeps it.
#[derive(Debug, Default)]
pub(super) struct WriteLedger {
    /// `(sequence number, entry)`, in arrival order.
    entries: Vec<(u64, LedgerEntry)>,
    next: u64,
    dropped: u64,
}

/// The sequence number of the request's own ledger entry, as a request extension: a route
/// names its entry with it to add a detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Recorded(u64);

impl WriteLedger {
    /// Appends an entry; `None` when the ledger is full (the entry is counted as dropped).
    pub(super) fn push(&mut self, method: &str, path: &str, detail: Option<&str>) -> Option<u64> {
        if self.entries.len() >= MAX_WRITE_LEDGER {
            self.dropped = self.dropped.saturating_add(1);
            return None;
        }
        let seq = self.next;
        self.next = self.next.wrapping_add(1);
        self.entries.push((
            seq,
            LedgerEntry {
                method: cut(method),
                path: cut(path),
                detail: detail.map(cut),
            },
        ));
        Some(seq)
    }

    /// Sets the detail of the entry `recorded` names, if it is still there.
    pub(super) fn annotate(&mut self, recorded: Recorded, detail: &str) {
        if let Some((_, entry)) = self.entries.iter_mut().find(|(seq, _)| *seq == recorded.0) {
            entry.detail = Some(cut(detail));
        }
    }

    pub(super) fn entries(&self) -> Vec<LedgerEntry> {
        self.entries.iter().map(|(_, e)| e.clone()).collect()
    }

    pub(super) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Empties the ledger and its dropped count.
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.dropped = 0;
    }
}

/// `s`, at most [`MAX_FIELD_BYTES`] long (cut at a character boundary).
fn cut(s: &str) -> String {
    if s.len() <= MAX_FIELD_BYTES {
        return s.to_owned();
    }
    let mut end = MAX_FIELD_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default().to_owned()
}

/// Whether `method` only reads: `GET`, `HEAD`, `OPTIONS`.
pub(super) fn is_safe(method: &Method) -> bool {
    [Method::GET, Method::HEAD, Method::OPTIONS].contains(method)
}

/// The middleware: records every request with a non-safe method before it is answered, and
/// hands the route its entry's [`Recorded`] number.
pub(super) async fn record_writes(
    State(state): State<Shared>,
    mut request: Request,
    next: Next,
) -> Response {
    if !is_safe(request.method()) {
        let seq = lock(&state)
            .ledger
            .push(request.method().as_str(), request.uri().path(), None);
        if let Some(seq) = seq {
            request.extensions_mut().insert(Recorded(seq));
        }
    }
    next.run(request).await
}

/// Adds `detail` to the ledger entry of `request` (a route's own entry), if it has one.
pub(super) fn annotate(state: &Shared, extensions: &axum::http::Extensions, detail: &str) {
    if let Some(recorded) = extensions.get::<Recorded>() {
        lock(state).ledger.annotate(*recorded, detail);
    }
}

/// Records an entry a route makes itself (`WS-OPEN`, `WS`, `GET!`).
pub(super) fn record(state: &Shared, method: &str, path: &str, detail: Option<&str>) {
    lock(state).ledger.push(method, path, detail);
}

/// The ledger's routes.
pub(super) fn routes() -> Router<Shared> {
    Router::new().route("/api/ledger", get(ledger))
}

async fn ledger(State(state): State<Shared>) -> Response {
    let (entries, dropped) = {
        let s = lock(&state);
        (s.ledger.entries(), s.ledger.dropped())
    };
    (
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        Json(serde_json::json!({ "entries": entries, "dropped": dropped })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_head_and_options_are_safe() {
        for safe in [Method::GET, Method::HEAD, Method::OPTIONS] {
            assert!(is_safe(&safe), "{safe}");
        }
        for write in [
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::TRACE,
            Method::CONNECT,
        ] {
            assert!(!is_safe(&write), "{write}");
        }
        assert!(!is_safe(&Method::from_bytes(b"PURGE").unwrap_or_default()));
    }

    #[test]
    fn the_ledger_is_bounded_counts_what_it_drops_and_annotates_by_sequence() {
        let mut ledger = WriteLedger::default();
        let first = ledger.push("POST", "/a", None);
        for _ in 1..MAX_WRITE_LEDGER {
            assert!(ledger.push("PUT", "/b", None).is_some());
        }
        assert_eq!(ledger.push("DELETE", "/c", None), None);
        assert_eq!(ledger.push("DELETE", "/c", None), None);
        assert_eq!(ledger.entries().len(), MAX_WRITE_LEDGER);
        assert_eq!(ledger.dropped(), 2);
        if let Some(first) = first {
            ledger.annotate(Recorded(first), "pay");
        }
        assert_eq!(
            ledger.entries().first(),
            Some(&LedgerEntry::new("POST", "/a").with_detail("pay"))
        );
        ledger.clear();
        assert_eq!((ledger.entries().len(), ledger.dropped()), (0, 0));
        // A number from before the reset names nothing now.
        let again = ledger.push("POST", "/d", None);
        assert_ne!(again, first);
        if let Some(first) = first {
            ledger.annotate(Recorded(first), "stale");
        }
        assert_eq!(ledger.entries(), [LedgerEntry::new("POST", "/d")]);
    }

    #[test]
    fn long_fields_are_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_FIELD_BYTES);
        let kept = cut(&long);
        assert!(kept.len() <= MAX_FIELD_BYTES && kept.len() >= MAX_FIELD_BYTES - 1);
        assert!(kept.chars().all(|c| c == 'é'));
        assert_eq!(cut("/short"), "/short");
    }
}
