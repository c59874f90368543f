//! `bash`: run a shell command in the foreground, with a timeout, in its own process
//! group so that a timeout or a cancellation kills everything it started. Its stdout,
//! stderr and both interleaved are captured to files, each bounded, and the model is
//! given the `process_diagnostics` projection of the interleaved capture and a status.
//! It changes the workspace, so the runner asks before it runs unless a rule allows it.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use magi_protocol::limits::{
    BASH_BACKGROUND_AFTER_MS, BASH_TOOL_MAX_TIMEOUT_MS, BASH_TOOL_TIMEOUT_MS,
    PROCESS_CAPTURE_BYTES, PROCESS_DRAIN_MS,
};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::diagnostics::process_diagnostics;
use crate::facts::{CommandFacts, FACT_STRING_BYTES, Facts, cut};
use crate::{ToolContext, ToolDefinition, ToolOutput, ToolReport};

/// Longest pause between two looks at the child and the cancellation flag. Short pauses
/// come first so a quick command is not held up by the poll.
const POLL_MAX: Duration = Duration::from_millis(50);
/// Size of one read from an output pipe.
const READ_CHUNK: usize = 64 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    command: String,
    timeout_ms: Option<u64>,
    background_after_ms: Option<u64>,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::Bash.name(),
        description: "Run a command with `bash -c` in the working directory and wait for it. \
                      It is killed, with everything it started, after `timeout_ms` \
                      (default 120000, maximum 600000); processes it leaves in the \
                      background are killed when it ends. Output (stdout and stderr \
                      interleaved) is shown whole up to 84 lines and 12 KB, otherwise as a \
                      summary of its first, last and error-like lines. Each stream is \
                      captured up to 16 MiB. A command still running after \
                      `background_after_ms` (default 60000) moves to the background as a \
                      job: read it with bash_log, stop it with bash_kill; its timeout still \
                      applies and you are told when it ends.",
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line."},
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": BASH_TOOL_MAX_TIMEOUT_MS,
                    "description": "Milliseconds before the command is killed."
                },
                "background_after_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": BASH_TOOL_MAX_TIMEOUT_MS,
                    "description": "Milliseconds before a command still running moves to \
                                    the background."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

#[cfg(test)]
pub(crate) fn run(arguments: &Value, ctx: &ToolContext) -> ToolOutput {
    execute(arguments, ctx).output
}

/// Runs a `bash` call and reports it with its facts.
pub(crate) fn execute(arguments: &Value, ctx: &ToolContext) -> ToolReport {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => return invalid(&e.to_string()).into(),
    };
    let timeout_ms = args.timeout_ms.unwrap_or(BASH_TOOL_TIMEOUT_MS);
    if !(1..=BASH_TOOL_MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return invalid(&format!(
            "timeout_ms must be from 1 to {BASH_TOOL_MAX_TIMEOUT_MS}, not {timeout_ms}"
        ))
        .into();
    }
    let background_after_ms = args.background_after_ms.unwrap_or(BASH_BACKGROUND_AFTER_MS);
    if !(1..=BASH_TOOL_MAX_TIMEOUT_MS).contains(&background_after_ms) {
        return invalid(&format!(
            "background_after_ms must be from 1 to {BASH_TOOL_MAX_TIMEOUT_MS}, not \
             {background_after_ms}"
        ))
        .into();
    }
    let invocation = Invocation {
        command: &args.command,
        timeout_ms,
        timeout_argument: args.timeout_ms,
        background_after_ms: Some(background_after_ms),
    };
    execute_command(&invocation, ctx, PROCESS_CAPTURE_BYTES as u64)
}

/// One foreground command, as asked for.
pub(crate) struct Invocation<'a> {
    pub(crate) command: &'a str,
    /// The timeout that applies.
    pub(crate) timeout_ms: u64,
    /// The timeout the call gave, if it gave one.
    pub(crate) timeout_argument: Option<u64>,
    /// When a command still running moves to the background; never when none.
    pub(crate) background_after_ms: Option<u64>,
}

/// The facts every command call starts from: what ran, where, with what timeout.
pub(crate) fn command_facts(
    command: &str,
    ctx: &ToolContext,
    timeout_argument: Option<u64>,
    effective_timeout_ms: Option<u64>,
) -> CommandFacts {
    CommandFacts {
        command: cut(command, FACT_STRING_BYTES),
        working_directory: cut(&ctx.cwd.to_string_lossy(), FACT_STRING_BYTES),
        timeout_ms: timeout_argument,
        effective_timeout_ms,
        tracking: Some(crate::tracking::track(command)),
        ..CommandFacts::default()
    }
}

fn invalid(why: &str) -> ToolOutput {
    ToolOutput::failed(
        "invalid arguments",
        format!(
            "Expected {{\"command\": string, \"timeout_ms\"?: integer, \
             \"background_after_ms\"?: integer}}: {why}."
        ),
    )
}

/// How the command ended.
pub(crate) enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    /// It ran past the moment it moves to the background.
    Background,
}

/// One captured file: bytes past `limit` are counted, not written.
///
/// The file (and the directory it goes in) is created by the thread that fills it, at
/// the stream's first bytes: creating files is slow on some disks (a few hundred
/// microseconds each), so a stream that stays empty leaves no file, and none is made
/// before the command starts.
struct Capture {
    path: PathBuf,
    file: Option<File>,
    written: u64,
    dropped: u64,
    limit: u64,
    /// The file could not be created or written; later bytes are counted as dropped.
    failed: bool,
}

impl Capture {
    fn deferred(path: PathBuf, limit: u64) -> Capture {
        Capture {
            path,
            file: None,
            written: 0,
            dropped: 0,
            limit,
            failed: false,
        }
    }

    /// Creates the file unless done or failed already, and its directory only when it
    /// is missing: the first capture of a call makes it, the others find it.
    fn open(&mut self) {
        if self.file.is_some() || self.failed {
            return;
        }
        let created = match File::create(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => self
                .path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| File::create(&self.path)),
            created => created,
        };
        match created {
            Ok(file) => self.file = Some(file),
            Err(_) => self.failed = true,
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        self.open();
        let room = usize::try_from(self.limit.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let kept = if self.failed {
            0
        } else {
            bytes.len().min(room)
        };
        if kept > 0 {
            let written = self
                .file
                .as_mut()
                .is_some_and(|file| file.write_all(&bytes[..kept]).is_ok());
            if written {
                self.written += kept as u64;
            } else {
                self.failed = true;
                self.dropped += kept as u64;
            }
        }
        self.dropped += (bytes.len() - kept) as u64;
    }
}

/// What a capture kept, once its stream ended.
#[derive(Clone, Copy, Default)]
pub(crate) struct Kept {
    pub(crate) written: u64,
    pub(crate) dropped: u64,
    failed: bool,
}

impl Kept {
    fn of(capture: &Capture) -> Kept {
        Kept {
            written: capture.written,
            dropped: capture.dropped,
            failed: capture.failed,
        }
    }
}

/// Where the captures go: the assets directory, or a temporary one removed on drop.
pub(crate) struct Files {
    dir: PathBuf,
    /// Held only to remove the temporary directory when the call is over.
    _temporary: Option<tempfile::TempDir>,
}

impl Files {
    fn new(assets_dir: Option<&Path>) -> io::Result<Files> {
        match assets_dir {
            // Created with the capture files, by the threads that fill them.
            Some(dir) => Ok(Files {
                dir: dir.to_owned(),
                _temporary: None,
            }),
            None => {
                let temporary = tempfile::Builder::new().prefix("magi-bash-").tempdir()?;
                Ok(Files {
                    dir: temporary.path().to_owned(),
                    _temporary: Some(temporary),
                })
            }
        }
    }
}

/// A command started in its own process group, its three captures being written.
pub(crate) struct Started {
    pub(crate) child: Child,
    pub(crate) group: Pid,
    /// `stdout.txt`, `stderr.txt`, `output.txt`.
    pub(crate) paths: [PathBuf; 3],
    /// Held, never read: a temporary capture directory lives as long as the command.
    _files: Files,
    output: Arc<Mutex<Capture>>,
    finished: mpsc::Receiver<(usize, Kept)>,
    /// Streams whose reader already ended, taken from `finished` while waiting.
    ended: Vec<(usize, Kept)>,
}

impl Started {
    /// Kills the group (whatever the command left running dies with it: a call owns
    /// everything it started, and a leftover would hold the output pipes open), reaps
    /// the shell, waits a bounded time for the captures to drain, and says what each
    /// kept and whether both streams ended.
    pub(crate) fn finish(&mut self, reaped: bool) -> ([Kept; 3], bool) {
        // While members of the group live its ID cannot be reused; with none left the
        // signal finds nothing, unless the PID space wrapped in the instant since the
        // shell was reaped.
        let _ = killpg(self.group, Signal::SIGKILL);
        if !reaped {
            let _ = self.child.wait();
        }
        // Both readers end once every writer of the pipes is gone; a process that left
        // the group may keep them open, so the wait is bounded.
        let mut kept = [Kept::default(); 3];
        let mut drained = 0;
        for (stream, stream_kept) in self.ended.drain(..) {
            kept[stream] = stream_kept;
            drained += 1;
        }
        let deadline = Instant::now() + Duration::from_millis(PROCESS_DRAIN_MS);
        while drained < 2 {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.finished.recv_timeout(left) {
                Ok((stream, stream_kept)) => {
                    kept[stream] = stream_kept;
                    drained += 1;
                }
                Err(_) => break,
            }
        }
        kept[2] = match self.output.lock() {
            Ok(capture) => Kept::of(&capture),
            Err(poisoned) => Kept::of(&poisoned.into_inner()),
        };
        (kept, drained == 2)
    }
}

/// Starts `command` with bounded captures, in its own group; refusals come back as the
/// call's failed output.
pub(crate) fn start(
    command: &str,
    ctx: &ToolContext,
    capture_bytes: u64,
) -> Result<Started, ToolOutput> {
    let files = Files::new(ctx.assets_dir).map_err(|e| {
        ToolOutput::failed(
            "cannot capture output",
            format!("Cannot create the capture directory: {e}."),
        )
    })?;
    let paths = crate::facts::CAPTURE_FILES.map(|name| files.dir.join(name));
    let [stdout_capture, stderr_capture, output_capture] = paths
        .clone()
        .map(|path| Capture::deferred(path, capture_bytes));
    let mut command_line = Command::new("bash");
    for name in ctx.hidden_env {
        command_line.env_remove(name);
    }
    let mut child = command_line
        .arg("-c")
        .arg(command)
        .current_dir(ctx.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so one signal reaches everything the command starts.
        .process_group(0)
        .spawn()
        .map_err(|e| {
            ToolOutput::failed(
                "cannot start the command",
                format!("Cannot start bash: {e}."),
            )
        })?;
    let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let output = Arc::new(Mutex::new(output_capture));
    let (done, finished) = mpsc::channel();
    spawn_reader(child.stdout.take(), stdout_capture, &output, &done, 0);
    spawn_reader(child.stderr.take(), stderr_capture, &output, &done, 1);
    Ok(Started {
        child,
        group,
        paths,
        _files: files,
        output,
        finished,
        ended: Vec::new(),
    })
}

/// Runs `command`, keeping at most `capture_bytes` of each captured file; the bound is a
/// parameter so tests can reach it without writing 16 MiB.
#[cfg(test)]
pub(crate) fn run_command(
    command: &str,
    timeout_ms: u64,
    ctx: &ToolContext,
    capture_bytes: u64,
) -> ToolOutput {
    let invocation = Invocation {
        command,
        timeout_ms,
        timeout_argument: Some(timeout_ms),
        background_after_ms: None,
    };
    execute_command(&invocation, ctx, capture_bytes).output
}

/// Runs a foreground command to its end, or until it moves to the background.
pub(crate) fn execute_command(
    invocation: &Invocation,
    ctx: &ToolContext,
    capture_bytes: u64,
) -> ToolReport {
    let mut facts = command_facts(
        invocation.command,
        ctx,
        invocation.timeout_argument,
        Some(invocation.timeout_ms),
    );
    let mut started = match start(invocation.command, ctx, capture_bytes) {
        Ok(started) => started,
        Err(refused) => return ToolReport::with_facts(refused, Facts::Command(Box::new(facts))),
    };
    let began = Instant::now();
    let timeout = Duration::from_millis(invocation.timeout_ms);
    let background_after = invocation
        .background_after_ms
        .map(Duration::from_millis)
        .filter(|after| *after < timeout);
    let mut end = wait(&mut started, timeout, background_after, ctx.cancelled);
    if let End::Background = end {
        let so_far = read_bounded(&started.paths[2], capture_bytes);
        let paths = ctx.assets_dir.map(|_| started.paths.clone());
        match crate::jobs::adopt(started, invocation.command, began + timeout, ctx) {
            Ok(job_id) => {
                facts.job_id = Some(job_id.clone());
                return backgrounded(&job_id, &so_far, paths.as_ref(), facts);
            }
            // No room for another job: it stays in the foreground until its timeout.
            Err(kept) => {
                started = *kept;
                let left = timeout.saturating_sub(began.elapsed());
                end = wait(&mut started, left, None, ctx.cancelled);
            }
        }
    }
    let (kept, drained) = started.finish(matches!(end, End::Exited(_)));
    let text = read_bounded(&started.paths[2], capture_bytes);
    record_end(
        &mut facts,
        &end,
        &kept,
        drained,
        &started.paths,
        capture_bytes,
    );
    if ctx.assets_dir.is_some() {
        facts.captures = capture_digests(&started.paths);
    }
    let output = report(
        &end,
        invocation.timeout_ms,
        &text,
        kept,
        drained,
        ctx.assets_dir.map(|_| &started.paths),
    );
    ToolReport {
        cancelled: matches!(end, End::Cancelled),
        ..ToolReport::with_facts(output, Facts::Command(Box::new(facts)))
    }
}

/// The report of a command that moved to the background as `job_id`.
fn backgrounded(
    job_id: &str,
    so_far: &str,
    paths: Option<&[PathBuf; 3]>,
    facts: CommandFacts,
) -> ToolReport {
    let projection = process_diagnostics(so_far);
    let mut content = if so_far.is_empty() {
        "(no output yet)\n".to_owned()
    } else {
        let mut text = projection.text;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text
    };
    content.push_str(&format!(
        "[still running; moved to the background as {job_id}: read its output with \
         bash_log, stop it with bash_kill; you will be told when it ends]"
    ));
    if let Some([_, _, output]) = paths {
        content.push_str(&format!("\n[output so far: {}]", output.display()));
    }
    ToolReport::with_facts(
        ToolOutput {
            content,
            summary: format!("moved to the background as {job_id}"),
            is_error: false,
        },
        Facts::Command(Box::new(facts)),
    )
}

/// Records how a command ended in its facts.
pub(crate) fn record_end(
    facts: &mut CommandFacts,
    end: &End,
    kept: &[Kept; 3],
    drained: bool,
    paths: &[PathBuf; 3],
    capture_bytes: u64,
) {
    facts.timed_out = Some(matches!(end, End::TimedOut));
    if let End::Exited(status) = end {
        facts.exit_code = status.code();
        facts.signal = status.signal().map(signal_name);
    } else {
        // The group was killed; the shell's own status is not what ended it.
        facts.signal = Some(signal_name(Signal::SIGKILL as i32));
    }
    // A stream whose reader did not finish may have lost bytes nobody counted.
    let truncated = |k: &Kept| (drained || k.written > 0).then_some(k.dropped > 0);
    facts.stdout_truncated = truncated(&kept[0]);
    facts.stderr_truncated = truncated(&kept[1]);
    facts.stdout_lines = captured_lines(&kept[0], &paths[0], capture_bytes);
    facts.stderr_lines = captured_lines(&kept[1], &paths[1], capture_bytes);
    let failed = !matches!(end, End::Exited(status) if status.success());
    if failed {
        facts.failure_line = first_line(&paths[1]);
    }
    if !drained {
        facts.cleanup_warning = Some("a process outside the group kept the output open".to_owned());
    }
}

/// The digests of the captures that could be read.
pub(crate) fn capture_digests(paths: &[PathBuf; 3]) -> Vec<crate::facts::CaptureDigest> {
    paths
        .iter()
        .filter_map(|p| crate::facts::CaptureDigest::of(p))
        .collect()
}

/// `SIGKILL` for 9; the number when it has no name.
fn signal_name(number: i32) -> String {
    Signal::try_from(number).map_or_else(|_| format!("signal {number}"), |s| s.as_str().to_owned())
}

/// Lines a stream's capture holds: none written is none, with no file to read.
fn captured_lines(kept: &Kept, path: &Path, limit: u64) -> Option<u64> {
    if kept.written == 0 && !kept.failed {
        return Some(0);
    }
    count_lines(path, limit)
}

/// Lines in a captured file (as `str::lines` counts them), read in chunks so a 16 MiB
/// capture is never held whole; none when it cannot be read.
fn count_lines(path: &Path, limit: u64) -> Option<u64> {
    let mut file = File::open(path).ok()?.take(limit);
    let mut buffer = vec![0; READ_CHUNK];
    let mut lines = 0u64;
    let mut last = b'\n';
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                lines += buffer[..n].iter().filter(|b| **b == b'\n').count() as u64;
                last = buffer[n - 1];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(lines + u64::from(last != b'\n'))
}

/// The first non-empty line of a captured file, cut to a fact's bound.
fn first_line(path: &Path) -> Option<String> {
    let head = read_bounded(path, READ_CHUNK as u64);
    head.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| cut(line, FACT_STRING_BYTES))
}

/// Copies one pipe into its own capture and the interleaved one until it ends, then
/// sends what its capture kept.
fn spawn_reader(
    pipe: Option<impl Read + Send + 'static>,
    mut capture: Capture,
    output: &Arc<Mutex<Capture>>,
    done: &mpsc::Sender<(usize, Kept)>,
    stream: usize,
) {
    let output = Arc::clone(output);
    let done = done.clone();
    std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut buffer = vec![0; READ_CHUNK];
            loop {
                match pipe.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => {
                        capture.write(&buffer[..n]);
                        // One lock per chunk keeps each chunk whole in the interleaved file.
                        match output.lock() {
                            Ok(mut output) => output.write(&buffer[..n]),
                            Err(poisoned) => poisoned.into_inner().write(&buffer[..n]),
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        if let Some(file) = capture.file.as_mut() {
            let _ = file.flush();
        }
        // The receiver may have stopped waiting; then nobody needs the answer.
        let _ = done.send((stream, Kept::of(&capture)));
    });
}

/// Waits for the child, the timeout, the moment it moves to the background or the
/// cancellation flag, whichever comes first, looking again at growing intervals up to
/// `POLL_MAX`. Between looks it waits on its output readers rather than sleeping:
/// a command's output ends when it exits, so its end is seen at once.
fn wait(
    started: &mut Started,
    timeout: Duration,
    background_after: Option<Duration>,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> End {
    let start = Instant::now();
    let mut pause = Duration::from_micros(100);
    let next_stop = background_after.unwrap_or(timeout).min(timeout);
    loop {
        match started.child.try_wait() {
            Ok(Some(status)) => return End::Exited(status),
            Ok(None) => {}
            // The child cannot be watched; treat it as cancelled so the group is killed.
            Err(_) => return End::Cancelled,
        }
        if cancelled() {
            return End::Cancelled;
        }
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            return End::TimedOut;
        }
        if background_after.is_some_and(|after| elapsed >= after) {
            return End::Background;
        }
        let nap = pause.min(next_stop.saturating_sub(elapsed));
        pause = (pause * 2).min(POLL_MAX);
        if started.ended.len() < 2 {
            match started.finished.recv_timeout(nap) {
                Ok(ended) => {
                    started.ended.push(ended);
                    // The output closed: the exit is a moment away.
                    pause = Duration::from_micros(50);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(nap),
            }
        } else {
            std::thread::sleep(nap);
        }
    }
}

/// The interleaved capture, read back no further than the bound it was written to.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(file) = File::open(path) {
        let _ = file.take(limit).read_to_end(&mut bytes);
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// `120 s`, or `200 ms` when not whole seconds.
fn duration_label(ms: u64) -> String {
    if ms.is_multiple_of(1_000) {
        format!("{} s", ms / 1_000)
    } else {
        format!("{ms} ms")
    }
}

/// The lines that say what the captures lost: bytes past the bound or unwritable, a
/// capture file that could not be created, output a process outside the group kept
/// open. Shared by every report of process output.
pub(crate) fn capture_notes(kept: &[Kept; 3], drained: bool) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, kept) in ["stdout", "stderr", "output"].iter().zip(kept) {
        if kept.dropped > 0 {
            let why = if kept.failed {
                "could not be written"
            } else {
                "were past the capture bound and not kept"
            };
            notes.push(format!(
                "[{name} capture cut: {} bytes kept, {} more {why}]",
                kept.written, kept.dropped
            ));
        } else if kept.failed {
            // Nothing was lost, but the file the capture promised does not exist.
            notes.push(format!("[{name} capture file could not be created]"));
        }
    }
    if !drained {
        notes.push(
            "[output may be incomplete: a process outside the group kept the output open]"
                .to_owned(),
        );
    }
    notes
}

/// The output of the call: the projection, then status lines.
fn report(
    end: &End,
    timeout_ms: u64,
    text: &str,
    kept: [Kept; 3],
    drained: bool,
    paths: Option<&[PathBuf; 3]>,
) -> ToolOutput {
    let (mut summary, status, is_error) = match end {
        End::Exited(status) => match (status.code(), status.signal()) {
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
        },
        End::TimedOut => {
            let after = duration_label(timeout_ms);
            (
                format!("timed out after {after}"),
                format!("timed out after {after}; the process group was killed"),
                true,
            )
        }
        End::Cancelled => (
            "cancelled".to_owned(),
            "cancelled; the process group was killed".to_owned(),
            true,
        ),
        End::Background => (
            "moved to the background".to_owned(),
            "moved to the background".to_owned(),
            false,
        ),
    };
    let projection = process_diagnostics(text);
    let mut content = if text.is_empty() {
        "(no output)".to_owned()
    } else {
        projection.text
    };
    if !content.ends_with('\n') {
        content.push('\n');
    }
    content.push_str(&format!("[{status}]"));
    let truncated = !drained || kept.iter().any(|k| k.dropped > 0);
    for note in capture_notes(&kept, drained) {
        content.push('\n');
        content.push_str(&note);
    }
    if !projection.inline {
        match paths {
            Some([stdout, stderr, output]) => {
                // A stream that wrote nothing has no file to point at.
                let streams: Vec<String> = [(stdout, &kept[0]), (stderr, &kept[1])]
                    .into_iter()
                    .filter(|(_, kept)| kept.written > 0)
                    .map(|(path, _)| path.display().to_string())
                    .collect();
                let files = match streams.as_slice() {
                    [] => String::new(),
                    [one] => format!(" and {one}"),
                    [first, second, ..] => format!(", {first} and {second}"),
                };
                content.push_str(&format!(
                    "\n[full output: {} (interleaved){files}; use read or grep]",
                    output.display()
                ));
            }
            None => content.push_str("\n[the full output was not kept]"),
        }
    }
    if truncated {
        summary.push_str(", output truncated");
    }
    ToolOutput {
        content,
        summary,
        is_error,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    fn never() -> bool {
        false
    }

    fn ctx<'a>(cwd: &'a Path, cancelled: &'a (dyn Fn() -> bool + Sync)) -> ToolContext<'a> {
        ToolContext {
            cwd,
            assets_dir: None,
            cancelled,
            hidden_env: &[],
        }
    }

    fn bash(cwd: &Path, command: &str, timeout_ms: u64) -> ToolOutput {
        run(
            &json!({"command": command, "timeout_ms": timeout_ms}),
            &ctx(cwd, &never),
        )
    }

    /// Whether a process is gone: no entry, or a zombie waiting for its parent.
    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    /// Waits at most a second for a killed process to be gone; killing is asynchronous.
    fn eventually_gone(pid: i32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if gone(pid) {
                return true;
            }
            std::thread::yield_now();
        }
        gone(pid)
    }

    #[test]
    fn hidden_variables_never_reach_the_command() {
        let dir = tempfile::tempdir().unwrap();
        // HOME is set in the test process; hiding it shows the mechanism without
        // touching this process's environment (bash does not invent a HOME).
        assert!(std::env::var_os("HOME").is_some());
        let hidden = ["HOME".to_owned()];
        let mut context = ctx(dir.path(), &never);
        context.hidden_env = &hidden;
        let args = json!({"command": "echo \"[${HOME:-}]\""});
        let out = run(&args, &context);
        assert!(out.content.contains("[]"), "{}", out.content);
    }

    #[test]
    fn reports_exit_code_and_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "hello\n").unwrap();
        let out = bash(dir.path(), "cat f.txt", 5_000);
        assert!(!out.is_error);
        assert_eq!(out.summary, "exit 0");
        assert_eq!(out.content, "hello\n[exit code 0]");
        let out = bash(dir.path(), "echo oops; exit 2", 5_000);
        assert!(out.is_error);
        assert_eq!(out.summary, "exit 2");
        assert_eq!(out.content, "oops\n[exit code 2]");
        let out = bash(dir.path(), "true", 5_000);
        assert_eq!(out.content, "(no output)\n[exit code 0]");
        let out = bash(dir.path(), "kill -9 $$", 5_000);
        assert!(out.is_error);
        assert_eq!(out.summary, "killed by signal 9");
    }

    #[test]
    fn stderr_is_captured_separately_and_interleaved() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("assets/call-1");
        let out = run(
            &json!({"command": "echo one; echo two >&2; echo three"}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&assets),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert_eq!(out.summary, "exit 0");
        assert!(out.content.contains("two"));
        let read = |name: &str| std::fs::read_to_string(assets.join(name)).unwrap();
        assert_eq!(read("stdout.txt"), "one\nthree\n");
        assert_eq!(read("stderr.txt"), "two\n");
        // Chunks of the two streams interleave in arrival order, each kept whole.
        let mut output: Vec<String> = read("output.txt").lines().map(str::to_owned).collect();
        output.sort();
        assert_eq!(output, ["one", "three", "two"]);
        // Inline output names no file.
        assert!(!out.content.contains("stdout.txt"));
    }

    #[test]
    fn a_stream_that_stays_empty_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("tool-calls/call-1");
        let report = execute(
            &json!({"command": "echo hi"}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&assets),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert_eq!(report.output.content, "hi\n[exit code 0]");
        let mut files: Vec<String> = std::fs::read_dir(&assets)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files, ["output.txt", "stdout.txt"]);
        let Some(Facts::Command(facts)) = report.facts else {
            panic!("a command's facts");
        };
        assert_eq!((facts.stdout_lines, facts.stderr_lines), (Some(1), Some(0)));
        let digested: Vec<&str> = facts.captures.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(digested, ["stdout.txt", "output.txt"]);
        // A command with no output at all makes no directory either.
        let quiet = dir.path().join("tool-calls/call-2");
        let report = execute(
            &json!({"command": "true"}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&quiet),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert_eq!(report.output.content, "(no output)\n[exit code 0]");
        assert!(!quiet.exists());
    }

    #[test]
    fn long_output_is_summarized_with_the_capture_paths() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("assets");
        let command = "for i in $(seq 1 200); do echo line $i; done; echo 'error: boom' >&2; \
                       exit 1";
        let out = run(
            &json!({"command": command}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&assets),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert!(out.is_error);
        assert_eq!(out.summary, "exit 1");
        assert!(out.content.contains("lines omitted"));
        assert!(out.content.contains("error: boom"));
        assert!(
            out.content
                .contains(&assets.join("output.txt").display().to_string())
        );
        assert!(out.content.ends_with(&format!(
            ", {} and {}; use read or grep]",
            assets.join("stdout.txt").display(),
            assets.join("stderr.txt").display()
        )));
        // A stream that wrote nothing is not named.
        let quiet = dir.path().join("quiet");
        let out = run(
            &json!({"command": "seq 1 200"}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&quiet),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert!(out.content.ends_with(&format!(
            "[full output: {} (interleaved) and {}; use read or grep]",
            quiet.join("output.txt").display(),
            quiet.join("stdout.txt").display()
        )));
        // Without an assets directory nothing is left behind to point at.
        let out = bash(dir.path(), command, 5_000);
        assert!(out.content.ends_with("[the full output was not kept]"));
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = bash(dir.path(), "sleep 30 & echo $! > bg.pid; sleep 30", 200);
        // Well before the sleeps end: nothing waited for them.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(out.is_error);
        assert_eq!(out.summary, "timed out after 200 ms");
        assert!(
            out.content
                .contains("[timed out after 200 ms; the process group was killed]")
        );
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(eventually_gone(pid), "background child {pid} survived");
    }

    #[test]
    fn background_children_do_not_outlive_a_finished_command() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = bash(dir.path(), "sleep 30 & echo $! > bg.pid; echo done", 5_000);
        // Well before the background sleep ends: nothing waited for it.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(out.summary, "exit 0");
        assert_eq!(out.content, "done\n[exit code 0]");
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(eventually_gone(pid), "background child {pid} survived");
    }

    #[test]
    fn cancellation_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("started");
        // Cancelled once the command says it started, so no timing is guessed.
        let seen = AtomicBool::new(false);
        let cancelled = || {
            let started = marker.exists();
            seen.store(started, Ordering::Relaxed);
            started
        };
        let started = Instant::now();
        let out = run(
            &json!({"command": "sleep 30 & echo $! > bg.pid; touch started; sleep 30"}),
            &ctx(dir.path(), &cancelled),
        );
        // Well before the sleeps end: nothing waited for them.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(seen.load(Ordering::Relaxed));
        assert!(out.is_error);
        assert_eq!(out.summary, "cancelled");
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(eventually_gone(pid), "background child {pid} survived");
    }

    #[test]
    fn captures_past_the_bound_are_counted_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("assets");
        let out = run_command(
            "head -c 5000 /dev/zero | tr '\\0' a; echo; echo err >&2",
            5_000,
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&assets),
                cancelled: &never,
                hidden_env: &[],
            },
            1_000,
        );
        assert_eq!(out.summary, "exit 0, output truncated");
        assert!(!out.is_error);
        assert!(
            out.content
                .contains("[stdout capture cut: 1000 bytes kept, 4001 more")
        );
        assert!(
            out.content
                .contains("[output capture cut: 1000 bytes kept, ")
        );
        assert!(!out.content.contains("[stderr capture cut"));
        assert_eq!(
            std::fs::metadata(assets.join("stdout.txt")).unwrap().len(),
            1_000
        );
        assert_eq!(
            std::fs::read_to_string(assets.join("stderr.txt")).unwrap(),
            "err\n"
        );
        assert_eq!(PROCESS_CAPTURE_BYTES, 16 * 1024 * 1024);
    }

    #[test]
    fn a_flood_past_16_mib_is_cut_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        // Lines of a realistic length; debug builds scan one-byte lines slowly.
        let out = bash(
            dir.path(),
            "yes 'Compiling some-crate v1.2.3 (/work/some/path)' | head -c 20971520",
            10_000,
        );
        assert_eq!(out.summary, "exit 0, output truncated");
        let dropped = 20_971_520 - PROCESS_CAPTURE_BYTES;
        assert!(out.content.contains(&format!(
            "[stdout capture cut: {PROCESS_CAPTURE_BYTES} bytes kept, {dropped} more"
        )));
        assert!(out.content.contains("[the full output was not kept]"));
    }

    #[test]
    fn refuses_bad_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), &never);
        for arguments in [
            json!({}),
            json!({"command": 1}),
            json!({"command": "true", "timeout_ms": 0}),
            json!({"command": "true", "timeout_ms": BASH_TOOL_MAX_TIMEOUT_MS + 1}),
            json!({"command": "true", "timeout_ms": -5}),
            json!({"command": "true", "extra": 1}),
        ] {
            let out = run(&arguments, &c);
            assert!(out.is_error, "{arguments}");
            assert_eq!(out.summary, "invalid arguments");
        }
    }
}
