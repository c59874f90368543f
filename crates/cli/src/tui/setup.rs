//! The first-run screen: when the backend refuses to start because of the
//! configuration (no usable provider, a broken settings file), Mission Control says
//! what is wrong, how to set a provider up and what `magi-code doctor` finds, instead
//! of exiting; `r` starts a fresh backend (which reads the settings files again), `q`
//! quits.

use magi_protocol::{ErrorCode, StartupError};
use ratatui::crossterm::event::{KeyCode, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::input::{Inputs, TermInput};
use super::terminal::Screen;

/// How to set each kind of provider up: one shell command a line, each short enough
/// never to wrap at 80 columns (a wrapped line copied from the screen would break the
/// command in two) and free of characters a shell reads as syntax (`<model>` would be
/// a redirection).
pub(super) const GUIDE: &[(&str, &[&str])] = &[
    (
        "OpenAI:",
        &[
            "export MAGI_PROVIDER=openai",
            "export OPENAI_API_KEY=YOUR_KEY",
            "export MAGI_MODEL=YOUR_MODEL",
        ],
    ),
    (
        "Anthropic:",
        &[
            "export MAGI_PROVIDER=anthropic",
            "export ANTHROPIC_API_KEY=YOUR_KEY",
            "export MAGI_MODEL=YOUR_MODEL",
        ],
    ),
    (
        "A local server (llama.cpp, vLLM, Ollama, LM Studio: OpenAI-compatible):",
        &[
            "export MAGI_PROVIDER=openai-chat",
            "export OPENAI_BASE_URL=http://127.0.0.1:8080/v1",
            "export MAGI_MODEL=YOUR_MODEL",
        ],
    ),
];

/// What the person chose on the first-run screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SetupChoice {
    /// Try to start the backend again.
    Retry,
    /// Leave.
    Quit,
}

/// Whether a refused `initialize` is something the person sets right in the
/// configuration (and so gets the first-run screen rather than an exit).
pub(super) fn is_setup_problem(code: ErrorCode) -> bool {
    [
        StartupError::ProviderUnavailable,
        StartupError::ConfigurationInvalid,
        StartupError::ProfileInvalid,
        StartupError::McpUnavailable,
    ]
    .iter()
    .any(|startup| startup.code() == code)
}

/// Shows the screen for the refusal `code` until the person retries or quits.
pub(super) async fn guide(
    terminal: &mut Screen,
    inputs: &mut Inputs,
    code: ErrorCode,
) -> anyhow::Result<SetupChoice> {
    let problem = crate::explain::initialize_failed(code, &[]).to_string();
    let doctor = crate::doctor::report().await;
    let lines = screen_lines(code, &problem, &doctor);
    let keys = Line::from(Span::styled(
        " r try again · q quit · Up/Down/PageUp/PageDown scroll ",
        Style::default().add_modifier(Modifier::REVERSED),
    ));
    // Lines scrolled past; a short terminal shows the report a part at a time.
    let mut top: u16 = 0;
    loop {
        terminal.draw(|frame| {
            let [body, footer] =
                Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
            frame.render_widget(
                Paragraph::new(lines.clone())
                    .wrap(Wrap { trim: false })
                    .scroll((top, 0)),
                body,
            );
            frame.render_widget(Paragraph::new(keys.clone()), footer);
        })?;
        let Some((_, input)) = inputs.recv().await else {
            return Ok(SetupChoice::Quit);
        };
        let page = terminal
            .size()
            .map_or(10, |size| size.height.saturating_sub(2));
        let key = match input {
            TermInput::Key(key) => key,
            TermInput::Scroll(lines) => {
                top = scrolled(top, lines);
                continue;
            }
            TermInput::Paste(_) | TermInput::Resize | TermInput::Focus(_) => continue,
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('r') if !ctrl => return Ok(SetupChoice::Retry),
            KeyCode::Char('q') | KeyCode::Esc => return Ok(SetupChoice::Quit),
            KeyCode::Char('c' | 'd') if ctrl => return Ok(SetupChoice::Quit),
            KeyCode::Up => top = scrolled(top, -1),
            KeyCode::Down => top = scrolled(top, 1),
            KeyCode::PageUp => top = scrolled(top, -i32::from(page)),
            KeyCode::PageDown => top = scrolled(top, i32::from(page)),
            _ => {}
        }
    }
}

/// The first line shown after scrolling `top` by `lines`, within the text.
fn scrolled(top: u16, lines: i32) -> u16 {
    let moved = (i32::from(top) + lines).clamp(0, i32::from(u16::MAX));
    u16::try_from(moved).unwrap_or(0)
}

/// The screen's text: the problem, the ways to set a provider up (when the provider is
/// what is missing), the doctor's report and the keys.
fn screen_lines(code: ErrorCode, problem: &str, doctor: &str) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = vec![
        Line::from(Span::styled("magi-code cannot start yet", bold)),
        Line::default(),
        Line::from(Span::styled(
            problem.to_owned(),
            Style::default().fg(Color::Red),
        )),
        Line::default(),
    ];
    if code == StartupError::ProviderUnavailable.code() {
        lines.push(Line::from(Span::styled(
            "Set up a model provider: paste the lines of one into a shell, with your key",
            bold,
        )));
        lines.push(Line::from(
            "and model in place of YOUR_KEY and YOUR_MODEL, then start magi-code there:",
        ));
        for (who, commands) in GUIDE {
            lines.push(Line::from(format!("  {who}")));
            for command in *commands {
                lines.push(Line::from(Span::styled(
                    format!("    {command}"),
                    Style::default().fg(Color::Cyan),
                )));
            }
        }
        lines.push(Line::from(
            "  or write them in $MC_HOME/settings.toml (see docs/configuration.md)",
        ));
        lines.push(Line::default());
    }
    lines.push(Line::from(
        "Settings files are read again when you press r; environment variables take \
         effect when magi-code is started again from a shell that has them.",
    ));
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        "What `magi-code doctor` says:",
        bold,
    )));
    lines.extend(doctor.lines().map(|line| Line::from(format!("  {line}"))));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> String {
        lines
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect::<Vec<String>>()
            .join("\n")
    }

    #[test]
    fn a_missing_provider_gets_the_ways_to_set_one_up_and_a_broken_file_does_not() {
        let missing = StartupError::ProviderUnavailable.code();
        let shown = text(&screen_lines(missing, "no key", "checks\n  error x"));
        assert!(shown.contains("OPENAI_API_KEY"), "{shown}");
        assert!(shown.contains("MAGI_PROVIDER=anthropic"), "{shown}");
        assert!(
            shown.contains("    export MAGI_PROVIDER=openai\n"),
            "{shown}"
        );
        // Every command fits 80 columns with its indent, and holds no shell syntax.
        for (_, commands) in GUIDE {
            for command in *commands {
                assert!(command.len() + 4 <= 80, "{command}");
                assert!(
                    !command.contains(['<', '>', '|', '&', ';', '…']),
                    "{command}"
                );
            }
        }
        assert!(shown.contains("    error x"), "{shown}");
        assert!(shown.ends_with("    error x"), "{shown}");
        assert_eq!(scrolled(0, -3), 0);
        assert_eq!(scrolled(2, 5), 7);
        let invalid = StartupError::ConfigurationInvalid.code();
        let shown = text(&screen_lines(invalid, "bad file", ""));
        assert!(!shown.contains("OPENAI_API_KEY"), "{shown}");
        assert!(shown.contains("bad file"), "{shown}");
        assert!(is_setup_problem(missing) && is_setup_problem(invalid));
        assert!(!is_setup_problem(StartupError::StartupFailed.code()));
    }
}
