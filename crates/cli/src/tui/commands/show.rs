//! The text panels: `/help` (the commands and keys), `/status` (model, provider,
//! paths, session, tokens) and `/diff` (every change the session's cards recorded).

use magi_client::fold::{CardView, Item, Transcript};
use magi_protocol::cards::{Block, Card, DiffApplication, DiffLineKind, Subject};
use magi_protocol::messages::{StatusResult, UsageUpdated};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::Command;
use super::model::current;
use super::panel::TextPanel;
use crate::tui::App;

/// The keys `/help` lists, beside the commands.
const KEYS: &[(&str, &str)] = &[
    (
        "Enter",
        "send the prompt (queued while a turn runs), or run the /command",
    ),
    (
        "Alt+Enter/Ctrl-J",
        "a new line in the prompt (Shift+Enter where reported)",
    ),
    (
        "Up / Down",
        "move between lines; at the edges, earlier prompts",
    ),
    ("Ctrl-R", "search earlier prompts"),
    (
        "Ctrl-A/E/U/K/W/Y",
        "line start/end, kill to start/end, kill word, put back",
    ),
    (
        "@ / Tab",
        "complete a workspace path; Tab completes /commands",
    ),
    (
        "PgUp/PgDn",
        "scroll the transcript (Home/End on an empty prompt)",
    ),
    ("Esc", "stop the running turn; close a panel"),
    (
        "y / s / n / d",
        "answer an approval: allow once, for this session, deny, deny with a message",
    ),
    (
        "1 / 2 / 3, Enter",
        "answer an approval by its number, or the highlighted answer (Left/Right move)",
    ),
    (
        "Shift+Tab",
        "switch the approval mode: plan, ask, auto, allow-all (the status line shows it)",
    ),
    ("Ctrl-O", "expand or collapse every tool card and the plan"),
    ("Ctrl-G", "edit the prompt in $VISUAL or $EDITOR"),
    ("Ctrl-Z", "suspend to the shell (fg comes back)"),
    (
        "Ctrl-C",
        "stop the turn, else clear the prompt; twice on an empty prompt quits",
    ),
];

fn heading(text: &str) -> Line<'static> {
    Line::from(Span::styled(
        text.to_owned(),
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    ))
}

/// `/help`: every command of [`Command::ALL`], then the keys.
pub(super) fn help() -> TextPanel {
    let mut lines = vec![heading("Commands")];
    for command in Command::ALL {
        let aliases: String = command
            .aliases()
            .iter()
            .map(|alias| format!(" (or /{alias})"))
            .collect();
        lines.push(Line::from(format!(
            "  /{:<10} {}{aliases}",
            command.name(),
            command.summary()
        )));
    }
    lines.push(Line::default());
    lines.push(heading("Keys"));
    let width = KEYS.iter().map(|(key, _)| key.len()).max().unwrap_or(0);
    for (key, what) in KEYS {
        lines.push(Line::from(format!("  {key:<width$}  {what}")));
    }
    TextPanel::new("Help", lines)
}

/// `/status`: what this Mission Control runs with. Unknown values say unknown.
pub(super) fn status(app: &App, status: Option<&StatusResult>) -> TextPanel {
    let selection = app.selection.as_ref();
    let provider = selection
        .and_then(|s| s.provider.clone())
        .or_else(|| status.and_then(|s| s.provider.clone()));
    let (home, base_url, sandbox) = configuration(provider.as_deref());
    let cwd = std::env::current_dir().map_or_else(|_| unknown(), |p| p.display().to_string());
    let session = match &app.title {
        Some(title) => format!("{} ({title})", app.session_id),
        None => app.session_id.clone(),
    };
    let (tokens, context) = usage(app.usage.as_ref());
    let rows = [
        ("model", current(selection)),
        ("provider", provider.unwrap_or_else(unknown)),
        ("base URL", base_url.unwrap_or_else(unknown)),
        ("directory", cwd),
        ("session", session),
        ("tokens", tokens),
        ("context", context),
        ("MC_HOME", home.unwrap_or_else(unknown)),
        ("sandbox", sandbox.unwrap_or_else(unknown)),
    ];
    let lines = rows
        .into_iter()
        .map(|(name, value)| {
            Line::from(vec![
                Span::styled(format!("  {name:<10} "), Style::default().fg(Color::Cyan)),
                Span::raw(value),
            ])
        })
        .collect();
    TextPanel::new("Status", lines)
}

fn unknown() -> String {
    "unknown".to_owned()
}

/// `MC_HOME` and the provider's base URL (credentials left out), read from the same
/// configuration the backend loaded, in process as `doctor` does.
fn configuration(provider: Option<&str>) -> (Option<String>, Option<String>, Option<String>) {
    let request = magi_core::StartupRequest {
        cwd: std::path::PathBuf::from("."),
        env: magi_config::Env::from_process(),
    };
    let inspection = magi_core::inspect::inspect(&request);
    let home = inspection.home.ok().map(|p| p.display().to_string());
    let base_url = match (provider, &inspection.settings) {
        (Some(name), Ok(settings)) => {
            magi_config::provider_definition(name, settings, &request.env)
                .ok()
                .map(|d| crate::doctor::shown_url(&d.base_url))
        }
        _ => None,
    };
    let sandbox = inspection
        .settings
        .ok()
        .and_then(|settings| crate::doctor::sandbox_in_force(&request, &settings));
    (home, base_url, sandbox)
}

/// The last request's tokens and the context left, from `usage.updated`.
fn usage(usage: Option<&UsageUpdated>) -> (String, String) {
    let Some(u) = usage else {
        let none = "unknown (no model request seen in this session yet)".to_owned();
        return (none.clone(), none);
    };
    let count = |n: Option<u64>| n.map_or_else(unknown, thousands);
    let part = |n: Option<u64>, what: &str| match n {
        Some(n) => format!("{} {what}", thousands(n)),
        None => format!("{what} unknown"),
    };
    let tokens = format!(
        "last request: {} in ({}), {} out ({})",
        count(u.input_tokens),
        part(u.cached_input_tokens, "cached"),
        count(u.output_tokens),
        part(u.reasoning_tokens, "reasoning"),
    );
    let context = match (u.context_used, u.context_window) {
        (Some(used), Some(window)) if window > 0 => {
            let left = window.saturating_sub(used);
            format!(
                "{} of {} used, {} left ({}%)",
                thousands(used),
                thousands(window),
                thousands(left),
                left * 100 / window
            )
        }
        (used, window) => format!("{} used of a window of {}", count(used), count(window)),
    };
    (tokens, context)
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The cards of the transcript's calls, live and saved, in order.
pub(in crate::tui) fn transcript_cards(transcript: &Transcript) -> impl Iterator<Item = &Card> {
    transcript.items().iter().filter_map(|item| match item {
        Item::Activity(a) => match &a.card {
            CardView::Card(card) => Some(card.as_ref()),
            _ => None,
        },
        Item::History(h) => h.card.as_deref(),
        _ => None,
    })
}

/// `/diff`: the diffs of every card in the transcript, live and saved, in order.
pub(super) fn diff(transcript: &Transcript) -> TextPanel {
    let mut lines = Vec::new();
    for card in transcript_cards(transcript) {
        card_diffs(card, &mut lines);
    }
    if lines.is_empty() {
        lines.push(Line::from(
            "no changes recorded in this session's transcript",
        ));
    }
    TextPanel::new("Changes", lines)
}

/// A card's diffs: a heading per file, its lines numbered and coloured.
fn card_diffs(card: &Card, lines: &mut Vec<Line<'static>>) {
    let omitted = card
        .omissions
        .iter()
        .find(|o| o.subject == Subject::DiffLines);
    for block in &card.blocks {
        let Block::Diff(diff) = block else { continue };
        let path = diff
            .new_path
            .as_deref()
            .or(diff.old_path.as_deref())
            .unwrap_or(&card.title);
        let state = match diff.application {
            DiffApplication::Applied => "applied",
            DiffApplication::Proposed => "proposed, not applied",
            DiffApplication::Partial => "partly applied",
            DiffApplication::Unknown => "whether applied is unknown",
        };
        if !lines.is_empty() {
            lines.push(Line::default());
        }
        lines.push(heading(&format!("{path} ({state})")));
        for line in &diff.lines {
            let number = |n: Option<u64>| n.map_or_else(String::new, |n| n.to_string());
            let (prefix, color) = match line.kind {
                DiffLineKind::Added => ("+", Color::Green),
                DiffLineKind::Removed => ("-", Color::Red),
                DiffLineKind::HunkHeader | DiffLineKind::FileHeader => ("", Color::Blue),
                DiffLineKind::NoNewline => ("", Color::DarkGray),
                _ => (" ", Color::Reset),
            };
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{:>5} {:>5} ", number(line.old_line), number(line.new_line)),
                    Style::default().fg(Color::DarkGray),
                ),
                Span::styled(format!("{prefix}{}", line.text), Style::default().fg(color)),
            ]));
        }
    }
    if let Some(omission) = omitted {
        let count = omission
            .omitted_count
            .map_or_else(|| "some".to_owned(), |n| n.to_string());
        lines.push(Line::from(Span::styled(
            format!("  … {count} more diff lines were not kept in the card"),
            Style::default().fg(Color::DarkGray),
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(panel: &TextPanel) -> Vec<String> {
        panel
            .lines()
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn help_lists_every_command() {
        let shown = text(&help());
        for command in Command::ALL {
            let name = format!("/{}", command.name());
            assert!(
                shown
                    .iter()
                    .any(|l| l.trim_start().starts_with(&name) && l.contains(command.summary())),
                "{name}: {shown:?}"
            );
        }
    }

    #[test]
    fn usage_says_tokens_and_context_left_and_unknowns() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
        let mut u = UsageUpdated {
            session_id: "s".into(),
            run_id: "r".into(),
            input_tokens: Some(1200),
            cached_input_tokens: Some(1024),
            output_tokens: Some(80),
            reasoning_tokens: None,
            context_window: Some(32768),
            context_used: Some(1280),
            cache_write_tokens: None,
        };
        assert_eq!(
            usage(Some(&u)),
            (
                "last request: 1,200 in (1,024 cached), 80 out (reasoning unknown)".to_owned(),
                "1,280 of 32,768 used, 31,488 left (96%)".to_owned()
            )
        );
        u.context_used = None;
        assert_eq!(usage(Some(&u)).1, "unknown used of a window of 32,768");
        assert!(usage(None).0.starts_with("unknown"));
    }

    #[test]
    fn an_empty_transcript_has_no_changes() {
        assert_eq!(
            text(&diff(&Transcript::default())),
            ["no changes recorded in this session's transcript"]
        );
    }
}
