//! The default reasoning effort: what a selection that requests none (`default`) gets
//! from the environment and the settings, for each model of a provider.

use std::collections::BTreeMap;

use magi_protocol::messages::Effort;

use crate::settings::Settings;
use crate::{ConfigError, Env};

/// The efforts the settings and the environment give a selection that requests none
/// (`default`), highest precedence first: `MAGI_EFFORT` (what `exec --effort` sets),
/// the model's `[models."provider/model"] effort`, the top-level `effort`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefaultEfforts {
    /// `MAGI_EFFORT`.
    pub env: Option<Effort>,
    /// Each `[models."provider/model"] effort` of this provider, by model.
    pub models: BTreeMap<String, Effort>,
    /// The top-level `effort`.
    pub global: Option<Effort>,
}

impl DefaultEfforts {
    /// The default effort of `model`, if any is configured.
    pub fn of(&self, model: &str) -> Option<Effort> {
        self.env
            .or_else(|| self.models.get(model).copied())
            .or(self.global)
            .filter(|effort| *effort != Effort::Default)
    }
}

/// The variable that sets the default effort of one backend (`exec --effort` sets it).
pub const EFFORT_ENV: &str = "MAGI_EFFORT";

/// The default efforts of provider `name`'s models: `MAGI_EFFORT`, each
/// `[models."name/model"] effort`, the top-level `effort`. A `MAGI_EFFORT` that names
/// no effort is an error naming the variable and the values it takes.
pub(crate) fn default_efforts(
    name: &str,
    settings: &Settings,
    env: &Env,
) -> Result<DefaultEfforts, ConfigError> {
    let from_env = match env.get(EFFORT_ENV) {
        None => None,
        Some(word) => Some(
            serde_json::from_value::<Effort>(serde_json::Value::String(word.trim().to_owned()))
                .map_err(|_| {
                    ConfigError::Invalid(format!(
                        "{EFFORT_ENV}={word:?} is not an effort: set it to default, low, \
                         medium, high, xhigh or max, or unset it"
                    ))
                })?,
        ),
    };
    let prefix = format!("{name}/");
    let models = settings
        .models
        .iter()
        .filter_map(|(key, model)| Some((key.strip_prefix(&prefix)?.to_owned(), model.effort?)))
        .collect();
    Ok(DefaultEfforts {
        env: from_env,
        models,
        global: settings.effort,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_wins_and_a_word_that_is_no_effort_is_refused_by_name() {
        let mut settings = Settings {
            effort: Some(Effort::Medium),
            ..Settings::default()
        };
        settings.models.insert(
            "p/m".into(),
            crate::ModelSettings {
                effort: Some(Effort::High),
                ..Default::default()
            },
        );
        let none = Env::from_pairs(Vec::<(&str, &str)>::new());
        let defaults = default_efforts("p", &settings, &none).unwrap();
        assert_eq!(defaults.of("m"), Some(Effort::High));
        assert_eq!(defaults.of("other"), Some(Effort::Medium));
        // Another provider's model setting is not this one's.
        assert_eq!(
            default_efforts("q", &settings, &none).unwrap().of("m"),
            Some(Effort::Medium)
        );
        let low = Env::from_pairs([(EFFORT_ENV, "low")]);
        assert_eq!(
            default_efforts("p", &settings, &low).unwrap().of("m"),
            Some(Effort::Low)
        );
        let bad = Env::from_pairs([(EFFORT_ENV, "hgh")]);
        let Err(ConfigError::Invalid(why)) = default_efforts("p", &settings, &bad) else {
            panic!("a word that is no effort passed");
        };
        assert!(
            why.starts_with("MAGI_EFFORT=\"hgh\" is not an effort"),
            "{why}"
        );
    }
}
