//! Bad plans and bad places: a clear error, and nothing half-written.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use layoutlab_image::{fsck_check, materialize, mkfs, ImageError, MapWriter};
use layoutlab_layout::{MapBlock, MapKind, Plan, Run};

/// A valid plan on a fresh 64 MiB image: a file with an IND block and a directory.
fn base(dir: &Path) -> (std::path::PathBuf, Plan) {
    let image = fresh(dir, "bad.img", 64, EXT3);
    let mut b = Builder::new(&image);
    b.dense(12, 2, "with-ind", 40 * b.block_bytes, MapPlace::Inline);
    b.dir(13, 2, "d", 1);
    b.dense(14, 13, "g", 3 * b.block_bytes, MapPlace::Inline);
    (image, b.plan.clone())
}

/// Materializing `plan` fails with BadPlan naming `ino` and containing `words`; the image is
/// byte-for-byte unchanged and still clean.
fn rejected(image: &Path, plan: &Plan, ino: u32, words: &str) {
    let before = digest(image);
    let err = materialize(image, plan).expect_err("plan must be rejected");
    match &err {
        ImageError::BadPlan {
            ino: got, reason, ..
        } => {
            assert_eq!(*got, ino, "{err}");
            assert!(reason.contains(words), "{err}");
        }
        other => panic!("expected BadPlan, got {other}"),
    }
    assert!(err.to_string().contains("nothing written"));
    assert_eq!(digest(image), before, "image changed by a rejected plan");
    assert!(fsck_check(image).unwrap().clean);
}

#[test]
fn block_already_used_by_mke2fs() {
    let dir = tempfile::tempdir().unwrap();
    let (image, mut plan) = base(dir.path());
    // block 1 holds the group descriptors of a 4 KiB-block file system
    let first = plan.inodes[0].data[0];
    plan.inodes[0].data[0] = Run {
        logical: 1,
        physical: first.physical + 1,
        len: first.len - 1,
    };
    plan.inodes[0].data.insert(
        0,
        Run {
            logical: 0,
            physical: 1,
            len: 1,
        },
    );
    rejected(&image, &plan, 12, "block 1 is already in use");
}

#[test]
fn block_beyond_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let (image, plan) = base(dir.path());
    let mut data = plan.clone();
    data.inodes[2].data[0].physical = 16_383; // 64 MiB = 16384 blocks: runs 16383..16386
    rejected(&image, &data, 14, "outside the file system");
    let mut map = plan.clone();
    map.inodes[0].mapping[0].physical = 1 << 40;
    rejected(&image, &map, 12, "IND block");
}

#[test]
fn duplicate_inode_and_duplicate_block() {
    let dir = tempfile::tempdir().unwrap();
    let (image, plan) = base(dir.path());
    let mut dup = plan.clone();
    dup.inodes[2].ino = 12;
    rejected(&image, &dup, 12, "duplicate inode number");
    let mut shared = plan.clone();
    shared.inodes[2].data[0].physical = shared.inodes[0].data[0].physical;
    let before = digest(&image);
    let err = materialize(&image, &shared).unwrap_err();
    assert!(err.to_string().contains("is planned for inode"), "{err}");
    assert_eq!(digest(&image), before);
}

#[test]
fn inode_in_use_or_reserved() {
    let dir = tempfile::tempdir().unwrap();
    let (image, plan) = base(dir.path());
    let mut lf = plan.clone();
    lf.inodes[0].ino = 11; // lost+found, in use
    rejected(&image, &lf, 11, "already in use");
    let mut reserved = plan.clone();
    reserved.inodes[0].ino = 7;
    rejected(&image, &reserved, 7, "reserved");
}

#[test]
fn mapping_blocks_must_match_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let (image, plan) = base(dir.path());
    let mut missing = plan.clone();
    missing.inodes[0].mapping.clear();
    rejected(&image, &missing, 12, "needs a IND block mapping logical 12");
    let mut extra = plan.clone();
    extra.inodes[0].mapping.push(MapBlock {
        kind: MapKind::Dind,
        logical: 1036,
        physical: 9000,
    });
    rejected(&image, &extra, 12, "maps no data block");
}

#[test]
fn size_parent_name_and_directory_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let (image, plan) = base(dir.path());
    let mut short = plan.clone();
    short.inodes[0].size_bytes = 4096;
    rejected(&image, &short, 12, "past i_size");
    let mut orphan = plan.clone();
    orphan.inodes[2].parent = 99;
    rejected(&image, &orphan, 14, "parent 99");
    let mut twice = plan.clone();
    twice.inodes[1].name = "with-ind".into();
    rejected(&image, &twice, 13, "used twice");
    let mut lf = plan.clone();
    lf.inodes[1].name = "lost+found".into();
    rejected(&image, &lf, 13, "used twice");
    // 400 entries do not fit in the directory's single block
    let mut b = Builder::new(&image);
    b.dir(13, 2, "full", 1);
    for i in 0..400 {
        b.file(
            20 + i,
            13,
            &format!("name-{i:05}"),
            0,
            &[],
            MapPlace::Inline,
        );
    }
    rejected(&image, &b.plan, 13, "does not fit");
}

#[test]
fn both_writers_reject_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let (image, mut plan) = base(dir.path());
    plan.inodes[0].mapping[0].physical = 0;
    let before = digest(&image);
    assert!(layoutlab_image::materialize_with(&image, &plan, MapWriter::Bmap).is_err());
    assert_eq!(digest(&image), before);
}

#[test]
fn mkfs_refuses_to_overwrite_and_reports_mke2fs_errors() {
    let dir = tempfile::tempdir().unwrap();
    let image = fresh(dir.path(), "x.img", 16, EXT3);
    let err = mkfs(&image, 16 << 20, &args(EXT3)).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    let bad = dir.path().join("bad.img");
    let err = mkfs(&bad, 16 << 20, &args("-O no_such_feature")).unwrap_err();
    assert!(matches!(err, ImageError::Tool { .. }), "{err}");
    assert!(!bad.exists(), "failed mkfs must remove its file");
}

/// Unmounts a tmpfs on drop.
struct Tmpfs(std::path::PathBuf);
impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn mkfs_checks_free_space_before_writing() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to mount a small tmpfs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount tmpfs");
    let _guard = Tmpfs(dir.path().to_path_buf());
    let image = dir.path().join("big.img");
    // a 1 TiB ext3 holds 64 MiB of bitmaps (8192 groups), even where its zeroed inode tables
    // and journal are holes (tmpfs): cannot fit in 8 MiB
    let err = mkfs(&image, 1 << 40, &args(EXT3)).unwrap_err();
    assert!(matches!(err, ImageError::NoSpace { .. }), "{err}");
    assert!(!image.exists(), "nothing may be written");
    // a small one fits
    mkfs(&image, 4 << 20, &args("-t ext2")).unwrap();
}
