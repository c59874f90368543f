//! How each client fails: retries before output and none after, status codes mapped to
//! safe errors, credentials never echoed, broken and malformed streams, cancellation
//! and a receiver that went away.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::time::Duration;

use crate::common::{BOUND, FORMATS, KEY, endpoint, prompt, run, run_full, run_with, text};
use magi_provider::{
    Asked, Cause, Endpoint, MAX_ATTEMPTS, ModelEvent, ProviderError, Retry, StopReason, WireFormat,
    client,
};
use magi_testkit::{MockServer, Reply};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_500_then_success_is_retried() {
    for format in FORMATS {
        let server = MockServer::start().await;
        // No Retry-After: the client's own backoff applies.
        server.enqueue(Reply::error(500, r#"{"error":"boom"}"#));
        server.enqueue(Reply::stream().text(["recovered"]));
        let (events, result) = run(&server, format, &prompt("hi")).await;
        assert_eq!(result, Ok(()), "{format:?}");
        assert_eq!(text(&events), "recovered");
        assert_eq!(server.requests().len(), 2);
        // The retry is the same request.
        let requests = server.requests();
        assert_eq!(requests[0].body, requests[1].body);
    }
}

#[tokio::test]
async fn an_empty_queue_500_is_retried_until_the_attempts_run_out() {
    let server = MockServer::start().await;
    let (events, result) = run(&server, WireFormat::ChatCompletions, &prompt("hi")).await;
    assert_eq!(result, Err(ProviderError::ServerError));
    assert!(events.is_empty());
    assert_eq!(server.requests().len(), MAX_ATTEMPTS as usize);
}

#[tokio::test]
async fn a_disconnect_after_output_started_is_not_retried() {
    for format in FORMATS {
        let server = MockServer::start().await;
        // Past the opening events and into the text, wherever each format puts it.
        let cut = match format {
            WireFormat::OpenAiResponses | WireFormat::CodexResponses => 6,
            WireFormat::ChatCompletions => 3,
            WireFormat::AnthropicMessages => 5,
        };
        server.enqueue(
            Reply::stream()
                .text(["one", "two", "three", "four"])
                .disconnect_after(cut),
        );
        server.enqueue(Reply::stream().text(["must not be fetched"]));
        let (events, result) = run(&server, format, &prompt("hi")).await;
        assert_eq!(result, Err(ProviderError::MalformedStream), "{format:?}");
        assert_eq!(
            text(&events),
            "onetwo",
            "{format:?}: what arrived was forwarded"
        );
        assert!(!events.iter().any(|e| matches!(e, ModelEvent::Completed(_))));
        assert_eq!(
            server.requests().len(),
            1,
            "{format:?}: no retry after output"
        );
    }
}

#[tokio::test]
async fn a_disconnect_before_any_event_is_retried() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().text(["x"]).disconnect_after(0));
        server.enqueue(Reply::stream().text(["whole"]));
        let (events, result) = run_full(endpoint(&server, format, None), &prompt("hi")).await;
        assert_eq!(result, Ok(()), "{format:?}");
        let ModelEvent::Retrying(retry) = &events[0] else {
            panic!("{format:?}: no retry notice first: {events:?}");
        };
        assert_eq!(retry.failure.cause, Cause::StreamCut);
        assert_eq!((retry.attempt, retry.attempts), (2, MAX_ATTEMPTS));
        assert_eq!(text(&events), "whole");
        assert_eq!(server.requests().len(), 2);
    }
}

#[tokio::test]
async fn a_stream_that_keeps_breaking_off_is_a_malformed_stream() {
    let server = MockServer::start().await;
    for _ in 0..MAX_ATTEMPTS {
        server.enqueue(
            Reply::stream()
                .text(["x"])
                .disconnect_after(0)
                .header("retry-after", "0"),
        );
    }
    let (events, result) = run(&server, WireFormat::ChatCompletions, &prompt("hi")).await;
    assert_eq!(result, Err(ProviderError::MalformedStream));
    assert!(events.is_empty());
    assert_eq!(server.requests().len(), MAX_ATTEMPTS as usize);
}

#[tokio::test]
async fn each_retry_is_told_with_its_wait_and_attempt() {
    let server = MockServer::start().await;
    server.enqueue(Reply::error(429, "{}").header("retry-after", "0"));
    server.enqueue(Reply::error(503, "{}").header("retry-after-ms", "10"));
    server.enqueue(Reply::stream().text(["done"]));
    let endpoint = endpoint(&server, WireFormat::OpenAiResponses, Some(KEY));
    let (events, result) = run_full(endpoint, &prompt("hi")).await;
    assert_eq!(result, Ok(()));
    let retries: Vec<&Retry> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Retrying(retry) => Some(retry),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[0].failure.cause, Cause::Status(429));
    assert_eq!(retries[0].wait, Duration::ZERO);
    assert_eq!((retries[0].attempt, retries[0].attempts), (2, 5));
    assert_eq!(retries[1].failure.cause, Cause::Status(503));
    assert_eq!(retries[1].wait, Duration::from_millis(10));
    assert_eq!(retries[1].attempt, 3);
    let asked = Asked {
        provider: "openai",
        model: "m",
        credential: Some("OPENAI_API_KEY"),
    };
    let said = retries[1].describe(&asked);
    assert!(
        said.ends_with("failed with HTTP 503; retrying in 0.0s (3/5)"),
        "{said}"
    );
}

#[tokio::test]
async fn a_404_names_the_models_the_server_lists() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.set_models([("alpha", None), ("beta", None)]);
        server.enqueue(Reply::error(404, "{}"));
        let (_, result) = run_full(endpoint(&server, format, Some(KEY)), &prompt("hi")).await;
        let failure = result.unwrap_err();
        assert_eq!(failure.error, ProviderError::Rejected);
        assert_eq!(failure.cause, Cause::Status(404));
        assert_eq!(
            failure.listed_models,
            Some(vec!["alpha".to_owned(), "beta".to_owned()]),
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn a_rate_limit_with_a_long_wait_reports_the_wait() {
    let server = MockServer::start().await;
    server.enqueue(Reply::error(429, "{}").header("retry-after", "3600"));
    let endpoint = endpoint(&server, WireFormat::ChatCompletions, None);
    let (_, result) = run_full(endpoint, &prompt("hi")).await;
    let failure = result.unwrap_err();
    assert_eq!(failure.retry_after, Some(Duration::from_secs(3600)));
    assert_eq!(failure.attempts, 1);
}

#[tokio::test]
async fn rate_limits_are_retried_then_reported() {
    for format in FORMATS {
        let server = MockServer::start().await;
        for _ in 0..MAX_ATTEMPTS {
            server
                .enqueue(Reply::error(429, r#"{"error":"slow down"}"#).header("retry-after", "0"));
        }
        server.enqueue(Reply::stream().text(["too late"]));
        let (events, result) = run(&server, format, &prompt("hi")).await;
        assert_eq!(result, Err(ProviderError::RateLimited), "{format:?}");
        assert!(events.is_empty());
        assert_eq!(server.requests().len(), MAX_ATTEMPTS as usize);
    }
}

#[tokio::test]
async fn a_retry_after_beyond_the_bound_is_not_waited_for() {
    let server = MockServer::start().await;
    server.enqueue(Reply::error(429, "{}").header("retry-after", "3600"));
    let (_, result) = run(&server, WireFormat::OpenAiResponses, &prompt("hi")).await;
    assert_eq!(result, Err(ProviderError::RateLimited));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn refused_credentials_and_rejected_requests_are_not_retried() {
    let cases = [
        (401, ProviderError::AuthenticationFailed),
        (403, ProviderError::AuthenticationFailed),
        (400, ProviderError::Rejected),
        (404, ProviderError::Rejected),
    ];
    for format in FORMATS {
        for (status, expected) in cases {
            let server = MockServer::start().await;
            server.enqueue(Reply::error(status, r#"{"error":{"message":"no"}}"#));
            let (events, result) = run(&server, format, &prompt("hi")).await;
            assert_eq!(result, Err(expected), "{format:?} {status}");
            assert!(events.is_empty());
            // A 404 looks up the model list too, to say what the server has.
            let posts = server
                .requests()
                .iter()
                .filter(|r| r.method == "POST")
                .count();
            assert_eq!(posts, 1, "{format:?} {status}");
        }
    }
}

#[tokio::test]
async fn a_key_echoed_in_an_error_body_never_surfaces() {
    let echo = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","code":"invalid_api_key"}}}}"#
    );
    for format in FORMATS {
        for status in [401, 400, 500, 429] {
            let server = MockServer::start().await;
            for _ in 0..MAX_ATTEMPTS {
                server.enqueue(Reply::error(status, echo.clone()).header("retry-after", "0"));
            }
            let (events, result) = run(&server, format, &prompt("hi")).await;
            let error = result.unwrap_err();
            for shown in [
                format!("{error}"),
                format!("{error:?}"),
                format!("{result:?}"),
                format!("{events:?}"),
            ] {
                assert!(!shown.contains(KEY), "{format:?} {status}: {shown}");
                assert!(
                    !shown.contains("Incorrect API key"),
                    "{format:?} {status}: {shown}"
                );
            }
        }
    }
}

#[tokio::test]
async fn the_endpoint_and_client_never_show_the_key() {
    let server = MockServer::start().await;
    for format in FORMATS {
        let endpoint = endpoint(&server, format, Some(KEY));
        assert!(!format!("{endpoint:?}").contains(KEY));
    }
}

#[tokio::test]
async fn malformed_sse_is_a_malformed_stream() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().text(["a", "b"]).malformed_after(3));
        server.enqueue(Reply::stream().text(["must not be fetched"]));
        let (events, result) = run(&server, format, &prompt("hi")).await;
        assert_eq!(result, Err(ProviderError::MalformedStream), "{format:?}");
        assert!(!events.iter().any(|e| matches!(e, ModelEvent::Completed(_))));
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn an_unreachable_provider_is_unavailable_after_the_retries() {
    // A port that was just free: nothing listens there any more.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let endpoint = Endpoint {
        format: WireFormat::ChatCompletions,
        base_url: format!("http://127.0.0.1:{port}/v1"),
        api_key: None,
    };
    let (events, result) = run_full(endpoint, &prompt("hi")).await;
    let failure = result.unwrap_err();
    assert_eq!(failure.error, ProviderError::Unavailable);
    assert_eq!(failure.cause, Cause::ConnectionRefused);
    assert_eq!(
        failure.url,
        format!("http://127.0.0.1:{port}/v1/chat/completions")
    );
    // Refused connections are not retried: nothing is told but the failure.
    assert!(events.is_empty());
}

#[tokio::test]
async fn a_base_url_that_does_not_parse_is_unavailable() {
    let endpoint = Endpoint {
        format: WireFormat::OpenAiResponses,
        base_url: "not a url".to_owned(),
        api_key: None,
    };
    let (_, result) = run_with(endpoint, &prompt("hi")).await;
    assert_eq!(result, Err(ProviderError::Unavailable));
}

#[tokio::test]
async fn a_key_that_cannot_be_a_header_is_refused_without_showing_it() {
    let server = MockServer::start().await;
    let mut endpoint = endpoint(&server, WireFormat::AnthropicMessages, None);
    endpoint.api_key = Some("bad\nkey".to_owned());
    let (_, result) = run_with(endpoint, &prompt("hi")).await;
    assert_eq!(result, Err(ProviderError::AuthenticationFailed));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn cancelling_a_slow_stream_returns_promptly() {
    for format in FORMATS {
        let server = MockServer::start().await;
        // Held before its end, the stream alone never ends: only the cancellation can
        // end it within the bound below.
        let chunks: Vec<String> = (0..200).map(|i| format!("{i} ")).collect();
        server.enqueue(Reply::stream().text(chunks).held());
        let client = client(endpoint(&server, format, Some(KEY)));
        let request = prompt("slow");
        let cancel = CancellationToken::new();
        let (tx, mut rx) = mpsc::channel(16);
        let stream = client.stream(&request, tx, &cancel);
        let watcher = async {
            // Cancel once output has started: the first delta is the signal.
            let first = rx.recv().await;
            cancel.cancel();
            first
        };
        let (result, first) = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(stream, watcher)
        })
        .await
        .expect("cancellation ended the stream within the bound");
        assert_eq!(
            result.map_err(|f| f.error),
            Err(ProviderError::Cancelled),
            "{format:?}"
        );
        assert_eq!(first, Some(ModelEvent::TextDelta("0 ".into())));
    }
}

#[tokio::test]
async fn a_token_cancelled_before_the_call_sends_nothing() {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["x"]));
    let client = client(endpoint(&server, WireFormat::ChatCompletions, None));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (tx, _rx) = mpsc::channel(1);
    let result = tokio::time::timeout(BOUND, client.stream(&prompt("hi"), tx, &cancel))
        .await
        .unwrap();
    assert_eq!(result.map_err(|f| f.error), Err(ProviderError::Cancelled));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_receiver_that_went_away_ends_the_stream_quietly() {
    for format in FORMATS {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().text(["a", "b"]));
        let client = client(endpoint(&server, format, None));
        let cancel = CancellationToken::new();
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        let result = tokio::time::timeout(BOUND, client.stream(&prompt("hi"), tx, &cancel))
            .await
            .unwrap();
        assert_eq!(
            result.map_err(|f| f.error),
            Err(ProviderError::Cancelled),
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn one_client_serves_several_requests() {
    let server = MockServer::start().await;
    let client = client(endpoint(&server, WireFormat::OpenAiResponses, Some(KEY)));
    for n in 0..3 {
        server.enqueue(Reply::stream().text([format!("reply {n}")]));
        let cancel = CancellationToken::new();
        let (tx, mut rx) = mpsc::channel(16);
        let result = tokio::time::timeout(BOUND, client.stream(&prompt("hi"), tx, &cancel))
            .await
            .unwrap();
        assert_eq!(result, Ok(()));
        assert_eq!(
            rx.recv().await,
            Some(ModelEvent::TextDelta(format!("reply {n}")))
        );
        assert_eq!(
            rx.recv().await,
            Some(ModelEvent::Completed(StopReason::EndTurn))
        );
    }
}
