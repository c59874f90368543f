//! The checked-in JSON Schema must equal the one generated from the wire types, so a
//! change to the wire is always deliberate. Regenerate with
//! `MAGI_UPDATE_SCHEMA=1 cargo test -p magi-protocol --test schema_fixture`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::PathBuf;

use magi_protocol::schema::{SCHEMA_PATH, contract_schema_json};

#[test]
fn checked_in_schema_matches_the_wire_types() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(SCHEMA_PATH);
    let generated = contract_schema_json();
    if std::env::var_os("MAGI_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{SCHEMA_PATH} is out of date with the protocol types; regenerate it with \
         MAGI_UPDATE_SCHEMA=1 cargo test -p magi-protocol --test schema_fixture"
    );
}

#[test]
fn schema_is_a_json_document_naming_every_frame() {
    let schema: serde_json::Value = serde_json::from_str(&contract_schema_json()).unwrap();
    let defs = schema["$defs"].as_object().unwrap();
    for name in [
        "RequestFrame",
        "ResponseFrame",
        "EventFrame",
        "Limits",
        "ErrorCode",
    ] {
        assert!(defs.contains_key(name), "missing {name}");
    }
}
