//! large-delete's kernel-written files through a direct-I/O loop device lie where the buffered
//! loop device's writes put them (issue 28: the scale-1 write made cheaper without moving a
//! block).
//!
//! The experiment makes each file system on the buffered loop device it traces; with
//! `write = "direct-loop"` ([`large_delete::write_file`]) it remounts the file system through a
//! loop device with direct I/O for the untraced write of the zeros (one copy into zram instead
//! of two), then back. The file system's allocator sees the same writes either way; what could
//! differ is timing (writeback starts and ends at other moments) and the logical block size the
//! loop presents (4 KiB instead of 512 bytes). So, for each file system that takes the direct
//! path and each variant, at a size below the flusher's background threshold (one writeback pass
//! per fsync or fdatasync, see ext4_engine.rs's header for what happens above it), the test
//! writes the file both ways on fresh file systems made alike and asks:
//! - **the same FIEMAP** of `big` (and of `other`, the fragmented variant's second writer's
//!   file): every extent's logical offset, physical address, length and flags;
//! - on btrfs, whose FIEMAP merges adjacent file extents, also **the same file extent items and
//!   checksum items** (`btrfs inspect-internal dump-tree`), what the delete removes.
//!
//! XFS is not on the direct path (its 512-byte sectors do not mount on the 4 KiB loop): the test
//! checks that it is written buffered. Root only (zram, loop devices, mounts).

use layoutlab_experiments::{experiment, kernel_profile, large_delete};
use layoutlab_rig::{fiemap, Backing, FsKind, KernelFs, KernelFsOptions, RigLock};

const MIB: u64 = 1 << 20;

/// A 500 MB file on 1.25 GB: under the background threshold of a machine with more than 5 GB
/// available, so one writeback pass lays out each synced part.
const SCALE: f64 = 0.005;

fn root_or_skip(test: &str) -> bool {
    if layoutlab_rig::is_root() {
        // The signal handlers alone: a failing assertion unwinds (and libtest reports it).
        layoutlab_rig::cleanup::install_signal_handlers();
        return true;
    }
    eprintln!("SKIP {test}: needs root (zram, loop devices, mount)");
    false
}

/// What one write leaves: the FIEMAP of each file, and (btrfs) the dump-tree lines of the file
/// extent and checksum items.
#[derive(Debug, PartialEq)]
struct Written {
    path: &'static str,
    extents: Vec<(&'static str, Vec<fiemap::Extent>)>,
    btrfs_items: Vec<String>,
}

fn write_once(fs: &str, variant: &str, write: &str, lock: &RigLock) -> Written {
    write_bounded(fs, variant, write, None, lock)
}

/// [`write_once`] with the writer's memory cgroup set to `memory_mib` (0: none) instead of
/// the experiment's.
fn write_bounded(
    fs: &str,
    variant: &str,
    write: &str,
    memory_mib: Option<u64>,
    lock: &RigLock,
) -> Written {
    let exp = experiment::load("large-delete").unwrap();
    let mut spec: large_delete::LargeDeleteSpec = exp.params().unwrap();
    spec.write = write.into();
    if let Some(m) = memory_mib {
        spec.write_memory_mib = m;
    }
    let (file_bytes, fs_bytes) = large_delete::sizes(&spec, SCALE);
    let p = kernel_profile::by_name(fs).unwrap();
    let opts = KernelFsOptions {
        kind: p.fs_kind().unwrap(),
        mkfs_args: p.mkfs_args.clone(),
        mount_options: p.mount_options.clone(),
        bytes: fs_bytes,
        backing: Backing::Zram,
        resident_bytes: fs_bytes / 50 + 64 * MIB,
        queue: layoutlab_experiments::support::capture_queue(&exp.device, Some(128), None).unwrap(),
    };
    let mut kfs = KernelFs::create_holding(&opts, lock).unwrap();
    let path = large_delete::write_file(&mut kfs, &spec, fs, variant, file_bytes).unwrap();
    // As the experiment: remounted (cold) before the layout is read and the delete traced.
    kfs.remount().unwrap();
    assert_eq!(
        kfs.device().queue().unwrap().logical_block_bytes,
        512,
        "{fs}: the file system is back on the traced presentation"
    );
    let names: &[&'static str] = if variant == "contiguous" {
        &["big"]
    } else {
        &["big", "other"]
    };
    let extents = names
        .iter()
        .map(|n| {
            let e = fiemap::fiemap(&kfs.mount_point().join(n)).unwrap();
            let covered: u64 = e.iter().map(|x| x.length).sum();
            assert!(covered >= file_bytes, "{fs} {n}: {covered} bytes mapped");
            (*n, e)
        })
        .collect();
    let btrfs_items = if opts.kind == FsKind::Btrfs {
        kfs.unmount_then(|dev| {
            let mut lines = Vec::new();
            for tree in ["5", "7"] {
                let out = std::process::Command::new("btrfs")
                    .args(["inspect-internal", "dump-tree", "-t", tree])
                    .arg(dev)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "dump-tree -t {tree}");
                let text = String::from_utf8_lossy(&out.stdout);
                let mut in_extent_data = false;
                for l in text.lines().map(str::trim) {
                    // "item 6 key (257 EXTENT_DATA 0) itemoff 15813 itemsize 53", then a few
                    // lines on, "extent data disk byte B nr N"; checksum items by key; node
                    // pointers "key (K) block B gen G" by key and block (the generation counts
                    // transactions, one more for the direct path's extra mount).
                    if l.starts_with("item ") {
                        in_extent_data = l.contains("EXTENT_DATA");
                        if in_extent_data || l.contains("EXTENT_CSUM") {
                            let key = l.split(" itemoff").next().unwrap_or(l);
                            lines.push(key.split_once(" key ").map_or(key, |k| k.1).to_string());
                        }
                    } else if in_extent_data && l.starts_with("extent data disk byte") {
                        lines.push(l.to_string());
                    } else if l.starts_with("key (") {
                        lines.push(l.split(" gen ").next().unwrap_or(l).to_string());
                    }
                }
            }
            lines
        })
        .unwrap()
    } else {
        Vec::new()
    };
    Written {
        path,
        extents,
        btrfs_items,
    }
}

fn same_layout_both_ways(fs: &str, variants: &[&str]) {
    // Held for the whole comparison: the file systems are made one after another.
    let lock = RigLock::acquire().unwrap();
    for &variant in variants {
        let buffered = write_once(fs, variant, "buffered", &lock);
        let direct = write_once(fs, variant, "direct-loop", &lock);
        assert_eq!(buffered.path, "buffered loop");
        assert_eq!(direct.path, "direct-I/O loop", "{fs} takes the direct path");
        for ((name, b), (_, d)) in buffered.extents.iter().zip(&direct.extents) {
            println!(
                "{fs} {variant} {name}: {} extents buffered, {} direct",
                b.len(),
                d.len()
            );
            assert_eq!(b, d, "{fs} {variant} {name}: FIEMAP buffered vs direct");
        }
        if fs == "btrfs" {
            println!(
                "{fs} {variant}: {} extent and checksum item lines",
                buffered.btrfs_items.len()
            );
            assert!(buffered
                .btrfs_items
                .iter()
                .any(|l| l.contains("EXTENT_CSUM")));
            assert_eq!(
                buffered.btrfs_items, direct.btrfs_items,
                "{fs} {variant}: file extent and checksum items, tree-block addresses"
            );
        }
    }
}

#[test]
fn btrfs_direct_loop_write_lays_out_as_buffered() {
    if root_or_skip("btrfs_direct_loop_write_lays_out_as_buffered") {
        same_layout_both_ways("btrfs", &["contiguous"]);
    }
}

/// ext4's fragmented file (its contiguous one comes from the engine): each 8 MiB turn ends in
/// an fdatasync, so delayed allocation places every turn when it is synced, whichever loop
/// carries the writes.
#[test]
fn ext4_fragmented_direct_loop_write_lays_out_as_buffered() {
    if root_or_skip("ext4_fragmented_direct_loop_write_lays_out_as_buffered") {
        same_layout_both_ways("ext4", &["fragmented"]);
    }
}

/// Every other kernel-written file stays on the buffered loop whatever `write` says
/// (`DIRECT_LOOP_PROVEN`): XFS (a direct-I/O loop presents 4 KiB sectors, and XFS made on
/// 512-byte ones refuses to mount there); ext4-2007's
/// (its contiguous 500 MB file made 258 extents through the direct loop, 260 buffered; kernel
/// profiles of one kind are told apart, so ext4's proof does not carry it); ext4's contiguous
/// file when the kernel writes it (`--set layout=kernel`: not compared, the engine writes it
/// by default); btrfs's fragmented pair (at 500 MB the same FIEMAP and file extent and checksum
/// items through either loop, its checksum-tree leaves elsewhere by as much as between two
/// buffered writes; but at scale 1 its delete priced 74.05-74.59 s in all three direct-loop
/// runs against 68.44-73.39 s in all six buffered ones: the leaves placed by the direct loop's
/// timing, docs/experiments/large-delete.md).
#[test]
fn unproven_files_are_written_buffered() {
    if !root_or_skip("unproven_files_are_written_buffered") {
        return;
    }
    let lock = RigLock::acquire().unwrap();
    for (fs, variant) in [
        ("xfs", "contiguous"),
        ("ext4-2007", "contiguous"),
        ("ext4-2007", "fragmented"),
        ("ext4", "contiguous"),
        ("btrfs", "fragmented"),
    ] {
        let w = write_once(fs, variant, "direct-loop", &lock);
        assert_eq!(w.path, "buffered loop", "{fs} {variant}");
    }
}

/// The kernel-written files the experiment may write at once ([`large_delete::AT_ONCE_PROVEN`],
/// grouped by [`large_delete::batches`]), each pair of them, lie where each lies written
/// alone. Each file system has its own zram and loop devices, so two writes meet only in what
/// the machine shares: the CPUs (timing) and the page cache's dirty limits (when writeback
/// starts). At this size both files of a pair stay under the flusher's background threshold,
/// so each is laid out by its own fsyncs and fdatasyncs; above it (scale 1) writeback timing
/// moves some files between runs written alone as well (docs/experiments/large-delete.md,
/// "Scale 1 cost").
#[test]
fn files_written_at_once_lay_out_as_written_alone() {
    if !root_or_skip("files_written_at_once_lay_out_as_written_alone") {
        return;
    }
    let exp = experiment::load("large-delete").unwrap();
    let spec: large_delete::LargeDeleteSpec = exp.params().unwrap();
    let (_, fs_bytes) = large_delete::sizes(&spec, SCALE);
    let queue =
        layoutlab_experiments::support::capture_queue(&exp.device, Some(128), None).unwrap();
    let jobs = large_delete::jobs(&spec, fs_bytes, &queue, &std::env::temp_dir()).unwrap();
    // With two lanes the shipped runs write some of them at once.
    assert!(large_delete::batches(&jobs, 2).iter().any(|g| g.len() > 1));
    let files = large_delete::AT_ONCE_PROVEN;
    let lock = RigLock::acquire().unwrap();
    let alone: Vec<Written> = files
        .iter()
        .map(|(fs, variant)| write_once(fs, variant, &spec.write, &lock))
        .collect();
    for a in 0..files.len() {
        for b in a + 1..files.len() {
            let at_once: Vec<Written> = std::thread::scope(|scope| {
                let threads: Vec<_> = [a, b]
                    .into_iter()
                    .map(|i| {
                        let ((fs, variant), lock, write) = (files[i], &lock, &spec.write);
                        scope.spawn(move || write_once(fs, variant, write, lock))
                    })
                    .collect();
                threads.into_iter().map(|t| t.join().unwrap()).collect()
            });
            for (i, w) in [a, b].into_iter().zip(&at_once) {
                let ((fs, variant), beside) = (files[i], files[a + b - i]);
                let x = &alone[i];
                assert_eq!(x.path, w.path, "{fs} {variant}: the same write path");
                for ((name, e), (_, f)) in x.extents.iter().zip(&w.extents) {
                    println!(
                        "{fs} {variant} {name} beside {beside:?}: {} extents alone, {} at once",
                        e.len(),
                        f.len()
                    );
                    assert_eq!(e, f, "{fs} {variant} {name} beside {beside:?}: FIEMAP");
                }
                assert_eq!(
                    x.btrfs_items, w.btrfs_items,
                    "{fs} {variant} beside {beside:?}: file extent and checksum items, tree-block addresses"
                );
            }
        }
    }
}

/// A memory cgroup around the writer (`write_memory_mib`) moves no block of the files it is
/// used for ([`large_delete::MEMORY_BOUND_PROVEN`]): each, on the experiment's own write path,
/// bounded to 64 MiB (the 500 MB file passes through it eight times over, so reclaim inside the
/// cgroup frees the writer's pages) against unbounded. The fragmented pairs are allocated at
/// each fdatasync; ext4's contiguous file, under delayed allocation, by the writeback of the
/// closing fsync either way. Every other kernel-written file is written unbounded.
#[test]
fn memory_bounded_writer_lays_out_as_unbounded() {
    if !root_or_skip("memory_bounded_writer_lays_out_as_unbounded") {
        return;
    }
    let exp = experiment::load("large-delete").unwrap();
    let spec: large_delete::LargeDeleteSpec = exp.params().unwrap();
    assert!(spec.write_memory_mib > 0, "the shipped writer is bounded");
    let lock = RigLock::acquire().unwrap();
    for (fs, variant) in large_delete::MEMORY_BOUND_PROVEN {
        let free = write_bounded(fs, variant, &spec.write, Some(0), &lock);
        let bounded = write_bounded(fs, variant, &spec.write, Some(64), &lock);
        assert_eq!(free.path, bounded.path, "{fs} {variant}: the same loop");
        for ((name, f), (_, b)) in free.extents.iter().zip(&bounded.extents) {
            println!(
                "{fs} {variant} {name}: {} extents unbounded, {} in 64 MiB",
                f.len(),
                b.len()
            );
            assert_eq!(f, b, "{fs} {variant} {name}: FIEMAP unbounded vs 64 MiB");
        }
    }
    for (fs, variant) in [
        ("xfs", "contiguous"),
        ("btrfs", "contiguous"),
        ("btrfs", "fragmented"),
        ("ext4-2007", "contiguous"),
        ("ext4-2007", "fragmented"),
    ] {
        assert!(
            !large_delete::memory_bound_applies(&spec, fs, variant),
            "{fs} {variant} is written unbounded"
        );
    }
}
