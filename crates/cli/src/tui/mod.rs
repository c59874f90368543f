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
//! own words, Esc declines); Ctrl-O expands every tool card to all it carries, and the
//! model's pinned plan (`plan.todo`) to every step, or collapses them again; `/sessions` picks a session of this directory to reopen
//! (`session.discover`, `session.open`); Ctrl-C stops a turn, clears the composer, and
//! twice on an empty one quits. Slash commands (`/help` lists them) open panels over
//! the transcript or switch the session or the model.
//! PageUp and PageDown scroll the transcript, Home and End go to its top and bottom
//! (with an empty composer; Ctrl-Home and Ctrl-End always), and so does the mouse
//! wheel; a view scrolled up stays put while output arrives below, and says so.
//!
//! The module is cut along its seams: [`terminal`] owns the screen and the key reader,
//! [`keys`] turns a key into an [`Action`], [`event_loop`] interleaves keys and backend
//! frames and paces the drawing, [`backend`] is the requests of turns, approvals and
//! history, [`commands`] the slash commands with their panels and requests, the
//! [`composer`] is where a prompt is written, with its own keys (multi-line editing,
//! history, mentions), and [`render`] draws the transcript and its cards.

mod alert;
mod approval;
mod attachments;
mod backend;
mod cards_panel;
mod choice;
mod commands;
mod composer;
mod event_loop;
mod frame_writer;
mod input;
mod keys;
mod outside;
mod question;
mod render;
mod setup;
mod terminal;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use magi_client::fold::{Approval, ApprovalState, FoldInput, Item, Transcript};
use magi_protocol::messages::{SelectionStatus, SessionResult, UsageUpdated};

use crate::attach::Target;

/// How long the backend gets to exit after `shutdown`.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Runs Mission Control on the session `target` names until the user quits; restores
/// the terminal whatever happens, then says how to come back to the session.
pub fn run(target: Target) -> ExitCode {
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
        render::warm_up();
        let mut terminal = terminal::enter_terminal()?;
        let mut inputs = input::spawn_input_reader();
        let result = session(&target, &mut terminal, &mut inputs).await;
        terminal::leave_terminal(&mut terminal);
        result
    });
    match outcome {
        Ok(farewell) => {
            if let Some(farewell) = farewell {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{farewell}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("magi-code: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Starts a backend (through the first-run screen while the configuration is not
/// usable), attaches the session and runs until the user quits: what to print after
/// leaving the terminal, `None` when the person quit before a backend started.
async fn session(
    target: &Target,
    terminal: &mut terminal::Screen,
    inputs: &mut input::Inputs,
) -> anyhow::Result<Option<String>> {
    let mut backend = loop {
        match backend::start_backend().await? {
            Ok(backend) => break backend,
            Err(code) if setup::is_setup_problem(code) => {
                if setup::guide(terminal, inputs, code).await? == setup::SetupChoice::Quit {
                    return Ok(None);
                }
            }
            Err(code) => return Err(crate::explain::initialize_failed(code, &[])),
        }
    };
    let attached = crate::attach::attach_titled(&mut backend, target, true).await;
    let result = match attached {
        Ok((session, title)) => {
            let revision = session.revision.clone();
            let mut app = App::new(session);
            app.title = title;
            if app.status.is_empty() {
                app.status = crate::hooks::unapproved_notice().unwrap_or_default();
            }
            if !matches!(target, Target::New) {
                let id = app.session_id.clone();
                app.load_history(&mut backend, &id, &revision).await?;
            }
            app.refresh_selection(&mut backend).await?;
            app.sync_mode(&mut backend).await?;
            app.run(&mut backend, terminal, inputs)
                .await
                .map(|()| Some(app.farewell()))
        }
        Err(e) => Err(e),
    };
    let _ = backend.shutdown().await;
    let _ = backend.wait_within(EXIT_WAIT).await;
    result
}

/// What a key asks the loop to do.
enum Action {
    Nothing,
    Quit,
    Send(String),
    Stop,
    Answer(Answer),
    /// A slash command, or what its panel asks for.
    Commands(commands::Request),
    /// Answers the open questions (`None` declines them).
    AnswerQuestions(Option<Vec<magi_protocol::messages::QuestionReply>>),
    /// Starts a fresh backend on the session, the one before having ended.
    Renew,
    /// Edits the prompt in `$EDITOR` (Ctrl-G).
    Editor,
    /// Gives the terminal back to the shell until it continues this process (Ctrl-Z).
    Suspend,
    /// Switches to the next approval mode (Shift+Tab).
    CycleMode,
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

/// Mission Control's state: the fold, the composer and its history.
struct App {
    transcript: Transcript,
    session_id: String,
    composer: composer::Composer,
    next_prompt: u64,
    status: String,
    /// The panel of a slash command (help, status, changes, the pickers), over the
    /// transcript.
    panel: Option<commands::Panel>,
    /// A command's request left in flight (compaction, a model-list fetch).
    op: Option<commands::Op>,
    /// The last `usage.updated` of this session.
    usage: Option<UsageUpdated>,
    /// The session's title, when one is known (from the session picker).
    title: Option<String>,
    /// The backend's current model selection (`status.selection`).
    selection: Option<SelectionStatus>,
    /// When the running turn was sent, for the working indicator.
    run_started: Option<std::time::Instant>,
    /// Whether the running turn was asked to stop (until its `run.finished`).
    stopping: bool,
    /// A prompt typed while the turn ran, sent when it ends.
    queued: Vec<String>,
    /// Whether Ctrl-C was just pressed on an empty composer (a second press quits).
    quit_armed: bool,
    /// Whether the person asked for no animation (`NO_MOTION`), read once at start.
    reduced_motion: bool,
    /// The model's open questions (`user.questions`), while they wait.
    question: Option<question::QuestionPicker>,
    /// Whether every tool card shows all it carries (Ctrl-O) or its result's first lines.
    expanded: bool,
    /// When each activity was first seen, and the background jobs.
    clock: render::Clock,
    /// The pending approval's prompt.
    approval: approval::ApprovalPrompt,
    /// The transcript's scroll position and laid-out rows.
    view: render::View,
    /// Whether the backend ended (its crash or death is said in the transcript): `r`
    /// on an empty composer, or the next prompt, starts a fresh one on this session.
    backend_gone: bool,
    /// Whether the terminal has the focus, as it last said (one that never says is
    /// taken to have it).
    focused: bool,
    /// The editor editing the prompt, while it has the terminal.
    editing: Option<outside::Editing>,
    /// What the bell rings for next, once drawn (an approval, questions, a turn's end).
    alert: Option<String>,
    /// Whether the terminal shows OSC 9 notifications, read once at start.
    notifications: bool,
    /// Where Mission Control runs (directory and branch), for the empty screen.
    place: render::Place,
    /// The model last chosen with `/model`, which a session started with `/new` keeps.
    chosen: Option<commands::Choice>,
    /// The choice to apply before the next turn (a new session's first).
    reselect: Option<commands::Choice>,
    /// The session's approval mode, once known (`permissions.modes`); the person's
    /// choice goes on in every session and fresh backend of this Mission Control.
    mode: Option<magi_protocol::messages::ApprovalMode>,
    /// A restore `/undo` or `/rewind` previewed, waiting for `confirm`.
    pending: Option<commands::Pending>,
}

impl App {
    fn new(session: SessionResult) -> App {
        let session_id = session.session_id.clone();
        let mut transcript = Transcript::default();
        transcript.apply(FoldInput::SessionAttached(session));
        // The backend runs in this directory too: mentions name its files.
        let mut composer = composer::Composer::open(std::env::current_dir().unwrap_or_default());
        App {
            transcript,
            session_id,
            // A history file that cannot be read is said once, at the start.
            status: composer.take_problem().unwrap_or_default(),
            composer,
            next_prompt: 0,
            panel: None,
            op: None,
            usage: None,
            title: None,
            selection: None,
            run_started: None,
            stopping: false,
            queued: Vec::new(),
            quit_armed: false,
            reduced_motion: render::reduced_motion(),
            question: None,
            expanded: false,
            clock: render::Clock::default(),
            approval: approval::ApprovalPrompt::default(),
            view: render::View::default(),
            backend_gone: false,
            focused: true,
            editing: None,
            alert: None,
            notifications: alert::notifications(),
            place: render::Place::here(),
            chosen: None,
            reselect: None,
            mode: None,
            pending: None,
        }
    }

    /// The pending approval, if any.
    fn pending_approval(&self) -> Option<&Approval> {
        self.transcript.items().iter().find_map(|item| match item {
            Item::Approval(a) if a.state == ApprovalState::Pending => Some(a),
            _ => None,
        })
    }

    /// What is printed after the terminal is restored: the session and the command that
    /// reopens it, or that nothing was saved.
    fn farewell(&self) -> String {
        match self.transcript.durable_session() {
            Some(id) => format!("Session {id}\nResume it with: magi-code --resume {id}"),
            None => "Nothing was saved: no prompt was sent in this session.".to_owned(),
        }
    }
}
