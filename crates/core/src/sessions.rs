//! Owned sessions: the one attachment of a child, its lease, and the history snapshot
//! `history.page` reads.
//!
//! Every method here is synchronous and may block on the filesystem; the server runs
//! it on the session worker, one operation at a time. A failed operation leaves the
//! previous attachment as it was.
//!
//! The parts: `attachment` (create, open, load, page and list, and reading the
//! attached log again), `selection` (the model selection, its saved preferences, the
//! catalog and the cached model lists), `append` (records appended to the attached log), `assets` (where a
//! session's bulky tool output lives) and `title` (the session's recorded title).

use std::path::{Path, PathBuf};

use magi_config::{Env, Settings};
use magi_protocol::messages::Effort;
use magi_store::Home;
use magi_store::history::Projection;
use magi_store::lease::Lease;
use magi_store::log::{Appender, LogFingerprint};

use crate::catalog::{CachedListing, Catalog};
use crate::discovery::Discovery;
use crate::revision::Revision;

mod append;
mod assets;
mod attachment;
mod checkpoints;
mod selection;
mod title;

pub use crate::discovery::NOTICE_CWD_UNVERIFIED;
pub use append::AppendFailure;
pub(crate) use assets::{call_assets_dir, input_assets_dir};
pub use title::has_title;

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
    /// Whether their text blocks carry the colour of their lines (`tool.cards.styles`
    /// negotiated with `tool.cards`).
    card_styles: bool,
    /// The one catalog snapshot of this child (`model.catalog`).
    catalog: Catalog,
    /// The one listing of a provider's cached models (`model.cached`), apart from the
    /// catalog snapshot.
    cached: CachedListing,
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
    /// `session_start` hooks: `new` or `resume` until the first turn of this attachment
    /// takes it (`Sessions::take_session_start`).
    session_start: Option<&'static str>,
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
    /// Whether the attached session's `session_start` hooks are still to run, and why
    /// it started (`new`, `resume`): true once per attachment, at its first turn.
    pub(crate) fn take_session_start(&mut self) -> Option<&'static str> {
        self.attachment.as_mut()?.session_start.take()
    }

    /// The sessions of the workspace `cwd` (canonical) under `home`.
    pub fn new(home: Home, cwd: PathBuf) -> Sessions {
        Sessions {
            home,
            cwd,
            attachment: None,
            discovery: Discovery::default(),
            tool_cards: false,
            card_styles: false,
            catalog: Catalog::default(),
            cached: CachedListing::default(),
            admitted: None,
            saved_preferences: None,
        }
    }

    /// Gives the catalog the admitted settings and environment.
    pub fn with_admitted(mut self, settings: Settings, env: Env) -> Sessions {
        self.admitted = Some((settings, env));
        self
    }

    /// Makes history entries carry saved cards from now on (`tool.cards` negotiated).
    pub fn with_tool_cards(mut self, tool_cards: bool) -> Sessions {
        self.tool_cards = tool_cards;
        self
    }

    /// Makes saved cards' text blocks carry the colour of their lines from now on
    /// (`tool.cards.styles` negotiated with `tool.cards`).
    pub fn with_card_styles(mut self, card_styles: bool) -> Sessions {
        self.card_styles = card_styles;
        self
    }

    /// The attached session's ID.
    pub fn attached(&self) -> Option<&str> {
        self.attachment.as_ref().map(|a| a.session_id.as_str())
    }

    /// The attached session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}
