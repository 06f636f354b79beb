//! Hand-made plans: plan -> image -> e2fsck clean -> inspect == plan, debugfs agrees.

mod common;

use common::*;
use layoutlab_image::{fsck_check, inspect, materialize, materialize_with, MapWriter};
use layoutlab_layout::MapKind;

const GIB: u64 = 1 << 30;

/// Every mapping shape, odd IND places, a sparse > 4 GiB file, a subdirectory and a
/// multi-block root directory.
fn hand_made(b: &mut Builder) {
    let bs = b.block_bytes;
    // a 5-block root holding 309 long names (more than one block's worth)
    b.dir(2, 2, "", 5);
    b.file(
        12,
        2,
        "direct-only",
        10 * bs - 100,
        &[(0, 10)],
        MapPlace::Inline,
    );
    b.file(13, 2, "twelve", 12 * bs, &[(0, 12)], MapPlace::Inline);
    b.file(14, 2, "one-ind", 13 * bs, &[(0, 13)], MapPlace::Inline);
    b.dense(
        15,
        2,
        "dind-inline",
        (12 + 1024 + 3000) * bs,
        MapPlace::Inline,
    );
    b.dense(
        16,
        2,
        "dind-region",
        (12 + 1024 + 2100) * bs + 1,
        MapPlace::Region,
    );
    let tind = b.geo.base(3);
    b.file(
        17,
        2,
        "sparse-tind",
        5 * GIB,
        &[(0, 5), (20, 3), (tind + 5 * 1024 + 7, 2), (1_300_000, 4)],
        MapPlace::Inline,
    );
    b.file(18, 2, "empty", 0, &[], MapPlace::Inline);
    b.dir(19, 2, "sub", 2);
    b.dense(20, 19, "in-sub", 500 * bs, MapPlace::Region);
    b.dir(21, 19, "subsub", 1);
    b.dense(22, 21, "deep", 2 * bs, MapPlace::Inline);
    for i in 0..300u32 {
        let name = format!("a-rather-long-file-name-to-fill-the-root-{i:04}");
        b.file(100 + i, 2, &name, 1, &[(0, 1)], MapPlace::Inline);
    }
}

#[test]
fn hand_made_plan_round_trips_and_fsck_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let image = fresh(dir.path(), "hand.img", 512, EXT3);
    let mut b = Builder::new(&image);
    hand_made(&mut b);
    // one IND block at an odd place: the very last block of the file system
    let last = b.blocks() - 1;
    let f14 = b.plan.inodes.iter_mut().find(|i| i.ino == 14).unwrap();
    let old = f14.mapping[0].physical;
    f14.mapping[0].physical = last;
    b.used[old as usize] = false;
    b.take_at(last);
    let plan = b.plan.clone();

    let stats = materialize(&image, &plan).expect("materialize");
    assert_eq!(stats.mapping_blocks, plan.mapping_blocks());
    let verdict = fsck_check(&image).unwrap();
    assert!(verdict.clean, "e2fsck:\n{}", verdict.output);
    assert_round_trip(&image, &plan);

    // debugfs (another reader of the same bytes) sees the IND blocks where the plan put them
    let stat14 = debugfs_stat(&image, 14);
    assert!(stat14.contains(&format!("(IND):{last}")), "{stat14}");
    let f17 = plan.inodes.iter().find(|i| i.ino == 17).unwrap();
    let stat17 = debugfs_stat(&image, 17);
    for m in &f17.mapping {
        let tag = match m.kind {
            MapKind::Ind => "IND",
            MapKind::Dind => "DIND",
            MapKind::Tind => "TIND",
            MapKind::Extent { .. } => unreachable!("a block-mapped file"),
        };
        assert!(
            stat17.contains(&format!("({tag}):{}", m.physical)),
            "{tag} at {} not in\n{stat17}",
            m.physical
        );
    }
    assert!(f17.mapping.iter().any(|m| m.kind == MapKind::Tind));
    let root = inspect(&image).unwrap();
    let lf = root.inode(11).expect("lost+found kept");
    assert_eq!(
        (lf.planned.parent, lf.planned.name.as_str()),
        (2, "lost+found")
    );
}

#[test]
fn bmap_path_writes_the_same_image_as_iterate_path() {
    let dir = tempfile::tempdir().unwrap();
    let a = fresh(dir.path(), "a.img", 256, EXT3);
    let b_img = fresh(dir.path(), "b.img", 256, EXT3);
    let mut b = Builder::new(&a);
    b.dense(
        12,
        2,
        "dind",
        (12 + 1024 + 2500) * b.block_bytes,
        MapPlace::Region,
    );
    b.file(
        13,
        2,
        "sparse",
        2 * GIB,
        &[(3, 2), (2000, 5), (400_000, 1)],
        MapPlace::Inline,
    );
    b.dir(14, 2, "d", 1);
    b.dense(15, 14, "f", 40 * b.block_bytes, MapPlace::Inline);
    let plan = b.plan.clone();
    materialize_with(&a, &plan, MapWriter::Iterate).unwrap();
    materialize_with(&b_img, &plan, MapWriter::Bmap).unwrap();
    for img in [&a, &b_img] {
        let v = fsck_check(img).unwrap();
        assert!(v.clean, "{}", v.output);
        assert_round_trip(img, &plan);
    }
    assert_eq!(inspect(&a).unwrap().inodes, inspect(&b_img).unwrap().inodes);
    assert_eq!(
        inspect(&a).unwrap().used_runs,
        inspect(&b_img).unwrap().used_runs
    );
}

#[test]
fn one_kib_blocks_deep_trees() {
    let dir = tempfile::tempdir().unwrap();
    let image = fresh(dir.path(), "k.img", 96, "-t ext3 -b 1024 -O ^resize_inode");
    let mut b = Builder::new(&image);
    let tind = b.geo.base(3);
    // 1 KiB blocks: TIND starts at 64 MiB + a bit; a dense 70 MiB file reaches it
    b.dense(12, 2, "dense", (tind + 300) * 1024, MapPlace::Inline);
    b.dense(13, 2, "region", 3 * 1024 * 1024, MapPlace::Region);
    let plan = b.plan.clone();
    materialize(&image, &plan).unwrap();
    let v = fsck_check(&image).unwrap();
    assert!(v.clean, "{}", v.output);
    assert_round_trip(&image, &plan);
}

#[test]
fn journal_added_at_a_goal() {
    // block-mapped (libext2fs drops the goal there; the shim supplies it) and extent-mapped
    journal_at_goal("-t ext2 -b 4096 -O ^resize_inode");
    journal_at_goal("-t ext4 -b 4096 -O ^has_journal");
}

fn journal_at_goal(mkfs_args: &str) {
    let dir = tempfile::tempdir().unwrap();
    let image = fresh(dir.path(), "j.img", 256, mkfs_args);
    let goal = 40_000;
    layoutlab_image::add_journal(&image, 4096, goal).unwrap();
    let back = inspect(&image).unwrap();
    assert_eq!(back.superblock.journal_ino, 8);
    assert!(back.superblock.features.iter().any(|f| f == "has_journal"));
    let journal = back.special.iter().find(|s| s.ino == 8).unwrap();
    assert_eq!(journal.size_bytes, 4096 * 4096);
    let out = std::process::Command::new("debugfs")
        .args(["-R", "bmap <8> 0"])
        .arg(&image)
        .output()
        .unwrap();
    let first: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(
        (goal..goal + 1000).contains(&first),
        "journal starts at {first}"
    );
    let v = fsck_check(&image).unwrap();
    assert!(v.clean, "{}", v.output);
    // and a plan still goes in around it
    let mut b = Builder::new(&image);
    b.dense(12, 2, "f", 3000 * 4096, MapPlace::Inline);
    let plan = b.plan.clone();
    materialize(&image, &plan).unwrap();
    assert!(fsck_check(&image).unwrap().clean);
    assert_round_trip(&image, &plan);
}
