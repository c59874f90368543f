//! Every bound of protocol version 1, as named constants, and the `limits` object that
//! `initialize` publishes from them.
//!
//! This module is the one place a bound is written down. Every layer that enforces a
//! bound uses the constant from here, and `limits` is built from the same constants, so
//! what a client reads is what the backend enforces.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Largest input frame, in bytes, excluding the terminating LF (a CR before it counts).
pub const INPUT_FRAME_BYTES: usize = 65_536;
/// Largest output frame, in bytes, including the terminating LF.
pub const OUTPUT_FRAME_BYTES: usize = 65_536;
/// Deepest JSON nesting accepted, counting the request object itself as the first container.
pub const JSON_DEPTH: usize = 32;
/// Longest request ID, method name or capability name, in ASCII bytes.
pub const ID_BYTES: usize = 64;
/// Longest prompt, in UTF-8 bytes.
pub const PROMPT_BYTES: usize = 16_384;
/// Largest history content chunk, in raw UTF-8 bytes (smaller when JSON escaping needs it).
pub const HISTORY_CHUNK_BYTES: usize = 16_384;
/// Largest live content chunk (`message.delta`, `message.reconcile`), in UTF-8 bytes.
pub const LIVE_CHUNK_BYTES: usize = 4_000;
/// Largest serialized `history.page` result, in bytes.
pub const HISTORY_PAGE_BYTES: usize = 32_768;
/// Most entries on one `history.page`.
pub const HISTORY_PAGE_ENTRIES: usize = 100;
/// Largest serialized history entry projection of one revision, in bytes.
pub const HISTORY_SNAPSHOT_BYTES: usize = 8 * 1024 * 1024;
/// Most parts in one history projection.
pub const HISTORY_SNAPSHOT_PARTS: usize = 10_000;
/// Most original JSONL bytes read from one stored session.
pub const STORED_READ_BYTES: usize = 64 * 1024 * 1024;
/// Most JSONL lines read from one stored session.
pub const STORED_READ_LINES: usize = 100_000;
/// Most output frames waiting to be written, the one being written included.
pub const PENDING_OUTPUT_FRAMES: usize = 32;
/// Capacity of a run's worker event channel.
pub const WORKER_EVENTS: usize = 32;
/// Most authoritative assistant content per run, in bytes.
pub const RUN_CONTENT_BYTES: usize = 8 * 1024 * 1024;
/// Most assistant content segments per run.
pub const RUN_CONTENT_SEGMENTS: usize = 512;
/// Most activity identities per run.
pub const RUN_ACTIVITIES: usize = 4_096;
/// Longest activity, approval or diagnostic summary, in UTF-8 bytes after redaction.
pub const SUMMARY_BYTES: usize = 1_024;
/// Time after which an unanswered approval expires and is denied, in milliseconds.
pub const APPROVAL_EXPIRY_MS: u64 = 60_000;
/// Request IDs one child accepts in its life, rejected well-formed requests included.
pub const REQUEST_IDS: usize = 4_096;
/// Absolute deadline of an output frame from the moment it is enqueued, in milliseconds.
pub const OUTPUT_DEADLINE_MS: u64 = 2_000;
/// Longest wait for cleanup after output draining stops, in milliseconds.
pub const CLEANUP_WAIT_MS: u64 = 2_000;
/// Longest wait to deliver a critical run event, in milliseconds.
pub const CRITICAL_EVENT_WAIT_MS: u64 = 2_000;
/// Longest internal activity ID, in bytes.
pub const ACTIVITY_INTERNAL_ID_BYTES: usize = 1_024;
/// Longest provider or model name shown to a client, in bytes.
pub const PROVIDER_MODEL_BYTES: usize = 256;
/// Longest session title, in characters.
pub const TITLE_CHARS: usize = 50;
/// Largest serialized `session.list` result, in bytes.
pub const DISCOVERY_PAGE_BYTES: usize = 32_768;
/// Most sessions on one `session.list` page.
pub const DISCOVERY_PAGE_ENTRIES: usize = 100;
/// Most directory entries one discovery inventory pass may visit.
pub const DISCOVERY_DIRECTORY_ENTRIES: usize = 4_096;
/// Most sessions one discovery snapshot holds.
pub const DISCOVERY_SESSIONS: usize = 256;
/// Most bytes read from one session file during discovery.
pub const DISCOVERY_SESSION_BYTES: usize = 8 * 1024 * 1024;
/// Most lines read from one session file during discovery.
pub const DISCOVERY_SESSION_LINES: usize = 10_000;
/// Most bytes one discovery request reads in total.
pub const DISCOVERY_SCAN_BYTES: usize = 64 * 1024 * 1024;
/// Most lines one discovery request reads in total.
pub const DISCOVERY_SCAN_LINES: usize = 100_000;
/// Cooperative deadline of one discovery scan, in milliseconds.
pub const DISCOVERY_SCAN_MS: u64 = 2_000;
/// Most input bytes of a stored title considered by discovery.
pub const DISCOVERY_TITLE_BYTES: usize = 256;
/// Largest serialized `model.catalog` (and `model.cached`) result, in bytes.
pub const CATALOG_PAGE_BYTES: usize = 32_768;
/// Most choices on one `model.catalog` page (and models on one `model.cached` page).
pub const CATALOG_PAGE_ENTRIES: usize = 100;
/// Most providers in the catalog, the three built-ins included.
pub const CATALOG_PROVIDERS: usize = 32;
/// Most models scanned, before exclusions.
pub const CATALOG_MODELS: usize = 2_048;
/// Largest provider catalog cache file, in bytes.
pub const CATALOG_FILE_BYTES: usize = 1_048_576;
/// Most cache bytes read by one catalog scan.
pub const CATALOG_SCAN_BYTES: usize = 8_388_608;
/// Largest serialized catalog snapshot (and `model.cached` listing), in bytes.
pub const CATALOG_SNAPSHOT_BYTES: usize = 1_048_576;
/// Longest catalog string, in bytes.
pub const CATALOG_STRING_BYTES: usize = 256;
/// Cooperative deadline of one catalog scan, in milliseconds.
pub const CATALOG_SCAN_MS: u64 = 2_000;
/// Largest `session_preferences` record appended by `selection.set`, in bytes.
pub const SELECTION_APPEND_BYTES: usize = 4_096;
/// Most names in `required_capabilities` without the `client.tools` extension.
pub const REQUIRED_CAPABILITY_NAMES: usize = 16;
/// Size of one read from standard input.
pub const READ_BATCH_BYTES: usize = 4_096;

/// The `limits` object of the `initialize` result: every bound, by name, as an integer.
///
/// The set of fields is always the same, whatever was negotiated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[expect(
    missing_docs,
    reason = "each field mirrors the constant of the same name"
)]
pub struct Limits {
    pub input_frame_bytes: u64,
    pub output_frame_bytes: u64,
    pub json_depth: u64,
    pub id_bytes: u64,
    pub prompt_bytes: u64,
    pub history_chunk_bytes: u64,
    pub live_chunk_bytes: u64,
    pub history_page_bytes: u64,
    pub history_page_entries: u64,
    pub history_snapshot_bytes: u64,
    pub history_snapshot_parts: u64,
    pub stored_read_bytes: u64,
    pub stored_read_lines: u64,
    pub pending_output_frames: u64,
    pub worker_events: u64,
    pub run_content_bytes: u64,
    pub run_content_segments: u64,
    pub run_activities: u64,
    pub summary_bytes: u64,
    pub approval_expiry_ms: u64,
    pub request_ids: u64,
    pub output_deadline_ms: u64,
    pub cleanup_wait_ms: u64,
    pub critical_event_wait_ms: u64,
    pub activity_internal_id_bytes: u64,
    pub provider_model_bytes: u64,
    pub title_chars: u64,
    pub discovery_page_bytes: u64,
    pub discovery_page_entries: u64,
    pub discovery_directory_entries: u64,
    pub discovery_sessions: u64,
    pub discovery_session_bytes: u64,
    pub discovery_session_lines: u64,
    pub discovery_scan_bytes: u64,
    pub discovery_scan_lines: u64,
    pub discovery_scan_ms: u64,
    pub discovery_title_bytes: u64,
    pub catalog_page_bytes: u64,
    pub catalog_page_entries: u64,
    pub catalog_providers: u64,
    pub catalog_models: u64,
    pub catalog_file_bytes: u64,
    pub catalog_scan_bytes: u64,
    pub catalog_snapshot_bytes: u64,
    pub catalog_string_bytes: u64,
    pub catalog_scan_ms: u64,
    pub selection_append_bytes: u64,
}

impl Limits {
    /// The bounds of protocol version 1, built from the constants of this module.
    pub const V1: Limits = Limits {
        input_frame_bytes: INPUT_FRAME_BYTES as u64,
        output_frame_bytes: OUTPUT_FRAME_BYTES as u64,
        json_depth: JSON_DEPTH as u64,
        id_bytes: ID_BYTES as u64,
        prompt_bytes: PROMPT_BYTES as u64,
        history_chunk_bytes: HISTORY_CHUNK_BYTES as u64,
        live_chunk_bytes: LIVE_CHUNK_BYTES as u64,
        history_page_bytes: HISTORY_PAGE_BYTES as u64,
        history_page_entries: HISTORY_PAGE_ENTRIES as u64,
        history_snapshot_bytes: HISTORY_SNAPSHOT_BYTES as u64,
        history_snapshot_parts: HISTORY_SNAPSHOT_PARTS as u64,
        stored_read_bytes: STORED_READ_BYTES as u64,
        stored_read_lines: STORED_READ_LINES as u64,
        pending_output_frames: PENDING_OUTPUT_FRAMES as u64,
        worker_events: WORKER_EVENTS as u64,
        run_content_bytes: RUN_CONTENT_BYTES as u64,
        run_content_segments: RUN_CONTENT_SEGMENTS as u64,
        run_activities: RUN_ACTIVITIES as u64,
        summary_bytes: SUMMARY_BYTES as u64,
        approval_expiry_ms: APPROVAL_EXPIRY_MS,
        request_ids: REQUEST_IDS as u64,
        output_deadline_ms: OUTPUT_DEADLINE_MS,
        cleanup_wait_ms: CLEANUP_WAIT_MS,
        critical_event_wait_ms: CRITICAL_EVENT_WAIT_MS,
        activity_internal_id_bytes: ACTIVITY_INTERNAL_ID_BYTES as u64,
        provider_model_bytes: PROVIDER_MODEL_BYTES as u64,
        title_chars: TITLE_CHARS as u64,
        discovery_page_bytes: DISCOVERY_PAGE_BYTES as u64,
        discovery_page_entries: DISCOVERY_PAGE_ENTRIES as u64,
        discovery_directory_entries: DISCOVERY_DIRECTORY_ENTRIES as u64,
        discovery_sessions: DISCOVERY_SESSIONS as u64,
        discovery_session_bytes: DISCOVERY_SESSION_BYTES as u64,
        discovery_session_lines: DISCOVERY_SESSION_LINES as u64,
        discovery_scan_bytes: DISCOVERY_SCAN_BYTES as u64,
        discovery_scan_lines: DISCOVERY_SCAN_LINES as u64,
        discovery_scan_ms: DISCOVERY_SCAN_MS,
        discovery_title_bytes: DISCOVERY_TITLE_BYTES as u64,
        catalog_page_bytes: CATALOG_PAGE_BYTES as u64,
        catalog_page_entries: CATALOG_PAGE_ENTRIES as u64,
        catalog_providers: CATALOG_PROVIDERS as u64,
        catalog_models: CATALOG_MODELS as u64,
        catalog_file_bytes: CATALOG_FILE_BYTES as u64,
        catalog_scan_bytes: CATALOG_SCAN_BYTES as u64,
        catalog_snapshot_bytes: CATALOG_SNAPSHOT_BYTES as u64,
        catalog_string_bytes: CATALOG_STRING_BYTES as u64,
        catalog_scan_ms: CATALOG_SCAN_MS,
        selection_append_bytes: SELECTION_APPEND_BYTES as u64,
    };
}

/// Largest settings file read, in bytes. Internal: not part of the published `limits`.
pub const SETTINGS_FILE_BYTES: usize = 1_048_576;
/// Largest credential file read for readiness, in bytes. Internal, like the above.
pub const CREDENTIAL_FILE_BYTES: usize = 65_536;
/// Most bytes read of one answer of an OAuth server: a token, metadata, registration or
/// device-code answer, an error's body. Internal.
pub const OAUTH_RESPONSE_BYTES: usize = 65_536;
/// Longest one exchange with an OAuth server may take, from the connection to the last
/// byte, in milliseconds. Internal.
pub const OAUTH_REQUEST_MS: u64 = 30_000;
/// A sign-in's access token that expires within this many milliseconds is refreshed
/// before it is used, so that it does not expire in the middle of a request. Internal.
pub const TOKEN_REFRESH_MARGIN_MS: u64 = 300_000;
/// Longest wait for another process's refresh of the same sign-in (its lock), in
/// milliseconds. Internal.
pub const SIGN_IN_LOCK_WAIT_MS: u64 = 60_000;
/// How long `magi-code login` waits for the browser to come back by default, in
/// milliseconds. Internal.
pub const SIGN_IN_CALLBACK_MS: u64 = 600_000;
/// Most bytes read of one request to the sign-in's loopback callback. Internal.
pub const SIGN_IN_CALLBACK_REQUEST_BYTES: usize = 8_192;
/// Longest a device-code sign-in is waited for, in milliseconds: the codes expire
/// after fifteen minutes. Internal.
pub const DEVICE_CODE_WAIT_MS: u64 = 900_000;
/// Most bytes the `read` tool returns to the model at once. Internal.
pub const READ_TOOL_BYTES: usize = 256 * 1024;
/// Most lines the `read` tool returns to the model at once. Internal.
pub const READ_TOOL_LINES: usize = 2_000;
/// Most matches the `grep` tool returns at once (its default and maximum `limit`). Internal.
pub const GREP_TOOL_MATCHES: usize = 200;
/// Longest matching line the `grep` tool shows, in characters; longer lines are cut
/// with a marker so one minified file cannot fill the model's context. Internal.
pub const GREP_TOOL_LINE_CHARS: usize = 500;
/// Most matches the `ast_grep` tool returns at once (its default and maximum
/// `max_results`). Internal.
pub const AST_GREP_TOOL_MATCHES: usize = 200;
/// Largest file the `ast_grep` tool parses, in bytes (2 MiB): a larger one is skipped
/// and counted, since parsing it costs memory in proportion and such files are mostly
/// generated or minified. Internal.
pub const AST_GREP_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// Most paths the `find` tool returns at once. Internal.
pub const FIND_TOOL_FILES: usize = 1_000;
/// Most entries the `list` tool returns for one directory. Internal.
pub const LIST_TOOL_ENTRIES: usize = 1_000;
/// Most bytes the `write` tool writes in one call. Internal.
pub const WRITE_TOOL_BYTES: usize = 1_048_576;
/// Default time a foreground `bash` command may run, in milliseconds. Internal.
pub const BASH_TOOL_TIMEOUT_MS: u64 = 120_000;
/// Largest `timeout_ms` a `bash` call may ask for, in milliseconds. Internal.
pub const BASH_TOOL_MAX_TIMEOUT_MS: u64 = 600_000;
/// Read-only tool calls of one response that run side by side at most; the next waits
/// for those in flight to settle. Internal.
pub const PARALLEL_TOOL_CALLS: usize = 8;
/// How long a foreground `bash` command runs before it moves to the background as a
/// job, unless the call asks otherwise (`background_after_ms`).
pub const BASH_BACKGROUND_AFTER_MS: u64 = 60_000;
/// Most bytes kept in each captured process file (stdout, stderr, interleaved output);
/// bytes past it are counted and reported, not written. Internal.
pub const PROCESS_CAPTURE_BYTES: usize = 16 * 1024 * 1024;
/// Longest wait for a process's output pipes to close after its group was killed, in
/// milliseconds: a process that left the group may hold them open for ever. Internal.
pub const PROCESS_DRAIN_MS: u64 = 1_000;
/// How long a command's process group has between `SIGTERM` and `SIGKILL` when its call
/// is cancelled or times out, or the backend ends, in milliseconds. Internal.
pub const PROCESS_TERM_GRACE_MS: u64 = 2_000;
/// Most lines of process output `process_diagnostics` passes on as they are. Internal.
pub const PROCESS_INLINE_LINES: usize = 84;
/// Most bytes of process output `process_diagnostics` passes on as they are (12 KB). Internal.
pub const PROCESS_INLINE_BYTES: usize = 12_288;
/// Most lines of a `process_diagnostics` summary, omission markers included. Internal.
pub const PROCESS_SUMMARY_LINES: usize = 16;
/// Most bytes of a `process_diagnostics` summary, omission markers included (4 KB). Internal.
pub const PROCESS_SUMMARY_BYTES: usize = 4_096;
/// Most response bytes `web_fetch` reads. Internal.
pub const WEB_FETCH_BYTES: usize = 2 * 1_048_576;
/// Most bytes of readable text `web_fetch` gives the model. Internal.
pub const WEB_FETCH_TEXT_BYTES: usize = 65_536;
/// Longest a `web_fetch` request may take, in milliseconds. Internal.
pub const WEB_FETCH_TIMEOUT_MS: u64 = 30_000;
/// Largest image file `view_image` reads, in bytes (32 MiB): a file past it is refused
/// before it is decoded. Internal.
pub const VIEW_IMAGE_FILE_BYTES: u64 = 32 * 1_048_576;
/// Longest side, in pixels, of the image `view_image` gives the model; a larger one is
/// downscaled to fit, keeping its aspect ratio. Internal.
pub const VIEW_IMAGE_SIDE_PIXELS: u32 = 2_048;
/// Largest image `view_image` gives the model, in bytes of the encoded file (3.75 MB):
/// base64 makes it at most 5 MB, the smallest per-image bound of the three wire formats
/// (Anthropic's). A larger one is re-encoded, then downscaled until it fits. Internal.
pub const VIEW_IMAGE_BYTES: usize = 3_750_000;
/// Longest side, in pixels, of an image `view_image` decodes at all: past it the header
/// alone refuses the file, before any pixel memory is allocated. Internal.
pub const VIEW_IMAGE_DECODE_SIDE_PIXELS: u32 = 16_384;
/// Most memory, in bytes, decoding one image for `view_image` may allocate (256 MiB).
/// Internal.
pub const VIEW_IMAGE_DECODE_BYTES: u64 = 256 * 1_048_576;
/// Lines `bash_log` returns by default. Internal.
pub const BASH_LOG_LINES: usize = 100;
/// Most lines `bash_log` returns at once. Internal.
pub const BASH_LOG_MAX_LINES: usize = 500;
/// Most background jobs one backend keeps. Internal.
pub const BACKGROUND_JOBS: usize = 64;

// ---- `model.refresh` bounds ----
// The `refresh_*` bounds of the `model.refresh` extension (docs/protocol/extensions.md).
// They are enforced by the refresh fetch; publishing them in `limits` is a separate step.

/// Most response bytes one `model.refresh` reads, all pages together.
pub const REFRESH_RESPONSE_BYTES: usize = 1_048_576;
/// Longest one `model.refresh` fetch may take, all pages together, in milliseconds.
pub const REFRESH_TIMEOUT_MS: u64 = 30_000;

// ---- Model provider requests ----
// How a model request is retried (docs/providers.md). Internal: a client sees each
// retry as a `provider_retrying` diagnostic, never these numbers.

/// How long establishing a connection to a provider (TCP and TLS) may take, in
/// milliseconds, for model requests and model lists alike.
pub const PROVIDER_CONNECT_TIMEOUT_MS: u64 = 10_000;
/// Attempts per model request, the first included. Retries happen only before any of
/// the reply was received, so a partial reply is never replayed.
pub const PROVIDER_ATTEMPTS: u32 = 5;
/// Wait before the first retry when the provider names none, in milliseconds; it
/// doubles for each further one.
pub const PROVIDER_BACKOFF_MS: u64 = 250;
/// Longest single wait honoured, in milliseconds: a provider asking (`Retry-After`)
/// for more gets no retry, since waiting less than it asked would only fail again.
pub const PROVIDER_RETRY_AFTER_MS: u64 = 30_000;
/// Most waiting across all retries of one model request, in milliseconds; a retry that
/// would pass it is not made.
pub const PROVIDER_RETRY_TOTAL_MS: u64 = 60_000;
/// Longest wait for the provider's model list when a model request answered 404, in
/// milliseconds: the list only makes the "model not found" diagnostic helpful.
pub const PROVIDER_MODEL_LOOKUP_MS: u64 = 10_000;
/// Longest `magi-code doctor --online` waits for its minimal model request, in
/// milliseconds, retries included.
pub const PROVIDER_PROBE_MS: u64 = 30_000;
/// Most model names quoted in a "model not found" diagnostic; the rest are counted.
pub const PROVIDER_LISTED_MODELS: usize = 20;

// ---- `session.discover` bounds ----
// The `discover_*` bounds of the `session.discover` extension (docs/protocol/extensions.md).
// They are not published in `limits`: a client reads them from that page.

/// Most names one `session.discover` call may list in the folder, sidecars included.
pub const DISCOVER_DIRECTORY_ENTRIES: usize = 65_536;
/// Most session logs one `session.discover` call reads before it ends its batch.
pub const DISCOVER_BATCH_FILES: usize = 64;
/// Most log bytes one `session.discover` call reads before it ends its batch.
pub const DISCOVER_BATCH_BYTES: usize = 64 * 1024 * 1024;
/// Most log lines one `session.discover` call reads before it ends its batch.
pub const DISCOVER_BATCH_LINES: usize = 100_000;
/// Largest serialized `session.discover` result, in bytes.
pub const DISCOVER_PAGE_BYTES: usize = 32_768;
/// Cooperative deadline after which a `session.discover` call ends its batch, in
/// milliseconds.
pub const DISCOVER_SCAN_MS: u64 = 2_000;

// `client.tools`: the bounds its contract (docs/protocol/client-tools.md) fixes. Not
// part of the published `limits`: the descriptor of the extension carries them.

/// Most names in `required_capabilities` when `client.tools` is among them.
pub const REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS: usize = 18;
/// Most tools a client registers.
pub const CLIENT_TOOLS: usize = 16;
/// Longest client tool description, in bytes.
pub const CLIENT_TOOL_DESCRIPTION_BYTES: usize = 1_024;
/// Longest serialized parameters schema of a client tool, in bytes.
pub const CLIENT_TOOL_SCHEMA_BYTES: usize = 16_384;
/// Longest serialized arguments a `client.tool.call` carries, in bytes; a call with
/// more fails without being sent.
pub const CLIENT_TOOL_ARGUMENTS_BYTES: usize = 32_768;
/// Longest `content` of a `client.tool.result`, in bytes.
pub const CLIENT_TOOL_RESULT_BYTES: usize = 32_768;
/// Default time a client has to answer a call, in milliseconds.
pub const CLIENT_TOOL_TIMEOUT_MS: u64 = 120_000;
/// Longest time a tool may ask for, in milliseconds.
pub const CLIENT_TOOL_MAX_TIMEOUT_MS: u64 = 600_000;

// `approval.scopes`: the bounds its contract (docs/protocol/extensions.md) fixes.
// Not part of the published `limits`: the descriptor of the extension carries them.

/// Most names in `required_capabilities` when `approval.scopes` is among them and
/// `client.tools` is not: the extension's own name comes on top of the base bound.
pub const REQUIRED_CAPABILITY_NAMES_WITH_APPROVAL_SCOPES: usize = 17;
/// Most names in `required_capabilities` when both `client.tools` and
/// `approval.scopes` are among them.
pub const REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS_AND_APPROVAL_SCOPES: usize = 19;
/// Names `session.usage` adds to whichever bound of `required_capabilities` applies
/// without it: its own.
pub const SESSION_USAGE_NAME_ROOM: usize = 1;
/// Names `input.attachments` adds to whichever bound of `required_capabilities` applies
/// without it: its own.
pub const INPUT_ATTACHMENTS_NAME_ROOM: usize = 1;
/// Names `reasoning.summaries` adds to whichever bound of `required_capabilities`
/// applies without it: its own.
pub const REASONING_SUMMARIES_NAME_ROOM: usize = 1;
/// Names `client.terminals` adds to whichever bound of `required_capabilities` applies
/// without it: its own.
pub const CLIENT_TERMINALS_NAME_ROOM: usize = 1;
/// Names `usage.cache_writes` adds to whichever bound of `required_capabilities`
/// applies without it: its own.
pub const USAGE_CACHE_WRITES_NAME_ROOM: usize = 1;
/// Names `approval.change_counts` adds to whichever bound of `required_capabilities`
/// applies without it: its own.
pub const APPROVAL_CHANGE_COUNTS_NAME_ROOM: usize = 1;
/// Names `jobs.control` adds to whichever bound of `required_capabilities` applies
/// without it: its own.
pub const JOBS_CONTROL_NAME_ROOM: usize = 1;
/// Most lines of a background command's output one `job.output` result carries (its
/// newest).
pub const JOB_OUTPUT_LINES: usize = 200;
/// Most bytes of a `job.output` result's `output`: whole lines from the newest back, so
/// a result stays far inside an output frame whatever its escaping.
pub const JOB_OUTPUT_BYTES: usize = 16_384;
/// Names `model.cached` adds to whichever bound of `required_capabilities` applies
/// without it: its own.
pub const MODEL_CACHED_NAME_ROOM: usize = 1;
/// Names `permissions.modes` adds to whichever bound of `required_capabilities`
/// applies without it: its own.
pub const PERMISSION_MODES_NAME_ROOM: usize = 1;
/// Most rules one `permissions.list` result carries.
pub const PERMISSION_RULES_LISTED: usize = 128;
/// Most bytes of one rule `permissions.list` shows (an approval's subject bound).
pub const PERMISSION_RULE_BYTES: usize = APPROVAL_SUBJECT_BYTES;
/// Largest serialized `permissions.list` result, in bytes: well inside an output frame.
pub const PERMISSIONS_LIST_BYTES: usize = 32_768;
/// Names `plan.todo` adds to whichever bound of `required_capabilities` applies
/// without it: its own.
pub const PLAN_TODO_NAME_ROOM: usize = 1;
/// Most items of the plan one `todo` call gives (`plan.todo`): its card has a row for
/// each, within a results block's 32 rows and, escaped at worst, the card's 16 KiB.
pub const TODO_ITEMS: usize = 20;
/// Longest text of one `todo` item, in UTF-8 bytes: one line saying a step.
pub const TODO_ITEM_BYTES: usize = 256;
/// Names `checkpoints` adds to whichever bound of `required_capabilities` applies
/// without it: its own.
pub const CHECKPOINTS_NAME_ROOM: usize = 1;
/// Names `tool.cards.styles` adds to whichever bound of `required_capabilities`
/// applies without it: its own.
pub const TOOL_CARD_STYLES_NAME_ROOM: usize = 1;
/// Most checkpoints one `checkpoint.list` result carries: the session's newest turns.
pub const CHECKPOINT_LIST_ENTRIES: usize = 100;
/// Most bytes of a checkpoint's `prompt` in `checkpoint.list`: the first line of the
/// turn's prompt, cut at a character boundary.
pub const CHECKPOINT_PROMPT_BYTES: usize = 200;
/// Most serialized bytes of the `changes` of one `checkpoint.restore` result; the
/// changes left out are counted in its `more`.
pub const CHECKPOINT_CHANGES_BYTES: usize = 32_768;
/// Most changed files one checkpoint records: a turn whose workspace changed more is
/// not recorded, and says so.
pub const CHECKPOINT_SNAPSHOT_FILES: usize = 100_000;
/// Most bytes of changed files one checkpoint stores: a turn whose workspace changed
/// more is not recorded, and says so.
pub const CHECKPOINT_SNAPSHOT_BYTES: u64 = 268_435_456;
/// Longest one `git` command of the checkpoint store may run before its group is
/// killed.
pub const CHECKPOINT_GIT_MS: u64 = 60_000;
/// Most bytes of a checkpoint `git` command's output that are read: a listing longer
/// than this is over the checkpoint's bounds.
pub const CHECKPOINT_GIT_OUTPUT_BYTES: usize = 16_777_216;
/// Most files a checkpoint restore's note to the model names; the rest are counted.
pub const CHECKPOINT_NOTE_PATHS: usize = 50;
/// How many turns' checkpoints a workspace's store keeps unless `[checkpoints]
/// keep_turns` says otherwise: the newest, over all the workspace's sessions.
pub const CHECKPOINT_KEEP_TURNS: usize = 1_000;
/// Most bytes of a `client.terminal.result`'s `output`: the last bytes of a command's
/// output that a client terminal keeps (docs/protocol/client-terminals.md). With its
/// JSON escaping it stays inside an input frame.
pub const CLIENT_TERMINAL_OUTPUT_BYTES: usize = 32_768;
/// Time past a terminal command's own timeout that the backend waits for the client's
/// answer before it withdraws the call, in milliseconds: the client's kill, output
/// read and release.
pub const CLIENT_TERMINAL_ANSWER_GRACE_MS: u64 = 30_000;
/// Most paths in one `turn.start`'s `attachments` (`input.attachments`).
pub const TURN_ATTACHMENTS: usize = 8;
/// Longest path in `attachments`, in UTF-8 bytes. Eight of them and the longest prompt
/// stay well inside an input frame.
pub const TURN_ATTACHMENT_PATH_BYTES: usize = 1_024;
/// Longest `message` of an `approval.answer`, in UTF-8 bytes.
pub const APPROVAL_MESSAGE_BYTES: usize = 1_024;
/// Longest `subject` and `suggested_rule` of an `approval.requested`, in UTF-8 bytes.
pub const APPROVAL_SUBJECT_BYTES: usize = 1_024;
/// Most session rules one session keeps; an answer past it covers its call only.
pub const SESSION_RULES: usize = 256;

// `user.questions`: the bounds its contract (docs/protocol/extensions.md) fixes. Not
// part of the published `limits`: the descriptor of the extension carries them.

/// Names `user.questions` adds to the bound of `required_capabilities`: its own.
pub const USER_QUESTIONS_CAPABILITY_NAMES: usize = 1;
/// Most questions one `ask_user` call asks.
pub const QUESTIONS_PER_CALL: usize = 4;
/// Fewest options of one question.
pub const QUESTION_OPTIONS_MIN: usize = 2;
/// Most options of one question.
pub const QUESTION_OPTIONS_MAX: usize = 6;
/// Longest question, header, label, description or free answer, in UTF-8 bytes.
pub const QUESTION_TEXT_BYTES: usize = 1_024;
/// Time a question waits for its answer before it is declined, in milliseconds: a
/// person needs longer for four questions than for one approval.
pub const QUESTION_EXPIRY_MS: u64 = 900_000;

// ---- MCP servers ----
// The bounds of MCP servers and their tools (docs/mcp.md). Internal: a client never
// sees an MCP server, only the tool calls it answers.

/// Most MCP servers the settings may define.
pub const MCP_SERVERS: usize = 32;
/// Longest MCP server name, in bytes.
pub const MCP_SERVER_NAME_BYTES: usize = 32;
/// Largest approvals file, in bytes.
pub const MCP_APPROVALS_BYTES: usize = 1_048_576;
/// Default time one server has to connect and list its tools, in milliseconds.
pub const MCP_STARTUP_TIMEOUT_MS: u64 = 30_000;
/// Default time one MCP tool call may take, in milliseconds.
pub const MCP_CALL_TIMEOUT_MS: u64 = 120_000;
/// Most tools one server may list; a server listing more fails startup.
pub const MCP_TOOLS_PER_SERVER: usize = 256;
/// Longest tool description given to the model, in bytes; longer ones are shortened
/// with a visible marker.
pub const MCP_TOOL_DESCRIPTION_BYTES: usize = 4_096;
/// Longest serialized input schema of an MCP tool, in bytes; a tool with a longer one
/// is not offered.
pub const MCP_TOOL_SCHEMA_BYTES: usize = 16_384;
/// Largest MCP message the backend reads (one stdio line, one HTTP body or SSE event).
pub const MCP_MESSAGE_BYTES: usize = 16 * 1_048_576;
/// Most bytes of one MCP tool result given to the model; a larger result fails the call.
pub const MCP_RESULT_BYTES: usize = 262_144;
/// Longest serialized arguments of an MCP tool call, in bytes; a call with more fails
/// without being sent.
pub const MCP_ARGUMENTS_BYTES: usize = 262_144;
/// Time connected servers have to close before their processes are killed, in
/// milliseconds (within the child's cleanup wait).
pub const MCP_SHUTDOWN_GRACE_MS: u64 = 1_000;

// ---- Subagents ----
// The bounds of the `task` tool (docs/subagents.md). Internal.

/// Model requests one subagent may make before its task is stopped.
pub const TASK_MODEL_REQUESTS: usize = 32;
/// Most bytes of a subagent's final response given to the delegating model; the report
/// file keeps all of it.
pub const TASK_REPORT_NOTICE_BYTES: usize = 16_384;
/// Longest task description a `task` call may give, in bytes.
pub const TASK_DESCRIPTION_BYTES: usize = 16_384;
/// Most child references a task keeps for its card; later calls are only counted.
pub const TASK_CHILDREN: usize = 32;

// ---- Mission Control's composer ----
// The prompt editor of the terminal client: pastes, the prompt history kept in
// `MC_HOME`, and `@` file mentions. Internal.

/// A paste of more lines than this shows in the composer as a placeholder, expanded
/// when the prompt is sent.
pub const PASTE_PLACEHOLDER_LINES: usize = 5;
/// A paste of more characters than this shows as a placeholder, too.
pub const PASTE_PLACEHOLDER_CHARS: usize = 1_000;
/// Most prompts the prompt history keeps (what Up, Down and Ctrl-R reach).
pub const PROMPT_HISTORY_ENTRIES: usize = 1_000;
/// Prompts appended to the history file past [`PROMPT_HISTORY_ENTRIES`] before it is
/// rewritten with the newest ones only, so a send is an append, not a rewrite.
pub const PROMPT_HISTORY_SLACK: usize = 100;
/// Most bytes of the history file read at start (its newest part, when it is larger).
pub const PROMPT_HISTORY_READ_BYTES: usize = 16 * 1_048_576;
/// Most workspace paths walked once per session for `@` mentions. Measured on a
/// release build with 20,000 long paths (`/usr`): the walk takes about 150 ms, off the
/// UI thread, and ranking them for a query 1 to 14 ms, within a frame.
pub const MENTION_FILES: usize = 20_000;
/// Most `@` mention or slash command candidates shown above the composer.
pub const COMPLETION_CANDIDATES: usize = 8;

// ---- Long turns ----
// A turn has no fixed step bound (`[turns] max_steps` sets one); these stop a model
// repeating itself (docs/protocol/README.md, "Diagnostic codes"). Internal.

/// Rounds in a row with the same calls, arguments and results after which the model is
/// told it is repeating itself.
pub const LOOP_NOTE_ROUNDS: usize = 3;
/// Rounds in a row with the same calls, arguments and results that end the turn
/// (`loop_detected`).
pub const LOOP_END_ROUNDS: usize = 5;

// ---- Code Mode ----
// The bounds of `code_mode` scripts (docs/code-mode.md); the `[code_mode]` settings
// choose the time, tool-call and memory limits within them. Internal.

/// Longest script a `code_mode` call may give, in bytes.
pub const CODE_MODE_CODE_BYTES: usize = 65_536;
/// Most bytes a script may print; printing past them stops it (the `output` limit).
pub const CODE_MODE_OUTPUT_BYTES: usize = 1_048_576;
/// Most bytes of a script's result (what it printed, then its return value) given to
/// the model; a longer result is cut and kept whole with the call's assets.
pub const CODE_MODE_RESULT_BYTES: usize = 16_384;
/// Most bytes of `code_mode`'s description, the API the model is told: the tool is
/// offered in every request, so its guidance costs tokens each time.
pub const CODE_MODE_DESCRIPTION_BYTES: usize = 2_048;
/// Largest `[code_mode] timeout_secs`.
pub const CODE_MODE_MAX_TIMEOUT_SECS: u64 = 3_600;
/// Largest `[code_mode] max_tool_calls`.
pub const CODE_MODE_MAX_TOOL_CALLS: usize = 1_024;
/// Largest `[code_mode] memory_mib`.
pub const CODE_MODE_MAX_MEMORY_MIB: usize = 1_024;

// Hooks (`docs/hooks.md`): commands the settings run at the agent's lifecycle points.
// Internal: no client sees a hook's definition, only what it decided.

/// Default time one hook may take, in seconds; it is killed at its timeout.
pub const HOOK_TIMEOUT_SECS: u64 = 60;
/// Longest timeout a hook definition may give, in seconds.
pub const HOOK_TIMEOUT_SECS_MAX: u64 = 3_600;
/// Most hooks the settings may define, all events together.
pub const HOOKS: usize = 64;
/// Most hooks run for one occurrence of an event (the per-event budget); the rest are
/// skipped and reported.
pub const HOOKS_PER_EVENT: usize = 8;
/// Most bytes of a hook's stdout and of its stderr each kept; the rest is counted and
/// dropped.
pub const HOOK_OUTPUT_BYTES: usize = 16_384;
/// Most bytes of hook notes (stdout of `session_start` and `user_prompt_submit` hooks)
/// one occurrence of an event adds to the model's context, all its hooks together.
pub const HOOK_EVENT_OUTPUT_BYTES: usize = 16_384;
/// Most bytes of a tool's result (or a prompt) a hook's input carries; longer text is
/// cut with a marker.
pub const HOOK_INPUT_TEXT_BYTES: usize = 65_536;
/// Longest hook error `session.compact` gives back (`hook_errors`), in UTF-8 bytes; a
/// longer one is cut at a character boundary and ends with `…`.
pub const COMPACT_HOOK_ERROR_BYTES: usize = 1_024;

/// Largest JSON-RPC message `magi-code acp` reads or writes, in bytes: far above the
/// local-agent frame, since an ACP prompt may embed whole files and base64 images.
pub const ACP_MESSAGE_BYTES: usize = 32 * 1_048_576;
/// Most ACP sessions one `magi-code acp` connection keeps open at once, each with a
/// backend of its own.
pub const ACP_SESSIONS: usize = 16;
/// Most `session/request_permission` (and other) requests `magi-code acp` waits on at
/// once from its client.
pub const ACP_PENDING_REQUESTS: usize = 256;
/// How long the agent waits for the client to answer one `terminal/create`,
/// `terminal/output`, `terminal/kill` or `terminal/release`, in milliseconds
/// (`terminal/wait_for_exit` waits for the command's own timeout).
pub const ACP_TERMINAL_REQUEST_MS: u64 = 5_000;

// `client.files`: the bounds its contract (docs/protocol/client-files.md) fixes. Not
// part of the published `limits`: the descriptor of the extension carries them.

/// Names `client.files` adds to whichever bound of `required_capabilities` applies
/// without it: its own.
pub const CLIENT_FILES_NAME_ROOM: usize = 1;
/// Longest JSON encoding (quotes included) of one part's `content` in
/// `client.file.write` and `client.file.result`: half an input frame, so the envelope
/// always fits beside it whatever the text escapes to.
pub const CLIENT_FILE_PART_ENCODED_BYTES: usize = 32_768;
/// Most bytes of text a `client.file.write` carries over all its parts: the `write`
/// tool's bound.
pub const CLIENT_FILE_WRITE_BYTES: usize = WRITE_TOOL_BYTES;
/// Most bytes of text a read asks for (its `max_bytes`): the edit tools read whole
/// files of up to the write bound, `read` asks for its own smaller bound.
pub const CLIENT_FILE_READ_BYTES: usize = WRITE_TOOL_BYTES;
/// How long the client has to answer one read or write, in milliseconds; the wait for
/// each further part of a read starts again.
pub const CLIENT_FILE_TIMEOUT_MS: u64 = 30_000;
/// Longest `error` of a failed `client.file.result`, in UTF-8 bytes.
pub const CLIENT_FILE_ERROR_BYTES: usize = 1_024;

/// Largest request the backend sends its spawn server (program, arguments, working
/// directory and environment of one command), in bytes; a larger one starts its command
/// through a launcher of its own instead. Internal.
pub const SPAWN_REQUEST_BYTES: usize = 65_536;
/// How long the backend waits for a spawn server to start (and confine itself) or to
/// answer one request, in milliseconds; past it the server is given up. Internal.
pub const SPAWN_SERVER_WAIT_MS: u64 = 10_000;
/// Most spawn servers (distinct sandbox policies, the unconfined one among them) one
/// backend keeps; a command of a further policy starts through a launcher of its own.
/// Internal.
pub const SPAWN_SERVERS: usize = 8;

/// Largest crash report a panic leaves in `$MC_HOME/logs`, in bytes; a longer one is
/// cut (its backtrace first) and says so. Internal.
pub const CRASH_REPORT_BYTES: usize = 64 * 1_024;
/// Most crash reports kept in `$MC_HOME/logs`; writing one more removes the oldest.
/// Internal.
pub const CRASH_REPORTS_KEPT: usize = 20;
/// Longest a process ending with one line on stderr (it died of a bug, or a stop
/// signal ended it) waits for the line to be written before it exits anyway, in
/// milliseconds: a full pipe never holds the exit. Internal.
pub const STDERR_LINE_WAIT_MS: u64 = 200;
/// How much of a backend's newest stderr output the client library keeps, in bytes, to
/// say why a backend ended; older output is dropped as newer arrives. Internal.
pub const BACKEND_STDERR_TAIL_BYTES: usize = 16 * 1_024;

// Live command output (`tool.cards` interim revisions of a running `bash` card,
// docs/protocol/cards.md).

/// Shortest time between two interim revisions of one running command's card, in
/// milliseconds: its output is coalesced between them.
pub const LIVE_OUTPUT_INTERVAL_MS: u64 = 250;
/// Lines of a running command's newest output its interim revisions carry, at most.
pub const LIVE_OUTPUT_LINES: usize = 16;
/// Bytes of a running command's newest output the backend keeps for them: the lines
/// are taken from these, so one long line never makes them large.
pub const LIVE_OUTPUT_BYTES: usize = 8_192;

// What the model is told of its environment (docs/prompt.md).

/// Most bytes of the environment the model is told of: the system prompt's
/// `# Environment` block and a turn's context note together (docs/prompt.md).
pub const ENVIRONMENT_BYTES: usize = 2_048;
/// Of [`ENVIRONMENT_BYTES`], the most a turn's context note takes (the date, the git
/// state, the approval mode); the system prompt's block has the rest.
pub const TURN_CONTEXT_BYTES: usize = 640;
/// How long the `git status` that tells a turn's git state may run before the state is
/// said to be unknown.
pub const TURN_GIT_STATUS_MS: u64 = 2_000;
/// Most bytes of a built-in tool's description (`code_mode`'s has its own bound,
/// [`CODE_MODE_DESCRIPTION_BYTES`]): every description is sent with every request.
pub const TOOL_DESCRIPTION_BYTES: usize = 1_024;

// ---- The eval suite (`magi-eval`, docs/eval.md) ----
// How long a task may take and how much of what its processes print is kept. Internal.

/// Longest one task's `magi-code exec` may run by default, in milliseconds
/// (`magi-eval --timeout` chooses another); past it the run is stopped.
pub const EVAL_TASK_MS: u64 = 900_000;
/// Longest a task's check (and the repository's generation) may run, in milliseconds.
pub const EVAL_CHECK_MS: u64 = 300_000;
/// How long a stopped `magi-code exec` has to cancel its run and end, after its
/// SIGTERM, before its process group is killed, in milliseconds: its own cancellation
/// wait (5 s) and its backend's shutdown.
pub const EVAL_STOP_GRACE_MS: u64 = 10_000;
/// How long the output of a process that ended is still read, in milliseconds: a
/// descendant that kept its pipe open is killed with its group, and past this its
/// output is given up.
pub const EVAL_DRAIN_MS: u64 = 2_000;
/// Most bytes of the newest output of a failed check, or of `magi-code exec`'s stderr,
/// a report keeps.
pub const EVAL_OUTPUT_TAIL_BYTES: usize = 4_096;
