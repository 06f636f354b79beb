//! A plot panel: a rectangle on the page, linear x and y scales with nice ticks, and the
//! drawing of its frame, grid, tick labels and axis labels (with units).

use super::builder::{Anchor, Svg};
use super::ticks::Ticks;

/// Where a panel sits on the page, in user units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub left: f64,
    /// Top edge.
    pub top: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// A panel with its data scales.
#[derive(Debug, Clone)]
pub struct Axes {
    /// The plotting area (inside the frame).
    pub rect: Rect,
    /// Ticks of the x axis; their ends are the x range.
    pub x: Ticks,
    /// Ticks of the y axis; their ends are the y range.
    pub y: Ticks,
}

/// An axis label with its unit, e.g. `time [s]`.
pub fn label_with_unit(label: &str, unit: Option<&str>) -> String {
    match unit {
        Some(unit) if !unit.is_empty() => format!("{label} [{unit}]"),
        _ => label.to_string(),
    }
}

impl Axes {
    /// Page x of data x.
    pub fn px(&self, x: f64) -> f64 {
        let (lo, hi) = (self.x.min(), self.x.max());
        self.rect.left + (x - lo) / (hi - lo) * self.rect.width
    }

    /// Page y of data y (up is larger).
    pub fn py(&self, y: f64) -> f64 {
        let (lo, hi) = (self.y.min(), self.y.max());
        self.rect.top + self.rect.height - (y - lo) / (hi - lo) * self.rect.height
    }

    /// Draws grid lines, the frame, tick marks and labels, and the axis labels. `x_label` is
    /// skipped when `None` (panels sharing the x axis of the panel below).
    pub fn draw(&self, svg: &mut Svg, x_label: Option<&str>, y_label: &str) {
        let r = self.rect;
        let bottom = r.top + r.height;
        self.draw_y_ticks(svg);
        for &value in &self.x.values {
            let x = self.px(value);
            svg.line(x, r.top, x, bottom, "grid");
            svg.line(x, bottom, x, bottom + 4.0, "tickmark");
            svg.text(
                x,
                bottom + 16.0,
                &self.x.label(value),
                Anchor::Middle,
                "tick",
                None,
            );
        }
        svg.rect(r.left, r.top, r.width, r.height, &[("class", "frame")]);
        if let Some(label) = x_label {
            svg.text(
                r.left + r.width / 2.0,
                bottom + 34.0,
                label,
                Anchor::Middle,
                "axis-label",
                None,
            );
        }
        self.draw_y_label(svg, y_label);
    }

    /// Like [`Axes::draw`] for a panel whose x axis is categorical and drawn by the caller:
    /// the y grid, ticks and label, and the frame.
    pub fn draw_y_only(&self, svg: &mut Svg, y_label: &str) {
        let r = self.rect;
        self.draw_y_ticks(svg);
        svg.rect(r.left, r.top, r.width, r.height, &[("class", "frame")]);
        self.draw_y_label(svg, y_label);
    }

    fn draw_y_ticks(&self, svg: &mut Svg) {
        let r = self.rect;
        for &value in &self.y.values {
            let y = self.py(value);
            svg.line(r.left, y, r.left + r.width, y, "grid");
            svg.line(r.left - 4.0, y, r.left, y, "tickmark");
            svg.text(
                r.left - 6.0,
                y + 4.0,
                &self.y.label(value),
                Anchor::End,
                "tick",
                None,
            );
        }
    }

    fn draw_y_label(&self, svg: &mut Svg, y_label: &str) {
        let r = self.rect;
        svg.text(
            r.left - 52.0,
            r.top + r.height / 2.0,
            y_label,
            Anchor::Middle,
            "axis-label",
            Some(-90.0),
        );
    }

    /// Writes a centred "no data" note in the panel.
    pub fn no_data(&self, svg: &mut Svg) {
        let r = self.rect;
        svg.text(
            r.left + r.width / 2.0,
            r.top + r.height / 2.0,
            "no data",
            Anchor::Middle,
            "nodata",
            None,
        );
    }
}
