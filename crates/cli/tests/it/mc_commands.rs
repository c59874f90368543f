//! Mission Control's slash commands through the real binary in a real terminal (tmux)
//! against the mock model: `/help`, `/model`, `/new`, `/sessions`, `/status`,
//! `/compact` and `/diff`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::only_session;
use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

/// Every command `/help` must list.
const COMMANDS: [&str; 9] = [
    "help", "new", "sessions", "model", "compact", "copy", "diff", "status", "quit",
];

/// Closes a panel, and waits until it is closed: keys typed right after Esc would be
/// read with it as one Alt key.
fn close_panel(tmux: &Tmux) {
    tmux.key("Escape");
    tmux.wait_for("Enter send");
}

/// Types a command and presses Enter.
fn command(tmux: &Tmux, text: &str) {
    tmux.type_text(text);
    tmux.key("Enter");
}

/// The session logs of the test's working directory.
fn session_logs(env: &TestEnv) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(workspace_dir(env)) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".jsonl"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_lists_every_command_and_an_unknown_one_stays_in_the_composer_with_what_it_meant() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "/help");
    let screen = tmux.wait_for("Keys");
    for name in COMMANDS {
        assert!(screen.contains(&format!("/{name} ")), "/{name}:\n{screen}");
    }
    close_panel(&tmux);
    command(&tmux, "/nope");
    let screen = tmux.wait_for("unknown command /nope — /help lists them");
    assert!(screen.contains("› /nope"), "the text stays: {screen}");
    // A typo names the command it most likely meant; one run straight into another
    // script without a space is still a command attempt, not a prompt.
    tmux.key("C-u");
    command(&tmux, "/stauts");
    tmux.wait_for("unknown command /stauts — did you mean /status? /help lists them");
    tmux.key("C-u");
    command(&tmux, "/stauts検査して");
    let screen =
        tmux.wait_for("unknown command /stauts検査して — did you mean /status? /help lists them");
    assert!(
        screen.contains("› /stauts検査して"),
        "the text stays: {screen}"
    );
    assert!(mock.requests().is_empty(), "nothing was sent as a prompt");
    // The command then typed runs, and the notice goes with it.
    tmux.key("C-u");
    command(&tmux, "/help");
    tmux.wait_for("Keys");
    tmux.wait_gone("unknown command");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_switches_and_the_next_request_names_it() {
    let mock = MockServer::start().await;
    mock.set_models([("mock-model", None), ("mock-model-2", None)]);
    mock.enqueue(Reply::stream().text(["From two."]));
    mock.enqueue(Reply::stream().text(["From one."]));
    let env = TestEnv::new();
    env.write_settings(
        "[providers.catalog]\nenabled = [\"openai-chat/mock-model\", \"openai-chat/mock-model-2\"]\n",
    );
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "/model");
    // No list fetched yet: the picker says why and offers to fetch it.
    let screen = tmux.wait_for("Current: openai-chat/mock-model");
    assert!(
        screen.contains("openai-chat: its model list was never fetched (r fetches it)"),
        "{screen}"
    );
    tmux.type_text("r");
    tmux.wait_for("openai-chat: 2 models fetched");
    let screen = tmux.wait_for("openai-chat/mock-model-2");
    assert!(
        screen.contains("openai-chat/mock-model · current"),
        "{screen}"
    );
    tmux.key("Down");
    tmux.key("Enter");
    tmux.wait_for("model: openai-chat/mock-model-2");
    command(&tmux, "which model?");
    tmux.wait_for("From two.");
    tmux.wait_for("idle ·");
    // A typed provider/model switches back.
    command(&tmux, "/model openai-chat/mock-model");
    tmux.wait_for("model: openai-chat/mock-model ");
    command(&tmux, "and now?");
    tmux.wait_for("From one.");
    tmux.wait_for("idle ·");
    let models: Vec<String> = mock
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.body["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(models, ["mock-model-2", "mock-model"]);
    // A model outside the catalog is refused in words.
    command(&tmux, "/model openai-chat/nope");
    tmux.wait_for("openai-chat/nope is not among the catalog's choices");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_starts_a_new_session_with_an_empty_transcript() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["First answer."]));
    mock.enqueue(Reply::stream().text(["Second answer."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "first question");
    tmux.wait_for("First answer.");
    tmux.wait_for("idle ·");
    let first = only_session(&env);
    command(&tmux, "/new");
    let screen = tmux.wait_for("idle · new session");
    assert!(!screen.contains("First answer."), "{screen}");
    assert!(!screen.contains("first question"), "{screen}");
    command(&tmux, "second question");
    tmux.wait_for("Second answer.");
    tmux.wait_for("idle ·");
    let logs = session_logs(&env);
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(logs.contains(&format!("{first}.jsonl")), "{logs:?}");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_lists_past_the_list_bound_with_titles_and_reopens_one() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    // More sessions than `session.list` can hold (256), one of them titled and newest.
    for n in 0..300 {
        let id = format!("s{n:03}");
        write_log(&env, &id, &record(&id, "session_meta", json!({"cwd": cwd})));
    }
    write_log(
        &env,
        "s150",
        &[
            record("s150", "session_meta", json!({"cwd": cwd})),
            record_at(
                "s150",
                "2026-11-30T10:00:00Z",
                "title",
                json!({"title": "Fix the parser"}),
            ),
        ]
        .concat(),
    );
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "/sessions");
    let screen = tmux.wait_for("300 of 300 sessions");
    // The newest is first and selected; the untitled ones show their IDs.
    assert!(screen.contains("▶ Fix the parser · "), "{screen}");
    assert!(screen.contains("  s299 · "), "{screen}");
    tmux.type_text("s29");
    tmux.wait_for("10 of 300 sessions · filter: s29");
    tmux.key("BSpace");
    tmux.key("BSpace");
    tmux.key("BSpace");
    tmux.type_text("parser");
    tmux.wait_for("1 of 300 sessions · filter: parser");
    tmux.key("Enter");
    // As a person would, the next command once the session opened: keys that arrive
    // together with the Enter read as one burst (a paste).
    tmux.wait_gone("Sessions of this directory");
    command(&tmux, "/status");
    tmux.wait_for("session    s150 (Fix the parser)");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_the_session_model_paths_and_tokens() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hello."]).usage(1200, 80));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "hi");
    tmux.wait_for("Hello.");
    tmux.wait_for("idle ·");
    let session = only_session(&env);
    command(&tmux, "/status");
    let screen = tmux.wait_for("MC_HOME");
    let row = |name: &str| -> String {
        screen
            .lines()
            .find(|l| l.contains(&format!(" {name:<10} ")))
            .unwrap_or_else(|| panic!("no {name} row:\n{screen}"))
            .to_owned()
    };
    assert!(row("session").contains(&session), "{screen}");
    assert!(row("model").contains("openai-chat/mock-model"), "{screen}");
    assert!(row("base URL").contains(&mock.base_url()), "{screen}");
    assert!(
        row("MC_HOME").contains(&env.mc_home().display().to_string()),
        "{screen}"
    );
    assert!(row("tokens").contains("1,200 in"), "{screen}");
    assert!(row("context").contains("1,280 of "), "{screen}");
    close_panel(&tmux);
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_sends_the_last_reply_to_the_terminals_clipboard() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Copy ", "me: 世界 🌍"]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.accept_clipboard();
    tmux.wait_for("idle ·");
    command(&tmux, "/copy");
    tmux.wait_for("no reply to copy yet");
    command(&tmux, "say it");
    tmux.wait_for("Copy me");
    tmux.wait_for("idle ·");
    command(&tmux, "/copy");
    tmux.wait_for("copied 13 characters (sent to the terminal's clipboard)");
    assert_eq!(tmux.clipboard(), "Copy me: 世界 🌍");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_is_answered_and_diff_shows_the_changes() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "w1",
        "write",
        ["{\"path\":\"out.txt\",\"content\":\"hello\\n\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Wrote it."]));
    mock.enqueue(Reply::stream().text(["The user asked for out.txt; it was written."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "/diff");
    tmux.wait_for("no changes recorded");
    close_panel(&tmux);
    command(&tmux, "write it");
    tmux.wait_for("y allow once");
    tmux.type_text("y");
    tmux.wait_for("Wrote it.");
    tmux.wait_for("write out.txt  done");
    tmux.wait_for("idle ·");
    command(&tmux, "/diff");
    let screen = tmux.wait_for("out.txt (applied)");
    assert!(screen.contains("+hello"), "{screen}");
    close_panel(&tmux);
    command(&tmux, "/compact");
    tmux.wait_for("compacted: a summary now stands for the conversation so far");
    assert_eq!(mock.requests().len(), 3);
    let session = only_session(&env);
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(log.contains("\"kind\":\"compaction\""), "{log}");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panel_gives_way_to_an_approval() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call(
                "w1",
                "write",
                ["{\"path\":\"out.txt\",\"content\":\"x\\n\"}"],
            )
            .held(),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "write it");
    tmux.wait_for("working");
    // Commands that need no session worker run during a turn.
    command(&tmux, "/help");
    tmux.wait_for("Keys");
    mock.release();
    let screen = tmux.wait_for("y allow once");
    assert!(!screen.contains("Keys"), "the panel closed: {screen}");
    tmux.type_text("y");
    tmux.wait_for("Done.");
    tmux.key("C-c");
}

/// `/status`'s `sandbox` row: the mode in force with these settings on this kernel, at
/// the narrow and the wide width.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_the_sandbox_mode_in_force() {
    if !crate::sandbox::available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    for (columns, settings, shown) in [
        (120, "", "workspace-write; network none"),
        (
            80,
            "[sandbox]\nmode = \"read-only\"\nnetwork = \"loopback\"\n",
            "read-only; network loopback",
        ),
    ] {
        env.write_settings(settings);
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        tmux.wait_for("idle ·");
        command(&tmux, "/status");
        let screen = tmux.wait_for("MC_HOME");
        let row = screen
            .lines()
            .find(|line| line.contains(" sandbox    "))
            .unwrap_or_else(|| panic!("no sandbox row:\n{screen}"));
        assert!(row.contains(shown), "{columns} columns:\n{screen}");
        close_panel(&tmux);
        tmux.key("C-c");
    }
}

/// The model each model request asked for, in order.
fn models_asked(mock: &MockServer) -> Vec<String> {
    mock.requests()
        .iter()
        .filter_map(|r| r.body["model"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetched_model_is_enabled_by_picking_it_and_kept_by_new_sessions() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        mock.set_models([("mock-a", None), ("mock-b", Some("Mock B 日本"))]);
        for n in ["First", "Second", "Third"] {
            mock.enqueue(Reply::stream().text([format!("{n} answer.")]));
        }
        let env = TestEnv::new();
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        tmux.wait_for("idle ·");
        tmux.type_text("/model");
        tmux.key("Enter");
        tmux.wait_for("r fetches");
        tmux.type_text("r");
        // The fetched list is offered though nothing of it is enabled.
        tmux.wait_for("Fetched, not enabled yet");
        tmux.wait_for("  openai-chat/mock-b");
        tmux.key("Down");
        tmux.key("Down");
        tmux.wait_for("▶ openai-chat/mock-b");
        tmux.key("Enter");
        // Enabled in the global settings, a fresh backend read them, the session
        // switched.
        tmux.wait_for("enabled openai-chat/mock-b in");
        let settings = std::fs::read_to_string(env.mc_home().join("settings.toml")).unwrap();
        assert!(
            settings.contains("enabled = [\"openai-chat/mock-b\"]"),
            "{settings}"
        );
        tmux.wait_for("idle · ");
        tmux.type_text("which model");
        tmux.key("Enter");
        tmux.wait_for("First answer.");
        tmux.wait_for("idle ·");
        assert_eq!(models_asked(&mock), ["mock-b"]);
        // A new session goes on with it.
        tmux.type_text("/new");
        tmux.key("Enter");
        tmux.wait_for("new session");
        tmux.type_text("again");
        tmux.key("Enter");
        tmux.wait_for("Second answer.");
        tmux.wait_for("idle ·");
        assert_eq!(models_asked(&mock), ["mock-b", "mock-b"]);
        // A typed choice the fetched list holds goes the same way.
        tmux.type_text("/model openai-chat/mock-a");
        tmux.key("Enter");
        tmux.wait_for("enabled openai-chat/mock-a in");
        tmux.wait_for("idle · ");
        tmux.type_text("third");
        tmux.key("Enter");
        tmux.wait_for("Third answer.");
        tmux.wait_for("idle ·");
        assert_eq!(models_asked(&mock), ["mock-b", "mock-b", "mock-a"]);
        tmux.key("C-c");
    }
}
