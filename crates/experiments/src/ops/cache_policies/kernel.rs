//! The kernel check of the page-cache model: random-read's ext3 file (the `ext3-2007`
//! policy's block map written through libext2fs, mounted by today's kernel) read at random
//! by a child process inside a memory cgroup of a given limit, its block requests traced and
//! classed as random-read classes them; the same reads' page stream (from the plan) through
//! the simulator's `linux-6` policy with the limit as its capacity.
//!
//! What the kernel charges the cgroup beyond page-cache pages (buffer heads, xarray nodes,
//! the child's own few pages) is not in the model's capacity: that, and the kernel's
//! batching, are what the measured tolerance covers (docs/experiments/cache-policies.md).

use crate::ext_classes::ExtLayout;
use crate::kernel_profile;
use crate::random_file::{check_fully_written, offsets, sizes};
use crate::random_read::RandomReadSpec;
use crate::steps::phases::{of_tag, TagTable};
use anyhow::{bail, Context, Result};
use layoutlab_layout::plan::{Plan, PlannedInode};
use layoutlab_rig::{Backing, KernelFs, KernelFsOptions, MemCgroup, TraceOptions, TracefsSession};
use layoutlab_trace::Op;
use std::os::fd::AsRawFd;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// The reads at one memory limit.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LimitRun {
    /// The cgroup's limit, bytes.
    pub limit_bytes: u64,
    /// Most memory the cgroup was charged, bytes.
    pub max_usage_bytes: u64,
    /// Most kernel memory (slab) the cgroup was charged, bytes.
    pub kmem_max_usage_bytes: u64,
    /// Page-cache bytes the cgroup held at the end (`cache` of memory.stat).
    pub cache_bytes_at_end: u64,
    /// Of the cgroup's file pages at the end, bytes on the active list (`active_file`).
    pub active_file_bytes_at_end: u64,
    /// And on the inactive list (`inactive_file`).
    pub inactive_file_bytes_at_end: u64,
    /// File pages the cgroup read again after evicting them (`workingset_refault_file`).
    pub refaults: u64,
    /// Read requests of the file's indirect blocks the kernel issued.
    pub mapping_reads: u64,
    /// Read requests of the file's data.
    pub data_reads: u64,
    /// Other read requests (inode table, ...).
    pub other_reads: u64,
}

/// The ext3 target, its plan, and the reads made of it at each limit.
pub struct KernelCheck {
    /// The plan the image was written from.
    pub plan: Plan,
    /// Block size, bytes.
    pub block_bytes: u64,
    /// The file's size, bytes.
    pub file_bytes: u64,
    /// Offsets read (bytes), in order.
    pub offsets: Vec<u64>,
    /// One run per limit, in the order asked.
    pub runs: Vec<LimitRun>,
}

impl KernelCheck {
    /// The planned inode of the file read.
    pub fn file(&self) -> Result<&PlannedInode> {
        super::big_file(&self.plan)
    }

    /// File blocks of the reads (each read lies in one block).
    pub fn logical_blocks(&self) -> Vec<u64> {
        self.offsets.iter().map(|o| o / self.block_bytes).collect()
    }
}

/// Makes random-read's ext3 target at `scale` and reads it `reads` times at random (seed
/// `seed`, buffered, `spec.read_bytes` each), cold, once per limit in `limits_bytes`.
pub fn run(
    spec: &RandomReadSpec,
    scale: f64,
    reads: u64,
    limits_bytes: &[u64],
    device: &str,
    workdir: &Path,
    seed: u64,
) -> Result<KernelCheck> {
    layoutlab_rig::require_root("loop devices, kernel mounts, tracefs and memory cgroups")?;
    let policy = spec
        .policy_images
        .get("ext3")
        .context("random-read's experiment lays out no ext3 file by policy")?;
    let profile = kernel_profile::by_name("ext3")?;
    let (file_bytes, fs_bytes) = sizes(spec.file_gb, spec.fs_per_file, scale);
    let queue =
        crate::support::capture_queue(device, Some(spec.read_ahead_kb), Some(spec.max_sectors_kb))?;
    let (mkfs_profile, g, plan) = super::plan_file(policy, file_bytes, fs_bytes, seed)?;
    let opts = KernelFsOptions {
        kind: profile.fs_kind()?,
        mkfs_args: profile.mkfs_args.clone(),
        mount_options: crate::steps::image::join_options(&[
            &profile.mount_options,
            &spec.extra_mount_options,
        ]),
        bytes: fs_bytes,
        backing: Backing::SparseFile(workdir.to_path_buf()),
        resident_bytes: crate::steps::image::sparse_image_bytes(&g, &plan) + 64 * MIB,
        queue,
    };
    let mut k = KernelFs::from_image(&opts, &mut |path: &Path| {
        crate::steps::image::write_plan(path, opts.bytes, &mkfs_profile, &plan)
    })?;
    k.remount()?;
    let file = k.mount_point().join("big");
    check_fully_written(&file, file_bytes)?;
    let layout = ExtLayout::read(k.device().path(), "/big")?;
    let offs = offsets(seed, reads, file_bytes, spec.read_bytes);
    let dev_name = format!("loop{}", k.device().number());
    let mut runs = Vec::new();
    for &limit in limits_bytes {
        // At the smallest limits the cgroup's OOM killer can kill the reader: a buffer-cache
        // allocation that may not fail (GFP_NOFS|__GFP_NOFAIL, dmesg) found nothing to reclaim,
        // seen once in about ten runs at load 12-14. The run is a measurement that did not
        // happen, not a count: it is made again, at most `OOM_ATTEMPTS` times, and said.
        let mut attempt = 1;
        let run = loop {
            match measure_once(&mut k, limit, &offs, &dev_name, spec.read_bytes, &layout)? {
                Some(run) => break run,
                None if attempt < OOM_ATTEMPTS => {
                    eprintln!(
                        "cache check: the kernel's OOM killer killed the reader at {} MiB (attempt {attempt}); measuring again",
                        limit >> 20
                    );
                    attempt += 1;
                }
                None => bail!(
                    "the kernel's OOM killer killed the reader at {} MiB {OOM_ATTEMPTS} times: the limit is too small for this kernel's reads",
                    limit >> 20
                ),
            }
        };
        runs.push(run);
    }
    drop(k);
    Ok(KernelCheck {
        block_bytes: u64::from(g.block_size_bytes),
        plan,
        file_bytes,
        offsets: offs,
        runs,
    })
}

/// How many times a limit is measured when the cgroup's OOM killer kills the reader.
const OOM_ATTEMPTS: u32 = 3;

/// One cold measurement at `limit`: the reads in a child of a fresh memory cgroup, traced;
/// `None` when the cgroup's OOM killer killed the child before it finished.
fn measure_once(
    k: &mut KernelFs,
    limit: u64,
    offs: &[u64],
    dev_name: &str,
    read_bytes: u64,
    layout: &ExtLayout,
) -> Result<Option<LimitRun>> {
    k.remount()?;
    k.drop_caches()?;
    // A remount may mount elsewhere: the path is taken anew.
    let file = k.mount_point().join("big");
    let f = std::fs::File::open(&file).with_context(|| format!("open {}", file.display()))?;
    let cg = MemCgroup::create(limit)?;
    let mut buf = vec![0u8; read_bytes as usize];
    let fd = f.as_raw_fd();
    let session = TracefsSession::start(k.device().dev(), &TraceOptions::default())?;
    let window = layoutlab_rig::window::Window::open(&session, dev_name, "reads")?;
    // SAFETY: the child only calls pread(2) on a descriptor and a buffer made before.
    let code = unsafe {
        cg.run_in_child(&[fd], || {
            for &o in offs {
                let n = libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), o as i64);
                if n != buf.len() as isize {
                    return 1;
                }
            }
            0
        })
    };
    let code = match code {
        Ok(code) => code,
        // Killed, not exited: by the cgroup's OOM killer when it says so.
        Err(_) if cg.oom_kills()? > 0 => {
            drop(session);
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    if code != 0 {
        bail!("a read of {} failed in the cgroup's child", file.display());
    }
    let counted = window.close("after")?;
    let capture = session.stop()?;
    layoutlab_rig::window::check_complete(&capture)?;
    let trace = of_tag(&capture.trace, "reads", Some(Op::Read), TagTable::Own);
    let sectors: u64 = trace.requests.iter().map(|r| u64::from(r.sectors)).sum();
    if !counted.reads().contains(&sectors) {
        bail!(
            "the trace saw {sectors} sectors read, the device counted {}",
            layoutlab_rig::window::show(&counted.reads())
        );
    }
    let per_block = (layout.block_size_bytes / 512).max(1);
    let mut run = LimitRun {
        limit_bytes: cg.limit_bytes()?,
        max_usage_bytes: cg.max_usage_bytes()?,
        kmem_max_usage_bytes: cg.kmem_max_usage_bytes()?,
        cache_bytes_at_end: cg.stat("cache")?,
        active_file_bytes_at_end: cg.stat("active_file")?,
        inactive_file_bytes_at_end: cg.stat("inactive_file")?,
        refaults: cg.stat("workingset_refault_file")?,
        mapping_reads: 0,
        data_reads: 0,
        other_reads: 0,
    };
    for r in &trace.requests {
        match layout.class_of(r.sector / per_block) {
            "indirect" | "extent" => run.mapping_reads += 1,
            "data" => run.data_reads += 1,
            _ => run.other_reads += 1,
        }
    }
    Ok(Some(run))
}
