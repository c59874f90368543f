//! The stdio transport of `magi-code serve --stdio`.
//!
//! The server moves bytes and enforces the protocol's transport rules: it reads frames
//! in bounded batches, admits requests in the order `DECISIONS.md` fixes, writes every
//! output frame through one ordered non-blocking writer with bounded queue and absolute
//! deadlines, and ends the child on EOF, shutdown or transport failure within the
//! protocol's bounds. What a request does is asked of `magi-core`.

mod admission;
mod connection;
pub mod launch;
mod output;
mod serve;
mod stop_signals;

pub use serve::serve_stdio;
