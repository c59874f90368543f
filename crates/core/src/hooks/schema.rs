//! The check of a hook's `updated_arguments` against the tool's argument schema: the
//! part of JSON Schema the tools' schemas use (`type`, `properties`, `required`,
//! `additionalProperties: false`, `enum`, `items`). A keyword outside that part is not
//! checked here; the tool still checks its arguments when it runs.

use serde_json::Value;

/// Most levels of nesting checked; deeper values are left to the tool.
const DEPTH: usize = 16;

/// Whether `value` fits `schema`; the first misfit, by its path, when it does not.
pub(crate) fn check_arguments(value: &Value, schema: &Value) -> Result<(), String> {
    if !value.is_object() {
        return Err("the arguments are not a JSON object".to_owned());
    }
    check(value, schema, "arguments", 0)
}

fn check(value: &Value, schema: &Value, path: &str, depth: usize) -> Result<(), String> {
    if depth > DEPTH {
        return Ok(());
    }
    if let Some(kind) = schema.get("type") {
        let fits = match kind {
            Value::String(kind) => fits_type(value, kind),
            Value::Array(kinds) => kinds
                .iter()
                .filter_map(Value::as_str)
                .any(|kind| fits_type(value, kind)),
            _ => true,
        };
        if !fits {
            return Err(format!("{path} is not of type {kind}"));
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        return Err(format!("{path} is not one of the allowed values"));
    }
    if let Value::Object(object) = value {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    return Err(format!("{path}.{name} is required"));
                }
            }
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (name, item) in object {
            match properties.and_then(|p| p.get(name)) {
                Some(property) => check(item, property, &format!("{path}.{name}"), depth + 1)?,
                None if closed => return Err(format!("{path}.{name} is not a known argument")),
                None => {}
            }
        }
    }
    if let (Value::Array(items), Some(schema)) = (value, schema.get("items")) {
        for (index, item) in items.iter().enumerate() {
            check(item, schema, &format!("{path}[{index}]"), depth + 1)?;
        }
    }
    Ok(())
}

fn fits_type(value: &Value, kind: &str) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        // A type this check does not know is left to the tool.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout_ms": {"type": "integer"},
                "mode": {"enum": ["a", "b"]},
                "paths": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["command"],
            "additionalProperties": false
        });
        assert_eq!(check_arguments(&json!({"command": "ls"}), &schema), Ok(()));
        for (bad, why) in [
            (json!("ls"), "not a JSON object"),
            (json!({}), "arguments.command is required"),
            (json!({"command": 1}), "arguments.command is not of type"),
            (
                json!({"command": "ls", "x": 1}),
                "arguments.x is not a known",
            ),
            (json!({"command": "ls", "timeout_ms": 1.5}), "timeout_ms"),
            (
                json!({"command": "ls", "mode": "c"}),
                "arguments.mode is not one",
            ),
            (
                json!({"command": "ls", "paths": ["a", 2]}),
                "arguments.paths[1]",
            ),
        ] {
            let got = check_arguments(&bad, &schema).unwrap_err();
            assert!(got.contains(why), "{bad}: {got}");
        }
    }
}
