//! The machine-readable contract: one JSON Schema for every frame of the protocol,
//! generated from the wire types.

use schemars::generate::SchemaSettings;

use crate::wire::AnyFrame;

/// Path of the checked-in schema, relative to the repository root.
pub const SCHEMA_PATH: &str = "docs/protocol/local-agent-v1.schema.json";

/// The JSON Schema (draft 2020-12) of [`AnyFrame`], pretty-printed with a final newline.
pub fn contract_schema_json() -> String {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<AnyFrame>();
    // Every object below the root in byte order, as serde_json writes maps unless its
    // `preserve_order` feature is on (a dependency may turn it on for the whole build),
    // so the checked-in schema has one form.
    if let Some(root) = schema.as_object_mut() {
        for value in root.values_mut() {
            sort_keys(value);
        }
    }
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// Puts the keys of every object in `value` in byte order.
fn sort_keys(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(object) => {
            let mut entries: Vec<_> = std::mem::take(object).into_iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.cmp(b));
            for (_, child) in &mut entries {
                sort_keys(child);
            }
            object.extend(entries);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}
