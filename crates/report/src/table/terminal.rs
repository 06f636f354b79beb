//! Terminal renderer: aligned plain-text columns, a rule under the header and above totals,
//! published columns set apart by a `|`, fitted to a maximum width.

use super::{Align, Cell, Table};
use crate::error::ReportError;

/// Narrowest a text column is squeezed to when the table must fit a width (ellipsis included).
const MIN_TEXT_WIDTH: usize = 4;

/// Renders `table` for a terminal. With `max_width`, the gaps shrink and then the widest text
/// columns are cut with `…` until the table fits; numbers are never cut, so a table of numbers
/// wider than `max_width` is printed wider rather than wrong.
pub fn render(table: &Table, max_width: Option<usize>) -> Result<String, ReportError> {
    table.validate()?;
    let columns = &table.columns;
    let header_names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let header_units: Vec<String> = columns
        .iter()
        .map(|c| match (&c.unit, c.published) {
            (Some(unit), true) => format!("published [{unit}]"),
            (None, true) => "published".to_string(),
            (Some(unit), false) => format!("[{unit}]"),
            (None, false) => String::new(),
        })
        .collect();
    let has_unit_line = header_units.iter().any(|u| !u.is_empty());
    let cells: Vec<Vec<String>> = table
        .rows
        .iter()
        .map(|row| row.iter().map(Cell::display).collect())
        .collect();

    let mut widths: Vec<usize> = (0..columns.len())
        .map(|i| {
            let header = width(&header_names[i]).max(width(&header_units[i]));
            cells
                .iter()
                .map(|row| width(&row[i]))
                .fold(header, usize::max)
        })
        .collect();
    // A column is cuttable only if none of its cells is a number.
    let cuttable: Vec<bool> = (0..columns.len())
        .map(|i| table.rows.iter().all(|row| !row[i].is_number()))
        .collect();
    // A separator stands before each column whose published-ness differs from its left neighbour.
    let separated: Vec<bool> = (0..columns.len())
        .map(|i| i > 0 && columns[i].published != columns[i - 1].published)
        .collect();

    let mut gap = 2;
    if let Some(max) = max_width {
        let total = |widths: &[usize], gap: usize| line_width(widths, &separated, gap);
        if total(&widths, gap) > max {
            gap = 1;
        }
        while total(&widths, gap) > max {
            let widest = (0..widths.len())
                .filter(|&i| cuttable[i] && widths[i] > MIN_TEXT_WIDTH)
                .max_by_key(|&i| (widths[i], std::cmp::Reverse(i)));
            match widest {
                Some(i) => widths[i] -= 1,
                None => break,
            }
        }
    }

    let mut out = String::new();
    if !table.title.is_empty() {
        out.push_str(&table.title);
        out.push('\n');
    }
    let aligns: Vec<Align> = columns.iter().map(|c| c.align).collect();
    push_line(&mut out, &header_names, &widths, &aligns, &separated, gap);
    if has_unit_line {
        push_line(&mut out, &header_units, &widths, &aligns, &separated, gap);
    }
    let rule = rule_line(&widths, &separated, gap);
    out.push_str(&rule);
    out.push('\n');
    let first_total = table.first_total_row();
    for (index, row) in cells.iter().enumerate() {
        if index == first_total && index > 0 {
            out.push_str(&rule);
            out.push('\n');
        }
        push_line(&mut out, row, &widths, &aligns, &separated, gap);
    }
    for note in &table.notes {
        for line in wrap(&format!("note: {note}"), max_width.unwrap_or(usize::MAX)) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    Ok(out)
}

/// The terminal width from `$COLUMNS` (set by most shells for interactive use), if it is a
/// plausible number; `None` otherwise (e.g. output piped to a file), meaning "do not fit".
pub fn width_from_env() -> Option<usize> {
    std::env::var("COLUMNS")
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&w: &usize| (20..=1000).contains(&w))
}

fn width(text: &str) -> usize {
    text.chars().count()
}

fn line_width(widths: &[usize], separated: &[bool], gap: usize) -> usize {
    let cells: usize = widths.iter().sum();
    let gaps = gap * widths.len().saturating_sub(1);
    // A separator "|" plus a gap on its right.
    let separators = separated.iter().filter(|&&s| s).count() * (1 + gap);
    cells + gaps + separators
}

fn push_line(
    out: &mut String,
    texts: &[String],
    widths: &[usize],
    aligns: &[Align],
    separated: &[bool],
    gap: usize,
) {
    let mut line = String::new();
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            line.push_str(&" ".repeat(gap));
            if separated[i] {
                line.push('|');
                line.push_str(&" ".repeat(gap));
            }
        }
        let text = cut(text, widths[i]);
        let pad = widths[i] - width(&text);
        let (left, right) = match aligns[i] {
            Align::Left => (0, pad),
            Align::Right => (pad, 0),
            Align::Center => (pad / 2, pad - pad / 2),
        };
        line.push_str(&" ".repeat(left));
        line.push_str(&text);
        line.push_str(&" ".repeat(right));
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

fn rule_line(widths: &[usize], separated: &[bool], gap: usize) -> String {
    let mut line = String::new();
    for (i, &w) in widths.iter().enumerate() {
        if i > 0 {
            line.push_str(&"-".repeat(gap));
            if separated[i] {
                line.push('+');
                line.push_str(&"-".repeat(gap));
            }
        }
        line.push_str(&"-".repeat(w));
    }
    line
}

/// `text` cut to `max` characters, the last one replaced by `…` when anything was cut.
fn cut(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    let mut kept: String = text.chars().take(max.saturating_sub(1)).collect();
    kept.push('…');
    kept
}

/// Greedy word wrap; a word longer than `max` stays whole on its own line.
fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && width(&line) + 1 + width(word) > max {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Column;

    fn sample() -> Table {
        let mut table = Table::new(
            "e2fsck per pass",
            vec![
                Column::text("pass"),
                Column::number("seconds", Some("s")),
                Column::number("MB read", Some("MB")),
                Column::published("seconds", Some("s")),
            ],
        );
        table
            .push_row(vec![
                Cell::text("1"),
                Cell::num(6.6912, 2),
                Cell::num(82.0, 0),
                Cell::published(6.69, 2),
            ])
            .unwrap();
        table
            .push_row(vec![
                Cell::text("2"),
                Cell::num(13.3, 2),
                Cell::num(133.0, 0),
                Cell::published(13.34, 2),
            ])
            .unwrap();
        table
            .push_total(vec![
                Cell::text("total"),
                Cell::num(123.456, 2),
                Cell::num(216.0, 0),
                Cell::published(23.06, 2),
            ])
            .unwrap();
        table.note("published: Ts'o, linux-ext4, Feb 2009");
        table
    }

    /// Char offsets just past every run of non-space characters of a line.
    fn right_edges(line: &str) -> Vec<usize> {
        // End offset (in chars) of every run of non-space characters.
        // The published-column separator is not a value.
        let chars: Vec<char> = line
            .chars()
            .map(|c| if c == '|' { ' ' } else { c })
            .collect();
        (0..chars.len())
            .filter(|&i| chars[i] != ' ' && (i + 1 == chars.len() || chars[i + 1] == ' '))
            .map(|i| i + 1)
            .collect()
    }

    #[test]
    fn numbers_line_up_on_the_right() {
        let text = render(&sample(), None).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "e2fsck per pass");
        // Header names, units, rule, 2 rows, rule, total, note.
        assert_eq!(lines.len(), 9, "{text}");
        let body: Vec<Vec<usize>> = [1, 4, 5, 7]
            .iter()
            .map(|&i| right_edges(lines[i]))
            .collect();
        // Right-aligned numeric columns share right edges on every row, and the header names
        // end there too ("MB read" is two words, so compare against all header edges).
        for edges in &body[2..] {
            assert_eq!(
                &edges[edges.len() - 3..],
                &body[1][body[1].len() - 3..],
                "{text}"
            );
        }
        for edge in &body[1][body[1].len() - 3..] {
            assert!(body[0].contains(edge), "header misaligned: {text}");
        }
        assert_eq!(
            right_edges(lines[2]).last(),
            body[0].last(),
            "units line up too: {text}"
        );
        assert!(
            lines[3].starts_with("-----") && lines[3].contains('+'),
            "{text}"
        );
        assert!(
            lines[5].contains(" | "),
            "published column set apart: {text}"
        );
        assert!(lines[2].contains("published [s]"), "{text}");
        assert!(lines[7].starts_with("total"), "{text}");
        assert_eq!(lines[8], "note: published: Ts'o, linux-ext4, Feb 2009");
    }

    #[test]
    fn left_aligned_text_starts_in_the_same_column() {
        let mut table = Table::new("", vec![Column::number("n", None), Column::text("name")]);
        table
            .push_row(vec![Cell::count(1), Cell::text("a")])
            .unwrap();
        table
            .push_row(vec![Cell::count(1000), Cell::text("longer name")])
            .unwrap();
        let text = render(&table, None).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines[0].find("name").unwrap();
        assert_eq!(&lines[2][start..], "a", "{text}");
        assert_eq!(&lines[3][start..], "longer name", "{text}");
        assert_eq!(&lines[2][..start], "   1  ", "{text}");
    }

    #[test]
    fn fits_a_narrow_terminal_by_cutting_text_only() {
        let mut table = Table::new(
            "",
            vec![Column::text("file"), Column::number("seconds", Some("s"))],
        );
        table
            .push_row(vec![
                Cell::text("a/very/long/path/that/does/not/fit/anywhere.img"),
                Cell::num(738.125, 3),
            ])
            .unwrap();
        let text = render(&table, Some(30)).unwrap();
        for line in text.lines() {
            assert!(line.chars().count() <= 30, "{line:?} in\n{text}");
        }
        assert!(text.contains('…'));
        assert!(text.contains("738.125"), "numbers are never cut: {text}");
        // Too narrow even for the numbers: printed wider, never wrong.
        let text = render(&table, Some(5)).unwrap();
        assert!(text.contains("738.125"));
    }

    #[test]
    fn wrap_keeps_words_whole() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh x", 3), ["abcdefgh", "x"]);
    }
}
