//! A population's stream, every operation kind (mkdir, create, append by the creating
//! writer, extend, truncate, unlink, rename, rmdir, symlink, link, mknod), replayed on ext4,
//! XFS and btrfs on zram: the tree the kernel holds afterwards is the one the population
//! describes; FIEMAP's extents cover exactly each file's blocks; on ext4 they are the runs
//! libext2fs reads back from the unmounted image (two readers of one layout); a stream the
//! kernel refuses mid-way stops at the operation, named, and leaves no device or mount.

mod common;

use common::*;
use layoutlab_rig::fiemap::{FileLayout, FIEMAP_EXTENT_UNWRITTEN};
use layoutlab_rig::{
    age_kernel, age_kernel_then, apply_ops, ApplyOptions, Backing, FsKind, KernelAgeOptions,
    KernelFs, KernelFsOptions,
};
use layoutlab_workload::{NodeKind, NsOp, Population, PopulationStats};
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

const MIB: u64 = 1 << 20;

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn zram_devices() -> Vec<String> {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("zram"))
        .collect()
}

/// A stream with every kind of operation on 1 GiB: a tree of directories and files (sizes
/// log-uniform up to 16 MiB, some written by two writers taking turns), symlinks fast and
/// slow, hard links, device nodes; then aging: unlinks, truncates, extends, renames across
/// directories, rmdirs of emptied directories, and new files in the freed space. Checked by
/// `check_tree`.
fn every_kind_stream(seed: u64) -> Population {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut ops = Vec::new();
    let mut dirs = vec![String::new()];
    for i in 0..12 {
        let parent = dirs[rng.gen_range(0..dirs.len())].clone();
        let path = join(&parent, &format!("d{i:02}"));
        ops.push(NsOp::Mkdir { path: path.clone() });
        dirs.push(path);
    }
    let mut files: Vec<(String, u64)> = Vec::new();
    let size = |rng: &mut rand_chacha::ChaCha8Rng| 2f64.powf(rng.gen_range(0.0..24.0)) as u64;
    for i in 0..300 {
        let dir = dirs[rng.gen_range(0..dirs.len())].clone();
        let path = join(&dir, &format!("f{i:03}"));
        let bytes = size(&mut rng);
        ops.push(NsOp::Create {
            path: path.clone(),
            bytes,
        });
        files.push((path, bytes));
        // every tenth file: two writers take turns appending (the earlier one kept open)
        if i % 10 == 9 {
            let (a, b) = (files[i - 1].0.clone(), files[i].0.clone());
            for k in 0..4 {
                ops.push(NsOp::Append {
                    path: if k % 2 == 0 { a.clone() } else { b.clone() },
                    bytes: 64 * 1024 + k,
                });
            }
        }
    }
    // names of other kinds
    ops.push(NsOp::Symlink {
        path: "fast".into(),
        target: "d00/f000".into(),
    });
    ops.push(NsOp::Symlink {
        path: join(&dirs[2], "slow"),
        target: "x".repeat(300),
    });
    ops.push(NsOp::Link {
        path: join(&dirs[3], "hard"),
        target: files[5].0.clone(),
    });
    ops.push(NsOp::Link {
        path: "hard2".into(),
        target: files[6].0.clone(),
    });
    for (name, node, major, minor) in [
        ("null", NodeKind::Char, 1, 3),
        ("loop99", NodeKind::Block, 7, 99),
        ("fifo", NodeKind::Fifo, 0, 0),
        ("sock", NodeKind::Socket, 0, 0),
    ] {
        ops.push(NsOp::Mknod {
            path: join(&dirs[4], name),
            node,
            major,
            minor,
        });
    }
    // aging: every third file unlinked, every fifth of the rest truncated, every seventh
    // extended, every eleventh renamed into the fifth directory
    let mut live: Vec<String> = Vec::new();
    for (i, (path, bytes)) in files.iter().enumerate() {
        if i % 3 == 0 {
            ops.push(NsOp::Unlink { path: path.clone() });
        } else {
            live.push(path.clone());
            if i % 5 == 0 {
                ops.push(NsOp::Truncate {
                    path: path.clone(),
                    bytes: bytes / 3,
                });
            }
        }
    }
    // file 6 lives on as 'hard2', its other name
    for (i, path) in live.iter().enumerate() {
        if i % 7 == 0 {
            ops.push(NsOp::Extend {
                path: path.clone(),
                bytes: 100_000 + i as u64,
            });
        }
    }
    for (i, path) in live.iter().enumerate() {
        if i % 11 == 0 && !path.starts_with(&format!("{}/", dirs[5])) {
            ops.push(NsOp::Rename {
                path: path.clone(),
                to: join(&dirs[5], &format!("moved{i}")),
            });
        }
    }
    // an emptied directory goes: a new one, filled, emptied, removed
    ops.push(NsOp::Mkdir { path: "tmp".into() });
    ops.push(NsOp::Create {
        path: "tmp/x".into(),
        bytes: 5 * MIB,
    });
    ops.push(NsOp::Unlink {
        path: "tmp/x".into(),
    });
    ops.push(NsOp::Rmdir { path: "tmp".into() });
    // new files in the freed space
    for i in 0..60 {
        ops.push(NsOp::Create {
            path: join(&dirs[6], &format!("new{i:02}")),
            bytes: size(&mut rng),
        });
    }
    let pop = Population {
        name: format!("every-kind-{seed}"),
        fs_bytes: 1 << 30,
        ops,
    };
    pop.check_tree().unwrap();
    pop
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The tree under `root` as the population's statistics count it (lost+found counted when
/// present, else added: `stats()` counts it as e2fsck does), and every regular file's size
/// by each of its names.
fn walk(root: &Path) -> (PopulationStats, HashMap<String, u64>) {
    let mut st = PopulationStats {
        directories: 1,
        ..Default::default()
    };
    let mut sizes = HashMap::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut has_lost_found = false;
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(root.join(&rel)).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let path = join(&rel, &name);
            let md = std::fs::symlink_metadata(root.join(&path)).unwrap();
            let ft = md.file_type();
            st.max_depth = st.max_depth.max(path.matches('/').count() as u64 + 1);
            if ft.is_dir() {
                st.directories += 1;
                if path == "lost+found" {
                    has_lost_found = true;
                } else {
                    stack.push(path);
                }
                continue;
            }
            if !seen.insert(md.ino()) {
                st.hard_links += 1;
                if ft.is_file() {
                    sizes.insert(path, md.len());
                }
                continue;
            }
            if ft.is_file() {
                st.regular_files += 1;
                st.file_bytes += md.len();
                st.data_blocks += md.len().div_ceil(4096);
                sizes.insert(path, md.len());
            } else if ft.is_symlink() {
                st.symlinks += 1;
                if md.len() <= 59 {
                    st.fast_symlinks += 1;
                } else {
                    st.data_blocks += 1;
                }
            } else if ft.is_char_device() {
                st.char_devices += 1;
            } else if ft.is_block_device() {
                st.block_devices += 1;
            } else if ft.is_fifo() {
                st.fifos += 1;
            } else if ft.is_socket() {
                st.sockets += 1;
            }
        }
    }
    if !has_lost_found {
        st.directories += 1;
    }
    (st, sizes)
}

/// Checks the tree the kernel holds against the population, and FIEMAP's extents against
/// the files' sizes.
fn check_tree_and_extents(
    kind: FsKind,
    pop: &Population,
    walked: &(PopulationStats, HashMap<String, u64>),
    files: &[FileLayout],
) {
    let want = pop.stats();
    let (got, sizes) = walked;
    let key = |s: &PopulationStats| {
        (
            s.regular_files,
            s.directories,
            s.symlinks,
            s.fast_symlinks,
            s.hard_links,
            (s.char_devices, s.block_devices, s.fifos, s.sockets),
            s.file_bytes,
            s.data_blocks,
            s.max_depth,
        )
    };
    assert_eq!(key(got), key(&want), "{kind:?}: walked vs stats()");
    // every file by the name the population gives it, with its size
    for (name, bytes) in pop.file_sizes() {
        assert_eq!(sizes.get(name), Some(&bytes), "{kind:?}: {name}");
    }
    assert_eq!(files.len() as u64, want.regular_files, "{kind:?}");
    for f in files {
        // FIEMAP maps exactly the blocks below the end of file: no gap, no overlap
        assert_eq!(
            f.covered_blocks(4096),
            f.eof_blocks(4096),
            "{kind:?} {}: {:?}",
            f.path,
            f.extents
        );
        let mapped: u64 = f
            .extents
            .iter()
            .filter(|e| e.logical < f.eof_blocks(4096) * 4096)
            .map(|e| (e.logical + e.length).min(f.eof_blocks(4096) * 4096) - e.logical)
            .sum();
        assert!(
            mapped.div_ceil(4096) == f.eof_blocks(4096),
            "{kind:?} {}: overlapping extents {:?}",
            f.path,
            f.extents
        );
        let inline = f.extents.iter().any(|e| e.is_inline());
        let blocks: u64 = f.runs(4096).iter().map(|r| r.len).sum();
        if inline {
            // btrfs keeps files of at most max_inline (2048 bytes by default) in its b-tree
            assert_eq!(kind, FsKind::Btrfs, "{}: inline on {kind:?}", f.path);
            assert!(
                f.size <= 2048,
                "{kind:?} {}: inline {} bytes",
                f.path,
                f.size
            );
        } else {
            assert_eq!(blocks, f.eof_blocks(4096), "{kind:?} {}", f.path);
        }
        assert!(
            f.extents.iter().all(|e| !e.is_unplaced()),
            "{kind:?} {}",
            f.path
        );
        // only XFS maps blocks beyond the end of file (speculative preallocation), and
        // those are unwritten
        let end = f.eof_blocks(4096) * 4096;
        for e in f.extents.iter().filter(|e| e.logical + e.length > end) {
            assert_eq!(kind, FsKind::Xfs, "{} beyond EOF: {:?}", f.path, f.extents);
            assert!(
                e.logical >= end && e.flags & FIEMAP_EXTENT_UNWRITTEN != 0,
                "{kind:?} {}: {:?}",
                f.path,
                f.extents
            );
        }
    }
    let beyond: u64 = files.iter().map(|f| f.bytes_beyond_eof(4096)).sum();
    assert_eq!(
        beyond > 0,
        kind == FsKind::Xfs,
        "{kind:?}: {beyond} bytes beyond EOF"
    );
}

fn replay_every_kind(kind: FsKind) {
    let pop = every_kind_stream(7);
    let mut opts = KernelAgeOptions::disk(kind, pop.fs_bytes).unwrap();
    // writeback every 8 MiB: several syncs in the stream
    opts.apply.writeback_bytes = 8 * MIB;
    let mut last = 0;
    let t = std::time::Instant::now();
    let (run, walked) = age_kernel_then(
        &pop,
        &opts,
        &mut |p| {
            assert_eq!(p.ops_done, last + 1);
            last = p.ops_done;
        },
        walk,
    )
    .unwrap();
    assert_eq!(last, pop.ops.len());
    println!(
        "{kind:?}: {} ops, {} MB in {:.2} s ({} writebacks); {:?}",
        run.apply.operations,
        run.apply.bytes_written / 1_000_000,
        t.elapsed().as_secs_f64(),
        run.apply.writebacks,
        run.summary
    );
    assert_eq!(run.apply.bytes_written, pop.file_bytes());
    // a writeback once 8 MiB have been written since the last one
    let (mut dirty, mut writebacks) = (0, 0);
    for op in &pop.ops {
        if let NsOp::Create { bytes, .. }
        | NsOp::Append { bytes, .. }
        | NsOp::Extend { bytes, .. } = op
        {
            dirty += bytes;
            if dirty >= 8 * MIB {
                (dirty, writebacks) = (0, writebacks + 1);
            }
        }
    }
    assert_eq!(run.apply.writebacks, writebacks);
    check_tree_and_extents(kind, &pop, &walked, &run.files);
    assert_eq!(run.summary.files, pop.stats().regular_files);
    assert!(run.summary.layout_score > 0.0 && run.summary.layout_score <= 1.0);
    assert!(run.summary.fragments.max >= 1);
    if kind == FsKind::Ext4 {
        assert_eq!(run.fsck_clean, Some(true), "{:?}", run.fsck_output);
        // two readers of one layout: FIEMAP (the kernel) and libext2fs (the unmounted image)
        let plan = run.plan.as_ref().unwrap();
        let by_ino: HashMap<u64, &layoutlab_layout::PlannedInode> =
            plan.inodes.iter().map(|i| (u64::from(i.ino), i)).collect();
        let mut compared = 0;
        for f in &run.files {
            let i = by_ino[&f.ino];
            assert_eq!(i.size_bytes, f.size, "{}", f.path);
            assert_eq!(f.runs(4096), i.data, "{}: FIEMAP vs inspect", f.path);
            assert_eq!(f.fragments(4096), i.fragments(), "{}", f.path);
            compared += 1;
        }
        assert_eq!(compared, run.files.len());
    }
}

#[test]
fn every_op_kind_on_ext4_xfs_btrfs_leaves_the_populations_tree() {
    let _one = one_at_a_time();
    if !root_or_skip("every_op_kind_on_ext4_xfs_btrfs_leaves_the_populations_tree") {
        return;
    }
    let zram_before = zram_devices();
    for kind in [FsKind::Ext4, FsKind::Xfs, FsKind::Btrfs] {
        replay_every_kind(kind);
    }
    assert_eq!(zram_devices(), zram_before, "a zram device was left");
}

/// The ext4 oracle on a stream with more fragmentation: small files freed between big ones,
/// then big appends by two writers into the holes.
#[test]
fn ext4_fiemap_equals_the_inspected_plan_after_fragmenting_aging() {
    let _one = one_at_a_time();
    if !root_or_skip("ext4_fiemap_equals_the_inspected_plan_after_fragmenting_aging") {
        return;
    }
    let mut ops = Vec::new();
    for i in 0..400 {
        ops.push(NsOp::Create {
            path: format!("s{i:03}"),
            bytes: 64 * 1024,
        });
    }
    for i in (0..400).step_by(2) {
        ops.push(NsOp::Unlink {
            path: format!("s{i:03}"),
        });
    }
    ops.push(NsOp::Create {
        path: "a".into(),
        bytes: 0,
    });
    ops.push(NsOp::Create {
        path: "b".into(),
        bytes: 0,
    });
    for k in 0..40 {
        ops.push(NsOp::Append {
            path: if k % 2 == 0 { "a" } else { "b" }.into(),
            bytes: 256 * 1024,
        });
    }
    let pop = Population {
        name: "holes".into(),
        fs_bytes: 256 * MIB,
        ops,
    };
    let (plan, run) = layoutlab_rig::kernel_plan(&pop, 4, MIB, &mut |_| {}).unwrap();
    let by_ino: HashMap<u64, _> = plan.inodes.iter().map(|i| (u64::from(i.ino), i)).collect();
    let mut frags = BTreeMap::new();
    for f in &run.files {
        assert_eq!(f.runs(4096), by_ino[&f.ino].data, "{}", f.path);
        frags.insert(f.path.clone(), f.fragments(4096));
    }
    println!(
        "fragments: a {} b {}; {:?}",
        frags["a"], frags["b"], run.summary
    );
    assert_eq!(run.files.len(), 202);
}

/// A path longer than PATH_MAX passes check_tree (each name is at most 255 bytes) but the
/// kernel refuses it: the replay stops at that operation, named with its errno, and the
/// KernelFs tears everything down.
#[test]
fn a_stream_the_kernel_refuses_stops_at_the_op_and_leaves_nothing() {
    let _one = one_at_a_time();
    if !root_or_skip("a_stream_the_kernel_refuses_stops_at_the_op_and_leaves_nothing") {
        return;
    }
    let zram_before = zram_devices();
    let mut ops = vec![NsOp::Create {
        path: "first".into(),
        bytes: MIB,
    }];
    let mut path = String::new();
    for _ in 0..17 {
        path = join(&path, &"n".repeat(250));
        ops.push(NsOp::Mkdir { path: path.clone() });
    }
    let pop = Population {
        name: "too-deep".into(),
        fs_bytes: 256 * MIB,
        ops,
    };
    pop.check_tree().unwrap();
    // the kernel's limit: the path given to mkdir(2), mount point included, < 4096 bytes
    let opts = KernelFsOptions {
        kind: FsKind::Ext4,
        mkfs_args: vec![],
        mount_options: String::new(),
        bytes: pop.fs_bytes,
        backing: Backing::Zram,
        resident_bytes: 64 * MIB,
        queue: layoutlab_rig::QueueSpec::default(),
    };
    let fs = KernelFs::create(&opts).unwrap();
    let mount_point = fs.mount_point().to_path_buf();
    let backing_attr = format!("/sys/block/loop{}/loop/backing_file", fs.device().number());
    let backing = std::fs::read_to_string(&backing_attr).unwrap();
    let depth_ok = (4095 - mount_point.as_os_str().len()) / 251;
    let err = apply_ops(&mount_point, &pop, &ApplyOptions::default(), &mut |_| {}).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("ops[{}] (mkdir '", depth_ok + 1)) && msg.contains("os error 36"),
        "{msg}"
    );
    // what ran before the refused operation is there
    assert_eq!(
        std::fs::metadata(mount_point.join("first")).unwrap().len(),
        MIB
    );
    drop(fs);
    assert!(!is_mounted(&mount_point), "left a mount");
    assert_ne!(
        std::fs::read_to_string(&backing_attr).unwrap_or_default(),
        backing,
        "left the loop device"
    );
    // the whole run: the same error through age_kernel, and nothing left
    let e = age_kernel(
        &pop,
        &KernelAgeOptions::disk(FsKind::Ext4, pop.fs_bytes).unwrap(),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("(mkdir '") && e.contains("os error 36"), "{e}");
    assert_eq!(zram_devices(), zram_before, "a zram device was left");
}

/// A stream whose live data at its peak exceeds the file system is refused before anything
/// is written, naming where the peak is; nothing is left.
#[test]
fn a_stream_larger_than_the_device_is_refused_before_writing() {
    let _one = one_at_a_time();
    if !root_or_skip("a_stream_larger_than_the_device_is_refused_before_writing") {
        return;
    }
    let zram_before = zram_devices();
    // 3 x 100 MiB written, but at most 200 MiB live at once: fits 256 MiB
    let mk = |p: &str| NsOp::Create {
        path: p.into(),
        bytes: 100 * MIB,
    };
    let rm = |p: &str| NsOp::Unlink { path: p.into() };
    let fits = Population {
        name: "fits".into(),
        fs_bytes: 256 * MIB,
        ops: vec![mk("a"), mk("b"), rm("a"), mk("c")],
    };
    let opts = KernelAgeOptions::disk(FsKind::Ext4, fits.fs_bytes).unwrap();
    let run = age_kernel(&fits, &opts, &mut |_| {}).unwrap();
    assert_eq!(run.apply.peak_live_bytes, 200 * MIB);
    assert_eq!(run.summary.files, 2);
    let full = Population {
        name: "full".into(),
        ops: vec![mk("a"), mk("b"), mk("c")],
        ..fits
    };
    let e = age_kernel(&full, &opts, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("after ops[2]") && e.contains(&format!("{}", 300 * MIB)),
        "{e}"
    );
    assert_eq!(zram_devices(), zram_before, "a zram device was left");
}

/// A panic in the middle of a stream (here in the progress callback) unwinds through the
/// replay: the KernelFs is dropped and takes the mount, loop device and zram with it.
#[test]
fn a_panic_mid_stream_leaves_nothing() {
    let _one = one_at_a_time();
    if !root_or_skip("a_panic_mid_stream_leaves_nothing") {
        return;
    }
    let zram_before = zram_devices();
    let mounts_before = layoutlab_mounts();
    let pop = Population {
        name: "panics".into(),
        fs_bytes: 256 * MIB,
        ops: (0..10)
            .map(|i| NsOp::Create {
                path: format!("f{i}"),
                bytes: MIB,
            })
            .collect(),
    };
    let opts = KernelAgeOptions::disk(FsKind::Xfs, 512 * MIB).unwrap();
    let mut mounted_during = Vec::new();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        age_kernel(&pop, &opts, &mut |p| {
            if p.ops_done == 5 {
                mounted_during = layoutlab_mounts();
                panic!("stop at op 5");
            }
        })
    }));
    assert!(r.is_err());
    assert_eq!(
        mounted_during.len(),
        mounts_before.len() + 1,
        "the file system was mounted during the stream"
    );
    assert_eq!(layoutlab_mounts(), mounts_before, "a mount was left");
    assert_eq!(zram_devices(), zram_before, "a zram device was left");
}

/// Mount points of this process's rig (its temp mount directories carry the pid).
fn layoutlab_mounts() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let pid = format!("-{}-", std::process::id());
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(4).map(str::to_string))
        .filter(|m| m.contains("layoutlab") && m.contains(&pid))
        .collect()
}
