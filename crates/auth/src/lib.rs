//! Sign-ins: the ChatGPT sign-in that lets provider `codex` use a ChatGPT subscription,
//! and MCP servers' OAuth sign-ins.
//!
//! Tokens live in magi-code's own store (`store`, `$MC_HOME/auth/`), or, for ChatGPT,
//! in Codex's credential file when the person signed in with Codex (`codex`). Whether a
//! sign-in is ready is decided locally (`chatgpt::ready`, `mcp::ready`): no network.
//! A sign-in in use (`sign_in::SignIn`) refreshes its access token when it is due, once
//! for every process sharing it, and writes the rotated tokens back where they came
//! from. The flows that make a sign-in are in `oauth`.
//!
//! Nothing here prints, logs or returns a token in a message: errors name files, URLs
//! and what to do. `Debug` of every type holding a token hides it.

pub mod chatgpt;
pub mod codex;
mod file;
pub mod jwt;
pub mod mcp;
pub mod oauth;
pub mod sign_in;
pub mod store;
pub mod tokens;

pub use sign_in::{Current, Origin, Purpose, SignIn, SignInError, SignInErrorKind};
pub use tokens::{Freshness, Tokens};

use std::path::Path;

/// The warning for a credential file others may read, as ssh gives for a private key.
fn permission_warning(path: &Path, readable_by_others: bool) -> Vec<String> {
    if readable_by_others {
        vec![format!(
            "{} may be read by other users of this machine: make it owner-only (chmod 600 {})",
            path.display(),
            path.display()
        )]
    } else {
        Vec::new()
    }
}
