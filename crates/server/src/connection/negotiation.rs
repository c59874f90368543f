//! What a client may require at `initialize`: known capabilities, its client tools,
//! and the preflight that checks them before startup.

use magi_core::client_tools::ClientTool;
use magi_protocol::cards;
use magi_protocol::limits::{
    APPROVAL_CHANGE_COUNTS_NAME_ROOM, CHECKPOINTS_NAME_ROOM, CLIENT_FILES_NAME_ROOM,
    CLIENT_TERMINALS_NAME_ROOM, CLIENT_TOOL_DESCRIPTION_BYTES, CLIENT_TOOL_MAX_TIMEOUT_MS,
    CLIENT_TOOL_SCHEMA_BYTES, CLIENT_TOOLS, INPUT_ATTACHMENTS_NAME_ROOM, JOBS_CONTROL_NAME_ROOM,
    MODEL_CACHED_NAME_ROOM, PERMISSION_MODES_NAME_ROOM, PLAN_TODO_NAME_ROOM,
    REASONING_SUMMARIES_NAME_ROOM, REQUIRED_CAPABILITY_NAMES,
    REQUIRED_CAPABILITY_NAMES_WITH_APPROVAL_SCOPES, REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS,
    REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS_AND_APPROVAL_SCOPES, SESSION_USAGE_NAME_ROOM,
    TOOL_CARD_STYLES_NAME_ROOM, USAGE_CACHE_WRITES_NAME_ROOM, USER_QUESTIONS_CAPABILITY_NAMES,
};
use magi_protocol::messages::{ClientToolDefinition, InitializeParams};
use magi_protocol::names::{
    APPROVAL_CHANGE_COUNTS, APPROVAL_SCOPES, CHECKPOINTS, CLIENT_FILES, CLIENT_TERMINALS,
    INPUT_ATTACHMENTS, JOBS_CONTROL, MODEL_CACHED, PERMISSION_MODES, PLAN_TODO,
    REASONING_SUMMARIES, SESSION_USAGE, TOOL_CARD_STYLES, USAGE_CACHE_WRITES, USER_QUESTIONS,
    is_valid_name,
};
use magi_protocol::{ErrorCode, Method};
use serde_json::value::RawValue;

use super::parse_params;

/// What `initialize` negotiated.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Negotiation {
    /// The methods required.
    pub(super) methods: Vec<Method>,
    /// Whether `tool.cards` was required.
    pub(super) tool_cards: bool,
    /// The client's tools, when `client.tools` was required.
    pub(super) client_tools: Option<Vec<ClientTool>>,
    /// Whether `approval.scopes` was required.
    pub(super) approval_scopes: bool,
    /// Whether `user.questions` was required.
    pub(super) user_questions: bool,
    /// Whether `session.usage` was required.
    pub(super) session_usage: bool,
    /// Whether `input.attachments` was required.
    pub(super) input_attachments: bool,
    /// Whether `client.terminals` was required.
    pub(super) client_terminals: bool,
    /// Whether `client.files` was required.
    pub(super) client_files: bool,
    /// Whether `reasoning.summaries` was required.
    pub(super) reasoning_summaries: bool,
    /// Whether `usage.cache_writes` was required.
    pub(super) usage_cache_writes: bool,
    /// Whether `approval.change_counts` was required.
    pub(super) approval_change_counts: bool,
    /// Whether `jobs.control` was required.
    pub(super) jobs_control: bool,
    /// Whether `model.cached` was required.
    pub(super) model_cached: bool,
    /// Whether `permissions.modes` was required.
    pub(super) permission_modes: bool,
    /// Whether `plan.todo` was required.
    pub(super) plan_todo: bool,
    /// Whether `checkpoints` was required.
    pub(super) checkpoints: bool,
    /// Whether `tool.cards.styles` was required.
    pub(super) tool_card_styles: bool,
}

/// The method a client answers its tools' calls with.
pub(super) const CLIENT_TOOL_RESULT_METHOD: &str = "client.tool.result";
/// The `client.tools` capability name.
pub(super) const CLIENT_TOOLS_CAPABILITY: &str = "client.tools";

/// Whether a capability name is known: a method, or an extension this build has.
fn is_known_capability(name: &str) -> bool {
    Method::from_wire(name).is_some()
        || name == cards::CAPABILITY
        || name == CLIENT_TOOLS_CAPABILITY
        || name == APPROVAL_SCOPES
        || name == USER_QUESTIONS
        || name == SESSION_USAGE
        || name == INPUT_ATTACHMENTS
        || name == CLIENT_TERMINALS
        || name == CLIENT_FILES
        || name == REASONING_SUMMARIES
        || name == USAGE_CACHE_WRITES
        || name == APPROVAL_CHANGE_COUNTS
        || name == JOBS_CONTROL
        || name == MODEL_CACHED
        || name == PERMISSION_MODES
        || name == PLAN_TODO
        || name == CHECKPOINTS
        || name == TOOL_CARD_STYLES
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
    let wants_tools = names.iter().any(|n| n == CLIENT_TOOLS_CAPABILITY);
    let wants_scopes = names.iter().any(|n| n == APPROVAL_SCOPES);
    // `approval.scopes` brings its own name on top of whichever bound applies.
    let most = match (wants_tools, wants_scopes) {
        (false, false) => REQUIRED_CAPABILITY_NAMES,
        (false, true) => REQUIRED_CAPABILITY_NAMES_WITH_APPROVAL_SCOPES,
        (true, false) => REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS,
        (true, true) => REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS_AND_APPROVAL_SCOPES,
    };
    // `user.questions` brings its own name too.
    let wants_questions = names.iter().any(|n| n == USER_QUESTIONS);
    let most = most + usize::from(wants_questions) * USER_QUESTIONS_CAPABILITY_NAMES;
    // `session.usage` brings its own name too.
    let wants_usage = names.iter().any(|n| n == SESSION_USAGE);
    let most = most + usize::from(wants_usage) * SESSION_USAGE_NAME_ROOM;
    // And `input.attachments`.
    let wants_attachments = names.iter().any(|n| n == INPUT_ATTACHMENTS);
    let most = most + usize::from(wants_attachments) * INPUT_ATTACHMENTS_NAME_ROOM;
    // And `client.terminals`.
    let wants_terminals = names.iter().any(|n| n == CLIENT_TERMINALS);
    let most = most + usize::from(wants_terminals) * CLIENT_TERMINALS_NAME_ROOM;
    // And `client.files`.
    let wants_files = names.iter().any(|n| n == CLIENT_FILES);
    let most = most + usize::from(wants_files) * CLIENT_FILES_NAME_ROOM;
    // And `reasoning.summaries`.
    let wants_reasoning = names.iter().any(|n| n == REASONING_SUMMARIES);
    let most = most + usize::from(wants_reasoning) * REASONING_SUMMARIES_NAME_ROOM;
    // And `usage.cache_writes`.
    let wants_cache_writes = names.iter().any(|n| n == USAGE_CACHE_WRITES);
    let most = most + usize::from(wants_cache_writes) * USAGE_CACHE_WRITES_NAME_ROOM;
    // And `approval.change_counts`.
    let wants_change_counts = names.iter().any(|n| n == APPROVAL_CHANGE_COUNTS);
    let most = most + usize::from(wants_change_counts) * APPROVAL_CHANGE_COUNTS_NAME_ROOM;
    // And `jobs.control`.
    let wants_jobs = names.iter().any(|n| n == JOBS_CONTROL);
    let most = most + usize::from(wants_jobs) * JOBS_CONTROL_NAME_ROOM;
    // And `model.cached`.
    let wants_cached = names.iter().any(|n| n == MODEL_CACHED);
    let most = most + usize::from(wants_cached) * MODEL_CACHED_NAME_ROOM;
    // And `permissions.modes`.
    let wants_modes = names.iter().any(|n| n == PERMISSION_MODES);
    let most = most + usize::from(wants_modes) * PERMISSION_MODES_NAME_ROOM;
    // And `plan.todo`.
    let wants_plan = names.iter().any(|n| n == PLAN_TODO);
    let most = most + usize::from(wants_plan) * PLAN_TODO_NAME_ROOM;
    // And `checkpoints`.
    let wants_checkpoints = names.iter().any(|n| n == CHECKPOINTS);
    let most = most + usize::from(wants_checkpoints) * CHECKPOINTS_NAME_ROOM;
    // And `tool.cards.styles`.
    let wants_styles = names.iter().any(|n| n == TOOL_CARD_STYLES);
    let most = most + usize::from(wants_styles) * TOOL_CARD_STYLES_NAME_ROOM;
    if names.len() > most || !names.iter().all(|n| is_valid_name(n)) {
        return Err(ErrorCode::InvalidParams);
    }
    // `client_tools` comes exactly with the capability that registers them.
    let client_tools = match (wants_tools, &params.client_tools) {
        (true, Some(tools)) => Some(check_client_tools(tools)?),
        (false, None) => None,
        _ => return Err(ErrorCode::InvalidParams),
    };
    Ok(Negotiation {
        methods: names.iter().filter_map(|n| Method::from_wire(n)).collect(),
        tool_cards: names.iter().any(|n| n == cards::CAPABILITY),
        client_tools,
        approval_scopes: wants_scopes,
        user_questions: wants_questions,
        session_usage: wants_usage,
        input_attachments: wants_attachments,
        client_terminals: wants_terminals,
        client_files: wants_files,
        reasoning_summaries: wants_reasoning,
        usage_cache_writes: wants_cache_writes,
        approval_change_counts: wants_change_counts,
        jobs_control: wants_jobs,
        model_cached: wants_cached,
        permission_modes: wants_modes,
        plan_todo: wants_plan,
        checkpoints: wants_checkpoints,
        tool_card_styles: wants_styles,
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
                tool_cards: true,
                client_tools: None,
                approval_scopes: false,
                user_questions: false,
                session_usage: false,
                input_attachments: false,
                client_terminals: false,
                client_files: false,
                reasoning_summaries: false,
                usage_cache_writes: false,
                approval_change_counts: false,
                jobs_control: false,
                model_cached: false,
                permission_modes: false,
                plan_todo: false,
                checkpoints: false,
                tool_card_styles: false,
            })
        );
        // `approval.scopes` adds one name to the bound, and only its own.
        let with_scopes = [&sixteen[..], &["approval.scopes"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_scopes)).unwrap();
        assert!(preflight_capabilities(&raw).is_ok_and(|n| n.approval_scopes));
        let too_many = [&with_scopes[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // `user.questions` adds its own name as well, on top of `approval.scopes`.
        let with_questions = [&with_scopes[..], &["user.questions"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_questions)).unwrap();
        assert!(preflight_capabilities(&raw).is_ok_and(|n| n.user_questions));
        // So does `session.usage`, on top of whichever bound applies.
        let with_usage = [&with_questions[..], &["session.usage"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_usage)).unwrap();
        assert!(preflight_capabilities(&raw).is_ok_and(|n| n.session_usage && n.user_questions));
        let too_many = [&with_usage[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `input.attachments`.
        let with_attachments = [&with_usage[..], &["input.attachments"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_attachments)).unwrap();
        assert!(preflight_capabilities(&raw).is_ok_and(|n| n.input_attachments && n.session_usage));
        let too_many = [&with_attachments[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `model.cached`, the one name both of its capability and of its method.
        let with_cached = [&with_attachments[..], &["model.cached"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_cached)).unwrap();
        assert!(
            preflight_capabilities(&raw).is_ok_and(|n| n.model_cached && n.methods.len() == 16)
        );
        let too_many = [&with_cached[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `permissions.modes`, one name of its own.
        let with_modes = [&with_cached[..], &["permissions.modes"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_modes)).unwrap();
        assert!(preflight_capabilities(&raw).is_ok_and(|n| n.permission_modes));
        let too_many = [&with_modes[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `plan.todo`.
        let with_plan = [&with_modes[..], &["plan.todo"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_plan)).unwrap();
        assert!(preflight_capabilities(&raw).is_ok_and(|n| n.plan_todo && n.permission_modes));
        let too_many = [&with_plan[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `checkpoints`.
        let with_checkpoints = [&with_plan[..], &["checkpoints"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_checkpoints)).unwrap();
        assert!(preflight_capabilities(&raw).is_ok_and(|n| n.checkpoints && n.plan_todo));
        let too_many = [&with_checkpoints[..], &["status"]].concat();
        assert_eq!(preflight(&params(&too_many)), Err(InvalidParams));
        // And `tool.cards.styles`.
        let with_styles = [&with_checkpoints[..], &["tool.cards.styles"]].concat();
        let raw: Box<RawValue> = serde_json::from_str(&params(&with_styles)).unwrap();
        assert!(preflight_capabilities(&raw).is_ok_and(|n| n.tool_card_styles && n.checkpoints));
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
