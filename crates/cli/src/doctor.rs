//! `magi-code doctor`: starts a backend the way any client does, through the client
//! library, and shows what it answers.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use magi_client::BackendCommand;
use magi_protocol::messages::StatusResult;

/// How long the backend gets to exit after `shutdown`.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Runs the check and prints a report; exits 1 when the backend is not ready.
pub fn run() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return report_error(&anyhow::Error::new(e)),
    };
    match runtime.block_on(check()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => report_error(&e),
    }
}

fn report_error(error: &anyhow::Error) -> ExitCode {
    eprintln!("magi-code doctor: {error:#}");
    ExitCode::FAILURE
}

async fn check() -> anyhow::Result<bool> {
    let exe = std::env::current_exe().context("cannot find the magi-code executable")?;
    let started = Instant::now();
    let mut backend = BackendCommand::new(exe).spawn()?;
    let initialized = backend
        .initialize(&["initialize", "status", "shutdown"])
        .await?;
    let init_time = started.elapsed();
    let status = backend
        .status()
        .await?
        .map_err(|code| anyhow::anyhow!("status failed: {}", code.as_str()))?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "magi-code backend {}",
        backend.instance_id().unwrap_or_default()
    )?;
    writeln!(
        out,
        "  initialize answered in {:.1} ms",
        init_time.as_secs_f64() * 1e3
    )?;
    let ready = match &initialized {
        Ok(result) => {
            writeln!(
                out,
                "  capabilities: {} ({} bounds in limits)",
                result.capabilities.join(", "),
                serde_json::to_value(&result.limits)?
                    .as_object()
                    .map_or(0, |m| m.len())
            )?;
            true
        }
        Err(code) => {
            writeln!(out, "  initialization failed: {}", code.as_str())?;
            false
        }
    };
    write_status(&mut out, &status)?;
    write_mcp(&mut out)?;
    if !ready {
        writeln!(
            out,
            "  hint: choose a provider and model, e.g. MAGI_PROVIDER=openai-chat MAGI_MODEL=<model> \
             for an OpenAI-compatible local server, or set them in $MC_HOME/settings.toml"
        )?;
    }
    let stopped = backend.shutdown().await?;
    let exit = backend.wait_within(EXIT_WAIT).await;
    writeln!(
        out,
        "  shutdown: {}; exit status: {}",
        if stopped.is_ok() {
            "stopping"
        } else {
            "refused"
        },
        exit.and_then(|s| s.code())
            .map_or("unknown".to_owned(), |c| c.to_string())
    )?;
    Ok(ready)
}

/// The MCP servers defined here, read the way the backend reads them.
fn write_mcp(out: &mut impl Write) -> std::io::Result<()> {
    let request = magi_core::StartupRequest {
        cwd: std::path::PathBuf::from("."),
        env: magi_config::Env::from_process(),
    };
    let Ok(review) = magi_core::mcp::McpReview::load(&request) else {
        return Ok(());
    };
    let count = |approved: bool| {
        review
            .servers
            .iter()
            .filter(|s| s.server.enabled && s.approved == approved)
            .count()
    };
    if review.servers.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  MCP servers: {} approved and enabled, {} needing approval (magi-code mcp list)",
        count(true),
        count(false)
    )
}

fn write_status(out: &mut impl Write, status: &StatusResult) -> std::io::Result<()> {
    let readiness = serde_json::to_value(status.readiness).unwrap_or_default();
    let state = serde_json::to_value(status.state).unwrap_or_default();
    writeln!(
        out,
        "  state: {}, readiness: {}",
        state.as_str().unwrap_or("?"),
        readiness.as_str().unwrap_or("?")
    )?;
    writeln!(
        out,
        "  provider: {}, model: {}",
        status.provider.as_deref().unwrap_or("(none)"),
        status.model.as_deref().unwrap_or("(none)")
    )?;
    writeln!(
        out,
        "  context: {}",
        status.context_id.as_deref().unwrap_or("(none)")
    )
}
