//! A real terminal for tests: a tmux server of its own per test, keys in with
//! `send-keys`, the screen back with `capture-pane`.

use std::io::Write;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{TestEnv, WAIT, bin};

/// The environment that points Mission Control at the mock model `mock` (Chat
/// Completions, model `mock-model`).
pub fn mock_vars(mock: &magi_testkit::MockServer) -> Vec<(&'static str, String)> {
    vec![
        ("MAGI_PROVIDER", "openai-chat".into()),
        ("MAGI_MODEL", "mock-model".into()),
        ("OPENAI_BASE_URL", mock.base_url()),
    ]
}

/// Longest a screen that shows what a test waits for is given to settle (see
/// `Tmux::settled`).
const SETTLE_WAIT: Duration = Duration::from_millis(500);

/// One tmux server of its own per test, killed when the test ends.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts Mission Control in a 120x40 window with `env`'s environment.
    pub fn start(env: &TestEnv, vars: &[(&str, String)]) -> Tmux {
        Tmux::start_command(env, vars, &[bin()])
    }

    /// Starts Mission Control in a window of `columns` by `rows`.
    pub fn start_sized(env: &TestEnv, vars: &[(&str, String)], columns: u16, rows: u16) -> Tmux {
        Tmux::launch(env, vars, &[bin()], (columns, rows))
    }

    /// Starts `command_line` (a program and its arguments) in a 120x40 window in
    /// `env`'s workspace, with `env`'s `MC_HOME` and `vars`.
    pub fn start_command(env: &TestEnv, vars: &[(&str, String)], command_line: &[&str]) -> Tmux {
        Tmux::launch(env, vars, command_line, (120, 40))
    }

    /// Starts `command_line` in a window of `columns` by `rows`.
    pub fn launch_sized(
        env: &TestEnv,
        vars: &[(&str, String)],
        command_line: &[&str],
        columns: u16,
        rows: u16,
    ) -> Tmux {
        Tmux::launch(env, vars, command_line, (columns, rows))
    }

    fn launch(
        env: &TestEnv,
        vars: &[(&str, String)],
        command_line: &[&str],
        (columns, rows): (u16, u16),
    ) -> Tmux {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let socket = format!(
            "magi-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut command = Command::new("tmux");
        command.args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "mc",
        ]);
        command
            .args(["-x", &columns.to_string(), "-y", &rows.to_string(), "-c"])
            .arg(env.cwd());
        command
            .arg("-e")
            .arg(format!("MC_HOME={}", env.mc_home().display()));
        // The suite's approval mode (`env`'s), unless the test gives its own.
        let mode = env.vars().find(|(key, _)| *key == super::MODE_ENV);
        if let Some((key, value)) = mode
            && !vars.iter().any(|(k, _)| *k == key)
        {
            command.arg("-e").arg(format!("{key}={value}"));
        }
        for (key, value) in vars {
            command.arg("-e").arg(format!("{key}={value}"));
        }
        command.args(command_line);
        let status = command.status().unwrap();
        assert!(status.success(), "tmux could not start");
        Tmux { socket }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "mc"])
    }

    /// The screen with its colours and attributes, as SGR sequences tmux writes them.
    pub fn styled_screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-e", "-t", "mc"])
    }

    /// Waits until the screen shows `text`; fails with the screen otherwise. The screen
    /// returned is settled (see [`Tmux::settled`]), so what else a test reads off it
    /// belongs to the same frame.
    pub fn wait_for(&self, text: &str) -> String {
        self.settled(|screen| screen.contains(text))
            .unwrap_or_else(|screen| panic!("the screen never showed {text:?}:\n{screen}"))
    }

    /// Waits until the screen no longer shows `text`; fails with the screen otherwise.
    pub fn wait_gone(&self, text: &str) -> String {
        self.settled(|screen| !screen.contains(text))
            .unwrap_or_else(|screen| panic!("the screen kept showing {text:?}:\n{screen}"))
    }

    /// A screen for which `holds` is true, settled: the same on the next capture. A
    /// frame reaches tmux through the terminal in pieces of a few KiB, and a capture can
    /// fall between two of them: half a frame may already show what a test waits for
    /// and not yet what it then reads. A screen that holds and keeps changing (a clock
    /// ticking) is taken as last seen after [`SETTLE_WAIT`]; one that held and then no
    /// longer does (a passing state) is taken as it was seen. The last screen is the
    /// error if none held within [`WAIT`].
    fn settled(&self, holds: impl Fn(&str) -> bool) -> Result<String, String> {
        const LOOK_AGAIN: Duration = Duration::from_millis(20);
        let deadline = Instant::now() + WAIT;
        let mut held: Option<(String, Instant)> = None;
        loop {
            let screen = self.screen();
            match held.take() {
                Some((before, _)) if before == screen => return Ok(screen),
                Some((before, _)) if !holds(&screen) => return Ok(before),
                Some((_, since)) if since.elapsed() >= SETTLE_WAIT => return Ok(screen),
                Some((_, since)) => held = Some((screen, since)),
                None if holds(&screen) => held = Some((screen, Instant::now())),
                None if Instant::now() >= deadline => return Err(screen),
                None => {}
            }
            std::thread::sleep(LOOK_AGAIN);
        }
    }

    /// Lets programs in the window set tmux's clipboard (OSC 52), as a terminal would.
    pub fn accept_clipboard(&self) {
        self.tmux(&["set-option", "-g", "set-clipboard", "on"]);
    }

    /// What tmux's clipboard (its newest paste buffer) holds.
    pub fn clipboard(&self) -> String {
        self.tmux(&["show-buffer"])
    }

    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "mc", "-l", text]);
    }

    pub fn key(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "mc", key]);
    }

    /// Pastes `text` as a terminal does: a bracketed paste (the program asked for
    /// them), each line break sent as a carriage return.
    pub fn paste(&self, text: &str) {
        let mut load = Command::new("tmux")
            .args(["-L", &self.socket, "load-buffer", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        load.stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        assert!(
            load.wait().unwrap().success(),
            "tmux could not load the paste"
        );
        self.tmux(&["paste-buffer", "-p", "-d", "-t", "mc"]);
    }

    /// Whether the window's program still runs (the server ends with it).
    pub fn running(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "has-session", "-t", "mc"])
            .output()
            .is_ok_and(|output| output.status.success())
    }

    /// Quits Mission Control as a person does, once it is idle, with Ctrl-C twice on an
    /// empty composer, and waits until it has exited.
    pub fn quit(&self) {
        self.wait_for("idle ·");
        self.key("C-c");
        self.key("C-c");
        let deadline = Instant::now() + WAIT;
        while self.running() {
            assert!(
                Instant::now() < deadline,
                "Mission Control did not quit:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Resizes the window.
    pub fn resize(&self, columns: u16, rows: u16) {
        let (columns, rows) = (columns.to_string(), rows.to_string());
        self.tmux(&["resize-window", "-t", "mc", "-x", &columns, "-y", &rows]);
    }

    /// Copies everything the window's program writes to the terminal, escape sequences
    /// and bells included, to `file` (tmux's `pipe-pane`).
    pub fn record_output(&self, file: &std::path::Path) {
        let command = format!("cat >> '{}'", file.display());
        self.tmux(&["pipe-pane", "-o", "-t", "mc", &command]);
    }

    /// Sends several keys in one `send-keys`: tmux writes them to the terminal
    /// together, as the mouse wheel in alternate-scroll mode sends its arrows.
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "mc"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}
