//! One soak session through the real binary over `serve --stdio`: turns of the random
//! model under a small context window, approvals answered at random, cancels, and now
//! and then the backend killed mid-turn and the session reopened in a fresh one. After
//! every turn that was not killed it checks what must hold.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use magi_client::{Backend, Incoming, PendingCall};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ActivityKind, ApprovalAnswerParams, ApprovalMode, ApprovalScope, EmptyParams, Event,
    HistoryPageParams, PermissionModeSetParams, RunFinished, SessionOpenParams, TurnCancelParams,
    TurnStartParams,
};
use magi_protocol::methods;
use magi_testkit::{MockOAuth, MockServer};

use super::model::Model;
use super::random::Random;
use super::{Stats, leftovers, mcp, workspace};
use crate::common::*;

mod rewind;

/// Mixed into a session's seed for the draws of what joined the plan later.
const LATER_STREAM: u64 = 0x6c61_7465_725f_3338;
/// Mixed into a session's seed for the draws of restores and forks.
const REWIND_STREAM: u64 = 0x7265_7769_6e64_3338;
/// Mixed into a session's seed for the draws of a ChatGPT sign-in.
const SIGN_IN_STREAM: u64 = 0x7369_676e_696e_3339;
/// The stream that draws whether a session's cards carry colour (`tool.cards.styles`).
const STYLES_STREAM: u64 = 0x7374_796c_6573_3434;

/// The longest one turn may take before the soak calls it stuck.
const TURN_WAIT: Duration = Duration::from_secs(120);

/// What a check that failed says.
pub type Failed = String;

/// The run a run event belongs to.
fn run_of(event: &Event) -> Option<&str> {
    Some(match event {
        Event::InputPersisted(e) => &e.run_id,
        Event::MessageDelta(e) => &e.run_id,
        Event::MessageReconcile(e) => &e.run_id,
        Event::Activity(e) => &e.run_id,
        Event::ApprovalRequested(e) => &e.run_id,
        Event::Diagnostic(e) => &e.run_id,
        Event::RunFinished(e) => &e.run_id,
        Event::ToolCard(e) => &e.run_id,
        _ => return None,
    })
}

/// A session's plan and what it saw.
struct Driver {
    random: Random,
    model: Arc<Mutex<Model>>,
    env: TestEnv,
    session: String,
    /// Runs whose `run.finished` arrived: none of their events may follow.
    finished: HashSet<String>,
    /// Whether a turn of the session was killed before its end was recorded: its
    /// history stays incomplete.
    interrupted: bool,
    /// Whether the client negotiated `approval.scopes`.
    scopes: bool,
    /// The draws of what joined the plan later (approval modes, the plan tool): a
    /// stream of its own, so that the plans of earlier seeds stay as they were.
    later: Random,
    /// Whether the client negotiated `permissions.modes` and `plan.todo`.
    modes: bool,
    /// The draws of restores and forks: a stream of their own, too.
    rewinds: Random,
    /// Whether the client negotiated `checkpoints`.
    checkpoints: bool,
    /// Whether the client negotiated `tool.cards.styles` (drawn from a stream of its
    /// own).
    styles: bool,
    /// The sign-in server of a session through provider `codex`, and Codex's
    /// credential file it refreshes.
    sign_in: Option<(MockOAuth, std::path::PathBuf)>,
    stats: Stats,
    /// What the session did, step by step, told with a failure.
    story: Vec<String>,
}

/// Runs the soak session of `seed`, its processes marked with `tag`.
pub async fn run(seed: u64, tag: &str) -> Result<Stats, Failed> {
    let mut random = Random::new(seed);
    let model = Model::new(random.next_u64());
    let mock = MockServer::start_responder(Model::responder(&model))
        .await
        .map_err(|e| format!("the mock model could not start: {e}"))?;
    let wire = *random.pick(&WIRES);
    let mut sign_ins = Random::new(seed ^ SIGN_IN_STREAM);
    // Some Responses sessions go through provider `codex` and its ChatGPT sign-in, with
    // an access token that is due at once and lives seconds after each refresh.
    let signed_in = matches!(wire, Wire::Responses) && sign_ins.chance(0.3);
    let provider = match wire {
        Wire::Responses if signed_in => "codex",
        Wire::Responses => "openai",
        Wire::Chat => "openai-chat",
        Wire::Anthropic => "anthropic",
    };
    let env = env_for_wire(wire, &mock)
        .var(super::TAG, tag)
        // The soak tells a crash itself, with the seed that replays it.
        .expect_crashes();
    let window = random.between(4_000, 32_000);
    let mut settings = format!("[models.\"{provider}/mock-model\"]\ncontext_window = {window}\n");
    let (env, sign_in) = if signed_in {
        let oauth = MockOAuth::start().await;
        oauth.set_access_lifetime(sign_ins.between(1, 20) as i64);
        let codex_home = env.root().join("codex");
        std::fs::create_dir_all(&codex_home).map_err(|e| e.to_string())?;
        let file = codex_home.join("auth.json");
        let tokens = oauth.tokens(-60);
        std::fs::write(&file, MockOAuth::codex_auth_json(&tokens).to_string())
            .map_err(|e| e.to_string())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| e.to_string())?;
        settings.push_str(&format!(
            "\n[providers.codex]\nbase_url = \"{}\"\nauth_url = \"{}\"\n",
            mock.base_url(),
            oauth.url()
        ));
        let env = env
            .var("MAGI_PROVIDER", "codex")
            .var("CODEX_HOME", &codex_home.display().to_string());
        (env, Some((oauth, file)))
    } else {
        (env, None)
    };
    let allow_all = random.chance(0.5);
    if allow_all {
        settings.push_str("\n[permissions]\nmode = \"allow-all\"\n");
    }
    // The settings' mode holds only without the suite's `ask` in the environment.
    let env = if allow_all {
        env.without(crate::common::MODE_ENV)
    } else {
        env
    };
    let mut mcp_draws = Random::new(seed ^ mcp::STREAM);
    let with_server = mcp_draws.chance(mcp::SESSIONS_WITH_SERVER);
    if with_server {
        settings.push_str(&mcp::settings());
    }
    env.write_settings(&settings);
    if with_server {
        mcp::approve(&env).await?;
        model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .offer_mcp(mcp_draws);
    }
    workspace::populate(&env.cwd(), env.root(), &mut random);
    let scopes = random.chance(0.7);
    let mut later = Random::new(seed ^ LATER_STREAM);
    let modes = later.chance(0.5);
    let mut rewinds = Random::new(seed ^ REWIND_STREAM);
    let checkpoints = rewinds.chance(0.5);
    let styles = Random::new(seed ^ STYLES_STREAM).chance(0.5);
    let mut driver = Driver {
        random,
        model,
        env,
        session: String::new(),
        finished: HashSet::new(),
        interrupted: false,
        scopes,
        later,
        modes,
        rewinds,
        checkpoints,
        styles,
        sign_in,
        stats: Stats::default(),
        story: vec![format!(
            "{provider} ({wire:?}), window {window}{}",
            if with_server { ", the MCP server" } else { "" }
        )],
    };
    let played = driver.play(tag).await;
    if with_server {
        driver.stats.mcp_sessions = 1;
        driver.stats.mcp_calls = driver
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mcp_calls;
    }
    played.map_err(|why| format!("{why}\n  what the session did: {}", driver.story.join("; ")))?;
    Ok(driver.stats)
}

impl Driver {
    /// The session's turns, kills and reopens, then its shutdown and what must hold.
    async fn play(&mut self, tag: &str) -> Result<(), Failed> {
        let mut backend = self.start().await?;
        self.session = new_session(&mut backend).await;
        let mut turns = self.random.between(1, 4);
        let mut turn = 0;
        while turn < turns {
            turn += 1;
            if self.turn(&mut backend).await? {
                // Killed: a fresh backend reopens the session and takes another turn.
                backend = self.reopen().await?;
                turns = turns.max(turn + 1);
            }
        }
        let exited = self.shutdown(backend).await;
        let left = leftovers::wait_for_none(tag).await;
        let crashes = self.env.crash_report_texts();
        exited?;
        left?;
        if let Some(report) = crashes.first() {
            return Err(format!("a crash report was written:\n{report}"));
        }
        self.check_sign_in()
    }

    /// After a session signed in to ChatGPT: Codex's file is still whole, its own, and
    /// holds the last tokens the sign-in server issued when the backend refreshed.
    fn check_sign_in(&mut self) -> Result<(), Failed> {
        let Some((oauth, file)) = &self.sign_in else {
            return Ok(());
        };
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file)
            .map_err(|e| e.to_string())?
            .permissions()
            .mode();
        let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("Codex's file is not JSON after the session: {e}"))?;
        let refreshes = oauth.refreshes();
        self.stats.refreshes += refreshes;
        if mode & 0o777 != 0o600 || json["tokens"]["refresh_token"].as_str().is_none() {
            return Err(format!(
                "Codex's file after {refreshes} refreshes: mode {mode:o}, {json}"
            ));
        }
        Ok(())
    }

    /// A backend started and initialized.
    async fn start(&self) -> Result<Backend, Failed> {
        let mut backend = self.env.spawn();
        let mut capabilities = vec![
            "session.create",
            "session.open",
            "turn.start",
            "turn.cancel",
            "approval.answer",
            "history.page",
            "status",
            "shutdown",
            "tool.cards",
            "session.usage",
        ];
        if self.scopes {
            capabilities.push(magi_protocol::names::APPROVAL_SCOPES);
        }
        if self.modes {
            capabilities.push(magi_protocol::names::PERMISSION_MODES);
            capabilities.push(magi_protocol::names::PLAN_TODO);
        }
        if self.checkpoints {
            capabilities.push(magi_protocol::names::CHECKPOINTS);
        }
        if self.styles {
            capabilities.push(magi_protocol::names::TOOL_CARD_STYLES);
        }
        match backend.initialize(&capabilities).await {
            Ok(Ok(_)) => Ok(backend),
            other => Err(format!("initialize failed: {other:?}")),
        }
    }

    /// A fresh backend on the session after one was killed: it must reopen it (or, when
    /// the kill came before anything was recorded, find it missing and begin anew).
    async fn reopen(&mut self) -> Result<Backend, Failed> {
        let mut backend = self.start().await?;
        let params = SessionOpenParams {
            session_id: self.session.clone(),
        };
        match backend.call::<methods::SessionOpen>(&params).await {
            Ok(Ok(_)) => {
                self.story.push("reopened".to_owned());
                Ok(backend)
            }
            Ok(Err(ErrorCode::SessionMissing)) => {
                self.story
                    .push("reopen found it missing: a new session".to_owned());
                self.session = new_session(&mut backend).await;
                self.interrupted = false;
                Ok(backend)
            }
            other => Err(format!("the killed session did not reopen: {other:?}")),
        }
    }

    /// One turn to its end; true when the backend was killed in it.
    async fn turn(&mut self, backend: &mut Backend) -> Result<bool, Failed> {
        if self.modes && self.later.chance(0.2) {
            // Between turns the switch runs on the session worker and is durable
            // before its answer.
            let switched = self.switch_mode(backend).await?;
            check_switch(switched).await?;
        }
        if self.checkpoints && self.rewinds.chance(0.3) {
            self.rewind(backend).await?;
        }
        let rounds = self.random.between(0, 6);
        self.model
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .begin_turn(rounds);
        let prompt = format!("soak {}", self.random.text_between(1, 2_000));
        let params = TurnStartParams {
            session_id: self.session.clone(),
            prompt,
            attachments: None,
        };
        let run_id = match backend.call::<methods::TurnStart>(&params).await {
            Ok(Ok(started)) => started.run_id,
            other => return Err(format!("turn.start was not admitted: {other:?}")),
        };
        self.stats.turns += 1;
        if self.styles {
            self.stats.styled_turns += 1;
        }
        let cancel_at = self.random.chance(0.2).then(|| self.random.between(1, 40));
        let switch_at = (self.modes && self.later.chance(0.3)).then(|| self.later.between(1, 30));
        let kill_at = self.random.chance(0.06).then(|| self.random.between(1, 60));
        let mut seen = 0usize;
        let mut switched = None;
        let finished = loop {
            let incoming = backend.next_incoming_within(TURN_WAIT).await;
            let Some(incoming) = incoming else {
                let end = backend.end_within(Duration::from_secs(1)).await;
                return Err(format!(
                    "no run.finished within {} s ({} events): {}",
                    TURN_WAIT.as_secs(),
                    seen,
                    end.describe()
                ));
            };
            let event = match incoming {
                Incoming::Event { event, .. } => event,
                Incoming::Response(_) => continue,
                Incoming::Violation(v) => return Err(format!("protocol violation: {v}")),
            };
            seen += 1;
            if let Some(run) = run_of(&event)
                && self.finished.contains(run)
            {
                return Err(format!(
                    "an event of run {run} after its run.finished: {event:?}"
                ));
            }
            match &event {
                Event::RunFinished(finished) => break finished.clone(),
                Event::ApprovalRequested(asked) => self.answer(backend, asked).await,
                Event::Activity(a) if a.kind == ActivityKind::Compaction => {
                    self.stats.compactions += 1;
                    self.story.push(format!("compaction at event {seen}"));
                }
                _ => {}
            }
            if switch_at == Some(seen) {
                switched = Some(self.switch_mode(backend).await?);
            }
            if cancel_at == Some(seen) {
                let params = TurnCancelParams {
                    session_id: self.session.clone(),
                    run_id: run_id.clone(),
                };
                // A run that just ended answers `stale_run`: fine.
                let _ = backend.send::<methods::TurnCancel>(&params).await;
                self.stats.cancels += 1;
                self.story.push(format!("cancel at event {seen}"));
            }
            if kill_at == Some(seen) {
                backend.kill().await;
                let _ = backend.wait_within(WAIT).await;
                self.stats.kills += 1;
                let what: String = format!("{event:?}").chars().take(60).collect();
                self.story.push(format!("killed at event {seen} ({what}…)"));
                // Interrupted unless its end was recorded before the kill: a turn
                // cancelled or finished just then is complete in the log.
                self.interrupted |= !self.last_turn_ended();
                return Ok(true);
            }
        };
        if finished.run_id != run_id {
            return Err(format!("run.finished of another run: {finished:?}"));
        }
        self.finished.insert(run_id);
        if let Some(switched) = switched {
            check_switch(switched).await?;
        }
        self.stats.outcomes.push(format!("{:?}", finished.outcome));
        self.story.push(format!(
            "turn of {rounds} rounds {:?} after {seen} events",
            finished.outcome
        ));
        self.after_turn(backend, &finished).await?;
        Ok(false)
    }

    /// Switches the session's approval mode at random (`permissions.modes`): during a
    /// turn it applies to the next call that asks. Its answer is read once the turn's
    /// events are ([`check_switch`]), since nothing reads them while it is awaited.
    async fn switch_mode(
        &mut self,
        backend: &mut Backend,
    ) -> Result<PendingCall<methods::PermissionModeSet>, Failed> {
        let mode = *self.later.pick(&[
            ApprovalMode::Plan,
            ApprovalMode::Ask,
            ApprovalMode::Auto,
            ApprovalMode::AllowAll,
        ]);
        let params = PermissionModeSetParams {
            session_id: self.session.clone(),
            mode,
        };
        self.story.push(format!("mode {mode:?}"));
        self.stats.mode_switches += 1;
        backend
            .send::<methods::PermissionModeSet>(&params)
            .await
            .map_err(|e| format!("permissions.mode.set could not be sent: {e}"))
    }

    /// Answers an approval at random: allow, deny, or allow for the session.
    async fn answer(
        &mut self,
        backend: &mut Backend,
        asked: &magi_protocol::messages::ApprovalRequested,
    ) {
        let allow = self.random.chance(0.6);
        let scope =
            (self.scopes && allow && self.random.chance(0.3)).then_some(ApprovalScope::Session);
        let mut params =
            ApprovalAnswerParams::once(&asked.session_id, &asked.run_id, &asked.approval_id, allow);
        params.scope = scope;
        // A late answer (the run was cancelled meanwhile) is `stale_approval`: fine.
        let _ = backend.send::<methods::ApprovalAnswer>(&params).await;
        self.stats.approvals += 1;
    }

    /// What must hold after a turn that was not killed: the backend answers, and the
    /// session's history reads to its end, complete unless a turn was interrupted.
    async fn after_turn(
        &mut self,
        backend: &mut Backend,
        finished: &RunFinished,
    ) -> Result<(), Failed> {
        match backend.status().await {
            Ok(Ok(_)) => {}
            other => {
                return Err(format!(
                    "the backend did not answer status after the turn: {other:?}"
                ));
            }
        }
        let Some(revision) = finished.revision.clone() else {
            return Ok(());
        };
        let mut params = HistoryPageParams {
            session_id: self.session.clone(),
            revision,
            cursor: None,
        };
        for _ in 0..1_000 {
            let page = match backend.call::<methods::HistoryPage>(&params).await {
                Ok(Ok(page)) => page,
                // A history past its snapshot budget says so: a defined outcome.
                Ok(Err(ErrorCode::HistoryLimit)) => return Ok(()),
                other => {
                    return Err(format!(
                        "history.page of revision {} failed: {other:?}; its log: {}",
                        params.revision,
                        self.log_kinds()
                    ));
                }
            };
            // Saved cards as the client library checks them, colour included.
            if let Err(why) = magi_client::cards::check_page(&page, true, self.styles) {
                return Err(format!(
                    "history.page of revision {} has a card that does not hold: {why}",
                    params.revision
                ));
            }
            match page.next_cursor {
                Some(cursor) => params.cursor = Some(cursor),
                None => {
                    if page.complete == self.interrupted {
                        return Err(format!(
                            "history complete = {} after a session {} interrupted turn; its \
                             log: {}",
                            page.complete,
                            if self.interrupted {
                                "with an"
                            } else {
                                "without an"
                            },
                            self.log_kinds()
                        ));
                    }
                    return Ok(());
                }
            }
        }
        Err("history.page never reached its last page".to_owned())
    }

    /// Whether the session log's last `turn_started` has its `turn_finished`.
    fn last_turn_ended(&self) -> bool {
        last_turn_ended(&self.log_records())
    }

    fn log_records(&self) -> Vec<serde_json::Value> {
        log_records(&std::fs::read(log_path(&self.env, &self.session)).unwrap_or_default())
    }

    /// The kinds of the session log's records, in order (`kind` or `kind:state`).
    fn log_kinds(&self) -> String {
        let kinds: Vec<String> = self
            .log_records()
            .into_iter()
            .map(|record| {
                let kind = record["kind"].as_str().unwrap_or("?").to_owned();
                match record["state"].as_str().or(record["outcome"].as_str()) {
                    Some(state) => format!("{kind}:{state}"),
                    None => kind,
                }
            })
            .collect();
        kinds.join(" ")
    }

    /// Shuts the backend down: it must exit 0 with nothing on stderr.
    async fn shutdown(&self, mut backend: Backend) -> Result<(), Failed> {
        let _ = backend.send::<methods::Shutdown>(&EmptyParams {}).await;
        let end = backend.end_within(WAIT).await;
        match end.status.and_then(|s| s.code()) {
            Some(0) if end.stderr_tail.is_empty() => Ok(()),
            _ => Err(format!("shutdown did not end cleanly: {}", end.describe())),
        }
    }
}

/// The answer to a mode switch sent during a turn: the mode, since while a run works the
/// switch is answered at once on the protocol loop.
async fn check_switch(switched: PendingCall<methods::PermissionModeSet>) -> Result<(), Failed> {
    match tokio::time::timeout(WAIT, switched.result()).await {
        Ok(Ok(Ok(_))) => Ok(()),
        other => Err(format!(
            "permissions.mode.set during a turn answered {other:?}"
        )),
    }
}

/// Whether the last `turn_started` of `records` has its `turn_finished`.
fn last_turn_ended(records: &[serde_json::Value]) -> bool {
    let mut ended = true;
    for record in records {
        match record["kind"].as_str() {
            Some("turn_started") => ended = false,
            Some("turn_finished") => ended = true,
            _ => {}
        }
    }
    ended
}

/// A session log's whole records, in order. Read as bytes: a backend killed in the
/// middle of a write leaves a torn last line, which may end inside a UTF-8 character,
/// and that must not hide the records before it.
fn log_records(log: &[u8]) -> Vec<serde_json::Value> {
    log.split(|byte| *byte == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// What a CI run's soak found: the soak read a killed backend's log as text, and a tail
/// torn inside a character hid the whole log from it, so the turn the kill interrupted
/// looked finished.
#[test]
fn a_log_torn_inside_a_character_still_shows_its_unfinished_turn() {
    let mut log = b"{\"kind\":\"turn_started\"}\n{\"kind\":\"tool_result\",\"content\":\"".to_vec();
    log.extend_from_slice(&"é".as_bytes()[..1]);
    assert!(
        std::str::from_utf8(&log).is_err(),
        "the tail is torn inside a character"
    );
    let records = log_records(&log);
    assert_eq!(records.len(), 1);
    assert!(!last_turn_ended(&records));
    let finished = b"{\"kind\":\"turn_started\"}\n{\"kind\":\"turn_finished\"}\n";
    assert!(last_turn_ended(&log_records(finished)));
}
