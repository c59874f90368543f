//! One run of the agent: `magi-code exec --json --allow-all PROMPT` in the task's
//! repository, within the task's bound, its event frames read as they come for the
//! session, the run's outcome and the final answer (the text the model wrote after its
//! last tool call, as `exec` itself would print it).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use magi_protocol::limits::{
    EVAL_OUTPUT_TAIL_BYTES, EVAL_STOP_GRACE_MS, OUTPUT_FRAME_BYTES, RUN_CONTENT_BYTES,
};
use magi_protocol::messages::{ActivityState, Event, RunOutcome};
use magi_protocol::wire::EventFrame;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::Command;

use crate::process::{self, Group, Stop, Tail};

/// What to run.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The `magi-code` binary.
    pub magi_code: PathBuf,
    /// The repository, the run's working directory.
    pub repo: PathBuf,
    /// Arguments after `exec --json --allow-all` and before the prompt (`--model`, …).
    pub args: Vec<String>,
    /// Variables set over the suite's own environment (`MC_HOME`, the mock's URL, …).
    pub set: Vec<(OsString, OsString)>,
    /// Variables removed from it.
    pub removed: Vec<&'static str>,
    /// The prompt.
    pub prompt: String,
    /// How long the run may take; past it `exec` is stopped as Ctrl-C would.
    pub bound: Duration,
}

/// How the run went.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// `exec`'s exit status code; `None` when it was killed by a signal or not waited for.
    pub exit_code: Option<i32>,
    /// Whether it outlived its bound and was stopped.
    pub timed_out: bool,
    /// The run's outcome from its `run.finished` event; `None` when none came.
    pub outcome: Option<RunOutcome>,
    /// The session the run was saved in, from its `input.persisted` event.
    pub session_id: Option<String>,
    /// The final answer (possibly partial, as `exec` prints a partial reply).
    pub answer: String,
    /// Whether the answer was longer than a run's reply may be and was cut.
    pub answer_cut: bool,
    /// Lines on stdout that were not event frames (or longer than a frame may be).
    pub unreadable_lines: u64,
    /// The newest part of `exec`'s stderr: the session, progress, errors.
    pub stderr: Tail,
    /// From the start to the end of `exec`.
    pub wall: Duration,
}

/// Runs `exec` as `invocation` says and reads its frames. `Err` only when it could not
/// be started.
pub async fn run(invocation: &Invocation) -> std::io::Result<AgentRun> {
    let mut command = Command::new(&invocation.magi_code);
    command
        .args(["exec", "--json", "--allow-all"])
        .args(&invocation.args)
        .arg("--")
        .arg(&invocation.prompt)
        .current_dir(&invocation.repo);
    for name in &invocation.removed {
        command.env_remove(name);
    }
    for (name, value) in &invocation.set {
        command.env(name, value);
    }
    let started = Instant::now();
    let mut group = Group::spawn(command)?;
    let frames = tokio::spawn(read_frames(group.stdout()));
    let stderr = process::read_tail(group.stderr(), EVAL_OUTPUT_TAIL_BYTES);
    let ended = group
        .wait(
            invocation.bound,
            Stop::Terminate(Duration::from_millis(EVAL_STOP_GRACE_MS)),
        )
        .await;
    let wall = started.elapsed();
    let frames = process::drained(frames).await.unwrap_or_default();
    Ok(AgentRun {
        exit_code: ended.status.and_then(|s| s.code()),
        timed_out: ended.timed_out,
        outcome: frames.outcome,
        session_id: frames.session_id,
        answer: frames.reply.answer(),
        answer_cut: frames.reply.cut,
        unreadable_lines: frames.unreadable_lines,
        stderr: process::drained(stderr)
            .await
            .unwrap_or_else(|| Tail::new(EVAL_OUTPUT_TAIL_BYTES)),
        wall,
    })
}

/// What the frames said.
#[derive(Debug, Default)]
struct Frames {
    session_id: Option<String>,
    outcome: Option<RunOutcome>,
    reply: Reply,
    unreadable_lines: u64,
}

/// Reads event frames, one a line, each at most an output frame's size, to the end.
async fn read_frames(stdout: Option<impl AsyncRead + Unpin>) -> Frames {
    let mut frames = Frames::default();
    let Some(stdout) = stdout else {
        return frames;
    };
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        // One byte past the bound (and the LF) tells a frame at the bound from one over.
        let limit = (OUTPUT_FRAME_BYTES + 2) as u64;
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") && line.len() as u64 == limit {
            // Over the bound: skip to the end of the line.
            frames.unreadable_lines += 1;
            if !skip_line(&mut reader).await {
                break;
            }
            continue;
        }
        match serde_json::from_slice::<EventFrame>(&line) {
            Ok(frame) => frames.take(&frame.event),
            Err(_) => frames.unreadable_lines += 1,
        }
    }
    frames
}

/// Reads up to the next LF; false at the end of the stream.
async fn skip_line(reader: &mut (impl AsyncBufReadExt + Unpin)) -> bool {
    loop {
        let (found, used) = match reader.fill_buf().await {
            Ok([]) | Err(_) => return false,
            Ok(buffer) => match buffer.iter().position(|b| *b == b'\n') {
                Some(at) => (true, at + 1),
                None => (false, buffer.len()),
            },
        };
        reader.consume(used);
        if found {
            return true;
        }
    }
}

impl Frames {
    fn take(&mut self, event: &Event) {
        match event {
            Event::InputPersisted(persisted) => {
                self.session_id = Some(persisted.session_id.clone());
            }
            Event::MessageDelta(delta) => self.reply.delta(&delta.message_id, &delta.text),
            Event::MessageReconcile(part) => {
                self.reply
                    .reconcile(&part.message_id, &part.text, part.last_part);
            }
            // Text before a tool call is commentary, not the answer (as `exec` says).
            Event::Activity(activity) if activity.state == ActivityState::Started => {
                self.reply.segments.clear();
            }
            Event::RunFinished(finished) => self.outcome = Some(finished.outcome),
            _ => {}
        }
    }
}

/// The assistant segments since the last tool call.
#[derive(Debug, Default)]
struct Reply {
    segments: Vec<Segment>,
    /// Bytes taken in, over all segments of the run.
    bytes: usize,
    cut: bool,
}

/// One assistant segment: its streamed text until its authoritative text came.
#[derive(Debug, Default)]
struct Segment {
    message_id: String,
    streamed: String,
    reconciling: String,
    reconciled: Option<String>,
}

impl Reply {
    fn segment(&mut self, message_id: &str) -> &mut Segment {
        let at = match self
            .segments
            .iter()
            .position(|s| s.message_id == message_id)
        {
            Some(at) => at,
            None => {
                self.segments.push(Segment {
                    message_id: message_id.to_owned(),
                    ..Segment::default()
                });
                self.segments.len() - 1
            }
        };
        &mut self.segments[at]
    }

    /// Whether `text` still fits the run's reply bound; past it the answer is cut.
    fn room(&mut self, text: &str) -> bool {
        self.bytes += text.len();
        if self.bytes > 2 * RUN_CONTENT_BYTES {
            // Deltas and their reconciliation both count: twice the run's bound.
            self.cut = true;
        }
        !self.cut
    }

    fn delta(&mut self, message_id: &str, text: &str) {
        if self.room(text) {
            self.segment(message_id).streamed.push_str(text);
        }
    }

    fn reconcile(&mut self, message_id: &str, text: &str, last: bool) {
        if !self.room(text) {
            return;
        }
        let segment = self.segment(message_id);
        segment.reconciling.push_str(text);
        if last {
            segment.reconciled = Some(std::mem::take(&mut segment.reconciling));
        }
    }

    fn answer(&self) -> String {
        self.segments
            .iter()
            .map(|s| s.reconciled.as_deref().unwrap_or(&s.streamed))
            .collect()
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    fn frame(event: &str, data: serde_json::Value) -> String {
        serde_json::json!({
            "protocol": "magi-code.local-agent",
            "version": 1,
            "type": "event",
            "instance_id": "i",
            "seq": 1,
            "event": event,
            "data": data,
        })
        .to_string()
    }

    fn ids() -> serde_json::Value {
        serde_json::json!({ "session_id": "s1", "run_id": "r1" })
    }

    fn with(mut base: serde_json::Value, more: serde_json::Value) -> serde_json::Value {
        for (k, v) in more.as_object().unwrap() {
            base[k] = v.clone();
        }
        base
    }

    #[tokio::test]
    async fn the_answer_is_the_text_after_the_last_tool_call() {
        let lines = [
            frame(
                "input.persisted",
                with(
                    ids(),
                    serde_json::json!({"message_id": "u", "durable": true, "revision": "1"}),
                ),
            ),
            frame(
                "message.reconcile",
                with(
                    ids(),
                    serde_json::json!({"message_id": "a0", "part": 0, "text": "Looking.", "last_part": true, "partial": false}),
                ),
            ),
            frame(
                "activity",
                with(
                    ids(),
                    serde_json::json!({"activity_id": "tool-1", "kind": "tool", "state": "started", "name": "read", "summary": "read"}),
                ),
            ),
            "not a frame".to_owned(),
            frame(
                "message.delta",
                with(
                    ids(),
                    serde_json::json!({"message_id": "a1", "part": 0, "text": "It is 4"}),
                ),
            ),
            frame(
                "message.reconcile",
                with(
                    ids(),
                    serde_json::json!({"message_id": "a1", "part": 0, "text": "It is ", "last_part": false, "partial": false}),
                ),
            ),
            frame(
                "message.reconcile",
                with(
                    ids(),
                    serde_json::json!({"message_id": "a1", "part": 1, "text": "42.", "last_part": true, "partial": false}),
                ),
            ),
            frame(
                "run.finished",
                with(
                    ids(),
                    serde_json::json!({"outcome": "completed", "persistence": "durable", "revision": "2", "error_code": null}),
                ),
            ),
        ];
        let text = lines.join("\n") + "\n";
        let frames = read_frames(Some(text.as_bytes())).await;
        assert_eq!(frames.session_id.as_deref(), Some("s1"));
        assert_eq!(frames.outcome, Some(RunOutcome::Completed));
        assert_eq!(frames.reply.answer(), "It is 42.");
        assert_eq!(frames.unreadable_lines, 1);
    }

    #[tokio::test]
    async fn a_line_over_a_frame_is_skipped_whole() {
        let long = "x".repeat(OUTPUT_FRAME_BYTES + 10);
        let text = format!(
            "{long}\n{}\n",
            frame(
                "run.finished",
                with(
                    ids(),
                    serde_json::json!({"outcome": "failed", "persistence": "durable", "revision": null, "error_code": "execution_failed"}),
                ),
            )
        );
        let frames = read_frames(Some(text.as_bytes())).await;
        assert_eq!(frames.unreadable_lines, 1);
        assert_eq!(frames.outcome, Some(RunOutcome::Failed));
    }
}
