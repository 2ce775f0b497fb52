//! What a local runner serves: on this machine only, or a hub as a runner id; and the
//! account that decides which runner a command is about.

use secrecy::{ExposeSecret as _, SecretString};
use sha2::{Digest as _, Sha256};
use url::Url;

use super::LocalError;
use crate::config::LocalSettings;

/// The hub a runner links to, and as which runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The hub (`--hub` or `ABR_HUB_URL`); `None`: this machine only.
    pub(crate) hub: Option<Url>,
    /// The runner id (`--runner-id` or `ABR_RUNNER_ID`; default derived from the host
    /// name).
    pub(crate) runner_id: String,
    /// This machine's host name, as the hub tells same-host runners apart.
    pub(crate) host: String,
}

/// Longest runner id.
const MAX_RUNNER_ID: usize = 64;

impl Target {
    /// Resolves the hub and the runner id from the flags, else the environment's (`local`).
    ///
    /// # Errors
    /// [`LocalError::Invalid`] naming the flag or variable of a bad value.
    pub(crate) fn resolve(
        local: &LocalSettings,
        hub: Option<&str>,
        runner_id: Option<&str>,
    ) -> Result<Self, LocalError> {
        let hub = match (hub, local.hub_url.as_deref()) {
            (Some(flag), _) => Some(parse_hub("--hub", flag)?),
            (None, Some(var)) => Some(parse_hub("ABR_HUB_URL", var)?),
            (None, None) => None,
        };
        let host = host_name();
        let runner_id = match (runner_id, local.runner_id.as_deref()) {
            (Some(flag), _) => check_runner_id("--runner-id", flag)?,
            (None, Some(var)) => check_runner_id("ABR_RUNNER_ID", var)?,
            (None, None) => host.clone(),
        };
        Ok(Self {
            hub,
            runner_id,
            host,
        })
    }
}

/// A hub URL: `http` or `https`, with a host, without credentials, query or fragment.
fn parse_hub(key: &'static str, value: &str) -> Result<Url, LocalError> {
    let invalid = |reason: &str| LocalError::Invalid {
        key,
        reason: reason.to_owned(),
    };
    let url = Url::parse(value).map_err(|_| invalid("not a URL (use https://hub.example.com)"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("use an http:// or https:// URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("the URL has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "the URL must not carry credentials (the API token is ABR_API_TOKEN)",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("the URL must not have a query or fragment"));
    }
    Ok(url)
}

/// A runner id: 1 to 64 of `A-Z a-z 0-9 . _ -`.
fn check_runner_id(key: &'static str, value: &str) -> Result<String, LocalError> {
    let ok = !value.is_empty()
        && value.len() <= MAX_RUNNER_ID
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(LocalError::Invalid {
            key,
            reason: format!("use 1 to {MAX_RUNNER_ID} of A-Z a-z 0-9 . _ -"),
        })
    }
}

/// This machine's host name as a runner id: lowercased, anything but `a-z 0-9 . -`
/// replaced by `-`, at most 64 characters; `local` when it cannot be read.
fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    sanitize_host(&raw)
}

fn sanitize_host(raw: &str) -> String {
    let cleaned: String = raw
        .trim()
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(MAX_RUNNER_ID)
        .collect();
    let cleaned = cleaned.trim_matches(|c| c == '-' || c == '.');
    if cleaned.is_empty() {
        "local".to_owned()
    } else {
        cleaned.to_owned()
    }
}

/// The account a local runner belongs to: `local` without a hub, else the first 16 hex
/// digits of SHA-256 over the hub URL and the API token (so neither can be read back from
/// a file name).
pub(crate) fn account_id(hub: Option<&Url>, token: Option<&SecretString>) -> String {
    let Some(hub) = hub else {
        return "local".to_owned();
    };
    let mut hash = Sha256::new();
    hash.update(hub.as_str().as_bytes());
    hash.update([0]);
    if let Some(token) = token {
        hash.update(token.expose_secret().as_bytes());
    }
    hash.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The first token of `ABR_API_TOKEN` (comma-separated for rotation; `tokens` as
/// [`crate::config`] read them): the one a runner links to its hub with.
pub(crate) fn first_api_token(tokens: &[SecretString]) -> Option<SecretString> {
    tokens.first().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::env_of as env;

    /// The local settings of the environment `pairs`.
    fn local(pairs: &[(&str, &str)]) -> LocalSettings {
        LocalSettings::from_env(&env(pairs))
    }

    #[test]
    fn the_flags_win_over_the_environment() {
        let vars = local(&[
            ("ABR_HUB_URL", "https://env.example.com"),
            ("ABR_RUNNER_ID", "from-env"),
        ]);
        let target = Target::resolve(&vars, Some("https://flag.example.com/"), Some("r1")).unwrap();
        assert_eq!(target.hub.unwrap().as_str(), "https://flag.example.com/");
        assert_eq!(target.runner_id, "r1");
        let target = Target::resolve(&vars, None, None).unwrap();
        assert_eq!(target.hub.unwrap().as_str(), "https://env.example.com/");
        assert_eq!(target.runner_id, "from-env");
        let target = Target::resolve(&local(&[]), None, None).unwrap();
        assert_eq!(target.hub, None);
        assert_eq!(target.runner_id, target.host);
    }

    #[test]
    fn bad_hubs_and_runner_ids_are_refused_naming_where_they_came_from() {
        for bad in [
            "not a url",
            "ftp://hub.example.com",
            "https://user:pw@hub.example.com",
            "https://hub.example.com/?token=x",
            "file:///etc/passwd",
        ] {
            let err = Target::resolve(&local(&[]), Some(bad), None).unwrap_err();
            assert!(err.to_string().starts_with("--hub: "), "{bad}: {err}");
            assert!(!err.to_string().contains("pw"), "{err}");
        }
        let err = Target::resolve(&local(&[("ABR_HUB_URL", "ws:/x")]), None, None).unwrap_err();
        assert!(err.to_string().starts_with("ABR_HUB_URL: "), "{err}");
        let long = "a".repeat(65);
        for bad in ["", "has space", "slash/id", "ünï", long.as_str()] {
            let err = Target::resolve(&local(&[]), None, Some(bad)).unwrap_err();
            assert!(
                err.to_string().starts_with("--runner-id: "),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn host_names_become_valid_runner_ids() {
        assert_eq!(sanitize_host("My_Laptop.local\n"), "my-laptop.local");
        assert_eq!(sanitize_host("\n"), "local");
        assert_eq!(sanitize_host("--"), "local");
        assert!(check_runner_id("x", &sanitize_host(&"h".repeat(300))).is_ok());
    }

    #[test]
    fn the_account_depends_on_hub_and_token_and_reveals_neither() {
        let hub = Url::parse("https://hub.example.com").unwrap();
        let a = SecretString::from("token-aaaaaaaaaaaaaaaa".to_owned());
        let b = SecretString::from("token-bbbbbbbbbbbbbbbb".to_owned());
        assert_eq!(account_id(None, Some(&a)), "local");
        let with_a = account_id(Some(&hub), Some(&a));
        assert_eq!(with_a.len(), 16);
        assert!(with_a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(with_a, account_id(Some(&hub), Some(&a)));
        assert_ne!(with_a, account_id(Some(&hub), Some(&b)));
        let other = Url::parse("https://other.example.com").unwrap();
        assert_ne!(with_a, account_id(Some(&other), Some(&a)));
    }

    #[test]
    fn the_first_rotation_token_is_the_link_token() {
        let vars = env(&[("ABR_API_TOKEN", " , first-token , second")]);
        let token = first_api_token(&crate::config::api_tokens(&vars)).unwrap();
        assert_eq!(token.expose_secret(), "first-token");
        assert!(first_api_token(&crate::config::api_tokens(&env(&[]))).is_none());
        // As `abr up` has them: the configuration's checked tokens.
        let config = crate::config::RunnerConfig::load(
            &env(&[
                (
                    "ABR_API_TOKEN",
                    " , first-token-0123456789 , second-token-0123456789",
                ),
                ("HOME", "/home/abr-test"),
            ]),
            None,
            false,
        )
        .unwrap();
        let token = first_api_token(&config.api_tokens).unwrap();
        assert_eq!(token.expose_secret(), "first-token-0123456789");
    }
}
