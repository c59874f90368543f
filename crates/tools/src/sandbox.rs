//! The sandbox as the backend sees it: the `[sandbox]` settings this process runs
//! with, what the kernel can enforce (asked once, of a probe launcher: `probe`), and for each
//! command the policy the launcher applies and the words that say what was applied.
//! The launcher's half, which applies a policy, is `process::confine`; see
//! `docs/sandbox.md`.
//!
//! Like the launcher, the settings belong to the process: a backend serves one
//! workspace, and its startup [`configure`]s them once. Without that (a library user,
//! this crate's own tests) nothing is confined and nothing is said about it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, RwLock};

use magi_config::{SandboxMode, SandboxNetwork, SandboxSettings};

use crate::process::confine::Policy;
use crate::process::launcher;

mod git;
mod network;
mod probe;

use git::GitProtection;
pub use git::describe_git;
use network::LoopbackIsolation;
pub use network::describe_network;
use probe::support;
pub use probe::{Support, probe};

/// The variable that makes the kernel count as offering no sandbox, to try the
/// degraded path on a machine that has one (a test setting: it only ever weakens).
pub const UNAVAILABLE_ENV: &str = "MAGI_SANDBOX_UNAVAILABLE";

/// The variable that makes user namespaces count as unavailable, so that `.git` is
/// protected from the file tools only (a test setting, like [`UNAVAILABLE_ENV`]).
pub const NO_USERNS_ENV: &str = "MAGI_SANDBOX_NO_USERNS";

/// Directories every confined command may write: the system's temporary directories.
const TEMP_DIRS: [&str; 3] = ["/tmp", "/var/tmp", "/dev/shm"];

/// Device files a shell writes or opens for writing.
const DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// A command call's `sandbox` argument: only `"off"`, to run outside the sandbox, which
/// always asks for an approval saying so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CallSandbox {
    /// Run the command unconfined.
    Off,
}

/// The JSON Schema of a command call's `sandbox` argument.
pub(crate) fn call_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "string",
        "enum": ["off"],
        "description": "Only after the sandbox refused the command: \"off\" runs it outside \
                        the sandbox, which the user must approve."
    })
}

/// Whether a command call's arguments (JSON text) ask to run outside the sandbox.
pub fn asks_unconfined(arguments: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|value| value.get("sandbox").cloned())
        .is_some_and(|sandbox| sandbox == "off")
}

/// The settings this process runs with.
#[derive(Debug, Clone)]
struct Config {
    settings: SandboxSettings,
    /// [`UNAVAILABLE_ENV`] was set.
    simulate_unavailable: bool,
}

static CONFIG: RwLock<Option<Config>> = RwLock::new(None);
/// Whether the notice that the sandbox is not in force was given (once per process).
static NOTICE_GIVEN: AtomicBool = AtomicBool::new(false);

/// Sets the sandbox every later command of this process runs in. `simulate_unavailable`
/// makes the kernel count as offering none.
pub fn configure(settings: &SandboxSettings, simulate_unavailable: bool) {
    let config = Config {
        settings: settings.clone(),
        simulate_unavailable,
    };
    *CONFIG.write().unwrap_or_else(PoisonError::into_inner) = Some(config);
}

/// Prepares, in a thread of its own beside the model's first answer, what the first
/// command started in `cwd` would otherwise wait for: the kernel probe and the spawn
/// server for that command's policy. The server's process starts first and is told
/// its policy once the probe answered, so the two start-ups overlap rather than follow
/// each other. That command then waits, if at all, for this same probe and server
/// rather than starting its own. Once per process, after [`configure`] (the backend
/// calls it as its first turn starts); no server is kept when the sandbox is required
/// and cannot be had.
pub fn warm(cwd: &Path) {
    static WARMED: std::sync::Once = std::sync::Once::new();
    let Some(config) = config() else {
        return;
    };
    let cwd = cwd.to_owned();
    WARMED.call_once(move || {
        let _ = std::thread::Builder::new()
            .name("sandbox-warm".to_owned())
            .spawn(move || {
                magi_crash::contain(move || {
                    crate::process::start_early_server();
                    let support = if config.settings.mode == SandboxMode::Off {
                        Support::none(String::new())
                    } else {
                        support(&config)
                    };
                    if let Ok(decision) = decide_with(&config, &support, &cwd, false) {
                        crate::process::warm(decision.policy.as_ref());
                    }
                    // Taken by that server unless one served its policy already (a command
                    // came first) or there is none to serve (a required sandbox the kernel
                    // cannot enforce): then no command will need it.
                    crate::process::discard_early_server();
                })
            });
    });
}

fn config() -> Option<Config> {
    CONFIG
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// What doctor shows of the sandbox: what the kernel offers (asked of `program`
/// re-executed as a probe launcher, unless `simulate_unavailable`), the mode these
/// settings put in force with it, and whether that is all they ask for.
pub fn inspect(
    settings: &SandboxSettings,
    simulate_unavailable: bool,
    program: &Path,
) -> (Support, Result<String, String>) {
    let config = Config {
        settings: settings.clone(),
        simulate_unavailable,
    };
    let support = if simulate_unavailable {
        support(&config)
    } else {
        probe(program, settings.network)
    };
    let in_force = match decide_with(&config, &support, Path::new("."), false) {
        Ok(decision) => match decision.notice {
            None => Ok(decision.applied),
            Some(notice) => Err(format!("{}: {notice}", decision.applied)),
        },
        Err(why) => Err(why),
    };
    (support, in_force)
}

/// How one command runs: the launcher's policy (none: unconfined), what the card and
/// the model are told was applied, and the notice that the sandbox is not in force
/// when this is the first command to meet it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) policy: Option<Policy>,
    /// `workspace-write; network none`, `off`, `off (asked by the call)`, …
    pub(crate) applied: String,
    pub(crate) notice: Option<String>,
}

/// The launcher's policy for a command started in `cwd` (none: unconfined), with what
/// the sandbox applied recorded in `facts`; unless `unconfined` (the call asked to run
/// outside the sandbox, and its approval said so). The error is the call's refusal:
/// the sandbox is required and cannot be had.
pub(crate) fn prepare(
    cwd: &Path,
    unconfined: bool,
    read_only: bool,
    facts: &mut crate::facts::CommandFacts,
) -> Result<Option<Policy>, crate::ToolOutput> {
    match decide(cwd, unconfined, read_only) {
        None => Ok(None),
        Some(Err(why)) => Err(crate::ToolOutput::failed("sandbox unavailable", why)),
        Some(Ok(decision)) => {
            facts.sandbox = Some(decision.applied);
            facts.sandbox_notice = decision.notice;
            Ok(decision.policy)
        }
    }
}

/// How a command started in `cwd` runs; `unconfined` when the call asked to run outside
/// the sandbox (its approval said so); `read_only` when the session's approval mode
/// (`plan`) wants it confined read-only whatever the settings' mode. None when this
/// process has no sandbox settings. An error refuses the command: the sandbox is
/// required and cannot be had.
fn decide(cwd: &Path, unconfined: bool, read_only: bool) -> Option<Result<Decision, String>> {
    let mut config = config()?;
    if read_only && config.settings.mode == SandboxMode::WorkspaceWrite {
        config.settings.mode = SandboxMode::ReadOnly;
    }
    if config.settings.mode == SandboxMode::Off || unconfined {
        return Some(decide_with(
            &config,
            &Support::none(String::new()),
            cwd,
            unconfined,
        ));
    }
    let support = support(&config);
    let mut decision = decide_with(&config, &support, cwd, false);
    if let Ok(decision) = &mut decision
        && decision.notice.is_some()
        && NOTICE_GIVEN.swap(true, Ordering::SeqCst)
    {
        decision.notice = None;
    }
    Some(decision)
}

fn decide_with(
    config: &Config,
    support: &Support,
    cwd: &Path,
    unconfined: bool,
) -> Result<Decision, String> {
    let settings = &config.settings;
    if unconfined {
        return Ok(unconfined_decision("off (asked by the call)"));
    }
    if settings.mode == SandboxMode::Off {
        return Ok(unconfined_decision("off"));
    }
    let needs_seccomp = settings.network != SandboxNetwork::All;
    let missing = match (support.landlock_abi, &support.seccomp) {
        (None, Err(why)) if !why.is_empty() => Some(format!("Landlock is unavailable ({why})")),
        (None, _) => Some("this kernel offers no Landlock".to_owned()),
        (Some(_), Err(why)) if needs_seccomp => Some(format!("seccomp is unavailable ({why})")),
        _ => None,
    };
    let mode = settings.mode.as_str();
    let network = settings.network.as_str();
    let git = GitProtection::of(settings, support, cwd);
    let Some(missing) = missing else {
        let isolation = LoopbackIsolation::of(settings.network, support);
        return Ok(isolation.added_to(git.added_to(Decision {
            policy: Some(policy(settings, cwd)),
            applied: format!("{mode}; network {network}"),
            notice: None,
        })));
    };
    if settings.required {
        return Err(format!(
            "The sandbox is required ([sandbox] required = true) but {missing}; the command \
             was not run."
        ));
    }
    if support.landlock_abi.is_some() {
        // Files confined, sockets not.
        return Ok(git.added_to(Decision {
            policy: Some(Policy {
                network: SandboxNetwork::All,
                ..policy(settings, cwd)
            }),
            applied: format!("{mode}; network not confined"),
            notice: Some(format!(
                "The sandbox confines files only: {missing}, so commands may reach the \
                 network. Set [sandbox] required = true to refuse commands instead."
            )),
        }));
    }
    Ok(Decision {
        policy: None,
        applied: "off (unavailable)".to_owned(),
        notice: Some(format!(
            "The sandbox ({mode}) is not in force: {missing}, so commands run unconfined. \
             Set [sandbox] required = true to refuse commands instead."
        )),
    })
}

fn unconfined_decision(applied: &str) -> Decision {
    Decision {
        policy: None,
        applied: applied.to_owned(),
        notice: None,
    }
}

/// The launcher's policy for a command started in `cwd`.
fn policy(settings: &SandboxSettings, cwd: &Path) -> Policy {
    Policy {
        writable: writable_roots(settings, cwd),
        read_only: Vec::new(),
        network: settings.network,
        own_network: false,
        required: settings.required,
    }
}

/// Where a confined command may write under `settings`, started in `cwd`.
fn writable_roots(settings: &SandboxSettings, cwd: &Path) -> Vec<PathBuf> {
    let mut roots = temporary_roots();
    roots.extend(DEVICES.iter().map(PathBuf::from));
    if settings.mode == SandboxMode::WorkspaceWrite {
        roots.push(cwd.to_owned());
        roots.extend(settings.writable_roots.iter().map(|root| root.0.clone()));
    }
    // A relative `TMPDIR` names no fixed place (and could read as a launcher option).
    roots.retain(|root| root.is_absolute());
    roots.sort();
    roots.dedup();
    roots
}

/// The temporary directories every confined command may write, whatever the mode:
/// the system's and this process's `TMPDIR`. A place outside all of them (and the
/// workspace, and `writable_roots`) is one no confined command may write.
pub fn temporary_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = TEMP_DIRS.iter().map(PathBuf::from).collect();
    roots.push(std::env::temp_dir());
    roots
}

/// The program and leading arguments that start `program` (an MCP server) in the
/// sandbox, as for a command started in `cwd`: through the launcher with its policy, or
/// unconfined as [`launcher::command_line`] when the sandbox is off or not in force and
/// not required. An error says why it may not start.
pub fn confined_command_line(
    program: &std::ffi::OsStr,
    cwd: &Path,
) -> Result<(std::ffi::OsString, Vec<std::ffi::OsString>), String> {
    let policy = match decide(cwd, false, false) {
        Some(Ok(decision)) => decision.policy,
        Some(Err(why)) => return Err(why),
        None => None,
    };
    Ok(policy
        .and_then(|policy| launcher::confined_command_line(program, &policy))
        .unwrap_or_else(|| launcher::command_line(program)))
}

/// Whether a command started now in `cwd` would run confined (its files at least), for
/// the approval modes that let confined commands run without asking. The error says
/// why not, in words an approval can show: no sandbox settings, the mode `off`, or a
/// kernel that offers none (the cards' `off (unavailable)`).
pub fn confines_commands(cwd: &Path) -> Result<(), String> {
    let Some(config) = config() else {
        return Err("no sandbox is configured for this process".to_owned());
    };
    if config.settings.mode == SandboxMode::Off {
        return Err("the sandbox is off ([sandbox] mode = \"off\")".to_owned());
    }
    let support = support(&config);
    match decide_with(&config, &support, cwd, false) {
        Ok(decision) if decision.policy.is_some() => Ok(()),
        Ok(_) => Err(match &support.seccomp {
            Err(why) if !why.is_empty() => format!("the sandbox is off (unavailable): {why}"),
            _ => "the sandbox is off (unavailable): this kernel offers no Landlock".to_owned(),
        }),
        Err(why) => Err(why),
    }
}

/// The sandbox settings this process's commands run in (what the model is told of
/// them); none before [`configure`].
pub fn configured() -> Option<SandboxSettings> {
    config().map(|config| config.settings)
}

/// The mode this process's commands run in; none without sandbox settings.
pub fn configured_mode() -> Option<SandboxMode> {
    config().map(|config| config.settings.mode)
}

/// Whether the agent's file tools (`write`, `edit`, `hash_edit`) may change `path`
/// (absolute, symbolic links of its existing ancestors resolved) in workspace `cwd`: the roots a command may write, and
/// `.git` only when `git_writable`. Always when this process has no sandbox settings
/// or its mode is `off`. The error says why not and what to do.
pub fn check_file_write(path: &Path, cwd: &Path) -> Result<(), String> {
    let Some(config) = config() else {
        return Ok(());
    };
    let settings = &config.settings;
    if settings.mode == SandboxMode::Off {
        return Ok(());
    }
    let git = cwd.join(".git");
    if settings.mode == SandboxMode::WorkspaceWrite
        && !settings.git_writable
        && path.starts_with(&git)
    {
        return Err(format!(
            "{} is inside the workspace's .git, which the sandbox keeps read-only; set \
             [sandbox] git_writable = true to let the file tools change it.",
            path.display()
        ));
    }
    let roots = writable_roots(settings, cwd);
    if roots.iter().any(|root| path.starts_with(root)) {
        return Ok(());
    }
    Err(format!(
        "{} is outside the sandbox's writable roots ({}): the sandbox mode is {}. Add its \
         directory to [sandbox] writable_roots, or choose another mode, to write there.",
        path.display(),
        match settings.mode {
            SandboxMode::ReadOnly => "the temporary directories".to_owned(),
            _ => "the workspace, the temporary directories and writable_roots".to_owned(),
        },
        settings.mode.as_str()
    ))
}

/// What the model is told after a confined command failed in a way the sandbox causes
/// (a write refused, a socket refused), read from its stderr; none otherwise.
pub(crate) fn denial_hint(applied: &str, stderr: &str) -> Option<String> {
    const SIGNS: [&str; 4] = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "EACCES",
    ];
    /// What a command in a network of its own meets when it reaches out.
    const OWN_NETWORK_SIGNS: [&str; 5] = [
        "Network is unreachable",
        "Connection refused",
        "Name or service not known",
        "Temporary failure in name resolution",
        "Could not resolve host",
    ];
    let own_network = applied.ends_with("; network loopback")
        && OWN_NETWORK_SIGNS.iter().any(|sign| stderr.contains(sign));
    if applied.starts_with("off")
        || !(own_network || SIGNS.iter().any(|sign| stderr.contains(sign)))
    {
        return None;
    }
    let git = if stderr.contains(".git") && stderr.contains("Read-only file system") {
        " It keeps the workspace's .git read-only unless [sandbox] git_writable = true."
    } else {
        ""
    };
    let network = if own_network {
        " Under network loopback a command has a network of its own: it reaches the \
         servers it starts itself, not the machine's nor any other host."
    } else {
        ""
    };
    Some(format!(
        "[the sandbox ({applied}) may have refused this: it lets commands write only their \
         writable roots and open only the sockets its network setting allows.{git}{network} If the \
         command needs more, call it again with \"sandbox\": \"off\"; that asks the user \
         to approve running it outside the sandbox]"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: SandboxMode, network: SandboxNetwork, required: bool) -> Config {
        Config {
            settings: SandboxSettings {
                mode,
                network,
                required,
                ..SandboxSettings::default()
            },
            simulate_unavailable: false,
        }
    }

    fn full() -> Support {
        probe::parse_probe("landlock 7 full seccomp yes\nuserns yes")
    }

    #[test]
    fn decisions_say_what_is_applied() {
        let cwd = Path::new("/work/project");
        let workspace = config(SandboxMode::WorkspaceWrite, SandboxNetwork::None, false);
        let decision = decide_with(&workspace, &full(), cwd, false).unwrap();
        assert_eq!(decision.applied, "workspace-write; network none");
        let policy = decision.policy.unwrap();
        assert!(policy.writable.contains(&cwd.to_owned()));
        assert!(policy.writable.contains(&PathBuf::from("/tmp")));

        let read_only = config(SandboxMode::ReadOnly, SandboxNetwork::Loopback, false);
        let decision = decide_with(&read_only, &full(), cwd, false).unwrap();
        assert!(!decision.policy.unwrap().writable.contains(&cwd.to_owned()));

        let asked = decide_with(&workspace, &full(), cwd, true).unwrap();
        assert_eq!(
            (asked.policy, asked.applied.as_str()),
            (None, "off (asked by the call)")
        );

        let missing = Support::none("gone".to_owned());
        let degraded = decide_with(&workspace, &missing, cwd, false).unwrap();
        assert_eq!(degraded.applied, "off (unavailable)");
        assert!(
            degraded
                .notice
                .unwrap()
                .contains("Landlock is unavailable (gone)")
        );
        let required = config(SandboxMode::WorkspaceWrite, SandboxNetwork::None, true);
        assert!(decide_with(&required, &missing, cwd, false).is_err());

        let no_seccomp = Support {
            seccomp: Err("filtered".to_owned()),
            ..full()
        };
        let files_only = decide_with(&workspace, &no_seccomp, cwd, false).unwrap();
        assert_eq!(files_only.applied, "workspace-write; network not confined");
        assert_eq!(files_only.policy.unwrap().network, SandboxNetwork::All);
    }

    #[test]
    fn git_is_read_only_for_commands_unless_writable_or_unavailable() {
        let workspace = tempfile::tempdir().unwrap();
        let cwd = workspace.path().canonicalize().unwrap();
        let git = cwd.join(".git");
        std::fs::create_dir(&git).unwrap();
        let mut settings = config(SandboxMode::WorkspaceWrite, SandboxNetwork::None, false);
        let decision = decide_with(&settings, &full(), &cwd, false).unwrap();
        assert_eq!(decision.policy.unwrap().read_only, [git]);
        assert_eq!(decision.applied, "workspace-write; network none");

        let no_userns = Support {
            userns: Err("unshare: EPERM".to_owned()),
            ..full()
        };
        let decision = decide_with(&settings, &no_userns, &cwd, false).unwrap();
        assert!(decision.policy.unwrap().read_only.is_empty());
        assert_eq!(
            decision.applied,
            "workspace-write; network none; .git not protected"
        );
        assert!(
            decision
                .notice
                .unwrap()
                .ends_with("unshare: EPERM. .git is protected from the file tools only.")
        );

        settings.settings.git_writable = true;
        let decision = decide_with(&settings, &no_userns, &cwd, false).unwrap();
        assert!(decision.policy.unwrap().read_only.is_empty());
        assert_eq!(decision.notice, None);
    }

    #[test]
    fn loopback_is_a_network_of_the_commands_own_unless_user_namespaces_are_missing() {
        let cwd = Path::new("/work/project");
        let loopback = config(SandboxMode::ReadOnly, SandboxNetwork::Loopback, false);
        let decision = decide_with(&loopback, &full(), cwd, false).unwrap();
        assert_eq!(decision.applied, "read-only; network loopback");
        assert!(decision.policy.unwrap().own_network);
        assert_eq!(decision.notice, None);

        let no_userns = Support {
            userns: Err("unshare: EPERM".to_owned()),
            ..full()
        };
        let decision = decide_with(&loopback, &no_userns, cwd, false).unwrap();
        assert_eq!(
            decision.applied,
            "read-only; network loopback; destinations not limited"
        );
        let policy = decision.policy.unwrap();
        assert!(!policy.own_network);
        assert_eq!(policy.network, SandboxNetwork::Loopback);
        assert!(decision.notice.unwrap().contains(
            "unshare: EPERM. Under network = \"loopback\" they may open IP sockets to any \
             destination."
        ));

        let none = config(SandboxMode::ReadOnly, SandboxNetwork::None, false);
        let decision = decide_with(&none, &no_userns, cwd, false).unwrap();
        assert!(!decision.policy.unwrap().own_network);
        assert_eq!(decision.notice, None);
    }

    #[test]
    fn denials_are_recognised_only_when_confined() {
        let stderr = "bash: /etc/x: Permission denied\n";
        assert!(denial_hint("workspace-write; network none", stderr).is_some());
        assert!(denial_hint("off", stderr).is_none());
        assert!(denial_hint("read-only; network none", "no such file\n").is_none());
        let refused = "bash: connect: Connection refused\n";
        assert!(
            denial_hint("read-only; network loopback", refused)
                .unwrap()
                .contains("a network of its own")
        );
        assert!(denial_hint("read-only; network none", refused).is_none());
        assert!(
            denial_hint(
                "read-only; network loopback; destinations not limited",
                refused
            )
            .is_none()
        );
    }
}
