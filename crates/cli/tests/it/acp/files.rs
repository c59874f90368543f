//! The editor's file system over ACP: with `fs.readTextFile` and `fs.writeTextFile`
//! offered, the agent's `read` sees the editor's buffer and `edit` writes its result
//! back through `fs/write_text_file`, leaving the disk alone; a path outside the
//! workspace is refused before the editor is asked anything; without the capability
//! the disk is used as before.

use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    NewSessionResponse, PermissionOptionKind, RequestPermissionRequest, StopReason,
};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

use super::{new_session, prompt, stop};
use crate::common::acp::Acp;
use crate::common::approval::{calls, env_for};

/// What the disk holds, and what the editor's unsaved buffer holds.
const DISK: &str = "fn main() {}\n";
const BUFFER: &str = "fn main() {\n    println!(\"unsaved\");\n}\n";

/// Initializes the agent as a client offering both file methods, or none.
async fn initialize_with_fs(acp: &mut Acp, fs: bool) {
    let params = json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs}}
    });
    acp.call("initialize", params).await.unwrap();
}

/// An editor answering the agent's requests: file reads from its buffer, writes kept,
/// permissions by `allow`; every request it saw, in order.
struct Editor {
    path: String,
    buffer: Arc<Mutex<String>>,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Editor {
    fn new(path: &std::path::Path) -> Editor {
        Editor {
            path: path.display().to_string(),
            buffer: Arc::new(Mutex::new(BUFFER.to_owned())),
            seen: Arc::default(),
        }
    }

    fn answer(&self, allow: bool) -> impl FnMut(&str, &Value) -> Option<Value> + use<> {
        let (path, buffer, seen) = (
            self.path.clone(),
            Arc::clone(&self.buffer),
            Arc::clone(&self.seen),
        );
        move |method, params| {
            seen.lock()
                .unwrap()
                .push((method.to_owned(), params.clone()));
            match method {
                "fs/read_text_file" if params["path"] == path.as_str() => {
                    Some(json!({"content": buffer.lock().unwrap().clone()}))
                }
                "fs/read_text_file" => None,
                "fs/write_text_file" => {
                    assert_eq!(params["path"], path.as_str(), "{params}");
                    *buffer.lock().unwrap() = params["content"].as_str().unwrap().to_owned();
                    Some(json!({}))
                }
                "session/request_permission" => {
                    let request: RequestPermissionRequest =
                        serde_json::from_value(params.clone()).unwrap();
                    let kind = if allow {
                        PermissionOptionKind::AllowOnce
                    } else {
                        PermissionOptionKind::RejectOnce
                    };
                    let option = request.options.iter().find(|o| o.kind == kind)?;
                    Some(json!({"outcome": {"outcome": "selected", "optionId": option.option_id}}))
                }
                other => panic!("unexpected request {other}: {params}"),
            }
        }
    }

    fn methods(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }
}

fn read(id: &str, path: &str) -> Reply {
    calls("read", &[(id.into(), json!({"path": path}).to_string())])
}

async fn turn(acp: &mut Acp, session: &NewSessionResponse, editor: &Editor, allow: bool) {
    let result = acp
        .call_with(
            "session/prompt",
            prompt(session, "go"),
            editor.answer(allow),
        )
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
}

#[tokio::test]
async fn acp_file_tools_use_the_editors_buffer_when_it_offers_fs() {
    let mock = MockServer::start().await;
    mock.enqueue(read("r1", "main.rs"));
    mock.enqueue(Reply::stream().text(["Read."]));
    let edit = json!({"path": "main.rs", "old_text": "unsaved", "new_text": "edited"});
    mock.enqueue(calls("edit", &[("e1".into(), edit.to_string())]));
    mock.enqueue(Reply::stream().text(["Edited."]));
    let env = env_for(&mock);
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().canonicalize().unwrap().join("secret.txt");
    std::fs::write(&secret, "outside\n").unwrap();
    mock.enqueue(read("r2", &secret.display().to_string()));
    mock.enqueue(Reply::stream().text(["Refused."]));
    let cwd = env.cwd().canonicalize().unwrap();
    let file = cwd.join("main.rs");
    std::fs::write(&file, DISK).unwrap();
    let editor = Editor::new(&file);
    let mut acp = Acp::spawn(&env);
    initialize_with_fs(&mut acp, true).await;
    let session = new_session(&mut acp, &cwd).await;

    // The read sees the buffer, not the disk.
    turn(&mut acp, &session, &editor, true).await;
    assert_eq!(editor.methods(), ["fs/read_text_file"]);
    let given = mock.requests()[1].body.to_string();
    assert!(given.contains("unsaved"), "{given}");

    // The edit reads the buffer, is approved, and writes its result back to it; the
    // disk keeps what it had.
    turn(&mut acp, &session, &editor, true).await;
    assert_eq!(
        editor.methods()[1..],
        [
            "session/request_permission",
            "fs/read_text_file",
            "fs/write_text_file"
        ]
    );
    assert_eq!(
        *editor.buffer.lock().unwrap(),
        BUFFER.replace("unsaved", "edited")
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), DISK);

    // A read outside the workspace asks first; refused, the editor is never asked.
    turn(&mut acp, &session, &editor, false).await;
    assert_eq!(editor.methods()[4..], ["session/request_permission"]);
    let given = mock.requests()[5].body.to_string();
    assert!(!given.contains("outside\\n"), "{given}");
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_file_tools_use_the_disk_without_fs() {
    let mock = MockServer::start().await;
    mock.enqueue(read("r1", "main.rs"));
    mock.enqueue(Reply::stream().text(["Read."]));
    let env = env_for(&mock);
    let cwd = env.cwd().canonicalize().unwrap();
    std::fs::write(cwd.join("main.rs"), DISK).unwrap();
    let editor = Editor::new(&cwd.join("main.rs"));
    let mut acp = Acp::spawn(&env);
    initialize_with_fs(&mut acp, false).await;
    let session = new_session(&mut acp, &cwd).await;
    turn(&mut acp, &session, &editor, true).await;
    assert!(editor.methods().is_empty(), "{:?}", editor.methods());
    let given = mock.requests()[1].body.to_string();
    assert!(given.contains("fn main() {}"), "{given}");
    assert!(!given.contains("unsaved"), "{given}");
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_an_editors_error_fails_the_call_naming_it() {
    let mock = MockServer::start().await;
    mock.enqueue(read("r1", "main.rs"));
    mock.enqueue(Reply::stream().text(["Could not."]));
    let env = env_for(&mock);
    let cwd = env.cwd().canonicalize().unwrap();
    std::fs::write(cwd.join("main.rs"), DISK).unwrap();
    let mut acp = Acp::spawn(&env);
    initialize_with_fs(&mut acp, true).await;
    let session = new_session(&mut acp, &cwd).await;
    let id = acp.send("session/prompt", prompt(&session, "go")).await;
    let answer = loop {
        let message = acp.next().await;
        if message["method"] == "fs/read_text_file" {
            let error = json!({"jsonrpc": "2.0", "id": message["id"],
                               "error": {"code": -32603, "message": "the buffer is locked"}});
            acp.send_line(&error.to_string()).await;
        } else if message["id"] == id && message.get("method").is_none() {
            break message;
        }
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let given = mock.requests()[1].body.to_string();
    assert!(
        given.contains("The editor could not read main.rs: the buffer is locked."),
        "{given}"
    );
    assert!(acp.finish().await.success());
}
