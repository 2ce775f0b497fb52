//! The runner's own credential at its hub: traded once for an enrollment code
//! (`abr up --enroll CODE`, `POST /v1/relay/enroll`) and kept in the state directory,
//! readable by its owner only (`0600`; a file others may read is refused, as ssh refuses a
//! private key). It mints relay tokens for this runner id only.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use abr_protocol::SecretValue;
use abr_protocol::relay::{EnrollRequest, RunnerCredential};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use url::Url;

use super::LocalError;
use super::state::write_private;

/// What the file holds.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Stored {
    hub: String,
    runner_id: String,
    tenant_id: String,
    token: String,
}

/// The credential kept at `path` for `hub` and `runner_id`, if there is one.
///
/// # Errors
/// [`LocalError::Run`] for a file others may read or write, or one that is not a
/// credential; [`LocalError::Io`] when it cannot be read.
pub(crate) fn read(
    path: &Path,
    hub: &Url,
    runner_id: &str,
) -> Result<Option<SecretString>, LocalError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LocalError::io("read", path, e)),
    };
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(LocalError::Run(format!(
            "{}: the runner's credential is readable by others; chmod 600 it (or delete it and \
             enroll again)",
            path.display()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| LocalError::io("read", path, e))?;
    let stored: Stored = serde_json::from_slice(&bytes)
        .map_err(|_| LocalError::Run(format!("{}: not a runner credential", path.display())))?;
    Ok(
        (stored.hub == hub.as_str() && stored.runner_id == runner_id)
            .then(|| SecretString::from(stored.token)),
    )
}

/// Trades `code` at `hub` for this runner's credential and keeps it at `path`.
///
/// # Errors
/// [`LocalError::Run`] when the hub refuses the code or cannot be reached;
/// [`LocalError::Io`] when the file cannot be written.
pub(crate) async fn enroll(
    path: &Path,
    hub: &Url,
    runner_id: &str,
    code: &str,
) -> Result<SecretString, LocalError> {
    let url = hub
        .join("/v1/relay/enroll")
        .map_err(|e| LocalError::Run(format!("the hub's URL: {e}")))?;
    let response = reqwest::Client::new()
        .post(url)
        .json(&EnrollRequest {
            runner_id: runner_id.to_owned(),
            code: SecretValue::new(code.trim().to_owned()),
        })
        .send()
        .await
        .map_err(|e| LocalError::Run(format!("enrolling at the hub: {}", e.without_url())))?;
    let status = response.status();
    if !status.is_success() {
        return Err(LocalError::Run(format!(
            "the hub refused the enrollment code (HTTP {status}): it works once, for ten \
             minutes, for the runner id it was made for; ask for a new one (abr hub enroll)"
        )));
    }
    let credential: RunnerCredential = response
        .json()
        .await
        .map_err(|_| LocalError::Run("the hub's answer to the enrollment is unreadable".into()))?;
    let stored = Stored {
        hub: hub.as_str().to_owned(),
        runner_id: credential.runner_id,
        tenant_id: credential.tenant_id,
        token: credential.token.expose().to_owned(),
    };
    let json = serde_json::to_vec_pretty(&stored)
        .map_err(|e| LocalError::Run(format!("cannot encode the credential: {e}")))?;
    write_private(path, &json)?;
    tracing::info!(
        runner_id,
        tenant = stored.tenant_id,
        "enrolled at the hub; the credential is kept in the state directory"
    );
    Ok(SecretString::from(stored.token))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn a_credential_is_read_back_for_its_hub_and_runner_only_and_never_when_others_may_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hub-credential.json");
        let hub = Url::parse("https://hub.example/").unwrap();
        assert!(read(&path, &hub, "laptop").unwrap().is_none(), "none yet");
        let stored = Stored {
            hub: hub.as_str().into(),
            runner_id: "laptop".into(),
            tenant_id: "acme".into(),
            token: "abrk.key_1.secret".into(),
        };
        write_private(&path, &serde_json::to_vec(&stored).unwrap()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        use secrecy::ExposeSecret as _;
        let token = read(&path, &hub, "laptop").unwrap().unwrap();
        assert_eq!(token.expose_secret(), "abrk.key_1.secret");
        assert!(
            read(&path, &hub, "desk").unwrap().is_none(),
            "another runner id"
        );
        let other = Url::parse("https://other.example/").unwrap();
        assert!(
            read(&path, &other, "laptop").unwrap().is_none(),
            "another hub"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = read(&path, &hub, "laptop").unwrap_err();
        assert!(
            refused.to_string().contains("readable by others"),
            "{refused}"
        );
    }
}
