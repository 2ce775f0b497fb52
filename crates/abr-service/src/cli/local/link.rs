//! Where the relay link to a hub is hooked into `abr up`.
//!
//! The link itself (an outbound WebSocket to the hub that forwards the hub's calls to the
//! runner's API router) lives in the relay module, built separately. Until it is part of
//! this build, [`check`] refuses `--hub` with [`LocalError::RelayUnavailable`] before
//! anything starts, and [`run`] is the one call site `abr up` drives: replace its body by
//! `crate::relay::link::run(app, options, shutdown)` (and [`Shutdown`] and [`LinkOptions`]
//! by the relay's) and delete [`check`].

use secrecy::SecretString;
use url::Url;

use super::LocalError;

/// What the runner is doing, as `abr up` tells the link: running, draining (no new work,
/// running work finishes), or stopping now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shutdown {
    /// Serving.
    Running,
    /// Finishing running work; no new work.
    Drain,
    /// Stopping at once.
    Now,
}

impl Shutdown {
    /// Moves to `wanted` if that is further along (running → drain → now): whether it
    /// moved. A drain never undoes an immediate stop.
    pub(crate) fn advance(&mut self, wanted: Self) -> bool {
        let rank = |s: Self| match s {
            Self::Running => 0,
            Self::Drain => 1,
            Self::Now => 2,
        };
        if rank(wanted) > rank(*self) {
            *self = wanted;
            true
        } else {
            false
        }
    }
}

/// What the link needs to connect to the hub.
pub(crate) struct LinkOptions {
    /// The hub.
    pub(crate) hub: Url,
    /// The long-lived API token the link mints its short-lived relay tokens with.
    #[expect(dead_code, reason = "read by the relay link once it is in this build")]
    pub(crate) api_token: SecretString,
    /// The runner id it serves as.
    pub(crate) runner_id: String,
    /// This machine's host name (a same-host duplicate is refused unless `force`).
    pub(crate) host: String,
    /// Take over from a runner with the same id on this host.
    pub(crate) force: bool,
    /// The launch kind, reported with each heartbeat (`terminal` or `background`).
    pub(crate) launch: String,
}

impl std::fmt::Debug for LinkOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkOptions")
            .field("hub", &self.hub.as_str())
            .field("runner_id", &self.runner_id)
            .field("host", &self.host)
            .field("force", &self.force)
            .field("launch", &self.launch)
            .finish_non_exhaustive()
    }
}

/// Whether this build can link to a hub: it cannot yet.
///
/// # Errors
/// [`LocalError::RelayUnavailable`] when a hub is asked for.
pub(crate) fn check(hub: Option<&Url>) -> Result<(), LocalError> {
    match hub {
        Some(_) => Err(LocalError::RelayUnavailable),
        None => Ok(()),
    }
}

/// Runs the link until `shutdown` says stop (the relay's `run`, once it is in this build).
///
/// # Errors
/// [`LocalError::RelayUnavailable`]: there is no relay in this build.
pub(crate) async fn run(
    app: axum::Router,
    options: LinkOptions,
    shutdown: tokio::sync::watch::Receiver<Shutdown>,
) -> Result<(), LocalError> {
    drop((app, options, shutdown));
    Err(LocalError::RelayUnavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hub_is_refused_until_the_relay_is_in_the_build() {
        assert!(check(None).is_ok());
        let hub = Url::parse("https://hub.example.com").unwrap();
        let err = check(Some(&hub)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the relay is not available in this build"),
            "{err}"
        );
    }

    #[test]
    fn stopping_only_moves_forward() {
        let mut s = Shutdown::Running;
        assert!(s.advance(Shutdown::Drain));
        assert!(!s.advance(Shutdown::Drain));
        assert!(s.advance(Shutdown::Now));
        assert!(!s.advance(Shutdown::Drain));
        assert!(!s.advance(Shutdown::Running));
        assert_eq!(s, Shutdown::Now);
    }

    #[test]
    fn link_options_never_print_the_token() {
        let options = LinkOptions {
            hub: Url::parse("https://hub.example.com").unwrap(),
            api_token: SecretString::from("secret-api-token-0123456789".to_owned()),
            runner_id: "r".to_owned(),
            host: "h".to_owned(),
            force: false,
            launch: "terminal".to_owned(),
        };
        assert!(!format!("{options:?}").contains("secret-api-token"));
    }
}
