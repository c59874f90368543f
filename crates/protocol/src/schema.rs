//! The machine-readable contract: one JSON Schema for every frame of the protocol,
//! generated from the wire types.

use schemars::generate::SchemaSettings;

use crate::wire::AnyFrame;

/// Path of the checked-in schema, relative to the repository root.
pub const SCHEMA_PATH: &str = "docs/protocol/local-agent-v1.schema.json";

/// The JSON Schema (draft 2020-12) of [`AnyFrame`], pretty-printed with a final newline.
pub fn contract_schema_json() -> String {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<AnyFrame>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
