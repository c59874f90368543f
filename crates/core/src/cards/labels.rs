//! The fixed row labels of the card rows and the public protection labels a card may
//! carry.

/// Label of the Bash notice row for the humanize protection, which this backend does
/// not have: its value is always null.
pub const ROW_HUMANIZE_PROTECTION: &str = "Humanize protection";
/// Label of the Bash notice row for the recorded protection label.
pub const ROW_BASH_PROTECTION: &str = "Bash protection";
/// Label of the Bash notice row for the file tracking status.
pub const ROW_FILE_TRACKING: &str = "File tracking";
/// Label of the Bash notice row for the inferred file activity aggregate.
pub const ROW_INFERRED_FILE_ACTIVITY: &str = "Inferred file activity";
/// Label of the Bash execution row for the timeout.
pub const ROW_COMMAND_TIMEOUT: &str = "Command timeout";
/// Label of the Bash execution row for capture truncation.
pub const ROW_OUTPUT_TRUNCATION: &str = "Output truncation";
/// Label of the Bash execution row for a cleanup warning.
pub const ROW_CLEANUP_WARNING: &str = "Cleanup warning";
/// Label of the Bash execution row for a failed command's explanation.
pub const ROW_FAILURE_EXPLANATION: &str = "Failure explanation";
/// Label of the Bash execution row, and of the job row, for output line counts.
pub const ROW_OUTPUT_LINES: &str = "Output lines";
/// Label of the row naming the job a command moved to.
pub const ROW_BACKGROUND_JOB: &str = "Background job";
/// The sandbox a command ran in, as applied (its own results block).
pub const ROW_SANDBOX: &str = "Sandbox";
/// The notice, once per backend, that the sandbox is not (wholly) in force.
pub const ROW_SANDBOX_NOTICE: &str = "Sandbox notice";
/// What a `pre_tool_use` hook decided of the call (its own results block).
pub const ROW_HOOK: &str = "Hook";
/// Label of the `ask_user` row holding one question.
pub const ROW_QUESTION: &str = "Question";
/// Label of the `ask_user` row listing a question's options.
pub const ROW_OPTIONS: &str = "Options";
/// Label of the `ask_user` row with the person's answer to a question.
pub const ROW_ANSWER: &str = "Answer";
/// Label of the `read` and `bash_log` row for the lines returned.
pub const ROW_LINES_SHOWN: &str = "Lines shown";
/// Label of the `read` row for the file's length in lines.
pub const ROW_FILE_LINES: &str = "File lines";
/// Label of the `read` row for a stop at a bound.
pub const ROW_STOPPED_AT_BOUND: &str = "Stopped at bound";
/// Label of the `read` row for a binary file.
pub const ROW_BINARY: &str = "Binary";
/// Label of the search row for what was looked for.
pub const ROW_PATTERN: &str = "Pattern";
/// Label of the search row for where it looked.
pub const ROW_SCOPE: &str = "Scope";
/// Label of the search row for the reported count.
pub const ROW_MATCHES: &str = "Matches";
/// Label of the `grep` row for the files with a match.
pub const ROW_FILES_WITH_MATCHES: &str = "Files with matches";
/// Label of the `ast_grep` row for the pattern's language.
pub const ROW_LANGUAGE: &str = "Language";
/// Label of the `ast_grep` row for the files parsed and searched.
pub const ROW_FILES_SCANNED: &str = "Files scanned";
/// Label of the `ast_grep` row for the files of the language not searched.
pub const ROW_FILES_SKIPPED: &str = "Files skipped";
/// Label of the search row for scan completeness.
pub const ROW_SCAN: &str = "Scan";
/// Label of the change row for operations applied.
pub const ROW_OPERATIONS_APPLIED: &str = "Operations applied";
/// Label of the `write` row for a file that did not exist before.
pub const ROW_FILE_CREATED: &str = "File created";
/// Label of the change row for a file whose content changed.
pub const ROW_FILE_CHANGED: &str = "File changed";
/// A change card's row: the lines the whole change added and removed (`+N −M`).
pub const ROW_LINES_CHANGED: &str = "Lines changed";
/// Label of the `web_fetch` row for the HTTP status.
pub const ROW_HTTP_STATUS: &str = "HTTP status";
/// Label of the `web_fetch` row for the content type.
pub const ROW_CONTENT_TYPE: &str = "Content type";
/// Label of the `web_fetch` row for the body bytes read.
pub const ROW_BYTES_READ: &str = "Bytes read";
/// Label of the `web_fetch` row for a cut at a bound.
pub const ROW_CUT_AT_BOUND: &str = "Cut at bound";
/// Label of the job row for the job's ID.
pub const ROW_JOB: &str = "Job";
/// Label of the job row for the job's state.
pub const ROW_STATE: &str = "State";
/// Label of the task row for the subagent profile.
pub const ROW_SUBAGENT: &str = "Subagent";
/// Label of the task row for the subagent's model requests.
pub const ROW_MODEL_REQUESTS: &str = "Model requests";
/// Label of the task row for the tool calls the subagent asked for.
pub const ROW_TOOL_CALLS: &str = "Tool calls";
/// Label of the task row for how the subagent ended.
pub const ROW_ENDED: &str = "Ended";
/// Label of the task row for the size of the subagent's final response.
pub const ROW_FINAL_RESPONSE: &str = "Final response";
/// Label of the MCP row for the server.
pub const ROW_SERVER: &str = "Server";
/// Label of the MCP row for the tool at the server.
pub const ROW_TOOL: &str = "Tool";
/// Label of the MCP row for whether the server answered.
pub const ROW_ANSWERED: &str = "Answered";
/// Label of the MCP row for whether the server marked its answer as an error.
pub const ROW_SERVER_ERROR: &str = "Server error";
/// Label of the MCP row for the answer's size.
pub const ROW_RESULT_SIZE: &str = "Result size";
/// Label of the MCP row for content not given as text.
pub const ROW_NON_TEXT_CONTENT: &str = "Non-text content";
/// Label of the `view_image` row naming the file's format (`PNG`, `JPEG`, `GIF`, `WebP`).
pub const ROW_IMAGE_FORMAT: &str = "Format";
/// Label of the `view_image` row for the file's width in pixels.
pub const ROW_WIDTH: &str = "Width";
/// Label of the `view_image` row for the file's height in pixels.
pub const ROW_HEIGHT: &str = "Height";
/// Label of the `view_image` row for the file's size.
pub const ROW_FILE_SIZE: &str = "Bytes";
/// Label of the `view_image` row for the image the model was given.
pub const ROW_SENT_TO_MODEL: &str = "Sent to the model";
/// Label of the `magi_control` row naming the operation.
pub const ROW_OPERATION: &str = "Operation";
/// Label of the `magi_control` row saying how the request stands.
pub const ROW_REQUEST_STATUS: &str = "Request status";
/// Label of the `magi_control` row for the session's input tokens.
pub const ROW_INPUT_TOKENS: &str = "Input tokens";
/// Label of the `magi_control` row for the input tokens read from the prompt cache.
pub const ROW_CACHED_INPUT_TOKENS: &str = "Cached input tokens";
/// Label of the `magi_control` row for the session's output tokens.
pub const ROW_OUTPUT_TOKENS: &str = "Output tokens";
/// Label of the `magi_control` row for the output tokens spent reasoning.
pub const ROW_REASONING_TOKENS: &str = "Reasoning tokens";
/// Label of the `magi_control` row for the model's context window.
pub const ROW_CONTEXT_WINDOW: &str = "Context window";
/// Label of the `magi_control` row for the share of the window the conversation fills.
pub const ROW_CONTEXT_USED: &str = "Context used";
/// Label of the `magi_control` row for the title it set.
pub const ROW_TITLE: &str = "Title";
/// Label of the `magi_control` row for a title cut to the bound.
pub const ROW_TITLE_CUT: &str = "Title cut";
/// Label of the `code_mode` row for the nested calls its script started.
pub const ROW_NESTED_STARTED: &str = "Nested calls started";
/// Label of the `code_mode` row for the nested calls that completed.
pub const ROW_NESTED_COMPLETED: &str = "Nested calls completed";
/// Label of the `code_mode` row for the nested calls that failed, were denied or were
/// cancelled.
pub const ROW_NESTED_FAILED: &str = "Nested calls failed";
/// Label of the `code_mode` row for the script's wall time.
pub const ROW_WALL_TIME: &str = "Wall time";
/// Label of the `code_mode` row for the bytes the script printed.
pub const ROW_OUTPUT_BYTES: &str = "Output";
/// Label of the `code_mode` row naming the limit that stopped the script.
pub const ROW_STOPPED_BY: &str = "Stopped by";
/// Label of the `code_mode` row for the line an uncaught error named.
pub const ROW_ERROR_LINE: &str = "Error line";

/// Every public protection label of the contract. Only these are ever copied into a
/// card; any other recorded string is unavailable.
pub const PUBLIC_PROTECTION_LABELS: [&str; 11] = [
    "allowed",
    "allowed automatically",
    "allowed by user",
    "allowed by API failure policy",
    "denied by API failure policy",
    "denied by user",
    "denied; approval unavailable",
    "denied; needs humanizing",
    "approval required",
    "no added prose",
    "no comments or documentation",
];

/// The public label of a pending approval.
pub(super) const APPROVAL_REQUIRED: &str = "approval required";
