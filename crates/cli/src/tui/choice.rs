//! The answers an approval prompt offers, shared by the prompt's keys
//! (`super::approval`) and its drawing (`super::render`).

/// One answer the prompt offers, in the order they are numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::tui) enum Choice {
    AllowOnce,
    AllowForSession,
    Deny,
    DenyWithMessage,
}

impl Choice {
    /// The answers offered: "for this session" only with a suggested rule (without
    /// one it would cover this call only).
    pub(in crate::tui) fn offered(has_rule: bool) -> &'static [Choice] {
        if has_rule {
            &[
                Choice::AllowOnce,
                Choice::AllowForSession,
                Choice::Deny,
                Choice::DenyWithMessage,
            ]
        } else {
            &[Choice::AllowOnce, Choice::Deny, Choice::DenyWithMessage]
        }
    }

    /// Its letter key.
    pub(in crate::tui) fn letter(self) -> char {
        match self {
            Choice::AllowOnce => 'y',
            Choice::AllowForSession => 's',
            Choice::Deny => 'n',
            Choice::DenyWithMessage => 'd',
        }
    }
}
