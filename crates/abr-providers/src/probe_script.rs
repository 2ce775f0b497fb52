//! `probe.js` in the page: installed once per document where the context runs it first,
//! evaluated from its source everywhere else.
//!
//! The script is 33 kB; sent with every read it cost about 2 ms a read (measured: an
//! element's facts 6.8 ms against 4.6 for the same locator's `(el) => 1`). A context that
//! runs [`INSTALL_JS`] in every document before the page's own scripts (an init script)
//! holds the probe as a property of each window, under a name random to this process,
//! neither writable nor configurable: the page cannot replace it, since it is defined
//! before the page's first script runs. A read there sends only the call
//! ([`ProbeCall::short`]). A document without it (a context without the init script, a
//! frame the init script did not run in) answers [`MISSING`], and the read is sent again
//! with the whole source ([`ProbeCall::full`]), which never uses a copy it did not define
//! (a page may have taken the name in a document where it ran first) and leaves one for
//! the next read where the name is free.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::LazyLock;

use serde_json::Value;

/// The script's helpers and entry points (see its header), and its text masks.
const PROBE_JS: &str = concat!(
    include_str!("probe.js"),
    "\n",
    include_str!("probe_mask.js")
);

/// What a short call answers in a document that holds no probe.
const MISSING: &str = "__abr_probe_missing";

/// 64 random bits (a hasher with the process's random keys, `RandomState`, of `salt`).
pub(crate) fn random_u64(salt: u64) -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(salt);
    hasher.finish()
}

/// The window property the probe is installed under: random to this process.
static NAME: LazyLock<String> =
    LazyLock::new(|| format!("__abr_probe_{:016x}{:016x}", random_u64(1), random_u64(2)));

/// The probe as a frozen object of its entry points, from its source.
static OBJECT_JS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "(() => {{\n{PROBE_JS}\nreturn Object.freeze({{ inspect, signals, focused, \
         redactApply, redactFinish, redactRemove, still, snapshot }});\n}})()"
    )
});

/// Defines `p` (the probe) under [`NAME`] unless the window has that property already.
static DEFINE_JS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "try {{ if (!Object.prototype.hasOwnProperty.call(window, {name:?})) \
         Object.defineProperty(window, {name:?}, {{ value: p }}); }} catch (e) {{}}",
        name = *NAME
    )
});

/// What every document of a context with the probe runs first (an init script).
pub(crate) static INSTALL_JS: LazyLock<String> =
    LazyLock::new(|| format!("(() => {{ const p = {}; {} }})();", *OBJECT_JS, *DEFINE_JS));

/// One entry point of the probe, as the two expressions that run it (see the module docs).
#[derive(Debug)]
pub(crate) struct ProbeCall {
    /// Through the installed copy; [`MISSING`] where there is none.
    short: String,
    /// From the source, leaving a copy where the name is free.
    full: String,
}

impl ProbeCall {
    /// A function of `params` whose `body` calls the probe as `p`.
    fn new(params: &str, body: &str) -> Self {
        Self {
            short: format!(
                "({params}) => {{ const p = window[{name:?}]; if (!p) return {MISSING:?}; {body} }}",
                name = *NAME
            ),
            full: format!(
                "({params}) => {{ const p = {}; {} {body} }}",
                *OBJECT_JS, *DEFINE_JS
            ),
        }
    }

    /// The expression to send first: the short one where the context installs the probe
    /// in every document.
    fn first(&self, installed: bool) -> &str {
        if installed { &self.short } else { &self.full }
    }

    /// The expression that runs the probe from its source.
    pub(crate) fn full(&self) -> &str {
        &self.full
    }

    /// Runs the call with `send` (which evaluates one expression in the page): the short
    /// form first where the context has the probe in every document (`installed`), the
    /// whole source again when the document answered that it holds none.
    pub(crate) async fn run<'s, R, F, Fut>(&'s self, installed: bool, send: F) -> R
    where
        R: Answer,
        F: Fn(&'s str) -> Fut,
        Fut: Future<Output = R>,
    {
        let answer = send(self.first(installed)).await;
        if answer.missing() {
            return send(&self.full).await;
        }
        answer
    }
}

/// What a page evaluation answers, as far as [`ProbeCall::run`] reads it.
pub(crate) trait Answer {
    /// The document held no probe.
    fn missing(&self) -> bool;
}

impl Answer for Value {
    fn missing(&self) -> bool {
        self.as_str() == Some(MISSING)
    }
}

impl<E> Answer for Result<Value, E> {
    fn missing(&self) -> bool {
        self.as_ref().is_ok_and(Answer::missing)
    }
}

impl Answer for Option<Value> {
    fn missing(&self) -> bool {
        self.as_ref().is_some_and(Answer::missing)
    }
}

/// `inspect(el)`: the facts of the element.
pub(crate) static INSPECT: LazyLock<ProbeCall> =
    LazyLock::new(|| ProbeCall::new("el", "return p.inspect(el);"));

/// `signals()`: the page's signals.
pub(crate) static SIGNALS: LazyLock<ProbeCall> =
    LazyLock::new(|| ProbeCall::new("", "return p.signals();"));

/// `signals()` and `inspect(el)` in one pass; `null` when `el` is not in the top document
/// (the signals would be its frame's).
pub(crate) static AHEAD: LazyLock<ProbeCall> = LazyLock::new(|| {
    ProbeCall::new(
        "el",
        "return window !== window.top ? null : { signals: p.signals(), facts: p.inspect(el) };",
    )
});

/// `focused()`: the facts of the focused element, if any.
pub(crate) static FOCUSED: LazyLock<ProbeCall> =
    LazyLock::new(|| ProbeCall::new("", "return p.focused();"));

/// `redactApply({ token, patterns, selectors })`: blur and mask, confirm (and take it off
/// again when unconfirmed).
pub(crate) static APPLY: LazyLock<ProbeCall> =
    LazyLock::new(|| ProbeCall::new("args", "return p.redactApply(args);"));

/// `redactFinish(token)`: confirm again after the capture, and take it off.
pub(crate) static FINISH: LazyLock<ProbeCall> =
    LazyLock::new(|| ProbeCall::new("token", "return p.redactFinish(token);"));

/// `redactRemove(token)`: take it off.
pub(crate) static REMOVE: LazyLock<ProbeCall> =
    LazyLock::new(|| ProbeCall::new("token", "return p.redactRemove(token);"));

/// `still(mark)`: whether the page still looks as it did at a frame's mark.
pub(crate) static STILL: LazyLock<ProbeCall> =
    LazyLock::new(|| ProbeCall::new("mark", "return p.still(mark);"));

/// `snapshot(args)`: the page for an agent.
pub(crate) static SNAPSHOT: LazyLock<ProbeCall> =
    LazyLock::new(|| ProbeCall::new("args", "return p.snapshot(args);"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_random_and_every_call_has_both_forms() {
        assert!(NAME.len() > "__abr_probe_".len() + 16, "{}", *NAME);
        assert!(INSTALL_JS.contains(NAME.as_str()));
        for call in [
            &*INSPECT, &*SIGNALS, &*AHEAD, &*FOCUSED, &*APPLY, &*FINISH, &*REMOVE, &*STILL,
            &*SNAPSHOT,
        ] {
            assert!(call.short.len() < 400, "{}", call.short);
            assert!(call.short.contains(MISSING));
            assert!(!call.short.contains(PROBE_JS));
            assert!(call.full.contains(PROBE_JS));
            assert!(!call.full.contains(MISSING));
            assert_eq!(call.first(true), call.short);
            assert_eq!(call.first(false), call.full);
        }
        assert!(Value::from(MISSING).missing());
        assert!(!Value::Null.missing());
        assert!(Ok::<_, ()>(Value::from(MISSING)).missing());
        assert!(!Err::<Value, _>(()).missing());
        assert!(Some(Value::from(MISSING)).missing());
        assert!(!None::<Value>.missing());
    }
}
