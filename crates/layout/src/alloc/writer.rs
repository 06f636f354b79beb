//! Writing one regular file sequentially — at once, or in several appends by a writer that
//! keeps it open ([`FileWriter`]) — through the 2.6.23 ext3 block-mapping path
//! (fs/ext3/inode.c): one `ext3_get_blocks_handle()` call per 4 KiB page — a buffered
//! write maps each page with `block_prepare_write()` → `ext3_get_block()`, one block at a
//! time — whose goal comes from `ext3_find_goal()`, and which allocates any missing indirect
//! blocks in the same `ext3_alloc_blocks()` call as the data block, ahead of it.
//!
//! Calls that would each take the next free block inside the current reservation window
//! are done as one run: they are exactly what the per-block calls would do (the goal is
//! free and inside the window, so `ext3_try_to_allocate()` claims it), which is what lets a
//! 400 GB plan run in seconds. Every other call goes through [`Ext3Alloc::new_blocks`].

use crate::alloc::ext3_alloc::{Ext3Alloc, Rsv};
use crate::plan::{push_run, MapBlock, Run};

/// Where a policy puts indirect blocks.
pub trait IndirectPlacer {
    /// True when mapping blocks are allocated in the same `ext3_new_blocks()` call as the
    /// data block they lead to, just before it (vanilla ext3).
    fn inline(&self) -> bool;

    /// For non-inline placers: `count` mapping blocks for the data block just allocated at
    /// `data_block`, in allocation order; None on ENOSPC.
    fn place(&mut self, alloc: &mut Ext3Alloc, data_block: u64, count: usize) -> Option<Vec<u64>>;

    /// One directory block whose goal is `goal` (a new directory's block 0 from
    /// `ext3_mkdir()`, or one `ext3_append()` adds; no window). By default ext3's own
    /// `ext3_new_blocks(goal)`. None on ENOSPC.
    fn dir_block(&mut self, alloc: &mut Ext3Alloc, goal: u64) -> Option<u64> {
        alloc.new_blocks(goal, 1, None).map(|(b, _)| b)
    }
}

pub use crate::mapping::{mapping_needed_at, next_mapping_event};

/// `ext3_alloc_blocks()` for one data block: `maps` indirect blocks first, then the data
/// block, calling `ext3_new_blocks()` with the same goal until a data block comes; on
/// ENOSPC the indirect blocks just taken are given back (`failed_out`). Returns the
/// indirect blocks in order and the data block.
pub fn alloc_branch(
    alloc: &mut Ext3Alloc,
    goal: u64,
    maps: usize,
    mut rsv: Option<&mut Rsv>,
) -> Option<(Vec<u64>, u64)> {
    let mut got: Vec<u64> = Vec::with_capacity(maps);
    let mut target = maps as u64 + 1;
    loop {
        let Some((start, n)) = alloc.new_blocks(goal, target, rsv.as_deref_mut()) else {
            for b in got {
                alloc.map.mark_free(b, 1);
            }
            return None;
        };
        target -= n;
        let mut b = start;
        let mut left = n;
        while got.len() < maps && left > 0 {
            got.push(b);
            b += 1;
            left -= 1;
        }
        if left > 0 {
            return Some((got, b));
        }
    }
}

/// What writing one file produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileOutcome {
    /// Data runs in logical order.
    pub data: Vec<Run>,
    /// Mapping blocks in allocation order.
    pub mapping: Vec<MapBlock>,
    /// Data blocks written (less than asked on ENOSPC).
    pub blocks_written: u64,
}

/// Writes `blocks` data blocks of a new regular file whose first block's goal is
/// `first_goal` (the caller's `ext3_find_near()` for an empty inode).
pub fn write_file(
    alloc: &mut Ext3Alloc,
    placer: &mut dyn IndirectPlacer,
    first_goal: u64,
    blocks: u64,
    addr: u64,
) -> FileOutcome {
    let mut w = FileWriter::new(first_goal, addr);
    w.write(alloc, placer, blocks);
    w.out
}

/// [`write_file`] with every block through [`Ext3Alloc::new_blocks`] (no runs): the
/// reference the fast path is tested against. Slow; for tests.
pub fn write_file_per_block(
    alloc: &mut Ext3Alloc,
    placer: &mut dyn IndirectPlacer,
    first_goal: u64,
    blocks: u64,
    addr: u64,
) -> FileOutcome {
    let mut w = FileWriter::new(first_goal, addr);
    w.write_with(alloc, placer, blocks, false);
    w.out
}

/// A regular file open for writing: what 2.6.23 keeps per inode between two writes
/// (`struct ext3_block_alloc_info`: the reservation window and the last allocated
/// logical/physical block that `ext3_find_goal()` continues from) and what was written so
/// far. Each [`FileWriter::write`] appends at the end of the file.
///
/// While the writer is idle and the file stays open, its window stays in the file system's
/// reservation tree: [`Ext3Alloc::park_window`] it, and [`Ext3Alloc::unpark_window`] it
/// before the next write. Closing the file discards the window (`ext3_release_file()`):
/// just do not park it.
#[derive(Clone, Debug)]
pub struct FileWriter {
    /// The inode's reservation window (`rsv_window_node`).
    pub rsv: Rsv,
    /// `last_alloc_physical_block`: the last data block allocated (None: none yet).
    last_phys: Option<u64>,
    /// `ext3_find_near()` for the empty inode: the first block's goal.
    first_goal: u64,
    /// Block addresses per indirect block.
    addr: u64,
    /// Data runs and mapping blocks so far; `blocks_written` is the file's length in blocks.
    pub out: FileOutcome,
}

impl FileWriter {
    /// A new, empty regular file whose first block's goal is `first_goal`, on a file system
    /// of `addr` block addresses per indirect block.
    pub fn new(first_goal: u64, addr: u64) -> FileWriter {
        FileWriter {
            rsv: Rsv::new(),
            last_phys: None,
            first_goal,
            addr,
            out: FileOutcome::default(),
        }
    }

    /// A writer that opens the existing file `node` to write at its end (an aging stream's
    /// extend: open, write, close). What ext3 kept for the file's earlier writer is gone
    /// with it — its reservation window (`ext3_release_file()` discarded it) — so the new
    /// writer starts without a window. Its goal continues from the file's last data block:
    /// `ext3_find_goal()` when the in-core inode still remembers its last allocation, else
    /// `ext3_find_near()`, which aims at the nearest block before the new one in its
    /// indirect block — the last data block, or the indirect block itself when it starts
    /// one; the difference is ignored here. An empty file's first block aims at `first_goal`.
    ///
    /// The node's runs and mapping blocks move into the writer (the node has none until they
    /// are put back when the file is closed) rather than being copied for every extend
    /// (issue 28).
    pub fn resume(node: &mut crate::plan::PlannedInode, first_goal: u64, addr: u64) -> FileWriter {
        FileWriter {
            rsv: Rsv::new(),
            last_phys: node.data.last().map(|r| r.physical + r.len - 1),
            first_goal,
            addr,
            out: FileOutcome {
                blocks_written: node.data_blocks(),
                data: std::mem::take(&mut node.data),
                mapping: std::mem::take(&mut node.mapping),
            },
        }
    }

    /// Appends `blocks` data blocks at the end of the file; returns how many were written
    /// (fewer on ENOSPC, after which the file ends there).
    pub fn write(
        &mut self,
        alloc: &mut Ext3Alloc,
        placer: &mut dyn IndirectPlacer,
        blocks: u64,
    ) -> u64 {
        self.write_with(alloc, placer, blocks, true)
    }

    /// [`FileWriter::write`] with every block through [`Ext3Alloc::new_blocks`] (no runs):
    /// the reference the fast path is tested against. Slow; for tests.
    pub fn write_per_block(
        &mut self,
        alloc: &mut Ext3Alloc,
        placer: &mut dyn IndirectPlacer,
        blocks: u64,
    ) -> u64 {
        self.write_with(alloc, placer, blocks, false)
    }

    fn write_with(
        &mut self,
        alloc: &mut Ext3Alloc,
        placer: &mut dyn IndirectPlacer,
        blocks: u64,
        runs: bool,
    ) -> u64 {
        let addr = self.addr;
        let rsv = &mut self.rsv;
        let out = &mut self.out;
        let start = out.blocks_written;
        let blocks = start + blocks;
        let mut l = start;
        while l < blocks {
            // ext3_find_goal(): sequential heuristic (last allocated logical + 1), else
            // ext3_find_near() which, for the first block, is the caller's coloured goal.
            let goal = self.last_phys.map_or(self.first_goal, |p| p + 1);
            let need = mapping_needed_at(l, addr);
            if need.is_empty() {
                if runs
                    && rsv.contains(goal)
                    && goal < alloc.map.blocks_count()
                    && alloc.allocatable(goal)
                {
                    let group_end = alloc.map.group_end(alloc.map.group_of(goal));
                    let want = next_mapping_event(l, addr).min(blocks) - l;
                    let limit = (rsv.end + 1).min(group_end).min(goal + want);
                    let stop = alloc.next_unallocatable(goal, limit);
                    let n = stop - goal;
                    alloc.map.mark_used(goal, n);
                    rsv.hit += n;
                    push_run(&mut out.data, l, goal, n);
                    l += n;
                    self.last_phys = Some(stop - 1);
                    continue;
                }
                let Some((b, _)) = alloc.new_blocks(goal, 1, Some(rsv)) else {
                    break;
                };
                push_run(&mut out.data, l, b, 1);
                self.last_phys = Some(b);
                l += 1;
                continue;
            }
            // Inline (2007): the indirect blocks come from the same call as, and just before,
            // the data block. Otherwise the data block first, then the placer puts the
            // indirect blocks.
            let (maps, d) = if placer.inline() {
                let Some((maps, d)) = alloc_branch(alloc, goal, need.len(), Some(rsv)) else {
                    break;
                };
                (maps, d)
            } else {
                let Some((d, _)) = alloc.new_blocks(goal, 1, Some(rsv)) else {
                    break;
                };
                let Some(maps) = placer.place(alloc, d, need.len()) else {
                    alloc.map.mark_free(d, 1);
                    break;
                };
                (maps, d)
            };
            out.mapping
                .extend(
                    need.iter()
                        .zip(maps)
                        .map(|(&(kind, logical), physical)| MapBlock {
                            kind,
                            logical,
                            physical,
                        }),
                );
            push_run(&mut out.data, l, d, 1);
            self.last_phys = Some(d);
            l += 1;
        }
        out.blocks_written = l;
        l - start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::FreeMap;
    use crate::plan::MapKind;

    use crate::policy::ext3_2007::InlineIndirect as Inline;

    #[test]
    fn inline_indirect_precedes_its_data() {
        let mut a = Ext3Alloc::new(FreeMap::new(1 << 16, 0, 1 << 15));
        let out = write_file(&mut a, &mut Inline, 100, 3000, 1024);
        assert_eq!(out.blocks_written, 3000);
        assert_eq!(out.mapping.len(), 4);
        // 100..112 data, 112 IND, 113.. data; DIND+IND before block 1036.
        assert_eq!(
            out.mapping[0],
            MapBlock {
                kind: MapKind::Ind,
                logical: 12,
                physical: 112
            }
        );
        assert_eq!(
            out.data[0],
            Run {
                logical: 0,
                physical: 100,
                len: 12
            }
        );
        assert_eq!(out.data[1].physical, 113);
        assert_eq!(out.mapping[1].physical, 113 + 1024);
        assert_eq!(out.mapping[2].physical, 113 + 1025);
        let total: u64 = out.data.iter().map(|r| r.len).sum();
        assert_eq!(total, 3000);
        assert_eq!(a.map.total_free(), (1 << 16) - 3004);
    }
}
