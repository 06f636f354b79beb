//! mkfs for the kernel file systems the rig runs: ext2/3/4 (mke2fs), XFS, btrfs.

use crate::error::{Result, RigError};
use crate::system::run_command;
use std::path::Path;

/// A file system the rig can make and mount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsKind {
    /// ext2 (mke2fs -t ext2).
    Ext2,
    /// ext3 (mke2fs -t ext3).
    Ext3,
    /// ext4 (mke2fs -t ext4).
    Ext4,
    /// XFS (mkfs.xfs, Debian package xfsprogs).
    Xfs,
    /// btrfs (mkfs.btrfs, Debian package btrfs-progs).
    Btrfs,
}

impl FsKind {
    /// Every kind, in the order error messages list them.
    pub const ALL: [FsKind; 5] = [
        FsKind::Ext2,
        FsKind::Ext3,
        FsKind::Ext4,
        FsKind::Xfs,
        FsKind::Btrfs,
    ];

    /// The name `mount -t` and the kernel use.
    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext2 => "ext2",
            FsKind::Ext3 => "ext3",
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
        }
    }

    /// Parses a name; the error lists the valid ones.
    pub fn parse(name: &str) -> Result<FsKind> {
        FsKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let valid: Vec<&str> = FsKind::ALL.iter().map(|k| k.name()).collect();
                RigError::InvalidArgument(format!(
                    "unknown file system {name:?}; valid: {}",
                    valid.join(", ")
                ))
            })
    }

    fn command(self) -> (&'static str, Vec<&'static str>, &'static str) {
        match self {
            FsKind::Ext2 | FsKind::Ext3 | FsKind::Ext4 => {
                ("mke2fs", vec!["-F", "-q", "-t", self.name()], "e2fsprogs")
            }
            FsKind::Xfs => ("mkfs.xfs", vec!["-f", "-q"], "xfsprogs"),
            FsKind::Btrfs => ("mkfs.btrfs", vec!["-f", "-q"], "btrfs-progs"),
        }
    }
}

/// Makes a `kind` file system on `device` (a device or an image file) with extra `args`
/// (e.g. mke2fs `-b 4096 -I 128`), as the real tool does.
pub fn mkfs(kind: FsKind, device: &Path, args: &[&str]) -> Result<()> {
    let (program, mut all_args, package) = kind.command();
    all_args.extend_from_slice(args);
    let device_text = device.to_string_lossy();
    all_args.push(&device_text);
    run_command(program, &all_args).map_err(|e| match e {
        RigError::Command {
            program,
            status,
            stderr,
        } if status == "not started" => RigError::Command {
            program,
            status,
            stderr: format!("{stderr} (install the Debian package {package})"),
        },
        other => other,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_kind_lists_the_valid_ones() {
        let err = FsKind::parse("ntfs").unwrap_err().to_string();
        assert!(err.contains("ext3") && err.contains("btrfs"), "{err}");
        assert_eq!(FsKind::parse("xfs").unwrap(), FsKind::Xfs);
    }
}
