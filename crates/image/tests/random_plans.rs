//! Seeded random plans: any valid plan — block- or extent-mapped, with symlinks, device
//! nodes, fifos, sockets and hard links — round-trips and passes e2fsck.

mod common;

use common::*;
use layoutlab_image::{fsck_check, materialize_with, MapWriter};
use layoutlab_layout::mapping::MapFormat;
use layoutlab_layout::InodeKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A random tree of directories and files with random sizes, holes and mapping places.
fn random_plan(b: &mut Builder, rng: &mut ChaCha8Rng) {
    let bs = b.block_bytes;
    let mut dirs = vec![2u32];
    let mut ino = 12u32;
    // room for every entry even if all land in one directory
    let dir_blocks = |rng: &mut ChaCha8Rng| if bs == 1024 { 4 } else { rng.gen_range(1..3) };
    if bs == 1024 || rng.gen_bool(0.5) {
        let blocks = dir_blocks(rng);
        b.dir(2, 2, "", blocks);
    }
    let items = rng.gen_range(5..40);
    for i in 0..items {
        let parent = dirs[rng.gen_range(0..dirs.len())];
        let name = format!("n{i}-{}", "x".repeat(rng.gen_range(0..60)));
        let other = rng.gen_range(0..10);
        if other < 3 && i > 0 {
            match other {
                0 => {
                    let len = if rng.gen_bool(0.5) {
                        rng.gen_range(1..60)
                    } else {
                        rng.gen_range(60..bs as usize)
                    };
                    b.symlink(ino, parent, &name, &"t".repeat(len));
                }
                1 => {
                    let kinds = [
                        InodeKind::CharDev,
                        InodeKind::BlockDev,
                        InodeKind::Fifo,
                        InodeKind::Socket,
                    ];
                    let kind = kinds[rng.gen_range(0..4)];
                    let rdev = (rng.gen_range(0..4096), rng.gen_range(0..1 << 20));
                    b.node(ino, parent, &name, kind, rdev);
                }
                _ => {
                    // a hard link to an earlier non-directory, if any
                    let targets: Vec<u32> = b
                        .plan
                        .inodes
                        .iter()
                        .filter(|n| n.kind != InodeKind::Dir)
                        .map(|n| n.ino)
                        .collect();
                    if let Some(&t) = targets.get(rng.gen_range(0..targets.len().max(1))) {
                        b.link(parent, &name, t);
                    }
                }
            }
            ino += rng.gen_range(1..4);
            continue;
        }
        if rng.gen_bool(0.2) {
            let blocks = dir_blocks(rng);
            b.dir(ino, parent, &name, blocks);
            dirs.push(ino);
        } else {
            // log-uniform sizes from a few bytes to ~16 MiB of data
            let blocks = (2f64.powf(rng.gen_range(0.0..12.0)) as u64).max(1);
            let place = if rng.gen_bool(0.5) {
                MapPlace::Inline
            } else {
                MapPlace::Region
            };
            if rng.gen_bool(0.3) {
                // sparse: a few segments anywhere below 5 GiB (TIND for 4 KiB blocks)
                let span = ((5u64 << 30) / bs).min(b.geo.max_logical_blocks() - 64);
                let mut segs: Vec<(u64, u64)> = (0..rng.gen_range(1..5))
                    .map(|_| (rng.gen_range(0..span), rng.gen_range(1..40)))
                    .collect();
                segs.sort_unstable();
                let mut merged: Vec<(u64, u64)> = Vec::new();
                for (s, l) in segs {
                    match merged.last_mut() {
                        Some((ps, pl)) if s <= *ps + *pl => *pl = (*pl).max(s + l - *ps),
                        _ => merged.push((s, l)),
                    }
                }
                let end = merged.last().map(|&(s, l)| s + l).unwrap();
                let size = end * bs - rng.gen_range(0..bs);
                b.file(ino, parent, &name, size, &merged, place);
            } else {
                let size = blocks * bs - rng.gen_range(0..bs);
                b.file(ino, parent, &name, size, &[(0, blocks)], place);
            }
        }
        // inode numbers need not be dense
        ino += rng.gen_range(1..4);
    }
    // the data cursor jumps around: plans need not be sequential on disk
    if rng.gen_bool(0.5) {
        b.cursor = rng.gen_range(0..b.blocks());
    }
}

#[test]
fn random_plans_round_trip_clean() {
    for seed in 0..32u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let (mib, mkfs_args, format) = match seed % 4 {
            0 => (256, EXT3, MapFormat::Blocks),
            1 => (256, "-t ext4 -O ^extent,^64bit", MapFormat::Blocks),
            2 => (128, "-t ext3 -b 1024 -O ^resize_inode", MapFormat::Blocks),
            _ => (256, "-t ext4", MapFormat::Extents),
        };
        let image = fresh(dir.path(), "r.img", mib, mkfs_args);
        let mut b = Builder::new(&image);
        b.format = format;
        b.cursor = rng.gen_range(0..b.blocks() / 2);
        random_plan(&mut b, &mut rng);
        let plan = b.plan.clone();
        let writer = if seed % 2 == 0 {
            MapWriter::Iterate
        } else {
            MapWriter::Bmap
        };
        materialize_with(&image, &plan, writer)
            .unwrap_or_else(|e| panic!("seed {seed} ({mkfs_args}, {writer:?}): {e}"));
        let v = fsck_check(&image).unwrap();
        assert!(v.clean, "seed {seed} ({mkfs_args}): e2fsck:\n{}", v.output);
        assert_round_trip(&image, &plan);
    }
}
