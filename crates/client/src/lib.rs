//! The client library of `magi-code.local-agent`: spawn a backend, send typed requests
//! ([`magi_protocol::Request`]) with fresh IDs, correlate responses by ID (never by
//! order), and read events as a stream.
//!
//! The library fails closed: a frame with an unknown protocol, version, frame type,
//! error code, event name or enum value, a broken `seq` order or a changed
//! `instance_id` ends the connection with a [`ClientError::Violation`]; nothing after
//! it is trusted.

mod backend;
pub mod cards;
mod decode;
pub mod fold;

pub use backend::{
    Backend, BackendCommand, BackendEnd, Incoming, PendingCall, PendingResponse, Response,
};
pub use decode::{ServerFrame, Violation};

/// Why a client operation failed.
#[derive(Debug)]
pub enum ClientError {
    /// The backend could not be started.
    Spawn(std::io::Error),
    /// Writing to the backend failed.
    Io(std::io::Error),
    /// The backend's output ended before the answer arrived.
    Closed,
    /// The backend broke the protocol; the connection is no longer used.
    Violation(Violation),
    /// This child's request IDs are used up: start a fresh child.
    IdsExhausted,
    /// A result did not have the shape of the method's result.
    UnexpectedResult,
    /// Typed params did not encode as the method's params object.
    UnencodableParams,
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Spawn(e) => write!(f, "cannot start the backend: {e}"),
            ClientError::Io(e) => write!(f, "cannot write to the backend: {e}"),
            ClientError::Closed => f.write_str("the backend closed its output"),
            ClientError::Violation(v) => write!(f, "protocol violation: {v}"),
            ClientError::IdsExhausted => {
                f.write_str("request IDs exhausted; start a fresh backend")
            }
            ClientError::UnexpectedResult => f.write_str("the result does not match the method"),
            ClientError::UnencodableParams => {
                f.write_str("the params do not encode as the method's params")
            }
        }
    }
}

impl std::error::Error for ClientError {}
