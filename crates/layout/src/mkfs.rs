//! mkfs profiles: the mke2fs defaults of an era, and the arguments that make today's mke2fs
//! (1.47) reproduce them.

use crate::LayoutError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the journal size is chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JournalSize {
    /// No journal.
    #[serde(rename = "none")]
    None,
    /// e2fsprogs 1.40's `ext2fs_default_journal_size()` (lib/ext2fs/mkjournal.c).
    #[serde(rename = "default-1.40")]
    Default140,
    /// e2fsprogs 1.47's `ext2fs_default_journal_size()` (up to 1 GiB of blocks).
    #[serde(rename = "default-1.47")]
    Default147,
    /// A fixed number of journal blocks.
    #[serde(untagged)]
    Blocks(u64),
}

/// The mke2fs options of an era (see docs/mkfs-profiles.md and profiles/mkfs/*.toml).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MkfsProfile {
    /// Profile name, e.g. "ext3-2007".
    pub name: String,
    /// One line for humans.
    pub description: String,
    /// File-system block size.
    pub block_size_bytes: u32,
    /// Blocks per block group.
    pub blocks_per_group: u32,
    /// On-disk inode size.
    pub inode_size_bytes: u32,
    /// One inode per this many bytes of file system (mke2fs `-i`).
    pub bytes_per_inode: u64,
    /// Blocks reserved for root, in percent (mke2fs `-m`).
    pub reserved_percent: f64,
    /// Feature names as mke2fs spells them (`-O`).
    pub features: Vec<String>,
    /// Features the kernel of the era set at run time (kept in the image so that it looks
    /// like the file system the era's kernel left behind).
    #[serde(default)]
    pub kernel_features: Vec<String>,
    /// Journal size rule.
    pub journal: JournalSize,
    /// Block the journal allocation starts searching from (first free block at or after it).
    #[serde(default)]
    pub journal_goal_block: u64,
    /// Where the journal goes: "fixed" (from `journal_goal_block`) or "midpoint" (e2fsprogs
    /// 1.41's `write_journal_inode()`: the first block of the group with the most free
    /// blocks near the middle of the file system, flex-group aligned).
    #[serde(default)]
    pub journal_placement: JournalPlacement,
    /// Groups per flex group (mke2fs `-G`; 0 without flex_bg).
    #[serde(default)]
    pub flex_bg_size: u32,
    /// Superblock fields the era's mke2fs set from its own defaults that no mke2fs option
    /// reaches (directory hash, default mount options, check interval), by debugfs's
    /// `set_super_value` name → value; applied after mke2fs (`layoutlab_image::mkfs_profile`).
    /// Empty: today's mke2fs's values stand.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub superblock: BTreeMap<String, String>,
    /// The era's mke2fs wrote every inode table out and marked each group ITABLE_ZEROED
    /// (1.41 with uninit_bg and `lazy_itable_init` off, its default). A fresh sparse image's
    /// tables are holes, zeros already: today's mke2fs marks them so without writing them
    /// (`-E assume_storage_prezeroed=1`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inode_tables_zeroed: bool,
    /// The era's libext2fs cleared BLOCK_UNINIT on every group holding a backup of the group
    /// descriptors when there are reserved GDT blocks (1.41's `ext2fs_reserve_super_and_bgd`),
    /// so those groups' block bitmaps are on disk and e2fsck reads them; today's keeps the flag.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backup_groups_block_init: bool,
    /// Data blocks the era's mke2fs mapped to the journal inode past its size: 1 for
    /// e2fsprogs 1.40, whose `mkjournal_proc()` does not count logical block 0 toward the
    /// journal's length (1.41 does). i_size stays the journal's size; the blocks are in use.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub journal_blocks_past_size: u64,
    /// The era's mke2fs packed a short last flex group as if it were whole (e2fsprogs 1.41's
    /// `ext2fs_allocate_group_table()`: inode bitmaps `flex_bg_size` blocks after the first
    /// block bitmap, inode tables `2 × flex_bg_size` after it, whatever the number of groups);
    /// today's mke2fs keeps that flex group's tables contiguous. Modelled past the first flex
    /// group only (a file system of fewer groups keeps today's packing; docs/mkfs-profiles.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub short_flex_group_packed_as_whole: bool,
    /// The era's mke2fs reserved `reserved_percent` of the block count asked for and kept
    /// that count when `ext2fs_initialize()` dropped a last group too small to keep (e2fsprogs
    /// 1.40 and 1.41: `s_r_blocks_count = param->s_r_blocks_count`, no recomputation);
    /// today's recomputes it from the smaller count. The image path writes the count.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reserved_blocks_before_drop: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where the journal goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum JournalPlacement {
    /// First free blocks from `journal_goal_block` (1.40's mkjournal_proc from block 0).
    #[default]
    #[serde(rename = "fixed")]
    Fixed,
    /// e2fsprogs 1.41 lib/ext2fs/mkjournal.c `write_journal_inode()` (1.47's
    /// `get_midpoint_journal_block()` is the same arithmetic).
    #[serde(rename = "midpoint")]
    Midpoint,
}

/// The embedded profiles, one line each: (name, the TOML file under profiles/mkfs/).
const PROFILES: &[(&str, &str)] = &[
    ("ext3-2007", EXT3_2007_TOML),
    (
        "ext3-2009",
        include_str!("../../../profiles/mkfs/ext3-2009.toml"),
    ),
    ("ext4-2009", EXT4_2009_TOML),
    (
        "ext4-meta-ssd",
        include_str!("../../../profiles/mkfs/ext4-meta-ssd.toml"),
    ),
    ("ext4-kernel", EXT4_KERNEL_TOML),
    (
        "ext4-2007",
        include_str!("../../../profiles/mkfs/ext4-2007.toml"),
    ),
];

/// Names of the embedded profiles.
pub const MKFS_PROFILE_NAMES: &[&str] = &[
    "ext3-2007",
    "ext3-2009",
    "ext4-2009",
    "ext4-meta-ssd",
    "ext4-kernel",
    "ext4-2007",
];

const EXT3_2007_TOML: &str = include_str!("../../../profiles/mkfs/ext3-2007.toml");
const EXT4_2009_TOML: &str = include_str!("../../../profiles/mkfs/ext4-2009.toml");
const EXT4_KERNEL_TOML: &str = include_str!("../../../profiles/mkfs/ext4-kernel.toml");

/// Features this model knows the on-disk consequences of.
pub const KNOWN_FEATURES: &[&str] = &[
    "sparse_super",
    "filetype",
    "resize_inode",
    "dir_index",
    "has_journal",
    "large_file",
    "ext_attr",
    // ext4 (e2fsprogs 1.41): the layout model covers flex_bg's table packing and 64bit's
    // 64-byte descriptors; the others change no block's place at mkfs time (extent maps
    // lost+found, the root and the journal by extents, which the geometry handles).
    "extent",
    "flex_bg",
    "uninit_bg",
    "huge_file",
    "dir_nlink",
    "extra_isize",
    "64bit",
    // Checksums of metadata blocks (e2fsprogs 1.43+): no block changes place, but directory
    // blocks end in a 12-byte checksum tail (the ext4 planner's DirGrowth counts it).
    "metadata_csum",
];

impl MkfsProfile {
    /// An embedded profile by name; the error lists the valid names.
    pub fn by_name(name: &str) -> Result<MkfsProfile, LayoutError> {
        match PROFILES.iter().find(|(n, _)| *n == name) {
            Some((_, text)) => MkfsProfile::from_toml_str(text, &format!("embedded {name}")),
            None => Err(LayoutError::UnknownProfile {
                name: name.to_string(),
                valid: MKFS_PROFILE_NAMES.iter().map(|s| s.to_string()).collect(),
            }),
        }
    }

    /// Parses and checks a profile; `source_name` names the file in errors.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<MkfsProfile, LayoutError> {
        let bad = |reason: String| LayoutError::BadProfile {
            source_name: source_name.to_string(),
            reason,
        };
        let profile: MkfsProfile = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if ![1024, 2048, 4096].contains(&profile.block_size_bytes) {
            return Err(bad(format!(
                "block_size_bytes = {} (want 1024, 2048 or 4096)",
                profile.block_size_bytes
            )));
        }
        let max_bpg = 8 * profile.block_size_bytes;
        if profile.blocks_per_group < 256
            || profile.blocks_per_group > max_bpg
            || profile.blocks_per_group % 8 != 0
        {
            return Err(bad(format!(
                "blocks_per_group = {} (want a multiple of 8 in 256..={max_bpg})",
                profile.blocks_per_group
            )));
        }
        let isz = profile.inode_size_bytes;
        if isz < 128 || isz > profile.block_size_bytes || !isz.is_power_of_two() {
            return Err(bad(format!(
                "inode_size_bytes = {isz} (want a power of two >= 128)"
            )));
        }
        if profile.bytes_per_inode < 1024 || profile.bytes_per_inode > 64 * 1024 * 1024 {
            return Err(bad(format!(
                "bytes_per_inode = {}",
                profile.bytes_per_inode
            )));
        }
        if !(0.0..=50.0).contains(&profile.reserved_percent) {
            return Err(bad(format!(
                "reserved_percent = {}",
                profile.reserved_percent
            )));
        }
        for f in profile.features.iter().chain(&profile.kernel_features) {
            if !KNOWN_FEATURES.contains(&f.as_str()) {
                return Err(bad(format!(
                    "feature '{f}' is not modelled (known: {})",
                    KNOWN_FEATURES.join(", ")
                )));
            }
        }
        if profile.has_feature("flex_bg")
            != (profile.flex_bg_size >= 2 && profile.flex_bg_size.is_power_of_two())
        {
            return Err(bad(format!(
                "flex_bg_size = {}: flex_bg needs a power of two >= 2, and only flex_bg takes one",
                profile.flex_bg_size
            )));
        }
        if profile.short_flex_group_packed_as_whole && !profile.has_feature("flex_bg") {
            return Err(bad(
                "short_flex_group_packed_as_whole needs flex_bg".to_string()
            ));
        }
        if profile.journal_blocks_past_size > 0 && profile.has_feature("extent") {
            // e2fsprogs 1.40 made no extent-mapped journal; the image path adds the block
            // through the block map
            return Err(bad(
                "journal_blocks_past_size is for a block-mapped journal (no extent)".to_string(),
            ));
        }
        if profile.has_feature("has_journal") == (profile.journal == JournalSize::None) {
            return Err(bad("has_journal and journal disagree".to_string()));
        }
        Ok(profile)
    }

    /// Reads a profile file.
    pub fn from_file(path: &std::path::Path) -> Result<MkfsProfile, LayoutError> {
        let text = std::fs::read_to_string(path).map_err(|e| LayoutError::BadProfile {
            source_name: path.display().to_string(),
            reason: e.to_string(),
        })?;
        MkfsProfile::from_toml_str(&text, &path.display().to_string())
    }

    /// Whether mke2fs sets `feature` (kernel features not included).
    pub fn has_feature(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }

    /// Journal data blocks for a file system of `blocks_count` blocks (0: no journal).
    ///
    /// `Default140` is e2fsprogs 1.40 lib/ext2fs/mkjournal.c `ext2fs_default_journal_size()`:
    /// < 2048 blocks: none; < 32768: 1024; < 256Ki: 4096; < 512Ki: 8192; < 1Mi: 16384;
    /// else 32768. (Today's e2fsprogs gives up to 262144 blocks, hence the explicit size.)
    pub fn journal_blocks(&self, blocks_count: u64) -> u64 {
        match self.journal {
            JournalSize::None => 0,
            JournalSize::Blocks(n) => n,
            JournalSize::Default140 => default_journal_blocks_140(blocks_count),
            JournalSize::Default147 => default_journal_blocks_147(blocks_count).unwrap_or(0),
        }
    }

    /// Block the journal's first-free search starts at (see the profile's citation).
    pub fn journal_goal_block(&self) -> u64 {
        self.journal_goal_block
    }

    /// Arguments for e2fsprogs 1.47's `mke2fs` (without the program name) that make the
    /// same layout on an image of `image_bytes` bytes: everything that shapes the layout is
    /// explicit (`-O none,...` clears the installed mke2fs.conf's features) and the journal
    /// gets the era's size and search start (`-J size=,location=`). Run
    /// `mke2fs -F -q <args> <image> <mke2fs_blocks_arg(image_bytes)>`.
    pub fn mke2fs_args(&self, image_bytes: u64) -> Vec<String> {
        let blocks = image_bytes / u64::from(self.block_size_bytes);
        let mut features = vec!["none".to_string()];
        features.extend(
            self.features
                .iter()
                .chain(&self.kernel_features)
                .filter(|f| f.as_str() != "has_journal")
                .cloned(),
        );
        // Only what shapes the layout: how to run mke2fs (-F, -q) is the caller's business.
        let fs_type = if self.has_feature("extent") || self.has_feature("flex_bg") {
            "ext4"
        } else if self.has_feature("has_journal") {
            "ext3"
        } else {
            "ext2"
        };
        let mut args = vec![
            "-t".to_string(),
            fs_type.to_string(),
            "-b".to_string(),
            self.block_size_bytes.to_string(),
            "-g".to_string(),
            self.blocks_per_group.to_string(),
            "-I".to_string(),
            self.inode_size_bytes.to_string(),
            "-i".to_string(),
            self.bytes_per_inode.to_string(),
            "-m".to_string(),
            format!("{}", self.reserved_percent),
            "-O".to_string(),
            features.join(","),
            "-E".to_string(),
            if self.inode_tables_zeroed {
                "nodiscard,assume_storage_prezeroed=1".to_string()
            } else {
                "nodiscard".to_string()
            },
        ];
        if self.flex_bg_size > 0 {
            args.push("-G".to_string());
            args.push(self.flex_bg_size.to_string());
        }
        let journal = self.journal_blocks(blocks);
        if journal > 0 {
            // -J size= is in MiB; every tier of the 1.40 table is a whole number of MiB for
            // 1, 2 and 4 KiB blocks, and the profile check keeps fixed sizes so.
            let mib = journal * u64::from(self.block_size_bytes) / (1 << 20);
            args.push("-J".to_string());
            let goal = match self.journal_placement {
                JournalPlacement::Fixed => self.journal_goal_block,
                // the goal depends on the tables: ask the geometry (same arithmetic as
                // mke2fs's own midpoint, passed explicitly so the two cannot drift)
                JournalPlacement::Midpoint => crate::Geometry::new(self, image_bytes)
                    .map(|g| g.journal_goal)
                    .unwrap_or(0),
            };
            args.push(format!("size={mib},location={goal}"));
        }
        args
    }

    /// The device-size argument mke2fs expects after the device path (in blocks).
    pub fn mke2fs_blocks_arg(&self, image_bytes: u64) -> String {
        (image_bytes / u64::from(self.block_size_bytes)).to_string()
    }
}

/// e2fsprogs 1.40 (to 1.42) lib/ext2fs/mkjournal.c `ext2fs_default_journal_size()`: journal
/// blocks for a file system of `blocks` blocks (0 below 2048: no journal).
pub fn default_journal_blocks_140(blocks: u64) -> u64 {
    match blocks {
        0..=2047 => 0,
        2048..=32767 => 1024,
        32768..=262_143 => 4096,
        262_144..=524_287 => 8192,
        524_288..=1_048_575 => 16384,
        _ => 32768,
    }
}

/// e2fsprogs 1.47 lib/ext2fs/mkjournal.c `ext2fs_default_journal_size()`: journal blocks for a
/// file system of `blocks` blocks (`None` below 2048 blocks: "too small for a journal").
pub fn default_journal_blocks_147(blocks: u64) -> Option<u64> {
    Some(match blocks {
        0..=2047 => return None,
        2048..=32767 => 1024,
        32768..=262_143 => 4096,
        262_144..=524_287 => 8192,
        524_288..=4_194_303 => 16384,
        4_194_304..=8_388_607 => 32768,
        8_388_608..=16_777_215 => 65536,
        16_777_216..=33_554_431 => 131_072,
        _ => 262_144,
    })
}

/// Bytes of a `fs_bytes` file system an aging stream leaves to metadata (what
/// `layoutlab_workload::aging::age` is given): live file data is held below
/// `fs_bytes − margin`, because the planners do not model ENOSPC. It lives here, with the
/// profiles and journal tables it bounds, not in the workload crate, which knows no mkfs.
///
/// The sum of (docs/aging.md):
/// - inode tables: 1/64 of the file system (256-byte inodes at 16 KiB per inode, ext4's
///   mke2fs.conf; 128 at 8 KiB, ext3-2007's: the same fraction);
/// - the journal: the larger of e2fsprogs 1.40's and 1.47's default sizes (4 MiB to 1 GiB)
///   in 4 KiB blocks, the two tables the profiles use;
/// - bitmaps, group descriptors and reserved GDT blocks: 1/256 (what mke2fs takes beyond
///   inode tables and journal is at most 0.2% with layoutlab's profiles from 64 MiB to
///   400 GB);
/// - mapping blocks: 1/128 (one ext3 indirect block maps 1024 data blocks, but the
///   ext3-metacluster policy keeps 1/128 of every group for them, its `size` default, and
///   data never takes that space);
/// - directories: 1/128 (ubuntu-32g's 28,022 directories take 0.3% of its 32 GiB; twice
///   that, and a margin for the directories an aging stream makes).
pub fn metadata_margin_bytes(fs_bytes: u64) -> u64 {
    const BLOCK: u64 = 4096;
    let blocks = fs_bytes / BLOCK;
    let journal =
        default_journal_blocks_140(blocks).max(default_journal_blocks_147(blocks).unwrap_or(0));
    fs_bytes / 64 + journal * BLOCK + fs_bytes / 256 + fs_bytes / 128 + fs_bytes / 128
}

/// The largest fullness an aging stream may hold on a `fs_bytes` file system: what the
/// [`metadata_margin_bytes`] leave.
pub fn max_fullness(fs_bytes: u64) -> f64 {
    layoutlab_workload::aging::fullness_cap(fs_bytes, metadata_margin_bytes(fs_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The margin figures docs/aging.md gives: bench5's 400 GB, ubuntu-32g's 32 GiB (where
    /// 1.47's 256 MiB journal is the larger), the 64 MiB minimum (a 4 MiB journal).
    #[test]
    fn the_documented_margin_figures_hold() {
        let bench5 = layoutlab_workload::population_by_name("bench5").unwrap();
        assert!((max_fullness(bench5.fs_bytes) - 0.9622).abs() < 5e-5);
        assert!((max_fullness(32 << 30) - 0.9570).abs() < 5e-5);
        assert!((max_fullness(64 << 20) - 0.9023).abs() < 5e-5);
        // 512 MiB of inode tables, 256 MiB of journal, 128 MiB of bitmaps and descriptors,
        // 256 MiB each of mapping blocks and directories
        assert_eq!(metadata_margin_bytes(32 << 30), 1408 << 20);
        assert_eq!(max_fullness(0), 0.0);
    }

    #[test]
    fn every_listed_profile_loads_under_its_own_name() {
        let names: Vec<&str> = PROFILES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, MKFS_PROFILE_NAMES);
        for name in MKFS_PROFILE_NAMES {
            assert_eq!(MkfsProfile::by_name(name).unwrap().name, *name);
        }
    }

    #[test]
    fn embedded_profile_parses() {
        let p = MkfsProfile::by_name("ext3-2007").unwrap();
        assert_eq!(p.block_size_bytes, 4096);
        assert_eq!(p.inode_size_bytes, 128);
        assert_eq!(p.bytes_per_inode, 8192);
        assert!(p.has_feature("resize_inode") && p.has_feature("has_journal"));
        assert_eq!(p.journal_blocks(97_677_846), 32768);
        assert_eq!(p.journal_blocks(100_000), 4096);
    }

    #[test]
    fn unknown_profile_lists_names() {
        let e = MkfsProfile::by_name("ext9").unwrap_err().to_string();
        assert!(e.contains("ext3-2007"), "{e}");
    }

    #[test]
    fn bad_profile_says_where() {
        let text = EXT3_2007_TOML.replace("block_size_bytes = 4096", "block_size_bytes = 3000");
        let e = MkfsProfile::from_toml_str(&text, "x.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.toml") && e.contains("block_size_bytes"),
            "{e}"
        );
        let e = MkfsProfile::from_toml_str("name = 3", "y.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("y.toml") && e.contains("line 1"), "{e}");
        let text = EXT3_2007_TOML.replace("\"dir_index\"", "\"flex_bg\"");
        assert!(MkfsProfile::from_toml_str(&text, "z").is_err());
    }

    #[test]
    fn ext4_2009_profile_parses_and_checks_flex_bg() {
        let p = MkfsProfile::by_name("ext4-2009").unwrap();
        assert_eq!(
            (p.inode_size_bytes, p.bytes_per_inode, p.flex_bg_size),
            (256, 16384, 16)
        );
        assert!(p.has_feature("extent") && p.has_feature("uninit_bg"));
        assert!(!p.has_feature("64bit"));
        assert_eq!(p.journal_placement, JournalPlacement::Midpoint);
        let a = p.mke2fs_args(40_008_845_721).join(" ");
        assert!(a.starts_with("-t ext4 ") && a.contains("-G 16"), "{a}");
        // the midpoint goal: group 149 holds the middle block; its flex group starts at 144,
        // whose first group holds the packed tables, so group 145 has the most free blocks
        assert!(a.contains(&format!("location={}", 145 * 32768)), "{a}");
        let text = EXT4_2009_TOML.replace("flex_bg_size = 16", "flex_bg_size = 12");
        let e = MkfsProfile::from_toml_str(&text, "f.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("flex_bg_size = 12"), "{e}");
        let text = EXT3_2007_TOML.to_string() + "\nflex_bg_size = 16\n";
        assert!(MkfsProfile::from_toml_str(&text, "g.toml").is_err());
    }

    #[test]
    fn args_are_explicit() {
        let p = MkfsProfile::by_name("ext3-2007").unwrap();
        let a = p.mke2fs_args(400_088_457_216).join(" ");
        assert!(
            a.contains("-b 4096") && a.contains("-I 128") && a.contains("-i 8192"),
            "{a}"
        );
        assert!(a.contains("-O none,sparse_super,filetype,resize_inode,dir_index,large_file"));
        assert!(a.contains("-J size=128,location=0"), "{a}");
    }
}
