//! Approval modes (`plan`, `ask`, `auto`, `allow-all`): what each decides of a read,
//! an edit, a command in and out of the sandbox, `"sandbox": "off"` and a path outside
//! the workspace, with and without a kernel sandbox, from `serve` and `exec`; and the
//! `permissions.modes` extension: the mode set during a run, the rules listed, a
//! session rule revoked; and a Code Mode script's calls under the session's mode.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::{env_for, protections, records, until_approval};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ApprovalAnswerParams, ApprovalMode, ApprovalScope, Event, PermissionModeSetParams,
    PermissionRuleRevokeParams, PermissionsListParams, RuleEffectName, RuleSource, RunOutcome,
};
use magi_protocol::methods;
use magi_protocol::names::{APPROVAL_SCOPES, PERMISSION_MODES};
use magi_testkit::{MockServer, Reply};
use serde_json::json;

/// The labels of an asked call denied by the person, and of one nobody could be asked
/// about (`exec` without a terminal).
pub(crate) const ASKED: &str = "denied by user";
const UNAVAILABLE: &str = "denied; approval unavailable";
pub(crate) const AUTO: &str = "allowed automatically";
const NONE: &str = "none";

/// The five calls, one a round: a read, an edit, a command, a command asking to run
/// outside the sandbox, a read outside the workspace.
pub(crate) fn script(mock: &MockServer, outside: &std::path::Path) {
    let outside_file = outside.join("far.txt");
    std::fs::write(&outside_file, "far\n").unwrap();
    let call = |id: &str, tool: &str, arguments: serde_json::Value| {
        Reply::stream().tool_call(id, tool, [arguments.to_string().as_str()])
    };
    mock.enqueue(call("c1", "read", json!({ "path": "a.txt" })));
    mock.enqueue(call(
        "c2",
        "write",
        json!({ "path": "new.txt", "content": "new\n" }),
    ));
    mock.enqueue(call("c3", "bash", json!({ "command": "touch made.txt" })));
    mock.enqueue(call(
        "c4",
        "bash",
        json!({ "command": "touch off.txt", "sandbox": "off" }),
    ));
    mock.enqueue(call(
        "c5",
        "read",
        json!({ "path": outside_file.display().to_string() }),
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
}

/// What each mode decides of the five calls, with `asked` the label of a call that
/// asked, and whether a kernel sandbox confines commands.
pub(crate) fn expected(mode: &str, asked: &'static str, sandbox: bool) -> [&'static str; 5] {
    let command = |confined: &'static str| if sandbox { confined } else { asked };
    match mode {
        "plan" => [NONE, ASKED, command(AUTO), asked, asked],
        "ask" => [NONE, asked, asked, asked, asked],
        "auto" => [NONE, AUTO, command(AUTO), asked, asked],
        "allow-all" => [NONE, AUTO, AUTO, asked, AUTO],
        _ => unreachable!(),
    }
}

/// Runs the script through `serve` in `mode`, denying every approval; returns the
/// labels and the approvals' summaries.
async fn serve_decisions(mode: &str, sandbox: bool) -> (TestEnv, Vec<String>, Vec<String>) {
    let mock = MockServer::start().await;
    let outside = outside_dir();
    script(&mock, outside.path());
    // Outside the temporary directories, which a confined command may always write.
    let mut env = TestEnv::outside_temp()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var(MODE_ENV, mode);
    if !sandbox {
        env = env.var("MAGI_SANDBOX_UNAVAILABLE", "1");
    }
    std::fs::write(env.cwd().join("a.txt"), "a\n").unwrap();
    let mut backend = env.spawn();
    backend
        .initialize(&[
            "session.create",
            "turn.start",
            "approval.answer",
            "shutdown",
        ])
        .await
        .unwrap()
        .unwrap();
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "Go").await;
    let mut summaries = Vec::new();
    loop {
        match next(&mut backend).await {
            magi_client::Incoming::Event {
                event: Event::ApprovalRequested(request),
                ..
            } => {
                summaries.push(request.summary.clone());
                let deny = ApprovalAnswerParams::once(&session, &run, &request.approval_id, false);
                backend
                    .call::<methods::ApprovalAnswer>(&deny)
                    .await
                    .unwrap()
                    .unwrap();
            }
            magi_client::Incoming::Event {
                event: Event::RunFinished(finished),
                ..
            } => {
                assert_eq!(finished.outcome, RunOutcome::Completed, "{finished:?}");
                break;
            }
            _ => {}
        }
    }
    shutdown_clean(&mut backend).await;
    let labels = protections(&env, &session);
    (env, labels, summaries)
}

#[tokio::test]
async fn each_mode_decides_through_serve_with_and_without_a_kernel_sandbox() {
    let kernel = crate::sandbox::available();
    let mut cases = vec![false];
    if kernel {
        cases.push(true);
    }
    for sandbox in cases {
        for mode in ["plan", "ask", "auto", "allow-all"] {
            let (env, labels, summaries) = serve_decisions(mode, sandbox).await;
            let context = format!("{mode}, sandbox {sandbox}: {summaries:?}");
            assert_eq!(labels, expected(mode, ASKED, sandbox), "{context}");
            let asked = expected(mode, ASKED, sandbox)
                .iter()
                .enumerate()
                .filter(|(index, label)| **label == ASKED && !(mode == "plan" && *index == 1))
                .count();
            assert_eq!(summaries.len(), asked, "{context}");
            // A command that ran made its file, except the plan mode's, confined
            // read-only.
            let made = env.cwd().join("made.txt").exists();
            let ran = expected(mode, ASKED, sandbox)[2] == AUTO;
            assert_eq!(made, ran && mode != "plan", "{context}");
            assert!(!env.cwd().join("new.txt").exists() || mode == "auto" || mode == "allow-all");
            assert!(!env.cwd().join("off.txt").exists(), "{context}");
            // Without a kernel sandbox the modes that run confined commands say why
            // they ask.
            if !sandbox && (mode == "auto" || mode == "plan") {
                assert!(
                    summaries[0]
                        .contains("touch made.txt (asked: the sandbox is off (unavailable)"),
                    "{context}"
                );
            }
        }
    }
}

#[tokio::test]
async fn each_mode_decides_through_exec_and_allow_all_stays_its_alias() {
    let kernel = crate::sandbox::available();
    for (args, mode) in [
        (&["--mode", "plan"][..], "plan"),
        (&["--mode", "ask"][..], "ask"),
        (&[][..], "auto"),
        (&["--allow-all"][..], "allow-all"),
    ] {
        let mock = MockServer::start().await;
        let outside = outside_dir();
        script(&mock, outside.path());
        // The default mode is the settings' default, `auto`: no suite `ask` here.
        let env = TestEnv::outside_temp().without(MODE_ENV);
        std::fs::write(env.cwd().join("a.txt"), "a\n").unwrap();
        let mut command = crate::exec::exec_command(&env, &mock, &[args, &["Go"][..]].concat());
        command.stdin(std::process::Stdio::null());
        let output = tokio::time::timeout(WAIT, command.output())
            .await
            .unwrap()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let session = crate::common::approval::only_session(&env);
        let labels = protections(&env, &session);
        assert_eq!(labels, expected(mode, UNAVAILABLE, kernel), "{mode}");
    }
    // A mode no one has is refused before anything starts.
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let mut command = crate::exec::exec_command(&env, &mock, &["--mode", "read-only", "Go"]);
    let output = command.output().await.unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}

/// A backend with `permissions.modes` (and `approval.scopes`) in `mode`.
async fn negotiated(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    let result = backend
        .initialize(&[
            "session.create",
            "session.open",
            "turn.start",
            "approval.answer",
            "shutdown",
            APPROVAL_SCOPES,
            PERMISSION_MODES,
        ])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.capabilities.last().unwrap(), PERMISSION_MODES);
    backend
}

#[tokio::test]
async fn a_mode_set_during_a_turn_applies_to_the_next_call_and_the_model_is_told() {
    let mock = MockServer::start().await;
    let write = |id: &str, path: &str| {
        Reply::stream().tool_call(
            id,
            "write",
            [json!({ "path": path, "content": "x\n" })
                .to_string()
                .as_str()],
        )
    };
    mock.enqueue(write("w1", "one.txt"));
    mock.enqueue(write("w2", "two.txt"));
    mock.enqueue(Reply::stream().text(["Done."]));
    mock.enqueue(Reply::stream().text(["Again."]));
    let env = env_for(&mock);
    let mut backend = negotiated(&env).await;
    let session = new_session(&mut backend).await;
    let list = PermissionsListParams {
        session_id: session.clone(),
    };
    let listed = backend
        .call::<methods::PermissionsList>(&list)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (listed.mode, listed.default_mode),
        (ApprovalMode::Ask, ApprovalMode::Ask)
    );
    let run = start_turn(&mut backend, &session, "Write two files").await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    // Switched while the first call waits: that call still waits for its answer.
    let set = PermissionModeSetParams {
        session_id: session.clone(),
        mode: ApprovalMode::Auto,
    };
    let changed = backend
        .call::<methods::PermissionModeSet>(&set)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (changed.mode, changed.previous),
        (ApprovalMode::Auto, ApprovalMode::Ask)
    );
    let allow = ApprovalAnswerParams::once(&session, &run, &request.approval_id, true);
    backend
        .call::<methods::ApprovalAnswer>(&allow)
        .await
        .unwrap()
        .unwrap();
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::ApprovalRequested(_)))
            .count(),
        1
    );
    assert_eq!(
        protections(&env, &session),
        ["allowed by user", "allowed automatically"]
    );
    // The next request told the model, and the log keeps the change and the note.
    let requests = mock.requests();
    let told = requests[1].body.to_string();
    assert!(
        told.contains("changed the approval mode during this turn"),
        "{told}"
    );
    assert!(told.contains("Approval mode: auto:"), "{told}");
    let kinds: Vec<String> = records(&env, &session)
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect();
    let change = records(&env, &session)
        .into_iter()
        .find(|r| r["kind"] == "permission_mode")
        .unwrap();
    assert_eq!(
        (change["previous"].as_str(), change["mode"].as_str()),
        (Some("ask"), Some("auto"))
    );
    assert_eq!(change["turn_id"].as_str(), Some(run.as_str()));
    assert!(kinds.contains(&"mode_note".to_owned()), "{kinds:?}");
    // Between turns a change is recorded before the answer; the next turn's context
    // says the mode.
    let set = PermissionModeSetParams {
        session_id: session.clone(),
        mode: ApprovalMode::Plan,
    };
    backend
        .call::<methods::PermissionModeSet>(&set)
        .await
        .unwrap()
        .unwrap();
    let last = records(&env, &session).pop().unwrap();
    assert_eq!(
        (last["kind"].as_str(), last["mode"].as_str()),
        (Some("permission_mode"), Some("plan"))
    );
    assert!(last["turn_id"].is_null());
    start_turn(&mut backend, &session, "Again").await;
    until_finished(&mut backend, &mut events).await;
    let again = mock.requests()[3].body.to_string();
    assert!(again.contains("Approval mode: plan:"), "{again}");
    // Another session starts in the default mode.
    let other = new_session(&mut backend).await;
    let listed = backend
        .call::<methods::PermissionsList>(&PermissionsListParams { session_id: other })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(listed.mode, ApprovalMode::Ask);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_session_rule_is_listed_and_revoked_by_a_record_and_asks_again() {
    let mock = MockServer::start().await;
    let ls = || {
        Reply::stream().tool_call(
            "b",
            "bash",
            [json!({ "command": "ls -a" }).to_string().as_str()],
        )
    };
    mock.enqueue(ls());
    mock.enqueue(Reply::stream().text(["Listed."]));
    mock.enqueue(ls());
    mock.enqueue(Reply::stream().text(["Listed again."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\ndeny = [\"bash(rm *)\"]\nask = [\"bash(git push*)\"]\n");
    let mut backend = negotiated(&env).await;
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "List").await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    let always = ApprovalAnswerParams {
        scope: Some(ApprovalScope::Session),
        ..ApprovalAnswerParams::once(&session, &run, &request.approval_id, true)
    };
    backend
        .call::<methods::ApprovalAnswer>(&always)
        .await
        .unwrap()
        .unwrap();
    until_finished(&mut backend, &mut events).await;
    let list = PermissionsListParams {
        session_id: session.clone(),
    };
    let listed = backend
        .call::<methods::PermissionsList>(&list)
        .await
        .unwrap()
        .unwrap();
    let rules: Vec<(RuleSource, RuleEffectName, &str)> = listed
        .rules
        .iter()
        .map(|r| (r.source, r.effect, r.rule.as_str()))
        .collect();
    assert_eq!(
        rules,
        [
            (RuleSource::Session, RuleEffectName::Allow, "bash(ls*)"),
            (RuleSource::Settings, RuleEffectName::Deny, "bash(rm *)"),
            (RuleSource::Settings, RuleEffectName::Ask, "bash(git push*)"),
        ]
    );
    assert_eq!(listed.omitted, 0);
    // Only a rule the session holds can be revoked; settings rules are not its own.
    for (rule, session_id) in [
        ("bash(rm *)", session.as_str()),
        ("bash(nothing*)", session.as_str()),
        ("", session.as_str()),
        ("bash(ls*)", "not a session id!"),
    ] {
        let params = PermissionRuleRevokeParams {
            session_id: session_id.to_owned(),
            rule: rule.to_owned(),
        };
        let refused = backend
            .call::<methods::PermissionRuleRevoke>(&params)
            .await
            .unwrap();
        assert_eq!(refused, Err(ErrorCode::InvalidParams), "{rule}");
    }
    let revoke = PermissionRuleRevokeParams {
        session_id: session.clone(),
        rule: "bash(ls*)".into(),
    };
    let revoked = backend
        .call::<methods::PermissionRuleRevoke>(&revoke)
        .await
        .unwrap()
        .unwrap();
    assert!(revoked.revoked);
    // The log is append-only: the rule's record stays, a revoking record follows it.
    let kinds: Vec<String> = records(&env, &session)
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect();
    let rule_at = kinds.iter().position(|k| k == "session_rule").unwrap();
    let revoked_at = kinds
        .iter()
        .position(|k| k == "session_rule_revoked")
        .unwrap();
    assert!(rule_at < revoked_at, "{kinds:?}");
    // The same command asks again, in this child and after a reopen.
    let run = start_turn(&mut backend, &session, "List again").await;
    let request = until_approval(&mut backend, &mut events).await;
    let allow = ApprovalAnswerParams::once(&session, &run, &request.approval_id, true);
    backend
        .call::<methods::ApprovalAnswer>(&allow)
        .await
        .unwrap()
        .unwrap();
    until_finished(&mut backend, &mut events).await;
    shutdown_clean(&mut backend).await;
    let mut reopened = negotiated(&env).await;
    open_session(&mut reopened, &session).await.unwrap();
    let listed = reopened
        .call::<methods::PermissionsList>(&list)
        .await
        .unwrap()
        .unwrap();
    assert!(
        listed.rules.iter().all(|r| r.source != RuleSource::Session),
        "{listed:?}"
    );
    shutdown_clean(&mut reopened).await;
}

#[tokio::test]
async fn without_the_extension_its_methods_are_unsupported_and_v1_is_unchanged() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let result = backend
        .initialize(&["session.create", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    assert!(result.extensions.is_none());
    let session = new_session(&mut backend).await;
    let refused = backend
        .call::<methods::PermissionsList>(&PermissionsListParams {
            session_id: session,
        })
        .await
        .unwrap();
    assert_eq!(refused, Err(ErrorCode::UnsupportedCapability));
    shutdown_clean(&mut backend).await;
    // With it: params are exact, and the attachment is checked.
    let mut backend = negotiated(&env).await;
    let session = new_session(&mut backend).await;
    let bad = backend
        .request_raw(
            "permissions.mode.set",
            json!({ "session_id": session, "mode": "read-only" }),
        )
        .await
        .unwrap();
    assert_eq!(bad.outcome, Err(ErrorCode::InvalidParams));
    let other = PermissionsListParams {
        session_id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into(),
    };
    let stale = backend
        .call::<methods::PermissionsList>(&other)
        .await
        .unwrap();
    assert_eq!(stale, Err(ErrorCode::StaleSession));
    shutdown_clean(&mut backend).await;
    // A mode the environment names that no one has fails startup as a bad setting.
    let bad_env = env_for(&mock).var(MODE_ENV, "read-only");
    let mut backend = bad_env.spawn();
    let refused = backend.initialize(&["shutdown"]).await.unwrap();
    assert_eq!(refused.unwrap_err(), ErrorCode::ConfigurationInvalid);
}

#[tokio::test]
async fn a_code_mode_scripts_calls_follow_the_sessions_mode_unless_code_mode_sets_one() {
    let nested_write = || {
        crate::code_mode::script(
            "s1",
            "try { await tools.write({path: 'nested.txt', content: 'x\\n'}); return 'wrote'; }\n\
             catch (e) { return 'refused: ' + e.message; }",
        )
    };
    for (settings, switched, asks) in [
        // The session switched to `plan`: the script's write is refused without asking.
        ("", ApprovalMode::Plan, false),
        // `[permissions.code_mode] mode` holds whatever the session's mode.
        (
            "[permissions.code_mode]\nmode = \"ask\"\n",
            ApprovalMode::AllowAll,
            true,
        ),
    ] {
        let mock = MockServer::start().await;
        mock.enqueue(nested_write());
        mock.enqueue(Reply::stream().text(["Noted."]));
        let env = env_for(&mock);
        env.write_settings(settings);
        let mut backend = negotiated(&env).await;
        let session = new_session(&mut backend).await;
        let set = PermissionModeSetParams {
            session_id: session.clone(),
            mode: switched,
        };
        backend
            .call::<methods::PermissionModeSet>(&set)
            .await
            .unwrap()
            .unwrap();
        let run = start_turn(&mut backend, &session, "Script it").await;
        let mut events = Vec::new();
        if asks {
            let request = until_approval(&mut backend, &mut events).await;
            assert!(
                request.summary.starts_with("Code Mode script: "),
                "{request:?}"
            );
            let deny = ApprovalAnswerParams::once(&session, &run, &request.approval_id, false);
            backend
                .call::<methods::ApprovalAnswer>(&deny)
                .await
                .unwrap()
                .unwrap();
        }
        let finished = until_finished(&mut backend, &mut events).await;
        assert_eq!(finished.outcome, RunOutcome::Completed);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::ApprovalRequested(_)))
                || asks,
            "{events:?}"
        );
        shutdown_clean(&mut backend).await;
        assert!(!env.cwd().join("nested.txt").exists());
        let nested = records(&env, &session)
            .into_iter()
            .find(|r| r["kind"] == "code_mode_tool_result")
            .unwrap();
        assert_eq!(nested["protection"], "denied by user", "{nested}");
    }
}
