//! `code_mode`: the script runs on a thread of its own (its engine is not `Send`), with
//! the `[code_mode]` limits, until it ends, a limit stops it or the turn is cancelled,
//! which its engine's interrupt handler sees at once.

use std::sync::Arc;
use std::time::Instant;

use magi_protocol::limits::CODE_MODE_OUTPUT_BYTES;
use magi_tools::code_mode::{LimitSettings, NoTools, ScriptClock, parse_code, report, run_script};
use magi_tools::{ToolOutput, ToolReport};

use super::{Call, CallService};

impl CallService<'_, '_> {
    /// Runs a claimed `code_mode` call's script and reports its result.
    pub(super) async fn code_mode(&mut self, call: &Call) -> ToolReport {
        let code = match parse_code(&call.arguments) {
            Ok(code) => code,
            Err(why) => {
                return ToolReport::from(ToolOutput {
                    content: why,
                    summary: "invalid arguments".into(),
                    is_error: true,
                });
            }
        };
        let settings = LimitSettings {
            timeout_secs: self.agent.code_mode.timeout_secs,
            max_tool_calls: self.agent.code_mode.max_tool_calls,
            memory_mib: self.agent.code_mode.memory_mib,
            output_bytes: CODE_MODE_OUTPUT_BYTES,
        };
        let assets_dir = self.workspace.tool_assets_dir(&call.call_id);
        let cancel = self.output.cancel.clone();
        let began = Instant::now();
        let script = tokio::task::spawn_blocking(move || {
            let cancelled = Arc::new(move || cancel.is_cancelled());
            let clock = Arc::new(ScriptClock::start());
            let outcome = run_script(
                &code,
                &[],
                settings.script_limits(),
                clock,
                cancelled,
                &mut NoTools,
            );
            let wall_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
            report(&outcome, settings, wall_ms, assets_dir.as_deref())
        });
        script.await.unwrap_or_else(|_| {
            ToolReport::from(ToolOutput {
                content: "The script's engine stopped before it reported; nothing more is \
                          known of the script."
                    .into(),
                summary: "engine stopped".into(),
                is_error: true,
            })
        })
    }
}
