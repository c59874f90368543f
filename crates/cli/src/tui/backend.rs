//! The requests Mission Control makes of its backend for turns: starting and renewing
//! it, turns, cancellation, approvals, reopening a session and its history. The slash
//! commands' requests are in `commands::run`.

use anyhow::{Context, anyhow};
use magi_client::fold::{FoldInput, PromptId, TURN_ID_RESERVE};
use magi_client::{Backend, BackendCommand};
use magi_protocol::messages::{
    ApprovalAnswerParams, ApprovalScope, EmptyParams, HistoryPageParams, SessionOpenParams,
    TurnCancelParams, TurnStartParams,
};
use magi_protocol::names::Extension;
use magi_protocol::{ErrorCode, Method, methods};

use super::{Answer, App, EXIT_WAIT};

/// Starts this executable as a backend and initializes it with what Mission Control
/// uses: the backend, or the code `initialize` was refused with.
pub(super) async fn start_backend() -> anyhow::Result<Result<Backend, ErrorCode>> {
    let exe = std::env::current_exe().context("cannot find the magi-code executable")?;
    // Its own process group: a signal meant for the terminal's foreground job (Mission
    // Control) must not reach the backend, which is stopped through the protocol.
    let mut backend = BackendCommand::new(exe)
        .own_process_group()
        .env(
            magi_core::INVOCATION_ENV,
            magi_core::Invocation::MissionControl.name(),
        )
        .spawn()?;
    let initialized = backend
        .initialize(&[
            Method::SessionCreate.as_str(),
            Method::SessionOpen.as_str(),
            Method::HistoryPage.as_str(),
            Method::TurnStart.as_str(),
            Method::TurnCancel.as_str(),
            Method::ApprovalAnswer.as_str(),
            Method::Status.as_str(),
            Method::Shutdown.as_str(),
            Extension::ToolCards.as_str(),
            // Approvals show their subject and can be answered for the session, and a
            // change's whole size.
            Extension::ApprovalScopes.as_str(),
            Extension::ApprovalChangeCounts.as_str(),
            // `/jobs`: background commands' output, and stopping them.
            Extension::JobsControl.as_str(),
            // The model may ask the person to choose.
            Extension::UserQuestions.as_str(),
            // The slash commands: sessions past the 256 of `session.list`, the model
            // catalog with its reasons and refresh, the models fetched lists hold, the
            // switch, token usage and compaction on demand.
            Method::SessionDiscover.as_str(),
            Method::ModelCatalog.as_str(),
            Method::ModelCatalogStatus.as_str(),
            Method::ModelRefresh.as_str(),
            Method::SelectionSet.as_str(),
            Extension::ModelCached.as_str(),
            Extension::SessionUsage.as_str(),
            // Images a prompt mentions with `@` go with it.
            Extension::InputAttachments.as_str(),
            // Shift+Tab switches the approval mode; `/permissions` lists the rules.
            Extension::PermissionModes.as_str(),
            // The model's plan, pinned above the composer.
            Extension::PlanTodo.as_str(),
            // `/undo` and `/rewind`.
            Extension::Checkpoints.as_str(),
            // Command output in the colour it was printed in.
            Extension::ToolCardStyles.as_str(),
        ])
        .await?;
    Ok(initialized.map(|_| backend))
}

/// Request IDs kept in reserve before a turn: `MAGI_TUI_ID_RESERVE` when set (so the
/// renewal can be exercised without thousands of requests), else the client library's
/// [`TURN_ID_RESERVE`].
fn id_reserve() -> usize {
    std::env::var("MAGI_TUI_ID_RESERVE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(TURN_ID_RESERVE)
}

impl App {
    /// A child has 4,096 request IDs in its life. Before a turn, if fewer than the
    /// reserve remain, this child is shut down and a fresh one reopens the same durable
    /// session (or starts a new one when the session was never made durable), so a
    /// running turn never runs out of IDs to cancel, answer or page with.
    pub(super) async fn renew_backend_if_needed(
        &mut self,
        backend: &mut Backend,
    ) -> anyhow::Result<()> {
        if !self.backend_gone && backend.ids_remaining() > id_reserve() {
            return Ok(());
        }
        self.renew_backend(backend).await
    }

    /// Sends `prompt` on a backend with request IDs to spare, started fresh first when
    /// needed; when no fresh one could start, the prompt goes back to the composer.
    pub(super) async fn send_renewed(
        &mut self,
        backend: &mut Backend,
        prompt: String,
    ) -> anyhow::Result<()> {
        self.renew_backend_if_needed(backend).await?;
        if self.backend_gone {
            self.composer.set_text(prompt);
            return Ok(());
        }
        self.send(backend, prompt).await
    }

    /// The backend ended (its output closed): how, in the transcript, with what the
    /// person can do; the run it ran, its open calls and approvals, are unknown.
    pub(super) async fn backend_ended(&mut self, backend: &mut Backend) {
        let wait = std::time::Duration::from_millis(magi_protocol::limits::CLEANUP_WAIT_MS);
        let end = backend.end_within(wait).await;
        let said = format!(
            "{}. Press r to start a fresh backend on this session (a prompt sent starts one too).",
            end.describe()
        );
        self.transcript.apply(FoldInput::BackendEnded { said });
        self.backend_gone = true;
        self.run_started = None;
        self.stopping = false;
        self.question = None;
        self.status = "disconnected · r starts a fresh backend".into();
    }

    /// Shuts this backend down (if it still runs) and starts a fresh one on the same
    /// durable session, or a new session when the session was never made durable. The
    /// calls a dead backend left open are settled by the recovery rules at the next
    /// turn. A fresh backend that cannot start is said, and `r` tries again.
    pub(super) async fn renew_backend(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        let renewed = if self.backend_gone {
            "a fresh backend reopened the session"
        } else {
            "backend renewed"
        };
        if !self.backend_gone {
            let _ = backend.shutdown().await;
            let _ = backend.wait_within(EXIT_WAIT).await;
            // Shut down, it is gone whether or not a fresh one starts: `r` then tries
            // again, and nothing is asked of the old one.
            self.backend_gone = true;
        }
        let started = match start_backend().await {
            Ok(Ok(started)) => started,
            Ok(Err(code)) => {
                self.status = format!(
                    "a fresh backend could not start: {}; r tries again",
                    crate::explain::initialize_failed(code, &[])
                );
                return Ok(());
            }
            Err(e) => {
                self.status = format!("a fresh backend could not start: {e:#}; r tries again");
                return Ok(());
            }
        };
        *backend = started;
        self.backend_gone = false;
        self.clock.backend_renewed();
        match self.transcript.durable_session().map(str::to_owned) {
            Some(id) => self.open_session(backend, id).await?,
            None => {
                let session = backend
                    .call::<methods::SessionCreate>(&EmptyParams {})
                    .await?
                    .map_err(|code| anyhow!("session.create failed: {}", code.as_str()))?;
                self.session_id = session.session_id.clone();
                self.transcript.apply(FoldInput::SessionAttached(session));
            }
        }
        self.sync_mode(backend).await?;
        self.status = renewed.into();
        Ok(())
    }

    /// Submits a prompt with the images it mentions: the fold shows it at once and
    /// learns whether it was accepted. A mentioned image that cannot be sent keeps the
    /// prompt in the composer and says why.
    pub(super) async fn send(
        &mut self,
        backend: &mut Backend,
        prompt: String,
    ) -> anyhow::Result<()> {
        // A session started with /new takes the model chosen before it, now that its
        // first turn makes it durable anyway.
        if let Some(choice) = self.reselect.take() {
            self.select(backend, choice).await?;
        }
        let cwd = std::env::current_dir().unwrap_or_default();
        let attachments = match super::attachments::attachments(&prompt, &cwd) {
            Ok(attachments) => attachments,
            Err(why) => {
                self.composer.set_text(prompt);
                self.status = why;
                return Ok(());
            }
        };
        let id = PromptId(self.next_prompt);
        self.next_prompt += 1;
        self.transcript.apply(FoldInput::PromptSubmitted {
            id,
            text: prompt.clone(),
        });
        let params = TurnStartParams {
            session_id: self.session_id.clone(),
            prompt,
            attachments,
        };
        let answered = match backend.call::<methods::TurnStart>(&params).await {
            Ok(answered) => answered,
            // The backend went away with the prompt in flight: how is said, and the
            // prompt, never persisted, comes back to the composer.
            Err(magi_client::ClientError::Closed) => {
                self.backend_ended(backend).await;
                if let Some(text) = self.transcript.take_restored_prompt() {
                    self.composer.set_text(text);
                }
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        match answered {
            Ok(started) => {
                self.run_started = Some(std::time::Instant::now());
                self.stopping = false;
                self.transcript.apply(FoldInput::TurnAccepted {
                    id,
                    run_id: started.run_id,
                });
            }
            Err(code) => {
                self.transcript.apply(FoldInput::TurnRejected { id, code });
                // The fold gives the prompt back to the composer.
                if let Some(text) = self.transcript.take_restored_prompt() {
                    self.composer.set_text(text);
                }
                self.status = crate::explain::turn_refused(code, &params.prompt);
            }
        }
        Ok(())
    }

    /// Cancels the running turn, if there is one; its end arrives as `run.finished`.
    pub(super) async fn stop(&mut self, backend: &mut Backend) -> anyhow::Result<()> {
        let running = self
            .transcript
            .runs()
            .iter()
            .rev()
            .find(|r| r.state == magi_client::fold::RunState::Running)
            .map(|r| r.run_id.clone());
        if let Some(run_id) = running {
            let params = TurnCancelParams {
                session_id: self.session_id.clone(),
                run_id,
            };
            // A refusal means the run is no longer active; its end arrives as an event.
            // The status line says "stopping…" until `run.finished` arrives.
            let _ = backend.call::<methods::TurnCancel>(&params).await?;
            self.stopping = true;
        }
        Ok(())
    }

    /// Answers the pending approval, if there is one.
    pub(super) async fn answer(
        &mut self,
        backend: &mut Backend,
        answer: Answer,
    ) -> anyhow::Result<()> {
        let Some(pending) = self.pending_approval() else {
            return Ok(());
        };
        let (run_id, approval_id) = (pending.run_id.clone(), pending.approval_id.clone());
        let allow = matches!(answer, Answer::AllowOnce | Answer::AllowForSession);
        let mut params = ApprovalAnswerParams::once(&self.session_id, &run_id, &approval_id, allow);
        match answer {
            Answer::AllowForSession => params.scope = Some(ApprovalScope::Session),
            // An empty message is a plain denial.
            Answer::DenyWithMessage(message) if !message.trim().is_empty() => {
                params.message = Some(message)
            }
            _ => {}
        }
        // A late answer is stale and changes nothing; the run goes on either way.
        if backend
            .call::<methods::ApprovalAnswer>(&params)
            .await?
            .is_err()
        {
            self.status = "the approval was no longer open (it expired or its run ended); \
                           the call was denied"
                .into();
        }
        self.transcript.apply(FoldInput::ApprovalAnswered {
            run_id,
            approval_id,
            allow,
        });
        self.clock.approval_answered(std::time::Instant::now());
        Ok(())
    }

    /// Answers (or declines) the open questions and closes their picker.
    pub(super) async fn answer_questions(
        &mut self,
        backend: &mut Backend,
        answers: Option<Vec<magi_protocol::messages::QuestionReply>>,
    ) -> anyhow::Result<()> {
        let Some(picker) = self.question.take() else {
            return Ok(());
        };
        let declined = answers.is_none();
        let params = magi_protocol::messages::QuestionAnswerParams {
            session_id: picker.asked.session_id,
            run_id: picker.asked.run_id,
            question_id: picker.asked.question_id,
            answers,
        };
        // A late answer is stale and changes nothing; the run goes on either way.
        let answered = backend.call::<methods::QuestionAnswer>(&params).await?;
        self.status = match (answered, declined) {
            (Ok(_), false) => "questions answered".into(),
            (Ok(_), true) => "questions declined".into(),
            (Err(code), _) => format!("the answer was refused: {}", code.as_str()),
        };
        Ok(())
    }

    /// Reopens a session and shows its history.
    pub(super) async fn open_session(
        &mut self,
        backend: &mut Backend,
        id: String,
    ) -> anyhow::Result<()> {
        let params = SessionOpenParams {
            session_id: id.clone(),
        };
        let opened = backend.call::<methods::SessionOpen>(&params).await?;
        match opened {
            Ok(result) => {
                let revision = result.revision.clone();
                self.session_id = result.session_id.clone();
                self.transcript.apply(FoldInput::SessionAttached(result));
                self.load_history(backend, &id, &revision).await?;
                self.status = String::new();
                self.sync_mode(backend).await?;
            }
            Err(code) => self.status = super::commands::refused("session.open", code),
        }
        Ok(())
    }

    /// Shows the pages of a history revision in place of the transcript.
    pub(super) async fn load_history(
        &mut self,
        backend: &mut Backend,
        session_id: &str,
        revision: &str,
    ) -> anyhow::Result<()> {
        // The calls shown live now are the last run's: their times outlive the swap.
        let ran = self.clock.seen_calls(self.transcript.items());
        let mut cursor: Option<String> = None;
        loop {
            let params = HistoryPageParams {
                session_id: session_id.to_owned(),
                revision: revision.to_owned(),
                cursor,
            };
            let page = match backend.call::<methods::HistoryPage>(&params).await? {
                Ok(page) => page,
                Err(code) => {
                    self.status = format!("history.page: {}", code.as_str());
                    return Ok(());
                }
            };
            cursor = page.next_cursor.clone();
            self.transcript.apply(FoldInput::HistoryPage(page));
            if cursor.is_none() {
                self.clock
                    .history_shown(session_id, self.transcript.items(), &ran);
                return Ok(());
            }
        }
    }
}
