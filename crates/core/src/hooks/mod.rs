//! Hooks (`docs/hooks.md`): the commands the settings run at the agent's lifecycle
//! points, and what their ends mean.
//!
//! [`Hooks`] holds the definitions that may run (global ones, and project ones
//! approved globally; startup leaves the others out), the user's shell and how the
//! backend was invoked. A hook runs on a blocking thread through
//! [`magi_tools::run_hook`] (the process launcher and captures every command uses);
//! [`Fired::take`] reads its end by the exit-code contract: 0 goes on (its stdout a note
//! for the model after `user_prompt_submit` and `session_start`, or a JSON object of
//! finer control), 2 blocks with its stderr as the reason, anything else is an error
//! the person is shown while the work goes on. Everything a hook says is redacted like
//! any output before it reaches the model, the person or the log. The runner's side
//! (activities, the per-event budget, where each event fires) is `runner::hooks`.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use magi_config::{Env, Hook, HookEvent};

use crate::invocation::Invocation;
use magi_protocol::limits::{HOOK_EVENT_OUTPUT_BYTES, HOOK_INPUT_TEXT_BYTES};
use magi_protocol::text::{redact_values, sanitize};
use magi_tools::{HookCommand, HookEnd, HookRun};
use serde_json::{Map, Value};

mod review;
mod schema;

pub use review::{HookReview, HooksReview};
pub(crate) use schema::check_arguments;

/// The hooks one backend child may run.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
    /// `$SHELL` when it is an absolute path; else `bash`.
    shell: Option<OsString>,
    /// The front end that started the backend.
    invocation: Invocation,
}

impl Hooks {
    /// The hooks that may run (already approved), run by the shell `env` names, for
    /// the front end that started the backend.
    pub fn new(hooks: Vec<Hook>, env: &Env, invocation: Invocation) -> Hooks {
        let shell = env
            .get_os("SHELL")
            .filter(|shell| Path::new(shell).is_absolute())
            .map(OsString::from);
        Hooks {
            hooks,
            shell,
            invocation,
        }
    }

    /// The hooks of `event` whose matcher takes `subject` (every hook of the event when
    /// there is none), in the order they run.
    pub(crate) fn matching(&self, event: HookEvent, subject: Option<&str>) -> Vec<Hook> {
        self.hooks
            .iter()
            .filter(|hook| hook.event == event && subject.is_none_or(|s| hook.matches(s)))
            .cloned()
            .collect()
    }

    /// Whether any hook of `event` takes `subject`: without one, nothing of the
    /// event's input is made.
    pub(crate) fn any(&self, event: HookEvent, subject: Option<&str>) -> bool {
        self.hooks
            .iter()
            .any(|hook| hook.event == event && subject.is_none_or(|s| hook.matches(s)))
    }

    /// How the backend was invoked, for a hook's input (a subagent's calls say
    /// `subagent` instead).
    /// Whether no hook is configured.
    pub(crate) fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    pub(crate) fn invocation(&self) -> &'static str {
        self.invocation.name()
    }

    /// Runs one hook with `input` (one JSON object) in `cwd`; blocking.
    pub(crate) fn run(
        &self,
        hook: &Hook,
        input: Vec<u8>,
        cwd: &Path,
        cancelled: &(dyn Fn() -> bool + Sync),
        hidden_env: &[String],
    ) -> HookRun {
        magi_tools::run_hook(&HookCommand {
            command: &hook.command,
            shell: self.shell.as_deref(),
            cwd,
            input,
            timeout: Duration::from_secs(hook.timeout_secs),
            cancelled,
            hidden_env,
        })
    }
}

/// A hook's input: the fields every event has, then the event's own.
pub(crate) fn input(
    event: HookEvent,
    common: &Common<'_>,
    fields: Map<String, Value>,
    secrets: &[String],
) -> Vec<u8> {
    let mut object = Map::new();
    object.insert("event".into(), event.name().into());
    object.insert("session_id".into(), common.session_id.into());
    object.insert(
        "run_id".into(),
        common.run_id.map_or(Value::Null, Value::from),
    );
    object.insert("cwd".into(), common.cwd.to_string_lossy().into());
    object.insert("invocation".into(), common.invocation.into());
    for (key, value) in fields {
        object.insert(key, redact_value(value, secrets));
    }
    let mut bytes = serde_json::to_vec(&Value::Object(object)).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// What every hook's input says of where it runs.
pub(crate) struct Common<'a> {
    pub(crate) session_id: &'a str,
    /// None outside a run (`session.compact`).
    pub(crate) run_id: Option<&'a str>,
    pub(crate) cwd: &'a Path,
    pub(crate) invocation: &'a str,
}

/// Text given to a hook (a prompt, a tool's result): the backend's credentials
/// redacted, at most [`HOOK_INPUT_TEXT_BYTES`].
pub(crate) fn input_text(text: &str, secrets: &[String]) -> Value {
    let text = redact_values(text, secrets);
    if text.len() <= HOOK_INPUT_TEXT_BYTES {
        return text.into();
    }
    let mut end = HOOK_INPUT_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[cut at {HOOK_INPUT_TEXT_BYTES} bytes]", &text[..end]).into()
}

fn redact_value(value: Value, secrets: &[String]) -> Value {
    match value {
        Value::String(text) => Value::String(redact_values(&text, secrets)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| redact_value(v, secrets))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, redact_value(v, secrets)))
                .collect(),
        ),
        other => other,
    }
}

/// What the hooks of one occurrence of an event decided, together.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Fired {
    /// The reason of the first hook that blocked; the later ones did not run.
    pub(crate) blocked: Option<String>,
    /// Text for the model's context, each marked with its event.
    pub(crate) notes: Vec<String>,
    /// Errors the person is shown; the work goes on.
    pub(crate) errors: Vec<String>,
    /// Arguments a `pre_tool_use` hook gave the call instead of the model's (checked
    /// against the tool's schema), as JSON text.
    pub(crate) updated_arguments: Option<String>,
    /// The command of the hook whose block or `updated_arguments` stands.
    pub(crate) decided_by: Option<String>,
    /// Bytes of notes taken, against [`HOOK_EVENT_OUTPUT_BYTES`].
    note_bytes: usize,
    /// The turn was cancelled while a hook ran: nothing more runs.
    pub(crate) cancelled: bool,
}

/// The JSON a hook may print on stdout for finer control.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Control {
    /// `"block"` or `"allow"`.
    decision: Option<String>,
    /// Why, for a block.
    reason: Option<String>,
    /// Text for the model's context (`user_prompt_submit`, `session_start`).
    context: Option<String>,
    /// `pre_tool_use`: the arguments to run the tool with instead.
    updated_arguments: Option<Value>,
}

/// Whether a hook of `event` may block what it runs before.
pub(crate) fn can_block(event: HookEvent) -> bool {
    matches!(event, HookEvent::PreToolUse | HookEvent::UserPromptSubmit)
}

/// Whether `event`'s hooks may add notes to the model's context.
fn takes_notes(event: HookEvent) -> bool {
    matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
}

impl Fired {
    /// Takes in how `hook` ended. `schema` is the tool's argument schema, for a
    /// `pre_tool_use` hook's `updated_arguments`; `secrets` are redacted from
    /// everything taken. Returns whether it went well (for its activity).
    pub(crate) fn take(
        &mut self,
        hook: &Hook,
        run: HookRun,
        schema: Option<&Value>,
        secrets: &[String],
    ) -> bool {
        let event = hook.event;
        let safe = |text: &str| redact_values(&sanitize(text), secrets);
        let who = format!(
            "{} hook `{}` ({})",
            event.name(),
            hook.command,
            hook.place()
        );
        match run.end {
            HookEnd::Exited(0) => self.take_stdout(hook, &safe(&run.stdout), schema, &who),
            HookEnd::Exited(2) => {
                let reason = safe(run.stderr.trim());
                let reason = if reason.is_empty() {
                    format!("blocked by {who}, which gave no reason")
                } else {
                    reason
                };
                if can_block(event) {
                    self.blocked = Some(reason);
                    self.decided_by = Some(hook.command.clone());
                    true
                } else {
                    self.errors.push(format!(
                        "{who} exited 2, but {} cannot be blocked: {reason}",
                        event.name()
                    ));
                    false
                }
            }
            HookEnd::Exited(code) => {
                self.error(&who, &format!("exited {code}"), &safe(&run.stderr));
                false
            }
            HookEnd::Signalled(signal) => {
                self.error(&who, &format!("ended by {signal}"), &safe(&run.stderr));
                false
            }
            HookEnd::TimedOut => {
                let why = format!(
                    "did not finish within {}s and was killed",
                    hook.timeout_secs
                );
                self.error(&who, &why, &safe(&run.stderr));
                false
            }
            HookEnd::Cancelled => {
                self.cancelled = true;
                false
            }
            HookEnd::NotStarted(why) => {
                self.error(&who, "could not start", &safe(&why));
                false
            }
        }
    }

    fn error(&mut self, who: &str, what: &str, stderr: &str) {
        match stderr.lines().map(str::trim).find(|l| !l.is_empty()) {
            Some(line) => self.errors.push(format!("{who} {what}: {line}")),
            None => self.errors.push(format!("{who} {what}")),
        }
    }

    /// A hook that exited 0: a JSON object on stdout is control, other text a note
    /// where its event takes notes.
    fn take_stdout(
        &mut self,
        hook: &Hook,
        stdout: &str,
        schema: Option<&Value>,
        who: &str,
    ) -> bool {
        let trimmed = stdout.trim();
        if !trimmed.starts_with('{') {
            if !trimmed.is_empty() && takes_notes(hook.event) {
                self.note(hook.event, trimmed);
            }
            return true;
        }
        let control: Control = match serde_json::from_str(trimmed) {
            Ok(control) => control,
            Err(e) => {
                self.errors
                    .push(format!("{who} printed JSON that is not hook output: {e}"));
                return false;
            }
        };
        if let Some(context) = control.context.as_deref().filter(|c| !c.trim().is_empty())
            && takes_notes(hook.event)
        {
            self.note(hook.event, context.trim());
        }
        if let Some(arguments) = control.updated_arguments {
            if hook.event != HookEvent::PreToolUse {
                self.errors.push(format!(
                    "{who} gave updated_arguments, which only pre_tool_use hooks may"
                ));
                return false;
            }
            let checked = match schema {
                Some(schema) => check_arguments(&arguments, schema),
                None => Err("the tool's argument schema is not known".to_owned()),
            };
            match checked {
                Ok(()) => {
                    self.updated_arguments = Some(arguments.to_string());
                    self.decided_by = Some(hook.command.clone());
                }
                Err(why) => {
                    self.errors.push(format!(
                        "{who} gave updated_arguments the tool does not take ({why}); \
                         the model's arguments are used"
                    ));
                    return false;
                }
            }
        }
        match control.decision.as_deref() {
            None | Some("allow") => true,
            Some("block") if can_block(hook.event) => {
                let reason = control.reason.unwrap_or_default();
                self.decided_by = Some(hook.command.clone());
                self.blocked = Some(if reason.trim().is_empty() {
                    format!("blocked by {who}, which gave no reason")
                } else {
                    reason.trim().to_owned()
                });
                true
            }
            Some(other) => {
                self.errors.push(format!(
                    "{who} gave decision {other:?}; {} takes \"allow\"{}",
                    hook.event.name(),
                    if can_block(hook.event) {
                        " or \"block\""
                    } else {
                        ""
                    }
                ));
                false
            }
        }
    }

    /// Adds a note for the model within the event's budget, marked as a hook's.
    fn note(&mut self, event: HookEvent, text: &str) {
        let room = HOOK_EVENT_OUTPUT_BYTES.saturating_sub(self.note_bytes);
        if room == 0 {
            self.errors.push(format!(
                "{} hook output past {HOOK_EVENT_OUTPUT_BYTES} bytes was not given to the model",
                event.name()
            ));
            return;
        }
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.note_bytes += end;
        let cut = if end < text.len() {
            "\n[cut: the event's hook output budget is spent]"
        } else {
            ""
        };
        self.notes.push(format!(
            "<hook_note event=\"{}\">\n{}{cut}\n</hook_note>",
            event.name(),
            &text[..end]
        ));
    }
}

#[cfg(test)]
mod tests;
