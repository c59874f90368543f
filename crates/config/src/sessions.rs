//! `[sessions]`: what the backend records about a session beside its turns.

use serde::Deserialize;

/// `[sessions]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSettings {
    /// Where a session's title comes from.
    #[serde(default)]
    pub titles: TitleMode,
}

/// `[sessions] titles`: whether an untitled session gets a title from the model after a
/// turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TitleMode {
    /// After a completed turn of an untitled session, the model is asked for a title
    /// with a small tool-less request sent after the run's terminal event.
    #[default]
    Model,
    /// No title is ever requested; sessions stay untitled unless compaction names one.
    Off,
}

impl TitleMode {
    /// Whether the model is asked for titles.
    pub fn asks_model(self) -> bool {
        self == TitleMode::Model
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_model_by_default_and_read_as_lowercase_words() {
        let parse = |text: &str| toml::from_str::<SessionSettings>(text);
        assert_eq!(parse("").unwrap().titles, TitleMode::Model);
        assert_eq!(parse("titles = \"off\"").unwrap().titles, TitleMode::Off);
        assert_eq!(
            parse("titles = \"model\"").unwrap().titles,
            TitleMode::Model
        );
        assert!(parse("titles = \"prompt\"").is_err());
        assert!(parse("title = \"off\"").is_err());
    }
}
