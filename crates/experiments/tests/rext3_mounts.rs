//! rext3 images (indirect blocks, and with `dirs = "region"` directory blocks, right after the
//! inode tables) mount under today's kernel and read back as planned: every name resolves to
//! its planned inode, kind and size, every regular file reads through its whole block map,
//! and a directory with an indirect block lists all its entries. Through the rig's
//! `KernelFs::from_image` (sparse file, loop device, mount; all torn down on drop). Needs root.

mod common;

use layoutlab_layout::{policy_by_name, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams};
use layoutlab_rig::{Backing, FsKind, KernelFs, KernelFsOptions};
use layoutlab_workload::{NsOp, Population};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const FS_BYTES: u64 = 256 << 20;

/// Directories over several groups, files from empty to DIND-mapped, a directory of 1500
/// long names (indexed, past its 12 direct blocks), symlinks fast and slow, a hard link.
fn tree() -> Population {
    let mut ops = Vec::new();
    for d in 0..4 {
        ops.push(NsOp::Mkdir {
            path: format!("d{d}"),
        });
        for (f, bytes) in [0u64, 5_000, 70_000, 6 << 20].into_iter().enumerate() {
            ops.push(NsOp::Create {
                path: format!("d{d}/f{f}"),
                bytes,
            });
        }
    }
    ops.push(NsOp::Mkdir { path: "big".into() });
    ops.extend((0..1500).map(|i| NsOp::Create {
        path: format!("big/{i:0>100}"),
        bytes: 0,
    }));
    ops.push(NsOp::Symlink {
        path: "d0/fast".into(),
        target: "f3".into(),
    });
    ops.push(NsOp::Symlink {
        path: "d1/slow".into(),
        target: "s".repeat(200),
    });
    ops.push(NsOp::Link {
        path: "d2/hard".into(),
        target: "d0/f3".into(),
    });
    Population {
        name: "rext3-mount".into(),
        fs_bytes: FS_BYTES,
        ops,
    }
}

fn path_of(plan: &Plan, root: &Path, ino: u32) -> PathBuf {
    let mut parts = Vec::new();
    let mut at = ino;
    while at != 2 {
        let i = plan.inodes.iter().find(|i| i.ino == at).unwrap();
        parts.push(i.name.clone());
        at = i.parent;
    }
    parts
        .iter()
        .rev()
        .fold(root.to_path_buf(), |p, s| p.join(s))
}

#[test]
fn rext3_images_mount_and_read_back() {
    if !common::root_or_skip("rext3_images_mount_and_read_back", "loop device and mount") {
        return;
    }
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let pop = tree();
    let geo = Geometry::new(&profile, FS_BYTES).unwrap();
    for dirs in ["outside", "region"] {
        let mut params = PolicyParams::new();
        params.insert("dirs".into(), dirs.into());
        let plan = policy_by_name("rext3", &params)
            .unwrap()
            .plan(&geo, &pop, 9)
            .unwrap();
        plan.check(&geo).unwrap();
        let big = plan.inodes.iter().find(|i| i.name == "big").unwrap();
        assert!(!big.mapping.is_empty(), "the big directory has an IND");
        let opts = KernelFsOptions {
            kind: FsKind::Ext3,
            mkfs_args: profile.mke2fs_args(FS_BYTES),
            mount_options: String::new(),
            bytes: FS_BYTES,
            backing: Backing::SparseFile(std::env::temp_dir()),
            resident_bytes: 64 << 20,
            queue: layoutlab_rig::QueueSpec::default(),
        };
        let kfs = KernelFs::from_image(&opts, &mut |path: &Path| {
            layoutlab_image::mkfs_profile(path, FS_BYTES, &profile).map_err(|e| e.to_string())?;
            layoutlab_image::materialize(path, &plan)
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|e| panic!("dirs = {dirs}: {e}"));
        let root = kfs.mount_point().to_path_buf();
        for inode in plan.inodes.iter().filter(|i| i.ino != 2) {
            let path = path_of(&plan, &root, inode.ino);
            let meta = std::fs::symlink_metadata(&path)
                .unwrap_or_else(|e| panic!("dirs = {dirs}: {}: {e}", path.display()));
            assert_eq!(meta.ino(), u64::from(inode.ino), "{}", path.display());
            match inode.kind {
                InodeKind::File => {
                    assert!(meta.is_file());
                    // through every IND/DIND the kernel follows
                    let bytes = std::fs::read(&path).unwrap();
                    assert_eq!(bytes.len() as u64, inode.size_bytes, "{}", path.display());
                }
                InodeKind::Dir => {
                    assert!(meta.is_dir());
                    let n = std::fs::read_dir(&path).unwrap().count();
                    let planned = plan.inodes.iter().filter(|i| i.parent == inode.ino).count()
                        + plan.links.iter().filter(|l| l.parent == inode.ino).count();
                    assert_eq!(n, planned, "dirs = {dirs}: {}", path.display());
                }
                InodeKind::Symlink => {
                    let target = std::fs::read_link(&path).unwrap();
                    assert_eq!(target.as_os_str().len() as u64, inode.size_bytes);
                }
                _ => {}
            }
        }
        assert_eq!(
            std::fs::read_dir(root.join("big")).unwrap().count(),
            1500,
            "dirs = {dirs}"
        );
        drop(kfs);
    }
}
