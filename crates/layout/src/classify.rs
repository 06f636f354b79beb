//! What each block of an ext file system holds: superblock, group descriptors, bitmap, inode
//! table, indirect block, directory, journal, file data or nothing, from its [`Geometry`]
//! (what mke2fs placed) and a [`Plan`] (what the files and directories own; a plan made by a
//! policy, or read back from any image by `layoutlab-image`'s `inspect`).
//!
//! Used to attribute a block trace to what it reads: which requests of e2fsck's pass 1 went to
//! inode tables and which to indirect blocks, or what a delete read besides bitmaps. Lookups
//! are a binary search over sorted extents, so a 400 GB file system (a few thousand extents of
//! metadata, ~100K indirect blocks) classifies a trace of 10^5 requests in milliseconds.

use crate::geometry::{Geometry, MetaKind};
use crate::plan::{InodeKind, MapKind, Plan};
use serde::Serialize;

/// What a block holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockClass {
    /// Primary or backup superblock.
    Superblock,
    /// Group descriptor blocks, and the reserved ones kept for online resize.
    GroupDescriptors,
    /// Block and inode bitmaps.
    Bitmap,
    /// Inode tables.
    InodeTable,
    /// Indirect (IND/DIND/TIND) blocks of files, and the resize inode's DIND block.
    Indirect,
    /// Extent-tree blocks (leaves and index blocks) of extent-mapped inodes.
    Extent,
    /// Directory blocks (the root's and lost+found's included).
    Directory,
    /// The journal (its data and its own indirect blocks).
    Journal,
    /// Regular-file data.
    FileData,
    /// Anything else: a free block, a slow symlink's target, or one no plan inode owns.
    Other,
}

impl BlockClass {
    /// Every class, in report order.
    pub const ALL: [BlockClass; 10] = [
        BlockClass::Superblock,
        BlockClass::GroupDescriptors,
        BlockClass::Bitmap,
        BlockClass::InodeTable,
        BlockClass::Indirect,
        BlockClass::Extent,
        BlockClass::Directory,
        BlockClass::Journal,
        BlockClass::FileData,
        BlockClass::Other,
    ];

    /// A short stable name for tables and JSON (`inode_table`, `indirect`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            BlockClass::Superblock => "superblock",
            BlockClass::GroupDescriptors => "group_descriptors",
            BlockClass::Bitmap => "bitmap",
            BlockClass::InodeTable => "inode_table",
            BlockClass::Indirect => "indirect",
            BlockClass::Extent => "extent",
            BlockClass::Directory => "directory",
            BlockClass::Journal => "journal",
            BlockClass::FileData => "file_data",
            BlockClass::Other => "other",
        }
    }

    fn of_meta(kind: MetaKind) -> BlockClass {
        match kind {
            MetaKind::Superblock => BlockClass::Superblock,
            MetaKind::Gdt | MetaKind::ReservedGdt => BlockClass::GroupDescriptors,
            MetaKind::BlockBitmap | MetaKind::InodeBitmap => BlockClass::Bitmap,
            MetaKind::InodeTable => BlockClass::InodeTable,
            MetaKind::RootDir | MetaKind::LostFound => BlockClass::Directory,
            MetaKind::ResizeDind => BlockClass::Indirect,
            MetaKind::Journal | MetaKind::JournalTree => BlockClass::Journal,
            MetaKind::OrphanFile | MetaKind::Mmp => BlockClass::Other,
        }
    }
}

/// The class of every block of one file system, as sorted, non-overlapping extents.
#[derive(Clone, Debug)]
pub struct BlockClasses {
    /// (first block, blocks, class), sorted by first block; gaps are [`BlockClass::Other`].
    extents: Vec<(u64, u64, BlockClass)>,
    block_size_bytes: u32,
}

impl Default for BlockClasses {
    /// No known blocks: every block is [`BlockClass::Other`] (4 KiB blocks).
    fn default() -> BlockClasses {
        BlockClasses {
            extents: Vec::new(),
            block_size_bytes: 4096,
        }
    }
}

impl BlockClasses {
    /// Classes from mke2fs's layout and the plan's inodes. Where the plan claims a block
    /// mke2fs also placed (the root directory's first block), mke2fs's class wins.
    pub fn new(geometry: &Geometry, plan: &Plan) -> BlockClasses {
        let mut extents: Vec<(u64, u64, BlockClass)> = geometry
            .meta
            .iter()
            .filter(|m| m.blocks > 0)
            .map(|m| (m.start, m.blocks, BlockClass::of_meta(m.kind)))
            .collect();
        let meta_end = extents.len();
        for inode in &plan.inodes {
            let class = match inode.kind {
                InodeKind::File => BlockClass::FileData,
                InodeKind::Dir => BlockClass::Directory,
                InodeKind::Symlink
                | InodeKind::CharDev
                | InodeKind::BlockDev
                | InodeKind::Fifo
                | InodeKind::Socket => BlockClass::Other,
            };
            extents.extend(
                inode
                    .data
                    .iter()
                    .filter(|r| r.len > 0)
                    .map(|r| (r.physical, r.len, class)),
            );
            extents.extend(inode.mapping.iter().map(|m| {
                let class = match m.kind {
                    MapKind::Ind | MapKind::Dind | MapKind::Tind => BlockClass::Indirect,
                    MapKind::Extent { .. } => BlockClass::Extent,
                };
                (m.physical, 1, class)
            }));
        }
        // Sort meta first at equal starts, then drop (or trim) whatever overlaps an earlier
        // extent, so the result is disjoint.
        let mut tagged: Vec<(u64, bool, u64, BlockClass)> = extents
            .into_iter()
            .enumerate()
            .map(|(i, (s, n, c))| (s, i >= meta_end, n, c))
            .collect();
        tagged.sort_unstable_by_key(|&(s, from_plan, _, _)| (s, from_plan));
        let mut out: Vec<(u64, u64, BlockClass)> = Vec::with_capacity(tagged.len());
        for (start, _, blocks, class) in tagged {
            let (mut start, end) = (start, start + blocks);
            if let Some(&(ls, ln, _)) = out.last() {
                start = start.max(ls + ln);
            }
            if start >= end {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.2 == class && last.0 + last.1 == start => last.1 += end - start,
                _ => out.push((start, end - start, class)),
            }
        }
        BlockClasses {
            extents: out,
            block_size_bytes: geometry.block_size_bytes,
        }
    }

    /// Bytes per block of the file system classified.
    pub fn block_size_bytes(&self) -> u32 {
        self.block_size_bytes
    }

    /// The class of one block.
    pub fn of_block(&self, block: u64) -> BlockClass {
        let i = self.extents.partition_point(|&(s, _, _)| s <= block);
        match i.checked_sub(1).map(|i| self.extents[i]) {
            Some((s, n, c)) if block < s + n => c,
            _ => BlockClass::Other,
        }
    }

    /// How many bytes of the byte range `offset_bytes..offset_bytes + len_bytes` (e.g. a
    /// request of a block trace on the device holding the file system) fall in each class,
    /// in block order, one entry per class present.
    pub fn split_bytes(&self, offset_bytes: u64, len_bytes: u64) -> Vec<(BlockClass, u64)> {
        let bs = u64::from(self.block_size_bytes);
        let end = offset_bytes + len_bytes;
        let mut out: Vec<(BlockClass, u64)> = Vec::new();
        let mut at = offset_bytes;
        while at < end {
            let block = at / bs;
            // Extend over the whole extent (or gap) this block lies in.
            let i = self.extents.partition_point(|&(s, _, _)| s <= block);
            let (class, stop_block) = match i.checked_sub(1).map(|i| self.extents[i]) {
                Some((s, n, c)) if block < s + n => (c, s + n),
                _ => (
                    BlockClass::Other,
                    self.extents.get(i).map_or(u64::MAX / bs, |e| e.0),
                ),
            };
            let stop = (stop_block.saturating_mul(bs)).min(end);
            match out.iter_mut().find(|(c, _)| *c == class) {
                Some(e) => e.1 += stop - at,
                None => out.push((class, stop - at)),
            }
            at = stop;
        }
        out
    }

    /// The class holding most bytes of a byte range (ties: the first in block order).
    pub fn dominant(&self, offset_bytes: u64, len_bytes: u64) -> BlockClass {
        let mut best = (BlockClass::Other, 0);
        for (c, n) in self.split_bytes(offset_bytes, len_bytes.max(1)) {
            if n > best.1 {
                best = (c, n);
            }
        }
        best.0
    }

    /// Blocks of each class in the file system (free blocks count as [`BlockClass::Other`]).
    pub fn totals(&self, blocks_count: u64) -> Vec<(BlockClass, u64)> {
        let mut out: Vec<(BlockClass, u64)> = BlockClass::ALL.iter().map(|&c| (c, 0)).collect();
        let mut classified = 0;
        for &(_, n, c) in &self.extents {
            out.iter_mut().find(|(k, _)| *k == c).unwrap().1 += n;
            classified += n;
        }
        out.iter_mut()
            .find(|(k, _)| *k == BlockClass::Other)
            .unwrap()
            .1 += blocks_count.saturating_sub(classified);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{policy, MkfsProfile, PolicyParams};

    fn small() -> (Geometry, Plan) {
        let profile = MkfsProfile::by_name("ext3-2007").unwrap();
        let pop = layoutlab_workload::population_by_name("bench5")
            .unwrap()
            .scale(0.002)
            .unwrap();
        let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
        let plan = policy::by_name("ext3-2007", &PolicyParams::new())
            .unwrap()
            .plan(&geo, &pop, 42)
            .unwrap();
        (geo, plan)
    }

    #[test]
    fn every_placed_block_gets_its_own_class() {
        let (geo, plan) = small();
        let c = BlockClasses::new(&geo, &plan);
        let g1 = geo.groups[1];
        assert_eq!(c.of_block(g1.block_bitmap), BlockClass::Bitmap);
        assert_eq!(c.of_block(g1.inode_bitmap), BlockClass::Bitmap);
        assert_eq!(c.of_block(g1.inode_table), BlockClass::InodeTable);
        assert_eq!(
            c.of_block(g1.inode_table + geo.inode_table_blocks - 1),
            BlockClass::InodeTable
        );
        assert_eq!(c.of_block(g1.first_block), BlockClass::Superblock);
        assert_eq!(c.of_block(g1.first_block + 1), BlockClass::GroupDescriptors);
        assert_eq!(c.of_block(geo.root_dir_block()), BlockClass::Directory);
        for inode in &plan.inodes {
            for m in &inode.mapping {
                assert_eq!(c.of_block(m.physical), BlockClass::Indirect);
            }
            let want = match inode.kind {
                InodeKind::File => BlockClass::FileData,
                InodeKind::Dir => BlockClass::Directory,
                other => panic!("bench5 makes files and directories only, not {other:?}"),
            };
            for r in &inode.data {
                assert_eq!(c.of_block(r.physical), want);
                assert_eq!(c.of_block(r.physical + r.len - 1), want);
            }
        }
        // The totals are the geometry's and the plan's own counts.
        let t = c.totals(geo.blocks_count);
        let get = |k| t.iter().find(|(c, _)| *c == k).unwrap().1;
        assert_eq!(
            get(BlockClass::InodeTable),
            geo.groups.len() as u64 * geo.inode_table_blocks
        );
        assert_eq!(get(BlockClass::Indirect), plan.mapping_blocks() + 1);
        assert_eq!(get(BlockClass::FileData), plan.file_data_blocks());
        assert_eq!(get(BlockClass::Journal), geo.journal_total_blocks);
        assert_eq!(t.iter().map(|x| x.1).sum::<u64>(), geo.blocks_count);
    }

    #[test]
    fn extent_tree_blocks_and_special_inodes_have_their_classes() {
        use crate::plan::{MapBlock, PlannedInode, Run};
        let (geo, _) = small();
        let free = geo.groups[1].inode_table + geo.inode_table_blocks + 100;
        let plan = Plan {
            inodes: vec![
                PlannedInode {
                    ino: 12,
                    kind: InodeKind::File,
                    data: vec![Run {
                        logical: 0,
                        physical: free + 1,
                        len: 4,
                    }],
                    mapping: vec![MapBlock {
                        kind: MapKind::Extent { height: 0 },
                        logical: 0,
                        physical: free,
                    }],
                    ..Default::default()
                },
                PlannedInode {
                    ino: 13,
                    kind: InodeKind::Symlink,
                    data: vec![Run {
                        logical: 0,
                        physical: free + 10,
                        len: 1,
                    }],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let c = BlockClasses::new(&geo, &plan);
        assert_eq!(c.of_block(free), BlockClass::Extent);
        assert_eq!(c.of_block(free + 1), BlockClass::FileData);
        assert_eq!(c.of_block(free + 10), BlockClass::Other);
        assert_eq!(BlockClass::Extent.as_str(), "extent");
    }

    #[test]
    fn a_byte_range_splits_at_class_boundaries() {
        let (geo, plan) = small();
        let c = BlockClasses::new(&geo, &plan);
        let bs = u64::from(geo.block_size_bytes);
        let g1 = geo.groups[1];
        // From the inode bitmap through two inode-table blocks: 1 + 2 blocks.
        assert_eq!(g1.inode_table, g1.inode_bitmap + 1);
        let split = c.split_bytes(g1.inode_bitmap * bs, 3 * bs);
        assert_eq!(
            split,
            vec![(BlockClass::Bitmap, bs), (BlockClass::InodeTable, 2 * bs)]
        );
        assert_eq!(
            c.dominant(g1.inode_bitmap * bs, 3 * bs),
            BlockClass::InodeTable
        );
        // Half a block (a 512-byte sector) is classified by its block.
        assert_eq!(
            c.split_bytes(g1.inode_table * bs + 512, 512),
            vec![(BlockClass::InodeTable, 512)]
        );
        // Past the end of the file system: other.
        assert_eq!(c.of_block(geo.blocks_count + 10), BlockClass::Other);
    }
}
