//! The one list of the tools this build runs itself, and everything the rest of the
//! backend needs to know about each: its wire name, its card kind and family, whether it
//! only reads, needs an approval, may change files or may be replayed after a crash,
//! what its subject is, what its transcript shows, and its schema.
//!
//! Every property is an exhaustive `match`, so adding a tool fails to compile until each
//! one is decided. The variant list and the wire names are written once, in the table
//! below; a small declarative macro turns the table into the enum, [`BuiltinTool::ALL`]
//! and [`BuiltinTool::name`] (a derive crate such as `strum` would do the same with a
//! procedural macro and its build time, for fifteen lines of table).

use magi_protocol::cards::ToolKind;

use crate::ToolDefinition;
use crate::facts::Facts;

/// Declares [`BuiltinTool`] from rows `Variant => "wire_name"` (or a constant naming
/// it, where the protocol's clients need the name too).
macro_rules! builtin_tools {
    ($($(#[doc = $doc:literal])+ $variant:ident => $name:expr,)+) => {
        /// A tool this build runs itself. MCP tools (`mcp__<server>__<tool>`), the
        /// client's tools, `skill` and `task` are not built-ins of this crate.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum BuiltinTool {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl BuiltinTool {
            /// Every built-in tool, in the order the model is offered them.
            pub const ALL: &'static [BuiltinTool] = &[$(BuiltinTool::$variant,)+];

            /// The tool's name on the wire: what the model calls and records hold.
            pub const fn name(self) -> &'static str {
                match self {
                    $(BuiltinTool::$variant => $name,)+
                }
            }
        }
    };
}

builtin_tools! {
    /// `read`: a text file's lines.
    Read => "read",
    /// `grep`: a regex search over file contents.
    Grep => "grep",
    /// `find`: files by glob.
    Find => "find",
    /// `ast_grep`: a structural search with a code pattern.
    AstGrep => "ast_grep",
    /// `list`: one directory's entries.
    List => "list",
    /// `write`: creates or replaces a file.
    Write => "write",
    /// `edit`: replaces one text in a file.
    Edit => "edit",
    /// `hash_edit`: line operations anchored on line hashes.
    HashEdit => "hash_edit",
    /// `web_fetch`: a URL's text.
    WebFetch => "web_fetch",
    /// `bash`: a command, waited for.
    Bash => "bash",
    /// `async_bash`: a command started in the background.
    AsyncBash => "async_bash",
    /// `bash_log`: a background job's output.
    BashLog => "bash_log",
    /// `bash_kill`: stops a background job.
    BashKill => "bash_kill",
    /// `magi_control`: the session's usage, a compaction request, its title. The
    /// backend's turn runs it, since it acts on the session.
    MagiControl => "magi_control",
    /// `view_image`: an image file, attached to the model's next request.
    ViewImage => "view_image",
    /// `code_mode`: a JavaScript script, which may call the other tools. The backend's
    /// turn runs it, since its nested calls are calls of the turn.
    CodeMode => "code_mode",
    /// `todo`: the plan the person sees, a checklist replaced whole by each call
    /// (`plan.todo`); its clients read it from its card, so its name is the protocol's.
    Todo => magi_protocol::plan::TODO_TOOL,
}

/// Which facts a tool's calls record, and so which card body shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardFamily {
    /// [`Facts::Read`].
    Read,
    /// [`Facts::Search`].
    Search,
    /// [`Facts::AstGrep`].
    AstGrep,
    /// [`Facts::Change`].
    Change,
    /// [`Facts::Web`].
    Web,
    /// [`Facts::Command`].
    Command,
    /// [`Facts::Job`].
    Job,
    /// [`Facts::Control`].
    Control,
    /// [`Facts::Image`].
    Image,
    /// [`Facts::CodeMode`].
    CodeMode,
    /// [`Facts::Plan`].
    Plan,
}

impl CardFamily {
    /// Whether recorded `facts` belong to this family.
    pub fn fits(self, facts: &Facts) -> bool {
        matches!(
            (self, facts),
            (CardFamily::Read, Facts::Read { .. })
                | (CardFamily::Search, Facts::Search { .. })
                | (CardFamily::AstGrep, Facts::AstGrep { .. })
                | (CardFamily::Change, Facts::Change { .. })
                | (CardFamily::Web, Facts::Web { .. })
                | (CardFamily::Command, Facts::Command(_))
                | (CardFamily::Job, Facts::Job { .. })
                | (CardFamily::Control, Facts::Control { .. })
                | (CardFamily::Image, Facts::Image { .. })
                | (CardFamily::CodeMode, Facts::CodeMode { .. })
                | (CardFamily::Plan, Facts::Plan { .. })
        )
    }
}

/// Which argument names what a call acts on, as the permission policy matches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectArgument {
    /// `command`: the command line.
    Command,
    /// `url`.
    Url,
    /// `path`, or `default` when the call gives none (none: the call needs one).
    Path {
        /// The path used when the call gives none.
        default: Option<&'static str>,
    },
    /// The tool has no subject.
    Nothing,
}

/// Which lines of a call's output its transcript projection shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptLines {
    /// The first lines, of a call that did not fail.
    Head,
    /// The last lines before the status lines the tool appends.
    Tail,
    /// None: a change's applied preview says more.
    Nothing,
}

impl BuiltinTool {
    /// The built-in tool of that wire name: how names from the model and from records
    /// come in. None for every other name.
    pub fn from_name(name: &str) -> Option<BuiltinTool> {
        BuiltinTool::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// The card's `tool_kind`.
    pub fn kind(self) -> ToolKind {
        match self {
            BuiltinTool::Read | BuiltinTool::ViewImage => ToolKind::Read,
            BuiltinTool::Grep | BuiltinTool::Find | BuiltinTool::List | BuiltinTool::AstGrep => {
                ToolKind::Search
            }
            BuiltinTool::Write => ToolKind::Write,
            BuiltinTool::Edit | BuiltinTool::HashEdit => ToolKind::Edit,
            BuiltinTool::Bash
            | BuiltinTool::AsyncBash
            | BuiltinTool::BashLog
            | BuiltinTool::BashKill => ToolKind::Command,
            BuiltinTool::WebFetch => ToolKind::Web,
            // The specification's kinds have none for a session's own controls.
            BuiltinTool::MagiControl | BuiltinTool::Todo => ToolKind::Other,
            BuiltinTool::CodeMode => ToolKind::CodeMode,
        }
    }

    /// The facts its calls record.
    pub fn family(self) -> CardFamily {
        match self {
            BuiltinTool::Read => CardFamily::Read,
            BuiltinTool::Grep | BuiltinTool::Find | BuiltinTool::List => CardFamily::Search,
            BuiltinTool::AstGrep => CardFamily::AstGrep,
            BuiltinTool::Write | BuiltinTool::Edit | BuiltinTool::HashEdit => CardFamily::Change,
            BuiltinTool::WebFetch => CardFamily::Web,
            BuiltinTool::Bash | BuiltinTool::AsyncBash => CardFamily::Command,
            BuiltinTool::BashLog | BuiltinTool::BashKill => CardFamily::Job,
            BuiltinTool::MagiControl => CardFamily::Control,
            BuiltinTool::ViewImage => CardFamily::Image,
            BuiltinTool::CodeMode => CardFamily::CodeMode,
            BuiltinTool::Todo => CardFamily::Plan,
        }
    }

    /// Whether its calls only read: they never need an approval and may run side by
    /// side. `magi_control` is not read-only: its title and compaction change the
    /// session (never a file), and the turn runs it between the other calls. Nor is
    /// `todo`: two plans of one response stand in the model's order, the last one
    /// current.
    pub fn is_read_only(self) -> bool {
        match self {
            BuiltinTool::Read
            | BuiltinTool::Grep
            | BuiltinTool::Find
            | BuiltinTool::List
            | BuiltinTool::AstGrep
            | BuiltinTool::BashLog
            | BuiltinTool::ViewImage => true,
            BuiltinTool::Write
            | BuiltinTool::Edit
            | BuiltinTool::HashEdit
            | BuiltinTool::WebFetch
            | BuiltinTool::Bash
            | BuiltinTool::AsyncBash
            | BuiltinTool::BashKill
            | BuiltinTool::MagiControl
            | BuiltinTool::CodeMode
            | BuiltinTool::Todo => false,
        }
    }

    /// Whether a call needs the client's approval (or a rule) before it runs: every
    /// tool that is not read-only, except `bash_kill`, which only stops a job an
    /// approved call started, and `magi_control`, which changes only the session's own
    /// bookkeeping (its title, when it compacts) and reads its usage: nobody would
    /// want to be asked before the model looks at its token count. Nor does `code_mode`:
    /// its script reaches nothing but through its nested calls, each supervised by the
    /// Code Mode permissions. Nor does `todo`, which only shows the person a list.
    pub fn needs_approval(self) -> bool {
        !self.is_read_only()
            && !matches!(
                self,
                BuiltinTool::BashKill
                    | BuiltinTool::MagiControl
                    | BuiltinTool::CodeMode
                    | BuiltinTool::Todo
            )
    }

    /// Whether a call a crashed run left unsettled may be run again when the session's
    /// next turn recovers it (when the policy lets it run without asking). Only calls
    /// that read are: running anything else twice could do twice what it does.
    pub fn replay_safe(self) -> bool {
        self.is_read_only()
    }

    /// Whether a call may change files: the file tools, and commands, which may change
    /// anything (stopping a job may leave what it changed half done).
    pub fn may_change_files(self) -> bool {
        match self {
            BuiltinTool::Write
            | BuiltinTool::Edit
            | BuiltinTool::HashEdit
            | BuiltinTool::Bash
            | BuiltinTool::AsyncBash
            | BuiltinTool::BashKill => true,
            BuiltinTool::Read
            | BuiltinTool::Grep
            | BuiltinTool::Find
            | BuiltinTool::List
            | BuiltinTool::AstGrep
            | BuiltinTool::WebFetch
            | BuiltinTool::BashLog
            | BuiltinTool::MagiControl
            | BuiltinTool::ViewImage
            | BuiltinTool::Todo
            // What its nested calls change, their own cards say.
            | BuiltinTool::CodeMode => false,
        }
    }

    /// The argument that names what a call acts on.
    pub fn subject(self) -> SubjectArgument {
        match self {
            BuiltinTool::Read
            | BuiltinTool::Write
            | BuiltinTool::Edit
            | BuiltinTool::HashEdit
            | BuiltinTool::ViewImage => SubjectArgument::Path { default: None },
            BuiltinTool::Grep | BuiltinTool::Find | BuiltinTool::List | BuiltinTool::AstGrep => {
                SubjectArgument::Path { default: Some(".") }
            }
            BuiltinTool::Bash | BuiltinTool::AsyncBash => SubjectArgument::Command,
            BuiltinTool::WebFetch => SubjectArgument::Url,
            BuiltinTool::BashLog
            | BuiltinTool::BashKill
            | BuiltinTool::MagiControl
            | BuiltinTool::CodeMode
            | BuiltinTool::Todo => SubjectArgument::Nothing,
        }
    }

    /// Whether its `path` argument is what it acts on (a task's `paths` hold it).
    pub fn path_is_subject(self) -> bool {
        matches!(self.subject(), SubjectArgument::Path { .. })
    }

    /// Which lines of a call's output its transcript shows.
    pub fn transcript(self) -> TranscriptLines {
        match self {
            BuiltinTool::Read
            | BuiltinTool::Grep
            | BuiltinTool::Find
            | BuiltinTool::List
            | BuiltinTool::AstGrep
            | BuiltinTool::WebFetch
            | BuiltinTool::CodeMode => TranscriptLines::Head,
            BuiltinTool::Bash | BuiltinTool::BashLog => TranscriptLines::Tail,
            BuiltinTool::Write
            | BuiltinTool::Edit
            | BuiltinTool::HashEdit
            | BuiltinTool::AsyncBash
            | BuiltinTool::BashKill
            // Its result is the session's private bookkeeping; the card says what is
            // public of it.
            | BuiltinTool::MagiControl
            // The card's rows say what the image is; its pixels are never text.
            | BuiltinTool::ViewImage
            // The card's rows are the plan.
            | BuiltinTool::Todo => TranscriptLines::Nothing,
        }
    }

    /// The tool as the model sees it: its name, description and argument schema.
    pub fn definition(self) -> ToolDefinition {
        match self {
            BuiltinTool::Read => crate::read::definition(),
            BuiltinTool::Grep => crate::grep::definition(),
            BuiltinTool::Find => crate::find::definition(),
            BuiltinTool::List => crate::list::definition(),
            BuiltinTool::AstGrep => crate::ast_grep::definition(),
            BuiltinTool::Write => crate::write::definition(),
            BuiltinTool::Edit => crate::edit::definition(),
            BuiltinTool::HashEdit => crate::hash_edit::definition(),
            BuiltinTool::WebFetch => crate::web_fetch::definition(),
            BuiltinTool::Bash => crate::bash::definition(),
            BuiltinTool::AsyncBash => crate::jobs::start_definition(),
            BuiltinTool::BashLog => crate::jobs::log_definition(),
            BuiltinTool::BashKill => crate::jobs::kill_definition(),
            BuiltinTool::MagiControl => crate::control::definition(),
            BuiltinTool::ViewImage => crate::view_image::definition(),
            BuiltinTool::CodeMode => crate::code_mode::definition(),
            BuiltinTool::Todo => crate::todo::definition(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_nothing_else_does() {
        for &tool in BuiltinTool::ALL {
            assert_eq!(BuiltinTool::from_name(tool.name()), Some(tool));
        }
        for name in ["", "Read", "skill", "task", "mcp__s__read", "read "] {
            assert_eq!(BuiltinTool::from_name(name), None, "{name:?}");
        }
    }

    #[test]
    fn every_tool_has_a_schema_a_card_and_a_documented_section() {
        let docs = include_str!("../../../docs/tools.md");
        // A tool is documented under a heading that names it in backticks.
        let headings: Vec<&str> = docs.lines().filter(|l| l.starts_with('#')).collect();
        for &tool in BuiltinTool::ALL {
            let definition = tool.definition();
            assert_eq!(definition.name, tool.name());
            assert_eq!(definition.parameters["type"], "object", "{tool:?}");
            assert_eq!(
                definition.parameters["additionalProperties"], false,
                "{tool:?}"
            );
            assert!(!definition.description.is_empty(), "{tool:?}");
            // Only the session's controls have no kind of their own.
            if !matches!(
                tool,
                BuiltinTool::MagiControl | BuiltinTool::CodeMode | BuiltinTool::Todo
            ) {
                assert_ne!(tool.kind(), ToolKind::Other, "{tool:?}");
            }
            assert_ne!(tool.kind(), ToolKind::Mcp, "{tool:?}");
            // The family's card body belongs to the tool's kind.
            let family_kinds: &[ToolKind] = match tool.family() {
                CardFamily::Read => &[ToolKind::Read],
                CardFamily::Search | CardFamily::AstGrep => &[ToolKind::Search],
                CardFamily::Change => &[ToolKind::Write, ToolKind::Edit],
                CardFamily::Web => &[ToolKind::Web],
                CardFamily::Command | CardFamily::Job => &[ToolKind::Command],
                CardFamily::Control => &[ToolKind::Other],
                CardFamily::Image => &[ToolKind::Read],
                CardFamily::CodeMode => &[ToolKind::CodeMode],
                CardFamily::Plan => &[ToolKind::Other],
            };
            assert!(family_kinds.contains(&tool.kind()), "{tool:?}");
            let quoted = format!("`{}`", tool.name());
            assert!(
                headings.iter().any(|h| h.contains(&quoted)),
                "{} has no heading in docs/tools.md",
                tool.name()
            );
        }
    }

    #[test]
    fn only_reads_are_free_of_approval_and_replayable() {
        for &tool in BuiltinTool::ALL {
            if tool.is_read_only() {
                assert!(!tool.needs_approval() && tool.replay_safe() && !tool.may_change_files());
            } else {
                assert!(!tool.replay_safe(), "{tool:?}");
            }
        }
        assert!(!BuiltinTool::BashKill.needs_approval());
        assert!(!BuiltinTool::MagiControl.needs_approval());
        assert!(!BuiltinTool::MagiControl.replay_safe());
        assert!(!BuiltinTool::MagiControl.may_change_files());
        assert!(BuiltinTool::WebFetch.needs_approval());
        assert!(!BuiltinTool::WebFetch.may_change_files());
    }
}
