//! A `bash` call run in the client's terminal (`client.terminals` with
//! `[acp] client_terminals` on): announced with `client.terminal.run`, answered by the
//! client's one `client.terminal.result`, withdrawn with `client.terminal.cancel` when
//! the run is cancelled or no answer comes within the command's timeout and a grace.
//!
//! The command never runs here: our capture bounds, our process-group kill and our
//! sandbox do not hold, and the call's facts say so (the sandbox row and its notice),
//! leaving the card's fixed Bash rows as they are.

use std::time::Duration;

use magi_protocol::limits::{
    BASH_TOOL_MAX_TIMEOUT_MS, BASH_TOOL_TIMEOUT_MS, CLIENT_TERMINAL_ANSWER_GRACE_MS,
    CLIENT_TERMINAL_OUTPUT_BYTES,
};
use magi_protocol::messages::{
    ClientTerminalCancel, ClientTerminalOutcome, ClientTerminalRun, ClientToolCancelReason, Event,
};
use magi_tools::facts::{CommandFacts, FACT_STRING_BYTES, cut};
use magi_tools::{Facts, ToolOutput, ToolReport, process_diagnostics};

use super::{Call, CallService};
use crate::client_terminals::TerminalAnswer;

/// The sandbox fact of a command the client ran.
pub(crate) const TERMINAL_SANDBOX: &str = "none (the client's terminal)";
/// The notice every such command's card carries.
pub(crate) const TERMINAL_NOTICE: &str = "Ran in the client's terminal: not confined by \
     magi-code's sandbox, not killed with its process group by magi-code (the client is \
     asked to kill it on timeout or cancel), its output bounded by the client.";

/// What a `bash` call asks for, read as `bash` reads it.
struct Asked {
    command: String,
    timeout_argument: Option<u64>,
}

/// The call's arguments: `command` and `timeout_ms` are used; `background_after_ms` and
/// `sandbox` are accepted and have no effect in a client's terminal.
fn asked(arguments: &str) -> Result<Asked, String> {
    let value: serde_json::Value =
        serde_json::from_str(arguments).map_err(|e| format!("not JSON: {e}"))?;
    let object = value.as_object().ok_or("not a JSON object")?;
    if let Some(unknown) = object.keys().find(|k| {
        !matches!(
            k.as_str(),
            "command" | "timeout_ms" | "background_after_ms" | "sandbox"
        )
    }) {
        return Err(format!("unknown field `{unknown}`"));
    }
    let command = object
        .get("command")
        .and_then(|c| c.as_str())
        .ok_or("`command` must be a string")?
        .to_owned();
    let timeout_argument = match object.get("timeout_ms") {
        None => None,
        Some(t) => match t.as_u64() {
            Some(ms) if (1..=BASH_TOOL_MAX_TIMEOUT_MS).contains(&ms) => Some(ms),
            _ => {
                return Err(format!(
                    "timeout_ms must be from 1 to {BASH_TOOL_MAX_TIMEOUT_MS}"
                ));
            }
        },
    };
    Ok(Asked {
        command,
        timeout_argument,
    })
}

impl CallService<'_, '_> {
    /// Hands a claimed `bash` call to the client's terminal and waits for its answer,
    /// the run's cancellation or the timeout and its grace; a withdrawn call is
    /// announced.
    pub(super) async fn run_in_terminal(&mut self, call: &Call, activity_id: &str) -> ToolReport {
        let asked = match asked(&call.arguments) {
            Ok(asked) => asked,
            Err(why) => {
                return ToolReport::from(failed(
                    "invalid arguments",
                    format!(
                        "Expected {{\"command\": string, \"timeout_ms\"?: integer, \
                         \"background_after_ms\"?: integer, \"sandbox\"?: \"off\"}}: {why}."
                    ),
                ));
            }
        };
        let timeout_ms = asked.timeout_argument.unwrap_or(BASH_TOOL_TIMEOUT_MS);
        let cwd = self.workspace.cwd().display().to_string();
        let mut facts = CommandFacts {
            command: cut(&asked.command, FACT_STRING_BYTES),
            working_directory: cut(&cwd, FACT_STRING_BYTES),
            timeout_ms: asked.timeout_argument,
            effective_timeout_ms: Some(timeout_ms),
            sandbox: Some(TERMINAL_SANDBOX.to_owned()),
            sandbox_notice: Some(TERMINAL_NOTICE.to_owned()),
            ..CommandFacts::default()
        };
        // Opened before it is announced, so an answer racing the event is not lost.
        let answer = self.gates.terminals.open(&call.call_id);
        let event = Event::ClientTerminalRun(Box::new(ClientTerminalRun {
            session_id: self.output.session_id().to_owned(),
            run_id: self.output.run_id().to_owned(),
            call_id: call.call_id.clone(),
            activity_id: activity_id.to_owned(),
            command: asked.command.clone(),
            cwd,
            timeout_ms,
            output_bytes: CLIENT_TERMINAL_OUTPUT_BYTES as u64,
        }));
        self.output.critical(event).await;
        let wait = Duration::from_millis(timeout_ms + CLIENT_TERMINAL_ANSWER_GRACE_MS);
        let withdrawn = tokio::select! {
            answered = answer => match answered {
                Ok(answer) => return answered_report(&answer, timeout_ms, facts),
                // The gate went away: the run is ending.
                Err(_) => ClientToolCancelReason::Cancelled,
            },
            () = self.output.cancel.cancelled() => ClientToolCancelReason::Cancelled,
            () = tokio::time::sleep(wait) => ClientToolCancelReason::TimedOut,
        };
        self.gates.terminals.close(&call.call_id);
        let event = Event::ClientTerminalCancel(ClientTerminalCancel {
            session_id: self.output.session_id().to_owned(),
            run_id: self.output.run_id().to_owned(),
            call_id: call.call_id.clone(),
            reason: withdrawn,
        });
        self.output.critical(event).await;
        match withdrawn {
            ClientToolCancelReason::Cancelled => ToolReport {
                cancelled: true,
                ..ToolReport::with_facts(
                    failed(
                        "cancelled",
                        "[cancelled; the client was asked to kill the command in its terminal]",
                    ),
                    Facts::Command(Box::new(facts)),
                )
            },
            ClientToolCancelReason::TimedOut => {
                facts.timed_out = Some(true);
                ToolReport::with_facts(
                    failed(
                        "no answer in time",
                        format!(
                            "[the client's terminal did not answer within {} ms; the call \
                             was withdrawn and the client asked to kill the command]",
                            timeout_ms + CLIENT_TERMINAL_ANSWER_GRACE_MS
                        ),
                    ),
                    Facts::Command(Box::new(facts)),
                )
            }
        }
    }
}

/// A failed call's output.
fn failed(summary: &str, content: impl Into<String>) -> ToolOutput {
    ToolOutput {
        content: content.into(),
        summary: summary.to_owned(),
        is_error: true,
    }
}

/// What the model is given of the client's answer, and the call's facts.
fn answered_report(
    answer: &TerminalAnswer,
    timeout_ms: u64,
    mut facts: CommandFacts,
) -> ToolReport {
    let (summary, status, is_error) = match answer.outcome {
        ClientTerminalOutcome::Failed => {
            return ToolReport::with_facts(
                failed(
                    "the client's terminal failed",
                    format!(
                        "The client's terminal could not run the command: {}",
                        answer.output
                    ),
                ),
                Facts::Command(Box::new(facts)),
            );
        }
        ClientTerminalOutcome::TimedOut => {
            facts.timed_out = Some(true);
            (
                format!("timed out after {timeout_ms} ms"),
                format!("timed out after {timeout_ms} ms; the client killed the command"),
                true,
            )
        }
        ClientTerminalOutcome::Exited => {
            facts.timed_out = Some(false);
            match (answer.exit_code, &answer.signal) {
                (Some(code), _) => (
                    format!("exit {code}"),
                    format!("exit code {code}"),
                    code != 0,
                ),
                (None, Some(signal)) => (
                    format!("killed by signal {signal}"),
                    format!("killed by signal {signal}"),
                    true,
                ),
                (None, None) => (
                    "ended".to_owned(),
                    "ended without a status".to_owned(),
                    true,
                ),
            }
        }
    };
    facts.exit_code = answer.exit_code;
    facts.signal = answer.signal.as_deref().map(|s| cut(s, FACT_STRING_BYTES));
    // The terminal's output is stdout and stderr as one: no stream's capture facts
    // (truncation, lines) can be told, so the card says they are unavailable.
    let projection = process_diagnostics(&answer.output);
    let mut content = if answer.output.is_empty() {
        "(no output)".to_owned()
    } else {
        projection.text
    };
    if !content.ends_with('\n') {
        content.push('\n');
    }
    content.push_str(&format!("[{status}; ran in the client's terminal]"));
    if answer.truncated {
        content.push_str(&format!(
            "\n[earlier output was dropped: the client's terminal keeps the last \
             {CLIENT_TERMINAL_OUTPUT_BYTES} bytes]"
        ));
    }
    if !projection.inline {
        content.push_str(&format!(
            "\n[{} of {} lines shown; the output is not kept elsewhere]",
            projection.lines - projection.omitted_lines,
            projection.lines
        ));
    }
    ToolReport::with_facts(
        ToolOutput {
            content,
            summary,
            is_error,
        },
        Facts::Command(Box::new(facts)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_read_as_bash_reads_them() {
        let read = asked(r#"{"command":"ls","timeout_ms":5,"sandbox":"off"}"#).unwrap();
        assert_eq!(read.command, "ls");
        assert_eq!(read.timeout_argument, Some(5));
        assert!(asked(r#"{"command":"ls","timeout_ms":0}"#).is_err());
        assert!(asked(r#"{"cmd":"ls"}"#).is_err());
        assert!(asked(r#"["ls"]"#).is_err());
    }

    #[test]
    fn the_model_is_told_the_status_the_terminal_and_the_truncation() {
        let answer = TerminalAnswer {
            outcome: ClientTerminalOutcome::Exited,
            exit_code: Some(2),
            signal: None,
            output: "boom\n".into(),
            truncated: true,
        };
        let report = answered_report(&answer, 1_000, CommandFacts::default());
        assert!(report.output.is_error);
        assert!(
            report
                .output
                .content
                .starts_with("boom\n[exit code 2; ran in the client's")
        );
        assert!(report.output.content.contains("keeps the last 32768 bytes"));
        let Some(Facts::Command(facts)) = report.facts else {
            panic!("no command facts");
        };
        assert_eq!(facts.exit_code, Some(2));
        assert_eq!(facts.stdout_truncated, None);
    }
}
