//! `mkfs_profile` tells mke2fs that the fresh image file is zeros (`-E
//! assume_storage_prezeroed=1`) instead of letting it zero the inode tables and journal, and
//! puts back the groups' ITABLE_ZEROED flags: the image must be, byte for byte, the one mke2fs
//! makes when it zeroes them itself (`MkfsHow::mke2fs_zeroes`), for every shipped mkfs profile,
//! and pass `e2fsck -fn`. On the disk's ext4 (which has `ZERO_RANGE`) the zeroing allocated
//! the ext3 profiles' whole inode tables: 31 GB of host space at random-read's scale 1.
//!
//! Both images get one UUID and hash seed (`-U`, `-E hash_seed=`) and one time
//! (`E2FSPROGS_FAKE_TIME`, which mke2fs, debugfs and libext2fs read), so that they can be
//! compared with `cmp`. No root: mke2fs and libext2fs on files.
//!
//! Checked to fail: without putting the flags back, `cmp` found the images different in
//! every group descriptor copy (bg_flags 0 against 4, EXT2_BG_INODE_ZEROED).

use layoutlab_image::{allocated_bytes, fsck_check, mkfs_profile_with, HostZeroing, MkfsHow};
use layoutlab_layout::mkfs::MKFS_PROFILE_NAMES;
use layoutlab_layout::MkfsProfile;
use std::path::Path;
use std::process::Command;

/// 20 groups of 128 MiB: backups in five groups, two flex groups of 16 (a short last one),
/// a 64 MiB journal (the 1.40 and 1.47 tables agree at this size).
const FS_BYTES: u64 = 20 * (128 << 20);
const UUID: &str = "6c61796f-7574-4c61-9272-72313200beef";

/// `cmp` of two files: `None` when equal, else its report (the first differing bytes).
fn cmp(a: &Path, b: &Path) -> Option<String> {
    let out = Command::new("cmp")
        .arg("-l")
        .arg(a)
        .arg(b)
        .output()
        .expect("cmp (diffutils) runs");
    if out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    Some(format!(
        "{} bytes differ (offset, octal a, octal b; first 12): {}{}",
        lines.len(),
        lines
            .iter()
            .take(12)
            .copied()
            .collect::<Vec<_>>()
            .join("; "),
        String::from_utf8_lossy(&out.stderr)
    ))
}

#[test]
fn every_profile_makes_the_same_bytes_without_zeroing() {
    // Every process this test starts, and libext2fs in it, takes its times from here.
    std::env::set_var("E2FSPROGS_FAKE_TIME", "1262304000");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // Not a skip: on a host that punches (tmpfs) the zeroing costs nothing to begin with.
    assert_eq!(
        HostZeroing::of_dir(dir.path()).unwrap(),
        HostZeroing::Allocates,
        "the target directory's file system has no ZERO_RANGE here"
    );
    for name in MKFS_PROFILE_NAMES {
        let profile = MkfsProfile::by_name(name).unwrap();
        let zeroed = dir.path().join(format!("{name}-zeroed.img"));
        let holes = dir.path().join(format!("{name}-holes.img"));
        let how = |mke2fs_zeroes| MkfsHow {
            mke2fs_zeroes,
            fixed_uuid: Some(UUID.to_string()),
        };
        mkfs_profile_with(&zeroed, FS_BYTES, &profile, &how(true)).unwrap();
        mkfs_profile_with(&holes, FS_BYTES, &profile, &how(false)).unwrap();
        let (du_zeroed, du_holes) = (
            allocated_bytes(&zeroed).unwrap(),
            allocated_bytes(&holes).unwrap(),
        );
        eprintln!("{name}: du {du_zeroed} zeroed by mke2fs, {du_holes} left as holes");
        if let Some(diff) = cmp(&zeroed, &holes) {
            panic!("{name}: the images differ: {diff}");
        }
        let verdict = fsck_check(&holes).unwrap();
        assert!(verdict.clean, "{name}: e2fsck -fn: {}", verdict.output);
        // The point of it: where mke2fs zeroes whole tables (no group checksums, so no
        // lazy tables), the host held them; now it holds only the table blocks written (the
        // reserved inodes', at most one block a group here).
        let block_bytes = u64::from(profile.block_size_bytes);
        let groups = FS_BYTES / (u64::from(profile.blocks_per_group) * block_bytes);
        let tables_bytes = FS_BYTES / profile.bytes_per_inode * u64::from(profile.inode_size_bytes)
            - groups * block_bytes;
        let lazy_tables = profile.has_feature("metadata_csum") || profile.has_feature("uninit_bg");
        if !lazy_tables && !profile.inode_tables_zeroed {
            assert!(
                du_zeroed - du_holes >= tables_bytes,
                "{name}: du {du_zeroed} zeroed, {du_holes} as holes: {tables_bytes} bytes of \
                 inode tables are still allocated"
            );
        }
        std::fs::remove_file(&zeroed).unwrap();
        std::fs::remove_file(&holes).unwrap();
    }
}
