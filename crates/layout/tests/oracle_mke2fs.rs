//! Oracle: the real mke2fs (e2fsprogs 1.47) run with `MkfsProfile::mke2fs_args` must make
//! exactly the file system `Geometry::new` computes — group layout, free blocks per group
//! (as ranges), first data block, inode and block counts — as dumpe2fs reports it.

use layoutlab_layout::{Geometry, MkfsProfile};
use std::process::Command;

struct Dumped {
    header: Vec<(String, String)>,
    groups: Vec<DumpedGroup>,
}

#[derive(Debug, Default, PartialEq)]
struct DumpedGroup {
    block_bitmap: u64,
    inode_bitmap: u64,
    inode_table: u64,
    free_blocks: u64,
    free_ranges: Vec<(u64, u64)>,
}

fn first_number(s: &str) -> u64 {
    let digits: String = s
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number in '{s}'"))
}

fn parse_dumpe2fs(text: &str) -> Dumped {
    let mut header = Vec::new();
    let mut groups: Vec<DumpedGroup> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if line.starts_with("Group ") {
            groups.push(DumpedGroup::default());
        } else if groups.is_empty() {
            if let Some((k, v)) = line.split_once(':') {
                header.push((k.trim().to_string(), v.trim().to_string()));
            }
        } else {
            let g = groups.last_mut().unwrap();
            if let Some(rest) = t.strip_prefix("Block bitmap at ") {
                g.block_bitmap = first_number(rest);
            } else if let Some(rest) = t.strip_prefix("Inode bitmap at ") {
                g.inode_bitmap = first_number(rest);
            } else if let Some(rest) = t.strip_prefix("Inode table at ") {
                g.inode_table = first_number(rest);
            } else if t.contains(" free blocks, ") {
                g.free_blocks = first_number(t);
            } else if let Some(rest) = t.strip_prefix("Free blocks:") {
                for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let (a, b) = part.split_once('-').unwrap_or((part, part));
                    g.free_ranges.push((first_number(a), first_number(b)));
                }
            }
        }
    }
    Dumped { header, groups }
}

fn header_value(d: &Dumped, key: &str) -> u64 {
    let v = d
        .header
        .iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("dumpe2fs printed no '{key}'"));
    first_number(&v.1)
}

fn check_size(fs_bytes: u64) {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let geo = Geometry::new(&profile, fs_bytes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("oracle.img");
    let file = std::fs::File::create(&image).unwrap();
    file.set_len(fs_bytes).unwrap();
    drop(file);
    let out = Command::new("mke2fs")
        .args(["-F", "-q"])
        .args(profile.mke2fs_args(fs_bytes))
        .arg(&image)
        .arg(profile.mke2fs_blocks_arg(fs_bytes))
        .output()
        .expect("mke2fs (e2fsprogs) must be installed for the geometry oracle");
    assert!(
        out.status.success(),
        "mke2fs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("dumpe2fs")
        .arg(&image)
        .output()
        .expect("dumpe2fs");
    assert!(out.status.success());
    let d = parse_dumpe2fs(&String::from_utf8_lossy(&out.stdout));

    assert_eq!(
        header_value(&d, "Block count"),
        geo.blocks_count,
        "{fs_bytes}: block count"
    );
    assert_eq!(
        header_value(&d, "Inode count"),
        geo.inodes_count,
        "{fs_bytes}: inode count"
    );
    assert_eq!(header_value(&d, "First block"), geo.first_data_block);
    assert_eq!(
        header_value(&d, "Inodes per group"),
        u64::from(geo.inodes_per_group)
    );
    assert_eq!(
        header_value(&d, "Reserved block count"),
        geo.reserved_blocks
    );
    if geo.reserved_gdt_blocks > 0 {
        assert_eq!(
            header_value(&d, "Reserved GDT blocks"),
            geo.reserved_gdt_blocks
        );
    }
    if geo.journal_blocks > 0 {
        assert_eq!(header_value(&d, "Total journal blocks"), geo.journal_blocks);
    }
    assert_eq!(
        d.groups.len() as u64,
        geo.group_count(),
        "{fs_bytes}: groups"
    );
    let free = geo.free_blocks_per_group();
    for (i, (dumped, ours)) in d.groups.iter().zip(&geo.groups).enumerate() {
        let expect = DumpedGroup {
            block_bitmap: ours.block_bitmap,
            inode_bitmap: ours.inode_bitmap,
            inode_table: ours.inode_table,
            free_blocks: free[i],
            free_ranges: geo.free_ranges(i as u64),
        };
        assert_eq!(dumped, &expect, "{fs_bytes} bytes, group {i}");
    }
}

#[test]
fn geometry_matches_real_mke2fs() {
    for fs_bytes in [
        64 << 20,                  // one group, 1024-block journal
        400_088_457,               // bench5 at scale 0.001
        (32768 * 5 + 600) * 4096,  // a last group too small to keep
        (32768 * 5 + 2000) * 4096, // a short last group that stays
        4_000_884_572,             // bench5 at scale 0.01
        40_008_845_721,            // bench5 at scale 0.1
    ] {
        check_size(fs_bytes);
    }
}

#[test]
#[ignore = "makes a 400 GB sparse image; run with --ignored"]
fn geometry_matches_real_mke2fs_full_bench5() {
    check_size(400_088_457_216);
}
