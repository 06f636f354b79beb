//! JSON renderer: the table as serde writes it (title, columns, rows of tagged cells, totals,
//! notes), and the reader that takes it back. Non-finite numbers are written as `null`.

use super::Table;
use crate::error::ReportError;

/// Renders `table` as pretty-printed JSON. Cells look like `"empty"`, `{"text": "1"}`,
/// `{"number": {"value": 6.69, "precision": 2}}` or `{"published": {...}}`.
pub fn render(table: &Table) -> Result<String, ReportError> {
    table.validate()?;
    Ok(serde_json::to_string_pretty(table)?)
}

/// Reads a table written by [`render`] and checks its contract.
pub fn parse(text: &str) -> Result<Table, ReportError> {
    let table: Table = serde_json::from_str(text)?;
    table.validate()?;
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Cell, Column};

    #[test]
    fn round_trip_including_non_finite() {
        let mut table = Table::new(
            "t",
            vec![
                Column::text("k"),
                Column::number("v", Some("ms")),
                Column::published("v", None),
            ],
        );
        table
            .push_row(vec![
                Cell::text("a\"<b>"),
                Cell::num(0.1 + 0.2, 3),
                Cell::published(1.5, 1),
            ])
            .unwrap();
        table
            .push_total(vec![Cell::Empty, Cell::num(f64::INFINITY, 1), Cell::Empty])
            .unwrap();
        table.note("n");
        let text = render(&table).unwrap();
        assert!(text.contains("null"), "{text}");
        let back = parse(&text).unwrap();
        assert_eq!(back.rows[0], table.rows[0]);
        assert_eq!(back.title, table.title);
        assert_eq!(back.columns, table.columns);
        assert_eq!(back.total_rows, 1);
        assert!(matches!(back.rows[1][1], Cell::Number { value, .. } if value.is_nan()));
    }

    #[test]
    fn parse_refuses_a_published_number_in_our_column() {
        let text = r#"{"title":"t","columns":[{"name":"v","align":"right","unit":null}],
                       "rows":[[{"published":{"value":1.0,"precision":1}}]]}"#;
        let err = parse(text).unwrap_err();
        assert!(
            err.to_string()
                .contains("published number in one of our columns"),
            "{err}"
        );
        assert!(parse("{")
            .unwrap_err()
            .to_string()
            .starts_with("report JSON:"));
    }
}
