//! Auto-pruning: what a model request carries of older tool output.
//!
//! Before each model request the tool results (and images) are counted at their
//! estimated tokens (one per [`BYTES_PER_TOKEN`] bytes, the estimate compaction uses:
//! providers give no count before the request), in the order they came. The newest
//! ones within the protected budget (`[context] prune_protect_tokens`, 40,000 by
//! default) are always sent whole. Older ones are pruned in blocks of half the budget:
//! everything up to the last whole block that lies wholly outside the budget is sent
//! as a one-line stub naming the tool, the bytes and lines pruned and where its whole
//! text is kept. So at least the budget, and at most about half a budget more, of the
//! newest output is sent whole, and the line where pruning stops moves only once a
//! block's worth of
//! output came after it: the request's beginning, which a provider's prompt cache
//! serves, changes once every so many rounds rather than at every round. The results
//! of the current round (the ones the model has not seen yet) are always sent whole,
//! though they count.
//!
//! An image a tool gave (`view_image`) or a prompt brought (`input.attachments`) counts
//! as the estimate compaction gives it, and one pruned is left out of the request; its
//! call's text result, or its prompt's text, stays. The images of the latest prompt are
//! always sent.
//!
//! Only the request is pruned: the conversation the runner keeps, the session log and
//! `history.page` keep every result whole. A pruned result keeps its call and its
//! result item, so no wire format ever sees a call without its result.
//!
//! Pruning is stable: whether a result is pruned depends only on the tokens of the
//! output before it and of all the output, which only grows as the conversation does,
//! so a result once pruned stays pruned — within a turn and on later turns, whose
//! conversation is replayed from the same records.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use magi_provider::Item;

use super::estimate::{BYTES_PER_TOKEN, IMAGE_TOKENS};

/// The file a pruned result's whole text is saved to, in its call's assets folder,
/// when the tool kept no capture of its own.
pub(super) const PRUNED_RESULT_FILE: &str = "pruned-result.txt";
/// The capture `bash` keeps of a command's combined output, in its call's assets.
const COMMAND_OUTPUT_FILE: &str = "output.txt";

/// The items a model request carries: `items` with every tool result pruned (see the
/// module's rule for `protect_tokens`) replaced by a stub and every image pruned left
/// out. Results at `current` and after (the current round) are never pruned; `0`
/// protects everything. `assets` gives a call's assets folder, where a pruned result's
/// text is kept.
pub(super) fn pruned(
    items: &[Item],
    protect_tokens: usize,
    current: usize,
    assets: &dyn Fn(&str) -> Option<PathBuf>,
) -> Vec<Item> {
    let mut sent = items.to_vec();
    if protect_tokens == 0 {
        return sent;
    }
    // The tool of each call, for the stubs.
    let names: HashMap<&str, &str> = items
        .iter()
        .filter_map(|item| match item {
            Item::ToolCall { call_id, name, .. } => Some((call_id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    // The latest prompt's own images are part of what is asked now.
    let latest_prompt = items
        .iter()
        .rposition(|item| matches!(item, Item::User { .. }))
        .unwrap_or(0);
    let tokens = |item: &Item| match item {
        Item::Image { .. } | Item::UserImage { .. } => IMAGE_TOKENS,
        Item::ToolResult { output, .. } => output.len() / BYTES_PER_TOKEN,
        _ => 0,
    };
    let total: usize = items.iter().map(tokens).sum();
    // Output up to here, counted from the conversation's start, is pruned: whole blocks
    // that end before the protected budget begins.
    let block = (protect_tokens / PRUNE_BLOCK_DIVISOR).max(1);
    let pruned_up_to = total.saturating_sub(protect_tokens) / block * block;
    let mut position = 0usize;
    let mut dropped_images = Vec::new();
    for (index, item) in items.iter().enumerate() {
        position = position.saturating_add(tokens(item));
        if position > pruned_up_to {
            break;
        }
        let protected =
            index >= current || matches!(item, Item::UserImage { .. }) && index > latest_prompt;
        if protected {
            continue;
        }
        match item {
            Item::Image { .. } | Item::UserImage { .. } => dropped_images.push(index),
            Item::ToolResult {
                call_id,
                output,
                is_error,
            } => {
                let name = names.get(call_id.as_str()).copied().unwrap_or("tool");
                let stub = stub(name, output, assets(call_id).as_deref());
                // A result shorter than its stub is sent as it is: nothing would be
                // saved.
                if stub.len() < output.len() {
                    sent[index] = Item::ToolResult {
                        call_id: call_id.clone(),
                        output: stub,
                        is_error: *is_error,
                    };
                }
            }
            _ => {}
        }
    }
    for index in dropped_images.into_iter().rev() {
        // Highest first, so each index still names its item.
        sent.remove(index);
    }
    sent
}

/// The protected budget over this is the block older output is pruned in.
const PRUNE_BLOCK_DIVISOR: usize = 2;

/// The one-line stub of a pruned result of tool `name`.
fn stub(name: &str, output: &str, assets: Option<&Path>) -> String {
    let lines = output.lines().count();
    let what = format!(
        "[pruned from the context: the result of `{name}`, {} bytes in {lines} lines",
        output.len()
    );
    match kept_at(name, output, assets) {
        Some(path) => format!(
            "{what}; its whole text is kept at {}: read it to see it again]",
            path.display()
        ),
        None if name == "bash" => {
            format!(
                "{what}; run the command again, or read a background job's output with bash_log]"
            )
        }
        None => format!("{what}; call `{name}` again with the same arguments to see it again]"),
    }
}

/// Where the whole text of a pruned result is kept: the command's own capture when
/// `bash` kept one, else the text saved once to [`PRUNED_RESULT_FILE`]. None when the
/// call has no assets folder (no session) or the file cannot be written.
fn kept_at(name: &str, output: &str, assets: Option<&Path>) -> Option<PathBuf> {
    let dir = assets?;
    if name == "bash" {
        let capture = dir.join(COMMAND_OUTPUT_FILE);
        if capture.is_file() {
            return Some(capture);
        }
    }
    let saved = dir.join(PRUNED_RESULT_FILE);
    // Written once: the stub, and so the request prefix, stays the same afterwards.
    if !saved.is_file() {
        std::fs::create_dir_all(dir).ok()?;
        std::fs::write(&saved, output).ok()?;
    }
    Some(saved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(items: &mut Vec<Item>, n: usize, bytes: usize) {
        let id = format!("c{n}");
        items.push(Item::ToolCall {
            call_id: id.clone(),
            name: "read".into(),
            arguments: "{}".into(),
        });
        items.push(Item::ToolResult {
            call_id: id,
            output: "x\n".repeat(bytes / 2),
            is_error: false,
        });
    }

    fn stubs(items: &[Item]) -> Vec<bool> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::ToolResult { output, .. } => Some(output.starts_with("[pruned")),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn older_results_outside_the_budget_become_stubs_and_stay_so() {
        let none = |_: &str| None;
        let mut items = vec![Item::User { text: "go".into() }];
        let mut seen: Vec<Vec<bool>> = Vec::new();
        for n in 0..8 {
            round(&mut items, n, 48 * 1024);
            // The newest round is the current one.
            let current = items.len() - 2;
            let sent = pruned(&items, 40_000, current, &none);
            assert_eq!(sent.len(), items.len(), "no item is dropped");
            seen.push(stubs(&sent));
        }
        // 48 KiB is ~12k tokens: of eight, ~98k tokens, the first 40k (two blocks of
        // 20k, wholly outside the newest 40k) hold three whole results, now stubs.
        assert_eq!(
            seen[7],
            [true, true, true, false, false, false, false, false]
        );
        // Once pruned, a result stays pruned.
        for pair in seen.windows(2) {
            for (before, after) in pair[0].iter().zip(&pair[1]) {
                assert!(!before || *after);
            }
        }
        let sent = pruned(&items, 40_000, items.len() - 2, &none);
        let Item::ToolResult { output, .. } = &sent[2] else {
            panic!("a result")
        };
        assert!(
            output.contains("`read`") && output.contains("49152 bytes"),
            "{output}"
        );
    }

    #[test]
    fn an_old_image_outside_the_budget_is_left_out_and_a_new_one_kept() {
        let image = |id: &str| Item::Image {
            call_id: id.into(),
            media_type: "image/png".into(),
            data: "AAAA".into(),
        };
        let mut items = Vec::new();
        round(&mut items, 1, 8);
        items.push(image("c1"));
        round(&mut items, 2, 8);
        items.push(image("c2"));
        let current = items.len();
        let assets = |_: &str| None;
        // Room for one image: the newer one stays, the older one goes, its result not.
        let sent = pruned(&items, 1_000, current, &assets);
        let images: Vec<&Item> = sent
            .iter()
            .filter(|i| matches!(i, Item::Image { .. }))
            .collect();
        assert_eq!(images, [&image("c2")]);
        assert_eq!(sent.len(), items.len() - 1);
        assert!(matches!(&sent[1], Item::ToolResult { call_id, .. } if call_id == "c1"));
        // The current round keeps its image whatever the budget.
        let sent = pruned(&items, 1, 3, &assets);
        assert!(sent.contains(&image("c2")));
        assert!(!sent.contains(&image("c1")));
    }

    #[test]
    fn an_old_prompt_image_outside_the_budget_is_left_out_and_the_latest_kept() {
        let image = |data: &str| Item::UserImage {
            media_type: "image/png".into(),
            data: data.into(),
        };
        let prompt = |text: &str| Item::User { text: text.into() };
        let mut items = vec![prompt("see @a.png"), image("old")];
        round(&mut items, 1, 8);
        items.push(prompt("and @b.png"));
        items.push(image("new"));
        let assets = |_: &str| None;
        // Nothing is current before a turn's first request; the latest prompt's image
        // is sent all the same, even with no room for it, and the older one is not.
        let sent = pruned(&items, 1, items.len(), &assets);
        assert!(sent.contains(&image("new")));
        assert!(!sent.contains(&image("old")));
        assert!(sent.contains(&prompt("see @a.png")));
        // With room for both, both go.
        let sent = pruned(&items, 2 * IMAGE_TOKENS + 100, items.len(), &assets);
        assert_eq!(sent, items);
    }

    #[test]
    fn pruning_moves_in_blocks_so_the_request_beginning_changes_rarely() {
        let none = |_: &str| None;
        let mut items = vec![Item::User { text: "go".into() }];
        let mut before: Vec<bool> = Vec::new();
        let mut changes = 0;
        // 200 rounds of about 1,000 tokens each, with the default budget of 40,000.
        for n in 0..200 {
            round(&mut items, n, 4_000);
            let now = stubs(&pruned(&items, 40_000, items.len() - 2, &none));
            if now[..before.len()] != before[..] {
                changes += 1;
            }
            before = now;
        }
        // A block is 20,000 tokens, about 20 rounds: the stubs change about once every
        // 20 rounds (pruning one result a round would change them 160 times).
        assert!((7..=9).contains(&changes), "{changes}");
        // The newest 40,000 tokens stay whole, and no more than a block besides.
        let whole = before.iter().filter(|pruned| !**pruned).count();
        assert!((40..=61).contains(&whole), "{whole}");
    }

    #[test]
    fn the_current_round_is_never_pruned_and_zero_turns_it_off() {
        let none = |_: &str| None;
        let mut items = Vec::new();
        for n in 0..4 {
            round(&mut items, n, 200_000);
        }
        assert_eq!(stubs(&pruned(&items, 1, 0, &none)), [false; 4]);
        assert_eq!(
            stubs(&pruned(&items, 1, 4, &none)),
            [true, true, false, false]
        );
        assert_eq!(stubs(&pruned(&items, 0, 8, &none)), [false; 4]);
    }

    #[test]
    fn a_pruned_result_is_saved_once_and_the_stub_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let assets = |id: &str| Some(dir.path().join(id));
        let mut items = Vec::new();
        for n in 0..3 {
            round(&mut items, n, 4000);
        }
        let sent = pruned(&items, 1, 6, &assets);
        let saved = dir.path().join("c0").join(PRUNED_RESULT_FILE);
        let Item::ToolResult { output, .. } = &sent[1] else {
            panic!("a result")
        };
        assert!(output.contains(&saved.display().to_string()), "{output}");
        assert_eq!(std::fs::read_to_string(&saved).unwrap(), "x\n".repeat(2000));
        assert_eq!(sent, pruned(&items, 1, 6, &assets), "the same stub again");
    }
}
