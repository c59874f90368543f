//! The blocks of a `magi_control` card: the operation, how the request stands, and the
//! public figures of its answer (the recorded usage, the title set). The result text
//! the model was given and a compaction's summary never reach a card.

use magi_protocol::cards::{STRING_BYTES, Subject};
use magi_protocol::limits::TITLE_CHARS;
use magi_tools::facts::{ControlStatus, TokenSum, UsageFigures};

use super::blocks::Context;
use super::labels::{
    ROW_CACHED_INPUT_TOKENS, ROW_CONTEXT_USED, ROW_CONTEXT_WINDOW, ROW_INPUT_TOKENS,
    ROW_MODEL_REQUESTS, ROW_OPERATION, ROW_OUTPUT_TOKENS, ROW_REASONING_TOKENS, ROW_REQUEST_STATUS,
    ROW_TITLE, ROW_TITLE_CUT, ROW_TOOL_CALLS,
};
use super::part::{Part, row};
use super::text::{Notes, counted};

impl Context<'_, '_> {
    pub(super) fn control(
        &self,
        operation: &str,
        status: ControlStatus,
        usage: Option<&UsageFigures>,
        title: Option<&str>,
        title_cut: Option<u64>,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let mut rows = vec![
            row(
                ROW_OPERATION,
                Some(notes.text(Subject::Text, operation, STRING_BYTES)),
            ),
            row(ROW_REQUEST_STATUS, Some(status_label(status).to_owned())),
        ];
        if let Some(usage) = usage {
            let requests = usage.model_requests;
            rows.extend([
                row(ROW_INPUT_TOKENS, tokens(usage.input_tokens, requests)),
                row(
                    ROW_CACHED_INPUT_TOKENS,
                    tokens(usage.cached_input_tokens, requests),
                ),
                row(ROW_OUTPUT_TOKENS, tokens(usage.output_tokens, requests)),
                row(
                    ROW_REASONING_TOKENS,
                    tokens(usage.reasoning_tokens, requests),
                ),
                row(
                    ROW_CONTEXT_WINDOW,
                    usage.context_window.map(|n| counted(n, "token", "tokens")),
                ),
                row(
                    ROW_CONTEXT_USED,
                    usage
                        .context_used
                        .map(|used| context_used(used, usage.context_window)),
                ),
                row(
                    ROW_MODEL_REQUESTS,
                    Some(counted(requests, "request", "requests")),
                ),
                row(
                    ROW_TOOL_CALLS,
                    Some(counted(usage.tool_calls, "call", "calls")),
                ),
            ]);
        }
        if operation == "title" {
            rows.push(row(
                ROW_TITLE,
                title.map(|t| notes.text(Subject::Text, t, STRING_BYTES)),
            ));
            rows.push(row(
                ROW_TITLE_CUT,
                title_cut.map(|cut| match cut {
                    0 => "no".to_owned(),
                    n => format!(
                        "{} left out to fit {TITLE_CHARS}",
                        counted(n, "character", "characters")
                    ),
                }),
            ));
        }
        vec![Part::results(rows, notes)]
    }
}

/// The fixed words of a request's status.
pub(crate) fn status_label(status: ControlStatus) -> &'static str {
    match status {
        ControlStatus::Answered => "answered from the session log",
        ControlStatus::CompactionRequested => {
            "compaction requested; runs before the next model request"
        }
        ControlStatus::AlreadyRequested => {
            "already requested; runs once, before the next model request"
        }
        ControlStatus::TitleSet => "title set",
        ControlStatus::TitleNotRecorded => "not recorded",
    }
}

/// A token figure: `N tokens`, with how many of the `requests` reported it when not all
/// did; none when none did.
pub(crate) fn tokens(sum: Option<TokenSum>, requests: u64) -> Option<String> {
    let sum = sum?;
    let figure = counted(sum.tokens, "token", "tokens");
    Some(if sum.requests >= requests {
        figure
    } else {
        format!(
            "{figure}; reported by {} of {requests} requests",
            sum.requests
        )
    })
}

/// The context used: `N tokens (P.p% of the window)`, rounded down to a tenth of a
/// percent; the count alone when the window is not known.
pub(crate) fn context_used(used: u64, window: Option<u64>) -> String {
    let figure = counted(used, "token", "tokens");
    match window.filter(|w| *w > 0) {
        Some(window) => {
            let permille = u128::from(used) * 1000 / u128::from(window);
            format!(
                "{figure} ({}.{}% of the window)",
                permille / 10,
                permille % 10
            )
        }
        None => figure,
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use magi_protocol::cards::{
        Availability, Block, Changes, Origin, ToolKind, serialized_len, validate,
    };
    use magi_store::records::ToolOutcome;
    use magi_tools::facts::Facts;

    use super::*;
    use crate::cards::{CardSource, PreviewSource, Settlement, TranscriptStyles, project};

    fn card(
        facts: Option<&serde_json::Value>,
        settlement: Settlement,
    ) -> magi_protocol::cards::Card {
        project(&CardSource {
            activity_id: "tool-1",
            origin: Origin::Saved,
            revision: 0,
            tool_name: "magi_control",
            label: "magi_control",
            working_directory: None,
            settlement,
            facts,
            protection: None,
            awaiting_approval: false,
            preview: PreviewSource::NotApplicable,
            parent_activity_id: None,
            task_id: None,
            children: None,
            transcript: &[],
            transcript_styles: TranscriptStyles::Off,
            hook: None,
        })
    }

    fn rows(card: &magi_protocol::cards::Card) -> Vec<(String, Option<String>)> {
        match card.blocks.as_slice() {
            [Block::Results(results)] => results
                .rows
                .iter()
                .map(|r| (r.label.clone(), r.value.clone()))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_usage_card_shows_the_figures_and_a_title_card_the_title() {
        let settled = Settlement::Settled {
            outcome: ToolOutcome::Completed,
            summary: "usage: answered from the session log",
        };
        let usage = serde_json::to_value(Facts::Control {
            operation: "usage".into(),
            status: ControlStatus::Answered,
            usage: Some(UsageFigures {
                model_requests: 2,
                tool_calls: 1,
                input_tokens: Some(TokenSum {
                    tokens: 95,
                    requests: 2,
                }),
                cached_input_tokens: None,
                output_tokens: Some(TokenSum {
                    tokens: 9,
                    requests: 2,
                }),
                reasoning_tokens: Some(TokenSum {
                    tokens: 4,
                    requests: 1,
                }),
                context_window: Some(32_768),
                context_used: Some(58),
            }),
            title: None,
            title_cut: None,
        })
        .unwrap();
        let shown = card(Some(&usage), settled);
        validate(&shown).unwrap();
        assert!(serialized_len(&shown) <= magi_protocol::cards::CARD_BYTES);
        assert_eq!(
            (shown.tool_kind, shown.changes, shown.detail.availability),
            (
                ToolKind::Other,
                Changes::NotApplicable,
                Availability::Complete
            )
        );
        let expected: Vec<(String, Option<String>)> = [
            ("Operation", Some("usage")),
            ("Request status", Some("answered from the session log")),
            ("Input tokens", Some("95 tokens")),
            ("Cached input tokens", None),
            ("Output tokens", Some("9 tokens")),
            (
                "Reasoning tokens",
                Some("4 tokens; reported by 1 of 2 requests"),
            ),
            ("Context window", Some("32768 tokens")),
            ("Context used", Some("58 tokens (0.1% of the window)")),
            ("Model requests", Some("2 requests")),
            ("Tool calls", Some("1 call")),
        ]
        .into_iter()
        .map(|(l, v)| (l.to_owned(), v.map(str::to_owned)))
        .collect();
        assert_eq!(rows(&shown), expected);

        let title = serde_json::to_value(Facts::Control {
            operation: "title".into(),
            status: ControlStatus::TitleSet,
            usage: None,
            title: Some("Parser work".into()),
            title_cut: Some(3),
        })
        .unwrap();
        let shown = card(Some(&title), settled);
        validate(&shown).unwrap();
        assert_eq!(
            rows(&shown)[1..],
            [
                ("Request status".to_owned(), Some("title set".to_owned())),
                ("Title".to_owned(), Some("Parser work".to_owned())),
                (
                    "Title cut".to_owned(),
                    Some("3 characters left out to fit 50".to_owned())
                ),
            ]
        );
    }

    #[test]
    fn a_running_card_has_no_detail_by_design() {
        let shown = card(None, Settlement::Running);
        validate(&shown).unwrap();
        assert_eq!(shown.detail.availability, Availability::None);
        assert!(shown.blocks.is_empty() && shown.omissions.is_empty());
    }

    #[test]
    fn figures_say_how_many_requests_reported_them_and_the_share_is_rounded_down() {
        assert_eq!(tokens(None, 3), None);
        let all = TokenSum {
            tokens: 120,
            requests: 3,
        };
        assert_eq!(tokens(Some(all), 3).as_deref(), Some("120 tokens"));
        let some = TokenSum {
            tokens: 1,
            requests: 1,
        };
        assert_eq!(
            tokens(Some(some), 3).as_deref(),
            Some("1 token; reported by 1 of 3 requests")
        );
        assert_eq!(
            context_used(150, Some(32_768)),
            "150 tokens (0.4% of the window)"
        );
        assert_eq!(
            context_used(32_768, Some(32_768)),
            "32768 tokens (100.0% of the window)"
        );
        assert_eq!(context_used(7, None), "7 tokens");
        assert_eq!(context_used(7, Some(0)), "7 tokens");
    }
}
