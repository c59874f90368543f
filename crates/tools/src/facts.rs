//! The facts a tool call records about itself for the cards a client shows later.
//!
//! Saved cards are projected from recorded facts only, never from today's files, so a
//! call records, when it settles, everything a card needs and could not reconstruct:
//! what it touched, the counts it saw, whether it stopped at a bound, and for a command
//! its working directory, timeout argument, exit code, signal and truncation. Facts are
//! display data: the model never sees them. Every count is the tool's own observation;
//! `None` means not known, never zero.

use serde::{Deserialize, Serialize};

use crate::tracking::Tracking;

/// Most paths a fact list keeps (the first ones, in the tool's order): a card shows at
/// most 32 rows.
pub const FACT_PATHS: usize = 32;
/// Longest string a fact keeps, in bytes; longer ones are cut on a character boundary
/// and the cut is recorded.
pub const FACT_STRING_BYTES: usize = 1_024;

/// What one call observed, by tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "snake_case")]
pub enum Facts {
    /// `read`.
    Read {
        /// The path as given.
        path: String,
        /// First line returned (1-based), when lines were returned.
        first_line: Option<u64>,
        /// Last line returned.
        last_line: Option<u64>,
        /// Lines in the whole file, when the read reached its end.
        total_lines: Option<u64>,
        /// Whether the text returned stopped at a bound before the range asked for.
        truncated: bool,
        /// Whether the file was refused as binary.
        binary: bool,
    },
    /// `grep`, `find` and `list`: a search or listing over a tree.
    Search {
        /// What was looked for (`grep`'s regex, `find`'s glob); none for `list`.
        pattern: Option<String>,
        /// Where, as given; none for the working directory.
        path: Option<String>,
        /// Matches (`grep`) or entries (`find`, `list`) reported.
        matches: u64,
        /// Files with at least one match (`grep`); none for the others.
        files: Option<u64>,
        /// Whether the whole tree was examined: false when a bound stopped the search.
        complete: bool,
        /// The first paths reported, at most [`FACT_PATHS`].
        paths: Vec<String>,
    },
    /// `ast_grep`: a structural search over the files of one language.
    AstGrep {
        /// The pattern, as given.
        pattern: String,
        /// The language, as given.
        language: String,
        /// Where, as given; none for the working directory.
        path: Option<String>,
        /// Matches reported (at most the call's bound).
        matches: u64,
        /// Files with at least one reported match.
        files: u64,
        /// Files of the language parsed and searched.
        files_scanned: u64,
        /// Files of the language not searched: over the size bound, not UTF-8 text, or
        /// unreadable.
        files_skipped: u64,
        /// Whether every file of the language was searched and every match reported.
        complete: bool,
        /// The first files with a match, at most [`FACT_PATHS`].
        paths: Vec<String>,
    },
    /// `write`, `edit` and `hash_edit`: a change to one file.
    Change {
        /// The file, as given.
        path: String,
        /// Whether the file did not exist before.
        created: bool,
        /// Operations asked for (`hash_edit`'s list, 1 for the others).
        operations: u64,
        /// Operations applied and written.
        applied: u64,
        /// Whether the file's content on disk was changed.
        changed: bool,
        /// Lines the applied change added, counted over the whole change (not the
        /// bounded preview); none when nothing was applied or it was not counted
        /// (records of older builds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lines_added: Option<u64>,
        /// Lines it removed, likewise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lines_removed: Option<u64>,
    },
    /// `web_fetch`.
    Web {
        /// The URL, as given.
        url: String,
        /// The HTTP status, when a response arrived.
        status: Option<u16>,
        /// The response's content type, when given.
        content_type: Option<String>,
        /// Body bytes read.
        bytes: Option<u64>,
        /// Whether the body or its text stopped at a bound.
        truncated: bool,
    },
    /// `bash` and `async_bash`.
    Command(Box<CommandFacts>),
    /// An MCP server's tool, as far as the call reached it.
    Mcp {
        /// The server.
        server: String,
        /// The tool's name at the server.
        server_tool: String,
        /// Whether the server answered the call.
        answered: bool,
        /// Whether the server marked its answer as an error; none without an answer.
        server_error: Option<bool>,
        /// Bytes of the answer as the model sees it (or would have); none without one.
        result_bytes: Option<u64>,
        /// Content items of the answer not given as text (images, audio, binary
        /// resources); none without an answer.
        non_text_items: Option<u64>,
    },
    /// `ask_user` (`user.questions`): the questions asked and how they were settled.
    Questions {
        /// The questions, with their options, as asked.
        questions: Vec<magi_protocol::messages::Question>,
        /// One answer per question, when the person answered; none otherwise.
        answers: Option<Vec<magi_protocol::messages::QuestionReply>>,
        /// How they were settled (the call's summary: `answered`, `declined`, …);
        /// none while they wait for the person.
        settled: Option<String>,
    },
    /// `task`: a task delegated to a subagent.
    Task {
        /// The task, as its cards' `task_id` names it.
        task_id: String,
        /// The subagent profile it was delegated to.
        profile: String,
        /// The session ID of the subagent's own history.
        history: String,
        /// Model requests the subagent made.
        model_requests: u64,
        /// Tool calls the subagent asked for.
        tool_calls: u64,
        /// How the subagent ended: `completed`, `failed`, `cancelled` or `step limit`.
        ended: String,
        /// Bytes of its final response (the report file holds all of them), when it gave
        /// one.
        report_bytes: Option<u64>,
    },
    /// `bash_log` and `bash_kill`: a look at, or the end of, a background job.
    Job {
        /// The job.
        job_id: String,
        /// The job's state as the call saw it (`running`, `exit 0`, `killed`, …).
        state: Option<String>,
        /// First line returned (0-based, as the tool's offsets are), for `bash_log`.
        first_line: Option<u64>,
        /// Lines returned.
        lines: Option<u64>,
        /// Lines in the job's output so far.
        total_lines: Option<u64>,
    },
    /// `view_image`: the file as read, and the image the model was given.
    Image {
        /// The path as given.
        path: String,
        /// `png`, `jpeg`, `gif` or `webp`; none when the file is not one of them (or
        /// was not read).
        format: Option<String>,
        /// The file's width in pixels, once decoded.
        width: Option<u32>,
        /// The file's height in pixels, once decoded.
        height: Option<u32>,
        /// The file's size in bytes, once known.
        bytes: Option<u64>,
        /// The image kept with the call's assets and attached to the model's requests;
        /// none when the call failed.
        sent: Option<SentImage>,
    },
    /// `magi_control`: the operation, how the request stands, and only what is public
    /// of its answer (never a compaction's summary or the result text).
    Control {
        /// `usage`, `compact` or `title`.
        operation: String,
        /// How the request stands, in the fixed words of [`ControlStatus`].
        status: ControlStatus,
        /// The session's recorded usage (`usage` only).
        usage: Option<UsageFigures>,
        /// The title recorded (`title` only, when one was).
        title: Option<String>,
        /// Characters cut off the title given to keep it within `title_chars`.
        title_cut: Option<u64>,
    },
    /// `todo` (`plan.todo`): the whole plan the call gave, checked.
    Plan {
        /// The items, in order.
        items: Vec<magi_protocol::plan::PlanItem>,
    },
    /// `code_mode`: how the script ran, from the backend's own counts (never from the
    /// nested calls' cards, which a card budget may leave out).
    CodeMode {
        /// Nested tool calls the script started.
        nested_started: u64,
        /// Of those, the ones that completed.
        nested_completed: u64,
        /// Of those, the ones that failed, were denied or were cancelled.
        nested_failed: u64,
        /// Wall time from the script's start to its end, in milliseconds, waits for a
        /// person included.
        wall_ms: u64,
        /// Bytes the script printed (within the output bound).
        output_bytes: u64,
        /// The limit that stopped it; none when none did.
        limit: Option<CodeModeLimit>,
        /// The script line an uncaught error named, when it named one.
        error_line: Option<u32>,
    },
}

/// A Code Mode limit that stopped a script (`[code_mode]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeModeLimit {
    /// `timeout_secs`: wall time, waits for a person excluded.
    Time,
    /// `max_tool_calls`: nested calls started.
    ToolCalls,
    /// `memory_mib`: the engine's memory.
    Memory,
    /// The printed output's bound.
    Output,
}

/// The image a `view_image` call gave the model, kept with its assets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentImage {
    /// `image/png`, `image/jpeg` or `image/webp`.
    pub media_type: String,
    /// Its width in pixels (smaller than the file's when downscaled).
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// The kept file (one of `IMAGE_ASSET_FILES`), its size and digest: a replay
    /// attaches it only while it is still the file this call wrote.
    pub file: CaptureDigest,
}

/// How a `magi_control` request stands when its call settles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlStatus {
    /// `usage`: answered from the session's records.
    Answered,
    /// `compact`: compaction runs before the agent's next model request.
    CompactionRequested,
    /// `compact`: an earlier call of the same turn already asked; it runs once.
    AlreadyRequested,
    /// `title`: the title was recorded.
    TitleSet,
    /// `title`: the title could not be recorded (the log refused the append).
    TitleNotRecorded,
}

/// The session's usage as its log records it: the sums of what the provider reported
/// for each model request of the session's agent, with how many requests reported each
/// figure (a figure no request reported is none, never zero).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageFigures {
    /// Model requests recorded (each has a `usage` record, whatever it reported).
    pub model_requests: u64,
    /// Tool calls recorded in the session log, this one included.
    pub tool_calls: u64,
    /// Input tokens, cached ones included.
    pub input_tokens: Option<TokenSum>,
    /// Of the input tokens, those read from the provider's prompt cache.
    pub cached_input_tokens: Option<TokenSum>,
    /// Output tokens, reasoning ones included.
    pub output_tokens: Option<TokenSum>,
    /// Of the output tokens, those spent reasoning.
    pub reasoning_tokens: Option<TokenSum>,
    /// The model's context window in tokens, when known.
    pub context_window: Option<u64>,
    /// The tokens of the window the conversation filled after the latest request that
    /// reported them.
    pub context_used: Option<u64>,
}

/// A token figure summed over the requests that reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSum {
    /// The sum.
    pub tokens: u64,
    /// How many requests reported it.
    pub requests: u64,
}

impl Facts {
    /// The facts of a `find` or `list` that reported `shown` (paths as the model sees
    /// them): every entry counted, the first [`FACT_PATHS`] kept.
    pub fn listing(
        pattern: Option<&str>,
        path: Option<&str>,
        shown: &[String],
        complete: bool,
    ) -> Facts {
        Facts::Search {
            pattern: pattern.map(|p| cut(p, FACT_STRING_BYTES)),
            path: path.map(|p| cut(p, FACT_STRING_BYTES)),
            matches: shown.len() as u64,
            files: None,
            complete,
            paths: shown
                .iter()
                .take(FACT_PATHS)
                .map(|p| cut(p, FACT_STRING_BYTES))
                .collect(),
        }
    }
}

/// What a command call observed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandFacts {
    /// The command line as given, cut to [`FACT_STRING_BYTES`].
    pub command: String,
    /// Where it ran.
    pub working_directory: String,
    /// The `timeout_ms` argument, when the model gave one (the default is not an
    /// argument).
    pub timeout_ms: Option<u64>,
    /// The timeout that applied, in milliseconds.
    pub effective_timeout_ms: Option<u64>,
    /// Whether the timeout killed it; none while it runs on as a job.
    pub timed_out: Option<bool>,
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it (`SIGKILL`), when one did.
    pub signal: Option<String>,
    /// Whether stdout's capture stopped at its bound; none when not captured.
    pub stdout_truncated: Option<bool>,
    /// Whether stderr's capture stopped at its bound.
    pub stderr_truncated: Option<bool>,
    /// Lines in the captured stdout, when it was read back.
    pub stdout_lines: Option<u64>,
    /// Lines in the captured stderr.
    pub stderr_lines: Option<u64>,
    /// The first non-empty stderr line of a failed command.
    pub failure_line: Option<String>,
    /// What could not be cleaned up after it (a process that kept the output open).
    pub cleanup_warning: Option<String>,
    /// The background job it runs as (`async_bash`, or a promoted `bash`).
    pub job_id: Option<String>,
    /// The static reading of the command line for the files it names.
    pub tracking: Option<Tracking>,
    /// The captures kept with the call's assets, each with its size and digest, so a
    /// later reader can tell the file is the one this call wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<CaptureDigest>,
    /// The sandbox the command ran in, as applied (`workspace-write; network none`,
    /// `off`, `off (unavailable)`); none when the backend has no sandbox settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The notice, given once per backend, that the sandbox is not (wholly) in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_notice: Option<String>,
}

/// One capture file kept with a call's assets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureDigest {
    /// Its name in the call's assets directory (`output.txt`, `stdout.txt`, `stderr.txt`).
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The SHA-256 of its content, in lower-case hex.
    pub sha256: String,
}

/// The capture files a command keeps, by name.
pub const CAPTURE_FILES: [&str; 3] = ["stdout.txt", "stderr.txt", "output.txt"];

impl CaptureDigest {
    /// The digest of the file at `path`, none when it cannot be read.
    pub fn of(path: &std::path::Path) -> Option<CaptureDigest> {
        use sha2::Digest;
        use std::io::Read;
        let mut file = std::fs::File::open(path).ok()?;
        let mut hasher = sha2::Sha256::new();
        let mut buffer = vec![0; 64 * 1024];
        let mut bytes = 0u64;
        loop {
            match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    hasher.update(&buffer[..n]);
                    bytes += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        CaptureDigest::taken(path, bytes, hasher.finalize().into())
    }

    /// The digest of the file at `path`, of `bytes` bytes whose SHA-256 is `sha256`
    /// (taken as they were written); none when the path has no file name.
    pub(crate) fn taken(
        path: &std::path::Path,
        bytes: u64,
        sha256: [u8; 32],
    ) -> Option<CaptureDigest> {
        Some(CaptureDigest {
            file: path.file_name()?.to_string_lossy().into_owned(),
            bytes,
            sha256: sha256.iter().map(|b| format!("{b:02x}")).collect(),
        })
    }

    /// Whether `assets_dir` (a call's own assets directory: the owner's scope) still
    /// holds exactly this capture. Only the known capture names are looked up, so a
    /// recorded name can never reach outside the directory.
    pub fn verify(&self, assets_dir: &std::path::Path) -> bool {
        CAPTURE_FILES.contains(&self.file.as_str())
            && CaptureDigest::of(&assets_dir.join(&self.file)).as_ref() == Some(self)
    }
}

/// A display-only preview of a change a call applied: a unified diff of the file,
/// bounded and made safe before it is recorded. Never given to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedPreview {
    /// The file the diff is of.
    pub path: String,
    /// The diff's lines, as `similar` writes a unified diff.
    pub diff: String,
    /// Whether lines were left out to keep within the preview bounds.
    pub truncated: bool,
    /// Lines the whole change adds, however many the diff kept.
    pub added: u64,
    /// Lines the whole change removes.
    pub removed: u64,
}

/// `text` cut to at most `max` bytes on a character boundary.
pub fn cut(text: &str, max: usize) -> String {
    text[..text.floor_char_boundary(max)].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_round_trip_tagged_by_tool() {
        let facts = Facts::Change {
            path: "a.rs".into(),
            created: false,
            operations: 3,
            applied: 2,
            changed: true,
            lines_added: Some(4),
            lines_removed: None,
        };
        let json = serde_json::to_value(&facts).unwrap();
        assert_eq!(json["tool"], "change");
        assert_eq!(serde_json::from_value::<Facts>(json).unwrap(), facts);
        assert_eq!(cut("héllo", 2), "h");
    }

    #[test]
    fn capture_digests_verify_only_the_file_they_were_taken_of() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("output.txt"), "hi\n").unwrap();
        let digest = CaptureDigest::of(&dir.path().join("output.txt")).unwrap();
        assert_eq!(digest.bytes, 3);
        assert_eq!(
            digest.sha256,
            "98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4"
        );
        assert!(digest.verify(dir.path()));
        std::fs::write(dir.path().join("output.txt"), "hi!\n").unwrap();
        assert!(!digest.verify(dir.path()));
        let escaping = CaptureDigest {
            file: "../output.txt".into(),
            ..digest
        };
        assert!(!escaping.verify(dir.path()));
    }
}
