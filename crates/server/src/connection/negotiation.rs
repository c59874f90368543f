//! What a client may require at `initialize`: known capabilities, its client tools,
//! and the preflight that checks them before startup.

use magi_core::client_tools::ClientTool;
use magi_protocol::extensions::ExtensionSet;
use magi_protocol::limits::{
    CLIENT_TOOL_DESCRIPTION_BYTES, CLIENT_TOOL_MAX_TIMEOUT_MS, CLIENT_TOOL_SCHEMA_BYTES,
    CLIENT_TOOLS,
};
use magi_protocol::messages::{ClientToolDefinition, InitializeParams};
use magi_protocol::names::is_valid_name;
use magi_protocol::{ErrorCode, Extension, Method};
use serde_json::value::RawValue;

use super::parse_params;

/// What `initialize` negotiated.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Negotiation {
    /// The methods required.
    pub(super) methods: Vec<Method>,
    /// The extensions required.
    pub(super) extensions: ExtensionSet,
    /// The client's tools, when `client.tools` was required.
    pub(super) client_tools: Option<Vec<ClientTool>>,
}

/// The method a client answers its tools' calls with.
pub(super) const CLIENT_TOOL_RESULT_METHOD: &str = "client.tool.result";

/// Whether a capability name is known: a method, or an extension this build has.
fn is_known_capability(name: &str) -> bool {
    Method::from_wire(name).is_some() || Extension::from_wire(name).is_some()
}

/// Checks the tools a client registers: 1 to 16 of them, names `[a-z][a-z0-9_]*` of at
/// most 64 bytes, unique and none a built-in tool's, descriptions of 1 to 1,024 bytes
/// without control characters, object schemas of at most 16 KiB, timeouts of 1 to
/// 600,000 ms.
fn check_client_tools(tools: &[ClientToolDefinition]) -> Result<Vec<ClientTool>, ErrorCode> {
    let name_ok = |name: &str| {
        name.len() <= 64
            && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    let mut names = std::collections::HashSet::new();
    let valid = !tools.is_empty()
        && tools.len() <= CLIENT_TOOLS
        && tools.iter().all(|tool| {
            let schema_bytes = serde_json::to_vec(&tool.parameters).map_or(usize::MAX, |v| v.len());
            name_ok(&tool.name)
                && !magi_core::is_built_in_tool(&tool.name)
                && names.insert(tool.name.as_str())
                && !tool.description.is_empty()
                && tool.description.len() <= CLIENT_TOOL_DESCRIPTION_BYTES
                && !magi_protocol::text::has_control(&tool.description)
                && tool.parameters.get("type").and_then(|t| t.as_str()) == Some("object")
                && schema_bytes <= CLIENT_TOOL_SCHEMA_BYTES
                && tool
                    .timeout_ms
                    .is_none_or(|t| (1..=CLIENT_TOOL_MAX_TIMEOUT_MS).contains(&t))
        });
    if valid {
        Ok(tools.iter().map(ClientTool::from_definition).collect())
    } else {
        Err(ErrorCode::InvalidParams)
    }
}

/// Validates `required_capabilities` before any effect. A well-formed name this backend
/// does not have is `unsupported_capability` (negotiation outranks params); too many
/// names, a name off the grammar or malformed params is `invalid_params`.
pub(super) fn preflight_capabilities(params: &RawValue) -> Result<Negotiation, ErrorCode> {
    #[derive(serde::Deserialize)]
    struct Names {
        required_capabilities: Vec<serde_json::Value>,
    }
    if let Ok(names) = serde_json::from_str::<Names>(params.get()) {
        let unknown = names.required_capabilities.iter().any(|name| {
            name.as_str()
                .is_some_and(|n| is_valid_name(n) && !is_known_capability(n))
        });
        if unknown {
            return Err(ErrorCode::UnsupportedCapability);
        }
    }
    let params: InitializeParams = parse_params(params)?;
    let names = &params.required_capabilities;
    let extensions = ExtensionSet::of_names(names.iter().map(String::as_str));
    // Each extension required brings room for its own name (two for `client.tools`).
    if names.len() > extensions.name_bound() || !names.iter().all(|n| is_valid_name(n)) {
        return Err(ErrorCode::InvalidParams);
    }
    // `client_tools` comes exactly with the capability that registers them.
    let client_tools = match (
        extensions.contains(Extension::ClientTools),
        &params.client_tools,
    ) {
        (true, Some(tools)) => Some(check_client_tools(tools)?),
        (false, None) => None,
        _ => return Err(ErrorCode::InvalidParams),
    };
    Ok(Negotiation {
        methods: names.iter().filter_map(|n| Method::from_wire(n)).collect(),
        extensions,
        client_tools,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preflight(params: &str) -> Result<Vec<Method>, ErrorCode> {
        let raw: Box<RawValue> = serde_json::from_str(params).unwrap();
        preflight_capabilities(&raw).map(|n| n.methods)
    }

    #[test]
    fn capability_preflight() {
        use ErrorCode::*;
        assert_eq!(preflight(r#"{"required_capabilities":[]}"#), Ok(vec![]));
        assert_eq!(
            preflight(r#"{"required_capabilities":["status","session.discover"]}"#),
            Ok(vec![Method::Status, Method::SessionDiscover])
        );
        let sixteen: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
        let params =
            |names: &[&str]| serde_json::json!({ "required_capabilities": names }).to_string();
        assert_eq!(preflight(&params(&sixteen)).map(|m| m.len()), Ok(16));
        let seventeen = [&sixteen[..], &["status"]].concat();
        assert_eq!(preflight(&params(&seventeen)), Err(InvalidParams));
        let raw: Box<RawValue> = serde_json::from_str(&params(&["status", "tool.cards"])).unwrap();
        assert_eq!(
            preflight_capabilities(&raw),
            Ok(Negotiation {
                methods: vec![Method::Status],
                extensions: ExtensionSet::EMPTY.with(Extension::ToolCards),
                client_tools: None,
            })
        );
        // `approval.scopes` adds one name to the bound, and only its own.
        let with_scopes = [&sixteen[..], &["approval.scopes"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_scopes)).unwrap();
        assert!(
            preflight_capabilities(&raw)
                .is_ok_and(|n| n.extensions.contains(Extension::ApprovalScopes))
        );
        let too_many = [&with_scopes[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // `user.questions` adds its own name as well, on top of `approval.scopes`.
        let with_questions = [&with_scopes[..], &["user.questions"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_questions)).unwrap();
        assert!(
            preflight_capabilities(&raw)
                .is_ok_and(|n| n.extensions.contains(Extension::UserQuestions))
        );
        // So does `session.usage`, on top of whichever bound applies.
        let with_usage = [&with_questions[..], &["session.usage"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_usage)).unwrap();
        assert!(
            preflight_capabilities(&raw)
                .is_ok_and(|n| n.extensions.contains(Extension::SessionUsage)
                    && n.extensions.contains(Extension::UserQuestions))
        );
        let too_many = [&with_usage[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `input.attachments`.
        let with_attachments = [&with_usage[..], &["input.attachments"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_attachments)).unwrap();
        assert!(
            preflight_capabilities(&raw)
                .is_ok_and(|n| n.extensions.contains(Extension::InputAttachments)
                    && n.extensions.contains(Extension::SessionUsage))
        );
        let too_many = [&with_attachments[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `model.cached`, the one name both of its capability and of its method.
        let with_cached = [&with_attachments[..], &["model.cached"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_cached)).unwrap();
        assert!(
            preflight_capabilities(&raw)
                .is_ok_and(
                    |n| n.extensions.contains(Extension::ModelCached) && n.methods.len() == 16
                )
        );
        let too_many = [&with_cached[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `permissions.modes`, one name of its own.
        let with_modes = [&with_cached[..], &["permissions.modes"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_modes)).unwrap();
        assert!(
            preflight_capabilities(&raw)
                .is_ok_and(|n| n.extensions.contains(Extension::PermissionModes))
        );
        let too_many = [&with_modes[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `plan.todo`.
        let with_plan = [&with_modes[..], &["plan.todo"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_plan)).unwrap();
        assert!(
            preflight_capabilities(&raw).is_ok_and(|n| n.extensions.contains(Extension::PlanTodo)
                && n.extensions.contains(Extension::PermissionModes))
        );
        let too_many = [&with_plan[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `checkpoints`.
        let with_checkpoints = [&with_plan[..], &["checkpoints"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_checkpoints)).unwrap();
        assert!(
            preflight_capabilities(&raw)
                .is_ok_and(|n| n.extensions.contains(Extension::Checkpoints)
                    && n.extensions.contains(Extension::PlanTodo))
        );
        let too_many = [&with_checkpoints[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `tool.cards.styles`.
        let with_styles = [&with_checkpoints[..], &["tool.cards.styles"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_styles)).unwrap();
        assert!(
            preflight_capabilities(&raw)
                .is_ok_and(|n| n.extensions.contains(Extension::ToolCardStyles)
                    && n.extensions.contains(Extension::Checkpoints))
        );
        let too_many = [&with_styles[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // `client.tools` needs its tools, and tools need the capability.
        assert_eq!(preflight(&params(&["client.tools"])), Err(InvalidParams));
        assert_eq!(
            preflight(&params(&["status", "bad name"])),
            Err(InvalidParams)
        );
        assert_eq!(
            preflight(&params(&["bad name", "unknown.cap"])),
            Err(UnsupportedCapability)
        );
        let many_unknown = [&seventeen[..], &["unknown"]].concat();
        assert_eq!(
            preflight(&params(&many_unknown)),
            Err(UnsupportedCapability)
        );
        for bad in [
            r#"{}"#,
            r#"{"required_capabilities":null}"#,
            r#"{"required_capabilities":"status"}"#,
            r#"{"required_capabilities":[1]}"#,
            r#"{"required_capabilities":[],"x":1}"#,
            r#"{"required_capabilities":[],"required_capabilities":[]}"#,
        ] {
            assert_eq!(preflight(bad), Err(InvalidParams), "{bad}");
        }
    }
}
