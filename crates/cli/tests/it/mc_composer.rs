//! Mission Control's composer through the real binary in tmux: pastes sent whole, new
//! lines by key, the prompt history across a restart, and `@` mentions.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use crate::exec::user_messages;
use magi_testkit::{MockServer, Reply};

/// The prompt the model was given in the `n`th request.
fn prompt_sent(mock: &MockServer, n: usize) -> String {
    let requests = mock.requests();
    let body = &requests[n].body;
    user_messages(body).pop().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_line_bracketed_paste_is_sent_whole() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Got both."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.paste("first line\nsecond line");
    // Both lines are in the composer, not sent at the first line break.
    let screen = tmux.wait_for("  second line");
    assert!(screen.contains("› first line"), "{screen}");
    tmux.key("Enter");
    tmux.wait_for("Got both.");
    assert_eq!(prompt_sent(&mock, 0), "first line\nsecond line");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_paste_is_a_placeholder_until_it_is_sent() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Read it all."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("look: ");
    let pasted: String = (1..=12).map(|n| format!("row {n}\n")).collect();
    tmux.paste(&pasted);
    let screen = tmux.wait_for("› look: [pasted 12 lines]");
    assert!(!screen.contains("row 1"), "{screen}");
    tmux.key("Enter");
    tmux.wait_for("Read it all.");
    assert_eq!(prompt_sent(&mock, 0), format!("look: {pasted}"));
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alt_enter_and_ctrl_j_start_new_lines() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Three lines."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("one");
    tmux.key("M-Enter");
    tmux.type_text("two");
    tmux.key("C-j");
    tmux.type_text("three");
    let screen = tmux.wait_for("  three");
    assert!(screen.contains("› one"), "{screen}");
    assert!(screen.contains("  two"), "{screen}");
    tmux.key("Enter");
    tmux.wait_for("Three lines.");
    assert_eq!(prompt_sent(&mock, 0), "one\ntwo\nthree");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_history_is_recalled_after_a_restart() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["First answer."]));
    mock.enqueue(Reply::stream().text(["Second answer."]));
    let env = TestEnv::new();
    {
        let tmux = Tmux::start(&env, &vars(&mock));
        tmux.wait_for("idle ·");
        tmux.type_text("remember this prompt");
        tmux.key("Enter");
        tmux.wait_for("First answer.");
        tmux.wait_for("idle ·");
        tmux.type_text("and this one");
        tmux.key("Enter");
        tmux.wait_for("Second answer.");
        tmux.quit();
    }
    let file = env.mc_home().join("data/prompt_history.jsonl");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "\"remember this prompt\"\n\"and this one\"\n"
    );
    // A new Mission Control (a new session) recalls them with Up.
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.key("Up");
    tmux.wait_for("› and this one");
    tmux.key("Up");
    tmux.wait_for("› remember this prompt");
    // Down past the newest gives back what was typed before (nothing). Each arrow is
    // seen before the next is sent: arrows read together are the mouse wheel.
    tmux.key("Down");
    tmux.wait_for("› and this one");
    tmux.key("Down");
    tmux.type_text("x");
    tmux.wait_for("│› x ");
    // Ctrl-R finds one by a part of it; Enter takes it into the composer.
    tmux.key("C-r");
    tmux.wait_for("search history:");
    tmux.type_text("member");
    tmux.wait_for("search history: member");
    tmux.key("Enter");
    let screen = tmux.wait_for("› remember this prompt");
    assert!(!screen.contains("search history"), "{screen}");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_mention_completes_a_workspace_path() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Looked."]));
    let env = TestEnv::new();
    std::fs::create_dir_all(env.cwd().join("src/parser")).unwrap();
    std::fs::write(env.cwd().join("src/parser/grammar.rs"), "").unwrap();
    std::fs::write(env.cwd().join("src/main.rs"), "").unwrap();
    std::fs::write(env.cwd().join(".gitignore"), "ignored/\n").unwrap();
    std::fs::create_dir_all(env.cwd().join("ignored")).unwrap();
    std::fs::write(env.cwd().join("ignored/grammar_copy.rs"), "").unwrap();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("explain @gram");
    let screen = tmux.wait_for("▶ @src/parser/grammar.rs");
    assert!(screen.contains("files · Up/Down choose"), "{screen}");
    assert!(
        !screen.contains("grammar_copy"),
        "ignored files are not offered: {screen}"
    );
    tmux.key("Tab");
    tmux.wait_for("› explain @src/parser/grammar.rs");
    tmux.type_text("please");
    tmux.key("Enter");
    tmux.wait_for("Looked.");
    assert_eq!(
        prompt_sent(&mock, 0),
        "explain @src/parser/grammar.rs please"
    );
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_mentioned_image_goes_with_the_prompt_and_a_fake_one_is_refused() {
    use crate::view_image::{base64, images, png};
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["A gradient."]));
    let env = TestEnv::new();
    env.write_settings("[models.\"openai-chat/mock-model\"]\nimages = true\n");
    let bytes = png();
    std::fs::write(env.cwd().join("shot.png"), &bytes).unwrap();
    std::fs::write(env.cwd().join("fake.png"), "text").unwrap();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("what is @fake.png ");
    tmux.key("Enter");
    // Nothing is sent; the prompt stays and the status line says why.
    tmux.wait_for("fake.png is not a PNG");
    assert!(mock.requests().is_empty());
    tmux.key("C-u");
    tmux.type_text("what is @shot.png ");
    tmux.key("Enter");
    tmux.wait_for("A gradient.");
    let sent = images(Wire::Chat, &mock.requests()[0].body);
    assert_eq!(sent, [("image/png".to_owned(), base64(&bytes))]);
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_image_path_attaches_the_image_and_one_outside_is_text() {
    use crate::view_image::{base64, images, png};
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["A gradient."]));
    let env = TestEnv::new();
    env.write_settings("[models.\"openai-chat/mock-model\"]\nimages = true\n");
    let bytes = png();
    std::fs::create_dir(env.cwd().join("shots")).unwrap();
    let shot = env.cwd().join("shots/screen.png");
    std::fs::write(&shot, &bytes).unwrap();
    let outside = env.root().join("far.png");
    std::fs::write(&outside, &bytes).unwrap();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    // A file from outside the workspace dropped on the terminal: text, and why.
    tmux.paste(&format!("'{}'", outside.display()));
    tmux.wait_for("only images inside the workspace");
    tmux.key("C-u");
    // One inside, pasted as a terminal pastes a dropped file: quoted and absolute.
    tmux.type_text("what is");
    tmux.paste(&format!("'{}'", shot.canonicalize().unwrap().display()));
    tmux.wait_for("what is @shots/screen.png");
    tmux.key("Enter");
    tmux.wait_for("A gradient.");
    let sent = images(Wire::Chat, &mock.requests()[0].body);
    assert_eq!(sent, [("image/png".to_owned(), base64(&bytes))]);
    tmux.key("C-c");
}
