//! The approval prompt of `exec`: a tool call the permission policy asks about is put
//! to the person at the terminal, on stderr, and answered on stdin.
//!
//! The prompt shows what the call would do: the command line (redacted by the
//! backend), or the path and the diff a write or an edit would apply. It offers allow
//! once, allow for this session (the backend's suggested rule, when it offers one),
//! deny, and deny with a message for the model. With no terminal on stdin nobody can
//! be asked: the answer is `unavailable`, and stderr says how to allow such calls.
//! Everything waits at most until the approval expires; no answer by then is a denial.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::time::Duration;

use magi_client::fold::describe_approval;
use magi_protocol::limits::APPROVAL_MESSAGE_BYTES;
use magi_protocol::messages::{ApprovalAnswerParams, ApprovalRequested, ApprovalScope};
use tokio::time::Instant;

/// Most lines of a proposed change shown before the rest is summed up.
const DIFF_LINES_SHOWN: usize = 40;

/// What the person chose.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    AllowOnce,
    AllowForSession,
    Deny,
    DenyWithMessage(String),
}

/// Asks about `request` and returns the answer to send for run `run_id` of session
/// `session_id`.
pub(super) async fn answer(
    request: &ApprovalRequested,
    session_id: &str,
    run_id: &str,
) -> ApprovalAnswerParams {
    let mut params = ApprovalAnswerParams::once(session_id, run_id, &request.approval_id, false);
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "magi-code exec: {}: denied: no terminal to ask (use --allow-all or a \
             permission rule)",
            what(request)
        );
        params.unavailable = Some(true);
        return params;
    }
    let deadline = Instant::now() + Duration::from_millis(request.expires_in_ms);
    let rule = request.suggested_rule.clone().flatten();
    match ask(request, rule.as_deref(), deadline).await {
        Some(Choice::AllowOnce) => params.allow = true,
        Some(Choice::AllowForSession) => {
            params.allow = true;
            params.scope = Some(ApprovalScope::Session);
        }
        Some(Choice::Deny) => {}
        Some(Choice::DenyWithMessage(message)) => params.message = Some(message),
        None => eprintln!("(no answer; denied)"),
    }
    params
}

/// The call in one line: its summary, and its subject when the summary lacks it.
fn what(request: &ApprovalRequested) -> String {
    describe_approval(
        &request.summary,
        request.subject.as_ref().and_then(Option::as_deref),
    )
}

/// Shows the call and the choices, and reads the choice; none when the approval
/// expired first or stdin closed.
async fn ask(request: &ApprovalRequested, rule: Option<&str>, deadline: Instant) -> Option<Choice> {
    let mut prompt = format!("\nmagi-code exec asks to run {}\n", what(request));
    if let Some(Some(change)) = &request.proposed_change {
        if let Some(counts) = change.counts_words() {
            let _ = writeln!(prompt, "  the change: {counts} lines");
        }
        let lines: Vec<&str> = change.diff.lines().collect();
        for line in lines.iter().take(DIFF_LINES_SHOWN) {
            let _ = writeln!(prompt, "  {line}");
        }
        let hidden = lines.len().saturating_sub(DIFF_LINES_SHOWN);
        if hidden > 0 || change.truncated {
            prompt.push_str("  … (the change is longer than shown)\n");
        }
    }
    let session = match rule {
        Some(rule) => format!("  [s] allow for this session ({rule})\n"),
        None => String::new(),
    };
    let _ = write!(
        prompt,
        "  [y] allow once\n{session}  [n] deny\n  [m] deny with a message for the model\n\
         Choice (default n): "
    );
    show(&prompt);
    let line = read_line(deadline).await?;
    Some(match parse_choice(&line, rule.is_some()) {
        Some(ChoiceKey::Message) => {
            show("Message: ");
            let message = read_line(deadline).await?;
            Choice::DenyWithMessage(bounded(message.trim()))
        }
        Some(ChoiceKey::Once) => Choice::AllowOnce,
        Some(ChoiceKey::Session) => Choice::AllowForSession,
        Some(ChoiceKey::Deny) | None => Choice::Deny,
    })
}

/// The key of a choice, before a message is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChoiceKey {
    Once,
    Session,
    Deny,
    Message,
}

/// The choice a line names; anything else (an empty line included) denies. "For this
/// session" is a choice only when a rule was offered.
fn parse_choice(line: &str, session_offered: bool) -> Option<ChoiceKey> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "a" | "allow" => Some(ChoiceKey::Once),
        "s" | "session" if session_offered => Some(ChoiceKey::Session),
        "m" | "message" => Some(ChoiceKey::Message),
        "n" | "no" | "d" | "deny" => Some(ChoiceKey::Deny),
        _ => None,
    }
}

/// `message` cut to the protocol's bound, on a character boundary.
fn bounded(message: &str) -> String {
    let mut end = message.len().min(APPROVAL_MESSAGE_BYTES);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_owned()
}

/// Writes `prompt` to stderr in one write, so a terminal never shows part of it
/// waiting for the rest (stderr is unbuffered: each `write!` would be a write of its
/// own).
pub(super) fn show(prompt: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(prompt.as_bytes());
    let _ = err.flush();
}

/// One line from stdin, or none when `deadline` passes or stdin ends first.
pub(super) async fn read_line(deadline: Instant) -> Option<String> {
    // A plain thread, not the runtime's blocking pool: a read nobody answers must not
    // hold up the runtime's shutdown once the approval has expired.
    let (tx, line) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        if matches!(std::io::stdin().read_line(&mut line), Ok(n) if n > 0) {
            let _ = tx.send(line);
        }
    });
    tokio::time::timeout_at(deadline, line).await.ok()?.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_are_read_leniently_and_default_to_deny() {
        assert_eq!(parse_choice("y\n", true), Some(ChoiceKey::Once));
        assert_eq!(parse_choice(" S ", true), Some(ChoiceKey::Session));
        assert_eq!(parse_choice("s", false), None, "no rule, no session choice");
        assert_eq!(parse_choice("m", false), Some(ChoiceKey::Message));
        assert_eq!(parse_choice("", true), None);
        assert_eq!(parse_choice("whatever", true), None);
    }

    #[test]
    fn messages_are_cut_to_the_bound_on_a_character() {
        let long = "é".repeat(APPROVAL_MESSAGE_BYTES);
        let cut = bounded(&long);
        assert!(cut.len() <= APPROVAL_MESSAGE_BYTES);
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(bounded("short"), "short");
    }
}
