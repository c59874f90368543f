//! Framing, envelopes and request identity through the real binary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Incoming;
use serde_json::json;

const STATUS: &str =
    r#"{"protocol":"magi-code.local-agent","version":1,"id":"ID","method":"status","params":{}}"#;

fn status_frame(id: &str) -> String {
    STATUS.replace("ID", id)
}

/// A status request for `id` padded with spaces (and an optional CR) to exactly `len`
/// bytes before its LF.
fn padded_status(id: &str, len: usize, cr: bool) -> Vec<u8> {
    let mut line = status_frame(id).into_bytes();
    let tail = usize::from(cr);
    line.resize(len - tail, b' ');
    if cr {
        line.push(b'\r');
    }
    assert_eq!(line.len(), len);
    line.push(b'\n');
    line
}

#[tokio::test]
async fn frames_of_exactly_65536_bytes_are_accepted_with_or_without_cr() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    backend
        .send_raw(&padded_status("plain", 65_536, false))
        .await
        .unwrap();
    expect_error(&mut backend, Some("plain"), "not_initialized").await;
    backend
        .send_raw(&padded_status("with-cr", 65_536, true))
        .await
        .unwrap();
    expect_error(&mut backend, Some("with-cr"), "not_initialized").await;
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn byte_65537_is_frame_too_large_and_closes() {
    for cr in [false, true] {
        let env = TestEnv::new();
        let mut backend = env.spawn();
        let mut bytes = padded_status("big", 65_537, cr);
        // The next frame must never be read, let alone answered.
        bytes.extend_from_slice(status_frame("after").as_bytes());
        bytes.push(b'\n');
        backend.send_raw(&bytes).await.unwrap();
        expect_error(&mut backend, None, "frame_too_large").await;
        expect_end_of_output(&mut backend).await;
        assert_eq!(exit_status(&mut backend).await.code(), Some(0));
        assert_eq!(stderr_text(&mut backend).await, "");
    }
}

#[tokio::test]
async fn oversize_is_detected_without_waiting_for_the_lf() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    backend.send_raw(&vec![b'x'; 65_537]).await.unwrap();
    // Input stays open: detection happens at byte 65,537, not at LF or EOF.
    expect_error(&mut backend, None, "frame_too_large").await;
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
}

fn nested_status(id: &str, depth: usize) -> Vec<u8> {
    // The request object is container 1 and params container 2.
    let inner = format!("{}{}", "[".repeat(depth - 2), "]".repeat(depth - 2));
    let mut line = STATUS
        .replace("ID", id)
        .replace("\"params\":{}", &format!("\"params\":{{\"a\":{inner}}}"))
        .into_bytes();
    line.push(b'\n');
    line
}

#[tokio::test]
async fn nesting_32_is_parsed_and_33_is_invalid_frame() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    initialize_ok(&mut backend).await;
    backend.send_raw(&nested_status("d32", 32)).await.unwrap();
    expect_error(&mut backend, Some("d32"), "invalid_params").await;
    backend.send_raw(&nested_status("d33", 33)).await.unwrap();
    expect_error(&mut backend, Some("d33"), "invalid_frame").await;
    backend
        .send_raw(&nested_status("d9000", 9000))
        .await
        .unwrap();
    expect_error(&mut backend, Some("d9000"), "invalid_frame").await;
    // The rejected IDs count: reusing one is a duplicate.
    let reuse = format!("{}\n", status_frame("d33"));
    backend.send_raw(reuse.as_bytes()).await.unwrap();
    expect_error(&mut backend, Some("d33"), "duplicate_id").await;
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn malformed_frames_get_their_codes_and_the_connection_stays_usable() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    let cases: &[(&[u8], Option<&str>, &str)] = &[
        (b"\n", None, "invalid_frame"),
        (b"\r\n", None, "invalid_frame"),
        (b"   \t \n", None, "invalid_frame"),
        (b"not json\n", None, "invalid_request"),
        (b"[]\n", None, "invalid_request"),
        (b"{\"protocol\":\"magi-code.local-agent\",\"version\":1,\"id\":\"u\xff\",\"method\":\"status\",\"params\":{}}\n", None, "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":"unk","method":"status","params":{},"extra":1}"#, Some("unk"), "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":"dupf","method":"status","params":{},"params":{}}"#, Some("dupf"), "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":"dupid","id":"dupid","method":"status","params":{}}"#, None, "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":"miss","method":"status"}"#, Some("miss"), "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":"arr","method":"status","params":[]}"#, Some("arr"), "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":"bad id!","method":"status","params":{}}"#, None, "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":12,"method":"status","params":{}}"#, None, "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":"mg","method":"sta tus","params":{}}"#, Some("mg"), "invalid_request"),
        (br#"{"protocol":"magi-code.local-agent","version":1,"id":"um","method":"teleport","params":{}}"#, Some("um"), "unsupported_method"),
        (br#"{"protocol":"magi-code.local-agent","version":"1","id":"vs","method":"status","params":{}}"#, Some("vs"), "invalid_request"),
    ];
    for (bytes, id, code) in cases {
        let mut line = bytes.to_vec();
        if line.last() != Some(&b'\n') {
            line.push(b'\n');
        }
        backend.send_raw(&line).await.unwrap();
        expect_error(&mut backend, *id, code).await;
    }
    let status = backend.status().await.unwrap();
    assert_eq!(status, Err(magi_protocol::ErrorCode::NotInitialized));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn errors_never_echo_input() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    let marker = "SECRET-MARKER-7f3a";
    let bad = format!(
        r#"{{"protocol":"magi-code.local-agent","version":1,"id":"echo","method":"initialize","params":{{"required_capabilities":[],"{marker}":"{marker}"}}}}"#
    );
    backend
        .send_raw(format!("{bad}\n").as_bytes())
        .await
        .unwrap();
    let response = next_response(&mut backend).await;
    assert_eq!(
        response.outcome,
        Err(magi_protocol::ErrorCode::InvalidParams)
    );
    assert!(!format!("{response:?}").contains(marker));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn protocol_mismatch_answers_then_closes() {
    for (line, id) in [
        (
            r#"{"protocol":"magi-code.local-agent","version":2,"id":"v2","method":"status","params":{}}"#,
            Some("v2"),
        ),
        (
            r#"{"protocol":"other-agent","version":1,"id":"o1","method":"status","params":{}}"#,
            Some("o1"),
        ),
    ] {
        let env = TestEnv::new();
        let mut backend = env.spawn();
        backend
            .send_raw(format!("{line}\n{}\n", status_frame("after")).as_bytes())
            .await
            .unwrap();
        expect_error(&mut backend, id, "protocol_mismatch").await;
        expect_end_of_output(&mut backend).await;
        assert_eq!(exit_status(&mut backend).await.code(), Some(0));
    }
}

#[tokio::test]
async fn duplicate_ids_are_refused_without_reexecution() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    backend
        .send_raw(&frame("s1", "status", json!({})))
        .await
        .unwrap();
    expect_error(&mut backend, Some("s1"), "not_initialized").await;
    // A shutdown reusing an ID is refused and does not shut down.
    backend
        .send_raw(&frame("s1", "shutdown", json!({})))
        .await
        .unwrap();
    expect_error(&mut backend, Some("s1"), "duplicate_id").await;
    // A rejected well-formed request's ID counts too.
    backend
        .send_raw(&frame("bad", "shutdown", json!({"x": 1})))
        .await
        .unwrap();
    expect_error(&mut backend, Some("bad"), "invalid_params").await;
    backend
        .send_raw(&frame("bad", "shutdown", json!({})))
        .await
        .unwrap();
    expect_error(&mut backend, Some("bad"), "duplicate_id").await;
    // An initialize reusing an ID is not executed: the child stays unadmitted.
    backend
        .send_raw(&frame(
            "bad",
            "initialize",
            json!({"required_capabilities": []}),
        ))
        .await
        .unwrap();
    expect_error(&mut backend, Some("bad"), "duplicate_id").await;
    assert_eq!(
        backend.status().await.unwrap(),
        Err(magi_protocol::ErrorCode::NotInitialized)
    );
    assert!(!env.mc_home().exists());
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_4097th_id_gets_request_limit_and_closes() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    // Mix accepted, rejected well-formed and envelope-rejected requests: all count.
    let ids: Vec<String> = (0..4096).map(|n| format!("r{n}")).collect();
    for chunk in ids.chunks(128) {
        let mut batch = Vec::new();
        for id in chunk {
            let n: usize = id[1..].parse().unwrap();
            let line = match n % 3 {
                0 => frame(id, "status", json!({})),
                1 => frame(id, "teleport", json!({})),
                _ => format!(
                    "{{\"protocol\":\"magi-code.local-agent\",\"version\":1,\"id\":\"{id}\",\"method\":\"status\",\"params\":{{}},\"x\":0}}\n"
                )
                .into_bytes(),
            };
            batch.extend_from_slice(&line);
        }
        backend.send_raw(&batch).await.unwrap();
        for id in chunk {
            let response = next_response(&mut backend).await;
            assert_eq!(response.id.as_deref(), Some(id.as_str()));
            assert!(response.outcome.is_err());
        }
    }
    // Reusing an old ID is still a duplicate, not a new ID.
    backend
        .send_raw(&frame("r0", "status", json!({})))
        .await
        .unwrap();
    expect_error(&mut backend, Some("r0"), "duplicate_id").await;
    let mut last = frame("r4096", "status", json!({}));
    last.extend_from_slice(&frame("r4097", "status", json!({})));
    backend.send_raw(&last).await.unwrap();
    expect_error(&mut backend, Some("r4096"), "request_limit").await;
    expect_end_of_output(&mut backend).await;
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
}

#[tokio::test]
async fn seq_increases_across_all_interleaved_output() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    let mut batch = frame("init", "initialize", json!({"required_capabilities": []}));
    for n in 0..50 {
        batch.extend_from_slice(&frame(&format!("s{n}"), "status", json!({})));
        batch.extend_from_slice(b"\n");
    }
    backend.send_raw(&batch).await.unwrap();
    let mut seqs = Vec::new();
    let mut initialized = false;
    while seqs.len() < 101 {
        match next(&mut backend).await {
            Incoming::Response(response) => {
                initialized |= response.id.as_deref() == Some("init") && response.outcome.is_ok();
                seqs.push(response.seq);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(initialized);
    let expected: Vec<u64> = (1..=101).collect();
    assert_eq!(seqs, expected);
    shutdown_clean(&mut backend).await;
}
