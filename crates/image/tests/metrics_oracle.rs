//! Oracle for the free-space metrics: the real e2freefrag (e2fsprogs) on real images must
//! print exactly the figures `LayoutMetrics` computes — from the plan and its geometry, and
//! from the image's bitmap read back — and the two must agree on every other metric too.
//!
//! The images are aged the simplest honest way: a policy lays out a population, then a seeded
//! random half of its files is dropped from the plan before it is written, so the image holds
//! the holes those files leave (what deleting them would leave).

use std::path::Path;
use std::process::Command;

use layoutlab_image::{fsck_check, inspect, materialize, mkfs, mkfs_profile};
use layoutlab_layout::metrics::LayoutMetrics;
use layoutlab_layout::{policy_by_name, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams};
use layoutlab_workload::populations::tree::TreePopulation;
use layoutlab_workload::Population;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// e2freefrag's report with 1 MiB chunks, from its "Blocksize:" line on (the first line
/// names the device).
fn e2freefrag(image: &Path) -> String {
    let out = Command::new("e2freefrag")
        .args(["-c", "1024"])
        .arg(image)
        .output()
        .expect("e2freefrag (e2fsprogs) is installed: make deps");
    assert!(
        out.status.success(),
        "e2freefrag failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (device, rest) = text.split_once('\n').unwrap();
    assert!(device.starts_with("Device: "), "{text}");
    rest.to_string()
}

/// `plan` without a seeded random `fraction` of its regular files (and their hard links).
fn drop_files(plan: &Plan, fraction: f64, seed: u64) -> (Plan, usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = plan.clone();
    let mut dropped = std::collections::HashSet::new();
    out.inodes.retain(|i| {
        let drop = i.kind == InodeKind::File && rng.gen_bool(fraction);
        if drop {
            dropped.insert(i.ino);
        }
        !drop
    });
    out.links.retain(|l| !dropped.contains(&l.ino));
    (out, dropped.len())
}

/// ubuntu-32g with every count, its file system and its data divided by `divisor`: many small
/// files, directories, symlinks and hard links (as tests/ext4_kernel.rs shrinks it).
fn ubuntu_small(divisor: u64) -> Population {
    let text = include_str!("../../../populations/ubuntu-32g.toml");
    let mut t = TreePopulation::from_toml_str(text, "ubuntu-32g").unwrap();
    let c = &mut t.counts;
    for n in [
        &mut c.directories,
        &mut c.regular_files,
        &mut c.symlinks,
        &mut c.fast_symlinks,
        &mut c.hard_links,
    ] {
        *n = (*n / divisor).max(1);
    }
    t.fs_bytes /= divisor;
    t.file_data_blocks /= divisor;
    t.name = format!("ubuntu-32g/{divisor}");
    t.generate()
}

fn bench5(scale: f64) -> Population {
    layoutlab_workload::population_by_name("bench5")
        .unwrap()
        .scale(scale)
        .unwrap()
}

fn oracle(policy: &str, pop: &Population, seed: u64) {
    let profile_name = layoutlab_layout::policy::default_mkfs_profile(policy).unwrap();
    let profile = MkfsProfile::by_name(profile_name).unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let full = policy_by_name(policy, &PolicyParams::new())
        .unwrap()
        .plan(&geo, pop, seed)
        .unwrap();
    let (plan, dropped) = drop_files(&full, 0.5, seed);
    plan.check(&geo).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join(format!("{policy}.img"));
    let policy = format!("{policy} on {}", pop.name);
    mkfs_profile(&image, pop.fs_bytes, &profile).unwrap();
    materialize(&image, &plan).unwrap_or_else(|e| panic!("{policy}: {e}"));
    let v = fsck_check(&image).unwrap();
    assert!(v.clean, "{policy}: e2fsck:\n{}", v.output);

    let planned = LayoutMetrics::of(&plan, &geo);
    let real = e2freefrag(&image);
    let ours = planned.free_space.e2freefrag_report(geo.block_size_bytes);
    println!(
        "{policy}: {dropped} files dropped, {} free extents, e2freefrag:\n{real}",
        planned.free_space.free_extents
    );
    assert_eq!(ours, real, "{policy}: plan metrics vs e2freefrag");
    // a plan with holes: many extents in several histogram buckets
    assert!(planned.free_space.free_extents > 100, "{policy}");
    assert!(planned.free_space.histogram.len() >= 4, "{policy}");

    let read = inspect(&image).unwrap().metrics();
    assert_eq!(
        read.free_space.e2freefrag_report(geo.block_size_bytes),
        real,
        "{policy}: image metrics vs e2freefrag"
    );
    assert_eq!(read, planned, "{policy}: image metrics vs plan metrics");
}

#[test]
fn ext3_2007_after_deletes_matches_e2freefrag() {
    oracle("ext3-2007", &bench5(0.01), 7);
    oracle("ext3-2007", &ubuntu_small(64), 9);
}

#[test]
fn ext3_metacluster_after_deletes_matches_e2freefrag() {
    oracle("ext3-metacluster", &bench5(0.01), 10);
}

#[test]
fn ext4_2009_after_deletes_matches_e2freefrag() {
    oracle("ext4-2009", &ubuntu_small(64), 8);
}

/// 1 KiB blocks: `s_first_data_block` is 1, so e2freefrag's chunk 0 starts one block late and
/// is never free; the histogram's units run through K and M.
#[test]
fn one_kib_blocks_match_e2freefrag() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("1k.img");
    let args: Vec<String> = ["-t", "ext2", "-b", "1024"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    mkfs(&image, 48 << 20, &args).unwrap();
    let ins = inspect(&image).unwrap();
    assert_eq!(ins.superblock.first_data_block, 1);
    let m = ins.metrics();
    assert_eq!(m.free_space.free_blocks, ins.superblock.free_blocks);
    assert_eq!(m.free_space.e2freefrag_report(1024), e2freefrag(&image));
}

/// The kernel's own layout: today's ext4 (mke2fs -t ext4 through the rig's KernelFs, on zram)
/// gets a seeded random tree of files written with syncs in between, then a random half of
/// them deleted; unmounted, the real e2freefrag and `inspect(..).metrics()` must agree to the
/// character. Once with mke2fs's default for a small file system (1 KiB blocks), once with
/// 4 KiB blocks. Needs root (zram, loop device, mount); skipped with a message otherwise.
#[test]
fn kernel_ext4_after_deletes_matches_e2freefrag() {
    if !layoutlab_rig::is_root() {
        eprintln!("SKIP kernel_ext4_after_deletes_matches_e2freefrag: needs root (zram, loop devices, mount)");
        return;
    }
    for (mkfs_args, seed) in [(vec![], 11u64), (vec!["-b".to_string(), "4096".into()], 12)] {
        let opts = layoutlab_rig::KernelFsOptions {
            kind: layoutlab_rig::FsKind::Ext4,
            mkfs_args: mkfs_args.clone(),
            mount_options: String::new(),
            bytes: 256 << 20,
            backing: layoutlab_rig::Backing::Zram,
            // the file data is zeros, which zram keeps in no memory
            resident_bytes: 64 << 20,
            queue: layoutlab_rig::QueueSpec::default(),
        };
        let fs = layoutlab_rig::KernelFs::create(&opts).unwrap();
        let root = fs.mount_point().to_path_buf();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let zeros = vec![0u8; 1 << 20];
        let mut files = Vec::new();
        for d in 0..8 {
            std::fs::create_dir(root.join(format!("d{d}"))).unwrap();
        }
        for i in 0..600 {
            let path = root.join(format!("d{}/f{i}", rng.gen_range(0..8)));
            // log-uniform 512 B .. 2 MiB
            let bytes = (512.0 * 4096f64.powf(rng.gen::<f64>())) as usize;
            let mut f = std::fs::File::create(&path).unwrap();
            let mut left = bytes;
            while left > 0 {
                let n = left.min(zeros.len());
                std::io::Write::write_all(&mut f, &zeros[..n]).unwrap();
                left -= n;
            }
            files.push(path);
            if i % 25 == 24 {
                fs.sync().unwrap();
            }
        }
        fs.sync().unwrap();
        for path in &files {
            if rng.gen_bool(0.5) {
                std::fs::remove_file(path).unwrap();
            }
        }
        let (real, read) = fs
            .unmount_then(|dev: &Path| {
                let v = fsck_check(dev).unwrap();
                assert!(v.clean, "the kernel's file system: {}", v.output);
                (e2freefrag(dev), inspect(dev).unwrap().metrics())
            })
            .unwrap();
        println!("kernel ext4 {mkfs_args:?}: e2freefrag:\n{real}");
        assert_eq!(
            read.free_space.e2freefrag_report(read.block_size_bytes),
            real,
            "kernel ext4 {mkfs_args:?}"
        );
        assert!(read.free_space.free_extents > 20, "{:?}", read.free_space);
        assert!(read.fragments.files > 200);
    }
}
