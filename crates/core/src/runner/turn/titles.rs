//! The turn's part in titling its session: the request planned after a completed
//! turn, or one running beside the turn from the prompt alone.

use std::sync::Arc;

use magi_protocol::messages::RunOutcome;
use magi_provider::Item;

use super::Turn;
use crate::runner::ending::Ending;
use crate::runner::title::TitleJob;

impl Turn {
    /// The title request this turn leaves for after its terminal event, if any.
    pub(in crate::runner) fn take_title_job(&mut self) -> Option<TitleJob> {
        self.title.take()
    }

    /// Plans the title request: after a completed turn of an untitled session, when
    /// titles are asked for and no earlier request for the session is under way, from
    /// the prompt and the turn's last reply.
    pub(super) fn plan_title(&mut self, ending: &Ending, items: &[Item]) {
        if self.request.titles.is_none()
            || !self.untitled
            || ending.outcome != RunOutcome::Completed
        {
            return;
        }
        let reply = items.iter().rev().find_map(|item| match item {
            Item::Assistant { text } if !text.trim().is_empty() => Some(text.clone()),
            _ => None,
        });
        self.title = self.title_job(reply.unwrap_or_default());
    }

    /// The title request for the turn's prompt and `reply`, once it claimed the
    /// session's request; none without a sink or while an earlier turn's request,
    /// still unanswered, may yet title the session.
    fn title_job(&self, reply: String) -> Option<TitleJob> {
        let sink = self.request.titles.as_ref()?;
        if !sink.claim(&self.request.session_id) {
            return None;
        }
        let agent = &self.exchange.agent;
        Some(TitleJob {
            client: Arc::clone(&agent.client),
            model: agent.model.clone(),
            secrets: agent.secrets.clone(),
            session_id: self.request.session_id.clone(),
            prompt: self.request.prompt.clone(),
            reply,
            max_output_tokens: agent.output_bound(crate::runner::title::REQUEST_TOKENS),
            sink: sink.clone(),
        })
    }

    /// Starts the title request beside the turn (`TurnRequest::titles_beside`) for an
    /// untitled session whose request is not already under way: from the prompt alone,
    /// on the run's own runtime, so it needs no thread and ends with the run.
    pub(super) fn start_title_beside(&mut self) {
        if !self.request.titles_beside || !self.untitled {
            return;
        }
        let Some(job) = self.title_job(String::new()) else {
            return;
        };
        let (sink, session_id) = (job.sink.clone(), job.session_id.clone());
        self.beside_title = Some(tokio::spawn(async move {
            // A title request that panics asks for none.
            if magi_crash::contained(job.run()).await.is_err() {
                sink.release(&session_id);
            }
        }));
    }

    /// Ends the title request that ran beside the turn: a title it already handed over
    /// is recorded; one still being asked for is abandoned, so the run, and an `exec`
    /// waiting on it, never waits for a title.
    pub(super) fn end_title_beside(&mut self) {
        let Some(running) = self.beside_title.take() else {
            return;
        };
        if !running.is_finished() {
            running.abort();
            if let Some(sink) = &self.request.titles {
                sink.release(&self.request.session_id);
            }
        }
    }
}
