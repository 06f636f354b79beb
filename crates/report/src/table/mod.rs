//! The table model: columns, cells (text, our numbers, published numbers) and its contract.
//!
//! One renderer per file lives beside this one: [`terminal`], [`markdown`], [`csv`], [`json`],
//! [`html`]; [`passes`] shapes the e2fsck per-pass table. Every renderer first calls [`Table::validate`], so a table that mixes a published
//! number into one of our columns is refused, whatever the output format.

pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
pub mod passes;
pub mod terminal;

use serde::{Deserialize, Serialize};

use crate::error::ReportError;

/// Horizontal alignment of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Align {
    /// Flush left (names, labels).
    #[default]
    Left,
    /// Flush right (numbers, so that digits line up).
    Right,
    /// Centred.
    Center,
}

/// One column of a [`Table`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Short name, e.g. `"pass"`, `"seconds"`, `"MB read"`.
    pub name: String,
    /// Alignment of the cells (the header follows it).
    pub align: Align,
    /// Unit of the numbers, e.g. `"s"`, `"MB"`, `"MB/s"`; `None` for text or counts.
    pub unit: Option<String>,
    /// True if this column holds published numbers (from the literature), never ours.
    #[serde(default)]
    pub published: bool,
}

impl Column {
    /// A left-aligned text column.
    pub fn text(name: &str) -> Self {
        Column {
            name: name.to_string(),
            align: Align::Left,
            unit: None,
            published: false,
        }
    }

    /// A right-aligned column of our numbers, with an optional unit.
    pub fn number(name: &str, unit: Option<&str>) -> Self {
        Column {
            name: name.to_string(),
            align: Align::Right,
            unit: unit.map(str::to_string),
            published: false,
        }
    }

    /// A right-aligned column of published numbers, with an optional unit.
    pub fn published(name: &str, unit: Option<&str>) -> Self {
        Column {
            published: true,
            ..Column::number(name, unit)
        }
    }

    /// The header text shown by every renderer: the name, the unit in brackets, and
    /// `(published)` for published columns, e.g. `seconds [s] (published)`.
    pub fn header(&self) -> String {
        let mut header = self.name.clone();
        if let Some(unit) = &self.unit {
            header.push_str(&format!(" [{unit}]"));
        }
        if self.published {
            header.push_str(" (published)");
        }
        header
    }
}

/// One cell of a [`Table`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cell {
    /// No value (shown blank; `—` where a blank would be ambiguous).
    Empty,
    /// Free text.
    Text(String),
    /// One of our numbers, shown with `precision` digits after the point.
    Number {
        /// The value; non-finite values render as `n/a` and serialize as JSON `null`.
        #[serde(with = "finite_or_null")]
        value: f64,
        /// Digits after the decimal point in human-facing renderers.
        precision: usize,
    },
    /// A published number (from the literature), shown with `precision` digits.
    Published {
        /// The value; non-finite values render as `n/a` and serialize as JSON `null`.
        #[serde(with = "finite_or_null")]
        value: f64,
        /// Digits after the decimal point in human-facing renderers.
        precision: usize,
    },
}

impl Cell {
    /// A text cell.
    pub fn text(text: impl Into<String>) -> Self {
        Cell::Text(text.into())
    }

    /// One of our numbers.
    pub fn num(value: f64, precision: usize) -> Self {
        Cell::Number { value, precision }
    }

    /// An integer count of ours (precision 0).
    pub fn count(value: u64) -> Self {
        Cell::Number {
            value: value as f64,
            precision: 0,
        }
    }

    /// A published number.
    pub fn published(value: f64, precision: usize) -> Self {
        Cell::Published { value, precision }
    }

    /// The cell as people read it: numbers at their precision, `n/a` for non-finite ones.
    pub fn display(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Text(text) => text.clone(),
            Cell::Number { value, precision } | Cell::Published { value, precision } => {
                format_fixed(*value, *precision)
            }
        }
    }

    /// The cell as scripts read it: numbers in Rust's shortest round-trip form (full precision,
    /// not the display precision), empty for non-finite numbers.
    pub fn machine(&self) -> String {
        match self {
            Cell::Empty => String::new(),
            Cell::Text(text) => text.clone(),
            Cell::Number { value, .. } | Cell::Published { value, .. } => {
                if value.is_finite() {
                    format!("{value}")
                } else {
                    String::new()
                }
            }
        }
    }

    /// True for [`Cell::Number`] and [`Cell::Published`].
    pub fn is_number(&self) -> bool {
        matches!(self, Cell::Number { .. } | Cell::Published { .. })
    }
}

/// `value` with `precision` digits after the point; `n/a` if it is NaN or infinite.
pub fn format_fixed(value: f64, precision: usize) -> String {
    if !value.is_finite() {
        return "n/a".to_string();
    }
    let text = format!("{value:.precision$}");
    // "-0.0" says nothing "0.0" does not, and it misaligns columns of small numbers.
    if text.starts_with('-') && text[1..].chars().all(|c| c == '0' || c == '.') {
        text[1..].to_string()
    } else {
        text
    }
}

/// A report table: a title, typed columns, rows of cells, and notes printed under it.
///
/// Published numbers live only in columns marked `published`, so they sit beside ours and are
/// never mixed into them; [`Table::validate`] enforces it and every renderer calls it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Title shown above the table.
    pub title: String,
    /// The columns, left to right.
    pub columns: Vec<Column>,
    /// The rows; each has exactly one cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// How many trailing rows are totals (a rule is drawn above them in terminal output).
    #[serde(default)]
    pub total_rows: usize,
    /// Notes printed under the table (sources, caveats).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Table {
    /// An empty table with the given title and columns.
    pub fn new(title: &str, columns: Vec<Column>) -> Self {
        Table {
            title: title.to_string(),
            columns,
            rows: Vec::new(),
            total_rows: 0,
            notes: Vec::new(),
        }
    }

    /// Appends a body row, checking it against the columns first.
    pub fn push_row(&mut self, row: Vec<Cell>) -> Result<(), ReportError> {
        self.check_row(self.rows.len(), &row)?;
        // Body rows go above any total rows already present.
        let at = self.rows.len() - self.total_rows;
        self.rows.insert(at, row);
        Ok(())
    }

    /// Appends a total row (drawn below a rule), checking it against the columns first.
    pub fn push_total(&mut self, row: Vec<Cell>) -> Result<(), ReportError> {
        self.check_row(self.rows.len(), &row)?;
        self.rows.push(row);
        self.total_rows += 1;
        Ok(())
    }

    /// Appends a note shown under the table.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// Checks the whole table: row widths, `total_rows`, and that published numbers appear only
    /// in published columns and our numbers only in ours.
    pub fn validate(&self) -> Result<(), ReportError> {
        for (index, row) in self.rows.iter().enumerate() {
            self.check_row(index, row)?;
        }
        if self.total_rows > self.rows.len() {
            return Err(ReportError::TotalRows {
                table: self.title.clone(),
                total_rows: self.total_rows,
                rows: self.rows.len(),
            });
        }
        Ok(())
    }

    fn check_row(&self, index: usize, row: &[Cell]) -> Result<(), ReportError> {
        if row.len() != self.columns.len() {
            return Err(ReportError::RowWidth {
                table: self.title.clone(),
                row: index,
                cells: row.len(),
                columns: self.columns.len(),
            });
        }
        for (cell, column) in row.iter().zip(&self.columns) {
            let reason = match (cell, column.published) {
                (Cell::Published { .. }, false) => "a published number in one of our columns",
                (Cell::Number { .. }, true) => "one of our numbers in a published column",
                _ => continue,
            };
            return Err(ReportError::PublishedMix {
                table: self.title.clone(),
                row: index,
                column: column.name.clone(),
                reason,
            });
        }
        Ok(())
    }

    /// Index of the first total row (equal to `rows.len()` when there is none).
    pub(crate) fn first_total_row(&self) -> usize {
        self.rows.len() - self.total_rows.min(self.rows.len())
    }
}

/// Serializes non-finite floats as `null` (JSON has no NaN) and reads `null` back as NaN.
mod finite_or_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if value.is_finite() {
            serializer.serialize_f64(*value)
        } else {
            serializer.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e2fsck_columns() -> Vec<Column> {
        vec![
            Column::text("pass"),
            Column::number("seconds", Some("s")),
            Column::published("seconds", Some("s")),
        ]
    }

    #[test]
    fn published_number_in_our_column_is_refused() {
        let mut table = Table::new("t", e2fsck_columns());
        let err = table
            .push_row(vec![Cell::text("1"), Cell::published(6.69, 2), Cell::Empty])
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("published number in one of our columns"),
            "{err}"
        );
        assert!(err.to_string().contains("row 0"), "{err}");
    }

    #[test]
    fn our_number_in_published_column_is_refused() {
        let mut table = Table::new("t", e2fsck_columns());
        let err = table
            .push_row(vec![Cell::text("1"), Cell::num(6.0, 2), Cell::num(6.69, 2)])
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("our numbers in a published column"),
            "{err}"
        );
    }

    #[test]
    fn wrong_row_width_is_refused_and_validate_catches_direct_edits() {
        let mut table = Table::new("t", e2fsck_columns());
        assert!(table.push_row(vec![Cell::text("1")]).is_err());
        table.rows.push(vec![Cell::Empty]);
        let err = table.validate().unwrap_err();
        assert!(
            err.to_string()
                .contains("has 1 cells but the table has 3 columns"),
            "{err}"
        );
    }

    #[test]
    fn body_rows_stay_above_totals() {
        let mut table = Table::new("t", e2fsck_columns());
        table
            .push_row(vec![Cell::text("1"), Cell::num(1.0, 1), Cell::Empty])
            .unwrap();
        table
            .push_total(vec![Cell::text("total"), Cell::num(3.0, 1), Cell::Empty])
            .unwrap();
        table
            .push_row(vec![Cell::text("2"), Cell::num(2.0, 1), Cell::Empty])
            .unwrap();
        let first: Vec<String> = table.rows.iter().map(|r| r[0].display()).collect();
        assert_eq!(first, ["1", "2", "total"]);
        assert_eq!(table.first_total_row(), 2);
    }

    #[test]
    fn fixed_formatting() {
        assert_eq!(format_fixed(12.346, 2), "12.35");
        assert_eq!(format_fixed(-0.0001, 2), "0.00");
        assert_eq!(format_fixed(-1.5, 1), "-1.5");
        assert_eq!(format_fixed(f64::NAN, 2), "n/a");
        assert_eq!(Cell::count(42).display(), "42");
        assert_eq!(Cell::num(0.1, 3).machine(), "0.1");
    }
}
