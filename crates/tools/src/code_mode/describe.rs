//! The description of `code_mode` the model is offered: the API in a few lines, then
//! the tools a script may call with the shapes of their arguments, as many as
//! [`CODE_MODE_DESCRIPTION_BYTES`] holds (the tool is offered in every request).

use magi_protocol::limits::CODE_MODE_DESCRIPTION_BYTES;
use serde_json::Value;

/// What introduces the list of callable tools.
const TOOLS_HEAD: &str = "\nCall tools as `await tools.NAME(args)`: it resolves to the text result \
                          the tool would give you and throws an Error with the failure's \
                          message when it fails or is denied; run several at once with \
                          `Promise.all`. Callable (`?` optional):";

/// The description of `code_mode` offering `tools` (name and JSON Schema of its
/// arguments), in order, within the byte budget. A tool that does not fit is named
/// in a count at the end; it may still be called.
pub fn describe(tools: &[(&str, &Value)]) -> String {
    let mut text = super::definition().description.to_owned();
    if tools.is_empty() {
        return text;
    }
    text.push_str(TOOLS_HEAD);
    for (index, (name, parameters)) in tools.iter().enumerate() {
        let line = format!("\n{name}({})", shape(parameters));
        let left = tools.len() - index - 1;
        // Room kept for the line that counts the tools left out.
        let tail = if left == 0 { 0 } else { more(left).len() };
        if text.len() + line.len() + tail > CODE_MODE_DESCRIPTION_BYTES {
            let more = more(tools.len() - index);
            if text.len() + more.len() <= CODE_MODE_DESCRIPTION_BYTES {
                text.push_str(&more);
            }
            return text;
        }
        text.push_str(&line);
    }
    text
}

/// The line counting the tools left out.
fn more(count: usize) -> String {
    format!("\n… and {count} more tools, named as in your tool list.")
}

/// The shape of a tool's arguments, required ones first: `{path, offset?}`; `{…}` when its schema names no
/// properties.
fn shape(parameters: &Value) -> String {
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return "{…}".into();
    };
    let required: Vec<&str> = parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // The required arguments first, in the schema's order, then the optional ones.
    let mut names: Vec<String> = required
        .iter()
        .filter(|name| properties.contains_key(**name))
        .map(|name| (*name).to_owned())
        .collect();
    names.extend(
        properties
            .keys()
            .filter(|name| !required.contains(&name.as_str()))
            .map(|name| format!("{name}?")),
    );
    format!("{{{}}}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_are_listed_with_their_arguments_within_the_budget() {
        let read = json!({
            "type": "object",
            "properties": { "path": {}, "offset": {} },
            "required": ["path"]
        });
        let text = describe(&[("read", &read), ("odd", &json!({}))]);
        assert!(
            text.ends_with("\nread({path, offset?})\nodd({…})"),
            "{text}"
        );

        let many: Vec<(String, Value)> = (0..200)
            .map(|i| (format!("server__tool_number_{i}"), read.clone()))
            .collect();
        let listed: Vec<(&str, &Value)> = many.iter().map(|(n, p)| (n.as_str(), p)).collect();
        let text = describe(&listed);
        assert!(
            text.len() <= CODE_MODE_DESCRIPTION_BYTES,
            "{} bytes",
            text.len()
        );
        let shown = text.matches("server__tool_number_").count();
        assert!(shown > 0);
        assert!(
            text.ends_with(&format!(
                "\n… and {} more tools, named as in your tool list.",
                200 - shown
            )),
            "{text}"
        );
    }
}
