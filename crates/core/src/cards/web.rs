//! The blocks of a `web_fetch` card.

use magi_protocol::cards::{
    Block, Reason, ResourceAvailability, ResourceKind, ResourceRow, ResourcesBlock, STRING_BYTES,
    Subject,
};
use magi_store::records::ToolOutcome;

use super::blocks::Context;
use super::labels::{ROW_BYTES_READ, ROW_CONTENT_TYPE, ROW_CUT_AT_BOUND, ROW_HTTP_STATUS};
use super::part::{Part, Role, row};
use super::text::{Notes, counted, yes_no};

impl Context<'_, '_> {
    pub(super) fn web(
        &self,
        url: &str,
        status: Option<u16>,
        content_type: Option<&str>,
        bytes: Option<u64>,
        truncated: bool,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let availability = match status {
            Some(status) if status < 400 => ResourceAvailability::Available,
            Some(_) => ResourceAvailability::Unavailable,
            None if self.outcome == Some(ToolOutcome::Failed) => ResourceAvailability::Unavailable,
            None => ResourceAvailability::Unknown,
        };
        let before = notes.0.len();
        let label = notes.text(Subject::Text, url, STRING_BYTES);
        let redacted = notes.0[before..]
            .iter()
            .any(|o| o.reason == Reason::Redacted);
        let resources = Part::new(
            Block::Resources(ResourcesBlock {
                rows: vec![ResourceRow {
                    kind: ResourceKind::Url,
                    // A redacted URL is no location.
                    location: (!redacted).then(|| label.clone()),
                    label,
                    availability,
                }],
            }),
            notes,
            Role::Optional,
        );
        let mut notes = Notes::default();
        let rows = vec![
            row(ROW_HTTP_STATUS, status.map(|s| s.to_string())),
            row(
                ROW_CONTENT_TYPE,
                content_type.map(|c| notes.text(Subject::Text, c, STRING_BYTES)),
            ),
            row(ROW_BYTES_READ, bytes.map(|n| counted(n, "byte", "bytes"))),
            row(ROW_CUT_AT_BOUND, Some(yes_no(truncated))),
        ];
        vec![resources, Part::results(rows, notes)]
    }
}
