//! The ext3 block allocator of Linux 2.6.23 (fs/ext3/balloc.c), as a pure function of a
//! free-space map: `ext3_new_blocks()` with per-inode reservation windows, goal search,
//! and the near-goal / free-byte / free-bit search order of `find_next_usable_block()`.
//!
//! The file system's reservation tree (`s_rsv_window_root`) holds the dummy head window at
//! block 0 (`ext3_fill_super()` inserts it), the window of the inode being written (the
//! [`Rsv`] passed to [`Ext3Alloc::new_blocks`]) and the *parked* windows of other files
//! still open for writing between two of their writes ([`Ext3Alloc::park_window`]): a new
//! window is searched around all of them (`find_next_reservable_window()`) and a window
//! grows only up to the next one (`try_to_extend_reservation()`). A file's window leaves
//! the tree when the file is closed (`ext3_discard_reservation()` from
//! `ext3_release_file()`): a writer that closes simply does not park it. With one file
//! written at a time nothing is parked and the tree is the head and one window.
//!
//! A policy may declare a *hole* per group that data allocation must skip (the metacluster
//! policy does); the hole's blocks stay free in the bitmap and in the group free counts, as
//! they do on disk, so every decision based on counts is unchanged.

use crate::alloc::FreeMap;
use std::collections::BTreeMap;

/// `EXT3_DEFAULT_RESERVE_BLOCKS` (include/linux/ext3_fs.h, 2.6.23).
pub const DEFAULT_RESERVE_BLOCKS: u64 = 8;
/// `EXT3_MAX_RESERVE_BLOCKS` (include/linux/ext3_fs.h, 2.6.23).
pub const MAX_RESERVE_BLOCKS: u64 = 1027;

/// An inode's reservation window (`struct ext3_reserve_window_node`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rsv {
    /// First block of the window (absolute).
    pub start: u64,
    /// Last block of the window (absolute, inclusive; may lie past the group's end).
    pub end: u64,
    /// `rsv_goal_size`: the size the next window will get.
    pub goal_size: u64,
    /// `rsv_alloc_hit`: blocks allocated from the current window.
    pub hit: u64,
    /// No window allocated (`rsv_is_empty()`).
    pub empty: bool,
}

impl Rsv {
    /// A fresh inode's window state (`ext3_init_block_alloc_info()`).
    pub fn new() -> Rsv {
        Rsv {
            start: 0,
            end: 0,
            goal_size: DEFAULT_RESERVE_BLOCKS,
            hit: 0,
            empty: true,
        }
    }

    /// Whether `block` lies in the (non-empty) window.
    pub fn contains(&self, block: u64) -> bool {
        !self.empty && block >= self.start && block <= self.end
    }
}

impl Default for Rsv {
    fn default() -> Self {
        Rsv::new()
    }
}

/// The allocator: a free map plus the per-group data holes of a policy.
#[derive(Clone, Debug)]
pub struct Ext3Alloc {
    /// Free space (the on-disk bitmaps).
    pub map: FreeMap,
    /// Per group: absolute `[start, end)` data allocation must skip (empty: none).
    holes: Vec<(u64, u64)>,
    /// Windows of the other files open for writing: first block -> last block (inclusive).
    parked: BTreeMap<u64, u64>,
}

/// A window of the reservation tree (absolute, inclusive bounds).
#[derive(Clone, Copy, Debug)]
struct Window {
    start: u64,
    end: u64,
}

impl Ext3Alloc {
    /// An allocator over `map` with no holes.
    pub fn new(map: FreeMap) -> Ext3Alloc {
        let groups = map.group_count() as usize;
        Ext3Alloc {
            map,
            holes: vec![(0, 0); groups],
            parked: BTreeMap::new(),
        }
    }

    /// Puts the window of a file whose writer pauses (keeping the file open) into the
    /// reservation tree, where other files' allocations see it; nothing for an empty one.
    /// Call [`Ext3Alloc::unpark_window`] before the file is written again.
    pub fn park_window(&mut self, rsv: &Rsv) {
        if rsv.empty {
            return;
        }
        debug_assert!(
            !matches!(self.parked.range(..=rsv.end).next_back(), Some((_, &e)) if e >= rsv.start),
            "window {}..={} overlaps a parked one",
            rsv.start,
            rsv.end
        );
        self.parked.insert(rsv.start, rsv.end);
    }

    /// Takes a parked window out of the tree again: its file is about to be written, and
    /// its window is the [`Rsv`] passed to [`Ext3Alloc::new_blocks`] from now on.
    pub fn unpark_window(&mut self, rsv: &Rsv) {
        if !rsv.empty {
            self.parked.remove(&rsv.start);
        }
    }

    /// Parked windows (first block, last block), in block order.
    pub fn parked_windows(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.parked.iter().map(|(&s, &e)| (s, e))
    }

    /// Declares the hole of `group` (absolute `[start, end)`).
    pub fn set_hole(&mut self, group: u64, start: u64, end: u64) {
        self.holes[group as usize] = (start, end);
    }

    /// The hole of `group`.
    pub fn hole(&self, group: u64) -> (u64, u64) {
        self.holes[group as usize]
    }

    fn in_hole(&self, block: u64) -> bool {
        let (s, e) = self.holes[self.map.group_of(block) as usize];
        block >= s && block < e
    }

    /// `ext3_test_allocatable()` for data: free and outside the policy's hole.
    pub fn allocatable(&self, block: u64) -> bool {
        !self.map.is_used(block) && !self.in_hole(block)
    }

    /// First data-allocatable block in `[from, limit)` (limit within one group or not).
    pub fn next_allocatable(&self, from: u64, limit: u64) -> Option<u64> {
        let mut at = from;
        loop {
            let b = self.map.next_free(at, limit)?;
            let (s, e) = self.holes[self.map.group_of(b) as usize];
            if b >= s && b < e {
                at = e;
                continue;
            }
            return Some(b);
        }
    }

    /// First block at or after `from` (below `limit`) that data may not use.
    pub fn next_unallocatable(&self, from: u64, limit: u64) -> u64 {
        let used = self.map.next_used(from, limit);
        let (s, _) = self.holes[self.map.group_of(from) as usize];
        if s > from && s < used {
            s
        } else {
            used
        }
    }

    fn bpg(&self) -> u64 {
        self.map.blocks_per_group()
    }

    /// `ext3_new_blocks()`: allocates up to `count` contiguous blocks near `goal`, using
    /// `rsv` when given (regular files). Returns (first block, number) or None (ENOSPC).
    pub fn new_blocks(
        &mut self,
        goal: u64,
        count: u64,
        mut rsv: Option<&mut Rsv>,
    ) -> Option<(u64, u64)> {
        let mut num = count;
        let fdb = self.map.first_data_block();
        let goal = if goal < fdb || goal >= self.map.blocks_count() {
            fdb
        } else {
            goal
        };
        let goal_group = self.map.group_of(goal);
        let ngroups = self.map.group_count();
        let mut windowsz = rsv.as_ref().map_or(0, |r| r.goal_size);
        let mut use_rsv = rsv.is_some() && windowsz > 0;
        loop {
            let mut group = goal_group;
            let free = self.map.group_free(group);
            // "if there is not enough free blocks to make a new reservation, turn off
            // reservation for this allocation"
            if use_rsv && free < windowsz && rsv.as_ref().is_some_and(|r| r.empty) {
                use_rsv = false;
            }
            if free > 0 {
                let grp_goal = goal - self.map.group_first(group);
                let r = if use_rsv { rsv.as_deref_mut() } else { None };
                if let Some(got) = self.try_with_rsv(group, Some(grp_goal), r, &mut num) {
                    return Some(got);
                }
            }
            for _ in 0..ngroups {
                group = (group + 1) % ngroups;
                // "skip this group if the number of free blocks is less than half of the
                // reservation window size"
                if self.map.group_free(group) <= windowsz / 2 {
                    continue;
                }
                let r = if use_rsv { rsv.as_deref_mut() } else { None };
                if let Some(got) = self.try_with_rsv(group, None, r, &mut num) {
                    return Some(got);
                }
            }
            // "the file system is 'full' of reservations": retry without one.
            if use_rsv {
                use_rsv = false;
                windowsz = 0;
                continue;
            }
            return None;
        }
    }

    fn goal_in_window(&self, r: &Rsv, grp_goal: Option<u64>, group: u64) -> bool {
        let first = self.map.group_first(group);
        let last = first + self.bpg() - 1;
        if r.start > last || r.end < first {
            return false;
        }
        match grp_goal {
            Some(g) => first + g >= r.start && first + g <= r.end,
            None => true,
        }
    }

    /// `ext3_try_to_allocate_with_rsv()`.
    fn try_with_rsv(
        &mut self,
        group: u64,
        grp_goal: Option<u64>,
        rsv: Option<&mut Rsv>,
        count: &mut u64,
    ) -> Option<(u64, u64)> {
        let Some(r) = rsv else {
            // Without a window the caller's count itself is passed down, and a failed
            // attempt leaves it 0, so later groups yield one block (as in 2.6.23).
            return self.try_to_allocate(group, grp_goal, count, None);
        };
        let first = self.map.group_first(group);
        let mut grp_goal = grp_goal;
        let mut failed = false;
        let mut num = *count;
        loop {
            if r.empty || failed || !self.goal_in_window(r, grp_goal, group) {
                if r.goal_size < *count {
                    r.goal_size = *count;
                }
                if !self.alloc_new_reservation(r, grp_goal, group) {
                    return None;
                }
                if !self.goal_in_window(r, grp_goal, group) {
                    grp_goal = None;
                }
            } else if let Some(g) = grp_goal {
                // try_to_extend_reservation(): grow by what is missing, up to the next window.
                let curr = r.end as i64 - (g + first) as i64 + 1;
                if curr < *count as i64 {
                    let size = (*count as i64 - curr) as u64;
                    match self.parked.range(r.start + 1..).next() {
                        Some((&next, _)) if next - r.end - 1 < size => r.end = next - 1,
                        _ => r.end += size,
                    }
                }
            }
            match self.try_to_allocate(group, grp_goal, &mut num, Some((r.start, r.end))) {
                Some((start, n)) => {
                    r.hit += n;
                    *count = n;
                    return Some((start, n));
                }
                None => {
                    failed = true;
                    num = *count;
                }
            }
        }
    }

    /// `search_reserve_window()`: the window of the tree holding `block`, or the last one
    /// before it (the dummy head at 0 when no other is).
    fn window_at_or_before(&self, block: u64, r: &Rsv) -> Window {
        let mut w = Window { start: 0, end: 0 };
        if let Some((&start, &end)) = self.parked.range(..=block).next_back() {
            w = Window { start, end };
        }
        if !r.empty && r.start <= block && r.start >= w.start {
            w = Window {
                start: r.start,
                end: r.end,
            };
        }
        w
    }

    /// `rb_next()`: the window of the tree that follows the one starting at `start`.
    fn window_after(&self, start: u64, r: &Rsv) -> Option<Window> {
        let parked = self
            .parked
            .range(start + 1..)
            .next()
            .map(|(&start, &end)| Window { start, end });
        let mine = (!r.empty && r.start > start).then_some(Window {
            start: r.start,
            end: r.end,
        });
        match (parked, mine) {
            (Some(p), Some(m)) => Some(if p.start < m.start { p } else { m }),
            (p, m) => p.or(m),
        }
    }

    /// `alloc_new_reservation()` with `find_next_reservable_window()` over the tree (dummy
    /// head at 0, the parked windows, ours).
    fn alloc_new_reservation(&mut self, r: &mut Rsv, grp_goal: Option<u64>, group: u64) -> bool {
        let first = self.map.group_first(group);
        let group_end_block = first + self.bpg() - 1;
        let group_limit = self.map.group_end(group);
        let mut start_block = first + grp_goal.unwrap_or(0);
        let mut size = r.goal_size;
        if !r.empty {
            if r.start <= group_end_block && r.end > group_end_block && start_block >= r.start {
                return false;
            }
            // "hit ratio greater than 1/2" of the window's length
            let window_len = r.end - r.start + 1;
            if r.hit > window_len / 2 {
                size = (size * 2).min(MAX_RESERVE_BLOCKS);
                r.goal_size = size;
            }
        }
        let mut head = self.window_at_or_before(start_block, r);
        loop {
            // find_next_reservable_window(): walk the windows from `head` until the gap
            // after one holds `size` blocks from `cur` (or no window follows).
            let mut cur = start_block;
            let mut w = head;
            loop {
                if cur <= w.end {
                    cur = w.end + 1;
                }
                if cur > group_end_block {
                    r.empty = true;
                    return false;
                }
                match self.window_after(w.start, r) {
                    Some(next) if cur + size > next.start => w = next,
                    _ => break,
                }
            }
            r.start = cur;
            r.end = cur + size - 1;
            r.hit = 0;
            r.empty = false;
            // bitmap_search_next_usable_block() from the window start to the group end.
            match self.next_allocatable(cur, group_limit) {
                None => {
                    r.empty = true;
                    return false;
                }
                Some(b) if b <= r.end => return true,
                Some(b) => {
                    // search again from the free block, the walk starting at our window
                    start_block = b;
                    head = Window {
                        start: r.start,
                        end: r.end,
                    };
                }
            }
        }
    }

    /// `ext3_try_to_allocate()`: group-relative goal, optional window (absolute bounds).
    fn try_to_allocate(
        &mut self,
        group: u64,
        grp_goal: Option<u64>,
        count: &mut u64,
        window: Option<(u64, u64)>,
    ) -> Option<(u64, u64)> {
        let first = self.map.group_first(group);
        let real_len = self.map.group_end(group) - first;
        let (start, end, goal) = match window {
            Some((ws, we)) => {
                let start = ws.saturating_sub(first);
                let end = if we < first {
                    0
                } else {
                    (we - first + 1).min(self.bpg())
                };
                match grp_goal {
                    Some(g) if start <= g && g < end => (g, end, Some(g)),
                    _ => (start, end, None),
                }
            }
            None => (
                grp_goal.filter(|&g| g > 0).unwrap_or(0),
                self.bpg(),
                grp_goal,
            ),
        };
        let end = end.min(real_len);
        let goal = match goal {
            Some(g) if g < end && self.allocatable(first + g) => g,
            _ => {
                let Some(mut g) = self.find_next_usable_block(group, start, end) else {
                    *count = 0;
                    return None;
                };
                if window.is_none() {
                    // Back up over at most 7 free blocks so allocations start at the
                    // beginning of a free stretch.
                    for _ in 0..7 {
                        if g > start && self.allocatable(first + g - 1) {
                            g -= 1;
                        } else {
                            break;
                        }
                    }
                }
                g
            }
        };
        let want = (*count).max(1);
        let limit = first + end;
        let mut n = 1;
        while n < want && first + goal + n < limit && self.allocatable(first + goal + n) {
            n += 1;
        }
        self.map.mark_used(first + goal, n);
        *count = n;
        Some((first + goal, n))
    }

    /// `find_next_usable_block()`: near the goal (to the next 64-block boundary), then the
    /// first wholly free bitmap byte (`memscan`), then any free bit.
    fn find_next_usable_block(&self, group: u64, start: u64, end: u64) -> Option<u64> {
        let first = self.map.group_first(group);
        if start >= end {
            return None;
        }
        if start > 0 {
            let end_goal = ((start + 63) & !63).min(end);
            if let Some(b) = self.map.next_free(first + start, first + end_goal) {
                if self.allocatable(b) {
                    return Some(b - first);
                }
            }
        }
        if let Some(next) = self.first_free_byte(group, start & !7, end) {
            if next < end && next >= start && self.allocatable(first + next) {
                return Some(next);
            }
        }
        self.next_allocatable(first + start, first + end)
            .map(|b| b - first)
    }

    /// Group-relative start of the first bitmap byte at or after `from` (a multiple of 8)
    /// whose 8 blocks are all free, scanning bytes below `(end + 7) / 8`.
    fn first_free_byte(&self, group: u64, from: u64, end: u64) -> Option<u64> {
        let first = self.map.group_first(group);
        let group_limit = self.map.group_end(group);
        let byte_limit = end.div_ceil(8) * 8;
        let mut at = first + from;
        while at < first + byte_limit {
            let s = self.map.next_free(at, group_limit)?;
            let e = self.map.next_used(s, group_limit);
            let p = (s - first).div_ceil(8) * 8;
            if p >= byte_limit {
                return None;
            }
            if first + p + 8 <= e {
                return Some(p);
            }
            at = e;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(blocks: u64, bpg: u64) -> Ext3Alloc {
        Ext3Alloc::new(FreeMap::new(blocks, 0, bpg))
    }

    #[test]
    fn goal_free_is_taken() {
        let mut a = fresh(4096, 1024);
        let mut r = Rsv::new();
        assert_eq!(a.new_blocks(100, 1, Some(&mut r)), Some((100, 1)));
        assert!(r.contains(100) && r.end == 107, "{r:?}");
        assert_eq!(a.new_blocks(101, 2, Some(&mut r)), Some((101, 2)));
    }

    #[test]
    fn window_doubles_on_hits() {
        let mut a = fresh(1 << 16, 1 << 15);
        let mut r = Rsv::new();
        for goal in 10..110 {
            let (b, n) = a.new_blocks(goal, 1, Some(&mut r)).unwrap();
            assert_eq!((b, n), (goal, 1));
        }
        // 8 + 16 + 32 = 56 < 100 <= 56 + 64
        assert_eq!(r.goal_size, 64);
        assert_eq!(r.start, 10 + 56);
    }

    #[test]
    fn used_goal_moves_to_next_free_in_group() {
        let mut a = fresh(4096, 1024);
        a.map.mark_used(0, 300);
        let mut r = Rsv::new();
        assert_eq!(a.new_blocks(5, 1, Some(&mut r)), Some((300, 1)));
    }

    #[test]
    fn full_group_moves_to_next_group_start() {
        let mut a = fresh(4096, 1024);
        a.map.mark_used(0, 1024);
        a.map.mark_used(1024, 10);
        let mut r = Rsv::new();
        assert_eq!(a.new_blocks(500, 1, Some(&mut r)), Some((1034, 1)));
    }

    #[test]
    fn no_window_prefers_free_byte_and_backs_up() {
        let mut a = fresh(4096, 1024);
        a.map.mark_used(0, 200);
        a.map.mark_used(203, 97); // 200..203 is a 3-block hole, next free stretch at 300
                                  // goal 150 is used; near search to 192 fails, memscan finds byte 300/8 -> 304,
                                  // then backs up over the free blocks 303..300.
        assert_eq!(a.new_blocks(150, 1, None), Some((300, 1)));
    }

    #[test]
    fn hole_is_skipped_by_data() {
        let mut a = fresh(4096, 1024);
        a.set_hole(0, 512, 520);
        a.map.mark_used(0, 512);
        let mut r = Rsv::new();
        assert_eq!(a.new_blocks(0, 1, Some(&mut r)), Some((520, 1)));
        assert_eq!(a.map.group_free(0), 1024 - 513);
    }

    #[test]
    fn enospc() {
        let mut a = fresh(2048, 1024);
        a.map.mark_used(0, 2048);
        assert_eq!(a.new_blocks(0, 1, Some(&mut Rsv::new())), None);
    }
}
