//! `doctor`'s checks of the sign-ins: each one present or not, its expiry, whether it
//! can be refreshed, what to fix about its file; with `--online`, a refresh as a turn
//! would make it, the rotated tokens written back. Never a token.

use std::time::SystemTime;

use magi_auth::chatgpt::{self, Lookup, Status as SignInStatus};
use magi_core::StartupRequest;
use magi_core::inspect::Inspection;

use super::{Check, Status};
use crate::login::{describe, expiry};

/// The checks of every sign-in this configuration names.
pub(super) async fn checks(
    request: &StartupRequest,
    inspection: &Inspection,
    online: bool,
) -> Vec<Check> {
    let now = SystemTime::now();
    let sign_ins = magi_core::sign_in::review(request);
    let selected = inspection.provider.as_ref().is_some_and(|p| {
        matches!(
            p.definition.credential,
            magi_config::Credential::ChatGpt { .. }
        )
    });
    let mut checks = Vec::new();
    match &sign_ins.chatgpt {
        Some((context, Lookup::Found(found))) => {
            let status = SignInStatus::of(found, now);
            let line = format!("ChatGPT (provider \"codex\"): {}", describe(&status, now));
            checks.push(if status.usable {
                Check::new("sign-in", Status::Ok, line)
            } else {
                Check::new("sign-in", Status::Error, line).fix(chatgpt::LOGIN_COMMAND)
            });
            for warning in &found.warnings {
                checks.push(Check::new("sign-in", Status::Warning, warning.clone()));
            }
            if online && status.usable {
                let sign_in = chatgpt::sign_in(found, &context.endpoints);
                checks.push(match sign_in.refresh_now().await {
                    Ok(_) => Check::new(
                        "sign-in",
                        Status::Ok,
                        format!(
                            "ChatGPT's sign-in was refreshed at {}; the new tokens are written \
                             back to {}",
                            context.auth_url,
                            found.origin.path().display()
                        ),
                    ),
                    Err(e) => Check::new("sign-in", Status::Error, e.what).fix(e.fix),
                });
            }
        }
        Some((_, Lookup::Absent(why))) if selected => checks.push(
            Check::new(
                "sign-in",
                Status::Error,
                format!("provider \"codex\" is not signed in to ChatGPT ({why})"),
            )
            .fix(chatgpt::LOGIN_COMMAND),
        ),
        Some((_, Lookup::Broken(why))) => checks.push(
            Check::new(
                "sign-in",
                if selected {
                    Status::Error
                } else {
                    Status::Warning
                },
                format!("the ChatGPT sign-in is unusable: {why}"),
            )
            .fix(chatgpt::LOGIN_COMMAND),
        ),
        Some((_, Lookup::Absent(_))) | None => {}
    }
    for (name, url, found) in &sign_ins.mcp {
        let command = magi_auth::mcp::login_command(name);
        let store = match &inspection.home {
            Ok(home) => magi_auth::store::Store::new(home),
            Err(_) => continue,
        };
        match found {
            magi_auth::mcp::Lookup::Found(entry, warnings) => {
                let usable = entry.tokens.usable(now);
                let line = format!(
                    "MCP server {name:?}: signed in at {}; {}",
                    entry.issuer,
                    expiry(
                        entry.tokens.expiry(),
                        entry.tokens.refresh_token.is_some(),
                        now
                    )
                );
                checks.push(if usable {
                    Check::new("sign-in", Status::Ok, line)
                } else {
                    Check::new("sign-in", Status::Error, line).fix(command.clone())
                });
                for warning in warnings {
                    checks.push(Check::new("sign-in", Status::Warning, warning.clone()));
                }
                if online && usable && entry.tokens.refresh_token.is_some() {
                    let sign_in = magi_auth::mcp::sign_in(&store, name, url);
                    checks.push(match sign_in.refresh_now().await {
                        Ok(_) => Check::new(
                            "sign-in",
                            Status::Ok,
                            format!(
                                "MCP server {name:?}'s sign-in was refreshed; the new tokens are \
                                 written back"
                            ),
                        ),
                        Err(e) => Check::new("sign-in", Status::Error, e.what).fix(e.fix),
                    });
                }
            }
            magi_auth::mcp::Lookup::Absent => checks.push(
                Check::new(
                    "sign-in",
                    Status::Error,
                    format!("MCP server {name:?} needs a sign-in and has none"),
                )
                .fix(command),
            ),
            magi_auth::mcp::Lookup::Broken(why) => checks.push(
                Check::new(
                    "sign-in",
                    Status::Error,
                    format!("MCP server {name:?}'s sign-in is unusable: {why}"),
                )
                .fix(command),
            ),
        }
    }
    checks
}
