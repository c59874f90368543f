//! The black-box suite of the `magi-code` binary, as one test binary: every module
//! spawns the real binary through the client library, each test with its own temporary
//! `MC_HOME` and workspace (`common`). One binary links the whole program once.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

mod acp;
mod approval_modes;
mod approval_scopes;
mod approvals;
mod ast_grep;
mod attachments;
mod card_props;
mod card_styles;
mod cards;
mod catalog;
mod checkpoint_settings;
mod checkpoints;
mod client_files;
mod client_terminals;
mod client_tools;
mod code_mode;
mod code_mode_nested;
mod compaction;
mod context_windows;
mod crash;
mod discovery;
mod doctor;
mod errors;
mod eval;
mod exec;
mod exec_approvals;
mod exec_questions;
mod exec_sessions;
mod exec_signals;
mod frames;
mod help;
mod hooks;
mod hooks_decisions;
mod hooks_protocol;
mod initialize;
mod instructions;
mod jobs_control;
mod launch;
mod lifecycle;
mod live_output;
mod long_turns;
mod magi_control;
mod mc_cards;
mod mc_checkpoints;
mod mc_commands;
mod mc_composer;
mod mc_details;
mod mc_input;
mod mc_permissions;
mod mc_plan;
mod mc_session;
mod mc_transcript;
mod mcp;
mod mcp_oauth;
mod mid_turn_compaction;
mod mission_control;
mod model_cached;
mod panics;
mod permission_records;
mod plan;
mod prompt_golden;
mod questions;
mod reasoning;
mod reasoning_replay;
mod refusal;
mod requests;
mod sandbox;
mod sandbox_calls;
mod sandbox_git;
mod session_usage;
mod sessions;
mod sign_in;
mod soak;
mod spawner;
mod subagents;
mod titles;
mod tool_calls;
mod tools_disabled;
mod turns;
mod view_image;
