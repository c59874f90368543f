//! What a command's refusal means, in words a person acts on, with the code after it.

use magi_protocol::ErrorCode;

/// A refusal of `what` (a command or a method), said in full.
pub(in crate::tui) fn refused(what: &str, code: ErrorCode) -> String {
    let said = match code {
        ErrorCode::Busy => "the backend is busy with a turn or another operation; try again \
                            when it ends"
            .to_owned(),
        ErrorCode::OperationCancelled => "it was cancelled".to_owned(),
        ErrorCode::ProviderUnavailable => "the provider's credential is missing".to_owned(),
        ErrorCode::ExecutionFailed => {
            "the model request failed or said nothing; nothing changed".to_owned()
        }
        ErrorCode::PersistenceFailed => {
            "the session log could not be written: check the free space and permissions of \
             MC_HOME"
                .to_owned()
        }
        ErrorCode::SessionMissing | ErrorCode::StaleSession => {
            "this session is no longer attached; /new or /sessions attaches one".to_owned()
        }
        ErrorCode::SessionBusy => "the session is in use by another magi-code".to_owned(),
        ErrorCode::SessionInvalid => {
            "the session's log is unreadable or malformed; it cannot be reopened".to_owned()
        }
        ErrorCode::CwdMismatch => "the session was recorded in another directory".to_owned(),
        ErrorCode::HistoryLimit => {
            "the session's history is over the size a reopen reads".to_owned()
        }
        ErrorCode::DiscoveryLimit => {
            "this directory holds more session files than a listing reads".to_owned()
        }
        ErrorCode::DiscoveryUnavailable => {
            "the sessions folder cannot be listed safely (an unexpected file name or \
             permissions)"
                .to_owned()
        }
        ErrorCode::StaleRevision | ErrorCode::StaleCatalog => {
            "what was listed changed meanwhile; run the command again".to_owned()
        }
        ErrorCode::CatalogLimit => "the saved model lists are over the size read".to_owned(),
        ErrorCode::CatalogUnavailable => {
            "a saved model list is unreadable; /model then r fetches it again".to_owned()
        }
        ErrorCode::UnsupportedCapability => {
            "this backend does not offer it (the extension was not negotiated)".to_owned()
        }
        _ => "the backend refused".to_owned(),
    };
    format!("{what}: {said} [{}]", code.as_str())
}

/// A refused `selection.set` of `name` (`provider/model`).
pub(super) fn selection_refused(name: &str, code: ErrorCode) -> String {
    let said = match code {
        ErrorCode::SelectionInvalid => format!(
            "{name} is not among the catalog's choices (enabled in [providers.catalog] and in \
             its provider's saved model list); /model lists them"
        ),
        ErrorCode::ProviderUnavailable => {
            format!("{name}: its provider's credential is missing")
        }
        ErrorCode::EffortUnsupported => {
            format!("{name} does not take the effort asked for; choose another")
        }
        ErrorCode::StaleSelection => "the selection changed meanwhile; choose again".to_owned(),
        _ => return refused("/model", code),
    };
    format!("{said} [{}]", code.as_str())
}

/// A refused `model.refresh` of `provider`.
pub(super) fn refresh_refused(provider: &str, code: ErrorCode) -> String {
    let said = match code {
        ErrorCode::SelectionInvalid => format!("{provider} is not a provider of the settings"),
        ErrorCode::ProviderUnavailable => format!(
            "{provider} could not be reached, or refused its credential (magi-code doctor \
             --online says more)"
        ),
        ErrorCode::CatalogLimit => format!("{provider} lists more models than are kept"),
        ErrorCode::CatalogUnavailable => {
            format!("{provider} did not answer with a model list, or the list could not be saved")
        }
        _ => return refused(&format!("fetching {provider}'s models"), code),
    };
    format!("{said} [{}]", code.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_why_and_ends_with_its_code() {
        assert_eq!(
            refused("/compact", ErrorCode::Busy),
            "/compact: the backend is busy with a turn or another operation; try again when \
             it ends [busy]"
        );
        assert_eq!(
            refused("session.open", ErrorCode::SessionBusy),
            "session.open: the session is in use by another magi-code [session_busy]"
        );
        assert!(
            selection_refused("openai/nope", ErrorCode::SelectionInvalid)
                .starts_with("openai/nope is not among the catalog's choices")
        );
        assert!(
            refresh_refused("openai", ErrorCode::Busy).starts_with("fetching openai's models: ")
        );
    }
}
