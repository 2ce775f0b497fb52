//! Tenant ids (`workspaceId`, `accountId`): the same bounds on every operation, checked
//! before anything records them (audit events carry them).

use crate::error::CoreError;

/// Longest tenant id, in bytes.
pub(crate) const MAX_TENANT_ID: usize = 256;

/// Checks one tenant id (`field` names it in the error): when present, 1 to 256 bytes of
/// printable text.
///
/// # Errors
/// [`CoreError::InvalidInput`] naming `field`.
pub fn check(field: &str, value: Option<&str>) -> Result<(), CoreError> {
    match value {
        None => Ok(()),
        Some(v)
            if !v.is_empty() && v.len() <= MAX_TENANT_ID && !v.chars().any(char::is_control) =>
        {
            Ok(())
        }
        Some(_) => Err(CoreError::InvalidInput(format!(
            "{field} must be 1 to {MAX_TENANT_ID} bytes of printable text"
        ))),
    }
}

/// A person's name (an approver, an asserter, who decided on a site): trimmed, 1 to 256
/// bytes of printable text; answers it trimmed.
///
/// # Errors
/// [`CoreError::InvalidInput`] naming `field`.
pub fn person(field: &str, value: &str) -> Result<String, CoreError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(CoreError::InvalidInput(format!(
            "{field} must not be empty"
        )));
    }
    check(field, Some(value))?;
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_ids_are_bounded_and_printable() {
        assert!(check("workspaceId", None).is_ok());
        assert!(check("workspaceId", Some("ws-1")).is_ok());
        assert!(check("workspaceId", Some(&"é".repeat(128))).is_ok());
        for bad in [
            String::new(),
            "x".repeat(257),
            "a\nb".into(),
            "\u{7f}".into(),
        ] {
            let e = check("accountId", Some(&bad)).unwrap_err();
            assert_eq!(e.code(), "invalid_request");
            assert!(e.to_string().contains("accountId"), "{e}");
            assert!(!e.to_string().contains(&bad) || bad.is_empty());
        }
    }
}
