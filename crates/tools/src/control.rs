//! `magi_control`: the model's window onto its own session. Its schema and its
//! arguments live here with the other tools; what it does needs the session (its log,
//! its next model request, its title), so the backend's turn runs it
//! (`magi_core`'s call service), never a blocking thread of this crate.

use magi_protocol::limits::TITLE_CHARS;
use serde::Deserialize;
use serde_json::json;

use crate::{ToolDefinition, ToolOutput, ToolReport};

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::MagiControl.name(),
        description: "Look at or steer your own session. `usage`: the tokens this session's \
                      model requests used so far (input, cached, output, reasoning, as the \
                      provider reported them), the context window and how much of it the \
                      conversation fills, and the model requests and tool calls so far. \
                      `compact`: summarise the conversation before your next model request, \
                      to free the context window. `title`: set the session's title (`title`, \
                      at most 50 characters; a longer one is cut).",
        parameters: json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["usage", "compact", "title"]},
                "title": {
                    "type": "string",
                    "description": "The new title, for `title` only."
                }
            },
            "required": ["operation"],
            "additionalProperties": false
        }),
    }
}

/// What a `magi_control` call asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlRequest {
    /// `usage`: the session's recorded usage.
    Usage,
    /// `compact`: compaction before the next model request.
    Compact,
    /// `title`: the session's title, as given (not yet checked or cut).
    Title(String),
}

impl ControlRequest {
    /// The operation's name, as the model gives it and the card shows it.
    pub fn operation(&self) -> &'static str {
        match self {
            ControlRequest::Usage => "usage",
            ControlRequest::Compact => "compact",
            ControlRequest::Title(_) => "title",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    operation: String,
    title: Option<String>,
}

/// Reads a call's arguments (JSON text). The error is what the model is told.
pub fn parse_control(arguments: &str) -> Result<ControlRequest, String> {
    let arguments: Arguments = serde_json::from_str(arguments).map_err(|e| {
        format!(
            "The arguments were not understood ({e}): give {{\"operation\": \"usage\"}}, \
             {{\"operation\": \"compact\"}} or {{\"operation\": \"title\", \"title\": \"...\"}}."
        )
    })?;
    match (arguments.operation.as_str(), arguments.title) {
        ("usage", None) => Ok(ControlRequest::Usage),
        ("compact", None) => Ok(ControlRequest::Compact),
        ("title", Some(title)) => Ok(ControlRequest::Title(title)),
        ("title", None) => Err("The title operation needs a `title` string.".into()),
        ("usage" | "compact", Some(_)) => Err(format!(
            "`title` belongs to the title operation, not to {:?}.",
            arguments.operation
        )),
        (other, _) => Err(format!(
            "There is no operation {other:?}: the operations are usage, compact and title."
        )),
    }
}

/// A title as the model gave it, cut to [`TITLE_CHARS`] characters after surrounding
/// white space is trimmed, with the number of characters cut off.
pub fn cut_title(title: &str) -> (String, usize) {
    let trimmed = title.trim();
    let total = trimmed.chars().count();
    let kept: String = trimmed.chars().take(TITLE_CHARS).collect();
    (
        kept.trim_end().to_owned(),
        total.saturating_sub(TITLE_CHARS),
    )
}

/// What this crate answers when asked to run `magi_control` itself: it cannot, since
/// the call acts on the session. The backend's turn never asks.
pub(crate) fn run_elsewhere() -> ToolReport {
    ToolReport::from(ToolOutput::failed(
        "not run",
        "magi_control acts on the session and runs only inside a session's turn.".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_one_operation_and_only_title_takes_a_title() {
        assert_eq!(
            parse_control(r#"{"operation":"usage"}"#),
            Ok(ControlRequest::Usage)
        );
        assert_eq!(
            parse_control(r#"{"operation":"compact"}"#),
            Ok(ControlRequest::Compact)
        );
        assert_eq!(
            parse_control(r#"{"operation":"title","title":"Parser work"}"#),
            Ok(ControlRequest::Title("Parser work".into()))
        );
        for (arguments, says) in [
            (r#"{"operation":"title"}"#, "needs a `title`"),
            (
                r#"{"operation":"usage","title":"x"}"#,
                "belongs to the title",
            ),
            (r#"{"operation":"reset"}"#, "usage, compact and title"),
            (r#"{"operation":"usage","extra":1}"#, "not understood"),
            (r#"{}"#, "not understood"),
            ("not json", "not understood"),
        ] {
            let error = parse_control(arguments).unwrap_err();
            assert!(error.contains(says), "{arguments}: {error}");
        }
    }

    #[test]
    fn titles_are_trimmed_and_cut_to_the_bound_with_the_cut_counted() {
        assert_eq!(cut_title("  Short  "), ("Short".to_owned(), 0));
        let long = "é".repeat(TITLE_CHARS + 7);
        let (kept, cut) = cut_title(&long);
        assert_eq!((kept.chars().count(), cut), (TITLE_CHARS, 7));
        assert_eq!(cut_title("   "), (String::new(), 0));
    }
}
