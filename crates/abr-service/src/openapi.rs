//! The HTTP API as a published contract: the OpenAPI 3.1 description, generated from the
//! router itself (aide's `ApiRouter`: a documented handler's every extractor and answer
//! describes itself from the same Rust types that serialize the wire), served at
//! `GET /openapi.json` and committed at `docs/openapi.json` (a test keeps the two equal).
//!
//! What a route adds by hand is what its types cannot say: its operation id and summary,
//! the right it needs, the answers a handler builds as a plain `Response`, and the error
//! codes it can answer beyond its inputs'. The finishing pass then turns every operation's
//! codes into its error answers (one per status: the envelope, and that route's codes of
//! the status in `x-abr-codes`), names every path parameter from the path itself, and
//! tags operations by their path.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use abr_core::principal::{Right, role_allows};
use abr_protocol::Role;
use abr_protocol::codes::{self, ErrorCode, Retry};
use aide::generate::GenContext;
use aide::openapi::{
    MediaType, Operation, Parameter, ParameterData, ParameterSchemaOrContent, ReferenceOr,
    Response, SchemaObject, StatusCode,
};
use aide::operation::OperationOutput;
use aide::transform::TransformOperation;
use axum::response::IntoResponse;
use axum::response::sse::Sse;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// The version of the HTTP API this runner answers (the description's `info.version`):
/// its major changes only when a field or route is removed or retyped (see
/// `docs/api-changelog.md`).
pub const API_VERSION: &str = "1.0.0";

/// Where the description is served.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// The operation extension that carries a route's error codes until [`finish`].
const ERRORS: &str = "x-abr-errors";

/// Codes any route can answer: the deadline, a draining replica, an internal error.
const EVERYWHERE: &[ErrorCode] = &[codes::INTERNAL, codes::TIMEOUT, codes::RUNNER_DRAINING];

/// Codes a route behind a key can answer: no key, a key without the right, another
/// tenant, a malformed `x-tenant-id`; and, when `x-abr-runner` names a runner of the
/// relay, that runner being away or the answer lost on the way.
const WITH_A_KEY: &[ErrorCode] = &[
    codes::UNAUTHORIZED,
    codes::FORBIDDEN,
    codes::TENANT_FORBIDDEN,
    codes::INVALID_REQUEST,
    codes::RUNNER_OFFLINE,
    codes::RUNNER_DISCONNECTED,
    codes::RUNNER_OUTCOME_UNKNOWN,
    codes::RELAY_FRAME_TOO_LARGE,
];

/// Codes a JSON body can be refused with.
pub(crate) const WITH_A_BODY: &[ErrorCode] = &[
    codes::INVALID_JSON,
    codes::INVALID_BODY,
    codes::PAYLOAD_TOO_LARGE,
    codes::UNSUPPORTED_MEDIA_TYPE,
    codes::INVALID_REQUEST,
];

/// Codes a call for something one replica of a fleet holds can answer (a browse session,
/// a capture, a takeover, a relay runner): its replica gone, unreachable, or gone mid-call.
pub(crate) const PLACED: &[ErrorCode] = &[
    codes::REPLICA_LOST,
    codes::REPLICA_UNREACHABLE,
    codes::REPLICA_OUTCOME_UNKNOWN,
];

/// Codes of a call that opens a browser: the provider, the browser, the tenant's limits,
/// the runner's queue.
pub(crate) const OPENS_A_BROWSER: &[ErrorCode] = &[
    codes::PROVIDER_BUSY,
    codes::PROVIDER_UNAVAILABLE,
    codes::PROVIDER_TIMEOUT,
    codes::PROVIDER_MISCONFIGURED,
    codes::PROVIDER_REJECTED,
    codes::PROVIDER_ERROR,
    codes::PROVIDER_UNSUPPORTED,
    codes::PROVIDER_PANICKED,
    codes::BROWSER_CRASHED,
    codes::TENANT_CONCURRENCY_LIMIT,
    codes::TENANT_DAILY_LIMIT,
    codes::OVERLOADED,
    codes::QUEUE_TIMEOUT,
    codes::STORE_FAILED,
];

/// Sets aide's generator (per thread) to [`schema_settings`], named types under
/// `#/components/schemas/`: called before a router is built.
pub(crate) fn prepare() {
    aide::generate::infer_responses(true);
    // This resets the generator to aide's own settings: ours are set after it.
    aide::generate::extract_schemas(true);
    aide::generate::in_context(|ctx| {
        ctx.schema = SchemaGenerator::new(abr_protocol::schema::settings().with(|s| {
            s.definitions_path = "#/components/schemas/".into();
        }));
    });
}

/// What a route says of itself beyond its types.
pub(crate) trait Documented: Sized {
    /// Adds error codes the operation can answer.
    #[must_use]
    fn errors(self, codes: &[ErrorCode]) -> Self;
    /// Says which right the operation needs and which roles have it.
    #[must_use]
    fn needs(self, right: Right) -> Self;
    /// Adds an optional request header the operation reads.
    #[must_use]
    fn header(self, name: &str, description: &str) -> Self;
    /// Says the operation needs a key (as [`Caller`] does, for a handler that reads the
    /// principal another way).
    #[must_use]
    fn keyed(self) -> Self;
}

impl Documented for TransformOperation<'_> {
    fn errors(mut self, codes: &[ErrorCode]) -> Self {
        add_errors(self.inner_mut(), codes);
        self
    }

    fn needs(mut self, right: Right) -> Self {
        let roles: Vec<&str> = [Role::Agent, Role::Approver, Role::Operator, Role::Runner]
            .into_iter()
            .filter(|role| role_allows(*role, right))
            .map(Role::as_str)
            .collect();
        let line = format!(
            "Needs the right to {} (roles: {}){}.",
            right.describe(),
            roles.join(", "),
            if right.commits() {
                "; refused to a read-only key"
            } else {
                ""
            }
        );
        let operation = self.inner_mut();
        operation.description = Some(match operation.description.take() {
            Some(before) => format!("{before}\n\n{line}"),
            None => line,
        });
        operation
            .extensions
            .insert("x-abr-roles".into(), json!(roles));
        self
    }

    fn keyed(mut self) -> Self {
        keyed(self.inner_mut());
        self
    }

    fn header(mut self, name: &str, description: &str) -> Self {
        self.inner_mut()
            .parameters
            .push(ReferenceOr::Item(Parameter::Header {
                parameter_data: ParameterData {
                    name: name.to_owned(),
                    description: Some(description.to_owned()),
                    required: false,
                    deprecated: None,
                    format: ParameterSchemaOrContent::Schema(SchemaObject {
                        json_schema: schemars::json_schema!({"type": "string"}),
                        example: None,
                        external_docs: None,
                    }),
                    example: None,
                    examples: Default::default(),
                    explode: None,
                    extensions: Default::default(),
                },
                style: Default::default(),
            }));
        self
    }
}

/// Adds `codes` to the operation's error codes.
pub(crate) fn add_errors(operation: &mut Operation, codes: &[ErrorCode]) {
    let list = operation
        .extensions
        .entry(ERRORS.into())
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = list {
        for code in codes {
            let name = Value::from(code.code);
            if !list.contains(&name) {
                list.push(name);
            }
        }
    }
}

/// The operation needs a key: the bearer scheme, its refusals, the tenant header.
pub(crate) fn keyed(operation: &mut Operation) {
    let bearer = [("bearer".to_owned(), Vec::new())].into_iter().collect();
    if !operation.security.contains(&bearer) {
        operation.security.push(bearer);
    }
    add_errors(operation, WITH_A_KEY);
    operation
        .extensions
        .insert("x-abr-tenant-header".into(), Value::Bool(true));
}

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
    standard_formats_only(&mut doc);
    // `true` (any JSON value) is a valid schema, but not to every client generator: `{}`.
    no_boolean_schemas(&mut doc);
    nullable_structures_as_any_of(&mut doc);
    // An optional field's `"default": null` says nothing its absence does not.
    no_null_defaults(&mut doc);
    const_alternatives_as_enum(&mut doc);
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

/// Drops every `format` JSON Schema 2020-12 does not define, anywhere in `value` (a
/// property named `format` is an object, and stays).
fn standard_formats_only(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !abr_protocol::schema::is_standard_format(f))
            {
                map.remove("format");
            }
            map.values_mut().for_each(standard_formats_only);
        }
        Value::Array(items) => items.iter_mut().for_each(standard_formats_only),
        _ => {}
    }
}

/// Writes the schema `true` as `{}` (the same: any value) wherever a schema stands: a
/// body's or parameter's `schema`, `items`, `contentSchema`, a property, a named schema, an
/// alternative of `anyOf`/`oneOf`/`allOf`.
fn no_boolean_schemas(value: &mut Value) {
    fn empty_if_true(value: &mut Value) {
        if *value == Value::Bool(true) {
            *value = json!({});
        }
    }
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                match key.as_str() {
                    "schema" | "items" | "contentSchema" => empty_if_true(inner),
                    "properties" | "schemas" | "$defs" => {
                        if let Value::Object(named) = inner {
                            named.values_mut().for_each(empty_if_true);
                        }
                    }
                    "anyOf" | "oneOf" | "allOf" => {
                        if let Value::Array(alternatives) = inner {
                            alternatives.iter_mut().for_each(empty_if_true);
                        }
                    }
                    _ => {}
                }
                no_boolean_schemas(inner);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(no_boolean_schemas),
        _ => {}
    }
}

/// Writes a nullable object or array (`"type": ["object", "null"]`, which schemars writes
/// for an `Option` of a map or a list) as `anyOf: [{the object}, {"type": "null"}]`: the same
/// values, in the form client generators read (openapi-python-client drops a model with the
/// first).
fn nullable_structures_as_any_of(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.values_mut().for_each(nullable_structures_as_any_of);
            let Some(Value::Array(types)) = map.get("type") else {
                return;
            };
            let structure = ["object", "array"]
                .into_iter()
                .find(|t| types.iter().any(|x| x == t));
            let (Some(structure), true) = (
                structure,
                types.len() == 2 && types.contains(&json!("null")),
            ) else {
                return;
            };
            let mut inner = std::mem::take(map);
            for kept in ["description", "default", "title"] {
                if let Some(v) = inner.remove(kept) {
                    map.insert(kept.to_owned(), v);
                }
            }
            inner.insert("type".to_owned(), json!(structure));
            map.insert(
                "anyOf".to_owned(),
                json!([Value::Object(inner), {"type": "null"}]),
            );
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_structures_as_any_of),
        _ => {}
    }
}

/// Removes `"default": null` from every schema (schemars writes it for an optional field
/// that serde defaults): absent and `null` are the same there, and some generators read a
/// default as "always present".
fn no_null_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            map.values_mut().for_each(no_null_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(no_null_defaults),
        _ => {}
    }
}

/// Writes a `oneOf` of string constants (schemars' form of an enum whose values have their
/// own docs) as `enum`, each value's doc moved into the description as a list: the same
/// values, in the form every generator reads (openapi-python-client's union of constants
/// refused every value but the first).
fn const_alternatives_as_enum(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.values_mut().for_each(const_alternatives_as_enum);
            let Some(Value::Array(alternatives)) = map.get("oneOf") else {
                return;
            };
            let constants: Option<Vec<(Value, Option<String>)>> = alternatives
                .iter()
                .map(|a| {
                    let a = a.as_object()?;
                    let constant = a.get("const").filter(|c| c.is_string())?;
                    let known = a
                        .keys()
                        .all(|k| matches!(k.as_str(), "const" | "type" | "description"));
                    known.then(|| {
                        let doc = a
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                        (constant.clone(), doc)
                    })
                })
                .collect();
            let Some(constants) = constants.filter(|c| !c.is_empty()) else {
                return;
            };
            map.remove("oneOf");
            let values: Vec<Value> = constants.iter().map(|(c, _)| c.clone()).collect();
            let docs: Vec<String> = constants
                .iter()
                .filter_map(|(c, doc)| Some(format!("- `{}`: {}", c.as_str()?, doc.as_deref()?)))
                .collect();
            if !docs.is_empty() {
                let before = map
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|d| format!("{d}\n\n"))
                    .unwrap_or_default();
                map.insert(
                    "description".to_owned(),
                    Value::String(format!("{before}{}", docs.join("\n"))),
                );
            }
            map.insert("type".to_owned(), json!("string"));
            map.insert("enum".to_owned(), Value::Array(values));
        }
        Value::Array(items) => items.iter_mut().for_each(const_alternatives_as_enum),
        _ => {}
    }
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
        "health" | "ready" => "runner",
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

/// An event stream answer (`text/event-stream`): each event's `data` is the JSON of `T`.
pub(crate) struct EventStream<S, T>(Sse<S>, PhantomData<fn() -> T>);

impl<S, T> EventStream<S, T> {
    /// The stream `sse`, described as carrying `T`s.
    pub(crate) fn new(sse: Sse<S>) -> Self {
        Self(sse, PhantomData)
    }
}

impl<S, T> IntoResponse for EventStream<S, T>
where
    Sse<S>: IntoResponse,
{
    fn into_response(self) -> axum::response::Response {
        self.0.into_response()
    }
}

impl<S, T: JsonSchema> OperationOutput for EventStream<S, T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, _: &mut Operation) -> Option<Response> {
        let data = ctx.schema.subschema_for::<T>();
        Some(answer(
            "A server-sent event stream: each event's `data` is one JSON value \
             (`contentSchema`); `id` (where given) resumes it with `Last-Event-ID`.",
            &[(
                "text/event-stream",
                schemars::json_schema!({
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": data,
                }),
            )],
        ))
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        Self::operation_response(ctx, operation)
            .map(|r| (Some(StatusCode::Code(200)), r))
            .into_iter()
            .collect()
    }
}

/// A page image answer (a replay frame, a screenshot): JPEG, or PNG for screenshots kept
/// before frames were redacted JPEGs.
#[derive(Debug)]
pub(crate) struct Image;

impl OperationOutput for Image {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<Response> {
        let image =
            |kind: &str| schemars::json_schema!({"type": "string", "contentMediaType": kind});
        Some(answer(
            "The image (never cached, never sniffed: `nosniff`, a `sandbox` CSP).",
            &[
                ("image/jpeg", image("image/jpeg")),
                ("image/png", image("image/png")),
            ],
        ))
    }
}

/// An HTML page answer (the live view, the approval page).
#[derive(Debug)]
pub(crate) struct Page;

impl OperationOutput for Page {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<Response> {
        Some(answer(
            "An HTML page for a person (strict CSP, no referrer, never framed).",
            &[("text/html", schemars::json_schema!({"type": "string"}))],
        ))
    }
}

/// An answer described by `description`, with a body of each media type given.
fn answer(description: &str, media: &[(&str, schemars::Schema)]) -> Response {
    Response {
        description: description.to_owned(),
        content: media
            .iter()
            .map(|(kind, schema)| {
                let body = MediaType {
                    schema: Some(SchemaObject {
                        json_schema: schema.clone(),
                        example: None,
                        external_docs: None,
                    }),
                    ..Default::default()
                };
                ((*kind).to_owned(), body)
            })
            .collect(),
        ..Default::default()
    }
}

/// A WebSocket answer (`101 Switching Protocols`): the live view's screencast, a relay
/// runner's link.
#[derive(Debug)]
pub(crate) struct Socket;

impl OperationOutput for Socket {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<Response> {
        Some(Response {
            description: "The WebSocket handshake is accepted: the socket is open.".into(),
            ..Default::default()
        })
    }
}
