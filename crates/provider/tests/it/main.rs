//! The provider clients against the loopback mock model, as one test binary: each wire
//! format's requests, streams and failures.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

mod failures;
mod requests;
mod signed_in;
mod streams;
