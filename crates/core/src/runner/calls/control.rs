//! `magi_control`: the session's agent looks at or steers its own session. `usage`
//! answers from the usage records the session log holds, `compact` asks for
//! compaction before the agent's next model request (taken by the round trip), and
//! `title` records the session's title. The call's facts keep only what is public of
//! the answer (the card's rows); the model alone is given the text.

use magi_protocol::text::redact_values;
use magi_store::records::{Record, RecordBody};
use magi_tools::facts::{ControlStatus, Facts, TokenSum, UsageFigures};
use magi_tools::{ControlRequest, ToolOutput, ToolReport};

use super::{Call, CallService};
use crate::cards::{context_used, tokens};
use crate::discovery::safe_title;

impl CallService<'_, '_> {
    /// Runs a `magi_control` call of the session's agent.
    pub(super) fn control(&mut self, call: &Call) -> ToolReport {
        let request = match magi_tools::parse_control(&call.arguments) {
            Ok(request) => request,
            Err(why) => return failed("invalid arguments", why),
        };
        if !self.journal.is_session() {
            // Never offered to a subagent; its journal is not the session's.
            return failed(
                "not offered",
                "magi_control belongs to the session's own agent.".into(),
            );
        }
        let operation = request.operation();
        let (content, status, usage, title, title_cut) = match request {
            ControlRequest::Usage => {
                let records = match self.journal.session_records() {
                    Some(Ok(records)) => records,
                    _ => {
                        return failed(
                            "usage unavailable",
                            "The session log could not be read, so its usage is not known.".into(),
                        );
                    }
                };
                let window = self.agent.context_window_tokens.map(|w| w as u64);
                let figures = usage_figures(&records, window);
                (
                    usage_text(&figures),
                    ControlStatus::Answered,
                    Some(figures),
                    None,
                    None,
                )
            }
            ControlRequest::Compact => {
                let (status, content) = if self.journal.request_compaction() {
                    (
                        ControlStatus::CompactionRequested,
                        "Compaction will run before your next model request: the \
                         conversation so far is summarised and you continue from the \
                         summary. If the turn ends first, nothing is compacted.",
                    )
                } else {
                    (
                        ControlStatus::AlreadyRequested,
                        "Compaction was already requested; it runs once, before your next \
                         model request.",
                    )
                };
                (content.to_owned(), status, None, None, None)
            }
            ControlRequest::Title(given) => {
                // Redacted first, so a credential is never cut into something that no
                // longer looks like one.
                let redacted = redact_values(&given, &self.agent.secrets);
                let (kept, cut) = magi_tools::cut_title(&redacted);
                let Some(title) = safe_title(&kept) else {
                    return failed(
                        "invalid title",
                        "The title was not set: it is empty, holds control characters or \
                         line breaks, or looks like a credential. Give one line of plain \
                         text."
                            .into(),
                    );
                };
                let (status, mut content) = if self.journal.record_title(title.clone()) {
                    (
                        ControlStatus::TitleSet,
                        format!("The session's title is now {title:?}."),
                    )
                } else {
                    (
                        ControlStatus::TitleNotRecorded,
                        "The title could not be recorded in the session log.".to_owned(),
                    )
                };
                if cut > 0 {
                    content.push_str(&format!(
                        " The title given was cut to {} characters ({cut} left out).",
                        magi_protocol::limits::TITLE_CHARS
                    ));
                }
                (content, status, None, Some(title), Some(cut as u64))
            }
        };
        let is_error = status == ControlStatus::TitleNotRecorded;
        let facts = Facts::Control {
            operation: operation.to_owned(),
            status,
            usage,
            title: title.filter(|_| !is_error),
            title_cut,
        };
        ToolReport::with_facts(
            ToolOutput {
                content,
                summary: format!("{operation}: {}", crate::cards::status_label(status)),
                is_error,
            },
            facts,
        )
    }
}

fn failed(summary: &str, content: String) -> ToolReport {
    ToolReport::from(ToolOutput {
        content,
        summary: summary.to_owned(),
        is_error: true,
    })
}

/// The session's usage from its records: each `usage` record is one model request of
/// the session's agent (its compactions included; a subagent's requests are in its own
/// history, a title request is not recorded), each `tool_call` record one call. The
/// context used is the latest request's that reported it; the window is `window`, the
/// current model's, else that request's.
pub(super) fn usage_figures(records: &[Record], window: Option<u64>) -> UsageFigures {
    fn add(sum: &mut Option<TokenSum>, value: Option<u64>) {
        if let Some(value) = value {
            let sum = sum.get_or_insert(TokenSum {
                tokens: 0,
                requests: 0,
            });
            sum.tokens = sum.tokens.saturating_add(value);
            sum.requests += 1;
        }
    }
    let mut figures = UsageFigures::default();
    let mut recorded_window = None;
    for record in records {
        match &record.body {
            RecordBody::Usage {
                input_tokens,
                cached_input_tokens,
                output_tokens,
                reasoning_tokens,
                context_window,
                context_used,
                ..
            } => {
                figures.model_requests += 1;
                add(&mut figures.input_tokens, *input_tokens);
                add(&mut figures.cached_input_tokens, *cached_input_tokens);
                add(&mut figures.output_tokens, *output_tokens);
                add(&mut figures.reasoning_tokens, *reasoning_tokens);
                if context_used.is_some() {
                    figures.context_used = *context_used;
                    recorded_window = *context_window;
                }
            }
            RecordBody::ToolCall { .. } => figures.tool_calls += 1,
            _ => {}
        }
    }
    figures.context_window = window.or(recorded_window);
    figures
}

/// What the model is told of the usage: the card's figures, one per line.
fn usage_text(figures: &UsageFigures) -> String {
    let requests = figures.model_requests;
    let figure =
        |sum: Option<TokenSum>| tokens(sum, requests).unwrap_or_else(|| "not reported".to_owned());
    let window = figures
        .context_window
        .map_or_else(|| "not known".to_owned(), |w| format!("{w} tokens"));
    let used = figures.context_used.map_or_else(
        || "not reported".to_owned(),
        |used| context_used(used, figures.context_window),
    );
    format!(
        "Usage of this session so far, as the provider reported it for each model \
         request:\nmodel requests: {requests}\ntool calls: {}\ninput tokens: {}\ncached \
         input tokens: {}\noutput tokens: {}\nreasoning tokens: {}\ncontext window: \
         {window}\ncontext used after the latest request: {used}",
        figures.tool_calls,
        figure(figures.input_tokens),
        figure(figures.cached_input_tokens),
        figure(figures.output_tokens),
        figure(figures.reasoning_tokens),
    )
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    fn usage(input: Option<u64>, cached: Option<u64>, used: Option<u64>) -> Record {
        Record::now(
            "s",
            RecordBody::Usage {
                turn_id: Some("t".into()),
                input_tokens: input,
                cached_input_tokens: cached,
                cache_write_tokens: None,
                output_tokens: input.map(|_| 5),
                reasoning_tokens: None,
                context_window: Some(1_000),
                context_used: used,
            },
        )
    }

    #[test]
    fn figures_sum_what_was_reported_and_keep_unreported_ones_unknown() {
        let call = Record::now(
            "s",
            RecordBody::ToolCall {
                turn_id: "t".into(),
                call_id: "c1".into(),
                name: "magi_control".into(),
                summary: "magi_control".into(),
                arguments: None,
                parent_call_id: None,
                sequence: None,
            },
        );
        let records = [
            usage(Some(100), Some(40), Some(105)),
            call,
            usage(None, None, None),
            usage(Some(20), None, Some(130)),
        ];
        let figures = usage_figures(&records, None);
        assert_eq!(figures.model_requests, 3);
        assert_eq!(figures.tool_calls, 1);
        assert_eq!(
            figures.input_tokens,
            Some(TokenSum {
                tokens: 120,
                requests: 2
            })
        );
        assert_eq!(
            figures.cached_input_tokens,
            Some(TokenSum {
                tokens: 40,
                requests: 1
            })
        );
        assert_eq!(figures.reasoning_tokens, None);
        // The latest request that reported it, and its window without a current one.
        assert_eq!(
            (figures.context_used, figures.context_window),
            (Some(130), Some(1_000))
        );
        assert_eq!(
            usage_figures(&records, Some(8_000)).context_window,
            Some(8_000)
        );
        let text = usage_text(&figures);
        assert!(
            text.contains("input tokens: 120 tokens; reported by 2 of 3 requests"),
            "{text}"
        );
        assert!(text.contains("reasoning tokens: not reported"), "{text}");
        assert!(text.contains("130 tokens (13.0% of the window)"), "{text}");
        let empty = usage_figures(&[], None);
        assert_eq!(empty, UsageFigures::default());
        assert!(usage_text(&empty).contains("context window: not known"));
    }
}
