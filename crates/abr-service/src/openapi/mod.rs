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

mod answers;
mod finish;
mod shape;

pub(crate) use answers::{
    EventStream, FileBody, Image, JsonOrMarkdown, MetricsText, Page, Socket, wants_markdown,
};
pub(crate) use finish::finish;

use abr_core::principal::{Right, role_allows};
use abr_protocol::Role;
use abr_protocol::codes::{self, ErrorCode};
use aide::openapi::{
    Operation, Parameter, ParameterData, ParameterSchemaOrContent, ReferenceOr, SchemaObject,
};
use aide::transform::TransformOperation;
use schemars::SchemaGenerator;
use serde_json::{Value, json};

/// The version of the HTTP API this runner answers (the description's `info.version`):
/// its major changes only when a field or route is removed or retyped (see
/// `docs/api-changelog.md`).
pub const API_VERSION: &str = "1.7.0";

/// Where the description is served.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// The operation extension that carries a route's error codes until [`finish`].
pub(super) const ERRORS: &str = "x-abr-errors";

/// Codes any route can answer: the deadline, a draining replica, an internal error.
pub(super) const EVERYWHERE: &[ErrorCode] =
    &[codes::INTERNAL, codes::TIMEOUT, codes::RUNNER_DRAINING];

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
