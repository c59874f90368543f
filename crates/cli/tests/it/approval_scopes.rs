//! `approval.scopes`: answers for the rest of a session kept across a reopen in a new
//! child, a denial's message reaching the model, `unavailable` answers and their
//! label, the base protocol unchanged without the extension, and `exec` answering at
//! a terminal (under tmux) and without one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::tmux::Tmux;
use crate::common::*;
use magi_client::{Backend, Incoming};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ActivityState, ApprovalAnswerParams, ApprovalRequested, ApprovalScope,
    ApprovalScopesDescriptor, EmptyParams, Event, RunOutcome,
};
use magi_protocol::methods;
use magi_protocol::names::{APPROVAL_SCOPES, base_capabilities};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const CAPABILITIES: [&str; 6] = [
    "session.create",
    "session.open",
    "turn.start",
    "approval.answer",
    "shutdown",
    APPROVAL_SCOPES,
];

fn env_for(mock: &MockServer) -> TestEnv {
    TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
}

fn bash(id: &str, command: &str) -> (String, String) {
    (id.to_owned(), json!({ "command": command }).to_string())
}

/// A reply asking for `calls` (ID and arguments) of `tool`, in order.
fn calls(tool: &str, calls: &[(String, String)]) -> Reply {
    calls
        .iter()
        .fold(Reply::stream(), |reply, (id, arguments)| {
            reply.tool_call(id, tool, [arguments.as_str()])
        })
}

async fn started(env: &TestEnv, capabilities: &[&str]) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(capabilities).await.unwrap().unwrap();
    backend
}

/// The next approval request, the run's events up to it kept in `seen`; panics when
/// the run ends first.
async fn approval(backend: &mut Backend, seen: &mut Vec<Event>) -> ApprovalRequested {
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

async fn reply(
    backend: &mut Backend,
    params: &ApprovalAnswerParams,
) -> Result<magi_protocol::messages::ApprovalAnswerResult, ErrorCode> {
    backend
        .call::<methods::ApprovalAnswer>(params)
        .await
        .unwrap()
}

/// The ends of the run's tool activities, in order.
fn ends(events: &[Event]) -> Vec<(ActivityState, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Activity(a) if a.state != ActivityState::Started => {
                Some((a.state, a.summary.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The records of session `id`'s log, as JSON.
fn records(env: &TestEnv, id: &str) -> Vec<Value> {
    std::fs::read_to_string(log_path(env, id))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The protection labels recorded with the session's tool results, in the order of
/// their calls' IDs (results are recorded as calls settle, not in call order).
fn protections(env: &TestEnv, id: &str) -> Vec<String> {
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

#[tokio::test]
async fn a_session_answer_is_kept_when_the_session_is_reopened_in_a_new_child() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch one.txt")]));
    mock.enqueue(Reply::stream().text(["Made one."]));
    let env = env_for(&mock);
    let mut first = started(&env, &CAPABILITIES).await;
    let session = session_with_turn(&mut first, "Make one").await;
    let mut events = Vec::new();
    let request = approval(&mut first, &mut events).await;
    assert_eq!(request.subject, Some(Some("touch one.txt".into())));
    assert_eq!(request.suggested_rule, Some(Some("bash(touch*)".into())));
    assert_eq!(request.proposed_change, Some(None));
    let mut allow =
        ApprovalAnswerParams::once(&session, &request.run_id, &request.approval_id, true);
    allow.scope = Some(ApprovalScope::Session);
    assert!(reply(&mut first, &allow).await.is_ok());
    assert_eq!(
        until_finished(&mut first, &mut events).await.outcome,
        RunOutcome::Completed
    );
    shutdown_clean(&mut first).await;
    let rules: Vec<Value> = records(&env, &session)
        .into_iter()
        .filter(|r| r["kind"] == "session_rule")
        .collect();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["effect"], "allow");
    assert_eq!(rules[0]["rule"], "bash(touch*)");

    // A new child reopens the session: the same command prefix runs without asking,
    // a command line that chains another command still asks.
    mock.enqueue(calls(
        "bash",
        &[
            bash("b2", "touch two.txt"),
            bash("b3", "touch three.txt; touch four.txt"),
        ],
    ));
    mock.enqueue(Reply::stream().text(["Made two."]));
    let mut second = started(&env, &CAPABILITIES).await;
    open_session(&mut second, &session).await.unwrap();
    let run = start_turn(&mut second, &session, "Make two and three").await;
    let mut events = Vec::new();
    let request = approval(&mut second, &mut events).await;
    assert_eq!(
        request.subject,
        Some(Some("touch three.txt; touch four.txt".into()))
    );
    assert_eq!(
        request.suggested_rule,
        Some(None),
        "no rule for a compound command"
    );
    let deny = ApprovalAnswerParams::once(&session, &run, &request.approval_id, false);
    assert!(reply(&mut second, &deny).await.is_ok());
    until_finished(&mut second, &mut events).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::ApprovalRequested(_)))
            .count(),
        1
    );
    assert!(env.cwd().join("two.txt").exists(), "ran without asking");
    assert!(!env.cwd().join("three.txt").exists());
    assert_eq!(
        protections(&env, &session),
        ["allowed by user", "allowed by user", "denied by user"]
    );
    shutdown_clean(&mut second).await;
}

#[tokio::test]
async fn a_denial_message_reaches_the_model_and_unavailable_is_labelled() {
    let mock = MockServer::start().await;
    let write = |id: &str, path: &str| {
        (
            id.to_owned(),
            json!({"path": path, "content": "new\n"}).to_string(),
        )
    };
    mock.enqueue(calls(
        "write",
        &[write("w1", "a.txt"), write("w2", "src/b.txt")],
    ));
    mock.enqueue(Reply::stream().text(["Understood."]));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("a.txt"), "old\n").unwrap();
    let mut backend = started(&env, &CAPABILITIES).await;
    let session = session_with_turn(&mut backend, "Write them").await;
    let mut events = Vec::new();

    let first = approval(&mut backend, &mut events).await;
    assert_eq!(first.subject, Some(Some("a.txt".into())));
    assert_eq!(first.suggested_rule, Some(Some("write(a.txt)".into())));
    let change = first.proposed_change.clone().flatten().unwrap();
    assert!(change.diff.contains("-old\n+new\n"), "{}", change.diff);
    assert!(!change.truncated);
    let mut deny = ApprovalAnswerParams::once(&session, &first.run_id, &first.approval_id, false);
    deny.message = Some("use notes.txt instead".into());
    assert!(reply(&mut backend, &deny).await.is_ok());

    let second = approval(&mut backend, &mut events).await;
    assert_eq!(second.suggested_rule, Some(Some("write(src/*)".into())));
    let mut unavailable =
        ApprovalAnswerParams::once(&session, &second.run_id, &second.approval_id, false);
    // `unavailable` goes with a plain denial only.
    for bad in [
        ApprovalAnswerParams {
            allow: true,
            unavailable: Some(true),
            ..unavailable.clone()
        },
        ApprovalAnswerParams {
            unavailable: Some(false),
            ..unavailable.clone()
        },
        ApprovalAnswerParams {
            unavailable: Some(true),
            scope: Some(ApprovalScope::Session),
            ..unavailable.clone()
        },
        ApprovalAnswerParams {
            message: Some("x".repeat(1025)),
            ..unavailable.clone()
        },
        ApprovalAnswerParams {
            allow: true,
            message: Some("fine".into()),
            ..unavailable.clone()
        },
    ] {
        assert_eq!(
            reply(&mut backend, &bad).await,
            Err(ErrorCode::InvalidParams),
            "{bad:?}"
        );
    }
    unavailable.unavailable = Some(true);
    assert!(reply(&mut backend, &unavailable).await.is_ok());
    assert_eq!(
        until_finished(&mut backend, &mut events).await.outcome,
        RunOutcome::Completed
    );
    assert_eq!(
        ends(&events),
        [
            (ActivityState::Failed, "denied by user".into()),
            (ActivityState::Failed, "denied; approval unavailable".into()),
        ]
    );
    let outputs = tool_outputs(&mock.requests()[1].body);
    assert_eq!(
        outputs,
        [
            "The call was not run: denied by user.\nThe user said: use notes.txt instead",
            "The call was not run: denied; approval unavailable.",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("a.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(
        protections(&env, &session),
        ["denied by user", "denied; approval unavailable"]
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_extension_is_advertised_in_its_place_and_bounds_the_names() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let result = backend
        .initialize(&["shutdown", "tool.cards", APPROVAL_SCOPES])
        .await
        .unwrap()
        .unwrap();
    let mut expected = base_capabilities();
    expected.extend(["tool.cards".to_owned(), APPROVAL_SCOPES.to_owned()]);
    assert_eq!(result.capabilities, expected);
    let extensions = result.extensions.unwrap();
    assert_eq!(
        extensions.approval_scopes,
        Some(ApprovalScopesDescriptor::schema_1())
    );
    let raw = serde_json::to_value(&extensions).unwrap();
    assert_eq!(
        raw["approval.scopes"],
        json!({"schema_version": 1, "scopes": ["once", "session"], "message_bytes": 1024})
    );
    shutdown_clean(&mut backend).await;

    // The sixteen base names and the extension's are 17, the bound with it; one more
    // is too many.
    let mut names = base_capabilities();
    names.push(APPROVAL_SCOPES.to_owned());
    let mut backend = env.spawn();
    let accepted = backend
        .request_raw("initialize", json!({ "required_capabilities": names }))
        .await
        .unwrap();
    assert!(accepted.outcome.is_ok(), "{accepted:?}");
    shutdown_clean(&mut backend).await;
    names.push("status".to_owned());
    let mut backend = env.spawn();
    let refused = backend
        .request_raw("initialize", json!({ "required_capabilities": names }))
        .await
        .unwrap();
    assert_eq!(refused.outcome, Err(ErrorCode::InvalidParams));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn without_the_extension_the_base_frames_are_unchanged() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch one.txt")]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    let mut backend = started(&env, &CAPABILITIES[..5]).await;
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
        .session_id;
    let run = start_turn(&mut backend, &session, "Make one").await;
    let mut events = Vec::new();
    let request = approval(&mut backend, &mut events).await;
    // The client library refuses any of the extension's fields without it; absent
    // they decode as `None`.
    assert_eq!(
        (
            &request.subject,
            &request.suggested_rule,
            &request.proposed_change
        ),
        (&None, &None, &None)
    );
    let base = json!({"session_id": session, "run_id": run, "approval_id": request.approval_id});
    for extra in [
        json!({"scope": "once"}),
        json!({"scope": "session"}),
        json!({"message": "no"}),
        json!({"unavailable": true}),
        json!({"scope": 1}),
    ] {
        let mut params = base.clone();
        params["allow"] = json!(false);
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        let answered = backend
            .request_raw("approval.answer", params.clone())
            .await
            .unwrap();
        assert_eq!(answered.outcome, Err(ErrorCode::InvalidParams), "{params}");
    }
    let mut params = base.clone();
    params["allow"] = json!(true);
    let answered = backend
        .request_raw("approval.answer", params)
        .await
        .unwrap();
    assert_eq!(answered.outcome, Ok(json!({"recorded": true})));
    until_finished(&mut backend, &mut events).await;
    assert!(env.cwd().join("one.txt").exists());
    assert!(
        !records(&env, &session)
            .iter()
            .any(|r| r["kind"] == "session_rule")
    );
    shutdown_clean(&mut backend).await;
}

/// The one session log of the test's workspace.
fn only_session(env: &TestEnv) -> String {
    let mut logs: Vec<String> = std::fs::read_dir(workspace_dir(env))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".jsonl").map(str::to_owned))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.pop().unwrap()
}

#[tokio::test]
async fn exec_without_a_terminal_answers_unavailable() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch made.txt")]));
    mock.enqueue(Reply::stream().text(["Could not."]));
    let env = env_for(&mock);
    // Stdin is not a terminal here, as in a script or CI: nobody can be asked.
    let output = tokio::process::Command::new(bin())
        .args(["exec", "Make it"])
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "mock-model")
        .env("OPENAI_BASE_URL", mock.base_url())
        .current_dir(env.cwd())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT, output).await.unwrap().unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "bash: touch made.txt: denied: no terminal to ask (use --allow-all or a \
             permission rule)"
        ),
        "{stderr}"
    );
    assert!(!env.cwd().join("made.txt").exists());
    let session = only_session(&env);
    assert_eq!(
        protections(&env, &session),
        ["denied; approval unavailable"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_at_a_terminal_offers_once_session_and_a_message() {
    let mock = MockServer::start().await;
    let write = json!({"path": "notes.txt", "content": "remember\n"}).to_string();
    mock.enqueue(
        calls(
            "bash",
            &[bash("b1", "touch made.txt"), bash("b2", "touch again.txt")],
        )
        .tool_call("w1", "write", [write.as_str()]),
    );
    mock.enqueue(Reply::stream().text(["All asked."]));
    let env = env_for(&mock);
    let vars = [
        ("MAGI_PROVIDER", "openai-chat".to_owned()),
        ("MAGI_MODEL", "mock-model".to_owned()),
        ("OPENAI_BASE_URL", mock.base_url()),
    ];
    // The shell keeps the window open after exec, to read its exit status.
    let script = format!(
        "'{}' exec 'Make them'; echo \"exec exited $?\"; sleep 60",
        bin()
    );
    let tmux = Tmux::start_command(&env, &vars, &["sh", "-c", &script]);
    tmux.wait_for("[s] allow for this session (bash(touch*))");
    let screen = tmux.screen();
    assert!(
        screen.contains("asks to run bash: touch made.txt"),
        "{screen}"
    );
    tmux.type_text("s");
    tmux.key("Enter");
    // The second command runs under the session rule; the write asks, with its diff.
    let screen = tmux.wait_for("asks to run write notes.txt");
    assert!(screen.contains("+remember"), "{screen}");
    assert!(
        screen.contains("[s] allow for this session (write(notes.txt))"),
        "{screen}"
    );
    tmux.type_text("m");
    tmux.key("Enter");
    tmux.wait_for("Message:");
    tmux.type_text("not in this repository");
    tmux.key("Enter");
    tmux.wait_for("exec exited 0");
    assert!(env.cwd().join("made.txt").exists());
    assert!(env.cwd().join("again.txt").exists());
    assert!(!env.cwd().join("notes.txt").exists());
    let outputs = tool_outputs(&mock.requests()[1].body);
    assert_eq!(
        outputs[2],
        "The call was not run: denied by user.\nThe user said: not in this repository"
    );
    let session = only_session(&env);
    assert_eq!(
        protections(&env, &session),
        ["allowed by user", "allowed by user", "denied by user"]
    );
}
