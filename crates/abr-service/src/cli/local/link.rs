//! The relay link of `abr up`: the runner's API router served to a hub over an outbound
//! WebSocket ([`crate::relay::link::run`]), its errors in `abr up`'s terms.

pub(crate) use crate::relay::link::{LinkOptions, Shutdown};

use crate::relay::RelayError;

use super::LocalError;

/// Runs the link until `shutdown` says stop, or until the hub refuses it for good (an API
/// token it does not take, a runner with this id already connected without `--force`,
/// another runner taking the connection over).
///
/// # Errors
/// [`LocalError::Run`] with the relay's reason.
pub(crate) async fn run(
    app: axum::Router,
    options: LinkOptions,
    shutdown: tokio::sync::watch::Receiver<Shutdown>,
) -> Result<(), LocalError> {
    crate::relay::link::run(app, options, shutdown)
        .await
        .map_err(|e| LocalError::Run(stopped(&e)))
}

/// Why the link stopped, in `abr up`'s terms: a conflict names its code and `--force`.
fn stopped(error: &RelayError) -> String {
    match error {
        RelayError::Conflict(reason) => {
            let conflict = &abr_protocol::codes::RUNNER_CONFLICT;
            format!(
                "the relay link to the hub stopped: refused by the hub ({} {}): {reason} \
                 (`abr up --force` takes the runner id over)",
                conflict.status, conflict.code
            )
        }
        other => format!("the relay link to the hub stopped: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_names_its_code_and_force() {
        let said = stopped(&RelayError::Conflict("already connected".into()));
        assert!(said.contains("409 runner_conflict"), "{said}");
        assert!(said.contains("already connected"), "{said}");
        assert!(said.contains("abr up --force"), "{said}");
        let said = stopped(&RelayError::Replaced);
        assert!(said.contains("took the connection over"), "{said}");
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
}
