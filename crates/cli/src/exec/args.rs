//! `magi-code exec`'s command line and its prompt: from the argument or from stdin,
//! refused before anything is sent when it is empty or over the protocol's bound.

use std::fmt;
use std::io::{IsTerminal, Read};

use clap::builder::NonEmptyStringValueParser;
use magi_protocol::limits::{PROMPT_BYTES, TURN_ATTACHMENT_PATH_BYTES, TURN_ATTACHMENTS};
use magi_protocol::text::{PromptProblem, grouped};

/// Most bytes read from stdin for a prompt. A prompt is at most [`PROMPT_BYTES`]; the
/// rest is read only to say how long the text was, and this bounds that reading.
const STDIN_PROMPT_READ_BYTES: usize = 1024 * 1024;

/// What `magi-code exec --help` says it does.
pub const LONG_ABOUT: &str = "\
Run one turn in this directory through a backend of its own, and print the reply.

Stdout carries the final reply alone, so `$(magi-code exec ...)` captures just that \
(with --json: the protocol's event frames, one JSON object a line). Stderr carries \
progress for a person: `session ID` first, one line per tool call (the tool and its \
main argument, such as the path, or the first line of a command, the outcome, the time \
taken), the text the model wrote between tool calls, and errors. --quiet keeps only errors, diagnostics and denials.

The prompt is the argument; `-`, or no argument with stdin not a terminal, reads it \
from stdin. An empty prompt, or one over 16,384 bytes, is refused before anything is \
sent: put long text in a file in this directory and ask the model to read it.

The approval mode (--mode, else [permissions] mode, else auto) decides which tool \
calls run without asking: auto runs file changes inside this directory and commands \
the sandbox confines. A tool call the permission policy asks about is put to the \
person at the terminal; with no terminal on stdin it is denied (use --mode allow-all, \
or a permission rule).

Ctrl-C (or SIGTERM, SIGHUP) cancels the run: exec waits up to 5 s for it to stop, \
prints the partial reply, which is also saved in the session, and exits 130. A second \
Ctrl-C kills the backend at once.";

/// What `magi-code exec --help` ends with: the exit statuses and examples.
pub const AFTER_HELP: &str = "\
Exit status:
  0    the run completed
  1    the run failed, or no backend could run it (stderr says why)
  2    the command line or the prompt was refused; nothing was sent
  3    the run completed, but the model's output limit cut the reply
  4    the run completed, but the provider refused: the reply is its refusal
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP)

Examples:
  magi-code exec \"What does src/main.rs do?\"
  summary=$(magi-code exec -q \"Summarize README.md in one line\")
  magi-code exec - < task.txt
  magi-code exec --continue \"Now add a test for it\"
  magi-code exec --resume 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b \"And the docs?\"
  magi-code exec --provider anthropic --model claude-sonnet-4-5 \"Review the diff\"
  magi-code exec --json \"List the TODOs\" | jq -c 'select(.event == \"activity\")'

More: docs/exec.md.";

/// What `magi-code exec` is given.
#[derive(clap::Args)]
pub struct ExecArgs {
    /// Print the protocol's event frames on stdout, one JSON object a line, instead of
    /// the reply.
    #[arg(long)]
    pub json: bool,
    /// Print nothing on stderr but errors, diagnostics and denials (no session line, no
    /// tool lines).
    #[arg(short, long)]
    pub quiet: bool,
    /// Run every tool call without asking, for this run only (deny and ask rules in
    /// settings still apply): `--mode allow-all`.
    #[arg(long, conflicts_with = "mode")]
    pub allow_all: bool,
    /// The approval mode for this run, over `[permissions] mode`: `plan` changes no
    /// file, `ask` asks before every change, `auto` runs file changes in this
    /// directory and commands the sandbox confines, `allow-all` runs everything (deny
    /// and ask rules still apply in every mode).
    #[arg(long, value_name = "MODE", value_parser = ["plan", "ask", "auto", "allow-all"])]
    pub mode: Option<String>,
    /// Carry on session ID of this directory (printed as `session ID` by an earlier run)
    /// instead of starting a new one.
    #[arg(long, value_name = "ID", value_parser = NonEmptyStringValueParser::new())]
    pub resume: Option<String>,
    /// Carry on the newest session of this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_newest: bool,
    /// The model for this run, overriding MAGI_MODEL and the settings.
    #[arg(long, value_name = "MODEL", value_parser = NonEmptyStringValueParser::new())]
    pub model: Option<String>,
    /// The provider for this run, overriding MAGI_PROVIDER and the settings; its model
    /// is --model, else MAGI_MODEL, else the one the settings give this provider.
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub provider: Option<String>,
    /// The reasoning effort for this run, where the model takes one (over MAGI_EFFORT
    /// and the settings' default efforts; an effort the session's selection chose still
    /// wins).
    #[arg(long, value_name = "EFFORT", value_parser = ["default", "low", "medium", "high", "xhigh", "max"])]
    pub effort: Option<String>,
    /// An image given with the prompt: a PNG, JPEG, GIF or WebP file inside this
    /// directory. Repeat it for more (at most 8).
    #[arg(long = "image", value_name = "PATH", value_parser = NonEmptyStringValueParser::new())]
    pub images: Vec<String>,
    /// The prompt. `-`, or nothing when stdin is not a terminal, reads it from stdin.
    pub prompt: Option<String>,
}

/// Why a prompt is refused before the backend is started.
#[derive(Debug)]
pub(super) enum PromptError {
    /// No argument and stdin is a terminal.
    Missing,
    /// What `turn.start` would refuse, by the protocol's own rule.
    Refused(PromptProblem),
    /// Stdin held more than [`STDIN_PROMPT_READ_BYTES`].
    StdinTooLong,
    /// Stdin did not hold UTF-8 text.
    NotUtf8,
    /// Stdin could not be read.
    Read(std::io::Error),
}

impl fmt::Display for PromptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PromptError::Missing => write!(
                f,
                "no prompt: give it as an argument, or pipe it in (`-` reads it from stdin)"
            ),
            PromptError::Refused(problem) => problem.fmt(f),
            PromptError::StdinTooLong => write!(
                f,
                "the prompt on stdin is more than {} bytes, over the limit of {} bytes; put \
                 long text in a file in this directory and ask the model to read it",
                grouped(STDIN_PROMPT_READ_BYTES),
                grouped(PROMPT_BYTES),
            ),
            PromptError::NotUtf8 => write!(f, "the prompt on stdin is not UTF-8 text"),
            PromptError::Read(e) => write!(f, "cannot read the prompt from stdin: {e}"),
        }
    }
}

/// Checks the `--image` files as the backend will, so a bad one is told by name and
/// nothing is started: at most [`TURN_ATTACHMENTS`], each an image `view_image` takes
/// inside `cwd`.
pub(super) fn check_images(images: &[String], cwd: &std::path::Path) -> Result<(), String> {
    if images.len() > TURN_ATTACHMENTS {
        return Err(format!(
            "{} images given with --image, over the limit of {TURN_ATTACHMENTS} a turn takes",
            images.len()
        ));
    }
    for image in images {
        if image.len() > TURN_ATTACHMENT_PATH_BYTES || magi_protocol::text::has_control(image) {
            return Err(format!(
                "--image {image:?}: a path of at most {TURN_ATTACHMENT_PATH_BYTES} bytes \
                 without control characters is needed"
            ));
        }
        magi_tools::check_attachment(cwd, image).map_err(|why| format!("--image: {why}"))?;
    }
    Ok(())
}

/// The prompt to send: the argument, or stdin when the argument is `-` or absent with
/// stdin not a terminal; checked against the bounds `turn.start` applies.
pub(super) fn prompt(arg: Option<&str>) -> Result<String, PromptError> {
    let text = match arg {
        Some("-") => read_stdin()?,
        Some(text) => text.to_owned(),
        None if !std::io::stdin().is_terminal() => read_stdin()?,
        None => return Err(PromptError::Missing),
    };
    check(text)
}

fn read_stdin() -> Result<String, PromptError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(STDIN_PROMPT_READ_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(PromptError::Read)?;
    if bytes.len() > STDIN_PROMPT_READ_BYTES {
        return Err(PromptError::StdinTooLong);
    }
    String::from_utf8(bytes).map_err(|_| PromptError::NotUtf8)
}

/// The checks of `turn.start`, by the protocol's rule, made here so the person learns
/// which one failed instead of a bare `invalid_params`.
fn check(text: String) -> Result<String, PromptError> {
    match PromptProblem::of(&text) {
        Some(problem) => Err(PromptError::Refused(problem)),
        None => Ok(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_the_protocol_s() {
        assert!(matches!(
            check(" \n\t".into()),
            Err(PromptError::Refused(PromptProblem::Empty))
        ));
        assert!(check("x".repeat(PROMPT_BYTES)).is_ok());
        let over = check("x".repeat(PROMPT_BYTES + 4_096)).unwrap_err();
        assert_eq!(
            over.to_string(),
            "the prompt is 20,480 bytes, over the limit of 16,384 bytes by 4,096; put long \
             text in a file in this directory and ask the model to read it"
        );
    }
}
