//! Reports of layoutlab: tables and plots of numbers computed elsewhere.
//!
//! **Owns:** the [`Table`] model (text, our numbers, published numbers, totals, notes) and its
//! renderers — terminal, Markdown, CSV (RFC 4180), JSON, HTML; a small SVG builder with nice
//! 1-2-5 ticks; three plots — seekwatcher-style offset/throughput/seeks over time
//! ([`plot::offset`]), CDFs ([`plot::cdf`]) and parameter sweeps ([`plot::sweep`]); and a
//! self-contained HTML bundle ([`HtmlBundle`]).
//!
//! **Does not own:** computing any number. This crate sits at the bottom of the workspace and
//! depends on no other layoutlab crate: callers pass plain data (slices of floats, small
//! structs) and write the returned strings to files themselves.
//!
//! Published numbers (from the literature) have their own cells ([`Cell::Published`]) and
//! their own columns ([`Column::published`]); [`Table::validate`], called by every renderer,
//! refuses a table that mixes them into ours.
//!
//! # Example
//!
//! ```
//! use layoutlab_report::{Cell, Column, Table};
//! use layoutlab_report::plot::offset::{offset_plot, IoPoint, OffsetSeries};
//!
//! let mut table = Table::new(
//!     "e2fsck per pass (ext3-2007)",
//!     vec![Column::text("pass"), Column::number("time", Some("s")), Column::published("time", Some("s"))],
//! );
//! table.push_row(vec![Cell::text("1"), Cell::num(512.25, 2), Cell::Empty])?;
//! table.push_total(vec![Cell::text("total"), Cell::num(600.5, 2), Cell::published(738.1, 1)])?;
//! let text = table.to_terminal(Some(80))?;
//! assert!(text.contains("738.1") && text.contains("published"));
//!
//! let series = OffsetSeries {
//!     name: "ext3-2007".into(),
//!     points: vec![IoPoint { time_s: 0.0, offset_bytes: 0.0, length_bytes: 4096.0, is_write: false }],
//! };
//! let svg: String = offset_plot("fsck", &[series]);
//! assert!(svg.starts_with("<svg"));
//! # Ok::<(), layoutlab_report::ReportError>(())
//! ```

#![warn(missing_docs)]

pub mod error;
pub mod escape;
pub mod html;
pub mod plot;
pub mod svg;
pub mod table;

pub use error::ReportError;
pub use html::{HtmlBundle, Section};
pub use plot::cdf::{CdfPlot, CdfSeries};
pub use plot::offset::{offset_plot, IoPoint, OffsetPlot, OffsetSeries, OffsetUnit, RatePanel};
pub use plot::sweep::{SweepChart, SweepSeries, SweepStyle};
pub use table::passes::{pass_table, PassRow};
pub use table::{Align, Cell, Column, Table};

impl Table {
    /// Terminal text, fitted to `max_width` columns if given ([`table::terminal::render`]).
    pub fn to_terminal(&self, max_width: Option<usize>) -> Result<String, ReportError> {
        table::terminal::render(self, max_width)
    }

    /// A GitHub-flavoured Markdown table ([`table::markdown::render`]).
    pub fn to_markdown(&self) -> Result<String, ReportError> {
        table::markdown::render(self)
    }

    /// RFC 4180 CSV ([`table::csv::render`]).
    pub fn to_csv(&self) -> Result<String, ReportError> {
        table::csv::render(self)
    }

    /// Pretty JSON ([`table::json::render`]).
    pub fn to_json(&self) -> Result<String, ReportError> {
        table::json::render(self)
    }

    /// An HTML fragment ([`table::html::render`]).
    pub fn to_html(&self) -> Result<String, ReportError> {
        table::html::render(self)
    }
}
