//! Discovery's tests: listing, paging and discovering over real folders of logs.

use std::path::PathBuf;

use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    DISCOVER_BATCH_FILES, DISCOVERY_DIRECTORY_ENTRIES, DISCOVERY_PAGE_BYTES, DISCOVERY_SCAN_BYTES,
    DISCOVERY_SESSION_BYTES, DISCOVERY_SESSION_LINES, DISCOVERY_SESSIONS, DISCOVERY_TITLE_BYTES,
    TITLE_CHARS,
};
use magi_protocol::messages::{
    Eligibility, SessionDiscoverParams, SessionDiscoverResult, SessionListEntry, SessionListParams,
    SessionListResult,
};
use magi_protocol::names::is_valid_name;
use magi_store::Home;
use magi_store::lease::{LeaseKind, is_present};

use serde_json::{Value, json};

use super::budget::*;
use super::entry::*;
use super::scope::*;
use super::*;
use crate::paging::serialized_len;

struct Fixture {
    _dir: tempfile::TempDir,
    home: Home,
    cwd: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::prepare(&dir.path().join("mc")).unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir(&cwd).unwrap();
        let cwd = cwd.canonicalize().unwrap();
        Fixture {
            _dir: dir,
            home,
            cwd,
        }
    }

    fn write(&self, id: &str, lines: &[Value]) -> PathBuf {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        self.write_raw(&format!("{id}.jsonl"), &text)
    }

    fn write_raw(&self, name: &str, text: &str) -> PathBuf {
        let dir = self.home.workspace_dir(&self.cwd);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn meta(&self, id: &str) -> Value {
        record(
            id,
            "session_meta",
            json!({"cwd": self.cwd.display().to_string()}),
        )
    }

    fn list(
        &self,
        discovery: &mut Discovery,
        params: Value,
    ) -> Result<SessionListResult, ErrorCode> {
        self.list_attached(discovery, None, params)
    }

    fn list_attached(
        &self,
        discovery: &mut Discovery,
        attached: Option<&str>,
        params: Value,
    ) -> Result<SessionListResult, ErrorCode> {
        let params: SessionListParams = serde_json::from_value(params).unwrap();
        discovery.list(&self.home, &self.cwd, attached, &params)
    }

    fn discover(
        &self,
        discovery: &mut Discovery,
        params: Value,
    ) -> Result<SessionDiscoverResult, ErrorCode> {
        let params: SessionDiscoverParams = serde_json::from_value(params).unwrap();
        discovery.discover(&self.home, &self.cwd, None, &params)
    }

    fn discover_within(
        &self,
        discovery: &mut Discovery,
        attached: Option<&str>,
        params: Value,
        bounds: DiscoverBounds,
    ) -> Result<SessionDiscoverResult, ErrorCode> {
        let params: SessionDiscoverParams = serde_json::from_value(params).unwrap();
        let scope = Scope {
            home: &self.home,
            cwd: &self.cwd,
            attached,
        };
        discovery.discover_within(&scope, &params, bounds)
    }

    /// Every batch of a new pass, following its cursors to the end.
    fn pass(&self, limit: u64, bounds: DiscoverBounds) -> Vec<SessionDiscoverResult> {
        let mut discovery = Discovery::default();
        let mut batches = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = json!({"cursor": cursor, "limit": limit});
            let batch = self
                .discover_within(&mut discovery, None, params, bounds)
                .unwrap();
            assert!(batch.provisional);
            assert!(
                serialized_len(&batch, ErrorCode::DiscoveryLimit).unwrap() <= bounds.page_bytes
            );
            assert_eq!(batch.complete, batch.next_cursor.is_none());
            cursor = batch.next_cursor.clone();
            batches.push(batch);
            if cursor.is_none() {
                return batches;
            }
            assert!(batches.len() <= 1_000, "the pass does not move on");
        }
    }

    /// Sessions `prefix000`, `prefix001`, … of this workspace.
    fn sessions(&self, prefix: &str, count: usize) -> Vec<String> {
        (0..count)
            .map(|n| {
                let id = format!("{prefix}{n:03}");
                self.write(&id, &[self.meta(&id)]);
                id
            })
            .collect()
    }
}

fn all_ids(batches: &[SessionDiscoverResult]) -> Vec<&str> {
    batches.iter().flat_map(|b| ids(&b.sessions)).collect()
}

fn sizes(batches: &[SessionDiscoverResult]) -> Vec<usize> {
    batches.iter().map(|b| b.sessions.len()).collect()
}

fn record(id: &str, kind: &str, fields: Value) -> Value {
    record_at(id, "2026-11-01T10:00:00.000Z", kind, fields)
}

fn record_at(id: &str, ts: &str, kind: &str, fields: Value) -> Value {
    let mut object = json!({"v": 1, "session_id": id, "ts": ts, "kind": kind});
    for (k, v) in fields.as_object().unwrap() {
        object[k] = v.clone();
    }
    object
}

fn ids(sessions: &[SessionListEntry]) -> Vec<&str> {
    sessions.iter().map(|s| s.session_id.as_str()).collect()
}

#[test]
fn params_are_checked_before_any_work() {
    let check = |v: Value| check_params(&serde_json::from_value(v).unwrap());
    assert_eq!(check(json!({})), Ok(ListRequest::Fresh { limit: 100 }));
    assert_eq!(
        check(json!({"limit": 1})),
        Ok(ListRequest::Fresh { limit: 1 })
    );
    assert_eq!(
        check(json!({"revision": "r", "cursor": "r.1", "limit": 100})),
        Ok(ListRequest::Continue {
            revision: "r".into(),
            cursor: "r.1".into(),
            limit: 100
        })
    );
    for bad in [
        json!({"limit": 0}),
        json!({"limit": 101}),
        json!({"revision": "r"}),
        json!({"cursor": "c"}),
        json!({"revision": "r", "cursor": null}),
        json!({"revision": "bad revision", "cursor": "c"}),
        json!({"revision": "r", "cursor": "c".repeat(65)}),
        json!({"revision": "", "cursor": "c"}),
    ] {
        assert_eq!(check(bad.clone()), Err(ErrorCode::InvalidParams), "{bad}");
    }
}

#[test]
fn titles_are_safe_and_bounded() {
    assert_eq!(
        safe_title("Fix the parser").as_deref(),
        Some("Fix the parser")
    );
    assert_eq!(safe_title("  padded  ").as_deref(), Some("padded"));
    let long = "é".repeat(60);
    assert_eq!(
        safe_title(&long).map(|t| t.chars().count()),
        Some(TITLE_CHARS)
    );
    // 256 input bytes are considered, 257 are not.
    assert!(safe_title(&"a ".repeat(128)).is_some());
    assert_eq!(safe_title(&"a".repeat(DISCOVERY_TITLE_BYTES + 1)), None);
    for bad in [
        "",
        "   ",
        "line\nbreak",
        "tab\there",
        "esc\u{1b}[31m",
        "key sk-abcdef",
        "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8",
    ] {
        assert_eq!(safe_title(bad), None, "{bad:?}");
    }
}

#[test]
fn title_and_updated_at_come_from_records() {
    let f = Fixture::new();
    f.write(
        "s1",
        &[
            record_at(
                "s1",
                "2026-11-01T10:00:00.000Z",
                "session_meta",
                json!({"cwd": f.cwd.display().to_string()}),
            ),
            record_at(
                "s1",
                "2026-11-03T09:00:00.250Z",
                "title",
                json!({"title": "First"}),
            ),
            // Later in the file, earlier in time: the greatest instant wins.
            record_at(
                "s1",
                "2026-11-02T10:00:00Z",
                "compaction",
                json!({"summary": "s", "title": "Second"}),
            ),
            record_at("s1", "not a time", "compaction", json!({"summary": "s"})),
            record_at("s1", "2026-11-04T00:00:00.000Z", "future_kind", json!({})),
        ],
    );
    f.write("s2", &[]);
    f.write(
        "s3",
        &[
            record("s3", "title", json!({"title": "ok"})),
            record("s3", "title", json!({"title": "\u{7}bell"})),
        ],
    );
    let mut d = Discovery::default();
    let result = f.list(&mut d, json!({})).unwrap();
    let s1 = &result.sessions[0];
    assert_eq!(s1.title.as_deref(), Some("Second"));
    // Unknown kinds are not read, so their timestamps do not count.
    assert_eq!(s1.updated_at.as_deref(), Some("2026-11-03T09:00:00.250Z"));
    assert_eq!(
        (s1.eligibility, s1.notices.len()),
        (Eligibility::Available, 0)
    );
    let s2 = &result.sessions[1];
    assert_eq!(
        (s2.title.as_deref(), s2.updated_at.as_deref()),
        (None, None)
    );
    assert_eq!(s2.eligibility, Eligibility::CwdUnverified);
    assert_eq!(s2.notices, vec![NOTICE_CWD_UNVERIFIED]);
    // The last title is unsafe: null, not an earlier one.
    assert_eq!(result.sessions[2].title, None);
    assert!(result.complete && result.next_cursor.is_none() && result.notices.is_empty());
}

#[test]
fn order_is_by_id_and_other_workspaces_are_excluded() {
    let f = Fixture::new();
    for id in ["b", "a-b", "a", "Z", "a_"] {
        f.write(id, &[f.meta(id)]);
    }
    f.write(
        "gone",
        &[record(
            "gone",
            "session_meta",
            json!({"cwd": "/no/such/dir"}),
        )],
    );
    f.write(
        "rel",
        &[record("rel", "session_meta", json!({"cwd": "work"}))],
    );
    // One recorded cwd elsewhere is enough to exclude, and an empty one is ignored.
    f.write(
        "mixed",
        &[
            f.meta("mixed"),
            record("mixed", "session_meta", json!({"cwd": "/"})),
        ],
    );
    f.write(
        "blank",
        &[
            record("blank", "session_meta", json!({"cwd": ""})),
            f.meta("blank"),
        ],
    );
    f.write_raw("notes.txt", "x");
    f.write_raw("a.jsonl.tmp", "x");
    let mut d = Discovery::default();
    let result = f.list(&mut d, json!({})).unwrap();
    assert_eq!(
        ids(&result.sessions),
        vec!["Z", "a", "a-b", "a_", "b", "blank"]
    );
    assert!(result.notices.is_empty());
}

#[test]
fn invalid_logs_are_omitted_with_one_notice() {
    let f = Fixture::new();
    f.write("good", &[f.meta("good")]);
    f.write_raw("bad1.jsonl", "{not json}\n");
    f.write("bad2", &[record("other", "title", json!({"title": "x"}))]);
    std::fs::create_dir(f.home.workspace_dir(&f.cwd).join("bad3.jsonl")).unwrap();
    let mut d = Discovery::default();
    let result = f.list(&mut d, json!({})).unwrap();
    assert_eq!(ids(&result.sessions), vec!["good"]);
    assert_eq!(result.notices, vec![NOTICE_SESSIONS_OMITTED_INVALID]);
}

#[test]
fn bad_names_and_folders_make_discovery_unavailable() {
    let f = Fixture::new();
    let mut d = Discovery::default();
    // No folder yet: nothing stored, a complete empty listing.
    let empty = f.list(&mut d, json!({})).unwrap();
    assert!(empty.sessions.is_empty() && empty.complete && empty.next_cursor.is_none());
    for name in [
        "a.b.jsonl",
        ".jsonl",
        "has space.jsonl",
        &format!("{}.jsonl", "x".repeat(65)),
    ] {
        let path = f.write_raw(name, "");
        assert_eq!(
            f.list(&mut d, json!({})).unwrap_err(),
            ErrorCode::DiscoveryUnavailable,
            "{name}"
        );
        std::fs::remove_file(path).unwrap();
    }
    assert!(f.list(&mut d, json!({})).is_ok());
    let ws = f.home.workspace_dir(&f.cwd);
    std::fs::remove_dir(&ws).unwrap();
    std::fs::write(&ws, "").unwrap();
    assert_eq!(
        f.list(&mut d, json!({})).unwrap_err(),
        ErrorCode::DiscoveryUnavailable
    );
}

#[test]
fn leases_mark_sessions_busy_except_the_attached_one() {
    let f = Fixture::new();
    for id in ["s1", "s2", "s3", "s4"] {
        f.write(id, &[f.meta(id)]);
    }
    f.write("legacy", &[]);
    std::fs::write(f.home.lease_path("s1", LeaseKind::Writer), "").unwrap();
    std::fs::write(f.home.lease_path("s2", LeaseKind::Active), "").unwrap();
    std::fs::write(f.home.lease_path("s3", LeaseKind::Append), "").unwrap();
    std::fs::write(f.home.lease_path("legacy", LeaseKind::Writer), "").unwrap();
    let mut d = Discovery::default();
    let result = f.list_attached(&mut d, Some("s1"), json!({})).unwrap();
    let shown: Vec<(&str, Eligibility, usize)> = result
        .sessions
        .iter()
        .map(|s| (s.session_id.as_str(), s.eligibility, s.notices.len()))
        .collect();
    assert_eq!(
        shown,
        vec![
            ("legacy", Eligibility::Busy, 1),
            ("s1", Eligibility::Available, 0),
            ("s2", Eligibility::Busy, 0),
            ("s3", Eligibility::Busy, 0),
            ("s4", Eligibility::Available, 0),
        ]
    );
    // Listing neither took nor removed any lease file.
    assert!(is_present(&f.home.lease_path("s1", LeaseKind::Writer)));
    assert!(!is_present(&f.home.lease_path("s4", LeaseKind::Writer)));
}

#[test]
fn pages_follow_cursors_and_any_change_is_stale_for_good() {
    let f = Fixture::new();
    for n in 0..5 {
        let id = format!("s{n}");
        f.write(&id, &[f.meta(&id)]);
    }
    let mut d = Discovery::default();
    let first = f.list(&mut d, json!({"limit": 2})).unwrap();
    assert_eq!(ids(&first.sessions), vec!["s0", "s1"]);
    assert!(first.revision.starts_with('d') && first.revision.len() == 33);
    let cursor = first.next_cursor.clone().unwrap();
    assert!(!first.complete);
    let next = |d: &mut Discovery, cursor: &str, limit: u64| {
        f.list(
            d,
            json!({"revision": first.revision, "cursor": cursor, "limit": limit}),
        )
    };
    let second = next(&mut d, &cursor, 2).unwrap();
    assert_eq!(ids(&second.sessions), vec!["s2", "s3"]);
    let last = next(&mut d, second.next_cursor.as_deref().unwrap(), 100).unwrap();
    assert_eq!(ids(&last.sessions), vec!["s4"]);
    assert!(last.complete && last.next_cursor.is_none());
    // A page can be asked for again while nothing changed.
    assert_eq!(next(&mut d, &cursor, 2).unwrap(), second);
    // Cursors it never issued, and other revisions, are stale.
    assert_eq!(
        next(&mut d, &format!("{}.3", first.revision), 2),
        Err(ErrorCode::StaleRevision)
    );
    let other = f.list(
        &mut Discovery::default(),
        json!({"revision": "x", "cursor": "x.1"}),
    );
    assert_eq!(other, Err(ErrorCode::StaleRevision));

    // A lease file appearing is a change, and the snapshot stays stale.
    let lease = f.home.lease_path("s0", LeaseKind::Active);
    std::fs::write(&lease, "").unwrap();
    assert_eq!(next(&mut d, &cursor, 2), Err(ErrorCode::StaleRevision));
    std::fs::remove_file(&lease).unwrap();
    assert_eq!(next(&mut d, &cursor, 2), Err(ErrorCode::StaleRevision));

    // A fresh listing starts over; the attachment is part of what it saw.
    let fresh = f.list(&mut d, json!({"limit": 2})).unwrap();
    assert_ne!(fresh.revision, first.revision);
    let params = json!({"revision": fresh.revision, "cursor": fresh.next_cursor, "limit": 2});
    assert_eq!(
        f.list_attached(&mut d, Some("s0"), params),
        Err(ErrorCode::StaleRevision)
    );

    // So is a log's content, even at the same length.
    let fresh = f.list(&mut d, json!({"limit": 2})).unwrap();
    let path = f.home.workspace_dir(&f.cwd).join("s4.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("10:00", "11:00")).unwrap();
    let params = json!({"revision": fresh.revision, "cursor": fresh.next_cursor, "limit": 2});
    assert_eq!(f.list(&mut d, params), Err(ErrorCode::StaleRevision));

    // And a new sidecar name in the folder.
    let fresh = f.list(&mut d, json!({"limit": 2})).unwrap();
    f.write_raw("sidecar", "");
    let params = json!({"revision": fresh.revision, "cursor": fresh.next_cursor, "limit": 2});
    assert_eq!(f.list(&mut d, params), Err(ErrorCode::StaleRevision));
}

#[test]
fn pages_stay_within_their_byte_bound() {
    let f = Fixture::new();
    // Long IDs and titles of four-byte characters: 100 entries would not fit.
    let title = "\u{1d11e}".repeat(TITLE_CHARS);
    for n in 0..120 {
        let id = format!("{n:03}{}", "x".repeat(61));
        f.write(
            &id,
            &[f.meta(&id), record(&id, "title", json!({"title": title}))],
        );
    }
    let mut d = Discovery::default();
    let mut page = f.list(&mut d, json!({})).unwrap();
    let mut seen = Vec::new();
    loop {
        assert!(serialized_len(&page, ErrorCode::DiscoveryLimit).unwrap() <= DISCOVERY_PAGE_BYTES);
        assert!(page.sessions.len() < 100);
        seen.extend(page.sessions.iter().map(|s| s.session_id.clone()));
        let Some(cursor) = page.next_cursor.clone() else {
            assert!(page.complete);
            break;
        };
        assert!(!page.complete);
        page = f
            .list(&mut d, json!({"revision": page.revision, "cursor": cursor}))
            .unwrap();
    }
    assert_eq!(seen.len(), 120);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn bounds_fail_the_whole_listing() {
    let f = Fixture::new();
    for n in 0..DISCOVERY_SESSIONS {
        let id = format!("s{n:03}");
        f.write(&id, &[f.meta(&id)]);
    }
    let mut d = Discovery::default();
    assert_eq!(f.list(&mut d, json!({})).unwrap().sessions.len(), 100);
    f.write("s999", &[f.meta("s999")]);
    assert_eq!(f.list(&mut d, json!({})), Err(ErrorCode::DiscoveryLimit));
    // A session beyond its own read bound fails the listing too.
    let f = Fixture::new();
    let lines: Vec<Value> = (0..=DISCOVERY_SESSION_LINES)
        .map(|_| record("big", "future_kind", json!({})))
        .collect();
    f.write("big", &lines);
    assert_eq!(
        f.list(&mut Discovery::default(), json!({})),
        Err(ErrorCode::DiscoveryLimit)
    );
}

#[test]
fn failed_reads_charge_what_they_could_have_read() {
    let f = Fixture::new();
    // Small invalid logs are charged their length, so many of them still list.
    for n in 0..40 {
        f.write_raw(&format!("bad{n}.jsonl"), "not json\n");
    }
    let mut d = Discovery::default();
    assert_eq!(
        f.list(&mut d, json!({})).unwrap().notices,
        vec![NOTICE_SESSIONS_OMITTED_INVALID]
    );
    // A log that is not a regular file is charged its whole per-file budget.
    let whole = DISCOVERY_SCAN_BYTES / DISCOVERY_SESSION_BYTES;
    let dir = f.home.workspace_dir(&f.cwd);
    for n in 0..whole {
        std::fs::create_dir_all(dir.join(format!("odd{n}.jsonl"))).unwrap();
    }
    assert_eq!(f.list(&mut d, json!({})), Err(ErrorCode::DiscoveryLimit));
}

#[test]
fn the_directory_bound_counts_every_name() {
    let f = Fixture::new();
    for n in 0..DISCOVERY_DIRECTORY_ENTRIES {
        f.write_raw(&format!("side{n}"), "");
    }
    let mut d = Discovery::default();
    assert!(f.list(&mut d, json!({})).unwrap().sessions.is_empty());
    f.write_raw("one-more", "");
    assert_eq!(f.list(&mut d, json!({})), Err(ErrorCode::DiscoveryLimit));
}

#[test]
fn discover_params_are_checked_before_any_work() {
    let check = |v: Value| check_discover_params(&serde_json::from_value(v).unwrap());
    let request = |cursor: Option<&str>, limit| DiscoverRequest {
        cursor: cursor.map(str::to_owned),
        limit,
    };
    assert_eq!(check(json!({})), Ok(request(None, 100)));
    assert_eq!(
        check(json!({"cursor": null, "limit": 1})),
        Ok(request(None, 1))
    );
    assert_eq!(
        check(json!({"cursor": "p.1", "limit": 100})),
        Ok(request(Some("p.1"), 100))
    );
    for bad in [
        json!({"limit": 0}),
        json!({"limit": 101}),
        json!({"cursor": ""}),
        json!({"cursor": "bad cursor"}),
        json!({"cursor": "é"}),
        json!({"cursor": "c".repeat(65)}),
    ] {
        assert_eq!(check(bad.clone()), Err(ErrorCode::InvalidParams), "{bad}");
    }
    // Checked before the cursor is looked up, whatever pass there is.
    assert_eq!(
        Fixture::new().discover(&mut Discovery::default(), json!({"limit": 0})),
        Err(ErrorCode::InvalidParams)
    );
}

#[test]
fn a_pass_lists_every_session_once_in_bounded_batches() {
    let f = Fixture::new();
    let all = f.sessions("s", 150);
    // The 64-file batch bound ends a batch before `limit` does.
    let batches = f.pass(100, DiscoverBounds::V1);
    assert_eq!(sizes(&batches), vec![64, 64, 22]);
    assert_eq!(all_ids(&batches), all);
    let completes: Vec<bool> = batches.iter().map(|b| b.complete).collect();
    assert_eq!(completes, vec![false, false, true]);
    for cursor in batches.iter().filter_map(|b| b.next_cursor.as_deref()) {
        assert!(is_valid_name(cursor) && cursor.starts_with('p'), "{cursor}");
    }
    // `limit` ends a batch too, and one ending on the folder's last log is complete.
    let batches = f.pass(50, DiscoverBounds::V1);
    assert_eq!(sizes(&batches), vec![50, 50, 50]);
    assert_eq!(all_ids(&batches), all);
    assert!(batches.iter().all(|b| b.notices.is_empty()));
}

#[test]
fn the_batch_file_bound_counts_logs_not_entries() {
    let f = Fixture::new();
    f.sessions("s", DISCOVER_BATCH_FILES);
    let one = f.pass(100, DiscoverBounds::V1);
    assert_eq!(sizes(&one), vec![DISCOVER_BATCH_FILES]);
    assert!(one[0].complete);
    // Logs of other workspaces and invalid logs are read, so they count as well.
    f.write(
        "other",
        &[record("other", "session_meta", json!({"cwd": "/"}))],
    );
    f.write_raw("invalid.jsonl", "not json\n");
    let mut d = Discovery::default();
    let first = f.discover(&mut d, json!({})).unwrap();
    assert_eq!(first.sessions.len(), DISCOVER_BATCH_FILES - 2);
    assert!(!first.complete && first.next_cursor.is_some());
    assert_eq!(first.notices, vec![NOTICE_SESSIONS_OMITTED_INVALID]);
    let rest = f
        .discover(&mut d, json!({"cursor": first.next_cursor}))
        .unwrap();
    assert_eq!(rest.sessions.len(), 2);
    assert!(rest.complete && rest.next_cursor.is_none() && rest.notices.is_empty());
}

#[test]
fn a_continuation_follows_the_folder_as_it_changes() {
    let f = Fixture::new();
    f.sessions("s", 10);
    let mut d = Discovery::default();
    let first = f.discover(&mut d, json!({"limit": 3})).unwrap();
    assert_eq!(ids(&first.sessions), vec!["s000", "s001", "s002"]);
    let cursor = first.next_cursor.clone().unwrap();
    // Behind the cursor, ahead of it, and a removal.
    f.sessions("s001", 1);
    f.sessions("s005", 1);
    f.sessions("s9", 1);
    std::fs::remove_file(f.home.workspace_dir(&f.cwd).join("s004.jsonl")).unwrap();
    let second = f
        .discover(&mut d, json!({"cursor": cursor, "limit": 3}))
        .unwrap();
    assert_eq!(ids(&second.sessions), vec!["s003", "s005", "s005000"]);
    // Any cursor of the pass can be followed again, and issues the same next one.
    let again = f
        .discover(&mut d, json!({"cursor": cursor, "limit": 3}))
        .unwrap();
    assert_eq!(again, second);
    let third = f
        .discover(&mut d, json!({"cursor": second.next_cursor, "limit": 3}))
        .unwrap();
    assert_eq!(ids(&third.sessions), vec!["s006", "s007", "s008"]);
    std::fs::remove_file(f.home.workspace_dir(&f.cwd).join("s9000.jsonl")).unwrap();
    let last = f
        .discover(&mut d, json!({"cursor": third.next_cursor, "limit": 3}))
        .unwrap();
    assert_eq!(ids(&last.sessions), vec!["s009"]);
    assert!(last.complete && last.next_cursor.is_none());
    // A log that vanished between the listing and its read is skipped.
    let scope = Scope {
        home: &f.home,
        cwd: &f.cwd,
        attached: None,
    };
    let gone = f.home.workspace_dir(&f.cwd).join("s004.jsonl");
    assert!(matches!(
        scope.visit("s004", &gone, SESSION_LIMITS).read,
        Read::Gone
    ));
}

#[test]
fn cursors_belong_to_their_pass() {
    let f = Fixture::new();
    f.sessions("s", 5);
    let mut d = Discovery::default();
    let first = f.discover(&mut d, json!({"limit": 2})).unwrap();
    let cursor = first.next_cursor.clone().unwrap();
    let (pass, _) = cursor.rsplit_once('.').unwrap();
    for invented in [format!("{pass}.9"), format!("{pass}x.0"), "p0.0".to_owned()] {
        assert_eq!(
            f.discover(&mut d, json!({"cursor": invented})),
            Err(ErrorCode::StaleRevision),
            "{invented}"
        );
    }
    // Another child's pass, and no pass at all.
    let mut other = Discovery::default();
    f.discover(&mut other, json!({})).unwrap();
    assert_eq!(
        f.discover(&mut other, json!({"cursor": cursor})),
        Err(ErrorCode::StaleRevision)
    );
    assert_eq!(
        f.discover(&mut Discovery::default(), json!({"cursor": cursor})),
        Err(ErrorCode::StaleRevision)
    );
    // A session.list cursor is not a discovery cursor, and the reverse.
    let listed = f.list(&mut d, json!({"limit": 2})).unwrap();
    assert_eq!(
        f.discover(&mut d, json!({"cursor": listed.next_cursor})),
        Err(ErrorCode::StaleRevision)
    );
    assert!(f.discover(&mut d, json!({"cursor": cursor})).is_ok());
    // A new pass ends the old one, even when it fails.
    let fresh = f.discover(&mut d, json!({"limit": 2})).unwrap();
    assert_ne!(fresh.next_cursor.as_deref(), Some(cursor.as_str()));
    assert_eq!(
        f.discover(&mut d, json!({"cursor": cursor})),
        Err(ErrorCode::StaleRevision)
    );
    let fresh_cursor = fresh.next_cursor.unwrap();
    assert_eq!(
        ids(&f
            .discover(&mut d, json!({"cursor": fresh_cursor}))
            .unwrap()
            .sessions),
        vec!["s002", "s003", "s004"]
    );
    f.write_raw("bad name.jsonl", "");
    assert_eq!(
        f.discover(&mut d, json!({})),
        Err(ErrorCode::DiscoveryUnavailable)
    );
    assert_eq!(
        f.discover(&mut d, json!({"cursor": fresh_cursor})),
        Err(ErrorCode::StaleRevision)
    );
}

#[test]
fn limit_counts_listed_entries_only() {
    let f = Fixture::new();
    f.write("a", &[record("a", "session_meta", json!({"cwd": "/"}))]);
    f.sessions("b", 2);
    f.write("c", &[]);
    std::fs::write(f.home.lease_path("c", LeaseKind::Writer), "").unwrap();
    let batches = f.pass(1, DiscoverBounds::V1);
    assert_eq!(all_ids(&batches), vec!["b000", "b001", "c"]);
    assert_eq!(sizes(&batches), vec![1, 1, 1]);
    // Entries are those of session.list.
    let listed = f.list(&mut Discovery::default(), json!({})).unwrap();
    let discovered: Vec<SessionListEntry> = batches.into_iter().flat_map(|b| b.sessions).collect();
    assert_eq!(discovered, listed.sessions);
    assert_eq!(discovered[2].eligibility, Eligibility::Busy);
}

#[test]
fn over_size_and_invalid_logs_are_omitted_with_notices() {
    let f = Fixture::new();
    let lines: Vec<Value> = (0..=DISCOVERY_SESSION_LINES)
        .map(|_| record("big", "future_kind", json!({})))
        .collect();
    f.write("big", &lines);
    f.sessions("s", 2);
    let mut d = Discovery::default();
    let result = f.discover(&mut d, json!({})).unwrap();
    assert_eq!(ids(&result.sessions), vec!["s000", "s001"]);
    assert_eq!(result.notices, vec![NOTICE_SESSIONS_OMITTED_OVER_LIMIT]);
    assert!(result.complete);
    f.write_raw("a.jsonl", "{not json}\n");
    let result = f.discover(&mut d, json!({})).unwrap();
    assert_eq!(
        result.notices,
        vec![
            NOTICE_SESSIONS_OMITTED_INVALID,
            NOTICE_SESSIONS_OMITTED_OVER_LIMIT
        ]
    );
    // The notices belong to the batch that met the log; a batch may list nothing.
    let one_file = DiscoverBounds {
        files: 1,
        ..DiscoverBounds::V1
    };
    let batches = f.pass(100, one_file);
    let shown: Vec<(Vec<&str>, Vec<String>)> = batches
        .iter()
        .map(|b| (ids(&b.sessions), b.notices.clone()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (vec![], vec![NOTICE_SESSIONS_OMITTED_INVALID.to_owned()]),
            (vec![], vec![NOTICE_SESSIONS_OMITTED_OVER_LIMIT.to_owned()]),
            (vec!["s000"], vec![]),
            (vec!["s001"], vec![]),
        ]
    );
}

#[test]
fn discover_pages_stay_within_their_byte_bound() {
    let f = Fixture::new();
    // Long IDs and titles of four-byte characters: the largest entries there are.
    let title = "\u{1d11e}".repeat(TITLE_CHARS);
    let all: Vec<String> = (0..150)
        .map(|n| {
            let id = format!("{n:03}{}", "x".repeat(61));
            f.write(
                &id,
                &[f.meta(&id), record(&id, "title", json!({"title": title}))],
            );
            id
        })
        .collect();
    // `pass` checks every batch against the bound it was given.
    assert_eq!(all_ids(&f.pass(100, DiscoverBounds::V1)), all);
    let small = DiscoverBounds {
        page_bytes: 2_000,
        ..DiscoverBounds::V1
    };
    let batches = f.pass(100, small);
    assert_eq!(all_ids(&batches), all);
    assert!(batches.iter().all(|b| (1..10).contains(&b.sessions.len())));
    // A bound no entry fits in fails the call rather than answering an empty page.
    let tiny = DiscoverBounds {
        page_bytes: 400,
        ..DiscoverBounds::V1
    };
    assert_eq!(
        f.discover_within(&mut Discovery::default(), None, json!({}), tiny),
        Err(ErrorCode::DiscoveryLimit)
    );
}

#[test]
fn read_budgets_and_the_deadline_end_a_batch_early() {
    let f = Fixture::new();
    let all = f.sessions("s", 6);
    let size = std::fs::metadata(f.home.workspace_dir(&f.cwd).join("s000.jsonl"))
        .unwrap()
        .len();
    let size = usize::try_from(size).unwrap();
    let cases = [
        // The third log does not fit what is left: it waits for the next batch.
        DiscoverBounds {
            bytes: 2 * size + size / 2,
            ..DiscoverBounds::V1
        },
        DiscoverBounds {
            lines: 2,
            ..DiscoverBounds::V1
        },
        DiscoverBounds {
            files: 2,
            ..DiscoverBounds::V1
        },
        // Past the deadline, each batch still reads its first log.
        DiscoverBounds {
            scan_ms: 0,
            ..DiscoverBounds::V1
        },
    ];
    let expected = [vec![2, 2, 2], vec![2, 2, 2], vec![2, 2, 2], vec![1; 6]];
    for (bounds, expected) in cases.into_iter().zip(expected) {
        let batches = f.pass(100, bounds);
        assert_eq!(sizes(&batches), expected, "{bounds:?}");
        assert_eq!(all_ids(&batches), all);
        assert!(batches.iter().all(|b| b.notices.is_empty()));
    }
    // A log over the whole batch budget is still read, alone, under its own bound.
    let bounds = DiscoverBounds {
        bytes: size / 2,
        ..DiscoverBounds::V1
    };
    assert_eq!(sizes(&f.pass(100, bounds)), vec![1; 6]);
}

#[test]
fn discover_folders_and_names() {
    let f = Fixture::new();
    let mut d = Discovery::default();
    // No folder yet: nothing stored, a complete empty pass.
    let empty = f.discover(&mut d, json!({})).unwrap();
    assert!(empty.sessions.is_empty() && empty.complete && empty.next_cursor.is_none());
    f.sessions("s", 3);
    let first = f.discover(&mut d, json!({"limit": 2})).unwrap();
    // An invalid primary name fails the call even behind the cursor.
    let bad = f.write_raw("a.b.jsonl", "");
    assert_eq!(
        f.discover(&mut d, json!({"cursor": first.next_cursor})),
        Err(ErrorCode::DiscoveryUnavailable)
    );
    std::fs::remove_file(bad).unwrap();
    // Every name counts against the directory bound, sidecars included.
    f.write_raw("sidecar", "");
    let bounds = DiscoverBounds {
        directory_entries: 4,
        ..DiscoverBounds::V1
    };
    let params = json!({"cursor": first.next_cursor});
    assert_eq!(
        ids(&f
            .discover_within(&mut d, None, params.clone(), bounds)
            .unwrap()
            .sessions),
        vec!["s002"]
    );
    f.write_raw("one-more", "");
    assert_eq!(
        f.discover_within(&mut d, None, params, bounds),
        Err(ErrorCode::DiscoveryLimit)
    );
    // A folder removed mid-pass ends it; one replaced by a file is unavailable.
    let ws = f.home.workspace_dir(&f.cwd);
    std::fs::remove_dir_all(&ws).unwrap();
    let gone = f
        .discover(&mut d, json!({"cursor": first.next_cursor}))
        .unwrap();
    assert!(gone.sessions.is_empty() && gone.complete);
    std::fs::write(&ws, "").unwrap();
    assert_eq!(
        f.discover(&mut d, json!({})),
        Err(ErrorCode::DiscoveryUnavailable)
    );
}

#[test]
fn discovery_takes_no_lease_and_honours_the_attachment() {
    let f = Fixture::new();
    f.sessions("s", 2);
    std::fs::write(f.home.lease_path("s000", LeaseKind::Active), "").unwrap();
    let mut d = Discovery::default();
    let shown = |attached| {
        let result = f
            .discover_within(
                &mut Discovery::default(),
                attached,
                json!({}),
                DiscoverBounds::V1,
            )
            .unwrap();
        result
            .sessions
            .iter()
            .map(|s| s.eligibility)
            .collect::<Vec<_>>()
    };
    assert_eq!(shown(None), vec![Eligibility::Busy, Eligibility::Available]);
    assert_eq!(
        shown(Some("s000")),
        vec![Eligibility::Available, Eligibility::Available]
    );
    f.discover(&mut d, json!({})).unwrap();
    assert!(is_present(&f.home.lease_path("s000", LeaseKind::Active)));
    assert!(!is_present(&f.home.lease_path("s001", LeaseKind::Writer)));
}
