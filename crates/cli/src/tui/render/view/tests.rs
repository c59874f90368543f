//! Scrolling, anchoring and what each frame lays out, on transcripts folded from real
//! inputs.

use magi_client::fold::{FoldInput, Transcript};
use magi_protocol::messages::{EntryKind, Event, HistoryEntry, HistoryPageResult, MessageDelta};

use super::*;

const WIDTH: usize = 40;
const HEIGHT: usize = 10;

fn entry(id: &str, kind: EntryKind, text: &str) -> HistoryEntry {
    HistoryEntry {
        message_id: id.into(),
        kind,
        text: text.into(),
        partial: false,
        part: 0,
        last_part: true,
        tool_card: Default::default(),
    }
}

/// A transcript of saved history: a prompt and a reply of `lines` numbered lines, in
/// paragraphs of ten, `turns` times.
fn history(turns: usize, lines: usize) -> Transcript {
    let mut t = Transcript::default();
    let mut entries = Vec::new();
    for turn in 0..turns {
        entries.push(entry(&format!("u{turn}"), EntryKind::User, "show me"));
        entries.push(entry(
            &format!("a{turn}"),
            EntryKind::Assistant,
            &reply(turn, lines),
        ));
    }
    t.apply(FoldInput::HistoryPage(HistoryPageResult {
        session_id: "s".into(),
        revision: "h1".into(),
        entries,
        next_cursor: None,
        complete: true,
    }));
    t
}

fn reply(turn: usize, lines: usize) -> String {
    let mut text = String::new();
    for n in 1..=lines {
        text.push_str(&format!("turn {turn} line {n}\n"));
        if n % 10 == 0 {
            text.push('\n');
        }
    }
    text
}

fn delta(part: u64, text: &str) -> FoldInput {
    FoldInput::Event(Event::MessageDelta(MessageDelta {
        session_id: "s".into(),
        run_id: "r".into(),
        message_id: "live".into(),
        part,
        text: text.into(),
    }))
}

/// Draws an entry as Mission Control does, cards collapsed, at one instant.
fn entry_rows(item: &Item, width: usize) -> Vec<Line<'static>> {
    let clock = super::super::Clock::default();
    let drawing = transcript::Drawing {
        look: super::super::cards::Look {
            expanded: false,
            approval_pending: false,
        },
        clock: &clock,
        now: std::time::Instant::now(),
    };
    transcript::entry_rows(item, width, &drawing)
}

fn draw(view: &mut View, t: &Transcript) -> Vec<String> {
    let entries = Entries {
        items: t.items(),
        stamps: t.stamps(),
        draw: &entry_rows,
        look: 0,
    };
    view.rows(&entries, WIDTH, HEIGHT)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

#[test]
fn paging_up_reaches_the_first_line_of_a_long_reply_and_down_follows_again() {
    let t = history(1, 120);
    let mut view = View::default();
    let bottom = draw(&mut view, &t);
    assert_eq!(bottom.len(), HEIGHT);
    assert_eq!(bottom.last().map(String::as_str), Some("turn 0 line 120"));
    assert!(view.following());
    let mut pages = 0;
    while !draw(&mut view, &t).contains(&"turn 0 line 1".to_owned()) {
        view.page(-1);
        pages += 1;
        assert!(pages < 20, "never reached the first line");
    }
    assert!(!view.following());
    // A page keeps one row of the previous screen in sight.
    let before = draw(&mut view, &t);
    view.page(1);
    let after = draw(&mut view, &t);
    assert_eq!(after.first(), before.last());
    // Paging past the top stays at the top.
    view.page(-5);
    assert_eq!(draw(&mut view, &t)[0], "› show me");
    for _ in 0..30 {
        view.page(1);
    }
    assert_eq!(draw(&mut view, &t), bottom);
    assert!(view.following());
    // Home and End.
    view.top();
    assert_eq!(draw(&mut view, &t)[0], "› show me");
    view.bottom();
    assert_eq!(draw(&mut view, &t), bottom);
    // The wheel: a few rows at a time.
    view.scroll(-3);
    let wheel = draw(&mut view, &t);
    assert_eq!(wheel.last().map(String::as_str), Some("turn 0 line 117"));
    view.scroll(3);
    assert_eq!(draw(&mut view, &t), bottom);
    assert!(view.following());
}

#[test]
fn new_output_never_moves_a_view_anchored_above_and_says_so() {
    let mut t = history(1, 120);
    t.apply(delta(0, "streaming starts\n"));
    let mut view = View::default();
    draw(&mut view, &t);
    view.page(-1);
    let reading = draw(&mut view, &t);
    assert!(!view.news_below());
    for part in 1..50 {
        t.apply(delta(part, &format!("more output {part}\n")));
        assert_eq!(
            draw(&mut view, &t),
            reading,
            "the view moved at part {part}"
        );
    }
    assert!(view.news_below());
    // Following again shows the newest rows and the news is read.
    view.bottom();
    let bottom = draw(&mut view, &t);
    assert_eq!(bottom.last().map(String::as_str), Some("more output 49"));
    assert!(!view.news_below());
    // At the bottom, new output is followed.
    t.apply(delta(50, "the end\n"));
    assert_eq!(
        draw(&mut view, &t).last().map(String::as_str),
        Some("the end")
    );
}

#[test]
fn a_frame_lays_out_only_what_it_shows_and_keeps_settled_pieces() {
    // 5,000 lines of settled history, then a reply streaming.
    let mut t = history(50, 100);
    let mut view = View::default();
    draw(&mut view, &t);
    let first = view.laid_out;
    assert!(first <= 3, "the first frame laid out {first} pieces");
    draw(&mut view, &t);
    assert_eq!(view.laid_out, first, "nothing changed, nothing laid out");
    // A streaming reply is laid out again as it grows, and only it.
    t.apply(delta(0, "one"));
    draw(&mut view, &t);
    t.apply(delta(1, " two"));
    let before = view.laid_out;
    assert_eq!(
        draw(&mut view, &t).last().map(String::as_str),
        Some("one two")
    );
    assert_eq!(view.laid_out, before + 1);
    // Home lays out the top, not what lies between.
    view.top();
    draw(&mut view, &t);
    assert!(view.laid_out <= before + 4, "{} pieces", view.laid_out);
}

#[test]
fn the_cache_stays_bounded_while_scrolling_through_everything() {
    let t = history(200, 500);
    let mut view = View::default();
    view.top();
    let mut seen = 0;
    loop {
        let rows = draw(&mut view, &t);
        seen += 1;
        assert!(
            view.rows.cost() <= CACHE_ROWS + 2 * PIECE_MAX_ROWS,
            "{}",
            view.rows.cost()
        );
        if view.following() {
            assert_eq!(rows.last().map(String::as_str), Some("turn 199 line 500"));
            break;
        }
        view.page(40);
        assert!(seen < 1_000);
    }
}

/// The most rows a piece of [`history`] can have (a few kibibytes of short lines).
const PIECE_MAX_ROWS: usize = 400;

#[test]
fn history_replacing_the_entries_keeps_the_view_near_where_it_was() {
    let t = history(3, 120);
    let mut view = View::default();
    view.top();
    view.scroll(150);
    let reading = draw(&mut view, &t);
    // The same history again: new entries (new stamp ids), the same text.
    let mut again = t.clone();
    again.apply(FoldInput::HistoryPage(HistoryPageResult {
        session_id: "s".into(),
        revision: "h2".into(),
        entries: (0..3)
            .flat_map(|turn| {
                [
                    entry(&format!("u{turn}"), EntryKind::User, "show me"),
                    entry(&format!("a{turn}"), EntryKind::Assistant, &reply(turn, 120)),
                ]
            })
            .collect(),
        next_cursor: None,
        complete: true,
    }));
    assert_ne!(again.stamps()[1].id, t.stamps()[1].id);
    assert_eq!(draw(&mut view, &again), reading);
}

#[test]
fn a_running_call_is_drawn_each_frame_and_a_new_look_draws_again() {
    use magi_protocol::messages::{Activity, ActivityKind, ActivityState};
    // Short enough that the prompt is on screen with the call.
    let mut t = history(1, 3);
    t.apply(FoldInput::Event(Event::Activity(Activity {
        session_id: "s".into(),
        run_id: "r".into(),
        activity_id: "a1".into(),
        kind: ActivityKind::Tool,
        state: ActivityState::Started,
        name: "bash".into(),
        summary: "sleep 5".into(),
    })));
    let drawn = std::cell::Cell::new(0);
    let draw = |item: &Item, width: usize| {
        drawn.set(drawn.get() + 1);
        entry_rows(item, width)
    };
    let mut view = View::default();
    let mut frame = |look: u64| {
        let entries = Entries {
            items: t.items(),
            stamps: t.stamps(),
            draw: &draw,
            look,
        };
        view.rows(&entries, WIDTH, HEIGHT)
    };
    frame(0);
    let first = drawn.get();
    frame(0);
    // Only the running call again (its elapsed time moves without a new revision).
    assert_eq!(drawn.get(), first + 1);
    // Another look draws the settled entry on screen (the prompt) again too.
    frame(1);
    assert_eq!(drawn.get(), first + 3);
}
