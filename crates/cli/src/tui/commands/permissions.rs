//! The approval mode and the rules in force (`permissions.modes`): Shift+Tab switches
//! to the next mode, the status line shows it, `/permissions` lists the rules (the
//! settings' and this session's) and `/permissions remove N` revokes session rule N.
//! None of it waits for the turn: a mode switched while a turn runs applies to the
//! next call that asks.

use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ApprovalMode, PermissionModeSetParams, PermissionRuleRevokeParams, PermissionsListParams,
    PermissionsListResult, RuleEffectName, RuleSource,
};
use magi_protocol::methods;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::{Panel, TextPanel, words};
use crate::tui::App;

/// What a mode does, in one line for the status line and the panel.
pub(in crate::tui) fn mode_words(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Plan => "plan: no file changes, commands confined read-only",
        ApprovalMode::Ask => "ask: every change, command and web call asks first",
        ApprovalMode::Auto => {
            "auto: edits in this directory and sandboxed commands run without asking"
        }
        ApprovalMode::AllowAll => "allow-all: everything runs without asking (rules still hold)",
    }
}

/// The mode after `mode`, in the order the modes cycle (least to most autonomy).
fn next(mode: ApprovalMode) -> ApprovalMode {
    let at = ApprovalMode::ALL
        .iter()
        .position(|m| *m == mode)
        .unwrap_or(0);
    ApprovalMode::ALL[(at + 1) % ApprovalMode::ALL.len()]
}

impl App {
    /// After an attachment (a session opened, created, or a fresh backend): the mode
    /// the person chose goes on in it; until they chose one, the backend's is shown.
    pub(in crate::tui) async fn sync_mode(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        match self.mode {
            Some(mode) => {
                let params = PermissionModeSetParams {
                    session_id: self.session_id.clone(),
                    mode,
                };
                if let Err(code) = backend.call::<methods::PermissionModeSet>(&params).await? {
                    self.status = words::refused("the approval mode", code);
                }
            }
            None => {
                if let Ok(listed) = self.list_permissions(backend).await? {
                    self.mode = Some(listed.mode);
                }
            }
        }
        Ok(())
    }

    /// Shift+Tab: the next mode, for the session, at once.
    pub(in crate::tui) async fn cycle_mode(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        let current = match self.mode {
            Some(mode) => mode,
            None => match self.list_permissions(backend).await? {
                Ok(listed) => listed.mode,
                Err(code) => {
                    self.status = words::refused("the approval mode", code);
                    return Ok(());
                }
            },
        };
        let params = PermissionModeSetParams {
            session_id: self.session_id.clone(),
            mode: next(current),
        };
        match backend.call::<methods::PermissionModeSet>(&params).await? {
            Ok(set) => {
                self.mode = Some(set.mode);
                self.status = if self.transcript.run_active() {
                    format!("{} · from the next call that asks", mode_words(set.mode))
                } else {
                    mode_words(set.mode).to_owned()
                };
            }
            Err(code) => self.status = words::refused("the approval mode", code),
        }
        Ok(())
    }

    async fn list_permissions(
        &mut self,
        backend: &mut Backend,
    ) -> anyhow::Result<Result<PermissionsListResult, ErrorCode>> {
        let params = PermissionsListParams {
            session_id: self.session_id.clone(),
        };
        Ok(backend.call::<methods::PermissionsList>(&params).await?)
    }

    /// `/permissions` with `argument`: the panel, or a session rule removed.
    pub(super) async fn permissions_command(
        &mut self,
        backend: &mut Backend,
        argument: &str,
    ) -> anyhow::Result<()> {
        let listed = match self.list_permissions(backend).await? {
            Ok(listed) => listed,
            Err(code) => {
                self.status = words::refused("/permissions", code);
                return Ok(());
            }
        };
        self.mode = Some(listed.mode);
        let session_rules: Vec<&str> = listed
            .rules
            .iter()
            .filter(|r| r.source == RuleSource::Session)
            .map(|r| r.rule.as_str())
            .collect();
        match argument.split_whitespace().collect::<Vec<_>>()[..] {
            [] => self.panel = Some(Panel::Text(permissions_panel(&listed))),
            ["remove", n] => {
                let chosen = n
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|i| session_rules.get(i));
                let Some(rule) = chosen else {
                    self.status = format!(
                        "no session rule {n}: /permissions lists them ({} now)",
                        session_rules.len()
                    );
                    return Ok(());
                };
                let params = PermissionRuleRevokeParams {
                    session_id: self.session_id.clone(),
                    rule: (*rule).to_owned(),
                };
                self.status = match backend
                    .call::<methods::PermissionRuleRevoke>(&params)
                    .await?
                {
                    Ok(_) => format!("removed {rule}: such calls ask again"),
                    Err(code) => words::refused("/permissions remove", code),
                };
            }
            _ => {
                self.status =
                    "/permissions lists the rules; /permissions remove N removes session rule N"
                        .to_owned();
            }
        }
        Ok(())
    }
}

/// The panel: the mode, then the session's rules numbered, then the settings' and Code
/// Mode's.
fn permissions_panel(listed: &PermissionsListResult) -> TextPanel {
    let dim = Style::default().fg(Color::DarkGray);
    let heading = |text: &str| {
        Line::from(Span::styled(
            text.to_owned(),
            Style::default().fg(Color::Cyan),
        ))
    };
    let effect = |e: RuleEffectName| match e {
        RuleEffectName::Allow => "allow",
        RuleEffectName::Ask => "ask  ",
        RuleEffectName::Deny => "deny ",
    };
    let mut lines = vec![
        heading("Approval mode"),
        Line::from(format!("  {}", mode_words(listed.mode))),
        Line::from(Span::styled(
            format!(
                "  Shift+Tab switches (plan · ask · auto · allow-all); the settings start in {}",
                listed.default_mode.as_str()
            ),
            dim,
        )),
    ];
    if let Some(mode) = listed.code_mode_mode {
        lines.push(Line::from(Span::styled(
            format!("  Code Mode scripts' calls: {}", mode.as_str()),
            dim,
        )));
    }
    let sections = [
        (
            RuleSource::Session,
            "This session's rules (your answers \"for this session\")",
        ),
        (RuleSource::Settings, "Settings rules ([permissions])"),
        (
            RuleSource::CodeMode,
            "Code Mode rules ([permissions.code_mode])",
        ),
    ];
    for (source, title) in sections {
        lines.push(Line::from(""));
        lines.push(heading(title));
        let rules: Vec<_> = listed.rules.iter().filter(|r| r.source == source).collect();
        if rules.is_empty() {
            lines.push(Line::from(Span::styled("  none", dim)));
        }
        for (index, rule) in rules.iter().enumerate() {
            let number = if source == RuleSource::Session {
                format!("{}. ", index + 1)
            } else {
                String::new()
            };
            lines.push(Line::from(format!(
                "  {number}{} {}",
                effect(rule.effect),
                rule.rule
            )));
        }
    }
    if listed.omitted > 0 {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!("  {} more rules not shown", listed.omitted),
            dim,
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "/permissions remove N removes session rule N · deny and ask rules hold in every mode",
        dim,
    )));
    TextPanel::new("Permissions", lines)
}
