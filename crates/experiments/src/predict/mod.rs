//! `layoutlab fsck-predict`: how long the check of a real volume would take on each modelled
//! disk, how much memory the checker needs, and whether it found problems.
//!
//! SOURCE (a block device, an image, or a metadata dump restored by the format's own tool, see
//! [`source`]) goes under a read-only loop device; the real checker (`e2fsck -fn -tt`,
//! `xfs_repair -n`, `btrfs check --readonly`) runs on it under block tracing, each request
//! tagged with the checker's pass or phase; the trace is replayed on every device preset asked
//! for, with the checker's CPU time between requests from the scheduler's account (as in
//! metacluster-fsck). Nothing writes to SOURCE: it is opened read-only, the loop device is
//! read-only, and the checkers run in their no-modify modes.

pub mod relayout;
pub mod source;

use anyhow::{bail, Context, Result};
use layoutlab_rig::{FsckOptions, LoopDevice, ProgressStyle, TraceOptions};
use layoutlab_trace::Trace;
use serde::Serialize;
use source::{Family, Format, Source};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How to predict.
#[derive(Clone, Debug)]
pub struct PredictOptions {
    /// Device presets (names or .toml files) to replay on.
    pub devices: Vec<String>,
    /// Where a restored dump lives while the check runs.
    pub workdir: PathBuf,
    /// Check a mounted SOURCE anyway (the result is approximate).
    pub allow_mounted: bool,
    /// Policies to lay SOURCE's tree out again with (ext only), each predicted beside it.
    pub relayout: Vec<String>,
    /// Whose e2fsck checks an ext SOURCE (and its relayouts): today's or a period release.
    pub e2fsck: layoutlab_rig::E2fsprogs,
    /// Capture closed loop at this time scale K: the checker runs on the one preset's
    /// emulated device (`device emulate`, read-only), and the report gives the time measured
    /// there beside the open-loop replay of the same stream. One preset, no relayout.
    pub closed_loop: Option<f64>,
    /// Capture an ext check as an fsck experiment captures its own (`--like EXPERIMENT`): its
    /// queue (read-ahead, largest request, rotational flag) and its e2fsck arguments and CPU
    /// settings. `None`: the kernel's read-ahead and request size, e2fsck's defaults.
    pub capture: Option<crate::steps::check::CheckSpec>,
}

/// The same tree laid out by another policy, checked and predicted like SOURCE.
#[derive(Clone, Debug, Serialize)]
pub struct Relayout {
    /// The policy.
    pub policy: String,
    /// Whether the real `e2fsck -fn` found the new image clean.
    pub fsck_clean: bool,
    /// Requests of its check.
    pub requests: u64,
    /// MB read by its check.
    pub mb_read: f64,
    /// SOURCE features the new image leaves out (not modelled by the layout; they place no
    /// block a policy places).
    pub features_left_out: Vec<String>,
    /// Per device preset.
    pub predictions: Vec<DevicePrediction>,
}

/// One pass or phase on one device.
#[derive(Clone, Debug, Serialize)]
pub struct PhasePrediction {
    /// The checker's name for it: e2fsck pass "1" … "5", xfs_repair phase "1" … "7", btrfs
    /// check step "1" … "7"; "setup" before the first.
    pub phase: String,
    /// Predicted seconds.
    pub seconds: f64,
    /// MB (2^20 bytes) read.
    pub mb_read: f64,
    /// Requests.
    pub requests: u64,
}

/// The check on one device model.
#[derive(Clone, Debug, Serialize)]
pub struct DevicePrediction {
    /// The preset.
    pub device: String,
    /// Predicted seconds of the whole check.
    pub total_seconds: f64,
    /// Per pass or phase.
    pub phases: Vec<PhasePrediction>,
}

/// A preset the check was not replayed on, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    /// The preset.
    pub device: String,
    /// Why.
    pub reason: String,
}

/// What `fsck-predict` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// SOURCE as given.
    pub source: String,
    /// What it was found to hold.
    pub format: Format,
    /// The family, which picked the checker.
    pub fs: Family,
    /// The checker that ran.
    pub checker: &'static str,
    /// Whose e2fsck it was, for ext ("today", "1.41.4", ...); `None` for other checkers.
    pub e2fsck: Option<String>,
    /// Whether the checker found the file system clean. A prediction for one that is not is
    /// still reported, marked.
    pub clean: bool,
    /// The checker's exit status.
    pub exit_code: i32,
    /// Peak memory of the checker, MB (2^20 bytes): e2fsck's `-tt` "Peak memory" figure
    /// (malloc arena + mmap'd), else the process's peak RSS.
    pub peak_memory_mb: f64,
    /// Where the memory figure comes from.
    pub peak_memory_source: &'static str,
    /// Bytes of the file system (the loop device's size).
    pub fs_bytes: u64,
    /// Requests the checker issued.
    pub requests: u64,
    /// The queue the traced loop device presented (the first preset's rotational flag;
    /// docs/rig.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_queue: Option<layoutlab_trace::DeviceQueue>,
    /// MB read.
    pub mb_read: f64,
    /// The checker's CPU seconds as the scheduler accounted them, if it could.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<f64>,
    /// Wall seconds of the check on this machine (loop device over SOURCE or the restored
    /// image): context, not a prediction.
    pub seconds_here: f64,
    /// Whether SOURCE was mounted (checked anyway with --allow-mounted).
    pub mounted: bool,
    /// Per device preset.
    pub predictions: Vec<DevicePrediction>,
    /// Presets the trace was not replayed on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// The tree laid out again by each `--relayout` policy.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relayout: Vec<Relayout>,
    /// With --closed-loop: the check's time measured on the emulated device (the one
    /// preset's); `predictions` stays the open-loop replay of the same stream, beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<crate::steps::check::ClosedLoopRun>,
    /// What the checker said (its problems, if any), last lines.
    #[serde(skip)]
    pub checker_output: String,
    /// The captured trace (not serialized).
    #[serde(skip)]
    pub trace: Trace,
}

const MIB: f64 = (1u64 << 20) as f64;

/// The traced check and what it measured, before any replay.
struct Checked {
    exit_code: i32,
    clean: bool,
    peak_memory_mb: f64,
    peak_memory_source: &'static str,
    trace: Trace,
    head_tail_cpu_s: (f64, f64),
    cpu_seconds: Option<f64>,
    output: String,
}

/// The queue the loop device presents: the first preset's rotational flag (one capture is
/// priced on every preset, so a list mixing disks and SSDs prices the others on the first
/// one's stream; docs/rig.md). Read-ahead and request size stay the kernel's, as before.
fn capture_queue(opts: &PredictOptions) -> Result<layoutlab_rig::QueueSpec> {
    let first = opts
        .devices
        .first()
        .context("no device presets to predict on")?;
    match &opts.capture {
        Some(c) => c.queue(first),
        None => crate::support::capture_queue(first, None, None),
    }
}

/// Runs the whole prediction for `path`.
pub fn predict(path: &Path, opts: &PredictOptions) -> Result<Report> {
    let source = source::detect(path)?;
    // Resolve every preset before any work, so a typo fails at once and changes nothing.
    for d in &opts.devices {
        crate::support::load_device(d).with_context(|| format!("device '{d}'"))?;
    }
    if opts.devices.is_empty() {
        bail!("no device presets to predict on");
    }
    if let Some(k) = opts.closed_loop {
        if opts.devices.len() != 1 {
            bail!(
                "--closed-loop captures on one preset's emulated device: give one --device \
                 (asked for {})",
                opts.devices.len()
            );
        }
        if !opts.relayout.is_empty() {
            bail!("--closed-loop checks SOURCE only: it does not go with --relayout");
        }
        crate::support::check_emulable(&opts.devices[0], k)?;
    }
    for p in &opts.relayout {
        layoutlab_layout::policy_by_name(p, &layoutlab_layout::PolicyParams::new())?;
    }
    if !opts.relayout.is_empty() && source.format.family() != Family::Ext {
        bail!(
            "--relayout lays out ext2/3/4 trees only; {} is a {}",
            source.path.display(),
            source.format.describe()
        );
    }
    layoutlab_rig::require_root(
        "attaching SOURCE to a read-only loop device and tracing the checker's block requests",
    )?;
    let mounted = match source::mounted_reason(&source)? {
        Some(why) if !opts.allow_mounted => bail!(
            "{} is in use: {why}. A mounted file system changes under the checker; unmount it, \
             check a snapshot or an e2image/xfs_metadump/btrfs-image of it, or pass \
             --allow-mounted for an approximate result",
            source.path.display()
        ),
        Some(why) => {
            eprintln!(
                "warning: {why}; the file system may change under the checker, so the result \
                 is approximate"
            );
            true
        }
        None => false,
    };
    eprintln!(
        "{}: {} ({:.1} GB)",
        source.path.display(),
        source.format.describe(),
        source.bytes as f64 / 1e9
    );
    let prepared = source::prepare(&source, &opts.workdir)?;
    let started = std::time::Instant::now();
    let (checked, fs_bytes, served) = match opts.closed_loop {
        None => {
            let loopdev =
                LoopDevice::attach_presenting(&prepared.path, true, &capture_queue(opts)?)?;
            loopdev.flush_buffers()?;
            let fs_bytes = loop_bytes(loopdev.path())?;
            eprintln!(
                "running {} read-only on {} under block tracing ...",
                source.format.family().checker(),
                loopdev.path().display()
            );
            (
                check(&source, &loopdev, opts.e2fsck, opts.capture.as_ref(), None)?,
                fs_bytes,
                None,
            )
        }
        Some(k) => {
            let emulator = crate::support::start_emulator(
                &opts.devices[0],
                &prepared.path,
                k,
                true,
                capture_queue(opts)?,
            )?;
            let dev = emulator.device();
            dev.flush_buffers()?;
            let fs_bytes = loop_bytes(dev.path())?;
            eprintln!(
                "running {} read-only on {} (emulated {} at time scale {k}) under block tracing ...",
                source.format.family().checker(),
                dev.path().display(),
                opts.devices[0]
            );
            // As the fsck experiments: e2fsck runs real-time on the emulated device, so its
            // time between requests is its CPU, not its wait for one, and the model's clock
            // follows that CPU between requests (`layoutlab_rig::CpuPace`).
            let checked = check(
                &source,
                dev,
                opts.e2fsck,
                opts.capture.as_ref(),
                Some(emulator.cpu_pace()),
            )?;
            let served = emulator.stop()?;
            (checked, fs_bytes, Some((k, served)))
        }
    };
    let closed_loop = served.map(|(time_scale, served)| {
        crate::steps::check::ClosedLoopRun::of(
            time_scale,
            &served,
            checked.head_tail_cpu_s.0 + checked.head_tail_cpu_s.1,
        )
    });
    let seconds_here = started.elapsed().as_secs_f64();
    let mut relayouts = Vec::new();
    if !opts.relayout.is_empty() {
        relayouts = relayout_all(&prepared.path, fs_bytes, opts)?;
    }
    drop(prepared);
    if !checked.clean {
        eprintln!(
            "warning: {} found problems (exit {}); the prediction is for this check as it ran",
            source.format.family().checker(),
            checked.exit_code
        );
    }
    let (predictions, skipped) = replay_all(&opts.devices, &checked, fs_bytes)?;
    Ok(Report {
        source: source.path.display().to_string(),
        format: source.format,
        fs: source.format.family(),
        checker: source.format.family().checker(),
        e2fsck: (source.format.family() == Family::Ext).then(|| opts.e2fsck.name().to_string()),
        clean: checked.clean,
        exit_code: checked.exit_code,
        peak_memory_mb: checked.peak_memory_mb,
        peak_memory_source: checked.peak_memory_source,
        fs_bytes,
        requests: checked.trace.requests.len() as u64,
        capture_queue: checked.trace.queue.clone(),
        mb_read: read_mb(&checked.trace),
        cpu_seconds: checked.cpu_seconds,
        seconds_here,
        mounted,
        predictions,
        skipped,
        relayout: relayouts,
        closed_loop,
        checker_output: checked.output,
        trace: checked.trace,
    })
}

/// Replays a check on every preset that holds the file system.
fn replay_all(
    devices: &[String],
    checked: &Checked,
    fs_bytes: u64,
) -> Result<(Vec<DevicePrediction>, Vec<Skipped>)> {
    let mut predictions = Vec::new();
    let mut skipped = Vec::new();
    for name in devices {
        let mut device = crate::support::load_device(name)?;
        let cap = device.capacity_sectors() * 512;
        if cap < fs_bytes {
            skipped.push(Skipped {
                device: name.clone(),
                reason: format!(
                    "holds {:.1} GB, less than the {:.1} GB file system",
                    cap as f64 / 1e9,
                    fs_bytes as f64 / 1e9
                ),
            });
            continue;
        }
        let replayed = crate::steps::price::on(device.as_mut(), &checked.trace, 1.0);
        let (head, tail) = checked.head_tail_cpu_s;
        let phases: Vec<PhasePrediction> = crate::steps::phases::tag_phases(&replayed, head, tail)
            .into_iter()
            .map(|p| PhasePrediction {
                phase: phase_name(&p.tag),
                seconds: p.seconds,
                mb_read: p.mb_read,
                requests: p.requests,
            })
            .collect();
        predictions.push(DevicePrediction {
            device: name.clone(),
            total_seconds: replayed.wall_ns / 1e9 + head + tail,
            phases,
        });
    }
    Ok((predictions, skipped))
}

/// Lays the tree of the ext image at `image` out again with each `--relayout` policy on the
/// same geometry, writes it through libext2fs, checks and predicts it.
fn relayout_all(image: &Path, fs_bytes: u64, opts: &PredictOptions) -> Result<Vec<Relayout>> {
    eprintln!("reading the tree back from SOURCE (libext2fs) ...");
    let ins = layoutlab_image::inspect(image).context("reading SOURCE's tree")?;
    let flex = relayout::log_groups_per_flex(image)?;
    let (profile, dropped) = relayout::profile_of(&ins, flex)?;
    let pop = relayout::population_of(&ins)?;
    let geometry = layoutlab_layout::Geometry::new(&profile, fs_bytes)?;
    // The new image holds about what SOURCE's metadata holds: its used inodes' table blocks,
    // directories and mapping blocks (file data stays sparse).
    let meta_bytes = (ins.inodes.len() as u64 + ins.links.len() as u64) * 4096;
    let mut out = Vec::new();
    for name in &opts.relayout {
        let policy =
            layoutlab_layout::policy_by_name(name, &layoutlab_layout::PolicyParams::new())?;
        eprintln!(
            "[{name}] planning {} objects on SOURCE's geometry ...",
            pop.ops.len()
        );
        let plan = crate::steps::plan::checked(policy.as_ref(), &geometry, &pop, 1)
            .with_context(|| format!("policy {name} on SOURCE's tree"))?;
        layoutlab_rig::check_free_space(&opts.workdir, meta_bytes + (256 << 20))?;
        let dir = layoutlab_rig::TempDir::new(&opts.workdir, "layoutlab")?;
        let path = dir.path().join(format!("relayout-{name}.img"));
        let img = layoutlab_rig::cleanup::creating(|| {
            let img = layoutlab_rig::TempFile::adopt(&path);
            layoutlab_image::mkfs_profile(img.path(), fs_bytes, &profile)?;
            Ok::<_, anyhow::Error>(img)
        })?;
        eprintln!("[{name}] writing the image through libext2fs ...");
        layoutlab_image::materialize(img.path(), &plan)?;
        let checked = {
            let loopdev = LoopDevice::attach_presenting(img.path(), true, &capture_queue(opts)?)?;
            loopdev.flush_buffers()?;
            eprintln!("[{name}] running e2fsck read-only under block tracing ...");
            check_ext(&loopdev, opts.e2fsck, opts.capture.as_ref(), None)?
        };
        drop(img);
        drop(dir);
        let (predictions, _) = replay_all(&opts.devices, &checked, fs_bytes)?;
        out.push(Relayout {
            policy: name.clone(),
            fsck_clean: checked.clean,
            requests: checked.trace.requests.len() as u64,
            mb_read: read_mb(&checked.trace),
            features_left_out: dropped.clone(),
            predictions,
        });
    }
    Ok(out)
}

fn read_mb(trace: &Trace) -> f64 {
    trace
        .requests
        .iter()
        .filter(|r| r.op == layoutlab_trace::Op::Read)
        .map(|r| u64::from(r.sectors) * 512)
        .sum::<u64>() as f64
        / MIB
}

/// The loop device's size in bytes (sysfs counts 512-byte sectors).
fn loop_bytes(dev: &Path) -> Result<u64> {
    let name = dev
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = std::fs::read_to_string(format!("/sys/block/{name}/size"))
        .with_context(|| format!("size of {}", dev.display()))?;
    Ok(text.trim().parse::<u64>().context("sysfs size")? * 512)
}

/// "pass3" / "phase3" / "step3" → "3"; anything else (setup) as is.
fn phase_name(tag: &str) -> String {
    for p in ["pass", "phase", "step"] {
        if let Some(n) = tag.strip_prefix(p) {
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                return n.to_string();
            }
        }
    }
    if tag.is_empty() {
        "setup".into()
    } else {
        tag.to_string()
    }
}

/// e2fsck's peak memory from its `-tt` sections, KiB: the "Peak memory" section (printed
/// after pass 2, where e2fsck peaks), else the largest figure of any section; `None` when no
/// section has one.
pub(crate) fn e2fsck_peak_memory_kib(sections: &[layoutlab_rig::Section]) -> Option<u64> {
    sections
        .iter()
        .find(|s| s.label == "Peak memory")
        .and_then(|s| e2fsck_memory_kib(&s.memory))
        .or_else(|| {
            sections
                .iter()
                .filter_map(|s| e2fsck_memory_kib(&s.memory))
                .max()
        })
}

/// e2fsck's `-tt` memory figure `A k/B k (C k/D k)`: A (malloc arena) + B (mmap'd), KiB.
fn e2fsck_memory_kib(memory: &str) -> Option<u64> {
    let mut parts = memory.split_whitespace().next()?.split('/');
    let a = parts.next()?.strip_suffix('k')?.parse::<u64>().ok()?;
    let b = match parts.next() {
        Some(b) => b.strip_suffix('k')?.parse::<u64>().ok()?,
        None => 0,
    };
    Some(a + b)
}

/// Runs SOURCE's checker on `loopdev` under tracing; `closed_loop` (the emulator's pace, on
/// an emulated device) runs e2fsck under `SCHED_FIFO` with the model's clock following its
/// CPU (xfs_repair and btrfs check keep the ordinary scheduler and the wall's clock).
fn check(
    source: &Source,
    loopdev: &LoopDevice,
    e2fsck: layoutlab_rig::E2fsprogs,
    capture: Option<&crate::steps::check::CheckSpec>,
    closed_loop: Option<layoutlab_rig::CpuPace>,
) -> Result<Checked> {
    match source.format.family() {
        Family::Ext => check_ext(loopdev, e2fsck, capture, closed_loop),
        family => check_other(family, loopdev),
    }
}

fn check_ext(
    loopdev: &LoopDevice,
    e2fsck: layoutlab_rig::E2fsprogs,
    capture: Option<&crate::steps::check::CheckSpec>,
    closed_loop: Option<layoutlab_rig::CpuPace>,
) -> Result<Checked> {
    let base = match capture {
        Some(c) => c.fsck_options(e2fsck, layoutlab_rig::TraceOptions::default())?,
        None => FsckOptions {
            e2fsck: e2fsck.program("e2fsck")?,
            ..FsckOptions::default()
        },
    };
    let opts = FsckOptions {
        real_time: base.real_time || closed_loop.is_some(),
        pace: closed_loop,
        ..base
    };
    let run = layoutlab_rig::run_e2fsck_traced(loopdev.path(), loopdev.dev(), &opts)?;
    layoutlab_rig::window::check_complete(&run.capture)?;
    let peak_kib = e2fsck_peak_memory_kib(&run.times.sections).unwrap_or(0);
    Ok(Checked {
        exit_code: run.exit_code,
        clean: run.exit_code == 0,
        peak_memory_mb: peak_kib as f64 / 1024.0,
        peak_memory_source: "e2fsck -tt",
        head_tail_cpu_s: crate::steps::phases::head_tail_cpu_seconds(&run.capture, 1.0),
        cpu_seconds: run.capture.cpu.as_ref().map(|c| c.total_ns as f64 / 1e9),
        trace: run.capture.trace,
        output: run.stdout,
    })
}

fn check_other(family: Family, loopdev: &LoopDevice) -> Result<Checked> {
    let (program, args, style, first_phase): (&str, &[&str], _, &str) = match family {
        Family::Xfs => ("xfs_repair", &["-n"], ProgressStyle::XfsRepair, "phase2"),
        _ => (
            "btrfs",
            &["check", "--readonly"],
            ProgressStyle::BtrfsCheck,
            "step1",
        ),
    };
    let run = layoutlab_rig::run_checker_traced(
        program,
        args,
        loopdev.path(),
        loopdev.dev(),
        style,
        &TraceOptions::default(),
    )?;
    layoutlab_rig::window::check_complete(&run.capture)?;
    // Both exit 1 for "problems found" and for "could not check at all"; a check that
    // got past its first phase did check.
    let checked = run.capture.marks.iter().any(|(_, t)| t == first_phase);
    if run.exit_code != 0 && (run.exit_code > 1 || !checked) {
        bail!(
            "{program} {} failed (exit {}) before checking anything:\n{}",
            args.join(" "),
            run.exit_code,
            last_lines(&run.capture.output, 20)
        );
    }
    Ok(Checked {
        exit_code: run.exit_code,
        clean: run.exit_code == 0,
        peak_memory_mb: run.peak_rss_kib as f64 / 1024.0,
        peak_memory_source: "peak RSS",
        head_tail_cpu_s: crate::steps::phases::head_tail_cpu_seconds(&run.capture, 1.0),
        cpu_seconds: run.capture.cpu.as_ref().map(|c| c.total_ns as f64 / 1e9),
        output: run.capture.output.clone(),
        trace: run.capture.trace,
    })
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The report as text: one table per device preset, the checker's verdict and memory.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fsck-predict: {} — {} ({:.1} GB), checked by {}",
        r.source,
        r.format.describe(),
        r.fs_bytes as f64 / 1e9,
        r.checker
    );
    let verdict = if r.clean {
        "clean".to_string()
    } else {
        format!(
            "PROBLEMS FOUND (exit {}): predictions are for this check as it ran; a repair run \
             reads and writes more",
            r.exit_code
        )
    };
    let _ = writeln!(s, "checker verdict: {verdict}");
    if let Some(c) = &r.closed_loop {
        let _ = writeln!(
            s,
            "closed loop at time scale {}: {:.3} s measured on the emulated device ({} requests \
             served); the table below is the open-loop replay of the same stream",
            c.time_scale, c.measured_seconds, c.requests_served
        );
    }
    if r.mounted {
        let _ = writeln!(
            s,
            "SOURCE was mounted (--allow-mounted): the result is approximate"
        );
    }
    let _ = writeln!(
        s,
        "peak memory: {:.1} MB ({}); {} requests, {:.1} MB read; {:.2} s here{}",
        r.peak_memory_mb,
        r.peak_memory_source,
        r.requests,
        r.mb_read,
        r.seconds_here,
        r.cpu_seconds
            .map_or(String::new(), |c| format!(", {c:.2} s CPU"))
    );
    for p in &r.predictions {
        let _ = writeln!(s, "\n{}: {:.2} s predicted", p.device, p.total_seconds);
        let _ = writeln!(
            s,
            "  {:<8} {:>10} {:>10} {:>9}",
            "phase", "seconds", "MB read", "requests"
        );
        for ph in &p.phases {
            let _ = writeln!(
                s,
                "  {:<8} {:>10.2} {:>10.1} {:>9}",
                ph.phase, ph.seconds, ph.mb_read, ph.requests
            );
        }
    }
    for rl in &r.relayout {
        let _ = writeln!(
            s,
            "\nrelayout by {}: e2fsck {}; {} requests, {:.1} MB read{}",
            rl.policy,
            if rl.fsck_clean { "clean" } else { "NOT CLEAN" },
            rl.requests,
            rl.mb_read,
            if rl.features_left_out.is_empty() {
                String::new()
            } else {
                format!(" (image made without {})", rl.features_left_out.join(", "))
            }
        );
        let _ = writeln!(
            s,
            "  {:<16} {:>12} {:>12} {:>8}",
            "device", "SOURCE s", "relayout s", "change"
        );
        for p in &rl.predictions {
            if let Some(orig) = r.predictions.iter().find(|o| o.device == p.device) {
                let _ = writeln!(
                    s,
                    "  {:<16} {:>12.2} {:>12.2} {:>7.0}%",
                    p.device,
                    orig.total_seconds,
                    p.total_seconds,
                    (p.total_seconds / orig.total_seconds - 1.0) * 100.0
                );
            }
        }
    }
    for k in &r.skipped {
        let _ = writeln!(s, "\n{}: not predicted: {}", k.device, k.reason);
    }
    if !r.clean && !r.checker_output.is_empty() {
        let _ = writeln!(
            s,
            "\nwhat {} said (last lines):\n{}",
            r.checker,
            last_lines(&r.checker_output, 15)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_names_are_the_checkers_numbers() {
        assert_eq!(phase_name("pass1"), "1");
        assert_eq!(phase_name("phase7"), "7");
        assert_eq!(phase_name("step2"), "2");
        assert_eq!(phase_name("setup"), "setup");
        assert_eq!(phase_name(""), "setup");
        assert_eq!(phase_name("passage"), "passage");
    }

    #[test]
    fn e2fsck_memory_adds_arena_and_mmap() {
        assert_eq!(e2fsck_memory_kib("208k/0k (82k/127k)"), Some(208));
        assert_eq!(e2fsck_memory_kib("1200k/5300k (1k/2k)"), Some(6500));
        assert_eq!(e2fsck_memory_kib("512k,"), None);
        assert_eq!(e2fsck_memory_kib("512k"), Some(512));
    }
}
