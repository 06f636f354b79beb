//! The "inode-readahead" operation: how far ext4 should read ahead in the inode table.
//!
//! ext4 reads `inode_readahead_blks` blocks of the inode table around the block that holds an
//! inode it has to read (fs/ext4/inode.c `__ext4_get_inode_loc()`: the aligned window of that
//! many blocks, cut at the group's last used inode when the group descriptors carry
//! `bg_itable_unused`). For each layout policy: the tree is planned, written through libext2fs
//! (its directories then indexed by `e2fsck -fyD`, as the kernel indexes a directory that
//! outgrows a block) and mounted by the real kernel on a loop device (read-only, so a walk
//! writes nothing); for
//! each setting of the mounted file system's sysfs tunable and each order, caches are dropped
//! and every entry is `lstat`ed — in readdir order (as `find` or `ls -lR`) or in a seeded
//! random order of the same paths — under block tracing; each trace is replayed on every
//! device preset. Per run: predicted seconds, MB read, requests, and the inode-table blocks
//! read that hold no inode of the tree (read-ahead no stat needed), attributed from the layout.
//!
//! Beside it, the curve Chris Mason's argument implies: a random read of the window's size on
//! the same preset (the fio-like job of `layoutlab device fio`), divided by the inodes the
//! window brings in.

use crate::output::{write_json, Human};
use crate::{Experiment, Operation, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_device::job::{run_job, JobSpec, Rw};
use layoutlab_layout::{policy_by_name, Geometry, MkfsProfile, Plan, PolicyParams};
use layoutlab_report::plot::sweep::{SweepChart, SweepSeries};
use layoutlab_report::{Cell, Column, HtmlBundle, Table};
use layoutlab_rig::{Backing, FsKind, KernelFs, KernelFsOptions, TraceOptions};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The "inode-readahead" operation (registered in [`crate::OPERATIONS`]).
pub struct InodeReadahead;

/// Parameters of the "inode-readahead" operation: an experiment's `[inode-readahead]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InodeReadaheadSpec {
    /// Scale used when `--scale` is not given: the fraction of the tree kept
    /// ([`layoutlab_workload::population_shrunk`]: a tree population keeps this fraction of
    /// every count, its data and its file system, the same shape at fewer files; 1.0 = the
    /// tree as published). A walk's time grows with the entries it stats, so the default is
    /// a smaller tree (issue 32: a default run within two minutes) and `--scale 1` the full one.
    pub default_scale: f64,
    /// Population walked (`--tree` picks another, or a population .toml).
    pub tree: String,
    /// Layout policies, each its own image.
    pub policies: Vec<String>,
    /// mkfs profile of every policy not in `mkfs_profiles`.
    pub mkfs_profile: String,
    /// A policy's own mkfs profile, where it differs.
    #[serde(default)]
    pub mkfs_profiles: BTreeMap<String, String>,
    /// Values of `inode_readahead_blks` swept (`--settings` picks others).
    pub settings: Vec<u64>,
    /// Walk orders: "readdir", "random".
    pub orders: Vec<String>,
    /// Device presets the traces are priced on (`--device A,B` picks others).
    pub devices: Vec<String>,
    /// Block-device read-ahead of the loop device, KiB (the OS's, for the era modelled).
    pub os_read_ahead_kb: u32,
}

const ORDERS: [&str; 2] = ["readdir", "random"];

impl InodeReadaheadSpec {
    fn mkfs_profile_of(&self, policy: &str) -> &str {
        crate::experiment::mkfs_profile_for(policy, &self.mkfs_profile, &self.mkfs_profiles)
    }
}

impl Operation for InodeReadahead {
    fn name(&self) -> &'static str {
        "inode-readahead"
    }

    fn options(&self) -> &'static [crate::OpOption] {
        &[
            crate::OpOption {
                key: "tree",
                help: "the tree walked: a population name or a population .toml file",
                flag: Some("tree"),
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "settings",
                help: "inode_readahead_blks values swept, a list (e.g. 0,8,32 for a quicker run)",
                flag: Some("settings"),
                flag_aliases: &[],
            },
        ]
    }

    /// It mounts ext4 images on loop devices and traces them.
    fn needs_root(&self, _exp: &Experiment) -> bool {
        true
    }

    /// `--closed-loop` walks each image on the emulated device of the one preset given
    /// (`run_inode_readahead`): a fresh emulated disk per walk, paced by the walk's own CPU.
    fn supports_closed_loop(&self) -> bool {
        true
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let s: InodeReadaheadSpec = exp.params()?;
        if s.policies.is_empty() || s.settings.is_empty() || s.orders.is_empty() {
            bail!("policies, settings and orders must not be empty");
        }
        for o in &s.orders {
            if !ORDERS.contains(&o.as_str()) {
                bail!("unknown order '{o}'; valid: {}", ORDERS.join(", "));
            }
        }
        for p in &s.policies {
            policy_by_name(p, &PolicyParams::new())?;
            MkfsProfile::by_name(s.mkfs_profile_of(p))?;
        }
        crate::experiment::check_mkfs_profiles(&s.policies, &s.mkfs_profiles)?;
        Ok(())
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run_inode_readahead(exp, args)
    }
}

/// One walk: a policy's image, an order, a setting; priced on one device.
#[derive(Clone, Debug, Serialize)]
pub struct WalkRun {
    /// Layout policy of the image.
    pub policy: String,
    /// Device preset.
    pub device: String,
    /// "readdir" or "random".
    pub order: String,
    /// The `inode_readahead_blks` setting.
    pub readahead_blks: u64,
    /// Predicted seconds of the walk on the device.
    pub seconds: f64,
    /// Of that, the seconds the device was busy (the rest is the walk's CPU time, measured
    /// here, which the setting does not change).
    pub io_seconds: f64,
    /// MB (10^6 bytes) read.
    pub mb_read: f64,
    /// Read requests.
    pub requests: u64,
    /// Inode-table blocks read that hold no inode of the tree (read ahead for nothing).
    pub wasted_blocks: u64,
    /// Distinct inode-table blocks read.
    pub inode_table_blocks: u64,
    /// Seconds Mason's argument implies: inodes of the tree × (a random read of the window's
    /// size on this device ÷ inodes the window holds).
    pub fio_implied_seconds: f64,
    /// The queue the traced loop device presented (docs/rig.md), when the trace came from
    /// a capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_queue: Option<layoutlab_trace::DeviceQueue>,
    /// With --closed-loop: the walk's time measured on the emulated device of this preset
    /// (the model's time from its first request to its last completion, the walk's CPU
    /// between requests placing each on the model's clock). `seconds` stays the open-loop
    /// replay of the same stream, beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<crate::steps::check::ClosedLoopRun>,
}

/// The sweet spot of one device and order (and policy): the fastest setting.
#[derive(Clone, Debug, Serialize)]
pub struct SweetSpot {
    /// Layout policy of the image.
    pub policy: String,
    /// Device preset.
    pub device: String,
    /// Walk order.
    pub order: String,
    /// The fastest setting.
    pub readahead_blks: u64,
    /// The smallest setting within 5% of the fastest: where the curve has flattened.
    pub within_5_percent_blks: u64,
}

#[derive(Serialize)]
struct ReadaheadJson<'a> {
    experiment: &'a str,
    tree: &'a str,
    scale: f64,
    /// Entries stat'ed per walk (every name: files, directories, symlinks, nodes, links).
    entries: u64,
    runs: &'a [WalkRun],
    sweet_spot: &'a [SweetSpot],
}

const MB: f64 = 1e6;

fn run_inode_readahead(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let spec: InodeReadaheadSpec = exp.params()?;
    let h = Human::new(a.json.as_deref());
    let scale = a.run_scale(exp)?;
    // Resolve every name before any work: a typo fails at once and makes nothing.
    let tree = spec.tree.clone();
    // At scale 1 this is the tree itself (population_by_name); below it, the same shape at
    // fewer entries (a population of sized files, bench5, shrinks its sizes instead).
    let population = crate::stages::timed(crate::stages::PLAN, || {
        layoutlab_workload::population_shrunk(&tree, scale)
            .with_context(|| format!("the tree of experiment '{}' at scale {scale}", exp.name))
    })?;
    let devices = crate::support::device_list(a.device.as_deref(), &spec.devices)?;
    // One capture is priced on every device: it presents the first one's queue (docs/rig.md).
    let first = devices.first().context("no device presets to price on")?;
    if let Some(k) = a.closed_loop {
        crate::support::check_closed_loop_devices(&devices, k)?;
    }
    let queue = crate::support::capture_queue(first, Some(spec.os_read_ahead_kb), None)?;
    let settings = spec.settings.clone();
    let mut formats = Vec::new();
    for p in &spec.policies {
        let (profile, geometry) =
            crate::steps::plan::format(spec.mkfs_profile_of(p), population.fs_bytes)?;
        formats.push((p.clone(), profile, geometry));
    }
    layoutlab_rig::require_root("mounting ext4 images on loop devices and tracing them")?;
    crate::support::warn_if_leftovers();
    let (workdir, memory) = crate::support::work_dir(a.workdir.as_deref())?;
    eprintln!(
        "{} — {tree} at scale {scale}: {} policies × {} orders × {} settings, priced on {}",
        exp.title,
        spec.policies.len(),
        spec.orders.len(),
        settings.len(),
        devices.join(", ")
    );
    let inodes = population.ops.len() as u64;
    // Policies walked at once (each its own image, loop device, mount and traced walk): the
    // walks of one setting start together once every image's caches are dropped, so each is
    // as cold as alone; `--jobs 1` walks one image at a time.
    let jobs = a
        .jobs
        .map(|j| j as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, formats.len());
    // One lock for the run, so that it may hold `jobs` file systems at once.
    // Its wait for other runs counts as image time, as KernelFs's own wait does.
    let lock = crate::stages::timed(crate::stages::IMAGE, layoutlab_rig::RigLock::acquire)?;
    let mut per_policy: Vec<Vec<WalkRun>> = Vec::new();
    for group in formats.chunks(jobs) {
        let mut mounted = Vec::new();
        for (policy, profile, geometry) in group {
            mounted.push(mount_policy(
                exp,
                &population,
                &workdir,
                &queue,
                &lock,
                policy,
                profile,
                geometry,
                a.closed_loop.is_some(),
            )?);
        }
        let mut results: Vec<Vec<WalkRun>> = mounted.iter().map(|_| Vec::new()).collect();
        for order in &spec.orders {
            for &k in &settings {
                let capture_stage = crate::stages::enter(crate::stages::CAPTURE);
                if let Some(time_scale) = a.closed_loop {
                    // A fresh emulated disk per walk, as the replay prices each walk on a
                    // fresh model: a drive cache warm from the previous walk (the default
                    // tree reads about 10 MB a walk) would serve this one.
                    for m in &mut mounted {
                        m.kfs
                            .emulate(time_scale, crate::support::emulator_model(first)?)?;
                        // The tunable belongs to the mount, now on the emulated device.
                        m.sysfs = readahead_tunable(&m.kfs)?;
                    }
                }
                for m in &mounted {
                    set_tunable(&m.sysfs, k)?;
                }
                // Every image cold before any walk starts (drop_caches is machine-wide).
                for m in &mounted {
                    m.kfs.drop_caches()?;
                }
                let walked: Vec<Result<Walked>> = std::thread::scope(|scope| {
                    let handles: Vec<_> = mounted
                        .iter_mut()
                        .map(|m| scope.spawn(move || traced_walk(m, order)))
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().expect("a walk thread panicked"))
                        .collect()
                });
                let mut closed: Vec<Option<crate::steps::check::ClosedLoopRun>> = Vec::new();
                let mut traces = Vec::new();
                for (m, walked) in mounted.iter_mut().zip(walked) {
                    let walked = walked?;
                    closed.push(match (a.closed_loop, walked.served) {
                        (Some(time_scale), Some((from, to))) => {
                            let served = m.kfs.stop_emulating()?;
                            Some(crate::steps::check::ClosedLoopRun::of(
                                time_scale,
                                &served[from..to],
                                0.0,
                            ))
                        }
                        _ => None,
                    });
                    traces.push((walked.trace, walked.seconds_here));
                }
                drop(capture_stage);
                for (((m, (trace, seconds_here)), closed_loop), runs) in mounted
                    .iter()
                    .zip(traces)
                    .zip(closed)
                    .zip(results.iter_mut())
                {
                    let _pricing = crate::stages::enter(crate::stages::PRICE);
                    let policy = &m.policy;
                    let (wasted, itable_blocks) = m.itable.read_stats(&trace);
                    let reads: Vec<_> = trace
                        .requests
                        .iter()
                        .filter(|r| r.op == layoutlab_trace::Op::Read)
                        .collect();
                    let mb_read = reads.iter().map(|r| r.bytes() as f64).sum::<f64>() / MB;
                    let requests = reads.len() as u64;
                    eprintln!(
                        "  [{policy}] {order} readahead {k}: {requests} requests, {mb_read:.1} MB, {wasted} blocks wasted ({seconds_here:.1} s here){}",
                        match &closed_loop {
                            Some(c) => format!(
                                "; closed loop at K = {}: {:.3} s measured, {} requests served, {} paced",
                                c.time_scale, c.measured_seconds, c.requests_served, c.requests_paced
                            ),
                            None => String::new(),
                        }
                    );
                    let replays = crate::steps::price::on_presets(&devices, &trace, 1.0)?;
                    for (d, replayed) in devices.iter().zip(replays) {
                        runs.push(WalkRun {
                            closed_loop: closed_loop.clone(),
                            capture_queue: trace.queue.clone(),
                            policy: policy.clone(),
                            device: d.clone(),
                            order: order.clone(),
                            readahead_blks: k,
                            seconds: replayed.wall_ns / 1e9,
                            io_seconds: replayed.io_busy_ns / 1e9,
                            mb_read,
                            requests,
                            wasted_blocks: wasted,
                            inode_table_blocks: itable_blocks,
                            fio_implied_seconds: 0.0,
                        });
                    }
                }
            }
        }
        drop(mounted);
        per_policy.extend(results);
    }
    drop(lock);
    // In the experiment file's order of policies, as walked one at a time.
    let mut runs: Vec<WalkRun> = per_policy.into_iter().flatten().collect();
    drop(memory);
    // Mason's curve: a random read of the window's size, per inode it brings in.
    let block = formats[0].2.block_size_bytes as u64;
    let per_block = u64::from(formats[0].2.inodes_per_group) / formats[0].2.inode_table_blocks;
    let fs_bytes = population.fs_bytes;
    let mut implied: BTreeMap<(String, u64), f64> = BTreeMap::new();
    let pricing = crate::stages::enter(crate::stages::PRICE);
    for d in &devices {
        for &k in &settings {
            let blocks = k.max(1);
            let mut dev = crate::support::load_device(d)?;
            let job = JobSpec {
                rw: Rw::RandRead,
                bs_bytes: blocks * block,
                span_bytes: fs_bytes / (blocks * block) * (blocks * block),
                number: Some(2000),
                seed: exp.seed,
                ..JobSpec::default()
            };
            let r = run_job(dev.as_mut(), &job)?;
            implied.insert(
                (d.clone(), k),
                inodes as f64 * r.mean_ms / 1e3 / (blocks * per_block) as f64,
            );
        }
    }
    drop(pricing);
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    for r in &mut runs {
        r.fio_implied_seconds = implied[&(r.device.clone(), r.readahead_blks)];
    }
    let mut sweet = Vec::new();
    for (policy, _, _) in &formats {
        for d in &devices {
            for order in &spec.orders {
                let curve: Vec<&WalkRun> = runs
                    .iter()
                    .filter(|r| &r.policy == policy && &r.device == d && &r.order == order)
                    .collect();
                if let Some(best) = curve.iter().min_by(|x, y| x.seconds.total_cmp(&y.seconds)) {
                    let knee = curve
                        .iter()
                        .filter(|r| r.seconds <= best.seconds * 1.05)
                        .map(|r| r.readahead_blks)
                        .min()
                        .unwrap_or(best.readahead_blks);
                    sweet.push(SweetSpot {
                        policy: policy.clone(),
                        device: d.clone(),
                        order: order.clone(),
                        readahead_blks: best.readahead_blks,
                        within_5_percent_blks: knee,
                    });
                }
            }
        }
    }
    report(
        exp,
        a,
        (&tree, scale, inodes),
        (&settings, &devices),
        &runs,
        &sweet,
        &h,
    )
}

/// Indexes the image's directories as the kernel would have (htree, `dir_index`): libext2fs
/// writes linear directories, whose lookups the kernel answers by scanning every block, so a
/// random-order walk would cost minutes of CPU that a 2008 kernel, which indexed a directory
/// once it outgrew one block, did not spend. `e2fsck -fyD` (the real tool) rebuilds every
/// directory of more than one block as an htree in its own blocks and sorts the others; readdir
/// then returns hash order, as on the kernel's own ext4.
fn index_directories(image: &Path) -> Result<()> {
    let out = std::process::Command::new("e2fsck")
        .args(["-fyD"])
        .arg(image)
        .output()
        .context("running e2fsck -fyD (Debian package e2fsprogs)")?;
    // 0: nothing to do; 1: directories optimised ("file system was modified")
    match out.status.code() {
        Some(0) | Some(1) => Ok(()),
        _ => bail!(
            "e2fsck -fyD {} exited {:?}: {}",
            image.display(),
            out.status.code(),
            String::from_utf8_lossy(&out.stdout)
        ),
    }
}

/// A policy's image, mounted read-only and ready to walk.
struct Mounted {
    policy: String,
    itable: InodeTables,
    kfs: KernelFs,
    sysfs: PathBuf,
    random_paths: Vec<PathBuf>,
}

/// Plans `policy`'s image of the tree, writes it through libext2fs, indexes its directories,
/// mounts it read-only (under the run's `lock`) and lists its paths with one untraced walk.
#[allow(clippy::too_many_arguments)]
fn mount_policy(
    exp: &Experiment,
    population: &layoutlab_workload::Population,
    workdir: &Path,
    queue: &layoutlab_rig::QueueSpec,
    lock: &layoutlab_rig::RigLock,
    policy: &str,
    profile: &MkfsProfile,
    geometry: &Geometry,
    closed_loop: bool,
) -> Result<Mounted> {
    let t = std::time::Instant::now();
    let planning = crate::stages::enter(crate::stages::PLAN);
    let plan = crate::steps::plan::checked(
        policy_by_name(policy, &PolicyParams::new())?.as_ref(),
        geometry,
        population,
        exp.seed,
    )?;
    let itable = InodeTables::new(geometry, &plan);
    drop(planning);
    eprintln!(
        "[{policy}] planned {} inodes in {:.1} s",
        plan.inodes.len(),
        t.elapsed().as_secs_f64()
    );
    let fs_bytes = geometry.blocks_count * u64::from(geometry.block_size_bytes);
    let opts = KernelFsOptions {
        kind: FsKind::Ext4,
        mkfs_args: Vec::new(),
        // Closed loop mounts the image again for each walk (on the emulated device, then
        // back): read-only from the start, so that no mount is read-write, where ext4 starts
        // its lazyinit thread's block-bitmap prefetch (reads that would land on the emulated
        // disk around a walk) and writes the superblock. Open loop mounts once, read-write,
        // and remounts read-only before any walk, as it always has.
        mount_options: if closed_loop {
            "ro".into()
        } else {
            String::new()
        },
        bytes: fs_bytes,
        backing: Backing::SparseFile(workdir.to_path_buf()),
        // The image's data blocks are holes: at most what mke2fs makes plus the plan's
        // directory, symlink and mapping blocks is ever written.
        resident_bytes: written_blocks(geometry, &plan) * u64::from(geometry.block_size_bytes),
        queue: queue.clone(),
    };
    // Where a default run's time goes (issue 32): the image and the untraced path walk are
    // logged apart from the traced walks.
    let t = std::time::Instant::now();
    let image_stage = crate::stages::enter(crate::stages::IMAGE);
    let kfs = KernelFs::from_image_holding(&opts, Some(lock), &mut |path: &Path| {
        crate::steps::image::write_plan(path, fs_bytes, profile, &plan)?;
        index_directories(path).map_err(|e| format!("{e:#}"))
    })?;
    remount_read_only(kfs.mount_point())?;
    let sysfs = readahead_tunable(&kfs)?;
    // The paths in readdir order, from one walk before any traced one.
    let mut readdir_paths = Vec::new();
    walk(kfs.mount_point(), &mut |p| {
        readdir_paths.push(p.to_path_buf())
    })?;
    eprintln!(
        "[{policy}] image written, indexed (e2fsck -fyD), mounted and its {} paths listed in {:.1} s",
        readdir_paths.len(),
        t.elapsed().as_secs_f64()
    );
    drop(image_stage);
    // Relative to the mount point: closed loop mounts the image elsewhere for each walk.
    let mut random_paths: Vec<PathBuf> = readdir_paths
        .iter()
        .map(|p| p.strip_prefix(kfs.mount_point()).map(Path::to_path_buf))
        .collect::<std::result::Result<_, _>>()
        .context("a listed path outside the mount point")?;
    random_paths.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(exp.seed));
    Ok(Mounted {
        policy: policy.to_string(),
        itable,
        kfs,
        sysfs,
        random_paths,
    })
}

/// What one traced walk produced.
struct Walked {
    trace: layoutlab_trace::Trace,
    /// The seconds it took here.
    seconds_here: f64,
    /// On the emulated device: the walk's requests among those it served, `[from, to)`.
    served: Option<(usize, usize)>,
}

/// One traced walk of `m` in `order` (its caches already dropped). On the emulated device the
/// walk's thread names itself to the emulator's `CpuPace`: its own CPU time (the `lstat`s, in
/// this process, which also runs the emulator), not the wall, places each request on the
/// model's clock, as the open-loop replay takes the think time from this thread's CPU.
fn traced_walk(m: &mut Mounted, order: &str) -> Result<Walked> {
    let _capture = crate::stages::enter(crate::stages::CAPTURE);
    let pace = m.kfs.cpu_pace();
    if let Some(pace) = &pace {
        pace.follow_this_thread();
    }
    let walked = walk_traced(m, order);
    if let Some(pace) = &pace {
        pace.stop_following();
    }
    walked
}

fn walk_traced(m: &mut Mounted, order: &str) -> Result<Walked> {
    let t = std::time::Instant::now();
    let mount = m.kfs.mount_point().to_path_buf();
    let random_paths = &m.random_paths;
    let mut served_from = 0;
    let mut traced = m.kfs.trace(&TraceOptions::default())?;
    traced.phase("walk", |fs| {
        // Counted once the device is settled and the phase marked: a request the emulator
        // serves from here on is the walk's.
        served_from = fs.served_so_far();
        let stat = |p: &Path| {
            std::fs::symlink_metadata(p).map(|_| ()).map_err(|e| {
                layoutlab_rig::RigError::Unsupported(format!("lstat {}: {e}", p.display()))
            })
        };
        if order == "readdir" {
            walk(&mount, &mut |p| {
                let _ = std::fs::symlink_metadata(p);
            })
            .map_err(|e| layoutlab_rig::RigError::Unsupported(e.to_string()))
        } else {
            random_paths.iter().try_for_each(|p| stat(&mount.join(p)))
        }
    })?;
    let seconds_here = t.elapsed().as_secs_f64();
    let captured = traced.finish()?;
    let served = m
        .kfs
        .cpu_pace()
        .is_some()
        .then(|| (served_from, m.kfs.served_so_far()));
    Ok(Walked {
        trace: captured.capture.trace,
        seconds_here,
        served,
    })
}

/// Blocks the image holds that are not file data: mke2fs's own (bitmaps, inode tables,
/// journal, ...) and the plan's directory, symlink and mapping blocks.
fn written_blocks(geo: &Geometry, plan: &Plan) -> u64 {
    let mkfs = geo.blocks_count - geo.free_blocks_per_group().iter().sum::<u64>();
    let planned: u64 = plan
        .inodes
        .iter()
        .filter(|i| i.kind != layoutlab_layout::InodeKind::File)
        .map(|i| i.data_blocks())
        .sum();
    mkfs + planned + plan.mapping_blocks()
}

/// Remounts the file system read-only: a walk then writes nothing (readdir would otherwise
/// update directories' access times), so its trace is the reads the setting causes.
fn remount_read_only(mount_point: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let target = std::ffi::CString::new(mount_point.as_os_str().as_bytes())?;
    // SAFETY: valid C string; a remount of a mount this run made.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_REMOUNT | libc::MS_RDONLY,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        bail!(
            "remounting {} read-only: {}",
            mount_point.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// The mounted file system's `inode_readahead_blks` file (/sys/fs/ext4/DEV/).
fn readahead_tunable(kfs: &KernelFs) -> Result<PathBuf> {
    let dev = kfs
        .device()
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let p = PathBuf::from(format!("/sys/fs/ext4/{dev}/inode_readahead_blks"));
    if !p.exists() {
        bail!(
            "{} does not exist: is the image mounted as ext4?",
            p.display()
        );
    }
    Ok(p)
}

/// Sets the tunable; the kernel's refusal (EINVAL) is reported as it said it.
fn set_tunable(path: &Path, blocks: u64) -> Result<()> {
    std::fs::write(path, format!("{blocks}\n")).with_context(|| {
        format!(
            "the kernel refused inode_readahead_blks = {blocks} ({}): it takes 0 or a power of two up to 2^30",
            path.display()
        )
    })?;
    let now = std::fs::read_to_string(path)?;
    if now.trim() != blocks.to_string() {
        bail!(
            "inode_readahead_blks reads {} after writing {blocks}",
            now.trim()
        );
    }
    Ok(())
}

/// Walks the tree under `root` as `find` does: each directory's entries in readdir order,
/// `f` called on each (and then descending into subdirectories, not following symlinks).
fn walk(root: &Path, f: &mut dyn FnMut(&Path)) -> Result<()> {
    let rd = std::fs::read_dir(root).with_context(|| format!("readdir {}", root.display()))?;
    for e in rd {
        let e = e.with_context(|| format!("readdir {}", root.display()))?;
        let p = e.path();
        f(&p);
        if e.file_type()?.is_dir() && e.file_name() != "lost+found" {
            walk(&p, f)?;
        }
    }
    Ok(())
}

/// Which inode-table blocks hold an inode of the tree.
struct InodeTables {
    /// `[first, end)` of each group's table, sorted (tables may be packed by flex_bg).
    tables: Vec<(u64, u64)>,
    used: HashSet<u64>,
    sectors_per_block: u64,
}

impl InodeTables {
    fn new(geo: &Geometry, plan: &Plan) -> InodeTables {
        let inodes_per_group = u64::from(geo.inodes_per_group);
        let inodes_per_block = inodes_per_group / geo.inode_table_blocks;
        // reserved inodes (1..=10) and lost+found (11) are mke2fs's; the rest the plan's
        let used: HashSet<u64> = (1..=11)
            .chain(plan.inodes.iter().map(|i| u64::from(i.ino)))
            .map(|ino| {
                let index = ino - 1;
                let group = index / inodes_per_group;
                let block = (index % inodes_per_group) / inodes_per_block;
                geo.groups[group as usize].inode_table + block
            })
            .collect();
        let mut tables: Vec<(u64, u64)> = geo
            .groups
            .iter()
            .map(|g| (g.inode_table, g.inode_table + geo.inode_table_blocks))
            .collect();
        tables.sort_unstable();
        InodeTables {
            tables,
            used,
            sectors_per_block: u64::from(geo.block_size_bytes) / 512,
        }
    }

    /// Whether `block` lies in some group's inode table.
    fn in_table(&self, block: u64) -> bool {
        let i = self.tables.partition_point(|&(first, _)| first <= block);
        i > 0 && block < self.tables[i - 1].1
    }

    /// (inode-table blocks read that hold no inode of the tree, inode-table blocks read),
    /// distinct blocks over the trace's reads.
    fn read_stats(&self, trace: &layoutlab_trace::Trace) -> (u64, u64) {
        let mut seen = HashSet::new();
        for r in &trace.requests {
            if r.op != layoutlab_trace::Op::Read {
                continue;
            }
            let first = r.sector / self.sectors_per_block;
            let last = (r.sector + u64::from(r.sectors)).div_ceil(self.sectors_per_block);
            for b in first..last {
                if self.in_table(b) {
                    seen.insert(b);
                }
            }
        }
        let wasted = seen.iter().filter(|b| !self.used.contains(b)).count() as u64;
        (wasted, seen.len() as u64)
    }
}

#[allow(clippy::too_many_arguments)]
fn report(
    exp: &Experiment,
    a: &RunArgs,
    (tree, scale, inodes): (&str, f64, u64),
    (settings, devices): (&[u64], &[String]),
    runs: &[WalkRun],
    sweet: &[SweetSpot],
    h: &Human,
) -> Result<()> {
    let out_dir = a.out_dir(exp);
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut html = HtmlBundle::new(&exp.title);
    let policies: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in runs {
            if !v.contains(&r.policy.as_str()) {
                v.push(&r.policy);
            }
        }
        v
    };
    let orders: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in runs {
            if !v.contains(&r.order.as_str()) {
                v.push(&r.order);
            }
        }
        v
    };
    let find = |p: &str, o: &str, k: u64, d: &str| {
        runs.iter()
            .find(|r| r.policy == p && r.order == o && r.readahead_blks == k && r.device == d)
    };
    for p in &policies {
        for o in &orders {
            let mut cols = vec![
                Column::number("readahead", Some("blocks")),
                Column::number("requests", None),
                Column::number("read", Some("MB")),
                Column::number("wasted", Some("blocks")),
            ];
            for d in devices {
                cols.push(Column::number(d, Some("s")));
            }
            // Closed loop: the time measured on the emulated disk, beside the replay of the
            // same stream on it (the one device).
            let closed_k = runs
                .iter()
                .find_map(|r| r.closed_loop.as_ref().map(|c| c.time_scale));
            if let Some(k) = closed_k {
                cols.push(Column::number(
                    &format!("{} closed loop (K = {k}), measured", devices[0]),
                    Some("s"),
                ));
            }
            let mut t = Table::new(
                &format!("stat of {inodes} entries of {tree} in {o} order, laid out by {p}: predicted seconds per device"),
                cols,
            );
            for &k in settings {
                let Some(first) = find(p, o, k, &devices[0]) else {
                    continue;
                };
                let mut row = vec![
                    Cell::count(k),
                    Cell::count(first.requests),
                    Cell::num(first.mb_read, 1),
                    Cell::count(first.wasted_blocks),
                ];
                for d in devices {
                    row.push(
                        find(p, o, k, d)
                            .map(|r| Cell::num(r.seconds, 2))
                            .unwrap_or(Cell::Empty),
                    );
                }
                if closed_k.is_some() {
                    row.push(
                        first
                            .closed_loop
                            .as_ref()
                            .map(|c| Cell::num(c.measured_seconds, 2))
                            .unwrap_or(Cell::Empty),
                    );
                }
                t.push_row(row)?;
            }
            h.say(&format!("{}\n", t.to_terminal(None)?));
            // The device's share alone: on SSDs the walk is mostly CPU (measured here, and
            // noisier run to run than the setting's effect), so the setting shows here.
            let mut io = Table::new(
                &format!("{o} order, {p}: seconds the device was busy"),
                std::iter::once(Column::number("readahead", Some("blocks")))
                    .chain(devices.iter().map(|d| Column::number(d, Some("s"))))
                    .collect(),
            );
            for &k in settings {
                let mut row = vec![Cell::count(k)];
                for d in devices {
                    row.push(
                        find(p, o, k, d)
                            .map(|r| Cell::num(r.io_seconds, 2))
                            .unwrap_or(Cell::Empty),
                    );
                }
                io.push_row(row)?;
            }
            h.say(&format!("{}\n", io.to_terminal(None)?));
            html.table(io);
            let spots: Vec<String> = sweet
                .iter()
                .filter(|s| s.policy == *p && s.order == *o)
                .map(|s| {
                    format!(
                        "{} {} (within 5% from {})",
                        s.device, s.readahead_blks, s.within_5_percent_blks
                    )
                })
                .collect();
            h.say(&format!("sweet spot ({o}, {p}): {}\n\n", spots.join("; ")));
            html.table(t);
            html.text(&format!("sweet spot: {}", spots.join("; ")));
            let categories: Vec<String> = settings.iter().map(|k| k.to_string()).collect();
            let series: Vec<SweepSeries> = devices
                .iter()
                .map(|d| SweepSeries {
                    name: d.clone(),
                    values: settings
                        .iter()
                        .map(|&k| find(p, o, k, d).map(|r| r.seconds))
                        .collect(),
                })
                .collect();
            let chart = SweepChart::new(
                &format!("{tree}, {o} order, {p}: stat walk time against inode_readahead_blks"),
                "inode_readahead_blks",
                categories.clone(),
                "predicted walk",
                Some("s"),
            );
            let svg = chart.render(&series);
            html.figure(
                &format!(
                    "Predicted time of a cold stat walk of {tree} in {o} order, laid out by {p}, against inode_readahead_blks: one line per device."
                ),
                &format!("readahead-{p}-{o}.svg"),
                svg,
            );
            // Mason's curve beside ours, per device, relative to each curve's own minimum.
            let mut mason = Table::new(
                &format!(
                    "{o} order, {p}: ours against the fio-implied curve (time per inode of a random read of the window), seconds"
                ),
                std::iter::once(Column::number("readahead", Some("blocks")))
                    .chain(devices.iter().flat_map(|d| {
                        [
                            Column::number(&format!("{d} ours"), Some("s")),
                            Column::number(&format!("{d} fio"), Some("s")),
                        ]
                    }))
                    .collect(),
            );
            for &k in settings {
                let mut row = vec![Cell::count(k)];
                for d in devices {
                    match find(p, o, k, d) {
                        Some(r) => {
                            row.push(Cell::num(r.seconds, 2));
                            row.push(Cell::num(r.fio_implied_seconds, 2));
                        }
                        None => row.extend([Cell::Empty, Cell::Empty]),
                    }
                }
                mason.push_row(row)?;
            }
            h.say(&format!("{}\n", mason.to_terminal(None)?));
            html.table(mason);
        }
    }
    html.save(&out_dir)?;
    eprintln!(
        "report: {}/{{report.md,index.html,readahead-POLICY-ORDER.svg}}",
        out_dir.display()
    );
    if let Some(path) = &a.json {
        write_json(
            path,
            &ReadaheadJson {
                experiment: &exp.name,
                tree,
                scale,
                entries: inodes,
                runs,
                sweet_spot: sweet,
            },
        )?;
    }
    Ok(())
}
