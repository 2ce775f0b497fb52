//! A serde_json error reduced to what is safe to print: serde quotes the offending input
//! (`invalid type: string "<value>"`), and inputs here are sessions and requests full of
//! secrets. Shared by the API's error envelopes and the command line's messages.

use std::fmt;

/// A serde_json error reduced to what is safe to print: a sanitised message and the
/// position. Displays as `<message> at line L column C` (position omitted when unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonDetail {
    /// The sanitised message: never contains a string or literal taken from the input.
    pub(crate) message: String,
    /// 1-based line, 0 when unknown.
    pub(crate) line: usize,
    /// 1-based column, 0 when unknown.
    pub(crate) column: usize,
}

impl JsonDetail {
    /// Reduces `err` to a safe detail.
    ///
    /// Syntax and EOF messages are serde_json's fixed texts and are kept. Data messages go
    /// through [`sanitize_data_message`]. I/O messages (not produced by the in-memory parsing
    /// used here) are kept: they describe the I/O failure, not the content.
    pub(crate) fn new(err: &serde_json::Error) -> Self {
        let (line, column) = (err.line(), err.column());
        let full = err.to_string();
        let raw = if line == 0 {
            full.as_str()
        } else {
            full.strip_suffix(&format!(" at line {line} column {column}"))
                .unwrap_or(&full)
        };
        let message = match err.classify() {
            serde_json::error::Category::Data => sanitize_data_message(raw),
            serde_json::error::Category::Syntax
            | serde_json::error::Category::Eof
            | serde_json::error::Category::Io => raw.to_owned(),
        };
        Self {
            message: single_line(&message),
            line,
            column,
        }
    }
}

impl fmt::Display for JsonDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if self.line != 0 {
            write!(f, " at line {} column {}", self.line, self.column)?;
        }
        Ok(())
    }
}

/// Why a body could not be read as the type asked for, with where: safe to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadError {
    /// Whether the body is not JSON at all (`false`: JSON of the wrong shape).
    pub(crate) syntax: bool,
    /// The sanitised message and, for JSON of the wrong shape, where it is (` at
    /// plan.steps[0]`); for a syntax error, the position (` at line L column C`).
    pub(crate) detail: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// `bytes` as `T`, the whole of them; an error says what and where without a value.
pub(crate) fn read_slice<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ReadError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| read_error(&e))?;
    de.end().map_err(|e| ReadError {
        syntax: true,
        detail: JsonDetail::new(&e).to_string(),
    })?;
    Ok(value)
}

/// `value` as `T`; an error says what and where without a value.
pub(crate) fn read_value<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, ReadError> {
    serde_path_to_error::deserialize(value).map_err(|e| read_error(&e))
}

fn read_error(e: &serde_path_to_error::Error<serde_json::Error>) -> ReadError {
    let inner = e.inner();
    let detail = JsonDetail::new(inner);
    if !matches!(inner.classify(), serde_json::error::Category::Data) {
        return ReadError {
            syntax: true,
            detail: detail.to_string(),
        };
    }
    let mut segments: Vec<String> = e
        .path()
        .iter()
        .map(|segment| match segment {
            serde_path_to_error::Segment::Seq { index } => format!("[{index}]"),
            serde_path_to_error::Segment::Map { key } if is_name(key) => key.clone(),
            serde_path_to_error::Segment::Enum { variant } if is_name(variant) => variant.clone(),
            // A key or variant that is not a plain name is input: never repeated.
            _ => "?".to_owned(),
        })
        .collect();
    // An unknown field's path ends with the field itself, which the message names.
    let unknown = detail
        .message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next());
    if unknown.is_some() && segments.last().map(String::as_str) == unknown {
        segments.pop();
    }
    let mut path = String::new();
    for segment in segments {
        if !path.is_empty() && !segment.starts_with('[') {
            path.push('.');
        }
        path.push_str(&segment);
    }
    let detail = if path.is_empty() {
        detail.message
    } else {
        format!("{} at {path}", detail.message)
    };
    ReadError {
        syntax: false,
        detail,
    }
}

/// Whether `name` is a plain field or variant name (letters, digits, `_`, `-`, `$`; at most
/// 64), safe to repeat in an error.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'$')
}

/// Said instead of a data error message that could not be proven free of input values.
const GENERIC_DATA_ERROR: &str = "invalid data";

/// Rewrites a serde data error message so that it contains no input literal.
///
/// serde's messages quote the offending input: `invalid type: string "v", expected a
/// sequence`, `invalid value: integer `5`, expected ...`, `unknown variant `v`, expected one
/// of ...`. The literal is replaced by its kind (`string`, `integer`, ...), keeping the
/// `expected ...` part, which comes from the program's types. Field names in `unknown field`
/// are kept only when they look like identifiers (they are object keys, not values).
/// `missing field`, `duplicate field` and `invalid length` name only program fields and
/// counts and are kept as is. Anything else is kept only when it contains no quote or
/// backtick (custom messages such as "cookie expires must be a finite number"), otherwise it
/// becomes "invalid data".
pub(crate) fn sanitize_data_message(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            let Some((unexpected, expected)) = split_expected(rest) else {
                return GENERIC_DATA_ERROR.to_owned();
            };
            // `string "..."`, `integer `5``, `floating point `1.5``, `map`, `null`: the kind
            // is everything before the first quote or backtick.
            let kind = unexpected
                .split(['"', '`'])
                .next()
                .unwrap_or_default()
                .trim();
            let kind = if kind.is_empty() { "value" } else { kind };
            return format!("{prefix}{kind}, expected {expected}");
        }
    }
    if message.starts_with("unknown variant ") {
        return match split_expected(message) {
            Some((_, expected)) => format!("unknown variant, expected {expected}"),
            None => "unknown variant".to_owned(),
        };
    }
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or_default();
        let field = if is_name(name) {
            format!("unknown field `{name}`")
        } else {
            "unknown field".to_owned()
        };
        return match split_expected(rest) {
            Some((_, expected)) => format!("{field}, expected {expected}"),
            None if rest.ends_with(", there are no fields") => {
                format!("{field}, there are no fields")
            }
            None => field,
        };
    }
    let from_program_only = ["missing field `", "duplicate field `", "invalid length "]
        .iter()
        .any(|prefix| message.starts_with(prefix));
    if from_program_only || !message.contains(['"', '`']) {
        return message.to_owned();
    }
    GENERIC_DATA_ERROR.to_owned()
}

/// Splits `<unexpected>, expected <expected>` at the last `, expected `: the expected part
/// comes from the program, the unexpected part may contain input and the separator itself.
fn split_expected(message: &str) -> Option<(&str, &str)> {
    let at = message.rfind(", expected ")?;
    let (unexpected, rest) = message.split_at(at);
    let expected = rest.strip_prefix(", expected ")?;
    Some((unexpected, expected))
}

/// `text` with control characters (newlines included) escaped, so it fits on one line.
pub(crate) fn single_line(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use abr_protocol::{AgentSessionState, SessionScopeSpec};

    use super::*;

    const CANARY: &str = "canary-secret-123";

    fn state_error(json: &str) -> JsonDetail {
        let err = serde_json::from_str::<AgentSessionState>(json).unwrap_err();
        JsonDetail::new(&err)
    }

    #[test]
    fn invalid_type_string_loses_its_value() {
        let raw =
            serde_json::from_str::<AgentSessionState>(&format!(r#"{{"cookies":"{CANARY}"}}"#))
                .unwrap_err()
                .to_string();
        assert!(
            raw.contains(CANARY),
            "premise: serde_json echoes the value: {raw}"
        );
        let detail = state_error(&format!("{{\n  \"cookies\": \"{CANARY}\"\n}}"));
        assert_eq!(detail.message, "invalid type: string, expected a sequence");
        assert_eq!(detail.line, 2);
        assert!(!detail.to_string().contains(CANARY));
    }

    #[test]
    fn wrong_types_inside_cookies_and_local_storage_lose_their_values() {
        let cases = [
            r#"{"cookies":[{"name":"a","value":1234567,"domain":"x.com"}]}"#.to_owned(),
            format!(
                r#"{{"cookies":[{{"name":"a","value":"v","domain":"x.com","path":"{CANARY}","secure":"{CANARY}"}}]}}"#
            ),
            format!(
                r#"{{"cookies":[{{"name":"a","value":"v","domain":"x.com","sameSite":"{CANARY}"}}]}}"#
            ),
            format!(
                r#"{{"origins":[{{"origin":"https://x.com","localStorage":[{{"name":"k","value":["{CANARY}"]}}]}}]}}"#
            ),
            format!(r#"{{"origins":[{{"origin":"https://x.com","localStorage":"{CANARY}"}}]}}"#),
            format!(
                r#"{{"cookies":[{{"name":"a","value":"v","domain":"x.com","expires":"{CANARY}"}}]}}"#
            ),
            format!(r#"{{"metadata":{{"formatVersion":1,"capturedAt":"{CANARY}"}}}}"#),
            format!(r#"{{"metadata":{{"formatVersion":"{CANARY}"}}}}"#),
            format!(r#"["{CANARY}"]"#),
            format!(r#""{CANARY}""#),
        ];
        for json in cases {
            let detail = state_error(&json);
            let text = detail.to_string();
            assert!(!text.contains(CANARY), "{json} -> {text}");
            assert!(!text.contains("1234567"), "{json} -> {text}");
            assert_ne!(detail.message, GENERIC_DATA_ERROR, "{json} -> {text}");
        }
    }

    #[test]
    fn sanitizer_rewrites_every_literal_form() {
        let cases = [
            (
                r#"invalid type: string "x, expected y", expected a sequence"#,
                "invalid type: string, expected a sequence",
            ),
            (
                "invalid type: integer `5`, expected a string",
                "invalid type: integer, expected a string",
            ),
            (
                "invalid type: floating point `1.5`, expected a string",
                "invalid type: floating point, expected a string",
            ),
            (
                "invalid type: map, expected a string",
                "invalid type: map, expected a string",
            ),
            (
                "invalid value: string \"zz\", expected an rfc3339 date",
                "invalid value: string, expected an rfc3339 date",
            ),
            (
                "unknown variant `secret`, expected one of `Strict`, `Lax`, `None`",
                "unknown variant, expected one of `Strict`, `Lax`, `None`",
            ),
            (
                "unknown field `cookieDomain`, expected `cookieDomains` or `origins`",
                "unknown field `cookieDomain`, expected `cookieDomains` or `origins`",
            ),
            (
                "unknown field `a b`, expected `cookieDomains` or `origins`",
                "unknown field, expected `cookieDomains` or `origins`",
            ),
            ("missing field `name`", "missing field `name`"),
            (
                "cookie expires must be a finite number",
                "cookie expires must be a finite number",
            ),
            ("something quoted \"x\"", GENERIC_DATA_ERROR),
            ("invalid type: string \"no separator", GENERIC_DATA_ERROR),
        ];
        for (raw, want) in cases {
            assert_eq!(sanitize_data_message(raw), want, "{raw}");
        }
    }

    #[test]
    fn unknown_scope_field_is_named() {
        let err =
            serde_json::from_str::<SessionScopeSpec>(r#"{"cookieDomain":["x.com"]}"#).unwrap_err();
        assert_eq!(
            JsonDetail::new(&err).to_string(),
            "unknown field `cookieDomain`, expected `cookieDomains` or `origins` at line 1 \
             column 15"
        );
    }

    #[test]
    fn a_read_error_says_where_and_never_what() {
        let body = format!(
            r#"{{"plan": {{"targetUrl": "{CANARY}", "steps": [{{"type": "click", "selector": "x", "description": "d", "readOnly": "{CANARY}"}}], "verification": {{"method": "dom_check", "text": "t"}}, "readonly": "{CANARY}"}}}}"#
        );
        let e = read_slice::<abr_protocol::StepPlan>(
            body.strip_prefix(r#"{"plan": "#)
                .and_then(|b| b.strip_suffix('}'))
                .unwrap_or_default()
                .as_bytes(),
        )
        .unwrap_err();
        assert!(!e.syntax);
        assert!(e.detail.contains("unknown field `readOnly`"), "{e}");
        assert!(e.detail.ends_with(" at steps[0]"), "{e}");
        assert!(!e.detail.contains(CANARY), "{e}");
        let e = read_slice::<abr_protocol::TaskRequest>(body.as_bytes()).unwrap_err();
        assert!(e.detail.contains("at plan.steps[0]"), "{e}");
        let top = read_value::<abr_protocol::ApproveRequest>(serde_json::json!({
            "approvedBy": "a", "planHash": "h", "dryrun": CANARY
        }))
        .unwrap_err();
        assert!(top.detail.starts_with("unknown field `dryrun`"), "{top}");
        assert!(!top.detail.contains(" at "), "{top}");
        // A key that is not a name is not repeated in the path.
        let mut inputs = serde_json::Map::new();
        inputs.insert(format!("{CANARY} x"), serde_json::json!(5));
        let odd = read_value::<abr_protocol::TaskRequest>(serde_json::json!({
            "plan": {"targetUrl": "u", "steps": [], "verification": {"method": "screenshot", "text": "t"}},
            "inputs": inputs
        }))
        .unwrap_err();
        assert!(!odd.detail.contains(CANARY), "{odd}");
        assert!(odd.detail.contains("at inputs.?"), "{odd}");
        let e = read_slice::<abr_protocol::ApproveRequest>(b"{\"approvedBy\": ").unwrap_err();
        assert!(e.syntax, "{e}");
        let e =
            read_slice::<abr_protocol::ScreenshotsSetting>(b"{\"enabled\": true} x").unwrap_err();
        assert!(e.syntax, "{e}");
    }

    #[test]
    fn syntax_errors_keep_serde_text() {
        let detail = state_error("{\"cookies\": [,]}");
        assert_eq!(detail.to_string(), "expected value at line 1 column 14");
    }
}
