//! What `fsck-predict` is given: detection by content, the mounted check, and turning a
//! metadata dump into a sparse image the checker can read.
//!
//! Detection reads the first 68 KiB and nothing else; nothing here ever opens SOURCE for
//! writing. Magic numbers, from the formats' own definitions:
//! - ext2/3/4: `s_magic` 0xEF53 (little-endian) at byte 1024 + 56 (e2fsprogs
//!   lib/ext2fs/ext2_fs.h, `EXT2_SUPER_MAGIC`);
//! - e2image QCOW2: `QFI\xfb` at 0 (lib/ext2fs/qcow2.h, `QCOW_MAGIC`);
//! - XFS: `XFSB` at 0 (`XFS_SB_MAGIC`); xfs_metadump: `XFSM` (v1, `XFS_MD_MAGIC_V1`) or
//!   `XMD2` (v2) at 0 (xfsprogs include/xfs_metadump.h);
//! - btrfs: `_BHRfS_M` at 64 KiB + 0x40 (`BTRFS_MAGIC`, the primary superblock's `magic`);
//!   btrfs-image: 0xbd5c25e27295668b little-endian at 0 (btrfs-progs image/metadump.h,
//!   `HEADER_MAGIC`).

use anyhow::{bail, Context, Result};
use layoutlab_rig::{TempDir, TempFile};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// The file-system family, which picks the checker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// ext2, ext3 or ext4: `e2fsck -fn -tt`.
    Ext,
    /// XFS: `xfs_repair -n`.
    Xfs,
    /// btrfs: `btrfs check --readonly`.
    Btrfs,
}

impl Family {
    /// The checker as the report names it.
    pub fn checker(self) -> &'static str {
        match self {
            Family::Ext => "e2fsck",
            Family::Xfs => "xfs_repair",
            Family::Btrfs => "btrfs check",
        }
    }
}

/// What SOURCE holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// An ext2/3/4 file system (a device, an image, or an `e2image -r` raw metadata image).
    Ext,
    /// An `e2image -Q` QCOW2 metadata image.
    ExtQcow2,
    /// An XFS file system.
    Xfs,
    /// An `xfs_metadump` file.
    XfsMetadump,
    /// A btrfs file system.
    Btrfs,
    /// A `btrfs-image` file.
    BtrfsImage,
}

impl Format {
    /// Its family.
    pub fn family(self) -> Family {
        match self {
            Format::Ext | Format::ExtQcow2 => Family::Ext,
            Format::Xfs | Format::XfsMetadump => Family::Xfs,
            Format::Btrfs | Format::BtrfsImage => Family::Btrfs,
        }
    }

    /// Whether it must be restored into an image before a checker can read it.
    pub fn is_dump(self) -> bool {
        matches!(
            self,
            Format::ExtQcow2 | Format::XfsMetadump | Format::BtrfsImage
        )
    }

    /// As the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            Format::Ext => "ext2/3/4 file system",
            Format::ExtQcow2 => "e2image QCOW2 metadata image",
            Format::Xfs => "XFS file system",
            Format::XfsMetadump => "xfs_metadump file",
            Format::Btrfs => "btrfs file system",
            Format::BtrfsImage => "btrfs-image file",
        }
    }
}

/// Bytes [`detect_bytes`] looks at.
pub const HEAD_BYTES: usize = 64 * 1024 + 0x48;

/// What the first bytes of a source say it is; `None` if none of the formats.
pub fn detect_bytes(head: &[u8]) -> Option<Format> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    if at(0, b"QFI\xfb") {
        return Some(Format::ExtQcow2);
    }
    if at(0, b"XFSM") || at(0, b"XMD2") {
        return Some(Format::XfsMetadump);
    }
    if at(0, &0xbd5c_25e2_7295_668bu64.to_le_bytes()) {
        return Some(Format::BtrfsImage);
    }
    if at(0, b"XFSB") {
        return Some(Format::Xfs);
    }
    if at(1024 + 56, &0xEF53u16.to_le_bytes()) {
        return Some(Format::Ext);
    }
    if at(64 * 1024 + 0x40, b"_BHRfS_M") {
        return Some(Format::Btrfs);
    }
    None
}

/// A source, looked at.
#[derive(Clone, Debug)]
pub struct Source {
    /// As given.
    pub path: PathBuf,
    /// What it holds.
    pub format: Format,
    /// Whether it is a block device (else a regular file).
    pub block_device: bool,
    /// Its size in bytes (a file's length; a device's size).
    pub bytes: u64,
}

/// Looks at `path` (read-only) and says what it is, or why it cannot be used.
pub fn detect(path: &Path) -> Result<Source> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    let block_device = meta.file_type().is_block_device();
    if !block_device && !meta.is_file() {
        bail!(
            "{} is neither a block device nor a file; give a device, a file-system image or a \
             metadata image (e2image -r/-Q, xfs_metadump, btrfs-image)",
            path.display()
        );
    }
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("opening {} read-only", path.display()))?;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    (&mut file)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .with_context(|| format!("reading {}", path.display()))?;
    let bytes = if block_device {
        use std::io::{Seek, SeekFrom};
        file.seek(SeekFrom::End(0))
            .with_context(|| format!("size of {}", path.display()))?
    } else {
        meta.len()
    };
    let format = detect_bytes(&head).with_context(|| {
        format!(
            "{} is not a file system or metadata image layoutlab knows: expected an ext2/3/4, \
             XFS or btrfs file system (a device or an image), an e2image raw (-r) or QCOW2 (-Q) \
             image, an xfs_metadump file or a btrfs-image file",
            path.display()
        )
    })?;
    if block_device && format.is_dump() {
        bail!(
            "{} is a block device holding a {}; give the dump as a file",
            path.display(),
            format.describe()
        );
    }
    Ok(Source {
        path: path.to_path_buf(),
        format,
        block_device,
        bytes,
    })
}

/// glibc's `gnu_dev_major`/`gnu_dev_minor` of a `dev_t`.
fn split_dev(rdev: u64) -> (u32, u32) {
    let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
    let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// `major:minor` of every mounted block device (`/proc/self/mountinfo`, field 3).
fn mounted_devs() -> Result<Vec<(u32, u32)>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").context("/proc/self/mountinfo")?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let dev = l.split_whitespace().nth(2)?;
            let (a, b) = dev.split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect())
}

fn dev_of_sysfs(dir: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(dir.join("dev")).ok()?;
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The device and its partitions, as `/sys/dev/block/M:m` lists them.
fn dev_and_partitions(dev: (u32, u32)) -> Vec<(u32, u32)> {
    let mut out = vec![dev];
    let dir = PathBuf::from(format!("/sys/dev/block/{}:{}", dev.0, dev.1));
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.join("partition").exists() {
                if let Some(d) = dev_of_sysfs(&p) {
                    out.push(d);
                }
            }
        }
    }
    out
}

/// Why `source` counts as mounted (its device or a partition of it is mounted, or a loop
/// device over the file is), or `None`.
pub fn mounted_reason(source: &Source) -> Result<Option<String>> {
    use std::os::unix::fs::MetadataExt;
    let mounted = mounted_devs()?;
    let meta = std::fs::metadata(&source.path)?;
    let mut candidates: Vec<(u32, u32, String)> = Vec::new();
    if source.block_device {
        let rdev = meta.rdev();
        let dev = split_dev(rdev);
        for d in dev_and_partitions(dev) {
            candidates.push((d.0, d.1, source.path.display().to_string()));
        }
    } else {
        let canon = std::fs::canonicalize(&source.path)?;
        if let Ok(rd) = std::fs::read_dir("/sys/block") {
            for e in rd.flatten() {
                let backing = e.path().join("loop/backing_file");
                let Ok(text) = std::fs::read_to_string(&backing) else {
                    continue;
                };
                if Path::new(text.trim()) == canon {
                    if let Some(d) = dev_of_sysfs(&e.path()) {
                        for p in dev_and_partitions(d) {
                            candidates.push((
                                p.0,
                                p.1,
                                format!("/dev/{}", e.file_name().to_string_lossy()),
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(candidates
        .into_iter()
        .find(|(a, b, _)| mounted.contains(&(*a, *b)))
        .map(|(a, b, via)| format!("{via} (device {a}:{b}) is mounted")))
}

/// An image a checker can read: SOURCE itself, or a sparse file restored from a dump (removed
/// when this is dropped, and by the rig's cleanup on a signal).
pub struct Prepared {
    /// What the loop device goes over.
    pub path: PathBuf,
    // Field order is drop order: the file before its directory.
    _restored: Option<TempFile>,
    _dir: Option<TempDir>,
}

/// Restores a dump into a sparse image under `workdir` with the format's own tool, or passes
/// an image or device through. Checks free space first.
pub fn prepare(source: &Source, workdir: &Path) -> Result<Prepared> {
    if !source.format.is_dump() {
        return Ok(Prepared {
            path: source.path.clone(),
            _restored: None,
            _dir: None,
        });
    }
    // A restored image is sparse: about the dump's size of metadata is written (the QCOW2
    // and btrfs-image formats hold little else). Twice that plus a margin, or refuse.
    let need = source.bytes.saturating_mul(2) + (64 << 20);
    layoutlab_rig::check_free_space(workdir, need)?;
    let dir = TempDir::new(workdir, "layoutlab")?;
    let out = dir.path().join("restored.img");
    let restored = TempFile::adopt(&out);
    let src = source.path.display().to_string();
    let dst = out.display().to_string();
    let (program, args): (&str, Vec<&str>) = match source.format {
        Format::ExtQcow2 => ("e2image", vec!["-r", &src, &dst]),
        Format::XfsMetadump => ("xfs_mdrestore", vec![&src, &dst]),
        Format::BtrfsImage => ("btrfs-image", vec!["-r", &src, &dst]),
        _ => unreachable!("not a dump"),
    };
    eprintln!(
        "restoring the {} with {program} ...",
        source.format.describe()
    );
    layoutlab_rig::run_command(program, &args)
        .with_context(|| format!("restoring {} with {program}", source.path.display()))?;
    Ok(Prepared {
        path: out,
        _restored: Some(restored),
        _dir: Some(dir),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(off: usize, magic: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; HEAD_BYTES];
        v[off..off + magic.len()].copy_from_slice(magic);
        v
    }

    #[test]
    fn dev_t_splits_as_glibc_does() {
        // makedev(8, 1) and makedev(259, 70000), glibc's encoding.
        assert_eq!(split_dev(0x801), (8, 1));
        let (ma, mi) = (259u64, 70000u64);
        let dev = ((ma & 0xfff) << 8) | ((ma & !0xfff) << 32) | (mi & 0xff) | ((mi & !0xff) << 12);
        assert_eq!(split_dev(dev), (259, 70000));
    }

    #[test]
    fn each_format_is_told_by_its_magic() {
        assert_eq!(detect_bytes(&with(1080, &[0x53, 0xEF])), Some(Format::Ext));
        assert_eq!(detect_bytes(&with(0, b"QFI\xfb")), Some(Format::ExtQcow2));
        assert_eq!(detect_bytes(&with(0, b"XFSB")), Some(Format::Xfs));
        assert_eq!(detect_bytes(&with(0, b"XFSM")), Some(Format::XfsMetadump));
        assert_eq!(detect_bytes(&with(0, b"XMD2")), Some(Format::XfsMetadump));
        assert_eq!(
            detect_bytes(&with(0, &[0x8b, 0x66, 0x95, 0x72, 0xe2, 0x25, 0x5c, 0xbd])),
            Some(Format::BtrfsImage)
        );
        assert_eq!(
            detect_bytes(&with(65536 + 64, b"_BHRfS_M")),
            Some(Format::Btrfs)
        );
        // The ext magic byte-swapped, zeros, and a file shorter than any magic.
        assert_eq!(detect_bytes(&with(1080, &[0xEF, 0x53])), None);
        assert_eq!(detect_bytes(&[0u8; HEAD_BYTES]), None);
        assert_eq!(detect_bytes(b"QF"), None);
    }
}
