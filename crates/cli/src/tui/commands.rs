//! Mission Control's slash commands: one list, from which `/help`, Tab completion and
//! the dispatch all derive.

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
    /// Shows model, provider, session, tokens and paths.
    Status,
    /// Quits.
    Quit,
}

impl Command {
    /// Every command, in the order `/help` lists them.
    pub(super) const ALL: [Command; 9] = [
        Command::Help,
        Command::New,
        Command::Sessions,
        Command::Model,
        Command::Compact,
        Command::Copy,
        Command::Diff,
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
            Command::Status => "status",
            Command::Quit => "quit",
        }
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
            Command::Status => "model, provider, session, tokens and paths",
            Command::Quit => "quit Mission Control",
        }
    }

    /// The command a composer text names, with the rest of the line as its argument:
    /// `/model openai/gpt-5` is `(Model, "openai/gpt-5")`. `None` when the text is not a
    /// known command (it is then an ordinary prompt).
    pub(super) fn parse(text: &str) -> Option<(Command, &str)> {
        let rest = text.trim().strip_prefix('/')?;
        let (name, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        Command::ALL
            .into_iter()
            .find(|command| command.name() == name)
            .map(|command| (command, argument.trim()))
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
}
