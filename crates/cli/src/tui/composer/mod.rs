//! The composer: where a prompt is written. Multi-line editing ([`editor`]), pastes
//! whole with large ones as placeholders ([`paste`]), the prompt history kept in
//! `MC_HOME` with Up/Down recall and Ctrl-R search ([`history`], [`search`]), `@`
//! mentions of workspace paths ([`files`], [`fuzzy`]) and Tab completion of slash
//! commands ([`complete`]).
//!
//! Keys (the terminal reports Shift+Enter only when it speaks the keyboard enhancement
//! protocol; Alt+Enter and Ctrl-J work everywhere):
//! - Enter sends; Alt+Enter, Shift+Enter and Ctrl-J start a new line.
//! - Left/Right by character; Alt/Ctrl+Left/Right and Alt-b/Alt-f by word; Home/End and
//!   Ctrl-A/Ctrl-E to the start/end of the line (Home/End only with text in the
//!   composer: when it is empty they scroll the transcript).
//! - Up/Down between lines; on the first/last line (and while going through earlier
//!   prompts) they recall the history, Down past the newest gives back the draft.
//! - Backspace/Delete; Ctrl-U kills to the start of the line, Ctrl-K to its end,
//!   Ctrl-W (and Alt+Backspace) the word before; Ctrl-Y puts the last kill back.
//! - Ctrl-R searches the history: type to narrow, Ctrl-R again for older matches,
//!   Enter takes the match, Esc leaves.
//! - A list of candidates above the composer (`@path`, `/command`): Up/Down choose,
//!   Tab (or Enter) takes one, Esc dismisses it; Enter on a command also sends it.

mod complete;
mod editor;
mod files;
mod fuzzy;
mod history;
mod paste;
mod search;

use std::cell::Cell;
use std::path::PathBuf;

use magi_protocol::text::PromptProblem;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub(super) use complete::{Completion, CompletionKind};
use editor::Editor;
use files::{FileIndex, Walked};
use history::{HISTORY_FILE, History};
use paste::Pastes;
use search::Search;

/// What a key did to the composer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Edit {
    /// The composer used it (or had no use for it but nobody else should have it).
    Done,
    /// Enter: the prompt is to be sent, if the loop can send now ([`Composer::submit`]).
    Submit,
    /// Not a composer key: it belongs to someone else (Home/End on an empty composer).
    NotMine,
}

/// Going through earlier prompts with Up/Down.
#[derive(Debug)]
struct Recall {
    /// The history entry shown.
    at: usize,
    /// What was in the composer before, given back by Down past the newest entry.
    draft: String,
}

/// The composer's state.
pub(super) struct Composer {
    editor: Editor,
    pastes: Pastes,
    history: History,
    /// Set while going through the history; any edit ends it.
    recall: Option<Recall>,
    search: Option<Search>,
    completion: Option<Completion>,
    /// Where the word starts whose candidates Esc dismissed (they stay hidden while the
    /// cursor is in that word).
    dismissed: Option<usize>,
    files: FileIndex,
    /// The workspace, walked for `@` mentions.
    root: PathBuf,
    /// The first row shown when the text is taller than the composer (kept between
    /// frames so the view moves only as far as the cursor needs).
    pub(super) scroll: Cell<usize>,
}

impl Composer {
    /// A composer for the workspace `root` with the history in `MC_HOME` (found as the
    /// backend finds it).
    pub(super) fn open(root: PathBuf) -> Composer {
        let history = match magi_core::home_path(&magi_config::Env::from_process()) {
            Ok(home) => History::load(home.join(HISTORY_FILE)),
            Err(why) => History::in_memory(why),
        };
        Composer::with_history(root, history)
    }

    fn with_history(root: PathBuf, history: History) -> Composer {
        Composer {
            editor: Editor::default(),
            pastes: Pastes::default(),
            history,
            recall: None,
            search: None,
            completion: None,
            dismissed: None,
            files: FileIndex::default(),
            root,
            scroll: Cell::new(0),
        }
    }

    /// The text, with paste markers (see [`Composer::label`]).
    pub(super) fn text(&self) -> &str {
        self.editor.text()
    }

    /// The cursor, a byte index into [`Composer::text`].
    pub(super) fn cursor(&self) -> usize {
        self.editor.cursor()
    }

    /// Whether nothing is typed.
    pub(super) fn is_empty(&self) -> bool {
        self.editor.is_empty()
    }

    /// The placeholder drawn for `c` when it is a paste marker.
    pub(super) fn label(&self, c: char) -> Option<String> {
        paste::is_marker(c).then(|| self.pastes.label(c))
    }

    /// The open history search: its query and the prompt it found.
    pub(super) fn search(&self) -> Option<(&str, Option<&str>)> {
        self.search
            .as_ref()
            .map(|s| (s.query.as_str(), s.matched(self.history.entries())))
    }

    /// The candidates shown above the composer.
    pub(super) fn completion(&self) -> Option<&Completion> {
        self.completion.as_ref()
    }

    /// A problem with the history file, to say once in the status line.
    pub(super) fn take_problem(&mut self) -> Option<String> {
        self.history.take_problem()
    }

    /// The whole text, paste placeholders expanded: what an editor is given.
    pub(super) fn expanded(&self) -> String {
        self.pastes.expand(self.editor.text())
    }

    /// Replaces the text (a prompt given back by a refused turn), cursor at the end.
    pub(super) fn set_text(&mut self, text: String) {
        self.editor.set(text);
        self.after_edit();
    }

    /// Empties the composer (Ctrl-C); what it held is the last kill, so Ctrl-Y brings
    /// it back.
    pub(super) fn clear(&mut self) {
        self.editor.kill_all();
        self.search = None;
        self.after_edit();
    }

    /// Lets `edit` change the text as a plain string (the question picker's free
    /// answer); paste placeholders are expanded first, and the cursor ends at the end.
    /// No candidates are offered meanwhile: the picker has the keys.
    pub(super) fn edit_plain<T>(&mut self, edit: impl FnOnce(&mut String) -> T) -> T {
        let mut text = self.pastes.expand(self.editor.text());
        let result = edit(&mut text);
        self.editor.set(text);
        self.recall = None;
        self.completion = None;
        result
    }

    /// Whether the composer takes this key before the other meanings of the key
    /// (Esc stopping a turn, `y`/`n` answering an approval): while the history search
    /// is open, or candidates are shown and the key chooses among them.
    pub(super) fn captures(&self, key: &KeyEvent) -> bool {
        if key.modifiers.contains(KeyModifiers::CONTROL)
            && matches!(key.code, KeyCode::Char('c' | 'd'))
        {
            return false;
        }
        if self.search.is_some() {
            return true;
        }
        match &self.completion {
            Some(_) if key.code == KeyCode::Esc => true,
            Some(completion) => {
                !completion.candidates.is_empty()
                    && matches!(
                        key.code,
                        KeyCode::Up | KeyCode::Down | KeyCode::Tab | KeyCode::Enter
                    )
            }
            None => false,
        }
    }

    /// Applies a key.
    pub(super) fn key(&mut self, key: KeyEvent) -> Edit {
        if self.search.is_some() {
            self.search_key(key);
            return Edit::Done;
        }
        if self.captures(&key) {
            return self.completion_key(key);
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let editor = &mut self.editor;
        match key.code {
            KeyCode::Enter if alt || shift => editor.insert("\n"),
            KeyCode::Char('j') if ctrl => editor.insert("\n"),
            KeyCode::Enter => return Edit::Submit,
            KeyCode::Char('r') if ctrl => {
                let mut search = Search::default();
                search.refresh(self.history.entries());
                self.search = Some(search);
                self.completion = None;
                return Edit::Done;
            }
            KeyCode::Char('a') if ctrl => editor.line_start(),
            KeyCode::Char('e') if ctrl => editor.line_end(),
            KeyCode::Char('u') if ctrl => editor.kill_to_line_start(),
            KeyCode::Char('k') if ctrl => editor.kill_to_line_end(),
            KeyCode::Char('w') if ctrl => editor.kill_word_before(),
            KeyCode::Backspace if alt || ctrl => editor.kill_word_before(),
            // Many terminals send Ctrl-H for Backspace.
            KeyCode::Char('h') if ctrl => editor.backspace(),
            KeyCode::Char('y') if ctrl => editor.yank(),
            KeyCode::Char('b') if alt => editor.word_left(),
            KeyCode::Char('f') if alt => editor.word_right(),
            KeyCode::Left if alt || ctrl => editor.word_left(),
            KeyCode::Right if alt || ctrl => editor.word_right(),
            KeyCode::Left => editor.left(),
            KeyCode::Right => editor.right(),
            KeyCode::Home | KeyCode::End if editor.is_empty() => return Edit::NotMine,
            KeyCode::Home => editor.line_start(),
            KeyCode::End => editor.line_end(),
            KeyCode::Up => {
                if self.recall.is_some() || !self.editor.up() {
                    self.recall_older();
                }
                return self.after_move();
            }
            KeyCode::Down => {
                if self.recall.is_some() {
                    self.recall_newer();
                } else {
                    self.editor.down();
                }
                return self.after_move();
            }
            KeyCode::Backspace => editor.backspace(),
            KeyCode::Delete => editor.delete(),
            KeyCode::Char(c) if !ctrl && !alt && !paste::is_marker(c) => {
                let mut buffer = [0; 4];
                editor.insert(c.encode_utf8(&mut buffer));
            }
            _ => return Edit::Done,
        }
        self.after_edit()
    }

    /// A bracketed paste: inserted whole with its line breaks, a large one as a
    /// placeholder.
    pub(super) fn paste(&mut self, text: &str) {
        let text = paste::normalise(text);
        // Into an open history search it goes as words to look for.
        if let Some(search) = &mut self.search {
            search.query.push_str(&text.replace(['\n', '\t'], " "));
            search.refresh(self.history.entries());
            return;
        }
        let (editor, pastes) = (&self.editor, &mut self.pastes);
        let inserted = pastes.hold(text, |marker| {
            editor.text().contains(marker) || editor.killed().is_some_and(|k| k.contains(marker))
        });
        self.editor.insert(&inserted);
        self.after_edit();
    }

    /// The prompt to send, with its pastes expanded; it goes into the history and the
    /// composer is emptied. A prompt the backend would refuse stays in the composer
    /// and its problem is returned instead.
    pub(super) fn submit(&mut self) -> Result<String, String> {
        let prompt = self.pastes.expand(self.editor.text());
        if let Some(problem) = PromptProblem::of(&prompt) {
            return Err(problem.to_string());
        }
        self.history.push(&prompt);
        self.editor.take();
        self.pastes.clear();
        self.after_edit();
        Ok(prompt)
    }

    /// After a change of the text: history recall ends, the candidates follow.
    fn after_edit(&mut self) -> Edit {
        self.recall = None;
        self.after_move()
    }

    /// After a move of the cursor: the candidates follow the word at the cursor.
    fn after_move(&mut self) -> Edit {
        let (start, word) = self.editor.word_at_cursor();
        if self
            .dismissed
            .is_some_and(|at| at != start || word.is_empty())
        {
            self.dismissed = None;
        }
        self.completion = None;
        if self.dismissed.is_some() || self.search.is_some() {
            return Edit::Done;
        }
        let first_word = !self.editor.text()[..start].contains(|c: char| !c.is_whitespace());
        if let Some(query) = word.strip_prefix('@') {
            self.files.start(self.root.clone());
            self.completion =
                complete::mentions(start, query, self.files.walked(), self.files.is_walking());
        } else if let Some(name) = word.strip_prefix('/').filter(|_| first_word) {
            self.completion = complete::commands(start, name);
        }
        Edit::Done
    }

    fn completion_key(&mut self, key: KeyEvent) -> Edit {
        let Some(completion) = &mut self.completion else {
            return Edit::Done;
        };
        let count = completion.candidates.len();
        match key.code {
            KeyCode::Esc => {
                self.dismissed = Some(completion.start);
                self.completion = None;
            }
            KeyCode::Up => completion.selected = (completion.selected + count - 1) % count.max(1),
            KeyCode::Down => completion.selected = (completion.selected + 1) % count.max(1),
            KeyCode::Tab | KeyCode::Enter => {
                let kind = completion.kind;
                let start = completion.start;
                let Some(chosen) = completion.candidates.get(completion.selected) else {
                    return Edit::Done;
                };
                let insert = chosen.insert.clone();
                self.editor.replace(start, self.editor.cursor(), &insert);
                self.after_edit();
                // Enter on a command runs it, as typing it whole and Enter would.
                if key.code == KeyCode::Enter && kind == CompletionKind::Command {
                    return Edit::Submit;
                }
            }
            _ => {}
        }
        Edit::Done
    }

    fn search_key(&mut self, key: KeyEvent) {
        let Some(search) = &mut self.search else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let entries = self.history.entries();
        match key.code {
            KeyCode::Char('r') if ctrl => search.older(entries),
            KeyCode::Char('g') if ctrl => self.search = None,
            KeyCode::Esc => self.search = None,
            KeyCode::Enter => {
                let matched = search.matched(entries).map(str::to_owned);
                self.search = None;
                if let Some(matched) = matched {
                    self.editor.set(matched);
                    self.after_edit();
                }
            }
            KeyCode::Backspace => {
                search.query.pop();
                search.refresh(entries);
            }
            KeyCode::Char(c) if !ctrl && !paste::is_marker(c) => {
                search.query.push(c);
                search.refresh(entries);
            }
            _ => {}
        }
    }

    /// Up past the first line: the next older prompt (the draft is kept).
    fn recall_older(&mut self) {
        let entries = self.history.entries();
        let at = match &self.recall {
            Some(recall) => recall.at.checked_sub(1),
            None => entries.len().checked_sub(1),
        };
        let Some(at) = at else {
            return;
        };
        let Some(prompt) = entries.get(at).cloned() else {
            return;
        };
        let draft = match self.recall.take() {
            Some(recall) => recall.draft,
            None => self.editor.text().to_owned(),
        };
        self.editor.set(prompt);
        self.recall = Some(Recall { at, draft });
    }

    /// Down while going through the history: the next newer prompt, or the draft.
    fn recall_newer(&mut self) {
        let Some(recall) = self.recall.take() else {
            return;
        };
        match self.history.entries().get(recall.at + 1).cloned() {
            Some(prompt) => {
                self.editor.set(prompt);
                self.recall = Some(Recall {
                    at: recall.at + 1,
                    draft: recall.draft,
                });
            }
            None => self.editor.set(recall.draft),
        }
    }

    /// Whether the workspace walk for `@` mentions is running.
    pub(super) fn walking(&self) -> bool {
        self.files.is_walking()
    }

    /// Resolves when the workspace walk ends (never, when none runs); hand the result
    /// to [`Composer::walked`].
    pub(super) async fn walk_finished(&mut self) -> Walked {
        self.files.finished().await
    }

    /// Keeps the walked paths and shows the candidates they give.
    pub(super) fn walked(&mut self, walked: Walked) {
        self.files.keep(walked);
        self.after_move();
    }
}

#[cfg(test)]
mod tests;
