//! From a file's plan to the pages its reads touch, and from misses to a block trace.
//!
//! A read of file block `l` walks the file's mapping from the inode down — for a block map
//! the TIND, DIND and IND blocks over `l` (`ext4_get_branch()`), for an extent tree the index
//! and leaf blocks whose ranges hold `l` (`ext4_find_extent()`) — and then reads the data
//! block. Pages are named by physical block: mapping blocks live in the block device's page
//! cache and data in the file's, and no physical block is both.
//!
//! Not modelled: the in-inode part of the mapping (always cached with the inode) and ext4's
//! extent-status cache. For a block-mapped file that cache holds the one block each read
//! maps (`map.m_len` = 1 for a single-page read), which random reads of a large file do not
//! reuse; for an extent-mapped one it holds every extent of each leaf read
//! (`ext4_cache_extents()`), so after the first read a leaf is not touched again — the
//! stream here touches it, and a cache keeping the few leaves hot is then the same thing.

use crate::CacheError;
use layoutlab_layout::mapping::{MapFormat, DIRECT_BLOCKS};
use layoutlab_layout::plan::{MapKind, PlannedInode};
use layoutlab_trace::{Flags, Op, Request, Trace};
use std::collections::BTreeMap;

/// One page touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Physical block (the page's name).
    pub block: u64,
    /// A mapping block (indirect or extent-tree), not data.
    pub mapping: bool,
}

/// The pages reads of file blocks `logical_blocks` touch, in order, for `inode` with
/// `block_bytes` blocks.
pub fn stream(
    inode: &PlannedInode,
    block_bytes: u64,
    logical_blocks: &[u64],
) -> Result<Vec<Access>, CacheError> {
    // Mapping blocks by level (0 = the one nearest the data) and first logical block mapped.
    let mut levels: Vec<BTreeMap<u64, u64>> = vec![BTreeMap::new(); 4];
    for m in &inode.mapping {
        let level = match m.kind {
            MapKind::Ind => 0,
            MapKind::Dind => 1,
            MapKind::Tind => 2,
            MapKind::Extent { height } => usize::from(height).min(3),
        };
        levels[level].insert(m.logical, m.physical);
    }
    let addr = block_bytes / 4;
    let mut out = Vec::with_capacity(logical_blocks.len() * 3);
    for &l in logical_blocks {
        let physical = data_block(inode, l).ok_or_else(|| {
            CacheError::Layout(format!(
                "inode {}: file block {l} is not mapped (a hole or past the end)",
                inode.ino
            ))
        })?;
        match inode.format {
            MapFormat::Blocks => {
                for (level, first) in block_map_path(l, addr) {
                    let block = levels[level].get(&first).copied().ok_or_else(|| {
                        CacheError::Layout(format!(
                            "inode {}: no level-{level} indirect block over file block {l}",
                            inode.ino
                        ))
                    })?;
                    out.push(Access {
                        block,
                        mapping: true,
                    });
                }
            }
            MapFormat::Extents => {
                for level in (0..4).rev() {
                    if let Some((_, &block)) = levels[level].range(..=l).next_back() {
                        out.push(Access {
                            block,
                            mapping: true,
                        });
                    }
                }
            }
        }
        out.push(Access {
            block: physical,
            mapping: false,
        });
    }
    Ok(out)
}

/// (level, first logical block it maps) of the indirect blocks over block `l`, outermost
/// first, `addr` pointers a block.
fn block_map_path(l: u64, addr: u64) -> Vec<(usize, u64)> {
    let base2 = DIRECT_BLOCKS + addr;
    let base3 = base2 + addr * addr;
    if l < DIRECT_BLOCKS {
        vec![]
    } else if l < base2 {
        vec![(0, DIRECT_BLOCKS)]
    } else if l < base3 {
        let ind = base2 + (l - base2) / addr * addr;
        vec![(1, base2), (0, ind)]
    } else {
        let off = l - base3;
        let dind = base3 + off / (addr * addr) * (addr * addr);
        let ind = base3 + off / addr * addr;
        vec![(2, base3), (1, dind), (0, ind)]
    }
}

fn data_block(inode: &PlannedInode, l: u64) -> Option<u64> {
    let i = inode.data.partition_point(|r| r.logical + r.len <= l);
    let r = inode.data.get(i)?;
    (r.logical <= l).then(|| r.physical + (l - r.logical))
}

/// The misses of `accesses` (where `hit` is false) as synchronous one-block reads, issued
/// back to back with no think time, mapping reads flagged META: what a replay prices.
pub fn misses_trace(accesses: &[Access], hit: &[bool], block_bytes: u64) -> Trace {
    let sectors = (block_bytes / 512) as u32;
    let mut t = Trace::default();
    for (a, _) in accesses.iter().zip(hit).filter(|(_, h)| !**h) {
        let n = t.requests.len() as u64;
        t.requests.push(Request {
            issue_ns: n,
            complete_ns: Some(n),
            op: Op::Read,
            sector: a.block * u64::from(sectors),
            sectors,
            flags: if a.mapping {
                Flags::SYNC | Flags::META
            } else {
                Flags::SYNC
            },
            tag: 0,
            cpu: None,
        });
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_layout::plan::{MapBlock, Run};

    fn ext3_like() -> PlannedInode {
        // 1 KiB blocks (256 pointers): data at 1000.., IND over 12.., DIND over 268..
        let addr = 256;
        let mut mapping = vec![
            MapBlock {
                kind: MapKind::Ind,
                logical: 12,
                physical: 50,
            },
            MapBlock {
                kind: MapKind::Dind,
                logical: 12 + addr,
                physical: 51,
            },
        ];
        for k in 0..3 {
            mapping.push(MapBlock {
                kind: MapKind::Ind,
                logical: 12 + addr + k * addr,
                physical: 60 + k,
            });
        }
        PlannedInode {
            ino: 12,
            data: vec![Run {
                logical: 0,
                physical: 1000,
                len: 12 + 4 * addr,
            }],
            mapping,
            format: MapFormat::Blocks,
            ..Default::default()
        }
    }

    #[test]
    fn a_read_walks_its_indirect_path_then_its_data() {
        let s = stream(&ext3_like(), 1024, &[3, 20, 12 + 256 + 2 * 256 + 5]).unwrap();
        let blocks: Vec<(u64, bool)> = s.iter().map(|a| (a.block, a.mapping)).collect();
        assert_eq!(
            blocks,
            [
                (1003, false),
                (50, true),
                (1020, false),
                (51, true),
                (62, true),
                (1000 + 12 + 256 + 512 + 5, false)
            ]
        );
        let e = stream(&ext3_like(), 1024, &[5000]).unwrap_err().to_string();
        assert!(e.contains("not mapped"), "{e}");
    }

    #[test]
    fn an_extent_read_walks_index_then_leaf() {
        let inode = PlannedInode {
            ino: 12,
            data: vec![Run {
                logical: 0,
                physical: 5000,
                len: 100,
            }],
            mapping: vec![
                MapBlock {
                    kind: MapKind::Extent { height: 1 },
                    logical: 0,
                    physical: 9,
                },
                MapBlock {
                    kind: MapKind::Extent { height: 0 },
                    logical: 0,
                    physical: 10,
                },
                MapBlock {
                    kind: MapKind::Extent { height: 0 },
                    logical: 50,
                    physical: 11,
                },
            ],
            format: MapFormat::Extents,
            ..Default::default()
        };
        let s = stream(&inode, 4096, &[60]).unwrap();
        let blocks: Vec<u64> = s.iter().map(|a| a.block).collect();
        assert_eq!(blocks, [9, 11, 5060]);
    }

    #[test]
    fn misses_become_one_block_sync_reads() {
        let s = stream(&ext3_like(), 1024, &[20]).unwrap();
        let t = misses_trace(&s, &[false, true], 1024);
        assert_eq!(t.requests.len(), 1);
        assert_eq!((t.requests[0].sector, t.requests[0].sectors), (100, 2));
        assert!(t.requests[0].flags.contains(Flags::META));
    }
}
