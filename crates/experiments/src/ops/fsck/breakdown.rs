//! What a replayed block trace read, by class of block (inode table, indirect block, directory,
//! bitmap, ...: `layoutlab_layout::BlockClasses`) and by window of modelled time: requests,
//! bytes and the drive's time per class. Any operation on an ext image can be attributed this
//! way (fsck's pass 1, a delete); it needs only the image's classes, the trace and its replay.

use layoutlab_device::replay::Replayed;
use layoutlab_layout::{BlockClass, BlockClasses};
use layoutlab_trace::{Op, Trace};
use serde::Serialize;

/// One class in one window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ClassShare {
    /// Requests whose bytes are mostly of this class.
    pub requests: u64,
    /// Bytes of this class read or written (a request is split at class boundaries).
    pub bytes: u64,
    /// Modelled drive time of those requests, seconds: from when the drive could start the
    /// request (its dispatch, or the previous completion) to its completion. It depends on
    /// the device model alone, not on the CPU time of the capture.
    pub device_seconds: f64,
    /// Sum of the distances from the previous request's end to this request's start, bytes
    /// (how far the head had to travel for these requests).
    pub travel_bytes: f64,
}

/// One window of modelled time.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// Start of the window, seconds of modelled time (by request dispatch).
    pub start_s: f64,
    /// End of the window, seconds.
    pub end_s: f64,
    /// Per class, in [`BlockClass::ALL`] order; classes with no request are left out.
    pub classes: Vec<(BlockClass, ClassShare)>,
}

/// A whole replay, by class and window.
#[derive(Clone, Debug, Serialize)]
pub struct Breakdown {
    /// Width of each window, seconds.
    pub window_s: f64,
    /// The windows, in time order.
    pub windows: Vec<Window>,
    /// Per class over the whole run.
    pub total: Vec<(BlockClass, ClassShare)>,
    /// The dominant class of every request, in trace order (not serialized; for plots).
    #[serde(skip)]
    pub request_class: Vec<BlockClass>,
}

/// Attributes the requests of `trace` (replayed as `replayed`) whose `tag` satisfies `keep`
/// to the classes of the file system on the traced device, in windows of `window_s`.
pub fn breakdown(
    classes: &BlockClasses,
    trace: &Trace,
    replayed: &Replayed,
    window_s: f64,
    keep: impl Fn(&str) -> bool,
) -> Breakdown {
    let window_s = window_s.max(1e-3);
    let mut request_class = vec![BlockClass::Other; trace.requests.len()];
    // Drive time: requests in dispatch order, each from max(dispatch, previous completion).
    let mut order: Vec<usize> = (0..trace.requests.len())
        .filter(|&i| matches!(trace.requests[i].op, Op::Read | Op::Write))
        .collect();
    order.sort_by(|&a, &b| {
        replayed.requests[a]
            .start_ns
            .total_cmp(&replayed.requests[b].start_ns)
    });
    let mut windows: Vec<Window> = Vec::new();
    let mut total: Vec<(BlockClass, ClassShare)> = Vec::new();
    let mut drive_free_ns = f64::NEG_INFINITY;
    let mut head_bytes: Option<u64> = None;
    let add = |list: &mut Vec<(BlockClass, ClassShare)>, c: BlockClass| -> usize {
        match list.iter().position(|(k, _)| *k == c) {
            Some(p) => p,
            None => {
                list.push((c, ClassShare::default()));
                list.sort_by_key(|(k, _)| *k);
                list.iter().position(|(k, _)| *k == c).unwrap()
            }
        }
    };
    for i in order {
        let r = &trace.requests[i];
        let rep = replayed.requests[i];
        let busy_from = rep.start_ns.max(drive_free_ns);
        let device_s = (rep.complete_ns - busy_from).max(0.0) / 1e9;
        drive_free_ns = drive_free_ns.max(rep.complete_ns);
        let offset = r.sector * 512;
        let len = r.bytes();
        let travel = head_bytes.map_or(0.0, |h| (offset as f64 - h as f64).abs());
        head_bytes = Some(offset + len);
        let class = classes.dominant(offset, len);
        request_class[i] = class;
        let tag = trace
            .tags
            .get(r.tag as usize)
            .map(String::as_str)
            .unwrap_or("");
        if !keep(tag) {
            continue;
        }
        let w = (rep.start_ns / 1e9 / window_s).floor().max(0.0) as usize;
        while windows.len() <= w {
            let k = windows.len() as f64;
            windows.push(Window {
                start_s: k * window_s,
                end_s: (k + 1.0) * window_s,
                classes: Vec::new(),
            });
        }
        for list in [&mut windows[w].classes, &mut total] {
            let p = add(list, class);
            let s = &mut list[p].1;
            s.requests += 1;
            s.device_seconds += device_s;
            s.travel_bytes += travel;
            for (c, n) in classes.split_bytes(offset, len) {
                let p = add(list, c);
                list[p].1.bytes += n;
            }
        }
    }
    Breakdown {
        window_s,
        windows,
        total,
        request_class,
    }
}

/// A round window width (1, 2 or 5 × 10^k seconds) giving about `windows` windows over
/// `span_s` seconds.
pub fn round_window_s(span_s: f64, windows: f64) -> f64 {
    let raw = (span_s / windows).max(1e-3);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|w| *w >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// The breakdown as a table: per window, the requests and drive seconds of the inode tables,
/// the indirect blocks and everything else, and how far the head travelled per request.
pub fn window_table(title: &str, b: &Breakdown) -> anyhow::Result<layoutlab_report::Table> {
    use layoutlab_report::{Cell, Column, Table};
    let mut t = Table::new(
        title,
        vec![
            Column::text("window [s]"),
            Column::number("inode table req", None),
            Column::number("inode table read", Some("MB")),
            Column::number("inode table drive", Some("s")),
            Column::number("indirect req", None),
            Column::number("indirect drive", Some("s")),
            Column::number("other req", None),
            Column::number("other drive", Some("s")),
            Column::number("travel per req", Some("MB")),
        ],
    );
    let rows = b
        .windows
        .iter()
        .map(|w| (format!("{:.0}–{:.0}", w.start_s, w.end_s), &w.classes))
        .chain(std::iter::once(("all".to_string(), &b.total)));
    for (label, classes) in rows {
        let get = |c: BlockClass| classes.iter().find(|(k, _)| *k == c).map(|x| &x.1);
        let it = get(BlockClass::InodeTable).cloned().unwrap_or_default();
        let ind = get(BlockClass::Indirect).cloned().unwrap_or_default();
        let (mut other_req, mut other_s) = (0u64, 0.0);
        for (c, s) in classes {
            if !matches!(c, BlockClass::InodeTable | BlockClass::Indirect) {
                other_req += s.requests;
                other_s += s.device_seconds;
            }
        }
        let requests: u64 = classes.iter().map(|(_, s)| s.requests).sum();
        let travel: f64 = classes.iter().map(|(_, s)| s.travel_bytes).sum();
        if requests == 0 {
            continue;
        }
        t.push_row(vec![
            Cell::text(label),
            Cell::num(it.requests as f64, 0),
            Cell::num(it.bytes as f64 / (1u64 << 20) as f64, 0),
            Cell::num(it.device_seconds, 1),
            Cell::num(ind.requests as f64, 0),
            Cell::num(ind.device_seconds, 1),
            Cell::num(other_req as f64, 0),
            Cell::num(other_s, 1),
            Cell::num(travel / requests as f64 / 1e6, 1),
        ])?;
    }
    Ok(t)
}

/// Disk offset over modelled time, one colour per class of block read.
pub fn class_plot(title: &str, trace: &Trace, replayed: &Replayed, b: &Breakdown) -> String {
    let mut series = crate::support::io_series_by_class(
        trace,
        |i| replayed.requests[i].start_ns / 1e9,
        |i| b.request_class[i].as_str(),
    );
    series.sort_by_key(|s| {
        BlockClass::ALL
            .iter()
            .position(|c| c.as_str() == s.name)
            .unwrap_or(usize::MAX)
    });
    // Fewer marks than the default (merged on a grid beyond that): one of these per policy
    // goes into the docs, and the classes, not single requests, are the point.
    layoutlab_report::OffsetPlot {
        title: title.to_string(),
        max_points: 30_000,
        rate_panels: vec![
            layoutlab_report::RatePanel::Throughput,
            layoutlab_report::RatePanel::SeeksPerSecond,
        ],
        ..layoutlab_report::OffsetPlot::default()
    }
    .render(&series)
}
