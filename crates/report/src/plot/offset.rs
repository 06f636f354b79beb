//! Seekwatcher-style I/O plot: disk offset over time (reads as dots, writes as crosses), then
//! rate panels over time — throughput, IOPS and seeks/s by default — for one or several traces
//! overlaid in different colours.
//!
//! Definitions: throughput in a time bucket is the bytes of the requests whose time falls in
//! it, divided by the bucket length, in MiB/s (2^20 bytes, as e2fsck's `-tt` reports MB). A
//! seek is a request that does not start where the previous request of the same series (in
//! time order) ended, as seekwatcher counts them; the first request is not a seek.

use crate::plot::downsample::{thin, Marks};
use crate::svg::axes::{label_with_unit, Axes, Rect};
use crate::svg::legend::{self, Entry, Swatch};
use crate::svg::{nice_step, nice_ticks, num, palette, Anchor, Svg, BASE_CSS};

/// One block request, as the plot needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoPoint {
    /// When the request was issued (or completed; the caller chooses), in seconds.
    pub time_s: f64,
    /// Start of the request on the device, in bytes.
    pub offset_bytes: f64,
    /// Length of the request, in bytes.
    pub length_bytes: f64,
    /// True for a write, false for a read.
    pub is_write: bool,
}

/// One trace to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetSeries {
    /// Name in the legend, e.g. `"ext3-2007"`.
    pub name: String,
    /// The requests, in any order.
    pub points: Vec<IoPoint>,
}

/// Unit of the offset axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OffsetUnit {
    /// Gigabytes of 10^9 bytes, as drive capacities are sold.
    #[default]
    Gigabytes,
    /// Gibibytes of 2^30 bytes.
    Gibibytes,
    /// Sectors of 512 bytes, as block traces count.
    Sectors,
}

impl OffsetUnit {
    fn bytes(self) -> f64 {
        match self {
            OffsetUnit::Gigabytes => 1e9,
            OffsetUnit::Gibibytes => (1u64 << 30) as f64,
            OffsetUnit::Sectors => 512.0,
        }
    }

    fn label(self) -> &'static str {
        match self {
            OffsetUnit::Gigabytes => "GB",
            OffsetUnit::Gibibytes => "GiB",
            OffsetUnit::Sectors => "sectors",
        }
    }
}

/// A rate panel under the offset panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RatePanel {
    /// Bytes per second, in MiB/s.
    Throughput,
    /// Requests per second.
    Iops,
    /// Seeks per second (see the module doc for what counts as a seek).
    SeeksPerSecond,
}

/// Settings of an offset plot. `OffsetPlot::default()` suits one screen.
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetPlot {
    /// Title at the top.
    pub title: String,
    /// Unit of the offset axis.
    pub offset_unit: OffsetUnit,
    /// Rate panels under the offset panel, top to bottom (seekwatcher's: throughput, IOPS,
    /// seeks/s).
    pub rate_panels: Vec<RatePanel>,
    /// Most marks drawn in the offset panel, all series together; above it, marks are merged
    /// on a grid (see [`crate::plot::downsample`]). 200,000 keeps the SVG near 3 MB.
    pub max_points: usize,
    /// Bucket length of the rate panels in seconds; `None` picks a 1-2-5 step giving ~100 buckets.
    pub bucket_s: Option<f64>,
    /// Page width in user units (px).
    pub width: f64,
}

impl Default for OffsetPlot {
    fn default() -> Self {
        OffsetPlot {
            title: "I/O over time".to_string(),
            offset_unit: OffsetUnit::Gigabytes,
            rate_panels: vec![
                RatePanel::Throughput,
                RatePanel::Iops,
                RatePanel::SeeksPerSecond,
            ],
            max_points: 200_000,
            bucket_s: None,
            width: 960.0,
        }
    }
}

/// Colour of the read/write key in the legend (shape only, no series).
const KEY_COLOR: &str = "#555555";
const LEFT: f64 = 80.0;
const RIGHT: f64 = 24.0;
const OFFSET_PANEL_HEIGHT: f64 = 300.0;
const RATE_PANEL_HEIGHT: f64 = 130.0;
const PANEL_GAP: f64 = 34.0;
const BOTTOM: f64 = 50.0;

/// Per-series totals per bucket.
struct Buckets {
    bytes: Vec<f64>,
    requests: Vec<f64>,
    seeks: Vec<f64>,
}

fn bucketize(points: &[IoPoint], t0: f64, bucket_s: f64, count: usize) -> Buckets {
    let mut b = Buckets {
        bytes: vec![0.0; count],
        requests: vec![0.0; count],
        seeks: vec![0.0; count],
    };
    let mut sorted: Vec<&IoPoint> = points.iter().collect();
    // Traces usually arrive in time order; sorting a million requests again costs more than
    // the whole plot.
    if !sorted
        .windows(2)
        .all(|pair| pair[0].time_s <= pair[1].time_s)
    {
        sorted.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    }
    let mut previous_end: Option<f64> = None;
    for p in sorted {
        let index = (((p.time_s - t0) / bucket_s).floor().max(0.0) as usize).min(count - 1);
        b.bytes[index] += p.length_bytes.max(0.0);
        b.requests[index] += 1.0;
        if previous_end.is_some_and(|end| end != p.offset_bytes) {
            b.seeks[index] += 1.0;
        }
        previous_end = Some(p.offset_bytes + p.length_bytes.max(0.0));
    }
    b
}

fn finite(p: &IoPoint) -> bool {
    p.time_s.is_finite() && p.offset_bytes.is_finite() && p.length_bytes.is_finite()
}

impl OffsetPlot {
    /// Draws `series` and returns the SVG document. Requests with a non-finite field are left
    /// out (and counted in the subtitle); an empty input gives empty panels saying "no data".
    pub fn render(&self, series: &[OffsetSeries]) -> String {
        let clean: Vec<Vec<IoPoint>> = series
            .iter()
            .map(|s| s.points.iter().copied().filter(finite).collect())
            .collect();
        let total: usize = clean.iter().map(Vec::len).sum();
        let dropped: usize = series.iter().map(|s| s.points.len()).sum::<usize>() - total;
        let all = || clean.iter().flatten();
        let (t_min, t_max) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.time_s), hi.max(p.time_s))
        });
        let (t_min, t_max) = if total == 0 {
            (0.0, 1.0)
        } else {
            (t_min.min(0.0), t_max)
        };
        let unit = self.offset_unit.bytes();
        let off_max = all().fold(0.0f64, |m, p| {
            m.max((p.offset_bytes + p.length_bytes) / unit)
        });
        let off_min = all().fold(0.0f64, |m, p| m.min(p.offset_bytes / unit));

        let x_ticks = nice_ticks(t_min, t_max, 8);
        let plot_width = self.width - LEFT - RIGHT;
        // One colour entry per series, then a grey key for the two mark shapes: doubling
        // every series into "reads" and "writes" entries made the legend hard to scan.
        let mut entries: Vec<Entry> = series
            .iter()
            .enumerate()
            .map(|(i, s)| Entry {
                label: s.name.clone(),
                color: palette::color(i).to_string(),
                swatch: Swatch::Block,
            })
            .collect();
        if all().any(|p| !p.is_write) {
            entries.push(Entry {
                label: "reads".into(),
                color: KEY_COLOR.into(),
                swatch: Swatch::Dot,
            });
        }
        if all().any(|p| p.is_write) {
            entries.push(Entry {
                label: "writes".into(),
                color: KEY_COLOR.into(),
                swatch: Swatch::Cross,
            });
        }
        let legend_top = 52.0;
        let legend_height = legend::height(&entries, plot_width);
        let offset_top = legend_top + legend_height + 10.0;
        let height = offset_top
            + OFFSET_PANEL_HEIGHT
            + self.rate_panels.len() as f64 * (PANEL_GAP + RATE_PANEL_HEIGHT)
            + BOTTOM;

        let mut svg = Svg::new(self.width, height);
        svg.style(BASE_CSS);
        svg.text_element("title", &[], &self.title);
        svg.text(LEFT, 24.0, &self.title, Anchor::Start, "title", None);

        // Panel 1: offset over time.
        let offsets = Axes {
            rect: Rect {
                left: LEFT,
                top: offset_top,
                width: plot_width,
                height: OFFSET_PANEL_HEIGHT,
            },
            x: x_ticks.clone(),
            y: nice_ticks(off_min, off_max.max(f64::MIN_POSITIVE), 6),
        };
        offsets.draw(
            &mut svg,
            self.rate_panels.is_empty().then_some("time [s]"),
            &label_with_unit("offset", Some(self.offset_unit.label())),
        );
        let marks: Vec<Marks> = clean
            .iter()
            .map(|points| {
                let mut marks = Marks::default();
                for p in points {
                    let xy = (offsets.px(p.time_s), offsets.py(p.offset_bytes / unit));
                    if p.is_write {
                        marks.crosses.push(xy);
                    } else {
                        marks.dots.push(xy);
                    }
                }
                marks
            })
            .collect();
        let (drawn, cell_px) = thin(&marks, self.max_points);
        let drawn_total: usize = drawn.iter().map(Marks::len).sum();
        for (i, s) in series.iter().enumerate() {
            let color = palette::color(i);
            let count = clean[i].len().to_string();
            let kept = drawn[i].len().to_string();
            svg.open(
                "g",
                &[
                    ("class", "series"),
                    ("data-series", &s.name),
                    ("data-points", &count),
                    ("data-drawn", &kept),
                ],
            );
            if !drawn[i].dots.is_empty() {
                let mut d = String::with_capacity(drawn[i].dots.len() * 12);
                for &(x, y) in &drawn[i].dots {
                    d.push_str(&format!("M{} {}h0", num(x), num(y)));
                }
                svg.path(
                    &d,
                    &[
                        ("class", "reads"),
                        ("stroke", color),
                        ("stroke-width", "2.4"),
                        ("stroke-linecap", "round"),
                        ("fill", "none"),
                    ],
                );
            }
            if !drawn[i].crosses.is_empty() {
                let mut d = String::with_capacity(drawn[i].crosses.len() * 24);
                for &(x, y) in &drawn[i].crosses {
                    d.push_str(&format!("M{} {}l3 3m0-3l-3 3", num(x - 1.5), num(y - 1.5)));
                }
                svg.path(
                    &d,
                    &[
                        ("class", "writes"),
                        ("stroke", color),
                        ("stroke-width", "1"),
                        ("fill", "none"),
                    ],
                );
            }
            svg.close();
        }
        if total == 0 {
            offsets.no_data(&mut svg);
        }

        let mut subtitle = format!("{total} requests");
        if cell_px > 0.0 {
            subtitle.push_str(&format!(
                "; {drawn_total} marks drawn (marks within {} px merged)",
                num(cell_px)
            ));
        }
        if dropped > 0 {
            subtitle.push_str(&format!(
                "; {dropped} requests with non-finite fields left out"
            ));
        }
        svg.text(LEFT, 42.0, &subtitle, Anchor::Start, "subtitle", None);
        legend::draw(&mut svg, &entries, LEFT, legend_top, plot_width);

        // Rate panels: bucketed over time.
        let span = x_ticks.max() - x_ticks.min();
        let bucket_s = match self.bucket_s {
            Some(b) if b.is_finite() && b > 0.0 => b,
            _ => nice_step(span, 100),
        };
        let count = ((span / bucket_s).ceil() as usize).clamp(1, 100_000);
        let buckets: Vec<Buckets> = clean
            .iter()
            .map(|points| bucketize(points, x_ticks.min(), bucket_s, count))
            .collect();
        let mib = (1u64 << 20) as f64;
        let per_second = |pick: &dyn Fn(&Buckets) -> &Vec<f64>, scale: f64| -> Vec<Vec<f64>> {
            buckets
                .iter()
                .map(|b| pick(b).iter().map(|v| v / scale / bucket_s).collect())
                .collect()
        };
        let bucket_note = format!(
            "; rates over {} s buckets",
            crate::table::format_fixed(bucket_s, decimals(bucket_s))
        );
        let mut top = offset_top + OFFSET_PANEL_HEIGHT + PANEL_GAP;
        let last_panel = self.rate_panels.len().saturating_sub(1);
        let panels = self.rate_panels.iter().enumerate().map(|(k, panel)| {
            let (values, y_label) = match panel {
                RatePanel::Throughput => (
                    per_second(&|b| &b.bytes, mib),
                    label_with_unit("throughput", Some("MiB/s")),
                ),
                RatePanel::Iops => (
                    per_second(&|b| &b.requests, 1.0),
                    label_with_unit("IOPS", Some("1/s")),
                ),
                RatePanel::SeeksPerSecond => (
                    per_second(&|b| &b.seeks, 1.0),
                    label_with_unit("seeks", Some("1/s")),
                ),
            };
            (values, y_label, (k == last_panel).then_some("time [s]"))
        });
        for (values, y_label, x_label) in panels {
            let peak = values.iter().flatten().fold(0.0f64, |m, v| m.max(*v));
            let axes = Axes {
                rect: Rect {
                    left: LEFT,
                    top,
                    width: plot_width,
                    height: RATE_PANEL_HEIGHT,
                },
                x: x_ticks.clone(),
                y: nice_ticks(0.0, (peak * 1.05).max(f64::MIN_POSITIVE), 4),
            };
            axes.draw(
                &mut svg,
                x_label.map(|l| format!("{l}{bucket_note}")).as_deref(),
                &y_label,
            );
            for (i, s) in series.iter().enumerate() {
                if clean[i].is_empty() {
                    continue;
                }
                // Stop at the series' last request: a line running on at zero after a trace
                // has ended would read as an idle device.
                let last_time = clean[i]
                    .iter()
                    .fold(f64::NEG_INFINITY, |m, p| m.max(p.time_s));
                let last_bucket = (((last_time - x_ticks.min()) / bucket_s).floor().max(0.0)
                    as usize)
                    .min(count - 1);
                let mut d = String::new();
                for (k, v) in values[i].iter().enumerate().take(last_bucket + 1) {
                    let x0 = axes.px(x_ticks.min() + k as f64 * bucket_s);
                    let x1 =
                        axes.px((x_ticks.min() + (k + 1) as f64 * bucket_s).min(x_ticks.max()));
                    let y = axes.py(*v);
                    if k == 0 {
                        d.push_str(&format!("M{} {}", num(x0), num(y)));
                    } else {
                        d.push_str(&format!("V{}", num(y)));
                    }
                    d.push_str(&format!("H{}", num(x1)));
                }
                svg.path(
                    &d,
                    &[
                        ("class", "rate"),
                        ("data-series", &s.name),
                        ("stroke", palette::color(i)),
                        ("stroke-width", "1.5"),
                        ("fill", "none"),
                        ("stroke-opacity", "0.85"),
                    ],
                );
            }
            if total == 0 {
                axes.no_data(&mut svg);
            }
            top += RATE_PANEL_HEIGHT + PANEL_GAP;
        }
        svg.finish()
    }
}

/// Decimals needed to print a 1-2-5 step exactly.
fn decimals(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    }
}

/// Draws `series` with default settings and the given title.
pub fn offset_plot(title: &str, series: &[OffsetSeries]) -> String {
    OffsetPlot {
        title: title.to_string(),
        ..OffsetPlot::default()
    }
    .render(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(time_s: f64, offset_bytes: f64, length_bytes: f64) -> IoPoint {
        IoPoint {
            time_s,
            offset_bytes,
            length_bytes,
            is_write: false,
        }
    }

    #[test]
    fn seeks_are_breaks_in_contiguity() {
        // 0..4096, 4096..8192 sequential; then a jump; then back-to-back at the new place.
        let points = [
            point(0.0, 0.0, 4096.0),
            point(0.1, 4096.0, 4096.0),
            point(0.2, 1e9, 4096.0),
            point(1.5, 1e9 + 4096.0, 4096.0),
        ];
        let b = bucketize(&points, 0.0, 1.0, 2);
        assert_eq!(b.seeks, [1.0, 0.0]);
        assert_eq!(b.requests, [3.0, 1.0]);
        assert_eq!(b.bytes, [3.0 * 4096.0, 4096.0]);
    }
}
