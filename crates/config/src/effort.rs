//! Reasoning effort: the values the protocol names, the built-in profiles that say which
//! a model accepts and how the backend sends one, and the default effort the settings
//! give where a selection asks for none.
//!
//! A profile is this backend's own policy, not a guess at a provider's remote default:
//! a model gets an explicit effort only where the backend sends one.
//!
//! - OpenAI's reasoning models (the `o` series and `gpt-5`) take `reasoning.effort`
//!   low, medium or high over the Responses API, and their encrypted reasoning is asked
//!   for and sent back whatever the effort.
//! - Anthropic's models that think: the Claude 4.6 generation and later (and Opus 4.7
//!   and later, which take nothing else) think adaptively, the effort sent as
//!   `output_config.effort` (low to max, and xhigh from Opus 4.7); Claude 3.7 Sonnet
//!   and the Claude 4 models before 4.6 think within a token budget the effort chooses
//!   (low, medium, high). Without an effort they do not think, as the API's default.
//! - An OpenAI-compatible Chat Completions server's models take `reasoning_effort` low,
//!   medium or high when its provider's settings say so (`reasoning_effort = true`);
//!   otherwise nothing is known of them (`unknown`).
//! - Every other model of a known hosted provider takes none (`unsupported`).
//!
//! `default` (no override) is always permitted.

pub use magi_protocol::messages::{Effort, EffortSupport};

use crate::provider::ProviderDefinition;
use crate::provider_kind::ProviderKind;

/// How the backend sends a model its effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffortControl {
    /// It sends none.
    None,
    /// OpenAI Responses `reasoning.effort`, with the model's encrypted reasoning kept.
    Responses,
    /// Chat Completions `reasoning_effort`.
    Chat,
    /// Anthropic `thinking` of `type: "enabled"` with a budget of tokens.
    AnthropicBudget,
    /// Anthropic `thinking` of `type: "adaptive"` with `output_config.effort`.
    AnthropicAdaptive,
}

/// What a model accepts: its support, the efforts a selection may request and how the
/// backend sends them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffortProfile {
    /// Whether effort can be controlled.
    pub support: EffortSupport,
    /// The permitted requests, `default` first.
    pub permitted: Vec<Effort>,
    /// How an effort is sent.
    pub control: EffortControl,
}

impl EffortProfile {
    /// The effort a request resolves to: the requested one when supported and
    /// permitted; for `default`, the configured `fallback` when there is one and it is
    /// permitted, else `default`; none (null) when effort is unsupported or unknown.
    pub fn effective(&self, requested: Effort, fallback: Option<Effort>) -> Option<Effort> {
        match self.support {
            EffortSupport::Supported if requested == Effort::Default => Some(
                fallback
                    .filter(|effort| self.permitted.contains(effort))
                    .unwrap_or(Effort::Default),
            ),
            EffortSupport::Supported if self.permitted.contains(&requested) => Some(requested),
            EffortSupport::Supported => Some(Effort::Default),
            EffortSupport::Unsupported | EffortSupport::Unknown => None,
        }
    }
}

/// The built-in profile of `model` at `provider`.
pub fn profile(provider: &ProviderDefinition, model: &str) -> EffortProfile {
    let supported = |permitted: &[Effort], control| EffortProfile {
        support: EffortSupport::Supported,
        permitted: permitted.to_vec(),
        control,
    };
    let none = |support| EffortProfile {
        support,
        permitted: vec![Effort::Default],
        control: EffortControl::None,
    };
    match provider.kind {
        ProviderKind::OpenAi if openai_reasoning(model) => {
            supported(&LOW_TO_HIGH, EffortControl::Responses)
        }
        ProviderKind::OpenAi => none(EffortSupport::Unsupported),
        // Every model ChatGPT's Codex backend serves reasons.
        ProviderKind::Codex => supported(&LOW_TO_HIGH, EffortControl::Responses),
        ProviderKind::Anthropic => match claude_thinking(model) {
            Some(Thinking::Adaptive { xhigh }) => {
                let mut permitted = LOW_TO_HIGH.to_vec();
                if xhigh {
                    permitted.push(Effort::Xhigh);
                }
                permitted.push(Effort::Max);
                supported(&permitted, EffortControl::AnthropicAdaptive)
            }
            Some(Thinking::Budget) => supported(&LOW_TO_HIGH, EffortControl::AnthropicBudget),
            None => none(EffortSupport::Unsupported),
        },
        ProviderKind::OpenAiChat if provider.reasoning_effort => {
            supported(&LOW_TO_HIGH, EffortControl::Chat)
        }
        ProviderKind::OpenAiChat => none(EffortSupport::Unknown),
    }
}

/// The efforts of most models that take one, `default` first.
const LOW_TO_HIGH: [Effort; 4] = [Effort::Default, Effort::Low, Effort::Medium, Effort::High];

/// Whether an OpenAI model is one of its reasoning models: `o1`, `o3`, `o4` and
/// `gpt-5`, alone or followed by `-` (`o3-mini`, `gpt-5-codex`), and `gpt-5` followed by
/// `.` (`gpt-5.1`).
fn openai_reasoning(model: &str) -> bool {
    let dashed = ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|family| model == *family || model.starts_with(&format!("{family}-")));
    dashed || model.starts_with("gpt-5.")
}

/// How a Claude model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Thinking {
    /// Within a budget of tokens.
    Budget,
    /// Adaptively; `xhigh` among its efforts.
    Adaptive { xhigh: bool },
}

/// How a Claude model thinks, from its ID (`claude-<family>-<major>[-<minor>][-<date>]`,
/// or the older `claude-<major>-<minor>-<family>[-<date>]`); none for one that does not.
fn claude_thinking(model: &str) -> Option<Thinking> {
    let rest = model.strip_prefix("claude-")?;
    let parts: Vec<&str> = rest.split('-').collect();
    let number = |part: Option<&&str>| -> Option<u32> {
        // A date (`20250514`) is no version number.
        part.filter(|p| p.len() <= 2).and_then(|p| p.parse().ok())
    };
    let (family, major, minor) = match parts.first().and_then(|p| p.parse::<u32>().ok()) {
        // `claude-3-7-sonnet`.
        Some(major) => {
            let minor = number(parts.get(1))?;
            (*parts.get(2)?, major, minor)
        }
        // `claude-sonnet-4-5`, `claude-opus-4`.
        None => (
            *parts.first()?,
            number(parts.get(1))?,
            number(parts.get(2)).unwrap_or(0),
        ),
    };
    let version = (major, minor);
    match family {
        "opus" | "sonnet" if version >= (4, 6) => Some(Thinking::Adaptive {
            xhigh: family == "opus" && version >= (4, 7),
        }),
        _ if major >= 5 => Some(Thinking::Adaptive { xhigh: false }),
        "opus" | "sonnet" if major == 4 => Some(Thinking::Budget),
        "sonnet" if version == (3, 7) => Some(Thinking::Budget),
        "haiku" if version >= (4, 5) => Some(Thinking::Budget),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::default_effort::DefaultEfforts;
    use crate::provider::Credential;

    fn provider(kind: ProviderKind, reasoning_effort: bool) -> ProviderDefinition {
        ProviderDefinition {
            name: "p".into(),
            kind,
            base_url: "http://127.0.0.1:9".into(),
            credential: Credential::None,
            reasoning_summaries: false,
            reasoning_effort,
            default_efforts: DefaultEfforts::default(),
            concurrent_requests: false,
        }
    }

    #[test]
    fn profiles_follow_what_the_backend_sends() {
        let openai = provider(ProviderKind::OpenAi, false);
        let o3 = profile(&openai, "o3-mini");
        assert_eq!(o3.support, EffortSupport::Supported);
        assert_eq!(o3.control, EffortControl::Responses);
        assert_eq!(o3.effective(Effort::High, None), Some(Effort::High));
        assert_eq!(o3.effective(Effort::Max, None), Some(Effort::Default));
        assert_eq!(
            profile(&openai, "gpt-5.1").control,
            EffortControl::Responses
        );
        let gpt4 = profile(&openai, "gpt-4.1");
        assert_eq!(gpt4.support, EffortSupport::Unsupported);
        assert_eq!(gpt4.permitted, vec![Effort::Default]);
        assert_eq!(gpt4.effective(Effort::Default, Some(Effort::High)), None);
        assert_eq!(
            profile(&openai, "o30-lookalike").support,
            EffortSupport::Unsupported
        );
        let chat = provider(ProviderKind::OpenAiChat, false);
        assert_eq!(profile(&chat, "qwen").support, EffortSupport::Unknown);
        let chat_effort = provider(ProviderKind::OpenAiChat, true);
        let qwen = profile(&chat_effort, "qwen");
        assert_eq!(qwen.support, EffortSupport::Supported);
        assert_eq!(qwen.control, EffortControl::Chat);
        assert_eq!(qwen.permitted.len(), 4);
    }

    #[test]
    fn claude_models_think_adaptively_from_4_6_within_a_budget_before() {
        let anthropic = provider(ProviderKind::Anthropic, false);
        let control = |model: &str| profile(&anthropic, model).control;
        for model in [
            "claude-opus-4-7",
            "claude-opus-4-6",
            "claude-sonnet-4-6",
            "claude-sonnet-4-6-20260101",
            "claude-opus-5",
        ] {
            assert_eq!(control(model), EffortControl::AnthropicAdaptive, "{model}");
        }
        for model in [
            "claude-sonnet-4-5",
            "claude-sonnet-4-20250514",
            "claude-opus-4-1-20250805",
            "claude-opus-4-5",
            "claude-3-7-sonnet-20250219",
            "claude-haiku-4-5",
        ] {
            assert_eq!(control(model), EffortControl::AnthropicBudget, "{model}");
        }
        for model in [
            "claude-3-5-haiku-latest",
            "claude-3-haiku-20240307",
            "gpt-4o",
        ] {
            let unsupported = profile(&anthropic, model);
            assert_eq!(unsupported.control, EffortControl::None, "{model}");
            assert_eq!(unsupported.support, EffortSupport::Unsupported, "{model}");
        }
        // Opus 4.7 adds xhigh; every adaptive model takes max; budgets stop at high.
        assert!(
            profile(&anthropic, "claude-opus-4-7")
                .permitted
                .contains(&Effort::Xhigh)
        );
        assert!(
            !profile(&anthropic, "claude-sonnet-4-6")
                .permitted
                .contains(&Effort::Xhigh)
        );
        assert!(
            profile(&anthropic, "claude-sonnet-4-6")
                .permitted
                .contains(&Effort::Max)
        );
        assert!(
            !profile(&anthropic, "claude-sonnet-4-5")
                .permitted
                .contains(&Effort::Max)
        );
    }

    #[test]
    fn a_configured_default_applies_where_the_selection_asks_none_and_it_is_permitted() {
        let defaults = DefaultEfforts {
            env: None,
            models: BTreeMap::from([("claude-opus-4-7".to_owned(), Effort::Xhigh)]),
            global: Some(Effort::Medium),
        };
        assert_eq!(defaults.of("claude-opus-4-7"), Some(Effort::Xhigh));
        assert_eq!(defaults.of("other"), Some(Effort::Medium));
        let env = DefaultEfforts {
            env: Some(Effort::Low),
            ..defaults.clone()
        };
        assert_eq!(env.of("claude-opus-4-7"), Some(Effort::Low));
        let anthropic = provider(ProviderKind::Anthropic, false);
        let budget = profile(&anthropic, "claude-sonnet-4-5");
        // The selection's own effort wins; a default the model does not take is not used.
        assert_eq!(
            budget.effective(Effort::High, Some(Effort::Low)),
            Some(Effort::High)
        );
        assert_eq!(
            budget.effective(Effort::Default, Some(Effort::Low)),
            Some(Effort::Low)
        );
        assert_eq!(
            budget.effective(Effort::Default, Some(Effort::Xhigh)),
            Some(Effort::Default)
        );
    }
}
