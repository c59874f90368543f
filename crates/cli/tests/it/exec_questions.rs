//! `magi-code exec` answering the model's questions (`user.questions`): at a terminal
//! (under tmux) it shows each question with numbered options and takes a number, a
//! list of numbers or words; without one it declines and says so.

use crate::common::approval::*;
use crate::common::tmux::Tmux;
use crate::common::*;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

fn ask() -> Reply {
    let arguments = json!({"questions": [
        {"question": "Which database?", "header": "Database",
         "options": [{"label": "Postgres", "description": "a server"}, {"label": "SQLite"}]},
        {"question": "Which extras?", "multi_select": true,
         "options": [{"label": "cache"}, {"label": "metrics"}, {"label": "tracing"}]},
        {"question": "Which port?", "options": [{"label": "80"}, {"label": "8080"}]}
    ]})
    .to_string();
    Reply::stream().tool_call("q1", "ask_user", [arguments.as_str()])
}

#[tokio::test]
async fn exec_without_a_terminal_declines_the_questions() {
    let mock = MockServer::start().await;
    mock.enqueue(ask());
    mock.enqueue(Reply::stream().text(["I will pick myself."]));
    let env = env_for(&mock);
    let output = tokio::process::Command::new(bin())
        .args(["exec", "Set it up"])
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
        stderr.contains("the model asked a question: declined: no terminal to ask"),
        "{stderr}"
    );
    assert_eq!(
        tool_outputs(&mock.requests()[1].body),
        ["The user declined to answer."]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_at_a_terminal_asks_each_question() {
    let mock = MockServer::start().await;
    mock.enqueue(ask());
    mock.enqueue(Reply::stream().text(["Set up."]));
    let env = env_for(&mock);
    let vars = [
        ("MAGI_PROVIDER", "openai-chat".to_owned()),
        ("MAGI_MODEL", "mock-model".to_owned()),
        ("OPENAI_BASE_URL", mock.base_url()),
    ];
    // The shell keeps the window open after exec, to read its exit status.
    let script = format!(
        "'{}' exec 'Set it up'; echo \"exec exited $?\"; sleep 60",
        bin()
    );
    let tmux = Tmux::start_command(&env, &vars, &["sh", "-c", &script]);
    let screen = tmux.wait_for("[2] SQLite");
    assert!(screen.contains("[Database]"), "{screen}");
    assert!(screen.contains("[1] Postgres — a server"), "{screen}");
    tmux.type_text("2");
    tmux.key("Enter");
    tmux.wait_for("[3] tracing");
    tmux.type_text("3, 1");
    tmux.key("Enter");
    tmux.wait_for("Which port?");
    tmux.type_text("whatever is free");
    tmux.key("Enter");
    tmux.wait_for("exec exited 0");
    assert_eq!(
        tool_outputs(&mock.requests()[1].body),
        [
            "The user answered:\n- Which database?: SQLite\n- Which extras?: tracing; cache\n\
          - Which port?: (in their own words) whatever is free"
        ]
    );
}
