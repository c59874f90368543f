//! The script of one mock reply: what the model "says", in which pieces, and how the
//! stream misbehaves, independent of the wire format it is rendered in.

use std::time::Duration;

/// Why the scripted model stops; each wire format renders it in its own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// A finished reply (`completed`, `stop`, `end_turn`).
    EndTurn,
    /// The model asks for tool calls (`completed`, `tool_calls`, `tool_use`).
    ToolCalls,
    /// The output token limit (`incomplete`/`max_output_tokens`, `length`, `max_tokens`).
    MaxTokens,
    /// The provider refused: with a [`Reply::refusal`] part, the way each format
    /// carries one (Responses `completed` with a `refusal` content part, Chat `stop`
    /// after `refusal` deltas, Anthropic `refusal`); without one, its filter withheld
    /// the reply (`incomplete`/`content_filter`, `content_filter`, `refusal`).
    Refusal,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider call ID.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments JSON text, in the fragments it is streamed in.
    pub fragments: Vec<String>,
}

impl ToolCall {
    /// The arguments as the client should reassemble them.
    pub fn arguments(&self) -> String {
        self.fragments.concat()
    }
}

/// One part of the reply, in output order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// A reasoning summary (Responses), `reasoning_content` (Chat), a thinking block
    /// (Anthropic), in chunks.
    Reasoning(Vec<String>),
    /// Reply text, in chunks.
    Text(Vec<String>),
    /// The model's refusal, in chunks: a Responses `refusal` content part, Chat
    /// `refusal` deltas, Anthropic text (its refusal is the stop reason alone).
    Refusal(Vec<String>),
    /// A tool call.
    Tool(ToolCall),
}

/// A streamed reply: parts in order, the terminal data and the misbehaviour.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Script {
    pub(crate) parts: Vec<Part>,
    pub(crate) usage: Option<(u64, u64)>,
    /// Of the input tokens, those read from and written to the prompt cache.
    pub(crate) cache: Option<(u64, u64)>,
    pub(crate) stop: Option<Stop>,
    pub(crate) chunk_delay: Duration,
    pub(crate) disconnect_after: Option<usize>,
    pub(crate) malformed_after: Option<usize>,
    pub(crate) held: bool,
}

impl Script {
    /// The stop reason rendered: the scripted one, else `Refusal` when the reply has
    /// a refusal, `ToolCalls` when it has tool calls and `EndTurn` when it has neither
    /// (what real servers do).
    pub(crate) fn stop(&self) -> Stop {
        self.stop.unwrap_or_else(|| {
            if self.refuses() {
                Stop::Refusal
            } else if self.parts.iter().any(|p| matches!(p, Part::Tool(_))) {
                Stop::ToolCalls
            } else {
                Stop::EndTurn
            }
        })
    }
}

impl Script {
    /// Whether the reply has a refusal part.
    pub(crate) fn refuses(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Refusal(_)))
    }
}

/// What the reply is: a stream, or a plain HTTP error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Stream(Script),
    Error { status: u16, body: String },
}

/// One scripted reply, taken from the server's queue by the next model request and
/// rendered in the wire format of the route that request used.
///
/// Build a stream with [`Reply::stream`] and the chained methods (parts are streamed
/// in the order they are added), or a plain error with [`Reply::error`]:
///
/// ```
/// use magi_testkit::{Reply, Stop};
/// let reply = Reply::stream()
///     .text(["Hel", "lo"])
///     .tool_call("call_1", "read_file", [r#"{"path":"#, r#""a.txt"}"#])
///     .usage(12, 5)
///     .stop(Stop::ToolCalls);
/// # let _ = reply;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub(crate) kind: Kind,
    pub(crate) headers: Vec<(String, String)>,
}

impl Reply {
    /// An empty streamed reply: the opening and terminal events and nothing between.
    pub fn stream() -> Reply {
        Reply {
            kind: Kind::Stream(Script::default()),
            headers: Vec::new(),
        }
    }

    /// A non-streaming HTTP error with this status and body (sent as
    /// `application/json`, whatever it holds).
    pub fn error(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            kind: Kind::Error {
                status,
                body: body.into(),
            },
            headers: Vec::new(),
        }
    }

    /// Adds a response header, e.g. `retry-after`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Appends reply text, streamed as one delta per chunk.
    pub fn text<I, S>(self, chunks: I) -> Reply
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.part(Part::Text(chunks.into_iter().map(Into::into).collect()))
    }

    /// Appends the model's refusal, one delta per chunk, and makes the stop
    /// [`Stop::Refusal`] unless another is set: OpenAI's `refusal` content part
    /// (Responses) or `refusal` deltas (Chat), Anthropic text ended by `refusal`.
    pub fn refusal<I, S>(self, chunks: I) -> Reply
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.part(Part::Refusal(chunks.into_iter().map(Into::into).collect()))
    }

    /// Appends reasoning, one delta per chunk: a reasoning *summary* in the Responses
    /// format, `reasoning_content` deltas in Chat Completions and a `thinking` block in
    /// Anthropic Messages (the last two are raw reasoning a client must not show).
    pub fn reasoning_summary<I, S>(self, chunks: I) -> Reply
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.part(Part::Reasoning(
            chunks.into_iter().map(Into::into).collect(),
        ))
    }

    /// Appends a tool call whose arguments JSON text is streamed in these fragments.
    pub fn tool_call<I, S>(
        self,
        call_id: impl Into<String>,
        name: impl Into<String>,
        fragments: I,
    ) -> Reply
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.part(Part::Tool(ToolCall {
            call_id: call_id.into(),
            name: name.into(),
            fragments: fragments.into_iter().map(Into::into).collect(),
        }))
    }

    /// Reports this usage (input, output tokens) with the terminal events.
    pub fn usage(self, input_tokens: u64, output_tokens: u64) -> Reply {
        self.script(|s| s.usage = Some((input_tokens, output_tokens)))
    }

    /// Reports these input tokens as read from and written to the provider's prompt
    /// cache, with the usage: Anthropic's `cache_read_input_tokens` and
    /// `cache_creation_input_tokens` (apart from `input_tokens`, as the API counts
    /// them), the OpenAI formats' `cached_tokens` (they tell no writes).
    pub fn cached(self, read: u64, written: u64) -> Reply {
        self.script(|s| s.cache = Some((read, written)))
    }

    /// Sets the stop reason (the default is [`Stop::ToolCalls`] when the reply has
    /// tool calls, else [`Stop::EndTurn`]).
    pub fn stop(self, stop: Stop) -> Reply {
        self.script(|s| s.stop = Some(stop))
    }

    /// Waits this long before each SSE event: a slow stream.
    pub fn chunk_delay(self, delay: Duration) -> Reply {
        self.script(|s| s.chunk_delay = delay)
    }

    /// Closes the connection abruptly after `events` SSE events, without the terminal
    /// event (the chunked body is cut, so the client sees a broken transfer).
    pub fn disconnect_after(self, events: usize) -> Reply {
        self.script(|s| s.disconnect_after = Some(events))
    }

    /// Sends a garbage `data:` line (not JSON) as a whole SSE event after `events`
    /// events, then the rest of the stream.
    pub fn malformed_after(self, events: usize) -> Reply {
        self.script(|s| s.malformed_after = Some(events))
    }

    /// Pauses the stream before its last event until [`crate::MockServer::release`]:
    /// every delta is sent and the reply stays in flight for as long as the test needs,
    /// with no timing guessed.
    pub fn held(self) -> Reply {
        self.script(|s| s.held = true)
    }

    fn part(self, part: Part) -> Reply {
        self.script(|s| s.parts.push(part))
    }

    /// Applies `f` to the stream script; an error reply has none, so it is unchanged.
    fn script(mut self, f: impl FnOnce(&mut Script)) -> Reply {
        if let Kind::Stream(script) = &mut self.kind {
            f(script);
        }
        self
    }
}
