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
        // "Group 12: (Blocks ...", not the header's "Group descriptor size:"
        let is_group = line
            .strip_prefix("Group ")
            .and_then(|r| r.split(':').next())
            .is_some_and(|n| n.parse::<u64>().is_ok());
        if is_group {
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
    check_profile_size("ext3-2007", fs_bytes);
}

fn check_profile_size(profile_name: &str, fs_bytes: u64) {
    check_profile(&MkfsProfile::by_name(profile_name).unwrap(), fs_bytes);
}

fn check_profile(profile: &MkfsProfile, fs_bytes: u64) {
    // Today's mke2fs makes none of the period quirks (1.40's journal block past its size,
    // 1.41's short last flex group packed as if whole, the reserved count kept when the last
    // group is dropped); the image path adds them through libext2fs and debugfs
    // and crates/rig/tests/period_mke2fs.rs checks them against the period mke2fs itself.
    // Here the rest of the arithmetic is checked against today's.
    let profile = &MkfsProfile {
        journal_blocks_past_size: 0,
        short_flex_group_packed_as_whole: false,
        reserved_blocks_before_drop: false,
        ..profile.clone()
    };
    let profile_name = profile.name.as_str();
    let geo = Geometry::new(profile, fs_bytes).unwrap();
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
    if geo.flex_bg_size > 0 {
        assert_eq!(header_value(&d, "Flex block group size"), geo.flex_bg_size);
    }
    let features = d
        .header
        .iter()
        .find(|(k, _)| k == "Filesystem features")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    for f in &geo.features {
        // dumpe2fs spells the extent feature "extent", uninit_bg as itself
        assert!(
            features.split_whitespace().any(|x| x == f),
            "{profile_name} {fs_bytes}: feature {f} missing from '{features}'"
        );
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
        assert_eq!(
            dumped, &expect,
            "{profile_name}: {fs_bytes} bytes, group {i}"
        );
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

/// ext4 as e2fsprogs 1.41 made it: flex_bg table packing (full flex groups, a short last
/// flex group, a file system smaller than one flex group), 256-byte inodes, uninit_bg, the
/// midpoint journal.
#[test]
fn ext4_2009_geometry_matches_real_mke2fs() {
    for fs_bytes in [
        64 << 20,                   // one group
        (32768 * 5 + 2000) * 4096,  // 6 groups: less than one flex group
        (32768 * 16) * 4096,        // exactly one flex group
        (32768 * 37 + 9000) * 4096, // two full flex groups and a short third
        4_000_884_572,              // bench5 at scale 0.01 (30 groups)
        34_359_738_368,             // 32 GiB, the ubuntu-32g file system (256 groups)
        40_008_845_721,             // 299 groups: a last flex group of 11
    ] {
        check_profile_size("ext4-2009", fs_bytes);
    }
}

// The ext3 of 2009 (1.41.4 -t ext3) puts its block-mapped journal at the midpoint, which
// today's mke2fs cannot (it ignores -J location= without extents): its Geometry is checked
// against the real 1.41.4 mke2fs instead, in crates/rig/tests/period_mke2fs.rs.

/// ext4 as today's mke2fs makes it (the ext4-kernel profile): 64bit descriptors,
/// metadata_csum, 1.47's journal sizes at the midpoint.
#[test]
fn ext4_kernel_geometry_matches_real_mke2fs() {
    for fs_bytes in [
        64 << 20,                   // one group, 1024-block journal
        1 << 30,                    // 8 groups: the kernel comparison's size
        (32768 * 37 + 9000) * 4096, // two full flex groups and a short third
        34_359_738_368,             // 32 GiB, the ubuntu-32g file system (256 groups)
        40_008_845_721,             // 299 groups: a last flex group of 11
    ] {
        check_profile_size("ext4-kernel", fs_bytes);
    }
}

/// The ext4-2007 profile (the ext4-2007 kernel profile's file system: extents, no flex_bg,
/// 128-byte inodes, 1.47's journal at the midpoint): large-delete's default-scale file system
/// and a few shapes around it.
#[test]
fn ext4_2007_geometry_matches_real_mke2fs() {
    for fs_bytes in [
        512 << 20,                 // 4 groups: large-delete's smallest file system
        4767 << 20,                // 38 groups: large-delete's default scale (2 GB file x 2.5)
        (32768 * 9 + 3000) * 4096, // a short last group
    ] {
        check_profile_size("ext4-2007", fs_bytes);
    }
}

/// 64bit: 64-byte group descriptors (half as many per block: more descriptor and reserved
/// descriptor blocks), and flex groups of 4 — variations of the 2009 profile.
#[test]
fn ext4_64bit_and_flex_sizes_match_real_mke2fs() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/mkfs/ext4-2009.toml"
    ))
    .unwrap();
    let wide = text
        .replace("\"extra_isize\",", "\"extra_isize\", \"64bit\",")
        .replace("name = \"ext4-2009\"", "name = \"ext4-64bit\"");
    let wide = MkfsProfile::from_toml_str(&wide, "ext4-64bit").unwrap();
    assert!(wide.has_feature("64bit"));
    let four = text
        .replace("flex_bg_size = 16", "flex_bg_size = 4")
        .replace("name = \"ext4-2009\"", "name = \"ext4-flex4\"");
    let four = MkfsProfile::from_toml_str(&four, "ext4-flex4").unwrap();
    for fs_bytes in [
        (32768 * 37 + 9000) * 4096,
        40_008_845_721,
        // 2049 groups: 33 descriptor blocks of 64 bytes, 17 of 32
        (32768 * 2048 + 5000) * 4096,
    ] {
        let geo = Geometry::new(&wide, fs_bytes).unwrap();
        assert_eq!(geo.desc_bytes, 64);
        assert_eq!(geo.gdt_blocks, geo.group_count().div_ceil(64));
        check_profile(&wide, fs_bytes);
        check_profile(&four, fs_bytes);
    }
}

#[test]
#[ignore = "makes a 400 GB sparse image; run with --ignored"]
fn geometry_matches_real_mke2fs_full_bench5() {
    check_size(400_088_457_216);
}
