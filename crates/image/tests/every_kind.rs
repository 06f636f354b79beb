//! Every kind of object a plan can hold — block-mapped and extent-mapped files (leaf and index
//! blocks), directories, fast and slow symlinks, hard links, character and block devices
//! (old and new number encodings), fifos, sockets — materialised by libext2fs exactly where
//! the plan says, clean under `e2fsck -fn`, read back identically by `inspect`, and seen by
//! the real kernel as the plan describes (mounted read-only through a loop device; that part
//! needs root and says so when skipped).

mod common;

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use layoutlab_image::{fsck_check, inspect, materialize, ImageCounts};
use layoutlab_layout::mapping::{extent_entries_per_block, MapFormat, EXTENT_ROOT_ENTRIES};
use layoutlab_layout::{InodeKind, MapKind, Plan, Special};

/// A slow symlink's target: longer than the 59 bytes the inode holds.
fn long_target() -> String {
    "../".repeat(30) + "usr/share/doc/a-long-way-down/README"
}

/// One of everything in a 256 MiB image made with `mkfs_args`, mapped as `format` says.
fn everything(dir: &Path, name: &str, mkfs_args: &str, format: MapFormat) -> (PathBuf, Plan) {
    let image = fresh(dir, name, 256, mkfs_args);
    let mut b = Builder::new(&image);
    b.format = format;
    let bs = b.block_bytes;
    b.dir(12, 2, "d", 2);
    b.dense(13, 12, "f", 100 * bs + 7, MapPlace::Inline);
    b.dense(14, 2, "big", (12 + 1024 + 40) * bs, MapPlace::Region);
    b.file(
        15,
        12,
        "sparse",
        3000 * bs,
        &[(0, 3), (2000, 2)],
        MapPlace::Inline,
    );
    b.symlink(16, 2, "fast", "d/f");
    b.symlink(17, 12, "slow", &long_target());
    b.node(18, 2, "null", InodeKind::CharDev, (1, 3));
    b.node(19, 2, "sdz300", InodeKind::BlockDev, (259, 300));
    b.node(20, 12, "fifo", InodeKind::Fifo, (0, 0));
    b.node(21, 12, "sock", InodeKind::Socket, (0, 0));
    b.link(2, "hard-f", 13);
    b.link(12, "hard-f-2", 13);
    b.link(2, "hard-slow", 17);
    b.link(12, "hard-null", 18);
    b.dir(22, 12, "empty-dir", 1);
    b.file(23, 22, "empty", 0, &[], MapPlace::Inline);
    if format == MapFormat::Extents {
        let per_leaf = extent_entries_per_block(bs) - 1;
        // a leaf: more extents than the inode's four
        b.fragmented(24, 2, "leaf", EXTENT_ROOT_ENTRIES + 1);
        // two levels: more leaves than the inode's four index entries
        b.fragmented(25, 2, "index", EXTENT_ROOT_ENTRIES * per_leaf + 2);
    }
    (image, b.plan.clone())
}

fn check_everything(image: &Path, plan: &Plan) {
    let stats = materialize(image, plan).expect("materialize");
    assert_eq!(stats.symlinks, 2);
    assert_eq!(stats.special_inodes, 4);
    assert_eq!(stats.hard_links, 4);
    assert_eq!(stats.mapping_blocks, plan.mapping_blocks());
    let verdict = fsck_check(image).unwrap();
    assert!(verdict.clean, "e2fsck:\n{}", verdict.output);
    assert_round_trip(image, plan);
    let back = inspect(image).unwrap();
    assert!(back.other_inodes.is_empty());
    // link counts: 1 + hard links for files, 2 + subdirectories for directories
    let links = |ino: u32| back.inode(ino).unwrap().links;
    assert_eq!(links(13), 3);
    assert_eq!(links(17), 2);
    assert_eq!(links(18), 2);
    assert_eq!(links(16), 1);
    assert_eq!(links(12), 3);
    assert_eq!(back.links.len(), 4);
    let c = back.counts();
    let want = ImageCounts::of_plan(plan);
    // the image also holds the root and lost+found (extent-mapped on ext4)
    assert_eq!(c.directories, want.directories + 2);
    assert!([0, 2].contains(&(c.extent_mapped - want.extent_mapped)));
    assert_eq!(
        ImageCounts {
            directories: want.directories,
            extent_mapped: want.extent_mapped,
            ..c
        },
        want
    );
    assert_eq!(
        (
            c.symlinks,
            c.fast_symlinks,
            c.hard_links,
            c.char_devices,
            c.block_devices,
            c.fifos,
            c.sockets
        ),
        (2, 1, 4, 1, 1, 1, 1)
    );
}

#[test]
fn every_kind_round_trips_block_mapped_on_ext3() {
    let dir = tempfile::tempdir().unwrap();
    let (image, plan) = everything(dir.path(), "ext3.img", EXT3, MapFormat::Blocks);
    check_everything(&image, &plan);
    kernel_sees(&image, &plan);
}

/// ext4 as e2fsprogs made it in early 2009: 256-byte inodes, extents, flex_bg, uninit_bg,
/// no metadata_csum or 64bit.
const EXT4_2009: &str =
    "-t ext4 -b 4096 -I 256 -O ^metadata_csum,^64bit,^metadata_csum_seed,^orphan_file,uninit_bg";

#[test]
fn every_kind_round_trips_extent_mapped_on_ext4() {
    let dir = tempfile::tempdir().unwrap();
    let (image, plan) = everything(dir.path(), "ext4.img", EXT4_2009, MapFormat::Extents);
    // the index file has two levels: four leaves under the root, then an index block
    let index = plan.inodes.iter().find(|i| i.ino == 25).unwrap();
    let heights: Vec<u8> = index
        .mapping
        .iter()
        .map(|m| match m.kind {
            MapKind::Extent { height } => height,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(heights, vec![0, 0, 0, 0, 1, 0]);
    check_everything(&image, &plan);
    let back = inspect(&image).unwrap();
    let got = back.inode(25).unwrap();
    assert!(got.extent_mapped);
    assert_eq!(back.extent_blocks.iter().filter(|e| e.ino == 25).count(), 6);
    kernel_sees(&image, &plan);
}

#[test]
fn every_kind_round_trips_on_todays_ext4() {
    // today's defaults: metadata_csum (checksummed extent blocks and directory tails), 64bit
    let dir = tempfile::tempdir().unwrap();
    let (image, plan) = everything(
        dir.path(),
        "ext4-now.img",
        "-t ext4 -b 4096",
        MapFormat::Extents,
    );
    check_everything(&image, &plan);
    kernel_sees(&image, &plan);
}

#[test]
fn symlink_format_must_match_what_libext2fs_makes() {
    let dir = tempfile::tempdir().unwrap();
    let (image, mut plan) = everything(dir.path(), "bad.img", EXT4_2009, MapFormat::Extents);
    let slow = plan.inodes.iter_mut().find(|i| i.ino == 17).unwrap();
    slow.format = MapFormat::Blocks;
    let before = digest(&image);
    let e = materialize(&image, &plan).unwrap_err().to_string();
    assert!(e.contains("slow symlink") && e.contains("Extents"), "{e}");
    assert_eq!(
        digest(&image),
        before,
        "a rejected plan must leave the image untouched"
    );
    // and extents on an image without the feature
    let (image3, mut plan3) = everything(dir.path(), "bad3.img", EXT3, MapFormat::Blocks);
    plan3
        .inodes
        .iter_mut()
        .find(|i| i.ino == 13)
        .unwrap()
        .format = MapFormat::Extents;
    let e = materialize(&image3, &plan3).unwrap_err().to_string();
    assert!(e.contains("no extent feature"), "{e}");
}

/// Mounts the image read-only and checks what the kernel sees against the plan.
fn kernel_sees(image: &Path, plan: &Plan) {
    if !nix_is_root() {
        eprintln!(
            "SKIPPED kernel mount check of {}: needs root",
            image.display()
        );
        return;
    }
    let mnt = tempfile::tempdir().unwrap();
    let m = MountedRo::new(image, mnt.path());
    let root = m.mnt.clone();
    let path_of = |ino: u32| -> PathBuf {
        let mut parts = Vec::new();
        let mut at = ino;
        while at != 2 {
            let i = plan.inodes.iter().find(|i| i.ino == at).unwrap();
            parts.push(i.name.clone());
            at = i.parent;
        }
        parts.reverse();
        parts.iter().fold(root.clone(), |p, s| p.join(s))
    };
    for inode in &plan.inodes {
        if inode.ino == 2 {
            continue;
        }
        let path = path_of(inode.ino);
        let meta =
            std::fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(meta.ino(), u64::from(inode.ino), "{}", path.display());
        let ft = meta.file_type();
        let kind_ok = match inode.kind {
            InodeKind::File => ft.is_file(),
            InodeKind::Dir => ft.is_dir(),
            InodeKind::Symlink => ft.is_symlink(),
            InodeKind::CharDev => ft.is_char_device(),
            InodeKind::BlockDev => ft.is_block_device(),
            InodeKind::Fifo => ft.is_fifo(),
            InodeKind::Socket => ft.is_socket(),
        };
        assert!(
            kind_ok,
            "{}: {:?} but the kernel sees {ft:?}",
            path.display(),
            inode.kind
        );
        match &inode.special {
            Special::Symlink { target } => {
                assert_eq!(&std::fs::read_link(&path).unwrap(), Path::new(target));
            }
            Special::Device { major, minor } => {
                let rdev = meta.rdev();
                let (ma, mi) = (
                    ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff),
                    (rdev & 0xff) | ((rdev >> 12) & !0xff),
                );
                assert_eq!((ma, mi), (u64::from(*major), u64::from(*minor)));
            }
            Special::None => {}
        }
        if inode.kind == InodeKind::File {
            assert_eq!(meta.len(), inode.size_bytes);
            assert_eq!(
                meta.blocks() * 512,
                (inode.data_blocks() + inode.mapping.len() as u64) * 4096
            );
        }
    }
    for link in &plan.links {
        let path = path_of(link.parent).join(&link.name);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(meta.ino(), u64::from(link.ino), "{}", path.display());
    }
    // a file's data reads back (zeros: images are sparse) through its whole map
    let big = std::fs::read(path_of(14)).unwrap();
    assert_eq!(
        big.len() as u64,
        plan.inodes.iter().find(|i| i.ino == 14).unwrap().size_bytes
    );
    drop(m);
}

fn nix_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A read-only loop mount of an image, unmounted and detached on drop.
struct MountedRo {
    loop_dev: String,
    mnt: PathBuf,
}

impl MountedRo {
    fn new(image: &Path, mnt: &Path) -> MountedRo {
        let out = Command::new("losetup")
            .args(["-f", "--show", "-r"])
            .arg(image)
            .output()
            .expect("losetup");
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let loop_dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let m = MountedRo {
            loop_dev,
            mnt: mnt.to_path_buf(),
        };
        let st = Command::new("mount")
            .args(["-o", "ro,noload"])
            .arg(&m.loop_dev)
            .arg(mnt)
            .output()
            .expect("mount");
        assert!(
            st.status.success(),
            "mount: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        m
    }
}

impl Drop for MountedRo {
    fn drop(&mut self) {
        unmount_for_sure(&self.mnt);
        let _ = Command::new("losetup")
            .arg("-d")
            .arg(&self.loop_dev)
            .status();
    }
}

/// Unmounts `mnt`, retrying while it is busy and detaching it lazily as a last resort: one
/// failed `umount` under a loaded CI run left this test's mount and loop device behind
/// (2026-11-27), and the mount point outlived its TempDir.
fn unmount_for_sure(mnt: &Path) {
    for _ in 0..10 {
        match Command::new("umount").arg(mnt).status() {
            Ok(s) if s.success() => return,
            _ => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
    let _ = Command::new("umount").arg("-l").arg(mnt).status();
}
