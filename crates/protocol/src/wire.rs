//! The frames a backend writes and the frames a client writes, as typed values.
//!
//! These types are the wire: they serialize exactly as the protocol specifies, and the
//! checked-in JSON Schema is generated from them.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::ErrorBody;
use crate::messages::{Call, Event, ResultBody};
use crate::{PROTOCOL_NAME, PROTOCOL_VERSION};

/// The constant `protocol` field: `"magi-code.local-agent"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtocolName;

impl Serialize for ProtocolName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(PROTOCOL_NAME)
    }
}

impl<'de> Deserialize<'de> for ProtocolName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        if name == PROTOCOL_NAME {
            Ok(ProtocolName)
        } else {
            Err(serde::de::Error::custom("unknown protocol"))
        }
    }
}

impl JsonSchema for ProtocolName {
    fn schema_name() -> Cow<'static, str> {
        "ProtocolName".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "const": PROTOCOL_NAME })
    }
}

/// The constant `version` field: `1`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtocolVersion;

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(PROTOCOL_VERSION)
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if u32::deserialize(deserializer)? == PROTOCOL_VERSION {
            Ok(ProtocolVersion)
        } else {
            Err(serde::de::Error::custom("unknown version"))
        }
    }
}

impl JsonSchema for ProtocolVersion {
    fn schema_name() -> Cow<'static, str> {
        "ProtocolVersion".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "const": PROTOCOL_VERSION })
    }
}

/// The `type` of a response frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ResponseType {
    /// `"response"`.
    #[default]
    #[serde(rename = "response")]
    Response,
}

/// The `type` of an event frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum EventType {
    /// `"event"`.
    #[default]
    #[serde(rename = "event")]
    Event,
}

/// A request as a client writes it: exactly these five fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestFrame {
    /// Always `"magi-code.local-agent"`.
    pub protocol: ProtocolName,
    /// Always `1`.
    pub version: ProtocolVersion,
    /// A fresh ID: 1–64 bytes of `[A-Za-z0-9._-]`, never reused within a child.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,64}$"))]
    pub id: String,
    /// The method and its params.
    #[serde(flatten)]
    pub call: Call,
}

/// Either half of a response: a result, or an error code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub enum Outcome {
    /// The method's result.
    #[serde(rename = "result")]
    Result(ResultBody),
    /// What went wrong, as a code only.
    #[serde(rename = "error")]
    Error(ErrorBody),
}

/// A response frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResponseFrame {
    /// Always `"magi-code.local-agent"`.
    pub protocol: ProtocolName,
    /// Always `1`.
    pub version: ProtocolVersion,
    /// Always `"response"`.
    #[serde(rename = "type")]
    pub kind: ResponseType,
    /// The child's fresh UUID.
    pub instance_id: String,
    /// Strictly increasing across all output frames of the child, from 1.
    pub seq: u64,
    /// The request's ID, or null when the request's identity could not be recovered.
    pub id: Option<String>,
    /// Exactly one of `result` or `error`.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// An event frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventFrame {
    /// Always `"magi-code.local-agent"`.
    pub protocol: ProtocolName,
    /// Always `1`.
    pub version: ProtocolVersion,
    /// Always `"event"`.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The child's fresh UUID.
    pub instance_id: String,
    /// Strictly increasing across all output frames of the child, from 1.
    pub seq: u64,
    /// The event name and its data.
    #[serde(flatten)]
    pub event: Event,
}

/// Any frame of the protocol, in either direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AnyFrame {
    /// Client to backend.
    Request(RequestFrame),
    /// Backend to client, answering a request.
    Response(ResponseFrame),
    /// Backend to client, unsolicited.
    Event(EventFrame),
}
