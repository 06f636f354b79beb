//! Small helpers every operation (and the binary's other commands) share.

use anyhow::{Context, Result};
use layoutlab_device::preset;
use layoutlab_report::IoPoint;
use layoutlab_trace::{Op, Trace};

/// A device model from a preset name or a preset `.toml` file.
pub fn load_device(name_or_path: &str) -> Result<Box<dyn layoutlab_device::Device>> {
    load_device_with(name_or_path, &preset::LoadOptions::default())
}

/// [`load_device`], with the SSD starting state a command asked for.
pub fn load_device_with(
    name_or_path: &str,
    opts: &preset::LoadOptions,
) -> Result<Box<dyn layoutlab_device::Device>> {
    let p = std::path::Path::new(name_or_path);
    if name_or_path.ends_with(".toml") && p.exists() {
        return preset::load_preset_file_with(p, opts)
            .with_context(|| format!("loading preset file {name_or_path}"));
    }
    Ok(preset::load_preset_with(name_or_path, opts)?)
}

/// The queue a capture device presents for the drive preset `device` models: rotational as
/// the model is ([`layoutlab_device::Device::rotational`]: every hard disk, no SSD), with the
/// experiment's read-ahead and largest request (`None` leaves the kernel's). A loop device
/// otherwise inherits the flag of its backing file's device (tmpfs, zram and SSDs are
/// non-rotational), and the kernel, e2fsck and file systems may key on it (btrfs's `ssd`
/// mode, ext4's `mb_max_linear_groups`; docs/rig.md).
pub fn capture_queue(
    device: &str,
    read_ahead_kb: Option<u32>,
    max_sectors_kb: Option<u32>,
) -> Result<layoutlab_rig::QueueSpec> {
    let model = load_device(device)?;
    Ok(layoutlab_rig::QueueSpec {
        rotational: Some(model.rotational()),
        read_ahead_kb,
        max_sectors_kb,
        logical_block_bytes: None,
    })
}

/// Parse a size such as `4k`, `16g`, `512`, `1.5M` (binary units), for clap: the device
/// crate's fio-style parser with its error as text.
pub fn parse_size(s: &str) -> Result<u64, String> {
    layoutlab_device::job::parse_size_bytes(s).map_err(|e| e.to_string())
}

/// The reads and writes of a trace as points of an offset plot, request `i` drawn at
/// `time_s(i)` (the captured times, or a model's).
pub fn io_points(trace: &Trace, time_s: impl Fn(usize) -> f64) -> Vec<IoPoint> {
    trace
        .requests
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.op, Op::Read | Op::Write))
        .map(|(i, r)| IoPoint {
            time_s: time_s(i),
            offset_bytes: r.sector as f64 * 512.0,
            length_bytes: r.bytes() as f64,
            is_write: r.op == Op::Write,
        })
        .collect()
}

/// The reads and writes of a trace as offset-plot series, one per class: request `i` drawn at
/// `time_s(i)` in the series `class_of(i)` names. Series come in name order.
pub fn io_series_by_class<'a>(
    trace: &Trace,
    time_s: impl Fn(usize) -> f64,
    class_of: impl Fn(usize) -> &'a str,
) -> Vec<layoutlab_report::OffsetSeries> {
    let points = io_points(trace, &time_s);
    // io_points keeps reads and writes in trace order: pair them back with their request.
    let io =
        (0..trace.requests.len()).filter(|&i| matches!(trace.requests[i].op, Op::Read | Op::Write));
    let mut by: std::collections::BTreeMap<&str, Vec<IoPoint>> = std::collections::BTreeMap::new();
    for (p, i) in points.into_iter().zip(io) {
        by.entry(class_of(i)).or_default().push(p);
    }
    by.into_iter()
        .map(|(name, points)| layoutlab_report::OffsetSeries {
            name: name.to_string(),
            points,
        })
        .collect()
}

/// A one-line warning on stderr when leftovers of killed runs exist (long commands print it
/// first; they do not remove anything themselves).
pub fn warn_if_leftovers() {
    if let Ok(found) = layoutlab_rig::stale::find(&std::env::temp_dir()) {
        if !found.is_empty() {
            eprintln!(
                "note: {} leftovers of killed layoutlab runs (tracefs instances, mounts, loop devices, temp files); `layoutlab clean --dry-run` lists them, `layoutlab clean` removes them",
                found.len()
            );
        }
    }
}
