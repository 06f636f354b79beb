//! The e2fsck per-pass table, shaped like the published ones (Ts'o, linux-ext4, Feb 2009):
//! pass, time, MB read, requests, MB/s, a total row, and published times in their own column.
//! It only arranges numbers the caller computed; the one derived figure, MB/s, is MB read over
//! time, as the published tables print it.

use super::{Cell, Column, Table};
use crate::error::ReportError;

/// One pass (or the total) of one e2fsck run, as the caller measured or predicted it.
#[derive(Debug, Clone, PartialEq)]
pub struct PassRow {
    /// Pass label, e.g. `"1"`, `"2"`, `"total"`.
    pub pass: String,
    /// Wall time of the pass, in seconds.
    pub seconds: f64,
    /// Data read by the pass, in MB (the unit e2fsck `-tt` prints: 2^20 bytes).
    pub mb_read: f64,
    /// Requests issued by the pass, if known.
    pub requests: Option<u64>,
}

/// MB/s is left blank below this much data or time: for passes that read next to nothing the
/// ratio is noise (the published tables leave those cells blank too).
const MIN_MB_FOR_RATE: f64 = 1.0;
const MIN_SECONDS_FOR_RATE: f64 = 0.05;

fn rate(row: &PassRow) -> Cell {
    if row.mb_read >= MIN_MB_FOR_RATE && row.seconds >= MIN_SECONDS_FOR_RATE {
        Cell::num(row.mb_read / row.seconds, 2)
    } else {
        Cell::Empty
    }
}

/// Builds the per-pass table of one run: a row per pass, then `total` below a rule. With
/// `published` (pass label → seconds, e.g. `[("total", 738.1)]`), a published time column is
/// added and filled where the labels match; labels that match no row are refused, so a typo
/// cannot silently drop a published number.
pub fn pass_table(
    title: &str,
    passes: &[PassRow],
    total: &PassRow,
    published: Option<&[(String, f64)]>,
) -> Result<Table, ReportError> {
    let mut columns = vec![
        Column::text("pass"),
        Column::number("time", Some("s")),
        Column::number("read", Some("MB")),
        Column::number("requests", None),
        Column::number("rate", Some("MB/s")),
    ];
    if published.is_some() {
        columns.push(Column::published("time", Some("s")));
    }
    let mut table = Table::new(title, columns);
    let published_cell = |pass: &str| {
        published.map(|list| match list.iter().find(|(label, _)| label == pass) {
            Some((_, seconds)) => Cell::published(*seconds, 2),
            None => Cell::Empty,
        })
    };
    let row = |r: &PassRow| {
        let mut cells = vec![
            Cell::text(r.pass.clone()),
            Cell::num(r.seconds, 2),
            Cell::num(r.mb_read, 0),
            r.requests.map(Cell::count).unwrap_or(Cell::Empty),
            rate(r),
        ];
        cells.extend(published_cell(&r.pass));
        cells
    };
    for pass in passes {
        table.push_row(row(pass))?;
    }
    table.push_total(row(total))?;
    if let Some(list) = published {
        for (label, _) in list {
            if label != &total.pass && !passes.iter().any(|p| &p.pass == label) {
                return Err(ReportError::UnknownPass {
                    table: title.to_string(),
                    pass: label.clone(),
                });
            }
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pass: &str, seconds: f64, mb_read: f64) -> PassRow {
        PassRow {
            pass: pass.to_string(),
            seconds,
            mb_read,
            requests: Some(10),
        }
    }

    #[test]
    fn shaped_like_the_published_table() {
        let passes = [row("1", 6.69, 82.0), row("3", 0.02, 1.0)];
        let published = [("total".to_string(), 23.06)];
        let table = pass_table("t", &passes, &row("total", 6.71, 83.0), Some(&published)).unwrap();
        assert_eq!(table.columns.len(), 6);
        assert_eq!(table.total_rows, 1);
        assert_eq!(table.rows[0][4].display(), "12.26");
        assert_eq!(
            table.rows[1][4],
            Cell::Empty,
            "no rate for a pass that barely ran"
        );
        assert_eq!(table.rows[0][5], Cell::Empty);
        assert_eq!(table.rows[2][5], Cell::published(23.06, 2));
        let text = table.to_terminal(None).unwrap();
        assert!(
            text.contains("23.06") && text.contains("published"),
            "{text}"
        );
    }

    #[test]
    fn a_published_label_that_matches_nothing_is_an_error() {
        let published = [("totl".to_string(), 1.0)];
        let err = pass_table(
            "t",
            &[row("1", 1.0, 1.0)],
            &row("total", 1.0, 1.0),
            Some(&published),
        )
        .unwrap_err();
        assert!(err.to_string().contains("\"totl\""), "{err}");
    }
}
