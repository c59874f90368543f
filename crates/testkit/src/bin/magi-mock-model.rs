//! `magi-mock-model SCENARIO [--tool NAME] [--arguments JSON] [--answer-delay-ms N]`:
//! serves a benchmark scenario on a loopback port until killed, each answer after N
//! milliseconds (0 by default) as a model takes time to think.
//!
//! It prints its base URL (`http://127.0.0.1:PORT/v1`) as the only line on stdout and
//! writes nothing else anywhere, so it never disturbs what a benchmark measures. The
//! client's gaps between a response's end and its next request are read with
//! `GET /v1/mock/stats` and cleared with `POST /v1/mock/reset`. Exit status 2 means a
//! bad command line, 1 that no loopback port could be bound.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use magi_testkit::{MockServer, Scenario};

fn parse(mut args: impl Iterator<Item = String>) -> Option<(Scenario, Duration)> {
    let mut scenario = Scenario::from_name(&args.next()?)?;
    let mut answer_delay = Duration::ZERO;
    while let Some(flag) = args.next() {
        let value = args.next()?;
        match (&mut scenario, flag.as_str()) {
            (Scenario::Tools10 { tool, .. }, "--tool") => *tool = Some(value),
            (Scenario::Tools10 { arguments, .. }, "--arguments") => *arguments = value,
            (_, "--answer-delay-ms") => answer_delay = Duration::from_millis(value.parse().ok()?),
            _ => return None,
        }
    }
    Some((scenario, answer_delay))
}

fn main() -> ExitCode {
    let Some((scenario, answer_delay)) = parse(std::env::args().skip(1)) else {
        return ExitCode::from(2);
    };
    // One thread is plenty for a mock and keeps its own cost out of the measurements.
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    runtime.block_on(async {
        let Ok(server) = MockServer::start_scenario_after(scenario, answer_delay).await else {
            return ExitCode::FAILURE;
        };
        let mut stdout = std::io::stdout().lock();
        if writeln!(stdout, "{}", server.base_url())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return ExitCode::FAILURE;
        }
        drop(stdout);
        std::future::pending::<()>().await;
        ExitCode::SUCCESS
    })
}
