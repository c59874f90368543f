//! The settings files: `$MC_HOME/settings.toml` (global) and `<cwd>/.magi/settings.toml`
//! (project, for the exact working directory only).
//!
//! Both files have the same schema. The project file is merged over the global one
//! table by table (a key set in the project file wins; tables merge recursively), and
//! the environment wins over both where it names a value (see `provider.rs`). MCP
//! servers (`mcp.rs`), `[tools]` (`tools.rs`) and hooks (`hooks.rs`) are merged by their
//! own rules.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use magi_protocol::limits::SETTINGS_FILE_BYTES;
use magi_protocol::names::is_valid_name;
use serde::Deserialize;

use crate::ConfigError;
use crate::acp::AcpSettings;
use crate::checkpoints::CheckpointSettings;
use crate::code_mode::CodeModeSettings;
use crate::hooks::{HookSettings, merge_hooks};
use crate::instructions::InstructionSettings;
use crate::location::toml_error;
use crate::long_work::{ContextSettings, TurnSettings};
use crate::mcp::{McpServer, merge_mcp};
use crate::models::ModelSettings;
use crate::permissions::PermissionSettings;
use crate::profiles::{AgentSettings, Profile};
use crate::provider_kind::ProviderKind;
use crate::sandbox::SandboxSettings;
use crate::sessions::SessionSettings;
use crate::skills::SkillSettings;
use crate::text_file::read_text_file;
use crate::tools::{ToolSettings, merge_tools};
use magi_protocol::messages::Effort;

/// The admitted settings of one child: the merge of both files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The default provider of the selection.
    pub provider: Option<String>,
    /// The default model of the selection.
    pub model: Option<String>,
    /// The effort of a selection that requests none, for every model that takes it
    /// (`[models."provider/model"] effort` and `MAGI_EFFORT` win over it).
    pub effort: Option<Effort>,
    /// Provider definitions and overrides of the built-in ones, by name.
    pub providers: BTreeMap<String, ProviderSettings>,
    /// `[providers.catalog]`.
    pub catalog: CatalogSettings,
    /// `[permissions]`.
    pub permissions: PermissionSettings,
    /// `[instructions]`.
    pub instructions: InstructionSettings,
    /// `[compaction]`.
    pub compaction: CompactionSettings,
    /// `[context]`.
    pub context: ContextSettings,
    /// `[turns]`.
    pub turns: TurnSettings,
    /// `[code_mode]`.
    pub code_mode: CodeModeSettings,
    /// `[sessions]`.
    pub sessions: SessionSettings,
    /// `[checkpoints]`.
    pub checkpoints: CheckpointSettings,
    /// `[models."provider/model"]`, by `provider/model`.
    pub models: BTreeMap<String, ModelSettings>,
    /// `[skills]`.
    pub skills: SkillSettings,
    /// `[agent]`.
    pub agent: AgentSettings,
    /// `[profiles.<name>]`.
    pub profiles: BTreeMap<String, Profile>,
    /// `[mcp.servers.<name>]`, merged definition by definition, sorted by name.
    pub mcp_servers: Vec<McpServer>,
    /// `[tools]`: the project's disabled tools added to the global ones.
    pub tools: ToolSettings,
    /// `[[hooks.<event>]]`: the global file's hooks, then the project's.
    pub hooks: HookSettings,
    /// `[sandbox]`.
    pub sandbox: SandboxSettings,
    /// `[acp]`.
    pub acp: AcpSettings,
}

/// `[compaction]`: when the conversation is summarised to fit the model's context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionSettings {
    /// The context window in tokens of every model, over what is known of each; without
    /// it each model's own window applies (`[models."provider/model"]`, the catalog, the
    /// shipped table, the default).
    #[serde(default)]
    pub context_window_tokens: Option<usize>,
}

/// One `[providers.<name>]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// The wire format. Required for new providers; a built-in's must match if given.
    pub kind: Option<ProviderKind>,
    /// The endpoint, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: Option<String>,
    /// The model used when the selection names this provider but no model.
    pub model: Option<String>,
    /// The environment variable holding the credential.
    pub api_key_env: Option<String>,
    /// A file holding the credential.
    pub api_key_file: Option<PathBuf>,
    /// The provider needs no credential (a local server). Must be said explicitly.
    pub keyless: Option<bool>,
    /// Ask the model for reasoning summaries (OpenAI Responses, reasoning models only).
    pub reasoning_summaries: Option<bool>,
    /// The ChatGPT sign-in's issuer, under which its sign-in, token and revocation URLs
    /// are (provider `codex` only).
    pub auth_url: Option<String>,
    /// The server takes Chat Completions' `reasoning_effort` (low, medium, high), so its
    /// models' effort can be chosen.
    pub reasoning_effort: Option<bool>,
    /// The server answers requests side by side, so a second request (an `exec`
    /// session's title) may run beside a turn's without queueing it. Unset: true unless
    /// the base URL is on loopback (a local server often has one slot).
    pub concurrent_requests: Option<bool>,
}

/// `[providers.catalog]`: which choices the model catalog admits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogSettings {
    /// `"provider/model"` strings; empty admits no choices.
    #[serde(default)]
    pub enabled: Vec<String>,
}

/// One file's top level, and the merge of both. `[mcp]`, `[tools]` and `[hooks]` are
/// taken out before the merge and parsed by their own rules; they are named here so that
/// each file can be checked whole, with the place of its first error.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    provider: Option<String>,
    model: Option<String>,
    effort: Option<Effort>,
    providers: Option<Providers>,
    #[serde(default)]
    permissions: PermissionSettings,
    #[serde(default)]
    instructions: InstructionSettings,
    #[serde(default)]
    compaction: CompactionSettings,
    #[serde(default)]
    context: ContextSettings,
    #[serde(default)]
    turns: TurnSettings,
    #[serde(default)]
    code_mode: CodeModeSettings,
    #[serde(default)]
    sessions: SessionSettings,
    #[serde(default)]
    checkpoints: CheckpointSettings,
    #[serde(default)]
    models: BTreeMap<String, ModelSettings>,
    #[serde(default)]
    skills: SkillSettings,
    #[serde(default)]
    agent: AgentSettings,
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
    #[serde(default)]
    sandbox: SandboxSettings,
    #[serde(default)]
    acp: AcpSettings,
    #[serde(default)]
    #[expect(dead_code, reason = "checked for its shape here, parsed by `mcp.rs`")]
    mcp: Option<toml::Value>,
    #[serde(default)]
    #[expect(dead_code, reason = "checked for its shape here, parsed by `tools.rs`")]
    tools: Option<toml::Value>,
    #[serde(default)]
    #[expect(dead_code, reason = "checked for its shape here, parsed by `hooks.rs`")]
    hooks: Option<toml::Value>,
}

/// `[providers]`: `catalog`, and every other key a provider definition. Read key by
/// key, straight from the deserializer, so that an error inside a definition keeps its
/// place in the file.
#[derive(Debug, Default)]
struct Providers {
    catalog: Option<CatalogSettings>,
    defined: BTreeMap<String, ProviderSettings>,
}

impl<'de> Deserialize<'de> for Providers {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Providers;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a table of provider definitions")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Providers, A::Error> {
                let mut providers = Providers::default();
                while let Some(name) = map.next_key::<String>()? {
                    if name == "catalog" {
                        providers.catalog = Some(map.next_value()?);
                        continue;
                    }
                    if !is_valid_name(&name) {
                        return Err(serde::de::Error::custom(format!(
                            "provider name {name:?} is not a valid name (letters, digits, \
                             `-`, `_`, `.`)"
                        )));
                    }
                    let definition = map.next_value()?;
                    providers.defined.insert(name, definition);
                }
                Ok(providers)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// Reads and merges the global and project settings files. A missing file counts as
/// empty; anything unreadable or malformed is [`ConfigError::Invalid`], whose message
/// names the file and, when the text is at fault, the line, column and key.
pub fn load_settings(global: &Path, project_path: &Path) -> Result<Settings, ConfigError> {
    let global_text = read_checked(global)?;
    let project_text = read_checked(project_path)?;
    let mut merged = table_of(global, global_text.as_deref())?;
    let mut project = table_of(project_path, project_text.as_deref())?;
    // MCP definitions merge whole, not key by key: see `mcp.rs`.
    let mcp_servers = merge_mcp(merged.remove("mcp"), project.remove("mcp"))?;
    // Disabled tools add up, each remembering its file and place: see `tools.rs`.
    let tools = merge_tools(
        (global_text.as_deref(), global),
        (project_text.as_deref(), project_path),
    )?;
    merged.remove("tools");
    project.remove("tools");
    // Hooks add up too, each with its file and line: see `hooks.rs`.
    let hooks = merge_hooks(
        (global_text.as_deref(), global),
        (project_text.as_deref(), project_path),
    )?;
    merged.remove("hooks");
    project.remove("hooks");
    merge_tables(&mut merged, project);
    Ok(Settings {
        mcp_servers,
        tools,
        hooks,
        ..parse_settings(merged)?
    })
}

/// The text of one settings file (none when it does not exist), checked on its own
/// against the schema so that an error names its place.
fn read_checked(path: &Path) -> Result<Option<String>, ConfigError> {
    let text = read_text_file(path, SETTINGS_FILE_BYTES)
        .map_err(|why| ConfigError::Invalid(format!("{}: {why}", path.display())))?;
    if let Some(text) = &text {
        toml::from_str::<RawSettings>(text).map_err(|e| toml_error(path, text, &e))?;
    }
    Ok(text)
}

fn table_of(path: &Path, text: Option<&str>) -> Result<toml::Table, ConfigError> {
    match text {
        // A missing file counts as empty.
        None => Ok(toml::Table::new()),
        Some(text) => text
            .parse::<toml::Table>()
            .map_err(|e| toml_error(path, text, &e)),
    }
}

/// Merges `over` into `base`: tables merge key by key, any other value replaces.
fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(base_table)), toml::Value::Table(over_table)) => {
                merge_tables(base_table, over_table)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

fn parse_settings(table: toml::Table) -> Result<Settings, ConfigError> {
    let raw: RawSettings = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::Invalid(e.message().trim().to_owned()))?;
    let providers = raw.providers.unwrap_or_default();
    Ok(Settings {
        provider: raw.provider,
        model: raw.model,
        effort: raw.effort,
        providers: providers.defined,
        catalog: providers.catalog.unwrap_or_default(),
        permissions: raw.permissions,
        instructions: raw.instructions,
        compaction: raw.compaction,
        context: raw.context,
        turns: raw.turns,
        code_mode: raw.code_mode,
        sessions: raw.sessions,
        checkpoints: raw.checkpoints,
        models: raw.models,
        skills: raw.skills,
        agent: raw.agent,
        profiles: raw.profiles,
        sandbox: raw.sandbox,
        acp: raw.acp,
        ..Settings::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn missing_files_are_empty_settings() {
        let dir = tempfile::tempdir().unwrap();
        let settings = load_settings(&dir.path().join("a"), &dir.path().join("b")).unwrap();
        assert_eq!(settings, Settings::default());
    }

    #[test]
    fn context_and_turns_have_defaults_and_merge_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let none = load_settings(&dir.path().join("a"), &dir.path().join("b")).unwrap();
        assert_eq!(none.context.prune_protect_tokens, 40_000);
        assert_eq!(none.turns.max_steps, None);
        let global = write(dir.path(), "g.toml", "[turns]\nmax_steps = 200\n");
        let project = write(
            dir.path(),
            "p.toml",
            "[context]\nprune_protect_tokens = 0\n",
        );
        let settings = load_settings(&global, &project).unwrap();
        assert_eq!(settings.context.prune_protect_tokens, 0);
        assert_eq!(settings.turns.max_steps, Some(200));
        let bad = write(dir.path(), "bad.toml", "[turns]\nmax_step = 2\n");
        assert!(load_settings(&bad, &dir.path().join("b")).is_err());
    }

    #[test]
    fn project_overrides_global_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let global = write(
            dir.path(),
            "global.toml",
            r#"
provider = "local"
model = "global-model"
[providers.local]
kind = "openai-chat"
base_url = "http://127.0.0.1:1/v1"
keyless = true
[providers.catalog]
enabled = ["local/a"]
"#,
        );
        let project = write(
            dir.path(),
            "project.toml",
            r#"
model = "project-model"
[providers.local]
base_url = "http://127.0.0.1:2/v1"
"#,
        );
        let settings = load_settings(&global, &project).unwrap();
        assert_eq!(settings.provider.as_deref(), Some("local"));
        assert_eq!(settings.model.as_deref(), Some("project-model"));
        let local = &settings.providers["local"];
        assert_eq!(local.kind, Some(ProviderKind::OpenAiChat));
        assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:2/v1"));
        assert_eq!(local.keyless, Some(true));
        assert_eq!(settings.catalog.enabled, vec!["local/a".to_owned()]);
    }

    #[test]
    fn disabled_tools_add_up_and_unknown_names_are_reported_with_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let global = write(
            dir.path(),
            "global.toml",
            "[tools]\ndisabled = [\"web_fetch\", \"bash\"]\n",
        );
        let project = write(
            dir.path(),
            "project.toml",
            "[tools]\ndisabled = [\"bash\", \"bahs\"]\n",
        );
        let settings = load_settings(&global, &project).unwrap();
        assert_eq!(
            settings.tools.disabled_names(),
            ["web_fetch", "bash", "bahs"]
        );
        // A name both files give is the global file's.
        assert_eq!(settings.tools.disabled[1].file, global);
        assert!(settings.tools.is_disabled("web_fetch") && !settings.tools.is_disabled("read"));

        let known = |name: &str| matches!(name, "web_fetch" | "bash");
        let Err(ConfigError::Invalid(why)) = settings.tools.check(known) else {
            panic!("an unknown name passed");
        };
        assert!(why.contains(&project.display().to_string()), "{why}");
        assert!(why.contains("\"bahs\""), "{why}");
        let everything = |_: &str| true;
        assert_eq!(settings.tools.check(everything), Ok(()));

        // Without a `[tools]` table nothing is disabled.
        let none = load_settings(&dir.path().join("a"), &dir.path().join("b")).unwrap();
        assert!(none.tools.disabled.is_empty());
    }

    #[test]
    fn errors_name_the_file_line_column_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        for (text, expected) in [
            ("model = \"m\"\nprovider = \n", ":2:12: key `provider`: "),
            (
                "model = \"m\"\nunknown_key = 1\n",
                ":2:1: key `unknown_key`: unknown field",
            ),
            (
                "provider = 7\n",
                ":1:12: key `provider`: invalid type: integer `7`",
            ),
            (
                "[providers.local]\nkind = \"openai-chat\"\ncolour = \"red\"\n",
                ":3:1: key `providers.local.colour`: unknown field `colour`",
            ),
            (
                "[sandbox]\nmode = \"workspace-write\"\nnetwork = \"lan\"\n",
                ":3:11: key `sandbox.network`: unknown variant `lan`",
            ),
            (
                "[acp]\nclient_terminals = 1\n",
                ":2:20: key `acp.client_terminals`: invalid type: integer `1`",
            ),
            (
                "[tools]\ndisabled = \"bash\"\n",
                ":2:12: key `tools.disabled`: invalid type: string \"bash\", expected a sequence",
            ),
            // A header left open names no key, not the last one of the table above.
            (
                "[tools]\ndisabled = [\"bash\"]\n[agent\n",
                ":3:7: unclosed table, expected `]`",
            ),
        ] {
            let path = write(dir.path(), "s.toml", text);
            let Err(ConfigError::Invalid(why)) = load_settings(&path, &missing) else {
                panic!("{text} was admitted");
            };
            let expected = format!("{}{expected}", path.display());
            assert!(why.starts_with(&expected), "{text}: {why}");
        }
        let path = write(
            dir.path(),
            "s.toml",
            "[tools]\ndisabled = [\n  \"bash\",\n  \"bahs\",\n]\n",
        );
        let settings = load_settings(&path, &missing).unwrap();
        let Err(ConfigError::Invalid(why)) = settings.tools.check(|name| name == "bash") else {
            panic!("an unknown name passed");
        };
        let expected = format!(
            "{}:4:3: key `tools.disabled`: \"bahs\" is no tool",
            path.display()
        );
        assert!(why.starts_with(&expected), "{why}");
    }

    #[test]
    fn malformed_settings_are_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        for text in [
            "provider = ",
            "unknown_key = 1",
            "provider = 7",
            "[providers.x]\nkind = \"carrier-pigeon\"",
            "[providers.x]\ncolour = \"red\"",
            "[providers.\"bad name\"]\nkind = \"openai\"",
            "[providers.catalog]\nenabled = \"a/b\"",
            "[tools]\ndisabled = \"bash\"",
            "[tools]\ndisabled = [1]",
            "[tools]\nenabled = [\"bash\"]",
        ] {
            let path = write(dir.path(), "s.toml", text);
            let got = load_settings(&path, &missing);
            assert!(
                matches!(got, Err(ConfigError::Invalid(_))),
                "{text}: {got:?}"
            );
        }
        let path = dir.path().join("bin.toml");
        std::fs::write(&path, [0xff, 0xfe, b'\n']).unwrap();
        assert!(matches!(
            load_settings(&path, &missing),
            Err(ConfigError::Invalid(_))
        ));
        let path = write(dir.path(), "big.toml", &"#".repeat(SETTINGS_FILE_BYTES + 1));
        assert!(matches!(
            load_settings(&path, &missing),
            Err(ConfigError::Invalid(_))
        ));
        // A directory where the file should be is unreadable, not missing.
        assert!(matches!(
            load_settings(dir.path(), &missing),
            Err(ConfigError::Invalid(_))
        ));
    }

    #[test]
    fn model_settings_merge_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let global = write(
            dir.path(),
            "global.toml",
            "[models.\"local/m\"]\ncontext_window = 32768\nimages = false\n",
        );
        let project = write(
            dir.path(),
            "project.toml",
            "[models.\"local/m\"]\ncontext_window = 8192\nmax_output_tokens = 1024\n",
        );
        let settings = load_settings(&global, &project).unwrap();
        assert_eq!(
            settings.models["local/m"],
            ModelSettings {
                context_window: Some(8192),
                max_output_tokens: Some(1024),
                images: Some(false),
                effort: None,
            }
        );
        let bad = write(dir.path(), "bad.toml", "[models.\"local/m\"]\nwindow = 1\n");
        assert!(load_settings(&bad, &dir.path().join("none")).is_err());
    }
}
