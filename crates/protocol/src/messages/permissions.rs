//! The `permissions.modes` extension: the attached session's approval mode, switched
//! with `permissions.mode.set`, and the rules in force, listed with `permissions.list`
//! and a session rule revoked with `permissions.rule.revoke`
//! (docs/protocol/extensions.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An approval mode, as the wire spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ApprovalMode {
    /// No file changes: file-changing tools are refused, commands run confined
    /// read-only.
    #[serde(rename = "plan")]
    Plan,
    /// Ask before every call that is not read-only and not allowed by a rule.
    #[serde(rename = "ask")]
    Ask,
    /// File changes inside the workspace and confined commands run without asking.
    #[serde(rename = "auto")]
    Auto,
    /// Everything runs without asking; deny and ask rules still hold.
    #[serde(rename = "allow-all")]
    AllowAll,
}

impl ApprovalMode {
    /// Every mode, in the order the descriptor lists them.
    pub const ALL: [ApprovalMode; 4] = [
        ApprovalMode::Plan,
        ApprovalMode::Ask,
        ApprovalMode::Auto,
        ApprovalMode::AllowAll,
    ];

    /// The mode's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan",
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::AllowAll => "allow-all",
        }
    }

    /// The mode named `name` on the wire.
    pub fn from_name(name: &str) -> Option<ApprovalMode> {
        ApprovalMode::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

/// Params of `permissions.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionsListParams {
    /// The attached session.
    pub session_id: String,
}

/// Where a rule in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleSource {
    /// `[permissions]` of the settings files.
    Settings,
    /// `[permissions.code_mode]`: the calls Code Mode scripts make.
    CodeMode,
    /// An answer "for this session" (`approval.scopes`); the only rules a client may
    /// revoke.
    Session,
}

/// What a rule does to the calls it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleEffectName {
    /// They run without asking.
    Allow,
    /// They ask even when the mode or an allow rule would run them.
    Ask,
    /// They never run.
    Deny,
}

/// One rule in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RuleInForce {
    /// Where it comes from.
    pub source: RuleSource,
    /// What it does.
    pub effect: RuleEffectName,
    /// The rule in the settings' syntax (`bash(cargo test*)`), at most
    /// [`crate::limits::PERMISSION_RULE_BYTES`] bytes.
    pub rule: String,
}

/// The result of `permissions.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionsListResult {
    /// The session.
    pub session_id: String,
    /// The session's approval mode now.
    pub mode: ApprovalMode,
    /// The mode a session starts in (the settings' `[permissions] mode`, or the one a
    /// front end started the backend with).
    pub default_mode: ApprovalMode,
    /// `[permissions.code_mode] mode`, when it sets one for Code Mode scripts' calls.
    pub code_mode_mode: Option<ApprovalMode>,
    /// The rules: the session's (deny, allow), then the settings' (deny, ask, allow),
    /// then Code Mode's (deny, ask, allow), each source in the order its rules are
    /// weighed; at most [`crate::limits::PERMISSION_RULES_LISTED`], the whole result
    /// within [`crate::limits::PERMISSIONS_LIST_BYTES`].
    pub rules: Vec<RuleInForce>,
    /// How many rules were left out: past the bound, over the rule bytes, or not safe
    /// to show.
    pub omitted: u64,
}

/// Params of `permissions.mode.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionModeSetParams {
    /// The attached session.
    pub session_id: String,
    /// The mode to switch to.
    pub mode: ApprovalMode,
}

/// The result of `permissions.mode.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionModeSetResult {
    /// The session's mode now.
    pub mode: ApprovalMode,
    /// Its mode before.
    pub previous: ApprovalMode,
}

/// Params of `permissions.rule.revoke`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionRuleRevokeParams {
    /// The attached session.
    pub session_id: String,
    /// The session rule, exactly as `permissions.list` gave it.
    pub rule: String,
}

/// The result of `permissions.rule.revoke`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionRuleRevokeResult {
    /// Always true: the rule no longer holds.
    pub revoked: bool,
}

/// The `extensions["permissions.modes"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionModesDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// The modes, in the order a front end cycles through them.
    pub modes: Vec<ApprovalMode>,
    /// Most rules a `permissions.list` result carries.
    pub rules_listed: u64,
    /// Most bytes of a listed rule.
    pub rule_bytes: u64,
    /// Most bytes of a serialized `permissions.list` result.
    pub list_bytes: u64,
}

impl PermissionModesDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> PermissionModesDescriptor {
        PermissionModesDescriptor {
            schema_version: 1,
            modes: ApprovalMode::ALL.to_vec(),
            rules_listed: crate::limits::PERMISSION_RULES_LISTED as u64,
            rule_bytes: crate::limits::PERMISSION_RULE_BYTES as u64,
            list_bytes: crate::limits::PERMISSIONS_LIST_BYTES as u64,
        }
    }
}
