//! How the wire types describe themselves: [`settings`], the JSON Schema settings of every
//! schema ABR publishes (the HTTP API's OpenAPI description, the MCP tools' input and output
//! schemas): JSON Schema 2020-12 with only its standard formats ([`StandardFormats`]).

use schemars::Schema;
use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use serde_json::Value;

/// The formats JSON Schema 2020-12 defines. OpenAPI's registered `int32`, `int64`, `float`
/// and `double` are not among them: a strict JSON Schema validator rejects an unknown
/// format, and a schema shared with MCP clients must pass one.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Whether `format` is one JSON Schema 2020-12 defines.
pub fn is_standard_format(format: &str) -> bool {
    STANDARD_FORMATS.contains(&format)
}

/// A schemars transform that drops every `format` JSON Schema 2020-12 does not define
/// (schemars writes `uint32`, `int64`, `double`…; the bounds it writes with them stay).
#[derive(Debug, Clone, Copy, Default)]
pub struct StandardFormats;

impl Transform for StandardFormats {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(object) = schema.as_object_mut()
            && object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !is_standard_format(f))
        {
            object.remove("format");
        }
        transform_subschemas(self, schema);
    }
}

/// The settings of every schema ABR publishes: JSON Schema 2020-12, standard formats only;
/// a request's schema as serde reads it (add `for_serialize()` for what it writes).
pub fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with_transform(StandardFormats)
}
