//! The directory filler writes the same bytes as one `ext2fs_link()` per entry.
//!
//! `DirWriter::Fill` places each directory's entries where successive ext2fs_link() calls
//! would (first fit), reading and writing every directory block once. It must be the very
//! image the slow path makes: every byte equal, but the superblocks' lifetime kilobytes
//! written (and with it their checksum), which libext2fs counts from its own I/O (the slow
//! path writes more). Times are the mkfs time on both (ll_open sets fs->now).

mod common;

use common::*;
use layoutlab_image::{fsck_check, materialize_with_dirs, DirWriter, MapWriter};
use layoutlab_layout::{InodeKind, MapFormat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

/// A tree with crowded, multi-block directories, names of every length (so later short
/// names fall into earlier blocks' slack: first fit, not append), hard links, symlinks and
/// nodes; the root re-planned or left as mke2fs made it (one block).
fn tree(b: &mut Builder, seed: u64, replan_root: bool) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let bs = b.block_bytes;
    let rec = |name: &str| (8 + name.len() as u64 + 3) & !3;
    let dirs: Vec<u32> = std::iter::once(2).chain(12..18).collect();
    // (parent index, name, kind): 0 file, 1 symlink, 2 fifo, 3 hard link
    let mut entries: Vec<(usize, String, u8)> = Vec::new();
    let mut bytes = vec![0u64; dirs.len()];
    // mke2fs's root block holds ".", ".." and "lost+found": keep a third of it for us
    let root_budget = if replan_root { u64::MAX } else { bs / 3 };
    for d in 1..dirs.len() {
        let name = format!("dir{d}");
        let parent = if d == 1 { 0 } else { rng.gen_range(1..d) };
        bytes[parent] += rec(&name);
        entries.push((parent, name, 9));
    }
    for i in 0..900usize {
        let len = rng.gen_range(1..=60);
        let name: String = (0..len)
            .map(|k| (b'a' + ((i * 7 + k * 3) % 26) as u8) as char)
            .collect();
        let name = format!("{name}{i}");
        let mut parent = rng.gen_range(0..dirs.len());
        if parent == 0 && bytes[0] + rec(&name) > root_budget {
            parent = 1;
        }
        bytes[parent] += rec(&name);
        let kind = if i >= 40 && rng.gen_range(0..20) == 0 {
            3
        } else {
            rng.gen_range(0..6).min(2)
        };
        entries.push((parent, name, kind as u8));
    }
    // enough blocks for every entry wherever first fit puts it, and one to spare
    let blocks_of = |d: usize| bytes[d].div_ceil(bs - 40 - 64) + 1;
    if replan_root {
        b.dir(2, 2, "", blocks_of(0));
    }
    let mut ino = 100u32;
    let mut files = Vec::new();
    for (parent, name, kind) in &entries {
        let parent_ino = dirs[*parent];
        match kind {
            9 => {
                let d: usize = name[3..].parse().unwrap();
                b.dir(dirs[d], parent_ino, name, blocks_of(d));
            }
            0 => {
                b.file(ino, parent_ino, name, 100, &[(0, 1)], MapPlace::Inline);
                files.push(ino);
                ino += 1;
            }
            1 => {
                b.symlink(ino, parent_ino, name, "some/target/path");
                ino += 1;
            }
            2 => {
                b.node(ino, parent_ino, name, InodeKind::Fifo, (0, 0));
                ino += 1;
            }
            _ => {
                let target = files[rng.gen_range(0..files.len())];
                b.link(parent_ino, name, target);
            }
        }
    }
}

/// Byte positions where the two images differ, outside s_kbytes_written and
/// s_checksum of any superblock copy.
fn differences(a: &Path, b: &Path) -> Vec<usize> {
    let a = std::fs::read(a).unwrap();
    let b = std::fs::read(b).unwrap();
    assert_eq!(a.len(), b.len());
    // superblock copies: 1 KiB-aligned records with the ext2 magic at 56
    let stamped = |p: usize| {
        let base = p / 1024 * 1024;
        let off = p - base;
        a[base + 56] == 0x53
            && a[base + 57] == 0xEF
            && ((0x178..0x180).contains(&off) || off >= 1020)
    };
    (0..a.len())
        .filter(|&p| a[p] != b[p] && !stamped(p))
        .collect()
}

fn same_image(mkfs_args: &str, extents: bool, replan_root: bool, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let fill = fresh(dir.path(), "fill.img", 64, mkfs_args);
    let link = dir.path().join("link.img");
    std::fs::copy(&fill, &link).unwrap();
    let mut b = Builder::new(&fill);
    if extents {
        b.format = MapFormat::Extents;
    }
    tree(&mut b, seed, replan_root);
    let plan = b.plan.clone();
    materialize_with_dirs(&fill, &plan, MapWriter::Iterate, DirWriter::Fill).unwrap();
    materialize_with_dirs(&link, &plan, MapWriter::Iterate, DirWriter::Link).unwrap();
    let diff = differences(&fill, &link);
    assert!(
        diff.is_empty(),
        "{mkfs_args}: {} bytes differ, first at {:?}",
        diff.len(),
        &diff[..diff.len().min(8)]
    );
    let v = fsck_check(&fill).unwrap();
    assert!(v.clean, "{}", v.output);
    assert_round_trip(&fill, &plan);
}

#[test]
fn fill_equals_link_on_ext3() {
    for seed in 0..3 {
        same_image(EXT3, false, true, seed);
        same_image(EXT3, false, false, seed);
    }
}

#[test]
fn fill_equals_link_on_ext3_with_1k_blocks() {
    same_image("-t ext3 -b 1024 -O ^resize_inode", false, true, 7);
}

#[test]
fn fill_equals_link_on_ext4_with_checksums() {
    // today's ext4: metadata_csum puts a 12-byte tail in every directory block
    for seed in 0..3 {
        same_image("-t ext4 -O metadata_csum", true, true, seed);
        same_image("-t ext4 -O metadata_csum", true, false, seed);
    }
}

#[test]
fn a_directory_too_small_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let image = fresh(dir.path(), "small.img", 16, EXT3);
    let mut b = Builder::new(&image);
    b.dir(12, 2, "d", 1);
    for i in 0..400u32 {
        b.file(
            100 + i,
            12,
            &format!("name-{i:05}"),
            1,
            &[(0, 1)],
            MapPlace::Inline,
        );
    }
    let before = digest(&image);
    let err = materialize_with_dirs(&image, &b.plan, MapWriter::Iterate, DirWriter::Fill)
        .unwrap_err()
        .to_string();
    assert!(err.contains("directory") || err.contains("hold"), "{err}");
    assert_eq!(
        digest(&image),
        before,
        "a refused plan must leave the image as it was"
    );
}
