//! The loop that interleaves keys and backend frames, and draws at a bounded rate.

use std::time::{Duration, Instant};

use magi_client::fold::FoldInput;
use magi_client::{Backend, Incoming};
use magi_protocol::messages::Event;
use serde_json::json;

use super::input::{Inputs, TermInput};
use super::terminal::Screen;
use super::{Action, App};

/// The shortest time between two frames while events stream (about 60 per second).
const FRAME: Duration = Duration::from_millis(16);
/// How often the elapsed times of running calls are redrawn.
const TICK: Duration = Duration::from_millis(500);
/// Inputs handled before a frame is drawn, at most: a long burst still shows progress.
const INPUT_BATCH: usize = 4_096;
/// Frame times kept for the statistics, at most.
const FRAME_SAMPLES: usize = 65_536;

/// How long frames took to draw, and how long after its read each input was on
/// screen (to the end of the frame that showed it), written on exit to the file
/// `MAGI_TUI_STATS` names (for the benchmark; nothing is kept or written without it).
#[derive(Default)]
struct FrameStats {
    samples: Vec<Duration>,
    frames: u64,
    /// Frames that took longer than [`FRAME`].
    slow: u64,
    /// When each input handled since the last frame was read.
    unseen: Vec<Instant>,
    inputs: Vec<Duration>,
}

impl FrameStats {
    fn record(&mut self, took: Duration) {
        self.frames += 1;
        if took > FRAME {
            self.slow += 1;
        }
        if self.samples.len() < FRAME_SAMPLES {
            self.samples.push(took);
        }
        let shown = Instant::now();
        for read_at in self.unseen.drain(..) {
            if self.inputs.len() < FRAME_SAMPLES {
                self.inputs.push(shown.duration_since(read_at));
            }
        }
    }

    /// An input read at `read_at` was handled; the next frame shows it.
    fn input(&mut self, read_at: Instant) {
        if self.unseen.len() < FRAME_SAMPLES {
            self.unseen.push(read_at);
        }
    }

    fn report(&mut self) {
        let Some(path) = std::env::var_os("MAGI_TUI_STATS") else {
            return;
        };
        let quantiles = |samples: &mut Vec<Duration>| {
            samples.sort();
            let at = |q: f64| {
                samples
                    .get(((samples.len() as f64 - 1.0) * q).round() as usize)
                    .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
            };
            (at(0.5), at(0.95), at(1.0))
        };
        let (median, p95, max) = quantiles(&mut self.samples);
        let (input_median, input_p95, input_max) = quantiles(&mut self.inputs);
        let stats = json!({
            "frames": self.frames,
            "median_ms": median,
            "p95_ms": p95,
            "max_ms": max,
            "frames_over_16ms": self.slow,
            "inputs": self.inputs.len(),
            "input_to_frame_median_ms": input_median,
            "input_to_frame_p95_ms": input_p95,
            "input_to_frame_max_ms": input_max,
        });
        // Written beside it, then renamed: a reader that sees the file sees it whole.
        let mut partial = path.clone();
        partial.push(".partial");
        if std::fs::write(&partial, stats.to_string()).is_ok() {
            let _ = std::fs::rename(&partial, &path);
        }
    }
}

/// Whether the loop goes on after an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// Waits for the editor to exit; never ends without one.
async fn wait_editor(
    editing: &mut Option<super::outside::Editing>,
) -> std::io::Result<std::process::ExitStatus> {
    match editing {
        Some(editing) => editing.wait().await,
        None => std::future::pending().await,
    }
}

impl App {
    /// Handles one input read at `read_at`: what it means given what is on screen,
    /// then what that asks of the backend or the terminal.
    async fn input(
        &mut self,
        backend: &mut Backend,
        terminal: &mut Screen,
        inputs: &mut Inputs,
        read_at: Instant,
        input: TermInput,
    ) -> anyhow::Result<Flow> {
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
            TermInput::Focus(focused) => {
                self.focused = focused;
                Action::Nothing
            }
            // The next draw fits the new size.
            TermInput::Resize => Action::Nothing,
        };
        match action {
            Action::Quit => return Ok(Flow::Quit),
            Action::Nothing => {}
            // With the backend gone there is no run to stop or answer.
            Action::Stop | Action::Answer(_) | Action::AnswerQuestions(_) if self.backend_gone => {}
            // A command asks a fresh backend.
            Action::Commands(request) if self.backend_gone => {
                self.renew_backend(backend).await?;
                if !self.backend_gone {
                    self.command(backend, request).await?;
                }
            }
            Action::Send(prompt) => self.send_renewed(backend, prompt).await?,
            Action::Stop => self.stop(backend).await?,
            Action::Answer(answer) => self.answer(backend, answer).await?,
            Action::Commands(request) => self.command(backend, request).await?,
            Action::AnswerQuestions(answers) => self.answer_questions(backend, answers).await?,
            Action::Renew => self.renew_backend(backend).await?,
            Action::CycleMode => self.cycle_mode(backend).await?,
            Action::Editor => self.start_editor(terminal, inputs),
            Action::Suspend => self.suspend(terminal, inputs)?,
        }
        Ok(Flow::Continue)
    }

    /// Runs until the user quits or the keys end, then writes the frame statistics.
    pub(super) async fn run(
        &mut self,
        backend: &mut Backend,
        terminal: &mut Screen,
        inputs: &mut Inputs,
    ) -> anyhow::Result<()> {
        let mut frames = FrameStats::default();
        let result = self
            .event_loop(backend, terminal, inputs, &mut frames)
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
        inputs: &mut Inputs,
        frames: &mut FrameStats,
    ) -> anyhow::Result<()> {
        let mut dirty = true;
        let mut last_draw = Instant::now() - FRAME;
        loop {
            // While the editor has the terminal nothing is drawn; the frame after it is
            // whole.
            if dirty && last_draw.elapsed() >= FRAME && self.editing.is_none() {
                let started = Instant::now();
                terminal.draw(|frame| self.draw(frame))?;
                frames.record(started.elapsed());
                last_draw = Instant::now();
                // From the frame's start: a key read after it began was typed by
                // someone who could see it, however late this thread gets here.
                self.approval_drawn(started);
                dirty = false;
                // The bell rings once what it rings for is on screen.
                if let Some(alert) = self.alert.take() {
                    super::alert::ring(terminal.backend_mut(), &alert, self.notifications);
                }
            }
            let wait = FRAME.saturating_sub(last_draw.elapsed());
            // While a turn runs the indicator moves (or, without motion, its seconds
            // count), so the screen is redrawn on a tick even when nothing arrives.
            let tick = if self.reduced_motion {
                Duration::from_secs(1)
            } else {
                super::render::SPINNER_STEP
            };
            let tick = if self.transcript.run_active() {
                tick
            } else {
                TICK
            };
            let working = !dirty && (self.transcript.run_active() || self.clock.has_jobs());
            tokio::select! {
                () = tokio::time::sleep(wait), if dirty && self.editing.is_none() => continue,
                // Running turns, calls and jobs show their elapsed time (and the working
                // indicator moves): redraw on a tick while any runs.
                () = tokio::time::sleep(tick), if working => {
                    dirty = true;
                }
                input = inputs.recv() => {
                    let Some((read_at, input)) = input else { return Ok(()) };
                    dirty = true;
                    // Input is drawn at once, whatever streams.
                    last_draw = Instant::now() - FRAME;
                    // Everything already read is handled before the next frame: a
                    // burst of keys costs one frame, not one each.
                    let mut next = Some((read_at, input));
                    let mut handled = 0;
                    while let Some((read_at, input)) = next.take() {
                        frames.input(read_at);
                        if self.input(backend, terminal, inputs, read_at, input).await?
                            == Flow::Quit
                        {
                            return Ok(());
                        }
                        handled += 1;
                        if handled < INPUT_BATCH && self.editing.is_none() {
                            next = inputs.try_recv();
                        }
                    }
                }
                status = wait_editor(&mut self.editing), if self.editing.is_some() => {
                    dirty = true;
                    self.edited(terminal, inputs, status)?;
                }
                done = super::commands::finished(&mut self.op), if self.op.is_some() => {
                    dirty = true;
                    self.op_done(backend, done).await?;
                }
                // The workspace's paths for `@` mentions arrive while the person types.
                walked = self.composer.walk_finished(), if self.composer.walking() => {
                    self.composer.walked(walked);
                    dirty = true;
                }
                // A backend that ended has nothing more to say.
                incoming = backend.next_incoming(), if !self.backend_gone => {
                    dirty = true;
                    match incoming {
                    Some(Incoming::Event { event, .. }) => {
                        self.clock.observe(&event, Instant::now());
                        let finished = matches!(event, Event::RunFinished(_));
                        match &event {
                            Event::QuestionAsked(asked) => {
                                self.question =
                                    Some(super::question::QuestionPicker::new((**asked).clone()));
                                self.alert = Some("the model asks you a question".to_owned());
                                // What the run asks is answered before any panel is read.
                                self.panel = None;
                            }
                            Event::ApprovalRequested(requested) => {
                                self.panel = None;
                                self.approval.arrived(&requested.approval_id, Instant::now());
                                self.alert = Some(format!("approval needed: {}", requested.summary));
                            }
                            // Questions still open when the run ends were settled by it.
                            Event::RunFinished(finished) => {
                                self.question = None;
                                self.stopping = false;
                                self.run_started = None;
                                if !self.focused {
                                    self.alert = Some(super::alert::turn_ended(finished.outcome));
                                }
                            }
                            Event::UsageUpdated(usage) if usage.session_id == self.session_id => {
                                self.usage = Some(super::render::merged_usage(
                                    self.usage.take(),
                                    usage,
                                ));
                            }
                            Event::SessionTitled(titled) if titled.session_id == self.session_id => {
                                self.title = Some(titled.title.clone());
                            }
                            _ => {}
                        }
                        self.transcript.apply(FoldInput::Event(event));
                        if finished
                            && let Some(due) = self.transcript.history_due().cloned()
                            && let Some(revision) = due.revision
                        {
                            self.load_history(backend, &due.session_id, &revision).await?;
                        }
                        // A prompt queued during the turn goes now.
                        if finished && let Some(prompt) = self.take_queued() {
                            self.send_renewed(backend, prompt).await?;
                        }
                    }
                    Some(Incoming::Response(_)) => {}
                    Some(Incoming::Violation(v)) => {
                        self.transcript.apply(FoldInput::Disconnected);
                        self.status = format!("protocol violation: {v}");
                    }
                    None => self.backend_ended(backend).await,
                }
                }
            }
        }
    }
}
