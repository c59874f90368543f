//! `tool.cards.styles` through the real binary: a command's colour reaches its card as
//! spans of the sanitized text, live (interim and final) and saved alike, never as
//! markup; a line with a redacted secret keeps no colour; too much colour is left out
//! (null), and without the extension no text block has the field.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Backend;
use magi_protocol::cards::{
    Attribute, Block, Card, CardState, Colour, STYLE_SPANS_PER_BLOCK, Style, TextBlock,
};
use magi_protocol::messages::{Event, RunFinished, RunOutcome};
use magi_protocol::names::TOOL_CARD_STYLES;
use magi_testkit::MockServer;

/// The text block of a card, if it has one.
fn text_block(card: &Card) -> Option<&TextBlock> {
    card.blocks.iter().find_map(|b| match b {
        Block::Text(t) => Some(t),
        _ => None,
    })
}

/// The styled pieces of a text block: each span's text and style.
fn styled(block: &TextBlock) -> Vec<(String, Style)> {
    let spans = block.styles.clone().flatten().unwrap_or_default();
    spans
        .iter()
        .map(|s| {
            (
                block.text[s.start as usize..s.end as usize].to_owned(),
                s.style(),
            )
        })
        .collect()
}

/// A turn that ran one command, and what it sent.
struct Ran {
    backend: Backend,
    session: String,
    cards: Vec<Card>,
    finished: RunFinished,
    // Kept for as long as the backend runs.
    _env: TestEnv,
    _mock: MockServer,
}

/// Runs one turn whose model runs `command` with `bash`, with or without the extension.
async fn run(command: &str, styles: bool) -> Ran {
    let mock = MockServer::start().await;
    let env = bash_turn_env(&mock, command, "Done.");
    let mut backend = env.spawn();
    let mut names = vec![
        "session.create",
        "turn.start",
        "approval.answer",
        "status",
        "history.page",
        "shutdown",
        "tool.cards",
    ];
    if styles {
        names.push(TOOL_CARD_STYLES);
    }
    let result = backend.initialize(&names).await.unwrap().unwrap();
    let advertised = result.capabilities.iter().any(|n| n == TOOL_CARD_STYLES);
    assert_eq!(advertised, styles);
    let descriptor = result.extensions.and_then(|e| e.tool_card_styles);
    assert_eq!(
        descriptor,
        styles.then(magi_protocol::cards::ToolCardStylesDescriptor::schema_1)
    );
    let session = session_with_turn(&mut backend, "run it").await;
    let mut cards = Vec::new();
    let finished = loop {
        match next(&mut backend).await {
            magi_client::Incoming::Event {
                event: Event::ToolCard(e),
                ..
            } => cards.push(e.card),
            magi_client::Incoming::Event {
                event: Event::RunFinished(f),
                ..
            } => break f,
            _ => {}
        }
    };
    assert_eq!(finished.outcome, RunOutcome::Completed);
    Ran {
        backend,
        session,
        cards,
        finished,
        _env: env,
        _mock: mock,
    }
}

fn style(fg: Option<Colour>, bg: Option<Colour>, attributes: &[Attribute]) -> Style {
    Style {
        fg,
        bg,
        attributes: attributes.to_vec(),
    }
}

#[tokio::test]
async fn a_commands_colour_reaches_its_card_as_spans_live_and_saved() {
    // Bold red, a 256-colour amber and a 24-bit colour; a cursor move, a title and a
    // hyperlink that must go whole; a coloured line with a secret-like token.
    let command = "printf '\\033[1;31merror\\033[0m: bad 日本\\n'; \
                   printf '\\033[38;5;208mamber\\033[0m \\033[48;2;1;2;3mrgb\\033[0m\\033[2K\\033]0;owned\\007\\n'; \
                   printf '\\033]8;;https://example.com\\033\\\\link\\033]8;;\\033\\\\ \\033[4mplain?\\033[24m\\n'; \
                   printf '\\033[32msk-abcdefghijklmnop1234\\033[0m\\n'";
    let mut ran = run(command, true).await;
    let last = ran.cards.last().unwrap();
    assert_eq!(last.state, CardState::Finished);
    let block = text_block(last).unwrap();
    assert_eq!(
        block.text,
        "error: bad 日本\namber rgb\nlink plain?\n[redacted]"
    );
    assert_eq!(
        styled(block),
        vec![
            (
                "error".to_owned(),
                style(Some(Colour::Indexed(1)), None, &[Attribute::Bold])
            ),
            (
                "amber".to_owned(),
                style(Some(Colour::Indexed(208)), None, &[])
            ),
            (
                "rgb".to_owned(),
                style(None, Some(Colour::Rgb(1, 2, 3)), &[])
            ),
            (
                "plain?".to_owned(),
                style(None, None, &[Attribute::Underline])
            ),
        ],
        "the redacted line keeps no colour"
    );
    // Saved as it was shown live, and the page checks as a client library checks it.
    let params = magi_protocol::messages::HistoryPageParams {
        session_id: ran.session.clone(),
        revision: ran.finished.revision.clone().unwrap(),
        cursor: None,
    };
    let page = ran
        .backend
        .call::<magi_protocol::methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap();
    magi_client::cards::check_page(&page, true, true).unwrap();
    assert!(magi_client::cards::check_page(&page, true, false).is_err());
    let saved: Vec<Card> = page
        .entries
        .iter()
        .filter_map(|e| match &e.tool_card {
            magi_protocol::messages::SavedCard::Card(card) => Some((**card).clone()),
            _ => None,
        })
        .collect();
    let saved_block = text_block(&saved[0]).unwrap();
    assert_eq!(saved_block, block);
    shutdown_clean(&mut ran.backend).await;
}

#[tokio::test]
async fn a_running_commands_newest_lines_keep_their_colour() {
    let command =
        "for i in 1 2 3 4 5 6; do printf '\\033[33mwarn\\033[0m %s\\n' $i; sleep 0.3; done";
    let mut ran = run(command, true).await;
    let interim: Vec<&TextBlock> = ran
        .cards
        .iter()
        .filter(|c| c.state == CardState::Running)
        .filter_map(text_block)
        .collect();
    assert!(!interim.is_empty(), "no interim revision with output");
    for block in interim {
        let pieces = styled(block);
        assert_eq!(pieces.len(), block.text.lines().count(), "{block:?}");
        assert!(
            pieces
                .iter()
                .all(|(text, s)| text == "warn" && s.fg == Some(Colour::Indexed(3))),
            "{pieces:?}"
        );
    }
    shutdown_clean(&mut ran.backend).await;
}

#[tokio::test]
async fn colour_past_the_bound_is_left_out_and_said_so() {
    // One line of alternating colours: more spans than a block may list.
    let colours = STYLE_SPANS_PER_BLOCK + 10;
    let command = format!(
        "for i in $(seq 1 {colours}); do printf '\\033[3%dmx' $((i % 2 + 1)); done; printf '\\033[0m\\n'"
    );
    let mut ran = run(&command, true).await;
    let block = text_block(ran.cards.last().unwrap()).unwrap();
    assert_eq!(block.text, "x".repeat(colours));
    assert_eq!(block.styles, Some(None), "left out, not cut");
    shutdown_clean(&mut ran.backend).await;
}

#[tokio::test]
async fn without_the_extension_no_text_block_carries_styles() {
    let mut ran = run("printf '\\033[31mred\\033[0m\\n'", false).await;
    let block = text_block(ran.cards.last().unwrap()).unwrap();
    assert_eq!(block.text, "red");
    assert_eq!(block.styles, None);
    let saved = saved_cards(
        &mut ran.backend,
        &ran.session,
        &ran.finished.revision.unwrap(),
    )
    .await;
    assert_eq!(text_block(&saved[0]).unwrap().styles, None);
    shutdown_clean(&mut ran.backend).await;
}
