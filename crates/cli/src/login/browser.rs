//! Opening a sign-in's URL in the person's browser, where there is one to open: the
//! program `$BROWSER` names, else the desktop's opener when a display is there
//! (`xdg-open`; `open` on macOS). Without either, nothing is started and the caller
//! says to open the URL by hand. A text-mode browser is never started in the terminal
//! the sign-in prints to.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use magi_config::Env;

/// How long the opener may take to hand the URL over before it is ended (the browser
/// it started is not its child and stays).
const OPENER_WAIT: Duration = Duration::from_secs(5);

/// Opens `url`; the error says why no browser was opened.
pub fn open(url: &str, env: &Env) -> Result<(), String> {
    let (program, opener) = match env.get("BROWSER").filter(|b| !b.trim().is_empty()) {
        Some(browser) => (browser.to_owned(), false),
        None if cfg!(target_os = "macos") => ("open".to_owned(), true),
        None if env.get("DISPLAY").is_some() || env.get("WAYLAND_DISPLAY").is_some() => {
            ("xdg-open".to_owned(), true)
        }
        None => return Err("no browser can be opened here (no display, no $BROWSER)".to_owned()),
    };
    let mut child = Command::new(&program)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{program} could not be started ({e})"))?;
    if !opener {
        // The person's own browser: it is theirs to close.
        return Ok(());
    }
    let deadline = Instant::now() + OPENER_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{program} failed ({status})")),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) | Err(_) => {
                // The URL is printed; an opener that hangs is not waited for.
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{program} did not finish"));
            }
        }
    }
}
