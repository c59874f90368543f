//! A Code Mode script's nested calls through the real binary against the mock model:
//! each is a real call of the turn (recorded as `code_mode_tool_result` with its
//! parent and number, its own card naming the parent, live and from `history.page`),
//! only the script's result reaches the model, a failure rejects the script's promise,
//! and a nested call that needs approval is asked for, saying it comes from a script.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use crate::common::approval::{env_for, records, until_approval};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::cards::{Block, Card, CardOutcome, Changes, ParentState, ToolKind};
use magi_protocol::messages::{ApprovalAnswerParams, Event, RunOutcome, TurnCancelParams};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

use crate::code_mode::{final_cards, ready, script};

/// The records of `kind` in the session's log.
fn of_kind(env: &TestEnv, session: &str, kind: &str) -> Vec<Value> {
    records(env, session)
        .into_iter()
        .filter(|r| r["kind"] == kind)
        .collect()
}

#[tokio::test]
async fn a_script_calls_tools_one_by_one_and_concurrently_and_only_its_result_reaches_the_model() {
    let mock = MockServer::start().await;
    let code = "const one = await tools.read({path: 'a.txt'});\n\
                const [b, c] = await Promise.all([\n\
                  tools.read({path: 'b.txt'}),\n\
                  tools.read({path: 'c.txt'}),\n\
                ]);\n\
                for (const text of [one, b, c]) console.log(text.includes('line') ? 'read' : text);\n\
                return Object.keys(tools).includes('code_mode');";
    mock.enqueue(script("s1", code));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    for name in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(env.cwd().join(name), format!("{name} line\n")).unwrap();
    }
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Read three files in a script.").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");

    // The model asked once and was given the script's result alone.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    // The tool's description lists the tools a script may call, with their arguments.
    let described = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "code_mode")
        .unwrap()["function"]["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(described.len() <= magi_protocol::limits::CODE_MODE_DESCRIPTION_BYTES);
    assert!(described.contains("\nread({path"), "{described}");
    assert!(described.contains("\nbash({command"), "{described}");
    assert!(!described.contains("\ncode_mode("), "{described}");
    assert_eq!(
        tool_outputs(&requests[1].body),
        ["read\nread\nread\n\nReturned:\nfalse"]
    );

    // Each nested call is a real call: created with its parent and number, settled as
    // a Code Mode result, its ID its own.
    let created = of_kind(&env, &session, "tool_call");
    assert_eq!(created.len(), 4, "{created:?}");
    assert_eq!(created[0]["call_id"], "s1");
    assert!(created[0]["parent_call_id"].is_null());
    let nested: Vec<(String, u64)> = created[1..]
        .iter()
        .map(|r| {
            assert_eq!(r["parent_call_id"], "s1");
            assert_eq!(r["name"], "read");
            (
                r["call_id"].as_str().unwrap().to_owned(),
                r["sequence"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        nested.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(nested.iter().all(|(id, _)| id != "s1"));
    let mut results = of_kind(&env, &session, "code_mode_tool_result");
    results.sort_by_key(|r| r["sequence"].as_u64());
    assert_eq!(results.len(), 3, "{results:?}");
    for (result, (id, sequence)) in results.iter().zip(&nested) {
        assert_eq!(result["call_id"], id.as_str());
        assert_eq!(result["parent_call_id"], "s1");
        assert_eq!(result["sequence"], *sequence);
        assert_eq!(result["outcome"], "completed");
    }
    let top = of_kind(&env, &session, "tool_result");
    assert_eq!(top.len(), 1);
    assert_eq!(top[0]["call_id"], "s1");
    assert_eq!(top[0]["facts"]["nested_started"], 3, "{}", top[0]);
    assert_eq!(top[0]["facts"]["nested_completed"], 3, "{}", top[0]);

    // The cards: three read cards whose parent is the script's card.
    let live = final_cards(&seen);
    let parent = live
        .iter()
        .find(|c| c.tool_kind == ToolKind::CodeMode)
        .unwrap();
    let reads: Vec<&Card> = live
        .iter()
        .filter(|c| c.tool_kind != ToolKind::CodeMode)
        .collect();
    assert_eq!(reads.len(), 3);
    for card in &reads {
        assert_eq!(
            card.parent_activity_id.as_deref(),
            Some(parent.activity_id.as_str())
        );
        assert_eq!(card.parent_state, ParentState::Available);
        assert_eq!(card.outcome, Some(CardOutcome::Success));
    }
    let saved = saved_cards(&mut backend, &session, &finished.revision.unwrap()).await;
    assert_eq!(saved.len(), 4);
    let saved_parent = saved
        .iter()
        .find(|c| c.tool_kind == ToolKind::CodeMode)
        .unwrap();
    assert!(saved_parent.parent_activity_id.is_none());
    let saved_reads: Vec<&Card> = saved
        .iter()
        .filter(|c| c.tool_kind != ToolKind::CodeMode)
        .collect();
    assert_eq!(saved_reads.len(), 3);
    for card in saved_reads {
        assert_eq!(
            card.parent_activity_id.as_deref(),
            Some(saved_parent.activity_id.as_str())
        );
        assert_eq!(card.outcome, Some(CardOutcome::Success));
    }
    shutdown_clean(&mut backend).await;
    // A new client reopening the session folds the same four cards, the nested ones
    // under the script's.
    let folded = crate::code_mode::reopened_cards(&env, &session).await;
    assert_eq!(folded.len(), 4, "{folded:?}");
    let folded_parent = folded
        .iter()
        .find(|c| c.tool_kind == ToolKind::CodeMode)
        .unwrap();
    let nested: Vec<&Card> = folded
        .iter()
        .filter(|c| c.tool_kind != ToolKind::CodeMode)
        .collect();
    assert_eq!(nested.len(), 3);
    for card in nested {
        assert_eq!(
            card.parent_activity_id.as_deref(),
            Some(folded_parent.activity_id.as_str())
        );
    }
}

#[tokio::test]
async fn a_nested_failure_rejects_its_promise_caught_or_uncaught() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "try { await tools.read({path: 'missing.txt'}); } catch (e) {\n\
         console.log('caught: ' + (e instanceof Error));\n}\n\
         return 'went on';",
    ));
    mock.enqueue(script(
        "s2",
        "await tools.read({path: 'missing.txt'});\nreturn 'never';",
    ));
    mock.enqueue(Reply::stream().text(["Both seen."]));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Read what is not there.").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    let requests = mock.requests();
    let first = tool_outputs(&requests[1].body);
    assert_eq!(first, ["caught: true\n\nReturned:\nwent on"]);
    let second = tool_outputs(&requests[2].body);
    assert!(
        second[1].starts_with("The script failed at line 1: Error: Cannot read missing.txt"),
        "{second:?}"
    );
    let results = of_kind(&env, &session, "code_mode_tool_result");
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["outcome"] == "failed"));
    assert_eq!(results[1]["parent_call_id"], "s2");
    assert_eq!(results[1]["sequence"], 1);
}

/// A call the script starts and never awaits still runs before the script's result is
/// given, and counts as started and completed; its result goes nowhere.
#[tokio::test]
async fn a_call_the_script_never_awaits_still_runs_and_is_counted() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "tools.write({path: 'fired.txt', content: 'yes'});\nreturn 'returned first';",
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings("[permissions.code_mode]\nallow = [\"write\"]\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Fire and forget.").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("fired.txt")).unwrap(),
        "yes"
    );
    let told = tool_outputs(&mock.requests()[1].body);
    assert_eq!(told, ["returned first"]);
    let results = of_kind(&env, &session, "code_mode_tool_result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["outcome"], "completed");
    let script_card = final_cards(&seen)
        .into_iter()
        .find(|c| c.tool_kind == ToolKind::CodeMode)
        .expect("the script's card");
    let rows = format!("{:?}", script_card.blocks);
    for label in ["Nested calls started", "Nested calls completed"] {
        let row = format!("label: \"{label}\", value: Some(\"1 call\")");
        assert!(rows.contains(&row), "{label}: {rows}");
    }
}

/// Runs one turn whose script runs `touch made.txt` through `bash`, which asks, and
/// answers the approval with `allow`; returns the approval's summary, what the model
/// was told and the session's log.
async fn approved_or_denied(allow: bool) -> (String, String, Vec<Value>, bool) {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "try { await tools.bash({command: 'touch made.txt'}); return 'made'; }\n\
         catch (e) { return 'refused: ' + e.message; }",
    ));
    mock.enqueue(Reply::stream().text(["Noted."]));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Make a file in a script.").await;
    let mut seen = Vec::new();
    let request = until_approval(&mut backend, &mut seen).await;
    let answer = ApprovalAnswerParams::once(&session, &request.run_id, &request.approval_id, allow);
    assert!(
        backend
            .call::<methods::ApprovalAnswer>(&answer)
            .await
            .unwrap()
            .is_ok()
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    let told = tool_outputs(&mock.requests()[1].body).remove(0);
    let made = env.cwd().join("made.txt").exists();
    (request.summary, told, records(&env, &session), made)
}

#[tokio::test]
async fn a_nested_call_that_asks_is_approved_or_denied_saying_it_comes_from_a_script() {
    let (summary, told, log, made) = approved_or_denied(true).await;
    assert!(summary.starts_with("Code Mode script: "), "{summary}");
    assert_eq!(told, "made");
    assert!(made);
    let result = log
        .iter()
        .find(|r| r["kind"] == "code_mode_tool_result")
        .unwrap();
    assert_eq!(result["outcome"], "completed");
    assert_eq!(result["protection"], "allowed by user");

    let (_, told, log, made) = approved_or_denied(false).await;
    assert!(told.starts_with("refused: The call was not run"), "{told}");
    assert!(!made);
    let result = log
        .iter()
        .find(|r| r["kind"] == "code_mode_tool_result")
        .unwrap();
    assert_eq!(result["outcome"], "denied");
}

/// Answers the next approval of the run with allow.
async fn allow_next(backend: &mut Backend, session: &str, seen: &mut Vec<Event>) {
    let request = until_approval(backend, seen).await;
    let answer = ApprovalAnswerParams::once(session, &request.run_id, &request.approval_id, true);
    assert!(
        backend
            .call::<methods::ApprovalAnswer>(&answer)
            .await
            .unwrap()
            .is_ok()
    );
}

/// Waits, bounded, until the session's log holds a line with every one of `parts`.
async fn until_logged(env: &TestEnv, session: &str, parts: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let logged = std::fs::read_to_string(log_path(env, session))
            .unwrap_or_default()
            .lines()
            .any(|l| parts.iter().all(|p| l.contains(p)));
        if logged {
            return;
        }
        assert!(Instant::now() < deadline, "never logged: {parts:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_time_limit_does_not_count_an_approvals_wait() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "await tools.bash({command: 'touch made.txt'});\nreturn 'made';",
    ));
    mock.enqueue(Reply::stream().text(["Noted."]));
    let env = env_for(&mock);
    env.write_settings("[code_mode]\ntimeout_secs = 1\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Make a file in a script.").await;
    let mut seen = Vec::new();
    let request = until_approval(&mut backend, &mut seen).await;
    // The person takes longer than the script's whole time limit to answer.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answer = ApprovalAnswerParams::once(&session, &request.run_id, &request.approval_id, true);
    assert!(
        backend
            .call::<methods::ApprovalAnswer>(&answer)
            .await
            .unwrap()
            .is_ok()
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    assert_eq!(tool_outputs(&mock.requests()[1].body), ["made"]);
    assert!(env.cwd().join("made.txt").exists());
}

/// A script whose one nested call is `bash` running `sleep 30`, allowed by the person.
fn sleeper() -> Reply {
    script(
        "s1",
        "console.log('before');\nawait tools.bash({command: 'sleep 30'});\nreturn 'after';",
    )
}

#[tokio::test]
async fn the_time_limit_stops_a_script_and_cancels_its_running_nested_call() {
    let mock = MockServer::start().await;
    mock.enqueue(sleeper());
    mock.enqueue(Reply::stream().text(["Too slow."]));
    let env = env_for(&mock);
    env.write_settings("[code_mode]\ntimeout_secs = 1\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Sleep in a script.").await;
    let mut seen = Vec::new();
    allow_next(&mut backend, &session, &mut seen).await;
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    let told = tool_outputs(&mock.requests()[1].body);
    assert!(
        told[0].starts_with(
            "The script was stopped: it ran past the time limit of 1 s ([code_mode] \
             timeout_secs), after 1 tool call (0 completed, 0 failed)"
        ),
        "{told:?}"
    );
    let nested = of_kind(&env, &session, "code_mode_tool_result");
    assert_eq!(nested.len(), 1);
    assert_eq!(nested[0]["outcome"], "cancelled", "{}", nested[0]);
    let top = of_kind(&env, &session, "tool_result");
    assert_eq!(top[0]["facts"]["limit"], "time", "{}", top[0]);
    // The script's result comes after its nested call settled.
    let kinds: Vec<String> = records(&env, &session)
        .iter()
        .filter_map(|r| r["kind"].as_str().map(str::to_owned))
        .filter(|k| k.ends_with("tool_result"))
        .collect();
    assert_eq!(kinds, ["code_mode_tool_result", "tool_result"]);
}

#[tokio::test]
async fn turn_cancel_during_a_nested_bash_cancels_it_and_the_script() {
    let mock = MockServer::start().await;
    mock.enqueue(sleeper());
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "Sleep in a script.").await;
    let mut seen = Vec::new();
    allow_next(&mut backend, &session, &mut seen).await;
    // The nested call runs once its claim is durable.
    until_logged(&env, &session, &["\"s1.code_mode.1\"", "\"running\""]).await;
    let cancel = TurnCancelParams {
        session_id: session.clone(),
        run_id: run,
    };
    assert!(
        backend
            .call::<methods::TurnCancel>(&cancel)
            .await
            .unwrap()
            .is_ok()
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    shutdown_clean(&mut backend).await;
    let nested = of_kind(&env, &session, "code_mode_tool_result");
    assert_eq!(nested.len(), 1);
    assert_eq!(nested[0]["outcome"], "cancelled", "{}", nested[0]);
    let top = of_kind(&env, &session, "tool_result");
    assert_eq!(top[0]["outcome"], "cancelled", "{}", top[0]);
}

#[tokio::test]
async fn a_crash_during_a_nested_call_settles_it_and_the_script_without_running_either_again() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "const text = await tools.read({path: 'a.txt'});\nreturn text;",
    ));
    // The second claim of the process is the nested read's.
    let env = env_for(&mock).var("MAGI_FAULT", "after_claim:2");
    std::fs::write(env.cwd().join("a.txt"), "a line\n").unwrap();
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Read in a script.").await;
    while backend.next_incoming_within(WAIT).await.is_some() {}
    let status = exit_status(&mut backend).await;
    assert_eq!(status.signal(), Some(9), "killed at its crash point");
    let crashed = records(&env, &session);
    assert!(
        !crashed
            .iter()
            .any(|r| r["kind"].as_str().unwrap().ends_with("tool_result"))
    );

    mock.enqueue(Reply::stream().text(["Noted."]));
    let env = env.without("MAGI_FAULT");
    let mut backend = ready(&env).await;
    open_session(&mut backend, &session).await.unwrap();
    start_turn(&mut backend, &session, "Go on.").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    let nested = of_kind(&env, &session, "code_mode_tool_result");
    assert_eq!(nested.len(), 1, "{nested:?}");
    assert_eq!(nested[0]["call_id"], "s1.code_mode.1");
    assert_eq!(nested[0]["parent_call_id"], "s1");
    assert_eq!(nested[0]["sequence"], 1);
    assert_eq!(nested[0]["outcome"], "indeterminate");
    let top = of_kind(&env, &session, "tool_result");
    assert_eq!(top.len(), 1, "{top:?}");
    assert_eq!(top[0]["call_id"], "s1");
    assert_eq!(top[0]["outcome"], "indeterminate");
    // The model is given the script's call alone, answered as interrupted.
    let last = mock.requests().last().unwrap().body.clone();
    let last = &last;
    let told = tool_outputs(last);
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].contains("its outcome is unknown"), "{told:?}");
    assert!(!last.to_string().contains("s1.code_mode.1"));
}

#[tokio::test]
async fn a_direct_allow_rule_does_not_allow_a_nested_call_nor_the_reverse() {
    let mock = MockServer::start().await;
    // A direct call the direct rule allows, then a script making the same call, which
    // asks; then a script running a command only the Code Mode rule allows.
    mock.enqueue(Reply::stream().tool_call(
        "d1",
        "bash",
        [json!({ "command": "touch direct.txt" }).to_string()],
    ));
    mock.enqueue(script(
        "s1",
        "await tools.bash({command: 'touch direct.txt'});\n\
         await tools.bash({command: 'mkdir nested'});\nreturn 'both';",
    ));
    mock.enqueue(Reply::stream().tool_call(
        "d2",
        "bash",
        [json!({ "command": "mkdir direct" }).to_string()],
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings(
        "[permissions]\nallow = [\"bash(touch*)\"]\n\n\
         [permissions.code_mode]\nallow = [\"bash(mkdir*)\"]\n",
    );
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Make things.").await;
    let mut seen = Vec::new();
    // The direct touch runs; the nested touch asks, saying it comes from a script.
    let request = until_approval(&mut backend, &mut seen).await;
    assert_eq!(request.summary, "Code Mode script: bash touch direct.txt");
    let answer = ApprovalAnswerParams::once(&session, &request.run_id, &request.approval_id, true);
    assert!(
        backend
            .call::<methods::ApprovalAnswer>(&answer)
            .await
            .unwrap()
            .is_ok()
    );
    // The nested mkdir runs without asking; the direct mkdir asks, denied.
    let request = until_approval(&mut backend, &mut seen).await;
    assert_eq!(request.summary, "bash mkdir direct");
    let answer = ApprovalAnswerParams::once(&session, &request.run_id, &request.approval_id, false);
    assert!(
        backend
            .call::<methods::ApprovalAnswer>(&answer)
            .await
            .unwrap()
            .is_ok()
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    assert!(env.cwd().join("nested").is_dir());
    assert!(!env.cwd().join("direct").exists());
    let protections: Vec<(String, String)> = records(&env, &session)
        .iter()
        .filter(|r| r["kind"].as_str().unwrap().ends_with("tool_result"))
        .map(|r| {
            (
                r["call_id"].as_str().unwrap().to_owned(),
                r["protection"].as_str().unwrap_or("none").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        protections,
        [
            ("d1".to_owned(), "allowed automatically".to_owned()),
            ("s1.code_mode.1".to_owned(), "allowed by user".to_owned()),
            (
                "s1.code_mode.2".to_owned(),
                "allowed automatically".to_owned()
            ),
            ("s1".to_owned(), "none".to_owned()),
            ("d2".to_owned(), "denied by user".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_nested_write_keeps_its_preview_in_its_scope_live_and_saved() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "await tools.write({path: 'notes.txt', content: 'first\\nsecond\\n'});\nreturn 'written';",
    ));
    mock.enqueue(Reply::stream().text(["Written."]));
    let env = env_for(&mock);
    env.write_settings("[permissions.code_mode]\nallow = [\"write\"]\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Write notes in a script.").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    let saved = saved_cards(&mut backend, &session, &finished.revision.unwrap()).await;
    shutdown_clean(&mut backend).await;
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("notes.txt")).unwrap(),
        "first\nsecond\n"
    );
    let result = &of_kind(&env, &session, "code_mode_tool_result")[0];
    let display_id = result["display_id"].as_str().unwrap();
    let preview = &of_kind(&env, &session, "tool_applied_preview")[0];
    assert_eq!(preview["display_id"], display_id);
    assert_eq!(preview["parent_call_id"], "s1");
    assert_eq!(preview["sequence"], 1);
    let has_diff = |card: &Card| {
        card.blocks
            .iter()
            .any(|b| matches!(b, Block::Diff(d) if !d.lines.is_empty()))
    };
    let live = final_cards(&seen);
    let write = live
        .iter()
        .find(|c| c.metadata.tool_name.as_deref() == Some("write"))
        .unwrap();
    assert_eq!(write.changes, Changes::Applied);
    assert!(has_diff(write), "{write:?}");
    let saved_write = saved
        .iter()
        .find(|c| c.metadata.tool_name.as_deref() == Some("write"))
        .unwrap();
    assert_eq!(saved_write.changes, Changes::Applied);
    assert!(has_diff(saved_write), "{saved_write:?}");
    assert_eq!(saved_write.blocks, write.blocks);
}

/// A script calls an MCP server's tools by the qualified names the model knows them
/// by, each a real call judged by `[permissions.code_mode]`.
#[tokio::test]
async fn a_script_calls_mcp_tools_by_their_qualified_names() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "const a = await tools['mcp__mock__echo']({message: 'hi'});\n\
         const b = await tools.mcp__mock__add({a: 2, b: 3});\n\
         return a + ' | ' + b;",
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = crate::mcp::env_for(&mock);
    env.write_settings(&crate::mcp::mock_settings(
        "\n[permissions.code_mode]\nallow = [\"mcp__mock__echo\", \"mcp__mock__add\"]\n",
    ));
    crate::mcp::mcp_command(&env, &["approve", "mock"]);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Ask the server.").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    let told = tool_outputs(&mock.requests()[1].body);
    assert!(told[0].starts_with("Echo: hi | The sum of 2"), "{told:?}");
    let results = of_kind(&env, &session, "code_mode_tool_result");
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results.iter().all(|r| r["outcome"] == "completed"),
        "{results:?}"
    );
}
