//! Kernel file-system profiles: how to make and mount one kernel file system (mkfs program and
//! arguments, mount options), one TOML file each under `profiles/kernelfs/`, with sources.
//! (The mke2fs profiles of images written through libext2fs are `profiles/mkfs/`, read by
//! the layout crate.)

use anyhow::{Context, Result};
use layoutlab_rig::FsKind;
use serde::Deserialize;

/// The shipped profiles, in the order lists show them.
const SHIPPED: &[(&str, &str)] = &[
    ("ext3", include_str!("../../../profiles/kernelfs/ext3.toml")),
    (
        "ext4-2007",
        include_str!("../../../profiles/kernelfs/ext4-2007.toml"),
    ),
    ("ext4", include_str!("../../../profiles/kernelfs/ext4.toml")),
    ("xfs", include_str!("../../../profiles/kernelfs/xfs.toml")),
    (
        "btrfs",
        include_str!("../../../profiles/kernelfs/btrfs.toml"),
    ),
];

/// One kernel file-system profile.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelProfile {
    /// Its name.
    pub name: String,
    /// One line saying what it is.
    pub description: String,
    /// File-system kind (`mount -t`).
    pub kind: String,
    /// Arguments of the mkfs program.
    pub mkfs_args: Vec<String>,
    /// Mount options.
    pub mount_options: String,
    /// Where each choice comes from.
    pub sources: Vec<String>,
}

impl KernelProfile {
    /// The rig's kind of this profile.
    pub fn fs_kind(&self) -> Result<FsKind> {
        Ok(FsKind::parse(&self.kind)?)
    }
}

/// Names of the shipped profiles.
pub fn names() -> Vec<&'static str> {
    SHIPPED.iter().map(|(n, _)| *n).collect()
}

/// An experiment's read target: `None` for the raw device ("raw"), else the kernel profile of
/// the file system the file is on (an unknown name lists the valid ones).
pub fn target(t: &str) -> Result<Option<KernelProfile>> {
    if t == "raw" {
        return Ok(None);
    }
    by_name(t)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("target '{t}': not 'raw' and {e}"))
}

/// A shipped profile by name; an unknown name is an error listing the valid ones.
pub fn by_name(name: &str) -> Result<KernelProfile> {
    let (_, text) = SHIPPED.iter().find(|(n, _)| *n == name).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown file system '{name}'; valid: {}",
            names().join(", ")
        )
    })?;
    let p: KernelProfile =
        toml::from_str(text).with_context(|| format!("parsing profiles/kernelfs/{name}.toml"))?;
    p.fs_kind()?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_parse_with_sources() {
        for n in names() {
            let p = by_name(n).unwrap();
            assert_eq!(p.name, n);
            assert!(!p.sources.is_empty(), "{n} cites no source");
        }
    }

    /// The 2007 profiles' kernel reads no bitmap before it needs one: today's background
    /// prefetch made one capture in four of large-delete's ext4-2007 fragmented delete read 288
    /// sectors instead of 552, and ext3's contiguous delete at scale 1 read 206,384 sectors with
    /// one build and 197,560 with another (docs/experiments/large-delete.md). Today's `ext4`
    /// keeps it.
    #[test]
    fn the_2007_profiles_mount_without_todays_bitmap_prefetch() {
        let opts = |n: &str| by_name(n).unwrap().mount_options;
        for name in ["ext4-2007", "ext3"] {
            assert!(
                opts(name)
                    .split(',')
                    .any(|o| o == "no_prefetch_block_bitmaps"),
                "{name}"
            );
        }
        assert!(!opts("ext4").contains("prefetch"));
    }

    #[test]
    fn unknown_profile_lists_the_valid_ones() {
        let e = by_name("ntfs").unwrap_err().to_string();
        assert!(e.contains("ext4-2007") && e.contains("btrfs"), "{e}");
    }
}
