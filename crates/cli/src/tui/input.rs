//! The thread that reads the terminal's input, and what it makes of input that arrives
//! together.
//!
//! Events are read with crossterm's level-triggered source (`use-dev-tty`): the
//! default one waits for the terminal's readiness edge-triggered and reads 1,024 bytes
//! per wake, so input longer than that (a fast paste) stopped part way until the next
//! key arrived.
//!
//! Input that arrives together is a burst: a person's key presses never do, but a
//! paste in a terminal without bracketed paste, the mouse wheel in alternate-scroll
//! mode and keys sent by a program do. A burst of text that holds a line break with
//! more text after it, or that is longer than a paste shown as a placeholder, is a
//! paste (so its line breaks are new lines, never a prompt sent halfway); arrows alone
//! are the wheel; anything else is its keys, in order.
//!
//! The reader can be paused (while `$EDITOR` has the terminal): it then stops reading
//! before the editor starts, so no key meant for the editor is taken.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use magi_protocol::limits::PASTE_PLACEHOLDER_CHARS;
use tokio::sync::mpsc;

/// Inputs buffered between the terminal reader and the loop.
const INPUT_QUEUE: usize = 256;
/// How long the reader looks for input already waiting after an event: long enough to
/// see what arrived in the same read, too short for a person's next key.
const WAITING: Duration = Duration::from_micros(50);
/// The longest gap inside a burst once it is known to be one (two events arrived
/// together): a large paste reaches the terminal in chunks, and a line break at the
/// end of a chunk must not end the burst (it would send the lines before it).
const BURST_GAP: Duration = Duration::from_millis(10);
/// The longest gap inside a burst of [`LONG_BURST`] events or more: the terminal
/// writes a long paste as the reader drains it, and a reader that lost the processor
/// for a moment (another build on the machine) must not cut the paste in pieces.
const LONG_BURST_GAP: Duration = Duration::from_millis(60);
/// Events from which a burst is long.
const LONG_BURST: usize = 64;
/// Most events one burst holds; a longer one goes on as the next burst.
const BURST_EVENTS: usize = 65_536;
/// How often a reader with nothing to read looks whether it is asked to pause.
const PAUSE_CHECK: Duration = Duration::from_millis(50);
/// How often a pause waiting for the reader takes what it queued off the queue: a
/// reader blocked on a full queue can only park once there is room.
const PAUSE_DRAIN: Duration = Duration::from_millis(10);

/// One thing the terminal said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TermInput {
    /// A key pressed (or repeated).
    Key(KeyEvent),
    /// A paste, whole: bracketed by the terminal, or a burst of lines without it.
    Paste(String),
    /// Arrow keys that arrived together in one read: the mouse wheel in
    /// alternate-scroll mode (a person's key presses never arrive several in one
    /// read). Negative scrolls up (towards older lines), positive down.
    Scroll(i32),
    /// The terminal changed size.
    Resize,
    /// The terminal gained (true) or lost (false) the focus, where it reports it.
    Focus(bool),
}

/// The terminal's inputs, each with the instant it was read, and the reader's pause.
pub(super) struct Inputs {
    received: mpsc::Receiver<(Instant, TermInput)>,
    /// Inputs taken off the queue while a pause waited for the reader, handed out first.
    held: VecDeque<(Instant, TermInput)>,
    pause: Arc<Pause>,
}

impl Inputs {
    /// The next input; `None` once the terminal can no longer be read.
    pub(super) async fn recv(&mut self) -> Option<(Instant, TermInput)> {
        match self.held.pop_front() {
            Some(held) => Some(held),
            None => self.received.recv().await,
        }
    }

    /// An input already waiting, if any.
    pub(super) fn try_recv(&mut self) -> Option<(Instant, TermInput)> {
        self.held
            .pop_front()
            .or_else(|| self.received.try_recv().ok())
    }

    /// Stops the reader reading the terminal, and returns once it has stopped (within
    /// [`PAUSE_CHECK`], or once the burst it reads ends): another program may then read
    /// the terminal alone. What the reader queues meanwhile is taken off the queue
    /// (and handed out later), so a reader waiting for room in a full queue parks too.
    pub(super) fn pause(&mut self) {
        let mut state = self.pause.lock();
        state.asked = true;
        while !state.parked && !state.gone {
            drop(state);
            while let Ok(input) = self.received.try_recv() {
                self.held.push_back(input);
            }
            state = self.pause.lock();
            if state.parked || state.gone {
                break;
            }
            state = self
                .pause
                .changed
                .wait_timeout(state, PAUSE_DRAIN)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Lets the reader read the terminal again.
    pub(super) fn resume(&self) {
        let mut state = self.pause.lock();
        state.asked = false;
        drop(state);
        self.pause.changed.notify_all();
    }
}

/// The reader's pause, shared with the loop.
#[derive(Default)]
struct Pause {
    state: Mutex<PauseState>,
    changed: Condvar,
}

#[derive(Default)]
struct PauseState {
    /// The loop asks the reader to stop reading.
    asked: bool,
    /// The reader stopped and waits.
    parked: bool,
    /// The reader ended: nobody will park.
    gone: bool,
}

impl Pause {
    fn lock(&self) -> std::sync::MutexGuard<'_, PauseState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits while a pause is asked for, saying it is parked meanwhile.
    fn wait_while_asked(&self) {
        let mut state = self.lock();
        if !state.asked {
            return;
        }
        state.parked = true;
        self.changed.notify_all();
        while state.asked {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.parked = false;
    }

    fn ended(&self) {
        self.lock().gone = true;
        self.changed.notify_all();
    }
}

/// Reads terminal events on a plain thread (the reads block) and queues them, each
/// with the instant it was read: a key read before a prompt was drawn must not answer
/// it, however late the loop handles the key.
pub(super) fn spawn_input_reader() -> Inputs {
    let (inputs, received) = mpsc::channel(INPUT_QUEUE);
    let pause = Arc::new(Pause::default());
    let shared = Arc::clone(&pause);
    std::thread::spawn(move || {
        read_inputs(&inputs, &shared);
        shared.ended();
    });
    Inputs {
        received,
        held: VecDeque::new(),
        pause,
    }
}

/// The reader's loop: each burst read whole, then classified and queued.
fn read_inputs(inputs: &mpsc::Sender<(Instant, TermInput)>, pause: &Pause) {
    loop {
        pause.wait_while_asked();
        match event::poll(PAUSE_CHECK) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(_) => return,
        }
        let Ok(first) = event::read() else { return };
        let read_at = Instant::now();
        let mut burst = vec![first];
        while burst.len() < BURST_EVENTS {
            // Once two events came together it is a burst: later chunks of it may
            // take a moment to arrive.
            let gap = match burst.len() {
                1 => WAITING,
                n if n < LONG_BURST => BURST_GAP,
                _ => LONG_BURST_GAP,
            };
            match event::poll(gap) {
                Ok(true) => match event::read() {
                    Ok(event) => burst.push(event),
                    Err(_) => break,
                },
                _ => break,
            }
        }
        for input in classify(burst) {
            if inputs.blocking_send((read_at, input)).is_err() {
                return;
            }
        }
    }
}

/// What a burst of events (one event, or several that arrived together) means.
fn classify(burst: Vec<TermEvent>) -> Vec<TermInput> {
    if burst.len() > 1
        && let Some(text) = pasted_text(&burst)
    {
        return vec![TermInput::Paste(text)];
    }
    let mut out = Vec::new();
    let mut arrows = ArrowBurst::default();
    let together = burst.len() > 1;
    for event in burst {
        match event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
                match arrow_step(&key).filter(|_| together) {
                    Some(step) => out.extend(arrows.add(step, key)),
                    None => {
                        out.extend(arrows.flush());
                        out.push(TermInput::Key(key));
                    }
                }
            }
            TermEvent::Paste(text) => {
                out.extend(arrows.flush());
                out.push(TermInput::Paste(text));
            }
            TermEvent::Resize(..) => {
                out.extend(arrows.flush());
                out.push(TermInput::Resize);
            }
            TermEvent::FocusGained => out.push(TermInput::Focus(true)),
            TermEvent::FocusLost => out.push(TermInput::Focus(false)),
            _ => {}
        }
    }
    out.extend(arrows.flush());
    out
}

/// The text of a burst that is a paste: only text keys, with a line break followed by
/// more text, or longer than a paste shown as a placeholder. A single line followed
/// by one Enter is typed text and its Enter (a program typing a prompt and sending it);
/// `None` for anything else.
fn pasted_text(burst: &[TermEvent]) -> Option<String> {
    let mut text = String::new();
    for event in burst {
        match event {
            TermEvent::Key(key) if key.kind == KeyEventKind::Release => {}
            TermEvent::Key(key) => text.push(text_key(key)?),
            _ => return None,
        }
    }
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let lines = body.contains('\n');
    (lines || body.chars().count() > PASTE_PLACEHOLDER_CHARS).then_some(text)
}

/// The character a key types into a paste: itself, or a line break for Enter (a
/// carriage return) and Ctrl-J (a line feed in raw mode), or a tab.
fn text_key(key: &KeyEvent) -> Option<char> {
    let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
    match key.code {
        KeyCode::Char(c) if plain => Some(c),
        KeyCode::Char('j') if key.modifiers == KeyModifiers::CONTROL => Some('\n'),
        KeyCode::Enter if plain => Some('\n'),
        KeyCode::Tab if key.modifiers.is_empty() => Some('\t'),
        _ => None,
    }
}

/// Up is one line towards older lines (-1), Down one towards newer (+1); other keys
/// and arrows with modifiers are not wheel steps.
fn arrow_step(key: &KeyEvent) -> Option<i32> {
    if key.modifiers != KeyModifiers::NONE {
        return None;
    }
    match key.code {
        KeyCode::Up => Some(-1),
        KeyCode::Down => Some(1),
        _ => None,
    }
}

/// Arrow keys read back to back, not yet given to the loop.
#[derive(Default)]
struct ArrowBurst {
    count: usize,
    steps: i32,
    first: Option<KeyEvent>,
}

impl ArrowBurst {
    /// Adds an arrow; one in the other direction first gives back the burst so far, so
    /// a burst is all one way and no press is lost in a sum.
    fn add(&mut self, step: i32, key: KeyEvent) -> Option<TermInput> {
        let turned = self.count != 0 && self.steps.signum() != step.signum();
        let before = if turned { self.flush() } else { None };
        self.count += 1;
        self.steps += step;
        self.first.get_or_insert(key);
        before
    }

    /// A lone arrow is a key; several are the wheel.
    fn flush(&mut self) -> Option<TermInput> {
        let burst = std::mem::take(self);
        match burst.count {
            0 => None,
            1 => burst.first.map(TermInput::Key),
            _ => Some(TermInput::Scroll(burst.steps)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(text: &str) -> Vec<TermEvent> {
        text.chars()
            .map(|c| match c {
                '\r' => TermEvent::Key(key(KeyCode::Enter)),
                c => TermEvent::Key(key(KeyCode::Char(c))),
            })
            .collect()
    }

    #[test]
    fn a_lone_arrow_is_a_key_and_arrows_together_are_the_wheel() {
        let mut burst = ArrowBurst::default();
        assert_eq!(burst.flush(), None);
        assert_eq!(burst.add(-1, key(KeyCode::Up)), None);
        assert_eq!(burst.flush(), Some(TermInput::Key(key(KeyCode::Up))));
        for _ in 0..3 {
            assert_eq!(burst.add(-1, key(KeyCode::Up)), None);
        }
        assert_eq!(burst.flush(), Some(TermInput::Scroll(-3)));
        burst.add(1, key(KeyCode::Down));
        burst.add(1, key(KeyCode::Down));
        assert_eq!(burst.flush(), Some(TermInput::Scroll(2)));
        // A turn gives back what went before: no press is lost in a sum.
        burst.add(-1, key(KeyCode::Up));
        burst.add(-1, key(KeyCode::Up));
        assert_eq!(
            burst.add(1, key(KeyCode::Down)),
            Some(TermInput::Scroll(-2))
        );
        assert_eq!(burst.flush(), Some(TermInput::Key(key(KeyCode::Down))));
        assert_eq!(arrow_step(&key(KeyCode::Left)), None);
        let shifted = KeyEvent::new(KeyCode::Up, KeyModifiers::SHIFT);
        assert_eq!(arrow_step(&shifted), None);
        // Through the classifier: arrows together scroll, a lone one is a key.
        let up = TermEvent::Key(key(KeyCode::Up));
        assert_eq!(
            classify(vec![up.clone(), up.clone(), up.clone()]),
            [TermInput::Scroll(-3)]
        );
        assert_eq!(classify(vec![up]), [TermInput::Key(key(KeyCode::Up))]);
    }

    #[test]
    fn lines_arriving_together_are_one_paste_never_a_prompt_sent_halfway() {
        assert_eq!(
            classify(typed("first line\rsecond line\rthird")),
            [TermInput::Paste("first line\nsecond line\nthird".into())]
        );
        // The last line's break is part of the paste too.
        assert_eq!(
            classify(typed("a\rb\r")),
            [TermInput::Paste("a\nb\n".into())]
        );
        // A line feed in raw mode arrives as Ctrl-J.
        let mut burst = typed("x");
        burst.push(TermEvent::Key(KeyEvent::new(
            KeyCode::Char('j'),
            KeyModifiers::CONTROL,
        )));
        burst.extend(typed("y"));
        assert_eq!(classify(burst), [TermInput::Paste("x\ny".into())]);
    }

    #[test]
    fn a_typed_line_and_its_enter_stay_keys_and_a_long_line_is_a_paste() {
        let keys = classify(typed("run it\r"));
        assert_eq!(keys.len(), 7);
        assert_eq!(keys[6], TermInput::Key(key(KeyCode::Enter)));
        assert!(matches!(keys[0], TermInput::Key(_)));
        // A line longer than a paste shown whole is a paste.
        let long: String = "ab".repeat(PASTE_PLACEHOLDER_CHARS);
        assert_eq!(classify(typed(&long)), [TermInput::Paste(long.clone())]);
        assert_eq!(
            classify(typed(&format!("{long}\r"))),
            [TermInput::Paste(format!("{long}\n"))]
        );
        // Anything but text keys, and a lone key, are keys.
        let mut mixed = typed("a\rb");
        mixed.push(TermEvent::Key(KeyEvent::new(
            KeyCode::Enter,
            KeyModifiers::ALT,
        )));
        assert_eq!(classify(mixed).len(), 4);
        assert_eq!(classify(typed("\r")), [TermInput::Key(key(KeyCode::Enter))]);
    }
}
