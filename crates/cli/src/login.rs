//! `magi-code login`, `magi-code logout` and `magi-code mcp login|logout`: sign-ins made
//! by a person, in a browser or with a device code, kept in `MC_HOME`, shown and ended.
//! What a sign-in is shown as never includes a token; the sign-in's URL and progress go
//! to stderr, the outcome to stdout.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use magi_auth::chatgpt::{self, Lookup, Status};
use magi_auth::oauth::OAuthError;
use magi_auth::oauth::{chatgpt as chatgpt_flow, mcp as mcp_flow};
use magi_auth::sign_in::Origin;
use magi_core::StartupRequest;
use magi_core::sign_in::{chatgpt_context, mcp_context, review};
use magi_protocol::limits::{DEVICE_CODE_WAIT_MS, SIGN_IN_CALLBACK_MS};

mod browser;

/// What `magi-code login --help` says it does.
pub const LOGIN_ABOUT: &str = "\
Sign in, so that a provider or an MCP server can be used without an API key.

`magi-code login codex` signs in to ChatGPT, for provider \"codex\": a ChatGPT \
subscription used through ChatGPT's Codex backend. It opens the sign-in page in a \
browser (or prints its URL) and waits for it to come back on 127.0.0.1, port 1455 or \
1457; with --device it shows a code to enter on any device instead (device-code sign-in \
must first be enabled in ChatGPT's security settings). A sign-in made with Codex \
(~/.codex/auth.json) is used as well, without signing in again. `magi-code login \
status` lists every sign-in. MCP servers sign in with `magi-code mcp login`.";

/// What `magi-code login --help` ends with.
pub const LOGIN_AFTER_HELP: &str = "\
Examples:
  magi-code login codex
  magi-code login codex --device
  magi-code login status
  magi-code mcp login tracker

More: docs/providers.md (provider codex), docs/mcp.md (signing in).";

/// What `magi-code login` does.
#[derive(clap::Subcommand)]
pub enum LoginCommand {
    /// Sign in to ChatGPT for provider "codex".
    Codex(Flags),
    /// List each sign-in: for whom, the account, the expiry, whether it can be
    /// refreshed. Never a token.
    Status,
}

/// What `magi-code logout` does.
#[derive(clap::Subcommand)]
pub enum LogoutCommand {
    /// End magi-code's ChatGPT sign-in: revoke it and delete it.
    Codex,
}

/// How a sign-in is made.
#[derive(clap::Args, Debug, Clone)]
pub struct Flags {
    /// Sign in with a code entered on another device, for a machine without a
    /// browser.
    #[arg(long)]
    pub device: bool,
    /// Only print the sign-in's URL; do not try to open a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// How long to wait for the browser (default 600) or the device code (default
    /// 900), in seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
}

impl Flags {
    fn wait(&self) -> Duration {
        let default = if self.device {
            DEVICE_CODE_WAIT_MS
        } else {
            SIGN_IN_CALLBACK_MS
        };
        self.timeout
            .map_or(Duration::from_millis(default), Duration::from_secs)
    }
}

fn here() -> StartupRequest {
    StartupRequest {
        cwd: std::path::PathBuf::from("."),
        env: magi_config::Env::from_process(),
    }
}

/// A runtime for one command, and the command's failure said.
fn run_async<F>(command: &str, work: F) -> ExitCode
where
    F: std::future::Future<Output = Result<String, String>>,
{
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(command, &e.to_string()),
    };
    match runtime.block_on(work) {
        Ok(said) => match writeln!(std::io::stdout().lock(), "{said}") {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(command, &e.to_string()),
        },
        Err(why) => fail(command, &why),
    }
}

fn fail(command: &str, why: &str) -> ExitCode {
    eprintln!("magi-code {command}: {why}");
    ExitCode::FAILURE
}

/// A line for the person at the terminal, on stderr (stdout is the outcome).
fn tell(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
    let _ = err.flush();
}

fn said(error: OAuthError) -> String {
    error.message
}

/// Runs `magi-code login`.
pub fn login(command: LoginCommand) -> ExitCode {
    match command {
        LoginCommand::Status => run_async("login status", async { Ok(status()) }),
        LoginCommand::Codex(flags) => run_async("login codex", login_codex(flags)),
    }
}

/// Runs `magi-code logout`.
pub fn logout(command: LogoutCommand) -> ExitCode {
    match command {
        LogoutCommand::Codex => run_async("logout codex", logout_codex()),
    }
}

async fn login_codex(flags: Flags) -> Result<String, String> {
    let context = chatgpt_context(&here())?;
    let signed = if flags.device {
        let device = chatgpt_flow::start_device(&context.endpoints)
            .await
            .map_err(said)?;
        tell(&format!(
            "To sign in to ChatGPT, on any device:\n  1. open {}\n  2. enter the code {} (it \
             expires in 15 minutes)\nDevice codes are a common target of phishing: never give \
             this one to anyone.",
            device.verification_url, device.user_code
        ));
        device.finish(flags.wait()).await.map_err(said)?
    } else {
        let sign_in = chatgpt_flow::start_browser(&context.endpoints)
            .await
            .map_err(said)?;
        announce(&sign_in.url, &flags, sign_in.port);
        sign_in.finish(flags.wait()).await.map_err(said)?
    };
    let path = chatgpt::save(&context.places, &signed)
        .map_err(|e| format!("the sign-in could not be kept in MC_HOME ({e})"))?;
    let claims = signed
        .tokens
        .id_token
        .as_deref()
        .and_then(magi_auth::jwt::claims)
        .unwrap_or_default();
    Ok(format!(
        "signed in to ChatGPT{}{}; provider \"codex\" uses this sign-in, kept in {}",
        claims
            .email
            .map(|email| format!(" as {email}"))
            .unwrap_or_default(),
        claims
            .plan
            .map(|plan| format!(" ({plan} plan)"))
            .unwrap_or_default(),
        path.display()
    ))
}

/// Shows the sign-in's URL and, unless asked not to, opens it in a browser.
fn announce(url: &str, flags: &Flags, port: u16) {
    tell(&format!(
        "Sign in in your browser; it comes back to this machine on port {port}.\n{url}"
    ));
    if flags.no_browser {
        return;
    }
    if let Err(why) = browser::open(url, &magi_config::Env::from_process()) {
        tell(&format!(
            "({why}: open the URL above yourself, or use --device on a machine without a \
             browser)"
        ));
    }
}

async fn logout_codex() -> Result<String, String> {
    let context = chatgpt_context(&here())?;
    let out = chatgpt::logout(&context.places, &context.endpoints)
        .await
        .map_err(|e| format!("the sign-in could not be deleted ({e})"))?;
    let mut lines = Vec::new();
    match (&out.removed, &out.revoked) {
        (Some(path), Some(Ok(()))) => lines.push(format!(
            "signed out: the server revoked the sign-in, and {} is deleted",
            path.display()
        )),
        (Some(path), Some(Err(e))) => lines.push(format!(
            "signed out: {} is deleted, but the sign-in could not be revoked ({e}); it ends \
             when its tokens expire",
            path.display()
        )),
        (Some(path), None) => lines.push(format!("signed out: {} is deleted", path.display())),
        (None, _) => lines.push("magi-code had no ChatGPT sign-in of its own".to_owned()),
    }
    if let Some(codex) = &out.codex_file {
        lines.push(format!(
            "The sign-in Codex keeps in {} is Codex's and stays, and provider \"codex\" goes \
             on using it: `codex logout` ends it.",
            codex.display()
        ));
    }
    Ok(lines.join("\n"))
}

/// `magi-code mcp login <name>`.
pub fn mcp_login(name: &str, flags: Flags) -> ExitCode {
    run_async("mcp login", async move {
        let context = mcp_context(&here(), name)?;
        if !context.approved {
            return Err(format!(
                "MCP server {name:?} is not approved: signing in reaches its URL and the \
                 authorization server it names, so approve it first (magi-code mcp approve \
                 {name})"
            ));
        }
        let discovery = mcp_flow::discover(&context.url, &context.oauth.scopes)
            .await
            .map_err(said)?;
        let issuer = discovery.issuer.clone();
        let client_id = context.oauth.client_id.as_deref();
        let signed = if flags.device {
            let device = mcp_flow::start_device(discovery, client_id, name)
                .await
                .map_err(said)?;
            let page = device
                .verification_uri_complete
                .clone()
                .unwrap_or_else(|| device.verification_uri.clone());
            tell(&format!(
                "To sign in to MCP server {name:?}, on any device:\n  1. open {page}\n  2. enter \
                 the code {}\nNever give this code to anyone.",
                device.user_code
            ));
            device.finish(flags.wait()).await.map_err(said)?
        } else {
            let sign_in = mcp_flow::start_browser(discovery, client_id, name)
                .await
                .map_err(said)?;
            announce(&sign_in.url, &flags, sign_in.port);
            sign_in.finish(flags.wait()).await.map_err(said)?
        };
        let path = magi_auth::mcp::save(&context.store, name, &context.url, &signed)
            .map_err(|e| format!("the sign-in could not be kept in MC_HOME ({e})"))?;
        Ok(format!(
            "signed in to MCP server {name:?} at {issuer}; kept in {}; backends started from \
             now on connect it with this sign-in",
            path.display()
        ))
    })
}

/// `magi-code mcp logout <name>`.
pub fn mcp_logout(name: &str) -> ExitCode {
    run_async("mcp logout", async move {
        let context = mcp_context(&here(), name)?;
        let out = magi_auth::mcp::logout(&context.store, name, &context.url)
            .await
            .map_err(|e| format!("the sign-in could not be deleted ({e})"))?;
        Ok(match (out.removed, out.revoked) {
            (Some(path), Some(Ok(()))) => format!(
                "signed out of MCP server {name:?}: the server revoked the sign-in, and {} is \
                 deleted",
                path.display()
            ),
            (Some(path), Some(Err(e))) => format!(
                "signed out of MCP server {name:?}: {} is deleted, but the sign-in could not be \
                 revoked ({e})",
                path.display()
            ),
            (Some(path), None) => format!(
                "signed out of MCP server {name:?}: {} is deleted (its server offers no \
                 revocation)",
                path.display()
            ),
            (None, _) => format!("MCP server {name:?} had no sign-in"),
        })
    })
}

/// `magi-code login status`: every sign-in, one a paragraph.
fn status() -> String {
    let now = SystemTime::now();
    let sign_ins = review(&here());
    let mut lines = Vec::new();
    match &sign_ins.chatgpt {
        Some((_, Lookup::Found(found))) => {
            lines.push(format!(
                "ChatGPT (provider \"codex\"): {}",
                describe(&Status::of(found, now), now)
            ));
            lines.extend(found.warnings.iter().map(|w| format!("  warning: {w}")));
        }
        Some((_, Lookup::Absent(why))) => lines.push(format!(
            "ChatGPT (provider \"codex\"): not signed in ({why}); sign in: magi-code login codex"
        )),
        Some((_, Lookup::Broken(why))) => lines.push(format!(
            "ChatGPT (provider \"codex\"): unusable: {why}; sign in again: magi-code login codex"
        )),
        None => lines.push(
            "ChatGPT (provider \"codex\"): unknown: the settings could not be read (magi-code \
             doctor says why)"
                .to_owned(),
        ),
    }
    for (name, url, found) in &sign_ins.mcp {
        let command = magi_auth::mcp::login_command(name);
        lines.push(match found {
            magi_auth::mcp::Lookup::Found(entry, warnings) => {
                let mut text = format!(
                    "MCP server {name:?} ({url}): signed in at {}; {}",
                    entry.issuer,
                    expiry(
                        entry.tokens.expiry(),
                        entry.tokens.refresh_token.is_some(),
                        now
                    )
                );
                if !entry.tokens.usable(now) {
                    text.push_str(&format!("; sign in again: {command}"));
                }
                for warning in warnings {
                    text.push_str(&format!("\n  warning: {warning}"));
                }
                text
            }
            magi_auth::mcp::Lookup::Absent => {
                format!("MCP server {name:?} ({url}): not signed in; sign in: {command}")
            }
            magi_auth::mcp::Lookup::Broken(why) => {
                format!("MCP server {name:?} ({url}): unusable: {why}; sign in again: {command}")
            }
        });
    }
    lines.join("\n")
}

/// A found ChatGPT sign-in: account, expiry, refreshability, where it is kept.
pub(crate) fn describe(status: &Status, now: SystemTime) -> String {
    let account = match (&status.email, &status.plan) {
        (Some(email), Some(plan)) => format!("signed in as {email} ({plan} plan)"),
        (Some(email), None) => format!("signed in as {email}"),
        (None, _) => "signed in (no email in the token)".to_owned(),
    };
    let kept = match &status.origin {
        Origin::Store(path) => format!("kept by magi-code in {}", path.display()),
        Origin::Codex(path) => format!("Codex's, in {}", path.display()),
    };
    let mut text = format!(
        "{account}; {}; {kept}",
        expiry(status.expires_at, status.refreshable, now)
    );
    if !status.usable {
        text.push_str("; sign in again: magi-code login codex");
    }
    text
}

/// When a token expires, relative to `now`, and whether it can be refreshed.
pub(crate) fn expiry(at: Option<SystemTime>, refreshable: bool, now: SystemTime) -> String {
    let refresh = if refreshable {
        "refreshable"
    } else {
        "not refreshable (no refresh token)"
    };
    let when = match at {
        None => "expiry unknown (the token does not say)".to_owned(),
        Some(at) => {
            let stamp = humantime::format_rfc3339_seconds(at);
            match at.duration_since(now) {
                Ok(left) => format!("expires {stamp} (in {})", rough(left)),
                Err(past) => format!("expired {stamp} ({} ago)", rough(past.duration())),
            }
        }
    };
    format!("{when}; {refresh}")
}

/// A duration in its largest unit: `59 min`, `3 h`, `12 d`.
fn rough(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        0..60 => format!("{secs} s"),
        60..3_600 => format!("{} min", secs / 60),
        3_600..86_400 => format!("{} h", secs / 3_600),
        _ => format!("{} d", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_are_said_relative_to_now() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            expiry(Some(now + Duration::from_secs(3_540)), true, now),
            "expires 2023-11-14T23:12:20Z (in 59 min); refreshable"
        );
        assert_eq!(
            expiry(Some(now - Duration::from_secs(7_200)), false, now),
            "expired 2023-11-14T20:13:20Z (2 h ago); not refreshable (no refresh token)"
        );
        assert!(expiry(None, true, now).starts_with("expiry unknown"));
    }
}
