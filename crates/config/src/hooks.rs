//! `[[hooks.<event>]]`: commands the settings run at the agent's lifecycle points
//! (`docs/hooks.md`).
//!
//! ```toml
//! [[hooks.pre_tool_use]]
//! matcher = "bash"            # a glob over the tool's name; omitted = every tool
//! command = "scripts/check-command"
//! timeout_secs = 30           # default 60
//! ```
//!
//! Hooks add up: the global file's run first, then the project file's, each in the
//! order written. Each definition remembers its file and line, so a broken one is a
//! settings error naming both. A project hook is code the repository brings: like a
//! project MCP server it runs only when the digest of its canonical form (which names
//! the project's directory) is listed in the global hook approvals file
//! (`$MC_HOME/hook-approvals.json`), which only `magi-code hooks approve` writes; an
//! edited hook has another digest and needs approval again. Global hooks are the
//! person's own and need none.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use magi_protocol::limits::{HOOK_TIMEOUT_SECS, HOOK_TIMEOUT_SECS_MAX, HOOKS};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ConfigError;
use crate::location::{Location, toml_error};
use crate::mcp::{McpApprovals, hex};

/// The lifecycle points a hook may run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// A session was created or attached for a turn.
    SessionStart,
    /// A prompt is about to start a turn.
    UserPromptSubmit,
    /// A tool call is about to be supervised and run.
    PreToolUse,
    /// A tool call settled.
    PostToolUse,
    /// A tool call waits for the person's approval.
    ApprovalRequested,
    /// The conversation is about to be compacted.
    PreCompact,
    /// A subagent finished its task.
    SubagentStop,
    /// A turn ended.
    TurnEnd,
}

impl HookEvent {
    /// Every event, in the order `docs/hooks.md` lists them.
    pub const ALL: [HookEvent; 8] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::ApprovalRequested,
        HookEvent::PreCompact,
        HookEvent::SubagentStop,
        HookEvent::TurnEnd,
    ];

    /// The event's name, as the settings and a hook's input write it.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPromptSubmit => "user_prompt_submit",
            HookEvent::PreToolUse => "pre_tool_use",
            HookEvent::PostToolUse => "post_tool_use",
            HookEvent::ApprovalRequested => "approval_requested",
            HookEvent::PreCompact => "pre_compact",
            HookEvent::SubagentStop => "subagent_stop",
            HookEvent::TurnEnd => "turn_end",
        }
    }

    /// Whether a matcher applies to this event: a tool's name, or a subagent's profile.
    fn has_subject(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::ApprovalRequested
                | HookEvent::SubagentStop
        )
    }
}

/// The settings file a hook came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookSource {
    /// `$MC_HOME/settings.toml`: the person's own, run without approval.
    Global,
    /// `<cwd>/.magi/settings.toml`: runs only once approved globally.
    Project,
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    /// When it runs.
    pub event: HookEvent,
    /// The glob over the event's subject (a tool's name, a subagent's profile); none
    /// matches every subject.
    pub matcher: Option<String>,
    /// The command line, run by the user's shell.
    pub command: String,
    /// How long it may run, in seconds.
    pub timeout_secs: u64,
    /// The file it came from.
    pub source: HookSource,
    /// That file's path.
    pub file: PathBuf,
    /// The line of its `[[hooks.<event>]]` table, 1-based.
    pub line: usize,
    glob: Option<GlobMatcher>,
}

impl PartialEq for Hook {
    fn eq(&self, other: &Hook) -> bool {
        (
            self.event,
            &self.matcher,
            &self.command,
            self.timeout_secs,
            self.source,
            &self.file,
            self.line,
        ) == (
            other.event,
            &other.matcher,
            &other.command,
            other.timeout_secs,
            other.source,
            &other.file,
            other.line,
        )
    }
}

impl Eq for Hook {}

/// What is hashed for approval: what runs, when, and where it came from. The timeout is
/// left out: it does not change what runs.
#[derive(Serialize)]
struct CanonicalHook<'a> {
    format: u32,
    kind: &'static str,
    event: HookEvent,
    matcher: Option<&'a str>,
    command: &'a str,
    source: HookSource,
    /// The project's canonical working directory, its bytes in hex; null when global.
    project: Option<String>,
}

impl Hook {
    /// Whether the hook runs for `subject` (a tool's name, a subagent's profile).
    pub fn matches(&self, subject: &str) -> bool {
        self.glob.as_ref().is_none_or(|glob| glob.is_match(subject))
    }

    /// The SHA-256 digest (lowercase hex) of the canonical definition, as approvals list
    /// it; `cwd` is the canonical working directory a project hook belongs to.
    pub fn digest(&self, cwd: &Path) -> String {
        use std::os::unix::ffi::OsStrExt;
        let canonical = CanonicalHook {
            format: 1,
            kind: "hook",
            event: self.event,
            matcher: self.matcher.as_deref(),
            command: &self.command,
            source: self.source,
            project: (self.source == HookSource::Project).then(|| hex(cwd.as_os_str().as_bytes())),
        };
        // Every field is a string or a fixed name, so this cannot fail; if it did, the
        // digest would match no approval.
        match serde_json::to_vec(&canonical) {
            Ok(bytes) => hex(&Sha256::digest(&bytes)),
            Err(_) => "unapprovable".to_owned(),
        }
    }

    /// Where it is defined, for people: `file:line`.
    pub fn place(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

/// `[hooks]`, merged from both files: the global file's hooks, then the project's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookSettings {
    /// Every hook, in the order they run.
    pub hooks: Vec<Hook>,
}

impl HookSettings {
    /// The hooks that may run in `cwd` (the canonical working directory): the global
    /// ones and the project ones `approvals` lists; the others are returned apart, to
    /// be reported and never run.
    pub fn approved(&self, approvals: &McpApprovals, cwd: &Path) -> (Vec<Hook>, Vec<Hook>) {
        self.hooks.iter().cloned().partition(|hook| {
            hook.source == HookSource::Global || approvals.approves(&hook.digest(cwd))
        })
    }
}

/// The hook approvals file of a `MC_HOME`, in the MCP approvals' format.
pub fn hook_approvals_path(home: &Path) -> PathBuf {
    home.join(HOOK_APPROVALS_FILE)
}

/// The hook approvals file's name in `MC_HOME`.
pub const HOOK_APPROVALS_FILE: &str = "hook-approvals.json";

/// Reads the hook approvals; a missing file approves nothing.
pub fn load_hook_approvals(home: &Path) -> Result<McpApprovals, ConfigError> {
    McpApprovals::load_file(&hook_approvals_path(home))
}

/// One `[[hooks.<event>]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHook {
    matcher: Option<String>,
    command: String,
    timeout_secs: Option<u64>,
}

/// One file's `[hooks]` table, each definition with its place in the text.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHooks {
    #[serde(default)]
    session_start: Vec<toml::Spanned<RawHook>>,
    #[serde(default)]
    user_prompt_submit: Vec<toml::Spanned<RawHook>>,
    #[serde(default)]
    pre_tool_use: Vec<toml::Spanned<RawHook>>,
    #[serde(default)]
    post_tool_use: Vec<toml::Spanned<RawHook>>,
    #[serde(default)]
    approval_requested: Vec<toml::Spanned<RawHook>>,
    #[serde(default)]
    pre_compact: Vec<toml::Spanned<RawHook>>,
    #[serde(default)]
    subagent_stop: Vec<toml::Spanned<RawHook>>,
    #[serde(default)]
    turn_end: Vec<toml::Spanned<RawHook>>,
}

impl RawHooks {
    fn into_events(self) -> Vec<(HookEvent, Vec<toml::Spanned<RawHook>>)> {
        vec![
            (HookEvent::SessionStart, self.session_start),
            (HookEvent::UserPromptSubmit, self.user_prompt_submit),
            (HookEvent::PreToolUse, self.pre_tool_use),
            (HookEvent::PostToolUse, self.post_tool_use),
            (HookEvent::ApprovalRequested, self.approval_requested),
            (HookEvent::PreCompact, self.pre_compact),
            (HookEvent::SubagentStop, self.subagent_stop),
            (HookEvent::TurnEnd, self.turn_end),
        ]
    }
}

/// Only `[hooks]` of a settings file: the rest is checked by `settings.rs`.
#[derive(Debug, Default, Deserialize)]
struct HooksOnly {
    hooks: Option<RawHooks>,
}

/// Reads the `[hooks]` tables of the global and the project file (each file's text, none
/// when it does not exist, with its path).
pub(crate) fn merge_hooks(
    global: (Option<&str>, &Path),
    project: (Option<&str>, &Path),
) -> Result<HookSettings, ConfigError> {
    let mut merged = HookSettings::default();
    for ((text, file), source) in [(global, HookSource::Global), (project, HookSource::Project)] {
        let Some(text) = text else { continue };
        let raw: HooksOnly = toml::from_str(text).map_err(|e| toml_error(file, text, &e))?;
        let mut hooks: Vec<Hook> = Vec::new();
        for (event, definitions) in raw.hooks.unwrap_or_default().into_events() {
            for definition in definitions {
                let place = Location::of(text, definition.span().start);
                let hook = hook(event, source, file, place, definition.into_inner())?;
                hooks.push(hook);
            }
        }
        // The file's order, whatever the events.
        hooks.sort_by_key(|hook| hook.line);
        merged.hooks.extend(hooks);
    }
    if merged.hooks.len() > HOOKS {
        return Err(ConfigError::Invalid(format!(
            "more than {HOOKS} hooks are defined"
        )));
    }
    Ok(merged)
}

fn hook(
    event: HookEvent,
    source: HookSource,
    file: &Path,
    place: Location,
    raw: RawHook,
) -> Result<Hook, ConfigError> {
    let invalid = |why: String| {
        ConfigError::Invalid(format!(
            "{}:{}: hooks.{}: {why}",
            file.display(),
            place.line,
            event.name()
        ))
    };
    if raw.command.trim().is_empty() {
        return Err(invalid("command is empty".to_owned()));
    }
    let timeout_secs = raw.timeout_secs.unwrap_or(HOOK_TIMEOUT_SECS);
    if !(1..=HOOK_TIMEOUT_SECS_MAX).contains(&timeout_secs) {
        return Err(invalid(format!(
            "timeout_secs must be 1 to {HOOK_TIMEOUT_SECS_MAX}"
        )));
    }
    let glob = match &raw.matcher {
        None => None,
        Some(_) if !event.has_subject() => {
            return Err(invalid(
                "matcher applies only to pre_tool_use, post_tool_use, approval_requested \
                 and subagent_stop"
                    .to_owned(),
            ));
        }
        Some(matcher) => Some(
            GlobBuilder::new(matcher)
                .build()
                .map_err(|e| invalid(format!("matcher {matcher:?} is not a glob: {e}")))?
                .compile_matcher(),
        ),
    };
    Ok(Hook {
        event,
        matcher: raw.matcher,
        command: raw.command,
        timeout_secs,
        source,
        file: file.to_path_buf(),
        line: place.line,
        glob,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merge(global: &str, project: &str) -> Result<HookSettings, ConfigError> {
        merge_hooks(
            (Some(global), Path::new("/home/g.toml")),
            (Some(project), Path::new("/work/p.toml")),
        )
    }

    #[test]
    fn hooks_add_up_in_file_order_with_their_places() {
        let settings = merge(
            "[[hooks.post_tool_use]]\ncommand = \"fmt\"\nmatcher = \"edit\"\n\n\
             [[hooks.pre_tool_use]]\ncommand = \"check\"\ntimeout_secs = 5\n",
            "[[hooks.turn_end]]\ncommand = \"notify\"\n",
        )
        .unwrap();
        let hooks = &settings.hooks;
        assert_eq!(hooks.len(), 3);
        assert_eq!(hooks[0].event, HookEvent::PostToolUse);
        assert_eq!(hooks[0].place(), "/home/g.toml:1");
        assert!(hooks[0].matches("edit") && !hooks[0].matches("bash"));
        assert_eq!(hooks[0].timeout_secs, HOOK_TIMEOUT_SECS);
        assert_eq!(hooks[1].event, HookEvent::PreToolUse);
        assert_eq!(hooks[1].line, 5);
        assert_eq!(hooks[1].timeout_secs, 5);
        assert!(hooks[1].matches("anything"));
        assert_eq!(hooks[2].source, HookSource::Project);
    }

    #[test]
    fn broken_definitions_name_their_file_and_line() {
        for (text, expected) in [
            (
                "\n[[hooks.pre_tool_use]]\ncommand = \"\"\n",
                "/work/p.toml:2: hooks.pre_tool_use: command is empty",
            ),
            (
                "[[hooks.pre_tool_use]]\ncommand = \"x\"\ntimeout_secs = 0\n",
                "/work/p.toml:1: hooks.pre_tool_use: timeout_secs",
            ),
            (
                "[[hooks.turn_end]]\ncommand = \"x\"\nmatcher = \"a\"\n",
                "/work/p.toml:1: hooks.turn_end: matcher applies",
            ),
            (
                "[[hooks.pre_tool_use]]\ncommand = \"x\"\nmatcher = \"a[\"\n",
                "/work/p.toml:1: hooks.pre_tool_use: matcher \"a[\"",
            ),
            (
                "[[hooks.pre_tool_use]]\nmatcher = \"a\"\n",
                "/work/p.toml:1:1",
            ),
            (
                "[[hooks.pre_tool_use]]\ncommand = \"x\"\ncolour = 1\n",
                "/work/p.toml:3:1",
            ),
            (
                "[[hooks.before_anything]]\ncommand = \"x\"\n",
                "/work/p.toml:1",
            ),
        ] {
            let Err(ConfigError::Invalid(why)) = merge("", text) else {
                panic!("{text} was admitted");
            };
            assert!(why.starts_with(expected), "{text}: {why}");
        }
    }

    #[test]
    fn digests_bind_the_command_matcher_event_and_project() {
        let settings = merge(
            "",
            "[[hooks.pre_tool_use]]\ncommand = \"x\"\n[[hooks.pre_tool_use]]\ncommand = \"x\"\ntimeout_secs = 9\n\
             [[hooks.pre_tool_use]]\ncommand = \"y\"\n[[hooks.post_tool_use]]\ncommand = \"x\"\n",
        )
        .unwrap();
        let [a, same, edited, other_event] = &settings.hooks[..] else {
            panic!("four hooks");
        };
        let here = Path::new("/work/one");
        assert_eq!(a.digest(here), same.digest(here));
        assert_ne!(a.digest(here), edited.digest(here));
        assert_ne!(a.digest(here), other_event.digest(here));
        assert_ne!(a.digest(here), a.digest(Path::new("/work/two")));
        assert_eq!(a.digest(here).len(), 64);

        let mut approvals = McpApprovals {
            format: 1,
            approved: Vec::new(),
        };
        let (run, held) = settings.approved(&approvals, here);
        assert!(run.is_empty() && held.len() == 4);
        approvals.set(&a.digest(here), true);
        let (run, held) = settings.approved(&approvals, here);
        assert_eq!((run.len(), held.len()), (2, 2));
    }
}
