//! Which indirect blocks a block-mapped file needs: the ext2/3 IND/DIND/TIND tree shape
//! (12 direct slots, then one tree level per slot), as logical positions only.

use std::collections::BTreeSet;

use layoutlab_layout::{MapKind, Run};

/// Direct slots in the inode (EXT2_NDIR_BLOCKS).
pub const DIRECT_BLOCKS: u64 = 12;

/// Tree shape for one block size.
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

/// 1, 2, 3 for IND, DIND, TIND.
pub fn level_of(kind: MapKind) -> u8 {
    match kind {
        MapKind::Ind => 1,
        MapKind::Dind => 2,
        MapKind::Tind => 3,
    }
}

/// The kind of a level (1..=3).
pub fn kind_of(level: u8) -> MapKind {
    match level {
        1 => MapKind::Ind,
        2 => MapKind::Dind,
        _ => MapKind::Tind,
    }
}

/// (level, first logical block mapped) of every indirect block the runs need.
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
    }

    #[test]
    fn one_past_direct_needs_ind() {
        let g = BlockMapGeometry::new(4096);
        let n = mapping_needed(&g, &[run(0, 13)]);
        assert_eq!(n.into_iter().collect::<Vec<_>>(), vec![(1, 12)]);
    }

    #[test]
    fn dind_region_counts_ind_per_1024() {
        let g = BlockMapGeometry::new(4096);
        // 12 + 1024 + 2048 + 1 blocks: IND, DIND, three INDs under it
        let n = mapping_needed(&g, &[run(0, 12 + 1024 + 2049)]);
        assert_eq!(n.len(), 1 + 1 + 3);
        assert!(n.contains(&(2, 1036)));
        assert!(n.contains(&(1, 1036 + 2048)));
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
}
