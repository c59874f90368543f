//! What `initialize` negotiates beyond the base capabilities: the set of extensions a
//! client required, how many capability names each lets it send, and the descriptors
//! the backend advertises for them.
//!
//! Everything here derives from [`Extension`]'s one list, so an extension is named,
//! ordered, bounded and described in one place; the backend admits and advertises, and
//! the client library checks the advertisement, through the same functions.

use crate::limits::{
    APPROVAL_CHANGE_COUNTS_NAME_ROOM, CHECKPOINTS_NAME_ROOM, CLIENT_FILES_NAME_ROOM,
    CLIENT_TERMINALS_NAME_ROOM, CLIENT_TOOL_ARGUMENTS_BYTES, CLIENT_TOOL_RESULT_BYTES,
    INPUT_ATTACHMENTS_NAME_ROOM, JOBS_CONTROL_NAME_ROOM, MODEL_CACHED_NAME_ROOM,
    PERMISSION_MODES_NAME_ROOM, PLAN_TODO_NAME_ROOM, REASONING_SUMMARIES_NAME_ROOM,
    REQUIRED_CAPABILITY_NAMES, REQUIRED_CAPABILITY_NAMES_WITH_APPROVAL_SCOPES,
    REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS, SESSION_USAGE_NAME_ROOM,
    TOOL_CARD_STYLES_NAME_ROOM, USAGE_CACHE_WRITES_NAME_ROOM, USER_QUESTIONS_CAPABILITY_NAMES,
};
use crate::messages::{
    ApprovalChangeCountsDescriptor, ApprovalScopesDescriptor, CheckpointsDescriptor,
    ClientFilesDescriptor, ClientTerminalsDescriptor, ClientToolsDescriptor, Extensions,
    InputAttachmentsDescriptor, JobsControlDescriptor, ModelCachedDescriptor,
    PermissionModesDescriptor, PlanTodoDescriptor, ReasoningSummariesDescriptor,
    SessionUsageDescriptor, UsageCacheWritesDescriptor, UserQuestionsDescriptor,
};
use crate::names::Extension;

impl Extension {
    /// Names this extension adds to the bound of `required_capabilities` when it is
    /// among them: its own, and for `client.tools` one more (the bounds of
    /// docs/protocol/client-tools.md and extensions.md). `tool.cards` fits within the
    /// base bound.
    pub const fn name_room(self) -> usize {
        match self {
            Extension::ToolCards => 0,
            Extension::ClientTools => {
                REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS - REQUIRED_CAPABILITY_NAMES
            }
            Extension::ApprovalScopes => {
                REQUIRED_CAPABILITY_NAMES_WITH_APPROVAL_SCOPES - REQUIRED_CAPABILITY_NAMES
            }
            Extension::UserQuestions => USER_QUESTIONS_CAPABILITY_NAMES,
            Extension::SessionUsage => SESSION_USAGE_NAME_ROOM,
            Extension::InputAttachments => INPUT_ATTACHMENTS_NAME_ROOM,
            Extension::ClientFiles => CLIENT_FILES_NAME_ROOM,
            Extension::ReasoningSummaries => REASONING_SUMMARIES_NAME_ROOM,
            Extension::ClientTerminals => CLIENT_TERMINALS_NAME_ROOM,
            Extension::UsageCacheWrites => USAGE_CACHE_WRITES_NAME_ROOM,
            Extension::ApprovalChangeCounts => APPROVAL_CHANGE_COUNTS_NAME_ROOM,
            Extension::JobsControl => JOBS_CONTROL_NAME_ROOM,
            Extension::ModelCached => MODEL_CACHED_NAME_ROOM,
            Extension::PermissionModes => PERMISSION_MODES_NAME_ROOM,
            Extension::PlanTodo => PLAN_TODO_NAME_ROOM,
            Extension::Checkpoints => CHECKPOINTS_NAME_ROOM,
            Extension::ToolCardStyles => TOOL_CARD_STYLES_NAME_ROOM,
        }
    }

    /// This extension's place in [`Extension::ALL`], the bit that stands for it in an
    /// [`ExtensionSet`].
    fn bit(self) -> u32 {
        // Members are numbered in the list's order from 0, and there are fewer than 32.
        1 << (self as u32)
    }
}

/// The bits of every extension: one a member, from the lowest up.
const KNOWN_BITS: u32 = (1 << Extension::ALL.len()) - 1;

/// A set of extensions: those a client required, or a backend negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtensionSet(u32);

impl ExtensionSet {
    /// No extension.
    pub const EMPTY: ExtensionSet = ExtensionSet(0);

    /// The extensions `names` name; any other name is left out.
    pub fn of_names<'a>(names: impl IntoIterator<Item = &'a str>) -> ExtensionSet {
        names
            .into_iter()
            .filter_map(Extension::from_wire)
            .fold(ExtensionSet::EMPTY, ExtensionSet::with)
    }

    /// This set and `extension`.
    #[must_use]
    pub fn with(self, extension: Extension) -> ExtensionSet {
        ExtensionSet(self.0 | extension.bit())
    }

    /// This set without `extension`.
    #[must_use]
    pub fn without(self, extension: Extension) -> ExtensionSet {
        ExtensionSet(self.0 & !extension.bit())
    }

    /// The set as one word, to keep in an atomic; [`ExtensionSet::from_bits`] reads it.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// The set [`ExtensionSet::bits`] gave; bits that stand for no extension are left
    /// out.
    pub fn from_bits(bits: u32) -> ExtensionSet {
        ExtensionSet(bits & KNOWN_BITS)
    }

    /// Whether card text blocks carry their styles: `tool.cards.styles` takes effect
    /// only with `tool.cards`, the cards that carry them.
    pub fn card_styles(self) -> bool {
        self.contains(Extension::ToolCards) && self.contains(Extension::ToolCardStyles)
    }

    /// Whether `extension` is in the set.
    pub fn contains(self, extension: Extension) -> bool {
        self.0 & extension.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set's extensions, in the order `initialize` advertises them.
    pub fn iter(self) -> impl Iterator<Item = Extension> {
        Extension::ALL
            .iter()
            .copied()
            .filter(move |e| self.contains(*e))
    }

    /// Most names `required_capabilities` may hold when it requires this set: the
    /// base bound and each extension's room.
    pub fn name_bound(self) -> usize {
        REQUIRED_CAPABILITY_NAMES + self.iter().map(Extension::name_room).sum::<usize>()
    }

    /// The capabilities an admitted `initialize` advertises for this set: the sixteen
    /// base capabilities, then the set's extensions in their order.
    pub fn capabilities(self) -> Vec<String> {
        let mut capabilities = crate::names::base_capabilities();
        capabilities.extend(self.iter().map(|e| e.as_str().to_owned()));
        capabilities
    }

    /// The `extensions` object an admitted `initialize` advertises for this set: each
    /// extension's schema 1 descriptor, `client.tools`' naming `client_tools` (the
    /// registered tools, in registration order); none when the set is empty.
    pub fn descriptors(self, client_tools: &[String]) -> Option<Extensions> {
        if self.is_empty() {
            return None;
        }
        let has = |e| self.contains(e);
        Some(Extensions {
            tool_cards: has(Extension::ToolCards).then(crate::cards::ToolCardsDescriptor::schema_1),
            client_tools: has(Extension::ClientTools).then(|| ClientToolsDescriptor {
                schema_version: 1,
                tools: client_tools.to_vec(),
                arguments_bytes: CLIENT_TOOL_ARGUMENTS_BYTES as u64,
                result_bytes: CLIENT_TOOL_RESULT_BYTES as u64,
            }),
            approval_scopes: has(Extension::ApprovalScopes)
                .then(ApprovalScopesDescriptor::schema_1),
            user_questions: has(Extension::UserQuestions).then(UserQuestionsDescriptor::schema_1),
            session_usage: has(Extension::SessionUsage).then(SessionUsageDescriptor::schema_1),
            input_attachments: has(Extension::InputAttachments)
                .then(InputAttachmentsDescriptor::schema_1),
            client_terminals: has(Extension::ClientTerminals)
                .then(ClientTerminalsDescriptor::schema_1),
            client_files: has(Extension::ClientFiles).then(ClientFilesDescriptor::schema_1),
            reasoning_summaries: has(Extension::ReasoningSummaries)
                .then(ReasoningSummariesDescriptor::schema_1),
            usage_cache_writes: has(Extension::UsageCacheWrites)
                .then(UsageCacheWritesDescriptor::schema_1),
            approval_change_counts: has(Extension::ApprovalChangeCounts)
                .then(ApprovalChangeCountsDescriptor::schema_1),
            jobs_control: has(Extension::JobsControl).then(JobsControlDescriptor::schema_1),
            model_cached: has(Extension::ModelCached).then(ModelCachedDescriptor::schema_1),
            checkpoints: has(Extension::Checkpoints).then(CheckpointsDescriptor::schema_1),
            permission_modes: has(Extension::PermissionModes)
                .then(PermissionModesDescriptor::schema_1),
            plan_todo: has(Extension::PlanTodo).then(PlanTodoDescriptor::schema_1),
            tool_card_styles: has(Extension::ToolCardStyles)
                .then(crate::cards::ToolCardStylesDescriptor::schema_1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS_AND_APPROVAL_SCOPES;

    #[test]
    fn the_rooms_give_the_specified_bounds() {
        let set = |names: &[&str]| ExtensionSet::of_names(names.iter().copied());
        assert_eq!(set(&[]).name_bound(), REQUIRED_CAPABILITY_NAMES);
        assert_eq!(set(&["tool.cards"]).name_bound(), REQUIRED_CAPABILITY_NAMES);
        assert_eq!(
            set(&["client.tools"]).name_bound(),
            REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS
        );
        assert_eq!(
            set(&["approval.scopes"]).name_bound(),
            REQUIRED_CAPABILITY_NAMES_WITH_APPROVAL_SCOPES
        );
        assert_eq!(
            set(&["approval.scopes", "client.tools", "tool.cards"]).name_bound(),
            REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS_AND_APPROVAL_SCOPES
        );
        // Every other extension brings exactly its own name.
        for extension in &Extension::ALL[3..] {
            assert_eq!(extension.name_room(), 1, "{extension}");
        }
    }

    #[test]
    fn a_set_keeps_each_extension_once_and_lists_them_in_the_advertised_order() {
        let set = ExtensionSet::of_names([
            "tool.cards.styles",
            "status",
            "tool.cards",
            "tool.cards",
            "nothing.known",
        ]);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Extension::ToolCards, Extension::ToolCardStyles]
        );
        assert!(set.contains(Extension::ToolCardStyles));
        assert!(set.card_styles());
        assert!(
            !set.without(Extension::ToolCards).card_styles(),
            "styles need cards"
        );
        assert_eq!(ExtensionSet::from_bits(set.bits() | 1 << 31), set);
        assert!(
            !set.without(Extension::ToolCardStyles)
                .contains(Extension::ToolCardStyles)
        );
        // One bit each in the set's word.
        assert!(Extension::ALL.len() < 32);
        let every = ExtensionSet::of_names(Extension::ALL.iter().map(|e| e.as_str()));
        assert_eq!(every.iter().collect::<Vec<_>>(), Extension::ALL);
        let capabilities = every.capabilities();
        assert_eq!(capabilities.len(), 16 + Extension::ALL.len());
        assert_eq!(capabilities[16], "tool.cards");
        assert_eq!(
            capabilities.last().map(String::as_str),
            Some("tool.cards.styles")
        );
    }

    #[test]
    fn descriptors_are_advertised_for_the_set_alone() {
        assert_eq!(ExtensionSet::EMPTY.descriptors(&[]), None);
        let set = ExtensionSet::EMPTY
            .with(Extension::ClientTools)
            .with(Extension::Checkpoints);
        let tools = ["look".to_owned()];
        let advertised = serde_json::to_value(set.descriptors(&tools)).unwrap();
        let mut names: Vec<&str> = advertised
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        assert_eq!(names, ["checkpoints", "client.tools"]);
        assert_eq!(
            advertised["client.tools"]["tools"],
            serde_json::json!(["look"])
        );
        // Every extension has a descriptor under its own capability name.
        let every = ExtensionSet::of_names(Extension::ALL.iter().map(|e| e.as_str()));
        let advertised = serde_json::to_value(every.descriptors(&tools)).unwrap();
        for extension in Extension::ALL {
            assert!(
                advertised.get(extension.as_str()).is_some(),
                "{extension} has no descriptor"
            );
        }
    }

    #[test]
    fn model_cached_is_named_as_its_method() {
        assert_eq!(
            Extension::ModelCached.as_str(),
            crate::names::ExtensionMethod::ModelCached.as_str()
        );
    }
}
