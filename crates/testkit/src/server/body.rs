//! The response body that plays pre-rendered events.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame};
use tokio::time::Sleep;

use super::State;

/// With no delay scripted, consecutive events are sent in frames up to this size, so
/// the mock's own write calls stay out of what a benchmark measures.
const COALESCE_BYTES: usize = 16 * 1024;

/// A response body that plays pre-rendered events: a delay before each, optionally a
/// hold before the last, and at the end either a normal end or a broken connection.
pub(super) struct EventBody {
    events: std::vec::IntoIter<Bytes>,
    delay: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    /// Until this ends, the last event is not sent.
    pub(super) hold: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    break_at_end: bool,
    /// Whether the connection has had a chance to flush before it is broken.
    flushed: bool,
    state: Option<Arc<State>>,
}

impl EventBody {
    pub(super) fn new(
        events: Vec<Bytes>,
        delay: Duration,
        break_at_end: bool,
        state: Option<Arc<State>>,
    ) -> EventBody {
        EventBody {
            events: events.into_iter(),
            delay,
            sleep: None,
            hold: None,
            break_at_end,
            flushed: false,
            state,
        }
    }
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        if this.events.len() == 1
            && let Some(hold) = this.hold.as_mut()
        {
            if hold.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.hold = None;
        }
        if !this.delay.is_zero() && this.events.len() > 0 {
            let delay = this.delay;
            let sleep = this
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(delay)));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
        }
        if let Some(first) = this.events.next() {
            if !this.delay.is_zero() || this.events.as_slice().is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(first))));
            }
            let mut frame = BytesMut::from(first.as_ref());
            while frame.len() < COALESCE_BYTES {
                if this.hold.is_some() && this.events.len() == 1 {
                    break;
                }
                let Some(next) = this.events.next() else {
                    break;
                };
                frame.extend_from_slice(&next);
            }
            return Poll::Ready(Some(Ok(Frame::data(frame.freeze()))));
        }
        if this.break_at_end {
            if !this.flushed {
                // Pending once lets the connection flush what was written, so the
                // client gets every event before the cut.
                this.flushed = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            return Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "scripted disconnect",
            ))));
        }
        if let Some(state) = this.state.take() {
            state.response_ended();
        }
        Poll::Ready(None)
    }
}
