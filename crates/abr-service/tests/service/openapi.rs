//! The API as a published contract: `GET /openapi.json` (no key) answers the OpenAPI 3.1
//! description generated from the router, equal to the committed `docs/openapi.json`;
//! every operation is named, every path parameter declared, every error answer the
//! envelope with the route's codes of its status, every `$ref` resolves, and only standard
//! formats are used.
//!
//! After a change to the API, regenerate the committed file with
//! `ABR_UPDATE_OPENAPI=1 cargo test -p abr-service --test service openapi`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::fake::*;
use serde_json::Value;

use crate::common;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

async fn served() -> Value {
    let s = fake_stack();
    let reply = get(&s.app, "/openapi.json").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.header("content-type"),
        Some("application/json"),
        "served as JSON"
    );
    reply.json()
}

#[tokio::test]
async fn the_served_description_is_the_committed_one() {
    let served = served().await;
    let path = committed_path();
    let pretty = format!("{}\n", serde_json::to_string_pretty(&served).unwrap());
    if std::env::var_os("ABR_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &pretty).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == pretty,
        "docs/openapi.json differs from what GET /openapi.json serves: regenerate it with \
         `ABR_UPDATE_OPENAPI=1 cargo test -p abr-service --test service openapi` and review \
         the change (and docs/api-changelog.md)"
    );
}

#[tokio::test]
async fn the_description_is_openapi_3_1_with_the_api_version() {
    let doc = served().await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], abr_service::openapi::API_VERSION);
    assert_eq!(
        doc["jsonSchemaDialect"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
}

/// Every `(method, path)` of the description.
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                all.push((method.clone(), path.clone(), operation));
            }
        }
    }
    all
}

#[tokio::test]
async fn every_route_is_described_with_an_id_its_parameters_and_its_errors() {
    let doc = served().await;
    let all = operations(&doc);
    // The routes a client needs, each described (a sample of every module).
    for (method, path) in [
        ("post", "/v1/post"),
        ("get", "/v1/posts/{id}"),
        ("post", "/v1/tasks"),
        ("get", "/v1/tasks"),
        ("post", "/v1/tasks/{id}/approve"),
        ("get", "/v1/tasks/{id}/events"),
        ("put", "/v1/sessions/{id}"),
        ("post", "/v1/capture/start"),
        ("post", "/v1/browse"),
        ("post", "/v1/browse/{id}/act"),
        ("get", "/v1/events"),
        ("post", "/v1/keys"),
        ("get", "/v1/runs/{run_id}/frames/{seq}"),
        ("put", "/v1/sites/{domain}"),
        ("post", "/v1/relay/enroll"),
        ("get", "/v1/relay/{runner_id}/connect"),
        ("get", "/live/{token}"),
        ("get", "/approve/{token}"),
        ("post", "/mcp"),
        ("get", "/v1/health"),
        ("get", "/openapi.json"),
    ] {
        assert!(
            all.iter().any(|(m, p, _)| m == method && p == path),
            "{method} {path} is not described"
        );
    }
    let mut ids = BTreeSet::new();
    for (method, path, operation) in &all {
        let id = operation["operationId"].as_str().unwrap_or_default();
        assert!(!id.is_empty(), "{method} {path} has no operationId");
        assert!(ids.insert(id.to_owned()), "operationId {id} twice");
        assert!(
            operation["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{method} {path} has no summary"
        );
        // Every `{name}` of the path is a declared, required path parameter.
        for segment in path.split('/') {
            if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                let declared = operation["parameters"].as_array().is_some_and(|ps| {
                    ps.iter()
                        .any(|p| p["name"] == name && p["in"] == "path" && p["required"] == true)
                });
                assert!(
                    declared,
                    "{method} {path}: path parameter {name} undeclared"
                );
            }
        }
        // Every answer has a description; every error answer is the envelope whose code
        // is one of that status's codes.
        let responses = operation["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|s| s.starts_with('2') || s == "101"),
            "{method} {path} has no success answer"
        );
        for (status, answer) in responses {
            assert!(
                answer["description"].is_string(),
                "{method} {path} {status}"
            );
            let Ok(code) = status.parse::<u16>() else {
                continue;
            };
            // `/v1/ready` answers its readiness, also when not ready (503): for balancers.
            if code < 400 || (path == "/v1/ready" && code == 503) {
                continue;
            }
            assert_eq!(
                answer["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorEnvelope",
                "{method} {path} {status}: the envelope"
            );
            let names = answer["x-abr-codes"]
                .as_array()
                .unwrap_or_else(|| panic!("{method} {path} {status}: no codes"));
            assert!(!names.is_empty(), "{method} {path} {status}");
            for name in names {
                let known = abr_protocol::codes::ALL
                    .iter()
                    .find(|c| c.code == name.as_str().unwrap())
                    .unwrap_or_else(|| panic!("{name} is no code"));
                assert_eq!(known.status, code, "{name} answered under {status}");
            }
        }
        // Behind a key: the bearer scheme, and 401 among its answers.
        if operation["security"].is_array() {
            assert!(responses.contains_key("401"), "{method} {path} lacks 401");
        }
    }
    // Retryable refusals say when to come back.
    let post = &doc["paths"]["/v1/post"]["post"]["responses"];
    assert!(post["429"]["headers"]["Retry-After"].is_object(), "{post}");
    assert!(post["503"]["headers"]["Retry-After"].is_object(), "{post}");
}

/// Every `$ref` in `value`.
fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if key == "$ref"
                    && let Some(target) = inner.as_str()
                {
                    out.push(target);
                }
                refs(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// Every `format` in `value`.
fn formats<'a>(value: &'a Value, out: &mut BTreeSet<&'a str>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if key == "format"
                    && let Some(f) = inner.as_str()
                {
                    out.insert(f);
                }
                formats(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| formats(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn every_reference_resolves_and_every_format_is_standard() {
    let doc = served().await;
    let mut targets = Vec::new();
    refs(&doc, &mut targets);
    assert!(targets.len() > 50, "the schemas are shared by reference");
    for target in targets {
        let pointer = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{target} is not local"));
        assert!(doc.pointer(pointer).is_some(), "{target} does not resolve");
    }
    let mut used = BTreeSet::new();
    formats(&doc, &mut used);
    let standard = [
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "uuid",
        "regex",
    ];
    for format in used {
        assert!(
            standard.contains(&format),
            "format {format} is not standard"
        );
    }
}

#[tokio::test]
async fn the_description_needs_no_key_and_leaks_no_secret() {
    let s = fake_stack();
    // Without any Authorization header.
    let reply = get(&s.app, "/openapi.json").await;
    assert_eq!(reply.status, 200);
    // Nothing of this runner's configuration: no token, no URL of its own, no platform.
    assert!(
        !reply.body.contains(FAKE_TOKEN),
        "the bootstrap token is not in it"
    );
    assert!(
        !reply.body.contains("runner.test"),
        "no address of this runner"
    );
}

/// What changed from `old` to `new` that breaks a client written against `old`: a route,
/// schema, property or enum value removed; a property retyped; a property newly required.
fn breaking_changes(old: &Value, new: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let empty = serde_json::Map::new();
    let paths = |doc: &Value| doc["paths"].as_object().cloned().unwrap_or_default();
    let (old_paths, new_paths) = (paths(old), paths(new));
    for (path, item) in &old_paths {
        for method in item.as_object().unwrap_or(&empty).keys() {
            if new_paths.get(path).and_then(|i| i.get(method)).is_none() {
                found.push(format!("route removed: {method} {path}"));
            }
        }
    }
    let schemas = |doc: &Value| {
        doc["components"]["schemas"]
            .as_object()
            .cloned()
            .unwrap_or_default()
    };
    let (old_schemas, new_schemas) = (schemas(old), schemas(new));
    for (name, before) in &old_schemas {
        let Some(after) = new_schemas.get(name) else {
            found.push(format!("schema removed: {name}"));
            continue;
        };
        compare_schema(name, before, after, &mut found);
    }
    found
}

/// The breaking differences of one schema (its properties, one level; named schemas are
/// compared each on their own).
fn compare_schema(at: &str, before: &Value, after: &Value, found: &mut Vec<String>) {
    if before.get("type") != after.get("type") && before.get("type").is_some() {
        found.push(format!(
            "{at}: type {} became {}",
            before["type"], after["type"]
        ));
    }
    if before.get("$ref") != after.get("$ref") && before.get("$ref").is_some() {
        found.push(format!("{at}: {} became {}", before["$ref"], after["$ref"]));
    }
    if let (Some(was), Some(is)) = (before["enum"].as_array(), after["enum"].as_array()) {
        for value in was {
            if !is.contains(value) {
                found.push(format!("{at}: enum value {value} removed"));
            }
        }
    }
    let required = |s: &Value| -> BTreeSet<String> {
        s["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let (was_required, is_required) = (required(before), required(after));
    for name in is_required.difference(&was_required) {
        found.push(format!("{at}: property {name} became required"));
    }
    let empty = serde_json::Map::new();
    let before_props = before["properties"].as_object().unwrap_or(&empty);
    let after_props = after["properties"].as_object().unwrap_or(&empty);
    for (name, was) in before_props {
        match after_props.get(name) {
            None => found.push(format!("{at}: property {name} removed")),
            Some(is) => compare_schema(&format!("{at}.{name}"), was, is, found),
        }
    }
}

fn major(version: &str) -> u64 {
    version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn the_api_only_grows_within_its_major_version() {
    let served = served().await;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi-baseline.json");
    if std::env::var_os("ABR_RELEASE_OPENAPI").is_some() {
        let pretty = format!("{}\n", serde_json::to_string_pretty(&served).unwrap());
        std::fs::write(&path, pretty).unwrap();
    }
    let baseline: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let released = baseline["info"]["version"].as_str().unwrap();
    let current = served["info"]["version"].as_str().unwrap();
    if major(current) > major(released) {
        return;
    }
    let breaking = breaking_changes(&baseline, &served);
    assert!(
        breaking.is_empty(),
        "the API changed in a way that breaks clients of {released} while its major stayed \
         {}: {breaking:#?}\n(raise the major of API_VERSION, or make the change additive)",
        major(current)
    );
}

#[test]
fn an_added_route_or_field_passes_and_a_removed_or_retyped_one_is_breaking() {
    let old = serde_json::json!({
        "paths": {"/v1/a": {"get": {}}},
        "components": {"schemas": {"A": {"type": "object", "required": ["x"],
            "properties": {"x": {"type": "string"}, "y": {"type": "integer"},
                "s": {"enum": ["on", "off"]}}}}},
    });
    // Grown: a route, a field, an enum value.
    let mut grown = old.clone();
    grown["paths"]["/v1/b"] = serde_json::json!({"post": {}});
    grown["components"]["schemas"]["A"]["properties"]["z"] = serde_json::json!({"type": "string"});
    grown["components"]["schemas"]["A"]["properties"]["s"]["enum"] =
        serde_json::json!(["on", "off", "auto"]);
    assert_eq!(breaking_changes(&old, &grown), Vec::<String>::new());
    // Each of these breaks a client.
    let mut removed = old.clone();
    removed["paths"] = serde_json::json!({});
    assert_eq!(
        breaking_changes(&old, &removed),
        ["route removed: get /v1/a"]
    );
    let mut retyped = old.clone();
    retyped["components"]["schemas"]["A"]["properties"]["y"]["type"] = "string".into();
    assert_eq!(breaking_changes(&old, &retyped).len(), 1);
    let mut required = old.clone();
    required["components"]["schemas"]["A"]["required"] = serde_json::json!(["x", "y"]);
    assert_eq!(
        breaking_changes(&old, &required),
        ["A: property y became required"]
    );
    let mut narrowed = old.clone();
    narrowed["components"]["schemas"]["A"]["properties"]["s"]["enum"] = serde_json::json!(["on"]);
    assert_eq!(breaking_changes(&old, &narrowed).len(), 1);
    let mut dropped = old.clone();
    dropped["components"]["schemas"]["A"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("x");
    assert_eq!(breaking_changes(&old, &dropped), ["A: property x removed"]);
}
