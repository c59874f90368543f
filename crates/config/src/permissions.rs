//! `[permissions]`: which tool calls run without asking, which ask, which never run.
//!
//! A rule is a tool name (`"write"`), optionally with a glob over the call's subject in
//! parentheses: the command line of `bash` and `async_bash` (`"bash(cargo test*)"`),
//! the path of the file tools relative to the working directory (`"edit(src/**)"`), the
//! URL of `web_fetch`. In a subject glob `*` matches any characters, `/` included.
//! Deny rules win over ask rules, which win over allow rules, which win over the mode
//! and the defaults (read-only tools run, every other tool asks).
//!
//! The mode ([`PermissionMode`]) decides what no rule names: `plan` changes no file,
//! `ask` asks before every change, `auto` (the default) runs file changes inside the
//! workspace and commands the sandbox confines, `allow-all` runs everything. Deny and
//! ask rules hold in every mode.
//!
//! A session adds its own rules (`approval.scopes`: a person's answer "for this
//! session"): its deny rules come right after the settings' deny rules, its allow rules
//! right after the settings' ask rules, so a session never overrides what the settings
//! refuse or insist on asking about.

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;

use crate::{ConfigError, Env};

/// The environment variable naming the approval mode a backend's sessions start in
/// (`plan`, `ask`, `auto`, `allow-all`), over `[permissions] mode`: one run's choice
/// (`magi-code exec --mode`).
pub const PERMISSION_MODE_ENV: &str = "MAGI_PERMISSION_MODE";

/// The environment variable that, set to `1`, starts a backend's sessions in the
/// `allow-all` mode (`magi-code exec --allow-all`); it wins over
/// [`PERMISSION_MODE_ENV`].
pub const ALLOW_ALL_ENV: &str = "MAGI_ALLOW_ALL";

/// Which calls run without asking when no rule decides: the session's approval mode.
/// Settings choose the default (`[permissions] mode`); a session may switch it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
pub enum PermissionMode {
    /// No file changes: the file tools that change files are refused and commands run
    /// confined read-only (a command the sandbox cannot confine asks).
    #[serde(rename = "plan")]
    Plan,
    /// Ask the client before each call that is not read-only and not allowed by a rule.
    #[serde(rename = "ask")]
    Ask,
    /// File changes inside the workspace and commands the sandbox confines run without
    /// asking; everything else asks as in `ask`.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Run every tool without asking (deny and ask rules still apply).
    #[serde(rename = "allow-all")]
    AllowAll,
}

impl PermissionMode {
    /// Every mode, in the order a front end cycles through them (least to most
    /// autonomy).
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::Plan,
        PermissionMode::Ask,
        PermissionMode::Auto,
        PermissionMode::AllowAll,
    ];

    /// The mode's name, as settings and the wire spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Plan => "plan",
            PermissionMode::Ask => "ask",
            PermissionMode::Auto => "auto",
            PermissionMode::AllowAll => "allow-all",
        }
    }

    /// The mode named `name`, as settings and the wire spell it.
    pub fn from_name(name: &str) -> Option<PermissionMode> {
        PermissionMode::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// The mode after this one in [`PermissionMode::ALL`], wrapping round.
    pub fn next(self) -> PermissionMode {
        let at = PermissionMode::ALL
            .iter()
            .position(|m| *m == self)
            .unwrap_or(0);
        PermissionMode::ALL[(at + 1) % PermissionMode::ALL.len()]
    }
}

/// One rule: a tool, and optionally a glob its subject must match.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: String,
    subject: Option<GlobMatcher>,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.text == other.text
    }
}

impl Eq for Rule {}

impl Rule {
    /// Parses `tool` or `tool(glob)`.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let (tool, subject) = match text.split_once('(') {
            Some((tool, rest)) => {
                let Some(glob) = rest.strip_suffix(')') else {
                    return Err(format!("rule {text:?} does not end with ')'"));
                };
                if glob.is_empty() {
                    return Err(format!("rule {text:?} has an empty pattern"));
                }
                let matcher = GlobBuilder::new(glob)
                    .literal_separator(false)
                    .build()
                    .map_err(|e| format!("rule {text:?}: {e}"))?
                    .compile_matcher();
                (tool, Some(matcher))
            }
            None => (text, None),
        };
        if !magi_protocol::names::is_valid_name(tool) {
            return Err(format!("rule {text:?} does not start with a tool name"));
        }
        Ok(Rule {
            text: text.to_owned(),
            tool: tool.to_owned(),
            subject,
        })
    }

    /// Whether the rule covers a call of `tool` whose subject is `subject`. A rule with
    /// a pattern never covers a call without a subject.
    pub fn covers(&self, tool: &str, subject: Option<&str>) -> bool {
        if self.tool != tool {
            return false;
        }
        match (&self.subject, subject) {
            (None, _) => true,
            (Some(glob), Some(subject)) => glob.is_match(subject),
            (Some(_), None) => false,
        }
    }

    /// Whether the rule names a subject pattern (not the whole tool).
    pub fn has_pattern(&self) -> bool {
        self.subject.is_some()
    }

    /// The rule's text, as written.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// `text` with every character a subject glob treats specially (`*`, `?`, `[`, `]`,
/// `{`, `}`, `\`) escaped, so the glob matches exactly `text`.
pub fn glob_literal(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The rules a session added through answers "for this session", in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionRules {
    /// Calls that run without asking for the rest of the session.
    pub allow: Vec<Rule>,
    /// Calls that never run for the rest of the session.
    pub deny: Vec<Rule>,
}

impl SessionRules {
    /// How many rules the session holds.
    pub fn len(&self) -> usize {
        self.allow.len() + self.deny.len()
    }

    /// Whether the session holds no rule.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Rule, D::Error> {
        let text = String::deserialize(deserializer)?;
        Rule::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `[permissions]`, as admitted at startup.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionSettings {
    /// The mode; `ask` when absent.
    #[serde(default)]
    pub mode: PermissionMode,
    /// Calls that run without asking.
    #[serde(default)]
    pub allow: Vec<Rule>,
    /// Calls that ask even when the mode or an allow rule would run them.
    #[serde(default)]
    pub ask: Vec<Rule>,
    /// Calls that never run.
    #[serde(default)]
    pub deny: Vec<Rule>,
    /// `[permissions.code_mode]`: the rules of the calls Code Mode scripts make.
    #[serde(default)]
    pub code_mode: CodeModePermissions,
}

/// `[permissions.code_mode]`: the rules of the calls a Code Mode script makes (nested
/// calls), in the syntax of `[permissions]` and independent of its rules: a rule of
/// `[permissions]` never decides a nested call, nor one of these a direct call. The
/// mode is `[permissions]`'s unless this section sets its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeModePermissions {
    /// The mode; `[permissions] mode` when absent.
    #[serde(default)]
    pub mode: Option<PermissionMode>,
    /// Nested calls that run without asking.
    #[serde(default)]
    pub allow: Vec<Rule>,
    /// Nested calls that ask even when the mode or an allow rule would run them.
    #[serde(default)]
    pub ask: Vec<Rule>,
    /// Nested calls that never run.
    #[serde(default)]
    pub deny: Vec<Rule>,
}

/// What the policy says of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It runs; no decision was needed (a read-only tool inside the workspace).
    Run,
    /// It runs because a rule or the mode allows it.
    Allowed,
    /// The client is asked.
    Ask,
    /// A deny rule refuses it.
    Denied,
    /// A rule of the session allows it (a person's earlier answer).
    AllowedForSession,
    /// A rule of the session refuses it (a person's earlier answer).
    DeniedForSession,
    /// The mode refuses it: a file change in the `plan` mode.
    DeniedByMode,
}

/// What the policy knows of a command call's confinement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// Not a command.
    NotACommand,
    /// A command the sandbox confines (its files at least).
    Confined,
    /// A command that would run unconfined: the sandbox is off, the kernel offers
    /// none, or the call asked to run outside it.
    Unconfined,
}

/// A call, as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct CallSubject<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The command, path or URL the call acts on, when it has one.
    pub subject: Option<&'a str>,
    /// Whether the tool only reads.
    pub read_only: bool,
    /// Whether the call reaches outside the working directory (a path that resolves,
    /// symbolic links followed, outside it).
    pub outside_workspace: bool,
    /// Whether the tool changes files by itself (`write`, `edit`, `hash_edit`).
    pub changes_files: bool,
    /// Whether a command call would run confined.
    pub confinement: Confinement,
}

impl PermissionSettings {
    /// Applies [`PERMISSION_MODE_ENV`], then [`ALLOW_ALL_ENV`], when set: one run's
    /// mode over the settings'. A name no mode has is an error naming the variable and
    /// the names it takes.
    pub fn apply_env(&mut self, env: &Env) -> Result<(), ConfigError> {
        if let Some(raw) = env.get_os(PERMISSION_MODE_ENV) {
            let name = raw.to_str().map(str::trim).unwrap_or_default();
            self.mode = PermissionMode::from_name(name).ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "{PERMISSION_MODE_ENV}={:?} is not an approval mode: set it to plan, ask, \
                     auto or allow-all, or unset it",
                    raw.to_string_lossy()
                ))
            })?;
        }
        if env.get(ALLOW_ALL_ENV) == Some("1") {
            self.mode = PermissionMode::AllowAll;
        }
        Ok(())
    }

    /// The policy of the calls Code Mode scripts make in a session whose mode is
    /// `session_mode`: `[permissions.code_mode]`'s rules alone, under its mode or else
    /// the session's.
    pub fn for_code_mode(&self, session_mode: PermissionMode) -> PermissionSettings {
        PermissionSettings {
            mode: self.code_mode.mode.unwrap_or(session_mode),
            allow: self.code_mode.allow.clone(),
            ask: self.code_mode.ask.clone(),
            deny: self.code_mode.deny.clone(),
            code_mode: CodeModePermissions::default(),
        }
    }

    /// The verdict on `call`: a deny rule refuses; an ask rule asks; a call outside the
    /// workspace asks unless the mode allows everything or an allow rule with a pattern
    /// names it; otherwise an allow rule or the allow-all mode allows, a read-only call
    /// runs, and anything else asks.
    pub fn verdict(&self, call: &CallSubject<'_>) -> Verdict {
        self.verdict_in_session(self.mode, call, &SessionRules::default())
    }

    /// The verdict on `call` in a session in `mode` holding `session`'s rules: the
    /// settings' deny rules, then the session's deny rules, then the settings' ask
    /// rules; then the `plan` mode refuses file changes; then the session's allow rules
    /// (for a call outside the workspace only those with a pattern) where the settings
    /// alone would ask; then the mode.
    pub fn verdict_in_session(
        &self,
        mode: PermissionMode,
        call: &CallSubject<'_>,
        session: &SessionRules,
    ) -> Verdict {
        let covered = |rules: &[Rule]| rules.iter().any(|r| r.covers(call.tool, call.subject));
        let by_pattern = |rules: &[Rule]| {
            rules
                .iter()
                .any(|r| r.has_pattern() && r.covers(call.tool, call.subject))
        };
        if covered(&self.deny) {
            return Verdict::Denied;
        }
        if covered(&session.deny) {
            return Verdict::DeniedForSession;
        }
        if covered(&self.ask) {
            return Verdict::Ask;
        }
        // The plan mode's promise holds whatever an allow rule says.
        if mode == PermissionMode::Plan && call.changes_files {
            return Verdict::DeniedByMode;
        }
        let session_allows = if call.outside_workspace {
            by_pattern(&session.allow)
        } else {
            covered(&session.allow)
        };
        if call.outside_workspace {
            return if mode == PermissionMode::AllowAll || by_pattern(&self.allow) {
                Verdict::Allowed
            } else if session_allows {
                Verdict::AllowedForSession
            } else {
                Verdict::Ask
            };
        }
        if call.read_only {
            return Verdict::Run;
        }
        if mode == PermissionMode::AllowAll || covered(&self.allow) {
            return Verdict::Allowed;
        }
        if session_allows {
            return Verdict::AllowedForSession;
        }
        let confined = call.confinement == Confinement::Confined;
        match mode {
            PermissionMode::Auto if call.changes_files || confined => Verdict::Allowed,
            // Confined read-only by the mode: it cannot change a file.
            PermissionMode::Plan if confined => Verdict::Allowed,
            _ => Verdict::Ask,
        }
    }

    /// Whether an ask rule of the settings covers `call`: then no session rule can
    /// spare the question.
    pub fn always_asks(&self, call: &CallSubject<'_>) -> bool {
        self.ask.iter().any(|r| r.covers(call.tool, call.subject))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(tool: &'a str, subject: Option<&'a str>) -> CallSubject<'a> {
        CallSubject {
            tool,
            subject,
            read_only: matches!(tool, "read" | "grep"),
            outside_workspace: false,
            changes_files: matches!(tool, "write" | "edit"),
            confinement: if tool == "bash" {
                Confinement::Unconfined
            } else {
                Confinement::NotACommand
            },
        }
    }

    fn settings(allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionSettings {
        let rules = |texts: &[&str]| texts.iter().map(|t| Rule::parse(t).unwrap()).collect();
        PermissionSettings {
            mode: PermissionMode::Ask,
            allow: rules(allow),
            ask: rules(ask),
            deny: rules(deny),
            code_mode: CodeModePermissions::default(),
        }
    }

    #[test]
    fn code_mode_rules_are_independent_of_the_direct_ones() {
        let mut s = settings(&["bash(touch*)"], &[], &[]);
        s.code_mode.allow = vec![Rule::parse("bash(ls*)").unwrap()];
        let call = |subject| CallSubject {
            tool: "bash",
            subject: Some(subject),
            read_only: false,
            outside_workspace: false,
            changes_files: false,
            confinement: Confinement::Unconfined,
        };
        assert_eq!(s.verdict(&call("touch a")), Verdict::Allowed);
        assert_eq!(s.verdict(&call("ls")), Verdict::Ask);
        let nested = s.for_code_mode(PermissionMode::Ask);
        assert_eq!(nested.verdict(&call("touch a")), Verdict::Ask);
        assert_eq!(nested.verdict(&call("ls")), Verdict::Allowed);
        // The mode carries over unless the section sets its own.
        let nested = s.for_code_mode(PermissionMode::AllowAll);
        assert_eq!(nested.verdict(&call("rm x")), Verdict::Allowed);
        s.code_mode.mode = Some(PermissionMode::Ask);
        let nested = s.for_code_mode(PermissionMode::AllowAll);
        assert_eq!(nested.verdict(&call("rm x")), Verdict::Ask);
    }

    #[test]
    fn rules_parse_and_refuse_malformed_text() {
        assert!(Rule::parse("write").is_ok());
        assert!(Rule::parse("bash(cargo test*)").is_ok());
        assert!(Rule::parse("bash(cargo").is_err());
        assert!(Rule::parse("bash()").is_err());
        assert!(Rule::parse("(x)").is_err());
        assert!(Rule::parse("edit([)").is_err());
    }

    #[test]
    fn deny_beats_ask_beats_allow_and_defaults_follow_the_tool() {
        let s = settings(
            &["bash(cargo *)", "write"],
            &["bash(cargo publish*)"],
            &["bash(rm *)"],
        );
        assert_eq!(
            s.verdict(&call("bash", Some("cargo test -q"))),
            Verdict::Allowed
        );
        assert_eq!(
            s.verdict(&call("bash", Some("cargo publish"))),
            Verdict::Ask
        );
        assert_eq!(s.verdict(&call("bash", Some("rm -rf /"))), Verdict::Denied);
        assert_eq!(s.verdict(&call("bash", Some("ls"))), Verdict::Ask);
        assert_eq!(s.verdict(&call("write", Some("a.txt"))), Verdict::Allowed);
        assert_eq!(s.verdict(&call("read", Some("a.txt"))), Verdict::Run);
        // `*` crosses `/` in a subject glob.
        let s = settings(&["edit(src/*)"], &[], &["read(secrets/*)"]);
        assert_eq!(
            s.verdict(&call("edit", Some("src/a/b.rs"))),
            Verdict::Allowed
        );
        assert_eq!(s.verdict(&call("read", Some("secrets/k"))), Verdict::Denied);
    }

    #[test]
    fn session_rules_come_after_the_settings_deny_and_ask_rules() {
        let s = settings(&[], &["bash(cargo publish*)"], &["bash(rm *)"]);
        let rules = |texts: &[&str]| texts.iter().map(|t| Rule::parse(t).unwrap()).collect();
        let session = SessionRules {
            allow: rules(&["bash(cargo *)", "bash(rm *)", "write"]),
            deny: rules(&["bash(curl *)"]),
        };
        let verdict = |call| s.verdict_in_session(PermissionMode::Ask, &call, &session);
        assert_eq!(
            verdict(call("bash", Some("cargo test"))),
            Verdict::AllowedForSession
        );
        assert_eq!(verdict(call("bash", Some("cargo publish"))), Verdict::Ask);
        assert_eq!(verdict(call("bash", Some("rm -rf x"))), Verdict::Denied);
        assert_eq!(
            verdict(call("bash", Some("curl x"))),
            Verdict::DeniedForSession
        );
        assert_eq!(verdict(call("bash", Some("ls"))), Verdict::Ask);
        // A bare session rule does not reach outside the workspace; one with a pattern does.
        let outside = CallSubject {
            outside_workspace: true,
            ..call("write", Some("/tmp/a"))
        };
        assert_eq!(verdict(outside), Verdict::Ask);
        let session = SessionRules {
            allow: rules(&["write(/tmp/a)"]),
            deny: Vec::new(),
        };
        assert_eq!(
            s.verdict_in_session(PermissionMode::Ask, &outside, &session),
            Verdict::AllowedForSession
        );
        assert!(s.always_asks(&call("bash", Some("cargo publish --dry-run"))));
    }

    #[test]
    fn a_literal_glob_matches_only_its_text() {
        let text = "a*b?[c]{d}\\e";
        let rule = Rule::parse(&format!("bash({})", glob_literal(text))).unwrap();
        assert!(rule.covers("bash", Some(text)));
        assert!(!rule.covers("bash", Some("aXb?[c]{d}\\e")));
    }

    #[test]
    fn outside_the_workspace_asks_unless_named_or_everything_is_allowed() {
        let outside = |tool| CallSubject {
            outside_workspace: true,
            ..call(tool, Some("/etc/hosts"))
        };
        let s = settings(&["write", "read(/etc/*)"], &[], &[]);
        assert_eq!(s.verdict(&outside("write")), Verdict::Ask);
        assert_eq!(s.verdict(&outside("grep")), Verdict::Ask);
        assert_eq!(s.verdict(&outside("read")), Verdict::Allowed);
        let all = PermissionSettings {
            mode: PermissionMode::AllowAll,
            ..PermissionSettings::default()
        };
        assert_eq!(all.verdict(&outside("write")), Verdict::Allowed);
    }

    #[test]
    fn the_environment_chooses_one_runs_mode_and_allow_all_wins() {
        let mut s = PermissionSettings::default();
        s.apply_env(&Env::from_pairs([(PERMISSION_MODE_ENV, "plan")]))
            .unwrap();
        assert_eq!(s.mode, PermissionMode::Plan);
        let both = Env::from_pairs([(PERMISSION_MODE_ENV, "ask"), (ALLOW_ALL_ENV, "1")]);
        s.apply_env(&both).unwrap();
        assert_eq!(s.mode, PermissionMode::AllowAll);
        let Err(ConfigError::Invalid(why)) =
            s.apply_env(&Env::from_pairs([(PERMISSION_MODE_ENV, "read-only")]))
        else {
            panic!("a name no mode has is refused");
        };
        assert!(why.contains("MAGI_PERMISSION_MODE=\"read-only\""), "{why}");
    }

    #[test]
    fn each_mode_decides_what_no_rule_names() {
        use PermissionMode::*;
        let s = settings(&[], &["bash(git push*)"], &["bash(rm *)"]);
        let confined = CallSubject {
            confinement: Confinement::Confined,
            ..call("bash", Some("ls"))
        };
        let unconfined = call("bash", Some("ls"));
        let edit = call("edit", Some("src/a.rs"));
        let outside = CallSubject {
            outside_workspace: true,
            ..call("edit", Some("/etc/hosts"))
        };
        let fetch = call("web_fetch", Some("https://example.com/"));
        let read = call("read", Some("a.txt"));
        let pushed = CallSubject {
            confinement: Confinement::Confined,
            ..call("bash", Some("git push"))
        };
        let removed = CallSubject {
            confinement: Confinement::Confined,
            ..call("bash", Some("rm -rf x"))
        };
        let none = SessionRules::default();
        let cases = [
            (
                Plan,
                [
                    Verdict::Run,
                    Verdict::DeniedByMode,
                    Verdict::Allowed,
                    Verdict::Ask,
                    Verdict::DeniedByMode,
                    Verdict::Ask,
                ],
            ),
            (
                Ask,
                [
                    Verdict::Run,
                    Verdict::Ask,
                    Verdict::Ask,
                    Verdict::Ask,
                    Verdict::Ask,
                    Verdict::Ask,
                ],
            ),
            (
                Auto,
                [
                    Verdict::Run,
                    Verdict::Allowed,
                    Verdict::Allowed,
                    Verdict::Ask,
                    Verdict::Ask,
                    Verdict::Ask,
                ],
            ),
            (
                AllowAll,
                [
                    Verdict::Run,
                    Verdict::Allowed,
                    Verdict::Allowed,
                    Verdict::Allowed,
                    Verdict::Allowed,
                    Verdict::Allowed,
                ],
            ),
        ];
        for (mode, expected) in cases {
            let got = [&read, &edit, &confined, &unconfined, &outside, &fetch]
                .map(|c| s.verdict_in_session(mode, c, &none));
            assert_eq!(got, expected, "{mode:?}");
            // Deny and ask rules hold in every mode.
            assert_eq!(s.verdict_in_session(mode, &pushed, &none), Verdict::Ask);
            assert_eq!(s.verdict_in_session(mode, &removed, &none), Verdict::Denied);
        }
        // No allow rule lets the plan mode change a file.
        let allows = settings(&["edit"], &[], &[]);
        assert_eq!(
            allows.verdict_in_session(Plan, &edit, &none),
            Verdict::DeniedByMode
        );
        assert_eq!(PermissionMode::default(), Auto);
        assert_eq!(AllowAll.next(), Plan);
        assert_eq!(PermissionMode::from_name("allow-all"), Some(AllowAll));
        assert_eq!(PermissionMode::from_name("read-only"), None);
    }
}
