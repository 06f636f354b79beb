//! The engine's `ext4-kernel` plan against today's kernel, for each file shape the experiments
//! write on ext4 (issue 28): random-read's file made by `dd bs=1M conv=fsync`, large-delete's
//! contiguous file (1 MiB writes, then fsync) and request-merging's buffered `dd` file. Each is
//! written by the kernel exactly as the experiment writes it (the experiment's kernel profile,
//! mount options and presented queue, rotational as the priced disk is, so ext4 scans groups as
//! on a disk), read back with libext2fs after unmount, and set beside the engine's plan of the
//! same write on the same geometry.
//!
//! What must hold, and why:
//! - **the same data blocks**, exactly. A large file's
//!   2048-block writeback requests are stream allocations, which start where the file system's
//!   last stream allocation ended (mballoc's `s_mb_last_group`/`s_mb_last_start`), not at the
//!   inode's own goal: however the kernel's writeback splits the file into requests, they take
//!   the same blocks in the same order;
//! - **the extent-tree leaf in the same place**, up to the kernel's run-to-run spread: the
//!   engine takes the first free block at the inode's goal (`ext4_ext_grow_indepth()`); the
//!   kernel's leaf was 3 to 16 blocks further on in seven runs (3, 8, 14, 10 on the 2 GB file;
//!   5 and 16 on random-read's 1.9 and 3.8 GB), the blocks before it free again at the end: while writeback converts unwritten extents the tree grows
//!   a leaf and merges back into the inode (`ext4_ext_try_to_merge_up()` frees the leaf), and a
//!   freed block waits for the journal's commit before it is reused, so each new leaf takes the
//!   next block; how many times depends on timing. Bound: at most [`LEAF_SPREAD_BLOCKS`]
//!   further (four times the largest measured, 16), never before. Without the engine's
//!   `ext4_ext_grow_indepth()` goal the leaf was 580,352 against the kernel's 33,368: the test
//!   failed there;
//! - **the same extents** (logical to physical) when one writeback pass allocates the whole
//!   file: files the kernel keeps dirty until `fsync`, i.e. below the flusher's background
//!   threshold (`dirty_background_ratio` of the dirtyable memory). Above it the flusher starts
//!   mid-write and `fsync` then allocates from a second place in the file at the same time: the
//!   two interleave their requests over the same blocks, by timing (a 4 GB file on this 23 GB
//!   machine, once: 23 extents where one pass makes 11; the blocks the same; another run of
//!   3.8 GB made one pass). The engine models the
//!   one pass; the test reports the interleaved case and holds only the blocks there.
//!
//! Not covered: large-delete's fragmented file (two writers' appends): the ext4 policies do not
//! model appends, so it stays kernel-written. Root only (zram, loop devices, mounts).

mod common;

use layoutlab_experiments::{kernel_profile, large_delete, random_read, steps};
use layoutlab_layout::{PlannedInode, Run};
use layoutlab_rig::{Backing, KernelFs, KernelFsOptions};
use layoutlab_workload::{NsOp, Population};
use std::collections::BTreeSet;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// How far past the engine's leaf the kernel's may land (see the header: measured 3 to 16
/// blocks in seven runs; four times the largest).
const LEAF_SPREAD_BLOCKS: u64 = 64;

/// The kernel's layout of `name` after `write` on a fresh file system made as `opts` says.
fn kernel_file(
    opts: &KernelFsOptions,
    write: impl FnOnce(&Path) -> anyhow::Result<()>,
    name: &str,
) -> PlannedInode {
    let k = KernelFs::create(opts).unwrap();
    write(k.mount_point()).unwrap();
    let back = k.unmount_then(layoutlab_image::inspect).unwrap().unwrap();
    back.inodes
        .into_iter()
        .find(|i| i.planned.name == name)
        .unwrap_or_else(|| panic!("the kernel's file system has no {name}"))
        .planned
}

/// The engine's plan of `pop` (ext4-kernel on its mkfs profile), file `name`.
fn engine_file(pop: &Population, name: &str) -> PlannedInode {
    let plan = steps::plan::policy_image("ext4-kernel", pop, 1)
        .unwrap()
        .plan;
    plan.inodes.into_iter().find(|i| i.name == name).unwrap()
}

/// Above the flusher's threshold: the share of data blocks the kernel may place elsewhere
/// than the engine (the symmetric difference over the file's blocks), from the runs stated at
/// its use.
const ABOVE_THRESHOLD_DIFFER: f64 = 0.06;

fn blocks(i: &PlannedInode) -> (BTreeSet<(u64, u64)>, BTreeSet<u64>) {
    // data as (start, end) of maximal physical runs, mapping blocks one by one
    let mut data: Vec<(u64, u64)> = i
        .data
        .iter()
        .map(|r| (r.physical, r.physical + r.len))
        .collect();
    data.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in data {
        match merged.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => merged.push((s, e)),
        }
    }
    (
        merged.into_iter().collect(),
        i.mapping.iter().map(|m| m.physical).collect(),
    )
}

fn show(label: &str, k: &[Run], o: &[Run]) {
    println!("{label}: kernel {} extents, engine {}", k.len(), o.len());
    for i in 0..k.len().max(o.len()) {
        let f = |r: Option<&Run>| {
            r.map(|r| format!("{}+{}@{}", r.logical, r.len, r.physical))
                .unwrap_or_default()
        };
        let (a, b) = (f(k.get(i)), f(o.get(i)));
        println!("  {i:3} {a:28} {b:28} {}", if a == b { "" } else { "<>" });
    }
}

/// The flusher's background threshold here, bytes: `dirty_background_bytes`, or
/// `dirty_background_ratio` percent of MemAvailable (an upper bound of the dirtyable memory).
fn background_threshold_bytes() -> u64 {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    let bytes = read("/proc/sys/vm/dirty_background_bytes");
    if bytes > 0 {
        return bytes;
    }
    let ratio = read("/proc/sys/vm/dirty_background_ratio");
    layoutlab_rig::mem_available_bytes().unwrap() / 100 * ratio
}

/// Compares the kernel's `name` with the engine's; exact extents asked when the file is well
/// under the background threshold (half of it: the dirtyable memory is less than MemAvailable).
fn compare(label: &str, kernel: &PlannedInode, engine: &PlannedInode, file_bytes: u64) {
    show(label, &kernel.data, &engine.data);
    println!(
        "{label}: mapping blocks kernel {:?}, engine {:?}",
        kernel
            .mapping
            .iter()
            .map(|m| m.physical)
            .collect::<Vec<_>>(),
        engine
            .mapping
            .iter()
            .map(|m| m.physical)
            .collect::<Vec<_>>()
    );
    assert_eq!(kernel.size_bytes, file_bytes, "{label}");
    let (kd, km) = blocks(kernel);
    let (ed, em) = blocks(engine);
    let below = file_bytes < background_threshold_bytes() / 2;
    if below {
        assert_eq!(kd, ed, "{label}: the data blocks differ");
    } else {
        // Above the flusher's threshold the kernel's own placement moves from run to run: the
        // flusher and the writer allocate at once. 9 runs by hand gave the engine's blocks
        // exactly; a `make test` run at load 8-14 put 256 of random-read's 1,015,808 blocks
        // (scale 0.002) elsewhere (0.05% in the symmetric difference); a fresh-clone CI run with
        // two CPU-bound loops put large-delete's last 6,912 blocks at 589,824 instead of
        // 573,440 (13,824 of 488,192, 2.8%). The bound is twice the largest.
        let size = |s: &BTreeSet<(u64, u64)>| s.iter().map(|(a, b)| b - a).sum::<u64>();
        let common: u64 = kd
            .iter()
            .map(|&(a, b)| {
                ed.iter()
                    .map(|&(c, d)| b.min(d).saturating_sub(a.max(c)))
                    .sum::<u64>()
            })
            .sum();
        let differ = size(&kd) + size(&ed) - 2 * common;
        assert!(
            (differ as f64) <= ABOVE_THRESHOLD_DIFFER * size(&kd) as f64,
            "{label}: {differ} of {} data blocks differ (bound {ABOVE_THRESHOLD_DIFFER})",
            size(&kd)
        );
    }
    assert_eq!(
        km.len(),
        em.len(),
        "{label}: the extent trees differ in size"
    );
    for (k, e) in km.iter().zip(&em) {
        assert!(
            *k >= *e && *k <= e + LEAF_SPREAD_BLOCKS,
            "{label}: the kernel's tree block {k} is not within {LEAF_SPREAD_BLOCKS} blocks after the engine's {e}"
        );
    }
    if below {
        assert_eq!(
            kernel.data, engine.data,
            "{label}: one writeback pass, extents differ"
        );
        println!("{label}: one writeback pass: the same extents");
    } else {
        println!("{label}: above the flusher's threshold: the same blocks within {ABOVE_THRESHOLD_DIFFER} (extents not compared)");
    }
}

fn options(
    profile: &str,
    mount_options: &str,
    bytes: u64,
    device: &str,
    ra: u32,
    max: Option<u32>,
) -> KernelFsOptions {
    let p = kernel_profile::by_name(profile).unwrap();
    KernelFsOptions {
        kind: p.fs_kind().unwrap(),
        mkfs_args: p.mkfs_args.clone(),
        mount_options: mount_options.to_string(),
        bytes,
        backing: Backing::Zram,
        resident_bytes: bytes / 50 + 64 * MIB,
        queue: layoutlab_experiments::support::capture_queue(device, Some(ra), max).unwrap(),
    }
}

fn one_file(fs_bytes: u64, name: &str, bytes: u64) -> Population {
    Population {
        name: name.into(),
        fs_bytes,
        ops: vec![NsOp::Create {
            path: name.into(),
            bytes,
        }],
    }
}

/// random-read's file, `dd bs=1M conv=fsync`, at scale 0.001 (1.9 GB, under this machine's
/// background threshold: one pass) and 0.002 (3.8 GB: the flusher and fsync interleave). Its
/// sizes, profile, mount options and queue are the experiment's own.
#[test]
fn random_read_dd_file_is_the_engines() {
    if !common::root_or_skip(
        "random_read_dd_file_is_the_engines",
        "zram, loop devices, mount",
    ) {
        return;
    }
    let exp = layoutlab_experiments::experiment::load("random-read").unwrap();
    let spec: random_read::RandomReadSpec = exp.params().unwrap();
    for scale in [0.001, 0.002] {
        let (file_bytes, fs_bytes) = random_read::sizes(&spec, scale);
        let opts = options(
            "ext4",
            &spec.extra_mount_options,
            fs_bytes,
            &exp.device,
            spec.read_ahead_kb,
            Some(spec.max_sectors_kb),
        );
        let kernel = kernel_file(
            &opts,
            |m| random_read::dd_write(&m.join("big"), file_bytes),
            "big",
        );
        let engine = engine_file(&one_file(fs_bytes, "big", file_bytes), "big");
        compare(
            &format!("random-read scale {scale}"),
            &kernel,
            &engine,
            file_bytes,
        );
    }
}

/// large-delete's contiguous file at its default scale (2 GB on 5 GB: 1 MiB writes, fsync).
#[test]
fn large_delete_contiguous_file_is_the_engines() {
    if !common::root_or_skip(
        "large_delete_contiguous_file_is_the_engines",
        "zram, loop devices, mount",
    ) {
        return;
    }
    let exp = layoutlab_experiments::experiment::load("large-delete").unwrap();
    let spec: large_delete::LargeDeleteSpec = exp.params().unwrap();
    let (file_bytes, fs_bytes) = large_delete::sizes(&spec, spec.default_scale);
    let p = kernel_profile::by_name("ext4").unwrap();
    let opts = options("ext4", &p.mount_options, fs_bytes, &exp.device, 128, None);
    let chunk = spec.write_chunk_mib * MIB;
    let kernel = kernel_file(
        &opts,
        |m| large_delete::write_zeros(&[&m.join("big")], file_bytes, chunk, None),
        "big",
    );
    let pop = large_delete::write_population("contiguous", fs_bytes, file_bytes, &spec);
    let engine = engine_file(&pop, "big");
    compare("large-delete contiguous", &kernel, &engine, file_bytes);
}

/// request-merging's buffered file (`dd bs=1M count=256 conv=fsync`, the first file on its
/// 768 MiB ext4). Its O_DIRECT file, written next, allocates at each write, which the engine
/// does not model; both are written inside the traced phases anyway, so the engine never
/// stands in for them.
#[test]
fn request_merging_buffered_file_is_the_engines() {
    if !common::root_or_skip(
        "request_merging_buffered_file_is_the_engines",
        "zram, loop devices, mount",
    ) {
        return;
    }
    let exp = layoutlab_experiments::experiment::load("request-merging").unwrap();
    let spec: layoutlab_experiments::request_merging::RequestMergingSpec = exp.params().unwrap();
    let file_bytes = spec.mib * MIB;
    let fs_bytes = layoutlab_experiments::request_merging::device_bytes(&spec);
    let p = kernel_profile::by_name("ext4").unwrap();
    let opts = options(
        "ext4",
        &p.mount_options,
        fs_bytes,
        &exp.device,
        spec.read_ahead_kb,
        Some(spec.max_sectors_kb),
    );
    let kernel = kernel_file(
        &opts,
        |m| random_read::dd_write(&m.join("dd-buffered"), file_bytes),
        "dd-buffered",
    );
    let engine = engine_file(
        &one_file(fs_bytes, "dd-buffered", file_bytes),
        "dd-buffered",
    );
    compare("request-merging buffered", &kernel, &engine, file_bytes);
}
