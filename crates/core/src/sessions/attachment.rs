//! The attachment's lifecycle: a new lazy handle, opening a durable session under its
//! writer lease, loading and projecting its log, paging its history snapshot, listing
//! the workspace's sessions, and reading the attached log again.

use std::path::{Path, PathBuf};

use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    Effort, HistoryPageParams, HistoryPageResult, SessionDiscoverParams, SessionDiscoverResult,
    SessionListParams, SessionListResult, SessionResult,
};
use magi_protocol::names::{is_valid_name, is_valid_session_id};
use magi_store::history::{OverBudget, Projection, Projector, page};
use magi_store::lease::{LeaseError, LeaseKind, acquire};
use magi_store::log::{ReadError, ReadLimits, fingerprint, scan_log};
use magi_store::records::{Record, RecordBody};

use super::{Attachment, NOTICE_CWD_UNVERIFIED, SavedPreferences, Sessions, Snapshot};

impl Sessions {
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
            session_start: Some("new"),
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
            Projector::with_cards(crate::saved_cards::selector(self.card_styles))
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
            session_start: Some("resume"),
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

    /// Checks that `session_id` names the attachment: `session_missing` without one,
    /// `stale_session` for another.
    pub fn check_attached(&self, session_id: &str) -> Result<(), ErrorCode> {
        match &self.attachment {
            None => Err(ErrorCode::SessionMissing),
            Some(a) if a.session_id != session_id => Err(ErrorCode::StaleSession),
            Some(_) => Ok(()),
        }
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
