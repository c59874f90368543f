//! Owned sessions: the one attachment of a child, its lease, and the history snapshot
//! `history.page` reads.
//!
//! Every method here is synchronous and may block on the filesystem; the server runs
//! it on the session worker, one operation at a time. A failed operation leaves the
//! previous attachment as it was.

use std::path::{Path, PathBuf};

use magi_config::{
    Credential, Env, Settings, effort_profile, provider_definition, provider_names, read_credential,
};
use magi_protocol::ErrorCode;
use magi_protocol::limits::{STORED_READ_BYTES, STORED_READ_LINES};
use magi_protocol::messages::{
    Availability, CatalogStatusParams, CatalogStatusResult, Effort, EffortRequest,
    ModelCatalogParams, ModelCatalogResult, ModelRefreshParams, ModelRefreshResult, SelectionScope,
    SelectionSetParams, SelectionSetResult,
};
use magi_protocol::messages::{
    HistoryPageParams, HistoryPageResult, SessionDiscoverParams, SessionDiscoverResult,
    SessionListParams, SessionListResult, SessionResult,
};
use magi_protocol::names::{is_valid_name, is_valid_session_id};
use magi_store::Home;
use magi_store::catalog::{CachedModel, ProviderCache, write_cache};
use magi_store::history::{OverBudget, Projection, Projector, page};

use crate::catalog::{Catalog, CatalogInputs};
use crate::selection::{ActiveSelection, fresh_revision};

/// `selection.set` notice: the selection is durable, its history projection is not.
const NOTICE_HISTORY_UNAVAILABLE: &str = "history_unavailable";
/// `session.open` notice: the saved selection cannot be restored now.
const NOTICE_SAVED_SELECTION_UNAVAILABLE: &str = "saved_selection_unavailable";
use magi_store::lease::{Lease, LeaseError, LeaseKind, acquire};
use magi_store::log::{
    AppendError, Appender, LogFingerprint, ReadError, ReadLimits, fingerprint, scan_log,
};
use magi_store::records::{Record, RecordBody};

use crate::discovery::Discovery;
use crate::revision::Revision;

/// Notice: the session records no working directory, so it could not be verified.
pub const NOTICE_CWD_UNVERIFIED: &str = "cwd_unverified";

/// The sessions of one child: where they live and which one is attached.
#[derive(Debug)]
pub struct Sessions {
    home: Home,
    cwd: PathBuf,
    attachment: Option<Attachment>,
    /// The one discovery snapshot of this child (`session.list`), apart from the
    /// attachment: a fresh listing replaces it and leaves the attachment alone.
    discovery: Discovery,
    /// Whether history entries carry saved cards (`tool.cards` negotiated).
    tool_cards: bool,
    /// The one catalog snapshot of this child (`model.catalog`).
    catalog: Catalog,
    /// What the catalog reads: the admitted settings and environment.
    admitted: Option<(Settings, Env)>,
    /// The last `session_preferences` of the session the last open attached.
    saved_preferences: Option<SavedPreferences>,
}

/// A session's saved selection, as its log recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SavedPreferences {
    provider: String,
    model: String,
    /// The requested effort; `default` when the record named none this build knows.
    effort: Effort,
}

#[derive(Debug)]
struct Attachment {
    session_id: String,
    path: PathBuf,
    /// Held while attached to a durable session; a lazy handle has none yet.
    lease: Option<Lease>,
    snapshot: Snapshot,
    /// Opened at the first append of this attachment.
    appender: Option<Appender>,
    /// Bytes and lines of the log, as read and appended since.
    log_bytes: u64,
    log_lines: u64,
}

/// One immutable history projection and the cursors issued for it.
#[derive(Debug)]
struct Snapshot {
    revision: Revision,
    projection: Projection,
    /// The log as it was read; `None` for a lazy handle (no file).
    fingerprint: Option<LogFingerprint>,
    /// Once a mutation is seen the snapshot stays stale until the session is reopened.
    stale: bool,
}

impl Snapshot {
    fn new(projection: Projection, fingerprint: Option<LogFingerprint>) -> Snapshot {
        Snapshot {
            revision: Revision::new('h'),
            projection,
            fingerprint,
            stale: false,
        }
    }
}

impl Sessions {
    /// The sessions of the workspace `cwd` (canonical) under `home`.
    pub fn new(home: Home, cwd: PathBuf) -> Sessions {
        Sessions {
            home,
            cwd,
            attachment: None,
            discovery: Discovery::default(),
            tool_cards: false,
            catalog: Catalog::default(),
            admitted: None,
            saved_preferences: None,
        }
    }

    /// Gives the catalog the admitted settings and environment.
    pub fn with_admitted(mut self, settings: Settings, env: Env) -> Sessions {
        self.admitted = Some((settings, env));
        self
    }

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
        if !effort_profile(definition.kind, &params.model)
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
        let listed = runtime
            .block_on(magi_provider::models::list_models(&endpoint, cancel))
            .map_err(|e| e.error_code())?;
        let cache = ProviderCache {
            provider: params.provider.clone(),
            fetched_at: std::time::SystemTime::now(),
            models: listed
                .into_iter()
                .map(|m| CachedModel::new(m.id, m.name))
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

    /// Makes history entries carry saved cards from now on (`tool.cards` negotiated).
    pub fn with_tool_cards(mut self, tool_cards: bool) -> Sessions {
        self.tool_cards = tool_cards;
        self
    }

    /// The attached session's ID.
    pub fn attached(&self) -> Option<&str> {
        self.attachment.as_ref().map(|a| a.session_id.as_str())
    }

    /// `session.create`: a new lazy handle, attached; nothing is written.
    pub fn create(&mut self) -> SessionResult {
        let session_id = uuid::Uuid::now_v7().to_string();
        let path = self.home.session_path(&self.cwd, &session_id);
        let projection = Projection {
            entries: Vec::new(),
            complete: true,
        };
        let attachment = Attachment {
            session_id,
            path,
            lease: None,
            snapshot: Snapshot::new(projection, None),
            appender: None,
            log_bytes: 0,
            log_lines: 0,
        };
        let result = session_result(&attachment, false, Vec::new());
        self.attachment = Some(attachment);
        result
    }

    /// `session.open`: attach an existing session by exact ID, or reopen this child's
    /// lazy handle.
    pub fn open(&mut self, session_id: &str) -> Result<SessionResult, ErrorCode> {
        if !is_valid_session_id(session_id) {
            return Err(ErrorCode::InvalidParams);
        }
        self.saved_preferences = None;
        let path = self.home.session_path(&self.cwd, session_id);
        if !path_exists(&path)? {
            if let Some(current) = &mut self.attachment
                && current.session_id == session_id
                && current.lease.is_none()
            {
                // This child's lazy handle, not yet durable: reopen it.
                let projection = current.snapshot.projection.clone();
                current.snapshot = Snapshot::new(projection, None);
                return Ok(session_result(current, false, Vec::new()));
            }
            return match self.home.find_session_elsewhere(session_id) {
                Ok(Some(_)) => Err(ErrorCode::CwdMismatch),
                Ok(None) => Err(ErrorCode::SessionMissing),
                Err(_) => Err(ErrorCode::SessionInvalid),
            };
        }
        // Reopening the attached session keeps its lease; any other needs its own.
        let holds_lease = self
            .attachment
            .as_ref()
            .is_some_and(|a| a.session_id == session_id && a.lease.is_some());
        let new_lease = if holds_lease {
            None
        } else {
            let lease_path = self.home.lease_path(session_id, LeaseKind::Writer);
            Some(acquire(&lease_path).map_err(|e| match e {
                LeaseError::Busy => ErrorCode::SessionBusy,
                LeaseError::Io => ErrorCode::SessionInvalid,
            })?)
        };
        let (mut attachment, notices, preferences) = self.load(session_id, path)?;
        self.saved_preferences = preferences;
        attachment.lease = match new_lease {
            Some(lease) => Some(lease),
            None => self.attachment.take().and_then(|a| a.lease),
        };
        let result = session_result(&attachment, true, notices);
        // Replacing the attachment releases the previous session's lease.
        self.attachment = Some(attachment);
        Ok(result)
    }

    /// Reads and projects a durable session; the caller holds its writer lease.
    fn load(
        &self,
        session_id: &str,
        path: PathBuf,
    ) -> Result<(Attachment, Vec<String>, Option<SavedPreferences>), ErrorCode> {
        // Stream the log: only what history shows and the recorded working directories
        // are kept, so memory follows the projection, not the log.
        let mut projector = if self.tool_cards {
            Projector::with_cards(crate::saved_cards::selector())
        } else {
            Projector::new()
        };
        let (mut cwd_recorded, mut cwd_matches) = (false, true);
        let mut preferences = None;
        let log = scan_log(&path, session_id, ReadLimits::STORED, |record| {
            if let RecordBody::SessionPreferences {
                provider,
                model,
                effort,
            } = &record.body
            {
                preferences = Some(SavedPreferences {
                    provider: provider.clone(),
                    model: model.clone(),
                    effort: effort
                        .as_deref()
                        .and_then(|e| serde_json::from_value(serde_json::json!(e)).ok())
                        .unwrap_or(Effort::Default),
                });
            }
            if let RecordBody::SessionMeta { cwd: Some(cwd) } = &record.body
                && !cwd.is_empty()
            {
                cwd_recorded = true;
                cwd_matches &= same_workspace(cwd, &self.cwd);
            }
            projector.push(&record);
        })
        .map_err(read_error_code)?;
        if !cwd_matches {
            return Err(ErrorCode::CwdMismatch);
        }
        let mut notices = Vec::new();
        if !cwd_recorded {
            notices.push(NOTICE_CWD_UNVERIFIED.to_owned());
        }
        let projection = projector
            .finish(log.torn_tail)
            .map_err(|OverBudget| ErrorCode::HistoryLimit)?;
        let attachment = Attachment {
            session_id: session_id.to_owned(),
            path,
            lease: None,
            snapshot: Snapshot::new(projection, Some(log.fingerprint)),
            appender: None,
            log_bytes: log.bytes,
            log_lines: log.lines as u64,
        };
        Ok((attachment, notices, preferences))
    }

    /// `history.page`: one page of the attached session's snapshot.
    pub fn page(&mut self, params: &HistoryPageParams) -> Result<HistoryPageResult, ErrorCode> {
        let grammar_ok = is_valid_session_id(&params.session_id)
            && is_valid_name(&params.revision)
            && params.cursor.as_deref().is_none_or(is_valid_name);
        if !grammar_ok {
            return Err(ErrorCode::InvalidParams);
        }
        let attachment = self.attachment.as_mut().ok_or(ErrorCode::SessionMissing)?;
        if attachment.session_id != params.session_id {
            return Err(ErrorCode::StaleSession);
        }
        let snapshot = &mut attachment.snapshot;
        if snapshot.revision.id() != params.revision || snapshot.stale {
            return Err(ErrorCode::StaleRevision);
        }
        let start = match params.cursor.as_deref() {
            None => 0,
            Some(cursor) => snapshot
                .revision
                .resolve(cursor)
                .ok_or(ErrorCode::StaleRevision)?,
        };
        let current = match fingerprint(&attachment.path) {
            Ok(current) => Some(current),
            Err(ReadError::Missing) => None,
            Err(_) => {
                snapshot.stale = true;
                return Err(ErrorCode::StaleRevision);
            }
        };
        if current != snapshot.fingerprint {
            snapshot.stale = true;
            return Err(ErrorCode::StaleRevision);
        }
        let (result, next) = page(
            &snapshot.projection,
            &attachment.session_id,
            snapshot.revision.id(),
            start,
            |index| snapshot.revision.cursor(index),
        );
        if let Some(next) = next {
            snapshot.revision.issue(next);
        }
        Ok(result)
    }

    /// `session.list`: one page of this workspace's sessions. Reads only; the attached
    /// session is never busy to this child.
    pub fn list(&mut self, params: &SessionListParams) -> Result<SessionListResult, ErrorCode> {
        let attached = self.attachment.as_ref().map(|a| a.session_id.as_str());
        self.discovery.list(&self.home, &self.cwd, attached, params)
    }

    /// `session.discover`: one bounded batch of an incremental pass over this
    /// workspace's sessions.
    pub fn discover(
        &mut self,
        params: &SessionDiscoverParams,
    ) -> Result<SessionDiscoverResult, ErrorCode> {
        let attached = self.attachment.as_ref().map(|a| a.session_id.as_str());
        self.discovery
            .discover(&self.home, &self.cwd, attached, params)
    }
}

/// Why a record could not be appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendFailure {
    /// No session is attached.
    Detached,
    /// Another child owns the session.
    Busy,
    /// Writing or syncing failed; the record may or may not be on disk.
    Io,
}

impl Sessions {
    /// Checks that `session_id` names the attachment: `session_missing` without one,
    /// `stale_session` for another.
    pub fn check_attached(&self, session_id: &str) -> Result<(), ErrorCode> {
        match &self.attachment {
            None => Err(ErrorCode::SessionMissing),
            Some(a) if a.session_id != session_id => Err(ErrorCode::StaleSession),
            Some(_) => Ok(()),
        }
    }

    /// Whether the attached log has reached the stored-read bound, so a new turn
    /// could not be read back.
    pub fn at_history_limit(&self) -> bool {
        self.attachment.as_ref().is_some_and(|a| {
            a.log_bytes >= STORED_READ_BYTES as u64 || a.log_lines >= STORED_READ_LINES as u64
        })
    }

    /// Appends one record to the attached session and syncs it. A lazy handle becomes
    /// durable first: its writer lease is taken and its log starts with the session
    /// metadata (the absolute working directory).
    pub fn append(&mut self, body: RecordBody) -> Result<(), AppendFailure> {
        self.append_all(vec![body])
    }

    /// Appends records together: one write and one sync, acknowledged as a whole.
    pub fn append_all(&mut self, bodies: Vec<RecordBody>) -> Result<(), AppendFailure> {
        let cwd = self.cwd.display().to_string();
        let home = &self.home;
        let attachment = self.attachment.as_mut().ok_or(AppendFailure::Detached)?;
        if attachment.lease.is_none() {
            let lease_path = home.lease_path(&attachment.session_id, LeaseKind::Writer);
            attachment.lease = Some(acquire(&lease_path).map_err(|e| match e {
                LeaseError::Busy => AppendFailure::Busy,
                LeaseError::Io => AppendFailure::Io,
            })?);
        }
        if attachment.appender.is_none() {
            let appender = Appender::open(&attachment.path, &attachment.session_id)
                .map_err(|_: AppendError| AppendFailure::Io)?;
            attachment.appender = Some(appender);
            if attachment.log_lines == 0 {
                let meta = RecordBody::SessionMeta { cwd: Some(cwd) };
                append_record(attachment, meta)?;
            }
        }
        append_records(attachment, bodies)
    }

    /// Reads the attached log again and replaces the history snapshot with a fresh
    /// revision. Returns the revision and the message ID of the last user entry.
    pub fn refresh(&mut self) -> Result<(String, Option<String>), ErrorCode> {
        let attachment = self.attachment.as_ref().ok_or(ErrorCode::SessionMissing)?;
        let (session_id, path) = (attachment.session_id.clone(), attachment.path.clone());
        let (loaded, _, _) = self.load(&session_id, path)?;
        let attachment = self.attachment.as_mut().ok_or(ErrorCode::SessionMissing)?;
        attachment.snapshot = loaded.snapshot;
        attachment.log_bytes = loaded.log_bytes;
        attachment.log_lines = loaded.log_lines;
        let last_user = attachment
            .snapshot
            .projection
            .entries
            .iter()
            .rev()
            .find(|e| e.kind == magi_protocol::messages::EntryKind::User)
            .map(|e| e.message_id.clone());
        Ok((attachment.snapshot.revision.id().to_owned(), last_user))
    }

    /// The attached session's durable records, for replaying the conversation to the
    /// model (an empty list for a lazy handle).
    pub fn records(&self) -> Result<Vec<Record>, ErrorCode> {
        let attachment = self.attachment.as_ref().ok_or(ErrorCode::SessionMissing)?;
        if attachment.appender.is_none() && attachment.lease.is_none() {
            return Ok(Vec::new());
        }
        let mut records = Vec::new();
        scan_log(
            &attachment.path,
            &attachment.session_id,
            ReadLimits::STORED,
            |record| records.push(record),
        )
        .map_err(read_error_code)?;
        Ok(records)
    }

    /// The attached session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Where a tool call of the attached session keeps its bulky output:
    /// `$MC_HOME/data/conversations/<session>/tool-calls/<call>/`. A provider's call ID
    /// outside the ID grammar is replaced by its digest, so it can never name a path.
    pub fn tool_assets_dir(&self, call_id: &str) -> Option<PathBuf> {
        Some(call_assets_dir(&self.conversation_dir()?, call_id))
    }

    /// The attached session's assets: `$MC_HOME/data/conversations/<session>/`.
    pub fn conversation_dir(&self) -> Option<PathBuf> {
        let attachment = self.attachment.as_ref()?;
        Some(
            self.home
                .root()
                .join("data/conversations")
                .join(&attachment.session_id),
        )
    }
}

/// The folder of call `call_id`'s assets inside a session's assets folder
/// `conversation`: the call ID itself when it is a safe name, else a hash of it.
pub(crate) fn call_assets_dir(conversation: &Path, call_id: &str) -> PathBuf {
    let call = if is_valid_name(call_id) && call_id != "." && call_id != ".." {
        call_id.to_owned()
    } else {
        use sha2::Digest;
        sha2::Sha256::digest(call_id.as_bytes())
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    conversation.join("tool-calls").join(call)
}

fn append_record(attachment: &mut Attachment, body: RecordBody) -> Result<(), AppendFailure> {
    append_records(attachment, vec![body])
}

fn append_records(
    attachment: &mut Attachment,
    bodies: Vec<RecordBody>,
) -> Result<(), AppendFailure> {
    let records: Vec<Record> = bodies
        .into_iter()
        .map(|body| Record::now(&attachment.session_id, body))
        .collect();
    let appender = attachment.appender.as_mut().ok_or(AppendFailure::Io)?;
    appender
        .append_all(&records)
        .map_err(|_| AppendFailure::Io)?;
    for record in &records {
        let line = serde_json::to_vec(record).map_or(0, |v| v.len() as u64 + 1);
        attachment.log_bytes += line;
        attachment.log_lines += 1;
    }
    Ok(())
}

fn session_result(attachment: &Attachment, durable: bool, notices: Vec<String>) -> SessionResult {
    SessionResult {
        session_id: attachment.session_id.clone(),
        durable,
        revision: attachment.snapshot.revision.id().to_owned(),
        notices,
    }
}

/// Whether a path exists, without following a final symlink.
fn path_exists(path: &Path) -> Result<bool, ErrorCode> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(_) => Err(ErrorCode::SessionInvalid),
    }
}

/// Whether a recorded working directory is absolute and names the child's (canonical)
/// working directory. A recorded path that no longer exists does not.
fn same_workspace(recorded: &str, canonical_cwd: &Path) -> bool {
    let recorded = Path::new(recorded);
    recorded.is_absolute() && recorded.canonicalize().is_ok_and(|c| c == canonical_cwd)
}

fn read_error_code(error: ReadError) -> ErrorCode {
    match error {
        ReadError::Missing => ErrorCode::SessionMissing,
        ReadError::OverLimit => ErrorCode::HistoryLimit,
        ReadError::Unsafe
        | ReadError::Unreadable
        | ReadError::Malformed
        | ReadError::ForeignSession => ErrorCode::SessionInvalid,
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
