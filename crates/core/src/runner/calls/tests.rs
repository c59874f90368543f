//! The tool-call service in-process: a temporary session log, the real built-in tools
//! on a temporary workspace, and the run's events read from their channel.

use std::path::PathBuf;
use std::sync::Arc;

use magi_config::{PermissionMode, PermissionSettings, Rule};
use magi_protocol::Extension;
use magi_protocol::extensions::ExtensionSet;
use magi_protocol::messages::Event;
use magi_provider::{Item, ModelClient, ModelEvent, ModelRequest, ProviderError};
use magi_store::records::{Record, RecordBody, ToolCallPhase};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::supervision::LABEL_DENIED_BY_USER;
use super::{Call, CallService, Delegate, Gates, Role};
use crate::agent::Agent;
use crate::cards::TaskChildren;
use crate::mcp::McpHub;
use crate::runner::journal::{Journal, Workspace};
use crate::runner::offer::Offer;
use crate::runner::output::Output;
use crate::sessions::Sessions;

/// A model client the service never calls.
struct Unused;

impl ModelClient for Unused {
    fn stream<'a>(
        &'a self,
        _request: &'a ModelRequest,
        _events: mpsc::Sender<ModelEvent>,
        _cancel: &'a CancellationToken,
    ) -> magi_provider::BoxFuture<'a, Result<(), magi_provider::Failure>> {
        Box::pin(async { Err(ProviderError::Cancelled.into()) })
    }
}

/// A delegate for calls that never include a `task` call.
struct NoTasks;

impl Delegate for NoTasks {
    fn next_task_id(&mut self) -> String {
        "task-1".into()
    }

    fn run<'a>(
        &'a mut self,
        _call: &'a Call,
        _activity_id: &'a str,
        _service: &'a mut CallService<'_, '_>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = magi_tools::ToolReport> + 'a>> {
        Box::pin(async {
            magi_tools::ToolReport::from(magi_tools::ToolOutput {
                content: "no subagents here".into(),
                summary: "no subagents".into(),
                is_error: true,
            })
        })
    }

    fn children(&mut self, _task_id: &str) -> Option<TaskChildren> {
        None
    }
}

/// A session attached in a temporary home, its workspace holding `a.txt`.
struct Fixture {
    _dir: tempfile::TempDir,
    log: PathBuf,
    session_id: String,
    sessions: Sessions,
    workspace: Workspace,
    agent: Agent,
    offer: Offer,
    gates: Gates,
}

impl Fixture {
    fn new(permissions: PermissionSettings) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let home = magi_store::Home::prepare(&dir.path().join("home")).unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir(&cwd).unwrap();
        let cwd = cwd.canonicalize().unwrap();
        std::fs::write(cwd.join("a.txt"), "alpha\n").unwrap();
        let mut sessions = Sessions::new(home.clone(), cwd.clone());
        let session_id = sessions.create().session_id;
        let mode = permissions.mode;
        let agent = Agent {
            client: Arc::new(Unused),
            model: "m".into(),
            provider: "mock".into(),
            credential_source: None,
            sign_in: None,
            reasoning_summaries: false,
            reasoning_effort: None,
            permissions,
            hidden_env: Vec::new(),
            secrets: Vec::new(),
            instructions: Arc::default(),
            context_window_tokens: None,
            max_output_tokens: None,
            limits: None,
            images: true,
            prune_protect_tokens: 0,
            max_steps: None,
            code_mode: magi_config::CodeModeSettings::default(),
            skills: Arc::default(),
            profile: None,
            mcp: Arc::new(McpHub::empty()),
            subagents: Arc::default(),
            disabled_tools: Arc::default(),
            hooks: Arc::default(),
            client_terminals: false,
        };
        Fixture {
            log: home.session_path(&cwd, &session_id),
            workspace: Workspace::of(&sessions),
            _dir: dir,
            session_id,
            sessions,
            agent,
            offer: Offer::session(Arc::default(), None, Arc::default()),
            gates: Gates {
                rules: crate::runner::RuleBook::new(mode),
                ..Gates::default()
            },
        }
    }

    fn cwd(&self) -> PathBuf {
        self.workspace.cwd().to_owned()
    }

    /// The session's records, as the log holds them now.
    fn records(&self) -> Vec<RecordBody> {
        read_records(&self.log, &self.session_id)
    }

    /// Runs `calls` (id, tool, arguments) as one response's calls, with `cancel` as the
    /// run's cancellation, while `watch` reads the run's events. Returns the items the
    /// model would be given next.
    fn run_calls(
        &mut self,
        calls: &[(&str, &str, serde_json::Value)],
        cancel: CancellationToken,
        watch: impl AsyncFnOnce(mpsc::Receiver<Event>),
    ) -> Vec<Item> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (events_tx, events) = mpsc::channel(1024);
        let mut items = Vec::new();
        let into = &mut items;
        let session_id = self.session_id.clone();
        let sessions = &mut self.sessions;
        let (workspace, agent, offer, gates) =
            (&self.workspace, &self.agent, &self.offer, &self.gates);
        let run = async move {
            let mut output = Output::new(
                events_tx,
                session_id,
                "run-1".into(),
                cancel,
                Vec::new(),
                ExtensionSet::EMPTY.with(Extension::ToolCards),
            );
            let mut journal = Journal::session(sessions);
            let mut service = CallService {
                output: &mut output,
                journal: &mut journal,
                workspace,
                agent,
                offer,
                gates,
                turn_id: "run-1",
            };
            let mut delegate = NoTasks;
            let mut role = Role::Session(&mut delegate);
            let calls = calls
                .iter()
                .map(|(id, name, arguments)| {
                    service.call(
                        &mut role,
                        (*id).to_owned(),
                        (*name).to_owned(),
                        arguments.to_string(),
                    )
                })
                .collect();
            let ending = service.run_calls(&mut role, calls, into).await;
            assert!(ending.is_none(), "the turn goes on");
            // The output drops here: its channel closes for the watcher.
        };
        runtime.block_on(async { tokio::join!(run, watch(events)) });
        items
    }
}

fn read_records(log: &std::path::Path, session_id: &str) -> Vec<RecordBody> {
    magi_store::log::read_log(log, session_id, magi_store::log::ReadLimits::STORED)
        .unwrap()
        .records
        .into_iter()
        .map(|r| r.body)
        .collect()
}

/// Reads every event until the run drops its output.
async fn ignore(mut events: mpsc::Receiver<Event>) {
    while events.recv().await.is_some() {}
}

fn permissions(mode: PermissionMode, deny: &[&str]) -> PermissionSettings {
    PermissionSettings {
        mode,
        deny: deny.iter().map(|r| Rule::parse(r).unwrap()).collect(),
        ..PermissionSettings::default()
    }
}

/// A compact trace of the log's tool records: `call:<id>`, `awaiting:<id>`,
/// `running:<id>` and `result:<id>:<outcome>`.
fn trace(records: &[RecordBody]) -> Vec<String> {
    records
        .iter()
        .filter_map(|body| match body {
            RecordBody::ToolCall { call_id, .. } => Some(format!("call:{call_id}")),
            RecordBody::ToolCallState { call_id, state, .. } => Some(match state {
                ToolCallPhase::AwaitingApproval => format!("awaiting:{call_id}"),
                ToolCallPhase::Running => format!("running:{call_id}"),
                ToolCallPhase::AwaitingInput => format!("input:{call_id}"),
            }),
            RecordBody::ToolResult {
                call_id, outcome, ..
            } => Some(format!("result:{call_id}:{outcome:?}")),
            _ => None,
        })
        .collect()
}

fn read(path: &str) -> serde_json::Value {
    serde_json::json!({ "path": path })
}

fn write(path: &str) -> serde_json::Value {
    serde_json::json!({ "path": path, "content": "written\n" })
}

#[test]
fn calls_are_recorded_before_they_are_supervised() {
    let mut fixture = Fixture::new(permissions(PermissionMode::Ask, &[]));
    let (log, session_id) = (fixture.log.clone(), fixture.session_id.clone());
    let approvals = fixture.gates.approvals.clone();
    let mut seen_when_asked = Vec::new();
    let items = fixture.run_calls(
        &[
            ("c1", "read", read("a.txt")),
            ("c2", "write", write("b.txt")),
        ],
        CancellationToken::new(),
        async |mut events| {
            while let Some(event) = events.recv().await {
                if let Event::ApprovalRequested(request) = event {
                    seen_when_asked = trace(&read_records(&log, &session_id));
                    assert!(
                        approvals
                            .answer(&request.approval_id, crate::approvals::Answer::once(false))
                    );
                }
            }
        },
    );
    // When the client was asked about the write, both calls of the message were on
    // record, and the write was recorded as awaiting approval.
    assert_eq!(
        seen_when_asked[..3],
        ["call:c1", "call:c2", "running:c1"].map(String::from)
    );
    assert!(seen_when_asked.contains(&"awaiting:c2".to_owned()));
    let records = fixture.records();
    assert!(trace(&records).contains(&"result:c2:Denied".to_owned()));
    assert!(!trace(&records).contains(&"running:c2".to_owned()));
    assert!(
        !fixture.cwd().join("b.txt").exists(),
        "a denied write never runs"
    );
    assert!(matches!(
        &items[3],
        Item::ToolResult { call_id, is_error: true, .. } if call_id == "c2"
    ));
}

#[test]
fn a_denied_call_is_settled_denied_and_not_run() {
    let mut fixture = Fixture::new(permissions(PermissionMode::AllowAll, &["write"]));
    let items = fixture.run_calls(
        &[("c1", "write", write("b.txt"))],
        CancellationToken::new(),
        ignore,
    );
    let records = fixture.records();
    assert_eq!(trace(&records), ["call:c1", "result:c1:Denied"]);
    let protection = records.iter().find_map(|body| match body {
        RecordBody::ToolResult { protection, .. } => protection.clone(),
        _ => None,
    });
    assert_eq!(protection.as_deref(), Some(LABEL_DENIED_BY_USER));
    assert!(!fixture.cwd().join("b.txt").exists());
    assert!(matches!(
        &items[..],
        [
            Item::ToolCall { .. },
            Item::ToolResult { is_error: true, .. }
        ]
    ));
}

#[test]
fn read_only_calls_run_side_by_side_while_a_changing_call_waits_for_earlier_ones() {
    let mut fixture = Fixture::new(permissions(PermissionMode::AllowAll, &[]));
    let items = fixture.run_calls(
        &[
            ("r1", "read", read("a.txt")),
            ("r2", "read", read("a.txt")),
            ("w3", "write", write("b.txt")),
            ("r4", "read", read("b.txt")),
        ],
        CancellationToken::new(),
        ignore,
    );
    // Both reads were claimed before either settled: they were in flight together.
    // The write was claimed only once both had settled, and the read after it only
    // once it had: effects happen in the order the model asked for.
    assert_eq!(
        trace(&fixture.records()),
        [
            "call:r1",
            "call:r2",
            "call:w3",
            "call:r4",
            "running:r1",
            "running:r2",
            "result:r1:Completed",
            "result:r2:Completed",
            "running:w3",
            "result:w3:Completed",
            "running:r4",
            "result:r4:Completed",
        ]
    );
    // The last read saw what the write wrote.
    assert!(matches!(
        &items[7],
        Item::ToolResult { call_id, output, is_error: false }
            if call_id == "r4" && output.contains("written")
    ));
}

#[test]
fn a_cancelled_turn_settles_unstarted_calls_cancelled() {
    let mut fixture = Fixture::new(permissions(PermissionMode::AllowAll, &[]));
    let cancel = CancellationToken::new();
    cancel.cancel();
    fixture.run_calls(
        &[
            ("r1", "read", read("a.txt")),
            ("w2", "write", write("b.txt")),
        ],
        cancel,
        ignore,
    );
    assert_eq!(
        trace(&fixture.records()),
        [
            "call:r1",
            "call:w2",
            "result:r1:Cancelled",
            "result:w2:Cancelled"
        ]
    );
    assert!(!fixture.cwd().join("b.txt").exists());
}

#[test]
fn recovery_settles_a_claimed_change_indeterminate_and_reruns_an_allowed_read() {
    let mut fixture = Fixture::new(permissions(PermissionMode::AllowAll, &[]));
    // A crashed turn left two claimed calls without results.
    let crashed = [
        ("w1", "write", write("b.txt")),
        ("r2", "read", read("a.txt")),
    ];
    for (call_id, name, arguments) in &crashed {
        let created = RecordBody::ToolCall {
            turn_id: "crashed".into(),
            call_id: (*call_id).into(),
            name: (*name).into(),
            summary: (*name).into(),
            arguments: Some(arguments.to_string()),
            parent_call_id: None,
            sequence: None,
        };
        let claimed = RecordBody::ToolCallState {
            turn_id: "crashed".into(),
            call_id: (*call_id).into(),
            state: ToolCallPhase::Running,
            protection: None,
        };
        fixture.sessions.append_all(vec![created, claimed]).unwrap();
    }
    let records: Vec<Record> = magi_store::log::read_log(
        &fixture.log,
        &fixture.session_id,
        magi_store::log::ReadLimits::STORED,
    )
    .unwrap()
    .records;
    let (events_tx, _events) = mpsc::channel(16);
    let mut output = Output::new(
        events_tx,
        fixture.session_id.clone(),
        "run-2".into(),
        CancellationToken::new(),
        Vec::new(),
        ExtensionSet::EMPTY,
    );
    let mut journal = Journal::session(&mut fixture.sessions);
    let mut service = CallService {
        output: &mut output,
        journal: &mut journal,
        workspace: &fixture.workspace,
        agent: &fixture.agent,
        offer: &fixture.offer,
        gates: &fixture.gates,
        turn_id: "run-2",
    };
    let mut delegate = NoTasks;
    let settled = service.recover(&mut Role::Session(&mut delegate), &records);
    assert_eq!(settled, Some(2));
    let after = fixture.records();
    assert!(trace(&after).ends_with(&[
        "result:w1:Indeterminate".to_owned(),
        "result:r2:Completed".to_owned()
    ]));
    // The change never ran again; the read did, and its result holds the file.
    assert!(!fixture.cwd().join("b.txt").exists());
    let read_again = after.iter().any(|body| {
        matches!(body, RecordBody::ToolResult { call_id, content: Some(content), .. }
            if call_id == "r2" && content.contains("alpha"))
    });
    assert!(read_again);
}
