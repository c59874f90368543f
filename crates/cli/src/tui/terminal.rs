//! The terminal Mission Control draws on, and the thread that reads its keys.

use std::io::Stdout;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyEvent};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use tokio::sync::mpsc;

/// Keys buffered between the terminal reader and the loop.
const KEY_QUEUE: usize = 256;

/// The alternate screen, in raw mode.
pub(super) type Screen = Terminal<CrosstermBackend<Stdout>>;

/// Enters raw mode and the alternate screen.
pub(super) fn enter_terminal() -> anyhow::Result<Screen> {
    enable_raw_mode()?;
    let mut stdout = std::io::stdout();
    execute!(stdout, EnterAlternateScreen)?;
    Ok(Terminal::new(CrosstermBackend::new(stdout))?)
}

/// Leaves the alternate screen and raw mode, whatever state they are in.
pub(super) fn leave_terminal(terminal: &mut Screen) {
    let _ = disable_raw_mode();
    let _ = execute!(terminal.backend_mut(), LeaveAlternateScreen);
    let _ = terminal.show_cursor();
}

/// Reads terminal events on a plain thread (the reads block) and queues the keys.
pub(super) fn spawn_key_reader() -> mpsc::Receiver<KeyEvent> {
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
