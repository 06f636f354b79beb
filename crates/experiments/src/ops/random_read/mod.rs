//! The "random-read" operation: random 512-byte reads of a huge file through block maps
//! (ext3), extents (ext4) and the raw device, and what the mapping costs a 2010 disk.
//!
//! Coly Li (2010) read a ~2 TB file made with `dd` 100,000 times at random offsets, 512 bytes
//! each, buffered and O_DIRECT, on ext3, ext4 and the raw device of a 5400 rpm 2 TB disk. His
//! argument: the ext3 file has ~520K indirect blocks, mostly cold, so most reads need one
//! more read for the mapping; ext4 maps it with ~16K extents in ~50 blocks that stay cached.
//!
//! Here, at `--scale F` (the file is `file_gb x F`):
//! - ext3: the file as 2007's ext3 laid it out — planned by the `ext3-2007` policy, written
//!   through libext2fs into a sparse image ([`KernelFs::from_image`]): its indirect blocks
//!   are real, its data blocks are allocated but never written (holes of the backing file;
//!   the loop device still sees and serves every read);
//! - ext4: the file today's kernel writes with `dd bs=1M conv=fsync`, planned by the engine's
//!   `ext4-kernel` policy (its blocks and extent tree are the kernel's own for this write,
//!   tests/ext4_engine.rs) and written through libext2fs as a sparse image; with
//!   `layout = "kernel"` (`--set layout=kernel`) the kernel writes it on zram instead (zero
//!   pages cost zram no memory), as the proof does;
//! - raw: a loop device of the same size over a sparse file.
//!
//! Every read reaches the device: the file is checked to have no holes and no unwritten
//! extents (FIEMAP through `filefrag -v`). The loop devices' queue settings are the 2010
//! kernel's (experiment file). Each target and mode starts cold (remount, caches dropped);
//! its reads are traced, every read request is attributed to the file's data or to its
//! mapping (indirect blocks, extent nodes) by the layout read with debugfs, and the trace is
//! replayed on the device preset.
//!
//! With `--closed-loop [K]` each target's reads run on the preset's emulated disk (docs/
//! emulate.md): the raw target's sparse file served read-only by the emulator, a file system
//! moved there (read-write over its own backing) once its layout is read. The reads are issued
//! by one thread of this process, so that thread's own CPU clock paces the model's clock
//! between requests (`CpuPace::follow_this_thread`; the process's clock would count the
//! emulator's spinning threads). Each run gets the time measured there beside the open-loop
//! replay of the same stream.

use crate::ext_classes::ExtLayout;
use crate::output::{write_json, Human};
use crate::random_file::check_fully_written;
pub use crate::random_file::{offsets, SplitMix64};
use crate::steps::check::ClosedLoopRun;
use crate::steps::phases::{of_tag, TagTable};
use crate::{kernel_profile, Experiment, Operation, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_report::{offset_plot, Cell, Column, HtmlBundle, Table};
use layoutlab_rig::{
    check_free_space, Backing, CpuPace, KernelFs, KernelFsOptions, LoopDevice, RigLock, TempFile,
    TraceOptions, TracefsSession,
};
use layoutlab_trace::{Op, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The "random-read" operation (registered in [`crate::OPERATIONS`]).
pub struct RandomRead;

/// Parameters of the "random-read" operation: an experiment's `[random-read]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomReadSpec {
    /// Scale used when `--scale` is not given.
    pub default_scale: f64,
    /// Size of the file at scale 1, GB (10^9 bytes).
    pub file_gb: f64,
    /// File-system size over file size (metadata and slack).
    pub fs_per_file: f64,
    /// Random reads per target and mode.
    pub reads: u64,
    /// Bytes of each read (a multiple of 512).
    pub read_bytes: u64,
    /// Targets, in order: kernel profiles ("ext3", "ext4", ...) or "raw".
    pub targets: Vec<String>,
    /// Modes, in order: "buffered", "direct".
    pub modes: Vec<String>,
    /// Read-ahead of the loop device, KiB (the OS of the modelled disk's).
    pub read_ahead_kb: u32,
    /// Largest request of the loop device, KiB (the OS of the modelled disk's).
    pub max_sectors_kb: u32,
    /// Mount options added to the kernel profile's for this experiment (comma-separated,
    /// may be empty).
    #[serde(default)]
    pub extra_mount_options: String,
    /// Targets whose file is laid out by a layoutlab policy and written through libext2fs
    /// (kernel profile → policy, whose mkfs profile has the same name).
    #[serde(default)]
    pub policy_images: BTreeMap<String, String>,
    /// Targets whose file today's kernel would write, planned instead by a policy proven to
    /// place that write as the kernel does (kernel profile → policy; tests/ext4_engine.rs) and
    /// written through libext2fs as a sparse image: no data is written, so scale 1 takes
    /// minutes. Used when `layout` is "engine".
    #[serde(default)]
    pub engine_images: BTreeMap<String, String>,
    /// "engine" (default): `engine_images` targets are planned by the engine; "kernel": the
    /// kernel writes them with `dd` (the path the engine is proven against;
    /// `--set layout=kernel`).
    #[serde(default = "default_layout")]
    pub layout: String,
    /// The capture device's `queue/rotational`; `None`: the preset's (1 for every hard disk).
    /// A run sets it (`--set os_rotational=false`) to measure the flag alone (docs/fidelity.md,
    /// the request stream's factor).
    #[serde(default)]
    pub os_rotational: Option<bool>,
}

impl RandomReadSpec {
    /// The queue the loop device presents: the priced disk's (rotational, read-ahead, request
    /// size), with the rotational flag overridden where the run asks.
    fn capture_queue(&self, device: &str) -> Result<layoutlab_rig::QueueSpec> {
        crate::support::capture_queue_flagged(
            device,
            Some(self.read_ahead_kb),
            Some(self.max_sectors_kb),
            self.os_rotational,
        )
    }
}

/// Who lays out the files of `engine_images` targets by default.
fn default_layout() -> String {
    "engine".into()
}

const MODES: [&str; 2] = ["buffered", "direct"];
const MIB: u64 = 1 << 20;

impl Operation for RandomRead {
    fn name(&self) -> &'static str {
        "random-read"
    }

    fn options(&self) -> &'static [crate::OpOption] {
        &[
            crate::OpOption {
                key: "targets",
                help: "what the file is read from, a list: raw, or kernel profiles (ext3, ext4, ...)",
                flag: Some("fs"),
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "modes",
                help: "I/O modes, a list: buffered, direct (--mode both: the two)",
                flag: Some("mode"),
                flag_aliases: &[("both", "buffered,direct")],
            },
            crate::OpOption {
                key: "layout",
                help: "who lays out the ext4 file: engine (planned) or kernel (today's kernel writes it)",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "os_rotational",
                help: "the capture device's queue/rotational, true or false (default: the preset's, true for every hard disk); false switches the flag alone",
                flag: None,
                flag_aliases: &[],
            },
        ]
    }

    /// It makes loop devices and kernel file systems and traces them.
    fn needs_root(&self, _exp: &Experiment) -> bool {
        true
    }

    /// `--closed-loop` runs each target's reads on the preset's emulated disk (`run_target`).
    fn supports_closed_loop(&self) -> bool {
        true
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let s: RandomReadSpec = exp.params()?;
        check_spec(&s)
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run_random_read(exp, args)
    }
}

fn check_spec(s: &RandomReadSpec) -> Result<()> {
    crate::random_file::check(
        s.file_gb,
        s.fs_per_file,
        s.reads,
        s.read_bytes,
        MIB,
        "1 MiB",
    )?;
    for t in &s.targets {
        kernel_profile::target(t)?;
    }
    for m in &s.modes {
        mode_is_valid(m)?;
    }
    crate::random_file::check_layout(&s.layout)?;
    for (fs, policy) in s.policy_images.iter().chain(&s.engine_images) {
        kernel_profile::by_name(fs)?;
        layoutlab_layout::policy_by_name(policy, &layoutlab_layout::PolicyParams::new())?;
        layoutlab_layout::MkfsProfile::by_name(policy)?;
    }
    Ok(())
}

fn mode_is_valid(m: &str) -> Result<()> {
    if !MODES.contains(&m) {
        bail!(
            "unknown mode '{m}'; valid: {} (`--mode both`: the two)",
            MODES.join(", ")
        );
    }
    Ok(())
}

/// One target and mode (a row of the JSON contract, and more).
#[derive(Clone, Debug, Serialize)]
pub struct ReadRun {
    /// "ext3", "ext4" or "raw".
    pub target: String,
    /// "buffered" or "direct".
    pub mode: String,
    /// Who laid the file out: "policy ext3-2007" (a period's allocator), "engine ext4-kernel"
    /// (the engine's plan of the kernel's write, proven equal to it), "kernel" (`dd` through
    /// today's kernel), "none" for raw.
    pub layout: String,
    /// Random reads issued.
    pub reads: u64,
    /// Predicted seconds of the traced reads on the device preset (the first of
    /// `--device A,B`).
    pub seconds: f64,
    /// Predicted seconds of this same trace on every preset of `--device A,B`, by name (the
    /// first's is `seconds`): another drive's price of one capture, free of the spread
    /// between captures.
    pub seconds_on: crate::steps::price::SecondsOn,
    /// Predicted milliseconds per read.
    pub ms_per_read: f64,
    /// Read requests the device saw.
    pub device_requests: u64,
    /// Requests of the traced phase in every direction (reads, and any write or flush in
    /// it): what an emulated disk serves for it.
    pub phase_requests: u64,
    /// Of them, reads of the file's mapping (indirect blocks or extent-tree nodes), by the
    /// class of their first block.
    pub mapping_reads: u64,
    /// Of them, reads of the file's data.
    pub data_reads: u64,
    /// Of them, reads of anything else (inode table, superblock, ...).
    pub other_reads: u64,
    /// The file's mapping blocks (indirect blocks or extent nodes); 0 for raw.
    pub mapping_blocks: u64,
    /// Seconds the reads took here (loop device over a sparse file or zram, or the emulated
    /// disk): context only.
    pub seconds_here: f64,
    /// With --closed-loop: the reads' time measured on the emulated disk (first request to
    /// last completion), K and the requests served; `seconds` stays the open-loop replay of
    /// the same stream, beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<ClosedLoopRun>,
    /// The captured trace (not serialized).
    #[serde(skip)]
    pub trace: Trace,
    /// Modelled start of each request, s (not serialized).
    #[serde(skip)]
    pub start_s: Vec<f64>,
    /// Class of each request's first block (not serialized).
    #[serde(skip)]
    pub request_class: Vec<&'static str>,
    /// The queue the traced loop device presented (docs/rig.md), when the trace came from
    /// a capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_queue: Option<layoutlab_trace::DeviceQueue>,
}

/// JSON of `--json`.
#[derive(Serialize)]
struct RandomReadJson<'a> {
    experiment: &'a str,
    scale: f64,
    /// The preset of `seconds` (the first of `devices`).
    device: &'a str,
    /// Every preset the reads were priced on (`seconds_on`), the capture's first.
    devices: &'a [String],
    file_bytes: u64,
    runs: &'a [ReadRun],
}

/// Sizes of a run at `scale`: (file bytes, file-system bytes), whole MiB
/// ([`crate::random_file::sizes`] of its file).
pub fn sizes(spec: &RandomReadSpec, scale: f64) -> (u64, u64) {
    crate::random_file::sizes(spec.file_gb, spec.fs_per_file, scale)
}

fn run_random_read(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let spec: RandomReadSpec = exp.params()?;
    check_spec(&spec)?;
    // Resolve every name before any work: the first preset is the capture's, and each trace
    // is priced on all of them.
    let devices =
        crate::support::device_list(a.device.as_deref(), std::slice::from_ref(&exp.device))?;
    let device = devices[0].clone();
    let h = Human::new(a.json.as_deref());
    let scale = a.run_scale(exp)?;
    let modes: Vec<String> = spec.modes.clone();
    let targets: Vec<(String, Option<kernel_profile::KernelProfile>)> = spec
        .targets
        .clone()
        .into_iter()
        .map(|t| Ok((t.clone(), kernel_profile::target(&t)?)))
        .collect::<Result<_>>()?;
    let (file_bytes, fs_bytes) = sizes(&spec, scale);
    // Each preset prices the same requests, so each must hold the file system.
    for d in &devices {
        let dev = crate::support::load_device(d)?;
        if fs_bytes > dev.capacity_sectors() * 512 {
            bail!(
                "a {:.1} GB file system does not fit on {d} ({:.1} GB): use a smaller --scale",
                fs_bytes as f64 / 1e9,
                dev.capacity_sectors() as f64 * 512.0 / 1e9
            );
        }
    }
    if let Some(k) = a.closed_loop {
        crate::support::check_closed_loop_devices(&devices, k)?;
    }
    layoutlab_rig::require_root("making loop devices, kernel file systems and tracing them")?;
    crate::support::warn_if_leftovers();
    // The ext3 image's written blocks (2.09 GB at scale 1) and the raw target's sparse file
    // live in memory by default, as every other operation's images do: on the disk's ext4 the
    // host spent minutes allocating ext3's scattered indirect blocks, walking their FIEMAP and
    // discarding them at removal (docs/experiments/random-read.md, "Scale 1").
    let (workdir, _memory) = crate::support::work_dir(a.workdir.as_deref())?;
    eprintln!(
        "{} — scale {scale}: a {:.2} GB file on {:.2} GB; {} random {}-byte reads per target and mode; priced on {}",
        exp.title,
        file_bytes as f64 / 1e9,
        fs_bytes as f64 / 1e9,
        spec.reads,
        spec.read_bytes,
        devices.join(", ")
    );
    let offs = offsets(exp.seed, spec.reads, file_bytes, spec.read_bytes);
    let mut runs = Vec::new();
    for (i, (name, profile)) in targets.iter().enumerate() {
        eprintln!("[{}/{}] {name}", i + 1, targets.len());
        let got = run_target(
            &spec,
            name,
            profile.as_ref(),
            &modes,
            file_bytes,
            fs_bytes,
            &offs,
            &devices,
            &workdir,
            exp.seed,
            a.closed_loop,
        )
        .with_context(|| format!("target {name}"))?;
        for r in &got {
            eprintln!(
                "  {}: {} requests ({} mapping, {} data, {} other); {:.1} s on {device} ({:.2} ms/read){}; {:.1} s here{}",
                r.mode,
                r.device_requests,
                r.mapping_reads,
                r.data_reads,
                r.other_reads,
                r.seconds,
                r.ms_per_read,
                crate::steps::price::also_on(&devices, &r.seconds_on),
                r.seconds_here,
                match &r.closed_loop {
                    Some(c) => format!(
                        "; closed loop at K = {}: {:.3} s measured, {} requests served",
                        c.time_scale, c.measured_seconds, c.requests_served
                    ),
                    None => String::new(),
                }
            );
        }
        runs.extend(got);
    }
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    report(exp, a, &devices, scale, file_bytes, &runs, &h)
}

/// A target's device and what keeps it alive (field order = drop order).
type Target = crate::support::CaptureTarget<TempFile>;

/// Makes one target, then runs each mode cold and traced, each trace priced on every preset of
/// `devices`; the first is the capture's (the queue its loop device presents; with
/// `closed_loop`, the time scale K, its emulated disk).
#[allow(clippy::too_many_arguments)]
pub fn run_target(
    spec: &RandomReadSpec,
    name: &str,
    profile: Option<&kernel_profile::KernelProfile>,
    modes: &[String],
    file_bytes: u64,
    fs_bytes: u64,
    offs: &[u64],
    devices: &[String],
    workdir: &Path,
    seed: u64,
    closed_loop: Option<f64>,
) -> Result<Vec<ReadRun>> {
    let device = devices
        .first()
        .context("no device preset to capture for")?
        .as_str();
    // A period layout always comes from its policy; today's kernel's from the engine unless
    // `layout = "kernel"` asks the kernel to write it.
    let (policy, label) = match (spec.policy_images.get(name), spec.engine_images.get(name)) {
        (Some(p), _) => (Some(p.clone()), "policy"),
        (None, Some(p)) if spec.layout == "engine" => (Some(p.clone()), "engine"),
        _ => (None, "kernel"),
    };
    let image_stage = crate::stages::enter(crate::stages::IMAGE);
    let queue = spec.capture_queue(device)?;
    let (mut target, layout_by) = match profile {
        None => {
            check_free_space(workdir, 64 * MIB)?;
            let lock = RigLock::acquire()?;
            let path = workdir.join(format!("layoutlab-raw-{}.img", std::process::id()));
            let file =
                layoutlab_rig::cleanup::creating(|| TempFile::create_sparse(&path, fs_bytes))?;
            let target = match closed_loop {
                None => Target::Raw {
                    loopdev: LoopDevice::attach_presenting(file.path(), false, &queue)?,
                    _backing: file,
                    _lock: lock,
                },
                // Only read: the emulator serves the sparse file read-only.
                Some(k) => Target::Emulated {
                    emulator: Box::new(crate::support::start_emulator(
                        device,
                        file.path(),
                        k,
                        true,
                        queue.clone(),
                    )?),
                    _backing: file,
                    _lock: lock,
                },
            };
            (target, "none".to_string())
        }
        Some(p) => {
            let base = KernelFsOptions {
                kind: p.fs_kind()?,
                mkfs_args: p.mkfs_args.clone(),
                mount_options: crate::steps::image::join_options(&[
                    &p.mount_options,
                    &spec.extra_mount_options,
                ]),
                bytes: fs_bytes,
                backing: Backing::Zram,
                resident_bytes: KernelFsOptions::ext_zero_file_resident_bytes(fs_bytes),
                queue: queue.clone(),
            };
            match &policy {
                Some(policy) => {
                    let image = crate::steps::plan::policy_image(
                        policy,
                        &crate::steps::plan::one_file("random-read", fs_bytes, "big", file_bytes),
                        seed,
                    )?;
                    let opts = KernelFsOptions {
                        backing: Backing::SparseFile(workdir.to_path_buf()),
                        resident_bytes: crate::steps::image::sparse_image_bytes(
                            &image.geometry,
                            &image.plan,
                        ) + 64 * MIB,
                        mount_options: crate::steps::image::mount_options(
                            &base.mount_options,
                            &image.profile,
                        ),
                        ..base
                    };
                    eprintln!(
                        "  laid out by the {policy} policy ({} mapping blocks), written through libext2fs",
                        image.plan.mapping_blocks()
                    );
                    let t = std::time::Instant::now();
                    let k = KernelFs::from_image(&opts, &mut |path: &Path| {
                        crate::steps::image::write_plan(
                            path,
                            opts.bytes,
                            &image.profile,
                            &image.plan,
                        )
                    })?;
                    eprintln!(
                        "  image made and mounted in {:.1} s",
                        t.elapsed().as_secs_f64()
                    );
                    (Target::Fs(Box::new(k)), format!("{label} {policy}"))
                }
                None => {
                    let k = KernelFs::create(&base)?;
                    let file = k.mount_point().join("big");
                    eprintln!(
                        "  writing the file with dd bs=1M ({:.2} GB)",
                        file_bytes as f64 / 1e9
                    );
                    let t = std::time::Instant::now();
                    dd_write(&file, file_bytes)?;
                    eprintln!(
                        "  written in {:.1} s ({:.0} MB/s here)",
                        t.elapsed().as_secs_f64(),
                        file_bytes as f64 / 1e6 / t.elapsed().as_secs_f64()
                    );
                    (Target::Fs(Box::new(k)), "kernel".to_string())
                }
            }
        }
    };
    // What every block is, and the check that every read reaches the device.
    let layout = match &mut target {
        Target::Raw { .. } | Target::Emulated { .. } => None,
        Target::Fs(k) => {
            // A file the kernel wrote must be on disk before FIEMAP reads its extents. An
            // image was written through libext2fs before the mount, so the check needs no
            // remount, whose drop of every cache made FIEMAP and debugfs read ext3's 453,440
            // indirect blocks back from the work directory (at scale 1 from /tmp, `filefrag -v`
            // took 89 s after a remount and 60 s without, one run each at different loads).
            // Each mode remounts cold before its reads either way.
            if policy.is_none() {
                k.remount()?;
            }
            let file = k.mount_point().join("big");
            check_fully_written(&file, file_bytes)?;
            let layout = ExtLayout::read(k.device().path(), "/big")?;
            if let Some(time_scale) = closed_loop {
                // The layout was read on the plain loop device; the reads run on the emulated
                // disk over the same backing.
                k.emulate(time_scale, crate::support::emulator_model(device)?)?;
            }
            Some(layout)
        }
    };
    drop(image_stage);
    let pace = target.cpu_pace();
    let mut served_ranges = Vec::new();
    let mut runs = Vec::new();
    for mode in modes {
        let capture_stage = crate::stages::enter(crate::stages::CAPTURE);
        let (path, dev_name) = match &mut target {
            Target::Raw { .. } | Target::Emulated { .. } => {
                let loopdev = target.loopdev();
                layoutlab_rig::drop_caches()?;
                loopdev.flush_buffers()?;
                (
                    loopdev.path().to_path_buf(),
                    format!("loop{}", loopdev.number()),
                )
            }
            Target::Fs(k) => {
                // Cold: no cached inode, indirect block or extent.
                k.remount()?;
                k.drop_caches()?;
                (
                    k.mount_point().join("big"),
                    format!("loop{}", k.device().number()),
                )
            }
        };
        let served_now = || target.served_so_far();
        let (trace, seconds_here, served) = traced_reads(
            target.loopdev(),
            &dev_name,
            &path,
            mode == "direct",
            offs,
            spec.read_bytes,
            pace.as_ref()
                .map(|p| (p, &served_now as &dyn Fn() -> usize)),
        )?;
        served_ranges.push(served);
        drop(capture_stage);
        let _pricing = crate::stages::enter(crate::stages::PRICE);
        let replays = crate::steps::price::on_presets(devices, &trace, 1.0)?;
        let seconds_on = crate::steps::price::seconds_on(devices, &replays);
        let replayed = &replays[0];
        let request_class: Vec<&'static str> = trace
            .requests
            .iter()
            .map(|r| match &layout {
                Some(l) => l.class_of(r.sector / (l.block_size_bytes / 512).max(1)),
                None => "data",
            })
            .collect();
        let reads: Vec<usize> = (0..trace.requests.len())
            .filter(|&i| trace.requests[i].op == Op::Read)
            .collect();
        let count = |f: &dyn Fn(&str) -> bool| {
            reads.iter().filter(|&&i| f(request_class[i])).count() as u64
        };
        let seconds = replayed.wall_ns / 1e9;
        runs.push(ReadRun {
            capture_queue: trace.queue.clone(),
            target: name.to_string(),
            mode: mode.clone(),
            layout: layout_by.clone(),
            reads: offs.len() as u64,
            seconds,
            seconds_on,
            ms_per_read: seconds * 1e3 / offs.len() as f64,
            device_requests: reads.len() as u64,
            phase_requests: trace.requests.len() as u64,
            closed_loop: None,
            mapping_reads: count(&|c| c == "indirect" || c == "extent"),
            data_reads: count(&|c| c == "data"),
            other_reads: count(&|c| !matches!(c, "indirect" | "extent" | "data")),
            mapping_blocks: layout.as_ref().map_or(0, |l| l.mapping_blocks),
            seconds_here,
            start_s: replayed.requests.iter().map(|r| r.start_ns / 1e9).collect(),
            request_class,
            trace,
        });
    }
    // The emulator stopped, then the file system unmounted, its loop device detached and its
    // image removed (stop_emulating takes the target): seconds to minutes for an ext3 image
    // at scale 1 on a host that discards what it frees (crate::stages::TEARDOWN).
    let served = crate::stages::timed(crate::stages::TEARDOWN, || target.stop_emulating())?;
    if let Some(k) = closed_loop {
        for (r, (from, to)) in runs.iter_mut().zip(served_ranges) {
            r.closed_loop = Some(ClosedLoopRun::of(k, &served[from..to], 0.0));
        }
    }
    Ok(runs)
}

/// `dd if=/dev/zero of=FILE bs=1M count=N conv=fsync`: the file written sequentially by the
/// kernel, as the post made it.
pub fn dd_write(file: &Path, bytes: u64) -> Result<()> {
    let out = std::process::Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", file.display()))
        .args([
            "bs=1M",
            &format!("count={}", bytes / MIB),
            "conv=fsync",
            "status=none",
        ])
        .output()
        .context("running dd (Debian package coreutils)")?;
    if !out.status.success() {
        bail!("dd failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// The random reads of `path` at `offs`, traced on `loopdev` as one phase: the trace of the
/// reads (sectors checked against the device's counters), the seconds they took here, and on
/// an emulated disk (`emulated`: its pace and served count) the range of the requests it
/// served between the phase's marks, while this thread's CPU paced its clock.
fn traced_reads(
    loopdev: &LoopDevice,
    dev_name: &str,
    path: &Path,
    direct: bool,
    offs: &[u64],
    read_bytes: u64,
    emulated: Option<(&CpuPace, &dyn Fn() -> usize)>,
) -> Result<(Trace, f64, (usize, usize))> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    if direct {
        opts.custom_flags(libc_o_direct());
    }
    let f = opts
        .open(path)
        .with_context(|| format!("open {}", path.display()))?;
    // O_DIRECT needs an aligned buffer: a 4 KiB-aligned one serves both modes.
    let mut buf = AlignedBuf::new(read_bytes as usize);
    let session = TracefsSession::start(loopdev.dev(), &TraceOptions::default())?;
    // The reads run in this thread: its CPU time is the think time between them.
    session.follow(gettid())?;
    let window = layoutlab_rig::window::Window::open(&session, dev_name, "reads")?;
    // The device is settled before both marks: what it serves in between is the phase's.
    let served_from = emulated.map_or(0, |(_, served)| served());
    if let Some((pace, _)) = emulated {
        pace.follow_this_thread();
    }
    let t = std::time::Instant::now();
    let read = offs.iter().try_for_each(|&o| {
        f.read_exact_at(buf.as_mut(), o)
            .with_context(|| format!("read {} at {o}", path.display()))
    });
    let seconds_here = t.elapsed().as_secs_f64();
    if let Some((pace, _)) = emulated {
        // The rig's own work from here (settling, remounting) is placed by the wall.
        pace.stop_following();
    }
    read?;
    let counted = window.close("after")?;
    let served_to = emulated.map_or(0, |(_, served)| served());
    let capture = session.stop()?;
    layoutlab_rig::window::check_complete(&capture)?;
    let trace = of_tag(&capture.trace, "reads", None, TagTable::Own);
    let r: u64 = trace
        .requests
        .iter()
        .filter(|q| q.op == Op::Read)
        .map(|q| u64::from(q.sectors))
        .sum();
    if !counted.reads().contains(&r) {
        bail!(
            "the trace saw {r} sectors read, the device counted {}; the trace is incomplete",
            layoutlab_rig::window::show(&counted.reads())
        );
    }
    Ok((trace, seconds_here, (served_from, served_to)))
}

fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc_gettid() }) as u32
}

extern "C" {
    #[link_name = "gettid"]
    fn libc_gettid() -> i32;
}

/// O_DIRECT of Linux (x86-64 and aarch64 differ; taken from the target's C headers).
fn libc_o_direct() -> i32 {
    #[cfg(target_arch = "aarch64")]
    {
        0o200000
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        0o40000
    }
}

/// A zeroed buffer aligned to 4 KiB (what O_DIRECT asks of a buffer).
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let layout =
            std::alloc::Layout::from_size_align(len.max(4096), 4096).expect("valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        AlignedBuf { ptr, len, layout }
    }

    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() ≥ len bytes, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in new().
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn report(
    exp: &Experiment,
    a: &RunArgs,
    devices: &[String],
    scale: f64,
    file_bytes: u64,
    runs: &[ReadRun],
    h: &Human,
) -> Result<()> {
    let device = devices[0].as_str();
    let out_dir = a.out_dir(exp);
    let mut t = Table::new(
        &format!(
            "{} at scale {scale}: {} random reads of a {:.1} GB file, predicted on {device}",
            exp.name,
            runs.first().map_or(0, |r| r.reads),
            file_bytes as f64 / 1e9
        ),
        vec![
            Column::text("target"),
            Column::text("mode"),
            Column::text("laid out by"),
            Column::number("reads", None),
            Column::number("device requests", None),
            Column::number("mapping reads", None),
            Column::number("data reads", None),
            Column::number("other", None),
            Column::number("mapping blocks", None),
            Column::number("predicted", Some("s")),
            Column::number("per read", Some("ms")),
            Column::number("here", Some("s")),
        ],
    );
    for r in runs {
        t.push_row(vec![
            Cell::text(&r.target),
            Cell::text(&r.mode),
            Cell::text(&r.layout),
            Cell::num(r.reads as f64, 0),
            Cell::num(r.device_requests as f64, 0),
            Cell::num(r.mapping_reads as f64, 0),
            Cell::num(r.data_reads as f64, 0),
            Cell::num(r.other_reads as f64, 0),
            Cell::num(r.mapping_blocks as f64, 0),
            Cell::num(r.seconds, 1),
            Cell::num(r.ms_per_read, 2),
            Cell::num(r.seconds_here, 1),
        ])?;
    }
    h.say(&format!("{}\n", t.to_terminal(None)?));
    let per_device = crate::support::per_device_table(
        &format!(
            "{} at scale {scale}: each target's reads priced on every preset",
            exp.name
        ),
        &["target", "mode"],
        devices,
        runs.iter()
            .map(|r| (vec![r.target.clone(), r.mode.clone()], &r.seconds_on)),
    )?;
    if let Some(p) = &per_device {
        h.say(&format!("{}\n", p.to_terminal(None)?));
    }
    // The post's argument, checked against this run's own numbers.
    let mapping = |target: &str| {
        runs.iter()
            .filter(|r| r.target == target)
            .map(|r| r.mapping_reads as f64 / r.reads.max(1) as f64)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    if let (Some(e3), Some(e4)) = (mapping("ext3"), mapping("ext4")) {
        h.say(&format!(
            "mapping reads per random read: ext3 up to {e3:.3}, ext4 up to {e4:.4} — the post's \
             argument (ext3's indirect blocks mostly cold, ext4's few extent blocks hot) {}.\n",
            if e3 > 10.0 * e4.max(1e-6) && e3 > 0.05 {
                "is visible"
            } else {
                "is not visible at this scale"
            }
        ));
    }
    h.say(
        "note: a file laid out by 'policy P' or 'engine P' is P's plan written through \
         libext2fs into a sparse image (its data blocks are holes of the backing file: the loop \
         device still serves every read); 'engine ext4-kernel' plans the kernel's own dd write, \
         block for block (crates/experiments/tests/ext4_engine.rs; `--set layout=kernel` has \
         the kernel write it instead); 'kernel' is dd bs=1M through today's kernel on zram. \
         Reads are classed by the block they start in (debugfs). Each target and mode starts \
         cold (remount, caches dropped).\n",
    );
    if !exp.published.source.is_empty() {
        h.say(&format!("published: {}\n", exp.published.source));
    }
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    // Every target's and mode's trace, so each can be priced again alone (`layoutlab trace
    // replay`): the error budget's preset-values row replays them on the preset's variants.
    crate::output::save_traces(
        &out_dir,
        runs.iter()
            .map(|r| (format!("reads-{}-{}", r.target, r.mode), &r.trace)),
    )?;
    let mut html = HtmlBundle::new(&exp.title);
    html.table(t.clone());
    if let Some(p) = per_device {
        html.table(p);
    }
    for r in runs {
        let series =
            crate::support::io_series_by_class(&r.trace, |i| r.start_s[i], |i| r.request_class[i]);
        let svg = offset_plot(
            &format!(
                "{} {} ({}): random reads on {device}, by class of block",
                r.target, r.mode, r.layout
            ),
            &series,
        );
        html.figure(
            &format!(
                "Random reads of {} ({}, {}): each request's disk offset against modelled time on {device}, coloured by the kind of block it read (file data or mapping blocks).",
                r.target, r.mode, r.layout
            ),
            &format!("reads-{}-{}.svg", r.target, r.mode),
            svg,
        );
    }
    html.save(&out_dir)?;
    eprintln!(
        "report: {}/{{report.md,index.html,reads-TARGET-MODE.svg,traces/}}",
        out_dir.display()
    );
    if let Some(path) = &a.json {
        write_json(
            path,
            &RandomReadJson {
                experiment: &exp.name,
                scale,
                device,
                devices,
                file_bytes,
                runs,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_targets_and_modes_list_the_valid_ones() {
        let e = kernel_profile::target("zfs").unwrap_err().to_string();
        assert!(e.contains("raw") && e.contains("ext3"), "{e}");
        let e = mode_is_valid("mmap").unwrap_err().to_string();
        // a mode of the table; "both" is `--mode`'s alias of the two, not a mode
        assert!(e.contains("valid: buffered, direct ("), "{e}");
    }

    /// The loop device presents the preset's rotational flag unless the run sets its own
    /// (`--set os_rotational=false`: the flag alone, docs/fidelity.md).
    #[test]
    fn the_rotational_flag_is_the_presets_unless_set() {
        let exp = crate::experiment::load("random-read").unwrap();
        let mut spec: RandomReadSpec = exp.params().unwrap();
        assert_eq!(spec.os_rotational, None);
        let shipped = spec.capture_queue(&exp.device).unwrap();
        assert_eq!(shipped.rotational, Some(true), "{shipped:?}");
        assert_eq!(shipped.read_ahead_kb, Some(spec.read_ahead_kb));
        spec.os_rotational = Some(false);
        let flat = spec.capture_queue(&exp.device).unwrap();
        assert_eq!(flat.rotational, Some(false));
        assert_eq!(flat.max_sectors_kb, shipped.max_sectors_kb);
    }
}
