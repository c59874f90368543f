//! Golden snapshots of a turn's first model request in each wire format: the
//! instructions, the environment block, the turn's context note, the tools in their
//! order with their descriptions, the cache markers and the reasoning fields, byte for
//! byte (docs/prompt.md is the contract). What differs from machine to machine (the
//! working directory, the system, the time zone, the date, the session's ID) is
//! replaced by a `<name>` placeholder first.
//!
//! A change to what the model is sent shows here as a diff to read as the model would:
//! `MAGI_UPDATE_GOLDEN=1 cargo test -p magi-cli --test it prompt_golden` rewrites the files in
//! `tests/it/golden/`.

use std::path::PathBuf;

use crate::common::*;
use magi_protocol::messages::RunOutcome;
use magi_testkit::{MockServer, Reply};
use serde_json::Value;

/// The prompt of the snapshotted turn.
const PROMPT: &str = "The test in tests/parse.rs fails; find out why and fix it.";

/// Each snapshot: its file, the wire format, the model and the effort asked for (a
/// reasoning model where the format has reasoning fields to show).
const SNAPSHOTS: [(&str, Wire, &str, Option<&str>); 3] = [
    ("chat.json", Wire::Chat, "mock-model", None),
    ("responses.json", Wire::Responses, "gpt-5.1", Some("medium")),
    (
        "anthropic.json",
        Wire::Anthropic,
        "claude-sonnet-4-5",
        Some("medium"),
    ),
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden")
}

/// `text` with what depends on the machine, the moment or the session replaced.
fn normalised(text: &str, env: &TestEnv, session: &str) -> String {
    let mut text = text.to_owned();
    let cwd = env.cwd();
    for path in [cwd.canonicalize().unwrap_or_else(|_| cwd.clone()), cwd] {
        text = text.replace(&path.display().to_string(), "<cwd>");
    }
    text = text.replace(session, "<session>");
    // A line of the environment block or the context note, to its end (a `\n` inside a
    // JSON string).
    for (label, placeholder) in [
        ("- System: ", "<system>"),
        ("- Time zone: ", "<time zone>"),
        ("- Date: ", "<date>"),
    ] {
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find(label) {
            let value = at + label.len();
            out.push_str(&rest[..value]);
            out.push_str(placeholder);
            let end = rest[value..]
                .find(['\\', '"'])
                .map_or(rest.len(), |end| value + end);
            rest = &rest[end..];
        }
        out.push_str(rest);
        text = out;
    }
    text
}

/// The first request of a one-turn session in `wire` with `model`, pretty-printed and
/// normalised.
async fn first_request(wire: Wire, model: &str, effort: Option<&str>) -> String {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Looking."]));
    let mut env = env_for_wire(wire, &mock).var("MAGI_MODEL", model);
    if let Some(effort) = effort {
        env = env.var("MAGI_EFFORT", effort);
    }
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, PROMPT).await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    let requests = mock.requests();
    let body: &Value = &requests[0].body;
    let pretty = serde_json::to_string_pretty(body).unwrap();
    format!("{}\n", normalised(&pretty, &env, &session))
}

#[tokio::test]
async fn the_first_request_of_a_turn_is_as_recorded_in_every_format() {
    let update = std::env::var_os("MAGI_UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut differ = Vec::new();
    for (file, wire, model, effort) in SNAPSHOTS {
        let got = first_request(wire, model, effort).await;
        let path = golden_dir().join(file);
        if update {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (MAGI_UPDATE_GOLDEN=1 writes it)", path.display()));
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(g, w)| g != w)
                .map_or(got.lines().count().min(want.lines().count()), |n| n);
            differ.push(format!(
                "{} differs from line {}:\n  now:      {}\n  recorded: {}",
                path.display(),
                line + 1,
                got.lines().nth(line).unwrap_or("(end)"),
                want.lines().nth(line).unwrap_or("(end)"),
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "what the model is sent changed (read the change, then MAGI_UPDATE_GOLDEN=1 to record \
         it):\n{}",
        differ.join("\n")
    );
}
