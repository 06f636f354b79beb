//! A horizontal legend that wraps onto more rows when the entries do not fit the width.

use super::builder::{num, Anchor, Svg};

/// How an entry's swatch is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swatch {
    /// A short line (line plots).
    Line,
    /// A filled dot (reads in scatter plots).
    Dot,
    /// A cross (writes in scatter plots).
    Cross,
    /// A filled square (bars).
    Block,
}

/// One legend entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The text.
    pub label: String,
    /// The colour of the swatch.
    pub color: String,
    /// The swatch shape.
    pub swatch: Swatch,
}

const ROW_HEIGHT: f64 = 18.0;
const SWATCH_WIDTH: f64 = 22.0;

/// Rough text width: 0.6 em per character at 12 px is close for DejaVu Sans; only used to
/// lay entries out, so an overestimate costs a little space, never overlap.
fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * 7.2
}

/// Height the legend will take at `width`.
pub fn height(entries: &[Entry], width: f64) -> f64 {
    rows(entries, width).len() as f64 * ROW_HEIGHT
}

fn rows(entries: &[Entry], width: f64) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut used = f64::INFINITY;
    for (i, entry) in entries.iter().enumerate() {
        let w = SWATCH_WIDTH + text_width(&entry.label) + 18.0;
        if used + w > width {
            rows.push(Vec::new());
            used = 0.0;
        }
        rows.last_mut().expect("a row was just pushed").push(i);
        used += w;
    }
    rows
}

/// Draws the legend from (left, top) within `width`; returns its height.
pub fn draw(svg: &mut Svg, entries: &[Entry], left: f64, top: f64, width: f64) -> f64 {
    let layout = rows(entries, width);
    svg.open("g", &[("class", "legend")]);
    for (row_index, row) in layout.iter().enumerate() {
        let y = top + row_index as f64 * ROW_HEIGHT + 12.0;
        let mut x = left;
        for &i in row {
            let entry = &entries[i];
            let color = entry.color.as_str();
            match entry.swatch {
                Swatch::Line => {
                    svg.path(
                        &format!("M{} {}h18", num(x), num(y - 4.0)),
                        &[("stroke", color), ("stroke-width", "2.5"), ("fill", "none")],
                    );
                }
                Swatch::Dot => {
                    svg.path(
                        &format!("M{} {}h0", num(x + 9.0), num(y - 4.0)),
                        &[
                            ("stroke", color),
                            ("stroke-width", "6"),
                            ("stroke-linecap", "round"),
                        ],
                    );
                }
                Swatch::Cross => {
                    svg.path(
                        &format!("M{} {}l8 8m0-8l-8 8", num(x + 5.0), num(y - 8.0)),
                        &[("stroke", color), ("stroke-width", "1.5"), ("fill", "none")],
                    );
                }
                Swatch::Block => {
                    svg.rect(x + 3.0, y - 10.0, 12.0, 12.0, &[("fill", color)]);
                }
            }
            svg.text(
                x + SWATCH_WIDTH,
                y,
                &entry.label,
                Anchor::Start,
                "legend",
                None,
            );
            x += SWATCH_WIDTH + text_width(&entry.label) + 18.0;
        }
    }
    svg.close();
    layout.len() as f64 * ROW_HEIGHT
}
