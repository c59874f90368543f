//! Provider definitions (the three built-ins and configured ones), the effective
//! selection, and its local readiness check.

use std::io::Read;
use std::path::PathBuf;

use magi_protocol::limits::CREDENTIAL_FILE_BYTES;

use crate::default_effort::{DefaultEfforts, default_efforts};
use crate::provider_kind::ProviderKind;
use crate::settings::{ProviderSettings, Settings};
use crate::{ConfigError, Env};

/// Where a provider's credential comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// An environment variable that must be set.
    Env(String),
    /// An environment variable used when set; the provider works without it.
    OptionalEnv(String),
    /// A file that must hold a credential.
    File(PathBuf),
    /// A ChatGPT sign-in (`magi-code login codex`, or Codex's own), whose sign-in,
    /// token and revocation URLs are under `auth_url`. Whether it is ready is decided
    /// where `MC_HOME` is known (the runtime), from the sign-in's files.
    ChatGpt {
        /// The sign-in's issuer, `https://auth.openai.com` unless settings say.
        auth_url: String,
    },
    /// No credential.
    None,
}

/// The ChatGPT sign-in's issuer unless `[providers.codex] auth_url` says otherwise.
pub const DEFAULT_CHATGPT_AUTH_URL: &str = "https://auth.openai.com";
/// The command that makes the ChatGPT sign-in.
pub const CHATGPT_LOGIN_COMMAND: &str = "magi-code login codex";

/// A provider as the runner will use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderDefinition {
    /// The provider's name in settings and on the wire.
    pub name: String,
    /// Its wire format.
    pub kind: ProviderKind,
    /// Its endpoint.
    pub base_url: String,
    /// Its credential source.
    pub credential: Credential,
    /// Whether to ask the model for reasoning summaries.
    pub reasoning_summaries: bool,
    /// Whether a Chat Completions server takes `reasoning_effort`
    /// (`[providers.<name>] reasoning_effort = true`).
    pub reasoning_effort: bool,
    /// The efforts its models get when a selection asks for none.
    pub default_efforts: DefaultEfforts,
    /// Whether the server answers requests side by side
    /// (`[providers.<name>] concurrent_requests`; by default, unless `base_url` is on
    /// loopback).
    pub concurrent_requests: bool,
}

/// The effective provider and model of a child, locally ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The selected provider.
    pub provider: ProviderDefinition,
    /// The selected model.
    pub model: String,
}

/// A built-in provider: name, kind, endpoint variable (if any), default endpoint,
/// credential.
struct BuiltIn {
    name: &'static str,
    kind: ProviderKind,
    base_url_env: Option<&'static str>,
    default_base_url: &'static str,
    credential: fn() -> Credential,
}

const BUILT_INS: [BuiltIn; 4] = [
    BuiltIn {
        name: "openai",
        kind: ProviderKind::OpenAi,
        base_url_env: Some("OPENAI_BASE_URL"),
        default_base_url: "https://api.openai.com/v1",
        credential: || Credential::Env("OPENAI_API_KEY".into()),
    },
    BuiltIn {
        name: "anthropic",
        kind: ProviderKind::Anthropic,
        base_url_env: Some("ANTHROPIC_BASE_URL"),
        default_base_url: "https://api.anthropic.com",
        credential: || Credential::Env("ANTHROPIC_API_KEY".into()),
    },
    BuiltIn {
        name: "openai-chat",
        kind: ProviderKind::OpenAiChat,
        base_url_env: Some("OPENAI_BASE_URL"),
        default_base_url: "http://127.0.0.1:8080/v1",
        credential: || Credential::OptionalEnv("OPENAI_API_KEY".into()),
    },
    // A ChatGPT subscription through ChatGPT's Codex backend; its URLs come from
    // settings only (`[providers.codex] base_url` and `auth_url`).
    BuiltIn {
        name: "codex",
        kind: ProviderKind::Codex,
        base_url_env: None,
        default_base_url: "https://chatgpt.com/backend-api/codex",
        credential: || Credential::ChatGpt {
            auth_url: DEFAULT_CHATGPT_AUTH_URL.into(),
        },
    },
];

/// Resolves the selection (environment over settings) and checks it is locally ready:
/// the provider is defined and its credential is present. Never touches the network.
pub fn resolve_selection(settings: &Settings, env: &Env) -> Result<Selection, ConfigError> {
    let unavailable = |why: &str| ConfigError::ProviderUnavailable(why.to_owned());
    let from_env = env.get("MAGI_PROVIDER");
    let Some(name) = from_env.or(settings.provider.as_deref()) else {
        return Err(unavailable(&format!(
            "no provider is selected: set MAGI_PROVIDER or `provider` in a settings file \
             to one of {}",
            provider_names(settings).join(", ")
        )));
    };
    let provider = definition(name, settings, env)?;
    // The settings' model belongs to the settings' provider; a provider chosen in the
    // environment falls back to its own default model instead.
    let settings_model = match from_env {
        Some(env_name) if settings.provider.as_deref() != Some(env_name) => None,
        _ => settings.model.as_deref(),
    };
    let model = env
        .get("MAGI_MODEL")
        .or(settings_model)
        .or(settings
            .providers
            .get(name)
            .and_then(|p| p.model.as_deref()))
        .ok_or_else(|| {
            unavailable(&format!(
                "no model is selected for provider {name:?}: set MAGI_MODEL, or `model` in \
                 a settings file"
            ))
        })?;
    check_credential(&provider, env)?;
    Ok(Selection {
        provider,
        model: model.to_owned(),
    })
}

/// The definition of provider `name` under `settings` and `env`: a built-in with its
/// overrides, or a configured one.
pub fn provider_definition(
    name: &str,
    settings: &Settings,
    env: &Env,
) -> Result<ProviderDefinition, ConfigError> {
    definition(name, settings, env)
}

/// Every provider name: the built-ins and the configured ones, sorted by bytes.
pub fn provider_names(settings: &Settings) -> Vec<String> {
    let mut names: Vec<String> = BUILT_INS.iter().map(|b| b.name.to_owned()).collect();
    names.extend(settings.providers.keys().cloned());
    names.sort();
    names.dedup();
    names
}

/// Where provider `name`'s base URL comes from: the built-in's environment variable
/// when set, `settings` when a settings file gives it, else `built-in default`.
pub fn base_url_origin(name: &str, settings: &Settings, env: &Env) -> String {
    let built_in = BUILT_INS.iter().find(|b| b.name == name);
    if let Some(variable) = built_in.and_then(|b| b.base_url_env)
        && env.get(variable).is_some()
    {
        return variable.to_owned();
    }
    let configured = settings
        .providers
        .get(name)
        .is_some_and(|p| p.base_url.is_some());
    if configured || built_in.is_none() {
        "settings".to_owned()
    } else {
        "built-in default".to_owned()
    }
}

/// The definition of provider `name`: a built-in with its overrides, or a configured one.
fn definition(
    name: &str,
    settings: &Settings,
    env: &Env,
) -> Result<ProviderDefinition, ConfigError> {
    let configured = settings.providers.get(name);
    let built_in = BUILT_INS.iter().find(|b| b.name == name);
    match (built_in, configured) {
        (None, None) => Err(ConfigError::ProviderUnavailable(format!(
            "provider {name:?} is not defined: use one of {}, or define it under \
             [providers.{name}] in a settings file",
            provider_names(settings).join(", ")
        ))),
        (Some(b), overrides) => {
            let overrides = overrides.cloned().unwrap_or_default();
            if overrides.kind.is_some_and(|k| k != b.kind) {
                return Err(ConfigError::Invalid(format!(
                    "providers.{name}.kind cannot change a built-in provider's kind"
                )));
            }
            let base_url = b
                .base_url_env
                .and_then(|variable| env.get(variable))
                .map(str::to_owned)
                .or(overrides.base_url.clone())
                .unwrap_or_else(|| b.default_base_url.to_owned());
            let mut credential =
                configured_credential(name, &overrides)?.unwrap_or_else(b.credential);
            match (&mut credential, &overrides.auth_url) {
                (Credential::ChatGpt { auth_url }, Some(url)) => auth_url.clone_from(url),
                (Credential::ChatGpt { .. }, None) | (_, None) => {}
                (_, Some(_)) => {
                    return Err(ConfigError::Invalid(format!(
                        "providers.{name}.auth_url applies to provider \"codex\" alone"
                    )));
                }
            }
            if b.kind == ProviderKind::Codex && !matches!(credential, Credential::ChatGpt { .. }) {
                return Err(ConfigError::Invalid(format!(
                    "providers.{name}: provider \"codex\" uses a ChatGPT sign-in \
                     ({CHATGPT_LOGIN_COMMAND}), not api_key_env, api_key_file or keyless"
                )));
            }
            let concurrent_requests = overrides
                .concurrent_requests
                .unwrap_or_else(|| !on_loopback(&base_url));
            Ok(ProviderDefinition {
                name: name.to_owned(),
                kind: b.kind,
                base_url,
                credential,
                reasoning_summaries: overrides.reasoning_summaries.unwrap_or(false),
                reasoning_effort: overrides.reasoning_effort.unwrap_or(false),
                default_efforts: default_efforts(name, settings, env)?,
                concurrent_requests,
            })
        }
        (None, Some(p)) => {
            let kind = p.kind.ok_or_else(|| {
                ConfigError::Invalid(format!("providers.{name}.kind is required"))
            })?;
            if kind == ProviderKind::Codex || p.auth_url.is_some() {
                return Err(ConfigError::Invalid(format!(
                    "providers.{name}: kind \"codex\" and auth_url belong to the built-in \
                     provider \"codex\" alone; set its URLs under [providers.codex]"
                )));
            }
            let base_url = p.base_url.clone().ok_or_else(|| {
                ConfigError::Invalid(format!("providers.{name}.base_url is required"))
            })?;
            let credential = configured_credential(name, p)?.ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "providers.{name} needs api_key_env, api_key_file or keyless = true"
                ))
            })?;
            let concurrent_requests = p
                .concurrent_requests
                .unwrap_or_else(|| !on_loopback(&base_url));
            Ok(ProviderDefinition {
                name: name.to_owned(),
                kind,
                base_url,
                credential,
                reasoning_summaries: p.reasoning_summaries.unwrap_or(false),
                reasoning_effort: p.reasoning_effort.unwrap_or(false),
                default_efforts: default_efforts(name, settings, env)?,
                concurrent_requests,
            })
        }
    }
}

/// Whether `base_url` names this machine (`localhost` or a loopback address): a local
/// server, which may serve one request at a time. A URL that does not parse is taken
/// for a local one, the cautious answer.
pub fn on_loopback(base_url: &str) -> bool {
    match url::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host().map(|h| h.to_owned()))
    {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.');
            name.eq_ignore_ascii_case("localhost")
                || name.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => true,
    }
}

/// The credential source a `[providers.<name>]` table states, if it states one.
fn configured_credential(
    name: &str,
    p: &ProviderSettings,
) -> Result<Option<Credential>, ConfigError> {
    let stated = [
        p.api_key_env.is_some(),
        p.api_key_file.is_some(),
        p.keyless == Some(true),
    ];
    if stated.iter().filter(|s| **s).count() > 1 {
        return Err(ConfigError::Invalid(format!(
            "providers.{name}: api_key_env, api_key_file and keyless exclude each other"
        )));
    }
    Ok(if let Some(var) = &p.api_key_env {
        Some(Credential::Env(var.clone()))
    } else if let Some(path) = &p.api_key_file {
        Some(Credential::File(path.clone()))
    } else if p.keyless == Some(true) {
        Some(Credential::None)
    } else {
        None
    })
}

/// The credential's value for a request, read now: the environment variable, or the
/// key file's trimmed contents (bounded). `None` when the provider takes none or it is
/// missing.
pub fn read_credential(credential: &Credential, env: &Env) -> Option<String> {
    let value = match credential {
        Credential::Env(var) | Credential::OptionalEnv(var) => env.get(var).map(str::to_owned),
        Credential::File(path) => std::fs::File::open(path).ok().and_then(|file| {
            let mut bytes = Vec::new();
            file.take(CREDENTIAL_FILE_BYTES as u64)
                .read_to_end(&mut bytes)
                .ok()?;
            String::from_utf8(bytes).ok()
        }),
        // A sign-in's tokens are read by the runtime, refreshed when due.
        Credential::ChatGpt { .. } | Credential::None => None,
    };
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Whether the provider's credential is present, without reading more than a bounded
/// prefix of a key file and without keeping the value.
fn check_credential(provider: &ProviderDefinition, env: &Env) -> Result<(), ConfigError> {
    let present = match &provider.credential {
        Credential::Env(var) => env.get(var).is_some(),
        Credential::File(path) => std::fs::File::open(path)
            .and_then(|file| {
                let mut bytes = Vec::new();
                file.take(CREDENTIAL_FILE_BYTES as u64)
                    .read_to_end(&mut bytes)?;
                Ok(bytes.iter().any(|b| !b.is_ascii_whitespace()))
            })
            .unwrap_or(false),
        // Decided where MC_HOME is known: the runtime's startup.
        Credential::ChatGpt { .. } | Credential::OptionalEnv(_) | Credential::None => true,
    };
    if present {
        Ok(())
    } else {
        Err(ConfigError::ProviderUnavailable(missing_credential(
            provider,
        )))
    }
}

/// What to say when `provider`'s required credential is absent: where it was looked
/// for. Never a value.
pub fn missing_credential(provider: &ProviderDefinition) -> String {
    match &provider.credential {
        Credential::Env(var) | Credential::OptionalEnv(var) => format!(
            "provider {:?} needs an API key: set the environment variable {var}, which is \
             not set or empty",
            provider.name
        ),
        Credential::File(path) => format!(
            "provider {:?} needs an API key in the file {}, which is missing, unreadable \
             or empty",
            provider.name,
            path.display()
        ),
        Credential::ChatGpt { .. } => format!(
            "provider {:?} needs a ChatGPT sign-in: {CHATGPT_LOGIN_COMMAND}",
            provider.name
        ),
        Credential::None => format!("provider {:?} takes no credential", provider.name),
    }
}

/// Where the provider's credential comes from, for a person: the variable or the file
/// (never the value), or none.
pub fn credential_source(credential: &Credential) -> Option<String> {
    match credential {
        Credential::Env(var) | Credential::OptionalEnv(var) => Some(var.clone()),
        Credential::File(path) => Some(path.display().to_string()),
        Credential::ChatGpt { .. } => {
            Some(format!("the ChatGPT sign-in ({CHATGPT_LOGIN_COMMAND})"))
        }
        Credential::None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().map(|(k, v)| (*k, *v)))
    }

    fn settings(text: &str) -> Settings {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        crate::load_settings(&path, &dir.path().join("none")).unwrap()
    }

    #[test]
    fn environment_alone_selects_a_keyless_local_server() {
        let e = env(&[
            ("MAGI_PROVIDER", "openai-chat"),
            ("MAGI_MODEL", "qwen"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ]);
        let s = resolve_selection(&Settings::default(), &e).unwrap();
        assert_eq!(s.provider.name, "openai-chat");
        assert_eq!(s.provider.kind, ProviderKind::OpenAiChat);
        assert_eq!(s.provider.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(s.model, "qwen");
    }

    #[test]
    fn requests_run_side_by_side_by_default_except_on_loopback() {
        for (url, local) in [
            ("http://127.0.0.1:8080/v1", true),
            ("http://127.9.0.1/v1", true),
            ("http://[::1]:8080/v1", true),
            ("http://localhost:11434/v1", true),
            ("http://LocalHost./v1", true),
            ("http://box.localhost/v1", true),
            ("not a url", true),
            ("https://api.openai.com/v1", false),
            ("http://10.0.0.5:8000/v1", false),
            ("http://localhost.example/v1", false),
        ] {
            assert_eq!(on_loopback(url), local, "{url}");
        }
        let hosted = env(&[
            ("MAGI_PROVIDER", "anthropic"),
            ("MAGI_MODEL", "m"),
            ("ANTHROPIC_API_KEY", "k"),
        ]);
        let s = resolve_selection(&Settings::default(), &hosted).unwrap();
        assert!(s.provider.concurrent_requests);
        let local = env(&[("MAGI_PROVIDER", "openai-chat"), ("MAGI_MODEL", "m")]);
        let s = resolve_selection(&Settings::default(), &local).unwrap();
        assert!(!s.provider.concurrent_requests);
        let said = settings("[providers.openai-chat]\nconcurrent_requests = true\n");
        let s = resolve_selection(&said, &local).unwrap();
        assert!(s.provider.concurrent_requests);
    }

    #[test]
    fn hosted_built_ins_need_their_key() {
        let e = env(&[("MAGI_PROVIDER", "openai"), ("MAGI_MODEL", "gpt")]);
        let got = resolve_selection(&Settings::default(), &e);
        assert!(matches!(got, Err(ConfigError::ProviderUnavailable(_))));
        let e = env(&[
            ("MAGI_PROVIDER", "anthropic"),
            ("MAGI_MODEL", "c"),
            ("ANTHROPIC_API_KEY", "k"),
        ]);
        assert_eq!(
            resolve_selection(&Settings::default(), &e)
                .unwrap()
                .provider
                .base_url,
            "https://api.anthropic.com"
        );
        let e = env(&[
            ("MAGI_PROVIDER", "openai"),
            ("MAGI_MODEL", "gpt"),
            ("OPENAI_API_KEY", "  "),
        ]);
        assert!(matches!(
            resolve_selection(&Settings::default(), &e),
            Err(ConfigError::ProviderUnavailable(_))
        ));
    }

    #[test]
    fn nothing_selected_or_unknown_provider_is_unavailable() {
        for e in [
            env(&[]),
            env(&[("MAGI_PROVIDER", "nowhere"), ("MAGI_MODEL", "m")]),
            env(&[("MAGI_PROVIDER", "openai-chat")]),
        ] {
            assert!(matches!(
                resolve_selection(&Settings::default(), &e),
                Err(ConfigError::ProviderUnavailable(_))
            ));
        }
    }

    #[test]
    fn settings_select_and_environment_overrides() {
        let s = settings(
            r#"
provider = "local"
model = "settings-model"
[providers.local]
kind = "openai-chat"
base_url = "http://127.0.0.1:1/v1"
keyless = true
model = "local-default"
"#,
        );
        let got = resolve_selection(&s, &env(&[])).unwrap();
        assert_eq!(
            (got.provider.name.as_str(), got.model.as_str()),
            ("local", "settings-model")
        );
        let got = resolve_selection(&s, &env(&[("MAGI_MODEL", "env-model")])).unwrap();
        assert_eq!(got.model, "env-model");
        // A provider chosen in the environment does not inherit the settings' model.
        let got = resolve_selection(&s, &env(&[("MAGI_PROVIDER", "openai-chat")]));
        assert!(matches!(got, Err(ConfigError::ProviderUnavailable(_))));
        let got = resolve_selection(&s, &env(&[("MAGI_PROVIDER", "local")])).unwrap();
        assert_eq!(got.model, "settings-model");
    }

    #[test]
    fn configured_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        let text = format!(
            "provider = \"p\"\nmodel = \"m\"\n[providers.p]\nkind = \"anthropic\"\nbase_url = \"http://127.0.0.1:1\"\napi_key_file = {:?}\n",
            key.display().to_string()
        );
        let s = settings(&text);
        assert!(matches!(
            resolve_selection(&s, &env(&[])),
            Err(ConfigError::ProviderUnavailable(_))
        ));
        std::fs::write(&key, "secret\n").unwrap();
        assert_eq!(
            resolve_selection(&s, &env(&[]))
                .unwrap()
                .provider
                .credential,
            Credential::File(key)
        );

        let s = settings(
            "provider = \"p\"\nmodel = \"m\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\napi_key_env = \"P_KEY\"\n",
        );
        assert!(resolve_selection(&s, &env(&[])).is_err());
        assert!(resolve_selection(&s, &env(&[("P_KEY", "v")])).is_ok());
    }

    #[test]
    fn codex_is_built_in_with_a_chatgpt_sign_in_whose_urls_settings_may_move() {
        let e = env(&[("MAGI_PROVIDER", "codex"), ("MAGI_MODEL", "gpt-5-codex")]);
        // Ready as far as settings go: the sign-in itself is checked where MC_HOME is.
        let got = resolve_selection(&Settings::default(), &e).unwrap();
        assert_eq!(got.provider.kind, ProviderKind::Codex);
        assert_eq!(
            got.provider.base_url,
            "https://chatgpt.com/backend-api/codex"
        );
        assert_eq!(
            got.provider.credential,
            Credential::ChatGpt {
                auth_url: DEFAULT_CHATGPT_AUTH_URL.into()
            }
        );
        let s = settings(
            "[providers.codex]\nbase_url = \"http://127.0.0.1:1/v1\"\nauth_url = \"http://127.0.0.1:2\"\n",
        );
        let got = resolve_selection(&s, &e).unwrap();
        assert_eq!(got.provider.base_url, "http://127.0.0.1:1/v1");
        assert_eq!(
            got.provider.credential,
            Credential::ChatGpt {
                auth_url: "http://127.0.0.1:2".into()
            }
        );
        assert_eq!(base_url_origin("codex", &s, &e), "settings");
        for text in [
            "[providers.codex]\napi_key_env = \"K\"\n",
            "[providers.openai]\nauth_url = \"http://x\"\n",
            "[providers.mine]\nkind = \"codex\"\nbase_url = \"http://x\"\nkeyless = true\n",
        ] {
            let got = resolve_selection(&settings(text), &e.clone());
            let got = match got {
                Err(e) => Err(e),
                Ok(_) => {
                    provider_definition(text.split(['.', ']']).nth(1).unwrap(), &settings(text), &e)
                        .map(|_| ())
                }
            };
            assert!(
                matches!(got, Err(ConfigError::Invalid(_))),
                "{text}: {got:?}"
            );
        }
    }

    #[test]
    fn incomplete_provider_definitions_are_invalid() {
        for text in [
            "provider = \"p\"\nmodel = \"m\"\n[providers.p]\nbase_url = \"http://x\"\nkeyless = true\n",
            "provider = \"p\"\nmodel = \"m\"\n[providers.p]\nkind = \"openai\"\nkeyless = true\n",
            "provider = \"p\"\nmodel = \"m\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\n",
            "provider = \"p\"\nmodel = \"m\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"http://x\"\nkeyless = true\napi_key_env = \"K\"\n",
            "provider = \"openai\"\nmodel = \"m\"\n[providers.openai]\nkind = \"anthropic\"\n",
        ] {
            let got = resolve_selection(&settings(text), &env(&[("OPENAI_API_KEY", "k")]));
            assert!(
                matches!(got, Err(ConfigError::Invalid(_))),
                "{text}: {got:?}"
            );
        }
    }
}
