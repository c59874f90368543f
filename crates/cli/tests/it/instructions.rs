//! Instruction files through the real binary: the global and project `AGENTS.md`,
//! `MAGI.md` and the files settings list reach the model in their documented order, and
//! a listed file that is missing, binary or too large fails startup cleanly; the
//! built-in instructions and the environment block open the system prompt (or the
//! person's own base file replaces them), and each turn's prompt follows its context
//! note, recorded in the session log.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_protocol::ErrorCode;
use magi_protocol::messages::RunOutcome;
use magi_testkit::{MockServer, Reply};

fn env_for(mock: &MockServer) -> TestEnv {
    TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
}

#[tokio::test]
async fn instructions_reach_the_model_in_order() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Understood."]));
    let env = env_for(&mock);
    env.write_settings("[instructions]\nfiles = [\"docs/extra.md\"]\n");
    std::fs::write(env.mc_home().join("AGENTS.md"), "GLOBAL-RULE: be kind.\n").unwrap();
    std::fs::write(
        env.cwd().join("AGENTS.md"),
        "PROJECT-RULE: run the tests.\n",
    )
    .unwrap();
    std::fs::write(env.cwd().join("MAGI.md"), "MAGI-RULE: small commits.\n").unwrap();
    std::fs::create_dir_all(env.cwd().join("docs")).unwrap();
    std::fs::write(env.cwd().join("docs/extra.md"), "EXTRA-RULE: no panics.\n").unwrap();
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    session_with_turn(&mut backend, "hi").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let system = mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let at = |rule: &str| {
        system
            .find(rule)
            .unwrap_or_else(|| panic!("{rule} missing: {system}"))
    };
    assert!(at("GLOBAL-RULE") < at("PROJECT-RULE"));
    assert!(at("PROJECT-RULE") < at("MAGI-RULE"));
    assert!(at("MAGI-RULE") < at("EXTRA-RULE"));
    assert!(
        system.contains("# Instructions from docs/extra.md"),
        "{system}"
    );
    shutdown_clean(&mut backend).await;
}

/// What a case does to the environment before the backend starts.
type Prepare = Box<dyn Fn(&TestEnv)>;

#[tokio::test]
async fn bad_instruction_files_fail_startup() {
    let mock = MockServer::start().await;
    let cases: [(&str, Prepare); 3] = [
        (
            "a listed file that is missing",
            Box::new(|env: &TestEnv| {
                env.write_settings("[instructions]\nfiles = [\"nowhere.md\"]\n")
            }),
        ),
        (
            "a binary AGENTS.md",
            Box::new(|env: &TestEnv| {
                std::fs::write(env.cwd().join("AGENTS.md"), b"\x00\x01binary").unwrap()
            }),
        ),
        (
            "an AGENTS.md over 64 KiB",
            Box::new(|env: &TestEnv| {
                std::fs::write(
                    env.cwd().join("AGENTS.md"),
                    "x".repeat(magi_config::INSTRUCTION_FILE_BYTES + 1),
                )
                .unwrap()
            }),
        ),
    ];
    for (what, prepare) in cases {
        let env = env_for(&mock);
        prepare(&env);
        let mut backend = env.spawn();
        let got = backend.initialize(&["status", "shutdown"]).await.unwrap();
        assert_eq!(got, Err(ErrorCode::ConfigurationInvalid), "{what}");
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn skills_are_listed_and_loaded_with_the_skill_tool() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("k1", "skill", ["{\"name\":\"release\"}"]));
    mock.enqueue(Reply::stream().text(["I will follow it."]));
    let env = env_for(&mock);
    let skill = env.cwd().join(".magi/skills/release");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "# Release this project\n\nRun `cargo publish --dry-run` first.\n",
    )
    .unwrap();
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    session_with_turn(&mut backend, "release it").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let first = mock.requests()[0].body.to_string();
    assert!(first.contains("- release: Release this project"), "{first}");
    assert!(first.contains("\"skill\""), "the tool is offered: {first}");
    let second = mock.requests()[1].body.to_string();
    assert!(second.contains("cargo publish --dry-run"), "{second}");
    shutdown_clean(&mut backend).await;

    // A skill folder without its description fails startup.
    let broken = env_for(&mock);
    std::fs::create_dir_all(broken.cwd().join(".magi/skills/empty")).unwrap();
    let mut backend = broken.spawn();
    let got = backend.initialize(&["status", "shutdown"]).await.unwrap();
    assert_eq!(got, Err(ErrorCode::ConfigurationInvalid));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_primary_profile_shapes_the_agent_and_bad_ones_fail_startup() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("b1", "bash", ["{\"command\":\"touch ran\"}"]));
    mock.enqueue(Reply::stream().text(["Only reading then."]));
    let env = env_for(&mock);
    env.write_settings(
        "[agent]\nprofile = \"reader\"\n\n[profiles.reader]\ninstructions = \"PROFILE-RULE: read only.\"\ntools = [\"read\", \"grep\"]\nmodel = \"profiled-model\"\n",
    );
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    session_with_turn(&mut backend, "go").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let first = &mock.requests()[0].body;
    assert_eq!(first["model"], "profiled-model");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, vec!["read", "grep"]);
    assert!(first.to_string().contains("PROFILE-RULE: read only."));
    let second = mock.requests()[1].body.to_string();
    assert!(
        second.contains("bash is not offered to this agent"),
        "{second}"
    );
    assert!(!env.cwd().join("ran").exists());
    shutdown_clean(&mut backend).await;

    for settings in [
        "[agent]\nprofile = \"ghost\"\n",
        "[agent]\nprofile = \"p\"\n\n[profiles.p]\ntools = [\"teleport\"]\n",
    ] {
        let env = env_for(&mock);
        env.write_settings(settings);
        let mut backend = env.spawn();
        let got = backend.initialize(&["status", "shutdown"]).await.unwrap();
        assert_eq!(got, Err(ErrorCode::ProfileInvalid), "{settings}");
        shutdown_clean(&mut backend).await;
    }
}

/// The system prompt and the user messages of a Chat Completions request body.
fn system_and_users(body: &serde_json::Value) -> (String, Vec<String>) {
    let messages = body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap().to_owned();
    let users = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    (system, users)
}

#[tokio::test]
async fn the_model_is_told_how_to_work_where_it_is_and_the_state_of_each_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["One."]));
    mock.enqueue(Reply::stream().text(["Two."]));
    let env = env_for(&mock).var("PATH", &std::env::var("PATH").unwrap());
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env.cwd())
            .output()
            .unwrap()
    };
    assert!(git(&["init", "-q", "-b", "work"]).status.success());
    std::fs::write(env.cwd().join("a.txt"), "a").unwrap();
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = session_with_turn(&mut backend, "first").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    std::fs::write(env.cwd().join("b.txt"), "b").unwrap();
    start_turn(&mut backend, &session, "second").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    let requests = mock.requests();
    let (system, users) = system_and_users(&requests[0].body);
    for part in [
        "You are magi-code",
        "# How to work",
        "# Choosing tools",
        "`hash_edit`",
        "# Editing",
        "# Verifying",
        "# Sandbox and approvals",
        "# Git",
        "# Environment",
        &format!("- Working directory: {}", env.cwd().display()),
        "- Sandbox",
        "- Context window: ",
    ] {
        assert!(system.contains(part), "{part} missing: {system}");
    }
    // Only offered tools are named: this model takes no images.
    assert!(!system.contains("view_image"), "{system}");
    // The turn's state goes before its prompt, not into the system prompt.
    assert!(!system.contains("- Git:"), "{system}");
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(is_turn_context(&users[0]), "{users:?}");
    let cwd = env.cwd().display().to_string();
    for part in [
        "- Date: ",
        &format!("- Git: repository at {cwd}, branch `work`, 1 changed file"),
        "- Approval mode: ask",
    ] {
        assert!(users[0].contains(part), "{part} missing: {}", users[0]);
    }
    assert_eq!(users[1], "first");
    // The second turn's request repeats the first turn as it was sent, its note and all,
    // then its own note (two files changed now) and prompt.
    let (second_system, second_users) = system_and_users(&requests[1].body);
    assert_eq!(second_system, system);
    assert_eq!(second_users.len(), 4, "{second_users:?}");
    assert_eq!(second_users[..2], users[..]);
    assert!(
        second_users[2].contains("2 changed files"),
        "{second_users:?}"
    );
    assert_eq!(second_users[3], "second");
    // The notes are in the session log, for later requests to replay.
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert_eq!(log.matches("\"kind\":\"turn_context\"").count(), 2, "{log}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_persons_own_base_instructions_replace_the_built_in_ones_and_an_append_follows() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Understood."]));
    let env = env_for(&mock);
    env.write_settings("[instructions]\nbase = \"mine.md\"\nappend = \"more.md\"\n");
    std::fs::write(env.cwd().join("mine.md"), "MY-BASE: work my way.\n").unwrap();
    std::fs::write(env.cwd().join("more.md"), "MORE-RULE: and this.\n").unwrap();
    std::fs::write(
        env.cwd().join("AGENTS.md"),
        "PROJECT-RULE: run the tests.\n",
    )
    .unwrap();
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    session_with_turn(&mut backend, "hi").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    let (system, _) = system_and_users(&mock.requests()[0].body);
    assert!(
        system.starts_with("MY-BASE: work my way.\n\nMORE-RULE: and this."),
        "{system}"
    );
    assert!(!system.contains("# How to work"), "{system}");
    let at = |part: &str| {
        system
            .find(part)
            .unwrap_or_else(|| panic!("{part}: {system}"))
    };
    assert!(at("MORE-RULE") < at("# Environment"));
    assert!(at("# Environment") < at("PROJECT-RULE"));
    shutdown_clean(&mut backend).await;
}
