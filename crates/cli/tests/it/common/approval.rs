//! Helpers of the approval tests: a backend against the mock model, scripted tool
//! calls, and what a session's log recorded.

use serde_json::{Value, json};

use super::{TestEnv, log_path, next, workspace_dir};
use magi_client::{Backend, Incoming};
use magi_protocol::messages::{ApprovalRequested, Event};
use magi_testkit::{MockServer, Reply};

/// A test environment whose backend talks to `mock` as `openai-chat`.
pub fn env_for(mock: &MockServer) -> TestEnv {
    TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
}

/// The ID and arguments of a `bash` call of `command`.
pub fn bash(id: &str, command: &str) -> (String, String) {
    (id.to_owned(), json!({ "command": command }).to_string())
}

/// A reply asking for `calls` (ID and arguments) of `tool`, in order.
pub fn calls(tool: &str, calls: &[(String, String)]) -> Reply {
    calls
        .iter()
        .fold(Reply::stream(), |reply, (id, arguments)| {
            reply.tool_call(id, tool, [arguments.as_str()])
        })
}

/// The records of session `id`'s log, as JSON.
pub fn records(env: &TestEnv, id: &str) -> Vec<Value> {
    std::fs::read_to_string(log_path(env, id))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The protection labels recorded with the session's tool results, in the order of
/// their calls' IDs (results are recorded as calls settle, not in call order).
pub fn protections(env: &TestEnv, id: &str) -> Vec<String> {
    let mut labels: Vec<(String, String)> = records(env, id)
        .iter()
        .filter(|r| r["kind"] == "tool_result")
        .map(|r| {
            let label = r["protection"].as_str().unwrap_or("none").to_owned();
            (r["call_id"].as_str().unwrap().to_owned(), label)
        })
        .collect();
    labels.sort();
    labels.into_iter().map(|(_, label)| label).collect()
}

/// The one session log of the test's workspace.
pub fn only_session(env: &TestEnv) -> String {
    let mut logs: Vec<String> = std::fs::read_dir(workspace_dir(env))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".jsonl").map(str::to_owned))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.pop().unwrap()
}

/// The next approval request, the run's events up to it kept in `seen`; panics when the
/// run ends first.
pub async fn until_approval(backend: &mut Backend, seen: &mut Vec<Event>) -> ApprovalRequested {
    loop {
        if let Incoming::Event { event, .. } = next(backend).await {
            seen.push(event.clone());
            match event {
                Event::ApprovalRequested(request) => return request,
                Event::RunFinished(f) => panic!("no approval was asked: {f:?}"),
                _ => {}
            }
        }
    }
}
