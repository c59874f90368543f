//! The selector's inputs: everything recorded or observed about one call.

use magi_protocol::cards::{Child, Origin, StyleSpan};
use magi_store::records::{HookDecision, ToolOutcome};
use serde_json::Value;

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement<'a> {
    /// It has not settled yet.
    Running,
    /// Its result is recorded (saved) or was observed (live).
    Settled {
        /// How it ended.
        outcome: ToolOutcome,
        /// Its safe summary: used only as the failure explanation of a command that
        /// produced no output streams (it could not start).
        summary: &'a str,
    },
    /// Execution ended without a result record (a crashed turn).
    Interrupted,
}

/// The colour of a call's transcript projection, as its card's text block carries it
/// (`tool.cards.styles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptStyles<'a> {
    /// The client did not negotiate styles: the text block has no `styles` field.
    Off,
    /// The colour was not kept (more spans than a block may list): `styles` null.
    LeftOut,
    /// The spans of the lines joined by line feeds, as recorded or observed.
    Spans(&'a [StyleSpan]),
}

impl<'a> TranscriptStyles<'a> {
    /// The styles of a recorded transcript, for a client that negotiated them.
    pub fn recorded(styles: &'a Option<Vec<StyleSpan>>) -> TranscriptStyles<'a> {
        match styles {
            Some(spans) => TranscriptStyles::Spans(spans),
            None => TranscriptStyles::LeftOut,
        }
    }
}

/// What is known about the display-only applied preview of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewSource<'a> {
    /// No preview belongs to this call (it applied nothing, or it is not a change).
    NotApplicable,
    /// A preview should exist but none was recorded (legacy, or a failed append).
    NotRecorded,
    /// The recorded preview payload: `{"schema_version":1,"diff":…,"truncated":…}`.
    Recorded(&'a Value),
    /// A preview was recorded but cannot be used (duplicate, mismatched, unreadable).
    Malformed,
}

/// Everything the selector needs about one call, from records (saved) or the live run.
///
/// The caller guarantees `activity_id` follows the ID grammar and `revision` is at most
/// [`MAX_SAFE_INTEGER`](magi_protocol::cards::MAX_SAFE_INTEGER); the selector never
/// shortens identities.
#[derive(Debug, Clone, Copy)]
pub struct CardSource<'a> {
    /// Live: `tool-N`; saved: the history entry's `message_id`.
    pub activity_id: &'a str,
    /// Live stream or saved history.
    pub origin: Origin,
    /// The card's revision in its scope.
    pub revision: u64,
    /// The tool's name as called; it may be unknown to this build.
    pub tool_name: &'a str,
    /// The call's safe label (`read src/main.rs`).
    pub label: &'a str,
    /// The recorded working directory of a command, when the facts do not carry it.
    pub working_directory: Option<&'a str>,
    /// Where the call stands.
    pub settlement: Settlement<'a>,
    /// The recorded facts: absent (legacy, refused arguments), or any JSON value, which
    /// may be malformed or carry an unknown tag.
    pub facts: Option<&'a Value>,
    /// The recorded public protection label, if any.
    pub protection: Option<&'a str>,
    /// Whether an approval is pending (live only).
    pub awaiting_approval: bool,
    /// The applied preview of a change.
    pub preview: PreviewSource<'a>,
    /// The parent activity of a subagent's call (live only); none for a root call.
    pub parent_activity_id: Option<&'a str>,
    /// The delegated task the call is (a `task` call) or belongs to (a subagent's call).
    pub task_id: Option<&'a str>,
    /// A `task` call's children so far (live only).
    pub children: Option<&'a TaskChildren>,
    /// The call's transcript projection: at most six lines of its result (the first
    /// lines read or found, the last lines a command printed), as recorded; empty when
    /// there is none.
    pub transcript: &'a [String],
    /// The colour of the transcript projection, for a client that negotiated
    /// `tool.cards.styles`.
    pub transcript_styles: TranscriptStyles<'a>,
    /// What a `pre_tool_use` hook decided of the call, when one blocked it or replaced
    /// its arguments.
    pub hook: Option<HookSource<'a>>,
}

/// A `pre_tool_use` hook's decision on a call, as recorded or observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSource<'a> {
    /// The hook's command.
    pub hook: &'a str,
    /// What it decided.
    pub decision: HookDecision,
    /// A block's reason.
    pub reason: Option<&'a str>,
}

/// The calls of a subagent, as its task's live card lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskChildren {
    /// Each call's reference, in order.
    pub children: Vec<Child>,
    /// Calls in all.
    pub total: u64,
}
