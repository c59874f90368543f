//! The session's permission state: its approval mode (`permissions.modes`) and its
//! rules (`approval.scopes`: the rule an answer "for this session" would add, the rules
//! a session holds, their records and their revocation).
//!
//! The session log is the rules' truth: each rule is a `session_rule` record, revoked
//! by a later `session_rule_revoked`, and a turn starts from the rules its session's
//! records hold, so a session reopened in another child keeps them. While a turn runs,
//! a new or revoked rule and a new mode take effect at once for the calls after them,
//! and their records wait in the book until the session's journal takes them (a
//! subagent's answer is given while the subagent's own journal is in use; a client's
//! change while the run holds the journal).
//!
//! The mode is the child's for the attached session: a session (re)attached starts in
//! the default mode, whatever an earlier attachment switched it to, since a mode is a
//! person's choice for the work at hand; its changes are recorded for the model and
//! for the record, never replayed.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use magi_config::{
    CallSubject, PermissionMode, PermissionSettings, Rule, SessionRules, Verdict, glob_literal,
};
use magi_protocol::limits::{APPROVAL_SUBJECT_BYTES, SESSION_RULES};
use magi_store::records::{Record, RecordBody, RuleEffect};
use magi_tools::{BuiltinTool, SubjectArgument};

/// The permission state of the session a child serves: its approval mode and rules,
/// shared by the connection and the run's agents. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct RuleBook {
    inner: Arc<Mutex<Book>>,
}

#[derive(Debug, Default)]
struct Book {
    rules: SessionRules,
    /// Records of rules added or revoked and of modes set, not yet appended to the
    /// session log.
    unrecorded: Vec<RecordBody>,
    /// The session's approval mode.
    mode: PermissionMode,
    /// The mode a session starts in.
    default_mode: PermissionMode,
    /// The mode changed during a run and the model was not told yet.
    untold: bool,
    /// The session the state is of.
    session_id: Option<String>,
}

impl RuleBook {
    /// The state of a child whose sessions start in `mode`.
    pub fn new(mode: PermissionMode) -> RuleBook {
        let book = RuleBook::default();
        {
            let mut inner = book.lock();
            inner.mode = mode;
            inner.default_mode = mode;
        }
        book
    }

    fn lock(&self) -> MutexGuard<'_, Book> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes the session attached now: another session than before starts over, in
    /// the default mode with no rules (its records give them at its first turn or
    /// listing).
    pub fn attached(&self, session_id: Option<&str>) {
        let mut book = self.lock();
        if book.session_id.as_deref() != session_id {
            book.session_id = session_id.map(str::to_owned);
            book.mode = book.default_mode;
            book.rules = SessionRules::default();
            book.unrecorded.clear();
            book.untold = false;
        }
    }

    /// The session's approval mode.
    pub fn mode(&self) -> PermissionMode {
        self.lock().mode
    }

    /// The mode a session starts in.
    pub fn default_mode(&self) -> PermissionMode {
        self.lock().default_mode
    }

    /// Sets the session's approval mode, effective for the next call that asks, with
    /// the record that keeps the change (`turn_id` when a run is under way). Returns
    /// the mode before.
    pub fn set_mode(&self, mode: PermissionMode, turn_id: Option<&str>) -> PermissionMode {
        let mut book = self.lock();
        let previous = book.mode;
        if previous != mode {
            book.mode = mode;
            book.untold = turn_id.is_some();
            book.unrecorded.push(RecordBody::PermissionMode {
                turn_id: turn_id.map(str::to_owned),
                previous: previous.as_str().to_owned(),
                mode: mode.as_str().to_owned(),
            });
        }
        previous
    }

    /// The mode, when it changed during a run and the model was not told yet; told
    /// from now on.
    pub(in crate::runner) fn take_untold(&self) -> Option<PermissionMode> {
        let mut book = self.lock();
        std::mem::take(&mut book.untold).then_some(book.mode)
    }

    /// The session's rules, in the order they were added: allow rules, then deny rules.
    pub fn rules(&self) -> (Vec<String>, Vec<String>) {
        let book = self.lock();
        let texts = |rules: &[Rule]| rules.iter().map(|r| r.text().to_owned()).collect();
        (texts(&book.rules.allow), texts(&book.rules.deny))
    }

    /// Revokes the session's rule whose text is `rule`, with the record that keeps the
    /// revocation (`turn_id` when a run is under way); false when the session holds no
    /// such rule.
    pub fn revoke(&self, rule: &str, turn_id: Option<&str>) -> bool {
        let mut book = self.lock();
        let before = book.rules.len();
        book.rules.allow.retain(|r| r.text() != rule);
        book.rules.deny.retain(|r| r.text() != rule);
        if book.rules.len() == before {
            return false;
        }
        book.unrecorded.push(RecordBody::SessionRuleRevoked {
            turn_id: turn_id.map(str::to_owned),
            rule: rule.to_owned(),
        });
        true
    }

    /// Takes the rules the session's records hold, in their order: each
    /// `session_rule` adds its rule, each `session_rule_revoked` removes it. A record
    /// whose rule does not parse (not written by this build) is left out: the calls it
    /// named ask again. Records still waiting for the log are appended first by the
    /// caller, or they would be undone here.
    pub fn load(&self, records: &[Record]) {
        let mut book = self.lock();
        book.rules = SessionRules::default();
        for record in records {
            match &record.body {
                RecordBody::SessionRule { effect, rule, .. } => {
                    if let Ok(rule) = Rule::parse(rule) {
                        add(&mut book.rules, *effect, rule);
                    }
                }
                RecordBody::SessionRuleRevoked { rule, .. } => {
                    book.rules.allow.retain(|r| r.text() != rule);
                    book.rules.deny.retain(|r| r.text() != rule);
                }
                _ => {}
            }
        }
    }

    /// The verdict of `permissions` on `call` with the session's mode and rules. The
    /// session's allow rules spare the question only for a command line without shell
    /// syntax that could chain another command onto the one a person allowed.
    pub(in crate::runner) fn verdict(
        &self,
        permissions: &PermissionSettings,
        call: &CallSubject<'_>,
    ) -> Verdict {
        let book = self.lock();
        let compound = is_command(call.tool) && !call.subject.is_some_and(is_plain_command);
        if compound && !book.rules.allow.is_empty() {
            let deny_only = SessionRules {
                allow: Vec::new(),
                deny: book.rules.deny.clone(),
            };
            return permissions.verdict_in_session(book.mode, call, &deny_only);
        }
        permissions.verdict_in_session(book.mode, call, &book.rules)
    }

    /// Adds `rule` for the rest of the session, with the record that keeps it. Returns
    /// whether it was added: a rule the session already holds, or one past the
    /// session's bound, is not (the answer then covers its call only).
    pub(in crate::runner) fn add(
        &self,
        effect: RuleEffect,
        rule: &str,
        turn_id: &str,
        call_id: &str,
    ) -> bool {
        let Ok(parsed) = Rule::parse(rule) else {
            return false;
        };
        let mut book = self.lock();
        let held = book
            .rules
            .allow
            .iter()
            .chain(&book.rules.deny)
            .any(|r| r.text() == rule);
        if held || book.rules.len() >= SESSION_RULES {
            return false;
        }
        add(&mut book.rules, effect, parsed);
        book.unrecorded.push(RecordBody::SessionRule {
            turn_id: turn_id.to_owned(),
            call_id: call_id.to_owned(),
            effect,
            rule: rule.to_owned(),
        });
        true
    }

    /// The records of rules added or revoked and modes set since the last call, for
    /// the session's journal.
    pub fn take_unrecorded(&self) -> Vec<RecordBody> {
        std::mem::take(&mut self.lock().unrecorded)
    }
}

fn add(rules: &mut SessionRules, effect: RuleEffect, rule: Rule) {
    match effect {
        RuleEffect::Allow => rules.allow.push(rule),
        RuleEffect::Deny => rules.deny.push(rule),
    }
}

/// Whether `tool` takes a command line.
fn is_command(tool: &str) -> bool {
    BuiltinTool::from_name(tool).is_some_and(|t| matches!(t.subject(), SubjectArgument::Command))
}

/// Whether a command line is words of plain characters only: no quoting, expansion,
/// redirection, pipe, list or grouping that could make it more than one command.
fn is_plain_command(command: &str) -> bool {
    !command.trim().is_empty()
        && command.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    ' ' | '_' | '-' | '.' | '/' | '=' | ':' | ',' | '@' | '+' | '%'
                )
        })
}

/// The session rule an answer "for this session" would add for `call`, in the
/// settings' rule syntax; none when no rule could spare the question (a settings ask
/// rule covers the call) or none is safe to offer.
///
/// - a command line of plain words: its program and, when the next word is a plain
///   subcommand, that word too, then `*` (`bash(cargo test*)`); other command lines
///   get none, since a session rule never covers them;
/// - a path inside the workspace: every path in its folder (`edit(src/*)`), or the
///   file itself at the workspace's top; a path outside: that path exactly;
/// - a URL: every URL of its scheme and host (`web_fetch(https://example.com/*)`);
/// - a tool without a subject (client and MCP tools): the tool (`notify`).
pub(in crate::runner) fn suggested_rule(
    permissions: &PermissionSettings,
    call: &CallSubject<'_>,
) -> Option<String> {
    if permissions.always_asks(call) {
        return None;
    }
    let tool = call.tool;
    let rule = match (
        BuiltinTool::from_name(tool).map(BuiltinTool::subject),
        call.subject,
    ) {
        (Some(SubjectArgument::Command), Some(command)) if is_plain_command(command) => {
            let mut words = command.split_whitespace();
            let program = words.next()?;
            let prefix = match words.next() {
                Some(sub)
                    if sub.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
                        && sub.bytes().next().is_some_and(|b| b.is_ascii_lowercase()) =>
                {
                    format!("{program} {sub}")
                }
                _ => program.to_owned(),
            };
            format!("{tool}({prefix}*)")
        }
        (Some(SubjectArgument::Path { .. }), Some(path)) => {
            let folder = std::path::Path::new(path)
                .parent()
                .and_then(|p| p.to_str())
                .filter(|p| !p.is_empty() && !call.outside_workspace);
            match folder {
                Some(folder) => format!("{tool}({}/*)", glob_literal(folder)),
                None => format!("{tool}({})", glob_literal(path)),
            }
        }
        (Some(SubjectArgument::Url), Some(url)) => {
            let (scheme, rest) = url.split_once("://")?;
            let host = rest
                .split(['/', '?', '#'])
                .next()
                .filter(|h| !h.is_empty())?;
            if !matches!(scheme, "http" | "https") || host.contains('@') {
                return None;
            }
            format!("{tool}({scheme}://{}/*)", glob_literal(host))
        }
        (None, _) => tool.to_owned(),
        _ => return None,
    };
    // Offered only when it is shown as it is: nothing to redact, within its bound, and
    // it parses.
    let safe = !magi_protocol::text::has_control(&rule)
        && !magi_protocol::text::is_secret_like(&rule)
        && magi_protocol::text::redact_secrets(&rule) == rule
        && rule.len() <= APPROVAL_SUBJECT_BYTES
        && Rule::parse(&rule).is_ok_and(|r| r.covers(tool, call.subject));
    safe.then_some(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suggest(tool: &str, subject: Option<&str>, outside: bool) -> Option<String> {
        let call = CallSubject {
            tool,
            subject,
            read_only: false,
            outside_workspace: outside,
            changes_files: false,
            confinement: magi_config::Confinement::NotACommand,
        };
        suggested_rule(&PermissionSettings::default(), &call)
    }

    #[test]
    fn suggestions_follow_the_subject() {
        let bash = |c| suggest("bash", Some(c), false);
        assert_eq!(bash("cargo test -q"), Some("bash(cargo test*)".into()));
        assert_eq!(bash("ls -la"), Some("bash(ls*)".into()));
        assert_eq!(bash("./run.sh --fast"), Some("bash(./run.sh*)".into()));
        assert_eq!(bash("cargo test; rm -rf /"), None);
        assert_eq!(bash("echo $HOME"), None);
        assert_eq!(
            suggest("write", Some("src/a b.rs"), false),
            Some("write(src/*)".into())
        );
        assert_eq!(
            suggest("write", Some("out.txt"), false),
            Some("write(out.txt)".into())
        );
        assert_eq!(
            suggest("edit", Some("/etc/x[1].conf"), true),
            Some("edit(/etc/x\\[1\\].conf)".into())
        );
        assert_eq!(
            suggest("web_fetch", Some("https://example.com/a?b"), false),
            Some("web_fetch(https://example.com/*)".into())
        );
        assert_eq!(
            suggest("web_fetch", Some("https://u:p@example.com/"), false),
            None
        );
        assert_eq!(suggest("notify", None, false), Some("notify".into()));
        let asks = PermissionSettings {
            ask: vec![Rule::parse("bash(cargo publish*)").unwrap()],
            ..PermissionSettings::default()
        };
        let call = CallSubject {
            tool: "bash",
            subject: Some("cargo publish"),
            read_only: false,
            outside_workspace: false,
            changes_files: false,
            confinement: magi_config::Confinement::Unconfined,
        };
        assert_eq!(suggested_rule(&asks, &call), None);
    }

    #[test]
    fn the_book_keeps_rules_once_and_spares_only_plain_commands() {
        let book = RuleBook::new(PermissionMode::Ask);
        assert!(book.add(RuleEffect::Allow, "bash(cargo test*)", "t", "c1"));
        assert!(!book.add(RuleEffect::Allow, "bash(cargo test*)", "t", "c2"));
        assert_eq!(book.take_unrecorded().len(), 1);
        assert!(book.take_unrecorded().is_empty());
        let permissions = PermissionSettings::default();
        let verdict = |command| {
            book.verdict(
                &permissions,
                &CallSubject {
                    tool: "bash",
                    subject: Some(command),
                    read_only: false,
                    outside_workspace: false,
                    changes_files: false,
                    confinement: magi_config::Confinement::Unconfined,
                },
            )
        };
        assert_eq!(verdict("cargo test -q"), Verdict::AllowedForSession);
        assert_eq!(verdict("cargo test && rm -rf x"), Verdict::Ask);
        assert_eq!(verdict("cargo build"), Verdict::Ask);
        // A reopened session starts from its records.
        let record = Record::now(
            "s",
            RecordBody::SessionRule {
                turn_id: "t".into(),
                call_id: "c1".into(),
                effect: RuleEffect::Deny,
                rule: "write".into(),
            },
        );
        let reopened = RuleBook::new(PermissionMode::Ask);
        reopened.load(std::slice::from_ref(&record));
        let write = CallSubject {
            tool: "write",
            subject: Some("a.txt"),
            read_only: false,
            outside_workspace: false,
            changes_files: true,
            confinement: magi_config::Confinement::NotACommand,
        };
        assert_eq!(
            reopened.verdict(&permissions, &write),
            Verdict::DeniedForSession
        );
        // A revocation, live or recorded, takes the rule away.
        assert!(reopened.revoke("write", None));
        assert!(!reopened.revoke("write", None));
        assert_eq!(reopened.verdict(&permissions, &write), Verdict::Ask);
        let revoked = reopened.take_unrecorded();
        assert!(
            matches!(&revoked[..], [RecordBody::SessionRuleRevoked { rule, .. }] if rule == "write")
        );
        let revoked = Record::now("s", revoked.into_iter().next().unwrap());
        let again = RuleBook::new(PermissionMode::Ask);
        again.load(&[record, revoked]);
        assert_eq!(again.rules(), (Vec::new(), Vec::new()));
    }

    #[test]
    fn a_mode_set_during_a_run_is_recorded_and_told_once() {
        let book = RuleBook::new(PermissionMode::Auto);
        book.attached(Some("s1"));
        assert_eq!(
            book.set_mode(PermissionMode::Plan, Some("t")),
            PermissionMode::Auto
        );
        assert_eq!(book.take_untold(), Some(PermissionMode::Plan));
        assert_eq!(book.take_untold(), None);
        assert_eq!(
            book.set_mode(PermissionMode::Plan, None),
            PermissionMode::Plan
        );
        assert_eq!(book.take_unrecorded().len(), 1);
        // Another session starts in the default mode.
        book.attached(Some("s2"));
        assert_eq!(book.mode(), PermissionMode::Auto);
    }
}
