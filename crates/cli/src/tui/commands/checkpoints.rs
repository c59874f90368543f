//! `/undo` and `/rewind` on the backend's checkpoints (`checkpoints`): each shows first
//! what putting the files back would change (`checkpoint.restore` without `apply`),
//! and only `confirm` (or `overwrite`, when files were changed outside the session's
//! turns) puts them back. `/rewind` then forks the conversation before the chosen
//! turn into a new session (`session.fork`) and opens it; the original stays as it
//! was.

use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    Checkpoint, CheckpointAction, CheckpointListParams, CheckpointRestoreParams,
    CheckpointRestoreResult, CheckpointStore, SessionForkParams,
};
use magi_protocol::methods;
use ratatui::crossterm::event::KeyCode;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::{Command, Panel, Request, TextPanel, words};
use crate::tui::App;

/// A restore previewed and waiting for `confirm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::tui) struct Pending {
    /// The session it was previewed in.
    session_id: String,
    /// The checkpoint.
    checkpoint: Checkpoint,
    /// Whether the preview had changes to put back.
    changes: bool,
    /// `/rewind`: fork before the turn and open the fork once the files are back.
    fork: bool,
}

/// What `confirm` and `overwrite` say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Confirm,
    Overwrite,
}

impl App {
    /// `/undo` (preview the last turn's checkpoint), `/undo confirm`, `/undo overwrite`.
    pub(super) async fn undo_command(
        &mut self,
        backend: &mut Backend,
        argument: &str,
    ) -> anyhow::Result<()> {
        match argument.trim() {
            "" => {
                let Some((checkpoints, store)) = self.checkpoints(backend, "/undo").await? else {
                    return Ok(());
                };
                match checkpoints.last() {
                    None => self.status = "nothing to undo: this session has no turns".to_owned(),
                    Some(last) => {
                        self.preview(backend, last.clone(), store, false).await?;
                    }
                }
            }
            "confirm" => self.put_back(backend, Answer::Confirm, false).await?,
            "overwrite" => self.put_back(backend, Answer::Overwrite, false).await?,
            _ => {
                self.status = "/undo shows what undoing the last turn puts back; /undo confirm \
                               then does it"
                    .to_owned()
            }
        }
        Ok(())
    }

    /// `/rewind` (the turns), `/rewind N` (preview going back to before turn N),
    /// `/rewind confirm`, `/rewind overwrite`.
    pub(super) async fn rewind_command(
        &mut self,
        backend: &mut Backend,
        argument: &str,
    ) -> anyhow::Result<()> {
        let argument = argument.trim();
        match argument {
            "confirm" => return self.put_back(backend, Answer::Confirm, true).await,
            "overwrite" => return self.put_back(backend, Answer::Overwrite, true).await,
            _ => {}
        }
        let Some((checkpoints, store)) = self.checkpoints(backend, "/rewind").await? else {
            return Ok(());
        };
        if argument.is_empty() {
            self.panel = Some(Panel::Text(turns_panel(&checkpoints, store)));
            return Ok(());
        }
        let chosen = argument
            .parse::<u64>()
            .ok()
            .and_then(|n| checkpoints.iter().find(|c| c.turn == n));
        match chosen {
            Some(checkpoint) => {
                self.preview(backend, checkpoint.clone(), store, true)
                    .await?
            }
            None => {
                self.status =
                    format!("/rewind {argument}: no such turn in this session; /rewind lists them")
            }
        }
        Ok(())
    }

    /// The session's checkpoints and the store's state, or `None` with the refusal said.
    async fn checkpoints(
        &mut self,
        backend: &mut Backend,
        what: &str,
    ) -> anyhow::Result<Option<(Vec<Checkpoint>, CheckpointStore)>> {
        let params = CheckpointListParams {
            session_id: self.session_id.clone(),
        };
        match backend.call::<methods::CheckpointList>(&params).await? {
            Ok(listed) => Ok(Some((listed.checkpoints, listed.store))),
            Err(code) => {
                self.status = refused(what, code);
                Ok(None)
            }
        }
    }

    /// Shows what restoring `checkpoint` changes and waits for `confirm`.
    async fn preview(
        &mut self,
        backend: &mut Backend,
        checkpoint: Checkpoint,
        store: CheckpointStore,
        fork: bool,
    ) -> anyhow::Result<()> {
        let what = if fork { "/rewind" } else { "/undo" };
        self.pending = None;
        if store == CheckpointStore::Off {
            self.status =
                format!("{what}: checkpoints are off in the settings, so nothing was recorded");
            return Ok(());
        }
        if !checkpoint.available {
            self.status = format!(
                "{what}: the files as they were before turn {} were not recorded{}",
                checkpoint.turn,
                match store {
                    CheckpointStore::GitMissing => " (there is no git program)",
                    CheckpointStore::Unavailable => " (the checkpoint store cannot be used)",
                    CheckpointStore::Off => "",
                    CheckpointStore::Ready => "",
                }
            );
            return Ok(());
        }
        let params = CheckpointRestoreParams {
            session_id: self.session_id.clone(),
            checkpoint_id: checkpoint.checkpoint_id.clone(),
            apply: false,
            overwrite_changed: false,
        };
        let preview = match backend.call::<methods::CheckpointRestore>(&params).await? {
            Ok(preview) => preview,
            Err(code) => {
                self.status = refused(what, code);
                return Ok(());
            }
        };
        let changes = !preview.changes.is_empty() || preview.more > 0;
        if !changes && !fork {
            self.status = format!(
                "nothing to undo: the files are as they were before turn {}",
                checkpoint.turn
            );
            return Ok(());
        }
        let title = if fork {
            format!("Rewind to before turn {}", checkpoint.turn)
        } else {
            format!("Undo turn {}", checkpoint.turn)
        };
        let mut lines = vec![
            Line::from(format!("«{}»", checkpoint.prompt)),
            Line::from(""),
        ];
        lines.extend(change_lines(&preview));
        lines.push(Line::from(""));
        let dim = Style::default().fg(Color::DarkGray);
        let then = if fork {
            format!(
                " and continues in a new session forked before turn {} (this one is kept)",
                checkpoint.turn
            )
        } else {
            String::new()
        };
        let command = if fork { Command::Rewind } else { Command::Undo };
        let (key, answer) = if preview.changed_outside > 0 {
            lines.push(Line::from(Span::styled(
                format!(
                    "{} of these files changed since outside this session's turns: o (or \
                     {what} overwrite) puts everything back, overwriting those changes{then}; \
                     Esc leaves the files as they are",
                    preview.changed_outside
                ),
                Style::default().fg(Color::Yellow),
            )));
            (KeyCode::Char('o'), "overwrite")
        } else {
            lines.push(Line::from(Span::styled(
                format!(
                    "Enter (or {what} confirm) puts these files back{then}; Esc leaves them as \
                     they are"
                ),
                dim,
            )));
            (KeyCode::Enter, "confirm")
        };
        let panel =
            TextPanel::new(title, lines).with_action(key, Request::Run(command, answer.to_owned()));
        self.panel = Some(Panel::Text(panel));
        self.pending = Some(Pending {
            session_id: self.session_id.clone(),
            checkpoint,
            changes,
            fork,
        });
        Ok(())
    }

    /// Puts the previewed files back, then for `/rewind` forks and opens the fork.
    async fn put_back(
        &mut self,
        backend: &mut Backend,
        answer: Answer,
        fork: bool,
    ) -> anyhow::Result<()> {
        let what = if fork { "/rewind" } else { "/undo" };
        let pending = match self.pending.take() {
            Some(p) if p.fork == fork && p.session_id == self.session_id => p,
            other => {
                self.pending = other;
                self.status = format!("{what} first shows what it would put back");
                return Ok(());
            }
        };
        let turn = pending.checkpoint.turn;
        let mut put_back = 0;
        if pending.changes {
            let params = CheckpointRestoreParams {
                session_id: self.session_id.clone(),
                checkpoint_id: pending.checkpoint.checkpoint_id.clone(),
                apply: true,
                overwrite_changed: answer == Answer::Overwrite,
            };
            match backend.call::<methods::CheckpointRestore>(&params).await? {
                Ok(done) => put_back = done.changes.len() as u64 + done.more,
                Err(ErrorCode::CheckpointConflict) => {
                    self.status = format!(
                        "{what}: files changed outside this session's turns would be \
                         overwritten; {what} overwrite puts them back anyway"
                    );
                    self.pending = Some(pending);
                    return Ok(());
                }
                Err(code) => {
                    self.status = refused(what, code);
                    return Ok(());
                }
            }
        }
        self.panel = None;
        if !fork {
            self.status = format!(
                "put back {}: the workspace is as it was before turn {turn}",
                files(put_back)
            );
            return Ok(());
        }
        let params = SessionForkParams {
            session_id: self.session_id.clone(),
            checkpoint_id: pending.checkpoint.checkpoint_id.clone(),
        };
        let forked = match backend.call::<methods::SessionFork>(&params).await? {
            Ok(forked) => forked,
            Err(code) => {
                self.status = format!(
                    "{} ({} put back)",
                    refused("/rewind", code),
                    files(put_back)
                );
                return Ok(());
            }
        };
        let original = self.session_id.clone();
        self.open_session(backend, forked.session_id.clone())
            .await?;
        if self.session_id == forked.session_id {
            self.usage = None;
            self.refresh_selection(backend).await?;
            self.status = format!(
                "rewound to before turn {turn}: {} put back, and this is a new session; the \
                 original ({original}) is kept (/sessions reopens it)",
                files(put_back)
            );
        }
        Ok(())
    }
}

/// `1 file`, `2 files`.
fn files(n: u64) -> String {
    if n == 1 {
        "1 file".to_owned()
    } else {
        format!("{n} files")
    }
}

/// The lines of a preview: each file with what happens to it.
fn change_lines(preview: &CheckpointRestoreResult) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    if preview.changes.is_empty() && preview.more == 0 {
        lines.push(Line::from("no file changes: the files are as they were"));
    }
    for change in &preview.changes {
        let action = match change.action {
            CheckpointAction::Write => "restore ",
            CheckpointAction::Create => "recreate",
            CheckpointAction::Delete => "remove  ",
        };
        let mut spans = vec![
            Span::styled(format!("  {action} "), Style::default().fg(Color::Cyan)),
            Span::raw(change.path.clone()),
        ];
        if change.changed_outside {
            spans.push(Span::styled(
                "  (changed since outside this session's turns)",
                Style::default().fg(Color::Yellow),
            ));
        }
        lines.push(Line::from(spans));
    }
    if preview.more > 0 {
        lines.push(Line::from(format!("  … and {} more files", preview.more)));
    }
    lines
}

/// `/rewind`'s list of the session's turns.
fn turns_panel(checkpoints: &[Checkpoint], store: CheckpointStore) -> TextPanel {
    let dim = Style::default().fg(Color::DarkGray);
    let mut lines: Vec<Line<'static>> = checkpoints
        .iter()
        .map(|c| {
            let mut spans = vec![
                Span::styled(format!("{:>4}  ", c.turn), Style::default().fg(Color::Cyan)),
                Span::raw(c.prompt.clone()),
            ];
            if !c.available {
                spans.push(Span::styled("  (files not recorded)", dim));
            }
            Line::from(spans)
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::from("this session has no turns yet"));
    }
    lines.push(Line::from(""));
    let footer = match store {
        CheckpointStore::Ready => {
            "/rewind N shows what going back to before turn N puts back".to_owned()
        }
        CheckpointStore::GitMissing => {
            "there is no git program: no turn's files were recorded".to_owned()
        }
        CheckpointStore::Unavailable => "the checkpoint store cannot be used".to_owned(),
        CheckpointStore::Off => {
            "checkpoints are off in the settings ([checkpoints] enabled = false)".to_owned()
        }
    };
    lines.push(Line::from(Span::styled(footer, dim)));
    let newest = lines.len().saturating_sub(1);
    TextPanel::new("Turns of this session", lines).scrolled_to(newest)
}

/// A refusal of the checkpoint operations, their own codes said in words.
fn refused(what: &str, code: ErrorCode) -> String {
    let said = match code {
        ErrorCode::CheckpointMissing => "that turn's files are no longer recorded",
        ErrorCode::CheckpointsUnavailable => {
            "the checkpoint store cannot be used (is git installed? is MC_HOME writable?)"
        }
        ErrorCode::CheckpointFailed => {
            "some files could not be put back (is the workspace writable?); the ones that were \
             are recorded"
        }
        _ => return words::refused(what, code),
    };
    format!("{what}: {said} [{}]", code.as_str())
}
