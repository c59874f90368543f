//! The approval prompt: a tool call the permission policy would ask about is put to the
//! person at the terminal (on stderr, answered on stdin) when stdin is a terminal, and
//! denied with a message on stderr when it is not.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use magi_protocol::messages::ApprovalRequested;

/// Asks the person at the terminal about a call, within the approval's expiry; with no
/// terminal on stdin, or no answer in time, the call is denied.
pub(super) async fn decide(request: &ApprovalRequested) -> bool {
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "magi-code exec: denied \"{}\": no terminal to ask (use --allow-all or a \
             permissions rule to allow it)",
            request.summary
        );
        return false;
    }
    eprint!("Allow \"{}\"? [y/N] ", request.summary);
    let _ = std::io::stderr().flush();
    // A plain thread, not the runtime's blocking pool: a read nobody answers must not
    // hold up the runtime's shutdown once the approval has expired.
    let (tx, answer) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        if std::io::stdin().read_line(&mut line).is_ok() {
            let _ = tx.send(line);
        }
    });
    let wait = Duration::from_millis(request.expires_in_ms);
    match tokio::time::timeout(wait, answer).await {
        Ok(Ok(line)) => matches!(line.trim(), "y" | "Y" | "yes" | "Yes"),
        _ => {
            eprintln!("(no answer; denied)");
            false
        }
    }
}
