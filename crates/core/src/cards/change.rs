//! The blocks of a change card: the change row and the applied preview.

use magi_protocol::cards::{
    Block, Changes, DIFF_PATH_BYTES, DiffApplication, DiffBlock, Reason, ResultRow, RowOutcome,
    Subject, strongest_reason,
};
use magi_tools::BuiltinTool;
use magi_tools::facts::Facts;

use super::blocks::Context;
use super::diff::{diff_lines, preview_payload};
use super::labels::{
    ROW_FILE_CHANGED, ROW_FILE_CREATED, ROW_LINES_CHANGED, ROW_OPERATIONS_APPLIED,
};
use super::part::{Part, Role, row};
use super::source::PreviewSource;
use super::text::{Notes, yes_no};

impl Context<'_, '_> {
    /// The blocks of `facts`, which are a change's (`Facts::Change`); none otherwise.
    pub(super) fn change(&self, facts: &Facts, tail: &mut Notes) -> Vec<Part> {
        let Facts::Change {
            path,
            created,
            operations,
            applied,
            changed,
            lines_added,
            lines_removed,
        } = facts
        else {
            return Vec::new();
        };
        let (created, operations, applied, changed) = (*created, *operations, *applied, *changed);
        let counts = lines_added.zip(*lines_removed);
        let mut rows = vec![ResultRow {
            label: ROW_OPERATIONS_APPLIED.to_owned(),
            value: Some(format!("{applied} of {operations}")),
            // The count itself is an application outcome.
            outcome: if applied > operations {
                RowOutcome::Unknown
            } else if applied == 0 {
                RowOutcome::Failure
            } else if applied == operations {
                RowOutcome::Success
            } else {
                RowOutcome::Partial
            },
        }];
        if BuiltinTool::from_name(self.source.tool_name) == Some(BuiltinTool::Write) {
            rows.push(row(ROW_FILE_CREATED, Some(yes_no(created))));
        }
        rows.push(row(ROW_FILE_CHANGED, Some(yes_no(changed))));
        rows.push(row(
            ROW_LINES_CHANGED,
            counts.map(|(added, removed)| {
                magi_protocol::messages::change_counts_words(added, removed)
            }),
        ));
        let mut parts = vec![Part::results(rows, Notes::default())];
        let effects = matches!(self.changes, Changes::Applied | Changes::Partial);
        let preview = match self.source.preview {
            // An applied change always has a preview in this build: one that is not
            // there was not recorded.
            PreviewSource::NotApplicable if effects => PreviewSource::NotRecorded,
            other => other,
        };
        match preview {
            PreviewSource::NotApplicable => {}
            PreviewSource::NotRecorded => tail.add(Subject::Blocks, Reason::NotRecorded, Some(1)),
            PreviewSource::Malformed => {
                tail.add(Subject::Blocks, Reason::UnsupportedSource, Some(1));
            }
            PreviewSource::Recorded(payload) => match preview_payload(payload) {
                None => tail.add(Subject::Blocks, Reason::UnsupportedSource, Some(1)),
                Some((diff, truncated)) => {
                    let mut notes = Notes::default();
                    let path = Some(notes.text(Subject::Text, path, DIFF_PATH_BYTES))
                        .filter(|p| !p.is_empty());
                    let lines = diff_lines(diff, truncated, &mut notes);
                    if lines.is_empty() {
                        if let Some(reason) = strongest_reason(notes.0.iter().map(|o| o.reason)) {
                            tail.add(Subject::Blocks, reason, Some(1));
                        }
                    } else {
                        let application = match self.changes {
                            Changes::Applied => DiffApplication::Applied,
                            Changes::Partial => DiffApplication::Partial,
                            _ => DiffApplication::Unknown,
                        };
                        parts.push(Part::new(
                            Block::Diff(DiffBlock {
                                // A created file had no old version.
                                old_path: if created { None } else { path.clone() },
                                new_path: path,
                                application,
                                lines,
                            }),
                            notes,
                            Role::Optional,
                        ));
                    }
                }
            },
        }
        parts
    }
}
