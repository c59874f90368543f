//! Where a run's events go: the final reply alone on stdout (or, with `--json`, every
//! event frame), and progress for the person on stderr — the session, one line per tool
//! call, the text the model wrote between tool calls — unless `--quiet`.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use magi_protocol::messages::{ActivityState, DIAGNOSTIC_REPLY_TRUNCATED, Event};
use magi_protocol::wire::EventFrame;

use super::report;

/// What the person asked to see.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mode {
    /// Event frames on stdout instead of the reply.
    pub json: bool,
    /// Nothing on stderr but errors, diagnostics and denials.
    pub quiet: bool,
}

/// One assistant segment of the run.
#[derive(Default)]
struct Segment {
    message_id: String,
    /// Text from deltas, shown until the authoritative text arrives.
    streamed: String,
    /// Reconciliation parts gathered so far.
    reconciling: String,
    /// The authoritative text, once its last part arrived.
    reconciled: Option<String>,
}

impl Segment {
    fn text(&self) -> &str {
        self.reconciled.as_deref().unwrap_or(&self.streamed)
    }
}

/// A tool call (or other activity) that has started and not yet ended.
struct Started {
    label: String,
    at: Instant,
}

/// The run's output, fed one event at a time.
pub(super) struct Output {
    mode: Mode,
    /// The segments since the last activity started: the reply so far. Text followed
    /// by a tool call was the model's commentary, not its reply, and goes to stderr.
    reply: Vec<Segment>,
    started: HashMap<String, Started>,
    /// Whether the backend said the reply was cut by the model's output limit.
    truncated: bool,
}

impl Output {
    pub(super) fn new(mode: Mode) -> Output {
        Output {
            mode,
            reply: Vec::new(),
            started: HashMap::new(),
            truncated: false,
        }
    }

    /// A progress line for the person, on stderr unless quiet.
    pub(super) fn progress(&self, line: &str) {
        if !self.mode.quiet {
            eprintln!("{line}");
        }
    }

    /// Takes in one event: prints its frame with `--json`, its progress line, and keeps
    /// the reply's text.
    pub(super) fn event(
        &mut self,
        instance_id: &str,
        seq: u64,
        event: &Event,
    ) -> anyhow::Result<()> {
        if self.mode.json {
            let frame = EventFrame {
                protocol: Default::default(),
                version: Default::default(),
                kind: Default::default(),
                instance_id: instance_id.to_owned(),
                seq,
                event: event.clone(),
            };
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", serde_json::to_string(&frame)?)?;
            out.flush()?;
        }
        match event {
            Event::MessageDelta(delta) => {
                self.segment(&delta.message_id)
                    .streamed
                    .push_str(&delta.text);
            }
            Event::MessageReconcile(part) => {
                let segment = self.segment(&part.message_id);
                segment.reconciling.push_str(&part.text);
                if part.last_part {
                    segment.reconciled = Some(std::mem::take(&mut segment.reconciling));
                }
            }
            Event::Activity(activity) => match activity.state {
                ActivityState::Started => {
                    let commentary = std::mem::take(&mut self.reply);
                    if !self.mode.json {
                        for segment in &commentary {
                            let text = segment.text().trim_end();
                            if !text.is_empty() {
                                self.progress(text);
                            }
                        }
                    }
                    let started = Started {
                        label: activity.summary.clone(),
                        at: Instant::now(),
                    };
                    self.started.insert(activity.activity_id.clone(), started);
                }
                ActivityState::Completed | ActivityState::Failed => {
                    let (label, took) = match self.started.remove(&activity.activity_id) {
                        Some(started) => (started.label, Some(started.at.elapsed())),
                        None => (activity.name.clone(), None),
                    };
                    let mark = if activity.state == ActivityState::Completed {
                        "✓"
                    } else {
                        "✗"
                    };
                    let took = took
                        .map(|t| format!(" ({})", elapsed(t)))
                        .unwrap_or_default();
                    self.progress(&format!("{mark} {label}: {}{took}", activity.summary));
                }
            },
            Event::Diagnostic(diagnostic) => {
                if diagnostic.code == DIAGNOSTIC_REPLY_TRUNCATED {
                    self.truncated = true;
                }
                report::diagnostic(diagnostic);
            }
            Event::InputPersisted(_)
            | Event::ApprovalRequested(_)
            | Event::RunFinished(_)
            | Event::ToolCard(_)
            | Event::ClientToolCall(_)
            | Event::ClientToolCancel(_) => {}
        }
        Ok(())
    }

    fn segment(&mut self, message_id: &str) -> &mut Segment {
        let at = match self.reply.iter().position(|s| s.message_id == message_id) {
            Some(at) => at,
            None => {
                self.reply.push(Segment {
                    message_id: message_id.to_owned(),
                    ..Segment::default()
                });
                self.reply.len() - 1
            }
        };
        &mut self.reply[at]
    }

    /// Whether the backend said the reply was cut by the model's output limit.
    pub(super) fn truncated(&self) -> bool {
        self.truncated
    }

    /// Prints the reply on stdout, as far as it got, ending in a newline; nothing with
    /// `--json`, whose frames carried it already.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        if self.mode.json {
            return Ok(());
        }
        let mut reply = String::new();
        for segment in &self.reply {
            if !reply.is_empty() && !reply.ends_with('\n') {
                reply.push('\n');
            }
            reply.push_str(segment.text());
        }
        if reply.is_empty() {
            return Ok(());
        }
        if !reply.ends_with('\n') {
            reply.push('\n');
        }
        let mut out = std::io::stdout().lock();
        out.write_all(reply.as_bytes())?;
        out.flush()
    }
}

/// A call's duration as a person reads it: milliseconds under a second, else seconds.
fn elapsed(took: Duration) -> String {
    if took < Duration::from_secs(1) {
        format!("{} ms", took.as_millis())
    } else {
        format!("{:.1} s", took.as_secs_f64())
    }
}
