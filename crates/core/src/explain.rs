//! What a front end tells a person when the backend answered only a code: the same
//! configuration loaded in process, step by step as startup loads it, and the first
//! problem found said in full (file, line, column and key; the variable to set).
//!
//! The protocol's errors stay bare codes (they never carry paths or messages); this is
//! the front end's side of the same facts. It starts nothing: no MCP server, no
//! network.

use magi_config::{ConfigError, load_settings, resolve_selection};
use magi_protocol::StartupError;

use crate::startup::check_disabled_tools;
use crate::workspace::{StartupRequest, locate, project_settings_path};

/// Why the local configuration cannot be admitted, in a sentence with the fix; none
/// when every local step passes (the failure is then beyond them: an MCP server, a
/// tool only a connected server could have, or something that changed since).
pub fn explain_configuration(request: &StartupRequest, client_tools: &[String]) -> Option<String> {
    let (home, cwd) = match locate(request) {
        Ok(found) => found,
        Err(why) => {
            return Some(format!(
                "{why}: set MC_HOME to a directory magi-code may use"
            ));
        }
    };
    let mut settings = match load_settings(&home.settings_path(), &project_settings_path(&cwd)) {
        Ok(settings) => settings,
        Err(e) => return Some(said(&e)),
    };
    if let Err(e) = settings.sandbox.apply_env(&request.env) {
        return Some(said(&e));
    }
    if let Err(e) = settings.permissions.apply_env(&request.env) {
        return Some(said(&e));
    }
    if let Err(e) = check_disabled_tools(&settings, client_tools, None) {
        return Some(said(&e));
    }
    let steps = [
        magi_config::load_instructions(home.root(), &cwd, &settings.instructions).err(),
        magi_config::load_skills(home.root(), &cwd, &settings.skills).err(),
        magi_config::primary_profile(&settings.agent, &settings.profiles, crate::is_built_in_tool)
            .err(),
        resolve_selection(&settings, &request.env)
            .and_then(|selection| {
                crate::sign_in::check_ready(home.root(), &request.env, &selection.provider)
            })
            .err(),
        magi_config::McpApprovals::load(home.root()).err(),
    ];
    steps.into_iter().flatten().next().map(|e| said(&e))
}

/// The first approved, enabled MCP server whose program is no executable file, said with
/// its name. Checked without starting anything.
fn missing_mcp_program(request: &StartupRequest) -> Option<String> {
    let (home, cwd) = locate(request).ok()?;
    let settings = load_settings(&home.settings_path(), &project_settings_path(&cwd)).ok()?;
    let approvals = magi_config::McpApprovals::load(home.root()).ok()?;
    crate::mcp::approved_servers(&settings.mcp_servers, &approvals, &cwd)
        .into_iter()
        .find_map(|server| {
            crate::mcp::missing_program(server, &cwd, &request.env)
                .map(|why| format!("the MCP server `{}` cannot start: {why}", server.name))
        })
}

/// The first approved, enabled MCP server that needs a sign-in and has no usable one,
/// said with the command that signs in. Decided from the sign-ins' files: no network.
fn mcp_sign_in_needed(request: &StartupRequest) -> Option<String> {
    let (home, cwd) = locate(request).ok()?;
    let settings = load_settings(&home.settings_path(), &project_settings_path(&cwd)).ok()?;
    let approvals = magi_config::McpApprovals::load(home.root()).ok()?;
    let store = magi_auth::store::Store::new(home.root());
    crate::mcp::approved_servers(&settings.mcp_servers, &approvals, &cwd)
        .into_iter()
        .find_map(|server| match &server.transport {
            magi_config::McpTransport::Http {
                url,
                oauth: Some(_),
                ..
            } => {
                magi_auth::mcp::ready(&store, &server.name, url, std::time::SystemTime::now()).err()
            }
            _ => None,
        })
}

/// What a startup error code means, with the local configuration's own account of it
/// when it has one.
pub fn explain_startup(
    request: &StartupRequest,
    client_tools: &[String],
    code: StartupError,
) -> String {
    let found = explain_configuration(request, client_tools);
    match (code, found) {
        (StartupError::StartupCancelled, _) => "startup was cancelled".to_owned(),
        (
            StartupError::ConfigurationInvalid
            | StartupError::ProviderUnavailable
            | StartupError::ProfileInvalid,
            Some(found),
        ) => found,
        (StartupError::McpUnavailable, _) => {
            match (missing_mcp_program(request), mcp_sign_in_needed(request)) {
                (Some(missing), _) => format!(
                    "{missing}: install it or fix its `command` in the settings, disable the \
                     server (`enabled = false`), or revoke it (`magi-code mcp revoke`)"
                ),
                (None, Some(sign_in)) => sign_in,
                (None, None) => "an approved MCP server did not start or did not list its \
                                 tools in time: see `magi-code mcp list`, fix or disable the \
                                 server (`enabled = false` in its settings), or revoke it \
                                 (`magi-code mcp revoke`); an HTTP server that asks for a \
                                 sign-in needs `oauth = true` in its definition, approving \
                                 again, and `magi-code mcp login <server>`"
                    .to_owned(),
            }
        }
        (StartupError::ConfigurationInvalid, None) => "the configuration is invalid: a name in \
             [tools] disabled may be a tool no connected MCP server lists; check it against \
             `magi-code mcp list`"
            .to_owned(),
        (StartupError::ProviderUnavailable, None) => "the selected provider is not ready: \
             check MAGI_PROVIDER, MAGI_MODEL and the provider's credential"
            .to_owned(),
        (StartupError::ProfileInvalid, None) => {
            "the agent profile is invalid: check [agent] and [profiles] in the settings".to_owned()
        }
        (StartupError::StartupFailed, found) => found.unwrap_or_else(|| {
            "startup failed: MC_HOME or the working directory could not be prepared (check \
             that MC_HOME is a writable directory)"
                .to_owned()
        }),
    }
}

/// A configuration error as a person reads it: the message, which names the place,
/// and where the settings are described.
fn said(error: &ConfigError) -> String {
    match error {
        ConfigError::Invalid(why) => {
            format!("invalid settings: {why} (the settings are described in docs/configuration.md)")
        }
        ConfigError::ProviderUnavailable(why) => why.clone(),
        ConfigError::ProfileInvalid(why) => format!("invalid agent profile: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::workspace::test_request as request;

    #[test]
    fn each_cause_has_its_own_sentence() {
        let dir = tempfile::tempdir().unwrap();
        let nothing = explain_configuration(&request(dir.path(), &[]), &[]).unwrap();
        assert!(nothing.starts_with("no provider is selected"), "{nothing}");
        let unknown = request(dir.path(), &[("MAGI_PROVIDER", "nowhere")]);
        let said = explain_configuration(&unknown, &[]).unwrap();
        assert!(
            said.starts_with("provider \"nowhere\" is not defined"),
            "{said}"
        );
        let no_model = request(dir.path(), &[("MAGI_PROVIDER", "openai-chat")]);
        let said = explain_configuration(&no_model, &[]).unwrap();
        assert!(said.starts_with("no model is selected"), "{said}");
        let no_key = request(
            dir.path(),
            &[("MAGI_PROVIDER", "openai"), ("MAGI_MODEL", "m")],
        );
        let said = explain_configuration(&no_key, &[]).unwrap();
        assert!(said.contains("OPENAI_API_KEY"), "{said}");
        let ready = request(
            dir.path(),
            &[("MAGI_PROVIDER", "openai-chat"), ("MAGI_MODEL", "m")],
        );
        assert_eq!(explain_configuration(&ready, &[]), None);

        std::fs::create_dir_all(dir.path().join(".magi")).unwrap();
        let settings = dir.path().join(".magi/settings.toml");
        std::fs::write(&settings, "[tools]\ndisabled = [\"bahs\"]\n").unwrap();
        let said = explain_startup(&ready, &[], StartupError::ConfigurationInvalid);
        let place = format!("{}:2:13: key `tools.disabled`", settings.display());
        assert!(said.contains(&place), "{said}");
    }
}
