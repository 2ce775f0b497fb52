//! The description as client generators read it: the same values, in the forms every
//! generator understands (each pass found by running openapi-python-client and
//! openapi-typescript on it), and only the formats JSON Schema 2020-12 defines.

use serde_json::{Value, json};

/// Drops every `format` JSON Schema 2020-12 does not define, anywhere in `value` (a
/// property named `format` is an object, and stays).
pub(super) fn standard_formats_only(value: &mut Value) {
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
pub(super) fn no_boolean_schemas(value: &mut Value) {
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
pub(super) fn nullable_structures_as_any_of(value: &mut Value) {
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
pub(super) fn no_null_defaults(value: &mut Value) {
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
pub(super) fn const_alternatives_as_enum(value: &mut Value) {
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
