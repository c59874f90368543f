//! The model's replies as markdown (pulldown-cmark): headings, emphasis, inline code,
//! lists, block quotes, tables, links, rules and fenced code with syntax highlighting,
//! as styled rows of a given width.
//!
//! A line break in the source is a line break on screen (the model writes lines as it
//! means them to be read), and blocks are one blank row apart. A reply still streaming
//! renders as far as it goes: an open code fence is code up to the end.
//!
//! A long reply is cut into pieces between its top-level blocks ([`pieces`]), each
//! rendered alone and kept apart, so a reply of many thousands of lines is laid out
//! only where it is seen.

mod highlight;
mod style;
mod table;

use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{spans_width, width_of, wrap};
pub(in crate::tui) use highlight::{code_lines, warm_up};
use style::{code_style, dim, heading_style, link_style, marker_style, quote_style};
use table::Table;

/// The least text a piece holds (but the last): big enough that a reply is a few
/// pieces, small enough that a piece is cheap to lay out again.
const PIECE_BYTES: usize = 2_048;

/// The markdown this renderer reads: CommonMark with tables, strikethrough and task
/// lists.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Where `text` is cut into pieces that render alone exactly as they render together:
/// only between top-level blocks, each piece but the last at least [`PIECE_BYTES`].
/// Text with link reference definitions is one piece, since a reference may be used
/// in another piece than the one defining it.
pub(super) fn pieces(text: &str) -> Vec<Range<usize>> {
    if text.len() <= PIECE_BYTES {
        return std::iter::once(0..text.len()).collect();
    }
    let mut starts = Vec::new();
    let mut depth = 0usize;
    let mut events = Parser::new_ext(text, options()).into_offset_iter();
    for (event, range) in &mut events {
        match event {
            Event::Start(_) => {
                if depth == 0 {
                    starts.push(range.start);
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            _ if depth == 0 => starts.push(range.start),
            _ => {}
        }
    }
    if events.reference_definitions().iter().next().is_some() {
        return std::iter::once(0..text.len()).collect();
    }
    let mut cuts = vec![0];
    for start in starts {
        if cuts.last().is_some_and(|&last| start >= last + PIECE_BYTES) {
            cuts.push(start);
        }
    }
    cuts.push(text.len());
    cuts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// `text` as rows of at most `width` cells.
pub(super) fn render(text: &str, width: usize) -> Vec<Line<'static>> {
    let mut renderer = Renderer::new(width);
    for event in Parser::new_ext(text, options()) {
        renderer.event(event);
    }
    renderer.flush();
    renderer.rows
}

/// A block that puts something before each of its rows.
enum Nest {
    /// A block quote: a bar.
    Quote,
    /// A list item: its marker on its first row, as many spaces on the others.
    Item { marker: String, shown: bool },
}

/// An open list.
struct List {
    /// The next item's number, in an ordered list.
    next: Option<u64>,
    /// Whether its items hold paragraphs (a loose list): then they are a row apart.
    loose: bool,
}

/// An open link or image: where its text started, and where it points.
struct Link {
    url: String,
    line: usize,
    span: usize,
}

/// Turns parser events into rows.
struct Renderer {
    width: usize,
    rows: Vec<Line<'static>>,
    nest: Vec<Nest>,
    lists: Vec<List>,
    /// The inline text of the block being read, a line per entry.
    lines: Vec<Vec<Span<'static>>>,
    /// The open inline styles (emphasis, strong, links), innermost last.
    styles: Vec<Style>,
    links: Vec<Link>,
    /// The style of the block being read (a heading's).
    block_style: Style,
    /// Whether a blank row goes before the next block.
    blank: bool,
    /// The blank row due before the next row shown.
    due_blank: Option<Line<'static>>,
    /// An open code block: its info string and its text so far.
    code: Option<(String, String)>,
    table: Option<Table>,
}

impl Renderer {
    fn new(width: usize) -> Renderer {
        Renderer {
            width,
            rows: Vec::new(),
            nest: Vec::new(),
            lists: Vec::new(),
            lines: Vec::new(),
            styles: Vec::new(),
            links: Vec::new(),
            block_style: Style::default(),
            blank: false,
            due_blank: None,
            code: None,
            table: None,
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some((_, code)) => code.push_str(&text),
                None => self.text(&text, self.style()),
            },
            Event::Code(code) => self.text(&code, self.style().patch(code_style())),
            Event::Html(html) => {
                // A block of HTML is shown as it was written.
                for line in html.lines() {
                    self.lines.push(vec![Span::styled(line.to_owned(), dim())]);
                }
            }
            Event::InlineHtml(html) => self.text(&html, self.style().patch(dim())),
            Event::SoftBreak | Event::HardBreak => {
                if self.table.is_some() {
                    self.text(" ", self.style());
                } else {
                    self.lines.push(Vec::new());
                }
            }
            Event::Rule => {
                self.open_block();
                let (first, _) = self.leads();
                let room = self.width.saturating_sub(spans_width(&first)).max(1);
                self.emit(vec![Span::styled("─".repeat(room), dim())]);
                self.blank = true;
            }
            Event::TaskListMarker(done) => {
                self.text(if done { "[x] " } else { "[ ] " }, self.style());
            }
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]"), self.style()),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math, self.style()),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                if matches!(self.nest.last(), Some(Nest::Item { .. }))
                    && let Some(list) = self.lists.last_mut()
                {
                    list.loose = true;
                }
                self.open_block();
            }
            Tag::Heading { level, .. } => {
                self.open_block();
                self.block_style = heading_style(level);
            }
            Tag::BlockQuote(_) => {
                self.open_block();
                self.nest.push(Nest::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.open_block();
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.into_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((info, String::new()));
            }
            Tag::HtmlBlock => self.open_block(),
            Tag::List(start) => {
                self.open_block();
                self.lists.push(List {
                    next: start,
                    loose: false,
                });
            }
            Tag::Item => {
                self.flush();
                // Items of a tight list follow each other without a blank row.
                if !self.lists.last().is_some_and(|l| l.loose) {
                    self.blank = false;
                }
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut().and_then(|l| l.next.as_mut()) {
                    Some(n) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    None => ["• ", "◦ ", "▪ "][depth % 3].to_owned(),
                };
                self.nest.push(Nest::Item {
                    marker,
                    shown: false,
                });
            }
            Tag::Table(aligns) => {
                self.open_block();
                self.table = Some(Table::new(aligns));
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.row();
                }
            }
            Tag::TableCell => self.lines.clear(),
            Tag::Emphasis => self.push_style(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::default().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.push_style(Style::default().add_modifier(Modifier::CROSSED_OUT));
            }
            Tag::Link { dest_url, .. } => {
                self.open_link(dest_url.into_string());
                self.push_style(link_style());
            }
            Tag::Image { dest_url, .. } => {
                self.text("[image: ", self.style());
                self.open_link(dest_url.into_string());
                self.push_style(link_style());
            }
            Tag::Superscript
            | Tag::Subscript
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.push_style(Style::default()),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.flush();
                self.blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.block_style = Style::default();
                self.blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.nest.pop();
                self.blank = true;
            }
            TagEnd::CodeBlock => {
                if let Some((info, code)) = self.code.take() {
                    for line in highlight::code_lines(&info, &code) {
                        let (mut first, mut hang) = self.leads();
                        first.push(Span::raw(CODE_INDENT));
                        hang.push(Span::raw(CODE_INDENT));
                        let rows = wrap(&first, &line, &hang, self.width);
                        self.push_rows(rows);
                    }
                }
                self.blank = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.blank = true;
            }
            TagEnd::Item => {
                self.flush();
                // An empty item still shows its marker.
                if matches!(self.nest.last(), Some(Nest::Item { shown: false, .. })) {
                    self.emit(Vec::new());
                }
                self.nest.pop();
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let (first, _) = self.leads();
                    let room = self.width.saturating_sub(spans_width(&first)).max(1);
                    for line in table.lines(room) {
                        self.emit(line.spans);
                    }
                }
                self.blank = true;
            }
            TagEnd::TableHead | TagEnd::TableRow => {}
            TagEnd::TableCell => {
                let spans = self.lines.drain(..).flatten().collect();
                if let Some(table) = &mut self.table {
                    table.cell(spans);
                }
            }
            TagEnd::Link => {
                self.styles.pop();
                self.close_link("");
            }
            TagEnd::Image => {
                self.styles.pop();
                self.close_link("]");
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.styles.pop();
            }
        }
    }

    /// A block starts: what was read before it is shown, and a blank row is due
    /// before its first row if the block before it asked for one (it is left out if
    /// the block shows nothing, as a code fence just opened).
    fn open_block(&mut self) {
        self.flush();
        if self.blank && !self.rows.is_empty() {
            let (_, hang) = self.leads();
            let mut row = Line::from(hang);
            // The blank row keeps a quote's bar, not the spaces after it.
            if let Some(last) = row.spans.last_mut() {
                let trimmed = last.content.trim_end().to_owned();
                last.content = trimmed.into();
            }
            self.due_blank = Some(row);
        }
        self.blank = false;
    }

    /// Adds rows, after the blank row due before them.
    fn push_rows(&mut self, rows: Vec<Line<'static>>) {
        if rows.is_empty() {
            return;
        }
        if let Some(blank) = self.due_blank.take() {
            self.rows.push(blank);
        }
        self.rows.extend(rows);
        self.shown();
    }

    /// Shows the inline text read so far, a row (or more, wrapped) per line.
    fn flush(&mut self) {
        if self.table.is_some() {
            return;
        }
        let mut lines = std::mem::take(&mut self.lines);
        // A break at the end of a block starts no line of its own.
        while lines.last().is_some_and(Vec::is_empty) {
            lines.pop();
        }
        let style = self.block_style;
        for line in lines {
            let spans = line
                .into_iter()
                .map(|s| {
                    let patched = style.patch(s.style);
                    s.style(patched)
                })
                .collect();
            self.emit(spans);
        }
    }

    /// Shows one line of content after the leads of the open blocks, wrapped.
    fn emit(&mut self, content: Vec<Span<'static>>) {
        let (first, hang) = self.leads();
        let rows = wrap(&first, &content, &hang, self.width);
        self.push_rows(rows);
    }

    /// What the open quotes and items put before a block's first row and its others.
    fn leads(&self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut hang = Vec::new();
        for nest in &self.nest {
            match nest {
                Nest::Quote => {
                    first.push(Span::styled("│ ", quote_style()));
                    hang.push(Span::styled("│ ", quote_style()));
                }
                Nest::Item { marker, shown } => {
                    let indent = " ".repeat(width_of(marker));
                    first.push(if *shown {
                        Span::raw(indent.clone())
                    } else {
                        Span::styled(marker.clone(), marker_style())
                    });
                    hang.push(Span::raw(indent));
                }
            }
        }
        (first, hang)
    }

    /// Every open item's marker has been shown.
    fn shown(&mut self) {
        for nest in &mut self.nest {
            if let Nest::Item { shown, .. } = nest {
                *shown = true;
            }
        }
    }

    fn text(&mut self, text: &str, style: Style) {
        if self.lines.is_empty() {
            self.lines.push(Vec::new());
        }
        if let Some(line) = self.lines.last_mut() {
            line.push(Span::styled(text.to_owned(), style));
        }
    }

    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |style, inner| style.patch(*inner))
    }

    fn push_style(&mut self, style: Style) {
        self.styles.push(style);
    }

    fn open_link(&mut self, url: String) {
        let line = self.lines.len().max(1) - 1;
        let span = self.lines.get(line).map_or(0, Vec::len);
        self.links.push(Link { url, line, span });
    }

    /// Ends a link: its address follows its text unless the text is the address.
    fn close_link(&mut self, closing: &str) {
        let Some(link) = self.links.pop() else {
            return;
        };
        let text: String = self
            .lines
            .iter()
            .skip(link.line)
            .enumerate()
            .flat_map(|(n, line)| line.iter().skip(if n == 0 { link.span } else { 0 }))
            .map(|s| s.content.as_ref())
            .collect();
        if !closing.is_empty() {
            self.text(closing, self.style());
        }
        let bare = link.url.strip_prefix("mailto:").unwrap_or(&link.url);
        if !link.url.is_empty() && text != link.url && text != bare {
            self.text(&format!(" ({})", link.url), self.style().patch(dim()));
        }
    }
}

/// How far code is indented under the text around it.
const CODE_INDENT: &str = "  ";

#[cfg(test)]
mod tests;
