//! The agent of a turn, built from the admitted runtime: the provider client for the
//! selection, with its credential read at this moment, and what the agent may use.

use std::sync::Arc;

use magi_config::{PermissionSettings, ProviderKind, read_credential};
use magi_protocol::ErrorCode;
use magi_provider::{Endpoint, ModelClient, WireFormat};

use crate::mcp::McpHub;
use crate::model_limits::model_limits;
use crate::selection::ActiveSelection;
use crate::startup::Runtime;

/// What the agent talks to: the model client and the selected model.
#[derive(Clone)]
pub struct Agent {
    /// The provider's client.
    pub client: Arc<dyn ModelClient>,
    /// The model.
    pub model: String,
    /// The provider's name, for what a failure says.
    pub provider: String,
    /// Where the provider's credential comes from (a variable or a file, never the
    /// value), for what a refused credential says.
    pub credential_source: Option<String>,
    /// Whether to ask for reasoning summaries.
    pub reasoning_summaries: bool,
    /// The explicit reasoning effort the selection resolves to, if any.
    pub reasoning_effort: Option<magi_protocol::messages::Effort>,
    /// The admitted permission rules.
    pub permissions: PermissionSettings,
    /// Environment variables holding credentials, hidden from the processes tools start.
    pub hidden_env: Vec<String>,
    /// The credential values themselves: redacted from everything the run sends, records
    /// or gives the model.
    pub secrets: Vec<String>,
    /// The instruction files startup read, in order.
    pub instructions: Arc<Vec<magi_config::Instruction>>,
    /// The model's context window in tokens (`crate::model_limits`), which compaction
    /// keeps the conversation within; none only for agents built by hand in tests.
    pub context_window_tokens: Option<usize>,
    /// Whether the model takes images (`crate::model_limits`): without them
    /// `view_image` fails rather than attach one.
    pub images: bool,
    /// Tokens of the newest tool output sent whole (`[context] prune_protect_tokens`);
    /// `0` sends every result whole.
    pub prune_protect_tokens: usize,
    /// Most model round trips of one turn (`[turns] max_steps`), if bounded.
    pub max_steps: Option<usize>,
    /// The skills offered, by name.
    pub skills: Arc<Vec<magi_config::Skill>>,
    /// The primary agent's profile: its name, instructions and offered tools.
    pub profile: Option<Arc<(String, magi_config::Profile)>>,
    /// The connected MCP servers, whose tools are offered too.
    pub mcp: Arc<McpHub>,
    /// The subagent profiles the `task` tool may delegate to, by name.
    pub subagents: Arc<Vec<(String, magi_config::Profile)>>,
    /// The tools `[tools] disabled` turns off: offered to no agent, and never run.
    pub disabled_tools: Arc<Vec<String>>,
}

/// The agent for the child's current selection. A credential that went missing since startup
/// is `provider_unavailable`.
pub fn agent_for(runtime: &Runtime, selection: &ActiveSelection) -> Result<Agent, ErrorCode> {
    let provider = &selection.provider;
    let api_key = read_credential(&provider.credential, &runtime.env);
    let required = matches!(
        provider.credential,
        magi_config::Credential::Env(_) | magi_config::Credential::File(_)
    );
    if required && api_key.is_none() {
        return Err(ErrorCode::ProviderUnavailable);
    }
    let format = wire_format(provider.kind);
    let hidden_env = credential_variables(runtime);
    // The values of every credential this backend can see, whatever they look like.
    let mut secrets: Vec<String> = hidden_env
        .iter()
        .filter_map(|name| runtime.env.get(name))
        .map(str::to_owned)
        .chain(api_key.clone())
        .collect();
    secrets.sort();
    secrets.dedup();
    let limits = model_limits(
        &runtime.home,
        &runtime.settings,
        &provider.name,
        &selection.model,
    );
    let client = magi_provider::client(Endpoint {
        format,
        base_url: provider.base_url.clone(),
        api_key,
    });
    Ok(Agent {
        client: Arc::from(client),
        model: selection.model.clone(),
        provider: provider.name.clone(),
        credential_source: magi_config::credential_source(&provider.credential),
        reasoning_summaries: provider.reasoning_summaries,
        reasoning_effort: selection.request_effort(),
        permissions: runtime.settings.permissions.clone(),
        hidden_env,
        secrets,
        instructions: Arc::new(runtime.instructions.clone()),
        context_window_tokens: Some(limits.context_window_tokens()),
        images: limits.images,
        prune_protect_tokens: runtime.settings.context.prune_protect_tokens,
        max_steps: runtime.settings.turns.max_steps,
        skills: Arc::new(runtime.skills.clone()),
        profile: runtime.profile.clone().map(Arc::new),
        mcp: Arc::clone(&runtime.mcp),
        subagents: Arc::clone(&runtime.subagents),
        disabled_tools: Arc::new(runtime.settings.tools.disabled_names()),
    })
}

/// Every environment variable that may hold a credential: the built-in providers', each
/// configured `api_key_env` and each MCP server's `bearer_token_env`. Tools' processes
/// never see them.
fn credential_variables(runtime: &Runtime) -> Vec<String> {
    let mut names: Vec<String> = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    names.extend(
        runtime
            .settings
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone()),
    );
    if let magi_config::Credential::Env(var) | magi_config::Credential::OptionalEnv(var) =
        &runtime.selection.provider.credential
    {
        names.push(var.clone());
    }
    // MCP servers' bearer tokens are credentials too.
    names.extend(runtime.settings.mcp_servers.iter().filter_map(
        |server| match &server.transport {
            magi_config::McpTransport::Http {
                bearer_token_env, ..
            } => bearer_token_env.clone(),
            magi_config::McpTransport::Stdio { .. } => None,
        },
    ));
    names.sort();
    names.dedup();
    names
}

/// The wire format of a provider kind.
pub(crate) fn wire_format(kind: ProviderKind) -> WireFormat {
    match kind {
        ProviderKind::OpenAi => WireFormat::OpenAiResponses,
        ProviderKind::OpenAiChat => WireFormat::ChatCompletions,
        ProviderKind::Anthropic => WireFormat::AnthropicMessages,
    }
}
