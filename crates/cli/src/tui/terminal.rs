//! The terminal Mission Control draws on: entering and leaving it, handing it to
//! another program (`$EDITOR`) and back, and suspending (Ctrl-Z).
//!
//! The screen is the alternate screen in raw mode, with bracketed paste (a pasted text
//! arrives whole, newlines kept), focus reporting (where the terminal has it), the
//! terminal's alternate-scroll mode (the mouse wheel arrives as arrow keys; the mouse
//! is never captured, so the terminal's own selection and copy keep working) and,
//! where the terminal has it, the keyboard enhancement protocol (so Shift+Enter is
//! told from Enter). Its input is read by [`super::input`].

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::frame_writer::FrameWriter;

/// Alternate-scroll mode on and off (xterm's private mode 1007): in the alternate
/// screen the wheel sends arrow keys instead of scrolling the terminal's own buffer.
const ALTERNATE_SCROLL_ON: &str = "\x1b[?1007h";
const ALTERNATE_SCROLL_OFF: &str = "\x1b[?1007l";

/// Whether the terminal speaks the keyboard enhancement protocol (asked once, on
/// entering: later the input reader owns the terminal's answers).
static ENHANCED_KEYS: AtomicBool = AtomicBool::new(false);

/// The alternate screen, in raw mode, each frame written whole.
pub(super) type Screen = Terminal<CrosstermBackend<FrameWriter>>;

/// Enters raw mode, the alternate screen, bracketed paste, focus reporting and
/// alternate scroll.
pub(super) fn enter_terminal() -> anyhow::Result<Screen> {
    enable_raw_mode()?;
    // A terminal that speaks the keyboard enhancement protocol tells Shift+Enter from
    // Enter (a new line, not a send); one that does not is never sent the request.
    ENHANCED_KEYS.store(
        supports_keyboard_enhancement().unwrap_or(false),
        Ordering::Relaxed,
    );
    let mut stdout = std::io::stdout();
    modes_on(&mut stdout)?;
    Ok(Terminal::new(
        CrosstermBackend::new(FrameWriter::stdout()?),
    )?)
}

/// Turns on the screen's modes (raw mode is on already).
fn modes_on(out: &mut impl Write) -> std::io::Result<()> {
    execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableFocusChange
    )?;
    out.write_all(ALTERNATE_SCROLL_ON.as_bytes())?;
    if ENHANCED_KEYS.load(Ordering::Relaxed) {
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
    }
    out.flush()
}

/// Turns the screen's modes off, whatever state they are in.
fn modes_off(out: &mut impl Write) {
    let _ = out.write_all(ALTERNATE_SCROLL_OFF.as_bytes());
    if ENHANCED_KEYS.load(Ordering::Relaxed) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableFocusChange,
        DisableBracketedPaste,
        LeaveAlternateScreen
    );
    let _ = disable_raw_mode();
}

/// Leaves the alternate screen and raw mode, whatever state they are in.
pub(super) fn leave_terminal(terminal: &mut Screen) {
    modes_off(terminal.backend_mut());
    let _ = terminal.show_cursor();
}

/// Gives the terminal back as the shell left it, for another program (`$EDITOR`) or
/// while suspended. The input reader must be paused first.
pub(super) fn release(terminal: &mut Screen) {
    leave_terminal(terminal);
}

/// Takes the terminal back after [`release`]: the modes on again and the whole screen
/// drawn anew at the next frame (what was on it is the other program's).
pub(super) fn reclaim(terminal: &mut Screen) -> anyhow::Result<()> {
    enable_raw_mode()?;
    modes_on(terminal.backend_mut())?;
    terminal.clear()?;
    Ok(())
}

/// Ctrl-Z: gives the terminal back and stops this process as the shell's job control
/// would (`SIGTSTP`); once the shell continues it (`fg`), takes the terminal back. The
/// backend, in a process group of its own, runs on meanwhile.
pub(super) fn suspend(terminal: &mut Screen) -> anyhow::Result<()> {
    release(terminal);
    // The default action of SIGTSTP stops the process here; this call returns when
    // SIGCONT resumes it.
    nix::sys::signal::raise(nix::sys::signal::Signal::SIGTSTP)?;
    reclaim(terminal)
}
