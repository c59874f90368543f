//! Where a run's events go: the final reply alone on stdout (or, with `--json`, every
//! event frame), and progress for the person on stderr — the session, one line per tool
//! call, the text the model wrote between tool calls — unless `--quiet`.
//!
//! A call's line names its main argument. An activity's summary never holds raw
//! parameters, so the argument comes from the call's `tool.card` (negotiated for the
//! progress lines alone; see [`Mode::cards`]): the command of `bash` and `async_bash`
//! (redacted by the backend), the URL of `web_fetch`, the step in progress of the
//! model's plan (`todo`, with `plan.todo`). A call's final card follows its
//! ending activity, so the line waits for it, linked by the activity ID.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use magi_protocol::cards::{Block, Card, CardState, ResourceKind, ToolKind};
use magi_protocol::messages::{
    ActivityState, DIAGNOSTIC_REPLY_REFUSED, DIAGNOSTIC_REPLY_TRUNCATED, Event,
};
use magi_protocol::wire::EventFrame;

use super::report;

/// Longest main argument shown in a progress line, in characters: enough to tell a
/// command or URL, short enough for one line.
const ARGUMENT_CHARS: usize = 80;

/// What the person asked to see.
#[derive(Debug, Clone, Copy)]
pub(super) struct Mode {
    /// Event frames on stdout instead of the reply.
    pub json: bool,
    /// Nothing on stderr but errors, diagnostics and denials.
    pub quiet: bool,
}

impl Mode {
    /// Whether to negotiate `tool.cards`: only the progress lines use cards, so not
    /// with `--json` (whose frames stay exactly the base protocol's events) nor with
    /// `--quiet` (which prints no progress line).
    pub(super) fn cards(self) -> bool {
        !self.json && !self.quiet
    }
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
    /// Whether a card came for it: then its final card follows its end.
    carded: bool,
}

/// A call that ended, its progress line waiting for its final card.
#[derive(Clone)]
struct Ended {
    activity_id: String,
    /// `✓` or `✗`.
    mark: char,
    /// The tool's name, which the label begins with.
    tool: String,
    label: String,
    /// The ending activity's summary: the outcome.
    summary: String,
    took: Option<Duration>,
}

impl Ended {
    /// The progress line, naming `argument` after the label when it does not already.
    fn line(&self, argument: Option<&str>) -> String {
        let Ended {
            mark,
            tool,
            label,
            summary,
            took,
            ..
        } = self;
        // Without a card, a command named by the label alone is quoted all the same,
        // so where it ends cannot be misread.
        let from_label = argument
            .is_none()
            .then(|| label_command(tool, label))
            .flatten();
        let argument = argument.or(from_label.as_deref());
        // A command's or URL's label already names it, unquoted: the card's quoted
        // form takes its place.
        let label = match (argument, label.split_once(' ')) {
            (Some(a), Some((tool, rest)))
                if rest.starts_with(unquoted(a).trim_end_matches('…').trim()) =>
            {
                tool
            }
            _ => label.as_str(),
        };
        let argument = argument
            .filter(|a| !label.contains(*a))
            .map(|a| format!(" {a}"))
            .unwrap_or_default();
        let took = took
            .map(|t| format!(" ({})", elapsed(t)))
            .unwrap_or_default();
        format!("{mark} {label}{argument}: {summary}{took}")
    }
}

/// The run's output, fed one event at a time.
pub(super) struct Output {
    mode: Mode,
    /// The segments since the last activity started: the reply so far. Text followed
    /// by a tool call was the model's commentary, not its reply, and goes to stderr.
    reply: Vec<Segment>,
    started: HashMap<String, Started>,
    /// Calls that ended and wait for their final card, in the order they ended.
    ended: Vec<Ended>,
    /// Whether the backend said the reply was cut by the model's output limit.
    truncated: bool,
    /// Whether the backend said the provider refused the request.
    refused: bool,
}

impl Output {
    pub(super) fn new(mode: Mode) -> Output {
        Output {
            mode,
            reply: Vec::new(),
            started: HashMap::new(),
            ended: Vec::new(),
            truncated: false,
            refused: false,
        }
    }

    /// Whether to negotiate `tool.cards` ([`Mode::cards`]).
    pub(super) fn cards(&self) -> bool {
        self.mode.cards()
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
                        carded: false,
                    };
                    self.started.insert(activity.activity_id.clone(), started);
                }
                ActivityState::Completed | ActivityState::Failed => {
                    let started = self.started.remove(&activity.activity_id);
                    let carded = started.as_ref().is_some_and(|s| s.carded);
                    let ended = Ended {
                        activity_id: activity.activity_id.clone(),
                        mark: if activity.state == ActivityState::Completed {
                            '✓'
                        } else {
                            '✗'
                        },
                        took: started.as_ref().map(|s| s.at.elapsed()),
                        tool: activity.name.clone(),
                        label: started.map_or_else(|| activity.name.clone(), |s| s.label),
                        summary: activity.summary.clone(),
                    };
                    if carded {
                        self.ended.push(ended);
                    } else {
                        self.progress(&ended.line(None));
                    }
                }
            },
            Event::ToolCard(event) => self.card(&event.card),
            Event::Diagnostic(diagnostic) => {
                if diagnostic.code == DIAGNOSTIC_REPLY_TRUNCATED {
                    self.truncated = true;
                }
                if diagnostic.code == DIAGNOSTIC_REPLY_REFUSED {
                    self.refused = true;
                }
                report::diagnostic(diagnostic);
            }
            // A card that never came leaves its line without the argument.
            Event::RunFinished(_) => self.flush_ended(),
            Event::InputPersisted(_)
            | Event::ApprovalRequested(_)
            | Event::ClientToolCall(_)
            | Event::ClientToolCancel(_)
            | Event::QuestionAsked(_)
            | Event::UsageUpdated(_)
            | Event::SessionTitled(_)
            | Event::ClientTerminalRun(_)
            | Event::ClientTerminalCancel(_)
            | Event::ClientFileRead(_)
            | Event::ClientFileWrite(_)
            | Event::ClientFileCancel(_)
            | Event::ReasoningDelta(_) => {}
        }
        Ok(())
    }

    /// Takes in a card snapshot: marks its call as carded, and prints the line of an
    /// ended call once its final card names the main argument.
    fn card(&mut self, card: &Card) {
        if let Some(started) = self.started.get_mut(&card.activity_id) {
            started.carded = true;
        }
        if card.state != CardState::Finished {
            return;
        }
        // The backend says once that the sandbox is not in force: a person running a
        // script must hear it too.
        if let Some(notice) = sandbox_notice(card) {
            self.progress(&format!("notice: {notice}"));
        }
        if let Some(at) = self
            .ended
            .iter()
            .position(|e| e.activity_id == card.activity_id)
        {
            let ended = self.ended.remove(at);
            self.progress(&ended.line(main_argument(card).as_deref()));
        }
    }

    /// Prints the lines of ended calls whose final card did not come.
    fn flush_ended(&mut self) {
        for ended in std::mem::take(&mut self.ended) {
            self.progress(&ended.line(None));
        }
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

    /// Whether the backend said the provider refused the request.
    pub(super) fn refused(&self) -> bool {
        self.refused
    }

    /// Prints the reply on stdout, as far as it got, ending in a newline; nothing with
    /// `--json`, whose frames carried it already.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        self.flush_ended();
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

/// The `Sandbox notice` row of a command's card, when it has one.
fn sandbox_notice(card: &Card) -> Option<String> {
    card.blocks.iter().find_map(|block| match block {
        Block::Results(results) => results
            .rows
            .iter()
            .find(|row| row.label == magi_core::cards::ROW_SANDBOX_NOTICE)
            .and_then(|row| row.value.clone()),
        _ => None,
    })
}

/// What a call acts on, as its card shows it: the first line of a command, quoted,
/// a URL, or the step a plan has in progress, quoted; none for other tools, or when the
/// card carries none (redacted, reduced to its core, or a call refused before it ran).
fn main_argument(card: &Card) -> Option<String> {
    if let Some(plan) = magi_protocol::plan::plan_of(card) {
        return plan
            .into_iter()
            .find(|item| item.status == magi_protocol::plan::PlanStatus::InProgress)
            .map(|item| quoted(&bounded(&item.text, false)));
    }
    match card.tool_kind {
        ToolKind::Command => card.blocks.iter().find_map(|block| match block {
            Block::Command(command) => command.command.as_deref().map(first_line),
            _ => None,
        }),
        ToolKind::Web => card.blocks.iter().find_map(|block| match block {
            Block::Resources(resources) => resources
                .rows
                .iter()
                .find(|row| row.kind == ResourceKind::Url)
                .map(|row| bounded(&row.label, false)),
            _ => None,
        }),
        _ => None,
    }
}

/// The command a built-in command tool's label names after the tool (`bash cargo
/// test …`), quoted as a card's would be (`"cargo test…"`); none for other tools.
fn label_command(tool: &str, label: &str) -> Option<String> {
    let kind = magi_tools::BuiltinTool::from_name(tool)?.kind();
    let command = label.strip_prefix(tool)?.strip_prefix(' ')?;
    if kind != ToolKind::Command || command.trim().is_empty() {
        return None;
    }
    Some(match command.strip_suffix(" …") {
        Some(first) => quoted(&format!("{first}…")),
        None => quoted(command),
    })
}

/// A command's first line that is not blank, quoted, with an ellipsis when more
/// lines follow or the line was cut.
fn first_line(command: &str) -> String {
    let mut lines = command.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default();
    quoted(&bounded(first, lines.next().is_some()))
}

/// `text` between quotes it does not hold, so where it ends cannot be misread: double
/// quotes, else single quotes, else backquotes; with every kind in it, double quotes
/// with the ones inside escaped.
fn quoted(text: &str) -> String {
    match ['"', '\'', '`']
        .into_iter()
        .find(|quote| !text.contains(*quote))
    {
        Some(quote) => format!("{quote}{text}{quote}"),
        None => format!("\"{}\"", text.replace('"', "\\\"")),
    }
}

/// The text [`quoted`] put between quotes; any other text as it is.
fn unquoted(argument: &str) -> String {
    let mut chars = argument.chars();
    match (chars.next(), chars.next_back()) {
        (Some('"'), Some('"')) => chars.as_str().replace("\\\"", "\""),
        (Some(open @ ('\'' | '`')), Some(close)) if open == close => chars.as_str().to_owned(),
        _ => argument.to_owned(),
    }
}

/// `text` cut to [`ARGUMENT_CHARS`] characters, ending in an ellipsis when it was cut
/// or when `more` says something follows it.
fn bounded(text: &str, more: bool) -> String {
    match text.char_indices().nth(ARGUMENT_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None if more => format!("{text}…"),
        None => text.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished card of `tool_kind` with these blocks.
    fn card(tool_kind: &str, blocks: serde_json::Value) -> Card {
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "card_id": "tool-1", "activity_id": "tool-1",
            "parent_activity_id": null, "parent_state": "root", "task_id": null,
            "tool_kind": tool_kind, "state": "finished", "outcome": "success",
            "changes": "unknown", "revision": 1, "origin": "live",
            "detail": {"availability": "complete", "reason": null}, "title": "t",
            "metadata": {"tool_name": null, "resource_path": null, "working_directory": null,
                         "public_protection": {"decision": "not_reported", "summary": null}},
            "blocks": blocks, "omissions": []
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn command(text: Option<&str>) -> Option<String> {
        let block = serde_json::json!([{"type": "command", "command": text,
            "working_directory": null, "exit_code": 0, "signal": null}]);
        main_argument(&card("command", block))
    }

    #[test]
    fn a_command_is_its_first_line_quoted_and_bounded() {
        assert_eq!(
            command(Some("cargo test")).as_deref(),
            Some("\"cargo test\"")
        );
        assert_eq!(
            command(Some("\n  cd x\ncargo test\n")).as_deref(),
            Some("\"cd x…\"")
        );
        let long = "a".repeat(ARGUMENT_CHARS + 5);
        let cut = format!("\"{}…\"", "a".repeat(ARGUMENT_CHARS));
        assert_eq!(command(Some(&long)), Some(cut));
        let exact = "é".repeat(ARGUMENT_CHARS);
        assert_eq!(command(Some(&exact)), Some(format!("\"{exact}\"")));
        // Quotes it does not hold, so its end is not misread.
        assert_eq!(
            command(Some("printf \"%s\\n\" 一 二; ls")).as_deref(),
            Some("'printf \"%s\\n\" 一 二; ls'")
        );
        assert_eq!(
            command(Some("echo \"it's\"")).as_deref(),
            Some("`echo \"it's\"`")
        );
        assert_eq!(
            command(Some("echo \"it's\" `date`")).as_deref(),
            Some("\"echo \\\"it's\\\" `date`\"")
        );
        // Wholly redacted, or reduced to the card's core: no argument.
        assert_eq!(command(None), None);
    }

    #[test]
    fn a_fetch_is_its_url_and_other_tools_have_none() {
        let url = serde_json::json!([{"type": "resources", "rows": [{"kind": "url",
            "label": "https://example.com/a", "location": null, "availability": "available"}]}]);
        assert_eq!(
            main_argument(&card("web", url.clone())).as_deref(),
            Some("https://example.com/a")
        );
        assert_eq!(main_argument(&card("read", url)), None);
        assert_eq!(main_argument(&card("command", serde_json::json!([]))), None);
    }

    #[test]
    fn a_plan_is_its_step_in_progress() {
        let mut plan = card(
            "other",
            serde_json::json!([
                {"type": "progress", "label": "Items done", "completed": 1, "total": 2,
                 "unit": "items"},
                {"type": "results", "rows": [
                    {"label": "Done", "value": "Read it", "outcome": "unknown"},
                    {"label": "In progress", "value": "Fix \"it\"", "outcome": "unknown"},
                ]},
            ]),
        );
        plan.metadata.tool_name = Some("todo".to_owned());
        assert_eq!(main_argument(&plan).as_deref(), Some("'Fix \"it\"'"));
        let ended = Ended {
            activity_id: "a".into(),
            mark: '✓',
            tool: "todo".into(),
            label: "todo 1 of 2 done".into(),
            summary: "plan: 1 of 2 done".into(),
            took: Some(Duration::from_millis(2)),
        };
        assert_eq!(
            ended.line(main_argument(&plan).as_deref()),
            "✓ todo 1 of 2 done 'Fix \"it\"': plan: 1 of 2 done (2 ms)"
        );
    }

    #[test]
    fn a_line_names_the_argument_once() {
        let ended = Ended {
            activity_id: "tool-1".to_owned(),
            mark: '✓',
            tool: "bash".to_owned(),
            label: "bash".to_owned(),
            summary: "exit 0".to_owned(),
            took: Some(Duration::from_millis(12)),
        };
        assert_eq!(
            ended.line(Some("\"cargo test\"")),
            "✓ bash \"cargo test\": exit 0 (12 ms)"
        );
        assert_eq!(ended.line(None), "✓ bash: exit 0 (12 ms)");
        assert_eq!(ended.line(Some("bash")), "✓ bash: exit 0 (12 ms)");
        let labelled = Ended {
            label: "bash echo one …".to_owned(),
            ..ended
        };
        assert_eq!(
            labelled.line(Some("\"echo one…\"")),
            "✓ bash \"echo one…\": exit 0 (12 ms)"
        );
        // No card came (a call the turn's cancel kept from starting): the label's
        // command is quoted as the card's would be.
        assert_eq!(labelled.line(None), "✓ bash \"echo one…\": exit 0 (12 ms)");
        let uncarded = Ended {
            label: "bash sleep 5; echo done".to_owned(),
            summary: "not started: the turn was cancelled".to_owned(),
            ..labelled.clone()
        };
        assert_eq!(
            uncarded.line(None),
            "✓ bash \"sleep 5; echo done\": not started: the turn was cancelled (12 ms)"
        );
        // Other tools' labels stay as they are.
        let read = Ended {
            tool: "read".to_owned(),
            label: "read src/main.rs".to_owned(),
            ..labelled.clone()
        };
        assert_eq!(read.line(None), "✓ read src/main.rs: exit 0 (12 ms)");
        // A label that names a command with quotes of its own: the argument, in
        // other quotes, takes its place all the same.
        let quoting = Ended {
            label: "bash printf \"%s\" 一; ls".to_owned(),
            ..labelled
        };
        assert_eq!(
            quoting.line(Some("'printf \"%s\" 一; ls'")),
            "✓ bash 'printf \"%s\" 一; ls': exit 0 (12 ms)"
        );
        assert_eq!(
            quoting.line(Some("\"printf \\\"%s\\\" 一; ls\"")),
            "✓ bash \"printf \\\"%s\\\" 一; ls\": exit 0 (12 ms)"
        );
    }
}
