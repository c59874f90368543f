//! The serve loop: read, answer, and end the child within the protocol's bounds.

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use magi_core::{Runtime, StartupFailure, StartupRequest, start};
use magi_protocol::frame::{Decoded, FrameDecoder};
use magi_protocol::limits::{CLEANUP_WAIT_MS, OUTPUT_DEADLINE_MS, READ_BATCH_BYTES};
use magi_protocol::{ErrorCode, StartupError};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use magi_core::Sessions;
use magi_core::runner::{TitleOutcome, TitleSink};
use magi_protocol::messages::Event;
use tokio::sync::{mpsc, oneshot};

use crate::connection::{Connection, Flow, SessionDone};
use crate::output::{Output, OutputFailure};
use crate::stop_signals::{StopSignal, StopSignals};

/// Titles that may wait in their channel for the loop: one per run that just ended is
/// plenty, since a run sends at most one.
const TITLES_WAITING: usize = 4;
/// Exit status after an orderly end with all output written.
const EXIT_OK: i32 = 0;
/// Exit status after a transport failure or an undrained end.
const EXIT_TRANSPORT_FAILURE: i32 = 1;

/// Serves the protocol on standard input and output until the child ends, and returns
/// the process exit status. Call [`crate::launch::check_stdio_pipes`] first.
///
/// The caller should exit with the returned status straight away: slow teardown (a
/// startup worker blocked in a filesystem call) is detached, not waited for.
pub fn serve_stdio(startup: StartupRequest) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(2)
        .build()
    {
        Ok(runtime) => runtime,
        Err(_) => return EXIT_TRANSPORT_FAILURE,
    };
    let served = magi_crash::contain(|| {
        runtime.block_on(async {
            let Ok((input, output)) = open_stdio() else {
                return EXIT_TRANSPORT_FAILURE;
            };
            let instance_id = uuid::Uuid::new_v4().to_string();
            serve(input, Arc::new(Output::new(output, instance_id)), startup).await
        })
    });
    let status = match served {
        Ok(status) => status,
        // A panic on the protocol loop (or its writer) ends the child in order: the
        // hook wrote the report, the background jobs are stopped, one line goes to
        // stderr and the child exits, without waiting on the runtime's workers.
        Err(crash) => {
            let _ = magi_crash::contain(magi_core::stop_background_jobs);
            magi_crash::exit_fatal(&crash)
        }
    };
    runtime.shutdown_background();
    // Background jobs live no longer than the backend, whichever way it ends.
    magi_core::stop_background_jobs();
    status
}

fn open_stdio() -> io::Result<(pipe::Receiver, pipe::Sender)> {
    let input = pipe::Receiver::from_owned_fd(io::stdin().as_fd().try_clone_to_owned()?)?;
    let output = pipe::Sender::from_owned_fd(io::stdout().as_fd().try_clone_to_owned()?)?;
    Ok((input, output))
}

/// What the startup worker hands back.
type StartupOutcome = Result<Box<Runtime>, StartupFailure>;

/// How the reading phase ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ending {
    /// Input reached EOF (or could no longer be read).
    Eof { partial_frame: bool },
    /// The protocol closes the connection: input is no longer read.
    Close,
    /// `shutdown` was accepted: later input is read and discarded.
    Shutdown,
    /// `SIGTERM` or `SIGHUP` arrived: the child ends as after a cancel and a shutdown,
    /// its input no longer read, and says last which signal it was and who sent it.
    Signal(StopSignal),
}

/// What woke the loop.
enum Wake {
    WriterFailed(Result<OutputFailure, tokio::task::JoinError>),
    Startup(StartupOutcome),
    Session(Option<SessionDone>),
    RunEvent(Option<Event>),
    Title(Option<TitleOutcome>),
    OutputRoom,
    Read(io::Result<usize>),
    StopSignal(StopSignal),
}

async fn serve(mut input: pipe::Receiver, output: Arc<Output>, request: StartupRequest) -> i32 {
    let writer_output = Arc::clone(&output);
    let mut writer = tokio::spawn(async move { writer_output.run_writer().await });
    let mut connection = Connection::new(Arc::clone(&output), request);
    // Titles arrive after their run's terminal event, from the run's thread.
    let (title_sink, mut titles) = mpsc::channel(TITLES_WAITING);
    connection.set_title_sink(TitleSink::new(title_sink));
    let mut decoder = FrameDecoder::new();
    let mut startup: Option<JoinHandle<StartupOutcome>> = None;
    let mut session_work: Option<JoinHandle<SessionDone>> = None;
    let mut run_events: Option<mpsc::Receiver<Event>> = None;
    let mut run_done: Option<oneshot::Receiver<Box<Sessions>>> = None;
    let mut buffer = vec![0u8; READ_BATCH_BYTES];
    let mut decoded = Vec::new();
    let mut stop_signals = StopSignals::new();

    let ending = 'reading: loop {
        let wake = tokio::select! {
            ended = &mut writer => Wake::WriterFailed(ended),
            signal = stop_signals.next() => Wake::StopSignal(signal),
            outcome = join_startup(&mut startup) => Wake::Startup(outcome),
            done = join_worker(&mut session_work) => Wake::Session(done),
            event = next_run_event(&mut run_events), if output.has_room_for_events() => {
                Wake::RunEvent(event)
            }
            () = output.room_for_events(), if run_events.is_some() && !output.has_room_for_events() => {
                Wake::OutputRoom
            }
            title = titles.recv() => Wake::Title(title),
            read = input.read(&mut buffer) => Wake::Read(read),
        };
        let flow = match wake {
            // The writer is part of the loop: its panic is the loop's.
            Wake::WriterFailed(Err(ended)) if ended.is_panic() => {
                std::panic::resume_unwind(ended.into_panic())
            }
            Wake::WriterFailed(_) => return EXIT_TRANSPORT_FAILURE,
            Wake::StopSignal(signal) => break 'reading Ending::Signal(signal),
            Wake::Startup(outcome) => {
                startup = None;
                connection.finish_startup(outcome).map(|()| Flow::Continue)
            }
            // A session worker that panicked lost the sessions: nothing can be
            // trusted about them, so the child ends.
            Wake::Session(None) => return EXIT_TRANSPORT_FAILURE,
            Wake::RunEvent(Some(event)) => {
                tell_run_event(&mut connection, &output, &mut run_done, event)
                    .await
                    .map(|()| Flow::Continue)
            }
            Wake::OutputRoom => Ok(Flow::Continue),
            Wake::Title(title) => {
                // The connection holds a sink until cleanup, so the channel is open.
                if let Some(title) = title {
                    connection.title_arrived(title);
                }
                Ok(Flow::Continue)
            }
            Wake::RunEvent(None) => {
                run_events = None;
                if run_done.is_some() {
                    // The run ended without its terminal event (its thread died).
                    connection.finish_run(join_run(&mut run_done).await);
                    run_done = None;
                }
                Ok(Flow::Continue)
            }
            Wake::Session(Some(done)) => {
                session_work = None;
                connection
                    .finish_session_work(done)
                    .map(|()| Flow::Continue)
            }
            Wake::Read(Ok(0) | Err(_)) => {
                break 'reading Ending::Eof {
                    partial_frame: decoder.has_partial(),
                };
            }
            Wake::Read(Ok(read)) => {
                decoder.feed(&buffer[..read], &mut decoded);
                let mut flow = Ok(Flow::Continue);
                // Dropping the drain discards the rest of a batch after a close.
                for unit in decoded.drain(..) {
                    let step = match unit {
                        Decoded::Frame(frame) => connection.handle_frame(&frame),
                        Decoded::TooLarge => output
                            .error(None, ErrorCode::FrameTooLarge)
                            .map(|()| Flow::Close),
                    };
                    flow = match step {
                        Ok(Flow::StartStartup(request, client_tools, cancel)) => {
                            startup = Some(tokio::task::spawn_blocking(move || {
                                start(&request, &client_tools, &cancel).map(Box::new)
                            }));
                            Ok(Flow::Continue)
                        }
                        Ok(Flow::RunStarted(channels)) => {
                            run_events = Some(channels.events);
                            run_done = Some(channels.done);
                            Ok(Flow::Continue)
                        }
                        Ok(Flow::SessionWork(job)) => {
                            session_work = Some(tokio::task::spawn_blocking(move || job.run()));
                            Ok(Flow::Continue)
                        }
                        other => other,
                    };
                    if !matches!(flow, Ok(Flow::Continue)) {
                        break;
                    }
                }
                flow
            }
        };
        match flow {
            Ok(
                Flow::Continue
                | Flow::StartStartup(..)
                | Flow::SessionWork(_)
                | Flow::RunStarted(_),
            ) => {}
            Ok(Flow::Close) => break 'reading Ending::Close,
            Ok(Flow::Shutdown) => break 'reading Ending::Shutdown,
            Err(_) => return EXIT_TRANSPORT_FAILURE,
        }
    };
    let workers = [startup.map(detach_result), session_work.map(detach_result)];
    let run = (run_events, run_done, titles);
    let last_words = match &ending {
        Ending::Signal(signal) => Some(signal.describe()),
        _ => None,
    };
    let code = finish(ending, input, &output, writer, connection, workers, run).await;
    if let Some(line) = last_words {
        magi_crash::last_line(&line);
    }
    code
}

/// A worker's handle whose result no longer matters, only its end.
fn detach_result<T: Send + 'static>(handle: JoinHandle<T>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let _ = handle.await;
    })
}

/// Tells one event of the running turn as the client negotiated it; the terminal one
/// through [`Connection::end_run`], with the sessions the run's thread handed back
/// before sending it.
async fn tell_run_event(
    connection: &mut Connection,
    output: &Output,
    run_done: &mut Option<oneshot::Receiver<Box<Sessions>>>,
    event: Event,
) -> Result<(), OutputFailure> {
    if !matches!(event, Event::RunFinished(_)) {
        return output.event(connection.outgoing(event));
    }
    let sessions = join_run(run_done).await;
    *run_done = None;
    connection.end_run(sessions, event)
}

/// Resolves with a session worker's result (`None` if it panicked); pending forever
/// when none runs.
async fn join_worker(worker: &mut Option<JoinHandle<SessionDone>>) -> Option<SessionDone> {
    match worker {
        Some(handle) => handle.await.ok(),
        None => std::future::pending().await,
    }
}

/// The next event of the running turn; `None` once its channel closed; pending forever
/// when no run's events are open.
async fn next_run_event(events: &mut Option<mpsc::Receiver<Event>>) -> Option<Event> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

/// The sessions handed back by the run's thread (`None` if it died); pending forever
/// when no run is waited for.
async fn join_run(done: &mut Option<oneshot::Receiver<Box<Sessions>>>) -> Option<Box<Sessions>> {
    match done {
        Some(done) => done.await.ok(),
        None => std::future::pending().await,
    }
}

/// Resolves with the startup worker's outcome; pending forever when none runs.
async fn join_startup(startup: &mut Option<JoinHandle<StartupOutcome>>) -> StartupOutcome {
    match startup {
        Some(handle) => handle
            .await
            .unwrap_or(Err(StartupFailure::new(StartupError::StartupFailed))),
        None => std::future::pending().await,
    }
}

/// What is left of runs when reading ends: the active run's events and sessions, and
/// the titles runs may still send.
type RunLeft = (
    Option<mpsc::Receiver<Event>>,
    Option<oneshot::Receiver<Box<Sessions>>>,
    mpsc::Receiver<TitleOutcome>,
);

/// Ends the child: answer what EOF leaves unanswered, cancel pending work, drain output
/// under the closing deadline, then give cleanup its bounded wait.
async fn finish(
    ending: Ending,
    mut input: pipe::Receiver,
    output: &Output,
    mut writer: JoinHandle<OutputFailure>,
    mut connection: Connection,
    workers: [Option<JoinHandle<()>>; 2],
    run: RunLeft,
) -> i32 {
    let (mut run_events, mut run_done, mut titles) = run;
    connection.cancel_run();
    if let Ending::Eof {
        partial_frame: true,
    } = ending
        && output.error(None, ErrorCode::IncompleteFrame).is_err()
    {
        return EXIT_TRANSPORT_FAILURE;
    }
    if connection.cancel_startup().is_err() || connection.cancel_session_work().is_err() {
        return EXIT_TRANSPORT_FAILURE;
    }

    let closing_deadline = Instant::now() + Duration::from_millis(OUTPUT_DEADLINE_MS);
    let mut discard = vec![0u8; READ_BATCH_BYTES];
    let mut input_open = ending == Ending::Shutdown;
    // The cancelled run's remaining events, its terminal one included, are still
    // delivered within the closing deadline.
    let drained = loop {
        tokio::select! {
            () = output.room_for_events(), if run_events.is_some() && !output.has_room_for_events() => {}
            event = next_run_event(&mut run_events), if output.has_room_for_events() => match event {
                Some(event) => {
                    let told = tell_run_event(&mut connection, output, &mut run_done, event).await;
                    if told.is_err() {
                        break false;
                    }
                }
                None => run_events = None,
            },
            () = output.drained(), if run_events.is_none() => break true,
            () = tokio::time::sleep_until(closing_deadline) => break false,
            _ = &mut writer => break false,
            read = input.read(&mut discard), if input_open => {
                // After shutdown, later frames are read and discarded unanswered.
                input_open = matches!(read, Ok(n) if n > 0);
            }
        }
    };
    if !drained {
        return EXIT_TRANSPORT_FAILURE;
    }

    // Workers finish within the cleanup wait, or are left to process exit. The MCP
    // servers are asked to close at once, beside the joins, not after them.
    let mcp = connection.mcp();
    let close_mcp = async {
        if let Some(mcp) = &mcp {
            mcp.shutdown().await;
        }
    };
    let cleanup = async {
        for worker in workers.into_iter().flatten() {
            let _ = worker.await;
        }
        if let Some(done) = run_done.take() {
            connection.finish_run(done.await.ok());
        }
        // A title still being asked for is the backend's until cleanup: it is
        // recorded if it comes within the cleanup wait. The channel ends once no run
        // that may send one is left.
        connection.close_title_sink();
        while let Some(title) = titles.recv().await {
            connection.title_arrived(title);
        }
    };
    let both = async { tokio::join!(close_mcp, cleanup) };
    let _ = tokio::time::timeout(Duration::from_millis(CLEANUP_WAIT_MS), both).await;
    // The process exits without destructors: whatever server did not close in time is
    // killed now.
    if let Some(mcp) = &mcp {
        mcp.kill_processes();
    }
    // Dropping the runtime state releases the attached session's lease; the process
    // exits without running destructors.
    drop(connection);
    EXIT_OK
}
