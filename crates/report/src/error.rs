//! Errors of the report crate: a table that breaks its own contract, or a file that cannot be written.

use std::path::PathBuf;

/// What can go wrong while rendering or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A row has a different number of cells than the table has columns.
    #[error("table {table:?}: row {row} has {cells} cells but the table has {columns} columns")]
    RowWidth {
        /// Title of the table.
        table: String,
        /// Zero-based index of the offending row.
        row: usize,
        /// Number of cells in that row.
        cells: usize,
        /// Number of columns of the table.
        columns: usize,
    },
    /// A published number sits in one of our columns, or one of our numbers in a published column.
    #[error(
        "table {table:?}: row {row}, column {column:?}: {reason} \
         (published numbers go only in columns marked published, ours never do)"
    )]
    PublishedMix {
        /// Title of the table.
        table: String,
        /// Zero-based index of the offending row.
        row: usize,
        /// Name of the offending column.
        column: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// `total_rows` is larger than the number of rows.
    #[error("table {table:?}: total_rows is {total_rows} but the table has only {rows} rows")]
    TotalRows {
        /// Title of the table.
        table: String,
        /// The declared number of trailing total rows.
        total_rows: usize,
        /// The number of rows.
        rows: usize,
    },
    /// A published number names a pass the table does not have.
    #[error(
        "table {table:?}: published number for pass {pass:?}, which is not a row of the table"
    )]
    UnknownPass {
        /// Title of the table.
        table: String,
        /// The pass label given with the published number.
        pass: String,
    },
    /// A JSON document could not be read back as a table or a report.
    #[error("report JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Writing a report file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file that could not be written.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// Reading a saved report failed.
    #[error("cannot read {path}: {source} (was the report saved by this version?)")]
    Read {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A figure's file name is not a plain file name in the report's directory.
    #[error("figure file name {0:?} must be a plain name in the report's directory (no '/', not starting with '.')")]
    FileName(String),
}
