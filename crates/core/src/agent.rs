//! The agent of a turn, built from the admitted runtime: the provider client for the
//! selection, with its credential read at this moment, and what the agent may use.

use std::sync::Arc;

use magi_config::{PermissionSettings, ProviderKind, read_credential};
use magi_protocol::ErrorCode;
use magi_provider::{Endpoint, ModelClient, WireFormat};

use crate::mcp::McpHub;
use crate::model_limits::{LimitsLookup, OutputLimit};
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
    /// How the model is asked to reason: the effort the selection resolves to, in its
    /// provider's terms (`ActiveSelection::reasoning`), fixed for the turn (a tool loop
    /// is one assistant turn to a thinking model); none leaves the provider's default.
    pub reasoning_effort: Option<magi_provider::Reasoning>,
    /// The admitted permission rules.
    pub permissions: PermissionSettings,
    /// Environment variables holding credentials, hidden from the processes tools start.
    pub hidden_env: Vec<String>,
    /// The credential values themselves: redacted from everything the run sends, records
    /// or gives the model.
    pub secrets: Vec<String>,
    /// The provider's sign-in, when it takes one (`codex`): its tokens join `secrets`
    /// once a turn's thread has made sure they are current ([`Agent::prepare_sign_in`]).
    pub sign_in: Option<Arc<magi_auth::SignIn>>,
    /// The instructions startup read: the files in order, and what replaces or follows
    /// the base instructions.
    pub instructions: Arc<magi_config::Instructions>,
    /// The model's context window in tokens (`crate::model_limits`), which compaction
    /// keeps the conversation within; none until [`Agent::resolve_limits`], and for
    /// agents built by hand in tests.
    pub context_window_tokens: Option<usize>,
    /// The most tokens a response may take (`crate::model_limits`), as this wire format
    /// sends it (`wire_bound`); none sends no bound. A request asks for at most
    /// the room its conversation leaves in the window (`Agent::output_bound`).
    pub max_output_tokens: Option<u64>,
    /// Whether the model takes images (`crate::model_limits`): without them
    /// `view_image` fails rather than attach one. False until
    /// [`Agent::resolve_limits`]; agents built by hand set it.
    pub images: bool,
    /// Where the agent learns what its model can take, and the wire format its output
    /// bound is sent in: resolved ([`Agent::resolve_limits`]) on the thread that runs
    /// the turn or the compaction, since the cached catalog is a file and the protocol
    /// loop that admits them never waits on a disk. None for agents built by hand.
    pub limits: Option<(LimitsLookup, WireFormat)>,
    /// Tokens of the newest tool output sent whole (`[context] prune_protect_tokens`);
    /// `0` sends every result whole.
    pub prune_protect_tokens: usize,
    /// Most model round trips of one turn (`[turns] max_steps`), if bounded.
    pub max_steps: Option<usize>,
    /// The limits of a `code_mode` script (`[code_mode]`).
    pub code_mode: magi_config::CodeModeSettings,
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
    /// The hooks that may run (`crate::hooks`), shared with the agent's subagents.
    pub hooks: Arc<crate::hooks::Hooks>,
    /// Whether `bash` calls run in the client's terminal (`client.terminals`
    /// negotiated and `[acp] client_terminals` on); the server sets it.
    pub client_terminals: bool,
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
    // A sign-in that ended since startup (signed out, expired for good) is as missing
    // as a key; one that is due is refreshed by the turn's first request.
    let sign_in = match crate::sign_in::chatgpt_sign_in(runtime.home.root(), &runtime.env, provider)
    {
        Some(Ok((found, sign_in))) => Some((found, sign_in)),
        Some(Err(_)) => return Err(ErrorCode::ProviderUnavailable),
        None => None,
    };
    let format = wire_format(provider.kind);
    let hidden_env = credential_variables(runtime);
    // The values of every credential this backend can see, whatever they look like.
    let mut secrets: Vec<String> = credential_values(runtime)
        .into_iter()
        .chain(api_key.clone())
        .chain(sign_in.iter().flat_map(|(found, _)| found.tokens.secrets()))
        .collect();
    secrets.sort();
    secrets.dedup();
    let endpoint = Endpoint {
        format,
        base_url: provider.base_url.clone(),
        api_key,
    };
    let client = match &sign_in {
        Some((_, sign_in)) => magi_provider::signed_in_client(
            endpoint,
            Arc::new(crate::sign_in::ProviderSignIn(Arc::clone(sign_in))),
        ),
        None => magi_provider::client(endpoint),
    };
    Ok(Agent {
        sign_in: sign_in.map(|(_, sign_in)| sign_in),
        client: Arc::from(client),
        model: selection.model.clone(),
        provider: provider.name.clone(),
        credential_source: magi_config::credential_source(&provider.credential),
        reasoning_summaries: provider.reasoning_summaries,
        reasoning_effort: selection.reasoning(),
        permissions: runtime.settings.permissions.clone(),
        hidden_env,
        secrets,
        instructions: Arc::new(runtime.instructions.clone()),
        context_window_tokens: None,
        max_output_tokens: None,
        images: false,
        limits: Some((
            LimitsLookup::new(
                &runtime.home,
                &runtime.settings,
                &provider.name,
                &selection.model,
            ),
            format,
        )),
        prune_protect_tokens: runtime.settings.context.prune_protect_tokens,
        max_steps: runtime.settings.turns.max_steps,
        code_mode: runtime.settings.code_mode.clone(),
        skills: Arc::new(runtime.skills.clone()),
        profile: runtime.profile.clone().map(Arc::new),
        mcp: Arc::clone(&runtime.mcp),
        subagents: Arc::clone(&runtime.subagents),
        disabled_tools: Arc::new(runtime.settings.tools.disabled_names()),
        hooks: Arc::clone(&runtime.hooks),
        client_terminals: false,
    })
}

impl Agent {
    /// Learns what the model can take: its context window and the output bound its
    /// requests send. Reads the provider's cached catalog from disk, so it is called on
    /// the thread that runs the turn or the compaction, never on the protocol loop.
    pub fn resolve_limits(&mut self) {
        let Some((lookup, format)) = &self.limits else {
            return;
        };
        let format = *format;
        let limits = lookup.resolve();
        self.context_window_tokens =
            Some(usize::try_from(limits.context_window).unwrap_or(usize::MAX));
        self.max_output_tokens = wire_bound(format, limits.max_output_tokens);
        self.images = limits.images;
    }

    /// Makes sure the sign-in's token is current before the turn's first request
    /// (refreshed when due, once for every process sharing it), and adds its values to
    /// what the run redacts. Called on the thread that runs the turn; a refresh that
    /// fails is left for the turn's first request to report, which asks again (a
    /// refusal is remembered, so the server is not asked twice).
    pub async fn prepare_sign_in(&mut self) {
        let Some(sign_in) = &self.sign_in else {
            return;
        };
        let _ = sign_in.token(None).await;
        self.secrets.extend(sign_in.secrets());
        self.secrets.sort();
        self.secrets.dedup();
    }

    /// Makes the agent speak to `model` of the same provider (a subagent profile's),
    /// with that model's limits. Reads the cached catalog, as
    /// [`Agent::resolve_limits`] does.
    pub(crate) fn use_model(&mut self, model: &str) {
        self.model = model.to_owned();
        if let Some((lookup, _)) = &mut self.limits {
            *lookup = lookup.for_model(model);
            self.resolve_limits();
        }
    }

    /// The output bound of a request whose conversation is estimated at
    /// `request_tokens`: the model's limit, within the room the request leaves in the
    /// context window (providers refuse a request whose input and bound pass the
    /// window), at least one token.
    pub(crate) fn output_bound(&self, request_tokens: usize) -> Option<u64> {
        let limit = self.max_output_tokens?;
        let room = self.context_window_tokens.map_or(u64::MAX, |window| {
            u64::try_from(window.saturating_sub(request_tokens)).unwrap_or(u64::MAX)
        });
        Some(limit.min(room).max(1))
    }
}

/// The output bound `format` sends for a model's output `limit`. Anthropic's
/// `max_tokens` is required: the limit from any source, else
/// [`DEFAULT_MAX_TOKENS`](magi_provider::DEFAULT_MAX_TOKENS). The OpenAI formats' bound
/// is optional: only a limit the settings or the provider's metadata stated is sent, since
/// a compatible server may serve a model of the shipped table with less room than the
/// table says, and refuse a bound past it.
fn wire_bound(format: WireFormat, limit: Option<OutputLimit>) -> Option<u64> {
    match format {
        WireFormat::AnthropicMessages => {
            Some(limit.map_or(magi_provider::DEFAULT_MAX_TOKENS, |limit| limit.tokens))
        }
        WireFormat::OpenAiResponses | WireFormat::ChatCompletions => {
            limit.filter(|limit| limit.stated).map(|limit| limit.tokens)
        }
        // ChatGPT's Codex backend takes no output bound.
        WireFormat::CodexResponses => None,
    }
}

/// Every environment variable that may hold a credential: the built-in providers', each
/// configured `api_key_env` and each MCP server's `bearer_token_env`. Tools' processes
/// never see them.
/// The values of the credentials this backend holds whatever the selection (those of
/// its credential variables, and its MCP servers'): what text leaving the process is
/// redacted of where no agent is at hand.
pub fn credential_values(runtime: &Runtime) -> Vec<String> {
    credential_variables(runtime)
        .iter()
        .filter_map(|name| runtime.env.get(name))
        .map(str::to_owned)
        .chain(runtime.mcp.secrets())
        .collect()
}

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
        ProviderKind::Codex => WireFormat::CodexResponses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::{CancelFlag, StartupRequest};
    use magi_config::Env;
    use magi_store::catalog::{CachedLimits, CachedModel, ProviderCache, write_cache};

    #[test]
    fn the_catalog_is_read_when_the_limits_are_resolved_not_when_the_agent_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let env = Env::from_pairs([
            ("MC_HOME", cwd.join("home").into_os_string()),
            ("MAGI_PROVIDER", "openai-chat".into()),
            ("MAGI_MODEL", "mock-model".into()),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1".into()),
        ]);
        let request = StartupRequest {
            cwd: cwd.clone(),
            env,
        };
        let runtime = crate::start(&request, &[], &CancelFlag::default()).unwrap();
        let selection = ActiveSelection::from_runtime(&runtime);
        // Made where a turn is admitted: the protocol loop.
        let mut agent = agent_for(&runtime, &selection).unwrap();
        assert_eq!(agent.context_window_tokens, None);
        // A catalog written after that is what the resolution finds: admission read
        // nothing of it.
        let mut model = CachedModel::new("mock-model".into(), None);
        model.limits = CachedLimits {
            context_window: Some(12_345),
            max_output_tokens: Some(678),
            images: None,
        };
        let cache = ProviderCache {
            provider: "openai-chat".into(),
            fetched_at: std::time::SystemTime::now(),
            models: vec![model],
        };
        write_cache(&runtime.home, &cache).unwrap();
        agent.resolve_limits();
        assert_eq!(agent.context_window_tokens, Some(12_345));
        // Stated by the provider's metadata, so the Chat Completions format sends it.
        assert_eq!(agent.max_output_tokens, Some(678));
        assert_eq!(agent.output_bound(12_000), Some(345), "the room left");
        assert_eq!(agent.output_bound(20_000), Some(1));
        // A subagent's model has its own limits: here the table's window, and no bound
        // (the table's limit is not stated).
        agent.use_model("gpt-4o");
        assert_eq!(agent.model, "gpt-4o");
        assert_eq!(agent.context_window_tokens, Some(128_000));
        assert_eq!(agent.max_output_tokens, None);
    }

    #[test]
    fn each_format_sends_the_limits_it_may() {
        let table = Some(OutputLimit {
            tokens: 8_192,
            stated: false,
        });
        let stated = Some(OutputLimit {
            tokens: 4_000,
            stated: true,
        });
        let anthropic = WireFormat::AnthropicMessages;
        assert_eq!(wire_bound(anthropic, table), Some(8_192));
        assert_eq!(wire_bound(anthropic, stated), Some(4_000));
        assert_eq!(
            wire_bound(anthropic, None),
            Some(magi_provider::DEFAULT_MAX_TOKENS)
        );
        for format in [WireFormat::OpenAiResponses, WireFormat::ChatCompletions] {
            assert_eq!(wire_bound(format, table), None);
            assert_eq!(wire_bound(format, stated), Some(4_000));
            assert_eq!(wire_bound(format, None), None);
        }
    }
}
