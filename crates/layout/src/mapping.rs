//! How a file's logical blocks are mapped: the one description of the tree shapes, shared by
//! the policies (which place the blocks), `Plan::check`, and the image crate (which writes and
//! reads them through libext2fs).
//!
//! Two formats, chosen per inode as libext2fs and the kernel do (`EXT4_EXTENTS_FL`):
//! - [`MapFormat::Blocks`]: the ext2/3 block map — 12 direct slots in the inode, then one
//!   IND, one DIND and one TIND tree (lib/ext2fs/block.c, fs/ext3/inode.c).
//! - [`MapFormat::Extents`]: the ext4 extent tree — up to 4 entries in the inode, then leaf
//!   and index blocks of `(block_bytes - 12) / 12` entries each; an initialized extent maps
//!   at most 32768 blocks (lib/ext2fs/extent.c, fs/ext4/ext4_extents.h `EXT_INIT_MAX_LEN`).
//!   The tree blocks an appended file needs are those libext2fs's `ext2fs_extent_insert()`
//!   allocates ([`extent_tree_blocks`]), because libext2fs writes our images.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A run of data blocks: file blocks `logical..logical+len` live at `physical..physical+len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// First file (logical) block.
    pub logical: u64,
    /// First physical block.
    pub physical: u64,
    /// Number of blocks.
    pub len: u64,
}

/// The kind of a mapping block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum MapKind {
    /// Single indirect block (maps data blocks).
    Ind,
    /// Double indirect block (maps IND blocks).
    Dind,
    /// Triple indirect block (maps DIND blocks).
    Tind,
    /// An extent-tree block below the inode: `height` 0 is a leaf (holds extents), 1 an
    /// index block over leaves, and so on.
    Extent {
        /// Levels between this block and the leaves.
        height: u8,
    },
}

/// How an inode maps its blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MapFormat {
    /// ext2/3 block map: direct slots, IND, DIND, TIND.
    #[default]
    Blocks,
    /// ext4 extent tree.
    Extents,
}

/// Direct block slots in an ext2/3 inode (EXT2_NDIR_BLOCKS).
pub const DIRECT_BLOCKS: u64 = 12;

/// Pointers per indirect block.
pub fn addr_per_block(block_size_bytes: u32) -> u64 {
    u64::from(block_size_bytes) / 4
}

/// Indirect (mapping) blocks a block-mapped file of `data_blocks` dense blocks needs.
pub fn mapping_blocks_for(data_blocks: u64, addr: u64) -> u64 {
    let mut n = 0;
    let mut rest = data_blocks.saturating_sub(DIRECT_BLOCKS);
    // IND
    if rest > 0 {
        n += 1;
        rest = rest.saturating_sub(addr);
    }
    // DIND and its INDs
    if rest > 0 {
        let here = rest.min(addr * addr);
        n += 1 + here.div_ceil(addr);
        rest -= here;
    }
    // TIND, its DINDs and their INDs
    if rest > 0 {
        n += 1 + rest.div_ceil(addr * addr) + rest.div_ceil(addr);
    }
    n
}

/// Block-map tree shape for one block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockMapGeometry {
    /// Block numbers per indirect block (block size / 4).
    pub per_block: u64,
}

impl BlockMapGeometry {
    /// The shape for `block_bytes`-byte blocks.
    pub fn new(block_bytes: u64) -> BlockMapGeometry {
        BlockMapGeometry {
            per_block: block_bytes / 4,
        }
    }

    /// Data blocks a mapping block of `level` (1 = IND, 2 = DIND, 3 = TIND) covers.
    pub fn span(&self, level: u8) -> u64 {
        self.per_block.pow(level as u32)
    }

    /// First logical block under the inode's slot of `level`.
    pub fn base(&self, level: u8) -> u64 {
        DIRECT_BLOCKS + (1..level).map(|l| self.span(l)).sum::<u64>()
    }

    /// One past the last logical block the tree can map.
    pub fn max_logical_blocks(&self) -> u64 {
        self.base(3) + self.span(3)
    }
}

/// 1, 2, 3 for IND, DIND, TIND (0 for an extent-tree block, which is not a block-map level).
pub fn level_of(kind: MapKind) -> u8 {
    match kind {
        MapKind::Ind => 1,
        MapKind::Dind => 2,
        MapKind::Tind => 3,
        MapKind::Extent { .. } => 0,
    }
}

/// The block-map kind of a level (1..=3).
pub fn kind_of(level: u8) -> MapKind {
    match level {
        1 => MapKind::Ind,
        2 => MapKind::Dind,
        _ => MapKind::Tind,
    }
}

/// (level, first logical block mapped) of every indirect block the runs of a block-mapped
/// file need.
pub fn mapping_needed(geo: &BlockMapGeometry, runs: &[Run]) -> BTreeSet<(u8, u64)> {
    let mut need = BTreeSet::new();
    for run in runs {
        let (a, b) = (run.logical, run.logical + run.len);
        for top in 1..=3u8 {
            let base = geo.base(top);
            let end = base + geo.span(top);
            let (lo, hi) = (a.max(base), b.min(end));
            if lo >= hi {
                continue;
            }
            // every level from the inode's slot down to the IND blocks
            for level in (1..=top).rev() {
                let span = geo.span(level);
                let first = (lo - base) / span;
                let last = (hi - 1 - base) / span;
                for k in first..=last {
                    need.insert((level, base + k * span));
                }
            }
        }
    }
    need
}

/// Mapping blocks the write of logical block `l` must allocate, outermost first, each with
/// the first logical block it maps (`addr` pointers per block): the incremental form of
/// [`mapping_needed`] for a file written in order.
pub fn mapping_needed_at(l: u64, addr: u64) -> Vec<(MapKind, u64)> {
    let base2 = DIRECT_BLOCKS + addr;
    let base3 = base2 + addr * addr;
    if l == DIRECT_BLOCKS {
        vec![(MapKind::Ind, l)]
    } else if l < base2 {
        vec![]
    } else if l < base3 {
        let off = l - base2;
        match (off == 0, off % addr == 0) {
            (true, _) => vec![(MapKind::Dind, l), (MapKind::Ind, l)],
            (false, true) => vec![(MapKind::Ind, l)],
            _ => vec![],
        }
    } else {
        let off = l - base3;
        if off == 0 {
            vec![(MapKind::Tind, l), (MapKind::Dind, l), (MapKind::Ind, l)]
        } else if off % (addr * addr) == 0 {
            vec![(MapKind::Dind, l), (MapKind::Ind, l)]
        } else if off % addr == 0 {
            vec![(MapKind::Ind, l)]
        } else {
            vec![]
        }
    }
}

/// The first logical block after `l` whose write needs a mapping block.
pub fn next_mapping_event(l: u64, addr: u64) -> u64 {
    let base2 = DIRECT_BLOCKS + addr;
    let base3 = base2 + addr * addr;
    if l < DIRECT_BLOCKS {
        DIRECT_BLOCKS
    } else if l < base2 {
        base2
    } else if l < base3 {
        (base2 + ((l - base2) / addr + 1) * addr).min(base3)
    } else {
        base3 + ((l - base3) / addr + 1) * addr
    }
}

/// Longest initialized extent (`EXT_INIT_MAX_LEN`).
pub const EXTENT_MAX_LEN: u64 = 32768;

/// Extent entries in the inode's `i_block` (60 bytes: a 12-byte header, 4 entries).
pub const EXTENT_ROOT_ENTRIES: u64 = 4;

/// Highest logical block an extent can map (32-bit `ee_block`).
pub const EXTENT_MAX_LOGICAL: u64 = 1 << 32;

/// Extent (or index) entries in one tree block: a 12-byte header, then 12-byte entries
/// (a metadata_csum tail, when present, fits in the remainder for 1 KiB and 4 KiB blocks).
pub fn extent_entries_per_block(block_bytes: u64) -> u64 {
    (block_bytes - 12) / 12
}

/// The extents of an extent-mapped file: its runs cut into pieces of at most
/// [`EXTENT_MAX_LEN`] blocks (the kernel merges contiguous allocations up to that length).
pub fn extents_of(runs: &[Run]) -> Vec<Run> {
    let mut out = Vec::with_capacity(runs.len());
    for r in runs {
        let mut done = 0;
        while done < r.len {
            let len = (r.len - done).min(EXTENT_MAX_LEN);
            out.push(Run {
                logical: r.logical + done,
                physical: r.physical + done,
                len,
            });
            done += len;
        }
    }
    out
}

/// The mapping blocks a file with these data runs needs in `format`, as (kind, first
/// logical block covered): the one statement of the tree shape that plans are checked
/// against and images are written and read with. Errors when the runs reach past what the
/// format can map.
pub fn required_mapping(
    format: MapFormat,
    runs: &[Run],
    block_bytes: u64,
) -> Result<Vec<(MapKind, u64)>, String> {
    let end = runs.last().map_or(0, |r| r.logical + r.len);
    match format {
        MapFormat::Blocks => {
            let geo = BlockMapGeometry::new(block_bytes);
            if end > geo.max_logical_blocks() {
                return Err(format!(
                    "logical block {} is beyond what IND/DIND/TIND can map ({} blocks)",
                    end - 1,
                    geo.max_logical_blocks()
                ));
            }
            Ok(mapping_needed(&geo, runs)
                .into_iter()
                .map(|(level, logical)| (kind_of(level), logical))
                .collect())
        }
        MapFormat::Extents => {
            if end > EXTENT_MAX_LOGICAL {
                return Err(format!(
                    "logical block {} is beyond what an extent can map (2^32 blocks)",
                    end - 1
                ));
            }
            let firsts: Vec<u64> = extents_of(runs).iter().map(|e| e.logical).collect();
            Ok(extent_tree_blocks(&firsts, block_bytes)
                .into_iter()
                .map(|(height, logical)| (MapKind::Extent { height }, logical))
                .collect())
        }
    }
}

/// The rightmost node of one level while extents are appended.
#[derive(Clone, Copy, Debug)]
struct TreeNode {
    entries: u64,
    last_logical: u64,
}

/// The extent-tree blocks `ext2fs_extent_insert()` allocates when a file's extents are
/// inserted in logical order, each as (height above the leaves, first logical block it
/// covers), in allocation order.
///
/// Follows lib/ext2fs/extent.c `extent_node_split()`: a full root moves all its entries
/// into a new block (the tree grows a level); a full non-root node at the end of the file
/// moves only its last entry into the new block (`splitting_at_eof()`, "no_balance"), so
/// every leaf but the last holds one entry less than it could; a node whose parent is full
/// splits the parent first. (The kernel, appending, leaves every leaf full: ext4_ext_split()
/// moves nothing; docs/image.md.)
pub fn extent_tree_blocks(first_logicals: &[u64], block_bytes: u64) -> Vec<(u8, u64)> {
    let file_first = first_logicals.first().copied().unwrap_or(0);
    let per_block = extent_entries_per_block(block_bytes);
    let cap = |index: usize| {
        if index == 0 {
            EXTENT_ROOT_ENTRIES
        } else {
            per_block
        }
    };
    let mut path = vec![TreeNode {
        entries: 0,
        last_logical: 0,
    }];
    let mut out = Vec::new();
    for &lblk in first_logicals {
        let leaf = path.len() - 1;
        if path[leaf].entries >= cap(leaf) {
            split(&mut path, leaf, &cap, file_first, &mut out);
        }
        let leaf = path.len() - 1;
        path[leaf].entries += 1;
        path[leaf].last_logical = lblk;
    }
    out
}

/// Splits the node at `index` of the rightmost path; returns its index afterwards (a root
/// split pushes every node one level down).
fn split(
    path: &mut Vec<TreeNode>,
    index: usize,
    cap: &dyn Fn(usize) -> u64,
    file_first: u64,
    out: &mut Vec<(u8, u64)>,
) -> usize {
    let mut index = index;
    if index > 0 && path[index - 1].entries >= cap(index - 1) {
        let parent = split(path, index - 1, cap, file_first, out);
        index = parent + 1;
    }
    let depth = path.len() - 1;
    if index == 0 {
        // the root's entries move to a new block one level down; the root keeps one
        // index entry, which starts where the file's first extent does
        let root = path[0];
        let first = file_first;
        out.push((depth as u8, first));
        path.insert(
            1,
            TreeNode {
                entries: root.entries,
                last_logical: root.last_logical,
            },
        );
        path[0].entries = 1;
        path[0].last_logical = first;
        return 1;
    }
    // at the end of the file: the last entry moves to the new block
    let moved = path[index].last_logical;
    out.push(((depth - index) as u8, moved));
    path[index].entries -= 1;
    path[index] = TreeNode {
        entries: 1,
        last_logical: moved,
    };
    path[index - 1].entries += 1;
    path[index - 1].last_logical = moved;
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(logical: u64, len: u64) -> Run {
        Run {
            logical,
            physical: 1000,
            len,
        }
    }

    #[test]
    fn bases_for_4k_blocks() {
        let g = BlockMapGeometry::new(4096);
        assert_eq!(g.base(1), 12);
        assert_eq!(g.base(2), 12 + 1024);
        assert_eq!(g.base(3), 12 + 1024 + 1024 * 1024);
    }

    #[test]
    fn direct_only_needs_nothing() {
        let g = BlockMapGeometry::new(4096);
        assert!(mapping_needed(&g, &[run(0, 12)]).is_empty());
        let n = mapping_needed(&g, &[run(0, 13)]);
        assert_eq!(n.into_iter().collect::<Vec<_>>(), vec![(1, 12)]);
    }

    #[test]
    fn dind_region_counts_ind_per_1024() {
        let g = BlockMapGeometry::new(4096);
        let n = mapping_needed(&g, &[run(0, 12 + 1024 + 2049)]);
        assert_eq!(n.len(), 1 + 1 + 3);
        assert!(n.contains(&(2, 1036)));
        assert!(n.contains(&(1, 1036 + 2048)));
        assert_eq!(mapping_blocks_for(12 + 1024 + 2049, 1024), 5);
    }

    #[test]
    fn sparse_tind_block() {
        let g = BlockMapGeometry::new(1024);
        let t = g.base(3);
        let n = mapping_needed(&g, &[run(t + 5 * g.span(2) + 7, 1)]);
        assert_eq!(
            n.into_iter().collect::<Vec<_>>(),
            vec![(1, t + 5 * g.span(2)), (2, t + 5 * g.span(2)), (3, t)]
        );
    }

    #[test]
    fn incremental_and_whole_file_agree() {
        let g = BlockMapGeometry::new(1024);
        let blocks = g.base(3) + 3 * g.span(2) + 17;
        let mut inc: Vec<(u8, u64)> = (0..blocks)
            .flat_map(|l| mapping_needed_at(l, 256))
            .map(|(k, l)| (level_of(k), l))
            .collect();
        inc.sort();
        let whole: Vec<(u8, u64)> = mapping_needed(&g, &[run(0, blocks)]).into_iter().collect();
        assert_eq!(inc, whole);
        assert_eq!(whole.len() as u64, mapping_blocks_for(blocks, 256));
    }

    #[test]
    fn events() {
        assert_eq!(mapping_needed_at(12, 1024), vec![(MapKind::Ind, 12)]);
        assert_eq!(
            mapping_needed_at(1036, 1024),
            vec![(MapKind::Dind, 1036), (MapKind::Ind, 1036)]
        );
        assert!(mapping_needed_at(2061, 1024).is_empty());
        assert_eq!(next_mapping_event(0, 1024), 12);
        assert_eq!(next_mapping_event(1036, 1024), 2060);
    }

    #[test]
    fn extents_cut_at_max_len() {
        let e = extents_of(&[run(0, 70_000), run(80_000, 5)]);
        let lens: Vec<u64> = e.iter().map(|r| r.len).collect();
        assert_eq!(lens, vec![32768, 32768, 70_000 - 65536, 5]);
        assert_eq!(e[1].physical, 1000 + 32768);
    }

    fn tree(n: u64) -> Vec<(u8, u64)> {
        let firsts: Vec<u64> = (0..n).map(|i| i * 10).collect();
        extent_tree_blocks(&firsts, 4096)
    }

    #[test]
    fn extent_tree_shapes_as_libext2fs_appends() {
        assert_eq!(extent_entries_per_block(4096), 340);
        // up to 4 extents live in the inode
        assert!(tree(4).is_empty());
        // the 5th moves the root's four into a leaf
        assert_eq!(tree(5), vec![(0, 0)]);
        assert_eq!(tree(340), vec![(0, 0)]);
        // the 341st: the full leaf gives its last entry (extent 339) to a new leaf
        assert_eq!(tree(341), vec![(0, 0), (0, 3390)]);
        // 4 leaves of 339 + a full 4th: the root (full) moves into an index block first
        let t = tree(4 * 339 + 2);
        assert_eq!(t.len(), 6, "{t:?}");
        assert_eq!(t[4], (1, 0));
        assert_eq!(t[5], (0, 4 * 339 * 10));
    }
}
