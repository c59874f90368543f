//! The black-box test harness: a temporary `MC_HOME` and workspace per test, the real
//! `magi-code` binary spawned through the client library, and bounded waits.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use magi_client::{Backend, BackendCommand, Incoming, Response};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{EmptyParams, SessionOpenParams, SessionResult, TurnStartParams};
use magi_protocol::methods;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub mod acp;
pub mod approval;
pub mod tmux;

/// The longest any single wait in a test may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// The variable naming a directory outside every temporary directory, for when neither
/// the build's scratch directory nor the home directory is one (both under `/tmp`).
pub const OUTSIDE_DIR_ENV: &str = "MAGI_TEST_OUTSIDE_DIR";

/// A fresh directory outside every directory a confined command may always write (the
/// temporary ones, [`magi_tools::sandbox::temporary_roots`]), for tests that a
/// command confined to its workspace cannot write elsewhere. The build's scratch
/// directory is the first choice; when the clone or `CARGO_TARGET_DIR` lives under
/// `/tmp` it is a temporary directory itself, and the home directory's cache is next.
pub fn outside_dir() -> tempfile::TempDir {
    let temporary: Vec<PathBuf> = magi_tools::sandbox::temporary_roots()
        .into_iter()
        .flat_map(|root| [root.canonicalize().ok(), Some(root)])
        .flatten()
        .collect();
    let home_cache = std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache"));
    let candidates = std::env::var_os(OUTSIDE_DIR_ENV)
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from(env!("CARGO_TARGET_TMPDIR"))])
        .chain(home_cache);
    for candidate in candidates {
        let _ = std::fs::create_dir_all(&candidate);
        let Ok(place) = candidate.canonicalize() else {
            continue;
        };
        if temporary.iter().any(|root| place.starts_with(root)) {
            continue;
        }
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("magi-code-test-outside-")
            .tempdir_in(&place)
        {
            return dir;
        }
    }
    panic!(
        "no writable directory outside the temporary directories ({temporary:?}) for the \
         sandbox tests: set {OUTSIDE_DIR_ENV} to one"
    )
}

/// The variable naming the approval mode a backend's sessions start in.
pub const MODE_ENV: &str = "MAGI_PERMISSION_MODE";

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_magi-code")
}

/// A temporary home and workspace, and the environment the backend gets.
pub struct TestEnv {
    root: tempfile::TempDir,
    vars: Vec<(String, String)>,
    /// Whether a backend of this environment may crash on purpose (a `MAGI_FAULT` was
    /// set): otherwise a crash report left in `MC_HOME` fails the test when the
    /// environment goes, so a panic that was contained is still a failure.
    crashes_expected: bool,
}

impl TestEnv {
    /// A workspace whose selection is the keyless built-in `openai-chat` provider.
    pub fn new() -> TestEnv {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("work")).unwrap();
        TestEnv {
            root,
            // The suite's tests were written for the `ask` mode: each test that
            // exercises another mode, or sets one in its settings (the environment
            // wins over them), removes this.
            vars: vec![
                ("MAGI_PROVIDER".into(), "openai-chat".into()),
                ("MAGI_MODEL".into(), "test-model".into()),
                (MODE_ENV.into(), "ask".into()),
            ],
            crashes_expected: false,
        }
    }

    /// As [`TestEnv::new`], with the home and workspace outside the temporary
    /// directories, which a sandboxed command may always write (see [`outside_dir`]).
    pub fn outside_temp() -> TestEnv {
        let root = outside_dir();
        std::fs::create_dir(root.path().join("work")).unwrap();
        let mut env = TestEnv::new();
        // The temporary root made by `new` goes; its place is taken by one outside.
        env.root = root;
        env
    }

    /// Sets (or replaces) an environment variable of the backend.
    pub fn var(mut self, key: &str, value: &str) -> TestEnv {
        // Every point but the one that only orders (`title_first`) crashes.
        self.crashes_expected |= key == "MAGI_FAULT" && !value.starts_with("title_first:");
        self.vars.retain(|(k, _)| k != key);
        self.vars.push((key.into(), value.into()));
        self
    }

    /// Removes an environment variable of the backend.
    pub fn without(mut self, key: &str) -> TestEnv {
        self.vars.retain(|(k, _)| k != key);
        self
    }

    /// The backend's environment variables.
    pub fn vars(&self) -> impl Iterator<Item = (&String, &String)> {
        self.vars.iter().map(|(k, v)| (k, v))
    }

    /// `MC_HOME` (not created until the backend starts up).
    pub fn mc_home(&self) -> PathBuf {
        self.root.path().join("mc-home")
    }

    /// Writes the global settings file, `$MC_HOME/settings.toml`.
    pub fn write_settings(&self, text: &str) {
        std::fs::create_dir_all(self.mc_home()).unwrap();
        std::fs::write(self.mc_home().join("settings.toml"), text).unwrap();
    }

    /// The working directory of the backend.
    pub fn cwd(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// The temporary root, for files a test adds.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The command that starts the backend in this environment.
    pub fn command(&self) -> BackendCommand {
        self.command_with_home(&self.mc_home())
    }

    /// The same command with another `MC_HOME`.
    pub fn command_with_home(&self, home: &Path) -> BackendCommand {
        let mut command = BackendCommand::new(bin())
            .env_clear()
            .env("MC_HOME", home)
            .current_dir(self.cwd());
        for (k, v) in &self.vars {
            command = command.env(k, v);
        }
        command
    }

    /// Lets a backend of this environment leave crash reports (a test that injects a
    /// panic by other means than [`TestEnv::var`]).
    pub fn expect_crashes(mut self) -> TestEnv {
        self.crashes_expected = true;
        self
    }

    /// The paths of the crash reports left in `MC_HOME/logs`.
    pub fn crash_reports(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.mc_home().join("logs")) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with("crash-"))
            })
            .collect()
    }

    /// The text of each crash report left in `MC_HOME/logs` (a report that cannot be
    /// read is left out).
    pub fn crash_report_texts(&self) -> Vec<String> {
        self.crash_reports()
            .iter()
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect()
    }

    /// Spawns the backend.
    pub fn spawn(&self) -> Backend {
        self.command().spawn().unwrap()
    }

    /// Runs `magi-code ARGS` (a front end: `exec`, `doctor`) in this environment, stdin
    /// closed, to its end within [`WAIT`].
    pub async fn run_cli(&self, args: &[&str]) -> std::process::Output {
        let output = tokio::process::Command::new(bin())
            .args(args)
            .env_clear()
            .env("MC_HOME", self.mc_home())
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .current_dir(self.cwd())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        tokio::time::timeout(WAIT, output).await.unwrap().unwrap()
    }
}

impl Drop for TestEnv {
    /// A backend that crashed where no test asked it to fails the test, even when the
    /// crash was contained and everything the test looked at went right.
    fn drop(&mut self) {
        if self.crashes_expected || std::thread::panicking() {
            return;
        }
        let reports = self.crash_reports();
        if let Some(first) = reports.first() {
            let text = std::fs::read_to_string(first).unwrap_or_default();
            panic!(
                "a backend left {} crash report(s); the first, {}:\n{text}",
                reports.len(),
                first.display()
            );
        }
    }
}

/// One request frame with its LF.
pub fn frame(id: &str, method: &str, params: Value) -> Vec<u8> {
    let mut line = serde_json::json!({
        "protocol": "magi-code.local-agent",
        "version": 1,
        "id": id,
        "method": method,
        "params": params,
    })
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// The next frame no request claimed, within [`WAIT`]. A wait that runs out and an
/// output that ended are told apart, the latter with how the backend ended.
pub async fn next(backend: &mut Backend) -> Incoming {
    match tokio::time::timeout(WAIT, backend.next_incoming()).await {
        Ok(Some(incoming)) => incoming,
        Ok(None) => panic!(
            "the backend's output ended; {}",
            how_it_ended(backend).await
        ),
        Err(_) => panic!("the backend sent nothing within {WAIT:?}"),
    }
}

/// The next unclaimed response, within [`WAIT`].
pub async fn next_response(backend: &mut Backend) -> Response {
    match next(backend).await {
        Incoming::Response(response) => response,
        other => panic!("expected a response, got {other:?}"),
    }
}

/// Asserts the next unclaimed response answers `id` with error `code`.
pub async fn expect_error(backend: &mut Backend, id: Option<&str>, code: &str) {
    let response = next_response(backend).await;
    assert_eq!(response.id.as_deref(), id, "{response:?}");
    let got = response.outcome.map_err(|c| c.as_str());
    assert_eq!(got, Err(code), "answer to {id:?}");
}

/// Asserts that output ends with nothing more on it.
pub async fn expect_end_of_output(backend: &mut Backend) {
    assert_eq!(backend.next_incoming_within(WAIT).await, None);
}

/// Waits for the child's exit within [`WAIT`].
pub async fn exit_status(backend: &mut Backend) -> ExitStatus {
    backend
        .wait_within(WAIT)
        .await
        .expect("the backend exited within the wait")
}

/// What the child wrote on stderr, once it ended (the client library keeps its tail).
pub async fn stderr_text(backend: &mut Backend) -> String {
    backend.stderr_within(WAIT).await
}

/// Initializes with the base capabilities it needs and asserts success.
pub async fn initialize_ok(backend: &mut Backend) -> magi_protocol::messages::InitializeResult {
    backend
        .initialize(&["initialize", "status", "shutdown"])
        .await
        .unwrap()
        .expect("initialization succeeds")
}

/// How a backend whose pipes broke ended, as every front end tells it, or that it was
/// still running [`WAIT`] later.
pub async fn how_it_ended(backend: &mut Backend) -> String {
    let end = backend.end_within(WAIT).await;
    match end.status {
        Some(_) => end.describe(),
        None => format!("it was still running {WAIT:?} later: {end:?}"),
    }
}

/// Shuts down and asserts a clean exit with nothing on stderr.
pub async fn shutdown_clean(backend: &mut Backend) {
    // Raw, so the result is checked to be exactly this object, not only what a typed
    // result would read of it.
    let stopping = match backend.request_raw("shutdown", serde_json::json!({})).await {
        Ok(response) => response.outcome.unwrap(),
        // Name how the child went, not only that the pipe to it broke.
        Err(e) => panic!("shutdown: {e}; {}", how_it_ended(backend).await),
    };
    assert_eq!(stopping, serde_json::json!({"state": "stopping"}));
    assert_eq!(exit_status(backend).await.code(), Some(0));
    assert_eq!(stderr_text(backend).await, "");
}

/// The session folder of the test's working directory (see docs/session-log.md).
pub fn workspace_dir(env: &TestEnv) -> PathBuf {
    let cwd = env.cwd().canonicalize().unwrap();
    let digest: String = Sha256::digest(cwd.as_os_str().as_encoded_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    env.mc_home().join("sessions").join(&digest[..32])
}

/// The log of session `id` in the test's working directory.
pub fn log_path(env: &TestEnv, id: &str) -> PathBuf {
    workspace_dir(env).join(format!("{id}.jsonl"))
}

/// One session log line of `kind` at `ts`, with `fields` added.
pub fn record_at(id: &str, ts: &str, kind: &str, fields: Value) -> String {
    let mut object = json!({"v": 1, "session_id": id, "ts": ts, "kind": kind});
    for (k, v) in fields.as_object().unwrap() {
        object[k] = v.clone();
    }
    format!("{object}\n")
}

/// One session log line of `kind`, with `fields` added.
pub fn record(id: &str, kind: &str, fields: Value) -> String {
    record_at(id, "2026-11-01T10:00:00.000Z", kind, fields)
}

/// Writes the log of session `id` in the test's working directory.
pub fn write_log(env: &TestEnv, id: &str, text: &str) -> PathBuf {
    write_file(env, &format!("{id}.jsonl"), text)
}

/// Writes a provider's catalog cache as `docs/catalog.md` describes it.
pub fn write_cache(env: &TestEnv, provider: &str, models: &[(&str, Option<&str>)]) {
    let dir = env.mc_home().join("data/catalog");
    std::fs::create_dir_all(&dir).unwrap();
    let models: Vec<Value> = models
        .iter()
        .map(|(id, name)| json!({"id": id, "name": name}))
        .collect();
    let cache = json!({
        "format": 1,
        "provider": provider,
        "fetched_at": "2026-11-29T00:00:00.000Z",
        "models": models,
    });
    std::fs::write(dir.join(format!("{provider}.json")), cache.to_string()).unwrap();
}

/// Writes a file named `name` in the test's session folder.
pub fn write_file(env: &TestEnv, name: &str, text: &str) -> PathBuf {
    let path = workspace_dir(env).join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// The run's events until `run.finished` (returned), each kept in `seen`.
pub async fn until_finished(
    backend: &mut Backend,
    seen: &mut Vec<magi_protocol::messages::Event>,
) -> magi_protocol::messages::RunFinished {
    loop {
        if let Incoming::Event { event, .. } = next(backend).await {
            seen.push(event.clone());
            if let magi_protocol::messages::Event::RunFinished(finished) = event {
                return finished;
            }
        }
    }
}

/// Creates a session; returns its ID.
pub async fn new_session(backend: &mut Backend) -> String {
    backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
        .session_id
}

/// Creates a session and starts a turn with `prompt` in it; returns the session ID.
pub async fn session_with_turn(backend: &mut Backend, prompt: &str) -> String {
    let session = new_session(backend).await;
    start_turn(backend, &session, prompt).await;
    session
}

/// Starts a turn in `session`; returns its run ID.
pub async fn start_turn(backend: &mut Backend, session: &str, prompt: &str) -> String {
    let params = TurnStartParams {
        session_id: session.to_owned(),
        prompt: prompt.to_owned(),
        attachments: None,
    };
    backend
        .call::<methods::TurnStart>(&params)
        .await
        .unwrap()
        .unwrap()
        .run_id
}

/// How the context note the backend sends before each turn's prompt begins
/// (docs/prompt.md): the date, the git state, the approval mode.
pub const TURN_CONTEXT_HEADING: &str = "[Context of this turn, added by magi-code]";

/// Whether a user message's text is a turn's context note rather than the person's words.
pub fn is_turn_context(text: &str) -> bool {
    text.starts_with(TURN_CONTEXT_HEADING)
}

/// The names of the tools a Chat Completions request body offered.
pub fn offered_tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results a Chat Completions request body gave the model, in order.
pub fn tool_outputs(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Opens (attaches) session `id`.
pub async fn open_session(backend: &mut Backend, id: &str) -> Result<SessionResult, ErrorCode> {
    let params = SessionOpenParams {
        session_id: id.to_owned(),
    };
    backend.call::<methods::SessionOpen>(&params).await.unwrap()
}

/// The three wire formats, and how to point the backend at the mock for each.
#[derive(Debug, Clone, Copy)]
pub enum Wire {
    Responses,
    Chat,
    Anthropic,
}

/// Every wire format, in a fixed order.
pub const WIRES: [Wire; 3] = [Wire::Responses, Wire::Chat, Wire::Anthropic];

/// The credential the wire formats that need one are given (never a real key).
pub const WIRE_KEY: &str = "test-key-7f3a9c";

/// A test environment whose backend reaches `mock` in the `wire` format.
pub fn env_for_wire(wire: Wire, mock: &magi_testkit::MockServer) -> TestEnv {
    let env = TestEnv::new().var("MAGI_MODEL", "mock-model");
    match wire {
        Wire::Responses => env
            .var("MAGI_PROVIDER", "openai")
            .var("OPENAI_API_KEY", WIRE_KEY)
            .var("OPENAI_BASE_URL", &mock.base_url()),
        Wire::Chat => env
            .var("MAGI_PROVIDER", "openai-chat")
            .var("OPENAI_BASE_URL", &mock.base_url()),
        Wire::Anthropic => env
            .var("MAGI_PROVIDER", "anthropic")
            .var("ANTHROPIC_API_KEY", WIRE_KEY)
            .var("ANTHROPIC_BASE_URL", &mock.origin()),
    }
}

/// An environment whose model (`mock`, queued here) runs `command` with `bash`, which
/// the settings allow, and then says `reply`.
pub fn bash_turn_env(mock: &magi_testkit::MockServer, command: &str, reply: &str) -> TestEnv {
    mock.enqueue(magi_testkit::Reply::stream().tool_call(
        "b1",
        "bash",
        [serde_json::json!({ "command": command }).to_string()],
    ));
    mock.enqueue(magi_testkit::Reply::stream().text([reply]));
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url());
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    env
}

/// The saved cards of a history revision's first page, in order, the page checked as
/// the client library checks one.
pub async fn saved_cards(
    backend: &mut Backend,
    session: &str,
    revision: &str,
) -> Vec<magi_protocol::cards::Card> {
    let params = magi_protocol::messages::HistoryPageParams {
        session_id: session.to_owned(),
        revision: revision.to_owned(),
        cursor: None,
    };
    let page = backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap();
    magi_client::cards::check_page(&page, true, false).unwrap();
    page.entries
        .iter()
        .filter_map(|e| match &e.tool_card {
            magi_protocol::messages::SavedCard::Card(card) => Some((**card).clone()),
            _ => None,
        })
        .collect()
}
