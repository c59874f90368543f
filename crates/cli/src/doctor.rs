//! `magi-code doctor`: what this directory's configuration is made of and where each
//! part came from, then checks, each ok, warning or error with its fix. It starts a
//! backend the way any client does, through the client library, and reaches the
//! provider only with `--online`. Exit status 1 when a check is an error.
//!
//! `--json` prints one JSON object instead (`facts`, `checks`, `ok`), for scripts.

mod sign_ins;

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use magi_client::BackendCommand;
use magi_core::StartupRequest;
use magi_core::inspect::{Inspection, inspect, probe};
use serde_json::{Value, json};

/// How long the backend gets to exit after `shutdown`.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Warning,
    Error,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Error => "error",
        }
    }
}

/// One check: what was checked, how it came out, what was found and what to do.
struct Check {
    name: &'static str,
    status: Status,
    message: String,
    fix: Option<String>,
}

impl Check {
    fn new(name: &'static str, status: Status, message: impl Into<String>) -> Check {
        Check {
            name,
            status,
            message: message.into(),
            fix: None,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

/// Runs the checks and prints the report; exits 1 when something is broken.
pub fn run(online: bool, json_output: bool) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("magi-code doctor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let request = StartupRequest {
        cwd: std::path::PathBuf::from("."),
        env: magi_config::Env::from_process(),
    };
    let inspection = inspect(&request);
    let checks = runtime.block_on(checks(&request, &inspection, online));
    let broken = checks.iter().any(|c| c.status == Status::Error);
    let written = if json_output {
        write_json(&inspection, &checks, online)
    } else {
        write_text(&mut std::io::stdout().lock(), &inspection, &checks, online)
    };
    if let Err(e) = written {
        eprintln!("magi-code doctor: {e}");
        return ExitCode::FAILURE;
    }
    if broken {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

async fn checks(request: &StartupRequest, inspection: &Inspection, online: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    let settings_ok = match &inspection.settings {
        Ok(_) => {
            // Well-formed only: what the settings name (tools, profiles, servers) is
            // checked with the configuration below.
            let message = match inspection.files.iter().filter(|f| f.present).count() {
                0 => "no settings file present".to_owned(),
                read => format!("{read} settings file(s) read and well-formed"),
            };
            checks.push(Check::new("settings", Status::Ok, message));
            true
        }
        Err(why) => {
            checks.push(Check::new("settings", Status::Error, why.clone()).fix(
                "correct the place named (the settings are described in docs/configuration.md)",
            ));
            false
        }
    };
    // Everything startup checks locally, in its order: tools, instructions, skills,
    // profile, selection and credential, approvals.
    let selection_ok = settings_ok && {
        match magi_core::explain_configuration(request, &[]) {
            Some(problem) => {
                checks.push(Check::new("configuration", Status::Error, problem));
                false
            }
            None => {
                let (provider, model) = (
                    inspection
                        .provider
                        .as_ref()
                        .map(|p| p.definition.name.as_str()),
                    inspection.model.as_ref().map(|(m, _)| m.as_str()),
                );
                checks.push(Check::new(
                    "configuration",
                    Status::Ok,
                    format!(
                        "provider {:?} and model {:?} are selected and ready locally",
                        provider.unwrap_or_default(),
                        model.unwrap_or_default()
                    ),
                ));
                true
            }
        }
    };
    if let Ok(settings) = &inspection.settings {
        checks.push(sandbox_check(request, settings));
    }
    for server in &inspection.mcp {
        if server.enabled && !server.approved {
            checks.push(
                Check::new(
                    "mcp",
                    Status::Warning,
                    format!(
                        "MCP server {:?} is not approved and will not run",
                        server.name
                    ),
                )
                .fix(format!("magi-code mcp approve {}", server.name)),
            );
        }
    }
    checks.extend(sign_ins::checks(request, inspection, online && settings_ok).await);
    for hook in crate::hooks::unapproved() {
        checks.push(
            Check::new(
                "hooks",
                Status::Warning,
                format!(
                    "project hook {} ({} at {}) is not approved and will not run",
                    hook.number,
                    hook.hook.event.name(),
                    hook.hook.place()
                ),
            )
            .fix(format!("magi-code hooks approve {}", hook.number)),
        );
    }
    if let Ok(home) = &inspection.home {
        checks.extend(crash_checks(&home.join(magi_core::CRASH_REPORTS_DIR)));
    }
    checks.push(backend_check(settings_ok && selection_ok).await);
    if online && selection_ok {
        checks.push(provider_check(request, inspection).await);
    }
    checks
}

/// The sandbox mode commands run in with these settings on this kernel, for
/// Mission Control's `/status`: `workspace-write; network none`, or what stands in its
/// way. None when the settings are invalid.
pub(crate) fn sandbox_in_force(
    request: &StartupRequest,
    settings: &magi_config::Settings,
) -> Option<String> {
    let mut sandbox = settings.sandbox.clone();
    sandbox.apply_env(&request.env).ok()?;
    let simulated = request.env.get(magi_tools::sandbox::UNAVAILABLE_ENV) == Some("1");
    let program = std::path::Path::new("/proc/self/exe");
    match magi_tools::sandbox::inspect(&sandbox, simulated, program).1 {
        Ok(applied) | Err(applied) => Some(applied),
    }
}

/// The sandbox commands would run in: the mode in force with this kernel, what the
/// kernel offers, and how permission rules and the sandbox's roots differ.
fn sandbox_check(request: &StartupRequest, settings: &magi_config::Settings) -> Check {
    let mut sandbox = settings.sandbox.clone();
    if let Err(e) = sandbox.apply_env(&request.env) {
        return Check::new("sandbox", Status::Error, e.to_string());
    }
    let simulated = request.env.get(magi_tools::sandbox::UNAVAILABLE_ENV) == Some("1");
    let (support, in_force) =
        magi_tools::sandbox::inspect(&sandbox, simulated, std::path::Path::new("/proc/self/exe"));
    let roots = if sandbox.writable_roots.is_empty() {
        String::new()
    } else {
        let roots: Vec<String> = sandbox
            .writable_roots
            .iter()
            .map(|root| root.0.display().to_string())
            .collect();
        format!("; writable roots {}", roots.join(", "))
    };
    let facts = format!(
        "{}{roots}; {}; {}. An allow rule for a path outside the workspace lets the file \
         tools write there; commands only when it is also in [sandbox] writable_roots",
        support.describe(),
        magi_tools::sandbox::describe_git(&sandbox, &support),
        magi_tools::sandbox::describe_network(sandbox.network, &support)
    );
    match in_force {
        Ok(applied) => Check::new(
            "sandbox",
            Status::Ok,
            format!("commands run in {applied} ({facts})"),
        ),
        Err(why) => Check::new("sandbox", Status::Warning, format!("{why} ({facts})")).fix(
            "run on a kernel with Landlock, seccomp and user namespaces, or say what you \
             accept: [sandbox] mode = \"off\", required = true to refuse the commands it \
             cannot confine, git_writable = true for a .git commands may change, or \
             network = \"all\" for commands that may reach any host",
        ),
    }
}

/// The newest crash reports doctor names, each a check of its own.
const CRASHES_SHOWN: usize = 5;

/// The crash reports in `dir` (`$MC_HOME/logs`): the newest few, each a warning that
/// says what crashed, when and where, and the report to send; a line saying there are
/// none otherwise.
fn crash_checks(dir: &std::path::Path) -> Vec<Check> {
    let reports = match magi_crash::recent(dir) {
        Ok(reports) => reports,
        Err(e) => {
            return vec![Check::new(
                "crashes",
                Status::Warning,
                format!("the crash reports in {} cannot be read: {e}", dir.display()),
            )];
        }
    };
    if reports.is_empty() {
        return vec![Check::new("crashes", Status::Ok, "no crash reports")];
    }
    let mut checks: Vec<Check> = reports
        .iter()
        .take(CRASHES_SHOWN)
        .map(|report| {
            Check::new(
                "crashes",
                Status::Warning,
                format!(
                    "{} crashed at {}: {} at {}",
                    report.program, report.time, report.message, report.location
                ),
            )
            .fix(format!(
                "the report is {}: attach it to a bug report, then delete it",
                report.path.display()
            ))
        })
        .collect();
    if reports.len() > CRASHES_SHOWN {
        checks.push(Check::new(
            "crashes",
            Status::Warning,
            format!(
                "{} older crash reports in {}",
                reports.len() - CRASHES_SHOWN,
                dir.display()
            ),
        ));
    }
    checks
}

/// Starts a backend as every client does. When the configuration is already known to
/// be broken, the backend's code adds nothing the checks above did not say.
async fn backend_check(configuration_ok: bool) -> Check {
    match start_backend().await {
        Ok((Ok(capabilities), elapsed)) => Check::new(
            "backend",
            Status::Ok,
            format!(
                "started and initialized in {:.1} ms ({capabilities} capabilities)",
                elapsed.as_secs_f64() * 1e3
            ),
        ),
        Ok((Err(code), _)) if !configuration_ok => Check::new(
            "backend",
            Status::Error,
            format!("startup refused [{}]: see the checks above", code.as_str()),
        ),
        Ok((Err(code), _)) => Check::new(
            "backend",
            Status::Error,
            crate::explain::initialize_failed(code, &[]).to_string(),
        ),
        Err(e) => Check::new("backend", Status::Error, format!("{e:#}"))
            .fix("reinstall magi-code, or run it from a directory it may read"),
    }
}

/// Spawns, initializes and shuts down a backend: the capability count or the
/// refusal's code, and how long `initialize` took.
async fn start_backend() -> anyhow::Result<(Result<usize, magi_protocol::ErrorCode>, Duration)> {
    let exe = std::env::current_exe().context("cannot find the magi-code executable")?;
    let started = Instant::now();
    let mut backend = BackendCommand::new(exe).own_process_group().spawn()?;
    let initialized = backend.initialize(&["initialize", "shutdown"]).await?;
    let elapsed = started.elapsed();
    let _ = backend.shutdown().await;
    let _ = backend.wait_within(EXIT_WAIT).await;
    Ok((initialized.map(|result| result.capabilities.len()), elapsed))
}

/// Reaches the provider: its model list, or a minimal request.
async fn provider_check(request: &StartupRequest, inspection: &Inspection) -> Check {
    let (Some(provider), Some((model, _))) = (&inspection.provider, &inspection.model) else {
        return Check::new("provider", Status::Error, "no provider and model to reach");
    };
    let Ok(home) = &inspection.home else {
        return Check::new("provider", Status::Error, "MC_HOME cannot be used");
    };
    let probe = probe(provider, model, home, &request.env).await;
    match (&probe.listed, &probe.request) {
        (Ok(models), None) => Check::new(
            "provider",
            Status::Ok,
            format!(
                "the provider lists {} model(s), {model:?} among them",
                models.len()
            ),
        ),
        (_, Some(Err(why))) => Check::new("provider", Status::Error, why.clone()),
        (Ok(models), Some(Ok(()))) => Check::new(
            "provider",
            Status::Warning,
            format!(
                "model {model:?} answered, but it is not among the {} model(s) the provider \
                 lists",
                models.len()
            ),
        )
        .fix("check the model's name, or use one the provider lists"),
        (Err(why), Some(Ok(()))) => Check::new(
            "provider",
            Status::Ok,
            format!("model {model:?} answered (the model list is unavailable: {why})"),
        ),
        (Err(why), None) => Check::new("provider", Status::Error, why.clone()),
    }
}

/// A URL as it may be shown: no user information, query or fragment.
pub(crate) fn shown_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// What `magi-code doctor` (offline) prints for this directory, as text: Mission
/// Control's first-run screen shows it.
pub async fn report() -> String {
    let request = StartupRequest {
        cwd: std::path::PathBuf::from("."),
        env: magi_config::Env::from_process(),
    };
    let inspection = inspect(&request);
    let checks = checks(&request, &inspection, false).await;
    let mut text = Vec::new();
    match write_text(&mut text, &inspection, &checks, false) {
        Ok(()) => String::from_utf8_lossy(&text).into_owned(),
        Err(e) => format!("(the report could not be written: {e})"),
    }
}

/// The provider or model line when the settings could not be read.
const UNKNOWN_UNREAD: &str = "unknown: the settings could not be read (see checks)";

fn write_text(
    out: &mut impl Write,
    inspection: &Inspection,
    checks: &[Check],
    online: bool,
) -> std::io::Result<()> {
    writeln!(out, "magi-code doctor")?;
    match &inspection.home {
        Ok(home) => writeln!(
            out,
            "  MC_HOME      {} (from {})",
            home.display(),
            inspection.home_from
        )?,
        Err(why) => writeln!(out, "  MC_HOME      unusable: {why}")?,
    }
    for file in &inspection.files {
        writeln!(
            out,
            "  settings     {} ({}): {}",
            file.path.display(),
            file.scope,
            if file.present { "read" } else { "absent" }
        )?;
    }
    // Without the settings, which provider and model they would select is unknown.
    let unread = inspection.settings.is_err();
    match &inspection.provider {
        Some(provider) => {
            let definition = &provider.definition;
            writeln!(
                out,
                "  provider     {} (from {})",
                definition.name, provider.from
            )?;
            writeln!(
                out,
                "  base URL     {} (from {})",
                shown_url(&definition.base_url),
                provider.base_url_from
            )?;
            let credential = match (&provider.credential, provider.credential_present) {
                (None, _) => "none needed".to_owned(),
                (Some(source), true) => format!("{source}: present"),
                (Some(source), false) if provider.credential_required => {
                    format!("{source}: missing")
                }
                (Some(source), false) => format!("{source}: not set (optional)"),
            };
            writeln!(out, "  credential   {credential}")?;
        }
        None if unread => writeln!(out, "  provider     {UNKNOWN_UNREAD}")?,
        None => writeln!(out, "  provider     (none)")?,
    }
    match &inspection.model {
        Some((model, from)) => writeln!(out, "  model        {model} (from {from})")?,
        None if unread => writeln!(out, "  model        {UNKNOWN_UNREAD}")?,
        None => writeln!(out, "  model        (none)")?,
    }
    for server in &inspection.mcp {
        let state = match (server.enabled, server.approved) {
            (false, _) => "disabled",
            (true, true) => "approved",
            (true, false) => "needs approval",
        };
        writeln!(out, "  MCP server   {}: {state}", server.name)?;
    }
    writeln!(out)?;
    writeln!(out, "checks")?;
    for check in checks {
        writeln!(
            out,
            "  {:<8} {}: {}",
            check.status.as_str(),
            check.name,
            check.message
        )?;
        if let Some(fix) = &check.fix {
            writeln!(out, "           fix: {fix}")?;
        }
    }
    if !online {
        writeln!(
            out,
            "  (the provider was not contacted; `magi-code doctor --online` reaches it)"
        )?;
    }
    Ok(())
}

fn write_json(inspection: &Inspection, checks: &[Check], online: bool) -> std::io::Result<()> {
    let provider = inspection.provider.as_ref().map(|provider| {
        json!({
            "name": provider.definition.name,
            "from": provider.from,
            "base_url": shown_url(&provider.definition.base_url),
            "base_url_from": provider.base_url_from,
            "credential": provider.credential,
            "credential_required": provider.credential_required,
            "credential_present": provider.credential_present,
        })
    });
    let report = json!({
        "mc_home": match &inspection.home {
            Ok(home) => json!({ "path": home, "from": inspection.home_from }),
            Err(why) => json!({ "error": why, "from": inspection.home_from }),
        },
        "settings_files": inspection.files.iter().map(|f| json!({
            "scope": f.scope,
            "path": f.path,
            "present": f.present,
        })).collect::<Vec<Value>>(),
        "provider": provider,
        "model": inspection.model.as_ref().map(|(model, from)| json!({
            "name": model,
            "from": from,
        })),
        "mcp_servers": inspection.mcp.iter().map(|s| json!({
            "name": s.name,
            "enabled": s.enabled,
            "approved": s.approved,
        })).collect::<Vec<Value>>(),
        "online": online,
        "checks": checks.iter().map(|c| json!({
            "name": c.name,
            "status": c.status.as_str(),
            "message": c.message,
            "fix": c.fix,
        })).collect::<Vec<Value>>(),
        "ok": !checks.iter().any(|c| c.status == Status::Error),
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{report}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_credentials() {
        assert_eq!(
            shown_url("https://user:secret@api.example/v1?key=k"),
            "https://api.example/v1"
        );
        assert_eq!(
            shown_url("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
    }
}
