//! Our tool cards as ACP tool calls: the kind, the status, the locations (absolute paths
//! and lines) and the content (diffs as ACP diff content, command lines and output as
//! text). A pure function of one card, for live cards and saved ones alike.

use std::path::Path;

use agent_client_protocol_schema::v1::{
    Diff, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolKind,
};
use magi_protocol::cards::{
    Block, Card, CardOutcome, CardState, DiffBlock, DiffLineKind, ResourceKind, ToolKind as Ours,
};

/// The ACP tool kind of a card: the card's own kind, refined by the tool's name where
/// ACP has a closer word.
pub(crate) fn kind(card: &Card) -> ToolKind {
    match card.metadata.tool_name.as_deref() {
        Some("view_image") => return ToolKind::Read,
        Some("bash_kill" | "async_bash") => return ToolKind::Execute,
        Some("ask_user") => return ToolKind::Other,
        _ => {}
    }
    match card.tool_kind {
        Ours::Read => ToolKind::Read,
        Ours::Search => ToolKind::Search,
        Ours::Write | Ours::Edit => ToolKind::Edit,
        Ours::Command | Ours::CodeMode => ToolKind::Execute,
        Ours::Web => ToolKind::Fetch,
        Ours::Subagent => ToolKind::Think,
        Ours::Mcp | Ours::Other => ToolKind::Other,
    }
}

/// The ACP status of a card: running is in progress; only a success is completed.
pub(crate) fn status(card: &Card) -> ToolCallStatus {
    match (card.state, card.outcome) {
        (CardState::Running, _) => ToolCallStatus::InProgress,
        (CardState::Finished, Some(CardOutcome::Success)) => ToolCallStatus::Completed,
        (CardState::Finished, _) => ToolCallStatus::Failed,
    }
}

/// The whole tool call a card shows, its paths made absolute against `cwd`.
pub(crate) fn tool_call(card: &Card, cwd: &Path) -> ToolCall {
    ToolCall::new(card.activity_id.clone(), card.title.clone())
        .name(card.metadata.tool_name.clone())
        .kind(kind(card))
        .status(status(card))
        .locations(locations(card, cwd))
        .content(content(card, cwd))
}

/// The files a card acts on: its resource path, its diffs' paths (with the first
/// changed line) and the file rows of its resources, each once.
fn locations(card: &Card, cwd: &Path) -> Vec<ToolCallLocation> {
    let mut found: Vec<(String, Option<u32>)> = Vec::new();
    let mut add = |path: &str, line: Option<u32>| {
        if path.is_empty() {
            return;
        }
        match found.iter_mut().find(|(p, _)| p == path) {
            Some((_, known)) => {
                if known.is_none() {
                    *known = line;
                }
            }
            None => found.push((path.to_owned(), line)),
        }
    };
    for block in &card.blocks {
        match block {
            Block::Diff(diff) => {
                if let Some(path) = diff.new_path.as_deref().or(diff.old_path.as_deref()) {
                    add(path, first_changed_line(diff));
                }
            }
            Block::Resources(resources) => {
                for row in &resources.rows {
                    if row.kind == ResourceKind::File {
                        add(row.location.as_deref().unwrap_or(&row.label), None);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(path) = card.metadata.resource_path.as_deref() {
        add(path, None);
    }
    found
        .into_iter()
        .map(|(path, line)| ToolCallLocation::new(cwd.join(path)).line(line))
        .collect()
}

/// The new-file line of a diff's first added or removed line (or its context).
fn first_changed_line(diff: &DiffBlock) -> Option<u32> {
    diff.lines
        .iter()
        .find(|l| matches!(l.kind, DiffLineKind::Added | DiffLineKind::Removed))
        .and_then(|l| l.new_line.or(l.old_line))
        .and_then(|n| u32::try_from(n).ok())
}

/// The content of a card: each diff as ACP diff content, everything else as text.
fn content(card: &Card, cwd: &Path) -> Vec<ToolCallContent> {
    let mut content = Vec::new();
    for block in &card.blocks {
        match block {
            Block::Diff(diff) => {
                if let Some(diff) = diff_content(diff, cwd) {
                    content.push(ToolCallContent::from(diff));
                }
            }
            Block::Text(text) if !text.text.is_empty() => {
                content.push(ToolCallContent::from(text.text.clone()));
            }
            Block::Command(command) => {
                let mut text = String::new();
                if let Some(line) = &command.command {
                    text.push_str(&format!("$ {line}"));
                }
                match (command.exit_code, &command.signal) {
                    (Some(code), _) => text.push_str(&format!("\nexit code {code}")),
                    (None, Some(signal)) => text.push_str(&format!("\nkilled by {signal}")),
                    (None, None) => {}
                }
                let text = text.trim_start().to_owned();
                if !text.is_empty() {
                    content.push(ToolCallContent::from(text));
                }
            }
            Block::Results(results) => {
                let lines: Vec<String> = results
                    .rows
                    .iter()
                    .map(|row| match &row.value {
                        Some(value) => format!("{}: {value}", row.label),
                        None => row.label.clone(),
                    })
                    .collect();
                if !lines.is_empty() {
                    content.push(ToolCallContent::from(lines.join("\n")));
                }
            }
            Block::Progress(progress) => {
                let text = match (progress.completed, progress.total) {
                    (Some(done), Some(total)) => format!("{}: {done}/{total}", progress.label),
                    _ => progress.label.clone(),
                };
                content.push(ToolCallContent::from(text));
            }
            Block::Text(_) | Block::Resources(_) | Block::Children(_) => {}
        }
    }
    content
}

/// A diff block as ACP diff content: the old text is its context and removed lines,
/// the new text its context and added lines (the preview's excerpt, not whole files). A
/// diff with no old lines is a file's creation, told by an absent old text.
pub(crate) fn diff_content(diff: &DiffBlock, cwd: &Path) -> Option<Diff> {
    let path = diff.new_path.as_deref().or(diff.old_path.as_deref())?;
    let mut old = Vec::new();
    let mut new = Vec::new();
    for line in &diff.lines {
        match line.kind {
            DiffLineKind::Context => {
                old.push(line.text.as_str());
                new.push(line.text.as_str());
            }
            DiffLineKind::Removed => old.push(line.text.as_str()),
            DiffLineKind::Added => new.push(line.text.as_str()),
            DiffLineKind::FileHeader | DiffLineKind::HunkHeader | DiffLineKind::NoNewline => {}
        }
    }
    let created = old.is_empty() && diff.old_path.is_none();
    let joined = |lines: Vec<&str>| {
        let mut text = lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        text
    };
    let old_text = (!created).then(|| joined(old));
    Some(Diff::new(cwd.join(path), joined(new)).old_text(old_text))
}
