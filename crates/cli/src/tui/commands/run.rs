//! The requests behind each command: the panels they open, the session and model
//! switches, and the two that may take as long as a model request (compaction, a
//! model-list fetch), left in flight while the person goes on.

use magi_client::fold::FoldInput;
use magi_client::{Backend, ClientError};
use magi_protocol::messages::{
    CacheState, CachedModelEntry, CatalogStatusParams, EffortRequest, EmptyParams,
    ModelCachedParams, ModelCatalogParams, ModelRefreshParams, ModelRefreshResult,
    SelectionSetParams, SessionCompactParams, SessionCompactResult, SessionDiscoverParams,
};
use magi_protocol::{ErrorCode, methods};

use super::model::{Catalog, Choice, Fetched, ModelPicker, notice as catalog_notice};
use super::panel::Panel;
use super::sessions::{SessionPicker, notice as discovery_notice};
use super::{Command, Op, Request, copy, show, words};
use crate::tui::App;

/// Most `session.discover` batches read for one picker (64 logs each at most): a
/// directory past that is listed in part, and the picker says so.
const DISCOVER_CALLS: usize = 256;
/// Most `model.catalog` pages read for one picker (the catalog holds at most 2,048
/// models, 100 a page).
const CATALOG_PAGES: usize = 64;
/// Most `model.cached` pages read for one picker, every provider's together (a cache
/// holds at most 2,048 models, up to 100 a page): each page spends one of the child's
/// 4,096 request IDs.
const CACHED_PAGES: usize = 64;

/// The `MC_HOME` this Mission Control and its backends use, found as the backend finds
/// it.
fn settings_home() -> Result<std::path::PathBuf, String> {
    magi_core::home_path(&magi_config::Env::from_process())
}

/// Every page of `provider`'s cached model list (`model.cached`), reading at most
/// `pages` pages, counted off a budget the caller may share between providers; with
/// whether the list was read to its end. A refused page is its code, the models read
/// before it dropped: a later page refused means the list changed meanwhile.
async fn cached(
    backend: &mut Backend,
    provider: &str,
    pages: &mut usize,
) -> Result<Result<(Vec<CachedModelEntry>, bool), ErrorCode>, ClientError> {
    let mut models = Vec::new();
    let mut cursor = None;
    while *pages > 0 {
        *pages -= 1;
        let params = ModelCachedParams {
            provider: provider.to_owned(),
            cursor: cursor.take(),
        };
        let page = match backend.call::<methods::ModelCached>(&params).await? {
            Ok(page) => page,
            Err(code) => return Ok(Err(code)),
        };
        models.extend(page.models);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(Ok((models, true))),
        }
    }
    Ok(Ok((models, false)))
}

/// How an operation left in flight ended.
pub(in crate::tui) enum Done {
    /// `session.compact` answered.
    Compacted(Result<Result<SessionCompactResult, ErrorCode>, ClientError>),
    /// `model.refresh` answered for the first provider; the rest are fetched next.
    Refreshed {
        provider: String,
        result: Result<Result<ModelRefreshResult, ErrorCode>, ClientError>,
        rest: Vec<String>,
        /// What the fetches before it said.
        said: Vec<String>,
    },
}

impl App {
    /// Does what a command or a panel asked.
    pub(in crate::tui) async fn command(
        &mut self,
        backend: &mut Backend,
        request: Request,
    ) -> anyhow::Result<()> {
        if self.op.is_some() && !matches!(request, Request::Run(c, _) if !c.needs_idle() ) {
            self.status = "wait: the last command is still running".to_owned();
            return Ok(());
        }
        match request {
            Request::Run(command, argument) => self.run_command(backend, command, &argument).await,
            Request::Open { session_id, title } => {
                self.open_session(backend, session_id.clone()).await?;
                if self.session_id == session_id {
                    self.title = title;
                    self.usage = None;
                    self.refresh_selection(backend).await?;
                }
                Ok(())
            }
            Request::Select(choice) => self.select(backend, choice).await.map(drop),
            Request::Enable {
                provider,
                model,
                default,
            } => self.enable(backend, &provider, &model, default).await,
            Request::Refresh(mut providers) => {
                if providers.is_empty() {
                    return Ok(());
                }
                let provider = providers.remove(0);
                self.start_refresh(backend, provider, providers, Vec::new())
                    .await
            }
        }
    }

    async fn run_command(
        &mut self,
        backend: &mut Backend,
        command: Command,
        argument: &str,
    ) -> anyhow::Result<()> {
        match command {
            Command::Help => self.panel = Some(Panel::Text(show::help())),
            Command::New => self.new_session(backend).await?,
            Command::Sessions => self.list_sessions(backend).await?,
            Command::Model if argument.is_empty() => self.models(backend).await?,
            Command::Model => match argument.split_once('/') {
                Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
                    let choice = Choice {
                        catalog_revision: None,
                        provider: provider.to_owned(),
                        model: model.to_owned(),
                        effort: EffortRequest::Keep,
                    };
                    // A model the provider's fetched list holds but the settings do not
                    // enable is enabled, as picking it would.
                    let mut pages = CACHED_PAGES;
                    let fetched = matches!(
                        cached(backend, provider, &mut pages).await?,
                        Ok((models, _)) if models.iter().any(|m| m.model == model)
                    );
                    if !self.select(backend, choice).await? && fetched {
                        self.enable(backend, provider, model, false).await?;
                    }
                }
                _ => {
                    self.status = format!(
                        "/model takes provider/model (\"{argument}\" has no provider); \
                         /model alone lists the choices"
                    )
                }
            },
            Command::Compact => {
                let params = SessionCompactParams {
                    session_id: self.session_id.clone(),
                };
                let call = backend.send::<methods::SessionCompact>(&params).await?;
                self.op = Some(Op {
                    future: Box::pin(async move { Done::Compacted(call.result().await) }),
                });
                self.status = "compacting the session…".to_owned();
            }
            Command::Copy => self.status = copy::copy_last_reply(&self.transcript),
            Command::Diff => self.panel = Some(Panel::Text(show::diff(&self.transcript))),
            Command::Cards => self.panel = Some(Panel::Text(self.cards_panel())),
            Command::Jobs => self.jobs_command(backend, argument).await?,
            Command::Permissions => self.permissions_command(backend, argument).await?,
            Command::Undo => self.undo_command(backend, argument).await?,
            Command::Rewind => self.rewind_command(backend, argument).await?,
            Command::Status => {
                let status = match backend.status().await? {
                    Ok(status) => Some(status),
                    Err(code) => {
                        self.status = words::refused("status", code);
                        None
                    }
                };
                if let Some(selection) = status.as_ref().and_then(|s| s.selection.clone()) {
                    self.selection = Some(selection);
                }
                self.panel = Some(Panel::Text(show::status(self, status.as_ref())));
            }
            // Enter quits at once; nothing reaches here.
            Command::Quit => {}
        }
        Ok(())
    }

    /// Asks the backend for the current selection, shown by `/model` and `/status`.
    pub(in crate::tui) async fn refresh_selection(
        &mut self,
        backend: &mut Backend,
    ) -> anyhow::Result<()> {
        if let Ok(status) = backend.status().await? {
            self.selection = status.selection;
        }
        Ok(())
    }

    /// `/new`: a fresh session; the transcript starts empty.
    async fn new_session(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        match backend
            .call::<methods::SessionCreate>(&EmptyParams {})
            .await?
        {
            Ok(session) => {
                self.session_id = session.session_id.clone();
                self.transcript.apply(FoldInput::SessionAttached(session));
                self.sync_mode(backend).await?;
                self.title = None;
                self.usage = None;
                self.status = "new session".to_owned();
                // The model chosen before goes on in it, once its first turn starts
                // (a switch now would make the empty session durable).
                self.reselect = self.chosen.clone();
                self.refresh_selection(backend).await?;
            }
            Err(code) => self.status = words::refused("/new", code),
        }
        Ok(())
    }

    /// Opens the session picker with every session of this directory, read in
    /// `session.discover` batches.
    pub(in crate::tui) async fn list_sessions(
        &mut self,
        backend: &mut Backend,
    ) -> anyhow::Result<()> {
        let mut sessions = Vec::new();
        let mut notices: Vec<String> = Vec::new();
        let mut cursor = None;
        let mut complete = false;
        for _ in 0..DISCOVER_CALLS {
            let params = SessionDiscoverParams {
                cursor: cursor.take(),
                limit: None,
            };
            let batch = match backend.call::<methods::SessionDiscover>(&params).await? {
                Ok(batch) => batch,
                Err(code) => {
                    self.status = words::refused("/sessions", code);
                    return Ok(());
                }
            };
            sessions.extend(batch.sessions);
            for code in batch.notices {
                if !notices.contains(&code) {
                    notices.push(code);
                }
            }
            complete = batch.complete;
            match batch.next_cursor {
                Some(next) if !complete => cursor = Some(next),
                _ => break,
            }
        }
        if sessions.is_empty() && complete {
            self.status = "no sessions of this directory yet".to_owned();
            return Ok(());
        }
        // The listing is where a title is learnt: keep this session's for the status.
        if let Some(title) = sessions
            .iter()
            .find(|s| s.session_id == self.session_id)
            .and_then(|s| s.title.clone())
        {
            self.title = Some(title);
        }
        let mut notes: Vec<String> = notices.iter().map(|c| discovery_notice(c)).collect();
        if !complete {
            notes.push(format!(
                "listed in part: the first {} sessions by age (the newest may be missing)",
                sessions.len()
            ));
        }
        self.panel = Some(Panel::Sessions(SessionPicker::new(
            sessions,
            &self.session_id,
            notes,
        )));
        Ok(())
    }

    /// Reads every page of a fresh catalog snapshot; `None` after saying why not.
    async fn catalog(&mut self, backend: &mut Backend) -> anyhow::Result<Option<Catalog>> {
        let mut params = ModelCatalogParams::default();
        let mut catalog: Option<Catalog> = None;
        for _ in 0..CATALOG_PAGES {
            let page = match backend.call::<methods::ModelCatalog>(&params).await? {
                Ok(page) => page,
                Err(code) => {
                    self.status = words::refused("/model", code);
                    return Ok(None);
                }
            };
            let catalog = catalog.get_or_insert_with(|| Catalog {
                revision: page.revision.clone(),
                choices: Vec::new(),
                notes: Vec::new(),
            });
            catalog.choices.extend(page.choices);
            for code in page.notices {
                let note = catalog_notice(&code);
                if !catalog.notes.contains(&note) {
                    catalog.notes.push(note);
                }
            }
            match page.next_cursor {
                Some(cursor) if !page.complete => {
                    params = ModelCatalogParams {
                        revision: Some(page.revision),
                        cursor: Some(cursor),
                        limit: None,
                    };
                }
                _ => return Ok(Some(std::mem::take(catalog))),
            }
        }
        Ok(catalog.map(|mut c| {
            c.notes
                .push("listed in part: the catalog has more pages than are read".to_owned());
            c
        }))
    }

    /// `/model`: the picker, with the current selection and the catalog's state.
    async fn models(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        self.refresh_selection(backend).await?;
        let Some(catalog) = self.catalog(backend).await? else {
            return Ok(());
        };
        let providers = match backend
            .call::<methods::ModelCatalogStatus>(&CatalogStatusParams::default())
            .await?
        {
            Ok(status) => status.providers,
            // The choices are shown all the same; only the reasons are missing.
            Err(_) => Vec::new(),
        };
        // What the fetched lists hold that is not enabled yet, as the backend lists it.
        let mut catalog = catalog;
        let mut fetched = Vec::new();
        let mut pages = CACHED_PAGES;
        for provider in providers.iter().filter(|p| p.cache == CacheState::Ready) {
            let provider = &provider.provider;
            let models = match cached(backend, provider, &mut pages).await? {
                Ok((models, complete)) => {
                    if !complete {
                        catalog.notes.push(format!(
                            "{provider}: its fetched list is shown in part (the first {} models)",
                            models.len()
                        ));
                    }
                    models
                }
                Err(code) => {
                    catalog
                        .notes
                        .push(words::refused(&format!("{provider}'s fetched list"), code));
                    continue;
                }
            };
            fetched.extend(models.into_iter().filter(|m| !m.enabled).map(|m| Fetched {
                provider: provider.clone(),
                model: m.model,
                name: m.display_name,
            }));
        }
        self.panel = Some(Panel::Model(ModelPicker::with_fetched(
            catalog,
            self.selection.clone(),
            &providers,
            fetched,
        )));
        Ok(())
    }

    /// Enables `provider/model` in the global settings (and with `default` makes it
    /// the default selection), then starts a fresh backend, which reads them, reopens
    /// the session and switches it to the model.
    async fn enable(
        &mut self,
        backend: &mut Backend,
        provider: &str,
        model: &str,
        default: bool,
    ) -> anyhow::Result<()> {
        let home = match settings_home() {
            Ok(home) => home,
            Err(why) => {
                self.status = why;
                return Ok(());
            }
        };
        let edited = match magi_config::settings_edit::enable_model(
            &home.join("settings.toml"),
            provider,
            model,
            default,
        ) {
            Ok(edited) => edited,
            Err(why) => {
                self.status = why;
                return Ok(());
            }
        };
        self.renew_backend(backend).await?;
        if self.backend_gone {
            // The settings changed; the fresh backend that would read them is said
            // not to have started, and `r` tries again.
            let said = changed(&edited, provider, model);
            if !said.is_empty() {
                self.status = format!("{said} · {}", self.status);
            }
            return Ok(());
        }
        let choice = Choice {
            catalog_revision: None,
            provider: provider.to_owned(),
            model: model.to_owned(),
            effort: EffortRequest::Keep,
        };
        self.select(backend, choice).await?;
        let said = changed(&edited, provider, model);
        if !said.is_empty() {
            let switched = std::mem::take(&mut self.status);
            self.status = format!("{said} · {switched}");
        }
        Ok(())
    }

    /// Switches the model with `selection.set`, against a fresh selection revision (and
    /// a fresh catalog revision for a typed choice); whether it switched. The choice is
    /// kept for a session `/new` starts.
    pub(in crate::tui) async fn select(
        &mut self,
        backend: &mut Backend,
        choice: Choice,
    ) -> anyhow::Result<bool> {
        let kept = Choice {
            catalog_revision: None,
            ..choice.clone()
        };
        let name = format!("{}/{}", choice.provider, choice.model);
        let selection_revision = match backend.status().await? {
            Ok(status) => match status.selection {
                Some(selection) => selection.revision,
                None => {
                    self.status = "the backend reports no selection yet; try again".to_owned();
                    return Ok(false);
                }
            },
            Err(code) => {
                self.status = words::refused("status", code);
                return Ok(false);
            }
        };
        let catalog_revision = match choice.catalog_revision {
            Some(revision) => revision,
            None => {
                let params = ModelCatalogParams {
                    limit: Some(1),
                    ..ModelCatalogParams::default()
                };
                match backend.call::<methods::ModelCatalog>(&params).await? {
                    Ok(page) => page.revision,
                    Err(code) => {
                        self.status = words::refused("/model", code);
                        return Ok(false);
                    }
                }
            }
        };
        let mut params = SelectionSetParams {
            session_id: self.session_id.clone(),
            selection_revision,
            catalog_revision,
            provider: choice.provider,
            model: choice.model,
            effort: Some(choice.effort),
        };
        let mut answer = backend.call::<methods::SelectionSet>(&params).await?;
        // A typed switch keeps the effort asked for; a model that does not take it
        // gets none instead, and the person is told.
        let mut reset = false;
        if choice.effort == EffortRequest::Keep
            && matches!(answer, Err(ErrorCode::EffortUnsupported))
        {
            params.effort = Some(EffortRequest::Default);
            answer = backend.call::<methods::SelectionSet>(&params).await?;
            reset = true;
        }
        match answer {
            Ok(result) => {
                self.status = format!(
                    "model: {}{}",
                    super::model::current(Some(&result.selection)),
                    if reset {
                        " (effort reset: the model does not take the one asked for)"
                    } else {
                        ""
                    }
                );
                self.selection = Some(result.selection);
                self.panel = None;
                self.chosen = Some(kept);
                Ok(true)
            }
            Err(code) => {
                self.status = words::selection_refused(&name, code);
                Ok(false)
            }
        }
    }

    /// Sends `model.refresh` for one provider and leaves it in flight.
    async fn start_refresh(
        &mut self,
        backend: &mut Backend,
        provider: String,
        rest: Vec<String>,
        said: Vec<String>,
    ) -> anyhow::Result<()> {
        let params = ModelRefreshParams {
            provider: provider.clone(),
        };
        let call = backend.send::<methods::ModelRefresh>(&params).await?;
        self.status = format!("fetching the model list of {provider}…");
        self.op = Some(Op {
            future: Box::pin(async move {
                Done::Refreshed {
                    provider,
                    result: call.result().await,
                    rest,
                    said,
                }
            }),
        });
        Ok(())
    }

    /// An operation left in flight ended: say how, and go on with what follows it.
    pub(in crate::tui) async fn op_done(
        &mut self,
        backend: &mut Backend,
        done: Done,
    ) -> anyhow::Result<()> {
        match done {
            Done::Compacted(result) => {
                self.status = match result {
                    // The backend went away (its end is told by the loop) or was renewed.
                    Err(e) => format!("/compact: no answer: {e}"),
                    Ok(Ok(SessionCompactResult {
                        compacted: true,
                        hook_errors,
                    })) => std::iter::once(
                        "compacted: a summary now stands for the conversation so far".to_owned(),
                    )
                    // The compaction went on; the person still sees what its hooks said.
                    .chain(hook_errors)
                    .collect::<Vec<_>>()
                    .join(" · "),
                    Ok(Ok(SessionCompactResult {
                        compacted: false, ..
                    })) => "nothing to compact yet".to_owned(),
                    Ok(Err(code)) => words::refused("/compact", code),
                };
            }
            Done::Refreshed {
                provider,
                result,
                mut rest,
                mut said,
            } => {
                said.push(match result {
                    Err(e) => format!("{provider}: no answer: {e}"),
                    Ok(Ok(refreshed)) => {
                        format!("{provider}: {} models fetched", refreshed.cached_models)
                    }
                    Ok(Err(code)) => words::refresh_refused(&provider, code),
                });
                if !rest.is_empty() {
                    let next = rest.remove(0);
                    self.start_refresh(backend, next, rest, said).await?;
                    return Ok(());
                }
                // The picker shows the new catalog, and what the last fetch said.
                if matches!(self.panel, Some(Panel::Model(_))) {
                    self.models(backend).await?;
                }
                self.status = said.join(" · ");
            }
        }
        Ok(())
    }
}

/// What an edit of the settings changed, for the status line (empty when nothing did).
fn changed(edited: &magi_config::settings_edit::Edited, provider: &str, model: &str) -> String {
    let mut said = Vec::new();
    if edited.enabled {
        said.push(format!("enabled {provider}/{model}"));
    }
    if edited.made_default {
        said.push(format!("made {provider}/{model} the default"));
    }
    if said.is_empty() {
        return String::new();
    }
    format!("{} in {}", said.join(" and "), edited.path.display())
}
