//! Mission Control's session life under tmux: Ctrl-C's three meanings, a prompt queued
//! during a turn, the status line, the farewell that says how to resume, `--continue`
//! and `--resume`, the first-run screen for a missing provider or a broken settings
//! file, and a redraw on resize.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use magi_testkit::{MockServer, Reply};

/// Mission Control with `arguments`, then, once it exits, its exit status on the
/// screen (the shell stays so the farewell can be read).
fn start_with_shell(env: &TestEnv, vars: &[(&str, String)], arguments: &str) -> Tmux {
    let script = format!("\"$0\" {arguments}; echo \"exit status $?\"; exec sleep 600");
    Tmux::start_command(env, vars, &["sh", "-c", &script, bin()])
}

/// The text of the last user prompt the mock received.
fn last_prompt(mock: &MockServer) -> String {
    let request = mock.requests().pop().expect("a request");
    let messages = request.body["messages"].as_array().unwrap().clone();
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_turn_then_clears_the_composer_then_quits_when_pressed_twice() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Still thinking"]).held());
    let env = TestEnv::new();
    let tmux = start_with_shell(&env, &vars(&mock), "");
    tmux.wait_for("idle ·");
    tmux.type_text("a long task");
    tmux.key("Enter");
    tmux.wait_for("working");
    // First: the running turn stops, and Mission Control stays.
    tmux.key("C-c");
    let screen = tmux.wait_for("idle ·");
    assert!(screen.contains("› a long task"), "{screen}");
    // Second: text in the composer is cleared.
    tmux.type_text("draft words");
    tmux.wait_for("› draft words");
    tmux.key("C-c");
    let screen = tmux.wait_gone("draft words");
    assert!(screen.contains("idle ·"), "{screen}");
    // On an empty composer, once asks, twice quits.
    tmux.key("C-c");
    tmux.wait_for("press Ctrl-C again to quit");
    tmux.key("C-c");
    let screen = tmux.wait_for("exit status 0");
    let id = only_session_id(&env);
    assert!(
        screen.contains(&format!("Resume it with: magi-code --resume {id}")),
        "{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_typed_during_a_turn_is_queued_and_sent_when_it_ends() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["First reply."]).held());
    mock.enqueue(Reply::stream().text(["Second reply."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("first");
    tmux.key("Enter");
    tmux.wait_for("working");
    tmux.type_text("second, queued");
    tmux.key("Enter");
    tmux.wait_for("queued, sent when the turn ends (Up edits):");
    tmux.wait_for("  › second, queued");
    // Up brings it back to edit; Enter queues it again.
    tmux.key("Up");
    tmux.wait_for("› second, queued");
    tmux.type_text(" and edited");
    tmux.key("Enter");
    tmux.wait_for("  › second, queued and edited");
    // The first prompt's request may still be on its way (the status line says
    // "working" as the turn starts); the queued one must not have followed it.
    assert!(
        mock.requests().len() <= 1,
        "nothing more is sent while the turn runs"
    );
    mock.release();
    let screen = tmux.wait_for("Second reply.");
    assert!(screen.contains("First reply."), "{screen}");
    assert_eq!(last_prompt(&mock), "second, queued and edited");
    tmux.quit();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_and_resume_open_straight_into_a_session() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Remembered answer."]));
    let env = TestEnv::new();
    {
        let tmux = Tmux::start(&env, &vars(&mock));
        tmux.wait_for("idle ·");
        tmux.type_text("remember this");
        tmux.key("Enter");
        tmux.wait_for("Remembered answer.");
        tmux.wait_for("idle ·");
        tmux.quit();
    }
    let id = only_session_id(&env);
    for arguments in ["--continue".to_owned(), format!("--resume {id}")] {
        let tmux = start_with_shell(&env, &vars(&mock), &arguments);
        tmux.wait_for("Remembered answer.");
        tmux.wait_for("› remember this");
        tmux.wait_for(&format!("session {id}"));
        quit_to_shell(&tmux);
    }
    // An unknown session is said, with the way out, after the terminal is restored.
    let tmux = start_with_shell(&env, &vars(&mock), "--resume no-such-session");
    let screen = tmux.wait_for("exit status 1");
    assert!(
        screen.contains("there is no session no-such-session in this directory"),
        "{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_run_without_a_provider_guides_and_a_fixed_settings_file_is_read_on_retry() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Ready now."]));
    let env = TestEnv::new();
    let settings = env.mc_home().join("settings.toml");
    std::fs::create_dir_all(env.mc_home()).unwrap();
    std::fs::write(
        &settings,
        "provider = \"local\"\n[tools]\ndisabled = \"bash\"\n",
    )
    .unwrap();
    let tmux = start_with_shell(&env, &[], "");
    tmux.wait_for("magi-code cannot start yet");
    // The broken place is named.
    tmux.wait_for("settings.toml:3:12: key `tools.disabled`");
    tmux.wait_for("r try again · q quit");
    // Still broken: the same screen again.
    tmux.key("r");
    tmux.wait_for("magi-code cannot start yet");
    // A provider without a model: the ways to set one up.
    std::fs::write(&settings, "provider = \"anthropic\"\n").unwrap();
    tmux.key("r");
    tmux.wait_for("Set up a model provider");
    tmux.wait_for("ANTHROPIC_API_KEY");
    // Fixed: the retry starts the backend and Mission Control opens.
    std::fs::write(
        &settings,
        format!(
            "provider = \"local\"\nmodel = \"mock-model\"\n[providers.local]\n\
             kind = \"openai-chat\"\nbase_url = \"{}\"\nkeyless = true\n",
            mock.base_url()
        ),
    )
    .unwrap();
    tmux.key("r");
    tmux.wait_for("idle · ask mode · local/mock-model");
    tmux.type_text("go");
    tmux.key("Enter");
    tmux.wait_for("Ready now.");
    quit_to_shell(&tmux);
    // Quitting from the first-run screen is not a failure.
    std::fs::write(&settings, "provider = \"anthropic\"\n").unwrap();
    let tmux = start_with_shell(&env, &[], "");
    tmux.wait_for("magi-code cannot start yet");
    tmux.key("q");
    tmux.wait_for("exit status 0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_guides_commands_work_as_copied_from_the_screen() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hello from the local server."]));
    let env = TestEnv::new();
    std::fs::create_dir_all(env.mc_home()).unwrap();
    std::fs::write(
        env.mc_home().join("settings.toml"),
        "provider = \"openai\"\n",
    )
    .unwrap();
    // 80 columns: what a person copies is what the screen shows, rows and all.
    let tmux = Tmux::launch_sized(&env, &[], &[bin()], 80, 60);
    let screen = tmux.wait_for("Set up a model provider");
    tmux.wait_for("doctor");
    // Each section's commands, one a row, copied as they are on the screen.
    let mut sections: Vec<Vec<String>> = Vec::new();
    for row in screen.lines() {
        let text = row.trim();
        if text.ends_with(':') && !text.starts_with("export") && row.starts_with("  ") {
            sections.push(Vec::new());
        } else if text.starts_with("export ") {
            sections.last_mut().unwrap().push(text.to_owned());
        }
    }
    assert_eq!(sections.len(), 3, "{screen}");
    for (n, section) in sections.iter().enumerate() {
        assert_eq!(section.len(), 3, "{screen}");
        // The person's key and model in place of the placeholders; the local server
        // where the mock listens.
        let script = section
            .join("\n")
            .replace("YOUR_KEY", "key-0123")
            .replace("YOUR_MODEL", "mock-model")
            .replace("http://127.0.0.1:8080/v1", &mock.base_url());
        let check = if n == 2 {
            format!("{} exec 'say hello'", bin())
        } else {
            format!("{} doctor", bin())
        };
        let output = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("unset MAGI_PROVIDER MAGI_MODEL OPENAI_API_KEY ANTHROPIC_API_KEY OPENAI_BASE_URL\n{script}\n{check}"))
            .current_dir(env.cwd())
            .env("MC_HOME", env.mc_home())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{script}\n{said}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        if n == 2 {
            assert!(said.contains("Hello from the local server."), "{said}");
        } else {
            assert!(said.contains("are selected and ready locally"), "{said}");
        }
    }
    tmux.key("q");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_redraws_at_once() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    let width = |screen: &str| {
        screen
            .lines()
            .find(|line| line.starts_with("┌ magi-code"))
            .map(|line| line.chars().count())
    };
    assert_eq!(width(&tmux.screen()), Some(120));
    tmux.resize(80, 24);
    let deadline = std::time::Instant::now() + WAIT;
    while width(&tmux.screen()) != Some(80) {
        assert!(std::time::Instant::now() < deadline, "{}", tmux.screen());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    tmux.quit();
}

/// Quits Mission Control started by [`start_with_shell`] and waits for its exit status.
fn quit_to_shell(tmux: &Tmux) {
    tmux.wait_for("idle ·");
    tmux.key("C-c");
    tmux.key("C-c");
    tmux.wait_for("exit status 0");
}

/// The ID of the only session of `env`'s workspace.
fn only_session_id(env: &TestEnv) -> String {
    crate::common::approval::only_session(env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_keeps_its_cause_on_screen() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::error(
        400,
        "{\"error\":{\"message\":\"no such model\"}}",
    ));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("fail please");
    tmux.key("Enter");
    // The history says the turn failed; the cause, which only the live diagnostic
    // carried, stays with it.
    tmux.wait_for("The turn failed");
    let screen = tmux.wait_for("with HTTP 400");
    assert!(screen.contains("› fail please"), "{screen}");
    tmux.quit();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_shows_the_title_as_soon_as_it_is_recorded() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Tabs are fine now."]));
    mock.enqueue_title(Reply::stream().text(["Tabs in the parser"]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    let id = {
        tmux.type_text("make the parser accept tabs");
        tmux.key("Enter");
        tmux.wait_for("Tabs are fine now.");
        only_session_id(&env)
    };
    // The session's ID stands in until the title arrives (`session.titled`).
    let screen = tmux.wait_for("· Tabs in the parser ·");
    assert!(!screen.contains(&format!("session {id}")), "{screen}");
    tmux.quit();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_does_not_outlive_the_next_prompt() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hello back."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("/modle");
    tmux.key("Enter");
    tmux.wait_for("unknown command /modle");
    tmux.key("C-c");
    tmux.wait_gone("› /modle");
    tmux.type_text("hello");
    tmux.key("Enter");
    tmux.wait_for("Hello back.");
    tmux.wait_gone("unknown command /modle");
    tmux.quit();
}
