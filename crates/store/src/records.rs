//! The session log's record format, version 1: one JSON object per line.
//!
//! Every record carries the format version `v`, the `session_id`, a UTC RFC 3339
//! timestamp `ts` and a `kind`. Readers skip kinds they do not know, so later
//! capabilities add kinds without migrating old logs. `docs/session-log.md` is the
//! human-readable form of this module.

use serde::{Deserialize, Serialize};

/// The record format version this build writes.
pub const LOG_FORMAT_VERSION: u32 = 1;

/// The colour of a result's transcript projection: spans of its lines joined by line
/// feeds (the `styles` of `tool.cards.styles`), or none when they were left out (more
/// than [`magi_protocol::cards::STYLE_SPANS_PER_BLOCK`]); written `null` then, and left
/// out of the record when the lines are plain (as in every record written before
/// colour was kept).
pub type TranscriptStyles = Option<Vec<magi_protocol::cards::StyleSpan>>;

fn plain_transcript() -> TranscriptStyles {
    Some(Vec::new())
}

fn is_plain_transcript(styles: &TranscriptStyles) -> bool {
    styles.as_ref().is_some_and(Vec::is_empty)
}

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The record format version (at least 1).
    pub v: u32,
    /// The session the record belongs to; a log holds one session only.
    pub session_id: String,
    /// When the record was written, UTC RFC 3339 with milliseconds.
    pub ts: String,
    /// What the record says.
    #[serde(flatten)]
    pub body: RecordBody,
}

/// How a turn ended, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model stopped on its own.
    Completed,
    /// The turn failed.
    Failed,
    /// The turn was cancelled.
    Cancelled,
}

/// Where a tool call ended, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutcome {
    /// It completed.
    Completed,
    /// It failed.
    Failed,
    /// It was cancelled.
    Cancelled,
    /// Whether it ran is unknown (settled after a crash).
    Indeterminate,
    /// It never ran: a deny rule, the user, or an approval that could not be given
    /// refused it.
    Denied,
}

/// Where an unsettled call stands, as recorded between its creation and its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallPhase {
    /// The client was asked to approve it.
    AwaitingApproval,
    /// It was claimed for execution: from here on, its effects may have happened.
    Running,
    /// It asks the person questions (`ask_user`) and waits for the answers; it follows
    /// the call's `running` claim.
    AwaitingInput,
}

/// What a `pre_tool_use` hook decided of a call, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// It blocked the call: it never ran.
    Blocked,
    /// It replaced the call's arguments: the call runs with the hook's.
    ArgumentsReplaced,
}

/// What a session rule does to the calls it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleEffect {
    /// They run without asking.
    Allow,
    /// They never run.
    Deny,
}

/// The kind-specific part of a record, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordBody {
    /// Session metadata: the absolute working directory the session belongs to.
    SessionMeta {
        /// Absolute working directory; older logs may lack it.
        #[serde(default)]
        cwd: Option<String>,
    },
    /// A turn began.
    TurnStarted {
        /// The turn.
        turn_id: String,
    },
    /// The user's prompt of a turn.
    UserInput {
        /// The turn.
        turn_id: String,
        /// The input's message ID.
        message_id: String,
        /// The prompt.
        text: String,
        /// The facts of the images given with it (`input.attachments`), in order: each
        /// kept in the session's assets under `inputs/<message_id>/<n>/`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<serde_json::Value>,
    },
    /// One assistant segment, written once complete (or once the turn ended early).
    AssistantOutput {
        /// The turn.
        turn_id: String,
        /// The segment's message ID.
        message_id: String,
        /// The reconciled text; legacy records may carry only `chunks`.
        #[serde(default)]
        text: Option<String>,
        /// Stored chunks of legacy records without `text`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        chunks: Vec<String>,
        /// Whether the segment was cut short (failure, cancellation).
        #[serde(default)]
        partial: bool,
    },
    /// A reasoning summary. Only `provider_summary: true` is ever shown.
    ReasoningSummary {
        /// The turn.
        turn_id: String,
        /// The provider's item identity; a repeated identified summary replaces the earlier.
        #[serde(default)]
        item_id: Option<String>,
        /// The summary text.
        text: String,
        /// Whether the provider itself marked this as a summary.
        #[serde(default)]
        provider_summary: Option<bool>,
    },
    /// Reasoning a provider gave with a response and takes back in later requests of
    /// the same model (an encrypted Responses `reasoning` item, an Anthropic `thinking`
    /// or `redacted_thinking` block), before that response's reply and calls. For the
    /// provider only: never redacted (its signature or encryption would no longer
    /// verify), never shown by history, never sent to a client.
    ProviderReasoning {
        /// The turn.
        turn_id: String,
        /// The wire format that gave it: `responses` or `anthropic`.
        format: String,
        /// The model that gave it; no other is sent it.
        model: String,
        /// The item or block as JSON text, byte for byte as the provider sent it.
        item: String,
    },
    /// A tool call was made.
    ToolCall {
        /// The turn.
        turn_id: String,
        /// The call.
        call_id: String,
        /// The tool's name.
        name: String,
        /// A safe summary (no raw params).
        summary: String,
        /// The arguments as the model sent them, replayed to the provider on later
        /// turns; history never shows them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<String>,
        /// For a call a Code Mode script made (a nested call): the `code_mode` call
        /// that ran the script. Nested calls are never replayed to the model; their
        /// results are `code_mode_tool_result` records.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_call_id: Option<String>,
        /// For a nested call: its number in the script, 1, 2, … in start order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sequence: Option<u64>,
    },
    /// A call a Code Mode script made settled: a `tool_result` of the Code Mode scope,
    /// with the script's call (`parent_call_id`) and the call's number in it
    /// (`sequence`). Its content went to the script, never to the model.
    CodeModeToolResult {
        /// The turn.
        turn_id: String,
        /// The `code_mode` call whose script made it.
        parent_call_id: String,
        /// Its number in the script, 1, 2, … in start order.
        sequence: u64,
        /// The call.
        call_id: String,
        /// The tool's name.
        name: String,
        /// How it ended.
        outcome: ToolOutcome,
        /// A safe summary (no raw results).
        summary: String,
        /// What the script was given (its agent projection).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// What the call observed, for cards.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        facts: Option<serde_json::Value>,
        /// The public protection label of the decision that let it run or refused it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protection: Option<String>,
        /// The identity of its `tool_applied_preview`, when it applied a change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display_id: Option<String>,
        /// The transcript projection, for cards.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        transcript: Vec<String>,
        /// The colour of the transcript projection ([`TranscriptStyles`]).
        #[serde(
            default = "plain_transcript",
            skip_serializing_if = "is_plain_transcript"
        )]
        transcript_styles: TranscriptStyles,
    },
    /// A tool call settled. Bulky output lives in assets, never here.
    ToolResult {
        /// The turn.
        turn_id: String,
        /// The call.
        call_id: String,
        /// The tool's name.
        name: String,
        /// How it ended.
        outcome: ToolOutcome,
        /// A safe summary (no raw results).
        summary: String,
        /// What the model was given as the result (its agent projection), replayed to
        /// the provider on later turns; history never shows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// What the call observed, for cards (the tool's facts, tagged by `tool`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        facts: Option<serde_json::Value>,
        /// The public protection label of the decision that let it run or refused it;
        /// none when no decision was needed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protection: Option<String>,
        /// The identity of its `tool_applied_preview`, when it applied a change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display_id: Option<String>,
        /// The transcript projection: at most six lines of the result, sanitized, for
        /// cards; history's base entry never shows them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        transcript: Vec<String>,
        /// The colour the transcript projection's lines were printed in
        /// ([`TranscriptStyles`]).
        #[serde(
            default = "plain_transcript",
            skip_serializing_if = "is_plain_transcript"
        )]
        transcript_styles: TranscriptStyles,
    },
    /// An unsettled call moved on: it awaits approval, it was claimed to run, or it
    /// awaits the person's answers.
    ToolCallState {
        /// The turn.
        turn_id: String,
        /// The call.
        call_id: String,
        /// Where it stands.
        state: ToolCallPhase,
        /// The public protection label of the decision that let it run, when one was
        /// needed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protection: Option<String>,
    },
    /// A background job ended, and the model was told (before the request this record
    /// precedes).
    AsyncBashEvent {
        /// The turn whose model request carried the notice.
        turn_id: String,
        /// The job.
        job_id: String,
        /// How it ended (`exit 0`, `timed out`, `killed`, …).
        state: String,
        /// What the model was told; history never shows it.
        text: String,
        /// The command's facts, completed with its end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        facts: Option<serde_json::Value>,
    },
    /// The model was told that its last rounds repeated the same calls with the same
    /// results (loop detection), before the request this record precedes.
    LoopNote {
        /// The turn whose model request carried the note.
        turn_id: String,
        /// What the model was told, replayed on later turns; history never shows it.
        text: String,
    },
    /// What changes during a session that the model is told with a turn's prompt,
    /// before it (`docs/prompt.md`): the date, the git state, the approval mode. Replayed
    /// on later turns, so their requests carry the same bytes; history never shows it.
    TurnContext {
        /// The turn whose prompt it goes with.
        turn_id: String,
        /// The note as the model is given it.
        text: String,
    },
    /// What a `user_prompt_submit` or `session_start` hook added to the model's context
    /// (`docs/hooks.md`), after the prompt of the turn whose requests carried it.
    HookNote {
        /// The turn whose model requests carried the note.
        turn_id: String,
        /// The hook's event.
        event: String,
        /// The note as the model was given it (redacted, marked as a hook's), replayed
        /// on later turns; history never shows it.
        text: String,
    },
    /// A `pre_tool_use` hook decided a call (`docs/hooks.md`): it blocked it (the
    /// call's `tool_result`, `denied`, follows), or gave it other arguments to run
    /// with (written with the call's claim, before it runs). The `tool_call` record
    /// keeps the model's own arguments, which are what the provider is replayed.
    ToolCallHook {
        /// The turn.
        turn_id: String,
        /// The call.
        call_id: String,
        /// The hook's command, safe and bounded.
        hook: String,
        /// What it decided.
        decision: HookDecision,
        /// A block's reason, as the model read it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Replaced arguments: what the call runs with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<String>,
        /// Replaced arguments: the call's safe label made from them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    /// A display-only preview of what a tool applied, written after its `tool_result`
    /// and joined to it by `display_id`; never replayed to the model.
    ToolAppliedPreview {
        /// The result's `display_id`.
        display_id: String,
        /// `{"schema_version": 1, "diff": "...", "truncated": bool}`.
        preview: serde_json::Value,
        /// A nested call's preview: the same `parent_call_id` as its
        /// `code_mode_tool_result`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_call_id: Option<String>,
        /// A nested call's preview: the same `sequence` as its result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sequence: Option<u64>,
    },
    /// The session's provider/model/effort selection.
    SessionPreferences {
        /// Provider.
        provider: String,
        /// Model.
        model: String,
        /// Requested effort.
        #[serde(default)]
        effort: Option<String>,
    },
    /// A person answered an approval "for this session": `rule` decides the calls it
    /// covers for the rest of the session, in this child and any that reopens it.
    SessionRule {
        /// The turn of the answered call.
        turn_id: String,
        /// The answered call.
        call_id: String,
        /// Allow or deny.
        effect: RuleEffect,
        /// The rule, in the settings' permission rule syntax.
        rule: String,
    },
    /// A rule the session held no longer holds: its `session_rule` records are revoked,
    /// in this child and any that reopens the session (`permissions.modes`).
    SessionRuleRevoked {
        /// The turn under way when it was revoked; none between turns.
        turn_id: Option<String>,
        /// The rule, as its `session_rule` record wrote it.
        rule: String,
    },
    /// The session's approval mode changed (`permissions.modes`).
    PermissionMode {
        /// The turn under way when it changed; none between turns.
        turn_id: Option<String>,
        /// The mode before.
        previous: String,
        /// The mode now: `plan`, `ask`, `auto` or `allow-all`.
        mode: String,
    },
    /// The model was told, before the request this record precedes, that the approval
    /// mode changed during its turn. Replayed on later turns; history never shows it.
    ModeNote {
        /// The turn whose model request carried the note.
        turn_id: String,
        /// What the model was told.
        text: String,
    },
    /// Older turns were summarised.
    Compaction {
        /// The summary shown in history.
        summary: String,
        /// A title learned at compaction, if any.
        #[serde(default)]
        title: Option<String>,
    },
    /// The workspace's files were put back as a checkpoint recorded them
    /// (`checkpoint.restore`), between turns: the model is told at its next request.
    CheckpointRestored {
        /// The checkpoint: the turn before which the files were recorded.
        checkpoint_id: String,
        /// The files put back, relative to the working directory, at most
        /// `CHECKPOINT_NOTE_PATHS`.
        paths: Vec<String>,
        /// The files put back beyond `paths`.
        more: u64,
        /// What the model is told, replayed on later turns; history never shows it.
        text: String,
    },
    /// The second record of a session forked from another (`session.fork`): the
    /// records that follow, up to the first of this session's own, are the parent's
    /// before the turn it was forked at.
    SessionForked {
        /// The session it was forked from.
        parent_session_id: String,
        /// The turn before which it was forked.
        checkpoint_id: String,
    },
    /// The first record of a subagent's history: the delegated task and the call of the
    /// parent session that delegated it.
    TaskLink {
        /// The task, as the parent's call facts name it.
        task_id: String,
        /// The parent session.
        parent_session_id: String,
        /// The parent's `task` call.
        parent_call_id: String,
        /// The subagent profile.
        profile: String,
    },
    /// The tokens one model request used, as the provider reported them (`null` where
    /// it did not say), and the context window the request was held to.
    Usage {
        /// The turn the request belongs to; none for a compaction a client asked for
        /// between turns (`session.compact`).
        #[serde(default)]
        turn_id: Option<String>,
        /// Input tokens, cached ones included.
        input_tokens: Option<u64>,
        /// Of the input tokens, those read from the provider's prompt cache.
        cached_input_tokens: Option<u64>,
        /// Of the input tokens, those written to the provider's prompt cache, when it
        /// said (older logs lack it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_write_tokens: Option<u64>,
        /// Output tokens, reasoning ones included.
        output_tokens: Option<u64>,
        /// Of the output tokens, those spent reasoning.
        reasoning_tokens: Option<u64>,
        /// The model's context window in tokens.
        context_window: Option<u64>,
        /// The tokens of the window the conversation fills after the request: its input
        /// and output.
        context_used: Option<u64>,
    },
    /// The session's title.
    Title {
        /// The title.
        title: String,
    },
    /// A turn ended.
    TurnFinished {
        /// The turn.
        turn_id: String,
        /// How it ended.
        outcome: TurnOutcome,
        /// The error code of a failed turn.
        #[serde(default)]
        error_code: Option<String>,
    },
    /// Diagnostics are live-only and never stored: a log holding one was not written by
    /// this format's writers, and reading it fails.
    Diagnostic,
    /// A kind this build does not know: skipped when reading.
    #[serde(other)]
    Unknown,
}

impl Record {
    /// A record of the current format version, stamped now.
    pub fn now(session_id: &str, body: RecordBody) -> Record {
        Record {
            v: LOG_FORMAT_VERSION,
            session_id: session_id.to_owned(),
            ts: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_tolerates_unknown_kinds() {
        let record = Record::now(
            "s1",
            RecordBody::UserInput {
                turn_id: "t".into(),
                message_id: "m".into(),
                text: "hi".into(),
                images: Vec::new(),
            },
        );
        let line = serde_json::to_string(&record).unwrap();
        assert!(line.contains("\"kind\":\"user_input\""), "{line}");
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), record);
        assert!(record.ts.ends_with('Z'));

        let future =
            r#"{"v":3,"session_id":"s1","ts":"2026-01-01T00:00:00.000Z","kind":"hologram","x":1}"#;
        assert_eq!(
            serde_json::from_str::<Record>(future).unwrap().body,
            RecordBody::Unknown
        );
        let legacy =
            r#"{"v":1,"session_id":"s1","ts":"2026-01-01T00:00:00.000Z","kind":"session_meta"}"#;
        assert_eq!(
            serde_json::from_str::<Record>(legacy).unwrap().body,
            RecordBody::SessionMeta { cwd: None }
        );
        let broken =
            r#"{"v":1,"session_id":"s1","ts":"2026-01-01T00:00:00.000Z","kind":"user_input"}"#;
        assert!(serde_json::from_str::<Record>(broken).is_err());
    }

    #[test]
    fn a_results_colour_is_kept_plain_is_left_out_and_too_much_is_null() {
        use magi_protocol::cards::{Colour, Style, StyleSpan};
        let red = Style {
            fg: Some(Colour::Indexed(1)),
            ..Style::default()
        };
        let result = |styles: TranscriptStyles| RecordBody::ToolResult {
            turn_id: "t".into(),
            call_id: "c".into(),
            name: "bash".into(),
            outcome: ToolOutcome::Completed,
            summary: "exit 0".into(),
            content: None,
            facts: None,
            protection: None,
            display_id: None,
            transcript: vec!["red".into()],
            transcript_styles: styles,
        };
        for (styles, written) in [
            (
                Some(vec![StyleSpan::new(0, 3, &red)]),
                Some(
                    r#""transcript_styles":[{"start":0,"end":3,"fg":1,"bg":null,"attributes":[]}]"#,
                ),
            ),
            (None, Some(r#""transcript_styles":null"#)),
            (Some(Vec::new()), None),
        ] {
            let record = Record {
                v: 1,
                session_id: "s1".into(),
                ts: "2026-01-01T00:00:00.000Z".into(),
                body: result(styles),
            };
            let json = serde_json::to_string(&record).unwrap();
            match written {
                Some(field) => assert!(json.contains(field), "{json}"),
                None => assert!(!json.contains("transcript_styles"), "{json}"),
            }
            assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), record);
        }
    }
}
