//! Opening a session: its backend spawned in the session's folder, initialized with
//! what this front end needs, and attached to a new or saved session; for
//! `session/load`, the whole saved conversation replayed as `session/update`s first.

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Error, McpServer, SessionConfigOption, SessionUpdate, ToolCall,
};
use magi_client::{Backend, BackendCommand};
use magi_protocol::messages::{
    EmptyParams, EntryKind, HistoryPageParams, SavedCard, SessionOpenParams, SessionResult,
};
use magi_protocol::{ErrorCode, methods, names};
use serde_json::json;

use super::{Handle, Session, config};
use crate::rpc::Peer;
use crate::tool_calls;

/// What the backend is initialized with: the methods and the extensions this front end
/// uses.
const CAPABILITIES: &[&str] = &[
    "status",
    "shutdown",
    "session.create",
    "session.open",
    "session.list",
    "history.page",
    "model.catalog",
    "selection.set",
    "turn.start",
    "turn.cancel",
    "approval.answer",
    names::APPROVAL_SCOPES,
    names::SESSION_USAGE,
    names::INPUT_ATTACHMENTS,
    names::REASONING_SUMMARIES,
    magi_protocol::cards::CAPABILITY,
    names::PERMISSION_MODES,
    // The model's plan, sent as `plan` updates.
    names::PLAN_TODO,
];
/// Most history pages one replay reads (each at most 100 entries).
const REPLAY_PAGES: usize = 10_000;

/// Which session to attach.
pub(crate) enum Target {
    /// A new one (`session/new`).
    New,
    /// A saved one, replayed (`session/load`).
    Load(String),
    /// A saved one, not replayed (`session/resume`).
    Resume(String),
}

/// How a session's backend is started, kept to start a fresh one when it ended: the
/// variables beyond ours (the client's MCP servers) and what it negotiates.
pub(crate) struct Start {
    env: Vec<(String, String)>,
    client_files: bool,
    terminals: bool,
}

impl Start {
    /// A fresh backend in `cwd` attached to session `id`, reopened; a session that was
    /// never made durable cannot be, and a new one is begun in its place. Returns the
    /// backend and its session.
    pub(super) async fn again(&self, cwd: &Path, id: &str) -> Result<(Backend, String), Error> {
        let mut backend = backend_with(cwd, &self.env, self.client_files, self.terminals).await?;
        let params = SessionOpenParams {
            session_id: id.to_owned(),
        };
        let attached = match backend.call::<methods::SessionOpen>(&params).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ErrorCode::SessionMissing)) => attach(&mut backend, cwd, &Target::New).await,
            Ok(Err(code)) => Err(open_error(code, Some(id), cwd)),
            Err(e) => Err(config::gone(&e)),
        };
        match attached {
            Ok(attached) => Ok((backend, attached.session_id)),
            Err(e) => {
                backend.kill().await;
                Err(e)
            }
        }
    }
}

/// A started backend in `cwd` with these variables beyond ours, initialized.
pub(crate) async fn backend(cwd: &Path, env: &[(String, String)]) -> Result<Backend, Error> {
    backend_with(cwd, env, false, false).await
}

/// `backend`, with `client.files` negotiated when the client serves the files, and
/// `client.terminals` when it offers its terminal (the folder's `[acp]
/// client_terminals` then decides where `bash` runs).
async fn backend_with(
    cwd: &Path,
    env: &[(String, String)],
    client_files: bool,
    terminals: bool,
) -> Result<Backend, Error> {
    let exe = std::env::current_exe().map_err(|e| {
        Error::internal_error().data(json!(format!("cannot find the magi-code executable: {e}")))
    })?;
    let command = env.iter().fold(
        BackendCommand::new(exe).current_dir(cwd),
        |command, (k, v)| command.env(k, v),
    );
    let mut backend = command
        .spawn()
        .map_err(|e| Error::internal_error().data(json!(format!("{e}"))))?;
    let mut capabilities = CAPABILITIES.to_vec();
    if terminals {
        capabilities.push(names::CLIENT_TERMINALS);
    }
    if client_files {
        capabilities.push(names::CLIENT_FILES);
    }
    match backend.initialize(&capabilities).await {
        Ok(Ok(_)) => Ok(backend),
        Ok(Err(code)) => {
            backend.kill().await;
            let why = match crate::explain(code, cwd, env) {
                Some(why) => format!("{why} [{}]", code.as_str()),
                None if env.is_empty() => {
                    format!("{}; run `magi-code doctor` there to see why", code.as_str())
                }
                None => format!(
                    "{}; an MCP server the client passed may not have started; run \
                     `magi-code doctor` there for the rest",
                    code.as_str()
                ),
            };
            Err(Error::internal_error().data(json!(format!(
                "magi-code could not start in {}: {why}",
                cwd.display()
            ))))
        }
        Err(e) => {
            backend.kill().await;
            Err(config::gone(&e))
        }
    }
}

/// Opens a session in `cwd`: its ID, its handle and its config options.
pub(crate) async fn open(
    peer: Peer,
    cwd: PathBuf,
    mcp_servers: &[McpServer],
    target: Target,
    client_files: bool,
    terminals: bool,
) -> Result<(String, Handle, Vec<SessionConfigOption>), Error> {
    let env = crate::mcp::backend_env(mcp_servers)?;
    let mut backend = backend_with(&cwd, &env, client_files, terminals).await?;
    let opened = attach(&mut backend, &cwd, &target).await;
    let attached = match opened {
        Ok(attached) => attached,
        Err(e) => {
            backend.kill().await;
            return Err(e);
        }
    };
    let start = Start {
        env,
        client_files,
        terminals,
    };
    let session = Session::new(attached.session_id.clone(), cwd, start, backend, peer);
    let mut session = session;
    let ready = async {
        if let Target::Load(_) = target {
            session.replay(&attached.revision).await?;
        }
        config::options(&mut session.backend, &session.backend_id).await
    };
    match ready.await {
        Ok(options) => {
            let id = session.id.clone();
            Ok((id, session.start(), options))
        }
        Err(e) => {
            session.backend.kill().await;
            Err(e)
        }
    }
}

async fn attach(
    backend: &mut Backend,
    cwd: &Path,
    target: &Target,
) -> Result<SessionResult, Error> {
    let (answer, id) = match target {
        Target::New => (
            backend
                .call::<methods::SessionCreate>(&EmptyParams {})
                .await,
            None,
        ),
        Target::Load(id) | Target::Resume(id) => {
            let params = SessionOpenParams {
                session_id: id.clone(),
            };
            (
                backend.call::<methods::SessionOpen>(&params).await,
                Some(id),
            )
        }
    };
    match answer {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(code)) => Err(open_error(code, id.map(String::as_str), cwd)),
        Err(e) => Err(config::gone(&e)),
    }
}

/// Why a session could not be created or opened, in words.
fn open_error(code: ErrorCode, id: Option<&str>, cwd: &Path) -> Error {
    let id = id.unwrap_or("");
    match code {
        ErrorCode::SessionMissing | ErrorCode::InvalidParams => Error::resource_not_found(None)
            .data(json!(format!(
                "there is no session {id} in {} (sessions belong to the folder they were \
                 started in)",
                cwd.display()
            ))),
        ErrorCode::CwdMismatch => Error::invalid_params().data(json!(format!(
            "session {id} was started in another folder than {}",
            cwd.display()
        ))),
        ErrorCode::Busy | ErrorCode::SessionBusy => Error::internal_error().data(json!(format!(
            "session {id} is in use by another magi-code process"
        ))),
        other => Error::internal_error().data(json!(format!(
            "the backend could not attach the session: {}",
            other.as_str()
        ))),
    }
}

impl Session {
    /// `session/load`'s replay: every saved entry as the update that shows it — the
    /// user's prompts, the replies, the provider's reasoning summaries and each tool call
    /// with its final status and content, a plan's call followed by its `plan`.
    async fn replay(&mut self, revision: &str) -> Result<(), Error> {
        let mut params = HistoryPageParams {
            session_id: self.backend_id.clone(),
            revision: revision.to_owned(),
            cursor: None,
        };
        for _ in 0..REPLAY_PAGES {
            let page = match self.backend.call::<methods::HistoryPage>(&params).await {
                Ok(Ok(page)) => page,
                Ok(Err(code)) => {
                    return Err(Error::internal_error().data(json!(format!(
                        "the session's history could not be read: {}",
                        code.as_str()
                    ))));
                }
                Err(e) => return Err(config::gone(&e)),
            };
            for entry in page.entries {
                let text = || ContentChunk::new(ContentBlock::from(entry.text.clone()));
                let update = match entry.kind {
                    EntryKind::User => SessionUpdate::UserMessageChunk(text()),
                    EntryKind::Assistant => SessionUpdate::AgentMessageChunk(text()),
                    EntryKind::ReasoningSummary => SessionUpdate::AgentThoughtChunk(text()),
                    EntryKind::Activity => match &entry.tool_card {
                        SavedCard::Card(card) => {
                            SessionUpdate::ToolCall(tool_calls::tool_call(card, &self.cwd))
                        }
                        // Without a card, the call is shown by its summary (part 0).
                        SavedCard::Null if entry.part == 0 => SessionUpdate::ToolCall(
                            ToolCall::new(entry.message_id.clone(), entry.text.clone()),
                        ),
                        _ => continue,
                    },
                    EntryKind::Compaction | EntryKind::Diagnostic => continue,
                };
                if entry.text.is_empty() && !matches!(update, SessionUpdate::ToolCall(_)) {
                    continue;
                }
                self.update(update).await;
                if let SavedCard::Card(card) = &entry.tool_card
                    && let Some(plan) = crate::plan::plan_update(card)
                {
                    self.update(plan).await;
                }
            }
            match page.next_cursor {
                Some(cursor) if !page.complete => params.cursor = Some(cursor),
                _ => return Ok(()),
            }
        }
        Ok(())
    }
}
