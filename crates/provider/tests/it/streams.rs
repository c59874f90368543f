//! What each wire format's client reports for a well-formed stream from the mock
//! server: text, tool calls reassembled from fragments, reasoning summaries (Responses
//! only), usage and stop reasons.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::{FORMATS, prompt, run, text};
use magi_provider::{ModelEvent, StopReason, WireFormat};
use magi_testkit::{MockServer, Reply, Stop};

#[tokio::test]
async fn text_only() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().text(["Hel", "lo", " world"]).usage(5, 3));
        let (events, result) = run(&server, format, &prompt("hi")).await;
        assert_eq!(result, Ok(()), "{format:?}");
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
                ModelEvent::TextDelta(" world".into()),
                ModelEvent::Usage {
                    input_tokens: 5,
                    output_tokens: 3,
                    cached_input_tokens: None,
                    cache_write_tokens: None,
                    reasoning_tokens: None,
                },
                ModelEvent::Completed(StopReason::EndTurn),
            ],
            "{format:?}"
        );
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn several_tool_calls_in_one_response_are_reassembled() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.enqueue(
            Reply::stream()
                .text(["Let me look."])
                .tool_call(
                    "call_1",
                    "read_file",
                    [r#"{"pa"#, r#"th":"#, r#""src/main.rs"}"#],
                )
                .tool_call("call_2", "list_dir", [r#"{"path""#, r#":"."}"#])
                .tool_call("call_3", "status", Vec::<String>::new())
                .usage(30, 20),
        );
        let (events, result) = run(&server, format, &prompt("look")).await;
        assert_eq!(result, Ok(()), "{format:?}");
        let call = |id: &str, name: &str, arguments: &str| ModelEvent::ToolCall {
            call_id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        };
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("Let me look.".into()),
                call("call_1", "read_file", r#"{"path":"src/main.rs"}"#),
                call("call_2", "list_dir", r#"{"path":"."}"#),
                call("call_3", "status", "{}"),
                ModelEvent::Usage {
                    input_tokens: 30,
                    output_tokens: 20,
                    cached_input_tokens: None,
                    cache_write_tokens: None,
                    reasoning_tokens: None,
                },
                ModelEvent::Completed(StopReason::ToolCalls),
            ],
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn reasoning_summaries_come_only_from_the_responses_api() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.enqueue(
            Reply::stream()
                .reasoning_summary(["Checking ", "the file."])
                .text(["Done."]),
        );
        let (events, result) = run(&server, format, &prompt("think")).await;
        assert_eq!(result, Ok(()));
        let summaries: Vec<&ModelEvent> = events
            .iter()
            .filter(|e| matches!(e, ModelEvent::ReasoningSummary { .. }))
            .collect();
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ReasoningSummaryDelta { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        if format == WireFormat::OpenAiResponses {
            // Streamed as it comes, then whole.
            assert_eq!(streamed, "Checking the file.");
            assert_eq!(
                summaries,
                [&ModelEvent::ReasoningSummary {
                    item_id: Some("rs_0".into()),
                    text: "Checking the file.".into()
                }]
            );
        } else {
            // Chat's `reasoning_content` and Anthropic's thinking are raw reasoning.
            assert!(summaries.is_empty(), "{format:?}: {summaries:?}");
            assert!(streamed.is_empty(), "{format:?}: {streamed:?}");
        }
        assert_eq!(
            text(&events),
            "Done.",
            "{format:?}: reasoning never leaks into text"
        );
    }
}

#[tokio::test]
async fn a_refusal_is_the_reply_and_its_stop_in_every_format() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().refusal(["I can't", " do that."]));
        let (events, result) = run(&server, format, &prompt("do it")).await;
        assert_eq!(result, Ok(()), "{format:?}");
        assert_eq!(text(&events), "I can't do that.", "{format:?}");
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Completed(StopReason::Refusal)),
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn stop_reasons_and_missing_usage() {
    let cases = [
        (Stop::EndTurn, StopReason::EndTurn),
        (Stop::MaxTokens, StopReason::MaxTokens),
        (Stop::Refusal, StopReason::Refusal),
        (Stop::ToolCalls, StopReason::ToolCalls),
    ];
    for format in FORMATS {
        for (stop, expected) in cases {
            let server = MockServer::start().await;
            // No usage scripted: none is reported.
            server.enqueue(Reply::stream().text(["x"]).stop(stop));
            let (events, result) = run(&server, format, &prompt("go")).await;
            assert_eq!(result, Ok(()));
            let reported = if format == WireFormat::OpenAiResponses && stop == Stop::ToolCalls {
                // The Responses API has no tool-call stop reason: with no call made, a
                // completed response is the end of the turn.
                StopReason::EndTurn
            } else {
                expected
            };
            assert_eq!(
                events,
                [
                    ModelEvent::TextDelta("x".into()),
                    ModelEvent::Completed(reported)
                ],
                "{format:?} {stop:?}"
            );
        }
    }
}

#[tokio::test]
async fn an_empty_reply_completes() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().usage(1, 0));
        let (events, result) = run(&server, format, &prompt("...")).await;
        assert_eq!(result, Ok(()));
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Completed(StopReason::EndTurn)),
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn a_long_stream_arrives_whole_and_in_order() {
    for format in FORMATS {
        let server = MockServer::start().await;
        let chunks: Vec<String> = (0..2000).map(|i| format!("w{i} ")).collect();
        server.enqueue(Reply::stream().text(chunks.clone()));
        let (events, result) = run(&server, format, &prompt("long")).await;
        assert_eq!(result, Ok(()));
        assert_eq!(text(&events), chunks.concat(), "{format:?}");
    }
}
