//! The attached session's title: whether its log names one, and recording a new one
//! without invalidating the history snapshot a client is paging.

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
        self.append_beside_history(vec![RecordBody::Title {
            title: title.to_owned(),
        }])
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use magi_protocol::ErrorCode;
    use magi_protocol::messages::HistoryPageParams;

    use super::*;

    #[test]
    fn a_recorded_title_keeps_the_current_revision_and_only_the_attached_session_gets_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = magi_store::Home::prepare(&dir.path().join("home")).unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let mut sessions = Sessions::new(home, cwd);
        let session_id = sessions.create().session_id;
        // A lazy handle has no log to write to.
        assert_eq!(
            sessions.record_title(&session_id, "Early"),
            Err(AppendFailure::Detached)
        );
        sessions
            .append(RecordBody::UserInput {
                turn_id: "t1".into(),
                message_id: "u1".into(),
                text: "hello".into(),
                images: Vec::new(),
            })
            .unwrap();
        let (revision, _) = sessions.refresh().unwrap();
        assert!(!has_title(&sessions.records().unwrap()));
        assert_eq!(
            sessions.record_title("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "Other"),
            Err(AppendFailure::Detached)
        );
        sessions.record_title(&session_id, "Greeting").unwrap();
        assert!(has_title(&sessions.records().unwrap()));
        let page = |sessions: &mut Sessions, revision: &str| {
            sessions.page(&HistoryPageParams {
                session_id: session_id.clone(),
                revision: revision.to_owned(),
                cursor: None,
            })
        };
        // The revision a client was told stays pageable: the projection did not change.
        let result = page(&mut sessions, &revision).unwrap();
        assert_eq!(result.entries.len(), 1);
        // Any other change to the log still makes the snapshot stale.
        sessions
            .append(RecordBody::UserInput {
                turn_id: "t2".into(),
                message_id: "u2".into(),
                text: "again".into(),
                images: Vec::new(),
            })
            .unwrap();
        sessions.record_title(&session_id, "Second").unwrap();
        assert_eq!(
            page(&mut sessions, &revision).map(|_| ()),
            Err(ErrorCode::StaleRevision)
        );
    }
}
