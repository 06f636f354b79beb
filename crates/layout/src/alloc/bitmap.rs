//! Free-space bitmap of a whole file system, with per-group free counts: word-at-a-time
//! searches so that 100M blocks are planned as runs in seconds.

/// One bit per block (1 = used) and a free count per group.
#[derive(Clone, Debug)]
pub struct FreeMap {
    words: Vec<u64>,
    blocks_count: u64,
    first_data_block: u64,
    blocks_per_group: u64,
    group_free: Vec<u64>,
}

impl FreeMap {
    /// All blocks free (block 0 of a 1 KiB file system, outside every group, is used).
    pub fn new(blocks_count: u64, first_data_block: u64, blocks_per_group: u64) -> FreeMap {
        let groups = (blocks_count - first_data_block).div_ceil(blocks_per_group);
        let mut group_free = vec![blocks_per_group; groups as usize];
        if let Some(last) = group_free.last_mut() {
            *last = blocks_count - first_data_block - (groups - 1) * blocks_per_group;
        }
        let mut map = FreeMap {
            words: vec![0; blocks_count.div_ceil(64) as usize],
            blocks_count,
            first_data_block,
            blocks_per_group,
            group_free,
        };
        for b in 0..first_data_block {
            map.words[(b / 64) as usize] |= 1 << (b % 64);
        }
        map
    }

    /// Blocks in the file system.
    pub fn blocks_count(&self) -> u64 {
        self.blocks_count
    }

    /// Number of groups.
    pub fn group_count(&self) -> u64 {
        self.group_free.len() as u64
    }

    /// First block of `group`.
    pub fn group_first(&self, group: u64) -> u64 {
        self.first_data_block + group * self.blocks_per_group
    }

    /// One past the last block of `group` (short for the last group).
    pub fn group_end(&self, group: u64) -> u64 {
        (self.group_first(group) + self.blocks_per_group).min(self.blocks_count)
    }

    /// Group holding `block`; a block before the first data block (block 0 of a 1 KiB file
    /// system, a goal of 0) counts as group 0's, as ext4_mb_new_blocks() raises such a goal to
    /// s_first_data_block (found by the free-extent proptest: goal 0 with first_data_block 1).
    pub fn group_of(&self, block: u64) -> u64 {
        block.saturating_sub(self.first_data_block) / self.blocks_per_group
    }

    /// Blocks per group.
    pub fn blocks_per_group(&self) -> u64 {
        self.blocks_per_group
    }

    /// First data block.
    pub fn first_data_block(&self) -> u64 {
        self.first_data_block
    }

    /// Free blocks in `group`.
    pub fn group_free(&self, group: u64) -> u64 {
        self.group_free[group as usize]
    }

    /// Free blocks in the file system.
    pub fn total_free(&self) -> u64 {
        self.group_free.iter().sum()
    }

    /// Whether `block` is used (blocks past the end count as used, as the padding bits of
    /// the last group's bitmap are).
    pub fn is_used(&self, block: u64) -> bool {
        block >= self.blocks_count || self.words[(block / 64) as usize] >> (block % 64) & 1 == 1
    }

    /// Marks `len` blocks from `start` used. Panics if one is already used or out of range:
    /// a double allocation is a bug in a policy, never an input error.
    pub fn mark_used(&mut self, start: u64, len: u64) {
        assert!(
            start + len <= self.blocks_count,
            "block {start}+{len} past the end"
        );
        assert!(
            self.next_used(start, start + len) == start + len,
            "block run {start}+{len} is already (partly) used"
        );
        self.set_bits(start, len, true);
    }

    /// Marks `len` blocks from `start` free again (they must be used).
    pub fn mark_free(&mut self, start: u64, len: u64) {
        assert!(start + len <= self.blocks_count);
        assert!(
            self.next_free(start, start + len).is_none(),
            "block run {start}+{len} is already (partly) free"
        );
        self.set_bits(start, len, false);
    }

    fn set_bits(&mut self, start: u64, len: u64, used: bool) {
        let mut b = start;
        let end = start + len;
        while b < end {
            let g = self.group_of(b);
            let stop = self.group_end(g).min(end);
            if used {
                self.group_free[g as usize] -= stop - b;
            } else {
                self.group_free[g as usize] += stop - b;
            }
            b = stop;
        }
        let mut b = start;
        while b < end {
            let w = (b / 64) as usize;
            let lo = b % 64;
            let n = (64 - lo).min(end - b);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << lo
            };
            if used {
                self.words[w] |= mask;
            } else {
                self.words[w] &= !mask;
            }
            b += n;
        }
    }

    /// First free block in `[from, limit)`.
    pub fn next_free(&self, from: u64, limit: u64) -> Option<u64> {
        let limit = limit.min(self.blocks_count);
        let mut b = from;
        while b < limit {
            let w = (b / 64) as usize;
            let bits = !self.words[w] >> (b % 64);
            if bits != 0 {
                let hit = b + u64::from(bits.trailing_zeros());
                return (hit < limit).then_some(hit);
            }
            b = (b / 64 + 1) * 64;
        }
        None
    }

    /// Where the free run that ends at `end` (exclusive) begins, looking no lower than
    /// `floor`: the least `start >= floor` with `start..end` all free (`end` itself when block
    /// `end - 1` is used or `end <= floor`). The backward twin of [`FreeMap::next_used`], word at
    /// a time, so that an allocator can find the free extent a block lies in without walking
    /// its group.
    pub fn free_run_start(&self, end: u64, floor: u64) -> u64 {
        let mut b = end.min(self.blocks_count);
        if b < end {
            // blocks past the end count as used
            return end;
        }
        while b > floor {
            let w = ((b - 1) / 64) as usize;
            let top = (b - 1) % 64;
            let below = if top == 63 {
                u64::MAX
            } else {
                (1u64 << (top + 1)) - 1
            };
            let used = self.words[w] & below;
            if used != 0 {
                let last = w as u64 * 64 + u64::from(63 - used.leading_zeros());
                return (last + 1).max(floor);
            }
            b = w as u64 * 64;
        }
        floor.min(end)
    }

    /// First used block in `[from, limit)`, or `limit`.
    pub fn next_used(&self, from: u64, limit: u64) -> u64 {
        let limit = limit.min(self.blocks_count);
        let mut b = from;
        while b < limit {
            let w = (b / 64) as usize;
            let bits = self.words[w] >> (b % 64);
            if bits != 0 {
                return (b + u64::from(bits.trailing_zeros())).min(limit);
            }
            b = (b / 64 + 1) * 64;
        }
        limit.max(from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_and_counts() {
        let mut m = FreeMap::new(1000, 0, 256);
        assert_eq!(m.group_count(), 4);
        assert_eq!(m.group_free(3), 1000 - 768);
        m.mark_used(10, 200);
        assert_eq!(m.next_free(0, 1000), Some(0));
        assert_eq!(m.next_free(10, 1000), Some(210));
        assert_eq!(m.next_used(0, 1000), 10);
        assert_eq!(m.next_used(210, 1000), 1000);
        assert_eq!(m.group_free(0), 256 - 200);
        m.mark_used(250, 20);
        assert_eq!(m.group_free(0), 256 - 206);
        assert_eq!(m.group_free(1), 256 - 14);
        m.mark_free(250, 20);
        assert_eq!(m.total_free(), 800);
        assert!(m.is_used(1000));
    }

    #[test]
    fn free_run_start_walks_back_to_the_last_used_block() {
        let mut m = FreeMap::new(300, 0, 256);
        m.mark_used(10, 5); // 10..15 used
        m.mark_used(200, 1);
        assert_eq!(m.free_run_start(100, 0), 15);
        assert_eq!(m.free_run_start(15, 0), 15); // block 14 is used
        assert_eq!(m.free_run_start(10, 0), 0);
        assert_eq!(m.free_run_start(100, 40), 40); // the floor stops it
        assert_eq!(m.free_run_start(256, 0), 201); // across words
        assert_eq!(m.free_run_start(64, 0), 15); // a word boundary as the end
        assert_eq!(m.free_run_start(201, 0), 201);
        assert_eq!(m.free_run_start(0, 0), 0);
        assert_eq!(m.free_run_start(301, 0), 301); // past the end: used
        assert_eq!(m.free_run_start(300, 256), 256);
        // against a walk one block at a time, for every end and floor
        for end in 0..=300u64 {
            for floor in (0..=end).step_by(7) {
                let mut want = end;
                while want > floor && !m.is_used(want - 1) {
                    want -= 1;
                }
                assert_eq!(m.free_run_start(end, floor), want, "{end} {floor}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "already")]
    fn double_use_is_caught() {
        let mut m = FreeMap::new(100, 0, 64);
        m.mark_used(5, 5);
        m.mark_used(9, 1);
    }

    #[test]
    fn one_k_block_zero_is_outside_groups() {
        let m = FreeMap::new(8193, 1, 8192);
        assert!(m.is_used(0));
        assert_eq!(m.group_free(0), 8192);
        assert_eq!(m.group_count(), 1);
    }
}
