//! A provider's refusal through the real binary, in each wire format: the refusal's
//! words are the reply (shown and recorded), the `reply_refused` diagnostic names the
//! provider and the model, the run ends `completed`, and `exec` says so and exits 4.

use magi_testkit::{MockServer, Reply, Stop};

use crate::common::*;

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn exec_shows_a_refusal_in_every_wire_format_and_exits_4() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().refusal(["I can't help", " with that."]));
        let env = env_for_wire(wire, &mock);
        let output = env.run_cli(&["exec", "Do the forbidden thing"]).await;
        assert_eq!(output.status.code(), Some(4), "{wire:?}: {output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "I can't help with that.\n",
            "{wire:?}"
        );
        let said = stderr(&output);
        assert!(
            said.contains("reply_refused: model \"mock-model\" of provider"),
            "{wire:?}: {said}"
        );
        assert!(
            said.contains("the provider refused the request: the reply is its refusal"),
            "{wire:?}: {said}"
        );
        // The refusal's words are kept in the session, never lost.
        let session = said
            .lines()
            .find_map(|line| line.strip_prefix("session "))
            .unwrap()
            .to_owned();
        let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
        assert!(log.contains("I can't help with that."), "{wire:?}");
    }
}

#[tokio::test]
async fn a_refused_response_runs_none_of_its_calls() {
    let mock = MockServer::start().await;
    // Anthropic's refusal is its stop reason alone: the text and a call came before it.
    mock.enqueue(
        Reply::stream()
            .text(["I started, but"])
            .tool_call("c1", "bash", [r#"{"command":"touch ran.txt"}"#])
            .stop(Stop::Refusal),
    );
    let env = env_for_wire(Wire::Anthropic, &mock);
    let output = env.run_cli(&["exec", "--json", "Go"]).await;
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    assert!(!env.cwd().join("ran.txt").exists());
    assert_eq!(mock.requests().len(), 1, "no second round trip");
    let frames: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        frames
            .iter()
            .any(|f| f["event"] == "diagnostic" && f["data"]["code"] == "reply_refused")
    );
    assert!(!frames.iter().any(|f| f["event"] == "activity"));
    let last = frames.last().unwrap();
    assert_eq!(last["data"]["outcome"], "completed");
}

#[tokio::test]
async fn a_content_filter_without_words_is_a_refusal_with_no_reply() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().stop(Stop::Refusal));
    let env = env_for_wire(Wire::Chat, &mock);
    let output = env.run_cli(&["exec", "Go"]).await;
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    let said = stderr(&output);
    assert!(
        said.contains("refused the request without a reply"),
        "{said}"
    );
}
