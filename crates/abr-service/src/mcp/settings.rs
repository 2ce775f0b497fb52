//! [`McpSettings`]: what the operator decides about the MCP server, never the model: whether
//! it is read-only, and (for `abr mcp` on stdio) the tenant its calls act for.

use std::collections::HashMap;

/// The environment variable that makes the MCP server read-only.
pub const READ_ONLY_VAR: &str = "ABR_MCP_READ_ONLY";
/// The environment variable naming the tenant of `abr mcp` (stdio).
pub const TENANT_VAR: &str = "ABR_MCP_TENANT";

/// A bad MCP setting, naming the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpSettingsError {
    /// A variable holds a value it does not accept.
    #[error("{key}: {reason}")]
    Invalid {
        /// The variable.
        key: &'static str,
        /// Why the value was refused (never the value itself).
        reason: &'static str,
    },
    /// A credential or tenant that cannot be sent as an HTTP header value.
    #[error("the {0} cannot be sent as an HTTP header value")]
    NotAHeader(&'static str),
}

/// The operator's settings of the MCP server.
///
/// `read_only` is a property of the server, not of a call: when set, the `post` and
/// `task_create` tools are not offered (and refused if called anyway) and every browse
/// session opened through MCP is read-only, whatever the model sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpSettings {
    /// Read-only MCP: no posting, no tasks, browse sessions forced read-only.
    pub read_only: bool,
    /// The tenant of `abr mcp` (stdio). `None`: the runner's default tenant. Over HTTP the
    /// tenant is the caller's own `x-tenant-id` header instead.
    pub tenant: Option<String>,
}

impl McpSettings {
    /// Reads [`READ_ONLY_VAR`] (`true`/`1`/`on` or `false`/`0`/`off`, default off) and
    /// [`TENANT_VAR`] (checked like every tenant id) from `env`.
    ///
    /// # Errors
    /// [`McpSettingsError::Invalid`] naming the variable whose value is refused.
    pub fn from_env(env: &HashMap<String, String>) -> Result<Self, McpSettingsError> {
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let read_only = match get(READ_ONLY_VAR) {
            None => false,
            Some(v) => parse_switch(v).ok_or(McpSettingsError::Invalid {
                key: READ_ONLY_VAR,
                reason: "use true or false",
            })?,
        };
        let tenant = get(TENANT_VAR).map(str::to_owned);
        abr_core::check_tenant_id(TENANT_VAR, tenant.as_deref()).map_err(|_| {
            McpSettingsError::Invalid {
                key: TENANT_VAR,
                reason: "not a valid tenant id",
            }
        })?;
        Ok(Self { read_only, tenant })
    }
}

/// `true`/`1`/`on` or `false`/`0`/`off` (any case).
fn parse_switch(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "on" => Some(true),
        "false" | "0" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn read_only_is_off_unless_switched_on() {
        assert_eq!(McpSettings::from_env(&env(&[])), Ok(McpSettings::default()));
        for on in ["true", "1", "ON", " on "] {
            let settings = McpSettings::from_env(&env(&[(READ_ONLY_VAR, on)])).unwrap();
            assert!(settings.read_only, "{on:?}");
        }
        for off in ["false", "0", "off", ""] {
            let settings = McpSettings::from_env(&env(&[(READ_ONLY_VAR, off)])).unwrap();
            assert!(!settings.read_only, "{off:?}");
        }
    }

    #[test]
    fn a_bad_value_is_refused_naming_the_variable_not_the_value() {
        let err = McpSettings::from_env(&env(&[(READ_ONLY_VAR, "yes-please")])).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("ABR_MCP_READ_ONLY: "), "{text}");
        assert!(!text.contains("yes-please"), "{text}");
        let long = "t".repeat(10_000);
        let err = McpSettings::from_env(&env(&[(TENANT_VAR, &long)])).unwrap_err();
        assert!(err.to_string().starts_with("ABR_MCP_TENANT: "), "{err}");
    }

    #[test]
    fn the_tenant_is_taken_as_given() {
        let settings = McpSettings::from_env(&env(&[(TENANT_VAR, "acme")])).unwrap();
        assert_eq!(settings.tenant.as_deref(), Some("acme"));
    }
}
