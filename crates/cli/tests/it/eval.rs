//! The eval suite (`magi-eval`, docs/eval.md) against the mock: every task's check fails
//! on its untouched repository, and passes once the real binary has played the task's
//! scripted solution, each request of which the run asked for and recorded.

use std::time::Duration;

use magi_eval::runner::{Config, Model};
use magi_eval::task::{Round, answer, bash, calls};
use magi_eval::{report, tasks};
use magi_protocol::limits::EVAL_TASK_MS;
use magi_testkit::{MockServer, Reply};

use crate::common::bin;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_fails_untouched_and_passes_with_the_scripted_solution() {
    let tasks = tasks::all();
    let scratch = tempfile::tempdir().unwrap();

    let mut baselines = Vec::new();
    for task in &tasks {
        baselines.push(magi_eval::baseline(task, scratch.path()).await);
    }
    assert!(
        baselines.iter().all(|b| b.failed),
        "{}",
        report::baselines(&baselines)
    );

    let config = Config {
        magi_code: bin().into(),
        model: Model::Mock,
        bound: Duration::from_millis(EVAL_TASK_MS),
        settings: None,
    };
    let suite = magi_eval::run_suite(&tasks, &config, scratch.path(), |_| {}).await;
    let table = report::table(&suite);
    assert_eq!(suite.passed, tasks.len(), "{table}");
    for (task, report) in tasks.iter().zip(&suite.tasks) {
        assert!(report.problems.is_empty(), "{}: {table}", task.name);
        assert_eq!(report.replies_left, Some(0), "{}: {table}", task.name);
        // One usage record a scripted reply, every count reported.
        let usage = report.usage.unwrap();
        let replies = (task.solution)().len() as u64;
        assert_eq!(usage.requests, replies, "{}: {table}", task.name);
        for tokens in [
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens,
        ] {
            assert!(tokens.complete(), "{}: {table}", task.name);
        }
        assert!(usage.input_tokens.reported > usage.cached_input_tokens.reported);
        // The final answer is the last reply's text.
        assert!(matches!((task.solution)().last(), Some(Round::Answer(_))));
    }
}

#[tokio::test]
async fn a_wrong_answer_a_script_run_out_and_a_run_past_its_bound_each_fail() {
    let logs = tasks::select("shell-answer-logs")[0];
    let scratch = tempfile::tempdir().unwrap();
    let config = |bound| Config {
        magi_code: bin().into(),
        model: Model::Mock,
        bound,
        settings: None,
    };
    let normal = config(Duration::from_millis(EVAL_TASK_MS));

    // The run completes, but the answer lacks the fact: the check says so.
    let wrong = magi_eval::Task {
        name: "wrong-answer",
        solution: || vec![answer("It is 198.51.100.23.")],
        ..logs
    };
    let report = magi_eval::run_task(&wrong, &normal, scratch.path()).await;
    assert!(!report.passed);
    assert_eq!(report.exit_code, Some(0));
    assert_eq!(report.usage.unwrap().requests, 1);
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(
        report.problems[0].starts_with("the check failed:\nthe answer does not name 203.0.113.7:"),
        "{:?}",
        report.problems
    );

    // The model wants a reply the script does not have: the run fails and says so.
    let short = magi_eval::Task {
        name: "script-run-out",
        solution: || vec![calls([bash("true")])],
        ..logs
    };
    let report = magi_eval::run_task(&short, &normal, scratch.path()).await;
    assert!(!report.passed);
    assert_eq!(report.replies_left, Some(0));
    assert_eq!(report.exit_code, Some(1));
    // Both requests are recorded: the second one's counts were never reported.
    let usage = report.usage.unwrap();
    assert_eq!(usage.requests, 2);
    assert_eq!(usage.input_tokens.unreported_requests, 1);
    assert!(
        report.problems[0].starts_with("the run ended failed; magi-code exec exited with status 1"),
        "{:?}",
        report.problems
    );

    // A run that outlives its bound is stopped, and its task fails.
    let report = magi_eval::run_task(&logs, &config(Duration::ZERO), scratch.path()).await;
    assert!(report.timed_out);
    assert!(!report.passed);
    assert!(
        report.problems[0].starts_with("the run outlived its time bound and was stopped"),
        "{:?}",
        report.problems
    );
}

#[tokio::test]
async fn a_configured_provider_comes_from_the_settings_file_given_to_every_run() {
    // A provider of the settings' own, so no variable of the environment redirects it.
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "c1",
        "bash",
        [r#"{"command":"awk '$9 == 404 { print $1 }' logs/access.log | sort | uniq -c"}"#],
    ));
    mock.enqueue(
        Reply::stream()
            .text(["203.0.113.7, with 12 of them."])
            .usage(900, 12),
    );
    let scratch = tempfile::tempdir().unwrap();
    let settings = scratch.path().join("settings.toml");
    std::fs::write(
        &settings,
        format!(
            "[providers.local]\nkind = \"openai-chat\"\nbase_url = \"{}\"\nkeyless = true\n",
            mock.base_url()
        ),
    )
    .unwrap();
    let config = Config {
        magi_code: bin().into(),
        model: Model::Configured(
            ["--provider", "local", "--model", "local-model"]
                .map(String::from)
                .to_vec(),
        ),
        bound: Duration::from_millis(EVAL_TASK_MS),
        settings: Some(settings),
    };
    let task = tasks::select("shell-answer-logs")[0];
    let report = magi_eval::run_task(&task, &config, scratch.path()).await;
    assert!(report.passed, "{:?}", report.problems);
    assert_eq!(report.replies_left, None);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["model"], "local-model");
    // The first response reported no usage, the second did.
    let usage = report.usage.unwrap();
    assert_eq!(usage.requests, 2);
    assert_eq!(usage.input_tokens.reported, 900);
    assert_eq!(usage.input_tokens.unreported_requests, 1);
}
