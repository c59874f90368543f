//! The loop that interleaves keys and backend frames, and draws at a bounded rate.

use std::time::{Duration, Instant};

use magi_client::fold::FoldInput;
use magi_client::{Backend, Incoming};
use magi_protocol::messages::Event;
use serde_json::json;
use tokio::sync::mpsc;

use super::terminal::{Screen, TermInput, spawn_input_reader};
use super::{Action, App};

/// The shortest time between two frames while events stream (about 60 per second).
const FRAME: Duration = Duration::from_millis(16);
/// How often the elapsed times of running calls are redrawn.
const TICK: Duration = Duration::from_millis(500);
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

impl App {
    /// Runs until the user quits or the keys end, then writes the frame statistics.
    pub(super) async fn run(
        &mut self,
        backend: &mut Backend,
        terminal: &mut Screen,
    ) -> anyhow::Result<()> {
        let mut inputs = spawn_input_reader();
        let mut frames = FrameStats::default();
        let result = self
            .event_loop(backend, terminal, &mut inputs, &mut frames)
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
        inputs: &mut mpsc::Receiver<(Instant, TermInput)>,
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
                // From the frame's start: a key read after it began was typed by
                // someone who could see it, however late this thread gets here.
                self.approval_drawn(started);
                dirty = false;
            }
            let wait = FRAME.saturating_sub(last_draw.elapsed());
            tokio::select! {
                () = tokio::time::sleep(wait), if dirty => continue,
                // Running calls and jobs show their elapsed time: redraw while any runs.
                () = tokio::time::sleep(TICK),
                    if !dirty && (self.transcript.run_active() || self.clock.has_jobs()) => {
                    dirty = true;
                }
                input = inputs.recv() => {
                    let Some((read_at, input)) = input else { return Ok(()) };
                    dirty = true;
                    // Input is drawn at once, whatever streams.
                    last_draw = Instant::now() - FRAME;
                    let action = match input {
                        TermInput::Key(key) => match self.approval_key(key, read_at) {
                            Some(action) => action,
                            None => self.key(key),
                        },
                        TermInput::Paste(text) => match self.approval_paste(&text) {
                            Some(action) => action,
                            None => self.paste(&text),
                        },
                        TermInput::Scroll(lines) => self.scroll(lines),
                        // The next draw fits the new size.
                        TermInput::Resize => Action::Nothing,
                    };
                    match action {
                        Action::Quit => return Ok(()),
                        Action::Nothing => {}
                        Action::Send(prompt) => {
                            self.renew_backend_if_needed(backend).await?;
                            self.send(backend, prompt).await?
                        }
                        Action::Stop => self.stop(backend).await?,
                        Action::Answer(answer) => self.answer(backend, answer).await?,
                        Action::ListSessions => self.list_sessions(backend).await?,
                        Action::OpenSession(id) => self.open_session(backend, id).await?,
                        Action::AnswerQuestions(answers) => {
                            self.answer_questions(backend, answers).await?
                        }
                    }
                }
                incoming = backend.next_incoming() => {
                    dirty = true;
                    match incoming {
                    Some(Incoming::Event { event, .. }) => {
                        self.clock.observe(&event, Instant::now());
                        let finished = matches!(event, Event::RunFinished(_));
                        match &event {
                            Event::QuestionAsked(asked) => {
                                self.question =
                                    Some(super::question::QuestionPicker::new((**asked).clone()));
                            }
                            // Questions still open when the run ends were settled by it.
                            Event::RunFinished(_) => self.question = None,
                            _ => {}
                        }
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
}
