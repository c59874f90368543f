//! Session titles on a connection: the sink each turn's runner sends a title to, and
//! recording an arrived title once the connection holds the sessions.
//!
//! A title arrives after its run's terminal event, when the sessions are usually idle
//! here; if an operation or a new turn holds them, the title waits until they come
//! back. A title may also come back before the protocol loop took the terminal event
//! (the run's thread asks for it right after sending that event): it then waits too,
//! and is recorded just after `run.finished` is told ([`Connection::end_run`]). It is
//! recorded on the protocol loop itself (one small append and sync) rather than as a
//! session job, so that a client's request arriving at the same moment is
//! never answered `busy` because of it. A title for a session this child no longer has
//! attached is dropped: the session stays untitled. Either way the session's title
//! request is then over ([`TitleSink::release`]): until then no other turn asks for one.

use magi_core::runner::{TitleOutcome, TitleSink};
use magi_protocol::messages::{Event, SessionTitled};

use super::*;

impl Connection {
    /// Gives the connection the sink turns send their titles to.
    pub(crate) fn set_title_sink(&mut self, sink: TitleSink) {
        self.title_sink = Some(sink);
    }

    /// Lets go of the sink, so that the receiver ends once every run that may still
    /// send a title has ended (cleanup).
    pub(crate) fn close_title_sink(&mut self) {
        self.title_sink = None;
    }

    /// The sink a new turn gets: none when `[sessions] titles = "off"`.
    pub(super) fn turn_title_sink(&self, asks_model: bool) -> Option<TitleSink> {
        self.title_sink.clone().filter(|_| asks_model)
    }

    /// A title arrived: record it now if the sessions are here, else when they are back.
    pub(crate) fn title_arrived(&mut self, outcome: TitleOutcome) {
        if let Some(dropped) = self.pending_title.replace(outcome) {
            // Only the newest waits; the other session stays untitled for now, and a
            // later turn of it may ask again.
            self.release_title(&dropped.session_id);
        }
        self.record_pending_title();
    }

    /// Ends a session's title request, so that an untitled session may be asked again.
    fn release_title(&self, session_id: &str) {
        if let Some(sink) = &self.title_sink {
            sink.release(session_id);
        }
    }

    /// Records the waiting title, if any, when no operation or run holds the sessions.
    pub(super) fn record_pending_title(&mut self) {
        let Some(sessions) = self.sessions.as_mut() else {
            return;
        };
        let Some(outcome) = self.pending_title.take() else {
            return;
        };
        // A failed append leaves the session untitled; nothing else depends on it.
        let recorded = sessions
            .record_title(&outcome.session_id, &outcome.title)
            .is_ok();
        // A client that shows titles learns it at once (`session.usage`). A failure to
        // write it shows up on the next frame the writer fails to write.
        if recorded && self.has(Extension::SessionUsage) {
            let _ = self.output.event(Event::SessionTitled(SessionTitled {
                session_id: outcome.session_id.clone(),
                title: outcome.title.clone(),
            }));
        }
        // Recorded or not, the request is over.
        self.release_title(&outcome.session_id);
    }
}
