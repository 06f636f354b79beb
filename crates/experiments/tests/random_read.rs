//! A small random-read whose mapping reads are known from the layout: O_DIRECT reads of a
//! 64 MiB file on 2007's ext3 (the ext3-2007 policy's block map, written through libext2fs),
//! at offsets chosen in the direct blocks, under the single indirect block and under two
//! indirect blocks of the double-indirect tree. Cold, each mapping block is read from the
//! device once — the first time a read needs it — and never again (the buffer cache keeps
//! it); the same reads on ext4 read the extent tree's leaf once, if the kernel's extents did
//! not fit in the inode (and none if they did). Root only.

use layoutlab_experiments::random_read::{run_target, sizes, RandomReadSpec};
use std::collections::BTreeSet;

/// The mapping blocks (by logical position in the block map) a read of file block `b` walks
/// through, for 4 KiB blocks (1024 pointers a block): ext2's 12 direct pointers, then the
/// single-indirect block, then the double-indirect block and one of its children.
fn mapping_path(b: u64) -> Vec<String> {
    const P: u64 = 1024;
    if b < 12 {
        vec![]
    } else if b < 12 + P {
        vec!["IND".into()]
    } else {
        let k = (b - 12 - P) / P;
        assert!(k < P, "triple-indirect not used by this test");
        vec!["DIND".into(), format!("DIND.{k}")]
    }
}

#[test]
fn mapping_reads_are_the_distinct_mapping_blocks_the_reads_walk_through() {
    if !layoutlab_rig::is_root() {
        eprintln!("skipped: needs root (loop devices, kernel mounts, tracefs)");
        return;
    }
    layoutlab_rig::cleanup::install();
    let exp = layoutlab_experiments::experiment::load("random-read").unwrap();
    let mut spec: RandomReadSpec = exp.params().unwrap();
    spec.file_gb = 64.0 * 1048576.0 / 1e9;
    let (file_bytes, fs_bytes) = sizes(&spec, 1.0);
    assert_eq!(file_bytes, 64 << 20);
    // File blocks: direct, single indirect (twice), double indirect under child 0 and child 3
    // (twice), and the last block of the file.
    let blocks = [
        5u64,
        100,
        900,
        1036 + 10,
        1036 + 3 * 1024 + 7,
        1036 + 3 * 1024 + 900,
        16383,
    ];
    let offs: Vec<u64> = blocks.iter().map(|b| b * 4096 + 1024).collect();
    let expected: BTreeSet<String> = blocks.iter().flat_map(|&b| mapping_path(b)).collect();
    // IND, DIND, DIND.0, DIND.3, DIND.14
    assert_eq!(expected.len(), 5);
    let work = std::env::temp_dir();
    for target in ["ext3", "ext4"] {
        let profile = layoutlab_experiments::kernel_profile::by_name(target).unwrap();
        let runs = run_target(
            &spec,
            target,
            Some(&profile),
            &["direct".to_string()],
            file_bytes,
            fs_bytes,
            &offs,
            "sata-2t-5400-2010",
            &work,
            exp.seed,
        )
        .unwrap();
        let r = &runs[0];
        assert_eq!(r.reads, blocks.len() as u64);
        // O_DIRECT: one device read per read, 512 bytes, all of the file's data.
        assert_eq!(r.data_reads, blocks.len() as u64, "{target}: {r:?}");
        if target == "ext3" {
            assert_eq!(r.mapping_reads, expected.len() as u64, "{r:?}");
            // 16384 blocks: 1 + 1 + 15 mapping blocks in the layout.
            assert_eq!(r.mapping_blocks, 17, "{r:?}");
            assert_eq!(r.layout, "policy ext3-2007");
        } else {
            // A tree of depth 0 (extents in the inode) or 1 (one leaf, every read needs it).
            assert!(r.mapping_blocks <= 1, "{r:?}");
            assert_eq!(r.mapping_reads, r.mapping_blocks, "{r:?}");
            assert_eq!(r.layout, "kernel");
        }
        assert!(r.seconds > 0.0);
    }
}
