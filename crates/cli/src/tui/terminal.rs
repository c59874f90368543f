//! The terminal Mission Control draws on, and the thread that reads its input.
//!
//! The screen is the alternate screen in raw mode, with bracketed paste (a pasted text
//! arrives whole, newlines kept), the terminal's alternate-scroll mode (the mouse
//! wheel arrives as arrow keys; the mouse is never captured, so the terminal's own
//! selection and copy keep working) and, where the terminal has it, the keyboard
//! enhancement protocol (so Shift+Enter is told from Enter).

use std::io::{Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event as TermEvent, KeyCode, KeyEvent,
    KeyEventKind, KeyModifiers, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use tokio::sync::mpsc;

/// Inputs buffered between the terminal reader and the loop.
const INPUT_QUEUE: usize = 256;

/// Alternate-scroll mode on and off (xterm's private mode 1007): in the alternate
/// screen the wheel sends arrow keys instead of scrolling the terminal's own buffer.
const ALTERNATE_SCROLL_ON: &str = "\x1b[?1007h";
const ALTERNATE_SCROLL_OFF: &str = "\x1b[?1007l";

/// Whether the keyboard enhancement flags were pushed, so leaving pops them.
static ENHANCED_KEYS: AtomicBool = AtomicBool::new(false);

/// The alternate screen, in raw mode.
pub(super) type Screen = Terminal<CrosstermBackend<Stdout>>;

/// The terminal's inputs, each with the instant it was read.
pub(super) type Inputs = mpsc::Receiver<(Instant, TermInput)>;

/// One thing the terminal said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TermInput {
    /// A key pressed (or repeated).
    Key(KeyEvent),
    /// A bracketed paste, whole.
    Paste(String),
    /// Arrow keys that arrived together in one read: the mouse wheel in
    /// alternate-scroll mode (a person's key presses never arrive several in one
    /// read). Negative scrolls up (towards older lines), positive down.
    Scroll(i32),
    /// The terminal changed size.
    Resize,
}

/// Enters raw mode, the alternate screen, bracketed paste and alternate scroll.
pub(super) fn enter_terminal() -> anyhow::Result<Screen> {
    enable_raw_mode()?;
    let mut stdout = std::io::stdout();
    execute!(stdout, EnterAlternateScreen, EnableBracketedPaste)?;
    stdout.write_all(ALTERNATE_SCROLL_ON.as_bytes())?;
    // A terminal that speaks the keyboard enhancement protocol tells Shift+Enter from
    // Enter (a new line, not a send); one that does not is never sent the request.
    if supports_keyboard_enhancement().unwrap_or(false) {
        execute!(
            stdout,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        ENHANCED_KEYS.store(true, Ordering::Relaxed);
    }
    stdout.flush()?;
    Ok(Terminal::new(CrosstermBackend::new(stdout))?)
}

/// Leaves the alternate screen and raw mode, whatever state they are in.
pub(super) fn leave_terminal(terminal: &mut Screen) {
    let backend = terminal.backend_mut();
    let _ = backend.write_all(ALTERNATE_SCROLL_OFF.as_bytes());
    if ENHANCED_KEYS.swap(false, Ordering::Relaxed) {
        let _ = execute!(backend, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(backend, DisableBracketedPaste, LeaveAlternateScreen);
    let _ = disable_raw_mode();
    let _ = terminal.show_cursor();
}

/// Reads terminal events on a plain thread (the reads block) and queues them, each
/// with the instant it was read: a key read before a prompt was drawn must not answer
/// it, however late the loop handles the key.
pub(super) fn spawn_input_reader() -> Inputs {
    let (inputs, received) = mpsc::channel(INPUT_QUEUE);
    std::thread::spawn(move || {
        let mut arrows = ArrowBurst::default();
        while let Ok(event) = event::read() {
            let read_at = Instant::now();
            // Whether more input is already waiting: arrows read together are a wheel.
            let more = event::poll(Duration::ZERO).unwrap_or(false);
            let mut out = Vec::new();
            match event {
                TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
                    if let Some(step) = arrow_step(&key)
                        && (more || arrows.count != 0)
                    {
                        out.extend(arrows.add(step, key));
                    } else {
                        out.extend(arrows.flush());
                        out.push(TermInput::Key(key));
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
                _ => {}
            }
            if !more {
                out.extend(arrows.flush());
            }
            for input in out {
                if inputs.blocking_send((read_at, input)).is_err() {
                    return;
                }
            }
        }
    });
    received
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
    }
}
