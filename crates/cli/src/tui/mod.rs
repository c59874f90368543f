//! Mission Control: `magi-code` with no arguments, in a terminal.
//!
//! A full-screen terminal client on ratatui. It starts its own backend (`serve
//! --stdio`) through the client library, exactly as any other client does, and shows
//! the transcript the client fold computes: streaming replies, tool activities with
//! their cards (diffs coloured, commands with exit codes, omissions said), approvals
//! answered with a key, a composer with history, and Stop.
//!
//! Keys: type a prompt and press Enter to send it; Up and Down recall earlier prompts;
//! a pending approval shows the command, or the path and a preview of the change, and
//! is answered with `y` (allow once), `s` (allow for this session through the
//! backend's suggested rule, `approval.scopes`, offered when there is one), `n` (deny)
//! or `d` (deny with a message to the model); Esc stops the running turn; the model's
//! questions (`user.questions`) replace the transcript with a picker (Up/Down move,
//! Space picks in a multi-select, Enter answers, words typed answer in the person's
//! own words, Esc declines); Ctrl-O expands every tool card to all it carries, or
//! collapses them again; Ctrl-C quits.
//!
//! The module is cut along its seams: [`terminal`] owns the screen and the key reader,
//! [`keys`] turns a key into an [`Action`], [`event_loop`] interleaves keys and backend
//! frames and paces the drawing, [`backend`] is every request Mission Control makes,
//! and [`render`] draws the transcript and its cards.

mod approval;
mod backend;
#[allow(dead_code, reason = "wired into the composer and the loop next")]
mod commands;
mod event_loop;
mod keys;
mod question;
mod render;
mod terminal;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::anyhow;
use magi_client::fold::{Approval, ApprovalState, FoldInput, Item, Transcript};
use magi_protocol::messages::{EmptyParams, SessionListEntry, SessionResult};
use magi_protocol::methods;

/// How long the backend gets to exit after `shutdown`.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Runs Mission Control until the user quits; restores the terminal whatever happens.
pub fn run() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("magi-code: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let mut backend = backend::start_backend().await?;
        let session = backend
            .call::<methods::SessionCreate>(&EmptyParams {})
            .await?
            .map_err(|code| anyhow!("session.create failed: {}", code.as_str()))?;
        let mut terminal = terminal::enter_terminal()?;
        let result = App::new(session).run(&mut backend, &mut terminal).await;
        terminal::leave_terminal(&mut terminal);
        let _ = backend.shutdown().await;
        let _ = backend.wait_within(EXIT_WAIT).await;
        result
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("magi-code: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// What a key asks the loop to do.
enum Action {
    Nothing,
    Quit,
    Send(String),
    Stop,
    Answer(Answer),
    #[allow(dead_code, reason = "the /sessions command opens the picker next")]
    ListSessions,
    OpenSession(String),
    /// Answers the open questions (`None` declines them).
    AnswerQuestions(Option<Vec<magi_protocol::messages::QuestionReply>>),
}

/// An answer to the pending approval (`approval.scopes`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// Allow this call (`y`).
    AllowOnce,
    /// Allow this call and, through the suggested rule, the calls it covers for the
    /// rest of the session (`s`, offered only with a rule).
    AllowForSession,
    /// Deny this call (`n`).
    Deny,
    /// Deny this call and tell the model why (`d`, then the message and Enter).
    DenyWithMessage(String),
}

/// The session picker: this directory's sessions, one selected.
struct Picker {
    sessions: Vec<SessionListEntry>,
    selected: usize,
}

/// Mission Control's state: the fold, the composer and its history.
struct App {
    transcript: Transcript,
    session_id: String,
    composer: String,
    history: Vec<String>,
    /// Position while recalling history with Up/Down.
    recall: Option<usize>,
    next_prompt: u64,
    status: String,
    picker: Option<Picker>,
    /// The model's open questions (`user.questions`), while they wait.
    question: Option<question::QuestionPicker>,
    /// Whether every tool card shows all it carries (Ctrl-O) or its result's first lines.
    expanded: bool,
    /// When each activity was first seen, and the background jobs.
    clock: render::Clock,
    /// The pending approval's prompt.
    approval: approval::ApprovalPrompt,
}

impl App {
    fn new(session: SessionResult) -> App {
        let session_id = session.session_id.clone();
        let mut transcript = Transcript::default();
        transcript.apply(FoldInput::SessionAttached(session));
        App {
            transcript,
            session_id,
            composer: String::new(),
            history: Vec::new(),
            recall: None,
            next_prompt: 0,
            status: String::new(),
            picker: None,
            question: None,
            expanded: false,
            clock: render::Clock::default(),
            approval: approval::ApprovalPrompt::default(),
        }
    }

    /// The pending approval, if any.
    fn pending_approval(&self) -> Option<&Approval> {
        self.transcript.items().iter().find_map(|item| match item {
            Item::Approval(a) if a.state == ApprovalState::Pending => Some(a),
            _ => None,
        })
    }
}
