//! The finishing pass: the description of the router aide gathered, as JSON, with what
//! the routes' types cannot say (info, security, every operation's error answers from its
//! codes, path parameters from the path, tags) and `/mcp` described as what it is.

use std::collections::BTreeMap;

use abr_protocol::codes::{self, ErrorCode, Retry};
use serde_json::{Map, Value, json};

use super::shape;
use super::{API_VERSION, ERRORS, EVERYWHERE};

/// The description of the router whose operations aide gathered into `api`, as JSON:
/// info, security, the error envelope, every operation's error answers, path parameters
/// and tags.
pub(crate) fn finish(api: &aide::openapi::OpenApi) -> Value {
    let envelope = aide::generate::in_context(|ctx| {
        let _ = ctx.schema.subschema_for::<abr_protocol::ErrorEnvelope>();
        ctx.schema.take_definitions(true)
    });
    let mut doc = serde_json::to_value(api).unwrap_or(Value::Null);
    // Schemas aide inlines (a query's, a path's) did not pass the generator's transforms.
    shape::standard_formats_only(&mut doc);
    // `true` (any JSON value) is a valid schema, but not to every client generator: `{}`.
    shape::no_boolean_schemas(&mut doc);
    shape::nullable_structures_as_any_of(&mut doc);
    // An optional field's `"default": null` says nothing its absence does not.
    shape::no_null_defaults(&mut doc);
    shape::const_alternatives_as_enum(&mut doc);
    let Some(root) = doc.as_object_mut() else {
        return doc;
    };
    root.insert("openapi".into(), json!("3.1.0"));
    root.insert(
        "jsonSchemaDialect".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    root.insert("info".into(), info());
    let components = root
        .entry("components")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(components) = components {
        let schemas = components
            .entry("schemas")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(schemas) = schemas {
            for (name, schema) in envelope {
                schemas.entry(name).or_insert(schema);
            }
            schemas.insert("ErrorCode".into(), error_codes());
        }
        components.insert(
            "securitySchemes".into(),
            json!({"bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key (`POST /v1/keys`) or the operator's bootstrap token \
                    (`ABR_API_TOKEN`), as `Authorization: Bearer <token>`. A key has a role \
                    (`agent` proposes and acts, `approver` approves, `operator` every right on \
                    every tenant) and, unless an operator's, one tenant; a read-only key never \
                    commits. Each operation names the right it needs."
            }}),
        );
    }
    if let Some(paths) = root.get_mut("paths").and_then(Value::as_object_mut) {
        // axum's `{*rest}` is OpenAPI's `{rest}`.
        let starred: Vec<String> = paths.keys().filter(|p| p.contains("{*")).cloned().collect();
        for path in starred {
            if let Some(item) = paths.remove(&path) {
                paths.insert(path.replace("{*", "{"), item);
            }
        }
        paths.insert("/mcp".into(), mcp_path());
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for (method, operation) in item.iter_mut() {
                if !is_method(method) {
                    continue;
                }
                if let Some(operation) = operation.as_object_mut() {
                    finish_operation(path, operation);
                }
            }
        }
    }
    doc
}

/// `/mcp`: the MCP endpoint (streamable HTTP), described as what it is: JSON-RPC 2.0, whose
/// tools, their arguments and results `tools/list` describes.
fn mcp_path() -> Value {
    json!({"post": {
        "operationId": "mcp",
        "summary": "The MCP endpoint (Model Context Protocol, streamable HTTP): JSON-RPC 2.0",
        "description": "An AI agent's tools: `initialize`, then `tools/list` (each tool with \
            its input and output schemas) and `tools/call`. A tool calls this API with the \
            caller's own key, so its rights and tenant are the key's. Read-only when the \
            runner says so (`ABR_MCP_READ_ONLY`).",
        "security": [{"bearer": []}],
        "x-abr-errors": ["unauthorized", "forbidden", "unsupported_media_type", "payload_too_large"],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {
            "type": "object",
            "description": "A JSON-RPC 2.0 request, notification or response.",
            "required": ["jsonrpc"],
            "properties": {"jsonrpc": {"const": "2.0"}},
        }}}},
        "responses": {
            "200": {"description": "The JSON-RPC answer (JSON, or an event stream when the \
                client accepts one).",
                "content": {
                    "application/json": {"schema": {"type": "object"}},
                    "text/event-stream": {"schema": {"type": "string"}},
                }},
            "202": {"description": "A notification or response was accepted."},
        },
    }})
}

fn is_method(name: &str) -> bool {
    matches!(
        name,
        "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace"
    )
}

/// One operation: its tag, path parameters, tenant header, and error answers.
fn finish_operation(path: &str, operation: &mut Map<String, Value>) {
    if let Some(tag) = tag_of(path) {
        operation.insert("tags".into(), json!([tag]));
    }
    let parameters = operation
        .entry("parameters")
        .or_insert_with(|| json!([]))
        .as_array_mut();
    if let Some(parameters) = parameters {
        let named = |parameters: &Vec<Value>, name: &str, place: &str| {
            parameters
                .iter()
                .any(|p| p["name"] == name && p["in"] == place)
        };
        for name in path_parameters(path) {
            if !named(parameters, name, "path") {
                parameters.push(json!({
                    "name": name,
                    "in": "path",
                    "required": true,
                    "description": parameter_meaning(name),
                    "schema": {"type": "string", "minLength": 1},
                }));
            }
        }
        if operation.remove("x-abr-tenant-header").is_some()
            && let Some(parameters) = operation
                .get_mut("parameters")
                .and_then(Value::as_array_mut)
            && !named(parameters, "x-tenant-id", "header")
        {
            parameters.push(json!({
                "name": "x-tenant-id",
                "in": "header",
                "required": false,
                "description": "The tenant the request acts for: an operator's key names any \
                    (else `default`); a key bound to one tenant acts for it, and naming another \
                    is `403 tenant_forbidden`. A body's `tenantId`/`workspaceId` may name it \
                    instead; the two must agree.",
                "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"},
            }));
        }
    }
    if operation
        .get("parameters")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        operation.remove("parameters");
    }
    let mut named: Vec<ErrorCode> = EVERYWHERE.to_vec();
    if let Some(Value::Array(list)) = operation.remove(ERRORS) {
        for code in list.iter().filter_map(Value::as_str) {
            if let Some(known) = codes::ALL.iter().find(|c| c.code == code)
                && !named.contains(known)
            {
                named.push(*known);
            }
        }
    }
    // A store call that can fail can find the store misconfigured too.
    if named.contains(&codes::STORE_FAILED) {
        named.push(codes::STORE_MISCONFIGURED);
    }
    let responses = operation
        .entry("responses")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(responses) = responses {
        for (status, answer) in error_answers(&named) {
            responses.entry(status).or_insert(answer);
        }
    }
}

/// The error answers of `named`, one per status: the envelope, the codes of that status
/// (`x-abr-codes`, and in words), `Retry-After` where one of them is retryable.
fn error_answers(named: &[ErrorCode]) -> BTreeMap<String, Value> {
    let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in named {
        by_status.entry(code.status).or_default().push(*code);
    }
    by_status
        .into_iter()
        .map(|(status, mut group)| {
            group.sort_by_key(|c| c.code);
            let description = format!(
                "Refused: {} (see the schema `ErrorCode` for what each means).",
                group
                    .iter()
                    .map(|c| format!("`{}`", c.code))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let names: Vec<&str> = group.iter().map(|c| c.code).collect();
            // One shared envelope (a generated client gets one error type, not one per
            // route and status); this route's codes for the status beside it.
            let mut answer = json!({
                "description": description,
                "content": {"application/json": {"schema": {
                    "$ref": "#/components/schemas/ErrorEnvelope",
                }}},
                "x-abr-codes": names,
            });
            if group.iter().any(|c| c.retry == Retry::Yes) && matches!(status, 429 | 503) {
                answer["headers"] = json!({"Retry-After": {
                    "description": "Seconds to wait before the same request may pass.",
                    "schema": {"type": "integer", "minimum": 1},
                }});
            }
            if status == 401 {
                answer["headers"] = json!({"WWW-Authenticate": {
                    "description": "`Bearer`.",
                    "schema": {"type": "string"},
                }});
            }
            (status.to_string(), answer)
        })
        .collect()
}

/// Every error code, each with its status, whether a retry may pass, and what it means:
/// the table the envelopes' `code` comes from.
fn error_codes() -> Value {
    let all: Vec<Value> = codes::ALL
        .iter()
        .map(|c| {
            let retry = match c.retry {
                Retry::Yes => "retryable",
                Retry::No => "not retryable",
                Retry::Depends => "retryable as the envelope says",
            };
            json!({
                "const": c.code,
                "description": format!("{} (HTTP {}, {retry}).", c.meaning, c.status),
            })
        })
        .collect();
    json!({
        "description": "The stable code of a refusal (`error.code`).",
        "type": "string",
        "oneOf": all,
    })
}

/// The `{name}` parameters of a route's path (a `{*rest}` one without its star).
fn path_parameters(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| name.trim_start_matches('*'))
        .collect()
}

/// What a path parameter names.
fn parameter_meaning(name: &str) -> &'static str {
    match name {
        "id" => "The id the runner gave it.",
        "capture_id" => "The capture's id (a credential: whoever holds it finishes the capture).",
        "run_id" => "The run's id (a task's id, or a post's).",
        "seq" => "The frame's number in its run.",
        "name" => "The screenshot's name.",
        "domain" => "The site's domain.",
        "token" => "The single-use token of the link.",
        "runner_id" => "The relay runner's id.",
        "rest" => "The rest of the viewed page's path.",
        _ => "A path parameter.",
    }
}

/// The tag of a path: its first segment after `/v1`.
fn tag_of(path: &str) -> Option<String> {
    let mut segments = path.trim_start_matches('/').split('/');
    let first = segments.next()?;
    let tag = if first == "v1" {
        segments.next()?
    } else {
        first
    };
    let tag = match tag {
        "post" => "posts",
        "health" | "ready" | "metrics" => "runner",
        other => other,
    };
    Some(tag.trim_end_matches(".json").to_owned())
}

/// The description's `info`.
fn info() -> Value {
    json!({
        "title": "ABR, the Agent Browser Runtime",
        "version": API_VERSION,
        "summary": "Replays a user's signed-in browser session, unattended and safely, and \
            proves what it did.",
        "description": "Every refusal is the envelope `{\"error\": {\"code\", \"message\", \
            \"retryable\"}}`; each operation lists the codes it can answer, per status. A \
            `retryable` refusal may pass later (`Retry-After` says when, where given); an \
            `uncertain` outcome may have happened and is never retried blindly. \
            See docs/http-api.md.",
        "license": {"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"},
    })
}
