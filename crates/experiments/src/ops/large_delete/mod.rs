//! The "large-delete" operation: how much a kernel file system reads and writes to delete one
//! large file, and how long that takes on a modelled disk.
//!
//! For every file system (a kernel profile under `profiles/kernelfs/`) and variant: make it on
//! zram under a loop device (the file's data pages are zeros, which cost zram no memory), write
//! the file, remount (cold caches), and trace `rm FILE` + sync as the phase `delete`. Per run:
//! the file's fragments (FIEMAP, counted as `filefrag` does: physically discontiguous extents),
//! the sectors the delete read and wrote (checked against the device's counters by the rig),
//! and the delete's trace replayed on the device preset.
//!
//! Variants: `contiguous` writes the file alone, sequentially, in `write_chunk_mib` writes as
//! `dd` would; `fragmented` writes it while a second writer appends to another file, the two
//! taking turns of `fragment_chunk_mib`, each turn ended by `fdatasync` (so every file system
//! allocates each turn when it is written, and the turns interleave on disk) — the same
//! mechanism on every file system.
//!
//! A file system listed in `policy_images` (ext3: today's kernel has no ext3 allocator of
//! 2007) gets both variants from a layoutlab policy instead of the kernel's writes: the same
//! writes as a population (contiguous: one create of the whole file; fragmented: both files
//! created, then their turns as `NsOp::Append`s in the same order), planned by the policy,
//! written through libext2fs into a sparse image that the kernel mounts and deletes from.

use crate::ext_classes::ExtLayout;
use crate::output::{write_json, Human};
use crate::steps::plan::policy_image;
use crate::{kernel_profile, Experiment, Operation, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_report::{offset_plot, Cell, Column, HtmlBundle, OffsetSeries, Table};
use layoutlab_rig::{Backing, FsKind, KernelFs, KernelFsOptions, TraceOptions};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The "large-delete" operation (registered in [`crate::OPERATIONS`]).
pub struct LargeDelete;

/// Parameters of the "large-delete" operation: an experiment's `[large-delete]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LargeDeleteSpec {
    /// Scale used when `--scale` is not given.
    pub default_scale: f64,
    /// Size of the deleted file at scale 1, GB (10^9 bytes).
    pub file_gb: f64,
    /// File-system size over file size (room for the fragmented variant's second writer).
    pub fs_per_file: f64,
    /// Kernel profiles run, in order (`--fs` picks some of them).
    pub file_systems: Vec<String>,
    /// Variants run, in order: "contiguous", "fragmented".
    pub variants: Vec<String>,
    /// Size of each write(2) of the file, MiB.
    pub write_chunk_mib: u64,
    /// Size of each writer's turn in the fragmented variant, MiB.
    pub fragment_chunk_mib: u64,
    /// File systems whose files (both variants) are laid out by a layoutlab policy (and
    /// written through libext2fs) instead of by today's kernel: kernel profile → policy,
    /// whose mkfs profile has the same name (`ext3 = "ext3-2007"`: today's ext3 is the ext4
    /// driver, whose allocator is not 2007's).
    #[serde(default)]
    pub policy_images: std::collections::BTreeMap<String, String>,
    /// File systems whose contiguous file today's kernel would write, planned instead by a
    /// policy proven to place that write as the kernel does (kernel profile → policy;
    /// tests/ext4_engine.rs) and written through libext2fs as a sparse image, when `layout`
    /// is "engine". Their fragmented file (two writers' appends, which the ext4 policies do
    /// not model) stays kernel-written.
    #[serde(default)]
    pub engine_images: std::collections::BTreeMap<String, String>,
    /// The `engine_images` file systems whose policy also plans the fragmented variant (the
    /// two writers' appends), proven for that shape too: `ext4-2007`
    /// (tests/ext4_2007_engine.rs). The others' fragmented file stays kernel-written.
    #[serde(default)]
    pub engine_fragmented: Vec<String>,
    /// "engine" (default) or "kernel" (`--set layout=kernel`: the kernel writes the
    /// `engine_images` files too, the path the engine is proven against).
    #[serde(default = "default_layout")]
    pub layout: String,
    /// How the kernel-written files' zeros reach zram: "direct-loop" (default: the file
    /// system is remounted through a loop device with direct I/O for the untraced write,
    /// then put back on the traced presentation, for the files of [`DIRECT_LOOP_PROVEN`];
    /// the others stay buffered) or "buffered" (`--set
    /// write=buffered`: every write through the buffered loop device, the path the other is
    /// proven against, tests/large_delete_write.rs).
    #[serde(default = "default_write")]
    pub write: String,
    /// How many kernel-written files are written at once (consecutive runs, each on its own
    /// file system, zram and loop devices, when their memory fits together; [`batches`]); the
    /// deletes are traced one at a time after the group's writes. 1: one after another.
    #[serde(default = "default_write_lanes")]
    pub write_lanes: usize,
    /// The memory cgroup (MiB) the writer of the kernel-written files of
    /// [`MEMORY_BOUND_PROVEN`] runs in: its page cache is
    /// recycled inside the bound instead of taking fresh pages from the whole machine, which
    /// on this virtual machine cost a host fault each (docs/rig.md, "Where the loop worker's
    /// time goes"). 0: unbounded, the path the bound is proven against
    /// (tests/large_delete_write.rs).
    #[serde(default = "default_write_memory_mib")]
    pub write_memory_mib: u64,
    /// The queue/rotational flag of the devices the file systems are made, written and
    /// traced on; `None`: the preset's (1 for every hard disk). A run sets it (`--set
    /// os_rotational=false`) to measure the flag alone (docs/fidelity.md, the request
    /// stream's factor): btrfs takes its `ssd` allocation mode from it, ext4 its group scan.
    #[serde(default)]
    pub os_rotational: Option<bool>,
}

/// The writer's memory bound by default: XFS's 10 GB file in 5.4-10.4 s bounded at 512 MiB
/// and 1 GiB against 26-37 s unbounded, btrfs's in 21-28 s against 37 s (one machine, one
/// run each, docs/experiments/large-delete.md "Scale 1 cost"); 256 MiB was slower (18 s).
fn default_write_memory_mib() -> u64 {
    1024
}

/// Two lanes by default: the proven files' deletes at scale 1 written so (ext4's fragmented
/// pair, XFS's two files) read and wrote the sectors, and priced the seconds, of the runs
/// written alone, and the group took about 197 s against about 230 s one at a time (one run
/// each; docs/experiments/large-delete.md, "Kernel writes at once"). Little more: each write
/// keeps its writer and its loop worker busy, so two at once share this machine's two CPUs.
/// `--set write_lanes=1` writes one at a time.
fn default_write_lanes() -> usize {
    2
}

/// How kernel-written files are written by default.
fn default_write() -> String {
    "direct-loop".into()
}

/// Values of [`LargeDeleteSpec::write`].
pub const WRITE_PATHS: [&str; 2] = ["direct-loop", "buffered"];

/// Who lays out the files of `engine_images` file systems by default.
fn default_layout() -> String {
    "engine".into()
}

const VARIANTS: [&str; 2] = ["contiguous", "fragmented"];
const MIB: u64 = 1 << 20;

impl Operation for LargeDelete {
    fn name(&self) -> &'static str {
        "large-delete"
    }

    fn options(&self) -> &'static [crate::OpOption] {
        &[
            crate::OpOption {
                key: "file_systems",
                help: "file systems (kernel profiles) the file is deleted on, a list: ext3, ext4-2007, ext4, xfs, btrfs",
                flag: Some("fs"),
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "layout",
                help: "who lays out the ext4 files: engine (planned) or kernel (today's kernel writes them)",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "write",
                help: "how kernel-written files reach zram: direct-loop (a direct-I/O loop for the write; not XFS) or buffered (the buffered loop throughout)",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "write_memory_mib",
                help: "the memory cgroup (MiB) the kernel-written files' writer runs in, so that its page cache recycles its own pages (0: unbounded)",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "os_rotational",
                help: "the file systems' devices' queue/rotational, true or false (default: the preset's, true for every hard disk); false switches the flag alone (btrfs's ssd mode, ext4's group scan)",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "write_lanes",
                help: "how many kernel-written files are written at once, each on its own file system (1: one after another); deletes are traced one at a time",
                flag: None,
                flag_aliases: &[],
            },
        ]
    }

    /// It makes kernel file systems on loop devices and traces the delete.
    fn needs_root(&self, _exp: &Experiment) -> bool {
        true
    }

    /// `--closed-loop` moves each file system onto the emulated device for the traced delete
    /// (`one_run`).
    fn supports_closed_loop(&self) -> bool {
        true
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let s: LargeDeleteSpec = exp.params()?;
        if !(s.file_gb > 0.0 && s.fs_per_file >= 2.2) {
            bail!("file_gb must be > 0 and fs_per_file at least 2.2 (two writers and slack)");
        }
        if s.write_lanes == 0 {
            bail!("write_lanes must be at least 1 (1: one kernel write at a time)");
        }
        if s.write_chunk_mib == 0 || s.fragment_chunk_mib == 0 {
            bail!("write_chunk_mib and fragment_chunk_mib must be at least 1");
        }
        for f in &s.file_systems {
            kernel_profile::by_name(f)?;
        }
        for v in &s.variants {
            if !VARIANTS.contains(&v.as_str()) {
                bail!("unknown variant '{v}'; valid: {}", VARIANTS.join(", "));
            }
        }
        crate::random_file::check_layout(&s.layout)?;
        if !WRITE_PATHS.contains(&s.write.as_str()) {
            bail!(
                "unknown write path '{}'; valid: {}",
                s.write,
                WRITE_PATHS.join(", ")
            );
        }
        if let Some(fs) = s
            .engine_fragmented
            .iter()
            .find(|fs| !s.engine_images.contains_key(*fs))
        {
            bail!("engine_fragmented names {fs}, which engine_images does not plan");
        }
        for (fs, policy) in s.policy_images.iter().chain(&s.engine_images) {
            kernel_profile::by_name(fs)?;
            layoutlab_layout::policy_by_name(policy, &layoutlab_layout::PolicyParams::new())?;
            layoutlab_layout::MkfsProfile::by_name(policy)?;
        }
        Ok(())
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run_large_delete(exp, args)
    }
}

/// One file system and variant.
#[derive(Clone, Debug, Serialize)]
pub struct DeleteRun {
    /// Kernel profile name.
    pub fs: String,
    /// "contiguous" or "fragmented".
    pub variant: String,
    /// Who laid the file out: "kernel" (written through today's kernel), "policy POLICY"
    /// (planned by a period's layoutlab policy and written through libext2fs; the kernel
    /// mounts it and deletes), or "engine POLICY" (the same, with a policy proven to place
    /// the write as today's kernel does).
    pub layout: String,
    /// How a kernel-written file's zeros reached zram: "buffered loop" or "direct-I/O loop"
    /// ([`LargeDeleteSpec::write`]); none for a file written through libext2fs.
    pub written_through: Option<String>,
    /// The memory cgroup (MiB) the kernel's writes of the file ran in
    /// ([`LargeDeleteSpec::write_memory_mib`]); none when unbounded or written by libext2fs.
    pub write_memory_mib: Option<u64>,
    /// The runs whose files the kernel wrote at the same time as this one's
    /// ([`LargeDeleteSpec::write_lanes`]); empty when it was written alone or by libext2fs.
    pub written_beside: Vec<String>,
    /// Physically discontiguous extents of the file before the delete (filefrag's count).
    pub fragments: u64,
    /// Sectors (512 bytes) read during `rm` + sync.
    pub sectors_read: u64,
    /// Sectors written during `rm` + sync.
    pub sectors_written: u64,
    /// Requests of the delete.
    pub requests: u64,
    /// Predicted elapsed seconds of the delete's trace on the device preset (the first of
    /// `--device A,B`).
    pub seconds: f64,
    /// Predicted seconds of this same trace on every preset of `--device A,B`, by name (the
    /// first's is `seconds`): another drive's price of one capture, free of the spread
    /// between captures.
    pub seconds_on: crate::steps::price::SecondsOn,
    /// Seconds the delete took here (zram under loop): context only.
    pub seconds_here: f64,
    /// Where this run's wall time went here ([`RunWall`]): what scale 1 costs, per run.
    pub wall: RunWall,
    /// The least the layout lets a delete read, sectors: the file's mapping blocks plus the
    /// distinct block bitmaps and group-descriptor blocks its data touches (ext only).
    pub min_sectors_read: Option<u64>,
    /// Sectors read or written by what they were before the delete (ext: inode_table,
    /// indirect, extent, block_bitmap, group_descriptor, journal, superblock, ...; XFS:
    /// superblock, agf, agi, agfl, free_space_btree, inode_btree, log, inode, bmbt, file_data;
    /// btrfs: superblock, one class per tree, data, metadata_free_before), from the layout
    /// read with the file system's own tools (`other`: none of those).
    pub by_class: Option<std::collections::BTreeMap<String, u64>>,
    /// The captured trace of the delete (not serialized).
    #[serde(skip)]
    pub trace: layoutlab_trace::Trace,
    /// Its modelled start times, seconds (not serialized).
    #[serde(skip)]
    pub start_s: Vec<f64>,
    /// What each request's first block was before the delete (ext only; not serialized).
    #[serde(skip)]
    pub request_class: Option<Vec<&'static str>>,
    /// The queue the traced loop device presented (docs/rig.md), when the trace came from
    /// a capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_queue: Option<layoutlab_trace::DeviceQueue>,
    /// With --closed-loop: the delete's time measured on the emulated device (the file
    /// system mounted there for the traced delete). `seconds` stays the open-loop replay of
    /// the same stream, beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<crate::steps::check::ClosedLoopRun>,
}

/// Wall-clock seconds of one run's steps on this machine (`wall` in the JSON): where a large
/// scale's time goes. Context, like `seconds_here`: they follow the machine's load.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunWall {
    /// Waiting for the rig lock (another run's kernel file systems).
    pub lock_wait_seconds: f64,
    /// Making the file system: zram, loop device, mkfs and mount, or the sparse image planned
    /// by a policy and written through libext2fs, then mounted.
    pub make_seconds: f64,
    /// The kernel's write of the file(s) (the fragmented variant's pair), to the last fsync;
    /// none for a file written through libext2fs.
    pub write_seconds: Option<f64>,
    /// Remount (cold caches), FIEMAP, and reading every block's class with the file system's
    /// own tools (libext2fs, xfs_db, btrfs dump-tree).
    pub layout_seconds: f64,
    /// The traced delete: drop caches, `rm` + sync under the trace, the trace checked
    /// against the device's counters, and the teardown (unmount, loop device, zram).
    pub capture_seconds: f64,
}

impl RunWall {
    /// One line for the log: each step's seconds.
    pub fn describe(&self) -> String {
        let write = self
            .write_seconds
            .map_or(String::new(), |w| format!(", write {w:.1} s"));
        format!(
            "lock wait {:.1} s, make {:.1} s{write}, layout {:.1} s, capture {:.1} s",
            self.lock_wait_seconds, self.make_seconds, self.layout_seconds, self.capture_seconds
        )
    }
}

/// Run every file system and variant, then report.
fn run_large_delete(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let spec: LargeDeleteSpec = exp.params()?;
    // Resolve every name before any work: the first preset is the capture's, and each
    // delete's trace is priced on all of them.
    let devices =
        crate::support::device_list(a.device.as_deref(), std::slice::from_ref(&exp.device))?;
    let device = devices[0].clone();
    let out_dir = a.out_dir(exp);
    let h = Human::new(a.json.as_deref());
    let scale = a.run_scale(exp)?;
    // Resolve every name before any work.
    for name in &spec.file_systems {
        kernel_profile::by_name(name)?;
    }
    // The disk the delete is priced on is the disk the file systems are made on: btrfs picks
    // its `ssd` allocation mode, and ext4 its group scan, from the queue's rotational flag.
    let queue =
        crate::support::capture_queue_flagged(&device, Some(128), None, spec.os_rotational)?;
    if let Some(k) = a.closed_loop {
        crate::support::check_closed_loop_devices(&devices, k)?;
    }
    layoutlab_rig::require_root(
        "making kernel file systems on zram and loop devices and tracing them",
    )?;
    crate::support::warn_if_leftovers();
    let (file_bytes, fs_bytes) = sizes(&spec, scale);
    eprintln!(
        "{} — scale {scale}: a {:.2} GB file on {:.2} GB file systems; delete priced on {}",
        exp.title,
        file_bytes as f64 / 1e9,
        fs_bytes as f64 / 1e9,
        devices.join(", ")
    );
    let workdir = a.workdir.clone().unwrap_or_else(std::env::temp_dir);
    let jobs = jobs(&spec, fs_bytes, &queue, &workdir)?;
    let mut runs = Vec::new();
    for batch in batches(&jobs, spec.write_lanes) {
        // Written at once only where their memory fits together; else one after another.
        let at_once = batch.len() > 1
            && match layoutlab_rig::check_fits_together(
                &batch
                    .iter()
                    .map(|&i| jobs[i].opts.clone())
                    .collect::<Vec<_>>(),
            ) {
                Ok(()) => true,
                Err(e) => {
                    eprintln!("  writing one file system at a time: {e}");
                    false
                }
            };
        let groups: Vec<Vec<usize>> = if at_once {
            vec![batch]
        } else {
            batch.into_iter().map(|i| vec![i]).collect()
        };
        for group in groups {
            for &i in &group {
                eprintln!(
                    "[{}/{}] {} {}{}",
                    i + 1,
                    jobs.len(),
                    jobs[i].fs,
                    jobs[i].variant,
                    if group.len() > 1 {
                        " (written at once with the others of this group)"
                    } else {
                        ""
                    }
                );
            }
            for (i, run) in run_group(&spec, &jobs, &group, file_bytes, &devices, exp.seed, a)? {
                eprintln!(
                    "  {} {}: {} fragments; delete read {} and wrote {} sectors; {:.3} s on {device}{}{}\n  here: {}",
                    jobs[i].fs,
                    jobs[i].variant,
                    run.fragments,
                    run.sectors_read,
                    run.sectors_written,
                    run.seconds,
                    crate::steps::price::also_on(&devices, &run.seconds_on),
                    match &run.closed_loop {
                        Some(c) => format!(
                            " (replay); closed loop at K = {}: {:.3} s measured, {} requests served",
                            c.time_scale, c.measured_seconds, c.requests_served
                        ),
                        None => String::new(),
                    },
                    run.wall.describe()
                );
                runs.push(run);
            }
        }
    }
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    report(exp, a, &devices, &out_dir, scale, &runs, &h)
}

/// The runs of `spec`, in order (file system, then variant): each one's file system of
/// `fs_bytes` presenting `queue`, and who lays its file out (policy images are sparse files in
/// `workdir`).
pub fn jobs(
    spec: &LargeDeleteSpec,
    fs_bytes: u64,
    queue: &layoutlab_rig::QueueSpec,
    workdir: &Path,
) -> Result<Vec<Job>> {
    let mut jobs = Vec::new();
    for name in &spec.file_systems {
        let p = kernel_profile::by_name(name)?;
        for variant in &spec.variants {
            let opts = KernelFsOptions {
                kind: p.fs_kind()?,
                mkfs_args: p.mkfs_args.clone(),
                mount_options: p.mount_options.clone(),
                bytes: fs_bytes,
                backing: Backing::Zram,
                // Data pages are zeros (no memory); metadata is well under 2% of the device.
                resident_bytes: fs_bytes / 50 + 64 * MIB,
                queue: queue.clone(),
            };
            // A period layout always comes from its policy; today's kernel's files from the
            // engine unless `layout = "kernel"` (the fragmented one only where the engine's
            // policy is proven for it).
            let engine_plans = variant == "contiguous" || spec.engine_fragmented.contains(&p.name);
            let policy = match (
                spec.policy_images.get(&p.name),
                spec.engine_images.get(&p.name),
            ) {
                (Some(policy), _) => Some(("policy", policy.clone())),
                (None, Some(policy)) if spec.layout == "engine" && engine_plans => {
                    Some(("engine", policy.clone()))
                }
                _ => None,
            };
            let opts = match &policy {
                // A sparse image: its file data is never written, and the delete reads none.
                Some(_) => KernelFsOptions {
                    backing: Backing::SparseFile(workdir.to_path_buf()),
                    ..opts
                },
                None => opts,
            };
            jobs.push(Job {
                fs: p.name.clone(),
                variant: variant.clone(),
                opts,
                policy,
            });
        }
    }
    Ok(jobs)
}

/// One file system and variant to run: what to make, and who lays the file out.
#[derive(Clone, Debug)]
pub struct Job {
    /// Kernel profile name.
    pub fs: String,
    /// "contiguous" or "fragmented".
    pub variant: String,
    /// The file system to make.
    pub opts: KernelFsOptions,
    /// ("policy" or "engine", the policy) when a layoutlab policy plans the file and
    /// libext2fs writes it; `None` when today's kernel writes it.
    pub policy: Option<(&'static str, String)>,
}

/// The runs of `jobs` (indices, in order) grouped as they are made: with more than one lane,
/// each run of consecutive kernel-written files of [`AT_ONCE_PROVEN`] is one group, whose file
/// systems are made and written by `lanes` threads at once ([`lane_order`]), then each delete
/// traced alone; every other run alone (a libext2fs image is seconds of work).
pub fn batches(jobs: &[Job], lanes: usize) -> Vec<Vec<usize>> {
    let joins = |job: &Job| {
        lanes > 1
            && job.policy.is_none()
            && AT_ONCE_PROVEN.contains(&(job.fs.as_str(), job.variant.as_str()))
    };
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        match out.last_mut() {
            Some(last) if joins(job) && joins(&jobs[last[0]]) => last.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// The order in which a group's lanes take its runs: the fragmented pairs (two files, twice
/// the bytes) before the contiguous files, each kind in the experiment's order. The longest
/// first, so that the lanes end close together: the greedy rule for dividing jobs among
/// machines (Graham's LPT), with the bytes written standing in for the time.
pub fn lane_order(jobs: &[Job], group: &[usize]) -> Vec<usize> {
    let mut order = group.to_vec();
    order.sort_by_key(|&i| jobs[i].variant != "fragmented");
    order
}

/// For each of `spans` (start, end), the others that overlap it in time: the runs whose
/// writes ran beside it.
pub fn overlapping(spans: &[(f64, f64)]) -> Vec<Vec<usize>> {
    spans
        .iter()
        .enumerate()
        .map(|(i, a)| {
            (0..spans.len())
                .filter(|&j| j != i && spans[j].0 < a.1 && a.0 < spans[j].1)
                .collect()
        })
        .collect()
}

/// The kernel-written files (kernel profile, variant) shown to lie where they lie written
/// alone when written beside any other of them (tests/large_delete_write.rs, every pair at
/// 500 MB). Not btrfs's files: their tree blocks move with their transactions' timing (the
/// contiguous file's checksum-tree leaves, written beside ext4's fragmented pair, lay at other
/// addresses, 2026-11-27; the fragmented pair's did through the direct-I/O loop), so they are
/// written alone.
pub const AT_ONCE_PROVEN: [(&str, &str); 3] = [
    ("ext4", "fragmented"),
    ("xfs", "contiguous"),
    ("xfs", "fragmented"),
];

/// Makes the file systems of `group` and writes their files, `spec.write_lanes` at a time (one thread
/// each, taking the group's runs in [`lane_order`], under one hold of the rig lock; every file
/// system stays mounted until all are written), then traces each delete alone, in order: no
/// write runs beside a traced delete. Returns each job's index and run.
fn run_group(
    spec: &LargeDeleteSpec,
    jobs: &[Job],
    group: &[usize],
    file_bytes: u64,
    devices: &[String],
    seed: u64,
    a: &RunArgs,
) -> Result<Vec<(usize, DeleteRun)>> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let clock = std::time::Instant::now();
    let lock = layoutlab_rig::RigLock::acquire()?;
    let lock_wait = clock.elapsed().as_secs_f64();
    let names = |i: usize| format!("{} {}", jobs[i].fs, jobs[i].variant);
    let order = lane_order(jobs, group);
    let (next, failed) = (AtomicUsize::new(0), AtomicBool::new(false));
    // Each run's result and the span of its making and writing, seconds from `clock`.
    type Done = (usize, Result<Prepared>, (f64, f64));
    let (mut done, panicked): (Vec<Done>, bool) = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..spec.write_lanes.clamp(1, group.len()))
            .map(|_| {
                let (lock, order, next, failed) = (&lock, &order, &next, &failed);
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    // A lane stops taking runs once any has failed: the group is lost.
                    while !failed.load(Ordering::SeqCst) {
                        let Some(&i) = order.get(next.fetch_add(1, Ordering::SeqCst)) else {
                            break;
                        };
                        let start = clock.elapsed().as_secs_f64();
                        let p = prepare(spec, &jobs[i], file_bytes, seed, lock)
                            .with_context(|| names(i));
                        failed.fetch_or(p.is_err(), Ordering::SeqCst);
                        mine.push((i, p, (start, clock.elapsed().as_secs_f64())));
                    }
                    mine
                })
            })
            .collect();
        let (mut done, mut panicked) = (Vec::new(), false);
        for t in threads {
            match t.join() {
                Ok(mine) => done.extend(mine),
                Err(_) => panicked = true,
            }
        }
        (done, panicked)
    });
    drop(lock);
    if panicked {
        // What the other lanes made is dropped with `done`, so torn down.
        bail!("a writer thread panicked");
    }
    // In the experiment's order; the first failure is the group's error (every file system
    // made is dropped, so torn down, with the rest).
    done.sort_by_key(|d| d.0);
    let beside = overlapping(&done.iter().map(|d| d.2).collect::<Vec<_>>());
    let named: Vec<String> = done.iter().map(|d| names(d.0)).collect();
    let mut prepared = Vec::new();
    for (k, (i, p, _)) in done.into_iter().enumerate() {
        let mut p = p?;
        p.wall.lock_wait_seconds = lock_wait;
        if p.written_through.is_some() {
            p.written_beside = beside[k].iter().map(|&j| named[j].clone()).collect();
        }
        prepared.push((i, p));
    }
    let mut out = Vec::new();
    for (i, p) in prepared {
        let run = finish(p, &jobs[i], devices, a.closed_loop).with_context(|| names(i))?;
        out.push((i, run));
    }
    Ok(out)
}

/// Sizes of a run at `scale`: (file bytes, a whole number of write chunks; file-system bytes,
/// 1 MiB-aligned and at least what mkfs.xfs accepts, 300 MB).
pub fn sizes(spec: &LargeDeleteSpec, scale: f64) -> (u64, u64) {
    let chunk = spec.write_chunk_mib * MIB;
    let file_bytes = ((spec.file_gb * 1e9 * scale) as u64 / chunk).max(1) * chunk;
    let fs_bytes = (((file_bytes as f64 * spec.fs_per_file) as u64).max(512 * MIB)) / MIB * MIB;
    (file_bytes, fs_bytes)
}

/// A run's file system made and its file written, waiting for its traced delete.
struct Prepared {
    kfs: KernelFs,
    wall: RunWall,
    written_through: Option<&'static str>,
    write_memory_mib: Option<u64>,
    /// The runs whose writes ran at the same time as this one's.
    written_beside: Vec<String>,
}

/// Makes `job`'s file system under the held `lock` and writes its file: the kernel's writes of
/// zeros, or the policy's plan through libext2fs as a sparse image.
fn prepare(
    spec: &LargeDeleteSpec,
    job: &Job,
    file_bytes: u64,
    seed: u64,
    lock: &layoutlab_rig::RigLock,
) -> Result<Prepared> {
    let _image_stage = crate::stages::enter(crate::stages::IMAGE);
    let mut wall = RunWall::default();
    let opts = &job.opts;
    let clock = std::time::Instant::now();
    let mut kfs = match &job.policy {
        None => KernelFs::create_holding(opts, lock)?,
        Some((_, policy)) => {
            let population = write_population(&job.variant, opts.bytes, file_bytes, spec);
            let image = policy_image(policy, &population, seed)?;
            eprintln!(
                "  laid out by the {policy} policy ({} ops, {} mapping blocks), written through libext2fs",
                population.ops.len(),
                image.plan.mapping_blocks()
            );
            let opts = &KernelFsOptions {
                mount_options: crate::steps::image::mount_options(
                    &opts.mount_options,
                    &image.profile,
                ),
                ..opts.clone()
            };
            KernelFs::from_image_holding(opts, Some(lock), &mut |path: &Path| {
                crate::steps::image::write_plan(path, opts.bytes, &image.profile, &image.plan)
            })?
        }
    };
    wall.make_seconds = clock.elapsed().as_secs_f64();
    let clock = std::time::Instant::now();
    let written_through = match job.policy {
        Some(_) => None,
        None => {
            let path = write_file(&mut kfs, spec, &job.fs, &job.variant, file_bytes)?;
            wall.write_seconds = Some(clock.elapsed().as_secs_f64());
            Some(path)
        }
    };
    Ok(Prepared {
        kfs,
        wall,
        written_through,
        write_memory_mib: (written_through.is_some()
            && memory_bound_applies(spec, &job.fs, &job.variant))
        .then_some(spec.write_memory_mib),
        written_beside: Vec::new(),
    })
}

/// Remounts `prepared`'s file system cold, reads the file's layout, traces its delete and
/// prices the trace on every preset of `devices`.
fn finish(
    prepared: Prepared,
    job: &Job,
    devices: &[String],
    closed_loop: Option<f64>,
) -> Result<DeleteRun> {
    // The capture's own disk (the queue it presents, the emulated one); the others price it.
    let device = &devices[0];
    let Prepared {
        mut kfs,
        mut wall,
        written_through,
        write_memory_mib,
        written_beside,
    } = prepared;
    let opts = &job.opts;
    let image_stage = crate::stages::enter(crate::stages::IMAGE);
    let clock = std::time::Instant::now();
    kfs.remount()?;
    let file = kfs.mount_point().join("big");
    let fragments = fragments(&file)?;
    // What every block is, read before the delete with the file system's own tools.
    let (ext, other) = match opts.kind {
        FsKind::Ext2 | FsKind::Ext3 | FsKind::Ext4 => {
            (Some(ExtLayout::read(kfs.device().path(), "/big")?), None)
        }
        FsKind::Xfs => {
            use std::os::unix::fs::MetadataExt;
            let ino = std::fs::metadata(&file).context("stat big")?.ino();
            (
                None,
                Some(crate::fs_classes::xfs(kfs.device().path(), ino)?),
            )
        }
        FsKind::Btrfs => (None, Some(crate::fs_classes::btrfs(kfs.device().path())?)),
    };
    drop(image_stage);
    wall.layout_seconds = clock.elapsed().as_secs_f64();
    let clock = std::time::Instant::now();
    let capture_stage = crate::stages::enter(crate::stages::CAPTURE);
    if let Some(k) = closed_loop {
        // Closed loop: the delete runs on the emulated disk (the same backing, read-write),
        // so the kernel's timers (jbd2's commit, writeback's expiry) meet the model's time.
        // The layout above was read on the plain device.
        kfs.emulate(k, crate::support::emulator_model(device)?)?;
    }
    kfs.drop_caches()?;
    // The emulator's requests from here to the trace's end are the traced ones.
    let served_from = kfs.served_so_far();
    let t = std::time::Instant::now();
    let mut traced = kfs.trace(&TraceOptions::default())?;
    traced.phase("delete", |fs| {
        std::fs::remove_file(fs.mount_point().join("big"))
            .map_err(|e| layoutlab_rig::RigError::Unsupported(format!("rm: {e}")))
    })?;
    let seconds_here = t.elapsed().as_secs_f64();
    let captured = traced.finish()?;
    let served = match closed_loop {
        Some(k) => {
            let served_to = kfs.served_so_far();
            let served = kfs.stop_emulating()?;
            Some((k, served[served_from..served_to].to_vec()))
        }
        None => None,
    };
    drop(kfs);
    wall.capture_seconds = clock.elapsed().as_secs_f64();
    let phase = &captured.phases[0];
    let trace = captured.capture.trace;
    drop(capture_stage);
    let _pricing = crate::stages::enter(crate::stages::PRICE);
    let replays = crate::steps::price::on_presets(devices, &trace, 1.0)?;
    let seconds_on = crate::steps::price::seconds_on(devices, &replays);
    let replayed = &replays[0];
    let closed_loop = served.map(|(time_scale, served)| {
        crate::steps::check::ClosedLoopRun::of(time_scale, &served, 0.0)
    });
    Ok(DeleteRun {
        closed_loop,
        capture_queue: trace.queue.clone(),
        fs: job.fs.clone(),
        variant: job.variant.clone(),
        written_through: written_through.map(str::to_string),
        write_memory_mib,
        written_beside,
        layout: match &job.policy {
            Some((label, p)) => format!("{label} {p}"),
            None => "kernel".into(),
        },
        fragments,
        sectors_read: phase.sectors_read,
        sectors_written: phase.sectors_written,
        requests: trace.requests.len() as u64,
        seconds: replayed.wall_ns / 1e9,
        seconds_on,
        seconds_here,
        wall,
        min_sectors_read: ext.as_ref().map(ExtLayout::min_sectors_to_free),
        by_class: match (&ext, &other) {
            (Some(l), _) => Some(l.sectors_by_class(&trace)),
            (_, Some(c)) => Some(c.sectors_by_class(&trace)),
            _ => None,
        },
        request_class: match (&ext, &other) {
            (Some(l), _) => {
                let spb = (l.block_size_bytes / 512).max(1);
                Some(
                    trace
                        .requests
                        .iter()
                        .map(|r| l.class_of(r.sector / spb))
                        .collect(),
                )
            }
            (_, Some(c)) => Some(
                trace
                    .requests
                    .iter()
                    .map(|r| c.class_of(r.sector))
                    .collect(),
            ),
            _ => None,
        },
        start_s: replayed.requests.iter().map(|r| r.start_ns / 1e9).collect(),
        trace,
    })
}

/// Writes `variant`'s file(s) of `file_bytes` into the mounted `kfs` (made with kernel profile
/// `profile`) as `spec.write` says ([`direct_loop_applies`]); returns the path taken,
/// "direct-I/O loop" or "buffered loop".
pub fn write_file(
    kfs: &mut KernelFs,
    spec: &LargeDeleteSpec,
    profile: &str,
    variant: &str,
    file_bytes: u64,
) -> Result<&'static str> {
    let chunk = spec.write_chunk_mib * MIB;
    let turn = spec.fragment_chunk_mib * MIB;
    let memory = memory_bound_applies(spec, profile, variant).then(|| spec.write_memory_mib * MIB);
    let write = |root: &Path| -> Result<()> {
        let big = root.join("big");
        if variant == "contiguous" {
            write_zeros_within(&[&big], file_bytes, chunk, None, memory)
        } else {
            write_zeros_within(
                &[&big, &root.join("other")],
                file_bytes,
                chunk,
                Some(turn),
                memory,
            )
        }
    };
    if direct_loop_applies(spec, profile, variant) {
        kfs.on_direct_loop(write)??;
        Ok("direct-I/O loop")
    } else {
        write(kfs.mount_point())?;
        Ok("buffered loop")
    }
}

/// Whether a kernel-written `variant` file on kernel profile `profile`'s file system is written
/// through a direct-I/O loop: `spec.write` is "direct-loop" and the pair is in
/// [`DIRECT_LOOP_PROVEN`]. Keyed by profile, not by kind: `ext4` and `ext4-2007` are both ext4
/// and were not proven alike.
pub fn direct_loop_applies(spec: &LargeDeleteSpec, profile: &str, variant: &str) -> bool {
    spec.write == "direct-loop" && DIRECT_LOOP_PROVEN.contains(&(profile, variant))
}

/// The files (kernel profile, variant) whose layout through the direct-I/O loop was shown
/// equal to the buffered loop's (tests/large_delete_write.rs): btrfs's contiguous file (the
/// same FIEMAP, file extent and checksum items and tree-block addresses) and ext4's fragmented
/// file (the same FIEMAP of both writers' files: each 8 MiB turn is allocated at its
/// fdatasync). Not the others: XFS made on the traced loop's 512-byte sectors refuses to mount
/// on the direct loop's 4 KiB ones; ext4-2007's 500 MB file had 258 extents where the buffered
/// write made 260; ext4's contiguous file comes from the engine unless `layout = "kernel"`,
/// and was not compared; btrfs's fragmented pair, whose files and items were the same at
/// 500 MB, but whose delete at scale 1 priced 74.05-74.59 s in all three direct-loop runs
/// against 68.44-73.39 s in all six buffered ones (2026-11-28; its checksum-tree leaves lie
/// where the write's timing puts them).
pub const DIRECT_LOOP_PROVEN: [(&str, &str); 2] = [("btrfs", "contiguous"), ("ext4", "fragmented")];

/// Whether a kernel-written `variant` file on kernel profile `profile`'s file system is written
/// by a writer in a memory cgroup: `spec.write_memory_mib` is not 0 and the pair is in
/// [`MEMORY_BOUND_PROVEN`].
pub fn memory_bound_applies(spec: &LargeDeleteSpec, profile: &str, variant: &str) -> bool {
    spec.write_memory_mib > 0 && MEMORY_BOUND_PROVEN.contains(&(profile, variant))
}

/// The files (kernel profile, variant) whose layout with the writer in a memory cgroup was
/// shown equal to the unbounded writer's (tests/large_delete_write.rs, 500 MB through
/// 64 MiB): XFS's and ext4's fragmented pairs (each 8 MiB turn allocated at its fdatasync)
/// and ext4's contiguous file when the kernel writes it. Not the others (2026-11-28, one
/// run each): XFS's contiguous file, allocated at the closing fsync when unbounded, was
/// written back in pieces inside the cgroup and began 311 MB earlier; btrfs's contiguous file
/// came out as 19 extents against 1; ext4-2007's files, allocated at write(2), began with one
/// 64 KiB extent where the unbounded writer's first 64 KiB took two. btrfs's fragmented pair
/// had the same FIEMAP and items (2026-11-28, a worktree's runs; its checksum-tree leaves
/// moved, as much as between two unbounded writes) but is left out: at scale 1 the bound
/// was not faster (367.1 s against 339.7 s, docs/experiments/large-delete.md).
pub const MEMORY_BOUND_PROVEN: [(&str, &str); 3] = [
    ("xfs", "fragmented"),
    ("ext4", "fragmented"),
    ("ext4", "contiguous"),
];

/// What [`write_zeros`] does for `variant`, as a population on a file system of `fs_bytes`:
/// contiguous, `big` created and written whole (its 1 MiB writes are one sequential write to
/// an allocator that allocates at write time); fragmented, `big` and `other` created empty,
/// then taking turns of `fragment_chunk_mib` (`big` first, the last turn shorter if the size
/// asks), each file appended to by its writer, which keeps it open.
pub fn write_population(
    variant: &str,
    fs_bytes: u64,
    file_bytes: u64,
    spec: &LargeDeleteSpec,
) -> layoutlab_workload::Population {
    use layoutlab_workload::NsOp;
    let ops = if variant == "contiguous" {
        vec![NsOp::Create {
            path: "big".into(),
            bytes: file_bytes,
        }]
    } else {
        let turn = spec.fragment_chunk_mib * MIB;
        let files = ["big", "other"];
        let mut ops: Vec<NsOp> = files
            .iter()
            .map(|f| NsOp::Create {
                path: f.to_string(),
                bytes: 0,
            })
            .collect();
        let mut written = 0;
        while written < file_bytes {
            let this_turn = turn.min(file_bytes - written);
            ops.extend(files.iter().map(|f| NsOp::Append {
                path: f.to_string(),
                bytes: this_turn,
            }));
            written += this_turn;
        }
        ops
    };
    layoutlab_workload::Population {
        name: format!("large-delete {variant}"),
        fs_bytes,
        ops,
    }
}

/// Write `bytes` of zeros to each of `files`, `chunk` bytes per write(2). With `turn`, the
/// files take turns of `turn` bytes, each turn ended by fdatasync; the files are closed with
/// fsync.
pub fn write_zeros(files: &[&Path], bytes: u64, chunk: u64, turn: Option<u64>) -> Result<()> {
    write_zeros_within(files, bytes, chunk, turn, None)
}

/// [`write_zeros`], by a child process in a memory cgroup of `memory` bytes when given: the
/// same system calls in the same order, with the page cache they fill charged to the cgroup,
/// so that reclaim recycles the writer's own pages (`LargeDeleteSpec::write_memory_mib`).
pub fn write_zeros_within(
    files: &[&Path],
    bytes: u64,
    chunk: u64,
    turn: Option<u64>,
    memory: Option<u64>,
) -> Result<()> {
    use std::os::fd::AsRawFd;
    let len = chunk.min(turn.unwrap_or(chunk)) as usize;
    let page = layoutlab_rig::page_bytes();
    let mut buf = vec![0u8; len + page];
    let skip = buf.as_ptr().align_offset(page);
    let zeros = &mut buf[skip..skip + len];
    touch_pages(zeros);
    let zeros: &[u8] = zeros;
    let handles = files
        .iter()
        .map(|p| std::fs::File::create(p).with_context(|| format!("create {}", p.display())))
        .collect::<Result<Vec<_>>>()?;
    let fds: Vec<i32> = handles.iter().map(|f| f.as_raw_fd()).collect();
    let turn = turn.unwrap_or(bytes);
    let synced_turns = fds.len() > 1;
    // Only write(2), fdatasync(2) and fsync(2) on descriptors and a buffer made above: what a
    // forked child of a multi-threaded process may call. 0, or what failed (see below).
    let body = || -> i32 {
        let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let mut written = 0u64;
        while written < bytes {
            let this_turn = turn.min(bytes - written);
            for &fd in &fds {
                let mut left = this_turn;
                while left > 0 {
                    let n = left.min(zeros.len() as u64) as usize;
                    // SAFETY: `zeros` is valid for `n` bytes; `fd` is open for writing.
                    let w = unsafe { libc::write(fd, zeros.as_ptr().cast(), n) };
                    if w < 0 {
                        let e = errno();
                        if e == libc::EINTR {
                            continue;
                        }
                        return e.clamp(1, 127);
                    }
                    left -= w as u64;
                }
                // This turn is allocated before the other writer's next one.
                // SAFETY: a system call on an open descriptor.
                if synced_turns && unsafe { libc::fdatasync(fd) } != 0 {
                    return 128 + errno().clamp(1, 127);
                }
            }
            written += this_turn;
        }
        for &fd in &fds {
            // SAFETY: as above.
            if unsafe { libc::fsync(fd) } != 0 {
                return 128 + errno().clamp(1, 127);
            }
        }
        0
    };
    let code = match memory {
        None => body(),
        Some(limit) => {
            let cg = layoutlab_rig::MemCgroup::create(limit)
                .context("making the writer's memory cgroup (or --set write_memory_mib=0)")?;
            // SAFETY: `body` makes only the system calls named above, on descriptors and a
            // buffer made before the fork; `errno()` reads the thread's errno, no allocation.
            match unsafe { cg.run_in_child(&fds, body) } {
                Ok(code) => code,
                Err(e) if cg.oom_kills().unwrap_or(0) > 0 => bail!(
                    "the writer of {} was killed by its memory cgroup's OOM killer at {} MiB \
                     (a larger --set write_memory_mib, or 0 for none): {e}",
                    files[0].display(),
                    limit / MIB
                ),
                Err(e) => return Err(e).context("the writer's child in its memory cgroup"),
            }
        }
    };
    match code {
        0 => Ok(()),
        1..=127 => Err(std::io::Error::from_raw_os_error(code))
            .with_context(|| format!("write to {}", files[0].display())),
        _ => Err(std::io::Error::from_raw_os_error(code - 128))
            .with_context(|| format!("fdatasync/fsync of {}", files[0].display())),
    }
}

/// Gives every page of `buf` its own memory before it is written from, as dd's buffer has
/// been read into before each write. Why (2026-11-27, ext4-2007's contiguous 2 GB file,
/// tests/ext4_2007_kernel.rs): from a fresh `vec!` (zeroed pages mapped lazily, 16 bytes past
/// a page boundary) the kernel's first 1 MiB write(2) under `nodelalloc` came out as 272
/// extents, one block each in two interleaved runs; touched but not aligned, as 25 extents
/// in large-folio-sized pieces; aligned and touched, as dd's own 19, block for block. Only
/// the first write differed (from logical block 256 on the three were the same windows), and
/// the file systems that allocate at writeback (delalloc ext4, XFS, btrfs) do not choose
/// blocks at write(2) at all.
fn touch_pages(buf: &mut [u8]) {
    for i in (0..buf.len()).step_by(layoutlab_rig::page_bytes()) {
        // Volatile: a write of 0 into zeroed memory must not be optimised away.
        // SAFETY: `i` is in bounds, so the pointer is valid for a one-byte write.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 0) };
    }
}

/// Physically discontiguous extents of `file`, as `filefrag` counts them: the extents FIEMAP
/// reports (read with `filefrag -v`), where one that starts right after the previous one ends
/// does not count again.
pub fn fragments(file: &Path) -> Result<u64> {
    let out = std::process::Command::new("filefrag")
        .arg("-v")
        .arg(file)
        .output()
        .context("running filefrag (Debian package e2fsprogs)")?;
    if !out.status.success() {
        bail!(
            "filefrag -v {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    count_fragments(&String::from_utf8_lossy(&out.stdout))
}

/// Counts the physically discontiguous runs in `filefrag -v` output.
pub fn count_fragments(text: &str) -> Result<u64> {
    let mut count = 0u64;
    let mut next_physical: Option<u64> = None;
    for line in text.lines() {
        // "   0:        0..    4095:        297..      4392:   4096:   ..."
        let fields: Vec<&str> = line.split(':').map(str::trim).collect();
        if fields.len() < 4 || fields[0].parse::<u64>().is_err() {
            continue;
        }
        let Some((start, end)) = fields[2].split_once("..") else {
            bail!("filefrag line without a physical range: {line}");
        };
        let start: u64 = start.trim().parse().context("filefrag physical start")?;
        let end: u64 = end.trim().parse().context("filefrag physical end")?;
        if next_physical != Some(start) {
            count += 1;
        }
        next_physical = Some(end + 1);
    }
    Ok(count)
}

/// JSON of `--json`.
#[derive(Serialize)]
struct LargeDeleteJson<'a> {
    experiment: &'a str,
    scale: f64,
    /// The preset of `seconds` (the first of `devices`).
    device: &'a str,
    /// Every preset the deletes were priced on (`seconds_on`), the capture's first.
    devices: &'a [String],
    runs: &'a [DeleteRun],
}

fn report(
    exp: &Experiment,
    a: &RunArgs,
    devices: &[String],
    out_dir: &Path,
    scale: f64,
    runs: &[DeleteRun],
    h: &Human,
) -> Result<()> {
    let device = devices[0].as_str();
    let mut t = Table::new(
        &format!(
            "{} at scale {scale}: rm FILE && sync, predicted on {device}",
            exp.name
        ),
        vec![
            Column::text("file system"),
            Column::text("variant"),
            Column::text("laid out by"),
            Column::number("fragments", None),
            Column::number("elapsed", Some("s")),
            Column::number("sectors read", None),
            Column::number("sectors written", None),
            Column::number("min read", None),
            Column::number("requests", None),
            Column::number("here", Some("s")),
        ],
    );
    for r in runs {
        t.push_row(vec![
            Cell::text(&r.fs),
            Cell::text(&r.variant),
            Cell::text(&r.layout),
            Cell::num(r.fragments as f64, 0),
            Cell::num(r.seconds, 3),
            Cell::num(r.sectors_read as f64, 0),
            Cell::num(r.sectors_written as f64, 0),
            r.min_sectors_read
                .map(|m| Cell::num(m as f64, 0))
                .unwrap_or(Cell::Empty),
            Cell::num(r.requests as f64, 0),
            Cell::num(r.seconds_here, 3),
        ])?;
    }
    h.say(&format!("{}\n", t.to_terminal(None)?));
    let per_device = crate::support::per_device_table(
        &format!(
            "{} at scale {scale}: each delete's trace priced on every preset",
            exp.name
        ),
        &["file system", "variant"],
        devices,
        runs.iter()
            .map(|r| (vec![r.fs.clone(), r.variant.clone()], &r.seconds_on)),
    )?;
    if let Some(p) = &per_device {
        h.say(&format!("{}\n", p.to_terminal(None)?));
    }
    let classes: std::collections::BTreeSet<&String> = runs
        .iter()
        .filter_map(|r| r.by_class.as_ref())
        .flat_map(|m| m.keys())
        .collect();
    let mut columns = vec![Column::text("file system"), Column::text("variant")];
    columns.extend(classes.iter().map(|c| Column::number(c, None)));
    let mut by_class = Table::new(
        "where the delete's sectors went (read + written, by what the block was before the delete)",
        columns,
    );
    for r in runs {
        if let Some(m) = &r.by_class {
            let mut row = vec![Cell::text(&r.fs), Cell::text(&r.variant)];
            row.extend(
                classes
                    .iter()
                    .map(|c| Cell::num(m.get(*c).copied().unwrap_or(0) as f64, 0)),
            );
            by_class.push_row(row)?;
        }
    }
    if !classes.is_empty() {
        h.say(&format!("{}\n", by_class.to_terminal(None)?));
    }
    h.say(
        "note: a file 'laid out by policy P' was planned by layoutlab's P and written through \
           libext2fs, then mounted and deleted by today's kernel (ext3 of 2007: today's ext3 is \
           the ext4 driver in ext3 mode, whose allocator is not 2007's); for the fragmented \
           variant P is given the same two writers taking turns (appends to open files). \
           'engine P' files are P's plan of what today's kernel writes, block for block \
           (crates/experiments/tests/ext4_engine.rs, ext4_2007_engine.rs; `--set layout=kernel` \
           has the kernel write them), written through libext2fs as sparse images. \
           'kernel' files were written by today's kernel, through a loop device with direct I/O \
           where the JSON's written_through says so (the same layout, \
           crates/experiments/tests/large_delete_write.rs; `--set write=buffered` writes through \
           the traced loop device), by a writer whose page cache is bounded by a memory cgroup \
           where the JSON's write_memory_mib says so (the same layout, the same test; `--set \
           write_memory_mib=0` unbounded); the delete is always traced on the buffered loop \
           device. ext4-2007 is extents without \
           flex_bg/uninit_bg on today's mballoc. Sector classes come from libext2fs (ext), xfs_db \
           (XFS) and btrfs inspect-internal (btrfs); XFS btree blocks below a root and what the \
           tools do not describe count as 'other'. The minimum read is computed for ext only.\n",
    );
    if !exp.published.source.is_empty() {
        h.say(&format!("published: {}\n", exp.published.source));
    }
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    // Every delete's trace, so each can be priced again alone (`layoutlab trace replay`).
    crate::output::save_traces(
        out_dir,
        runs.iter()
            .map(|r| (format!("delete-{}-{}", r.fs, r.variant), &r.trace)),
    )?;
    let series: Vec<OffsetSeries> = runs
        .iter()
        .map(|r| OffsetSeries {
            name: format!("{} {}", r.fs, r.variant),
            points: crate::support::io_points(&r.trace, |i| r.start_s[i]),
        })
        .collect();
    let svg = offset_plot(
        &format!("{}: rm + sync on {device} (modelled time)", exp.name),
        &series,
    );
    let mut html = HtmlBundle::new(&exp.title);
    html.table(t.clone());
    if let Some(p) = per_device {
        html.table(p);
    }
    html.table(by_class.clone());
    html.figure(
        &format!(
            "Where on the disk each delete (rm + sync) wrote and read, against modelled time on {device}, one colour per file system."
        ),
        "delete-offset.svg",
        svg,
    );
    // One plot per run, a colour per class of block (ext runs; the others in one colour).
    for r in runs {
        let series = crate::support::io_series_by_class(
            &r.trace,
            |i| r.start_s[i],
            |i| r.request_class.as_ref().map_or("not attributed", |c| c[i]),
        );
        let svg = offset_plot(
            &format!(
                "{} {} (laid out by {}): rm + sync on {device}, by class of block",
                r.fs, r.variant, r.layout
            ),
            &series,
        );
        html.figure(
            &format!(
                "rm + sync of the large file on {} ({}, laid out by {}): each request's disk offset against modelled time, coloured by the kind of block it touched.",
                r.fs, r.variant, r.layout
            ),
            &format!("delete-{}-{}.svg", r.fs, r.variant),
            svg,
        );
    }
    html.save(out_dir)?;
    eprintln!(
        "report: {}/{{report.md,index.html,delete-offset.svg,delete-FS-VARIANT.svg,traces/}}",
        out_dir.display()
    );
    if let Some(path) = &a.json {
        write_json(
            path,
            &LargeDeleteJson {
                experiment: &exp.name,
                scale,
                device,
                devices,
                runs,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_workload::NsOp;

    fn shipped_spec() -> (crate::Experiment, LargeDeleteSpec) {
        let exp = crate::experiment::load("large-delete").unwrap();
        let spec: LargeDeleteSpec = exp.params().unwrap();
        (exp, spec)
    }

    /// The fragmented population is write_zeros' two writers: both files created first, then
    /// turns of fragment_chunk_mib, big before other, the last turn what is left.
    #[test]
    fn the_policy_gets_the_writes_the_kernel_gets() {
        let (_, spec) = shipped_spec();
        let turn = spec.fragment_chunk_mib * MIB;
        let file = 5 * turn + 3 * MIB;
        let pop = write_population("fragmented", 1 << 30, file, &spec);
        pop.check_tree().unwrap();
        assert_eq!(pop.ops.len(), 2 + 2 * 6);
        assert_eq!(
            pop.ops[..2],
            [
                NsOp::Create {
                    path: "big".into(),
                    bytes: 0
                },
                NsOp::Create {
                    path: "other".into(),
                    bytes: 0
                }
            ]
        );
        for (k, op) in pop.ops[2..].iter().enumerate() {
            let bytes = if k / 2 < 5 { turn } else { 3 * MIB };
            let path = ["big", "other"][k % 2];
            assert_eq!(
                op,
                &NsOp::Append {
                    path: path.into(),
                    bytes
                }
            );
        }
        assert_eq!(pop.file_sizes(), vec![("big", file), ("other", file)]);
        let pop = write_population("contiguous", 1 << 30, file, &spec);
        assert_eq!(pop.file_sizes(), vec![("big", file)]);
        assert_eq!(pop.ops.len(), 1);
    }

    /// At the CLI test's scale (a 200 MB file) and the default one, with the shipped seed:
    /// ext3-2007's answer to the two writers is `big` of the same size, broken by the other
    /// file's blocks about once a turn on top of its indirect blocks.
    #[test]
    fn ext3_2007_fragments_the_interleaved_file() {
        let (exp, spec) = shipped_spec();
        for scale in [0.002, spec.default_scale] {
            let chunk = spec.write_chunk_mib * MIB;
            let file = ((spec.file_gb * 1e9 * scale) as u64 / chunk).max(1) * chunk;
            let fs = ((file as f64 * spec.fs_per_file) as u64).max(512 * MIB) / MIB * MIB;
            let frags = |variant: &str| {
                let pop = write_population(variant, fs, file, &spec);
                let plan = policy_image("ext3-2007", &pop, exp.seed).unwrap().plan;
                let big = plan.inodes.iter().find(|i| i.name == "big").unwrap();
                assert_eq!(big.size_bytes, file);
                big.fragments()
            };
            let (alone, interleaved) = (frags("contiguous"), frags("fragmented"));
            eprintln!("scale {scale}: {alone} fragments alone, {interleaved} interleaved");
            // Alone, ext3's fragments are its inline indirect blocks (one per 4 MiB); the
            // other writer's blocks break the file at least once more every other turn.
            let turns = file.div_ceil(spec.fragment_chunk_mib * MIB);
            assert!(
                interleaved >= alone + turns / 2,
                "scale {scale}: {alone} alone, {interleaved} interleaved in {turns} turns"
            );
        }
    }

    /// The shipped runs with two lanes or more: the libext2fs images one at a time, the
    /// proven kernel-written files (ext4's fragmented pair and XFS's two files, consecutive in
    /// the experiment's order) one group, fragmented pairs first; btrfs's alone. One lane is
    /// the old order, one run at a time.
    #[test]
    fn kernel_written_files_are_grouped_by_lanes() {
        let (_, spec) = shipped_spec();
        let queue = layoutlab_rig::QueueSpec::default();
        let jobs = jobs(&spec, 1 << 30, &queue, Path::new("/tmp")).unwrap();
        let names: Vec<String> = jobs
            .iter()
            .map(|j| format!("{} {}", j.fs, j.variant))
            .collect();
        let grouped = |lanes| -> Vec<Vec<&str>> {
            batches(&jobs, lanes)
                .iter()
                .map(|g| g.iter().map(|&i| names[i].as_str()).collect())
                .collect()
        };
        assert_eq!(spec.write_lanes, 2);
        let expected = [
            vec!["ext3 contiguous"],
            vec!["ext3 fragmented"],
            vec!["ext4-2007 contiguous"],
            vec!["ext4-2007 fragmented"],
            vec!["ext4 contiguous"],
            vec!["ext4 fragmented", "xfs contiguous", "xfs fragmented"],
            vec!["btrfs contiguous"],
            vec!["btrfs fragmented"],
        ];
        assert_eq!(grouped(2), expected);
        assert_eq!(grouped(5), expected);
        assert!(grouped(1).iter().all(|g| g.len() == 1));
        assert_eq!(grouped(1).len(), 10);
        let group = &batches(&jobs, 2)[5];
        let order: Vec<&str> = lane_order(&jobs, group)
            .iter()
            .map(|&i| names[i].as_str())
            .collect();
        assert_eq!(
            order,
            ["ext4 fragmented", "xfs fragmented", "xfs contiguous"]
        );
    }

    /// Two spans are beside each other when they share a moment; touching ends do not.
    #[test]
    fn runs_are_beside_those_they_overlap() {
        let spans = [(0.0, 80.0), (0.0, 100.0), (80.0, 130.0), (200.0, 210.0)];
        assert_eq!(overlapping(&spans), [vec![1], vec![0, 2], vec![1], vec![]]);
        assert_eq!(overlapping(&[]), Vec::<Vec<usize>>::new());
    }

    #[test]
    fn fragments_count_physical_discontinuities_as_filefrag() {
        let text = "Filesystem type is: ef53
File size of m/f is 20971520 (5120 blocks of 4096 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0..    4095:        297..      4392:   4096:
   1:     4096..    8191:       4393..      8488:   4096:
   2:     8192..    9215:      10000..     11023:   1024:       8489: last,eof
m/f: 2 extents found
";
        // Extents 0 and 1 are physically adjacent (one run), extent 2 is not.
        assert_eq!(count_fragments(text).unwrap(), 2);
        assert_eq!(count_fragments("m/f: 0 extents found\n").unwrap(), 0);
    }
}
