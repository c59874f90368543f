//! The model picker: the choices of `model.catalog`, the current selection at the top,
//! why choices are missing (from `model.catalog.status`) with `r` to fetch the model
//! lists, and, for a model with effort levels, a second choice of its effort. Under
//! them, the models the fetched lists hold that are not enabled yet (listed by
//! `model.cached`: `model.catalog` lists enabled models only): Enter enables one in the
//! global settings and switches to it, `d` also makes it the default.

use magi_protocol::messages::{
    AuthenticationState, Availability, CacheState, CatalogChoice, Effort, EffortRequest,
    EffortSupport, ProviderCatalogStatus, SelectionStatus,
};
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::{Anchor, Request, Step, View};

/// Rows a PageUp or PageDown moves.
const PAGE: usize = 10;

/// A switch the person chose: what `selection.set` is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::tui) struct Choice {
    /// The catalog revision the choice came from; `None` for a typed `/model p/m`,
    /// which takes a fresh one.
    pub(super) catalog_revision: Option<String>,
    pub(super) provider: String,
    pub(super) model: String,
    pub(super) effort: EffortRequest,
}

/// The catalog as read for the picker: every page of one revision.
#[derive(Default)]
pub(super) struct Catalog {
    pub(super) revision: String,
    pub(super) choices: Vec<CatalogChoice>,
    /// Said in words: notices, an unfinished paging.
    pub(super) notes: Vec<String>,
}

/// A model a fetched list holds that the settings do not enable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fetched {
    pub(super) provider: String,
    pub(super) model: String,
    pub(super) name: Option<String>,
}

/// The picker's state.
pub(in crate::tui) struct ModelPicker {
    catalog: Catalog,
    /// Fetched models not enabled, listed after the choices.
    fetched: Vec<Fetched>,
    current: Option<SelectionStatus>,
    /// Why choices are missing or unavailable, in words.
    reasons: Vec<String>,
    /// The providers `r` fetches the model lists of.
    refreshable: Vec<String>,
    selected: usize,
    /// The model chosen and the effort under the cursor, while its effort is chosen.
    effort: Option<(usize, usize)>,
}

impl ModelPicker {
    #[cfg(test)]
    pub(super) fn new(
        catalog: Catalog,
        current: Option<SelectionStatus>,
        providers: &[ProviderCatalogStatus],
    ) -> ModelPicker {
        ModelPicker::with_fetched(catalog, current, providers, Vec::new())
    }

    /// The picker with `fetched`, the models fetched lists hold (those the catalog
    /// already offers are left out).
    pub(super) fn with_fetched(
        catalog: Catalog,
        current: Option<SelectionStatus>,
        providers: &[ProviderCatalogStatus],
        mut fetched: Vec<Fetched>,
    ) -> ModelPicker {
        fetched.retain(|f| {
            !catalog
                .choices
                .iter()
                .any(|c| c.provider == f.provider && c.model == f.model)
        });
        let provider = current.as_ref().and_then(|s| s.provider.clone());
        let mut refreshable: Vec<String> = providers
            .iter()
            .filter(|p| needs_refresh(p))
            .map(|p| p.provider.clone())
            .collect();
        if refreshable.is_empty() {
            refreshable.extend(provider.clone());
        }
        // Only providers the person uses are worth a word: those with enabled models
        // and the current one.
        let relevant = |p: &&ProviderCatalogStatus| {
            p.enabled_models > 0 || Some(&p.provider) == provider.as_ref()
        };
        let reasons: Vec<String> = providers
            .iter()
            .filter(relevant)
            .flat_map(|p| {
                // A list never fetched lacks the enabled models too; once is enough.
                let no_cache = p.cache != CacheState::Ready;
                p.reasons
                    .iter()
                    .filter(move |r| !(no_cache && *r == "enabled_model_not_cached"))
                    .map(|r| reason(&p.provider, r, refreshable.contains(&p.provider)))
            })
            .collect();
        let mut catalog = catalog;
        if !reasons.is_empty() {
            // The reasons say it provider by provider.
            catalog
                .notes
                .retain(|n| n != &notice("provider_catalog_unavailable"));
        }
        let selected = current
            .as_ref()
            .and_then(|s| {
                catalog.choices.iter().position(|c| {
                    Some(&c.provider) == s.provider.as_ref() && Some(&c.model) == s.model.as_ref()
                })
            })
            .unwrap_or(0);
        ModelPicker {
            catalog,
            fetched,
            current,
            reasons,
            refreshable,
            selected,
            effort: None,
        }
    }

    pub(super) fn hint(&self) -> &'static str {
        if self.effort.is_some() {
            " effort: Up/Down choose · Enter switch · Esc back "
        } else {
            " models: Up/Down choose · Enter switch · d default · r fetch lists · Esc close "
        }
    }

    pub(super) fn key(&mut self, key: KeyEvent) -> Step {
        if let Some((model, cursor)) = self.effort {
            let efforts = self.efforts(model);
            let last = efforts.len().saturating_sub(1);
            match key.code {
                KeyCode::Esc => self.effort = None,
                KeyCode::Up => self.effort = Some((model, cursor.saturating_sub(1))),
                KeyCode::Down => self.effort = Some((model, (cursor + 1).min(last))),
                KeyCode::Enter => {
                    if let Some(effort) = efforts.get(cursor) {
                        return Step::Do(Request::Select(self.choice(model, request(*effort))));
                    }
                }
                _ => {}
            }
            return Step::Stay;
        }
        let last = (self.catalog.choices.len() + self.fetched.len()).saturating_sub(1);
        // Past the choices: a fetched model, enabled once picked.
        if let Some(fetched) = self.selected.checked_sub(self.catalog.choices.len())
            && let Some(fetched) = self.fetched.get(fetched)
            && matches!(key.code, KeyCode::Enter | KeyCode::Char('d'))
        {
            return Step::Do(Request::Enable {
                provider: fetched.provider.clone(),
                model: fetched.model.clone(),
                default: key.code == KeyCode::Char('d'),
            });
        }
        match key.code {
            KeyCode::Esc => return Step::Close,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(PAGE),
            KeyCode::PageDown => self.selected = (self.selected + PAGE).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Char('r') if !self.refreshable.is_empty() => {
                return Step::Do(Request::Refresh(self.refreshable.clone()));
            }
            // An enabled model made the default selection too.
            KeyCode::Char('d') => {
                if let Some(choice) = self.catalog.choices.get(self.selected) {
                    return Step::Do(Request::Enable {
                        provider: choice.provider.clone(),
                        model: choice.model.clone(),
                        default: true,
                    });
                }
            }
            KeyCode::Enter => {
                let Some(choice) = self.catalog.choices.get(self.selected) else {
                    return Step::Stay;
                };
                if self.efforts(self.selected).len() > 1 {
                    let now = self.current.as_ref().map(|s| s.requested_effort);
                    let at = self
                        .efforts(self.selected)
                        .iter()
                        .position(|e| Some(*e) == now)
                        .unwrap_or(0);
                    self.effort = Some((self.selected, at));
                    return Step::Stay;
                }
                // Nothing to choose: keep the effort asked for when this model takes
                // it, else ask for none, rather than be refused for the old one.
                let keep = self
                    .current
                    .as_ref()
                    .is_some_and(|s| choice.permitted_efforts.contains(&s.requested_effort));
                let effort = if keep {
                    EffortRequest::Keep
                } else {
                    EffortRequest::Default
                };
                return Step::Do(Request::Select(self.choice(self.selected, effort)));
            }
            _ => {}
        }
        Step::Stay
    }

    /// The efforts a person can choose for a choice: none unless it has levels.
    fn efforts(&self, at: usize) -> Vec<Effort> {
        match self.catalog.choices.get(at) {
            Some(c) if c.effort_support == EffortSupport::Supported => c.permitted_efforts.clone(),
            _ => Vec::new(),
        }
    }

    fn choice(&self, at: usize, effort: EffortRequest) -> Choice {
        let (provider, model) = self
            .catalog
            .choices
            .get(at)
            .map(|c| (c.provider.clone(), c.model.clone()))
            .unwrap_or_default();
        Choice {
            catalog_revision: Some(self.catalog.revision.clone()),
            provider,
            model,
            effort,
        }
    }

    pub(super) fn view(&self) -> View {
        let cyan = Style::default().fg(Color::Cyan);
        let yellow = Style::default().fg(Color::Yellow);
        let mut lines = vec![Line::from(Span::styled(
            format!("Current: {}", current(self.current.as_ref())),
            cyan,
        ))];
        for note in self.reasons.iter().chain(&self.catalog.notes) {
            lines.push(Line::from(Span::styled(note.clone(), yellow)));
        }
        if !self.refreshable.is_empty() {
            lines.push(Line::from(Span::styled(
                format!(
                    "r fetches the model list of {}",
                    self.refreshable.join(", ")
                ),
                Style::default().fg(Color::DarkGray),
            )));
        }
        if let Some((model, cursor)) = self.effort {
            let name = self
                .catalog
                .choices
                .get(model)
                .map(|c| format!("{}/{}", c.provider, c.model))
                .unwrap_or_default();
            lines.push(Line::from(Span::styled(
                format!("Effort for {name}:"),
                cyan,
            )));
            let header = lines.len();
            for (n, effort) in self.efforts(model).into_iter().enumerate() {
                let text = match effort {
                    Effort::Default => "default (no explicit effort)".to_owned(),
                    other => other.as_str().to_owned(),
                };
                lines.push(row(text, n == cursor));
            }
            return View {
                title: "Model".to_owned(),
                lines,
                anchor: Anchor::Focus(header + cursor),
            };
        }
        if self.catalog.choices.is_empty() && self.fetched.is_empty() {
            lines.push(Line::from(
                "No model to choose from yet: r fetches the provider's model list; a model \
                 picked from it is enabled in settings ([providers.catalog] enabled).",
            ));
        }
        let header = lines.len();
        let mut focus = header + self.selected;
        for (n, choice) in self.catalog.choices.iter().enumerate() {
            lines.push(row(self.describe(choice), n == self.selected));
        }
        if !self.fetched.is_empty() {
            lines.push(Line::from(Span::styled(
                "Fetched, not enabled yet (Enter enables one in your settings and switches \
                 to it; d makes it the default too):",
                cyan,
            )));
            if self.selected >= self.catalog.choices.len() {
                focus += 1;
            }
            let first = self.catalog.choices.len();
            for (n, fetched) in self.fetched.iter().enumerate() {
                let mut text = format!("{}/{}", fetched.provider, fetched.model);
                if let Some(name) = fetched.name.as_ref().filter(|n| **n != fetched.model) {
                    text.push_str(&format!(" ({name})"));
                }
                lines.push(row(text, first + n == self.selected));
            }
        }
        View {
            title: "Model".to_owned(),
            lines,
            anchor: Anchor::Focus(focus),
        }
    }

    fn describe(&self, choice: &CatalogChoice) -> String {
        let mut text = format!("{}/{}", choice.provider, choice.model);
        if let Some(name) = &choice.model_name
            && name != &choice.model
        {
            text.push_str(&format!(" ({name})"));
        }
        if choice.effort_support == EffortSupport::Supported && choice.permitted_efforts.len() > 1 {
            text.push_str(" · effort levels");
        }
        if choice.availability == Availability::AuthenticationUnavailable {
            text.push_str(" · no credential");
        }
        let is_current = self.current.as_ref().is_some_and(|s| {
            s.provider.as_ref() == Some(&choice.provider) && s.model.as_ref() == Some(&choice.model)
        });
        if is_current {
            text.push_str(" · current");
        }
        text
    }
}

fn row(text: String, selected: bool) -> Line<'static> {
    if selected {
        Line::from(Span::styled(
            format!("▶ {text}"),
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ))
    } else {
        Line::from(format!("  {text}"))
    }
}

/// The effort request for a chosen effort.
fn request(effort: Effort) -> EffortRequest {
    match effort {
        Effort::Default => EffortRequest::Default,
        value => EffortRequest::Set { value },
    }
}

/// The current selection in words: `provider/model · effort high`.
pub(super) fn current(selection: Option<&SelectionStatus>) -> String {
    let Some(s) = selection else {
        return "unknown".to_owned();
    };
    let mut text = format!(
        "{}/{}",
        s.provider.as_deref().unwrap_or("unknown"),
        s.model.as_deref().unwrap_or("unknown")
    );
    match (s.effort_support, s.effective_effort) {
        (EffortSupport::Supported, Some(effort)) => {
            text.push_str(&format!(" · effort {}", effort.as_str()));
        }
        (EffortSupport::Unsupported, _) => text.push_str(" · no effort levels"),
        _ => {}
    }
    if s.requested_effort != Effort::Default && s.effective_effort != Some(s.requested_effort) {
        text.push_str(&format!(" (asked for {})", s.requested_effort.as_str()));
    }
    text
}

/// Whether fetching a provider's model list could add choices.
fn needs_refresh(p: &ProviderCatalogStatus) -> bool {
    let cache_short =
        p.cache != CacheState::Ready || p.reasons.iter().any(|r| r == "enabled_model_not_cached");
    // Without its credential a fetch can only fail.
    p.enabled_models > 0
        && cache_short
        && p.authentication != AuthenticationState::Unavailable
        && !p.reasons.iter().any(|r| r == "provider_not_configured")
}

/// A `model.catalog.status` reason in words; `fetchable` when `r` fetches its list.
fn reason(provider: &str, code: &str, fetchable: bool) -> String {
    let r = if fetchable { " (r fetches it)" } else { "" };
    let said = match code {
        "cache_missing" => format!("its model list was never fetched{r}"),
        "cache_invalid" => format!("its saved model list is unreadable{r}"),
        "cache_empty" => "its saved model list is empty".to_owned(),
        "authentication_unavailable" if provider == "codex" => {
            "it is not signed in to ChatGPT (magi-code login codex)".to_owned()
        }
        "authentication_unavailable" => "its credential is missing".to_owned(),
        "no_enabled_models" => format!(
            "none of its models is enabled yet (pick one its fetched list holds, or add \
             \"{provider}/<model>\" to [providers.catalog] enabled in settings)"
        ),
        "enabled_model_not_cached" => {
            format!("an enabled model is not in its saved model list{r}")
        }
        "provider_not_configured" => {
            "named in [providers.catalog] enabled but not defined in settings".to_owned()
        }
        other => other.to_owned(),
    };
    format!("{provider}: {said}")
}

/// A `model.catalog` notice in words.
pub(super) fn notice(code: &str) -> String {
    match code {
        "provider_catalog_unavailable" => {
            "a provider's saved model list is missing, unreadable or empty".to_owned()
        }
        "catalog_entries_omitted_unsafe" => {
            "some models are not shown: their names look like secrets or hold control \
             characters"
                .to_owned()
        }
        other => format!("note: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(provider: &str, model: &str, efforts: &[Effort]) -> CatalogChoice {
        CatalogChoice {
            selection_id: "0".repeat(64),
            provider: provider.to_owned(),
            model: model.to_owned(),
            provider_name: None,
            model_name: None,
            availability: Availability::Available,
            effort_support: if efforts.len() > 1 {
                EffortSupport::Supported
            } else {
                EffortSupport::Unsupported
            },
            permitted_efforts: efforts.to_vec(),
        }
    }

    fn selection(provider: &str, model: &str, effort: Effort) -> SelectionStatus {
        SelectionStatus {
            revision: "r1".into(),
            provider: Some(provider.into()),
            model: Some(model.into()),
            requested_effort: effort,
            effective_effort: Some(effort),
            effort_support: EffortSupport::Supported,
            permitted_efforts: vec![Effort::Default, effort],
        }
    }

    fn picker(current: SelectionStatus) -> ModelPicker {
        let catalog = Catalog {
            revision: "cat1".into(),
            choices: vec![
                choice("openai", "gpt-4.1", &[Effort::Default]),
                choice(
                    "openai",
                    "o3",
                    &[Effort::Default, Effort::Low, Effort::High],
                ),
            ],
            notes: Vec::new(),
        };
        ModelPicker::new(catalog, Some(current), &[])
    }

    fn press(picker: &mut ModelPicker, code: KeyCode) -> Step {
        picker.key(KeyEvent::from(code))
    }

    fn selected(step: Step) -> Choice {
        match step {
            Step::Do(Request::Select(choice)) => choice,
            _ => panic!("no switch"),
        }
    }

    #[test]
    fn a_model_with_effort_levels_asks_for_one_then_switches() {
        let mut picker = picker(selection("openai", "gpt-4.1", Effort::Default));
        assert_eq!(picker.selected, 0, "the current model is under the cursor");
        press(&mut picker, KeyCode::Down);
        assert!(matches!(press(&mut picker, KeyCode::Enter), Step::Stay));
        press(&mut picker, KeyCode::Down);
        press(&mut picker, KeyCode::Down);
        let choice = selected(press(&mut picker, KeyCode::Enter));
        assert_eq!(
            choice,
            Choice {
                catalog_revision: Some("cat1".into()),
                provider: "openai".into(),
                model: "o3".into(),
                effort: EffortRequest::Set {
                    value: Effort::High
                },
            }
        );
    }

    #[test]
    fn a_model_without_levels_keeps_the_effort_only_where_it_applies() {
        let mut picker = picker(selection("openai", "o3", Effort::High));
        assert_eq!(picker.selected, 1);
        press(&mut picker, KeyCode::Up);
        let choice = selected(press(&mut picker, KeyCode::Enter));
        assert_eq!(choice.model, "gpt-4.1");
        assert_eq!(choice.effort, EffortRequest::Default);
        let mut picker = picker_with_default();
        let choice = selected(press(&mut picker, KeyCode::Enter));
        assert_eq!(choice.effort, EffortRequest::Keep);
    }

    fn picker_with_default() -> ModelPicker {
        picker(selection("openai", "gpt-4.1", Effort::Default))
    }

    #[test]
    fn reasons_are_said_and_say_what_to_do() {
        let status = |provider: &str, cache, enabled, reasons: &[&str]| ProviderCatalogStatus {
            provider: provider.into(),
            cache,
            authentication: AuthenticationState::Available,
            enabled_models: enabled,
            cached_models: 0,
            reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
        };
        let providers = [
            status(
                "anthropic",
                CacheState::Missing,
                0,
                &["cache_missing", "no_enabled_models"],
            ),
            status(
                "openai",
                CacheState::Missing,
                0,
                &["cache_missing", "no_enabled_models"],
            ),
            status(
                "openai-chat",
                CacheState::Missing,
                1,
                &["cache_missing", "enabled_model_not_cached"],
            ),
        ];
        let catalog = Catalog {
            revision: "cat1".into(),
            choices: Vec::new(),
            notes: vec![notice("provider_catalog_unavailable")],
        };
        let mut current = selection("openai", "gpt-4.1", Effort::Default);
        current.effort_support = EffortSupport::Unknown;
        let picker = ModelPicker::new(catalog, Some(current), &providers);
        assert_eq!(picker.refreshable, ["openai-chat"]);
        let text: Vec<String> = picker
            .view()
            .lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(
            text[..5],
            [
                "Current: openai/gpt-4.1",
                "openai: its model list was never fetched",
                "openai: none of its models is enabled yet (pick one its fetched list \
                 holds, or add \"openai/<model>\" to [providers.catalog] enabled in settings)",
                "openai-chat: its model list was never fetched (r fetches it)",
                "r fetches the model list of openai-chat",
            ]
        );
        assert!(text.iter().all(|l| !l.starts_with("anthropic")), "{text:?}");
    }

    #[test]
    fn the_current_selection_is_said_with_its_effort() {
        let mut s = selection("openai", "o3", Effort::High);
        assert_eq!(current(Some(&s)), "openai/o3 · effort high");
        s.effective_effort = None;
        s.effort_support = EffortSupport::Unsupported;
        assert_eq!(
            current(Some(&s)),
            "openai/o3 · no effort levels (asked for high)"
        );
        assert_eq!(current(None), "unknown");
    }
}
