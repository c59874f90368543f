//! `magi-code exec "PROMPT"`: one headless turn in the current directory, through the
//! same backend and client library as every other client, shaped for scripts.
//!
//! Stdout carries the final reply alone (or, with `--json`, the protocol's event
//! frames); stderr carries progress (`args`, `output`): `session ID` first, one line per
//! tool call naming its main argument (from the call's `tool.card`, negotiated unless
//! `--json` or `--quiet`), and errors (`report`). The run goes into a new session, the one
//! `--resume` names or the newest one (`--continue`; `session`). A tool call the policy
//! would ask about is put to the person at the terminal (`approval`), and so are the
//! model's questions (`ask_user`, `question`).
//!
//! The backend runs in a process group of its own; Ctrl-C, SIGTERM and SIGHUP reach
//! `exec` alone, which cancels the run, waits (bounded) for its end, prints the partial
//! reply and shuts the backend down; a second signal kills the backend's group
//! (`signals`). Exit status: [`Exit`].

mod approval;
mod args;
mod output;
mod question;
mod report;

mod signals;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow};
use magi_client::{Backend, BackendCommand, Incoming};
use magi_protocol::messages::{EmptyParams, Event, RunOutcome, TurnCancelParams, TurnStartParams};
use magi_protocol::methods;
use tokio::time::Instant;

use crate::attach::{self, Target};
pub use args::{AFTER_HELP, ExecArgs, LONG_ABOUT};
use output::{Mode, Output};
use report::Failure;
use signals::{Held, Signals};

/// How long the backend gets to exit after `shutdown`.
const EXIT_WAIT: Duration = Duration::from_secs(5);
/// How long a cancelled run gets to reach its end (the backend stops the run's tools
/// first) before its backend is killed.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// `exec`'s exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the run completed.
    Completed = 0,
    /// 1: the run failed, or the backend could not run it.
    Failed = 1,
    /// 2: the command line or the prompt was refused; nothing was sent.
    Usage = 2,
    /// 3: the run completed but the model's output limit cut its reply.
    Truncated = 3,
    /// 4: the run completed but the provider refused: the reply is its refusal.
    Refused = 4,
    /// 130: interrupted (Ctrl-C, SIGTERM or SIGHUP) or cancelled.
    Interrupted = 130,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

/// Runs one turn and returns the exit status.
pub fn run(args: &ExecArgs) -> ExitCode {
    let prompt = match args::prompt(args.prompt.as_deref()) {
        Ok(prompt) => prompt,
        Err(refused) => {
            eprintln!("magi-code exec: {refused}");
            return Exit::Usage.into();
        }
    };
    let checked = std::env::current_dir()
        .map_err(|e| format!("cannot read the working directory: {e}"))
        .and_then(|cwd| args::check_images(&args.images, &cwd));
    if let Err(why) = checked {
        eprintln!("magi-code exec: {why}");
        return Exit::Usage.into();
    }
    // From here a signal is answered (exit 130), never the default death: it is held
    // while the runtime the handlers need is built. (The prompt is read first, so that
    // Ctrl-C still ends a prompt being typed on standard input.)
    let held = match Held::now() {
        Ok(held) => held,
        Err(e) => {
            let e = anyhow::Error::new(e).context("cannot hold signals back");
            report::failure(&Failure::Setup(&e));
            return Exit::Failed.into();
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            report::failure(&Failure::Setup(&anyhow::Error::new(e)));
            return Exit::Failed.into();
        }
    };
    runtime.block_on(exec(args, prompt, held)).into()
}

async fn exec(args: &ExecArgs, prompt: String, held: Held) -> Exit {
    let mut signals = match Signals::install(held) {
        Ok(signals) => signals,
        Err(e) => {
            let e = anyhow::Error::new(e).context("cannot handle signals");
            report::failure(&Failure::Setup(&e));
            return Exit::Failed;
        }
    };
    let mut backend = match spawn(args) {
        Ok(backend) => backend,
        Err(e) => {
            report::failure(&Failure::Setup(&e));
            return Exit::Failed;
        }
    };
    let mut output = Output::new(Mode {
        json: args.json,
        quiet: args.quiet,
    });
    // Until the run has an ID there is nothing to cancel: a signal stops the backend.
    let started = tokio::select! {
        started = start(&mut backend, args, prompt, &output) => Some(started),
        () = signals.next() => None,
    };
    let run = match started {
        Some(Ok(run)) => run,
        Some(Err(e)) => {
            // A backend that went away says how: its crash, its signal, its last words.
            let e = match e.downcast_ref::<magi_client::ClientError>() {
                Some(magi_client::ClientError::Closed) => gone(&mut backend).await,
                _ => e,
            };
            report::failure(&Failure::Setup(&e));
            stop(&mut backend, &mut signals).await;
            return Exit::Failed;
        }
        None => {
            stop(&mut backend, &mut signals).await;
            return Exit::Interrupted;
        }
    };
    let ended = follow(&mut backend, &run, &mut output, &mut signals).await;
    if let Err(e) = output.finish() {
        let e = anyhow::Error::new(e).context("cannot write the reply");
        report::failure(&Failure::Setup(&e));
    }
    let exit = match ended {
        Ended::Finished {
            outcome: RunOutcome::Completed,
            ..
        } if output.refused() => {
            report::failure(&Failure::Refused);
            Exit::Refused
        }
        Ended::Finished {
            outcome: RunOutcome::Completed,
            ..
        } if output.truncated() => {
            report::failure(&Failure::Cut);
            Exit::Truncated
        }
        Ended::Finished {
            outcome: RunOutcome::Completed,
            ..
        } => Exit::Completed,
        Ended::Finished {
            outcome: RunOutcome::Failed,
            error_code,
        } => {
            report::failure(&Failure::Run(error_code));
            Exit::Failed
        }
        Ended::Finished {
            outcome: RunOutcome::Cancelled,
            ..
        }
        | Ended::Interrupted { killed: false } => Exit::Interrupted,
        // Killed and reaped already: nothing is left to stop.
        Ended::Interrupted { killed: true } => return Exit::Interrupted,
        Ended::Lost(e) => {
            report::failure(&Failure::Setup(&e));
            Exit::Failed
        }
    };
    stop(&mut backend, &mut signals).await;
    exit
}

/// Why the backend's output ended: how the backend ended (its crash, a signal, its exit
/// status and last words on stderr), as the client library tells it, waited for within
/// the cleanup bound.
async fn gone(backend: &mut Backend) -> anyhow::Error {
    let wait = Duration::from_millis(magi_protocol::limits::CLEANUP_WAIT_MS);
    let end = backend.end_within(wait).await;
    anyhow!("{}", end.describe())
}

/// Starts this executable as the backend, in a process group of its own.
fn spawn(args: &ExecArgs) -> anyhow::Result<Backend> {
    let exe = std::env::current_exe().context("cannot find the magi-code executable")?;
    let mut command = BackendCommand::new(exe).own_process_group().env(
        magi_core::INVOCATION_ENV,
        magi_core::Invocation::Exec.name(),
    );
    if args.allow_all {
        command = command.env(magi_core::ALLOW_ALL_ENV, "1");
    }
    if let Some(mode) = &args.mode {
        command = command.env(magi_core::PERMISSION_MODE_ENV, mode);
    }
    // The selection is read from the environment at startup, over the settings.
    if let Some(provider) = &args.provider {
        command = command.env("MAGI_PROVIDER", provider);
    }
    if let Some(model) = &args.model {
        command = command.env("MAGI_MODEL", model);
    }
    if let Some(effort) = &args.effort {
        command = command.env(magi_config::EFFORT_ENV, effort);
    }
    Ok(command.spawn()?)
}

/// The run being followed.
struct Run {
    session_id: String,
    run_id: String,
}

/// Initializes the backend, attaches the session, says which on stderr and starts the
/// turn.
async fn start(
    backend: &mut Backend,
    args: &ExecArgs,
    prompt: String,
    output: &Output,
) -> anyhow::Result<Run> {
    let target = match (&args.resume, args.continue_newest) {
        (Some(id), _) => Target::Resume(id.clone()),
        (None, true) => Target::Newest,
        (None, false) => Target::New,
    };
    let mut capabilities = vec![
        "session.create",
        "turn.start",
        "turn.cancel",
        "approval.answer",
        "shutdown",
        magi_protocol::names::APPROVAL_SCOPES,
        magi_protocol::names::APPROVAL_CHANGE_COUNTS,
        magi_protocol::names::USER_QUESTIONS,
        // The model may keep a plan: its step in progress names the call's line.
        magi_protocol::names::PLAN_TODO,
    ];
    capabilities.extend_from_slice(target.capabilities());
    if !args.images.is_empty() {
        capabilities.push(magi_protocol::names::INPUT_ATTACHMENTS);
    }
    // The cards name each call's main argument in its progress line.
    if output.cards() {
        capabilities.push(magi_protocol::cards::CAPABILITY);
    }
    let selecting = args.model.is_some() || args.provider.is_some();
    if selecting && !matches!(target, Target::New) {
        capabilities.push("status");
    }
    backend
        .initialize(&capabilities)
        .await?
        .map_err(|code| crate::explain::initialize_failed(code, &[]))?;
    let session = attach::attach(backend, &target).await?;
    output.progress(&format!("session {}", session.session_id));
    crate::hooks::warn_unapproved("magi-code exec");
    if selecting && !matches!(target, Target::New) {
        warn_if_kept(backend, args).await?;
    }
    let start = TurnStartParams {
        session_id: session.session_id.clone(),
        prompt,
        attachments: (!args.images.is_empty()).then(|| args.images.clone()),
    };
    let started = backend
        .call::<methods::TurnStart>(&start)
        .await?
        .map_err(|code| anyhow!(crate::explain::turn_refused(code, &start.prompt)))?;
    Ok(Run {
        session_id: session.session_id,
        run_id: started.run_id,
    })
}

/// A reopened session whose model was chosen for it (`selection.set`) keeps that choice
/// over `--model` and `--provider`; says so rather than let the run look as asked.
async fn warn_if_kept(backend: &mut Backend, args: &ExecArgs) -> anyhow::Result<()> {
    let status = backend
        .status()
        .await?
        .map_err(|code| anyhow!("status failed: {}", code.as_str()))?;
    let differs = |asked: &Option<String>, got: &Option<String>| {
        asked
            .as_ref()
            .is_some_and(|asked| Some(asked) != got.as_ref())
    };
    if differs(&args.provider, &status.provider) || differs(&args.model, &status.model) {
        eprintln!(
            "magi-code exec: this session keeps the model chosen for it ({} {}), not the \
             one given on the command line",
            status.provider.as_deref().unwrap_or("?"),
            status.model.as_deref().unwrap_or("?"),
        );
    }
    Ok(())
}

/// How following a run ended.
enum Ended {
    /// `run.finished` arrived.
    Finished {
        outcome: RunOutcome,
        error_code: Option<magi_protocol::ErrorCode>,
    },
    /// The run was being cancelled when the backend went away (`killed: false`), or
    /// its group was killed (`killed: true`): a second signal, or a cancelled run that
    /// did not end within [`CANCEL_WAIT`].
    Interrupted { killed: bool },
    /// The backend's output ended or broke the protocol before the run finished.
    Lost(anyhow::Error),
}

/// What woke the follower up (an incoming frame boxed: an event is large beside the
/// other two).
enum Step {
    Incoming(Option<Box<Incoming>>),
    Signal,
    CancelTimedOut,
}

/// Takes in the run's events until `run.finished`, answering approvals, questions and
/// signals.
async fn follow(
    backend: &mut Backend,
    run: &Run,
    output: &mut Output,
    signals: &mut Signals,
) -> Ended {
    let instance_id = backend.instance_id().unwrap_or_default();
    // Set once the run is being cancelled: when it must have ended.
    let mut cancel_deadline: Option<Instant> = None;
    loop {
        let step = tokio::select! {
            incoming = backend.next_incoming() => Step::Incoming(incoming.map(Box::new)),
            () = signals.next() => Step::Signal,
            () = sleep_until(cancel_deadline), if cancel_deadline.is_some() => Step::CancelTimedOut,
        };
        let (seq, event) = match step {
            Step::Incoming(Some(incoming)) => match *incoming {
                Incoming::Event { seq, event } => (seq, event),
                Incoming::Response(_) => continue,
                Incoming::Violation(v) => {
                    return Ended::Lost(anyhow!("protocol violation: {v}"));
                }
            },
            Step::Incoming(None) if cancel_deadline.is_some() => {
                return Ended::Interrupted { killed: false };
            }
            Step::Incoming(None) => return Ended::Lost(gone(backend).await),
            Step::Signal => {
                if cancel_deadline.is_some() {
                    eprintln!("magi-code exec: stopped at once; the backend was killed");
                    signals::kill_group(backend).await;
                    return Ended::Interrupted { killed: true };
                }
                cancel_deadline = Some(cancel(backend, run, output).await);
                continue;
            }
            Step::CancelTimedOut => {
                eprintln!(
                    "magi-code exec: the run did not stop within {} s; the backend was killed",
                    CANCEL_WAIT.as_secs()
                );
                signals::kill_group(backend).await;
                return Ended::Interrupted { killed: true };
            }
        };
        if let Err(e) = output.event(&instance_id, seq, &event) {
            return Ended::Lost(e.context("cannot write the event"));
        }
        match event {
            Event::RunFinished(finished) => {
                return Ended::Finished {
                    outcome: finished.outcome,
                    error_code: finished.error_code,
                };
            }
            Event::ApprovalRequested(request) if cancel_deadline.is_none() => {
                let answer = tokio::select! {
                    params = approval::answer(&request, &run.session_id, &run.run_id) => Some(params),
                    () = signals.next() => None,
                };
                let Some(params) = answer else {
                    // Cancelling settles the pending approval too.
                    cancel_deadline = Some(cancel(backend, run, output).await);
                    continue;
                };
                // A late answer is stale and changes nothing; the run goes on either way.
                if backend
                    .send::<methods::ApprovalAnswer>(&params)
                    .await
                    .is_err()
                {
                    return Ended::Lost(anyhow!("the backend stopped reading"));
                }
            }
            Event::QuestionAsked(asked) if cancel_deadline.is_none() => {
                let answer = tokio::select! {
                    params = question::answer(&asked) => Some(params),
                    () = signals.next() => None,
                };
                let Some(params) = answer else {
                    // Cancelling settles the open questions too.
                    cancel_deadline = Some(cancel(backend, run, output).await);
                    continue;
                };
                // A late answer is stale and changes nothing; the run goes on either way.
                if backend
                    .send::<methods::QuestionAnswer>(&params)
                    .await
                    .is_err()
                {
                    return Ended::Lost(anyhow!("the backend stopped reading"));
                }
            }
            _ => {}
        }
    }
}

/// Sleeps until `deadline`; never wakes without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Asks the backend to cancel the run (the answer is not waited for: the terminal event
/// follows cleanup) and returns when the run must have ended.
async fn cancel(backend: &mut Backend, run: &Run, output: &Output) -> Instant {
    output.progress("magi-code exec: cancelling the run (Ctrl-C again stops it at once)");
    let params = TurnCancelParams {
        session_id: run.session_id.clone(),
        run_id: run.run_id.clone(),
    };
    // A backend that cannot be written to is gone; the follower sees its output end.
    let _ = backend.send::<methods::TurnCancel>(&params).await;
    Instant::now() + CANCEL_WAIT
}

/// Shuts the backend down and waits (bounded) for it to exit; a signal meanwhile, or a
/// backend still running after [`EXIT_WAIT`], gets its group killed.
async fn stop(backend: &mut Backend, signals: &mut Signals) {
    let exited = tokio::select! {
        exited = async {
            let _ = backend.send::<methods::Shutdown>(&EmptyParams {}).await;
            backend.wait_within(EXIT_WAIT).await.is_some()
        } => exited,
        () = signals.next() => false,
    };
    if !exited {
        signals::kill_group(backend).await;
    }
}
