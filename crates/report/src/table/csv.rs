//! CSV renderer (RFC 4180): a header row, CRLF line ends, fields quoted when they hold a comma,
//! a quote, CR or LF, quotes doubled. Numbers are written at full precision (shortest
//! round-trip form), not at the display precision. Title and notes are not written: CSV has no
//! place for them; use the JSON renderer to keep them.

use super::{Cell, Table};
use crate::error::ReportError;

/// Renders `table` as RFC 4180 CSV. Headers are [`super::Column::header`], so a published
/// column reads e.g. `seconds [s] (published)`.
pub fn render(table: &Table) -> Result<String, ReportError> {
    table.validate()?;
    let mut out = String::new();
    let headers: Vec<String> = table.columns.iter().map(|c| c.header()).collect();
    push_record(&mut out, headers.iter().map(String::as_str));
    for row in &table.rows {
        let fields: Vec<String> = row.iter().map(Cell::machine).collect();
        push_record(&mut out, fields.iter().map(String::as_str));
    }
    Ok(out)
}

fn push_record<'a>(out: &mut String, fields: impl Iterator<Item = &'a str>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(field));
    }
    out.push_str("\r\n");
}

/// One field, quoted if RFC 4180 requires it.
pub fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_rules() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
        assert_eq!(quote(""), "");
    }
}
