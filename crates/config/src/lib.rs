//! magi-code's configuration: the settings files with their precedence, provider
//! definitions, the effective provider/model selection and its local readiness.
//!
//! Nothing here touches the network. Readiness means "configured and a credential is
//! present", never "the provider answered".

mod acp;
mod checkpoints;
mod client_mcp;
mod code_mode;
mod default_effort;
mod effort;
mod env;
mod hooks;
mod instructions;
mod location;
mod long_work;
mod mcp;
mod models;
mod permissions;
mod profiles;
mod provider;
mod provider_kind;
mod sandbox;
mod sessions;
mod settings;
pub mod settings_edit;
mod skills;
mod text_file;
mod tools;

pub use acp::AcpSettings;
pub use checkpoints::CheckpointSettings;
pub use client_mcp::{CLIENT_MCP_SERVERS_ENV, ClientMcpServer, client_mcp_servers};
pub use code_mode::{
    CodeModeSettings, DEFAULT_CODE_MODE_MEMORY_MIB, DEFAULT_CODE_MODE_TIMEOUT_SECS,
    DEFAULT_CODE_MODE_TOOL_CALLS,
};
pub use default_effort::{DefaultEfforts, EFFORT_ENV};
pub use effort::{Effort, EffortControl, EffortProfile, EffortSupport, profile as effort_profile};
pub use env::Env;
pub use hooks::{
    HOOK_APPROVALS_FILE, Hook, HookEvent, HookSettings, HookSource, hook_approvals_path,
    load_hook_approvals,
};
pub use instructions::{
    INSTRUCTION_FILE_BYTES, INSTRUCTION_FILES, INSTRUCTIONS_BYTES, Instruction,
    InstructionSettings, Instructions, load_instructions,
};
pub use long_work::{ContextSettings, DEFAULT_PRUNE_PROTECT_TOKENS, TurnSettings};
pub use mcp::{McpApprovals, McpOAuth, McpServer, McpSource, McpTransport, is_valid_server_name};
pub use models::ModelSettings;
pub use permissions::{
    ALLOW_ALL_ENV, CallSubject, CodeModePermissions, Confinement, PERMISSION_MODE_ENV,
    PermissionMode, PermissionSettings, Rule, SessionRules, Verdict, glob_literal,
};
pub use profiles::{
    AgentSettings, PROFILE_DESCRIPTION_BYTES, PROFILE_INSTRUCTIONS_BYTES, Profile, TASK_TOOL,
    primary_profile, subagent_profiles,
};
pub use provider::{
    CHATGPT_LOGIN_COMMAND, Credential, DEFAULT_CHATGPT_AUTH_URL, ProviderDefinition, Selection,
    base_url_origin, credential_source, missing_credential, provider_definition, provider_names,
    read_credential, resolve_selection,
};
pub use provider_kind::ProviderKind;
pub use sandbox::{SANDBOX_ENV, SandboxMode, SandboxNetwork, SandboxSettings, WritableRoot};
pub use sessions::{SessionSettings, TitleMode};
pub use settings::{
    CatalogSettings, CompactionSettings, ProviderSettings, Settings, load_settings,
};
pub use skills::{SKILL_FILE_BYTES, SKILLS, Skill, SkillSettings, load_skills};
pub use tools::{DisabledTool, ToolSettings};

/// Why configuration could not be admitted. Each maps to one startup error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A settings file is unreadable, too large, not TOML, or does not fit the schema.
    /// The message names the file and, when its text is at fault, `line:column` and
    /// the key; it may name paths, so it never crosses the protocol (front ends that
    /// load the same settings in process show it to the person).
    Invalid(String),
    /// No usable provider/model selection, or its credential is missing.
    ProviderUnavailable(String),
    /// An agent profile is undefined or invalid.
    ProfileInvalid(String),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Invalid(why) => write!(f, "invalid configuration: {why}"),
            ConfigError::ProviderUnavailable(why) => write!(f, "provider unavailable: {why}"),
            ConfigError::ProfileInvalid(why) => write!(f, "invalid profile: {why}"),
        }
    }
}

impl std::error::Error for ConfigError {}
