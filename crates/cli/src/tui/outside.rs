//! Times the terminal belongs to someone else: the prompt edited in `$EDITOR`
//! (Ctrl-G) and Mission Control suspended (Ctrl-Z).
//!
//! While the editor runs, the input reader is paused (so no key meant for the editor
//! is read here) and nothing is drawn, but the loop goes on reading the backend: a
//! running turn's events are folded as they come, so its output never waits on the
//! person's editing.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitStatus;

use super::App;
use super::input::Inputs;
use super::terminal::{self, Screen};

/// Most bytes of the edited prompt read back: four times the prompt bound, so an edit
/// that went over it is still shown (and refused when sent), never cut silently.
const EDITED_BYTES: u64 = 4 * magi_protocol::limits::PROMPT_BYTES as u64;

/// The editor editing the prompt.
pub(super) struct Editing {
    child: tokio::process::Child,
    /// The file it edits, removed when this is dropped.
    file: tempfile::NamedTempFile,
    /// The command, for what is said if it fails.
    program: String,
}

impl Editing {
    /// Waits for the editor to exit. Cancel-safe.
    pub(super) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }
}

/// The editor the person asked for: `$VISUAL`, then `$EDITOR` (with its arguments,
/// split as a shell would), else `vi`.
fn editor_command() -> Vec<String> {
    for variable in ["VISUAL", "EDITOR"] {
        if let Ok(value) = std::env::var(variable)
            && let Some(words) = shlex::split(&value).filter(|w| !w.is_empty())
        {
            return words;
        }
    }
    vec!["vi".to_owned()]
}

impl App {
    /// Ctrl-G: the prompt goes to `$EDITOR` in a file; the terminal is handed over
    /// until the editor exits ([`App::edited`]).
    pub(super) fn start_editor(&mut self, terminal: &mut Screen, inputs: &mut Inputs) {
        let text = self.composer.expanded();
        let file = tempfile::Builder::new()
            .prefix("magi-prompt-")
            .suffix(".md")
            .tempfile()
            .and_then(|mut file| {
                std::io::Write::write_all(&mut file, text.as_bytes())?;
                Ok(file)
            });
        let file = match file {
            Ok(file) => file,
            Err(e) => {
                self.status = format!("cannot make a file for the editor: {e}");
                return;
            }
        };
        let words = editor_command();
        let program = words.join(" ");
        inputs.pause();
        terminal::release(terminal);
        let spawned = tokio::process::Command::new(&words[0])
            .args(&words[1..])
            .arg(file.path())
            .kill_on_drop(true)
            .spawn();
        match spawned {
            Ok(child) => {
                self.editing = Some(Editing {
                    child,
                    file,
                    program,
                });
            }
            Err(e) => {
                self.status = format!("cannot start the editor {program}: {e}");
                let _ = terminal::reclaim(terminal);
                inputs.resume();
            }
        }
    }

    /// The editor exited: the terminal comes back, and the file's text becomes the
    /// prompt (unless the editor failed, when the prompt stays as it was).
    pub(super) fn edited(
        &mut self,
        terminal: &mut Screen,
        inputs: &Inputs,
        status: std::io::Result<ExitStatus>,
    ) -> anyhow::Result<()> {
        let Some(editing) = self.editing.take() else {
            return Ok(());
        };
        terminal::reclaim(terminal)?;
        inputs.resume();
        match status {
            Ok(status) if status.success() => match read_back(editing.file.path()) {
                Ok(text) => {
                    // An editor leaves a final newline the prompt has no use for.
                    let text = text.strip_suffix('\n').unwrap_or(&text).to_owned();
                    self.composer.set_text(text);
                    self.status = "prompt edited; Enter sends it".to_owned();
                }
                Err(e) => self.status = format!("cannot read the edited prompt back: {e}"),
            },
            Ok(status) => {
                self.status = format!(
                    "the editor {} ended with {status}; the prompt is as it was",
                    editing.program
                );
            }
            Err(e) => self.status = format!("the editor {}: {e}", editing.program),
        }
        Ok(())
    }

    /// Ctrl-Z: the terminal goes back to the shell until it continues this process.
    pub(super) fn suspend(
        &mut self,
        terminal: &mut Screen,
        inputs: &mut Inputs,
    ) -> anyhow::Result<()> {
        inputs.pause();
        let suspended = terminal::suspend(terminal);
        inputs.resume();
        suspended
    }
}

/// The edited file's text, read no further than [`EDITED_BYTES`].
fn read_back(path: &std::path::Path) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(PathBuf::from(path))?
        .take(EDITED_BYTES)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
