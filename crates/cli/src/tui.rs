//! Mission Control: `magi-code` with no arguments, in a terminal.
//!
//! A full-screen terminal client on ratatui. It starts its own backend (`serve
//! --stdio`) through the client library, exactly as any other client does, and shows
//! the transcript the client fold computes: streaming replies, tool activities with
//! their cards (diffs coloured, commands with exit codes, omissions said), approvals
//! answered with a key, a composer with history, and Stop.
//!
//! Keys: type a prompt and press Enter to send it; Up and Down recall earlier prompts;
//! `y` or `n` answer a pending approval; Esc stops the running turn; Ctrl-O picks a
//! session of this directory to reopen (`session.list`, `session.open`); Ctrl-C quits.

use std::io::Stdout;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use magi_client::fold::{
    ActivityDisplay, ApprovalState, CardView, FoldInput, Item, PromptId, PromptState, Role,
    TURN_ID_RESERVE, Transcript,
};
use magi_client::{Backend, BackendCommand, Incoming};
use magi_protocol::cards::{Block, Card, DiffLineKind};
use magi_protocol::messages::{
    Event, HistoryPageResult, SessionListEntry, SessionListResult, SessionResult,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block as Frame, Borders, Paragraph};
use serde_json::json;
use tokio::sync::mpsc;

/// How long the backend gets to exit after `shutdown`.
const EXIT_WAIT: Duration = Duration::from_secs(5);
/// Lines of a card's diff shown under its activity.
const DIFF_LINES_SHOWN: usize = 12;
/// Keys buffered between the terminal reader and the loop.
const KEY_QUEUE: usize = 256;

/// Runs Mission Control until the user quits; restores the terminal whatever happens.
pub fn run() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("magi-code: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let mut backend = start_backend().await?;
        let session: SessionResult = backend
            .request_raw("session.create", json!({}))
            .await?
            .parse()?
            .map_err(|code| anyhow!("session.create failed: {}", code.as_str()))?;
        let mut terminal = enter_terminal()?;
        let result = App::new(session).run(&mut backend, &mut terminal).await;
        leave_terminal(&mut terminal);
        let _ = backend.shutdown().await;
        let _ = backend.wait_within(EXIT_WAIT).await;
        result
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("magi-code: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn start_backend() -> anyhow::Result<Backend> {
    let exe = std::env::current_exe().context("cannot find the magi-code executable")?;
    let mut backend = BackendCommand::new(exe).spawn()?;
    backend
        .initialize(&[
            "session.create",
            "session.open",
            "session.list",
            "history.page",
            "turn.start",
            "turn.cancel",
            "approval.answer",
            "status",
            "shutdown",
            "tool.cards",
        ])
        .await?
        .map_err(|code| anyhow!("initialization failed: {}", code.as_str()))?;
    Ok(backend)
}

type Screen = Terminal<CrosstermBackend<Stdout>>;

fn enter_terminal() -> anyhow::Result<Screen> {
    enable_raw_mode()?;
    let mut stdout = std::io::stdout();
    execute!(stdout, EnterAlternateScreen)?;
    Ok(Terminal::new(CrosstermBackend::new(stdout))?)
}

fn leave_terminal(terminal: &mut Screen) {
    let _ = disable_raw_mode();
    let _ = execute!(terminal.backend_mut(), LeaveAlternateScreen);
    let _ = terminal.show_cursor();
}

/// Reads terminal events on a plain thread (the reads block) and queues the keys.
fn spawn_key_reader() -> mpsc::Receiver<KeyEvent> {
    let (keys, received) = mpsc::channel(KEY_QUEUE);
    std::thread::spawn(move || {
        while let Ok(event) = event::read() {
            if let TermEvent::Key(key) = event
                && keys.blocking_send(key).is_err()
            {
                break;
            }
        }
    });
    received
}

/// What a key asks the loop to do.
enum Action {
    Nothing,
    Quit,
    Send(String),
    Stop,
    Answer(bool),
    ListSessions,
    OpenSession(String),
}

/// Request IDs kept in reserve before a turn: `MAGI_TUI_ID_RESERVE` when set (so the
/// renewal can be exercised without thousands of requests), else the client library's
/// [`TURN_ID_RESERVE`].
fn id_reserve() -> usize {
    std::env::var("MAGI_TUI_ID_RESERVE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(TURN_ID_RESERVE)
}

/// The shortest time between two frames while events stream (about 60 per second).
const FRAME: Duration = Duration::from_millis(16);
/// Frame times kept for the statistics, at most.
const FRAME_SAMPLES: usize = 65_536;

/// How long frames took to draw, written on exit to the file `MAGI_TUI_STATS` names
/// (for the benchmark; nothing is kept or written without it).
#[derive(Default)]
struct FrameStats {
    samples: Vec<Duration>,
    frames: u64,
}

impl FrameStats {
    fn record(&mut self, took: Duration) {
        self.frames += 1;
        if self.samples.len() < FRAME_SAMPLES {
            self.samples.push(took);
        }
    }

    fn report(&mut self) {
        let Some(path) = std::env::var_os("MAGI_TUI_STATS") else {
            return;
        };
        self.samples.sort();
        let at = |q: f64| {
            self.samples
                .get(((self.samples.len() as f64 - 1.0) * q).round() as usize)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        let stats = json!({
            "frames": self.frames,
            "median_ms": at(0.5),
            "p95_ms": at(0.95),
            "max_ms": at(1.0),
        });
        let _ = std::fs::write(path, stats.to_string());
    }
}

/// The session picker: this directory's sessions, one selected.
struct Picker {
    sessions: Vec<SessionListEntry>,
    selected: usize,
}

/// Mission Control's state: the fold, the composer and its history.
struct App {
    transcript: Transcript,
    session_id: String,
    composer: String,
    history: Vec<String>,
    /// Position while recalling history with Up/Down.
    recall: Option<usize>,
    next_prompt: u64,
    status: String,
    picker: Option<Picker>,
}

impl App {
    fn new(session: SessionResult) -> App {
        let session_id = session.session_id.clone();
        let mut transcript = Transcript::default();
        transcript.apply(FoldInput::SessionAttached(session));
        App {
            transcript,
            session_id,
            composer: String::new(),
            history: Vec::new(),
            recall: None,
            next_prompt: 0,
            status: String::new(),
            picker: None,
        }
    }

    async fn run(&mut self, backend: &mut Backend, terminal: &mut Screen) -> anyhow::Result<()> {
        let mut keys = spawn_key_reader();
        let mut frames = FrameStats::default();
        let result = self
            .event_loop(backend, terminal, &mut keys, &mut frames)
            .await;
        frames.report();
        result
    }

    /// Draws at most once per [`FRAME`] while events stream (a key is drawn at once),
    /// so a reply of thousands of deltas costs frames, not one draw per delta.
    async fn event_loop(
        &mut self,
        backend: &mut Backend,
        terminal: &mut Screen,
        keys: &mut mpsc::Receiver<KeyEvent>,
        frames: &mut FrameStats,
    ) -> anyhow::Result<()> {
        let mut dirty = true;
        let mut last_draw = Instant::now() - FRAME;
        loop {
            if dirty && last_draw.elapsed() >= FRAME {
                let started = Instant::now();
                terminal.draw(|frame| self.draw(frame))?;
                frames.record(started.elapsed());
                last_draw = Instant::now();
                dirty = false;
            }
            let wait = FRAME.saturating_sub(last_draw.elapsed());
            tokio::select! {
                () = tokio::time::sleep(wait), if dirty => continue,
                key = keys.recv() => {
                    let Some(key) = key else { return Ok(()) };
                    dirty = true;
                    // A key is drawn at once, whatever streams.
                    last_draw = Instant::now() - FRAME;
                    match self.key(key) {
                        Action::Quit => return Ok(()),
                        Action::Nothing => {}
                        Action::Send(prompt) => {
                            self.renew_backend_if_needed(backend).await?;
                            self.send(backend, prompt).await?
                        }
                        Action::Stop => self.stop(backend).await?,
                        Action::Answer(allow) => self.answer(backend, allow).await?,
                        Action::ListSessions => self.list_sessions(backend).await?,
                        Action::OpenSession(id) => self.open_session(backend, id).await?,
                    }
                }
                incoming = backend.next_incoming() => {
                    dirty = true;
                    match incoming {
                    Some(Incoming::Event { event, .. }) => {
                        let finished = matches!(event, Event::RunFinished(_));
                        self.transcript.apply(FoldInput::Event(event));
                        if finished
                            && let Some(due) = self.transcript.history_due().cloned()
                            && let Some(revision) = due.revision
                        {
                            self.load_history(backend, &due.session_id, &revision).await?;
                        }
                    }
                    Some(Incoming::Response(_)) => {}
                    Some(Incoming::Violation(v)) => {
                        self.transcript.apply(FoldInput::Disconnected);
                        self.status = format!("protocol violation: {v}");
                    }
                    None => {
                        self.transcript.apply(FoldInput::Disconnected);
                        self.status = "the backend ended".into();
                    }
                }
                }
            }
        }
    }

    /// The pending approval, if any.
    fn pending_approval(&self) -> Option<(String, String)> {
        self.transcript.items().iter().find_map(|item| match item {
            Item::Approval(a) if a.state == ApprovalState::Pending => {
                Some((a.run_id.clone(), a.approval_id.clone()))
            }
            _ => None,
        })
    }

    fn key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(picker) = &mut self.picker {
            return match key.code {
                KeyCode::Char('c' | 'd') if ctrl => Action::Quit,
                KeyCode::Esc => {
                    self.picker = None;
                    Action::Nothing
                }
                KeyCode::Up => {
                    picker.selected = picker.selected.saturating_sub(1);
                    Action::Nothing
                }
                KeyCode::Down => {
                    picker.selected =
                        (picker.selected + 1).min(picker.sessions.len().saturating_sub(1));
                    Action::Nothing
                }
                KeyCode::Enter => {
                    let chosen = picker
                        .sessions
                        .get(picker.selected)
                        .map(|s| s.session_id.clone());
                    self.picker = None;
                    chosen.map_or(Action::Nothing, Action::OpenSession)
                }
                _ => Action::Nothing,
            };
        }
        match key.code {
            KeyCode::Char('o') if ctrl && !self.transcript.run_active() => Action::ListSessions,
            KeyCode::Char('c' | 'd') if ctrl => Action::Quit,
            KeyCode::Esc => Action::Stop,
            KeyCode::Char(c @ ('y' | 'n'))
                if self.composer.is_empty() && self.pending_approval().is_some() =>
            {
                Action::Answer(c == 'y')
            }
            KeyCode::Char(c) if !ctrl => {
                self.composer.push(c);
                self.recall = None;
                Action::Nothing
            }
            KeyCode::Backspace => {
                self.composer.pop();
                Action::Nothing
            }
            KeyCode::Up => {
                let at = self
                    .recall
                    .map_or(self.history.len(), |i| i)
                    .saturating_sub(1);
                if let Some(prompt) = self.history.get(at) {
                    self.composer = prompt.clone();
                    self.recall = Some(at);
                }
                Action::Nothing
            }
            KeyCode::Down => {
                match self.recall.map(|i| i + 1) {
                    Some(at) if at < self.history.len() => {
                        self.composer = self.history[at].clone();
                        self.recall = Some(at);
                    }
                    _ => {
                        self.composer.clear();
                        self.recall = None;
                    }
                }
                Action::Nothing
            }
            KeyCode::Enter if !self.composer.trim().is_empty() && !self.transcript.run_active() => {
                let prompt = std::mem::take(&mut self.composer);
                self.history.push(prompt.clone());
                self.recall = None;
                Action::Send(prompt)
            }
            _ => Action::Nothing,
        }
    }

    /// A child has 4,096 request IDs in its life. Before a turn, if fewer than the
    /// reserve remain, this child is shut down and a fresh one reopens the same durable
    /// session (or starts a new one when the session was never made durable), so a
    /// running turn never runs out of IDs to cancel, answer or page with.
    async fn renew_backend_if_needed(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        if backend.ids_remaining() > id_reserve() {
            return Ok(());
        }
        let _ = backend.shutdown().await;
        let _ = backend.wait_within(EXIT_WAIT).await;
        *backend = start_backend().await?;
        match self.transcript.durable_session().map(str::to_owned) {
            Some(id) => self.open_session(backend, id).await?,
            None => {
                let session: SessionResult = backend
                    .request_raw("session.create", json!({}))
                    .await?
                    .parse()?
                    .map_err(|code| anyhow!("session.create failed: {}", code.as_str()))?;
                self.session_id = session.session_id.clone();
                self.transcript.apply(FoldInput::SessionAttached(session));
            }
        }
        self.status = "backend renewed".into();
        Ok(())
    }

    async fn send(&mut self, backend: &mut Backend, prompt: String) -> anyhow::Result<()> {
        let id = PromptId(self.next_prompt);
        self.next_prompt += 1;
        self.transcript.apply(FoldInput::PromptSubmitted {
            id,
            text: prompt.clone(),
        });
        let params = json!({"session_id": self.session_id, "prompt": prompt});
        let answer = backend.request_raw("turn.start", params).await?;
        match answer.outcome {
            Ok(result) => {
                let run_id = result["run_id"].as_str().unwrap_or_default().to_owned();
                self.transcript
                    .apply(FoldInput::TurnAccepted { id, run_id });
            }
            Err(code) => {
                self.transcript.apply(FoldInput::TurnRejected { id, code });
                // The fold gives the prompt back to the composer.
                if let Some(text) = self.transcript.take_restored_prompt() {
                    self.composer = text;
                }
                self.status = format!("turn.start: {}", code.as_str());
            }
        }
        Ok(())
    }

    async fn stop(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        let running = self
            .transcript
            .runs()
            .iter()
            .rev()
            .find(|r| r.state == magi_client::fold::RunState::Running)
            .map(|r| r.run_id.clone());
        if let Some(run_id) = running {
            let params = json!({"session_id": self.session_id, "run_id": run_id});
            backend.request_raw("turn.cancel", params).await?;
            self.status = "stopping…".into();
        }
        Ok(())
    }

    async fn answer(&mut self, backend: &mut Backend, allow: bool) -> anyhow::Result<()> {
        let Some((run_id, approval_id)) = self.pending_approval() else {
            return Ok(());
        };
        let params = json!({"session_id": self.session_id, "run_id": run_id,
                            "approval_id": approval_id, "allow": allow});
        backend.request_raw("approval.answer", params).await?;
        self.transcript.apply(FoldInput::ApprovalAnswered {
            run_id,
            approval_id,
            allow,
        });
        Ok(())
    }

    /// Opens the picker with this directory's sessions (the first page).
    async fn list_sessions(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        let listed: Result<SessionListResult, _> = backend
            .request_raw("session.list", json!({}))
            .await?
            .parse()?;
        match listed {
            Ok(list) if list.sessions.is_empty() => self.status = "no sessions yet".into(),
            Ok(list) => {
                self.picker = Some(Picker {
                    selected: list.sessions.len() - 1,
                    sessions: list.sessions,
                })
            }
            Err(code) => self.status = format!("session.list: {}", code.as_str()),
        }
        Ok(())
    }

    /// Reopens a session and shows its history.
    async fn open_session(&mut self, backend: &mut Backend, id: String) -> anyhow::Result<()> {
        let opened: Result<SessionResult, _> = backend
            .request_raw("session.open", json!({"session_id": id}))
            .await?
            .parse()?;
        match opened {
            Ok(result) => {
                let revision = result.revision.clone();
                self.session_id = result.session_id.clone();
                self.transcript.apply(FoldInput::SessionAttached(result));
                self.load_history(backend, &id, &revision).await?;
                self.status = String::new();
            }
            Err(code) => self.status = format!("session.open: {}", code.as_str()),
        }
        Ok(())
    }

    /// Shows the pages of a history revision in place of the transcript.
    async fn load_history(
        &mut self,
        backend: &mut Backend,
        session_id: &str,
        revision: &str,
    ) -> anyhow::Result<()> {
        let mut cursor: Option<String> = None;
        loop {
            let params = json!({"session_id": session_id, "revision": revision,
                                "cursor": cursor});
            let page: HistoryPageResult =
                match backend.request_raw("history.page", params).await?.parse()? {
                    Ok(page) => page,
                    Err(code) => {
                        self.status = format!("history.page: {}", code.as_str());
                        return Ok(());
                    }
                };
            cursor = page.next_cursor.clone();
            self.transcript.apply(FoldInput::HistoryPage(page));
            if cursor.is_none() {
                return Ok(());
            }
        }
    }

    fn draw(&self, frame: &mut ratatui::Frame) {
        let [body, composer, status] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(3),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let width = usize::from(body.width.saturating_sub(2)).max(10);
        let lines = match &self.picker {
            Some(picker) => picker_lines(picker),
            None => self.transcript_lines(),
        };
        let lines = wrap(lines, width);
        let height = usize::from(body.height.saturating_sub(2));
        let first = lines.len().saturating_sub(height);
        let shown: Vec<Line> = lines.into_iter().skip(first).collect();
        frame.render_widget(
            Paragraph::new(shown)
                .block(Frame::default().borders(Borders::ALL).title(" magi-code ")),
            body,
        );
        let hint = if self.picker.is_some() {
            " sessions: Up/Down choose · Enter open · Esc back "
        } else if self.pending_approval().is_some() {
            " approval pending: y allow · n deny "
        } else {
            " prompt · Enter send "
        };
        frame.render_widget(
            Paragraph::new(format!("› {}", self.composer))
                .block(Frame::default().borders(Borders::ALL).title(hint)),
            composer,
        );
        let state = if self.transcript.transport_lost() {
            "disconnected"
        } else if self.transcript.run_active() {
            "running · Esc stop"
        } else {
            "idle"
        };
        // The notice comes before the key hints, so a narrow terminal cuts the hints.
        let session = format!(" session {}", self.session_id);
        let mut parts = vec![session.as_str(), state];
        if !self.status.trim().is_empty() {
            parts.push(self.status.trim());
        }
        parts.push("Up/Down history · Ctrl-O sessions · Ctrl-C quit");
        frame.render_widget(
            Paragraph::new(parts.join(" · ")).style(Style::default().add_modifier(Modifier::DIM)),
            status,
        );
    }

    fn transcript_lines(&self) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for item in self.transcript.items() {
            match item {
                Item::Prompt(p) => {
                    let note = match &p.state {
                        PromptState::Submitted => " (sending)",
                        _ => "",
                    };
                    lines.push(styled(format!("› {}{note}", p.text), Color::Cyan));
                }
                Item::Message(m) => {
                    for line in m.text().lines() {
                        lines.push(Line::from(line.to_owned()));
                    }
                }
                Item::Activity(a) => {
                    let (mark, color) = match a.state {
                        ActivityDisplay::Started => ("…", Color::Yellow),
                        ActivityDisplay::Completed => ("✓", Color::Green),
                        ActivityDisplay::Failed => ("✗", Color::Red),
                        ActivityDisplay::Unknown => ("?", Color::Magenta),
                    };
                    // A subagent's call is shown under its task.
                    let indent = match &a.card {
                        CardView::Card(card) if card.parent_activity_id.is_some() => "  ↳ ",
                        _ => "",
                    };
                    lines.push(styled(
                        format!("{indent}{mark} {}: {}", a.name, a.summary),
                        color,
                    ));
                    match &a.card {
                        CardView::Card(card) => lines.extend(card_lines(card)),
                        CardView::Unknown => {
                            lines.push(styled("    card unknown".to_owned(), Color::Magenta))
                        }
                        CardView::None => {}
                    }
                }
                Item::Approval(a) => {
                    let (text, color) = match a.state {
                        ApprovalState::Pending => (
                            format!("? Allow {}? press y to allow, n to deny", a.summary),
                            Color::Yellow,
                        ),
                        ApprovalState::Answered { allow: true } => {
                            (format!("  allowed: {}", a.summary), Color::Green)
                        }
                        ApprovalState::Answered { allow: false } => {
                            (format!("  denied: {}", a.summary), Color::Red)
                        }
                        ApprovalState::Lapsed => {
                            (format!("  lapsed (denied): {}", a.summary), Color::Red)
                        }
                        ApprovalState::Unknown => {
                            (format!("  approval unknown: {}", a.summary), Color::Magenta)
                        }
                    };
                    lines.push(styled(text, color));
                }
                Item::Diagnostic(d) => {
                    lines.push(styled(format!("! {}: {}", d.code, d.summary), Color::Red))
                }
                Item::History(h) => {
                    let (prefix, color) = match item.role() {
                        Role::User => ("› ", Some(Color::Cyan)),
                        Role::Activity => ("• ", Some(Color::Green)),
                        Role::Diagnostic => ("! ", Some(Color::Red)),
                        _ => ("", None),
                    };
                    for (n, line) in h.text.lines().enumerate() {
                        let text = format!("{}{line}", if n == 0 { prefix } else { "  " });
                        lines.push(match color {
                            Some(color) => styled(text, color),
                            None => Line::from(text),
                        });
                    }
                    if let Some(card) = &h.card {
                        lines.extend(card_lines(card));
                    }
                }
            }
        }
        lines
    }
}

/// The picker's lines: one per session, the selected one marked.
fn picker_lines(picker: &Picker) -> Vec<Line<'static>> {
    let mut lines = vec![styled(
        "Sessions of this directory:".to_owned(),
        Color::Cyan,
    )];
    for (n, session) in picker.sessions.iter().enumerate() {
        let mark = if n == picker.selected { "▶" } else { " " };
        let text = format!(
            "{mark} {}  {}  {}",
            session.session_id,
            session.updated_at.as_deref().unwrap_or("-"),
            session.title.as_deref().unwrap_or("")
        );
        lines.push(if n == picker.selected {
            styled(text, Color::Yellow)
        } else {
            Line::from(text)
        });
    }
    lines
}

fn styled(text: String, color: Color) -> Line<'static> {
    Line::from(Span::styled(text, Style::default().fg(color)))
}

/// What a card adds under its activity: its command and exit code, the first lines of
/// its diff in colour, a subagent's calls, and what it left out.
fn card_lines(card: &Card) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for block in &card.blocks {
        match block {
            Block::Command(command) => {
                let exit = command
                    .exit_code
                    .map_or_else(|| "exit code unknown".to_owned(), |c| format!("exit {c}"));
                lines.push(styled(
                    format!(
                        "    $ {} ({exit})",
                        command.command.as_deref().unwrap_or("(not shown)")
                    ),
                    Color::Gray,
                ));
            }
            Block::Diff(diff) => {
                for line in diff.lines.iter().take(DIFF_LINES_SHOWN) {
                    let (prefix, color) = match line.kind {
                        DiffLineKind::Added => ("+", Color::Green),
                        DiffLineKind::Removed => ("-", Color::Red),
                        DiffLineKind::HunkHeader | DiffLineKind::FileHeader => ("", Color::Blue),
                        _ => (" ", Color::Gray),
                    };
                    lines.push(styled(format!("    {prefix}{}", line.text), color));
                }
                if diff.lines.len() > DIFF_LINES_SHOWN {
                    lines.push(styled(
                        format!(
                            "    … {} more diff lines",
                            diff.lines.len() - DIFF_LINES_SHOWN
                        ),
                        Color::DarkGray,
                    ));
                }
            }
            Block::Children(children) => {
                let finished = children
                    .children
                    .iter()
                    .filter(|c| c.state == magi_protocol::cards::CardState::Finished)
                    .count();
                let total = children
                    .total
                    .map_or_else(|| "unknown".to_owned(), |t| t.to_string());
                lines.push(styled(
                    format!("    subagent calls: {total} ({finished} of those shown finished)"),
                    Color::Gray,
                ));
            }
            _ => {}
        }
    }
    for omission in &card.omissions {
        let count = omission
            .omitted_count
            .map_or_else(String::new, |n| format!("{n} "));
        lines.push(styled(
            format!(
                "    ({count}{} omitted: {})",
                serde_json::to_value(omission.subject)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                serde_json::to_value(omission.reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ),
            Color::DarkGray,
        ));
    }
    lines
}

/// Lines cut to `width` characters, so the newest lines can be kept on screen.
fn wrap(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    let mut wrapped = Vec::new();
    for line in lines {
        let style = line.spans.first().map(|s| s.style).unwrap_or_default();
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        let chars: Vec<char> = text.chars().collect();
        if chars.is_empty() {
            wrapped.push(Line::default());
            continue;
        }
        for piece in chars.chunks(width) {
            wrapped.push(Line::from(Span::styled(
                piece.iter().collect::<String>(),
                style,
            )));
        }
    }
    wrapped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_card_counts_its_subagents_calls() {
        let card: Card = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "card_id": "tool-1", "activity_id": "tool-1",
            "parent_activity_id": null, "parent_state": "root", "task_id": "task-1",
            "tool_kind": "subagent", "state": "running", "outcome": null,
            "changes": "unknown", "revision": 1, "origin": "live",
            "detail": {"availability": "complete", "reason": null}, "title": "task reviewer",
            "metadata": {"tool_name": "task", "resource_path": null, "working_directory": null,
                         "public_protection": {"decision": "not_reported", "summary": null}},
            "blocks": [{"type": "children", "total": 3, "children": [
                {"activity_id": "tool-2", "task_id": "task-1", "title": "read a", "state": "finished",
                 "outcome": "success", "changes": "not_applicable"},
                {"activity_id": "tool-3", "task_id": "task-1", "title": "read b", "state": "running",
                 "outcome": null, "changes": "not_applicable"}]}],
            "omissions": []
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let text: Vec<String> = card_lines(&card)
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text, ["    subagent calls: 3 (1 of those shown finished)"]);
    }
}
