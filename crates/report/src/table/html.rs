//! HTML renderer: a `<table>` with a caption, units in the header, published columns marked
//! with the class `published` (styled apart by the bundle's CSS), totals in `<tfoot>` and
//! `<strong>`.

use super::{Align, Cell, Table};
use crate::error::ReportError;
use crate::escape::escape;

/// Renders `table` as an HTML fragment (a `<table>` followed by a `<ul>` of notes, if any).
pub fn render(table: &Table) -> Result<String, ReportError> {
    table.validate()?;
    let mut out = String::from("<table class=\"report\">\n");
    if !table.title.is_empty() {
        out.push_str(&format!("<caption>{}</caption>\n", escape(&table.title)));
    }
    out.push_str("<thead><tr>");
    for column in &table.columns {
        let mut header = escape(&column.name);
        if let Some(unit) = &column.unit {
            header.push_str(&format!(" <span class=\"unit\">[{}]</span>", escape(unit)));
        }
        if column.published {
            header.push_str("<br/><span class=\"tag\">published</span>");
        }
        out.push_str(&format!(
            "<th{}>{header}</th>",
            attributes(column.align, column.published)
        ));
    }
    out.push_str("</tr></thead>\n");
    let first_total = table.first_total_row();
    let sections = [
        ("tbody", &table.rows[..first_total]),
        ("tfoot", &table.rows[first_total..]),
    ];
    for (tag, rows) in sections {
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!("<{tag}>\n"));
        for row in rows {
            out.push_str("<tr>");
            for (cell, column) in row.iter().zip(&table.columns) {
                let published = matches!(cell, Cell::Published { .. }) || column.published;
                let text = escape(&cell.display());
                // Totals are strong, as the Markdown renderer's `**` says.
                let text = if tag == "tfoot" && !text.is_empty() {
                    format!("<strong>{text}</strong>")
                } else {
                    text
                };
                out.push_str(&format!(
                    "<td{}>{text}</td>",
                    attributes(column.align, published)
                ));
            }
            out.push_str("</tr>\n");
        }
        out.push_str(&format!("</{tag}>\n"));
    }
    out.push_str("</table>\n");
    if !table.notes.is_empty() {
        out.push_str("<ul class=\"notes\">\n");
        for note in &table.notes {
            out.push_str(&format!("<li>{}</li>\n", escape(note)));
        }
        out.push_str("</ul>\n");
    }
    Ok(out)
}

fn attributes(align: Align, published: bool) -> String {
    let mut classes = vec![match align {
        Align::Left => "left",
        Align::Right => "right",
        Align::Center => "center",
    }];
    if published {
        classes.push("published");
    }
    format!(" class=\"{}\"", classes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Column;

    #[test]
    fn escapes_and_marks_published() {
        let mut table = Table::new(
            "<fsck> & \"co\"",
            vec![Column::text("a"), Column::published("s", Some("s"))],
        );
        table
            .push_row(vec![Cell::text("x<y"), Cell::published(1.0, 1)])
            .unwrap();
        table
            .push_total(vec![Cell::text("total"), Cell::Empty])
            .unwrap();
        let html = render(&table).unwrap();
        assert!(
            html.contains("<caption>&lt;fsck&gt; &amp; &quot;co&quot;</caption>"),
            "{html}"
        );
        assert!(html.contains("<td class=\"left\">x&lt;y</td>"), "{html}");
        assert!(
            html.contains("<td class=\"right published\">1.0</td>"),
            "{html}"
        );
        assert!(html.contains("<tfoot>"), "{html}");
        assert!(
            html.contains(
                "<td class=\"left\"><strong>total</strong></td><td class=\"right published\"></td>"
            ),
            "{html}"
        );
        // The fragment is well-formed XML too.
        roxmltree::Document::parse(&format!("<div>{}</div>", html)).unwrap();
    }
}
