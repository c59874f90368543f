//! Markdown tables: columns as wide as their widest cell when the table fits, else
//! narrowed fairly with the cells wrapped inside them; never wider than the row.

use pulldown_cmark::Alignment;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::super::wrap::{spans_width, width_of, wrap};

/// What separates two columns.
const SEPARATOR: &str = " │ ";
/// The narrowest a column is made before the table gives up on columns.
const NARROWEST: usize = 3;

/// A table being read: its rows of cells, the first row the header.
#[derive(Default)]
pub(super) struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
}

impl Table {
    pub(super) fn new(aligns: Vec<Alignment>) -> Table {
        Table {
            aligns,
            rows: Vec::new(),
        }
    }

    /// Starts a row (the header's too).
    pub(super) fn row(&mut self) {
        self.rows.push(Vec::new());
    }

    /// Adds a cell to the last row.
    pub(super) fn cell(&mut self, spans: Vec<Span<'static>>) {
        match self.rows.last_mut() {
            Some(row) => row.push(spans),
            None => self.rows.push(vec![spans]),
        }
    }

    /// The table's rows within `width` cells.
    pub(super) fn lines(&self, width: usize) -> Vec<Line<'static>> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return Vec::new();
        }
        let natural: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|row| row.get(c))
                    .map(|cell| spans_width(cell))
                    .max()
                    .unwrap_or(0)
                    .max(1)
            })
            .collect();
        let separators = width_of(SEPARATOR) * (columns - 1);
        let Some(widths) = fit_columns(&natural, width.saturating_sub(separators)) else {
            return self.as_lines(width);
        };
        let mut lines = Vec::new();
        for (n, row) in self.rows.iter().enumerate() {
            let header = n == 0;
            let cells: Vec<Vec<Line<'static>>> = widths
                .iter()
                .enumerate()
                .map(|(c, &w)| wrap(&[], row.get(c).map_or(&[][..], Vec::as_slice), &[], w))
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for at in 0..height {
                let mut spans = Vec::new();
                for (c, cell) in cells.iter().enumerate() {
                    if c > 0 {
                        spans.push(Span::styled(SEPARATOR, rule_style()));
                    }
                    let content = cell.get(at).map(|l| l.spans.clone()).unwrap_or_default();
                    let pad = widths[c].saturating_sub(spans_width(&content));
                    let (before, after) = match self.aligns.get(c) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    if before > 0 {
                        spans.push(Span::raw(" ".repeat(before)));
                    }
                    let style = if header {
                        Style::default().add_modifier(Modifier::BOLD)
                    } else {
                        Style::default()
                    };
                    spans.extend(content.into_iter().map(|s| {
                        let patched = style.patch(s.style);
                        s.style(patched)
                    }));
                    // The last column's padding would only be trailing spaces.
                    if after > 0 && c + 1 < columns {
                        spans.push(Span::raw(" ".repeat(after)));
                    }
                }
                lines.push(Line::from(spans));
            }
            if header {
                let rule: Vec<String> = widths.iter().map(|&w| "─".repeat(w)).collect();
                lines.push(Line::from(Span::styled(rule.join("─┼─"), rule_style())));
            }
        }
        lines
    }

    /// Too narrow for columns: each row as one line of its cells, wrapped.
    fn as_lines(&self, width: usize) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for row in &self.rows {
            let mut spans = Vec::new();
            for (c, cell) in row.iter().enumerate() {
                if c > 0 {
                    spans.push(Span::styled(SEPARATOR, rule_style()));
                }
                spans.extend(cell.iter().cloned());
            }
            lines.extend(wrap(&[], &spans, &[Span::raw("  ")], width));
        }
        lines
    }
}

/// Column widths within `room`: the natural ones when they fit, else each column
/// gets its natural width or a fair share of what the narrower ones left, whichever
/// is less. `None` when even [`NARROWEST`] cells a column do not fit.
fn fit_columns(natural: &[usize], room: usize) -> Option<Vec<usize>> {
    if natural.iter().sum::<usize>() <= room {
        return Some(natural.to_vec());
    }
    if room < NARROWEST * natural.len() {
        return None;
    }
    let mut order: Vec<usize> = (0..natural.len()).collect();
    order.sort_by_key(|&c| natural[c]);
    let mut widths = vec![0; natural.len()];
    let mut left = room;
    for (n, &c) in order.iter().enumerate() {
        let share = left / (natural.len() - n);
        widths[c] = natural[c].min(share).max(NARROWEST.min(share));
        left -= widths[c];
    }
    Some(widths)
}

fn rule_style() -> Style {
    Style::default().fg(Color::DarkGray)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_narrow_fairly_and_never_below_three_cells() {
        assert_eq!(fit_columns(&[5, 10], 20), Some(vec![5, 10]));
        assert_eq!(fit_columns(&[5, 30], 20), Some(vec![5, 15]));
        assert_eq!(fit_columns(&[30, 30], 20), Some(vec![10, 10]));
        assert_eq!(fit_columns(&[30, 30, 30], 8), None);
    }
}
