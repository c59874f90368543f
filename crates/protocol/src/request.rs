//! Turning one input frame into a request envelope, or into the error it earns.
//!
//! This is the stateless half of admission: framing structure, JSON, UTF-8 and the
//! envelope. The stateful half (request identity, initialization state, negotiation)
//! belongs to the server, which applies it in the order `DECISIONS.md` fixes.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::ErrorCode;
use crate::frame::{exceeds_depth, is_blank};
use crate::names::is_valid_name;
use crate::{PROTOCOL_NAME, PROTOCOL_VERSION};

/// A frame whose envelope is exactly right: the request's identity, method and params.
#[derive(Debug, Clone)]
pub struct Envelope<'a> {
    /// The request ID, already checked against the name grammar.
    pub id: String,
    /// The method name, checked against the name grammar but not yet looked up.
    pub method: String,
    /// The params object, as raw JSON text.
    pub params: &'a RawValue,
}

/// A frame rejected before its identity or method was considered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The error to answer.
    pub code: ErrorCode,
    /// The request ID the error carries: the frame's `id` when it is a JSON object whose
    /// `id` occurs exactly once and follows the grammar, otherwise none (`id=null`).
    pub id: Option<String>,
}

/// Reads one frame (without its LF) as a request envelope.
pub fn parse_envelope(frame: &[u8]) -> Result<Envelope<'_>, Rejection> {
    if is_blank(frame) {
        return Err(Rejection {
            code: ErrorCode::InvalidFrame,
            id: None,
        });
    }
    let Ok(text) = std::str::from_utf8(frame) else {
        let code = if exceeds_depth(frame) {
            ErrorCode::InvalidFrame
        } else {
            ErrorCode::InvalidRequest
        };
        return Err(Rejection { code, id: None });
    };
    // Reading the top level keeps nested values as raw text, which serde_json skips
    // without recursion, so this is safe before the depth check.
    let top: Option<TopLevel<'_>> = serde_json::from_str(text).ok();
    let id = top.as_ref().and_then(TopLevel::request_id);
    if exceeds_depth(frame) {
        return Err(Rejection {
            code: ErrorCode::InvalidFrame,
            id,
        });
    }
    let reject = |code| {
        Err(Rejection {
            code,
            id: id.clone(),
        })
    };
    let Some(top) = top else {
        return reject(ErrorCode::InvalidRequest);
    };
    if top.is_other_protocol() {
        return reject(ErrorCode::ProtocolMismatch);
    }
    let (Some(protocol), Some(version), Some(_), Some(method), Some(params)) = (
        top.single("protocol"),
        top.single("version"),
        top.single("id"),
        top.single("method"),
        top.single("params"),
    ) else {
        return reject(ErrorCode::InvalidRequest);
    };
    let protocol_ok =
        serde_json::from_str::<String>(protocol.get()).is_ok_and(|p| p == PROTOCOL_NAME);
    let version_ok =
        serde_json::from_str::<u64>(version.get()).ok() == Some(u64::from(PROTOCOL_VERSION));
    if top.fields.len() != 5 || !protocol_ok || !version_ok || !params.get().starts_with('{') {
        return reject(ErrorCode::InvalidRequest);
    }
    let (Some(id), Some(method)) = (id.clone(), grammar_string(method)) else {
        return reject(ErrorCode::InvalidRequest);
    };
    Ok(Envelope { id, method, params })
}

/// The top-level members of a JSON object, in order, duplicates kept.
struct TopLevel<'a> {
    fields: Vec<(String, &'a RawValue)>,
}

impl<'a> TopLevel<'a> {
    /// The value of `key` when it occurs exactly once.
    fn single(&self, key: &str) -> Option<&'a RawValue> {
        let mut found = self.fields.iter().filter(|(k, _)| k == key);
        match (found.next(), found.next()) {
            (Some((_, value)), None) => Some(value),
            _ => None,
        }
    }

    fn request_id(&self) -> Option<String> {
        self.single("id").and_then(grammar_string)
    }

    /// Whether `protocol` and `version` are present once, well-typed, and name another
    /// protocol or version: that is `protocol_mismatch`, not a malformed envelope.
    fn is_other_protocol(&self) -> bool {
        let (Some(protocol), Some(version)) = (self.single("protocol"), self.single("version"))
        else {
            return false;
        };
        let Ok(protocol) = serde_json::from_str::<String>(protocol.get()) else {
            return false;
        };
        let Ok(version) = serde_json::from_str::<serde_json::Number>(version.get()) else {
            return false;
        };
        protocol != PROTOCOL_NAME || version.as_u64() != Some(u64::from(PROTOCOL_VERSION))
    }
}

/// The string a raw JSON value holds, when it is a string that follows the name grammar.
fn grammar_string(raw: &RawValue) -> Option<String> {
    let text: String = serde_json::from_str(raw.get()).ok()?;
    is_valid_name(&text).then_some(text)
}

impl<'de: 'a, 'a> Deserialize<'de> for TopLevel<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TopVisitor;
        impl<'de> Visitor<'de> for TopVisitor {
            type Value = TopLevel<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(TopLevel { fields })
            }
        }
        deserializer.deserialize_map(TopVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(frame: &str, expected: Result<(&str, &str), (ErrorCode, Option<&str>)>) {
        let got = parse_envelope(frame.as_bytes())
            .map(|e| (e.id, e.method))
            .map_err(|r| (r.code, r.id));
        let expected = expected
            .map(|(id, method)| (id.to_owned(), method.to_owned()))
            .map_err(|(code, id)| (code, id.map(str::to_owned)));
        assert_eq!(got, expected, "frame: {frame}");
    }

    const OK: &str = r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"status","params":{}}"#;

    #[test]
    fn accepts_the_exact_envelope_in_any_order() {
        check(OK, Ok(("r1", "status")));
        check(
            r#"{"params":{},"method":"status","id":"r1","version":1,"protocol":"magi-code.local-agent"}"#,
            Ok(("r1", "status")),
        );
        check(&format!("{OK}\r"), Ok(("r1", "status")));
    }

    #[test]
    fn rejections_and_the_id_they_carry() {
        use ErrorCode::*;
        let cases: &[(&str, ErrorCode, Option<&str>)] = &[
            ("", InvalidFrame, None),
            ("\r", InvalidFrame, None),
            ("not json", InvalidRequest, None),
            ("[1]", InvalidRequest, None),
            ("\"x\"", InvalidRequest, None),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"status","params":{},"x":1}"#,
                InvalidRequest,
                Some("r1"),
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","id":"r1","method":"status","params":{}}"#,
                InvalidRequest,
                None,
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"status","method":"status","params":{}}"#,
                InvalidRequest,
                Some("r1"),
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"status"}"#,
                InvalidRequest,
                Some("r1"),
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"status","params":[]}"#,
                InvalidRequest,
                Some("r1"),
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"status","params":null}"#,
                InvalidRequest,
                Some("r1"),
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r 1","method":"status","params":{}}"#,
                InvalidRequest,
                None,
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":7,"method":"status","params":{}}"#,
                InvalidRequest,
                None,
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"","method":"status","params":{}}"#,
                InvalidRequest,
                None,
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"st/atus","params":{}}"#,
                InvalidRequest,
                Some("r1"),
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"","params":{}}"#,
                InvalidRequest,
                Some("r1"),
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":2,"id":"r1","method":"status","params":{}}"#,
                ProtocolMismatch,
                Some("r1"),
            ),
            (
                r#"{"protocol":"other","version":1,"id":"r1","method":"status","params":{}}"#,
                ProtocolMismatch,
                Some("r1"),
            ),
            (
                r#"{"protocol":"other","version":1}"#,
                ProtocolMismatch,
                None,
            ),
            (
                r#"{"protocol":1,"version":1,"id":"r1","method":"status","params":{}}"#,
                InvalidRequest,
                Some("r1"),
            ),
            (
                r#"{"protocol":"magi-code.local-agent","version":"1","id":"r1","method":"status","params":{}}"#,
                InvalidRequest,
                Some("r1"),
            ),
        ];
        for (frame, code, id) in cases {
            check(frame, Err((*code, *id)));
        }
    }

    #[test]
    fn id_grammar_bounds() {
        let long = "a".repeat(64);
        let too_long = "a".repeat(65);
        let frame = |id: &str| OK.replace("\"r1\"", &format!("\"{id}\""));
        check(&frame(&long), Ok((long.as_str(), "status")));
        check(&frame(&too_long), Err((ErrorCode::InvalidRequest, None)));
        check(&frame("A.b_c-9"), Ok(("A.b_c-9", "status")));
        // The ID is the decoded string.
        check(&frame("\\u0072"), Ok(("r", "status")));
        check(&frame("\\u00e9"), Err((ErrorCode::InvalidRequest, None)));
    }

    #[test]
    fn too_deep_frames_are_invalid_frame_with_their_id() {
        let nested = |n: usize| {
            OK.replace(
                "\"params\":{}",
                &format!(
                    "\"params\":{{\"a\":{}{}}}",
                    "[".repeat(n - 2),
                    "]".repeat(n - 2)
                ),
            )
        };
        // The request object is container 1 and params is container 2.
        check(&nested(32), Ok(("r1", "status")));
        check(&nested(33), Err((ErrorCode::InvalidFrame, Some("r1"))));
        check(&nested(5000), Err((ErrorCode::InvalidFrame, Some("r1"))));
    }

    #[test]
    fn invalid_utf8_is_invalid_request() {
        let mut frame = OK.as_bytes().to_vec();
        frame[60] = 0xff;
        let got = parse_envelope(&frame)
            .map(|e| e.id)
            .map_err(|r| (r.code, r.id));
        assert_eq!(got, Err((ErrorCode::InvalidRequest, None)));
    }
}
