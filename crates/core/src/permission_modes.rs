//! `permissions.modes` on the backend's side: the session's approval mode and rules
//! as the extension shows and changes them. The state itself is the run's
//! [`RuleBook`], shared with the connection; this module lists it, and records a
//! change made between turns on the session worker (a change during a run is recorded
//! by the run's journal, `runner::calls::rules`).

pub use magi_config::PermissionSettings;
use magi_config::{PermissionMode, Rule};
use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    PERMISSION_RULE_BYTES, PERMISSION_RULES_LISTED, PERMISSIONS_LIST_BYTES,
};
use magi_protocol::messages::{
    ApprovalMode, PermissionModeSetResult, PermissionRuleRevokeResult, PermissionsListResult,
    ResultBody, RuleEffectName, RuleInForce, RuleSource,
};

use crate::Sessions;
use crate::runner::RuleBook;

/// The wire's name of a mode.
pub fn wire_mode(mode: PermissionMode) -> ApprovalMode {
    match mode {
        PermissionMode::Plan => ApprovalMode::Plan,
        PermissionMode::Ask => ApprovalMode::Ask,
        PermissionMode::Auto => ApprovalMode::Auto,
        PermissionMode::AllowAll => ApprovalMode::AllowAll,
    }
}

/// The mode a wire name stands for.
pub fn settings_mode(mode: ApprovalMode) -> PermissionMode {
    match mode {
        ApprovalMode::Plan => PermissionMode::Plan,
        ApprovalMode::Ask => PermissionMode::Ask,
        ApprovalMode::Auto => PermissionMode::Auto,
        ApprovalMode::AllowAll => PermissionMode::AllowAll,
    }
}

/// A change a client asks for between turns, made on the session worker.
#[derive(Debug, Clone)]
pub enum PermissionChange {
    /// `permissions.list`: nothing changes; the rules are read from the log.
    List,
    /// `permissions.mode.set`.
    SetMode(PermissionMode),
    /// `permissions.rule.revoke`.
    Revoke(String),
}

/// Makes `change` to the attached session between turns: records still waiting are
/// appended first, the session's rules are read from its log, then the change is made
/// and its record appended and synced before the answer. A lazy session (nothing
/// appended yet) keeps the records waiting until its first turn makes it durable.
pub fn change_between_turns(
    sessions: &mut Sessions,
    book: &RuleBook,
    settings: &PermissionSettings,
    session_id: &str,
    change: PermissionChange,
) -> Result<ResultBody, ErrorCode> {
    sessions.check_attached(session_id)?;
    book.attached(Some(session_id));
    flush(sessions, book)?;
    book.load(&sessions.records()?);
    let result = match change {
        PermissionChange::List => ResultBody::PermissionsList(list(settings, book, session_id)),
        PermissionChange::SetMode(mode) => {
            let previous = book.set_mode(mode, None);
            ResultBody::PermissionModeSet(PermissionModeSetResult {
                mode: wire_mode(mode),
                previous: wire_mode(previous),
            })
        }
        PermissionChange::Revoke(rule) => {
            if !book.revoke(&rule, None) {
                return Err(ErrorCode::InvalidParams);
            }
            ResultBody::PermissionRuleRevoke(PermissionRuleRevokeResult { revoked: true })
        }
    };
    flush(sessions, book)?;
    Ok(result)
}

/// Appends the book's waiting records to a durable session's log.
fn flush(sessions: &mut Sessions, book: &RuleBook) -> Result<(), ErrorCode> {
    if !sessions.is_durable() {
        return Ok(());
    }
    let records = book.take_unrecorded();
    if records.is_empty() {
        return Ok(());
    }
    // Not part of history: the revision a client was given stays current.
    sessions
        .append_beside_history(records)
        .map_err(|_| ErrorCode::PersistenceFailed)
}

/// The session's mode and the rules in force: the session's, then the settings',
/// then Code Mode's, within the listing's bounds.
pub fn list(
    settings: &PermissionSettings,
    book: &RuleBook,
    session_id: &str,
) -> PermissionsListResult {
    let (session_allow, session_deny) = book.rules();
    let texts = |rules: &[Rule]| {
        rules
            .iter()
            .map(|r| r.text().to_owned())
            .collect::<Vec<_>>()
    };
    let code = &settings.code_mode;
    let sources: [(RuleSource, RuleEffectName, Vec<String>); 8] = [
        (RuleSource::Session, RuleEffectName::Deny, session_deny),
        (RuleSource::Session, RuleEffectName::Allow, session_allow),
        (
            RuleSource::Settings,
            RuleEffectName::Deny,
            texts(&settings.deny),
        ),
        (
            RuleSource::Settings,
            RuleEffectName::Ask,
            texts(&settings.ask),
        ),
        (
            RuleSource::Settings,
            RuleEffectName::Allow,
            texts(&settings.allow),
        ),
        (
            RuleSource::CodeMode,
            RuleEffectName::Deny,
            texts(&code.deny),
        ),
        (RuleSource::CodeMode, RuleEffectName::Ask, texts(&code.ask)),
        (
            RuleSource::CodeMode,
            RuleEffectName::Allow,
            texts(&code.allow),
        ),
    ];
    let mut result = PermissionsListResult {
        session_id: session_id.to_owned(),
        mode: wire_mode(book.mode()),
        default_mode: wire_mode(book.default_mode()),
        code_mode_mode: code.mode.map(wire_mode),
        rules: Vec::new(),
        omitted: 0,
    };
    let mut bytes = serde_json::to_vec(&result).map_or(0, |v| v.len());
    for (source, effect, rules) in sources {
        for rule in rules {
            let safe = rule.len() <= PERMISSION_RULE_BYTES
                && !magi_protocol::text::has_control(&rule)
                && magi_protocol::text::redact_secrets(&rule) == rule;
            let entry = RuleInForce {
                source,
                effect,
                rule,
            };
            // The entry, its comma, and room for the omitted count growing.
            let size = serde_json::to_vec(&entry).map_or(usize::MAX, |v| v.len() + 1);
            let fits = result.rules.len() < PERMISSION_RULES_LISTED
                && bytes.saturating_add(size) + 20 <= PERMISSIONS_LIST_BYTES;
            if safe && fits {
                bytes += size;
                result.rules.push(entry);
            } else {
                result.omitted += 1;
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_stays_within_its_bounds_and_counts_what_it_leaves_out() {
        let many: Vec<Rule> = (0..300)
            .map(|n| Rule::parse(&format!("bash({n}{})", "x".repeat(200))).unwrap())
            .collect();
        let settings = PermissionSettings {
            allow: many,
            deny: vec![Rule::parse("bash(rm *)").unwrap()],
            ..PermissionSettings::default()
        };
        let book = RuleBook::new(PermissionMode::Plan);
        let listed = list(&settings, &book, "s");
        assert_eq!(listed.mode, ApprovalMode::Plan);
        assert_eq!(listed.rules[0].rule, "bash(rm *)");
        assert_eq!(listed.rules.len() as u64 + listed.omitted, 301);
        assert!(listed.omitted > 0);
        assert!(serde_json::to_vec(&listed).unwrap().len() <= PERMISSIONS_LIST_BYTES);
    }
}
