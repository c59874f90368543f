//! The environment the model is told of, within [`ENVIRONMENT_BYTES`] in all.
//!
//! What stays the same while the backend serves a session with one model goes in the
//! system prompt's `# Environment` block ([`stable`]): the working directory, the
//! system, the shell commands run in, the time zone, the sandbox as configured, the
//! model's context window. What changes during a session goes with each turn's prompt
//! ([`turn_note`], at most [`TURN_CONTEXT_BYTES`]), recorded with it so that later
//! requests replay the same bytes: the date, the git state and the approval mode.

use std::io::Read;
use std::path::Path;

use magi_config::{PermissionMode, SandboxMode, SandboxNetwork};
use magi_protocol::limits::{ENVIRONMENT_BYTES, TURN_CONTEXT_BYTES};
use magi_protocol::text::grouped;

use super::git::{GitState, state};
use crate::agent::Agent;

/// What opens a turn's context note, so the model knows it is no part of the
/// person's words.
pub(crate) const TURN_NOTE_HEADING: &str = "[Context of this turn, added by magi-code]";

/// Most bytes a path takes in the environment; a longer one is cut in its middle.
const PATH_BYTES: usize = 320;
/// Most bytes of the system's name (`/etc/os-release`'s `PRETTY_NAME`) kept.
const SYSTEM_NAME_BYTES: usize = 96;
/// Most bytes of `/etc/os-release` read.
const OS_RELEASE_BYTES: u64 = 4_096;

/// The system prompt's `# Environment` block of `agent` working in `cwd`: at most
/// [`ENVIRONMENT_BYTES`] less [`TURN_CONTEXT_BYTES`].
pub(crate) fn stable(agent: &Agent, cwd: &Path) -> String {
    let mut lines = vec![
        "# Environment".to_owned(),
        String::new(),
        format!("- Working directory: {}", path_words(cwd)),
        format!("- System: {}", system_words()),
        "- Shell: the `bash` tool runs commands with `bash -c`".to_owned(),
        format!("- Time zone: {}", time_zone()),
    ];
    lines.extend(sandbox_lines(magi_tools::sandbox::configured()));
    lines.push(match agent.context_window_tokens {
        Some(window) => format!("- Context window: {} tokens", grouped(window)),
        None => "- Context window: unknown".to_owned(),
    });
    within(lines.join("\n"), ENVIRONMENT_BYTES - TURN_CONTEXT_BYTES)
}

/// The context note of a turn of `agent` in `cwd`, which goes before its prompt: the
/// date, the git state (`git status` stopped once `cancelled`) and the session's
/// approval `mode`. At most [`TURN_CONTEXT_BYTES`].
pub(crate) fn turn_note(
    agent: &Agent,
    mode: PermissionMode,
    cwd: &Path,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let date = now.get(..10).unwrap_or(&now);
    let git = match state(cwd, cancelled, &agent.hidden_env) {
        GitState::None => "not a git repository".to_owned(),
        GitState::Repository { root, status } => {
            let root = path_words(&root);
            match status {
                Ok(status) => {
                    let branch = match &status.branch {
                        Some(branch) => format!("branch `{}`", cut(branch, 128)),
                        None => "a detached head".to_owned(),
                    };
                    let more = if status.more { "more than " } else { "" };
                    let files = if status.changed == 1 { "file" } else { "files" };
                    format!(
                        "repository at {root}, {branch}, {more}{} changed {files} \
                         (untracked included)",
                        status.changed
                    )
                }
                Err(why) => format!("repository at {root}; its state is unknown ({why})"),
            }
        }
    };
    let lines = [
        TURN_NOTE_HEADING.to_owned(),
        format!("- Date: {date} (UTC)"),
        format!("- Git: {git}"),
        format!("- Approval mode: {}", approval_mode(mode)),
    ];
    within(lines.join("\n"), TURN_CONTEXT_BYTES)
}

/// The approval mode in force, in words: the one place the model is told which calls
/// wait for the person.
pub(crate) fn approval_mode(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Plan => {
            "plan: change no file (the tools that change files are refused, commands run \
             confined read-only); investigate and propose a plan until the person switches \
             the mode"
        }
        PermissionMode::Ask => {
            "ask: calls that change files, run commands or reach the web wait for the \
             person's approval, unless a rule of theirs allows them"
        }
        PermissionMode::Auto => {
            "auto: file changes in the working directory and commands the sandbox confines \
             run; commands outside the sandbox, paths outside it, the web and MCP tools wait \
             for the person's approval"
        }
        PermissionMode::AllowAll => {
            "allow-all: calls run without asking, except those the person's rules still ask \
             about or deny"
        }
    }
}

/// What the model is told when the person switched the approval mode to `mode` while
/// its turn worked, before its next request.
pub(crate) fn mode_note(mode: PermissionMode) -> String {
    format!(
        "[The person changed the approval mode during this turn, added by magi-code]\n\
         - Approval mode: {}",
        approval_mode(mode)
    )
}

/// The sandbox lines: the mode with what commands may write, and their network.
fn sandbox_lines(settings: Option<magi_config::SandboxSettings>) -> Vec<String> {
    let Some(settings) = settings else {
        return vec!["- Sandbox: none configured for this process".to_owned()];
    };
    let writes = match settings.mode {
        SandboxMode::WorkspaceWrite => {
            let git = if settings.git_writable {
                ""
            } else {
                " (its `.git` read-only)"
            };
            let mut roots = String::new();
            for (index, root) in settings.writable_roots.iter().enumerate() {
                let next = format!(", {}", path_words(&root.0));
                if roots.len() + next.len() > 2 * PATH_BYTES {
                    roots.push_str(&format!(
                        " and {} more",
                        settings.writable_roots.len() - index
                    ));
                    break;
                }
                roots.push_str(&next);
            }
            format!(
                "workspace-write: commands may write the working directory{git}, the \
                 temporary directories{roots}"
            )
        }
        SandboxMode::ReadOnly => {
            "read-only: commands may write the temporary directories only".to_owned()
        }
        SandboxMode::Off => "off: commands are not confined".to_owned(),
    };
    let network = match settings.network {
        SandboxNetwork::None => "none (Unix sockets only)",
        SandboxNetwork::Loopback => {
            "a loopback of each command's own: servers it starts itself, nothing else"
        }
        SandboxNetwork::All => "any",
    };
    vec![
        format!("- Sandbox (as configured): {writes}"),
        format!("- Network for commands: {network}"),
    ]
}

/// The system: its kind and architecture, and its name where it tells one.
fn system_words() -> String {
    let kind = format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    let mut text = String::new();
    let read = std::fs::File::open("/etc/os-release")
        .and_then(|file| file.take(OS_RELEASE_BYTES).read_to_string(&mut text));
    let name = read.ok().and_then(|_| {
        text.lines().find_map(|line| {
            let value = line.strip_prefix("PRETTY_NAME=")?.trim().trim_matches('"');
            (!value.is_empty() && !magi_protocol::text::has_control(value))
                .then(|| cut(value, SYSTEM_NAME_BYTES))
        })
    });
    match name {
        Some(name) => format!("{kind} ({name})"),
        None => kind,
    }
}

/// The time zone: `TZ`, else the zone `/etc/localtime` links to, else unknown.
fn time_zone() -> String {
    if let Some(tz) = std::env::var("TZ").ok().filter(|tz| !tz.trim().is_empty()) {
        return cut(tz.trim().trim_start_matches(':'), 64);
    }
    std::fs::read_link("/etc/localtime")
        .ok()
        .and_then(|target| {
            let target = target.to_string_lossy().into_owned();
            let (_, zone) = target.split_once("zoneinfo/")?;
            Some(cut(zone, 64))
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A path as the environment shows it: whole, or cut in its middle past
/// [`PATH_BYTES`].
fn path_words(path: &Path) -> String {
    let text = path.display().to_string();
    if text.len() <= PATH_BYTES {
        return text;
    }
    let half = PATH_BYTES / 2;
    let head = &text[..text.floor_char_boundary(half)];
    let tail = &text[text.ceil_char_boundary(text.len() - half)..];
    format!("{head}…{tail}")
}

/// `text` within `max` bytes, cut at a character with `…`.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub('…'.len_utf8());
    format!("{}…", &text[..text.floor_char_boundary(keep)])
}

/// `text` within `max` bytes: whole lines while they fit (its parts are bounded
/// already, so this only guards the sum).
fn within(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    cut(&text, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_are_cut_in_the_middle_and_everything_stays_within_its_bound() {
        let long = Path::new("/a").join("b".repeat(1_000));
        let words = path_words(&long);
        assert!(
            words.len() <= PATH_BYTES + '…'.len_utf8(),
            "{}",
            words.len()
        );
        assert!(words.starts_with("/a/b") && words.contains('…'));
        let settings = magi_config::SandboxSettings {
            writable_roots: (0..50)
                .map(|n| magi_config::WritableRoot(Path::new("/").join(format!("{n}").repeat(100))))
                .collect(),
            ..magi_config::SandboxSettings::default()
        };
        let lines = sandbox_lines(Some(settings)).join("\n");
        assert!(lines.contains(" more"), "{lines}");
        assert!(
            lines.len() < ENVIRONMENT_BYTES - TURN_CONTEXT_BYTES,
            "{}",
            lines.len()
        );
        assert_eq!(within("x".repeat(5_000), 100).len(), 100);
    }

    #[test]
    fn the_approval_mode_names_the_mode() {
        for mode in PermissionMode::ALL {
            assert!(approval_mode(mode).starts_with(&format!("{}:", mode.as_str())));
            assert!(mode_note(mode).len() < TURN_CONTEXT_BYTES);
            assert!(approval_mode(mode).len() <= 200, "{mode:?}");
        }
    }
}
