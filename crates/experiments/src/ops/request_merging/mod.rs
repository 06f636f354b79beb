//! The "request-merging" operation: what the block layer makes of `dd bs=1M`, bio by bio and
//! request by request, and what merging is worth on a disk and an SSD.
//!
//! Coly Li (2016) saw buffered `dd bs=1M` writes reach a linear device-mapper target as 4 KiB
//! bios, merged only by the elevator of the disk below, while O_DIRECT kept 1 MiB. This
//! kernel has no device mapper. The closest real stack it offers is a loop device (blk-mq,
//! request-based: it merges and splits) over zram (bio-based: it never merges): the bios a
//! file system or the page cache submits to the loop device (`block_bio_queue`) are what a dm
//! target would receive, and the loop device's requests (`block_rq_issue`) are what the
//! elevator of the disk below dm would issue. It differs from dm in that the bios are not
//! remapped onto a second device (no `block_bio_remap`): the bio level and the request level
//! are two views of one queue; the loop device's queue limits (max_sectors_kb) split bios as
//! a disk's would under dm (dm stacks the disk's limits); and the loop device's scheduler is
//! `none` (blk-mq still merges in the submitter's plug and its software queues, which is what
//! the trace shows), where a 2016 disk ran cfq or deadline.
//!
//! For each target (the raw loop device; a file on ext3; a file on ext4), mode (buffered,
//! O_DIRECT) and operation (write, then read after dropping caches) the real `dd bs=1M` runs
//! as one traced phase. Per phase and level: the size distribution of its reads or writes,
//! and the stream priced on each device preset as a queue holding the whole stream at once,
//! in issue order (FCFS at the preset's queue depth): the bio stream as if nothing had merged,
//! the request stream as issued.
//!
//! With `--closed-loop [K]` the loop device is the emulated disk of the one preset
//! (`layoutlab device emulate`'s route, docs/emulate.md): each `dd` waits for its requests as
//! that disk answers them, at its time divided by K. The model's clock between requests follows
//! the `dd`'s own CPU time (`layoutlab_rig::CpuPace`: each `dd` is one process this operation
//! spawns and names before it execs), so the machine's load moves no arrival; the kernel's own
//! threads (the loop worker, jbd2 on ext3/ext4) are not counted, as for e2fsck. The request
//! level's row carries the time measured there beside the replays of the same stream.

use crate::output::{write_json, Human};
use crate::steps::check::ClosedLoopRun;
use crate::steps::phases::{of_tag, TagTable};
use crate::{kernel_profile, Experiment, Operation, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_report::{Cell, Column, HtmlBundle, SweepChart, SweepSeries, SweepStyle, Table};
use layoutlab_rig::{
    check_fits, Backing, BioEvents, CpuPace, FsKind, KernelFs, KernelFsOptions, LoopDevice,
    RigLock, TraceOptions, TracefsSession, Zram,
};
use layoutlab_trace::{Op, Trace};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The "request-merging" operation (registered in [`crate::OPERATIONS`]).
pub struct RequestMerging;

/// Parameters of the "request-merging" operation: an experiment's `[request-merging]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestMergingSpec {
    /// MiB each `dd` writes and reads (`count` of `dd bs=1M`).
    pub mib: u64,
    /// Targets, in order: "raw" (the loop device itself) or a kernel profile (a file on it).
    pub targets: Vec<String>,
    /// Modes, in order: "buffered", "direct".
    pub modes: Vec<String>,
    /// Device presets the streams are priced on (`--device a,b` picks others).
    pub devices: Vec<String>,
    /// Read-ahead of the loop device, KiB (the OS of the modelled disk's).
    pub read_ahead_kb: u32,
    /// Largest request of the loop device, KiB (the OS of the modelled disk's).
    pub max_sectors_kb: u32,
}

const MODES: [&str; 2] = ["buffered", "direct"];
const MIB: u64 = 1 << 20;

impl Operation for RequestMerging {
    fn name(&self) -> &'static str {
        "request-merging"
    }

    /// It makes loop devices on zram and traces them.
    fn needs_root(&self, _exp: &Experiment) -> bool {
        true
    }

    /// `--closed-loop` captures every target on the emulated disk of its one preset
    /// (`capture_target`).
    fn supports_closed_loop(&self) -> bool {
        true
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let s: RequestMergingSpec = exp.params()?;
        check_spec(&s)
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run_request_merging(exp, args)
    }
}

fn check_spec(s: &RequestMergingSpec) -> Result<()> {
    if s.mib == 0 || s.mib > 1 << 20 {
        bail!("mib must be in 1..=1048576, got {}", s.mib);
    }
    for t in &s.targets {
        kernel_profile::target(t)?;
    }
    for m in &s.modes {
        if !MODES.contains(&m.as_str()) {
            bail!("unknown mode '{m}'; valid: {}", MODES.join(", "));
        }
    }
    if s.devices.is_empty() {
        bail!("devices must name at least one preset");
    }
    if s.read_ahead_kb == 0 || s.max_sectors_kb < 4 {
        bail!("read_ahead_kb must be at least 1 and max_sectors_kb at least 4");
    }
    Ok(())
}

/// One level of one phase, priced on one device (a row of the JSON contract).
#[derive(Clone, Debug, Serialize)]
pub struct LevelRun {
    /// "raw" or the kernel profile of the file system the file is on.
    pub target: String,
    /// "buffered" or "direct".
    pub mode: String,
    /// "read" or "write".
    pub op: String,
    /// "bio" (`block_bio_queue`) or "request" (`block_rq_issue`).
    pub level: String,
    /// Bios or requests of the phase in its direction.
    pub requests: u64,
    /// The request level only: the phase's requests in every direction (its reads, writes
    /// and cache flushes), which is what an emulated disk serves for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_requests: Option<u64>,
    /// Their mean size, KiB.
    pub mean_request_kb: f64,
    /// The device preset.
    pub device: String,
    /// Seconds the device needs to serve the stream (all of it queued at once, in order).
    pub seconds: f64,
    /// The request level only: the open-loop replay of the stream with its captured timing
    /// (each request issued its think time after the completion before it, FCFS at the
    /// preset's queue depth, as large-delete prices its delete): what a closed-loop measured
    /// time is compared with, s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_seconds: Option<f64>,
    /// With --closed-loop, the request level on the emulated preset: the phase's time
    /// measured on the emulated disk (first request to last completion), K and the requests
    /// served; `seconds` and `replayed_seconds` stay the open-loop prices of the same stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<ClosedLoopRun>,
    /// The queue the traced loop device presented (docs/rig.md), when the trace came from
    /// a capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_queue: Option<layoutlab_trace::DeviceQueue>,
}

/// One traced `dd`: both levels, before pricing.
#[derive(Clone, Debug)]
pub struct Phase {
    /// Target ("raw" or a kernel profile).
    pub target: String,
    /// "buffered" or "direct".
    pub mode: String,
    /// The phase's direction.
    pub op: Op,
    /// Bios of the phase in its direction, in submission order.
    pub bios: Trace,
    /// Requests of the phase in its direction, in issue order.
    pub requests: Trace,
    /// Requests of the phase in every direction (reads, writes, flushes).
    pub all_requests: u64,
    /// Bio-level events of the whole capture of this target (splits, merges, remaps).
    pub bio_events: BioEvents,
    /// Seconds the `dd` took here (zram under loop, or the emulated disk): context only.
    pub seconds_here: f64,
    /// With --closed-loop: what the emulated disk measured for the phase's requests.
    pub closed_loop: Option<ClosedLoopRun>,
    /// On an emulated disk: the phase's requests in the emulator's served log (indices).
    pub served: Option<std::ops::Range<usize>>,
}

/// JSON of `--json`.
#[derive(Serialize)]
struct RequestMergingJson<'a> {
    experiment: &'a str,
    stack: &'a str,
    mib: u64,
    read_ahead_kb: u32,
    max_sectors_kb: u32,
    /// The time scale K of a closed-loop capture (`--closed-loop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    closed_loop: Option<f64>,
    runs: &'a [LevelRun],
}

/// The stack in one line (printed and in the JSON).
pub const STACK: &str = "loop device (blk-mq, request-based, scheduler none) over zram \
(bio-based); the bio level is block_bio_queue on the loop device (what a dm linear target \
would receive), the request level block_rq_issue on it (what the elevator of the disk below dm \
would issue). Unlike dm, no bio is remapped onto a second device: both levels are one queue, \
whose limits (max_sectors_kb) split bios as dm's stacked limits would; a 2016 disk ran cfq or \
deadline where this queue runs none (blk-mq still merges in the plug and software queues)";

fn run_request_merging(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let spec: RequestMergingSpec = exp.params()?;
    check_spec(&spec)?;
    let h = Human::new(a.json.as_deref());
    // It runs as published only; `--scale 1` says just that (as `reproduce all --scale 1` and
    // `bench experiment all --scale 1` pass it to every experiment).
    if a.scale.is_some_and(|s| s != 1.0) {
        bail!("request-merging takes no --scale other than 1 (the dd size is the experiment's `mib`; targets are raw, ext3, ext4)");
    }
    // Resolve every name before any work.
    let devices = crate::support::device_list(a.device.as_deref(), &spec.devices)?;
    if let Some(k) = a.closed_loop {
        check_closed_loop(&spec, &devices, k)?;
    }
    let targets = spec
        .targets
        .iter()
        .map(|t| Ok((t.clone(), kernel_profile::target(t)?)))
        .collect::<Result<Vec<_>>>()?;
    layoutlab_rig::require_root("making loop devices on zram and tracing them")?;
    crate::support::warn_if_leftovers();
    eprintln!(
        "{} — dd bs=1M count={} per phase; read_ahead_kb {}, max_sectors_kb {}; priced on {}",
        exp.title,
        spec.mib,
        spec.read_ahead_kb,
        spec.max_sectors_kb,
        devices.join(", ")
    );
    let first = devices.first().context("no device presets to price on")?;
    let mut phases = Vec::new();
    for (i, (name, profile)) in targets.iter().enumerate() {
        eprintln!("[{}/{}] {name}", i + 1, targets.len());
        // One capture is priced on every device: it presents the first one's queue.
        let got = capture_target(&spec, name, profile.as_ref(), first, a.closed_loop)
            .with_context(|| format!("target {name}"))?;
        for p in &got {
            eprintln!(
                "  {} {}: {} bios, {} requests ({:.1} s here){}",
                p.mode,
                op_name(p.op),
                p.bios.requests.len(),
                p.requests.requests.len(),
                p.seconds_here,
                match &p.closed_loop {
                    Some(c) => format!(
                        "; closed loop at K = {}: {:.3} s measured, {} requests served",
                        c.time_scale, c.measured_seconds, c.requests_served
                    ),
                    None => String::new(),
                }
            );
        }
        phases.extend(got);
    }
    let runs = crate::stages::timed(crate::stages::PRICE, || price(&phases, &devices))?;
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    report(exp, a, &spec, &devices, &phases, &runs, &h)
}

/// What a closed-loop run needs, checked before any work: one preset (the capture is one
/// emulated disk; the streams of another preset would be another capture), one the route can
/// honour at K, and requests FUSE passes whole.
fn check_closed_loop(spec: &RequestMergingSpec, devices: &[String], k: f64) -> Result<()> {
    crate::support::check_closed_loop_devices(devices, k)?;
    let fuse_kb = layoutlab_rig::fuse_max_request_kb();
    if spec.max_sectors_kb > fuse_kb {
        bail!(
            "--closed-loop: the emulated disk passes requests of at most {fuse_kb} KiB whole (FUSE's \
             limit, /proc/sys/fs/fuse/max_pages_limit), and this run asks the loop device for \
             {} KiB: add --set max_sectors_kb={fuse_kb} (and compare with an open-loop run at the \
             same setting)",
            spec.max_sectors_kb
        );
    }
    Ok(())
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        _ => "write",
    }
}

/// The loop device of a target and what keeps it alive (field order = drop order).
type Stack = crate::support::CaptureTarget<Zram>;

/// Makes the target's stack, its loop device presenting the queue of device preset
/// `queue_of` (rotational as the model is, the spec's read-ahead and request size), and runs
/// every mode's write and read as traced phases. With `closed_loop` (the time scale K) the
/// loop device is `queue_of`'s emulated disk over the same zram device (a file system is made
/// on the plain loop device, then moved there), and each phase gets the time measured on it.
pub fn capture_target(
    spec: &RequestMergingSpec,
    name: &str,
    profile: Option<&kernel_profile::KernelProfile>,
    queue_of: &str,
    closed_loop: Option<f64>,
) -> Result<Vec<Phase>> {
    let queue = crate::support::capture_queue(
        queue_of,
        Some(spec.read_ahead_kb),
        Some(spec.max_sectors_kb),
    )?;
    let dev_bytes = device_bytes(spec);
    let opts = KernelFsOptions {
        kind: match profile {
            Some(p) => p.fs_kind()?,
            None => FsKind::Ext4,
        },
        mkfs_args: profile.map(|p| p.mkfs_args.clone()).unwrap_or_default(),
        mount_options: profile.map(|p| p.mount_options.clone()).unwrap_or_default(),
        bytes: dev_bytes,
        backing: Backing::Zram,
        // dd writes zeros (no memory in zram); metadata is well under 2% of the device.
        resident_bytes: dev_bytes / 50 + 64 * MIB,
        queue: queue.clone(),
    };
    let image_stage = crate::stages::enter(crate::stages::IMAGE);
    if let Some(k) = closed_loop {
        crate::support::check_emulable(queue_of, k)?;
    }
    let stack = match (profile, closed_loop) {
        (None, None) => {
            check_fits(&opts)?;
            let lock = RigLock::acquire()?;
            let zram = Zram::create(dev_bytes)?;
            let loopdev = LoopDevice::attach_presenting(zram.path(), false, &queue)?;
            Stack::Raw {
                loopdev,
                _backing: zram,
                _lock: lock,
            }
        }
        (None, Some(k)) => {
            check_fits(&opts)?;
            let lock = RigLock::acquire()?;
            let zram = Zram::create(dev_bytes)?;
            let emulator = Box::new(crate::support::start_emulator(
                queue_of,
                zram.path(),
                k,
                false,
                queue.clone(),
            )?);
            Stack::Emulated {
                emulator,
                _backing: zram,
                _lock: lock,
            }
        }
        (Some(_), closed_loop) => {
            let mut kfs = Box::new(KernelFs::create(&opts)?);
            if let Some(k) = closed_loop {
                // Made on the plain loop device (mkfs is not the subject), then moved onto
                // the emulated disk over the same zram device.
                kfs.emulate(k, crate::support::emulator_model(queue_of)?)?;
            }
            Stack::Fs(kfs)
        }
    };
    let target_path = |mode: &str| -> PathBuf {
        match &stack {
            Stack::Raw { .. } | Stack::Emulated { .. } => stack.loopdev().path().to_path_buf(),
            Stack::Fs(k) => k.mount_point().join(format!("dd-{mode}")),
        }
    };
    drop(image_stage);
    // The dd writes are the experiment's subject, traced like its reads.
    let _capture_stage = crate::stages::enter(crate::stages::CAPTURE);
    let mut plan = Vec::new();
    for mode in &spec.modes {
        for op in [Op::Write, Op::Read] {
            plan.push((mode.clone(), op, target_path(mode)));
        }
    }
    let emulated = stack.cpu_pace().map(|pace| Emulated {
        pace,
        served_so_far: Box::new(|| stack.served_so_far()),
    });
    let mut phases = traced_dd(
        stack.loopdev(),
        &plan,
        spec.mib,
        |_| match &stack {
            Stack::Fs(k) => k.drop_caches().map_err(anyhow::Error::from),
            Stack::Raw { .. } | Stack::Emulated { .. } => {
                layoutlab_rig::drop_caches()?;
                stack.loopdev().flush_buffers()?;
                Ok(())
            }
        },
        emulated.as_ref(),
    )?;
    drop(emulated);
    let served = stack.stop_emulating()?;
    for p in &mut phases {
        p.target = name.to_string();
        if let (Some(k), Some(range)) = (closed_loop, p.served.clone()) {
            p.closed_loop = Some(ClosedLoopRun::of(k, &served[range], 0.0));
        }
    }
    Ok(phases)
}

/// A capture on the emulated disk: the handle that paces its clock by each `dd`'s CPU, and how
/// many requests it has served so far (to find each phase's).
pub struct Emulated<'a> {
    /// Named by each `dd` between fork and exec.
    pub pace: CpuPace,
    /// The emulator's served count now.
    pub served_so_far: Box<dyn Fn() -> usize + 'a>,
}

/// Size of each target's device: room for one file per mode, the file system's metadata and
/// slack.
pub fn device_bytes(spec: &RequestMergingSpec) -> u64 {
    (spec.mib * MIB * (spec.modes.len() as u64 + 1)).max(512 * MIB) / MIB * MIB
}

/// Runs `dd bs=1M count=MIB` for each (mode, op, path) of `plan` as a traced phase of
/// `loopdev` (caches dropped by `drop_caches` before each read), checks each phase's sectors
/// against the device's counters and its bios against its requests, and returns the phases.
/// On an emulated disk (`emulated`) each `dd` paces its clock, and each phase gets the range of
/// the emulator's served requests between its marks ([`Phase::served`]).
pub fn traced_dd(
    loopdev: &LoopDevice,
    plan: &[(String, Op, PathBuf)],
    mib: u64,
    mut drop_caches: impl FnMut(&LoopDevice) -> Result<()>,
    emulated: Option<&Emulated<'_>>,
) -> Result<Vec<Phase>> {
    let dev_name = format!("loop{}", loopdev.number());
    let session = TracefsSession::start(
        loopdev.dev(),
        &TraceOptions {
            bio_queue: true,
            cpu_accounting: false,
            ..TraceOptions::default()
        },
    )?;
    let mut windows = Vec::new();
    for (i, (mode, op, path)) in plan.iter().enumerate() {
        if *op == Op::Read {
            drop_caches(loopdev)?;
        }
        let tag = format!("p{i}-{mode}-{}", op_name(*op));
        let window = layoutlab_rig::window::Window::open(&session, &dev_name, &tag)?;
        // The device is settled before the mark and again before the closing one: the
        // requests served in between are the phase's.
        let served_from = emulated.map_or(0, |e| (e.served_so_far)());
        let t = std::time::Instant::now();
        run_dd(path, mode == "direct", *op, mib, emulated.map(|e| &e.pace))?;
        let seconds_here = t.elapsed().as_secs_f64();
        let counted = window.close("between")?;
        let served_to = emulated.map_or(0, |e| (e.served_so_far)());
        windows.push((
            tag,
            mode.clone(),
            *op,
            counted,
            seconds_here,
            emulated.map(|_| served_from..served_to),
        ));
    }
    let capture = session.stop()?;
    layoutlab_rig::window::check_complete(&capture)?;
    let bios = capture.bios.expect("bio_queue was asked");
    let bio_events = capture.bio_events.unwrap_or_default();
    let mut phases = Vec::new();
    for (tag, mode, op, counted, seconds_here, served) in windows {
        let requests = of_tag(&capture.trace, &tag, None, TagTable::Own);
        let (r, w) = sectors(&requests);
        let (sr, sw) = (counted.reads(), counted.writes());
        if !sr.contains(&r) || !sw.contains(&w) {
            bail!(
                "phase {tag}: the trace saw {r} sectors read and {w} written, the device counted \
                 {} and {}; the trace is incomplete or mis-tagged",
                layoutlab_rig::window::show(&sr),
                layoutlab_rig::window::show(&sw)
            );
        }
        let phase_bios = of_tag(&bios, &tag, Some(op), TagTable::Own);
        let phase_requests = of_tag(&capture.trace, &tag, Some(op), TagTable::Own);
        let (b, q) = (total_sectors(&phase_bios), total_sectors(&phase_requests));
        if b != q {
            bail!(
                "phase {tag}: its bios hold {b} sectors and its requests {q}: a bio was lost or \
                 counted twice"
            );
        }
        phases.push(Phase {
            target: String::new(),
            mode,
            op,
            bios: phase_bios,
            requests: phase_requests,
            bio_events,
            seconds_here,
            all_requests: requests.requests.len() as u64,
            closed_loop: None,
            served,
        });
    }
    Ok(phases)
}

/// `dd bs=1M count=MIB` writing zeros to `path` (with `conv=fsync`) or reading it to
/// /dev/null, with `oflag=direct`/`iflag=direct` when `direct`. With `pace` the `dd` names
/// itself as the program whose CPU paces the emulated disk's clock, before it execs (so its
/// first request is paced too).
fn run_dd(path: &Path, direct: bool, op: Op, mib: u64, pace: Option<&CpuPace>) -> Result<()> {
    let mut args = vec![
        "bs=1M".to_string(),
        format!("count={mib}"),
        "status=none".into(),
    ];
    match op {
        Op::Read => {
            args.push(format!("if={}", path.display()));
            args.push("of=/dev/null".into());
            if direct {
                args.push("iflag=direct".into());
            }
        }
        _ => {
            args.push("if=/dev/zero".into());
            args.push(format!("of={}", path.display()));
            args.push("conv=fsync".into());
            if direct {
                args.push("oflag=direct".into());
            }
        }
    }
    let mut command = std::process::Command::new("dd");
    command.args(&args);
    if let Some(pace) = pace.cloned() {
        use std::os::unix::process::CommandExt;
        // SAFETY: `follow_self` is one atomic store into a shared page (async-signal-safe).
        unsafe {
            command.pre_exec(move || {
                pace.follow_self();
                Ok(())
            });
        }
    }
    let out = command
        .output()
        .context("running dd (Debian package coreutils)")?;
    if !out.status.success() {
        bail!(
            "dd {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn sectors(t: &Trace) -> (u64, u64) {
    let (mut r, mut w) = (0, 0);
    for q in &t.requests {
        match q.op {
            Op::Read => r += u64::from(q.sectors),
            Op::Write => w += u64::from(q.sectors),
            _ => {}
        }
    }
    (r, w)
}

fn total_sectors(t: &Trace) -> u64 {
    t.requests.iter().map(|q| u64::from(q.sectors)).sum()
}

/// Mean size of a stream, KiB.
pub fn mean_kb(t: &Trace) -> f64 {
    if t.requests.is_empty() {
        return 0.0;
    }
    total_sectors(t) as f64 / 2.0 / t.requests.len() as f64
}

/// The stream as a queue holding all of it at once: every request issued at time 0, in
/// order, no completions or CPU stamps (so replay serves them back to back, FCFS at the
/// device's queue depth).
pub fn all_queued(t: &Trace) -> Trace {
    let mut out = t.clone();
    for r in &mut out.requests {
        r.issue_ns = 0;
        r.complete_ns = None;
        r.cpu = None;
    }
    out
}

/// Prices both levels of every phase on every device; the request level is also replayed
/// with its captured timing.
fn price(phases: &[Phase], devices: &[String]) -> Result<Vec<LevelRun>> {
    let mut runs = Vec::new();
    for p in phases {
        for (level, t) in [("bio", &p.bios), ("request", &p.requests)] {
            let queued = all_queued(t);
            for d in devices {
                let r = crate::steps::price::on_preset(d, &queued, 1.0)?;
                let replayed_seconds = match level {
                    "request" => Some(crate::steps::price::on_preset(d, t, 1.0)?.wall_ns / 1e9),
                    _ => None,
                };
                runs.push(LevelRun {
                    phase_requests: (level == "request").then_some(p.all_requests),
                    replayed_seconds,
                    // A closed-loop capture is of one preset's disk (`check_closed_loop`).
                    closed_loop: match level {
                        "request" => p.closed_loop.clone(),
                        _ => None,
                    },
                    capture_queue: p.requests.queue.clone(),
                    target: p.target.clone(),
                    mode: p.mode.clone(),
                    op: op_name(p.op).into(),
                    level: level.into(),
                    requests: t.requests.len() as u64,
                    mean_request_kb: mean_kb(t),
                    device: d.clone(),
                    seconds: r.wall_ns / 1e9,
                });
            }
        }
    }
    Ok(runs)
}

/// Upper bounds (KiB) of the size buckets of the histograms; the last bucket is "more".
pub const BUCKETS_KB: [u64; 10] = [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048];

/// Bucket labels: "≤4K", ..., "≤2M", ">2M".
fn bucket_labels() -> Vec<String> {
    let mut v: Vec<String> = BUCKETS_KB
        .iter()
        .map(|k| {
            if *k >= 1024 {
                format!("≤{}M", k / 1024)
            } else {
                format!("≤{k}K")
            }
        })
        .collect();
    v.push(">2M".into());
    v
}

/// How many of a stream's requests fall in each bucket of [`BUCKETS_KB`] (and above).
pub fn histogram(t: &Trace) -> Vec<u64> {
    let mut h = vec![0u64; BUCKETS_KB.len() + 1];
    for r in &t.requests {
        let kb = u64::from(r.sectors).div_ceil(2);
        let i = BUCKETS_KB
            .iter()
            .position(|b| kb <= *b)
            .unwrap_or(BUCKETS_KB.len());
        h[i] += 1;
    }
    h
}

/// The median request size, KiB.
fn median_kb(t: &Trace) -> f64 {
    let mut s: Vec<u32> = t.requests.iter().map(|r| r.sectors).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_unstable();
    f64::from(s[s.len() / 2]) / 2.0
}

fn report(
    exp: &Experiment,
    a: &RunArgs,
    spec: &RequestMergingSpec,
    devices: &[String],
    phases: &[Phase],
    runs: &[LevelRun],
    h: &Human,
) -> Result<()> {
    let out_dir = a.out_dir(exp);
    let mut columns = vec![
        Column::text("target"),
        Column::text("mode"),
        Column::text("op"),
        Column::text("level"),
        Column::number("count", None),
        Column::number("mean", Some("KiB")),
        Column::number("median", Some("KiB")),
        Column::number("max", Some("KiB")),
    ];
    columns.extend(devices.iter().map(|d| Column::number(d, Some("s"))));
    let mut t = Table::new(
        &format!(
            "{}: dd bs=1M count={} — bios (as submitted, priced as if unmerged) and requests (as issued)",
            exp.name, spec.mib
        ),
        columns,
    );
    let mut hist_cols = vec![
        Column::text("target"),
        Column::text("mode"),
        Column::text("op"),
        Column::text("level"),
    ];
    hist_cols.extend(bucket_labels().iter().map(|b| Column::number(b, None)));
    let mut ht = Table::new("size distribution (count per size bucket)", hist_cols);
    let mut svgs = Vec::new();
    for p in phases {
        let op = op_name(p.op);
        let mut series = Vec::new();
        for (level, tr) in [("bio", &p.bios), ("request", &p.requests)] {
            let max = tr.requests.iter().map(|r| r.sectors).max().unwrap_or(0);
            let mut row = vec![
                Cell::text(&p.target),
                Cell::text(&p.mode),
                Cell::text(op),
                Cell::text(level),
                Cell::num(tr.requests.len() as f64, 0),
                Cell::num(mean_kb(tr), 1),
                Cell::num(median_kb(tr), 1),
                Cell::num(f64::from(max) / 2.0, 1),
            ];
            for d in devices {
                let s = runs
                    .iter()
                    .find(|r| {
                        r.target == p.target
                            && r.mode == p.mode
                            && r.op == op
                            && r.level == level
                            && &r.device == d
                    })
                    .map(|r| r.seconds);
                row.push(s.map(|s| Cell::num(s, 3)).unwrap_or(Cell::Empty));
            }
            t.push_row(row)?;
            let hist = histogram(tr);
            let mut hrow = vec![
                Cell::text(&p.target),
                Cell::text(&p.mode),
                Cell::text(op),
                Cell::text(level),
            ];
            hrow.extend(hist.iter().map(|n| Cell::num(*n as f64, 0)));
            ht.push_row(hrow)?;
            let n = tr.requests.len().max(1) as f64;
            series.push(SweepSeries {
                name: format!("{level} ({} of them)", tr.requests.len()),
                values: hist.iter().map(|c| Some(*c as f64 * 100.0 / n)).collect(),
            });
        }
        let mut chart = SweepChart::new(
            &format!(
                "{} {} {}: sizes of bios and of requests (dd bs=1M)",
                p.target, p.mode, op
            ),
            "size",
            bucket_labels(),
            "share of the level's count",
            Some("%"),
        );
        chart.style = SweepStyle::Bars;
        svgs.push((
            format!(
                "How big the bios and the requests of dd bs=1M were, {op} on {} ({}): the share of each level's count in each size bucket.",
                p.target, p.mode
            ),
            format!("sizes-{}-{}-{op}.svg", p.target, p.mode),
            chart.render(&series),
        ));
    }
    h.say(&format!("{}\n", t.to_terminal(None)?));
    h.say(&format!("{}\n", ht.to_terminal(None)?));
    let splits: Vec<String> = phases
        .iter()
        .filter(|p| p.op == Op::Write && p.mode == spec.modes[0])
        .map(|p| {
            format!(
                "{}: {} splits, {} merges",
                p.target, p.bio_events.split, p.bio_events.merged
            )
        })
        .collect();
    h.say(&format!(
        "bio events over each target's whole capture — {}\n",
        splits.join("; ")
    ));
    h.say(&format!(
        "stack: {STACK}.\nprice: each stream queued at once, in order, FCFS at the preset's queue \
         depth; the bio level as if nothing had merged, the request level as issued.\n"
    ));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut html = HtmlBundle::new(&exp.title);
    html.text(&format!("Stack: {STACK}."));
    html.table(t.clone());
    html.table(ht.clone());
    for (caption, name, svg) in svgs {
        html.figure(&caption, &name, svg);
    }
    html.save(&out_dir)?;
    eprintln!(
        "report: {}/{{report.md,index.html,sizes-TARGET-MODE-OP.svg}}",
        out_dir.display()
    );
    if let Some(path) = &a.json {
        write_json(
            path,
            &RequestMergingJson {
                experiment: &exp.name,
                stack: STACK,
                mib: spec.mib,
                read_ahead_kb: spec.read_ahead_kb,
                max_sectors_kb: spec.max_sectors_kb,
                closed_loop: a.closed_loop,
                runs,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_trace::{Flags, Request};

    fn trace(sizes: &[u32]) -> Trace {
        let mut t = Trace::default();
        let mut sector = 0;
        for &s in sizes {
            t.requests.push(Request {
                issue_ns: sector * 10,
                complete_ns: Some(sector * 10 + 5),
                op: Op::Write,
                sector,
                sectors: s,
                flags: Flags::default(),
                tag: 0,
                cpu: None,
            });
            sector += u64::from(s);
        }
        t
    }

    #[test]
    fn histogram_buckets_by_upper_bound() {
        let t = trace(&[8, 8, 9, 256, 2048, 2049, 8192]);
        let h = histogram(&t);
        // 4K, 4K | 4.5K→8K | 128K | 1M | 1M+512 B→2M | 4M→more
        assert_eq!(h, vec![2, 1, 0, 0, 0, 1, 0, 0, 1, 1, 1]);
        assert_eq!(h.iter().sum::<u64>(), 7);
        assert!((mean_kb(&trace(&[8, 2048])) - 514.0).abs() < 1e-9);
    }

    /// The same bytes as 256 bios of 4 KiB cost a disk more than as one 1 MiB request (each
    /// bio pays a command overhead), and the all-queued stream does not depend on the
    /// captured times. (Not asserted for SSDs: there the queued 4 KiB writes spread over the
    /// dies and may finish sooner than one 1 MiB request.)
    #[test]
    fn unmerged_stream_costs_more_than_merged() {
        let bios = all_queued(&trace(&[8; 256]));
        let merged = all_queued(&trace(&[2048]));
        let price = |t: &Trace, d: &str| crate::steps::price::on_preset(d, t, 1.0).unwrap().wall_ns;
        for d in ["sata-400g-2007", "sata-500g-2008"] {
            let (b, m) = (price(&bios, d), price(&merged, d));
            assert!(b > m, "{d}: 4 KiB bios {b} ns, 1 MiB request {m} ns");
        }
        assert!(bios
            .requests
            .iter()
            .all(|r| r.issue_ns == 0 && r.complete_ns.is_none()));
    }

    #[test]
    fn unknown_targets_and_modes_list_the_valid_ones() {
        let e = kernel_profile::target("ntfs").unwrap_err().to_string();
        assert!(e.contains("raw") && e.contains("ext4"), "{e}");
        let spec = RequestMergingSpec {
            mib: 1,
            targets: vec!["raw".into()],
            modes: vec!["mmap".into()],
            devices: vec!["ssd-sata-2010".into()],
            read_ahead_kb: 128,
            max_sectors_kb: 512,
        };
        let e = check_spec(&spec).unwrap_err().to_string();
        assert!(e.contains("buffered, direct"), "{e}");
    }
}
