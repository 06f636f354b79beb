//! Markdown renderer (GitHub pipe tables): a bold title, a header with units, published
//! numbers in italics under a `(published)` header, totals in bold, notes as a list.

use super::{Align, Cell, Table};
use crate::error::ReportError;

/// Renders `table` as a GitHub-flavoured Markdown pipe table.
pub fn render(table: &Table) -> Result<String, ReportError> {
    table.validate()?;
    let mut out = String::new();
    if !table.title.is_empty() {
        out.push_str(&format!("**{}**\n\n", escape(&table.title)));
    }
    let headers: Vec<String> = table.columns.iter().map(|c| escape(&c.header())).collect();
    out.push_str(&format!("| {} |\n", headers.join(" | ")));
    let rules: Vec<&str> = table
        .columns
        .iter()
        .map(|c| match c.align {
            Align::Left => ":---",
            Align::Right => "---:",
            Align::Center => ":---:",
        })
        .collect();
    out.push_str(&format!("|{}|\n", rules.join("|")));
    let first_total = table.first_total_row();
    for (index, row) in table.rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .map(|cell| {
                let text = escape(&cell.display());
                let text = match cell {
                    Cell::Published { .. } if !text.is_empty() => format!("*{text}*"),
                    _ => text,
                };
                if index >= first_total && !text.is_empty() {
                    format!("**{text}**")
                } else {
                    text
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    if !table.notes.is_empty() {
        out.push('\n');
        for note in &table.notes {
            out.push_str(&format!("- {}\n", escape(note)));
        }
    }
    Ok(out)
}

/// Escapes what would break a pipe table or turn text into markup (also used for the other
/// text of a Markdown report, [`crate::HtmlBundle::to_markdown`]).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' | '*' | '_' | '`' | '\\' | '<' | '>' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Column;

    #[test]
    fn pipe_table_with_published_and_totals() {
        let mut table = Table::new(
            "fsck | ext3",
            vec![
                Column::text("pass"),
                Column::number("seconds", Some("s")),
                Column::published("seconds", Some("s")),
            ],
        );
        table
            .push_row(vec![
                Cell::text("1"),
                Cell::num(6.7, 2),
                Cell::published(6.69, 2),
            ])
            .unwrap();
        table
            .push_total(vec![Cell::text("total"), Cell::num(6.7, 2), Cell::Empty])
            .unwrap();
        table.note("a_b");
        let text = render(&table).unwrap();
        let expected = "**fsck \\| ext3**\n\n\
            | pass | seconds [s] | seconds [s] (published) |\n\
            |:---|---:|---:|\n\
            | 1 | 6.70 | *6.69* |\n\
            | **total** | **6.70** |  |\n\
            \n- a\\_b\n";
        assert_eq!(text, expected);
    }
}
