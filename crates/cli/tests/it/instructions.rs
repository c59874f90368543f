//! Instruction files through the real binary: the global and project `AGENTS.md`,
//! `MAGI.md` and the files settings list reach the model in their documented order, and
//! a listed file that is missing, binary or too large fails startup cleanly.

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
