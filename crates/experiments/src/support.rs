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

/// The device presets a run prices on: `--device`'s comma-separated list (`list`), else
/// `default`. Every name is loaded here, so a typo fails before any work and makes nothing;
/// the first preset is the one the capture presents and the report leads with.
pub fn device_list(list: Option<&str>, default: &[String]) -> Result<Vec<String>> {
    let devices: Vec<String> = match list {
        Some(list) => list.split(',').map(|s| s.trim().to_string()).collect(),
        None => default.to_vec(),
    };
    if devices.is_empty() || devices.iter().any(String::is_empty) {
        anyhow::bail!(
            "--device '{}': give one or more device presets, separated by commas (`layoutlab device list`)",
            list.unwrap_or_default()
        );
    }
    for d in &devices {
        load_device(d).with_context(|| format!("device '{d}'"))?;
    }
    Ok(devices)
}

/// The table of captures priced on several presets (`--device A,B`): each row's key cells
/// (`keys` name their columns), then its predicted seconds on every preset, in `devices`'
/// order. `None` for one preset, whose seconds the run's own table has.
pub fn per_device_table<'a>(
    title: &str,
    keys: &[&str],
    devices: &[String],
    rows: impl IntoIterator<Item = (Vec<String>, &'a crate::steps::price::SecondsOn)>,
) -> Result<Option<layoutlab_report::Table>> {
    use layoutlab_report::{Cell, Column, Table};
    if devices.len() < 2 {
        return Ok(None);
    }
    let mut columns: Vec<Column> = keys.iter().map(|k| Column::text(k)).collect();
    columns.extend(devices.iter().map(|d| Column::number(d, Some("s"))));
    let mut table = Table::new(title, columns);
    for (key, seconds) in rows {
        let mut row: Vec<Cell> = key.iter().map(Cell::text).collect();
        row.extend(
            devices
                .iter()
                .map(|d| seconds.get(d).map_or(Cell::Empty, |s| Cell::num(*s, 3))),
        );
        table.push_row(row)?;
    }
    Ok(Some(table))
}

/// Refuses `--closed-loop` over several presets, before anything is made: a closed-loop
/// capture runs on one emulated disk, so it is of one preset (another's stream would be
/// another capture); also refuses one the route cannot honour at `time_scale`.
pub fn check_closed_loop_devices(devices: &[String], time_scale: f64) -> Result<()> {
    if devices.len() != 1 {
        let emulable: Vec<&str> = devices
            .iter()
            .filter(|d| check_emulable(d, time_scale).is_ok())
            .map(String::as_str)
            .collect();
        anyhow::bail!(
            "--closed-loop captures on one emulated disk, but this run prices on {} presets \
             ({}): give one --device{}; the open-loop run prices one capture on all",
            devices.len(),
            devices.join(", "),
            match emulable.as_slice() {
                [] => String::new(),
                some => format!(" (of these the route can emulate {})", some.join(", ")),
            }
        );
    }
    check_emulable(&devices[0], time_scale)
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
    capture_queue_flagged(device, read_ahead_kb, max_sectors_kb, None)
}

/// [`capture_queue`], with the rotational flag `rotational` where a run sets its own
/// (`--set os_rotational=false`: the flag alone, docs/fidelity.md's request-stream row);
/// `None` keeps the model's.
pub fn capture_queue_flagged(
    device: &str,
    read_ahead_kb: Option<u32>,
    max_sectors_kb: Option<u32>,
    rotational: Option<bool>,
) -> Result<layoutlab_rig::QueueSpec> {
    let model = load_device(device)?;
    Ok(layoutlab_rig::QueueSpec {
        rotational: Some(rotational.unwrap_or_else(|| model.rotational())),
        read_ahead_kb,
        max_sectors_kb,
        logical_block_bytes: None,
    })
}

/// Runs `work(0..count)` on up to `jobs` threads, each taking the next index as it finishes
/// one (a work queue), and returns the results in index order. After a failure nothing new
/// starts (work under way finishes) and the first failure, in index order, is returned.
/// Operations whose units are independent (each its own image, loop device and traced
/// program, no cache dropped: e.g. fsck checks) run them at once on a multi-core machine.
pub fn run_queue<T: Send>(
    count: usize,
    jobs: usize,
    work: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<Result<T>>>> = (0..count).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, count.max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= count {
                    break;
                }
                let r = work(i);
                let failed = r.is_err();
                *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                if failed {
                    next.store(count, Ordering::SeqCst);
                }
            });
        }
    });
    let mut out = Vec::with_capacity(count);
    for (i, r) in results.into_iter().enumerate() {
        match r.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(r) => out.push(r?),
            None => anyhow::bail!(
                "unit {} of {count} was not run (an earlier one failed)",
                i + 1
            ),
        }
    }
    Ok(out)
}

/// The units of work an operation runs at once: `--jobs`, or one per CPU.
pub fn jobs(requested: Option<u32>) -> usize {
    requested.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    )
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

/// Where an operation makes its images: `chosen` (`--workdir`), or else a private tmpfs of half
/// the memory available now, unmounted when the returned guard drops. Keep the guard alive
/// while anything lies in the directory.
pub fn work_dir(
    chosen: Option<&std::path::Path>,
) -> Result<(std::path::PathBuf, Option<layoutlab_rig::Mount>)> {
    match chosen {
        Some(d) => Ok((d.to_path_buf(), None)),
        None => {
            let cap = layoutlab_rig::mem_available_bytes()? / 2;
            let memory = layoutlab_rig::Mount::tmpfs(cap)
                .context("mounting the in-memory work directory (or choose one: --workdir DIR)")?;
            Ok((memory.target().to_path_buf(), Some(memory)))
        }
    }
}

/// [`work_dir`], with a note on stderr when a chosen directory that exists is not in memory:
/// the kernel's read-ahead, and so the requests `issuer_issues` (e.g. "e2fsck issues"), then
/// depend on how fast that disk answers.
pub fn work_dir_noting(
    chosen: Option<&std::path::Path>,
    issuer_issues: &str,
) -> Result<(std::path::PathBuf, Option<layoutlab_rig::Mount>)> {
    if let Some(d) = chosen {
        if d.exists() && !layoutlab_rig::is_memory_fs(d)? {
            eprintln!(
                "note: {} is not in memory: the kernel's read-ahead, and so the requests \
                 {issuer_issues}, depend on how fast this disk answers (docs/replay.md)",
                d.display()
            );
        }
    }
    work_dir(chosen)
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

/// The shortest answer the emulator's route gives, µs: `bench emulate` measured the kernel's
/// completion a median 62-104 µs after the model's on this machine (docs/emulate.md), and the
/// Memulator's bar allows 100 µs. A device whose 4 KiB read, divided by the time scale, is
/// shorter than this cannot be emulated here.
pub const ROUTE_FLOOR_US: f64 = 100.0;

/// The model the emulator asks: `preset` behind its FCFS host queue, the replay's own
/// ([`layoutlab_device::serve::ArrivalServer`]). Built on the emulator's scheduler thread,
/// because a model need not be `Send`; loaded once here to refuse a bad name first.
pub fn emulator_model(
    preset: &str,
) -> Result<impl FnOnce() -> layoutlab_rig::ServiceModel + Send + 'static> {
    load_device(preset)?;
    let preset = preset.to_string();
    Ok(move || -> layoutlab_rig::ServiceModel {
        let device = load_device(&preset).expect("the preset loaded a moment ago");
        let mut server = layoutlab_device::serve::ArrivalServer::new(device);
        Box::new(move |arrival_ns, req| {
            let io = layoutlab_device::IoRequest {
                op: req.op,
                sector: req.sector,
                sectors: req.sectors,
                flags: layoutlab_trace::Flags::default(),
            };
            server.serve(arrival_ns, &io).complete_ns
        })
    })
}

/// How long `preset`'s model takes for one 4 KiB read on the idle device at its first sector,
/// divided by `time_scale`, in µs: what [`ROUTE_FLOOR_US`] is compared with.
pub fn idle_read_us(preset: &str, time_scale: f64) -> Result<f64> {
    let mut server = layoutlab_device::serve::ArrivalServer::new(load_device(preset)?);
    let read = layoutlab_device::IoRequest {
        op: Op::Read,
        sector: 0,
        sectors: 8,
        flags: layoutlab_trace::Flags::default(),
    };
    Ok(server.serve(0.0, &read).complete_ns / time_scale / 1e3)
}

/// Refuses a time scale that is not a positive number, or a preset faster than the route can
/// honour at `time_scale` (its idle 4 KiB read under [`ROUTE_FLOOR_US`]): checked before an
/// emulated device is made.
pub fn check_emulable(preset: &str, time_scale: f64) -> Result<()> {
    if !(time_scale.is_finite() && time_scale > 0.0) {
        anyhow::bail!(
            "time scale {time_scale}: it must be a positive number (1 answers at the model's time)"
        );
    }
    let read_us = idle_read_us(preset, time_scale)?;
    if read_us < ROUTE_FLOOR_US {
        anyhow::bail!(
            "{preset} is faster than this route can honour: its 4 KiB read takes {read_us:.0} µs \
             at time scale {time_scale}, and the FUSE and loop route answers no sooner than about \
             {ROUTE_FLOOR_US:.0} µs after the kernel issues a request (docs/emulate.md); use a \
             slower device or a smaller time scale"
        );
    }
    Ok(())
}

/// Starts `layoutlab device emulate`'s device over `image`: `preset`'s model at time scale
/// `time_scale`, presenting `queue`. A preset faster than the route can honour is refused.
pub fn start_emulator(
    preset: &str,
    image: &std::path::Path,
    time_scale: f64,
    read_only: bool,
    queue: layoutlab_rig::QueueSpec,
) -> Result<layoutlab_rig::Emulator> {
    let make = emulator_model(preset)?;
    check_emulable(preset, time_scale)?;
    let opts = layoutlab_rig::EmulateOptions {
        read_only,
        time_scale,
        queue,
    };
    layoutlab_rig::Emulator::start(image, &opts, make)
        .with_context(|| format!("emulating {preset} over {}", image.display()))
}

/// The share of one CPU a closed-loop capture at time scale K gives the traced program for a
/// CPU factor F (`--cpu-scale`): K/F, so that on the wall its computing takes F/K times this
/// machine's, as the device answers K times faster than the model: the period's ratio of
/// computing to disk time, which decides what the kernel overlaps (a read-ahead done or not
/// when the next request comes). The model's clock itself is paced by the CPU times F
/// (`layoutlab_rig::CpuPace::set_cpu_scale`), throttled or not. `None` when F ≤ K: a throttle
/// can only slow a program down.
pub fn closed_loop_cpu_share(cpu_scale: f64, time_scale: f64) -> Option<f64> {
    (cpu_scale > time_scale).then(|| time_scale / cpu_scale)
}

/// The closed-loop time of a served stream: the model's time while a request was in the
/// device and the time between, ns. Between requests placed by the wall that is the real
/// time (the program's CPU, which the time scale does not shorten: the model's clock runs K
/// times faster than the wall there); before a request placed by the program's CPU time
/// (`EmulatedRequest::cpu_ns`, `layoutlab_rig::CpuPace`) the model's clock already advanced
/// by that CPU time, which is charged as it is.
pub fn charged_ns(served: &[layoutlab_rig::EmulatedRequest], time_scale: f64) -> f64 {
    let Some(first) = served.first() else {
        return 0.0;
    };
    let mut busy_until = first.arrival_ns;
    let mut charged = 0.0;
    for r in served {
        if r.arrival_ns > busy_until {
            let per_model_ns = if r.cpu_ns.is_some() { 1.0 } else { time_scale };
            charged += (r.arrival_ns - busy_until) / per_model_ns;
            busy_until = r.arrival_ns;
        }
        if r.complete_ns > busy_until {
            charged += r.complete_ns - busy_until;
            busy_until = r.complete_ns;
        }
    }
    charged
}

/// The device a raw-or-file-system capture runs on (random-read's targets, request-merging's
/// stacks): a loop device over a backing store `B` (a sparse file, a zram device), the
/// emulated disk over that store (closed loop), or a kernel file system, itself possibly moved
/// onto an emulated disk. Field order is drop order: the device before its store, the rig
/// lock last.
pub enum CaptureTarget<B> {
    /// A loop device presenting the preset's queue over the store, open loop.
    Raw {
        /// The device the capture traces.
        loopdev: layoutlab_rig::LoopDevice,
        /// Kept alive until the device is gone.
        _backing: B,
        /// Held for the target's life.
        _lock: layoutlab_rig::RigLock,
    },
    /// The emulated disk over the store (closed loop).
    Emulated {
        /// The emulator, whose loop device the capture traces.
        emulator: Box<layoutlab_rig::Emulator>,
        /// Kept alive until the emulator is stopped.
        _backing: B,
        /// Held for the target's life.
        _lock: layoutlab_rig::RigLock,
    },
    /// A kernel file system (it holds its own devices and lock).
    Fs(Box<layoutlab_rig::KernelFs>),
}

impl<B> CaptureTarget<B> {
    /// The loop device the capture traces.
    pub fn loopdev(&self) -> &layoutlab_rig::LoopDevice {
        match self {
            CaptureTarget::Raw { loopdev, .. } => loopdev,
            CaptureTarget::Emulated { emulator, .. } => emulator.device(),
            CaptureTarget::Fs(k) => k.device(),
        }
    }

    /// What paces the emulated disk's clock by the traced program's CPU; `None` open loop.
    pub fn cpu_pace(&self) -> Option<layoutlab_rig::CpuPace> {
        match self {
            CaptureTarget::Raw { .. } => None,
            CaptureTarget::Emulated { emulator, .. } => Some(emulator.cpu_pace()),
            CaptureTarget::Fs(k) => k.cpu_pace(),
        }
    }

    /// Requests the emulated disk has served so far (0 open loop).
    pub fn served_so_far(&self) -> usize {
        match self {
            CaptureTarget::Raw { .. } => 0,
            CaptureTarget::Emulated { emulator, .. } => emulator.served_count(),
            CaptureTarget::Fs(k) => k.served_so_far(),
        }
    }

    /// Stops emulating and returns every request the emulated disk served, in arrival order
    /// (empty open loop).
    pub fn stop_emulating(self) -> Result<Vec<layoutlab_rig::EmulatedRequest>> {
        Ok(match self {
            CaptureTarget::Raw { .. } => Vec::new(),
            CaptureTarget::Emulated { emulator, .. } => emulator.stop()?,
            CaptureTarget::Fs(mut k) if k.cpu_pace().is_some() => k.stop_emulating()?,
            CaptureTarget::Fs(_) => Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{
        charged_ns, check_closed_loop_devices, closed_loop_cpu_share, device_list, run_queue,
    };
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Two requests of 10 model ms each with a 40 model-ms gap between them, the second
    /// placed by the program's CPU (`paced`) or by the wall.
    fn two_requests(paced: bool) -> Vec<layoutlab_rig::EmulatedRequest> {
        let r = |arrival_ms: f64, cpu_ns: Option<u64>| layoutlab_rig::EmulatedRequest {
            request: layoutlab_rig::EmuRequest {
                op: layoutlab_trace::Op::Read,
                sector: 0,
                sectors: 8,
            },
            arrival_ns: arrival_ms * 1e6,
            received_ns: 0,
            cpu_ns,
            complete_ns: (arrival_ms + 10.0) * 1e6,
            reply_late_ns: 0.0,
        };
        vec![r(0.0, None), r(50.0, paced.then_some(7))]
    }

    #[test]
    fn the_time_between_requests_is_charged_as_the_clock_that_placed_them() {
        let ms = |ns: f64| (ns / 1e3).round() / 1e3;
        // Placed by the wall at K = 4: the 40 model ms between are 10 ms of the wall.
        assert_eq!(ms(charged_ns(&two_requests(false), 4.0)), 30.0);
        // Placed by the program's CPU (times F): the model's clock already is the CPU's.
        assert_eq!(ms(charged_ns(&two_requests(true), 4.0)), 60.0);
        // The throttle: K/F when F > K, none otherwise.
        assert_eq!(closed_loop_cpu_share(8.0, 4.0), Some(0.5));
        assert_eq!(closed_loop_cpu_share(2.0, 4.0), None);
        assert_eq!(closed_loop_cpu_share(1.0, 1.0), None);
    }

    #[test]
    fn a_queue_keeps_the_order_of_its_units_whatever_finishes_first() {
        // Early units sleep longest, so with 3 threads later ones finish first.
        let out = run_queue(6, 3, |i| {
            std::thread::sleep(std::time::Duration::from_millis(5 * (6 - i as u64)));
            Ok(i * 10)
        })
        .unwrap();
        assert_eq!(out, vec![0, 10, 20, 30, 40, 50]);
    }

    #[test]
    fn after_a_failure_nothing_new_starts_and_the_failure_is_returned() {
        let started = AtomicUsize::new(0);
        let err = run_queue(10, 1, |i| {
            started.fetch_add(1, Ordering::SeqCst);
            if i == 2 {
                anyhow::bail!("unit 2 failed")
            }
            Ok(i)
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "unit 2 failed");
        // one thread: units 0, 1 and 2 ran, none after the failure
        assert_eq!(started.load(Ordering::SeqCst), 3);
    }

    /// Closed loop captures on one emulated disk: several presets are refused, naming those
    /// the route can emulate; an SSD faster than the route is refused alone.
    #[test]
    fn closed_loop_takes_one_preset_the_route_can_emulate() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let four = names(&[
            "sata-500g-2008",
            "sata-400g-2007",
            "ssd-sata-2010",
            "ssd-nvme-2024",
        ]);
        let err = check_closed_loop_devices(&four, 1.0)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("give one --device")
                && err.contains("the route can emulate sata-500g-2008, sata-400g-2007)"),
            "{err}"
        );
        let err = check_closed_loop_devices(&names(&["ssd-nvme-2024"]), 1.0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("faster than this route"), "{err}");
        check_closed_loop_devices(&names(&["sata-500g-2008"]), 1.0).unwrap();
        assert!(check_closed_loop_devices(&names(&["sata-500g-2008"]), 0.0).is_err());
    }

    /// `--device A,B`: the presets in the order given, trimmed; none given, the default; an
    /// unknown or empty name in the list is refused, naming it.
    #[test]
    fn a_device_list_is_checked_name_by_name() {
        let default = vec!["sata-400g-2007".to_string()];
        assert_eq!(device_list(None, &default).unwrap(), default);
        assert_eq!(
            device_list(Some("sata-400g-2007, sata-400g-2007-alt-samsung"), &default).unwrap(),
            ["sata-400g-2007", "sata-400g-2007-alt-samsung"]
        );
        let err = format!(
            "{:#}",
            device_list(Some("sata-400g-2007,sata-400g-2007-alt"), &default).unwrap_err()
        );
        assert!(err.contains("device 'sata-400g-2007-alt'"), "{err}");
        for bad in ["sata-400g-2007,", ",", ""] {
            let err = device_list(Some(bad), &default).unwrap_err().to_string();
            assert!(err.contains("one or more device presets"), "{bad}: {err}");
        }
    }
}
