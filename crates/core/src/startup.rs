//! Startup of an admitted child: one consistent snapshot of storage, settings and the
//! provider selection, checked locally.
//!
//! Startup runs on its own blocking worker and checks its cancellation flag between
//! steps; a step already in progress (a slow filesystem call) finishes first.

use std::path::PathBuf;
use std::sync::Arc;

use magi_config::{ConfigError, Env, Selection, Settings, load_settings, resolve_selection};
use magi_protocol::StartupError;
use magi_protocol::text::safe_display_name;
use magi_store::{Home, context_id};

use crate::mcp::{MCP_TOOL_PREFIX, McpHub, McpStartError};
use crate::workspace::{CancelFlag, StartupRequest, locate, project_settings_path};

/// An admitted child's runtime: the one configuration snapshot it works with.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// The prepared `MC_HOME`.
    pub home: Home,
    /// The canonical working directory.
    pub cwd: PathBuf,
    /// The opaque context identity.
    pub context_id: String,
    /// The admitted settings.
    pub settings: Settings,
    /// The effective, locally ready selection.
    pub selection: Selection,
    /// The environment snapshot startup admitted (credentials are read from it at
    /// each turn, never stored elsewhere).
    pub env: Env,
    /// The instructions, read once: the files in their documented order, and what
    /// replaces or follows the base instructions.
    pub instructions: magi_config::Instructions,
    /// The skills offered, read once, by name.
    pub skills: Vec<magi_config::Skill>,
    /// The primary agent's profile, when `[agent] profile` names one.
    pub profile: Option<(String, magi_config::Profile)>,
    /// The connected MCP servers, for the child's lifetime.
    pub mcp: Arc<McpHub>,
    /// The subagent profiles `task` may delegate to, by name.
    pub subagents: Arc<Vec<(String, magi_config::Profile)>>,
    /// The front end that started this backend.
    pub invocation: crate::Invocation,
    /// The hooks that may run: the global ones and the project ones approved.
    pub hooks: Arc<crate::hooks::Hooks>,
    /// The project hooks not approved: reported, never run.
    pub unapproved_hooks: Vec<magi_config::Hook>,
}

impl Runtime {
    /// The provider name as a client may see it (null when unsafe to show).
    pub fn display_provider(&self) -> Option<String> {
        safe_display_name(&self.selection.provider.name).map(str::to_owned)
    }

    /// The model name as a client may see it (null when unsafe to show).
    pub fn display_model(&self) -> Option<String> {
        safe_display_name(&self.selection.model).map(str::to_owned)
    }
}

/// A failed startup: the safe code, and whatever was learned before it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupFailure {
    /// The code answered to `initialize` and reported as `readiness`.
    pub error: StartupError,
    /// The context identity, when storage was prepared.
    pub context_id: Option<String>,
    /// The selected provider, when one was named (and safe to show).
    pub provider: Option<String>,
    /// The selected model, when one was named (and safe to show).
    pub model: Option<String>,
}

impl StartupFailure {
    /// A failure about which nothing else is known.
    pub fn new(error: StartupError) -> StartupFailure {
        StartupFailure {
            error,
            context_id: None,
            provider: None,
            model: None,
        }
    }
}

/// Runs startup: resolve and prepare `MC_HOME`, canonicalize the working directory,
/// compute the context identity, load the settings and check the selection's readiness.
/// `client_tools` are the names of the tools the client registered at `initialize`:
/// `[tools] disabled` may name them.
pub fn start(
    request: &StartupRequest,
    client_tools: &[String],
    cancel: &CancelFlag,
) -> Result<Runtime, StartupFailure> {
    let checkpoint = |failure: StartupFailure| {
        if cancel.is_cancelled() {
            Err(StartupFailure::new(StartupError::StartupCancelled))
        } else {
            Ok(failure)
        }
    };
    checkpoint(StartupFailure::new(StartupError::StartupFailed))?;
    let env = &request.env;
    let (home, cwd) =
        locate(request).map_err(|_| StartupFailure::new(StartupError::StartupFailed))?;
    let context_id = context_id(&cwd, &home);
    let mut failure = StartupFailure {
        context_id: Some(context_id.clone()),
        ..checkpoint(StartupFailure::new(StartupError::StartupFailed))?
    };

    let mut settings =
        load_settings(&home.settings_path(), &project_settings_path(&cwd)).map_err(|e| {
            failure.error = config_error_code(&e);
            failure.clone()
        })?;
    // `magi-code exec --mode <mode>` (or `--allow-all`) reaches the backend it starts
    // this way: one run's choice, not a setting that outlives it.
    settings.permissions.apply_env(env).map_err(|e| {
        failure.error = config_error_code(&e);
        failure.clone()
    })?;
    settings.sandbox.apply_env(env).map_err(|e| {
        failure.error = config_error_code(&e);
        failure.clone()
    })?;
    // Every command this backend starts from now on runs in this sandbox.
    magi_tools::sandbox::configure(
        &settings.sandbox,
        env.get(magi_tools::sandbox::UNAVAILABLE_ENV) == Some("1"),
    );
    check_disabled_tools(&settings, client_tools, None).map_err(|e| {
        failure.error = config_error_code(&e);
        failure.clone()
    })?;
    failure = checkpoint(failure)?;
    let instructions = magi_config::load_instructions(home.root(), &cwd, &settings.instructions)
        .map_err(|e| {
            failure.error = config_error_code(&e);
            failure.clone()
        })?;
    let skills = magi_config::load_skills(home.root(), &cwd, &settings.skills).map_err(|e| {
        failure.error = config_error_code(&e);
        failure.clone()
    })?;
    let profile =
        magi_config::primary_profile(&settings.agent, &settings.profiles, crate::is_built_in_tool)
            .map_err(|e| {
                failure.error = config_error_code(&e);
                failure.clone()
            })?;
    failure = checkpoint(failure)?;
    let mut selection = resolve_selection(&settings, env)
        // A sign-in's readiness needs MC_HOME, which settings do not know.
        .and_then(|selection| {
            crate::sign_in::check_ready(home.root(), env, &selection.provider).map(|()| selection)
        })
        .map_err(|e| {
            failure.error = config_error_code(&e);
            failure.provider = env
                .get("MAGI_PROVIDER")
                .or(settings.provider.as_deref())
                .and_then(safe_display_name)
                .map(str::to_owned);
            failure.clone()
        })?;
    failure = checkpoint(failure)?;
    let approvals = magi_config::McpApprovals::load(home.root()).map_err(|e| {
        failure.error = config_error_code(&e);
        failure.clone()
    })?;
    let hook_approvals = magi_config::load_hook_approvals(home.root()).map_err(|e| {
        failure.error = config_error_code(&e);
        failure.clone()
    })?;
    let (hooks, unapproved_hooks) = settings.hooks.approved(&hook_approvals, &cwd);
    // The servers the client passed for this backend alone (docs/mcp.md); one of them
    // replaces a configured server of the same name.
    let client_servers = magi_config::client_mcp_servers(env).map_err(|e| {
        failure.error = config_error_code(&e);
        failure.clone()
    })?;
    // Connecting MCP servers is the last step: nothing is started for a configuration
    // that fails any other check.
    let mut servers = crate::mcp::approved_servers(&settings.mcp_servers, &approvals, &cwd);
    servers.retain(|s| !client_servers.iter().any(|c| c.name == s.name));
    servers.extend(client_servers.iter());
    let mcp = crate::mcp::connect(&servers, home.root(), &cwd, env, cancel).map_err(|e| {
        failure.error = match e {
            McpStartError::Cancelled => StartupError::StartupCancelled,
            McpStartError::Unavailable(_) => StartupError::McpUnavailable,
        };
        failure.clone()
    })?;
    // Dropping the hub on this error stops the servers it started.
    check_disabled_tools(&settings, client_tools, Some(&mcp)).map_err(|e| {
        failure.error = config_error_code(&e);
        failure.clone()
    })?;
    // The primary profile's model, at the selected provider, replaces the selection's.
    if let Some(model) = profile.as_ref().and_then(|(_, p)| p.model.clone()) {
        selection.model = model;
    }
    let subagents = Arc::new(magi_config::subagent_profiles(
        &settings.agent,
        &settings.profiles,
    ));
    let invocation = crate::Invocation::from_env(env);
    Ok(Runtime {
        home,
        cwd,
        context_id,
        settings,
        selection,
        env: env.clone(),
        instructions,
        skills,
        subagents,
        profile,
        mcp: Arc::new(mcp),
        invocation,
        hooks: Arc::new(crate::hooks::Hooks::new(hooks, env, invocation)),
        unapproved_hooks,
    })
}

/// Checks that every name `[tools] disabled` gives is a tool this backend could offer: a
/// built-in (or `skill`, `task`), a tool the client registered, or `mcp__<server>__<tool>`
/// of a configured server. Before the servers connect (`mcp` none) a configured
/// server's name is enough; once they have, a connected server must list the tool. The
/// tools of a server that is not started (disabled, or not approved for this directory)
/// cannot be known, so any of its names is admitted.
pub(crate) fn check_disabled_tools(
    settings: &Settings,
    client_tools: &[String],
    mcp: Option<&McpHub>,
) -> Result<(), ConfigError> {
    let connected = mcp.map(McpHub::server_names).unwrap_or_default();
    settings.tools.check(|name| {
        let Some(qualified) = name.strip_prefix(MCP_TOOL_PREFIX) else {
            return crate::is_built_in_tool(name) || client_tools.iter().any(|t| t == name);
        };
        let Some((server, _)) = qualified.split_once("__") else {
            return false;
        };
        let configured = settings.mcp_servers.iter().any(|s| s.name == server);
        match mcp {
            Some(hub) if connected.iter().any(|s| s == server) => hub.tool(name).is_some(),
            _ => configured,
        }
    })
}

/// The environment variable that, set to `1`, makes every tool call of this backend run
/// without asking (deny and ask rules still apply).
pub const ALLOW_ALL_ENV: &str = magi_config::ALLOW_ALL_ENV;

/// The environment variable naming the approval mode this backend's sessions start in
/// (`magi-code exec --mode`).
pub const PERMISSION_MODE_ENV: &str = magi_config::PERMISSION_MODE_ENV;

fn config_error_code(error: &ConfigError) -> StartupError {
    match error {
        ConfigError::Invalid(_) => StartupError::ConfigurationInvalid,
        ConfigError::ProviderUnavailable(_) => StartupError::ProviderUnavailable,
        ConfigError::ProfileInvalid(_) => StartupError::ProfileInvalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::workspace::test_request as request;

    #[test]
    fn ready_startup_reports_selection_and_context() {
        let dir = tempfile::tempdir().unwrap();
        let rt = start(
            &request(
                dir.path(),
                &[("MAGI_PROVIDER", "openai-chat"), ("MAGI_MODEL", "m")],
            ),
            &[],
            &CancelFlag::default(),
        )
        .unwrap();
        assert_eq!(rt.display_provider().as_deref(), Some("openai-chat"));
        assert_eq!(rt.display_model().as_deref(), Some("m"));
        assert_eq!(rt.context_id.len(), 64);
        assert!(dir.path().join("home/sessions").is_dir());
    }

    #[test]
    fn failures_map_to_safe_codes() {
        let dir = tempfile::tempdir().unwrap();
        let got = start(&request(dir.path(), &[]), &[], &CancelFlag::default()).unwrap_err();
        assert_eq!(got.error, StartupError::ProviderUnavailable);
        assert!(got.context_id.is_some());

        std::fs::create_dir_all(dir.path().join(".magi")).unwrap();
        std::fs::write(dir.path().join(".magi/settings.toml"), "nonsense = ").unwrap();
        let got = start(&request(dir.path(), &[]), &[], &CancelFlag::default()).unwrap_err();
        assert_eq!(got.error, StartupError::ConfigurationInvalid);
    }

    #[test]
    fn disabled_tools_must_name_a_tool_of_this_backend() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".magi")).unwrap();
        let ready = [("MAGI_PROVIDER", "openai-chat"), ("MAGI_MODEL", "m")];
        let disable = |names: &str| {
            let text = format!("[tools]\ndisabled = [{names}]\n");
            std::fs::write(dir.path().join(".magi/settings.toml"), text).unwrap();
        };
        let client_tools = ["open_ticket".to_owned()];
        let run = |client_tools: &[String]| {
            start(
                &request(dir.path(), &ready),
                client_tools,
                &CancelFlag::default(),
            )
            .map(|rt| rt.settings.tools.disabled_names())
            .map_err(|failure| failure.error)
        };
        disable(r#""bash", "skill", "task", "ask_user", "open_ticket""#);
        assert_eq!(
            run(&client_tools).unwrap(),
            ["bash", "skill", "task", "ask_user", "open_ticket"]
        );
        // The same name without a client that registered it is no tool.
        assert_eq!(run(&[]), Err(StartupError::ConfigurationInvalid));
        for unknown in [r#""bahs""#, r#""mcp__nowhere__x""#, r#""mcp__""#] {
            disable(unknown);
            assert_eq!(
                run(&client_tools),
                Err(StartupError::ConfigurationInvalid),
                "{unknown}"
            );
        }
    }

    #[test]
    fn cancelled_startup_does_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancelFlag::default();
        cancel.cancel();
        let got = start(&request(dir.path(), &[]), &[], &cancel).unwrap_err();
        assert_eq!(got.error, StartupError::StartupCancelled);
        assert!(!dir.path().join("home").exists());
    }
}
