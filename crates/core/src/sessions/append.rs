//! Appending to the attached session: a lazy handle made durable at its first append,
//! records written and synced together, and the log's size kept against the
//! stored-read bound.

use magi_protocol::limits::{STORED_READ_BYTES, STORED_READ_LINES};
use magi_store::lease::{LeaseError, LeaseKind, acquire};
use magi_store::log::{AppendError, Appender, fingerprint};
use magi_store::records::{Record, RecordBody};

use super::{Attachment, Sessions};

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
    /// Whether the attached log has reached the stored-read bound, so a new turn
    /// could not be read back.
    pub fn at_history_limit(&self) -> bool {
        self.attachment.as_ref().is_some_and(|a| {
            a.log_bytes >= STORED_READ_BYTES as u64 || a.log_lines >= STORED_READ_LINES as u64
        })
    }

    /// Whether the attached session has a durable log (not a lazy handle nothing was
    /// appended to yet).
    pub fn is_durable(&self) -> bool {
        self.attachment.as_ref().is_some_and(|a| a.lease.is_some())
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

    /// Appends records the history projection does not show (a title, a mode switched
    /// or a rule revoked between turns): a snapshot that was current before the append
    /// stays current after it, so the revision `run.finished` announced, and its
    /// cursors, keep working for a client paging it.
    pub fn append_beside_history(&mut self, bodies: Vec<RecordBody>) -> Result<(), AppendFailure> {
        let current = self.attachment.as_ref().is_some_and(|a| {
            !a.snapshot.stale && fingerprint(&a.path).ok() == a.snapshot.fingerprint
        });
        self.append_all(bodies)?;
        if current && let Some(attachment) = self.attachment.as_mut() {
            attachment.snapshot.fingerprint = fingerprint(&attachment.path).ok();
        }
        Ok(())
    }
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
