//! A model of ext4's multiblock allocator (fs/ext4/mballoc.c of 2.6.28-2.6.30), shared by
//! the ext4 policies. It keeps free space and answers requests; the policies choose goals.
//!
//! What it keeps from mballoc:
//! - `ext4_mb_find_by_goal()`: the goal's free extent is used when it holds the whole
//!   request;
//! - `ext4_mb_regular_allocator()`: otherwise groups are scanned from the goal's group; the
//!   first group with a free extent of the request's length gives its first such extent
//!   (criteria 0-2), and failing that the first free extent found is used whole and the rest
//!   asked for again (criterion 3); with `avoid_first_of_flex` (commit a4912123,
//!   `ext4_mb_good_group()`), data requests skip the first group of each flex group in that
//!   scan;
//! - locality-group preallocation (`ext4_mb_group_or_file()`, `ext4_mb_use_group_pa()`):
//!   files smaller than `s_mb_stream_request` (16 blocks) take their blocks one after another
//!   from a 512-block (`s_mb_group_prealloc`) preallocation shared by the writer, so small
//!   files pack; a larger file is one request per group's worth of blocks.
//!
//! Simplifications (docs/policies.md): the buddy system's power-of-two alignment and
//! `ext4_mb_normalize_request()`'s size rounding are not modelled; requests are served
//! first-fit; allocation happens when the file is written (delayed allocation's later
//! writeback order is not modelled).

use crate::alloc::FreeMap;

/// `s_mb_stream_request`: files below this many blocks use the locality group's
/// preallocation.
pub const STREAM_REQUEST_BLOCKS: u64 = 16;

/// `s_mb_group_prealloc`: blocks in one locality-group preallocation.
pub const GROUP_PREALLOC_BLOCKS: u64 = 512;

/// Free space and the writer's locality-group preallocation.
#[derive(Clone, Debug)]
pub struct Mballoc {
    /// Free space (preallocated blocks count as used until [`Mballoc::finish`]).
    pub map: FreeMap,
    flex_size: u64,
    avoid_first_of_flex: bool,
    /// The locality group's preallocation: blocks `next..end` are reserved and unused.
    pa: Option<(u64, u64)>,
}

impl Mballoc {
    /// An allocator over `map`; `avoid_first_of_flex` is the 2009 data rule.
    pub fn new(map: FreeMap, flex_size: u64, avoid_first_of_flex: bool) -> Mballoc {
        Mballoc {
            map,
            flex_size: flex_size.max(1),
            avoid_first_of_flex,
            pa: None,
        }
    }

    /// Length of the free extent starting at `block` (0 if used), capped at `cap`.
    fn free_extent(&self, block: u64, cap: u64) -> u64 {
        if block >= self.map.blocks_count() || self.map.is_used(block) {
            return 0;
        }
        let end = self
            .map
            .group_end(self.map.group_of(block))
            .min(block + cap);
        self.map.next_used(block, end) - block
    }

    /// The first free extent of at least `len` blocks in `group` (first fit), or with
    /// `any`, the first free extent at all; as (start, length up to `len`).
    fn scan_group(&self, group: u64, len: u64, any: bool) -> Option<(u64, u64)> {
        let (mut at, end) = (self.map.group_first(group), self.map.group_end(group));
        while let Some(start) = self.map.next_free(at, end) {
            let stop = self.map.next_used(start, end);
            if stop - start >= len || any {
                return Some((start, (stop - start).min(len)));
            }
            at = stop;
        }
        None
    }

    /// One request of `len` blocks (at most a group's worth) near `goal`: the extent found,
    /// marked used; it may be shorter than asked only when no group has `len` free in a row.
    pub fn request(&mut self, goal: u64, len: u64, data: bool) -> Option<(u64, u64)> {
        let goal = goal.min(self.map.blocks_count() - 1);
        if self.free_extent(goal, len) >= len {
            self.map.mark_used(goal, len);
            return Some((goal, len));
        }
        let groups = self.map.group_count();
        let first = self.map.group_of(goal);
        for any in [false, true] {
            for i in 0..groups {
                let group = (first + i) % groups;
                let skip = data
                    && !any
                    && self.avoid_first_of_flex
                    && self.flex_size >= 4
                    && group % self.flex_size == 0;
                if skip {
                    continue;
                }
                if let Some((start, n)) = self.scan_group(group, len, any) {
                    self.map.mark_used(start, n);
                    return Some((start, n));
                }
            }
        }
        None
    }

    /// Data blocks for a new file of `blocks` blocks whose goal is `goal`, as physical runs
    /// in logical order; None on ENOSPC (nothing taken).
    pub fn alloc_file(&mut self, goal: u64, blocks: u64) -> Option<Vec<(u64, u64)>> {
        if blocks == 0 {
            return Some(Vec::new());
        }
        if blocks < STREAM_REQUEST_BLOCKS {
            let fits = matches!(self.pa, Some((next, end)) if end - next >= blocks);
            if !fits {
                self.release_pa();
                if let Some((start, n)) = self.request(goal, GROUP_PREALLOC_BLOCKS, true) {
                    if n >= blocks {
                        self.pa = Some((start, start + n));
                    } else {
                        self.map.mark_free(start, n);
                    }
                }
            }
            if let Some((next, end)) = self.pa {
                if end - next >= blocks {
                    self.pa = Some((next + blocks, end));
                    return Some(vec![(next, blocks)]);
                }
            }
        }
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut left = blocks;
        let mut at = goal;
        while left > 0 {
            let ask = left.min(self.map.blocks_per_group());
            let Some((start, n)) = self.request(at, ask, true) else {
                for &(s, n) in &runs {
                    self.map.mark_free(s, n);
                }
                return None;
            };
            match runs.last_mut() {
                Some(last) if last.0 + last.1 == start => last.1 += n,
                _ => runs.push((start, n)),
            }
            left -= n;
            at = start + n;
        }
        Some(runs)
    }

    /// One metadata or directory block near `goal` (not a data request).
    pub fn alloc_block(&mut self, goal: u64) -> Option<u64> {
        self.request(goal, 1, false).map(|(b, _)| b)
    }

    /// Gives the unused part of the preallocation back (as unmount discards it).
    fn release_pa(&mut self) {
        if let Some((next, end)) = self.pa.take() {
            if end > next {
                self.map.mark_free(next, end - next);
            }
        }
    }

    /// Ends the run: the preallocation's unused blocks are free again.
    pub fn finish(&mut self) {
        self.release_pa();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> FreeMap {
        FreeMap::new(8 * 32768, 0, 32768)
    }

    #[test]
    fn small_files_pack_in_the_group_preallocation() {
        let mut m = Mballoc::new(map(), 4, false);
        let a = m.alloc_file(1000, 3).unwrap();
        let b = m.alloc_file(50_000, 2).unwrap();
        assert_eq!(a, vec![(1000, 3)]);
        // the second file ignores its goal: it follows the first in the preallocation
        assert_eq!(b, vec![(1003, 2)]);
        m.finish();
        assert_eq!(m.map.total_free(), 8 * 32768 - 5);
    }

    #[test]
    fn large_files_take_their_goal_then_scan() {
        let mut m = Mballoc::new(map(), 4, false);
        m.map.mark_used(100, 1);
        // the goal's extent is too short: first fit in the goal's group
        assert_eq!(m.alloc_file(90, 40).unwrap(), vec![(0, 40)]);
        // a group's worth at 200 does not fit before group 0 ends: group 1 has it whole,
        // and the rest follows
        assert_eq!(m.alloc_file(200, 40_000).unwrap(), vec![(32768, 40_000)]);
        assert_eq!(m.alloc_file(200, 300).unwrap(), vec![(200, 300)]);
    }

    #[test]
    fn data_avoids_the_first_group_of_a_flex_group_in_2009() {
        let mut m = Mballoc::new(map(), 4, true);
        m.map.mark_used(0, 10);
        // goal in group 0 taken: the scan skips groups 0 and 4 for data
        assert_eq!(m.alloc_file(5, 100).unwrap(), vec![(32768, 100)]);
        // directory blocks do not skip it
        assert_eq!(m.alloc_block(5), Some(10));
    }
}
