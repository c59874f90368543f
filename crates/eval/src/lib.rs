//! The eval suite of magi-code (docs/eval.md): small generated repositories, each with
//! a realistic task and a check run once the agent is done, run through the real
//! `magi-code exec` against the configured provider, or against the loopback mock
//! playing each task's scripted solution, so the harness proves itself offline.
//!
//! [`tasks`] holds the tasks as data, one module a language; [`runner`] runs them
//! ([`repo`] makes a repository, [`agent`] runs `exec` and reads its frames, [`usage`]
//! reads the session log's usage records, [`mock`] is the scripted model); [`report`]
//! is what a person reads. Every process runs through [`process`]: its own process
//! group, bounded waits and output.

pub mod agent;
pub mod mock;
pub mod process;
pub mod repo;
pub mod report;
pub mod runner;
pub mod task;
pub mod tasks;
pub mod usage;

pub use runner::{Baseline, Config, Model, SuiteReport, TaskReport, baseline, run_suite, run_task};
pub use task::{Language, Task};
