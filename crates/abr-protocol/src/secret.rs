//! [`SecretValue`]: a string that is a credential (cookie value, localStorage value).

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use subtle::ConstantTimeEq;

/// A string that must never show up in logs, `Debug` output or audit events.
///
/// Cookie values and localStorage values are bearer credentials: anyone holding them can act
/// as the account. The value is kept in a [`SecretString`] (zeroized on drop), serializes as a
/// plain JSON string (it has to travel on the wire), prints as `<redacted>` and compares in
/// constant time.
#[derive(Clone)]
pub struct SecretValue(SecretString);

impl SecretValue {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(SecretString::from(value.into()))
    }

    /// The value itself. Every read of a secret goes through here, so it is easy to audit.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// Length in bytes: safe to log.
    pub fn len(&self) -> usize {
        self.expose().len()
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl PartialEq for SecretValue {
    fn eq(&self, other: &Self) -> bool {
        self.expose()
            .as_bytes()
            .ct_eq(other.expose().as_bytes())
            .into()
    }
}

impl Eq for SecretValue {}

impl From<&str> for SecretValue {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for SecretValue {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl Serialize for SecretValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.expose())
    }
}

impl<'de> Deserialize<'de> for SecretValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}

/// On the wire a secret is a plain JSON string, both ways: its schema is `{"type": "string"}`,
/// inlined where it is used (the field's own description says what the string is). Nothing
/// of a value (no example, no default, no length) is ever part of it.
impl schemars::JsonSchema for SecretValue {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SecretValue".into()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        concat!(module_path!(), "::SecretValue").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let v = SecretValue::new("hunter2-canary");
        assert_eq!(format!("{v:?}"), "<redacted>");
        assert!(!format!("{:?}", vec![v]).contains("canary"));
    }

    #[test]
    fn serializes_as_plain_string_and_compares_by_value() {
        let v = SecretValue::new("abc");
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"abc\"");
        let back: SecretValue = serde_json::from_str("\"abc\"").unwrap();
        assert_eq!(back, v);
        assert_ne!(back, SecretValue::new("abd"));
        assert_ne!(back, SecretValue::new("ab"));
    }
}
