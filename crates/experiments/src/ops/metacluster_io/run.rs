//! The pipeline of "metacluster-io" (every policy, every benchmark, with and without the
//! indirect-block read-ahead; [`run_metacluster_io`]) and its kernel side: images laid out by a
//! policy and written through libext2fs, mounted by today's kernel, read by a small buffered
//! reader under block tracing, the traces priced on the preset.
//!
//! The reader is this process (one thread, followed by the rig's CPU accounting, so its CPU
//! time between requests is the think time of the replay). It reads through the page cache
//! with `pread(2)`, as a 2007 benchmark program without `O_DIRECT` did: the post does not
//! mention `O_DIRECT`, and a buffered read is what the patch's read path (indirect blocks
//! looked up and read ahead by the file system when the page cache misses) was built for.
//! A random buffered read of 512 bytes makes the kernel read the one 4 KiB page (block) that
//! holds it, and one of 512 KiB the 128 blocks it covers: both the 2.6.23 readahead
//! (`ondemand_readahead`, "standalone, small read: read as is") and today's
//! (`page_cache_sync_ra`) read a random request as is — with one exception today's kernel
//! added in 2.6.31 (`try_context_readahead`, now in `page_cache_sync_ra`): a random read
//! whose preceding pages happen to be cached from an earlier read is taken for a sequential
//! stream and read ahead. 2.6.23 had no such heuristic, so the random benchmarks tell the
//! kernel the truth with `posix_fadvise(POSIX_FADV_RANDOM)`, which makes it read exactly the
//! pages asked for (`force_page_cache_ra`). The test
//! `kernel_reads_cover_exactly_the_predicted_blocks` holds this.

use super::report::{render, FileBytes};
use super::{
    bio_order, ind_readahead, ra_windows, write_stream, LargeReadAdvice, MetaclusterIoSpec,
};
use crate::output::Human;
use crate::steps::phases::{of_tag, TagTable};
use crate::{Experiment, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_device::replay::Replayed;
use layoutlab_layout::{Geometry, MapBlock, MapKind, MkfsProfile, Plan, PlannedInode};
use layoutlab_rig::{Backing, FsKind, KernelFs, KernelFsOptions, RigError, TraceOptions};
use layoutlab_trace::{Op, Trace};
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::BTreeSet;
use std::collections::HashSet;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Name of the benchmark file in the root directory.
pub const FILE_NAME: &str = "bench";

/// One read of a benchmark: (byte offset, bytes).
pub type Access = (u64, u64);

/// What a benchmark reads, in order: benchmark 2 the whole file in `seq_read_chunk_kib`
/// reads; 3 random `small_read_bytes` reads (aligned to their size) until `small_total_mib`
/// × `scale` MiB have been read; 4 random `large_read_kib` reads (aligned) until
/// `large_fraction` of the file has been read. Offsets are drawn with replacement from a
/// ChaCha8 stream seeded by `seed` and the benchmark's number, so both layouts read the same
/// offsets.
pub fn accesses(
    benchmark: u32,
    file_bytes: u64,
    spec: &MetaclusterIoSpec,
    scale: f64,
    seed: u64,
) -> Vec<Access> {
    let random = |chunk: u64, count: u64| -> Vec<Access> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (u64::from(benchmark) << 32));
        let slots = (file_bytes / chunk).max(1);
        (0..count)
            .map(|_| (rng.gen_range(0..slots) * chunk, chunk))
            .collect()
    };
    match benchmark {
        2 => {
            let chunk = spec.seq_read_chunk_kib * 1024;
            (0..file_bytes.div_ceil(chunk))
                .map(|i| (i * chunk, chunk.min(file_bytes - i * chunk)))
                .collect()
        }
        3 => {
            let chunk = spec.small_read_bytes;
            let total = (spec.small_total_mib * scale * (1u64 << 20) as f64) as u64;
            random(chunk, total.div_ceil(chunk).max(1))
        }
        4 => {
            let chunk = spec.large_read_kib * 1024;
            let total = (file_bytes as f64 * spec.large_fraction) as u64;
            random(chunk, (total / chunk).max(1))
        }
        _ => Vec::new(),
    }
}

/// The benchmark file alone on a fresh file system of `fs_bytes`, laid out by `policy` on the
/// mkfs profile `mkfs_profile`: the profile, the geometry and the plan.
pub fn plan_image(
    mkfs_profile: &str,
    policy: &str,
    fs_bytes: u64,
    file_bytes: u64,
    seed: u64,
) -> Result<(MkfsProfile, Geometry, Plan)> {
    let _stage = crate::stages::enter(crate::stages::PLAN);
    let (profile, geometry) = crate::steps::plan::format(mkfs_profile, fs_bytes)?;
    let population =
        crate::steps::plan::one_file("metacluster-io", fs_bytes, FILE_NAME, file_bytes);
    let plan = crate::steps::plan::checked(
        layoutlab_layout::policy_by_name(policy, &layoutlab_layout::PolicyParams::new())?.as_ref(),
        &geometry,
        &population,
        seed,
    )?;
    Ok((profile, geometry, plan))
}

/// The benchmark file's inode in `plan`.
pub fn file_inode(plan: &Plan) -> Result<&PlannedInode> {
    plan.inodes
        .iter()
        .find(|i| i.name == FILE_NAME && i.parent == 2)
        .with_context(|| format!("the plan has no /{FILE_NAME}"))
}

/// Writes the planned image at `path` (mke2fs, then libext2fs places every block), checks it
/// with the real `e2fsck -fn`, then mounts it with today's kernel on a loop device that
/// presents `queue` (the modelled disk's: rotational, the 2007 read-ahead and largest
/// request). The image lives in `workdir` (a sparse file; file data is never written).
pub fn mount_image(
    profile: &MkfsProfile,
    geometry: &Geometry,
    plan: &Plan,
    workdir: &Path,
    queue: &layoutlab_rig::QueueSpec,
) -> Result<KernelFs> {
    mount_image_holding(profile, geometry, plan, workdir, queue, None)
}

/// [`mount_image`] under the rig lock this run already holds (`Some`): a run mounts an image
/// per policy and file size (four at the default), and taking the lock once keeps it from
/// queueing behind other runs between them.
pub fn mount_image_holding(
    profile: &MkfsProfile,
    geometry: &Geometry,
    plan: &Plan,
    workdir: &Path,
    queue: &layoutlab_rig::QueueSpec,
    lock: Option<&layoutlab_rig::RigLock>,
) -> Result<KernelFs> {
    let _stage = crate::stages::enter(crate::stages::IMAGE);
    let fs_bytes = geometry.blocks_count * u64::from(geometry.block_size_bytes);
    let opts = KernelFsOptions {
        kind: FsKind::Ext3,
        mkfs_args: Vec::new(),
        // Since 5.9 the ext4 driver reads every group's block bitmap in the background after
        // mount (the lazyinit thread's prefetch for the allocator); 2007's ext3 did not, and
        // the reads would land in whichever benchmark runs then.
        mount_options: "no_prefetch_block_bitmaps".into(),
        bytes: fs_bytes,
        backing: Backing::SparseFile(workdir.to_path_buf()),
        // What libext2fs writes: bitmaps, descriptors, the journal, the mapping blocks (inode
        // tables are holes on tmpfs), with room to spare.
        resident_bytes: plan.mapping_blocks() * u64::from(geometry.block_size_bytes)
            + fs_bytes / 256
            + (256 << 20),
        queue: queue.clone(),
    };
    let kfs = KernelFs::from_image_holding(&opts, lock, &mut |path: &Path| {
        crate::steps::image::write_plan(path, fs_bytes, profile, plan)?;
        let verdict = layoutlab_image::fsck_check(path).map_err(|e| e.to_string())?;
        if !verdict.clean {
            return Err(format!(
                "e2fsck -fn found the {} image unclean:\n{}",
                plan.policy, verdict.output
            ));
        }
        Ok(())
    })?;
    Ok(kfs)
}

/// Drops every cache, then reads `accesses` of the benchmark file with buffered `pread`s in
/// this thread while tracing the device, as the phase `tag`; `random` declares the pattern
/// random to the kernel (`POSIX_FADV_RANDOM`). Returns the phase's requests (checked by the
/// rig against the device's own counters) and the seconds it took here.
pub fn traced_reads(
    kfs: &mut KernelFs,
    tag: &str,
    accesses: &[Access],
    random: bool,
) -> Result<(Trace, f64)> {
    let _stage = crate::stages::enter(crate::stages::CAPTURE);
    let (trace, seconds_here, _) = read_traced(kfs, tag, accesses, random)?;
    Ok((trace, seconds_here))
}

/// [`traced_reads`] closed loop: the file system is moved onto the emulated device of
/// `device` at time scale `time_scale` (a fresh emulated disk, as the replay prices each
/// benchmark on a fresh model), the reads run there, and it is moved back. This thread (the
/// reader) names itself to the emulator's `CpuPace`, so its own CPU time between requests,
/// not the wall, places each request on the model's clock: the think time the open-loop
/// replay takes from the same thread's CPU. Returns the trace, the seconds here and the time
/// measured on the emulated device for the phase's requests.
pub fn traced_reads_emulated(
    kfs: &mut KernelFs,
    tag: &str,
    accesses: &[Access],
    random: bool,
    device: &str,
    time_scale: f64,
) -> Result<(Trace, f64, crate::steps::check::ClosedLoopRun)> {
    let _stage = crate::stages::enter(crate::stages::CAPTURE);
    kfs.emulate(time_scale, crate::support::emulator_model(device)?)?;
    let pace = kfs
        .cpu_pace()
        .context("the emulated device has no CPU pace")?;
    pace.follow_this_thread();
    let read = read_traced(kfs, tag, accesses, random);
    pace.stop_following();
    let (trace, seconds_here, served) = read?;
    let (from, to) = served.context("no requests counted on the emulated device")?;
    let served = kfs.stop_emulating()?;
    Ok((
        trace,
        seconds_here,
        crate::steps::check::ClosedLoopRun::of(time_scale, &served[from..to], 0.0),
    ))
}

/// On the emulated device: a phase's requests among those the emulator served, `[from, to)`.
type ServedWindow = Option<(usize, usize)>;

/// The traced reads of [`traced_reads`], and on the emulated device the phase's requests
/// among those it served, `[from, to)`.
fn read_traced(
    kfs: &mut KernelFs,
    tag: &str,
    accesses: &[Access],
    random: bool,
) -> Result<(Trace, f64, ServedWindow)> {
    kfs.drop_caches()?;
    let path: PathBuf = kfs.mount_point().join(FILE_NAME);
    let longest = accesses.iter().map(|a| a.1).max().unwrap_or(0) as usize;
    let mut buf = vec![0u8; longest];
    let started = std::time::Instant::now();
    let mut served_from = 0;
    let mut traced = kfs.trace(&TraceOptions::default())?;
    traced.phase(tag, |fs| {
        // Counted once the device is settled and the phase marked: a request the emulator
        // serves from here on is the phase's.
        served_from = fs.served_so_far();
        let f = std::fs::File::open(&path)
            .map_err(|e| RigError::Unsupported(format!("open {}: {e}", path.display())))?;
        if random {
            use std::os::fd::AsRawFd;
            let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
            if rc != 0 {
                return Err(RigError::Unsupported(format!(
                    "posix_fadvise RANDOM {}: error {rc}",
                    path.display()
                )));
            }
        }
        for &(off, len) in accesses {
            let mut done = 0usize;
            while done < len as usize {
                let n = f
                    .read_at(&mut buf[done..len as usize], off + done as u64)
                    .map_err(|e| RigError::Unsupported(format!("pread {}: {e}", path.display())))?;
                if n == 0 {
                    break;
                }
                done += n;
            }
        }
        Ok(())
    })?;
    let seconds_here = started.elapsed().as_secs_f64();
    let captured = traced.finish()?;
    let served = kfs
        .cpu_pace()
        .is_some()
        .then(|| (served_from, kfs.served_so_far()));
    Ok((
        of_tag(&captured.capture.trace, tag, None, TagTable::Kept),
        seconds_here,
        served,
    ))
}

/// Data blocks a mapping block of `kind` covers.
fn span(kind: MapKind, per_block: u64) -> u64 {
    match kind {
        MapKind::Ind => per_block,
        MapKind::Dind => per_block * per_block,
        MapKind::Tind => per_block * per_block * per_block,
        MapKind::Extent { .. } => 0,
    }
}

/// Physical data and mapping blocks a read of `accesses` must reach: the blocks holding every
/// byte read, and every indirect block on the path to each of them.
pub fn predicted_blocks(
    inode: &PlannedInode,
    block_size: u64,
    accesses: &[Access],
) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let per_block = block_size / 4;
    let mut logical = BTreeSet::new();
    let blocks = inode.size_bytes.div_ceil(block_size);
    for &(off, len) in accesses {
        let first = off / block_size;
        let last = (off + len).div_ceil(block_size).min(blocks);
        logical.extend(first..last);
    }
    let mut data = BTreeSet::new();
    for run in &inode.data {
        for l in logical.range(run.logical..run.logical + run.len) {
            data.insert(run.physical + (l - run.logical));
        }
    }
    let mapping = inode
        .mapping
        .iter()
        .filter(|m: &&MapBlock| {
            let s = span(m.kind, per_block);
            logical.range(m.logical..m.logical + s).next().is_some()
        })
        .map(|m| m.physical)
        .collect();
    (data, mapping)
}

/// Physical blocks of the file (data, mapping) that the trace's reads covered.
pub fn file_blocks_read(
    inode: &PlannedInode,
    block_size: u64,
    trace: &Trace,
) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let spb = block_size / 512;
    let mut read = BTreeSet::new();
    for r in trace.requests.iter().filter(|r| r.op == Op::Read) {
        read.extend(super::request_blocks(r, spb));
    }
    let mut data = BTreeSet::new();
    for run in &inode.data {
        data.extend(read.range(run.physical..run.physical + run.len).copied());
    }
    let mapping = inode
        .mapping
        .iter()
        .map(|m| m.physical)
        .filter(|b| read.contains(b))
        .collect();
    (data, mapping)
}

/// File size at `scale` of a file of `gb` GB at scale 1: whole blocks.
pub fn scaled_bytes(gb: f64, scale: f64, block: u64) -> Result<u64> {
    let b = (gb * 1e9 * scale) as u64 / block * block;
    if b < 64 * block {
        bail!("--scale {scale} makes a {gb} GB file too small to read; use a larger --scale");
    }
    Ok(b)
}

const MIB: f64 = (1u64 << 20) as f64;

/// One benchmark on one layout, with or without the read-ahead option.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRun {
    /// 1..=4, as numbered in the post.
    pub benchmark: u32,
    /// Layout policy.
    pub policy: String,
    /// Whether the patch's indirect-block read-ahead was applied to the trace.
    pub ind_readahead: bool,
    /// Predicted elapsed seconds on the device preset.
    pub seconds: f64,
    /// Requests.
    pub requests: u64,
    /// MB (2^20 bytes) read.
    pub mb_read: f64,
    /// MB (2^20 bytes) written.
    pub mb_written: f64,
    /// Where the requests come from: "kernel trace" (read by today's kernel, captured) or
    /// "write stream" (built from the layout: benchmark 1).
    pub source: String,
    /// Requests that read an indirect block of the file.
    pub indirect_reads: u64,
    /// Modelled seconds the device spent on them (positioning and transfer).
    pub indirect_seconds: f64,
    /// Mean distance on disk from an indirect-block read to the next read of file data, MB
    /// (2^20 bytes): the seek back that the metacluster adds (`None`: no such pair).
    pub ind_to_data_mb: Option<f64>,
    /// Modelled seconds the device spent on the other reads (file data; after an indirect
    /// block in the metacluster, the way back to the data is part of this).
    pub other_read_seconds: f64,
    /// Read-ahead requests the option inserted, and captured reads it made unnecessary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readahead_inserted_dropped: Option<(u64, u64)>,
    /// Captured reads moved back in front of the indirect-block read that today's kernel
    /// issued before them ([`bio_order`]: the 2007 kernel's order); `None` for the write
    /// stream, which is built in that order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_order_moved: Option<u64>,
    /// Benchmark 4: what its reads became in the replay (`--set large_read_advice`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub large_read_advice: Option<LargeReadAdvice>,
    /// Benchmark 4 with `large_read_advice = "none"`: what rebuilding 2.6.24's windows did
    /// ([`ra_windows`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<ra_windows::Windowed>,
    /// Predicted seconds of the same reads in the order the capture took them
    /// (`capture_order`): what the 2007 kernel's order changes, and, for a closed-loop run, the
    /// open-loop replay of the stream the emulated disk served (the kernel issued it so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_order_seconds: Option<f64>,
    /// The same requests in the order the capture took them (before [`bio_order::restore`];
    /// with the read-ahead option applied to it when `ind_readahead`), kept for the budget's
    /// row of that order (not serialized).
    #[serde(skip)]
    pub capture_order: Option<Trace>,
    /// The requests (not serialized).
    #[serde(skip)]
    pub trace: Trace,
    /// Their modelled start times, s (not serialized).
    #[serde(skip)]
    pub start_s: Vec<f64>,
    /// The queue the traced loop device presented (docs/rig.md), when the trace came from
    /// a capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_queue: Option<layoutlab_trace::DeviceQueue>,
    /// With --closed-loop, on a captured benchmark's run without the read-ahead option: the
    /// reads' time measured on the emulated device (first request to last completion, the
    /// reader's CPU placing each request on the model's clock). `seconds` stays the open-loop
    /// replay of the same stream, beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<crate::steps::check::ClosedLoopRun>,
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    benchmark: u32,
    policy: &str,
    ind_readahead: bool,
    source: &str,
    trace: Trace,
    replayed: &Replayed,
    mapping: &HashSet<u64>,
    spb: u64,
) -> BenchRun {
    let (mut read, mut written) = (0u64, 0u64);
    let (mut indirect_reads, mut indirect_ns, mut other_ns) = (0u64, 0f64, 0f64);
    let (mut last_ind, mut back_sum, mut back_n) = (None::<u64>, 0f64, 0u64);
    for (r, m) in trace.requests.iter().zip(&replayed.requests) {
        match r.op {
            Op::Read => {
                read += r.bytes();
                if super::request_blocks(r, spb).any(|b| mapping.contains(&b)) {
                    indirect_reads += 1;
                    indirect_ns += m.complete_ns - m.start_ns;
                    last_ind = Some(r.sector);
                } else {
                    other_ns += m.complete_ns - m.start_ns;
                    if let Some(s) = last_ind.take() {
                        back_sum += s.abs_diff(r.sector) as f64 * 512.0 / MIB;
                        back_n += 1;
                    }
                }
            }
            Op::Write => written += r.bytes(),
            _ => {}
        }
    }
    BenchRun {
        closed_loop: None,
        capture_queue: trace.queue.clone(),
        benchmark,
        policy: policy.to_string(),
        ind_readahead,
        seconds: replayed.wall_ns / 1e9,
        requests: trace.requests.len() as u64,
        mb_read: read as f64 / MIB,
        mb_written: written as f64 / MIB,
        source: source.to_string(),
        indirect_reads,
        indirect_seconds: indirect_ns / 1e9,
        other_read_seconds: other_ns / 1e9,
        ind_to_data_mb: (back_n > 0).then(|| back_sum / back_n as f64),
        readahead_inserted_dropped: None,
        period_order_moved: None,
        large_read_advice: None,
        windows: None,
        capture_order_seconds: None,
        capture_order: None,
        start_s: replayed.requests.iter().map(|q| q.start_ns / 1e9).collect(),
        trace,
    }
}

/// Replays a captured read trace, in the 2007 kernel's order of reads across indirect blocks
/// ([`bio_order`]), as is and with the read-ahead option: two runs.
#[allow(clippy::too_many_arguments)]
fn price_reads(
    benchmark: u32,
    policy: &str,
    accesses: &[Access],
    captured: Trace,
    inode: &PlannedInode,
    block_size: u64,
    spec: &MetaclusterIoSpec,
    device: &str,
    cpu_scale: f64,
    closed_loop: Option<crate::steps::check::ClosedLoopRun>,
) -> Result<[BenchRun; 2]> {
    let _stage = crate::stages::enter(crate::stages::PRICE);
    let spb = block_size / 512;
    let mapping: HashSet<u64> = inode.mapping.iter().map(|m| m.physical).collect();
    let restored = bio_order::restore(&captured, inode, block_size);
    let (trace, windows) = match (benchmark, spec.large_read_advice) {
        (4, LargeReadAdvice::None) => {
            let ra_blocks = u64::from(spec.os_read_ahead_kb) * 1024 / block_size;
            let (rebuilt, w) =
                ra_windows::apply(&restored.trace, inode, block_size, accesses, ra_blocks);
            (rebuilt, Some(w))
        }
        (4, LargeReadAdvice::Random) => (restored.trace.split_reads(spb as u32), None),
        _ => (restored.trace, None),
    };
    let applied = ind_readahead::apply(&trace, inode, block_size, spec.ind_readahead_blocks);
    let captured_ahead =
        ind_readahead::apply(&captured, inode, block_size, spec.ind_readahead_blocks).trace;
    let plain = crate::steps::price::on_preset(device, &trace, cpu_scale)?;
    let ahead = crate::steps::price::on_preset(device, &applied.trace, cpu_scale)?;
    let mut without = summarize(
        benchmark,
        policy,
        false,
        "kernel trace",
        trace,
        &plain,
        &mapping,
        spb,
    );
    let mut with = summarize(
        benchmark,
        policy,
        true,
        "kernel trace + read-ahead",
        applied.trace,
        &ahead,
        &mapping,
        spb,
    );
    with.readahead_inserted_dropped = Some((applied.inserted, applied.dropped));
    without.closed_loop = closed_loop;
    if benchmark == 4 {
        without.large_read_advice = Some(spec.large_read_advice);
        with.large_read_advice = Some(spec.large_read_advice);
        without.windows = windows.clone();
        with.windows = windows;
    }
    without.period_order_moved = Some(restored.moved);
    with.period_order_moved = Some(restored.moved);
    without.capture_order_seconds =
        Some(crate::steps::price::on_preset(device, &captured, cpu_scale)?.wall_ns / 1e9);
    with.capture_order_seconds =
        Some(crate::steps::price::on_preset(device, &captured_ahead, cpu_scale)?.wall_ns / 1e9);
    without.capture_order = Some(captured);
    with.capture_order = Some(captured_ahead);
    Ok([without, with])
}

/// One benchmark's traced reads: on the plain loop device, or closed loop (`--closed-loop K`)
/// on the emulated one, with the time measured there.
fn capture(
    kfs: &mut KernelFs,
    tag: &str,
    acc: &[Access],
    random: bool,
    device: &str,
    a: &RunArgs,
) -> Result<(Trace, f64, Option<crate::steps::check::ClosedLoopRun>)> {
    Ok(match a.closed_loop {
        Some(k) => {
            let (trace, here, closed) = traced_reads_emulated(kfs, tag, acc, random, device, k)?;
            (trace, here, Some(closed))
        }
        None => {
            let (trace, here) = traced_reads(kfs, tag, acc, random)?;
            (trace, here, None)
        }
    })
}

/// The progress line's closed-loop part.
fn closed_note(run: &BenchRun) -> String {
    match &run.closed_loop {
        Some(c) => format!(
            "; closed loop at K = {}: {:.3} s measured, {} requests served, {} paced",
            c.time_scale, c.measured_seconds, c.requests_served, c.requests_paced
        ),
        None => String::new(),
    }
}

/// Run the experiment and report it.
pub fn run_metacluster_io(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let spec: MetaclusterIoSpec = exp.params()?;
    spec.validate()?;
    let device = a.device_or(exp);
    let out_dir = a.out_dir(exp);
    let h = Human::new(a.json.as_deref());
    let scale = a.run_scale(exp)?;
    let cpu_scale = a.cpu_scale.unwrap_or(spec.cpu_scale);
    if let Some(k) = a.closed_loop {
        // The reader is a thread of this process: no cgroup throttles it to a period CPU's
        // share, as the fsck experiments' e2fsck is, so the model's clock can only count its
        // CPU at this machine's speed.
        if cpu_scale != 1.0 {
            bail!(
                "--closed-loop paces metacluster-io's reads by the reader's CPU at this machine's \
                 speed; a CPU factor ({cpu_scale}) goes with it only in the fsck experiments: \
                 drop --cpu-scale (or set cpu_scale = 1.0)"
            );
        }
        crate::support::check_emulable(&device, k)?;
    }
    // Every name resolved before any work: a typo fails at once and changes nothing.
    for p in &spec.policies {
        layoutlab_layout::policy_by_name(p, &layoutlab_layout::PolicyParams::new())?;
    }
    let profile = layoutlab_layout::MkfsProfile::by_name(&spec.mkfs_profile)?;
    let dev = crate::support::load_device(&device)?;
    let queue = spec.capture_queue(&device)?;
    let block = u64::from(profile.block_size_bytes);
    let fs_bytes = scaled_bytes(spec.fs_gb, scale, block)?;
    let seq_bytes = scaled_bytes(spec.seq_file_gb, scale, block)?;
    let random_bytes = scaled_bytes(spec.random_file_gb, scale, block)?;
    if dev.capacity_sectors() * 512 < fs_bytes {
        bail!(
            "device '{device}' holds {:.1} GB, less than the {:.1} GB file system",
            dev.capacity_sectors() as f64 * 512.0 / 1e9,
            fs_bytes as f64 / 1e9
        );
    }
    drop(dev);
    layoutlab_rig::require_root("mounting images on loop devices and tracing the kernel's reads")?;
    crate::support::warn_if_leftovers();
    if let Some(d) = &a.workdir {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let (workdir, _memory) =
        crate::support::work_dir_noting(a.workdir.as_deref(), "the benchmarks issue")?;
    eprintln!(
        "{} — scale {scale}: {:.2} GB file system, {:.2} GB and {:.2} GB files; priced on {device}",
        exp.title,
        fs_bytes as f64 / 1e9,
        seq_bytes as f64 / 1e9,
        random_bytes as f64 / 1e9
    );
    let started = std::time::Instant::now();
    // One lock for the run's four mounts; its wait for other runs counts as image time, as
    // KernelFs's own wait does.
    let lock = crate::stages::timed(crate::stages::IMAGE, layoutlab_rig::RigLock::acquire)?;
    let mut runs: Vec<BenchRun> = Vec::new();
    let wants = |b: u32| spec.benchmarks.contains(&b);
    for policy in &spec.policies {
        if wants(1) || wants(2) {
            let (profile, geometry, plan) =
                plan_image(&spec.mkfs_profile, policy, fs_bytes, seq_bytes, exp.seed)?;
            let inode = file_inode(&plan)?;
            eprintln!(
                "[{policy}] {:.2} GB file: {} indirect blocks",
                seq_bytes as f64 / 1e9,
                inode.mapping.len()
            );
            if wants(1) {
                // The write stream is modelled, not captured: building it is pricing.
                let _stage = crate::stages::enter(crate::stages::PRICE);
                let mut dev = crate::support::load_device(&device)?;
                let (trace, counts) = write_stream::build(
                    inode,
                    &geometry,
                    u64::from(profile.inode_size_bytes),
                    &spec,
                    dev.as_mut(),
                    "b1",
                );
                let replayed = crate::steps::price::on_preset(&device, &trace, 1.0)?;
                let mapping = inode.mapping.iter().map(|m| m.physical).collect();
                let r = summarize(
                    1,
                    policy,
                    false,
                    "write stream",
                    trace,
                    &replayed,
                    &mapping,
                    block / 512,
                );
                eprintln!(
                    "  b1 (write stream: {} data, {} journal blocks in {} commits, {} home writes): {:.1} s",
                    counts.data_blocks, counts.journal_blocks, counts.commits, counts.home_blocks, r.seconds
                );
                runs.push(r);
            }
            if wants(2) {
                let mut kfs =
                    mount_image_holding(&profile, &geometry, &plan, &workdir, &queue, Some(&lock))?;
                let acc = accesses(2, seq_bytes, &spec, scale, exp.seed);
                let (trace, here, closed) = capture(&mut kfs, "b2", &acc, false, &device, a)?;
                drop(kfs);
                let pair = price_reads(
                    2, policy, &acc, trace, inode, block, &spec, &device, cpu_scale, closed,
                )?;
                eprintln!(
                    "  b2 (kernel, {:.1} s here): {:.1} s, {:.1} s with read-ahead{}",
                    here,
                    pair[0].seconds,
                    pair[1].seconds,
                    closed_note(&pair[0])
                );
                runs.extend(pair);
            }
        }
        if wants(3) || wants(4) {
            let (profile, geometry, plan) =
                plan_image(&spec.mkfs_profile, policy, fs_bytes, random_bytes, exp.seed)?;
            let inode = file_inode(&plan)?;
            eprintln!(
                "[{policy}] {:.2} GB file: {} indirect blocks",
                random_bytes as f64 / 1e9,
                inode.mapping.len()
            );
            let mut kfs =
                mount_image_holding(&profile, &geometry, &plan, &workdir, &queue, Some(&lock))?;
            for b in [3u32, 4].into_iter().filter(|b| wants(*b)) {
                let acc = accesses(b, random_bytes, &spec, scale, exp.seed);
                let (trace, here, closed) =
                    capture(&mut kfs, &format!("b{b}"), &acc, true, &device, a)?;
                let pair = price_reads(
                    b, policy, &acc, trace, inode, block, &spec, &device, cpu_scale, closed,
                )?;
                eprintln!(
                    "  b{b} ({} reads, {:.1} s here): {:.1} s, {:.1} s with read-ahead{}",
                    acc.len(),
                    here,
                    pair[0].seconds,
                    pair[1].seconds,
                    closed_note(&pair[0])
                );
                runs.extend(pair);
            }
        }
    }
    drop(lock);
    let seconds_here = started.elapsed().as_secs_f64();
    runs.sort_by_key(|r| (r.benchmark, r.ind_readahead));
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    render(
        exp,
        a,
        &device,
        &out_dir,
        scale,
        FileBytes {
            sequential: seq_bytes,
            random: random_bytes,
            file_system: fs_bytes,
        },
        &runs,
        &h,
        seconds_here,
    )
}
