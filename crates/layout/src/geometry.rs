//! The layout mke2fs makes: groups, superblock backups, descriptor and reserved descriptor
//! blocks, bitmaps, inode tables, and the blocks mke2fs itself allocates (root directory,
//! lost+found, resize inode, journal).
//!
//! Computed as e2fsprogs does (lib/ext2fs/initialize.c `ext2fs_initialize()` and
//! `calc_reserved_gdt_blocks()`, alloc_tables.c `ext2fs_allocate_group_table()`,
//! closefs.c `ext2fs_bg_has_super()`, misc/mke2fs.c `create_root_dir()`,
//! `create_lost_and_found()`, res_gdt.c `ext2fs_create_resize_inode()`, mkjournal.c);
//! the arithmetic is the same in 1.40 and 1.47, and an oracle test compares the result with
//! the real mke2fs 1.47 + dumpe2fs.

use crate::mkfs::MkfsProfile;
pub use crate::mkfs::{default_journal_blocks_140, default_journal_blocks_147};
use crate::LayoutError;
use serde::{Deserialize, Serialize};

/// libext2fs's EXT2_ET_TOO_MANY_INODES (lib/ext2fs/ext2_err.et.in), the same in 1.41 and 1.47:
/// what mke2fs prints when `ext2fs_initialize()` cannot fit the groups' metadata.
const TOO_MANY_INODES: &str = "Cannot create filesystem with requested number of inodes";

/// What a reserved (metadata) extent holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MetaKind {
    /// Superblock (primary or backup).
    Superblock,
    /// Group descriptor blocks.
    Gdt,
    /// Reserved GDT blocks (online resize).
    ReservedGdt,
    /// Block bitmap.
    BlockBitmap,
    /// Inode bitmap.
    InodeBitmap,
    /// Inode table.
    InodeTable,
    /// Root directory's first block.
    RootDir,
    /// lost+found's blocks.
    LostFound,
    /// The resize inode's double-indirect block.
    ResizeDind,
    /// Journal blocks (data and its indirect blocks).
    Journal,
    /// The journal's extent-tree blocks (a journal in more than 4 extents).
    JournalTree,
    /// The orphan file's blocks (data and mapping; `orphan_file`, e2fsprogs 1.47).
    OrphanFile,
    /// The multiple-mount-protection block (`mmp`).
    Mmp,
}

/// A run of blocks mke2fs used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaExtent {
    /// What it holds.
    pub kind: MetaKind,
    /// First block.
    pub start: u64,
    /// Length in blocks.
    pub blocks: u64,
}

/// One block group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupLayout {
    /// First block of the group.
    pub first_block: u64,
    /// Blocks in the group (the last group may be short).
    pub blocks: u64,
    /// Whether it holds a superblock and descriptor copy.
    pub has_super: bool,
    /// Block bitmap location.
    pub block_bitmap: u64,
    /// Inode bitmap location.
    pub inode_bitmap: u64,
    /// First inode-table block.
    pub inode_table: u64,
}

/// The whole mke2fs layout of one file system.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    /// Profile it was made with.
    pub profile: String,
    /// mke2fs features (profile features and kernel features).
    pub features: Vec<String>,
    /// Block size.
    pub block_size_bytes: u32,
    /// Blocks in the file system.
    pub blocks_count: u64,
    /// First data block (1 for 1 KiB blocks, else 0).
    pub first_data_block: u64,
    /// Blocks per group.
    pub blocks_per_group: u64,
    /// Inodes per group.
    pub inodes_per_group: u32,
    /// Inodes in the file system.
    pub inodes_count: u64,
    /// Inode-table blocks per group.
    pub inode_table_blocks: u64,
    /// Group descriptor blocks.
    pub gdt_blocks: u64,
    /// Reserved GDT blocks (per copy).
    pub reserved_gdt_blocks: u64,
    /// Root-reserved blocks.
    pub reserved_blocks: u64,
    /// Journal data blocks (0 without journal).
    pub journal_blocks: u64,
    /// Journal blocks including its indirect blocks.
    pub journal_total_blocks: u64,
    /// Block the journal's allocation started from.
    #[serde(default)]
    pub journal_goal: u64,
    /// Groups per flex group (0: no flex_bg).
    #[serde(default)]
    pub flex_bg_size: u64,
    /// Bytes per group descriptor (32, or 64 with 64bit).
    #[serde(default)]
    pub desc_bytes: u64,
    /// Per-group layout.
    pub groups: Vec<GroupLayout>,
    /// Every block mke2fs used, in allocation order within each kind.
    pub meta: Vec<MetaExtent>,
}

pub use crate::mapping::{addr_per_block, mapping_blocks_for, DIRECT_BLOCKS};

/// sparse_super: groups 0, 1 and powers of 3, 5 and 7 hold backups
/// (lib/ext2fs/closefs.c `ext2fs_bg_has_super()`).
pub fn group_has_super(group: u64, sparse_super: bool) -> bool {
    if group <= 1 || !sparse_super {
        return true;
    }
    if group % 2 == 0 {
        return false;
    }
    [3u64, 5, 7].iter().any(|&base| {
        let mut p = base;
        while p < group {
            p *= base;
        }
        p == group
    })
}

/// How big the journal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalRule {
    /// No journal.
    None,
    /// This many blocks (journal plus fast-commit area).
    Blocks(u64),
    /// This many blocks asked for with mke2fs `-J size=` (misc/util.c
    /// `figure_journal_size()`): none below 2048 blocks of file system, else an error outside
    /// 1024..=10240000 blocks or above half the free blocks.
    Requested(u64),
    /// The same asked of e2fsprogs 1.41.14 (its misc/util.c `figure_journal_size()`): the same
    /// bounds, but the half is of the free blocks after every group's tables and mke2fs's
    /// root directory, lost+found and resize inode are allocated (its `main()` asks later),
    /// and the refusals are in its words.
    Requested141(u64),
    /// e2fsprogs 1.40's `ext2fs_default_journal_size()` of the final block count.
    Default140,
    /// e2fsprogs 1.47's `ext2fs_default_journal_size()` of the final block count (up to 1 GiB of
    /// blocks), plus `fast_commit`'s 1/64 when asked.
    Default147 {
        /// Add the fast-commit area (`EXT2_JOURNAL_TO_FC_BLKS_RATIO` = 64).
        fast_commit: bool,
    },
}

/// Where the journal's first-free search starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalGoal {
    /// From this block.
    Fixed(u64),
    /// `get_midpoint_journal_block()` (e2fsprogs 1.41 to today).
    Midpoint,
}

/// What `ext2fs_initialize()` and mke2fs's `main()` are given: the file-system parameters
/// mke2fs's option and mke2fs.conf processing (`PRS()`) arrived at. [`Geometry::new`] makes
/// them from an [`MkfsProfile`]; `crate::mke2fs` from mke2fs's own options.
#[derive(Clone, Debug, PartialEq)]
pub struct GeometryParams {
    /// Name for messages (the profile's).
    pub name: String,
    /// Every feature set (mke2fs names).
    pub features: Vec<String>,
    /// Block size in bytes.
    pub block_size_bytes: u32,
    /// Blocks asked for (`ext2fs_blocks_count(param)`).
    pub blocks: u64,
    /// Blocks per group asked for (0: 8 × block size).
    pub blocks_per_group: u64,
    /// Inode size in bytes.
    pub inode_size_bytes: u32,
    /// Inodes asked for (`param->s_inodes_count`; 0: one per 4 KiB).
    pub inodes: u64,
    /// Root-reserved blocks asked for (`param` r_blocks).
    pub r_blocks: u64,
    /// Groups per flex group (0 without flex_bg).
    pub flex_bg_size: u64,
    /// Reserved GDT blocks asked for (`-E resize=`; 0: `calc_reserved_gdt_blocks()`).
    pub reserved_gdt_blocks: u64,
    /// `s_backup_bgs` asked for (sparse_super2).
    pub backup_bgs: [u64; 2],
    /// The journal's size.
    pub journal: JournalRule,
    /// Where the journal goes.
    pub journal_goal: JournalGoal,
    /// Orphan-file blocks with `orphan_file` (0: lib/ext2fs/orphan.c
    /// `ext2fs_default_orphan_file_blocks()` of the final block count).
    pub orphan_file_blocks: u64,
    /// Journal data blocks mapped past its size (1 for e2fsprogs 1.40's `mkjournal_proc()`;
    /// see [`MkfsProfile::journal_blocks_past_size`]).
    pub journal_blocks_past_size: u64,
    /// Pack a short last flex group as if whole (e2fsprogs 1.41; see
    /// [`MkfsProfile::short_flex_group_packed_as_whole`]).
    pub short_flex_group_packed_as_whole: bool,
    /// Keep `r_blocks` when the last group is dropped (e2fsprogs 1.40/1.41; see
    /// [`MkfsProfile::reserved_blocks_before_drop`]).
    pub reserved_blocks_before_drop: bool,
    /// Turn on `meta_bg` (and drop the resize inode) when the descriptors and reserved
    /// descriptors would take more than 3/4 of a group, as 1.47's `ext2fs_initialize()` does;
    /// 1.41.14's has no such rule and refuses the file system (too many inodes).
    pub meta_bg_when_descriptors_fill: bool,
}

impl GeometryParams {
    /// What mke2fs 1.47 is given for `profile` on `fs_bytes` bytes (see
    /// [`MkfsProfile::mke2fs_args`]).
    pub fn from_profile(profile: &MkfsProfile, fs_bytes: u64) -> GeometryParams {
        let bs = u64::from(profile.block_size_bytes);
        let blocks = fs_bytes / bs;
        GeometryParams {
            name: profile.name.clone(),
            features: profile
                .features
                .iter()
                .chain(&profile.kernel_features)
                .cloned()
                .collect(),
            block_size_bytes: profile.block_size_bytes,
            blocks,
            blocks_per_group: u64::from(profile.blocks_per_group),
            inode_size_bytes: profile.inode_size_bytes,
            // misc/mke2fs.c: s_inodes_count = blocks * blocksize / inode_ratio.
            inodes: blocks * bs / profile.bytes_per_inode,
            // misc/mke2fs.c: r_blocks = reserved_ratio * blocks / 100.0 (truncated).
            r_blocks: (profile.reserved_percent * blocks as f64 / 100.0) as u64,
            flex_bg_size: u64::from(profile.flex_bg_size),
            reserved_gdt_blocks: 0,
            backup_bgs: [0, 0],
            journal: match profile.journal {
                crate::mkfs::JournalSize::None => JournalRule::None,
                crate::mkfs::JournalSize::Blocks(n) => JournalRule::Blocks(n),
                crate::mkfs::JournalSize::Default140 => JournalRule::Default140,
                crate::mkfs::JournalSize::Default147 => {
                    JournalRule::Default147 { fast_commit: false }
                }
            },
            journal_goal: match profile.journal_placement {
                crate::mkfs::JournalPlacement::Fixed => {
                    JournalGoal::Fixed(profile.journal_goal_block())
                }
                crate::mkfs::JournalPlacement::Midpoint => JournalGoal::Midpoint,
            },
            orphan_file_blocks: 0,
            journal_blocks_past_size: profile.journal_blocks_past_size,
            short_flex_group_packed_as_whole: profile.short_flex_group_packed_as_whole,
            reserved_blocks_before_drop: profile.reserved_blocks_before_drop,
            // never met by a profile's geometry (4 KiB blocks, whole groups), so one rule
            meta_bg_when_descriptors_fill: true,
        }
    }

    fn has(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }
}

impl Geometry {
    /// What mke2fs (1.40 arithmetic; checked against 1.47) makes on `fs_bytes` bytes.
    pub fn new(profile: &MkfsProfile, fs_bytes: u64) -> Result<Geometry, LayoutError> {
        let bs = u64::from(profile.block_size_bytes);
        if fs_bytes / bs > u64::from(u32::MAX) && !profile.has_feature("64bit") {
            return Err(LayoutError::BadSize {
                fs_bytes,
                reason: "more than 2^32 blocks (without 64bit)".into(),
            });
        }
        Geometry::from_params(&GeometryParams::from_profile(profile, fs_bytes))
    }

    /// What `ext2fs_initialize()` (lib/ext2fs/initialize.c, e2fsprogs 1.47), the table
    /// allocation and mke2fs's own allocations make of `p`.
    pub fn from_params(p: &GeometryParams) -> Result<Geometry, LayoutError> {
        let bs = u64::from(p.block_size_bytes);
        let fs_bytes = p.blocks * bs;
        let bad = |reason: String| LayoutError::BadSize { fs_bytes, reason };
        let wide = p.has("64bit");
        let first_data_block = u64::from(bs == 1024);
        // EXT2_MAX_BLOCKS_PER_GROUP: (2^16 - 8) clusters.
        let mut bpg = if p.blocks_per_group != 0 {
            p.blocks_per_group
        } else {
            bs * 8
        }
        .min((1 << 16) - 8);
        let mut blocks = p.blocks;
        let mut r_blocks = p.r_blocks;
        if r_blocks >= p.blocks {
            return Err(bad("reserved blocks not below the block count".into()));
        }
        // lib/ext2fs: EXT2_DESC_SIZE is 64 bytes with 64bit (s_desc_size), else 32
        let desc_bytes: u64 = if wide { 64 } else { 32 };
        let desc_per_block = bs / desc_bytes;
        let isz = u64::from(p.inode_size_bytes);
        let mut meta_bg = p.has("meta_bg");
        let mut resize_inode = p.has("resize_inode");
        let sparse = p.has("sparse_super");
        let sparse2 = p.has("sparse_super2");
        let (groups, gdt_blocks, ipg, itb, rsv_gdt) = 'retry: loop {
            if blocks <= first_data_block {
                return Err(bad("Not enough space to build proposed filesystem".into()));
            }
            let groups = (blocks - first_data_block).div_ceil(bpg);
            let gdt_blocks = groups.div_ceil(desc_per_block);
            let per_4k = if bs >= 4096 { 1 } else { 4096 / bs };
            let mut inodes = if p.inodes != 0 {
                p.inodes
            } else if wide && blocks / per_4k >= 1 << 32 {
                u64::from(u32::MAX)
            } else {
                blocks / per_4k
            };
            // at least EXT2_FIRST_INO + 1
            inodes = inodes.max(12);
            let mut ipg = inodes.div_ceil(groups);
            if ipg > bs * 8 {
                if bpg >= 256 {
                    bpg -= 8;
                    blocks = p.blocks;
                    continue 'retry;
                }
                // EXT2_ET_TOO_MANY_INODES, in libext2fs's words (lib/ext2fs/ext2_err.et.in)
                return Err(bad(TOO_MANY_INODES.into()));
            }
            let inodes_per_block = bs / isz;
            ipg = ipg.min((1 << 16) - inodes_per_block);
            let (ipg, itb) = loop {
                let itb = (ipg * isz).div_ceil(bs);
                let mut fitted = (itb * bs / isz).max(8);
                fitted &= !7;
                let itb = (fitted * isz).div_ceil(bs);
                if fitted * groups > u64::from(u32::MAX) {
                    ipg -= 1;
                    continue;
                }
                break (fitted, itb);
            };
            let mut rsv_gdt = if p.reserved_gdt_blocks != 0 {
                p.reserved_gdt_blocks
            } else if resize_inode {
                // initialize.c calc_reserved_gdt_blocks(): room to grow 1024x or to 2^32.
                let max_blocks: u64 = if blocks < 0xffff_ffff / 1024 {
                    blocks * 1024
                } else {
                    0xffff_ffff
                };
                let rsv_groups = (max_blocks - first_data_block).div_ceil(bpg);
                (rsv_groups
                    .div_ceil(desc_per_block)
                    .saturating_sub(gdt_blocks))
                .min(bs / 4)
            } else {
                0
            };
            if rsv_gdt > bs / 4 {
                return Err(bad(format!(
                    "{rsv_gdt} reserved GDT blocks, more than one block of addresses"
                )));
            }
            // meta_bg if the descriptors would take more than 3/4 of a group
            if p.meta_bg_when_descriptors_fill && rsv_gdt + gdt_blocks > bpg * 3 / 4 {
                meta_bg = true;
                resize_inode = false;
                rsv_gdt = p.reserved_gdt_blocks;
            }
            let mut overhead = 3 + itb + rsv_gdt;
            overhead += if meta_bg { 1 } else { gdt_blocks };
            if overhead > bpg {
                return Err(bad(TOO_MANY_INODES.into()));
            }
            let mut overhead = 2 + itb;
            let has_bg = if sparse2 {
                if groups == 2 {
                    p.backup_bgs[0] != 0
                } else {
                    p.backup_bgs[1] != 0
                }
            } else {
                group_has_super(groups - 1, sparse)
            };
            if has_bg {
                overhead += 1 + gdt_blocks + rsv_gdt;
            }
            let rem = (blocks - first_data_block) % bpg;
            if groups == 1 && rem != 0 && rem < overhead {
                return Err(bad("Not enough space to build proposed filesystem".into()));
            }
            if rem != 0 && rem < overhead + 50 {
                blocks -= rem;
                // initialize.c: the reserved ratio of what was asked, applied to the new count
                // (1.47); 1.40 and 1.41 keep the count asked for
                if !p.reserved_blocks_before_drop {
                    let ratio = 100.0 * p.r_blocks as f64 / p.blocks as f64;
                    r_blocks = (ratio * blocks as f64 / 100.0) as u64;
                }
                continue 'retry;
            }
            break (groups, gdt_blocks, ipg, itb, rsv_gdt);
        };
        // initialize.c: sparse_super2's backups clamped to the groups there are
        let mut backup_bgs = p.backup_bgs;
        if sparse2 {
            for b in &mut backup_bgs {
                if *b >= groups {
                    *b = groups - 1;
                }
            }
            if backup_bgs[0] == backup_bgs[1] {
                backup_bgs[1] = 0;
            }
            if backup_bgs[0] > backup_bgs[1] {
                backup_bgs.swap(0, 1);
            }
        }
        let has_super_of = |g: u64| -> bool {
            if g == 0 {
                return true;
            }
            if sparse2 {
                return g == backup_bgs[0] || g == backup_bgs[1];
            }
            group_has_super(g, sparse)
        };
        let mut features: Vec<String> = p.features.clone();
        if meta_bg && !features.iter().any(|f| f == "meta_bg") {
            features.push("meta_bg".into());
        }
        if !resize_inode {
            features.retain(|f| f != "resize_inode");
        }

        let mut geo = Geometry {
            profile: p.name.clone(),
            features,
            block_size_bytes: p.block_size_bytes,
            blocks_count: blocks,
            first_data_block,
            blocks_per_group: bpg,
            inodes_per_group: ipg as u32,
            inodes_count: ipg * groups,
            inode_table_blocks: itb,
            gdt_blocks,
            reserved_gdt_blocks: rsv_gdt,
            reserved_blocks: r_blocks,
            journal_blocks: 0,
            journal_total_blocks: 0,
            journal_goal: 0,
            flex_bg_size: p.flex_bg_size,
            desc_bytes,
            groups: Vec::with_capacity(groups as usize),
            meta: Vec::new(),
        };
        for group in 0..groups {
            let first = first_data_block + group * bpg;
            let len = bpg.min(blocks - first);
            let has_super = has_super_of(group);
            let mut next = first;
            if has_super {
                geo.meta.push(MetaExtent {
                    kind: MetaKind::Superblock,
                    start: next,
                    blocks: 1,
                });
                next += 1;
            }
            if !meta_bg {
                if has_super {
                    geo.meta.push(MetaExtent {
                        kind: MetaKind::Gdt,
                        start: next,
                        blocks: gdt_blocks,
                    });
                    next += gdt_blocks;
                    if rsv_gdt > 0 {
                        geo.meta.push(MetaExtent {
                            kind: MetaKind::ReservedGdt,
                            start: next,
                            blocks: rsv_gdt,
                        });
                        next += rsv_gdt;
                    }
                }
            } else {
                // closefs.c ext2fs_super_and_bgd_loc2(): with meta_bg (s_first_meta_bg = 0)
                // each meta group's descriptor block lies in its first, second and last group
                let in_meta = group % desc_per_block;
                if in_meta == 0 || in_meta == 1 || in_meta == desc_per_block - 1 {
                    geo.meta.push(MetaExtent {
                        kind: MetaKind::Gdt,
                        start: next,
                        blocks: 1,
                    });
                    next += 1;
                }
            }
            if geo.flex_bg_size > 0 {
                // tables are placed below, once every group's superblock copy is marked
                geo.groups.push(GroupLayout {
                    first_block: first,
                    blocks: len,
                    has_super,
                    block_bitmap: 0,
                    inode_bitmap: 0,
                    inode_table: 0,
                });
                continue;
            }
            if next + 2 + itb > first + len {
                return Err(bad(format!("group {group} is too short for its metadata")));
            }
            geo.meta.push(MetaExtent {
                kind: MetaKind::BlockBitmap,
                start: next,
                blocks: 1,
            });
            geo.meta.push(MetaExtent {
                kind: MetaKind::InodeBitmap,
                start: next + 1,
                blocks: 1,
            });
            geo.meta.push(MetaExtent {
                kind: MetaKind::InodeTable,
                start: next + 2,
                blocks: itb,
            });
            geo.groups.push(GroupLayout {
                first_block: first,
                blocks: len,
                has_super,
                block_bitmap: next,
                inode_bitmap: next + 1,
                inode_table: next + 2,
            });
        }
        if geo.flex_bg_size > 0 {
            geo.place_flex_tables(p.short_flex_group_packed_as_whole)
                .map_err(|reason| bad(format!("flex_bg tables: {reason}")))?;
        }
        geo.add_mke2fs_allocations(p)?;
        Ok(geo)
    }

    /// Last block of `group`.
    fn group_last(&self, group: u64) -> u64 {
        (self.first_data_block + (group + 1) * self.blocks_per_group - 1).min(self.blocks_count - 1)
    }

    /// `ext2fs_get_free_blocks2(start, finish, num)` (lib/ext2fs/alloc.c): the first `b` in
    /// `start..finish` (start 0 means the first data block) with `num` free blocks from it.
    /// Skipping past the used block that stops a candidate gives the same answer as trying
    /// every block, as every candidate up to it fails too.
    fn get_free_blocks(
        &self,
        map: &crate::alloc::FreeMap,
        start: u64,
        finish: u64,
        num: u64,
    ) -> Option<u64> {
        let start = if start == 0 {
            self.first_data_block
        } else {
            start
        };
        let mut b = start;
        loop {
            if b >= finish || b + num > self.blocks_count {
                return None;
            }
            let used = map.next_used(b, b + num);
            if used >= b + num {
                return Some(b);
            }
            b = used + 1;
        }
    }

    /// lib/ext2fs/alloc_tables.c `flexbg_offset()` (e2fsprogs 1.47): where to look for a
    /// flex group's next table of `elem_size` blocks, `rem_grp` groups of them to come.
    fn flexbg_offset(
        &self,
        map: &crate::alloc::FreeMap,
        group: u64,
        start_blk: u64,
        rem_grp: u64,
        elem_size: u64,
    ) -> u64 {
        let flex = self.flex_bg_size;
        let size = (rem_grp * elem_size).min(self.blocks_per_group / 4);
        // the previous search is still valid (skipping small obstructions)
        if start_blk != 0 && start_blk < self.blocks_count {
            if let Some(b) = self.get_free_blocks(map, start_blk, start_blk + size, elem_size) {
                return b;
            }
        }
        let first = self.first_data_block + group / flex * flex * self.blocks_per_group;
        let last_grp = (group | (flex - 1)).min(self.group_count() - 1);
        let last_blk = self.group_last(last_grp);
        self.get_free_blocks(map, first, last_blk, size)
            .or_else(|| self.get_free_blocks(map, first, last_blk, elem_size))
            .or_else(|| self.get_free_blocks(map, 0, last_blk, elem_size))
            .unwrap_or(0)
    }

    /// Block bitmaps, inode bitmaps and inode tables of every group, packed per flex group
    /// as e2fsprogs 1.47's `ext2fs_allocate_group_table()` packs them: the bitmaps of the
    /// flex group's groups one after another from its first free block, then its inode
    /// bitmaps `flex_bg_size` blocks on, then its inode tables (the last, short flex group
    /// keeps its tables contiguous unless `short_packed_as_whole` and it is not the first:
    /// e2fsprogs 1.41 offsets the inode bitmaps by `flex_bg_size` and the tables by twice
    /// that in every flex group). 1.41
    /// searched differently (`flexbg_offset` with an `offset` and size/8) but packs to the
    /// same blocks (checked against 1.41.4's mke2fs: crates/rig/tests/period_mke2fs.rs); see
    /// docs/mkfs-profiles.md.
    fn place_flex_tables(&mut self, short_packed_as_whole: bool) -> Result<(), String> {
        // the blocks placed so far (superblocks, descriptors, reserved GDT)
        let mut map = self.free_map();
        let flex = self.flex_bg_size;
        let groups = self.group_count();
        let itb = self.inode_table_blocks;
        for group in 0..groups {
            let group_blk = self.groups[group as usize].first_block;
            let last_grp = (group | (flex - 1)).min(groups - 1);
            let rem_grps = last_grp - group + 1;
            let last_blk = self.group_last(last_grp);
            let mut table_offset = flex;
            let prev = if group % flex != 0 {
                self.groups[group as usize - 1].block_bitmap + 1
            } else {
                // 1.41 packs a short last flex group as if whole; modelled (and made by the
                // image path) only past the first flex group: in a file system of fewer
                // groups mke2fs's root directory, lost+found and resize blocks would follow
                // the gaps, which the image path does not move (docs/mkfs-profiles.md)
                let as_whole = short_packed_as_whole && group >= flex;
                if last_grp == groups - 1 && !as_whole {
                    // the last flex group keeps its tables contiguous
                    table_offset = last_grp & (flex - 1);
                    table_offset = if table_offset == 0 {
                        flex
                    } else {
                        table_offset + 1
                    };
                }
                0
            };
            let start = self.flexbg_offset(&map, group, prev, rem_grps, 1);
            let bb = self
                .get_free_blocks(&map, start, last_blk, 1)
                .or_else(|| self.get_free_blocks(&map, group_blk, last_blk, 1))
                .ok_or(format!("no block for group {group}'s block bitmap"))?;
            map.mark_used(bb, 1);
            let prev = if group % flex != 0 {
                self.groups[group as usize - 1].inode_bitmap + 1
            } else {
                bb + table_offset
            };
            let start = self.flexbg_offset(&map, group, prev, rem_grps, 1);
            let ib = self
                .get_free_blocks(&map, start, last_blk, 1)
                .or_else(|| self.get_free_blocks(&map, group_blk, last_blk, 1))
                .ok_or(format!("no block for group {group}'s inode bitmap"))?;
            map.mark_used(ib, 1);
            let prev = if group % flex != 0 {
                self.groups[group as usize - 1].inode_table + itb
            } else {
                ib + table_offset
            };
            let start = self.flexbg_offset(&map, group, prev, rem_grps, itb);
            let it = self
                .get_free_blocks(&map, start, last_blk, itb)
                .ok_or(format!("no {itb} blocks for group {group}'s inode table"))?;
            map.mark_used(it, itb);
            let g = &mut self.groups[group as usize];
            g.block_bitmap = bb;
            g.inode_bitmap = ib;
            g.inode_table = it;
            for (kind, start, blocks) in [
                (MetaKind::BlockBitmap, bb, 1),
                (MetaKind::InodeBitmap, ib, 1),
                (MetaKind::InodeTable, it, itb),
            ] {
                self.meta.push(MetaExtent {
                    kind,
                    start,
                    blocks,
                });
            }
        }
        Ok(())
    }

    /// Root directory, lost+found, resize inode, journal, MMP block and orphan file, each
    /// taking the first free blocks after its goal, in mke2fs's order (misc/mke2fs.c main()).
    fn add_mke2fs_allocations(&mut self, p: &GeometryParams) -> Result<(), LayoutError> {
        let bs = u64::from(self.block_size_bytes);
        let mut used = self.free_map();
        let fs_bytes = self.blocks_count * bs;
        let take = |geo: &mut Geometry,
                    used: &mut crate::alloc::FreeMap,
                    kind: MetaKind,
                    goal: u64,
                    count: u64|
         -> Result<(), LayoutError> {
            let mut at = goal;
            let mut left = count;
            while left > 0 {
                let start =
                    used.next_free(at, geo.blocks_count)
                        .ok_or_else(|| LayoutError::BadSize {
                            fs_bytes,
                            reason: format!("no room for mke2fs's {kind:?} blocks"),
                        })?;
                let end = used.next_used(start, geo.blocks_count).min(start + left);
                used.mark_used(start, end - start);
                match geo.meta.last_mut() {
                    Some(last) if last.kind == kind && last.start + last.blocks == start => {
                        last.blocks += end - start
                    }
                    _ => geo.meta.push(MetaExtent {
                        kind,
                        start,
                        blocks: end - start,
                    }),
                }
                left -= end - start;
                at = end;
            }
            Ok(())
        };
        // Extent-tree blocks for a file of these runs: none while its extents (at most 32768
        // blocks each, EXT_INIT_MAX_LEN) fit the inode's 4 slots, else leaves of
        // (block - 12) / 12 entries, appended (no balancing), and index levels above them.
        let tree_blocks = |geo: &Geometry, kind: MetaKind| -> u64 {
            let runs: Vec<crate::mapping::Run> = geo
                .meta
                .iter()
                .filter(|m| m.kind == kind)
                .scan(0, |logical, m| {
                    let r = crate::mapping::Run {
                        logical: *logical,
                        physical: m.start,
                        len: m.blocks,
                    };
                    *logical += m.blocks;
                    Some(r)
                })
                .collect();
            let mut n = crate::mapping::extents_of(&runs).len() as u64;
            let per_block = crate::mapping::extent_entries_per_block(bs);
            let mut blocks = 0;
            while n > crate::mapping::EXTENT_ROOT_ENTRIES {
                n = n.div_ceil(per_block);
                blocks += n;
            }
            blocks
        };
        // ext2fs_mkdir(): goal is the first block of the inode's group (group 0).
        let group0 = self.first_data_block;
        // with inline_data the root directory's entries live in its inode
        if !self.has_feature("inline_data") {
            take(self, &mut used, MetaKind::RootDir, group0, 1)?;
        }
        // create_lost_and_found(): grows the directory until 16 KiB and 2 blocks, within
        // the 12 direct blocks.
        let lf_blocks = (16384 / bs).clamp(2, DIRECT_BLOCKS);
        take(self, &mut used, MetaKind::LostFound, group0, lf_blocks)?;
        if self.has_feature("resize_inode") {
            // res_gdt.c ext2fs_create_resize_inode(): goal = sb + descriptors + reserved
            // descriptors + 2 + inode-table blocks (just past group 0's inode table without
            // flex_bg; inside the packed tables with it), first free block from there.
            let goal = self.first_data_block
                + 1
                + self.gdt_blocks
                + self.reserved_gdt_blocks
                + 2
                + self.inode_table_blocks;
            take(self, &mut used, MetaKind::ResizeDind, goal, 1)?;
        }
        self.journal_blocks = match p.journal {
            JournalRule::None => 0,
            JournalRule::Blocks(n) => n,
            JournalRule::Requested(_) if self.blocks_count < 2048 => 0,
            JournalRule::Requested(n) => {
                if !(1024..=10_240_000).contains(&n) {
                    return Err(LayoutError::BadSize {
                        fs_bytes,
                        reason: format!(
                            "The total requested journal size is {n} blocks; it must be \
                             between 1024 and 10240000 blocks."
                        ),
                    });
                }
                // the free count ext2fs_initialize() left: every group less its superblock
                // and descriptor copies, and less its bitmaps and inode table unless flex_bg
                // packs those elsewhere
                let copies: u64 = self
                    .meta
                    .iter()
                    .filter(|m| {
                        matches!(
                            m.kind,
                            MetaKind::Superblock | MetaKind::Gdt | MetaKind::ReservedGdt
                        )
                    })
                    .map(|m| m.blocks)
                    .sum();
                let tables = if self.flex_bg_size > 0 {
                    0
                } else {
                    self.group_count() * (2 + self.inode_table_blocks)
                };
                let free = self.blocks_count - self.first_data_block - copies - tables;
                if n > free / 2 {
                    return Err(LayoutError::BadSize {
                        fs_bytes,
                        reason: "Total journal size too big for filesystem.".into(),
                    });
                }
                n
            }
            JournalRule::Requested141(_) if self.blocks_count < 2048 => 0,
            JournalRule::Requested141(n) => {
                if !(1024..=10_240_000).contains(&n) {
                    return Err(LayoutError::BadSize {
                        fs_bytes,
                        reason: format!(
                            "The requested journal size is {n} blocks; it must be\nbetween \
                             1024 and 10240000 blocks.  Aborting."
                        ),
                    });
                }
                // s_free_blocks_count when 1.41.14's main() calls figure_journal_size():
                // every group's blocks less what is marked so far (copies, tables, root,
                // lost+found, the resize inode's block)
                let marked: u64 = self.meta.iter().map(|m| m.blocks).sum();
                let free = self.blocks_count - self.first_data_block - marked;
                if n > free / 2 {
                    return Err(LayoutError::BadSize {
                        fs_bytes,
                        reason: "Journal size too big for filesystem.".into(),
                    });
                }
                n
            }
            JournalRule::Default140 => default_journal_blocks_140(self.blocks_count),
            JournalRule::Default147 { fast_commit } => {
                match default_journal_blocks_147(self.blocks_count) {
                    None => 0,
                    Some(j) if fast_commit => j + j / 64,
                    Some(j) => j,
                }
            }
        };
        let extents = self.has_feature("extent");
        if self.journal_blocks > 0 {
            // block-mapped, its IND/DIND blocks come inline
            // 1.40's extra data block(s) past i_size, mapped like the rest
            let mapped = self.journal_blocks + p.journal_blocks_past_size;
            let inline_mapping = if extents {
                0
            } else {
                mapping_blocks_for(mapped, addr_per_block(self.block_size_bytes))
            };
            self.journal_goal = match p.journal_goal {
                JournalGoal::Fixed(goal) => goal,
                JournalGoal::Midpoint => self.midpoint_journal_goal(&used),
            };
            let total = mapped + inline_mapping;
            take(self, &mut used, MetaKind::Journal, self.journal_goal, total)?;
            self.journal_total_blocks = total;
            if extents {
                let tree = tree_blocks(self, MetaKind::Journal);
                if tree > 0 {
                    let at = self.journal_goal;
                    take(self, &mut used, MetaKind::JournalTree, at, tree)?;
                    self.journal_total_blocks += tree;
                }
            }
        } else {
            self.features
                .retain(|f| f != "has_journal" && f != "orphan_file");
        }
        if self.has_feature("mmp") {
            // mmp.c ext2fs_mmp_init(): ext2fs_alloc_block2() with goal 0
            take(self, &mut used, MetaKind::Mmp, self.first_data_block, 1)?;
        }
        if self.has_feature("orphan_file") {
            // orphan.c ext2fs_create_orphan_file(): appended block by block from the inode's
            // group (group 0), mapping blocks inline when block-mapped
            let n = if p.orphan_file_blocks > 0 {
                p.orphan_file_blocks
            } else {
                // ext2fs_default_orphan_file_blocks()
                match self.blocks_count {
                    0..=131_071 => 32,
                    131_072..=2_097_151 => self.blocks_count / 4096,
                    _ => 512,
                }
            };
            let inline_mapping = if extents {
                0
            } else {
                mapping_blocks_for(n, addr_per_block(self.block_size_bytes))
            };
            take(
                self,
                &mut used,
                MetaKind::OrphanFile,
                group0,
                n + inline_mapping,
            )?;
            if extents {
                let tree = tree_blocks(self, MetaKind::OrphanFile);
                take(self, &mut used, MetaKind::OrphanFile, group0, tree)?;
            }
        }
        Ok(())
    }

    /// e2fsprogs 1.41 lib/ext2fs/mkjournal.c `write_journal_inode()` (1.47
    /// `get_midpoint_journal_block()`): the group of the middle block, rounded down to its
    /// flex group (and on past full groups) when past the first flex group; of it and its
    /// neighbour(s), the one with the most free blocks (first wins a tie); its first block.
    fn midpoint_journal_goal(&self, used: &crate::alloc::FreeMap) -> u64 {
        let groups = self.group_count();
        let mut group = self.group_of((self.blocks_count - self.first_data_block) / 2);
        let flex = self.flex_bg_size;
        let start = if flex > 0 && group > flex {
            group &= !(flex - 1);
            while group < groups && used.group_free(group) == 0 {
                group += 1;
            }
            if group == groups {
                group = 0;
            }
            group
        } else {
            group.saturating_sub(1)
        };
        let end = if group + 1 < groups { group + 1 } else { group };
        let mut best = start;
        for g in start + 1..=end {
            if used.group_free(g) > used.group_free(best) {
                best = g;
            }
        }
        self.first_data_block + best * self.blocks_per_group
    }

    /// Whether the file system has `feature`.
    pub fn has_feature(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }

    /// Number of groups.
    pub fn group_count(&self) -> u64 {
        self.groups.len() as u64
    }

    /// Group holding `block`.
    pub fn group_of(&self, block: u64) -> u64 {
        (block - self.first_data_block) / self.blocks_per_group
    }

    /// The root directory's first block (made by mke2fs).
    pub fn root_dir_block(&self) -> u64 {
        self.meta
            .iter()
            .find(|m| m.kind == MetaKind::RootDir)
            .map(|m| m.start)
            .expect("Geometry::new always places the root directory")
    }

    /// A free-space map with every block mke2fs used marked.
    pub fn free_map(&self) -> crate::alloc::FreeMap {
        let mut map = crate::alloc::FreeMap::new(
            self.blocks_count,
            self.first_data_block,
            self.blocks_per_group,
        );
        for m in &self.meta {
            map.mark_used(m.start, m.blocks);
        }
        map
    }

    /// Free blocks per group right after mke2fs, as dumpe2fs reports them.
    pub fn free_blocks_per_group(&self) -> Vec<u64> {
        let map = self.free_map();
        (0..self.group_count()).map(|g| map.group_free(g)).collect()
    }

    /// Free block ranges (first, last inclusive) of `group` after mke2fs.
    pub fn free_ranges(&self, group: u64) -> Vec<(u64, u64)> {
        let map = self.free_map();
        let g = &self.groups[group as usize];
        let end = g.first_block + g.blocks;
        let mut out = Vec::new();
        let mut at = g.first_block;
        while let Some(s) = map.next_free(at, end) {
            let e = map.next_used(s, end);
            out.push((s, e - 1));
            at = e;
        }
        out
    }

    /// Whether `block` lies in any extent mke2fs used.
    pub fn is_meta(&self, block: u64) -> bool {
        self.meta
            .iter()
            .any(|m| block >= m.start && block < m.start + m.blocks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_super_groups() {
        let with: Vec<u64> = (0..100).filter(|&g| group_has_super(g, true)).collect();
        assert_eq!(with, vec![0, 1, 3, 5, 7, 9, 25, 27, 49, 81]);
    }

    #[test]
    fn mapping_counts() {
        assert_eq!(mapping_blocks_for(12, 1024), 0);
        assert_eq!(mapping_blocks_for(13, 1024), 1);
        assert_eq!(mapping_blocks_for(12 + 1024, 1024), 1);
        assert_eq!(mapping_blocks_for(12 + 1025, 1024), 3);
        assert_eq!(mapping_blocks_for(32768, 1024), 33);
        let tind_start = 12 + 1024 + 1024 * 1024;
        assert_eq!(
            mapping_blocks_for(tind_start + 1, 1024),
            1 + 1 + 1024 + 1 + 1 + 1
        );
    }

    #[test]
    fn bench5_geometry() {
        let p = MkfsProfile::by_name("ext3-2007").unwrap();
        let g = Geometry::new(&p, 400_088_457_216).unwrap();
        assert_eq!(g.blocks_count, 97_677_846);
        assert_eq!(g.group_count(), 2981);
        assert_eq!(g.gdt_blocks, 24);
        assert_eq!(g.reserved_gdt_blocks, 1000);
        // 32768 journal blocks, 1.40.2's one past its size, 33 indirect blocks
        assert_eq!(g.journal_total_blocks, 32802);
        assert_eq!(g.inodes_per_group, 16384);
        assert_eq!(g.inode_table_blocks, 512);
        assert_eq!(g.reserved_blocks, 4_883_892);
        assert_eq!(g.groups[0].inode_table, 1027);
        assert_eq!(g.root_dir_block(), 1539);
        let journal: Vec<_> = g
            .meta
            .iter()
            .filter(|m| m.kind == MetaKind::Journal)
            .collect();
        assert_eq!(journal[0].start, 1545);
        assert_eq!(
            journal.last().unwrap().start + journal.last().unwrap().blocks,
            // group 1's first free block in 1.40.2's own dumpe2fs (period_mke2fs.rs)
            35886
        );
    }
}
