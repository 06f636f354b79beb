//! `inspect` of images the real kernel wrote: sizes, block counts and names agree with what
//! stat(2) saw while mounted and with debugfs. Needs root (loop device + mount); skipped
//! otherwise.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use layoutlab_image::{fsck_check, inspect};
use layoutlab_layout::InodeKind;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A loop device with a mounted file system; unmounted and detached on drop, whatever
/// happened in between.
struct Mounted {
    loop_dev: String,
    mnt: PathBuf,
    mounted: bool,
}

impl Mounted {
    fn new(image: &Path, mnt: &Path) -> Mounted {
        let loop_dev = run(Command::new("losetup").args(["-f", "--show"]).arg(image));
        let mut m = Mounted {
            loop_dev,
            mnt: mnt.to_path_buf(),
            mounted: false,
        };
        run(Command::new("mount").arg(&m.loop_dev).arg(mnt));
        m.mounted = true;
        m
    }

    fn unmount(&mut self) {
        if self.mounted {
            run(Command::new("umount").arg(&self.mnt));
            self.mounted = false;
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.mounted {
            // Retried while busy, then lazily: a single failed umount under load would leave
            // the mount and its loop device behind (seen once with every_kind.rs's copy).
            for _ in 0..10 {
                match Command::new("umount").arg(&self.mnt).status() {
                    Ok(s) if s.success() => {
                        self.mounted = false;
                        break;
                    }
                    _ => std::thread::sleep(std::time::Duration::from_millis(200)),
                }
            }
            if self.mounted {
                let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
            }
        }
        let _ = Command::new("losetup")
            .arg("-d")
            .arg(&self.loop_dev)
            .status();
    }
}

/// (path relative to the mount, inode, size, st_blocks) as stat(1) reports them.
fn stat_all(mnt: &Path, rel: &[&str]) -> Vec<(String, u32, u64, u64)> {
    rel.iter()
        .map(|r| {
            let out = run(Command::new("stat")
                .args(["-c", "%i %s %b"])
                .arg(mnt.join(r)));
            let v: Vec<u64> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
            (r.to_string(), v[0] as u32, v[1], v[2])
        })
        .collect()
}

fn kernel_writes_then_inspect(mkfs_args: &str) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root for losetup and mount");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = fresh(dir.path(), "k.img", 128, mkfs_args);
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let files = [
        "empty",
        "small",
        "hundred-k",
        "eight-m",
        "sparse",
        "sub/inner",
        "sub/deeper/x",
    ];
    let seen;
    {
        let mut m = Mounted::new(&image, &mnt);
        std::fs::create_dir_all(mnt.join("sub/deeper")).unwrap();
        let dd = |name: &str, extra: &[&str]| {
            run(Command::new("dd")
                .arg("if=/dev/urandom")
                .arg(format!("of={}", mnt.join(name).display()))
                .args(extra)
                .arg("status=none"));
        };
        std::fs::write(mnt.join("empty"), b"").unwrap();
        dd("small", &["bs=5000", "count=1"]);
        dd("hundred-k", &["bs=1k", "count=100"]);
        dd("eight-m", &["bs=1M", "count=8"]);
        dd("sparse", &["bs=4k", "count=3", "seek=300000"]);
        dd("sub/inner", &["bs=4k", "count=20"]);
        dd("sub/deeper/x", &["bs=1", "count=1"]);
        run(Command::new("sync").arg("-f").arg(&mnt));
        seen = stat_all(&mnt, &files);
        m.unmount();
    }
    let v = fsck_check(&image).unwrap();
    assert!(v.clean, "{}", v.output);
    let back = inspect(&image).unwrap();
    let bs = back.superblock.block_bytes as u64;
    for (path, ino, size, st_blocks) in &seen {
        let got = back
            .inode(*ino)
            .unwrap_or_else(|| panic!("{path}: inode {ino} not found"));
        assert_eq!(got.planned.kind, InodeKind::File, "{path}");
        assert_eq!(got.planned.size_bytes, *size, "{path}: size");
        assert_eq!(got.blocks_fs * (bs / 512), *st_blocks, "{path}: st_blocks");
        // every block the inode owns is accounted for: data + IND/DIND/TIND or extent tree
        assert_eq!(
            got.planned.data_blocks() + got.planned.mapping.len() as u64,
            got.blocks_fs,
            "{path}: data + mapping blocks"
        );
        assert_eq!(
            got.planned.name,
            Path::new(path).file_name().unwrap().to_string_lossy(),
            "{path}: name"
        );
        // debugfs agrees on size and block count
        let dbg = debugfs_stat(&image, *ino);
        assert!(dbg.contains(&format!("Size: {size}")), "{path}: {dbg}");
        assert!(
            dbg.contains(&format!("Blockcount: {st_blocks}")),
            "{path}: {dbg}"
        );
    }
    // the sparse file's three blocks sit at logical 300000..300003
    let sparse = back.inode(seen[4].1).unwrap();
    assert_eq!(sparse.planned.data_blocks(), 3);
    assert_eq!(sparse.planned.data[0].logical, 300_000);
    // parents follow the directory tree
    let inner = back.inode(seen[5].1).unwrap();
    let sub = back.inode(inner.planned.parent).unwrap();
    assert_eq!((sub.planned.name.as_str(), sub.planned.parent), ("sub", 2));
}

#[test]
fn kernel_ext4_extents() {
    kernel_writes_then_inspect("-t ext4 -b 4096");
}

#[test]
fn kernel_ext3_indirect() {
    kernel_writes_then_inspect(EXT3);
}
