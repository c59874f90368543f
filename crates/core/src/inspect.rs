//! What a configuration is made of and where each part comes from, for `doctor`: the
//! `MC_HOME` used, each settings file read or absent, the selection with its origins,
//! the credential's presence (never its value) and the MCP servers with their approval;
//! and, only when asked, a probe that reaches the provider.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use magi_config::{
    Env, ProviderDefinition, Settings, base_url_origin, credential_source, load_settings,
    provider_definition, read_credential,
};
use magi_protocol::limits::{PROVIDER_MODEL_LOOKUP_MS, PROVIDER_PROBE_MS};
use magi_provider::{Asked, Endpoint, Item, ModelEvent, ModelRequest, ProviderError};
use tokio_util::sync::CancellationToken;

use crate::workspace::{StartupRequest, locate, project_settings_path};

/// One settings file and whether it was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    /// `global` or `project`.
    pub scope: &'static str,
    /// Its path.
    pub path: PathBuf,
    /// Whether it exists (an absent file counts as empty).
    pub present: bool,
}

/// The selected provider, as resolved, with where each part came from.
#[derive(Debug, Clone)]
pub struct ProviderFacts {
    /// The definition startup would use.
    pub definition: ProviderDefinition,
    /// Where the name came from: `MAGI_PROVIDER` or `settings`.
    pub from: &'static str,
    /// Where the base URL came from: a variable, `settings` or `built-in default`.
    pub base_url_from: String,
    /// The credential's variable or file, when the provider takes one.
    pub credential: Option<String>,
    /// Whether the provider cannot work without it.
    pub credential_required: bool,
    /// Whether it is present (read and dropped at once; never kept or shown).
    pub credential_present: bool,
}

/// One MCP server defined for this directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpFacts {
    /// Its name.
    pub name: String,
    /// Whether its definition enables it.
    pub enabled: bool,
    /// Whether this definition is approved.
    pub approved: bool,
}

/// What the configuration of one directory is made of.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// `MC_HOME`, or why it cannot be used.
    pub home: Result<PathBuf, String>,
    /// Where it came from: `MC_HOME`, or `HOME` (`$HOME/.magi-code`).
    pub home_from: &'static str,
    /// The settings files, global first.
    pub files: Vec<SettingsFile>,
    /// The merged settings, or what is wrong with them.
    pub settings: Result<Settings, String>,
    /// The selected provider, when one is named and defined.
    pub provider: Option<ProviderFacts>,
    /// The selected model and where it came from, when one is named.
    pub model: Option<(String, &'static str)>,
    /// The MCP servers.
    pub mcp: Vec<McpFacts>,
}

/// Inspects the configuration `request` would start with. It prepares `MC_HOME` as
/// startup does, and starts nothing.
pub fn inspect(request: &StartupRequest) -> Inspection {
    let env = &request.env;
    let home_from = if env.get_os("MC_HOME").is_some_and(|v| !v.is_empty()) {
        "MC_HOME"
    } else {
        "HOME"
    };
    let mut inspection = Inspection {
        home: Err(String::new()),
        home_from,
        files: Vec::new(),
        settings: Err(String::new()),
        provider: None,
        model: None,
        mcp: Vec::new(),
    };
    let (home, cwd) = match locate(request) {
        Ok(found) => found,
        Err(why) => {
            inspection.home = Err(why.clone());
            inspection.settings = Err(why);
            return inspection;
        }
    };
    inspection.home = Ok(home.root().to_owned());
    let global = home.settings_path();
    let project = project_settings_path(&cwd);
    for (scope, path) in [("global", &global), ("project", &project)] {
        inspection.files.push(SettingsFile {
            scope,
            path: path.clone(),
            present: path.exists(),
        });
    }
    let settings = match load_settings(&global, &project) {
        Ok(settings) => settings,
        Err(e) => {
            inspection.settings = Err(e.to_string());
            return inspection;
        }
    };
    let from_env = env.get("MAGI_PROVIDER");
    let name = from_env.or(settings.provider.as_deref());
    if let Some(name) = name
        && let Ok(definition) = provider_definition(name, &settings, env)
    {
        let credential = credential_source(&definition.credential);
        inspection.provider = Some(ProviderFacts {
            from: if from_env.is_some() {
                "MAGI_PROVIDER"
            } else {
                "settings"
            },
            base_url_from: base_url_origin(name, &settings, env),
            credential_required: matches!(
                definition.credential,
                magi_config::Credential::Env(_)
                    | magi_config::Credential::File(_)
                    | magi_config::Credential::ChatGpt { .. }
            ),
            credential_present: match &definition.credential {
                magi_config::Credential::None | magi_config::Credential::OptionalEnv(_) => {
                    read_credential(&definition.credential, env).is_some()
                }
                required => crate::sign_in::authenticated(home.root(), env, required),
            },
            credential,
            definition,
        });
    }
    let settings_model = match from_env {
        Some(env_name) if settings.provider.as_deref() != Some(env_name) => None,
        _ => settings.model.clone(),
    };
    inspection.model = match (env.get("MAGI_MODEL"), settings_model) {
        (Some(model), _) => Some((model.to_owned(), "MAGI_MODEL")),
        (None, Some(model)) => Some((model, "settings")),
        (None, None) => name
            .and_then(|n| settings.providers.get(n))
            .and_then(|p| p.model.clone())
            .map(|m| (m, "settings")),
    };
    if let Ok(review) = crate::mcp::McpReview::load(request) {
        inspection.mcp = review
            .servers
            .iter()
            .map(|s| McpFacts {
                name: s.server.name.clone(),
                enabled: s.server.enabled,
                approved: s.approved,
            })
            .collect();
    }
    inspection.settings = Ok(settings);
    inspection
}

/// What reaching the provider showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The models the provider lists, or why the list could not be had.
    pub listed: Result<Vec<String>, String>,
    /// A minimal model request, made when the list could not show that the model is
    /// there: `Ok` once output began, or what went wrong, said in full.
    pub request: Option<Result<(), String>>,
}

/// Reaches the provider: its model list first; a minimal request (cancelled as soon
/// as output begins) only when the list does not show the model. A provider with a
/// sign-in is reached with it (refreshed when due, as a turn would), from `MC_HOME` at
/// `home`.
pub async fn probe(facts: &ProviderFacts, model: &str, home: &Path, env: &Env) -> Probe {
    let endpoint = Endpoint {
        format: crate::agent::wire_format(facts.definition.kind),
        base_url: facts.definition.base_url.clone(),
        api_key: read_credential(&facts.definition.credential, env),
    };
    let sign_in = match crate::sign_in::chatgpt_sign_in(home, env, &facts.definition) {
        Some(Ok((_, sign_in))) => Some(Arc::new(crate::sign_in::ProviderSignIn(sign_in))),
        Some(Err(why)) => {
            return Probe {
                listed: Err(why.clone()),
                request: Some(Err(why)),
            };
        }
        None => None,
    };
    let lookup = Duration::from_millis(PROVIDER_MODEL_LOOKUP_MS);
    let cancel = CancellationToken::new();
    let listed = match &sign_in {
        Some(sign_in) => tokio::time::timeout(
            lookup,
            magi_provider::list_signed_in_models(&endpoint, sign_in.as_ref(), &cancel),
        )
        .await
        .unwrap_or(Err(magi_provider::RefreshError::Unreachable)),
        None => magi_provider::models::list_models_within(&endpoint, &cancel, lookup).await,
    }
    .map(|models| models.into_iter().map(|m| m.id).collect::<Vec<_>>())
    .map_err(|e| e.to_string());
    if listed
        .as_ref()
        .is_ok_and(|ids| ids.iter().any(|id| id == model))
    {
        return Probe {
            listed,
            request: None,
        };
    }
    let asked = Asked {
        provider: &facts.definition.name,
        model,
        credential: facts.credential.as_deref(),
    };
    let client = match sign_in {
        Some(sign_in) => magi_provider::signed_in_client(endpoint, sign_in),
        None => magi_provider::client(endpoint),
    };
    let request = Some(minimal_request(client, model, &asked).await);
    Probe { listed, request }
}

/// One short request, cancelled once output begins.
async fn minimal_request(
    client: Box<dyn magi_provider::ModelClient>,
    model: &str,
    asked: &Asked<'_>,
) -> Result<(), String> {
    let request = ModelRequest {
        model: model.to_owned(),
        instructions: None,
        items: vec![Item::User {
            text: "Reply with the single word: ok".to_owned(),
        }],
        tools: Vec::new(),
        reasoning_summaries: false,
        reasoning: None,
        // One word is asked for, and the request is cancelled once output begins.
        max_output_tokens: None,
        cache_key: None,
    };
    let cancel = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let watch = async {
        let mut answered = false;
        while let Some(event) = rx.recv().await {
            if !matches!(event, ModelEvent::Retrying(_)) {
                answered = true;
                cancel.cancel();
            }
        }
        answered
    };
    let both = async { tokio::join!(client.stream(&request, tx, &cancel), watch) };
    match tokio::time::timeout(Duration::from_millis(PROVIDER_PROBE_MS), both).await {
        Err(_) => Err(format!(
            "provider {:?} did not answer within {} s",
            asked.provider,
            PROVIDER_PROBE_MS / 1000
        )),
        Ok((_, true)) => Ok(()),
        Ok((Ok(()), false)) => Ok(()),
        Ok((Err(failure), false)) if failure.error == ProviderError::Cancelled => {
            Err("the request was cancelled".to_owned())
        }
        Ok((Err(failure), false)) => Err(failure.describe(asked)),
    }
}
