//! The `magi-code.local-agent` protocol, version 1: wire types, error codes, names, the
//! bounds, the pure frame codec and envelope checks, and the text rules every layer
//! shares.
//!
//! This crate does no I/O and knows nothing about how work is done; the server, the
//! client and every other crate speak the protocol through it.

pub mod cards;
pub mod crash;
#[cfg(test)]
mod doc_links;
pub mod error;
pub mod extensions;
mod fields;
pub mod frame;
pub mod limits;
pub mod messages;
pub mod methods;
#[cfg(test)]
mod module_cycles;
pub mod names;
pub mod plan;
pub mod request;
pub mod schema;
pub mod text;
pub mod wire;

/// The `protocol` field of every frame.
pub const PROTOCOL_NAME: &str = "magi-code.local-agent";
/// The `version` field of every frame.
pub const PROTOCOL_VERSION: u32 = 1;

pub use error::{ErrorBody, ErrorCode, StartupError};
pub use limits::Limits;
pub use methods::Request;
pub use names::{EventName, Extension, ExtensionMethod, Method, MethodName};
