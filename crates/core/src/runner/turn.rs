//! The session's turn: its durable input, the conversation of the session's agent, and
//! its end.

use std::sync::Arc;

use magi_protocol::extensions::ExtensionSet;
use magi_protocol::messages::{
    DIAGNOSTIC_ATTACHMENT_FAILED, DIAGNOSTIC_INTERNAL_ERROR, Event, InputPersisted, Persistence,
    RunFinished, RunOutcome,
};
use magi_protocol::{ErrorCode, Extension};
use magi_provider::Item;
use magi_store::records::{RecordBody, TurnOutcome};

use super::calls::{CallService, Gates, Role};
use super::conversation::{conversation, input_images};
use super::dialogue::{Round, round_trip};
use super::ending::Ending;
use super::exchange::Exchange;
use super::hooks;
use super::journal::{Journal, Workspace};
use super::offer::Offer;
use super::output::Output;
use super::steps::{LOOP_NOTE, Repeats, Steps};
use super::task::Subagents;
use super::title::{TitleJob, TitleSink};
use crate::agent::Agent;
use crate::checkpoints::Phase;
use crate::client_tools::ClientTool;
use crate::sessions::{Sessions, has_title, input_assets_dir};

mod checkpoints;
mod titles;

/// One admitted turn.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// The attached session.
    pub session_id: String,
    /// The run's UUID.
    pub run_id: String,
    /// The prompt, already checked (non-blank, within the bound).
    pub prompt: String,
    /// The extensions the client negotiated. Those a turn reads: `tool.cards` (the run
    /// sends `tool.card` events), `tool.cards.styles` with it (card text blocks carry
    /// the colour of their lines), `approval.scopes` (approval requests carry their
    /// details, and answers may reach the rest of the session), `user.questions` and
    /// `plan.todo` (the session's agent is offered `ask_user` and `todo`),
    /// `session.usage` (each model request is told as `usage.updated`),
    /// `reasoning.summaries` (provider summaries stream as `reasoning.delta`),
    /// `client.files` (the file tools read and write through the client) and
    /// `checkpoints` (a turn whose state could not be recorded says so).
    pub extensions: ExtensionSet,
    /// The tools the client registered (`client.tools`); empty without it.
    pub client_tools: Arc<Vec<ClientTool>>,
    /// Where a title for an untitled session goes (`[sessions] titles = "model"`);
    /// `None` asks for none.
    pub titles: Option<TitleSink>,
    /// Whether the title request starts beside the turn's first model request, from
    /// the prompt alone, and counts only if it is done when the turn ends (a backend
    /// `exec` started, which exits with its run); otherwise it follows a completed
    /// turn's terminal event, from the prompt and the reply.
    pub titles_beside: bool,
    /// The images given with the prompt (`input.attachments`), workspace paths already
    /// checked at admission; empty without them.
    pub attachments: Vec<String>,
    /// The session's approval mode and rules, shared with the connection, which may
    /// change them while the run works (`permissions.modes`).
    pub permissions: super::RuleBook,
}

impl TurnRequest {
    /// Whether the client negotiated `extension`.
    pub(super) fn has(&self, extension: Extension) -> bool {
        self.extensions.contains(extension)
    }
}

/// The session's turn.
pub(super) struct Turn {
    request: TurnRequest,
    /// The session's agent and what it is offered.
    exchange: Exchange,
    workspace: Workspace,
    gates: Gates,
    /// Runs the agent's `task` calls.
    subagents: Subagents,
    /// The input was appended.
    input_durable: bool,
    /// An append after the input failed.
    degraded: bool,
    /// The session had no title when the turn began.
    untitled: bool,
    /// The newest title the turn recorded (by `magi_control` or a compaction).
    recorded_title: Option<String>,
    /// The title request to make once the run's terminal event is out.
    title: Option<TitleJob>,
    /// The title request running beside the turn (`TurnRequest::titles_beside`).
    beside_title: Option<tokio::task::JoinHandle<()>>,
}

impl Turn {
    /// The turn of `request` by `agent`, in the workspace of `sessions`.
    pub(super) fn new(
        sessions: &Sessions,
        agent: Agent,
        request: TurnRequest,
        gates: Gates,
    ) -> Turn {
        let offer = Offer::session(
            Arc::clone(&agent.disabled_tools),
            agent
                .profile
                .as_deref()
                .and_then(|(_, profile)| profile.tools.clone()),
            Arc::clone(&request.client_tools),
        )
        .asking_user(request.has(Extension::UserQuestions))
        .planning(request.has(Extension::PlanTodo))
        .taking_images(agent.images);
        let workspace = Workspace::of(sessions);
        let exchange =
            Exchange::new(agent, offer, workspace.cwd(), true).cached_as(&request.session_id);
        Turn {
            request,
            exchange,
            workspace,
            gates,
            subagents: Subagents::default(),
            input_durable: false,
            degraded: false,
            untitled: false,
            recorded_title: None,
            title: None,
            beside_title: None,
        }
    }

    /// Runs the turn and returns its `run.finished` event, for the caller to send once
    /// the sessions are handed back.
    pub(super) async fn run(&mut self, sessions: &mut Sessions, output: &mut Output) -> Event {
        let agent = &self.exchange.agent;
        let cwd = self.workspace.cwd().to_owned();
        // Commands may follow: the kernel probe and their spawn server start now, beside
        // the model's answer (once per backend; a backend that never runs a turn starts
        // neither).
        magi_tools::sandbox::warm(&cwd);
        // Before anything of the turn can change a file: its hooks wait for it when there
        // are any, each round's calls always.
        self.begin_start_checkpoint(sessions, output).await;
        if !agent.hooks.is_empty() {
            self.gates.start_checkpoint.ready().await;
        }
        let session_start = sessions.take_session_start();
        let hooked =
            hooks::before_input(output, agent, &cwd, session_start, &self.request.prompt).await;
        let ending = match hooked {
            Ok(notes) => match self.persist_input(sessions, output, notes).await {
                Ok(mut items) => {
                    self.start_title_beside();
                    let ending = self.converse(sessions, output, &mut items).await;
                    if self.request.titles_beside {
                        self.end_title_beside();
                    } else {
                        self.plan_title(&ending, &items);
                    }
                    ending
                }
                Err(ending) => ending,
            },
            Err(ending) => ending,
        };
        hooks::turn_end(output, &self.exchange.agent, &cwd, ending.outcome).await;
        let start = self.gates.start_checkpoint.take_outcome().await;
        // A turn that ran no call and no hook changed no file: its end is its start,
        // and no second walk of the workspace is needed to say so.
        let unchanged =
            !self.gates.start_checkpoint.calls_ran() && self.exchange.agent.hooks.is_empty();
        let start_tree = match &start {
            Some(Ok(snapshot)) if unchanged => Some(snapshot.tree.clone()),
            _ => None,
        };
        if let Some(recorded) = start {
            self.report_checkpoint(output, Phase::Start, recorded).await;
        }
        match start_tree {
            Some(tree) => {
                let store = sessions.checkpoint_store();
                let turn_id = self.turn_id();
                // Off the run's thread: the store's lock may be held by a prune.
                let _ = tokio::task::spawn_blocking(move || {
                    store.record_tree(&turn_id, Phase::End, &tree)
                })
                .await;
            }
            None => self.checkpoint(sessions, output, Phase::End).await,
        }
        // A title recorded during the turn is told before its end (`session.usage`).
        if let Some(title) = self.recorded_title.take() {
            output.titled(title).await;
        }
        self.finish(sessions, output, ending)
    }

    /// Ends the run after its work panicked (`crash`, already reported by the hook):
    /// cancelling the run stops what it started, its unfinished cards end `unknown`, a
    /// diagnostic says where it happened, and the turn's end is recorded `failed` where
    /// the log still takes it. Returns the run's `run.finished`.
    pub(super) async fn crashed(
        &mut self,
        sessions: &mut Sessions,
        output: &mut Output,
        crash: &magi_crash::Crash,
    ) -> Event {
        output.cancel.cancel();
        output.end_unfinished_cards().await;
        output
            .diagnostic(DIAGNOSTIC_INTERNAL_ERROR, &crash.summary())
            .await;
        let ending = Ending::failed(ErrorCode::ExecutionFailed);
        match magi_crash::contain(|| self.finish(sessions, output, ending)) {
            Ok(finished) => finished,
            // The log could not take the turn's end either: what was recorded is
            // recorded, and nothing more is claimed.
            Err(_) => Event::RunFinished(RunFinished {
                session_id: self.request.session_id.clone(),
                run_id: self.request.run_id.clone(),
                outcome: RunOutcome::Failed,
                persistence: if self.input_durable {
                    Persistence::Degraded
                } else {
                    Persistence::NotStarted
                },
                revision: None,
                error_code: Some(ErrorCode::ExecutionFailed),
            }),
        }
    }

    /// The turn's ID: the run's.
    fn turn_id(&self) -> String {
        self.request.run_id.clone()
    }

    /// Decodes and keeps the images given with the prompt (`input.attachments`) in the
    /// input's assets, before anything is recorded; their facts for the input's record.
    /// Admission checked only their headers: one that no longer decodes, or a model that
    /// takes no images, is what the error says.
    fn keep_attachments(
        &self,
        folder: Option<&std::path::Path>,
        message_id: &str,
    ) -> Result<Vec<serde_json::Value>, String> {
        let agent = &self.exchange.agent;
        if !self.request.attachments.is_empty() && !agent.images {
            let (provider, model) = (&agent.provider, &agent.model);
            return Err(format!(
                "Model {model:?} of provider {provider:?} does not take images, so the \
                 attached images cannot be sent. Switch to a model that takes images (or, \
                 when this one does, set `images = true` under [models.\"{provider}/{model}\"] \
                 in the settings)."
            ));
        }
        let mut images = Vec::new();
        for (index, given) in self.request.attachments.iter().enumerate() {
            let folder = folder.ok_or("The session has no assets folder to keep images in.")?;
            let dir = input_assets_dir(folder, message_id, index);
            images.push(magi_tools::keep_attachment(
                self.workspace.cwd(),
                given,
                &dir,
            )?);
        }
        Ok(images)
    }

    /// The turn's context note (`crate::prompt::environment`), worked out off the run's
    /// thread since it waits for `git status`; cancelling the run stops it.
    async fn turn_context(&self, output: &Output) -> String {
        let agent = self.exchange.agent.clone();
        let mode = self.gates.rules.mode();
        let cwd = self.workspace.cwd().to_owned();
        let cancel = output.cancel.clone();
        tokio::task::spawn_blocking(move || {
            crate::prompt::environment::turn_note(&agent, mode, &cwd, &move || {
                cancel.is_cancelled()
            })
        })
        .await
        .unwrap_or_else(|_| crate::prompt::environment::TURN_NOTE_HEADING.to_owned())
    }

    /// Appends the turn's start, its context and the prompt, then acknowledges them.
    async fn persist_input(
        &mut self,
        sessions: &mut Sessions,
        output: &mut Output,
        notes: Vec<(magi_config::HookEvent, String)>,
    ) -> Result<Vec<Item>, Ending> {
        // A mode set or a rule revoked after the last run took its records goes first,
        // or the load below would undo the revocation.
        for body in self.gates.rules.take_unrecorded() {
            if sessions.append(body).is_err() {
                return Err(Ending::failed(ErrorCode::PersistenceFailed));
            }
        }
        // This turn's context note says the mode: a switch after the last turn's last
        // request needs no note of its own.
        let _ = self.gates.rules.take_untold();
        let records = sessions.records().map_err(Ending::failed)?;
        self.untitled = !has_title(&records);
        // The session's rules hold from its first call on, in whatever child runs it.
        self.gates.rules.load(&records);
        // Calls a crashed run left without a result are settled first: nothing that
        // might have had effects runs again, and the model is told what is known.
        let turn_id = self.turn_id();
        let mut journal = Journal::session(sessions);
        let mut service = CallService {
            output,
            journal: &mut journal,
            workspace: &self.workspace,
            agent: &self.exchange.agent,
            offer: &self.exchange.offer,
            gates: &self.gates,
            turn_id: &turn_id,
        };
        let recovered = service.recover(&mut Role::Session(&mut self.subagents), &records);
        let records = match recovered {
            Some(0) => records,
            Some(_) => sessions.records().map_err(Ending::failed)?,
            None => return Err(Ending::failed(ErrorCode::PersistenceFailed)),
        };
        let folder = sessions.conversation_dir();
        let mut items = conversation(&records, folder.as_deref());
        let message_id = format!("u-{}", self.request.run_id);
        let images = match self.keep_attachments(folder.as_deref(), &message_id) {
            Ok(images) => images,
            Err(why) => {
                output.diagnostic(DIAGNOSTIC_ATTACHMENT_FAILED, &why).await;
                return Err(Ending::failed(ErrorCode::ExecutionFailed));
            }
        };
        // What changes during a session goes with the prompt, before it.
        let context = self.turn_context(output).await;
        let mut prompt = vec![
            Item::User {
                text: context.clone(),
            },
            Item::User {
                text: self.request.prompt.clone(),
            },
        ];
        prompt.extend(input_images(&message_id, &images, folder.as_deref()));
        items.extend(prompt.iter().cloned());
        self.exchange.set_prompt(prompt);
        let started = RecordBody::TurnStarted {
            turn_id: turn_id.clone(),
        };
        let context = RecordBody::TurnContext {
            turn_id: turn_id.clone(),
            text: context,
        };
        let input = RecordBody::UserInput {
            turn_id: turn_id.clone(),
            message_id,
            text: self.request.prompt.clone(),
            images,
        };
        // What the hooks added follows the prompt, for this turn's requests and later
        // turns' alike.
        let notes = notes.into_iter().map(|(event, text)| {
            items.push(Item::User { text: text.clone() });
            RecordBody::HookNote {
                turn_id: turn_id.clone(),
                event: event.name().to_owned(),
                text,
            }
        });
        let bodies: Vec<RecordBody> = [started, context, input].into_iter().chain(notes).collect();
        for body in bodies {
            if sessions.append(body).is_err() {
                return Err(Ending::failed(ErrorCode::PersistenceFailed));
            }
        }
        self.input_durable = true;
        let (revision, message_id) = match sessions.refresh() {
            Ok((revision, Some(message_id))) => (revision, message_id),
            Ok((_, None)) | Err(_) => {
                // The prompt is on disk but cannot be shown as a projection entry.
                self.degraded = true;
                return Err(Ending::failed(ErrorCode::PersistenceFailed));
            }
        };
        let event = Event::InputPersisted(InputPersisted {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            message_id,
            durable: true,
            revision,
        });
        output.critical(event).await;
        if output.lost() {
            return Err(Ending::failed(ErrorCode::OutputUnavailable));
        }
        Ok(items)
    }

    /// Model round trips until the model stops asking for tools.
    async fn converse(
        &mut self,
        sessions: &mut Sessions,
        output: &mut Output,
        items: &mut Vec<Item>,
    ) -> Ending {
        let turn_id = self.turn_id();
        let mut journal = Journal::session(sessions);
        let mut service = CallService {
            output,
            journal: &mut journal,
            workspace: &self.workspace,
            agent: &self.exchange.agent,
            offer: &self.exchange.offer,
            gates: &self.gates,
            turn_id: &turn_id,
        };
        let mut role = Role::Session(&mut self.subagents);
        let mut steps = Steps::new(self.exchange.agent.max_steps);
        let ending = loop {
            if let Some(stop) = steps.before_round() {
                service.output.diagnostic(stop.code, &stop.summary).await;
                break Ending::failed(ErrorCode::ExecutionFailed);
            }
            // Job notices belong to the session's own conversation.
            deliver_job_notices(&mut service, items);
            deliver_mode_note(&mut service, items);
            let calls = match round_trip(&self.exchange, &mut service, &mut role, items).await {
                Round::Ended(ending) => break ending,
                Round::Called(calls) => calls,
            };
            match steps.after_round(calls) {
                Repeats::None => {}
                // The model's next request carries the note after the round; the log
                // keeps it, so later turns and compaction see what the model was told.
                Repeats::Note => {
                    service.journal.append(RecordBody::LoopNote {
                        turn_id: turn_id.clone(),
                        text: LOOP_NOTE.to_owned(),
                    });
                    items.push(Item::User {
                        text: LOOP_NOTE.to_owned(),
                    });
                }
                Repeats::Stop(stop) => {
                    service.output.diagnostic(stop.code, &stop.summary).await;
                    break Ending::failed(ErrorCode::ExecutionFailed);
                }
            }
        };
        // Rules a subagent's answers added are the session's: its log keeps them.
        service.record_session_rules();
        self.degraded |= journal.degraded();
        // A title the agent set itself is not replaced by one asked for after the turn.
        self.untitled &= !journal.titled();
        self.recorded_title = journal.last_title().map(str::to_owned);
        ending
    }

    /// Records the end of the turn and builds `run.finished`.
    fn finish(&mut self, sessions: &mut Sessions, output: &Output, ending: Ending) -> Event {
        // Whatever else happened, a run whose critical events could not be delivered
        // ends as `output_unavailable`.
        let ending = if output.lost() {
            Ending::failed(ErrorCode::OutputUnavailable)
        } else {
            ending
        };
        let persistence = if !self.input_durable {
            Persistence::NotStarted
        } else {
            let outcome = match ending.outcome {
                RunOutcome::Completed => TurnOutcome::Completed,
                RunOutcome::Cancelled => TurnOutcome::Cancelled,
                RunOutcome::Failed => TurnOutcome::Failed,
            };
            let mut journal = Journal::session(sessions);
            // A mode set or a rule revoked after the last call is recorded in its turn.
            journal.append_all(self.gates.rules.take_unrecorded());
            journal.append(RecordBody::TurnFinished {
                turn_id: self.turn_id(),
                outcome,
                error_code: ending.error_code.map(|c| c.as_str().to_owned()),
            });
            if self.degraded || journal.degraded() {
                Persistence::Degraded
            } else {
                Persistence::Durable
            }
        };
        let revision = if self.input_durable {
            sessions.refresh().ok().map(|(revision, _)| revision)
        } else {
            None
        };
        Event::RunFinished(RunFinished {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            outcome: ending.outcome,
            persistence,
            revision,
            error_code: ending.error_code,
        })
    }
}

/// Tells the model, before the request this goes with, the approval mode a client set
/// while the turn worked, recorded first with the change itself.
fn deliver_mode_note(service: &mut CallService<'_, '_>, items: &mut Vec<Item>) {
    let Some(mode) = service.gates.rules.take_untold() else {
        return;
    };
    service.record_session_rules();
    let text = crate::prompt::environment::mode_note(mode);
    service.journal.append(RecordBody::ModeNote {
        turn_id: service.turn_id.to_owned(),
        text: text.clone(),
    });
    items.push(Item::User { text });
}

/// Gives the model the ends of this session's background jobs that it was not told of
/// yet, each recorded before the request that carries it.
fn deliver_job_notices(service: &mut CallService<'_, '_>, items: &mut Vec<Item>) {
    let Some(conversation) = &service.workspace.conversation else {
        return;
    };
    for notice in magi_tools::take_notices(conversation) {
        service.journal.append(RecordBody::AsyncBashEvent {
            turn_id: service.turn_id.to_owned(),
            job_id: notice.job_id,
            state: notice.state,
            text: notice.text.clone(),
            facts: serde_json::to_value(notice.facts).ok(),
        });
        items.push(Item::User { text: notice.text });
    }
}
