//! The mock server's own tests: each route's SSE output parsed back, the queue, the
//! error replies, the request log, misbehaving streams, scenarios and the binary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use magi_testkit::{MockServer, Reply, Scenario, Stop};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Every network step of a test is bounded by this.
const STEP: Duration = Duration::from_secs(10);

struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// One HTTP/1.0 request over a fresh connection; the answer is read to the close, so
/// no chunked decoding is needed.
async fn send(addr: &str, method: &str, path: &str, body: &str, extra: &str) -> Answer {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "{method} {path} HTTP/1.0\r\nhost: {addr}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        // A cut connection ends the read with an error after what it delivered.
        let _ = stream.read_to_end(&mut raw).await;
        raw
    };
    let raw = tokio::time::timeout(STEP, exchange).await.unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Answer {
        status,
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

async fn post(server: &MockServer, path: &str, body: &Value) -> Answer {
    let addr = server.origin().trim_start_matches("http://").to_owned();
    send(&addr, "POST", path, &body.to_string(), "").await
}

/// SSE events as (event name, data), by the spec's rules for what this server emits.
fn events(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            (event, data)
        })
        .collect()
}

fn json_events(body: &str) -> Vec<(Option<String>, Value)> {
    events(body)
        .into_iter()
        .filter(|(_, data)| data != "[DONE]")
        .map(|(event, data)| (event, serde_json::from_str(&data).unwrap()))
        .collect()
}

fn full_reply() -> Reply {
    Reply::stream()
        .reasoning_summary(["Think", "ing"])
        .text(["Hel", "lo"])
        .tool_call("call_a", "read_file", [r#"{"path":"#, r#""a.txt"}"#])
        .tool_call("call_b", "list_dir", [r#"{}"#])
        .usage(12, 7)
}

#[tokio::test]
async fn responses_route_streams_the_responses_format() {
    let server = MockServer::start().await;
    server.enqueue(full_reply());
    let answer = post(
        &server,
        "/v1/responses",
        &json!({ "model": "m", "stream": true }),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert!(answer.head.contains("content-type: text/event-stream"));
    let events = json_events(&answer.body);
    for (name, data) in &events {
        assert_eq!(
            name.as_deref(),
            data["type"].as_str(),
            "event name matches type"
        );
    }
    let kinds: Vec<&str> = events
        .iter()
        .map(|(_, d)| d["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"response.created"));
    assert_eq!(kinds.last(), Some(&"response.completed"));
    let of = |kind: &'static str| {
        events
            .iter()
            .filter(move |(_, d)| d["type"] == kind)
            .map(|(_, d)| d)
    };
    let summary: String = of("response.reasoning_summary_text.delta")
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(summary, "Thinking");
    assert_eq!(
        of("response.reasoning_summary_text.done").next().unwrap()["text"],
        "Thinking"
    );
    let text: String = of("response.output_text.delta")
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello");
    let calls: Vec<&Value> = of("response.output_item.added")
        .filter(|d| d["item"]["type"] == "function_call")
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["item"]["call_id"], "call_a");
    assert_eq!(calls[0]["item"]["name"], "read_file");
    let item_a = calls[0]["item"]["id"].as_str().unwrap();
    let args_a: String = of("response.function_call_arguments.delta")
        .filter(|d| d["item_id"] == item_a)
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args_a, r#"{"path":"a.txt"}"#);
    let done: Vec<&Value> = of("response.output_item.done")
        .filter(|d| d["item"]["type"] == "function_call")
        .collect();
    assert_eq!(done[1]["item"]["arguments"], "{}");
    let completed = of("response.completed").next().unwrap();
    assert_eq!(completed["response"]["status"], "completed");
    assert_eq!(completed["response"]["usage"]["input_tokens"], 12);
    assert_eq!(completed["response"]["usage"]["output_tokens"], 7);
    let seq: Vec<u64> = events
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(seq.windows(2).all(|w| w[1] == w[0] + 1));
}

#[tokio::test]
async fn chat_route_streams_chat_completion_chunks() {
    let server = MockServer::start().await;
    server.enqueue(full_reply());
    let answer = post(&server, "/v1/chat/completions", &json!({ "model": "m" })).await;
    assert_eq!(answer.status, 200);
    let raw = events(&answer.body);
    assert!(
        raw.iter().all(|(name, _)| name.is_none()),
        "chat chunks carry no event names"
    );
    assert_eq!(raw.last().unwrap().1, "[DONE]");
    let chunks = json_events(&answer.body);
    assert!(
        chunks
            .iter()
            .all(|(_, c)| c["object"] == "chat.completion.chunk")
    );
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|(_, c)| c["choices"].as_array().and_then(|a| a.first()))
        .map(|choice| &choice["delta"])
        .collect();
    assert_eq!(deltas[0]["role"], "assistant");
    let text: String = deltas
        .iter()
        .filter_map(|d| d["content"].as_str())
        .collect();
    assert_eq!(text, "Hello");
    let reasoning: String = deltas
        .iter()
        .filter_map(|d| d["reasoning_content"].as_str())
        .collect();
    assert_eq!(reasoning, "Thinking");
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for call in deltas
        .iter()
        .filter_map(|d| d["tool_calls"].as_array())
        .flatten()
    {
        let index = usize::try_from(call["index"].as_u64().unwrap()).unwrap();
        if index == calls.len() {
            calls.push((
                call["id"].as_str().unwrap().to_owned(),
                call["function"]["name"].as_str().unwrap().to_owned(),
                String::new(),
            ));
        }
        calls[index]
            .2
            .push_str(call["function"]["arguments"].as_str().unwrap());
    }
    assert_eq!(
        calls,
        vec![
            (
                "call_a".into(),
                "read_file".into(),
                r#"{"path":"a.txt"}"#.into()
            ),
            ("call_b".into(), "list_dir".into(), "{}".into()),
        ]
    );
    let finish: Vec<&str> = chunks
        .iter()
        .filter_map(|(_, c)| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finish, ["tool_calls"]);
    let usage = &chunks.last().unwrap().1;
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 12);
    assert_eq!(usage["usage"]["completion_tokens"], 7);
}

#[tokio::test]
async fn messages_route_streams_anthropic_events() {
    let server = MockServer::start().await;
    server.enqueue(full_reply());
    let answer = post(&server, "/v1/messages", &json!({ "model": "m" })).await;
    assert_eq!(answer.status, 200);
    let events = json_events(&answer.body);
    for (name, data) in &events {
        assert_eq!(name.as_deref(), data["type"].as_str());
    }
    let kinds: Vec<&str> = events
        .iter()
        .map(|(_, d)| d["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"message_start"));
    assert_eq!(&kinds[kinds.len() - 2..], ["message_delta", "message_stop"]);
    let start = &events[0].1;
    assert_eq!(start["message"]["usage"]["input_tokens"], 12);
    let blocks: Vec<&Value> = events
        .iter()
        .filter(|(_, d)| d["type"] == "content_block_start")
        .map(|(_, d)| d)
        .collect();
    let types: Vec<&str> = blocks
        .iter()
        .map(|b| b["content_block"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["thinking", "text", "tool_use", "tool_use"]);
    assert_eq!(blocks[2]["content_block"]["id"], "call_a");
    assert_eq!(blocks[2]["content_block"]["name"], "read_file");
    let delta_text = |index: u64, field: &str| -> String {
        events
            .iter()
            .filter(|(_, d)| d["type"] == "content_block_delta" && d["index"] == index)
            .filter_map(|(_, d)| d["delta"][field].as_str())
            .collect()
    };
    assert_eq!(delta_text(0, "thinking"), "Thinking");
    assert_eq!(delta_text(1, "text"), "Hello");
    assert_eq!(delta_text(2, "partial_json"), r#"{"path":"a.txt"}"#);
    assert_eq!(delta_text(3, "partial_json"), "{}");
    let stops = events
        .iter()
        .filter(|(_, d)| d["type"] == "content_block_stop")
        .count();
    assert_eq!(stops, 4);
    let delta = &events[events.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 7);
}

#[tokio::test]
async fn stop_reasons_are_rendered_per_format() {
    let server = MockServer::start().await;
    let cases = [
        (Stop::EndTurn, "completed", "stop", "end_turn"),
        (Stop::MaxTokens, "max_output_tokens", "length", "max_tokens"),
        (Stop::Refusal, "content_filter", "content_filter", "refusal"),
    ];
    for (stop, responses, chat, anthropic) in cases {
        for _ in 0..3 {
            server.enqueue(Reply::stream().text(["x"]).stop(stop));
        }
        let r = json_events(&post(&server, "/v1/responses", &json!({})).await.body);
        let last = &r.last().unwrap().1;
        if stop == Stop::EndTurn {
            assert_eq!(last["type"], "response.completed");
            assert_eq!(last["response"]["status"], responses);
        } else {
            assert_eq!(last["type"], "response.incomplete");
            assert_eq!(last["response"]["incomplete_details"]["reason"], responses);
        }
        let c = json_events(&post(&server, "/v1/chat/completions", &json!({})).await.body);
        let finish: Vec<&str> = c
            .iter()
            .filter_map(|(_, c)| c["choices"][0]["finish_reason"].as_str())
            .collect();
        assert_eq!(finish, [chat]);
        let a = json_events(&post(&server, "/v1/messages", &json!({})).await.body);
        assert_eq!(a[a.len() - 2].1["delta"]["stop_reason"], anthropic);
    }
}

#[tokio::test]
async fn an_empty_queue_answers_500_and_still_records() {
    let server = MockServer::start().await;
    let answer = post(&server, "/v1/chat/completions", &json!({ "model": "m" })).await;
    assert_eq!(answer.status, 500);
    let body: Value = serde_json::from_str(&answer.body).unwrap();
    assert!(body["error"]["message"].is_string());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn error_replies_carry_status_body_and_headers() {
    let server = MockServer::start().await;
    server.enqueue(Reply::error(429, r#"{"error":"slow down"}"#).header("retry-after", "0"));
    let answer = post(&server, "/v1/messages", &json!({})).await;
    assert_eq!(answer.status, 429);
    assert!(answer.head.contains("retry-after: 0"));
    assert_eq!(answer.body, r#"{"error":"slow down"}"#);
}

#[tokio::test]
async fn requests_are_recorded_with_lowercase_headers_and_json_bodies() {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["a"]));
    let addr = server.origin().trim_start_matches("http://").to_owned();
    let body = json!({ "model": "m", "stream": true });
    send(
        &addr,
        "POST",
        "/v1/responses",
        &body.to_string(),
        "Authorization: Bearer k\r\n",
    )
    .await;
    send(&addr, "GET", "/nowhere", "", "").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[0].header("authorization"), Some("Bearer k"));
    assert_eq!(requests[0].body, body);
    assert_eq!(requests[1].path, "/nowhere");
    assert_eq!(requests[1].body, Value::Null);
}

#[tokio::test]
async fn replies_are_taken_in_order_whatever_the_route() {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["first"]));
    server.enqueue(Reply::error(503, "{}"));
    let first = post(&server, "/v1/messages", &json!({})).await;
    assert!(first.body.contains("first"));
    assert_eq!(post(&server, "/v1/responses", &json!({})).await.status, 503);
    assert_eq!(post(&server, "/v1/responses", &json!({})).await.status, 500);
}

#[tokio::test]
async fn a_disconnect_cuts_the_stream_before_its_terminal_event() {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["a", "b", "c"]).disconnect_after(4));
    let answer = post(&server, "/v1/chat/completions", &json!({})).await;
    let events = events(&answer.body);
    assert_eq!(events.len(), 4);
    assert!(!answer.body.contains("[DONE]"));
    assert!(!answer.body.contains("finish_reason\":\"stop"));
}

#[tokio::test]
async fn a_held_stream_waits_before_its_last_event_until_released() {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["a", "b"]).held());
    let addr = server.origin().trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.0\r\nhost: {addr}\r\ncontent-length: 2\r\n\r\n{{}}"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // Everything up to the last event arrives: both deltas and the finish reason.
    let mut raw = Vec::new();
    tokio::time::timeout(STEP, async {
        while !String::from_utf8_lossy(&raw).contains("finish_reason\":\"stop") {
            let mut buffer = [0u8; 4096];
            let read = stream.read(&mut buffer).await.unwrap();
            assert!(read > 0, "the stream ended while held");
            raw.extend_from_slice(&buffer[..read]);
        }
    })
    .await
    .unwrap();
    assert!(!String::from_utf8_lossy(&raw).contains("[DONE]"));
    server.release();
    tokio::time::timeout(STEP, stream.read_to_end(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let events = events(raw.split_once("\r\n\r\n").unwrap().1);
    assert_eq!(events.last().unwrap().1, "[DONE]");
}

#[tokio::test]
async fn malformed_inserts_a_garbage_data_line() {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["a", "b"]).malformed_after(2));
    let answer = post(&server, "/v1/messages", &json!({})).await;
    let events = events(&answer.body);
    assert_eq!(events[2], (None, "{\"this is not json".to_owned()));
    assert!(serde_json::from_str::<Value>(&events[2].1).is_err());
    assert_eq!(events.last().unwrap().0.as_deref(), Some("message_stop"));
}

#[tokio::test]
async fn a_chunk_delay_slows_every_event() {
    let server = MockServer::start().await;
    let delay = Duration::from_millis(20);
    server.enqueue(Reply::stream().text(["a"]).chunk_delay(delay));
    let started = Instant::now();
    let answer = post(&server, "/v1/chat/completions", &json!({})).await;
    let count = events(&answer.body).len();
    assert_eq!(count, 4);
    // A lower bound only: the delays guarantee it, nothing guarantees an upper one.
    assert!(started.elapsed() >= delay * 4);
}

#[tokio::test]
async fn tools10_asks_for_ten_calls_then_answers_text_after_results() {
    let server = MockServer::start_scenario(Scenario::from_name("tools10").unwrap())
        .await
        .unwrap();
    let request = json!({
        "model": "m",
        "tools": [{ "name": "read_file", "input_schema": {} }],
        "messages": [{ "role": "user", "content": "go" }],
    });
    let calls = json_events(&post(&server, "/v1/messages", &request).await.body);
    let names: Vec<&str> = calls
        .iter()
        .filter(|(_, d)| d["type"] == "content_block_start")
        .map(|(_, d)| d["content_block"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file"; 10]);
    let ids: std::collections::BTreeSet<&str> = calls
        .iter()
        .filter_map(|(_, d)| d["content_block"]["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 10);
    let after = json!({
        "model": "m",
        "messages": [{ "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "call_0", "content": "x" }] }],
    });
    let text = json_events(&post(&server, "/v1/messages", &after).await.body);
    assert!(text.iter().any(|(_, d)| d["delta"]["type"] == "text_delta"));
    assert!(
        server.requests().is_empty(),
        "a scenario only counts requests"
    );
    assert_eq!(server.gaps().len(), 1);

    let stats: Value = serde_json::from_str(&post_stats(&server).await).unwrap();
    assert_eq!(stats["requests"], 2);
    assert_eq!(stats["gaps_us"].as_array().unwrap().len(), 1);
}

async fn post_stats(server: &MockServer) -> String {
    let addr = server.origin().trim_start_matches("http://").to_owned();
    send(&addr, "GET", magi_testkit::STATS_PATH, "", "")
        .await
        .body
}

#[tokio::test]
async fn deltas10000_streams_ten_thousand_deltas_in_each_format() {
    let server = MockServer::start_scenario(Scenario::Deltas10000)
        .await
        .unwrap();
    let r = json_events(&post(&server, "/v1/responses", &json!({})).await.body);
    let count = r
        .iter()
        .filter(|(_, d)| d["type"] == "response.output_text.delta")
        .count();
    assert_eq!(count, 10_000);
    let c = json_events(&post(&server, "/v1/chat/completions", &json!({})).await.body);
    assert_eq!(
        c.iter()
            .filter(|(_, d)| d["choices"][0]["delta"]["content"].is_string())
            .count(),
        10_001
    );
    let a = json_events(&post(&server, "/v1/messages", &json!({})).await.body);
    assert_eq!(
        a.iter()
            .filter(|(_, d)| d["type"] == "content_block_delta")
            .count(),
        10_000
    );
}

#[tokio::test]
async fn dropping_the_server_closes_its_port() {
    let server = MockServer::start().await;
    let addr = server.origin().trim_start_matches("http://").to_owned();
    drop(server);
    let mut refused = false;
    for _ in 0..1000 {
        tokio::task::yield_now().await;
        if TcpStream::connect(&addr).await.is_err() {
            refused = true;
            break;
        }
    }
    assert!(refused);
}

#[test]
fn the_binary_prints_only_its_url_and_serves_its_scenario() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_magi-mock-model"))
        .arg("text")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line.trim_end().to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"),
        "{url}"
    );
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = runtime.block_on(send(&addr, "POST", "/v1/chat/completions", "{}", ""));
    assert!(answer.body.contains("mock"));
    assert!(answer.body.ends_with("data: [DONE]\n\n"));
    let again = runtime.block_on(send(&addr, "POST", "/v1/chat/completions", "{}", ""));
    assert_eq!(again.body, answer.body, "the scenario repeats");
    child.kill().unwrap();
    child.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "nothing after the URL");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(err, "");
}

#[test]
fn the_binary_refuses_an_unknown_scenario_silently() {
    let output = Command::new(env!("CARGO_BIN_EXE_magi-mock-model"))
        .arg("nope")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty() && output.stderr.is_empty());
}

#[tokio::test]
async fn the_refusal_scenario_refuses_as_each_format_does() {
    let server = MockServer::start_scenario(Scenario::from_name("refusal").unwrap())
        .await
        .unwrap();
    let r = json_events(&post(&server, "/v1/responses", &json!({})).await.body);
    let refusal: String = r
        .iter()
        .filter(|(_, d)| d["type"] == "response.refusal.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(refusal, "I can't help with that.");
    let last = &r.last().unwrap().1;
    assert_eq!(last["type"], "response.completed");
    assert_eq!(
        last["response"]["output"][0]["content"][0]["type"],
        "refusal"
    );
    let c = json_events(&post(&server, "/v1/chat/completions", &json!({})).await.body);
    let refusal: String = c
        .iter()
        .filter_map(|(_, d)| d["choices"][0]["delta"]["refusal"].as_str())
        .collect();
    assert_eq!(refusal, "I can't help with that.");
    let finish: Vec<&str> = c
        .iter()
        .filter_map(|(_, d)| d["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finish, ["stop"]);
    let a = json_events(&post(&server, "/v1/messages", &json!({})).await.body);
    assert_eq!(a[a.len() - 2].1["delta"]["stop_reason"], "refusal");
}
