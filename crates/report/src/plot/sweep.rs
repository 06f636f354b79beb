//! Parameter-sweep chart: x is a setting (categories, evenly spaced, in the given order), y a
//! quantity such as seconds; one line (or one bar per group) per device or variant.

use crate::svg::axes::{label_with_unit, Axes, Rect};
use crate::svg::legend::{self, Entry, Swatch};
use crate::svg::{nice_ticks, num, palette, Anchor, Svg, Ticks, BASE_CSS};

/// How the series are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SweepStyle {
    /// Lines with a dot at each setting.
    #[default]
    Lines,
    /// Grouped bars, one group per setting.
    Bars,
}

/// One line of the sweep, e.g. one device.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSeries {
    /// Name in the legend, e.g. `"sata-400g-2007"`.
    pub name: String,
    /// One value per category, `None` (or non-finite) where there is no measurement.
    pub values: Vec<Option<f64>>,
}

/// A sweep chart and its data.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepChart {
    /// Title at the top.
    pub title: String,
    /// What the setting is, e.g. `"inode_readahead_blks"`.
    pub x_label: String,
    /// Unit of the setting, e.g. `Some("blocks")`.
    pub x_unit: Option<String>,
    /// The settings, left to right, as they should be printed (e.g. `"4k"`, `"0"`, `"32"`).
    pub categories: Vec<String>,
    /// What is measured, e.g. `"stat walk"`.
    pub y_label: String,
    /// Unit of the values, e.g. `Some("s")`.
    pub y_unit: Option<String>,
    /// Lines or bars.
    pub style: SweepStyle,
    /// Page width in user units (px).
    pub width: f64,
}

impl SweepChart {
    /// A line chart with default width.
    pub fn new(
        title: &str,
        x_label: &str,
        categories: Vec<String>,
        y_label: &str,
        y_unit: Option<&str>,
    ) -> Self {
        SweepChart {
            title: title.to_string(),
            x_label: x_label.to_string(),
            x_unit: None,
            categories,
            y_label: y_label.to_string(),
            y_unit: y_unit.map(str::to_string),
            style: SweepStyle::Lines,
            width: 760.0,
        }
    }

    /// Draws `series` and returns the SVG document. Values beyond the categories are ignored;
    /// missing ones leave a gap.
    pub fn render(&self, series: &[SweepSeries]) -> String {
        let n = self.categories.len().max(1);
        let value = |s: &SweepSeries, k: usize| {
            s.values.get(k).copied().flatten().filter(|v| v.is_finite())
        };
        let (lo, hi) = series
            .iter()
            .flat_map(|s| (0..self.categories.len()).filter_map(move |k| value(s, k)))
            .fold((0.0f64, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        let any = hi.is_finite();
        let hi = if any { hi.max(f64::MIN_POSITIVE) } else { 1.0 };
        let entries: Vec<Entry> = series
            .iter()
            .enumerate()
            .map(|(i, s)| Entry {
                label: s.name.clone(),
                color: palette::color(i).to_string(),
                swatch: if self.style == SweepStyle::Bars {
                    Swatch::Block
                } else {
                    Swatch::Line
                },
            })
            .collect();
        let left = 80.0;
        let plot_width = self.width - left - 24.0;
        let legend_top = 36.0;
        let top = legend_top + legend::height(&entries, plot_width) + 12.0;
        let plot_height = 320.0;
        let mut svg = Svg::new(self.width, top + plot_height + 50.0);
        svg.style(BASE_CSS);
        svg.text_element("title", &[], &self.title);
        svg.text(left, 24.0, &self.title, Anchor::Start, "title", None);
        legend::draw(&mut svg, &entries, left, legend_top, plot_width);

        // The x scale runs over band indices: category k is centred at k + 0.5 in [0, n].
        let bands = Ticks {
            values: vec![0.0, n as f64],
            step: n as f64,
        };
        let axes = Axes {
            rect: Rect {
                left,
                top,
                width: plot_width,
                height: plot_height,
            },
            x: bands,
            y: nice_ticks(lo, hi, 6),
        };
        axes.draw_y_only(
            &mut svg,
            &label_with_unit(&self.y_label, self.y_unit.as_deref()),
        );
        let bottom = top + plot_height;
        for (k, category) in self.categories.iter().enumerate() {
            let x = axes.px(k as f64 + 0.5);
            svg.line(x, bottom, x, bottom + 4.0, "tickmark");
            svg.text(x, bottom + 16.0, category, Anchor::Middle, "tick", None);
        }
        svg.text(
            left + plot_width / 2.0,
            bottom + 34.0,
            &label_with_unit(&self.x_label, self.x_unit.as_deref()),
            Anchor::Middle,
            "axis-label",
            None,
        );

        let band_px = plot_width / n as f64;
        for (i, s) in series.iter().enumerate() {
            let color = palette::color(i);
            svg.open("g", &[("class", "series"), ("data-series", &s.name)]);
            match self.style {
                SweepStyle::Bars => {
                    let bar = band_px * 0.8 / series.len().max(1) as f64;
                    for k in 0..self.categories.len() {
                        if let Some(v) = value(s, k) {
                            let x = axes.px(k as f64) + band_px * 0.1 + i as f64 * bar;
                            let (y0, y1) = (axes.py(0.0), axes.py(v));
                            svg.rect(
                                x,
                                y0.min(y1),
                                bar * 0.92,
                                (y0 - y1).abs(),
                                &[("class", "bar"), ("fill", color)],
                            );
                        }
                    }
                }
                SweepStyle::Lines => {
                    let mut line = String::new();
                    let mut dots = String::new();
                    let mut pen_down = false;
                    for k in 0..self.categories.len() {
                        match value(s, k) {
                            Some(v) => {
                                let (x, y) = (num(axes.px(k as f64 + 0.5)), num(axes.py(v)));
                                line.push_str(&format!(
                                    "{}{x} {y}",
                                    if pen_down { "L" } else { "M" }
                                ));
                                dots.push_str(&format!("M{x} {y}h0"));
                                pen_down = true;
                            }
                            None => pen_down = false,
                        }
                    }
                    if !line.is_empty() {
                        svg.path(
                            &line,
                            &[
                                ("class", "line"),
                                ("stroke", color),
                                ("stroke-width", "2"),
                                ("fill", "none"),
                            ],
                        );
                        svg.path(
                            &dots,
                            &[
                                ("class", "dots"),
                                ("stroke", color),
                                ("stroke-width", "7"),
                                ("stroke-linecap", "round"),
                            ],
                        );
                    }
                }
            }
            svg.close();
        }
        if !any {
            axes.no_data(&mut svg);
        }
        svg.finish()
    }
}
