//! The attached session's title: whether its log names one, and recording a new one
//! without invalidating the history snapshot a client is paging.

use magi_store::log::fingerprint;
use magi_store::records::{Record, RecordBody};

use super::{AppendFailure, Sessions};

/// Whether `records` name a title: a `title` record, or a `compaction` record with one.
pub fn has_title(records: &[Record]) -> bool {
    records.iter().any(|r| {
        matches!(
            &r.body,
            RecordBody::Title { .. } | RecordBody::Compaction { title: Some(_), .. }
        )
    })
}

impl Sessions {
    /// Appends a `title` record to `session_id` if it is still the attached, durable
    /// session (`Detached` otherwise: a session this child let go of is not written).
    ///
    /// A title is not part of the history projection, so a snapshot that was current
    /// before the append stays current after it: its revision and cursors keep working
    /// for a client paging the history `run.finished` announced.
    pub fn record_title(&mut self, session_id: &str, title: &str) -> Result<(), AppendFailure> {
        let attachment = self.attachment.as_ref().ok_or(AppendFailure::Detached)?;
        if attachment.session_id != session_id || attachment.lease.is_none() {
            return Err(AppendFailure::Detached);
        }
        let current = !attachment.snapshot.stale
            && fingerprint(&attachment.path).ok() == attachment.snapshot.fingerprint;
        self.append(RecordBody::Title {
            title: title.to_owned(),
        })?;
        let attachment = self.attachment.as_mut().ok_or(AppendFailure::Detached)?;
        if current {
            attachment.snapshot.fingerprint = fingerprint(&attachment.path).ok();
        }
        Ok(())
    }
}
