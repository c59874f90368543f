//! Fail-closed decoding of the frames a backend writes.

use magi_protocol::cards;
use magi_protocol::extensions::ExtensionSet;
use magi_protocol::limits::OUTPUT_FRAME_BYTES;
use magi_protocol::messages::Event;
use magi_protocol::{ErrorCode, Extension, PROTOCOL_NAME, PROTOCOL_VERSION};
use serde_json::{Map, Value};

/// A validated frame from the backend.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerFrame {
    /// A response.
    Response {
        /// Its sequence number.
        seq: u64,
        /// The request ID, or `None` for `id=null`.
        id: Option<String>,
        /// The result, or the error code.
        outcome: Result<Value, ErrorCode>,
    },
    /// An event.
    Event {
        /// Its sequence number.
        seq: u64,
        /// The event and its data.
        event: Event,
    },
}

/// How a backend broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation(pub String);

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn violation(what: impl Into<String>) -> Violation {
    Violation(what.into())
}

/// Per-connection checks that span frames: one instance, increasing `seq`.
#[derive(Debug, Default)]
pub(crate) struct FrameChecker {
    instance_id: Option<String>,
    last_seq: u64,
    /// The extensions negotiated. Each decides what the frames may carry: a
    /// `tool.card` event only with `tool.cards`, the events of `client.tools`,
    /// `client.terminals`, `client.files`, `user.questions`, `session.usage` and
    /// `reasoning.summaries` only with them, and the fields of `approval.scopes`,
    /// `approval.change_counts`, `usage.cache_writes` and `tool.cards.styles` exactly
    /// with them.
    pub(crate) negotiated: ExtensionSet,
}

impl FrameChecker {
    /// Whether `extension` was negotiated.
    fn has(&self, extension: Extension) -> bool {
        self.negotiated.contains(extension)
    }

    /// Decodes one output line (without its LF) and checks it against the connection.
    pub(crate) fn check(&mut self, line: &[u8]) -> Result<ServerFrame, Violation> {
        if line.len() + 1 > OUTPUT_FRAME_BYTES {
            return Err(violation("output frame over the bound"));
        }
        let mut object: Map<String, Value> =
            serde_json::from_slice(line).map_err(|_| violation("frame is not a JSON object"))?;
        let mut take = |key: &str| object.remove(key);
        if take("protocol") != Some(Value::from(PROTOCOL_NAME)) {
            return Err(violation("unknown protocol"));
        }
        if take("version") != Some(Value::from(PROTOCOL_VERSION)) {
            return Err(violation("unknown version"));
        }
        let Some(Value::String(instance_id)) = take("instance_id") else {
            return Err(violation("missing instance_id"));
        };
        match &self.instance_id {
            Some(known) if *known != instance_id => return Err(violation("instance_id changed")),
            Some(_) => {}
            None => self.instance_id = Some(instance_id),
        }
        let seq = take("seq")
            .and_then(|s| s.as_u64())
            .ok_or_else(|| violation("missing seq"))?;
        if seq <= self.last_seq {
            return Err(violation("seq did not increase"));
        }
        self.last_seq = seq;
        match take("type").as_ref().and_then(Value::as_str) {
            Some("response") => decode_response(seq, object),
            Some("event") => {
                let name = object.get("event").and_then(Value::as_str);
                if !self.has(Extension::ClientTools)
                    && matches!(name, Some("client.tool.call" | "client.tool.cancel"))
                {
                    return Err(violation(
                        "client tool event without client.tools negotiated",
                    ));
                }
                if !self.has(Extension::ClientTerminals)
                    && matches!(name, Some("client.terminal.run" | "client.terminal.cancel"))
                {
                    return Err(violation(
                        "client terminal event without client.terminals negotiated",
                    ));
                }
                if !self.has(Extension::UserQuestions) && name == Some("question.asked") {
                    return Err(violation(
                        "question event without user.questions negotiated",
                    ));
                }
                if !self.has(Extension::SessionUsage)
                    && matches!(name, Some("usage.updated" | "session.titled"))
                {
                    return Err(violation(
                        "a session.usage event without session.usage negotiated",
                    ));
                }
                if !self.has(Extension::ClientFiles)
                    && matches!(
                        name,
                        Some("client.file.read" | "client.file.write" | "client.file.cancel")
                    )
                {
                    return Err(violation(
                        "a client.files event without client.files negotiated",
                    ));
                }
                if !self.has(Extension::ReasoningSummaries) && name == Some("reasoning.delta") {
                    return Err(violation(
                        "reasoning.delta without reasoning.summaries negotiated",
                    ));
                }
                let event = decode_event(seq, object, line, self.has(Extension::ToolCards))?;
                if let ServerFrame::Event {
                    event: Event::ApprovalRequested(request),
                    ..
                } = &event
                {
                    let fields = [
                        request.subject.is_some(),
                        request.suggested_rule.is_some(),
                        request.proposed_change.is_some(),
                    ];
                    if fields != [self.has(Extension::ApprovalScopes); 3] {
                        return Err(violation(
                            "approval.requested fields do not match the approval.scopes negotiation",
                        ));
                    }
                    if let Some(Some(change)) = &request.proposed_change
                        && [change.added.is_some(), change.removed.is_some()]
                            != [self.has(Extension::ApprovalChangeCounts); 2]
                    {
                        return Err(violation(
                            "proposed_change fields do not match the approval.change_counts negotiation",
                        ));
                    }
                }
                if let ServerFrame::Event {
                    event: Event::ToolCard(card),
                    ..
                } = &event
                    && !crate::cards::styles_match(&card.card, self.has(Extension::ToolCardStyles))
                {
                    return Err(violation(
                        "tool.card text blocks do not match the tool.cards.styles negotiation",
                    ));
                }
                if let ServerFrame::Event {
                    event: Event::UsageUpdated(usage),
                    ..
                } = &event
                    && usage.cache_write_tokens.is_some() != self.has(Extension::UsageCacheWrites)
                {
                    return Err(violation(
                        "usage.updated fields do not match the usage.cache_writes negotiation",
                    ));
                }
                Ok(event)
            }
            _ => Err(violation("unknown frame type")),
        }
    }

    /// The backend's instance ID, once a frame arrived.
    pub(crate) fn instance_id(&self) -> Option<&str> {
        self.instance_id.as_deref()
    }
}

fn decode_response(seq: u64, mut object: Map<String, Value>) -> Result<ServerFrame, Violation> {
    let id = match object.remove("id") {
        Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        _ => return Err(violation("response without a valid id")),
    };
    let outcome = match (object.remove("result"), object.remove("error")) {
        (Some(result), None) => Ok(result),
        (None, Some(Value::Object(mut error))) => {
            let code = error
                .remove("code")
                .and_then(|c| c.as_str().and_then(ErrorCode::from_wire))
                .ok_or_else(|| violation("unknown error code"))?;
            if !error.is_empty() {
                return Err(violation("error carries more than its code"));
            }
            Err(code)
        }
        _ => return Err(violation("response needs exactly one of result or error")),
    };
    Ok(ServerFrame::Response { seq, id, outcome })
}

fn decode_event(
    seq: u64,
    mut object: Map<String, Value>,
    line: &[u8],
    tool_cards: bool,
) -> Result<ServerFrame, Violation> {
    if object.get("event").and_then(Value::as_str) == Some(cards::EVENT) {
        if !tool_cards {
            return Err(violation("tool.card without tool.cards negotiated"));
        }
        // The map above kept the last of any duplicate field; a card is read again
        // from the raw text, which refuses duplicates anywhere in the frame.
        let text = std::str::from_utf8(line).map_err(|_| violation("frame is not UTF-8"))?;
        let strict = crate::cards::strict_value(text)
            .map_err(|e| violation(format!("tool.card frame: {e}")))?;
        let data = strict
            .get("data")
            .ok_or_else(|| violation("tool.card without data"))?;
        let card = crate::cards::decode_event(&data.to_string())
            .map_err(|e| violation(format!("tool.card: {e}")))?;
        return Ok(ServerFrame::Event {
            seq,
            event: Event::ToolCard(Box::new(card)),
        });
    }
    let tagged = serde_json::json!({
        "event": object.remove("event"),
        "data": object.remove("data"),
    });
    let event: Event =
        serde_json::from_value(tagged).map_err(|_| violation("unknown event or event data"))?;
    Ok(ServerFrame::Event { seq, event })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_all(lines: &[&str]) -> Vec<Result<ServerFrame, Violation>> {
        let mut checker = FrameChecker::default();
        lines.iter().map(|l| checker.check(l.as_bytes())).collect()
    }

    const OK: &str = r#"{"protocol":"magi-code.local-agent","version":1,"type":"response","instance_id":"i","seq":1,"id":"r1","result":{"state":"stopping"}}"#;

    #[test]
    fn accepts_responses_and_events() {
        let error = r#"{"protocol":"magi-code.local-agent","version":1,"type":"response","instance_id":"i","seq":2,"id":null,"error":{"code":"invalid_frame"}}"#;
        let event = r#"{"protocol":"magi-code.local-agent","version":1,"type":"event","instance_id":"i","seq":3,"event":"diagnostic","data":{"session_id":"s","run_id":"r","code":"c","summary":"x"}}"#;
        let got = check_all(&[OK, error, event]);
        assert!(matches!(
            &got[0],
            Ok(ServerFrame::Response {
                seq: 1,
                id: Some(_),
                outcome: Ok(_)
            })
        ));
        assert_eq!(
            got[1],
            Ok(ServerFrame::Response {
                seq: 2,
                id: None,
                outcome: Err(ErrorCode::InvalidFrame)
            })
        );
        assert!(matches!(&got[2], Ok(ServerFrame::Event { seq: 3, .. })));
    }

    #[test]
    fn fails_closed() {
        let cases = [
            OK.replace("magi-code.local-agent", "other"),
            OK.replace("\"version\":1", "\"version\":2"),
            OK.replace("\"response\"", "\"notice\""),
            OK.replace("\"result\":{\"state\":\"stopping\"}", "\"error\":{\"code\":\"brand_new\"}"),
            OK.replace("\"result\":{\"state\":\"stopping\"}", "\"error\":{\"code\":\"busy\",\"message\":\"x\"}"),
            OK.replace("\"result\"", "\"neither\""),
            OK.replace("\"seq\":1", "\"seq\":0"),
            r#"{"protocol":"magi-code.local-agent","version":1,"type":"event","instance_id":"i","seq":1,"event":"brand.new","data":{}}"#.to_owned(),
            r#"{"protocol":"magi-code.local-agent","version":1,"type":"event","instance_id":"i","seq":1,"event":"run.finished","data":{"session_id":"s","run_id":"r","outcome":"maybe","persistence":"durable","revision":null,"error_code":null}}"#.to_owned(),
            "[]".to_owned(),
        ];
        for case in cases {
            assert!(check_all(&[&case])[0].is_err(), "{case}");
        }
        let second = OK
            .replace("\"instance_id\":\"i\"", "\"instance_id\":\"j\"")
            .replace("\"seq\":1", "\"seq\":2");
        assert!(check_all(&[OK, &second])[1].is_err());
        assert!(check_all(&[OK, OK])[1].is_err());
    }

    #[test]
    fn usage_updates_carry_cache_writes_exactly_when_negotiated() {
        let frame = |extra: &str| {
            format!(
                r#"{{"protocol":"magi-code.local-agent","version":1,"type":"event","instance_id":"i","seq":1,"event":"usage.updated","data":{{"session_id":"s","run_id":"r","input_tokens":10,"cached_input_tokens":null,"output_tokens":2,"reasoning_tokens":null,"context_window":null,"context_used":12{extra}}}}}"#
            )
        };
        let check = |negotiated: bool, line: &str| {
            let mut negotiated_set = ExtensionSet::EMPTY.with(Extension::SessionUsage);
            if negotiated {
                negotiated_set = negotiated_set.with(Extension::UsageCacheWrites);
            }
            let mut checker = FrameChecker {
                negotiated: negotiated_set,
                ..FrameChecker::default()
            };
            checker.check(line.as_bytes()).is_ok()
        };
        assert!(check(false, &frame("")));
        assert!(check(true, &frame(r#","cache_write_tokens":7"#)));
        assert!(check(true, &frame(r#","cache_write_tokens":null"#)));
        assert!(!check(false, &frame(r#","cache_write_tokens":7"#)));
        assert!(!check(true, &frame("")));
    }

    #[test]
    fn approval_requests_carry_the_scopes_fields_exactly_when_negotiated() {
        let frame = |extra: &str| {
            format!(
                r#"{{"protocol":"magi-code.local-agent","version":1,"type":"event","instance_id":"i","seq":1,"event":"approval.requested","data":{{"session_id":"s","run_id":"r","approval_id":"a","summary":"bash","expires_in_ms":60000{extra}}}}}"#
            )
        };
        let scoped = frame(r#","subject":"ls","suggested_rule":null,"proposed_change":null"#);
        let check = |negotiated: bool, line: &str| {
            let mut checker = FrameChecker {
                negotiated: if negotiated {
                    ExtensionSet::EMPTY.with(Extension::ApprovalScopes)
                } else {
                    ExtensionSet::EMPTY
                },
                ..FrameChecker::default()
            };
            checker.check(line.as_bytes()).is_ok()
        };
        assert!(check(false, &frame("")));
        assert!(check(true, &scoped));
        assert!(!check(false, &scoped), "fields without the extension");
        assert!(!check(true, &frame("")), "the extension without its fields");
        assert!(
            !check(true, &frame(r#","subject":null"#)),
            "some fields only"
        );
    }

    #[test]
    fn proposed_changes_carry_their_counts_exactly_when_negotiated() {
        let frame = |change: &str| {
            format!(
                r#"{{"protocol":"magi-code.local-agent","version":1,"type":"event","instance_id":"i","seq":1,"event":"approval.requested","data":{{"session_id":"s","run_id":"r","approval_id":"a","summary":"write","expires_in_ms":60000,"subject":"a.txt","suggested_rule":null,"proposed_change":{change}}}}}"#
            )
        };
        let check = |negotiated: bool, line: &str| {
            let mut negotiated_set = ExtensionSet::EMPTY.with(Extension::ApprovalScopes);
            if negotiated {
                negotiated_set = negotiated_set.with(Extension::ApprovalChangeCounts);
            }
            let mut checker = FrameChecker {
                negotiated: negotiated_set,
                ..FrameChecker::default()
            };
            checker.check(line.as_bytes()).is_ok()
        };
        let plain = frame(r#"{"diff":"+a\n","truncated":false}"#);
        let counted = frame(r#"{"diff":"+a\n","truncated":false,"added":1,"removed":0}"#);
        let half = frame(r#"{"diff":"+a\n","truncated":false,"added":1}"#);
        assert!(check(false, &plain));
        assert!(check(true, &counted));
        assert!(!check(false, &counted), "counts without the extension");
        assert!(!check(true, &plain), "the extension without its counts");
        assert!(!check(true, &half), "one count only");
        // A call without a change to show has none, counted or not.
        assert!(check(true, &frame("null")));
    }
}
