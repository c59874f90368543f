//! Mission Control's slash commands: one list, from which `/help`, Tab completion and
//! the dispatch all derive, and the panels they open over the transcript.
//!
//! Enter on a composer text that is a command attempt (a `/` and one word of letters)
//! runs it instead of sending a prompt; an unknown word is said in the status line and
//! the text stays. The parts: [`panel`] draws a panel and holds the text ones (`/help`,
//! `/status`, `/diff`, written by [`show`]), [`sessions`] is the session picker on
//! `session.discover`, [`model`] the model picker on `model.catalog` and
//! `selection.set`, [`copy`] the OSC 52 clipboard write, [`run`] the requests each
//! command makes, and [`words`] what a refusal means.

mod checkpoints;
mod copy;
mod jobs;
mod model;
mod panel;
mod permissions;
mod run;
mod sessions;
mod show;
mod time;
mod words;

use std::future::Future;
use std::pin::Pin;

use ratatui::crossterm::event::KeyEvent;
use ratatui::text::Line;

pub(super) use checkpoints::Pending;
pub(super) use model::Choice;
pub(super) use panel::{Panel, TextPanel};
pub(super) use run::Done;
pub(super) use show::transcript_cards;
pub(super) use words::refused;

use super::{Action, App};

/// A slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Command {
    /// Lists the commands and keys.
    Help,
    /// Starts a new session.
    New,
    /// Picks a session to reopen.
    Sessions,
    /// Shows or switches the model.
    Model,
    /// Compacts the session now.
    Compact,
    /// Copies the last reply to the clipboard.
    Copy,
    /// Shows the session's changes.
    Diff,
    /// Shows every card of the transcript in full.
    Cards,
    /// Shows the background commands' newest output, or stops one.
    Jobs,
    /// Lists the approval mode and the rules in force, or removes a session rule.
    Permissions,
    /// Puts the files back as they were before the last turn.
    Undo,
    /// Goes back to before an earlier turn in a forked session.
    Rewind,
    /// Shows model, provider, session, tokens and paths.
    Status,
    /// Quits.
    Quit,
}

impl Command {
    /// Every command, in the order `/help` lists them.
    pub(super) const ALL: [Command; 14] = [
        Command::Help,
        Command::New,
        Command::Sessions,
        Command::Model,
        Command::Compact,
        Command::Copy,
        Command::Diff,
        Command::Cards,
        Command::Jobs,
        Command::Permissions,
        Command::Undo,
        Command::Rewind,
        Command::Status,
        Command::Quit,
    ];

    /// The name typed after the slash.
    pub(super) fn name(self) -> &'static str {
        match self {
            Command::Help => "help",
            Command::New => "new",
            Command::Sessions => "sessions",
            Command::Model => "model",
            Command::Compact => "compact",
            Command::Copy => "copy",
            Command::Diff => "diff",
            Command::Cards => "cards",
            Command::Jobs => "jobs",
            Command::Permissions => "permissions",
            Command::Undo => "undo",
            Command::Rewind => "rewind",
            Command::Status => "status",
            Command::Quit => "quit",
        }
    }

    /// Other names it answers to, as other agents name the same command.
    pub(super) fn aliases(self) -> &'static [&'static str] {
        match self {
            Command::New => &["clear"],
            Command::Sessions => &["resume"],
            Command::Quit => &["exit"],
            _ => &[],
        }
    }

    /// The command `word` names, by its name or an alias.
    pub(super) fn named(word: &str) -> Option<Command> {
        Command::ALL
            .into_iter()
            .find(|c| c.name() == word || c.aliases().contains(&word))
    }

    /// Every name typed after the slash, with the command it names: names first, then
    /// aliases.
    pub(super) fn every_name() -> impl Iterator<Item = (&'static str, Command)> {
        let names = Command::ALL.into_iter().map(|c| (c.name(), c));
        let aliases = Command::ALL
            .into_iter()
            .flat_map(|c| c.aliases().iter().map(move |a| (*a, c)));
        names.chain(aliases)
    }

    /// One line saying what it does.
    pub(super) fn summary(self) -> &'static str {
        match self {
            Command::Help => "list the commands and keys",
            Command::New => "start a new session",
            Command::Sessions => "reopen a session of this directory",
            Command::Model => "show or switch the model (or type /model provider/model)",
            Command::Compact => "compact the session's context now",
            Command::Copy => "copy the last reply to the clipboard",
            Command::Diff => "show the session's changes",
            Command::Cards => "every tool call's card in full, newest last",
            Command::Jobs => "background commands' newest output (/jobs stop N stops one)",
            Command::Permissions => {
                "approval mode and rules in force (/permissions remove N removes one)"
            }
            Command::Undo => "put the files back as before the last turn (previewed first)",
            Command::Rewind => "go back to before an earlier turn, in a forked session",
            Command::Status => "model, provider, session, tokens and paths",
            Command::Quit => "quit Mission Control",
        }
    }

    /// The command a mistyped `word` most likely meant: the only one whose name starts
    /// with it, else the nearest by edits (a letter added, dropped, changed or two
    /// swapped), at most one edit away for a word of up to four letters and two for a
    /// longer one. `None` when nothing is that near.
    pub(super) fn nearest(word: &str) -> Option<Command> {
        let word = word.to_ascii_lowercase();
        let mut starting: Vec<Command> = Command::every_name()
            .filter(|(name, _)| name.starts_with(&word))
            .map(|(_, command)| command)
            .collect();
        starting.dedup();
        if let [only] = starting[..] {
            return Some(only);
        }
        let most = if word.chars().count() <= 4 { 1 } else { 2 };
        Command::every_name()
            .map(|(name, command)| (strsim::osa_distance(&word, name), command))
            .filter(|(edits, _)| *edits <= most)
            .min_by_key(|(edits, _)| *edits)
            .map(|(_, command)| command)
    }

    /// Whether it needs the backend's session worker, which a running turn holds.
    fn needs_idle(self) -> bool {
        matches!(
            self,
            Command::New
                | Command::Sessions
                | Command::Model
                | Command::Compact
                | Command::Undo
                | Command::Rewind
        )
    }

    /// The command a composer text names, with the rest of the line as its argument:
    /// `/model openai/gpt-5` is `(Model, "openai/gpt-5")`. `None` when the text is not a
    /// known command.
    #[cfg_attr(not(test), expect(dead_code, reason = "for Tab completion, next"))]
    pub(super) fn parse(text: &str) -> Option<(Command, &str)> {
        match typed(text) {
            Typed::Command(command, argument) => Some((command, argument)),
            Typed::Unknown(_) | Typed::Prompt => None,
        }
    }
}

/// What a composer text is when Enter is pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Typed<'a> {
    /// A known command and its argument.
    Command(Command, &'a str),
    /// A `/` and one word of letters that names no command.
    Unknown(&'a str),
    /// Anything else: a prompt (`/usr/bin/env is missing` among them).
    Prompt,
}

/// Reads a composer text: only a `/` followed by one word of letters (then the end or
/// whitespace) is a command attempt, so a prompt that starts with a path is a prompt.
/// A word of ASCII letters run straight into letters of another script (`/stauts検査`,
/// typed without a space) is an attempt too when those ASCII letters are near a
/// command's name: sending it to the model as a prompt would be the worse mistake.
pub(super) fn typed(text: &str) -> Typed<'_> {
    let Some(rest) = text.trim().strip_prefix('/') else {
        return Typed::Prompt;
    };
    let (word, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let ascii = leading_letters(word);
    let run_on = word[ascii.len()..]
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() && !c.is_ascii());
    if ascii.is_empty() || (ascii.len() < word.len() && !run_on) {
        return Typed::Prompt;
    }
    if run_on {
        return match Command::nearest(ascii) {
            Some(_) => Typed::Unknown(word),
            None => Typed::Prompt,
        };
    }
    match Command::named(word) {
        Some(command) => Typed::Command(command, argument.trim()),
        None => Typed::Unknown(word),
    }
}

/// The ASCII letters `word` begins with.
fn leading_letters(word: &str) -> &str {
    word.find(|c: char| !c.is_ascii_alphabetic())
        .map_or(word, |end| &word[..end])
}

/// What the status line says of `/word`, which names no command: the command it most
/// likely meant, when one is near.
fn unknown_command(word: &str) -> String {
    match Command::nearest(leading_letters(word)) {
        Some(meant) => format!(
            "unknown command /{word} — did you mean /{}? /help lists them",
            meant.name()
        ),
        None => format!("unknown command /{word} — /help lists them"),
    }
}

/// What a key did to a panel.
pub(super) enum Step {
    /// Nothing for the loop to do.
    Stay,
    /// The panel is closed.
    Close,
    /// The loop is to make this request.
    Do(Request),
}

/// What a panel shows: its title, its lines and which part of them is in view.
pub(super) struct View {
    pub(super) title: String,
    pub(super) lines: Vec<Line<'static>>,
    pub(super) anchor: Anchor,
}

/// Which lines of a view are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    /// From this line on (a text scrolled this far).
    Scroll(usize),
    /// Around this line (a picker's selection).
    Focus(usize),
}

/// Whether Enter on this composer text runs a command (or says it is unknown) rather
/// than sending a prompt.
pub(super) fn is_command(text: &str) -> bool {
    typed(text) != Typed::Prompt
}

/// What the loop is asked to do for a command or a panel.
pub(super) enum Request {
    /// Runs a typed command with its argument.
    Run(Command, String),
    /// Reopens a session (from the picker), with its title when it has one.
    Open {
        session_id: String,
        title: Option<String>,
    },
    /// Switches the model.
    Select(model::Choice),
    /// Enables a fetched model in the global settings (and, with `default`, makes it
    /// the default selection), then switches to it in a fresh backend.
    Enable {
        provider: String,
        model: String,
        default: bool,
    },
    /// Fetches these providers' model lists, then shows the catalog again.
    Refresh(Vec<String>),
}

/// A request left in flight while the person goes on (compaction and model refresh
/// can take as long as a model request).
pub(super) struct Op {
    future: Pin<Box<dyn Future<Output = Done>>>,
}

/// Waits for the operation in flight to end, then clears it. Cancel-safe: dropped
/// before the end, the operation stays in `op` and goes on at the next call.
pub(super) async fn finished(op: &mut Option<Op>) -> run::Done {
    let done = match op {
        Some(op) => op.future.as_mut().await,
        None => std::future::pending().await,
    };
    *op = None;
    done
}

impl App {
    /// On Enter, for a composer text that is a command attempt ([`is_command`]): the
    /// command's action. An unknown command is said and its text stays in the composer.
    pub(super) fn enter_command(&mut self) -> Action {
        match typed(self.composer.text()) {
            Typed::Prompt => Action::Nothing,
            Typed::Unknown(word) => {
                self.status = unknown_command(word);
                Action::Nothing
            }
            Typed::Command(Command::Quit, _) => Action::Quit,
            Typed::Command(command, _) if command.needs_idle() && self.transcript.run_active() => {
                self.status = format!(
                    "/{} waits for the turn to end (Esc stops it)",
                    command.name()
                );
                Action::Nothing
            }
            Typed::Command(command, argument) => {
                // A command that runs makes the last notice old news, as a prompt does.
                self.status.clear();
                let argument = argument.to_owned();
                // The command goes into the prompt history as a prompt does.
                if self.composer.submit().is_err() {
                    self.composer.clear();
                }
                Action::Commands(Request::Run(command, argument))
            }
        }
    }

    /// A key while a panel is open.
    pub(super) fn panel_key(&mut self, key: KeyEvent) -> Action {
        let Some(panel) = &mut self.panel else {
            return Action::Nothing;
        };
        match panel.key(key) {
            Step::Stay => Action::Nothing,
            Step::Close => {
                self.panel = None;
                Action::Nothing
            }
            Step::Do(request) => {
                // A session is opened from the picker; the model picker stays until
                // the switch is answered.
                if matches!(request, Request::Open { .. }) {
                    self.panel = None;
                }
                Action::Commands(request)
            }
        }
    }

    /// The hint shown while a panel is open.
    pub(super) fn panel_hint(&self) -> Option<&'static str> {
        self.panel.as_ref().map(Panel::hint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_parsed_with_its_argument_and_anything_else_is_a_prompt() {
        assert_eq!(Command::parse("/help"), Some((Command::Help, "")));
        assert_eq!(
            Command::parse(" /model  openai/gpt-5 "),
            Some((Command::Model, "openai/gpt-5"))
        );
        assert_eq!(Command::parse("/nope"), None);
        assert_eq!(Command::parse("help"), None);
        for command in Command::ALL {
            assert_eq!(
                Command::parse(&format!("/{}", command.name())),
                Some((command, ""))
            );
        }
    }

    #[test]
    fn only_a_slash_and_one_word_of_letters_is_a_command_attempt() {
        assert_eq!(typed("/nope"), Typed::Unknown("nope"));
        assert_eq!(typed("/nope with words"), Typed::Unknown("nope"));
        assert_eq!(typed("/usr/bin/env is missing"), Typed::Prompt);
        assert_eq!(typed("/tmp2 is full"), Typed::Prompt);
        assert_eq!(typed("/"), Typed::Prompt);
        assert_eq!(typed("/ help"), Typed::Prompt);
        assert_eq!(typed("why does /help fail"), Typed::Prompt);
        assert_eq!(typed("/diff\n"), Typed::Command(Command::Diff, ""));
        assert_eq!(
            typed("/model\topenai-chat/qwen"),
            Typed::Command(Command::Model, "openai-chat/qwen")
        );
    }

    #[test]
    fn a_letter_word_run_into_another_script_is_an_attempt_when_near_a_command() {
        assert_eq!(typed("/stauts検査して"), Typed::Unknown("stauts検査して"));
        assert_eq!(typed("/status確認 please"), Typed::Unknown("status確認"));
        // Far from every command: a prompt, as a path would be.
        assert_eq!(typed("/usr日本 is a folder"), Typed::Prompt);
        assert_eq!(typed("/tmp2 is full"), Typed::Prompt);
        assert_eq!(typed("/検査"), Typed::Prompt);
    }

    #[test]
    fn a_mistyped_command_is_matched_to_the_one_it_most_likely_meant() {
        assert_eq!(Command::nearest("stauts"), Some(Command::Status));
        assert_eq!(Command::nearest("modle"), Some(Command::Model));
        assert_eq!(Command::nearest("nwe"), Some(Command::New));
        assert_eq!(Command::nearest("sta"), Some(Command::Status));
        assert_eq!(Command::nearest("Help"), Some(Command::Help));
        assert_eq!(Command::nearest("sessons"), Some(Command::Sessions));
        // Two commands start with it and neither is one edit away.
        assert_eq!(Command::nearest("co"), None);
        assert_eq!(Command::nearest("nope"), None);
        assert_eq!(Command::nearest("exti"), Some(Command::Quit));
        assert_eq!(Command::nearest("resum"), Some(Command::Sessions));
        assert_eq!(Command::nearest("xyzzy"), None);
        assert_eq!(
            unknown_command("stauts"),
            "unknown command /stauts — did you mean /status? /help lists them"
        );
        assert_eq!(
            unknown_command("nope"),
            "unknown command /nope — /help lists them"
        );
        assert_eq!(
            unknown_command("stauts検査"),
            "unknown command /stauts検査 — did you mean /status? /help lists them"
        );
    }

    #[test]
    fn the_usual_other_names_run_their_commands() {
        assert_eq!(typed("/clear"), Typed::Command(Command::New, ""));
        assert_eq!(typed("/resume"), Typed::Command(Command::Sessions, ""));
        assert_eq!(typed("/exit"), Typed::Command(Command::Quit, ""));
    }

    #[test]
    fn every_command_has_a_distinct_name_and_a_summary() {
        let mut names: Vec<&str> = Command::every_name().map(|(name, _)| name).collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
        assert!(Command::ALL.iter().all(|c| !c.summary().is_empty()));
    }
}
