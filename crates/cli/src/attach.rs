//! The session a front end attaches to: a new one, the one `--resume ID` names, or the newest
//! of this directory for `--continue`, found with `session.discover` so that any number
//! of sessions is searched, not only the 256 `session.list` holds.

use anyhow::{Context, anyhow, bail};
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::limits::REQUEST_IDS;
use magi_protocol::messages::{
    EmptyParams, SessionDiscoverParams, SessionListEntry, SessionOpenParams, SessionResult,
};
use magi_protocol::methods;

/// Most `session.discover` batches one search asks for. Every batch moves the pass on by
/// at least one log, and a child has [`REQUEST_IDS`] requests in its life; this leaves
/// the front end enough of them.
const DISCOVER_BATCHES: usize = REQUEST_IDS - 64;

/// Which session a front end attaches to.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A new session.
    New,
    /// The session with this ID.
    Resume(String),
    /// The newest session of the working directory.
    Newest,
}

impl Target {
    /// The capabilities attaching needs, beyond the ones every run needs.
    pub(crate) fn capabilities(&self) -> &'static [&'static str] {
        match self {
            Target::New => &[],
            Target::Resume(_) => &["session.open"],
            Target::Newest => &["session.open", "session.discover"],
        }
    }
}

/// Most `session.discover` batches read to find a resumed session's title (64 logs
/// each): past that the title is left unknown rather than delay the start.
const TITLE_BATCHES: usize = 64;

/// Attaches the session `target` names.
pub(crate) async fn attach(
    backend: &mut Backend,
    target: &Target,
) -> anyhow::Result<SessionResult> {
    Ok(attach_titled(backend, target, false).await?.0)
}

/// Attaches the session `target` names, with its title (found in discovery) when
/// `want_title` and the session has one: a front end shows the title, not the ID.
pub(crate) async fn attach_titled(
    backend: &mut Backend,
    target: &Target,
    want_title: bool,
) -> anyhow::Result<(SessionResult, Option<String>)> {
    let (id, title) = match target {
        Target::New => {
            let session = backend
                .call::<methods::SessionCreate>(&EmptyParams {})
                .await?
                .map_err(|code| anyhow!("cannot create a session: {}", code.as_str()))?;
            return Ok((session, None));
        }
        Target::Resume(id) => (id.clone(), None),
        Target::Newest => {
            let entry = newest(backend)
                .await?
                .context("there is no session in this directory to continue; run without --continue to start one")?;
            (entry.session_id, entry.title)
        }
    };
    let params = SessionOpenParams {
        session_id: id.clone(),
    };
    let session = backend
        .call::<methods::SessionOpen>(&params)
        .await?
        .map_err(|code| open_error(&id, code))?;
    let title = match title {
        Some(title) => Some(title),
        None if want_title => title_of(backend, &id).await,
        None => None,
    };
    Ok((session, title))
}

/// The title discovery lists for session `id`, searched in at most [`TITLE_BATCHES`]
/// batches; `None` when it has none, or it was not found in them.
async fn title_of(backend: &mut Backend, id: &str) -> Option<String> {
    let mut params = SessionDiscoverParams::default();
    for _ in 0..TITLE_BATCHES {
        let batch = backend
            .call::<methods::SessionDiscover>(&params)
            .await
            .ok()?
            .ok()?;
        if let Some(entry) = batch.sessions.into_iter().find(|e| e.session_id == id) {
            return entry.title;
        }
        params.cursor = Some(batch.next_cursor?);
    }
    None
}

/// What a refused `session.open` means to the person who asked for it.
fn open_error(id: &str, code: ErrorCode) -> anyhow::Error {
    match code {
        ErrorCode::SessionMissing => anyhow!(
            "there is no session {id} in this directory (sessions belong to the directory \
             they were started in)"
        ),
        ErrorCode::CwdMismatch => {
            anyhow!(
                "session {id} was started in another directory; continue it from that directory"
            )
        }
        ErrorCode::Busy => {
            anyhow!("session {id} is in use by another magi-code process; try again when it ends")
        }
        ErrorCode::InvalidParams => {
            anyhow!("{id:?} is not a session ID (letters, digits, `-` and `_`, at most 64)")
        }
        other => anyhow!("cannot open session {id}: {}", other.as_str()),
    }
}

/// The session of this directory with the latest record, if there is one.
async fn newest(backend: &mut Backend) -> anyhow::Result<Option<SessionListEntry>> {
    let mut params = SessionDiscoverParams::default();
    let mut newest: Option<SessionListEntry> = None;
    for _ in 0..DISCOVER_BATCHES {
        let batch = backend
            .call::<methods::SessionDiscover>(&params)
            .await?
            .map_err(|code| anyhow!("cannot list this directory's sessions: {}", code.as_str()))?;
        for entry in batch.sessions {
            // Timestamps are UTC RFC 3339 with a fixed width, so their order is the
            // text's; an empty history (no timestamp) is the oldest.
            if newest
                .as_ref()
                .is_none_or(|best| entry.updated_at > best.updated_at)
            {
                newest = Some(entry);
            }
        }
        match batch.next_cursor {
            Some(cursor) => params.cursor = Some(cursor),
            None => return Ok(newest),
        }
    }
    bail!(
        "this directory has too many sessions to find the newest in one run; name one \
         with --resume ID"
    )
}
