//! The model selection of the attached session (`selection.set`, and the saved one
//! restored after an open) and the model catalog it chooses from (`model.refresh`,
//! `model.catalog`, `model.catalog.status`, and `model.cached` for a provider's whole
//! cached list).

use magi_config::{
    Credential, Env, Settings, effort_profile, provider_definition, provider_names, read_credential,
};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    Availability, CatalogStatusParams, CatalogStatusResult, Effort, EffortRequest,
    ModelCachedParams, ModelCachedResult, ModelCatalogParams, ModelCatalogResult,
    ModelRefreshParams, ModelRefreshResult, SelectionScope, SelectionSetParams, SelectionSetResult,
};
use magi_protocol::names::{is_valid_name, is_valid_session_id};
use magi_store::Home;
use magi_store::catalog::{CachedLimits, CachedModel, ProviderCache, write_cache};
use magi_store::records::RecordBody;

use super::Sessions;
use crate::catalog::CatalogInputs;
use crate::selection::{ActiveSelection, fresh_revision};

/// `selection.set` notice: the selection is durable, its history projection is not.
const NOTICE_HISTORY_UNAVAILABLE: &str = "history_unavailable";
/// `session.open` notice: the saved selection cannot be restored now.
const NOTICE_SAVED_SELECTION_UNAVAILABLE: &str = "saved_selection_unavailable";

impl Sessions {
    /// Checks `selection.set` params beyond their shape, before any state: the session
    /// ID and revision grammars, and provider and model of 1 to 256 bytes without
    /// control characters.
    pub fn check_selection_params(params: &SelectionSetParams) -> Result<(), ErrorCode> {
        let text_ok = |t: &str| {
            !t.is_empty()
                && t.len() <= magi_protocol::limits::CATALOG_STRING_BYTES
                && !magi_protocol::text::has_control(t)
        };
        let ok = is_valid_session_id(&params.session_id)
            && is_valid_name(&params.selection_revision)
            && is_valid_name(&params.catalog_revision)
            && text_ok(&params.provider)
            && text_ok(&params.model);
        if ok {
            Ok(())
        } else {
            Err(ErrorCode::InvalidParams)
        }
    }

    /// `selection.set`: validates the whole request (attachment, both revisions, the
    /// choice, its authentication and the effort) against a second catalog scan before
    /// anything is written, appends one `session_preferences` record, and returns the
    /// result with the new selection. Nothing is written on any refusal.
    pub fn select(
        &mut self,
        params: &SelectionSetParams,
        current: &ActiveSelection,
    ) -> Result<(SelectionSetResult, ActiveSelection), ErrorCode> {
        let attachment = self.attachment.as_ref().ok_or(ErrorCode::SessionMissing)?;
        if attachment.session_id != params.session_id {
            return Err(ErrorCode::StaleSession);
        }
        if params.selection_revision != current.revision {
            return Err(ErrorCode::StaleSelection);
        }
        if self.catalog.revision() != Some(params.catalog_revision.as_str()) {
            return Err(ErrorCode::StaleCatalog);
        }
        let inputs = catalog_inputs(&self.home, self.admitted.as_ref(), &current.provider.name)?;
        if !self.catalog.recheck(&inputs) {
            return Err(ErrorCode::StaleCatalog);
        }
        let choice = self
            .catalog
            .choice(&params.provider, &params.model)
            .ok_or(ErrorCode::SelectionInvalid)?;
        if choice.availability != Availability::Available {
            return Err(ErrorCode::ProviderUnavailable);
        }
        let definition = provider_definition(&params.provider, inputs.settings, inputs.env)
            .map_err(|_| ErrorCode::SelectionInvalid)?;
        let requested = match params.effort.unwrap_or(EffortRequest::Keep) {
            EffortRequest::Keep => current.requested_effort,
            EffortRequest::Default => Effort::Default,
            EffortRequest::Set { value } => value,
        };
        if !effort_profile(&definition, &params.model)
            .permitted
            .contains(&requested)
        {
            return Err(ErrorCode::EffortUnsupported);
        }
        // The second look, right before anything is written.
        if !self.catalog.recheck(&inputs) {
            return Err(ErrorCode::StaleCatalog);
        }
        let record = RecordBody::SessionPreferences {
            provider: params.provider.clone(),
            model: params.model.clone(),
            effort: Some(requested.as_str().to_owned()),
        };
        self.append(record)
            .map_err(|_| ErrorCode::PersistenceFailed)?;
        let selection = ActiveSelection {
            provider: definition,
            model: params.model.clone(),
            requested_effort: requested,
            revision: fresh_revision(),
        };
        let (history_revision, notices) = match self.refresh() {
            Ok((revision, _)) => (Some(revision), Vec::new()),
            Err(_) => (None, vec![NOTICE_HISTORY_UNAVAILABLE.to_owned()]),
        };
        let result = SelectionSetResult {
            session_id: params.session_id.clone(),
            selection: selection.status(),
            catalog_revision: params.catalog_revision.clone(),
            scope: SelectionScope::Session,
            durable: true,
            history_revision,
            notices,
        };
        Ok((result, selection))
    }

    /// The selection after an open: the session's saved one when its choice is
    /// available now, else `startup`'s provider and model with the saved requested
    /// effort and the notice `saved_selection_unavailable`. Always a fresh revision.
    pub fn restored_selection(
        &mut self,
        startup: &ActiveSelection,
    ) -> (ActiveSelection, Option<&'static str>) {
        let fresh = ActiveSelection {
            revision: fresh_revision(),
            ..startup.clone()
        };
        let Some(saved) = self.saved_preferences.take() else {
            return (fresh, None);
        };
        let requested = saved.effort;
        let restored = self.admitted.as_ref().and_then(|(settings, env)| {
            let inputs = CatalogInputs {
                home: &self.home,
                settings,
                env,
                selected_provider: &startup.provider.name,
            };
            let scan = crate::catalog::scan(&inputs).ok()?;
            scan.choices
                .iter()
                .find(|c| c.provider == saved.provider && c.model == saved.model)
                .filter(|c| c.availability == Availability::Available)?;
            provider_definition(&saved.provider, settings, env).ok()
        });
        match restored {
            Some(provider) => (
                ActiveSelection {
                    provider,
                    model: saved.model,
                    requested_effort: requested,
                    ..fresh
                },
                None,
            ),
            None => (
                ActiveSelection {
                    requested_effort: requested,
                    ..fresh
                },
                Some(NOTICE_SAVED_SELECTION_UNAVAILABLE),
            ),
        }
    }

    /// `model.refresh`: fetches `params.provider`'s model list with its credential and
    /// replaces its cache atomically. Nothing changes when it fails or is cancelled.
    pub fn refresh_models(
        &mut self,
        params: &ModelRefreshParams,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<ModelRefreshResult, ErrorCode> {
        let (settings, env) = self
            .admitted
            .as_ref()
            .ok_or(ErrorCode::CatalogUnavailable)?;
        if !provider_names(settings).contains(&params.provider) {
            return Err(ErrorCode::SelectionInvalid);
        }
        let definition = provider_definition(&params.provider, settings, env)
            .map_err(|_| ErrorCode::SelectionInvalid)?;
        let api_key = read_credential(&definition.credential, env);
        if api_key.is_none()
            && matches!(
                definition.credential,
                Credential::Env(_) | Credential::File(_)
            )
        {
            return Err(ErrorCode::ProviderUnavailable);
        }
        let sign_in = crate::sign_in::chatgpt_sign_in(self.home.root(), env, &definition)
            .transpose()
            .map_err(|_| ErrorCode::ProviderUnavailable)?;
        let endpoint = magi_provider::Endpoint {
            format: crate::agent::wire_format(definition.kind),
            base_url: definition.base_url.clone(),
            api_key,
        };
        // The worker is a plain thread: the fetch gets its own small runtime.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|_| ErrorCode::ProviderUnavailable)?;
        let listed = match sign_in {
            // A sign-in due for a refresh is refreshed by the fetch, and written back.
            Some((_, sign_in)) => runtime.block_on(magi_provider::list_signed_in_models(
                &endpoint,
                &crate::sign_in::ProviderSignIn(sign_in),
                cancel,
            )),
            None => runtime.block_on(magi_provider::models::list_models(&endpoint, cancel)),
        }
        .map_err(|e| e.error_code())?;
        let cache = ProviderCache {
            provider: params.provider.clone(),
            fetched_at: std::time::SystemTime::now(),
            models: listed
                .into_iter()
                .map(|m| {
                    CachedModel::new(m.id, m.name).with_limits(CachedLimits {
                        context_window: m.limits.context_window,
                        max_output_tokens: m.limits.max_output_tokens,
                        images: m.limits.images,
                    })
                })
                .collect(),
        };
        write_cache(&self.home, &cache).map_err(|_| ErrorCode::CatalogUnavailable)?;
        Ok(ModelRefreshResult {
            provider: params.provider.clone(),
            cached_models: cache.models.len() as u64,
            notices: Vec::new(),
        })
    }

    /// `model.catalog.status`; `selected_provider` is the current selection's provider.
    pub fn catalog_status(
        &self,
        params: &CatalogStatusParams,
        selected_provider: &str,
    ) -> Result<CatalogStatusResult, ErrorCode> {
        let inputs = catalog_inputs(&self.home, self.admitted.as_ref(), selected_provider)?;
        crate::catalog::status(&inputs, params.provider.as_deref())
    }

    /// `model.catalog`; `selected_provider` is the current selection's provider.
    pub fn catalog_page(
        &mut self,
        params: &ModelCatalogParams,
        selected_provider: &str,
    ) -> Result<ModelCatalogResult, ErrorCode> {
        let inputs = catalog_inputs(&self.home, self.admitted.as_ref(), selected_provider)?;
        self.catalog.page(&inputs, params)
    }

    /// `model.cached`: a page of one provider's cached model list.
    pub fn cached_models(
        &mut self,
        params: &ModelCachedParams,
    ) -> Result<ModelCachedResult, ErrorCode> {
        let (settings, _) = self
            .admitted
            .as_ref()
            .ok_or(ErrorCode::CatalogUnavailable)?;
        self.cached.page(&self.home, settings, params)
    }
}

/// What a catalog scan reads, from the admitted configuration this child kept.
fn catalog_inputs<'a>(
    home: &'a Home,
    admitted: Option<&'a (Settings, Env)>,
    selected_provider: &'a str,
) -> Result<CatalogInputs<'a>, ErrorCode> {
    let (settings, env) = admitted.ok_or(ErrorCode::CatalogUnavailable)?;
    Ok(CatalogInputs {
        home,
        settings,
        env,
        selected_provider,
    })
}
