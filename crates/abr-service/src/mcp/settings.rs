//! [`McpSettings`]: what the operator decides about the MCP server, never the model: whether
//! it is read-only, and (for `abr mcp` on stdio) the tenant its calls act for. Read from the
//! environment by [`crate::config`] ([`McpSection`]), nowhere else.

use crate::config::McpSection;

/// An MCP setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpSettingsError {
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
    /// The settings the configuration's MCP section names (`ABR_MCP_READ_ONLY`,
    /// `ABR_MCP_TENANT`, parsed by [`crate::config`]).
    pub fn from_config(section: &McpSection) -> Self {
        Self {
            read_only: section.read_only,
            tenant: section.tenant.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_are_the_sections() {
        assert_eq!(
            McpSettings::from_config(&McpSection::default()),
            McpSettings::default()
        );
        let section = McpSection {
            read_only: true,
            tenant: Some("acme".to_owned()),
            key: None,
        };
        let settings = McpSettings::from_config(&section);
        assert!(settings.read_only);
        assert_eq!(settings.tenant.as_deref(), Some("acme"));
    }
}
