//! `magi-code exec "PROMPT"`: one headless turn in the current directory, through the
//! same backend and client library as every other client.
//!
//! The reply streams to stdout as it arrives, with one line per tool activity;
//! `--json` prints the protocol's event frames as JSON lines instead. Either way, what
//! went wrong goes to stderr (`explain`). The exit status follows the run: 0 completed,
//! 3 completed with a reply cut at the model's output limit, 1 failed, 130 cancelled
//! (Ctrl-C cancels the turn and still waits for its end).
//!
//! A tool call the permission policy would ask about is put to the person at the
//! terminal (on stderr, answered on stdin) when stdin is a terminal, and denied with a
//! message on stderr when it is not. `--allow-all` makes the backend it starts run
//! every call without asking, through `MAGI_ALLOW_ALL=1` in that child's environment.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow};
use magi_client::{Backend, BackendCommand, Incoming};
use magi_protocol::messages::{
    ActivityState, EmptyParams, Event, TurnCancelParams, TurnStartParams,
};
use magi_protocol::methods;
use magi_protocol::wire::EventFrame;

use crate::explain;
mod approval;

/// How long the backend gets to exit after `shutdown`.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Runs one turn and returns the exit status.
pub fn run(prompt: &str, json_output: bool, allow_all: bool) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::Error::new(e)),
    };
    match runtime.block_on(turn(prompt, json_output, allow_all)) {
        Ok(exit) => exit,
        Err(e) => fail(&e),
    }
}

fn fail(error: &anyhow::Error) -> ExitCode {
    eprintln!("magi-code exec: {error:#}");
    ExitCode::FAILURE
}

async fn turn(prompt: &str, json_output: bool, allow_all: bool) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the magi-code executable")?;
    let mut command = BackendCommand::new(exe);
    if allow_all {
        command = command.env(magi_core::ALLOW_ALL_ENV, "1");
    }
    let mut backend = command.spawn()?;
    backend
        .initialize(&[
            "session.create",
            "turn.start",
            "turn.cancel",
            "approval.answer",
            "shutdown",
            magi_protocol::names::APPROVAL_SCOPES,
        ])
        .await?
        .map_err(|code| explain::initialize_failed(code, &[]))?;
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await?
        .map_err(|code| anyhow!("session.create failed: {}", code.as_str()))?;
    let start = TurnStartParams {
        session_id: session.session_id.clone(),
        prompt: prompt.to_owned(),
    };
    let started = backend
        .call::<methods::TurnStart>(&start)
        .await?
        .map_err(|code| anyhow!(explain::turn_refused(code, prompt)))?;
    let outcome = follow(
        &mut backend,
        &session.session_id,
        &started.run_id,
        json_output,
    )
    .await?;
    let _ = backend.shutdown().await;
    let _ = backend.wait_within(EXIT_WAIT).await;
    Ok(outcome)
}

/// Prints the run's events until `run.finished`, cancelling on Ctrl-C; the exit status.
async fn follow(
    backend: &mut Backend,
    session_id: &str,
    run_id: &str,
    json_output: bool,
) -> anyhow::Result<ExitCode> {
    let mut printer = Printer::new();
    let mut report = explain::RunReport::default();
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    let mut cancelling = false;
    loop {
        let incoming = tokio::select! {
            incoming = backend.next_incoming() => incoming,
            _ = &mut interrupt, if !cancelling => {
                cancelling = true;
                let params = TurnCancelParams {
                    session_id: session_id.to_owned(),
                    run_id: run_id.to_owned(),
                };
                let _ = backend.send::<methods::TurnCancel>(&params).await?;
                continue;
            }
        };
        let Some(incoming) = incoming else {
            return Err(anyhow!("the backend ended before the run finished"));
        };
        let (seq, event) = match incoming {
            Incoming::Event { seq, event } => (seq, event),
            Incoming::Response(_) => continue,
            Incoming::Violation(v) => return Err(anyhow!("protocol violation: {v}")),
        };
        report.observe(&event);
        if json_output {
            let frame = EventFrame {
                protocol: Default::default(),
                version: Default::default(),
                kind: Default::default(),
                instance_id: backend.instance_id().unwrap_or_default(),
                seq,
                event: event.clone(),
            };
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", serde_json::to_string(&frame)?)?;
            out.flush()?;
        } else {
            printer.print(&event)?;
        }
        match event {
            Event::RunFinished(finished) => return Ok(report.exit_code(finished.outcome)),
            Event::ApprovalRequested(request) => {
                let params = approval::answer(&request, session_id, run_id).await;
                // A late answer is stale and changes nothing; the run goes on either way.
                let _ = backend.send::<methods::ApprovalAnswer>(&params).await?;
            }
            _ => {}
        }
    }
}

/// Human rendering: reply text as it streams, one line per activity.
struct Printer {
    /// Text already printed per message, from deltas.
    printed: HashMap<String, String>,
    /// Reconciliation parts collected per message.
    reconciled: HashMap<String, String>,
    at_line_start: bool,
}

impl Printer {
    fn new() -> Printer {
        Printer {
            printed: HashMap::new(),
            reconciled: HashMap::new(),
            at_line_start: true,
        }
    }

    fn print(&mut self, event: &Event) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        match event {
            Event::MessageDelta(delta) => {
                out.write_all(delta.text.as_bytes())?;
                self.printed
                    .entry(delta.message_id.clone())
                    .or_default()
                    .push_str(&delta.text);
                self.at_line_start = delta.text.ends_with('\n');
            }
            Event::MessageReconcile(part) => {
                let text = self.reconciled.entry(part.message_id.clone()).or_default();
                text.push_str(&part.text);
                if part.last_part {
                    let full = std::mem::take(text);
                    let printed = self.printed.remove(&part.message_id).unwrap_or_default();
                    // Deltas may have been dropped: print what the authoritative text
                    // adds, or all of it again when the two diverge.
                    match full.strip_prefix(printed.as_str()) {
                        Some(rest) => out.write_all(rest.as_bytes())?,
                        None => {
                            writeln!(out)?;
                            out.write_all(full.as_bytes())?;
                        }
                    }
                    if !full.ends_with('\n') {
                        writeln!(out)?;
                    }
                    self.at_line_start = true;
                }
            }
            Event::Activity(activity) => {
                if !self.at_line_start {
                    writeln!(out)?;
                }
                let mark = match activity.state {
                    ActivityState::Started => "·",
                    ActivityState::Completed => "✓",
                    ActivityState::Failed => "✗",
                };
                writeln!(out, "{mark} {}: {}", activity.name, activity.summary)?;
                self.at_line_start = true;
            }
            // Said on stderr by `explain::RunReport`, in every output mode.
            Event::Diagnostic(_)
            | Event::RunFinished(_)
            | Event::InputPersisted(_)
            | Event::ApprovalRequested(_)
            | Event::ToolCard(_)
            | Event::ClientToolCall(_)
            | Event::ClientToolCancel(_) => {}
        }
        out.flush()
    }
}
