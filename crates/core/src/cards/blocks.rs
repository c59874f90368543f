//! Block selection: how the recorded facts stand, and which card family's blocks they
//! give.

use magi_protocol::cards::{Changes, ToolKind};
use magi_store::records::ToolOutcome;
use magi_tools::BuiltinTool;
use magi_tools::facts::Facts;
use serde_json::Value;

use super::part::Part;
use super::source::CardSource;
use super::text::Notes;

/// How the recorded facts stand.
pub(super) enum Source {
    /// Facts of the kind this tool reports.
    Facts(Box<Facts>, Option<Value>),
    /// No facts were recorded.
    Absent,
    /// Facts that cannot be read, of another tool, or of a tool this build does not
    /// know.
    Unsupported,
}

/// Reads the recorded facts of `tool_name`. A command's `tracking` is taken out first
/// and read on its own, so that an unknown tracking status costs only its two rows.
pub(super) fn read_facts(tool_name: &str, kind: ToolKind, facts: Option<&Value>) -> Source {
    let Some(value) = facts else {
        // A built-in of kind `other` (`magi_control`) is known: its running card has
        // no facts by design, not from an unknown source.
        return if kind == ToolKind::Other && BuiltinTool::from_name(tool_name).is_none() {
            Source::Unsupported
        } else {
            Source::Absent
        };
    };
    let mut value = value.clone();
    let mut tracking = None;
    if value.get("tool").and_then(Value::as_str) == Some("command")
        && let Some(object) = value.as_object_mut()
    {
        tracking = object.remove("tracking");
    }
    let Ok(facts) = serde_json::from_value::<Facts>(value) else {
        return Source::Unsupported;
    };
    let fits = match BuiltinTool::from_name(tool_name) {
        Some(tool) => tool.family().fits(&facts),
        None if tool_name == magi_config::TASK_TOOL => matches!(facts, Facts::Task { .. }),
        None if tool_name == crate::questions::ASK_USER_TOOL => {
            matches!(facts, Facts::Questions { .. })
        }
        None if tool_name.starts_with(crate::mcp::MCP_TOOL_PREFIX) => {
            matches!(facts, Facts::Mcp { .. })
        }
        None => false,
    };
    if fits {
        Source::Facts(Box::new(facts), tracking)
    } else {
        Source::Unsupported
    }
}

/// What block selection needs besides the facts.
pub(super) struct Context<'s, 'a> {
    pub(super) source: &'s CardSource<'a>,
    pub(super) changes: Changes,
    pub(super) outcome: Option<ToolOutcome>,
}

impl Context<'_, '_> {
    pub(super) fn parts(
        &self,
        facts: &Facts,
        tracking: Option<&Value>,
        tail: &mut Notes,
    ) -> Vec<Part> {
        match facts {
            Facts::Read {
                path,
                first_line,
                last_line,
                total_lines,
                truncated,
                binary,
            } => self.read(
                path,
                *first_line,
                *last_line,
                *total_lines,
                *truncated,
                *binary,
            ),
            Facts::Search {
                pattern,
                path,
                matches,
                files,
                complete,
                paths,
            } => self.search(
                pattern.as_deref(),
                path.as_deref(),
                *matches,
                *files,
                *complete,
                paths,
            ),
            Facts::AstGrep {
                pattern,
                language,
                path,
                matches,
                files,
                files_scanned,
                files_skipped,
                complete,
                paths,
            } => self.ast_grep(
                (pattern, language),
                path.as_deref(),
                (*matches, *files),
                (*files_scanned, *files_skipped),
                *complete,
                paths,
            ),
            Facts::Change { .. } => self.change(facts, tail),
            Facts::Web {
                url,
                status,
                content_type,
                bytes,
                truncated,
            } => self.web(url, *status, content_type.as_deref(), *bytes, *truncated),
            Facts::Command(command) => self.command(command, tracking),
            Facts::Job {
                job_id,
                state,
                first_line,
                lines,
                total_lines,
            } => self.job(job_id, state.as_deref(), *first_line, *lines, *total_lines),
            Facts::Mcp {
                server,
                server_tool: tool,
                answered,
                server_error,
                result_bytes,
                non_text_items,
            } => self.mcp(
                server,
                tool,
                *answered,
                *server_error,
                *result_bytes,
                *non_text_items,
            ),
            Facts::Questions {
                questions,
                answers,
                settled,
            } => self.questions(questions, answers.as_deref(), settled.as_deref()),
            Facts::Task {
                profile,
                model_requests,
                tool_calls,
                ended,
                report_bytes,
                ..
            } => self.task(
                profile,
                *model_requests,
                *tool_calls,
                ended,
                *report_bytes,
                tail,
            ),
            Facts::Image {
                path,
                format,
                width,
                height,
                bytes,
                sent,
            } => self.image(
                path,
                format.as_deref(),
                (*width, *height),
                *bytes,
                sent.as_ref(),
            ),
            Facts::CodeMode { .. } => self.code_mode(facts),
            Facts::Plan { items } => self.plan(items),
            Facts::Control {
                operation,
                status,
                usage,
                title,
                title_cut,
            } => self.control(
                operation,
                *status,
                usage.as_ref(),
                title.as_deref(),
                *title_cut,
            ),
        }
    }
}
