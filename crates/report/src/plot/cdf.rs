//! CDF plot: the empirical distribution of several series of values (e.g. measured and
//! modelled response times in ms) as step lines, one colour per series.

use crate::svg::axes::{label_with_unit, Axes, Rect};
use crate::svg::legend::{self, Entry, Swatch};
use crate::svg::{nice_ticks, num, palette, Anchor, Svg, BASE_CSS};

/// One distribution to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct CdfSeries {
    /// Name in the legend, e.g. `"measured"`.
    pub name: String,
    /// The values, in any order; non-finite ones are left out.
    pub values: Vec<f64>,
}

/// Settings of a CDF plot.
#[derive(Debug, Clone, PartialEq)]
pub struct CdfPlot {
    /// Title at the top.
    pub title: String,
    /// What the values are, e.g. `"response time"`.
    pub x_label: String,
    /// Unit of the values, e.g. `Some("ms")`.
    pub x_unit: Option<String>,
    /// Most steps drawn per series; a longer series is drawn at evenly spaced ranks, so the
    /// drawn curve is within 1/`max_steps` of the true one vertically.
    pub max_steps: usize,
    /// Page width in user units (px).
    pub width: f64,
    /// Height of the plotting area in user units (px).
    pub plot_height: f64,
}

impl Default for CdfPlot {
    fn default() -> Self {
        CdfPlot {
            title: "CDF".to_string(),
            x_label: "value".to_string(),
            x_unit: None,
            max_steps: 2000,
            width: 760.0,
            plot_height: 380.0,
        }
    }
}

/// Median of sorted values (mean of the middle two for an even count).
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

impl CdfPlot {
    /// Draws `series` and returns the SVG document.
    pub fn render(&self, series: &[CdfSeries]) -> String {
        let sorted: Vec<Vec<f64>> = series
            .iter()
            .map(|s| {
                let mut v: Vec<f64> = s.values.iter().copied().filter(|v| v.is_finite()).collect();
                v.sort_by(f64::total_cmp);
                v
            })
            .collect();
        let (lo, hi) = sorted
            .iter()
            .flatten()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        let (lo, hi) = if lo.is_finite() {
            (lo.min(0.0), hi)
        } else {
            (0.0, 1.0)
        };
        let unit = self.x_unit.as_deref();
        let entries: Vec<Entry> = series
            .iter()
            .zip(&sorted)
            .enumerate()
            .map(|(i, (s, v))| {
                let label = if v.is_empty() {
                    format!("{} (no values)", s.name)
                } else {
                    let med = median(v);
                    let med =
                        crate::table::format_fixed(med, if med.abs() >= 100.0 { 0 } else { 2 });
                    format!(
                        "{} (n={}, median {med}{})",
                        s.name,
                        v.len(),
                        unit.map(|u| format!(" {u}")).unwrap_or_default()
                    )
                };
                Entry {
                    label,
                    color: palette::color(i).to_string(),
                    swatch: Swatch::Line,
                }
            })
            .collect();
        let left = 80.0;
        let plot_width = self.width - left - 24.0;
        let legend_top = 36.0;
        let legend_height = legend::height(&entries, plot_width);
        let top = legend_top + legend_height + 12.0;
        let height = top + self.plot_height + 50.0;

        let mut svg = Svg::new(self.width, height);
        svg.style(BASE_CSS);
        svg.text_element("title", &[], &self.title);
        svg.text(left, 24.0, &self.title, Anchor::Start, "title", None);
        legend::draw(&mut svg, &entries, left, legend_top, plot_width);
        let axes = Axes {
            rect: Rect {
                left,
                top,
                width: plot_width,
                height: self.plot_height,
            },
            x: nice_ticks(lo, hi, 8),
            y: nice_ticks(0.0, 1.0, 5),
        };
        axes.draw(
            &mut svg,
            Some(&label_with_unit(&self.x_label, unit)),
            "fraction of values ≤ x",
        );
        for (i, (s, values)) in series.iter().zip(&sorted).enumerate() {
            let n = values.len();
            let steps = n.min(self.max_steps.max(1));
            let mut d = String::new();
            if n > 0 {
                d.push_str(&format!(
                    "M{} {}",
                    num(axes.px(values[0])),
                    num(axes.py(0.0))
                ));
                for j in 1..=steps {
                    // Rank (count of values ≤ x) at the j-th of `steps` evenly spaced points.
                    let rank = (j * n).div_ceil(steps);
                    d.push_str(&format!(
                        "H{}V{}",
                        num(axes.px(values[rank - 1])),
                        num(axes.py(rank as f64 / n as f64))
                    ));
                }
            }
            let steps_text = if n > 0 {
                steps.to_string()
            } else {
                "0".to_string()
            };
            svg.path(
                &d,
                &[
                    ("class", "cdf"),
                    ("data-series", &s.name),
                    ("data-values", &n.to_string()),
                    ("data-steps", &steps_text),
                    ("stroke", palette::color(i)),
                    ("stroke-width", "2"),
                    ("fill", "none"),
                ],
            );
        }
        if sorted.iter().all(Vec::is_empty) {
            axes.no_data(&mut svg);
        }
        svg.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[1.0, 2.0, 10.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 10.0]), 3.0);
    }
}
